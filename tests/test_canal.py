"""Canal's change messages (`--format canal-json`): text values cast to every column type, ENUM
and SET labels from `mysqlType`, several rows per message with their `old` values, key moves,
DDL skipped and TRUNCATE refused by record, and `paimon-streaming ingest` end to end with the
primary key from `pkNames`, Java reading the table."""
from __future__ import annotations

import datetime as dt
import decimal
import json
import random

import pyarrow as pa
import pytest

from change_event_support import applied, ingest_config, ingest_items, produce, records
from paimon_streaming.sinks.decoders import DecodeError, Decoder

MYSQL_TYPES = {"id": "bigint(20)", "name": "varchar(64)", "price": "decimal(10,2)", "born": "date",
               "seen": "datetime(6)", "opens": "time(3)", "ok": "tinyint(1)", "score": "double",
               "color": "enum('red','green','it''s blue')", "tags": "set('a','b','c')", "blob": "varbinary(16)"}
TABLE = pa.schema([pa.field("id", pa.int64(), False), ("name", pa.string()), ("price", pa.decimal128(10, 2)),
                   ("born", pa.date32()), ("seen", pa.timestamp("us")), ("opens", pa.time32("ms")),
                   ("ok", pa.bool_()), ("score", pa.float64()), ("color", pa.string()), ("tags", pa.string()),
                   ("blob", pa.binary())])
COLORS = ["red", "green", "it's blue"]
TAGS = ["a", "b", "c"]


def random_row(rng: random.Random, key: int) -> dict:
    return {"id": key, "name": rng.choice(["ä", "x y", "", None]),
            "price": decimal.Decimal(rng.randrange(-10**6, 10**6)).scaleb(-2) if rng.random() > 0.1 else None,
            "born": dt.date(1950, 1, 1) + dt.timedelta(days=rng.randrange(30000)),
            "seen": dt.datetime(2020, 1, 1) + dt.timedelta(microseconds=rng.randrange(10**14)),
            "opens": dt.time(rng.randrange(24), rng.randrange(60), rng.randrange(60), rng.randrange(1000) * 1000),
            "ok": rng.random() < 0.5, "score": rng.choice([1.5, -2.25, 1e10]),
            "color": rng.randrange(3), "tags": rng.randrange(8),
            "blob": bytes(rng.randrange(256) for _ in range(rng.randrange(17))) if rng.random() > 0.1 else None}


def text(row: dict) -> dict:
    """A row as Canal writes it: every value text; ENUM as its 1-based index, SET as a bit mask,
    bytes as ISO-8859-1 text (a character per byte)."""
    out = {}
    for k, v in row.items():
        if v is None:
            out[k] = None
        elif k == "color":
            out[k] = str(v + 1)
        elif isinstance(v, bool):
            out[k] = "1" if v else "0"
        elif isinstance(v, dt.datetime):
            out[k] = v.isoformat(sep=" ")
        elif isinstance(v, bytes):
            out[k] = v.decode("latin-1")
        else:
            out[k] = str(v)
    return out


def stored(row: dict, tags_array: bool = False) -> dict:
    """A row as the table stores it: a SET's labels as `[a,b]` in a STRING column, as a list in
    an ARRAY<STRING> one (a new table's)."""
    labels = [t for i, t in enumerate(TAGS) if row["tags"] >> i & 1]
    return dict(row, color=COLORS[row["color"]], tags=labels if tags_array else "[" + ",".join(labels) + "]")


