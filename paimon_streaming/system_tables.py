"""System tables: a table's metadata as Arrow tables, named as in Paimon (`t$snapshots`, ...).

Columns follow Java's system tables (`org.apache.paimon.table.system.*Table`). Times that
are instants (snapshot commit times, schema update times) are UTC timestamps; times Java
stores as local date-times (tag creation time, file creation time) are naive timestamps.

    system_table(table, "snapshots")           # or "tags", "files", "manifests", "partitions",
                                                #    "schemas", "options", "consumers", "branches"
    split_system_table("/wh/db.db/t$files")    # -> ("/wh/db.db/t", "files")
"""
from __future__ import annotations

import datetime as dt
import decimal
import json
from typing import Any, Callable

import pyarrow as pa

from .binary_row import deserialize_row
from .branches import PREFIX as BRANCH_PREFIX, branch_path
from .consumers import ConsumerManager
from .errors import UnsupportedOperationError
from .fallback_read import FallbackBranch
from .manifest import DataFileMeta, ManifestEntry
from .paths import TableDirs, partition_value_str
from .row_tracking import value_stats_fields
from .scan import TableScan
from .schema import TableSchema
from .snapshot import Snapshot
from .table import Table
from .tags import tag_create_time_from_json
from .tzdb import local_tzinfo
from .types import DataField, DataType

_TS = pa.timestamp("ms", tz="UTC")
_LOCAL_TS = pa.timestamp("ms")


def _f(name: str, type_: pa.DataType, nullable: bool = True) -> pa.Field:
    return pa.field(name, type_, nullable)


SCHEMAS: dict[str, pa.Schema] = {
    "snapshots": pa.schema([
        _f("snapshot_id", pa.int64(), False), _f("schema_id", pa.int64(), False),
        _f("commit_user", pa.string(), False), _f("commit_identifier", pa.int64(), False),
        _f("commit_kind", pa.string(), False), _f("commit_time", _TS, False),
        _f("base_manifest_list", pa.string(), False), _f("delta_manifest_list", pa.string(), False),
        _f("changelog_manifest_list", pa.string()), _f("total_record_count", pa.int64()),
        _f("delta_record_count", pa.int64()), _f("changelog_record_count", pa.int64()),
        _f("watermark", pa.int64()), _f("next_row_id", pa.int64())]),
    "tags": pa.schema([
        _f("tag_name", pa.string(), False), _f("snapshot_id", pa.int64(), False),
        _f("schema_id", pa.int64(), False), _f("commit_time", _TS, False), _f("record_count", pa.int64()),
        _f("create_time", _LOCAL_TS), _f("time_retained", pa.string())]),
    "files": pa.schema([
        _f("partition", pa.string()), _f("bucket", pa.int32(), False), _f("file_path", pa.string(), False),
        _f("file_format", pa.string(), False), _f("schema_id", pa.int64(), False),
        _f("level", pa.int32(), False), _f("record_count", pa.int64(), False),
        _f("file_size_in_bytes", pa.int64(), False), _f("min_key", pa.string()), _f("max_key", pa.string()),
        _f("null_value_counts", pa.string(), False), _f("min_value_stats", pa.string(), False),
        _f("max_value_stats", pa.string(), False), _f("min_sequence_number", pa.int64()),
        _f("max_sequence_number", pa.int64()), _f("creation_time", _LOCAL_TS), _f("deleteRowCount", pa.int64()),
        _f("file_source", pa.string()), _f("first_row_id", pa.int64()), _f("write_cols", pa.list_(pa.string()))]),
    "manifests": pa.schema([
        _f("file_name", pa.string(), False), _f("file_size", pa.int64(), False),
        _f("num_added_files", pa.int64(), False), _f("num_deleted_files", pa.int64(), False),
        _f("schema_id", pa.int64(), False), _f("min_partition_stats", pa.string()),
        _f("max_partition_stats", pa.string()), _f("min_row_id", pa.int64()), _f("max_row_id", pa.int64())]),
    "partitions": pa.schema([
        _f("partition", pa.string()), _f("record_count", pa.int64(), False),
        _f("file_size_in_bytes", pa.int64(), False), _f("file_count", pa.int64(), False),
        _f("last_update_time", _LOCAL_TS), _f("created_at", _LOCAL_TS), _f("created_by", pa.string()),
        _f("updated_by", pa.string()), _f("options", pa.string())]),
    "schemas": pa.schema([
        _f("schema_id", pa.int64(), False), _f("fields", pa.string(), False),
        _f("partition_keys", pa.string(), False), _f("primary_keys", pa.string(), False),
        _f("options", pa.string(), False), _f("comment", pa.string()), _f("update_time", _TS, False)]),
    "options": pa.schema([_f("key", pa.string(), False), _f("value", pa.string(), False)]),
    "consumers": pa.schema([_f("consumer_id", pa.string(), False), _f("next_snapshot_id", pa.int64(), False)]),
    "branches": pa.schema([_f("branch_name", pa.string(), False), _f("create_time", _LOCAL_TS, False)]),
}
SYSTEM_TABLES = tuple(SCHEMAS)
SEPARATOR = "$"
# not metadata: the table's rows with their `_ROW_ID` and `_SEQUENCE_NUMBER` (Java's RowTrackingTable)
ROW_TRACKING = "row_tracking"


