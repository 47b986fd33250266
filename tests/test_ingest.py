"""`paimon-streaming ingest` against a real Kafka broker: decoding, deletes, resume, errors,
and the same pipeline on Spark's own Kafka connector (resolved through Maven)."""
from __future__ import annotations

import io
import json
import os
import random
import subprocess
import sys
from dataclasses import replace

import fastavro
import pyarrow as pa
import pytest

import paimon_streaming as ps
from conftest import pypaimon_read
from kafka_broker import connector_jars, unique_topic
from paimon_streaming.errors import InvalidOptionError
from paimon_streaming.sinks.ingest import IngestConfig, run_ingest
from spark_support import spark_env


def keyed_messages(n: int, keys: int, seed: int, start: int = 0) -> list[tuple[str, dict | None]]:
    """(key, row or None for a tombstone): inserts, updates and deletes over a key space."""
    rng = random.Random(seed)
    out = []
    for i in range(start, start + n):
        k = rng.randrange(keys)
        out.append((str(k), None if rng.random() < 0.15 else {"id": k, "name": f"n{i}", "amount": i * 0.5}))
    return out


def produce(broker, topic: str, messages, encode) -> None:
    p = broker.producer(linger_ms=5)
    for key, row in messages:
        p.send(topic, key=key.encode(), value=None if row is None else encode(row))
    p.flush()
    p.close()


def model_of(messages) -> dict[int, tuple]:
    state: dict[int, tuple] = {}
    for key, row in messages:
        if row is None:
            state.pop(int(key), None)
        else:
            state[row["id"]] = (row["name"], row["amount"])
    return state


def table_state(table: pa.Table) -> dict[int, tuple]:
    d = table.to_pydict()
    return {i: (n, a) for i, n, a in zip(d["id"], d["name"], d["amount"])}


def ingest(spark, broker, tmp_path, topic: str, **kw) -> tuple[int, list[str]]:
    lines: list[str] = []
    cfg = IngestConfig(bootstrap_servers=broker.bootstrap, warehouse=str(tmp_path / "wh"), table="db.t",
                       topics=(topic,), trigger="available-now", checkpoint=str(tmp_path / "ckpt"), **kw)
    return run_ingest(spark, cfg, lines.append), lines


def test_schema_inference_reads_with_the_jobs_kafka_options(broker, monkeypatch):
    import kafka

    from paimon_streaming.sinks.ingest import sample_records
    topic = unique_topic("infer-options")
    broker.create_topic(topic, partitions=1)
    produce(broker, topic, keyed_messages(5, 5, seed=3), lambda r: json.dumps(r).encode())
    made = []
    real = kafka.KafkaConsumer
    monkeypatch.setattr(kafka, "KafkaConsumer", lambda **kw: made.append(kw) or real(**kw))
    cfg = IngestConfig(bootstrap_servers=broker.bootstrap, warehouse="unused", table="db.t", topics=(topic,),
                       kafka_options={"client.id": "inference", "security.protocol": "PLAINTEXT"})
    values = [value for _, value in sample_records(cfg)]
    assert 1 <= len(values) <= 5 and all(json.loads(v)["id"] >= 0 for v in values)
    assert [(kw["client_id"], kw["security_protocol"]) for kw in made] == [("inference", "PLAINTEXT")]


def test_source_options_reach_the_kafka_reader():
    import argparse

    from paimon_streaming.sinks.ingest_command import register
    parser = argparse.ArgumentParser()
    register(parser.add_subparsers())
    args = parser.parse_args(["ingest", "--bootstrap-servers", "h:1", "--topic", "t", "--warehouse", "w",
                              "--table", "db.t", "--source-option", "minPartitions=8",
                              "--source-option", "startingTimestamp=1700000000000", "--kafka-option", "client.id=x"])
    assert args.source_option == [("minPartitions", "8"), ("startingTimestamp", "1700000000000")]
    cfg = IngestConfig(bootstrap_servers="h:1", warehouse="w", table="db.t", topics=("t",),
                       kafka_options=dict(args.kafka_option), reader_options=dict(args.source_option))
    assert cfg.source_options() == {"kafka.bootstrap.servers": "h:1", "startingOffsets": "earliest", "subscribe": "t",
                                    "kafka.client.id": "x", "minPartitions": "8",
                                    "startingTimestamp": "1700000000000"}
    with pytest.raises(InvalidOptionError, match="did you mean 'minPartitions'"):  # whichever source reads them
        IngestConfig(bootstrap_servers="h:1", warehouse="w", table="db.t", topics=("t",),
                     reader_options={"minPartition": "8"})


