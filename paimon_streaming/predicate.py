"""Row filters in the form pyarrow.parquet and deltalake use: a list of (column, op, value)
tuples (AND), or a list of such lists (OR of ANDs).

The tuple form can be inspected, so the scan prunes partitions and files with it (min/max
statistics); the same filter becomes an Arrow expression for the rows that remain. A plain
`pyarrow.compute.Expression` is accepted too, applied to rows only.
"""
from __future__ import annotations

import datetime as dt
import decimal
import fractions
import math
import re
from dataclasses import dataclass
from typing import Any, Sequence

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from .binary_row import NanoDatetime, epoch_nanos
from .errors import SchemaMismatchError
from .types import from_arrow

_OPS = {"=", "==", "!=", "<", "<=", ">", ">=", "in", "not in", "is null", "is not null"}


@dataclass(frozen=True)
class Term:
    column: str
    op: str
    value: Any


@dataclass(frozen=True)
class Filter:
    """Disjunction of conjunctions of terms; `expression` filters rows."""
    disjuncts: tuple[tuple[Term, ...], ...] | None
    expression: pc.Expression

    @property
    def columns(self) -> set[str]:
        if self.disjuncts is None:
            return set()
        return {t.column for conj in self.disjuncts for t in conj}


def parse_filter(spec: Any, schema: pa.Schema) -> Filter | None:
    if spec is None:
        return None
    if isinstance(spec, pc.Expression):
        return Filter(None, spec)
    if not isinstance(spec, (list, tuple)) or not spec:
        raise ValueError("filter must be a pyarrow.compute.Expression or a non-empty list of "
                         "(column, op, value) tuples (or a list of such lists for OR)")
    groups = [spec] if isinstance(spec[0], tuple) else spec
    disjuncts = []
    for group in groups:
        terms = []
        for item in group:
            column, op, value = _term_parts(item)
            if column not in schema.names:
                raise SchemaMismatchError(f"filter column '{column}' is not in the table {schema.names}")
            kind = schema.field(column).type
            if op not in ("is null", "is not null") and pa.types.is_nested(kind):
                raise SchemaMismatchError(f"filter column '{column}' is of type {from_arrow(kind)}: its values do not compare "
                                          f"('{op}'); only 'is null' and 'is not null' apply to it")
            terms.append(Term(column, op, _as_typed_digits(plain_literal(from_text(column, value, kind), kind), kind)))
        disjuncts.append(tuple(terms))
    expression = _or([_and([_term_expr(t, schema.field(t.column).type) for t in conj]) for conj in disjuncts])
    return Filter(tuple(disjuncts), expression)


def from_text(column: str, value: Any, arrow_type: pa.DataType, what_value: str = "filter value") -> Any:
    """An ISO text against a DATE, TIME or TIMESTAMP column is the value it names, as SQL casts
    `dt >= '2024-01-01'` (a text with an offset is that instant, which `plain_literal` takes as
    its wall time against a TIMESTAMP column); one that names none is an error naming the
    column. Values of `in` lists too."""
    if isinstance(value, (list, tuple)):
        return type(value)(from_text(column, v, arrow_type, what_value) for v in value)
    if not isinstance(value, str):
        return value
    if pa.types.is_date(arrow_type):
        parse, what = dt.date.fromisoformat, "a date (YYYY-MM-DD)"
    elif pa.types.is_timestamp(arrow_type):
        parse, what = _timestamp_text, "a timestamp (YYYY-MM-DD[ HH:MM:SS[.fffffffff]][+HH:MM])"
    elif pa.types.is_time(arrow_type):
        parse, what = dt.time.fromisoformat, "a time of day (HH:MM:SS[.ffffff])"
    else:
        return value
    try:
        return parse(value.strip())
    except ValueError:
        raise SchemaMismatchError(f"{what_value} {value!r} for column '{column}' ({from_arrow(arrow_type)}) is not "
                                  f"{what}") from None


_BEYOND_MICROSECONDS = re.compile(r"(?P<head>.*[T ]\d\d:\d\d:\d\d\.\d{6})(?P<nanos>\d{1,3})(?P<more>\d*)(?P<tail>.*)")


