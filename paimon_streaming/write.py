"""Turning an Arrow batch into data files and commit messages.

Steps, all columnar: conform the batch to the table schema (by column name, clear errors),
with its row kinds if it has any (a row-kind column of the input, or the table option
`rowkind.field`); drop -U/-D rows as `ignore-delete` / `ignore-update-before` say; assign each
row a partition and a bucket; group rows by (partition, bucket); per group write one sorted
level-0 file merged by key with the table's merge engine (primary-key tables, sequence numbers
continuing from the bucket's maximum; -U/-D results stay in the file, as `_VALUE_KIND`, so
they retract older versions on read) or a plain file (append tables). Nothing is committed
here: the caller hands the returned messages to `FileStoreCommit`.
"""
from __future__ import annotations

import collections
import datetime as dt
import os
from concurrent.futures import Future, ThreadPoolExecutor
from dataclasses import dataclass
from functools import cached_property
from typing import Iterator, Sequence

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from .append_compaction import AppendBucket, AppendCompactor
from .binary_row import deserialize_row, encode_rows, serialize_row, serialize_rows
from .branches import MAIN, branch_path
from .bucket import bucket_key_hashes, fixed_buckets
from .commit import CommitMessage, Increment
from .datafile import ORC, ParquetSettings, orc_legacy_ltz_as_read, write_data_file
from . import file_index
from .file_index import INDEX_SUFFIX, FileIndexSpec
from .default_values import with_defaults
from .dynamic_bucket import DynamicBucketAssigner
from . import variant
from .zones import instants_of_wall_times, java_zone, local_wall_times
from .errors import (InvalidOptionError, PaimonError, SchemaMismatchError, UnsupportedOperationError,
                     UnsupportedTypeError)
from .external_paths import ExternalPaths
from .file_settings import FileSettingsByLevel
from .fileio import FileIO
from .keyvalue import (INSERT, SEQUENCE_NUMBER, VALUE_KIND, decode_key, file_fields,
                       first_key_above, key_fields, thin_mode)
from .manifest import DataFileMeta, IndexManifestEntry, ManifestEntry, SimpleStats
from .manifest.entries import (DELETION_VECTORS_INDEX, EMPTY_ROW, EMPTY_STATS, FILE_SOURCE_APPEND,
                               FILE_SOURCE_COMPACT)
from . import cross_partition, data_evolution, row_tracking
from .options import AVRO_WRITES, ORC_LTZ_LEGACY, CoreOptions, unimplemented_feature, unimplemented_features
from .partition_expire import PartitionTimeCheck
from .retraction_values import fill_retractions, zero_value
from .paths import PathFactory, TableDirs, partition_path
from .merge_engine import engine_for, is_retract, row_kind_filter, row_kinds, sort_and_merge, wide_enough
from .schema import SchemaManager, TableSchema, cast_type_check
from .stats import KEY_STATS_MODE, collect_stats
from .system_fields import is_system_field, reserved_names_message
from .lsm.changelog import changelog_producer, input_changelog
from .lsm.dv_compaction import BucketCompactor, BucketFiles
from .lsm.lookup import KEY_INDEXES, KeyIndex
from .types import MAX_LENGTH, MULTISET_COUNT, DataField, DataType, from_arrow, map_arrow_leaves, to_arrow

_EPOCH = dt.datetime(1970, 1, 1)
_BUCKET_BITS = 31  # a (partition, bucket) group id holds any bucket Paimon allows (a Java int)
_FEW_GROUPS = 8    # up to this many groups in a batch, each is found by a comparison pass
# Types of a one-column key whose sort order is the stats' min/max order and whose stats keep whole values
# (not floats: NaN and -0.0; not strings: truncated to 128 characters; binaries have none).
_BOUNDS_ARE_STATS = frozenset({"BOOLEAN", "TINYINT", "SMALLINT", "INT", "BIGINT", "DATE", "TIME",
                               "TIMESTAMP", "TIMESTAMP_LTZ", "DECIMAL"})


def _between_zones(col: pa.ChunkedArray, target: pa.DataType, time_zone: str | None) -> pa.ChunkedArray:
    """An instant written into a TIMESTAMP (a wall time) as the wall time it shows in
    `time_zone` (or its own zone), a wall time written into a TIMESTAMP WITH LOCAL TIME ZONE as
    the instant it is in `time_zone` (or UTC), at any depth (inside ROW, ARRAY and MAP values,
    where a cast alone would relabel the value); anything else as it is."""
    if not _zones_differ(col.type, target):
        return col
    return pa.chunked_array([_zones_converted(c, target, time_zone) for c in col.chunks])


def _hidden_nulls_filled(name: str, col: pa.ChunkedArray, target: pa.DataType) -> pa.ChunkedArray:
    """`col` with the nulls of NOT NULL fields under null ROWs (at any depth) set to zero values:
    Spark's Arrow output holds nulls in a ROW's fields where the whole ROW is null, which mean
    nothing there, but which Arrow's cast refuses. A null where its ROW is there stays (the
    cast names it)."""
    if not _not_null_inside(target):
        return col
    return pa.chunked_array([_hidden_filled(c, target) for c in col.chunks])


def _null_column(rows: int, target: pa.DataType) -> pa.Array:
    """`rows` nulls of `target`; a ROW's NOT NULL fields under them hold zero values (Parquet's
    writer refuses a null there, even under a null ROW)."""
    nulls = pa.nulls(rows, target)
    return _hidden_filled(nulls, target) if _not_null_inside(target) else nulls


def _not_null_inside(t: pa.DataType) -> bool:
    if pa.types.is_struct(t):
        return any(not f.nullable or _not_null_inside(f.type) for f in t)
    if pa.types.is_list(t) or pa.types.is_large_list(t):
        return not t.value_field.nullable or _not_null_inside(t.value_type)
    if pa.types.is_map(t):
        return not t.item_field.nullable or _not_null_inside(t.item_type)
    return False


def _hidden_filled(arr: pa.Array, target: pa.DataType) -> pa.Array:
    t = arr.type
    mask = arr.is_null() if arr.null_count else None
    if pa.types.is_struct(t) and pa.types.is_struct(target):
        children = []
        for i, f in enumerate(t):
            child = arr.field(i)
            j = target.get_field_index(f.name)
            if j >= 0:
                child = _hidden_filled(child, target.field(j).type)
                if not target.field(j).nullable and child.null_count and mask is not None:
                    hidden = pc.and_(child.is_null(), mask)
                    if pc.any(hidden).as_py():
                        child = pc.if_else(hidden, zero_value(child.type), child)
            children.append(child)
        return pa.StructArray.from_arrays(children, fields=list(t), mask=mask)
    if pa.types.is_fixed_size_list(t) and pa.types.is_list(target):
        # a null slot of a fixed-size list still holds its elements (nulls, often), which mean
        # nothing there: it becomes an empty list slot (a cast would keep them as elements)
        lengths = pc.fill_null(pc.list_value_length(arr), 0)
        offsets = pa.concat_arrays([pa.array([0], pa.int32()), pc.cumulative_sum(lengths).cast(pa.int32())])
        t = pa.list_(t.value_field)
        arr = pa.ListArray.from_arrays(offsets, arr.flatten(), type=t, mask=mask)
    if ((pa.types.is_list(t) or pa.types.is_large_list(t)) and pa.types.is_list(target)) \
            or (pa.types.is_map(t) and pa.types.is_map(target)):
        start, end = arr.offsets[0].as_py(), arr.offsets[-1].as_py()  # a slice: its entries only, from 0
        offsets = pc.subtract(arr.offsets, start)
        if pa.types.is_map(t):  # (the types given: `from_arrays` would make NOT NULL values nullable)
            items = _hidden_filled(arr.items.slice(start, end - start), target.item_type)
            return pa.MapArray.from_arrays(offsets, arr.keys.slice(start, end - start), items, mask=mask,
                                           type=pa.map_(t.key_field, t.item_field.with_type(items.type)))
        values = _hidden_filled(arr.values.slice(start, end - start), target.value_type)
        element = t.value_field.with_type(values.type)
        return type(arr).from_arrays(offsets, values, mask=mask,
                                     type=pa.large_list(element) if pa.types.is_large_list(t) else pa.list_(element))
    return arr


