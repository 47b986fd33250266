"""format("kafka-python") against a real Kafka broker: columns, offsets, limits, restarts."""
from __future__ import annotations

import json

import pyarrow as pa
import pyarrow.compute as pc
import pytest

from kafka_broker import unique_topic


def produce(broker, topic: str, records: list[tuple], partition: int | None = None) -> None:
    """records: (key, value[, headers]) with str key/value or None."""
    p = broker.producer()
    for r in records:
        key, value = r[0], r[1]
        p.send(topic, key=None if key is None else key.encode(), value=None if value is None else value.encode(),
               headers=list(r[2]) if len(r) > 2 else None, partition=partition)
    p.flush()
    p.close()


def run_available_now(spark, reader, ckpt: str) -> list[list[dict]]:
    """Run the stream with Trigger.AvailableNow; the rows of each micro-batch in order."""
    batches: list[list[dict]] = []
    q = (reader.load().writeStream
         .foreachBatch(lambda df, _: batches.append([r.asDict() for r in df.collect()]))
         .option("checkpointLocation", ckpt).trigger(availableNow=True).start())
    q.awaitTermination(300)
    assert q.exception() is None, q.exception()
    return batches


def kafka(spark, broker, **options):
    r = spark.readStream.format("kafka-python").option("kafka.bootstrap.servers", broker.bootstrap)
    for k, v in options.items():
        r = r.option(k, v)
    return r


def test_columns_headers_and_every_record_once(spark, broker, tmp_path):
    topic = unique_topic("cols")
    broker.create_topic(topic, partitions=2)
    produce(broker, topic, [(f"k{i}", f"v{i}", [("h", str(i).encode())]) for i in range(50)], partition=0)
    produce(broker, topic, [(None, "no-key"), ("tombstone", None)], partition=1)
    batches = run_available_now(spark, kafka(spark, broker, subscribe=topic, startingOffsets="earliest",
                                             includeHeaders="true"), str(tmp_path / "ckpt"))
    rows = [r for b in batches for r in b]
    assert len(rows) == 52
    by_pos = {(r["partition"], r["offset"]): r for r in rows}
    assert sorted(by_pos) == [(0, i) for i in range(50)] + [(1, 0), (1, 1)]
    r7 = by_pos[(0, 7)]
    assert (bytes(r7["key"]), bytes(r7["value"]), r7["topic"], r7["timestampType"]) == (b"k7", b"v7", topic, 0)
    assert [(h["key"], bytes(h["value"])) for h in r7["headers"]] == [("h", b"7")]
    assert r7["timestamp"].year >= 2024
    assert by_pos[(1, 0)]["key"] is None and by_pos[(1, 1)]["value"] is None
    assert by_pos[(1, 0)]["headers"] is None  # none: null, as from Spark's connector
    schema = kafka(spark, broker, subscribe=topic).load().schema
    assert schema.names == ["key", "value", "topic", "partition", "offset", "timestamp", "timestampType"]


def test_max_offsets_per_trigger_and_restart_from_checkpoint(spark, broker, tmp_path):
    topic = unique_topic("limit")
    broker.create_topic(topic, partitions=3)
    produce(broker, topic, [(str(i), json.dumps({"i": i})) for i in range(900)])
    ckpt = str(tmp_path / "ckpt")
    reader = kafka(spark, broker, subscribe=topic, startingOffsets="earliest", maxOffsetsPerTrigger="200")
    batches = run_available_now(spark, reader, ckpt)
    assert len(batches) >= 5 and max(len(b) for b in batches) <= 200 + 3
    assert sorted(json.loads(bytes(r["value"]))["i"] for b in batches for r in b) == list(range(900))
    # A restart from the checkpoint reads only what arrived since.
    produce(broker, topic, [(str(i), json.dumps({"i": i})) for i in range(900, 950)])
    again = run_available_now(spark, reader, ckpt)
    assert sorted(json.loads(bytes(r["value"]))["i"] for b in again for r in b) == list(range(900, 950))


def test_starting_offsets_latest_json_and_subscribe_pattern(spark, broker, tmp_path):
    prefix = unique_topic("pat")
    a, b = f"{prefix}-a", f"{prefix}-b"
    broker.create_topic(a, partitions=2)
    produce(broker, a, [("x", f"p0-{i}") for i in range(10)], partition=0)
    produce(broker, a, [("y", f"p1-{i}") for i in range(10)], partition=1)
    # JSON: partition 0 from offset 7, partition 1 from latest (-1).
    start = json.dumps({a: {"0": 7, "1": -1}})
    got = run_available_now(spark, kafka(spark, broker, subscribe=a, startingOffsets=start), str(tmp_path / "j"))
    assert sorted(bytes(r["value"]).decode() for bt in got for r in bt) == ["p0-7", "p0-8", "p0-9"]
    # latest (the default): nothing of what is already there.
    ckpt = str(tmp_path / "p")
    pattern = kafka(spark, broker, subscribePattern=f"{prefix}-.*")
    assert [r for bt in run_available_now(spark, pattern, ckpt) for r in bt] == []
    # A topic matching the pattern that appears later is read from its earliest offset.
    broker.create_topic(b, partitions=1)
    produce(broker, b, [("z", "b-0"), ("z", "b-1")])
    produce(broker, a, [("x", "p0-10")], partition=0)
    got = run_available_now(spark, pattern, ckpt)
    assert sorted((r["topic"], bytes(r["value"]).decode()) for bt in got for r in bt) == [
        (a, "p0-10"), (b, "b-0"), (b, "b-1")]