def test_json_upserts_and_deletes_with_inferred_schema_then_resume(spark, broker, tmp_path):
    topic = unique_topic("ingest-json")
    broker.create_topic(topic, partitions=3)
    first = keyed_messages(3000, 400, seed=1)
    produce(broker, topic, first, lambda r: json.dumps(r).encode())
    rc, lines = ingest(spark, broker, tmp_path, topic, primary_keys=("id",), bucket=2,
                       max_offsets_per_trigger=1000)
    assert rc == 0, lines
    assert any("inferred from" in line for line in lines), lines
    batch_lines = [line for line in lines if line.startswith("batch ")]
    assert len(batch_lines) >= 3 and all("rows/s" in line and "lag" in line for line in batch_lines), lines
    assert "lag 0," in lines[-1], lines[-1]
    table = ps.Catalog(str(tmp_path / "wh")).get_table("db.t")
    assert table.primary_keys == ["id"]
    assert table_state(table.to_arrow()) == model_of(first)
    # More records, including deletes of existing keys: the rerun resumes from the checkpoint.
    second = keyed_messages(1000, 400, seed=2, start=3000)
    produce(broker, topic, second, lambda r: json.dumps(r).encode())
    rc, lines = ingest(spark, broker, tmp_path, topic, primary_keys=("id",))
    assert rc == 0, lines
    expected = model_of(first + second)
    assert table_state(ps.Catalog(str(tmp_path / "wh")).get_table("db.t").to_arrow()) == expected
    assert table_state(pypaimon_read(str(tmp_path / "wh"), "db.t")) == expected


def test_a_checkpoint_whose_batches_are_not_in_the_table_is_refused(spark, broker, tmp_path):
    """A table dropped and created again, or another table given the checkpoint: the job resumed
    after the checkpoint's batches and their records were silently missing (the new table held
    only later ones). Refused naming the checkpoint and the table, before a table is created; a
    new checkpoint reads the topic from the start."""
    topic = unique_topic("ingest-stale-checkpoint")
    broker.create_topic(topic, partitions=1)
    rows = [(str(i), {"id": i, "name": f"n{i}", "amount": 0.5}) for i in range(7)]
    produce(broker, topic, rows[:5], lambda r: json.dumps(r).encode())
    assert ingest(spark, broker, tmp_path, topic, primary_keys=("id",), bucket=1)[0] == 0
    catalog = ps.Catalog(str(tmp_path / "wh"))
    catalog.drop_table("db.t")
    produce(broker, topic, rows[5:], lambda r: json.dumps(r).encode())
    ckpt = tmp_path / "ckpt"
    refused = rf"checkpoint {ckpt} finished micro-batches up to 0 .* not in table db.t: the table does not exist"
    with pytest.raises(InvalidOptionError, match=refused):
        ingest(spark, broker, tmp_path, topic, primary_keys=("id",), bucket=1)
    with pytest.raises(InvalidOptionError, match=r"not in table db.two: the table does not exist.*new directory"):
        run_ingest(spark, IngestConfig(bootstrap_servers=broker.bootstrap, warehouse=str(tmp_path / "wh"),
                                       table="db.two", topics=(topic,), checkpoint=str(ckpt)), lambda line: None)
    assert not catalog.table_exists("db.t") and not catalog.table_exists("db.two")
    catalog.create_table("db.t", pa.schema([pa.field("id", pa.int64(), False), ("name", pa.string()),
                                            ("amount", pa.float64())]), primary_keys=["id"], options={"bucket": "1"})
    with pytest.raises(InvalidOptionError, match="the table was created after batch 0 ran, and holds no commit"):
        ingest(spark, broker, tmp_path, topic, primary_keys=("id",))
    rc = run_ingest(spark, IngestConfig(bootstrap_servers=broker.bootstrap, warehouse=str(tmp_path / "wh"),
                                        table="db.t", topics=(topic,), trigger="available-now",
                                        checkpoint=str(tmp_path / "new")), lambda line: None)
    assert rc == 0 and sorted(catalog.get_table("db.t").to_arrow().column("id").to_pylist()) == list(range(7))


