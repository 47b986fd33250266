"""Property test: ingestion's record decoders (sinks/decoders.py) never change a value silently.

For random table schemas and random hostile Kafka records, every record is either decoded to
exactly the value it holds, read under each column's type, or rejected: `DecodeError` under
on_error "fail", set aside in `Decoded.rejected` with an error text under "dead-letter" (and
dropped under "skip"). A rejected record never changes or drops another record of its batch:
the rows are the accepted records' values, in record order, whether the batch decodes in one
vectorized parse or record by record (the error path that finds the culprits).

The expected outcome of each record is computed here in plain Python (`json` with every number
kept as its text, `decimal`, `fractions`, proleptic Gregorian arithmetic), never through the
project's decoding code, under these semantics (README "Kafka ingestion", tests/test_ingest.py,
tests/test_debezium.py):

* a JSON number is the decimal its text writes. Integer columns take integer literals within
  their type's range; a literal with a fraction or exponent whose value is integral (1.0, 1e3)
  may be taken or refused, any other (1.5, 2**31 into INT) is refused. DECIMAL(p, s) columns
  take numbers with at most s fraction digits and p digits, exactly (1.005 into DECIMAL(10, 2)
  is refused, never rounded). FLOAT and DOUBLE columns take the nearest value of their type
  (correct rounding of the text, ties to even: 2**53+1 is 2**53 in a DOUBLE, and a tiny number
  may round to zero), but a finite number beyond the type's range is refused, never infinity;
  the non-standard NaN and Infinity literals may be taken as themselves;
* strings into numeric columns: decimal text may be taken (exactly) or refused; booleans, objects
  and arrays are refused everywhere but in their own types; a number is no STRING;
* text: JSON strings exactly, after their escapes (a lone surrogate, which no UTF-8 holds, is
  refused); a raw control character inside a string (a newline) is not JSON: refused;
* DATE: ISO `yyyy-mm-dd` text (as Spark's from_json); TIMESTAMP(p): ISO wall-time text, `T` or
  a space, at most p fraction digits that are not zero (zeros beyond p may be refused); a time
  with a zone or offset is an instant, no wall time: refused; a date alone may be taken as
  midnight; TIMESTAMP WITH LOCAL TIME ZONE: the instant the text with its offset names, a text
  without one in UTC; epoch numbers are refused (JSON's timestamps are text);
* BYTES: padded standard base64 text (the bytes it encodes);
* ROW: a JSON object of its fields, missing ones null; ARRAY: a JSON array;
* a key twice in one object is refused (unless both values are the same, where either is right);
  a missing field or a JSON null is null; a null primary key is refused.

debezium-json (with and without Kafka Connect's schema envelope) reads each column in Debezium's
encoding (DATE as epoch days, TIMESTAMP(3) epoch milliseconds, (6) microseconds, LTZ ISO text
with its offset, BYTES base64, DECIMAL by `decimal.handling.mode`: base64 of the big-endian
two's-complement unscaled value, its text, or a JSON number read as the decimal it writes).
The change-event formats whose values are JSON (maxwell-json, ogg-json, aws-dms-json) and
canal-json's text are checked on the values they share with plain JSON; maxwell-json's BOOLEAN
and DECIMAL columns take a value's text as Paimon's CDC casts it (`expect_maxwell`).

The bugs this test found are kept as explicit regression tests at the end of this file; the
property tests generate their cases too.
"""
from __future__ import annotations

import base64
import datetime as dt
import decimal
import json
import math
import os
import re
import struct
from dataclasses import dataclass, replace
from fractions import Fraction
from typing import Any

import numpy as np
import pyarrow as pa
import pytest
from hypothesis import HealthCheck, Phase, given, settings, strategies as st

from paimon_streaming.sinks.decoders import DecodeError, Decoder

MAX_EXAMPLES = int(os.environ.get("PAIMON_DECODE_FIDELITY_EXAMPLES", "60"))
# Shrinking re-decodes hundreds of batches; the failure message names the records and what was
# expected already. PAIMON_DECODE_FIDELITY_SHRINK=1 shrinks.
PHASES = tuple(Phase) if os.environ.get("PAIMON_DECODE_FIDELITY_SHRINK") == "1" else \
    (Phase.explicit, Phase.reuse, Phase.generate)
SETTINGS = dict(deadline=None, database=None, phases=PHASES,
                suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large])

D = decimal.Decimal
EXACT = decimal.Context(prec=1000, Emin=-10**6, Emax=10**6, traps=[decimal.InvalidOperation])
FLT_MAX = struct.unpack("<f", struct.pack("<I", 0x7F7FFFFF))[0]


# ---- expected outcomes -------------------------------------------------------------------------
@dataclass(frozen=True)
class Out:
    """What a value must become: `must` accept (exactly `value`), reject, or either of the two."""
    must: str
    value: Any = None


ACCEPT, REJECT, EITHER = "accept", "reject", "either"
NO = Out(REJECT)


def ok(value: Any) -> Out:
    return Out(ACCEPT, value)


def either(value: Any) -> Out:
    return Out(EITHER, value)


def joined(parts: list[Out], value: Any) -> Out:
    """A composite value: refused when a part must be, taken when all must be."""
    musts = {p.must for p in parts}
    return NO if REJECT in musts else Out(EITHER if EITHER in musts else ACCEPT, value)


class Num(str):
    """A JSON number, kept as its text (so 1.005 stays 1.005)."""


class Pairs(list):
    """A JSON object as its (key, value) pairs, duplicates kept."""


def loads(text: str) -> Any:
    """The JSON value of `text`, numbers as their text, objects as their pairs (ValueError when
    it is not JSON: a raw control character in a string, trailing data)."""
    return json.loads(text, parse_int=Num, parse_float=Num, parse_constant=Num, object_pairs_hook=Pairs)


def fcanon(x: float) -> Any:
    """A float compared by its bits (-0.0 is not 0.0), NaN as one value."""
    return "nan" if math.isnan(x) else struct.pack("<d", x)


def nearest_f32(q: Fraction) -> float | None:
    """The float32 nearest to `q` (ties to even), None beyond FLOAT's range."""
    if abs(q) >= Fraction(FLT_MAX) + Fraction(2) ** 103:  # half an ulp above the largest float32
        return None
    with np.errstate(over="ignore"):
        best = np.float32(float(q))
        near = (np.nextafter(best, np.float32(np.inf)), np.nextafter(best, np.float32(-np.inf)))
    if np.isinf(best):  # the double on the halfway point above FLT_MAX, q below it
        return FLT_MAX if q > 0 else -FLT_MAX
    for c in near:
        if np.isinf(c):
            continue
        d_best, d_c = abs(Fraction(float(best)) - q), abs(Fraction(float(c)) - q)
        if d_c < d_best or (d_c == d_best and int(c.view(np.uint32)) % 2 == 0):
            best = c
    return float(best)


INT_RE = re.compile(r"-?(0|[1-9][0-9]*)")
DEC_TEXT_RE = re.compile(r"[+-]?([0-9]+\.?[0-9]*|\.[0-9]+)([eE][+-]?[0-9]+)?")
NON_FINITE = {"NaN": math.nan, "Infinity": math.inf, "-Infinity": -math.inf}


def decimal_fit(d: D, t: pa.Decimal128Type) -> Out:
    """`d` in DECIMAL(p, s): exactly, or refused."""
    if not d.is_finite():
        return NO
    if d.is_zero():
        return ok(D(0))
    sign, digits, exp = d.as_tuple()
    while digits and digits[-1] == 0 and exp < 0:  # trailing zeros of the fraction say nothing
        digits, exp = digits[:-1], exp + 1
    fraction = max(-exp, 0)
    whole = len(digits) + exp
    if fraction > t.scale or whole + t.scale > t.precision:
        return NO
    return ok(d)


def days_from_civil(y: int, m: int, d: int) -> int:
    """Days since 1970-01-01 of a proleptic Gregorian date (any year, 0 included)."""
    y -= m <= 2
    era = (y if y >= 0 else y - 399) // 400
    yoe = y - era * 400
    doy = (153 * (m + (-3 if m > 2 else 9)) + 2) // 5 + d - 1
    doe = yoe * 365 + yoe // 4 - yoe // 100 + doy
    return era * 146097 + doe - 719468


def valid_date(y: int, m: int, d: int) -> bool:
    if not 1 <= m <= 12 or d < 1:
        return False
    leap = y % 4 == 0 and (y % 100 != 0 or y % 400 == 0)
    return d <= [31, 29 if leap else 28, 31, 30, 31, 30, 31, 31, 30, 31, 30, 31][m - 1]


DATE_RE = re.compile(r"([0-9]{4})-([0-9]{2})-([0-9]{2})")
TS_RE = re.compile(r"([0-9]{4})-([0-9]{2})-([0-9]{2})"
                   r"(?:([T ])([0-9]{2})(?::([0-9]{2})(?::([0-9]{2})(?:\.([0-9]{1,9}))?)?)?)?"
                   r"(Z|[+-][0-9]{2}(?::?[0-9]{2})?)?")
PER_SECOND = {"s": 1, "ms": 1000, "us": 1_000_000, "ns": 1_000_000_000}


def timestamp_text(text: str, t: pa.TimestampType) -> Out:
    """ISO text as TIMESTAMP (wall time: no offset) or TIMESTAMP WITH LOCAL TIME ZONE (an
    offset, or UTC without one), in `t`'s unit since the epoch."""
    m = TS_RE.fullmatch(text)
    if not m:
        return NO
    y, mo, d, sep, hh, mi, ss, frac, zone = m.groups()
    y, mo, d = int(y), int(mo), int(d)
    if not valid_date(y, mo, d):
        return NO
    h, mi_, s = int(hh or 0), int(mi or 0), int(ss or 0)
    if h > 23 or mi_ > 59 or s > 59:
        return NO
    if zone and t.tz is None:
        return NO  # an instant is no wall time
    offset = 0
    if zone and zone != "Z":
        oh, om = int(zone[1:3]), int(zone[3:].lstrip(":") or 0)
        if oh > 23 or om > 59:
            return NO
        offset = (1 if zone[0] == "+" else -1) * (oh * 3600 + om * 60)
    per = PER_SECOND[t.unit]
    digits = len(str(per)) - 1
    frac = frac or ""
    if any(c != "0" for c in frac[digits:]):
        return NO  # more digits than the type keeps: refused, never cut
    units = int((frac[:digits] or "0").ljust(digits, "0")) if digits else 0
    value = ((days_from_civil(y, mo, d) * 86400 + h * 3600 + mi_ * 60 + s) - offset) * per + units
    # the forms Spark and Debezium write; others (no seconds, a date alone, +0200) may be refused
    usual = sep is not None and mi is not None and ss is not None and len(frac) <= digits and \
        (zone is None or zone == "Z" or re.fullmatch(r"[+-][0-9]{2}:[0-9]{2}", zone) is not None)
    return ok(value) if usual and 1 <= y <= 9999 else either(value)


def base64_bytes(text: str) -> Out:
    if len(text) % 4 or not re.fullmatch(r"[A-Za-z0-9+/]*={0,2}", text):
        return NO
    raw = base64.b64decode(text, validate=True)
    return ok(raw) if base64.b64encode(raw).decode() == text else either(raw)


