"""Streaming reads of a table: where a stream starts and what each step between snapshots reads.

A stream is a sequence of *read units*, numbered per snapshot. A unit is one split (the files
of one partition and bucket, or a single file) of one snapshot's plan:

- the *full* plan of the start snapshot (modes latest-full, from-snapshot-full, tag,
  compacted-full: the newest full compaction, see full_compaction.py): its
  live files, rows +I: one unit per bucket that must be merged by key, one unit per file
  otherwise (`TableScan.needs_merge`), so a bucket of many files is read in parallel;
- the *delta* plan of a later snapshot, as Java's DeltaFollowUpScanner (changelog-producer
  none): the files an APPEND snapshot added, one unit per file, rows with their written
  row kind (_VALUE_KIND); COMPACT, ANALYZE and (by default) OVERWRITE snapshots add no units;
- the *changelog* plan (changelog-producer input/lookup/full-compaction, Java's
  ChangelogFollowUpScanner): the changelog files of every snapshot that has them;
- with `streaming-read-overwrite=true` (on append tables also `streaming-read-append-overwrite`,
  their key in Java), an OVERWRITE snapshot's changes: on append tables the files it added, on primary-key tables each bucket's replaced files (read as -D) and
  new files, as Java's `readChanges` and stream read them.

A `StreamPosition` (snapshot, units, full) says "everything before this snapshot, and the
first `units` units of its plan, are consumed". A stream that starts on a table without a
snapshot by a start that depends on the table (latest-full, from-timestamp) starts *pending*:
its start is resolved at the first plan that sees a snapshot, as Java's starting scanners do. Positions are what a stream checkpoints, so
a restarted stream continues exactly after the last committed unit. Plans are deterministic
(a snapshot's files never change), so a position means the same thing in every run.
"""
from __future__ import annotations

import logging
from collections import OrderedDict
from dataclasses import dataclass, field, replace
from typing import Any, Mapping

from . import full_compaction
from .branches import branch_path
from .consumers import ConsumerManager, check_consumer_id
from .errors import (InvalidOptionError, SchemaChangedError, SnapshotExpiredError, SnapshotGapError,
                     SnapshotNotFoundError)
from .fileio import FileIO
from .long_lived_changelogs import earliest_long_lived_changelog_id, long_lived_changelog
from .manifest import ADD, ManifestEntry
from .option_keys import with_fallback_keys
from .options import CoreOptions
from .scan import DataSplit, TableScan
from .schema import TableSchema
from .rescale import RESCALE_PROPERTY
from .snapshot import APPEND, OVERWRITE, Snapshot, SnapshotManager
from .tags import TagManager
from .time_travel import earlier_than, parse_local_timestamp

log = logging.getLogger("paimon_streaming.source")

FULL, DELTA, CHANGELOG, OVERWRITE_DIFF = "full", "delta", "changelog", "overwrite"
DIFF = "diff"  # a batch incremental diff (incremental.py): the end state against the start state

SCAN_MODES = ("default", "latest-full", "full", "latest", "from-snapshot", "from-snapshot-full",
              "from-timestamp", "compacted-full")
_UNSUPPORTED_MODES = ("incremental", "from-file-creation-time", "from-creation-timestamp")
# Scan options Java's reads honour, from the table's options too, that are not implemented here:
# a read that ignored one would answer another question, so reads refuse them.
UNIMPLEMENTED_SCAN_OPTIONS = {
    "scan.file-creation-time-millis": "only files created after an instant",
    "scan.creation-time-millis": "only files created after an instant",
    "scan.watermark": "the first snapshot with a watermark at or after a value",
}
# Those only Java's streams honour (its batch reads ignore them): streams refuse them.
UNIMPLEMENTED_STREAM_OPTIONS = {
    "scan.bounded.watermark": "a stream that ends at the first snapshot whose watermark is above a value",
}

# The options that say where a read starts, and those each start mode takes (Java's
# SchemaValidation.validateStartupMode): any other one given with the mode is refused, as in
# Java, rather than ignored (a stream from `latest` given a snapshot id would start elsewhere).
START_OPTIONS = ("scan.snapshot-id", "scan.tag-name", "scan.version", "scan.timestamp-millis", "scan.timestamp",
                 "incremental-between", "incremental-between-timestamp", "incremental-to-auto-tag")
_MODE_START_OPTIONS = {
    "from-timestamp": ("scan.timestamp-millis", "scan.timestamp"),
    "from-snapshot": ("scan.snapshot-id", "scan.tag-name", "scan.version"),
    "from-snapshot-full": ("scan.snapshot-id",),
    "incremental": ("incremental-between", "incremental-between-timestamp", "incremental-to-auto-tag"),
}


