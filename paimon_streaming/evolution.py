"""Reading data files written with older schemas (Paimon's schema evolution on read).

A data file records the id of the schema it was written with. Its columns are matched to the
reading schema by field id, also inside ROW types: a renamed column or field is the same id
under another name, an added one is absent from the file (read as nulls), a dropped one is not
read, and a widened type is cast (losslessly: `schema_update.widening_error`); another type
change (Java's schema changes take explicit casts: BIGINT -> INT, STRING -> VARCHAR(2), ...) is
read as Java casts it (`java_casts.java_cast`), or is an error naming file and column where
Java's read fails or its cast is not reproduced. Files written with the reading schema take the
fast path: no conversion at all.
"""
from __future__ import annotations

from dataclasses import replace

import numpy as np
import pyarrow as pa

from .datafile import conform, read_data_file, rebased_offsets
from .errors import UnsupportedOperationError
from .fileio import FileIO
from .java_casts import CastRefused, java_cast
from . import row_tracking
from .keyvalue import file_fields
from .options import ORC_LTZ_LEGACY, CoreOptions
from .schema import TableSchema, column_option
from .schema_update import widening_error
from .types import DataField, DataType, arrow_field, to_arrow


def read_evolved(file_io: FileIO, path: str, file_schema: TableSchema, schema: TableSchema,
                 names: list[str], system: list[str] = (), file_size: int | None = None,
                 row_count: int | None = None, keep: np.ndarray | None = None) -> pa.Table:
    """Columns `names` of `schema` (plus `system` columns such as `_SEQUENCE_NUMBER`) from a data
    file written with `file_schema`, named and typed as `schema` has them; only the rows `keep`
    marks when given (see `read_data_file`)."""
    by_id = {f.id: f for f in file_schema.fields}
    current = [schema.field(n) for n in names]
    olds = [by_id.get(f.id) for f in current]
    fields = file_fields(file_schema)
    present = {f.name for f in fields}
    fields += [f for f in row_tracking.FIELDS if f.name in system and f.name not in present]  # row ids kept in files
    # Java's readers take format options from the reading table's options
    legacy_ltz = CoreOptions(schema.options).get(ORC_LTZ_LEGACY)
    table = read_data_file(file_io, path, fields, [o.name for o in olds if o is not None] + list(system),
                           file_size, row_count, keep, legacy_ltz)
    if file_schema.id == schema.id or not names and not system:  # nothing to map (a count keeps its rows)
        return table
    columns = [pa.nulls(table.num_rows, to_arrow(f.type)) if o is None else _evolved(table, path, o, f)
               for f, o in zip(current, olds)]
    fields = [arrow_field(f) for f in current] + [table.schema.field(s) for s in system]
    return pa.Table.from_arrays(columns + [table.column(s) for s in system], schema=pa.schema(fields))


def _evolved(table: pa.Table, path: str, old: DataField, new: DataField) -> pa.ChunkedArray:
    """`evolve` of one column, whose values a lossy type change (Java allows explicit casts:
    BIGINT -> INT, DECIMAL scale lowered, ...) may not fit: an error naming file and column."""
    try:
        return evolve(table.column(old.name), old.type, new.type)
    except (pa.ArrowInvalid, pa.ArrowNotImplementedError, CastRefused) as exc:
        raise UnsupportedOperationError(
            f"column '{new.name}' of data file {path} was written as {old.type} and its values cannot be "
            f"read as {new.type}, the column's type since a schema change: {exc}") from None


def with_current_options(old: TableSchema, current: TableSchema) -> TableSchema:
    """The schema a time-travel read merges a snapshot with: the snapshot's schema `old` (its
    fields and keys) under the table's `current` options, as Java's time travel reads
    (AbstractFileStoreTable.tryTimeTravel): a merge option changed since (an aggregate function,
    `ignore-delete`, `sequence.field`, ...) applies to old snapshots as to the latest, so a
    snapshot reads the same by its id as by a plain read. Options naming a column follow its
    field id: `fields.<name>.*` and `sequence.field` of a current column name the old field of
    the same id (an option of a column the old schema lacks is left out; Java refuses such a
    read). Data files are still decoded with their own schema (`TableScan.schema_of`)."""
    if old.id == current.id:
        return old
    old_names = {f.id: f.name for f in old.fields}
    then = {f.name: old_names.get(f.id) for f in current.fields}  # current name -> old name (None: absent)
    kept, mapped = {}, {}
    for key, value in current.options.items():
        name, suffix = column_option(key) or ("", "")
        if suffix and name in then:
            if then[name] is not None:
                mapped[f"fields.{then[name]}.{suffix}"] = value
        else:
            kept[key] = value
    options = {**kept, **mapped}
    if options.get("sequence.field"):
        options["sequence.field"] = ",".join(then.get(n.strip()) or n.strip()
                                             for n in options["sequence.field"].split(","))
    return replace(old, options=options)


def evolve(column: pa.ChunkedArray, old: DataType, new: DataType) -> pa.ChunkedArray:
    """A column stored as `old` read as `new` (same field ids, see the module docstring)."""
    if old.copy(True) == new.copy(True):
        return column
    return pa.chunked_array([_evolve_array(c, old, new) for c in column.chunks], type=to_arrow(new))


def _evolve_array(arr: pa.Array, old: DataType, new: DataType) -> pa.Array:
    if old.copy(True) == new.copy(True):
        return arr
    mask = arr.is_null() if arr.null_count else None
    if new.root == "ROW" and old.root == "ROW":
        by_id = {f.id: f for f in old.fields}
        children = []
        for f in new.fields:
            o = by_id.get(f.id)
            children.append(pa.nulls(len(arr), to_arrow(f.type)) if o is None
                            else _evolve_array(arr.field(o.name), o.type, f.type))
        return pa.StructArray.from_arrays(children, fields=[arrow_field(f) for f in new.fields], mask=mask)
    if new.root == old.root == "ARRAY":
        offsets, start = rebased_offsets(arr)
        values = _evolve_array(arr.values.slice(start), old.element, new.element)
        return pa.ListArray.from_arrays(offsets, values, type=to_arrow(new), mask=mask)
    if new.root == old.root == "MAP":
        offsets, start = rebased_offsets(arr)
        return pa.MapArray.from_arrays(offsets, _evolve_array(arr.keys.slice(start), old.key, new.key),
                                       _evolve_array(arr.items.slice(start), old.value, new.value),
                                       type=to_arrow(new), mask=mask)
    if widening_error(old, new) is None:
        return conform(arr, to_arrow(new))  # atomic lossless widening (and MULTISET elements)
    return java_cast(arr, old, new)  # Java's explicit cast (BIGINT -> INT, STRING -> VARCHAR(2), ...)
