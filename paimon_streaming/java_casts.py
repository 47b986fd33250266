"""Java's explicit casts, for files read after a type change that is not a lossless widening.

Apache Paimon's schema changes take any cast Java's `CastExecutors` can do (unless the table
sets `disable-explicit-type-casting`): BIGINT -> INT, DOUBLE -> DECIMAL(5, 1), STRING ->
VARCHAR(2), INT -> STRING, ... Files written before keep the old type and every reader casts
their values on read. `java_cast` casts one Arrow array the way Java 1.4.2's cast rules
(`org.apache.paimon.casting`) cast each value, vectorized:

- integers to a narrower integer wrap around (two's complement, Java's `Number.byteValue`...);
  FLOAT/DOUBLE to an integer: NaN is 0, beyond INT (BIGINT) saturates, then wraps to a
  TINYINT/SMALLINT; DECIMAL to an integer: the fraction cut toward zero, then wrapped;
- to DECIMAL(p, s): rounded half away from zero (HALF_UP) to s digits, null when it then has
  more than p digits; a FLOAT/DOUBLE by its shortest decimal text (`Double.toString`: 1.25 is
  1.3, 0.15 is 0.2);
- to CHAR(n)/VARCHAR(n): cut to n characters, a CHAR padded with spaces to n; integers,
  BOOLEAN (`true`/`false`) and DECIMAL (plain digits, all s of them) as Java prints them;
- STRING to BOOLEAN (t/true/y/yes/1, f/false/n/no/0, any case) and to an integer (sign, digits,
  an optional fraction that is cut): anything else fails Java's read, and ours;
- BINARY/VARBINARY to BINARY(n) (cut or padded with zero bytes) and VARBINARY(n) (cut); a
  STRING's UTF-8 bytes likewise; bytes to STRING as UTF-8 text (not cut);
- TIMESTAMP to a lower precision as Java's `DateTimeUtils.truncate` (including its quirks: to
  precision 0-2 the milliseconds are cut toward zero, and a fraction whose digits without
  leading zeros fit the precision is kept whole); TIMESTAMP to DATE (milliseconds / a day, cut
  toward zero), BIGINT/INT (seconds, cut toward zero; also from a TIMESTAMP WITH LOCAL TIME
  ZONE) and back; DATE and TIME to TIMESTAMP;
- FLOAT/DOUBLE to text as `Float.toString`/`Double.toString` (shortest digits, "1.0E10",
  "0.001", "NaN"; subnormals refused), DATE, TIME and TIMESTAMP to text as Java formats them;
  text to FLOAT/DOUBLE (`parseDouble`, correctly rounded) and DECIMAL (`new BigDecimal`).

Casts whose result depends on the reading JVM's default time zone (between TIMESTAMP and
TIMESTAMP WITH LOCAL TIME ZONE, DATE/TIME/INT/BIGINT to a TIMESTAMP WITH LOCAL TIME ZONE and
back), and those whose Java text form is not reproduced yet (FLOAT/DOUBLE, DATE, TIME,
TIMESTAMP, ARRAY, MAP and ROW to text; text to FLOAT/DOUBLE, DECIMAL, DATE, TIME, TIMESTAMP)
raise `CastRefused`: the reader names the file and column (never a value other than Java's).
"""
from __future__ import annotations

import decimal

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from .decimal_text import DecimalTextRefused, text_decimals
from .types import DataType, to_arrow

_INTS = {"TINYINT": np.int8, "SMALLINT": np.int16, "INT": np.int32, "BIGINT": np.int64}
_FLOATS = {"FLOAT": np.float32, "DOUBLE": np.float64}
_STRINGS = ("CHAR", "VARCHAR")
_BINARIES = ("BINARY", "VARBINARY")
_TIMESTAMPS = ("TIMESTAMP", "TIMESTAMP_LTZ")
_UNIT_NS = {"s": 10**9, "ms": 10**6, "us": 10**3, "ns": 1}
_DAY_MS = 86_400_000


class CastRefused(Exception):
    """Java's cast of these values is not reproduced (or fails in Java too): the message says why."""


