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

from .index_values import FLOATS, INTEGERS, TIMESTAMPS, java_numbers, non_null
from .types import DataType
from .xxhash64 import xxh64

DEFAULT_ITEMS = 1_000_000
DEFAULT_FPP = 0.1
_MAX_PROBES = 64  # Java's writer needs an fpp below 1e-19 to reach this

_BYTES = ("CHAR", "VARCHAR", "BINARY", "VARBINARY")
HASHABLE = INTEGERS + _BYTES + TIMESTAMPS + FLOATS


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
    FastHash computes them; callers check `t.root in HASHABLE`."""
    values = non_null(values)
    if t.root in _BYTES:
        return xxh64(values).view(np.int64)
    return thomas_wang(java_numbers(values, t))


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
