"""Reading streaming read units into Arrow rows with their row kinds.

Every unit becomes a table of the requested columns plus an int8 `_VALUE_KIND` column
(+I 0, -U 1, +U 2, -D 3):

- full units (the starting state): every row is +I;
- delta and changelog units: each row keeps the kind it was written with;
- overwrite units of primary-key tables (a stream's `streaming-read-overwrite`): every row of
  the replaced files -D, then every row of the new ones with its kind, as Java's stream reads
  them (IncrementalChangelogReadProvider: a reversed read, then a plain one);
- diff units (a batch incremental diff): the difference between the replaced files and the
  new ones, per key: only before -> -D, only after -> +I, changed -> -U (old) and +U (new); on
  append tables, per row, as a multiset: a row only after -> +I, only before -> -D.

`to_output` turns that column into a user-visible row-kind column ('+I', '-U', '+U', '-D'),
or, without one, drops the -U/-D rows so the result holds the upserted values only.
"""
from __future__ import annotations

import math
from typing import Any

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from . import row_tracking
from .binary_row import encode_rows
from .errors import SchemaMismatchError
from .keyvalue import DELETE, INSERT, UPDATE_AFTER, UPDATE_BEFORE, VALUE_KIND
from .predicate import Filter
from .read import SplitReader
from .streaming_scan import DIFF, FULL, OVERWRITE_DIFF, ReadUnit

# a tuple, not an Arrow array: pyarrow's first array imports pandas (0.16 s), which the Spark
# processes that only plan a read never need
ROW_KIND_NAMES = ("+I", "-U", "+U", "-D")


def read_unit(reader: SplitReader, unit: ReadUnit, names: list[str], flt: Filter | None = None) -> pa.Table:
    """Rows of one unit: columns `names` plus `_VALUE_KIND` (rows matching `flt`, if given)."""
    if unit.kind == DIFF and unit.before is not None:
        # whole rows are compared (Java's DiffMerger), then filtered and projected
        diff = _keyed_diff if reader.schema.primary_keys else _multiset_diff
        columns = reader.schema.field_names + [n for n in names if n not in reader.schema.field_names]
        table = diff(reader, unit, columns)
        if flt is not None:
            table = table.filter(flt.expression)
        return table.select(names + [VALUE_KIND])
    table = reader.read_split(unit.split, names, flt, with_row_kind=True)
    if unit.kind == FULL:
        table = _all_of_kind(table, INSERT)
    if unit.kind == OVERWRITE_DIFF and unit.before is not None:
        replaced = _all_of_kind(reader.read_split(unit.before, names, flt, with_row_kind=True), DELETE)
        table = pa.concat_tables([replaced.cast(table.schema), table])
    return table


def _all_of_kind(table: pa.Table, kind: int) -> pa.Table:
    return table.set_column(table.schema.get_field_index(VALUE_KIND), pa.field(VALUE_KIND, pa.int8(), False),
                            pa.array(np.full(table.num_rows, kind, np.int8)))


def to_output(table: pa.Table, row_kind_column: str | None) -> pa.Table:
    """Replace `_VALUE_KIND` by a string row-kind column, or drop retractions without one."""
    kinds = table.column(VALUE_KIND)
    table = table.drop_columns([VALUE_KIND])
    if row_kind_column is None:
        keep = pc.invert(pc.is_in(kinds, pa.array([UPDATE_BEFORE, DELETE], pa.int8())))
        return table.filter(keep)
    names = pa.array(ROW_KIND_NAMES, pa.string()).take(pc.cast(kinds, pa.int32()))
    return table.append_column(pa.field(row_kind_column, pa.string(), False), names)


def _keyed_diff(reader: SplitReader, unit: ReadUnit, names: list[str]) -> pa.Table:
    keys = list(reader.schema.trimmed_primary_keys)
    cols = names + [k for k in keys if k not in names]
    before = reader.read_split(unit.before, cols, None, with_row_kind=True).drop_columns([VALUE_KIND])
    after = reader.read_split(unit.split, cols, None, with_row_kind=True).drop_columns([VALUE_KIND])
    both = pa.concat_tables([before, after])
    side = np.concatenate([np.zeros(before.num_rows, np.int8), np.ones(after.num_rows, np.int8)])
    if both.num_rows == 0:
        return _with_kinds(both.select(names), np.zeros(0, np.int8))
    order = pc.sort_indices(both.append_column("__side", pa.array(side)),
                            [(k, "ascending") for k in keys] + [("__side", "ascending")]).to_numpy()
    ordered = both.take(order)
    side = side[order]
    n = ordered.num_rows
    same_key_as_next = np.ones(n - 1, dtype=bool)
    for k in keys:
        col = ordered.column(k)
        same_key_as_next &= pc.fill_null(pc.equal(col.slice(0, n - 1), col.slice(1)), False).to_numpy(
            zero_copy_only=False)
    pair = np.zeros(n, dtype=bool)          # row i (before) and i+1 (after) hold the same key
    pair[:-1] = same_key_as_next & (side[:-1] == 0) & (side[1:] == 1)
    in_pair = pair.copy()
    in_pair[1:] |= pair[:-1]
    kinds = np.where(side == 0, DELETE, INSERT).astype(np.int8)
    keep = ~in_pair
    firsts = np.nonzero(pair)[0]
    if firsts.size:
        changed = ~_rows_equal(ordered.select(reader.schema.field_names), firsts, firsts + 1)
        idx = firsts[changed]
        kinds[idx], kinds[idx + 1] = UPDATE_BEFORE, UPDATE_AFTER
        keep[idx] = keep[idx + 1] = True
    rows = np.nonzero(keep)[0]
    return _with_kinds(ordered.select(names).take(pa.array(rows)), kinds[rows])