def test_a_checkpoint_fits_a_table_holding_its_batches_or_there_before_them(tmp_path):
    """The evidence a checkpoint's batches are in a table: a commit of its commit user (also one
    expiration recorded), or the table was there when its oldest kept batch ran (batches that
    wrote no row commit nothing); a checkpoint without finished batches fits any table."""
    from paimon_streaming.commit_users import CommitUserRecords
    from paimon_streaming.sinks.checkpoint_target import check_checkpoint_target
    schema = pa.schema([pa.field("id", pa.int64(), False)])
    catalog = ps.Catalog(str(tmp_path / "wh"))
    table = catalog.create_table("db.t", schema, primary_keys=["id"], options={"bucket": "1"})
    created = table.schema.time_millis
    ckpt = tmp_path / "ck"
    (ckpt / "offsets").mkdir(parents=True)
    (ckpt / "commits").mkdir()
    (ckpt / "metadata").write_text('{"id":"q-1"}')

    def check(table):
        check_checkpoint_target(str(ckpt), table, "db.t", "Do this", made_before_batches=True)
    check(None)  # no batch finished: a new table, or any
    (ckpt / "offsets" / "0").write_text(f'v1\n{{"batchWatermarkMs":0,"batchTimestampMs":{created - 1}}}\n{{}}')
    (ckpt / "offsets" / "1").write_text("v1\n{}")
    check(table)  # batch 0 started; until it finished, the checkpoint resumes at it
    (ckpt / "commits" / "0").write_text("v1\n{}")
    (ckpt / "commits" / ".1.crc").write_text("")
    with pytest.raises(InvalidOptionError, match=r"finished micro-batches up to 0 .* table db.t: the table was created "
                                                 r"after batch 0 ran, and holds no commit of commit user 'q-1'.* Do this"):
        check(table)
    with pytest.raises(InvalidOptionError, match="the table does not exist"):
        check(None)
    check_checkpoint_target(str(ckpt), table, "db.t", "Do this")  # a table made while batch 0 ran
    table.write_arrow(pa.table({"id": [1]}, schema=schema))  # another writer's
    expired = replace(table.latest_snapshot(), commit_user="q-1", commit_identifier=0)
    CommitUserRecords(table.file_io, table.path).record([expired])
    check(table)  # a commit of the query that expiration recorded
    (ckpt / "metadata").write_text('{"id":"q-2"}')
    with pytest.raises(InvalidOptionError, match="holds no commit of commit user 'q-2'"):
        check(table)
    table.write_arrow(pa.table({"id": [2]}, schema=schema), commit_user="q-2", commit_identifier=0)
    check(table)
    (ckpt / "metadata").write_text('{"id":"q-3"}')
    (ckpt / "offsets" / "0").write_text(f'v1\n{{"batchTimestampMs":{created + 1}}}')
    check(table)  # the table was there when the batch ran: it may have written no row


def test_ingest_into_a_branch(spark, broker, tmp_path):
    """`--table db.t$branch_x`: the records land on the branch (its own checkpoint and commit
    identifiers), main keeps what it had until the branch is fast-forwarded."""
    topic = unique_topic("ingest-branch")
    broker.create_topic(topic, partitions=1)
    first = keyed_messages(300, 50, seed=5)
    produce(broker, topic, first, lambda r: json.dumps(r).encode())
    rc, lines = ingest(spark, broker, tmp_path, topic, primary_keys=("id",), bucket=1)
    assert rc == 0, lines
    main = ps.Catalog(str(tmp_path / "wh")).get_table("db.t")
    main.create_tag("before")
    main.create_branch("staging", tag="before")
    second = keyed_messages(200, 50, seed=6, start=300)
    produce(broker, topic, second, lambda r: json.dumps(r).encode())
    cfg = IngestConfig(bootstrap_servers=broker.bootstrap, warehouse=str(tmp_path / "wh"),
                       table="db.t$branch_staging", topics=(topic,), trigger="available-now",
                       checkpoint=str(tmp_path / "ckpt-staging"), primary_keys=("id",))
    lines = []
    assert run_ingest(spark, cfg, lines.append) == 0, lines
    staged = ps.Catalog(str(tmp_path / "wh")).get_table("db.t$branch_staging")
    assert table_state(staged.to_arrow()) == model_of(first + second)  # the branch read the topic from the start
    assert table_state(ps.Catalog(str(tmp_path / "wh")).get_table("db.t").to_arrow()) == model_of(first)
    main.fast_forward("staging")
    assert table_state(ps.Catalog(str(tmp_path / "wh")).get_table("db.t").to_arrow()) == model_of(first + second)


