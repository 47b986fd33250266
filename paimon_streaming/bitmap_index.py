"""Paimon's bitmap file index (`file-index.bitmap.columns`): per data file and column, a
dictionary of the column's distinct values, each with the Roaring bitmap of the rows holding
it, written as Java's BitmapFileIndex (versions 1 and 2) and read to skip files.

Layout (big-endian; Java's BitmapFileIndexMeta and BitmapFileIndexMetaV2): a version byte, the
row count, the number of distinct non-null values, whether nulls occur (then the null bitmap's
offset, and in version 2 its length), then the dictionary: in version 1 every value with its
bitmap's offset; in version 2 the first value and offset of each index block, the blocks'
size, and the blocks (at most `index-block-size` bytes each, 16 KiB by default): an entry
count, then each value with its bitmap's offset and length, sorted as Java compares the values.
The bitmaps follow (Roaring's portable format), the null bitmap first. A value on one row has
no bitmap: its offset is -1 - row. Values: strings as a 4-byte length and UTF-8 bytes, numbers
in their width, booleans one byte, floats by their bits (index_values.py).

Java's readers also filter rows by these bitmaps, so the row numbers are those of the file.
"""
from __future__ import annotations

import struct

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
import pyroaring

from .index_values import FLOATS, INTEGERS, TIMESTAMPS, java_numbers
from .roaring import roaring_many
from .types import DataType

VERSION_1 = 1
VERSION_2 = 2
DEFAULT_BLOCK_SIZE = 16 * 1024
_STRINGS = ("CHAR", "VARCHAR")
BITMAPPABLE = INTEGERS + TIMESTAMPS + FLOATS + _STRINGS + ("BOOLEAN",)

_WIDTH = {"TINYINT": ">i1", "BOOLEAN": ">i1", "SMALLINT": ">i2", "INT": ">i4", "DATE": ">i4", "TIME": ">i4",
          "FLOAT": ">i4", "BIGINT": ">i8", "DOUBLE": ">i8", "TIMESTAMP": ">i8", "TIMESTAMP_LTZ": ">i8"}



class BlockSizeError(ValueError):
    """A dictionary entry larger than version 2's index block."""


def key_dtype(t: DataType) -> str | None:
    """The big-endian numpy dtype of a column's dictionary values; None for strings."""
    return None if t.root in _STRINGS else _WIDTH[t.root]


# ---- writing ------------------------------------------------------------------------------
def build(values: pa.Array | pa.ChunkedArray, t: DataType, version: int = VERSION_2,
          block_size: int = DEFAULT_BLOCK_SIZE) -> bytes:
    """The bitmap index of a file's column `values` (all rows, in file order)."""
    if isinstance(values, pa.ChunkedArray):
        values = values.combine_chunks() if values.num_chunks != 1 else values.chunk(0)
    if isinstance(values, pa.DictionaryArray):
        values = values.dictionary_decode()
    rows = len(values)
    is_valid = values.is_valid().to_numpy(zero_copy_only=False)
    valid, nulls = np.flatnonzero(is_valid), np.flatnonzero(~is_valid)
    distinct, codes = _distinct(values.filter(pa.array(is_valid)), t)
    grouped_rows = valid[np.argsort(codes, kind="stable")].astype(np.uint32)
    counts = np.bincount(codes, minlength=len(distinct)).astype(np.int64)
    starts = np.cumsum(counts) - counts

    multi = counts > 1  # a value on one row has no bitmap: its offset is -1 - row
    owner = np.repeat(np.cumsum(multi) - 1, counts)[np.repeat(multi, counts)]
    bodies, sizes = roaring_many(grouped_rows[np.repeat(multi, counts)], owner, int(multi.sum()))
    null_bitmap, _ = roaring_many(nulls.astype(np.uint32), np.zeros(len(nulls), np.int64), 1)
    first = len(null_bitmap) if len(nulls) > 1 else 0
    lengths = np.full(len(distinct), -1, np.int64)
    lengths[multi] = sizes
    offsets = -1 - grouped_rows[starts].astype(np.int64)
    offsets[multi] = first + np.cumsum(sizes) - sizes
    null_offset = -1 - int(nulls[0]) if len(nulls) == 1 else 0

    head = struct.pack(">bii?", version, rows, len(distinct), len(nulls) > 0)
    if version == VERSION_1:
        head += struct.pack(">i", null_offset) if len(nulls) else b""
        dictionary, _, _ = _serialized_entries(distinct, t, offsets[:, None])
    else:
        head += struct.pack(">ii", null_offset, len(null_bitmap)) if len(nulls) else b""
        dictionary = _index_blocks(distinct, t, np.stack([offsets, lengths], axis=1), block_size)
    return head + dictionary + (null_bitmap if len(nulls) > 1 else b"") + bodies


