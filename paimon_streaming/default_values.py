"""Column default values (a field's `defaultValue` in the schema, Paimon 1.3+).

Java's writers (TableWriteImpl with DefaultValueRow, Paimon 1.4) give every null of a
top-level column that has a default the default instead, for every row they write, NOT NULL
columns included (a missing value there is not an error). The default is text, cast to the
column's type as Paimon casts a STRING (DefaultValueUtils: surrounding single quotes removed
first), so the same text gives the same value here:

- BOOLEAN: t/true/y/yes/1 or f/false/n/no/0, any case;
- integers and FLOAT/DOUBLE: as `java_casts` casts STRING (ASCII digits, a fraction of an
  integer ignored: `12.7` is 12, out of range refused; a float's text as `parseFloat` /
  `parseDouble` rounds it, `1.5f` and `Infinity` too, `inf` and hex not);
- DECIMAL(p, s): rounded half up to s digits; more than p digits gives no default (null);
- CHAR(n)/BINARY(n) padded to n, CHAR/VARCHAR/BINARY/VARBINARY cut at n;
- DATE: a number of days, or `y-m-d` (`2024-1-5`; text after a space ignored, a missing month
  or day is 1); TIME: ISO text, or a number of milliseconds;
- TIMESTAMP(p): a number of seconds (p 0), milliseconds (3), microseconds (6) or nanoseconds
  (9) since the epoch, or `yyyy-M-d[ H:m:s[.fraction]]` (a space, not `T`; up to 9 digits,
  cut to p; Feb 30 is Feb's last day, 24:00:00 the next midnight, as java.time's), years 1-9999;
- TIMESTAMP_LTZ: that text taken in UTC (Java takes it in the JVM's default zone: UTC on the
  servers this is tested for).
ARRAY, MAP, ROW and other nested defaults are refused at write, naming the column.
"""
from __future__ import annotations

import calendar
import datetime as dt
import decimal
import re

import pyarrow as pa
import pyarrow.compute as pc

from .errors import SchemaMismatchError, UnsupportedOperationError
from .java_casts import CastRefused, java_cast
from .types import DataField, DataType, parse_atomic, to_arrow

_TRUE, _FALSE = {"t", "true", "y", "yes", "1"}, {"f", "false", "n", "no", "0"}
_NUMBERS = ("TINYINT", "SMALLINT", "INT", "BIGINT", "FLOAT", "DOUBLE")
_NUMERIC = re.compile(r"-?\d+")  # Paimon's StringUtils.isNumeric (any Unicode digits), then cast as an integer
_EPOCH_UNITS = {0: "s", 3: "ms", 6: "us", 9: "ns"}
_UNIT_NS = {"s": 10**9, "ms": 10**6, "us": 10**3, "ns": 1}
# Paimon's DEFAULT_TIMESTAMP_FORMATTER, `yyyy-[MM][M]-[dd][d][ [HH][H]:[mm][m]:[ss][s][.fraction]]`
_TIMESTAMP = re.compile(r"([0-9]{4})-([0-9]{1,2})-([0-9]{1,2})"
                        r"(?: ([0-9]{1,2}):([0-9]{1,2}):([0-9]{1,2})?(?:\.([0-9]{0,9}))?)?", re.ASCII)
_JAVA_BLANKS = "".join(map(chr, range(33)))  # String.trim
_YEAR_0 = -719528  # 0000-01-01 in days since 1970
_EPOCH_DAY = dt.date(1970, 1, 1)


def with_defaults(column: pa.ChunkedArray | pa.Array, field: DataField) -> pa.ChunkedArray | pa.Array:
    """`column` (already of the field's Arrow type) with its nulls replaced by the field's default."""
    if field.default_value is None or not column.null_count:
        return column
    value = default_scalar(field)
    return column if value is None else pc.fill_null(column, value)


def default_scalar(field: DataField) -> pa.Scalar | None:
    """The field's default as a scalar of its Arrow type (None: no value, e.g. a decimal too
    wide, as in Java); SchemaMismatchError naming the column when the text does not cast."""
    text = field.default_value
    if text.startswith("'") and text.endswith("'") and len(text) > 1:
        text = text[1:-1]
    target = to_arrow(field.type)
    try:
        value = _parse(text, field.type)
    except (ValueError, ArithmeticError, decimal.InvalidOperation) as exc:
        raise SchemaMismatchError(f"column '{field.name}': its default value {field.default_value!r} is not a valid "
                                  f"{field.type.root} value ({exc})") from None
    if isinstance(value, pa.Scalar):
        return value.cast(target)
    return None if value is None else pa.scalar(value, target)


