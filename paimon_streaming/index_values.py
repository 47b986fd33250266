"""Column values as Java's file indexes see them (bloom_filter.py, bitmap_index.py): integers,
dates (days) and times (milliseconds of the day) as numbers; floats and doubles as their IEEE
bits with every NaN as Java's canonical one (floatToIntBits); timestamps as milliseconds up to
precision 3 and microseconds above (floored, as Java's Timestamp for instants before 1970)."""
from __future__ import annotations

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from .types import DataType

INTEGERS = ("TINYINT", "SMALLINT", "INT", "BIGINT", "DATE", "TIME")
TIMESTAMPS = ("TIMESTAMP", "TIMESTAMP_LTZ")
FLOATS = ("FLOAT", "DOUBLE")

_CANONICAL_FLOAT_NAN = np.int32(0x7FC00000)
_CANONICAL_DOUBLE_NAN = np.int64(0x7FF8000000000000)


def non_null(values: pa.Array | pa.ChunkedArray) -> pa.Array:
    """One plain array of the non-null `values`."""
    if isinstance(values, pa.ChunkedArray):
        values = values.combine_chunks() if values.num_chunks != 1 else values.chunk(0)
    if isinstance(values, pa.DictionaryArray):
        values = values.dictionary_decode()
    return values.drop_null() if values.null_count else values


def java_numbers(values: pa.Array, t: DataType) -> np.ndarray:
    """The int64 numbers Java's indexes take for the non-null `values` of a numeric, date, time
    or timestamp column of type `t` (floats: their bits, as int32 values for FLOAT)."""
    root = t.root
    if root == "FLOAT":
        bits = values.to_numpy(zero_copy_only=False).astype(np.float32).view(np.int32)
        return np.where(bits & 0x7FFFFFFF > 0x7F800000, _CANONICAL_FLOAT_NAN, bits).astype(np.int64)
    if root == "DOUBLE":
        floats = values.to_numpy(zero_copy_only=False).astype(np.float64)
        return np.where(np.isnan(floats), _CANONICAL_DOUBLE_NAN, floats.view(np.int64))
    if root in TIMESTAMPS:
        ticks = values.cast(pa.int64()).to_numpy(zero_copy_only=False)
        per_second = {"s": 1, "ms": 1_000, "us": 1_000_000, "ns": 1_000_000_000}[values.type.unit]
        wanted = 1_000 if t.precision <= 3 else 1_000_000
        if per_second <= wanted:
            return ticks * (wanted // per_second)
        return np.floor_divide(ticks, per_second // wanted)
    if root == "TIME":
        values = pc.cast(values, pa.time32("ms")).cast(pa.int32())
    elif pa.types.is_date(values.type):
        values = values.cast(pa.int32())
    elif pa.types.is_boolean(values.type):
        values = values.cast(pa.int8())
    return values.to_numpy(zero_copy_only=False).astype(np.int64)
