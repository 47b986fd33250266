"""Differential test of the `aggregation` and `partial-update` merge engines against Apache
Paimon Java 1.4.2 (tests/java_oracle.py).

Random tables with many column types (TINYINT..BIGINT, FLOAT, DOUBLE, DECIMAL(38,4) /
DECIMAL(18,2) / DECIMAL(5,2), STRING, CHAR, VARCHAR, BOOLEAN, DATE, TIMESTAMP(3/6),
TIMESTAMP_LTZ, BINARY, VARBINARY), random aggregate functions and engine options (with and
without deletion vectors, `changelog-producer = lookup` on DV tables), and random histories
of +I/-U/+U/-D batches with nulls, NaN, -0.0, infinities, extremes (integer and decimal
overflow), unicode and empty strings. We and Java write and compact the same table in turn;
at every hand-over Java's read equals ours, exactly (NaN, -0.0 and nulls included).

Every test of an example shares few JVMs: the tables of an example are driven in lockstep,
and each round's Java steps for all of them run in one JVM call. CI runs a few examples; set
AGG_DIFF_EXAMPLES to hunt longer (and AGG_DIFF_SEED for another derandomized sequence).

The differences it found are fixed (FIXED below keeps them as regressions) but one deliberate
difference, pinned as a strict xfail (see "known differences").
"""
from __future__ import annotations

import datetime as dt
import json
import math
import os
import struct
import tempfile
import time
from decimal import Decimal

import pyarrow as pa
import pytest
from hypothesis import HealthCheck, Phase, given, seed, settings
from hypothesis import strategies as st

import paimon_streaming as ps
from paimon_streaming.errors import PaimonError
from paimon_streaming.fileio import FileIO
from paimon_streaming.schema import SchemaManager, TableSchema

try:
    from java_oracle import JavaOracleError, epoch_nanos, get_oracle
except ImportError:  # pragma: no cover
    from tests.java_oracle import JavaOracleError, epoch_nanos, get_oracle

EXAMPLES = int(os.environ.get("AGG_DIFF_EXAMPLES", "5"))
SEED = int(os.environ.get("AGG_DIFF_SEED", "20250901"))
UTC = dt.timezone.utc

# ---- the table ---------------------------------------------------------------------------------
# name -> (Paimon type, family)
COLUMNS = {
    "i8": ("TINYINT", "int"), "i16": ("SMALLINT", "int"), "i32": ("INT", "int"), "i64": ("BIGINT", "int"),
    "f32": ("FLOAT", "float"), "f64": ("DOUBLE", "float"),
    "d38": ("DECIMAL(38, 4)", "decimal"), "d18": ("DECIMAL(18, 2)", "decimal"), "d5": ("DECIMAL(5, 2)", "decimal"),
    "s": ("STRING", "string"), "c": ("CHAR(4)", "cmp"), "vc": ("VARCHAR(10)", "cmp"),
    "b": ("BOOLEAN", "bool"), "dt": ("DATE", "cmp"), "ts3": ("TIMESTAMP(3)", "cmp"),
    "ts6": ("TIMESTAMP(6)", "cmp"), "ltz": ("TIMESTAMP(6) WITH LOCAL TIME ZONE", "cmp"),
    "bin": ("BINARY(3)", "cmp"), "vb": ("VARBINARY(8)", "cmp"),
}
VALUE_COLUMNS = list(COLUMNS)
LAST_FIRST = ["last_value", "last_non_null_value", "first_value", "first_non_null_value"]
FUNCTIONS = {  # family -> aggregate functions both sides support on it
    "int": ["sum", "product", "min", "max"] + LAST_FIRST,
    "float": ["sum", "product", "min", "max"] + LAST_FIRST,
    "decimal": ["sum", "product", "min", "max"] + LAST_FIRST,
    "string": ["listagg", "min", "max"] + LAST_FIRST,
    "cmp": ["min", "max"] + LAST_FIRST,
    "bool": ["bool_and", "bool_or"] + LAST_FIRST,
}
RETRACTABLE = {"sum", "last_value", "last_non_null_value"}
SEQUENCE_CANDIDATES = ["i32", "i64", "ts3", "dt"]  # sequence.field / sequence-group fields
ALL_KINDS = ("+I", "-U", "+U", "-D")


def fields_json(columns=COLUMNS) -> list[dict]:
    return [{"name": "k", "type": "INT NOT NULL"}] + [{"name": n, "type": t} for n, (t, _) in columns.items()]


def create_table(path: str, options: dict, columns=COLUMNS) -> ps.Table:
    """Our table with Paimon types Arrow cannot name (CHAR, VARCHAR(n), BINARY(n)), through a
    schema written by our SchemaManager (validated as `create_table` validates)."""
    obj = {"version": 3, "id": 0, "highestFieldId": len(columns),
           "fields": [dict(f, id=i) for i, f in enumerate(fields_json(columns))],
           "partitionKeys": [], "primaryKeys": ["k"], "options": {k: str(v) for k, v in options.items()},
           "timeMillis": int(time.time() * 1000)}
    schema = TableSchema.from_json(json.dumps(obj))
    schema.validate()
    file_io, p = FileIO.for_path(path)
    SchemaManager(file_io, p).create(schema)
    return ps.Table.open(path)