def java_cast(arr: pa.Array, old: DataType, new: DataType) -> pa.Array:
    """`arr` (values of type `old`) cast to `new` as Java 1.4.2 casts each value (module
    docstring); raises `CastRefused` where it cannot."""
    o, n = old.root, new.root
    target = to_arrow(new)
    if pa.types.is_dictionary(arr.type):
        arr = arr.dictionary_decode()
    mask = arr.is_null()
    if o in _INTS and n in _INTS:
        return _from_numpy(_ints(arr).astype(_INTS[n]), mask, target)
    if o in _FLOATS and n in _INTS:
        return _from_numpy(_float_to_int(_numbers(arr, np.float64), n), mask, target)
    if o in _INTS and n in _FLOATS:
        return _from_numpy(_ints(arr).astype(_FLOATS[n]), mask, target)
    if o in _FLOATS and n in _FLOATS:
        with np.errstate(over="ignore"):   # beyond FLOAT: an infinity, as Java's (float) cast
            return _from_numpy(_numbers(arr, _FLOATS[o]).astype(_FLOATS[n]), mask, target)
    if o == "BOOLEAN" and (n in _INTS or n in _FLOATS):
        return pc.cast(arr, target)
    if o == "BOOLEAN" and n == "DECIMAL":
        return _int_to_decimal(pc.cast(arr, pa.int64()), new)
    if o in _INTS and n == "BOOLEAN":
        return pc.not_equal(arr, pa.scalar(0, arr.type))
    if o in _INTS and n == "DECIMAL":
        return _int_to_decimal(arr, new)
    if o in _FLOATS and n == "DECIMAL":
        return _float_to_decimal(pc.cast(arr, pa.float64()), new)
    if o == "DECIMAL" and n == "DECIMAL":
        return _round_decimal(arr, new)
    if o == "DECIMAL" and n in _INTS:
        return _decimal_to_int(arr, n, target)
    if o == "DECIMAL" and n in _FLOATS:
        return pc.cast(_decimal_to_double(arr, old), target)
    if n in _STRINGS:
        if o in _STRINGS:
            text = arr
        elif o in _INTS or o == "BOOLEAN":
            text = pc.cast(arr, pa.string())
        elif o == "DECIMAL":
            text = _plain_decimal(arr, old)
        elif o in _FLOATS:
            text = java_float_text(arr)
        elif o in _BINARIES:
            return _utf8(arr, "its bytes are not valid UTF-8 text")
        elif o in ("DATE", "TIME", "TIMESTAMP") and new.precision == 2147483647:
            return _date_time_text(arr, old)
        else:
            raise CastRefused(f"Java's text form of {old} values is not reproduced")
        return _to_length(text, new)
    if o in _STRINGS and n == "BOOLEAN":
        return _string_to_boolean(arr)
    if o in _STRINGS and n in _INTS:
        return _string_to_int(arr, n)
    if o in _STRINGS and n in _FLOATS:
        return _string_to_float(arr, n)
    if o in _STRINGS and n == "DECIMAL":
        return _string_to_decimal(arr, new)
    if n in _BINARIES and (o in _BINARIES or o in _STRINGS):
        data = pc.cast(arr, pa.binary()) if o in _STRINGS else arr
        return _to_byte_length(data, new)
    if o == n and o in _TIMESTAMPS:
        return _truncate_timestamps(arr, new.precision, target)
    if o == "TIMESTAMP" and n == "DATE":
        ms = _epoch(arr, 10**6, floor=True)
        return _from_numpy(_div_toward_zero(ms, _DAY_MS).astype(np.int32), mask, target)
    if o in _TIMESTAMPS and n in ("BIGINT", "INT"):   # a TIMESTAMP WITH LOCAL TIME ZONE: its UTC wall clock
        ms = _epoch(arr, 10**6, floor=True)
        return _from_numpy(_div_toward_zero(ms, 1000).astype(_INTS[n]), mask, target)
    if o == "TIMESTAMP" and n == "TIME":
        ms = _epoch(arr, 10**6, floor=True)
        if np.any((ms < 0) & ~_np_mask(mask)):
            raise CastRefused("a TIMESTAMP before 1970 is a negative TIME of day in Java's cast")
        return _from_numpy((ms % _DAY_MS).astype(np.int32), mask, target)
    if n == "TIMESTAMP" and o in ("DATE", "TIME", "INT", "BIGINT"):
        if o == "DATE":
            ms = _numbers(pc.cast(arr, pa.int32()), np.int64) * _DAY_MS
        elif o == "TIME":
            ms = _numbers(pc.cast(arr, pa.int32()), np.int64)
        else:
            seconds = _ints(arr).astype(np.int64)
            if np.any((np.abs(seconds) > 9_223_372_036_854_775) & ~_np_mask(mask)):
                raise CastRefused("its seconds overflow Java's milliseconds")
            ms = seconds * 1000
        return _from_epoch_ms(ms, mask, new)
    raise CastRefused(f"Java's cast from {old} to {new} is not reproduced")


