"""Distributed write of a Spark DataFrame into a Paimon table: files on executors, commit on the driver.

The driver plans (`WritePlan`: the table's schema, and per bucket the live files that
sequence numbers continue from). Executors assign each row its partition and bucket with
Paimon's hash (a scalar Arrow UDF over the key columns only), Spark shuffles rows by
(partition, bucket), and each task writes the groups it received (`mapInArrow`: Arrow in,
files out). Only the small pickled commit messages return to the driver; no step collects
rows there.
"""
from __future__ import annotations

import pickle
from dataclasses import dataclass, replace
from typing import Iterable, Iterator

import numpy as np
import pyarrow as pa
from pyspark.sql import DataFrame
from pyspark.sql import functions as F
from pyspark.sql.functions import arrow_udf
from pyspark.sql.pandas.types import to_arrow_schema
from pyspark.sql.types import ArrayType, MapType, StructType, VariantType

from paimon_streaming import cross_partition, full_compaction
from paimon_streaming.branches import MAIN, branch_path
from paimon_streaming.commit import CommitMessage
from paimon_streaming.errors import SchemaMismatchError
from paimon_streaming.fileio import FileIO
from paimon_streaming.manifest import IndexManifestEntry, ManifestEntry
from paimon_streaming.scan import TableScan
from paimon_streaming.schema import TableSchema
from paimon_streaming.snapshot import SnapshotManager
from paimon_streaming.table import Table
from paimon_streaming.write import TableWrite, conform


def compact_after_commit(table: Table, commit_user: str, identifier: int, written: list) -> list[int]:
    """Tasks sharing a bucket cannot compact it, so the driver compacts after the commit (same
    commitIdentifier, COMPACT snapshot): deletion-vector tables get the batch's level-0 files
    pushed up, and a batch due for scheduled full compaction (`full-compaction.delta-commits`)
    fully compacts the buckets it wrote and those its user wrote since the previous due batch;
    append tables get the small files of the buckets it wrote merged (unless `write-only`)."""
    table = Table.open(table.path, branch=table.branch)
    if not table.primary_keys:
        if table.options.get("write-only") or not written:
            return []
        sid = table.compact(commit_user=commit_user, commit_identifier=identifier,
                            only={(m.partition, m.bucket) for m in written}, best_effort=True)
        return [sid] if sid is not None else []
    full = set()
    if full_compaction.is_due(table.options, identifier):
        full = {(m.partition, m.bucket) for m in written} | table.scheduled_buckets(commit_user, identifier)
    if not (table.options.lookup_compaction or full):
        return []
    sid = table.compact(commit_user=commit_user, commit_identifier=identifier, full_buckets=full)
    return [sid] if sid is not None else []


def reconcile_schema(table: Table, schema: pa.Schema, row_kind_column: str | None, merge_schema: bool,
                     how_to_merge: str) -> None:
    """Before a batch is written: with `merge_schema`, evolve the table to hold the input's
    columns and wider types (idempotent, so a replayed batch finds nothing to change and stays
    exactly-once); without it, input columns the table lacks are an error naming them and
    `how_to_merge` (never silently dropped)."""
    incoming = pa.schema([f for f in schema if f.name != row_kind_column])
    if merge_schema:
        table.update_schema().union_by_name(incoming).commit()
        return
    known = set(table.schema.field_names)
    new = [n for n in incoming.names if n not in known]
    if new:
        raise SchemaMismatchError(f"the input has column(s) {new} that table {table.name} does not have "
                                  f"(columns: {table.schema.field_names}); {how_to_merge} to add them to the "
                                  "table, or drop them from the input")


KEY_COL = "__paimon_group"    # (serialized partition, bucket): what rows are shuffled by
ORDER_COL = "__paimon_order"  # (Spark partition, row index): keeps input order through the shuffle
MESSAGE_SCHEMA = "message binary, rows long"


