"""Paimon's aggregate functions over collections, vectorized: `collect`, `merge_map`,
`nested_update` and `nested_partial_update` (aggregation merge engine).

Semantics follow Apache Paimon's `FieldCollectAgg`, `FieldMergeMapAgg`, `FieldNestedUpdateAgg`
and `FieldNestedPartialUpdateAgg` (1.4, with the fixes of its main line where 1.4 has bugs):

* `collect` (ARRAY): the arrays of a key's rows concatenated in order, null elements kept.
  `fields.<f>.distinct`: each value once (a set). A retraction removes, per element it
  holds, the oldest equal element still collected.
* `merge_map` (MAP): the maps merged, a later value winning for a key; a retraction removes
  the keys its map holds.
* `nested_update` (ARRAY<ROW>): with `fields.<f>.nested-key` a map from the nested key to
  the latest row (a retraction removes its keys); without one the rows appended (a
  retraction removes every equal row). Null elements are skipped.
* `nested_partial_update` (ARRAY<ROW>, nested key required): per nested key, each field's
  latest non-null value.

A column's result is null when none of the key's rows gave it a non-null value; a retraction
of a null accumulator does nothing. A -D that resets a key (`aggregation.remove-record-on-delete`)
counts as its first value, aggregated like any other (Java keeps its collections as they are:
the results differ only when such a -D holds a value twice or a null nested row). Equal means equal values (Java's `equals`: floats by bits
with one NaN, so 0.0 and -0.0 differ; binary values by content, which Paimon 1.4 compares by
identity, a bug fixed in its main line). Results keep a value's first position since it was
last absent (Java iterates hash sets and maps: its order is unspecified).

Everything works on the flattened elements of the rows a merge aggregates: one equality code
per element (`_element_codes`), a stable sort by (group, code) and segment reductions.
"""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from .errors import InvalidOptionError, UnsupportedOperationError
from .types import DataType

COLLECTION_FUNCTIONS = ("collect", "merge_map", "nested_update", "nested_partial_update")
RETRACTABLE_COLLECTIONS = ("collect", "merge_map", "nested_update")
# Options of Paimon's main line after 1.4 that change these functions' results.
_NEWER_OPTIONS = ("nested-sequence-field", "nested-key-null-strategy")


@dataclass(frozen=True)
class CollectionSpec:
    func: str
    distinct: bool = False
    nested_key: tuple[str, ...] = ()


def collection_spec(field: str, func: str, t: DataType, options: dict) -> CollectionSpec:
    """The validated spec of a collection function on `field`, or InvalidOptionError."""
    def option(name: str) -> str | None:
        return options.get(f"fields.{field}.{name}")

    for name in _NEWER_OPTIONS + ("count-limit",):
        if option(name) is not None:
            raise InvalidOptionError(f"table option 'fields.{field}.{name}' ({func}) is not supported by "
                                     "paimon-streaming yet")
    if func == "collect":
        if t.root != "ARRAY":
            raise InvalidOptionError(f"aggregate function 'collect' needs an ARRAY column; field '{field}' is {t}")
        distinct = str(option("distinct") or "false").strip().lower()
        if distinct not in ("true", "false"):
            raise InvalidOptionError(f"invalid value {option('distinct')!r} for table option "
                                     f"'fields.{field}.distinct': expected true or false")
        if distinct == "true":
            _check_comparable(field, t.element, "distinct elements")
        return CollectionSpec(func, distinct=distinct == "true")
    if func == "merge_map":
        if t.root != "MAP":
            raise InvalidOptionError(f"aggregate function 'merge_map' needs a MAP column; field '{field}' is {t}")
        _check_comparable(field, t.key, "map keys")
        return CollectionSpec(func)
    if t.root != "ARRAY" or t.element.root != "ROW":
        raise InvalidOptionError(f"aggregate function '{func}' needs an ARRAY<ROW<...>> column; field "
                                 f"'{field}' is {t}")
    names = [f.name for f in t.element.fields]
    key = tuple(k.strip() for k in (option("nested-key") or "").split(",") if k.strip())
    missing = [k for k in key if k not in names]
    if missing:
        raise InvalidOptionError(f"table option 'fields.{field}.nested-key': {missing} not in the nested row's "
                                 f"fields {names}")
    if func == "nested_partial_update" and not key:
        raise InvalidOptionError(f"aggregate function 'nested_partial_update' of field '{field}' needs "
                                 f"'fields.{field}.nested-key'")
    by_name = {f.name: f.type for f in t.element.fields}
    for k in key:
        _check_comparable(field, by_name[k], f"nested key '{k}'")
    return CollectionSpec(func, nested_key=key)


