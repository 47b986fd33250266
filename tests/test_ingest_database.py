"""`paimon-streaming ingest --database`: a table per source table of a change-event topic
(sinks/ingest_database.py, source_tables.DatabaseRouting), as Paimon's kafka_sync_database."""
from __future__ import annotations

import json
import re
from dataclasses import replace

import pyarrow as pa
import pytest

from change_event_support import ingest_cli, produce
from paimon_streaming.errors import InvalidOptionError
from paimon_streaming.sinks import aws_dms, maxwell, ogg
from paimon_streaming.sinks.ingest import IngestConfig, ensure_table
from paimon_streaming.sinks.source_tables import DatabaseRouting


def test_routing_names_tables_merges_shards_and_filters():
    routing = DatabaseRouting("ods", "src_", "_rt", including="orders|customers|items", excluding="cust.*")
    assert routing.target("shop.orders") == "ods.src_orders_rt"
    assert routing.target("pg.public.orders") == "ods.src_orders_rt"  # Debezium's db.schema.table: the table
    assert routing.target("ORDERS") is None  # names match case-sensitively, whole
    assert routing.target("shop.customers") is None  # excluded
    assert routing.target("shop.orders_archive") is None  # not whole
    assert routing.targets(["db2.items", "db1.items", "shop.orders", "shop.customers", "db1.items"]) == {
        "ods.src_items_rt": ("db1.items", "db2.items"), "ods.src_orders_rt": ("shop.orders",)}
    with pytest.raises(ValueError, match="--including-tables '\\(' is not a regular expression"):
        DatabaseRouting("ods", including="(")


def test_config_takes_a_table_or_a_database_and_only_change_events():
    base = dict(bootstrap_servers="b:9092", warehouse="/wh", topics=("t",), format="maxwell-json")
    with pytest.raises(InvalidOptionError, match="--table DB.TABLE\\) or a database"):
        IngestConfig(**base)
    with pytest.raises(InvalidOptionError, match="--table DB.TABLE\\) or a database"):
        IngestConfig(**base, table="db.t", database=DatabaseRouting("db"))
    with pytest.raises(InvalidOptionError, match="not json"):
        IngestConfig(**dict(base, format="json"), database=DatabaseRouting("db"))
    for extra in (dict(schema="id BIGINT"), dict(source_table="shop.t")):
        with pytest.raises(InvalidOptionError, match="are for one table"):
            IngestConfig(**base, database=DatabaseRouting("db"), **extra)
    cfg = IngestConfig(**base, database=DatabaseRouting("db"))
    assert cfg.target == "database db" and cfg.checkpoint_location() == "/wh/.checkpoints/ingest-database-db"


def test_cli_builds_the_routing(monkeypatch, tmp_path):
    args = ["--topic", "cdc", "--warehouse", str(tmp_path), "--format", "canal-json"]
    code, seen = ingest_cli(monkeypatch, *args, "--database", "ods", "--table-prefix", "p_",
                            "--including-tables", "a|b", "--excluding-tables", "b")
    assert code == 0 and seen[0].database == DatabaseRouting("ods", "p_", "", "a|b", "b") and seen[0].table == ""
    assert ingest_cli(monkeypatch, *args, "--table", "ods.a", "--table-prefix", "p_")[0] == 1  # needs --database
    with pytest.raises(SystemExit):
        ingest_cli(monkeypatch, *args, "--table", "ods.a", "--database", "ods")


