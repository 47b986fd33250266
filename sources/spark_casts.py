"""A read schema's other types (`spark.read.format("paimon").schema("id long, ts string")`):
the stored values cast as Spark's CAST casts them, in the session's time zone.

Spark hands a Python data source's read no casts of its own: the reader returns the columns in
the read schema's types, so it casts them itself, vectorized. Where Arrow's cast gives what
Spark's gives (integers to wider ones, strings to numbers Arrow parses, ...) it is used; where
it would give other values it is replaced:

- between TIMESTAMP (an instant, `timestamp`) and TIMESTAMP_NTZ, DATE to TIMESTAMP and
  TIMESTAMP to DATE: wall times in the session time zone (`spark.sql.session.timeZone`, as
  Java's ZoneId reads it, `zones.java_zone`), not in UTC; a wall time the zone skips moved later
  by the gap, a repeated one its earlier instant, as `java.time`;
- to STRING: timestamps as `yyyy-MM-dd HH:mm:ss[.fraction]` (trailing zeros dropped, the
  instant's wall time in the session zone), floats as Java's `Float.toString`/`Double.toString`
  (`NaN`, `-0.0`, `1.0E22`: `java_casts.java_float_text`), decimals as their plain digits (ANSI
  mode; without it Java's `BigDecimal.toString`: the few values it prints as `1E-10` are refused);
- text to an integer: trimmed, a sign and decimal digits (without ANSI mode a fraction cut, other
  text and values beyond the type null; in ANSI mode an error), where Arrow's cast took hex
  (`0xff` a TINYINT's -1);
- integers to FLOAT/DOUBLE (rounded, where Arrow refuses beyond 2^53), DECIMAL to DOUBLE/FLOAT
  (Spark's `Decimal.toDouble`/`toFloat`), DECIMAL/integer/FLOAT/DOUBLE to DECIMAL (HALF_UP,
  beyond the precision an error in ANSI mode, else null).

Casts Spark does otherwise and that are not reproduced are refused with an error naming the
column and both types (never other values): numbers to and from DATE/TIMESTAMP, text to
TIMESTAMP, ROW/ARRAY/MAP to text; a value Arrow's cast refuses (a fraction into an integer, an
integer beyond the type, bytes that are not UTF-8) is an error too, where Spark may round,
wrap or return null.

Nothing here imports pyspark: the session's settings come in as `CastSettings`.
"""
from __future__ import annotations

import os
import unicodedata
from dataclasses import dataclass

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from paimon_streaming.datafile import conform, finer_unit
from paimon_streaming.decimal_text import DecimalTextRefused, text_decimals
from paimon_streaming.errors import UnsupportedOperationError
from paimon_streaming.java_casts import CastRefused, _decimal_to_double, _float_to_decimal, _int_to_decimal, \
    _plain_decimal, _round_decimal, _unscaled, java_float_text
from paimon_streaming.number_text import text_numbers
from paimon_streaming.types import DataType
from paimon_streaming.zones import instants_of_wall_times, java_zone, local_wall_times

SESSION_TIME_ZONE = "spark.sql.session.timeZone"
ANSI = "spark.sql.ansi.enabled"
_SPARK_BLANKS = "".join(map(chr, range(33))) + "\x7f"  # what UTF8String.toLong trims
_FIRST_DAY, _LAST_DAY = -719528, 2932896  # 0000-01-01 and 9999-12-31: four-digit years, as Spark prints them


class SparkCastRefused(Exception):
    """Spark's cast of these values is not reproduced (the message says why)."""


@dataclass(frozen=True)
class CastSettings:
    """The session settings Spark's casts depend on: its time zone (a Java ZoneId text, or None
    when unknown) and ANSI mode."""
    zone: str | None = None
    ansi: bool = True

    @staticmethod
    def of(properties: dict[str, str | None]) -> "CastSettings":
        """From Spark's SQL settings as a task sees them (its local properties: the settings a
        session sets; unset, the time zone is the JVM's default, which is this machine's, and
        ANSI mode Spark 4's default, on)."""
        zone = properties.get(SESSION_TIME_ZONE) or process_zone()
        ansi = (properties.get(ANSI) or "true").strip().lower() == "true"
        return CastSettings(zone, ansi)

    def time_zone(self) -> str:
        if self.zone is None:
            raise SparkCastRefused("the session's time zone is not known to the reader (no "
                                   f"{SESSION_TIME_ZONE} and no zone of this machine); set {SESSION_TIME_ZONE}")
        try:
            return java_zone(self.zone)
        except UnsupportedOperationError as exc:
            raise SparkCastRefused(str(exc)) from None