# Paimon's system tables of a table that this package does not build: named, rather than taken
# for part of a table directory's name ("no Paimon table at .../t$audit_log")
_NOT_IMPLEMENTED = ("audit_log", "binlog", "ro", "read_optimized", "statistics", "aggregation_fields",
                    "table_indexes", "buckets")


def split_system_table(ref: str) -> tuple[str, str | None]:
    """'<table>$<system table>' -> (table, name); a plain table reference -> (ref, None)."""
    base, sep, name = ref.rpartition(SEPARATOR)
    if sep and base and (name.lower() in SCHEMAS or name.lower() == ROW_TRACKING):
        return base, name.lower()
    if sep and base and name.lower() in _NOT_IMPLEMENTED:
        raise UnsupportedOperationError(
            f"system table '{SEPARATOR}{name}' of {base} is Paimon's, but not implemented by paimon-streaming; its "
            f"system tables are {', '.join(SEPARATOR + n for n in SYSTEM_TABLES + (ROW_TRACKING,))}")
    return ref, None


def system_table_schema(name: str) -> pa.Schema:
    try:
        return SCHEMAS[name]
    except KeyError:
        raise ValueError(f"unknown system table {name!r}; expected one of {', '.join(SYSTEM_TABLES)}") from None


def system_table(table: Table, name: str, snapshot: Snapshot | None = None) -> pa.Table:
    """The system table `name` of `table`; `files`/`manifests` at `snapshot` (default latest)."""
    schema = system_table_schema(name)
    rows = _BUILDERS[name](table, snapshot)
    return pa.Table.from_pylist(rows, schema=schema)


# ---- builders -------------------------------------------------------------------------------
def _snapshots(table: Table, _: Snapshot | None) -> list[dict]:
    return [{"snapshot_id": s.id, "schema_id": s.schema_id, "commit_user": s.commit_user,
             "commit_identifier": s.commit_identifier, "commit_kind": s.commit_kind,
             "commit_time": _instant(s.time_millis), "base_manifest_list": s.base_manifest_list,
             "delta_manifest_list": s.delta_manifest_list, "changelog_manifest_list": s.changelog_manifest_list,
             "total_record_count": s.total_record_count, "delta_record_count": s.delta_record_count,
             "changelog_record_count": s.changelog_record_count, "watermark": s.watermark,
             "next_row_id": s.next_row_id} for s in table.snapshots()]


def _tags(table: Table, _: Snapshot | None) -> list[dict]:
    rows = []
    for name in table.tag_manager.tag_names():
        s = table.tag_manager.snapshot(name)
        rows.append({"tag_name": name, "snapshot_id": s.id, "schema_id": s.schema_id,
                     "commit_time": _instant(s.time_millis), "record_count": s.total_record_count,
                     "create_time": tag_create_time_from_json(s.extra.get("tagCreateTime")),
                     "time_retained": _duration(s.extra.get("tagTimeRetained"))})
    return rows


