"""The "kafka-python" data source: `spark.readStream.format("kafka-python")`.

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
`includeHeaders=true` headers (array<struct<key: string, value: binary>>).

Options:
- `kafka.bootstrap.servers` (required); other `kafka.<name>` options go to kafka-python's
  KafkaConsumer with dots as underscores (`kafka.security.protocol` -> `security_protocol`).
- `subscribe`: comma-separated topics; or `subscribePattern`: a Java-style regex on topic names
  (topics that appear later are picked up, from their earliest offset, as Spark does).
- `startingOffsets` (new queries only): `latest` (default, as Spark), `earliest`, or JSON
  `{"orders": {"0": 23, "1": -2}}` (-2 earliest, -1 latest; partitions and topics the JSON
  does not name start at earliest).
- `maxOffsetsPerTrigger`: at most this many offsets per micro-batch, split over the
  partitions in proportion to their backlog (as Spark does). `Trigger.AvailableNow` reads
  what was there when the query started, in such batches.
- `includeHeaders` (`false`), `kafkaConsumer.pollTimeoutMs` (120000: a partition that
  yields nothing for this long fails the batch, naming topic, partition and offset).

Offsets are Spark's Kafka offsets, `{"topic": {"partition": next offset}}`, kept in the
query's checkpoint: a query restarted from it re-reads exactly the micro-batch that was not
committed, which with `paimon_sink` gives exactly-once ingestion. Each topic partition of
a micro-batch is one Spark task that consumes its offset range; the task's consumer is kept for
the next task of the same Python worker (`ConsumerPool`, as Spark's connector caches
consumers). Offsets that are gone (retention) fail the batch instead of silently skipping data.

kafka-python fetches; each fetch response's record batches are then decoded into Arrow columns
at once (`kafka_batches`, numpy) in place of kafka-python's decoding record by record, 20 µs a
record. kafka-python still decodes what that does not: message formats before v2, codecs whose
library is missing, `kafka.isolation.level=read_committed` (it drops aborted transactions), and
any batch that fails its CRC or does not parse (it raises its own error naming the offset).
"""
from __future__ import annotations

import atexit
import functools
import inspect
import json
import re
import threading
import time
from contextlib import contextmanager
from dataclasses import dataclass
from typing import Any, Iterator, Mapping

import numpy as np
import pyarrow as pa
from pyspark.sql.datasource import DataSource, DataSourceStreamReader, InputPartition
from pyspark.sql.streaming.datasource import (ReadAllAvailable, ReadLimit, ReadMaxRows,
                                              SupportsTriggerAvailableNow)
from pyspark.sql.types import StructType

from paimon_streaming.errors import InvalidOptionError, PaimonError
from .kafka_batches import HEADERS_TYPE, FetchedRecords, decode_fetched_records

EARLIEST, LATEST = -2, -1
_BATCH_ROWS = 20_000


def kafka_arrow_schema(include_headers: bool) -> pa.Schema:
    """The columns of Spark's Kafka source, as Arrow."""
    fields = [pa.field("key", pa.binary()), pa.field("value", pa.binary()), pa.field("topic", pa.string()),
              pa.field("partition", pa.int32()), pa.field("offset", pa.int64()),
              pa.field("timestamp", pa.timestamp("us", tz="UTC")), pa.field("timestampType", pa.int32())]
    if include_headers:
        fields.append(pa.field("headers", HEADERS_TYPE))
    return pa.schema(fields)


class KafkaSourceError(PaimonError):
    """A Kafka read that cannot go on (missing offsets, a partition that yields nothing)."""