@dataclass(frozen=True)
class WritePlan:
    """Everything an executor needs to write files for one batch; pickled into the tasks."""
    location: str
    table_name: str
    schema_json: str
    live: tuple[ManifestEntry, ...] = ()
    index_entries: tuple[IndexManifestEntry, ...] = ()
    row_kind_column: str | None = None
    compact: bool = True            # deletion-vector compaction in the write task
    full_compaction: bool = False   # written buckets compacted fully (a batch due by the table's schedule)
    branch: str = MAIN
    time_zone: str | None = None    # Spark's session time zone: instants <-> wall times (write.conform)
    snapshot_id: int | None = None  # the snapshot planned on (cross-partition tables place rows by it)
    overwrite: bool = False         # the rows replace the partitions they are in (dynamic buckets: placed afresh)

    @staticmethod
    def for_table(table: Table, location: str, row_kind_column: str | None = None,
                  compact: bool = True, full_compaction: bool = False, time_zone: str | None = None) -> "WritePlan":
        latest = table.latest_snapshot()
        if latest is None:
            return WritePlan(location, table.name, table.schema.to_json(), row_kind_column=row_kind_column,
                             compact=compact, full_compaction=full_compaction, branch=table.branch,
                             time_zone=time_zone)
        scan = TableScan(table.file_io, table.path, table.schema)
        return WritePlan(location, table.name, table.schema.to_json(), tuple(scan.live_entries(latest)),
                         tuple(scan.index_manifest.read(latest.index_manifest)), row_kind_column, compact,
                         full_compaction, table.branch, time_zone, latest.id)

    @property
    def cross_partition(self) -> bool:
        return cross_partition.is_cross_partition(TableSchema.from_json(self.schema_json))

    def writer(self) -> TableWrite:
        file_io, path = FileIO.for_path(self.location)
        return TableWrite(file_io, path, TableSchema.from_json(self.schema_json), self.table_name, self.branch)

    def write(self, data: pa.Table, sequence_offset: int = 0, whole_batch: bool = False) -> list[CommitMessage]:
        """Write one group of rows (conformed here, on the executor) into files. `whole_batch`:
        these are all the batch's rows, so a cross-partition table's rows can be placed here
        (cross_partition.py; a shuffled write refuses such tables)."""
        writer = self.writer()
        rows = conform(data, writer.schema, self.table_name, self.row_kind_column, self.time_zone)
        if whole_batch and writer.cross_partition:
            snapshot = None if self.snapshot_id is None else \
                SnapshotManager(writer.file_io, branch_path(writer.table_path, self.branch)).snapshot(self.snapshot_id)
            cross_partition.place(writer, snapshot, list(self.live))
        messages = writer.write(rows, self.live, self.index_entries, sequence_offset=sequence_offset,
                                overwrite=self.overwrite, compact=self.compact, full_compaction=self.full_compaction)
        if whole_batch and writer.cross_partition:
            cross_partition.placed(writer)
        return messages


def session_time_zone(df: DataFrame) -> str:
    """The zone Spark's casts between instants and wall times use (`spark.sql.session.timeZone`)."""
    return df.sparkSession.conf.get("spark.sql.session.timeZone")


def arrow_schema_of(schema) -> pa.Schema:
    """The Arrow schema of a Spark schema; TimestampType (an instant) maps to UTC timestamps,
    i.e. Paimon TIMESTAMP_LTZ, TimestampNTZType to TIMESTAMP."""
    return to_arrow_schema(schema, timezone="UTC")


def collect_arrow(df: DataFrame) -> pa.Table:
    """The DataFrame's rows in the driver as Arrow (`toArrow`). PySpark's `toArrow` fails on a
    null VARIANT (Spark sends its value and metadata as nulls in fields it declares non-null):
    columns holding variants are taken as Spark sends them, and `write.conform` makes the null
    variants' parts empty (`variant.conform`)."""
    raw = [f.name for f in df.schema.fields if _holds_variant(f.dataType)]
    if not raw:
        return df.toArrow()
    schema = arrow_schema_of(df.schema)
    table = pa.Table.from_batches(df._collect_as_arrow(empty_list_if_zero_records=False))
    columns = [table.column(name) if name in raw else table.column(name).cast(schema.field(name).type)
               for name in schema.names]
    return pa.Table.from_arrays(columns, schema=schema)


def _holds_variant(t) -> bool:
    if isinstance(t, VariantType):
        return True
    if isinstance(t, StructType):
        return any(_holds_variant(f.dataType) for f in t.fields)
    if isinstance(t, ArrayType):
        return _holds_variant(t.elementType)
    if isinstance(t, MapType):
        return _holds_variant(t.keyType) or _holds_variant(t.valueType)
    return False


def encode_messages(messages: list[CommitMessage], rows_in: int) -> pa.Table:
    return pa.table({"message": pa.array([pickle.dumps(messages)], pa.binary()),
                     "rows": pa.array([rows_in], pa.int64())})


def decode_messages(blobs: Iterable[bytes]) -> list[CommitMessage]:
    return [m for blob in blobs for m in pickle.loads(blob)]


@dataclass
class WriteResult:
    messages: list[CommitMessage]
    rows_in: int
    compacted: bool = True  # False: tasks shared buckets and left their compaction to the driver

    @staticmethod
    def collect(df: DataFrame) -> "WriteResult":
        rows = df.collect()
        return WriteResult(decode_messages(r["message"] for r in rows), sum(r["rows"] for r in rows))


