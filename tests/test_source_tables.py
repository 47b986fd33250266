"""Topics carrying change events of several source tables (Maxwell's, Canal's and DMS's
defaults): each record's table as every format names it, `--source-table` keeping one table's
records, and a batch of several tables without it stopping the job before anything is written."""
from __future__ import annotations

import json

import pyarrow as pa
import pytest

from change_event_support import produce, records
from paimon_streaming.errors import InvalidOptionError
from paimon_streaming.sinks import source_tables
from paimon_streaming.sinks.decoders import DecodeError, Decoder
from paimon_streaming.sinks.ingest import IngestConfig, check_one_source_table


def values(events: list) -> pa.Array:
    return pa.array([e if isinstance(e, bytes) else json.dumps(e).encode() for e in events], pa.binary())


@pytest.mark.parametrize("fmt, events, expected", [
    ("maxwell-json", [{"database": "shop", "table": "orders", "type": "insert", "data": {}}, b"{broken",
                      {"database": "shop", "table": "other", "type": "table-create"}],
     ["shop.orders", None, "shop.other"]),
    ("canal-json", [{"database": "shop", "table": "items", "type": "INSERT", "data": []}, {"type": "INSERT"},
                    {"database": "shop", "table": "other", "type": "CREATE", "isDdl": True}],
     ["shop.items", None, "shop.other"]),
    ("ogg-json", [{"table": "SHOP.ITEMS", "op_type": "I"}], ["SHOP.ITEMS"]),
    ("aws-dms-json", [{"metadata": {"record-type": "control", "schema-name": "", "table-name": "awsdms_apply_exceptions"}},
                      {"data": {}, "metadata": {"record-type": "data", "schema-name": "shop", "table-name": "orders"}}],
     ["awsdms_apply_exceptions", "shop.orders"]),
    ("debezium-json", [{"schema": {"type": "struct"}, "payload": {"op": "c", "source": {"db": "inv", "schema": "public",
                                                                                         "table": "orders"}}},
                       {"op": "c", "source": {"db": "shop", "table": "items"}}, {"op": "c"}],
     ["inv.public.orders", "shop.items", None]),
    ("debezium-bson", [{"op": "c", "source": {"db": "app", "collection": "users"}}], ["app.users"]),
])
def test_each_format_names_the_records_table(fmt, events, expected):
    assert source_tables.names(fmt, values(events)).to_pylist() == expected


def event_of(fmt: str, table: str, key: int) -> dict:
    """An insert of row (key, 1) into shop.<table> as `fmt` writes it."""
    row = {"id": key, "qty": 1}
    return {"debezium-json": {"op": "c", "after": row, "source": {"db": "shop", "table": table}},
            "debezium-bson": {"op": "c", "after": json.dumps(row), "source": {"db": "shop", "collection": table}},
            "maxwell-json": {"database": "shop", "table": table, "type": "insert", "data": row},
            "canal-json": {"database": "shop", "table": table, "type": "INSERT", "isDdl": False,
                           "data": [{k: str(v) for k, v in row.items()}]},
            "ogg-json": {"table": f"shop.{table}", "op_type": "I", "after": row},
            "aws-dms-json": {"data": row, "metadata": {"record-type": "data", "operation": "insert",
                                                       "schema-name": "shop", "table-name": table}}}[fmt]


@pytest.mark.parametrize("fmt", [f for f in source_tables.FORMATS if f != "debezium-avro"])  # Avro: test_ingest_database.py
def test_each_parser_tells_the_tables_its_rows_are_of(fmt):
    batch = records([json.dumps(event_of(fmt, t, i)).encode() for i, t in enumerate(["a", "b", "a"])])
    decoded = Decoder(fmt, TABLE, ("id",)).decode_all(batch)
    assert decoded.rows.num_rows == 3 and decoded.sources == ("shop.a", "shop.b")
    kept = Decoder(fmt, TABLE, ("id",), source_table=r"shop\.b").decode_all(batch)
    assert kept.rows.column("id").to_pylist() == [1] and kept.sources == ()


def maxwell(table: str, key: int, qty: int) -> dict:
    return {"database": "shop", "table": table, "type": "insert", "ts": 1, "xid": 1, "primary_key_columns": ["id"],
            "data": {"id": key, "qty": qty}}