def _check_comparable(field: str, t: DataType, what: str) -> None:
    if _has_collection(t):
        raise InvalidOptionError(f"field '{field}': {what} of type {t} (ARRAY, MAP or MULTISET values) are not "
                                 "supported by paimon-streaming yet")


def _has_collection(t: DataType) -> bool:
    if t.root in ("ARRAY", "MAP", "MULTISET", "VARIANT"):
        return True
    return any(_has_collection(f.type) for f in t.fields)


def aggregate_collection(spec: CollectionSpec, column: pa.ChunkedArray, field: str, add: np.ndarray,
                         retract: np.ndarray, gid: np.ndarray, groups: int) -> pa.Array:
    """One merged value per group (groups numbered 0..groups-1, `gid` ascending per row) from
    the rows in `add` (aggregated) and `retract` (retracted), in row order."""
    col = column.combine_chunks() if isinstance(column, pa.ChunkedArray) else column
    valid = pc.is_valid(col).to_numpy(zero_copy_only=False)
    rows = np.flatnonzero((add | retract) & valid)
    has_value = np.zeros(groups, bool)
    has_value[gid[add & valid]] = True
    taken = col if len(rows) == len(col) else col.take(pa.array(rows, pa.int64()))
    e = _Elements.of(taken, rows, gid, add)
    if spec.func in RETRACTABLE_COLLECTIONS and (~e.is_add).any():
        _check_retractable(spec, col.type, field)
    if spec.func == "merge_map":
        keep, order = _latest_per_code(e, _codes(e.keys))
        return _build(col.type, groups, has_value, e.row_group[keep], order, keys=e.keys, items=e.values, take=keep)
    if spec.func == "collect":
        if spec.distinct:
            keep, order = _latest_per_code(e, _codes(e.values))
        else:
            keep = _fifo_survivors(e, _codes(e.values)) if (~e.is_add).any() else np.flatnonzero(e.is_add)
            order = keep
        return _build(col.type, groups, has_value, e.row_group[keep], order, values=e.values, take=keep)
    rows_ok = pc.is_valid(e.values).to_numpy(zero_copy_only=False)
    if not rows_ok.all():
        e = e.subset(np.flatnonzero(rows_ok))  # nested functions skip null elements
    if not spec.nested_key:
        # adds alone are kept as they are: their elements (rows holding arrays too) are never compared
        keep = _unretracted(e, _codes(e.values)) if (~e.is_add).any() else np.flatnonzero(e.is_add)
        return _build(col.type, groups, has_value, e.row_group[keep], keep, values=e.values, take=keep)
    key_codes = _codes(_struct_of(e.values, spec.nested_key))
    keep, order = _latest_per_code(e, key_codes)
    if spec.func == "nested_update":
        return _build(col.type, groups, has_value, e.row_group[keep], order, values=e.values, take=keep)
    merged = _partial_rows(e, key_codes, keep)
    return _build(col.type, groups, has_value, e.row_group[keep], order, values=merged,
                  take=np.arange(len(keep), dtype=np.int64))


def _check_retractable(spec: CollectionSpec, t: pa.DataType, field: str) -> None:
    if pa.types.is_map(t):
        return  # merge_map compares keys only, checked at create
    element = t.value_type
    if spec.func == "collect" and not spec.distinct and _arrow_has_collection(element):
        raise UnsupportedOperationError(f"field '{field}': retracting elements of type {element} from "
                                        "'collect' is not supported by paimon-streaming yet")
    if spec.func == "nested_update" and not spec.nested_key and _arrow_has_collection(element):
        raise UnsupportedOperationError(f"field '{field}': retracting rows holding ARRAY or MAP values from "
                                        "'nested_update' without 'nested-key' is not supported by "
                                        "paimon-streaming yet")


