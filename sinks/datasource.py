"""The "paimon" Python Data Source: write side (batch and streaming).

    import paimon_streaming as ps
    ps.register(spark)
    df.write.format("paimon").mode("append").save("/wh/shop.db/orders")
    df.write.format("paimon").option("table", "shop.orders").option("warehouse", "/wh").mode("overwrite").save()
    df.write.format("paimon").mode("overwrite").option("partitionOverwriteMode", "dynamic").save(path)
    (df.writeStream.format("paimon").option("checkpointLocation", ckpt)
       .option("commitUser", "orders-ingest").start("/wh/shop.db/orders"))

Options: `path` (or `load`/`save` argument) or `table` + `warehouse`; `rowKindColumn` (an input
column of +I/-U/+U/-D row kinds, not stored); `commitUser` (streaming:
the stable writer name that makes replayed batches recognizable, required because a Data
Source writer cannot see the query id; batch: optional); `partitionOverwriteMode`
(`static` default: overwrite replaces the table; `dynamic`: only the partitions written);
`mergeSchema` (or Paimon's `write.merge-schema`; `true`: input columns the table lacks, and
wider types, evolve the table first, as Delta's option does; otherwise they are an error naming
them); `timeZone` (Spark's session time zone, `spark.sql.session.timeZone`, which a Data
Source writer is not given: it reads a TimestampNTZ value written into a TIMESTAMP WITH LOCAL
TIME ZONE column in it; without the option the zone Spark labels the input's TimestampType
columns with is that zone, and with no such column the write is refused naming the column);
any other option is a Paimon table option used when the table is created (`primary-key`,
`partition`, `bucket`, ...; into an existing table a value other than the table's is named in a
warning, and a misspelt key refused); an option one typo away from one of those above is
refused, and so are other connectors' write options (Delta's `replaceWhere`, `txnAppId`, ...:
spark_write.FOREIGN_WRITE_OPTIONS). Streams: outputMode("complete") replaces the table with each
micro-batch (Paimon's Java sink does the same); the snapshots of a micro-batch name the query's
checkpoint, so another query under the same `commitUser` is refused rather than skipped, and a
checkpoint with finished batches is refused for a missing table, which it would create and
resume after those batches in (checkpoint_target.py). The
default `partitionOverwriteMode` is the session's `spark.sql.sources.partitionOverwriteMode`
as `paimon_streaming.register(spark)` sees it (a writer is not given the session's settings:
set it before registering, or give the option). Spark lower-cases data source option keys, so options that name
a column (`fields.<col>.…`) need lower-case column names here; create such tables with the
Python API instead.

Unlike foreachBatch(paimon_sink), a Data Source writer cannot shuffle its input: every task
writes the rows it holds, so one bucket may get one level-0 file per task and batch, and on
deletion-vector tables the driver compacts the batch's level-0 files after the commit.
"""
from __future__ import annotations

import logging
import os
import pickle
import uuid
from dataclasses import dataclass, replace
from typing import Iterator

import pyarrow as pa
from pyspark.sql.datasource import (DataSource, DataSourceArrowWriter, DataSourceStreamArrowWriter,
                                    WriterCommitMessage)
from pyspark.sql.types import StructType

from paimon_streaming import cross_partition
from paimon_streaming.branches import resolve_branch
from paimon_streaming.catalog import Catalog, create_table_at, load_table
from paimon_streaming.errors import (DuplicateCommitError, InvalidOptionError, PaimonError, SchemaMismatchError, TableNotFoundError,
                                     UnsupportedOperationError)
from paimon_streaming.options import misspelt_name
from paimon_streaming.snapshot import BATCH_COMMIT_IDENTIFIER
from paimon_streaming.schema import TableSchema
from paimon_streaming.table import Table

from .checkpoint_target import check_checkpoint_target
from .spark_write import (WritePlan, check_existing_table_options, committed_replay, compact_after_commit,
                          publish_schema, query_property, reconcile_schema, refuse_foreign_write_options, schema_race,
                          table_schema_of, task_index, write_task)

log = logging.getLogger("paimon_streaming.sink")
# the options of the writer (all others are table options); Spark hands them over lower-cased
_WRITER_OPTIONS = {k.lower(): k for k in ("path", "table", "warehouse", "branch", "commitUser", "partitionOverwriteMode",
                                          "rowKindColumn", "mergeSchema", "write.merge-schema", "timeZone",
                                          "checkpointLocation")}  # Spark's, of writeStream: not a table option


