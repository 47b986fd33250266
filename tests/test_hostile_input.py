"""Hostile input: partition values that look like paths, escapes, control characters or
unicode stay inside the table and round-trip (ours, pypaimon, Apache Paimon Java); names are
validated; huge strings, NaN/infinities, extreme decimals and timestamps round-trip or fail
with an error that says why."""
from __future__ import annotations

import datetime as dt
import decimal
import math
import os

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
import pytest

import paimon_streaming as ps
from paimon_streaming.errors import InvalidNameError, PaimonError, SchemaMismatchError
from conftest import pypaimon_read, rows_by

try:
    from java_oracle import get_oracle
except ImportError:  # pragma: no cover
    from tests.java_oracle import get_oracle

HOSTILE = ["a/b", "..", "../../escape", "/abs", "k=v", "100%", "%2F", "%", "line\nbreak", "tab\tx", "nul\x00x",
           "日本語", "emoji 🎉", " spaced ", "back\\slash", "q?*:\"'#{}[]^", "x" * 200]
SCHEMA = pa.schema([("id", pa.int64(), False), ("p", pa.string(), False), ("ts", pa.timestamp("us"), False)])
TIMES = [dt.datetime(1, 1, 1), dt.datetime(999, 12, 31, 23, 59, 59, 999999), dt.datetime(2024, 5, 6, 7, 8),
         dt.datetime(9999, 12, 31, 23, 59, 59, 999999)]


def hostile_rows() -> pa.Table:
    n = len(HOSTILE)
    return pa.table({"id": list(range(n)), "p": HOSTILE, "ts": [TIMES[i % len(TIMES)] for i in range(n)]},
                    schema=SCHEMA)


def files_under(root: str) -> list[str]:
    return [os.path.join(d, f) for d, _, names in os.walk(root) for f in names]


def test_hostile_partition_values_stay_inside_and_round_trip(tmp_path, warehouse):
    cat = ps.Catalog(warehouse)
    t = cat.create_table("db.t", SCHEMA, primary_keys=["id", "p", "ts"], partition_keys=["p", "ts"],
                         options={"bucket": "1"})
    data = hostile_rows()
    t.write_arrow(data)
    assert os.listdir(tmp_path) == ["wh"]
    root = os.path.realpath(t.path)
    files = files_under(tmp_path)
    assert all(os.path.realpath(f).startswith(root + os.sep) for f in files)
    partition_dirs = [d for d in os.listdir(t.path) if d.startswith("p=")]
    assert len(partition_dirs) == len(HOSTILE)
    assert all("/" not in d and "\n" not in d and "\x00" not in d for d in partition_dirs)
    assert "p=..%2F..%2Fescape" in partition_dirs and "p=line%0Abreak" in partition_dirs
    assert rows_by(t.to_arrow(), "id") == rows_by(data, "id")
    assert rows_by(pypaimon_read(warehouse, "db.t"), "id") == rows_by(data, "id")


def test_java_finds_files_in_hostile_partitions(catalog):
    """Java recomputes every data file's directory from the partition row: our escaping and
    timestamp text (years before 1000 padded to 4 digits) must be byte-identical."""
    try:
        java = get_oracle()
    except Exception as exc:  # JavaOracleUnavailable and build failures
        pytest.skip(f"Java oracle unavailable: {exc}")
    t = catalog.create_table("db.t", SCHEMA, primary_keys=["id", "p", "ts"], partition_keys=["p", "ts"],
                             options={"bucket": "1"})
    t.write_arrow(hostile_rows())
    floats = catalog.create_table("db.fl", FLOAT_SCHEMA, partition_keys=["pd"])
    floats.write_arrow(float_rows())
    with java.batch() as b:
        hostile, fl = b.read(t.path), b.read(floats.path)
    got = sorted(hostile.result, key=lambda r: r["id"])
    assert [r["p"] for r in got] == HOSTILE
    assert [r["ts"] for r in got] == hostile_rows().column("ts").to_pylist()
    assert same_rows(sorted(fl.result, key=lambda r: r["id"]), rows_by(float_rows(), "id"))


