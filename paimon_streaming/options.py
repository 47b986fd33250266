"""Table options with Paimon's keys and defaults, parsed and validated in one place.

Options live in the schema file as strings (Paimon stores every value as a string). Keys
we do not know are kept untouched (Paimon and its engines have hundreds); keys we do know,
and Paimon's keys of a number, boolean, duration or size type, are validated when a table is
created or altered, as Java parses them (option_text), so a bad value fails early and clearly.
"""
from __future__ import annotations

import datetime
from dataclasses import dataclass
from typing import Any, Callable, Iterable

import numpy as np

from .errors import InvalidOptionError
from .external_paths import ExternalPaths
from .option_keys import CORE_OPTION_TYPES, PAIMON_OPTION_KEYS, with_fallback_keys
from .option_text import (choice, exact_choice, java_trim, parse_bool, parse_double, parse_duration_ms, parse_int,
                          parse_long, parse_map, parse_memory_size)
from .stats import parse_stats_mode


def duration_ms(value: Any, what: str) -> int:
    """A duration argument in milliseconds: text as Paimon writes it ('7 d'), a timedelta (or
    pandas.Timedelta), or a whole number of milliseconds (numpy's too); ValueError naming `what`
    for a negative one, TypeError for anything else (a bool, a float)."""
    if isinstance(value, str):
        ms = parse_duration_ms(value)
    elif isinstance(value, datetime.timedelta):
        ms = value // datetime.timedelta(milliseconds=1)
    elif isinstance(value, (int, np.integer)) and not isinstance(value, (bool, np.bool_)):
        ms = int(value)
    else:
        raise TypeError(f"{what} takes a duration ('7 d', a timedelta or milliseconds), not {value!r}")
    if ms < 0:
        raise ValueError(f"{what} must not be negative, got {value!r}")
    return ms


def _by_level(parse_value: Callable[[str], Any]) -> Callable[[str], dict[int, Any]]:
    """A per-level map option as Paimon writes it, `0:lz4,1:zstd`: level -> parsed value. Java
    reads it as a map option (option_text.parse_map), then each level with Integer.valueOf;
    two keys of one level (`1` and `01`) fail its Collectors.toMap, so they are refused."""
    def parse(text: str) -> dict[int, Any]:
        levels: dict[int, Any] = {}
        for key, value in parse_map(text).items():
            try:
                level = parse_int(key)
            except ValueError:
                raise ValueError(f"level {key!r} is not a whole number; expected level:value pairs such as "
                                 "0:lz4,1:zstd") from None
            if level in levels:
                raise ValueError(f"level {level} is given twice")
            levels[level] = parse_value(value)
        return levels
    return parse


def _max_buckets(text: str) -> int:
    value = parse_int(text)
    if value == 0 or value < -1:
        raise ValueError("must be -1 (no limit) or a positive number of buckets")
    return value


def _positive_duration_ms(text: str) -> int:
    value = parse_duration_ms(text)
    if value <= 0:
        raise ValueError("must be a positive duration such as 30 min")
    return value


def _names(text: str) -> tuple[str, ...]:
    """A comma-separated list of column names."""
    return tuple(n.strip() for n in text.split(",") if n.strip())


def _stats_mode(text: str) -> str:
    try:
        return parse_stats_mode(text)
    except InvalidOptionError:
        raise ValueError("expected none, counts, full or truncate(N) with N > 0") from None


def _int_at_least(minimum: int, parse_number: Callable[[str], int] = parse_int) -> Callable[[str], int]:
    def parse(text: str) -> int:
        value = parse_number(text)
        if value < minimum:
            raise ValueError(f"must be at least {minimum}")
        return value
    return parse


def _bucket(text: str) -> int:
    value = parse_int(text)
    if value == 0 or value < -2:
        raise ValueError("must be a positive bucket count, -1 (dynamic/unaware) or -2 (postpone)")
    return value


def _partition_default_name(text: str) -> str:
    if not text:
        raise ValueError("must not be empty (Java's writers fail on it: 'Path should not be null or empty')")
    return text


def parse_hadoop_bool(text: str) -> bool:
    """A parquet-mr setting read through Hadoop's Configuration.getBoolean: trimmed, any case."""
    return parse_bool(java_trim(text))


@dataclass(frozen=True)
class Option:
    key: str
    default: str | None
    parse: Callable[[str], Any]