def test_avro_and_csv_records(spark, broker, tmp_path):
    avro_schema = {"type": "record", "name": "row", "fields": [
        {"name": "id", "type": "long"}, {"name": "name", "type": ["null", "string"]},
        {"name": "amount", "type": ["null", "double"]}]}
    schema_file = tmp_path / "row.avsc"
    schema_file.write_text(json.dumps(avro_schema))
    parsed = fastavro.parse_schema(avro_schema)

    def avro(row) -> bytes:
        out = io.BytesIO()
        fastavro.schemaless_writer(out, parsed, row)
        return out.getvalue()

    messages = keyed_messages(500, 60, seed=3)
    topic = unique_topic("ingest-avro")
    broker.create_topic(topic)
    produce(broker, topic, messages, avro)
    rc, lines = ingest(spark, broker, tmp_path / "a", topic, format="avro", avro_schema=str(schema_file),
                       primary_keys=("id",), bucket=1, table_options={"deletion-vectors.enabled": "true"})
    assert rc == 0, lines
    t = ps.Catalog(str(tmp_path / "a" / "wh")).get_table("db.t")
    assert t.options.deletion_vectors
    assert table_state(t.to_arrow()) == model_of(messages)
    assert table_state(pypaimon_read(str(tmp_path / "a" / "wh"), "db.t")) == model_of(messages)

    topic = unique_topic("ingest-csv")
    broker.create_topic(topic)
    produce(broker, topic, messages, lambda r: f"{r['id']},{r['name']},{r['amount']}".encode())
    rc, lines = ingest(spark, broker, tmp_path / "c", topic, format="csv",
                       schema="id BIGINT, name STRING, amount DOUBLE", primary_keys=("id",), bucket=1)
    assert rc == 0, lines
    assert table_state(ps.Catalog(str(tmp_path / "c" / "wh")).get_table("db.t").to_arrow()) == model_of(messages)


def test_json_objects_fill_a_map_column(spark, broker, tmp_path):
    """A table with a MAP column: every record was a poison record (pyarrow's JSON reader has
    no map type); objects now fill it, tombstones delete, and pypaimon reads the maps back."""
    topic = unique_topic("ingest-map")
    broker.create_topic(topic, partitions=1)
    messages = [(str(i % 40), None if i % 9 == 8 else {"id": i % 40, "tags": {"n": str(i), "even": str(i % 2 == 0)}})
                for i in range(300)]
    produce(broker, topic, messages, lambda r: json.dumps(r).encode())
    rc, lines = ingest(spark, broker, tmp_path, topic, schema="id BIGINT NOT NULL, tags MAP<STRING, STRING>",
                       primary_keys=("id",), bucket=1, table_options={"deletion-vectors.enabled": "true"})
    assert rc == 0, lines
    expected: dict[int, list] = {}
    for key, row in messages:
        if row is None:
            expected.pop(int(key), None)
        else:
            expected[row["id"]] = list(row["tags"].items())
    table = ps.Catalog(str(tmp_path / "wh")).get_table("db.t")
    assert dict(zip(*table.to_arrow().to_pydict().values())) == expected
    other = pypaimon_read(str(tmp_path / "wh"), "db.t").to_pydict()
    assert {i: sorted(m) for i, m in zip(other["id"], other["tags"])} == {i: sorted(m) for i, m in expected.items()}


def test_undecodable_record_names_topic_partition_offset(spark, broker, tmp_path):
    topic = unique_topic("ingest-bad")
    broker.create_topic(topic)
    p = broker.producer()
    for i, v in enumerate([b'{"id": 1, "v": "a"}', b'{"id": 2, "v": "b"}', b'{"id": "x", "v": oops}']):
        p.send(topic, key=str(i).encode(), value=v, partition=0)
    p.flush()
    rc, lines = ingest(spark, broker, tmp_path, topic, schema="id BIGINT, v STRING", primary_keys=("id",), bucket=1)
    assert rc == 1
    assert lines[-1].startswith(f"error: ingestion failed: DecodeError: record topic={topic} partition=0 offset=2 "
                                "is not valid JSON"), lines[-1]
    assert ps.Catalog(str(tmp_path / "wh")).get_table("db.t").to_arrow().num_rows == 0


