"""BinaryRow codec and hash: bytes identical to Java 1.4.2, pypaimon as a second oracle."""
from __future__ import annotations

import math
import random
import re
import struct
import time
from datetime import date, datetime, time as dtime, timezone
from decimal import Decimal

import numpy as np
import pyarrow as pa
import pytest
from hypothesis import HealthCheck, given, settings, strategies as st

from paimon_streaming.binary_row import (
    _encode_few, deserialize_row, encode_rows, hash_row, hash_rows, null_bits_size, serialize_row, serialize_rows)
from paimon_streaming.errors import SchemaMismatchError, UnsupportedTypeError
from paimon_streaming.types import DataType, parse_atomic, to_arrow

# pypaimon is a test-only oracle, in its own process (tests/pypaimon_oracle.py).
from pypaimon_oracle import call as pypaimon_call


def T(text: str) -> DataType:
    return parse_atomic(text)


def hexrow(data: bytes) -> str:
    return " ".join(data[i:i + 8].hex() for i in range(0, len(data), 8))


def one_row_columns(values: list, types: list[str]) -> tuple[list[pa.Array], list[DataType]]:
    dts = [T(t) for t in types]
    return [v if isinstance(v, pa.Array) else pa.array([v], to_arrow(dt)) for v, dt in zip(values, dts)], dts


def encode_one(values: list, types: list[str]) -> bytes:
    cols, dts = one_row_columns(values, types)
    return encode_rows(cols, dts)[0].as_py()


# ---- FORMAT.md §5.1 hex examples (Java 1.4.2) ---------------------------------------------------
TS = datetime(2024, 1, 1, 1, 2, 3, 456789)
FORMAT_EXAMPLES = [
    ("BIGINT", 42, "0000000000000000 2a00000000000000"),
    ("INT", -7, "0000000000000000 f9ffffff00000000"),
    ("STRING", "a", "0000000000000000 6100000000000081"),
    ("STRING", "", "0000000000000000 0000000000000080"),
    ("STRING", "hello world!", "0000000000000000 0c00000010000000 68656c6c6f20776f 726c642100000000"),
    ("DECIMAL(10, 2)", Decimal("1.23"), "0000000000000000 7b00000000000000"),
    ("DECIMAL(20, 2)", Decimal("-1.23"), "0000000000000000 0100000010000000 8500000000000000 0000000000000000"),
    ("TIMESTAMP(6)", TS, "0000000000000000 080a0c0010000000 c0c48ac28c010000"),
    ("BIGINT", None, "0001000000000000 0000000000000000"),
    # Java reserves var space for null non-compact values (FORMAT §5.1 point 4).
    ("TIMESTAMP(6)", None, "0001000000000000 0000000010000000 0000000000000000"),
    ("DECIMAL(20, 2)", None, "0001000000000000 0000000010000000 0000000000000000 0000000000000000"),
]


@pytest.mark.parametrize("type_text,value,expected", FORMAT_EXAMPLES)
def test_format_hex_examples(type_text, value, expected):
    assert hexrow(encode_one([value], [type_text])) == expected


def test_empty_row():
    assert hexrow(encode_rows([], [], num_rows=1)[0].as_py()) == "0000000000000000"
    assert serialize_row([], []).hex() == "00000000" + "00" * 8
    assert len(encode_rows([], [], num_rows=3)) == 3
    with pytest.raises(ValueError):
        encode_rows([], [])


# ---- more rows dumped by Java 1.4.2 (RowHelper(types).copyInto(GenericRow), BinaryRow.hashCode) ----
def ns(text: str) -> pa.Array:
    """A nanosecond timestamp array (Python datetimes stop at microseconds)."""
    return pa.array([np.datetime64(text, "ns")], pa.timestamp("ns"))


