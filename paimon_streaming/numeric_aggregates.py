"""Paimon's numeric aggregate functions (`sum`, `product`, and `min` / `max` of floats), exact
to Java's results (aggregation merge engine).

Java folds a key's rows one at a time (`FieldSumAgg`, `FieldProductAgg`, `FieldMaxAgg`,
`FieldMinAgg` of Paimon 1.4), and with floats and decimals the order shows:

* FLOAT adds and multiplies in float, DOUBLE in double, step by step from the first non-null
  value (so a sum of -0.0 is -0.0); Arrow's hash sums run in double and pairwise. Here: a
  sequential fold, vectorized across keys one position at a time (a key's n-th value for every
  key at once), and `numpy.ufunc.accumulate` (sequential) for keys with many values.
* DECIMAL: a step whose result needs more digits than the column has gives null, and the next
  value starts again from itself. Here the exact hash sum answers every key whose absolute
  values sum below the limit (no step can overflow); the others are folded step by step.
  Paimon 1.4 skips that check for DECIMAL up to 18 digits (it adds unscaled longs), keeping a
  value the column cannot hold; we give null there too (README, "Aggregation").
* Integers wrap at their width, in any order alike. A retraction subtracts (`sum`) or divides
  (`product`: integers truncate toward zero, a division by zero is an error).
* `min` / `max` of floats order as Java's `Double.compare`: -0.0 < 0.0 and NaN above every
  value (Arrow's ignore NaN and take -0.0 = 0.0).
"""
from __future__ import annotations

from typing import Callable

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from .errors import PaimonError

# Keys with more values than this are folded one key at a time with `accumulate`.
_LONG_GROUP = 64
# Decimal sums run in DECIMAL(60, s): any 38-digit value, and a sum of two, fit.
_WORK_DIGITS = 60


def sum_of(col: pa.ChunkedArray, add: np.ndarray, retract: np.ndarray, gid: np.ndarray, groups: int) -> pa.Array:
    """Per group (`gid` ascending, `groups` in all) the sum of the `add` rows minus the
    `retract` rows, null where no row has a value."""
    t = col.type
    col = col.combine_chunks() if isinstance(col, pa.ChunkedArray) else col
    if pa.types.is_integer(t):
        wide = col.cast(pa.int64())
        signed = _null_where(pc.if_else(pa.array(retract), pc.negate(wide), wide), ~(add | retract))
        total = _hash_sum(signed, gid, groups)
        return total.cast(pa.int64()).cast(t, safe=False)
    if pa.types.is_decimal(t):
        return _decimal_sum(col, add, retract, gid, groups)
    values = col.to_numpy(zero_copy_only=False).astype(np.float32 if pa.types.is_float32(t) else np.float64)
    valid = (add | retract) & pc.is_valid(col).to_numpy(zero_copy_only=False)
    values = np.where(retract, -values, values)
    with np.errstate(invalid="ignore", over="ignore"):  # overflow to infinity, inf - inf to NaN: Java's doubles
        out, has = _fold(values, valid, np.zeros(len(values), bool), gid, groups, np.add, np.subtract)
    return pa.array(out, t, mask=~has)


def product_of(col: pa.ChunkedArray, add: np.ndarray, retract: np.ndarray, gid: np.ndarray, groups: int,
               field: str) -> pa.Array:
    """Per group the product of the `add` rows, divided by the `retract` rows (Java's retract)."""
    t = col.type
    col = col.combine_chunks() if isinstance(col, pa.ChunkedArray) else col
    valid = (add | retract) & pc.is_valid(col).to_numpy(zero_copy_only=False)
    if pa.types.is_integer(t):
        values = pc.fill_null(col, 0).to_numpy(zero_copy_only=False).astype(np.int64)
        if (_from_first_start(valid, retract, gid, groups) & retract & (values == 0)).any():
            raise PaimonError(f"aggregate function 'product' of field '{field}' cannot retract 0 (a division by "
                              "zero, which Paimon refuses too)")
        bits = t.bit_width
        wrap = (lambda a: a) if bits == 64 else (lambda a: _wrap(a, bits))
        out, has = _fold(values, valid, retract, gid, groups, lambda a, b: wrap(a * b),
                         lambda a, b: wrap(_java_divide(a, b)))
        return pa.array(out, pa.int64(), mask=~has).cast(t, safe=False)
    values = col.to_numpy(zero_copy_only=False).astype(np.float32 if pa.types.is_float32(t) else np.float64)
    with np.errstate(divide="ignore", invalid="ignore", over="ignore"):
        out, has = _fold(values, valid, retract, gid, groups, np.multiply, np.divide)
    return pa.array(out, t, mask=~has)