def test_cli_ingest_through_spark_kafka_connector(broker, tmp_path):
    """The same command on Spark's own format("kafka") (spark-sql-kafka-0-10 on the classpath)."""
    jars = ":".join(connector_jars())
    topic = unique_topic("ingest-spark-kafka")
    broker.create_topic(topic, partitions=2)
    messages = keyed_messages(800, 100, seed=4)
    produce(broker, topic, messages, lambda r: json.dumps(r).encode())
    wh = str(tmp_path / "wh")
    cmd = [sys.executable, "-c", "import sys; from paimon_streaming.cli import main; sys.exit(main())", "ingest",
           "--bootstrap-servers", broker.bootstrap, "--topic", topic, "--warehouse", wh, "--table", "db.t",
           "--primary-key", "id", "--bucket", "2", "--source", "kafka", "--trigger", "available-now",
           "--master", "local[2]", "--conf", f"spark.driver.extraClassPath={jars}",
           "--conf", f"spark.executor.extraClassPath={jars}", "--conf", "spark.sql.shuffle.partitions=2"]
    proc = subprocess.run(cmd, env=dict(os.environ, **spark_env()), capture_output=True, text=True, timeout=600)
    assert proc.returncode == 0, proc.stdout[-3000:] + proc.stderr[-3000:]
    assert "source kafka)" in proc.stdout, proc.stdout
    assert table_state(ps.Catalog(wh).get_table("db.t").to_arrow()) == model_of(messages)


def test_the_error_line_shows_any_paimon_error_of_a_failed_batch():
    """A PaimonError other than the five decoding/option ones (a first-row table refusing a
    tombstone) was shown as Py4J's 'An exception was raised by the Python Proxy...' line; the
    error line shows the newest PaimonError of the traceback, qualified or bare, else the first line."""
    from paimon_streaming.sinks.ingest import failure_summary
    proxy = ("[FOREACH_BATCH_USER_FUNCTION_ERROR] An error occurred in the user provided function in foreach batch "
             "sink. Reason: An exception was raised by the Python Proxy. Return Message: Traceback (most recent call "
             "last):\n  File \"/x/commit.py\", line 9, in check\n    raise PaimonError(\n"
             "paimon_streaming.errors.PaimonError: merge-engine 'first-row' cannot accept -U/-D rows\n"
             "py4j.protocol.Py4JJavaError: An error occurred while calling o71.toArrow.\n: java.lang.Error: x\n")
    assert failure_summary(proxy) == "PaimonError: merge-engine 'first-row' cannot accept -U/-D rows"
    assert failure_summary("Traceback:\npaimon_streaming.sources.kafka_offsets.KafkaSourceError: gone\n"
                           "paimon_streaming.errors.CommitConflictError: lost the race\n") == \
        "CommitConflictError: lost the race"
    assert failure_summary("Traceback:\nSnapshotExpiredError: snapshot 3 expired\nValueError: v\n") == \
        "SnapshotExpiredError: snapshot 3 expired"
    assert failure_summary("Job aborted.\nValueError: no\nmy.pkg.InvalidOptionError: not ours") == "Job aborted."


def records(keys: list, values: list, topic: str = "t") -> pa.RecordBatch:
    n = len(values)
    return pa.RecordBatch.from_pydict({
        "key": pa.array(keys, pa.binary()), "value": pa.array(values, pa.binary()), "topic": [topic] * n,
        "partition": pa.array([1] * n, pa.int32()), "offset": pa.array(range(100, 100 + n), pa.int64())})


def test_decoder_composite_json_keys_order_and_errors():
    from paimon_streaming.sinks.decoders import DecodeError, Decoder
    schema = pa.schema([pa.field("shop", pa.string(), False), pa.field("id", pa.int64(), False),
                        pa.field("qty", pa.int32())])
    with pytest.raises(DecodeError, match="needs JSON keys"):
        Decoder("json", schema, ("shop", "id"))
    d = Decoder("json", schema, ("shop", "id"), key_format="json")
    out = d.decode(records([b'{"shop":"a","id":1}', b'{"shop":"a","id":1}', b'{"id":2,"shop":"b"}', b"x"],
                           [b'{"shop":"a","id":1,"qty":3,"extra":true}', None, None, b'{"shop":"a","id":1}']))
    assert out.to_pylist() == [{"shop": "a", "id": 1, "qty": 3, "_kind": "+I"},
                               {"shop": "a", "id": 1, "qty": None, "_kind": "-D"},
                               {"shop": "b", "id": 2, "qty": None, "_kind": "-D"},
                               {"shop": "a", "id": 1, "qty": None, "_kind": "+I"}]
    with pytest.raises(DecodeError, match="topic=t partition=1 offset=101 has neither a key nor a value"):
        d.decode(records([b'{"shop":"a","id":1}', None], [b'{"shop":"a","id":1}', None]))
    with pytest.raises(DecodeError, match="offset=100 is not valid JSON key"):
        d.decode(records([b"not json"], [None]))
    # Append tables (no primary key): tombstones delete nothing and are dropped.
    a = Decoder("json", schema)
    assert a.decode(records([b"k", b"k"], [b'{"shop":"a","id":1}', None])).num_rows == 1
    with pytest.raises(DecodeError, match="unknown format"):
        Decoder("xml", schema)


