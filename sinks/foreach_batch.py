"""`paimon_sink`: the function for `df.writeStream.foreachBatch(...)`.

    from paimon_streaming.sinks import paimon_sink
    (df.writeStream
       .foreachBatch(paimon_sink("/wh/shop.db/orders"))
       .option("checkpointLocation", "/ckpt/orders")
       .start())

Each micro-batch is written by executors (files per partition and bucket) and committed by
the driver as a Paimon snapshot whose commitUser is the streaming query id (stable across
restarts from one checkpoint) and whose commitIdentifier is the batch id. A batch that was
committed before a crash is recognized on replay and skipped, so every input row is applied
exactly once; also after snapshot expiration removed the query's snapshots (expiration
records their identifiers, `paimon_streaming/commit_users.py`). A function that writes one
table several times in a micro-batch commits the k-th write as `<commit user>#k` (SinkCall).

Under Spark Connect pass `commit_user` explicitly: the foreachBatch function then runs in a
Python worker of the Connect server, on a session cloned for the query, and Spark gives it no
way to read the query id (see `query_commit_user`). The name must be unique to the query and
table, the same on every restart from the query's checkpoint, and new for a new checkpoint
(batch ids restart at 0 there, below the last one committed under the old name, which the
commit refuses with `CommitIdentifierError` instead of dropping them as already committed):

    (df.writeStream
       .foreachBatch(paimon_sink("/wh/shop.db/orders", commit_user="orders-ingest-v1"))
       .option("checkpointLocation", "/ckpt/orders-v1")
       .start())
"""
from __future__ import annotations

import logging
import time
import weakref
from dataclasses import dataclass
from typing import Any, Callable, Iterator

import pyarrow as pa

from pyspark.sql import DataFrame
from pyspark.sql import functions as F
from pyspark.sql.pandas.types import from_arrow_schema

from paimon_streaming import cross_partition, full_compaction
from paimon_streaming.branches import resolve_branch
from paimon_streaming.catalog import Catalog, create_table_at, load_table
from paimon_streaming.errors import (CommitConflictError, CompactionNotCommittedError, DuplicateCommitError, PaimonError,
                                     SequenceConflictError, StaleOptionsError, StalePlanError, TableNotFoundError,
                                     UnsupportedOperationError)
from paimon_streaming.schema import TableSchema
from paimon_streaming.table import Table
from paimon_streaming.write import conform

from .spark_write import (MESSAGE_SCHEMA, ORDER_COL, WritePlan, WriteResult, arrow_schema_of, table_schema_of,
                          check_existing_table_options, collect_arrow, committed_replay, compact_after_commit, query_property,
                          encode_messages, publish_schema, reconcile_schema, schema_race, session_time_zone,
                          without_char_types, write_dataframe, write_task)

log = logging.getLogger("paimon_streaming.sink")

QUERY_ID_PROPERTY = "sql.streaming.queryId"
MAX_RESULT_SIZE = "spark.driver.maxResultSize"  # bounds what the driver may collect (default 1g)


@dataclass(frozen=True)
class ArrowTransform:
    """Turns a micro-batch's Arrow batches into the rows to write (ingestion: Kafka records ->
    table rows), as a `mapInArrow` function does. The sink runs it where the rows are written,
    so records cross from the JVM into Python once: in the driver in local mode, in the
    writing task otherwise."""
    fn: Callable[[Iterator[pa.RecordBatch]], Iterator[pa.RecordBatch]]
    schema: pa.Schema  # of the batches `fn` yields


