"""AWS DMS's change records (`--format aws-dms-json`): its operations (load, insert, update,
delete), the `BI_` before image of updates (keys that change, rows moving between partitions),
control records (skipped; drop-table and truncate-table refused by record), its value
encodings, and `paimon-streaming ingest` end to end with the table evolving and Java reading it."""
from __future__ import annotations

import datetime as dt
import decimal
import json
import random

import pyarrow as pa
import pytest

import test_ogg
from change_event_support import applied, ingest_items, produce, records
from paimon_streaming.sinks.decoders import DecodeError, Decoder

TABLE = test_ogg.TABLE


def wire(row: dict) -> dict:
    """A row as DMS's JSON messages carry it: numbers as JSON numbers, dates as text, a
    DATETIME's wall time with the `Z` DMS appends, an instant as UTC text with `Z`."""
    out = dict(row)
    if row["price"] is not None:
        out["price"] = float(row["price"])
    out["born"] = row["born"].isoformat()
    out["seen"] = row["seen"].isoformat() + "Z"
    out["at"] = row["at"].astimezone(dt.timezone.utc).replace(tzinfo=None).isoformat() + "Z"
    return out


def message(operation: str, data: dict | None, record_type: str = "data") -> dict:
    out = {"metadata": {"timestamp": "2024-10-27T12:39:03.210671Z", "record-type": record_type,
                        "operation": operation, "partition-key-type": "schema-table", "schema-name": "shop",
                        "table-name": "items", "transaction-id": 670014899490}}
    return out if data is None else dict(out, data=data)