@pytest.mark.parametrize("fmt, value, image", [
    (maxwell.FORMAT, {"type": "update", "data": {"id": 1, "qty": 2}, "old": {"qty": 1}}, {"id": 1, "qty": 2}),
    (maxwell.FORMAT, {"type": "table-create", "def": {"columns": []}}, None),
    (maxwell.FORMAT, {"type": "bootstrap-start", "data": {}}, None),
    (ogg.FORMAT, {"op_type": "D", "before": {"ID": 3}, "after": None}, {"ID": 3}),
    (ogg.FORMAT, {"op_type": "I", "after": {"ID": 4}}, {"ID": 4}),
    (aws_dms.FORMAT, {"data": {"id": 5, "BI_id": 4}, "metadata": {"record-type": "data", "operation": "update"}},
     {"id": 5}),
    (aws_dms.FORMAT, {"control": {}, "metadata": {"record-type": "control", "operation": "create-table"}}, None),
])
def test_the_row_a_record_carries(fmt, value, image):
    row_image = {maxwell.FORMAT: maxwell.row_image, ogg.FORMAT: ogg.row_image, aws_dms.FORMAT: aws_dms.row_image}[fmt]
    assert row_image(json.dumps(value).encode()) == image
    assert row_image(b"not json") is None and row_image(None) is None


def test_a_new_maxwell_table_takes_its_columns_from_the_rows(tmp_path):
    """Maxwell's JSON names no types: a new table's columns are inferred from the rows of the
    first records (as new columns are), the key from `primary_key_columns`; markers and DDL
    records tell nothing."""
    import paimon_streaming as ps
    records = [{"type": "table-create", "database": "shop", "table": "t", "def": {}},
               {"type": "insert", "database": "shop", "table": "t", "primary_key_columns": ["id"],
                "data": {"id": 1, "qty": 2.5, "name": "a", "note": None}},
               {"type": "insert", "database": "shop", "table": "t", "primary_key_columns": ["id"],
                "data": {"id": 2, "qty": 3, "name": "b", "note": None}}]
    cfg = IngestConfig(bootstrap_servers="unused", warehouse=str(tmp_path), table="db.t", format="maxwell-json")
    lines: list[str] = []
    table = ensure_table(None, cfg, lines.append, lambda: [(None, json.dumps(r).encode()) for r in records])
    assert table.primary_keys == ["id"]
    assert table.schema.arrow_schema() == pa.schema([pa.field("id", pa.int64(), False), ("qty", pa.float64()),
                                                     ("name", pa.string())])  # note: only nulls, told later
    assert any("inferred from the rows of 2 change events" in line for line in lines), lines
    assert ps.Catalog(str(tmp_path)).table_exists("db.t")


def test_database_partition_keys_apply_to_the_tables_holding_them(tmp_path):
    """--partition-key with --database, as Paimon's database sync: a new table holding every
    partition column is partitioned by them (keyed by the source's key alone: a cross-partition
    upsert table), another is not; a fixed bucket cannot keep such a key once."""
    def maxwell(table: str, row: dict) -> list:
        return [(None, json.dumps({"type": "insert", "database": "shop", "table": table,
                                   "primary_key_columns": ["id"], "data": row}).encode())]
    cfg = IngestConfig(bootstrap_servers="unused", warehouse=str(tmp_path), table="db.orders", format="maxwell-json",
                       partition_keys=("dt",), partition_keys_if_present=True)
    lines: list[str] = []
    orders = ensure_table(None, cfg, lines.append, lambda: maxwell("orders", {"id": 1, "dt": "east"}))
    assert orders.partition_keys == ["dt"] and orders.primary_keys == ["id"]
    orders.write_arrow(pa.table({"id": [1], "dt": ["east"]}))
    orders.write_arrow(pa.table({"id": [1], "dt": ["west"]}))
    assert orders.to_arrow().to_pylist() == [{"id": 1, "dt": "west"}]  # the key moved
    customers = ensure_table(None, replace(cfg, table="db.customers"), lines.append,
                             lambda: maxwell("customers", {"id": 1, "name": "a"}))
    assert customers.partition_keys == [] and any("not partitioned" in line for line in lines), lines
    with pytest.raises(InvalidOptionError, match="bucket"):
        ensure_table(None, replace(cfg, table="db.fixed", bucket=4), lines.append,
                     lambda: maxwell("fixed", {"id": 1, "dt": "east"}))