def _files(table: Table, snapshot: Snapshot | None) -> list[dict]:
    """Java's FilesTable: the live files of `snapshot` (default latest), their statistics by
    the columns of the schema it is read in (`_schema_at`)."""
    schema = _schema_at(table, snapshot)
    snapshot = snapshot or table.latest_snapshot()
    if snapshot is None:
        return []
    scan = TableScan(table.file_io, table.path, table.schema, table.branch)
    rows = []
    for e in _visible_entries(scan, snapshot):
        f = e.file
        path = TableDirs.data_file(scan.dirs.bucket(scan.partition_dir(e.partition), e.bucket), f)
        file_schema = scan.schema_of(f.schema_id)
        nulls, mins, maxs = _value_stats(f, file_schema, schema)
        rows.append({
            "partition": _row_str(scan.partition_values(e.partition), scan.partition_fields, "{", "}", cast=True),
            "bucket": e.bucket, "file_path": path, "file_format": f.file_name.rsplit(".", 1)[-1],
            "schema_id": f.schema_id, "level": f.level, "record_count": f.row_count,
            "file_size_in_bytes": f.file_size,
            "min_key": _key_str(f.min_key, file_schema), "max_key": _key_str(f.max_key, file_schema),
            "null_value_counts": nulls, "min_value_stats": mins, "max_value_stats": maxs,
            "min_sequence_number": f.min_sequence_number, "max_sequence_number": f.max_sequence_number,
            "creation_time": None if f.creation_time is None else _naive_millis(f.creation_time),
            "deleteRowCount": f.delete_row_count,
            "file_source": {0: "APPEND", 1: "COMPACT"}.get(f.file_source) if f.file_source is not None else None,
            "first_row_id": f.first_row_id,
            "write_cols": None if f.write_cols is None else list(f.write_cols)})
    return rows


def _schema_at(table: Table, snapshot: Snapshot | None) -> TableSchema:
    """The schema a system table of `snapshot` answers in: time travel's the snapshot's own, as
    Java's time-travelled table (its columns as they were), else the table's latest."""
    return table.schema if snapshot is None else table.schema_manager.schema(snapshot.schema_id)


def _visible_entries(scan: TableScan, snapshot: Snapshot) -> list[ManifestEntry]:
    """The live files a batch read sees: not those still waiting in a postpone-bucket table's
    bucket -2 (Java's $files and $partitions scan as reads do)."""
    return [e for e in scan.live_entries(snapshot) if not scan.postponed_bucket(e)]


def _manifests(table: Table, snapshot: Snapshot | None) -> list[dict]:
    snapshot = snapshot or table.latest_snapshot()
    if snapshot is None:
        return []
    scan = TableScan(table.file_io, table.path, table.schema, table.branch)
    types = [x.type.copy(nullable=True) for x in scan.partition_fields]
    # sizes checked: a damaged list is an error naming it; the changelog's too, as Java lists them
    metas = scan.data_manifests(snapshot) + (scan.manifest_list.read(snapshot.changelog_manifest_list,
                                                                     snapshot.changelog_manifest_list_size)
                                             if snapshot.changelog_manifest_list else [])
    return [{"file_name": m.file_name, "file_size": m.file_size, "num_added_files": m.num_added_files,
             "num_deleted_files": m.num_deleted_files, "schema_id": m.schema_id,
             "min_partition_stats": _row_str(deserialize_row(m.partition_stats.min_values, types),
                                             scan.partition_fields, "{", "}", cast=True),
             "max_partition_stats": _row_str(deserialize_row(m.partition_stats.max_values, types),
                                             scan.partition_fields, "{", "}", cast=True),
             "min_row_id": m.min_row_id, "max_row_id": m.max_row_id} for m in metas]