JAVA_ROWS = [
    (["BOOLEAN"], [True], "0000000000000000 0100000000000000", 1465514398),
    (["BOOLEAN"], [False], "0000000000000000 0000000000000000", -300363099),
    (["TINYINT"], [-1], "0000000000000000 ff00000000000000", 2004758659),
    (["SMALLINT"], [-2], "0000000000000000 feff000000000000", 557672611),
    (["INT"], [-2**31], "0000000000000000 0000008000000000", 916225219),
    (["BIGINT"], [-2**63], "0000000000000000 0000000000000080", 302122119),
    (["BIGINT"], [2**63 - 1], "0000000000000000 ffffffffffffff7f", -1566569095),
    (["FLOAT"], [1.5], "0000000000000000 0000c03f00000000", -173842779),
    (["DOUBLE"], [-3.25], "0000000000000000 0000000000000ac0", -205783949),
    (["DATE"], [date(1969, 12, 31)], "0000000000000000 ffffffff00000000", 1133687267),
    (["TIME(3)"], [dtime(12, 34, 56, 789000)], "0000000000000000 952cb30200000000", 1815782997),
    (["TIMESTAMP(0)"], [datetime(2024, 5, 6, 7, 8, 9)], "0000000000000000 a837bb4c8f010000", -708050785),
    (["TIMESTAMP(9)"], [ns("1969-12-31T23:59:59.123456789")],
     "0000000000000000 55f8060010000000 93fcffffffffffff", 878625776),
    (["TIMESTAMP(6)"], [datetime(1969, 12, 31, 23, 59, 59, 999999)],
     "0000000000000000 583e0f0010000000 ffffffffffffffff", 1236894319),
    (["TIMESTAMP(3) WITH LOCAL TIME ZONE"], [datetime(2024, 1, 1, 0, 0, 0, 500000, tzinfo=timezone.utc)],
     "0000000000000000 f4f551c28c010000", -1534776243),
    (["TIMESTAMP(6) WITH LOCAL TIME ZONE"], [datetime(2024, 1, 1, 0, 0, 0, 1, tzinfo=timezone.utc)],
     "0000000000000000 e803000010000000 00f451c28c010000", 1301129195),
    (["DECIMAL(38, 10)"], [Decimal("9999999999999999999999999999.9999999999")],
     "0000000000000000 1000000010000000 4b3b4ca85a86c47a 098a223fffffffff", -1064641625),
    (["DECIMAL(38, 10)"], [Decimal("-9999999999999999999999999999.9999999999")],
     "0000000000000000 1000000010000000 b4c4b357a5793b85 f675ddc000000001", 2078814714),
    (["DECIMAL(20, 0)"], [Decimal("0")],
     "0000000000000000 0100000010000000 0000000000000000 0000000000000000", 728486185),
    (["DECIMAL(19, 2)"], [Decimal("1.28")],
     "0000000000000000 0200000010000000 0080000000000000 0000000000000000", -795104203),
    (["DECIMAL(19, 2)"], [Decimal("-1.29")],
     "0000000000000000 0200000010000000 ff7f000000000000 0000000000000000", -104809469),
    (["DECIMAL(18, 4)"], [Decimal("-1.5")], "0000000000000000 68c5ffffffffffff", -987272570),
    (["CHAR(3)"], ["abc"], "0000000000000000 6162630000000083", -101922419),
    (["STRING"], ["héllo wörld ✓"],
     "0000000000000000 1100000010000000 68c3a96c6c6f2077 c3b6726c6420e29c 9300000000000000", 1666326308),
    (["STRING"], ["0123456789abcdef"],
     "0000000000000000 1000000010000000 3031323334353637 3839616263646566", -1187815606),
    (["BINARY(7)"], [bytes(range(1, 8))], "0000000000000000 0102030405060787", -492953685),
    (["BYTES"], [bytes([0xFF]) + bytes(range(1, 9))],
     "0000000000000000 0900000010000000 ff01020304050607 0800000000000000", 1479093301),
    (["INT", "STRING", "DECIMAL(20, 2)", "TIMESTAMP(9)", "BYTES", "DOUBLE", "TIMESTAMP(6) WITH LOCAL TIME ZONE"],
     [None, "a longer string value", None, ns("2001-02-03T04:05:06.007008009"), b"\x09\x08\x07", 2.5, None],
     "0045000000000000 0000000000000000 1500000040000000 0000000058000000 491f000068000000 0908070000000083 "
     "0000000000000440 0000000070000000 61206c6f6e676572 20737472696e6720 76616c7565000000 0000000000000000 "
     "0000000000000000 57757972e4000000 0000000000000000", -991028272),
]

# 60 INT fields: a 16-byte null bitset (arity 57..120), every 7th field (i % 7 == 3) null.
WIDE = [None if i % 7 == 3 else i * 1000 - 7 for i in range(60)]
WIDE_HEX = ("0008040281402010 0800000000000000 " + " ".join(
    "0000000000000000" if v is None else (v & 0xFFFFFFFF).to_bytes(8, "little").hex() for v in WIDE))
JAVA_ROWS.append((["INT"] * 60, WIDE, WIDE_HEX, 1791556818))