def process_zone() -> str | None:
    """This machine's time zone as a JVM started here takes it by default (`TZ`, else
    /etc/timezone, else the zone /etc/localtime links to), or None."""
    tz = os.environ.get("TZ", "").lstrip(":").strip()
    if tz:
        return tz.split("zoneinfo/", 1)[1] if "zoneinfo/" in tz else tz
    try:
        with open("/etc/timezone") as f:
            name = f.read().strip()
        if name:
            return name
    except OSError:
        pass
    target = os.path.realpath("/etc/localtime")
    return target.split("zoneinfo/", 1)[1] if "zoneinfo/" in target else None


def spark_cast(arr: pa.Array, target: pa.DataType, settings: CastSettings) -> pa.Array:
    """`arr` cast to `target` (Spark's Arrow type of a read schema's type) as Spark's CAST casts
    each value (module docstring); raises SparkCastRefused, or Arrow's error for values Arrow's
    cast refuses."""
    t = arr.type
    if t.equals(target):
        return arr
    if pa.types.is_dictionary(t):
        return spark_cast(arr.dictionary_decode(), target, settings)
    mask = arr.is_null() if arr.null_count else None
    if pa.types.is_struct(t) and pa.types.is_struct(target):
        names = [f.name for f in t]
        missing = [f.name for f in target if f.name not in names]
        if missing:
            raise SparkCastRefused(f"the stored ROW has no field(s) {missing}")
        children = [spark_cast(arr.field(names.index(f.name)), f.type, settings) for f in target]
        return pa.StructArray.from_arrays(children, fields=list(target), mask=mask)
    if (_is_list(t) and pa.types.is_list(target)) or (pa.types.is_map(t) and pa.types.is_map(target)):
        if pa.types.is_fixed_size_list(t):
            arr = arr.cast(pa.list_(t.value_field))
        start, end = arr.offsets[0].as_py(), arr.offsets[-1].as_py()  # a slice: its entries only, from 0
        offsets = pc.subtract(arr.offsets, start)
        if pa.types.is_map(t):
            keys = spark_cast(arr.keys.slice(start, end - start), target.key_type, settings)
            items = spark_cast(arr.items.slice(start, end - start), target.item_type, settings)
            return pa.MapArray.from_arrays(offsets, keys, items, type=target, mask=mask)
        values = spark_cast(arr.values.slice(start, end - start), target.value_type, settings)
        return pa.ListArray.from_arrays(offsets.cast(pa.int32()), values, type=target, mask=mask)
    if _nested(t) or _nested(target):
        raise SparkCastRefused("Spark's cast between these types is not reproduced")
    if pa.types.is_time(t):  # a Paimon TIME reads as the INT of its milliseconds of the day
        return spark_cast(arr.cast(pa.int32()), target, settings)
    return _leaf(arr, target, settings)


def _leaf(arr: pa.Array, target: pa.DataType, s: CastSettings) -> pa.Array:
    t = arr.type
    if pa.types.is_timestamp(t) and pa.types.is_timestamp(target):
        arr = _floored(arr, target.unit)
        if (t.tz is None) == (target.tz is None):
            return arr.cast(target)
        if target.tz is None:  # an instant: the wall time it shows in the session zone
            return _wall_times(arr, s).cast(target)
        return instants_of_wall_times(arr, s.time_zone()).cast(target)
    if pa.types.is_date(t) and pa.types.is_timestamp(target):
        midnight = arr.cast(pa.date32()).cast(pa.timestamp(target.unit))
        return midnight if target.tz is None else instants_of_wall_times(midnight, s.time_zone()).cast(target)
    if pa.types.is_timestamp(t) and pa.types.is_date(target):
        return _wall_times(arr, s).cast(target)  # Arrow's cast floors to the day
    if _is_text(target):
        return _text(arr, s).cast(target)
    if _is_time_point(t) or _is_time_point(target):
        if _is_text(t) and pa.types.is_date(target):
            return arr.cast(target)  # yyyy-MM-dd, the one form Arrow takes, is read alike
        raise SparkCastRefused("Spark's cast between these types is not reproduced")
    if pa.types.is_decimal(target):
        p, sc = target.precision, target.scale
        new = DataType("DECIMAL", precision=p, scale=sc)
        try:
            if pa.types.is_decimal(t):
                out = _round_decimal(arr, new)
            elif pa.types.is_integer(t) or pa.types.is_boolean(t):
                out = _int_to_decimal(pc.cast(arr, pa.int64()), new)
            elif pa.types.is_floating(t):
                out = _float_to_decimal(pc.cast(arr, pa.float64()), new)
            else:
                out = _text_to_decimals(arr, target, s)
        except CastRefused as exc:
            raise SparkCastRefused(str(exc)) from None
        return _ansi_checked(arr, out, s)
    if _is_text(t) and pa.types.is_integer(target):
        return _text_to_integers(arr, target, s)
    if pa.types.is_floating(target) and (pa.types.is_integer(t) or pa.types.is_decimal(t)):
        if pa.types.is_integer(t):  # rounded to the nearest, as Java's (double) and (float)
            values = pc.fill_null(arr, 0).to_numpy(zero_copy_only=False).astype(target.to_pandas_dtype())
        elif pa.types.is_float64(target):
            return _decimal_to_double(arr, DataType("DECIMAL", precision=t.precision, scale=t.scale))
        elif t.precision <= 18:  # Spark's Decimal.toFloat: the unscaled long / 10^s, in floats
            unscaled = pc.fill_null(pc.cast(_unscaled(arr), pa.int64()), 0).to_numpy(zero_copy_only=False)
            values = unscaled.astype(np.float32) / np.float32(10 ** t.scale)
        else:  # BigDecimal.floatValue: correctly rounded
            return pc.cast(_plain_decimal(arr, DataType("DECIMAL", precision=t.precision, scale=t.scale)), target)
        return pa.array(values, target, mask=None if arr.null_count == 0 else arr.is_null().to_numpy(
            zero_copy_only=False))
    return arr.cast(target)


