"""Debezium's MongoDB change events (`--format debezium-bson`): documents as Extended JSON text
become the values Paimon's CDC stores (checked against the expectations of Paimon's own
DebeziumBsonRecordParserTest), typed columns take values only where nothing is lost, deletes
without a pre-image find their `_id` in the record's key, and `paimon-streaming ingest`
creates the table from the first document (STRING columns, `_id` the key), evolves it and Java
reads it."""
from __future__ import annotations

import datetime as dt
import decimal
import json
import random

import pyarrow as pa
import pytest

from change_event_support import applied, ingest_items, produce, records
from paimon_streaming.sinks import debezium_bson
from paimon_streaming.sinks.decoders import DecodeError, Decoder

OID = "67ab25755c0d5ac87eb8c632"
# the document of Paimon's test events, and what its CDC stores for it
BEFORE = ('{"_id": {"$oid": "%s"},"created_at": {"$numberLong": "1736207571013"},"created_by": "peter",'
          '"tags": ["pending"],"updated_at": {"$date": 1739455297970}}' % OID)
BEFORE_ROW = {"_id": OID, "created_at": "1736207571013", "created_by": "peter", "tags": '["pending"]',
              "updated_at": "1739455297970"}
STRINGS = pa.schema([pa.field("_id", pa.string(), False)] + [(n, pa.string()) for n in list(BEFORE_ROW)[1:]])


def kafka(pairs: list[tuple[str | None, dict | None]]) -> pa.RecordBatch:
    """Kafka records of (key, event) pairs."""
    batch = records([json.dumps(e).encode() if e is not None else None for _, e in pairs])
    return batch.set_column(0, "key", pa.array([k.encode() if k is not None else None for k, _ in pairs], pa.binary()))


def envelope(op: str, before: str | None, after: str | None) -> dict:
    return {"before": before, "after": after, "updateDescription": None, "op": op, "ts_ms": 1739321992890,
            "source": {"connector": "mongodb", "db": "bigdata_test", "collection": "sync_test_table"}}


def test_paimons_events_insert_update_and_deletes_with_and_without_pre_images():
    key = json.dumps({"id": json.dumps({"$oid": OID})})
    after = BEFORE.replace('"pending"', '"succeed"').replace("1739455297970", "1739455397970")
    pairs = [(key, envelope("c", None, BEFORE)), (key, envelope("u", BEFORE, after)), (key, envelope("u", None, after)),
             (key, envelope("d", None, None)), (json.dumps({"id": json.dumps(OID)}), envelope("d", None, None)),
             (key, {"schema": {"type": "struct"}, "payload": envelope("d", BEFORE, None)}), (key, None)]
    rows = Decoder("debezium-bson", STRINGS, ("_id",)).decode(kafka(pairs)).to_pylist()
    after_row = dict(BEFORE_ROW, tags='["succeed"]', updated_at="1739455397970")
    assert rows == [dict(BEFORE_ROW, _kind="+I"), dict(after_row, _kind="+U"), dict(after_row, _kind="+U")] + \
        [dict({n: None for n in BEFORE_ROW}, _id=OID, _kind="-D")] * 2 + [dict(BEFORE_ROW, _kind="-D")]