def _fraction(text: str) -> float:
    value = parse_double(text)
    if not 0.0 <= value <= 1.0:
        raise ValueError("must be a ratio between 0 and 1")
    return value


PARQUET_WRITER_VERSION = "parquet.writer.version"
PARQUET_DICTIONARY = "parquet.enable.dictionary"
ORC_LTZ_LEGACY = "orc.timestamp-ltz.legacy.type"  # Java's OrcOptions: LTZ values stored shifted (orc_ltz.py)
_PER_COLUMN = (PARQUET_DICTIONARY,)  # `<key>#<column>` overrides, as parquet-mr's ColumnConfigParser


def _manifest_codec(text: str) -> str:
    """zstd in any case (Paimon's own name for it), or Avro's codec names as Avro takes them.
    Java's ORC and Parquet manifest writers take their formats' other codecs too (lz4, gzip),
    which this writer does not write (tables with them are read)."""
    if text.lower() == "zstd":
        return "zstd"
    if text not in ("null", "none", "deflate", "snappy"):
        raise ValueError("paimon-streaming writes manifests with zstd (any case) or Avro's null, none, deflate or "
                         f"snappy (as written), in ORC and Parquet manifests with {', '.join(COLUMNAR_MANIFEST_CODECS)}")
    return text


def _parquet_writer_version(text: str) -> str:
    """parquet-mr's WriterVersion.fromString: a short name or the enum's name (case as given)."""
    version = {"v1": "v1", "PARQUET_1_0": "v1", "v2": "v2", "PARQUET_2_0": "v2"}.get(text.strip())
    if version is None:
        raise ValueError("expected v1 or v2 (or PARQUET_1_0, PARQUET_2_0), as parquet-mr")
    return version


_FORMAT = choice("parquet", "orc", "avro")