def query_commit_user(df: DataFrame) -> str:
    """The streaming query id, which Spark keeps in the checkpoint: the same after restarts.

    Classic Spark sets it as the local property `sql.streaming.queryId` of the thread that
    calls the foreachBatch function (the documented API passes only the DataFrame and the
    batch id). Spark Connect has no equivalent: the function runs in a Python worker of the
    Connect server against a Connect session cloned for the query, which has no SparkContext,
    whose SQL conf and job properties hold no query id, and whose `streams.active` does not
    list the query; so there a PaimonError asks for `commit_user`.
    """
    if is_connect(df):
        raise PaimonError(
            "paimon_sink under Spark Connect needs commit_user=: Spark Connect runs the foreachBatch function "
            "in a Python worker of the Connect server, on a session cloned for the query, and exposes no "
            "streaming query id to it (no SparkContext, no local property, no SQL conf; the cloned session's "
            "streams do not list the query). Pass paimon_sink(..., commit_user='<name>') with a name unique "
            "to this query and table that stays the same on every restart from the query's checkpoint; use "
            "a new name with a new checkpoint (batch ids restart at 0 there, below the ids the old name "
            "committed, and the commit would refuse them)")
    try:
        query_id = df.sparkSession.sparkContext.getLocalProperty(QUERY_ID_PROPERTY)
    except Exception as exc:  # another session without a SparkContext
        raise PaimonError(f"cannot read the streaming query id from this session ({exc.__class__.__name__}: "
                          f"{exc}); pass paimon_sink(..., commit_user='<name unique to this query and table>')"
                          ) from exc
    if not query_id:
        raise PaimonError("paimon_sink must run inside writeStream.foreachBatch (no streaming query id "
                          "found); for a one-off write pass commit_user= explicitly")
    return query_id


def running_query(df: DataFrame) -> str | None:
    """The streaming query running the foreachBatch function, as recorded in the snapshots it
    commits ("query-id:<id>", stable across restarts from its checkpoint); None where Spark does
    not tell it (Spark Connect, or outside a streaming query)."""
    if is_connect(df):
        return None
    try:
        query_id = df.sparkSession.sparkContext.getLocalProperty(QUERY_ID_PROPERTY)
    except Exception:  # noqa: BLE001 - a session without a SparkContext
        return None
    return f"query-id:{query_id}" if query_id else None


class PaimonSink:
    """Callable for foreachBatch; see the module docstring."""

    def __init__(self, table: str, warehouse: str | None = None, commit_user: str | None = None,
                 options: dict[str, Any] | None = None, row_kind_column: str | None = None,
                 shuffle: bool | None = None, merge_schema: bool = False):
        self.table_ref = table
        self.merge_schema = merge_schema
        self.shuffle = shuffle
        self.warehouse = warehouse
        self.commit_user = commit_user
        self.options = dict(options or {})
        self.row_kind_column = row_kind_column
        self.last_stages: dict[str, float] = {}  # seconds per step of the last batch written (StageClock)

    @property
    def location(self) -> str:
        """The table's directory (a branch's files live in it too)."""
        ref, _ = resolve_branch(self.table_ref, None)
        if self.warehouse is None:
            return ref
        return Catalog(self.warehouse).table_location(ref)

    def _table(self, df: DataFrame) -> Table:
        try:
            table = load_table(self.table_ref, self.warehouse)
        except TableNotFoundError:
            if resolve_branch(self.table_ref, None)[1] is not None:
                raise  # a missing branch is created with Table.create_branch, not from a stream
            create_table_at(self.location, table_schema_of(df.schema, self.row_kind_column), options=self.options)
            log.info("created Paimon table %s from the stream's schema", self.location)
            return load_table(self.table_ref, self.warehouse)
        check_existing_table_options(table, self.options, "paimon_sink(options=...)")
        return table

    def __call__(self, df: DataFrame, batch_id: int, before_commit: Callable[[], None] | None = None,
                 transform: ArrowTransform | None = None) -> None:
        """Write and commit one micro-batch. `before_commit` runs after the batch's files are
        written (the DataFrame evaluated) and before they are committed: when it raises, the
        files are deleted and nothing is committed (ingestion uses it to learn, from what the
        decoding saw, that the batch needs a schema change first). `transform` turns the
        DataFrame's rows into the rows to write (see ArrowTransform)."""
        prepared = self.prepare(df, batch_id, before_commit, transform)
        if prepared is not None:
            prepared.commit()

    def prepare(self, df: DataFrame, batch_id: int, before_commit: Callable[[], None] | None = None,
                transform: ArrowTransform | None = None, collected: pa.Table | None = None) -> "PreparedBatch | None":
        """`__call__` up to the commit: the batch's files written and `before_commit` passed,
        nothing committed; None when the batch was committed before (a replay). Batches of
        several tables prepared first and committed after commit nothing when one of them fails
        to prepare (`ingest --database`). `collected`: the batch's rows, already collected in
        the driver (written there; `df` still gives the query and its session)."""
        clock = StageClock()
        df = without_char_types(df)
        base_user = self.commit_user or query_commit_user(df)  # before the table is created: it may refuse
        table = self._table(df)
        call = SinkCall.of(table, base_user, batch_id, df)
        commit_user = call.commit_user
        table.complete_interrupted_batch(commit_user)  # a crash between a batch's two snapshots
        how = "commit_user= (the same on every restart from this query's checkpoint)" if self.commit_user else \
            "checkpoint (the default commit user is the query id, which the checkpoint keeps)"
        replay, unique_since = committed_replay(table, commit_user, batch_id, running_query(df), how)
        if replay:
            log.info("paimon_sink table=%s batch=%d already committed by %s: skipped",
                     table.name, batch_id, commit_user)
            call.done()
            if collected is None:
                compute_skipped_batch(df)
            return None
        # merged as a table would be created from it: Spark's NOT NULL literal elements and fields nullable
        input_schema = transform.schema if transform is not None else table_schema_of(df.schema, self.row_kind_column)
        pending_schema = reconcile_schema(table, input_schema, self.row_kind_column, self.merge_schema,
                                          "pass merge_schema=True to paimon_sink")
        clock.lap("prepare")
        prepared = PreparedBatch(self, df, batch_id, table, call, before_commit, transform, clock, unique_since,
                                 input_schema, pending_schema, collected)
        prepared.write()
        return prepared