def expect_json(t: pa.DataType, v: Any) -> Out:
    """What a JSON value `v` (from `loads`) must become in a column of type `t`."""
    if v is None:
        return ok(None)
    if pa.types.is_integer(t):
        lo, hi = -2 ** (t.bit_width - 1), 2 ** (t.bit_width - 1) - 1
        if isinstance(v, Num) and INT_RE.fullmatch(v):
            return ok(int(v)) if lo <= int(v) <= hi else NO
        text = v if isinstance(v, Num) else (v if isinstance(v, str) and DEC_TEXT_RE.fullmatch(v) else None)
        if text is None or text in NON_FINITE:
            return NO
        with decimal.localcontext(EXACT):
            d = D(text)
            return either(int(d)) if d == d.to_integral_value() and lo <= d <= hi else NO
    if pa.types.is_floating(t):
        if isinstance(v, Num) and v in NON_FINITE:
            return either(fcanon(NON_FINITE[v]))
        text = v if isinstance(v, Num) else (v if isinstance(v, str) and DEC_TEXT_RE.fullmatch(v) else None)
        if text is None:
            return NO
        with decimal.localcontext(EXACT):
            q = Fraction(D(text)) if abs(D(text).adjusted()) < 5000 else None
        if t == pa.float64():
            x = float(text)
            out = fcanon(x) if math.isfinite(x) else None
        else:
            x = nearest_f32(q) if q is not None else (None if D(text).adjusted() > 0 else 0.0)
            out = fcanon(math.copysign(x, -1 if text.lstrip().startswith("-") else 1)) if x is not None else None
        if out is None:
            return NO
        return ok(out) if isinstance(v, Num) else either(out)
    if pa.types.is_decimal(t):
        if isinstance(v, Num) and v not in NON_FINITE:
            with decimal.localcontext(EXACT):
                fit = decimal_fit(D(v), t)
            # the plain forms must be taken; others that fit (1.5e1, 0e165, 1.000 into DECIMAL(10, 2)) may be refused
            plain = re.fullmatch(r"-?[0-9]+(\.[0-9]{0,%d})?" % t.scale, v)
            return fit if plain or fit.must == REJECT else either(fit.value)
        if isinstance(v, str) and not isinstance(v, Num) and DEC_TEXT_RE.fullmatch(v):
            with decimal.localcontext(EXACT):
                fit = decimal_fit(D(v), t)
            return fit if fit.must == REJECT else either(fit.value)
        return NO
    if pa.types.is_string(t):
        if isinstance(v, str) and not isinstance(v, Num):
            try:
                v.encode("utf-8")
            except UnicodeEncodeError:
                return NO  # a lone surrogate
            return ok(v)
        return NO
    if pa.types.is_boolean(t):
        return ok(v) if isinstance(v, bool) else NO
    if pa.types.is_binary(t):
        return base64_bytes(v) if isinstance(v, str) and not isinstance(v, Num) else NO
    if pa.types.is_date(t):
        m = DATE_RE.fullmatch(v) if isinstance(v, str) and not isinstance(v, Num) else None
        if not m or not valid_date(*map(int, m.groups())):
            return NO
        y = int(m.group(1))
        value = days_from_civil(*map(int, m.groups()))
        return ok(value) if y >= 1 else either(value)
    if pa.types.is_timestamp(t):
        return timestamp_text(v, t) if isinstance(v, str) and not isinstance(v, Num) else NO
    if pa.types.is_struct(t):
        return expect_object(v, [(t.field(i).name, t.field(i).type) for i in range(t.num_fields)], ())
    if pa.types.is_list(t):
        if not isinstance(v, list) or isinstance(v, Pairs):
            return NO
        parts = [expect_json(t.value_type, x) for x in v]
        return joined(parts, [p.value for p in parts])
    if pa.types.is_map(t):
        return expect_map(t, v)
    raise AssertionError(f"no expectation for {t}")


def expect_map(t: pa.MapType, v: Any) -> Out:
    """A JSON object as a MAP: its members in their order, keys (text) read as the key type; a
    key twice is refused (with the same value twice it may be taken)."""
    if not isinstance(v, Pairs):
        return NO
    members: dict[str, Any] = {}
    for k, x in v:
        if k in members and json.dumps(members[k]) != json.dumps(x):
            return NO
        members[k] = x
    keys = [expect_key(t.key_type, k) for k in members]
    values = [expect_json(t.item_type, x) for x in members.values()]
    out = joined(keys + values, [(k.value, x.value) for k, x in zip(keys, values)])
    return Out(EITHER, out.value) if len(members) < len(v) and out.must == ACCEPT else out


def expect_key(t: pa.DataType, k: str) -> Out:
    if pa.types.is_string(t):
        return expect_json(t, k)
    if INT_RE.fullmatch(k):
        return ok(int(k)) if -2 ** 31 <= int(k) < 2 ** 31 else NO
    return either(int(k)) if re.fullmatch(r"\s*[+-]?[0-9]+\s*", k) and -2 ** 31 <= int(k) < 2 ** 31 else NO


def expect_object(v: Any, fields: list[tuple[str, pa.DataType]], keys: tuple[str, ...], expect=None) -> Out:
    """A JSON object as a row of `fields` (a dict of their canonical values, each as `expect`
    makes it: `expect_json` unless given); a key twice with different values, or a null in a
    `keys` field, is refused."""
    if not isinstance(v, Pairs):
        return NO
    seen: dict[str, Any] = {}
    twice = False
    for k, x in v:
        if k in seen and json.dumps(seen[k]) != json.dumps(x):
            return NO
        twice |= k in seen
        seen[k] = x
    parts = [(expect or expect_json)(ft, seen.get(name)) for name, ft in fields]
    row = {name: p.value for (name, _), p in zip(fields, parts)}
    if any(row[name] is None and p.must != REJECT for (name, _), p in zip(fields, parts) if name in keys):
        return NO  # a null primary key
    out = joined(parts, row)
    return Out(EITHER, out.value) if twice and out.must == ACCEPT else out


# ---- decoded values as the expected ones are written -----------------------------------------
def plain_type(t: pa.DataType) -> pa.DataType:
    """`t` with dates and timestamps as the integers they hold (years Python cannot show)."""
    if pa.types.is_timestamp(t):
        return pa.int64()
    if pa.types.is_date32(t):
        return pa.int32()
    if pa.types.is_struct(t):
        return pa.struct([t.field(i).with_type(plain_type(t.field(i).type)) for i in range(t.num_fields)])
    if pa.types.is_list(t):
        return pa.list_(plain_type(t.value_type))
    if pa.types.is_map(t):
        return pa.map_(plain_type(t.key_type), plain_type(t.item_type))
    return t


def canon(t: pa.DataType, v: Any) -> Any:
    if v is None:
        return None
    if pa.types.is_floating(t):
        return fcanon(v)
    if pa.types.is_struct(t):
        return {t.field(i).name: canon(t.field(i).type, v[t.field(i).name]) for i in range(t.num_fields)}
    if pa.types.is_map(t):
        return [(k, canon(t.item_type, x)) for k, x in v]
    if pa.types.is_list(t):
        return [canon(t.value_type, x) for x in v]
    return v


def decoded_rows(rows: pa.RecordBatch, fields: list[pa.Field]) -> list[dict]:
    columns = {f.name: [canon(f.type, x) for x in rows.column(f.name).cast(plain_type(f.type)).to_pylist()]
               for f in fields}
    return [{f.name: columns[f.name][i] for f in fields} for i in range(rows.num_rows)]


# ---- hostile JSON --------------------------------------------------------------------------------
FOREIGN = st.sampled_from(["null", "true", "false", "0", "-0", "1", "1.5", "-1e-3", '"x"', '""', '"1"', '"1.5"',
                           "{}", "[]", "[1]", '{"a":1}', '"2024-01-01"', "NaN", "Infinity", '"NaN"', '" 1"'])


def _int_text(bits: int) -> st.SearchStrategy[str]:
    lo, hi = -2 ** (bits - 1), 2 ** (bits - 1) - 1
    n = st.one_of(st.sampled_from([lo - 1, lo, hi, hi + 1, 0, -1, 2 ** 31, -2 ** 31 - 1, 2 ** 63, -2 ** 63 - 1, 2 ** 64,
                                   10 ** 30]), st.integers(lo - 3, lo + 3), st.integers(hi - 3, hi + 3),
                   st.integers(-1000, 1000))
    forms = st.sampled_from(["{}", "{}", "{}.0", "{}.5", "{}e0", "{}E0", "{}.0e1", "{}.000001", '"{}"', "{}e-1"])
    return st.builds(lambda v, f: f.format(v), n, forms)


_DIGITS = st.text("0123456789", min_size=1, max_size=40).map(lambda s: s.lstrip("0") or "0")


def _decimal_text() -> st.SearchStrategy[str]:
    """Numbers as JSON writes them: digits, a fraction, an exponent (hostile sizes)."""
    frac = st.one_of(st.just(""), st.text("0123456789", min_size=1, max_size=30).map(lambda s: "." + s))
    exp = st.one_of(st.just(""), st.integers(-420, 420).map(lambda e: f"e{e}"),
                    st.integers(-50, 50).map(lambda e: f"E+{e}" if e >= 0 else f"E{e}"))
    return st.builds(lambda s, i, f, e: s + i + f + e, st.sampled_from(["", "-"]), _DIGITS, frac, exp)


_FLOAT_SPECIALS = ["1e39", "-1e39", "3.4028235e38", "3.4028236e38", "3.4028235677973366e38", "3.4028235677973367e38",
                   "1e-46", "1e-45", "-1e-46", "1.7976931348623157e308", "1.7976931348623159e308", "1e309", "-1e309",
                   "1e-400", "4.9e-324", "2.4703282292062328e-324", "9007199254740993", "16777217",
                   "1.0000000596046448", "-0.0", "-0", "0.1", "123456789012345678901234567890"]


def _float_text() -> st.SearchStrategy[str]:
    return st.one_of(st.sampled_from(_FLOAT_SPECIALS), st.sampled_from(_FLOAT_SPECIALS), _decimal_text(),
                     st.floats(allow_nan=False, allow_infinity=False).map(repr),
                     st.floats(width=32, allow_nan=False, allow_infinity=False).map(lambda x: f"{x:.9g}"),
                     st.floats(allow_nan=False, allow_infinity=False).map(lambda x: f"{x:.17g}"))


_DEC_SPECIALS = ["1.005", "1e40", "99999999.99", "99999999.995", "-99999999.99", "100000000", "1.00", "-0.001",
                 "1e-2", "0.1e1", "1.5e1", "12345678901234567890123456789012345678", "0.00000000000000000000001",
                 "1E+2", '"1.5"', '"+1.5"', '"1."', '".5"', '"1e3"', '"1,5"', '" 1.5"', '"0x10"', '"1_0"']


_VALID_DAYS = [1, 28, 29, 30, 31]


def _date_text() -> st.SearchStrategy[str]:
    return st.builds(lambda y, m, d, f: json.dumps(f.format(y, m, d)),
                     st.sampled_from([0, 1, 1600, 1969, 1970, 2024, 2023, 9999, 10000]),
                     st.sampled_from([1, 2, 2, 6, 12, 12, 12, 0, 13]), st.sampled_from(_VALID_DAYS * 3 + [0, 32]),
                     st.sampled_from(["{:04d}-{:02d}-{:02d}"] * 6 + ["{}-{}-{}", "{:04d}-{:02d}-{:02d}T00:00",
                                                                    "{:04d}-{:02d}-{:02d} ", "+{:04d}-{:02d}-{:02d}"]))


