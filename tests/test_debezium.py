"""Debezium change events (`--format debezium-json`): decoding of every encoding Debezium's
JSON uses, with and without Kafka Connect's schema envelope, and the events that must not be
applied partially; then a real broker and `paimon-streaming ingest` end to end, read by Java."""
from __future__ import annotations

import base64
import contextlib
import datetime as dt
import decimal
import io
import json
import random

import pyarrow as pa
import pytest

from change_event_support import applied, ingest_config, ingest_items, produce, records
from paimon_streaming.sinks.decoders import DecodeError, Decoder

EPOCH = dt.datetime(1970, 1, 1)

# the source table, as a connector describes it: (column, Kafka Connect type, logical name, parameters)
SOURCE = [("id", "int64", None, None), ("name", "string", None, None),
          ("price", "bytes", "org.apache.kafka.connect.data.Decimal", {"scale": "2", "connect.decimal.precision": "10"}),
          ("born", "int32", "io.debezium.time.Date", None),
          ("seen", "int64", "io.debezium.time.MicroTimestamp", None),
          ("saved", "int64", "io.debezium.time.Timestamp", None),
          ("at", "string", "io.debezium.time.ZonedTimestamp", None),
          ("opens", "int64", "io.debezium.time.MicroTime", None),
          ("blob", "bytes", None, None), ("ok", "boolean", None, None), ("score", "float64", None, None)]
TABLE = pa.schema([pa.field("id", pa.int64(), False), ("name", pa.string()), ("price", pa.decimal128(10, 2)),
                   ("born", pa.date32()), ("seen", pa.timestamp("us")), ("saved", pa.timestamp("ms")),
                   ("at", pa.timestamp("us", tz="UTC")), ("opens", pa.time32("ms")), ("blob", pa.binary()),
                   ("ok", pa.bool_()), ("score", pa.float64())])