def _ansi_checked(given: pa.Array, out: pa.Array, s: CastSettings) -> pa.Array:
    """Spark's DECIMAL beyond its precision: an error in ANSI mode, else null."""
    if s.ansi and out.null_count > given.null_count:
        raise SparkCastRefused(f"a value needs more digits than {out.type} has (Spark's ANSI cast fails on it; "
                               "with spark.sql.ansi.enabled=false it is null)")
    return out


def _text_to_integers(arr: pa.Array, target: pa.DataType, s: CastSettings) -> pa.Array:
    """Spark's cast of text to an integer type (`UTF8String.toLong` and its kin): the text
    trimmed of bytes up to a space and DEL, then a sign and ASCII digits; without ANSI mode also
    a '.' with digits, cut (`12.7` is 12, `.` is 0), and anything else or a value beyond the type
    null. In ANSI mode those fail the query (CAST_INVALID_INPUT). Arrow's cast took hex
    (`0xff` a TINYINT's -1)."""
    text = pc.utf8_trim(pc.cast(arr, pa.string()), _SPARK_BLANKS)
    if not s.ansi:
        text = pc.replace_substring_regex(text, r"^([+-]?)([0-9]*)\.[0-9]*$", r"\10\2")
    numbers, bad = text_numbers(text, target)
    if s.ansi and bad.any():
        raise SparkCastRefused(f"{arr[int(np.flatnonzero(bad)[0])].as_py()!r} is no {target} value (Spark's ANSI cast "
                               "fails on it with CAST_INVALID_INPUT; with spark.sql.ansi.enabled=false it is null)")
    return numbers


_DECIMAL_TEXT = r"^[+-]?([0-9]+\.?[0-9]*|\.[0-9]+)([eE][+-]?[0-9]+)?$"
_JAVA_TRIMMED = "".join(chr(c) for c in range(0x21))  # Java's String.trim


def _ascii_digits(text: str) -> str:
    """Digits of any script as ASCII ones, as Java's Character.digit reads them."""
    return "".join(str(unicodedata.decimal(c)) if not c.isascii() and unicodedata.decimal(c, None) is not None
                   else c for c in text)


