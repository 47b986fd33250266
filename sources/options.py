"""The options of `spark.read/readStream.format("paimon")`, parsed once into a `ReadSpec`.

Spark lower-cases data source option keys, so every key is looked up in lower case.
"""
from __future__ import annotations

from dataclasses import dataclass, field, replace
from typing import Mapping

from paimon_streaming.branches import resolve_branch
from paimon_streaming.catalog import Catalog
from paimon_streaming.errors import InvalidOptionError, PaimonError
from paimon_streaming.incremental import INCREMENTAL_OPTIONS, IncrementalRange, incremental_query
from paimon_streaming.option_keys import PAIMON_OPTION_KEYS, with_fallback_keys
from paimon_streaming.option_text import parse_memory_size
from paimon_streaming.options import OPTIONS, CoreOptions, misspelled_key, misspelt_name
from paimon_streaming.streaming_scan import START_OPTIONS, ReadLimits, check_start_options
from paimon_streaming.system_tables import ROW_TRACKING, split_system_table
from paimon_streaming.table import Table
from paimon_streaming.table_scan_options import TableScanOptions
from paimon_streaming.time_travel import parse_local_timestamp

# option -> aliases (Paimon's Spark connector keys, Spark's file source keys)
_ALIASES = {
    "snapshot-id": ("snapshot-id", "scan.snapshot-id"),
    "tag": ("tag", "scan.tag-name"),
    "timestamp-millis": ("timestamp-millis", "scan.timestamp-millis"),
    "max-files-per-trigger": ("max-files-per-trigger", "maxfilespertrigger", "read.stream.maxfilespertrigger"),
    "max-snapshots-per-trigger": ("max-snapshots-per-trigger",),
    "max-rows-per-trigger": ("max-rows-per-trigger", "read.stream.maxrowspertrigger"),
    "max-bytes-per-trigger": ("max-bytes-per-trigger", "maxbytespertrigger", "read.stream.maxbytespertrigger"),
    "min-rows-per-trigger": ("min-rows-per-trigger", "read.stream.minrowspertrigger"),
    "max-trigger-delay-ms": ("max-trigger-delay-ms", "read.stream.maxtriggerdelayms"),
    "source.split.target-size": ("source.split.target-size",),
    "source.split.open-file-cost": ("source.split.open-file-cost",),
    "rowkindcolumn": ("rowkindcolumn", "row-kind-column"),
}

_START_ALIASES = {"snapshot-id": "scan.snapshot-id", "tag": "scan.tag-name", "timestamp-millis": "scan.timestamp-millis"}


# Paimon read options that change what a read returns and that we do not implement: ignoring
# one would answer a different question without a word (every partition for `scan.partitions`,
# say), so each is refused, naming what it asks for.
UNSUPPORTED_READ_OPTIONS = {
    "scan.watermark": "the first snapshot with a watermark at or after a value",
    "scan.file-creation-time-millis": "only files created after an instant",
    "scan.creation-time-millis": "only files created after an instant",
    "scan.partitions": "only some partitions, by option",
    "scan.bounded.watermark": "a stream that ends at a watermark",
    "scan.bucket": "one bucket",
    "scan.fallback-branch": "partitions missing here read from another branch",
    "scan.primary-branch": "another branch first",
    "stream-scan-mode": "a stream of a special scan (file monitor, compacted changelog)",
    "consumer.changelog-only": "consumers that hold only the changelog back",
}


def refuse_unsupported(options: Mapping[str, str]) -> None:
    """InvalidOptionError for a read option of UNSUPPORTED_READ_OPTIONS (keys in lower case)."""
    for key, what in UNSUPPORTED_READ_OPTIONS.items():
        value = str(options.get(key, "")).strip()
        if value:
            raise InvalidOptionError(
                f"read option '{key}' asks for {what}, which paimon-streaming does not implement; the read "
                "would answer something else, so it is refused. Time travel: 'snapshot-id', 'tag', "
                "'timestamp-millis', 'scan.timestamp', 'scan.version'; changes: a stream from "
                "'scan.snapshot-id' (e.g. with Trigger.AvailableNow)")


