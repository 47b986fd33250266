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
* DECIMAL `product`: each step is the exact product rounded half up (away from zero) to the
  column's scale, null where it needs more digits than the column has (at any precision), the
  next value then starting again from itself. Here: the same fold on the unscaled values as
  Python integers in numpy object arrays, vectorized across keys one position at a time.
* Integers wrap at their width, in any order alike. A retraction subtracts (`sum`) or divides
  (`product`: integers truncate toward zero; decimals divide exactly, then round as a product
  does, and a quotient with no finite decimal expansion fails, as Java's `BigDecimal.divide`;
  a division by zero is an error; a retraction into a null keeps it null).
* `min` / `max` of floats order as Java's `Double.compare`: -0.0 < 0.0 and NaN above every
  value (Arrow's ignore NaN and take -0.0 = 0.0).
"""
from __future__ import annotations

from decimal import Decimal
from typing import Callable

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from .errors import PaimonError

# Keys with more values than this are folded one key at a time with `accumulate`.
_LONG_GROUP = 64
# Decimal sums run in DECIMAL(60, s): any 38-digit value, and a sum of two, fit.
_WORK_DIGITS = 60
# A multiple of every 2^i * 5^j below 10^38 (i <= 126, j <= 54): an unscaled divisor over the
# gcd divides it exactly when the quotient has a finite decimal expansion.
_TERMINATING = 10 ** 127


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
    if pa.types.is_decimal(t):
        return _decimal_product(col, valid, retract, gid, groups, field)
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


def _decimal_product(col: pa.Array, valid: np.ndarray, retract: np.ndarray, gid: np.ndarray, groups: int,
                     field: str) -> pa.Array:
    """The `valid` rows multiplied (divided where `retract`) per group, step by step as Java's
    FieldProductAgg on DECIMAL (see the module doc)."""
    t = col.type
    unscaled = _unscaled(col)
    idx = np.flatnonzero(valid)
    counts = np.bincount(gid[idx], minlength=groups)
    first = np.concatenate([[0], np.cumsum(counts)[:-1]]).astype(np.int64)
    by_count = np.argsort(-counts, kind="stable")   # the groups with a k-th value come first
    longer = -counts[by_count]
    acc, has = np.zeros(groups, object), np.zeros(groups, bool)
    unit, bound = 10 ** t.scale, 10 ** t.precision
    for k in range(int(counts.max(initial=0))):
        sel = by_count[:np.searchsorted(longer, -k)]
        at = idx[first[sel] + k]
        x, inv, held, a = unscaled[at], retract[at], has[sel], acc[sel]
        step = np.where(held, 0, x)   # a start; a retraction into a null stays null
        mul, div = held & ~inv, held & inv
        if mul.any():
            step[mul] = _round_divide(a[mul] * x[mul], unit)
        if div.any():
            step[div] = _exact_quotient(a[div], x[div], unit, field, t.scale)
        acc[sel] = step
        has[sel] = (held | ~inv) & (np.abs(step) < bound).astype(bool)
    return _from_unscaled(acc, has, t)


def _round_divide(n: np.ndarray, d) -> np.ndarray:
    """n / d of Python integers rounded half away from zero (Java's RoundingMode.HALF_UP)."""
    m = abs(d)   # d: an object array, or a Python int (np.abs would make it an int64)
    q = (2 * abs(n) + m) // (2 * m)
    return np.where((n < 0) ^ (d < 0), -q, q)


def _exact_quotient(a: np.ndarray, b: np.ndarray, unit: int, field: str, scale: int) -> np.ndarray:
    """a / b of unscaled decimals, rounded to their scale, where Java's BigDecimal.divide has an
    exact result; else the error Java's read fails with too."""
    if (b == 0).any():
        raise PaimonError(f"aggregate function 'product' of field '{field}' cannot retract 0 (a division by "
                          "zero, which Paimon refuses too)")
    endless = (_TERMINATING % (np.abs(b) // np.gcd(a, b))) != 0
    if endless.any():
        n, d = int(a[endless][0]), int(b[endless][0])
        raise PaimonError(f"aggregate function 'product' of field '{field}' cannot retract {_show(d, scale)} from "
                          f"{_show(n, scale)}: the quotient has no finite decimal expansion (Paimon's "
                          "BigDecimal.divide fails too)")
    return _round_divide(a * unit, b)


def _unscaled(col: pa.Array) -> np.ndarray:
    """The unscaled values of a decimal128 column as Python integers (object array; 0 for null)."""
    n = len(col)
    words = np.frombuffer(col.buffers()[1], np.uint64)[2 * col.offset:2 * (col.offset + n)].reshape(n, 2)
    out = words[:, 1].view(np.int64).astype(object) * (1 << 64) + words[:, 0].astype(object)
    return np.where(pc.is_valid(col).to_numpy(zero_copy_only=False), out, 0)


def _from_unscaled(values: np.ndarray, valid: np.ndarray, t: pa.DataType) -> pa.Array:
    """A decimal128 column of type `t` from unscaled Python integers, null where not `valid`."""
    v = np.where(valid, values, 0)
    words = np.empty((len(v), 2), np.uint64)
    words[:, 0] = (v & ((1 << 64) - 1)).astype(np.uint64)
    words[:, 1] = (v >> 64).astype(np.int64).view(np.uint64)
    bitmap = pa.array(valid).buffers()[1]
    return pa.Array.from_buffers(t, len(v), [bitmap, pa.py_buffer(words.tobytes())])


def _show(unscaled: int, scale: int) -> str:
    return str(Decimal(f"{unscaled}E-{scale}"))   # exact, whatever the decimal context


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