def _arrow_has_collection(t: pa.DataType) -> bool:
    if pa.types.is_list(t) or pa.types.is_large_list(t) or pa.types.is_map(t):
        return True
    return pa.types.is_struct(t) and any(_arrow_has_collection(t.field(i).type) for i in range(t.num_fields))


# ---- the flattened elements -------------------------------------------------------------------
@dataclass
class _Elements:
    """The elements (or map entries) of the aggregated rows, in row then element order."""
    values: pa.Array            # elements, or map values
    keys: pa.Array | None       # map keys
    row_group: np.ndarray       # group of each element's row
    is_add: np.ndarray          # the element's row is aggregated (else retracted)

    @staticmethod
    def of(arrays: pa.Array, rows: np.ndarray, gid: np.ndarray, add: np.ndarray) -> "_Elements":
        offsets = arrays.offsets.to_numpy()
        start, count = int(offsets[0]), int(offsets[-1] - offsets[0])
        parent = rows[np.repeat(np.arange(len(arrays)), np.diff(offsets))]
        if pa.types.is_map(arrays.type):
            return _Elements(arrays.items.slice(start, count), arrays.keys.slice(start, count),
                             gid[parent], add[parent])
        return _Elements(arrays.values.slice(start, count), None, gid[parent], add[parent])

    def subset(self, idx: np.ndarray) -> "_Elements":
        take = pa.array(idx, pa.int64())
        return _Elements(self.values.take(take), None if self.keys is None else self.keys.take(take),
                         self.row_group[idx], self.is_add[idx])


def _codes(values: pa.Array) -> np.ndarray:
    """Dense int64 codes, equal exactly for equal values (null equals null)."""
    t = values.type
    n = len(values)
    if pa.types.is_struct(t):
        code = pc.is_valid(values).to_numpy(zero_copy_only=False).astype(np.int64)
        for i in range(t.num_fields):
            code = _pair(code, _codes(pc.struct_field(values, [i])))
        return code
    if pa.types.is_floating(t):
        bits = pc.fill_null(values, 0).to_numpy(zero_copy_only=False).astype(np.float64)
        raw = bits.view(np.int64).copy()
        raw[np.isnan(bits)] = np.float64("nan").view(np.int64)
        nulls = pc.is_null(values).to_numpy(zero_copy_only=False)
        raw[nulls] = 0
        code = np.unique(raw, return_inverse=True)[1].astype(np.int64).reshape(n)
        return _pair(nulls.astype(np.int64), code)
    return pc.dictionary_encode(values, null_encoding="encode").indices.to_numpy(
        zero_copy_only=False).astype(np.int64)


