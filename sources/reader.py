"""Batch reads: `spark.read.format("paimon")`.

    import paimon_streaming as ps
    ps.register(spark)
    spark.read.format("paimon").load("/wh/shop.db/orders")
    spark.read.format("paimon").option("table", "shop.orders").option("warehouse", "/wh").load()
    spark.read.format("paimon").option("snapshot-id", 3).load(path)           # time travel
    spark.read.format("paimon").option("tag", "daily-2024-01-01").load(path)
    spark.read.format("paimon").option("timestamp-millis", 1717000000000).load(path)
    spark.read.format("paimon").schema("id long, amount decimal(12,2)").load(path)   # projection
    spark.read.format("paimon").load(path + "$snapshots")                     # system tables
    spark.read.format("paimon").load(path + "$row_tracking")   # rows with _ROW_ID, _SEQUENCE_NUMBER (also streams)

The driver plans the read at the chosen snapshot (latest by default): live files per
partition and bucket, their deletion vectors; executors read them (merge-on-read on
primary-key tables without deletion vectors) and return Arrow record batches.

Time travel (one of): `snapshot-id` (alias `scan.snapshot-id`), `tag` (`scan.tag-name`),
`timestamp-millis` (`scan.timestamp-millis`: the newest snapshot committed at or before that
instant). The result has the schema of that snapshot. `scan.mode` = `compacted-full` reads
the newest full compaction instead (see paimon_streaming/full_compaction.py), as Paimon does.

Projection: PySpark's Python Data Source API gives sources no column pruning; give the
columns to read as the read schema (`.schema("id long, v string")`, names matched to table
columns case-insensitively, types cast as Spark's CAST casts them in the session's time zone:
spark_casts.py), and only those columns are read from the files.

Filter pushdown: with `spark.sql.python.filterPushdown.enabled=true` (Spark's default is
false; `paimon_streaming.register` sets it) Spark hands the query's filters to the reader. Comparisons (=, <>, <, <=, >, >=),
IN, IS NULL and IS NOT NULL on integer, string, boolean, date and decimal columns prune
partitions and files (min/max statistics; on primary-key tables without deletion vectors
only key columns prune files) and filter rows exactly, so Spark does not re-check them.
Other filters are left to Spark. Without the setting every filter is evaluated by Spark
after a full scan.

Split packing: a bucket is read file by file, in parallel, unless it must be merged by key
(deletion-vector tables, append tables, and buckets whose files hold each key once never
are). `source.split.target-size` (default 128 mb) and `source.split.open-file-cost` (4 mb)
group consecutive files into one Spark task, as Paimon does; for small reads the target
shrinks so the read still spreads over `source.split.min-partitions` tasks (default: the
driver's CPU count), as Spark's file sources do with the default parallelism.

Incremental queries (Java's options, see paimon_streaming/incremental.py): `incremental-between`
= 'start,end' (snapshot ids, or two tags: a diff of their states), `incremental-between-timestamp`
= 'start,end' (epoch millis or local 'yyyy-MM-dd HH:mm:ss'), `incremental-to-auto-tag` = an
automatic tag (the diff from the automatic tag before it); `incremental-between-scan-mode` auto,
delta, changelog or diff; `incremental-between-tag-to-snapshot`. The rows as they are after the
changes, in the table's latest schema; with `rowKindColumn`, every change with its kind.

`rowKindColumn`: adds a string column of that name holding each row's kind: '+I' for every
row of a plain read, so batch and streaming reads of a table can share one schema; '+I', '-U',
'+U', '-D' for an incremental query.
"""
from __future__ import annotations

import inspect
from typing import Iterable, Iterator

import pyarrow as pa
from pyspark.sql.datasource import DataSourceReader, InputPartition
from pyspark.sql.pandas.types import to_arrow_schema
from pyspark.sql.types import StructType

