"""Hunt: `spark.read/readStream.format("paimon")` on tables Apache Paimon Java 1.4.2 wrote.

Java creates a table under random options (append, fixed-bucket append, primary-key with and
without deletion vectors, a changelog producer; Parquet, ORC or Avro; a partition column of
STRING (with '' and null), INT, DATE, BOOLEAN, DECIMAL or TIMESTAMP), writes a few batches
(upserts and deletions on primary-key tables), maybe compacts, tags and changes its schema
(a column renamed and widened INT -> BIGINT, one added, one dropped). Then, through real Spark
(local[2], filter pushdown on, as `paimon_streaming.register` sets it):

1. each of a few random Spark filters (=, <>, <=>, <, <=, >, >=, IN / NOT IN with nulls,
   IS [NOT] NULL, LIKE 'x%' / '%x' / '%x%', AND / OR / NOT, a bare boolean column; on partition
   and value columns and a nested field; literals of neighbouring types: an int or decimal
   literal against BIGINT / DOUBLE / DECIMAL columns, a string against DATE, a date against a
   TIMESTAMP and back) returns exactly the rows of our core unfiltered read satisfying it under
   Spark's semantics, computed here in plain Python (`holds`: three-valued logic, NaN equal to
   itself and greater than any other double, -0.0 = 0.0), and Java's read with the same filter
   (translated to its PredicateBuilder where it has one), filtered the same way, holds the same
   rows (Java's filters only skip files);
2. a projection (`select` of columns and a nested field) is the projected core read;
3. time travel (`snapshot-id`, `scan.snapshot-id`, `tag`, `scan.tag-name`, `timestamp-millis`)
   reads the rows of that snapshot, filtered, as core and Java read them;
4. a stream (`readStream`, Trigger.AvailableNow, row kinds) started on the Java table, then run
   again from its checkpoint after Java wrote and compacted more, delivers changes that, applied
   by key (or collected, for append tables), give the table as Java reads it.

Spark's queries of an example run as one job (a union of fresh scans, each with its own pushed
filters), so an example costs about a second of Spark and one or two JVMs.

The bugs found on the way are kept as explicit regression tests at the end: a TIMESTAMP partition
of Java's ORC files in the second before 1970 read 1 s off (pyarrow misreads such ORC values;
partition columns are now read from the partition, as Java reads them), and partitions named
without legacy names (`partition.legacy-name` = false: TIMESTAMP and TIME partitions are
named by Java's CAST to STRING) were looked for, and written, in other directories.

SPARK_JAVA_HUNT_EXAMPLES=40 hunts longer (default: a CI-sized run).
"""
from __future__ import annotations

import datetime as dt
import decimal
import math
import os
import shutil
import tempfile
import time
from dataclasses import dataclass
from typing import Any

import pyarrow as pa
import pytest
from hypothesis import HealthCheck, Phase, given, settings, strategies as st

import paimon_streaming as ps
from test_filter_differential import _canon as _value_canon
from test_spark_source import stream

try:
    from java_oracle import JavaRefusal, get_oracle
except ImportError:  # pragma: no cover - run from the repository root
    from tests.java_oracle import JavaRefusal, get_oracle

EXAMPLES = int(os.environ.get("SPARK_JAVA_HUNT_EXAMPLES", "5"))
PHASES = (Phase.explicit, Phase.reuse, Phase.generate)

D = decimal.Decimal
UTC = dt.timezone.utc
NAN, INF = float("nan"), float("inf")


# ---- columns ---------------------------------------------------------------------------------------
@dataclass(frozen=True)
class JCol:
    """A column: its Paimon type as Java creates it, its kind (how Spark compares it), values."""
    name: str
    ptype: Any
    kind: str            # int, double, decimal, string, bool, date, ts, ltz, struct
    values: tuple
    scale: int = 0       # DECIMAL
    lo: int = 0          # integers: the type's range
    hi: int = 0


def _ints(lo, hi, *more):
    return (lo, hi, -1, 0, 1, 7, *more)


_TS = (dt.datetime(2024, 1, 1), dt.datetime(2024, 1, 1, 0, 0, 0, 1), dt.datetime(1969, 12, 31, 23, 59, 59, 999999),
       dt.datetime(2000, 1, 1, 12), dt.datetime(2024, 2, 29, 10, 30))