# The Paimon options a read applies here besides _ALIASES' and the start and incremental keys, and
# those that cannot change what a read returns (planning, parallelism, batch sizes, caches).
READ_TABLE_OPTIONS = frozenset({
    "branch", "scan.mode", "incremental-between-scan-mode", "incremental-between-tag-to-snapshot",
    "consumer-id", "consumer.ignore-progress", "consumer.mode", "consumer.expiration-time",
    "streaming-read-overwrite", "streaming-read-append-overwrite", "full-compaction.delta-commits",
    "read.batch-size", "scan.manifest.parallelism", "scan.max-splits-per-task", "scan.split-enumerator.batch-size",
    "scan.split-enumerator.mode", "scan.plan-sort-partition", "scan.infer-parallelism",
    "scan.infer-parallelism.max", "scan.parallelism", "scan.dedicated-split-generation", "scan.max-snapshot.count",
    "cache-page-size", "file-reader-async-threshold", "source.split.min-partitions",
})
_TABLE_KEYS = frozenset(key.lower() for key in PAIMON_OPTION_KEYS)


def refuse_table_options(options: Mapping[str, str], location: str, branch: str | None) -> None:
    """InvalidOptionError for a read option that is a table option (`merge-engine`, `ignore-delete`,
    `sequence.field`, `fields.<column>.aggregate-function`, `deletion-vectors.enabled`, ...) with
    another value than the table's: Java merges such dynamic options into the table it reads (or
    refuses the immutable ones), so the merge answers differently; this reader merges by the
    table's own options, and would ignore it."""
    ours = READ_TABLE_OPTIONS | {key.lower() for key in OWN_READ_OPTIONS} | set(START_OPTIONS + INCREMENTAL_OPTIONS) \
        | {key for aliases in _ALIASES.values() for key in aliases}
    given = [key for key, value in options.items() if str(value).strip() and key not in ours
             and (key in _TABLE_KEYS or key.startswith("fields."))]
    if not given:
        return
    table_options = {k.lower(): v for k, v in Table.open(location, branch=branch).schema.options.items()}
    for key in given:
        if not _same_value(key, str(options[key]), table_options):
            has = f"has {table_options[key]!r}" if key in table_options else "does not set it"
            raise InvalidOptionError(
                f"read option {key!r} = {options[key]!r} is a table option (table {location} {has}); a read "
                "cannot apply it here, and ignored it would answer by the table's own options. Alter the table "
                "(`paimon-streaming alter --set KEY=VALUE`, Table.update_schema().set_option(), ALTER TABLE ... "
                "SET TBLPROPERTIES) or read without it")


def _with_fallback_keys(options: dict[str, str], location: str, branch: str | None) -> dict[str, str]:
    """Read options with Java's older option names (`log.scan`) read as Java reads them: over the
    table's options, so a read's `log.scan` gives `scan.mode` only where the table sets none."""
    resolved = with_fallback_keys(options)
    added = resolved.keys() - options.keys()
    if not added:
        return options
    table_keys = {key.lower() for key in Table.open(location, branch=branch).schema.options}
    return {key: value for key, value in resolved.items() if key not in added or key not in table_keys}


def _same_value(key: str, value: str, table_options: Mapping[str, str]) -> bool:
    """Whether `value` is what the table already has for `key` (its default when unset)."""
    if key in OPTIONS:
        try:
            return CoreOptions({key: value}).get(key) == CoreOptions(table_options).get(key)
        except InvalidOptionError:
            return False
    return value.strip() == str(table_options.get(key, "")).strip()


