"""Range-bitmap file indexes (`file-index.range-bitmap.columns`): written as Java's writers write
them (Java 1.4.2 filters rows by our dictionaries and codes for equalities and ranges, so a value
out of order or a wrong code loses or adds rows), equal to Java's own for the same rows, read to
skip files of filtered reads, verified by `check`, and refused where Java refuses."""
from __future__ import annotations

import datetime as dt
import decimal
import random

import numpy as np
import pyarrow as pa
import pytest

import paimon_streaming as ps
from paimon_streaming import file_index, range_bitmap_index
from paimon_streaming.check import check_table
from paimon_streaming.errors import InvalidOptionError
from paimon_streaming.range_bitmap_index import RangeBitmapIndex
from paimon_streaming.types import from_arrow

try:
    from java_oracle import get_oracle
    from test_file_index import (COLUMNS as EVERY_TYPE, _fields, _live, _value, assert_equalities_read_exactly,
                                 javas_files_with_indexes, written_by_java)
except ImportError:  # pragma: no cover
    from tests.java_oracle import get_oracle
    from tests.test_file_index import (COLUMNS as EVERY_TYPE, _fields, _live, _value, assert_equalities_read_exactly,
                                       javas_files_with_indexes, written_by_java)

# Every type family Java's range-bitmap index takes (not binary, TIMESTAMP(9) or wide DECIMALs),
# and a column that is always null (no values: Java writes 64 empty slices).
COLUMNS = [(c, t) for c, t in EVERY_TYPE if c not in ("c_bin", "c_ts9")] + [("c_bool", "BOOLEAN"),
                                                                             ("c_dec", "DECIMAL(12, 3)")]
ALL = COLUMNS + [("c_null", "INT")]
TABLE_OPTIONS = {"bucket": "2", "deletion-vectors.enabled": "true", "file-index.in-manifest-threshold": "1 b",
                 "file-index.range-bitmap.columns": ",".join(c for c, _ in ALL),
                 # chunks of a few values, so dictionaries span several (the rest: Java's defaults)
                 "file-index.range-bitmap.c_str.chunk-size": "64 b",
                 "file-index.range-bitmap.c_int.chunk-size": "16 b",
                 "file-index.range-bitmap.c_double.chunk-size": "40 b",
                 "file-index.range-bitmap.c_small.chunk-size": "8 b"}
CHUNK_SIZES = {"c_str": 64, "c_int": 16, "c_double": 40, "c_small": 8}


def _values(column: str, rng: random.Random):
    if column == "c_null":
        return None
    if column == "c_bool":
        return rng.random() < 0.5
    if column == "c_dec":
        return decimal.Decimal(rng.randrange(-10**9, 10**9)).scaleb(-3)
    return _value(column, rng)


def _rows(seed: int, ids: range) -> list[dict]:
    """Values repeating on several rows and on one, and nulls."""
    rng = random.Random(seed)
    pools = {c: [_values(c, rng) for _ in range(8)] for c, _ in ALL}
    return [{"id": i, **{c: None if rng.random() < 0.1 else rng.choice(pools[c]) if rng.random() < 0.5
                         else _values(c, rng) for c, _ in ALL}} for i in ids]


def _batches(seed: int) -> list[list[dict]]:
    return [_rows(seed + n, ids) for n, ids in enumerate((range(0, 200), range(200, 400), range(100, 250)))]


@pytest.fixture(scope="module")
def java():
    return get_oracle()


OPS = {"=": lambda a, b: a == b, "<": lambda a, b: a < b, "<=": lambda a, b: a <= b, ">": lambda a, b: a > b,
       ">=": lambda a, b: a >= b}


