"""Avro records with nested types (`--format avro`, and the schema registry's): records as ROWs,
arrays, maps, enums, fixed, named types reused, logical types at any depth; values built in
their writer's types and cast safely to the table's, so a value that does not fit its column is
refused naming it, never truncated; the rows written to a table Java reads back."""
from __future__ import annotations

import datetime as dt
import decimal
import io
import json
import re

import fastavro
import pyarrow as pa
import pytest

from change_event_support import records
from paimon_streaming.sinks.avro_types import AvroTypeError, arrow_schema
from paimon_streaming.sinks.decoders import DecodeError, Decoder

ADDRESS = {"type": "record", "name": "Address", "namespace": "geo", "fields": [
    {"name": "city", "type": "string"}, {"name": "zip", "type": ["null", "string"], "default": None},
    {"name": "kind", "type": {"type": "enum", "name": "Kind", "symbols": ["HOME", "WORK"]}}]}
ORDER = {"type": "record", "name": "Order", "namespace": "shop", "fields": [
    {"name": "id", "type": "long"},
    {"name": "ship", "type": ADDRESS},
    {"name": "bill", "type": ["null", "geo.Address"], "default": None},          # the named type again
    {"name": "lines", "type": {"type": "array", "items": {"type": "record", "name": "Line", "fields": [
        {"name": "sku", "type": "string"}, {"name": "qty", "type": "int"},
        {"name": "price", "type": {"type": "bytes", "logicalType": "decimal", "precision": 9, "scale": 2}}]}}},
    {"name": "attrs", "type": {"type": "map", "values": ["null", "long"]}},
    {"name": "digest", "type": {"type": "fixed", "name": "Md5", "size": 4}},
    {"name": "total", "type": {"type": "fixed", "name": "Amount", "size": 8, "logicalType": "decimal",
                               "precision": 12, "scale": 3}},
    {"name": "placed", "type": {"type": "long", "logicalType": "timestamp-micros"}},
    {"name": "local", "type": ["null", {"type": "long", "logicalType": "local-timestamp-millis"}], "default": None},
    {"name": "day", "type": {"type": "int", "logicalType": "date"}},
    {"name": "at", "type": {"type": "int", "logicalType": "time-millis"}},
    {"name": "ref", "type": {"type": "string", "logicalType": "uuid"}},
    {"name": "tags", "type": {"type": "array", "items": "geo.Kind"}}]}


def row(i: int) -> dict:
    return {"id": i, "ship": {"city": f"c{i}", "zip": None if i % 2 else f"{i:05d}", "kind": "HOME"},
            "bill": None if i % 3 == 0 else {"city": "b", "zip": "1", "kind": "WORK"},
            "lines": [{"sku": f"s{j}", "qty": j, "price": decimal.Decimal(f"{j}.{i % 100:02d}")} for j in range(i % 3)],
            "attrs": {"a": i, "b": None}, "digest": bytes([i % 256, 1, 2, 3]),
            "total": decimal.Decimal(f"{i}.125"),
            "placed": dt.datetime(2024, 3, 1, 10, 0, tzinfo=dt.timezone.utc) + dt.timedelta(microseconds=i),
            "local": dt.datetime(2024, 3, 1, 12, 30, 0, 5000), "day": dt.date(2024, 3, 1 + i % 28),
            "at": dt.time(12, 30, 1, 5000), "ref": f"b84dbfe2-fe4c-4953-a225-990ea3700f{i % 100:02d}",
            "tags": ["WORK", "HOME"][: i % 3]}


def avro(schema: dict, rows: list[dict]) -> list[bytes]:
    parsed = fastavro.parse_schema(schema)
    out = []
    for r in rows:
        buffer = io.BytesIO()
        fastavro.schemaless_writer(buffer, parsed, r)
        out.append(buffer.getvalue())
    return out