# The read options of other connectors (Delta Lake, Apache Iceberg) that ask for a time travel,
# an incremental query, a stream's start or its bound. This source would ignore them and answer
# from the latest snapshot (or start a stream from the full state, or leave it unbounded), so
# each is refused, naming the option that does it here. Keys in lower case, as Spark gives them.
FOREIGN_READ_OPTIONS = {
    "versionasof": ("Delta's versionAsOf", "'snapshot-id' (or 'scan.version': a tag or a snapshot id)"),
    "timestampasof": ("Delta's timestampAsOf", "'scan.timestamp' (a local time) or 'timestamp-millis'"),
    "startingversion": ("Delta's startingVersion", "'scan.snapshot-id' (a stream's first snapshot)"),
    "startingtimestamp": ("Delta's startingTimestamp",
                          "'scan.timestamp' (a local time) or 'scan.timestamp-millis' (a stream's start)"),
    "readchangefeed": ("Delta's readChangeFeed",
                       "'rowKindColumn' (a stream's or an incremental query's row kinds) with 'incremental-between' "
                       "for a batch of changes"),
    "as-of-timestamp": ("Iceberg's as-of-timestamp", "'timestamp-millis'"),
    "start-snapshot-id": ("Iceberg's start-snapshot-id", "'incremental-between' ('start,end' snapshot ids)"),
    "end-snapshot-id": ("Iceberg's end-snapshot-id", "'incremental-between' ('start,end' snapshot ids)"),
    "stream-from-timestamp": ("Iceberg's stream-from-timestamp", "'scan.timestamp-millis'"),
    "streaming-max-files-per-micro-batch": ("Iceberg's streaming-max-files-per-micro-batch",
                                            "'max-files-per-trigger'"),
    "streaming-max-rows-per-micro-batch": ("Iceberg's streaming-max-rows-per-micro-batch",
                                           "'max-rows-per-trigger'"),
}

# Names users try for a time travel, a start, a range or a branch (other engines', or guessed),
# far from ours by more than one typo: each would be ignored, and the read would answer from the
# latest snapshot of the main branch, so each is refused naming ours. Keys in lower case.
GUESSED_READ_OPTIONS = {
    "version": "'scan.version' (a tag or a snapshot id)", "version-as-of": "'scan.version' (a tag or a snapshot id)",
    "as-of-version": "'scan.version' (a tag or a snapshot id)", "snapshot": "'snapshot-id'",
    "scan.snapshot": "'scan.snapshot-id'", "snapshotid": "'snapshot-id'", "at-snapshot": "'snapshot-id'",
    "tag-name": "'scan.tag-name' (or 'tag')", "tagname": "'scan.tag-name' (or 'tag')",
    "scan.tag": "'scan.tag-name' (or 'tag')", "tag.name": "'scan.tag-name' (or 'tag')",
    "timestamp": "'scan.timestamp' (a local time) or 'timestamp-millis'",
    "snapshot-timestamp": "'timestamp-millis' or 'scan.timestamp' (a local time)",
    "scan.timestamp-ms": "'scan.timestamp-millis'",
    "scan.startup.mode": "'scan.mode'", "scan.startup-mode": "'scan.mode'", "startup-mode": "'scan.mode'",
    "startup.mode": "'scan.mode'", "scan.incremental-between": "'incremental-between'",
    "branch-name": "'branch'", "branchname": "'branch'", "scan.branch": "'branch'",
}

# this source's own option names, spelt as documented (Spark hands them over in lower case)
OWN_READ_OPTIONS = ("path", "table", "warehouse", "branch", "snapshot-id", "tag", "timestamp-millis",
                    "rowKindColumn", "row-kind-column", "max-files-per-trigger", "maxFilesPerTrigger",
                    "max-snapshots-per-trigger", "max-rows-per-trigger", "max-bytes-per-trigger", "maxBytesPerTrigger",
                    "min-rows-per-trigger", "max-trigger-delay-ms", "source.split.min-partitions")


