"""`paimon-streaming ingest` across schema drift (issue 18): JSON records that gain a field evolve
the table (on by default; with --no-schema-evolution they are an error naming the field, never
dropped), a new Avro writer schema file evolves it the same way, and a SIGKILL right after the
schema change (and at random moments) still leaves every record in the table exactly once."""
from __future__ import annotations

import io
import json
import os
import queue
import random
import re
import signal
import threading
import time

import fastavro

import paimon_streaming as ps
from conftest import pypaimon_read
from kafka_broker import get_broker, unique_topic
from test_ingest import ingest, produce
from test_ingest_crash import start


def drifting_messages(n: int, keys: int, seed: int, coupon_from: int, start: int = 0) -> list[tuple[str, dict | None]]:
    """Upserts and deletes; records from index `coupon_from` on carry a `coupon` field."""
    rng = random.Random(seed)
    out = []
    for i in range(start, start + n):
        k = rng.randrange(keys)
        if rng.random() < 0.1:
            out.append((str(k), None))
            continue
        row = {"id": k, "name": f"n{i}", "amount": i * 0.5}
        if i >= coupon_from:
            row["coupon"] = f"C{i % 7}"
        out.append((str(k), row))
    return out


def model(messages) -> dict[int, tuple]:
    state: dict[int, tuple] = {}
    for key, row in messages:
        if row is None:
            state.pop(int(key), None)
        else:
            state[row["id"]] = (row["name"], row["amount"], row.get("coupon"))
    return state


def state_of(table) -> dict[int, tuple]:
    d = table.to_pydict()
    return {i: (n, a, c) for i, n, a, c in zip(d["id"], d["name"], d["amount"], d["coupon"])}


def test_json_records_gaining_a_field_evolve_the_table(spark, broker, tmp_path):
    topic = unique_topic("drift")
    broker.create_topic(topic, partitions=2)
    messages = drifting_messages(1200, 300, seed=3, coupon_from=700)
    produce(broker, topic, messages[:500], lambda r: json.dumps(r).encode())
    rc, lines = ingest(spark, broker, tmp_path, topic, primary_keys=("id",), bucket=2, max_offsets_per_trigger=400)
    assert rc == 0, lines
    table = ps.Catalog(str(tmp_path / "wh")).get_table("db.t")
    assert "coupon" not in table.schema.field_names
    produce(broker, topic, messages[500:], lambda r: json.dumps(r).encode())
    rc, lines = ingest(spark, broker, tmp_path, topic, primary_keys=("id",), max_offsets_per_trigger=400)
    assert rc == 0, lines
    assert any("evolved to schema 1: added coupon string" in line for line in lines), lines
    counted = [int(m.group(1).replace(",", "")) for m in map(re.compile(r"batch \d+: ([\d,]+) rows").match, lines) if m]
    assert sum(counted) == len(messages) - 500, lines  # a batch decoded again is counted once
    table = ps.Catalog(str(tmp_path / "wh")).get_table("db.t")
    assert table.schema.field_names == ["id", "name", "amount", "coupon"]
    assert state_of(table.to_arrow()) == model(messages)
    assert state_of(pypaimon_read(str(tmp_path / "wh"), "db.t")) == model(messages)


def test_without_schema_evolution_new_fields_are_an_error_naming_them(spark, broker, tmp_path):
    topic = unique_topic("drift-off")
    broker.create_topic(topic)
    produce(broker, topic, [("1", {"id": 1, "name": "a", "amount": 1.0})], lambda r: json.dumps(r).encode())
    rc, lines = ingest(spark, broker, tmp_path, topic, primary_keys=("id",), bucket=1, evolve_schema=False)
    assert rc == 0, lines
    produce(broker, topic, [("2", {"id": 2, "name": "b", "amount": 2.0, "coupon": "X", "vip": True})],
            lambda r: json.dumps(r).encode())
    rc, lines = ingest(spark, broker, tmp_path, topic, primary_keys=("id",), evolve_schema=False)
    assert rc == 1
    assert "SchemaMismatchError" in lines[-1] and "['coupon', 'vip']" in lines[-1] and \
        "--no-schema-evolution" in lines[-1], lines[-1]
    table = ps.Catalog(str(tmp_path / "wh")).get_table("db.t")
    assert table.schema.field_names == ["id", "name", "amount"]
    assert table.to_arrow().column("id").to_pylist() == [1]  # the batch committed nothing