def test_decoder_settings_that_cannot_work_are_refused_by_name():
    """Each Decoder setting it cannot honour: a DecodeError naming it and what it takes."""
    from paimon_streaming.sinks.decoders import DecodeError, Decoder
    from paimon_streaming.types import VARIANT_ARROW
    schema = pa.schema([pa.field("id", pa.int64(), False), ("v", pa.string())])
    for make, error in [
            (lambda: Decoder("json", schema, on_error="ignore"), "unknown on-error mode 'ignore'; use one of fail"),
            (lambda: Decoder("avro", schema), "format avro needs the writer schema"),
            (lambda: Decoder("debezium-json", schema, ("id",), decimal_handling="exact"),
             "unknown decimal handling 'exact'; use one of precise"),
            (lambda: Decoder("json", schema, ("id",), key_format="protobuf"), "unknown key format 'protobuf'"),
            (lambda: Decoder("json", pa.schema([("id", pa.int64()), ("r", pa.struct([("doc", VARIANT_ARROW)]))])),
             r"column\(s\) \['r'\] hold a VARIANT inside a ROW, ARRAY or MAP")]:
        with pytest.raises(DecodeError, match=error):
            make()


def test_settings_of_a_new_table_differing_from_an_existing_ones_are_refused(tmp_path):
    """--partition-key, --bucket and --option were silently ignored for an existing table (a
    different --primary-key was refused): each is refused naming the table's value; a setting
    the table has (also as Paimon's default, or spelled otherwise) is fine."""
    from paimon_streaming.sinks.ingest import ensure_table
    ps.Catalog(str(tmp_path)).create_table("db.t", pa.schema([pa.field("id", pa.int64(), False), ("dt", pa.string())]),
                                           primary_keys=["id"], options={"bucket": "2"})

    def check(**given):
        cfg = IngestConfig(bootstrap_servers="h:1", warehouse=str(tmp_path), table="db.t", topics=("t",), **given)
        return ensure_table(None, cfg, lambda line: None)
    for given, match in [({"partition_keys": ("dt",)}, r"partition keys \[\], not \['dt'\]"),
                         ({"bucket": 8}, "bucket 2, not 8"),
                         ({"table_options": {"deletion-vectors.enabled": "true"}},
                          "option deletion-vectors.enabled = false, not true"),
                         ({"table_options": {"my.key": "x"}}, "option my.key = unset, not x"),
                         ({"primary_keys": ("dt",)}, r"primary key \['id'\], not \['dt'\]")]:
        with pytest.raises(InvalidOptionError, match=f"table db.t exists with {match}"):
            check(**given)
    assert check(primary_keys=("id",), bucket=2, table_options={"deletion-vectors.enabled": "false",
                                                                "bucket": "2", "changelog-producer": "none"})


