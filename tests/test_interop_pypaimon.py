"""Interop with pypaimon: tables we write read identically through pypaimon, tables pypaimon
writes read identically through us, and both writers appending to one table in turn."""
from __future__ import annotations

import datetime as dt
from decimal import Decimal

import numpy as np
import pyarrow as pa
import pytest

import paimon_streaming as ps
from conftest import pypaimon_create, pypaimon_read, pypaimon_write, rows_by

ALL_TYPES = pa.schema([
    ("id", pa.int64(), False),
    ("b", pa.bool_()), ("i8", pa.int8()), ("i16", pa.int16()), ("i32", pa.int32()), ("f32", pa.float32()),
    ("f64", pa.float64()), ("d10", pa.decimal128(10, 2)), ("d38", pa.decimal128(38, 6)),
    ("s", pa.string()), ("bin", pa.binary()), ("date", pa.date32()), ("time", pa.time32("ms")),
    ("ts3", pa.timestamp("ms")), ("ts6", pa.timestamp("us")), ("ltz6", pa.timestamp("us", tz="UTC")),
    ("arr", pa.list_(pa.int32())), ("m", pa.map_(pa.string(), pa.int32())),
    ("row", pa.struct([("x", pa.int32()), ("y", pa.string())])),
])


def all_types_data(start: int, n: int) -> pa.Table:
    rows = []
    for i in range(start, start + n):
        null = i % 4 == 3
        rows.append({
            "id": i, "b": None if null else i % 2 == 0, "i8": None if null else (i % 100) - 50,
            "i16": None if null else -i * 7, "i32": None if null else i * 1000,
            "f32": None if null else i / 4, "f64": None if null else -i / 3,
            "d10": None if null else Decimal(f"{i}.{i % 100:02d}"),
            "d38": None if null else Decimal(f"-123456789012345678901234567.{i:06d}"),
            "s": None if null else ("short" if i % 2 else f"a much longer string ü€ {i}" * 3),
            "bin": None if null else bytes([i % 256]) * (i % 12),
            "date": None if null else dt.date(2024, 1, 1) + dt.timedelta(days=i),
            "time": None if null else dt.time(1, 2, 3, (i % 1000) * 1000),
            "ts3": None if null else dt.datetime(2024, 1, 1, 1, 2, 3, 456000) + dt.timedelta(hours=i),
            "ts6": None if null else dt.datetime(2024, 1, 1, 1, 2, 3, 456789) + dt.timedelta(minutes=i),
            "ltz6": None if null else dt.datetime(2024, 5, 6, 7, 8, 9, 123456, tzinfo=dt.timezone.utc),
            "arr": None if null else [i, None, -i],
            "m": None if null else [("k", i), ("other", None)],
            "row": None if null else {"x": i, "y": None if i % 3 else "y"},
        })
    return pa.Table.from_pylist(rows, schema=ALL_TYPES)


def normalize(rows: list[dict]) -> list[dict]:
    """pypaimon returns maps as lists of tuples like we do; make nested values comparable."""
    out = []
    for r in rows:
        out.append({k: (sorted(v) if isinstance(v, list) and v and isinstance(v[0], tuple) else v)
                    for k, v in r.items()})
    return out


@pytest.mark.parametrize("file_format", ["parquet", "orc"])
def test_append_table_every_type_read_by_pypaimon(catalog, warehouse, file_format):
    t = catalog.create_table("db.types", ALL_TYPES, options={"file.format": file_format})
    data = all_types_data(0, 12)
    t.write_arrow(data)
    t.write_arrow(all_types_data(12, 5))
    expected = rows_by(pa.concat_tables([data, all_types_data(12, 5)]), "id")
    assert normalize(rows_by(t.to_arrow(), "id")) == normalize(expected)
    assert normalize(rows_by(pypaimon_read(warehouse, "db.types"), "id")) == normalize(expected)