@pytest.mark.parametrize("types,values,expected,java_hash", JAVA_ROWS, ids=lambda x: None)
def test_java_rows_bytes_hash_and_round_trip(types, values, expected, java_hash):
    row = encode_one(values, types)
    assert hexrow(row) == expected
    assert hash_row(row) == java_hash
    dts = [T(t) for t in types]
    decoded = deserialize_row(len(types).to_bytes(4, "big") + row, dts)
    plain = [v.to_pylist()[0] if isinstance(v, pa.Array) else v for v in values]
    for got, want, dt in zip(decoded, plain, dts):
        if dt.root == "TIMESTAMP" and dt.precision > 6 and want is not None:
            want = want.to_pydatetime(warn=False)           # microseconds are enough for p > 6
        assert got == want


def test_null_bits_size():
    assert [null_bits_size(a) for a in (0, 1, 56, 57, 120, 121)] == [8, 8, 8, 16, 16, 24]


# ---- Arrow input equivalents ----------------------------------------------------------------------
def test_string_input_variants_give_identical_bytes():
    values = ["", "a", "1234567", "12345678", "héllo wörld ✓", None]
    expected = encode_rows([pa.array(values)], [T("STRING")])
    variants = [pa.array(values, pa.large_string()), pa.array(values, pa.string_view()),
                pa.array(values).dictionary_encode(), pa.chunked_array([values[:2], values[2:]]),
                pa.array(["x"] + values)[1:]]
    for v in variants:
        assert encode_rows([v], [T("STRING")]).equals(expected), v.type


def test_binary_input_variants_give_identical_bytes():
    values = [b"\x00", b"abcdefgh", b"", None]
    expected = encode_rows([pa.array(values)], [T("BYTES")])
    assert encode_rows([pa.array(values, pa.large_binary())], [T("BYTES")]).equals(expected)
    fixed = pa.array([b"ab", b"cd"], pa.binary(2))
    assert encode_rows([fixed], [T("BINARY(2)")]).equals(encode_rows([pa.array([b"ab", b"cd"])], [T("BINARY(2)")]))


@pytest.mark.parametrize("precision", [0, 3, 6, 9])
def test_timestamp_units_truncate_to_precision(precision):
    """To the digits the column stores: milliseconds for TIMESTAMP(0) too, as Java keeps them."""
    t = T(f"TIMESTAMP({precision})")
    instant = np.datetime64("1969-12-31T23:59:58.987654321", "ns")
    truncated = np.datetime64(instant, {0: "ms", 3: "ms", 6: "us", 9: "ns"}[precision])
    expected = encode_rows([pa.array([truncated])], [t])
    for unit, digits in (("ns", 9), ("us", 6), ("ms", 3), ("s", 0)):
        if digits >= max(precision, 3):                         # input at least as fine as the column
            arr = pa.array([np.datetime64(instant, unit)])
            assert encode_rows([arr], [t]).equals(expected), unit


def test_time_units_are_millis_of_day():
    t = T("TIME(3)")
    expected = encode_rows([pa.array([45296789], pa.time32("ms"))], [t])
    assert encode_rows([pa.array([45296789000], pa.time64("us"))], [t]).equals(expected)
    assert encode_rows([pa.array([45296789000000], pa.time64("ns"))], [t]).equals(expected)
    assert encode_rows([pa.array([45296], pa.time32("s"))], [t]).to_pylist()[0][8:12] == (45296000).to_bytes(4, "little")


def test_ltz_uses_utc_instant():
    t = T("TIMESTAMP(6) WITH LOCAL TIME ZONE")
    utc = pa.array([datetime(2024, 1, 1, 12, tzinfo=timezone.utc)], pa.timestamp("us", "UTC"))
    other = utc.cast(pa.timestamp("ns", "Asia/Tokyo"))
    assert encode_rows([other], [t]).equals(encode_rows([utc], [t]))


def test_decimal_input_rescaled_and_checked():
    t = T("DECIMAL(20, 2)")
    expected = encode_rows([pa.array([Decimal("-1.23")], pa.decimal128(20, 2))], [t])
    assert encode_rows([pa.array([Decimal("-1.230")], pa.decimal128(30, 3))], [t]).equals(expected)
    with pytest.raises(SchemaMismatchError):
        encode_rows([pa.array([Decimal("1.234")], pa.decimal128(10, 3))], [t])