def test_every_bson_value_as_paimons_cdc_writes_it():
    """Paimon's event-bson.txt document against its event-json.txt expectations."""
    doc = ('{"id": {"$oid": "596e275826f08b2730779e1f"},"name": "Sally","age": 25,'
           '"created_time": {"$numberLong": "1735934393769"},"updated_time": 1735934393769,'
           '"deleted_time": {"$date": 1735934393769 },"register_time": {"$timestamp": {"t": 1736997330, "i": 2}},'
           '"double_nan": {"$numberDouble": "NaN"},"double_inf": {"$numberDouble": "Infinity"},'
           '"double_ninf": {"$numberDouble": "-Infinity"},"double_zero": {"$numberDouble": "0"},'
           '"boolean_true": true,"boolean_false": false,"array": ["a", "b", "c"],'
           '"array_mix": ["1", 2, {"$numberLong": "1735934393769"}],"decimal": {"$numberDecimal": "3.14"},'
           '"decimal_nan": {"$numberDecimal": "NaN"},"regex": {"$regularExpression": {"pattern": "^pass$", "options": "i"}},'
           '"symbol": {"$symbol": "symbol"},"minKey": {"$minKey": 1},"maxKey": {"$maxKey": 1},'
           '"code": {"$code": "function(){}"},"null": null,"undefined": {"$undefined": true},'
           '"binary": {"$binary": "uE2/4v5MSVOiJZkOo3APKQ==", "$type": "0"},'
           '"uuid": {"$binary": "uE2/4v5MSVOiJZkOo3APKQ==", "$type": "4"},"context": {  "city": "Shanghai",'
           '  "location": {    "lat": 31.2304,    "lon": {"$numberDouble": "121.4737"}  },  "start_time": 0,'
           '  "end_time": {"$numberLong": "1735934393769"},  "args": [1, 2],  "nan": {"$numberDouble": "NaN"}}}')
    expected = {"id": "596e275826f08b2730779e1f", "name": "Sally", "age": "25", "created_time": "1735934393769",
                "updated_time": "1735934393769", "deleted_time": "1735934393769", "register_time": "1736997330",
                "double_nan": "NaN", "double_inf": "Infinity", "double_ninf": "-Infinity", "double_zero": "0.0",
                "boolean_true": "true", "boolean_false": "false", "array": '["a","b","c"]',
                "array_mix": '["1",2,1735934393769]', "decimal": "3.14", "decimal_nan": "NaN", "regex": "/^pass$/i",
                "symbol": "symbol", "minKey": "BsonMinKey", "maxKey": "BsonMaxKey", "code": "function(){}",
                "null": None, "undefined": None, "binary": "uE2/4v5MSVOiJZkOo3APKQ==",
                "uuid": "b84dbfe2-fe4c-4953-a225-990ea3700f29",
                "context": '{"city":"Shanghai","location":{"lat":31.2304,"lon":121.4737},"start_time":0,'
                           '"end_time":1735934393769,"args":[1,2],"nan":"NaN"}'}
    assert {k: debezium_bson.text(v) for k, v in debezium_bson.natural(json.loads(doc)).items()} == expected
    # canonical and relaxed forms of the same values
    for form, value in [({"$date": {"$numberLong": "1735934393769"}}, "1735934393769"),
                        ({"$date": "2025-01-03T19:59:53.769Z"}, "1735934393769"),
                        ({"$binary": {"base64": "uE2/4v5MSVOiJZkOo3APKQ==", "subType": "04"}},
                         "b84dbfe2-fe4c-4953-a225-990ea3700f29"),
                        ({"$uuid": "b84dbfe2-fe4c-4953-a225-990ea3700f29"}, "b84dbfe2-fe4c-4953-a225-990ea3700f29"),
                        ({"$regex": "a/b", "$options": ""}, "/a\\/b/"), ({"$numberInt": "-7"}, "-7"),
                        ({"$numberDouble": "1e20"}, "1.0E20"), (1.5e-5, "1.5E-5"), (1234567.0, "1234567.0"),
                        ({"$numberDecimal": "1E+3"}, "1E+3"), ({"a": {"$numberDecimal": "Infinity"}}, '{"a":"Infinity"}'),
                        ({"$code": "f()", "$scope": {"x": 1}}, '{"$code":"f()","$scope":{"x":1}}'),
                        # Jackson: control characters in upper-case hex; Double.toString: 4.9E-324
                        ({"s\x1f": "a\x01\n", "d": 5e-324}, '{"s\\u001F":"a\\u0001\\n","d":4.9E-324}'),
                        (5e-324, "4.9E-324")]:
        assert debezium_bson.text(debezium_bson.natural(form)) == value, form