# ---- helpers ----------------------------------------------------------------------------------
def _np_mask(mask: pa.Array) -> np.ndarray:
    return mask.to_numpy(zero_copy_only=False)


def _from_numpy(values: np.ndarray, mask: pa.Array, target: pa.DataType) -> pa.Array:
    m = _np_mask(mask)
    return pa.array(values, type=target, mask=m if m.any() else None)


def _ints(arr: pa.Array) -> np.ndarray:
    return _numbers(arr, arr.type.to_pandas_dtype())


def _numbers(arr: pa.Array, dtype) -> np.ndarray:
    zero = pa.scalar(0, arr.type) if not pa.types.is_floating(arr.type) else pa.scalar(0.0, arr.type)
    return np.asarray(pc.fill_null(arr, zero).to_numpy(zero_copy_only=False), dtype=dtype)


def _float_to_int(values: np.ndarray, root: str) -> np.ndarray:
    """Java's `Number.intValue()` family on a double: NaN 0, saturating to INT (BIGINT), cut
    toward zero; TINYINT/SMALLINT wrap the INT."""
    wide = np.int64 if root == "BIGINT" else np.int32
    info = np.iinfo(wide)
    v = np.trunc(np.where(np.isnan(values), 0.0, values))
    high, low = v >= float(info.max), v <= float(info.min)   # float(max) is 2^31 (2^63): out of range
    inner = np.where(high | low, 0.0, v).astype(wide)
    return np.where(high, info.max, np.where(low, info.min, inner)).astype(wide).astype(_INTS[root])


def _int_to_decimal(arr: pa.Array, new: DataType) -> pa.Array:
    """Java's `DecimalUtils.castFrom(long)`: exact, null when it needs more than p digits."""
    limit = 10 ** (new.precision - new.scale)
    v = _numbers(pc.cast(arr, pa.int64()), np.int64)
    fits = (v < limit) & (v > -limit) if limit <= 2**63 else np.ones(len(v), bool)
    nulls = np.logical_or(_np_mask(arr.is_null()), ~fits)
    wide = pa.array(np.where(fits, v, 0), pa.int64()).cast(pa.decimal128(38, 0)).cast(pa.decimal128(38, new.scale))
    return _with_nulls(wide.cast(to_arrow(new)), nulls)


def _with_nulls(arr: pa.Array, nulls: np.ndarray) -> pa.Array:
    if not nulls.any():
        return arr
    return pc.if_else(pa.array(nulls), pa.nulls(len(arr), arr.type), arr)


def _float_to_decimal(arr: pa.Array, new: DataType) -> pa.Array:
    """Java's `BigDecimal.valueOf(double)` (the shortest decimal text of the double) rounded
    HALF_UP to the scale; null when it needs more than p digits; NaN and infinities fail
    Java's read (NumberFormatException)."""
    v = _numbers(arr, np.float64)
    valid = ~_np_mask(arr.is_null())
    if np.any(~np.isfinite(v) & valid):
        raise CastRefused("NaN and infinite values have no DECIMAL (Java's read fails on them)")
    p, s = new.precision, new.scale
    limit = 10.0 ** (p - s)
    tiny = np.abs(v) < 10.0 ** -(s + 1)          # rounds to 0 whatever its digits
    fits = (np.abs(v) < limit * 1.000001) & valid
    v = np.where(tiny | ~fits, 0.0, v)
    text = pc.cast(pa.array(v, pa.float64()), pa.string())   # shortest round-trip digits
    exact = pc.cast(text, pa.decimal256(76, s + 18))
    rounded = pc.cast(pc.round(exact, s, round_mode="half_towards_infinity"), exact.type)
    over = _beyond(rounded, p - s, True)
    nulls = ~valid | ~fits | over
    clean = pc.if_else(pa.array(nulls), pa.scalar(0, pa.decimal256(76, s + 18)), rounded)
    return _with_nulls(pc.cast(clean, to_arrow(new)), nulls)