def history(rng: random.Random, n: int, keys: int, key_changes: bool) -> tuple[list[dict], dict]:
    """DMS records of a source table's changes (a full load, then CDC; updates with the before
    image of all columns or none, and, when `key_changes`, updates that change the key), and
    the table's final state."""
    state: dict[int, dict] = {}
    out = [message("create-table", None, "control")]
    for i in range(n):
        k = rng.randrange(keys)
        if k in state and rng.random() < 0.25:
            out.append(message("delete", wire(state.pop(k))))
        elif k in state:
            new_key = k
            if key_changes and rng.random() < 0.2:  # to a key no row holds (out of the range picked from)
                new_key = rng.choice([j for j in range(keys, 2 * keys) if j not in state])
            new = test_ogg.random_row(rng, new_key)
            data = wire(new)
            if new_key != k or rng.random() < 0.5:
                data.update({"BI_" + c: v for c, v in wire(state[k]).items()})
            out.append(message("update", data))
            del state[k]
            state[new_key] = new
        else:
            state[k] = test_ogg.random_row(rng, k)
            out.append(message("load" if i < n // 4 else "insert", wire(state[k])))
    return out, state


def test_every_encoding_and_operation_round_trips():
    events, final = history(random.Random(4), 400, 60, key_changes=True)
    out = Decoder("aws-dms-json", TABLE, ("id",)).decode(records([json.dumps(e).encode() for e in events]))
    assert applied(out.to_pylist()) == final
    moved = sum(1 for e in events if e["metadata"]["operation"] == "update" and e["data"].get("BI_id") not in
                (None, e["data"]["id"]))
    kinds = {"load": ["+I"], "insert": ["+I"], "update": ["+U"], "delete": ["-D"]}
    assert moved and out.column("_kind").to_pylist() == [
        k for e in events[1:] for k in (["-D", "+I"] if e["data"].get("BI_id") not in (None, e["data"]["id"])
                                        else kinds[e["metadata"]["operation"]])]
    assert "BI_name" not in out.schema.names


def test_paimons_schema_evolution_records():
    """The records of Paimon's own aws-dms-json test (kafka/aws-dms/table/schemaevolution): a new
    column arriving with the rows, a delete, an update with its before image."""
    lines = [
        {"data": {"id": 101, "name": "scooter", "weight": 3.14}, "op": "insert"},
        {"data": {"id": 103, "name": "drill bits", "weight": 0.8, "age": 18}, "op": "insert"},
        {"data": {"id": 105, "name": "hammer", "weight": 0.875, "address": "Shanghai"}, "op": "insert"},
        {"data": {"id": 101, "name": "scooter", "weight": 3.14}, "op": "delete"},
        {"data": {"id": 105, "name": "hammer", "weight": 0.875, "address": "Beijing", "BI_id": 105,
                  "BI_name": "hammer", "BI_weight": 0.875, "BI_address": "Shanghai"}, "op": "update"}]
    schema = pa.schema([pa.field("id", pa.int32(), False), ("name", pa.string()), ("weight", pa.float64())])
    decoded = Decoder("aws-dms-json", schema, ("id",)).decode_all(
        records([json.dumps(message(line["op"], line["data"])).encode() for line in lines]))
    assert decoded.new_fields == pa.schema([("age", pa.int64()), ("address", pa.string())])
    assert [(r["id"], r["_kind"]) for r in decoded.rows.to_pylist()] == [(101, "+I"), (103, "+I"), (105, "+I"),
                                                                      (101, "-D"), (105, "+U")]


def test_moved_rows_control_records_and_values_not_decoded():
    table = pa.schema([pa.field("region", pa.string(), False), pa.field("id", pa.int64(), False), ("qty", pa.int32())])
    events = [message("insert", {"region": "eu", "id": 1, "qty": 1}),
              message("add-column", None, "control"),
              message("update", {"region": "us", "id": 1, "qty": 2, "BI_region": "eu", "BI_id": 1}),
              message("truncate-table", None, "control"),
              message("update", {"region": "us", "id": 1, "qty": 3, "BI_id": 1}),
              message("delete", {"region": "us", "id": 1, "qty": 3}),
              message("drop-table", None, "control"),
              message("upsert", {"region": "us", "id": 1, "qty": 3})]
    d = Decoder("aws-dms-json", table, ("region", "id"), key_format="json", partition_keys=("region",), on_error="skip")
    decoded = d.decode_all(records([json.dumps(e).encode() for e in events]))
    assert [(r["region"], r["id"], r["_kind"]) for r in decoded.rows.to_pylist()] == [
        ("eu", 1, "+I"), ("eu", 1, "-D"), ("us", 1, "+I"), ("us", 1, "-D")]
    errors = dict(zip(decoded.rejected.column("offset").to_pylist(), decoded.rejected.column("error").to_pylist()))
    assert sorted(errors) == [3, 4, 6, 7]
    assert "operation 'truncate-table' event is not a row change" in errors[3]
    assert "update without the before image of key columns ['region'], into a partitioned table" in errors[4]
    assert "operation 'drop-table' event is not a row change" in errors[6]
    assert "operation 'upsert' event is not a row change" in errors[7]
    # unpartitioned: an update without a before image keeps its key (as Paimon's CDC reads it)
    flat = Decoder("aws-dms-json", table, ("region", "id"), key_format="json")
    rows = flat.decode(records([json.dumps(message("update", {"region": "us", "id": 1, "qty": 3})).encode()]))
    assert rows.to_pylist() == [{"region": "us", "id": 1, "qty": 3, "_kind": "+U"}]
    refused = [(pa.schema([pa.field("id", pa.int64(), False), ("at", pa.timestamp("us", tz="UTC"))]),
                {"id": 1, "at": "2024-03-01 10:00:00"}, "column 'at'.*expected a zone offset"),
               (pa.schema([pa.field("id", pa.int64(), False), ("seen", pa.timestamp("us"))]),
                {"id": 1, "seen": "2024-03-01T10:00:00+02:00"}, "column 'seen'.*expected no zone offset"),
               (pa.schema([pa.field("id", pa.int64(), False), ("raw", pa.binary())]),
                {"id": 1, "raw": "AAE="}, "column 'raw' is binary, whose text AWS DMS's JSON messages do not")]
    for schema, data, error in refused:
        with pytest.raises(DecodeError, match=f"offset=0 .*{error}"):
            Decoder("aws-dms-json", schema, ("id",)).decode(records([json.dumps(message("insert", data)).encode()]))


def test_numbers_as_text_and_text_columns_of_numbers():
    """DMS writes numbers as JSON numbers or text, and a table Paimon's CDC created is all
    STRING: each reaches its column as Paimon casts its text, the before image of the key too
    ("t" is true, a DECIMAL rounded HALF_UP to the column's scale)."""
    table = pa.schema([pa.field("id", pa.int64(), False), ("name", pa.string()), ("amt", pa.decimal128(10, 2)),
                       ("ok", pa.bool_())])
    rows = Decoder("aws-dms-json", table, ("id",)).decode(records([json.dumps(m).encode() for m in [
        message("insert", {"id": "1", "name": 12.0, "amt": "1.50", "ok": "t"}),
        message("update", {"id": 2, "name": "x", "amt": "-2.005", "ok": "F", "BI_id": "1"})]])).to_pylist()
    assert [tuple(r.values()) for r in rows] == [
        (1, "12", decimal.Decimal("1.50"), True, "+I"), (1, "x", decimal.Decimal("-2.01"), False, "-D"),
        (2, "x", decimal.Decimal("-2.01"), False, "+I")]


def test_a_new_table_needs_the_primary_key(spark, broker, tmp_path):
    from kafka_broker import unique_topic
    from paimon_streaming.errors import InvalidOptionError
    from paimon_streaming.sinks.ingest import IngestConfig, ensure_table

    cfg = IngestConfig(bootstrap_servers=broker.bootstrap, warehouse=str(tmp_path / "wh"), table="db.items",
                       topics=(unique_topic("dms-nokey"),), format="aws-dms-json", schema="id BIGINT NOT NULL")
    with pytest.raises(InvalidOptionError, match="DMS's records do not name the source's primary key; pass --primary-key"):
        ensure_table(spark, cfg, lambda line: None)


def test_ingest_aws_dms_end_to_end(spark, broker, tmp_path):
    from kafka_broker import unique_topic

    topic = unique_topic("dms")
    broker.create_topic(topic, partitions=1)
    events, final = history(random.Random(9), 400, 100, key_changes=True)
    for e in events[len(events) // 2:]:  # a column added upstream, midway
        if "data" in e:
            e["data"]["note"] = f"n{e['data']['id']}"
    produce(broker, topic, [(None, json.dumps(e).encode()) for e in events])
    for row in final.values():  # the record that last wrote the row tells its note
        row["note"] = next(e["data"] for e in reversed(events) if e.get("data", {}).get("id") == row["id"]).get("note")
    ddl = "id BIGINT NOT NULL, name STRING, price DECIMAL(10,2), born DATE, seen TIMESTAMP_NTZ, at TIMESTAMP, ok TINYINT, " \
          "score DOUBLE"
    ours, java, lines = ingest_items(spark, broker, tmp_path, topic, format="aws-dms-json", schema=ddl,
                                     primary_keys=("id",), table_options={"deletion-vectors.enabled": "true"})
    assert any("evolved to schema" in line and "note" in line for line in lines), lines
    assert ours == sorted(final.values(), key=lambda r: r["id"])
    assert java == ours


def test_columns_named_bi_are_data_outside_updates():
    """Only an update carries DMS's before image (BI_x beside x), as Paimon's CDC reads it: a
    load's or insert's BI_ fields, and an update's BI_ field that is the image of no field, are
    the source's own columns, kept (before, every BI_ field was dropped from every record, also
    from the rows a new table's columns are inferred from)."""
    from paimon_streaming.sinks import aws_dms
    table = pa.schema([pa.field("ID", pa.int64(), False), ("BI_SCORE", pa.int64()), ("NAME", pa.string())])
    batch = records([json.dumps(m).encode() for m in [
        message("load", {"ID": 1, "BI_SCORE": 90, "NAME": "a"}),
        message("insert", {"ID": 2, "BI_SCORE": 80, "NAME": "b"}),
        message("update", {"ID": 3, "BI_ID": 2, "BI_SCORE": 70, "NAME": "c", "BI_NAME": "b"})]])
    decoded = Decoder("aws-dms-json", table, ("ID",)).decode_all(batch)
    assert len(decoded.new_fields) == 0 and decoded.rejected.num_rows == 0
    assert decoded.rows.to_pylist() == [
        {"ID": 1, "BI_SCORE": 90, "NAME": "a", "_kind": "+I"}, {"ID": 2, "BI_SCORE": 80, "NAME": "b", "_kind": "+I"},
        {"ID": 2, "BI_SCORE": 70, "NAME": "c", "_kind": "-D"},  # the old key deleted
        {"ID": 3, "BI_SCORE": 70, "NAME": "c", "_kind": "+I"}]
    assert aws_dms.row_image(json.dumps(message("insert", {"ID": 1, "BI_SCORE": 90})).encode()) == \
        {"ID": 1, "BI_SCORE": 90}
    assert aws_dms.row_image(json.dumps(message("update", {"ID": 1, "BI_ID": 1, "BI_X": 5})).encode()) == \
        {"ID": 1, "BI_X": 5}