@dataclass(frozen=True)
class KafkaOptions:
    """The parsed options of the source (see the module docstring)."""

    bootstrap_servers: str
    topics: tuple[str, ...]
    pattern: str | None
    starting_offsets: str
    max_offsets_per_trigger: int | None
    include_headers: bool
    poll_timeout_ms: int
    consumer_config: tuple[tuple[str, Any], ...]

    @staticmethod
    def parse(options: Mapping[str, str]) -> "KafkaOptions":
        opts = {k.lower(): v for k, v in options.items()}
        servers = opts.get("kafka.bootstrap.servers")
        if not servers:
            raise InvalidOptionError("format('kafka-python') needs option 'kafka.bootstrap.servers' (host:port,...)")
        topics = tuple(t.strip() for t in opts.get("subscribe", "").split(",") if t.strip())
        pattern = opts.get("subscribepattern")
        if bool(topics) == bool(pattern):
            raise InvalidOptionError("format('kafka-python') needs exactly one of the options 'subscribe' "
                                     "(comma-separated topics) and 'subscribePattern' (a regex)")
        if pattern is not None:
            try:
                re.compile(pattern)
            except re.error as exc:
                raise InvalidOptionError(f"subscribePattern '{pattern}' is not a valid regex: {exc}") from exc
        max_offsets = opts.get("maxoffsetspertrigger")
        if max_offsets is not None and (not max_offsets.isdigit() or int(max_offsets) <= 0):
            raise InvalidOptionError(f"maxOffsetsPerTrigger must be a positive integer, got '{max_offsets}'")
        starting = opts.get("startingoffsets", "latest").strip()
        if starting.lower() in ("earliest", "latest"):
            starting = starting.lower()
        else:
            _parse_offsets_json(starting)
        passthrough = tuple(sorted(
            (k[len("kafka."):].replace(".", "_"), _config_value(v)) for k, v in opts.items()
            if k.startswith("kafka.") and k != "kafka.bootstrap.servers"))
        return KafkaOptions(servers, topics, pattern, starting, int(max_offsets) if max_offsets else None,
                            opts.get("includeheaders", "false").lower() == "true",
                            int(opts.get("kafkaconsumer.polltimeoutms", "120000")), passthrough)

    def consumer(self):
        """A kafka-python consumer that never commits to Kafka (offsets live in Spark's checkpoint)
        and hands over each fetch response's records as columns (`FetchedRecords`)."""
        from kafka import KafkaConsumer
        consumer = KafkaConsumer(bootstrap_servers=self.bootstrap_servers.split(","), enable_auto_commit=False,
                                 group_id=None, **dict(self.consumer_config))
        decode_in_bulk(consumer)
        return consumer


def _config_value(value: str) -> Any:
    """kafka-python wants ints and bools typed; Spark options are strings."""
    if value.lstrip("-").isdigit():
        return int(value)
    if value.lower() in ("true", "false"):
        return value.lower() == "true"
    return value


def _parse_offsets_json(text: str) -> dict[str, dict[str, int]]:
    try:
        parsed = json.loads(text)
        if not isinstance(parsed, dict) or not all(
                isinstance(v, dict) and all(isinstance(o, int) for o in v.values()) for v in parsed.values()):
            raise ValueError("not an object of objects of integers")
    except ValueError as exc:
        raise InvalidOptionError(f"startingOffsets must be 'earliest', 'latest' or JSON like "
                                 f"{{\"topic\": {{\"0\": 23, \"1\": -2}}}}, got {text!r}: {exc}") from exc
    return parsed


Offsets = dict[str, dict[str, int]]


@dataclass(frozen=True)
class KafkaRange(InputPartition):
    """One Spark task: offsets [start, end) of one topic partition."""

    topic: str
    partition: int
    start: int
    end: int


def _flatten(offsets: Mapping[str, Mapping[str, int]]) -> dict[tuple[str, int], int]:
    return {(t, int(p)): int(o) for t, parts in offsets.items() for p, o in parts.items()}


def _nest(flat: Mapping[tuple[str, int], int]) -> Offsets:
    out: Offsets = {}
    for (t, p), o in sorted(flat.items()):
        out.setdefault(t, {})[str(p)] = o
    return out