def _beyond(values: pa.Array, digits: int, if_null: bool) -> np.ndarray:
    """Which decimals have more than `digits` digits before the point (|v| >= 10^digits)."""
    bound = pa.scalar(decimal.Decimal(10) ** digits, values.type)
    return pc.fill_null(pc.greater_equal(pc.abs(values), bound), if_null).to_numpy(zero_copy_only=False)


def _round_decimal(arr: pa.Array, new: DataType) -> pa.Array:
    """Java's DECIMAL -> DECIMAL: HALF_UP to the new scale, null beyond the new precision."""
    p, s = new.precision, new.scale
    wide = pc.cast(arr, pa.decimal256(76, max(arr.type.scale, s)))
    rounded = pc.cast(pc.round(wide, s, round_mode="half_towards_infinity"), wide.type) if s < arr.type.scale else wide
    over = _beyond(rounded, p - s, False)
    clean = pc.if_else(pa.array(over), pa.scalar(0, rounded.type), rounded)
    nulls = over | _np_mask(arr.is_null())
    return _with_nulls(pc.cast(clean, to_arrow(new)), nulls)


def _decimal_to_int(arr: pa.Array, root: str, target: pa.DataType) -> pa.Array:
    """Java: cut toward zero (`RoundingMode.DOWN`), `BigDecimal.longValue()`, then narrowed."""
    wide = pc.cast(arr, pa.decimal256(76, arr.type.scale))
    cut = pc.cast(pc.round(wide, 0, round_mode="towards_zero"), wide.type)
    if np.any(_beyond(cut, 19, False)) or pc.any(pc.greater_equal(pc.abs(cut), pa.scalar(2**63, cut.type))).as_py():
        raise CastRefused("a value beyond BIGINT's range (Java keeps its low 64 bits)")
    longs = _numbers(pc.cast(cut, pa.decimal256(76, 0)).cast(pa.int64()), np.int64)
    return _from_numpy(longs.astype(_INTS[root]), arr.is_null(), target)


def _decimal_to_double(arr: pa.Array, old: DataType) -> pa.Array:
    """Java's `DecimalUtils.doubleValue`: for p <= 18 the unscaled long as a double divided by
    10^s (two roundings), else the correctly rounded value of the decimal."""
    if old.precision <= 18:
        unscaled = pc.cast(_unscaled(arr), pa.int64())
        return pa.array(_numbers(unscaled, np.int64).astype(np.float64) / float(10 ** old.scale), pa.float64(),
                        mask=_np_mask(arr.is_null()) if arr.null_count else None)
    return pc.cast(_plain_decimal(arr, old), pa.float64())


def _unscaled(arr: pa.Array) -> pa.Array:
    """A decimal128 array's unscaled integers (the same bytes read with scale 0)."""
    if not pa.types.is_decimal128(arr.type):
        arr = arr.cast(pa.decimal128(38, arr.type.scale))
    return pa.Array.from_buffers(pa.decimal128(38, 0), len(arr), arr.buffers(), arr.null_count, arr.offset)


def _plain_decimal(arr: pa.Array, old: DataType) -> pa.Array:
    """`BigDecimal.toPlainString()`: the digits with exactly s after the point (Arrow prints
    small values as 1E-7)."""
    s = old.scale
    digits = pc.cast(_unscaled(arr), pa.string())
    if s == 0:
        return digits
    negative = pc.starts_with(digits, "-")
    body = pc.utf8_lpad(pc.utf8_ltrim(digits, "-"), s + 1, "0")
    length = pc.utf8_length(body)
    # split each body at len - s: vectorized per distinct length (at most 40 groups)
    whole = pa.array([""] * len(body), pa.string())
    frac = pa.array([""] * len(body), pa.string())
    for n in pc.unique(pc.drop_null(length)).to_pylist():
        at = pc.equal(length, n)
        whole = pc.if_else(at, pc.utf8_slice_codeunits(body, 0, n - s), whole)
        frac = pc.if_else(at, pc.utf8_slice_codeunits(body, n - s, n), frac)
    text = pc.binary_join_element_wise(pc.if_else(negative, "-", ""), whole, ".", frac, "")
    return pc.if_else(arr.is_null(), pa.nulls(len(arr), pa.string()), text)