def wire(column: str, value):
    """A Python value as Debezium's JSON carries the column."""
    if value is None:
        return None
    if isinstance(value, decimal.Decimal):  # Kafka Connect's Decimal (price: scale 2, rating: 3)
        unscaled = int(value.scaleb(2 if column == "price" else 3))
        raw = unscaled.to_bytes(max(1, (unscaled.bit_length() + 8) // 8), "big", signed=True)
        return base64.b64encode(raw).decode()
    if column == "born":
        return (value - EPOCH.date()).days
    if column == "seen":
        return (value - EPOCH) // dt.timedelta(microseconds=1)
    if column == "saved":
        return (value - EPOCH) // dt.timedelta(milliseconds=1)
    if column == "at":
        return value.astimezone(dt.timezone.utc).isoformat().replace("+00:00", "Z")
    if column == "opens":
        return (value.hour * 3600 + value.minute * 60 + value.second) * 1_000_000 + value.microsecond
    if column == "blob":
        return base64.b64encode(value).decode()
    return value


def envelope_schema(source=SOURCE) -> dict:
    def spec(name, type_, logical, params):
        s = {"type": type_, "optional": name != "id", "field": name}
        if logical:
            s.update(name=logical, version=1)
        if params:
            s["parameters"] = params
        return s
    image = {"type": "struct", "optional": True, "name": "dbserver1.shop.items.Value",
             "fields": [spec(*c) for c in source]}
    return {"type": "struct", "optional": False, "name": "dbserver1.shop.items.Envelope", "version": 1,
            "fields": [dict(image, field="before"), dict(image, field="after"),
                       {"type": "struct", "field": "source", "optional": False,
                        "fields": [{"type": "string", "optional": False, "field": "connector"}]},
                       {"type": "string", "optional": False, "field": "op"},
                       {"type": "int64", "optional": True, "field": "ts_ms"}]}


def event(op: str, before: dict | None, after: dict | None, with_schema: bool, source=SOURCE) -> bytes:
    def image(row):
        return None if row is None else {k: wire(k, v) for k, v in row.items()}
    payload = {"before": image(before), "after": image(after),
               "source": {"version": "2.7.0.Final", "connector": "postgresql", "name": "dbserver1",
                          "ts_ms": 1700000000000, "snapshot": "false", "db": "shop", "sequence": None,
                          "schema": "public", "table": "items", "txId": 771, "lsn": 33843472},
               "op": op, "ts_ms": 1700000000123, "transaction": None}
    doc = {"schema": envelope_schema(source), "payload": payload} if with_schema else payload
    return json.dumps(doc).encode()


def random_row(rng: random.Random, key: int, with_time: bool = True) -> dict:
    return {"id": key, "name": rng.choice(["ä", "x y", "", "naïve \"quoted\"", None]),
            "price": decimal.Decimal(rng.randrange(-10**9, 10**9)).scaleb(-2) if rng.random() > 0.1 else None,
            "born": dt.date(1900, 1, 1) + dt.timedelta(days=rng.randrange(70000)),
            "seen": EPOCH + dt.timedelta(microseconds=rng.randrange(-10**15, 4 * 10**15)),
            "saved": EPOCH + dt.timedelta(milliseconds=rng.randrange(0, 4 * 10**12)),
            "at": dt.datetime(2024, 3, 1, tzinfo=dt.timezone.utc) + dt.timedelta(microseconds=rng.randrange(10**13)),
            "opens": (dt.datetime(2000, 1, 1) + dt.timedelta(microseconds=rng.randrange(86_400_000_000))).time()
            if with_time else None,
            "blob": bytes(rng.randrange(256) for _ in range(rng.randrange(5))),
            "ok": rng.random() > 0.5, "score": rng.uniform(-1e6, 1e6)}


def changes(rng: random.Random, n: int, keys: int, with_time: bool = True) -> tuple[list[tuple[str, dict | None, dict | None]], dict]:
    """A source table's history as Debezium events (op, before, after), and its final state."""
    state: dict[int, dict] = {}
    out = []
    for _ in range(n):
        k = rng.randrange(keys)
        if k in state and rng.random() < 0.25:
            out.append(("d", state.pop(k), None))
        elif k in state:
            new = random_row(rng, k, with_time)
            out.append(("u", state[k], new))
            state[k] = new
        else:
            state[k] = random_row(rng, k, with_time)
            out.append((rng.choice("cr"), None, state[k]))
    return out, state


def stored(row: dict) -> dict:
    """What the table keeps of a source row (TIME in milliseconds, as Paimon stores it)."""
    out = dict(row)
    t = out["opens"]
    out["opens"] = None if t is None else t.replace(microsecond=t.microsecond // 1000 * 1000)
    return out


@pytest.mark.parametrize("with_schema", [False, True])
def test_every_encoding_round_trips_in_order(with_schema):
    rng = random.Random(7 + with_schema)
    history, final = changes(rng, 400, 60, with_time=with_schema)
    values = [event(op, b, a, with_schema) for op, b, a in history] + [None]  # + a tombstone
    out = Decoder("debezium-json", TABLE, ("id",)).decode(records(values)).to_pylist()
    assert [r["_kind"] for r in out] == [{"c": "+I", "r": "+I", "u": "+U", "d": "-D"}[op] for op, _, _ in history]
    assert applied(out) == {k: stored(v) for k, v in final.items()}


def test_envelope_names_encodings_the_table_does_not_imply():
    """A DATE column sent as a Kafka Connect Timestamp, decimals as strings, a new column."""
    source = [("id", "int64", None, None), ("price", "string", None, None),
              ("saved", "int64", "org.apache.kafka.connect.data.Timestamp", None),
              ("added", "bytes", "org.apache.kafka.connect.data.Decimal", {"scale": "3", "connect.decimal.precision": "7"}),
              ("added_day", "int32", "io.debezium.time.Date", None)]
    table = pa.schema([pa.field("id", pa.int64(), False), ("price", pa.decimal128(10, 2)), ("saved", pa.timestamp("us"))])
    raw = {"schema": envelope_schema(source),
           "payload": {"op": "c", "before": None, "after": {"id": 1, "price": "12.30", "saved": 1700000000123,
                                                             "added": base64.b64encode(b"\x00\xd4\x31").decode(),
                                                             "added_day": 3}}}
    decoded = Decoder("debezium-json", table, ("id",)).decode_all(records([json.dumps(raw).encode()]))
    assert decoded.rows.to_pylist() == [{"id": 1, "price": decimal.Decimal("12.30"),
                                        "saved": dt.datetime(2023, 11, 14, 22, 13, 20, 123000), "_kind": "+I"}]
    assert decoded.new_fields == pa.schema([("added", pa.decimal128(7, 3)), ("added_day", pa.date32())])


def test_envelopes_paimons_cdc_reads_wide_numeric_and_quoted_values():
    """As Paimon's CDC: a Decimal wider than 38 digits (MySQL's DECIMAL(65, 30)) is a STRING
    column of the decimal's text; Kafka Connect's decimal.format=NUMERIC (a Decimal as a JSON
    number) and Jackson's quoted NaN and infinities in a DOUBLE are read; a new table's columns
    are nullable whatever the source's (an ALTER ... NULL upstream goes on)."""
    from paimon_streaming.sinks import debezium
    source = [("id", "int64", None, None), ("name", "string", None, None),
              ("big", "bytes", "org.apache.kafka.connect.data.Decimal", {"scale": "30", "connect.decimal.precision": "65"}),
              ("amt", "bytes", "org.apache.kafka.connect.data.Decimal", {"scale": "2", "connect.decimal.precision": "10"}),
              ("x", "double", None, None)]
    schema = envelope_schema(source)
    for image in schema["fields"][:2]:
        image["fields"][1]["optional"] = False
    table = debezium.table_schema_of(schema)
    assert table == pa.schema([("id", pa.int64()), ("name", pa.string()), ("big", pa.string()),
                               ("amt", pa.decimal128(10, 2)), ("x", pa.float64())])
    table = table.set(0, table.field(0).with_nullable(False))

    def value(after: dict) -> bytes:
        return json.dumps({"schema": schema, "payload": {"op": "c", "before": None, "after": after}}).encode()
    unscaled = -12345678901234567890123456789012345678901234567890
    decoded = Decoder("debezium-json", table, ("id",)).decode(records([
        value({"id": 1, "name": None, "x": "NaN",
               "big": base64.b64encode(unscaled.to_bytes(21, "big", signed=True)).decode(),
               "amt": base64.b64encode(b"\x04\xe2").decode()}),
        value({"id": 2, "name": "a", "x": "-Infinity", "big": 12.5, "amt": 12.5}),
        value({"id": 3, "name": "b", "x": 1.5, "big": 1e-7, "amt": None})])).to_pylist()
    assert [(r["big"], r["amt"], r["x"]) for r in decoded[1:]] == [
        ("12.500000000000000000000000000000", decimal.Decimal("12.50"), float("-inf")),
        ("1.00000000000000000000000E-7", None, 1.5)]  # BigDecimal's text, at the source's scale
    assert decoded[0]["big"] == "-12345678901234567890.123456789012345678901234567890"
    assert decoded[0]["amt"] == decimal.Decimal("12.50") and decoded[0]["x"] != decoded[0]["x"]
    with pytest.raises(DecodeError, match="column 'amt' has a number with more digits than the scale"):
        Decoder("debezium-json", table, ("id",)).decode(records([value({"id": 4, "amt": 1.234})]))


def test_new_fields_without_an_envelope_are_reported_as_inferred():
    table = pa.schema([pa.field("id", pa.int64(), False)])
    value = json.dumps({"op": "u", "before": None, "after": {"id": 1, "note": "x"}}).encode()
    decoded = Decoder("debezium-json", table, ("id",)).decode_all(records([value]))
    assert decoded.new_fields == pa.schema([("note", pa.string())])


@pytest.mark.parametrize("handling,value,expected", [
    ("string", "12.30", decimal.Decimal("12.30")), ("double", 12.3, decimal.Decimal("12.30")),
    ("precise", base64.b64encode((-1230).to_bytes(2, "big", signed=True)).decode(), decimal.Decimal("-12.30"))])
def test_decimal_handling_modes_without_an_envelope(handling, value, expected):
    table = pa.schema([pa.field("id", pa.int64(), False), ("price", pa.decimal128(10, 2))])
    value = json.dumps({"op": "c", "after": {"id": 1, "price": value}}).encode()
    rows = Decoder("debezium-json", table, ("id",), decimal_handling=handling).decode(records([value]))
    assert rows.column("price").to_pylist() == [expected]


@pytest.mark.parametrize("payload,error", [
    ({"op": "t", "before": None, "after": None}, "a truncate event is not a row change"),
    ({"op": "m", "before": None, "after": None}, "a message event is not a row change"),
    ({"op": "d", "before": None, "after": None}, "a 'd' event without its before image"),
    ({"op": "u", "before": {"id": 1}, "after": None}, "a 'u' event without its after image"),
    ({"op": "c", "after": {"id": 1, "price": 12.345}}, "column 'price'.*more digits than the scale"),
    ({"op": "c", "after": {"id": 1, "price": 123456789.0}}, "column 'price'.*does not fit"),
    ({"op": "c", "after": {"id": 1, "saved": "2024-01-01"}}, "Debezium JSON"),
    ({"op": "c", "after": {"id": None}}, "null primary key"),
    ({"op": "c", "after": {"id": 1, "opens": 3600000}}, "column 'opens' is a TIME without the schema envelope"),
])
def test_events_that_cannot_be_applied_are_refused_by_record(payload, error):
    table = pa.schema([pa.field("id", pa.int64(), False), ("price", pa.decimal128(10, 2)), ("saved", pa.timestamp("us")),
                       ("opens", pa.time32("ms"))])
    good = json.dumps({"op": "c", "after": {"id": 2}}).encode()
    values = [good, json.dumps(payload).encode(), good]
    with pytest.raises(DecodeError, match=f"offset=1 .*{error}"):
        Decoder("debezium-json", table, ("id",), decimal_handling="double").decode(records(values))
    skipped = Decoder("debezium-json", table, ("id",), decimal_handling="double", on_error="skip").decode_all(records(values))
    assert skipped.rows.column("id").to_pylist() == [2, 2]
    assert skipped.rejected.column("offset").to_pylist() == [1]


def test_declared_precision_widens_and_append_tables_are_refused():
    table = pa.schema([pa.field("id", pa.int64(), False), ("saved", pa.timestamp("ms"))])
    micros = json.dumps({"schema": envelope_schema([("id", "int64", None, None),
                                                    ("saved", "int64", "io.debezium.time.MicroTimestamp", None)]),
                         "payload": {"op": "c", "after": {"id": 1, "saved": 1700000000123456}}}).encode()
    # the envelope declares microseconds: a wider column (test_a_finer_timestamp_or_time_upstream_widens_the_table)
    assert Decoder("debezium-json", table, ("id",)).decode_all(records([micros])).new_fields == \
        pa.schema([("saved", pa.timestamp("us"))])
    bare = json.dumps({"op": "c", "after": {"id": 1, "saved": 1700000000123}}).encode()  # no envelope: milliseconds
    assert Decoder("debezium-json", table, ("id",)).decode(records([bare])).column("saved").to_pylist() == \
        [dt.datetime(2023, 11, 14, 22, 13, 20, 123000)]
    with pytest.raises(DecodeError, match="needs a primary-key table"):
        Decoder("debezium-json", table)


def test_tombstones_alone_and_schema_groups_keep_order():
    d = Decoder("debezium-json", TABLE, ("id",))
    assert d.decode(records([None, None])).num_rows == 0
    rng = random.Random(3)
    history, final = changes(rng, 60, 10, with_time=False)
    values = [event(op, b, a, with_schema=i % 3 == 0) for i, (op, b, a) in enumerate(history)]
    out = d.decode(records(values)).to_pylist()
    assert applied(out) == {k: stored(v) for k, v in final.items()}


def test_ingest_change_events_end_to_end_with_a_column_added_upstream(spark, broker, tmp_path):
    """A table created from the events' schema envelope, inserts/updates/deletes applied in
    order over two partitions, a column the source adds mid-stream, Java reading the result."""
    import paimon_streaming as ps
    from java_oracle import get_oracle
    from kafka_broker import unique_topic
    from paimon_streaming.sinks.ingest import IngestConfig, run_ingest

    topic = unique_topic("debezium")
    broker.create_topic(topic, partitions=2)
    rng = random.Random(11)
    history, final = changes(rng, 1500, 300)

    def send(events, source=SOURCE):
        records = []
        for op, before, after in events:
            key = json.dumps({"id": (after or before)["id"]}).encode()
            records.append((key, event(op, before, after, True, source)))
            if op == "d":
                records.append((key, None))  # Debezium's tombstone
        produce(broker, topic, records)

    def ingest():
        cfg = IngestConfig(bootstrap_servers=broker.bootstrap, warehouse=str(tmp_path / "wh"), table="db.items",
                           topics=(topic,), format="debezium-json", bucket=2,
                           table_options={"deletion-vectors.enabled": "true"}, trigger="available-now",
                           checkpoint=str(tmp_path / "ckpt"), max_offsets_per_trigger=700)
        lines: list[str] = []
        assert run_ingest(spark, cfg, lines.append) == 0, lines
        return lines

    send(history)
    lines = ingest()
    assert any("from the first change event's schema envelope" in line for line in lines), lines
    assert any("primary key ['id'] from the change events" in line for line in lines), lines
    table = ps.Catalog(str(tmp_path / "wh")).get_table("db.items")
    assert [f.name for f in table.schema.fields] == [c[0] for c in SOURCE]
    expected = sorted((stored(v) for v in final.values()), key=lambda r: r["id"])
    assert table.to_arrow().sort_by("id").to_pylist() == expected

    # The source table gains a column: its events carry it, the table evolves, old rows read null.
    widened = SOURCE + [("rating", "bytes", "org.apache.kafka.connect.data.Decimal",
                         {"scale": "3", "connect.decimal.precision": "7"})]
    more = []
    for k in sorted(final)[:50]:
        new = dict(random_row(rng, k), rating=decimal.Decimal(rng.randrange(-10**6, 10**6)).scaleb(-3))
        more.append(("u", final[k], new))
        final[k] = new
    more.append(("d", final.pop(sorted(final)[-1]), None))
    send(more, widened)
    lines = ingest()
    assert any("added rating decimal128(7, 3)" in line for line in lines), lines
    ours = ps.Catalog(str(tmp_path / "wh")).get_table("db.items").to_arrow().sort_by("id").to_pylist()
    expected = sorted(({**stored(v), "rating": v.get("rating")} for v in final.values()), key=lambda r: r["id"])
    assert ours == expected
    java = sorted(get_oracle().read(str(tmp_path / "wh" / "db.db" / "items")), key=lambda r: r["id"])
    assert java == ours


def test_cli_passes_the_format_and_decimal_handling(monkeypatch, tmp_path):
    cfg = ingest_config(monkeypatch, tmp_path, "--format", "debezium-json", "--decimal-handling", "string")
    assert (cfg.format, cfg.decimal_handling, cfg.primary_keys) == ("debezium-json", "string", ("id",))


# ---- debezium-avro: the same events through Confluent's AvroConverter and a schema registry ----
_AVRO_TYPES = {"int64": "long", "int32": "int", "string": "string", "bytes": "bytes", "boolean": "boolean",
               "float64": "double"}


def avro_envelope(source=SOURCE) -> dict:
    """A Debezium envelope's Avro schema as Confluent's AvroConverter registers it."""
    def field(name, type_, logical, params):
        t: dict | str = _AVRO_TYPES[type_]
        if logical:
            t = {"type": t, "connect.version": 1, "connect.name": logical}
            if params:
                t.update({"connect.parameters": params, "scale": int(params["scale"]),
                          "precision": int(params["connect.decimal.precision"]), "logicalType": "decimal"})
        return {"name": name, "type": t} if name == "id" else {"name": name, "type": ["null", t], "default": None}
    value = {"type": "record", "name": "Value", "fields": [field(*c) for c in source],
             "connect.name": "dbserver1.shop.items.Value"}
    return {"type": "record", "name": "Envelope", "namespace": "dbserver1.shop.items",
            "connect.name": "dbserver1.shop.items.Envelope", "fields": [
                {"name": "before", "type": ["null", value], "default": None},
                {"name": "after", "type": ["null", "Value"], "default": None},
                {"name": "source", "type": {"type": "record", "name": "Source", "namespace": "io.debezium.connector.postgresql",
                                            "fields": [{"name": "connector", "type": "string"},
                                                       {"name": "lsn", "type": ["null", "long"], "default": None}]}},
                {"name": "op", "type": "string"}, {"name": "ts_ms", "type": ["null", "long"], "default": None}]}


def avro_event(sid: int, schema: dict, op: str, before, after) -> bytes:
    """Bytes as the AvroConverter writes them (decimals and bytes raw, not base64)."""
    import fastavro

    from paimon_streaming.sinks import debezium, schema_registry

    def image(row):
        if row is None:
            return None
        out = {k: wire(k, v) for k, v in row.items()}
        for k, v in row.items():
            if isinstance(v, (bytes, decimal.Decimal)) and v is not None:
                out[k] = base64.b64decode(out[k])
        return out
    body = io.BytesIO()
    fastavro.schemaless_writer(body, fastavro.parse_schema(debezium.without_logical_types(schema)),
                               {"before": image(before), "after": image(after), "op": op, "ts_ms": 1,
                                "source": {"connector": "postgresql", "lsn": 42}})
    return schema_registry.frame(sid, body.getvalue())


@pytest.fixture
def registry():
    from test_schema_registry import Registry

    from paimon_streaming.sinks import schema_registry
    schema_registry._cache.clear()
    widened = SOURCE + [("rating", "bytes", "org.apache.kafka.connect.data.Decimal",
                         {"scale": "3", "connect.decimal.precision": "7"})]
    key = {"type": "record", "name": "Key", "namespace": "dbserver1.shop.items", "fields": [{"name": "id", "type": "long"}]}
    r = Registry({3: avro_envelope(), 4: avro_envelope(widened), 5: key})
    r.key = key
    r.widened = widened
    yield r
    r.close()


def test_debezium_avro_every_encoding_and_a_new_column(registry):
    rng = random.Random(21)
    history, final = changes(rng, 300, 40)
    values = [avro_event(3, avro_envelope(), op, b, a) for op, b, a in history]
    k = sorted(final)[0]
    new = dict(random_row(rng, k), rating=decimal.Decimal("-12.345"))
    values.append(avro_event(4, avro_envelope(registry.widened), "u", final[k], new))
    final[k] = new
    decoder = Decoder("debezium-avro", TABLE, ("id",), schema_registry=registry.url)
    decoded = decoder.decode_all(records(values + [None]))
    assert decoded.new_fields == pa.schema([("rating", pa.decimal128(7, 3))])
    widened = Decoder("debezium-avro", TABLE.append(pa.field("rating", pa.decimal128(7, 3))), ("id",),
                      schema_registry=registry.url).decode(records(values))
    assert applied(widened.to_pylist()) == {k: {**stored(v), "rating": v.get("rating")} for k, v in final.items()}
    with pytest.raises(DecodeError, match="needs the schema registry"):
        Decoder("debezium-avro", TABLE, ("id",))
    with pytest.raises(DecodeError, match="offset=1 is a Debezium change event that does not fit the table: "
                                          "ValueError: a truncate event"):
        decoder.decode(records([values[0], avro_event(3, avro_envelope(), "t", None, None)]))


def test_ingest_debezium_avro_end_to_end(spark, broker, registry, tmp_path):
    import fastavro

    from kafka_broker import unique_topic
    from paimon_streaming.sinks import schema_registry

    topic = unique_topic("debezium-avro")
    broker.create_topic(topic, partitions=2)
    history, final = changes(random.Random(12), 600, 120)

    def key(row: dict) -> bytes:
        body = io.BytesIO()
        fastavro.schemaless_writer(body, fastavro.parse_schema(registry.key), {"id": row["id"]})
        return schema_registry.frame(5, body.getvalue())
    produce(broker, topic, [(key(after or before), avro_event(3, avro_envelope(), op, before, after))
                            for op, before, after in history])
    ours, java, _ = ingest_items(spark, broker, tmp_path, topic, format="debezium-avro", schema_registry=registry.url)
    assert ours == sorted((stored(v) for v in final.values()), key=lambda r: r["id"])
    assert java == ours


def test_a_row_moving_between_partitions_is_deleted_from_the_old_one(tmp_path):
    """The source's key is `id`; the table's is (region, id), partitioned by region: an update
    that changes the region deletes the old (region, id), as Paimon's own CDC does."""
    import paimon_streaming as ps
    table_schema = pa.schema([pa.field("region", pa.string(), False), pa.field("id", pa.int64(), False),
                              ("qty", pa.int32())])
    events = [{"op": "c", "after": {"region": "eu", "id": 1, "qty": 1}},
              {"op": "c", "after": {"region": "eu", "id": 2, "qty": 1}},
              {"op": "u", "before": {"region": "eu", "id": 1, "qty": 1}, "after": {"region": "us", "id": 1, "qty": 2}},
              {"op": "u", "before": {"region": "eu", "id": 2, "qty": 1}, "after": {"region": "eu", "id": 2, "qty": 3}}]
    d = Decoder("debezium-json", table_schema, ("region", "id"), key_format="json", partition_keys=("region",))
    rows = d.decode(records([json.dumps(e).encode() for e in events]))
    assert [(r["region"], r["id"], r["_kind"]) for r in rows.to_pylist()] == [
        ("eu", 1, "+I"), ("eu", 2, "+I"), ("eu", 1, "-D"), ("us", 1, "+I"), ("eu", 2, "+U")]
    table = ps.Catalog(str(tmp_path)).create_table("db.t", table_schema, primary_keys=["region", "id"],
                                                   partition_keys=["region"], options={"bucket": "1"})
    table.write_arrow(pa.Table.from_batches([rows]), row_kind_column="_kind")
    assert sorted(table.to_arrow().to_pylist(), key=lambda r: r["id"]) == [
        {"region": "us", "id": 1, "qty": 2}, {"region": "eu", "id": 2, "qty": 3}]
    no_before = json.dumps({"op": "u", "before": None, "after": {"region": "us", "id": 1, "qty": 2}}).encode()
    with pytest.raises(DecodeError, match="an update without its before image, into a partitioned table"):
        d.decode(records([no_before]))
    unpartitioned = Decoder("debezium-json", table_schema, ("region", "id"), key_format="json")
    assert unpartitioned.decode(records([no_before])).column("_kind").to_pylist() == ["+U"]


def test_values_debezium_did_not_have_are_refused_or_left_to_partial_update():
    table = pa.schema([pa.field("id", pa.int64(), False), ("doc", pa.string()), ("blob", pa.binary())])
    events = [{"op": "c", "after": {"id": 1, "doc": "long text", "blob": base64.b64encode(b"x").decode()}},
              {"op": "u", "before": None, "after": {"id": 1, "doc": "__debezium_unavailable_value", "blob": None}}]
    values = [json.dumps(e).encode() for e in events]
    with pytest.raises(DecodeError, match="offset=1 .*column 'doc' is '__debezium_unavailable_value'.*REPLICA IDENTITY FULL"):
        Decoder("debezium-json", table, ("id",)).decode(records(values))
    rows = Decoder("debezium-json", table, ("id",), partial_update=True).decode(records(values))
    assert rows.column("doc").to_pylist() == ["long text", None]
    toasted_bytes = {"op": "u", "after": {"id": 1, "blob": base64.b64encode(b"__debezium_unavailable_value").decode()}}
    with pytest.raises(DecodeError, match="column 'blob' is '__debezium_unavailable_value'"):
        Decoder("debezium-json", table, ("id",)).decode(records([json.dumps(toasted_bytes).encode()]))


def test_a_moved_row_and_a_poison_record_in_one_chunk():
    table_schema = pa.schema([pa.field("region", pa.string(), False), pa.field("id", pa.int64(), False)])
    events = [{"op": "u", "before": {"region": "eu", "id": 1}, "after": {"region": "us", "id": 1}},
              {"op": "c", "after": {"region": None, "id": 2}},
              {"op": "c", "after": {"region": "eu", "id": 3}}]
    d = Decoder("debezium-json", table_schema, ("region", "id"), key_format="json", partition_keys=("region",),
                on_error="skip")
    decoded = d.decode_all(records([json.dumps(e).encode() for e in events]))
    assert [(r["region"], r["id"], r["_kind"]) for r in decoded.rows.to_pylist()] == [
        ("eu", 1, "-D"), ("us", 1, "+I"), ("eu", 3, "+I")]
    assert decoded.rejected.column("offset").to_pylist() == [1]
    assert "null primary key" in decoded.rejected.column("error")[0].as_py()


def test_a_column_widened_upstream_widens_the_table(tmp_path):
    """The source turns `qty INT` into BIGINT and `price DECIMAL(6,2)` into DECIMAL(12,2): the
    envelope declares the wider types, which are reported like new fields (ingestion widens
    the table and decodes the batch again) instead of failing on the first big value."""
    import paimon_streaming as ps
    table = ps.Catalog(str(tmp_path)).create_table(
        "db.t", pa.schema([pa.field("id", pa.int64(), False), ("qty", pa.int32()), ("price", pa.decimal128(6, 2))]),
        primary_keys=["id"], options={"bucket": "1"})
    source = [("id", "int64", None, None), ("qty", "int64", None, None),
              ("price", "bytes", "org.apache.kafka.connect.data.Decimal", {"scale": "2", "connect.decimal.precision": "12"})]
    big = {"schema": envelope_schema(source), "payload": {"op": "c", "after": {
        "id": 1, "qty": 2**40, "price": base64.b64encode((10**10).to_bytes(5, "big", signed=True)).decode()}}}
    values = records([json.dumps(big).encode()])
    decoded = Decoder("debezium-json", table.schema.arrow_schema(), ("id",)).decode_all(values)
    assert decoded.new_fields == pa.schema([("qty", pa.int64()), ("price", pa.decimal128(12, 2))])
    table.update_schema().union_by_name(decoded.new_fields).commit()
    table.refresh()
    rows = Decoder("debezium-json", table.schema.arrow_schema(), ("id",)).decode(values)
    table.write_arrow(pa.Table.from_batches([rows]), row_kind_column="_kind")
    assert table.to_arrow().to_pylist() == [{"id": 1, "qty": 2**40, "price": decimal.Decimal("100000000.00")}]
    narrower = {"schema": envelope_schema(source[:2]), "payload": {"op": "c", "after": {"id": 2, "qty": 5}}}
    assert len(Decoder("debezium-json", table.schema.arrow_schema(), ("id",)).decode_all(
        records([json.dumps(narrower).encode()])).new_fields) == 0


def test_a_finer_timestamp_or_time_upstream_widens_the_table(tmp_path):
    """DATETIME(3) -> DATETIME(6) upstream turns Debezium's Timestamp into MicroTimestamp: the
    table's TIMESTAMP(3) widens, as Paimon's CDC widens it; before, every event with
    sub-millisecond values stopped the job (or was dead-lettered). TIME stays TIME(3): Paimon
    stores milliseconds of the day, and the microseconds are cut off as before."""
    import paimon_streaming as ps
    table = ps.Catalog(str(tmp_path)).create_table(
        "db.t", pa.schema([pa.field("id", pa.int64(), False), ("ts", pa.timestamp("ms")), ("t", pa.time32("ms"))]),
        primary_keys=["id"], options={"bucket": "1"})
    source = [("id", "int64", None, None), ("ts", "int64", "io.debezium.time.MicroTimestamp", None),
              ("t", "int64", "io.debezium.time.MicroTime", None)]
    event = {"schema": envelope_schema(source), "payload": {"op": "c", "after": {
        "id": 1, "ts": 1_700_000_000_123_456, "t": 3_723_000_007}}}
    values = records([json.dumps(event).encode()])
    decoded = Decoder("debezium-json", table.schema.arrow_schema(), ("id",)).decode_all(values)
    assert decoded.new_fields == pa.schema([("ts", pa.timestamp("us"))])
    table.update_schema().union_by_name(decoded.new_fields).commit()
    table.refresh()
    assert [str(f.type) for f in table.schema.fields[1:]] == ["TIMESTAMP(6)", "TIME(3)"]
    rows = Decoder("debezium-json", table.schema.arrow_schema(), ("id",)).decode(values)
    table.write_arrow(pa.Table.from_batches([rows]), row_kind_column="_kind")
    assert table.to_arrow().to_pylist() == [{"id": 1, "ts": dt.datetime(2023, 11, 14, 22, 13, 20, 123456),
                                             "t": dt.time(1, 2, 3)}]


def test_envelopes_split_as_a_plain_reading_would_split_them():
    """`split_envelopes` (numpy over the values' bytes) against a regex over each value alone:
    envelopes with and without whitespace, bare payloads, broken and empty values, slices."""
    import re

    from paimon_streaming.sinks import debezium

    def expected(v: bytes) -> tuple[bytes, bytes | None]:
        key = re.search(rb'"payload"\s*:', v) if re.match(rb'^\s*\{\s*"schema"\s*:', v) else None
        end = v.rstrip().rfind(b"}")
        if key is None or end < key.end():
            return v, None
        schema = re.sub(rb'^\s*\{\s*"schema"\s*:', b"", v[:key.start()]).rstrip().rstrip(b",")
        return v[key.end():end], schema

    rng = random.Random(4)
    for _ in range(400):
        values = []
        for _ in range(rng.randrange(1, 6)):
            payload = json.dumps({"op": "c", "after": {"id": rng.randrange(99), "s": "x" * rng.randrange(30)}})
            schema = json.dumps({"fields": [{"field": "id", "type": rng.choice(["int32", "int64"])}]})
            values.append(rng.choice([
                '{"schema":' + schema + rng.choice([",", ", ", " ,\n "]) + '"payload":' + payload
                + rng.choice(["}", " }", "}\n"]),
                payload, "", "{", '{"schema":1,"payload":', '{"schema": {}, "payload": {}', "x" * rng.randrange(20)]).encode())
        array = pa.array(values, pa.binary())
        if rng.random() < 0.3 and len(values) > 1:
            array, values = array.slice(1), values[1:]
        payloads, groups, schemas = debezium.split_envelopes(array)
        for i, v in enumerate(values):
            payload, schema = expected(v)
            assert payloads[i].as_py() == payload
            assert (schemas[groups[i]] if groups[i] >= 0 else None) == schema


def test_fields_we_do_not_read_may_change_type_between_events():
    """A connector's `source` block (or Maxwell's `ts`) is inferred, not declared: a field of it
    changing type between events must not make the batch undecodable."""
    table = pa.schema([pa.field("id", pa.int64(), False), ("qty", pa.int32())])
    values = [json.dumps({"op": "c", "after": {"id": 1, "qty": 1}, "source": {"lsn": 5}}).encode(),
              json.dumps({"op": "c", "after": {"id": 2, "qty": 2}, "source": {"lsn": "0/16B3748"}}).encode()]
    rows = Decoder("debezium-json", table, ("id",)).decode(records(values))
    assert rows.column("id").to_pylist() == [1, 2]
    maxwell = [json.dumps({"type": "insert", "ts": 1, "data": {"id": 1}}).encode(),
               json.dumps({"type": "insert", "ts": "late", "data": {"id": 2}}).encode()]
    assert Decoder("maxwell-json", table, ("id",)).decode(records(maxwell)).column("id").to_pylist() == [1, 2]


def test_without_schema_evolution_new_and_wider_columns_are_named(tmp_path):
    import paimon_streaming as ps
    from paimon_streaming.errors import SchemaMismatchError
    from paimon_streaming.sinks.ingest import IngestConfig, evolve_table
    table = ps.Catalog(str(tmp_path)).create_table("db.t", pa.schema([pa.field("id", pa.int64(), False),
                                                                      ("qty", pa.int32())]), primary_keys=["id"])
    cfg = IngestConfig(bootstrap_servers="unused", warehouse=str(tmp_path), table="db.t", evolve_schema=False)
    with pytest.raises(SchemaMismatchError, match=r"field\(s\) \['note'\] that table db.t does not have and wider "
                                                  r"types of \(or new fields inside\) \[.qty.\], and "
                                                  r"schema evolution is off"):
        evolve_table(cfg, table, pa.schema([("qty", pa.int64()), ("note", pa.string())]), print)
    lines: list[str] = []
    evolve_table(IngestConfig(bootstrap_servers="unused", warehouse=str(tmp_path), table="db.t"), table,
                 pa.schema([("qty", pa.int64()), ("note", pa.string())]), lines.append)
    assert lines == ["table db.t evolved to schema 1: widened qty int64, added note string"]
    assert [(f.name, str(f.type)) for f in table.schema.fields][1:] == [("qty", "BIGINT"), ("note", "STRING")]


# ---- variable-scale decimals: Postgres NUMERIC without a declared scale ----------------------
_VARIABLE_SCALE = {"type": "struct", "name": "io.debezium.data.VariableScaleDecimal", "version": 1,
                   "doc": "Variable scaled decimal", "fields": [{"type": "int32", "optional": False, "field": "scale"},
                                                                {"type": "bytes", "optional": False, "field": "value"}]}


def _variable_scale(value: decimal.Decimal | None, raw: bool = False) -> dict | None:
    """A decimal as Debezium's VariableScaleDecimal carries it: its own scale, the unscaled value's
    big-endian two's-complement bytes (base64 in JSON, raw in Avro)."""
    if value is None:
        return None
    scale = -value.as_tuple().exponent
    unscaled = int(value.scaleb(scale))
    data = unscaled.to_bytes(max(1, (unscaled.bit_length() + 8) // 8), "big", signed=True)
    return {"scale": scale, "value": data if raw else base64.b64encode(data).decode()}


def _numeric_events(amounts: list, with_new_column: bool = False) -> list[bytes]:
    image = {"type": "struct", "optional": True, "name": "pg.public.t.Value",
             "fields": [{"type": "int64", "optional": False, "field": "id"},
                        dict(_VARIABLE_SCALE, optional=True, field="amount")]}
    schema = envelope_schema([("id", "int64", None, None)])
    schema["fields"][:2] = [dict(image, field="before"), dict(image, field="after")]
    return [json.dumps({"schema": schema, "payload": {"op": "c", "before": None,
                                                      "after": {"id": i, "amount": _variable_scale(a)}}}).encode()
            for i, a in enumerate(amounts)]


AMOUNTS = [decimal.Decimal(x) for x in ("12.5", "-0.001", "7", "1.50000", "-123456.789", "0", "99999999999999.999")] \
    + [None, decimal.Decimal("3.14")]


def test_variable_scale_decimals_fill_a_decimal_column():
    """Each value has its own scale; every one that fits the column's scale lands exactly."""
    table = pa.schema([pa.field("id", pa.int64(), False), ("amount", pa.decimal128(18, 3))])
    rows = Decoder("debezium-json", table, ("id",)).decode(records(_numeric_events(AMOUNTS)))
    assert rows.column("amount").to_pylist() == [None if a is None else a.quantize(decimal.Decimal("0.001"))
                                                 for a in AMOUNTS]


@pytest.mark.parametrize("amount,error", [("1.2345", "would cause data loss"), ("1234567890123456.5", "does not fit")])
def test_variable_scale_decimals_that_do_not_fit_are_refused_by_record(amount, error):
    table = pa.schema([pa.field("id", pa.int64(), False), ("amount", pa.decimal128(18, 3))])
    values = _numeric_events([decimal.Decimal("1.5"), decimal.Decimal(amount), decimal.Decimal("2.5")])
    with pytest.raises(DecodeError, match=f"offset=1 .*column 'amount'.*{error}"):
        Decoder("debezium-json", table, ("id",)).decode(records(values))
    skipped = Decoder("debezium-json", table, ("id",), on_error="skip").decode_all(records(values))
    assert skipped.rows.column("amount").to_pylist() == [decimal.Decimal("1.500"), decimal.Decimal("2.500")]


def test_a_new_column_of_variable_scale_decimals_is_decimal_38_18():
    """As Paimon's Postgres CDC types a NUMERIC without precision; never a ROW of (scale, value)."""
    from paimon_streaming.sinks import debezium
    values = _numeric_events(AMOUNTS)
    decoded = Decoder("debezium-json", pa.schema([pa.field("id", pa.int64(), False)]), ("id",)).decode_all(
        records(values))
    assert decoded.new_fields == pa.schema([("amount", pa.decimal128(38, 18))])
    assert debezium.table_schema_of(json.loads(values[0])["schema"]).field("amount").type == pa.decimal128(38, 18)
    widened = pa.schema([pa.field("id", pa.int64(), False), ("amount", pa.decimal128(38, 18))])
    assert Decoder("debezium-json", widened, ("id",)).decode(records(values)).column("amount").to_pylist() == AMOUNTS


@contextlib.contextmanager
def _avro_inserts(sid: int, new_fields: list[dict], images: list[dict]):
    """(a schema registry's URL, Avro records) for inserts of `images` under schema `sid`: a
    Debezium envelope of `id` and `new_fields`, as Confluent's AvroConverter registers it."""
    import fastavro

    from paimon_streaming.sinks import debezium, schema_registry
    from test_schema_registry import Registry
    schema = avro_envelope([("id", "int64", None, None)])
    schema["fields"][0]["type"][1]["fields"] += new_fields
    parsed = fastavro.parse_schema(debezium.without_logical_types(schema))
    values = []
    for image in images:
        body = io.BytesIO()
        fastavro.schemaless_writer(body, parsed, {"before": None, "after": image, "op": "c", "ts_ms": 1,
                                                  "source": {"connector": "postgresql", "lsn": 1}})
        values.append(schema_registry.frame(sid, body.getvalue()))
    r = Registry({sid: schema})
    try:
        yield r.url, values
    finally:
        r.close()


def test_debezium_avro_variable_scale_decimals(registry):
    amount = {"name": "amount", "default": None, "type": ["null", {
        "type": "record", "name": "VariableScaleDecimal", "namespace": "io.debezium.data",
        "fields": [{"name": "scale", "type": "int"}, {"name": "value", "type": "bytes"}],
        "connect.doc": "Variable scaled decimal", "connect.version": 1,
        "connect.name": "io.debezium.data.VariableScaleDecimal"}]}
    images = [{"id": i, "amount": _variable_scale(a, raw=True)} for i, a in enumerate(AMOUNTS)]
    with _avro_inserts(7, [amount], images) as (url, values):
        table = pa.schema([pa.field("id", pa.int64(), False), ("amount", pa.decimal128(38, 18))])
        rows = Decoder("debezium-avro", table, ("id",), schema_registry=url).decode(records(values))
        assert rows.column("amount").to_pylist() == AMOUNTS


def test_debezium_avro_values_never_truncated_into_a_narrower_column(registry):
    """A source column that became a double (the writer schema says so) into the table's INT:
    values that fit are cast, 2.5 is a poison record naming the column, never stored as 2."""
    score = {"name": "score", "default": None, "type": ["null", "double"]}
    with _avro_inserts(8, [score], [{"id": 1, "score": 2.0}, {"id": 2, "score": 2.5}]) as (url, values):
        table = pa.schema([pa.field("id", pa.int64(), False), ("score", pa.int32())])
        decoded = Decoder("debezium-avro", table, ("id",), schema_registry=url, on_error="skip").decode_all(
            records(values))
        assert decoded.rows.to_pylist() == [{"id": 1, "score": 2, "_kind": "+I"}]
        assert "column 'score'" in decoded.rejected.column("error")[0].as_py()


# ---- nested values in new columns: typed from the envelope, never guessed ----------------------
def _with_new_fields(*specs: dict) -> dict:
    schema = envelope_schema([("id", "int64", None, None)])
    for image in schema["fields"][:2]:
        image["fields"] = image["fields"] + list(specs)
    return schema


_POINT = {"type": "struct", "optional": True, "field": "spot", "name": "io.debezium.data.geometry.Point", "version": 1,
          "fields": [{"type": "float64", "optional": False, "field": "x"}, {"type": "float64", "optional": False, "field": "y"},
                     {"type": "bytes", "optional": True, "field": "wkb"}, {"type": "int32", "optional": True, "field": "srid"}]}
_INTS = {"type": "array", "optional": True, "field": "counts", "items": {"type": "int32", "optional": True}}


def test_new_nested_fields_are_typed_from_the_envelope():
    """A Postgres int4[] is an ARRAY<INT>, a geometry Point a ROW whose WKB is bytes (base64 decoded
    at any depth), as the envelope declares them."""
    wkb = bytes([1, 1, 0, 0, 0]) + bytes(16)
    raw = {"schema": _with_new_fields(_POINT, _INTS), "payload": {"op": "c", "before": None, "after": {
        "id": 1, "spot": {"x": 1.5, "y": -2.0, "wkb": base64.b64encode(wkb).decode(), "srid": 4326},
        "counts": [1, None, 3]}}}
    value = json.dumps(raw).encode()
    decoded = Decoder("debezium-json", pa.schema([pa.field("id", pa.int64(), False)]), ("id",)).decode_all(records([value]))
    point = pa.struct([("x", pa.float64()), ("y", pa.float64()), ("wkb", pa.binary()), ("srid", pa.int32())])
    assert decoded.new_fields == pa.schema([("spot", point), ("counts", pa.list_(pa.int32()))])
    table = pa.schema([pa.field("id", pa.int64(), False), ("spot", point), ("counts", pa.list_(pa.int32()))])
    rows = Decoder("debezium-json", table, ("id",)).decode(records([value]))
    assert rows.to_pylist() == [{"id": 1, "spot": {"x": 1.5, "y": -2.0, "wkb": wkb, "srid": 4326},
                                 "counts": [1, None, 3], "_kind": "+I"}]


_DATE = {"type": "int32", "optional": True, "name": "io.debezium.time.Date", "version": 1}
_CENTS = {"type": "bytes", "optional": True, "name": "org.apache.kafka.connect.data.Decimal", "version": 1,
          "parameters": {"scale": "2", "connect.decimal.precision": "10"}}
_ARRAYS = [{"type": "array", "optional": True, "field": "days", "items": _DATE},
           {"type": "array", "optional": True, "field": "prices", "items": _CENTS},
           {"type": "array", "optional": True, "field": "weeks", "items": {"type": "array", "optional": True, "items": _DATE}}]
_ARRAY_TYPES = pa.schema([("days", pa.list_(pa.date32())), ("prices", pa.list_(pa.decimal128(10, 2))),
                          ("weeks", pa.list_(pa.list_(pa.date32())))])
_ARRAY_ROWS = [{"id": 1, "days": [dt.date(2022, 1, 8), None, dt.date(1969, 12, 31)],
                "prices": [decimal.Decimal("-1.25"), decimal.Decimal("0.01")], "weeks": [[dt.date(2022, 1, 8)], [], None]},
               {"id": 2, "days": None, "prices": [], "weeks": None}]


def _array_image(row: dict) -> dict:
    def cents(d):
        return None if d is None else base64.b64encode(int(d * 100).to_bytes(2, "big", signed=True)).decode()

    def days(d):
        return None if d is None else (d - EPOCH.date()).days
    return {"id": row["id"], "days": None if row["days"] is None else [days(d) for d in row["days"]],
            "prices": None if row["prices"] is None else [cents(p) for p in row["prices"]],
            "weeks": None if row["weeks"] is None else [None if w is None else [days(d) for d in w] for w in row["weeks"]]}


def test_arrays_of_debeziums_encodings_are_decoded_element_by_element():
    """A Postgres date[] is an ARRAY of io.debezium.time.Date (days), a numeric(10,2)[] one of
    Connect Decimals (base64): typed so as new columns, decoded so with and without the envelope
    (by the table's element types), nested arrays too."""
    schema = _with_new_fields(*_ARRAYS)
    values = [json.dumps({"schema": schema, "payload": {"op": "c", "before": None, "after": _array_image(r)}}).encode()
              for r in _ARRAY_ROWS]
    key = pa.schema([pa.field("id", pa.int64(), False)])
    assert Decoder("debezium-json", key, ("id",)).decode_all(records(values)).new_fields == _ARRAY_TYPES
    table = pa.schema(list(key) + list(_ARRAY_TYPES))
    expected = [dict(r, _kind="+I") for r in _ARRAY_ROWS]
    assert Decoder("debezium-json", table, ("id",)).decode(records(values)).to_pylist() == expected
    bare = [json.dumps({"op": "c", "before": None, "after": _array_image(r)}).encode() for r in _ARRAY_ROWS]
    assert Decoder("debezium-json", table, ("id",)).decode(records(bare)).to_pylist() == expected
    times = pa.schema(list(key) + [("opens", pa.list_(pa.time32("ms")))])
    with pytest.raises(DecodeError, match="column 'opens' is an ARRAY of a TIME without the schema envelope"):
        Decoder("debezium-json", times, ("id",)).decode(records([json.dumps({"op": "c", "after": {"id": 1, "opens": [1]}}).encode()]))


def test_debezium_avro_arrays_of_encodings(registry):
    date = {"type": "int", "connect.version": 1, "connect.name": "io.debezium.time.Date"}
    cents = {"type": "bytes", "connect.version": 1, "connect.name": "org.apache.kafka.connect.data.Decimal",
             "connect.parameters": {"scale": "2", "connect.decimal.precision": "10"}, "scale": 2, "precision": 10,
             "logicalType": "decimal"}
    arrays = [
        {"name": "days", "type": ["null", {"type": "array", "items": ["null", date]}], "default": None},
        {"name": "prices", "type": ["null", {"type": "array", "items": ["null", cents]}], "default": None},
        {"name": "weeks", "type": ["null", {"type": "array", "items": ["null", {"type": "array", "items": ["null", date]}]}],
         "default": None}]
    images = [_array_image(row) for row in _ARRAY_ROWS]
    for image in images:  # Avro carries decimals as bytes, not base64
        image["prices"] = None if image["prices"] is None else [base64.b64decode(p) for p in image["prices"]]
    with _avro_inserts(8, arrays, images) as (url, values):
        key = pa.schema([pa.field("id", pa.int64(), False)])
        assert Decoder("debezium-avro", key, ("id",), schema_registry=url).decode_all(records(values)).new_fields \
            == _ARRAY_TYPES
        rows = Decoder("debezium-avro", pa.schema(list(key) + list(_ARRAY_TYPES)), ("id",),
                       schema_registry=url).decode(records(values))
        assert rows.to_pylist() == [dict(r, _kind="+I") for r in _ARRAY_ROWS]


@pytest.mark.parametrize("spec", [
    {"type": "struct", "optional": True, "field": "period", "fields": [dict(_DATE, field="start")]},
    {"type": "map", "optional": True, "field": "attrs", "keys": {"type": "string"}, "values": {"type": "string"}}])
def test_new_nested_fields_holding_encodings_are_refused_not_guessed(spec):
    """A ROW holding a Debezium date would otherwise be inferred as a ROW of an integer (days), a
    map as a ROW of its keys: refused by record, naming the field."""
    raw = {"schema": _with_new_fields(spec), "payload": {"op": "c", "before": None, "after": {"id": 1, spec["field"]: None}}}
    with pytest.raises(DecodeError, match=rf"offset=0 .*field\(s\) \['{spec['field']}'\] of the change events have types "
                                          "not decoded here"):
        Decoder("debezium-json", pa.schema([pa.field("id", pa.int64(), False)]), ("id",)).decode(
            records([json.dumps(raw).encode()]))


# ---- decimal.handling.mode=double: a DECIMAL column's values as doubles ------------------------
PRICE_TABLE = pa.schema([pa.field("id", pa.int64(), False), ("price", pa.decimal128(10, 2))])
DOUBLE_PRICES = [12.3, 0.1, -7.0, None]


def test_double_decimals_in_an_envelope_fill_a_decimal_column_exactly():
    """An envelope that declares a DECIMAL column's field a double (decimal.handling.mode=double)
    with no --decimal-handling given: each double is the decimal it spells, and one with more
    digits than the column's scale is a poison record naming the column, never rounded."""
    source = [("id", "int64", None, None), ("price", "float64", None, None)]
    values = [event("c", None, {"id": i, "price": p}, True, source) for i, p in enumerate(DOUBLE_PRICES)]
    rows = Decoder("debezium-json", PRICE_TABLE, ("id",)).decode(records(values))
    assert rows.column("price").to_pylist() == [decimal.Decimal("12.30"), decimal.Decimal("0.10"),
                                                decimal.Decimal("-7.00"), None]
    bad = values[:1] + [event("c", None, {"id": 9, "price": 12.345}, True, source)]
    with pytest.raises(DecodeError, match="offset=1 .*column 'price'.*more digits than the scale"):
        Decoder("debezium-json", PRICE_TABLE, ("id",)).decode(records(bad))


def test_debezium_avro_double_decimals_fill_a_decimal_column_exactly(registry):
    """The same through Avro (the writer schema's double): exact values fill the DECIMAL(10, 2)
    column; 12.345 (more digits than its scale) and 1e12 (beyond its precision) are poison
    records naming the column, never rounded nor wrapped."""
    price = {"name": "price", "default": None, "type": ["null", "double"]}
    images = [{"id": i, "price": p} for i, p in enumerate(DOUBLE_PRICES + [12.345, 1e12])]
    with _avro_inserts(9, [price], images) as (url, values):
        decoded = Decoder("debezium-avro", PRICE_TABLE, ("id",), schema_registry=url, on_error="skip").decode_all(
            records(values))
        assert decoded.rows.column("price").to_pylist() == [decimal.Decimal("12.30"), decimal.Decimal("0.10"),
                                                            decimal.Decimal("-7.00"), None]
        assert decoded.rejected.column("offset").to_pylist() == [4, 5]
        assert all("column 'price'" in e for e in decoded.rejected.column("error").to_pylist())
        with pytest.raises(DecodeError, match="offset=4 .*column 'price'.*more digits than the scale"):
            Decoder("debezium-avro", PRICE_TABLE, ("id",), schema_registry=url).decode(records(values))


def test_debezium_avro_records_not_in_the_registrys_framing(registry):
    """A record without the registry's magic byte and schema id, or whose bytes are not Avro of
    its writer schema: a DecodeError naming the record, or set aside with on-error skip."""
    good = avro_event(3, avro_envelope(), "c", None, {"id": 1, "name": "a"})
    truncated = good[:8]
    values = [good, b"{\"op\": \"c\"}", truncated, good]
    with pytest.raises(DecodeError, match="offset=1 "):
        Decoder("debezium-avro", TABLE, ("id",), schema_registry=registry.url).decode(records(values))
    with pytest.raises(DecodeError, match="offset=1 is not Avro of writer schema 3: EOFError"):
        Decoder("debezium-avro", TABLE, ("id",), schema_registry=registry.url).decode(records([good, truncated]))
    skipped = Decoder("debezium-avro", TABLE, ("id",), schema_registry=registry.url,
                      on_error="skip").decode_all(records(values))
    assert skipped.rows.column("id").to_pylist() == [1, 1]
    assert skipped.rejected.column("offset").to_pylist() == [1, 2]
    from paimon_streaming.sinks import schema_registry
    unknown = schema_registry.frame(42, good[schema_registry.HEADER:])
    with pytest.raises(DecodeError, match="offset=1: .*404 for /schemas/ids/42"):
        Decoder("debezium-avro", TABLE, ("id",), schema_registry=registry.url).decode(records([good, unknown]))


def test_a_new_table_is_not_created_from_events_that_cannot_type_or_key_it(tmp_path, registry):
    """Creating the table from the change events: an envelope without an after image, events
    keyed by nothing, a debezium-avro topic with no records yet or a first record not framed for
    the registry: each an InvalidOptionError naming the table and asking for --schema or
    --primary-key; no table is created."""
    import paimon_streaming as ps
    from paimon_streaming.errors import InvalidOptionError
    from paimon_streaming.sinks.ingest import IngestConfig, ensure_table
    base = dict(bootstrap_servers="h:1", warehouse=str(tmp_path), table="db.items", topics=("t",))
    no_after = json.loads(event("c", None, {"id": 1}, True))
    no_after["schema"]["fields"] = [f for f in no_after["schema"]["fields"] if f["field"] != "after"]
    cases = [
        (dict(format="debezium-json", primary_keys=("id",)), [(None, json.dumps(no_after).encode())],
         "cannot create table db.items from the change events: the envelope has no after image; pass --schema"),
        (dict(format="debezium-json"), [(None, event("c", None, {"id": 1}, True)), (b"[1]", event("c", None, {"id": 2}, True))],
         "format debezium-json: the change events carry no key naming the source's primary key; pass --primary-key"),
        (dict(format="debezium-avro", schema_registry=registry.url, primary_keys=("id",)), [],
         "table db.items does not exist and the topic has no records yet: pass --schema"),
        (dict(format="debezium-avro", schema_registry=registry.url, primary_keys=("id",)),
         [(None, event("c", None, {"id": 1}, True))],
         "cannot create table db.items from the first record of the topic: .*; pass --schema"),
    ]
    for given, samples, error in cases:
        with pytest.raises(InvalidOptionError, match=error):
            ensure_table(None, IngestConfig(**base, **given), lambda line: None, lambda: samples)
    assert not ps.Catalog(str(tmp_path)).table_exists("db.items")


def test_many_envelope_schemas_in_one_batch_each_value_keeps_its_own():
    """More distinct envelope schemas in a batch than are compared one by one (a connector whose
    schema changes per record, or many tables): each value still maps to its own schema, and the
    events decode as they would one schema at a time."""
    from paimon_streaming.sinks import debezium
    versions = [i % 13 for i in range(40)]  # 13 schemas, each several times, interleaved
    values = []
    for i, version in enumerate(versions):
        doc = json.loads(event("c", None, {"id": i, "name": f"n{i}"}, True, SOURCE[:2]))
        doc["schema"]["version"] = version
        values.append(json.dumps(doc).encode())
    payloads, groups, schemas = debezium.split_envelopes(pa.array(values, pa.binary()))
    assert [json.loads(schemas[g])["version"] for g in groups] == versions
    assert len(schemas) == 13 and [json.loads(p)["after"]["id"] for p in payloads.to_pylist()] == list(range(40))
    table = pa.schema([pa.field("id", pa.int64(), False), ("name", pa.string())])
    rows = Decoder("debezium-json", table, ("id",)).decode(records(values)).to_pylist()
    assert [(r["id"], r["name"]) for r in rows] == [(i, f"n{i}") for i in range(40)]


def test_a_float_widened_upstream_and_new_fields_in_an_array_of_rows():
    """The source turns `score FLOAT` into DOUBLE: reported as a wider column (never a double
    rounded into a FLOAT). A field added to the ROWs of an ARRAY whose values hold a Debezium
    encoding (a date) is named as not decoded here, never left to the JSON reader's guess."""
    table = pa.schema([pa.field("id", pa.int64(), False), ("score", pa.float32()),
                       ("stops", pa.list_(pa.struct([("at", pa.date32())])))])
    date = {"type": "int32", "optional": True, "name": "io.debezium.time.Date", "version": 1}
    stops = {"type": "array", "optional": True, "field": "stops", "items": {
        "type": "struct", "optional": True, "fields": [dict(date, field="at"), dict(date, field="until")]}}

    def envelope(*fields, after):
        image = {"type": "struct", "optional": True, "fields": [{"type": "int64", "optional": False, "field": "id"},
                                                                *fields]}
        schema = {"type": "struct", "fields": [dict(image, field="before"), dict(image, field="after"),
                                               {"type": "string", "optional": False, "field": "op"}]}
        return json.dumps({"schema": schema, "payload": {"op": "c", "before": None, "after": after}}).encode()
    wider = envelope({"type": "double", "optional": True, "field": "score"}, after={"id": 1, "score": 0.1})
    decoded = Decoder("debezium-json", table, ("id",)).decode_all(records([wider]))
    assert decoded.new_fields == pa.schema([("score", pa.float64())])
    nested = envelope(stops, after={"id": 2, "stops": [{"at": 19000, "until": 19001}]})
    with pytest.raises(DecodeError, match=r"field\(s\) \['stops\[\]\.until'\] of the change events have types not "
                                          "decoded here"):
        Decoder("debezium-json", table, ("id",)).decode(records([nested]))


def test_debezium_avro_new_fields_of_types_not_decoded_are_refused_by_record(registry):
    """A writer schema adding a field of a type no column holds (a union of two types): its
    records are poison records naming the field and the writer schema (on-error skip sets them
    aside), never decoded with the field dropped."""
    odd = {"name": "odd", "default": None, "type": ["null", "long", "string"]}
    with _avro_inserts(11, [odd], [{"id": 1, "odd": 5}, {"id": 2, "odd": "x"}]) as (url, values):
        table = pa.schema([pa.field("id", pa.int64(), False)])
        with pytest.raises(DecodeError, match=r"offset=0 \(writer schema 11\): field\(s\) \['odd'\] of the change "
                                              "events have types not decoded here"):
            Decoder("debezium-avro", table, ("id",), schema_registry=url).decode(records(values))
        decoded = Decoder("debezium-avro", table, ("id",), schema_registry=url, on_error="skip").decode_all(
            records(values))
        assert decoded.rows.num_rows == 0 and decoded.rejected.column("offset").to_pylist() == [0, 1]
        assert "writer schema 11: field(s) ['odd']" in decoded.rejected.column("error")[0].as_py()


def test_bits_are_stored_big_endian_and_times_beyond_a_day_wrap():
    """io.debezium.data.Bits (a MySQL BIT(n > 1)) carries the bits' bytes little-endian: stored
    big-endian, as Paimon's Debezium CDC reverses them (b'0000000100000010' is 0x0102), a new
    column of them BYTES. A MySQL TIME outside 0-24h ('25:00:00', '-01:00:00' as MicroTime) is
    the time of day Paimon's CDC reads it as (01:00, 23:00), never a TIME out of its range."""
    bits = {"type": "bytes", "optional": True, "name": "io.debezium.data.Bits", "version": 1,
            "parameters": {"length": "16"}}
    micro = {"type": "int64", "optional": True, "name": "io.debezium.time.MicroTime", "version": 1}

    def envelope(after, *fields):
        image = {"type": "struct", "optional": True,
                 "fields": [{"type": "int64", "optional": False, "field": "id"}, *fields]}
        schema = {"type": "struct", "fields": [dict(image, field="before"), dict(image, field="after"),
                                               {"type": "string", "optional": False, "field": "op"}]}
        return json.dumps({"schema": schema, "payload": {"op": "c", "before": None, "after": after}}).encode()
    table = pa.schema([pa.field("id", pa.int64(), False), ("flags", pa.binary()), ("t", pa.time32("ms"))])
    fields = (dict(bits, field="flags"), dict(micro, field="t"))
    little = base64.b64encode(bytes([0x02, 0x01])).decode()
    rows = Decoder("debezium-json", table, ("id",)).decode(records([
        envelope({"id": 1, "flags": little, "t": 25 * 3600 * 10**6}, *fields),
        envelope({"id": 2, "flags": base64.b64encode(b"\x01").decode(), "t": -3600 * 10**6}, *fields),
        envelope({"id": 3, "flags": None, "t": -1}, *fields),
        envelope({"id": 4, "flags": "", "t": None}, *fields)]))
    assert rows.to_pylist() == [
        {"id": 1, "flags": b"\x01\x02", "t": dt.time(1), "_kind": "+I"},
        {"id": 2, "flags": b"\x01", "t": dt.time(23), "_kind": "+I"},
        {"id": 3, "flags": None, "t": dt.time(23, 59, 59, 999000), "_kind": "+I"},
        {"id": 4, "flags": b"", "t": None, "_kind": "+I"}]
    added = Decoder("debezium-json", table.remove(1), ("id",)).decode_all(records([
        envelope({"id": 1, "flags": little, "t": 0}, *fields)]))
    assert added.new_fields == pa.schema([("flags", pa.binary())])
    from paimon_streaming.sinks import debezium
    assert debezium.table_schema_of({"fields": [{"field": "after", "type": "struct", "fields": [
        dict(bits, field="flags")]}]}) == pa.schema([("flags", pa.binary())])


@pytest.mark.parametrize("text", ["-7000000000000000000000000000000000000", "12.345", "abc"])
def test_decimal_text_beyond_its_column_is_refused_never_another_number(text):
    """decimal.handling.mode=string: the text went through Arrow's cast, which wraps a value
    beyond the column into another number (37 digits into DECIMAL(38, 2) came back as
    -194352661581230730732507851364635770.88)."""
    table = pa.schema([pa.field("id", pa.int64(), False), ("price", pa.decimal128(38, 2))])
    value = json.dumps({"op": "c", "after": {"id": 1, "price": text}}).encode()
    with pytest.raises(DecodeError, match="column 'price'"):
        Decoder("debezium-json", table, ("id",), decimal_handling="string").decode(records([value]))
