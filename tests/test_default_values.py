"""Column default values (a field's `defaultValue`, Paimon 1.3+): Java's writers write the
default in place of each null of such a column; ours must write the same rows, or the same
input gives different tables depending on the writer."""
from __future__ import annotations

import datetime as dt
from decimal import Decimal

import pyarrow as pa
import pytest

import paimon_streaming as ps
from paimon_streaming.default_values import default_scalar
from paimon_streaming.errors import SchemaMismatchError, UnsupportedOperationError
from paimon_streaming.types import DataField, parse_atomic

try:
    from java_oracle import get_oracle
except ImportError:  # pragma: no cover
    from tests.java_oracle import get_oracle

# (type, default text, the value Java's cast gives)
DEFAULTS = [
    ("BOOLEAN", "Yes", True),
    ("INT", "12.7", 12),
    ("BIGINT", "'-42'", -42),
    ("DOUBLE", "1.5", 1.5),
    ("DECIMAL(5, 2)", "1.005", Decimal("1.01")),
    ("CHAR(4)", "ab", "ab  "),
    ("VARCHAR(2)", "abc", "ab"),
    ("STRING", "'it''s'", "it''s"),
    ("BINARY(3)", "a", b"a\0\0"),
    ("DATE", "2024-02-29", dt.date(2024, 2, 29)),
    ("TIME(3)", "12:30:01.5", dt.time(12, 30, 1, 500000)),
    ("TIMESTAMP(3)", "2024-01-01 10:00:00.123", dt.datetime(2024, 1, 1, 10, 0, 0, 123000)),
    ("TIMESTAMP(3)", "1700000000000", dt.datetime(2023, 11, 14, 22, 13, 20)),
    # rounded once, as parseFloat (through a double it was 1.0); Java's suffix taken
    ("FLOAT", "1.00000005960464477539062500000001", 1.0000001192092896),
    ("FLOAT", "1.5f", 1.5),
    ("DATE", "2024-1-5", dt.date(2024, 1, 5)),  # parseDate's y-m-d (refused as not ISO)
    ("TIMESTAMP(6)", "1000-01-01 00:00:00", dt.datetime(1000, 1, 1)),  # beyond nanoseconds' 1677-2262
    ("TIMESTAMP(3)", "2024-01-01 10:00:00.123456789", dt.datetime(2024, 1, 1, 10, 0, 0, 123000)),  # cut, not an error
    ("TIMESTAMP(3)", "2023-02-30 24:00:00", dt.datetime(2023, 3, 1)),  # java.time's SMART resolver
]


@pytest.fixture(scope="module")
def java():
    return get_oracle()


def test_nulls_become_defaults_as_in_javas_writer(java, catalog, tmp_path):
    """One column per case of DEFAULTS; rows with nulls and rows with values, written by Java
    into its table and by us into ours (and into Java's): the same rows everywhere."""
    fields = [{"name": "id", "type": "INT NOT NULL"}] + [
        {"name": f"c{i}", "type": t, "defaultValue": d} for i, (t, d, _) in enumerate(DEFAULTS)]
    theirs = str(tmp_path / "java.db" / "t")
    ours = str(tmp_path / "ours.db" / "t")
    with java.batch() as b:
        for path in (theirs, ours):
            b.create_table(path, fields, primary_keys=["id"], options={"bucket": "1"})
        b.write(theirs, [{"id": 1}, {"id": 2, "c0": False, "c1": 7}])
    table = ps.Table.open(ours)
    assert [f.default_value for f in table.schema.fields[1:]] == [d for _, d, _ in DEFAULTS]
    table.write_arrow(pa.table({"id": pa.array([1, 2], pa.int32()), "c0": [None, False],
                                "c1": pa.array([None, 7], pa.int32())}))
    ps.Table.open(theirs).write_arrow(pa.table({"id": pa.array([3], pa.int32())}))
    table.update_schema().set_default("c1", "99").commit()  # Java's writer takes a default we set
    with java.batch() as b:
        b.write(ours, [{"id": 4}])
        b.alter(theirs, [{"kind": "default", "path": ["c1"], "value": "77"}])  # and we take Java's
    ps.Table.open(theirs).write_arrow(pa.table({"id": pa.array([5], pa.int32())}))
    with java.batch() as b:
        java_reads = [b.read(theirs), b.read(ours)]
    expected = {f"c{i}": v for i, (_, _, v) in enumerate(DEFAULTS)}
    want = [{"id": 1, **expected}, {"id": 2, **expected, "c0": False, "c1": 7}, {"id": 4, **expected, "c1": 99}]
    mine = sorted(table.to_arrow().to_pylist(), key=lambda r: r["id"])
    assert mine == want
    assert sorted(java_reads[1].result, key=lambda r: r["id"]) == want
    assert sorted(java_reads[0].result, key=lambda r: r["id"]) == want[:2] + [{"id": 3, **expected}, {"id": 5, **expected, "c1": 77}]