# the read options that pick a snapshot (sources/options.py): given to a write (an INSERT into a
# time-travel view), they were taken as table options with a warning, and the write went to the
# latest snapshot
_READ_SNAPSHOT_OPTIONS = ("snapshot-id", "scan.snapshot-id", "tag", "scan.tag-name", "timestamp-millis",
                          "scan.timestamp-millis", "scan.timestamp", "scan.version", "incremental-between",
                          "incremental-between-timestamp")


_SCHEMA_RACES = 10  # schema changes by others a stream writer's merge may lose before it gives up


@dataclass
class PaimonCommitMessage(WriterCommitMessage):
    messages: bytes
    rows_in: int


@dataclass(frozen=True)
class TableRef:
    """Where the data source writes: the table (reference, warehouse, location) and branch."""
    ref: str
    warehouse: str | None
    location: str
    branch: str | None

    @staticmethod
    def of(options: dict[str, str]) -> "TableRef":
        warehouse = options.get("warehouse")
        ref = options.get("table") or options.get("path")
        if not ref:
            raise PaimonError("format('paimon') needs a path (load/save argument or option 'path'), "
                              "or option 'table' ('db.table') with option 'warehouse'. Spark passes no path for a "
                              "catalog table (saveAsTable, insertInto, CREATE TABLE ... USING paimon): write through "
                              "save(path) or a temporary view, CREATE TEMPORARY VIEW v USING paimon OPTIONS (path '...')")
        ref, branch = resolve_branch(ref, options.get("branch"))
        location = Catalog(warehouse).table_location(ref) if warehouse else ref
        return TableRef(ref, warehouse, location, branch)

    def open(self) -> Table:
        return Table.open(self.location, branch=self.branch)


def open_or_create(options: dict[str, str], schema: StructType) -> tuple[Table, TableSchema | None]:
    """The table, created from the input's schema when missing; with option `mergeSchema`
    in the schema that holds the input's columns, returned too while uncommitted (see
    `reconcile_schema`). Columns and fields merged in are nullable as a created table's."""
    where = TableRef.of(options)
    as_created = table_schema_of(schema, options.get("rowkindcolumn"))
    try:
        table = load_table(where.ref, where.warehouse, where.branch)
    except TableNotFoundError:
        if where.branch is not None:
            raise  # a missing branch is created with Table.create_branch, not by a write
        create_table_at(where.location, as_created, options=_table_options(options))
        return _one_task_per_partition(load_table(where.ref, where.warehouse)), None
    check_existing_table_options(table, _table_options(options), "this format('paimon') write")
    merge = (options.get("mergeschema") or options.get("write.merge-schema") or "false").strip().lower() == "true"
    pending = reconcile_schema(table, as_created, options.get("rowkindcolumn"), merge,
                               ".option('mergeSchema', 'true')")
    return _one_task_per_partition(table), pending


def _table_options(options: dict[str, str]) -> dict[str, str]:
    """The options of a write that are table options (all but the writer's own)."""
    return {k: v for k, v in options.items() if k.lower() not in _WRITER_OPTIONS}


def _one_task_per_partition(table: Table) -> Table:
    """The data source writes with one task per input partition, each on its own: refuse a
    cross-partition upsert table, whose rows one writer of the whole batch places."""
    if cross_partition.is_cross_partition(table.schema):
        raise UnsupportedOperationError(
            f"{table.name} is a cross-partition upsert table (primary key {list(table.schema.primary_keys)} "
            f"without every partition key, 'bucket' = -1): a key's rows are placed by where it lives, by one "
            "writer of the whole batch, and format('paimon') writes with a task per input partition; write it "
            "with foreachBatch(paimon_sink(...)) or Table.write_arrow")
    return table


def _write(plan: WritePlan, batches: Iterator[pa.RecordBatch], time_zone: str | None) -> PaimonCommitMessage:
    batches = [b for b in batches if b.num_rows]
    if batches:
        plan = replace(plan, time_zone=time_zone or _session_zone(plan, batches[0].schema))
    messages = write_task(plan, batches, task_index())
    return PaimonCommitMessage(pickle.dumps(messages), sum(b.num_rows for b in batches))