@dataclass
class PreparedBatch:
    """A micro-batch's files, written and checked but not committed (`PaimonSink.prepare`)."""

    sink: PaimonSink
    df: DataFrame
    batch_id: int
    table: Table
    call: "SinkCall"
    before_commit: Callable[[], None] | None
    transform: ArrowTransform | None
    clock: "StageClock"
    unique_since: int  # the snapshot id up to which the batch was found not committed (committed_replay)
    input_schema: pa.Schema
    pending_schema: TableSchema | None  # the merged schema it is written in, committed with it (reconcile_schema)
    collected: pa.Table | None = None  # the batch's rows, in the driver already
    result: WriteResult | None = None
    plan: WritePlan | None = None

    @property
    def commit_user(self) -> str:
        return self.call.commit_user

    def write(self) -> None:
        """Write the batch's files (the table's scheduled full compaction with them), then run
        `before_commit`; when anything raises, the files are deleted."""
        table = self.table
        full = bool(table.primary_keys) and full_compaction.is_due(table.options, self.batch_id)
        plan = WritePlan.for_table(table, self.sink.location, self.sink.row_kind_column, full_compaction=full,
                                   time_zone=session_time_zone(self.df))
        self.plan = plan
        self.clock.lap("plan")
        if self.collected is not None:
            result = write_in_driver(self.df, plan, self.transform, self.clock, self.collected)
        else:
            result = write_batch(self.df, plan, self.sink.shuffle, self.transform, self.clock)
        try:
            if full:  # the table's scheduled full compaction (full-compaction.delta-commits)
                result.messages += table.scheduled_compaction(self.commit_user, self.batch_id, result.messages)
                self.clock.lap("full_compaction")
            if result.compacted and plan.snapshot_id is not None:  # another batch's level-0 files: all or none
                result.messages += table.stranded_compaction(table.snapshot_manager.snapshot(plan.snapshot_id),
                                                             result.messages)
            if self.before_commit is not None:
                self.before_commit()
                self.clock.lap("before_commit")
        except BaseException:
            table.new_commit().discard(result.messages)
            raise
        self.result = result

    def _publish_schema(self, retries: int) -> None:
        """Commit the merged schema the batch was written in; when another writer's schema change
        took its id, merge again on that schema and write the batch again (its files' field ids
        may name other columns there)."""
        for attempt in range(retries + 1):
            try:
                if publish_schema(self.table, self.pending_schema):
                    return
            except BaseException:
                self.discard()
                raise
            self.discard()
            if attempt == retries:
                raise schema_race(self.table, self.pending_schema)
            log.warning("paimon_sink table=%s batch=%d: another schema change came first; writing it again",
                        self.table.name, self.batch_id)
            self.pending_schema = reconcile_schema(self.table, self.input_schema, self.sink.row_kind_column, True,
                                                   "pass merge_schema=True to paimon_sink")
            self.write()

    def discard(self) -> None:
        """Delete the files of a batch that will not be committed."""
        self.table.new_commit().discard(self.result.messages)

    def commit(self) -> None:
        """Commit the batch as snapshot(s) under (commit user, batch id)."""
        table, batch_id = self.table, self.batch_id
        retries = table.options.get("commit.max-retries")
        self._publish_schema(retries)
        placed = self.plan.cross_partition
        for attempt in range(retries + 1):
            try:
                planned_on = table.snapshot_manager.snapshot(self.plan.snapshot_id) \
                    if placed and self.plan.snapshot_id is not None else None
                snapshot_ids = table.new_commit().commit(self.result.messages, self.commit_user, batch_id,
                                                         best_effort_compaction=True, planned_on=planned_on,
                                                         placed=placed, unique_since=self.unique_since,
                                                         properties=query_property(running_query(self.df)))
                if placed:
                    cross_partition.committed(table.path, table.branch, self.plan.snapshot_id, snapshot_ids,
                                              self.commit_user, batch_id)
                self.call.done()
                self.clock.lap("commit")
                break
            except DuplicateCommitError as exc:
                self.discard()
                if not exc.replay:
                    raise
                log.info("paimon_sink table=%s batch=%d was committed by another attempt (snapshot %s): skipped",
                         table.name, batch_id, exc.snapshot_id)
                self.call.done()
                return
            except (SequenceConflictError, StalePlanError) as exc:
                # another writer's rows reached this batch's sequence numbers in a bucket, or
                # came after the snapshot a cross-partition batch's keys were placed on: write
                # the batch again on the new snapshot (serializable)
                self.discard()
                if attempt == retries:
                    raise
                log.warning("paimon_sink table=%s batch=%d raced another writer (%s): writing it again",
                            table.name, batch_id, exc)
                if isinstance(exc, StaleOptionsError):  # the table's options changed: write under the new ones
                    table.refresh()
                self.write()
            except CompactionNotCommittedError as exc:
                if not table.reads_compacted_level0:
                    raise  # readers see the data: the next batch compacts it
                # the batch's data landed but its compaction lost to a concurrent one or failed:
                # redo it on the new snapshot, as a restart would
                snapshot_ids = [table.complete_landed_batch(self.commit_user, exc.snapshot_id)]
                break
            except CommitConflictError:
                if not table.committed_identifiers(self.commit_user, [batch_id]):
                    self.discard()  # nothing of the batch landed (e.g. its partition was rescaled): no orphans
                    raise
                # the batch's data landed (the store's answer to its snapshot write was lost):
                # compact it on the new snapshot, as a restart would
                completed = table.complete_interrupted_batch(self.commit_user)
                snapshot_ids = [completed] if completed is not None else []
                break
        result = self.result
        if not result.compacted:  # tasks shared buckets: the small files are merged here
            snapshot_ids += compact_after_commit(table, self.commit_user, batch_id, result.messages)
            self.clock.lap("compaction")
        files = sum(len(m.data.new_files) + len(m.compact.new_files) for m in result.messages)
        self.sink.last_stages = dict(self.clock.seconds)
        log.info("paimon_sink table=%s batch=%d rows_in=%d files=%d snapshots=%s seconds=%.2f (%s)",
                 table.name, batch_id, result.rows_in, files, snapshot_ids or "none", self.clock.total,
                 " ".join(f"{k}={v:.3f}" for k, v in self.clock.seconds.items()))