def test_a_new_avro_writer_schema_evolves_the_table(spark, broker, tmp_path):
    v1 = {"type": "record", "name": "row", "fields": [
        {"name": "id", "type": "long"}, {"name": "name", "type": ["null", "string"]},
        {"name": "amount", "type": ["null", "double"]}]}
    v2 = dict(v1, fields=v1["fields"] + [{"name": "coupon", "type": ["null", "string"], "default": None}])
    schema_file = tmp_path / "row.avsc"
    topic = unique_topic("drift-avro")
    broker.create_topic(topic)

    def encoder(schema):
        parsed = fastavro.parse_schema(schema)

        def encode(row) -> bytes:
            out = io.BytesIO()
            fastavro.schemaless_writer(out, parsed, row)
            return out.getvalue()
        return encode
    old = drifting_messages(300, 80, seed=5, coupon_from=10**9)
    schema_file.write_text(json.dumps(v1))
    produce(broker, topic, old, encoder(v1))
    kw = dict(format="avro", avro_schema=str(schema_file), primary_keys=("id",), bucket=1)
    rc, lines = ingest(spark, broker, tmp_path, topic, **kw)
    assert rc == 0, lines
    new = drifting_messages(300, 80, seed=6, coupon_from=0, start=1000)
    schema_file.write_text(json.dumps(v2))  # the producers moved to v2 (a compatible change)
    produce(broker, topic, new, encoder(v2))
    rc, lines = ingest(spark, broker, tmp_path, topic, **kw)
    assert rc == 0, lines
    table = ps.Catalog(str(tmp_path / "wh")).get_table("db.t")
    assert table.schema.field_names == ["id", "name", "amount", "coupon"]
    assert state_of(table.to_arrow()) == model(old + new)


def _lines_of(p) -> queue.Queue:
    """The process's output lines as they come (None at the end), without blocking the test."""
    lines: queue.Queue = queue.Queue()

    def pump() -> None:
        for line in p.stdout:
            lines.put(line)
        lines.put(None)
    threading.Thread(target=pump, daemon=True).start()
    return lines


def test_sigkill_around_the_schema_change_is_exactly_once(tmp_path):
    broker = get_broker()
    topic = unique_topic("drift-crash")
    broker.create_topic(topic, partitions=2)
    rng = random.Random(int(os.environ.get("PAIMON_CRASH_SEED", "7")))
    messages = drifting_messages(1500, 400, seed=9, coupon_from=800)
    produce(broker, topic, messages, lambda r: json.dumps(r).encode())
    wh = str(tmp_path / "wh")
    base = ["--bootstrap-servers", broker.bootstrap, "--topic", topic, "--warehouse", wh, "--table", "db.t",
            "--primary-key", "id", "--bucket", "2", "--option", "deletion-vectors.enabled=true",
            "--schema", "id BIGINT, name STRING, amount DOUBLE",  # as before the field appeared
            "--master", "local[2]", "--conf", "spark.sql.shuffle.partitions=2"]
    outputs = []
    # round 0: killed right after the table evolved (schema committed, the batch's data not yet);
    # round 1: killed at a random moment after a batch (test_ingest_crash.py kills more often)
    for round_ in range(2):
        p = start(base + ["--trigger", "1s", "--max-offsets-per-trigger", "300"])
        lines = _lines_of(p)
        out, deadline, killed = "", time.time() + 240, False
        while time.time() < deadline:
            try:
                line = lines.get(timeout=5)
            except queue.Empty:
                continue
            if line is None:
                break
            out += line
            if (round_ == 0 and " evolved to schema " in line) or (round_ > 0 and line.startswith("batch ")):
                if round_ > 0:
                    time.sleep(rng.uniform(0.0, 1.0))
                p.send_signal(signal.SIGKILL)
                killed = True
                break
        p.wait(timeout=120)
        outputs.append(out)
        assert killed or round_ > 0, f"round {round_}: the table never evolved\n{out[-3000:]}"
        if round_ == 0:
            table = ps.Catalog(wh).get_table("db.t")
            assert "coupon" in table.schema.field_names
    p = start(base + ["--trigger", "available-now"])
    out, _ = p.communicate(timeout=600)
    assert p.returncode == 0, out[-4000:]
    table = ps.Catalog(wh).get_table("db.t")
    expected = model(messages)
    assert state_of(table.to_arrow()) == expected
    assert state_of(pypaimon_read(wh, "db.t")) == expected
    appends = [s.commit_identifier for s in table.snapshots() if s.commit_kind == "APPEND"]
    assert appends == sorted(set(appends)), f"a batch was committed twice: {appends}"
    assert len(table.schema_manager.schema_ids()) == 2  # evolved once, not once per replay
