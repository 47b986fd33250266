"""SimpleStats collection: per-type min/max/null counts, truncation, modes and options."""
from __future__ import annotations

import datetime as dt
from decimal import Decimal

import pyarrow as pa
import pytest

from paimon_streaming.errors import InvalidOptionError
from paimon_streaming.stats import (ColStats, collect_stats, parse_stats_mode, stats_columns,
                                    stats_modes, truncate_max)
from paimon_streaming.types import DataField, DataType, arrow_schema, parse_atomic

T = parse_atomic
UTC = dt.timezone.utc


def _fields(*specs: tuple[str, DataType]) -> list[DataField]:
    return [DataField(i, name, t) for i, (name, t) in enumerate(specs)]


def _stats(values: list, t: DataType, mode: str = "full") -> ColStats:
    fields = _fields(("c", t))
    data = pa.table({"c": pa.array(values, arrow_schema(fields).field(0).type)})
    return collect_stats(data, fields, mode)["c"]


@pytest.mark.parametrize("type_text, values, low, high", [
    ("BOOLEAN", [True, None, False], False, True),
    ("TINYINT", [3, -128, None], -128, 3),
    ("SMALLINT", [300, -2], -2, 300),
    ("INT", [5, None, -7, 2], -7, 5),
    ("BIGINT", [2**62, -(2**63)], -(2**63), 2**62),
    ("FLOAT", [1.5, -0.25, None], -0.25, 1.5),
    ("DOUBLE", [1e300, -1e-300], -1e-300, 1e300),
    ("DECIMAL(10, 2)", [Decimal("1.25"), Decimal("-3.50")], Decimal("-3.50"), Decimal("1.25")),
    ("DECIMAL(38, 6)", [Decimal("1" * 32 + ".5"), Decimal("0.000001")], Decimal("0.000001"),
     Decimal("1" * 32 + ".500000")),
    ("STRING", ["b", "a", None, "ab"], "a", "b"),
    ("CHAR(2)", ["zz", "aa"], "aa", "zz"),
    ("DATE", [dt.date(2024, 1, 2), dt.date(1969, 12, 31)], dt.date(1969, 12, 31), dt.date(2024, 1, 2)),
    ("TIME(0)", [dt.time(1), dt.time(0, 0, 1)], dt.time(0, 0, 1), dt.time(1)),
    ("TIMESTAMP(3)", [dt.datetime(2024, 1, 1, 0, 0, 0, 1000), dt.datetime(1900, 1, 1)],
     dt.datetime(1900, 1, 1), dt.datetime(2024, 1, 1, 0, 0, 0, 1000)),
    ("TIMESTAMP(6)", [dt.datetime(2024, 1, 1, 0, 0, 0, 7), None], dt.datetime(2024, 1, 1, 0, 0, 0, 7),
     dt.datetime(2024, 1, 1, 0, 0, 0, 7)),
    ("TIMESTAMP(6) WITH LOCAL TIME ZONE", [dt.datetime(2024, 1, 1, tzinfo=UTC), dt.datetime(2023, 1, 1, tzinfo=UTC)],
     dt.datetime(2023, 1, 1, tzinfo=UTC), dt.datetime(2024, 1, 1, tzinfo=UTC)),
])
def test_full_min_max_per_type(type_text, values, low, high):
    s = _stats(values, T(type_text))
    assert (s.min, s.max, s.null_count) == (low, high, values.count(None))
    assert type(s.min) is type(low)


def test_nanosecond_timestamps_keep_nanos():
    s = _stats([5, 1_000_000_001, None], T("TIMESTAMP(9)"))
    as_py = pa.array([5, 1_000_000_001], pa.timestamp("ns")).to_pylist()
    assert (s.min, s.max, s.null_count) == (as_py[0], as_py[1], 1)