from paimon_streaming import full_compaction, row_tracking
from paimon_streaming.evolution import with_current_options
from paimon_streaming.fallback_read import FallbackBranch
from paimon_streaming.incremental import IncrementalScan
from paimon_streaming.options import refuse_other_branch_reads
from paimon_streaming.predicate import parse_filter
from paimon_streaming.scan import TableScan
from paimon_streaming.schema import TableSchema
from paimon_streaming.snapshot import Snapshot
from paimon_streaming.streaming_scan import units_of_splits
from paimon_streaming.system_tables import system_table
from paimon_streaming.table import Table
from paimon_streaming.time_travel import snapshot_at

from .filters import split_filters
from .options import ReadSpec
from .partitions import PaimonInputPartition, ReadContext, pack, read_min_partitions, read_partition, spark_schema

_PUSHDOWN_WORKER = "data_source_pushdown_filters"


def read_schema(table: Table, spec: ReadSpec) -> tuple[Snapshot | None, TableSchema]:
    """The snapshot a batch read sees and the schema to read it with (the snapshot's own
    schema for time travel, the latest schema otherwise)."""
    snapshot = snapshot_at(table.snapshot_manager, table.tag_manager, spec.snapshot_id, spec.tag,
                           spec.timestamp_millis)
    if spec.scan_mode == "compacted-full" and not spec.time_travel:  # the newest full compaction
        compacted = full_compaction.latest_full_compaction(
            table.snapshot_manager, table.options.get(full_compaction.DELTA_COMMITS),
            table.options.get("changelog-producer"))
        snapshot = snapshot if compacted is None else table.snapshot(compacted)
    if spec.reads_old_schema and snapshot is not None and snapshot.schema_id != table.schema.id:
        return snapshot, table.schema_manager.schema(snapshot.schema_id)
    return snapshot, table.schema


class PaimonBatchReader(DataSourceReader):
    """Plans splits on the driver, reads them on executors (see the module docstring)."""

    def __init__(self, spec: ReadSpec, schema: StructType):
        table = spec.table()
        refuse_other_branch_reads(table.schema.options, table.name, fallback_ok=spec.incremental is None)
        snapshot, table_schema = read_schema(table, spec)
        self.spec = spec
        self.snapshot_id = None if snapshot is None else snapshot.id
        self._snapshot = snapshot  # resolved once: every later step reads the same snapshot
        self.table_schema_json = table_schema.to_json()
        self.terms: list[tuple] = []
        self.ctx = ReadContext.create(spec.location, table_schema, schema, spec.row_kind_column, table.name,
                                      table.branch)
        # a column a read schema (`.schema(...)`) gives another type is filtered by Spark on the
        # values as cast, whose failure is an error naming it; pushed, the stored values would be
        own = spark_schema(table_schema.arrow_schema())
        self.retyped = sorted(name for name, column in self.ctx.columns
                              if column in own.names and own[column].dataType != schema[name].dataType)
        if table_schema.id != table.schema.id:  # time travel merges under today's options, as Java
            self.ctx = self.ctx.merging_under(with_current_options(table_schema, table.schema))
        self._fallback = None if spec.incremental is not None else \
            FallbackBranch.of(table.file_io, table.path, table.schema.options, table_schema, table.name, snapshot,
                              spec.snapshot_id, spec.tag, spec.timestamp_millis,
                              travelled=spec.reads_old_schema)  # today's options, as Java
        self.fallback_ctx = None
        if self._fallback is not None:
            self.fallback_ctx = ReadContext.create(spec.location, self._fallback.schema, schema,
                                                   spec.row_kind_column, table.name, self._fallback.name,
                                                   ids_of=table_schema).merging_under(self._fallback.merging)

    def __getstate__(self):
        state = dict(self.__dict__)
        state["_snapshot"] = state["_fallback"] = None  # executors get units
        return state

    def partitions(self) -> list[InputPartition]:
        table = self.spec.table()
        schema = TableSchema.from_json(self.table_schema_json)
        if self.spec.incremental is not None:  # filters apply to rows as read (a diff first compares whole rows)
            units = IncrementalScan(table.file_io, table.path, schema, table.branch).plan(self.spec.incremental)
            return pack(units, self.spec.split_target_size, self.spec.split_open_file_cost,
                        read_min_partitions(self.spec.options))
        flt = parse_filter(self.terms, row_tracking.filterable(schema)) if self.terms else None
        scan = TableScan(table.file_io, table.path, schema, table.branch)
        units = [] if self._snapshot is None else units_of_splits(self._snapshot.id, scan.plan(self._snapshot, flt))
        parts = pack(units, self.spec.split_target_size, self.spec.split_open_file_cost,
                     read_min_partitions(self.spec.options))
        if self._fallback is not None and self._fallback.snapshot is not None:
            splits = self._fallback.plan(table.file_io, table.path, scan, self._snapshot, flt)
            more = pack(units_of_splits(self._fallback.snapshot.id, splits), self.spec.split_target_size,
                        self.spec.split_open_file_cost, read_min_partitions(self.spec.options))
            parts += [PaimonInputPartition(len(parts) + i, p.units, fallback=True) for i, p in enumerate(more)]
        return parts

    def read(self, partition: InputPartition) -> Iterator[pa.RecordBatch]:
        ctx = self.fallback_ctx if getattr(partition, "fallback", False) else self.ctx
        yield from read_partition(ctx.with_filter(self.terms), partition)


