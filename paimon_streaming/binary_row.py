"""Paimon's BinaryRow: the row encoding of partitions, keys and stats, and its hash.

The bytes must equal what Java 1.4's ``BinaryRowWriter`` produces, because partitions are
compared by bytes and fixed buckets are derived from the hash of the bucket-key row
(FORMAT.md §5.1, §7.1). Encoding and hashing are vectorized over rows. The vectorized
encoder costs ~100 µs per column whatever the row count, too much for the writer's three
`serialize_rows` calls per data file (min/max key, key and value stats bounds: 1 or 2 rows
each), so up to `_FEW_ROWS` rows are encoded value by value in plain Python instead
(`_encode_few`); tests/test_binary_row.py holds its bytes equal to `encode_rows` for every
atomic type, and inputs it is not sure about (ones that need a cast) take the vectorized path.
`hash_row` goes through the vectorized hash.

Layout of one row (little-endian numbers): an 8-aligned header with the RowKind byte and
the null bits (field i is bit i + 8), one 8-byte slot per field, then the variable part
(8-aligned pieces whose slot holds ``offset << 32 | length``).
"""
from __future__ import annotations

import datetime
import struct
from dataclasses import dataclass
from decimal import Decimal
from typing import Any, Sequence

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from .errors import SchemaMismatchError, UnsupportedTypeError
from .types import DataType, to_arrow

_HEADER_BITS = 8                 # the RowKind byte precedes the null bits
_MAX_INLINE = 7                  # strings/bytes up to 7 bytes live in the slot itself
_INLINE_MARK = np.uint64(0x80 << 56)
_MAX_BINARY = 2**31 - 1          # beyond this a pa.binary() array cannot hold the rows
_ZERO_PADS = [b"\0" * i for i in range(8)]

_MURMUR_SEED = 42
_C1, _C2, _C3 = 0xCC9E2D51, 0x1B873593, 0xE6546B64
_F1, _F2 = 0x85EBCA6B, 0xC2B2AE35
_MIN_VECTOR_ROWS = 32  # below this many rows still hashing, words are mixed in a plain loop

# Atomic types stored entirely in the slot, with the Arrow type whose bits are stored.
_SLOT_TYPES = {"BOOLEAN": pa.bool_(), "TINYINT": pa.int8(), "SMALLINT": pa.int16(),
               "INT": pa.int32(), "BIGINT": pa.int64(), "FLOAT": pa.float32(),
               "DOUBLE": pa.float64()}
_NANOS_PER_UNIT = {"s": 10**9, "ms": 10**6, "us": 10**3, "ns": 1}


def null_bits_size(arity: int) -> int:
    """Bytes of header + null bitset, rounded to whole 8-byte words (Java calculateBitSetWidthInBytes)."""
    return (arity + 63 + _HEADER_BITS) // 64 * 8


# ---- encoding ------------------------------------------------------------------------

@dataclass
class _Field:
    """One column's contribution to every row.

    `slot` is the 8-byte slot value; for values in the variable part only its low 32 bits
    (length or nano-of-milli) are set, the row offset is added during assembly. `var_len`
    is the padded size each row takes in the variable part and `var` the Arrow pieces
    (large_binary) whose concatenation is that padded content.
    """
    null: np.ndarray
    slot: np.ndarray
    var_len: np.ndarray | None = None
    var: tuple[pa.Array, ...] = ()


def encode_rows(columns: Sequence[pa.Array | pa.ChunkedArray], types: Sequence[DataType],
                num_rows: int | None = None) -> pa.Array:
    """Encode each input row as BinaryRow bytes (no arity prefix), RowKind +I.

    `num_rows` is needed only when there are no columns (the empty row). The result is
    pa.binary(), or pa.large_binary() when the rows exceed 2 GiB in total.
    """
    return _assemble(*_encode_words(columns, types, num_rows))


def row_hashes(columns: Sequence[pa.Array | pa.ChunkedArray], types: Sequence[DataType],
               num_rows: int | None = None) -> np.ndarray:
    """`hash_rows(encode_rows(columns, types))`, without assembling the rows when every field
    is stored in its slot (fixed-width keys, the common bucket key): their bytes are the
    words matrix itself, hashed column by column."""
    words, pieces, cursor = _encode_words(columns, types, num_rows)
    if pieces:
        return hash_rows(_assemble(words, pieces, cursor))
    return _hash_matrix(words.view(np.uint32), _MURMUR_SEED)