@pytest.mark.parametrize("t", [
    T("BYTES"), T("BINARY(2)"), DataType("ARRAY", element=T("INT")),
    DataType("MAP", key=T("STRING NOT NULL"), value=T("INT")),
    DataType("ROW", fields=(DataField(10, "x", T("INT")),)),
])
def test_non_comparable_types_have_counts_only(t):
    values = {"BYTES": [b"a", None], "BINARY": [b"ab", None], "ARRAY": [[1], None],
              "MAP": [[("a", 1)], None], "ROW": [{"x": 1}, None]}[t.root if t.root != "VARBINARY" else "BYTES"]
    assert _stats(values, t) == ColStats(None, None, 1)


def test_all_null_and_empty_columns():
    assert _stats([None, None, None], T("INT")) == ColStats(None, None, 3)
    assert _stats([None], T("STRING"), "truncate(16)") == ColStats(None, None, 1)
    assert _stats([], T("DOUBLE")) == ColStats(None, None, 0)


def test_float_nan_and_signed_zero():
    assert _stats([1.0, float("nan"), None], T("DOUBLE")) == ColStats(None, None, 1)
    assert _stats([float("nan")], T("FLOAT")) == ColStats(None, None, 0)
    zeros = _stats([0.0, 0.0], T("DOUBLE"))
    assert str(zeros.min) == "-0.0" and str(zeros.max) == "0.0"  # widened like Parquet does


# ---- truncation ---------------------------------------------------------------------------------
def test_truncate_long_string():
    s = _stats(["a" * 20, "b"], T("STRING"), "truncate(16)")
    assert s.min == "a" * 16
    s = _stats(["abcdefghijklmnopqrst"], T("STRING"), "truncate(16)")
    assert (s.min, s.max) == ("abcdefghijklmnop", "abcdefghijklmnoq")


def test_truncate_short_strings_unchanged():
    s = _stats(["x" * 16, "é𝄞"], T("STRING"), "truncate(16)")
    assert (s.min, s.max) == ("x" * 16, "é𝄞")


def test_truncate_counts_code_points_not_bytes():
    value = "𝄞" * 17  # 4 UTF-8 bytes each
    s = _stats([value], T("STRING"), "truncate(16)")
    assert s.min == "𝄞" * 16 and s.max == "𝄞" * 15 + chr(ord("𝄞") + 1)


def test_truncate_max_carries_over_max_code_point():
    """16th code point U+10FFFF cannot be bumped: Java bumps the 15th and drops the 16th."""
    value = "a" * 14 + "b" + "\U0010FFFF" + "zzzz"
    s = _stats([value], T("STRING"), "truncate(16)")
    assert s.min == value[:16]
    assert s.max == "a" * 14 + "c"
    assert s.max >= value


def test_truncate_impossible_gives_unknown_bounds():
    s = _stats(["\U0010FFFF" * 20, "a"], T("STRING"), "truncate(16)")
    assert s == ColStats(None, None, 0)


def test_truncate_skips_surrogates():
    assert truncate_max("\ud7ff" + "x", 1) == "\ue000"
    assert truncate_max("ab", 1) == "b"


def test_truncate_leaves_other_types_alone():
    s = _stats([10**12, 1], T("BIGINT"), "truncate(1)")
    assert (s.min, s.max) == (1, 10**12)


# ---- modes ---------------------------------------------------------------------------------------
def test_modes_select_columns_and_counts():
    fields = _fields(("a", T("INT")), ("b", T("STRING")), ("c", T("DOUBLE")))
    data = pa.table({"a": pa.array([1, None], pa.int32()), "b": ["x" * 30, None], "c": [1.0, 2.0]},
                    schema=arrow_schema(fields))
    modes = {"a": "counts", "b": "truncate(4)", "c": "none"}
    stats = collect_stats(data, fields, modes)
    assert stats.names == ["a", "b"]
    assert stats.min_values == (None, "xxxx") and stats.max_values == (None, "xxxy")
    assert stats.null_counts == (1, 1)
    assert stats_columns(fields, modes) == ["a", "b"]
    assert stats_columns(fields, "full") is None
    assert stats_columns(fields, "none") == []
    assert collect_stats(data, fields, "none").fields == ()
    assert collect_stats(data, fields).names == ["a", "b", "c"]  # default truncate(16)