def test_java_filters_rows_by_our_range_bitmaps_exactly(java, tmp_path):
    """Java 1.4.2 reads our table with a pushed-down `=`, `<`, `<=`, `>` or `>=` and keeps the
    rows our codes name: for every value asked, exactly the rows that match (a dictionary out of
    Java's order, a chunk split elsewhere or a wrong bit of a code loses or adds rows); absent
    values read nothing. Our filtered reads agree; `check` verifies every index."""
    path = str(tmp_path / "db.db" / "ours")
    java.create_table(path, _fields(ALL), primary_keys=["id"], options=TABLE_OPTIONS)
    table = ps.Table.open(path)
    batches = _batches(1)
    for rows in batches:
        table.write_arrow(pa.Table.from_pylist(rows, table.arrow_schema()))
    live = _live(batches)
    rng = random.Random(2)
    asks = []
    for column, _ in COLUMNS:
        values = sorted({row[column] for row in rng.sample(live, 6) if row[column] is not None})
        asks += [(column, "=", v) for v in values]
        asks += [(column, op, values[len(values) // 2]) for op in ("<", "<=", ">", ">=")]
    absent = [(column, "=", v) for column, _ in COLUMNS if column not in ("c_tiny", "c_bool")
              for v in [_values(column, rng)] if all(row[column] != v for row in live)]
    with java.batch() as b:
        reads = [b.read(table.path, where=ask) for ask in asks + absent]
    for (column, op, value), read in zip(asks, reads):
        want = sorted(r["id"] for r in live if r[column] is not None and OPS[op](r[column], value))
        assert sorted(r["id"] for r in read.result) == want, (column, op, value)
        assert sorted(table.to_arrow(filter=[(column, op, value)]).column("id").to_pylist()) == want
    assert [len(read.result) for read in reads[len(asks):]] == [0] * len(absent)
    assert check_table(table).ok


def test_our_range_bitmaps_of_javas_files_are_javas(java, tmp_path):
    """For every file Java writes (and compacts), our index of its rows is Java's: the same
    dictionary (so both sort values alike: strings by UTF-8 bytes, floats by Float.compare),
    split into the same chunks, and the same code for every row (none for an all-null column,
    with Java's 64 empty slices). Our filtered reads of Java's table return exactly the matching
    rows and skip files for absent values; `check` verifies every index."""
    path = str(tmp_path / "db.db" / "java")
    batches = _batches(3)
    table = written_by_java(java, path, _fields(ALL), TABLE_OPTIONS, batches)
    types = {f.name: f.type for f in table.schema.fields}
    files = list(javas_files_with_indexes(path))
    for data_path, rows, javas in files:
        for column, _ in ALL:
            t = types[column]
            theirs = RangeBitmapIndex(javas[column]["range-bitmap"], t)
            ours = RangeBitmapIndex(range_bitmap_index.build(rows.column(column), t, CHUNK_SIZES.get(column)), t)
            assert (ours.rows, ours.cardinality, ours.min, ours.max) == \
                (theirs.rows, theirs.cardinality, theirs.min, theirs.max), (data_path, column)
            assert np.array_equal(np.asarray(ours.keys()), np.asarray(theirs.keys())), (data_path, column)
            ours_heads, theirs_heads = ours.chunk_heads(), theirs.chunk_heads()
            assert all(np.array_equal(np.asarray(a), np.asarray(b)) for a, b in zip(ours_heads, theirs_heads)), column
            assert all(np.array_equal(a, b) for a, b in zip(ours.row_codes(), theirs.row_codes())), column
            theirs.verify()
            if column == "c_null":
                assert theirs.cardinality == 0 and javas[column]["range-bitmap"] == \
                    range_bitmap_index.build(rows.column(column), t)  # byte for byte: 64 empty slices
    assert len(files) >= 2
    live = _live(batches)
    assert_equalities_read_exactly(table, live, COLUMNS, seed=4)
    snapshot = table.latest_snapshot()
    planned = lambda flt: sum(len(s.files) for s in table.plan(snapshot, flt))  # noqa: E731
    # values inside every file's min/max that no row holds: only the dictionaries rule files out
    inside = [v for v in range(-10**6, 10**6, 7_919) if all(r["c_int"] != v for r in live)]
    assert planned([("c_int", "in", inside)]) < planned(None)
    assert check_table(table).ok


def test_dictionaries_sort_as_java_and_codes_cover_every_value():
    """Round trips of every type family at several chunk sizes: the dictionary in Java's order
    (-0.0 before 0.0, NaN last; strings by unsigned UTF-8 bytes; false before true), each row's
    code that of its value, null rows without one; lookups find exactly the values present."""
    rng = np.random.default_rng(3)
    arrays = {
        "FLOAT": pa.array([0.0, -0.0, float("nan"), 1.5, None, float("-inf"), 1.5, -2.5], pa.float32()),
        "DOUBLE": pa.array([float("nan"), -0.0, 0.0, 2.5, 2.5, None, -1e300, float("inf")]),
        "STRING": pa.array(["b", "", "é", "a", "é", None, "ab", "\U0001F600", "x" * 300]),
        "INT": pa.array(rng.integers(-2**31, 2**31, 500), pa.int32()),
        "BIGINT": pa.array([-2**63, 2**63 - 1, 0, None, 5], pa.int64()),
        "BOOLEAN": pa.array([True, False, None, True]),
        "TINYINT": pa.array([-128, 127, 0, 0, None], pa.int8()),
        "DECIMAL(5, 2)": pa.array([decimal.Decimal("-1.5"), None, decimal.Decimal("999.99")], pa.decimal128(5, 2)),
    }
    for name, array in arrays.items():
        t = from_arrow(array.type)
        values = array.to_pylist()
        for chunk_size in (None, 0, 9, 1 << 20):
            index = RangeBitmapIndex(range_bitmap_index.build(array, t, chunk_size), t)
            index.verify()
            keys = index.keys()
            rows, codes = index.row_codes()
            assert rows.tolist() == [i for i, v in enumerate(values) if v is not None]
            decoded = _decoded(keys, name)
            same = [decoded[c] == v or (v != v and decoded[c] != decoded[c]) for c, v in
                    zip(codes.tolist(), [values[r] for r in rows.tolist()])]
            assert all(same), (name, chunk_size)
            if name in ("FLOAT", "DOUBLE"):
                assert np.isnan(decoded[-1]) and np.signbit(decoded[decoded.index(0.0)])
            elif name == "STRING":
                assert keys == sorted(keys)
            else:
                assert decoded == sorted(decoded)
            present = [v for v in values if v is not None and v == v]
            literals = file_index._literals(present[:1], file_index.DataField(0, "c", t), "range-bitmap")
            if literals is not None:
                assert index.may_contain(literals)


def _decoded(keys, name: str) -> list:
    if name == "STRING":
        return [k.decode() for k in keys]
    if name in ("FLOAT", "DOUBLE"):
        bits = np.asarray(keys).astype(">i4" if name == "FLOAT" else ">i8")
        return bits.view(">f4" if name == "FLOAT" else ">f8").tolist()
    if name == "BOOLEAN":
        return [bool(k) for k in keys]
    if name.startswith("DECIMAL"):
        return [decimal.Decimal(int(k)).scaleb(-2) for k in keys]
    return [int(k) for k in keys]


@pytest.mark.parametrize("options, message", [
    ({"file-index.range-bitmap.columns": "b"}, "'b' of type BYTES"),
    ({"file-index.range-bitmap.columns": "wide"}, "'wide' of type DECIMAL"),
    ({"file-index.range-bitmap.columns": "ts"}, "'ts' of type TIMESTAMP"),
    ({"file-index.range-bitmap.columns": "s", "file-index.range-bitmap.s.chunk-size": "big"}, "size such as"),
])
def test_range_bitmap_options_java_rejects_are_refused_at_create(tmp_path, options, message):
    schema = pa.schema([("id", pa.int64(), False), ("s", pa.string()), ("b", pa.binary()),
                        ("wide", pa.decimal128(20, 2)), ("ts", pa.timestamp("ns"))])
    with pytest.raises(InvalidOptionError, match=message):
        ps.Catalog(str(tmp_path)).create_table("db.t", schema, primary_keys=["id"], options=options)


def test_range_filters_skip_files_by_range_bitmaps_without_statistics(tmp_path):
    """A table without statistics (`metadata.stats-mode` = none) prunes range filters by its
    range bitmaps' smallest and largest values, as Java's readers do: for every value of each
    column and each of <, <=, >, >=, exactly the rows an unfiltered read holds, reading fewer
    files; a file whose column is all null matches no range and no value; floats are left to
    statistics for ranges."""
    schema = pa.schema([("id", pa.int64(), False), ("n", pa.int32()), ("s", pa.string()), ("d", pa.date32()),
                        ("ts", pa.timestamp("ms")), ("ltz", pa.timestamp("us", "UTC")), ("dec", pa.decimal128(10, 2)),
                        ("t", pa.time32("ms")), ("f", pa.float64())])
    columns = [name for name in schema.names if name != "id"]
    table = ps.Catalog(str(tmp_path)).create_table("db.t", schema, options={
        "bucket": "1", "bucket-key": "id", "write-only": "true", "metadata.stats-mode": "none",
        "file-index.range-bitmap.columns": ",".join(columns)})
    rng = random.Random(6)
    start = dt.datetime(2020, 1, 1)
    for b in range(5):  # one file each, of values in ranges that grow from file to file
        rows = [{"id": b * 100 + i, "n": b * 10 + rng.randrange(10), "s": f"s{b}{rng.randrange(10)}é",
                 "d": start.date() + dt.timedelta(days=b * 10 + rng.randrange(10)),
                 "ts": start + dt.timedelta(hours=b * 10 + rng.randrange(10)),
                 "ltz": (start + dt.timedelta(minutes=b * 10 + rng.randrange(10))).replace(tzinfo=dt.timezone.utc),
                 "dec": decimal.Decimal(b * 1000 + rng.randrange(1000)).scaleb(-2),
                 "t": (start + dt.timedelta(minutes=b * 100 + rng.randrange(100))).time(), "f": b + rng.random()}
                for i in range(20)]
        if b == 4:
            rows = [{**row, **{c: None for c in columns}} for row in rows]  # all null
        table.write_arrow(pa.Table.from_pylist(rows, schema))
    everything = table.to_arrow().to_pylist()
    snapshot = table.latest_snapshot()
    planned = lambda flt: sum(len(s.files) for s in table.plan(snapshot, flt))  # noqa: E731
    assert planned(None) == 5
    for column in columns:
        values = sorted({r[column] for r in everything if r[column] is not None})
        for value in values[::7] + [values[0], values[-1]]:
            for op, holds in OPS.items():
                got = sorted(r["id"] for r in table.to_arrow(filter=[(column, op, value)]).to_pylist())
                want = sorted(r["id"] for r in everything if r[column] is not None and holds(r[column], value))
                assert got == want, (column, op, value)
        pruned = planned([(column, "<", values[len(values) // 2])])
        assert pruned == 5 if column == "f" else pruned < 4, column
        assert planned([(column, "=", values[-1])]) == 1, column  # its dictionary rules out the all-null file too