def _to_length(text: pa.Array, new: DataType) -> pa.Array:
    """Java's `toCharacterString`: cut to n characters; a CHAR(n) padded to n with spaces."""
    n = new.precision
    text = pc.cast(text, pa.string())
    if n is None or n >= 2147483647:
        return text
    cut = pc.utf8_slice_codeunits(text, 0, n)
    return pc.utf8_rpad(cut, n, " ") if new.root == "CHAR" else cut


def _to_byte_length(data: pa.Array, new: DataType) -> pa.Array:
    """Java's `toBinaryString`: cut to n bytes; a BINARY(n) padded with zero bytes to n."""
    n = new.precision
    data = pc.cast(data, pa.binary())
    if n is None or n >= 2147483647:
        return data
    cut = pc.binary_slice(data, 0, n)
    if new.root != "BINARY":
        return cut
    return pc.binary_join_element_wise(cut, _zero_pad(cut, n), b"")


def _zero_pad(cut: pa.Array, n: int) -> pa.Array:
    """The zero bytes each value needs to reach n bytes (per distinct length, at most n + 1 groups)."""
    lengths = pc.binary_length(cut)
    pad = pa.array([b""] * len(cut), pa.binary())
    for k in pc.unique(pc.drop_null(lengths)).to_pylist():
        if k < n:
            pad = pc.if_else(pc.equal(lengths, k), pa.scalar(b"\0" * (n - k)), pad)
    return pad


def _utf8(arr: pa.Array, why: str) -> pa.Array:
    try:
        return pc.cast(arr, pa.string())   # a checked cast: it validates the UTF-8
    except pa.ArrowInvalid:
        raise CastRefused(why) from None


def _string_to_boolean(arr: pa.Array) -> pa.Array:
    low = pc.utf8_lower(pc.cast(arr, pa.string()))
    true = pc.is_in(low, pa.array(["t", "true", "y", "yes", "1"]))
    false = pc.is_in(low, pa.array(["f", "false", "n", "no", "0"]))
    ok = pc.or_(pc.or_(true, false), arr.is_null())
    if not pc.all(ok).as_py():
        bad = pc.filter(arr, pc.invert(ok))[0].as_py()
        raise CastRefused(f"{bad!r} is no BOOLEAN (Java's read fails on it)")
    return pc.if_else(arr.is_null(), pa.nulls(len(arr), pa.bool_()), true)


def _string_to_int(arr: pa.Array, root: str) -> pa.Array:
    """Java's `BinaryStringUtils.toLong`/`toInt` (then a range check for SMALLINT/TINYINT): a
    sign, digits and an optional '.' with digits that is cut; nothing else (no spaces)."""
    text = pc.cast(arr, pa.string())
    ok = pc.and_(pc.match_substring_regex(text, r"^[+-]?[0-9]*(\.[0-9]*)?$"),
                 pc.invert(pc.is_in(text, pa.array(["", "+", "-"]))))
    if not pc.all(pc.fill_null(ok, True)).as_py():
        bad = pc.filter(text, pc.invert(pc.fill_null(ok, True)))[0].as_py()
        raise CastRefused(f"{bad!r} is no {root} (Java's read fails on it)")
    whole = pc.replace_substring_regex(text, r"\..*$", "")
    whole = pc.replace_substring_regex(whole, r"^([+-]?)$", r"\10")
    whole = pc.replace_substring_regex(whole, r"^\+", "")
    try:
        longs = pc.cast(whole, pa.int64())
    except pa.ArrowInvalid:
        raise CastRefused(f"a value overflows {root} (Java's read fails on it)") from None
    info = np.iinfo(_INTS[root])
    v = _numbers(longs, np.int64)
    if np.any(((v > info.max) | (v < info.min)) & ~_np_mask(arr.is_null())):
        raise CastRefused(f"a value overflows {root} (Java's read fails on it)")
    return _from_numpy(v.astype(_INTS[root]), arr.is_null(), to_arrow(DataType(root)))


