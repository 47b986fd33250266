"""`paimon-streaming ingest --database DB`: each source table of a change-event topic into a
table of its own, in one job (Paimon's `kafka_sync_database`).

Each micro-batch's records are named by their source table once: in the driver, where local
mode writes (`RecordsInDriver`: one trip from the JVM, as a one-table job's), or on the
executors, kept by Spark for the batch (`RecordsInSpark`). Then, table by table, the records
of each target (`DatabaseRouting`: the source table's name with a prefix and suffix; shards of
one name merge) are decoded and written as a one-table job does (`ingest.prepare_table_batch`); only
when every table's files are written are they committed, table by table, so a record that
fails its table's decoding leaves every table of the batch uncommitted. A table is created
when its first rows arrive, from those records (its key and columns as `ingest.ensure_table`
takes them from a topic's first records); records of a new table that carry no row yet (DDL,
markers) wait, as there is nothing to write.

Every table commits each batch under the query's id and the batch id: after a crash between
two tables' commits, the replay skips the tables that committed and writes the others, so each
record lands exactly once. Records that name no table (they do not parse) fail the batch before
any commit, or are skipped or dead-lettered with `--on-error`; tombstones carry nothing here
(Debezium's delete event before them already deleted the row).
"""
from __future__ import annotations

import functools
import json
from dataclasses import replace
from typing import Callable

import pyarrow as pa
import pyarrow.compute as pc
from pyspark import StorageLevel
from pyspark.sql import DataFrame, SparkSession
from pyspark.sql import functions as F
from pyspark.sql.types import StringType, StructField, StructType

from paimon_streaming.catalog import Catalog
from paimon_streaming.errors import InvalidOptionError
from paimon_streaming.table import Table

from . import aws_dms, canal, change_events, debezium, debezium_bson, maxwell, ogg, source_tables
from .decoders import REJECTED_SCHEMA, DecodeError
from .foreach_batch import MAX_RESULT_SIZE, PreparedBatch, query_commit_user, write_site
from .ingest import (RECORD_COLUMNS, REJECTED_PER_BATCH, IngestConfig, NoRowsYet, Sample, ensure_table, prepare_table_batch,
                     set_aside)

SOURCE = source_tables.SOURCE_FIELD.name
_SAMPLE_RECORDS = 1000
TABLES_PER_BATCH: dict[int, int] = {}  # tables written per micro-batch, for the progress line


def _canal_row(value: bytes | None) -> bool:
    try:
        message = json.loads(value)
        return isinstance(message, dict) and not message.get("isDdl") and bool(message.get("data"))
    except (TypeError, ValueError):
        return False


# whether a record carries a row (a new table is created from such records only)
_CARRIES_ROW: dict[str, Callable[[bytes | None], bool]] = {
    debezium.FORMAT: lambda v: any(change_events.row_object(v, *path) for path in
                                   (("payload", "after"), ("payload", "before"), ("after",), ("before",))),
    debezium.AVRO_FORMAT: lambda v: True,  # every Debezium event has a before or after image
    debezium_bson.FORMAT: lambda v: debezium_bson.table_schema_of(v) is not None,
    canal.FORMAT: _canal_row,
    maxwell.FORMAT: lambda v: maxwell.row_image(v) is not None,
    ogg.FORMAT: lambda v: ogg.row_image(v) is not None,
    aws_dms.FORMAT: lambda v: aws_dms.row_image(v) is not None,
}


def database_writer(spark: SparkSession, cfg: IngestConfig,
                    log: Callable[[str], None]) -> Callable[[DataFrame, int], None]:
    """The foreachBatch function of a job syncing a database (see the module docstring)."""
    def write(df: DataFrame, batch_id: int) -> None:
        REJECTED_PER_BATCH[batch_id] = 0
        records = df.select(*RECORD_COLUMNS)
        named = _named_records(records, cfg, log)
        try:
            _set_aside_unnamed(cfg, named.unnamed(), query_commit_user(df), batch_id)
            targets = cfg.database.targets(named.sources())
            if cfg.dead_letter_name in targets:
                raise InvalidOptionError(f"source table(s) {list(targets[cfg.dead_letter_name])} would be written into "
                                         f"the dead-letter table {cfg.dead_letter_name}: give --dead-letter-table "
                                         "another name, or exclude them")
            prepared: list[PreparedBatch] = []
            try:  # every table's files first: a table whose records fail leaves the others uncommitted
                for target, sources in targets.items():
                    # only DMS's records name no key: there --primary-key is every new table's
                    tcfg = replace(cfg, table=target, database=None, dead_letter_table=cfg.dead_letter_name,
                                   primary_keys=cfg.primary_keys if cfg.format == aws_dms.FORMAT else (),
                                   partition_keys_if_present=True)
                    table = _table_for(spark, tcfg, named, sources, log)
                    if table is None:
                        continue
                    of_target, collected = named.of(sources)
                    batch = prepare_table_batch(spark, tcfg, table, of_target, batch_id, log, prefiltered=True,
                                                collected=collected)
                    if batch is not None:
                        prepared.append(batch)
            except BaseException:
                for batch in prepared:
                    batch.discard()
                raise
            for batch in prepared:
                batch.commit()
            TABLES_PER_BATCH[batch_id] = len(prepared)
        finally:
            named.release()
    return write


