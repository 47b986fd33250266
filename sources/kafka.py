"""The "kafka-python" data source: `spark.readStream.format("kafka-python")`, and
`spark.read.format("kafka-python")` for batch queries.

Reads Apache Kafka topics through kafka-python, for pip-only installs where Spark's own
Kafka connector (the spark-sql-kafka-0-10 jar) is not on the classpath. Same options and
columns as Spark's `format("kafka")`, so a job can switch between the two:

    import paimon_streaming as ps
    ps.register(spark)                        # registers "paimon" and "kafka-python"
    events = (spark.readStream.format("kafka-python")
              .option("kafka.bootstrap.servers", "broker:9092")
              .option("subscribe", "orders,payments")      # or subscribePattern: "orders-.*"
              .option("startingOffsets", "earliest")      # latest (default) | JSON
              .option("maxOffsetsPerTrigger", 100000)
              .load())

Columns: key (binary), value (binary), topic (string), partition (int), offset (long),
timestamp (timestamp), timestampType (int: 0 create time, 1 log-append time), and with
`includeHeaders=true` headers (array<struct<key: string, value: binary>>; null for a record
without any, as in Spark).

Options (Spark's Kafka source's, for streaming queries):
- `kafka.bootstrap.servers` (required); other `kafka.<name>` options go to kafka-python's
  KafkaConsumer with dots as underscores (`kafka.security.protocol` -> `security_protocol`).
- Exactly one of `subscribe`: comma-separated topics; `subscribePattern`: a Java-style regex on
  topic names (topics that appear later are picked up, from their earliest offset, as Spark
  does); `assign`: JSON `{"orders": [0, 1]}`, those partitions only. Partitions added to a
  subscribed topic are read from their earliest offset by the next micro-batch (each batch asks
  the brokers for the topics' metadata, as Spark's connector does); a subscribed topic that
  does not exist, or is deleted while the query runs, fails it with an error naming the topic.
- Where a new query starts (a restarted one goes on from its checkpoint), first found first:
  `startingTimestamp` (ms since the epoch, every partition: its first record at or after it),
  `startingOffsetsByTimestamp` (JSON `{"orders": {"0": 1700000000000, ...}}`, every partition
  read named), `startingOffsets`: `latest` (default, as Spark), `earliest`, or JSON
  `{"orders": {"0": 23, "1": -2}}` (-2 earliest, -1 latest; partitions and topics the JSON
  does not name start at earliest; naming one that is not read is an error, so a misspelt
  topic is not read from earliest unnoticed; an offset past a partition's latest fails unless
  `failOnDataLoss=false`, which starts it at the latest). `startingOffsetsByTimestampStrategy`: `error` (default: a
  partition without such a record fails the query) or `latest`. The start is resolved once. The
  Python data source API gives a source no checkpoint directory to keep it in, as Spark's
  connector does, so the first micro-batch holds nothing of the partitions that start at their
  latest offset: it ends where they start, and Spark's offset log keeps that. Their records come
  from the second batch on, and a query restarted before the first batch committed starts there too.
- `maxOffsetsPerTrigger`: at most this many offsets per micro-batch, split over the
  partitions in proportion to their backlog (as Spark does). `Trigger.AvailableNow` reads
  what was there when the query started, from its start on, in such batches (a query at `latest`
  on a topic being written to reads nothing, whichever Spark resolves first). `minOffsetsPerTrigger`: no batch
  until that many offsets wait, or `maxTriggerDelay` (default `15m`) has passed since the last.
- `minPartitions`: at least about this many Spark tasks a batch, large partitions' ranges cut
  into pieces in proportion to their size (one task a partition otherwise);
  `maxRecordsPerPartition`: no task with more offsets than this (cut first, then minPartitions).
- `failOnDataLoss` (`true`): offsets deleted before they were read (retention), or offsets that
  went back (a recreated topic), fail the batch; `false` logs a warning and skips them.
- `includeHeaders` (`false`), `kafkaConsumer.pollTimeoutMs` (120000: a partition that
  yields nothing for this long fails the batch, naming topic, partition and offset).
- `kafka.auto.offset.reset`, `kafka.enable.auto.commit`, the deserializers and interceptors are
  refused, as Spark refuses them (offsets are the query's, records are read as bytes).

Batch queries (`spark.read`) read each partition from its starting offset (the options above,
default `earliest`; `latest` refused) up to its ending offset, exclusive, fixed when the query
is planned: `endingTimestamp` and `endingOffsetsByTimestamp` (a partition without such a record
ends at latest), else `endingOffsets`: `latest` (default) or JSON naming every partition read
(-1 latest; `earliest` refused). Streams refuse the ending options; batches ignore the trigger
options with a warning (both as Spark does).

Offsets are Spark's Kafka offsets, `{"topic": {"partition": next offset}}`, kept in the
query's checkpoint: a query restarted from it re-reads exactly the micro-batch that was not
committed, which with `paimon_sink` gives exactly-once ingestion. Each topic partition of
a micro-batch is one Spark task (or several, with `minPartitions`) that consumes its offset
range; the task's consumer is kept for the next task of the same Python worker
(`ConsumerPool`, as Spark's connector caches consumers).

kafka-python fetches; each fetch response's record batches are then decoded into Arrow columns
at once (`kafka_batches`, numpy) in place of kafka-python's decoding record by record, 20 µs a
record (`kafka.isolation.level=read_committed` leaves aborted transactions out, as Kafka's
consumer does). kafka-python still decodes what that does not: message formats before v2,
codecs whose library is missing, and any batch that fails its CRC or does not parse (it raises
its own error naming the offset).
"""
from __future__ import annotations