def test_collect_accepts_chunked_and_dictionary_columns():
    fields = _fields(("s", T("STRING")), ("i", T("INT")))
    data = pa.table({"s": pa.chunked_array([pa.array(["m", "z"]).dictionary_encode(),
                                            pa.array([None, "a"]).dictionary_encode()]),
                     "i": pa.chunked_array([pa.array([3, 0], pa.int64()), pa.array([None, -1], pa.int64())])})
    stats = collect_stats(data, fields, "full")
    assert stats["s"] == ColStats("a", "z", 1)
    assert stats["i"] == ColStats(-1, 3, 1)


@pytest.mark.parametrize("text, mode", [("none", "none"), ("COUNTS", "counts"), ("Full", "full"),
                                        ("truncate(16)", "truncate(16)"), ("TRUNCATE(128)", "truncate(128)"),
                                        ("truncate(007)", "truncate(7)")])
def test_parse_stats_mode(text, mode):
    assert parse_stats_mode(text) == mode


@pytest.mark.parametrize("text", ["truncate(0)", "truncate()", "truncate(-1)", "truncate(x)", "bogus", "",
                                  "truncate(16", " truncate(7) ", "full\n", "truncate(2147483648)"])
def test_parse_stats_mode_errors(text):
    with pytest.raises(InvalidOptionError, match="metadata.stats-mode"):
        parse_stats_mode(text)


def test_stats_modes_from_options():
    names = ["_KEY_id", "_SEQUENCE_NUMBER", "_VALUE_KIND", "id", "name", "blob", "extra"]
    assert stats_modes({}, names) == {
        "_KEY_id": "truncate(128)", "_SEQUENCE_NUMBER": "truncate(128)", "_VALUE_KIND": "truncate(128)",
        "id": "truncate(16)", "name": "truncate(16)", "blob": "truncate(16)", "extra": "truncate(16)"}
    options = {"metadata.stats-mode": "FULL", "fields.blob.stats-mode": "none",
               "fields._VALUE_KIND.stats-mode": "counts", "metadata.stats-keep-first-n-columns": "3"}
    assert stats_modes(options, names) == {
        "_KEY_id": "truncate(128)", "_SEQUENCE_NUMBER": "truncate(128)", "_VALUE_KIND": "counts",
        "id": "full", "name": "full", "blob": "none", "extra": "none"}


def test_stats_modes_option_errors():
    with pytest.raises(InvalidOptionError, match="fields.name.stats-mode"):
        stats_modes({"fields.name.stats-mode": "truncate(0)"}, ["name"])
    with pytest.raises(InvalidOptionError, match="metadata.stats-mode"):
        stats_modes({"metadata.stats-mode": "max"}, ["name"])
    with pytest.raises(InvalidOptionError, match="keep-first-n"):
        stats_modes({"metadata.stats-keep-first-n-columns": "x"}, ["name"])
    fields = _fields(("a", T("INT")))
    with pytest.raises(InvalidOptionError, match="fields.a.stats-mode"):
        collect_stats(pa.table({"a": pa.array([1], pa.int32())}), fields, {"a": "sometimes"})