# (table path, branch, commit user) -> the Spark run id, the micro-batch id and the DataFrames of
# the paimon_sink calls that wrote (or skipped as committed) that table in it, in this process
_BATCH_CALLS: dict[tuple[str, str, str], tuple[str, int, list["weakref.ref[DataFrame]"]]] = {}


def streaming_run(df: DataFrame) -> str | None:
    """The id of the current run of the streaming query calling the foreachBatch function (a
    restart is a new run): Spark names the jobs of a run's micro-batches with it, the job group
    `spark.jobGroup.id` of the thread (the session foreachBatch gets is a clone, whose
    `streams` do not list the query). None where Spark does not tell it (Spark Connect)."""
    if is_connect(df):
        return None
    try:
        return df.sparkSession.sparkContext.getLocalProperty("spark.jobGroup.id") or None
    except Exception:  # noqa: BLE001 - a session without a SparkContext
        return None


@dataclass
class SinkCall:
    """A paimon_sink call's place among the calls writing its table in one micro-batch.

    A commit user commits a batch id once, so a foreachBatch function writing one table twice
    in a micro-batch (the batch split into two writes) had its second write taken for a replay
    of the first, and its rows dropped. So the k-th call writing a table in a micro-batch
    commits as `<commit user>#k` (the first as the commit user itself): a replay after a
    restart makes the same calls in the same order, and skips each one that was committed. A
    call with the DataFrame of an earlier call of the batch is that call again (the function
    retrying a call that raised after its commit). Where Spark tells no run id (Spark Connect)
    every call commits as the commit user."""

    key: tuple[str, str, str]
    run: str | None
    batch_id: int
    index: int
    df: DataFrame

    @staticmethod
    def of(table: Table, commit_user: str, batch_id: int, df: DataFrame) -> "SinkCall":
        key, run = (table.path, table.branch, commit_user), streaming_run(df)
        frames = SinkCall._frames(key, run, batch_id)
        index = next((i for i, ref in enumerate(frames) if ref() is df), len(frames))
        return SinkCall(key, run, batch_id, index if run is not None else 0, df)

    @staticmethod
    def _frames(key: tuple[str, str, str], run: str | None, batch_id: int) -> list["weakref.ref[DataFrame]"]:
        calls = _BATCH_CALLS.get(key)
        return calls[2] if calls is not None and calls[:2] == (run, batch_id) else []

    @property
    def commit_user(self) -> str:
        return self.key[2] if self.index == 0 else f"{self.key[2]}#{self.index}"

    def done(self) -> None:
        """Count this call as made (committed, or skipped as committed before)."""
        if self.run is None:
            return
        frames = self._frames(self.key, self.run, self.batch_id)
        if not frames:
            _BATCH_CALLS[self.key] = (self.run, self.batch_id, frames)
        if all(ref() is not self.df for ref in frames):
            frames.append(weakref.ref(self.df))