def test_option_errors(spark, broker):
    from paimon_streaming.errors import InvalidOptionError
    from paimon_streaming.sources.kafka import KafkaOptions
    with pytest.raises(InvalidOptionError, match="bootstrap"):
        KafkaOptions.parse({"subscribe": "t"})
    with pytest.raises(InvalidOptionError, match="exactly one"):
        KafkaOptions.parse({"kafka.bootstrap.servers": "h:1", "subscribe": "t", "subscribePattern": "t.*"})
    with pytest.raises(InvalidOptionError, match="startingOffsets"):
        KafkaOptions.parse({"kafka.bootstrap.servers": "h:1", "subscribe": "t", "startingOffsets": "{bad"})
    with pytest.raises(InvalidOptionError, match="maxOffsetsPerTrigger"):
        KafkaOptions.parse({"kafka.bootstrap.servers": "h:1", "subscribe": "t", "maxOffsetsPerTrigger": "0"})
    opts = KafkaOptions.parse({"kafka.bootstrap.servers": "h:1", "subscribe": "a, b",
                               "kafka.request.timeout.ms": "5000", "kafka.security.protocol": "PLAINTEXT"})
    assert opts.topics == ("a", "b")
    assert dict(opts.consumer_config) == {"request_timeout_ms": 5000, "security_protocol": "PLAINTEXT"}
    missing = unique_topic("missing")
    q = kafka(spark, broker, subscribe=missing).load().writeStream.format("noop").trigger(availableNow=True).start()
    try:
        q.awaitTermination(120)
    except Exception:
        pass
    assert f"Kafka topic '{missing}' does not exist" in str(q.exception())


# ---- consumers lent from task to task -------------------------------------------------------
def read_offsets(kafka_module, options, topic: str, partition: int, start: int, end: int) -> list[int]:
    batches = kafka_module.read_range(options, kafka_module.KafkaRange(topic, partition, start, end))
    return [o for b in batches for o in b.column("offset").to_pylist()]


@pytest.fixture
def counted(monkeypatch):
    """The kafka-python source module with a fresh consumer pool, counting consumers made."""
    from paimon_streaming.sources import kafka as kafka_module
    monkeypatch.setattr(kafka_module, "CONSUMERS", kafka_module.ConsumerPool())
    made = []
    real = kafka_module.KafkaOptions.consumer
    monkeypatch.setattr(kafka_module.KafkaOptions, "consumer", lambda self, bulk=False: made.append(real(self, bulk)) or made[-1])
    return kafka_module, made


def test_a_consumer_serves_the_next_ranges_and_partitions_exactly(broker, counted):
    kafka_module, made = counted
    topic = unique_topic("reuse")
    broker.create_topic(topic, partitions=2)
    produce(broker, topic, [(f"k{i}", f"v{i}") for i in range(30)], partition=0)
    produce(broker, topic, [(f"k{i}", f"w{i}") for i in range(10)], partition=1)
    options = kafka_module.KafkaOptions.parse({"kafka.bootstrap.servers": broker.bootstrap, "subscribe": topic})
    assert read_offsets(kafka_module, options, topic, 0, 0, 10) == list(range(10))
    assert read_offsets(kafka_module, options, topic, 0, 10, 30) == list(range(10, 30))
    assert read_offsets(kafka_module, options, topic, 1, 0, 10) == list(range(10))
    assert read_offsets(kafka_module, options, topic, 0, 5, 12) == list(range(5, 12))  # backwards: a seek
    assert len(made) == 1 and kafka_module.CONSUMERS.idle_count() == 1
    other = kafka_module.KafkaOptions.parse({"kafka.bootstrap.servers": broker.bootstrap, "subscribe": topic,
                                             "kafka.client.id": "another"})
    assert read_offsets(kafka_module, other, topic, 1, 3, 10) == list(range(3, 10))
    assert len(made) == 2  # other settings: another consumer
    kafka_module.CONSUMERS.close_all()
    assert kafka_module.CONSUMERS.idle_count() == 0


def test_a_failed_or_abandoned_read_closes_its_consumer(broker, counted, monkeypatch):
    kafka_module, made = counted
    topic = unique_topic("abandon")
    broker.create_topic(topic, partitions=1)
    produce(broker, topic, [(f"k{i}", f"v{i}") for i in range(15)])  # two record batches at least
    produce(broker, topic, [(f"k{i}", f"v{i}") for i in range(15, 30)])
    settings = {"kafka.bootstrap.servers": broker.bootstrap, "subscribe": topic,
                "kafkaConsumer.pollTimeoutMs": "1500", "kafka.max.partition.fetch.bytes": "64"}  # a batch a fetch
    options = kafka_module.KafkaOptions.parse(settings)
    with pytest.raises(kafka_module.KafkaSourceError, match="no record at offset 30"):
        read_offsets(kafka_module, options, topic, 0, 25, 40)  # beyond the end: the poll times out
    assert kafka_module.CONSUMERS.idle_count() == 0
    batches = kafka_module.read_range(options, kafka_module.KafkaRange(topic, 0, 0, 30))
    first = next(batches).column("offset").to_pylist()  # a fetch (one record batch), decoded in bulk
    assert first == list(range(len(first))) and 0 < len(first) <= 15
    batches.close()  # the task stopped reading: the consumer's position is mid-range
    assert kafka_module.CONSUMERS.idle_count() == 0
    monkeypatch.setattr(kafka_module, "_BATCH_ROWS", 5)
    with monkeypatch.context() as m:  # a kafka-python that decodes record by record
        m.setattr(kafka_module, "decode_in_bulk", lambda consumer: False)
        batches = kafka_module.read_range(options, kafka_module.KafkaRange(topic, 0, 0, 30))
        first = next(batches).column("offset").to_pylist()  # polls gathered up to _BATCH_ROWS
        assert first == list(range(len(first))) and 5 <= len(first) < 30
        batches.close()
    assert kafka_module.CONSUMERS.idle_count() == 0
    assert read_offsets(kafka_module, options, topic, 0, 0, 30) == list(range(30))
    assert len(made) == 4 and kafka_module.CONSUMERS.idle_count() == 1
    kafka_module.CONSUMERS.close_all()