_OPTIONS = [
    Option("bucket", "-1", _bucket),
    Option("bucket-key", None, str),
    Option("bucket-function.type", "default", choice("default", "mod", "hive")),
    Option("file.format", "parquet", _FORMAT),  # avro: read, not written
    # compressions: the names of each format's writer, checked with the format (file_settings.py)
    Option("file.compression", "zstd", str),
    Option("file.format.per.level", "", _by_level(_FORMAT)),
    Option("file.compression.per.level", "", _by_level(str)),
    Option("changelog-file.format", None, _FORMAT),
    Option("changelog-file.compression", None, str),
    Option("file.compression.zstd-level", "1", _int_at_least(1)),
    Option("manifest.format", "avro", choice("avro", "orc", "parquet")),
    Option("manifest.compression", "zstd", _manifest_codec),
    Option("manifest.target-file-size", "8 mb", parse_memory_size),
    Option("manifest.full-compaction-threshold-size", "16 mb", parse_memory_size),
    Option("manifest.merge-min-count", "30", _int_at_least(1)),
    Option("target-file-size", None, parse_memory_size),
    Option("merge-engine", "deduplicate",
           choice("deduplicate", "partial-update", "aggregation", "first-row")),
    Option("sequence.field", None, str),
    Option("partition.default-name", "__DEFAULT_PARTITION__", _partition_default_name),
    Option("partition.legacy-name", "true", parse_bool),
    Option("deletion-vectors.enabled", "false", parse_bool),
    Option("deletion-vectors.bitmap64", "false", parse_bool),
    Option("changelog-producer", "none", choice("none", "input", "lookup", "full-compaction")),
    Option("force-lookup", "false", parse_bool),
    Option("metadata.stats-mode", "truncate(16)", _stats_mode),
    Option("metadata.stats-mode.per.level", "", _by_level(_stats_mode)),
    Option("changelog-file.stats-mode", None, _stats_mode),
    Option("data-file.prefix", "data-", str),
    Option("changelog-file.prefix", "changelog-", str),
    Option("changelog-producer.row-deduplicate", "false", parse_bool),
    Option("changelog-producer.row-deduplicate-ignore-fields", "", _names),
    Option("file.suffix.include.compression", "false", parse_bool),
    Option("data-file.thin-mode", "false", parse_bool),
    Option("commit.max-retries", "10", _int_at_least(0)),
    Option("snapshot.num-retained.min", "10", _int_at_least(1)),
    Option("snapshot.num-retained.max", "2147483647", _int_at_least(1)),
    Option("snapshot.time-retained", "1 h", parse_duration_ms),
    Option("snapshot.expire.limit", "50", _int_at_least(1)),
    Option("snapshot.clean-empty-directories", "false", parse_bool),
    Option("partition.expiration-time", None, parse_duration_ms),
    Option("partition.expiration-check-interval", "1 h", parse_duration_ms),
    Option("partition.expiration-strategy", "values-time", exact_choice("values-time", "update-time")),
    Option("partition.expiration-max-num", "100", _int_at_least(1)),
    Option("partition.expiration-batch-size", None, _int_at_least(1)),
    Option("end-input.check-partition-expire", "false", parse_bool),
    Option("partition.timestamp-formatter", None, str),
    Option("partition.timestamp-pattern", None, str),
    Option("partition.timestamp-format.strict", "false", parse_bool),
    Option("record-level.expire-time", None, parse_duration_ms),
    Option("record-level.time-field", None, str),
    Option("changelog.num-retained.max", None, _int_at_least(1)),
    Option("changelog.num-retained.min", None, _int_at_least(1)),
    Option("changelog.time-retained", None, parse_duration_ms),
    Option("consumer.expiration-time", None, parse_duration_ms),
    Option("tag.automatic-creation", "none", choice("none", "process-time", "watermark", "batch")),
    Option("tag.creation-period", "daily", choice("daily", "hourly", "two-hours")),
    Option("tag.creation-delay", "0 ms", parse_duration_ms),
    Option("tag.creation-period-duration", None, _positive_duration_ms),
    Option("tag.time-expire-enabled", "true", parse_bool),
    Option("tag.period-formatter", "with_dashes",
           choice("with_dashes", "without_dashes", "without_dashes_and_spaces")),
    Option("tag.num-retained-max", None, _int_at_least(1)),
    Option("tag.default-time-retained", None, parse_duration_ms),
    Option("tag.automatic-completion", "false", parse_bool),
    Option("tag.batch.customized-name", None, str),
    Option("sink.process-time-zone", None, str),
    Option("sink.watermark-time-zone", "UTC", str),
    Option("num-sorted-run.compaction-trigger", "5", _int_at_least(1)),
    Option("num-levels", None, _int_at_least(2)),
    Option("compaction.max-size-amplification-percent", "200", _int_at_least(0)),
    Option("compaction.size-ratio", "1", _int_at_least(0)),
    Option("compaction.delete-ratio-threshold", "0.2", _fraction),
    Option("compaction.min.file-num", "5", _int_at_least(1)),
    Option("source.split.open-file-cost", "4 mb", parse_memory_size),
    Option("compaction.force-rewrite-all-files", "false", parse_bool),
    Option("dynamic-bucket.target-row-num", "2000000", _int_at_least(1, parse_long)),
    Option("dynamic-bucket.max-buckets", "-1", _max_buckets),
    Option("write-only", "false", parse_bool),
    Option("overwrite-upgrade", "true", parse_bool),
    Option("full-compaction.delta-commits", None, parse_int),
    Option(PARQUET_WRITER_VERSION, "v1", _parquet_writer_version),
    Option(PARQUET_DICTIONARY, "true", parse_hadoop_bool),
    Option(ORC_LTZ_LEGACY, "true", parse_bool),
    Option("file-index.in-manifest-threshold", "500 b", parse_memory_size),
    Option("file-index.read.enabled", "true", parse_bool),
]
OPTIONS: dict[str, Option] = {o.key: o for o in _OPTIONS}
# the parser of each type of CORE_OPTION_TYPES, for the Paimon options not in OPTIONS
_JAVA_PARSERS: dict[str, Callable[[str], Any]] = {
    "boolean": parse_bool, "int": parse_int, "long": parse_long, "float": parse_double, "double": parse_double,
    "duration": parse_duration_ms, "memory": parse_memory_size}
KNOWN_KEYS = PAIMON_OPTION_KEYS | OPTIONS.keys()


# `manifest.compression` values Java's ORC and Parquet writers take too (ORC: CompressionKind by
# name; Parquet: "none" or CompressionCodecName by name), which Avro's "null" and "deflate" are not
COLUMNAR_MANIFEST_CODECS = ("zstd", "none", "snappy")