@pytest.mark.parametrize("name", ["", ".", "..", "a/b", "../x", "a\\b", "a\nb", "\x00", " t", "t ", "a.b",
                                  "t$snapshots", ".hidden"])
def test_invalid_table_and_database_names(catalog, name):
    schema = pa.schema([("id", pa.int64())])
    with pytest.raises(InvalidNameError, match="invalid table name"):
        catalog.create_table(f"db.{name}" if name != "a.b" else "db.a.b", schema)
    if name != "t$snapshots":
        with pytest.raises(InvalidNameError, match="invalid database name"):
            catalog.create_database(name)
    assert not os.path.exists(os.path.dirname(catalog.warehouse)) or catalog.list_databases() in ([], ["db"])


def test_unicode_names_are_fine(catalog):
    t = catalog.create_table("库.表_1", pa.schema([("id", pa.int64())]))
    t.write_arrow(pa.table({"id": [1]}))
    assert catalog.list_tables("库") == ["表_1"] and catalog.get_table("库.表_1").to_arrow()["id"].to_pylist() == [1]


@pytest.mark.parametrize("tag", ["", "../escape", "a/b", "x\ny", ".hidden", "12"])
def test_invalid_tag_names(catalog, tag):
    t = catalog.create_table("db.t", pa.schema([("id", pa.int64())]))
    t.write_arrow(pa.table({"id": [1]}))
    with pytest.raises(PaimonError, match="invalid tag name"):
        t.create_tag(tag)
    assert not os.path.exists(f"{t.path}/escape") and t.tags() == []


def test_huge_strings_round_trip(catalog, warehouse):
    schema = pa.schema([("id", pa.int64(), False), ("s", pa.string()), ("b", pa.binary())])
    t = catalog.create_table("db.big", schema, primary_keys=["id"], options={"bucket": "1"})
    big = "é" * (3 << 20)
    data = pa.table({"id": [1, 2], "s": [big, "small"], "b": [os.urandom(1 << 20), b""]}, schema=schema)
    t.write_arrow(data)
    assert t.to_arrow().sort_by("id").equals(data)
    assert rows_by(pypaimon_read(warehouse, "db.big"), "id") == rows_by(data, "id")


def test_partition_value_too_long_for_the_filesystem_fails_clearly(catalog):
    t = catalog.create_table("db.long", SCHEMA, partition_keys=["p"])
    with pytest.raises(OSError, match="too long"):
        t.write_arrow(pa.table({"id": [1], "p": ["x" * 300], "ts": [TIMES[0]]}, schema=SCHEMA))
    assert t.snapshots() == [] and len(t.to_arrow()) == 0


FLOATS = [math.nan, math.inf, -math.inf, -0.0, 1.7976931348623157e308, 5e-324, None]
FLOAT_SCHEMA = pa.schema([("id", pa.int64(), False), ("d", pa.float64()), ("f", pa.float32()),
                          ("pd", pa.float64())])


def float_rows() -> pa.Table:
    n = len(FLOATS)
    return pa.table({"id": list(range(n)), "d": FLOATS, "f": FLOATS[:4] + [3.4028234663852886e38, 1e-45, None],
                     "pd": FLOATS}, schema=FLOAT_SCHEMA)


def same_rows(got: list[dict], want: list[dict]) -> bool:
    def same(a, b):
        return a == b or (isinstance(a, float) and isinstance(b, float) and math.isnan(a) and math.isnan(b))
    return len(got) == len(want) and all(same(g[k], w[k]) for g, w in zip(got, want) for k in w)


