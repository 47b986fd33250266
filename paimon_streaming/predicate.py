"""Row filters in the form pyarrow.parquet and deltalake use: a list of (column, op, value)
tuples (AND), or a list of such lists (OR of ANDs).

The tuple form can be inspected, so the scan prunes partitions and files with it (min/max
statistics); the same filter becomes an Arrow expression for the rows that remain. A plain
`pyarrow.compute.Expression` is accepted too, applied to rows only.
"""
from __future__ import annotations

import decimal
import math
from dataclasses import dataclass
from typing import Any, Sequence

import pyarrow as pa
import pyarrow.compute as pc

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
            terms.append(Term(column, op, value))
        disjuncts.append(tuple(terms))
    expression = _or([_and([_term_expr(t, schema.field(t.column).type) for t in conj]) for conj in disjuncts])
    return Filter(tuple(disjuncts), expression)


def _term_parts(item: Any) -> tuple[str, str, Any]:
    if not isinstance(item, tuple) or len(item) not in (2, 3):
        raise ValueError(f"filter term {item!r} is not a (column, op, value) tuple")
    column, op = item[0], str(item[1]).lower()
    if op not in _OPS:
        raise ValueError(f"filter operator {item[1]!r} is not one of {sorted(_OPS)}")
    return column, op, item[2] if len(item) == 3 else None


def _typed(column: str, value: Any, arrow_type: pa.DataType) -> tuple[pc.Expression, Any]:
    """The column and the literal, typed so Arrow compares them exactly.

    Arrow compares a decimal column with a literal of another scale wrongly, so literals are
    converted to the column's type; a decimal literal with more digits than the column makes
    both sides decimals of the literal's scale instead.
    """
    field = pc.field(column)
    try:
        return field, pa.scalar(value, type=arrow_type)
    except (pa.ArrowInvalid, pa.ArrowTypeError, TypeError, ValueError, OverflowError):
        pass
    if pa.types.is_decimal(arrow_type) and isinstance(value, (decimal.Decimal, int, float)):
        scale = max(arrow_type.scale, -decimal.Decimal(str(value)).as_tuple().exponent)
        wide = pa.decimal128(38, scale)
        return field.cast(wide), pa.scalar(decimal.Decimal(str(value)), type=wide)
    return field, value


def _term_expr(t: Term, arrow_type: pa.DataType) -> pc.Expression:
    if t.op == "is null":
        return pc.field(t.column).is_null()
    if t.op == "is not null":
        return pc.field(t.column).is_valid()
    if t.op in ("in", "not in"):
        values = list(t.value)
        try:
            contained = pc.field(t.column).isin(pa.array(values, type=arrow_type))
        except (pa.ArrowInvalid, pa.ArrowTypeError, TypeError, ValueError, OverflowError):
            contained = pc.field(t.column).isin(values)
        return contained if t.op == "in" else ~contained
    f, v = _typed(t.column, t.value, arrow_type)
    return {"=": f == v, "==": f == v, "!=": f != v, "<": f < v, "<=": f <= v, ">": f > v, ">=": f >= v}[t.op]


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
    """-1, 0 or 1 as a < b, a == b, a > b; None when they do not compare. Numbers with a float
    among them compare as Java's Double.compare (the order Paimon's statistics are kept in):
    NaN above everything and equal to itself, -0.0 below 0.0; Python's own comparisons would
    call NaN equal to anything, and a NaN bound would then prune files it must not."""
    if isinstance(a, float) or isinstance(b, float):
        if isinstance(a, (int, float)) and isinstance(b, (int, float)) \
                and not isinstance(a, bool) and not isinstance(b, bool):
            return _double_compare(float(a), float(b))
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
        return not (compare_values(lo, hi) == 0 and lo in values)
    results = []
    for v in values:
        c_lo, c_hi = compare_values(v, lo), compare_values(v, hi)
        if c_lo is None or c_hi is None:
            return True
        if t.op in ("=", "==", "in"):
            results.append(c_lo >= 0 and c_hi <= 0)
        elif t.op == "<":
            results.append(c_lo > 0)
        elif t.op == "<=":
            results.append(c_lo >= 0)
        elif t.op == ">":
            results.append(c_hi < 0)
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
