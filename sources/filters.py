"""Spark's pushed filters -> paimon_streaming filter terms `(column, op, value)`.

A filter is taken over only when our reader evaluates it exactly as Spark would: a top-level
column of a type whose comparisons agree between Spark and Arrow (integers, STRING/VARCHAR,
booleans, dates, decimals), and an operator with the same null semantics. Everything else
(floats: NaN orders differently; timestamps; CHAR (padding); NOT IN; IN with a null; LIKE patterns;
null-safe equality; dates up to 1582-10-15, which PySpark hands over moved) is returned to Spark,
which evaluates it after the scan.
"""
from __future__ import annotations

import datetime as dt
import decimal
from typing import Any, Iterable, Mapping

from paimon_streaming import row_tracking
from paimon_streaming.schema import TableSchema
from paimon_streaming.types import DataType

_PUSHABLE_ROOTS = {"TINYINT", "SMALLINT", "INT", "BIGINT", "VARCHAR", "BOOLEAN", "DATE", "DECIMAL"}
_COMPARISONS = {"EqualTo": "=", "GreaterThan": ">", "GreaterThanOrEqual": ">=", "LessThan": "<",
                "LessThanOrEqual": "<="}

Term = tuple  # (column, op, value)


def _column(schema: TableSchema, attribute: tuple, columns: Mapping[str, str | None],
            left: set[str]) -> tuple[str, DataType] | None:
    if len(attribute) != 1 or attribute[0] in left:
        return None
    name = columns.get(attribute[0])
    for f in (*schema.fields, *(row_tracking.FIELDS if row_tracking.tracks_rows(schema) else ())):
        if f.name == name:
            return (f.name, f.type) if f.type.root in _PUSHABLE_ROOTS else None
    return None


def _value(value: Any, t: DataType) -> tuple[bool, Any]:
    """(ok, value converted to what Arrow compares exactly with the column)."""
    if value is None:
        return False, None
    if t.root == "DECIMAL":
        if isinstance(value, bool) or not isinstance(value, (int, decimal.Decimal)):
            return False, None
        d = decimal.Decimal(value)
        try:
            q = d.quantize(decimal.Decimal(1).scaleb(-t.scale))
        except decimal.InvalidOperation:
            return False, None
        return (q == d), q  # same scale as the column, or not pushed
    if t.root in ("TINYINT", "SMALLINT", "INT", "BIGINT"):
        return (isinstance(value, int) and not isinstance(value, bool)), value
    if t.root == "VARCHAR":
        return isinstance(value, str), value
    if t.root == "BOOLEAN":
        return isinstance(value, bool), value
    if t.root == "DATE":
        return (isinstance(value, dt.date) and not isinstance(value, dt.datetime) and value > _GREGORIAN_START), value
    return False, None


# PySpark hands a DATE literal of 1582-10-05..14 (days its hybrid calendar lacks) over as
# 1582-10-15: `d = DATE '1582-10-10'` pushed would return the 1582-10-15 rows. Dates up to that
# day are left to Spark, which compares them itself.
_GREGORIAN_START = dt.date(1582, 10, 15)


def to_term(flt: Any, schema: TableSchema, columns: Mapping[str, str | None],
            left: set[str] = frozenset()) -> Term | None:
    """The term for one Spark filter, or None when it is not taken over (also any filter on a
    column of `left`). `columns`: the read's column names -> the table columns they read
    (`ReadContext.columns`; a DataFrame's column may read a field renamed since)."""
    kind = type(flt).__name__
    if kind in _COMPARISONS or kind in ("In", "IsNull", "IsNotNull"):
        col = _column(schema, flt.attribute, columns, left)
        if col is None:
            return None
        name, t = col
        if kind == "IsNull":
            return (name, "is null", None)
        if kind == "IsNotNull":
            return (name, "is not null", None)
        if kind == "In":
            converted = [_value(v, t) for v in flt.value]
            if not converted or not all(ok for ok, _ in converted):
                return None
            return (name, "in", [v for _, v in converted])
        ok, value = _value(flt.value, t)
        return (name, _COMPARISONS[kind], value) if ok else None
    if kind == "Not" and type(flt.child).__name__ == "EqualTo":
        term = to_term(flt.child, schema, columns, left)
        return None if term is None else (term[0], "!=", term[2])
    return None


def split_filters(filters: Iterable[Any], schema: TableSchema, columns: Mapping[str, str | None],
                  left: set[str] = frozenset()) -> tuple[list[Term], list[Any]]:
    """(terms taken over, Spark filters left to Spark: also every one on a column of `left`)."""
    terms, rest = [], []
    for f in filters:
        term = to_term(f, schema, columns, left)
        if term is None:
            rest.append(f)
        else:
            terms.append(term)
    return terms, rest
