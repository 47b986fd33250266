"""Key semantics against Java 1.4.2: which bucket a key lands in and when two keys are one.

A primary-key table is consistent only while every engine puts a key in the same bucket and
calls the same keys equal; otherwise a table written by both (or continued by one after the
other) holds a key twice or loses a row, silently. Java 1.4.2 (tests/java_oracle.py) is the
oracle: Java writes a batch and we upsert and delete keys equal to Java's (and close but
different ones), and the reverse; both engines then read the table, under fixed buckets,
dynamic buckets and deletion vectors, and must agree with a model keyed as Java keys rows.

Where Java's own rules are odd, the tests say so:

* FLOAT/DOUBLE keys are stored (and hashed) by their raw bits, so 0.0 and -0.0 hash apart
  (usually other buckets), but Java's key comparator (`a > b ? 1 : a < b ? -1 : 0`) calls them
  equal: in one bucket they are one key, the newer row wins. Java's comparator also calls NaN
  equal to every number (not a total order; Java merges a NaN key with its neighbour), which no
  engine can sensibly follow: here NaN is one key (every payload) and a key of its own.
  Java sorts NaN after every number (+inf included); so must a data file, whose first and last
  keys are its bounds. Java's deletion-vector lookup compares keys by `Double.compareTo`
  (0.0 and -0.0 apart) until a full compaction merges them with the comparator: we take the
  comparator's answer everywhere.
* TIMESTAMP(p) keys hash by the value as stored (epoch millis + nano-of-milli), not cut to p
  digits: TIMESTAMP(1), (2), (4), (5), (7), (8) store milli-, micro- and nanoseconds.
* A TIMESTAMP(7..9) partition's directory carries its nanoseconds (LocalDateTime.toString).
* Java 1.4.2 cannot look up BINARY/VARBINARY keys (deletion vectors, lookup changelog): its
  `RowCompactedSerializer.SliceComparator` casts byte[] to Comparable.

`KEY_HUNT_EXAMPLES` sets the property test's example count (default 12); `KEY_HUNT_ALL=1` runs
every key type under every table layout.
"""
from __future__ import annotations

import datetime as dt
import math
import os
import struct
from decimal import Decimal

import numpy as np
import pyarrow as pa
import pytest
from hypothesis import HealthCheck, given, settings, strategies as st

import paimon_streaming as ps
from paimon_streaming.binary_row import deserialize_row
from paimon_streaming.bucket import fixed_buckets
from paimon_streaming.scan import TableScan
from paimon_streaming.types import parse_atomic, to_arrow

try:
    from java_oracle import epoch_nanos, get_oracle
except ImportError:  # pragma: no cover
    from tests.java_oracle import epoch_nanos, get_oracle

EXAMPLES = int(os.environ.get("KEY_HUNT_EXAMPLES", "12"))
T0 = 1_700_000_000_123_456_789  # nanoseconds since the epoch, every digit set
NAN, INF = float("nan"), float("inf")


@pytest.fixture(scope="module")
def java():
    return get_oracle()