def test_integer_overflow_and_wrong_types_rejected():
    with pytest.raises(SchemaMismatchError):
        encode_rows([pa.array([2**40])], [T("INT")])
    with pytest.raises(SchemaMismatchError):
        encode_rows([pa.array([b"\xff"])], [T("STRING")])
    assert encode_rows([pa.array([-7])], [T("INT")]).equals(encode_rows([pa.array([-7], pa.int32())], [T("INT")]))


def test_nested_types_unsupported():
    arr = pa.array([[1, 2]])
    with pytest.raises(UnsupportedTypeError):
        encode_rows([arr], [DataType("ARRAY", element=T("BIGINT"))])


def test_mismatched_lengths_rejected():
    with pytest.raises(ValueError):
        encode_rows([pa.array([1, 2]), pa.array([1])], [T("BIGINT"), T("BIGINT")])
    with pytest.raises(ValueError):
        encode_rows([pa.array([1])], [T("BIGINT"), T("BIGINT")])


def test_many_rows_match_single_rows():
    """Vectorized offsets: each row of a batch equals the row encoded alone."""
    rng = random.Random(7)
    types = ["STRING", "DECIMAL(25, 3)", "BYTES", "TIMESTAMP(6)", "INT"]
    rows = []
    for _ in range(200):
        rows.append([
            rng.choice([None, "", "x" * rng.randint(0, 30)]),
            rng.choice([None, Decimal(rng.randint(-10**20, 10**20)).scaleb(-3)]),
            rng.choice([None, bytes(rng.randint(0, 255) for _ in range(rng.randint(0, 20)))]),
            rng.choice([None, datetime(2020, 1, 1, 0, 0, rng.randint(0, 59), rng.randint(0, 999999))]),
            rng.choice([None, rng.randint(-2**31, 2**31 - 1)]),
        ])
    dts = [T(t) for t in types]
    cols = [pa.array([r[i] for r in rows], to_arrow(dt)) for i, dt in enumerate(dts)]
    batch = encode_rows(cols, dts).to_pylist()
    for row, encoded in zip(rows, batch):
        assert encoded == encode_one(row, types)
        assert len(encoded) % 8 == 0


# ---- serialize / deserialize ----------------------------------------------------------------------
ALL_TYPES = [
    ("BOOLEAN", True), ("TINYINT", -128), ("SMALLINT", 32767), ("INT", -2**31), ("BIGINT", 2**63 - 1),
    ("FLOAT", 1.5), ("DOUBLE", -2.75), ("DECIMAL(10, 2)", Decimal("-12345678.91")),
    ("DECIMAL(38, 18)", Decimal("-12345678901234567890.123456789012345678")), ("DECIMAL(5, 0)", Decimal("0")),
    ("CHAR(3)", "abc"), ("VARCHAR(20)", "héllo wörld ✓"), ("STRING", ""), ("BINARY(2)", b"\x00\xff"),
    ("VARBINARY(30)", b"0123456789"), ("BYTES", b""), ("DATE", date(1969, 12, 31)),
    ("TIME(3)", dtime(23, 59, 59, 999000)), ("TIMESTAMP(0)", datetime(2024, 2, 29, 12)),
    ("TIMESTAMP(3)", datetime(1969, 12, 31, 23, 59, 59, 999000)), ("TIMESTAMP(6)", datetime(1900, 1, 1, 0, 0, 0, 1)),
    ("TIMESTAMP(9)", datetime(2100, 1, 1, 0, 0, 0, 123456)),
    ("TIMESTAMP(3) WITH LOCAL TIME ZONE", datetime(2024, 1, 1, 1, 2, 3, 4000, tzinfo=timezone.utc)),
    ("TIMESTAMP(6) WITH LOCAL TIME ZONE", datetime(1960, 1, 1, 1, 2, 3, 4, tzinfo=timezone.utc)),
]
ALL_DTS = [T(t) for t, _ in ALL_TYPES]
ALL_VALUES = [v for _, v in ALL_TYPES]


def arrow_view(values, dts):
    """What the brief promises deserialize_row returns: Arrow's own Python conversion."""
    return [pa.array([v], to_arrow(dt)).to_pylist()[0] for v, dt in zip(values, dts)]


@pytest.mark.parametrize("null_every", [0, 2, 3, 1])
def test_round_trip_every_atomic_type(null_every):
    values = [None if null_every and i % null_every == 0 else v for i, v in enumerate(ALL_VALUES)]
    data = serialize_row(values, ALL_DTS)
    assert data[:4] == len(ALL_DTS).to_bytes(4, "big")
    decoded = deserialize_row(data, ALL_DTS)
    assert decoded == arrow_view(values, ALL_DTS)
    # Same Python types (Arrow gives pandas.Timestamp, a datetime subclass, for nanoseconds).
    assert all(isinstance(want, type(got)) for got, want in zip(decoded, arrow_view(values, ALL_DTS)))


