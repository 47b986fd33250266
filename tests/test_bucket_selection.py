"""Bucket selection (bucket_selection.py): a filter that pins every bucket-key column to `=` or
`in` literals reads only the buckets those keys hash to, as Java's scan does. The answer must be
the unfiltered read's matching rows whatever is selected, and a point lookup must plan the one
bucket the writer put the key in (found here by the writer's own assignment, and by Java's)."""
from __future__ import annotations

import datetime as dt
from decimal import Decimal

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
import pytest

import paimon_streaming as ps
from paimon_streaming.bucket_selection import pinned_keys
from paimon_streaming.predicate import parse_filter
from paimon_streaming.scan import TableScan

try:
    from java_oracle import get_oracle
except ImportError:  # pragma: no cover
    from tests.java_oracle import get_oracle

N = 400
BUCKETS = 8
KEY_VALUES = {
    pa.int32(): list(range(-200, 200)),
    pa.int64(): [2**40 + 7 * i for i in range(N)],
    pa.string(): [f"user-{i}@example.com" for i in range(N)],
    pa.binary(): [bytes([i % 256, i // 256]) for i in range(N)],
    pa.decimal128(10, 2): [Decimal(i) / 4 for i in range(N)],
    pa.date32(): [dt.date(2024, 1, 1) + dt.timedelta(days=i) for i in range(N)],
    pa.timestamp("us"): [dt.datetime(2024, 1, 1, 0, 0, 0, 7 * i) for i in range(N)],
}


def _table(tmp_path, key_type: pa.DataType, **options) -> ps.Table:
    schema = pa.schema([pa.field("k", key_type, nullable=False), pa.field("v", pa.int64())])
    t = ps.Catalog(str(tmp_path)).create_table("db.t", schema, primary_keys=["k"],
                                              options={"bucket": str(BUCKETS), **options})
    keys = KEY_VALUES[key_type]
    for start in (0, N // 2):  # two commits: two files in most buckets
        t.write_arrow(pa.table({"k": pa.array(keys[start:start + N // 2], key_type),
                                "v": pa.array(range(start, start + N // 2), pa.int64())}, schema=schema))
    return t


def _planned_buckets(t: ps.Table, flt) -> set[int]:
    return {s.bucket for s in t.plan(t.latest_snapshot(), filter=flt)}


def _bucket_of(t: ps.Table, key) -> int:
    data = pa.table({"k": pa.array([key], t.arrow_schema().field("k").type), "v": pa.array([0], pa.int64())})
    return int(t.new_write().partition_and_bucket(data)[1][0])


@pytest.mark.parametrize("key_type", list(KEY_VALUES), ids=str)
def test_a_point_lookup_reads_the_bucket_of_its_key(tmp_path, key_type):
    t = _table(tmp_path, key_type, **{"deletion-vectors.enabled": "true"})
    keys = KEY_VALUES[key_type]
    for i in (0, 1, 137, N - 1):
        flt = [("k", "=", keys[i])]
        assert t.to_arrow(filter=flt).to_pylist() == [{"k": keys[i], "v": i}]
        assert _planned_buckets(t, flt) == {_bucket_of(t, keys[i])}
    picked = [keys[i] for i in (3, 5, 250)]
    assert sorted(r["v"] for r in t.to_arrow(filter=[("k", "in", picked)]).to_pylist()) == [3, 5, 250]
    assert _planned_buckets(t, [("k", "in", picked)]) == {_bucket_of(t, k) for k in picked}


def test_every_filter_reads_what_the_unfiltered_read_holds(tmp_path):
    """Random OR-of-AND filters on a composite key (a partition, a STRING and an INT key column):
    whatever buckets are selected, the rows are those of the whole table that match."""
    schema = pa.schema([pa.field("p", pa.int32(), nullable=False), pa.field("a", pa.string(), nullable=False),
                        pa.field("b", pa.int32(), nullable=False), pa.field("v", pa.int64())])
    t = ps.Catalog(str(tmp_path)).create_table("db.t", schema, primary_keys=["p", "a", "b"], partition_keys=["p"],
                                              options={"bucket": "5"})
    rng = np.random.default_rng(5)
    for commit in range(3):
        n = 600
        t.write_arrow(pa.table({"p": pa.array(rng.integers(0, 3, n), pa.int32()),
                                "a": [f"a{x}" for x in rng.integers(0, 20, n)],
                                "b": pa.array(rng.integers(0, 30, n), pa.int32()),
                                "v": pa.array(np.arange(n) + commit * n)}, schema=schema))
    whole = t.to_arrow()
    pinned = 0
    for _ in range(60):
        disjuncts = []
        for _ in range(int(rng.integers(1, 3))):
            terms = []
            if rng.random() < 0.8:
                terms.append(("a", "in", [f"a{x}" for x in rng.integers(0, 22, int(rng.integers(0, 4)))])
                             if rng.random() < 0.5 else ("a", "=", f"a{rng.integers(0, 22)}"))
            if rng.random() < 0.8:
                terms.append(("b", "in", [int(x) for x in rng.integers(0, 32, int(rng.integers(1, 4)))])
                             if rng.random() < 0.5 else ("b", ">" if rng.random() < 0.2 else "=", int(rng.integers(0, 32))))
            if rng.random() < 0.3:
                terms.append(("p", "=", int(rng.integers(0, 3))))
            disjuncts.append(terms or [("v", ">=", 0)])
        flt = disjuncts
        expected = whole.filter(parse_filter(flt, whole.schema).expression)
        got = t.to_arrow(filter=flt)
        assert sorted(got.to_pylist(), key=repr) == sorted(expected.to_pylist(), key=repr), flt
        pinned += pinned_keys(parse_filter(flt, whole.schema), t.schema.fields_of(["a", "b"])) is not None
    assert pinned >= 10  # the selection was exercised, not only the fallback to every bucket


def test_filters_that_leave_a_key_free_read_every_bucket(tmp_path):
    schema = pa.schema([pa.field("a", pa.string(), nullable=False), pa.field("b", pa.int32(), nullable=False),
                        pa.field("x", pa.float64(), nullable=False)])
    t = ps.Catalog(str(tmp_path)).create_table("db.t", schema, primary_keys=["a", "b"], options={"bucket": "4"})
    t.write_arrow(pa.table({"a": [f"a{i}" for i in range(200)], "b": pa.array(range(200), pa.int32()),
                            "x": [i / 2 for i in range(200)]}, schema=schema))
    fields = t.schema.fields_of(["a", "b"])
    for flt in ([("a", "=", "a1")],                                   # b free
                [[("a", "=", "a1"), ("b", "=", 1)], [("a", "=", "a2")]],  # one disjunct leaves b free
                [("a", "=", "a1"), ("b", ">=", 1)],                    # a range
                [("a", "in", [f"a{i}" for i in range(40)]), ("b", "in", list(range(40)))]):  # 1,600 combinations
        assert pinned_keys(parse_filter(flt, t.arrow_schema()), fields) is None, flt
    assert t.to_arrow(filter=[("a", "=", "a1")]).num_rows == 1
    assert t.to_arrow(filter=[[("a", "=", "a1"), ("b", "=", 1)], [("a", "=", "a2")]]).num_rows == 2
    assert t.to_arrow(filter=[("a", "=", "a1"), ("b", "=", 1)]).num_rows == 1
    assert len(_planned_buckets(t, [("a", "=", "a1"), ("b", "=", 1)])) == 1
    # a floating-point key: 0.0 and -0.0 are equal but hash apart, so nothing is selected
    u = ps.Catalog(str(tmp_path)).create_table("db.u", schema, options={"bucket": "4", "bucket-key": "x"})
    u.write_arrow(pa.table({"a": ["z", "y"] * 20, "b": pa.array(range(40), pa.int32()), "x": [0.0, -0.0] * 20},
                           schema=schema))
    assert u.to_arrow(filter=[("x", "=", 0.0)]).num_rows == 40
    assert pinned_keys(parse_filter([("x", "=", 0.0)], u.arrow_schema()), u.schema.fields_of(["x"])) is None


def test_literals_no_key_equals_select_no_bucket(tmp_path):
    t = _table(tmp_path, pa.int64())
    for flt in ([("k", "=", 2**40 + 0.5)], [("k", "in", [])], [("k", "=", None)], [("k", "in", [None, 1.5])],
                [("k", "=", 2**40), ("k", "in", [2**40 + 7])]):  # an empty intersection
        assert t.to_arrow(filter=flt).num_rows == 0, flt
        assert _planned_buckets(t, flt) == set(), flt
    assert t.to_arrow(filter=[("k", "=", 2**40 + 7), ("k", "in", [2**40 + 7, 3])]).num_rows == 1


def test_buckets_of_partitions_at_other_counts(tmp_path):
    """After the bucket option changes, partitions not yet rescaled keep their count: each is
    selected by the layout its files record."""
    schema = pa.schema([pa.field("p", pa.string(), nullable=False), pa.field("k", pa.int64(), nullable=False),
                        pa.field("v", pa.int64())])
    t = ps.Catalog(str(tmp_path)).create_table("db.t", schema, primary_keys=["p", "k"], partition_keys=["p"],
                                              options={"bucket": "3"})
    t.write_arrow(pa.table({"p": ["old"] * 300 + ["moved"] * 300, "k": list(range(300)) * 2, "v": [1] * 600},
                           schema=schema))
    t.rescale(bucket=7, partitions=[("p", "=", "moved")])
    t.write_arrow(pa.table({"p": ["new"] * 300, "k": range(300), "v": [2] * 300}, schema=schema))
    totals = {(s.partition_values[0], s.total_buckets) for s in t.plan(t.latest_snapshot())}
    assert totals == {("old", 3), ("moved", 7), ("new", 7)}
    for k in (0, 11, 299):
        rows = t.to_arrow(filter=[("k", "=", k)])
        assert sorted((r["p"], r["v"]) for r in rows.to_pylist()) == [("moved", 1), ("new", 2), ("old", 1)]
        assert len(t.plan(t.latest_snapshot(), filter=[("k", "=", k)])) == 3


def test_a_bucket_key_whose_type_changed_selects_nothing(tmp_path):
    """An append table's bucket key may widen in Java (we refuse it); files written before were
    hashed as INT, so a BIGINT literal's bucket says nothing about them: every bucket is read."""
    from dataclasses import replace
    from paimon_streaming.types import parse_atomic
    schema = pa.schema([pa.field("k", pa.int32()), pa.field("v", pa.string())])
    t = ps.Catalog(str(tmp_path)).create_table("db.t", schema, options={"bucket": "4", "bucket-key": "k"})
    t.write_arrow(pa.table({"k": pa.array(range(100), pa.int32()), "v": ["old"] * 100}))
    widened = replace(t.schema, id=1, fields=(replace(t.schema.fields[0], type=parse_atomic("BIGINT")),
                                               *t.schema.fields[1:]))
    assert t.schema_manager.try_commit(widened)  # as Java's SchemaManager commits the change
    t.refresh()
    t.write_arrow(pa.table({"k": pa.array(range(100), pa.int64()), "v": ["new"] * 100}))
    for k in (0, 5, 99):
        assert sorted(r["v"] for r in t.to_arrow(filter=[("k", "=", k)]).to_pylist()) == ["new", "old"]
    assert len(_planned_buckets(t, [("k", "=", 5)])) == 4


@pytest.mark.parametrize("function,key_type,keys", [
    ("default", "STRING", [f"key{i}" for i in range(120)]),
    ("mod", "BIGINT", [-(2**40) + 13 * i for i in range(120)]),
    ("hive", "DECIMAL(10, 2)", [Decimal(i) / 4 - 5 for i in range(120)]),
    ("hive", "DATE", [dt.date(1969, 12, 1) + dt.timedelta(days=i) for i in range(120)]),
])
def test_lookups_in_a_table_java_wrote(tmp_path, function, key_type, keys):
    """Java's writers placed the keys; each lookup plans one bucket and finds its row."""
    java = get_oracle()
    path = str(tmp_path / "db.db" / "t")
    with java.batch() as b:
        b.create_table(path, [{"name": "k", "type": f"{key_type} NOT NULL"}, {"name": "v", "type": "INT"}],
                       primary_keys=["k"], options={"bucket": "6", "bucket-function.type": function})
        b.write(path, [{"k": k, "v": i} for i, k in enumerate(keys)])
    t = ps.Table.open(path)
    assert len(_planned_buckets(t, None)) == 6
    for i in (0, 7, 64, 119):
        assert t.to_arrow(filter=[("k", "=", keys[i])]).to_pylist() == [{"k": keys[i], "v": i}]
        assert len(_planned_buckets(t, [("k", "=", keys[i])])) == 1
    assert pc.sum(t.to_arrow(filter=[("k", "in", keys[10:20])])["v"]).as_py() == sum(range(10, 20))
    assert len(TableScan(t.file_io, t.path, t.schema).plan(t.latest_snapshot(), parse_filter(
        [("k", "in", keys[10:12])], t.arrow_schema()))) <= 2
