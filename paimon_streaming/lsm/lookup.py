"""Lookup: at which row positions of older data files do a batch's keys occur?

Data files never change, so each file's key index is built once and cached by file name in a
byte-bounded LRU (evicted indexes are rebuilt from the file's key columns, which are stored
first and read alone). Lookups cost O(batch · log file), not O(file):

* a single integer-like key (INT, BIGINT, DATE, ...): the file's keys are already sorted in
  Paimon's key order, so the index is the key column itself and `searchsorted` finds matches;
* any other key: the index holds a 64-bit hash of each key's BinaryRow (two independent
  Murmur3 seeds) sorted with its positions; hash matches are confirmed by comparing the
  BinaryRow bytes, so a collision can never mark a wrong row.

Files whose [min key, max key] range cannot hold any batch key are skipped before any I/O.
"""
from __future__ import annotations

from collections import OrderedDict
from dataclasses import dataclass
from threading import Lock
from typing import Sequence

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from ..binary_row import encode_rows, hash_rows
from ..types import DataType

_INT_ROOTS = {"TINYINT", "SMALLINT", "INT", "BIGINT", "DATE"}
_SECOND_SEED = 0x2545F491


def _is_int_key(types: Sequence[DataType]) -> bool:
    return len(types) == 1 and types[0].root in _INT_ROOTS


def _hash64(encoded: pa.Array) -> np.ndarray:
    h1 = hash_rows(encoded).astype(np.int64) & 0xFFFFFFFF
    h2 = hash_rows(encoded, seed=_SECOND_SEED).astype(np.int64) & 0xFFFFFFFF
    return ((h1 << 32) | h2).view(np.uint64)


@dataclass
class BatchKeys:
    """A batch's (distinct) keys, prepared once for probing many files."""
    types: tuple[DataType, ...]
    ints: np.ndarray | None = None          # sorted int64 keys (integer-like single key)
    hashes: np.ndarray | None = None        # sorted uint64 hashes (other keys)
    encoded: pa.Array | None = None         # BinaryRows, in `hashes` order

    @staticmethod
    def of(keys: pa.Table, types: Sequence[DataType]) -> "BatchKeys":
        types = tuple(types)
        if _is_int_key(types):
            col = keys.column(0).combine_chunks()
            if pa.types.is_date(col.type):
                col = col.cast(pa.int32())
            return BatchKeys(types, ints=_sorted_distinct(col.to_numpy(zero_copy_only=False).astype(np.int64)))
        encoded = encode_rows([keys.column(i) for i in range(keys.num_columns)], types)
        hashes = _hash64(encoded)
        order = np.argsort(hashes, kind="stable")
        return BatchKeys(types, hashes=hashes[order], encoded=encoded.take(pa.array(order)))

    def __len__(self) -> int:
        return len(self.ints) if self.ints is not None else len(self.hashes)


def _sorted_distinct(values: np.ndarray) -> np.ndarray:
    """np.unique without its hashing path: batches arrive sorted by key, so this is one pass."""
    if len(values) > 1 and not (values[1:] >= values[:-1]).all():
        values = np.sort(values)
    return values[np.r_[True, values[1:] != values[:-1]]] if len(values) else values


class KeyIndex:
    """The key index of one data file."""

    def __init__(self, keys: pa.Table, types: Sequence[DataType]):
        self.num_rows = keys.num_rows
        if _is_int_key(types):
            col = keys.column(0).combine_chunks()
            if pa.types.is_date(col.type):
                col = col.cast(pa.int32())
            self.ints = col.to_numpy(zero_copy_only=False).astype(np.int64)
            self.hashes = self.positions = self.encoded = None
            self.nbytes = self.ints.nbytes
        else:
            self.ints = None
            self.encoded = encode_rows([keys.column(i) for i in range(keys.num_columns)], list(types))
            hashes = _hash64(self.encoded)
            self.positions = np.argsort(hashes, kind="stable")
            self.hashes = hashes[self.positions]
            self.nbytes = self.hashes.nbytes + self.positions.nbytes + self.encoded.nbytes

    def positions_of(self, batch: BatchKeys) -> np.ndarray:
        """Sorted positions of this file's rows whose key is one of the batch's keys."""
        if self.ints is not None:
            idx = np.searchsorted(self.ints, batch.ints)
            ok = idx < self.num_rows
            idx, keys = idx[ok], batch.ints[ok]
            hit = self.ints[idx] == keys
            # a file holds each key at most once at level > 0; level-0 files may repeat keys
            first = idx[hit]
            return _expand_runs(self.ints, first, keys[hit])
        lo = np.searchsorted(self.hashes, batch.hashes, side="left")
        hi = np.searchsorted(self.hashes, batch.hashes, side="right")
        counts = hi - lo
        if not counts.any():
            return np.empty(0, np.int64)
        batch_idx = np.repeat(np.arange(len(batch.hashes)), counts)
        slots = _ranges(lo, hi)
        candidates = self.positions[slots]
        same = pc.equal(self.encoded.take(pa.array(candidates)), batch.encoded.take(pa.array(batch_idx)))
        return np.unique(candidates[same.to_numpy(zero_copy_only=False)])


def _ranges(lo: np.ndarray, hi: np.ndarray) -> np.ndarray:
    """Concatenation of arange(lo[i], hi[i]) for all i, without a Python loop."""
    counts = hi - lo
    total = int(counts.sum())
    starts = np.repeat(lo - np.cumsum(counts) + counts, counts)
    return (starts + np.arange(total)).astype(np.int64)


def _expand_runs(sorted_keys: np.ndarray, first: np.ndarray, keys: np.ndarray) -> np.ndarray:
    """Positions of every occurrence of each found key (a run of equal keys starts at `first`)."""
    if not len(first):
        return np.empty(0, np.int64)
    return _ranges(first, np.searchsorted(sorted_keys, keys, side="right"))


class KeyIndexCache:
    """Byte-bounded LRU of key indexes by data file name (names are unique and immutable)."""

    def __init__(self, max_bytes: int = 512 << 20):
        self.max_bytes = max_bytes
        self._items: OrderedDict[str, KeyIndex] = OrderedDict()
        self._bytes = 0
        self._lock = Lock()

    def get(self, name: str, load) -> KeyIndex:
        with self._lock:
            index = self._items.get(name)
            if index is not None:
                self._items.move_to_end(name)
                return index
        index = load()
        with self._lock:
            if name not in self._items:
                self._items[name] = index
                self._bytes += index.nbytes
                while self._bytes > self.max_bytes and len(self._items) > 1:
                    _, old = self._items.popitem(last=False)
                    self._bytes -= old.nbytes
        return index


# One cache per process: on Spark executors it lives as long as the Python worker is reused.
KEY_INDEXES = KeyIndexCache()