# ---- values ------------------------------------------------------------------------------------
def _ints(bits):
    lo, hi = -(1 << (bits - 1)), (1 << (bits - 1)) - 1
    return st.one_of(st.integers(-3, 3), st.sampled_from([lo, hi, lo + 1, hi - 1, hi // 2 + 1, -1, 2]),
                     st.integers(lo, hi))


def _dec(p, s, small=False):
    exact = lambda u: Decimal(f"{u}E-{s}")  # noqa: E731 (exact, whatever the decimal context)
    if small:
        return st.integers(-300, 300).map(exact)
    top = 10 ** p - 1
    return st.one_of(st.integers(-300, 300), st.sampled_from([top, -top, top - 1, 10 ** (p - 1), 1, -1]),
                     st.integers(-top, top)).map(exact)


_F32_SPECIAL = [math.nan, math.inf, -math.inf, -0.0, 0.0, 16777216.0, 1.0, 0.1, 3.4028234663852886e38,
                1e-45, -1.5, 1e20, 3.3]
_F64_SPECIAL = [math.nan, math.inf, -math.inf, -0.0, 0.0, 1e16, 1.0, 0.1, 1.7976931348623157e308, 5e-324, -1.5,
                1e200, 3.3]


def _floats(special, general, tame=False):
    if tame:  # without the values of the known differences (NaN, -0.0) in min/max/sum/product
        special = [x for x in special if not (math.isnan(x) or (x == 0 and math.copysign(1, x) < 0))]
        general = general.filter(lambda x: not (math.isnan(x) or (x == 0 and math.copysign(1, x) < 0)))
    return st.one_of(st.sampled_from(special), st.sampled_from(special), general)


TEXT = st.one_of(st.sampled_from(["", "a", "ü", "😀", "a,b", "B"]),
                 st.text(alphabet=st.sampled_from(["a", "B", "z", "ü", "€", "😀", ",", " ", "|", "\u00e9"]),
                         max_size=4))
_TS_BASE = dt.datetime(1970, 1, 1)


def _ts(unit_us):
    return st.one_of(st.integers(-3, 3), st.integers(-2 * 10 ** 15 // unit_us, 2 * 10 ** 15 // unit_us)).map(
        lambda n: _TS_BASE + dt.timedelta(microseconds=n * unit_us))


VALUES = {
    "i8": _ints(8), "i16": _ints(16), "i32": _ints(32), "i64": _ints(64),
    "f32": _floats(_F32_SPECIAL, st.floats(width=32)), "f64": _floats(_F64_SPECIAL, st.floats()),
    "d38": _dec(38, 4), "d18": _dec(18, 2), "d5": _dec(5, 2),
    "s": TEXT, "c": TEXT, "vc": TEXT, "b": st.booleans(),
    "dt": st.one_of(st.sampled_from([dt.date(1970, 1, 1), dt.date(1969, 12, 31)]),
                    st.dates(dt.date(1000, 1, 1), dt.date(9999, 12, 31))),
    "ts3": _ts(1000), "ts6": _ts(1), "ltz": _ts(1).map(lambda t: t.replace(tzinfo=UTC)),
    "bin": st.binary(min_size=3, max_size=3), "vb": st.binary(max_size=8),
}
# AGG_DIFF_KNOWN=1 also generates the inputs of the known differences (xfail tests below)
KNOWN = bool(os.environ.get("AGG_DIFF_KNOWN"))
# DECIMAL(p <= 18) sums beyond the precision are a deliberate difference (null here, kept by Java 1.4.2)
TAME = {"d18": _dec(18, 2, small=True), "d5": _dec(5, 2, small=True)}


def value_strategy(column: str, func: str | None):
    if not KNOWN and column in TAME and func == "sum":
        return TAME[column]
    return VALUES[column]


def row_strategy(funcs: dict, keys: int = 3):
    return st.fixed_dictionaries({"k": st.integers(0, keys - 1),
                                  **{c: st.none() | value_strategy(c, funcs.get(c)) for c in VALUE_COLUMNS}})


# ---- configurations ----------------------------------------------------------------------------
@st.composite
def aggregation_config(draw):
    o = {"merge-engine": "aggregation"}
    funcs = {}
    seq = draw(st.none() | st.sampled_from(SEQUENCE_CANDIDATES))
    if seq:
        o["sequence.field"] = seq
    default = draw(st.none() | st.sampled_from(["last_value", "first_non_null_value", "last_non_null_value",
                                                "first_value"]))
    if default:
        o["fields.default-aggregate-function"] = default
    for c in VALUE_COLUMNS:
        if c == seq:
            funcs[c] = "last_value"
            continue
        choices = FUNCTIONS[COLUMNS[c][1]]
        f = draw(st.none() | st.sampled_from(choices))
        if f is not None:
            o[f"fields.{c}.aggregate-function"] = f
            if f == "listagg" and draw(st.booleans()):
                o[f"fields.{c}.list-agg-delimiter"] = draw(st.sampled_from(["|", "", " - ", "😀"]))
            if f == "listagg" and draw(st.booleans()):
                o[f"fields.{c}.distinct"] = "true"
        funcs[c] = f or default or "last_non_null_value"
    remove = draw(st.booleans())
    if remove:
        o["aggregation.remove-record-on-delete"] = "true"
    stuck = [c for c, f in funcs.items() if f not in RETRACTABLE]
    if not remove:
        for c in stuck:
            if draw(st.booleans()):
                o[f"fields.{c}.ignore-retract"] = "true"
        stuck = [c for c in stuck if f"fields.{c}.ignore-retract" not in o]
    if not stuck:
        kinds = ALL_KINDS
    elif remove:
        kinds = ("+I", "+U", "-D")  # a -D resets the row and retracts nothing
    else:
        kinds = ("+I", "+U")
    return o, kinds, funcs


PU_MODES = ("plain", "ignore-delete", "remove-on-delete", "groups", "groups-remove", "groups-agg", "groups-agg-remove")


@st.composite
def partial_update_config(draw, modes=PU_MODES):
    o = {"merge-engine": "partial-update"}
    mode = draw(st.sampled_from(modes))
    funcs = {}
    kinds = ALL_KINDS
    if mode == "plain":
        kinds = ("+I", "+U")
    elif mode == "ignore-delete":
        o["ignore-delete"] = "true"
    elif mode == "remove-on-delete":
        o["partial-update.remove-record-on-delete"] = "true"
    else:
        seqs = draw(st.lists(st.sampled_from(SEQUENCE_CANDIDATES), min_size=1, max_size=3, unique=True))
        others = [c for c in VALUE_COLUMNS if c not in SEQUENCE_CANDIDATES]
        owner = draw(st.lists(st.sampled_from(range(len(seqs) + 1)), min_size=len(others), max_size=len(others)))
        for i, s in enumerate(seqs):
            members = [c for c, w in zip(others, owner) if w == i]
            if members:
                o[f"fields.{s}.sequence-group"] = ",".join(members)
        groups = [s for s in seqs if f"fields.{s}.sequence-group" in o]
        if not groups:
            o[f"fields.{seqs[0]}.sequence-group"] = others[0]
            groups = [seqs[0]]
        if mode.endswith("-remove"):
            o["partial-update.remove-record-on-sequence-group"] = draw(st.sampled_from(groups))
        if mode.startswith("groups-agg"):  # aggregate functions on the groups' fields
            o.update(_group_functions(draw, o, funcs))
            stuck = [c for c, f in funcs.items() if f not in RETRACTABLE and f"fields.{c}.ignore-retract" not in o]
            if stuck:
                kinds = ("+I", "+U")
    if mode in ("plain", "ignore-delete") and draw(st.booleans()):
        o["sequence.field"] = draw(st.sampled_from(SEQUENCE_CANDIDATES))
    return o, kinds, funcs


def _group_functions(draw, o, funcs) -> dict:
    """Aggregate functions for the fields of the sequence groups in `o` (partial-update):
    explicit ones, `fields.default-aggregate-function` = last_non_null_value (the only default
    Paimon allows while some field is outside every group), ignore-retract on some."""
    extra = {}
    members = [c for k, v in o.items() if k.endswith(".sequence-group") for c in v.split(",")]
    default = draw(st.none() | st.just("last_non_null_value"))
    retracts = draw(st.booleans())  # every function retracts or ignores retractions: -U/-D rows drawn
    if default:
        extra["fields.default-aggregate-function"] = default
    for c in members:
        f = draw(st.none() | st.sampled_from(FUNCTIONS[COLUMNS[c][1]]))
        if f is not None:
            extra[f"fields.{c}.aggregate-function"] = f
            if f == "listagg" and draw(st.booleans()):
                extra[f"fields.{c}.list-agg-delimiter"] = draw(st.sampled_from(["|", "", " - ", "😀"]))
            if f == "listagg" and draw(st.booleans()):
                extra[f"fields.{c}.distinct"] = "true"
        f = f or default
        if f is None:
            continue
        funcs[c] = f
        if f not in RETRACTABLE and (retracts or draw(st.booleans())):
            extra[f"fields.{c}.ignore-retract"] = "true"
    return extra


@st.composite
def table_config(draw, engines=None):
    o, kinds, funcs = draw(engines if engines is not None else st.one_of(aggregation_config(), partial_update_config()))
    o = {"bucket": str(draw(st.sampled_from([1, 2]))), **o}
    if draw(st.booleans()):
        o["deletion-vectors.enabled"] = "true"
        if draw(st.booleans()):
            o["changelog-producer"] = "lookup"
    return o, kinds, funcs


def batch_strategy(kinds, funcs):
    return st.lists(st.tuples(st.sampled_from(kinds), row_strategy(funcs)), min_size=1, max_size=8)


@st.composite
def history(draw, rounds, engines=None):
    o, kinds, funcs = draw(table_config(engines))
    step = st.one_of(st.tuples(st.just("write"), batch_strategy(kinds, funcs)),
                     st.tuples(st.just("compact"), st.booleans()))
    plan = []
    for _ in range(rounds):
        ours = draw(st.lists(step, max_size=3))
        java = draw(st.lists(step, max_size=3))
        plan.append((ours, java))
    return o, plan


# ---- comparison --------------------------------------------------------------------------------
def norm_value(v):
    if isinstance(v, float):
        if math.isnan(v):
            return ("NaN",)
        return ("float", struct.pack(">d", v))  # -0.0 != 0.0
    if isinstance(v, dt.datetime):
        return ("ts", epoch_nanos(v), v.tzinfo is not None)
    if isinstance(v, Decimal):
        return ("dec", str(v))  # scale included
    return v


def norm_rows(rows) -> list[tuple]:
    out = [tuple((c, norm_value(v)) for c, v in sorted(r.items())) for r in rows]
    return sorted(out, key=repr)


def show(rows) -> str:
    return "\n".join(repr(r) for r in sorted(rows, key=lambda r: r["k"]))


def ours_write(table: ps.Table, batch) -> None:
    schema = table.arrow_schema()
    t = pa.Table.from_pylist([r for _, r in batch], schema=schema)
    table.write_arrow(t.append_column("_op", pa.array([k for k, _ in batch], pa.string())), row_kind_column="_op")


def java_rows(batch) -> list[dict]:
    return [dict(r, _ROW_KIND=k) for k, r in batch]


def ours_read(path: str) -> list[dict]:
    return ps.Table.open(path).to_arrow().to_pylist()


def run_histories(histories) -> None:
    """Drive the tables in lockstep: each round, our steps on every table, then one JVM that
    reads every table (== our read), runs Java's steps and reads again (== our read after)."""
    java = get_oracle()
    with tempfile.TemporaryDirectory() as wh:
        paths = []
        for i, (o, _) in enumerate(histories):
            path = os.path.join(wh, "db.db", f"t{i}")
            create_table(path, o)
            paths.append(path)
        rounds = max(len(p) for _, p in histories)
        for r in range(rounds):
            for path, (o, plan) in zip(paths, histories):
                for op in plan[r][0]:
                    table = ps.Table.open(path)
                    if op[0] == "write":
                        ours_write(table, op[1])
                    else:
                        table.compact(full=op[1])
            before = {path: ours_read(path) for path in paths}
            pend = {}
            with java.batch() as b:
                for path, (o, plan) in zip(paths, histories):
                    first = b.read(path)
                    for op in plan[r][1]:
                        if op[0] == "write":
                            b.write(path, java_rows(op[1]))
                        else:
                            b.compact(path)
                    pend[path] = (first, b.read(path))
            for i, (path, (o, plan)) in enumerate(zip(paths, histories)):
                first, after = pend[path]
                assert norm_rows(first.result) == norm_rows(before[path]), (
                    f"table t{i} {o}, round {r}: Java's read of our table differs from ours\n"
                    f"java:\n{show(first.result)}\nours:\n{show(before[path])}")
                ours_after = ours_read(path)
                assert norm_rows(after.result) == norm_rows(ours_after), (
                    f"table t{i} {o}, round {r}: after Java's steps, reads differ\n"
                    f"java:\n{show(after.result)}\nours:\n{show(ours_after)}")


# ---- twins: the same input written by us and by Java -----------------------------------------
@st.composite
def twin_history(draw, engines=None):
    """A table written twice, by us and by Java, with the same batches and full compactions
    (no DV: both then lay the files out alike, so even order-sensitive results are comparable)."""
    o, kinds, funcs = draw(engines if engines is not None else st.one_of(aggregation_config(), partial_update_config()))
    o = {"bucket": str(draw(st.sampled_from([1, 2]))), **o}
    steps = draw(st.lists(st.one_of(st.tuples(st.just("write"), batch_strategy(kinds, funcs)),
                                    st.tuples(st.just("compact"), st.just(True))), min_size=1, max_size=4))
    return o, steps


def run_twins(twins) -> None:
    java = get_oracle()
    with tempfile.TemporaryDirectory() as wh:
        pend = []
        with java.batch() as b:
            for i, (o, steps) in enumerate(twins):
                ours, theirs = os.path.join(wh, "db.db", f"ours{i}"), os.path.join(wh, "db.db", f"java{i}")
                create_table(ours, o)
                b.create_table(theirs, fields_json(), ["k"], [], o)
                for op in steps:
                    if op[0] == "write":
                        ours_write(ps.Table.open(ours), op[1])
                        b.write(theirs, java_rows(op[1]))
                    else:
                        ps.Table.open(ours).compact(full=True)
                        b.compact(theirs)
                pend.append((o, ours, theirs, b.read(ours), b.read(theirs)))
        for o, ours, theirs, java_of_ours, java_of_java in pend:
            mine = ours_read(ours)
            assert norm_rows(java_of_ours.result) == norm_rows(mine), (
                f"{o}: Java's read of our table differs from ours\njava:\n{show(java_of_ours.result)}\n"
                f"ours:\n{show(mine)}")
            assert norm_rows(java_of_java.result) == norm_rows(mine), (
                f"{o}: the same input written by Java reads differently\njava:\n{show(java_of_java.result)}\n"
                f"ours:\n{show(mine)}")
            assert norm_rows(ours_read(theirs)) == norm_rows(java_of_java.result), f"{o}: our read of Java's table"


# ---- the property ------------------------------------------------------------------------------
@seed(SEED)
@settings(max_examples=EXAMPLES, deadline=None, suppress_health_check=list(HealthCheck),
          phases=[Phase.explicit, Phase.reuse, Phase.generate] + ([Phase.shrink] if os.environ.get("AGG_DIFF_SHRINK") else []))
@given(st.integers(2, 3).flatmap(lambda rounds: st.lists(history(rounds), min_size=1, max_size=6)))
def test_random_histories_match_java(histories):
    run_histories(histories)


@seed(SEED + 1)
@settings(max_examples=EXAMPLES, deadline=None, suppress_health_check=list(HealthCheck),
          phases=[Phase.explicit, Phase.reuse, Phase.generate] + ([Phase.shrink] if os.environ.get("AGG_DIFF_SHRINK") else []))
@given(st.lists(twin_history(), min_size=1, max_size=8))
def test_same_input_written_by_us_and_java(twins):
    run_twins(twins)


# partial-update with aggregate functions in sequence groups, on its own (PU_AGG_DIFF_EXAMPLES)
PU_AGG_EXAMPLES = int(os.environ.get("PU_AGG_DIFF_EXAMPLES", "3"))
GROUPS_AGG = partial_update_config(modes=("groups-agg", "groups-agg-remove"))


@seed(SEED + 2)
@settings(max_examples=PU_AGG_EXAMPLES, deadline=None, suppress_health_check=list(HealthCheck),
          phases=[Phase.explicit, Phase.reuse, Phase.generate] + ([Phase.shrink] if os.environ.get("AGG_DIFF_SHRINK") else []))
@given(st.integers(2, 3).flatmap(lambda rounds: st.lists(history(rounds, GROUPS_AGG), min_size=2, max_size=6)),
       st.lists(twin_history(GROUPS_AGG), min_size=2, max_size=6))
def test_partial_update_group_aggregates_match_java(histories, twins):
    """Tables in turn written and compacted by us and by Java (with and without deletion
    vectors, lookup changelog), and twins written by both."""
    run_histories(histories)
    run_twins(twins)


# ---- fixed cases: the same batches written by us and by Java, one JVM for all ------------------
AGG = {"merge-engine": "aggregation"}
NAN, INF = math.nan, math.inf


def _case(types: dict, options: dict, *batches):
    """Columns {name: Paimon type}, table options, batches of (kind, {column: value}) (k = 1
    unless given); each batch is one write."""
    columns = {n: (t, "fixed") for n, t in types.items()}
    full = [[(kind, {"k": 1, **{n: None for n in types}, **values}) for kind, values in batch] for batch in batches]
    return columns, {"bucket": "1", **AGG, **options}, full


def _adds(column, *values, kind="+I"):
    return [(kind, {column: v}) for v in values]


F = "fields.v.aggregate-function"
FIXED = {  # cases where we agree with Java (regressions)
    "tinyint-sum-product-wrap": _case({"v": "TINYINT", "w": "TINYINT"}, {F: "sum", "fields.w.aggregate-function": "product"},
                                      [("+I", {"v": 127, "w": 127}), ("+I", {"v": 1, "w": 3}), ("+I", {"v": -128, "w": None})],
                                      [("+I", {"v": -1, "w": -128}), ("+I", {"v": -1, "w": 2})]),
    "bigint-sum-product-wrap": _case({"v": "BIGINT", "w": "BIGINT"}, {F: "sum", "fields.w.aggregate-function": "product"},
                                     [("+I", {"v": 2 ** 63 - 1, "w": 2 ** 62}), ("+I", {"v": 1, "w": 4})],
                                     [("+I", {"v": 1, "w": 3})]),
    "double-sum-nan-inf": _case({"v": "DOUBLE"}, {F: "sum"}, _adds("v", 1e308, 1e308, -INF, None), _adds("v", NAN)),
    "listagg-delimiters-empty": _case({"v": "STRING", "w": "STRING"},
                                      {F: "listagg", "fields.w.aggregate-function": "listagg",
                                       "fields.w.list-agg-delimiter": "😀"},
                                      [("+I", {"v": "", "w": ""}), ("+I", {"v": "a", "w": None}), ("+I", {"v": "", "w": "ü"})],
                                      [("+I", {"v": "b,c", "w": "x"})]),
    "min-max-strings-binary": _case({"v": "VARCHAR(10)", "w": "VARBINARY(8)", "x": "CHAR(4)"},
                                    {F: "max", "fields.w.aggregate-function": "min", "fields.x.aggregate-function": "max"},
                                    [("+I", {"v": "z", "w": b"\xff", "x": "a"}), ("+I", {"v": "ü", "w": b"\x01\x00", "x": "😀"}),
                                     ("+I", {"v": "€", "w": b"", "x": "ab"})]),
    "remove-record-on-delete-first-value": _case(
        {"v": "INT", "w": "INT", "x": "STRING"},
        {"aggregation.remove-record-on-delete": "true", F: "sum", "fields.w.aggregate-function": "first_value",
         "fields.x.aggregate-function": "listagg"},
        [("+I", {"v": 1, "w": 1, "x": "a"}), ("-D", {"v": 10, "w": 2, "x": "b"}), ("+I", {"v": 4, "w": 3, "x": "c"})],
        [("+I", {"v": 5, "w": 4, "x": "d"})], [("-D", {"v": 7, "w": 5, "x": "e"})]),
    "retract-last-values-sum": _case({"v": "INT", "w": "STRING", "x": "DECIMAL(5, 2)", "y": "DOUBLE"},
                                     {F: "sum", "fields.w.aggregate-function": "last_non_null_value",
                                      "fields.x.aggregate-function": "sum", "fields.y.aggregate-function": "last_value"},
                                     [("-U", {"v": 3, "w": "a", "x": Decimal("1.50"), "y": 1.0})],
                                     [("+I", {"v": None, "w": None, "x": None, "y": None}), ("-D", {"v": 1, "w": None, "x": Decimal("-2.25"), "y": 2.0})]),
    "ignore-retract-min-max-bool": _case({"v": "DATE", "w": "BOOLEAN", "x": "TIMESTAMP(3)"},
                                         {F: "max", "fields.v.ignore-retract": "true", "fields.w.aggregate-function": "bool_and",
                                          "fields.w.ignore-retract": "true", "fields.x.aggregate-function": "min",
                                          "fields.x.ignore-retract": "true"},
                                         [("+I", {"v": dt.date(2020, 1, 1), "w": True, "x": dt.datetime(2020, 1, 1, 0, 0, 0, 1000)})],
                                         [("-U", {"v": dt.date(2030, 1, 1), "w": False, "x": dt.datetime(1900, 1, 1)}),
                                          ("+U", {"v": dt.date(2021, 1, 1), "w": None, "x": None})]),
    "sequence-field-decides-order": _case({"v": "INT", "seq": "BIGINT", "x": "STRING"},
                                          {F: "sum", "sequence.field": "seq", "fields.x.aggregate-function": "first_value"},
                                          [("+I", {"v": 1, "seq": 5, "x": "five"}), ("+I", {"v": 2, "seq": 1, "x": "one"})],
                                          [("+I", {"v": 4, "seq": None, "x": "null"})]),
    # differences this test found, fixed in session 45 (numeric_aggregates.py)
    "product-retract": _case({"v": "INT", "w": "DOUBLE"}, {F: "product", "fields.w.aggregate-function": "product"},
                             [("+I", {"v": 6, "w": 3.0})], [("-U", {"v": 4, "w": 2.0}), ("+U", {"v": 5, "w": 5.0})]),
    "float-sum-in-float": _case({"v": "FLOAT"}, {F: "sum"}, _adds("v", 16777216.0, 1.0, 1.0)),
    "float-product-in-float": _case({"v": "FLOAT"}, {F: "product"}, _adds("v", 0.1, 0.1, 3.3)),
    "max-nan": _case({"v": "DOUBLE", "w": "FLOAT"}, {F: "max", "fields.w.aggregate-function": "max"},
                     [("+I", {"v": 1.0, "w": 1.0}), ("+I", {"v": NAN, "w": NAN}), ("+I", {"v": 2.0, "w": 2.0})]),
    "min-max-negative-zero": _case({"v": "DOUBLE", "w": "DOUBLE"}, {F: "max", "fields.w.aggregate-function": "min"},
                                   [("+I", {"v": 0.0, "w": 0.0}), ("+I", {"v": -0.0, "w": -0.0})],
                                   [("+I", {"k": 2, "v": -0.0, "w": -0.0}), ("+I", {"k": 2, "v": 0.0, "w": 0.0})]),
    "sum-negative-zero": _case({"v": "DOUBLE"}, {F: "sum"}, _adds("v", -0.0, None)),
    "decimal-sum-overflow-restarts": _case({"v": "DECIMAL(20, 2)"}, {F: "sum"},
                                           _adds("v", Decimal("999999999999999999.99"), Decimal("0.01"),
                                                 Decimal("5.00"))),
    "decimal38-sum-overflow-on-read": _case({"v": "DECIMAL(38, 4)"}, {F: "sum"},
                                            _adds("v", Decimal("9999999999999999999999999999999999.9999")),
                                            _adds("v", Decimal("0.0001")), _adds("v", Decimal("5.0000"))),
    # listagg with fields.<f>.distinct (the first value kept as it is, later tokens once) and
    # product on DECIMAL (rounds each step, null beyond the precision, retractions divide)
    "listagg-distinct": _case(
        {"v": "STRING", "w": "STRING", "x": "STRING", "y": "STRING"},
        {F: "listagg", "fields.v.distinct": "true", "fields.w.aggregate-function": "listagg",
         "fields.w.distinct": "true", "fields.w.list-agg-delimiter": " - ", "fields.x.aggregate-function": "listagg",
         "fields.x.distinct": "true", "fields.x.list-agg-delimiter": "", "fields.y.aggregate-function": "listagg",
         "fields.y.distinct": "true", "fields.y.list-agg-delimiter": "😀"},
        [("+I", {"v": "", "w": None, "x": "a b", "y": "ü😀ü"}), ("+I", {"v": "a,b,a", "w": "p -", "x": "b", "y": ""}),
         ("+I", {"v": "b,c,,c", "w": "q", "x": "c", "y": "😀a😀ü"})],
        [("+I", {"v": None, "w": "p", "x": "bc", "y": None}), ("+I", {"v": "c,d,", "w": "- q", "x": "d e", "y": "a"})],
        [("+I", {"k": 2, "v": "", "w": "", "x": "", "y": ""}), ("+I", {"k": 2, "v": "", "w": None, "x": "", "y": ""})],
        [("+I", {"k": 3, "v": "x,x", "w": "a - a", "x": "a  a", "y": "😀"}),
         ("+I", {"k": 3, "v": "x, x,y", "w": "a -  - b", "x": " b", "y": "😀😀b"})]),
    "listagg-distinct-remove-record-on-delete": _case(
        {"v": "STRING", "w": "INT"}, {F: "listagg", "fields.v.distinct": "true", "fields.w.aggregate-function": "sum",
                                      "aggregation.remove-record-on-delete": "true"},
        [("+I", {"v": "a,b", "w": 1}), ("-D", {"v": "b,b", "w": 2}), ("+I", {"v": "a,b,c", "w": 3})],
        [("+I", {"v": "c,a,d", "w": 4})]),
    "decimal-product": _case(
        {"v": "DECIMAL(10, 2)", "w": "DECIMAL(38, 4)", "x": "DECIMAL(5, 2)"},
        {F: "product", "fields.w.aggregate-function": "product", "fields.x.aggregate-function": "product"},
        [("+I", {"v": Decimal("1.50"), "w": Decimal("1.2345"), "x": Decimal("999.99")}),
         ("+I", {"v": Decimal("0.05"), "w": None, "x": Decimal("2.00")}),
         ("+I", {"v": Decimal("-3.33"), "w": Decimal("12345678901234567890.1234"), "x": Decimal("1.50")})],
        [("+I", {"v": None, "w": Decimal("-99999999999999999.9999"), "x": Decimal("-0.05")}),
         ("+I", {"v": Decimal("0.01"), "w": Decimal("3.0000"), "x": Decimal("0.10")})],
        [("+I", {"k": 2, "v": Decimal("0.05"), "w": Decimal("0.0005"), "x": Decimal("0.05")}),
         ("+I", {"k": 2, "v": Decimal("0.05"), "w": Decimal("0.5000"), "x": Decimal("-0.10")})]),
    "decimal-product-retract": _case(
        {"v": "DECIMAL(10, 2)", "w": "DECIMAL(38, 4)", "x": "DECIMAL(5, 2)"},
        {F: "product", "fields.w.aggregate-function": "product", "fields.x.aggregate-function": "product"},
        [("+I", {"v": Decimal("3.00"), "w": Decimal("-7.0000"), "x": Decimal("999.99")}),
         ("-U", {"v": Decimal("8.00"), "w": Decimal("0.0016"), "x": Decimal("2.00")}),
         ("+U", {"v": Decimal("2.00"), "w": None, "x": Decimal("500.00")})],
        [("-U", {"v": None, "w": Decimal("-2.5000"), "x": Decimal("3.00")}),
         ("+I", {"v": Decimal("-1.25"), "w": Decimal("1.0000"), "x": Decimal("1.50")})],
        [("-D", {"k": 2, "v": Decimal("3.00"), "w": Decimal("3.0000"), "x": Decimal("7.00")}),
         ("+I", {"k": 2, "v": Decimal("2.00"), "w": Decimal("0.0000"), "x": None}),
         ("-U", {"k": 2, "v": Decimal("-0.80"), "w": Decimal("-0.0625"), "x": Decimal("0.01")})]),
    # a key with more than 64 values in one merge is folded on its own (numeric_aggregates._LONG_GROUP)
    "long-key-float-sum-product": _case(
        {"v": "FLOAT", "w": "DOUBLE", "x": "BIGINT"}, {F: "sum", "fields.w.aggregate-function": "product",
                                                      "fields.x.aggregate-function": "product"},
        [("+I", {"v": 16777216.0 if i == 0 else 1.0, "w": 1.0 + i / 1000, "x": (3, 2, -1, -2, 5)[i % 5]})
         for i in range(100)]),
    "long-key-retractions": _case(
        {"v": "FLOAT", "w": "DOUBLE", "x": "INT"}, {F: "sum", "fields.w.aggregate-function": "product",
                                                   "fields.x.aggregate-function": "product"},
        [("-U" if i % 7 == 3 else "+I", {"v": 0.1 * i, "w": 1.0 + i / 300, "x": 7 - (i % 4) if i % 9 else -3})
         for i in range(90)]),
}
# partial-update with aggregate functions in sequence groups (rows with an older group
# sequence go through aggReversed; -U/-D retract; a first retraction starts the row)
PU_G = {"merge-engine": "partial-update", "fields.g.sequence-group": "v,w,x,y,z"}


def _pu(types: dict, options: dict, *batches):
    columns, o, full = _case({"g": "INT", **types}, options, *batches)
    o.pop("merge-engine")
    return columns, {**o, **PU_G}, full


def _g(g, **values):
    return ("+I", {"g": g, **values})


FIXED.update({
    "pu-group-sum-min-listagg": _pu(
        {"v": "BIGINT", "w": "INT", "x": "STRING", "y": "DOUBLE", "z": "BOOLEAN"},
        {F: "sum", "fields.w.aggregate-function": "min", "fields.x.aggregate-function": "listagg",
         "fields.y.aggregate-function": "product", "fields.z.aggregate-function": "bool_or"},
        [_g(2, v=1, w=5, x="a", y=2.0, z=False), _g(1, v=2, w=3, x="b", y=None, z=None)],
        [_g(3, v=4, w=None, x="c", y=3.0, z=False), _g(0, v=8, w=9, x="d", y=0.5, z=True), _g(None, v=100, x="e")]),
    "pu-group-first-last": _pu(
        {"v": "INT", "w": "INT", "x": "STRING", "y": "INT", "z": "INT"},
        {F: "first_value", "fields.w.aggregate-function": "first_non_null_value",
         "fields.x.aggregate-function": "last_non_null_value", "fields.y.aggregate-function": "last_value"},
        [_g(2, v=10, w=None, x=None, y=1, z=1), _g(1, v=20, w=3, x="b", y=2, z=2)],
        [_g(3, v=30, w=4, x=None, y=3, z=3)], [_g(0, v=40, w=None, x="d", y=4, z=4)]),
    "pu-group-first-non-null-initialized-by-older": _pu(
        {"v": "INT", "w": "INT", "x": "INT", "y": "INT", "z": "INT"},
        {F: "first_non_null_value"},
        [_g(2, v=None), _g(1, v=3)], [_g(0, v=7)], [_g(3, v=9)]),
    "pu-group-retractions": _pu(
        {"v": "INT", "w": "STRING", "x": "DECIMAL(5, 2)", "y": "DOUBLE", "z": "INT"},
        {F: "sum", "fields.w.aggregate-function": "last_non_null_value", "fields.x.aggregate-function": "sum",
         "fields.y.aggregate-function": "last_value", "fields.z.aggregate-function": "max",
         "fields.z.ignore-retract": "true"},
        [("-U", {"g": 1, "v": 3, "w": "a", "x": Decimal("1.50"), "y": 1.0, "z": 5})],
        [_g(2, v=None, w=None, x=None, y=None, z=1), ("-D", {"g": 1, "v": 1, "w": "q", "x": Decimal("-2.25"),
                                                             "y": 2.0, "z": 9})],
        [("-U", {"g": 5, "v": 7, "w": None, "x": None, "y": None, "z": 2}), _g(4, v=1, w="z", x=Decimal("1.00"))]),
    "pu-group-remove-record-on-group": _pu(
        {"v": "INT", "w": "INT", "x": "STRING", "y": "INT", "z": "INT"},
        {F: "sum", "fields.w.aggregate-function": "first_value", "fields.w.ignore-retract": "true",
         "fields.x.aggregate-function": "listagg", "fields.x.ignore-retract": "true",
         "partial-update.remove-record-on-sequence-group": "g"},
        [_g(1, v=1, w=1, x="a"), _g(2, v=2, w=2, x="b")], [("-D", {"g": 3, "v": 100, "w": 30, "x": "c"})],
        [_g(4, v=5, w=5, x="d"), _g(0, v=7, w=7, x="e")]),
    "pu-group-listagg-distinct-decimal-product": _pu(
        {"v": "STRING", "w": "DECIMAL(10, 2)", "x": "STRING", "y": "INT", "z": "INT"},
        {F: "listagg", "fields.v.distinct": "true", "fields.w.aggregate-function": "product",
         "fields.x.aggregate-function": "listagg", "fields.x.distinct": "true", "fields.x.list-agg-delimiter": " - "},
        [_g(2, v="b,c,b", w=Decimal("1.50"), x="q"), _g(1, v="a,b", w=Decimal("0.33"), x="p -")],
        [_g(3, v="d,a", w=Decimal("3.00"), x="p"), _g(0, v="", w=None, x="- q"), _g(None, v="z", w=Decimal("9.00"))],
        [_g(1, v="e,c,e", w=Decimal("-0.50"), x="r - p -")]),
    "pu-group-default-function": _pu(
        {"v": "INT", "w": "INT", "x": "STRING", "y": "INT", "z": "INT"},
        {"fields.default-aggregate-function": "sum", "fields.x.aggregate-function": "listagg"},
        [_g(2, v=1, w=None, x="a", y=1, z=None), _g(1, v=2, w=3, x="b", y=2, z=None)], [_g(0, v=4, x="c")]),
})
KNOWN_DIFFERENCES = {  # name -> (case, reason): pinned as strict xfails
    "decimal18-sum-overflow-kept": (
        _case({"v": "DECIMAL(5, 2)"}, {F: "sum"}, _adds("v", Decimal("999.99"), Decimal("0.01"))),
        "DIFFERENCE (deliberate, README 'Aggregation'): a DECIMAL(p <= 18) sum beyond the precision is null "
        "here, as Java gives for wider decimals; Java 1.4.2 adds compact decimals as longs without a precision "
        "check (DecimalUtils.add: Math.addExact + Decimal.fromUnscaledLong): 1000.00 in a DECIMAL(5, 2)"),
}


def _fixed_name(name):
    return name.replace("-", "_")


@pytest.fixture(scope="module")
def fixed_results():
    """{case: (ours of ours, Java of ours, Java of Java)} for FIXED and KNOWN_DIFFERENCES in one JVM."""
    return run_fixed({**FIXED, **{n: c for n, (c, _) in KNOWN_DIFFERENCES.items()}})


def run_fixed(cases: dict) -> dict:
    results = {}
    with tempfile.TemporaryDirectory() as wh:
        pend = {}
        with get_oracle().batch() as b:
            for name, (columns, o, batches) in cases.items():
                ours = os.path.join(wh, "db.db", "ours_" + _fixed_name(name))
                theirs = os.path.join(wh, "db.db", "java_" + _fixed_name(name))
                create_table(ours, o, columns)
                b.create_table(theirs, fields_json(columns), ["k"], [], o)
                error = None
                for batch in batches:
                    b.write(theirs, java_rows(batch))
                    if error is None:
                        try:
                            ours_write(ps.Table.open(ours), batch)
                        except Exception as e:  # noqa: BLE001 (a difference to report, not to crash on)
                            error = e
                pend[name] = (ours, error, b.read(ours), b.read(theirs))
        for name, (ours, error, java_of_ours, java_of_java) in pend.items():
            try:
                mine = error or ours_read(ours)
            except Exception as e:  # noqa: BLE001
                mine = e
            results[name] = (mine, java_of_ours.result, java_of_java.result)
    return results


def _check_fixed(results, name):
    mine, java_of_ours, java_of_java = results[name]
    if isinstance(mine, Exception):
        raise AssertionError(f"{name}: we failed ({type(mine).__name__}: {mine}); Java read {java_of_java}")
    assert norm_rows(mine) == norm_rows(java_of_java), f"{name}: ours {mine} != Java's {java_of_java}"
    assert norm_rows(java_of_ours) == norm_rows(java_of_java), f"{name}: Java reads our table as {java_of_ours}"


@pytest.mark.parametrize("name", sorted(FIXED))
def test_fixed_cases_match_java(fixed_results, name):
    _check_fixed(fixed_results, name)


@pytest.mark.parametrize("name", [pytest.param(n, marks=pytest.mark.xfail(strict=True, reason=r))
                                  for n, (_, r) in sorted(KNOWN_DIFFERENCES.items())])
def test_known_differences(fixed_results, name):
    _check_fixed(fixed_results, name)


def test_both_refuse_a_retraction_max_cannot_retract(tmp_path):
    """A -U merged with an older version of a `max` column without ignore-retract: we refuse
    the read, and so does Java (FieldAggregator.retract throws for max)."""
    columns, o, batches = _case({"v": "INT", "w": "INT"}, {F: "max", "fields.w.aggregate-function": "sum"},
                                [("+I", {"v": 1, "w": 1})], [("-U", {"v": 1, "w": 1})])
    path = str(tmp_path / "db.db" / "t")
    create_table(path, o, columns)
    for batch in batches:  # a lone -U is written as is (Java's reducer passes it through)
        ours_write(ps.Table.open(path), batch)
    with pytest.raises(PaimonError, match="fields.v.ignore-retract"):
        ours_read(path)
    with pytest.raises(JavaOracleError, match="(?i)retract"):
        get_oracle().read(path)


@pytest.mark.parametrize("retracted, java_error", [(Decimal("3.00"), "(?i)non-terminating"),
                                                   (Decimal("0.00"), "(?i)division")])
def test_both_refuse_a_decimal_product_retraction_without_exact_quotient(tmp_path, retracted, java_error):
    """A -U into a DECIMAL `product` divides exactly (BigDecimal.divide): 1.00 / 3.00 and a
    division by zero fail Java's read, and ours, naming the field and the values."""
    columns, o, batches = _case({"v": "DECIMAL(10, 2)"}, {F: "product"}, [("+I", {"v": Decimal("1.00")})],
                                [("-U", {"v": retracted})])
    path = str(tmp_path / "db.db" / "t")
    create_table(path, o, columns)
    for batch in batches:
        ours_write(ps.Table.open(path), batch)
    match = "'product' of field 'v' cannot retract " + ("3.00 from 1.00: the quotient" if retracted else "0")
    with pytest.raises(PaimonError, match=match):
        ours_read(path)
    with pytest.raises(JavaOracleError, match=java_error):
        get_oracle().read(path)


def test_both_refuse_an_integer_product_retracting_zero(tmp_path):
    """A -U of 0 into an integer `product` divides by zero: Java's read fails, ours names the
    field; in one write, our write fails and commits nothing."""
    columns, o, batches = _case({"v": "INT"}, {F: "product"}, [("+I", {"v": 2})], [("-U", {"v": 0})])
    path = str(tmp_path / "db.db" / "t")
    create_table(path, o, columns)
    for batch in batches:
        ours_write(ps.Table.open(path), batch)
    with pytest.raises(PaimonError, match="'product' of field 'v' cannot retract 0"):
        ours_read(path)
    with pytest.raises(JavaOracleError, match="(?i)by zero"):
        get_oracle().read(path)
    one = str(tmp_path / "db.db" / "one")
    create_table(one, o, columns)
    with pytest.raises(PaimonError, match="'product' of field 'v' cannot retract 0"):
        ours_write(ps.Table.open(one), batches[0] + batches[1])
    assert ps.Table.open(one).latest_snapshot() is None