def _multiset_diff(reader: SplitReader, unit: ReadUnit, names: list[str]) -> pa.Table:
    """Rows of an append table's diff unit: each distinct row (all columns compared) as many
    times more as the end state holds it than the start state (+I), or fewer (-D)."""
    tracking = [n for n in names if n in row_tracking.NAMES]
    if tracking:  # a row deleted and written again is no change by its values, but is by its ids
        raise SchemaMismatchError(f"columns {tracking} are not part of a diff, which compares rows by their values "
                                  "(two tags, or mode 'diff'): read them with mode 'delta'")
    fields = reader.schema.field_names
    before = reader.read_split(unit.before, fields, None)
    after = reader.read_split(unit.split, fields, None)
    both = pa.concat_tables([before, after])
    side = np.concatenate([np.zeros(before.num_rows, np.int8), np.ones(after.num_rows, np.int8)])
    if both.num_rows == 0:
        return _with_kinds(both.select(names), np.zeros(0, np.int8))
    rows = encode_rows(both.columns, [f.type for f in reader.schema.fields])
    order = pc.sort_indices(pa.table({"row": rows, "side": side}),
                            [("row", "ascending"), ("side", "ascending")]).to_numpy()
    rows, side = rows.take(pa.array(order)), side[order]
    n = len(side)
    starts = np.ones(n, bool)
    starts[1:] = pc.not_equal(rows.slice(0, n - 1), rows.slice(1)).to_numpy(zero_copy_only=False)
    group = np.cumsum(starts) - 1
    first = np.flatnonzero(starts)
    n_before = np.bincount(group[side == 0], minlength=len(first))
    n_after = np.bincount(group[side == 1], minlength=len(first))
    at = np.arange(n) - first[group]          # position within the row's group (befores first)
    keep_after = (side == 1) & (at - n_before[group] >= n_before[group])
    keep_before = (side == 0) & (at >= n_after[group])
    keep = np.flatnonzero(keep_after | keep_before)
    kinds = np.where(side[keep] == 1, INSERT, DELETE).astype(np.int8)
    return _with_kinds(both.select(names).take(pa.array(order[keep])), kinds)


def _with_kinds(table: pa.Table, kinds: np.ndarray) -> pa.Table:
    return table.append_column(pa.field(VALUE_KIND, pa.int8(), False), pa.array(kinds, pa.int8()))


def _rows_equal(table: pa.Table, left: np.ndarray, right: np.ndarray) -> np.ndarray:
    """Whether rows left[i] and right[i] of `table` hold the same values, as Java compares rows
    (by their bytes): nulls equal nulls, NaN equals NaN, -0.0 is not 0.0."""
    equal = np.ones(len(left), dtype=bool)
    li, ri = pa.array(left), pa.array(right)
    for column in table.columns:
        a, b = column.take(li), column.take(ri)
        both_null = pc.and_(pc.is_null(a), pc.is_null(b)).to_numpy(zero_copy_only=False)
        if pa.types.is_floating(a.type):
            bits = np.dtype(f"int{a.type.bit_width}")
            same = (pc.fill_null(a, 0).to_numpy(zero_copy_only=False).view(bits) ==
                    pc.fill_null(b, 0).to_numpy(zero_copy_only=False).view(bits)) & \
                (pc.is_valid(a).to_numpy(zero_copy_only=False) == pc.is_valid(b).to_numpy(zero_copy_only=False))
            equal &= same | both_null
            continue
        try:
            same = pc.fill_null(pc.equal(a, b), False).to_numpy(zero_copy_only=False)
            equal &= same | both_null
        except (pa.ArrowNotImplementedError, pa.ArrowInvalid):  # nested types: compare as Python values
            equal &= np.array([_exactly(x) == _exactly(y) for x, y in zip(a.to_pylist(), b.to_pylist())], dtype=bool)
    return equal


def _exactly(value: Any) -> Any:
    """A nested value with each float as what tells it apart in its bytes (NaN equal to NaN,
    -0.0 other than 0.0), for a Python comparison."""
    if isinstance(value, float):
        return ("float", value != value, value if value == value else 0.0, math.copysign(1.0, value))
    if isinstance(value, dict):
        return {k: _exactly(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [_exactly(v) for v in value]
    return value
