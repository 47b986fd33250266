"""Avro records framed for Confluent's Schema Registry (`--schema-registry URL`): writer schemas
fetched by id from a registry on loopback (Confluent's REST paths), schema evolution by new
writer schemas, Avro tombstone keys, and the errors that name the record or the schema."""
from __future__ import annotations

import base64
import io
import json
import random
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

import fastavro
import pyarrow as pa
import pytest

from paimon_streaming.sinks import schema_registry
from paimon_streaming.sinks.decoders import DecodeError, Decoder

V1 = {"type": "record", "name": "Order", "namespace": "shop", "fields": [
    {"name": "id", "type": "long"}, {"name": "name", "type": ["null", "string"], "default": None},
    {"name": "amount", "type": ["null", "double"], "default": None}]}
# the producer's next version: a field added with a default (a compatible change) and one removed
V2 = {"type": "record", "name": "Order", "namespace": "shop", "fields": [
    {"name": "id", "type": "long"}, {"name": "name", "type": ["null", "string"], "default": None},
    {"name": "price", "type": ["null", {"type": "bytes", "logicalType": "decimal", "precision": 9, "scale": 2}],
     "default": None}]}
KEY = {"type": "record", "name": "OrderKey", "namespace": "shop", "fields": [{"name": "id", "type": "long"}]}


class Registry:
    """Confluent's `GET /schemas/ids/<id>` on loopback, with basic authentication."""

    def __init__(self, schemas: dict[int, dict], user: str = "ingest", secret: str = "s3cret:x",
                 subjects: dict[tuple[str, int], dict] | None = None, references: dict[int, list] | None = None):
        """`schemas` by id, `subjects` by (subject, version); `references` of an id's or a
        subject version's schema (keyed by id or (subject, version)), as Confluent lists them."""
        refs = references or {}
        self.schemas = {i: {"schema": json.dumps(s), **({"references": refs[i]} if i in refs else {})}
                        for i, s in schemas.items()}
        self.subjects = {at: {"subject": at[0], "version": at[1], "schema": json.dumps(s),
                              **({"references": refs[at]} if at in refs else {})}
                         for at, s in (subjects or {}).items()}
        self.requests: list[str] = []
        expected = "Basic " + base64.b64encode(f"{user}:{secret}".encode()).decode()
        registry = self

        class Handler(BaseHTTPRequestHandler):
            def do_GET(self):
                registry.requests.append(self.path)
                parts = self.path.strip("/").split("/")
                if self.headers.get("Authorization") != expected:
                    return self._send(401, {"error_code": 401, "message": "Unauthorized"})
                if parts[:2] == ["schemas", "ids"] and int(parts[2]) in registry.schemas:
                    return self._send(200, registry.schemas[int(parts[2])])
                if parts[0] == "subjects" and parts[2] == "versions" and (parts[1], int(parts[3])) in registry.subjects:
                    return self._send(200, registry.subjects[parts[1], int(parts[3])])
                self._send(404, {"error_code": 40403, "message": "Schema not found"})

            def _send(self, code, body):
                data = json.dumps(body).encode()
                self.send_response(code)
                self.send_header("Content-Type", "application/vnd.schemaregistry.v1+json")
                self.send_header("Content-Length", str(len(data)))
                self.end_headers()
                self.wfile.write(data)

            def log_message(self, *args):
                pass

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        threading.Thread(target=self.server.serve_forever, daemon=True).start()
        self.url = f"http://{user}:{secret.replace(':', '%3A')}@127.0.0.1:{self.server.server_port}"

    def close(self):
        self.server.shutdown()
        self.server.server_close()


@pytest.fixture
def registry():
    schema_registry._cache.clear()
    r = Registry({1: V1, 2: V2, 7: KEY, 9: "long"})
    yield r
    r.close()


def framed(sid: int, schema, row) -> bytes:
    out = io.BytesIO()
    fastavro.schemaless_writer(out, fastavro.parse_schema(schema), row)
    return schema_registry.frame(sid, out.getvalue())


def records(keys: list, values: list) -> pa.RecordBatch:
    n = len(values)
    return pa.RecordBatch.from_pydict({
        "key": pa.array(keys, pa.binary()), "value": pa.array(values, pa.binary()), "topic": ["orders"] * n,
        "partition": pa.array([0] * n, pa.int32()), "offset": pa.array(range(n), pa.int64())})