# ---- end to end with a broker -----------------------------------------------------------
def mx(table: str, kind: str, row: dict | None = None, old: dict | None = None) -> bytes:
    record = {"database": "shop", "table": table, "type": kind, "ts": 1, "xid": 1}
    if row is not None:
        record.update(data=row, primary_key_columns=["id"])
    if old is not None:
        record["old"] = old
    return json.dumps(record).encode()


def maxwell_events() -> list[bytes]:
    """Three source tables in one topic: orders and customers (whose DDL comes first, its rows a
    few batches later), and audit (excluded)."""
    events = [mx("customers", "table-create"), mx("customers", "table-alter")]
    for i in range(40):
        events.append(mx("orders", "insert", {"id": i, "qty": i}))
        if i % 4 == 3:
            events.append(mx("orders", "update", {"id": i - 1, "qty": 100 + i}, {"qty": i - 1}))
        if i % 10 == 9:
            events.append(mx("orders", "delete", {"id": i - 5, "qty": i - 5}))
        events.append(mx("audit", "insert", {"id": i, "what": "x"}))
        if i >= 20:
            events.append(mx("customers", "insert", {"id": i, "name": f"c{i}"}))
    return events


def expected(events: list[bytes], table: str) -> dict:
    state: dict = {}
    for raw in events:
        e = json.loads(raw)
        if e["table"] != table or "data" not in e:
            continue
        if e["type"] == "delete":
            state.pop(e["data"]["id"], None)
        else:
            state[e["data"]["id"]] = e["data"]
    return state


def rows_by_id(table) -> dict:
    return {r["id"]: r for r in table.to_arrow().to_pylist()}


def test_ingest_a_database_then_resume_exactly_once(spark, broker, tmp_path, monkeypatch):
    """Each source table lands in its own table, created when its first rows arrive (customers'
    DDL batches write nothing), audit is excluded; a crash after one table's commit in a batch
    and the restart from the checkpoint apply every record once; Java reads every table."""
    import paimon_streaming as ps
    from java_oracle import get_oracle
    from kafka_broker import unique_topic
    from paimon_streaming.sinks.foreach_batch import PreparedBatch
    from paimon_streaming.sinks.ingest import run_ingest

    topic = unique_topic("maxwell-db")
    broker.create_topic(topic, partitions=1)
    events = maxwell_events()
    produce(broker, topic, [(None, value) for value in events])
    cfg = IngestConfig(bootstrap_servers=broker.bootstrap, warehouse=str(tmp_path / "wh"), topics=(topic,),
                       format="maxwell-json", database=DatabaseRouting("ods", table_prefix="mx_", excluding="audit"),
                       bucket=2, trigger="available-now", max_offsets_per_trigger=40,
                       checkpoint=str(tmp_path / "ckpt"))
    real = PreparedBatch.commit
    calls = []

    def crash_after_the_first_table_of_batch_2(batch):
        if batch.batch_id == 2 and any(b == 2 for b, _ in calls):  # the second table (in name order: orders)
            raise RuntimeError("injected crash between two tables' commits")
        calls.append((batch.batch_id, batch.table.path.rstrip("/").rsplit("/", 1)[-1]))
        return real(batch)
    monkeypatch.setattr(PreparedBatch, "commit", crash_after_the_first_table_of_batch_2)
    lines: list[str] = []
    assert run_ingest(spark, cfg, lines.append) == 1, "\n".join(lines)
    assert calls[-1] == (2, "mx_customers") and lines[-1].startswith("error: ingestion failed"), lines
    catalog = ps.Catalog(str(tmp_path / "wh"))
    assert (0, "mx_orders") in calls and (0, "mx_customers") not in calls  # only DDL of customers yet
    assert any("carry no row yet" in line for line in lines), lines
    monkeypatch.setattr(PreparedBatch, "commit", real)
    lines.clear()
    assert run_ingest(spark, cfg, lines.append) == 0, lines
    assert any(line.startswith("batch 2:") and "1 table(s) written" in line for line in lines), lines  # customers: skipped
    assert sorted(catalog.list_tables("ods")) == ["mx_customers", "mx_orders"]
    orders, customers = catalog.get_table("ods.mx_orders"), catalog.get_table("ods.mx_customers")
    assert rows_by_id(orders) == expected(events, "orders")
    assert rows_by_id(customers) == expected(events, "customers")
    assert orders.primary_keys == ["id"] and customers.schema.field_names == ["id", "name"]
    for table in (orders, customers):
        assert {r["id"]: r for r in get_oracle().read(table.path)} == rows_by_id(table)
        appended = [s.commit_identifier for s in table.snapshot_manager.snapshots() if s.commit_kind == "APPEND"]
        assert appended == sorted(set(appended)) and appended[-1] == 2  # each batch once
    assert [s.commit_identifier for s in customers.snapshot_manager.snapshots() if s.commit_kind == "APPEND"] == [1, 2]
    snapshots = orders.latest_snapshot().id
    assert run_ingest(spark, cfg, lines.append) == 0, lines  # caught up: nothing again
    assert orders.latest_snapshot().id == snapshots