def _timestamp_text() -> st.SearchStrategy[str]:
    def build(y, mo, d, h, mi, s, frac, sep, shape, zone):
        date = f"{y:04d}-{mo:02d}-{d:02d}"
        time = [f"{h:02d}", f"{h:02d}:{mi:02d}", f"{h:02d}:{mi:02d}:{s:02d}", f"{h:02d}:{mi:02d}:{s:02d}.{frac}"][shape]
        return json.dumps(date if shape < 0 else date + sep + time + zone)
    frac = st.text("0123456789", min_size=1, max_size=10) | \
        st.sampled_from(["1", "12", "123", "000", "123000", "123456", "123456000", "1234567"])
    usual = st.builds(build, st.sampled_from([1, 1600, 1969, 1970, 2024, 2263, 9999]), st.sampled_from([1, 2, 12]),
                      st.sampled_from([1, 28]), st.sampled_from([0, 12, 23]), st.sampled_from([0, 59]),
                      st.sampled_from([0, 59]), frac, st.sampled_from(["T", " "]), st.sampled_from([2, 3, 3, 3]),
                      st.sampled_from(["", "", "Z", "+02:00", "-05:30"]))
    odd = st.builds(build, st.sampled_from([0, 1, 1600, 1969, 1970, 2024, 2262, 2263, 9999, 10000]),
                    st.sampled_from([1, 2, 2, 12, 12, 13]), st.sampled_from(_VALID_DAYS),
                    st.sampled_from([0, 12, 23, 23, 23, 24]), st.sampled_from([0, 59, 59, 59, 60]),
                    st.sampled_from([0, 59, 59, 59, 60]), frac, st.sampled_from(["T", " "]),
                    st.sampled_from([-1, 0, 1, 2, 2, 3, 3, 3, 3]),
                    st.sampled_from(["", "", "", "Z", "Z", "+02:00", "-05:30", "+0200", "+02", "+24:00", "-23:59"]))
    return st.one_of(usual, usual, odd)


def _base64_text() -> st.SearchStrategy[str]:
    def mangle(raw: bytes, how: int) -> str:
        text = base64.b64encode(raw).decode()
        return json.dumps([text, text.rstrip("="), text + "!", text[:-2] + "B=" if text.endswith("==") else text,
                           text.replace("+", "-"), "\\u0041AAA"][how])
    return st.builds(mangle, st.binary(max_size=12), st.sampled_from([0, 0, 0, 1, 2, 3, 4])) | \
        st.just('"\\u0041AAA"')


def _string_text() -> st.SearchStrategy[str]:
    """A JSON string whose characters are written plainly or as escapes (an astral one as a
    surrogate pair), sometimes a lone surrogate or a raw control character (not JSON)."""
    def escape(c: str, how: int) -> str:
        if c in '"\\' or ord(c) < 0x20 or how == 1:
            if ord(c) > 0xFFFF:
                hi, lo = divmod(ord(c) - 0x10000, 0x400)
                return f"\\u{0xD800 + hi:04x}\\u{0xDC00 + lo:04X}"
            return f"\\u{ord(c):04x}" if how != 2 or c not in '"\\\n\t' else json.dumps(c)[1:-1]
        return c
    plain = st.lists(st.tuples(st.characters(codec="utf-8") | st.sampled_from(["\n", "é", "\U0001F600", '"', "\\"]),
                               st.integers(0, 2)), max_size=8).map(
        lambda cs: '"' + "".join(escape(c, h) for c, h in cs) + '"')
    return st.one_of(plain, plain, st.sampled_from(['"\\ud800"', '"a\\udc00b"', '"\\ud83d\\ude00"', '"a\nb"',
                                                    '"a\r\nb"', '"a\tb"', '"a\\/b"']))


def value_text(t: pa.DataType, depth: int = 0) -> st.SearchStrategy[str]:
    """JSON text aimed at a column of type `t`, mixed with text aimed at others."""
    if pa.types.is_integer(t):
        aimed = _int_text(t.bit_width)
    elif pa.types.is_floating(t):
        aimed = _float_text()
    elif pa.types.is_decimal(t):
        aimed = st.one_of(st.sampled_from(_DEC_SPECIALS), _decimal_text())
    elif pa.types.is_string(t):
        aimed = _string_text()
    elif pa.types.is_boolean(t):
        aimed = st.sampled_from(["true", "false"])
    elif pa.types.is_binary(t):
        aimed = _base64_text()
    elif pa.types.is_date(t):
        aimed = _date_text()
    elif pa.types.is_timestamp(t):
        aimed = _timestamp_text()
    elif pa.types.is_struct(t):
        aimed = object_text([t.field(i) for i in range(t.num_fields)], depth + 1)
    elif pa.types.is_map(t):
        aimed = map_text(t, depth + 1)
    else:
        aimed = st.lists(value_text(t.value_type, depth + 1), max_size=3).map(lambda xs: "[" + ",".join(xs) + "]")
    return st.one_of(aimed, aimed, aimed, aimed, aimed, FOREIGN)


def _key_text(name: str, escaped: bool) -> str:
    return '"' + ("".join(f"\\u{ord(c):04x}" for c in name) if escaped else name) + '"'


@st.composite
def object_text(draw, fields: list[pa.Field], depth: int = 0) -> str:
    """A JSON object of (some of) `fields`, keys in any order, sometimes escaped or twice,
    whitespace (newlines too) between tokens."""
    ws = st.sampled_from(["", "", " ", "\n", "\t", "\r\n"])
    entries = []
    for f in fields:
        if draw(st.integers(0, 9)) == 0:
            continue  # missing
        entries.append((f.name, draw(value_text(f.type, depth))))
    if entries and draw(st.integers(0, 14)) == 0:
        name, _ = draw(st.sampled_from(entries))
        entries.append((name, draw(st.sampled_from([dict(entries)[name], draw(value_text(
            next(f.type for f in fields if f.name == name), depth))]))))
    entries = draw(st.permutations(entries))
    body = ",".join(f"{draw(ws)}{_key_text(k, draw(st.integers(0, 7)) == 0)}{draw(ws)}:{draw(ws)}{v}{draw(ws)}"
                    for k, v in entries)
    return "{" + body + "}"


_MAP_KEYS = {pa.string(): ["a", "b", "", "é", "\\u0041", "a b", "\\ud800"],
             pa.int32(): ["1", "-1", "0", "01", "+1", " 2", "x", "", "2147483647", "2147483648", "1.0", "1e2"]}


@st.composite
def map_text(draw, t: pa.MapType, depth: int = 0) -> str:
    """A JSON object aimed at a MAP: keys aimed at its key type (sometimes twice), values at its
    value type."""
    keys = draw(st.lists(st.sampled_from(_MAP_KEYS[t.key_type]), max_size=4))
    return "{" + ",".join(f'"{k}":{draw(value_text(t.item_type, depth))}' for k in keys) + "}"


SCALARS = [pa.int8(), pa.int16(), pa.int32(), pa.int64(), pa.float32(), pa.float64(), pa.decimal128(10, 2),
           pa.decimal128(38, 0), pa.decimal128(38, 18), pa.decimal128(5, 5), pa.decimal128(3, 0), pa.string(),
           pa.bool_(), pa.date32(), pa.timestamp("ms"), pa.timestamp("us"), pa.timestamp("us", "UTC"),
           pa.timestamp("ms", "UTC"), pa.binary()]
KEY_TYPES = [pa.int32(), pa.int64(), pa.string(), pa.decimal128(10, 2), pa.date32(), pa.timestamp("us")]


def column_types(depth: int = 0) -> st.SearchStrategy[pa.DataType]:
    scalar = st.sampled_from(SCALARS)
    if depth >= 1:
        return scalar
    row = st.lists(column_types(depth + 1), min_size=1, max_size=3).map(
        lambda ts: pa.struct([pa.field(f"f{i}", t) for i, t in enumerate(ts)]))
    maps = st.builds(pa.map_, st.sampled_from(list(_MAP_KEYS)), st.one_of(scalar, scalar, row))
    return st.one_of(scalar, scalar, scalar, row, column_types(depth + 1).map(pa.list_), maps, maps.map(pa.list_))


@st.composite
def table_schemas(draw) -> tuple[pa.Schema, tuple[str, ...]]:
    keys = [pa.field(f"k{i}", t, False) for i, t in enumerate(draw(st.lists(st.sampled_from(KEY_TYPES), max_size=2)))]
    cols = [pa.field(f"c{i}", t) for i, t in enumerate(draw(st.lists(column_types(), min_size=1, max_size=4)))]
    return pa.schema(keys + cols), tuple(f.name for f in keys)


@st.composite
def json_records(draw, schema: pa.Schema) -> str:
    """One record's value: mostly an object of the columns, sometimes no object or not JSON."""
    text = draw(object_text(list(schema)))
    how = draw(st.integers(0, 30))
    if how == 0:
        return text + " x"
    if how == 1:
        return text + text
    if how == 2:
        return "[" + text + "]"
    if how == 3:
        return draw(st.sampled_from(["", " ", "null", "1", '"x"', "{", "}"]))
    return text


def records(values: list[bytes | None], keys: list[bytes | None] | None = None) -> pa.RecordBatch:
    """Kafka records holding `values`, at offsets 0, 1, ... of partition 0 (as tests/change_event_support.py)."""
    n = len(values)
    return pa.RecordBatch.from_pydict({
        "key": pa.array(keys or [None] * n, pa.binary()), "value": pa.array(values, pa.binary()),
        "topic": ["t"] * n, "partition": pa.array([0] * n, pa.int32()), "offset": pa.array(range(n), pa.int64())})


def expect_record(text: str, schema: pa.Schema, keys: tuple[str, ...]) -> Out:
    try:
        v = loads(text)
    except ValueError:
        return NO
    return expect_object(v, [(f.name, f.type) for f in schema], keys)


# ---- checking a decoder against the expectations ------------------------------------------------
def settled(rows: list[dict], decoded) -> list[dict]:
    """`rows` without the values of the columns a decode reported wider (a JSON field a ROW
    lacks): those evolve the table and the batch is decoded again, so their values now are
    placeholders (the test of that: test_new_fields_inside_a_row_column_evolve_the_table)."""
    widened = {f.name for f in decoded.new_fields}
    return [{k: "(decoded again)" if k in widened else v for k, v in r.items()} for r in rows]


def check_batch(decoder: Decoder, values: list[bytes], expected: list[Out], fields: list[pa.Field]) -> None:
    """Each record alone, then the batch under dead-letter, skip and fail: taken records exactly
    as expected and in order, refused ones set aside (or the first named by DecodeError)."""
    def where(i: int) -> str:
        return f"record {i} {values[i]!r}: expected {expected[i]}"
    for i, value in enumerate(values):
        alone = decoder.decode_all(records([value]))
        if alone.rejected.num_rows:
            assert expected[i].must != ACCEPT, f"{where(i)}; refused: {alone.rejected.column('error')[0]}"
            assert alone.rejected.column("error")[0].as_py(), where(i)
            assert alone.rows.num_rows == 0, where(i)
        else:
            assert expected[i].must != REJECT, f"{where(i)}; decoded as {decoded_rows(alone.rows, fields)}"
            assert settled(decoded_rows(alone.rows, fields), alone) == settled([expected[i].value], alone), where(i)
    batch = decoder.decode_all(records(values))
    refused = batch.rejected.column("offset").to_pylist()
    assert refused == sorted(refused)
    for i in range(len(values)):
        if expected[i].must == ACCEPT:
            assert i not in refused, f"{where(i)}; refused in the batch: {batch.rejected.to_pylist()}"
        if expected[i].must == REJECT:
            assert i in refused, f"{where(i)}; taken in the batch"
    assert all(batch.rejected.column("error").to_pylist())
    taken = [i for i in range(len(values)) if i not in refused]
    got = settled(decoded_rows(batch.rows, fields), batch)
    assert got == settled([expected[i].value for i in taken], batch), \
        f"batch rows {got} != expected {[expected[i].value for i in taken]}; records {values}"
    skipped = replace(decoder, on_error="skip").decode_all(records(values))
    assert skipped.rows.equals(batch.rows) and not skipped.rejected.num_rows or \
        skipped.rejected.column("offset").to_pylist() == refused
    failing = replace(decoder, on_error="fail")
    if refused:
        with pytest.raises(DecodeError, match=f"offset={refused[0]}"):
            failing.decode_all(records(values))
    else:
        assert failing.decode_all(records(values)).rows.equals(batch.rows)