def _text_to_decimals(arr: pa.Array, target: pa.DataType, s: CastSettings) -> pa.Array:
    """Spark's cast of text to DECIMAL (`Decimal.fromString`, Java's `new BigDecimal` of the
    text `String.trim` left: characters up to U+0020 trimmed, digits of any script): a decimal
    number with an optional exponent within Java's int, rounded HALF_UP to the scale; text that
    is no number, or a value beyond the precision, null (ANSI mode: an error). Arrow's cast
    wrapped values beyond the type into others ('-7e36' into DECIMAL(38, 2))."""
    text = pc.utf8_trim(pc.cast(arr, pa.string()), _JAVA_TRIMMED)
    foreign = pc.invert(pc.fill_null(pc.string_is_ascii(text), True))
    if pc.any(foreign).as_py():  # rare: digits of other scripts ('١٢') as ASCII ones, by Python
        ascii_digits = pa.array([_ascii_digits(t) for t in text.filter(foreign).to_pylist()], pa.string())
        text = pc.replace_with_mask(text, foreign, ascii_digits)
    # an exponent beyond Java's int is a NumberFormatException (Python's decimal would read 1e-2147483649 as 0)
    exponent = pc.utf8_ltrim(pc.utf8_ltrim(pc.struct_field(pc.extract_regex(text, r"[eE](?P<e>[+-]?[0-9]+)$"), [0]),
                                           "+-"), "0")
    digits = pc.utf8_length(exponent)
    exponent = pc.if_else(pc.equal(digits, 0), "0", pc.if_else(pc.greater(digits, 10), "9" * 11, exponent))
    in_int = pc.less_equal(pc.cast(exponent, pa.int64()), 2**31 - 1)
    number = pc.and_(pc.match_substring_regex(text, _DECIMAL_TEXT), pc.fill_null(in_int, True))
    number = pc.fill_null(number, True)  # (a null stays null)
    if not pc.all(number).as_py():
        if s.ansi:
            bad = arr.filter(pc.invert(number))[0].as_py()
            raise SparkCastRefused(f"{bad!r} is no {target} value (Spark's ANSI cast fails on it with "
                                   "CAST_INVALID_INPUT; with spark.sql.ansi.enabled=false it is null)")
        text = pc.if_else(number, text, pa.scalar(None, pa.string()))
    try:
        out = text_decimals(text, target, half_up=True, beyond_null=True)
    except DecimalTextRefused as exc:  # not expected past the regex: never a guess
        raise SparkCastRefused(str(exc)) from None
    if s.ansi and out.null_count > text.null_count:
        raise SparkCastRefused(f"a value needs more digits than {target} has (Spark's ANSI cast fails on it; "
                               "with spark.sql.ansi.enabled=false it is null)")
    return out


def _text(arr: pa.Array, s: CastSettings) -> pa.Array:
    """Spark's cast to STRING."""
    t = arr.type
    if _is_text(t) or pa.types.is_integer(t) or pa.types.is_boolean(t) or pa.types.is_binary(t) \
            or pa.types.is_large_binary(t):
        return arr.cast(pa.string())
    if pa.types.is_floating(t):
        return java_float_text(arr)
    if pa.types.is_decimal(t):
        if not s.ansi and t.scale > 6:  # BigDecimal.toString: scientific below 10^-6 (1E-10, 0E-10)
            small = pc.less(pc.abs(_unscaled(arr)), pa.scalar(10 ** (t.scale - 6), pa.decimal128(38, 0)))
            if pc.any(small).as_py():
                raise SparkCastRefused("without ANSI mode Spark prints such a small value in scientific notation "
                                       "(1E-10), which is not reproduced")
        return _plain_decimal(arr, DataType("DECIMAL", precision=t.precision, scale=t.scale))
    if pa.types.is_date(t):
        _check_years(arr.cast(pa.date32()))
        return arr.cast(pa.string())
    if pa.types.is_timestamp(t):
        wall = _wall_times(_floored(arr, "us"), s).cast(pa.timestamp("us"))
        _check_years(wall.cast(pa.date32()))
        return pc.replace_substring_regex(wall.cast(pa.string()), r"\.?0*$", "")  # the fraction's zeros
    raise SparkCastRefused("Spark's cast of these values to text is not reproduced")


def _wall_times(arr: pa.Array, s: CastSettings) -> pa.Array:
    """A timestamp's wall times: an instant's in the session zone, a wall time's its own."""
    if arr.type.tz is None:
        return arr
    return local_wall_times(arr.cast(pa.timestamp(arr.type.unit, s.time_zone())))


def _floored(arr: pa.Array, unit: str) -> pa.Array:
    """Timestamps finer than `unit` floored to it (as Spark's connector cuts nanoseconds)."""
    return conform(arr, pa.timestamp(unit, arr.type.tz)) if finer_unit(arr.type.unit, unit) else arr


def _check_years(days: pa.Array) -> None:
    bad = pc.or_(pc.less(days.cast(pa.int32()), _FIRST_DAY), pc.greater(days.cast(pa.int32()), _LAST_DAY))
    if pc.any(bad).as_py():
        raise SparkCastRefused("a date or time outside the years 0000-9999, which Spark prints otherwise")


def _is_text(t: pa.DataType) -> bool:
    return pa.types.is_string(t) or pa.types.is_large_string(t) or pa.types.is_string_view(t)


def _is_time_point(t: pa.DataType) -> bool:
    return pa.types.is_timestamp(t) or pa.types.is_date(t)


def _is_list(t: pa.DataType) -> bool:
    return pa.types.is_list(t) or pa.types.is_large_list(t) or pa.types.is_fixed_size_list(t)


def _nested(t: pa.DataType) -> bool:
    return pa.types.is_struct(t) or _is_list(t) or pa.types.is_map(t)
