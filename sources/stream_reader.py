"""Streaming reads: `spark.readStream.format("paimon")`.

    import paimon_streaming as ps
    ps.register(spark)
    changes = (spark.readStream.format("paimon")
               .option("rowKindColumn", "_kind")           # '+I' / '-U' / '+U' / '-D'
               .option("max-files-per-trigger", 100)
               .option("consumer-id", "orders-to-lake")
               .load("/wh/shop.db/orders"))
    changes.writeStream.foreachBatch(apply_changes).option("checkpointLocation", ckpt).start()

Where the stream starts (`scan.mode`, Paimon's keys; a new query only: a query restarted
from its checkpoint continues right after the last committed offset, so no row is lost or
repeated):
- `latest-full` (default): the table's current state (every row as +I), then each new
  snapshot's changes;
- `latest`: only changes committed after the query started;
- `from-snapshot` with `scan.snapshot-id`: changes from that snapshot on (the earliest still
  existing one if it has expired, as Paimon does);
- `from-snapshot-full` with `scan.snapshot-id`: that snapshot's state, then the changes after it;
- `from-timestamp` with `scan.timestamp-millis` (or `scan.timestamp`, a local time in this
  process's zone, as Java reads it in the JVM's): changes of the snapshots committed at or
  after that instant;
- `scan.tag-name`: the tagged state (read from the tag, so it may have expired as a
  snapshot), then the changes after it (Java Paimon allows tags only in batch reads;
  `scan.mode=from-snapshot` with a tag reads changes from the tag's snapshot instead).
- `scan.version`: the tag of that name if there is one, else that snapshot id (as Java).
- `default`: from-timestamp if `scan.timestamp-millis` (or `scan.timestamp`) is set, from-snapshot
  if `scan.snapshot-id` is, the tag start if `scan.tag-name` is, else latest-full. These keys
  kept in the table's options count too, as in Java.
- With `consumer-id`, a new query starts at the consumer's recorded progress, when it has
  one (unless `consumer.ignore-progress=true`).

What each snapshot contributes (Java Paimon's streaming semantics):
- `changelog-producer` none (default): APPEND snapshots contribute the data files they add,
  rows as written. Append tables: every row +I. Primary-key tables: the rows each commit
  wrote, with their row kind: an insert or upsert arrives as +I or +U of the new value only
  (no -U of the previous value: without a changelog producer it is not known), a deletion
  as -D carrying the deleted key (and the values the writer gave). COMPACT snapshots add no
  rows; OVERWRITE snapshots are skipped unless `streaming-read-overwrite=true` (on an append
  table also `streaming-read-append-overwrite=true`, Java's key for it), which emits
  an append table's new files as +I and, on a primary-key table, the difference per key
  between the replaced and the new data (-D, +I, -U/+U).
- `changelog-producer` input / lookup / full-compaction: the changelog files of every
  snapshot that has them (-U/+U pairs included), as Java's changelog scanner.

Row kinds: with `rowKindColumn` = name, each row carries its kind in that string column
('+I', '-U', '+U', '-D') so CDC consumers can apply changes. Without it, -U and -D rows are
dropped and the stream carries only inserted and updated values.

Admission control (PySpark's ReadLimit): `max-files-per-trigger`, `max-snapshots-per-trigger`,
`max-rows-per-trigger`, `max-bytes-per-trigger` bound each micro-batch (at least one unit is
always admitted; a unit is one file, or one bucket of a merged full read), so a backlog is
consumed in bounded batches; `Trigger.AvailableNow` reads everything committed when the
query started, in such batches. `Trigger.Once` ignores the limits (as Spark requires).
Paimon's Spark keys work too (`read.stream.maxFilesPerTrigger`, `...maxRowsPerTrigger`,
`...maxBytesPerTrigger`), and `read.stream.minRowsPerTrigger` with `read.stream.maxTriggerDelayMs`
(only as a pair, as in Paimon): no micro-batch of fewer rows until that delay has passed since
the previous one, so a trickle is gathered into fewer, larger batches (not under
`Trigger.AvailableNow`, and never for the first batch of a run, as in Paimon).

Each micro-batch's units are packed into Spark tasks as batch reads are
(`source.split.target-size`, `source.split.open-file-cost`, `source.split.min-partitions`).

Offsets are JSON `{"snapshot": n, "units": k, "full": bool}`: everything before snapshot n
and the first k units of its plan are consumed (`full`: n is read as a full state). A query
that starts on a table without a snapshot (latest-full, from-timestamp) starts `"pending"`: its
start is resolved by its options at the first plan that sees a snapshot, as Paimon's stream.

`consumer-id`: when Spark commits a micro-batch's offsets to the source (Spark does so when
the next micro-batch starts, so the file trails the newest batch by one), the source writes
`consumer/consumer-<id>` = `{"nextSnapshot": n}` into the table, so snapshot expiration
keeps every snapshot the stream has not finished. A new query (new checkpoint) with the same
consumer id starts at that snapshot's changes. A stream that falls behind expiration
without one fails with an error naming the missing snapshot and these options rather than
skipping data.

Each micro-batch plan logs one line on the `paimon_streaming.source` logger (INFO).
"""
from __future__ import annotations