class KafkaPythonStreamReader(DataSourceStreamReader, SupportsTriggerAvailableNow):
    """Stream reader of format("kafka-python"); the module docstring is its manual."""

    def __init__(self, options: KafkaOptions, schema: StructType):
        self.options = options
        self.schema = schema
        self._consumer = None
        self._available_now: dict[tuple[str, int], int] | None = None

    def __getstate__(self):
        state = dict(self.__dict__)
        state["_consumer"] = None
        return state

    # ---- driver: topic partitions and their offsets --------------------------------------
    @property
    def consumer(self):
        if self._consumer is None:
            self._consumer = self.options.consumer()
        return self._consumer

    def _partitions(self) -> list:
        from kafka import TopicPartition
        if self.options.pattern is not None:
            rx = re.compile(self.options.pattern)
            topics = sorted(t for t in self.consumer.topics() if rx.fullmatch(t))
        else:
            topics = list(self.options.topics)
        tps = []
        for topic in topics:
            parts = self.consumer.partitions_for_topic(topic)
            if not parts:
                if self.options.pattern is None:
                    raise KafkaSourceError(f"Kafka topic '{topic}' does not exist on "
                                           f"{self.options.bootstrap_servers} (option 'subscribe')")
                continue
            tps.extend(TopicPartition(topic, p) for p in sorted(parts))
        return tps

    def _bounds(self, tps: list) -> tuple[dict[tuple[str, int], int], dict[tuple[str, int], int]]:
        """(earliest, latest) offsets per (topic, partition)."""
        if not tps:
            return {}, {}
        first = self.consumer.beginning_offsets(tps)
        last = self.consumer.end_offsets(tps)
        return ({(tp.topic, tp.partition): o for tp, o in first.items()},
                {(tp.topic, tp.partition): o for tp, o in last.items()})

    def initialOffset(self) -> dict:
        tps = self._partitions()
        earliest, latest = self._bounds(tps)
        spec = self.options.starting_offsets
        if spec == "earliest":
            return _nest(earliest)
        if spec == "latest":
            return _nest(latest)
        given = _flatten(_parse_offsets_json(spec))
        out = {}
        for key, first in earliest.items():
            o = given.get(key, EARLIEST)
            out[key] = first if o == EARLIEST else latest[key] if o == LATEST else o
        return _nest(out)

    def getDefaultReadLimit(self) -> ReadLimit:
        n = self.options.max_offsets_per_trigger
        return ReadAllAvailable() if n is None else ReadMaxRows(n)

    def prepareForTriggerAvailableNow(self) -> None:
        self._available_now = self._bounds(self._partitions())[1]

    def latestOffset(self, start: dict, limit: ReadLimit) -> dict:
        tps = self._partitions()
        earliest, latest = self._bounds(tps)
        if self._available_now is not None:
            latest = {k: min(o, self._available_now.get(k, earliest[k])) for k, o in latest.items()}
        begin = _flatten(start)
        for key, o in earliest.items():
            begin.setdefault(key, o)  # a partition or topic that appeared: from its earliest offset
        end = {k: max(latest.get(k, o), o) for k, o in begin.items()}
        if isinstance(limit, ReadMaxRows):
            end = _rate_limit(begin, end, limit.max_rows)
        return _nest(end)

    def reportLatestOffset(self) -> dict | None:
        latest = self._bounds(self._partitions())[1]
        return _nest(latest) if latest else None

    def partitions(self, start: dict, end: dict) -> list[InputPartition]:
        begin, stop = _flatten(start), _flatten(end)
        return [KafkaRange(t, p, begin.get((t, p), 0), o) for (t, p), o in sorted(stop.items())
                if o > begin.get((t, p), 0)]

    def commit(self, end: dict) -> None:
        """Offsets live in Spark's checkpoint; nothing is committed to Kafka."""

    def stop(self) -> None:
        if self._consumer is not None:
            self._consumer.close()
            self._consumer = None

    # ---- executors: one topic partition's offset range -> Arrow --------------------------
    def read(self, partition: KafkaRange) -> Iterator[pa.RecordBatch]:
        yield from read_range(self.options, partition)


def _rate_limit(begin: dict[tuple[str, int], int], end: dict[tuple[str, int], int],
                max_offsets: int) -> dict[tuple[str, int], int]:
    """Spark's rule: split `max_offsets` over the partitions in proportion to their backlog."""
    backlog = {k: end[k] - begin[k] for k in end}
    total = sum(backlog.values())
    if total <= max_offsets:
        return end
    out = {}
    for k, lag in backlog.items():
        share = int(max_offsets * lag / total)
        out[k] = begin[k] + min(lag, max(share, 1 if lag else 0))
    return out


@functools.cache
def _bulk_partition_records() -> type | None:
    """kafka-python's per-fetch record decoder (`Fetcher.PartitionRecords`), subclassed to decode
    a fetch response in bulk (`kafka_batches`); None for a kafka-python whose decoder does not
    take a fetch response's raw records (2.x)."""
    from kafka.consumer.fetcher import Fetcher
    base = getattr(Fetcher, "PartitionRecords", None)
    if base is None or not hasattr(base, "_unpack_records") or not {
            "records", "check_crcs", "isolation_level"} <= inspect.signature(base.__init__).parameters.keys():
        return None

    class BulkPartitionRecords(base):
        def _unpack_records(self, tp, records, key_deserializer, value_deserializer):
            raw = getattr(records, "_buffer", None)
            fetched = None
            if (raw is not None and key_deserializer is None and value_deserializer is None
                    and int(self.isolation_level) == 0):  # read_uncommitted: every data batch is read
                fetched = decode_fetched_records(raw, self.fetch_offset, self.check_crcs)
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
        consumer = self._take(key) or options.consumer()
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
            raise KafkaSourceError(
                f"Kafka topic '{r.topic}' partition {r.partition}: offsets {r.start}..{first - 1} are no longer "
                f"available (retention deleted them; the earliest offset is {first}); data would be lost. Start "
                "a new query (new checkpoint) or raise the topic's retention")
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
        columns.append(pa.array([[{"key": k, "value": v} for k, v in (m.headers or ())] for m in records],
                                HEADERS_TYPE))
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
        return from_arrow_schema(kafka_arrow_schema(KafkaOptions.parse(self.options).include_headers))

    def streamReader(self, schema: StructType) -> KafkaPythonStreamReader:
        return KafkaPythonStreamReader(KafkaOptions.parse(self.options), schema)
