"""Bitmap file indexes (`file-index.bitmap.columns`): written as Java's writers write them, in
both versions (Java 1.4.2 filters rows by our bitmaps, so a wrong row number loses a row),
equal to Java's own for the same rows, read to skip files of filtered reads, verified by
`check`, and refused where Java refuses."""
from __future__ import annotations

import random

import numpy as np
import pyarrow as pa
import pyroaring
import pytest

import paimon_streaming as ps
from paimon_streaming import bitmap_index, roaring
from paimon_streaming.bitmap_index import BitmapIndex
from paimon_streaming.check import check_table
from paimon_streaming.errors import InvalidOptionError
from paimon_streaming.types import from_arrow

try:
    from java_oracle import get_oracle
    from test_file_index import (COLUMNS, _fields, _index_files, _live, _value, assert_equalities_read_exactly,
                                 assert_java_filters_rows_exactly, javas_files_with_indexes, written_by_java)
except ImportError:  # pragma: no cover
    from tests.java_oracle import get_oracle
    from tests.test_file_index import (COLUMNS, _fields, _index_files, _live, _value,
                                       assert_equalities_read_exactly, assert_java_filters_rows_exactly,
                                       javas_files_with_indexes, written_by_java)

# Every type family Java's bitmap index takes (not binary; booleans too).
BITMAP_COLUMNS = [(c, t) for c, t in COLUMNS if c not in ("c_bin",)] + [("c_bool", "BOOLEAN")]
TABLE_OPTIONS = {"bucket": "2", "deletion-vectors.enabled": "true"}


def _bitmap_options(threshold: str) -> dict[str, str]:
    """Both versions, and version 2 with blocks small enough that dictionaries span several."""
    options = {"file-index.bitmap.columns": ",".join(c for c, _ in BITMAP_COLUMNS),
               "file-index.in-manifest-threshold": threshold}
    for i, (column, _) in enumerate(BITMAP_COLUMNS):
        if i % 3 == 0:
            options[f"file-index.bitmap.{column}.version"] = "1"
        elif i % 3 == 1:
            options[f"file-index.bitmap.{column}.index-block-size"] = "128 b"
    return options


def _rows(seed: int, ids: range) -> list[dict]:
    """Values repeating on many rows (bitmaps), on one row (offsets -1 - row) and nulls."""
    rng = random.Random(seed)
    pools = {c: [_value(c, rng) for _ in range(6)] for c, _ in BITMAP_COLUMNS if c != "c_bool"}

    def value(column: str):
        if rng.random() < 0.1:
            return None
        if column == "c_bool":
            return rng.random() < 0.5
        return rng.choice(pools[column]) if rng.random() < 0.6 else _value(column, rng)
    return [{"id": i, **{c: value(c) for c, _ in BITMAP_COLUMNS}} for i in ids]


def _batches(seed: int) -> list[list[dict]]:
    return [_rows(seed + n, ids) for n, ids in enumerate((range(0, 200), range(200, 400), range(100, 250)))]


@pytest.fixture(scope="module")
def java():
    return get_oracle()


@pytest.mark.parametrize("threshold", ["500 b", "1 mb"])
def test_java_filters_rows_by_our_bitmaps_exactly(java, tmp_path, threshold):
    """Java 1.4.2 reads our table with a pushed-down equality and keeps the rows our bitmaps
    name: for every value asked, exactly the rows holding it (a wrong row number or a value
    missing from a dictionary loses rows; a value in the wrong block of version 2's sorted
    dictionary is not found); absent values read nothing. Indexes in `.index` files and
    embedded in the manifest entries."""
    path = str(tmp_path / "db.db" / "ours")
    java.create_table(path, _fields(BITMAP_COLUMNS), primary_keys=["id"],
                      options={**TABLE_OPTIONS, **_bitmap_options(threshold)})
    table = ps.Table.open(path)
    batches = _batches(1)
    for rows in batches:
        table.write_arrow(pa.Table.from_pylist(rows, table.arrow_schema()))
    assert bool(_index_files(path)) == (threshold == "500 b")
    live = _live(batches)
    rng = random.Random(2)
    asks = [(c, v) for c, _ in BITMAP_COLUMNS
            for v in {row[c] for row in rng.sample(live, 8)} | {row[c] for row in live[:3]} if v is not None]
    absent = [(c, v) for c, _ in BITMAP_COLUMNS if c not in ("c_tiny", "c_bool")
              for v in [_value(c, rng)] if all(row[c] != v for row in live)]
    assert_java_filters_rows_exactly(java, table, live, asks, absent)
    assert check_table(table).ok