class FakeConsumer:
    def __init__(self):
        self.closed = False

    def close(self):
        self.closed = True


def test_idle_consumers_expire_and_the_pool_is_bounded():
    from paimon_streaming.sources.kafka import ConsumerPool, KafkaOptions
    made = []

    class Options(KafkaOptions):
        def consumer(self, bulk=False):
            made.append(FakeConsumer())
            return made[-1]

    options = Options("h:1", ("t",), None, "earliest", None, False, 1000, ())
    pool = ConsumerPool(idle_timeout_s=3600, max_idle=2)
    with pool.borrow(options) as a, pool.borrow(options) as b, pool.borrow(options) as c:
        assert len({id(a), id(b), id(c)}) == 3  # one consumer per concurrent task
    # returned c, b, a (inner first): the first one back goes when a third comes back
    assert pool.idle_count() == 2 and c.closed and not b.closed and not a.closed
    with pool.borrow(options) as d:
        assert d is a  # the most recently returned
    pool.idle_timeout_s = 0
    with pool.borrow(options) as e:
        assert e not in (a, b) and a.closed and b.closed  # expired ones are closed when the pool is next used
    pool.close_all()
    assert e.closed and pool.idle_count() == 0


def test_fetches_decoded_in_bulk_equal_kafka_pythons_records(broker, counted, monkeypatch):
    """Compressed batches, an aborted and a committed transaction (control batches), nulls,
    headers and large values: read in bulk and by kafka-python record by record, read
    uncommitted and read committed, the same columns."""
    kafka_module, made = counted
    topic = unique_topic("bulk")
    broker.create_topic(topic, partitions=1)
    big = "x" * 20_000
    for codec in (None, "gzip", "zstd"):
        p = broker.producer(compression_type=codec, linger_ms=50)
        for i in range(300):
            p.send(topic, key=None if i % 7 == 0 else f"k{i}".encode(),
                   value=None if i % 11 == 5 and i % 7 else (big if i % 50 == 1 else f"{codec}-{i}").encode(),
                   headers=[("h", b"1")] if i % 3 == 0 else None)
        p.flush()
        p.close()
    tx = broker.producer(transactional_id=unique_topic("tx"))
    tx.init_transactions()
    for commit in (False, True):
        tx.begin_transaction()
        for i in range(5):
            tx.send(topic, key=b"t", value=f"tx-{commit}-{i}".encode())
        tx.flush()  # on the broker before the abort marker
        tx.commit_transaction() if commit else tx.abort_transaction()
    tx.close()
    end = kafka_module.KafkaOptions.parse({"kafka.bootstrap.servers": broker.bootstrap,
                                           "subscribe": topic}).consumer()
    from kafka import TopicPartition
    stop = end.end_offsets([TopicPartition(topic, 0)])[TopicPartition(topic, 0)]
    end.close()
    assert stop == 900 + 12  # two control records

    def read(**extra):
        options = kafka_module.KafkaOptions.parse({"kafka.bootstrap.servers": broker.bootstrap, "subscribe": topic,
                                                   "includeHeaders": "true", **extra})
        return pa.Table.from_batches(list(kafka_module.read_range(options, kafka_module.KafkaRange(
            topic, 0, 3, stop))))

    committed = {"kafka.isolation.level": "read_committed"}
    bulk, bulk_committed = read(), read(**committed)
    kafka_module.CONSUMERS.close_all()
    with monkeypatch.context() as m:
        m.setattr(kafka_module, "decode_in_bulk", lambda consumer: False)
        per_record, per_record_committed = read(), read(**committed)
        kafka_module.CONSUMERS.close_all()
    assert bulk.num_rows == 900 - 3 + 10  # read_uncommitted, as Spark's default: the aborted records too
    assert bulk.equals(per_record) and bulk_committed.equals(per_record_committed)
    aborted = pc.is_in(bulk.column("value"), pa.array([f"tx-False-{i}".encode() for i in range(5)]))
    assert bulk.filter(pc.invert(aborted)).equals(bulk_committed)
    assert bulk.column("value").to_pylist()[-1] == b"tx-True-4"
    h = [{"key": "h", "value": b"1"}]
    assert bulk.column("headers").to_pylist()[:4] == [h, None, None, h]  # offsets 3-6: none is null, as in Spark
    assert kafka_module._bulk_partition_records() is not None  # this kafka-python hands fetches over whole
    consumer = kafka_module.KafkaOptions.parse({"kafka.bootstrap.servers": broker.bootstrap,
                                                "subscribe": topic}).consumer(bulk=True)
    consumer.assign([TopicPartition(topic, 0)])
    consumer.seek(TopicPartition(topic, 0), 0)
    polled = [item for _ in range(20) for items in consumer.poll(timeout_ms=500).values() for item in items]
    consumer.close()
    assert polled and all(isinstance(item, kafka_module.FetchedRecords) for item in polled)
    assert sum(len(item) for item in polled) == 900 + 10
    kafka_module.CONSUMERS.close_all()


# ---- Spark's Kafka source options: assign, timestamps, failOnDataLoss, minPartitions, ... ----
def reader_of(broker, **options):
    from paimon_streaming.sources.kafka import KafkaOptions, KafkaPythonStreamReader
    return KafkaPythonStreamReader(KafkaOptions.parse({"kafka.bootstrap.servers": broker.bootstrap, **options}), None)


def next_batch(reader, start: dict) -> tuple[dict, list, pa.Table | None]:
    """What Spark does for one micro-batch: the end offset, the tasks, and their rows."""
    end = reader.latestOffset(start, reader.getDefaultReadLimit())
    tasks = reader.partitions(start, end)
    batches = [b for t in tasks for b in reader.read(t)]
    return end, tasks, pa.Table.from_batches(batches) if batches else None