def debezium_event(db: str, table: str, op: str, before: dict | None, after: dict | None) -> tuple[bytes, bytes]:
    """A Debezium JSON event with its schema envelope (columns id BIGINT, name STRING) and key."""
    fields = [{"type": "int64", "optional": False, "field": "id"}, {"type": "string", "optional": True, "field": "name"}]
    image = {"type": "struct", "optional": True, "fields": fields}
    schema = {"type": "struct", "optional": False, "fields": [
        dict(image, field="before"), dict(image, field="after"),
        {"type": "struct", "optional": False, "field": "source", "fields": [
            {"type": "string", "optional": False, "field": "db"}, {"type": "string", "optional": False, "field": "table"}]},
        {"type": "string", "optional": False, "field": "op"}]}
    payload = {"before": before, "after": after, "source": {"db": db, "table": table}, "op": op}
    key = {"schema": {"type": "struct", "optional": False, "fields": fields[:1]}, "payload": {"id": (after or before)["id"]}}
    return json.dumps(key).encode(), json.dumps({"schema": schema, "payload": payload}).encode()


@pytest.mark.parametrize("site", ["driver", "shuffle", "driver-too-small"])
def test_debezium_shards_merge_and_undecodable_records_are_dead_lettered(spark, broker, tmp_path, monkeypatch, site):
    """Two shards' `items` merge into one table, `users` gets its own; a record that names no
    table goes to the job's dead-letter table (or, by default, stops the batch before any commit).
    `site`: the records named in the driver (local mode), on the executors (a cluster's), or
    there because the batch is larger than the driver may collect."""
    import paimon_streaming as ps
    from kafka_broker import unique_topic
    from paimon_streaming.sinks import ingest_database
    from paimon_streaming.sinks.ingest import run_ingest

    monkeypatch.setattr(ingest_database, "write_site", lambda df, shuffle: site.removesuffix("-too-small"))
    if site == "driver-too-small":
        def too_big(self, *args):
            raise RuntimeError("Total size of serialized results is bigger than spark.driver.maxResultSize (1 MiB)")
        monkeypatch.setattr(ingest_database.RecordsInDriver, "__init__", too_big)
    held = []
    for holder in (ingest_database.RecordsInDriver, ingest_database.RecordsInSpark):
        monkeypatch.setattr(holder, "release", lambda self, real=holder.release: held.append(type(self)) or real(self))

    topic = unique_topic("debezium-db")
    broker.create_topic(topic, partitions=1)
    records = [debezium_event("shard1", "items", "c", None, {"id": 1, "name": "a"}),
               debezium_event("shard2", "items", "c", None, {"id": 2, "name": "b"}),
               debezium_event("shard1", "users", "c", None, {"id": 1, "name": "ann"}),
               (b"7", b'{"not": "an event"'),
               debezium_event("shard2", "items", "u", {"id": 2, "name": "b"}, {"id": 2, "name": "b2"}),
               debezium_event("shard1", "items", "d", {"id": 1, "name": "a"}, None),
               (b'{"id": 1}', None)]  # the delete's tombstone
    produce(broker, topic, records)
    base = dict(bootstrap_servers=broker.bootstrap, warehouse=str(tmp_path / "wh"), topics=(topic,),
                format="debezium-json", database=DatabaseRouting("cdc"), bucket=1, trigger="available-now")
    lines: list[str] = []
    assert run_ingest(spark, IngestConfig(**base, checkpoint=str(tmp_path / "c1")), lines.append) == 1
    assert "offset=3 names no source table" in lines[-1], lines[-1]
    catalog = ps.Catalog(str(tmp_path / "wh"))
    assert not catalog.database_exists("cdc") or catalog.list_tables("cdc") == []
    lines.clear()
    cfg = IngestConfig(**base, checkpoint=str(tmp_path / "c2"), on_error="dead-letter")
    assert run_ingest(spark, cfg, lines.append) == 0, lines
    assert rows_by_id(catalog.get_table("cdc.items")) == {2: {"id": 2, "name": "b2"}}
    assert rows_by_id(catalog.get_table("cdc.users")) == {1: {"id": 1, "name": "ann"}}
    dead = catalog.get_table("cdc.ingest_dead_letter").to_arrow().to_pylist()
    assert [(r["offset"], r["value"]) for r in dead] == [(3, b'{"not": "an event"')]
    assert any("1 dead-lettered" in line for line in lines), lines
    assert set(held) == {ingest_database.RecordsInDriver if site == "driver" else ingest_database.RecordsInSpark}
    assert any("split on the executors" in line for line in lines) == (site == "driver-too-small"), lines