@pytest.mark.parametrize("values", [
    ["b", "a", None, "ab", ""],                                  # empty string is the minimum
    ["é", "e\u0301", "z", "\U0001F600", "\uffff"],               # UTF-8 byte order, not UTF-16
    [None, None],                                                # all null: no bounds
    ["x" * 5000, "y", "a" * 9000],                               # over Parquet's statistics limit
    [f"name-{i % 997:05d}" for i in range(5000)],                # dictionary-encoded in the file
    [f"{i * 7919 % 8000:0200d}" for i in range(8000)],           # dictionary page overflows to plain
])
@pytest.mark.parametrize("mode", ["full", "truncate(16)", "truncate(2)"])
def test_written_string_stats_from_parquet_footer_equal_computed_ones(tmp_path, values, mode):
    """Data files take string min/max from the Parquet footer: the same stats as computing
    them, also where the footer has none (all null, long values), under every mode."""
    from paimon_streaming.catalog import Catalog
    from paimon_streaming.binary_row import deserialize_row
    table = Catalog(str(tmp_path)).create_table(
        "db.t", schema=pa.schema([pa.field("id", pa.int64(), False), pa.field("s", pa.string())]),
        primary_keys=["id"], options={"bucket": "1", "metadata.stats-mode": mode})
    data = pa.table({"id": pa.array(range(len(values)), pa.int64()), "s": pa.array(values, pa.string())})
    table.write_arrow(data)
    [entry] = _live_files(table)
    fields = list(table.schema.fields)
    expected = collect_stats(data, fields, mode)
    types = [f.type.copy(nullable=True) for f in fields]
    assert deserialize_row(entry.value_stats.min_values, types) == list(expected.min_values)
    assert deserialize_row(entry.value_stats.max_values, types) == list(expected.max_values)
    assert list(entry.value_stats.null_counts) == list(expected.null_counts)


def _key_column(t: pa.DataType, ints) -> pa.Array:
    if t == pa.string():
        return pa.array([f"k{x:+05d}" for x in ints])
    if t == pa.date32():
        return pa.array([dt.date(2024, 1, 1) + dt.timedelta(days=int(x)) for x in ints], t)
    if pa.types.is_decimal(t):
        return pa.array([Decimal(int(x)) / 4 for x in ints], t)
    return pa.array(ints).cast(t)


def _live_files(table):
    from paimon_streaming.scan import TableScan
    scan = TableScan(table.file_io, table.path, table.schema)
    return [e.file for e in scan.live_entries(table.latest_snapshot())]


@pytest.mark.parametrize("key_specs", [
    [("k", pa.int64())],
    [("k", pa.date32())],
    [("k", pa.timestamp("ns"))],
    [("k", pa.decimal128(20, 2))],
    [("k", pa.string())],
    [("k", pa.float64())],
    [("a", pa.int32()), ("b", pa.int64())],   # the second column's bounds are not its first/last
])
def test_key_stats_of_written_files_equal_computed_ones(tmp_path, key_specs):
    """A one-column key's stats are taken from the file's first and last keys (the file is
    sorted by key): they must equal the stats computed from the keys the file holds."""
    import numpy as np
    import pyarrow.parquet as pq
    from paimon_streaming.catalog import Catalog
    from paimon_streaming.keyvalue import key_fields
    from paimon_streaming.write import TableWrite
    rng = np.random.default_rng(7)
    names = [n for n, _ in key_specs]
    schema = pa.schema([pa.field(n, t, False) for n, t in key_specs] + [pa.field("v", pa.int64())])
    table = Catalog(str(tmp_path)).create_table("db.t", schema=schema, primary_keys=names,
                                                options={"bucket": "2", "deletion-vectors.enabled": "true"})
    for batch in range(3):
        keys = {n: _key_column(t, rng.integers(-500, 500, 400)) for n, t in key_specs}
        table.write_arrow(pa.table({**keys, "v": pa.array([batch] * 400, pa.int64())}))
    kfields = key_fields(table.schema)
    for f in _live_files(table):
        path = next(tmp_path.glob(f"db.db/t/bucket-*/{f.file_name}"))
        keys = pq.read_table(path, columns=[k.name for k in kfields])
        expected = TableWrite._stats(keys, kfields, {k.name: "truncate(128)" for k in kfields})
        assert f.key_stats == expected, f.file_name