TIMESTAMPS_FROM = 1_700_000_000_000


def produce_timestamped(broker, topic: str) -> None:
    """3 partitions of 10 records each, value "<partition>-<i>", timestamped 1 s apart from TIMESTAMPS_FROM."""
    broker.create_topic(topic, partitions=3)
    p = broker.producer()
    for part in range(3):
        for i in range(10):
            p.send(topic, key=b"k", value=f"{part}-{i}".encode(), partition=part, timestamp_ms=TIMESTAMPS_FROM + 1000 * i)
    p.flush()
    p.close()


def test_assign_and_starting_timestamps(broker):
    from paimon_streaming.errors import InvalidOptionError
    from paimon_streaming.sources.kafka import KafkaSourceError
    topic, base = unique_topic("ts"), TIMESTAMPS_FROM
    produce_timestamped(broker, topic)
    reader = reader_of(broker, assign=json.dumps({topic: [0, 2]}), startingOffsets="earliest")
    start = reader.initialOffset()
    assert start == {topic: {"0": 0, "2": 0}}
    _, _, rows = next_batch(reader, start)
    assert sorted(rows.column("partition").to_pylist()) == [0] * 10 + [2] * 10
    with pytest.raises(KafkaSourceError, match="has no partition 7"):
        reader_of(broker, assign=json.dumps({topic: [7]})).initialOffset()

    at = reader_of(broker, subscribe=topic, startingTimestamp=str(base + 6500), startingOffsets="earliest")
    assert at.initialOffset() == {topic: {"0": 7, "1": 7, "2": 7}}  # takes precedence over startingOffsets
    by = reader_of(broker, subscribe=topic, startingOffsetsByTimestamp=json.dumps(
        {topic: {"0": base, "1": base + 9000, "2": base + 99_000}}), startingOffsetsByTimestampStrategy="latest")
    assert by.initialOffset() == {topic: {"0": 0, "1": 9, "2": 10}}  # partition 2: no such record, latest
    with pytest.raises(KafkaSourceError, match=f"topic '{topic}' partition 2 has no record with a timestamp"):
        reader_of(broker, subscribe=topic, startingOffsetsByTimestamp=json.dumps(
            {topic: {"0": base, "1": base, "2": base + 99_000}})).initialOffset()
    with pytest.raises(InvalidOptionError, match=r"every partition read.*missing \[\('" + topic):
        reader_of(broker, subscribe=topic, startingOffsetsByTimestamp=json.dumps({topic: {"0": base}})).initialOffset()


def test_fail_on_data_loss_and_min_partitions(broker):
    from kafka import KafkaAdminClient, TopicPartition
    from paimon_streaming.sources.kafka import KafkaSourceError
    topic = unique_topic("loss")
    broker.create_topic(topic, partitions=1)
    produce(broker, topic, [("k", f"v{i}") for i in range(40)])
    admin = KafkaAdminClient(bootstrap_servers=broker.bootstrap)
    admin.delete_records({TopicPartition(topic, 0): 10})  # as retention would
    admin.close()
    start = {topic: {"0": 5}}
    with pytest.raises(KafkaSourceError, match=r"offsets 5\.\.9 are no longer available.*failOnDataLoss=false"):
        next_batch(reader_of(broker, subscribe=topic), start)
    end, tasks, rows = next_batch(reader_of(broker, subscribe=topic, failOnDataLoss="false", minPartitions="4"),
                                  start)
    assert end == {topic: {"0": 40}}
    assert [(t.start, t.end) for t in tasks] == [(5, 13), (13, 22), (22, 31), (31, 40)]  # 4 tasks of one partition
    assert rows.column("offset").to_pylist() == list(range(10, 40))  # 5..9 skipped, the rest once


def test_offsets_that_go_back_fail_unless_failondataloss_is_false(monkeypatch):
    from paimon_streaming.sources.kafka import KafkaOptions, KafkaPythonStreamReader, KafkaSourceError
    from pyspark.sql.streaming.datasource import ReadMaxRows

    def reader(**options):
        r = KafkaPythonStreamReader(KafkaOptions.parse({"kafka.bootstrap.servers": "h:1", "subscribe": "t",
                                                        **options}), None)
        monkeypatch.setattr(r, "_partitions", lambda: ["t0", "t1"])
        monkeypatch.setattr(r, "_bounds", lambda tps: ({("t", 0): 0, ("t", 1): 0}, {("t", 0): 3, ("t", 1): 500}))
        return r

    start = {"t": {"0": 50, "1": 100}}  # partition 0 was at 50: its topic was recreated
    with pytest.raises(KafkaSourceError, match="offsets went back \\(topic 't' partition 0 from 50 to 3\\)"):
        reader().latestOffset(start, ReadMaxRows(100))
    assert reader(failOnDataLoss="false").latestOffset(start, ReadMaxRows(100)) == {"t": {"0": 3, "1": 200}}


def test_starting_offsets_past_the_latest_fail_unless_failondataloss_is_false(monkeypatch):
    """A JSON startingOffsets beyond a partition's latest offset started the query there, and its
    first batch failed with "offsets went back ... the topic was recreated", which it was not."""
    from paimon_streaming.sources.kafka import KafkaOptions, KafkaPythonStreamReader, KafkaSourceError

    def reader(**options):
        r = KafkaPythonStreamReader(KafkaOptions.parse({"kafka.bootstrap.servers": "h:1", "subscribe": "t",
                                                        "startingOffsets": '{"t": {"0": 50, "1": 7}}', **options}), None)
        monkeypatch.setattr(r, "_partitions", lambda: ["t0", "t1"])
        monkeypatch.setattr(r, "_bounds", lambda tps: ({("t", 0): 0, ("t", 1): 0}, {("t", 0): 3, ("t", 1): 500}))
        return r

    with pytest.raises(KafkaSourceError, match="startingOffsets past the latest offset: topic 't' partition 0 at 50 "
                                               "\\(latest 3\\)"):
        reader().initialOffset()
    assert reader(failOnDataLoss="false").initialOffset() == {"t": {"0": 3, "1": 7}}