def _zones_differ(source: pa.DataType, target: pa.DataType) -> bool:
    """Whether a timestamp somewhere in `source` is an instant where `target` has a wall time,
    or the reverse (ROW fields matched by name, as `conform` matches columns)."""
    if pa.types.is_timestamp(source) and pa.types.is_timestamp(target):
        return (source.tz is None) != (target.tz is None)
    if pa.types.is_struct(source) and pa.types.is_struct(target):
        return any(_zones_differ(f.type, target.field(f.name).type) for f in source
                   if target.get_field_index(f.name) >= 0)
    if pa.types.is_map(source) and pa.types.is_map(target):
        return _zones_differ(source.key_type, target.key_type) or _zones_differ(source.item_type, target.item_type)
    if _is_any_list(source) and pa.types.is_list(target):
        return _zones_differ(source.value_type, target.value_type)
    return False


def _is_any_list(t: pa.DataType) -> bool:
    return pa.types.is_list(t) or pa.types.is_large_list(t) or pa.types.is_fixed_size_list(t)


def _zones_converted(arr: pa.Array, target: pa.DataType, time_zone: str | None) -> pa.Array:
    """One chunk of `_between_zones`: nested types rebuilt around their converted children."""
    t = arr.type
    if not _zones_differ(t, target):
        return arr
    if pa.types.is_fixed_size_list(t):  # as a list: offsets to rebuild it around its converted values
        arr, t = arr.cast(pa.list_(t.value_field)), pa.list_(t.value_field)
    if pa.types.is_timestamp(t):
        if target.tz is None:
            zoned = arr if time_zone is None else arr.cast(pa.timestamp(t.unit, tz=java_zone(time_zone)))
            return local_wall_times(zoned)
        return instants_of_wall_times(arr, time_zone or "UTC")
    mask = arr.is_null() if arr.null_count else None
    if pa.types.is_struct(t):
        children = [_zones_converted(arr.field(i), target.field(f.name).type, time_zone)
                    if target.get_field_index(f.name) >= 0 else arr.field(i) for i, f in enumerate(t)]
        return pa.StructArray.from_arrays(children, names=[f.name for f in t], mask=mask)
    start, end = arr.offsets[0].as_py(), arr.offsets[-1].as_py()  # a slice: its entries only, from 0
    offsets = pc.subtract(arr.offsets, start)
    if pa.types.is_map(t):
        return pa.MapArray.from_arrays(offsets, _zones_converted(arr.keys.slice(start, end - start), target.key_type,
                                                                 time_zone),
                                       _zones_converted(arr.items.slice(start, end - start), target.item_type,
                                                        time_zone), mask=mask)
    return type(arr).from_arrays(offsets, _zones_converted(arr.values.slice(start, end - start), target.value_type,
                                                           time_zone), mask=mask)


def conform(data: pa.Table | pa.RecordBatch | list[pa.Table], schema: TableSchema, table_name: str,
            row_kind_column: str | None = None, time_zone: str | None = None) -> pa.Table:
    """Match columns by name and cast to the table's types, nulls of columns with a default
    value replaced by it (default_values.py); errors name the column.

    An instant written into a TIMESTAMP column (a wall time) becomes the wall time it shows in
    `time_zone` (Spark's session time zone, as Spark's casts do; Java's zone ids such as
    'GMT+08:00', 'UTC-3' or 'CST' too, `zones.java_zone`), else in its own Arrow zone; a
    wall time written into a TIMESTAMP WITH LOCAL TIME ZONE column is read in `time_zone`, else
    UTC (one the zone repeats as the earlier instant, one it skips moved later by the gap, as
    java.time and Spark's casts read them).

    Row kinds: `row_kind_column` names an input column (not stored unless it is a table
    column) of +I/-U/+U/-D strings (or int8 kind bytes); without it the table option
    `rowkind.field` (a stored string column, as in Paimon) gives them. Other input columns
    with names Paimon reserves (`_VALUE_KIND`, `_KEY_*`, ...) are refused: they would be taken
    for system columns. When a batch has row kinds, the result carries them as a trailing int8
    `_VALUE_KIND` column.
    """
    data = arrow_table(data)
    if isinstance(data, list):
        # a string column past 2 GiB in one batch is widened there: concatenation widens the others
        return pa.concat_tables([conform(d, schema, table_name, row_kind_column, time_zone) for d in data],
                                promote_options="permissive")
    data, kinds = _split_row_kinds(data, schema, table_name, row_kind_column)
    names = schema.field_names
    table_columns, input_columns = set(names), set(data.column_names)
    twice = sorted(c for c, n in collections.Counter(data.column_names).items() if n > 1)
    if twice:
        raise SchemaMismatchError(f"input of table {table_name} has column(s) {twice} more than once")
    reserved = [c for c in data.column_names if is_system_field(c) and c not in table_columns]
    if reserved:
        raise SchemaMismatchError(f"input of table {table_name}: {reserved_names_message(reserved)}, or pass "
                                  "row kinds with row_kind_column=")
    unknown = [c for c in data.column_names if c not in table_columns]
    if unknown:
        raise SchemaMismatchError(f"column(s) {unknown} are not in table {table_name} (columns: {names})")
    columns = []
    for f in schema.fields:
        target = to_arrow(f.type)
        if f.name not in input_columns:
            if not f.type.nullable and f.default_value is None:
                raise SchemaMismatchError(
                    f"column '{f.name}' of table {table_name} is NOT NULL but missing from the input")
            columns.append(variant.conform(f.name, with_defaults(_null_column(data.num_rows, target), f), f.type))
            continue
        col = _in_paimon_types(f.name, _plainly_encoded(f.name, data.column(f.name)))
        if pa.types.is_null(col.type):  # an all-null column of Arrow type null fits any column
            col = pa.chunked_array([_null_column(len(col), target)])
        else:
            try:
                have = from_arrow(col.type)
            except UnsupportedTypeError as exc:
                raise UnsupportedTypeError(f"column '{f.name}' of the input of table {table_name}: {exc}") from None
            cast_type_check(f.name, have, f.type)
        col = variant.conform(f.name, col, f.type)  # before a cast: a null variant's parts may be null
        target = wide_enough(target, col.nbytes)  # 2 GiB of strings: 64-bit offsets (merge_engine.py)
        if col.type != target:
            col = _hidden_nulls_filled(f.name, col, target)
            given = col
            try:
                col = _between_zones(_integers_as_decimals(col, target), target, time_zone).cast(target)
            except (pa.ArrowInvalid, pa.ArrowNotImplementedError) as exc:
                raise SchemaMismatchError(
                    f"column '{f.name}' cannot be cast from {given.type} to {target}: {exc}") from None
            if pa.types.is_float32(target) and pa.types.is_float64(given.type):
                _check_float_range(f.name, given, col)
            for chunk in col.chunks:
                _check_milliseconds_of_day(f.name, chunk)
        for chunk in col.chunks:
            _check_not_null_elements(f.name, chunk, f.type)
            _check_unique_map_keys(f.name, chunk, f.type)
            _check_years(f.name, chunk)
            _check_utf8(f.name, chunk)
        check_decimals_fit(f.name, col)
        for chunk in col.chunks:
            _check_lengths(f.name, f.type, chunk)
        col = with_defaults(col, f)
        if not f.type.nullable and col.null_count:
            col = fill_retractions(col, f.name, schema, kinds, table_name)
        columns.append(col)
    arrow_schema = schema.arrow_schema()
    out = pa.Table.from_arrays(columns, schema=pa.schema(
        [f.with_type(c.type) if c.type != f.type and c.type in _WIDENED else f for f, c in zip(arrow_schema, columns)],
        metadata=arrow_schema.metadata))
    if kinds is not None:
        out = out.append_column(pa.field(VALUE_KIND, pa.int8(), False), pa.array(kinds, pa.int8()))
    return out


_WIDENED = (pa.large_string(), pa.large_binary())  # what `wide_enough` makes a column


def arrow_table(data) -> pa.Table | list[pa.Table]:
    """The input of a write as one Arrow table (a list of them for a list of batches or tables):
    a Table, a RecordBatch, a RecordBatchReader (read whole: it is one commit), a list, or any
    object with the Arrow stream interface (pandas and polars DataFrames, duckdb results), as
    deltalake takes them."""
    if isinstance(data, pa.Table):
        return data
    if isinstance(data, pa.RecordBatch):
        return pa.Table.from_batches([data])
    if isinstance(data, pa.RecordBatchReader):
        return data.read_all()
    if isinstance(data, (list, tuple)) and data and all(isinstance(d, (pa.Table, pa.RecordBatch)) for d in data):
        # kept apart: each batch is cast to the table's types on its own (`conform`), as it would
        # be written alone; Arrow's unified type could round (int32 beside float32 as float32)
        return [arrow_table(d) for d in data]
    if isinstance(data, (list, tuple)) and not data:
        raise ValueError("a write of an empty list of batches has no columns: pass a table with no rows instead")
    if type(data).__module__.startswith("pandas") and hasattr(data, "reset_index"):
        return _pandas_table(data)
    if hasattr(data, "__arrow_c_stream__"):
        return pa.table(data)
    raise TypeError(f"a write takes a pyarrow Table, RecordBatch or RecordBatchReader, a list of batches, or an object "
                    f"with the Arrow stream interface (pandas, polars, duckdb), not {type(data).__name__}")


