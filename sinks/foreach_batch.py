"""`paimon_sink`: the function for `df.writeStream.foreachBatch(...)`.

    from paimon_streaming.sinks import paimon_sink
    (df.writeStream
       .foreachBatch(paimon_sink("/wh/shop.db/orders"))
       .option("checkpointLocation", "/ckpt/orders")
       .start())

Each micro-batch is written by executors (files per partition and bucket) and committed by
the driver as a Paimon snapshot whose commitUser is the streaming query id (stable across
restarts from one checkpoint) and whose commitIdentifier is the batch id. A batch that was
committed before a crash is recognized from the table's snapshots on replay and skipped, so
every input row is applied exactly once.
"""
from __future__ import annotations

import logging
import time
from typing import Any

from pyspark.sql import DataFrame
from pyspark.sql.pandas.types import to_arrow_schema

from paimon_streaming.catalog import Catalog, create_table_at, load_table
from paimon_streaming.errors import PaimonError, TableNotFoundError
from paimon_streaming.table import Table

from .spark_write import WritePlan, write_dataframe

log = logging.getLogger("paimon_streaming.sink")

QUERY_ID_PROPERTY = "sql.streaming.queryId"


def query_commit_user(df: DataFrame) -> str:
    """The streaming query id, which Spark keeps in the checkpoint: the same after restarts."""
    try:
        query_id = df.sparkSession.sparkContext.getLocalProperty(QUERY_ID_PROPERTY)
    except Exception as exc:  # Spark Connect sessions have no SparkContext
        raise PaimonError(
            "cannot read the streaming query id from this session (Spark Connect has no SparkContext); "
            "pass paimon_sink(..., commit_user='<a name unique to this query>') for exactly-once") from exc
    if not query_id:
        raise PaimonError("paimon_sink must run inside writeStream.foreachBatch (no streaming query id "
                          "found); for a one-off write pass commit_user= explicitly")
    return query_id


class PaimonSink:
    """Callable for foreachBatch; see the module docstring."""

    def __init__(self, table: str, warehouse: str | None = None, commit_user: str | None = None,
                 options: dict[str, Any] | None = None):
        self.table_ref = table
        self.warehouse = warehouse
        self.commit_user = commit_user
        self.options = dict(options or {})

    @property
    def location(self) -> str:
        if self.warehouse is None:
            return self.table_ref
        return Catalog(self.warehouse).table_path(self.table_ref)

    def _table(self, df: DataFrame) -> Table:
        try:
            return load_table(self.table_ref, self.warehouse)
        except TableNotFoundError:
            create_table_at(self.location, to_arrow_schema(df.schema), options=self.options)
            log.info("created Paimon table %s from the stream's schema", self.location)
            return load_table(self.table_ref, self.warehouse)

    def __call__(self, df: DataFrame, batch_id: int) -> None:
        start = time.perf_counter()
        commit_user = self.commit_user or query_commit_user(df)
        table = self._table(df)
        if table.committed_identifiers(commit_user, [batch_id]):
            log.info("paimon_sink table=%s batch=%d already committed by %s: skipped",
                     table.name, batch_id, commit_user)
            return
        result = write_dataframe(df, WritePlan.for_table(table, self.location))
        snapshot_ids = table.new_commit().commit(result.messages, commit_user, batch_id)
        files = sum(len(m.data.new_files) + len(m.compact.new_files) for m in result.messages)
        log.info("paimon_sink table=%s batch=%d rows_in=%d files=%d snapshots=%s seconds=%.2f",
                 table.name, batch_id, result.rows_in, files, snapshot_ids or "none",
                 time.perf_counter() - start)


def paimon_sink(table: str, *, warehouse: str | None = None, commit_user: str | None = None,
                options: dict[str, Any] | None = None) -> PaimonSink:
    """The foreachBatch function writing each micro-batch into a Paimon table.

    `table`: a table directory or URI, or "db.table" with `warehouse`. A missing table is
    created from the stream's schema with `options` (Paimon keys, e.g. `primary-key`,
    `partition`, `bucket`). `commit_user` defaults to the streaming query id.
    """
    return PaimonSink(table, warehouse, commit_user, options)