def sqls(dts):
    return [dt.sql() for dt in dts]


def test_serialize_matches_pypaimon_for_non_null_values():
    py_bytes = pypaimon_call("row_to_bytes", list(ALL_VALUES), sqls(ALL_DTS))
    assert serialize_row(ALL_VALUES, ALL_DTS) == py_bytes


@pytest.mark.parametrize("null_every", [0, 2, 3, 1])
def test_deserialize_rows_written_by_pypaimon(null_every):
    """pypaimon does not reserve var space for null non-compact values; offsets still decode."""
    values = [None if null_every and i % null_every == 0 else v for i, v in enumerate(ALL_VALUES)]
    py_bytes = pypaimon_call("row_to_bytes", list(values), sqls(ALL_DTS))
    assert deserialize_row(py_bytes, ALL_DTS) == arrow_view(values, ALL_DTS)


def test_pypaimon_reads_our_rows():
    values = [None if i % 2 else v for i, v in enumerate(ALL_VALUES)]
    ours = serialize_row(values, ALL_DTS)
    back = pypaimon_call("row_from_bytes", ours, sqls(ALL_DTS))
    assert back == arrow_view(values, ALL_DTS)


def test_shorter_arity_and_empty_rows_decode_as_nulls():
    dts = [T("BIGINT"), T("STRING"), T("DECIMAL(20, 2)")]
    data = serialize_row([5, "hello world!"], dts[:2])
    assert deserialize_row(data, dts) == [5, "hello world!", None]
    assert deserialize_row(b"", dts) == [None, None, None]
    assert deserialize_row(serialize_row([], []), dts) == [None, None, None]
    assert deserialize_row(b"", []) == []


# ---- few rows: the value-by-value encoder of serialize_rows equals encode_rows ---------------------
@pytest.mark.parametrize("types,value,expected", [([t], [v], e) for t, v, e in FORMAT_EXAMPLES]
                         + [(t, v, e) for t, v, e, _ in JAVA_ROWS], ids=lambda x: None)
def test_few_rows_path_gives_java_bytes(types, value, expected):
    cols, dts = one_row_columns(value, types)
    assert hexrow(_encode_few(cols, dts, None)[0]) == expected


INT_TYPES = {"TINYINT": pa.int8(), "SMALLINT": pa.int16(), "INT": pa.int32(), "BIGINT": pa.int64()}
UNITS_PER_SECOND = {"s": 1, "ms": 10**3, "us": 10**6, "ns": 10**9}
FEW_KINDS = ["BOOLEAN", *INT_TYPES, "FLOAT", "DOUBLE", "DATE", "TIME", "TIMESTAMP", "TIMESTAMP_LTZ",
             "DECIMAL", "STRING", "BINARY", "NESTED", "CAST"]


def ints(bits: int, signed: bool = True) -> st.SearchStrategy[int]:
    lo, hi = (-2 ** (bits - 1), 2 ** (bits - 1) - 1) if signed else (0, 2**bits - 1)
    return st.one_of(st.sampled_from([lo, hi, 0, -1 if signed else 1]), st.integers(lo, hi))