def compute_skipped_batch(df: DataFrame) -> None:
    """Compute a replayed micro-batch that is skipped, writing nothing (Spark's `noop` sink).
    Spark checks that the foreachBatch function of a stateful query (aggregation, deduplication,
    join, ...) computed every partition of the batch: its state stores commit only then, and
    otherwise the batch fails with STATE_STORE_COMMIT_VALIDATION_FAILED, which a restart from
    the checkpoint meets again (the batch is a replay again), so the query could never resume.
    Batches of stateless queries stay uncomputed."""
    if holds_state(df):
        df.write.format("noop").mode("overwrite").save()


def holds_state(df: DataFrame) -> bool:
    """Whether computing the micro-batch commits state stores: Spark hands foreachBatch the batch
    as an RDD, whose lineage names them (StateStoreRDD, StateStoreAwareZipPartitionsRDD, ...).
    True where that cannot be seen (Spark Connect)."""
    try:
        return "StateStore" in df._jdf.queryExecution().toRdd().toDebugString()
    except Exception:  # noqa: BLE001 - no JVM DataFrame (Spark Connect): assume state
        return True


def is_connect(df: DataFrame) -> bool:
    return type(df).__module__.startswith("pyspark.sql.connect.")


def write_site(df: DataFrame, shuffle: bool | None) -> str:
    """Where a micro-batch is written: "shuffle" (rows shuffled by bucket, written by many
    tasks: `write_dataframe`), "task" (the whole batch in one task: `write_in_task`) or
    "driver" (`write_in_driver`).

    `shuffle=True` shuffles and `shuffle=False` writes in one task. `shuffle=None` decides: in
    local mode the driver, which there shares the machine with the executors: the batch
    crosses from the JVM into Python once, as Arrow, converted by all of its input partitions'
    tasks at once, and the core writes its buckets on threads (a Python worker would add a
    second trip of every row, and a coalesced task converts partitions one after another). On
    a cluster a batch in one Spark partition is written by one task, a batch in several is
    shuffled, so executors share its buckets. Spark Connect DataFrames show neither: shuffled."""
    if shuffle is not None:
        return "shuffle" if shuffle else "task"
    if is_connect(df):
        return "shuffle"
    if df.sparkSession.sparkContext.master.startswith("local"):
        return "driver"
    return "shuffle" if df.rdd.getNumPartitions() > 1 else "task"