# ---- json ------------------------------------------------------------------------------------------
@settings(max_examples=MAX_EXAMPLES, **SETTINGS)
@given(data=st.data())
def test_json_records_decode_exactly_or_are_refused(data):
    schema, keys = data.draw(table_schemas())
    texts = data.draw(st.lists(json_records(schema), min_size=1, max_size=6))
    decoder = Decoder("json", schema, keys, key_format="json" if len(keys) > 1 else "string", on_error="dead-letter")
    check_batch(decoder, [t.encode() for t in texts], [expect_record(t, schema, keys) for t in texts], list(schema))
    if keys:
        assert set(decoder.decode(records([t.encode() for t in texts])).column("_kind").to_pylist()) <= {"+I"}


# ---- debezium-json -----------------------------------------------------------------------------
DBZ_SCALARS = [pa.int8(), pa.int16(), pa.int32(), pa.int64(), pa.float32(), pa.float64(), pa.decimal128(10, 2),
               pa.decimal128(38, 0), pa.decimal128(5, 5), pa.string(), pa.bool_(), pa.date32(), pa.timestamp("ms"),
               pa.timestamp("us"), pa.timestamp("us", "UTC"), pa.timestamp("ms", "UTC"), pa.binary()]
# Kafka Connect's JSON schema of each type (with the envelope), and the epoch unit of its timestamps
_CONNECT = {pa.int8(): "int8", pa.int16(): "int16", pa.int32(): "int32", pa.int64(): "int64", pa.float32(): "float",
            pa.float64(): "double", pa.string(): "string", pa.bool_(): "boolean", pa.binary(): "bytes"}
_EPOCH_NAMES = {"ms": "io.debezium.time.Timestamp", "us": "io.debezium.time.MicroTimestamp",
                "ns": "io.debezium.time.NanoTimestamp"}