TABLE = pa.schema([pa.field("id", pa.int64(), False), ("name", pa.string()), ("amount", pa.float64())])


def test_records_of_two_writer_schemas_and_avro_tombstone_keys(registry):
    import decimal
    values = [framed(1, V1, {"id": 1, "name": "a", "amount": 1.5}),
              framed(2, V2, {"id": 2, "name": "b", "price": decimal.Decimal("9.99")}), None, None]
    keys = [None, None, framed(7, KEY, {"id": 1}), framed(9, "long", 2)]
    decoder = Decoder("avro", TABLE, ("id",), key_format="avro", schema_registry=registry.url)
    decoded = decoder.decode_all(records(keys, values))
    # the fields a writer schema adds are reported, typed from it; the batch is decoded again after
    assert decoded.new_fields == pa.schema([("price", pa.decimal128(9, 2))])
    assert decoded.rows.to_pylist() == [{"id": 1, "name": "a", "amount": 1.5, "_kind": "+I"},
                                        {"id": 2, "name": "b", "amount": None, "_kind": "+I"},
                                        {"id": 1, "name": None, "amount": None, "_kind": "-D"},
                                        {"id": 2, "name": None, "amount": None, "_kind": "-D"}]
    decoder.decode(records(keys, values))
    assert sorted(set(registry.requests)) == ["/schemas/ids/1", "/schemas/ids/2", "/schemas/ids/7", "/schemas/ids/9"]
    assert len(registry.requests) == 4  # each id fetched once per process


def test_errors_name_the_record_and_the_schema(registry):
    good = framed(1, V1, {"id": 1, "name": "a", "amount": 1.5})
    decoder = Decoder("avro", TABLE, ("id",), schema_registry=registry.url)
    with pytest.raises(DecodeError, match="offset=1 is not Avro of its writer schema: .*wire format"):
        decoder.decode(records([None] * 2, [good, b'{"id": 2}']))
    with pytest.raises(DecodeError, match=r"offset=1: the registry at http://127.0.0.1:\d+ answered 404 "
                                          r"for /schemas/ids/5: .*Schema not found"):
        decoder.decode(records([None] * 2, [good, schema_registry.frame(5, b"\x02")]))
    skipped = Decoder("avro", TABLE, ("id",), schema_registry=registry.url, on_error="skip").decode_all(
        records([None] * 3, [good, good[:6], good]))
    assert skipped.rows.num_rows == 2 and skipped.rejected.column("offset").to_pylist() == [1]
    wrong_secret = registry.url.replace("s3cret", "guess")
    with pytest.raises(DecodeError, match="answered 401") as info:
        Decoder("avro", TABLE, ("id",), schema_registry=wrong_secret).decode(records([None], [good]))
    assert "guess" not in str(info.value)  # credentials never reach messages
    with pytest.raises(DecodeError, match="unreachable"):
        Decoder("avro", TABLE, ("id",), schema_registry="http://127.0.0.1:9").decode(records([None], [good]))
    with pytest.raises(DecodeError, match="Avro keys need the schema registry"):
        Decoder("avro", TABLE, ("id",), avro_schema=json.dumps(V1), key_format="avro")


