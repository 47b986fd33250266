"""Column values as Java's file indexes see them (bloom_filter.py, bitmap_index.py, bsi_index.py,
range_bitmap_index.py): integers, dates (days) and times (milliseconds of the day) as numbers;
floats and doubles as their IEEE bits with every NaN as Java's canonical one (floatToIntBits);
timestamps as milliseconds up to precision 3 and microseconds above (floored, as Java's
Timestamp for instants before 1970); DECIMALs of up to 18 digits as their unscaled values;
strings as UTF-8 bytes, ordered as Java's BinaryString compares them (unsigned bytes)."""
from __future__ import annotations

import struct

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from .types import DataType

INTEGERS = ("TINYINT", "SMALLINT", "INT", "BIGINT", "DATE", "TIME")
TIMESTAMPS = ("TIMESTAMP", "TIMESTAMP_LTZ")
FLOATS = ("FLOAT", "DOUBLE")
STRINGS = ("CHAR", "VARCHAR")
# the big-endian width in which Java's indexes serialize a value of each type (strings: a length, the bytes)
KEY_WIDTH = {"BOOLEAN": ">i1", "TINYINT": ">i1", "SMALLINT": ">i2", "INT": ">i4", "DATE": ">i4", "TIME": ">i4",
             "FLOAT": ">i4", "BIGINT": ">i8", "DOUBLE": ">i8", "TIMESTAMP": ">i8", "TIMESTAMP_LTZ": ">i8",
             "DECIMAL": ">i8"}

_CANONICAL_FLOAT_NAN = np.int32(0x7FC00000)
_CANONICAL_DOUBLE_NAN = np.int64(0x7FF8000000000000)


def plain(values: pa.Array | pa.ChunkedArray) -> pa.Array:
    """`values` as one array (chunks combined, dictionaries decoded)."""
    if isinstance(values, pa.ChunkedArray):
        values = values.combine_chunks() if values.num_chunks != 1 else values.chunk(0)
    if isinstance(values, pa.DictionaryArray):
        values = values.dictionary_decode()
    return values


def non_null(values: pa.Array | pa.ChunkedArray) -> pa.Array:
    """One plain array of the non-null `values`."""
    values = plain(values)
    return values.drop_null() if values.null_count else values


def valid_rows(values: pa.Array) -> tuple[np.ndarray, pa.Array]:
    """The rows (uint32, ascending) of a file column's non-null `values`, and those values."""
    is_valid = values.is_valid().to_numpy(zero_copy_only=False)
    return np.flatnonzero(is_valid).astype(np.uint32), values.filter(pa.array(is_valid))


def java_numbers(values: pa.Array, t: DataType) -> np.ndarray:
    """The int64 numbers Java's indexes take for the non-null `values` of a numeric, date, time
    or timestamp column of type `t` (floats: their bits, as int32 values for FLOAT; DECIMALs of
    up to 18 digits: unscaled)."""
    root = t.root
    if root == "DECIMAL":
        if len(values) == 0:
            return np.zeros(0, np.int64)
        values = values.cast(pa.decimal128(t.precision, t.scale))
        words = np.frombuffer(values.buffers()[1], "<i8", 2 * len(values), values.offset * 16)
        return words[0::2].copy()  # the low word: the whole value up to 18 digits
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


def sorted_distinct(values: pa.Array, t: DataType) -> tuple[pa.Array | np.ndarray, np.ndarray]:
    """The distinct non-null `values`, sorted as Java's comparators sort them (strings: binary
    UTF-8, by unsigned bytes; floats: their bits in Float.compare's total order, -0.0 before 0.0
    and NaN last; the rest: java_numbers), and each value's index into them."""
    if t.root in STRINGS:
        encoded = pc.dictionary_encode(values.cast(pa.binary()))
        order = pc.sort_indices(encoded.dictionary).to_numpy()
        rank = np.empty(len(order), np.int64)
        rank[order] = np.arange(len(order))
        return encoded.dictionary.take(pa.array(order)), rank[encoded.indices.to_numpy(zero_copy_only=False)]
    numbers = java_numbers(values, t)
    if t.root in FLOATS:
        sort_keys, codes = np.unique(float_total_order(numbers, t), return_inverse=True)
        return float_total_order(sort_keys, t), codes.reshape(-1)  # the order is its own inverse
    distinct, codes = np.unique(numbers, return_inverse=True)
    return distinct, codes.reshape(-1)


def string_entries(strings: pa.Array, tails: np.ndarray) -> tuple[bytes, np.ndarray, np.ndarray]:
    """Entries of binary `strings` as Java's indexes serialize them (a 4-byte length, the
    bytes), each followed by its row of `tails` (n x k) as 4-byte ints; with each entry's start
    and its string's serialized size."""
    n = len(strings)
    if n == 0:
        return b"", np.zeros(0, np.int64), np.zeros(0, np.int64)
    value_sizes = 4 + pc.binary_length(strings).to_numpy(zero_copy_only=False).astype(np.int64)
    tail = [_as_binary(*tails.T)] if tails.shape[1] else []
    entries = pc.binary_join_element_wise(_as_binary(value_sizes - 4), strings, *tail, pa.scalar(b"", pa.binary()))
    bounds = np.frombuffer(entries.buffers()[1], np.int32, n + 1, entries.offset * 4)
    data = entries.buffers()[2].to_pybytes()[bounds[0]:bounds[-1]]
    return data, (bounds[:-1] - bounds[0]).astype(np.int64), value_sizes


def _as_binary(*columns: np.ndarray) -> pa.Array:
    """A binary array whose element i is columns' values at i as 4-byte big-endian ints."""
    raw = np.stack(columns, axis=1).astype(">i4")
    fixed = pa.FixedSizeBinaryArray.from_buffers(pa.binary(4 * len(columns)), len(raw),
                                                  [None, pa.py_buffer(raw.tobytes())])
    return fixed.cast(pa.binary())


def float_total_order(bits: np.ndarray, t: DataType) -> np.ndarray:
    """Float bits (int64; FLOAT's as signed 32-bit values) as int64 numbers ordered as Java's
    Float.compare orders the floats: negative floats' magnitude bits reversed."""
    magnitude = np.int64(0x7FFFFFFF if t.root == "FLOAT" else 0x7FFFFFFFFFFFFFFF)
    return bits ^ ((bits >> 63) & magnitude)


def key_at(data: bytes, at: int, t: DataType) -> tuple[int | bytes, int]:
    """The value Java's index serialized at byte `at` of `data` (strings: UTF-8 bytes), and the
    byte after it; ValueError when a string's length runs past the data."""
    if t.root in STRINGS:
        (n,) = struct.unpack_from(">i", data, at)
        if n < 0 or at + 4 + n > len(data):
            raise ValueError(f"a value of {n} bytes at byte {at}")
        return data[at + 4:at + 4 + n], at + 4 + n
    dtype = np.dtype(KEY_WIDTH[t.root])
    return int(np.frombuffer(data, dtype, 1, at)[0]), at + dtype.itemsize