def history(rng: random.Random, n: int, keys: int) -> tuple[list[dict], dict]:
    """Canal messages of 1-3 rows each (a DDL among them), and the final state."""
    state: dict[int, dict] = {}
    out = []
    for i in range(n):
        kind = rng.choice(["INSERT", "UPDATE", "DELETE"])
        rows = {rng.randrange(keys) for _ in range(rng.randrange(1, 4))}
        base = {"database": "shop", "table": "items", "isDdl": False, "pkNames": ["id"], "mysqlType": MYSQL_TYPES,
                "es": 1700000000000 + i, "ts": 1700000000100 + i, "id": i, "sql": ""}
        if kind == "INSERT":
            rows -= set(state)
            data = [random_row(rng, k) for k in sorted(rows)]
            state.update({r["id"]: r for r in data})
            msg = dict(base, type="INSERT", data=[text(r) for r in data], old=None)
        elif kind == "UPDATE":
            rows &= set(state)
            new = [random_row(rng, k) for k in sorted(rows)]
            old = [{c: v for c, v in text(state[r["id"]]).items() if text(r)[c] != v} for r in new]
            state.update({r["id"]: r for r in new})
            msg = dict(base, type="UPDATE", data=[text(r) for r in new], old=old)
        else:
            rows &= set(state)
            msg = dict(base, type="DELETE", data=[text(state.pop(k)) for k in sorted(rows)], old=None)
        if msg["data"]:
            out.append(msg)
        if i == n // 2:
            out.append({"type": "ALTER", "isDdl": True, "sql": "ALTER TABLE items ADD note TEXT", "data": None,
                        "database": "shop", "table": "items"})
    return out, state


def test_messages_of_several_rows_round_trip():
    messages, final = history(random.Random(2), 300, 60)
    out = Decoder("canal-json", TABLE, ("id",)).decode(records([json.dumps(m).encode() for m in messages]))
    assert applied(out.to_pylist()) == {k: stored(v) for k, v in final.items()}
    kinds = {"INSERT": "+I", "UPDATE": "+U", "DELETE": "-D"}
    assert out.column("_kind").to_pylist() == [kinds[m["type"]] for m in messages if not m["isDdl"] for _ in m["data"]]


def test_binary_columns_are_the_bytes_of_their_iso_8859_1_text():
    """Every byte value, as JSON escapes (\\u00e9) and as raw UTF-8 alike; a character no byte
    stands for is refused by record."""
    table = pa.schema([pa.field("id", pa.int64(), False), ("blob", pa.binary())])
    every_byte = bytes(range(256))
    message = {"type": "INSERT", "isDdl": False, "data": [{"id": "1", "blob": every_byte.decode("latin-1")},
                                                          {"id": "2", "blob": ""}, {"id": "3", "blob": None}]}
    for ascii_only in (True, False):
        rows = Decoder("canal-json", table, ("id",)).decode(records([json.dumps(message, ensure_ascii=ascii_only).encode()]))
        assert rows.column("blob").to_pylist() == [every_byte, b"", None]
    beyond = {"type": "INSERT", "isDdl": False, "data": [{"id": "4", "blob": "\u0100"}]}
    with pytest.raises(DecodeError, match="column 'blob' holds a character above U\\+00FF"):
        Decoder("canal-json", table, ("id",)).decode(records([json.dumps(beyond).encode()]))


def test_timestamps_with_local_time_zone_are_read_in_the_servers_zone(monkeypatch, tmp_path):
    """Canal writes a MySQL TIMESTAMP as wall-time text in the server's zone, which it does not
    name: given (`--server-time-zone`), the text is that zone's instant; an hour the zone repeats
    or skips (daylight saving) is refused by record, since it names no single instant."""
    table = pa.schema([pa.field("id", pa.int64(), False), ("at", pa.timestamp("us", tz="UTC"))])
    texts = ["2024-01-01 10:00:00.123456", "2024-07-01 10:00:00", None]
    message = {"type": "INSERT", "isDdl": False, "data": [{"id": str(i), "at": t} for i, t in enumerate(texts)]}
    utc = dt.timezone.utc
    for zone, winter, summer in [("UTC", 10, 10), ("Europe/Berlin", 9, 8), ("Asia/Shanghai", 2, 2)]:
        rows = Decoder("canal-json", table, ("id",), server_time_zone=zone).decode(records([json.dumps(message).encode()]))
        assert rows.column("at").to_pylist() == [dt.datetime(2024, 1, 1, winter, 0, 0, 123456, tzinfo=utc),
                                                 dt.datetime(2024, 7, 1, summer, tzinfo=utc), None]
    for hour, why in [("2024-10-27 02:30:00", "ambiguous"), ("2024-03-31 02:30:00", "does not exist|doesn't exist|nonexistent")]:
        values = [json.dumps({"type": "INSERT", "isDdl": False, "data": [{"id": "1", "at": t}]}).encode()
                  for t in ("2024-01-01 00:00:00", hour)]
        with pytest.raises(DecodeError, match=f"offset=1 .*column 'at'.*({why})"):
            Decoder("canal-json", table, ("id",), server_time_zone="Europe/Berlin").decode(records(values))
    with pytest.raises(DecodeError, match="unknown time zone 'Mars/Olympus'"):
        Decoder("canal-json", table, ("id",), server_time_zone="Mars/Olympus")
    with pytest.raises(DecodeError, match="a server time zone is for canal-json"):
        Decoder("maxwell-json", table, ("id",), server_time_zone="UTC")
    cfg = ingest_config(monkeypatch, tmp_path, "--format", "canal-json", "--server-time-zone", "Asia/Shanghai")
    assert (cfg.format, cfg.server_time_zone) == ("canal-json", "Asia/Shanghai")