def _encode_words(columns: Sequence[pa.Array | pa.ChunkedArray], types: Sequence[DataType],
                  num_rows: int | None) -> tuple[np.ndarray, list[pa.Array], np.ndarray]:
    """The rows' fixed part (header and slots: one row of uint64 words per row), the pieces of
    their variable part, and each row's total length."""
    if len(columns) != len(types):
        raise ValueError(f"{len(columns)} columns but {len(types)} types")
    arrays = [_as_array(c) for c in columns]
    n = len(arrays[0]) if arrays else num_rows
    if n is None:
        raise ValueError("num_rows is required to encode rows without columns")
    if any(len(a) != n for a in arrays) or (num_rows is not None and num_rows != n):
        raise ValueError("all columns must have the same number of rows")

    header = null_bits_size(len(arrays))
    words = np.zeros((n, header // 8 + len(arrays)), dtype=np.uint64)
    cursor = np.full(n, header + 8 * len(arrays), dtype=np.int64)
    pieces: list[pa.Array] = []
    for i, (column, t) in enumerate(zip(arrays, types)):
        f = _encode_column(column, t)
        slot = f.slot
        if f.null.any():
            bit = i + _HEADER_BITS
            words[:, bit // 64] |= f.null.astype(np.uint64) << np.uint64(bit % 64)
            slot = np.where(f.null, np.uint64(0), slot)
        if f.var_len is not None:
            slot |= np.where(f.var_len > 0, cursor, 0).astype(np.uint64) << np.uint64(32)
            cursor += f.var_len
            pieces.extend(f.var)
        words[:, header // 8 + i] = slot
    return words, pieces, cursor


def _assemble(words: np.ndarray, pieces: list[pa.Array], cursor: np.ndarray) -> pa.Array:
    """The rows' bytes: the fixed part followed by the variable pieces, row by row."""
    large = int(cursor.sum()) > _MAX_BINARY
    fixed = _binary_from_matrix(words.view(np.uint8), large)
    if not pieces:
        return fixed
    target = pa.large_binary() if large else pa.binary()
    return pc.binary_join_element_wise(fixed, *(p.cast(target) for p in pieces), b"")


def _as_array(column: pa.Array | pa.ChunkedArray) -> pa.Array:
    if pa.types.is_dictionary(column.type):
        column = column.cast(column.type.value_type)
    if isinstance(column, pa.ChunkedArray):
        column = column.combine_chunks()
    return column


def _cast(column: pa.Array, target: pa.DataType, t: DataType) -> pa.Array:
    """Cast with Arrow's safe rules; a failure means the data does not fit the Paimon type."""
    if column.type == target:
        return column
    try:
        return column.cast(target)
    except (pa.ArrowInvalid, pa.ArrowNotImplementedError) as e:
        raise SchemaMismatchError(f"cannot encode Arrow {column.type} as Paimon {t}: {e}") from e


def _encode_column(column: pa.Array, t: DataType) -> _Field:
    null = column.is_null().to_numpy(zero_copy_only=False)
    r = t.root
    if r in _SLOT_TYPES:
        return _Field(null, _bits(_cast(column, _SLOT_TYPES[r], t).fill_null(False if r == "BOOLEAN" else 0)))
    if r == "DATE":
        return _Field(null, _bits(_cast(column, pa.date32(), t).view(pa.int32()).fill_null(0)))
    if r == "TIME":
        return _Field(null, _bits(pa.array(_time_millis(column, t), pa.int32())))
    if r in ("TIMESTAMP", "TIMESTAMP_LTZ"):
        return _encode_timestamp(column, t, null)
    if r == "DECIMAL":
        return _encode_decimal(column, t, null)
    if t.is_string or t.is_binary:
        target = pa.large_string() if t.is_string else pa.large_binary()
        return _encode_bytes(_cast(column, target, t).cast(pa.large_binary()), null)
    if t.is_structured and null.all():
        return _Field(null, np.zeros(len(column), dtype=np.uint64))  # stats rows: min/max of nested are null
    raise UnsupportedTypeError(f"BinaryRow encoding of non-null {t} values is not supported (only atomic types)")


def _bits(values: pa.Array) -> np.ndarray:
    """The value's raw little-endian bits, zero-extended to a 64-bit slot."""
    v = np.ascontiguousarray(values.to_numpy(zero_copy_only=False))
    return v.view(f"u{v.itemsize}").astype(np.uint64)


def _time_millis(column: pa.Array, t: DataType) -> np.ndarray:
    """TIME is stored as int32 milliseconds of the day, whatever the Arrow unit."""
    if not pa.types.is_time(column.type):
        column = _cast(column, pa.time32("ms"), t)
    storage = pa.int32() if pa.types.is_time32(column.type) else pa.int64()
    values = column.view(storage).fill_null(0).to_numpy().astype(np.int64)
    return values * _NANOS_PER_UNIT[column.type.unit] // 10**6


def _epoch_millis_nanos(column: pa.Array, t: DataType) -> tuple[np.ndarray, np.ndarray]:
    """Epoch millis (floored) and nano-of-milli, truncated to the digits the column stores.

    A column stores whole seconds (precision 0), milli- (1-3), micro- (4-6) or nanoseconds
    (7-9), and Java's BinaryRowWriter writes the value as stored, not cut to the precision's
    digits (a TIMESTAMP(4) key of 12:00:00.123456 hashes with its 6 digits): truncating to the
    stored digits makes the key bytes those of the value as the column holds it, so a row
    lands in Java's bucket, also when its timestamp had finer digits on input.
    """
    if not pa.types.is_timestamp(column.type):
        column = _cast(column, to_arrow(t), t)
    v = column.view(pa.int64()).fill_null(0).to_numpy()
    per_unit = _NANOS_PER_UNIT[column.type.unit]
    if per_unit >= 10**6:
        millis, nanos = v * (per_unit // 10**6), np.zeros_like(v)
    else:
        per_milli = 10**6 // per_unit
        millis, nanos = v // per_milli, v % per_milli * per_unit
    digits = _stored_digits(t.precision)
    if digits >= 3:
        nanos -= nanos % 10 ** (9 - digits)
    else:
        millis -= millis % 10 ** (3 - digits)
    return millis, nanos


def _stored_digits(precision: int) -> int:
    """Fractional digits a TIMESTAMP(precision) column stores (its Arrow unit: ms, us, ns; a TIMESTAMP(0)
    keeps the milliseconds it is given, as Java's writers do)."""
    return 3 if precision <= 3 else 6 if precision <= 6 else 9


def _encode_timestamp(column: pa.Array, t: DataType, null: np.ndarray) -> _Field:
    """Compact (p <= 3): millis in the slot. Else 8 var bytes of millis, nanos in the slot.

    Non-compact nulls keep their 8 (zero) var bytes and offset, as Java's writeTimestamp(null).
    """
    millis, nanos = _epoch_millis_nanos(column, t)
    if t.is_compact_timestamp:
        return _Field(null, millis.view(np.uint64))
    millis = np.where(null, 0, millis).astype("<i8")
    var = _binary_from_matrix(millis.view(np.uint8).reshape(-1, 8), large=True)
    return _Field(null, nanos.astype(np.uint64), np.full(len(millis), 8, np.int64), (var,))


def _encode_decimal(column: pa.Array, t: DataType, null: np.ndarray) -> _Field:
    """Compact (p <= 18): unscaled int64 in the slot. Else 16 var bytes holding
    BigInteger.toByteArray() (minimal big-endian two's complement), zero padded.

    Non-compact nulls keep their 16 zero var bytes and offset, as Java's writeDecimal(null).
    """
    column = _cast(column, pa.decimal128(t.precision, t.scale), t)
    le = np.frombuffer(column.buffers()[1], np.uint8, count=16 * len(column),
                       offset=16 * column.offset).reshape(-1, 16).copy()
    le[null] = 0
    if t.is_compact_decimal:
        return _Field(null, le.view(np.uint64)[:, 0].copy())
    nbytes = _min_twos_complement_bytes(le)
    be = le[:, ::-1]
    index = (16 - nbytes)[:, None] + np.arange(16)
    packed = np.take_along_axis(be, np.minimum(index, 15), axis=1) * (index < 16)
    var = _binary_from_matrix(np.ascontiguousarray(packed), large=True)
    return _Field(null, np.where(null, 0, nbytes).astype(np.uint64),
                  np.full(len(le), 16, np.int64), (var,))


def _min_twos_complement_bytes(le: np.ndarray) -> np.ndarray:
    """Length of BigInteger.toByteArray() for 128-bit little-endian values: bitLength // 8 + 1."""
    magnitude = np.where(le[:, 15:16] >= 0x80, ~le, le)         # ~x for negatives, as bitLength
    nonzero = magnitude != 0
    top = np.where(nonzero.any(axis=1), 15 - np.argmax(nonzero[:, ::-1], axis=1), -1)
    top_byte = np.take_along_axis(magnitude, np.maximum(top, 0)[:, None], axis=1)[:, 0]
    return np.maximum(top + 1 + (top_byte >= 0x80), 1).astype(np.int64)


def _encode_bytes(column: pa.Array, null: np.ndarray) -> _Field:
    """UTF-8 strings and binaries: inline up to 7 bytes (last slot byte 0x80 | len),
    else in the variable part, zero padded to 8 bytes."""
    offsets, data = _binary_buffers(column)
    starts, lengths = offsets[:-1], np.diff(offsets)
    inline = lengths <= _MAX_INLINE
    padded = np.zeros(len(data) + 8, np.uint8)
    padded[:len(data)] = data
    window = np.ndarray((len(padded) - 7,), dtype="<u8", buffer=padded, strides=(1,))
    lengths_u = lengths.astype(np.uint64)
    first = window[np.where(inline, starts, 0)]
    first &= (np.uint64(1) << (np.minimum(lengths_u, _MAX_INLINE) * np.uint64(8))) - np.uint64(1)
    slot = np.where(inline, first | _INLINE_MARK | (lengths_u << np.uint64(56)), lengths_u)
    outside = ~inline & ~null
    var_len = np.where(outside, (lengths + 7) // 8 * 8, 0)
    content = pc.if_else(pa.array(outside), column, pa.scalar(b"", pa.large_binary()))
    pads = pa.array(_ZERO_PADS, pa.large_binary()).take(pa.array(var_len - np.where(outside, lengths, 0)))
    return _Field(null, slot, var_len, (content, pads))


def _binary_from_matrix(matrix: np.ndarray, large: bool) -> pa.Array:
    """A binary array whose i-th value is row i of a C-contiguous uint8 matrix (zero-copy)."""
    n, width = matrix.shape
    offsets = np.arange(n + 1, dtype=np.int64 if large else np.int32) * width
    arrow_type = pa.large_binary() if large else pa.binary()
    return pa.Array.from_buffers(arrow_type, n, [None, pa.py_buffer(offsets), pa.py_buffer(matrix)])


def _binary_buffers(column: pa.Array) -> tuple[np.ndarray, np.ndarray]:
    """Offsets (int64, n + 1) and the data bytes of a binary or large_binary array."""
    if not (pa.types.is_binary(column.type) or pa.types.is_large_binary(column.type)):
        raise TypeError(f"expected a binary array, got {column.type}")
    _, offsets_buf, data_buf = column.buffers()
    dtype = np.int64 if pa.types.is_large_binary(column.type) else np.int32
    offsets = np.frombuffer(offsets_buf, dtype, count=len(column) + 1, offset=column.offset * dtype().itemsize)
    data = np.frombuffer(data_buf, np.uint8) if data_buf is not None else np.zeros(0, np.uint8)
    return offsets.astype(np.int64), data


# ---- single rows as stored in manifests ----------------------------------------------------

def serialize_row(values: Sequence[Any], types: Sequence[DataType]) -> bytes:
    """One row with the 4-byte big-endian arity prefix (Java SerializationUtils.serializeBinaryRow)."""
    columns = [_one_value(v, to_arrow(t)) for v, t in zip(values, types, strict=True)]
    return serialize_rows(columns, types, num_rows=1)[0]


def _one_value(value: Any, arrow_type: pa.DataType) -> pa.Array:
    if getattr(value, "nanosecond", 0) and pa.types.is_timestamp(arrow_type) and arrow_type.unit == "ns":
        return pa.array([epoch_nanos(value)], pa.int64()).cast(arrow_type)  # pa.array would drop them
    return pa.array([value], type=arrow_type)


def serialize_rows(columns: Sequence[pa.Array | pa.ChunkedArray], types: Sequence[DataType],
                   num_rows: int | None = None) -> list[bytes]:
    """Each row of `columns` as `serialize_row` gives it, encoded together (a file's min and
    max keys, or its stats' min and max rows, cost one encoding instead of two)."""
    prefix = struct.pack(">i", len(types))
    rows = _encode_few(columns, types, num_rows)
    if rows is None:
        rows = encode_rows(columns, types, num_rows).to_pylist()
    return [prefix + row for row in rows]


# ---- a few rows, value by value ----------------------------------------------------------------

_FEW_ROWS = 8
_MASK64 = 2**64 - 1
_INT64, _INT32 = range(-2**63, 2**63), range(-2**31, 2**31)
_UNSIGNED = {8: pa.uint8(), 16: pa.uint16(), 32: pa.uint32(), 64: pa.uint64()}
_STRING_AS_BINARY = {pa.string(): pa.binary(), pa.large_string(): pa.large_binary()}  # same layout
_BINARY_TYPES = (pa.binary(), pa.large_binary())

# One value as `_Field` holds it: the slot (None when the value is null) and its piece of the
# variable part (None when it has none; its offset is added to the slot during assembly).
_Value = tuple[int | None, bytes | None]


class _Fallback(Exception):
    """The input needs what only the vectorized path does (a cast, int64 wrap-around)."""


def _encode_few(columns: Sequence[pa.Array | pa.ChunkedArray], types: Sequence[DataType],
                num_rows: int | None) -> list[bytes] | None:
    """`encode_rows` as a list of bytes for up to `_FEW_ROWS` rows, or None to leave the
    input to `encode_rows` (more rows, malformed input, or a column it would cast).

    Same bytes without the vectorized path's fixed cost per column (numpy/Arrow calls).
    """
    n = len(columns[0]) if columns else num_rows
    if len(columns) != len(types) or n is None or n > _FEW_ROWS:
        return None
    arrays = [_as_array(c) for c in columns]      # as encode_rows does first, same errors
    if any(len(a) != n for a in arrays) or num_rows not in (None, n):
        return None
    try:
        fields = [_few_values(a, t) for a, t in zip(arrays, types)]
    except _Fallback:
        return None
    header = null_bits_size(len(fields))
    fixed_size = header + 8 * len(fields)
    rows = []
    for r in range(n):
        nulls, slots, var = 0, [], bytearray()
        for i, values in enumerate(fields):
            slot, piece = values[r]
            if slot is None:
                nulls |= 1 << (i + _HEADER_BITS)
                slot = 0
            if piece is not None:
                slot |= (fixed_size + len(var)) << 32
                var += piece
            slots.append(slot & _MASK64)        # the vectorized slot is a wrapping uint64
        rows.append(nulls.to_bytes(header, "little") + struct.pack(f"<{len(slots)}Q", *slots) + var)
    return rows


def _few_values(column: pa.Array, t: DataType) -> list[_Value]:
    """Each value of one column as `_encode_column` encodes it; raises _Fallback for an
    Arrow type it would cast (the cast decides the bytes and the errors, so it must run)."""
    r, at = t.root, column.type
    if r == "BOOLEAN" and at == pa.bool_():
        return [(None if v is None else int(v), None) for v in column.to_pylist()]
    if (r in _SLOT_TYPES and at == _SLOT_TYPES[r]) or (r == "DATE" and at == pa.date32()):
        # The raw bits read as unsigned: the zero-extended slot (floats keep their NaN payload).
        return [(v, None) for v in column.view(_UNSIGNED[at.bit_width]).to_pylist()]
    if r == "TIME" and pa.types.is_time(at):
        return [(None if v is None else _time_slot(v, at.unit), None) for v in _raw_ints(column)]
    if r in ("TIMESTAMP", "TIMESTAMP_LTZ") and pa.types.is_timestamp(at):
        return [_timestamp_value(v, at.unit, t) for v in _raw_ints(column)]
    if r == "DECIMAL" and pa.types.is_decimal128(at) and (at.precision, at.scale) == (t.precision, t.scale):
        return [_decimal_value(le, t) for le in column.view(pa.binary(16)).to_pylist()]
    if (t.is_string and at in _STRING_AS_BINARY) or (t.is_binary and at in _BINARY_TYPES):
        raw = column.view(_STRING_AS_BINARY[at]) if t.is_string else column
        return [_bytes_value(b) for b in raw.to_pylist()]     # bytes as stored, no UTF-8 round trip
    if t.is_structured and column.null_count == len(column):
        return [(None, None)] * len(column)
    raise _Fallback


def _raw_ints(column: pa.Array) -> list[int | None]:
    """The stored integers of a time or timestamp array (None for nulls)."""
    return column.view(pa.int32() if column.type.bit_width == 32 else pa.int64()).to_pylist()


def _time_slot(value: int, unit: str) -> int:
    """`_time_millis` of one value; outside int32 (or int64 on the way) the vectorized path raises."""
    nanos = value * _NANOS_PER_UNIT[unit]
    millis = nanos // 10**6
    if nanos not in _INT64 or millis not in _INT32:
        raise _Fallback
    return millis & 0xFFFFFFFF


def _timestamp_value(value: int | None, unit: str, t: DataType) -> _Value:
    """`_epoch_millis_nanos` and `_encode_timestamp` for one value: compact keeps the millis
    in the slot; else the slot holds nano-of-milli and 8 var bytes the millis (zero for null)."""
    per_unit = _NANOS_PER_UNIT[unit]
    if per_unit >= 10**6:
        millis, nanos = (value or 0) * (per_unit // 10**6), 0
    else:
        millis, nanos = divmod(value or 0, 10**6 // per_unit)
        nanos *= per_unit
    if millis not in _INT64:
        raise _Fallback                       # numpy wraps around before truncating
    digits = _stored_digits(t.precision)
    if digits >= 3:
        nanos -= nanos % 10 ** (9 - digits)
    else:
        millis -= millis % 10 ** (3 - digits)
    if millis not in _INT64:
        raise _Fallback
    if t.is_compact_timestamp:
        return (None if value is None else millis & _MASK64), None
    return (None if value is None else nanos), struct.pack("<q", millis)


def _decimal_value(le: bytes | None, t: DataType) -> _Value:
    """`_encode_decimal` for one value from its 16 stored little-endian bytes: compact keeps
    the low 8 bytes in the slot; else BigInteger.toByteArray() in 16 var bytes (zero for null)."""
    unscaled = 0 if le is None else int.from_bytes(le, "little", signed=True)
    if t.is_compact_decimal:
        return (None if le is None else unscaled & _MASK64), None
    size = (unscaled if unscaled >= 0 else ~unscaled).bit_length() // 8 + 1
    return (None if le is None else size), unscaled.to_bytes(size, "big", signed=True).ljust(16, b"\0")


def _bytes_value(data: bytes | None) -> _Value:
    """`_encode_bytes` for one value: inline up to 7 bytes, else 8-padded in the var part."""
    if data is None:
        return None, None
    if len(data) <= _MAX_INLINE:
        return int.from_bytes(data, "little") | (0x80 | len(data)) << 56, None
    return len(data), data + _ZERO_PADS[-len(data) % 8]


def deserialize_row(data: bytes, types: Sequence[DataType], upper: bool = False) -> list[Any]:
    """Decode a serialized row into Python values, one per type, as Arrow's to_pylist gives them.

    Fields beyond the stored arity are None (the row predates added columns); b"" is the
    empty row. Offsets are read from the slots, so rows that do not reserve space for null
    non-compact values (pypaimon's) decode as well.

    A TIMESTAMP(7..9) value decodes to microseconds (Python's datetime): rounded down, or with
    `upper` (a max statistic, which must stay an upper bound) rounded up, None if that leaves
    year 9999.
    """
    if not data:
        return [None] * len(types)
    arity = struct.unpack_from(">i", data)[0]
    row = memoryview(data)[4:]
    header = null_bits_size(arity)
    out: list[Any] = []
    for i, t in enumerate(types):
        bit = i + _HEADER_BITS
        if i >= arity or row[bit >> 3] & (1 << (bit & 7)):
            out.append(None)
        else:
            out.append(_decode_field(row, header + 8 * i, t, upper))
    return out


def _decode_field(row: memoryview, at: int, t: DataType, upper: bool = False) -> Any:
    r = t.root
    if r in _SLOT_TYPES:
        fmt = {"BOOLEAN": "<?", "TINYINT": "<b", "SMALLINT": "<h", "INT": "<i",
               "BIGINT": "<q", "FLOAT": "<f", "DOUBLE": "<d"}[r]
        return struct.unpack_from(fmt, row, at)[0]
    slot = struct.unpack_from("<Q", row, at)[0]
    signed = struct.unpack_from("<q", row, at)[0]
    if r == "DATE":
        return datetime.date(1970, 1, 1) + datetime.timedelta(days=struct.unpack_from("<i", row, at)[0])
    if r == "TIME":
        return _arrow_value(struct.unpack_from("<i", row, at)[0], pa.time32("ms"))
    if r in ("TIMESTAMP", "TIMESTAMP_LTZ"):
        tz = "UTC" if r == "TIMESTAMP_LTZ" else None
        if t.is_compact_timestamp:
            return _arrow_value(signed, pa.timestamp("ms", tz))
        millis = struct.unpack_from("<q", row, slot >> 32)[0]
        micros, sub_micro = divmod(slot & 0xFFFFFFFF, 1000)
        if upper and sub_micro:  # 1 ns above a microsecond must not become a max below the value
            try:
                return _arrow_value(millis * 1000 + micros + 1, pa.timestamp("us", tz))
            except (ValueError, OverflowError):
                return None
        value = _arrow_value(millis * 1000 + micros, pa.timestamp("us", tz))
        return NanoDatetime.of(value, sub_micro) if sub_micro else value
    if r == "DECIMAL":
        unscaled = signed if t.is_compact_decimal else int.from_bytes(_var_bytes(row, slot), "big", signed=True)
        return Decimal(f"{unscaled}E-{t.scale}")
    if t.is_string or t.is_binary:
        raw = bytes(row[at:at + ((slot >> 56) & 0x7F)]) if slot >> 63 else bytes(_var_bytes(row, slot))
        return raw.decode("utf-8") if t.is_string else raw
    raise UnsupportedTypeError(f"BinaryRow decoding of {t} is not supported (only atomic types)")


class NanoDatetime(datetime.datetime):
    """A decoded TIMESTAMP(7..9) value whose nanoseconds below its microsecond are not zero:
    a datetime (compares, hashes and converts as its microsecond value) that keeps them in
    `nanosecond` (as pandas.Timestamp does), so a partition directory named from it carries
    every digit, as Java names it (paths.py)."""
    nanosecond: int = 0

    @classmethod
    def of(cls, value: datetime.datetime, nanosecond: int) -> "NanoDatetime":
        out = cls(value.year, value.month, value.day, value.hour, value.minute, value.second,
                  value.microsecond, value.tzinfo)
        out.nanosecond = nanosecond
        return out

    def __reduce_ex__(self, protocol):  # pickles (Spark tasks) and copies keep the nanoseconds
        return _nano_datetime, (datetime.datetime(self.year, self.month, self.day, self.hour, self.minute,
                                                  self.second, self.microsecond, self.tzinfo), self.nanosecond)


def _nano_datetime(value: datetime.datetime, nanosecond: int) -> NanoDatetime:
    return NanoDatetime.of(value, nanosecond)


_EPOCH = datetime.datetime(1970, 1, 1)


def epoch_nanos(value: datetime.datetime) -> int:
    """A datetime's nanoseconds since 1970 (a naive one as UTC, as Arrow takes it), with the
    `nanosecond` a NanoDatetime or pandas.Timestamp holds below its microsecond."""
    base = _EPOCH if value.tzinfo is None else _EPOCH.replace(tzinfo=datetime.timezone.utc)
    return (value - base) // datetime.timedelta(microseconds=1) * 1000 + getattr(value, "nanosecond", 0)


def _var_bytes(row: memoryview, slot: int) -> memoryview:
    offset, length = slot >> 32, slot & 0xFFFFFFFF
    return row[offset:offset + length]


def _arrow_value(value: int, arrow_type: pa.DataType) -> Any:
    """Convert a stored integer the way Arrow's to_pylist would (datetime, time, tz)."""
    return pa.array([value], arrow_type).to_pylist()[0]


# ---- hashing ---------------------------------------------------------------------------------

def hash_rows(rows: pa.Array | pa.ChunkedArray, seed: int = _MURMUR_SEED) -> np.ndarray:
    """BinaryRow.hashCode() of every row: Murmur3_x86_32 by 4-byte LE words, seed 42 (int32).

    Another `seed` gives an independent hash of the same bytes (lookup indexes combine two).

    Rows are processed word index by word index across all rows at once. Rows of one length
    (bucket keys of fixed-width types) are a matrix, mixed column by column. Otherwise rows
    sorted by length make the rows still active a prefix, so memory stays O(rows) for any row length.
    Once fewer than `_MIN_VECTOR_ROWS` rows are still active, a numpy step per word costs
    more than a plain loop, so the longest rows finish one by one (a megabyte key hashes in
    a fraction of a second instead of tens of seconds).
    """
    if isinstance(rows, pa.ChunkedArray):
        rows = rows.combine_chunks()
    offsets, data = _binary_buffers(rows)
    lengths = np.diff(offsets)
    if (lengths & 3).any():
        raise ValueError("BinaryRow lengths must be multiples of 4 bytes")
    n = len(rows)
    words = data[offsets[0]:offsets[-1]].view(np.uint32) if n else np.zeros(0, np.uint32)
    if n >= _MIN_VECTOR_ROWS and (lengths == lengths[0]).all():
        # Fixed-width rows (bucket keys of fixed-width types, the common case): row r's
        # words are row r of a matrix, so no sort and no gather.
        return _hash_matrix(words.reshape(n, int(lengths[0]) // 4), seed)
    h = np.full(n, seed, np.uint32)
    spare = np.empty(n, np.uint32)
    order = np.argsort(-lengths, kind="stable")
    starts = (offsets[:-1][order] - offsets[0]) // 4
    word_counts = lengths[order] // 4
    active = np.searchsorted(-word_counts, -np.arange(word_counts[0] if n else 0), side="left")
    few = np.flatnonzero(active < _MIN_VECTOR_ROWS)
    vector_words = int(few[0]) if few.size else len(active)
    for w in range(vector_words):
        count = active[w]
        _mix_column(h[:count], words[starts[:count] + w], spare[:count])
    for r in range(int(active[vector_words]) if vector_words < len(active) else 0):
        h[r] = _mix_words(int(h[r]), words[starts[r] + vector_words:starts[r] + word_counts[r]])
    out = np.empty(n, np.int32)
    out[order] = _finish(h, lengths[order]).view(np.int32)
    return out


def _hash_matrix(matrix: np.ndarray, seed: int) -> np.ndarray:
    """Murmur3 of rows of one length: row r's uint32 words are row r of `matrix`.

    Leading words equal in every row (the header of rows without nulls) leave every row in
    the same state, so they are mixed once for all rows."""
    n, width = matrix.shape
    same = 0
    while same < width and n and (matrix[:, same] == matrix[0, same]).all():
        same += 1
    state = np.full(1, seed, np.uint32)
    for w in range(same):
        _mix_column(state, matrix[:1, w], np.empty(1, np.uint32))
    h = np.full(n, state[0], np.uint32)
    spare = np.empty(n, np.uint32)
    for w in range(same, width):
        _mix_column(h, matrix[:, w], spare)
    return _finish(h, np.uint32(4 * width)).view(np.int32)


def _mix_column(h: np.ndarray, words: np.ndarray, spare: np.ndarray) -> None:
    """Murmur3's body for one word of each row, updating the states `h` in place.

    `spare` is scratch space of h's length: in-place steps with a reused buffer run about
    3x faster than fresh temporaries (no page faults). `words` is left unmodified.
    """
    k = words * np.uint32(_C1)
    np.right_shift(k, np.uint32(17), out=spare)
    k <<= np.uint32(15)
    k |= spare
    k *= np.uint32(_C2)
    h ^= k
    np.right_shift(h, np.uint32(19), out=spare)
    h <<= np.uint32(13)
    h |= spare
    h *= np.uint32(5)
    h += np.uint32(_C3)


def _finish(h: np.ndarray, lengths: np.ndarray | np.uint32) -> np.ndarray:
    """Murmur3's finalization (length, then fmix32), in place on the uint32 states."""
    h ^= np.asarray(lengths).astype(np.uint32)
    h ^= h >> np.uint32(16)
    h *= np.uint32(_F1)
    h ^= h >> np.uint32(13)
    h *= np.uint32(_F2)
    h ^= h >> np.uint32(16)
    return h


def _mix_words(h: int, words: np.ndarray) -> int:
    """Murmur3's body over `words` for one row, continuing from state `h`."""
    k = words * np.uint32(_C1)
    k = (k << np.uint32(15)) | (k >> np.uint32(17))
    k *= np.uint32(_C2)
    for kw in k.tolist():
        h ^= kw
        h = ((h << 13) | (h >> 19)) & 0xFFFFFFFF
        h = (h * 5 + _C3) & 0xFFFFFFFF
    return h


def murmur3_32(data: bytes, seed: int = 0) -> int:
    """Standard Murmur3 x86_32 of any bytes (unsigned), as Guava's `murmur3_32` gives it: the
    tail's 1-3 bytes are mixed too, where Paimon's row hash only ever sees whole words."""
    whole = len(data) // 4 * 4
    h = _mix_words(seed, np.frombuffer(data[:whole], "<u4"))
    if whole < len(data):
        k = (int.from_bytes(data[whole:], "little") * _C1) & 0xFFFFFFFF
        k = (((k << 15) | (k >> 17)) * _C2) & 0xFFFFFFFF
        h ^= k
    return int(_finish(np.array([h], np.uint32), np.uint32(len(data)))[0])


def hash_row(data: bytes) -> int:
    """BinaryRow.hashCode() of one row's bytes (without the arity prefix)."""
    return int(hash_rows(pa.array([data], pa.binary()))[0])