def read_between(reader, start: dict, end: dict) -> list[tuple[int, int]]:
    """The (partition, offset) of the records a micro-batch from `start` to `end` reads."""
    return [(p, o) for t in reader.partitions(start, end) for b in reader.read(t)
            for p, o in zip(b.column("partition").to_pylist(), b.column("offset").to_pylist())]


def test_a_new_querys_start_is_kept_when_spark_asks_again_and_after_a_restart(broker):
    """Spark plans the first batch as latestOffset(initialOffset()), then calls initialOffset()
    again to run it, and again after a restart before it committed. A start at `latest` was
    resolved anew each time: the records that came while the first batch was planned were never
    read. The start is resolved once, and the first batch ends where partitions started at their
    latest offset start, so Spark's offset log keeps it for a restart."""
    topic = unique_topic("start")
    broker.create_topic(topic, partitions=2)
    produce(broker, topic, [("k", "old")], partition=0)
    produce(broker, topic, [("k", "p1-0"), ("k", "p1-1")], partition=1)
    options = {"subscribe": topic, "startingOffsets": json.dumps({topic: {"0": -1}})}  # partition 1: earliest
    r = reader_of(broker, **options)
    start = r.initialOffset()
    assert start == {topic: {"0": 1, "1": 0}}
    produce(broker, topic, [("k", f"new{i}") for i in range(3)], partition=0)  # while batch 0 is planned
    end0 = r.latestOffset(start, r.getDefaultReadLimit())
    produce(broker, topic, [("k", f"new{i}") for i in range(3, 5)], partition=0)
    assert r.initialOffset() == start  # Spark runs batch 0 from it
    first_run = read_between(r, r.initialOffset(), end0)
    assert first_run == [(1, 0), (1, 1)]  # partition 1 from earliest, as Trigger.Once would read it
    # Batch 0 did not commit: a restarted query reruns it from its logged end, then goes on.
    again = reader_of(broker, **options)
    assert read_between(again, again.initialOffset(), end0) == first_run
    end1 = again.latestOffset(end0, again.getDefaultReadLimit())
    assert end1 == {topic: {"0": 6, "1": 2}}
    assert read_between(again, end0, end1) == [(0, o) for o in range(1, 6)]  # each new record, once
    assert again.latestOffset(end1, again.getDefaultReadLimit()) == end1  # the first batch only
    r.close()
    again.close()


@pytest.mark.parametrize("fail_on_data_loss", ["true", "false"])
def test_available_now_at_latest_on_a_topic_being_written(broker, fail_on_data_loss):
    """Spark calls prepareForTriggerAvailableNow before initialOffset: on a topic written to
    meanwhile, a start at `latest` was past the offsets taken for the trigger, and the query
    failed with "Kafka offsets went back ... the topic was recreated" (or, with
    failOnDataLoss=false, warned so). It reads nothing: every record there is before its start."""
    topic = unique_topic("avn")
    broker.create_topic(topic, partitions=1)
    produce(broker, topic, [("k", f"a{i}") for i in range(5)])
    r = reader_of(broker, subscribe=topic, failOnDataLoss=fail_on_data_loss)
    r.prepareForTriggerAvailableNow()
    produce(broker, topic, [("k", f"b{i}") for i in range(3)])
    start = r.initialOffset()
    assert start == {topic: {"0": 8}}
    end0 = r.latestOffset(start, r.getDefaultReadLimit())
    assert read_between(r, start, end0) == []
    assert r.latestOffset(end0, r.getDefaultReadLimit()) == end0 == start  # nothing more: the trigger ends
    r.close()


def test_partitions_added_to_a_topic_are_read_in_the_next_batch(broker):
    """kafka-python caches topic metadata for metadata.max.age.ms (5 minutes): partitions added
    to a subscribed topic were read only that much later. Each batch asks the brokers, as
    Spark's connector does."""
    from kafka import KafkaAdminClient
    from kafka.admin import NewPartitions
    topic = unique_topic("grow")
    broker.create_topic(topic, partitions=1)
    produce(broker, topic, [("k", "a0")], partition=0)
    r = reader_of(broker, subscribe=topic, startingOffsets="earliest")
    end0 = r.latestOffset(r.initialOffset(), r.getDefaultReadLimit())
    assert end0 == {topic: {"0": 1}}
    admin = KafkaAdminClient(bootstrap_servers=broker.bootstrap)
    admin.create_partitions({topic: NewPartitions(3)})
    admin.close()
    produce(broker, topic, [("k", "b0"), ("k", "b1")], partition=1)
    produce(broker, topic, [("k", "c0")], partition=2)
    end1 = r.latestOffset(end0, r.getDefaultReadLimit())
    assert end1 == {topic: {"0": 1, "1": 2, "2": 1}}  # new partitions: from their earliest offset
    assert sorted(read_between(r, end0, end1)) == [(1, 0), (1, 1), (2, 0)]
    assert r.reportLatestOffset() == end1
    r.close()