def refuse_misspelled(options: Mapping[str, str]) -> None:
    """InvalidOptionError for a read option one typo away from a Paimon option (`scan.snapshotid`,
    `scan_mode`) or from one of this source's own (`snapshotid`, `max-file-per-trigger`), and for
    another connector's read option (`versionAsOf`, `startingVersion`, `as-of-timestamp`): read as
    written, each would be ignored and the read would answer from the latest snapshot, not the
    one asked for (or a stream would run without its bound)."""
    ours = {key for aliases in _ALIASES.values() for key in aliases}
    for key in options:
        if key in FOREIGN_READ_OPTIONS:
            what, instead = FOREIGN_READ_OPTIONS[key]
            raise InvalidOptionError(f"read option {key!r} is {what}, which format('paimon') does not read; it "
                                     f"would be ignored and the read would answer from the latest snapshot. Use "
                                     f"{instead} (README: Spark: reading with the \"paimon\" data source)")
        if key in GUESSED_READ_OPTIONS:
            raise InvalidOptionError(f"read option {key!r} is not an option of format('paimon'): it would be ignored "
                                     "and the read would answer from the latest snapshot of the main branch; use "
                                     f"{GUESSED_READ_OPTIONS[key]} (README: Spark: reading with the \"paimon\" data "
                                     "source)")
        if key in ours:
            continue
        meant = misspelled_key(key) or misspelt_name(key, OWN_READ_OPTIONS)
        if meant is not None:
            raise InvalidOptionError(f"unknown read option {key!r}: did you mean {meant!r}? (read as given it "
                                     "would be ignored)")


def _resolve_version(opts: dict[str, str], location: str, branch: str | None) -> None:
    """`scan.version` (Paimon's VERSION AS OF): a tag of that name, else a snapshot id."""
    version = opts.get("scan.version", "").strip()
    if not version:
        return
    # replaced by what it names (check_start_options refused it with another start option), so a
    # stream reading these options again sees one start
    if Table.open(location, branch=branch).tag_manager.exists(version):
        opts["scan.tag-name"] = opts.pop("scan.version")
    elif version.isdigit():
        opts["scan.snapshot-id"] = opts.pop("scan.version")
    else:
        raise InvalidOptionError(f"option 'scan.version' = {version!r} is neither a tag of {location} nor a "
                                 "snapshot id")


def _lookup(options: Mapping[str, str], name: str) -> str | None:
    for key in _ALIASES.get(name, (name,)):
        value = options.get(key)
        if value is not None and str(value).strip() != "":
            return str(value).strip()
    return None


def _positive_int(options: Mapping[str, str], name: str) -> int | None:
    raw = _lookup(options, name)
    if raw is None:
        return None
    try:
        value = int(raw)
    except ValueError:
        raise InvalidOptionError(f"option '{name}' must be a positive integer, got {raw!r}") from None
    if value < 1:
        raise InvalidOptionError(f"option '{name}' must be a positive integer, got {raw!r}")
    return value


def _size(options: Mapping[str, str], name: str, default: str) -> int:
    raw = _lookup(options, name) or default
    try:
        return parse_memory_size(raw)
    except ValueError:
        raise InvalidOptionError(f"option '{name}' must be a size such as '128 mb', got {raw!r}") from None


def _min_rows(options: Mapping[str, str]) -> tuple[int, int] | None:
    """read.stream.minRowsPerTrigger with read.stream.maxTriggerDelayMs: Paimon's Spark source
    takes them only as a pair."""
    rows, delay = _positive_int(options, "min-rows-per-trigger"), _positive_int(options, "max-trigger-delay-ms")
    if (rows is None) != (delay is None):
        raise InvalidOptionError("options 'read.stream.minRowsPerTrigger' and 'read.stream.maxTriggerDelayMs' go "
                                 "together (as in Paimon's Spark source): give both, or neither")
    return None if rows is None else (rows, delay)