def float_extreme(col: pa.ChunkedArray, rows: np.ndarray, gid: np.ndarray, groups: int, func: str) -> pa.Array:
    """`min` or `max` of the float `rows` per group in Java's total order (`Double.compare`)."""
    t = col.type
    col = col.combine_chunks() if isinstance(col, pa.ChunkedArray) else col
    width = np.float32 if pa.types.is_float32(t) else np.float64
    bits = np.int32 if width is np.float32 else np.int64
    values = col.to_numpy(zero_copy_only=False).astype(width)
    valid = rows & pc.is_valid(col).to_numpy(zero_copy_only=False)
    values = np.where(np.isnan(values), width("nan"), values)   # one NaN, as doubleToLongBits
    raw = values.view(bits)
    keys = raw ^ ((raw >> (raw.itemsize * 8 - 1)) & np.iinfo(bits).max)   # a total order; an involution
    picked = _hash_sum(pa.array(keys.astype(np.int64), mask=~valid), gid, groups, func)
    has = pc.is_valid(picked).to_numpy(zero_copy_only=False)
    chosen = pc.fill_null(picked, 0).to_numpy(zero_copy_only=False).astype(bits)
    out = (chosen ^ ((chosen >> (chosen.itemsize * 8 - 1)) & np.iinfo(bits).max)).view(width)
    return pa.array(out, t, mask=~has)


# ---- the sequential fold -----------------------------------------------------------------------------
def _fold(values: np.ndarray, valid: np.ndarray, inverse: np.ndarray, gid: np.ndarray, groups: int,
          op: Callable, inverse_op: Callable) -> tuple[np.ndarray, np.ndarray]:
    """Per group, the `valid` values folded in order from the first that is not `inverse` (`op`,
    or `inverse_op` where `inverse`: an inverse step of a null accumulator keeps it null, as
    Java's `retract`); and which groups had a value."""
    valid = _from_first_start(valid, inverse, gid, groups)
    idx = np.flatnonzero(valid)
    counts = np.bincount(gid[idx], minlength=groups)
    first = np.concatenate([[0], np.cumsum(counts)[:-1]]).astype(np.int64)
    has = counts > 0
    out = np.zeros(groups, values.dtype)
    out[has] = values[idx[first[has]]]
    long = counts > _LONG_GROUP
    for k in range(1, int(min(counts.max(initial=0), _LONG_GROUP + 1))):
        sel = np.flatnonzero((counts > k) & ~long)
        at = idx[first[sel] + k]
        inv = inverse[at]
        step = op(out[sel], values[at])
        if inv.any():
            step[inv] = inverse_op(out[sel][inv], values[at][inv])
        out[sel] = step
    for g in np.flatnonzero(long):
        at = idx[first[g]:first[g] + counts[g]]
        if not inverse[at].any() and op in (np.add, np.multiply):
            out[g] = op.accumulate(values[at], dtype=values.dtype)[-1]
            continue
        acc = values[at[0]]
        for k in range(1, len(at)):   # retractions into a long product: rare
            acc = (inverse_op if inverse[at[k]] else op)(np.array([acc]), values[at[k]:at[k] + 1])[0]
        out[g] = acc
    return out, has