def test_primary_key_every_type_multi_bucket(catalog, warehouse):
    t = catalog.create_table("db.pk", ALL_TYPES, primary_keys=["id"], options={"bucket": "3"})
    t.write_arrow(all_types_data(0, 20))
    update = all_types_data(5, 10)
    t.write_arrow(update)
    expected = {r["id"]: r for r in all_types_data(0, 20).to_pylist()}
    expected.update({r["id"]: r for r in update.to_pylist()})
    want = normalize(sorted(expected.values(), key=lambda r: r["id"]))
    assert normalize(rows_by(t.to_arrow(), "id")) == want
    assert normalize(rows_by(pypaimon_read(warehouse, "db.pk"), "id")) == want


KEY_SCHEMA = pa.schema([("name", pa.string(), False), ("amount", pa.decimal128(20, 2), False),
                        ("ts", pa.timestamp("us"), False), ("v", pa.int64()), ("dt", pa.string(), False)])


def key_data(seed: int, n: int) -> pa.Table:
    rng = np.random.default_rng(seed)
    names = ["", "a", "1234567", "12345678", "ünïcødé-long-key-" * 2, "short"]
    return pa.table({
        "name": pa.array([names[i] for i in rng.integers(0, len(names), n)]),
        "amount": pa.array([Decimal(int(x)) / 100 for x in rng.integers(-5, 5, n)], pa.decimal128(20, 2)),
        "ts": pa.array([dt.datetime(2024, 1, 1, 0, 0, 0, int(x)) for x in rng.integers(0, 3, n)],
                       pa.timestamp("us")),
        "v": pa.array(rng.integers(0, 1_000_000, n)),
        "dt": pa.array([["2024-01-01", "2024-01-02", "x y/z"][i] for i in rng.integers(0, 3, n)]),
    }, schema=KEY_SCHEMA)


def test_composite_keys_partitions_and_mixed_writers(catalog, warehouse):
    """String (inline and long), decimal and timestamp keys over partitions; we and pypaimon
    write in turn; every reader agrees with a dict model after each batch."""
    catalog.create_table("db.mixed", KEY_SCHEMA, primary_keys=["name", "amount", "ts", "dt"],
                         partition_keys=["dt"], options={"bucket": "4"})
    model: dict[tuple, int] = {}
    for step in range(6):
        batch = key_data(step, 200)
        if step % 2 == 0:
            catalog.get_table("db.mixed").write_arrow(batch)
        else:
            pypaimon_write(warehouse, "db.mixed", batch)
        for r in batch.to_pylist():
            model[(r["name"], r["amount"], r["ts"], r["dt"])] = r["v"]
        ours = {(r["name"], r["amount"], r["ts"], r["dt"]): r["v"]
                for r in catalog.get_table("db.mixed").to_arrow().to_pylist()}
        theirs = {(r["name"], r["amount"], r["ts"], r["dt"]): r["v"]
                  for r in pypaimon_read(warehouse, "db.mixed").to_pylist()}
        assert ours == model, f"our read differs after step {step}"
        assert theirs == model, f"pypaimon's read differs after step {step}"


def test_we_read_pypaimon_tables(warehouse):
    schema = pa.schema([("id", pa.int64(), False), ("s", pa.string()), ("d", pa.decimal128(12, 3)),
                        ("p", pa.string(), False)])
    pypaimon_create(warehouse, "db.theirs", schema, primary_keys=["id", "p"], partition_keys=["p"],
                    options={"bucket": "2"})
    model = {}
    for step in range(3):
        ids = np.arange(step * 50, step * 50 + 100)
        batch = pa.table({"id": ids, "s": [f"s{i}-{step}" for i in ids], "d": [Decimal(int(i)) / 8 for i in ids],
                          "p": ["a" if i % 3 else "b" for i in ids]}, schema=schema)
        pypaimon_write(warehouse, "db.theirs", batch)
        model.update({(r["id"], r["p"]): r for r in batch.to_pylist()})
    t = ps.Catalog(warehouse).get_table("db.theirs")
    assert rows_by(t.to_arrow(), "id") == sorted(model.values(), key=lambda r: r["id"])
    assert rows_by(t.to_arrow(filter=[("p", "=", "b")]), "id") == \
        sorted((r for r in model.values() if r["p"] == "b"), key=lambda r: r["id"])