import logging
import time
from dataclasses import replace
from typing import Any, Iterator

import pyarrow as pa

from paimon_streaming.sinks import spark_version  # noqa: F401  (first: PySpark >= 4.2.1, named)
from pyspark.sql.datasource import DataSourceStreamReader, InputPartition
from pyspark.sql.streaming.datasource import (ReadAllAvailable, ReadLimit, ReadMaxBytes, ReadMaxFiles,
                                              ReadMaxRows, ReadMinRows, SupportsTriggerAvailableNow)
from pyspark.sql.types import StructType

from paimon_streaming.errors import InvalidOptionError, SchemaChangedError, SchemaMismatchError
from paimon_streaming.schema import TableSchema
from paimon_streaming.streaming_scan import ReadLimits, StreamingScan, StreamOptions, StreamPosition

from .options import ReadSpec
from .partitions import ReadContext, pack, read_min_partitions, read_partition

log = logging.getLogger("paimon_streaming.source")

_NO_FILE_LIMIT = 2 ** 31 - 1
# An idle query rewrites its consumer file (the same progress) this often, as Flink's checkpoints
# do: `consumer.expiration-time` counts from the file's last write, so a live query that has read
# everything would otherwise lose its consumer, and with it the snapshots it reads next.
CONSUMER_REFRESH_S = 60.0
FROM = "from"  # key of the first micro-batch's end offset: the start it was planned from