def check_manifest_compression(options: "CoreOptions") -> None:
    """InvalidOptionError naming both options when `manifest.format` is orc or parquet and
    `manifest.compression` an Avro-only codec, which Java's writer fails on."""
    fmt, compression = options.get("manifest.format"), options.get("manifest.compression")
    if fmt != "avro" and compression not in COLUMNAR_MANIFEST_CODECS:
        raise InvalidOptionError(f"table option 'manifest.compression' = {compression!r} is an Avro codec, but "
                                 f"'manifest.format' is {fmt!r}: use one of {', '.join(COLUMNAR_MANIFEST_CODECS)} "
                                 f"(Java's {fmt} writer fails on it)")


def validate(options: dict[str, str]) -> None:
    """Reject invalid values of known options, naming the key and what is expected, and keys
    that are misspellings of Paimon's (see `misspelled_key`)."""
    for key in options:
        meant = misspelled_key(key)
        if meant is not None:
            raise InvalidOptionError(f"unknown table option {key!r}: did you mean {meant!r}? (Paimon would "
                                     f"ignore {key!r} and use the default of {meant!r})")
    for key, raw in options.items():
        opt = OPTIONS.get(key.split("#", 1)[0] if key.split("#", 1)[0] in _PER_COLUMN else key)
        parse = opt.parse if opt is not None else _JAVA_PARSERS.get(CORE_OPTION_TYPES.get(key, ""))
        if parse is None:
            continue
        try:
            parse(str(raw))
        except ValueError as exc:
            raise InvalidOptionError(f"invalid value {raw!r} for table option '{key}': {exc}") from None
    ExternalPaths.of(options)
    typed = CoreOptions(options)
    check_manifest_compression(typed)
    if typed.get("snapshot.num-retained.min") > typed.get("snapshot.num-retained.max"):
        raise InvalidOptionError("table option 'snapshot.num-retained.min' must not be greater than "
                                 "'snapshot.num-retained.max' (Paimon rejects it too); set both")
    changelog_min, changelog_max = (typed.get(f"snapshot.num-retained.{end}") if typed.get(f"changelog.num-retained.{end}")
                                    is None else typed.get(f"changelog.num-retained.{end}") for end in ("min", "max"))
    if changelog_min > changelog_max:
        raise InvalidOptionError(f"table option 'changelog.num-retained.min' ({changelog_min}) must not be greater than "
                                 f"'changelog.num-retained.max' ({changelog_max}); each defaults to its "
                                 "'snapshot.num-retained.*' option (Paimon rejects it too)")


# Paimon table features this connector does not implement, with what they change. A table
# created elsewhere with one of them is still read where its files hold whole rows in their own
# order; writing to it would break what its other writers and readers rely on.
UNIMPLEMENTED_FEATURES = {
    "sequence.snapshot-ordering": "snapshot ordering (the snapshot that committed a row decides which "
                                  "version of a key wins)",
    "metastore.partitioned-table": "new partitions added to the Hive metastore with each commit (Java's Hive "
                                   "catalog), without which metastore readers miss them",
}


# Table options with which Java's batch reads also take partitions from other branches. Reads
# that do not take them (fallback_read.py does for plain batch reads) are refused rather than
# answered without them.
OTHER_BRANCH_READS = {
    "scan.fallback-branch": "partitions missing here are read from branch '{value}'",
    "chain-table.enabled": "a chain table's partitions are read from its snapshot and delta branches",
}


def refuse_other_branch_reads(options: dict[str, str], table_name: str, fallback_ok: bool = False) -> None:
    """UnsupportedOperationError for a batch read of a table whose options (OTHER_BRANCH_READS)
    make Java's batch reads answer from other branches too; `fallback_ok`: the read does
    `scan.fallback-branch` as Java (fallback_read.py)."""
    from .errors import UnsupportedOperationError
    for key, what in OTHER_BRANCH_READS.items():
        value = str(options.get(key, "")).strip()
        if fallback_ok and key == "scan.fallback-branch":
            continue
        if value and value.lower() != "false":
            raise UnsupportedOperationError(
                f"cannot read {table_name} as a batch: its option '{key}' = '{value}' means "
                f"{what.format(value=value)} (Java's batch reads), which paimon-streaming does not do; "
                "read it with Apache Paimon, or stream it (streams read the table's own branch, as Java's)")


# Set to any value but the ones given, these change what a write means (or must do), and are
# not implemented here.
UNIMPLEMENTED_SETTINGS = {
    "upsert-key": ("upserts into an append table by that key (Java's Spark writes rewrite an INSERT into a MERGE "
                   "INTO: a row replaces the row with its key)", ()),
    "metadata.iceberg.storage": ("Iceberg metadata written after every commit (Java's Iceberg compatibility); "
                                 "a commit without it would leave Iceberg readers on an older snapshot", ("disabled",)),
    "commit.callbacks": ("Java classes called after every commit", ()),
}


