"""Which buckets of a fixed-bucket table may hold the rows a filter asks for (Java's bucket
selection in its file store scan).

When every disjunct of a filter pins each bucket-key column to `=` or `in` literals, the rows it
matches sit in the buckets those key values hash to, so a point lookup on a primary key reads
one bucket of N instead of all of them. Min/max statistics cannot do this: hashing spreads every
bucket's keys over the whole key range.

Only exact literals select: a value no row of the column can equal (INEXACT) selects no bucket,
and floating-point keys select nothing at all (0.0 and -0.0 compare equal but hash apart). The
caller makes sure the files were hashed with the bucket-key types it passes (`same_key_types`).
"""
from __future__ import annotations

import itertools
import math
from typing import Sequence

import pyarrow as pa

from .bucket import fixed_buckets
from .predicate import INEXACT, Filter, Term, column_literal
from .types import DataField, to_arrow

_MAX_KEYS = 1024  # key combinations a filter may name before every bucket is read instead
_PINNING_OPS = ("=", "==", "in")


def pinned_keys(flt: Filter | None, key_fields: Sequence[DataField]) -> pa.Table | None:
    """The bucket-key values (one row per combination) every row `flt` matches has one of, or
    None when some disjunct leaves a bucket-key column free (or names too many combinations)."""
    if flt is None or flt.disjuncts is None or not key_fields:
        return None
    if any(f.type.root in ("FLOAT", "DOUBLE") for f in key_fields):
        return None
    arrow_types = [to_arrow(f.type) for f in key_fields]
    combinations: list[tuple[pa.Scalar, ...]] = []
    for conjunction in flt.disjuncts:
        per_key = []
        for field, arrow_type in zip(key_fields, arrow_types):
            values = _pinned_values(conjunction, field.name, arrow_type)
            if values is None:
                return None
            per_key.append(values)
        if math.prod(len(v) for v in per_key) + len(combinations) > _MAX_KEYS:
            return None
        combinations.extend(itertools.product(*per_key))
    return pa.table([pa.array([c[i] for c in combinations], type=t) for i, t in enumerate(arrow_types)],
                    names=[f.name for f in key_fields])


def _pinned_values(conjunction: tuple[Term, ...], column: str, arrow_type: pa.DataType) -> set[pa.Scalar] | None:
    """The values one conjunction allows `column`, as scalars of its type (the intersection of
    its `=` and `in` terms on it), or None when none of its terms pins the column."""
    allowed: set[pa.Scalar] | None = None
    for term in conjunction:
        if term.column != column or term.op not in _PINNING_OPS:
            continue
        literals = term.value if term.op == "in" else [term.value]
        exact = set()
        for value in literals:
            scalar = None if value is None else column_literal(value, arrow_type)
            if scalar is not None and scalar is not INEXACT:  # null and INEXACT equal no row
                exact.add(scalar)
        allowed = exact if allowed is None else allowed & exact
    return allowed


def selected_buckets(keys: pa.Table, key_fields: Sequence[DataField], total_buckets: int,
                     function: str) -> frozenset[int]:
    """The buckets of a table of `total_buckets` the rows of `keys` hash to."""
    if keys.num_rows == 0:
        return frozenset()
    buckets = fixed_buckets(keys, [f.name for f in key_fields], [f.type for f in key_fields], total_buckets, function)
    return frozenset(int(b) for b in buckets)
