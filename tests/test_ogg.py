"""Oracle GoldenGate's change records (`--format ogg-json`): its JSON formatter's operations
(I, U, D; T refused by record), its value encodings, updates that move a row between
partitions, and `paimon-streaming ingest` end to end with the primary key taken from the
records' `primary_keys`, Java reading the table."""
from __future__ import annotations

import datetime as dt
import decimal
import json
import random

import pyarrow as pa
import pytest

import test_maxwell
from change_event_support import applied, ingest_items, produce, records
from paimon_streaming.sinks.decoders import DecodeError, Decoder

TABLE = pa.schema([pa.field("id", pa.int64(), False), ("name", pa.string()), ("price", pa.decimal128(10, 2)),
                   ("born", pa.date32()), ("seen", pa.timestamp("us")), ("at", pa.timestamp("us", tz="UTC")),
                   ("ok", pa.int8()), ("score", pa.float64())])


def wire(row: dict | None) -> dict | None:
    """A row as GoldenGate's JSON formatter writes it: numbers as JSON numbers, dates and
    timestamps as text (a TIMESTAMP WITH TIME ZONE with its offset)."""
    if row is None:
        return None
    out = dict(row)
    if row["price"] is not None:
        out["price"] = float(row["price"])
    out["born"] = row["born"].isoformat()
    out["seen"] = row["seen"].isoformat(sep=" ")
    out["at"] = row["at"].astimezone(dt.timezone(dt.timedelta(hours=-5))).isoformat(sep=" ")
    return out


def random_row(rng: random.Random, key: int) -> dict:
    """Maxwell's test rows, less the TIME and binary columns (not in this table)."""
    row = test_maxwell.random_row(rng, key)
    del row["opens"], row["blob"]
    return row


def history(rng: random.Random, n: int, keys: int) -> tuple[list[dict], dict]:
    """GoldenGate records of a source table's changes, and its final state."""
    state: dict[int, dict] = {}
    out = []
    for i in range(n):
        k = rng.randrange(keys)
        base = {"table": "SHOP.ITEMS", "op_ts": "2024-03-01 10:00:00.000000", "current_ts": "2024-03-01T10:00:01.000000",
                "pos": f"{i:020d}", "primary_keys": ["id"]}
        if k in state and rng.random() < 0.25:
            out.append(dict(base, op_type="D", before=wire(state.pop(k))))
        elif k in state:
            new = random_row(rng, k)
            out.append(dict(base, op_type="U", before=wire(state[k]), after=wire(new)))
            state[k] = new
        else:
            state[k] = random_row(rng, k)
            out.append(dict(base, op_type="I", after=wire(state[k])))
    return out, state


def test_every_encoding_and_operation_round_trips():
    events, final = history(random.Random(4), 400, 60)
    out = Decoder("ogg-json", TABLE, ("id",)).decode(records([json.dumps(e).encode() for e in events]))
    kinds = {"I": "+I", "U": "+U", "D": "-D"}
    assert out.column("_kind").to_pylist() == [kinds[e["op_type"]] for e in events]
    assert applied(out.to_pylist()) == final


def test_moved_rows_truncates_and_values_not_decoded():
    table = pa.schema([pa.field("region", pa.string(), False), pa.field("id", pa.int64(), False), ("qty", pa.int32())])
    events = [{"op_type": "I", "after": {"region": "eu", "id": 1, "qty": 1}},
              {"op_type": "U", "before": {"region": "eu", "id": 1, "qty": 1}, "after": {"region": "us", "id": 1, "qty": 1}},
              {"op_type": "T", "before": None, "after": None},
              {"op_type": "D", "before": {"region": "us", "id": 1, "qty": 1}}]
    d = Decoder("ogg-json", table, ("region", "id"), key_format="json", partition_keys=("region",), on_error="skip")
    decoded = d.decode_all(records([json.dumps(e).encode() for e in events]))
    assert [(r["region"], r["id"], r["_kind"]) for r in decoded.rows.to_pylist()] == [
        ("eu", 1, "+I"), ("eu", 1, "-D"), ("us", 1, "+I"), ("us", 1, "-D")]
    assert decoded.rejected.column("offset").to_pylist() == [2]
    assert "a truncate event is not a row change" in decoded.rejected.column("error")[0].as_py()
    refused = [(pa.schema([pa.field("id", pa.int64(), False), ("at", pa.timestamp("us", tz="UTC"))]),
                {"id": 1, "at": "2024-03-01 10:00:00"}, "column 'at'.*expected a zone offset"),
               (pa.schema([pa.field("id", pa.int64(), False), ("raw", pa.binary())]),
                {"id": 1, "raw": "AAE="}, "column 'raw' is binary, whose text GoldenGate's JSON formatter does not")]
    for schema, after, error in refused:
        with pytest.raises(DecodeError, match=f"offset=0 .*{error}"):
            Decoder("ogg-json", schema, ("id",)).decode(records([json.dumps({"op_type": "I", "after": after}).encode()]))


def test_values_all_as_text_or_typed_reach_any_column():
    """GoldenGate's treatAllColumnsAsStrings writes every value as text, and a table Paimon's CDC
    created is all STRING: numbers and text go into number, BOOLEAN and STRING columns as Paimon
    casts their text (an update moving the key, its before image text too; "Y" is true, a DECIMAL
    rounded HALF_UP to the column's scale)."""
    table = pa.schema([pa.field("ID", pa.int64(), False), ("NAME", pa.string()), ("AMT", pa.decimal128(10, 2)),
                       ("RATE", pa.float64()), ("OK", pa.bool_())])
    events = [{"table": "SHOP.ITEMS", "op_type": "I",
               "after": {"ID": "1", "NAME": 12, "AMT": "1.50", "RATE": "0.5", "OK": "Y"}},
              {"table": "SHOP.ITEMS", "op_type": "U", "before": {"ID": "1", "NAME": "12"},
               "after": {"ID": 2, "NAME": "x", "AMT": 1.005, "RATE": 2, "OK": "no"}}]
    rows = Decoder("ogg-json", table, ("ID",)).decode(records([json.dumps(e).encode() for e in events])).to_pylist()
    assert [tuple(r.values()) for r in rows] == [
        (1, "12", decimal.Decimal("1.50"), 0.5, True, "+I"), (1, "12", None, None, None, "-D"),
        (2, "x", decimal.Decimal("1.01"), 2.0, False, "+I")]


def test_ingest_ogg_end_to_end(spark, broker, tmp_path):
    from kafka_broker import unique_topic

    topic = unique_topic("ogg")
    broker.create_topic(topic, partitions=1)
    events, final = history(random.Random(9), 400, 100)
    produce(broker, topic, [(None, json.dumps(e).encode()) for e in events])
    ddl = "id BIGINT NOT NULL, name STRING, price DECIMAL(10,2), born DATE, seen TIMESTAMP_NTZ, at TIMESTAMP, ok TINYINT, " \
          "score DOUBLE"
    ours, java, _ = ingest_items(spark, broker, tmp_path, topic, format="ogg-json", schema=ddl,
                                 table_options={"deletion-vectors.enabled": "true"})
    assert ours == sorted(final.values(), key=lambda r: r["id"])
    assert java == ours