import atexit
import functools
import inspect
import logging
import threading
import time
from contextlib import contextmanager
from dataclasses import dataclass
from typing import Any, Iterator

import numpy as np
import pyarrow as pa

from paimon_streaming.sinks import spark_version  # noqa: F401  (first: PySpark >= 4.2.1, named)
from pyspark.sql.datasource import DataSource, DataSourceReader, DataSourceStreamReader, InputPartition
from pyspark.sql.streaming.datasource import (ReadAllAvailable, ReadLimit, ReadMaxRows,
                                              SupportsTriggerAvailableNow)
from pyspark.sql.types import StructType

from paimon_streaming.errors import InvalidOptionError

from .kafka_batches import HEADERS_TYPE, FetchedRecords, decode_fetched_records
from .kafka_offsets import Flat, KafkaOffsetResolver, KafkaSourceError, flatten, nest
from .kafka_options import KafkaOptions, include_headers
from .kafka_options import log as options_log

log = logging.getLogger("paimon_streaming.source")

_BATCH_ROWS = 20_000


def kafka_arrow_schema(include_headers: bool) -> pa.Schema:
    """The columns of Spark's Kafka source, as Arrow."""
    fields = [pa.field("key", pa.binary()), pa.field("value", pa.binary()), pa.field("topic", pa.string()),
              pa.field("partition", pa.int32()), pa.field("offset", pa.int64()),
              pa.field("timestamp", pa.timestamp("us", tz="UTC")), pa.field("timestampType", pa.int32())]
    if include_headers:
        fields.append(pa.field("headers", HEADERS_TYPE))
    return pa.schema(fields)


@dataclass(frozen=True)
class KafkaRange(InputPartition):
    """One Spark task: offsets [start, end) of one topic partition."""

    topic: str
    partition: int
    start: int
    end: int