def write_batch(df: DataFrame, plan: WritePlan, shuffle: bool | None,
                transform: ArrowTransform | None = None, clock: "StageClock | None" = None) -> WriteResult:
    """Write the micro-batch's files where `write_site` says (nothing is committed)."""
    clock = clock or StageClock()
    site = write_site(df, shuffle)
    if site == "shuffle" and plan.cross_partition:  # one writer places a batch's rows (cross_partition.py)
        if shuffle:
            raise UnsupportedOperationError(
                f"{plan.table_name} is a cross-partition upsert table: a key's rows are placed by where it "
                "lives, by one writer of the whole batch, so its batches cannot be shuffled (shuffle=True)")
        site = "task"
    if site == "driver":
        try:
            return write_in_driver(df, plan, transform, clock)
        except Exception as exc:
            if MAX_RESULT_SIZE not in str(exc):
                raise
            # nothing was written: the collect failed. One task writes the batch instead (the
            # batch is computed again, as foreachBatch allows), with no limit on its size
            log.warning("paimon_sink table=%s: the micro-batch is larger than %s, so one task writes it "
                        "instead of the driver (raise %s to keep big batches on the faster path)",
                        plan.table_name, MAX_RESULT_SIZE, MAX_RESULT_SIZE)
            clock.lap("read")
            site = "task"
    if site == "task":
        result = write_in_task(df, plan, transform)
    else:
        if transform is not None:
            df = df.mapInArrow(transform.fn, from_arrow_schema(transform.schema))
        result = write_dataframe(df, plan)
    clock.lap("files")  # read, transform and write happen in the tasks: one figure
    return result


def write_in_driver(df: DataFrame, plan: WritePlan, transform: ArrowTransform | None,
                    clock: "StageClock", collected: pa.Table | None = None) -> WriteResult:
    """Local mode: the batch is collected as Arrow (`toArrow`: partition by partition, rows in
    order, converted by the partitions' tasks in parallel; or `collected` before) and written
    by the core here. A batch beyond spark.driver.maxResultSize fails to collect (`write_batch`
    falls back)."""
    schema = transform.schema if transform is not None else arrow_schema_of(df.schema)
    conform(schema.empty_table(), plan.writer().schema, plan.table_name, plan.row_kind_column)  # fail fast
    batches = (collect_arrow(df) if collected is None else collected).to_batches()
    clock.lap("read")
    if transform is not None:
        batches = list(transform.fn(iter(batches)))
        clock.lap("transform")
    batches = [b for b in batches if b.num_rows]
    # in the batches' own types: Spark sends strings and binaries as large_string / large_binary
    # under spark.sql.execution.arrow.useLargeVarTypes, which `conform` casts as it casts any other
    rows = pa.Table.from_batches(batches) if batches else schema.empty_table()
    result = WriteResult(plan.write(rows, whole_batch=True) if rows.num_rows else [], rows.num_rows)
    clock.lap("write")
    return result