def _distinct(values: pa.Array, t: DataType) -> tuple[pa.Array | np.ndarray, np.ndarray]:
    """The distinct values, sorted as Java's comparator sorts them (strings: by their UTF-8
    bytes, unsigned; floats: Float.compare's total order), and each value's index into them."""
    if t.root in _STRINGS:
        encoded = pc.dictionary_encode(values.cast(pa.binary()))
        order = pc.sort_indices(encoded.dictionary).to_numpy()
        rank = np.empty(len(order), np.int64)
        rank[order] = np.arange(len(order))
        return encoded.dictionary.take(pa.array(order)), rank[encoded.indices.to_numpy(zero_copy_only=False)]
    numbers = java_numbers(values, t)
    if t.root in FLOATS:
        magnitude = np.int64(0x7FFFFFFF if t.root == "FLOAT" else 0x7FFFFFFFFFFFFFFF)
        total_order = numbers ^ ((numbers >> 63) & magnitude)  # negative floats' bits reversed
        sort_keys, codes = np.unique(total_order, return_inverse=True)
        return sort_keys ^ ((sort_keys >> 63) & magnitude), codes.reshape(-1)
    distinct, codes = np.unique(numbers, return_inverse=True)
    return distinct, codes.reshape(-1)


def _serialized_entries(distinct: pa.Array | np.ndarray, t: DataType, tails: np.ndarray) \
        -> tuple[bytes, np.ndarray, np.ndarray]:
    """Dictionary entries (each value, then its `tails` as 4-byte ints), with each entry's
    start and value size in the bytes."""
    n, k = tails.shape
    if t.root not in _STRINGS:
        dtype = np.dtype([("v", _WIDTH[t.root])] + [(f"t{i}", ">i4") for i in range(k)])
        entries = np.zeros(n, dtype)
        entries["v"] = np.asarray(distinct)
        for i in range(k):
            entries[f"t{i}"] = tails[:, i]
        width = dtype["v"].itemsize
        return entries.tobytes(), np.arange(n, dtype=np.int64) * dtype.itemsize, np.full(n, width, np.int64)
    if n == 0:
        return b"", np.zeros(0, np.int64), np.zeros(0, np.int64)
    value_sizes = 4 + pc.binary_length(distinct).to_numpy(zero_copy_only=False).astype(np.int64)
    entries = pc.binary_join_element_wise(_as_binary(value_sizes - 4), distinct, _as_binary(*tails.T),
                                          pa.scalar(b"", pa.binary()))
    bounds = np.frombuffer(entries.buffers()[1], np.int32, n + 1, entries.offset * 4)
    data = entries.buffers()[2].to_pybytes()[bounds[0]:bounds[-1]]
    return data, (bounds[:-1] - bounds[0]).astype(np.int64), value_sizes


def _as_binary(*columns: np.ndarray) -> pa.Array:
    """A binary array whose element i is columns' values at i as 4-byte big-endian ints."""
    raw = np.stack(columns, axis=1).astype(">i4")
    fixed = pa.FixedSizeBinaryArray.from_buffers(pa.binary(4 * len(columns)), len(raw),
                                                  [None, pa.py_buffer(raw.tobytes())])
    return fixed.cast(pa.binary())


def _index_blocks(distinct: pa.Array | np.ndarray, t: DataType, tails: np.ndarray, block_size: int) -> bytes:
    """Version 2's dictionary: the block directory (each block's first value and offset), the
    blocks' size, then the blocks, filled in order up to `block_size` bytes as Java's writer."""
    entries, starts, value_sizes = _serialized_entries(distinct, t, tails)
    ends = np.append(starts[1:], len(entries))
    directory, blocks, at, begin = [], [], 0, 0
    while begin < len(starts):
        # the entries [begin, end) whose bytes and the block's count fit in block_size
        end = int(np.searchsorted(ends, starts[begin] + block_size - 4, side="right"))
        if end == begin:
            raise BlockSizeError(f"a value of {int(value_sizes[begin]) - 4} bytes does not fit an index "
                                 f"block of {block_size} bytes")
        block = struct.pack(">i", end - begin) + entries[starts[begin]:ends[end - 1]]
        directory.append(entries[starts[begin]:starts[begin] + value_sizes[begin]] + struct.pack(">i", at))
        blocks.append(block)
        at += len(block)
        begin = end
    return struct.pack(">i", len(blocks)) + b"".join(directory) + struct.pack(">i", at) + b"".join(blocks)


