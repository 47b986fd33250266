"""Metadata records of manifests: data file metas, manifest entries, manifest file metas,
index file metas. Each record converts to and from its Avro dict (schemas in avro_schemas).

BinaryRow-valued fields (partition, min/max key, stats rows) stay serialized bytes here;
callers decode them with the types they know (binary_row.deserialize_row).
"""
from __future__ import annotations

import datetime as dt
from dataclasses import dataclass, field, replace
from typing import Any

from ..binary_row import serialize_row
from .avro_schemas import DV_RANGE_RECORD

ADD, DELETE = 0, 1
FILE_SOURCE_APPEND, FILE_SOURCE_COMPACT = 0, 1
MANIFEST_ENTRY_VERSION, MANIFEST_FILE_META_VERSION, INDEX_ENTRY_VERSION = 2, 2, 1
EMPTY_ROW = serialize_row([], [])

_EPOCH = dt.datetime(1970, 1, 1, tzinfo=dt.timezone.utc)


def _millis(value: Any) -> int | None:
    if value is None or isinstance(value, int):
        return value
    if value.tzinfo is None:
        value = value.replace(tzinfo=dt.timezone.utc)
    return (value - _EPOCH) // dt.timedelta(milliseconds=1)


@dataclass(frozen=True)
class SimpleStats:
    min_values: bytes
    max_values: bytes
    null_counts: tuple[int | None, ...] | None

    def to_avro(self) -> dict:
        return {"_MIN_VALUES": self.min_values, "_MAX_VALUES": self.max_values,
                "_NULL_COUNTS": None if self.null_counts is None else list(self.null_counts)}

    @staticmethod
    def from_avro(rec: dict) -> "SimpleStats":
        nc = rec.get("_NULL_COUNTS")
        return SimpleStats(rec["_MIN_VALUES"], rec["_MAX_VALUES"], None if nc is None else tuple(nc))


EMPTY_STATS = SimpleStats(EMPTY_ROW, EMPTY_ROW, ())


@dataclass(frozen=True)
class DataFileMeta:
    file_name: str
    file_size: int
    row_count: int
    min_key: bytes
    max_key: bytes
    key_stats: SimpleStats
    value_stats: SimpleStats
    min_sequence_number: int
    max_sequence_number: int
    schema_id: int
    level: int
    extra_files: tuple[str, ...] = ()
    creation_time: int | None = None           # local wall-clock millis, naive (FORMAT §4.2)
    delete_row_count: int | None = None
    embedded_index: bytes | None = None
    file_source: int | None = None
    value_stats_cols: tuple[str, ...] | None = None
    external_path: str | None = None
    first_row_id: int | None = None
    write_cols: tuple[str, ...] | None = None

    def upgrade(self, level: int) -> "DataFileMeta":
        return replace(self, level=level)

    def to_avro(self) -> dict:
        return {
            "_FILE_NAME": self.file_name, "_FILE_SIZE": self.file_size, "_ROW_COUNT": self.row_count,
            "_MIN_KEY": self.min_key, "_MAX_KEY": self.max_key,
            "_KEY_STATS": self.key_stats.to_avro(), "_VALUE_STATS": self.value_stats.to_avro(),
            "_MIN_SEQUENCE_NUMBER": self.min_sequence_number,
            "_MAX_SEQUENCE_NUMBER": self.max_sequence_number,
            "_SCHEMA_ID": self.schema_id, "_LEVEL": self.level, "_EXTRA_FILES": list(self.extra_files),
            "_CREATION_TIME": self.creation_time, "_DELETE_ROW_COUNT": self.delete_row_count,
            "_EMBEDDED_FILE_INDEX": self.embedded_index, "_FILE_SOURCE": self.file_source,
            "_VALUE_STATS_COLS": None if self.value_stats_cols is None else list(self.value_stats_cols),
            "_EXTERNAL_PATH": self.external_path, "_FIRST_ROW_ID": self.first_row_id,
            "_WRITE_COLS": None if self.write_cols is None else list(self.write_cols),
        }

    @staticmethod
    def from_avro(rec: dict) -> "DataFileMeta":
        cols = rec.get("_VALUE_STATS_COLS")
        write_cols = rec.get("_WRITE_COLS")
        return DataFileMeta(
            rec["_FILE_NAME"], rec["_FILE_SIZE"], rec["_ROW_COUNT"], rec["_MIN_KEY"], rec["_MAX_KEY"],
            SimpleStats.from_avro(rec["_KEY_STATS"]), SimpleStats.from_avro(rec["_VALUE_STATS"]),
            rec["_MIN_SEQUENCE_NUMBER"], rec["_MAX_SEQUENCE_NUMBER"], rec["_SCHEMA_ID"], rec["_LEVEL"],
            tuple(rec.get("_EXTRA_FILES") or ()), _millis(rec.get("_CREATION_TIME")),
            rec.get("_DELETE_ROW_COUNT"), rec.get("_EMBEDDED_FILE_INDEX"), rec.get("_FILE_SOURCE"),
            None if cols is None else tuple(cols), rec.get("_EXTERNAL_PATH"), rec.get("_FIRST_ROW_ID"),
            None if write_cols is None else tuple(write_cols))