def _decimal_sum(col: pa.Array, add: np.ndarray, retract: np.ndarray, gid: np.ndarray, groups: int) -> pa.Array:
    t = col.type
    work = pa.decimal256(_WORK_DIGITS, t.scale)
    wide = col.cast(work)
    signed = _null_where(pc.if_else(pa.array(retract), pc.negate(wide), wide), ~(add | retract))
    bound = pa.scalar(10 ** (t.precision - t.scale), pa.decimal256(_WORK_DIGITS, 0)).cast(work)
    reach = _hash_sum(pc.abs(signed), gid, groups).cast(work)   # below the bound no step can overflow
    total = _hash_sum(signed, gid, groups).cast(work)
    risky = pc.fill_null(pc.greater_equal(reach, bound), False).to_numpy(zero_copy_only=False)
    if risky.any():
        total = _fold_decimals(signed, gid, groups, risky, total, bound)
    return total.cast(t)


def _fold_decimals(signed: pa.Array, gid: np.ndarray, groups: int, risky: np.ndarray, total: pa.Array,
                   bound: pa.Scalar) -> pa.Array:
    """The groups in `risky` summed step by step: a step reaching `bound` is null, and the next
    value starts again from itself (Java's DecimalUtils.add, FieldSumAgg.agg)."""
    t = signed.type
    rows = np.flatnonzero(risky[gid] & pc.is_valid(signed).to_numpy(zero_copy_only=False))
    values = signed.take(pa.array(rows, pa.int64()))
    counts = np.bincount(gid[rows], minlength=groups)
    first = np.concatenate([[0], np.cumsum(counts)[:-1]]).astype(np.int64)
    acc = pa.nulls(groups, t)
    for k in range(int(counts.max(initial=0))):
        sel = np.flatnonzero(counts > k)
        x = values.take(pa.array(first[sel] + k, pa.int64()))
        before = acc.take(pa.array(sel, pa.int64()))
        step = pc.if_else(pc.is_null(before), x, pc.add(before, x).cast(t))
        step = pc.if_else(pc.greater_equal(pc.abs(step), bound), pa.scalar(None, t), step)
        slot = np.full(groups, -1, np.int64)
        slot[sel] = np.arange(len(sel))
        acc = pc.if_else(pa.array(slot >= 0), step.take(pa.array(np.maximum(slot, 0), pa.int64())), acc)
    return pc.if_else(pa.array(risky), acc, total)


def _from_first_start(valid: np.ndarray, inverse: np.ndarray, gid: np.ndarray, groups: int) -> np.ndarray:
    """`valid` without each group's inverse steps before its first plain one."""
    starts = np.flatnonzero(valid & ~inverse)
    first_start = np.full(groups, len(valid), np.int64)
    np.minimum.at(first_start, gid[starts], starts)
    return valid & (np.arange(len(valid)) >= first_start[gid])


# ---- helpers -----------------------------------------------------------------------------------------------
def _hash_sum(values: pa.Array, gid: np.ndarray, groups: int, func: str = "sum") -> pa.Array:
    """One Arrow hash aggregation per group (null where a group has no value)."""
    table = pa.table({"g": pa.array(gid), "v": values})
    out = table.group_by("g", use_threads=False).aggregate(
        [("v", func, pc.ScalarAggregateOptions(skip_nulls=True, min_count=1))])
    where = np.full(groups, -1, np.int64)
    where[out.column("g").to_numpy()] = np.arange(out.num_rows)
    column = out.column(f"v_{func}").combine_chunks()
    return column.take(pa.array(np.where(where >= 0, where, 0), pa.int64(), mask=where < 0))


def hash_aggregate(values: pa.Array, gid: np.ndarray, groups: int, func: str) -> pa.Array:
    """Arrow's hash aggregation `func` (min, max, all, any, ...) of `values` per group (`gid`
    ascending, `groups` in all; null where a group has no value)."""
    return _hash_sum(values, gid, groups, func)


def _null_where(column: pa.Array, mask: np.ndarray) -> pa.Array:
    if not mask.any():
        return column
    return pc.if_else(pa.array(mask), pa.scalar(None, column.type), column)


def _wrap(values: np.ndarray, bits: int) -> np.ndarray:
    """int64 values wrapped to a `bits`-wide two's complement integer, as Java's casts."""
    half = 1 << (bits - 1)
    return ((values + half) & ((1 << bits) - 1)) - half


def _java_divide(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    """Integer division truncating toward zero (Java's `/`), b != 0."""
    q = np.abs(a) // np.abs(b)
    return np.where((a < 0) ^ (b < 0), -q, q)