@pytest.mark.parametrize("order", [[math.nan, 1.0, math.inf], [1.0, math.inf, math.nan], [math.inf, math.nan, -0.0, 0.0]])
def test_partition_stats_keep_java_order_whatever_order_partitions_come_in(order):
    """A manifest's partition statistics in Java's order (NaN the maximum, -0.0 below 0.0)
    whatever order the partitions come in; before, a NaN partition met first became both
    bounds (Python calls NaN equal to anything), and the manifest was pruned for `pd > 1e300`:
    a filter that returned nothing, depending on the process's hash seed."""
    from paimon_streaming.binary_row import deserialize_row, serialize_row
    from paimon_streaming.manifest.files import partition_stats
    from paimon_streaming.predicate import Term, term_may_match
    from paimon_streaming.types import DataField, parse_atomic
    fields = [DataField(0, "pd", parse_atomic("DOUBLE"))]
    stats = partition_stats([serialize_row([v], [fields[0].type]) for v in order], fields)
    [lo], [hi] = deserialize_row(stats.min_values, [fields[0].type]), deserialize_row(stats.max_values, [fields[0].type])
    assert math.isnan(hi) and lo == min(v for v in order if not math.isnan(v))
    if -0.0 in order:
        assert math.copysign(1.0, lo) == -1.0
    assert term_may_match(Term("pd", ">", 1e300), lo, hi, 0, len(order))
    assert not term_may_match(Term("pd", "<", -1e300), 1.0, hi, 0, len(order))


def test_a_nan_literal_in_not_equal_prunes_no_all_nan_file():
    """Java's Parquet and Avro statistics of an all-NaN file are min = max = NaN: `x != NaN`
    and `x not in (NaN)` pruned it, though NaN != NaN holds for its rows as the row filter says
    (files of other writers and formats were read)."""
    from paimon_streaming.predicate import Term, term_may_match
    nan = float("nan")
    assert term_may_match(Term("g", "!=", nan), nan, nan, 0, 2)
    assert term_may_match(Term("g", "not in", [nan, 5.0]), nan, nan, 0, 2)
    assert not term_may_match(Term("g", "!=", 5.0), 5.0, 5.0, 0, 2)


@pytest.mark.parametrize("partitioned", [False, True])
def test_nan_and_infinities_round_trip_and_filter(catalog, warehouse, partitioned):
    """Float partition directories use Java's text (NaN, Infinity, 4.9E-324); pypaimon uses
    Python's, so it is the oracle only for the unpartitioned table (Java checks the other)."""
    t = catalog.create_table("db.fl", FLOAT_SCHEMA, partition_keys=["pd"] if partitioned else None)
    t.write_arrow(float_rows())
    assert same_rows(rows_by(t.to_arrow(), "id"), rows_by(float_rows(), "id"))
    if partitioned:
        assert "pd=Infinity" in os.listdir(t.path) and "pd=4.9E-324" in os.listdir(t.path)
    else:
        assert same_rows(rows_by(pypaimon_read(warehouse, "db.fl"), "id"), rows_by(float_rows(), "id"))
    assert sorted(r["id"] for r in t.to_arrow(filter=[("d", ">", 1e300)]).to_pylist()) == [1, 4]
    assert sorted(r["id"] for r in t.to_arrow(filter=[("pd", ">", 1e300)]).to_pylist()) == [1, 4]
    assert sorted(r["id"] for r in t.to_arrow(filter=[("d", "<", 0)]).to_pylist()) == [2]


def test_extreme_decimals_round_trip_and_overflow_is_rejected(catalog, warehouse):
    schema = pa.schema([("id", pa.int64(), False), ("d38", pa.decimal128(38, 0)), ("d38s", pa.decimal128(38, 38)),
                        ("d10", pa.decimal128(10, 2))])
    t = catalog.create_table("db.dec", schema, primary_keys=["id"], options={"bucket": "1"})
    top = pa.array([decimal.Decimal("9" * 38)], pa.decimal128(38, 0))
    # -(10^38 - 1) built in Arrow: pyarrow's conversion from Python counts its sign as a digit
    d38 = pa.concat_arrays([top, pc.negate(top), pa.array([0], pa.decimal128(38, 0))])
    columns = {"id": [1, 2, 3], "d38": d38,
               "d38s": [decimal.Decimal("0." + "9" * 38), decimal.Decimal("-0." + "0" * 37 + "1"), None],
               "d10": [decimal.Decimal("99999999.99"), decimal.Decimal("-99999999.99"), None]}
    data = pa.table([pa.array(v, f.type) for v, f in zip(columns.values(), schema)], schema=schema)
    t.write_arrow(data)
    assert rows_by(t.to_arrow(), "id") == rows_by(data, "id")
    assert rows_by(pypaimon_read(warehouse, "db.dec"), "id") == rows_by(data, "id")
    wide = pa.table({"id": [4], "d10": pa.array([decimal.Decimal("123456789012.5")], pa.decimal128(20, 1))})
    with pytest.raises(SchemaMismatchError, match="d10"):
        t.write_arrow(wide)
    assert len(t.snapshots()) == 1