@st.composite
def few_rows_column(draw, n: int, fallbacks: bool) -> tuple[DataType, pa.Array | pa.ChunkedArray, bool]:
    """A Paimon type, an Arrow column of n rows for it (nulls, extremes, sliced or chunked),
    and whether the few-rows path must take it (False: an input it leaves to encode_rows,
    drawn only when `fallbacks`, as one such column sends the whole input there)."""
    kind = draw(st.sampled_from(FEW_KINDS if fallbacks else FEW_KINDS[:-1]))
    extra = draw(st.integers(0, 2))                 # values sliced off the front: an array offset

    def values(strategy: st.SearchStrategy) -> list:
        return draw(st.lists(st.one_of(st.none(), strategy), min_size=n + extra, max_size=n + extra))

    accepted = True
    if kind == "BOOLEAN":
        t, arr = T(kind), pa.array(values(st.booleans()), pa.bool_())
    elif kind in INT_TYPES:
        t, arr = T(kind), pa.array(values(ints(INT_TYPES[kind].bit_width)), INT_TYPES[kind])
    elif kind in ("FLOAT", "DOUBLE"):        # every bit pattern: NaN payloads, -0.0, inf, subnormals
        fmt, bits, at = ("<f", 32, pa.float32()) if kind == "FLOAT" else ("<d", 64, pa.float64())
        special = [int.from_bytes(struct.pack(fmt, x), "little") for x in (0.0, -0.0, math.inf, -math.inf, math.nan)]
        exponent, quiet = ((2**8 - 1) << 23, 1 << 22) if bits == 32 else ((2**11 - 1) << 52, 1 << 51)
        special += [exponent | 1, exponent | 1 << (bits - 1) | 1, exponent | quiet | 5]   # signaling, signed NaNs
        raw = values(st.one_of(st.sampled_from(special), ints(bits, signed=False)))
        t, arr = T(kind), pa.array(raw, pa.uint32() if bits == 32 else pa.uint64()).view(at)
    elif kind == "DATE":
        t, arr = T(kind), pa.array(values(ints(32)), pa.int32()).view(pa.date32())
    elif kind == "TIME":
        unit = draw(st.sampled_from(["s", "ms", "us", "ns"]))
        storage = pa.int32() if unit in ("s", "ms") else pa.int64()
        extreme = fallbacks and draw(st.booleans())      # out of a day: the vectorized path may reject
        accepted = not extreme
        day = 86400 * UNITS_PER_SECOND[unit]
        near_day = st.integers(-day, 2 * day)          # before and after the day too: floor division
        arr = pa.array(values(ints(storage.bit_width) if extreme else near_day), storage)
        arr = arr.view(pa.time32(unit) if unit in ("s", "ms") else pa.time64(unit))
        t = T(f"TIME({draw(st.integers(0, 9))})")
    elif kind in ("TIMESTAMP", "TIMESTAMP_LTZ"):
        unit = draw(st.sampled_from(["s", "ms", "us", "ns"]))
        tz = draw(st.sampled_from([None, "UTC", "Asia/Tokyo"]))
        extreme = fallbacks and draw(st.booleans()) and unit in ("s", "ms")   # millis overflow int64
        accepted = not extreme
        span = (290 if unit == "ns" else 5000) * 31_557_600 * UNITS_PER_SECOND[unit]   # years either side of 1970
        moments = st.integers(-span, span)                         # before 1970 too, sub-millisecond parts
        arr = pa.array(values(st.one_of(moments, ints(64)) if extreme else moments), pa.int64())
        suffix = " WITH LOCAL TIME ZONE" if kind == "TIMESTAMP_LTZ" else ""
        t, arr = T(f"TIMESTAMP({draw(st.integers(0, 9))}){suffix}"), arr.view(pa.timestamp(unit, tz))
    elif kind == "DECIMAL":
        precision = draw(st.integers(1, 38))
        scale = draw(st.integers(0, precision))
        top = 10**precision - 1
        edges = [v for k in range(1, 17) for v in (2 ** (8 * k - 1), 2 ** (8 * k - 1) - 1) if v <= top]
        edges += [-v for v in edges] + [top, -top, 0, -1, 1]   # where BigInteger.toByteArray() grows a byte
        unscaled = values(st.one_of(st.sampled_from(edges), st.integers(-top, top)))
        decimals = [None if u is None else Decimal(f"{u}E-{scale}") for u in unscaled]   # exact, no context
        t, arr = T(f"DECIMAL({precision}, {scale})"), pa.array(decimals, pa.decimal128(precision, scale))
    elif kind == "STRING":
        text = st.one_of(st.text(min_size=6, max_size=9), st.text(max_size=30),
                         st.text(alphabet="aé✓𝄞", max_size=12))         # multi-byte around 7/8 bytes
        encoding = draw(st.sampled_from(["string", "large_string", "dictionary"] + ["string_view"] * fallbacks))
        accepted = encoding != "string_view"
        arr = pa.array(values(text), pa.string() if encoding == "dictionary" else getattr(pa, encoding)())
        arr = arr.dictionary_encode() if encoding == "dictionary" else arr
        t = T(draw(st.sampled_from(["CHAR(10)", "VARCHAR(20)", "STRING"])))
    elif kind == "BINARY":
        at = draw(st.sampled_from([pa.binary(), pa.large_binary()] + [pa.binary_view()] * fallbacks))
        accepted = at != pa.binary_view()
        arr = pa.array(values(st.binary(max_size=20)), at)
        t = T(draw(st.sampled_from(["BINARY(8)", "VARBINARY(20)", "BYTES"])))
    elif kind == "NESTED":                       # stats rows: the bounds of nested columns are null
        t = DataType("ARRAY", element=T("BIGINT"))
        arr = draw(st.sampled_from([pa.nulls(n + extra), pa.nulls(n + extra, to_arrow(t))]))
    else:                                       # an input encode_rows must cast (int64 for INT), may overflow
        t, arr, accepted = T("INT"), pa.array(values(ints(33)), pa.int64()), False
    arr = arr[extra:]
    if draw(st.booleans()):
        cut = draw(st.integers(0, n))
        arr = pa.chunked_array([arr[:cut], arr[cut:]])
    return t, arr, accepted