def test_schemas_referencing_other_subjects():
    """A writer schema whose types live in other subjects (Confluent's schema references): an
    address record, which itself references an enum the order also uses before it; a cycle and
    a missing subject are errors naming them."""
    kind = {"type": "enum", "name": "Kind", "namespace": "geo", "symbols": ["HOME", "WORK"]}
    address = {"type": "record", "name": "Address", "namespace": "geo", "fields": [
        {"name": "city", "type": "string"}, {"name": "kind", "type": "Kind"}]}
    order = {"type": "record", "name": "Order", "namespace": "shop", "fields": [
        {"name": "id", "type": "long"}, {"name": "tags", "type": {"type": "array", "items": "geo.Kind"}},
        {"name": "ship", "type": "geo.Address"}, {"name": "bill", "type": ["null", "geo.Address"], "default": None}]}
    kind_ref = {"name": "geo.Kind", "subject": "kind", "version": 1}
    address_ref = {"name": "geo.Address", "subject": "address", "version": 3}
    schema_registry._cache.clear()
    r = Registry({10: order, 11: order, 12: order}, subjects={("kind", 1): kind, ("address", 3): address,
                                                                ("loop", 1): order},
                 references={10: [kind_ref, address_ref], ("address", 3): [kind_ref],
                             11: [{"name": "geo.Address", "subject": "loop", "version": 1}],
                             ("loop", 1): [{"name": "geo.Address", "subject": "loop", "version": 1}],
                             12: [{"name": "geo.Kind", "subject": "gone", "version": 1}]})
    try:
        standalone = schema_registry.writer_schema_json(r.url, 10)
        named = {}
        for s in (kind, address):
            fastavro.parse_schema(s, named_schemas=named)
        rows = [{"id": 1, "tags": ["WORK"], "ship": {"city": "a", "kind": "HOME"}, "bill": None},
                {"id": 2, "tags": [], "ship": {"city": "b", "kind": "WORK"}, "bill": {"city": "c", "kind": "HOME"}}]
        values = []
        for row in rows:  # as the producer writes them, with the referenced schemas it knows
            out = io.BytesIO()
            fastavro.schemaless_writer(out, fastavro.parse_schema(order, named_schemas=dict(named)), row)
            values.append(schema_registry.frame(10, out.getvalue()))
        table = pa.schema([pa.field("id", pa.int64(), False)])
        decoded = Decoder("avro", table, ("id",), key_format="json", schema_registry=r.url).decode_all(
            records([None, None], values))
        assert [f.name for f in decoded.new_fields] == ["tags", "ship", "bill"]
        assert standalone["fields"][1]["type"]["items"]["name"] == "Kind"  # defined where first used
        full = pa.schema(list(table) + list(decoded.new_fields))
        again = Decoder("avro", full, ("id",), key_format="json", schema_registry=r.url).decode(records([None] * 2, values))
        assert [{k: v for k, v in x.items() if k != "_kind"} for x in again.to_pylist()] == rows
        assert "/subjects/address/versions/3" in r.requests and "/subjects/kind/versions/1" in r.requests
        with pytest.raises(schema_registry.SchemaRegistryError, match="reference each other in a cycle: loop v1 -> loop v1"):
            schema_registry.writer_schema_json(r.url, 11)
        with pytest.raises(schema_registry.SchemaRegistryError, match="answered 404 for /subjects/gone/versions/1"):
            schema_registry.writer_schema_json(r.url, 12)
    finally:
        r.close()


def test_ingest_with_a_registry_evolves_the_table(spark, broker, registry, tmp_path):
    """A new table from the first record's writer schema; the producer moves to V2 mid-topic
    (a new column); deletes by Avro keys; pypaimon reads what the model says."""
    import decimal

    import paimon_streaming as ps
    from conftest import pypaimon_read
    from kafka_broker import unique_topic
    from paimon_streaming.sinks.ingest import IngestConfig, run_ingest

    topic = unique_topic("registry")
    broker.create_topic(topic, partitions=2)
    rng = random.Random(5)
    state: dict[int, dict] = {}
    producer = broker.producer(linger_ms=5)
    for i in range(800):
        k = rng.randrange(150)
        if k in state and rng.random() < 0.2:
            producer.send(topic, key=framed(7, KEY, {"id": k}), value=None)
            state.pop(k)
        elif i < 400:
            row = {"id": k, "name": f"n{i}", "amount": i / 4}
            producer.send(topic, key=framed(7, KEY, {"id": k}), value=framed(1, V1, row))
            state[k] = dict(row, price=None)
        else:
            row = {"id": k, "name": f"n{i}", "price": decimal.Decimal(i).scaleb(-2)}
            producer.send(topic, key=framed(7, KEY, {"id": k}), value=framed(2, V2, row))
            state[k] = dict(row, amount=None)
    producer.flush()
    producer.close()
    cfg = IngestConfig(bootstrap_servers=broker.bootstrap, warehouse=str(tmp_path / "wh"), table="db.orders",
                       topics=(topic,), format="avro", schema_registry=registry.url, key_format="avro",
                       primary_keys=("id",), bucket=2, trigger="available-now", checkpoint=str(tmp_path / "ckpt"),
                       max_offsets_per_trigger=300)
    lines: list[str] = []
    assert run_ingest(spark, cfg, lines.append) == 0, lines
    assert any("from the first record's writer schema in the registry" in line for line in lines), lines
    assert any("added price decimal128(9, 2)" in line for line in lines), lines
    expected = sorted(({"id": k, "name": v["name"], "amount": v["amount"], "price": v["price"]}
                       for k, v in state.items()), key=lambda r: r["id"])
    table = ps.Catalog(str(tmp_path / "wh")).get_table("db.orders")
    assert table.to_arrow().sort_by("id").to_pylist() == expected
    assert pypaimon_read(str(tmp_path / "wh"), "db.orders").sort_by("id").to_pylist() == expected