def unimplemented_features(options: dict[str, str]) -> list[str]:
    """The keys of UNIMPLEMENTED_FEATURES switched on in `options`, and of UNIMPLEMENTED_SETTINGS set."""
    return [key for key in UNIMPLEMENTED_FEATURES if str(options.get(key, "false")).strip().lower() == "true"] + \
        [key for key, (_, off) in UNIMPLEMENTED_SETTINGS.items()
         if str(options.get(key, "")).strip() and str(options[key]).strip().lower() not in off]


def unimplemented_feature(key: str) -> str:
    """What an unimplemented option asks for (UNIMPLEMENTED_FEATURES, UNIMPLEMENTED_SETTINGS)."""
    return UNIMPLEMENTED_FEATURES.get(key) or UNIMPLEMENTED_SETTINGS[key][0]


def refuse_unimplemented(options: dict[str, str]) -> None:
    """InvalidOptionError when `options` (of a table being created or altered here) switch on a
    feature of UNIMPLEMENTED_FEATURES, or ask for Avro data files, which are read, not written."""
    for key in unimplemented_features(options):
        raise InvalidOptionError(f"table option '{key}' = '{options[key]}' asks for {unimplemented_feature(key)}, "
                                 "which paimon-streaming does not implement")
    if str(options.get("file.format", "")).strip().lower() == "avro":
        raise InvalidOptionError(AVRO_WRITES)


# Options a writer acts on in ways readers then rely on: which version of a key wins (and so
# what a lookup marks deleted and a compaction keeps), which rows are dropped, what changelog is
# produced. Files written under one value and committed under another would make the table
# answer by neither. (The bucket count is checked per partition, by commit.py.)
_WRITE_RULES = ("bucket-key", "merge-engine", "sequence.field", "sequence.field.sort-order", "rowkind.field",
                "ignore-delete", "ignore-update-before", "changelog-producer", "changelog-producer.row-deduplicate",
                "changelog-producer.row-deduplicate-ignore-fields", "record-level.expire-time",
                "record-level.time-field", "record-level.time-field-type", "deletion-vectors.enabled",
                "deletion-vectors.bitmap64", "cross-partition-upsert.index-ttl")
_WRITE_RULE_PREFIXES = ("fields.", "partial-update.", "aggregation.", "first-row.", "deduplicate.")


def write_rule_change(old: dict[str, str], new: dict[str, str], old_ids: dict[str, int] | None = None,
                      new_ids: dict[str, int] | None = None) -> str | None:
    """The first option of `_WRITE_RULES` whose value differs between `old` (the options a
    write was planned with) and `new` (the table's newest), or None. With the field ids by
    column name of each schema, `fields.<column>.*` options are compared by the column's id, so
    a renamed column's options (moved to its new name) are no change."""
    def rules(options: dict[str, str], ids: dict[str, int] | None) -> dict[str, tuple[str, str]]:
        out = {}
        for key, value in options.items():
            if key in _WRITE_RULES or key.startswith(_WRITE_RULE_PREFIXES):
                name = max((n for n in (ids or {}) if key.startswith(f"fields.{n}.")), key=len, default=None)
                out[key if name is None else f"fields.#{ids[name]}.{key[len(name) + 8:]}"] = (key, value)
        return out
    before, after = rules(old, old_ids), rules(new, new_ids)
    for key in sorted(set(before) | set(after)):
        if before.get(key, (None, None))[1] != after.get(key, (None, None))[1]:
            return (after.get(key) or before[key])[0]
    return None


AVRO_WRITES = ("'file.format' = 'avro': paimon-streaming reads Avro data files (of Java's writers) but writes "
               "Parquet or ORC; use 'parquet' (Paimon's default) or 'orc'")


def misspelled_key(key: str) -> str | None:
    """The Paimon option `key` was probably meant as, or None. Paimon accepts any key (engines and
    users add their own), so only a key that is not Paimon's and is one edit (insertion,
    deletion, substitution, swap of neighbours) from one is taken as a typo, after case,
    surrounding spaces and '_' for '-' are ignored; `fields.<column>.*` keys are never
    judged. Short keys (`path`, `type`) count only for case/space/underscore differences."""
    if key in KNOWN_KEYS or key.startswith("fields.") or key.split("#", 1)[0] in _PER_COLUMN:
        return None
    folded = key.strip().lower().replace("_", "-")
    if folded in KNOWN_KEYS:
        return folded
    return one_edit_from(folded, KNOWN_KEYS)


