"""Scan planning and reading: pruning by partition and statistics, projection, filters."""
from __future__ import annotations

import datetime as dt

import pyarrow as pa
import pyarrow.compute as pc
import pytest

from paimon_streaming.errors import SchemaMismatchError, SnapshotNotFoundError
from conftest import rows_by

SCHEMA = pa.schema([("id", pa.int64(), False), ("v", pa.string()), ("n", pa.float64()),
                    ("ts", pa.timestamp("us")), ("dt", pa.string(), False)])


def batch(ids, dt_value):
    return pa.table({"id": ids, "v": [f"v{i}" for i in ids], "n": [i / 2 for i in ids],
                     "ts": [dt.datetime(2024, 1, 1) + dt.timedelta(seconds=i) for i in ids],
                     "dt": [dt_value] * len(ids)}, schema=SCHEMA)


@pytest.fixture
def append_table(catalog):
    t = catalog.create_table("db.a", SCHEMA, partition_keys=["dt"])
    for day in range(3):
        for part in range(2):
            t.write_arrow(batch(list(range(day * 100 + part * 50, day * 100 + part * 50 + 50)), f"2024-01-0{day + 1}"))
    return t


def files_planned(table, flt):
    return sum(len(s.files) for s in table.plan(table.latest_snapshot(), flt))


def test_partition_pruning(append_table):
    assert files_planned(append_table, None) == 6
    assert files_planned(append_table, [("dt", "=", "2024-01-02")]) == 2
    assert files_planned(append_table, [("dt", "in", ["2024-01-01", "2024-01-03"])]) == 4
    got = append_table.to_arrow(filter=[("dt", "=", "2024-01-02")])
    assert sorted(got.column("id").to_pylist()) == list(range(100, 200))


def test_stats_pruning_and_row_filter(append_table):
    assert files_planned(append_table, [("id", ">=", 260)]) == 1
    assert files_planned(append_table, [("id", "<", 0)]) == 0
    assert files_planned(append_table, [("ts", ">", dt.datetime(2024, 1, 1, 0, 4, 0))]) == 2
    assert files_planned(append_table, [[("id", "=", 10)], [("id", "=", 210)]]) == 2
    got = append_table.to_arrow(filter=[("id", ">=", 260), ("n", "<", 140)])
    assert sorted(got.column("id").to_pylist()) == list(range(260, 280))
    assert append_table.to_arrow(filter=[("v", "is null")]).num_rows == 0


def test_projection_and_expression_filter(append_table):
    got = append_table.to_arrow(columns=["n", "id"], filter=pc.field("v") == "v7")
    assert got.column_names == ["n", "id"]
    assert got.to_pylist() == [{"n": 3.5, "id": 7}]
    with pytest.raises(SchemaMismatchError, match="nope"):
        append_table.to_arrow(columns=["nope"])
    with pytest.raises(SchemaMismatchError, match="nope"):
        append_table.to_arrow(filter=[("nope", "=", 1)])


def test_primary_key_value_filter_never_resurrects_old_versions(catalog):
    """Pruning by a value column must not drop the file with the newest version of a key."""
    t = catalog.create_table("db.pk", SCHEMA, primary_keys=["id", "dt"], partition_keys=["dt"],
                             options={"bucket": "1"})
    t.write_arrow(batch([1, 2, 3], "d"))
    newer = batch([2], "d").set_column(2, "n", pa.array([100.0]))
    t.write_arrow(newer)
    got = t.to_arrow(filter=[("n", "<", 50)])
    assert sorted(got.column("id").to_pylist()) == [1, 3]  # id 2 is now 100.0: filtered, not resurrected
    assert files_planned(t, [("id", "=", 99)]) == 0  # key stats still prune


def test_missing_snapshot_and_tag_errors(append_table):
    with pytest.raises(SnapshotNotFoundError, match="snapshot 99"):
        append_table.to_arrow(snapshot_id=99)
    with pytest.raises(SnapshotNotFoundError, match="tag 'nope'"):
        append_table.to_arrow(tag="nope")


def test_empty_table_reads_empty_with_schema(catalog):
    t = catalog.create_table("db.e", SCHEMA, primary_keys=["id", "dt"], options={"bucket": "2"})
    out = t.to_arrow()
    assert out.num_rows == 0 and out.schema.names == SCHEMA.names


def test_decimal_filters_compare_by_value(catalog):
    from decimal import Decimal
    t = catalog.create_table("db.dec", pa.schema([("a", pa.decimal128(12, 2))]))
    t.write_arrow(pa.table({"a": pa.array([Decimal("1.50"), Decimal("1.80"), Decimal("1.75")], pa.decimal128(12, 2))}))
    assert sorted(r["a"] for r in t.to_arrow(filter=[("a", ">", Decimal("1.7"))]).to_pylist()) == \
        [Decimal("1.75"), Decimal("1.80")]
    assert t.to_arrow(filter=[("a", ">", Decimal("1.755"))]).to_pylist() == [{"a": Decimal("1.80")}]
    assert t.to_arrow(filter=[("a", "in", [Decimal("1.5")])]).to_pylist() == [{"a": Decimal("1.50")}]