def test_key_moves_truncate_and_values_not_decoded():
    table = pa.schema([pa.field("region", pa.string(), False), pa.field("id", pa.int64(), False), ("qty", pa.int32())])
    messages = [
        {"type": "INSERT", "isDdl": False, "data": [{"region": "eu", "id": "1", "qty": "1"},
                                                    {"region": "eu", "id": "2", "qty": "1"}]},
        {"type": "UPDATE", "isDdl": False, "data": [{"region": "us", "id": "1", "qty": "1"},
                                                    {"region": "eu", "id": "2", "qty": "5"}],
         "old": [{"region": "eu"}, {"qty": "1"}]},
        {"type": "TRUNCATE", "isDdl": True, "sql": "TRUNCATE TABLE items", "data": None},
        {"type": "INSERT", "isDdl": False, "data": [{"region": "eu", "id": "x", "qty": "1"}]}]
    d = Decoder("canal-json", table, ("region", "id"), key_format="json", partition_keys=("region",), on_error="skip")
    decoded = d.decode_all(records([json.dumps(m).encode() for m in messages]))
    assert [(r["region"], r["id"], r["qty"], r["_kind"]) for r in decoded.rows.to_pylist()] == [
        ("eu", 1, 1, "+I"), ("eu", 2, 1, "+I"), ("eu", 1, 1, "-D"), ("us", 1, 1, "+I"), ("eu", 2, 5, "+U")]
    assert decoded.rejected.column("offset").to_pylist() == [2, 3]
    errors = decoded.rejected.column("error").to_pylist()
    assert "a TRUNCATE is not a row change" in errors[0] and "column 'id'" in errors[1]
    zoned = pa.schema([pa.field("id", pa.int64(), False), ("at", pa.timestamp("us", tz="UTC"))])
    with pytest.raises(DecodeError, match="column 'at' is a TIMESTAMP WITH LOCAL TIME ZONE, which Canal"):
        Decoder("canal-json", zoned, ("id",)).decode(records([json.dumps(
            {"type": "INSERT", "isDdl": False, "data": [{"id": "1", "at": "2024-01-01 10:00:00"}]}).encode()]))
    with pytest.raises(DecodeError, match="column 'color' holds an index outside its ENUM"):
        Decoder("canal-json", TABLE, ("id",)).decode(records([json.dumps(
            {"type": "INSERT", "isDdl": False, "mysqlType": MYSQL_TYPES, "data": [{"id": "1", "color": "4"}]}).encode()]))