def _partitions(table: Table, snapshot: Snapshot | None) -> list[dict]:
    """Java's PartitionsTable over a filesystem catalog: per partition of `snapshot`, its live
    files at every level and the rows in them (before merging and deletion vectors, as Java
    counts), and the newest creation time of a file its manifests name (added or deleted);
    with `scan.fallback-branch`, also the branch's partitions the table lacks, as a read
    takes them from it."""
    at = snapshot or table.latest_snapshot()
    rows = [] if at is None else _partition_rows(TableScan(table.file_io, table.path, table.schema, table.branch), at)
    fallback = FallbackBranch.of(table.file_io, table.path, table.schema.options, _schema_at(table, snapshot),
                                 table.name, at, None if snapshot is None else snapshot.id,
                                 travelled=snapshot is not None)
    if fallback is not None and fallback.snapshot is not None:
        held = {r["partition"] for r in rows}
        branch = TableScan(table.file_io, table.path, fallback.schema, fallback.name)
        rows += [r for r in _partition_rows(branch, fallback.snapshot) if r["partition"] not in held]
    return sorted(rows, key=lambda r: r["partition"])


def _partition_rows(scan: TableScan, snapshot: Snapshot) -> list[dict]:
    default_name = scan.options.partition_default_name
    stats: dict[bytes, dict] = {}
    for e in _visible_entries(scan, snapshot):
        s = stats.setdefault(e.partition, {"record_count": 0, "file_size_in_bytes": 0, "file_count": 0})
        s["record_count"] += e.file.row_count
        s["file_size_in_bytes"] += e.file.file_size
        s["file_count"] += 1
    newest: dict[bytes, int] = {}
    for e in scan.entries_of(scan.data_manifests(snapshot)):
        if e.partition in stats and e.file.creation_time is not None:
            newest[e.partition] = max(newest.get(e.partition, e.file.creation_time), e.file.creation_time)
    rows = []
    for partition, s in stats.items():
        texts = [partition_value_str(v, f.type, legacy=False) for v, f in
                 zip(scan.partition_values(partition), scan.partition_fields)]
        rows.append({"partition": "/".join(f"{f.name}={default_name if text is None else text}"
                                           for f, text in zip(scan.partition_fields, texts)),
                     **s, "last_update_time": _naive_millis(newest[partition]) if partition in newest else None})
    return rows


def _schemas(table: Table, _: Snapshot | None) -> list[dict]:
    manager = table.schema_manager
    rows = []
    for sid in manager.schema_ids():
        s = manager.schema(sid)
        rows.append({"schema_id": s.id, "fields": _flat_json([f.to_json() for f in s.fields]),
                     "partition_keys": _flat_json(list(s.partition_keys)),
                     "primary_keys": _flat_json(list(s.primary_keys)), "options": _flat_json(dict(s.options)),
                     "comment": s.comment, "update_time": _instant(s.time_millis)})
    return rows


def _options(table: Table, _: Snapshot | None) -> list[dict]:
    return [{"key": k, "value": str(v)} for k, v in sorted(table.schema.options.items())]


def _consumers(table: Table, _: Snapshot | None) -> list[dict]:
    return [{"consumer_id": cid, "next_snapshot_id": n}
            for cid, n in sorted(ConsumerManager(table.file_io, branch_path(table.path, table.branch)).consumers().items())]


def _branches(table: Table, _: Snapshot | None) -> list[dict]:
    """Java's BranchesTable: the branch directories, created when last modified (local time)."""
    rows = []
    for status in table.file_io.list_status(f"{table.path}/branch"):
        name = status.path.rstrip("/").rsplit("/", 1)[-1]
        if status.is_dir and name.startswith(BRANCH_PREFIX):
            rows.append({"branch_name": name[len(BRANCH_PREFIX):],
                         "create_time": dt.datetime.fromtimestamp(status.mtime_ms // 1000, local_tzinfo()).replace(
                             microsecond=status.mtime_ms % 1000 * 1000, tzinfo=None)})
    return sorted(rows, key=lambda r: r["branch_name"])


_BUILDERS: dict[str, Callable[[Table, Snapshot | None], list[dict]]] = {
    "snapshots": _snapshots, "tags": _tags, "files": _files, "manifests": _manifests,
    "partitions": _partitions, "schemas": _schemas, "options": _options, "consumers": _consumers, "branches": _branches}