def ts_values(precision: int, extra: int = 0) -> list[int]:
    """Epoch nanos at the storage precision of TIMESTAMP(precision) (s, ms, us, ns), with all
    their digits set (so a hash cut to `precision` digits differs)."""
    unit = 10 ** (9 - (0 if precision == 0 else 3 if precision <= 3 else 6 if precision <= 6 else 9))
    base = [T0, T0 + 7 * 10**9 + 10**6 + 11_111, -T0 // 3, 86_399_999_999_999, 0]
    return [v // unit * unit for v in base][: len(base) - extra]


# type -> distinct key values (Python values both engines take); a key "equal by Java's rules"
# written another way is in UPSERT_AS
KEY_TYPES = {
    "TINYINT": [-128, 0, 127, 5, -1],
    "SMALLINT": [-32768, 32767, 0, 300, -2],
    "INT": [-2**31, 2**31 - 1, 0, 1, -7],
    "BIGINT": [-2**63, 2**63 - 1, 0, 2**32, -7],
    "BOOLEAN": [True, False],
    "FLOAT": [1.5, -2.25, INF, -INF, 3.4028234663852886e38, 1.401298464324817e-45],
    "DOUBLE": [1.5, INF, -INF, 5e-324, 1.7976931348623157e308, -123.456],
    "DECIMAL(10, 2)": [Decimal("1.50"), Decimal("-0.01"), Decimal("99999999.99"), Decimal("0.00"), Decimal("7.00")],
    "DECIMAL(18, 18)": [Decimal("0.123456789012345678"), Decimal("-0.999999999999999999"), Decimal(0)],
    "DECIMAL(38, 10)": [Decimal("1234567890123456789012345678.0123456789"), Decimal("-1.5"), Decimal("0"),
                        Decimal("9999999999999999999999999999.9999999999"), Decimal("1.5")],
    "DECIMAL(19, 0)": [Decimal(2**63), Decimal(-2**63 - 1), Decimal(10**18), Decimal(-1)],
    "CHAR(5)": ["ab", "abcde", "", "a b", "ab\x00"],
    "VARCHAR(10)": ["", "\x00", "a\x00b", "é", "日本語", "1234567", "12345678"],
    "STRING": ["", "\x00", "\x00" * 9, "🙂", "x" * 2000, "Ω" * 700, "abcdefg", "abcdefgh", "\U0010ffff"],
    "BINARY(4)": [b"\x00\x00\x00\x00", b"abcd", b"\xff\xff\xff\xff", b"\x80\x00\x00\x01"],
    "VARBINARY(20)": [b"", b"\x00", b"\x00\x00", b"\xff" * 20, b"1234567", b"12345678"],
    "BYTES": [b"", b"\x00" * 3, bytes(range(256)) * 5, b"\x7f"],
    "DATE": [dt.date(1970, 1, 1), dt.date(1969, 12, 31), dt.date(9999, 12, 31), dt.date(1, 1, 1)],
    "TIME": [dt.time(0), dt.time(23, 59, 59, 999000), dt.time(12, 0, 0, 1000)],
    **{f"TIMESTAMP({p})": ts_values(p) for p in (0, 1, 2, 3, 4, 5, 6, 7, 8, 9)},
    **{f"TIMESTAMP({p}) WITH LOCAL TIME ZONE": ts_values(p) for p in (3, 6, 9)},
}
# keys equal to KEY_TYPES' values by Java's rules, as another writer may give them
UPSERT_AS = {
    "DECIMAL(10, 2)": {Decimal("1.50"): Decimal("1.5"), Decimal("7.00"): Decimal("7")},
    "DECIMAL(38, 10)": {Decimal("-1.5"): Decimal("-1.5000000000"), Decimal("1.5"): Decimal("1.50")},
}


def ptype(text: str):
    return parse_atomic(text + " NOT NULL")


def arrow_keys(values: list, type_text: str) -> pa.Array:
    """Key values as our writer takes them (timestamps given as epoch nanos)."""
    target = to_arrow(ptype(type_text))
    if pa.types.is_timestamp(target):
        per = {"s": 10**9, "ms": 10**6, "us": 10**3, "ns": 1}[target.unit]
        return pa.array([v // per for v in values], pa.int64()).cast(target)
    return pa.array(values, target)


def canonical(value, type_text: str):
    """A key as Java's key equality sees it, comparable across both engines' reads."""
    if "TIMESTAMP" in type_text:
        return epoch_nanos(value)
    if type_text == "FLOAT":
        return struct.unpack("<f", struct.pack("<f", value))[0]
    if type_text.startswith("DECIMAL"):
        return Decimal(value).normalize()
    return value


def java_field(type_text: str) -> dict:
    return {"name": "k", "type": type_text + " NOT NULL"}


def type_id(type_text: str) -> str:
    return "".join(c if c.isalnum() else "_" for c in type_text.lower())


# ------------------------------------------------------------------------------ buckets


def test_every_key_type_lands_in_javas_bucket(java, tmp_path):
    """Java's bucket (RowKeyExtractor) of every key value, bucket = 7, equals ours."""
    pending = {}
    with java.batch() as b:
        for type_text, values in KEY_TYPES.items():
            path = str(tmp_path / "db.db" / type_id(type_text))
            b.create_table(path, [java_field(type_text), {"name": "v", "type": "STRING"}],
                           primary_keys=["k"], options={"bucket": "7"})
            pending[type_text] = b.buckets(path, [{"k": v, "v": "x"} for v in values])
    wrong = {}
    for type_text, values in KEY_TYPES.items():
        t = ptype(type_text)
        ours = fixed_buckets(pa.table({"k": arrow_keys(values, type_text)}), ["k"], [t], 7).tolist()
        if ours != pending[type_text].result:
            wrong[type_text] = (ours, pending[type_text].result)
    assert not wrong, sorted(wrong)


# ------------------------------------------------------------------------------ both writers

CONFIGS = {  # name -> table options
    "bucket1-dv": {"bucket": "1", "deletion-vectors.enabled": "true"},
    "bucket3": {"bucket": "3"},
    "bucket7-dv": {"bucket": "7", "deletion-vectors.enabled": "true"},
    "dynamic-dv": {"bucket": "-1", "deletion-vectors.enabled": "true"},
    "dynamic": {"bucket": "-1"},
}


def _batches(type_text: str) -> tuple[list[dict], list[dict], dict]:
    """The first writer's rows, the second writer's (upserts of keys equal by Java's rules,
    written as UPSERT_AS gives them, a new key, a delete of the first key) and the model."""
    values = KEY_TYPES[type_text]
    again = UPSERT_AS.get(type_text, {})
    first = [{"k": v, "v": f"one-{i}"} for i, v in enumerate(values[:-1])]
    second = [{"k": again.get(v, v), "v": f"two-{i}"} for i, v in enumerate(values[1:])]
    second.append({"k": values[0], "v": "gone", "_ROW_KIND": "-D"})
    model = {canonical(r["k"], type_text): r["v"] for r in second[:-1]}
    return first, second, model


def _our_write(path: str, rows: list[dict], type_text: str) -> None:
    table = ps.Table.open(path)
    data = pa.table({"k": arrow_keys([r["k"] for r in rows], type_text),
                     "v": pa.array([r["v"] for r in rows], pa.string()),
                     "kind": pa.array([r.get("_ROW_KIND", "+I") for r in rows], pa.string())})
    table.write_arrow(data, row_kind_column="kind")


def _as_model(rows: list[dict], type_text: str) -> tuple[dict, int]:
    return {canonical(r["k"], type_text): r["v"] for r in rows}, len(rows)


BINARY_KEYS = ("BINARY(4)", "VARBINARY(20)", "BYTES")


def _orders(config: str, type_text: str) -> tuple[str, ...]:
    """Who writes first. Java 1.4.2's oracle cannot write dynamic-bucket tables (it has no
    bucket assigner), so there we write both batches and Java reads; and Java's own lookup
    (deletion vectors) fails on BINARY/VARBINARY keys (`RowCompactedSerializer.SliceComparator`
    casts byte[] to Comparable: ClassCastException), so Java never writes second there."""
    if CONFIGS[config]["bucket"] == "-1":
        return ("ours-only",)
    if "deletion-vectors.enabled" in CONFIGS[config] and type_text in BINARY_KEYS:
        return ("java-first",)
    return ("java-first", "ours-first")


def _run_both_ways(java, tmp_path, config: str, types) -> dict:
    """Java first then us, and us first then Java, for each type: both reads of each table."""
    options = CONFIGS[config]
    plans = {}
    with java.batch() as b:
        for type_text in types:
            for order in _orders(config, type_text):
                path = str(tmp_path / "db.db" / f"{type_id(type_text)}_{order.replace('-', '_')}")
                b.create_table(path, [java_field(type_text), {"name": "v", "type": "STRING"}],
                               primary_keys=["k"], options=options)
                first, second, model = _batches(type_text)
                if order == "java-first":
                    b.write(path, first)
                plans[(type_text, order)] = (path, first, second, model)
    for (type_text, order), (path, first, second, _) in plans.items():
        _our_write(path, second if order == "java-first" else first, type_text)
        if order == "ours-only":
            _our_write(path, second, type_text)
    reads = {}
    with java.batch() as b:
        for (type_text, order), (path, first, second, _) in plans.items():
            if order == "ours-first":
                b.write(path, second)
            reads[(type_text, order)] = b.read(path)
    wrong = {}
    for key, (path, _, _, model) in plans.items():
        type_text = key[0]
        javas = _as_model(reads[key].result, type_text)
        ours = _as_model(ps.Table.open(path).to_arrow().to_pylist(), type_text)
        if javas != (model, len(model)) or ours != (model, len(model)):
            wrong[key] = {"java": javas, "ours": ours, "model": model}
    return wrong


# every type under every config with KEY_HUNT_ALL=1; by default every type where Java and we
# both look keys up (deletion vectors), the types whose bytes are subtle elsewhere
SUBTLE = ["DECIMAL(10, 2)", "DECIMAL(38, 10)", "CHAR(5)", "STRING", "BYTES", "TIMESTAMP(1)", "TIMESTAMP(4)",
          "TIMESTAMP(7)", "TIMESTAMP(9) WITH LOCAL TIME ZONE"]
ALL = os.environ.get("KEY_HUNT_ALL") == "1"
ROUND_TRIP = ["INT", "BIGINT", "BOOLEAN", "FLOAT", "DOUBLE", "DECIMAL(18, 18)", "DECIMAL(19, 0)", "VARCHAR(10)",
              "BINARY(4)", "DATE", "TIME", "TIMESTAMP(0)", "TIMESTAMP(5)", "TIMESTAMP(8)",
              "TIMESTAMP(3) WITH LOCAL TIME ZONE"] + SUBTLE


@pytest.mark.parametrize("config", list(CONFIGS) if ALL else ["bucket7-dv", "bucket3", "dynamic-dv"])
def test_keys_written_by_both_engines_stay_one_key(java, tmp_path, config):
    """Java writes, we upsert keys equal by Java's rules (1.5 as 1.50, ...) and delete one, and
    the reverse: one row per key, the newest, in both engines' reads."""
    types = list(KEY_TYPES) if ALL else ROUND_TRIP if config == "bucket7-dv" else SUBTLE
    wrong = _run_both_ways(java, tmp_path, config, types)
    assert not wrong, {k: v for k, v in list(wrong.items())[:3]} | {"failing": sorted(wrong)}


# ------------------------------------------------------------------------------ FLOAT / DOUBLE keys


def _nan_with_payload(type_text: str, payload: int) -> float:
    """A quiet NaN whose mantissa carries `payload` (as another engine may hand it over)."""
    if type_text == "FLOAT":
        return np.array([0x7FC00000 | payload], np.uint32).view(np.float32)[0]
    return np.array([0x7FF8000000000000 | payload], np.uint64).view(np.float64)[0]


def _float_keys(values: list, type_text: str) -> pa.Array:
    dtype = np.float32 if type_text == "FLOAT" else np.float64
    return pa.array(np.array(values, dtype))


def _float_rows(rows: list[dict]) -> list[tuple]:
    """Rows as (key text, value): -0.0 and 0.0 apart, every NaN as 'nan'."""
    return sorted((repr(float(r["k"])), r["v"]) for r in rows)


def test_float_keys_one_key_as_javas_comparator_says(java, tmp_path):
    """In one bucket Java's key comparator calls 0.0 and -0.0 one key, and every NaN one key
    (whatever its payload): a NaN key written twice in a batch, or again in a later batch, or
    0.0 after -0.0, leaves one row, the newest (with the newest row's key bits). With bucket = 7
    0.0 and -0.0 hash apart (raw bits), into two buckets: two keys in both engines."""
    cases = {(t, dv): str(tmp_path / "db.db" / f"{t}_{dv}".lower()) for t in ("FLOAT", "DOUBLE") for dv in (False, True)}
    apart = {t: str(tmp_path / "db.db" / f"{t}_apart".lower()) for t in ("FLOAT", "DOUBLE")}
    buckets = {}
    with java.batch() as b:
        for (type_text, dv), path in cases.items():
            b.create_table(path, [java_field(type_text), {"name": "v", "type": "STRING"}], primary_keys=["k"],
                           options={"bucket": "1", **({"deletion-vectors.enabled": "true"} if dv else {})})
        for type_text, path in apart.items():
            b.create_table(path, [java_field(type_text), {"name": "v", "type": "STRING"}], primary_keys=["k"],
                           options={"bucket": "7"})
            buckets[type_text] = b.buckets(path, [{"k": 0.0, "v": ""}, {"k": -0.0, "v": ""}])
    expected = [("-0.0", "e"), ("1.0", "x"), ("3.0", "c"), ("5.0", "y"), ("7.0", "f"), ("inf", "i"), ("nan", "n4")]
    for (type_text, dv), path in cases.items():
        table = ps.Table.open(path)
        nan1, nan2 = _nan_with_payload(type_text, 1), _nan_with_payload(type_text, 2)
        batches = [[(0.0, "a"), (1.0, "x"), (NAN, "n1"), (nan1, "n2"), (5.0, "y")],
                   [(-0.0, "b"), (NAN, "n3")],
                   [(3.0, "c"), (INF, "i")],
                   [(0.0, "d"), (nan2, "n4"), (-0.0, "e")],
                   [(7.0, "f")]]
        for batch in batches:
            table.write_arrow(pa.table({"k": _float_keys([k for k, _ in batch], type_text),
                                        "v": pa.array([v for _, v in batch])}))
        assert _float_rows(table.to_arrow().to_pylist()) == expected, (type_text, dv)
        if not dv:
            table.compact(full=True)  # one file: Java's merge read calls NaN equal to any number
    for type_text, path in apart.items():
        ours = fixed_buckets(pa.table({"k": _float_keys([0.0, -0.0], type_text)}), ["k"], [ptype(type_text)], 7)
        assert ours.tolist() == buckets[type_text].result
        assert len(set(ours.tolist())) == 2  # apart, else this would not show two keys
        ps.Table.open(path).write_arrow(pa.table({"k": _float_keys([0.0], type_text), "v": ["a"]}))
    with java.batch() as b:
        reads = {case: b.read(path) for case, path in cases.items()}
        for type_text, path in apart.items():
            b.write(path, [{"k": -0.0, "v": "b"}])
            reads[type_text] = b.read(path)
    for case, path in cases.items():
        assert _float_rows(reads[case].result) == expected, case
        assert _float_rows(ps.Table.open(path).to_arrow().to_pylist()) == expected, case
    for type_text, path in apart.items():
        assert _float_rows(ps.Table.open(path).to_arrow().to_pylist()) == [("-0.0", "b"), ("0.0", "a")]
        assert _float_rows(reads[type_text].result) == [("-0.0", "b"), ("0.0", "a")]


def test_float_keys_found_by_deletion_vector_lookups(java, tmp_path):
    """A big first file keeps later batches to lookups (no rewrite of it): NaN, 0.0 and -0.0
    written again must find and mark their older row (Java reads files with their deletion
    vectors, so it sees any row left unmarked). A data file sorts NaN after every number, as
    Java does, so its first and last keys are its bounds."""
    paths = {t: str(tmp_path / "db.db" / t.lower()) for t in ("FLOAT", "DOUBLE")}
    with java.batch() as b:
        for type_text, path in paths.items():
            b.create_table(path, [java_field(type_text), {"name": "v", "type": "STRING"}], primary_keys=["k"],
                           options={"bucket": "1", "deletion-vectors.enabled": "true"})
    many = np.arange(1, 3000, dtype=np.float64)
    for type_text, path in paths.items():
        table = ps.Table.open(path)
        table.write_arrow(pa.table({"k": _float_keys([NAN, 0.0, -INF, *many], type_text),
                                    "v": pa.array(["old"] * (len(many) + 3))}))
        (entry,) = TableScan(table.file_io, table.path, table.schema).live_entries(table.latest_snapshot())
        bounds = [deserialize_row(k, [ptype(type_text)])[0] for k in (entry.file.min_key, entry.file.max_key)]
        assert bounds[0] == -INF and math.isnan(bounds[1]), bounds
        for batch in ([(-0.0, "b")], [(_nan_with_payload(type_text, 3), "n")], [(0.0, "c"), (-INF, "i")],
                      [(5.5, "d")]):
            table.write_arrow(pa.table({"k": _float_keys([k for k, _ in batch], type_text),
                                        "v": pa.array([v for _, v in batch])}))
    with java.batch() as b:
        reads = {t: b.read(path) for t, path in paths.items()}
    expected = {"0.0": "c", "nan": "n", "-inf": "i", "5.5": "d", "1.0": "old"}
    for type_text, path in paths.items():
        for rows in (ps.Table.open(path).to_arrow().to_pylist(), reads[type_text].result):
            got = _float_rows(rows)
            assert len(got) == len(many) + 4, type_text
            assert {k: v for k, v in got if k in expected} == expected, type_text


# ------------------------------------------------------------------------------ our writer's inputs

_A = [0.0, -0.0, NAN, "nan-payload", 1.5, -INF]
_B = ["", "x", "x\x00", "y" * 9]
_C = [Decimal("1.5"), Decimal("1.50"), Decimal("-0.01")]


def _a_value(a):
    return _nan_with_payload("DOUBLE", 5) if a == "nan-payload" else a


def _model_key(a, b, c) -> tuple:
    a = float(_a_value(a))
    return ("nan" if math.isnan(a) else repr(a + 0.0), b, Decimal(c).normalize())


def _shaped(values: list, kind: str, arrow_type: pa.DataType, split: int):
    array = pa.array(values, arrow_type)
    if kind == "dictionary" and not pa.types.is_floating(arrow_type):
        return array.dictionary_encode()
    if kind == "large" and pa.types.is_string(arrow_type):
        return pa.array(values, pa.large_string())
    if kind == "view" and pa.types.is_string(arrow_type):
        return pa.array(values, pa.string_view())
    if kind == "chunked":
        return pa.chunked_array([array.slice(0, split), array.slice(split)], arrow_type)
    return array


_ROW = st.tuples(st.integers(0, len(_A) - 1), st.integers(0, len(_B) - 1), st.integers(0, len(_C) - 1),
                 st.sampled_from(["+I", "+I", "+I", "-D"]))


@settings(max_examples=EXAMPLES, deadline=None, suppress_health_check=list(HealthCheck))
@given(batches=st.lists(st.lists(_ROW, min_size=1, max_size=12), min_size=1, max_size=5),
       shapes=st.lists(st.sampled_from(["plain", "dictionary", "large", "view", "chunked"]), min_size=3, max_size=3),
       dv=st.booleans(), split=st.integers(0, 12))
def test_equal_keys_in_any_input_shape_are_one_key(tmp_path_factory, batches, shapes, dv, split):
    """Composite keys (DOUBLE, STRING, DECIMAL(20, 2)) repeated within and across batches, in
    dictionary / large / view / chunked arrays: one row per key (0.0 and -0.0 one key, every
    NaN one key, 1.5 and 1.50 one key), the newest wins, a delete removes it."""
    root = tmp_path_factory.mktemp("shapes")
    schema = pa.schema([pa.field("a", pa.float64(), False), pa.field("b", pa.string(), False),
                        pa.field("c", pa.decimal128(20, 2), False), ("v", pa.int64())])
    table = ps.Catalog(str(root)).create_table(
        "db.t", schema, primary_keys=["a", "b", "c"],
        options={"bucket": "1", **({"deletion-vectors.enabled": "true"} if dv else {})})
    model, serial = {}, 0
    for batch in batches:
        rows = []
        for ai, bi, ci, kind in batch:
            serial += 1
            rows.append((_a_value(_A[ai]), _B[bi], _C[ci], serial, kind))
            key = _model_key(_A[ai], _B[bi], _C[ci])
            if kind == "-D":
                model.pop(key, None)
            else:
                model[key] = serial
        cut = min(split, len(rows))
        data = pa.table({
            "a": _shaped([r[0] for r in rows], shapes[0], pa.float64(), cut),
            "b": _shaped([r[1] for r in rows], shapes[1], pa.string(), cut),
            "c": _shaped([r[2] for r in rows], shapes[2], pa.decimal128(20, 2), cut),
            "v": pa.array([r[3] for r in rows], pa.int64()),
            "kind": pa.array([r[4] for r in rows])})
        table.write_arrow(data, row_kind_column="kind")
        got = table.to_arrow().to_pylist()
        assert sorted((_model_key(r["a"], r["b"], r["c"]), r["v"]) for r in got) == sorted(model.items())


# ------------------------------------------------------------------------------ composite keys

COMPOSITE = [{"name": "p", "type": "STRING NOT NULL"}, {"name": "a", "type": "DOUBLE NOT NULL"},
             {"name": "t", "type": "TIMESTAMP(7) NOT NULL"}, {"name": "d", "type": "DECIMAL(20, 2) NOT NULL"},
             {"name": "c", "type": "CHAR(3) NOT NULL"}, {"name": "v", "type": "STRING"}]
_T7 = T0 // 100 * 100


def _composite_rows(tag: str, variant: int) -> list[dict]:
    """Keys of every part; `variant` 1 writes the same keys another way (1.5 as 1.50) and keys
    close to them (100 ns later, a cent more, a trailing blank)."""
    rows = []
    for p in ("p1", "p2"):
        for i in range(6):
            rows.append({"p": p, "a": [1.5, -INF, 1e-300, 2.0, 0.5, 7.0][i], "t": _T7 + i * 10**9,
                         "d": Decimal(i) + Decimal("0.5") if variant == 0 else Decimal(f"{i}.50"),
                         "c": ["ab", "", "a\x00", "abc", "x", "é"][i], "v": f"{tag}{i}"})
    if variant:
        rows += [{"p": "p1", "a": 1.5, "t": _T7 + 100, "d": Decimal("0.5"), "c": "ab", "v": f"{tag}-ns"},
                 {"p": "p1", "a": 1.5, "t": _T7, "d": Decimal("0.51"), "c": "ab", "v": f"{tag}-cent"},
                 {"p": "p1", "a": 1.5, "t": _T7, "d": Decimal("0.5"), "c": "ab ", "v": f"{tag}-blank"}]
    return rows


def _composite_key(r: dict) -> tuple:
    return (r["p"], r["a"], epoch_nanos(r["t"]), Decimal(r["d"]).normalize(), r["c"])


def test_composite_partitioned_keys_written_by_both(java, tmp_path):
    """Partitioned composite keys (DOUBLE, TIMESTAMP(7), DECIMAL(20, 2), CHAR(3)), with a
    bucket-key subset, and with deletion vectors: Java writes, we upsert the same keys written
    another way and close ones, Java upserts again: one row per key in both engines' reads."""
    layouts = {"subset": {"bucket": "3", "bucket-key": "t,d"},
               "dv": {"bucket": "2", "deletion-vectors.enabled": "true"}}
    paths = {name: str(tmp_path / "db.db" / name) for name in layouts}
    with java.batch() as b:
        for name, path in paths.items():
            b.create_table(path, COMPOSITE, primary_keys=["p", "a", "t", "d", "c"], partition_keys=["p"],
                           options=layouts[name])
            b.write(path, _composite_rows("java", 0))
    ours = _composite_rows("ours", 1)[::2]
    for path in paths.values():
        table = ps.Table.open(path)
        table.write_arrow(pa.Table.from_pylist(
            [{**r, "t": None} for r in ours], schema=table.arrow_schema()).set_column(
                2, "t", arrow_keys([r["t"] for r in ours], "TIMESTAMP(7)")))
    again = _composite_rows("again", 1)[1::3]
    with java.batch() as b:
        reads = {}
        for name, path in paths.items():
            b.write(path, again)
            reads[name] = b.read(path)
    model = {}
    for r in _composite_rows("java", 0) + ours + again:
        model[_composite_key(r)] = r["v"]
    for name, path in paths.items():
        for rows in (reads[name].result, ps.Table.open(path).to_arrow().to_pylist()):
            got = [(_composite_key(r), r["v"]) for r in rows]
            assert len(got) == len(model), name
            assert dict(got) == model, name


@pytest.mark.parametrize("type_text", ["FLOAT", "DOUBLE"])
def test_lookup_changelog_of_float_keys(tmp_path, type_text):
    """`changelog-producer` = lookup decides by the same key equality as the merge: writing
    -0.0 after 0.0, or a NaN after a NaN, is an update (-U/+U) of that key, not an insert,
    and a delete of any NaN deletes the NaN key."""
    from stream_batches import open_stream, snapshot_changes
    arrow_type = pa.float32() if type_text == "FLOAT" else pa.float64()
    table = ps.Catalog(str(tmp_path)).create_table(
        "db.c", pa.schema([pa.field("k", arrow_type, False), ("v", pa.string())]), primary_keys=["k"],
        options={"bucket": "1", "deletion-vectors.enabled": "true", "changelog-producer": "lookup"})
    many = np.arange(1, 2000, dtype=np.float64)
    table.write_arrow(pa.table({"k": _float_keys([NAN, 0.0, *many], type_text), "v": ["a"] * (len(many) + 2)}))
    batches = [[(-0.0, "b", "+I")], [(_nan_with_payload(type_text, 7), "c", "+I")],
               [(0.0, "d", "+I"), (NAN, "x", "-D")]]
    for batch in batches:
        table.write_arrow(pa.table({"k": _float_keys([k for k, _, _ in batch], type_text),
                                    "v": [v for _, v, _ in batch], "op": [o for _, _, o in batch]}),
                          row_kind_column="op")
    scan = open_stream(table, {"scan.mode": "from-snapshot", "scan.snapshot-id": "1"})
    changes = []
    for snapshot in table.snapshots()[2:]:
        rows = snapshot_changes(scan, snapshot.id, ["k", "v"])
        if rows:
            changes.append(sorted((r["_kind"], repr(float(r["k"])), r["v"]) for r in rows))
    assert changes == [[("+U", "-0.0", "b"), ("-U", "0.0", "a")],
                       [("+U", "nan", "c"), ("-U", "nan", "a")],
                       [("+U", "0.0", "d"), ("-D", "nan", "c"), ("-U", "-0.0", "b")]]
    assert _float_rows(table.to_arrow().to_pylist())[:2] == [("0.0", "d"), ("1.0", "a")]


# ------------------------------------------------------------------------------ partition values


def test_timestamp_partitions_with_every_digit_are_javas_directories(java, tmp_path):
    """A partition value is a BinaryRow (its bytes decide the partition) and a directory named
    by Java's LocalDateTime.toString, nanoseconds included: both engines must name the same
    directory, or each looks for the other's files where they are not (and orphan cleanup
    would take them for strays)."""
    types = ["TIMESTAMP(2)", "TIMESTAMP(4)", "TIMESTAMP(7)", "TIMESTAMP(9)", "TIMESTAMP(9) WITH LOCAL TIME ZONE"]
    paths = {}
    with java.batch() as b:
        for type_text in types:
            values = ts_values(int(type_text[10]), extra=2)  # three instants, every stored digit set
            for order in ("java-first", "ours-first"):
                path = str(tmp_path / "db.db" / f"{type_id(type_text)}_{order.replace('-', '_')}")
                b.create_table(path, [{"name": "ts", "type": type_text + " NOT NULL"},
                                      {"name": "k", "type": "INT NOT NULL"}, {"name": "v", "type": "STRING"}],
                               primary_keys=["ts", "k"], partition_keys=["ts"], options={"bucket": "2"})
                if order == "java-first":
                    b.write(path, [{"ts": t, "k": k, "v": "java"} for t in values for k in (1, 2)])
                paths[(type_text, order)] = (path, values)
    for (type_text, order), (path, values) in paths.items():
        ps.Table.open(path).write_arrow(pa.table({"ts": arrow_keys(values, type_text),
                                                  "k": pa.array([1] * 3, pa.int32()), "v": ["ours"] * 3}))
    with java.batch() as b:
        reads = {}
        for (type_text, order), (path, values) in paths.items():
            if order == "ours-first":
                b.write(path, [{"ts": t, "k": 2, "v": "java"} for t in values])
            reads[(type_text, order)] = b.read(path)
    for case, (path, values) in paths.items():
        expected = sorted((epoch_nanos(t), k, "ours" if k == 1 else "java") for t in values for k in (1, 2))
        for rows in (reads[case].result, ps.Table.open(path).to_arrow().to_pylist()):
            assert sorted((epoch_nanos(r["ts"]), r["k"], r["v"]) for r in rows) == expected, case
        assert len(os.listdir(path)) == 3 + 3, case  # schema, snapshot, manifest, a directory per instant


def test_cross_partition_keys_equal_by_javas_rules_move_once(java, tmp_path):
    """A cross-partition upsert table (key without the partition column, bucket -1) keyed by
    DECIMAL(20, 2), TIMESTAMP(7), STRING and DOUBLE: a key written again as 1.50 for 1.5, into
    another partition, moves there (one row), also after Java compacted the table (the index is
    rebuilt from Java's files); Java reads each key once."""
    fields = [{"name": "d", "type": "DECIMAL(20, 2) NOT NULL"}, {"name": "t", "type": "TIMESTAMP(7) NOT NULL"},
              {"name": "s", "type": "STRING NOT NULL"}, {"name": "f", "type": "DOUBLE NOT NULL"},
              {"name": "p", "type": "STRING NOT NULL"}, {"name": "v", "type": "STRING"}]
    layouts = {"plain": {"bucket": "-1"}, "dv": {"bucket": "-1", "deletion-vectors.enabled": "true"}}
    paths = {name: str(tmp_path / "db.db" / name) for name in layouts}
    with java.batch() as b:
        for name, path in paths.items():
            b.create_table(path, fields, primary_keys=["d", "t", "s", "f"], partition_keys=["p"],
                           options=layouts[name])

    def batch(decimals, partition, tag):
        n = len(decimals)
        return pa.table({"d": pa.array([Decimal(x) for x in decimals], pa.decimal128(20, 2)),
                         "t": arrow_keys([_T7 + i for i in range(n)], "TIMESTAMP(7)"),
                         "s": [f"k\x00{i}" for i in range(n)], "f": pa.array([NAN, -INF, 1.5, 1e300][:n]),
                         "p": [partition] * n, "v": [f"{tag}{i}" for i in range(n)]})
    for path in paths.values():
        table = ps.Table.open(path)
        table.write_arrow(batch(["1.5", "2", "-0.01", "3"], "a", "one"))
        table.write_arrow(batch(["1.50", "2.00"], "b", "two"))
    with java.batch() as b:
        for path in paths.values():
            b.compact(path)
    for path in paths.values():
        ps.Table.open(path).write_arrow(batch(["1.500", "2.0", "-0.010"], "c", "three"))
    with java.batch() as b:
        reads = {name: b.read(path) for name, path in paths.items()}
    expected = [("c", "three0"), ("c", "three1"), ("c", "three2"), ("a", "one3")]
    for name, path in paths.items():
        for rows in (reads[name].result, ps.Table.open(path).to_arrow().to_pylist()):
            assert sorted((r["p"], r["v"]) for r in rows) == sorted(expected), name


def test_nanosecond_partition_values_name_javas_directory_after_decoding_and_pickling():
    """The directory text of a TIMESTAMP(9) partition value, as Java's LocalDateTime.toString
    gives it (3, 6 or 9 digits), from the written value and from its BinaryRow decoded (and
    pickled, as Spark ships values to tasks)."""
    import pickle
    from paimon_streaming.binary_row import serialize_row
    from paimon_streaming.paths import partition_value_str
    t = ptype("TIMESTAMP(9)")
    cases = {T0: "2023-11-14T22:13:20.123456789", T0 - 789: "2023-11-14T22:13:20.123456",
             T0 - 456_789: "2023-11-14T22:13:20.123", T0 - 123_456_789: "2023-11-14T22:13:20",
             T0 - 123_456_788: "2023-11-14T22:13:20.000000001", -1: "1969-12-31T23:59:59.999999999"}
    for nanos, text in cases.items():
        written = arrow_keys([nanos], "TIMESTAMP(9)").to_pylist()[0]
        decoded = deserialize_row(serialize_row([written], [t]), [t])[0]
        for value in (written, decoded, pickle.loads(pickle.dumps(decoded))):
            assert partition_value_str(value, t) == text, (nanos, type(value))


def test_files_written_with_nan_first_are_still_looked_up(tmp_path, monkeypatch):
    """Files of earlier versions sorted NaN first (Arrow's nulls-first placement takes NaN
    along), so their first key is a NaN and their last a number: bounds that bound nothing.
    Lookups probe such a file for every key instead of for none: NaN and 2.0 written again
    replace their old rows."""
    import pyarrow.compute as pc
    from paimon_streaming import merge_engine

    def nan_first(table, columns):
        return pc.sort_indices(table, sort_keys=[(c, "ascending", "at_start") for c in columns]).to_numpy()
    table = ps.Catalog(str(tmp_path)).create_table(
        "db.t", pa.schema([pa.field("k", pa.float64(), False), ("v", pa.string())]), primary_keys=["k"],
        options={"bucket": "1", "deletion-vectors.enabled": "true"})
    many = np.arange(1, 2000, dtype=np.float64)
    with monkeypatch.context() as m:
        m.setattr(merge_engine, "sort_nulls_first", nan_first)
        table.write_arrow(pa.table({"k": np.concatenate([[NAN], many]), "v": ["old"] * (len(many) + 1)}))
    (entry,) = TableScan(table.file_io, table.path, table.schema).live_entries(table.latest_snapshot())
    assert math.isnan(deserialize_row(entry.file.min_key, [ptype("DOUBLE")])[0])  # the old layout
    table.write_arrow(pa.table({"k": [NAN, 2.0], "v": ["new", "new"]}))
    rows = _float_rows(table.to_arrow().to_pylist())
    assert len(rows) == len(many) + 1
    assert [r for r in rows if r[0] in ("nan", "2.0")] == [("2.0", "new"), ("nan", "new")]