def test_a_schema_an_existing_table_does_not_hold_is_refused(spark, tmp_path):
    """--schema for an existing table was silently ignored: a column the table lacks or holds in
    a type that does not take the given one is refused naming them; the table's own columns,
    and those schema evolution made of them (more columns, wider types, ROWs with more
    fields), are fine, so the command that created the table reruns."""
    from paimon_streaming.sinks.ingest import ensure_table
    ps.Catalog(str(tmp_path)).create_table("db.t", pa.schema([
        pa.field("id", pa.int64(), False), ("v", pa.string()), ("n", pa.int32()),
        ("r", pa.struct([("a", pa.int64()), ("b", pa.string())])), ("added", pa.float64())]),
        primary_keys=["id"], options={"bucket": "1"})

    def check(schema: str):
        cfg = IngestConfig(bootstrap_servers="h:1", warehouse=str(tmp_path), table="db.t", topics=("t",),
                           schema=schema)
        return ensure_table(spark, cfg, lambda line: None)
    with pytest.raises(InvalidOptionError, match=r"table db.t exists with column\(s\) v STRING, no extra, not "
                                                 r"v INT, extra DOUBLE of --schema: .*drop the flag"):
        check("id BIGINT, v INT, extra DOUBLE")
    for schema, match in [("id BIGINT, n BIGINT", "n INT, not n BIGINT"),
                          ("id BIGINT, r STRUCT<a: BIGINT, c: INT>", r"r ROW<a BIGINT, b STRING>, not r ROW<a BIGINT, c INT>")]:
        with pytest.raises(InvalidOptionError, match=match):
            check(schema)
    for schema in ("id BIGINT, v STRING, n INT, r STRUCT<a: BIGINT, b: STRING>, added DOUBLE",
                   "id BIGINT NOT NULL, v STRING, n SMALLINT, r STRUCT<a: INT>"):
        assert check(schema).schema.field_names == ["id", "v", "n", "r", "added"]


def test_a_missing_topic_is_refused_before_the_table_is_created(broker, tmp_path):
    from paimon_streaming.sinks.ingest import ensure_table
    from paimon_streaming.sources.kafka_offsets import KafkaSourceError
    schema_file = tmp_path / "row.avsc"
    schema_file.write_text(json.dumps({"type": "record", "name": "row", "fields": [{"name": "id", "type": "long"}]}))
    topic = unique_topic("no-such-topic")
    for given in ({"format": "avro", "avro_schema": str(schema_file)}, {"format": "json"}):
        cfg = IngestConfig(bootstrap_servers=broker.bootstrap, warehouse=str(tmp_path / "wh"), table="db.t",
                           topics=(topic,), primary_keys=("id",), **given)
        with pytest.raises(KafkaSourceError, match=rf"Kafka topic\(s\) \['{topic}'\] do not exist"):
            ensure_table(None, cfg, lambda line: None)
        assert not ps.Catalog(str(tmp_path / "wh")).table_exists("db.t")


def test_trigger_intervals_as_spark_takes_them_and_bad_ones_refused_up_front(tmp_path):
    """--trigger: 10s, 500ms, 1.5s, 2m, 1min are Spark processing-time intervals; anything else is
    refused when the job is configured, before a table is created or a topic read."""
    from paimon_streaming.sinks.ingest_config import trigger_interval
    assert [trigger_interval(t) for t in ("10s", "500ms", " 1.5 s", "2m", "1min", "30")] == [
        "10 seconds", "500 milliseconds", "1.5 seconds", "2 minutes", "1 minutes", "30 seconds"]
    for bad in ("every minute", "1h", "-5s", "", "1.5m"):
        with pytest.raises(InvalidOptionError, match=f"--trigger must be an interval like .*got '{bad}'"):
            IngestConfig(bootstrap_servers="h:1", warehouse=str(tmp_path), table="db.t", topics=("t",), trigger=bad)
    assert not ps.Catalog(str(tmp_path)).table_exists("db.t")
    IngestConfig(bootstrap_servers="h:1", warehouse=str(tmp_path), table="db.t", topics=("t",), trigger="available-now")


def test_job_settings_that_cannot_work_are_refused_before_a_table_is_created(tmp_path):
    """A --source Spark has not, a key column given twice, a --variant-column that is a key,
    format avro without its writer schema, a --primary-key the new table's columns lack:
    InvalidOptionError naming the setting, and no table is left behind."""
    from paimon_streaming.sinks.ingest import ensure_table
    base = dict(bootstrap_servers="h:1", warehouse=str(tmp_path), table="db.t", topics=("t",))
    with pytest.raises(InvalidOptionError, match="unknown source 'spark-kafka'; use auto, kafka"):
        IngestConfig(**base, source="spark-kafka")
    for flag, given in (("--primary-key", {"primary_keys": ("id", "id")}),
                        ("--partition-key", {"partition_keys": ("dt", "v", "dt")})):
        with pytest.raises(InvalidOptionError, match=f"{flag} .* must not contain duplicate columns"):
            IngestConfig(**base, **given)
    with pytest.raises(InvalidOptionError, match=r"--variant-column \['id'\] cannot be a primary or partition key"):
        IngestConfig(**base, format="json", variant_columns=("id", "doc"), primary_keys=("id",))
    samples = lambda: []  # noqa: E731 - the records are not needed: the settings are refused first
    with pytest.raises(InvalidOptionError, match=r"format avro needs the writer schema \(--avro-schema FILE"):
        ensure_table(None, IngestConfig(**base, format="avro", primary_keys=("id",)), lambda line: None, samples)
    avsc = tmp_path / "row.avsc"
    avsc.write_text(json.dumps({"type": "record", "name": "row", "fields": [{"name": "v", "type": "string"}]}))
    with pytest.raises(InvalidOptionError, match=r"primary key \['id'\] is not a column of \['v'\]"):
        ensure_table(None, IngestConfig(**base, format="avro", avro_schema=str(avsc), primary_keys=("id",)),
                     lambda line: None, samples)
    assert not ps.Catalog(str(tmp_path)).table_exists("db.t")