@dataclass(frozen=True)
class ManifestEntry:
    kind: int
    partition: bytes          # serialized BinaryRow with arity prefix
    bucket: int
    total_buckets: int
    file: DataFileMeta

    @property
    def identifier(self) -> tuple:
        f = self.file
        return (self.partition, self.bucket, f.level, f.file_name, f.extra_files,
                f.embedded_index, f.external_path)

    def to_avro(self) -> dict:
        return {"_VERSION": MANIFEST_ENTRY_VERSION, "_KIND": self.kind, "_PARTITION": self.partition,
                "_BUCKET": self.bucket, "_TOTAL_BUCKETS": self.total_buckets, "_FILE": self.file.to_avro()}

    @staticmethod
    def from_avro(rec: dict) -> "ManifestEntry":
        return ManifestEntry(rec["_KIND"], rec["_PARTITION"], rec["_BUCKET"], rec["_TOTAL_BUCKETS"],
                             DataFileMeta.from_avro(rec["_FILE"]))


@dataclass(frozen=True)
class ManifestFileMeta:
    file_name: str
    file_size: int
    num_added_files: int
    num_deleted_files: int
    partition_stats: SimpleStats
    schema_id: int
    min_bucket: int | None = None
    max_bucket: int | None = None
    min_level: int | None = None
    max_level: int | None = None
    min_row_id: int | None = None
    max_row_id: int | None = None

    def to_avro(self) -> dict:
        return {"_VERSION": MANIFEST_FILE_META_VERSION, "_FILE_NAME": self.file_name,
                "_FILE_SIZE": self.file_size, "_NUM_ADDED_FILES": self.num_added_files,
                "_NUM_DELETED_FILES": self.num_deleted_files,
                "_PARTITION_STATS": self.partition_stats.to_avro(), "_SCHEMA_ID": self.schema_id,
                "_MIN_BUCKET": self.min_bucket, "_MAX_BUCKET": self.max_bucket,
                "_MIN_LEVEL": self.min_level, "_MAX_LEVEL": self.max_level,
                "_MIN_ROW_ID": self.min_row_id, "_MAX_ROW_ID": self.max_row_id}

    @staticmethod
    def from_avro(rec: dict) -> "ManifestFileMeta":
        return ManifestFileMeta(
            rec["_FILE_NAME"], rec["_FILE_SIZE"], rec["_NUM_ADDED_FILES"], rec["_NUM_DELETED_FILES"],
            SimpleStats.from_avro(rec["_PARTITION_STATS"]), rec["_SCHEMA_ID"],
            rec.get("_MIN_BUCKET"), rec.get("_MAX_BUCKET"), rec.get("_MIN_LEVEL"), rec.get("_MAX_LEVEL"),
            rec.get("_MIN_ROW_ID"), rec.get("_MAX_ROW_ID"))


@dataclass(frozen=True)
class DeletionVectorMeta:
    data_file_name: str
    offset: int
    length: int
    cardinality: int | None

    def to_avro(self) -> dict:
        return {"f0": self.data_file_name, "f1": self.offset, "f2": self.length,
                "_CARDINALITY": self.cardinality}

    @staticmethod
    def from_avro(rec: dict) -> "DeletionVectorMeta":
        return DeletionVectorMeta(rec["f0"], rec["f1"], rec["f2"], rec.get("_CARDINALITY"))


HASH_INDEX, DELETION_VECTORS_INDEX = "HASH", "DELETION_VECTORS"


@dataclass(frozen=True)
class IndexFileMeta:
    index_type: str
    file_name: str
    file_size: int
    row_count: int
    dv_ranges: tuple[DeletionVectorMeta, ...] | None = None
    external_path: str | None = None
    global_index: dict | None = field(default=None, compare=False)


@dataclass(frozen=True)
class IndexManifestEntry:
    kind: int
    partition: bytes
    bucket: int
    index_file: IndexFileMeta

    @property
    def bucket_key(self) -> tuple:
        return (self.partition, self.bucket, self.index_file.index_type)

    def to_avro(self, tagged: bool = True) -> dict:
        """`tagged`: each deletion-vector range names its union branch (fastavro's tuple
        notation); ORC and Parquet rows take the plain record."""
        f = self.index_file
        ranges = None if f.dv_ranges is None else [(DV_RANGE_RECORD, r.to_avro()) if tagged else r.to_avro()
                                                    for r in f.dv_ranges]
        return {"_VERSION": INDEX_ENTRY_VERSION, "_KIND": self.kind, "_PARTITION": self.partition,
                "_BUCKET": self.bucket, "_INDEX_TYPE": f.index_type, "_FILE_NAME": f.file_name,
                "_FILE_SIZE": f.file_size, "_ROW_COUNT": f.row_count,
                "_DELETIONS_VECTORS_RANGES": ranges, "_EXTERNAL_PATH": f.external_path,
                "_GLOBAL_INDEX": f.global_index}

    @staticmethod
    def from_avro(rec: dict) -> "IndexManifestEntry":
        ranges = rec.get("_DELETIONS_VECTORS_RANGES")
        meta = IndexFileMeta(
            rec["_INDEX_TYPE"], rec["_FILE_NAME"], rec["_FILE_SIZE"], rec["_ROW_COUNT"],
            None if ranges is None else tuple(DeletionVectorMeta.from_avro(r) for r in ranges if r),
            rec.get("_EXTERNAL_PATH"), rec.get("_GLOBAL_INDEX"))
        return IndexManifestEntry(rec["_KIND"], rec["_PARTITION"], rec["_BUCKET"], meta)
