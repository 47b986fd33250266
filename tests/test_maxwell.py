"""Maxwell's change events (`--format maxwell-json`): every encoding Maxwell's JSON uses, the
event types (bootstrap markers skipped, DDL refused by record), updates that move a row between
partitions, and `paimon-streaming ingest` end to end with the primary key taken from the
events, Java reading the table."""
from __future__ import annotations

import base64
import datetime as dt
import decimal
import json
import random

import pyarrow as pa
import pytest

from change_event_support import applied, ingest_items, produce, records
from paimon_streaming.sinks.decoders import DecodeError, Decoder

TABLE = pa.schema([pa.field("id", pa.int64(), False), ("name", pa.string()), ("price", pa.decimal128(10, 2)),
                   ("born", pa.date32()), ("seen", pa.timestamp("us")), ("at", pa.timestamp("us", tz="UTC")),
                   ("opens", pa.time32("ms")), ("blob", pa.binary()), ("ok", pa.int8()), ("score", pa.float64())])


def wire(row: dict) -> dict:
    """A row as Maxwell writes it (DECIMAL as a number, DATE/DATETIME/TIME as text, TIMESTAMP in
    UTC without a zone, binary as base64)."""
    out = dict(row)
    if row["price"] is not None:
        out["price"] = float(row["price"]) if row["price"] == row["price"].quantize(decimal.Decimal("0.01")) else None
    out["born"] = row["born"].isoformat()
    out["seen"] = row["seen"].isoformat(sep=" ")
    out["at"] = row["at"].astimezone(dt.timezone.utc).replace(tzinfo=None).isoformat(sep=" ")
    out["opens"] = row["opens"].isoformat()
    out["blob"] = base64.b64encode(row["blob"]).decode()
    return out


def random_row(rng: random.Random, key: int) -> dict:
    return {"id": key, "name": rng.choice(["ä", "x y", "", None]),
            "price": decimal.Decimal(rng.randrange(-10**6, 10**6)).scaleb(-2) if rng.random() > 0.1 else None,
            "born": dt.date(1950, 1, 1) + dt.timedelta(days=rng.randrange(30000)),
            "seen": dt.datetime(2020, 1, 1) + dt.timedelta(microseconds=rng.randrange(10**14)),
            "at": dt.datetime(2024, 3, 1, tzinfo=dt.timezone.utc) + dt.timedelta(seconds=rng.randrange(10**7)),
            "opens": dt.time(rng.randrange(24), rng.randrange(60), rng.randrange(60), rng.randrange(1000) * 1000),
            "blob": bytes(rng.randrange(256) for _ in range(rng.randrange(4))), "ok": rng.randrange(2),
            "score": rng.uniform(-1e3, 1e3)}


def history(rng: random.Random, n: int, keys: int) -> tuple[list[dict], dict]:
    """Maxwell records of a source table's changes (with bootstrap markers), and its final state."""
    state: dict[int, dict] = {}
    out = [{"database": "shop", "table": "items", "type": "bootstrap-start", "ts": 1, "data": {}}]
    for i in range(n):
        k = rng.randrange(keys)
        base = {"database": "shop", "table": "items", "ts": 1700000000 + i, "xid": i, "commit": True,
                "primary_key_columns": ["id"], "primary_key": [k]}
        if k in state and rng.random() < 0.25:
            out.append(dict(base, type="delete", data=wire(state.pop(k))))
        elif k in state:
            new = random_row(rng, k)
            old = {c: v for c, v in wire(state[k]).items() if wire(new)[c] != v}
            out.append(dict(base, type="update", data=wire(new), old=old))
            state[k] = new
        else:
            state[k] = random_row(rng, k)
            out.append(dict(base, type=rng.choice(["insert", "bootstrap-insert"]), data=wire(state[k])))
    out.append({"database": "shop", "table": "items", "type": "bootstrap-complete", "ts": 2, "data": {}})
    return out, state