def test_our_bitmaps_of_javas_files_are_javas(java, tmp_path):
    """For every file Java writes (and compacts), our index of its rows holds the same rows for
    the same values as Java's, and version 2's dictionary splits into the same blocks at the same
    values (so both sort values alike: strings by UTF-8 bytes, floats by Float.compare). Our
    filtered reads of Java's table return exactly the matching rows and skip files for absent
    values; `check` decodes every bitmap."""
    path = str(tmp_path / "db.db" / "java")
    options = _bitmap_options("1 b")
    batches = _batches(3)
    table = written_by_java(java, path, _fields(BITMAP_COLUMNS), {**TABLE_OPTIONS, **options}, batches)
    types = {f.name: f.type for f in table.schema.fields}
    compared = 0
    for data_path, rows, javas in javas_files_with_indexes(path):
        for column, _ in BITMAP_COLUMNS:
            java_index = BitmapIndex(javas[column]["bitmap"], types[column])
            ours = BitmapIndex(bitmap_index.build(rows.column(column), types[column], java_index.version,
                                                  128 if f"file-index.bitmap.{column}.index-block-size" in options
                                                  else bitmap_index.DEFAULT_BLOCK_SIZE), types[column])
            assert ours.bitmaps() == java_index.bitmaps(), (data_path, column)
            if java_index.version == 2:
                assert [k for k, _ in ours.block_keys] == [k for k, _ in java_index.block_keys], column
            compared += 1
    assert compared >= 2 * len(BITMAP_COLUMNS)
    assert_equalities_read_exactly(table, _live(batches), BITMAP_COLUMNS, seed=4)
    snapshot = table.latest_snapshot()
    planned = lambda flt: sum(len(s.files) for s in table.plan(snapshot, flt))  # noqa: E731
    rng = random.Random(5)
    absent = [c for c, _ in BITMAP_COLUMNS if c not in ("c_tiny", "c_bool")
              if planned([(c, "=", _value(c, rng))]) < planned(None)]
    assert len(absent) >= len(BITMAP_COLUMNS) - 4, absent
    assert check_table(table).ok


def test_roaring_bitmaps_are_the_portable_format():
    """Our numpy-built bitmaps read back in CRoaring (pyroaring): array and bitset containers,
    several 65,536-row chunks, single rows, empty ones, many bitmaps at once; and the length of
    any portable bitmap (CRoaring's, with run containers too) is found inside a larger buffer."""
    rng = np.random.default_rng(5)
    for _ in range(40):
        count = int(rng.integers(1, 12))
        sets = [np.unique(rng.integers(0, rng.choice([50, 70_000, 400_000]), rng.integers(0, 20_000)))
                for _ in range(count)]
        rows = np.concatenate(sets).astype(np.uint32)
        owner = np.repeat(np.arange(count), [len(s) for s in sets])
        data, sizes = roaring.roaring_many(rows, owner, count)
        assert sizes.sum() == len(data)
        at = 0
        for want in sets:
            bitmap, at = roaring.roaring_at(data, at)
            assert list(bitmap) == want.tolist()
        assert at == len(data)
        present = np.unique(np.concatenate(sets)).astype(np.uint32)
        masks = np.array([np.isin(present, want) for want in sets]).reshape(count, len(present))
        data, sizes = roaring.roaring_of_masks(present, masks)
        assert [list(pyroaring.BitMap.deserialize(data[s:s + n])) for s, n in zip(np.cumsum(sizes) - sizes, sizes)] \
            == [want.tolist() for want in sets]
    for n in (5_000, 70_000, 150_000):  # every row marked or not: bitset containers, one chunk and several
        rows = np.arange(n, dtype=np.uint32)
        masks = rng.random((3, n)) < [[0.9], [0.5], [0.01]]
        data, sizes = roaring.roaring_of_masks(rows, masks)
        assert [list(pyroaring.BitMap.deserialize(data[s:s + m])) for s, m in zip(np.cumsum(sizes) - sizes, sizes)] \
            == [np.flatnonzero(mask).tolist() for mask in masks]
    runs = pyroaring.BitMap(list(range(100, 90_000)) + [5, 200_000])
    runs.run_optimize()
    data = runs.serialize() + b"tail"
    assert roaring.roaring_at(data, 0) == (runs, len(data) - 4)