class KafkaPythonStreamReader(KafkaOffsetResolver, DataSourceStreamReader, SupportsTriggerAvailableNow):
    """Stream reader of format("kafka-python"); the module docstring is its manual."""

    def __init__(self, options: KafkaOptions, schema: StructType):
        super().__init__(options)
        self.schema = schema
        self._available_now: dict[tuple[str, int], int] | None = None
        self._last_trigger: float | None = None  # minOffsetsPerTrigger: when a batch last started
        self._start: Flat | None = None  # the new query's start, resolved once
        self._held: frozenset[tuple[str, int]] = frozenset()  # started at their latest: out of the first batch

    def initialOffset(self) -> dict:
        """The new query's start, resolved once: Spark asks again to run the first batch, and a
        later `latest` there skipped the records that came while it was planned. No checkpoint
        directory is given to keep it in (Spark's connector writes `sources/<id>/0`): the first
        batch ends where the partitions started at their latest offset start (`_held`), and
        Spark's offset log keeps that for a query restarted before the batch committed."""
        if self._start is None:
            self._start = self._resolve_start()
        return nest(self._start)

    def _resolve_start(self) -> Flat:
        earliest, latest = self._bounds(self._partitions())
        start = self.starting_offsets(earliest, latest)
        beyond = {k: (o, latest[k]) for k, o in start.items() if o > latest[k]}
        if beyond:  # else the first batch would take the records' absence for a recreated topic
            what = ", ".join(f"topic '{t}' partition {p} at {o} (latest {last})" for (t, p), (o, last) in sorted(beyond.items()))
            if self.options.fail_on_data_loss:
                raise KafkaSourceError(f"startingOffsets past the latest offset: {what}; those records do not exist "
                                       "yet (Spark fails such a start too); set failOnDataLoss=false to start at the latest")
            log.warning("startingOffsets past the latest offset (%s); failOnDataLoss=false: starting at the latest", what)
            start.update({k: last for k, (_, last) in beyond.items()})
        self._held = frozenset(k for k, o in start.items() if o == latest[k])
        return start

    def getDefaultReadLimit(self) -> ReadLimit:
        n = self.options.max_offsets_per_trigger
        return ReadAllAvailable() if n is None else ReadMaxRows(n)

    def prepareForTriggerAvailableNow(self) -> None:
        self._available_now = self._bounds(self._partitions())[1]

    def latestOffset(self, start: dict, limit: ReadLimit) -> dict:
        tps = self._partitions()
        earliest, latest = self._bounds(tps)
        begin = flatten(start)
        for key, o in earliest.items():
            begin.setdefault(key, o)  # a partition or topic that appeared: from its earliest offset
        went_back = {k: (o, latest[k]) for k, o in begin.items() if k in latest and latest[k] < o}
        if went_back:
            what = ", ".join(f"topic '{t}' partition {p} from {a} to {b}" for (t, p), (a, b) in sorted(went_back.items()))
            if self.options.fail_on_data_loss:
                raise KafkaSourceError(
                    f"Kafka offsets went back ({what}): the topic was recreated or its log truncated, and records "
                    "may have been lost. Start a new query (new checkpoint), or set failOnDataLoss=false to go on "
                    "from the new latest offsets")
            log.warning("Kafka offsets went back (%s); failOnDataLoss=false: going on from there", what)
        end = {k: latest[k] if k in went_back else max(latest.get(k, o), o) for k, o in begin.items()}
        if self._available_now is not None:  # what was there when the trigger started, none of it before the start
            end = {k: min(o, max(self._available_now.get(k, begin[k]), begin[k])) for k, o in end.items()}
        held, self._held = self._held, frozenset()
        if held and flatten(start) == self._start:  # the first batch: see initialOffset
            end.update({k: begin[k] for k in held})
        if self._defer_for_min_offsets(begin, end):
            return start
        if isinstance(limit, ReadMaxRows):
            end = _rate_limit(begin, end, limit.max_rows)
        return nest(end)

    def _defer_for_min_offsets(self, begin: dict[tuple[str, int], int], end: dict[tuple[str, int], int]) -> bool:
        """minOffsetsPerTrigger: no batch until that many offsets are there or maxTriggerDelay has
        passed since the last batch (not under Trigger.AvailableNow, which must finish)."""
        wanted = self.options.min_offsets_per_trigger
        now = time.monotonic()
        if self._last_trigger is None:
            self._last_trigger = now
        if not wanted or self._available_now is not None:
            return False
        available = sum(max(o - begin[k], 0) for k, o in end.items())
        if available < wanted and now - self._last_trigger < self.options.max_trigger_delay_s:
            return True
        if available:
            self._last_trigger = now
        return False

    def reportLatestOffset(self) -> dict | None:
        latest = self._bounds(self._partitions())[1]
        return nest(latest) if latest else None

    def partitions(self, start: dict, end: dict) -> list[InputPartition]:
        begin, stop = flatten(start), flatten(end)
        ranges = [KafkaRange(t, p, begin.get((t, p), 0), o) for (t, p), o in sorted(stop.items())
                  if o > begin.get((t, p), 0)]
        return _split(ranges, self.options)

    def commit(self, end: dict) -> None:
        """Offsets live in Spark's checkpoint; nothing is committed to Kafka."""

    def stop(self) -> None:
        self.close()

    # ---- executors: one topic partition's offset range -> Arrow --------------------------
    def read(self, partition: KafkaRange) -> Iterator[pa.RecordBatch]:
        yield from read_range(self.options, partition)


