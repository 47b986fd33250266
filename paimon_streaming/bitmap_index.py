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
import pyroaring

from .index_values import (FLOATS, INTEGERS, KEY_WIDTH, STRINGS, TIMESTAMPS, key_at, plain, sorted_distinct,
                           string_entries, valid_rows)
from .roaring import roaring_many
from .types import DataType

VERSION_1 = 1
VERSION_2 = 2
DEFAULT_BLOCK_SIZE = 16 * 1024
BITMAPPABLE = INTEGERS + TIMESTAMPS + FLOATS + STRINGS + ("BOOLEAN",)



class BlockSizeError(ValueError):
    """A dictionary entry larger than version 2's index block."""


# ---- writing ------------------------------------------------------------------------------
def build(values: pa.Array | pa.ChunkedArray, t: DataType, version: int = VERSION_2,
          block_size: int = DEFAULT_BLOCK_SIZE) -> bytes:
    """The bitmap index of a file's column `values` (all rows, in file order)."""
    values = plain(values)
    rows = len(values)
    valid, non_null_values = valid_rows(values)
    nulls = np.flatnonzero(~values.is_valid().to_numpy(zero_copy_only=False))
    distinct, codes = sorted_distinct(non_null_values, t)
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


def _serialized_entries(distinct: pa.Array | np.ndarray, t: DataType, tails: np.ndarray) \
        -> tuple[bytes, np.ndarray, np.ndarray]:
    """Dictionary entries (each value, then its `tails` as 4-byte ints), with each entry's
    start and value size in the bytes."""
    n, k = tails.shape
    if t.root in STRINGS:
        return string_entries(distinct, tails)
    dtype = np.dtype([("v", KEY_WIDTH[t.root])] + [(f"t{i}", ">i4") for i in range(k)])
    entries = np.zeros(n, dtype)
    entries["v"] = np.asarray(distinct)
    for i in range(k):
        entries[f"t{i}"] = tails[:, i]
    width = dtype["v"].itemsize
    return entries.tobytes(), np.arange(n, dtype=np.int64) * dtype.itemsize, np.full(n, width, np.int64)


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
                key, at = key_at(self.data, at, self.type)
                (offset,) = struct.unpack_from(">i", data, at)
                self.block_keys.append((key, offset))
                at += 4
            (blocks_size,) = struct.unpack_from(">i", data, at)
            self.blocks_start = at + 4
            self.body_start = self.blocks_start + blocks_size
            if blocks_size < 0 or self.body_start > len(data):
                raise ValueError(f"index blocks of {blocks_size} bytes past the index's end")

    def _dictionary_region(self) -> tuple[int, int]:
        """Where the dictionary's entries lie (version 1: up to the end, its length unknown)."""
        if self.version == VERSION_1:
            return self.dictionary_start, len(self.data)
        return self.blocks_start, self.body_start

    def may_contain(self, literals: np.ndarray | list[bytes]) -> bool:
        """Whether any of `literals` (index keys: Java numbers, or UTF-8 bytes) occurs in the
        file. Strings are searched as their encoded entries in the dictionary's bytes (a match
        elsewhere only keeps the file); numbers are compared with every dictionary value."""
        if self.type.root in STRINGS:
            start, end = self._dictionary_region()
            return any(self.data.find(struct.pack(">i", len(v)) + v, start, end) >= 0 for v in literals)
        return bool(np.isin(np.asarray(literals), self._numeric_values()).any())

    def _numeric_values(self) -> np.ndarray:
        dtype = KEY_WIDTH[self.type.root]
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
                value, at = key_at(self.data, at, self.type)
                out.append((value, struct.unpack_from(">i", self.data, at)[0], -1))
                at += 4
            self.body_start = at
            return out
        for _, offset in self.block_keys:
            at = self.blocks_start + offset
            (n,) = struct.unpack_from(">i", self.data, at)
            at += 4
            for _ in range(n):
                value, at = key_at(self.data, at, self.type)
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
            try:
                out[value] = pyroaring.BitMap.deserialize(self.data[start:start + length])
            except IndexError as exc:  # pyroaring's read past a damaged bitmap's bytes
                raise ValueError(f"a damaged bitmap at body offset {offset} ({exc})") from None
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
