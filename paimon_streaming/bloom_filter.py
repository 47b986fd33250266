"""Paimon's bloom-filter file index (`file-index.bloom-filter.columns`): one filter per data
file and column, built and tested as Java's BloomFilterFileIndex, bit for bit.

Values hash to 64 bits by column type as Java's FastHash: Thomas Wang's integer hash for
integers, dates, times (milliseconds of the day), floats and doubles (their IEEE bits) and
timestamps (milliseconds up to precision 3, microseconds above); XXH64 for strings and binary.
The filter is BloomFilter64: `numHashFunctions` probes `hash1 + i * hash2` (32-bit halves)
into a bit set whose size follows from `items` (expected distinct values of a file, default
1,000,000) and `fpp` (false positive rate, default 0.1). Serialized: the probe count (4 bytes,
big-endian) then the bit set (bit `i` in byte `i / 8`, least significant first).
"""
from __future__ import annotations

import math
import struct

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from .types import DataType
from .xxhash64 import xxh64

DEFAULT_ITEMS = 1_000_000
DEFAULT_FPP = 0.1
_MAX_PROBES = 64  # Java's writer needs an fpp below 1e-19 to reach this

_INTEGERS = ("TINYINT", "SMALLINT", "INT", "BIGINT", "DATE", "TIME")
_BYTES = ("CHAR", "VARCHAR", "BINARY", "VARBINARY")
_TIMESTAMPS = ("TIMESTAMP", "TIMESTAMP_LTZ")
HASHABLE = _INTEGERS + _BYTES + _TIMESTAMPS + ("FLOAT", "DOUBLE")


def thomas_wang(key: np.ndarray) -> np.ndarray:
    """Java's FastHash.getLongHash of int64 values (wrapping, arithmetic right shifts)."""
    key = key.astype(np.int64)
    with np.errstate(over="ignore"):
        key = ~key + (key << 21)
        key = key ^ (key >> 24)
        key = key + (key << 3) + (key << 8)
        key = key ^ (key >> 14)
        key = key + (key << 2) + (key << 4)
        key = key ^ (key >> 28)
        key = key + (key << 31)
    return key


def value_hashes(values: pa.Array | pa.ChunkedArray, t: DataType) -> np.ndarray:
    """The 64-bit hashes (int64) of the non-null `values` of a column of type `t`, as Java's
    FastHash computes them; UnsupportedTypeError-free: callers check `t.root in HASHABLE`."""
    if isinstance(values, pa.ChunkedArray):
        values = values.combine_chunks() if values.num_chunks != 1 else values.chunk(0)
    if values.null_count:
        values = values.drop_null()
    if isinstance(values, pa.DictionaryArray):
        values = values.dictionary_decode()
    root = t.root
    if root in _BYTES:
        return xxh64(values).view(np.int64)
    if root == "FLOAT":
        bits = values.to_numpy(zero_copy_only=False).astype(np.float32).view(np.int32)
        bits = np.where(bits & 0x7FFFFFFF > 0x7F800000, np.int32(0x7FC00000), bits)  # NaN as floatToIntBits
        return thomas_wang(bits.astype(np.int64))
    if root == "DOUBLE":
        floats = values.to_numpy(zero_copy_only=False).astype(np.float64)
        bits = np.where(np.isnan(floats), np.int64(0x7FF8000000000000), floats.view(np.int64))
        return thomas_wang(bits)
    if root in _TIMESTAMPS:
        unit = values.type.unit
        ticks = values.cast(pa.int64()).to_numpy(zero_copy_only=False)
        per_second = {"s": 1, "ms": 1_000, "us": 1_000_000, "ns": 1_000_000_000}[unit]
        wanted = 1_000 if t.precision <= 3 else 1_000_000
        if per_second <= wanted:
            return thomas_wang(ticks * (wanted // per_second))
        return thomas_wang(np.floor_divide(ticks, per_second // wanted))  # Java's floor (negative instants)
    if root == "TIME":
        return thomas_wang(pc.cast(values, pa.time32("ms")).cast(pa.int32()).to_numpy(zero_copy_only=False))
    if pa.types.is_date(values.type):
        values = values.cast(pa.int32())
    return thomas_wang(values.to_numpy(zero_copy_only=False))


class BloomFilter64:
    """Java's BloomFilter64 over a bit set of `bits` bytes (numpy uint8)."""

    def __init__(self, probes: int, bits: np.ndarray):
        self.probes = probes
        self.bits = bits
        self.num_bits = bits.size * 8

    @staticmethod
    def sized(items: int, fpp: float) -> "BloomFilter64":
        """An empty filter sized as Java's `new BloomFilter64(items, fpp)`."""
        nb = int(-items * math.log(fpp) / (math.log(2) * math.log(2)))
        num_bits = nb + (8 - nb % 8)
        probes = max(1, math.floor(num_bits / items * math.log(2) + 0.5))
        return BloomFilter64(probes, np.zeros(num_bits // 8, np.uint8))

    @staticmethod
    def from_bytes(data: bytes) -> "BloomFilter64":
        """A serialized filter; ValueError when it cannot be one (callers name the file)."""
        if len(data) < 5:
            raise ValueError(f"a bloom filter of {len(data)} bytes")
        probes = struct.unpack_from(">i", data)[0]
        if not 1 <= probes <= _MAX_PROBES:
            raise ValueError(f"a bloom filter with {probes} hash functions")
        return BloomFilter64(probes, np.frombuffer(data, np.uint8, offset=4))

    def to_bytes(self) -> bytes:
        return struct.pack(">i", self.probes) + self.bits.tobytes()

    def _positions(self, hashes: np.ndarray) -> np.ndarray:
        """The bit positions each hash sets, shape (probes, len(hashes))."""
        hashes = hashes.astype(np.int64)
        hash1 = hashes.astype(np.int32)  # the low 32 bits
        hash2 = (hashes >> 32).astype(np.int32)
        i = np.arange(1, self.probes + 1, dtype=np.int32)[:, None]
        with np.errstate(over="ignore"):
            combined = hash1[None, :] + i * hash2[None, :]  # wraps as Java's int arithmetic
        combined = np.where(combined < 0, ~combined, combined)
        return combined.astype(np.int64) % self.num_bits

    def add(self, hashes: np.ndarray) -> None:
        positions = self._positions(hashes).ravel()
        marks = np.zeros(self.num_bits, np.bool_)
        marks[positions] = True
        self.bits = self.bits | np.packbits(marks, bitorder="little")

    def may_contain(self, hashes: np.ndarray) -> np.ndarray:
        """Per hash: whether its value may be in the filter (False: surely not)."""
        positions = self._positions(hashes)
        present = (self.bits[positions >> 3] >> (positions & 7).astype(np.uint8)) & 1
        return present.astype(bool).all(axis=0)
