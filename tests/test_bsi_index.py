"""Bit-sliced file indexes (`file-index.bsi.columns`): written as Java's writers write them
(Java 1.4.2 filters rows by our slices, so a wrong bit loses or adds rows), equal to Java's own
for the same rows, read to skip files of filtered reads, and refused where Java refuses."""
from __future__ import annotations

import datetime as dt
import decimal
import random

import pyarrow as pa
import pytest

import paimon_streaming as ps
from paimon_streaming import bsi_index
from paimon_streaming.bsi_index import BitSlicedIndex
from paimon_streaming.check import check_table
from paimon_streaming.errors import InvalidOptionError

try:
    from java_oracle import get_oracle
    from test_file_index import (_live, assert_equalities_read_exactly, assert_java_filters_rows_exactly,
                                 javas_files_with_indexes, written_by_java)
except ImportError:  # pragma: no cover
    from tests.java_oracle import get_oracle
    from tests.test_file_index import (_live, assert_equalities_read_exactly, assert_java_filters_rows_exactly,
                                       javas_files_with_indexes, written_by_java)

# every type family Java's bit-sliced index takes
COLUMNS = [("c_tiny", "TINYINT"), ("c_small", "SMALLINT"), ("c_int", "INT"), ("c_big", "BIGINT"),
           ("c_dec", "DECIMAL(12, 3)"), ("c_date", "DATE"), ("c_time", "TIME(3)"), ("c_ts3", "TIMESTAMP(3)"),
           ("c_ts6", "TIMESTAMP(6)"), ("c_ltz", "TIMESTAMP(6) WITH LOCAL TIME ZONE")]
OPTIONS = {"bucket": "2", "deletion-vectors.enabled": "true", "file-index.in-manifest-threshold": "1 b",
           "file-index.bsi.columns": ",".join(c for c, _ in COLUMNS)}
EPOCH = dt.datetime(1970, 1, 1)