def test_a_new_tables_json_columns_inferred_from_the_records_that_are_objects():
    """Inferring a new table's columns from sampled JSON records: no record at all, or none that
    is a JSON object, is a DecodeError asking for --schema; with --on-error skip a record that is
    no object is left out of the inference, with fail it is named."""
    from paimon_streaming.sinks.decoders import DecodeError, infer_json_schema
    with pytest.raises(DecodeError, match="the topic has no records yet; pass --schema"):
        infer_json_schema([])
    sample = [b"[1, 2]", b'{"id": 1,\n "v": "a"}', b"7", b'{"id": 2, "w": 1.5}']
    assert infer_json_schema(sample, on_error="skip") == pa.schema(
        [("id", pa.int64()), ("v", pa.string()), ("w", pa.float64())])
    with pytest.raises(DecodeError, match="record at offset 0 is not a JSON object: the new table's columns cannot"):
        infer_json_schema(sample, where=["at offset 0", "1", "2", "3"])
    with pytest.raises(DecodeError, match="no sampled record of the topic is a JSON object; pass --schema"):
        infer_json_schema([b"[1]", b'"text"', b"null"], on_error="skip")


def test_cli_key_value_flags_need_an_equals_sign(monkeypatch, tmp_path, capsys):
    """--option/--conf/--kafka-option take KEY=VALUE: a flag without '=' (or without a key) is
    refused by the argument parser naming it, before anything runs."""
    from change_event_support import ingest_cli
    base = ["--topic", "t", "--warehouse", str(tmp_path), "--table", "db.t"]
    for flag, text in [("--option", "bucket"), ("--conf", "=x"), ("--kafka-option", "")]:
        with pytest.raises(SystemExit):
            ingest_cli(monkeypatch, *base, flag, text)
        assert f"expected KEY=VALUE, got '{text}'" in capsys.readouterr().err
    code, seen = ingest_cli(monkeypatch, *base, "--option", "bucket=2", "--option", "a.b=c=d")
    assert code == 0 and seen[0].table_options == {"bucket": "2", "a.b": "c=d"}


def test_an_existing_tables_options_compared_as_paimon_parses_them(tmp_path):
    """--option on an existing table: a value spelled otherwise but parsed alike is the table's;
    another value of a key Paimon does not define is refused naming the table's value (never
    silently not applied), and a value the option cannot take is refused as no table takes it."""
    from paimon_streaming.sinks.ingest import ensure_table
    ps.Catalog(str(tmp_path)).create_table("db.t", pa.schema([pa.field("id", pa.int64(), False)]), primary_keys=["id"],
                                           options={"bucket": "1", "my.key": "y", "target-file-size": "64 mb"})

    def check(options):
        cfg = IngestConfig(bootstrap_servers="h:1", warehouse=str(tmp_path), table="db.t", topics=("t",),
                           table_options=options)
        return ensure_table(None, cfg, lambda line: None)
    assert check({"deletion-vectors.enabled": "FALSE", "target-file-size": "64mb", "my.key": "y"})
    with pytest.raises(InvalidOptionError, match="table db.t exists with option my.key = y, not z"):
        check({"my.key": "z"})
    for options, match in [({"deletion-vectors.enabled": "maybe"}, "'maybe' for table option 'deletion-vectors.enabled'"),
                           ({"target-file-size": "lots"}, "'lots' for table option 'target-file-size'")]:
        with pytest.raises(InvalidOptionError, match=f"invalid value {match}"):
            check(options)
