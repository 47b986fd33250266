"""XXH64 (seed 0) of every value of a string or binary Arrow array, vectorized with numpy.

Paimon's bloom-filter file index hashes string and binary values with XXH64 (Java's
zero-allocation-hashing `LongHashFunction.xx()`). The `xxhash` package hashes one value per
call; this computes all of an array's hashes at once, stepping through the values' bytes
stripe by stripe with the values still that long (the work is the bytes, not a loop over rows).
"""
from __future__ import annotations

import numpy as np
import pyarrow as pa

_P1 = np.uint64(11400714785074694791)
_P2 = np.uint64(14029467366897019727)
_P3 = np.uint64(1609587929392839161)
_P4 = np.uint64(9650029242287828579)
_P5 = np.uint64(2870177450012600261)


def _rotl(x: np.ndarray, r: int) -> np.ndarray:
    return (x << np.uint64(r)) | (x >> np.uint64(64 - r))


def _round(acc: np.ndarray, lane: np.ndarray) -> np.ndarray:
    return _rotl(acc + lane * _P2, 31) * _P1


def _merge_round(acc: np.ndarray, lane: np.ndarray) -> np.ndarray:
    return (acc ^ _round(np.uint64(0), lane)) * _P1 + _P4


def _word_views(data: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Views of `data` with a little-endian 8-byte and 4-byte word starting at every byte."""
    return (np.ndarray((data.size - 7,), "<u8", data, strides=(1,)),
            np.ndarray((data.size - 3,), "<u4", data, strides=(1,)))


def _bytes_of(array: pa.Array) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """The value bytes of a string/binary array (padded with 32 zero bytes, so words read past
    a value's end stay in bounds), each value's start in them and its length."""
    if pa.types.is_large_string(array.type) or pa.types.is_large_binary(array.type):
        offsets_type = np.int64
    else:
        array = array if pa.types.is_binary(array.type) else array.cast(pa.binary())
        offsets_type = np.int32
    buffers = array.buffers()
    n = len(array)
    offsets = np.frombuffer(buffers[1], offsets_type, n + 1, array.offset * np.dtype(offsets_type).itemsize)
    base, end = int(offsets[0]), int(offsets[-1])
    raw = np.frombuffer(buffers[2], np.uint8, end - base, base) if end > base else np.zeros(0, np.uint8)
    data = np.concatenate([raw, np.zeros(32, np.uint8)])
    return data, offsets[:-1].astype(np.int64) - base, np.diff(offsets).astype(np.int64)


def xxh64(array: pa.Array) -> np.ndarray:
    """XXH64 with seed 0 of each value of a string/binary array without nulls, as uint64."""
    if array.null_count:
        raise ValueError("xxh64 hashes values, not nulls: drop the nulls first")
    data, at, length = _bytes_of(array)
    words8, words4 = _word_views(data)
    with np.errstate(over="ignore"):
        h = np.full(len(length), _P5, np.uint64)
        stripes = length // 32
        long_ones = np.flatnonzero(stripes)
        if long_ones.size:
            h[long_ones] = _stripes(words8, at[long_ones], stripes[long_ones])
        h += length.astype(np.uint64)
        done = at + 32 * stripes  # where each value's tail starts
        tail = length - 32 * stripes

        def step(has: np.ndarray, new) -> None:
            """h = new(rows) for the rows that `has` this step (all of them without indexing)."""
            rows = slice(None) if has.all() else np.flatnonzero(has)
            if isinstance(rows, slice) or rows.size:
                h[rows] = new(rows)

        for j in range(3):  # the tail's 8-byte words
            step(tail >= 8 * (j + 1),
                 lambda r: _rotl(h[r] ^ _round(np.uint64(0), words8[done[r] + 8 * j]), 27) * _P1 + _P4)
        done += 8 * (tail // 8)
        has_word = tail % 8 >= 4  # then one 4-byte word
        step(has_word, lambda r: _rotl(h[r] ^ (words4[done[r]].astype(np.uint64) * _P1), 23) * _P2 + _P3)
        done += 4 * has_word
        for j in range(3):  # then single bytes
            step(tail % 4 > j, lambda r: _rotl(h[r] ^ (data[done[r] + j].astype(np.uint64) * _P5), 11) * _P1)
        h ^= h >> np.uint64(33)
        h *= _P2
        h ^= h >> np.uint64(29)
        h *= _P3
        h ^= h >> np.uint64(32)
    return h


def _stripes(words8: np.ndarray, at: np.ndarray, stripes: np.ndarray) -> np.ndarray:
    """The accumulated hash of the 32-byte stripes of values with `stripes` of them (>= 1).

    The values are taken longest first, so the ones with a stripe `s` are a prefix."""
    order = np.argsort(-stripes, kind="stable")
    at, stripes = at[order], stripes[order]
    seeds = np.array([_P1 + _P2, _P2, 0, np.uint64(0) - _P1], np.uint64)  # seed 0, wrapping as Java's longs
    lanes = np.repeat(seeds[:, None], at.size, axis=1)  # lane-major: each lane's row contiguous
    with_stripe = np.searchsorted(-stripes, -np.arange(int(stripes[0])), side="left")
    lane_offsets = np.arange(0, 32, 8)[:, None]
    for s, k in enumerate(with_stripe):
        lanes[:, :k] = _round(lanes[:, :k], words8[lane_offsets + (at[:k] + 32 * s)])
    v1, v2, v3, v4 = lanes
    h = _rotl(v1, 1) + _rotl(v2, 7) + _rotl(v3, 12) + _rotl(v4, 18)
    for v in (v1, v2, v3, v4):
        h = _merge_round(h, v)
    out = np.empty_like(h)
    out[order] = h
    return out