def check_start_options(options: Mapping[str, str], where: str) -> None:
    """Refuse start options (keys lower-cased) that contradict `scan.mode` or each other."""
    given = [k for k in START_OPTIONS if options.get(k) not in (None, "")]
    mode = (options.get("scan.mode") or "default").strip().lower()
    if mode == "default":  # Java's CoreOptions.startupMode()
        mode = next((m for keys, m in ((("scan.timestamp-millis", "scan.timestamp"), "from-timestamp"),
                                       (("scan.snapshot-id", "scan.tag-name", "scan.version"), "from-snapshot"),
                                       (_MODE_START_OPTIONS["incremental"], "incremental"))
                     if any(k in given for k in keys)), "latest-full")
    allowed = _MODE_START_OPTIONS.get(mode, ())
    if allowed and not any(k in given for k in allowed):  # read as given, it would read the latest snapshot
        raise InvalidOptionError(f"{where}: scan.mode '{mode}' needs option {' or '.join(map(repr, allowed))}; "
                                 "Paimon refuses it without one too")
    extra = [k for k in given if k not in allowed]
    if extra:
        raise InvalidOptionError(f"{where}: option(s) {extra} cannot be given with scan.mode '{mode}'"
                                 + (f" (it takes {list(allowed)})" if allowed else " (it takes no start option)")
                                 + "; Paimon refuses the combination too")
    if mode not in ("from-snapshot-full", "incremental") and len(given) > 1:  # incremental_query checks its own
        raise InvalidOptionError(f"{where}: give only one of {given} (scan.mode '{mode}')")


@dataclass(frozen=True)
class StreamPosition:
    """Everything before `snapshot`, and units [0, units) of its plan, are consumed.

    `full`: that snapshot is read through its full plan (the stream's starting state)
    rather than its changes. `read_time`: the commit time of the last snapshot read (`marked`),
    so that a rollback below the position, and commits under the same ids since, are noticed
    rather than skipped (`check_not_rolled_back`). `pending`: the start of a stream on a table
    that had no snapshot yet, resolved by `StreamingScan.resolved` once it has one (so a
    from-timestamp start does not read the commits made before its instant, nor latest-full
    skip a first OVERWRITE)."""
    snapshot: int
    units: int = 0
    full: bool = False
    read_time: int | None = field(default=None, compare=False)  # not part of where the stream is
    pending: bool = False

    @property
    def last_read(self) -> int:
        """The newest snapshot this position has read from."""
        return self.snapshot if self.units > 0 else self.snapshot - 1

    def to_dict(self) -> dict[str, Any]:
        out = {"snapshot": self.snapshot, "units": self.units, "full": self.full}
        if self.read_time is not None:
            out["readTime"] = self.read_time
        if self.pending:
            out["pending"] = True
        return out

    @staticmethod
    def from_dict(d: Mapping[str, Any]) -> "StreamPosition":
        try:
            read_time = d.get("readTime")
            return StreamPosition(int(d["snapshot"]), int(d.get("units", 0)), bool(d.get("full", False)),
                                  None if read_time is None else int(read_time), bool(d.get("pending", False)))
        except (KeyError, TypeError, ValueError) as exc:
            raise ValueError(f"not a paimon stream offset: {dict(d)!r}") from exc


_PENDING = StreamPosition(1, pending=True)


@dataclass(frozen=True)
class ReadUnit:
    """One split of one snapshot's streaming plan (see the module docstring)."""
    snapshot_id: int
    index: int
    kind: str                       # FULL, DELTA, CHANGELOG, OVERWRITE_DIFF or DIFF
    split: DataSplit
    before: DataSplit | None = None  # OVERWRITE_DIFF on primary-key tables, DIFF: the replaced files

    @property
    def files(self) -> int:
        return len(self.split.files) + (len(self.before.files) if self.before is not None else 0)

    @property
    def rows(self) -> int:
        return self.split.row_count + (self.before.row_count if self.before is not None else 0)

    @property
    def bytes(self) -> int:
        n = sum(f.file_size for f in self.split.files)
        return n + (sum(f.file_size for f in self.before.files) if self.before is not None else 0)


@dataclass(frozen=True)
class ReadLimits:
    """Admission control of one micro-batch; None means no limit. A batch always admits at
    least one unit, then stops before the unit that would exceed a limit."""
    max_files: int | None = None
    max_snapshots: int | None = None
    max_rows: int | None = None
    max_bytes: int | None = None

    def __post_init__(self):
        for name in ("max_files", "max_snapshots", "max_rows", "max_bytes"):
            value = getattr(self, name)
            if value is not None and value < 1:
                raise InvalidOptionError(f"read limit {name} must be at least 1, got {value}")

    @property
    def unlimited(self) -> bool:
        return all(v is None for v in (self.max_files, self.max_snapshots, self.max_rows, self.max_bytes))


class _Admission:
    def __init__(self, limits: ReadLimits | None):
        self.limits = limits or ReadLimits()
        self.units = self.files = self.rows = self.bytes = self.snapshots = 0

    def open_snapshot(self) -> bool:
        cap = self.limits.max_snapshots
        if cap is not None and self.units and self.snapshots >= cap:
            return False
        self.snapshots += 1
        return True

    def admit(self, unit: ReadUnit) -> bool:
        lim = self.limits
        if self.units and any(cap is not None and have + add > cap for cap, have, add in (
                (lim.max_files, self.files, unit.files), (lim.max_rows, self.rows, unit.rows),
                (lim.max_bytes, self.bytes, unit.bytes))):
            return False
        self.units += 1
        self.files += unit.files
        self.rows += unit.rows
        self.bytes += unit.bytes
        return True