def _timestamp_text(text: str) -> dt.datetime:
    """ISO text as a datetime; digits 7-9 of its fraction (which datetime.fromisoformat drops)
    kept as a NanoDatetime's nanoseconds."""
    m = _BEYOND_MICROSECONDS.fullmatch(text)
    if m is None:
        return dt.datetime.fromisoformat(text)
    if m["more"].strip("0"):
        raise ValueError("more fractional digits than nanoseconds")
    value = dt.datetime.fromisoformat(m["head"] + m["tail"])
    nanos = int(m["nanos"].ljust(3, "0"))
    return NanoDatetime.of(value, nanos) if nanos else value


def plain_literal(value: Any, arrow_type: pa.DataType) -> Any:
    """A literal as the plain Python value it holds, for a column of `arrow_type`: numpy scalars
    (np.int64, np.float32, np.bool_, np.datetime64; what pandas and polars hand back) as ints,
    floats, bools and datetimes (a float32 2.5 compared as Arrow's cast would see 2), one against
    a DECIMAL as the decimal its shortest text shows; a pandas.Timestamp as a datetime keeping
    its nanoseconds; an instant against a TIMESTAMP (wall-time) column as the wall time it shows
    in its own zone, as `write_arrow` stores it. Values of `in` lists too."""
    if isinstance(value, (list, tuple)):
        return type(value)(plain_literal(v, arrow_type) for v in value)
    if isinstance(value, np.generic):
        if isinstance(value, np.floating) and pa.types.is_decimal(arrow_type) and np.isfinite(value):
            return decimal.Decimal(str(value))
        value = _datetime64_value(value) if isinstance(value, np.datetime64) else value.item()
    if isinstance(value, dt.datetime):
        if value.tzinfo is not None and pa.types.is_timestamp(arrow_type) and arrow_type.tz is None:
            value = _with_nanos(value.replace(tzinfo=None), getattr(value, "nanosecond", 0))
        elif type(value) not in (dt.datetime, NanoDatetime):  # pandas.Timestamp
            value = _with_nanos(dt.datetime(value.year, value.month, value.day, value.hour, value.minute, value.second,
                                            value.microsecond, value.tzinfo, fold=value.fold),
                                getattr(value, "nanosecond", 0))
    return value


def _with_nanos(value: dt.datetime, nanos: int) -> dt.datetime:
    plain = dt.datetime(value.year, value.month, value.day, value.hour, value.minute, value.second,
                        value.microsecond, value.tzinfo, fold=value.fold)
    return NanoDatetime.of(plain, nanos) if nanos else plain