def test_a_subscribed_topic_deleted_while_the_query_runs_is_named(broker, monkeypatch):
    """The next batch failed after 30 s with kafka-python's bare "Failed to get offsets by
    timestamps in 30000 ms" (from its stale metadata); it names the topic, as a restart did."""
    import time

    from kafka import KafkaAdminClient, TopicPartition
    from kafka.errors import KafkaTimeoutError

    from paimon_streaming.sources.kafka import KafkaSourceError
    gone, kept = unique_topic("gone"), unique_topic("kept")
    broker.create_topic(gone, partitions=2)
    broker.create_topic(kept, partitions=1)
    produce(broker, gone, [("k", "g0")], partition=0)
    r = reader_of(broker, subscribe=f"{gone},{kept}", startingOffsets="earliest")
    end0 = r.latestOffset(r.initialOffset(), r.getDefaultReadLimit())
    admin = KafkaAdminClient(bootstrap_servers=broker.bootstrap)
    admin.delete_topics([gone])
    admin.close()
    began = time.monotonic()
    with pytest.raises(KafkaSourceError, match=f"Kafka topic '{gone}' does not exist on .* \\(option 'subscribe'\\)"):
        for _ in range(50):  # the broker may still list it for a moment
            r.latestOffset(end0, r.getDefaultReadLimit())
            time.sleep(0.2)
    assert time.monotonic() - began < 20
    # deleted between the listing of the partitions and the asking of their offsets
    listed = r._partitions
    monkeypatch.setattr(r, "_partitions", lambda answers=[[TopicPartition(gone, 0)]]: answers.pop() if answers else listed())

    def times_out(tps):
        raise KafkaTimeoutError("Failed to get offsets by timestamps in 30000 ms")
    monkeypatch.setattr(r.consumer, "beginning_offsets", times_out)
    with pytest.raises(KafkaSourceError, match=f"Kafka topic '{gone}' does not exist"):
        r.latestOffset(end0, r.getDefaultReadLimit())
    r.close()


def test_a_stream_at_latest_restarted_before_its_first_batch_committed(spark, broker, tmp_path):
    """In Spark: the first batch of a query at `latest` ends at its start, and a query restarted
    before that batch committed goes on from there."""
    topic = unique_topic("restart0")
    broker.create_topic(topic, partitions=1)
    produce(broker, topic, [("k", "old")])
    ckpt = tmp_path / "ckpt"

    def dies(df, batch_id):
        raise RuntimeError(f"dies in batch {batch_id}")
    q = (kafka(spark, broker, subscribe=topic).load().writeStream.foreachBatch(dies)
         .option("checkpointLocation", str(ckpt)).trigger(availableNow=True).start())
    with pytest.raises(Exception, match="dies in batch 0"):
        q.awaitTermination(120)
    assert json.loads((ckpt / "offsets" / "0").read_text().splitlines()[-1]) == {topic: {"0": 1}}
    assert not (ckpt / "commits" / "0").exists()
    produce(broker, topic, [("k", f"new{i}") for i in range(3)])
    got = run_available_now(spark, kafka(spark, broker, subscribe=topic), str(ckpt))
    assert sorted(bytes(r["value"]).decode() for b in got for r in b) == ["new0", "new1", "new2"]


def test_min_offsets_per_trigger_waits_for_data_or_the_delay(monkeypatch):
    from paimon_streaming.sources import kafka as kafka_module
    clock = [1000.0]
    monkeypatch.setattr(kafka_module.time, "monotonic", lambda: clock[0])
    latest = {("t", 0): 10}
    r = kafka_module.KafkaPythonStreamReader(kafka_module.KafkaOptions.parse(
        {"kafka.bootstrap.servers": "h:1", "subscribe": "t", "minOffsetsPerTrigger": "100",
         "maxTriggerDelay": "30s"}), None)
    monkeypatch.setattr(r, "_partitions", lambda: ["t0"])
    monkeypatch.setattr(r, "_bounds", lambda tps: ({("t", 0): 0}, dict(latest)))
    start = {"t": {"0": 0}}
    assert r.latestOffset(start, r.getDefaultReadLimit()) is start  # 10 < 100: wait
    latest[("t", 0)] = 150
    assert r.latestOffset(start, r.getDefaultReadLimit()) == {"t": {"0": 150}}  # enough
    start, latest[("t", 0)] = {"t": {"0": 150}}, 160
    clock[0] += 29
    assert r.latestOffset(start, r.getDefaultReadLimit()) is start
    clock[0] += 2  # 31 s since the last batch
    assert r.latestOffset(start, r.getDefaultReadLimit()) == {"t": {"0": 160}}
    r._available_now = {("t", 0): 170}  # Trigger.AvailableNow never waits
    latest[("t", 0)] = 170
    assert r.latestOffset({"t": {"0": 160}}, r.getDefaultReadLimit()) == {"t": {"0": 170}}