# ---- reading ------------------------------------------------------------------------------
class BitmapIndex:
    """A parsed bitmap index: whether values occur in its file, and (for `check`) a full
    structural verification. ValueError when the bytes are not one (callers name the file)."""

    def __init__(self, data: bytes, t: DataType):
        self.data = data
        self.type = t
        self.version = data[0] if data else None
        if self.version not in (VERSION_1, VERSION_2):
            raise ValueError(f"bitmap index version {self.version}, not 1 or 2")
        self.rows, self.distinct, self.has_nulls = struct.unpack_from(">ii?", data, 1)
        if self.rows < 0 or not 0 <= self.distinct <= self.rows:
            raise ValueError(f"a bitmap index of {self.distinct} values over {self.rows} rows")
        at = 10
        self.null_offset, self.null_length = 0, -1
        if self.has_nulls:
            if self.version == VERSION_1:
                (self.null_offset,) = struct.unpack_from(">i", data, at)
                at += 4
            else:
                self.null_offset, self.null_length = struct.unpack_from(">ii", data, at)
                at += 8
        self.dictionary_start = at
        if self.version == VERSION_2:
            (blocks,) = struct.unpack_from(">i", data, at)
            at += 4
            self.block_keys = []
            for _ in range(blocks):
                key, at = self._value_at(at)
                (offset,) = struct.unpack_from(">i", data, at)
                self.block_keys.append((key, offset))
                at += 4
            (blocks_size,) = struct.unpack_from(">i", data, at)
            self.blocks_start = at + 4
            self.body_start = self.blocks_start + blocks_size
            if blocks_size < 0 or self.body_start > len(data):
                raise ValueError(f"index blocks of {blocks_size} bytes past the index's end")

    def _value_at(self, at: int) -> tuple[object, int]:
        if self.type.root in _STRINGS:
            (n,) = struct.unpack_from(">i", self.data, at)
            if n < 0 or at + 4 + n > len(self.data):
                raise ValueError(f"a value of {n} bytes at byte {at}")
            return self.data[at + 4:at + 4 + n], at + 4 + n
        dtype = np.dtype(_WIDTH[self.type.root])
        return np.frombuffer(self.data, dtype, 1, at)[0], at + dtype.itemsize

    def _dictionary_region(self) -> tuple[int, int]:
        """Where the dictionary's entries lie (version 1: up to the end, its length unknown)."""
        if self.version == VERSION_1:
            return self.dictionary_start, len(self.data)
        return self.blocks_start, self.body_start

    def may_contain(self, literals: np.ndarray | list[bytes]) -> bool:
        """Whether any of `literals` (index keys: Java numbers, or UTF-8 bytes) occurs in the
        file. Strings are searched as their encoded entries in the dictionary's bytes (a match
        elsewhere only keeps the file); numbers are compared with every dictionary value."""
        if self.type.root in _STRINGS:
            start, end = self._dictionary_region()
            return any(self.data.find(struct.pack(">i", len(v)) + v, start, end) >= 0 for v in literals)
        return bool(np.isin(np.asarray(literals), self._numeric_values()).any())

    def _numeric_values(self) -> np.ndarray:
        dtype = _WIDTH[self.type.root]
        if self.version == VERSION_1:
            entries = np.frombuffer(self.data, [("v", dtype), ("o", ">i4")], self.distinct, self.dictionary_start)
            return entries["v"]
        parts = []
        for _, offset in self.block_keys:
            at = self.blocks_start + offset
            (n,) = struct.unpack_from(">i", self.data, at)
            parts.append(np.frombuffer(self.data, [("v", dtype), ("o", ">i4"), ("l", ">i4")], n, at + 4)["v"])
        return np.concatenate(parts) if parts else np.zeros(0, dtype)

    def entries(self) -> list[tuple[object, int, int]]:
        """Every dictionary entry (value, offset, length; length -1 in version 1), in order."""
        out = []
        if self.version == VERSION_1:
            at = self.dictionary_start
            for _ in range(self.distinct):
                value, at = self._value_at(at)
                out.append((value, struct.unpack_from(">i", self.data, at)[0], -1))
                at += 4
            self.body_start = at
            return out
        for _, offset in self.block_keys:
            at = self.blocks_start + offset
            (n,) = struct.unpack_from(">i", self.data, at)
            at += 4
            for _ in range(n):
                value, at = self._value_at(at)
                out.append((value, *struct.unpack_from(">ii", self.data, at)))
                at += 8
        return out

    def bitmaps(self) -> dict[object, pyroaring.BitMap]:
        """Every value's rows (None: the null rows), decoded: a scan over every entry, for
        `paimon-streaming check` and tests."""
        entries = self.entries()
        if len(entries) != self.distinct:
            raise ValueError(f"{len(entries)} dictionary entries, the head says {self.distinct}")
        located = list(entries)
        if self.has_nulls:
            located.append((None, self.null_offset, self.null_length))
        sized = np.unique([offset for _, offset, _ in located if offset >= 0])
        ends = np.append(sized[1:], len(self.data) - self.body_start)  # version 1: to the next bitmap
        out = {}
        for value, offset, length in located:
            if offset < 0:
                out[value] = pyroaring.BitMap([-1 - offset])
                continue
            if length < 0:
                length = int(ends[np.searchsorted(sized, offset)]) - offset
            start = self.body_start + offset
            if start + length > len(self.data):
                raise ValueError(f"a bitmap at body offset {offset} past the index's end")
            out[value] = pyroaring.BitMap.deserialize(self.data[start:start + length])
        return out

    def verify(self) -> None:
        """ValueError unless the dictionary and every bitmap parse and the bitmaps cover each
        row exactly once."""
        bitmaps = self.bitmaps().values()
        marks = sum(len(rows) for rows in bitmaps)
        covered = pyroaring.BitMap.union(pyroaring.BitMap(), *bitmaps)
        if covered and covered.max() >= self.rows:
            raise ValueError(f"a bitmap names row {covered.max()}, past the file's {self.rows} rows")
        if marks != self.rows or len(covered) != self.rows:
            raise ValueError(f"the bitmaps mark {marks} rows, {len(covered)} distinct, of {self.rows}")