def test_nested_types_map_to_columns():
    schema = arrow_schema(ORDER)
    address = pa.struct([pa.field("city", pa.string(), False), ("zip", pa.string()), pa.field("kind", pa.string(), False)])
    assert schema.field("ship").type == address and schema.field("bill").type == address
    assert schema.field("bill").nullable and not schema.field("ship").nullable
    assert schema.field("lines").type == pa.list_(pa.field("element", pa.struct(
        [pa.field("sku", pa.string(), False), pa.field("qty", pa.int32(), False),
         pa.field("price", pa.decimal128(9, 2), False)]), False))
    assert schema.field("attrs").type == pa.map_(pa.string(), pa.field("value", pa.int64()))
    assert [schema.field(n).type for n in ("digest", "total", "placed", "local", "day", "at", "ref")] == [
        pa.binary(), pa.decimal128(12, 3), pa.timestamp("us", tz="UTC"), pa.timestamp("ms"), pa.date32(),
        pa.time32("ms"), pa.string()]
    assert schema.field("tags").type == pa.list_(pa.field("element", pa.string(), False))
    for bad, error in [
            ({"name": "x", "type": ["null", "int", "string"]}, "a union of .* has no column type"),
            ({"name": "x", "type": {"type": "record", "name": "Node", "fields": [
                {"name": "next", "type": ["null", "Node"]}]}}, "the record Node contains itself"),
            ({"name": "x", "type": "geo.Nowhere"}, "type 'geo.Nowhere' is not defined before its use"),
            ({"name": "x", "type": {"type": "bytes", "logicalType": "decimal", "precision": 40, "scale": 2}},
             "wider than Paimon's 38 digits")]:
        with pytest.raises(AvroTypeError, match=error):
            arrow_schema({"type": "record", "name": "T", "fields": [bad]})


def test_nested_records_decode_and_java_reads_them(catalog):
    from java_oracle import get_oracle

    schema = arrow_schema(ORDER)
    rows = [row(i) for i in range(30)]
    out = Decoder("avro", schema, avro_schema=json.dumps(ORDER)).decode(records(avro(ORDER, rows)))
    got = out.to_pylist()
    for r in rows:  # as Arrow gives them back: maps as (key, value) pairs
        r["attrs"] = list(r["attrs"].items())
    assert got == rows
    t = catalog.create_table("db.orders", schema)
    t.write_arrow(pa.Table.from_batches([out]))
    assert t.to_arrow().to_pylist() == rows
    java = sorted(get_oracle().read(t.path), key=lambda r: r["id"])
    assert [(r["id"], r["ship"]["city"], len(r["lines"]), r["tags"]) for r in java] == \
        [(r["id"], r["ship"]["city"], len(r["lines"]), r["tags"]) for r in rows]


def test_values_are_cast_to_the_table_only_where_they_fit():
    writer = {"type": "record", "name": "T", "fields": [
        {"name": "id", "type": "long"}, {"name": "n", "type": "double"}, {"name": "at", "type": {
            "type": "long", "logicalType": "timestamp-millis"}}]}
    narrow = pa.schema([pa.field("id", pa.int32(), False), ("n", pa.int64()), ("at", pa.timestamp("ms", tz="UTC"))])
    at = dt.datetime(2024, 1, 1, tzinfo=dt.timezone.utc)
    fits = Decoder("avro", narrow, avro_schema=json.dumps(writer)).decode(
        records(avro(writer, [{"id": 7, "n": 2.0, "at": at}])))
    assert fits.to_pylist() == [{"id": 7, "n": 2, "at": at}]
    for value, error in [({"id": 7, "n": 2.5, "at": at}, "column 'n' is int64 but the Avro writer schema gives double"),
                         ({"id": 2**40, "n": 1.0, "at": at}, "column 'id' is int32 but the Avro writer schema gives int64")]:
        with pytest.raises(DecodeError, match=f"offset=0 .*{error}"):
            Decoder("avro", narrow, avro_schema=json.dumps(writer)).decode(records(avro(writer, [value])))
    skipped = Decoder("avro", narrow, avro_schema=json.dumps(writer), on_error="skip").decode_all(
        records(avro(writer, [{"id": 1, "n": 1.0, "at": at}, {"id": 2, "n": 0.5, "at": at}])))
    assert skipped.rows.column("id").to_pylist() == [1] and skipped.rejected.column("offset").to_pylist() == [1]
    wall = narrow.set(2, pa.field("at", pa.timestamp("ms")))
    with pytest.raises(DecodeError, match="column 'at' is a TIMESTAMP WITHOUT LOCAL TIME ZONE but the Avro writer "
                                          "schema has an instant"):
        Decoder("avro", wall, avro_schema=json.dumps(writer)).decode(records(avro(writer, [{"id": 1, "n": 1.0, "at": at}])))


