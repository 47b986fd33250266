"""Distributed write of a Spark DataFrame into a Paimon table: files on executors, commit on the driver.

The driver plans (`WritePlan`: the table's schema, and per bucket the live files that
sequence numbers continue from). Executors assign each row its partition and bucket with
Paimon's hash (vectorized, `mapInArrow`), Spark shuffles rows by (partition, bucket), and
each group is written by one task (`applyInArrow`: Arrow in, files out). Only the small
pickled commit messages return to the driver; no step collects rows there.
"""
from __future__ import annotations

import pickle
from dataclasses import dataclass
from typing import Iterable, Iterator

import numpy as np
import pyarrow as pa
from pyspark.sql import DataFrame
from pyspark.sql.pandas.types import from_arrow_schema, to_arrow_schema

from paimon_streaming.commit import CommitMessage
from paimon_streaming.fileio import FileIO
from paimon_streaming.manifest import IndexManifestEntry, ManifestEntry
from paimon_streaming.scan import TableScan
from paimon_streaming.schema import TableSchema
from paimon_streaming.table import Table
from paimon_streaming.write import TableWrite, conform

PARTITION_COL = "__paimon_partition"
BUCKET_COL = "__paimon_bucket"
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

    @staticmethod
    def for_table(table: Table, location: str, row_kind_column: str | None = None,
                  compact: bool = True) -> "WritePlan":
        latest = table.latest_snapshot()
        if latest is None:
            return WritePlan(location, table.name, table.schema.to_json(), row_kind_column=row_kind_column,
                             compact=compact)
        scan = TableScan(table.file_io, table.path, table.schema)
        return WritePlan(location, table.name, table.schema.to_json(), tuple(scan.live_entries(latest)),
                         tuple(scan.index_manifest.read(latest.index_manifest)), row_kind_column, compact)

    def writer(self) -> TableWrite:
        file_io, path = FileIO.for_path(self.location)
        return TableWrite(file_io, path, TableSchema.from_json(self.schema_json), self.table_name)

    def write(self, data: pa.Table, sequence_offset: int = 0) -> list[CommitMessage]:
        """Write one group of rows (conformed here, on the executor) into files."""
        writer = self.writer()
        rows = conform(data, writer.schema, self.table_name, self.row_kind_column)
        return writer.write(rows, self.live, self.index_entries, sequence_offset=sequence_offset,
                            compact=self.compact)


def arrow_schema_of(schema) -> pa.Schema:
    """The Arrow schema of a Spark schema; TimestampType (an instant) maps to UTC timestamps,
    i.e. Paimon TIMESTAMP_LTZ, TimestampNTZType to TIMESTAMP."""
    return to_arrow_schema(schema, timezone="UTC")


def encode_messages(messages: list[CommitMessage], rows_in: int) -> pa.Table:
    return pa.table({"message": pa.array([pickle.dumps(messages)], pa.binary()),
                     "rows": pa.array([rows_in], pa.int64())})


def decode_messages(blobs: Iterable[bytes]) -> list[CommitMessage]:
    return [m for blob in blobs for m in pickle.loads(blob)]


@dataclass
class WriteResult:
    messages: list[CommitMessage]
    rows_in: int

    @staticmethod
    def collect(df: DataFrame) -> "WriteResult":
        rows = df.collect()
        return WriteResult(decode_messages(r["message"] for r in rows), sum(r["rows"] for r in rows))


def write_dataframe(df: DataFrame, plan: WritePlan) -> WriteResult:
    """Write `df` through executors; returns the commit messages (nothing is committed)."""
    writer = plan.writer()
    schema = writer.schema
    input_schema = arrow_schema_of(df.schema)
    conform(input_schema.empty_table(), schema, plan.table_name, plan.row_kind_column)  # fail fast
    if not schema.primary_keys and writer.options.bucket == -1:
        return _write_unbucketed(df, plan)
    dynamic = writer.options.bucket == -1
    assigned_schema = from_arrow_schema(input_schema.append(pa.field(PARTITION_COL, pa.binary()))
                                        .append(pa.field(BUCKET_COL, pa.int32()))
                                        .append(pa.field(ORDER_COL, pa.int64())))

    def assign(batches: Iterator[pa.RecordBatch]) -> Iterator[pa.RecordBatch]:
        w = plan.writer()
        position = task_index() << 40
        for batch in batches:
            rows = conform(pa.Table.from_batches([batch]), w.schema, plan.table_name, plan.row_kind_column)
            partitions, buckets = w.partition_and_bucket(rows)
            if buckets is None:  # dynamic bucket mode: assigned per partition in the write step
                buckets = np.zeros(rows.num_rows, np.int32)
            order = np.arange(position, position + batch.num_rows, dtype=np.int64)
            position += batch.num_rows
            yield batch.append_column(PARTITION_COL, partitions).append_column(
                BUCKET_COL, pa.array(buckets.astype(np.int32))).append_column(ORDER_COL, pa.array(order))

    def write_group(group: pa.Table) -> pa.Table:
        group = group.sort_by(ORDER_COL)  # the shuffle does not keep input order; versions of a key need it
        data = group.drop_columns([PARTITION_COL, BUCKET_COL, ORDER_COL])
        return encode_messages(plan.write(data), data.num_rows)

    keys = [PARTITION_COL] if dynamic else [PARTITION_COL, BUCKET_COL]
    return WriteResult.collect(df.mapInArrow(assign, assigned_schema)
                                 .groupBy(*keys).applyInArrow(write_group, MESSAGE_SCHEMA))


def _write_unbucketed(df: DataFrame, plan: WritePlan) -> WriteResult:
    """Append tables without buckets need no shuffle: every task writes what it holds."""
    def write_partition(batches: Iterator[pa.RecordBatch]) -> Iterator[pa.RecordBatch]:
        batches = [b for b in batches if b.num_rows]
        if batches:
            yield encode_messages(write_task(plan, batches), sum(b.num_rows for b in batches)).to_batches()[0]

    return WriteResult.collect(df.mapInArrow(write_partition, MESSAGE_SCHEMA))


def task_index() -> int:
    from pyspark import TaskContext
    ctx = TaskContext.get()
    return ctx.partitionId() if ctx is not None else 0


def write_task(plan: WritePlan, batches: Iterable[pa.RecordBatch], task_index: int = 0) -> list[CommitMessage]:
    """Write all rows one Spark task holds (used where rows are not shuffled by bucket).

    Several tasks may then write the same bucket, so task i continues sequence numbers from
    the bucket's maximum + i * 2^32: numbers stay unique and one task's rows keep their order.
    """
    batches = [b for b in batches if b.num_rows]
    if not batches:
        return []
    return plan.write(pa.Table.from_batches(batches), task_index << 32)
