"""Roaring bitmaps in their portable serialized format (the RoaringFormatSpec, which Java's
RoaringBitmap and CRoaring share), as file indexes store them: many bitmaps built at once with
numpy, and the length of one inside a larger buffer (the format carries no length of its own)."""
from __future__ import annotations

import struct

import numpy as np
import pyroaring

_COOKIE = 12346            # no run containers; offsets follow the container descriptions
_COOKIE_WITH_RUNS = 12347  # its high 16 bits: the container count - 1
_ARRAY_MAX = 4096          # a container of more values is a bitset
_BITSET_BYTES = 8192
_MAX_CONTAINERS = 65536    # one per 16-bit key
_EMPTY = struct.pack("<II", _COOKIE, 0)


def roaring_many(rows: np.ndarray, owner: np.ndarray, count: int) -> tuple[bytes, np.ndarray]:
    """`count` Roaring bitmaps in the portable format, one after the other, and each one's size:
    bitmap `owner[i]` holds `rows[i]` (rows ascending within a bitmap, bitmaps in order)."""
    if len(rows) == 0:
        return _EMPTY * count, np.full(count, len(_EMPTY), np.int64)
    high = (rows >> 16).astype(np.int64)
    low = (rows & 0xFFFF).astype(np.uint16)
    starts = np.flatnonzero(np.concatenate([[True], (owner[1:] != owner[:-1]) | (high[1:] != high[:-1])]))
    cards = np.diff(np.append(starts, len(rows)))
    container = np.repeat(np.arange(len(starts)), cards)
    bitset = cards > _ARRAY_MAX
    in_array = ~bitset[container]
    rank = np.cumsum(bitset) - 1
    marks = np.zeros((int(bitset.sum()), 1 << 16), np.bool_)
    marks[rank[container[~in_array]], low[~in_array]] = True
    return _assemble(count, owner[starts], high[starts], cards, low[in_array], marks)