def _value(column: str, rng: random.Random):
    """Values of both signs, small ones repeating and large ones (many slices)."""
    n = rng.choice([rng.randrange(-20, 20), rng.randrange(-10**9, 10**9)])
    if column == "c_tiny":
        return rng.randrange(-128, 128)
    if column == "c_small":
        return rng.randrange(-2**15, 2**15)
    if column == "c_int":
        return n
    if column == "c_big":
        return n * rng.choice([1, 10**9 + 7])
    if column == "c_dec":
        return decimal.Decimal(n).scaleb(-3)
    if column == "c_date":
        return dt.date(1970, 1, 1) + dt.timedelta(days=n % 100_000 - 50_000)
    if column == "c_time":
        return (dt.datetime(2000, 1, 1) + dt.timedelta(milliseconds=abs(n) % 86_400_000)).time()
    at = EPOCH + dt.timedelta(microseconds=n * 7_919)
    if column == "c_ts3":
        return at.replace(microsecond=at.microsecond // 1000 * 1000)
    return at.replace(tzinfo=dt.timezone.utc) if column == "c_ltz" else at


def _rows(seed: int, ids: range) -> list[dict]:
    rng = random.Random(seed)
    return [{"id": i, **{c: None if rng.random() < 0.1 else _value(c, rng) for c, _ in COLUMNS}} for i in ids]


def _fields() -> list[dict]:
    return [{"name": "id", "type": "INT NOT NULL"}] + [{"name": c, "type": t} for c, t in COLUMNS]


def _batches() -> list[list[dict]]:
    return [_rows(n, ids) for n, ids in enumerate((range(0, 200), range(200, 400), range(100, 250)))]


@pytest.fixture(scope="module")
def java():
    return get_oracle()


def test_java_filters_rows_by_our_slices_exactly(java, tmp_path):
    """Java 1.4.2 reads our table with a pushed-down equality and keeps exactly the rows our
    slices name for every value asked (a wrong bit in any slice loses the row or keeps
    another); absent values read nothing; `check` verifies every index."""
    path = str(tmp_path / "db.db" / "ours")
    java.create_table(path, _fields(), primary_keys=["id"], options=OPTIONS)
    table = ps.Table.open(path)
    batches = _batches()
    for rows in batches:
        table.write_arrow(pa.Table.from_pylist(rows, table.arrow_schema()))
    live = _live(batches)
    rng = random.Random(2)
    asks = [(c, v) for c, _ in COLUMNS for v in {row[c] for row in rng.sample(live, 8)} if v is not None]
    absent = [(c, v) for c, _ in COLUMNS if c != "c_tiny" for v in [_value(c, rng)] if all(r[c] != v for r in live)]
    assert_java_filters_rows_exactly(java, table, live, asks, absent)
    assert check_table(table).ok


def test_our_slices_of_javas_files_are_javas(java, tmp_path):
    """For every file Java writes (and compacts), our index of its rows has Java's parts: the
    same maximum, rows and slices; our filtered reads of Java's table return exactly the rows
    that match and skip files for absent values."""
    path = str(tmp_path / "db.db" / "java")
    batches = _batches()
    table = written_by_java(java, path, _fields(), OPTIONS, batches)
    types = {f.name: f.type for f in table.schema.fields}
    files = list(javas_files_with_indexes(path))
    for data_path, rows, javas in files:
        for column, _ in COLUMNS:
            ours = BitSlicedIndex(bsi_index.build(rows.column(column), types[column]), types[column])
            theirs = BitSlicedIndex(javas[column]["bsi"], types[column])
            assert (ours.rows, ours.parts) == (theirs.rows, theirs.parts), (data_path, column)
    assert len(files) >= 2
    live = _live(batches)
    assert_equalities_read_exactly(table, live, COLUMNS, seed=4)
    snapshot = table.latest_snapshot()
    planned = lambda flt: sum(len(s.files) for s in table.plan(snapshot, flt))  # noqa: E731
    # small values fall inside every file's min/max: only the slices rule the files out
    absent = [v for v in range(-20, 20) if all(r["c_int"] != v for r in live)]
    assert absent and planned([("c_int", "in", absent)]) < planned(None)


def test_a_file_holding_the_smallest_long_gets_no_bit_sliced_index(tmp_path):
    """Java's writer cannot slice -2^63 (its absolute value overflows): a file holding it is
    written without that index (read whole, by Java too), the other files keep theirs."""
    table = ps.Catalog(str(tmp_path)).create_table(
        "db.t", pa.schema([("id", pa.int64(), False), ("n", pa.int64())]), primary_keys=["id"],
        options={"bucket": "1", "file-index.bsi.columns": "n", "write-only": "true"})
    table.write_arrow(pa.table({"id": [1, 2], "n": [-2**63, 5]}))
    table.write_arrow(pa.table({"id": [3, 4], "n": [6, 7]}))
    indexed = [f.embedded_index is not None or bool(f.extra_files)
               for s in table.plan(table.latest_snapshot()) for f in sorted(s.files, key=lambda f: f.min_sequence_number)]
    assert indexed == [False, True]
    assert table.to_arrow(filter=[("n", "=", -2**63)]).column("id").to_pylist() == [1]
    assert table.to_arrow(filter=[("n", "in", [5, 7])]).column("id").to_pylist() == [2, 4]


@pytest.mark.parametrize("options, message", [
    ({"file-index.bsi.columns": "s"}, "'s' of type STRING"),
    ({"file-index.bsi.columns": "wide"}, "'wide' of type DECIMAL"),
    ({"file-index.bsi.columns": "f"}, "'f' of type DOUBLE"),
])
def test_bsi_options_java_rejects_are_refused_at_create(tmp_path, options, message):
    schema = pa.schema([("id", pa.int64(), False), ("s", pa.string()), ("wide", pa.decimal128(20, 2)),
                        ("f", pa.float64())])
    with pytest.raises(InvalidOptionError, match=message):
        ps.Catalog(str(tmp_path)).create_table("db.t", schema, primary_keys=["id"], options=options)