def test_tombstone_keys_that_name_no_row_are_refused_never_truncated():
    """A tombstone deletes the row its key names: a key that is no value of the primary key
    (a double 2.5 for a BIGINT key: pyarrow would truncate it to 2 and delete row 2), a key record
    without the key column, a key of another type, a key not Avro of its writer schema or of an
    unknown schema, a string key that is no number: each a DecodeError naming the record, and no
    row is deleted. A double holding an integer (2.0) is that integer."""
    other = {"type": "record", "name": "OtherKey", "namespace": "shop", "fields": [{"name": "sku", "type": "string"}]}
    text = {"type": "record", "name": "TextKey", "namespace": "shop", "fields": [{"name": "id", "type": "string"}]}
    schema_registry._cache.clear()
    r = Registry({7: KEY, 10: "double", 11: other, 12: text})
    try:
        def deletes(*keys):
            return Decoder("avro", TABLE, ("id",), key_format="avro", schema_registry=r.url).decode(
                records(list(keys), [None] * len(keys)))
        assert deletes(framed(7, KEY, {"id": 1}), framed(10, "double", 2.0)).to_pylist() == [
            {"id": 1, "name": None, "amount": None, "_kind": "-D"}, {"id": 2, "name": None, "amount": None, "_kind": "-D"}]
        for key, error in [
                (framed(10, "double", 2.5), r"tombstone key of record .*offset=1 holds 2.5 for primary key 'id' \(int64\)"),
                (framed(11, other, {"sku": "a"}), r"tombstone key of record .*offset=1 has no 'id'"),
                (framed(12, text, {"id": "2"}), r"tombstone keys from .*offset=0 on do not hold the primary key \['id'\]"),
                (framed(7, KEY, {"id": 1})[:5], r"tombstone key of record .*offset=1 is not Avro of its writer schema"),
                (schema_registry.frame(5, b"\x02"), r"record .*offset=1: the registry at .* answered 404")]:
            with pytest.raises(DecodeError, match=error):
                deletes(framed(7, KEY, {"id": 1}), key)
    finally:
        r.close()
    with pytest.raises(DecodeError, match=r"tombstone key 'x' of record .*offset=1 is not a int64 value of primary key"):
        Decoder("avro", TABLE, ("id",), avro_schema=json.dumps(V1)).decode(records([b"1", b"x"], [None, None]))


def test_writer_schemas_that_are_not_avro_are_refused_naming_the_schema():
    """A record framed for a Protobuf (or JSON Schema) writer schema, an Avro schema fastavro
    cannot parse, a record without fields (fastavro takes it, Avro does not), or one referencing
    a subject version that is not Avro: a DecodeError naming the record and the schema, never a
    guess at the bytes (nor a KeyError)."""
    schema_registry._cache.clear()
    unknown = {"type": "record", "name": "X", "fields": [{"name": "a", "type": "nope"}]}
    r = Registry({1: V1, 2: {"type": "record", "name": "NoFields"}, 3: V1, 4: V1, 5: unknown},
                 subjects={("shop.Kind", 1): {"type": "enum", "name": "Kind", "symbols": ["A"]}},
                 references={4: [{"name": "shop.Kind", "subject": "shop.Kind", "version": 1}]})
    r.schemas[3]["schemaType"] = "PROTOBUF"
    r.subjects["shop.Kind", 1]["schemaType"] = "JSON"
    try:
        good = framed(1, V1, {"id": 1, "name": "a", "amount": 1.5})
        for sid, error in [(3, "schema 3 of the registry at http://127.0.0.1:\\d+ is PROTOBUF, not Avro"),
                           (2, "writer schema 2: the Avro record 'NoFields' has no list of fields"),
                           (4, "/subjects/shop.Kind/versions/1 of the registry at .* is not Avro"),
                           (5, "schema 5 of the registry at .* is not an Avro schema: .*nope")]:
            with pytest.raises(DecodeError, match=f"offset=1: {error}") as info:
                Decoder("avro", TABLE, ("id",), schema_registry=r.url).decode(
                    records([None] * 2, [good, schema_registry.frame(sid, good[schema_registry.HEADER:])]))
            assert "s3cret" not in str(info.value)
    finally:
        r.close()