def roaring_of_masks(rows: np.ndarray, masks: np.ndarray) -> tuple[bytes, np.ndarray]:
    """Bitmap j of `masks` (k x len(rows) booleans) holds the `rows` (ascending) it marks: the
    same format as roaring_many, built from the masks without listing every marked row (bit
    slices, whose bitmaps hold half the rows each)."""
    k = masks.shape[0]
    if len(rows) == 0:
        return _EMPTY * k, np.full(k, len(_EMPTY), np.int64)
    if int(rows[-1]) < 1 << 16:  # one chunk (most files): the masks as they are
        cards = np.count_nonzero(masks, axis=1)
        present = np.flatnonzero(cards)
        cards = cards[present]
        bitset = cards > _ARRAY_MAX
        _, at = np.nonzero(masks[present[~bitset]])
        marks = np.zeros((int(bitset.sum()), 1 << 16), np.bool_)
        if int(rows[-1]) == len(rows) - 1:
            marks[:, :len(rows)] = masks[present[bitset]]
        else:
            marks[:, rows] = masks[present[bitset]]
        return _assemble(k, present, np.zeros(len(present), np.int64), cards, rows[at].astype(np.uint16), marks)
    chunks = int(rows[-1] >> 16) + 1
    dense = np.zeros((k, chunks << 16), np.bool_)
    if int(rows[-1]) == len(rows) - 1:  # every row (ascending, distinct): a copy, not a scatter
        dense[:, :len(rows)] = masks
    else:
        dense[:, rows] = masks
    dense = dense.reshape(k * chunks, 1 << 16)
    cards = np.count_nonzero(dense, axis=1)
    present = np.flatnonzero(cards)
    cards = cards[present]
    bitset = cards > _ARRAY_MAX
    in_arrays, lows = np.nonzero(dense[present[~bitset]])
    return _assemble(k, present // chunks, present % chunks, cards, lows.astype(np.uint16), dense[present[bitset]])


def _assemble(count: int, owner: np.ndarray, key: np.ndarray, cards: np.ndarray, array_lows: np.ndarray,
              bitset_marks: np.ndarray) -> tuple[bytes, np.ndarray]:
    """The portable format of `count` bitmaps from their containers, in order: each one's
    bitmap (`owner`), key (its 65,536-row chunk) and cardinality; the array containers' values
    one after the other; a row of 65,536 marks per bitset container (cardinality > 4,096)."""
    bitset = cards > _ARRAY_MAX
    sizes = np.where(bitset, _BITSET_BYTES, 2 * cards)
    per_bitmap = np.bincount(owner, minlength=count)
    header = 8 + 8 * per_bitmap
    totals = header + np.bincount(owner, weights=sizes, minlength=count).astype(np.int64)
    bitmap_start = np.cumsum(totals) - totals
    first_container = np.cumsum(per_bitmap) - per_bitmap
    index_in_bitmap = np.arange(len(owner)) - first_container[owner]
    sizes_before = np.cumsum(sizes) - sizes
    body_offset = header[owner] + sizes_before - sizes_before[first_container[owner]]

    out = np.zeros(int(totals.sum()), np.uint8)
    _put(out, bitmap_start, np.full(count, _COOKIE), "<u4")
    _put(out, bitmap_start + 4, per_bitmap, "<u4")
    descriptive = bitmap_start[owner] + 8 + 4 * index_in_bitmap
    _put(out, descriptive, key, "<u2")
    _put(out, descriptive + 2, cards - 1, "<u2")
    _put(out, bitmap_start[owner] + 8 + 4 * per_bitmap[owner] + 4 * index_in_bitmap, body_offset, "<u4")
    body_start = bitmap_start[owner] + body_offset
    array_cards = cards[~bitset]
    array_of = np.repeat(np.arange(len(array_cards)), array_cards)
    position = np.arange(len(array_lows)) - (np.cumsum(array_cards) - array_cards)[array_of]
    _put(out, body_start[~bitset][array_of] + 2 * position, array_lows, "<u2")
    if len(bitset_marks):  # each a 65,536-bit set, least significant bit first
        _put(out, body_start[bitset], np.packbits(bitset_marks, axis=1, bitorder="little"), "u1")
    return out.tobytes(), totals


def _put(out: np.ndarray, at: np.ndarray, values: np.ndarray, dtype: str) -> None:
    """Write `values` as `dtype` at byte positions `at` of `out`."""
    if len(at) == 0:
        return
    raw = np.asarray(values).astype(dtype).view(np.uint8).reshape(len(at), -1)
    out[np.asarray(at, np.int64)[:, None] + np.arange(raw.shape[1])] = raw


def roaring_at(data: bytes, at: int) -> tuple[pyroaring.BitMap, int]:
    """The bitmap starting at byte `at` of `data`, and the byte after it; ValueError when it is
    not one."""
    size = _size(data, at)
    try:
        return pyroaring.BitMap.deserialize(data[at:at + size]), at + size
    except IndexError as exc:  # pyroaring's read past a damaged container's bytes
        raise ValueError(f"a damaged Roaring bitmap ({exc})") from None


def _size(data: bytes, at: int) -> int:
    """The length of the portable-format Roaring bitmap at byte `at` (its spec: a cookie, the
    container count, each container's key and cardinality, offsets, then the containers)."""
    (cookie,) = struct.unpack_from("<I", data, at)
    if cookie & 0xFFFF == _COOKIE_WITH_RUNS:  # with run containers
        count = (cookie >> 16) + 1
        runs = data[at + 4:at + 4 + (count + 7) // 8]
        if len(runs) != (count + 7) // 8:
            raise ValueError("a Roaring bitmap past the end of its bytes")
        header = 4 + len(runs)
        is_run = [(runs[i // 8] >> (i % 8)) & 1 for i in range(count)]
        has_offsets = count >= 4
    elif cookie == _COOKIE:
        (count,) = struct.unpack_from("<I", data, at + 4)
        if count > _MAX_CONTAINERS:  # (a damaged count would allocate without end)
            raise ValueError(f"a Roaring bitmap of {count} containers, more than 16-bit keys have")
        header, is_run, has_offsets = 8, [0] * count, True
    else:
        raise ValueError(f"not a Roaring bitmap (cookie {cookie})")
    cards = np.frombuffer(data, "<u2", 2 * count, at + header).reshape(-1, 2)[:, 1].astype(np.int64) + 1
    end = at + header + 4 * count + (4 * count if has_offsets else 0)
    for card, run in zip(cards.tolist(), is_run):
        if run:
            (n_runs,) = struct.unpack_from("<H", data, end)
            end += 2 + 4 * n_runs
        else:
            end += _BITSET_BYTES if card > _ARRAY_MAX else 2 * card
    if end > len(data):
        raise ValueError("a Roaring bitmap past the end of its bytes")
    return end - at