def test_a_new_tables_columns_come_from_mysql_types():
    from paimon_streaming.sinks import canal
    # a SET is ARRAY<STRING> of its labels, as Paimon's MySqlTypeUtils types it
    assert canal.table_schema(MYSQL_TYPES) == TABLE.set(0, TABLE.field(0).with_nullable(True)) \
        .set(9, pa.field("tags", pa.list_(pa.string())))
    more = {"a": "int(10) unsigned zerofill", "b": "decimal(65,2)", "c": "timestamp", "d": "decimal", "e": "bit(8)",
            "f": "tinyint(4)", "g": "double precision", "h": "bigint unsigned", "i": "datetime(3)", "j": "year(4)",
            "k": "mediumint unsigned", "l": "longtext", "m": "real unsigned", "n": "double precision unsigned zerofill",
            "o": "real(10,7) unsigned zerofill"}
    assert [f.type for f in canal.table_schema(more)] == [
        pa.int64(), pa.string(), pa.timestamp("s"), pa.decimal128(38, 18), pa.binary(), pa.int8(), pa.float64(),
        pa.decimal128(20, 0), pa.timestamp("ms"), pa.int32(), pa.int64(), pa.string(), pa.float64(), pa.float64(),
        pa.float64()]
    with pytest.raises(ValueError, match="column 'spot' has MySQL type 'point', not read here"):
        canal.table_schema({"spot": "point"})
    # a new table's columns come from the first row message; DDL and broken records tell none
    assert canal.table_schema_of(b"{broken") is None
    assert canal.table_schema_of(json.dumps({"isDdl": True, "type": "CREATE", "mysqlType": None}).encode()) is None
    assert canal.table_schema_of(json.dumps({"isDdl": False, "type": "INSERT", "mysqlType": {"id": "int"}}).encode()) \
        == pa.schema([("id", pa.int32())])


def test_ingest_canal_creates_the_table_from_mysql_types(spark, broker, tmp_path):
    from kafka_broker import unique_topic

    topic = unique_topic("canal-typed")
    broker.create_topic(topic, partitions=1)
    messages, final = history(random.Random(7), 120, 50)
    produce(broker, topic, [(None, json.dumps(m).encode()) for m in messages])
    ours, java, lines = ingest_items(spark, broker, tmp_path, topic, format="canal-json")
    assert any("typed as Paimon's MySQL CDC" in line for line in lines), lines
    assert ours == sorted((stored(v, tags_array=True) for v in final.values()), key=lambda r: r["id"])
    assert java == ours


def test_ingest_canal_end_to_end(spark, broker, tmp_path):
    from kafka_broker import unique_topic

    topic = unique_topic("canal")
    broker.create_topic(topic, partitions=1)
    messages, final = history(random.Random(6), 200, 80)
    produce(broker, topic, [(None, json.dumps(m).encode()) for m in messages])
    ddl = ("id BIGINT NOT NULL, name STRING, price DECIMAL(10,2), born DATE, seen TIMESTAMP_NTZ, opens STRING, "
           "ok BOOLEAN, score DOUBLE, color STRING, tags STRING, blob BINARY")
    ours, java, _ = ingest_items(spark, broker, tmp_path, topic, format="canal-json", schema=ddl,
                                 max_offsets_per_trigger=100)
    assert ours == sorted(({**stored(v), "opens": v["opens"].isoformat()} for v in final.values()),
                          key=lambda r: r["id"])
    assert java == ours


def test_a_new_table_is_not_created_from_messages_that_cannot_type_it(tmp_path):
    """Creating the table from the first row message: a column of a MySQL type not read here (or
    with no type) is an InvalidOptionError asking for --schema; DDL alone tells no columns yet
    (NoRowsYet, the job waits); no table is created either way."""
    import paimon_streaming as ps
    from paimon_streaming.errors import InvalidOptionError
    from paimon_streaming.sinks.ingest import IngestConfig, NoRowsYet, ensure_table
    cfg = IngestConfig(bootstrap_servers="h:1", warehouse=str(tmp_path), table="db.items", topics=("t",),
                       format="canal-json", primary_keys=("id",))
    ddl = json.dumps({"isDdl": True, "type": "CREATE", "sql": "CREATE TABLE items (id INT)", "data": None}).encode()

    def row(types):
        return json.dumps({"isDdl": False, "type": "INSERT", "mysqlType": types, "data": [{"id": "1"}]}).encode()
    for types, error in [({"id": "int", "spot": "point"}, "column 'spot' has MySQL type 'point', not read here"),
                         ({"id": "int", "note": ""}, "column 'note' has MySQL type '', not read here")]:
        with pytest.raises(InvalidOptionError, match=f"cannot create table db.items from the change events: {error}"):
            ensure_table(None, cfg, lambda line: None, lambda: [(None, ddl), (None, row(types))])
    with pytest.raises(NoRowsYet, match="table db.items does not exist and the topic holds no Canal row message yet"):
        ensure_table(None, cfg, lambda line: None, lambda: [(None, ddl)])
    assert not ps.Catalog(str(tmp_path)).table_exists("db.items")
    table = ensure_table(None, cfg, lambda line: None, lambda: [(None, ddl), (None, row({"id": "int", "n": "bigint"}))])
    assert table.schema.arrow_schema() == pa.schema([pa.field("id", pa.int32(), False), ("n", pa.int64())])


