"""Paimon's bit-sliced index (`file-index.bsi.columns`): per data file and numeric column, the
rows of each bit of the values, written as Java's BitSliceIndexBitmapFileIndex and read to skip
files.

Layout (big-endian): a version byte (1), the row count, then for the non-negative values and
for the absolute values of the negative ones: a flag, and when set a bit-sliced index: a
version byte (1), its minimum (always 0: Java's writer starts it there) and maximum, the
Roaring bitmap of the rows holding a value ("ebm"), the number of slices (the maximum's bit
length) and each slice's Roaring bitmap: the rows whose value has that bit set.

Values: integers, dates (days), times (milliseconds), timestamps (milliseconds up to precision
3, microseconds above) and DECIMALs of up to 18 digits (their unscaled values), as Java's value
mapper takes them. Java's writer cannot index -2^63 (its absolute value overflows); a file
holding it gets no bit-sliced index here (Java reads such a file whole).
"""
from __future__ import annotations

import struct

import numpy as np
import pyarrow as pa
import pyroaring

from .index_values import INTEGERS, TIMESTAMPS, java_numbers, plain, valid_rows
from .roaring import roaring_at, roaring_many, roaring_of_masks
from .types import DataType

VERSION = 1
SLICEABLE = INTEGERS + TIMESTAMPS + ("DECIMAL",)
MAX_DECIMAL_PRECISION = 18


def indexable(t: DataType) -> bool:
    return t.root in SLICEABLE and (t.root != "DECIMAL" or t.precision <= MAX_DECIMAL_PRECISION)


def build(values: pa.Array | pa.ChunkedArray, t: DataType) -> bytes | None:
    """The bit-sliced index of a file's column `values` (all rows, in file order), or None when
    Java's writer could not index them (a value of -2^63)."""
    values = plain(values)
    rows, valid = valid_rows(values)
    numbers = java_numbers(valid, t)
    if (numbers == np.iinfo(np.int64).min).any():
        return None
    out = [struct.pack(">bi", VERSION, len(values))]
    for part in (numbers >= 0, numbers < 0):
        magnitudes = np.abs(numbers[part]).astype(np.uint64)
        out.append(struct.pack(">?", bool(part.any())))
        if part.any():
            out.append(_sliced(rows[part], magnitudes))
    return b"".join(out)


def _sliced(rows: np.ndarray, magnitudes: np.ndarray) -> bytes:
    """One bit-sliced index (minimum 0) of `magnitudes` on `rows`."""
    top = int(magnitudes.max())
    slices = top.bit_length()
    bits = ((magnitudes[None, :] >> np.arange(slices, dtype=np.uint64)[:, None]) & np.uint64(1)).astype(np.bool_)
    ebm, _ = roaring_many(rows, np.zeros(len(rows), np.int64), 1)
    slice_bytes, _ = roaring_of_masks(rows, bits)
    return struct.pack(">bqq", VERSION, 0, top) + ebm + struct.pack(">i", slices) + slice_bytes


class BitSlicedIndex:
    """A parsed bit-sliced index. ValueError (or struct.error) when the bytes are not one
    (callers name the file)."""

    def __init__(self, data: bytes, t: DataType):
        self.type = t
        if not data or data[0] != VERSION:
            raise ValueError(f"bit-sliced index version {data[0] if data else None}, not 1")
        (self.rows,) = struct.unpack_from(">i", data, 1)
        at = 5
        self.parts: list[tuple[int, int, pyroaring.BitMap, list[pyroaring.BitMap]] | None] = []
        for _ in range(2):  # non-negative values, then negative ones
            (present,) = struct.unpack_from(">?", data, at)
            at += 1
            if not present:
                self.parts.append(None)
                continue
            version, low, high = struct.unpack_from(">bqq", data, at)
            if version != VERSION or not 0 <= low <= high:
                raise ValueError(f"a bit-sliced part of version {version}, range {low}..{high}")
            ebm, at = roaring_at(data, at + 17)
            (count,) = struct.unpack_from(">i", data, at)
            at += 4
            if not 0 <= count <= 64:
                raise ValueError(f"{count} slices")
            slices = []
            for _ in range(count):
                bitmap, at = roaring_at(data, at)
                slices.append(bitmap)
            self.parts.append((low, high, ebm, slices))
        if at != len(data):
            raise ValueError(f"{len(data) - at} bytes after the index")

    def may_contain(self, numbers: np.ndarray) -> bool:
        """Whether any of `numbers` (Java's values) occurs in the file (O'Neil's equality over
        the slices)."""
        return any(self._holds(int(n)) for n in numbers)

    def _holds(self, number: int) -> bool:
        part = self.parts[0 if number >= 0 else 1]
        if part is None:
            return False
        low, high, ebm, slices = part
        target = abs(number) - low
        if target < 0 or abs(number) > high:
            return False
        found = ebm.copy()
        for bit, rows in enumerate(slices):
            found = found & rows if target >> bit & 1 else found - rows
            if not found:
                return False
        return target >> len(slices) == 0

    def verify(self) -> None:
        """ValueError unless every slice lies within its part's rows, the parts do not share a
        row and no row lies past the file's."""
        seen = pyroaring.BitMap()
        for part in self.parts:
            if part is None:
                continue
            _, _, ebm, slices = part
            if any(not rows.issubset(ebm) for rows in slices):
                raise ValueError("a slice marks a row without a value")
            if ebm & seen:
                raise ValueError("a row both negative and not")
            seen |= ebm
        if seen and seen.max() >= self.rows:
            raise ValueError(f"a bitmap names row {seen.max()}, past the file's {self.rows} rows")