def _datetime64_value(value: np.datetime64) -> Any:
    """np.datetime64 as a date (unit of days or coarser), a datetime (finer), None for NaT."""
    if np.isnat(value):
        return None
    unit = np.datetime_data(value.dtype)[0]
    if unit in ("Y", "M", "W", "D"):
        return value.astype("datetime64[D]").item()
    nanos = int(value.astype("datetime64[ns]").astype(np.int64)) if unit == "ns" else \
        int(value.astype("datetime64[us]").astype(np.int64)) * 1000
    return _with_nanos(_EPOCH + dt.timedelta(microseconds=nanos // 1000), nanos % 1000)


_EPOCH = dt.datetime(1970, 1, 1)
_UNIT_NANOS = {"s": 10 ** 9, "ms": 10 ** 6, "us": 10 ** 3, "ns": 1}


def timestamp_scalar(value: dt.datetime, arrow_type: pa.DataType) -> Any:
    """`value` as a scalar of a TIMESTAMP column's type when it is exactly one of its values,
    else INEXACT (finer than the column's unit, or beyond its range)."""
    units, rest = divmod(epoch_nanos(value), _UNIT_NANOS[arrow_type.unit])
    try:
        return INEXACT if rest else pa.scalar(units, type=arrow_type)
    except (pa.ArrowInvalid, OverflowError):
        return INEXACT


def _as_typed_digits(value: Any, arrow_type: pa.DataType) -> Any:
    """A float literal against a DECIMAL column is the decimal its repr shows (0.1, not the
    double nearest to it), for statistics and rows alike; values of `in` lists too."""
    if not pa.types.is_decimal(arrow_type):
        return value
    if isinstance(value, (list, tuple)):
        return type(value)(_as_typed_digits(v, arrow_type) for v in value)
    if isinstance(value, float) and math.isfinite(value):
        return decimal.Decimal(repr(value))
    return value


def _term_parts(item: Any) -> tuple[str, str, Any]:
    """(column, op, value); a comparison without its value (a shell variable that expanded to
    nothing) is an error, not a term that matches no row."""
    if not isinstance(item, tuple) or len(item) not in (2, 3):
        raise ValueError(f"filter term {item!r} is not a (column, op, value) tuple")
    column, op = item[0], str(item[1]).lower()
    if op not in _OPS:
        raise ValueError(f"filter operator {item[1]!r} is not one of {sorted(_OPS)}")
    if op in ("is null", "is not null"):
        if len(item) == 3 and item[2] is not None:
            raise ValueError(f"filter term {item!r}: '{op}' takes no value")
        return column, op, None
    if len(item) == 2:
        raise ValueError(f"filter term {item!r} has no value to compare with (a null is written None)")
    if op in ("in", "not in") and not isinstance(item[2], (list, tuple, set, frozenset)):
        raise ValueError(f"filter term {item!r}: '{op}' takes a list of values")
    return column, op, item[2]


class _Inexact:
    """A literal no value of the column equals, though it compares with them: a fraction against
    an integer column, a double between two FLOATs, an instant finer than the column's unit, a
    time of day against a DATE, NaN (which equals nothing), an instant beyond the column's range."""


INEXACT = _Inexact()


def column_literal(value: Any, arrow_type: pa.DataType) -> Any:
    """`value` as a scalar of the column's type when it is exactly one of its values; INEXACT
    when no value of the type equals it; None when it is of another kind (a string against a
    number), which `_of_column` refuses."""
    numeric = isinstance(value, (int, float, decimal.Decimal)) and not isinstance(value, bool)
    if (pa.types.is_integer(arrow_type) or pa.types.is_floating(arrow_type)) and numeric:
        if not _finite(value):
            return scalar_or_inexact(value, arrow_type) if pa.types.is_floating(arrow_type) and not _is_nan(value) \
                else INEXACT
        return scalar_or_inexact(int(value) if pa.types.is_integer(arrow_type) and value == int(value) else value,
                                 arrow_type)
    if numeric and _is_temporal(arrow_type):
        return None  # Arrow would take 20240105 as days (microseconds, ...) since 1970: refused
    if pa.types.is_date(arrow_type) and isinstance(value, dt.datetime):
        if value.tzinfo is not None:
            return None
        return pa.scalar(value.date(), arrow_type) if value == dt.datetime.combine(value.date(), dt.time()) \
            and not getattr(value, "nanosecond", 0) else INEXACT
    if pa.types.is_timestamp(arrow_type) and isinstance(value, dt.datetime):
        return timestamp_scalar(value, arrow_type)
    try:
        scalar = pa.scalar(value, type=arrow_type)
    except (pa.ArrowInvalid, pa.ArrowTypeError, TypeError, ValueError, OverflowError):
        return INEXACT if pa.types.is_decimal(arrow_type) and numeric else None
    if pa.types.is_time(arrow_type) and arrow_type.unit in ("s", "ms") and isinstance(value, dt.time):
        return scalar if scalar.cast(pa.time64("us")).value == pa.scalar(value, type=pa.time64("us")).value \
            else INEXACT
    return scalar


def _is_temporal(arrow_type: pa.DataType) -> bool:
    return pa.types.is_date(arrow_type) or pa.types.is_timestamp(arrow_type) or pa.types.is_time(arrow_type)


def _beside_temporal(field: pc.Expression, op: str, value: Any, arrow_type: pa.DataType) -> pc.Expression:
    """`field op value` (op < <= > >=) for a date or time literal no value of the column equals
    (finer than its unit: a nanosecond against TIMESTAMP(6), 10:30 against a DATE): the column's
    values lie on a grid of its unit, so `x > v` is `x > below` and `x < v` is `x <= below`,
    `below` the grid point just under `v` (none: `v` lies beyond the column's range)."""
    if pa.types.is_timestamp(arrow_type):
        units = epoch_nanos(value) // _UNIT_NANOS[arrow_type.unit]
        below = pa.scalar(units, type=arrow_type) if -2 ** 63 <= units < 2 ** 63 else None
    elif pa.types.is_time(arrow_type):
        nanos = ((value.hour * 60 + value.minute) * 60 + value.second) * 10 ** 9 + value.microsecond * 1000
        below = pa.scalar(nanos // _UNIT_NANOS[arrow_type.unit], type=arrow_type)
    else:
        below = pa.scalar(value.date(), type=arrow_type)
    if below is None:
        return field.is_valid() if (op in ("<", "<=")) == (units > 0) else pc.scalar(False)
    return field <= below if op in ("<", "<=") else field > below


def scalar_or_inexact(value: int | float | decimal.Decimal, arrow_type: pa.DataType) -> Any:
    """A number as a scalar of an integer or floating column type if it is exactly one of its
    values (Arrow itself truncates 2.5 to 2 and rounds 0.1 to the nearest FLOAT)."""
    try:
        scalar = pa.scalar(value if pa.types.is_integer(arrow_type) else float(value), type=arrow_type)
    except (pa.ArrowInvalid, pa.ArrowTypeError, TypeError, ValueError, OverflowError):
        return INEXACT
    held = scalar.as_py()
    if isinstance(value, float) and math.isinf(value):
        return scalar if held == value else INEXACT
    return scalar if held is not None and _finite(held) and fractions.Fraction(held) == fractions.Fraction(value) \
        else INEXACT


def _finite(value: Any) -> bool:
    if isinstance(value, decimal.Decimal):
        return value.is_finite()
    return not isinstance(value, float) or math.isfinite(value)


def _is_nan(value: Any) -> bool:
    return isinstance(value, float) and math.isnan(value) or isinstance(value, decimal.Decimal) and value.is_nan()


def _comparison(column: str, op: str, value: Any, arrow_type: pa.DataType) -> pc.Expression:
    """`column op value`, exact whatever the literal's type (see `column_literal`)."""
    field = pc.field(column)
    if value is None:
        return _OPS_EXPR[op](field, pa.scalar(None, type=arrow_type))  # null: true for no row
    literal = _of_column(column, value, arrow_type)
    if literal is not INEXACT:
        return _OPS_EXPR[op](field, literal)
    if op in ("=", "=="):
        return pc.scalar(False)
    if op == "!=":
        return field.is_valid()
    if _is_temporal(arrow_type):
        return _beside_temporal(field, op, value, arrow_type)
    if _is_nan(value):
        return pc.scalar(False)
    if not _finite(value):  # an infinity: above (or below) every value of the column
        holds = op in ("<", "<=") if value > 0 else op in (">", ">=")
        return field.is_valid() if holds else pc.scalar(False)
    if pa.types.is_decimal(arrow_type):
        return _beside_decimals(field, op, decimal.Decimal(value), arrow_type)
    neighbour, below = _neighbour(value, arrow_type)
    if below:  # neighbour < value, and no value of the type between them
        return field <= neighbour if op in ("<", "<=") else field > neighbour
    return field < neighbour if op in ("<", "<=") else field >= neighbour


def _beside_decimals(field: pc.Expression, op: str, d: decimal.Decimal, arrow_type: pa.DataType) -> pc.Expression:
    """`field op d` (op < <= > >=) for a literal that no value of the DECIMAL column equals (more
    digits than its scale, 1e-300, or beyond its precision, 1e40): the column's values lie on a
    grid of its scale, so `x > d` is `x > below` and `x < d` is `x <= below`, `below` the grid
    point just under `d`."""
    step = decimal.Decimal(1).scaleb(-arrow_type.scale)
    with decimal.localcontext(prec=80):  # exact for 38 digits (the default context keeps 28)
        largest = decimal.Decimal(10) ** (arrow_type.precision - arrow_type.scale) - step
        if abs(d) > largest:  # beyond every value of the column
            return field.is_valid() if (op in ("<", "<=")) == (d > 0) else pc.scalar(False)
        below = pa.scalar(d.quantize(step, rounding=decimal.ROUND_FLOOR), type=arrow_type)
    return field <= below if op in ("<", "<=") else field > below


def _neighbour(value: int | float | decimal.Decimal, arrow_type: pa.DataType) -> tuple[pa.Scalar, bool]:
    """A value of the integer or floating type next to `value` (none of the type lies between
    them), and whether it is below `value`."""
    if pa.types.is_integer(arrow_type):
        info = np.iinfo(arrow_type.to_pandas_dtype())
        if value < info.min:
            return pa.scalar(int(info.min), type=arrow_type), False
        if value > info.max:
            return pa.scalar(int(info.max), type=arrow_type), True
        return pa.scalar(math.floor(value), type=arrow_type), True
    try:
        nearest = float(value)
    except OverflowError:  # an integer beyond every double (copysign would convert it again)
        nearest = math.inf if value > 0 else -math.inf
    if arrow_type.bit_width == 32:
        with np.errstate(over="ignore"):
            nearest = float(np.float32(nearest))  # one of the two FLOATs around the value
    below = nearest == -math.inf or math.isfinite(nearest) and fractions.Fraction(nearest) < fractions.Fraction(value)
    return pa.scalar(nearest, type=arrow_type), below


_OPS_EXPR = {"=": lambda f, v: f == v, "==": lambda f, v: f == v, "!=": lambda f, v: f != v,
             "<": lambda f, v: f < v, "<=": lambda f, v: f <= v, ">": lambda f, v: f > v, ">=": lambda f, v: f >= v}


def _membership(column: str, op: str, values: list, arrow_type: pa.DataType) -> pc.Expression:
    """`in` / `not in` as SQL has them: a null never equals anything (`x not in (1, null)` holds
    for no row, `x in (1, null)` only for 1); each value compares as `=` does (0.0 = -0.0, NaN
    equals nothing, a value the column cannot hold equals nothing)."""
    field = pc.field(column)
    if op == "not in" and any(v is None for v in values):
        return pc.scalar(False)
    literals = [_of_column(column, v, arrow_type) for v in values if v is not None]
    held = [literal for literal in literals if literal is not INEXACT]
    if pa.types.is_floating(arrow_type):  # Arrow's is_in matches floats by their bits: -0.0 is not 0.0
        held += [pa.scalar(-h.as_py(), type=arrow_type) for h in held if h.as_py() == 0]
    contained = field.isin(pa.array([h.as_py() for h in held], type=arrow_type)) if held else pc.scalar(False)
    return contained if op == "in" else field.is_valid() & ~contained


def _of_column(column: str, value: Any, arrow_type: pa.DataType) -> Any:
    """`column_literal`, refusing a literal of another kind than the column's (text against a
    number, a number or a boolean against text) with an error naming both, where Arrow would
    raise its own while reading ("no kernel matching input types (double, string)")."""
    literal = column_literal(value, arrow_type)
    if literal is None:
        hint = "; give a date or time as ISO text ('2024-01-05', '2024-01-05 10:30:00') or a datetime value" \
            if _is_temporal(arrow_type) else ""
        raise SchemaMismatchError(f"filter value {value!r} ({type(value).__name__}) does not compare with column "
                                  f"'{column}' ({from_arrow(arrow_type)}){hint}")
    return literal


def _term_expr(t: Term, arrow_type: pa.DataType) -> pc.Expression:
    if t.op == "is null":
        return pc.field(t.column).is_null()
    if t.op == "is not null":
        return pc.field(t.column).is_valid()
    if t.op in ("in", "not in"):
        return _membership(t.column, t.op, list(t.value), arrow_type)
    return _comparison(t.column, t.op, t.value, arrow_type)


def _and(exprs: Sequence[pc.Expression]) -> pc.Expression:
    out = exprs[0]
    for e in exprs[1:]:
        out = out & e
    return out


def _or(exprs: Sequence[pc.Expression]) -> pc.Expression:
    out = exprs[0]
    for e in exprs[1:]:
        out = out | e
    return out


def compare_values(a: Any, b: Any) -> int | None:
    """-1, 0 or 1 as a < b, a == b, a > b; None when they do not compare. Two floats compare as
    Java's Double.compare (the order Paimon's statistics are kept in): NaN above everything and
    equal to itself, -0.0 below 0.0; Python's own comparisons would call NaN equal to anything,
    and a NaN bound would then prune files it must not. A float and an integer (or a Decimal)
    compare by their exact values (2**53 + 1 > 2.0**53), NaN above them."""
    if isinstance(a, float) and isinstance(b, float):
        return _double_compare(a, b)
    if isinstance(a, dt.datetime) and isinstance(b, dt.datetime):  # to the nanosecond (NanoDatetime)
        a, b = (_with_nanos(a, 0), getattr(a, "nanosecond", 0)), (_with_nanos(b, 0), getattr(b, "nanosecond", 0))
    if isinstance(a, float) or isinstance(b, float):
        numbers = (int, float, decimal.Decimal)
        if isinstance(a, numbers) and isinstance(b, numbers) and not isinstance(a, bool) and not isinstance(b, bool):
            if _is_nan(a) or _is_nan(b):
                return (_is_nan(a) > _is_nan(b)) - (_is_nan(a) < _is_nan(b))
            return (a > b) - (a < b)  # Python compares an int or a Decimal with a float exactly
    try:
        return (a > b) - (a < b)
    except TypeError:
        return None


def _double_compare(a: float, b: float) -> int:
    if a < b:
        return -1
    if a > b:
        return 1
    a_nan, b_nan = math.isnan(a), math.isnan(b)
    if a_nan or b_nan:
        return (a_nan > b_nan) - (a_nan < b_nan)
    a_sign, b_sign = math.copysign(1.0, a), math.copysign(1.0, b)
    return (a_sign > b_sign) - (a_sign < b_sign)




def term_may_match(t: Term, lo: Any, hi: Any, null_count: int | None, row_count: int) -> bool:
    """Whether any row with values in [lo, hi] (None = unknown) could satisfy the term."""
    if t.op == "is null":
        return null_count is None or null_count > 0
    if t.op == "is not null":
        return null_count is None or null_count < row_count
    if null_count is not None and null_count == row_count:
        return False  # every value is null: no comparison matches
    if lo is None or hi is None:
        return True
    values = list(t.value) if t.op in ("in", "not in") else [t.value]
    if t.op == "not in" or t.op == "!=":
        # compare_values, not `in`: Python's == takes a NanoDatetime for its microsecond; a NaN
        # literal rules nothing out (NaN != NaN holds for every row, as the row filter says)
        return not (compare_values(lo, hi) == 0 and
                    any(compare_values(lo, v) == 0 and not (isinstance(v, float) and v != v) for v in values))
    results = []
    for v in values:
        # A zero literal is both zeros: bounds are in Double.compare's order (-0.0 < 0.0), and a
        # comparison with a value is IEEE's (-0.0 = 0.0), so `x < 0` is `x < -0.0` there, ...
        zero = isinstance(v, (int, float, decimal.Decimal)) and not isinstance(v, bool) and v == 0
        least, most = (-0.0, 0.0) if zero else (v, v)
        c_lo, c_hi = compare_values(most, lo), compare_values(least, hi)
        if c_lo is None or c_hi is None:
            return True
        if t.op in ("=", "==", "in"):
            results.append(c_lo >= 0 and c_hi <= 0)
        elif t.op == "<":
            results.append(compare_values(least, lo) > 0)
        elif t.op == "<=":
            results.append(c_lo >= 0)
        elif t.op == ">":
            results.append(compare_values(most, hi) < 0)
        elif t.op == ">=":
            results.append(c_hi <= 0)
    return any(results)


def may_match(flt: Filter | None, stats: dict[str, tuple[Any, Any, int | None]], row_count: int) -> bool:
    """Evaluate a filter against per-column (min, max, null_count) stats; unknown columns match."""
    if flt is None or flt.disjuncts is None:
        return True
    for conj in flt.disjuncts:
        if all(t.column not in stats or term_may_match(t, *stats[t.column], row_count) for t in conj):
            return True
    return False