# ---- value formatting (as Java prints them) -------------------------------------------------
def _flat_json(value: Any) -> str:
    return json.dumps(value, separators=(",", ":"))


def _instant(millis: int) -> dt.datetime:
    return dt.datetime.fromtimestamp(millis / 1000, tz=dt.timezone.utc)


def _naive_millis(millis: int) -> dt.datetime:
    return dt.datetime(1970, 1, 1) + dt.timedelta(milliseconds=millis)


def _duration(seconds: Any) -> str | None:
    """Decimal seconds -> Java's Duration.toString ('PT24H', 'PT1M30S', 'PT0.5S')."""
    if seconds is None:
        return None
    total = decimal.Decimal(str(seconds))
    if total == 0:
        return "PT0S"
    sign = "-" if total < 0 else ""
    total = abs(total)
    hours, rest = divmod(total, 3600)
    minutes, secs = divmod(rest, 60)
    out = "PT"
    if hours:
        out += f"{sign}{int(hours)}H"
    if minutes:
        out += f"{sign}{int(minutes)}M"
    if secs:
        text = format(secs.normalize(), "f")
        out += f"{sign}{text}S"
    return out


def _value_str(v: Any, t: DataType, cast: bool = False) -> str:
    """A value as Java's system tables print it: a partition value as CAST(v AS STRING)
    (`cast`), a key or a statistic as its internal value's toString (a date as its epoch
    day, a time as its milliseconds of the day, a timestamp as a LocalDateTime, floating
    numbers as Java's Float/Double.toString); null as `null`, strings as they are."""
    if v is None:
        return "null"
    if t.root in ("CHAR", "VARCHAR"):
        return v
    if t.root in ("BINARY", "VARBINARY") and not cast:
        return v.hex()  # Java prints a byte[]'s identity, which no reader can use
    return partition_value_str(v, t, legacy=not cast)


def _row_str(values: list[Any], fields: list[DataField], open_: str, close: str, cast: bool = False) -> str:
    return open_ + ", ".join(_value_str(v, f.type, cast) for v, f in zip(values, fields)) + close


def _key_str(data: bytes, schema: TableSchema) -> str | None:
    keys = schema.fields_of(schema.trimmed_primary_keys)
    if not keys or not data:
        return None
    try:
        return _row_str(deserialize_row(data, [k.type for k in keys]), keys, "[", "]")
    except Exception:  # noqa: BLE001 - statistics are informative; never fail the listing
        return None


def _value_stats(f: DataFileMeta, file_schema: TableSchema, schema: TableSchema) -> tuple[str, str, str]:
    """A file's null counts, minima and maxima as Java's FilesTable shows them: one entry per
    column of the table's schema (matched to the file's by field id: renamed, added and dropped
    columns follow the table; null where the file keeps no statistics), by name."""
    try:
        fields = value_stats_fields(f, file_schema.fields)
        types = [x.type.copy(nullable=True) for x in fields]
        mins = deserialize_row(f.value_stats.min_values, types)
        maxs = deserialize_row(f.value_stats.max_values, types)
    except Exception:  # noqa: BLE001
        return "{}", "{}", "{}"
    nulls = list(f.value_stats.null_counts) if f.value_stats.null_counts is not None else [None] * len(fields)
    held = {x.id: i for i, x in enumerate(fields) if i < len(nulls)}
    written = {x.id for x in file_schema.fields}
    # Java collects them in a TreeMap: by name, in Java's (UTF-16) string order
    columns = sorted(schema.fields, key=lambda x: x.name.encode("utf-16-be"))

    def fmt(values: list[Any], typed: bool = True) -> str:
        def text(column: DataField) -> str:
            i = held.get(column.id)
            if i is None:  # a column added since the file was written holds only nulls
                return str(f.row_count) if not typed and column.id not in written else "null"
            return _value_str(values[i], types[i]) if typed else _count_str(values[i])
        return "{" + ", ".join(f"{column.name}={text(column)}" for column in columns) + "}"
    return fmt(nulls, typed=False), fmt(mins), fmt(maxs)


def _count_str(count: int | None) -> str:
    return "null" if count is None else str(count)