def test_typed_columns_take_what_fits():
    schema = pa.schema([pa.field("_id", pa.int64(), False), ("qty", pa.int32()), ("price", pa.decimal128(10, 2)),
                        ("score", pa.float64()), ("at", pa.timestamp("ms", tz="UTC")), ("raw", pa.binary()),
                        ("tags", pa.list_(pa.string())), ("ok", pa.bool_()),
                        ("where", pa.struct([("lat", pa.float64()), ("lon", pa.float64())]))])
    doc = {"_id": {"$numberLong": "7"}, "qty": 3.0, "price": {"$numberDecimal": "12.50"}, "score": {"$numberDecimal": "0.5"},
           "at": {"$date": 1735934393769}, "raw": {"$binary": "AAE=", "$type": "00"}, "tags": ["a", {"$symbol": "b"}],
           "ok": True, "where": {"lat": 31.2, "lon": {"$numberDouble": "121.4"}}}
    row = Decoder("debezium-bson", schema, ("_id",)).decode(
        kafka([(None, envelope("r", None, json.dumps(doc)))])).to_pylist()[0]
    assert row == {"_id": 7, "qty": 3, "price": decimal.Decimal("12.50"), "score": 0.5,
                   "at": dt.datetime(2025, 1, 3, 19, 59, 53, 769000, tzinfo=dt.timezone.utc), "raw": b"\x00\x01",
                   "tags": ["a", "b"], "ok": True, "where": {"lat": 31.2, "lon": 121.4}, "_kind": "+I"}
    refused = [({"qty": 1.5}, "column 'qty' is int32 but holds 1.5"),
               ({"qty": {"$numberDecimal": "2.5"}}, "column 'qty' is int32 but holds 2.5"),
               ({"price": 1.234}, "Rescaling Decimal value would cause data loss"),
               ({"ok": 1}, "column 'ok' is bool but holds '1'"),
               ({"at": 1735934393769}, "column 'at' is timestamp.* but holds '1735934393769'"),
               ({"where": {"lat": 1.0, "alt": 2}}, "column 'where' is struct"),
               ({"raw": {"$binary": "AAE=", "$type": "03"}}, "a legacy UUID \\(binary subtype 3\\)")]
    for change, error in refused:
        bad = envelope("c", None, json.dumps(dict(doc, **change)))
        with pytest.raises(DecodeError, match=f"offset=0 .*{error}"):
            Decoder("debezium-bson", schema, ("_id",)).decode(kafka([(None, bad)]))
    naive = pa.schema([pa.field("_id", pa.int64(), False), ("at", pa.timestamp("ms"))])
    with pytest.raises(DecodeError, match="column 'at' is timestamp.* but holds a \\$date"):
        Decoder("debezium-bson", naive, ("_id",)).decode(kafka([(None, envelope("c", None, json.dumps(doc)))]))


def test_a_new_tables_columns_come_from_the_first_document():
    assert debezium_bson.table_schema_of(json.dumps(envelope("c", None, BEFORE)).encode()) == \
        pa.schema([(n, pa.string()) for n in BEFORE_ROW])
    assert debezium_bson.table_schema_of(json.dumps(envelope("d", BEFORE, None)).encode()) is None
    assert debezium_bson.table_schema_of(b"not an event") is None


def test_events_that_are_not_row_changes_are_refused_by_record():
    decoded = Decoder("debezium-bson", STRINGS, ("_id",), on_error="skip").decode_all(kafka([
        (None, envelope("c", None, BEFORE)),
        (None, envelope("u", BEFORE, None)),  # capture.mode change_streams: no full document
        (None, envelope("t", None, None)),
        (None, envelope("d", None, None)),  # no pre-image and no key
        (None, envelope("c", None, '["not", "a", "document"]'))]))
    assert [r["_kind"] for r in decoded.rows.to_pylist()] == ["+I"]
    errors = decoded.rejected.column("error").to_pylist()
    assert "an update without its full document: set the connector's capture.mode" in errors[0]
    assert "a truncate event is not a row change" in errors[1]
    assert "a delete without its before image, and no _id in the record's key" in errors[2]
    assert "'after' is not a document" in errors[3]
    region = pa.schema([pa.field("_id", pa.string(), False), pa.field("region", pa.string(), False)])
    with pytest.raises(DecodeError, match="an update without its before image, into a partitioned table"):
        Decoder("debezium-bson", region, ("_id", "region"), key_format="json", partition_keys=("region",)).decode(
            kafka([(None, envelope("u", None, '{"_id": "a", "region": "eu"}'))]))
    moved = Decoder("debezium-bson", region, ("_id", "region"), key_format="json", partition_keys=("region",)).decode(
        kafka([(None, envelope("u", '{"_id": "a", "region": "eu"}', '{"_id": "a", "region": "us"}'))]))
    assert moved.to_pylist() == [{"_id": "a", "region": "eu", "_kind": "-D"}, {"_id": "a", "region": "us", "_kind": "+I"}]


def history(rng: random.Random, n: int, keys: int) -> tuple[list[tuple[str, dict | None]], dict]:
    """(key, event) records of a collection's changes (pre-images or not, a tombstone after each
    delete, fields coming and going), and the table's final rows as STRING columns."""
    state: dict[str, dict] = {}
    out: list[tuple[str, dict | None]] = []
    for i in range(n):
        oid = f"{rng.randrange(keys):024x}"
        key = json.dumps({"id": json.dumps({"$oid": oid})})
        doc = {"_id": {"$oid": oid}, "qty": {"$numberLong": str(rng.randrange(10**12))},
               "price": {"$numberDecimal": f"{rng.randrange(10**5)}.{rng.randrange(100):02d}"},
               "at": {"$date": rng.randrange(10**13)}}
        if rng.random() < 0.5:
            doc["tags"] = [rng.choice("abc") for _ in range(rng.randrange(3))]
        if i > n // 2:
            doc["note"] = rng.choice(["x", "ü", None])
        pre = json.dumps(state[oid]) if oid in state and rng.random() < 0.5 else None
        if oid in state and rng.random() < 0.3:
            out += [(key, envelope("d", pre, None)), (key, None)]
            del state[oid]
        else:
            out.append((key, envelope("u" if oid in state else rng.choice("cr"), pre, json.dumps(doc))))
            state[oid] = doc
    rows = {oid: {"_id": oid} | {f: debezium_bson.text(debezium_bson.natural(doc.get(f)))
                                 for f in ("qty", "price", "at", "tags", "note")} for oid, doc in state.items()}
    return out, rows