def test_referenced_types_inlined_wherever_the_schema_uses_them():
    """A registry schema's references (named types defined in other subjects), used as a map's
    values, in the `{"type": <name>}` form, in a union and in the referenced types themselves:
    each defined at its first use, named after it, so the schema stands alone and decodes as the
    producer wrote it. Other input: AvroTypeError naming the field."""
    from paimon_streaming.sinks.avro_types import inline_references
    kind = {"type": "enum", "name": "Kind", "namespace": "geo", "symbols": ["HOME", "WORK"]}
    address = {"type": "record", "name": "Address", "namespace": "geo", "fields": [
        {"name": "city", "type": "string"}, {"name": "kind", "type": "Kind"}]}
    plain = {"type": "record", "name": "Note", "fields": [{"name": "text", "type": "string"}]}  # no namespace
    order = {"type": "record", "name": "Order", "namespace": "shop", "fields": [
        {"name": "id", "type": {"type": "long"}},
        {"name": "by_name", "type": {"type": "map", "values": "geo.Address"}},
        {"name": "home", "type": {"type": "geo.Address"}},
        {"name": "note", "type": ["null", "Note"], "default": None},
        {"name": "size", "type": 5}]}
    inlined = inline_references(order, {"geo.Kind": kind, "geo.Address": address, "Note": plain})
    fields = {f["name"]: f["type"] for f in inlined["fields"]}
    assert fields["by_name"]["values"]["fields"][1]["type"] == kind  # defined at its first use
    assert fields["home"] == {"type": "geo.Address"} and fields["size"] == 5
    assert fields["note"][1] == {**plain, "namespace": ""}  # keeps its own (empty) namespace inside shop
    inlined["fields"] = [f for f in inlined["fields"] if f["name"] not in ("home", "size")]  # fastavro: no such forms
    parsed = fastavro.parse_schema(inlined)
    row = {"id": 1, "by_name": {"a": {"city": "Oslo", "kind": "WORK"}}, "note": {"text": "hi"}}
    body = io.BytesIO()
    fastavro.schemaless_writer(body, parsed, row)
    assert fastavro.schemaless_reader(io.BytesIO(body.getvalue()), parsed) == row
    assert arrow_schema(inlined).field("note").type == pa.struct([pa.field("text", pa.string(), False)])
    with pytest.raises(AvroTypeError, match="the Avro schema must be a record"):
        arrow_schema({"type": "array", "items": "long"})
    with pytest.raises(AvroTypeError, match="Avro field 'size': 5 is not an Avro type"):
        arrow_schema({**order, "fields": [order["fields"][0], order["fields"][-1]]})


def test_a_recursive_writer_schema_is_refused_naming_the_field(tmp_path):
    """A record that contains itself (a linked list) is valid Avro no column can hold: decoding
    with it as --avro-schema, or creating a table from it, is a DecodeError naming the field;
    no table is created."""
    import paimon_streaming as ps
    from paimon_streaming.sinks.ingest import IngestConfig, ensure_table
    node = {"type": "record", "name": "Node", "namespace": "shop", "fields": [
        {"name": "id", "type": "long"}, {"name": "next", "type": ["null", "Node"], "default": None}]}
    body = io.BytesIO()
    fastavro.schemaless_writer(body, fastavro.parse_schema(node), {"id": 1, "next": {"id": 2, "next": None}})
    table = pa.schema([pa.field("id", pa.int64(), False)])
    error = r"Avro field 'next': the record shop.Node contains itself, which no column can hold"
    with pytest.raises(DecodeError, match=f"the Avro schema: {error}"):
        Decoder("avro", table, ("id",), avro_schema=json.dumps(node)).decode(records([body.getvalue()]))
    avsc = tmp_path / "node.avsc"
    avsc.write_text(json.dumps(node))
    cfg = IngestConfig(bootstrap_servers="h:1", warehouse=str(tmp_path), table="db.nodes", topics=("t",),
                       format="avro", avro_schema=str(avsc), primary_keys=("id",))
    with pytest.raises(DecodeError, match=error):
        ensure_table(None, cfg, lambda line: None, lambda: [])
    assert not ps.Catalog(str(tmp_path)).table_exists("db.nodes")


