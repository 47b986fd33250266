"""Differential test of filtered reads: `t.to_arrow(filter=F)` must hold exactly the rows of
`t.to_arrow()` that satisfy F, whatever prunes files on the way (partition values, manifest
partition statistics, min/max statistics under every `metadata.stats-mode`, the four file
indexes, deletion vectors, merge-on-read of primary-key tables).

The expected rows are computed here in plain Python from the unfiltered read, never through
the project's predicate code, under SQL semantics:

* a comparison with a null (column value or literal) is not true: `!=`, `not in` and ranges
  never return null rows; `x not in (..., null)` is never true, `x in (..., null)` only by its
  non-null values;
* values compare exactly, whatever the Python type of the literal (an int against a float
  column, a float or Decimal against an int column, an int or a dyadic float against a DECIMAL
  column, an aware datetime of another offset against a TIMESTAMP WITH TIME ZONE column, a
  naive one taken as UTC there); a float32 column's values are compared as the doubles they are;
* floats follow IEEE 754, as the project's row filter (Arrow) does and as its statistics are
  written to respect (stats.py, predicate.compare_values): NaN equals nothing and orders with
  nothing (`!=` holds), -0.0 = 0.0; `x in (a, b)` means `x = a or x = b`.
  (The README makes a float against a DECIMAL column the decimal it prints as; the floats
  generated for DECIMAL columns are dyadic, where both readings agree.)

A filter the project refuses with an error is not a wrong answer, but only a literal of another
Python type than its column's may cause one (`cross_typed`: e.g. `k in (Decimal('3'), nan)`
on a BIGINT column, which Arrow cannot build one value set of); any other error fails the test.
Besides the columns, filters take `_ROW_ID` / `_SEQUENCE_NUMBER` of row-tracking tables, and a
property of its own changes the schema between commits (renames, widenings, columns dropped
and added again), where old files' statistics and indexes must be matched by field id.

The bugs this test found are kept as explicit regression tests at the end of this file; the
property test generates their cases too.
"""
from __future__ import annotations

import datetime as dt
import decimal
import math
import os
import shutil
import struct
import tempfile
from dataclasses import dataclass
from typing import Any

import pyarrow as pa
import pytest
from hypothesis import HealthCheck, Phase, given, settings, strategies as st

import paimon_streaming as ps
from paimon_streaming.errors import SchemaMismatchError

MAX_EXAMPLES = int(os.environ.get("PAIMON_FILTER_DIFF_EXAMPLES", "18"))
# Shrinking rebuilds tables for minutes; the failure message names the filter, the table and its
# rows already. PAIMON_FILTER_DIFF_SHRINK=1 shrinks.
PHASES = tuple(Phase) if os.environ.get("PAIMON_FILTER_DIFF_SHRINK") == "1" else \
    (Phase.explicit, Phase.reuse, Phase.generate)

UTC = dt.timezone.utc
D = decimal.Decimal
NAN, INF = float("nan"), float("inf")
FLT_MAX = struct.unpack("<f", struct.pack("<I", 0x7F7FFFFF))[0]
FLT_TRUE_MIN = struct.unpack("<f", struct.pack("<I", 1))[0]
LONG_A = "shared-prefix-0123456789-alpha"          # > 16 code points: truncated statistics
LONG_B = "shared-prefix-0123456789-beta"
LONG_16 = "shared-prefix-01"                       # exactly 16
LONG_17 = "shared-prefix-012"
MAX_CP_17 = "\U0010ffff" * 17                      # a truncated max that cannot be rounded up
STRINGS = ["", "a", "b", "ab", "A", "é", "日本語", "\U0001F600", "\uffff", "a\x00b", LONG_A, LONG_B,
           LONG_16, LONG_17, MAX_CP_17, "\U0010ffff" * 16, "zzzzzzzzzzzzzzzzzzzzzz"]
BINARIES = [b"", b"\x00", b"ab", b"abc", b"\xff" * 20, b"\x80\x00"]
DATES = [dt.date(1970, 1, 1), dt.date(1969, 12, 31), dt.date(1, 1, 1), dt.date(9999, 12, 31), dt.date(2024, 2, 29)]
TIMESTAMPS = [dt.datetime(1970, 1, 1), dt.datetime(1969, 12, 31, 23, 59, 59, 999000), dt.datetime(1, 1, 1),
              dt.datetime(9999, 12, 31, 23, 59, 59, 999000), dt.datetime(2024, 2, 29, 12, 0, 0, 1000)]


# ---- columns ---------------------------------------------------------------------------------
@dataclass(frozen=True)
class Col:
    name: str
    type: pa.DataType
    kind: str          # int, float, decimal, string, binary, bool, date, ts, tstz, time, nested
    values: st.SearchStrategy
    lo: int = 0        # ints: the range of the type
    hi: int = 0
    unit: str = "us"   # timestamps

    @property
    def indexes(self) -> list[str]:
        """The file index kinds Paimon takes for this column's type (file_index.py)."""
        return {"int": ["bloom-filter", "bitmap", "bsi", "range-bitmap"],
                "float": ["bloom-filter", "bitmap", "range-bitmap"],
                "decimal": ["bsi", "range-bitmap"],
                "string": ["bloom-filter", "bitmap", "range-bitmap"],
                "binary": ["bloom-filter"],
                "bool": ["bitmap", "range-bitmap"],
                "date": ["bloom-filter", "bitmap", "bsi", "range-bitmap"],
                "ts": ["bloom-filter", "bitmap", "bsi", "range-bitmap"],
                "tstz": ["bloom-filter", "bitmap", "bsi", "range-bitmap"],
                "time": ["bloom-filter", "bitmap", "bsi", "range-bitmap"],
                "nested": []}[self.kind]


def _ints(lo: int, hi: int) -> st.SearchStrategy:
    return st.one_of(st.sampled_from([lo, lo + 1, -1, 0, 1, 2, hi - 1, hi]), st.integers(-3, 3),
                     st.integers(lo, hi))


def _f32(x: float) -> float:
    return struct.unpack("<f", struct.pack("<f", x))[0]


_F32 = st.one_of(st.sampled_from([0.0, -0.0, NAN, INF, -INF, 1.5, -1.5, 2.0, FLT_MAX, -FLT_MAX, FLT_TRUE_MIN]),
                 st.floats(width=32), st.integers(-3, 3).map(float))
_F64 = st.one_of(st.sampled_from([0.0, -0.0, NAN, INF, -INF, 1.5, -1.5, 2.0, 5e-324, 1.7976931348623157e308,
                                  0.1, 1e16]),
                 st.floats(), st.integers(-3, 3).map(float))
_DEC = st.one_of(st.sampled_from([D("0.00"), D("0.01"), D("-0.01"), D("1.25"), D("1.50"), D("99999999.99"),
                                  D("-99999999.99")]),
                 st.decimals(min_value=D("-99999999.99"), max_value=D("99999999.99"), places=2,
                             allow_nan=False, allow_infinity=False)).map(lambda d: d if d != 0 else D("0.00"))
_STR = st.one_of(st.sampled_from(STRINGS), st.text(max_size=24), st.text("ab", max_size=3))
_BIN = st.one_of(st.sampled_from(BINARIES), st.binary(max_size=20))
_DATE = st.one_of(st.sampled_from(DATES), st.dates(dt.date(1900, 1, 1), dt.date(2100, 1, 1)))
_TS_US = st.one_of(st.sampled_from(TIMESTAMPS + [dt.datetime(2000, 1, 1, 0, 0, 0, 1)]),
                   st.datetimes(dt.datetime(1900, 1, 1), dt.datetime(2100, 1, 1)))