def test_rows_messages_typed_values_sets_and_spatial_columns_as_paimons_cdc():
    """As Paimon's Canal parser: a ROW message inserts its rows; typed JSON values (Flink's
    canal-json writer) are read as their text; a SET in an ARRAY<STRING> column is its labels.
    A spatial column is MySQL's internal geometry bytes: stored in a BYTES column, refused in a
    STRING one (Paimon writes GeoJSON there), never stored as that text."""
    types = {"id": "int(11)", "n": "bigint(20)", "tags": "set('a','b','c')", "spot": "point"}

    def message(kind, row):
        return json.dumps({"type": kind, "isDdl": False, "database": "shop", "table": "t", "mysqlType": types,
                           "data": [row]}).encode()
    table = pa.schema([pa.field("id", pa.int32(), False), ("n", pa.int64()), ("tags", pa.list_(pa.string())),
                       ("spot", pa.binary())])
    point = b"\x00\x00\x00\x00\x01\x01\x00\x00\x00" + b"\x00" * 6 + b"\xf0?" + b"\x00" * 6 + b"\xf0?"
    rows = Decoder("canal-json", table, ("id",)).decode(records([
        message("ROW", {"id": 1, "n": 5, "tags": "5", "spot": point.decode("latin-1")}),
        message("INSERT", {"id": "2", "n": "6", "tags": "0", "spot": None})])).to_pylist()
    assert rows == [{"id": 1, "n": 5, "tags": ["a", "c"], "spot": point, "_kind": "+I"},
                    {"id": 2, "n": 6, "tags": [], "spot": None, "_kind": "+I"}]
    typed = Decoder("canal-json", table, ("id",)).decode(records([  # a SET's bit mask as a JSON number
        message("INSERT", {"id": 3, "n": 7, "tags": 5})])).to_pylist()
    assert [r["tags"] for r in typed] == [["a", "c"]]
    with pytest.raises(DecodeError, match="column 'spot' is a MySQL POINT, which Canal sends as MySQL's internal"):
        Decoder("canal-json", table.set(3, pa.field("spot", pa.string())), ("id",)).decode(
            records([message("INSERT", {"id": "1", "spot": point.decode("latin-1")})]))
    added = Decoder("canal-json", table.remove(3).remove(2), ("id",)).decode_all(records([
        message("INSERT", {"id": "3", "tags": "6"})]))
    assert added.new_fields == pa.schema([("tags", pa.list_(pa.string()))])


def test_messages_whose_rows_cannot_be_applied_are_refused_by_record():
    """A row message without rows, an UPDATE whose 'old' does not hold one entry per row, a SET
    value with a bit beyond its labels: each refused naming the record, the others applied."""
    def message(**fields) -> bytes:
        return json.dumps({"database": "shop", "table": "items", "isDdl": False, "mysqlType": MYSQL_TYPES,
                           **fields}).encode()
    good = message(type="INSERT", data=[{"id": "1", "tags": "3"}])
    bad = [message(type="INSERT", data=[]),
           message(type="UPDATE", data=[{"id": "1"}, {"id": "2"}], old=[{"name": "x"}]),
           message(type="INSERT", data=[{"id": "3", "tags": "8"}])]
    decoded = Decoder("canal-json", TABLE, ("id",), on_error="skip").decode_all(records([good, *bad, good]))
    assert [(r["id"], r["tags"]) for r in decoded.rows.to_pylist()] == [(1, "[a,b]"), (1, "[a,b]")]  # as Paimon stores a SET
    errors = decoded.rejected.column("error").to_pylist()
    assert decoded.rejected.column("offset").to_pylist() == [1, 2, 3]
    assert "a INSERT record without rows in 'data'" in errors[0]
    assert "'old' does not hold one entry per row of 'data'" in errors[1]
    assert "column 'tags' holds a bit outside its SET" in errors[2]