def _pandas_table(df) -> pa.Table:
    """A named index (a RangeIndex too, which pyarrow keeps only in metadata) is a column; an
    unnamed one (0, 1, 2, ... or what a filter left of it) is not data, nor is a level that
    repeats a column (`set_index("k", drop=False)`): a level named like a column but holding
    other values is refused."""
    named = [n for n in df.index.names if n is not None]
    repeated = [n for n in named if n in df.columns]
    for n in repeated:
        column, level = df[n], df.index.get_level_values(n).to_series()
        if column.ndim != 1 or not column.reset_index(drop=True).equals(level.reset_index(drop=True)):
            raise SchemaMismatchError(f"the input's index level '{n}' holds other values than its column '{n}': "
                                      "rename or drop one of them")
    moved = [n for n in named if n not in repeated]
    return pa.Table.from_pandas(df.reset_index(level=moved) if moved else df, preserve_index=False)


# Arrow types Paimon has no type for, as the Paimon type that holds each of their values (a
# value beyond it, a uint64 above 2^63 - 1, is refused by the cast naming the column)
_PAIMON_HOLDS = {pa.uint8(): pa.int16(), pa.uint16(): pa.int32(), pa.uint32(): pa.int64(), pa.uint64(): pa.int64(),
                 pa.float16(): pa.float32(), pa.date64(): pa.date32()}


_VIEW_VALUES = {pa.string_view(): pa.string(), pa.binary_view(): pa.binary()}


def _paimon_leaf(t: pa.DataType) -> pa.DataType:
    if isinstance(t, pa.BaseExtensionType):
        return _paimon_leaf(t.storage_type)
    if pa.types.is_decimal(t) and t.precision > 38 and 0 <= t.scale <= 38:
        return pa.decimal128(38, t.scale)
    if pa.types.is_dictionary(t) and t.value_type in _VIEW_VALUES:  # polars' categoricals: no take kernel
        return pa.dictionary(t.index_type, _VIEW_VALUES[t.value_type])
    return _PAIMON_HOLDS.get(t, t)


def _in_paimon_types(name: str, col: pa.ChunkedArray) -> pa.ChunkedArray:
    """Unsigned integers (polars' row index, duckdb's UINTEGER), half floats, date64, DECIMALs of
    more than 38 digits and extension types (at any depth) as the Paimon-typed values they hold."""
    t = map_arrow_leaves(col.type, _paimon_leaf)
    if t == col.type:
        return col
    try:
        return col.cast(t)
    except (pa.ArrowInvalid, pa.ArrowNotImplementedError) as exc:
        raise SchemaMismatchError(f"column '{name}' ({col.type}) holds a value beyond {t}: {exc}") from None


def _integers_as_decimals(col: pa.ChunkedArray, target: pa.DataType) -> pa.ChunkedArray:
    """Integers bound for a DECIMAL column (or a DECIMAL inside a ROW, ARRAY or MAP), first as
    DECIMAL(38) of its scale: Arrow casts an int64 only to a DECIMAL of 19 integer digits or
    more (DECIMAL(12, 2) would refuse 10); the cast to the column's precision then checks each
    value fits."""
    via = _wide_decimals(col.type, target)
    return col if via == col.type else col.cast(via)


def _wide_decimals(given: pa.DataType, target: pa.DataType) -> pa.DataType:
    if pa.types.is_integer(given) and pa.types.is_decimal(target) and 0 <= target.scale <= 19:
        return pa.decimal128(38, target.scale)
    if pa.types.is_struct(given) and pa.types.is_struct(target):
        return pa.struct([f.with_type(_wide_decimals(f.type, target.field(f.name).type))
                          if target.get_field_index(f.name) >= 0 else f for f in given])
    if pa.types.is_map(given) and pa.types.is_map(target):
        return pa.map_(given.key_field.with_type(_wide_decimals(given.key_type, target.key_type)),
                       given.item_field.with_type(_wide_decimals(given.item_type, target.item_type)))
    lists = (pa.types.is_list, pa.types.is_large_list, pa.types.is_fixed_size_list)
    if any(is_list(given) for is_list in lists) and any(is_list(target) for is_list in lists):
        element = given.value_field.with_type(_wide_decimals(given.value_type, target.value_type))
        if pa.types.is_large_list(given):
            return pa.large_list(element)
        return pa.list_(element, given.list_size) if pa.types.is_fixed_size_list(given) else pa.list_(element)
    return given


def _check_float_range(name: str, given: pa.ChunkedArray, cast: pa.ChunkedArray) -> None:
    """A DOUBLE beyond FLOAT's range becomes infinity in Arrow's cast: refused, naming the column
    (as update refuses it)."""
    overflow = pc.and_(pc.is_inf(cast), pc.invert(pc.is_inf(given)))
    if pc.any(overflow).as_py():
        value = pc.filter(given, overflow)[0].as_py()
        raise SchemaMismatchError(f"column '{name}' holds {value!r}, beyond the range of FLOAT (about 3.4e38): "
                                  "it would be written as infinity")


def _plainly_encoded(name: str, col: pa.ChunkedArray) -> pa.ChunkedArray:
    """A top-level column of an extension type as its storage, a run-end encoded one decoded
    (Arrow's casts take neither); list views refused by name (Arrow's cast of them to a list
    builds invalid arrays)."""
    t = col.type
    if isinstance(t, pa.BaseExtensionType):
        return _plainly_encoded(name, pa.chunked_array([c.storage for c in col.chunks], t.storage_type))
    if pa.types.is_run_end_encoded(t):
        return _plainly_encoded(name, pa.chunked_array([pc.run_end_decode(c) for c in col.chunks], t.value_type))
    if pa.types.is_list_view(t) or pa.types.is_large_list_view(t):
        raise UnsupportedTypeError(f"column '{name}' is an Arrow {t}, which is not written: pass it as a list "
                                   "(pyarrow: pa.array(column.to_pylist(), pa.list_(...)))")
    return col


def _check_not_null_elements(name: str, arr: pa.Array, t: DataType) -> None:
    """SchemaMismatchError naming the column when a NOT NULL ARRAY element or MAP value, or a
    MULTISET count, holds a null: Arrow's casts and arrays let it through (a field declared
    non-nullable too), then pyarrow's Parquet writer fails without naming it and its ORC writer
    stores it."""
    if not t.is_nested or not len(arr) or not _not_null_inside(arr.type):
        return
    if t.root == "ROW":
        for i, f in enumerate(t.fields):
            _check_not_null_elements(f"{name}.{f.name}", arr.field(i), f.type)
        return
    start, end = arr.offsets[0].as_py(), arr.offsets[-1].as_py()
    if t.root == "ARRAY":
        inner, values, what = t.element, arr.values.slice(start, end - start), "element"
    else:
        inner, what = (t.value, "value") if t.root == "MAP" else (MULTISET_COUNT, "count")
        values = arr.items.slice(start, end - start)
    if not inner.nullable and values.null_count:
        raise SchemaMismatchError(f"column '{name}' has a null {what}, where its type {t.sql()} holds NOT NULL "
                                  f"{what}s")
    _check_not_null_elements(f"{name}[]", values, inner)


def _check_unique_map_keys(name: str, arr: pa.Array, t: DataType) -> None:
    """SchemaMismatchError naming the column when one MAP (or MULTISET) value holds a key twice:
    Arrow's maps let it through, but a map holds each key once (Java's readers give both
    entries back, Spark refuses such maps: spark.sql.mapKeyDedupPolicy). Keys of nested types
    (rare: Spark and Java SQL cannot even write a ROW key literal) are not compared."""
    if not t.is_nested or not len(arr):
        return
    if t.root == "ROW":  # fields under a null row mean nothing: flatten() makes them null there
        fields = arr.flatten() if arr.null_count else [arr.field(i) for i in range(len(t.fields))]
        for f, child in zip(t.fields, fields):
            _check_unique_map_keys(f"{name}.{f.name}", child, f.type)
        return
    offsets = arr.offsets.to_numpy(zero_copy_only=False)
    rows = np.repeat(np.arange(len(arr), dtype=np.int64), np.diff(offsets))  # each entry's row
    keep = arr.is_valid().to_numpy(zero_copy_only=False)[rows] if arr.null_count else None
    start, end = int(offsets[0]), int(offsets[-1])

    def entries(child: pa.Array) -> pa.Array:
        """The entries of `arr`'s non-null values (a null one's entries, if any, mean nothing)."""
        child = child.slice(start, end - start)
        return child if keep is None else child.filter(pa.array(keep))
    if t.root == "ARRAY":
        _check_unique_map_keys(f"{name}[]", entries(arr.values), t.element)
        return
    key_type = t.key if t.root == "MAP" else t.element
    keys = entries(arr.keys)
    if key_type.is_nested:
        _check_unique_map_keys(f"{name}.key", keys, key_type)
    else:
        _check_keys_once(name, t, keys, rows if keep is None else rows[keep])
    if t.root == "MAP":
        _check_unique_map_keys(f"{name}.value", entries(arr.items), t.value)