class KafkaPythonBatchReader(KafkaOffsetResolver, DataSourceReader):
    """Batch reader of format("kafka-python") (`spark.read`): each partition's records from its
    starting to its ending offset, resolved once when the query is planned."""

    def partitions(self) -> list[InputPartition]:
        try:
            earliest, latest = self._bounds(self._partitions())
            start, end = self.starting_offsets(earliest, latest), self.ending_offsets(earliest, latest)
        finally:
            self.close()
        after = {key: (s, end[key]) for key, s in start.items() if s > end[key]}
        if after:
            what = ", ".join(f"topic '{t}' partition {p} from {s} to {e}" for (t, p), (s, e) in sorted(after.items()))
            raise KafkaSourceError(f"Kafka batch query: starting offsets after ending offsets ({what})")
        return _split([KafkaRange(t, p, s, end[(t, p)]) for (t, p), s in sorted(start.items()) if s < end[(t, p)]],
                      self.options)

    def read(self, partition: InputPartition) -> Iterator[pa.RecordBatch]:
        if isinstance(partition, KafkaRange):  # Spark plans one empty partition when there is none
            yield from read_range(self.options, partition)


def _rate_limit(begin: dict[tuple[str, int], int], end: dict[tuple[str, int], int],
                max_offsets: int) -> dict[tuple[str, int], int]:
    """Spark's rule: split `max_offsets` over the partitions in proportion to their backlog."""
    backlog = {k: max(end[k] - begin[k], 0) for k in end}
    total = sum(backlog.values())
    if total <= max_offsets:
        return end
    out = {k: end[k] for k in end if end[k] < begin[k]}  # went back (failOnDataLoss=false)
    for k, lag in backlog.items():
        if k in out:
            continue
        share = int(max_offsets * lag / total)
        out[k] = begin[k] + min(lag, max(share, 1 if lag else 0))
    return out


@functools.cache
def _bulk_partition_records() -> type | None:
    """kafka-python's per-fetch record decoder (`Fetcher.PartitionRecords`), subclassed to decode
    a fetch response in bulk (`kafka_batches`); None for a kafka-python before 3.0, or one whose
    decoder no longer looks as this expects (its records are read as they come then)."""
    import kafka
    from kafka.consumer.fetcher import Fetcher
    base = getattr(Fetcher, "PartitionRecords", None)
    if (int(kafka.__version__.split(".")[0]) < 3 or base is None  # written against 3.x's fetcher
            or list(inspect.signature(getattr(base, "_unpack_records", lambda: None)).parameters) != [
                "self", "tp", "records", "key_deserializer", "value_deserializer"]
            or not {"records", "check_crcs", "isolation_level", "aborted_transactions"}
            <= inspect.signature(base.__init__).parameters.keys()):
        return None

    class BulkPartitionRecords(base):
        def _unpack_records(self, tp, records, key_deserializer, value_deserializer):
            raw = getattr(records, "_buffer", None)
            fetched = None
            if raw is not None and key_deserializer is None and value_deserializer is None:
                aborted = None if int(self.isolation_level) == 0 else [  # 1: read_committed
                    (a.producer_id, a.first_offset) for a in self.aborted_transactions]
                fetched = decode_fetched_records(raw, self.fetch_offset, self.check_crcs, aborted)
            if fetched is None:  # kafka-python decodes these bytes, or raises its precise error
                yield from super()._unpack_records(tp, records, key_deserializer, value_deserializer)
                return
            self.leader_epoch = fetched.leader_epoch
            self.next_fetch_offset = max(self.next_fetch_offset, fetched.next_offset)
            self.records_read += len(fetched)
            self.bytes_read += fetched.size_in_bytes
            if len(fetched):
                yield fetched
            self.drain()

    return BulkPartitionRecords