_STRS = ("", "a", "ab", "b", "é", "日本", "a b", "A", "ba", "\U0001F600")
COLUMNS = [
    JCol("i", "INT", "int", _ints(-2**31, 2**31 - 1), lo=-2**31, hi=2**31 - 1),
    JCol("l", "BIGINT", "int", _ints(-2**63, 2**63 - 1, 2**53 + 1), lo=-2**63, hi=2**63 - 1),
    JCol("sm", "SMALLINT", "int", _ints(-2**15, 2**15 - 1), lo=-2**15, hi=2**15 - 1),
    JCol("db", "DOUBLE", "double", (0.0, -0.0, 1.5, -2.0, NAN, INF, -INF, 0.1, 7.0)),
    JCol("dc", "DECIMAL(10, 2)", "decimal", (D("0.00"), D("1.25"), D("-1.50"), D("99999999.99"), D("0.10"),
                                             D("7.00")), scale=2),
    JCol("s", "STRING", "string", _STRS),
    JCol("vc", "VARCHAR(8)", "string", _STRS),
    JCol("ch", "CHAR(4)", "string", ("", "a", "ab", "abcd", "b")),
    JCol("bo", "BOOLEAN", "bool", (True, False)),
    JCol("d", "DATE", "date", (dt.date(1970, 1, 1), dt.date(1969, 12, 31), dt.date(2024, 2, 29), dt.date(2024, 1, 1))),
    JCol("ts", "TIMESTAMP(6)", "ts", _TS),
    JCol("lz", "TIMESTAMP(3) WITH LOCAL TIME ZONE", "ltz",
         tuple(t.replace(microsecond=t.microsecond // 1000 * 1000, tzinfo=UTC) for t in _TS)),
    JCol("st", {"type": "ROW", "fields": [{"id": 1000, "name": "a", "type": "INT"},
                                          {"id": 1001, "name": "b", "type": "STRING"}]}, "struct",
         ({"a": 1, "b": "x"}, {"a": None, "b": "y"}, {"a": -1, "b": None}, {"a": 7, "b": "a"})),
]
BY_NAME = {c.name: c for c in COLUMNS}
# the nested field `st.a`, filterable as a column of its own
NESTED = JCol("st.a", "INT", "int", (1, -1, 7, None), lo=-2**31, hi=2**31 - 1)
KEY = JCol("k", "BIGINT", "int", tuple(range(8)), lo=-2**63, hi=2**63 - 1)
PARTITIONS = {
    "str": JCol("p", "STRING", "string", ("a", "", "x y", "é")),
    "int": JCol("p", "INT", "int", (0, -1, 7, 2**31 - 1), lo=-2**31, hi=2**31 - 1),
    "date": JCol("p", "DATE", "date", (dt.date(1970, 1, 1), dt.date(2024, 2, 29))),
    "bool": JCol("p", "BOOLEAN", "bool", (True, False)),
    "dec": JCol("p", "DECIMAL(5, 2)", "decimal", (D("1.25"), D("-0.50"), D("0.00")), scale=2),
    "ts": JCol("p", "TIMESTAMP(3)", "ts", (dt.datetime(2024, 1, 1), dt.datetime(2024, 2, 29, 10, 30, 0, 123000),
                                          dt.datetime(1969, 12, 31, 23, 59, 59, 999000))),
}
# the schema change: `i` renamed to `i2` and widened to BIGINT, `n` added, `sm` dropped
EVOLVE = [{"kind": "rename", "path": ["i"], "newName": "i2"}, {"kind": "type", "path": ["i2"], "type": "BIGINT"},
          {"kind": "add", "path": ["n"], "type": "INT"}, {"kind": "drop", "path": ["sm"]}]
I2 = JCol("i2", "BIGINT", "int", _ints(-2**31, 2**31 - 1, 2**40), lo=-2**63, hi=2**63 - 1)
N = JCol("n", "INT", "int", (1, 2, -7), lo=-2**31, hi=2**31 - 1)


def _names_char_column(f: "F") -> bool:
    """Whether filter `f` compares a CHAR column anywhere in its tree."""
    if f.kids:
        return any(_names_char_column(k) for k in f.kids)
    return f.c is not None and f.c.ptype.startswith("CHAR(")


@dataclass
class Config:
    kind: str                     # append, append_fixed, pk, pk_dv
    partition: str | None
    columns: list[JCol]
    options: dict[str, str]
    evolve: bool = False

    @property
    def pk(self) -> bool:
        return self.kind.startswith("pk")

    @property
    def primary_keys(self) -> list[str]:
        return (["k"] + (["p"] if self.partition else [])) if self.pk else []

    def cols(self, after: bool) -> list[JCol]:
        out = [KEY] + ([PARTITIONS[self.partition]] if self.partition else []) + list(self.columns)
        if after and self.evolve:
            out = [I2 if c.name == "i" else c for c in out if c.name != "sm"] + [N]
        return out

    def fields(self) -> list[dict]:
        return [{"name": c.name, "type": c.ptype + " NOT NULL" if c.name in self.primary_keys else c.ptype}
                for c in self.cols(False)]


@st.composite
def configs(draw) -> Config:
    kind = draw(st.sampled_from(["append", "append_fixed", "pk", "pk", "pk_dv"]))
    fmt = draw(st.sampled_from(["parquet", "orc", "avro"]))
    partition = draw(st.sampled_from([None, *sorted(PARTITIONS)]))
    columns = draw(st.lists(st.sampled_from(COLUMNS), min_size=3, max_size=7, unique_by=lambda c: c.name))
    evolve = draw(st.integers(0, 3)) == 0
    if evolve:
        columns = [c for c in columns if c.name not in ("i", "sm")] + [BY_NAME["i"], BY_NAME["sm"]]
    columns.sort(key=lambda c: [x.name for x in COLUMNS].index(c.name))
    options = {"file.format": fmt}
    if kind == "append":
        options["bucket"] = "-1"
    elif kind == "append_fixed":
        options.update({"bucket": draw(st.sampled_from(["1", "2"])), "bucket-key": "k"})
    else:
        options["bucket"] = draw(st.sampled_from(["1", "2"]))
    if kind == "pk_dv":
        options["deletion-vectors.enabled"] = "true"
        if draw(st.booleans()):
            options["deletion-vectors.bitmap64"] = "true"
    if partition and draw(st.integers(0, 2)) == 0:
        options["partition.default-name"] = "nul"
    if partition and draw(st.integers(0, 2)) == 0:
        options["partition.legacy-name"] = "false"
    if kind.startswith("pk") and draw(st.booleans()):
        options["changelog-producer"] = draw(st.sampled_from(["input", "lookup"]))
    if draw(st.integers(0, 2)) == 0:
        options["metadata.stats-mode"] = draw(st.sampled_from(["none", "counts", "truncate(1)", "full"]))
    if draw(st.integers(0, 2)) == 0:
        names = [c.name for c in [KEY] + columns if c.kind in ("int", "string", "date") and c.name not in ("i", "sm")]
        options["file-index.bloom-filter.columns" if draw(st.booleans()) else "file-index.bitmap.columns"] = \
            ",".join(draw(st.lists(st.sampled_from(names), min_size=1, max_size=2, unique=True)))
    return Config(kind, partition, columns, options, evolve)


@st.composite
def batches(draw, cfg: Config, after: bool) -> list[dict]:
    rows = []
    for _ in range(draw(st.integers(1, 7))):
        row = {}
        for c in cfg.cols(after):
            values = st.sampled_from(c.values)
            if c.name == "k" and cfg.pk or c.name in cfg.primary_keys:
                row[c.name] = draw(values)
            else:
                row[c.name] = draw(st.one_of(st.none(), values, values))
        if cfg.pk and draw(st.integers(0, 4)) == 0 and "changelog-producer" not in cfg.options:
            row["_ROW_KIND"] = "-D"
        elif cfg.pk and draw(st.integers(0, 6)) == 0:
            row["_ROW_KIND"] = "-D"
        rows.append(row)
    return rows


# ---- Spark's semantics in plain Python ---------------------------------------------------------------
def _dom(c: JCol, v: Any) -> Any:
    """A value (of the column, or a literal already converted to Spark's common type) in the
    domain Python compares exactly: ints and decimals as Decimal, dates and timestamps as naive
    UTC datetimes."""
    if v is None:
        return None
    if c.kind in ("int", "decimal") and not isinstance(v, float):
        return D(v)
    if isinstance(v, dt.datetime):
        return v.astimezone(UTC).replace(tzinfo=None) if v.tzinfo is not None else v
    if isinstance(v, dt.date):
        return dt.datetime.combine(v, dt.time())
    return v


def _cmp(a: Any, b: Any) -> int:
    """Spark's order: a double NaN equals NaN and is greater than any other value; -0.0 = 0.0."""
    if isinstance(a, float) or isinstance(b, float):
        a, b = float(a), float(b)
        if math.isnan(a) or math.isnan(b):
            return (math.isnan(a) - math.isnan(b))
    return (a > b) - (a < b)


@dataclass(frozen=True)
class Lit:
    sql: str             # the Spark SQL literal
    value: Any           # its value, in the column's domain after Spark's coercion (None: NULL)
    java: Any = None     # the same literal for Java's PredicateBuilder (exact in the column's type), or None
    java_ok: bool = False


@dataclass(frozen=True)
class F:
    """A filter node: op one of cmp, in, null, like, bool, and, or, not."""
    op: str
    col: str = ""
    arg: Any = None      # cmp: (sql op, Lit); in: (negated, [Lit]); null: negated; like: (kind, text)
    kids: tuple = ()
    c: JCol | None = None

    def sql(self) -> str:
        ref = ".".join(f"`{p}`" for p in self.col.split("."))
        if self.op == "cmp":
            return f"{ref} {self.arg[0]} {self.arg[1].sql}"
        if self.op == "in":
            return f"{ref} {'NOT IN' if self.arg[0] else 'IN'} ({', '.join(x.sql for x in self.arg[1])})"
        if self.op == "null":
            return f"{ref} IS {'NOT ' if self.arg else ''}NULL"
        if self.op == "like":
            kind, text = self.arg
            pattern = {"startsWith": text + "%", "endsWith": "%" + text, "contains": "%" + text + "%"}[kind]
            return f"{ref} LIKE {_sql_str(pattern)}"
        if self.op == "bool":
            return ref
        if self.op == "not":
            return f"NOT ({self.kids[0].sql()})"
        return "(" + f" {self.op.upper()} ".join(f"({k.sql()})" for k in self.kids) + ")"

    def holds(self, row: dict) -> bool | None:
        """Spark's three-valued answer for a row (values as our core read gives them)."""
        if self.op in ("and", "or", "not"):
            vals = [k.holds(row) for k in self.kids]
            if self.op == "not":
                return None if vals[0] is None else not vals[0]
            if self.op == "and":
                return False if False in vals else (None if None in vals else True)
            return True if True in vals else (None if None in vals else False)
        c = self.c
        v = _get(row, self.col)
        if self.op == "null":
            return (v is not None) if self.arg else (v is None)
        if self.op == "bool":
            return v
        if self.op == "like":
            if v is None:
                return None
            kind, text = self.arg
            return {"startsWith": v.startswith, "endsWith": v.endswith, "contains": v.__contains__}[kind](text)
        dv = _dom(c, v)
        if self.op == "cmp":
            op, lit = self.arg
            lv = _dom(c, lit.value)
            if op == "<=>":
                return dv is None and lv is None or (dv is not None and lv is not None and _cmp(dv, lv) == 0)
            if dv is None or lv is None:
                return None
            r = _cmp(dv, lv)
            return {"=": r == 0, "<>": r != 0, "<": r < 0, "<=": r <= 0, ">": r > 0, ">=": r >= 0}[op]
        negated, lits = self.arg
        if dv is None:
            return None
        if any(x.value is not None and _cmp(dv, _dom(c, x.value)) == 0 for x in lits):
            return not negated
        return None if any(x.value is None for x in lits) else negated

    def java(self) -> tuple[Any, bool]:
        """(Java's PredicateBuilder tree as java_oracle's `where` takes it, or None; whether it
        is exact). Where Java has no exact form an AND drops the term (a weaker filter: Java's
        rows are filtered here again), an OR or a NOT gives up."""
        if self.op in ("and", "or"):
            parts = [k.java() for k in self.kids]
            if self.op == "or" and any(p is None for p, _ in parts):
                return None, False
            kept = [p for p, _ in parts if p is not None]
            exact = all(e for _, e in parts)
            if not kept:
                return None, False
            return (kept[0] if len(kept) == 1 else {self.op: kept}), exact
        if self.op == "not":
            p, exact = self.kids[0].java()
            # Java negates comparisons, IN and null tests (not LIKE); a null row is in neither side
            if p is None or not exact or self.kids[0].op not in ("cmp", "in", "null") or _nullable_test(self.kids[0]):
                return None, False
            return {"not": p}, True
        if "." in self.col:
            return None, False
        if self.op == "null":
            return (self.col, "is not null" if self.arg else "is null"), True
        if self.op == "bool":
            return (self.col, "=", True), True
        if self.op == "like":
            return (self.col, self.arg[0], self.arg[1]), True
        if self.op == "cmp":
            op, lit = self.arg
            if not lit.java_ok:
                return None, False
            if op == "<=>":
                return ((self.col, "is null") if lit.java is None else (self.col, "=", lit.java)), True
            if lit.java is None:
                return None, False
            return (self.col, {"<>": "!="}.get(op, op), lit.java), True
        negated, lits = self.arg
        if not all(x.java_ok for x in lits):
            return None, False
        return (self.col, "not in" if negated else "in", [x.java for x in lits]), True


def _nullable_test(f: F) -> bool:
    """A term whose negation in Java differs from SQL's NOT under nulls (NOT of a three-valued
    answer is null, Java's negated predicates are two-valued): <=> and IN lists with a null."""
    if f.op == "cmp":
        return f.arg[0] == "<=>"
    if f.op == "in":
        return any(x.value is None for x in f.arg[1])
    return False


def _get(row: dict, name: str) -> Any:
    if name in row:
        return row[name]
    v = row
    for part in name.split("."):
        if v is None:
            return None
        v = v[part]
    return v


def _sql_str(s: str) -> str:
    return "'" + s.replace("\\", "\\\\").replace("'", "\\'") + "'"


def _sql_double(x: float) -> str:
    if math.isnan(x):
        return "double('NaN')"
    if math.isinf(x):
        return "double('Infinity')" if x > 0 else "double('-Infinity')"
    return f"CAST({x!r} AS DOUBLE)" if x == 0 and math.copysign(1, x) < 0 else f"{x!r}D"


def _ts_sql(t: dt.datetime) -> str:
    return t.strftime("%Y-%m-%d %H:%M:%S.%f")


def literals(c: JCol, v: Any) -> list[Lit]:
    """Literals near a value of column `c`, of its type and of neighbouring types (Spark
    coerces them to a common type; `value` is the literal in that type's terms)."""
    out: list[Lit] = []
    if c.kind == "int":
        for x in (v, v - 1, v + 1):
            exact = c.lo <= x <= c.hi
            out.append(Lit(str(x) if abs(x) < 2**63 else f"{x}BD", D(x), x if exact else None, exact))
        out += [Lit(f"{v}.0", D(v)), Lit(f"CAST({v} AS BIGINT)", D(v), v, True)]
        half = D(v) + (D("0.5") if v >= 0 else D("-0.5"))   # the literal '{v}.5'
        if c.lo <= half <= c.hi:
            # beyond the column's range, Spark 4.3's analyzer folds the comparison to true or false
            # (the plan's `Filter true`), for every source, Parquet's too: null rows then pass
            out.append(Lit(f"{v}.5", half))
        if abs(v) < 2**53:
            out.append(Lit(f"{v}.0D", float(v)))
    elif c.kind == "double":
        out.append(Lit(_sql_double(v), v, v, True))
        if math.isfinite(v):
            if v == int(v):
                out.append(Lit(str(int(v)), float(int(v))))
            out.append(Lit(repr(v) if "e" not in repr(v) else _sql_double(v), v))   # a decimal literal
            out += [Lit(_sql_double(v + 0.5), v + 0.5, v + 0.5, True)]
    elif c.kind == "decimal":
        scale = D(1).scaleb(-c.scale)
        precision = int(c.ptype.split("(")[1].split(",")[0])
        for x in (v, v + scale, v - scale):
            out.append(Lit(f"{x}BD", x, x, abs(x) < D(10) ** (precision - c.scale)))
        out += [Lit(f"{v}0", v, v, True), Lit(f"{v + scale / 2}", v + scale / 2)]
        if v == v.to_integral_value():
            out.append(Lit(str(int(v)), v, v, True))
        f = float(v)
        if D(f) == v:
            out.append(Lit(f"{f!r}D", f))
    elif c.kind == "string":
        for x in (v, v + "a", v[:-1], v + " "):
            out.append(Lit(_sql_str(x), x, x, True))
    elif c.kind == "bool":
        out += [Lit("true", True, True, True), Lit("false", False, False, True)]
    elif c.kind == "date":
        out += [Lit(f"DATE'{v.isoformat()}'", v, v, True), Lit(_sql_str(v.isoformat()), v, v, True),
                Lit(f"DATE'{(v + dt.timedelta(days=1)).isoformat()}'", v + dt.timedelta(days=1),
                    v + dt.timedelta(days=1), True),
                Lit(f"TIMESTAMP'{v.isoformat()} 00:00:00'", dt.datetime.combine(v, dt.time())),
                Lit(f"TIMESTAMP'{v.isoformat()} 10:00:00'", dt.datetime.combine(v, dt.time(10)))]
    elif c.kind in ("ts", "ltz"):
        naive = v.astimezone(UTC).replace(tzinfo=None) if v.tzinfo else v
        java = (lambda t: t.replace(tzinfo=UTC)) if c.kind == "ltz" else (lambda t: t)
        for x in (naive, naive + dt.timedelta(microseconds=1), naive - dt.timedelta(microseconds=1000)):
            fits = c.kind == "ts" or x.microsecond % 1000 == 0
            out.append(Lit(f"TIMESTAMP'{_ts_sql(x)}'", x, java(x), fits))
            out.append(Lit(f"TIMESTAMP_NTZ'{_ts_sql(x)}'", x, java(x), fits))
        out += [Lit(f"DATE'{naive.date().isoformat()}'", naive.date()),
                Lit(f"TIMESTAMP'{naive.strftime('%Y-%m-%d %H:%M:%S.%f')}+01:00'", naive - dt.timedelta(hours=1),
                    java(naive - dt.timedelta(hours=1)), c.kind == "ts" or naive.microsecond % 1000 == 0)]
    return out


def _values(rows: list[dict], c: JCol) -> list:
    return [v for v in (_get(r, c.name) for r in rows) if v is not None] or [x for x in c.values if x is not None]


@st.composite
def terms(draw, cols: list[JCol], rows: list[dict]) -> F:
    pool = [c for c in cols if c.kind != "struct"] + ([NESTED] if any(c.kind == "struct" for c in cols) else [])
    c = draw(st.sampled_from(pool))
    kinds = ["cmp", "cmp", "cmp", "in", "null"] + (["like"] if c.kind == "string" else []) + \
        (["bool"] if c.kind == "bool" else [])
    kind = draw(st.sampled_from(kinds))
    if kind == "null":
        return F("null", c.name, draw(st.booleans()), c=c)
    if kind == "bool":
        return F("bool", c.name, c=c)
    values = _values(rows, c)
    if kind == "like":
        v = draw(st.sampled_from(values))
        how = draw(st.sampled_from(["startsWith", "endsWith", "contains"]))
        cut = draw(st.integers(0, len(v)))
        text = {"startsWith": v[:cut], "endsWith": v[cut:], "contains": v[cut // 2:cut]}[how]
        return F("like", c.name, (how, text), c=c)
    lits = [x for v in values[:6] for x in literals(c, v)]
    if kind == "cmp":
        op = draw(st.sampled_from(["=", "<>", "<", "<=", ">", ">=", "<=>"]))
        lit = Lit("NULL", None, None, True) if draw(st.integers(0, 9)) == 0 else draw(st.sampled_from(lits))
        return F("cmp", c.name, (op, lit), c=c)
    chosen = draw(st.lists(st.sampled_from(lits), min_size=1, max_size=4))
    if draw(st.integers(0, 3)) == 0:
        chosen.append(Lit("NULL", None, None, True))
    return F("in", c.name, (draw(st.integers(0, 3)) == 0, chosen), c=c)


@st.composite
def filters(draw, cols: list[JCol], rows: list[dict], depth: int = 2) -> F:
    shape = draw(st.sampled_from(["term", "term", "and", "or", "not"])) if depth else "term"
    if shape == "term":
        return draw(terms(cols, rows))
    if shape == "not":
        return F("not", kids=(draw(filters(cols, rows, depth - 1)),))
    return F(shape, kids=tuple(draw(filters(cols, rows, depth - 1)) for _ in range(draw(st.integers(2, 3)))))


# ---- comparing rows ------------------------------------------------------------------------------------
def _canon(v: Any) -> Any:
    """A value comparable across readers (test_filter_differential's, with aware timestamps in
    UTC and a ROW by its fields' values)."""
    if isinstance(v, dt.datetime) and v.tzinfo is not None:
        v = v.astimezone(UTC)
    if isinstance(v, dict):
        return ("row", tuple((k, _canon(x)) for k, x in sorted(v.items())))
    return _value_canon(v)


def canon(rows: list[dict], names: list[str]) -> list[tuple]:
    return sorted(tuple(_canon(_get(r, n)) for n in names) for r in rows)


def _java_rows(rows: list[dict], names: list[str]) -> list[dict]:
    """Java's rows as our read gives them (a ROW as a dict of its fields, as Spark's Row too)."""
    return [{n: r.get(n) for n in names} for r in rows]


def spark_answers(spark, path: str, queries: list[tuple[dict, str | None, list[str] | None]]) -> list[list[dict]]:
    """Each query (read options, SQL filter or None, columns or None) on a fresh DataFrame; the
    queries of one schema as one Spark job (a union of scans, each with its own pushed filters)."""
    from pyspark.sql import functions as sf
    groups: dict[str, Any] = {}
    for i, (options, where, columns) in enumerate(queries):
        reader = spark.read.format("paimon")
        for k, v in options.items():
            reader = reader.option(k, str(v))
        df = reader.load(path)
        if where is not None:
            df = df.where(where)
        if columns is not None:
            df = df.select(*[sf.col(".".join(f"`{p}`" for p in c.split("."))).alias(c) for c in columns])
        df = df.select(sf.lit(i).alias("_q"), sf.struct(*[sf.col(f"`{c}`") for c in df.columns]).alias("r"))
        key = df.schema.json()
        groups[key] = df if key not in groups else groups[key].unionByName(df)
    out: list[list[dict]] = [[] for _ in queries]
    for union in groups.values():
        for row in union.toArrow().to_pylist():
            out[row["_q"]].append(row["r"])
    return out


# ---- the check ---------------------------------------------------------------------------------------
def build(java, path: str, cfg: Config, before: list, compact: list[bool]) -> None:
    """Java creates the table, writes the batches (compacting after some) and tags the last
    snapshot 't1'."""
    with java.batch() as b:
        b.create_table(path, cfg.fields(), primary_keys=cfg.primary_keys,
                       partition_keys=["p"] if cfg.partition else [], options=cfg.options)
        for i, rows in enumerate(before):
            b.write(path, rows)
            if compact[i]:
                b.compact(path)
        b.create_tag(path, "t1")


def stream_run(spark, path: str, checkpoint: str, options: dict) -> list[dict]:
    """One run of a stream of the table with row kinds (Trigger.AvailableNow), from its checkpoint;
    the rows of its micro-batches, as Arrow gives them (time zones kept)."""
    rows: list[dict] = []
    q = (stream(spark, path, rowKindColumn="_kind", **options).writeStream
         .foreachBatch(lambda df, _: rows.extend(df.toArrow().to_pylist()))
         .option("checkpointLocation", checkpoint).trigger(availableNow=True).start())
    q.awaitTermination(300)
    assert q.exception() is None, q.exception()
    return rows


def _latest(cfg: Config, rows: list[dict]) -> list[dict]:
    """Rows of the first schema in the latest one (`i` is `i2`, `sm` dropped, `n` null)."""
    if not cfg.evolve:
        return rows
    out = []
    for r in rows:
        r = {("i2" if k == "i" else k): v for k, v in r.items() if k != "sm"}
        r.setdefault("n", None)
        out.append(r)
    return out


def _key(cfg: Config, r: dict) -> tuple:
    return tuple(_canon(r[k]) for k in cfg.primary_keys)


def applied(cfg: Config, changes: list[dict], names: list[str]) -> list[tuple]:
    """A stream's rows applied: by primary key (last +I/+U wins, -D removes), or collected."""
    if not cfg.pk:
        return canon([r for r in changes if r["_kind"] == "+I"], names)
    state: dict = {}
    for r in changes:
        if r["_kind"] in ("+I", "+U"):
            state[_key(cfg, r)] = r
        elif r["_kind"] == "-D":
            state.pop(_key(cfg, r), None)
    return canon(list(state.values()), names)


def check(java, spark, cfg: Config, before: list, after: list, compact: list[bool], data, streamed: bool) -> None:
    warehouse = tempfile.mkdtemp(prefix="spark-java-hunt-")
    path = f"{warehouse}/db.db/t"
    context = f"{cfg.kind} table (partition {cfg.partition}, evolved {cfg.evolve}, options {cfg.options})"
    try:
        build(java, path, cfg, before, compact)
        first = ps.Table.open(path).snapshot_manager.latest_id()
        ckpt = f"{warehouse}/ck"
        runs = []
        stream_options = {}
        if streamed:
            stream_options = data.draw(st.fixed_dictionaries({}, optional={
                "max-files-per-trigger": st.sampled_from([1, 2]), "consumer-id": st.just("c1"),
                "scan.mode": st.just("from-snapshot")}), label="stream options")
            if "scan.mode" in stream_options:
                stream_options["scan.snapshot-id"] = 1
            runs.append(stream_run(spark, path, ckpt, stream_options))
        if cfg.evolve:
            with java.batch() as b:
                for change in EVOLVE:
                    b.alter(path, [change])
        for i, rows in enumerate(after, start=len(before)):   # a stream runs again after each
            with java.batch() as b:
                b.write(path, rows)
                if compact[i]:
                    b.compact(path)
            if streamed:
                runs.append(stream_run(spark, path, ckpt, stream_options))
        t = ps.Table.open(path)
        cols, old_cols = cfg.cols(True), cfg.cols(False)
        names = [c.name for c in cols]
        core = t.to_arrow().to_pylist()
        flts = [data.draw(filters(cols, core), label=f"filter {i}") for i in range(data.draw(st.integers(3, 6)))]
        ids = list(range(t.snapshot_manager.earliest_id(), t.snapshot_manager.latest_id() + 1))
        sid = data.draw(st.sampled_from(ids), label="snapshot")
        travel = data.draw(st.sampled_from(["snapshot-id", "scan.snapshot-id", "tag", "scan.tag-name",
                                            "timestamp-millis", "scan.timestamp-millis", "scan.version",
                                            "scan.timestamp"]), label="time travel")
        if travel in ("tag", "scan.tag-name"):
            sid = first
        options = {travel: {"tag": "t1", "scan.tag-name": "t1"}.get(travel, sid)}
        if travel == "scan.version" and data.draw(st.booleans(), label="version is the tag"):
            sid, options = first, {travel: "t1"}
        if travel in ("timestamp-millis", "scan.timestamp-millis"):
            options = {travel: t.snapshot(sid).time_millis}
        if travel == "scan.timestamp":   # a local time, to the second: the newest snapshot at or before it
            second = t.snapshot(sid).time_millis // 1000 + 1
            options = {travel: time.strftime("%Y-%m-%d %H:%M:%S", time.localtime(second))}
            sid = max(i for i in ids if t.snapshot(i).time_millis < second * 1000)
        then = t.to_arrow(snapshot_id=sid).to_pylist()
        own_schema = travel in ("snapshot-id", "tag", "timestamp-millis")   # the snapshot's schema
        then_cols = old_cols if own_schema and t.snapshot(sid).schema_id == 0 else cols
        if not own_schema:
            then = _latest(cfg, then) if t.snapshot(sid).schema_id == 0 else then
        then_names = [c.name for c in then_cols]
        then_flt = data.draw(filters(then_cols, then), label="time travel filter")
        projection = data.draw(st.lists(st.sampled_from(names + (["st.a"] if "st" in names else [])), min_size=1,
                                        max_size=3, unique=True), label="projection")
        # Java 1.4.2's ORC reader skips row groups by ORC's CHAR statistics, which are padded with
        # spaces: `ch < 'a '` loses a row 'a' that Java's unfiltered read gives (a Java bug); its
        # filtered reads of ORC CHAR columns are not compared
        orc_char = cfg.options.get("file.format") == "orc"
        wheres = [(None, False) if orc_char and _names_char_column(f) else f.java() for f in flts]
        with java.batch() as b:
            full = b.read(path)
            java_filtered = [b.read(path, where=w, catch_error=True) if w is not None else None for w, _ in wheres]
            java_then = b.read(path, snapshot_id=sid)
        answers = spark_answers(spark, path, [({}, f.sql(), None) for f in flts] + [({}, None, projection)] +
                                [(options, then_flt.sql(), None)])
        # 0. we read what Java reads
        assert canon(core, names) == canon(_java_rows(full.result, names), names), \
            f"our read of a Java {context} differs from Java's:\nours {core}\nJava's {full.result}"
        # 1. each filter: Spark's answer = the core rows satisfying it = Java's rows satisfying it
        for f, got, jf in zip(flts, answers, java_filtered):
            want = canon([r for r in core if f.holds(r) is True], names)
            assert canon(got, names) == want, \
                f"Spark's WHERE {f.sql()} on a Java {context}:\ngot  {canon(got, names)}\nwant {want}"
            if jf is not None and isinstance(jf.result, JavaRefusal):
                # Java 1.4.2 fails with a NullPointerException (CastExecutors.castLiteralsWithEvolution)
                # on an IN list holding NULL over a column whose type was widened: no answer to compare
                assert "NullPointerException" in jf.result.error and "NULL" in f.sql(), jf.result.error
            elif jf is not None:
                java_rows = canon([r for r in _java_rows(jf.result, names) if f.holds(r) is True], names)
                assert java_rows == want, \
                    f"Java's read with {f.java()[0]} (for {f.sql()}) on a Java {context}:\n{java_rows}\nwant {want}"
        # 2. a projection
        got = answers[len(flts)]
        assert canon(got, projection) == canon(core, projection), f"select {projection} on a Java {context}"
        # 3. time travel
        got = answers[-1]
        want = canon([r for r in then if then_flt.holds(r) is True], then_names)
        assert canon(got, then_names) == want, \
            f"{options} WHERE {then_flt.sql()} on a Java {context}:\ngot  {canon(got, then_names)}\nwant {want}"
        java_then_rows = java_then.result if own_schema or t.snapshot(sid).schema_id != 0 else \
            _latest(cfg, java_then.result)
        if own_schema or not cfg.evolve:
            assert canon(java_then_rows, then_names) == canon(then, then_names), \
                f"snapshot {sid} of a Java {context}: Java's {java_then.result}, ours {then}"
        # 4. a stream continued from its checkpoint after Java wrote and compacted more
        if streamed:
            runs.append(stream_run(spark, path, ckpt, stream_options))
            changes = [r for run in runs for r in run]
            assert applied(cfg, changes, names) == canon(core, names), \
                f"a stream ({stream_options}) of a Java {context}, applied, is not the table:\n{changes}\ntable {core}"
    finally:
        shutil.rmtree(warehouse, ignore_errors=True)


@pytest.fixture(scope="module")
def java():
    return get_oracle()


@settings(max_examples=EXAMPLES, deadline=None, database=None, phases=PHASES,
          suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow,
                                 HealthCheck.data_too_large, HealthCheck.large_base_example])
@given(data=st.data())
def test_spark_reads_of_java_tables(java, spark, data):
    cfg = data.draw(configs(), label="config")
    n_before = data.draw(st.integers(1, 3), label="writes before")
    n_after = data.draw(st.integers(0 if not cfg.evolve else 1, 2), label="writes after")
    before = [data.draw(batches(cfg, False), label=f"batch {i}") for i in range(n_before)]
    after = [data.draw(batches(cfg, True), label=f"batch after {i}") for i in range(n_after)]
    compact = [data.draw(st.integers(0, 2), label="compact") == 0 for _ in range(n_before + n_after)]
    streamed = not cfg.evolve and data.draw(st.integers(0, 2), label="streamed") == 0
    check(java, spark, cfg, before, after, compact, data, streamed)


# ---- regressions: the bugs this hunt found, as explicit cases ---------------------------------------
BEFORE_1970 = [dt.datetime(1969, 12, 31, 23, 59, 59, 999000), dt.datetime(1969, 12, 31, 23, 59, 59, 500000),
               dt.datetime(2024, 1, 1, 1, 2, 3, 456000)]


def test_timestamp_partitions_of_java_orc_files_in_the_second_before_1970(java, spark, tmp_path):
    """Java writes partition columns into its data files too, and reads them from the partition.
    pyarrow misreads an ORC timestamp in the second before 1970 that has a fraction (Java's ORC
    writer stores its seconds as 0): 1969-12-31 23:59:59.999 came back as 1970-01-01
    00:00:00.999, so a TIMESTAMP partition of a Java ORC table read a value 1 s off, silently
    (Java reads 23:59:59.999), and `p < TIMESTAMP'1970-01-01 00:00:00'` missed those rows. (A
    value column of such files reads the same wrong value in Java too.)"""
    tables = {"append": ("TIMESTAMP(3)", [], BEFORE_1970 + [None]),
              "ltz": ("TIMESTAMP(6) WITH LOCAL TIME ZONE", [], BEFORE_1970 + [None]),
              "pk": ("TIMESTAMP(3)", ["k", "p"], BEFORE_1970)}
    java_rows = {}
    with java.batch() as b:
        for name, (ptype, keys, values) in tables.items():
            path = f"{tmp_path}/db.db/{name}"
            b.create_table(path, [{"name": "k", "type": "INT NOT NULL"},
                                  {"name": "p", "type": ptype + (" NOT NULL" if keys else "")}],
                           primary_keys=keys, partition_keys=["p"], options={"bucket": "1", "file.format": "orc"}
                           if keys else {"bucket": "-1", "file.format": "orc"})
            b.write(path, [{"k": i, "p": v} for i, v in enumerate(values)])
            b.write(path, [{"k": 0, "p": values[0]}])
            java_rows[name] = b.read(path)
    for name, pending in java_rows.items():
        path = f"{tmp_path}/db.db/{name}"
        want = canon(pending.result, ["k", "p"])
        written = list(enumerate(tables[name][2])) + ([] if name == "pk" else [(0, tables[name][2][0])])
        assert want == canon([{"k": i, "p": v.replace(tzinfo=UTC) if v and name == "ltz" else v}
                              for i, v in written], ["k", "p"])   # Java reads what it wrote
        assert canon(ps.Table.open(path).to_arrow().to_pylist(), ["k", "p"]) == want, name
        everything, before_1970 = spark_answers(spark, path, [({}, None, None),
                                                              ({}, "p < TIMESTAMP'1970-01-01 00:00:00'", None)])
        assert canon(everything, ["k", "p"]) == want, name
        assert sorted(r["k"] for r in before_1970) == ([0, 1] if name == "pk" else [0, 0, 1]), name
        if name == "pk":   # a stream reads the partition as well (merged by key)
            assert applied(Config("pk", "ts", [], {}), stream_run(spark, path, f"{tmp_path}/ck", {}),
                           ["k", "p"]) == want


NOT_LEGACY = {   # type: values (Java names the partitions CAST(value AS STRING))
    "TIMESTAMP(3)": [dt.datetime(2024, 1, 1, 1, 2, 3, 456000), dt.datetime(2024, 1, 1),
                     dt.datetime(2024, 1, 1, 0, 0, 0, 400000)],
    "TIMESTAMP(0)": [dt.datetime(2024, 1, 1, 1, 2, 3)],
    "TIMESTAMP(6)": [dt.datetime(2024, 1, 1, 0, 0, 0, 1), dt.datetime(1969, 12, 31, 23, 59, 59, 999999)],
    "TIMESTAMP(3) WITH LOCAL TIME ZONE": [dt.datetime(2024, 1, 1, 1, 2, 3, 450000, tzinfo=UTC)],
    "TIME(3)": [dt.time(12), dt.time(1, 2, 3, 450000), dt.time(0, 0, 0, 5000)],
    "TIME": [dt.time(23, 59, 59)],
}


def test_partitions_named_without_legacy_names(java, spark, tmp_path):
    """With `partition.legacy-name` = false Java names a TIMESTAMP partition by CAST(value AS
    STRING), 'yyyy-MM-dd HH:mm:ss' with at least its precision's fraction digits ('.000'), and a
    TIME one 'HH:mm:ss[.f]'; we named them as with legacy names ('2024-01-01T01:02:03.456',
    milliseconds of the day), so every read of such a Java table failed on a file "deleted by
    hand", and our writes went to directories Java does not read. Each type: Java's rows read by
    us and by Spark, ours written beside them read by Java."""
    paths = {ptype: f"{tmp_path}/db.db/t{i}" for i, ptype in enumerate(NOT_LEGACY)}
    with java.batch() as b:
        for ptype, values in NOT_LEGACY.items():
            b.create_table(paths[ptype], [{"name": "k", "type": "INT"}, {"name": "p", "type": ptype}],
                           partition_keys=["p"], options={"bucket": "-1", "partition.legacy-name": "false"})
            b.write(paths[ptype], [{"k": i, "p": v} for i, v in enumerate(values)])
    for ptype, values in NOT_LEGACY.items():
        t = ps.Table.open(paths[ptype])
        rows = [{"k": i, "p": v} for i, v in enumerate(values)]
        assert canon(t.to_arrow().to_pylist(), ["k", "p"]) == canon(rows, ["k", "p"]), ptype
        as_spark = [{"k": r["k"], "p": (r["p"].hour * 3600 + r["p"].minute * 60 + r["p"].second) * 1000 +
                     r["p"].microsecond // 1000 if ptype.startswith("TIME(") or ptype == "TIME" else r["p"]}
                    for r in rows]   # Spark reads a TIME as its milliseconds of the day
        assert canon(spark_answers(spark, paths[ptype], [({}, None, None)])[0], ["k", "p"]) == \
            canon(as_spark, ["k", "p"]), ptype
        t.write_arrow(pa.Table.from_pylist([{"k": 100 + r["k"], "p": r["p"]} for r in rows], schema=t.arrow_schema()))
    with java.batch() as b:
        read = {ptype: b.read(path) for ptype, path in paths.items()}
    for ptype, values in NOT_LEGACY.items():
        assert sorted(r["k"] for r in read[ptype].result) == sorted(list(range(len(values))) +
                                                                     [100 + i for i in range(len(values))]), ptype