def test_a_history_applies_to_the_final_state():
    events, final = history(random.Random(3), 300, 40)
    schema = pa.schema([pa.field("_id", pa.string(), False)] + [(n, pa.string()) for n in ("qty", "price", "at", "tags")])
    decoded = Decoder("debezium-bson", schema, ("_id",)).decode_all(kafka(events))
    assert decoded.new_fields == pa.schema([("note", pa.string())])  # its values wait for the evolved table
    assert applied(decoded.rows.to_pylist(), key="_id") == \
        {oid: {f: v for f, v in row.items() if f != "note"} for oid, row in final.items()}


def test_ingest_debezium_bson_end_to_end(spark, broker, tmp_path):
    from kafka_broker import unique_topic

    topic = unique_topic("mongo")
    broker.create_topic(topic, partitions=1)
    events, final = history(random.Random(8), 400, 80)
    produce(broker, topic, [(k.encode(), json.dumps(e).encode() if e is not None else None) for k, e in events])
    ours, java, lines = ingest_items(spark, broker, tmp_path, topic, format="debezium-bson", key="_id",
                                     table_options={"deletion-vectors.enabled": "true"})
    assert any("every column STRING" in line for line in lines), lines
    expected = sorted(final.values(), key=lambda r: r["_id"])
    assert ours == expected
    assert java == ours


def test_relaxed_dates_db_pointers_and_malformed_events():
    """A relaxed $date (ISO-8601 with its offset) is the instant's milliseconds, as Paimon's CDC
    stores it, and a $dbPointer its BsonDbPointer text; a $date without an offset names no
    instant, an 'after' that is no Extended JSON text, an event without 'op' and a list for a
    scalar column are refused by record. A delete's _id may come from a key in a schema envelope."""
    doc = {"_id": {"$oid": OID}, "created_at": {"$date": "2025-01-03T19:59:53.769+08:00"},
           "created_by": {"$dbPointer": {"$ref": "users", "$id": {"$oid": OID}}}, "tags": None}
    row = Decoder("debezium-bson", STRINGS, ("_id",)).decode(
        kafka([(None, envelope("c", None, json.dumps(doc)))])).to_pylist()[0]
    assert row["created_at"] == str(int(dt.datetime(2025, 1, 3, 11, 59, 53, 769000, tzinfo=dt.timezone.utc)
                                        .timestamp() * 1000))
    assert row["created_by"] == f"BsonDbPointer{{namespace='users', id={OID}}}" and row["tags"] is None
    key = json.dumps({"schema": {"type": "struct"}, "payload": {"id": json.dumps({"$oid": OID})}})
    delete = Decoder("debezium-bson", STRINGS, ("_id",)).decode(kafka([(key, envelope("d", None, None))])).to_pylist()
    assert [(r["_id"], r["_kind"]) for r in delete] == [(OID, "-D")]
    typed = pa.schema([pa.field("_id", pa.string(), False), ("qty", pa.int64())])
    bad = [(STRINGS, envelope("c", None, json.dumps(dict(doc, created_at={"$date": "2025-01-03T19:59:53"})))),
           (STRINGS, envelope("c", None, doc)),
           (STRINGS, {"after": json.dumps(doc), "source": {"db": "a", "collection": "b"}}),
           (typed, envelope("c", None, json.dumps({"_id": "a", "qty": [1]})))]
    decoded = [Decoder("debezium-bson", schema, ("_id",), on_error="skip").decode_all(kafka([(None, e)]))
               for schema, e in bad]
    errors = [d.rejected.column("error")[0].as_py() for d in decoded]
    assert all(d.rows.num_rows == 0 for d in decoded)
    assert "a $date without a zone offset: '2025-01-03T19:59:53'" in errors[0]
    assert "'after' is not Extended JSON text of a document (a dict)" in errors[1]
    assert "not a Debezium change event (no 'op')" in errors[2]
    assert "column 'qty' is int64 but holds '[1]'" in errors[3]