def decode_in_bulk(consumer: Any) -> bool:
    """Make `consumer` return each fetch response's records as one `FetchedRecords` (in place of
    a ConsumerRecord a record) where this kafka-python allows; whether it does."""
    records_class = _bulk_partition_records()
    fetcher = getattr(consumer, "_fetcher", None)
    if records_class is None or fetcher is None:
        return False
    fetcher.PartitionRecords = records_class  # Fetcher builds them as self.PartitionRecords(...)
    return True


def _split(ranges: list[KafkaRange], options: KafkaOptions) -> list[KafkaRange]:
    """The tasks of a batch, as Spark cuts them: with maxRecordsPerPartition, each range into
    pieces of at most that many offsets; then with minPartitions, when there are fewer tasks
    than that, the ranges big enough into pieces in proportion to their size (the ranges too
    small for a second piece stay whole, and out of the proportion). One task a range otherwise."""
    if options.max_records_per_partition:
        ranges = [piece for r in ranges for piece in _cut(r, -(-(r.end - r.start) // options.max_records_per_partition))]
    wanted = options.min_partitions or 0
    if len(ranges) >= wanted:
        return ranges
    sizes = [r.end - r.start for r in ranges]
    whole = [_share(size, sum(sizes), wanted) == 1 for size in sizes]
    split_total = sum(size for size, w in zip(sizes, whole) if not w)
    split_wanted = max(wanted - sum(whole), 1)
    return [piece for r, size, w in zip(ranges, sizes, whole)
            for piece in ([r] if w else _cut(r, _share(size, split_total, split_wanted)))]


def _share(size: int, total: int, parts: int) -> int:
    """A range's number of pieces: its share of `parts`, rounded half up (as Spark), at least 1."""
    return max(1, int(size / total * parts + 0.5))


def _cut(r: KafkaRange, pieces: int) -> list[KafkaRange]:
    size = r.end - r.start
    pieces = min(size, pieces)
    cuts = [r.start + size * i // pieces for i in range(pieces + 1)]
    return [KafkaRange(r.topic, r.partition, a, b) for a, b in zip(cuts, cuts[1:])]


class ConsumerPool:
    """Idle kafka-python consumers of this process, lent to the next task that reads from the
    same brokers with the same settings, as Spark's Kafka connector caches its consumers per
    executor (PySpark reuses a Python worker for the tasks that follow).

    A new consumer spends about 110 ms before its first record (connecting, and kafka-python's
    100 ms metadata back-off), as long as reading a 12,000-record range takes. A consumer is
    lent to one task at a time, comes back only when its task ended cleanly (a failed or
    abandoned read closes it), and is closed after `idle_timeout_s` unused (Spark's
    `spark.kafka.consumer.cache.timeout` default, 5 minutes).
    """

    def __init__(self, idle_timeout_s: float = 300.0, max_idle: int = 4):
        self.idle_timeout_s = idle_timeout_s
        self.max_idle = max_idle
        self._idle: dict[tuple, list[tuple[float, Any]]] = {}
        self._lock = threading.Lock()

    @contextmanager
    def borrow(self, options: KafkaOptions) -> Iterator[Any]:
        key = (options.bootstrap_servers, options.consumer_config)
        consumer = self._take(key) or options.consumer(bulk=True)
        try:
            yield consumer
        except BaseException:
            consumer.close()
            raise
        self._give_back(key, consumer)

    def idle_count(self) -> int:
        with self._lock:
            return sum(len(v) for v in self._idle.values())

    def close_all(self) -> None:
        with self._lock:
            idle, self._idle = self._idle, {}
        for _, consumer in (e for entries in idle.values() for e in entries):
            consumer.close()

    def _take(self, key: tuple) -> Any | None:
        """The most recently returned consumer for `key`, after closing every expired one."""
        now = time.monotonic()
        expired = []
        with self._lock:
            for k, entries in list(self._idle.items()):
                expired += [c for t, c in entries if now - t > self.idle_timeout_s]
                entries[:] = [(t, c) for t, c in entries if now - t <= self.idle_timeout_s]
                if not entries:
                    del self._idle[k]
            entries = self._idle.get(key)
            consumer = entries.pop()[1] if entries else None
        for c in expired:
            c.close()
        return consumer

    def _give_back(self, key: tuple, consumer: Any) -> None:
        with self._lock:
            entries = self._idle.setdefault(key, [])
            entries.append((time.monotonic(), consumer))
            surplus = entries[:-self.max_idle]
            del entries[:-self.max_idle]
        for _, c in surplus:
            c.close()


CONSUMERS = ConsumerPool()
atexit.register(CONSUMERS.close_all)


def read_range(options: KafkaOptions, r: KafkaRange) -> Iterator[pa.RecordBatch]:
    """Consume offsets [r.start, r.end) of one partition. Each fetch response arrives decoded in
    bulk (`FetchedRecords`); what kafka-python decodes itself (see the module docstring) comes as
    its records, gathered into columns per chunk."""
    from kafka import TopicPartition
    schema = kafka_arrow_schema(options.include_headers)
    tp = TopicPartition(r.topic, r.partition)
    with CONSUMERS.borrow(options) as consumer:
        consumer.assign([tp])
        first = consumer.beginning_offsets([tp])[tp]
        if r.start < first:
            lost = f"Kafka topic '{r.topic}' partition {r.partition}: offsets {r.start}..{first - 1} are no longer " \
                   f"available (retention deleted them; the earliest offset is {first})"
            if options.fail_on_data_loss:
                raise KafkaSourceError(f"{lost}; data would be lost. Start a new query (new checkpoint), raise the "
                                       "topic's retention, or set failOnDataLoss=false to skip them")
            log.warning("%s; failOnDataLoss=false: skipped", lost)
            if r.end <= first:
                return
            r = KafkaRange(r.topic, r.partition, first, r.end)
        consumer.seek(tp, r.start)
        records: list = []
        position = r.start
        idle_since = time.monotonic()
        while position < r.end:
            polled = consumer.poll(timeout_ms=500, max_records=_BATCH_ROWS).get(tp, [])
            if not polled:
                position = max(position, consumer.position(tp))  # past transaction markers
                if position >= r.end:
                    break
                if (time.monotonic() - idle_since) * 1000 > options.poll_timeout_ms:
                    raise KafkaSourceError(
                        f"Kafka topic '{r.topic}' partition {r.partition}: no record at offset {position} within "
                        f"{options.poll_timeout_ms} ms (reading up to offset {r.end}); is the broker reachable?")
                continue
            idle_since = time.monotonic()
            position = max(position, consumer.position(tp))
            for item in polled:
                if isinstance(item, FetchedRecords):
                    if records:
                        yield _to_batch(records, schema)
                        records = []
                    batch = _fetched_to_batch(item, r, schema)
                    if batch.num_rows:
                        yield batch
                elif r.start <= item.offset < r.end:
                    records.append(item)
            if len(records) >= _BATCH_ROWS:
                yield _to_batch(records, schema)
                records = []
        if records:
            yield _to_batch(records, schema)


def _to_batch(records: list, schema: pa.Schema) -> pa.RecordBatch:
    """Kafka ConsumerRecords -> one Arrow record batch (one pass per column)."""
    n = len(records)
    columns = [
        pa.array([m.key for m in records], pa.binary()),
        pa.array([m.value for m in records], pa.binary()),
        pa.array([records[0].topic] * n, pa.string()),
        pa.array([m.partition for m in records], pa.int32()),
        pa.array([m.offset for m in records], pa.int64()),
        pa.array([m.timestamp * 1000 for m in records], pa.int64()).cast(schema.field("timestamp").type),
        pa.array([m.timestamp_type for m in records], pa.int32()),
    ]
    if "headers" in schema.names:
        columns.append(pa.array([[{"key": k, "value": v} for k, v in m.headers] if m.headers else None
                                 for m in records], HEADERS_TYPE))  # none: null, as Spark's connector
    return pa.RecordBatch.from_arrays(columns, schema=schema)


def _fetched_to_batch(fetched: FetchedRecords, r: KafkaRange, schema: pa.Schema) -> pa.RecordBatch:
    """A fetch response's records within [r.start, r.end), in the source's columns."""
    keep = (fetched.offsets >= r.start) & (fetched.offsets < r.end)
    rows = None if keep.all() else pa.array(np.flatnonzero(keep))
    pick = (lambda column: column) if rows is None else (lambda column: column.take(rows))
    n = int(keep.sum())
    columns = [pick(fetched.keys), pick(fetched.values), pa.repeat(pa.scalar(r.topic, pa.string()), n),
               pa.array(np.full(n, r.partition, np.int32)), pa.array(fetched.offsets[keep]),
               pa.array(fetched.timestamps_ms[keep] * 1000).cast(schema.field("timestamp").type),
               pa.array(fetched.timestamp_types[keep])]
    if "headers" in schema.names:
        columns.append(pick(fetched.headers))
    return pa.RecordBatch.from_arrays(columns, schema=schema)


class KafkaPythonDataSource(DataSource):
    """format("kafka-python"): Apache Kafka topics through kafka-python (see the module docstring)."""

    @classmethod
    def name(cls) -> str:
        return "kafka-python"

    def schema(self) -> StructType:
        from pyspark.sql.pandas.types import from_arrow_schema
        _refuse_in_any_query(self.options)  # at load(), where Spark asks for the columns
        return from_arrow_schema(kafka_arrow_schema(include_headers(self.options)))

    def reader(self, schema: StructType) -> KafkaPythonBatchReader:
        return KafkaPythonBatchReader(KafkaOptions.parse(self.options, batch=True))

    def streamReader(self, schema: StructType) -> "KafkaPythonStreamReader | RefusedStreamReader":
        try:
            return KafkaPythonStreamReader(KafkaOptions.parse(self.options), schema)
        except InvalidOptionError as exc:
            # raised here, PySpark's stream runner (4.3) fails in its own cleanup with an
            # UnboundLocalError that hides the message: the query's first call raises it instead
            return RefusedStreamReader(exc)


def _refuse_in_any_query(options: dict[str, str]) -> None:
    """InvalidOptionError for options that neither a streaming nor a batch query takes (where
    load() is called the query's kind is not known yet; a stream's own refusals, such as its
    ending options, come at its start: `RefusedStreamReader`)."""
    try:
        KafkaOptions.parse(options)
    except InvalidOptionError as stream_error:
        quiet, options_log.disabled = options_log.disabled, True  # no "ignored in batch queries" warning
        try:
            KafkaOptions.parse(options, batch=True)
        except InvalidOptionError:
            raise stream_error from None
        finally:
            options_log.disabled = quiet


class RefusedStreamReader(DataSourceStreamReader, SupportsTriggerAvailableNow):
    """The stream reader of options a stream does not take: Spark's first call of the query's
    start (its initial or latest offset) raises their InvalidOptionError."""

    def __init__(self, error: InvalidOptionError):
        self.error = error

    def _refuse(self, *args) -> Any:
        raise self.error

    initialOffset = latestOffset = getDefaultReadLimit = prepareForTriggerAvailableNow = _refuse
    partitions = read = commit = _refuse

    def reportLatestOffset(self) -> None:
        return None

    def stop(self) -> None:
        pass