def _session_zone(plan: WritePlan, schema: pa.Schema) -> str | None:
    """Spark's session time zone as the input shows it: Spark hands TimestampType values to
    Python labelled with it, nested ones (in a MAP, ARRAY or ROW) too. SchemaMismatchError when
    the input has none and a TimestampNTZ value goes into a TIMESTAMP WITH LOCAL TIME ZONE, at
    the top level or nested: read in a guessed zone, its instants would be silently wrong."""
    zones = {zone for f in schema for zone in _zones_in(f.type)}
    if zones:
        return zones.pop()
    table = plan.writer().schema.arrow_schema()
    ambiguous = [f.name for f in schema if f.name in table.names
                 and _wall_time_into_instant(f.type, table.field(f.name).type)]
    if ambiguous:
        raise SchemaMismatchError(
            f"column {ambiguous[0]} of table {plan.table_name}: a TimestampNTZ value written into a TIMESTAMP WITH LOCAL "
            "TIME ZONE column is read in the session's time zone, which a Data Source writer is not given; pass "
            ".option('timeZone', spark.conf.get('spark.sql.session.timeZone')), or cast the column to TimestampType")
    return None


def _zones_in(t: pa.DataType) -> set[str]:
    """The time zones timestamps anywhere in `t` (in a MAP, ARRAY or ROW too) are labelled with."""
    if pa.types.is_timestamp(t):
        return {t.tz} if t.tz else set()
    if pa.types.is_struct(t):
        return {z for i in range(t.num_fields) for z in _zones_in(t.field(i).type)}
    if pa.types.is_map(t):
        return _zones_in(t.key_type) | _zones_in(t.item_type)
    if pa.types.is_list(t) or pa.types.is_large_list(t):
        return _zones_in(t.value_type)
    return set()


def _wall_time_into_instant(source: pa.DataType, target: pa.DataType) -> bool:
    """Whether a TimestampNTZ of `source` lands in a TIMESTAMP WITH LOCAL TIME ZONE of `target`,
    at the top level or nested (struct fields by name, as the write casts them)."""
    if pa.types.is_timestamp(source) and pa.types.is_timestamp(target):
        return source.tz is None and target.tz is not None
    if pa.types.is_struct(source) and pa.types.is_struct(target):
        return any(_wall_time_into_instant(source.field(i).type, target.field(j).type)
                   for i in range(source.num_fields) if (j := target.get_field_index(source.field(i).name)) >= 0)
    if pa.types.is_map(source) and pa.types.is_map(target):
        return _wall_time_into_instant(source.key_type, target.key_type) or \
            _wall_time_into_instant(source.item_type, target.item_type)
    if pa.types.is_list(source) and pa.types.is_list(target):
        return _wall_time_into_instant(source.value_type, target.value_type)
    return False


def _messages(commit_messages, table: Table) -> list:
    """The tasks' commit messages. UnsupportedOperationError (nothing is committed) when the
    table places keys in dynamic buckets (`bucket` = -1) and two tasks wrote one partition:
    each placed its new keys on its own, so a key could land in two buckets (duplicate rows)."""
    per_task = [pickle.loads(cm.messages) for cm in commit_messages if cm is not None]
    if table.schema.primary_keys and table.options.bucket == -1:
        seen: set[bytes] = set()
        for messages in per_task:
            partitions = {m.partition for m in messages}
            if partitions & seen:
                raise UnsupportedOperationError(
                    f"{table.name} assigns buckets dynamically ('bucket' = -1) and several Spark tasks wrote rows of "
                    "one partition: each would place new keys on its own, so a key could be stored twice; nothing "
                    "was committed. Write one task per partition (df.repartition(<partition columns>) or "
                    "df.coalesce(1)), or use foreachBatch(paimon_sink(...)) / Table.write_arrow, which place a "
                    "batch's keys together")
            seen |= partitions
    return [m for messages in per_task for m in messages]