class PaimonPushdownReader(PaimonBatchReader):
    """The batch reader with `pushFilters`, used when Spark runs filter pushdown (Spark refuses
    a reader that implements pushFilters while `spark.sql.python.filterPushdown.enabled` is
    false, so the plain reader is used then)."""

    def pushFilters(self, filters: list) -> Iterable:
        schema = TableSchema.from_json(self.table_schema_json)
        terms, rest = split_filters(filters, schema, dict(self.ctx.columns), set(self.retyped))
        self.terms.extend(terms)
        return rest


def called_for_pushdown() -> bool:
    """Whether Spark's filter-pushdown planner (only run when pushdown is enabled) asks."""
    frame = inspect.currentframe()
    try:
        while frame is not None:
            if _PUSHDOWN_WORKER in (frame.f_code.co_filename or ""):
                return True
            frame = frame.f_back
        return False
    finally:
        del frame


def batch_reader(spec: ReadSpec, schema: StructType) -> DataSourceReader:
    if spec.system_table is not None:
        return PaimonSystemTableReader(spec, schema)
    return (PaimonPushdownReader if called_for_pushdown() else PaimonBatchReader)(spec.with_table_scan_options(),
                                                                                  schema)


class PaimonSystemTableReader(DataSourceReader):
    """`load("<table>$snapshots")` and the other system tables (one partition; the metadata is
    read on the executor). `$files` and `$manifests` honour the time-travel options."""

    def __init__(self, spec: ReadSpec, schema: StructType):
        self.spec = spec
        self.output_json = schema.json()

    def partitions(self) -> list[InputPartition]:
        return [InputPartition(self.spec.system_table)]

    def read(self, partition: InputPartition) -> Iterator[pa.RecordBatch]:
        import json
        table = self.spec.table()
        snapshot = None
        if self.spec.time_travel:
            snapshot = snapshot_at(table.snapshot_manager, table.tag_manager, self.spec.snapshot_id,
                                   self.spec.tag, self.spec.timestamp_millis)
        data = system_table(table, self.spec.system_table, snapshot)
        target = to_arrow_schema(StructType.fromJson(json.loads(self.output_json)), timezone="UTC")
        data = data.select([f.name for f in target])
        arrays = [c if c.type.equals(f.type) else c.cast(f.type) for c, f in zip(data.columns, target)]
        yield from pa.Table.from_arrays(arrays, schema=target).to_batches()