def _epoch(arr: pa.Array, unit_ns: int, floor: bool) -> np.ndarray:
    """Epoch values of a timestamp array in units of `unit_ns` nanoseconds (floored)."""
    per = _UNIT_NS[arr.type.unit]
    v = _numbers(pc.cast(arr, pa.int64()), np.int64)
    if per >= unit_ns:
        return v * (per // unit_ns)
    return np.floor_divide(v, unit_ns // per)


def _div_toward_zero(v: np.ndarray, d: int) -> np.ndarray:
    q = np.floor_divide(v, d)
    return np.where((v < 0) & (v % d != 0), q + 1, q)


def _from_epoch_ms(ms: np.ndarray, mask: pa.Array, new: DataType) -> pa.Array:
    """Java's milliseconds as a TIMESTAMP `new` (kept whole: Java does not cut them to the
    precision, and every precision is read in milliseconds or finer)."""
    target = to_arrow(new)
    per = _UNIT_NS[target.unit]
    return _from_numpy(ms * (10**6 // per), mask, pa.timestamp(target.unit)).cast(target)


def _truncate_timestamps(arr: pa.Array, precision: int, target: pa.DataType) -> pa.Array:
    """Java's `DateTimeUtils.truncate(ts, precision)` of every value, in the target's unit."""
    src_per = _UNIT_NS[arr.type.unit]
    v = _numbers(pc.cast(arr, pa.int64()), np.int64)
    millis = np.floor_divide(v, 10**6 // src_per) if src_per < 10**6 else v * (src_per // 10**6)
    sub_ns = (v - millis * (10**6 // src_per)) * src_per if src_per < 10**6 else np.zeros_like(v)  # nano of milli
    nano_of_second = (np.mod(millis, 1000) * 10**6 + sub_ns)
    digits = np.where(nano_of_second == 0, 1, np.floor(np.log10(np.maximum(nano_of_second, 1))).astype(np.int64) + 1)
    keep = digits <= precision
    if precision <= 3:
        step = 10 ** (3 - precision)
        new_millis = _div_toward_zero(millis, step) * step
        new_sub = np.zeros_like(sub_ns)
    else:
        step = 10 ** (9 - precision)
        new_millis = millis
        new_sub = sub_ns // step * step
    millis = np.where(keep, millis, new_millis)
    sub_ns = np.where(keep, sub_ns, new_sub)
    dst_per = _UNIT_NS[target.unit]
    if dst_per >= 10**6:
        out = np.floor_divide(millis, dst_per // 10**6)
    else:
        out = millis * (10**6 // dst_per) + sub_ns // dst_per
    return _from_numpy(out, arr.is_null(), pa.timestamp(target.unit)).cast(target)


def _groups(keys: pa.Array):
    """(value, mask) of each distinct non-null value of `keys` (a loop over groups, not rows)."""
    for k in pc.unique(pc.drop_null(keys)).to_pylist():
        yield k, pc.fill_null(pc.equal(keys, k), False)


def java_float_text(arr: pa.Array) -> pa.Array:
    """Java's `Double.toString` / `Float.toString` of a DOUBLE / FLOAT array: the shortest digits
    that read back as the value (JDK 19+; JDK 17 sometimes prints a 17th digit), but two where one
    would do (Double.MIN_VALUE is 4.9E-324, not 5E-324), plain from 10^-3 up to 10^7 ("100.0",
    "0.001"), else computerized scientific ("1.0E10", "1.5E-7"); "NaN", "Infinity", "-0.0"."""
    shortest = pc.cast(arr, pa.string())
    v = _numbers(arr, np.float64)
    tiny = np.finfo(np.float32 if pa.types.is_float32(arr.type) else np.float64).tiny
    subnormal = np.flatnonzero(~_np_mask(arr.is_null()) & (v != 0) & (np.abs(v) < tiny))
    if subnormal.size:  # only those may have a one-digit shortest text unequal to the nearest two-digit one
        two_digits = [np.format_float_scientific(np.float32(x), precision=1, unique=False)
                      if pa.types.is_float32(arr.type) else format(x, ".1e")
                      for x in v[subnormal].tolist()]  # a loop over subnormal values only: real data hardly holds any
        one_digit = [len(t.lstrip("-").split("e")[0].replace(".", "").strip("0")) == 1
                     for t in shortest.take(pa.array(subnormal)).to_pylist()]
        mask = np.zeros(len(arr), bool)
        mask[subnormal[one_digit]] = True
        shortest = pc.replace_with_mask(shortest, pa.array(mask),
                                        pa.array([t for t, one in zip(two_digits, one_digit) if one], pa.string()))
    parts = pc.extract_regex(pc.fill_null(shortest, "0"),
                             r"^(?P<sign>-?)(?P<int>\d+)(?:\.(?P<frac>\d+))?(?:e(?P<exp>[+-]?\d+))?$")
    sign, whole, frac = (pc.struct_field(parts, n) for n in ("sign", "int", "frac"))
    exp = pc.cast(pc.replace_substring_regex(pc.replace_substring_regex(pc.struct_field(parts, "exp"), r"^\+", ""),
                                             r"^$", "0"), pa.int64())
    all_digits = pc.binary_join_element_wise(whole, frac, "")
    stripped = pc.utf8_ltrim(all_digits, "0")
    # the exponent of the first significant digit: value = d.ddd x 10^e
    e = pc.subtract(pc.add(exp, pc.subtract(pc.cast(pc.utf8_length(whole), pa.int64()), 1)),
                    pc.cast(pc.subtract(pc.utf8_length(all_digits), pc.utf8_length(stripped)), pa.int64()))
    digits = pc.utf8_rtrim(stripped, "0")
    first, rest = pc.utf8_slice_codeunits(digits, 0, 1), pc.utf8_slice_codeunits(digits, 1, 1 << 30)
    rest_or_0 = pc.if_else(pc.equal(rest, ""), "0", rest)
    text = pc.binary_join_element_wise(sign, first, ".", rest_or_0, "E", pc.cast(e, pa.string()), "")
    plain = pc.and_(pc.greater_equal(e, -3), pc.less(e, 7))
    for k, at in _groups(pc.if_else(plain, e, pa.scalar(None, pa.int64()))):
        if k >= 0:
            head = pc.utf8_rpad(pc.utf8_slice_codeunits(digits, 0, k + 1), k + 1, "0")
            tail = pc.utf8_slice_codeunits(digits, k + 1, 1 << 30)
            body = pc.binary_join_element_wise(head, ".", pc.if_else(pc.equal(tail, ""), "0", tail), "")
        else:
            body = pc.binary_join_element_wise("0.", "0" * (-k - 1), digits, "")
        text = pc.if_else(at, pc.binary_join_element_wise(sign, body, ""), text)
    zero = pc.equal(digits, "")
    text = pc.if_else(zero, pc.binary_join_element_wise(sign, "0.0", ""), text)
    special = {"nan": "NaN", "inf": "Infinity", "-inf": "-Infinity"}
    for arrow_text, java_text in special.items():
        text = pc.if_else(pc.fill_null(pc.equal(shortest, arrow_text), False), java_text, text)
    return pc.if_else(arr.is_null(), pa.nulls(len(arr), pa.string()), text)


def _date_time_text(arr: pa.Array, old: DataType) -> pa.Array:
    """Java's DATE, TIME and TIMESTAMP (not WITH LOCAL TIME ZONE) to STRING:
    `2024-01-31`; `12:30:05` with the milliseconds cut to the precision and their trailing
    zeros dropped but one (`12:30:05.5`, `.0`); `2024-01-31 12:30:05` with the fraction of
    second of at least `precision` digits (trailing zeros beyond dropped). Years 1-9999 only."""
    if old.root == "TIME":
        ms = _numbers(pc.cast(arr, pa.int32()), np.int64)
        clock = pc.cast(pc.cast(arr, pa.time32("s"), safe=False), pa.string())
        p = min(old.precision or 0, 3)
        if p == 0:
            text = clock
        else:
            frac = pc.utf8_lpad(pc.cast(pa.array(ms % 1000 // 10 ** (3 - p)), pa.string()), p, "0")
            frac = pc.replace_substring_regex(frac, r"^(\d)(\d*?)0*$", r"\1\2")
            text = pc.binary_join_element_wise(clock, ".", frac, "")
        return pc.if_else(arr.is_null(), pa.nulls(len(arr), pa.string()), text)
    days = _numbers(pc.cast(arr, pa.int32()), np.int64) if old.root == "DATE" else \
        np.floor_divide(_epoch(arr, 10**9, floor=True), 86400)
    if np.any(((days < -719162) | (days > 2932896)) & ~_np_mask(arr.is_null())):
        raise CastRefused("a year outside 1-9999")
    text = pc.cast(arr, pa.string())
    if old.root == "TIMESTAMP":
        p = old.precision or 0
        text = pc.replace_substring_regex(text, r"^(.*\.\d{%d}\d*?)0*$" % p, r"\1")  # a TIMESTAMP(0) too
        text = pc.replace_substring_regex(text, r"\.$", "")
    return text


_JAVA_HEX_FLOAT = r"^[+-]?0[xX]([0-9a-fA-F]+\.?[0-9a-fA-F]*|\.[0-9a-fA-F]+)[pP][+-]?\d+[fFdD]?$"


def _string_to_float(arr: pa.Array, root: str) -> pa.Array:
    """Java's `Double.parseDouble` / `Float.parseFloat` (correctly rounded): the text trimmed
    of blanks and control characters, a sign, digits with a '.', an exponent, a type suffix
    (f, d), NaN, Infinity, or a hexadecimal form with its binary exponent (`0x1p3` is 8.0);
    anything else fails Java's read."""
    text = pc.utf8_trim(pc.cast(arr, pa.string()), "".join(chr(c) for c in range(33)))
    ok = pc.match_substring_regex(text, r"^[+-]?(NaN|Infinity|((\d+\.?\d*|\.\d+)([eE][+-]?\d+)?)[fFdD]?)$")
    hexadecimal = pc.fill_null(pc.match_substring_regex(text, _JAVA_HEX_FLOAT), False)
    ok = pc.or_(pc.or_(pc.fill_null(ok, False), hexadecimal), arr.is_null())
    if not pc.all(ok).as_py():
        bad = pc.filter(arr, pc.invert(ok))[0].as_py()
        raise CastRefused(f"{bad!r} is no {root} (Java's read fails on it)")
    target = to_arrow(DataType(root))
    text = pc.replace_substring_regex(text, r"[fFdD]$", "")
    text = pc.replace_substring_regex(text, r"^\+", "")
    text = pc.replace_substring_regex(text, r"^(-?)Infinity$", r"\1inf")
    text = pc.replace_substring_regex(text, r"^-?NaN$", "nan")
    if not pc.any(hexadecimal).as_py():
        return pc.cast(text, target)
    # rare: Python reads the hexadecimal texts (Arrow's cast has no such form), the rest as usual
    hexes = pa.array([_hex_float(t) for t in text.filter(hexadecimal).to_pylist()], pa.float64())
    decimal_text = pc.if_else(hexadecimal, "0", text)
    return pc.replace_with_mask(pc.cast(decimal_text, target), hexadecimal, hexes.cast(target, safe=False))


def _hex_float(text: str) -> float:
    """A hexadecimal float text as Java reads it: beyond a double's range infinity."""
    try:
        return float.fromhex(text)
    except OverflowError:
        return float("-inf") if text.startswith("-") else float("inf")


def _string_to_decimal(arr: pa.Array, new: DataType) -> pa.Array:
    """Java's `new BigDecimal(text)` (a sign, digits with a '.', an exponent; no blanks:
    anything else fails Java's read) rounded HALF_UP to the scale, null beyond the precision."""
    try:
        return text_decimals(pc.cast(arr, pa.string()), to_arrow(new), half_up=True, beyond_null=True)
    except DecimalTextRefused as exc:
        raise CastRefused(f"{exc.text!r} is no DECIMAL (Java's read fails on it)") from None