def test_bit_columns_are_the_big_endian_bytes_of_their_number():
    """Canal writes a BIT(n > 1) as the decimal text of its unsigned number (b'0000000100000010' is
    "258"): stored as the number's big-endian bytes, (n + 7) // 8 of them, as Paimon's MySQL CDC
    stores it (BINARY((n + 7) / 8)); also in a column added upstream, and beside ISO-8859-1 text of
    a VARBINARY definition of the same column. A number beyond BIT(n) is refused by record."""
    types = {"id": "int(11)", "flags": "bit(16)", "wide": "bit(64)", "one": "bit(1)"}
    table = pa.schema([pa.field("id", pa.int32(), False), ("flags", pa.binary()), ("wide", pa.binary()),
                       ("one", pa.bool_())])
    from paimon_streaming.sinks import canal
    assert canal.table_schema(types).set(0, table.field(0)) == table

    def message(row, mysql_types=types):
        return json.dumps({"type": "INSERT", "isDdl": False, "database": "shop", "table": "t", "mysqlType": mysql_types,
                           "data": [row]}).encode()
    rows = Decoder("canal-json", table, ("id",)).decode(records([
        message({"id": "1", "flags": "258", "wide": "18446744073709551615", "one": "1"}),
        message({"id": "2", "flags": "0", "wide": "-9223372036854775808", "one": "0"}),
        message({"id": "3", "flags": None, "wide": "5", "one": None}),
        message({"id": "4", "flags": "\u00ff\u0001"}, {"id": "int(11)", "flags": "varbinary(4)"})]))
    assert rows.to_pylist() == [
        {"id": 1, "flags": b"\x01\x02", "wide": b"\xff" * 8, "one": True, "_kind": "+I"},
        {"id": 2, "flags": b"\x00\x00", "wide": b"\x80" + b"\x00" * 7, "one": False, "_kind": "+I"},
        {"id": 3, "flags": None, "wide": b"\x00" * 7 + b"\x05", "one": None, "_kind": "+I"},
        {"id": 4, "flags": b"\xff\x01", "wide": None, "one": None, "_kind": "+I"}]
    added = Decoder("canal-json", table.remove(1), ("id",)).decode_all(records([
        message({"id": "1", "flags": "1", "wide": "1"}), message({"id": "2", "flags": "65535", "wide": "2"})]))
    assert added.new_fields == pa.schema([("flags", pa.binary())])
    assert added.rows.num_rows == 2
    wide = Decoder("canal-json", table, ("id",), on_error="skip").decode_all(records([
        message({"id": "1", "flags": "65536"}), message({"id": "2", "flags": "x"})]))
    assert wide.rows.num_rows == 0
    errors = wide.rejected.column("error").to_pylist()
    assert "column 'flags' holds a number beyond its BIT(16)" in errors[0]
    assert "column 'flags' (BIT(16)) has text that is no number" in errors[1]