def test_a_not_null_column_with_a_default_may_be_missing_or_null(catalog):
    t = catalog.create_table("db.t", pa.schema([pa.field("id", pa.int64(), False), pa.field("n", pa.int32(), False)]),
                             primary_keys=["id"], options={"bucket": "1"})
    with pytest.raises(SchemaMismatchError, match="'n' .* NOT NULL but missing"):
        t.write_arrow(pa.table({"id": [1]}))
    t.update_schema().set_default("n", "5").commit()
    t.write_arrow(pa.table({"id": [1]}))
    t.write_arrow(pa.table({"id": [2, 3], "n": pa.array([None, 9], pa.int32())}))
    assert sorted(t.to_arrow().to_pylist(), key=lambda r: r["id"]) == [
        {"id": 1, "n": 5}, {"id": 2, "n": 5}, {"id": 3, "n": 9}]
    t.update_schema().set_default("n", None).commit()
    with pytest.raises(ps.NullKeyError, match="'n'"):
        t.write_arrow(pa.table({"id": [4], "n": pa.array([None], pa.int32())}))


def test_defaults_that_do_not_cast_are_refused_naming_the_column(catalog):
    t = catalog.create_table("db.t", pa.schema([("id", pa.int64()), ("n", pa.int32()), ("a", pa.list_(pa.int32())),
                                                ("r", pa.struct([("x", pa.int32())])), ("b", pa.bool_())]))
    t.update_schema().add_column("ts", "TIMESTAMP(2)").commit()
    for column, text, error, message in [
            ("n", "abc", SchemaMismatchError, "'n'.*'abc' is not a valid INT"),
            ("b", "maybe", SchemaMismatchError, "'b'.*'maybe' is not a valid BOOLEAN.*expected t, true, y, yes, 1"),
            ("ts", "1000", SchemaMismatchError, "'ts'.*precision 0, 3, 6 or 9 only, not 2"),
            ("n", "99999999999", SchemaMismatchError, "overflows INT"),
            ("a", "[1, 2]", UnsupportedOperationError, "ARRAY"),
            (("r", "x"), "1", SchemaMismatchError, "top-level column")]:
        with pytest.raises(error, match=message):
            t.update_schema().set_default(column, text).commit()
    assert all(f.default_value is None for f in t.schema.fields)


@pytest.mark.parametrize("type_,text,value", DEFAULTS + [
    ("DECIMAL(3, 2)", "12.5", None),  # more digits than the precision: Java's cast gives null
    ("TIME(0)", "1000", dt.time(0, 0, 1)),
    ("DATE", "19000", dt.date(2022, 1, 8)),
    ("TINYINT", "-128", -128),
    # Java 1.4.2's values: a decimal over 28 digits and exponents beyond the precision were refused
    # (Python's decimal context), hexadecimal floats too
    ("DECIMAL(38, 10)", "12345678901234567890.5", Decimal("12345678901234567890.5000000000")),
    ("DECIMAL(38, 2)", "1e37", None), ("DECIMAL(10, 2)", "-7e36", None), ("DOUBLE", "0x1p3", 8.0),
    ("FLOAT", "-0x1.8p1f", -3.0),
])
def test_default_text_casts_as_paimons(type_, text, value):
    scalar = default_scalar(DataField(0, "c", parse_atomic(type_), None, text))
    assert (None if scalar is None else scalar.as_py()) == value


@pytest.mark.parametrize("type_,text", [
    ("FLOAT", "inf"), ("DECIMAL(10, 2)", "1_000"), ("DECIMAL(10, 2)", " 1.5 "), ("INT", "\u0661\u0662"), ("TIME(3)", "\u0661\u0662"), ("DATE", "\u0661\u0662"),
    ("DATE", "2024-02-30"), ("DATE", "2024-"), ("TIMESTAMP(6)", "2024-01-01T10:00:00.123456"),
    ("TIMESTAMP(3)", "2024-01-01 10"), ("TIMESTAMP(9)", "2024-01-01 10:00:00.1234567891"), ("TIMESTAMP(3)", "2024--05"),
    ("TIMESTAMP(3)", "2024-01-01 24:00:00.1"), ("TIMESTAMP_LTZ(3)", "1700000000000")])
def test_default_text_javas_write_fails_on_is_refused(type_, text):
    """Text Java 1.4.2's writer fails on (NumberFormatException, DateTimeParseException) was
    taken: Python's int/float read Unicode digits and 'inf', fromisoformat a 'T'."""
    with pytest.raises(SchemaMismatchError, match=f"column 'c': its default value .* is not a valid"):
        default_scalar(DataField(0, "c", parse_atomic(type_), None, text))