def misspelt_name(key: str, names: Iterable[str]) -> str | None:
    """The name of `names` (an engine's own options, spelt as documented) that `key` misspells,
    case ignored, or None when `key` is one of them or is not one edit from any: such a key
    would otherwise be taken as something else and ignored."""
    by_folded = {name.lower(): name for name in names}
    folded = key.lower()
    meant = None if folded in by_folded else one_edit_from(folded, by_folded)
    return None if meant is None else by_folded[meant]


def one_edit_from(key: str, known_keys: Iterable[str]) -> str | None:
    """The key of `known_keys` (those of 6 characters or more) that `key` is one edit away from:
    an insertion, a deletion, a substitution or a swap of neighbours."""
    return next((known for known in known_keys if len(known) >= 6 and _one_edit_apart(key, known)), None)


def _one_edit_apart(a: str, b: str) -> bool:
    if abs(len(a) - len(b)) > 1 or a == b:
        return False
    if len(a) == len(b):
        diff = [i for i, (x, y) in enumerate(zip(a, b)) if x != y]
        return len(diff) == 1 or (len(diff) == 2 and diff[1] == diff[0] + 1
                                  and a[diff[0]] == b[diff[1]] and a[diff[1]] == b[diff[0]])
    short, long_ = (a, b) if len(a) < len(b) else (b, a)
    i = next((i for i, (x, y) in enumerate(zip(short, long_)) if x != y), len(short))
    return short[i:] == long_[i + 1:]


class CoreOptions:
    """Typed read access to a table's options (defaults from Paimon)."""

    def __init__(self, options: dict[str, str]):
        self.raw = with_fallback_keys(options)  # Java's older names (`write.compaction-skip`) read too

    def get(self, key: str) -> Any:
        """The parsed value; InvalidOptionError naming the option when a table written elsewhere
        holds a value not read here (pypaimon's `file.format` = `row`, say)."""
        opt = OPTIONS[key]
        raw = self.raw.get(key, opt.default)
        if raw is None:
            return None
        try:
            return opt.parse(str(raw))
        except ValueError as exc:
            raise InvalidOptionError(f"table option '{key}' = {raw!r} is not supported by paimon-streaming: "
                                     f"{exc}") from None

    def per_column(self, key: str) -> dict[str, str]:
        """`<key>#<column>` options: raw value by column name."""
        return {k[len(key) + 1:]: v for k, v in self.raw.items() if k.startswith(key + "#")}

    @property
    def bucket(self) -> int:
        return self.get("bucket")

    @property
    def file_format(self) -> str:
        return self.get("file.format")

    @property
    def file_compression(self) -> str:
        return self.get("file.compression")

    @property
    def deletion_vectors(self) -> bool:
        return self.get("deletion-vectors.enabled")

    @property
    def lookup_compaction(self) -> bool:
        """Level 0 is pushed up by a lookup compaction at every write: deletion-vector tables,
        and first-row tables (whose readers skip level 0, as Paimon's do)."""
        return self.deletion_vectors or self.merge_engine == "first-row"

    @property
    def need_lookup(self) -> bool:
        """Java's `needLookup`: its compactions look older levels up to merge level 0 into
        (changelog-producer lookup, deletion vectors, first-row, force-lookup), so a key's
        row at a lower level holds its rows at higher ones, and its reads merge accordingly
        (`merge_engine.sort_and_merge`)."""
        return (self.get("changelog-producer") == "lookup" or self.deletion_vectors
                or self.merge_engine == "first-row" or self.get("force-lookup"))

    @property
    def merge_engine(self) -> str:
        return self.get("merge-engine")

    @property
    def sequence_field(self) -> list[str]:
        raw = self.get("sequence.field")
        return [s.strip() for s in raw.split(",") if s.strip()] if raw else []

    @property
    def partition_default_name(self) -> str:
        return self.get("partition.default-name")

    @property
    def num_levels(self) -> int:
        return self.get("num-levels") or self.get("num-sorted-run.compaction-trigger") + 1

    def target_file_size(self, primary_key: bool) -> int:
        return self.get("target-file-size") or (128 << 20 if primary_key else 256 << 20)