def _get(options: Mapping[str, str], key: str) -> str | None:
    value = options.get(key)
    return None if value is None or str(value).strip() == "" else str(value).strip()


def _int(options: Mapping[str, str], key: str) -> int | None:
    raw = _get(options, key)
    if raw is None:
        return None
    try:
        return int(raw)
    except ValueError:
        raise InvalidOptionError(f"option '{key}' must be an integer, got {raw!r}") from None


def _bool(options: Mapping[str, str], key: str) -> bool:
    raw = _get(options, key)
    if raw is None:
        return False
    if raw.lower() not in ("true", "false"):
        raise InvalidOptionError(f"option '{key}' must be true or false, got {raw!r}")
    return raw.lower() == "true"


@dataclass(frozen=True)
class StreamOptions:
    """The Paimon options that shape a streaming read (Paimon's keys and defaults)."""
    scan_mode: str = "default"
    snapshot_id: int | None = None
    timestamp_millis: int | None = None
    tag_name: str | None = None
    version: str | None = None  # `scan.version`: a tag of that name, else a snapshot id (Java's rule)
    consumer_id: str | None = None
    consumer_ignore_progress: bool = False
    read_overwrite: bool = False
    read_append_overwrite: bool = False  # `streaming-read-append-overwrite`: Java's key for append tables
    changelog_producer: str = "none"
    full_compaction_delta_commits: int | None = None  # what `compacted-full` starts from

    @staticmethod
    def from_options(table_options: Mapping[str, str], read_options: Mapping[str, str]) -> "StreamOptions":
        """Table options overridden by the reader's options (keys compared case-insensitively)."""
        merged = {k.lower(): v for k, v in table_options.items()}
        merged.update({k.lower(): v for k, v in read_options.items()})
        merged = with_fallback_keys(merged)  # `log.scan`, `log.scan.timestamp-millis`: Java's older names
        for key, what in {**UNIMPLEMENTED_SCAN_OPTIONS, **UNIMPLEMENTED_STREAM_OPTIONS}.items():
            if _get(merged, key) is not None:
                raise InvalidOptionError(f"option '{key}' (the table's or the stream's) asks for {what}, which "
                                         "paimon-streaming does not implement; the stream would answer something else")
        mode = (_get(merged, "scan.mode") or "default").lower()
        if mode in _UNSUPPORTED_MODES:
            raise InvalidOptionError(f"scan.mode '{mode}' is not supported by paimon-streaming; "
                                     f"use one of {', '.join(SCAN_MODES)}")
        check_start_options(merged, "stream")
        incremental = [k for k in _MODE_START_OPTIONS["incremental"] if _get(merged, k) is not None]
        if incremental:  # as Java's streams refuse them (else the stream would read the whole table)
            raise InvalidOptionError(f"option(s) {incremental} (the table's or the stream's) ask for an incremental "
                                     "query, a batch read: a stream cannot read one (Paimon refuses it too); start "
                                     "the stream with 'scan.snapshot-id' or remove the option")
        if mode not in SCAN_MODES:
            raise InvalidOptionError(f"unknown scan.mode {mode!r}; expected one of {', '.join(SCAN_MODES)}")
        consumer = _get(merged, "consumer-id")
        producer = (_get(merged, "changelog-producer") or "none").lower()
        CoreOptions({"changelog-producer": producer}).get("changelog-producer")  # validates
        if _bool(merged, "streaming-read-overwrite") and producer in ("lookup", "full-compaction"):
            # as Java refuses it: the overwrite's diff and the next compaction's changelog both
            # hold its changes, which would be read twice
            raise InvalidOptionError(
                f"'streaming-read-overwrite' = true cannot stream a table whose changelog-producer is '{producer}': "
                "an overwrite's changes would be read twice (from the overwrite's diff and from the changelog of the "
                "compaction after it), as Paimon refuses it too")
        return StreamOptions(
            scan_mode=mode, snapshot_id=_int(merged, "scan.snapshot-id"),
            timestamp_millis=_timestamp_millis(merged), tag_name=_get(merged, "scan.tag-name"),
            version=_get(merged, "scan.version"),
            consumer_id=None if consumer is None else check_consumer_id(consumer),
            consumer_ignore_progress=_bool(merged, "consumer.ignore-progress"),
            read_overwrite=_bool(merged, "streaming-read-overwrite"),
            read_append_overwrite=_bool(merged, "streaming-read-append-overwrite"), changelog_producer=producer,
            full_compaction_delta_commits=_int(merged, full_compaction.DELTA_COMMITS))