def test_typed_numbers_in_bit_and_binary_columns_are_read_as_their_text():
    """Flink's canal-json writes a BIT's value as a JSON number: Paimon's Canal parser takes it as
    its text, so 258 is "258", the bytes 0x0102 of a BIT(16) (in a column of the table and in one
    added upstream), 1 in a BIT(1) true, and a number in a VARBINARY column its text's bytes."""
    types = {"id": "int(11)", "flags": "bit(16)", "one": "bit(1)", "blob": "varbinary(8)"}
    table = pa.schema([pa.field("id", pa.int32(), False), ("flags", pa.binary()), ("one", pa.bool_()),
                       ("blob", pa.binary())])

    def message(row):
        return json.dumps({"type": "INSERT", "isDdl": False, "database": "shop", "table": "t", "mysqlType": types,
                           "data": [row]}).encode()
    batch = records([message({"id": 1, "flags": 258, "one": 1, "blob": 5}),
                     message({"id": 2, "flags": "3", "one": True, "blob": "x"})])
    expected = [{"id": 1, "flags": b"\x01\x02", "one": True, "blob": b"5", "_kind": "+I"},
                {"id": 2, "flags": b"\x00\x03", "one": True, "blob": b"x", "_kind": "+I"}]
    assert Decoder("canal-json", table, ("id",)).decode(batch).to_pylist() == expected
    added = Decoder("canal-json", table.remove(1), ("id",)).decode_all(records([
        message({"id": 1, "flags": 258}), message({"id": 2, "flags": 3})]))
    assert added.new_fields == pa.schema([("flags", pa.binary())]) and added.rejected.num_rows == 0


def test_columns_widened_or_added_upstream_take_their_mysql_types():
    """A column the source widens (INT -> BIGINT, FLOAT -> DOUBLE, DECIMAL(8,3) -> DECIMAL(10,4))
    is decoded as the message's mysqlType declares it, so the table widens (as Paimon's CDC does)
    where before a value was rounded into FLOAT or refused; columns added upstream are typed
    from mysqlType (BIGINT, DECIMAL, VARBINARY, DOUBLE, ENUM labels), not STRING. A narrower
    declared type is cast to the column's."""
    table = pa.schema([pa.field("id", pa.int32(), False), ("f", pa.float32()), ("n", pa.int32()),
                       ("d", pa.decimal128(8, 3)), ("big", pa.int64())])
    before = {"id": "int", "f": "float", "n": "int(11)", "d": "decimal(8,3)", "big": "bigint(20)"}
    after = {"id": "int", "f": "double", "n": "bigint(20)", "d": "decimal(10,4)", "big": "int(11)",
             "v2": "bigint(20)", "v3": "decimal(8,3)", "v4": "varbinary(20)", "v5": "double",
             "v6": "enum('x','y')", "v7": "datetime(3)"}

    def message(mysql_types, row):
        return json.dumps({"type": "INSERT", "isDdl": False, "database": "shop", "table": "t",
                           "mysqlType": mysql_types, "data": [row]}).encode()
    batch = records([message(before, {"id": "1", "f": "9.5", "n": "1", "d": "1.500", "big": "7"}),
                     message(after, {"id": "2", "f": "9.00000000009", "n": "70000000000", "d": "1.2345", "big": "8",
                                     "v2": "90000000000", "v3": "99999.999", "v4": "a\u00ffb", "v5": "4.00000000004",
                                     "v6": "2", "v7": None})])
    decoded = Decoder("canal-json", table, ("id",)).decode_all(batch)
    assert decoded.rejected.num_rows == 0
    assert decoded.new_fields == pa.schema([
        ("v2", pa.int64()), ("v3", pa.decimal128(8, 3)), ("v4", pa.binary()), ("v5", pa.float64()),
        ("v6", pa.string()), ("v7", pa.timestamp("us")),
        ("f", pa.float64()), ("n", pa.int64()), ("d", pa.decimal128(10, 4))])
    # the table evolved as ingest evolves it: the batch decodes as it was written upstream
    fields = {f.name: f for f in decoded.new_fields}
    evolved = pa.schema([fields.pop(f.name).with_nullable(True) if f.name in fields else f for f in table]
                        + [f.with_nullable(True) for f in fields.values()])
    again = Decoder("canal-json", evolved, ("id",)).decode_all(batch)
    assert len(again.new_fields) == 0 and again.rejected.num_rows == 0
    assert again.rows.to_pylist()[1] == {
        "id": 2, "f": 9.00000000009, "n": 70000000000, "d": decimal.Decimal("1.2345"), "big": 8, "v2": 90000000000,
        "v3": decimal.Decimal("99999.999"), "v4": b"a\xffb", "v5": 4.00000000004, "v6": "y", "v7": None, "_kind": "+I"}
    assert again.rows.to_pylist()[0]["f"] == 9.5