def test_pypaimon_append_table_every_type_read_by_us(warehouse):
    pypaimon_create(warehouse, "db.theirs_types", ALL_TYPES)
    data = all_types_data(0, 12)
    pypaimon_write(warehouse, "db.theirs_types", data)
    t = ps.Catalog(warehouse).get_table("db.theirs_types")
    assert normalize(rows_by(t.to_arrow(), "id")) == normalize(rows_by(data, "id"))


def test_time_travel_and_snapshot_reads_match_pypaimon(catalog, warehouse):
    t = catalog.create_table("db.tt", pa.schema([("id", pa.int64(), False), ("v", pa.string())]),
                             primary_keys=["id"], options={"bucket": "2"})
    s1 = t.write_arrow(pa.table({"id": [1, 2], "v": ["a", "b"]}))
    s2 = t.write_arrow(pa.table({"id": [2, 3], "v": ["b2", "c"]}))
    assert rows_by(t.to_arrow(snapshot_id=s1), "id") == [{"id": 1, "v": "a"}, {"id": 2, "v": "b"}]
    assert rows_by(pypaimon_read(warehouse, "db.tt", s1), "id") == rows_by(t.to_arrow(snapshot_id=s1), "id")
    assert rows_by(t.to_arrow(snapshot_id=s2), "id") == rows_by(pypaimon_read(warehouse, "db.tt"), "id")


def test_pypaimon_primary_key_table_every_type_read_by_us(warehouse):
    pypaimon_create(warehouse, "db.theirs_pk", ALL_TYPES, primary_keys=["id"], options={"bucket": "2"})
    pypaimon_write(warehouse, "db.theirs_pk", all_types_data(0, 12))
    pypaimon_write(warehouse, "db.theirs_pk", all_types_data(6, 10))
    expected = {r["id"]: r for r in all_types_data(0, 12).to_pylist()}
    expected.update({r["id"]: r for r in all_types_data(6, 10).to_pylist()})
    t = ps.Catalog(warehouse).get_table("db.theirs_pk")
    assert normalize(rows_by(t.to_arrow(), "id")) == normalize(sorted(expected.values(), key=lambda r: r["id"]))


def test_pypaimon_layouts_and_formats_we_do_not_read_are_refused_by_name(warehouse):
    """pypaimon 2.1's shared-shredding MAP layout was reported as a damaged file (by reads and
    `check`), and its `file.format` = 'row' as a bare "expected one of parquet, orc, avro"."""
    from paimon_streaming.check import check_table
    from paimon_streaming.errors import InvalidOptionError, UnsupportedOperationError
    schema = pa.schema([pa.field("id", pa.int64(), nullable=False), ("m", pa.map_(pa.string(), pa.int64()))])
    pypaimon_create(warehouse, "db.shredded", schema, options={"fields.m.map.storage-layout": "shared-shredding"})
    pypaimon_write(warehouse, "db.shredded", pa.table({"id": [1], "m": [[("a", 1)]]}, schema=schema))
    t = ps.Table.open(f"{warehouse}/db.db/shredded")
    with pytest.raises(UnsupportedOperationError, match=r"MAP column 'm' in layout 'shared-shredding'"):
        t.to_arrow()
    assert {p.kind for p in check_table(t).problems} == {"unreadable-file"}
    pypaimon_create(warehouse, "db.rows", pa.schema([("id", pa.int64())]), options={"file.format": "row"})
    with pytest.raises(InvalidOptionError, match=r"table option 'file.format' = 'row' is not supported"):
        ps.Table.open(f"{warehouse}/db.db/rows").to_arrow()