def _timestamp_millis(options: Mapping[str, str]) -> int | None:
    """`scan.timestamp-millis`, else `scan.timestamp` (a local time, as Java reads it)."""
    millis = _int(options, "scan.timestamp-millis")
    text = _get(options, "scan.timestamp")
    return parse_local_timestamp(text, "scan.timestamp") if millis is None and text is not None else millis


def units_of_splits(snapshot_id: int, splits: list[DataSplit], kind: str = FULL) -> list[ReadUnit]:
    """Read units of planned splits in (partition, bucket) order: a split that must be merged
    by key is one unit, any other split one unit per file (`DataSplit.pieces`). A postpone
    bucket's files (bucket -2, planned by a stream's start only) are DELTA units: their rows
    keep the kinds they were written with, as Java reads them (unmerged)."""
    units: list[ReadUnit] = []
    for s in sorted(splits, key=lambda s: (s.partition, s.bucket)):
        for part in s.pieces():
            units.append(ReadUnit(snapshot_id, len(units), kind if s.bucket >= 0 else DELTA, part))
    return units


class StreamingScan:
    """Plans a table's stream: start position, units per snapshot, micro-batches of units."""

    PLAN_CACHE_SIZE = 64

    def __init__(self, file_io: FileIO, table_path: str, schema: TableSchema, options: StreamOptions,
                 branch: str | None = None):
        self.file_io = file_io
        self.table_path = branch_path(table_path, branch)  # where the branch's snapshots, tags, consumers live
        self.schema = schema
        self.options = options
        self.scan = TableScan(file_io, table_path, schema, branch)
        self.snapshots = SnapshotManager(file_io, self.table_path)
        self.tags = TagManager(file_io, self.table_path)
        self.consumers = ConsumerManager(file_io, self.table_path)
        # (snapshot id, full) -> its units and the commit time of the snapshot they were planned on
        self._plans: OrderedDict[tuple[int, bool], tuple[list[ReadUnit], int]] = OrderedDict()
        self._newer_schema: dict[int, int] = {}  # snapshot id -> its schema id, when it changes columns

    # ---- where a stream starts ------------------------------------------------------------
    def start_position(self) -> StreamPosition:
        """The first position of a new stream: consumer progress when `consumer-id` has a
        progress file (unless `consumer.ignore-progress`), else per `scan.mode`. A start at a
        snapshot's changes is marked with the snapshot before it, so that a rollback below it
        is noticed while the stream has read nothing yet (else commits under the rolled-back
        ids were skipped); a full start reads whole whatever snapshot has its id."""
        start = self._start_position()
        if start.full:
            return start
        try:
            return self.marked(start)
        except SnapshotGapError:
            raise
        except SnapshotNotFoundError:  # the snapshot before the start has expired: nothing to mark
            return start

    def resolved(self, position: StreamPosition) -> StreamPosition:
        """`position`, or for a pending start the start as it is now (still pending while the
        table has no snapshot): Java's starting scanner is asked again at each plan until there
        is one, which fixes the start."""
        return self.start_position() if position.pending else position

    def _start_position(self) -> StreamPosition:
        o = self.options
        if o.consumer_id and not o.consumer_ignore_progress:
            found = self.consumers.progress(o.consumer_id)
            if found is not None:
                n, full = found
                earliest, latest = self.snapshots.earliest_id(), self.snapshots.latest_id()
                if n > (latest or 0) + 1:
                    raise self._consumer_ahead(o.consumer_id, n, latest)
                if earliest is not None and n < earliest:  # a tag keeps its state, Java's changelog its changes
                    if (self._tagged(n) if full else long_lived_changelog(self.file_io, self.table_path, n)) is None:
                        raise self._expired(n, f"consumer '{o.consumer_id}' is at snapshot {n}")
                return StreamPosition(n, 0, full)
        mode = o.scan_mode
        if o.version is not None:  # `scan.version` (alone: check_start_options): a tag, else a snapshot id, as Java
            if self.tags.exists(o.version):
                o = replace(o, tag_name=o.version)
            elif o.version.isdigit():
                o = replace(o, snapshot_id=int(o.version))
            else:
                raise InvalidOptionError(f"option 'scan.version' = {o.version!r} is neither a tag of "
                                         f"{self.table_path} nor a snapshot id")
        if mode == "default":
            if o.timestamp_millis is not None:
                mode = "from-timestamp"
            elif o.snapshot_id is not None or o.tag_name is not None:
                mode = "from-snapshot-full" if o.snapshot_id is None else "from-snapshot"
            else:
                mode = "latest-full"
        latest, earliest = self.snapshots.latest_id(), self.snapshots.earliest_id()
        if mode == "compacted-full":  # the newest full compaction, read whole, then what follows
            compacted = full_compaction.latest_full_compaction(self.snapshots, o.full_compaction_delta_commits,
                                                               o.changelog_producer)
            if compacted is not None:
                return StreamPosition(compacted, 0, True)
        if mode in ("latest-full", "full", "compacted-full"):
            return StreamPosition(latest, 0, True) if latest is not None else _PENDING
        if mode == "latest":
            return StreamPosition(latest + 1 if latest is not None else 1)
        if mode == "from-timestamp":
            if o.timestamp_millis is None:
                raise InvalidOptionError("scan.mode 'from-timestamp' needs option 'scan.timestamp-millis'")
            if latest is None:
                return _PENDING
            # as Java: the commits still readable from long-lived changelogs are searched too
            # (`earlierThanTimeMills` with `startFromChangelog`), and one before them all starts there
            first = self._earliest_changes(earliest)
            before = earlier_than(self.snapshots, o.timestamp_millis, first, lambda n: self._snapshot(n, False))
            return StreamPosition(first if before is None else before + 1)
        # from-snapshot / from-snapshot-full: a snapshot id, or a tag's snapshot (not both: check_start_options)
        if o.snapshot_id is not None:
            start = o.snapshot_id
            if earliest is not None and start < earliest and mode == "from-snapshot":
                earliest = max(start, self._earliest_changes(earliest))
            if earliest is not None and start < earliest:
                log.warning("scan.snapshot-id %d of %s has expired; starting from %d",
                            start, self.table_path, earliest)
                start = earliest
        elif o.tag_name is not None:
            start = self.tags.snapshot(o.tag_name).id
        else:
            raise InvalidOptionError(f"scan.mode '{mode}' needs option 'scan.snapshot-id' or 'scan.tag-name'")
        return StreamPosition(start, 0, mode == "from-snapshot-full")

    def _consumer_ahead(self, consumer_id: str, next_snapshot: int, latest: int | None) -> SnapshotNotFoundError:
        """A consumer beyond the table's next commit (Java's rollback does not move consumers; a
        re-created table may keep the old one's): resumed there, the stream would skip every
        commit up to it once writers catch up. Refused as Java's NextSnapshotFetcher refuses
        it, and as a checkpointed position past a rollback is (`check_not_rolled_back`)."""
        return SnapshotNotFoundError(
            f"table {self.table_path}: consumer '{consumer_id}' is at snapshot {next_snapshot} "
            f"(consumer file {self.consumers.path(consumer_id)}), beyond the table's latest snapshot "
            f"{latest if latest is not None else '(none)'}: the table was rolled back (by Java, whose rollback "
            "does not move consumers) or re-created since, and resuming there would skip the commits "
            f"{(latest or 0) + 1}..{next_snapshot - 1} once they are made. Start the stream with "
            "'consumer.ignore-progress' = 'true' (it starts per 'scan.mode' and records its progress anew), "
            "delete the consumer file, or use another 'consumer-id'")

    def _earliest_changes(self, earliest: int) -> int:
        """The first commit whose changes a stream can still read, given the earliest snapshot: as
        Java's, the earliest long-lived changelog (kept when the changelog outlives the
        snapshots) when it is older, else the earliest snapshot."""
        changelog = earliest_long_lived_changelog_id(self.file_io, self.table_path)
        return earliest if changelog is None else min(earliest, changelog)

    # ---- one snapshot's plan ------------------------------------------------------------
    def snapshot_units(self, snapshot_id: int, full: bool) -> list[ReadUnit] | None:
        """The units of one snapshot (full plan or changes); None when it does not exist yet."""
        key = (snapshot_id, full)
        cached = self._plans.get(key)
        if cached is not None and self._still_planned(snapshot_id, full, cached[1]):
            self._plans.move_to_end(key)
            return cached[0]
        snapshot = self._snapshot(snapshot_id, full)
        if snapshot is None:
            return None
        if snapshot.schema_id > self.schema.id and \
                self.scan.schema_of(snapshot.schema_id).fields != self.schema.fields:
            self._newer_schema[snapshot_id] = snapshot.schema_id
        units = self._full_units(snapshot) if full else self._change_units(snapshot)
        self._plans[key] = (units, snapshot.time_millis)
        while len(self._plans) > self.PLAN_CACHE_SIZE:
            self._plans.popitem(last=False)
        return units

    def _still_planned(self, snapshot_id: int, full: bool, planned_time: int) -> bool:
        """Whether a plan made earlier is of the snapshot that has its id now: a rollback to the
        one before it and a new commit put another snapshot under the id, whose changes are to
        be read instead (a plan made but not yet delivered: a read limit or a deferred batch
        stopped short of it). Changes that expired since are still the ones planned; a full plan
        only while a tag holds its snapshot: expiration deletes the files only it had (those a
        compaction replaced since), so the rest of a full read is refused as after a restart."""
        try:
            return self.snapshots.snapshot(snapshot_id).time_millis == planned_time
        except SnapshotGapError:
            raise
        except SnapshotNotFoundError:
            if not full:
                return True
            tagged = self._tagged(snapshot_id)
            return tagged is not None and tagged.time_millis == planned_time

    def _tagged(self, snapshot_id: int) -> Snapshot | None:
        """A tag's copy of the snapshot: a tag keeps its files after the snapshot itself expired."""
        for name in self.tags.tag_names():
            tagged = self.tags.snapshot(name)
            if tagged.id == snapshot_id:
                return tagged
        return None

    def _snapshot(self, snapshot_id: int, full: bool) -> Snapshot | None:
        """The snapshot, None when not committed yet. Raises SnapshotExpiredError when expired,
        SnapshotGapError when deleted between older and newer ones (damage, not expiration),
        CorruptFileError when it does not decode."""
        gap: SnapshotGapError | None = None
        try:
            return self.snapshots.snapshot(snapshot_id)
        except SnapshotGapError as exc:
            gap = exc
        except SnapshotNotFoundError:
            pass
        tagged = self._tagged(snapshot_id) if full else None
        if tagged is not None:
            return tagged
        if gap is not None:
            raise gap
        latest = self.snapshots.latest_id()
        if latest is None or snapshot_id > latest:
            return None
        if not full:  # its changes may outlive it in Java's long-lived changelog (not its full state)
            changelog = long_lived_changelog(self.file_io, self.table_path, snapshot_id)
            if changelog is not None:
                return changelog
        raise self._expired(snapshot_id, "the stream reading its starting state" if full else "the stream")

    def _expired(self, snapshot_id: int, who: str) -> SnapshotExpiredError:
        earliest = self.snapshots.earliest_id()
        return SnapshotExpiredError(
            f"table {self.table_path}: {who} needs snapshot {snapshot_id}, which no longer exists "
            f"(earliest snapshot is {earliest}, latest {self.snapshots.latest_id()}); the changes committed "
            f"in snapshots {snapshot_id}..{(earliest or snapshot_id + 1) - 1} can no longer be read. "
            "To keep the snapshots a stream still needs, give the stream a 'consumer-id' (snapshot "
            "expiration keeps what consumers have not read) or retain more snapshots on the table "
            "('snapshot.num-retained.min', 'snapshot.time-retained'). To continue anyway, restart the "
            "query with a new checkpoint (e.g. scan.mode 'latest-full' reads the current state first).")

    def _producer(self, snapshot: Snapshot) -> str:
        """The `changelog-producer` `snapshot` was committed under: the stream's, unless the
        table's option changed since the stream's schema (a snapshot committed under 'none'
        holds no changelog, and its changes are read from its delta files; the other way round,
        from its changelog). Writers refuse to commit under options they did not write with
        (commit.py's StaleOptionsError), so a snapshot's schema tells how it was written.
        (Java's stream keeps the producer it started with, and misses the rows of snapshots
        committed without a changelog.)"""
        if snapshot.schema_id == self.schema.id:
            return self.options.changelog_producer
        started = CoreOptions(self.schema.options).get("changelog-producer")
        committed = CoreOptions(self.scan.schema_of(snapshot.schema_id).options).get("changelog-producer")
        return self.options.changelog_producer if committed == started else committed

    def _full_units(self, snapshot: Snapshot) -> list[ReadUnit]:
        # every level, as Java's stream starts: a batch read of a deletion-vector (or first-row)
        # table skips level 0, whose rows the stream would never get (it skips COMPACT snapshots);
        # without a changelog the rows still in a postpone bucket too, as Java's stream reads them
        # (in its deltas too: it reads real buckets only when a producer writes a changelog)
        producer = self._producer(snapshot)
        splits = self.scan.plan(snapshot, all_levels=True, postponed=producer == "none")
        if producer in ("lookup", "full-compaction") and self.schema.primary_keys:
            # as Java: level-0 files will still produce changelog; full-compaction reads the top level
            # only: the bucket's, which stays above `num-levels` when that shrank after files reached it
            # (as Java's Levels keep it; Java's stream start looks at the option's and misses them)
            top = CoreOptions(self.schema.options).num_levels - 1
            if producer == "lookup":
                kept = [[f for f in s.files if f.level > 0] for s in splits]
            else:
                tops = [max([top] + [f.level for f in s.files]) for s in splits]
                kept = [[f for f in s.files if f.level == level] for s, level in zip(splits, tops)]
            splits = [s.with_files(files, self.scan.needs_merge(files)) for s, files in zip(splits, kept)]
        return units_of_splits(snapshot.id, splits)

    def _reads_overwrites(self) -> bool:
        """Whether OVERWRITE snapshots' changes are streamed: `streaming-read-overwrite`, or on an
        append table `streaming-read-append-overwrite` (Java's AppendOnlyFileStoreTable reads that
        one; a primary-key table ignores it, as Java's)."""
        o = self.options
        return o.read_overwrite or (o.read_append_overwrite and not self.schema.primary_keys)

    def _change_units(self, snapshot: Snapshot) -> list[ReadUnit]:
        if snapshot.commit_kind == OVERWRITE and self._reads_overwrites():
            return self._overwrite_units(snapshot)
        # a snapshot committed under 'none' holds a changelog when its writer produced one before
        # the change reached it (a lookup batch's COMPACT after its APPEND): then read that
        if self._producer(snapshot) == "none" and not snapshot.changelog_manifest_list:
            if snapshot.commit_kind != APPEND:
                return []
            entries, kind = [e for e in self.scan.delta_entries(snapshot) if e.kind == ADD], DELTA
        else:
            entries, kind = [e for e in self.scan.changelog_entries(snapshot)
                             if e.kind == ADD and not self.scan.postponed_bucket(e)], CHANGELOG
        return self._file_units(snapshot, entries, kind)

    def _file_units(self, snapshot: Snapshot, entries: list[ManifestEntry], kind: str) -> list[ReadUnit]:
        dvs = self.scan.deletion_files(snapshot) if self.scan.options.deletion_vectors and kind == DELTA else {}
        # by bucket, each bucket's files in the order committed (the order written): a changelog rolled
        # into files `-0` ... `-10` holds a key's changes across them in that order, not by name
        entries = sorted(entries, key=lambda e: (e.partition, e.bucket))
        return [ReadUnit(snapshot.id, i, kind, self.scan.split_of(e.partition, e.bucket, e.total_buckets, [e.file],
                                                                 dvs.get((e.partition, e.bucket))))
                for i, e in enumerate(entries)]

    def _overwrite_units(self, snapshot: Snapshot) -> list[ReadUnit]:
        if (snapshot.properties or {}).get(RESCALE_PROPERTY) == "true":
            return []  # rows moved between buckets, none changed (rescale.py)
        entries = self.scan.delta_entries(snapshot)
        if not self.schema.primary_keys:  # append tables: the new files, as Java
            return self._file_units(snapshot, [e for e in entries if e.kind == ADD], DELTA)
        counts: dict[bytes, set[int]] = {}
        for e in entries:
            counts.setdefault(e.partition, set()).add(e.total_buckets)
        if any(len(c) > 1 for c in counts.values()):
            raise InvalidOptionError(
                f"streaming read of {self.table_path}: OVERWRITE snapshot {snapshot.id} changed the bucket count of a "
                f"partition (a rescale by another writer: {sorted(next(c for c in counts.values() if len(c) > 1))}), "
                "so its keys moved between buckets and a diff per bucket would lose or repeat rows; start the query "
                f"after it ('scan.snapshot-id' = {snapshot.id + 1}) or without 'streaming-read-overwrite'")
        groups: dict[tuple[bytes, int], tuple[int, list, list]] = {}
        for e in entries:
            total, before, after = groups.setdefault((e.partition, e.bucket), (e.total_buckets, [], []))
            (after if e.kind == ADD else before).append(e.file)
        # with deletion vectors, each side is read with its snapshot's: the replaced files with
        # those of the snapshot before (rows deleted long ago are no -D now), as Java's diff
        dv_after = dv_before = {}
        if self.scan.options.deletion_vectors and groups:
            dv_after = self.scan.deletion_files(snapshot)
            if any(before for _, before, _ in groups.values()):
                previous = self._snapshot(snapshot.id - 1, False)
                dv_before = {} if previous is None else self.scan.deletion_files(previous)
        units = []
        for (partition, bucket), (total, before, after) in sorted(groups.items()):
            same = {f.file_name for f in before} & {f.file_name for f in after}
            before = [f for f in before if f.file_name not in same]
            after = [f for f in after if f.file_name not in same]
            if not before and not after:
                continue
            units.append(ReadUnit(snapshot.id, len(units), OVERWRITE_DIFF,
                                  self.scan.split_of(partition, bucket, total, after, dv_after.get((partition, bucket)),
                                                     needs_merge=True),
                                  self.scan.split_of(partition, bucket, total, before,
                                                     dv_before.get((partition, bucket)), needs_merge=True)))
        return units

    # ---- micro-batches ------------------------------------------------------------------
    def plan_batch(self, start: StreamPosition, limits: ReadLimits | None = None,
                   last_snapshot: int | None = None) -> tuple[list[ReadUnit], StreamPosition]:
        """The units after `start` that one micro-batch admits, and the position after them.

        Reads no snapshot beyond `last_snapshot` (Trigger.AvailableNow's target), except a full
        start's, which is read whole: its state holds everything up to the target (the start is
        newer when a commit landed between AvailableNow's prepare and the query's start). When nothing
        is left to read, returns ([], start): the stream does not move. Snapshots with nothing
        to read (compactions) are stepped over even when no unit follows them, as Java's
        stream steps over them: a checkpoint left before them would need them after they expire.
        A pending start is resolved first (the position returned is then a resolved one)."""
        start = self.resolved(start)
        self.check_not_rolled_back(start)
        latest = self.snapshots.latest_id()
        if latest is None or start.pending:
            return [], start
        if last_snapshot is not None and start.full:
            last_snapshot = max(last_snapshot, start.snapshot)
        cap = latest if last_snapshot is None else min(latest, last_snapshot)
        admission = _Admission(limits)
        units: list[ReadUnit] = []
        end: StreamPosition | None = None
        s = start.snapshot
        while s <= cap and end is None:
            full = start.full and s == start.snapshot
            plan = self.snapshot_units(s, full)
            if plan is None:
                break
            if s in self._newer_schema:
                if units:  # deliver what came before the change first
                    end = StreamPosition(s, 0, full)
                    break
                raise self._schema_changed(s)
            first = start.units if s == start.snapshot else 0
            todo = plan[first:]
            if todo:
                if not admission.open_snapshot():
                    end = StreamPosition(s, first, full)
                    break
                for u in todo:
                    if not admission.admit(u):
                        end = StreamPosition(s, u.index, full)
                        break
                    units.append(u)
            s += 1
        end = end if end is not None else StreamPosition(s, 0, False)
        if not units and (end.snapshot, end.units) == (start.snapshot, start.units):
            return [], start
        return units, self.marked(end)

    def marked(self, position: StreamPosition) -> StreamPosition:
        """`position` with the commit time of the last snapshot it has read: once that expired,
        from a tag of it (a start from a tag) or Java's long-lived changelog of it."""
        n = position.last_read
        if n < 1:
            return position
        try:
            read = self.snapshots.snapshot(n)
        except SnapshotGapError:
            raise
        except SnapshotNotFoundError:
            read = self._tagged(n) or long_lived_changelog(self.file_io, self.table_path, n)
            if read is None:
                latest = self.snapshots.latest_id()
                if latest is None or n > latest:
                    raise  # rolled back below it
                raise self._expired(n, "the stream") from None
        return replace(position, read_time=read.time_millis)

    def check_not_rolled_back(self, position: StreamPosition) -> None:
        """Refuse to continue from `position` when the snapshot it last read is not there any
        more, or is another snapshot under the same id: the table was rolled back below the
        stream, and what was committed since cannot be told from what was read."""
        if position.read_time is None:
            return  # an offset of an earlier version, or the start
        mark, latest = position.last_read, self.snapshots.latest_id()
        try:
            now = self.snapshots.snapshot(mark).time_millis
        except SnapshotGapError:
            raise
        except SnapshotNotFoundError:
            if latest is not None and latest >= mark:
                return  # expired since it was read: nothing left to compare
            now = None
        if now != position.read_time:
            found = f"is now another snapshot (committed at {now})" if now is not None else \
                f"does not exist any more (latest is {latest})"
            raise SnapshotNotFoundError(
                f"table {self.table_path} was rolled back below this stream's position: snapshot {mark}, which "
                f"the stream had reached (committed at {position.read_time}), {found}. Its changes since cannot be told "
                "from those read; start a new query (a new checkpoint) to read the table as it is now")

    def _schema_changed(self, snapshot_id: int) -> SchemaChangedError:
        """A stream keeps the schema it started with (Delta's rule): at the first snapshot
        committed under a schema with other columns it stops; restarted from its checkpoint it
        continues at that snapshot with the new schema. Never rows shaped by the wrong one."""
        new = self.scan.schema_of(self._newer_schema[snapshot_id])
        return SchemaChangedError(
            f"the schema of {self.table_path} changed: snapshot {snapshot_id} was committed with schema {new.id} "
            f"(columns {new.field_names}), this stream reads schema {self.schema.id} (columns "
            f"{self.schema.field_names}); every change before it was delivered. Restart the query from its "
            "checkpoint to continue with the new schema")

    def units_between(self, start: StreamPosition, end: StreamPosition) -> list[ReadUnit]:
        """The units after `start` up to `end` (a micro-batch's content). A rollback below `end`
        since it was planned (its plans are cached) is refused, not read from those plans.
        `start` is a resolved position: a pending one resolved now could be another start."""
        if start.pending and end == start:  # a batch Spark runs before the table's first snapshot
            return []
        if start.pending:
            raise ValueError(f"stream offset {start} is a pending start: plan from its resolved position")
        self.check_not_rolled_back(start)
        self.check_not_rolled_back(end)
        out: list[ReadUnit] = []
        for s in range(start.snapshot, end.snapshot + 1):
            lo = start.units if s == start.snapshot else 0
            if s == end.snapshot and end.units <= lo:
                break
            full = start.full and s == start.snapshot
            if s == end.snapshot and end.full != full:
                raise ValueError(f"inconsistent stream offsets {start} -> {end}")
            plan = self.snapshot_units(s, full)
            if plan is None:
                raise SnapshotNotFoundError(
                    f"table {self.table_path}: snapshot {s} of a planned micro-batch does not exist "
                    f"(latest is {self.snapshots.latest_id()}); was the table rolled back or recreated?")
            hi = end.units if s == end.snapshot else len(plan)
            out.extend(plan[lo:hi])
        return out

    # ---- progress -----------------------------------------------------------------------
    def record_progress(self, position: StreamPosition) -> None:
        """Write the consumer file (if `consumer-id` is set): snapshots >= position.snapshot are
        still needed by this stream. Not past a rollback below the position (the error of
        `check_not_rolled_back`): the rollback moved the consumer back, and a new query with
        its id would otherwise skip what was committed since."""
        if self.options.consumer_id and not position.pending:  # as Java's: nothing before a first snapshot
            self.check_not_rolled_back(position)
            self.consumers.record(self.options.consumer_id, position.snapshot, position.full)