def write_dataframe(df: DataFrame, plan: WritePlan) -> WriteResult:
    """Write `df` through executors; returns the commit messages (nothing is committed).

    Only the partition and bucket-key columns cross into Python to compute each row's group
    (`group_key_udf`); Spark numbers the rows in input order (`monotonically_increasing_id`:
    the Spark partition in the upper bits, the row's index in it below), shuffles them by group
    and each task writes all the groups it holds in one `plan.write` (buckets side by side on
    threads), after putting its rows back in input order: versions of a key need it."""
    writer = plan.writer()
    schema = writer.schema
    conform(arrow_schema_of(df.schema).empty_table(), schema, plan.table_name, plan.row_kind_column)  # fail fast
    if not schema.primary_keys and writer.options.bucket == -1:
        return _write_unbucketed(df, plan)
    dynamic = writer.options.bucket == -1  # buckets are then assigned per partition in the write step
    key_names = list(schema.partition_keys) + ([] if dynamic else schema.bucket_keys)
    key = group_key_udf(plan, key_names)(F.struct(*[df[n] for n in key_names])) if key_names else F.lit(b"")

    def write(batches: Iterator[pa.RecordBatch]) -> Iterator[pa.RecordBatch]:
        batches = [b for b in batches if b.num_rows]
        if batches:
            rows = pa.Table.from_batches(batches).sort_by(ORDER_COL).drop_columns([KEY_COL, ORDER_COL])
            yield from encode_messages(plan.write(rows), rows.num_rows).to_batches()

    grouped = (df.withColumn(ORDER_COL, F.monotonically_increasing_id()).withColumn(KEY_COL, key)
               .repartition(KEY_COL))
    return WriteResult.collect(grouped.mapInArrow(write, MESSAGE_SCHEMA))


def group_key_udf(plan: WritePlan, key_names: list[str]):
    """Scalar Arrow UDF: (the struct of a row's partition and bucket-key columns) -> its
    serialized partition and fixed bucket (0 in dynamic bucket mode), computed as the core's
    `TableWrite.partition_and_bucket` does once the columns are cast to the table's types."""
    key_schema = replace(plan.writer().schema, options={})  # no rowkind.field: kinds play no part here
    key_schema = replace(key_schema, fields=tuple(key_schema.fields_of(key_names)))

    def group_key(keys: pa.Array) -> pa.Array:  # a StructArray; Spark wants the hint pa.Array
        writer = plan.writer()
        rows = conform(pa.Table.from_struct_array(keys), key_schema, plan.table_name, time_zone=plan.time_zone)
        partitions, buckets = writer.partition_and_bucket(rows)
        if buckets is None:
            buckets = np.zeros(rows.num_rows, np.int32)
        return pa.StructArray.from_arrays([partitions, pa.array(buckets.astype(np.int32))],
                                          names=["partition", "bucket"])

    return arrow_udf(group_key, "partition binary, bucket int")


def _write_unbucketed(df: DataFrame, plan: WritePlan) -> WriteResult:
    """Append tables without buckets need no shuffle: every task writes what it holds. The
    tasks share each partition's bucket, so none merges small files; the caller compacts
    after the commit (`WriteResult.compacted` is False)."""
    plan = replace(plan, compact=False)

    def write_partition(batches: Iterator[pa.RecordBatch]) -> Iterator[pa.RecordBatch]:
        batches = [b for b in batches if b.num_rows]
        if batches:
            yield encode_messages(write_task(plan, batches), sum(b.num_rows for b in batches)).to_batches()[0]

    return replace(WriteResult.collect(df.mapInArrow(write_partition, MESSAGE_SCHEMA)), compacted=False)


def task_index() -> int:
    from pyspark import TaskContext
    ctx = TaskContext.get()
    return ctx.partitionId() if ctx is not None else 0


def write_task(plan: WritePlan, batches: Iterable[pa.RecordBatch], task_index: int = 0,
               whole_batch: bool = False) -> list[CommitMessage]:
    """Write all rows one Spark task holds (used where rows are not shuffled by bucket;
    `whole_batch`: the task holds the batch's every row).

    Several tasks may then write the same bucket, so task i continues sequence numbers from
    the bucket's maximum + i * 2^32: numbers stay unique and one task's rows keep their order.
    """
    batches = [b for b in batches if b.num_rows]
    if not batches:
        return []
    return plan.write(pa.Table.from_batches(batches), task_index << 32, whole_batch)