def _parse(text: str, t: DataType):
    root = t.root
    if root == "BOOLEAN":
        if text.lower() in _TRUE | _FALSE:
            return text.lower() in _TRUE
        raise ValueError("expected t, true, y, yes, 1, f, false, n, no or 0")
    if root in _NUMBERS or root == "DECIMAL":
        return _java_number(text, t)
    if root in ("CHAR", "VARCHAR"):
        return _fit(text, t, " ")
    if root in ("BINARY", "VARBINARY"):
        return _fit(text.encode("utf-8"), t, b"\0")
    if root == "DATE":
        if _NUMERIC.fullmatch(text):
            return pa.scalar(_java_number(text, DataType("INT")), pa.int32())
        return _date(text)
    if root == "TIME":
        if _NUMERIC.fullmatch(text):
            return pa.scalar(_java_number(text, DataType("INT")), pa.int32())
        return dt.time.fromisoformat(text)
    if root in ("TIMESTAMP", "TIMESTAMP_LTZ"):
        unit = to_arrow(t).unit
        if _NUMERIC.fullmatch(text) and root == "TIMESTAMP":
            epoch_unit = _EPOCH_UNITS.get(t.precision)
            if epoch_unit is None:
                raise ValueError(f"a number is a timestamp of precision 0, 3, 6 or 9 only, not {t.precision}")
            return pa.scalar(_java_number(text, DataType("BIGINT")), pa.timestamp(epoch_unit))
        return pa.scalar(_timestamp(text, t.precision, unit), pa.timestamp(unit))
    how = "has no cast from text to it" if root == "VARIANT" else "casts text to it as an array, map or row literal"
    raise UnsupportedOperationError(f"a default value for a column of type {root} (Paimon {how}) is not applied "
                                    "here; write the value itself")


def _java_number(text: str, t: DataType):
    """The text cast to an integer, FLOAT/DOUBLE or DECIMAL type as Java's STRING cast does
    (`java_casts`: a DECIMAL rounded HALF_UP, null beyond its precision)."""
    try:
        return java_cast(pa.array([text]), parse_atomic("STRING"), t)[0].as_py()
    except CastRefused as exc:
        raise ValueError(str(exc)) from None


def _date(text: str) -> dt.date | pa.Scalar:
    """Paimon's `DateTimeUtils.parseDate`: what comes before a space, `y[-m[-d]]` each part
    ASCII digits (blanks around it trimmed), a year 0-9999."""
    head = text[:text.index(" ")] if text.find(" ") > 0 else text
    parts = [p.strip(_JAVA_BLANKS) for p in head.split("-", 2)] + ["1", "1"]
    if not all(p.isascii() and p.isdigit() for p in parts):
        raise ValueError("expected y-m-d (ASCII digits)")
    y, m, d = (int(p) for p in parts[:3])
    if y > 9999:
        raise ValueError("a year beyond 9999")
    if y == 0:  # Java's proleptic year 0 (a leap year), which datetime lacks
        return pa.scalar(_YEAR_0 + (dt.date(2000, m, d) - dt.date(2000, 1, 1)).days, pa.int32())
    return dt.date(y, m, d)   # ValueError where Java's isIllegalDate refuses: Feb 30, Apr 31


def _timestamp(text: str, precision: int, unit: str) -> int:
    """Paimon's `parseTimestampData`: `yyyy-M-d[ H:m:[s][.fraction]]`, a day beyond its month's
    last day that last day and 24:00:00 the next midnight (java.time's SMART resolver), the
    fraction cut to the precision; the time since the epoch in `unit`."""
    match = _TIMESTAMP.fullmatch(text)
    if match is None:
        raise ValueError("expected yyyy-M-d[ H:m:s[.fraction]] (a space before the time, up to 9 fraction digits)")
    y, mo, d, h, mi, sec = (int(g) if g else 0 for g in match.groups()[:6])
    nanos = int((match.group(7) or "").ljust(9, "0"))
    if y == 0 or not 1 <= mo <= 12 or not 1 <= d <= 31:
        raise ValueError("no such date")
    next_day = (h, mi, sec, nanos) == (24, 0, 0, 0)
    if h > 23 and not next_day or mi > 59 or sec > 59:
        raise ValueError("no such time of day")
    nanos -= nanos % 10 ** (9 - min(precision, 9))
    day = dt.date(y, mo, min(d, calendar.monthrange(y, mo)[1]))
    seconds = ((day - _EPOCH_DAY).days + next_day) * 86400 + (0 if next_day else h * 3600) + mi * 60 + sec
    return (seconds * 10**9 + nanos) // _UNIT_NS[unit]


def _fit(value, t: DataType, pad):
    """CHAR/BINARY(n) padded to n, every length-bounded type cut at n."""
    length = t.precision
    if len(value) > length:
        return value[:length]
    return value + pad * (length - len(value)) if t.root in ("CHAR", "BINARY") else value