def refuse_misspelt(options: dict[str, str]) -> None:
    """An option one typo away from a writer option (`partitionOverwriteMod`) would be taken as
    a table option and ignored; for `partitionOverwriteMode` that turns a dynamic overwrite into
    a replacement of the whole table. Refused, naming the option meant; so are other
    connectors' write options (`replaceWhere`: spark_write.FOREIGN_WRITE_OPTIONS) and the read
    options that pick a snapshot (_READ_SNAPSHOT_OPTIONS)."""
    refuse_foreign_write_options(options)
    for key in options:
        if key.lower() in _READ_SNAPSHOT_OPTIONS:
            raise InvalidOptionError(
                f"write option {key!r} picks a snapshot to read (a time-travel view's option?): a write goes on top "
                "of the latest snapshot, so writing through it would change the current table, not the snapshot "
                "it shows; write through a view or path without it")
        meant = misspelt_name(key, _WRITER_OPTIONS.values())
        if meant is not None:
            raise InvalidOptionError(f"unknown write option {key!r}: did you mean {meant!r}?")


def _overwrite_mode(options: dict[str, str], default: str) -> str:
    mode = options.get("partitionoverwritemode", default).strip().lower()
    if mode not in ("static", "dynamic"):
        raise InvalidOptionError(f"partitionOverwriteMode must be 'static' (replace the table) or 'dynamic' (replace "
                                 f"the partitions written), got {options['partitionoverwritemode']!r}")
    return mode


class PaimonBatchWriter(DataSourceArrowWriter):
    def __init__(self, options: dict[str, str], schema: StructType, overwrite: bool, overwrite_mode: str = "static"):
        refuse_misspelt(options)
        self.dynamic_overwrite = _overwrite_mode(options, overwrite_mode) == "dynamic"
        table, self.pending_schema = open_or_create(options, schema)  # committed with the data
        self.where = TableRef.of(options)
        self.plan = replace(WritePlan.for_table(table, self.where.location, options.get("rowkindcolumn"), compact=False),
                            overwrite=overwrite)
        self.overwrite = overwrite
        self.commit_user = options.get("commituser") or str(uuid.uuid4())
        self.time_zone = options.get("timezone")

    def write(self, iterator: Iterator[pa.RecordBatch]) -> PaimonCommitMessage:
        return _write(self.plan, iterator, self.time_zone)

    def commit(self, messages: list[PaimonCommitMessage]) -> None:
        table = self.where.open()
        msgs = _messages(messages, table)
        try:
            if not publish_schema(table, self.pending_schema):  # the tasks' files are in its field ids
                raise schema_race(table, self.pending_schema)
        except BaseException:
            table.new_commit().discard(msgs)
            raise
        partitions = sorted({m.partition for m in msgs}) if self.dynamic_overwrite else None
        if self.overwrite and self.dynamic_overwrite and not msgs:
            return  # dynamic overwrite of nothing changes nothing
        ids = table.new_commit().commit(msgs, self.commit_user, BATCH_COMMIT_IDENTIFIER,
                                        overwrite=self.overwrite, overwrite_partitions=partitions)
        ids += compact_after_commit(table, self.commit_user, BATCH_COMMIT_IDENTIFIER, msgs)
        log.info("paimon write table=%s rows_in=%d files=%d snapshots=%s", table.name,
                 sum(m.rows_in for m in messages if m is not None),
                 sum(len(m.data.new_files) for m in msgs), ids or "none")