def test_every_encoding_and_event_type_round_trips():
    events, final = history(random.Random(3), 400, 60)
    out = Decoder("maxwell-json", TABLE, ("id",)).decode(records([json.dumps(e).encode() for e in events]))
    kinds = {"insert": "+I", "bootstrap-insert": "+I", "update": "+U", "delete": "-D"}
    assert out.column("_kind").to_pylist() == [kinds[e["type"]] for e in events if e["type"] in kinds]
    assert applied(out.to_pylist()) == final


def test_updates_moving_partitions_ddl_and_new_fields():
    table = pa.schema([pa.field("region", pa.string(), False), pa.field("id", pa.int64(), False), ("qty", pa.int32())])
    events = [{"type": "insert", "data": {"region": "eu", "id": 1, "qty": 1}},
              {"type": "update", "data": {"region": "us", "id": 1, "qty": 1}, "old": {"region": "eu"}},
              {"type": "update", "data": {"region": "us", "id": 1, "qty": 2}, "old": {"qty": 1}},
              {"type": "table-alter", "sql": "ALTER TABLE items ADD note TEXT", "def": {}},
              {"type": "insert", "data": {"region": "eu", "id": 2, "qty": 1, "note": "new"}}]
    values = [json.dumps(e).encode() for e in events]
    d = Decoder("maxwell-json", table, ("region", "id"), key_format="json", partition_keys=("region",), on_error="skip")
    decoded = d.decode_all(records(values))
    assert [(r["region"], r["id"], r["qty"], r["_kind"]) for r in decoded.rows.to_pylist()] == [
        ("eu", 1, 1, "+I"), ("eu", 1, 1, "-D"), ("us", 1, 1, "+I"), ("us", 1, 2, "+U"), ("eu", 2, 1, "+I")]
    assert decoded.rejected.column("offset").to_pylist() == [3]
    assert "operation 'table-alter' event is not a row change" in decoded.rejected.column("error")[0].as_py()
    assert decoded.new_fields == pa.schema([("note", pa.string())])
    with pytest.raises(DecodeError, match="offset=3 .*table-alter"):
        Decoder("maxwell-json", table, ("region", "id"), key_format="json").decode(records(values))


def test_any_json_value_reaches_a_column_as_paimons_cdc_text_of_it():
    """Paimon's Maxwell parser takes every value as text, cast to the column's type (its own new
    tables are all STRING): a number in a STRING column is the text of the BigDecimal Jackson
    reads (trailing zeros stripped), an object compact JSON as Jackson writes it, "7" in a
    BIGINT column 7; text that is no number is refused naming the column."""
    table = pa.schema([pa.field("id", pa.string(), False), ("weight", pa.string()), ("doc", pa.string()),
                       ("qty", pa.int64()), ("price", pa.decimal128(10, 2)), ("ok", pa.string())])

    def insert(data: dict) -> bytes:
        return json.dumps({"database": "shop", "table": "t", "type": "insert", "data": data},
                          ensure_ascii=False).encode()
    rows = Decoder("maxwell-json", table, ("id",)).decode(records([
        insert({"id": 101, "weight": 3.14, "doc": {"a": [1, "@", "x\u0001\"é"], "b": None}, "qty": "7",
                "price": "1.50", "ok": True}).replace(b'"@"', b"2.50"),  # a number's digits as written
        insert({"id": "102", "weight": 1e20, "doc": [], "qty": 8, "price": 2, "ok": "yes"}),
        insert({"id": "103", "weight": 100.0}),
        insert({"id": -0, "weight": -0.0, "doc": "text", "qty": None, "price": None, "ok": False})])).to_pylist()
    assert [tuple(r.values())[:-1] for r in rows] == [
        ("101", "3.14", '{"a":[1,2.5,"x\\u0001\\"é"],"b":null}', 7, decimal.Decimal("1.50"), "true"),
        ("102", "1E+20", "[]", 8, decimal.Decimal("2.00"), "yes"), ("103", "1E+2", None, None, None, None),
        ("0", "0", "text", None, None, "false")]
    with pytest.raises(DecodeError, match="offset=1 .*column 'qty' has text that is no decimal integer"):
        Decoder("maxwell-json", table, ("id",)).decode(records([insert({"id": "1"}), insert({"id": "2", "qty": "x"})]))