_TS_MS = _TS_US.map(lambda t: t.replace(microsecond=t.microsecond // 1000 * 1000))

_TIME_MS = st.one_of(st.sampled_from([dt.time(0), dt.time(23, 59, 59, 999000), dt.time(12)]),
                     st.times().map(lambda t: t.replace(microsecond=t.microsecond // 1000 * 1000)))

VALUE_COLUMNS = [
    Col("i8", pa.int8(), "int", _ints(-128, 127), -128, 127),
    Col("i16", pa.int16(), "int", _ints(-2**15, 2**15 - 1), -2**15, 2**15 - 1),
    Col("i32", pa.int32(), "int", _ints(-2**31, 2**31 - 1), -2**31, 2**31 - 1),
    Col("i64", pa.int64(), "int", _ints(-2**63, 2**63 - 1), -2**63, 2**63 - 1),
    Col("f32", pa.float32(), "float", _F32),
    Col("f64", pa.float64(), "float", _F64),
    Col("dec", pa.decimal128(10, 2), "decimal", _DEC),
    Col("s", pa.string(), "string", _STR),
    Col("bin", pa.binary(), "binary", _BIN),
    Col("bo", pa.bool_(), "bool", st.booleans()),
    Col("d", pa.date32(), "date", _DATE),
    Col("ts_s", pa.timestamp("s"), "ts", _TS_US.map(lambda t: t.replace(microsecond=0)), unit="s"),
    Col("ts_ms", pa.timestamp("ms"), "ts", _TS_MS, unit="ms"),
    Col("ts_ms_tz", pa.timestamp("ms", tz="UTC"), "tstz", _TS_MS.map(lambda t: t.replace(tzinfo=UTC)), unit="ms"),
    Col("ts_us", pa.timestamp("us"), "ts", _TS_US),
    Col("ts_tz", pa.timestamp("us", tz="UTC"), "tstz", _TS_US.map(lambda t: t.replace(tzinfo=UTC))),
    Col("tm", pa.time32("ms"), "time", _TIME_MS, unit="ms"),
    # nested columns take `is null` / `is not null` only (predicate.parse_filter)
    Col("lst", pa.list_(pa.int32()), "nested", st.lists(st.one_of(st.none(), st.integers(-3, 3)), max_size=3)),
    Col("stc", pa.struct([("a", pa.int32())]), "nested",
        st.fixed_dictionaries({"a": st.one_of(st.none(), st.integers(-3, 3))})),
]
BY_NAME = {c.name: c for c in VALUE_COLUMNS}
KEY = Col("k", pa.int64(), "int", st.integers(0, 7), -2**63, 2**63 - 1)
PARTITIONS = {
    "str": Col("p", pa.string(), "string", st.sampled_from(["a", "b", "ü x", ""])),
    "int": Col("p", pa.int32(), "int", st.sampled_from([0, -1, 7, 2**31 - 1, -2**31]), -2**31, 2**31 - 1),
    # -0.0 beside 0.0: test_float_partition_zero_equals_negative_zero
    "dbl": Col("p", pa.float64(), "float", st.sampled_from([0.0, 1.5, NAN, INF, -INF, -2.0, -0.0])),
    "date": Col("p", pa.date32(), "date", st.sampled_from([dt.date(1970, 1, 1), dt.date(2024, 2, 29), dt.date(1, 1, 1)])),
    "bool": Col("p", pa.bool_(), "bool", st.booleans()),
    "dec": Col("p", pa.decimal128(10, 2), "decimal", st.sampled_from([D("0.00"), D("1.25"), D("-99999999.99")])),
    "ts": Col("p", pa.timestamp("us"), "ts", st.sampled_from([dt.datetime(1970, 1, 1), dt.datetime(2020, 1, 1, 1, 2, 3, 4)])),
}


TRACKING = [Col("_ROW_ID", pa.int64(), "int", st.nothing(), -2**63, 2**63 - 1),
            Col("_SEQUENCE_NUMBER", pa.int64(), "int", st.nothing(), -2**63, 2**63 - 1)]


# ---- the oracle: SQL semantics in plain Python -------------------------------------------------
def _norm(col: Col, lit: Any) -> Any:
    """A literal as Python compares it with the column's values (naive datetimes are UTC in a
    TIMESTAMP WITH TIME ZONE column)."""
    if col.kind == "tstz" and isinstance(lit, dt.datetime) and lit.tzinfo is None:
        return lit.replace(tzinfo=UTC)
    return lit


def _eq(v: Any, lit: Any) -> bool:
    return v == lit  # Python: exact across int/float/Decimal, IEEE for NaN and zeros


def term_holds(col: Col, v: Any, op: str, lit: Any) -> bool:
    op = op.lower()
    if op == "is null":
        return v is None
    if op == "is not null":
        return v is not None
    if v is None:
        return False
    if op in ("in", "not in"):
        lits = [_norm(col, x) for x in lit]
        if any(x is not None and _eq(v, x) for x in lits):
            return op == "in"
        if op == "in" or any(x is None for x in lits):
            return False  # false, or unknown
        return True
    if lit is None:
        return False
    lit = _norm(col, lit)
    if any(isinstance(x, float) and math.isnan(x) for x in (v, lit)):
        return op == "!="   # IEEE: NaN is unordered (Python's Decimal would raise comparing it)
    return {"=": lambda: v == lit, "==": lambda: v == lit, "!=": lambda: v != lit, "<": lambda: v < lit,
            "<=": lambda: v <= lit, ">": lambda: v > lit, ">=": lambda: v >= lit}[op]()


def filter_holds(cols: dict[str, Col], row: dict, flt: list) -> bool:
    groups = [flt] if isinstance(flt[0], tuple) else flt
    return any(all(term_holds(cols[t[0]], row[t[0]], t[1], t[2] if len(t) == 3 else None) for t in g)
               for g in groups)


def _canon(v: Any) -> Any:
    if v is None:
        return ("null",)
    if isinstance(v, float):
        return ("float", "nan" if math.isnan(v) else struct.pack(">d", v).hex())
    if isinstance(v, D):
        return ("dec", str(v))
    if isinstance(v, dt.datetime):
        return ("ts", v.isoformat())
    if isinstance(v, (list, dict)):
        return ("nested", repr(v))
    return (type(v).__name__, v)


def canon_rows(rows: list[dict], names: list[str]) -> list[tuple]:
    return sorted(tuple(_canon(r[n]) for n in names) for r in rows)


# ---- literals ------------------------------------------------------------------------------------
def _exact_decimal(x: float) -> D | None:
    """A float's value as a short Decimal, when the short text is exact (dyadic floats)."""
    if not math.isfinite(x):
        return None
    short = D(repr(x))
    return short if short == D(x) and len(short.as_tuple().digits) <= 12 else None


def candidates(col: Col, present: list[Any]) -> list[Any]:
    """Literals for filters on `col`: values present (and the boundaries), absent ones near them,
    the type's edges, and values of other compatible Python types."""
    vals = [v for v in present if v is not None]
    out: list[Any] = list(vals[:8]) + list(vals[8::max(1, len(vals) // 8)][:8])
    ordered = sorted((v for v in vals if not (isinstance(v, float) and math.isnan(v))), key=lambda v: v)
    ends = [ordered[0], ordered[-1]] if ordered else []
    out += ends
    if col.kind == "int":
        out += [col.lo, col.hi, 0, -1, 5, INF, -INF, NAN]
        out += [col.lo - 1, col.hi + 1, 2**63, -2**63 - 1, 2**64]   # beyond the type, and beyond int64
        for v in ends:
            out += [v - 1, v + 1]
            if abs(float(v)) < 2**63:
                out.append(float(v))   # an integral float (beyond 2**53 a rounded one)
            out.append(D(v))
            out += [v + 0.5, v - 0.5, D(v) + D("0.5")]   # fractional: test_fractional_float_literal_on_an_integer_column
    elif col.kind == "float":
        out += [0.0, -0.0, NAN, INF, -INF, 1.5, 0, 1, -2]
        limit = 2**24 if col.type == pa.float32() else 2**53
        for v in ends:
            if math.isfinite(v) and v == int(v) and abs(v) <= limit:
                out.append(int(v))
            exact = _exact_decimal(v)
            if exact is not None:
                out.append(exact)
            elif math.isfinite(v):
                out.append(D(repr(v)))   # the decimal it prints as: not the float's exact value
            if math.isfinite(v):
                out += [math.nextafter(v, INF), math.nextafter(v, -INF)] if col.type == pa.float64() else \
                       [_f32(math.nextafter(v, INF) if v >= 0 else math.nextafter(v, -INF))]
                if col.type == pa.float32():
                    out.append(math.nextafter(v, INF))   # not a float32: test_float32_column_with_a_double_literal
    elif col.kind == "decimal":
        out += [D("0"), D("0.00"), D("1.5"), D("99999999.99"), D("1E+10"), 0, 2, 1.25, -0.5, INF, -INF, NAN,
                D("Infinity"), D("-Infinity")]
        for v in ends:
            out += [v + D("0.01"), v - D("0.01"), v + D("0.001"), v - D("0.005")]
            if v == int(v):
                out.append(int(v))
            if D(float(v)) == v:
                out.append(float(v))
    elif col.kind == "string":
        out += ["", "a", LONG_A[:16], LONG_A[:17], LONG_B, "\U0010ffff", MAX_CP_17]
        for v in ends:
            out += [v + "\x00", v + "z", v[:16], v[:15], v[:16] + "\U0010ffff"]
            if v:
                out.append(v[:-1] + chr(ord(v[-1]) + 1) if ord(v[-1]) < 0x10FFFF and
                           not 0xD7FF <= ord(v[-1]) < 0xE000 else v[:-1])
    elif col.kind == "binary":
        out += [b"", b"ab", b"\xff" * 21]
        for v in ends:
            out += [v + b"\x00", v[:-1]]
    elif col.kind == "bool":
        out += [True, False]
    elif col.kind == "date":
        out += [dt.date(1970, 1, 1), dt.date(2000, 1, 1)]
        for v in ends:
            out += [v + dt.timedelta(days=1) if v < dt.date.max else v,
                    v - dt.timedelta(days=1) if v > dt.date.min else v]
    elif col.kind == "time":
        out += [dt.time(0), dt.time(12), dt.time(23, 59, 59, 999999), dt.time(0, 0, 0, 1)]
        for v in ends:
            at = dt.datetime.combine(dt.date(2000, 1, 2), v)
            for step in (dt.timedelta(milliseconds=1), dt.timedelta(microseconds=500)):   # a finer time: inexact
                out += [(at + step).time(), (at - step).time()]
    elif col.kind in ("ts", "tstz"):
        tz = UTC if col.kind == "tstz" else None
        out += [dt.datetime(1970, 1, 1, tzinfo=tz), dt.datetime(2000, 1, 1, tzinfo=tz)]
        step = {"s": dt.timedelta(seconds=1), "ms": dt.timedelta(milliseconds=1)}.get(col.unit, dt.timedelta(microseconds=1))
        for v in ends:
            if dt.datetime(1, 1, 2, tzinfo=tz) < v < dt.datetime(9999, 12, 30, tzinfo=tz):
                out += [v + step, v - step]
                if col.unit in ("s", "ms"):  # test_millisecond_timestamp_with_a_microsecond_literal
                    out += [v + dt.timedelta(microseconds=500), v - dt.timedelta(microseconds=500)]
                if col.kind == "tstz":
                    out.append(v.astimezone(dt.timezone(dt.timedelta(hours=5, minutes=30))))
                    out.append(v.replace(tzinfo=None))   # naive: UTC
    return out


OPS = ["=", "==", "!=", "<", "<=", ">", ">=", "in", "not in", "is null", "is not null"]


def draw_term(data: st.DataObject, cols: dict[str, Col], present: dict[str, list]) -> tuple:
    name = data.draw(st.sampled_from(sorted(cols)), label="column")
    col = cols[name]
    op = data.draw(st.sampled_from(OPS if col.kind != "nested" else OPS[-2:]), label="op")
    if op in ("is null", "is not null"):
        return data.draw(st.sampled_from([(name, op), (name, op, None), (name, op.upper(), None)]))
    pool = candidates(col, present[name])
    ordered = sorted((v for v in present[name] if v is not None and v == v), key=lambda v: v)
    if ordered:   # half the literals at or next to the column's smallest and largest values
        pool = st.one_of(st.sampled_from(pool), st.sampled_from(candidates(col, [ordered[0], ordered[-1]])))
    else:
        pool = st.sampled_from(pool)
    if op in ("in", "not in"):
        lits = data.draw(st.lists(pool, min_size=0 if op == "in" else 1, max_size=4), label="list")
        if data.draw(st.booleans(), label="null in list"):
            lits.append(None)   # test_in_list_with_a_null_does_not_match_nulls
        return (name, data.draw(st.sampled_from([op, op.upper()])), lits)
    return (name, op, data.draw(st.one_of(pool, pool, pool, st.none()), label="literal"))   # `= null`: nothing


def draw_filter(data: st.DataObject, cols: dict[str, Col], present: dict[str, list]) -> list:
    shape = data.draw(st.sampled_from(["and", "and", "or"]), label="shape")
    if shape == "and":
        return [draw_term(data, cols, present) for _ in range(data.draw(st.integers(1, 3)))]
    return [[draw_term(data, cols, present) for _ in range(data.draw(st.integers(1, 2)))]
            for _ in range(data.draw(st.integers(2, 3)))]


# ---- tables ---------------------------------------------------------------------------------------
@dataclass
class Config:
    kind: str                 # append, append_fixed, pk, pk_dynamic, pk_dv, pk_cross
    engine: str
    partition: str | None     # None or a key of PARTITIONS
    columns: list[Col]
    options: dict[str, str]

    @property
    def pk(self) -> bool:
        return self.kind.startswith("pk")

    @property
    def primary_keys(self) -> list[str] | None:
        if not self.pk:
            return None
        return ["k"] if self.partition is None or self.kind == "pk_cross" else ["k", "p"]

    @property
    def all_columns(self) -> list[Col]:
        return [KEY] + ([PARTITIONS[self.partition]] if self.partition else []) + self.columns

    @property
    def filter_columns(self) -> list[Col]:
        """The columns filters take: a row-tracking table's `_ROW_ID` and `_SEQUENCE_NUMBER` too."""
        return self.all_columns + (TRACKING if self.options.get("row-tracking.enabled") == "true" else [])

    def schema(self) -> pa.Schema:
        return pa.schema([pa.field(c.name, c.type, nullable=not (self.pk and c.name in self.primary_keys))
                          for c in self.all_columns])


@st.composite
def configs(draw) -> Config:
    kind = draw(st.sampled_from(["append", "append_fixed", "pk", "pk_dynamic", "pk_dv", "pk_cross"]))
    engine = "deduplicate"
    if kind in ("pk", "pk_dv"):
        engine = draw(st.sampled_from(["deduplicate", "deduplicate", "partial-update", "aggregation"]
                                      + (["first-row"] if kind == "pk" else [])))  # first-row refuses DV
    partition = draw(st.sampled_from(["str", "int", "str", "int", "dbl", "date", "bool", "dec", "ts"]))
    if kind != "pk_cross" and draw(st.integers(0, 2)) == 0:
        partition = None
    columns = draw(st.lists(st.sampled_from(VALUE_COLUMNS), min_size=1, max_size=4, unique_by=lambda c: c.name))
    options: dict[str, str] = {}
    if kind == "append_fixed":
        options.update({"bucket": draw(st.sampled_from(["1", "2", "5"])), "bucket-key": "k"})
    elif kind in ("pk", "pk_dv"):
        options["bucket"] = draw(st.sampled_from(["1", "2", "5"]))
    elif kind == "pk_dynamic":
        options.update({"bucket": "-1", "dynamic-bucket.target-row-num": draw(st.sampled_from(["2", "100"]))})
    elif kind == "pk_cross":
        options["bucket"] = "-1"
    if kind == "pk_dv":
        options["deletion-vectors.enabled"] = "true"
    if engine != "deduplicate":
        options["merge-engine"] = engine
    modes = [None, "none", "counts", "full", "truncate(16)", "truncate(3)"]
    mode = draw(st.sampled_from(modes))
    if mode is not None:
        options["metadata.stats-mode"] = mode
    names = ["k"] + (["p"] if partition else []) + [c.name for c in columns]
    for n in draw(st.lists(st.sampled_from(names), unique=True, max_size=2)):
        options[f"fields.{n}.stats-mode"] = draw(st.sampled_from(modes[1:]))
    if draw(st.integers(0, 5)) == 0:
        options["metadata.stats-keep-first-n-columns"] = str(draw(st.integers(0, 3)))
    if draw(st.integers(0, 5)) == 0:
        options["metadata.stats-dense-store"] = "false"
    if kind.startswith("pk") and draw(st.integers(0, 3)) == 0:
        options["metadata.stats-mode.per.level"] = draw(st.sampled_from(["0:none", "0:full,5:none", "0:counts,1:full"]))
    options["file.format"] = draw(st.sampled_from(["parquet", "parquet", "orc"]))
    if draw(st.integers(0, 3)) == 0:   # small manifests, merged often: partition statistics per manifest
        options.update({"manifest.target-file-size": "1 kb", "manifest.merge-min-count": "2"})
    if kind.startswith("append") and draw(st.booleans()):
        options["target-file-size"] = draw(st.sampled_from(["1 kb", "4 kb"]))
    if kind == "append" and draw(st.integers(0, 3)) == 0:
        options["row-tracking.enabled"] = "true"
        if draw(st.booleans()):
            options["data-evolution.enabled"] = "true"
    by_kind: dict[str, list[str]] = {}
    indexed = columns + [KEY] + ([PARTITIONS[partition]] if partition else [])
    for c in indexed:
        if not c.indexes:
            continue
        for k in draw(st.lists(st.sampled_from(c.indexes), unique=True, max_size=2 if c in columns else 1)):
            by_kind.setdefault(k, []).append(c.name)
    for k, names in by_kind.items():
        options[f"file-index.{k}.columns"] = ",".join(names)
        for n in names:
            if k == "bloom-filter":
                options[f"file-index.bloom-filter.{n}.items"] = draw(st.sampled_from(["8", "64"]))
            elif k == "bitmap":
                if draw(st.booleans()):
                    options[f"file-index.bitmap.{n}.version"] = "1"
                elif draw(st.booleans()):
                    options[f"file-index.bitmap.{n}.index-block-size"] = "256 b"
            elif k == "range-bitmap" and draw(st.booleans()):
                options[f"file-index.range-bitmap.{n}.chunk-size"] = "64 b"
    if by_kind and draw(st.integers(0, 2)) == 0:
        options["metadata.stats-mode"] = "none"   # the indexes alone prune
    if by_kind:
        options["file-index.in-manifest-threshold"] = draw(st.sampled_from(["500 b", "1 b", "64 kb"]))
        if draw(st.integers(0, 9)) == 0:
            options["file-index.read.enabled"] = "false"
    return Config(kind, engine, partition, columns, options)


def rows_of(cfg: Config) -> st.SearchStrategy:
    """One batch: rows (dicts) with their row kinds."""
    fields = {}
    for c in cfg.all_columns:
        nullable = not (cfg.pk and c.name in cfg.primary_keys)
        if c.name == "k" and not cfg.pk:
            fields[c.name] = st.one_of(st.none(), st.integers(-3, 10))
        elif c.name == "p" and nullable:
            fields[c.name] = st.one_of(st.none(), c.values, c.values)
        else:
            values = c.values
            if c.kind in ("ts", "tstz") and cfg.options.get("file.format") == "orc":
                # pyarrow's ORC reader holds nanoseconds: ORC files take 1677-2262 only, and before
                # 1970 no digits below the millisecond, which Java cannot read from pyarrow's ORC
                # (README; tests/test_datafile.py test_orc_timestamps_beyond_nanoseconds_are_refused)
                values = values.map(_orc_writable)
            fields[c.name] = st.one_of(st.none(), values, values, values) if nullable else values
    kinds = st.sampled_from(["+I", "+I", "+U", "-D"]) if cfg.pk and cfg.engine == "deduplicate" else st.just("+I")
    return st.lists(st.tuples(st.fixed_dictionaries(fields), kinds), max_size=12)


def _orc_writable(t: dt.datetime) -> dt.datetime:
    t = t if 1700 <= t.year <= 2200 else t.replace(year=2000)
    return t.replace(microsecond=t.microsecond // 1000 * 1000) if t.year < 1970 else t


def model(cfg: Config, batches: list[list[tuple[dict, str]]], overwrites: list[bool] | None = None) -> list[dict]:
    """The table's rows after the batches (an overwrite replaces the whole table), by the merge
    engine's rules."""
    overwrites = overwrites or [False] * len(batches)
    if not cfg.pk:
        rows: list[dict] = []
        for batch, overwrite in zip(batches, overwrites):
            rows = [r for r, _ in batch] + ([] if overwrite else rows)
        return rows
    state: dict[tuple, dict] = {}
    for batch, overwrite in zip(batches, overwrites):
        if overwrite:
            state = {}
        for row, kind in batch:
            # keys by their bits, as Paimon's BinaryRow: partitions 0.0 and -0.0 differ, NaN is one key
            key = tuple(_canon(row[k]) for k in cfg.primary_keys)
            if kind == "-D":
                state.pop(key, None)
            elif cfg.engine == "first-row":
                state.setdefault(key, row)
            elif cfg.engine in ("partial-update", "aggregation") and key in state:   # last_non_null_value
                old = state[key]
                state[key] = {n: (row[n] if row[n] is not None else old[n]) for n in row}
            else:
                state[key] = row
    return list(state.values())


def build_table(cfg: Config, batches: list, compactions: list[str],
                overwrites: list[bool] | None = None) -> tuple[Any, str, list[int]]:
    warehouse = tempfile.mkdtemp(prefix="filter-diff-")
    try:
        return _build_table(cfg, batches, compactions, overwrites, warehouse)
    except BaseException:
        shutil.rmtree(warehouse, ignore_errors=True)
        raise


def _build_table(cfg: Config, batches: list, compactions: list[str], overwrites: list[bool] | None,
                 warehouse: str) -> tuple[Any, str, list[int]]:
    t = ps.Catalog(warehouse).create_table("db.t", cfg.schema(), primary_keys=cfg.primary_keys,
                                           partition_keys=["p"] if cfg.partition else None, options=cfg.options)
    schema = cfg.schema()
    snapshots = []
    for batch, compaction, overwrite in zip(batches, compactions, overwrites or [False] * len(batches)):
        if batch or overwrite:
            data = pa.table({f.name: pa.array([r[f.name] for r, _ in batch], f.type) for f in schema}, schema=schema)
            if cfg.pk and cfg.engine == "deduplicate":
                data = data.append_column("_kind", pa.array([k for _, k in batch], pa.string()))
                sid = t.write_arrow(data, row_kind_column="_kind", overwrite=overwrite)
            else:
                sid = t.write_arrow(data, overwrite=overwrite)
            if sid is not None:
                snapshots.append(sid)
        if compaction != "none":
            sid = t.compact(full=compaction == "full")
            if sid is not None:
                snapshots.append(sid)
    return t, warehouse, snapshots


_NATURAL = {"int": (int,), "float": (float,), "decimal": (D,), "string": (str,), "binary": (bytes,),
            "bool": (bool,), "date": (dt.date,), "ts": (dt.datetime,), "tstz": (dt.datetime,), "time": (dt.time,),
            "nested": ()}


def _natural(col: Col, lit: Any) -> bool:
    """Whether a literal is of the column's own Python type (a naive datetime for TIMESTAMP, an
    aware one for TIMESTAMP WITH TIME ZONE)."""
    if lit is None:
        return True
    if isinstance(lit, bool) != (col.kind == "bool") or not isinstance(lit, _NATURAL[col.kind]):
        return False
    if col.kind in ("ts", "tstz"):
        return (lit.tzinfo is not None) == (col.kind == "tstz")
    return not (col.kind == "date" and isinstance(lit, dt.datetime))


def cross_typed(cols: dict[str, Col], flt: list) -> bool:
    """Whether a filter has a literal of another Python type than its column's."""
    groups = [flt] if isinstance(flt[0], tuple) else flt
    for g in groups:
        for t in g:
            lits = (t[2] if t[1].lower() in ("in", "not in") else [t[2]]) if len(t) == 3 else []
            if not all(_natural(cols[t[0]], x) for x in lits):
                return True
    return False


REFUSED: list[tuple[list, str]] = []   # filters the project refused (exploration: printed with -s)


def check_filter(t, cfg: Config, flt: list, unfiltered: pa.Table, snapshot_id: int | None = None,
                 columns: list[str] | None = None) -> None:
    cols = {c.name: c for c in cfg.filter_columns}
    names = [c.name for c in cfg.filter_columns]
    rows = unfiltered.to_pylist()
    expected = [r for r in rows if filter_holds(cols, r, flt)]
    if columns is None and len(names) > len(cfg.all_columns):
        columns = names   # row-tracking columns are read when asked for
    try:
        got = t.to_arrow(filter=flt, snapshot_id=snapshot_id, columns=columns)
    except Exception as exc:  # an error is no wrong answer, but only a literal of another type may cause one
        if not cross_typed(cols, flt):
            raise
        REFUSED.append((flt, f"{type(exc).__name__}: {exc}"))
        if os.environ.get("PAIMON_FILTER_DIFF_LOG") == "1":
            print(f"refused {flt!r}: {type(exc).__name__}: {exc}")
        return
    shown = columns or names
    want, have = canon_rows(expected, shown), canon_rows(got.to_pylist(), shown)
    if want != have:
        missing = [r for r in want if r not in have]
        extra = [r for r in have if r not in want]
        raise AssertionError(
            f"filter {flt!r} (snapshot {snapshot_id}, columns {columns}) on a {cfg.kind} table "
            f"(engine {cfg.engine}, partition {cfg.partition}, options {cfg.options}):\n"
            f"  missing rows {missing}\n  extra rows {extra}\n  of {len(rows)} rows {rows}")


# ---- the property -------------------------------------------------------------------------------
@settings(max_examples=MAX_EXAMPLES, deadline=None, database=None, phases=PHASES,
          suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large, HealthCheck.large_base_example])
@given(data=st.data())
def test_filtered_read_is_the_filtered_unfiltered_read(data):
    cfg = data.draw(configs(), label="config")
    n = data.draw(st.integers(1, 4), label="commits")
    batches = [data.draw(rows_of(cfg), label=f"batch {i}") for i in range(n)]
    compactions = [data.draw(st.sampled_from(["none", "none", "none", "compact", "full"]), label="compaction")
                   for _ in range(n)]
    overwrites = [i > 0 and data.draw(st.integers(0, 7), label="overwrite") == 0 for i in range(n)]
    batches = [[(r, "+I") for r, _ in b] if o else b for b, o in zip(batches, overwrites)]
    t, warehouse, snapshots = build_table(cfg, batches, compactions, overwrites)
    try:
        base = [c.name for c in cfg.all_columns]
        names = [c.name for c in cfg.filter_columns]
        unfiltered = t.to_arrow(columns=names)
        # the unfiltered read itself: every version of a row but the newest is gone
        assert canon_rows(unfiltered.to_pylist(), base) == canon_rows(model(cfg, batches, overwrites), base), \
            f"unfiltered read of {cfg} after {batches} with compactions {compactions}, overwrites {overwrites}"
        present = {c: unfiltered.column(c).to_pylist() for c in names}
        cols = {c.name: c for c in cfg.filter_columns}
        for _ in range(14):
            flt = draw_filter(data, cols, present)
            columns = None
            if data.draw(st.integers(0, 4), label="project") == 0:
                columns = data.draw(st.lists(st.sampled_from(names), min_size=1, unique=True), label="columns")
            check_filter(t, cfg, flt, unfiltered, columns=columns)
        if len(snapshots) > 1:   # an older snapshot: filters never mix versions either
            old = data.draw(st.sampled_from(snapshots[:-1]), label="old snapshot")
            old_rows = t.to_arrow(snapshot_id=old, columns=names)
            old_present = {c: old_rows.column(c).to_pylist() for c in names}
            for _ in range(4):
                check_filter(t, cfg, draw_filter(data, cols, old_present), old_rows, snapshot_id=old)
    finally:
        shutil.rmtree(warehouse, ignore_errors=True)


# ---- bulk files: many rows and distinct values per file (Roaring containers, index blocks) -------
def _bulk_value(col: Col, rng, orc: bool) -> Any:
    if rng.random() < 0.1:
        return None
    if col.kind == "int":
        return rng.choice([rng.randint(col.lo, col.hi), max(col.lo, min(col.hi, rng.randint(-3000, 3000))),
                           rng.randint(-3, 3)])
    if col.kind == "float":
        x = rng.choice([rng.uniform(-1e3, 1e3), rng.randint(-50, 50) / 4, rng.choice([0.0, -0.0, NAN, INF, -INF])])
        return _f32(x) if col.type == pa.float32() else x
    if col.kind == "decimal":
        return D(rng.randint(-10**6, 10**6)).scaleb(-2)
    if col.kind in ("string", "binary"):
        text = rng.choice([f"user-{rng.randint(0, 3000):05d}@example.com", rng.choice(STRINGS),
                           "".join(rng.choice("abé😀") for _ in range(rng.randint(0, 5)))])
        return text if col.kind == "string" else text.encode()
    if col.kind == "bool":
        return rng.random() < 0.5
    if col.kind == "time":
        return (dt.datetime(2000, 1, 1) + dt.timedelta(milliseconds=rng.randrange(86_400_000))).time()
    if col.kind == "nested":
        a = rng.choice([None, rng.randint(-3, 3)])
        return [a, rng.randint(0, 9)][:rng.randint(0, 2)] if col.name == "lst" else {"a": a}
    if col.kind == "date":
        return dt.date(1970, 1, 1) + dt.timedelta(days=rng.randint(-20000, 20000))
    step = {"s": 10**6, "ms": 1000}.get(col.unit, 1)
    micros = rng.randint(-2 * 10**15, 2 * 10**15)
    step = max(step, 1000) if orc and micros < 0 else step   # ORC: no digits below the ms before 1970
    t = dt.datetime(1970, 1, 1) + dt.timedelta(microseconds=micros // step * step)
    return t.replace(tzinfo=UTC) if col.kind == "tstz" else t


@settings(max_examples=max(2, MAX_EXAMPLES // 4), deadline=None, database=None, phases=PHASES,
          suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large, HealthCheck.large_base_example])
@given(data=st.data())
def test_bulk_files_filtered_read(data):
    import random
    cfg = data.draw(configs(), label="config")
    for key in list(cfg.options):   # indexes sized for thousands of rows, in several blocks / chunks
        if key.endswith(".items"):
            cfg.options[key] = "2000"
        elif key.endswith(".index-block-size") or key.endswith(".chunk-size"):
            cfg.options[key] = "1 kb"
    cfg.options.pop("target-file-size", None)
    if "dynamic-bucket.target-row-num" in cfg.options:
        cfg.options["dynamic-bucket.target-row-num"] = "1000"   # not a bucket per two keys
    rng = random.Random(data.draw(st.integers(0, 2**32), label="seed"))
    kinds = ["+I", "+I", "+I", "-D"] if cfg.pk and cfg.engine == "deduplicate" else ["+I"]
    partitions = data.draw(st.lists(PARTITIONS[cfg.partition].values, min_size=1, max_size=3), label="partitions") \
        if cfg.partition else []
    batches = []
    for _ in range(data.draw(st.integers(1, 2), label="commits")):
        batch = []
        for _ in range(rng.randint(500, 2500)):
            row = {c.name: _bulk_value(c, rng, cfg.options.get("file.format") == "orc") for c in cfg.columns}
            row["k"] = rng.randint(0, 3000)
            if cfg.partition:
                nullable = not (cfg.pk and cfg.kind != "pk_cross")
                row["p"] = rng.choice(partitions + [None] if nullable else partitions)
            batch.append((row, rng.choice(kinds)))
        batches.append(batch)
    compactions = [data.draw(st.sampled_from(["none", "compact", "full"]), label="compaction") for _ in batches]
    import time
    t0 = time.time()
    t, warehouse, _ = build_table(cfg, batches, compactions)
    t1 = time.time()
    try:
        base = [c.name for c in cfg.all_columns]
        names = [c.name for c in cfg.filter_columns]
        unfiltered = t.to_arrow(columns=names)
        assert canon_rows(unfiltered.to_pylist(), base) == canon_rows(model(cfg, batches), base), cfg
        t2 = time.time()
        present = {c: unfiltered.column(c).to_pylist() for c in names}
        cols = {c.name: c for c in cfg.filter_columns}
        for _ in range(10):
            check_filter(t, cfg, draw_filter(data, cols, present), unfiltered)
        t3 = time.time()
        if os.environ.get("PAIMON_FILTER_DIFF_LOG") == "1":
            print(f"TIMING build {t1-t0:.2f} model {t2-t1:.2f} filters {t3-t2:.2f} rows {sum(map(len, batches))} {cfg.kind} {cfg.engine} {cfg.partition} {[c.name for c in cfg.columns]} {compactions} {cfg.options}")
    finally:
        shutil.rmtree(warehouse, ignore_errors=True)


# ---- schema changes between commits: old files' statistics and indexes by field id ------------
_DEC_6_2 = st.decimals(min_value=D("-9999.99"), max_value=D("9999.99"), places=2, allow_nan=False,
                       allow_infinity=False).map(lambda d: d if d != 0 else D("0.00"))
_EVOLVING = {   # name -> (column as created, column after its change)
    "a": (Col("a", pa.int32(), "int", _ints(-2**31, 2**31 - 1), -2**31, 2**31 - 1),
          Col("b", pa.int64(), "int", _ints(-2**63, 2**63 - 1), -2**63, 2**63 - 1)),          # renamed, widened
    "f": (Col("f", pa.float32(), "float", _F32), Col("f", pa.float64(), "float", _F64)),
    "dec": (Col("dec", pa.decimal128(6, 2), "decimal", _DEC_6_2),
            Col("dec", pa.decimal128(12, 4), "decimal",
                st.one_of(_DEC_6_2, st.decimals(min_value=D("-99999999.9999"), max_value=D("99999999.9999"),
                                                places=4, allow_nan=False, allow_infinity=False))
                .map(lambda d: d.quantize(D("0.0001")) if d != 0 else D("0.0000")))),
    "x": (Col("x", pa.int16(), "int", _ints(-2**15, 2**15 - 1), -2**15, 2**15 - 1),
          Col("x", pa.string(), "string", _STR)),                           # dropped, added again (as a STRING)
    "y": (Col("y", pa.int16(), "int", _ints(-2**15, 2**15 - 1), -2**15, 2**15 - 1),
          Col("y", pa.int16(), "int", _ints(-2**15, 2**15 - 1), -2**15, 2**15 - 1)),  # ... of the same type
    "n": (None, Col("n", pa.int32(), "int", _ints(-2**31, 2**31 - 1), -2**31, 2**31 - 1)),       # added
}


@settings(max_examples=max(2, MAX_EXAMPLES // 3), deadline=None, database=None, phases=PHASES,
          suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large, HealthCheck.large_base_example])
@given(data=st.data())
def test_filters_across_schema_changes(data):
    kind = data.draw(st.sampled_from(["append", "append", "pk", "pk_dv"]), label="kind")   # pk: keys prune only
    changes = data.draw(st.lists(st.sampled_from(sorted(_EVOLVING)), unique=True, min_size=1), label="changes")
    at = {c: data.draw(st.integers(1, 2), label=f"before write of {c}") for c in changes}   # changed before write 1 or 2
    current = {name: cols[0] for name, cols in _EVOLVING.items() if cols[0] is not None}
    options = {"file.format": data.draw(st.sampled_from(["parquet", "orc"]), label="format")}
    if kind != "append":
        options["bucket"] = "1"
    if kind == "pk_dv":
        options["deletion-vectors.enabled"] = "true"
    mode = data.draw(st.sampled_from([None, "full", "counts", "none"]), label="stats")
    if mode:
        options["metadata.stats-mode"] = mode
    for name in ("a", "f", "dec", "x", "y"):   # indexes on columns that keep their name (options name columns)
        col = current[name]
        if (name in ("a", "x", "y") and name in changes) or not data.draw(st.booleans(), label=f"index {name}"):
            continue
        index = data.draw(st.sampled_from(col.indexes), label=f"index kind {name}")
        options[f"file-index.{index}.columns"] = ",".join(
            filter(None, [options.get(f"file-index.{index}.columns"), name]))
        if index == "bloom-filter":
            options[f"file-index.bloom-filter.{name}.items"] = "64"
    pk = kind != "append"
    key = Col("k", pa.int64(), "int", st.integers(0, 7), -2**63, 2**63 - 1)
    schema = pa.schema([pa.field("k", pa.int64(), nullable=not pk)] + [pa.field(c.name, c.type) for c in current.values()])
    warehouse = tempfile.mkdtemp(prefix="filter-diff-")
    try:
        cat = ps.Catalog(warehouse)
        t = cat.create_table("db.t", schema, primary_keys=["k"] if pk else None, options=options)
        rows: dict[Any, dict] | list[dict] = {} if pk else []
        for write in range(3):
            for name in [c for c in changes if at[c] == write]:
                old, new = _EVOLVING[name]
                with t.update_schema() as update:
                    if name == "a":
                        update.rename_column("a", "b")
                        update.update_column("b", pa.int64())
                    elif name in ("x", "y"):
                        update.drop_column(name)
                    elif name == "n":
                        update.add_column("n", pa.int32())
                    else:
                        update.update_column(name, new.type)
                if name in ("x", "y"):   # added again as another column (a new field id)
                    with t.update_schema() as update:
                        update.add_column(name, new.type)
                t = cat.get_table("db.t")
                current.pop(old.name if old else name, None)
                current[new.name] = new
                for r in (rows.values() if pk else rows):
                    value = r.pop(old.name, None) if old else None
                    if name == "dec" and value is not None:
                        value = value.quantize(D("0.0001"))
                    r[new.name] = None if name in ("x", "y", "n") else value
            batch = data.draw(st.lists(st.fixed_dictionaries(
                {"k": key.values if pk else st.one_of(st.none(), key.values),
                 **{c.name: st.one_of(st.none(), c.values, c.values, c.values) for c in current.values()}}),
                max_size=8), label=f"write {write}")
            if batch:
                schema = t.arrow_schema()
                t.write_arrow(pa.table({f.name: pa.array([r[f.name] for r in batch], f.type) for f in schema},
                                       schema=schema))
                for r in batch:
                    r = dict(r)
                    if name_dec := current.get("dec"):
                        if r["dec"] is not None and name_dec.type.scale == 4:
                            r["dec"] = r["dec"].quantize(D("0.0001"))
                    if pk:
                        rows[r["k"]] = r
                    else:
                        rows.append(r)
        cfg = Config(kind, "deduplicate", None, list(current.values()), options)
        cfg_cols = {c.name: c for c in [key, *current.values()]}
        names = list(cfg_cols)
        unfiltered = t.to_arrow()
        assert canon_rows(unfiltered.to_pylist(), names) == \
            canon_rows(list(rows.values()) if pk else rows, names), (changes, at, options)
        present = {c: unfiltered.column(c).to_pylist() for c in names}
        for _ in range(10):
            check_filter(t, cfg, draw_filter(data, cfg_cols, present), unfiltered)
    finally:
        shutil.rmtree(warehouse, ignore_errors=True)


# ---- focused tests of edges that hold ----------------------------------------------------------
@pytest.fixture
def wh(tmp_path):
    return ps.Catalog(str(tmp_path / "wh"))


def _table(cat, schema, batches, **kw):
    t = cat.create_table("db.t", schema, **kw)
    for b in batches:
        t.write_arrow(pa.table(b, schema=schema))
    return t


def _reprs(values) -> list[str]:
    """Values as sorted reprs (NaN compares equal to NaN, -0.0 differs from 0.0)."""
    return sorted(repr(v) for v in values)


def _rows(t, flt, col) -> list[str]:
    return _reprs(r[col] for r in t.to_arrow(filter=flt).to_pylist())


def test_float_edges_one_value_per_file(wh):
    """Each file holds one edge value, so its statistics are that value (or none for NaN)."""
    schema = pa.schema([("f", pa.float64())])
    values = [0.0, -0.0, NAN, INF, -INF, None, 5e-324, -5e-324]
    t = _table(wh, schema, [{"f": [v]} for v in values], options={"metadata.stats-mode": "full"})
    col = Col("f", pa.float64(), "float", _F64)
    for op in ["=", "!=", "<", "<=", ">", ">="]:
        for lit in [0.0, -0.0, 0, NAN, INF, -INF, 5e-324, -1]:
            flt = [("f", op, lit)]
            expected = _reprs(v for v in values if term_holds(col, v, op, lit))
            assert _rows(t, flt, "f") == expected, flt


def test_truncated_string_statistics(wh):
    """Strings longer than 16 code points have truncated min/max statistics (the max rounded up,
    or unknown when it cannot be)."""
    schema = pa.schema([("s", pa.string())])
    files = [[LONG_A], [LONG_B], [LONG_16], [LONG_17], [MAX_CP_17], ["\U0010ffff" * 16], [LONG_A, LONG_B]]
    t = _table(wh, schema, [{"s": f} for f in files])
    values = [v for f in files for v in f]
    col = Col("s", pa.string(), "string", _STR)
    for lit in [LONG_A, LONG_B, LONG_16, LONG_17, LONG_A[:16], LONG_A[:17], MAX_CP_17, "\U0010ffff" * 16,
                "\U0010ffff" * 18, "shared-prefix-0123456789-alphb"]:
        for op in ["=", "!=", "<", "<=", ">", ">="]:
            expected = _reprs(v for v in values if term_holds(col, v, op, lit))
            assert _rows(t, [("s", op, lit)], "s") == expected, (op, lit)


def test_null_partition_values(wh):
    schema = pa.schema([("p", pa.string()), ("v", pa.int32())])
    t = _table(wh, schema, [{"p": [None, "a"], "v": [1, 2]}, {"p": [None, "b"], "v": [3, None]}],
               partition_keys=["p"])
    assert _rows(t, [("p", "is null")], "v") == _reprs([1, 3])
    assert _rows(t, [("p", "is not null")], "v") == _reprs([2, None])
    assert _rows(t, [("p", "!=", "a")], "v") == _reprs([None])
    assert _rows(t, [("p", "<", "b")], "v") == _reprs([2])
    assert _rows(t, [[("p", "is null"), ("v", ">", 1)], [("p", "=", "b")]], "v") == _reprs([3, None])


def test_updates_never_resurrect_old_versions(wh):
    """A primary-key table read merged: a filter matching only an old version of a row (or a
    deleted row) returns nothing for it."""
    schema = pa.schema([("k", pa.int64(), False), ("v", pa.int32())])
    for i, options in enumerate([{"bucket": "1"}, {"bucket": "1", "deletion-vectors.enabled": "true"}, {"bucket": "-1"}]):
        t = wh.create_table(f"db.t{i}", schema, primary_keys=["k"], options=options)
        t.write_arrow(pa.table({"k": [1, 2, 3], "v": [10, 20, 30]}, schema=schema))
        t.write_arrow(pa.table({"k": [1, 2], "v": [11, 21]}, schema=schema))
        t.write_arrow(pa.table({"k": [3], "v": [30], "_kind": ["-D"]}), row_kind_column="_kind")
        assert t.to_arrow(filter=[("v", "=", 10)]).num_rows == 0, options
        assert t.to_arrow(filter=[("v", "<", 21)]).to_pylist() == [{"k": 1, "v": 11}], options
        assert t.to_arrow(filter=[("v", "=", 30)]).num_rows == 0, options
        assert t.to_arrow(filter=[("v", "in", [10, 20, 30])]).num_rows == 0, options


def test_filters_after_schema_evolution(wh):
    """Old files' statistics and indexes are matched by field id: a renamed and widened column
    prunes by its old statistics, a dropped and re-added column (a new id) is null in old files,
    a new column named as an old one before its rename holds nothing of it."""
    schema = pa.schema([("k", pa.int64()), ("a", pa.int32()), ("x", pa.string()), ("f", pa.float32()),
                        ("dec", pa.decimal128(6, 2))])
    t = wh.create_table("db.t", schema, options={"file-index.bitmap.columns": "k", "file-index.bsi.columns": "dec",
                                                 "file-index.range-bitmap.columns": "f,dec"})
    t.write_arrow(pa.table({"k": [1, 2], "a": [5, 6], "x": ["old", "old2"], "f": [1.5, 2.5],
                           "dec": [D("1.25"), D("2.00")]}, schema=schema))
    with t.update_schema() as u:
        u.rename_column("a", "b")
        u.update_column("b", pa.int64())
        u.update_column("f", pa.float64())
        u.update_column("dec", "DECIMAL(12, 4)")
    with t.update_schema() as u:
        u.drop_column("x")
    with t.update_schema() as u:
        u.add_column("x", pa.string())
        u.add_column("a", pa.int32())
    t = wh.get_table("db.t")
    t.write_arrow(pa.table({"k": [3], "b": [7], "f": [3.5], "dec": [D("1.2500")], "x": ["new"], "a": [5]},
                           schema=t.arrow_schema()))
    cases = {("x", "is null"): [1, 2], ("x", "=", "old"): [], ("x", "!=", "new"): [], ("a", "=", 5): [3],
             ("a", "is null"): [1, 2], ("b", "=", 5): [1], ("b", ">", 2**40): [], ("b", "in", (5, 2**40)): [1],
             ("f", "=", 1.5): [1], ("f", "<", 2.0): [1], ("f", ">=", 2.5): [2, 3], ("dec", "=", D("1.25")): [1, 3],
             ("dec", "in", (D("1.25"),)): [1, 3], ("dec", ">", D("1.2499")): [1, 2, 3], ("dec", "=", D("1.2501")): [],
             ("dec", "<", 2): [1, 3]}
    for term, keys in cases.items():
        assert sorted(r["k"] for r in t.to_arrow(filter=[term]).to_pylist()) == keys, term


# ---- regression tests of bugs found by the property ------------------------------------------
def test_fractional_float_literal_on_an_integer_column(wh):
    """`i = 2.5` matches no integer, `i < 2.5` holds for 2. predicate._typed converts the literal
    with pa.scalar(2.5, type=int64), which truncates it to 2 silently (in lists: pa.array does the
    same), while min/max pruning compares 2.5 exactly, so the answer depends on the files."""
    schema = pa.schema([("i", pa.int64())])
    t = _table(wh, schema, [{"i": [1, 2, 3]}])
    assert _rows(t, [("i", "=", 2.5)], "i") == _reprs([])
    assert _rows(t, [("i", "<", 2.5)], "i") == _reprs([1, 2])
    assert _rows(t, [("i", ">=", 2.5)], "i") == _reprs([3])
    assert _rows(t, [("i", "in", [2.5])], "i") == _reprs([])
    assert _rows(t, [("i", "<", D("2.5"))], "i") == _reprs([1, 2])
    assert _rows(t, [("i", "<=", 2.5), ("i", ">", 1.5)], "i") == _reprs([2])


def test_integral_float_literal_beyond_2_to_53(wh):
    """2**53 + 1 > 2.0**53 (an integral float, converted exactly to the BIGINT 2**53 for the row
    filter). predicate.compare_values compares an int with a float as float(int), which rounds
    2**53 + 1 to 2**53, so min/max (and partition) pruning drops a file whose max is 2**53 + 1:
    the row comes back from a file that also holds 2**60 and not from one that holds it alone."""
    schema = pa.schema([("i", pa.int64())])
    t = _table(wh, schema, [{"i": [2**53 + 1]}, {"i": [2**53 + 1, 2**60]}])
    assert _rows(t, [("i", ">", float(2**53))], "i") == _reprs([2**53 + 1, 2**53 + 1, 2**60])
    pschema = pa.schema([("p", pa.int64()), ("v", pa.int32())])
    u = wh.create_table("db.u", pschema, partition_keys=["p"])
    u.write_arrow(pa.table({"p": [2**53 + 1, 2**60], "v": [1, 2]}, schema=pschema))
    assert _rows(u, [("p", ">", float(2**53))], "v") == _reprs([1, 2])


def test_not_in_excludes_nulls(wh):
    """`v not in (1)` is not true for a null v (SQL); the row filter is ~isin, which keeps nulls,
    while statistics prune a file of nulls only: the same rows come back or not by file layout."""
    schema = pa.schema([("v", pa.int64())])
    t = _table(wh, schema, [{"v": [1, 2, None]}, {"v": [None]}])
    assert _rows(t, [("v", "not in", [1])], "v") == _reprs([2])


def test_in_list_with_a_null_does_not_match_nulls(wh):
    """`v in (1, null)` holds for v = 1 only: a null never equals anything (Arrow's is_in with
    its default skip_nulls=False matches null to null)."""
    schema = pa.schema([("v", pa.int64())])
    t = _table(wh, schema, [{"v": [1, 2, None]}])
    assert _rows(t, [("v", "in", [1, None])], "v") == _reprs([1])
    assert _rows(t, [("v", "not in", [1, None])], "v") == _reprs([])


def test_in_on_floats_agrees_with_equality(wh):
    """`f in (0.0)` is `f = 0.0`, which holds for -0.0, and `f in (nan)` is `f = nan`, which holds
    for nothing: Arrow's is_in compares floats by their bits (-0.0 differs from 0.0, NaN is NaN),
    unlike its `=` (IEEE) that the project uses for `=`."""
    schema = pa.schema([("f", pa.float64())])
    t = _table(wh, schema, [{"f": [0.0, -0.0, NAN, 1.0]}])
    assert _rows(t, [("f", "=", 0.0)], "f") == _reprs([-0.0, 0.0])
    assert _rows(t, [("f", "in", [0.0])], "f") == _reprs([-0.0, 0.0])
    assert _rows(t, [("f", "not in", [0.0])], "f") == _reprs([1.0, NAN])
    assert _rows(t, [("f", "=", NAN)], "f") == _reprs([])
    assert _rows(t, [("f", "in", [NAN])], "f") == _reprs([])


def test_millisecond_timestamp_with_a_microsecond_literal(wh):
    """A TIMESTAMP(3) value 00:00:00.001 is below 00:00:00.0015: pa.scalar(literal,
    timestamp('ms')) truncates the literal to .001 silently, so `<` misses the row (and, without
    statistics to prune, `>=` and `=` match it)."""
    schema = pa.schema([("ts", pa.timestamp("ms"))])
    one_ms, lit = dt.datetime(2020, 1, 1, 0, 0, 0, 1000), dt.datetime(2020, 1, 1, 0, 0, 0, 1500)
    t = _table(wh, schema, [{"ts": [one_ms]}])
    assert _rows(t, [("ts", "<", lit)], "ts") == _reprs([one_ms])
    assert _rows(t, [("ts", "<=", lit)], "ts") == _reprs([one_ms])
    u = wh.create_table("db.u", schema, options={"metadata.stats-mode": "none"})
    u.write_arrow(pa.table({"ts": [one_ms]}, schema=schema))
    assert _rows(u, [("ts", "=", lit)], "ts") == _reprs([])
    assert _rows(u, [("ts", ">=", lit)], "ts") == _reprs([])


def test_decimal_in_list_with_finer_or_wider_values(wh):
    """Not a wrong row set but a failed read of a valid filter: `dec in (0.001, 0.00)` on a
    DECIMAL(10, 2) column raises ArrowInvalid ("Decimal value does not fit in precision 3"),
    `dec in (1E+10)` "Rescaling Decimal value would cause data loss", depending on the rows.
    predicate._term_expr hands such lists to Arrow's is_in, which casts the column to the list's
    inferred decimal type; `=` with the same values widens both sides (predicate._typed)."""
    schema = pa.schema([("v", pa.decimal128(10, 2))])
    t = _table(wh, schema, [{"v": [D("0.00"), D("1.25"), None]}])
    assert _rows(t, [("v", "=", D("0.001"))], "v") == _reprs([])   # holds
    assert _rows(t, [("v", "in", [D("0.001"), D("0.00")])], "v") == _reprs([D("0.00")])
    assert _rows(t, [("v", "in", [D("1E+10")])], "v") == _reprs([])
    assert _rows(t, [("v", "not in", [D("1.5"), D("123456789012")])], "v") == _reprs([D("0.00"), D("1.25")])


def test_decimal_column_with_an_infinite_or_nan_literal(wh):
    """Every DECIMAL is below +inf and NaN orders with nothing. predicate._comparison takes an
    infinite or NaN float (or Decimal) against a DECIMAL column for a literal with more digits than
    the column and reads its exponent ('F' / 'n'): TypeError "bad operand type for unary -"."""
    schema = pa.schema([("v", pa.decimal128(10, 2))])
    t = _table(wh, schema, [{"v": [D("1.25"), None]}])
    assert _rows(t, [("v", "<", INF)], "v") == _reprs([D("1.25")])
    assert _rows(t, [("v", ">", -INF)], "v") == _reprs([D("1.25")])
    assert _rows(t, [("v", "<", D("Infinity"))], "v") == _reprs([D("1.25")])
    assert _rows(t, [("v", ">=", INF)], "v") == _reprs([])
    assert _rows(t, [("v", "<", NAN)], "v") == _reprs([])
    assert _rows(t, [("v", "!=", NAN)], "v") == _reprs([D("1.25")])


def test_time_column_with_a_finer_time_literal(wh):
    """A TIME(3) value 00:00:00.001 is below 00:00:00.0015: pa.scalar(literal, time32('ms'))
    truncates the literal to .001 silently (predicate._column_value checks s/ms timestamps for
    it, not times), so without statistics `=`, `>=` and `in` match the row and `<`, `!=` and
    `not in` miss it (with statistics, `=` is pruned: the answer depends on the stats mode)."""
    schema = pa.schema([("t", pa.time32("ms"))])
    one_ms, lit = dt.time(0, 0, 0, 1000), dt.time(0, 0, 0, 1500)
    t = _table(wh, schema, [{"t": [one_ms, None]}], options={"metadata.stats-mode": "none"})
    assert _rows(t, [("t", "=", lit)], "t") == _reprs([])
    assert _rows(t, [("t", ">=", lit)], "t") == _reprs([])
    assert _rows(t, [("t", "in", [lit])], "t") == _reprs([])
    assert _rows(t, [("t", "<", lit)], "t") == _reprs([one_ms])
    assert _rows(t, [("t", "!=", lit)], "t") == _reprs([one_ms])
    assert _rows(t, [("t", "not in", [lit])], "t") == _reprs([one_ms])


def test_orc_row_column_of_rolled_files(wh):
    """Not a filter bug, found by the property's check of the unfiltered read: pyarrow's ORC
    writer ignores the offset of a sliced struct array and writes the rows from the start of its
    buffers, so every ORC file written from a slice of a batch (rolled at target-file-size,
    compaction outputs, a bucket's rows) holds other rows' ROW values. datafile.write_data_file
    hands orc.write_table such slices."""
    schema = pa.schema([("k", pa.int64()), ("stc", pa.struct([("a", pa.int32())]))])
    rows = [{"k": i, "stc": None if i % 3 == 0 else {"a": i}} for i in range(2000)]
    t = wh.create_table("db.t", schema, options={"file.format": "orc", "target-file-size": "1 kb"})
    t.write_arrow(pa.Table.from_pylist(rows, schema=schema))
    assert sorted(t.to_arrow().to_pylist(), key=lambda r: r["k"]) == rows
    assert t.to_arrow(filter=[("stc", "is null")]).num_rows == len(rows[::3])


def test_date_column_with_a_datetime_literal(wh):
    """2020-01-01 is before 2020-01-01 12:00 (SQL compares a DATE with a TIMESTAMP as the
    timestamp of its midnight): pa.scalar(datetime, date32()) drops the time silently, so `<`
    misses the row and `=` / `>=` match it."""
    schema = pa.schema([("d", pa.date32())])
    day, noon = dt.date(2020, 1, 1), dt.datetime(2020, 1, 1, 12)
    t = _table(wh, schema, [{"d": [day]}])
    assert _rows(t, [("d", "<", noon)], "d") == _reprs([day])
    assert _rows(t, [("d", "=", noon)], "d") == _reprs([])
    assert _rows(t, [("d", ">=", noon)], "d") == _reprs([])


def test_float32_column_with_a_double_literal(wh):
    """A FLOAT column's 1.1f is 1.100000023841858 as a double, so `f = 1.1` holds for no row
    (compared as doubles, as SQL widens FLOAT to DOUBLE). predicate._typed rounds the literal to
    float32 for the row filter, while statistics compare 1.1 exactly: a file holding only 1.1f
    is pruned and one also holding 0.0 is not, so the same row comes back or not by layout."""
    schema = pa.schema([("f", pa.float32())])
    t = _table(wh, schema, [{"f": [_f32(1.1)]}, {"f": [_f32(1.1), 0.0]}])
    rows = _rows(t, [("f", "=", 1.1)], "f")
    assert rows == [], rows


def test_float_partition_zero_equals_negative_zero(wh):
    """0.0 = -0.0: a partition 0.0 matches `p = -0.0` (and -0.0 matches `p = 0.0` and `p = 0`).
    Partition pruning compares partition values with predicate.compare_values, Java's
    Double.compare order (-0.0 < 0.0), which is right for min/max bounds but not for a
    partition's exact value."""
    schema = pa.schema([("p", pa.float64()), ("v", pa.int32())])
    t = _table(wh, schema, [{"p": [0.0, -0.0, 1.0], "v": [1, 2, 3]}], partition_keys=["p"])
    assert _rows(t, [("p", "=", -0.0)], "v") == _reprs([1, 2])
    assert _rows(t, [("p", "=", 0.0)], "v") == _reprs([1, 2])
    assert _rows(t, [("p", "=", 0)], "v") == _reprs([1, 2])
    assert _rows(t, [("p", "<=", -0.0)], "v") == _reprs([1, 2])
    assert _rows(t, [("p", ">=", 0)], "v") == _reprs([1, 2, 3])


def test_dynamic_bucket_overwrite_keeps_one_version(wh):
    """Not a filter bug, found by the property's check of the unfiltered read: after an
    overwrite of a dynamic-bucket table, an upsert of a key the overwrite wrote lands in another
    bucket, and both versions are read. The overwrite assigns buckets by the old HASH index
    (write.py _write_groups: self.group(data, index_entries)), so keys it knew keep their old
    bucket without a new HASH file there, while its commit (replace) deletes every old HASH file;
    the next write no longer finds the key and files it in another bucket."""
    schema = pa.schema([("k", pa.int64(), False), ("v", pa.int64())])
    t = wh.create_table("db.t", schema, primary_keys=["k"],
                        options={"bucket": "-1", "dynamic-bucket.target-row-num": "2"})
    t.write_arrow(pa.table({"k": [1, 4], "v": [0, 0]}, schema=schema))
    t.write_arrow(pa.table({"k": [1, 2, 4], "v": [1, 1, 1]}, schema=schema), overwrite=True)
    t.write_arrow(pa.table({"k": [4], "v": [2]}, schema=schema))
    assert sorted(t.to_arrow().to_pylist(), key=lambda r: r["k"]) == \
        [{"k": 1, "v": 1}, {"k": 2, "v": 1}, {"k": 4, "v": 2}]
    assert t.to_arrow(filter=[("v", "=", 1)]).column("k").to_pylist() in ([1, 2], [2, 1])


def test_numpy_and_pandas_literals_compare_by_the_values_they_hold(wh):
    """Scalars as pandas, polars and numpy hand them back: np.float32(2.5) was truncated to 2
    against an integer column, np.float64 against a DECIMAL raised decimal.InvalidOperation (its
    repr is 'np.float64(0.1)'), a pd.Timestamp's nanoseconds were cut against TIMESTAMP(6), and
    an instant against a wall-time column was taken as UTC while write_arrow stores its own wall
    time."""
    import numpy as np
    import pandas as pd
    schema = pa.schema([("i", pa.int64()), ("d", pa.decimal128(10, 2)), ("ts", pa.timestamp("us"))])
    base = dt.datetime(2024, 1, 1, 12, 0, 0, 123456)
    t = _table(wh, schema, [{"i": [1, 2, 3], "d": [D("0.10"), D("3.00"), D("5.00")],
                             "ts": [base, base + dt.timedelta(microseconds=1), dt.datetime(2024, 1, 1, 12)]}])
    assert _rows(t, [("i", "=", np.float32(2.5))], "i") == _reprs([])
    assert _rows(t, [("i", "<", np.float32(2.5))], "i") == _reprs([1, 2])
    assert _rows(t, [("i", "in", [np.int64(3), np.float64(1.0)])], "i") == _reprs([1, 3])
    assert _rows(t, [("d", "=", np.float64(0.1))], "i") == _reprs([1])
    assert _rows(t, [("d", "=", np.float32(0.1))], "i") == _reprs([1])  # its shortest text, as a float's repr
    assert _rows(t, [("d", "=", np.int64(3))], "i") == _reprs([2])
    nanos = pd.Timestamp("2024-01-01 12:00:00.123456789")
    assert _rows(t, [("ts", "=", nanos)], "i") == _reprs([])
    assert _rows(t, [("ts", "<", nanos)], "i") == _reprs([1, 3])
    assert _rows(t, [("ts", ">=", nanos)], "i") == _reprs([2])
    assert _rows(t, [("ts", ">", np.datetime64("2024-01-01T12:00:00.123456001", "ns"))], "i") == _reprs([2])
    assert _rows(t, [("ts", "=", np.datetime64("2024-01-01T12:00:00.123456", "us"))], "i") == _reprs([1])
    noon_berlin = pd.Timestamp("2024-01-01 12:00", tz="Europe/Berlin")  # written, it is stored as 12:00
    assert _rows(t, [("ts", "=", noon_berlin)], "i") == _reprs([3])
    with pytest.raises(SchemaMismatchError, match="does not compare"):
        t.to_arrow(filter=[("ts", ">", np.int64(5))])


def test_nanosecond_partitions_and_text(wh):
    """TIMESTAMP(9) partitions differing below the microsecond: a manifest's partition statistics
    kept the first value seen as its maximum (they compared as microseconds), so a filter on the
    larger one pruned its manifest; ISO text lost digits 7-9 (datetime.fromisoformat)."""
    schema = pa.schema([("id", pa.int64()), ("p", pa.timestamp("ns")), ("ts", pa.timestamp("ns"))])
    values = pa.array([1704110400123456000, 1704110400123456789], pa.timestamp("ns"))
    t = _table(wh, schema, [{"id": [1, 2], "p": values, "ts": values}], partition_keys=["p"])
    for column in ("p", "ts"):
        assert _rows(t, [(column, "=", "2024-01-01 12:00:00.123456789")], "id") == _reprs([2]), column
        assert _rows(t, [(column, "<", "2024-01-01 12:00:00.123456789")], "id") == _reprs([1]), column
        assert _rows(t, [(column, ">", dt.datetime(2024, 1, 1, 12, 0, 0, 123456))], "id") == _reprs([2]), column
        assert _rows(t, [(column, "=", "2024-01-01 12:00:00.1234567")], "id") == _reprs([]), column
    with pytest.raises(SchemaMismatchError, match="is not a timestamp"):
        t.to_arrow(filter=[("ts", "=", "2024-01-01 12:00:00.1234567891")])


@pytest.mark.parametrize("precision", ["us", "ns"])
def test_not_equal_to_a_nanosecond_literal_keeps_the_equal_microsecond(wh, precision):
    """`ts != 12:00:00.000000002` on files (and partitions) holding only 12:00: predicate's
    statistics check asked `min in literals` with Python's ==, for which a NanoDatetime equals
    its microsecond, and pruned the file: 0 rows where 1 matches."""
    schema = pa.schema([("id", pa.int64()), ("p", pa.timestamp(precision)), ("ts", pa.timestamp(precision))])
    noon = pa.array([dt.datetime(2024, 2, 29, 12)], pa.timestamp(precision))
    t = _table(wh, schema, [{"id": [1], "p": noon, "ts": noon}], partition_keys=["p"])
    for column in ("p", "ts"):
        assert _rows(t, [(column, "!=", "2024-02-29 12:00:00.000000002")], "id") == _reprs([1]), column
        assert _rows(t, [(column, "not in", ["2024-02-29 12:00:00.000000002"])], "id") == _reprs([1]), column
        assert _rows(t, [(column, "!=", "2024-02-29 12:00:00")], "id") == _reprs([]), column


def test_a_literal_just_beyond_a_38_digit_decimal(wh):
    """10^28 against DECIMAL(38, 10), whose largest value is 10^28 - 10^-10: the bound was
    computed in Python's 28-digit context, rounded to 10^28, and the literal then failed
    Arrow's cast (ArrowInvalid) instead of comparing by value."""
    schema = pa.schema([("v", pa.decimal128(38, 10))])
    big = D("9" * 28 + ".9999999999")
    t = _table(wh, schema, [{"v": [D("1.5000000000"), big, None]}])
    assert _rows(t, [("v", "<=", D("1E+28"))], "v") == _reprs([D("1.5000000000"), big])
    assert _rows(t, [("v", ">", 1e28)], "v") == _reprs([])


def test_nanosecond_partition_statistics_written_before_are_read_to_the_microsecond(wh, monkeypatch):
    """Manifests written before nanoseconds compared kept the first partition of a microsecond
    as both bounds; a reader comparing exactly would prune the larger partition's manifest."""
    from paimon_streaming.manifest import files
    from paimon_streaming.predicate import compare_values

    def as_microseconds(a, b):  # how partition statistics were chosen then
        if isinstance(a, dt.datetime) and isinstance(b, dt.datetime):
            a, b = dt.datetime.combine(a.date(), a.timetz()), dt.datetime.combine(b.date(), b.timetz())
        return compare_values(a, b)

    schema = pa.schema([("id", pa.int64()), ("p", pa.timestamp("ns"))])
    monkeypatch.setattr(files, "compare_values", as_microseconds)
    t = _table(wh, schema, [{"id": [1, 2], "p": pa.array([1704110400123456000, 1704110400123456789],
                                                         pa.timestamp("ns"))}], partition_keys=["p"])
    monkeypatch.undo()
    assert _rows(t, [("p", "=", "2024-01-01 12:00:00.123456789")], "id") == _reprs([2])
    assert _rows(t, [("p", "<", "2024-01-01 12:00:00.123456001")], "id") == _reprs([1])


def test_timestamp_0_milliseconds_in_partitions_keys_and_statistics(wh):
    """TIMESTAMP(0) keeps the milliseconds it is given (as Java's writers do), so its BinaryRows
    must too: partition rows, bucket keys and statistics were floored to the second, so a write
    put a .250 row's file under the 10:00 partition's entry (the table then failed to read), and
    `k > 58.200` pruned the file holding 58.500."""
    schema = pa.schema([pa.field("k", pa.timestamp("s"), False), pa.field("pt", pa.timestamp("s"), False),
                        ("v", pa.int64())])
    t = wh.create_table("db.ts0", schema, primary_keys=["k", "pt"], partition_keys=["pt"], options={"bucket": "3"})
    day = dt.datetime
    keys = [day(2024, 1, 1, 23, 59, 58, 500000), day(2024, 1, 1, 23, 59, 58), day(2024, 1, 1, 23, 59, 58, 999000)]
    parts = [day(2024, 1, 1, 10, 0, 0, 250000), day(2024, 1, 1, 10), day(2024, 1, 1, 10, 0, 0, 250000)]
    for v in (1, 2):  # the second write upserts every key in place
        t.write_arrow(pa.table({"k": pa.array(keys, pa.timestamp("ms")), "pt": pa.array(parts, pa.timestamp("ms")),
                                "v": [v] * 3}))
    rows = sorted((r["k"], r["pt"], r["v"]) for r in ps.Table.open(t.path).to_arrow().to_pylist())
    assert rows == sorted(zip(keys, parts, [2] * 3))
    assert len({e.partition for e in t.plan(t.latest_snapshot())}) == 2
    assert sorted(t.to_arrow(filter=[("k", ">", "2024-01-01 23:59:58.200")]).column("v").to_pylist()) == [2, 2]
