"""Column default values (a field's `defaultValue` in the schema, Paimon 1.3+).

Java's writers (TableWriteImpl with DefaultValueRow, Paimon 1.4) give every null of a
top-level column that has a default the default instead, for every row they write, NOT NULL
columns included (a missing value there is not an error). The default is text, cast to the
column's type as Paimon casts a STRING (DefaultValueUtils: surrounding single quotes removed
first), so the same text gives the same value here:

- BOOLEAN: t/true/y/yes/1 or f/false/n/no/0, any case;
- integers: optional sign and digits, a fraction ignored (`12.7` is 12), out of range refused;
- DECIMAL(p, s): rounded half up to s digits; more than p digits gives no default (null);
- CHAR(n)/BINARY(n) padded to n, CHAR/VARCHAR/BINARY/VARBINARY cut at n;
- DATE/TIME: ISO text, or a number of days/milliseconds; TIMESTAMP(p): ISO text, or a number
  of seconds (p 0), milliseconds (3), microseconds (6) or nanoseconds (9) since the epoch;
- TIMESTAMP_LTZ: ISO text taken in UTC (Java takes it in the JVM's default zone: UTC on the
  servers this is tested for).
ARRAY, MAP, ROW and other nested defaults are refused at write, naming the column.
"""
from __future__ import annotations

import datetime as dt
import decimal
import re

import pyarrow as pa
import pyarrow.compute as pc

from .errors import SchemaMismatchError, UnsupportedOperationError
from .types import DataField, DataType, to_arrow

_TRUE, _FALSE = {"t", "true", "y", "yes", "1"}, {"f", "false", "n", "no", "0"}
_INTEGER = re.compile(r"([+-]?)(\d*)(?:\.\d*)?")
_INT_BITS = {"TINYINT": 8, "SMALLINT": 16, "INT": 32, "BIGINT": 64}
_EPOCH_UNITS = {0: "s", 3: "ms", 6: "us", 9: "ns"}
_EPOCH = dt.datetime(1970, 1, 1)


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
    if root in _INT_BITS:
        return _integer(text, _INT_BITS[root])
    if root in ("FLOAT", "DOUBLE"):
        return float(text)
    if root == "DECIMAL":
        value = decimal.Decimal(text).quantize(decimal.Decimal(1).scaleb(-t.scale), rounding=decimal.ROUND_HALF_UP)
        return None if len(value.as_tuple().digits) > t.precision and value != 0 else value
    if root in ("CHAR", "VARCHAR"):
        return _fit(text, t, " ")
    if root in ("BINARY", "VARBINARY"):
        return _fit(text.encode("utf-8"), t, b"\0")
    if root == "DATE":
        return dt.date(1970, 1, 1) + dt.timedelta(days=_integer(text, 32)) if text.isdigit() \
            else dt.date.fromisoformat(text)
    if root == "TIME":
        if text.isdigit():
            return pa.scalar(_integer(text, 32), pa.int32())
        return dt.time.fromisoformat(text)
    if root in ("TIMESTAMP", "TIMESTAMP_LTZ"):
        if text.isdigit() and root == "TIMESTAMP":
            unit = _EPOCH_UNITS.get(t.precision)
            if unit is None:
                raise ValueError(f"a number is a timestamp of precision 0, 3, 6 or 9 only, not {t.precision}")
            return pa.scalar(_integer(text, 64), pa.timestamp(unit))
        return pa.scalar(text).cast(pa.timestamp("ns"))
    how = "has no cast from text to it" if root == "VARIANT" else "casts text to it as an array, map or row literal"
    raise UnsupportedOperationError(f"a default value for a column of type {root} (Paimon {how}) is not applied "
                                    "here; write the value itself")


def _integer(text: str, bits: int) -> int:
    """Paimon's (Hive's) integer parse: sign and digits, a fraction's digits ignored."""
    match = _INTEGER.fullmatch(text)
    if not match or not match.group(2):
        raise ValueError("not an integer")
    value = int(match.group(1) + match.group(2))
    if not -(1 << (bits - 1)) <= value < 1 << (bits - 1):
        raise ValueError(f"out of range for {bits} bits")
    return value


def _fit(value, t: DataType, pad):
    """CHAR/BINARY(n) padded to n, every length-bounded type cut at n."""
    length = t.precision
    if len(value) > length:
        return value[:length]
    return value + pad * (length - len(value)) if t.root in ("CHAR", "BINARY") else value