@settings(max_examples=120, deadline=None,
          suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large])
@given(st.data())
def test_few_rows_path_equals_vectorized(data):
    """serialize_rows on 1..8 rows (value by value) gives encode_rows' bytes, or its error."""
    n = data.draw(st.integers(1, 8), label="rows")
    arity = data.draw(st.one_of(st.sampled_from([1, 55, 56, 57, 70]), st.integers(1, 70)), label="arity")
    fallbacks = data.draw(st.sampled_from([False, False, False, True]), label="inputs left to encode_rows")
    columns = [data.draw(few_rows_column(n, fallbacks)) for _ in range(arity)]
    types, arrays = [c[0] for c in columns], [c[1] for c in columns]
    few = _encode_few(arrays, types, None)
    if all(accepted for _, _, accepted in columns):
        assert few is not None                   # the comparison below really covers the few-rows path
    try:
        expected = encode_rows(arrays, types).to_pylist()
    except Exception as e:                      # e.g. INT overflow: the same error from serialize_rows
        assert few is None
        with pytest.raises(type(e), match=re.escape(str(e))):
            serialize_rows(arrays, types)
        return
    if few is not None:
        assert few == expected
    prefix = arity.to_bytes(4, "big")
    assert serialize_rows(arrays, types) == [prefix + row for row in expected]
    assert serialize_rows(arrays, types, num_rows=n) == [prefix + row for row in expected]


def test_few_rows_path_leaves_other_inputs_to_encode_rows():
    nine = pa.array(range(9))
    assert _encode_few([nine], [T("BIGINT")], None) is None
    assert len(serialize_rows([nine], [T("BIGINT")])) == 9
    assert _encode_few([pa.array([1])], [T("BIGINT"), T("INT")], None) is None
    assert _encode_few([pa.array([1]), pa.array([1, 2])], [T("BIGINT")] * 2, None) is None
    assert _encode_few([], [], 2) == [bytes(8), bytes(8)]
    with pytest.raises(ValueError):
        serialize_rows([pa.array([1])], [T("BIGINT"), T("INT")])
    with pytest.raises(SchemaMismatchError):
        serialize_rows([pa.array([2**40])], [T("INT")])
    with pytest.raises(UnsupportedTypeError):
        serialize_rows([pa.array([[1]])], [DataType("ARRAY", element=T("BIGINT"))])


# ---- hashing ----------------------------------------------------------------------------------
def test_hash_matches_reference_for_random_byte_rows():
    rng = np.random.default_rng(1)
    rows = [rng.integers(0, 256, 4 * int(rng.integers(0, 40)), dtype=np.uint8).tobytes() for _ in range(500)]
    expected = np.array(pypaimon_call("hash_bytes_by_words", rows), np.uint32).view(np.int32)
    assert np.array_equal(hash_rows(pa.array(rows, pa.binary())), expected)
    assert np.array_equal(hash_rows(pa.array(rows, pa.large_binary())), expected)
    assert np.array_equal(hash_rows(pa.chunked_array([rows[:100], rows[100:]], pa.binary())), expected)
    sliced = pa.array([b"abc"] + rows, pa.binary())[1:]     # unaligned start offset
    assert np.array_equal(hash_rows(sliced), expected)
    assert hash_rows(pa.array([], pa.binary())).dtype == np.int32


def test_hash_rejects_non_word_lengths():
    with pytest.raises(ValueError):
        hash_rows(pa.array([b"abc"]))


def murmur3_words(data: bytes, seed: int = 42) -> int:
    """A plain reference: Murmur3_x86_32 over 4-byte little-endian words, as a signed int32."""
    m = 0xFFFFFFFF
    h = seed
    for (k,) in struct.iter_unpack("<I", data):
        k = k * 0xCC9E2D51 & m
        k = (k << 15 | k >> 17) & m
        h ^= k * 0x1B873593 & m
        h = (h << 13 | h >> 19) & m
        h = (h * 5 + 0xE6546B64) & m
    h ^= len(data)
    h ^= h >> 16
    h = h * 0x85EBCA6B & m
    h ^= h >> 13
    h = h * 0xC2B2AE35 & m
    h ^= h >> 16
    return h - 2**32 if h >= 2**31 else h