def _check_keys_once(name: str, t: DataType, keys: pa.Array, rows: np.ndarray) -> None:
    """`_check_unique_map_keys` of one level of maps (`keys`: their atomic keys, `rows`: each
    one's map): each entry coded as its map and its key's dictionary index, sorted (a group_by
    of the pairs takes several times as long)."""
    if len(keys) < 2:
        return
    encoded = pc.dictionary_encode(keys)
    codes = np.sort(rows * len(encoded.dictionary) + encoded.indices.to_numpy(zero_copy_only=False))
    same = np.flatnonzero(codes[1:] == codes[:-1])
    if len(same):
        twice = int(codes[same[0]] // len(encoded.dictionary))
        sample = keys.take(pa.array(np.flatnonzero(rows == twice)))
        raise SchemaMismatchError(f"column '{name}' has a map holding a key twice ({sample.to_pylist()} in one "
                                  f"value of type {t.sql()}): a map holds each key once")


def _leaf_arrays(name: str, arr: pa.Array) -> Iterator[tuple[str, pa.Array]]:
    """The leaf arrays of a column (inside ROW, ARRAY and MAP too), each with its path."""
    t = arr.type
    if pa.types.is_struct(t):
        for i in range(t.num_fields):
            yield from _leaf_arrays(f"{name}.{t.field(i).name}", arr.field(i))
    elif pa.types.is_map(t):
        yield from _leaf_arrays(f"{name}.key", arr.keys)
        yield from _leaf_arrays(f"{name}.value", arr.items)
    elif pa.types.is_list(t) or pa.types.is_large_list(t):
        yield from _leaf_arrays(f"{name}[]", arr.flatten())
    else:
        yield name, arr


def _check_milliseconds_of_day(name: str, arr: pa.Array) -> None:
    """TIME values cast from the input (an integer is milliseconds of the day: Paimon's own
    value, and what Spark reads TIME as), nested ones too: SchemaMismatchError naming the
    column outside 0..86,399,999."""
    for path, leaf in _leaf_arrays(name, arr):
        if not pa.types.is_time32(leaf.type):
            continue
        low, high = pc.min_max(leaf.view(pa.int32())).values()
        if low.is_valid and (low.as_py() < 0 or high.as_py() >= 86_400_000):
            bad = low.as_py() if low.as_py() < 0 else high.as_py()
            raise SchemaMismatchError(f"column '{path}' is a TIME: an integer written to it is milliseconds of "
                                      f"the day, 0 to 86399999, not {bad}")


# Years 1 to 9999: what Java's writers and readers take, and Python's dates (statistics, filters)
_FIRST_DAY, _LAST_DAY = -719_162, 2_932_896  # 0001-01-01 and 9999-12-31, in days since 1970
_SECONDS_PER_DAY = 86_400
_PER_SECOND = {"s": 1, "ms": 10**3, "us": 10**6, "ns": 10**9}


def _check_years(name: str, arr: pa.Array) -> None:
    """DATE and TIMESTAMP values (nested ones too) in years 1 to 9999: SchemaMismatchError
    naming the column otherwise, before a file is written (an integer 20240105 cast to a DATE
    is a day in the year 57,000)."""
    for path, leaf in _leaf_arrays(name, arr):
        if pa.types.is_date32(leaf.type):
            first, last, what = _FIRST_DAY, _LAST_DAY, "DATE"
            low, high = pc.min_max(leaf.view(pa.int32())).values()
        elif pa.types.is_timestamp(leaf.type) and leaf.type.unit != "ns":  # nanoseconds: 1677 to 2262
            per_day = _SECONDS_PER_DAY * _PER_SECOND[leaf.type.unit]
            first, last, what = _FIRST_DAY * per_day, (_LAST_DAY + 1) * per_day - 1, "TIMESTAMP"
            low, high = pc.min_max(leaf.view(pa.int64())).values()
        else:
            continue
        if low.is_valid and (low.as_py() < first or high.as_py() > last):
            bad = low if low.as_py() < first else high
            raise SchemaMismatchError(f"column '{path}' holds a {what} outside the years 1 to 9999 ({bad.as_py()} "
                                      f"{'days' if what == 'DATE' else leaf.type.unit} since 1970-01-01), which "
                                      "Paimon's readers do not take")


def _check_utf8(name: str, arr: pa.Array) -> None:
    """STRING values (nested ones too) that are UTF-8 text: Arrow arrays built from buffers, and
    Spark's strings (which may hold any bytes), are not checked where they are made; such a file
    would not read back. SchemaMismatchError naming the column otherwise."""
    for path, leaf in _leaf_arrays(name, arr):
        if pa.types.is_string(leaf.type) or pa.types.is_large_string(leaf.type):
            try:  # the cast checks UTF-8 alone (`validate(full=True)` takes 3x as long)
                leaf.view(pa.large_binary() if pa.types.is_large_string(leaf.type) else pa.binary()).cast(leaf.type)
            except pa.ArrowInvalid as exc:
                raise SchemaMismatchError(f"column '{path}' holds a value that is not UTF-8 text ({exc}); write "
                                          "such bytes to a BYTES column") from None


def _check_lengths(name: str, t: DataType, arr: pa.Array) -> None:
    """CHAR(n) and VARCHAR(n) values of at most n characters, BINARY(n) and VARBINARY(n) of at
    most n bytes (nested ones too): SchemaMismatchError naming the column otherwise, as Spark's
    writers refuse them (EXCEED_LIMIT_LENGTH); shorter CHAR and BINARY values are kept as given."""
    if t.fields:
        for f, child in zip(t.fields, arr.flatten()):
            _check_lengths(f"{name}.{f.name}", f.type, child)
    elif t.root == "ARRAY":
        _check_lengths(f"{name}[]", t.element, arr.flatten())
    elif t.root in ("MAP", "MULTISET"):  # a MULTISET: a map of each element to its count
        start, end = arr.offsets[0].as_py(), arr.offsets[-1].as_py()  # `keys` and `items` ignore a slice
        _check_lengths(f"{name}.key", t.key or t.element, arr.keys.slice(start, end - start))
        if t.value is not None:
            _check_lengths(f"{name}.value", t.value, arr.items.slice(start, end - start))
    elif t.root in _LENGTHS and t.precision < MAX_LENGTH and len(arr):
        longest = pc.max(_LENGTHS[t.root](arr)).as_py()
        if longest is not None and longest > t.precision:
            unit = "characters" if t.root in ("CHAR", "VARCHAR") else "bytes"
            raise SchemaMismatchError(f"column '{name}' is {t}: a value of {longest} {unit} does not fit its "
                                      f"{t.precision}")


_LENGTHS = {"CHAR": pc.utf8_length, "VARCHAR": pc.utf8_length, "BINARY": pc.binary_length, "VARBINARY": pc.binary_length}


def check_decimals_fit(name: str, column: pa.Array | pa.ChunkedArray) -> None:
    """SchemaMismatchError naming the column when a decimal in it has more digits than its
    type's precision: Arrow lets an array hold such values (pyarrow's JSON and CSV readers
    build them from long numbers, and a cast to the same type checks nothing); Parquet would
    store them and Java read them back as nulls."""
    if _holds_decimals(column.type):
        try:
            column.validate(full=True)
        except pa.ArrowInvalid as exc:
            raise SchemaMismatchError(f"column '{name}' holds a value that does not fit its type "
                                      f"{column.type}: {str(exc).split('Invalid: ')[-1]}") from None
        if pa.types.is_decimal128(column.type) and _holds_int128_min(column):
            raise SchemaMismatchError(f"column '{name}' holds a value that does not fit its type {column.type}: "
                                      "-2**127 (39 digits)")


def _holds_int128_min(column: pa.Array | pa.ChunkedArray) -> bool:
    """Whether a DECIMAL128 column holds the unscaled value -2**127, which Arrow's precision
    check lets through (its absolute value overflows): 39 digits, more than any precision."""
    for chunk in (column.chunks if isinstance(column, pa.ChunkedArray) else [column]):
        words = np.frombuffer(chunk.buffers()[1], np.int64)[2 * chunk.offset:2 * (chunk.offset + len(chunk))]
        low, high = words[0::2], words[1::2]
        hit = (low == 0) & (high == np.iinfo(np.int64).min)
        if chunk.null_count:
            hit &= chunk.is_valid().to_numpy(zero_copy_only=False)
        if hit.any():
            return True
    return False


def _holds_decimals(t: pa.DataType) -> bool:
    if pa.types.is_decimal(t):
        return True
    if pa.types.is_struct(t):
        return any(_holds_decimals(t.field(i).type) for i in range(t.num_fields))
    if pa.types.is_map(t):
        return _holds_decimals(t.key_type) or _holds_decimals(t.item_type)
    if pa.types.is_list(t) or pa.types.is_large_list(t) or pa.types.is_fixed_size_list(t):
        return _holds_decimals(t.value_type)
    return False


def _split_row_kinds(data: pa.Table, schema: TableSchema, table_name: str,
                     row_kind_column: str | None) -> tuple[pa.Table, np.ndarray | None]:
    """The input without its row-kind column (unless stored) and the row kinds, if any."""
    kind_field = schema.options.get("rowkind.field")
    names = schema.field_names
    kinds = None
    if row_kind_column is not None:
        if row_kind_column not in data.column_names:
            raise SchemaMismatchError(f"row kind column '{row_kind_column}' is not in the input of table "
                                      f"{table_name} (columns: {data.column_names})")
        if kind_field is not None and kind_field != row_kind_column:
            raise SchemaMismatchError(
                f"table {table_name} takes row kinds from its column '{kind_field}' (option rowkind.field); "
                f"do not also pass row_kind_column='{row_kind_column}'")
        kinds = row_kinds(data.column(row_kind_column), row_kind_column)
        if row_kind_column not in names:
            data = data.drop_columns([row_kind_column])
    elif kind_field is not None:
        if kind_field not in data.column_names:
            raise SchemaMismatchError(f"column '{kind_field}' of table {table_name} (its rowkind.field, "
                                      "which gives each row's kind) is missing from the input")
        kinds = row_kinds(data.column(kind_field), kind_field)
    return data, kinds


def check_bucket_count(groups: Sequence["_Group"], live: Sequence[ManifestEntry], total: int,
                       partition_fields: list[DataField], table_name: str, default_name: str) -> None:
    """A write of `groups` with `total` buckets, refused for a partition whose live files were
    written with another count (the table's `bucket` changed since): its keys would be hashed two ways."""
    written = {g.partition: g.partition_values for g in groups}
    for e in live:
        if e.bucket >= 0 and e.total_buckets != total and e.partition in written:
            where = f"partition {partition_path(written[e.partition], partition_fields, default_name)}" \
                if partition_fields else "the table"
            raise UnsupportedOperationError(
                f"cannot write {where} of {table_name} with {total} buckets: its files are in {e.total_buckets} "
                f"buckets (the table option 'bucket' changed since they were written); rescale it first: "
                f"Table.rescale() or `paimon-streaming rescale` (Java: CALL sys.rescale, or INSERT OVERWRITE)")


def write_threads(groups: int, remote: bool = False) -> int:
    """Threads writing a batch's (partition, bucket) groups side by side: one per group, at most
    one per usable core (on a remote store at least REMOTE_WRITE_THREADS, since a thread then
    mostly waits for its uploads), or PAIMON_WRITE_THREADS. Groups share nothing but the
    process-wide key index cache (locked); Parquet encoding, sorting and the compute kernels
    release the GIL."""
    configured = os.environ.get("PAIMON_WRITE_THREADS", "").strip()
    if configured:
        try:
            limit = int(configured)
        except ValueError:
            raise InvalidOptionError(f"PAIMON_WRITE_THREADS must be a positive integer, got {configured!r}") from None
        if limit < 1:
            raise InvalidOptionError(f"PAIMON_WRITE_THREADS must be a positive integer, got {configured!r}")
    else:
        limit = len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else (os.cpu_count() or 1)
        if remote:
            limit = max(limit, REMOTE_WRITE_THREADS)
    return max(1, min(groups, limit))


REMOTE_WRITE_THREADS = 8


def group_rows(part_ids: np.ndarray, buckets: np.ndarray) -> list[tuple[int, int, np.ndarray]]:
    """(partition id, bucket, row indices) of each group of equal (partition, bucket), in
    (partition, bucket) order, the rows of a group in input order (which decides which
    duplicate key wins). A handful of groups (a batch over a few buckets) are found by one
    comparison pass each, several times faster than sorting the rows; more groups by a stable
    sort of a dense 16-bit group id (numpy's radix sort) when there are fewer than 2^15
    possible ones, else of the 64-bit (partition, bucket) values. Buckets are >= 0 here
    (bucket-unaware tables write bucket 0; postpone mode is refused)."""
    if not len(buckets):
        return []
    dense = None
    width = int(buckets.max()) + 1
    if (int(part_ids.max()) + 1) * width < 1 << 15:
        dense = part_ids * width + buckets
        present = np.flatnonzero(np.bincount(dense))
        if len(present) <= _FEW_GROUPS:
            return [(int(g) // width, int(g) % width, np.flatnonzero(dense == g)) for g in present]
    combined = (part_ids << _BUCKET_BITS) | buckets
    order = np.argsort(dense.astype(np.int16) if dense is not None else combined, kind="stable")
    bounds = np.flatnonzero(np.diff(combined[order])) + 1
    return [(int(combined[c[0]]) >> _BUCKET_BITS, int(combined[c[0]]) & ((1 << _BUCKET_BITS) - 1), c)
            for c in np.split(order, bounds)]


@dataclass
class _Group:
    """One (partition, bucket) group of a batch: its rows are `source` at `indices`, taken
    when first asked for, so that the take runs in the writer thread of the group."""
    partition: bytes
    partition_values: list
    bucket: int
    source: pa.Table
    indices: np.ndarray

    @cached_property
    def rows(self) -> pa.Table:
        return self.source.take(pa.array(self.indices))


class TableWrite:
    """Writes batches of one table into files under a fresh path factory (one UUID per writer)."""

    def __init__(self, file_io: FileIO, table_path: str, schema: TableSchema, table_name: str, branch: str = MAIN):
        self.file_io = file_io
        self.table_path = table_path
        self.schema = schema
        self.table_name = table_name
        self.branch = branch  # whose schemas the written files' schema ids name
        if str(schema.options.get("bucket", "")).strip() == "-2":
            raise UnsupportedOperationError(
                f"cannot write to {table_name}: it is a postpone-bucket table ('bucket' = -2), whose rows wait "
                "unmerged until Paimon's postpone compaction places them in buckets; write to it with Apache Paimon")
        if CoreOptions(schema.options).file_format == "avro":
            raise UnsupportedOperationError(f"cannot write to {table_name}: {AVRO_WRITES}; files already written "
                                            "stay readable after the option changes")
        data_evolution.refuse_deletion_vectors(schema.options, table_name)
        for key in unimplemented_features(schema.options):
            raise UnsupportedOperationError(
                f"cannot write to {table_name}: its option '{key}' = '{schema.options[key]}' asks for "
                f"{unimplemented_feature(key)}, "
                "which paimon-streaming does not implement (writing would break it for Paimon's own writers and "
                "readers); write to this table with Apache Paimon")
        self.options = CoreOptions(schema.options)
        self.paths = PathFactory(table_path, self.options.file_format,
                                 self.options.get("data-file.prefix"), self.options.get("changelog-file.prefix"),
                                 self.options.file_compression, self.options.get("file.suffix.include.compression"),
                                 ExternalPaths.of(schema.options))
        self.dirs = TableDirs.of(table_path, schema.options)
        self.partition_fields = schema.fields_of(schema.partition_keys)
        self.pk = bool(schema.primary_keys)
        self.fields = file_fields(schema)
        # thin mode: files leave out the `_KEY_` columns, and the key's value columns carry the
        # key stats (Java's KeyValueThinDataFileWriterImpl: their stats mode is the keys')
        self.thin = self.pk and thin_mode(schema)
        self.settings = FileSettingsByLevel(schema, schema.trimmed_primary_keys if self.thin else ())
        self.partition_times = PartitionTimeCheck(schema)
        self.parquet = ParquetSettings.of(self.options)
        self.orc_legacy_ltz = self.options.get(ORC_LTZ_LEGACY)
        self.file_indexes = FileIndexSpec.of(schema.options, schema.fields)
        self._fields_by_name = {f.name: f for f in schema.fields}
        self.dynamic = DynamicBucketAssigner(file_io, self.paths, self.options.get("dynamic-bucket.target-row-num"),
                                             self.options.get("dynamic-bucket.max-buckets"))
        self.engine = engine_for(schema) if self.pk else None
        self.changelog = changelog_producer(self.options, schema.primary_keys, table_name) if self.pk else "none"
        self._compactor = None
        # While a deletion-vector batch is written (see `write`): rows of the level-0 files not
        # yet compacted, by bucket directory, which compaction uses instead of reading them back.
        self._keep_fresh = False
        self._fresh: dict[str, dict[str, pa.Table]] = {}
        # cross-partition upsert tables: where keys live (cross_partition.py), and the last batch's placement
        self.cross_partition = cross_partition.is_cross_partition(schema)
        self.placement: cross_partition.KeyPlacement | None = None
        self.planned_on = None  # the snapshot `placement` is of
        self.assignment: cross_partition.Assignment | None = None

    # ---- grouping ------------------------------------------------------------------------
    def group(self, data: pa.Table, index_entries: Sequence[IndexManifestEntry] = ()) -> list[_Group]:
        """Split a batch into (partition, bucket) groups, keeping input order within a group."""
        part_ids, part_rows = self._partitions(data)
        if self.cross_partition:
            self.assignment = self._placement().assign(data, part_ids, part_rows,
                                                       self.options.get("dynamic-bucket.target-row-num"),
                                                       self.engine.name, self.table_name)
            data, buckets = self.assignment.data, self.assignment.buckets
            part_ids, part_rows = self._partitions(data)
        else:
            buckets = self._buckets(data, part_ids, part_rows, index_entries)
        part_names = [f.name for f in self.partition_fields]
        groups = []
        for pid, bucket, rows in group_rows(part_ids, buckets):
            values = data.select(part_names).slice(int(rows[0]), 1).to_pylist()[0]
            groups.append(_Group(part_rows[pid], [values[n] for n in part_names], bucket, data, rows))
            self.partition_times.check(groups[-1].partition_values, self.table_name)
        return groups

    def _placement(self) -> "cross_partition.KeyPlacement":
        if self.placement is None:
            raise UnsupportedOperationError(
                f"cannot write to {self.table_name} here: it is a cross-partition upsert table (primary key "
                f"{list(self.schema.primary_keys)} without the partition keys "
                f"{[k for k in self.schema.partition_keys if k not in self.schema.primary_keys]}, 'bucket' = -1), "
                "whose rows one writer of the whole batch places by a table-wide index of where each key lives, "
                "its commit checking that no other writer came in between: write it with Table.write_arrow, "
                "foreachBatch(paimon_sink(...)) or paimon-streaming ingest (not write_messages, a shuffled Spark "
                "write or format('paimon'))")
        return self.placement

    def partition_and_bucket(self, data: pa.Table) -> tuple[pa.Array, np.ndarray | None]:
        """Each row's serialized partition and fixed bucket (None in dynamic bucket mode, where
        buckets are assigned per partition by `write`): lets a distributed writer shuffle rows."""
        part_ids, part_rows = self._partitions(data)
        partitions = pa.array(part_rows, pa.binary()).take(pa.array(part_ids))
        if self.pk and self.options.bucket == -1:
            return partitions, None
        return partitions, self._buckets(data, part_ids, part_rows, ())

    def _partitions(self, data: pa.Table) -> tuple[np.ndarray, list[bytes]]:
        """Per row the index of its partition, and each partition's serialized BinaryRow."""
        if not self.partition_fields:
            return np.zeros(data.num_rows, np.int64), [serialize_row([], [])]
        rows = encode_rows([data.column(f.name) for f in self.partition_fields],
                           [f.type for f in self.partition_fields])
        encoded = pc.dictionary_encode(rows)
        arity = len(self.partition_fields).to_bytes(4, "big")
        return (encoded.indices.to_numpy(zero_copy_only=False).astype(np.int64),
                [arity + b for b in encoded.dictionary.to_pylist()])

    def _buckets(self, data: pa.Table, part_ids: np.ndarray, part_rows: list[bytes],
                 index_entries: Sequence[IndexManifestEntry]) -> np.ndarray:
        num = self.options.bucket
        if num > 0:
            keys = self.schema.bucket_keys
            return fixed_buckets(data, keys, [self.schema.field(k).type for k in keys], num,
                                 self.options.get("bucket-function.type")).astype(np.int64)
        if not self.pk:
            return np.zeros(data.num_rows, np.int64)  # bucket-unaware append table
        keys = self.schema.trimmed_primary_keys
        hashes = bucket_key_hashes(data, keys, [self.schema.field(k).type for k in keys])
        buckets = np.empty(data.num_rows, np.int64)
        for pid, partition in enumerate(part_rows):
            mask = part_ids == pid
            if mask.any():
                values = deserialize_row(partition, [f.type for f in self.partition_fields])
                buckets[mask] = self.dynamic.assign(partition, hashes[mask], list(index_entries),
                                                    lambda b, v=values: self.dirs.index_dir(self.bucket_dir(v, b)))
        return buckets

    # ---- files ---------------------------------------------------------------------------
    def write_group(self, g: _Group, next_sequence: int, level: int = 0,
                    split_after: tuple | None = None) -> tuple[list[DataFileMeta], list[DataFileMeta]]:
        """Write one (partition, bucket) group: (data files, changelog files). PK groups are
        sorted and merged by key first; `changelog-producer = input` keeps every input row in
        changelog files.

        `split_after` (a key) starts a new file at the first key above it: with the bucket's
        largest live key there, keys new to the bucket land in files that overlap nothing, which
        compaction can then move up without rewriting them (see `BucketCompactor`)."""
        rows = g.rows
        sequence = np.arange(next_sequence, next_sequence + rows.num_rows, dtype=np.int64)
        directory = self.bucket_dir(g.partition_values, g.bucket)
        changelog = []
        if self.pk:
            if self.changelog == "input":
                changelog = self.write_changelog(directory, input_changelog(
                    self._with_kind(rows).append_column(SEQUENCE_NUMBER, pa.array(sequence)),
                    self.schema.trimmed_primary_keys, self.engine.sequence_fields))
            rows, sequence = self._sort_and_merge(rows, sequence)
        cut = rows.num_rows if split_after is None else first_key_above(rows, self.schema.trimmed_primary_keys,
                                                                         split_after)
        pieces = [(0, cut), (cut, rows.num_rows)] if 0 < cut < rows.num_rows else [(0, rows.num_rows)]
        return [self._write_file(directory, rows.slice(a + s, e - s), sequence[a + s:a + e], level)
                for a, b in pieces for s, e in self._roll(rows.slice(a, b - a))], changelog

    def bucket_dir(self, partition_values: list, bucket: int) -> str:
        return self.dirs.bucket(partition_path(
            partition_values, self.partition_fields, self.options.partition_default_name,
            self.options.get("partition.legacy-name")), bucket)

    def write_compacted(self, directory: str, rows: pa.Table, level: int) -> list[DataFileMeta]:
        """Write compaction output (table columns + `_SEQUENCE_NUMBER` + `_VALUE_KIND`) at `level`."""
        sequence = rows.column(SEQUENCE_NUMBER).to_numpy()
        rows = rows.drop_columns([SEQUENCE_NUMBER])
        return [self._write_file(directory, rows.slice(s, e - s), sequence[s:e], level, FILE_SOURCE_COMPACT)
                for s, e in self._roll(rows)]

    def write_appended(self, directory: str, rows: pa.Table, first_sequence: int,
                       rows_per_file: int) -> list[DataFileMeta]:
        """Write an append table's compaction output: level 0, numbered from `first_sequence`."""
        sequence = np.arange(first_sequence, first_sequence + rows.num_rows, dtype=np.int64)
        return [self._write_file(directory, rows.slice(s, rows_per_file), sequence[s:s + rows_per_file], 0,
                                 FILE_SOURCE_COMPACT) for s in range(0, rows.num_rows, rows_per_file)]

    def write_changelog(self, directory: str, rows: pa.Table, level: int = 0) -> list[DataFileMeta]:
        """Write changelog rows (table columns + `_SEQUENCE_NUMBER` + `_VALUE_KIND`) as
        `changelog-*` files, laid out like data files. Compaction's changelog carries the
        level it compacted to, as Java's does (deletion-vector readers skip level 0)."""
        sequence = rows.column(SEQUENCE_NUMBER).to_numpy()
        rows = rows.drop_columns([SEQUENCE_NUMBER])
        return [self._write_file(directory, rows.slice(s, e - s), sequence[s:e], level, changelog=True)
                for s, e in self._roll(rows)]

    # ---- compaction -----------------------------------------------------------------------------
    def compactor(self) -> BucketCompactor | AppendCompactor:
        """Compacts buckets after writes and for `Table.compact`."""
        if self._compactor is None:
            schemas = SchemaManager(self.file_io, branch_path(self.table_path, self.branch))
            cache: dict[int, TableSchema] = {self.schema.id: self.schema}

            def schema_of(schema_id: int) -> TableSchema:
                if schema_id not in cache:
                    cache[schema_id] = schemas.schema(schema_id)
                return cache[schema_id]
            if self.pk:
                self._compactor = BucketCompactor(self.file_io, self.schema, schema_of, self.paths,
                                                  self.write_compacted, self.options.lookup_compaction,
                                                  self.write_changelog)
            else:
                self._compactor = AppendCompactor(self.file_io, self.schema, schema_of, self.paths,
                                                  self.write_appended)
        return self._compactor

    def compact_bucket(self, partition: bytes, partition_values: list, bucket: int,
                       files: list[DataFileMeta], index_entries: Sequence[IndexManifestEntry],
                       full: bool = False, force_level0: bool = True) -> Increment | None:
        """Compact one bucket: everything (`full`), level 0 pushed up (`force_level0`, what
        lookup tables need at every write and `Table.compact` does), or only what universal
        picking asks for (merge-on-read tables after a write). Append tables: small files
        merged (append_compaction.py)."""
        dv_indexes = [e.index_file for e in index_entries if e.partition == partition and e.bucket == bucket
                      and e.index_file.index_type == DELETION_VECTORS_INDEX]
        directory = self.bucket_dir(partition_values, bucket)
        fresh = self._fresh.pop(directory, {})
        if not self.pk:
            return self.compactor().compact(AppendBucket(directory, files, dv_indexes, self.dirs.index_dir(directory),
                                                         fresh), full)
        return self.compactor().compact(BucketFiles(directory, files, dv_indexes[0] if dv_indexes else None,
                                                    self.dirs.index_dir(directory), fresh), full, force_level0)

    @staticmethod
    def _with_kind(rows: pa.Table) -> pa.Table:
        if VALUE_KIND in rows.column_names:
            return rows
        return rows.append_column(pa.field(VALUE_KIND, pa.int8(), False), pa.array(np.full(rows.num_rows, INSERT, np.int8)))

    def _sort_and_merge(self, rows: pa.Table, sequence: np.ndarray) -> tuple[pa.Table, np.ndarray]:
        """Sort by (key, sequence.field, sequence number) and merge each key's rows with the
        table's merge engine; the result keeps its `_VALUE_KIND` column (deletes included)."""
        keys = self.schema.trimmed_primary_keys
        rows = self._with_kind(rows)
        with_seq = rows.append_column(pa.field(SEQUENCE_NUMBER, pa.int64(), False), pa.array(sequence))
        merged = sort_and_merge(with_seq, keys, self.engine)
        seq = merged.column(SEQUENCE_NUMBER).to_numpy()
        return merged.drop_columns([SEQUENCE_NUMBER]), seq

    def _roll(self, rows: pa.Table) -> list[tuple[int, int]]:
        target = self.options.target_file_size(self.pk)
        per_file = max(1, int(rows.num_rows * target / max(rows.nbytes, 1)))
        return [(s, min(s + per_file, rows.num_rows)) for s in range(0, rows.num_rows, per_file)] or [(0, 0)]

    def _write_file(self, directory: str, rows: pa.Table, sequence: np.ndarray, level: int,
                    file_source: int = FILE_SOURCE_APPEND, changelog: bool = False) -> DataFileMeta:
        tracked = row_tracking.ROW_ID in rows.column_names  # a row-tracking table's compaction output
        settings = self.settings.of(level, changelog, tracked)
        name = self.paths.new_changelog_file(settings.file_format) if changelog \
            else self.paths.new_data_file(settings.file_format)
        if settings.file_format == ORC and self.orc_legacy_ltz:  # the values as read back, for stats and index
            rows = orc_legacy_ltz_as_read(rows, self.schema.fields)
        n = rows.num_rows
        delete_rows = 0
        if self.pk:
            keys = self.schema.trimmed_primary_keys
            if VALUE_KIND in rows.column_names:
                kinds = rows.column(VALUE_KIND).to_numpy().astype(np.int8)
                rows = rows.drop_columns([VALUE_KIND])
            else:
                kinds = np.full(n, INSERT, np.int8)
            delete_rows = int(is_retract(kinds).sum())  # Java counts -U/-D rows
            kfields = key_fields(self.schema)
            key_table = pa.Table.from_arrays([rows.column(k) for k in keys], names=[f.name for f in kfields])
            system = [pa.array(sequence, pa.int64()), pa.array(kinds, pa.int8())]
            key_part = [] if self.thin else key_table.columns
            file_table = pa.Table.from_arrays(
                key_part + system + rows.columns,
                names=[f.name for f in kfields][:len(key_part)] + [SEQUENCE_NUMBER, VALUE_KIND] + rows.column_names)
            key_types = [f.type for f in kfields]
            min_key, max_key = serialize_rows([c.take([0, n - 1]) for c in key_table.columns], key_types) \
                if n else (EMPTY_ROW, EMPTY_ROW)
        else:
            file_table = rows
            min_key = max_key = EMPTY_ROW
        path, external_path = self.paths.place(directory, name)
        fields = self.fields + list(row_tracking.FIELDS) if tracked else self.fields
        written = write_data_file(self.file_io, path, file_table, fields,
                                  settings.file_format, settings.compression,
                                  self.options.get("file.compression.zstd-level"), self.parquet,
                                  self.orc_legacy_ltz)
        if self.pk:
            key_modes = {f.name: settings.modes[k] if self.thin else KEY_STATS_MODE for f, k in zip(kfields, keys)}
            if n and not changelog and len(key_types) == 1 and key_types[0].root in _BOUNDS_ARE_STATS \
                    and key_modes[kfields[0].name] not in ("none", "counts"):
                # a data file is sorted by its key: the first and last are the key stats' bounds
                key_stats = SimpleStats(min_key, max_key, (0,) * len(kfields))
            else:  # the bounds the file gave are under its column names (no `_KEY_` ones when thin)
                key_bounds = {f.name: written.string_bounds[k if self.thin else f.name] for f, k in zip(kfields, keys)
                              if (k if self.thin else f.name) in written.string_bounds}
                key_stats = self._stats(key_table, kfields, key_modes, key_bounds, all_fields=True)
        else:
            key_stats = EMPTY_STATS
        embedded_index, extra_files = self._write_file_index(path, rows)
        if self._keep_fresh and not changelog:
            if self.pk:
                self._remember(directory, name, rows, sequence, kinds, keep_rows=level == 0)
            else:  # an append file: its compaction (same batch) takes the rows from here
                self._fresh.setdefault(directory, {})[name] = rows
        value_stats = self._stats(rows, list(settings.stats_fields), settings.modes, written.string_bounds,
                                  all_fields=not settings.dense)
        return DataFileMeta(
            file_name=name, file_size=written.size, row_count=n, min_key=min_key, max_key=max_key,
            key_stats=key_stats, value_stats=value_stats,
            min_sequence_number=int(sequence.min()) if n else 0,
            max_sequence_number=int(sequence.max()) if n else 0,
            schema_id=self.schema.id, level=level,
            creation_time=int((dt.datetime.now() - _EPOCH) / dt.timedelta(milliseconds=1)),
            delete_row_count=delete_rows, file_source=file_source,
            value_stats_cols=settings.value_stats_cols, external_path=external_path,
            embedded_index=embedded_index, extra_files=extra_files,
            write_cols=tuple(f.name for f in fields) if tracked else None)

    def _write_file_index(self, data_path: str, rows: pa.Table) -> tuple[bytes | None, tuple[str, ...]]:
        """The file index of a data file's rows (file_index.py): embedded in its manifest entry
        when small, else written beside it as `<data file>.index`."""
        indexes = self.file_indexes.build(rows, self._fields_by_name)
        if indexes is None:
            return None, ()
        embedded = file_index.encode(indexes)
        if len(embedded) <= self.file_indexes.in_manifest_threshold:
            return embedded, ()
        path = data_path + INDEX_SUFFIX
        try:
            self.file_io.write_bytes(path, file_index.encode(indexes, path.rsplit("/", 1)[-1]))
        except BaseException:
            self.file_io.delete_quietly(data_path)
            self.file_io.delete_quietly(path)
            raise
        return None, (path.rsplit("/", 1)[-1],)

    def _remember(self, directory: str, name: str, rows: pa.Table, sequence: np.ndarray, kinds: np.ndarray,
                  keep_rows: bool) -> None:
        """Index a just-written file's keys now, from memory (data files never change, so the
        index stays valid), and keep a level-0 file's rows for this batch's compaction."""
        keys = self.schema.trimmed_primary_keys
        key_table = rows.select(keys)
        KEY_INDEXES.get(name, lambda: KeyIndex(key_table, [self.schema.field(k).type for k in keys]))
        if keep_rows:
            self._fresh.setdefault(directory, {})[name] = rows.append_column(SEQUENCE_NUMBER, pa.array(sequence, pa.int64())) \
                .append_column(VALUE_KIND, pa.array(kinds, pa.int8()))

    @staticmethod
    def _stats(table: pa.Table, fields: list[DataField], modes,
               string_bounds: dict[str, tuple[str, str]] | None = None, all_fields: bool = False) -> SimpleStats:
        stats = collect_stats(table, fields, modes, string_bounds, all_fields)
        types = [f.type.copy(nullable=True) for f in stats.fields]
        bounds = [pa.array([low, high], to_arrow(t)) for low, high, t in zip(stats.min_values, stats.max_values, types)]
        min_values, max_values = serialize_rows(bounds, types, num_rows=2)
        return SimpleStats(min_values, max_values, tuple(stats.null_counts))

    # ---- one batch -----------------------------------------------------------------------
    def _apply_row_kinds(self, data: pa.Table) -> pa.Table:
        """Drop rows as Paimon's RowKindFilter does and refuse kinds the table cannot take."""
        if VALUE_KIND not in data.column_names:
            return data
        kinds = data.column(VALUE_KIND).to_numpy().astype(np.int8)
        keep = row_kind_filter(self.schema.options, kinds)
        if keep is not None and not keep.all():
            data = data.filter(pa.array(keep))
            kinds = kinds[keep]
        if self.pk:
            self.engine.check_write(kinds)
            return data
        if is_retract(kinds).any():
            raise PaimonError(f"append table {self.table_name} cannot take -U/-D rows (it has no primary key); "
                              "set the table option 'ignore-delete' = 'true' to drop them")
        return data.drop_columns([VALUE_KIND])

    def _largest_keys(self, live: Sequence[ManifestEntry]) -> dict[tuple[bytes, int], tuple]:
        """The largest live key of each bucket (from file metadata, no I/O)."""
        key_types = tuple(f.type for f in key_fields(self.schema))
        largest: dict[tuple[bytes, int], tuple] = {}
        unknown = set()
        for e in live:
            k = (e.partition, e.bucket)
            try:
                key = decode_key(e.file.max_key, key_types)
                if k not in largest or key > largest[k]:
                    largest[k] = key
            except (TypeError, ValueError):  # a key of an older schema: do not split this bucket
                unknown.add(k)
        return {k: v for k, v in largest.items() if k not in unknown}

    def write(self, data: pa.Table, live: Sequence[ManifestEntry],
              index_entries: Sequence[IndexManifestEntry] = (), sequence_offset: int = 0,
              row_kind_column: str | None = None, overwrite: bool = False,
              compact: bool = True, full_compaction: bool = False) -> list[CommitMessage]:
        """Write a conformed batch. `live` are the table's live entries (for sequence numbers),
        `index_entries` its index manifest (for dynamic bucket assignment). `sequence_offset`
        shifts this writer's sequence numbers when several writers share a bucket in one batch.
        Deletion-vector tables also get each written bucket compacted (the message's `compact`
        increment): level 0 pushed up and replaced rows marked, so readers never merge;
        `overwrite=True` compacts the new files alone (the old ones are being replaced);
        `compact=False` leaves that to the caller (several writers sharing a bucket).
        `full_compaction=True` (primary-key tables) compacts each written bucket fully instead:
        one sorted run at the top level (see full_compaction.py).
        Row kinds come with the conformed batch (its `_VALUE_KIND` column, see `conform`);
        `row_kind_column` conforms a raw batch with a row-kind column here."""
        if row_kind_column is not None:
            data = conform(data, self.schema, self.table_name, row_kind_column)
        data = self._apply_row_kinds(data)
        max_seq: dict[tuple[bytes, int], int] = {}
        for e in live:
            k = (e.partition, e.bucket)
            max_seq[k] = max(max_seq.get(k, -1), e.file.max_sequence_number)
        # `write-only` leaves level 0 to a dedicated compaction (deletion-vector readers see the
        # rows once it ran, as in Paimon): compacting here would take that job's input away
        dv = self.pk and self.options.lookup_compaction and compact and not self.options.get("write-only")
        # merge-on-read tables compact as Paimon's writers do: when universal picking asks for it;
        # append tables when small files gather (append_compaction.py)
        # (data-evolution tables: only an explicit compaction, as Java's writers)
        picked = not dv and compact and not overwrite and not self.options.get("write-only") \
            and not data_evolution.enabled(self.schema.options)
        full = self.pk and compact and full_compaction
        largest = {} if overwrite or not dv or full else self._largest_keys(live)
        self._keep_fresh, self._fresh = dv or (picked and not self.pk), {}
        try:
            return self._write_groups(data, live, index_entries, sequence_offset, overwrite, dv, picked, full,
                                      max_seq, largest)
        finally:
            self._keep_fresh, self._fresh = False, {}

    def _write_groups(self, data: pa.Table, live: Sequence[ManifestEntry],
                      index_entries: Sequence[IndexManifestEntry], sequence_offset: int, overwrite: bool,
                      dv: bool, picked: bool, full: bool, max_seq: dict, largest: dict) -> list[CommitMessage]:
        total = self.options.bucket
        # an overwrite replaces the partitions' HASH indexes too (the commit drops the old ones):
        # its keys are placed afresh, so every bucket it writes gets an index of exactly its keys
        groups = self.group(data, () if overwrite else index_entries)
        if total > 0 and not overwrite:
            check_bucket_count(groups, live, total, self.partition_fields, self.table_name,
                               self.options.partition_default_name)
        live_files: dict[tuple[bytes, int], list[DataFileMeta]] = {}
        if (dv or picked or full) and not overwrite:
            for e in live:
                live_files.setdefault((e.partition, e.bucket), []).append(e.file)
            self.compactor()  # built once, before the threads share it

        compacts = dv or picked or full

        def write_one(g: _Group) -> CommitMessage:
            start = max_seq.get((g.partition, g.bucket), -1) + 1 + sequence_offset
            files, changelog = self.write_group(g, start, split_after=largest.get((g.partition, g.bucket)))
            return CommitMessage(g.partition, g.bucket, total, Increment(new_files=files, changelog_files=changelog))

        def compact_one(g: _Group, message: CommitMessage) -> None:
            old = live_files.get((g.partition, g.bucket), [])
            message.compact = self.compact_bucket(g.partition, g.partition_values, g.bucket,
                                                  old + message.data.new_files, () if overwrite else index_entries,
                                                  full=full, force_level0=dv) or Increment()

        threads = write_threads(len(groups), remote=not self.file_io.is_local)
        if threads > 1:
            # Two tasks per group: its files, then (queued once they exist) its compaction. Every
            # group's files come first, so the threads run out of work only over the last
            # compactions, not over whole groups, whose cost varies with what they compact.
            with ThreadPoolExecutor(threads, thread_name_prefix="paimon-write") as pool:
                def write_then_queue(g: _Group) -> tuple[CommitMessage, Future | None]:
                    message = write_one(g)
                    return message, pool.submit(compact_one, g, message) if compacts else None
                tasks = [pool.submit(write_then_queue, g) for g in groups]
                written = []
                for task in tasks:
                    message, compaction = task.result()
                    if compaction is not None:
                        compaction.result()
                    written.append(message)
        else:
            written = [write_one(g) for g in groups]
            if compacts:
                for g, message in zip(groups, written):
                    compact_one(g, message)
        messages = {(m.partition, m.bucket): m for m in written}
        for change in self.dynamic.changes:
            inc = messages[(change.partition, change.bucket)].data
            inc.new_index_files.append(change.new)
            if change.old is not None:
                inc.deleted_index_files.append(change.old)
        return list(messages.values())