def test_spark_kafka_options_are_checked():
    from paimon_streaming.errors import InvalidOptionError
    from paimon_streaming.sources.kafka import KafkaOptions, KafkaRange, _split
    base = {"kafka.bootstrap.servers": "h:1"}
    for bad, match in [({"subscribe": "t", "endingOffsets": "latest"}, "'endingOffsets' applies to batch queries"),
                       ({"subscribe": "t", "kafka.auto.offset.reset": "earliest"},
                        "'auto.offset.reset' is not supported.*'startingOffsets'"),
                       ({"subscribe": "t", "kafka.enable.auto.commit": "true"}, "'enable.auto.commit' is not supported"),
                       ({"subscribe": "t", "kafka.value.deserializer": "x"}, "'value.deserializer' is not supported"),
                       ({"subscribe": "t", "maxRecordsPerPartition": "0"}, "maxRecordsPerPartition must be"),
                       ({"subscribe": "t", "startingOffset": "earliest"}, "did you mean 'startingOffsets'"),
                       ({"subscribe": "t", "failondatalos": "false"}, "did you mean 'failOnDataLoss'"),
                       ({"assign": '{"t": [0]}', "subscribe": "t"}, "exactly one of the options 'assign'"),
                       ({"assign": '{"t": 0}'}, "assign must be JSON"),
                       ({"subscribe": "t", "startingTimestamp": "soon"}, "startingTimestamp must be an integer"),
                       ({"subscribe": "t", "startingOffsetsByTimestamp": '{"t": {"x": 1}}'},
                        "startingOffsetsByTimestamp must be JSON"),
                       ({"subscribe": "t", "startingOffsetsByTimestampStrategy": "skip"}, "'error' or 'latest'"),
                       ({"subscribe": "t", "failOnDataLoss": "maybe"}, "failOnDataLoss must be 'true' or 'false'"),
                       ({"subscribe": "t", "minOffsetsPerTrigger": "10", "maxOffsetsPerTrigger": "5"},
                        "minOffsetsPerTrigger \\(10\\) is above maxOffsetsPerTrigger"),
                       ({"subscribe": "t", "maxTriggerDelay": "soon"}, "maxTriggerDelay must be a duration"),
                       ({"subscribe": "t", "minPartitions": "0"}, "minPartitions must be an integer >= 1")]:
        with pytest.raises(InvalidOptionError, match=match):
            KafkaOptions.parse({**base, **bad})
    opts = KafkaOptions.parse({**base, "assign": '{"b": [1, 0], "a": [2]}', "maxTriggerDelay": "500ms",
                               "startingTimestamp": "0"})
    assert opts.assign == (("a", 2), ("b", 0), ("b", 1)) and opts.max_trigger_delay_s == 0.5
    assert opts.starting_timestamp == 0 and KafkaOptions.parse({**base, "subscribe": "t",
                                                                "maxTriggerDelay": "2m"}).max_trigger_delay_s == 120
    settings = dict(KafkaOptions.parse({**base, "subscribe": "t", "kafka.api.version": "2.6.0",
                                        "kafka.group.id": "audit"}).consumer_config)
    assert settings == {"api_version": (2, 6, 0), "group_id": "audit"}  # kafka-python's types

    def split(**options):
        return [(r.partition, r.start, r.end) for r in _split(ranges, KafkaOptions.parse({**base, "subscribe": "t",
                                                                                           **options}))]
    ranges = [KafkaRange("t", 0, 0, 90), KafkaRange("t", 1, 0, 10)]
    assert split(minPartitions="5") == [(0, 0, 22), (0, 22, 45), (0, 45, 67), (0, 67, 90), (1, 0, 10)]
    assert split(minPartitions="2") == split() == [(0, 0, 90), (1, 0, 10)]
    assert split(maxRecordsPerPartition="40") == [(0, 0, 30), (0, 30, 60), (0, 60, 90), (1, 0, 10)]
    # both: cut by size first, then again when that still makes fewer tasks than minPartitions
    # 45 + 45 + 10 offsets: the 10 stay whole and out of the proportion, 5 tasks left for the
    # 90 others, 2.5 each, rounded half up as Spark does
    assert split(maxRecordsPerPartition="50", minPartitions="6") == [
        (0, 0, 15), (0, 15, 30), (0, 30, 45), (0, 45, 60), (0, 60, 75), (0, 75, 90), (1, 0, 10)]


# ---- batch queries: spark.read.format("kafka-python") --------------------------------------------
def test_batch_reads_between_offsets_and_timestamps(spark, broker):
    topic, base = unique_topic("batch"), TIMESTAMPS_FROM
    produce_timestamped(broker, topic)

    def read(**options):
        df = kafka_batch(spark, broker, subscribe=topic, **options).load()
        return sorted((r["partition"], r["offset"]) for r in df.collect())

    assert read() == [(p, o) for p in range(3) for o in range(10)]  # earliest to latest by default
    assert read(startingOffsets=json.dumps({topic: {"0": 3, "1": -2}}),  # partition 2 not named: earliest
                endingOffsets=json.dumps({topic: {"0": 5, "1": 2, "2": -1}})) == (
        [(0, 3), (0, 4), (1, 0), (1, 1)] + [(2, o) for o in range(10)])
    assert read(startingTimestamp=str(base + 7000), endingTimestamp=str(base + 9000)) == [
        (p, o) for p in range(3) for o in (7, 8)]
    # endingOffsetsByTimestamp: a partition without a record at or after it ends at latest
    assert read(startingOffsets="earliest", endingOffsetsByTimestamp=json.dumps(
        {topic: {"0": base + 1000, "1": base + 99_000, "2": base}})) == [(0, 0)] + [(1, o) for o in range(10)]
    assert read(endingOffsets=json.dumps({topic: {"0": 0, "1": 0, "2": 0}})) == []  # nothing: one empty task
    df = kafka_batch(spark, broker, subscribe=topic, maxRecordsPerPartition="4", maxOffsetsPerTrigger="1").load()
    assert df.rdd.getNumPartitions() == 9 and df.count() == 30  # 3 tasks a partition; the trigger option ignored
    assert df.filter("partition = 1 AND offset >= 8").count() == 2  # Spark filters after the read
    row = kafka_batch(spark, broker, subscribe=topic, endingOffsets=json.dumps({topic: {"0": 1, "1": 0, "2": 0}}),
                      includeHeaders="true").load().collect()
    assert [(bytes(r["value"]), r["headers"], r["timestamp"].timestamp()) for r in row] == [(b"0-0", None, base / 1000)]


