"""Row filters in the form pyarrow.parquet and deltalake use: a list of (column, op, value)
tuples (AND), or a list of such lists (OR of ANDs).

The tuple form can be inspected, so the scan prunes partitions and files with it (min/max
statistics); the same filter becomes an Arrow expression for the rows that remain. A plain
`pyarrow.compute.Expression` is accepted too, applied to rows only.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Sequence

import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.parquet as pq

from .errors import SchemaMismatchError

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
            terms.append(Term(column, op, value))
        disjuncts.append(tuple(terms))
    expression = pq.filters_to_expression([[(t.column, _pq_op(t.op), t.value) for t in conj]
                                           for conj in disjuncts]) if _all_pq(disjuncts) else \
        _or([_and([_term_expr(t) for t in conj]) for conj in disjuncts])
    return Filter(tuple(disjuncts), expression)


def _term_parts(item: Any) -> tuple[str, str, Any]:
    if not isinstance(item, tuple) or len(item) not in (2, 3):
        raise ValueError(f"filter term {item!r} is not a (column, op, value) tuple")
    column, op = item[0], str(item[1]).lower()
    if op not in _OPS:
        raise ValueError(f"filter operator {item[1]!r} is not one of {sorted(_OPS)}")
    return column, op, item[2] if len(item) == 3 else None


def _all_pq(disjuncts) -> bool:
    return all(t.op not in ("is null", "is not null") for conj in disjuncts for t in conj)


def _pq_op(op: str) -> str:
    return "=" if op == "==" else op


def _term_expr(t: Term) -> pc.Expression:
    f = pc.field(t.column)
    if t.op == "is null":
        return f.is_null()
    if t.op == "is not null":
        return f.is_valid()
    if t.op == "in":
        return f.isin(list(t.value))
    if t.op == "not in":
        return ~f.isin(list(t.value))
    return {"=": f == t.value, "==": f == t.value, "!=": f != t.value, "<": f < t.value,
            "<=": f <= t.value, ">": f > t.value, ">=": f >= t.value}[t.op]


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


def _cmp(a: Any, b: Any) -> int | None:
    try:
        return (a > b) - (a < b)
    except TypeError:
        return None


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
        return not (_cmp(lo, hi) == 0 and lo in values)
    results = []
    for v in values:
        c_lo, c_hi = _cmp(v, lo), _cmp(v, hi)
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