def _pair(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    """Dense codes of the pairs (a, b) of two dense code arrays."""
    if len(a) == 0:
        return a
    return np.unique(a * (int(b.max()) + 1) + b, return_inverse=True)[1].astype(np.int64).reshape(len(a))


def _struct_of(values: pa.Array, names: tuple[str, ...]) -> pa.Array:
    fields = [pc.struct_field(values, [values.type.get_field_index(k)]) for k in names]
    return pa.StructArray.from_arrays(fields, names=list(names))


# ---- set semantics: last event per value -------------------------------------------------------
def _segments(e: _Elements, codes: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Elements sorted by (group, code, position) and the start and end of each run of equal
    (group, code)."""
    order = np.argsort(e.row_group * (int(codes.max()) + 1) + codes, kind="stable")  # codes are dense: no overflow
    g, c = e.row_group[order], codes[order]
    change = np.flatnonzero((g[1:] != g[:-1]) | (c[1:] != c[:-1])) + 1
    starts = np.concatenate([[0], change]).astype(np.int64)
    ends = np.append(starts[1:], len(order)).astype(np.int64) - 1
    return order, starts, ends


def _latest_per_code(e: _Elements, codes: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """For each (group, value) whose last event adds it: its last element (the winner) and the
    position of its first add since its last retraction (its place in the result)."""
    if len(codes) == 0:
        return np.zeros(0, np.int64), np.zeros(0, np.int64)
    order, starts, ends = _segments(e, codes)
    sorted_add = e.is_add[order]
    last_retract = np.maximum.reduceat(np.where(sorted_add, -1, np.arange(len(order))), starts)
    present = sorted_add[ends]
    first = np.maximum(last_retract + 1, starts)
    return order[ends[present]], order[first[present]]


def _partial_rows(e: _Elements, codes: np.ndarray, winners: np.ndarray) -> pa.Array:
    """Per (group, nested key) present, each field's last non-null value (rows only add here)."""
    if len(codes) == 0:
        return e.values
    order, starts, _ = _segments(e, codes)
    seg_of = np.empty(len(order), np.int64)
    seg_of[order] = np.repeat(np.arange(len(starts)), np.diff(np.append(starts, len(order))))
    segment = seg_of[winners]
    t = e.values.type
    fields = []
    for i in range(t.num_fields):
        child = pc.struct_field(e.values, [i])
        ok = pc.is_valid(child).to_numpy(zero_copy_only=False)[order]
        last = np.maximum.reduceat(np.where(ok, order, -1), starts)[segment]
        fields.append(child.take(pa.array(np.where(last >= 0, last, 0), pa.int64(), mask=last < 0)))
    return pa.StructArray.from_arrays(fields, fields=list(t))


# ---- multiset semantics ---------------------------------------------------------------------------
def _fifo_survivors(e: _Elements, codes: np.ndarray) -> np.ndarray:
    """The added elements left after each retracted element removed the oldest equal one still
    there (Java's list of a `collect`), in position order. Called with a retracted element."""
    order, starts, ends = _segments(e, codes)
    sorted_add = e.is_add[order]
    step = np.where(sorted_add, 1, -1)
    total = np.cumsum(step)
    before = np.concatenate([[0], total])[starts]
    seg = np.repeat(np.arange(len(starts)), ends - starts + 1)
    level = total - before[seg]                       # adds minus retractions so far, per segment
    lowest = np.minimum(np.minimum.reduceat(level, starts), 0)
    retracts = np.add.reduceat((~sorted_add).astype(np.int64), starts)
    matched = retracts + lowest                       # retractions that found an element
    adds_before = np.cumsum(sorted_add) - np.concatenate([[0], np.cumsum(sorted_add)])[starts][seg]
    rank = adds_before - 1                            # 0-based rank of each add in its segment
    keep = sorted_add & (rank >= matched[seg])
    return np.sort(order[keep])


def _unretracted(e: _Elements, codes: np.ndarray) -> np.ndarray:
    """Added elements with no equal element retracted after them (`removeIf`), in position order.
    Called with a retracted element."""
    order, starts, ends = _segments(e, codes)
    sorted_add = e.is_add[order]
    seg = np.repeat(np.arange(len(starts)), ends - starts + 1)
    last_retract = np.maximum.reduceat(np.where(sorted_add, -1, np.arange(len(order))), starts)
    keep = sorted_add & (np.arange(len(order)) > last_retract[seg])
    return np.sort(order[keep])


# ---- results ------------------------------------------------------------------------------------------
def _build(t: pa.DataType, groups: int, has_value: np.ndarray, out_group: np.ndarray, out_order: np.ndarray,
           take: np.ndarray, values: pa.Array | None = None, keys: pa.Array | None = None,
           items: pa.Array | None = None):
    """The list (or map) column of `groups` rows: row g holds the taken elements of group g in
    `out_order`; null where the group had no value."""
    sequence = np.lexsort((out_order, out_group))
    picked = pa.array(take[sequence], pa.int64())
    counts = np.bincount(out_group, minlength=groups) if len(out_group) else np.zeros(groups, np.int64)
    offsets = pa.array(np.concatenate([[0], np.cumsum(counts)]).astype(np.int32))
    mask = pa.array(~has_value)
    if keys is not None:
        return pa.MapArray.from_arrays(offsets, keys.take(picked), items.take(picked), type=t, mask=mask)
    return pa.ListArray.from_arrays(offsets, values.take(picked), type=t, mask=mask)