def test_batch_query_option_errors(spark, broker):
    from paimon_streaming.errors import InvalidOptionError
    from paimon_streaming.sources.kafka import KafkaOffsetResolver, KafkaOptions, KafkaPythonBatchReader, KafkaSourceError
    topic = unique_topic("batcherr")
    broker.create_topic(topic, partitions=2)
    produce(broker, topic, [("k", f"v{i}") for i in range(5)], partition=0)
    base = {"kafka.bootstrap.servers": broker.bootstrap, "subscribe": topic}
    for bad, match in [({"startingOffsets": "latest"}, "startingOffsets cannot be latest in a batch query"),
                       ({"startingOffsets": json.dumps({topic: {"0": -1}})}, "startingOffsets cannot be latest"),
                       ({"endingOffsets": "earliest"}, "endingOffsets cannot be earliest"),
                       ({"endingOffsets": json.dumps({topic: {"0": -2, "1": -1}})}, "endingOffsets cannot be earliest"),
                       ({"endingTimestamp": "yesterday"}, "endingTimestamp must be an integer")]:
        with pytest.raises(InvalidOptionError, match=match):
            KafkaOptions.parse({**base, **bad}, batch=True)

    def plan(**options):
        return KafkaPythonBatchReader(KafkaOptions.parse({**base, **options}, batch=True)).partitions()
    with pytest.raises(InvalidOptionError, match=r"endingOffsets must give a value for every partition read.*"
                                                 rf"missing \[\('{topic}', 1\)\]"):
        plan(endingOffsets=json.dumps({topic: {"0": 3}}))
    with pytest.raises(KafkaSourceError, match=f"starting offsets after ending offsets \\(topic '{topic}' partition 0 "
                                               "from 4 to 2\\)"):
        plan(startingOffsets=json.dumps({topic: {"0": 4}}), endingOffsets=json.dumps({topic: {"0": 2, "1": -1}}))
    with pytest.raises(KafkaSourceError, match=f"past the latest offset: topic '{topic}' partition 0 at 9 \\(latest 5\\)"):
        plan(endingOffsets=json.dumps({topic: {"0": 9, "1": -1}}))
    assert [(t.partition, t.start, t.end) for t in plan(startingOffsets=json.dumps({topic: {"0": 2}}))] == [(0, 2, 5)]
    with pytest.raises(InvalidOptionError, match=r"startingOffsets names partitions that are not read: \[\('orders', 0\)"):
        plan(startingOffsets=json.dumps({"orders": {"0": 2}}))  # a misspelt topic: not everything from earliest
    assert issubclass(KafkaPythonBatchReader, KafkaOffsetResolver)
    with pytest.raises(Exception, match="startingOffsets cannot be latest in a batch query"):
        kafka_batch(spark, broker, subscribe=topic, startingOffsets="latest").load().collect()


def kafka_batch(spark, broker, **options):
    r = spark.read.format("kafka-python").option("kafka.bootstrap.servers", broker.bootstrap)
    for k, v in options.items():
        r = r.option(k, v)
    return r


def test_a_streams_option_errors_name_the_option(spark, broker):
    """endingOffsets in a stream (refused inside streamReader()) failed with PySpark's
    "UnboundLocalError: cannot access local variable 'reader'" (its runner's cleanup), hiding our
    message. Errors of any query now come at load(); a stream's own ones at its start."""
    topic = unique_topic("stream-opts")
    broker.create_topic(topic, partitions=1)
    for option in ("endingOffsets", "endingTimestamp"):
        q = kafka(spark, broker, subscribe=topic, **{option: "latest" if option == "endingOffsets" else "1"}).load() \
            .writeStream.format("noop").trigger(availableNow=True).start()
        try:
            q.awaitTermination(120)
        except Exception:
            pass
        assert f"InvalidOptionError: option '{option}' applies to batch queries" in str(q.exception())
        assert "UnboundLocalError" not in str(q.exception())
    with pytest.raises(Exception, match="needs exactly one of the options 'assign'") as raised:
        kafka(spark, broker, subscribe=topic, subscribePattern="x.*").load()
    assert "UnboundLocalError" not in str(raised.value)


def test_option_values_parsed_or_refused_without_a_broker(caplog):
    """Options checked before any broker is asked: a bad subscribePattern regex, offsets JSON
    with a non-integer offset, kafka.* settings typed for kafka-python (true/false as booleans),
    and a streaming-only option in a batch read: warned about as ignored (as Spark's source)."""
    import logging

    from paimon_streaming.errors import InvalidOptionError
    from paimon_streaming.sources.kafka import KafkaOptions
    base = {"kafka.bootstrap.servers": "h:1"}
    with pytest.raises(InvalidOptionError, match=r"subscribePattern 'orders\[' is not a valid regex"):
        KafkaOptions.parse({**base, "subscribePattern": "orders["})
    with pytest.raises(InvalidOptionError, match="startingOffsets must be .*not an object of objects of integers"):
        KafkaOptions.parse({**base, "subscribe": "t", "startingOffsets": '{"t": {"0": "23"}}'})
    opts = KafkaOptions.parse({**base, "subscribe": "t", "kafka.check.crcs": "False", "kafka.client.id": "me"})
    assert dict(opts.consumer_config) == {"check_crcs": False, "client_id": "me"}
    with caplog.at_level(logging.WARNING):
        KafkaOptions.parse({**base, "subscribe": "t", "maxOffsetsPerTrigger": "10"}, batch=True)
    assert "option 'maxOffsetsPerTrigger' is ignored in batch queries" in caplog.text


def test_an_unreachable_broker_is_named(monkeypatch):
    """kafka-python's "Unable to bootstrap" (KafkaTimeoutError) reached `paimon-streaming ingest`
    as a 40-line stack trace; it is a KafkaSourceError naming the address (the CLI prints it as
    one `error:` line)."""
    import kafka
    from kafka.errors import KafkaTimeoutError

    from paimon_streaming.sources.kafka_offsets import KafkaSourceError
    from paimon_streaming.sources.kafka_options import KafkaOptions

    def unreachable(*args, **kwargs):
        raise KafkaTimeoutError("Unable to bootstrap from ['h1:9092', 'h2:9092']")
    monkeypatch.setattr(kafka, "KafkaConsumer", unreachable)
    with pytest.raises(KafkaSourceError, match=r"cannot reach a Kafka broker at h1:9092,h2:9092 \(.*Unable to bootstrap"):
        KafkaOptions.parse({"kafka.bootstrap.servers": "h1:9092,h2:9092", "subscribe": "t"}).consumer()