def _named_records(records: DataFrame, cfg: IngestConfig,
                   log: Callable[[str], None]) -> "RecordsInDriver | RecordsInSpark":
    """Where the batch's records are named and split: in the driver where the sink writes there
    (local mode) and the batch fits spark.driver.maxResultSize, else on the executors."""
    if write_site(records, None) == "driver":
        try:
            return RecordsInDriver(records, cfg.format, cfg.schema_registry)
        except Exception as exc:
            if MAX_RESULT_SIZE not in str(exc):
                raise
            log(f"the micro-batch is larger than {MAX_RESULT_SIZE}: its records are split on the executors")
    return RecordsInSpark(records, cfg.format, cfg.schema_registry)


class RecordsInDriver:
    """A micro-batch's Kafka records collected in the driver (local mode, where the sink writes
    there too): one trip from the JVM, split by source table with Arrow."""

    def __init__(self, records: DataFrame, format: str, registry: str | None):
        self.records = records
        self.table = records.toArrow()
        self.names = source_tables.names(format, self.table.column("value").combine_chunks(), registry)

    def sources(self) -> list[str]:
        return pc.unique(self.names).drop_null().to_pylist()

    def unnamed(self) -> pa.Table:
        return self.table.filter(pc.and_(pc.is_null(self.names), pc.is_valid(self.table.column("value"))))

    def of(self, sources: tuple[str, ...]) -> tuple[DataFrame, pa.Table]:
        """The batch's DataFrame (for its query and session) and the records of these sources."""
        return self.records, self.table.filter(pc.is_in(self.names, pa.array(sources, pa.string())))

    def samples(self, sources: tuple[str, ...]) -> list[tuple[bytes | None, bytes]]:
        rows = self.of(sources)[1]
        rows = rows.filter(pc.is_valid(rows.column("value"))).slice(0, _SAMPLE_RECORDS)
        return [Sample(*r) for r in zip(*(rows.column(c).to_pylist() for c in RECORD_COLUMNS))]

    def release(self) -> None:
        pass


class RecordsInSpark:
    """A micro-batch's Kafka records named by their source table on the executors and kept by
    Spark for the batch (a cluster, where the sink writes in tasks)."""

    def __init__(self, records: DataFrame, format: str, registry: str | None):
        named_schema = StructType(records.schema.fields + [StructField(SOURCE, StringType())])
        self.named = records.mapInArrow(functools.partial(source_tables.with_names, format, registry), named_schema) \
            .persist(StorageLevel.MEMORY_AND_DISK)

    def sources(self) -> list[str]:
        return [row[0] for row in self.named.select(SOURCE).distinct().collect() if row[0] is not None]

    def unnamed(self) -> pa.Table:
        return self.named.where(F.col(SOURCE).isNull() & F.col("value").isNotNull()).drop(SOURCE).toArrow()

    def of(self, sources: tuple[str, ...]) -> tuple[DataFrame, None]:
        return self.named.where(F.col(SOURCE).isin(list(sources))).drop(SOURCE), None

    def samples(self, sources: tuple[str, ...]) -> list[tuple[bytes | None, bytes]]:
        rows = self.of(sources)[0].where(F.col("value").isNotNull()).select(*RECORD_COLUMNS).limit(_SAMPLE_RECORDS)
        return [Sample(None if k is None else bytes(k), bytes(v), *rest) for k, v, *rest in rows.collect()]

    def release(self) -> None:
        self.named.unpersist()


def _table_for(spark: SparkSession, cfg: IngestConfig, named: RecordsInDriver | RecordsInSpark,
               sources: tuple[str, ...], log: Callable[[str], None]) -> Table | None:
    """The target table, created from its records when missing; None while a new table's
    records carry no row (nothing of them is lost: DDL and markers write nothing)."""
    if Catalog(cfg.warehouse).table_exists(cfg.table):
        return ensure_table(spark, cfg, log)
    samples = named.samples(sources)
    if not any(_CARRIES_ROW[cfg.format](v) for _, v in samples):
        log(f"{cfg.table}: the records of {', '.join(sources)} carry no row yet; the table is created with the "
            "first record that does")
        return None
    try:
        return ensure_table(spark, cfg, log, lambda: samples)
    except NoRowsYet:
        return None


def _set_aside_unnamed(cfg: IngestConfig, unnamed: pa.Table, commit_user: str, batch_id: int) -> None:
    """Records that name no source table (they do not parse): DecodeError before any commit, or
    counted (skip) and kept in the dead-letter table (dead-letter)."""
    if not unnamed.num_rows:
        return
    if cfg.on_error == "fail":
        r = unnamed.slice(0, 1).to_pylist()[0]
        raise DecodeError(f"record topic={r['topic']} partition={r['partition']} offset={r['offset']} names no "
                          f"source table (is it a {cfg.format} change event?); nothing of this batch was written")
    error = pa.array([f"names no source table (not a {cfg.format} change event)"] * unnamed.num_rows, pa.string())
    rejected = unnamed.append_column("error", error).select(REJECTED_SCHEMA.names).cast(REJECTED_SCHEMA)
    set_aside(cfg, rejected, f"{commit_user}:dead-letter", batch_id)
    REJECTED_PER_BATCH[batch_id] += unnamed.num_rows