@dataclass(frozen=True)
class ReadSpec:
    """What a "paimon" read refers to and how it reads (see the data source docstrings)."""
    options: dict[str, str]
    location: str
    system_table: str | None = None
    snapshot_id: int | None = None
    tag: str | None = None
    timestamp_millis: int | None = None
    row_kind_column: str | None = None
    limits: ReadLimits = field(default_factory=ReadLimits)
    min_rows: tuple[int, int] | None = None  # (rows, max delay ms): no micro-batch with fewer before the delay
    split_target_size: int = 128 << 20
    split_open_file_cost: int = 4 << 20
    scan_mode: str | None = None
    incremental: IncrementalRange | None = None
    branch: str | None = None
    row_tracking: bool = False   # `<table>$row_tracking`: the rows with `_ROW_ID` and `_SEQUENCE_NUMBER`

    @staticmethod
    def parse(options: Mapping[str, str]) -> "ReadSpec":
        opts = {str(k).lower(): str(v) for k, v in options.items() if v is not None}
        ref = opts.get("table") or opts.get("path")
        if not ref:
            raise PaimonError("format('paimon') needs a table: load('<table directory or URI>'), or option "
                              "'table' ('db.table') with option 'warehouse'; append '$snapshots', '$files', ... "
                              "for a system table. Spark passes no path for a catalog table (spark.table, CREATE TABLE ... USING "
                              "paimon): read one through a temporary view, CREATE TEMPORARY VIEW v USING paimon OPTIONS "
                              "(path '...')")
        ref, system = split_system_table(ref)
        row_tracking = system == ROW_TRACKING
        if row_tracking:
            system = None
        ref, branch = resolve_branch(ref, opts.get("branch"))
        warehouse = opts.get("warehouse")
        location = Catalog(warehouse).table_location(ref) if warehouse else ref
        opts = _with_fallback_keys(opts, location, branch)
        refuse_unsupported(opts)
        refuse_misspelled(opts)
        refuse_table_options(opts, location, branch)
        check_start_options({**opts, **{key: _lookup(opts, alias) for alias, key in _START_ALIASES.items()}},
                            f"read of {location}")
        _resolve_version(opts, location, branch)
        snapshot_id = _positive_int(opts, "snapshot-id")
        timestamp = _lookup(opts, "timestamp-millis")
        if timestamp is None and opts.get("scan.timestamp", "").strip():  # a stream parses it from the options
            timestamp = str(parse_local_timestamp(opts["scan.timestamp"], "scan.timestamp"))
        try:
            timestamp_millis = None if timestamp is None else int(timestamp)
        except ValueError:
            raise InvalidOptionError(f"option 'timestamp-millis' must be epoch milliseconds, got {timestamp!r}") \
                from None
        return ReadSpec(
            options=opts, location=location, system_table=system, snapshot_id=snapshot_id,
            tag=_lookup(opts, "tag"), timestamp_millis=timestamp_millis,
            row_kind_column=_lookup(opts, "rowkindcolumn"),
            limits=ReadLimits(max_files=_positive_int(opts, "max-files-per-trigger"),
                              max_snapshots=_positive_int(opts, "max-snapshots-per-trigger"),
                              max_rows=_positive_int(opts, "max-rows-per-trigger"),
                              max_bytes=None if _lookup(opts, "max-bytes-per-trigger") is None
                              else _size(opts, "max-bytes-per-trigger", "0")),
            min_rows=_min_rows(opts),
            split_target_size=_size(opts, "source.split.target-size", "128 mb"),
            split_open_file_cost=_size(opts, "source.split.open-file-cost", "4 mb"),
            scan_mode=(_lookup(opts, "scan.mode") or "").lower() or None,
            incremental=incremental_query(opts), branch=branch, row_tracking=row_tracking)

    @property
    def time_travel(self) -> bool:
        return any(x is not None for x in (self.snapshot_id, self.tag, self.timestamp_millis))

    @property
    def reads_old_schema(self) -> bool:
        """Batch time travel by `snapshot-id` / `tag` / `timestamp-millis` answers in the
        snapshot's own schema. The `scan.*` spellings are also a stream's start point, and a
        stream reads in the newest schema (it stops at a later schema change, and a restart must
        pick the new schema up: Spark asks for the schema again, with the same options)."""
        return any(key in self.options for key in ("snapshot-id", "tag", "timestamp-millis"))

    def table(self) -> Table:
        return Table.open(self.location, branch=self.branch)

    def with_table_scan_options(self) -> "ReadSpec":
        """This batch read with the scan options kept in the table's options when it gives no
        time travel, `scan.mode` or incremental query of its own (Java's batch reads take them:
        table_scan_options.py)."""
        if self.time_travel or self.scan_mode or self.incremental is not None:
            return self
        table = self.table()
        kept = TableScanOptions.of(table.schema.options, table.name).resolved(table.tag_manager)
        return replace(self, snapshot_id=kept.snapshot_id, tag=kept.tag, timestamp_millis=kept.timestamp_millis,
                       scan_mode="compacted-full" if kept.compacted_full else None, incremental=kept.incremental)