def test_a_poison_record_of_one_table_commits_no_table_of_the_batch(spark, broker, tmp_path):
    """Every table's files are written before any is committed: a record that fails the second
    table's decoding (in name order) leaves the first uncommitted too, its files deleted."""
    import pathlib

    import paimon_streaming as ps
    from kafka_broker import unique_topic
    from paimon_streaming.sinks.ingest import run_ingest

    topic = unique_topic("debezium-db-poison")
    broker.create_topic(topic, partitions=1)
    bad_key, bad_value = debezium_event("shard1", "users", "c", None, {"id": 2, "name": "bob"})
    produce(broker, topic, [debezium_event("shard1", "items", "c", None, {"id": 1, "name": "a"}),
                            debezium_event("shard1", "users", "c", None, {"id": 1, "name": "ann"}),
                            (bad_key, bad_value.replace(b'"id": 2', b'"id": "two"'))])
    cfg = IngestConfig(bootstrap_servers=broker.bootstrap, warehouse=str(tmp_path / "wh"), topics=(topic,),
                       format="debezium-json", database=DatabaseRouting("cdc"), bucket=1, trigger="available-now",
                       checkpoint=str(tmp_path / "ckpt"))
    lines: list[str] = []
    assert run_ingest(spark, cfg, lines.append) == 1
    assert "offset=2" in lines[-1], lines[-1]
    catalog = ps.Catalog(str(tmp_path / "wh"))
    for name in ("cdc.items", "cdc.users"):  # created from the events, but nothing committed
        table = catalog.get_table(name)
        assert table.latest_snapshot() is None, name
        assert not [p for p in pathlib.Path(table.path).rglob("*.parquet")], name


# ---- debezium-avro: the tables named by each record's writer schema ------------------------
_VALUE = {"type": "record", "name": "Value", "fields": [{"name": "id", "type": "long"},
                                                        {"name": "name", "type": ["null", "string"], "default": None}]}