@pytest.mark.parametrize("avro_type, value, column, error", [
    ("string", "1e39", pa.float32(), "'1e39' would be inf"),
    ("string", "1e400", pa.float64(), "'1e400' would be inf"),
    ("string", "NaN", pa.float64(), "'NaN' would be nan"),
    ("string", "inf", pa.float64(), "'inf' would be inf"),
    ("string", "true", pa.bool_(), "is BOOLEAN but .* no truth value"),
    ("string", "1", pa.bool_(), "is BOOLEAN but .* no truth value"),
    ({"type": "long", "logicalType": "local-timestamp-millis"}, dt.datetime(2026, 1, 5, 10, 30), pa.date32(),
     "is a DATE but .* time of day would be dropped"),
    ({"type": "long", "logicalType": "timestamp-micros"}, dt.datetime(2026, 1, 5, 23, 30, tzinfo=dt.timezone.utc),
     pa.date32(), "is a DATE but .* time of day would be dropped"),
    ("long", 1767607200123, pa.timestamp("ms"), "plain number .* names no epoch unit"),
    ("long", 1767607200123, pa.timestamp("us", tz="UTC"), "plain number .* names no epoch unit"),
    ("int", 20000, pa.date32(), "plain number .* names no epoch unit"),
    ({"type": "record", "name": "In", "fields": [{"name": "a", "type": "string"}]}, {"a": "1e39"},
     pa.struct([("a", pa.float32())]), "column 'v.a' .* would be inf"),
    ({"type": "array", "items": "string"}, ["true"], pa.list_(pa.bool_()), "column 'v.element' is BOOLEAN")])
def test_casts_refuse_what_json_refuses(avro_type, value, column, error):
    """Text beyond a FLOAT's/DOUBLE's range was stored as infinity, NaN/inf and 1/true text taken
    as numbers and truth values, a timestamp into DATE lost its time of day, a plain number into
    TIMESTAMP/DATE was read in the column's unit: each a poison record naming the column now."""
    writer = {"type": "record", "name": "R", "fields": [{"name": "id", "type": "long"}, {"name": "v", "type": avro_type}]}
    table = pa.schema([("id", pa.int64()), ("v", column)])
    out = Decoder("avro", table, avro_schema=json.dumps(writer), on_error="dead-letter").decode_all(
        records(avro(writer, [{"id": 1, "v": value}])))
    assert out.rows.num_rows == 0
    assert re.search(error, out.rejected.column("error")[0].as_py())


def test_time_micros_and_nanosecond_timestamps_keep_their_digits():
    writer = {"type": "record", "name": "R", "fields": [
        {"name": "t", "type": {"type": "long", "logicalType": "time-micros"}},
        {"name": "i", "type": {"type": "long", "logicalType": "timestamp-nanos"}},
        {"name": "w", "type": {"type": "long", "logicalType": "local-timestamp-nanos"}}]}
    schema = arrow_schema(writer)
    assert schema.types == [pa.time64("us"), pa.timestamp("ns", tz="UTC"), pa.timestamp("ns")]
    raw = avro(writer, [{"t": dt.time(10, 0, 0, 123456), "i": 1767607200123456789, "w": 1767607200123456789}])
    got = Decoder("avro", schema, avro_schema=json.dumps(writer)).decode(records(raw))
    assert got.column("t").to_pylist() == [dt.time(10, 0, 0, 123456)]
    assert got.column("i").cast(pa.int64()).to_pylist() == got.column("w").cast(pa.int64()).to_pylist() == \
        [1767607200123456789]
    millis = pa.schema([("t", pa.time32("ms")), ("i", pa.int64()), ("w", pa.timestamp("ns"))])  # TIME keeps ms
    assert Decoder("avro", millis, avro_schema=json.dumps(writer)).decode(records(raw)).column("t").to_pylist() == \
        [dt.time(10, 0, 0, 123000)]