def test_reference_murmur_matches_java():
    for _, _, expected, java_hash in JAVA_ROWS:
        assert murmur3_words(bytes.fromhex(expected.replace(" ", ""))) == java_hash


@pytest.mark.parametrize("width", [0, 4, 8, 16, 24, 64])
@pytest.mark.parametrize("n", [31, 32, 33, 1000])
def test_hash_of_equal_length_rows(width, n):
    """From 32 rows on, equal lengths take the matrix fast path: same as the reference and the sorted path."""
    rng = np.random.default_rng(width * 10_000 + n)
    rows = [rng.integers(0, 256, width, dtype=np.uint8).tobytes() for _ in range(n)]
    for seed in (42, 1234567):
        expected = np.array([murmur3_words(r, seed) for r in rows], np.int32)
        longer = pa.array(rows + [bytes(width + 4)], pa.binary())         # one longer row: sorted path
        assert np.array_equal(hash_rows(longer, seed)[:-1], expected)
        sliced = pa.array([b"abc"] + rows, pa.binary())[1:]                  # unaligned start offset
        for arr in (pa.array(rows, pa.binary()), pa.array(rows, pa.large_binary()), sliced,
                    pa.chunked_array([rows[:10], rows[10:]], pa.binary())):
            got = hash_rows(arr, seed)
            assert got.dtype == np.int32 and np.array_equal(got, expected)


def test_hash_of_bigint_keys_equals_single_rows():
    keys = pa.array(np.random.default_rng(3).integers(-2**63, 2**63 - 1, 500))
    rows = encode_rows([keys], [T("BIGINT")])
    assert hash_rows(rows).tolist() == [hash_row(r) for r in rows.to_pylist()]   # one row: sorted path


@settings(max_examples=40, deadline=None)
@given(st.lists(st.tuples(st.one_of(st.none(), st.integers(-2**63, 2**63 - 1)),
                          st.one_of(st.none(), st.text(max_size=20))), min_size=1, max_size=30))
def test_hash_and_bytes_match_pypaimon_serializer(rows):
    dts = [T("BIGINT"), T("STRING")]
    cols = [pa.array([r[0] for r in rows], pa.int64()), pa.array([r[1] for r in rows], pa.string())]
    encoded = encode_rows(cols, dts).to_pylist()
    hashes = hash_rows(encode_rows(cols, dts))
    for row, ours, h in zip(rows, encoded, hashes):
        theirs = pypaimon_call("row_to_bytes", list(row), sqls(dts))[4:]
        assert ours == theirs
        assert int(h) == np.uint32(pypaimon_call("hash_bytes_by_words", [theirs])[0]).view(np.int32)


# ---- vectorization check ------------------------------------------------------------------------
def random_strings(n: int, rng: np.random.Generator) -> pa.Array:
    lengths = rng.integers(5, 41, n)
    alphabet = np.frombuffer("abcxyzé0123".encode(), np.uint8)[:-1]
    data = alphabet[rng.integers(0, len(alphabet), int(lengths.sum()))]
    offsets = np.concatenate([[0], np.cumsum(lengths)]).astype(np.int32)
    return pa.Array.from_buffers(pa.binary(), n, [None, pa.py_buffer(offsets), pa.py_buffer(data)])


def test_vectorized_performance():
    """1M keys: a per-row Python loop would take tens of seconds; vectorized it is ~0.1-0.6 s.
    The bounds are loose on purpose (no flaky timing), the measured times are printed."""
    rng = np.random.default_rng(0)
    keys = pa.array(rng.integers(-2**63, 2**63 - 1, 1_000_000))
    t0 = time.perf_counter()
    hash_rows(encode_rows([keys], [T("BIGINT")]))
    t_bigint = time.perf_counter() - t0
    strings = random_strings(1_000_000, rng)
    t0 = time.perf_counter()
    hash_rows(encode_rows([strings], [T("BYTES")]))
    t_strings = time.perf_counter() - t0
    print(f"\n1M BIGINT encode+hash {t_bigint:.3f}s; 1M strings(5-40B) encode+hash {t_strings:.3f}s")
    assert t_bigint < 5 and t_strings < 15
