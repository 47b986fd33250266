"""Paimon's merge engines (`merge-engine`) and row kinds, vectorized.

A primary-key table keeps several versions of a key: the rows of one batch before they are
written, then one row per file. Merging them is a function of a key's rows in order (by key,
`sequence.field` columns, `_SEQUENCE_NUMBER`); it runs when a batch is merged within itself
at write time (`write.py`) and when the files of a split are merged on read (`read.py`).

Input of every engine (`merge_sorted`): a table sorted that way (`sort_for_merge`) with the
key columns, value columns, `_SEQUENCE_NUMBER` (int64) and `_VALUE_KIND` (int8: +I 0, -U 1,
+U 2, -D 3). Output: one row per key (or none) with the merged values, its `_VALUE_KIND` and
`_SEQUENCE_NUMBER`, in key order, with the input's columns and Arrow types.

Semantics follow Apache Paimon 1.4 (Java is the authority; see tests/test_merge_engines.py):

* A key with a single row is passed through unchanged, whatever its kind (Java's
  `ReducerMergeFunctionWrapper`): a lone -D/-U stays in the file and deletes older versions
  on read; only keys with two or more rows reach the engine proper.
* `deduplicate`: the last row wins (a trailing -U/-D deletes the key). `ignore-delete`
  skips -U/-D rows (a key with only those is dropped).
* `first-row`: the first row wins. -U/-D rows are refused unless `ignore-delete`.
* `partial-update`: per column the last non-null value. -U/-D rows are refused unless
  `ignore-delete`, `partial-update.remove-record-on-delete` (a -D resets the whole row to the
  -D's values and, if it is the key's last row, deletes the key) or sequence groups
  (`fields.<seq>.sequence-group=<cols>`: a group's columns, nulls included, come from the
  row with the greatest group sequence value, the last such row on ties; rows whose group
  sequence is entirely null leave the group alone; a retraction that wins nulls the group's
  columns; `partial-update.remove-record-on-sequence-group=<seq>` makes such a -D reset the
  whole row). A key that saw no +I/+U row is a delete. A group field may carry an aggregate
  function (`fields.<f>.aggregate-function`, `fields.default-aggregate-function`): every row
  whose group sequence is not all null is folded in, a row with an older group sequence with
  the arguments swapped (Java's `aggReversed`), -U/-D rows retract (newer or older); see
  "partial-update: aggregate functions in sequence groups" below (`merge_map` and
  `nested_update` there need `fields.<f>.ignore-retract`).
* `aggregation`: per column `fields.<f>.aggregate-function` (default
  `fields.default-aggregate-function`, else `last_non_null_value`; primary keys keep their
  value; `sequence.field` columns use `last_value`). -U/-D rows retract (sum subtracts,
  product divides, last_value / last_non_null_value null the column, collections remove; see
  numeric_aggregates.py and collection_aggregates.py); other functions refuse retractions unless
  `fields.<f>.ignore-retract`. The result is an insert even if every row was a retraction.
  `aggregation.remove-record-on-delete`: a -D resets the row to the -D's values (aggregation
  continues from them) and deletes the key if it is the key's last row.

The writer first drops rows as Java's `RowKindFilter` does (`ignore-delete`: -U and -D;
`ignore-update-before`: -U) and the reader drops -U/-D results after the merge.

Everything is columnar: group boundaries from one comparison of adjacent keys, per-group
picks with `numpy.ufunc.reduceat` over row positions, sums and lists with Arrow's hash
aggregations (`group_by(..., use_threads=False)` keeps input order).
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Sequence

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from .collection_aggregates import (COLLECTION_FUNCTIONS, RETRACTABLE_COLLECTIONS, CollectionSpec,
                                    aggregate_collection, collection_spec)
from .errors import InvalidOptionError, PaimonError, SchemaMismatchError
from .option_keys import FALLBACK_KEYS
from .listagg import listagg
from .numeric_aggregates import float_extreme, hash_aggregate, product_of, sum_of
from .keyvalue import DELETE, INSERT, SEQUENCE_NUMBER, UPDATE_BEFORE, VALUE_KIND
from .schema import TableSchema, java_split
from .types import MAX_LENGTH, DataType

__all__ = ["MergeEngine", "engine_for", "validate_engine_options", "merge_sorted", "sort_for_merge", "sort_and_merge",
           "row_kinds", "row_kind_filter", "ignore_delete_option", "is_retract", "last_of_each_key",
           "first_of_each_key", "AGGREGATE_FUNCTIONS"]

IGNORE_DELETE_KEYS = ("ignore-delete", *FALLBACK_KEYS["ignore-delete"])
_SHORT_KINDS = ["+I", "-U", "+U", "-D"]  # index = byte value

AGGREGATE_FUNCTIONS = ("sum", "product", "min", "max", "last_value", "last_non_null_value", "first_value",
                       "first_non_null_value", "first_not_null_value", "bool_and", "bool_or",
                       "listagg") + COLLECTION_FUNCTIONS
# Paimon functions we know but do not implement (yet).
_JAVA_ONLY_FUNCTIONS = ("merge_map_with_keytime", "hll_sketch", "theta_sketch", "rbm32", "rbm64")
_NUMERIC = ("TINYINT", "SMALLINT", "INT", "BIGINT", "FLOAT", "DOUBLE", "DECIMAL")
_COMPARABLE = _NUMERIC + ("DATE", "TIME", "TIMESTAMP", "TIMESTAMP_LTZ", "CHAR", "VARCHAR", "BINARY", "VARBINARY")
_RETRACTABLE = ("sum", "product", "last_value", "last_non_null_value") + RETRACTABLE_COLLECTIONS


# ---- row kinds ------------------------------------------------------------------------------
def row_kinds(column: pa.Array | pa.ChunkedArray, name: str) -> np.ndarray:
    """Row kinds (int8 bytes) of a column of short strings (+I, -U, +U, -D; any case, as Java's
    `RowKind.fromShortString`) or of integer bytes 0..3. Errors name the column and bad values."""
    t = column.type
    if pa.types.is_dictionary(t):
        column = column.cast(pa.dictionary(t.index_type, pa.string()) if t.value_type == pa.string_view() else t)
        column = column.cast(column.type.value_type)
        t = column.type
    if t == pa.string_view():  # polars' strings
        column, t = column.cast(pa.string()), pa.string()
    if column.null_count:
        raise SchemaMismatchError(f"row kind column '{name}' contains {column.null_count} null value(s); "
                                  f"every row needs one of {', '.join(_SHORT_KINDS)}")
    if pa.types.is_string(t) or pa.types.is_large_string(t):
        idx = pc.index_in(pc.utf8_upper(column.cast(pa.string())), value_set=pa.array(_SHORT_KINDS))
        if idx.null_count:
            bad = pc.unique(column.filter(pc.is_null(idx))).to_pylist()[:5]
            raise SchemaMismatchError(f"row kind column '{name}' has invalid value(s) {bad}; "
                                      f"expected one of {', '.join(_SHORT_KINDS)}")
        return idx.to_numpy(zero_copy_only=False).astype(np.int8)
    if pa.types.is_integer(t):
        values = column.to_numpy(zero_copy_only=False) if isinstance(column, pa.Array) else column.to_numpy()
        bad_mask = (values < 0) | (values > 3)
        if bad_mask.any():
            raise SchemaMismatchError(f"row kind column '{name}' has invalid value(s) "
                                      f"{sorted(set(values[bad_mask].tolist()))[:5]}; expected 0 (+I), "
                                      "1 (-U), 2 (+U) or 3 (-D)")
        return values.astype(np.int8)
    raise SchemaMismatchError(f"row kind column '{name}' has type {t}; expected strings "
                              f"({', '.join(_SHORT_KINDS)}) or int8 row kind bytes")


def is_retract(kinds: np.ndarray) -> np.ndarray:
    return (kinds == UPDATE_BEFORE) | (kinds == DELETE)


def ignore_delete_option(options: dict[str, str]) -> str | None:
    """The option making writers and readers drop -U/-D rows ('ignore-delete' or an engine's
    alias: the first of them set decides, as Java's fallback keys), or None when none does."""
    key = next((k for k in IGNORE_DELETE_KEYS if k in options), None)
    return key if key is not None and _bool(options, key) else None


def row_kind_filter(options: dict[str, str], kinds: np.ndarray) -> np.ndarray | None:
    """Rows a writer keeps, as Java's `RowKindFilter` (None: all of them)."""
    ignore_delete = _bool(options, "ignore-delete", IGNORE_DELETE_KEYS[1:])
    ignore_ub = _bool(options, "ignore-update-before")
    if ignore_delete:
        return ~is_retract(kinds)
    if ignore_ub:
        return kinds != UPDATE_BEFORE
    return None


# ---- option helpers -------------------------------------------------------------------------
def _bool(options: dict[str, str], key: str, fallbacks: Sequence[str] = ()) -> bool:
    for k in (key, *fallbacks):
        if k in options:
            low = str(options[k]).strip().lower()
            if low not in ("true", "false"):
                raise InvalidOptionError(f"invalid value {options[k]!r} for table option '{k}': expected true or false")
            return low == "true"
    return False


def _split(text: str | None) -> list[str]:
    return [s.strip() for s in (text or "").split(",") if s.strip()]


def sequence_fields(options: dict[str, str]) -> list[str]:
    return _split(options.get("sequence.field"))


# ---- sorting and groups ---------------------------------------------------------------------
OFFSET_LIMIT = 2**31 - 1  # bytes an Arrow string/binary array with 32-bit offsets can hold
_LARGE_TWIN = {pa.string(): pa.large_string(), pa.binary(): pa.large_binary()}


def wide_enough(t: pa.DataType, nbytes: int) -> pa.DataType:
    """`t`, or its 64-bit-offset twin (large_string, large_binary) for a STRING or BYTES column
    of `nbytes` bytes, more than 32-bit offsets reach (2 GiB): taking rows into one array (a
    sort, a bucket's rows) would overflow them. Data files store it as a plain string column
    (each file is far smaller: `target-file-size`)."""
    wide = _LARGE_TWIN.get(t)
    return wide if wide is not None and nbytes > OFFSET_LIMIT else t


def offsets_widened(table: pa.Table) -> pa.Table:
    """`table` with each STRING/BYTES column too big for 32-bit offsets widened (`wide_enough`)."""
    for i, f in enumerate(table.schema):
        wide = wide_enough(f.type, table.column(i).nbytes)
        if wide != f.type:
            table = table.set_column(i, f.with_type(wide), table.column(i).cast(wide))
    return table


def sort_for_merge(table: pa.Table, keys: Sequence[str], seq_fields: Sequence[str] = ()) -> pa.Table:
    """Sort by key, `sequence.field` columns, `_SEQUENCE_NUMBER` (nulls first, as Java's comparators)."""
    table = offsets_widened(table)
    return table.take(_merge_order(table, keys, seq_fields))


def sort_and_merge(table: pa.Table, keys: Sequence[str], engine: MergeEngine,
                   levels: np.ndarray | None = None) -> pa.Table:
    """`merge_sorted(sort_for_merge(table, ...))`, taking the rows once where the engine can
    pick its rows from the sorted keys alone (see `MergeEngine.merge_in_order`).

    `levels` (each row's file level) on a table whose merge Java wraps in `LookupMergeFunction`
    (`CoreOptions.need_lookup`): a key of several rows merges only its level-0 rows and its row of the
    lowest level above 0. A lookup compaction writes a key's new row one level below the old
    one with the old value folded in; the old row stays at its level until a compaction
    reaches it, and merging both would count it twice."""
    table = offsets_widened(table)
    order = _merge_order(table, keys, engine.sequence_fields)
    if levels is None or not engine.lookup_wrapped:
        return engine.merge_in_order(table, order, keys)
    table, levels = table.take(order), levels[order]
    g = _Groups.of(table, keys)
    if g.count == table.num_rows:
        return table  # every key once: passed through, as Java's ReducerMergeFunctionWrapper does
    return engine.merge_picked(table.filter(pa.array(_lookup_picks(g, levels))), keys, g.sizes > 1)


def _merge_order(table: pa.Table, keys: Sequence[str], seq_fields: Sequence[str]) -> np.ndarray:
    order = _int_key_order(table, keys[0]) if len(keys) == 1 and not seq_fields else None
    if order is None:
        order = sort_nulls_first(table, [*keys, *seq_fields, SEQUENCE_NUMBER])
    return order


# pyarrow 25 moved null placement into each sort key (the options-wide one is deprecated).
_NULLS_PER_SORT_KEY = int(pa.__version__.split(".")[0]) >= 25


def sort_nulls_first(table: pa.Table, columns: Sequence[str]) -> np.ndarray:
    """Row order by `columns` ascending, nulls first (as Java's comparators).

    NaN sorts after every number (+inf included), as Java orders float keys (its sort buffer's
    normalized keys, `Double.compareTo` in lookups): Arrow's "at_start" placement would put NaN
    first with the nulls, and a data file's first and last keys would no longer be its bounds.
    A float column with nulls gets a leading is-valid sort key, so its nulls stay first."""
    if not any(pa.types.is_floating(table.schema.field(c).type) for c in columns):
        if _NULLS_PER_SORT_KEY:
            return pc.sort_indices(table, sort_keys=[(c, "ascending", "at_start") for c in columns]).to_numpy()
        return pc.sort_indices(table, sort_keys=[(c, "ascending") for c in columns],
                               null_placement="at_start").to_numpy()
    arrays, sort_keys = [], []
    for c in columns:
        col = table.column(c)
        if pa.types.is_floating(col.type) and col.null_count:
            sort_keys.append((f"_valid{len(arrays)}", "ascending"))
            arrays.append(pc.is_valid(col))
        sort_keys.append((f"_col{len(arrays)}", "ascending"))
        arrays.append(col)
    keyed = pa.table(arrays, names=[name for name, _ in sort_keys])
    # nulls only remain in non-float columns (first, as before); a float's NaN goes last
    placement = {name: "at_end" if pa.types.is_floating(keyed.schema.field(name).type) else "at_start"
                 for name, _ in sort_keys}
    if _NULLS_PER_SORT_KEY:
        return pc.sort_indices(keyed, sort_keys=[(n, o, placement[n]) for n, o in sort_keys]).to_numpy()
    if all(p == "at_end" for p in placement.values()):
        return pc.sort_indices(keyed, sort_keys=sort_keys, null_placement="at_end").to_numpy()
    # one placement for all keys (pyarrow < 25): nulls and NaN of the other columns as ranks
    ranked = [pc.rank(keyed.column(n), sort_keys="ascending", null_placement=placement[n], tiebreaker="dense")
              for n, _ in sort_keys]
    return pc.sort_indices(pa.table(ranked, names=[n for n, _ in sort_keys]), sort_keys=sort_keys).to_numpy()


def _lookup_picks(g: _Groups, levels: np.ndarray) -> np.ndarray:
    """The rows of each key Java's `LookupMergeFunction` merges: its level-0 rows and the first
    of its lowest level above 0 (`pickHighLevel`)."""
    high = levels > 0
    lowest = np.minimum.reduceat(np.where(high, levels, np.iinfo(np.int64).max), g.starts)
    idx, found = g.first_where(high & (levels == lowest[g.gid]))
    picks = ~high
    picks[idx[found]] = True
    return picks


def _int_key_order(table: pa.Table, key: str) -> np.ndarray | None:
    """The stable (key, `_SEQUENCE_NUMBER`) order of a table with one non-null integer key, or
    None for other keys: a numpy argsort of the key alone, then only the rows of repeated
    keys ordered by (sequence number, input position). Several times faster than a
    two-column `sort_indices`, as repeated keys are few."""
    column = table.column(key)
    if not pa.types.is_integer(column.type) or column.null_count:
        return None
    ints = column.to_numpy()
    # runs compaction concatenates are sorted already (timsort merges them in near linear
    # time); a fresh batch is in random order, where an introsort is faster
    descents = np.count_nonzero(ints[1:] < ints[:-1])
    order = np.argsort(ints, kind="stable" if descents * 64 < len(ints) else "quicksort")
    ranked = ints[order]
    repeated = ranked[1:] == ranked[:-1]
    if repeated.any():
        in_group = np.zeros(len(ints), bool)
        in_group[1:] |= repeated
        in_group[:-1] |= repeated
        slots = np.flatnonzero(in_group)
        rows = order[slots]
        sequence = table.column(SEQUENCE_NUMBER).to_numpy()[rows]
        order[slots] = rows[np.lexsort((rows, sequence, ranked[slots]))]  # ties: input order, as stable
    return order


def _key_change(table: pa.Table, keys: Sequence[str]) -> np.ndarray:
    """changed[i] is True when row i+1 has another key than row i (rows sorted by key).

    Float keys are equal as Java's key comparator has them (`a > b ? 1 : a < b ? -1 : 0`):
    0.0 and -0.0 are one key, and NaNs (any payload; sorted together, after every number)
    are one key, where IEEE's != would make each NaN row a key of its own."""
    n = table.num_rows
    changed = np.zeros(max(n - 1, 0), dtype=bool)
    if n < 2:
        return changed
    for k in keys:
        col = table.column(k).combine_chunks()
        a, b = col.slice(1), col.slice(0, n - 1)
        ne = pc.fill_null(pc.not_equal(a, b), False)
        ne = pc.or_(ne, pc.not_equal(pc.is_null(a), pc.is_null(b)))
        if pa.types.is_floating(col.type):
            ne = pc.and_(ne, pc.invert(pc.fill_null(pc.and_(pc.is_nan(a), pc.is_nan(b)), False)))
        changed |= ne.to_numpy(zero_copy_only=False).astype(bool)
    return changed


def last_of_each_key(table: pa.Table, keys: Sequence[str]) -> np.ndarray:
    return np.append(_key_change(table, keys), True)


def first_of_each_key(table: pa.Table, keys: Sequence[str]) -> np.ndarray:
    return np.insert(_key_change(table, keys), 0, True)


def _cast_merged(merged: pa.Table, schema: pa.Schema) -> pa.Table:
    """The merged rows in the input's types; a NOT NULL column the merge left null (an
    aggregate retracted to null, a partial-update row that never filled it) is refused by
    name, as Java's writers refuse it, rather than by Arrow's cast."""
    for f in schema:
        if not f.nullable and merged.column(f.name).null_count:
            raise SchemaMismatchError(
                f"column '{f.name}' is NOT NULL but merging a key's rows gave it null (a partial-update "
                "or aggregation merge engine produced null, e.g. an aggregate function retracting, "
                f"or a retraction of a key with no row): give '{f.name}' a value or make it nullable")
    return merged.cast(schema)


@dataclass
class _Groups:
    """Contiguous groups of equal keys: `starts`/`ends` (inclusive) per group, `gid` per row."""
    starts: np.ndarray
    ends: np.ndarray
    gid: np.ndarray

    @property
    def count(self) -> int:
        return len(self.starts)

    @property
    def sizes(self) -> np.ndarray:
        return self.ends - self.starts + 1

    @staticmethod
    def of(table: pa.Table, keys: Sequence[str]) -> "_Groups":
        n = table.num_rows
        change = _key_change(table, keys)
        starts = np.concatenate([[0], np.flatnonzero(change) + 1]).astype(np.int64) if n else np.zeros(0, np.int64)
        ends = np.append(starts[1:] - 1, n - 1).astype(np.int64) if n else np.zeros(0, np.int64)
        gid = np.repeat(np.arange(len(starts), dtype=np.int64), ends - starts + 1)
        return _Groups(starts, ends, gid)

    # per-group reductions over row masks (groups are non-empty and contiguous)
    def last_where(self, mask: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        pos = np.where(mask, np.arange(len(mask), dtype=np.int64), -1)
        idx = np.maximum.reduceat(pos, self.starts)
        return idx, idx >= 0

    def first_where(self, mask: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        n = len(mask)
        pos = np.where(mask, np.arange(n, dtype=np.int64), n)
        idx = np.minimum.reduceat(pos, self.starts)
        return idx, idx < n

    def any(self, mask: np.ndarray) -> np.ndarray:
        return np.add.reduceat(mask.astype(np.int64), self.starts) > 0

    def max(self, values: np.ndarray) -> np.ndarray:
        return np.maximum.reduceat(values, self.starts)


def _take(column: pa.ChunkedArray | pa.Array, idx: np.ndarray, valid: np.ndarray | None = None):
    if valid is None or valid.all():
        return column.take(pa.array(idx, pa.int64()))
    return column.take(pa.array(np.where(valid, idx, 0), pa.int64(), mask=~valid))


def _null_where(column: pa.ChunkedArray | pa.Array, mask: np.ndarray):
    """`column` with nulls where `mask` is True."""
    if not mask.any():
        return column
    return pc.if_else(pa.array(mask), pa.scalar(None, column.type), column)


def _group_agg(values, g: _Groups, func: str, opts=None) -> pa.Array:
    """One hash aggregation of `values` per group, in group order."""
    t = pa.table({"g": pa.array(g.gid), "v": values})
    out = t.group_by("g", use_threads=False).aggregate([("v", func, opts)] if opts else [("v", func)])
    return out.column(f"v_{func}").combine_chunks()


_MIN_ONE = pc.ScalarAggregateOptions(skip_nulls=True, min_count=1)


# ---- engines --------------------------------------------------------------------------------
class MergeEngine:
    """The merge engine of one table (built from its schema by `engine_for`)."""

    name = "deduplicate"
    # lookup compactions (deletion vectors) fold the old row and the new rows in one pass,
    # every key merged (Java's LookupMergeFunction), rather than merging the merged new rows
    # with the old row: needed where merging is not associative
    lookup_merges_every_key = False
    # Java wraps the merge of tables that need lookup (`CoreOptions.need_lookup`) in its
    # LookupMergeFunction, which merges a key's rows of level 0 and lowest level above 0 only
    lookup_wrapped = True

    def __init__(self, schema: TableSchema):
        o = schema.options
        self.schema = schema
        self.options = o
        self.ignore_delete = _bool(o, "ignore-delete", IGNORE_DELETE_KEYS[1:])
        self.sequence_fields = sequence_fields(o)
        order = str(o.get("sequence.field.sort-order", "ascending")).strip().lower()
        if order not in ("ascending", "descending"):
            raise InvalidOptionError(f"invalid value {order!r} for table option 'sequence.field.sort-order': "
                                     "expected ascending or descending")
        if order == "descending":
            raise InvalidOptionError("'sequence.field.sort-order' = descending is not supported by "
                                     "paimon-streaming (Paimon 1.4 merges a written batch ascending but reads "
                                     "descending); use ascending")

    # -- hooks --
    def check_write(self, kinds: np.ndarray) -> None:
        """Refuse row kinds the engine can never accept (after `row_kind_filter`)."""

    def read_columns(self, names: Sequence[str]) -> list[str]:
        """Columns the merge needs to produce `names`."""
        return list(names)

    def merge_in_order(self, table: pa.Table, order: np.ndarray, keys: Sequence[str]) -> pa.Table:
        """`merge` of `table` taken in merge order `order`."""
        return self.merge(table.take(order), keys)

    def merge(self, table: pa.Table, keys: Sequence[str]) -> pa.Table:
        """Merge a table sorted by `sort_for_merge` into one row per key (see the module doc)."""
        return self._merge(table, keys, every_key=False)

    def merge_every_key(self, table: pa.Table, keys: Sequence[str]) -> pa.Table:
        """`merge`, with a key's lone row merged too: Java's lookup compactions (deletion
        vectors, changelog-producer lookup) run the merge function on every key they rewrite
        (`LookupMergeFunction` has no single-row pass-through), and for aggregation a lone row
        is not always itself (a retraction, a distinct `collect`)."""
        return self._merge(table, keys, every_key=True)

    def merge_picked(self, table: pa.Table, keys: Sequence[str], several: np.ndarray) -> pa.Table:
        """`merge` of the rows Java's `LookupMergeFunction` picked of each key (`sort_and_merge`):
        a key that had several rows (`several`, per key) is merged even if one row is left, as
        the wrapped merge function runs on what it picked; a key of one row passes through."""
        return self._merge(table, keys, every_key=several)

    def _merge(self, table: pa.Table, keys: Sequence[str], every_key: bool | np.ndarray) -> pa.Table:
        """Merge by key; a lone row passes through unless `every_key` (for all keys or per key)."""
        n = table.num_rows
        if n == 0:
            return table
        g = _Groups.of(table, keys)
        single = g.sizes == 1
        if np.any(every_key):
            single &= ~(every_key & self._changes_lone_rows(_kinds(table)[g.starts]))
        if single.all():
            return table  # every key once (or its lone row is its merge): nothing to merge
        multi_rows = ~single[g.gid]
        sub = table.filter(pa.array(multi_rows))
        sg = _Groups(*_regroup(g, ~single))
        merged, keep = self._merge_groups(sub, sg)
        merged = _cast_merged(merged.select(table.column_names), table.schema)
        multi_gids = np.flatnonzero(~single)
        if keep is not None:
            merged = merged.filter(pa.array(keep))
            multi_gids = multi_gids[keep]
        singles = table.take(pa.array(g.starts[single]))
        out = pa.concat_tables([singles, merged])
        order = np.argsort(np.concatenate([np.flatnonzero(single), multi_gids]), kind="stable")
        return out.take(pa.array(order))

    def _changes_lone_rows(self, kinds: np.ndarray) -> np.ndarray:
        """Which keys' lone rows (of these kinds) `merge_every_key` must merge: those the
        engine would not return as they are."""
        return np.ones(len(kinds), bool)

    def _merge_groups(self, t: pa.Table, g: _Groups) -> tuple[pa.Table, np.ndarray | None]:
        """Merge groups of two or more rows; returns one row per group and which to keep."""
        kinds = _kinds(t)
        if self.ignore_delete:
            idx, valid = g.last_where(~is_retract(kinds))
            return _take_rows(t, idx, valid), valid
        return t.take(pa.array(g.ends)), None


def _regroup(g: _Groups, chosen: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Starts/ends/gid of the chosen groups after filtering the table to their rows."""
    sizes = g.sizes[chosen]
    ends = np.cumsum(sizes) - 1
    starts = ends - sizes + 1
    gid = np.repeat(np.arange(len(sizes), dtype=np.int64), sizes)
    return starts.astype(np.int64), ends.astype(np.int64), gid


def _kinds(t: pa.Table) -> np.ndarray:
    return t.column(VALUE_KIND).to_numpy().astype(np.int8)


def _take_rows(t: pa.Table, idx: np.ndarray, valid: np.ndarray) -> pa.Table:
    return t.take(pa.array(np.where(valid, idx, 0)))


class DeduplicateEngine(MergeEngine):
    name = "deduplicate"

    def merge(self, table: pa.Table, keys: Sequence[str]) -> pa.Table:
        if self.ignore_delete:
            return super().merge(table, keys)
        last = last_of_each_key(table, keys)  # the newest row of each key, in one take
        return table if last.all() else table.take(pa.array(np.flatnonzero(last)))

    def merge_in_order(self, table: pa.Table, order: np.ndarray, keys: Sequence[str]) -> pa.Table:
        if self.ignore_delete:
            return super().merge_in_order(table, order, keys)
        last = last_of_each_key(table.select(keys).take(order), keys)  # the keys alone, sorted
        return table.take(order if last.all() else order[last])


class FirstRowEngine(MergeEngine):
    name = "first-row"
    lookup_wrapped = False  # Java leaves it unwrapped: a key's first row is the one to keep

    def __init__(self, schema: TableSchema):
        super().__init__(schema)
        if self.sequence_fields:
            raise InvalidOptionError("'sequence.field' cannot be used with merge-engine 'first-row' (as in Paimon)")

    def check_write(self, kinds: np.ndarray) -> None:
        if not self.ignore_delete and is_retract(kinds).any():
            raise PaimonError(
                "merge-engine 'first-row' cannot accept -U/-D rows (Paimon refuses them when it compacts); "
                "set the table option 'ignore-delete' = 'true' to drop them")

    def _merge_groups(self, t, g):
        kinds = _kinds(t)
        retract = is_retract(kinds)
        if retract.any() and not self.ignore_delete:
            raise PaimonError(
                "merge-engine 'first-row' cannot accept -U/-D rows; set the table option "
                "'ignore-delete' = 'true' to ignore them")
        idx, valid = g.first_where(~retract)
        return _take_rows(t, idx, valid), (None if valid.all() else valid)


# ---- partial-update -------------------------------------------------------------------------
@dataclass(frozen=True)
class _SequenceGroup:
    seq: tuple[str, ...]
    values: tuple[str, ...]


class PartialUpdateEngine(MergeEngine):
    name = "partial-update"

    def __init__(self, schema: TableSchema):
        super().__init__(schema)
        o = self.options
        names = schema.field_names
        self.remove_on_delete = _bool(o, "partial-update.remove-record-on-delete")
        groups: list[_SequenceGroup] = []
        owner: dict[str, str] = {}
        for k, v in o.items():
            if not (k.startswith("fields.") and k.endswith(".sequence-group")):
                continue
            # names as written, spaces included: Java splits these lists without trimming
            seq = tuple(java_split(k[len("fields."):-len(".sequence-group")], ","))
            vals = tuple(java_split(v, ","))
            for f in seq + vals:
                if f not in names:
                    raise InvalidOptionError(f"table option '{k}': field '{f}' is not in the table schema {names}")
            for f in vals:
                if f in owner:
                    raise InvalidOptionError(f"field '{f}' is in more than one sequence group: '{owner[f]}' and '{k}'")
                owner[f] = k
            groups.append(_SequenceGroup(seq, vals))
        self.groups = groups
        seq_of_groups = {f for gr in groups for f in gr.seq}
        protected = {f for gr in groups for f in gr.values}
        on_group = o.get("partial-update.remove-record-on-sequence-group")
        self.remove_on_group = _split(on_group)
        if self.remove_on_delete and self.ignore_delete:
            raise InvalidOptionError("'ignore-delete' and 'partial-update.remove-record-on-delete' conflict; "
                                     "set only one of them")
        if on_group is not None and self.ignore_delete:
            raise InvalidOptionError("'ignore-delete' and 'partial-update.remove-record-on-sequence-group' "
                                     "conflict; set only one of them")
        if self.remove_on_delete and groups:
            raise InvalidOptionError("'partial-update.remove-record-on-delete' cannot be combined with "
                                     "'fields.<f>.sequence-group' options")
        bad = [f for f in self.remove_on_group if f not in seq_of_groups]
        if bad:
            raise InvalidOptionError(f"field(s) {bad} of 'partial-update.remove-record-on-sequence-group' must be "
                                     "sequence fields of a 'fields.<f>.sequence-group' option")
        self.reset_groups = [i for i, gr in enumerate(groups) if set(gr.seq) & set(self.remove_on_group)]
        default = o.get("fields.default-aggregate-function")
        self.aggregators: dict[str, _FieldAgg] = {}   # sequence-group fields with an aggregate function
        for f in schema.fields:
            if f.name in seq_of_groups or f.name in schema.primary_keys:
                continue
            func = o.get(f"fields.{f.name}.aggregate-function") or default
            if func is None:
                continue
            _check_function_name(f.name, func)
            if f.name not in protected:
                if func != "last_non_null_value":
                    raise InvalidOptionError(
                        f"field '{f.name}' has aggregate function '{func}' but partial-update needs a sequence "
                        f"group for it ('fields.<seq>.sequence-group' containing '{f.name}')")
                continue
            self.aggregators[f.name] = _group_field_agg(f.name, func, f.type, o)
        self.lookup_merges_every_key = bool(self.groups)

    def read_columns(self, names):
        extra = [f for gr in self.groups for f in gr.seq]
        return list(dict.fromkeys(list(names) + extra))

    def _merge_groups(self, t, g):
        n = t.num_rows
        kinds = _kinds(t)
        retract = is_retract(kinds)
        add = ~retract
        if retract.any() and not (self.ignore_delete or self.remove_on_delete or self.groups):
            raise PaimonError(
                "merge-engine 'partial-update' cannot accept -U/-D rows (a key has a delete record and "
                "other versions); set one of the table options: 'ignore-delete' = 'true' (ignore them), "
                "'partial-update.remove-record-on-delete' = 'true' (remove the whole row), or "
                "'fields.<seq>.sequence-group' (retract the group's columns)")
        pos = np.arange(n, dtype=np.int64)
        present = set(t.column_names)
        groups = [gr for gr in self.groups if all(s in present for s in gr.seq)]
        ranks = [_dense_rank(t, gr.seq) for gr in groups]
        processed = add if self.ignore_delete else np.ones(n, bool)
        if self.remove_on_delete:
            seg_idx, has_reset = g.last_where(kinds == DELETE)
            seg_start = np.where(has_reset, seg_idx, g.starts)
            reset_start = has_reset
        elif self.reset_groups:
            seg_start, reset_start, reset_rows = self._resets(t, g, kinds, ranks, groups)
        else:
            seg_start, reset_start = g.starts.copy(), np.zeros(g.count, bool)
        if not self.reset_groups:
            reset_rows = np.zeros(n, bool)
        active = pos >= seg_start[g.gid]
        start_row = pos == seg_start[g.gid]
        is_reset_row = start_row & reset_start[g.gid]

        group_cols = {c for gr in groups for c in gr.seq + gr.values}
        columns = {}
        for name in t.column_names:
            if name in (SEQUENCE_NUMBER, VALUE_KIND) or name in group_cols:
                continue
            col = t.column(name)
            notnull = pc.is_valid(col).to_numpy(zero_copy_only=False)
            idx, _ = g.last_where(active & (start_row | (add & notnull)))
            columns[name] = _take(col, idx)
        for gr, rank in zip(groups, ranks):
            empty = rank < 0
            cand = active & (start_row | (processed & ~empty))
            best = g.max(np.where(cand, rank, -2))
            idx, _ = g.last_where(cand & (rank == best[g.gid]))
            supplies = np.where(start_row,
                                is_reset_row | (retract & (empty | self.ignore_delete)) | (add & ~empty),
                                add)
            keep_values = supplies[idx]
            for name in gr.seq:
                columns[name] = _take(t.column(name), idx)
            aggregated = [f for f in gr.values if f in present and f not in gr.seq and f in self.aggregators]
            for name in gr.values:
                if name in present and name not in gr.seq and name not in aggregated:
                    columns[name] = _take(t.column(name), idx, keep_values)
            if aggregated:
                ev = _seq_events(rank, kinds, g, seg_start, reset_rows, self.ignore_delete)
                partial = reset_rows & (rank >= 0) & ~(retract & self.ignore_delete)
                for name in aggregated:
                    spec = self.aggregators[name]
                    if spec.func not in _RETRACTABLE and not spec.ignore_retract:
                        # Java's retract() throws: on the group's retraction events, and on a
                        # resetting -D for the fields it visits before the reset
                        reached = partial & (self._field_index[name] < self._reset_at(t, ranks, groups))
                        if ev.retract.any() or reached.any():
                            raise PaimonError(
                                f"aggregate function '{spec.func}' of field '{name}' (sequence group of "
                                f"{', '.join(gr.seq)}) cannot retract -U/-D rows; set the table option "
                                f"'fields.{name}.ignore-retract' = 'true' to ignore retractions")
                    columns[name] = _seq_group_aggregate(t.column(name), spec, ev)
        last = g.ends
        deleted = ~g.any(add)
        if self.remove_on_delete:
            deleted |= kinds[last] == DELETE
        elif self.reset_groups:
            deleted |= reset_start & (seg_start == last)
        seq = t.column(SEQUENCE_NUMBER).to_numpy()
        if self.ignore_delete:
            sidx, ok = g.last_where(add)
            out_seq = np.where(ok, seq[np.where(ok, sidx, 0)], seq[last])
        else:
            out_seq = seq[last]
        columns[SEQUENCE_NUMBER] = pa.array(out_seq, pa.int64())
        columns[VALUE_KIND] = pa.array(np.where(deleted, DELETE, INSERT).astype(np.int8))
        return pa.table({c: columns[c] for c in t.column_names}), None

    @property
    def _field_index(self) -> dict[str, int]:
        return {f: i for i, f in enumerate(self.schema.field_names)}

    def _reset_at(self, t, ranks, groups) -> np.ndarray:
        """Per row, the lowest schema index of a sequence field whose group may reset the row
        there (Java visits the fields in schema order and stops at the reset)."""
        at = np.full(t.num_rows, len(self.schema.field_names), np.int64)
        idx = self._field_index
        for rank, gr in zip(ranks, groups):
            if set(gr.seq) & set(self.remove_on_group):
                at = np.where(rank >= 0, np.minimum(at, min(idx[f] for f in gr.seq)), at)
        return at

    def _resets(self, t, g, kinds, ranks, groups):
        """Segment starts when -D rows of `partial-update.remove-record-on-sequence-group` groups
        reset the row: found one per key and pass (passes = resets of the busiest key). Returns
        the last segment's start and whether it is a reset per key, and every resetting row."""
        n = t.num_rows
        pos = np.arange(n, dtype=np.int64)
        seg_start = g.starts.copy()
        reset_start = np.zeros(g.count, bool)
        reset_ranks = [ranks[i] for i, gr in enumerate(groups) if set(gr.seq) & set(self.remove_on_group)]
        is_delete = kinds == DELETE
        reset_rows = np.zeros(n, bool)   # every row that resets (all passes), for aggregators
        if not reset_ranks or not is_delete.any():
            return seg_start, reset_start, reset_rows
        # a key's first row is compared with itself: a -D there resets too (undoing the nulls
        # its own retraction wrote into the other groups)
        first = g.starts
        for rank in reset_ranks:
            reset_start |= is_delete[first] & (rank[first] >= 0)
        reset_rows[first[reset_start]] = True
        while True:
            active = pos >= seg_start[g.gid]
            seg_id = g.gid * 2 + active
            trigger = np.zeros(n, bool)
            for rank in reset_ranks:
                big = int(rank.max()) + 3
                running = np.maximum.accumulate(seg_id * big + (rank + 1)) - seg_id * big - 1
                before = np.concatenate([[-1], running[:-1]])  # state before row r (same segment if r > start)
                trigger |= active & (pos > seg_start[g.gid]) & is_delete & (rank >= 0) & (rank >= before)
            idx, found = g.first_where(trigger)
            if not found.any():
                return seg_start, reset_start, reset_rows
            reset_rows[idx[found]] = True
            seg_start = np.where(found, idx, seg_start)
            reset_start |= found


def _dense_rank(t: pa.Table, cols: Sequence[str]) -> np.ndarray:
    """Dense rank of each row's tuple of `cols` (nulls first, as Java's comparators); -1 where
    every column is null (an empty sequence group)."""
    n = t.num_rows
    sub = t.select(list(cols))
    order = sort_nulls_first(sub, list(cols))
    srt = sub.take(pa.array(order))
    change = _key_change(srt, list(cols))
    dense = np.concatenate([[0], np.cumsum(change)]).astype(np.int64) if n else np.zeros(0, np.int64)
    rank = np.empty(n, np.int64)
    rank[order] = dense
    all_null = np.ones(n, bool)
    for c in cols:
        all_null &= pc.is_null(t.column(c)).to_numpy(zero_copy_only=False)
    rank[all_null] = -1
    return rank


# ---- partial-update: aggregate functions in sequence groups ----------------------------------
# Java's PartialUpdateMergeFunction calls a group field's aggregator once per row whose group
# sequence is not all null: `agg(acc, x)` when the row's group sequence is >= the row so far
# (`newer`), else `aggReversed(acc, x)` = `agg(x, acc)` (so first_value takes an older row's
# value, last_non_null_value only fills a null, listagg prepends), and `retract(acc, x)` for a
# -U/-D row, newer or not. A key's first row that is a retraction, and a -D of a
# `remove-record-on-sequence-group` group, (re)start the row from their own values;
# first_value/first_non_null_value keep whether they were initialized across such resets.
def _group_field_agg(field: str, func: str, t: DataType, o: dict[str, str]) -> "_FieldAgg":
    """The aggregator of a sequence-group field (partial-update), validated."""
    if func == "first_not_null_value":
        func = "first_non_null_value"
    ignore_retract = _bool(o, f"fields.{field}.ignore-retract")
    collection = None
    if func in COLLECTION_FUNCTIONS:
        collection = collection_spec(field, func, t, o)
        if func in ("merge_map", "nested_update") and not ignore_retract:
            raise InvalidOptionError(
                f"aggregate function '{func}' on field '{field}' of a sequence group needs "
                f"'fields.{field}.ignore-retract' = 'true' in paimon-streaming (partial-update): Paimon folds a "
                "row with an older group sequence in before the accumulator (aggReversed) and retractions in "
                "between, an order we do not reproduce")
    else:
        _check_function_type(field, func, t)
    return _field_agg(field, func, ignore_retract, o, collection)


@dataclass
class _SeqEvents:
    """The aggregator calls of one sequence group, in merge order: per event its row, key
    (`gid`), kind (`start`: the row restarts from this row's values; `add`; `retract`), whether
    it is `newer` (agg) or older (aggReversed), and whether it is in the key's last segment
    (after its last reset), where the result comes from."""
    rows: np.ndarray
    gid: np.ndarray
    start: np.ndarray
    add: np.ndarray
    retract: np.ndarray
    newer: np.ndarray
    active: np.ndarray
    count: int

    def last(self, mask: np.ndarray) -> np.ndarray:
        """Per key the last event in `mask` (-1: none)."""
        out = np.full(self.count, -1, np.int64)
        np.maximum.at(out, self.gid[mask], np.flatnonzero(mask))
        return out

    def first(self, mask: np.ndarray) -> np.ndarray:
        """Per key the first event in `mask` (len(events): none)."""
        m = len(mask)
        out = np.full(self.count, m, np.int64)
        np.minimum.at(out, self.gid[mask], np.flatnonzero(mask))
        return out


def _seq_events(rank: np.ndarray, kinds: np.ndarray, g: _Groups, seg_start: np.ndarray, reset_rows: np.ndarray,
                ignore_delete: bool) -> _SeqEvents:
    n = len(rank)
    retract = is_retract(kinds)
    first = np.zeros(n, bool)
    first[g.starts] = True
    start = (first & retract) | reset_rows       # Java's initRow, or a reset by a -D
    event = (rank >= 0) & ~reset_rows & ~(retract & ignore_delete)
    reps = start.astype(np.int64) + event        # a key's first row retracting: start, then retract
    rows = np.repeat(np.arange(n, dtype=np.int64), reps)
    copy = np.arange(len(rows)) - np.repeat(np.cumsum(reps) - reps, reps)
    is_start = start[rows] & (copy == 0)
    gid = g.gid[rows]
    seg = np.cumsum(first | reset_rows)[rows]   # segment of each event, ascending
    r1 = rank[rows] + 1                          # 0: the group's sequence is all null
    big = n + 2
    run = np.maximum.accumulate(seg * big + r1)  # the row's group sequence after each event
    before = np.maximum(np.concatenate([[0], run[:-1]]) - seg * big, 0) if len(rows) else run
    return _SeqEvents(rows, gid, is_start, ~is_start & ~retract[rows], ~is_start & retract[rows], r1 >= before,
                      rows >= seg_start[gid], g.count)


def _seq_group_aggregate(col: pa.ChunkedArray, spec: "_FieldAgg", ev: _SeqEvents):
    """One sequence-group field's aggregate per key (see the section comment)."""
    func = spec.func
    if not len(ev.rows):   # no row has the group's sequence: the field stays null
        return pa.nulls(ev.count, col.type)
    nn = pc.is_valid(col).to_numpy(zero_copy_only=False)[ev.rows]
    retract = ev.retract & (not spec.ignore_retract)
    act = ev.active
    e = np.arange(len(ev.rows), dtype=np.int64)

    def pick(idx, valid):   # the value of event idx per key, null where not valid
        if not valid.any():
            return pa.nulls(ev.count, col.type)
        return _take(col, ev.rows[np.where(valid, idx, 0)], valid)

    if spec.collection is not None:
        # collect's own aggReversed appends (Java's FieldCollectAgg), unless wrapped for
        # ignore-retract; otherwise an older row goes in front: fold in that order (retractions
        # reach here only for collect without ignore-retract, in row order)
        sel = act & (ev.start | ev.add | retract)
        order = np.flatnonzero(sel)
        if func != "collect" or spec.ignore_retract:
            place = np.where(ev.add & ~ev.newer, -(e + 1), e + 1)
            order = order[np.lexsort((place[order], ev.gid[order]))]
        values = col.take(pa.array(ev.rows[order], pa.int64()))
        out = aggregate_collection(spec.collection, values, spec.name, (ev.start | ev.add)[order], retract[order],
                                   ev.gid[order], ev.count)
        # a row started from a retraction or reset (Java's initRow) and nothing folded in
        # since keeps that row's collection as it is (duplicates, null nested rows)
        # a null changes nothing (nor does retracting an empty collection), but a set dedups
        taken = col.take(pa.array(ev.rows, pa.int64()))
        taken = taken.combine_chunks() if isinstance(taken, pa.ChunkedArray) else taken
        size = np.diff(taken.offsets.to_numpy(zero_copy_only=False))   # 0 for a null too
        changes = (nn & ~(ev.retract & (size == 0))) | (ev.add & spec.collection.distinct)
        first, folded = ev.last(act & ev.start), ev.last(act & (ev.add | retract) & changes)
        raw = (first >= 0) & (folded < 0)
        if raw.any():
            out = pc.if_else(pa.array(raw), pick(first, raw), out)
        return out
    if func in ("sum", "product"):
        sel = np.flatnonzero(act)
        values = col.take(pa.array(ev.rows[sel], pa.int64()))
        adds, rets, gid = (ev.start | ev.add)[sel], retract[sel], ev.gid[sel]
        if func == "sum":
            return sum_of(values, adds, rets, gid, ev.count)
        return product_of(values, adds, rets, gid, ev.count, spec.name)
    if func in ("min", "max", "bool_and", "bool_or"):
        values = col.take(pa.array(ev.rows, pa.int64()))
        sel = act & (ev.start | ev.add)
        if func in ("min", "max") and pa.types.is_floating(col.type):
            return float_extreme(values, sel, ev.gid, ev.count, func)
        hash_func = {"bool_and": "all", "bool_or": "any"}.get(func, func)
        return hash_aggregate(_null_where(values, ~sel), ev.gid, ev.count, hash_func).cast(col.type)
    if func == "last_value":
        idx = ev.last(act & (ev.start | (ev.add & ev.newer) | retract))
        found = idx >= 0
        return pick(idx, found & ~retract[np.where(found, idx, 0)])
    if func == "last_non_null_value":
        d = ev.last(act & (ev.start | (ev.add & ev.newer & nn) | (retract & nn)))
        has_d = d >= 0
        d0 = np.where(has_d, d, 0)
        d_value = has_d & ~retract[d0] & nn[d0]
        later = ev.first(act & ev.add & ~ev.newer & nn & (e > d[ev.gid]))   # older rows fill a null
        found = later < len(e)
        return pick(np.where(d_value, d, later), d_value | found)
    if func in ("first_value", "first_non_null_value"):
        if func == "first_value":
            init = ev.first(ev.add)
        else:
            writes = ev.start | (ev.add & ~ev.newer)   # the accumulator before initialization
            last_write = np.maximum.accumulate(np.where(writes, e, -1))
            wb = np.concatenate([[-1], last_write[:-1]]) if len(e) else last_write
            key_first = ev.first(np.ones(len(e), bool))
            ok = wb >= key_first[ev.gid]
            acc_nn = ok & nn[np.where(ok, wb, 0)]
            init = ev.first(ev.add & ((ev.newer & nn) | (~ev.newer & acc_nn)))
        at_init = e == init[ev.gid]
        idx = ev.last(act & (ev.start | (ev.add & np.where(at_init, ev.newer, ~ev.newer))))
        return pick(idx, idx >= 0)
    if func == "listagg":
        values = _strings(col).take(pa.array(ev.rows, pa.int64()))
        used, older = ev.active & (ev.start | ev.add), ev.add & ~ev.newer
        return listagg(values, used, ev.gid, ev.count, spec.delimiter, spec.distinct, older).cast(col.type)
    raise PaimonError(f"aggregate function '{func}' is not implemented for sequence groups")  # guarded


# ---- aggregation ----------------------------------------------------------------------------
@dataclass(frozen=True)
class _FieldAgg:
    name: str
    func: str              # primary_key for key columns
    ignore_retract: bool = False
    delimiter: str = ","
    distinct: bool = False                     # listagg
    collection: CollectionSpec | None = None   # collect, merge_map, nested_update, nested_partial_update


def _field_agg(field: str, func: str, ignore_retract: bool, o: dict[str, str],
               collection: CollectionSpec | None) -> _FieldAgg:
    distinct = func == "listagg" and _bool(o, f"fields.{field}.distinct")
    return _FieldAgg(field, func, ignore_retract, o.get(f"fields.{field}.list-agg-delimiter", ","), distinct,
                     collection)


def _check_function_name(field: str, func: str) -> None:
    if func in AGGREGATE_FUNCTIONS:
        return
    if func in _JAVA_ONLY_FUNCTIONS:
        raise InvalidOptionError(f"aggregate function '{func}' of field '{field}' is not supported by "
                                 f"paimon-streaming yet (supported: {', '.join(AGGREGATE_FUNCTIONS)})")
    hint = " (Paimon has no 'count'; sum a column of 1s instead)" if func == "count" else ""
    raise InvalidOptionError(f"unknown aggregate function '{func}' for field '{field}' "
                             f"(option 'fields.{field}.aggregate-function'){hint}; "
                             f"supported: {', '.join(AGGREGATE_FUNCTIONS)}")


def _check_function_type(field: str, func: str, t: DataType) -> None:
    ok = True
    if func in ("sum", "product"):
        ok = t.root in _NUMERIC
    elif func in ("min", "max"):
        ok = t.root in _COMPARABLE
    elif func in ("bool_and", "bool_or"):
        ok = t.root == "BOOLEAN"
    elif func == "listagg":
        ok = t.root == "VARCHAR" and t.precision == MAX_LENGTH
    if not ok:
        hint = (" (Java 1.4.2 creates such a table, then fails its first write: 'Incomparable type: BOOLEAN'; "
                f"use {'bool_or' if func == 'max' else 'bool_and'})" if func in ("min", "max") and t.root == "BOOLEAN"
                else "")
        raise InvalidOptionError(f"aggregate function '{func}' cannot be used on field '{field}' of type {t}{hint}")


class AggregationEngine(MergeEngine):
    name = "aggregation"
    lookup_merges_every_key = True

    def __init__(self, schema: TableSchema):
        super().__init__(schema)
        o = self.options
        self.remove_on_delete = _bool(o, "aggregation.remove-record-on-delete")
        default = o.get("fields.default-aggregate-function")
        self.fields: dict[str, _FieldAgg] = {}
        for f in schema.fields:
            explicit = o.get(f"fields.{f.name}.aggregate-function")
            if f.name in self.sequence_fields:
                if explicit is not None:
                    raise InvalidOptionError(f"sequence field '{f.name}' must not have an aggregate function")
                func = "last_value"
            elif f.name in schema.primary_keys:
                func = "primary_key"
            else:
                func = explicit or default or "last_non_null_value"
                _check_function_name(f.name, func)
                if func not in COLLECTION_FUNCTIONS:
                    _check_function_type(f.name, func, f.type)
            ignore_retract = _bool(o, f"fields.{f.name}.ignore-retract")
            if ignore_retract and self.remove_on_delete:
                raise InvalidOptionError(f"'aggregation.remove-record-on-delete' and 'fields.{f.name}.ignore-retract' "
                                         "conflict; set only one of them")
            if func == "first_not_null_value":
                func = "first_non_null_value"
            collection = collection_spec(f.name, func, f.type, o) if func in COLLECTION_FUNCTIONS else None
            self.fields[f.name] = _field_agg(f.name, func, ignore_retract, o, collection)

    def _changes_lone_rows(self, kinds: np.ndarray) -> np.ndarray:
        # every function returns a lone +I/+U as it is, but these (a distinct collect, nested
        # rows) normalize it; a lone retraction is retracted from nothing
        if any(f.collection is not None and (f.collection.distinct or f.func.startswith("nested"))
               for f in self.fields.values()):
            return np.ones(len(kinds), bool)
        return is_retract(kinds) & ~((kinds == DELETE) & self.remove_on_delete)

    def _merge_groups(self, t, g):
        n = t.num_rows
        kinds = _kinds(t)
        pos = np.arange(n, dtype=np.int64)
        retract_all = is_retract(kinds)
        if self.remove_on_delete:
            d_idx, has_reset = g.last_where(kinds == DELETE)
            seg_start = np.where(has_reset, d_idx, g.starts)
        else:
            has_reset = np.zeros(g.count, bool)
            seg_start = g.starts
        active = pos >= seg_start[g.gid]
        reset_row = (pos == seg_start[g.gid]) & has_reset[g.gid]
        real_add = ~retract_all
        add = active & (real_add | reset_row)          # rows aggregated (a reset row initializes)
        retract = active & retract_all & ~reset_row     # rows retracted
        ctx = _AggContext(g, pos, seg_start, has_reset, add, retract, real_add)
        columns = {}
        for name in t.column_names:
            if name in (SEQUENCE_NUMBER, VALUE_KIND):
                continue
            spec = self.fields.get(name, _FieldAgg(name, "primary_key"))
            if spec.func not in _RETRACTABLE and spec.func != "primary_key" and not spec.ignore_retract:
                offending = retract_all & (kinds != DELETE) if self.remove_on_delete else retract_all
                if offending.any():
                    raise PaimonError(
                        f"aggregate function '{spec.func}' of field '{name}' cannot retract -U/-D rows; set the "
                        f"table option 'fields.{name}.ignore-retract' = 'true' to ignore retractions")
            columns[name] = _aggregate(t.column(name), spec, ctx)
        last = g.ends
        deleted = (kinds[last] == DELETE) & self.remove_on_delete
        columns[SEQUENCE_NUMBER] = pa.array(t.column(SEQUENCE_NUMBER).to_numpy()[last], pa.int64())
        columns[VALUE_KIND] = pa.array(np.where(deleted, DELETE, INSERT).astype(np.int8))
        return pa.table({c: columns[c] for c in t.column_names}), None


@dataclass
class _AggContext:
    g: _Groups
    pos: np.ndarray
    seg_start: np.ndarray     # per group
    has_reset: np.ndarray     # per group: the segment starts at a -D (remove-record-on-delete)
    add: np.ndarray           # per row: aggregated (incl. the reset row)
    retract: np.ndarray       # per row: retracted
    real_add: np.ndarray      # per row: +I/+U


def _aggregate(col: pa.ChunkedArray, spec: _FieldAgg, c: _AggContext):
    g = c.g
    func = spec.func
    notnull = pc.is_valid(col).to_numpy(zero_copy_only=False)
    add, retract = c.add, (c.retract if not spec.ignore_retract else np.zeros_like(c.retract))
    if func == "primary_key":
        return _take(col, g.ends)
    if spec.collection is not None:
        return aggregate_collection(spec.collection, col, spec.name, add, retract, g.gid, g.count)
    if func == "last_value":
        idx, valid = g.last_where(add | retract)
        return _take(col, idx, valid & add[np.where(valid, idx, 0)])
    if func == "last_non_null_value":
        idx, valid = g.last_where((add | retract) & notnull)
        return _take(col, idx, valid & add[np.where(valid, idx, 0)])
    if func in ("first_value", "first_non_null_value"):
        extra = notnull if func == "first_non_null_value" else np.ones_like(notnull)
        active = c.pos >= c.seg_start[g.gid]
        first, found = g.first_where(active & c.real_add & extra)
        before = g.any(c.real_add & extra & (c.pos < c.seg_start[g.gid]))
        use_reset = c.has_reset & (before | ~found)
        idx = np.where(use_reset, c.seg_start, first)
        return _take(col, idx, use_reset | found)
    if func == "sum":
        return sum_of(col, add, retract, g.gid, g.count)
    if func == "product":
        return product_of(col, add, retract, g.gid, g.count, spec.name)
    if func in ("min", "max") and pa.types.is_floating(col.type):
        return float_extreme(col, add, g.gid, g.count, func)
    if func in ("min", "max", "bool_and", "bool_or"):
        values = _null_where(col, ~add)
        hash_func = {"bool_and": "all", "bool_or": "any"}.get(func, func)
        return _group_agg(values, g, hash_func, _MIN_ONE).cast(col.type)
    if func == "listagg":
        return listagg(_strings(col), add, g.gid, g.count, spec.delimiter, spec.distinct).cast(col.type)
    raise PaimonError(f"aggregate function '{func}' is not implemented")  # guarded by validation


def _strings(col) -> pa.Array:
    col = col.combine_chunks() if isinstance(col, pa.ChunkedArray) else col
    return col.cast(pa.string())


# ---- entry points ---------------------------------------------------------------------------
_ENGINES = {"deduplicate": DeduplicateEngine, "first-row": FirstRowEngine,
            "partial-update": PartialUpdateEngine, "aggregation": AggregationEngine}


def engine_for(schema: TableSchema) -> MergeEngine:
    """The merge engine of a table, with its options parsed and validated."""
    name = str(schema.options.get("merge-engine", "deduplicate")).strip().lower()
    cls = _ENGINES.get(name)
    if cls is None:
        raise InvalidOptionError(f"invalid value {name!r} for table option 'merge-engine': expected one of "
                                 f"{', '.join(_ENGINES)}")
    return cls(schema)


def validate_engine_options(schema: TableSchema) -> None:
    """Create-time checks of the merge-engine and row-kind options (call from TableSchema.validate)."""
    o = schema.options
    for key in IGNORE_DELETE_KEYS + ("ignore-update-before", "partial-update.remove-record-on-delete",
                                     "aggregation.remove-record-on-delete"):
        _bool(o, key)
    field = o.get("rowkind.field")
    if field is not None:
        if field not in schema.field_names:
            raise InvalidOptionError(f"rowkind.field column '{field}' is not in the schema {schema.field_names}")
        if not schema.field(field).type.is_string:
            raise InvalidOptionError(f"rowkind.field column '{field}' must be a string column, "
                                     f"not {schema.field(field).type}")
    if schema.primary_keys:
        engine_for(schema)
        first_row = str(o.get("merge-engine", "deduplicate")).strip().lower() == "first-row"
        producer = str(o.get("changelog-producer", "none")).strip().lower()
        if first_row and producer not in ("none", "lookup"):  # Java's SchemaValidation
            raise InvalidOptionError(f"merge engine 'first-row' cannot go with 'changelog-producer' = '{producer}': "
                                     "Paimon supports only 'none' and 'lookup' with it (and refuses to open such a "
                                     "table)")
        if first_row and _bool(o, "deletion-vectors.enabled"):  # Java's SchemaValidation
            raise InvalidOptionError("merge engine 'first-row' cannot go with 'deletion-vectors.enabled' = 'true' (Paimon "
                                     "refuses to open such a table): first-row never deletes an old row, and its "
                                     "readers already skip level 0 as deletion-vector readers do")
    for name in sequence_fields(o):
        if o.get(f"fields.{name}.aggregate-function") is not None:
            raise InvalidOptionError(f"sequence field '{name}' must not have an aggregate function")


def merge_sorted(table: pa.Table, keys: Sequence[str], engine: MergeEngine) -> pa.Table:
    """Merge `table` (sorted by `sort_for_merge`) with `engine`: one row per key, see the module doc."""
    return engine.merge(table, keys)