class PaimonStreamWriter(DataSourceStreamArrowWriter):
    """Streaming writes: tasks plan against the table's latest snapshot (the writer object
    lives across micro-batches); the driver commits with commitIdentifier = batch id.
    `overwrite` (Spark's outputMode("complete"): every micro-batch is the query's whole result):
    each batch replaces the table, as Paimon's Java sink does."""

    def __init__(self, options: dict[str, str], schema: StructType, overwrite: bool = False):
        refuse_misspelt(options)
        self.overwrite = overwrite
        self.commit_user = options.get("commituser")
        if not self.commit_user:
            raise PaimonError(
                "writeStream.format('paimon') needs .option('commitUser', '<stable name of this query>') so "
                "replayed micro-batches are recognized (exactly-once); or use foreachBatch(paimon_sink(...)), "
                "which takes the streaming query id on classic Spark")
        self.where = TableRef.of(options)
        checkpoint = (options.get("checkpointlocation") or "").strip().rstrip("/")
        checkpoint = checkpoint if not checkpoint or "://" in checkpoint else os.path.abspath(checkpoint)
        if checkpoint:  # before the table is created: a dropped one would resume after the batches it held
            check_checkpoint_target(checkpoint, self._existing(), self.where.ref,
                                    "Give this query a new checkpointLocation (and commitUser), or write the "
                                    "table it wrote")
        for _ in range(_SCHEMA_RACES):  # the tasks of each micro-batch open the table: its schema, committed now
            table, pending = open_or_create(options, schema)
            if publish_schema(table, pending):
                break
        else:
            raise schema_race(table, pending)
        self.row_kind_column = options.get("rowkindcolumn")
        self.time_zone = options.get("timezone")
        # the query, as far as a Data Source writer can tell it: its checkpoint (committed_replay)
        self.query = f"checkpoint:{checkpoint}" if checkpoint else None

    def _existing(self) -> Table | None:
        try:
            return self.where.open()
        except TableNotFoundError:
            return None

    def write(self, iterator: Iterator[pa.RecordBatch]) -> PaimonCommitMessage:
        plan = WritePlan.for_table(self.where.open(), self.where.location, self.row_kind_column, compact=False)
        return _write(replace(plan, overwrite=self.overwrite), iterator, self.time_zone)

    def commit(self, messages: list[PaimonCommitMessage], batchId: int) -> None:
        table = self.where.open()
        replay, unique_since = committed_replay(
            table, self.commit_user, batchId, self.query,
            ".option('commitUser', ...) (and keep it for every restart from this query's checkpoint)")
        if replay:
            log.info("paimon stream write table=%s batch=%d already committed: skipped", table.name, batchId)
            # the replay's tasks wrote files anew (new names): delete them, or they stay as orphans
            table.new_commit().discard([m for cm in messages if cm is not None for m in pickle.loads(cm.messages)])
            return
        msgs = _messages(messages, table)
        try:
            ids = table.new_commit().commit(msgs, self.commit_user, batchId, overwrite=self.overwrite,
                                            properties=query_property(self.query), unique_since=unique_since)
        except DuplicateCommitError as exc:
            table.new_commit().discard(msgs)
            if not exc.replay:
                raise
            log.info("paimon stream write table=%s batch=%d committed by another attempt: skipped", table.name, batchId)
            return
        ids += compact_after_commit(table, self.commit_user, batchId, msgs)
        log.info("paimon stream write table=%s batch=%d rows_in=%d files=%d snapshots=%s", table.name, batchId,
                 sum(m.rows_in for m in messages if m is not None),
                 sum(len(m.data.new_files) for m in msgs), ids or "none")

    def abort(self, messages: list[PaimonCommitMessage], batchId: int) -> None:
        log.warning("paimon stream write batch %d aborted; its files stay unreferenced (orphans)", batchId)


class PaimonDataSource(DataSource):
    """format("paimon"): Apache Paimon tables. Writes: see the module docstring; reads:
    `paimon_streaming.sources` (reader.py: batch, time travel, system tables;
    stream_reader.py: streaming)."""

    overwrite_mode = "static"  # partitionOverwriteMode when the write does not give it

    @classmethod
    def name(cls) -> str:
        return "paimon"

    def schema(self) -> StructType:
        from paimon_streaming.sources.datasource import source_schema
        return source_schema(self.options)

    def reader(self, schema: StructType):
        """Batch reads (paimon_streaming.sources.reader)."""
        from paimon_streaming.sources.datasource import reader
        return reader(self.options, schema)

    def streamReader(self, schema: StructType):
        """Streaming reads (paimon_streaming.sources.stream_reader)."""
        from paimon_streaming.sources.datasource import stream_reader
        return stream_reader(self.options, schema)

    def writer(self, schema: StructType, overwrite: bool) -> PaimonBatchWriter:
        return PaimonBatchWriter(dict(self.options), schema, overwrite, self.overwrite_mode)

    def streamWriter(self, schema: StructType, overwrite: bool) -> PaimonStreamWriter:
        return PaimonStreamWriter(dict(self.options), schema, overwrite)


class PaimonDataSourceDynamicOverwrite(PaimonDataSource):
    """format("paimon") registered for a session whose `spark.sql.sources.partitionOverwriteMode`
    is `dynamic` (a Python data source writer is not given the session's settings, so
    `register` picks this class by the setting it sees)."""

    overwrite_mode = "dynamic"