def _unscaled_text(d: int, how: int) -> str:
    """Kafka Connect's Decimal: base64 of the big-endian two's-complement unscaled value."""
    raw = d.to_bytes(max(1, (d.bit_length() + 8) // 8), "big", signed=True)
    if how == 1:
        raw = b"\xff" + raw if d < 0 else b"\x00" + raw  # a redundant sign byte: the same value
    if how == 2:
        raw = b""
    return json.dumps(base64.b64encode(raw).decode())


def dbz_text(t: pa.DataType, handling: str, unit: str | None) -> st.SearchStrategy[str]:
    """Debezium's encoding of a value of `t` (`unit`: an envelope's epoch unit for timestamps)."""
    if pa.types.is_decimal(t):
        if handling == "precise":
            edges = [10 ** t.precision - 1, 10 ** t.precision, -10 ** t.precision, 2 ** 127 - 1, -2 ** 127]
            unscaled = st.one_of(st.integers(-10 ** 12, 10 ** 12), st.integers(-2 ** 130, 2 ** 130),
                                 st.sampled_from(edges))
            aimed = st.builds(_unscaled_text, unscaled, st.sampled_from([0, 0, 0, 1, 2]))
        elif handling == "string":
            aimed = st.one_of(st.sampled_from(_DEC_SPECIALS), _decimal_text()).map(
                lambda x: x if x.startswith('"') else json.dumps(x))
        else:
            aimed = st.one_of(st.sampled_from(_DEC_SPECIALS), _decimal_text(), _float_text())
    elif pa.types.is_date(t):
        aimed = _int_text(32)
    elif pa.types.is_timestamp(t) and t.tz is None:
        aimed = _int_text(64)
    elif pa.types.is_list(t):
        aimed = st.lists(dbz_text(t.value_type, handling, None), max_size=3).map(lambda xs: "[" + ",".join(xs) + "]")
    else:
        return value_text(t)
    return st.one_of(aimed, aimed, aimed, aimed, FOREIGN)


def expect_dbz(t: pa.DataType, v: Any, handling: str, unit: str | None) -> Out:
    """What a value `v` in Debezium's encoding must become in a column of type `t`."""
    if v is None:
        return ok(None)
    if pa.types.is_decimal(t) and handling == "precise":
        raw = base64_bytes(v) if isinstance(v, str) and not isinstance(v, Num) else NO
        if raw.must == REJECT or not raw.value:
            return NO  # not base64, or no bytes (Connect's Decimal has at least one)
        with decimal.localcontext(EXACT):
            fit = decimal_fit(D(int.from_bytes(raw.value, "big", signed=True)).scaleb(-t.scale), t)
        return fit if raw.must == ACCEPT or fit.must == REJECT else either(fit.value)
    if pa.types.is_decimal(t) and handling == "string":
        if isinstance(v, Num) or not isinstance(v, str) or not DEC_TEXT_RE.fullmatch(v):
            return NO
        with decimal.localcontext(EXACT):
            fit = decimal_fit(D(v), t)
        return fit if re.fullmatch(r"-?[0-9]+(\.[0-9]+)?", v) or fit.must == REJECT else either(fit.value)
    if pa.types.is_date(t):
        days = expect_json(pa.int32(), v)
        return days if days.must == REJECT or -719162 <= days.value <= 2932896 else either(days.value)
    if pa.types.is_timestamp(t) and t.tz is None:
        wire = unit or ("ms" if t.unit == "ms" else "us")
        n = expect_json(pa.int64(), v)
        if n.must == REJECT:
            return NO
        scaled = Fraction(n.value * PER_SECOND[t.unit], PER_SECOND[wire])
        if scaled.denominator != 1 or not -2 ** 63 <= scaled <= 2 ** 63 - 1:
            return NO  # finer than the column keeps, or beyond its range
        return Out(n.must, int(scaled))
    if pa.types.is_timestamp(t):  # ZonedTimestamp: ISO text with its offset
        if not isinstance(v, str) or isinstance(v, Num) or not re.search(r"(Z|[+-][0-9:]+)$", v):
            return NO
        return timestamp_text(v, t)
    if pa.types.is_list(t):
        if not isinstance(v, list) or isinstance(v, Pairs):
            return NO
        parts = [expect_dbz(t.value_type, x, handling, None) for x in v]
        return joined(parts, [p.value for p in parts])
    return expect_json(t, v)


def connect_schema(f: pa.Field, handling: str, unit: str | None) -> dict:
    """Kafka Connect's JSON schema of a column, as Debezium's envelope declares it."""
    t = f.type
    spec: dict[str, Any] = {"field": f.name, "optional": f.nullable}
    if pa.types.is_decimal(t):
        spec.update({"precise": {"type": "bytes", "name": "org.apache.kafka.connect.data.Decimal", "version": 1,
                                 "parameters": {"scale": str(t.scale), "connect.decimal.precision": str(t.precision)}},
                     "string": {"type": "string"}, "double": {"type": "double"}}[handling])
    elif pa.types.is_date(t):
        spec.update(type="int32", name="io.debezium.time.Date", version=1)
    elif pa.types.is_timestamp(t) and t.tz is None:
        spec.update(type="int64", name=_EPOCH_NAMES[unit], version=1)
    elif pa.types.is_timestamp(t):
        spec.update(type="string", name="io.debezium.time.ZonedTimestamp", version=1)
    elif pa.types.is_list(t):
        item = connect_schema(pa.field("item", t.value_type), handling, None)
        spec.update(type="array", items={k: v for k, v in item.items() if k != "field"})
    else:
        spec.update(type=_CONNECT[t])
    return spec


@st.composite
def debezium_cases(draw) -> tuple[pa.Schema, str, bool, list[str], list[Out], list[str]]:
    """A table, a decimal handling mode, whether events carry the schema envelope, and events
    (values, expectations, row kinds)."""
    element = st.sampled_from([pa.int32(), pa.int64(), pa.date32(), pa.decimal128(10, 2), pa.string()])
    types = draw(st.lists(st.one_of(st.sampled_from(DBZ_SCALARS), element.map(pa.list_)), min_size=1, max_size=4))
    schema = pa.schema([pa.field("id", pa.int64(), False)] + [pa.field(f"c{i}", t) for i, t in enumerate(types)])
    handling = draw(st.sampled_from(["precise", "string", "double"]))
    enveloped = draw(st.booleans())
    # with the envelope, a timestamp's epoch unit is the envelope's (MicroTimestamp into TIMESTAMP(3) ...)
    units = {f.name: draw(st.sampled_from(["ms", "us", "ns"])) if enveloped else ("ms" if f.type.unit == "ms" else "us")
             for f in schema if pa.types.is_timestamp(f.type) and f.type.tz is None}
    texts, expected, kinds = [], [], []
    envelope = {"type": "struct", "name": "dbserver1.shop.t.Envelope", "optional": False, "fields": [
        {"type": "struct", "optional": True, "field": image, "name": "dbserver1.shop.t.Value",
         "fields": [connect_schema(f, handling, units.get(f.name)) for f in schema]} for image in ("before", "after")]
        + [{"type": "string", "optional": False, "field": "op"}]}
    for _ in range(draw(st.integers(1, 5))):
        op = draw(st.sampled_from(["c", "r", "u", "d"]))
        ids = st.integers(-5, 5).map(str)
        entries = {"id": draw(st.one_of(ids, ids, ids, ids, _int_text(64), st.just("null")))}
        for f in list(schema)[1:]:
            if draw(st.integers(0, 9)):
                entries[f.name] = draw(dbz_text(f.type, handling, units.get(f.name)))
        image = "{" + ",".join(f'"{k}":{v}' for k, v in entries.items()) + "}"
        payload = f'{{"before":{image if op == "d" else "null"},"after":{"null" if op == "d" else image},' \
                  f'"source":{{"db":"shop","table":"t"}},"op":"{op}","ts_ms":1}}'
        text = f'{{"schema":{json.dumps(envelope)},"payload":{payload}}}' if enveloped else payload
        try:
            values = dict(loads(image))
        except ValueError:  # not JSON (a raw newline in a string)
            out = NO
        else:
            parts = [expect_dbz(f.type, values.get(f.name), handling, units.get(f.name)) for f in schema]
            row = {f.name: p.value for f, p in zip(schema, parts)}
            out = NO if row["id"] is None else joined(parts, row)
        texts.append(text)
        expected.append(out)
        kinds.append({"c": "+I", "r": "+I", "u": "+U", "d": "-D"}[op])
    return schema, handling, enveloped, texts, expected, kinds


@settings(max_examples=MAX_EXAMPLES, **SETTINGS)
@given(case=debezium_cases())
def test_debezium_json_events_decode_exactly_or_are_refused(case):
    schema, handling, _, texts, expected, kinds = case
    decoder = Decoder("debezium-json", schema, ("id",), decimal_handling=handling, on_error="dead-letter")
    values = [t.encode() for t in texts]
    check_batch(decoder, values, expected, list(schema))
    decoded = decoder.decode_all(records(values))
    refused = set(decoded.rejected.column("offset").to_pylist())
    assert decoded.rows.column("_kind").to_pylist() == [k for i, k in enumerate(kinds) if i not in refused]


# ---- maxwell-json: the same JSON values, timestamps as text --------------------------------------
MAXWELL_TYPES = [pa.int8(), pa.int32(), pa.int64(), pa.float32(), pa.float64(), pa.decimal128(10, 2),
                 pa.decimal128(38, 0), pa.string(), pa.bool_(), pa.binary(), pa.date32(), pa.timestamp("ms"),
                 pa.timestamp("us"), pa.timestamp("us", "UTC"), pa.list_(pa.int32()),
                 pa.struct([("a", pa.int16()), ("b", pa.string())])]


JAVA_BOOLEANS = {"t": True, "true": True, "y": True, "yes": True, "1": True,
                 "f": False, "false": False, "n": False, "no": False, "0": False}


def expect_maxwell(t: pa.DataType, v: Any) -> Out:
    """Maxwell's values are JSON's, but a MySQL TIMESTAMP (WITH LOCAL TIME ZONE column) is UTC
    text without an offset, and dates and datetimes text cast by Arrow; a STRING column takes
    any value's text (`java_json_text`), a FLOAT or DOUBLE column -0.0 as 0.0. BOOLEAN and DECIMAL
    columns take a value's text as Paimon's CDC casts it: t/yes/1 and f/no/0 in any case (a
    number's text is its BigDecimal without trailing zeros: 1.0 is 1), a number rounded HALF_UP
    to the scale and refused beyond the precision then (Java's null)."""
    if pa.types.is_timestamp(t) and t.tz is not None:
        return expect_json(pa.timestamp(t.unit), v)  # the wall time of UTC is the instant
    if pa.types.is_string(t) and (isinstance(v, (Num, bool, Pairs, list))):
        return ok(java_json_text(v))
    if pa.types.is_floating(t) and isinstance(v, Num) and v not in NON_FINITE and D(v).is_zero():
        return ok(fcanon(0.0))  # Java's BigDecimal has no negative zero
    if pa.types.is_boolean(t) and isinstance(v, Num):
        if v in NON_FINITE:
            return NO
        with decimal.localcontext(EXACT):
            return ok(D(v) == 1) if D(v) in (0, 1) else NO
    if pa.types.is_boolean(t) and isinstance(v, str):
        return ok(JAVA_BOOLEANS[v.lower()]) if v.lower() in JAVA_BOOLEANS else NO
    if pa.types.is_decimal(t) and isinstance(v, str) and v not in NON_FINITE and DEC_TEXT_RE.fullmatch(v):
        with decimal.localcontext(EXACT):
            rounded = D(v).quantize(D(1).scaleb(-t.scale), rounding=decimal.ROUND_HALF_UP) \
                if D(v).adjusted() < 1000 else D("Infinity")
            fit = decimal_fit(rounded, t) if rounded.is_finite() else NO
        # the plain forms must be taken; others (1.5e1, text of more than 60 characters) may be refused
        plain = isinstance(v, Num) and re.fullmatch(r"-?[0-9]+(\.[0-9]*)?", v) and len(v) <= 60
        return fit if plain or fit.must == REJECT else either(fit.value)
    return expect_json(t, v)


def java_json_text(v: Any) -> str:
    """The text Paimon's CDC parsers store for a non-string JSON value in a STRING column:
    integers as written, other numbers as Java's BigDecimal.stripTrailingZeros().toString()
    (1.50 is 1.5, 100.0 is 1E+2, -0.0 is 0), NaN and Infinity as themselves, objects and arrays
    as compact JSON of such texts."""
    if isinstance(v, bool):
        return "true" if v else "false"
    if v is None:
        return "null"
    if isinstance(v, Pairs):
        return "{" + ",".join(json.dumps(k, ensure_ascii=False) + ":" + java_json_text(x) for k, x in v) + "}"
    if isinstance(v, list):
        return "[" + ",".join(java_json_text(x) for x in v) + "]"
    if not isinstance(v, Num):
        return json.dumps(v, ensure_ascii=False)
    if v in NON_FINITE or re.fullmatch(r"-?[0-9]+", v):
        return v if v in NON_FINITE else str(int(v))
    with decimal.localcontext(EXACT):
        return "0" if D(v).is_zero() else str(D(v).normalize())


@st.composite
def maxwell_cases(draw) -> tuple[pa.Schema, list[str], list[Out], list[str]]:
    types = draw(st.lists(st.sampled_from(MAXWELL_TYPES), min_size=1, max_size=4))
    schema = pa.schema([pa.field("id", pa.int64(), False)] + [pa.field(f"c{i}", t) for i, t in enumerate(types)])
    texts, expected, kinds = [], [], []
    for _ in range(draw(st.integers(1, 5))):
        kind = draw(st.sampled_from(["insert", "bootstrap-insert", "update", "delete"]))
        data = draw(object_text(list(schema)))
        texts.append(f'{{"database":"shop","table":"t","type":"{kind}","ts":1,"data":{data}}}')
        try:
            out = expect_object(loads(data), [(f.name, f.type) for f in schema], ("id",), expect_maxwell)
        except ValueError:
            out = NO
        expected.append(out)
        kinds.append({"insert": "+I", "bootstrap-insert": "+I", "update": "+U", "delete": "-D"}[kind])
    return schema, texts, expected, kinds


@settings(max_examples=max(2, MAX_EXAMPLES // 2), **SETTINGS)
@given(case=maxwell_cases())
def test_maxwell_json_records_decode_exactly_or_are_refused(case):
    schema, texts, expected, kinds = case
    decoder = Decoder("maxwell-json", schema, ("id",), on_error="dead-letter")
    values = [t.encode() for t in texts]
    check_batch(decoder, values, expected, list(schema))
    decoded = decoder.decode_all(records(values))
    refused = set(decoded.rejected.column("offset").to_pylist())
    assert decoded.rows.column("_kind").to_pylist() == [k for i, k in enumerate(kinds) if i not in refused]


# ---- the bugs found, as regression tests ----------------------------------------------------------
def _one(decoder: Decoder, value: bytes) -> tuple[list[dict], list[str]]:
    """(rows, errors) of one record under dead-letter."""
    decoded = replace(decoder, on_error="dead-letter").decode_all(records([value]))
    return decoded.rows.to_pylist(), decoded.rejected.column("error").to_pylist()


def test_raw_newline_inside_a_json_string_is_refused_not_a_space():
    """A raw newline in a JSON string is not JSON; _parse_lines joined records into one line by
    replacing newlines with spaces, so {"s":"a<LF>b"} was stored as "a b" (json and every JSON
    change-event format). A newline now becomes a tab: whitespace between tokens, still no JSON
    inside a string."""
    rows, errors = _one(Decoder("json", pa.schema([("s", pa.string())])), b'{"s":"a\nb"}')
    assert rows == [] and errors
    rows, errors = _one(Decoder("json", pa.schema([("s", pa.string())])), b'{"s":\r\n"a\\nb"}')
    assert rows == [{"s": "a\nb"}] and not errors
    dbz = Decoder("debezium-json", pa.schema([pa.field("id", pa.int64(), False), ("s", pa.string())]), ("id",))
    rows, errors = _one(dbz, b'{"op":"c","after":{"id":1,"s":"a\r\nb"}}')
    assert rows == [] and errors


def test_top_level_null_record_is_refused_not_a_row_of_nulls():
    """pyarrow's JSON reader takes a top-level `null` for a row of nulls (an append table stored
    it as one), and crashed the process (SIGSEGV, pyarrow 26) on one alone when the schema has a
    ROW column. Values that are not braced objects now never reach it."""
    schema = pa.schema([("a", pa.int32()), ("r", pa.struct([("f", pa.int32())]))])
    decoded = Decoder("json", schema, on_error="dead-letter").decode_all(records([b'{"a":1}', b"null", b" null "]))
    assert decoded.rows.to_pylist() == [{"a": 1, "r": None}]
    assert decoded.rejected.column("offset").to_pylist() == [1, 2]
    assert "not a JSON object" in decoded.rejected.column("error")[0].as_py()
    keyed = Decoder("json", pa.schema([pa.field("k", pa.int32(), False), ("r", schema.field("r").type)]), ("k",))
    assert _one(keyed, b"null")[0] == []
    dbz = Decoder("debezium-json", pa.schema([pa.field("id", pa.int64(), False), ("r", schema.field("r").type)]),
                  ("id",), on_error="dead-letter")
    assert dbz.decode_all(records([b'{"schema":{},"payload":null}', b"null"])).rejected.num_rows == 2


def test_float_beyond_its_range_is_refused_not_infinity():
    """pyarrow's JSON reader and Arrow's cast from text round a number beyond FLOAT's range to
    infinity (1e39 into FLOAT, "1e309" into DOUBLE from Canal's text), and one just beyond
    DOUBLE's (1.7976931348623159e308; it refuses 1e309). The Infinity literal stays infinity;
    rounding stays correct (1.0000000596046448 is the float above 1, not 1 as text -> double ->
    float would make it)."""
    f64 = Decoder("json", pa.schema([("d", pa.float64())]))
    assert _one(f64, b'{"d":1.7976931348623159e308}')[0] == []
    assert _one(f64, b'{"d":1.7976931348623157e308}')[0] == [{"d": 1.7976931348623157e308}]
    assert _one(f64, b'{"d":-Infinity}')[0] == [{"d": -math.inf}]
    f32 = Decoder("json", pa.schema([("f", pa.float32())]))
    assert _one(f32, b'{"f":1e39}')[0] == []
    assert _one(f32, b'{"f":1.7976931348623159e308}')[0] == []  # beyond DOUBLE's too: the FLOAT check missed it
    assert _one(f32, b'{"f":3.4028235677973366e38}')[0] == [{"f": FLT_MAX}]
    assert _one(f32, b'{"f":Infinity}')[0] == [{"f": math.inf}]
    assert _one(f32, b'{"f":1.0000000596046448}')[0] == [{"f": 1.0000001192092896}]
    nested = Decoder("json", pa.schema([("l", pa.list_(pa.struct([("f", pa.float32())])))]))
    assert "l[].f" in _one(nested, b'{"l":[{"f":1},{"f":-1e39}]}')[1][0]
    keyed = pa.schema([pa.field("id", pa.int64(), False), ("f", pa.float32()), ("d", pa.float64())])
    assert _one(Decoder("debezium-json", keyed, ("id",)), b'{"op":"c","after":{"id":1,"f":1e39}}')[0] == []
    canal = Decoder("canal-json", keyed, ("id",))
    for column, text in (("f", "1e39"), ("d", "1e309")):
        message = {"type": "INSERT", "database": "d", "table": "t", "isDdl": False, "data": [{"id": "1", column: text}]}
        assert _one(canal, json.dumps(message).encode())[0] == []


def test_json_date_is_iso_text():
    """A DATE field was read only from a number of days (pyarrow's JSON reader), so every record
    with "2024-01-01" was refused with "changed from number to string"; Spark's from_json reads
    ISO text. Now text, as a TIMESTAMP's wall time is; a number is refused."""
    d = Decoder("json", pa.schema([("d", pa.date32()), ("l", pa.list_(pa.date32()))]))
    assert _one(d, b'{"d":"2024-02-29","l":["0001-01-01"]}')[0] == \
        [{"d": dt.date(2024, 2, 29), "l": [dt.date(1, 1, 1)]}]
    assert _one(d, b'{"d":19000}')[0] == []
    for bad in (b'{"d":"2023-02-29"}', b'{"d":"2024-01-01T00:00"}', b'{"l":["2024-1-1"]}'):
        rows, errors = _one(d, bad)
        assert rows == [] and "DATE" in errors[0], bad


def test_change_events_nested_wall_time_with_offset_is_refused():
    """A TIMESTAMP inside a ROW (or ARRAY) of a change-event format's plain JSON was read by
    pyarrow's JSON reader, which takes "00:00+02:00" as 22:00 of the day before: read as text
    now and cast, as plain JSON's wall times are."""
    row = pa.struct([("t", pa.timestamp("us"))])
    schema = pa.schema([pa.field("id", pa.int64(), False), ("r", row), ("l", pa.list_(row))])
    events = {"debezium-json": {"op": "c", "after": {"id": 1, "r": {"t": "2024-01-01T00:00:00+02:00"}}},
              "maxwell-json": {"type": "insert", "database": "d", "table": "t",
                               "data": {"id": 1, "l": [{"t": "2024-01-01T00:00:00+02:00"}]}},
              "ogg-json": {"op_type": "I", "table": "t", "after": {"id": 1, "r": {"t": "2024-01-01T00:00:00Z"}}}}
    for fmt, event in events.items():
        assert _one(Decoder(fmt, schema, ("id",)), json.dumps(event).encode())[0] == [], fmt
    wall = {"op": "c", "after": {"id": 1, "r": {"t": "2024-01-01 00:00:00.5"}}}
    assert _one(Decoder("debezium-json", schema, ("id",)), json.dumps(wall).encode())[0][0]["r"] == \
        {"t": dt.datetime(2024, 1, 1, 0, 0, 0, 500000)}


def test_debezium_double_decimal_is_the_number_text():
    """decimal.handling.mode=double: the JSON number was parsed as a double, cast to the column's
    scale and kept when that decimal's double was the same: 1e-400 (a double 0) became 0.00 and
    0.1000000000000000001 became 0.10. The JSON reader now reads the number's text as the decimal
    it writes."""
    schema = pa.schema([pa.field("id", pa.int64(), False), ("a", pa.decimal128(10, 2))])
    d = Decoder("debezium-json", schema, ("id",), decimal_handling="double")
    for text in ("1e-400", "0.1000000000000000001", "1e40", "0.125"):
        assert _one(d, f'{{"op":"c","after":{{"id":1,"a":{text}}}}}'.encode())[0] == [], text
    assert _one(d, b'{"op":"c","after":{"id":1,"a":12.3}}')[0][0]["a"] == D("12.30")
    assert _one(d, b'{"op":"c","after":{"id":1,"a":1.5e1}}')[0][0]["a"] == D("15.00")


def test_debezium_decimal_of_no_bytes_is_refused():
    """Kafka Connect's Decimal of no bytes ("" in base64) read as 0; Connect itself refuses it
    (BigInteger of no bytes)."""
    schema = pa.schema([pa.field("id", pa.int64(), False), ("a", pa.decimal128(10, 2))])
    rows, errors = _one(Decoder("debezium-json", schema, ("id",)), b'{"op":"c","after":{"id":1,"a":""}}')
    assert rows == [] and "no bytes" in errors[0]


def test_canal_integer_text_is_decimal():
    """Arrow's cast from text takes hex ("0x10" became 16), where MySQL reads such text as 0:
    Canal's integers are decimal text, anything else is refused."""
    schema = pa.schema([pa.field("id", pa.int64(), False), ("n", pa.int32())])
    message = {"type": "INSERT", "database": "d", "table": "t", "isDdl": False, "data": [{"id": "1", "n": "0x10"}]}
    assert _one(Decoder("canal-json", schema, ("id",)), json.dumps(message).encode())[0] == []
    message["data"] = [{"id": "1", "n": "-16"}]
    assert _one(Decoder("canal-json", schema, ("id",)), json.dumps(message).encode())[0][0]["n"] == -16


def test_timestamp_text_of_any_year_decodes():
    """Debezium's ZonedTimestamp, Maxwell's UTC text and Canal's server-zone text were parsed as
    nanoseconds, whose range (1677-2262) refused valid instants such as 9999-12-31T23:59:59Z;
    parsed in microseconds now (nanoseconds only for a TIMESTAMP(9) column)."""
    schema = pa.schema([pa.field("id", pa.int64(), False), ("t", pa.timestamp("us", "UTC"))])
    end = dt.datetime(9999, 12, 31, 23, 59, 59, tzinfo=dt.timezone.utc)
    zoned = {"op": "c", "after": {"id": 1, "t": "9999-12-31T23:59:59Z"}}
    assert _one(Decoder("debezium-json", schema, ("id",)), json.dumps(zoned).encode())[0][0]["t"] == end
    maxwell = {"type": "insert", "database": "d", "table": "t", "data": {"id": 1, "t": "1600-01-01 00:00:00"}}
    assert _one(Decoder("maxwell-json", schema, ("id",)), json.dumps(maxwell).encode())[0][0]["t"] == \
        dt.datetime(1600, 1, 1, tzinfo=dt.timezone.utc)
    micros = {"op": "c", "after": {"id": 1, "t": "2024-01-01T00:00:00.1234567Z"}}
    assert _one(Decoder("debezium-json", schema, ("id",)), json.dumps(micros).encode())[0] == []


def test_debezium_envelope_floats_are_connects_float_and_double():
    """Kafka Connect's JSON converter names FLOAT32/FLOAT64 "float" and "double" in the schema
    envelope; only "float32"/"float64" were known, so a new column of them (and a new table from
    such an envelope) was refused as a type not decoded here."""
    from paimon_streaming.sinks import debezium
    envelope = {"type": "struct", "fields": [{"type": "struct", "optional": True, "field": "after", "fields": [
        {"type": "int64", "optional": False, "field": "id"}, {"type": "float", "optional": True, "field": "f"},
        {"type": "double", "optional": True, "field": "d"}]}]}
    # every column nullable, as Java's CDC makes them (the primary key's become NOT NULL at create)
    assert debezium.table_schema_of(envelope) == pa.schema([pa.field("id", pa.int64()), ("f", pa.float32()),
                                                            ("d", pa.float64())])
    value = json.dumps({"schema": envelope, "payload": {"op": "c", "after": {"id": 1, "f": 1.5, "d": 0.1}}}).encode()
    decoder = Decoder("debezium-json", pa.schema([pa.field("id", pa.int64(), False)]), ("id",))
    decoded = decoder.decode_all(records([value]))
    assert decoded.new_fields == pa.schema([("f", pa.float32()), ("d", pa.float64())])


def decoded_again(tmp_path, table, decoded, batch: pa.RecordBatch) -> list[dict]:
    """The rows of `batch` once the table evolved by `decoded`'s new fields (as ingest does):
    decoded again, with no new fields left."""
    from paimon_streaming.sinks.ingest import IngestConfig, evolve_table
    evolve_table(IngestConfig(bootstrap_servers="unused", warehouse=str(tmp_path), table="db.t"), table,
                 decoded.new_fields, print)
    table.refresh()
    again = Decoder("json", table.arrow_schema(), ("id",)).decode_all(batch)
    assert len(again.new_fields) == 0
    return again.rows.drop_columns(["_kind"]).to_pylist()


def test_new_fields_inside_a_row_column_evolve_the_table(tmp_path):
    """A JSON field the table's ROW column (or a ROW inside it) lacks was dropped silently, where
    a new top-level field evolves the table: it is reported as a wider column now, the table
    takes it (`evolve_table`, union by name) and the batch decodes again with its values; with
    schema evolution off it is refused, naming the column. Fields seen only as nulls tell no type."""
    import paimon_streaming as ps
    from paimon_streaming.errors import SchemaMismatchError
    from paimon_streaming.sinks.ingest import IngestConfig, evolve_table
    schema = pa.schema([pa.field("id", pa.int64(), False), ("addr", pa.struct([
        ("city", pa.string()), ("at", pa.timestamp("us")), ("geo", pa.struct([("lat", pa.float64())]))]))])
    table = ps.Catalog(str(tmp_path)).create_table("db.t", schema, primary_keys=["id"], options={"bucket": "1"})
    batch = records([json.dumps({"id": 1, "addr": {"city": "x", "zip": 5, "at": "2024-01-01 10:00:00", "none": None,
                                                   "geo": {"lat": 1.5, "lon": 2.5}}}).encode(),
                     json.dumps({"id": 2, "addr": None}).encode()])
    decoded = Decoder("json", table.arrow_schema(), ("id",)).decode_all(batch)
    assert decoded.new_fields.names == ["addr"] and decoded.new_fields.field("addr").type == pa.struct([
        ("city", pa.string()), ("at", pa.timestamp("us")),
        ("geo", pa.struct([("lat", pa.float64()), ("lon", pa.float64())])), ("zip", pa.int64())])
    with pytest.raises(SchemaMismatchError, match=r"new fields inside\) \['addr'\]"):
        evolve_table(IngestConfig(bootstrap_servers="unused", warehouse=str(tmp_path), table="db.t",
                                  evolve_schema=False), table, decoded.new_fields, print)
    assert decoded_again(tmp_path, table, decoded, batch) == [
        {"id": 1, "addr": {"city": "x", "at": dt.datetime(2024, 1, 1, 10), "geo": {"lat": 1.5, "lon": 2.5}, "zip": 5}},
        {"id": 2, "addr": None}]


def test_nulls_in_not_null_columns_are_refused_by_record(tmp_path):
    """A JSON record leaving out a NOT NULL column that has a default value was refused ("a
    required field was absent"), where the default fills it at the write. A change event leaving
    a NOT NULL column (without a default) null passed the decoder and failed the whole batch at
    the write, with no record named and nothing set aside: it is a poison record now, like a
    null key. Deletes keep their nulls (set aside, a delete would leave its row in the table),
    which the writer fills (retraction_values.py)."""
    import paimon_streaming as ps
    from paimon_streaming.sinks.ingest import IngestConfig, make_decoder
    schema = pa.schema([pa.field("id", pa.int64(), False), pa.field("qty", pa.int64(), False),
                        pa.field("unit", pa.string(), False), ("note", pa.string())])
    table = ps.Catalog(str(tmp_path)).create_table("db.t", schema, primary_keys=["id"], options={"bucket": "1"})
    with table.update_schema() as update:
        update.set_default("unit", "pcs")
    cfg = IngestConfig(bootstrap_servers="unused", warehouse=str(tmp_path), table="db.t", on_error="dead-letter")
    decoder = make_decoder(cfg, table)
    assert decoder.defaulted == ("unit",)
    decoded = decoder.decode_all(records([b'{"id": 1, "qty": null}', b'{"id": 2, "qty": 3}', b'{"id": 3, "unit": null}']))
    assert decoded.rows.column("id").to_pylist() == [2]
    assert decoded.rejected.column("offset").to_pylist() == [0, 2]
    assert all("a required field was" in e for e in decoded.rejected.column("error").to_pylist())  # pyarrow's words
    table.write_arrow(decoded.rows, row_kind_column="_kind")
    assert table.to_arrow().to_pylist() == [{"id": 2, "qty": 3, "unit": "pcs", "note": None}]
    events = [{"op": "c", "after": {"id": 5, "qty": None, "unit": "kg"}}, {"op": "d", "before": {"id": 6}},
              {"op": "c", "after": {"id": 7, "qty": 1, "unit": None}}, {"op": "c", "after": {"id": None, "qty": 1}}]
    cdc = Decoder("debezium-json", table.arrow_schema(), ("id",), on_error="dead-letter", defaulted=("unit",))
    decoded = cdc.decode_all(records([json.dumps(e).encode() for e in events]))
    assert decoded.rejected.column("offset").to_pylist() == [0, 3]     # the delete stays
    errors = decoded.rejected.column("error").to_pylist()
    assert errors[0] == "null in NOT NULL column 'qty'" and errors[1].endswith("null primary key ['id']")
    assert sorted(decoded.rows.column("id").to_pylist()) == [6, 7]
    table.write_arrow(pa.table({"id": [6], "qty": [1], "unit": ["kg"], "note": [None]}))
    table.write_arrow(decoded.rows, row_kind_column="_kind")  # the delete of 6 names its key alone
    assert sorted(table.to_arrow().column("id").to_pylist()) == [2, 7]
    with pytest.raises(DecodeError, match=r"offset=0 has a null in NOT NULL column 'qty'"):
        Decoder("debezium-json", table.arrow_schema(), ("id",), defaulted=("unit",)).decode_all(
            records([json.dumps(e).encode() for e in events[:3]]))


def test_map_columns_are_filled_from_json_objects(tmp_path):
    """pyarrow's JSON reader has no map type: every record of a table with a MAP column was
    refused ("JSON conversion to map<string, int32> is not supported"), in every JSON format. An
    object now fills a MAP (at any depth) with its members in order, a member's null as an entry
    holding null, text keys cast to the key type; numbers keep their digits through the rewrite."""
    import paimon_streaming as ps
    schema = pa.schema([pa.field("id", pa.int64(), False), ("tags", pa.map_(pa.string(), pa.string())),
                        ("n", pa.map_(pa.int32(), pa.decimal128(38, 20))),
                        ("r", pa.struct([("at", pa.map_(pa.string(), pa.timestamp("us"))), ("x", pa.float32())])),
                        ("l", pa.list_(pa.map_(pa.string(), pa.int64())))])
    table = ps.Catalog(str(tmp_path)).create_table("db.t", schema, primary_keys=["id"], options={"bucket": "1"})
    values = [b'{"id":1,"tags":{"b":"2","a":null},"n":{"7":123456789012345678.12345678901234567891},'
              b'"r":{"at":{"t":"2024-01-01T10:00:00"},"x":1.5},"l":[{"k":1},null,{}]}',
              b'{"id":2,"tags":{},"n":null}', b'{"id":3,"tags":["a"]}', b'{"id":4,"n":{"x":1}}',
              b'{"id":5,"tags":{"a":"1","a":"2"}}', b'{"id":6,"r":{"at":{"t":"2024-01-01T10:00:00+02:00"}}}',
              b'{"id":7,"n":{"7":1,"07":2}}']
    decoded = Decoder("json", schema, ("id",), on_error="dead-letter").decode_all(records(values))
    errors = dict(zip(decoded.rejected.column("offset").to_pylist(), decoded.rejected.column("error").to_pylist()))
    assert sorted(errors) == [2, 3, 4, 5, 6]
    assert "field 'n' has the key 7 twice" in errors[6]  # "7" and "07" of an INT key (it was stored twice)
    assert "field 'tags' is a MAP, written in JSON as an object" in errors[2]
    assert "field 'n' has the key 'x', which is not a int32" in errors[3]
    assert "the key 'a' is given twice" in errors[4]
    assert "column 'r' is a TIMESTAMP" in errors[5]
    table.write_arrow(decoded.rows, row_kind_column="_kind")
    assert table.to_arrow().sort_by("id").to_pylist() == [
        {"id": 1, "tags": [("b", "2"), ("a", None)], "n": [(7, D("123456789012345678.12345678901234567891"))],
         "r": {"at": [("t", dt.datetime(2024, 1, 1, 10))], "x": 1.5}, "l": [[("k", 1)], None, []]},
        {"id": 2, "tags": [], "n": None, "r": None, "l": None}]
    dbz = pa.schema([pa.field("id", pa.int64(), False), ("tags", pa.map_(pa.string(), pa.string()))])
    envelope = {"schema": {"type": "struct", "fields": [
        {"type": "struct", "optional": True, "field": "after", "fields": [
            {"type": "int64", "optional": False, "field": "id"},
            {"type": "map", "keys": {"type": "string", "optional": False}, "values": {"type": "string", "optional": True},
             "optional": True, "field": "tags"}]},
        {"type": "string", "optional": False, "field": "op"}]},
        "payload": {"op": "c", "after": {"id": 1, "tags": {"hstore": "v", "k": None}}}}
    for value in (json.dumps(envelope), json.dumps(envelope["payload"])):  # Postgres hstore, hstore.handling.mode=map
        rows = Decoder("debezium-json", dbz, ("id",)).decode(records([value.encode()]))
        assert rows.to_pylist() == [{"id": 1, "tags": [("hstore", "v"), ("k", None)], "_kind": "+I"}]


def test_a_json_value_its_column_cannot_hold_is_named_by_the_column():
    """pyarrow's message named only the value ("couldn't parse:1.5"): a user could not tell
    which field of a wide record drifted."""
    schema = pa.schema([pa.field("id", pa.int64(), False), ("amount", pa.int64()), ("tags", pa.map_(pa.string(), pa.int32()))])
    rows, errors = _one(Decoder("json", schema, ("id",)), b'{"id": 1, "amount": 10.5}')
    assert rows == [] and "column 'amount' (BIGINT): Failed to convert JSON to int64, couldn't parse:10.5" in errors[0]
    rows, errors = _one(Decoder("json", schema, ("id",)), b'{"id": 1, "tags": {"a": 1.5}}')
    assert rows == [] and "column 'tags' (MAP<STRING NOT NULL, INT>)" in errors[0]
    with pytest.raises(DecodeError, match=r"offset=0 is not valid JSON .* column 'amount' \(BIGINT\)"):
        Decoder("json", schema, ("id",)).decode_all(records([b'{"id": 1, "amount": "x"}']))


def test_new_fields_of_rows_inside_arrays_and_maps_evolve_the_table(tmp_path):
    """A JSON field that ROWs inside an ARRAY or a MAP lack was dropped (as Spark's from_json
    drops it), while the same field of a ROW column evolved the table: it now evolves it too
    (`items.element.qty`, as Java's schema changes name it), and the batch is decoded again."""
    import paimon_streaming as ps
    schema = pa.schema([pa.field("id", pa.int64(), False), ("items", pa.list_(pa.struct([("sku", pa.string())]))),
                        ("m", pa.map_(pa.string(), pa.struct([("a", pa.int32())])))])
    table = ps.Catalog(str(tmp_path)).create_table("db.t", schema, primary_keys=["id"], options={"bucket": "1"})
    batch = records([b'{"id":1,"items":[{"sku":"x","qty":2}],"m":{"k":{"a":1,"b":"z"}}}', b'{"id":2,"items":[{"sku":"y"}]}'])
    decoded = Decoder("json", table.arrow_schema(), ("id",)).decode_all(batch)
    assert [f.name for f in decoded.new_fields] == ["items", "m"]
    assert decoded_again(tmp_path, table, decoded, batch) == [
        {"id": 1, "items": [{"sku": "x", "qty": 2}], "m": [("k", {"a": 1, "b": "z"})]},
        {"id": 2, "items": [{"sku": "y", "qty": None}], "m": None}]


def test_kafka_connect_decimal_bytes_sign_extended_or_at_the_int128_edge():
    """Big-endian two's-complement bytes with a redundant sign byte (17 bytes for a 38-digit
    value) were refused as "wider than 38 digits"; -2**127 (0x80 and 15 zero bytes) passed into
    a DECIMAL(5, 5) column as a 39-digit value, since Arrow's precision check misses it (found
    by the property test)."""
    import base64
    import decimal
    import numpy as np
    n = 10 ** 38 - 1
    wide = Decoder("debezium-json", pa.schema([pa.field("id", pa.int64(), False), ("c", pa.decimal128(38, 0))]), ("id",))

    def event(raw: bytes) -> bytes:
        return json.dumps({"op": "c", "after": {"id": 1, "c": base64.b64encode(raw).decode()}}).encode()
    for raw, value in ((b"\x00" + n.to_bytes(16, "big", signed=True), n), ((-n).to_bytes(18, "big", signed=True), -n)):
        assert _one(wide, event(raw))[0][0]["c"] == decimal.Decimal(value)
    for raw in (b"\x01" + n.to_bytes(16, "big", signed=True), b"\xff" + (5).to_bytes(16, "big", signed=True),
                (-(2 ** 127)).to_bytes(16, "big", signed=True)):
        assert "wider than 38 digits" in _one(wide, event(raw))[1][0]
    edge = pa.Array.from_buffers(pa.decimal128(5, 2), 1, [None, pa.py_buffer(
        np.array([0, np.iinfo(np.int64).min], np.int64).tobytes())])
    from paimon_streaming.write import check_decimals_fit
    with pytest.raises(ValueError, match=r"-2\*\*127"):
        check_decimals_fit("x", edge)


def test_csv_text_stays_text_and_nan_is_nan():
    """pyarrow's default null list made CSV text such as NA, N/A, NULL or null, and a quoted "",
    nulls of a STRING column, and nan a null of a DOUBLE column, silently. As Spark's CSV reader,
    only an empty unquoted field is null; nan/NaN in a FLOAT or DOUBLE column is NaN; text that
    no number writes is a poison record, never a null."""
    schema = pa.schema([pa.field("id", pa.int64(), False), ("country", pa.string()), ("name", pa.string()),
                        ("x", pa.float64()), ("n", pa.int32())])
    decoder = Decoder("csv", schema, ("id",), on_error="dead-letter")
    decoded = decoder.decode_all(records([b'1,NA,Null,nan,1', b'2,N/A,"",NaN,2', b'3,NULL,null,1.5,3', b'4,,,,',
                                          b'5,#N/A,n/a,-nan,', b'6,a,b,NA,6']))
    rows = decoded.rows.to_pylist()
    assert [(r["id"], r["country"], r["name"], r["n"]) for r in rows] == [
        (1, "NA", "Null", 1), (2, "N/A", "", 2), (3, "NULL", "null", 3), (4, None, None, None),
        (5, "#N/A", "n/a", None)]
    assert [r["x"] for r in rows][2:4] == [1.5, None] and all(math.isnan(rows[i]["x"]) for i in (0, 1, 4))
    assert decoded.rejected.column("offset").to_pylist() == [5]
    assert "CSV" in decoded.rejected.column("error")[0].as_py()


def test_a_row_field_named_in_another_case_fills_an_int_field():
    """{"v": {"A": 1}} into `v ROW<a INT>` was refused: the alias read as int64 (JSON's
    inference) where the field is INT. Integers that fit are taken; those that do not, and other
    inferred types (a double for a FLOAT, a text for BYTES), stay refused naming the field."""
    schema = pa.schema([pa.field("id", pa.int64(), False), ("v", pa.struct([("a", pa.int32())]))])
    decoded = Decoder("json", schema, ("id",), on_error="dead-letter").decode_all(records([
        b'{"id": 1, "v": {"A": 7}}', b'{"id": 2, "v": {"A": 3000000000}}']))
    assert [(r["id"], r["v"]) for r in decoded.rows.to_pylist()] == [(1, {"a": 7})]
    assert "field 'v.A' fills 'v.a'" in decoded.rejected.column("error")[0].as_py()


def test_json_field_differing_from_a_column_only_in_case_fills_it():
    """{"name": ...} into a table with column `Name` decoded Name=null and reported `name` as a
    new field, so ingest added `name` beside `Name` (Spark then selects neither:
    AMBIGUOUS_REFERENCE). As Spark resolves names by default, a field matching no column exactly
    fills the column it matches ignoring case; the exact name wins in a record holding both."""
    from paimon_streaming.types import VARIANT_ARROW
    schema = pa.schema([pa.field("id", pa.int64(), False), ("Name", pa.string()), ("Amount", pa.int64()),
                        ("Doc", VARIANT_ARROW)])
    decoded = Decoder("json", schema, ("id",), on_error="dead-letter").decode_all(records([
        b'{"id": 1, "name": "a", "AMOUNT": 3, "doc": 1}', b'{"id": 2, "Name": "b", "name": "x"}',
        b'{"id": 3, "nAmE": "c", "amount": 4.5}', b'{"id": 4, "Name": "d", "extra": true}']))
    assert [(r["id"], r["Name"], r["Amount"], r["Doc"] is not None) for r in decoded.rows.to_pylist()] == [
        (1, "a", 3, True), (2, "b", None, False), (4, "d", None, False)]
    assert decoded.new_fields.names == ["extra"]
    assert decoded.rejected.column("offset").to_pylist() == [2]
    assert "column 'amount' (BIGINT)" in decoded.rejected.column("error")[0].as_py()
    twins = pa.schema([pa.field("id", pa.int64(), False), ("Name", pa.string()), ("NAME", pa.string())])
    with pytest.raises(DecodeError, match=r"JSON field 'name' matches the table's columns \['Name', 'NAME'\] "
                                          "ignoring case"):
        Decoder("json", twins, ("id",), on_error="skip").decode_all(records([b'{"id": 1, "name": "a"}']))


def test_invalid_json_is_named_as_such_not_as_no_object():
    """`{broken` was reported as "not a JSON object"; it is no JSON at all."""
    schema = pa.schema([pa.field("id", pa.int64(), False)])
    rows, errors = _one(Decoder("json", schema, ("id",)), b"{broken")
    assert rows == [] and errors[0].startswith("not valid JSON: Expecting property name"), errors
    assert _one(Decoder("json", schema, ("id",)), b"[1]")[1][0].endswith("not a JSON object")
    with pytest.raises(DecodeError, match=r"offset=0 is not valid JSON: Expecting value"):
        Decoder("json", schema, ("id",)).decode_all(records([b'{"id": oops}']))


def test_a_row_holding_a_map_given_no_object_is_refused_by_record():
    """A ROW column holding a MAP written in JSON as something other than an object (a number,
    a list): the record is refused naming the column, the other records decode."""
    schema = pa.schema([pa.field("id", pa.int64(), False),
                        ("r", pa.struct([("m", pa.map_(pa.string(), pa.int64())), ("x", pa.int32())]))])
    values = [b'{"id":1,"r":{"m":{"a":1},"x":2}}', b'{"id":2,"r":5}', b'{"id":3,"r":[1]}', b'{"id":4,"r":null}']
    decoded = Decoder("json", schema, ("id",), on_error="dead-letter").decode_all(records(values))
    assert decoded.rows.column("id").to_pylist() == [1, 4]
    assert decoded.rows.column("r").to_pylist() == [{"m": [("a", 1)], "x": 2}, None]
    errors = dict(zip(decoded.rejected.column("offset").to_pylist(), decoded.rejected.column("error").to_pylist()))
    assert sorted(errors) == [1, 2] and all("'r'" in e for e in errors.values()), errors


def test_a_json_number_beyond_double_is_refused_naming_its_field():
    """pyarrow refuses a whole JSON record holding a number beyond DOUBLE's range (1e400): the
    record is set aside naming that field, never another column (it named the first, 'id'); the
    other records, finite numbers next to it included, decode."""
    schema = pa.schema([pa.field("id", pa.int64(), False), ("x", pa.float64()), ("y", pa.float64())])
    values = [b'{"id":1,"x":1.5}', b'{"id":2,"x":0.5,"y":1e400}', b'{"id":3,"x":-2}']
    decoded = Decoder("json", schema, ("id",), on_error="skip").decode_all(records(values))
    assert decoded.rows.column("x").to_pylist() == [1.5, -2.0]
    [error] = decoded.rejected.column("error").to_pylist()
    assert "field 'y' holds a number beyond the range of DOUBLE" in error and "'id'" not in error, error


def test_negative_zero_is_stored_as_java_stores_it_in_maxwell_and_goldengate():
    """Paimon's Maxwell and GoldenGate parsers read numbers as BigDecimal, which has no negative
    zero: -0.0 and -0 become 0.0 in a DOUBLE column. The vectorized path kept the sign and the
    per-record one (taken when another field needs its text, 24.0 into a BIGINT) dropped it, so
    the same value was stored two ways."""
    schema = pa.schema([pa.field("id", pa.int64(), False), ("d", pa.float64()), ("f", pa.float32())])
    maxwell = Decoder("maxwell-json", schema, ("id",))
    ogg = Decoder("ogg-json", schema, ("id",))
    for data in ['{"id":1,"d":-0.0,"f":-0}', '{"id":1.0,"d":-0.0,"f":-0}']:
        for decoder, record in [(maxwell, f'{{"database":"s","table":"t","type":"insert","ts":1,"data":{data}}}'),
                                (ogg, f'{{"table":"s.t","op_type":"I","after":{data}}}')]:
            rows, errors = _one(decoder, record.encode())
            assert not errors and len(rows) == 1, (record, errors)
            assert [math.copysign(1, rows[0][c]) for c in "df"] == [1.0, 1.0], record


@pytest.mark.parametrize("fmt", ["json", "maxwell-json"])
@pytest.mark.parametrize("number", ["-7e36", "99999999e31", '"-7e36"', "1e-41", "-83920793622.98e0",
                                    "0.80636083778353374068124158683449786907366"])
def test_json_numbers_beyond_a_decimal_are_never_another_number(fmt, number):
    """pyarrow's JSON reader converts a number into a DECIMAL field as Arrow's cast converts text:
    rescaled with a multiply that wraps, so {"k0": -7e36} into DECIMAL(38, 2) was stored as
    -194352661581230730732507851364635770.88, 1e-41 as 0.00 (json_decimals.py). Now exactly or
    refused; maxwell-json rounds HALF_UP as Paimon's CDC casts text (1e-41 is 0.00 there)."""
    schema = pa.schema([pa.field("id", pa.int64(), False), ("k0", pa.decimal128(38, 2)),
                        ("r", pa.struct([("d", pa.decimal128(38, 38))])), ("l", pa.list_(pa.decimal128(10, 2))),
                        ("m", pa.map_(pa.string(), pa.decimal128(10, 2)))])
    body = b'{"id":1,"k0":%s,"r":{"d":0.5},"l":[1.5e1],"m":{"a":2.50}}' % number.encode()
    if fmt != "json":
        body = b'{"database":"shop","table":"t","type":"insert","ts":1,"data":%s}' % body
    rows, errors = _one(Decoder(fmt, schema, ("id",)), body)
    rounded = fmt != "json" and number in ("1e-41", "0.80636083778353374068124158683449786907366")
    if rounded:
        assert rows[0]["k0"] == D(number).quantize(D("0.01"), decimal.ROUND_HALF_UP)
    elif number == "-83920793622.98e0":
        assert rows[0]["k0"] == D("-83920793622.98")
    else:
        assert rows == [] and "DECIMAL(38, 2)" in errors[0]
    if rows:
        assert (rows[0]["r"], rows[0]["l"], rows[0]["m"]) == ({"d": D("0.5")}, [D("15.00")], [("a", D("2.50"))])


def test_json_decimals_nested_exactly_or_refused():
    """The same inside ROW, ARRAY and MAP fields, and a value with zeros beyond the precision
    (6.000000000000000 into DECIMAL(2, 1)), which the reader refused, is taken."""
    schema = pa.schema([pa.field("id", pa.int64(), False), ("k", pa.decimal128(2, 1)),
                        ("r", pa.struct([("d", pa.decimal128(38, 2))])), ("l", pa.list_(pa.decimal128(38, 2))),
                        ("m", pa.map_(pa.string(), pa.decimal128(38, 2)))])
    decoder = Decoder("json", schema, ("id",))
    rows, errors = _one(decoder, b'{"id":1,"k":6.000000000000000,"r":{"d":1e2},"l":[1E+1],"m":{"a":"25e-1"}}')
    assert rows[0]["k"] == D("6.0") and rows[0]["r"] == {"d": D("100.00")} and rows[0]["l"] == [D("10.00")] \
        and rows[0]["m"] == [("a", D("2.50"))]
    for body in [b'{"id":1,"r":{"d":-7e36}}', b'{"id":1,"l":[-7e36]}', b'{"id":1,"m":{"a":-7e36}}',
                 b'{"id":1,"m":{"a":1e-41}}']:
        rows, errors = _one(decoder, body)
        assert rows == [] and errors, body


def test_csv_decimals_map_keys_and_tombstone_keys_are_exact_or_refused():
    """CSV DECIMAL fields, JSON MAP keys of a DECIMAL key type and string tombstone keys of a
    DECIMAL primary key went through Arrow's text conversion, which wraps: CSV '-7e36' into
    DECIMAL(38, 2) was stored as -194352661581230730732507851364635770.88, a key '1e-41' as 0.00."""
    schema = pa.schema([pa.field("id", pa.int64(), False), ("d", pa.decimal128(38, 2))])
    csv = Decoder("csv", schema, ("id",))
    for body in [b"1,-7e36", b"1,1e-41", b"1,0.80636083778353374068124158683449786907366"]:
        rows, errors = _one(csv, body)
        assert rows == [] and "DECIMAL(38, 2)" in errors[0], body
    assert _one(csv, b"1,-83920793622.98e0")[0][0]["d"] == D("-83920793622.98")
    keyed = Decoder("json", pa.schema([pa.field("id", pa.int64(), False),
                                       ("m", pa.map_(pa.decimal128(10, 2), pa.int32()))]), ("id",))
    for body in [b'{"id":1,"m":{"-7e36":1}}', b'{"id":1,"m":{"1e-41":1}}']:
        rows, errors = _one(keyed, body)
        assert rows == [] and errors, body
    assert _one(keyed, b'{"id":1,"m":{"25e-1":1}}')[0][0]["m"] == [(D("2.50"), 1)]
    tombstones = Decoder("json", pa.schema([pa.field("k", pa.decimal128(38, 2), False), ("v", pa.string())]), ("k",),
                         key_format="string")
    assert tombstones.decode_all(records([None], [b"25e-1"])).rows.column("k").to_pylist() == [D("2.50")]
    with pytest.raises(DecodeError, match="DECIMAL|decimal"):
        tombstones.decode_all(records([None], [b"-7e36"]))