class StageClock:
    """Seconds spent per step of one batch (prepare, plan, read, transform, write or files,
    commit): the sink's log line and ingestion's breakdown show where a batch's time goes."""

    def __init__(self) -> None:
        self.seconds: dict[str, float] = {}
        self._start = self._last = time.perf_counter()

    def lap(self, stage: str) -> None:
        """Add the time since the previous lap to `stage` (repeated steps of a retry add up)."""
        now = time.perf_counter()
        self.seconds[stage] = self.seconds.get(stage, 0.0) + now - self._last
        self._last = now

    @property
    def total(self) -> float:
        return time.perf_counter() - self._start


def write_in_task(df: DataFrame, plan: WritePlan, transform: ArrowTransform | None = None) -> WriteResult:
    """Write the whole micro-batch in one task, as the core writes a batch (grouped by bucket
    there, each bucket compacted once; no other task shares a bucket). A batch in several
    partitions is coalesced into one task, without a shuffle; its rows are numbered first
    (`monotonically_increasing_id`: partition, then row) and put back in that input order,
    which versions of a key need. With a `transform` the task applies it to the rows first (one
    Python pass: decode and write), in the order the coalesced partitions arrive."""
    schema = transform.schema if transform is not None else arrow_schema_of(df.schema)
    conform(schema.empty_table(), plan.writer().schema, plan.table_name, plan.row_kind_column)  # fail fast, on the driver
    if transform is None and (is_connect(df) or df.rdd.getNumPartitions() > 1):
        df = df.withColumn(ORDER_COL, F.monotonically_increasing_id())
    df = df.coalesce(1)

    def write(batches: Iterator[pa.RecordBatch]) -> Iterator[pa.RecordBatch]:
        if transform is not None:
            batches = transform.fn(batches)
        batches = [b for b in batches if b.num_rows]
        if batches:
            rows = pa.Table.from_batches(batches)
            if ORDER_COL in rows.column_names:
                rows = rows.sort_by(ORDER_COL).drop_columns([ORDER_COL])
            messages = write_task(plan, rows.to_batches(), whole_batch=True)
            yield from encode_messages(messages, rows.num_rows).to_batches()

    return WriteResult.collect(df.mapInArrow(write, MESSAGE_SCHEMA))


def paimon_sink(table: str, *, warehouse: str | None = None, commit_user: str | None = None,
                options: dict[str, Any] | None = None, row_kind_column: str | None = None,
                shuffle: bool | None = None, merge_schema: bool = False) -> PaimonSink:
    """The foreachBatch function writing each micro-batch into a Paimon table.

    `table`: a table directory or URI, or "db.table" with `warehouse`; a branch with Java's
    suffix ("db.table$branch_dev", "/path/table$branch_dev"). A missing table is
    created from the stream's schema with `options` (Paimon keys, e.g. `primary-key`,
    `partition`, `bucket`). `commit_user` defaults to the streaming query id.
    `row_kind_column`: an input column (not stored) of +I/-U/+U/-D row kinds for CDC input.
    `shuffle`: True shuffles every batch by bucket across tasks, False writes every batch in
    one task; None (default) writes in the driver in local mode, else in one task for
    one-partition batches and shuffled for the others (see `write_site`).
    `merge_schema`: a batch with columns the table lacks (or wider types Paimon can widen to)
    evolves the table before its data is committed (Delta's mergeSchema); without it such a
    batch is an error naming the new columns.
    """
    return PaimonSink(table, warehouse, commit_user, options, row_kind_column, shuffle, merge_schema)