@pytest.mark.parametrize("version", [1, 2])
def test_bitmaps_cover_every_row_once_and_sort_as_java(version):
    """Round trips of every supported type: each value's rows, the null rows, Java's order of the
    version 2 dictionary (-0.0 before 0.0, NaN last, strings by unsigned UTF-8 bytes)."""
    values = {
        "FLOAT": pa.array([0.0, -0.0, float("nan"), 1.5, None, float("-inf"), 1.5, -2.5], pa.float32()),
        "DOUBLE": pa.array([float("nan"), -0.0, 0.0, 2.5, 2.5, None, -1e300, float("inf")]),
        "STRING": pa.array(["b", "", "é", "a", "é", None, "ab", "\U0001F600"]),
        "INT": pa.array([2**31 - 1, -2**31, 0, 0, None, 7, -1, 7], pa.int32()),
        "BOOLEAN": pa.array([True, False, None, True, True, False, None, None]),
    }
    for name, array in values.items():
        t = from_arrow(array.type)
        index = BitmapIndex(bitmap_index.build(array, t, version, 64), t)
        index.verify()
        got = {k: sorted(v) for k, v in index.bitmaps().items()}
        assert got.pop(None) == [i for i, v in enumerate(array.to_pylist()) if v is None]
        assert sum(len(rows) for rows in got.values()) == len(array) - array.null_count
        order = [k for k, _, _ in index.entries()]
        if name == "STRING":
            assert order == sorted(order) and order[0] == b""
        elif name in ("FLOAT", "DOUBLE"):
            floats = np.array(order, ">i4" if name == "FLOAT" else ">i8").view(">f4" if name == "FLOAT" else ">f8")
            assert np.isnan(floats[-1]) and np.signbit(floats[list(floats).index(0.0)])  # -0.0 first of the zeros
        else:
            assert order == sorted(order)


def test_a_value_larger_than_an_index_block_fails_the_batch(tmp_path):
    """Java's writer fails on a dictionary value that does not fit version 2's index block; ours
    refuses the batch naming the option, and commits nothing."""
    table = ps.Catalog(str(tmp_path)).create_table(
        "db.t", pa.schema([("id", pa.int64(), False), ("s", pa.string())]), primary_keys=["id"],
        options={"bucket": "1", "deletion-vectors.enabled": "true", "file-index.bitmap.columns": "s",
                 "file-index.bitmap.s.index-block-size": "32 b"})
    table.write_arrow(pa.table({"id": [1], "s": ["short"]}))
    before = table.latest_snapshot().id
    with pytest.raises(InvalidOptionError, match="file-index.bitmap.s.index-block-size"):
        table.write_arrow(pa.table({"id": [2], "s": ["x" * 40]}))
    assert table.latest_snapshot().id == before
    assert table.to_arrow().column("s").to_pylist() == ["short"]


@pytest.mark.parametrize("options, message", [
    ({"file-index.bitmap.columns": "b"}, "'b' of type BYTES"),
    ({"file-index.bitmap.columns": "price"}, "'price' of type DECIMAL"),
    ({"file-index.bitmap.columns": "s", "file-index.bitmap.s.version": "3"}, "versions 1 and 2"),
    ({"file-index.bitmap.columns": "s", "file-index.bitmap.s.index-block-size": "1 b"}, "at least 16 bytes"),
])
def test_bitmap_options_java_rejects_are_refused_at_create(tmp_path, options, message):
    schema = pa.schema([("id", pa.int64(), False), ("s", pa.string()), ("b", pa.binary()),
                        ("price", pa.decimal128(10, 2))])
    with pytest.raises(InvalidOptionError, match=message):
        ps.Catalog(str(tmp_path)).create_table("db.t", schema, primary_keys=["id"], options=options)