_ENVELOPE = {"type": "record", "name": "Envelope", "namespace": "dbserver1", "fields": [
    {"name": "before", "type": ["null", _VALUE], "default": None},
    {"name": "after", "type": ["null", "Value"], "default": None},
    {"name": "source", "type": {"type": "record", "name": "Source", "fields": [
        {"name": "connector", "type": "string"}, {"name": "db", "type": "string"},
        {"name": "schema", "type": ["null", "string"], "default": None}, {"name": "table", "type": "string"}]}},
    {"name": "op", "type": "string"}]}
_KEY = {"type": "record", "name": "Key", "namespace": "dbserver1", "fields": [{"name": "id", "type": "long"}]}


def avro_event(table: str, op: str, before: dict | None, after: dict | None) -> tuple[bytes, bytes]:
    """(key, value) as Confluent's AvroConverter frames a Postgres connector's event (writer
    schemas 10 and 11 of the registry)."""
    import io

    import fastavro

    from paimon_streaming.sinks import schema_registry

    def framed(sid: int, schema: dict, record: dict) -> bytes:
        body = io.BytesIO()
        fastavro.schemaless_writer(body, fastavro.parse_schema(schema), record)
        return schema_registry.frame(sid, body.getvalue())
    source = {"connector": "postgresql", "db": "shop", "schema": "public", "table": table}
    return (framed(11, _KEY, {"id": (after or before)["id"]}),
            framed(10, _ENVELOPE, {"before": before, "after": after, "source": source, "op": op}))


@pytest.fixture
def avro_registry():
    from test_schema_registry import Registry

    from paimon_streaming.sinks import schema_registry
    schema_registry._cache.clear()
    registry = Registry({10: _ENVELOPE, 11: _KEY})
    yield registry
    registry.close()


def test_avro_records_name_their_tables_and_filter(avro_registry):
    from change_event_support import records

    from paimon_streaming.sinks import source_tables
    from paimon_streaming.sinks.decoders import Decoder
    events = [avro_event("items", "c", None, {"id": 1, "name": "a"}), avro_event("users", "c", None, {"id": 7}),
              (None, b"\x00\x00\x00\x00\x0a\xff"), (None, b"not framed")]
    values = pa.array([v for _, v in events], pa.binary())
    assert source_tables.names("debezium-avro", values, avro_registry.url).to_pylist() == [
        "shop.public.items", "shop.public.users", None, None]
    schema = pa.schema([pa.field("id", pa.int64(), False), ("name", pa.string())])
    decoder = Decoder("debezium-avro", schema, ("id",), schema_registry=avro_registry.url,
                      source_table=r"shop\.public\.users")
    assert decoder.decode(records(values[:2].to_pylist())).to_pylist() == [{"id": 7, "name": None, "_kind": "+I"}]


def test_ingest_a_database_of_debezium_avro_events(spark, broker, avro_registry, tmp_path):
    """Debezium's usual layout: a topic per table, read by pattern; each record names its table
    through its writer schema."""
    import paimon_streaming as ps
    from java_oracle import get_oracle
    from kafka_broker import unique_topic
    from paimon_streaming.sinks.ingest import run_ingest

    server = unique_topic("pgserver")  # Debezium's topic per table: <server>.<schema>.<table>
    for table in ("items", "users"):
        broker.create_topic(f"{server}.public.{table}", partitions=2)
    produce(broker, f"{server}.public.items", [avro_event("items", "c", None, {"id": 1, "name": "a"}),
                                               avro_event("items", "c", None, {"id": 2, "name": "b"}),
                                               avro_event("items", "u", {"id": 2, "name": "b"}, {"id": 2, "name": "b2"}),
                                               avro_event("items", "d", {"id": 1, "name": "a"}, None)])
    produce(broker, f"{server}.public.users", [avro_event("users", "c", None, {"id": 1, "name": "ann"})])
    cfg = IngestConfig(bootstrap_servers=broker.bootstrap, warehouse=str(tmp_path / "wh"),
                       topic_pattern=re.escape(server) + r"\.public\..*", format="debezium-avro", schema_registry=avro_registry.url, database=DatabaseRouting("pg"),
                       bucket=1, trigger="available-now", checkpoint=str(tmp_path / "ckpt"))
    lines: list[str] = []
    assert run_ingest(spark, cfg, lines.append) == 0, lines
    catalog = ps.Catalog(str(tmp_path / "wh"))
    assert sorted(catalog.list_tables("pg")) == ["items", "users"]
    items, users = catalog.get_table("pg.items"), catalog.get_table("pg.users")
    assert items.primary_keys == ["id"] and rows_by_id(items) == {2: {"id": 2, "name": "b2"}}
    assert rows_by_id(users) == {1: {"id": 1, "name": "ann"}}
    for table in (items, users):
        assert {r["id"]: r for r in get_oracle().read(table.path)} == rows_by_id(table)