TABLE = pa.schema([pa.field("id", pa.int64(), False), ("qty", pa.int64())])


def test_source_table_keeps_one_tables_records():
    events = [maxwell("orders", 1, 10), maxwell("customers", 1, 99), maxwell("orders", 2, 20)]
    batch = records([json.dumps(e).encode() for e in events])
    mixed = Decoder("maxwell-json", TABLE, ("id",)).decode_all(batch)
    assert mixed.sources == ("shop.customers", "shop.orders")
    # DDL records and bootstrap markers name a table but carry no rows of it
    markers = [{"database": "shop", "table": "customers", "type": "table-create"},
               {"database": "shop", "table": "customers", "type": "bootstrap-start", "data": {}}]
    quiet = Decoder("maxwell-json", TABLE, ("id",), on_error="skip").decode_all(
        records([json.dumps(e).encode() for e in [events[0], *markers]]))
    assert quiet.sources == ("shop.orders",)
    kept = Decoder("maxwell-json", TABLE, ("id",), source_table=r"shop\.orders").decode_all(batch)
    assert kept.rows.to_pylist() == [{"id": 1, "qty": 10, "_kind": "+I"}, {"id": 2, "qty": 20, "_kind": "+I"}]
    assert kept.sources == () and kept.rejected.num_rows == 0
    assert Decoder("maxwell-json", TABLE, ("id",), source_table="shop[.](orders|customers)").decode(batch).num_rows == 3
    with pytest.raises(DecodeError, match="is not a regular expression"):
        Decoder("maxwell-json", TABLE, ("id",), source_table="shop.(orders")
    with pytest.raises(DecodeError, match="a source table is for change events naming their table"):
        Decoder("json", TABLE, ("id",), source_table="shop.orders")
    cfg = IngestConfig(bootstrap_servers="unused", warehouse="unused", table="db.orders")
    check_one_source_table(cfg, [b"shop.orders", b"shop.orders"])
    with pytest.raises(InvalidOptionError, match=r"2 source tables \['shop.customers', 'shop.orders'\].*--source-table"):
        check_one_source_table(cfg, [b"shop.orders", b"shop.customers"])