@pytest.mark.parametrize("unit", ["ms", "us"])
def test_extreme_timestamps_and_dates_round_trip(catalog, warehouse, unit):
    schema = pa.schema([("id", pa.int64(), False), ("ts", pa.timestamp(unit)), ("tz", pa.timestamp(unit, "UTC")),
                        ("d", pa.date32())])
    t = catalog.create_table("db.ts", schema, primary_keys=["id"], options={"bucket": "1"})
    lo, hi = dt.datetime(1, 1, 1), dt.datetime(9999, 12, 31, 23, 59, 59, 999000)
    utc = dt.timezone.utc
    data = pa.table({"id": [1, 2, 3], "ts": [lo, hi, None], "tz": [lo.replace(tzinfo=utc), hi.replace(tzinfo=utc), None],
                     "d": [dt.date(1, 1, 1), dt.date(9999, 12, 31), dt.date(1970, 1, 1)]}, schema=schema)
    t.write_arrow(data)
    assert rows_by(t.to_arrow(), "id") == rows_by(data, "id")
    assert rows_by(pypaimon_read(warehouse, "db.ts").cast(schema), "id") == rows_by(data, "id")
    assert [r["id"] for r in t.to_arrow(filter=[("ts", "<", dt.datetime(1000, 1, 1))]).to_pylist()] == [1]


def test_nanosecond_timestamps_out_of_range_fail_clearly(catalog):
    schema = pa.schema([("id", pa.int64(), False), ("ts", pa.timestamp("ns"))])
    t = catalog.create_table("db.ns", schema)
    ok = pa.table({"id": [1, 2], "ts": pa.array([-(2 ** 63) + 1, 2 ** 63 - 1], pa.timestamp("ns"))})
    t.write_arrow(ok)
    assert t.to_arrow().sort_by("id").column("ts").equals(ok.column("ts"))


def test_megabyte_string_primary_key_upserts_in_a_deletion_vector_table(catalog):
    schema = pa.schema([("k", pa.string(), False), ("v", pa.int64())])
    t = catalog.create_table("db.bigkey", schema, primary_keys=["k"],
                             options={"bucket": "2", "deletion-vectors.enabled": "true"})
    big = "k" * (2 << 20)
    t.write_arrow(pa.table({"k": [big, "a"], "v": [1, 2]}, schema=schema))
    t.write_arrow(pa.table({"k": [big], "v": [3]}, schema=schema))
    assert sorted((len(r["k"]), r["v"]) for r in t.to_arrow().to_pylist()) == [(1, 2), (len(big), 3)]


def test_hash_of_long_rows_among_short_ones_matches_the_reference():
    """Rows far longer than the others finish hashing in a plain loop; same Murmur3 result as
    pypaimon's reference implementation."""
    from paimon_streaming.binary_row import hash_rows
    from pypaimon_oracle import call as pypaimon_call
    rng = np.random.default_rng(3)
    lengths = [200_000, 5, 0, 70_000, 33] + list(rng.integers(0, 3000, 60))
    rows = [rng.integers(0, 256, 4 * int(n), dtype=np.uint8).tobytes() for n in lengths]
    expected = np.array(pypaimon_call("hash_bytes_by_words", rows), np.uint32).view(np.int32)
    assert np.array_equal(hash_rows(pa.array(rows, pa.binary())), expected)
    assert np.array_equal(hash_rows(pa.array(rows, pa.binary()), seed=7),
                          np.array(pypaimon_call("hash_bytes_by_words", rows, 7), np.uint32).view(np.int32))