def test_a_poison_record_among_a_new_tables_rows_follows_on_error(spark, tmp_path):
    """A new table's columns come from its records in the batch; one of them that does not decode
    failed the job with "An exception was raised by the Python Proxy" (pyarrow's ArrowInvalid
    inside foreachBatch) whatever --on-error said. skip leaves it out of the inference; fail
    names its Kafka coordinates."""
    from paimon_streaming.sinks.decoders import DecodeError
    from paimon_streaming.sinks.ingest_database import RecordsInDriver, RecordsInSpark

    def event(row: str) -> bytes:
        return ('{"type": "insert", "database": "shop", "table": "t", "primary_key_columns": ["id"], "data": '
                + row + "}").encode()
    values = [event('{"id": 1}'), event('{"id": "x"}'), event('{"id": 2}')]
    df = spark.createDataFrame(pa.table({"key": pa.array([None] * 3, pa.binary()), "value": values,
                                         "topic": ["cdc"] * 3, "partition": pa.array([4] * 3, pa.int32()),
                                         "offset": pa.array([7, 8, 9], pa.int64())}))
    for named in (RecordsInDriver(df, "maxwell-json", None), RecordsInSpark(df, "maxwell-json", None)):
        samples = named.samples(("shop.t",))
        assert [s.where for s in samples] == [f"topic=cdc partition=4 offset={o}" for o in (7, 8, 9)]
        cfg = IngestConfig(bootstrap_servers="unused", warehouse=str(tmp_path), table="db.t", format="maxwell-json",
                           partition_keys_if_present=True)
        with pytest.raises(DecodeError, match="record topic=cdc partition=4 offset=8 is a JSON object whose fields"):
            ensure_table(None, cfg, lambda line: None, lambda: samples)
        table = ensure_table(None, replace(cfg, table=f"db.t_{type(named).__name__}", on_error="skip"),
                             lambda line: None, lambda: samples)
        assert table.schema.arrow_schema() == pa.schema([pa.field("id", pa.int64(), False)])
        named.release()


@pytest.mark.parametrize("value, carries", [
    ({"isDdl": False, "type": "INSERT", "mysqlType": {"id": "int"}, "data": [{"id": "1"}]}, True),
    ({"isDdl": True, "type": "CREATE", "sql": "CREATE TABLE t (id INT)", "data": None}, False),
    ({"isDdl": False, "type": "INSERT", "data": []}, False),
    ([1, 2], False), (None, False), ("not json", False),
])
def test_a_canal_record_carries_a_row_only_with_data(value, carries):
    """--database with canal-json: a new table is created from the first message with rows;
    DDL, empty messages and records that are no Canal message carry none (nothing is created)."""
    from paimon_streaming.sinks.ingest_database import _CARRIES_ROW
    raw = None if value is None else value.encode() if isinstance(value, str) else json.dumps(value).encode()
    assert _CARRIES_ROW["canal-json"](raw) is carries