def test_ingest_a_topic_of_two_tables(spark, broker, tmp_path):
    """Without --source-table the job stops before its first commit, naming both tables; with
    it, the table takes its source table's rows only, and Java reads them."""
    import paimon_streaming as ps
    from java_oracle import get_oracle
    from kafka_broker import unique_topic
    from paimon_streaming.sinks.ingest import run_ingest

    topic = unique_topic("maxwell-shared")
    broker.create_topic(topic, partitions=1)
    events = [maxwell("orders" if i % 3 else "customers", i // 2, i) for i in range(60)]
    produce(broker, topic, [(None, json.dumps(e).encode()) for e in events])
    base = dict(bootstrap_servers=broker.bootstrap, warehouse=str(tmp_path / "wh"), table="db.orders", topics=(topic,),
                format="maxwell-json", schema="id BIGINT NOT NULL, qty BIGINT", bucket=1, trigger="available-now")
    lines: list[str] = []
    assert run_ingest(spark, IngestConfig(**base, checkpoint=str(tmp_path / "c1")), lines.append) == 1
    assert any("2 source tables ['shop.customers', 'shop.orders']" in line for line in lines), lines
    table = ps.Catalog(str(tmp_path / "wh")).get_table("db.orders")
    assert table.latest_snapshot() is None  # nothing of the batch was written
    lines.clear()
    cfg = IngestConfig(**base, checkpoint=str(tmp_path / "c2"), source_table=r"shop\.orders")
    assert run_ingest(spark, cfg, lines.append) == 0, lines
    state = {e["data"]["id"]: e["data"]["qty"] for e in events if e["table"] == "orders"}  # inserts: the last wins
    ours = {r["id"]: r["qty"] for r in table.to_arrow().to_pylist()}
    assert ours == state
    assert {r["id"]: r["qty"] for r in get_oracle().read(table.path)} == ours


def test_a_later_batch_of_another_source_table_is_refused(tmp_path):
    """Without --source-table, the source table of the first batch is remembered in the table's
    options (so also across restarts): a later batch holding only another table's events is
    refused as a batch of both, nothing of it written; --source-table '.*' merges on purpose."""
    import paimon_streaming as ps
    from paimon_streaming.sinks.ingest import SOURCE_TABLE_OPTION
    catalog = ps.Catalog(str(tmp_path / "wh"))
    catalog.create_table("db.orders", TABLE, primary_keys=["id"], options={"bucket": "1"})
    cfg = IngestConfig(bootstrap_servers="unused", warehouse=str(tmp_path / "wh"), table="db.orders")
    check_one_source_table(cfg, [b"shop.orders"], catalog.get_table("db.orders"))
    table = catalog.get_table("db.orders")  # a restart loads it again
    assert table.options.raw[SOURCE_TABLE_OPTION] == "shop.orders"
    check_one_source_table(cfg, [], table)
    check_one_source_table(cfg, [b"shop.orders"], table)
    with pytest.raises(InvalidOptionError, match=r"2 source tables \['shop.orders', 'shop.users'\] \(table db.orders "
                                                 r"took the rows of shop.orders in earlier batches.*--source-table"):
        check_one_source_table(cfg, [b"shop.users"], table)


def test_ingest_refuses_another_source_table_after_a_restart(spark, broker, tmp_path):
    """A Maxwell topic of shop.orders and shop.users into db.orders without --source-table: run 1
    sees orders' events only; run 2 (same checkpoint) only users' events, which stop it before
    they overwrite or delete orders' rows of the same keys."""
    import paimon_streaming as ps
    from kafka_broker import unique_topic
    from paimon_streaming.sinks.ingest import run_ingest

    topic = unique_topic("maxwell-later")
    broker.create_topic(topic, partitions=1)
    produce(broker, topic, [(None, json.dumps(maxwell("orders", k, 10 * k)).encode()) for k in (1, 2)])
    cfg = IngestConfig(bootstrap_servers=broker.bootstrap, warehouse=str(tmp_path / "wh"), table="db.orders",
                       topics=(topic,), format="maxwell-json", schema="id BIGINT NOT NULL, qty BIGINT", bucket=1,
                       trigger="available-now", checkpoint=str(tmp_path / "ckpt"))
    lines: list[str] = []
    assert run_ingest(spark, cfg, lines.append) == 0, lines
    users = [maxwell("users", 1, 999), {**maxwell("users", 2, 0), "type": "delete"}]
    produce(broker, topic, [(None, json.dumps(e).encode()) for e in users])
    lines.clear()
    assert run_ingest(spark, cfg, lines.append) == 1, lines
    assert any("2 source tables ['shop.orders', 'shop.users']" in line for line in lines), lines
    table = ps.Catalog(str(tmp_path / "wh")).get_table("db.orders")
    assert sorted(table.to_arrow().to_pylist(), key=lambda r: r["id"]) == [{"id": 1, "qty": 10}, {"id": 2, "qty": 20}]


def test_pretty_printed_records_name_their_tables_and_with_names_adds_them():
    """Records written across several lines (pretty-printed JSON) and CRLF line ends name their
    tables as one-line records do; `with_names` (the mapInArrow function) adds the names to each
    batch of Kafka records, tombstones naming none."""
    events = [json.dumps({"database": "shop", "table": "orders", "type": "insert", "data": {"id": 1}}, indent=2).encode(),
              json.dumps({"database": "shop", "table": "items", "type": "insert"}).encode().replace(b",", b",\r\n"),
              None]
    assert source_tables.names("maxwell-json", pa.array(events, pa.binary())).to_pylist() == [
        "shop.orders", "shop.items", None]
    batch = pa.RecordBatch.from_pydict(
        {"key": pa.array([None] * 3, pa.binary()), "value": pa.array(events, pa.binary())})
    out = list(source_tables.with_names("maxwell-json", None, iter([batch, batch.slice(0, 1)])))
    assert [b.column(source_tables.SOURCE_FIELD.name).to_pylist() for b in out] == [
        ["shop.orders", "shop.items", None], ["shop.orders"]]