def test_text_into_a_boolean_column_as_paimons_cast_reads_it():
    """Paimon's CDC casts text to BOOLEAN as t, true, y, yes, 1 and f, false, n, no, 0 in any
    case (`BinaryStringUtils.toBoolean`, not trimmed): so does a BOOLEAN column; other text (" yes",
    "2", "on") is refused naming the column, as Java's cast fails on it."""
    table = pa.schema([pa.field("id", pa.int64(), False), ("ok", pa.bool_())])

    def insert(i: int, ok) -> bytes:
        return json.dumps({"database": "shop", "table": "t", "type": "insert", "data": {"id": i, "ok": ok}}).encode()
    values = ["yes", "T", "Y", "true", "1", 1, True, "no", "F", "N", "FALSE", "0", 0, False, None]
    rows = Decoder("maxwell-json", table, ("id",)).decode(records([insert(i, v) for i, v in enumerate(values)]))
    assert rows.column("ok").to_pylist() == [True] * 7 + [False] * 7 + [None]
    for bad in (" yes", "2", "on", 2):
        with pytest.raises(DecodeError, match="column 'ok' .* is no BOOLEAN"):
            Decoder("maxwell-json", table, ("id",)).decode(records([insert(1, bad)]))


def test_digits_beyond_a_decimals_scale_are_rounded_half_up_as_paimons_cast():
    """Paimon's CDC reads a DECIMAL's text as a BigDecimal set to the column's scale HALF_UP
    (`Decimal.fromBigDecimal`): 1.005 into DECIMAL(10, 2) is 1.01, -1.005 -1.01, 5E-3 0.01. A number
    that then has more digits than the precision, which Java stores as null, is refused naming
    the column."""
    table = pa.schema([pa.field("id", pa.int64(), False), ("price", pa.decimal128(10, 2))])

    def insert(i: int, price) -> bytes:
        return json.dumps({"database": "shop", "table": "t", "type": "insert", "data": {"id": i, "price": price}}) \
            .encode()
    values = ["1.005", "-1.005", "1.0049999", "5E-3", "99999999.994", "1.5", None]
    rows = Decoder("maxwell-json", table, ("id",)).decode(records(
        [insert(i, v) for i, v in enumerate(values)] + [insert(7, 1.005).replace(b"1.005", b"2.675")]))
    assert rows.column("price").to_pylist() == [decimal.Decimal(d) if d else None for d in (
        "1.01", "-1.01", "1.00", "0.01", "99999999.99", "1.50", None, "2.68")]
    with pytest.raises(DecodeError, match="column 'price' has a number beyond DECIMAL\\(10, 2\\)"):
        Decoder("maxwell-json", table, ("id",)).decode(records([insert(1, "99999999.995")]))


def test_ingest_maxwell_end_to_end(spark, broker, tmp_path):
    from kafka_broker import unique_topic

    topic = unique_topic("maxwell")
    broker.create_topic(topic, partitions=2)
    events, final = history(random.Random(8), 600, 120)
    produce(broker, topic, [(json.dumps({"database": "shop", "table": "items", "pk.id": e.get("primary_key", [0])[0]})
                             .encode(), json.dumps(e).encode()) for e in events])
    ddl = ("id BIGINT NOT NULL, name STRING, price DECIMAL(10,2), born DATE, seen TIMESTAMP_NTZ, at TIMESTAMP, "
           "opens STRING, blob BINARY, ok TINYINT, score DOUBLE")
    ours, java, _ = ingest_items(spark, broker, tmp_path, topic, format="maxwell-json", schema=ddl,
                                 table_options={"deletion-vectors.enabled": "true"})
    assert ours == sorted(({**v, "opens": v["opens"].isoformat()} for v in final.values()), key=lambda r: r["id"])
    assert java == ours
