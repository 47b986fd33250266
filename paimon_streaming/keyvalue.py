"""The key-value layout of primary-key data files (FORMAT.md §6).

Columns: `_KEY_<k>` for each trimmed primary key (ids shifted by 1073741823), then
`_SEQUENCE_NUMBER`, `_VALUE_KIND` (+I 0, -U 1, +U 2, -D 3), then every table column.
With the table option `data-file.thin-mode` (Paimon 1.0+, Java's `KeyValueThinDataFileWriterImpl`)
the `_KEY_` columns are left out: they repeat the key's value columns. Readers never need them:
keys are always read from the value columns (as Java's `FormatReaderMapping` maps `_KEY_<k>` to
`<k>` by field id), so thin and full files read alike.
"""
from __future__ import annotations

from functools import lru_cache
from typing import Sequence

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from .binary_row import deserialize_row
from .option_text import parse_bool
from .schema import TableSchema
from .system_fields import KEY_PREFIX, SEQUENCE_NUMBER, VALUE_KIND  # noqa: F401 (re-exported)
from .types import DataField, DataType

KEY_FIELD_ID_START = 1073741823
SEQUENCE_NUMBER_ID = 2147483646
VALUE_KIND_ID = 2147483645

INSERT, UPDATE_BEFORE, UPDATE_AFTER, DELETE = 0, 1, 2, 3
ROW_KINDS = {"+I": INSERT, "-U": UPDATE_BEFORE, "+U": UPDATE_AFTER, "-D": DELETE}


def key_fields(schema: TableSchema) -> list[DataField]:
    return [DataField(f.id + KEY_FIELD_ID_START, KEY_PREFIX + f.name, f.type.copy(nullable=False))
            for f in schema.fields_of(schema.trimmed_primary_keys)]


def thin_mode(schema: TableSchema) -> bool:
    """Whether files written with this schema leave out the `_KEY_` columns."""
    return parse_bool(schema.options.get("data-file.thin-mode", "false"))


def kv_fields(schema: TableSchema) -> list[DataField]:
    """Every column of a primary-key data file written with this schema, in file order."""
    return ([] if thin_mode(schema) else key_fields(schema)) + [
        DataField(SEQUENCE_NUMBER_ID, SEQUENCE_NUMBER, DataType("BIGINT", False)),
        DataField(VALUE_KIND_ID, VALUE_KIND, DataType("TINYINT", False)),
    ] + list(schema.fields)


def file_fields(schema: TableSchema) -> list[DataField]:
    """Columns of a data file of this table: key-value layout for PK tables, else the table's."""
    return kv_fields(schema) if schema.primary_keys else list(schema.fields)


def first_key_above(rows: pa.Table, keys: Sequence[str], bound: tuple) -> int:
    """Index of the first row whose key is greater than `bound`, in rows sorted by key: one
    vectorized lexicographic comparison. A float NaN is above every number and equal to any
    NaN, as keys are sorted and merged."""
    above = np.zeros(rows.num_rows, bool)
    equal_so_far = np.ones(rows.num_rows, bool)
    for name, value in zip(keys, bound):
        col = rows.column(name)
        scalar = pa.scalar(value, col.type)
        greater = pc.greater(col, scalar).to_numpy(zero_copy_only=False)
        equal = pc.equal(col, scalar).to_numpy(zero_copy_only=False)
        if pa.types.is_floating(col.type):
            nan = pc.fill_null(pc.is_nan(col), False).to_numpy(zero_copy_only=False)
            bound_nan = value is not None and value != value
            greater, equal = (greater | nan) & (not bound_nan), equal | (nan & bound_nan)
        above |= equal_so_far & greater
        equal_so_far &= equal
    hits = np.flatnonzero(above)
    return int(hits[0]) if len(hits) else rows.num_rows


@lru_cache(maxsize=1 << 16)
def decode_key(key: bytes, types: tuple[DataType, ...]) -> tuple:
    """A file's min or max key as a tuple (cached: writes and lookups decode the same keys of
    the same immutable files batch after batch)."""
    return tuple(deserialize_row(key, list(types)))