class PaimonStreamReader(DataSourceStreamReader, SupportsTriggerAvailableNow):
    """The stream reader of format("paimon"); the module docstring is its manual."""

    def __init__(self, spec: ReadSpec, schema: StructType):
        if spec.system_table is not None:
            raise InvalidOptionError(f"system table ${spec.system_table} cannot be read as a stream; "
                                     "use spark.read")
        for key, use in (("snapshot-id", "scan.snapshot-id"), ("tag", "scan.tag-name"),
                         ("timestamp-millis", "scan.timestamp-millis")):
            if key in spec.options:
                raise InvalidOptionError(f"option '{key}' is for batch time travel; a stream starts with "
                                         f"'{use}' (and 'scan.mode')")
        if spec.incremental is not None:
            raise InvalidOptionError("an incremental query (incremental-between*) is a batch read: use spark.read; "
                                     "a stream of changes starts with 'scan.snapshot-id' (and 'scan.mode')")
        table = spec.table()
        self.spec = spec
        self.name = table.name
        self.schema_json = table.schema.to_json()
        self.stream_options = StreamOptions.from_options(table.schema.options, spec.options)
        try:
            self.ctx = ReadContext.create(spec.location, table.schema, schema, spec.row_kind_column, table.name,
                                          table.branch)
        except SchemaMismatchError as exc:
            raise SchemaChangedError(
                f"the schema of table {table.name} changed since this stream was defined ({exc}); define the "
                "stream again (spark.readStream.format('paimon')...load()) to read with schema "
                f"{table.schema.id}") from exc
        self._scan: StreamingScan | None = None
        self._initial: dict | None = None
        self._last_snapshot: int | None = None
        self._last_trigger_ms = 0.0  # when latestOffset last moved the stream (min rows per trigger)
        self._progress_at = 0.0  # time.monotonic() of this reader's last consumer write

    def __getstate__(self):
        state = dict(self.__dict__)
        state["_scan"] = None
        return state

    @property
    def scan(self) -> StreamingScan:
        if self._scan is None:
            table = self.spec.table()
            self._scan = StreamingScan(table.file_io, table.path, TableSchema.from_json(self.schema_json),
                                       self.stream_options, table.branch)
        return self._scan

    # ---- offsets ------------------------------------------------------------------------
    def initialOffset(self) -> dict:
        start = self.scan.start_position()
        # a consumer's snapshots are kept from the start on, not from the first batch's commit: a
        # stream that dies in batch 0 resumes from its checkpoint after any expiration
        self._record_progress(start)
        self._initial = start.to_dict()
        return dict(self._initial)

    def getDefaultReadLimit(self) -> ReadLimit:
        lim = self.spec.limits
        if lim.unlimited:
            return ReadAllAvailable() if self.spec.min_rows is None else ReadMinRows(self.spec.min_rows[0])
        if lim.max_files is not None:
            return ReadMaxFiles(lim.max_files)
        if lim.max_rows is not None:
            return ReadMaxRows(lim.max_rows)
        if lim.max_bytes is not None:
            return ReadMaxBytes(lim.max_bytes)
        return ReadMaxFiles(_NO_FILE_LIMIT)  # max-snapshots-per-trigger only: admission control on

    def _limits(self, limit: ReadLimit | None) -> ReadLimits | None:
        if limit is None or isinstance(limit, ReadAllAvailable):
            return None  # Spark asks for everything (Trigger.Once): options do not apply
        lim = self.spec.limits
        if isinstance(limit, ReadMinRows):
            return lim
        if isinstance(limit, ReadMaxFiles):
            lim = replace(lim, max_files=None if limit.max_files >= _NO_FILE_LIMIT else limit.max_files)
        elif isinstance(limit, ReadMaxRows):
            lim = replace(lim, max_rows=limit.max_rows)
        elif isinstance(limit, ReadMaxBytes):
            lim = replace(lim, max_bytes=limit.max_bytes)
        return lim

    def latestOffset(self, start: dict, limit: ReadLimit) -> dict:
        # a start pending on an empty table is resolved once it has a snapshot: the first batch
        # records that start (FROM), even when empty, so the stream keeps it
        given = _position(start)
        position = self.scan.resolved(given)
        limits = self._limits(limit)
        units, end = self.scan.plan_batch(position, limits, self._last_snapshot)
        if end == given or (limits is not None and self._defer_for_min_rows(sum(u.rows for u in units))):
            if time.monotonic() - self._progress_at >= CONSUMER_REFRESH_S:  # idle: keep the consumer alive
                self._record_progress(given)
            return start  # a move over snapshots with nothing to read (compactions) is an empty batch
        self._last_trigger_ms = time.time() * 1000
        out = end.to_dict()
        if self._initial is not None and dict(start) == self._initial:
            out[FROM] = position.to_dict()
        log.info("paimon source table=%s plan %s -> %s units=%d files=%d rows=%d snapshots=%s",
                 self.name, position.to_dict(), end.to_dict(), len(units), sum(u.files for u in units),
                 sum(u.rows for u in units), sorted({u.snapshot_id for u in units}))
        return out

    def _defer_for_min_rows(self, rows: int) -> bool:
        """read.stream.minRowsPerTrigger: no micro-batch of fewer rows until maxTriggerDelayMs has
        passed since the last one (Paimon's rule; the first batch of a run is never held back, nor
        are Trigger.AvailableNow's, which must finish)."""
        if self.spec.min_rows is None or self._last_snapshot is not None:
            return False
        min_rows, max_delay_ms = self.spec.min_rows
        return rows < min_rows and time.time() * 1000 - self._last_trigger_ms <= max_delay_ms

    def reportLatestOffset(self) -> dict | None:
        latest = self.scan.snapshots.latest_id()
        return None if latest is None else StreamPosition(latest + 1).to_dict()

    def prepareForTriggerAvailableNow(self) -> None:
        latest = self.scan.snapshots.latest_id()
        self._last_snapshot = 0 if latest is None else latest

    # ---- micro-batches ------------------------------------------------------------------
    def partitions(self, start: dict, end: dict) -> list[InputPartition]:
        # The first batch's end records the start it was planned from: after a restart Spark
        # asks initialOffset() again, which may have moved (e.g. latest-full on a newer snapshot).
        begin = _position(end[FROM]) if FROM in end else _position(start)
        units = self.scan.units_between(begin, _position(end))
        return pack(units, self.spec.split_target_size, self.spec.split_open_file_cost,
                    read_min_partitions(self.spec.options))

    def read(self, partition: InputPartition) -> Iterator[pa.RecordBatch]:
        yield from read_partition(self.ctx, partition)

    def commit(self, end: dict) -> None:
        self._record_progress(_position(end))

    def _record_progress(self, position: StreamPosition) -> None:
        self.scan.record_progress(position)
        self._progress_at = time.monotonic()

    def stop(self) -> None:
        self._scan = None


def _position(offset: Any) -> StreamPosition:
    return StreamPosition.from_dict(offset)
