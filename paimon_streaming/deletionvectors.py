"""Deletion vectors: per-data-file bitmaps of deleted row positions, and their index-file codec.

Index file (FORMAT.md §8): a version byte (1), then per data file a record
`size (int32 BE) | magic | bitmap | CRC32 (int32 BE)`. The 32-bit variant uses magic
1581511376 (BE) and a portable 32-bit RoaringBitmap; the 64-bit variant uses magic
1681511377 (LE) and a count-prefixed list of 32-bit bitmaps keyed by the high 32 bits.
`DeletionVectorMeta.length` covers magic+bitmap (32-bit) but the whole record (64-bit).
"""
from __future__ import annotations

import struct
import zlib
from array import array
from typing import Iterable

import numpy as np
from pyroaring import BitMap, BitMap64

from .errors import CorruptFileError, MissingFileError
from .file_cache import ImmutableFileCache
from .fileio import FileIO
from .manifest import DeletionVectorMeta

VERSION = 1
MAGIC32 = 1581511376
MAGIC64 = 1681511377


def positions_of(bitmap: BitMap | BitMap64) -> np.ndarray:
    """Deleted positions as a sorted int64 numpy array."""
    return np.asarray(bitmap.to_array(), dtype=np.int64) if len(bitmap) else np.empty(0, np.int64)


def bitmap_from_positions(positions: Iterable[int] | np.ndarray, bitmap64: bool = False) -> BitMap | BitMap64:
    arr = np.asarray(positions, dtype=np.int64)
    if bitmap64:
        return BitMap64(arr.tolist())
    if arr.size and (arr.max() >= 1 << 31 or arr.min() < 0):
        raise ValueError("32-bit deletion vectors hold positions in [0, 2^31); use deletion-vectors.bitmap64")
    # an array.array takes pyroaring's bulk-add path (a numpy array is added value by value)
    return BitMap(array("I", arr.astype(np.uint32).tobytes()))


def _encode_bitmap64(bitmap: BitMap64) -> bytes:
    positions = positions_of(bitmap)
    highs = (positions >> 32).astype(np.int64)
    count = int(highs.max()) + 1 if positions.size else 0
    out = [struct.pack("<q", count)]
    for key in range(count):
        low = BitMap((positions[highs == key] & 0xFFFFFFFF).astype(np.uint32))
        low.run_optimize()
        out.append(struct.pack("<i", key))
        out.append(low.serialize())
    return b"".join(out)


def _decode_bitmap64(data: bytes) -> BitMap64:
    (count,) = struct.unpack_from("<q", data, 0)
    pos = 8
    result: list[np.ndarray] = []
    for _ in range(count):
        (key,) = struct.unpack_from("<i", data, pos)
        pos += 4
        low = BitMap.deserialize(data[pos:])
        pos += len(low.serialize())
        result.append((np.int64(key) << 32) | np.asarray(low.to_array(), dtype=np.int64))
    return BitMap64(np.concatenate(result).tolist() if result else [])


def encode_record(bitmap: BitMap | BitMap64) -> tuple[bytes, int]:
    """One data file's record (size, magic, bitmap, CRC) and its `length` as the meta records it."""
    if isinstance(bitmap, BitMap64):
        body = struct.pack("<i", MAGIC64) + _encode_bitmap64(bitmap)
        record = struct.pack(">i", len(body)) + body + struct.pack(">I", zlib.crc32(body))
        return record, len(record)
    if type(bitmap) is not BitMap:  # a frozen bitmap cannot be optimized in place
        bitmap = BitMap(bitmap)
    bitmap.run_optimize()  # changes the representation only, not the positions
    body = struct.pack(">i", MAGIC32) + bitmap.serialize()
    return struct.pack(">i", len(body)) + body + struct.pack(">I", zlib.crc32(body)), len(body)


def encode_index_file(vectors: dict[str, BitMap | BitMap64],
                      copied: dict[str, tuple[bytes, DeletionVectorMeta]] | None = None
                      ) -> tuple[bytes, list[DeletionVectorMeta]]:
    """A whole DV index file for one bucket, with the per-file metas for the index manifest.

    `copied` are records taken unchanged from another index file (see `record_bytes`), with
    their old metas: only their offsets change."""
    parts = [bytes([VERSION])]
    metas = []
    offset = 1
    for name, (record, meta) in (copied or {}).items():
        metas.append(DeletionVectorMeta(name, offset, meta.length, meta.cardinality))
        parts.append(record)
        offset += len(record)
    for name, bitmap in vectors.items():
        record, length = encode_record(bitmap)
        metas.append(DeletionVectorMeta(name, offset, length, len(bitmap)))
        parts.append(record)
        offset += len(record)
    return b"".join(parts), metas


# Index files this process wrote or read, by path (file_cache.py): a writer reads each bucket's
# index file of its previous batch back from here.
_INDEX_FILES: ImmutableFileCache[bytes] = ImmutableFileCache(1024, max_weight=64 << 20, weigh=len)


def write_index_file(file_io: FileIO, path: str, data: bytes) -> None:
    file_io.write_bytes(path, data)
    _INDEX_FILES.put(path, data)


def read_index_file(file_io: FileIO, path: str, file_size: int | None = None) -> bytes:
    """The bytes of a deletion-vector index file: MissingFileError when absent, CorruptFileError
    when it is not the `file_size` bytes its index manifest entry records (when given)."""
    cached = _INDEX_FILES.get(path)
    if cached is not None and (file_size is None or len(cached) == file_size):
        return cached
    try:
        data = file_io.read_bytes(path)
    except FileNotFoundError:
        raise MissingFileError(f"deletion vector file {path} is referenced by the index manifest but does not "
                               "exist; `paimon-streaming check` lists every missing file") from None
    if file_size is not None and len(data) != file_size:
        raise CorruptFileError(f"deletion vector file {path} has {len(data)} bytes but its index manifest entry "
                               f"records {file_size} (truncated or replaced)")
    _INDEX_FILES.put(path, data)
    return data


def record_bytes(data: bytes, meta: DeletionVectorMeta, path: str, row_count: int) -> tuple[bytes, DeletionVectorMeta]:
    """One data file's whole record (size, body, CRC) as stored, with its meta, checked as
    `decode_in_range` checks it: copied into a new index file, a damaged record would outlive
    the restore of this one."""
    decode_in_range(data, meta, path, row_count)
    (size,) = struct.unpack_from(">i", data, meta.offset)
    return data[meta.offset: meta.offset + 8 + size], meta


def _checked_body(data: bytes, meta: DeletionVectorMeta, path: str) -> bytes:
    if not data or data[0] != VERSION:
        raise CorruptFileError(f"deletion vector file {path} has unsupported version byte "
                               f"{data[:1].hex() or 'none'}")
    try:
        (size,) = struct.unpack_from(">i", data, meta.offset)
        body = data[meta.offset + 4: meta.offset + 4 + size]
        (crc,) = struct.unpack_from(">I", data, meta.offset + 4 + size)
    except struct.error:
        raise CorruptFileError(f"deletion vector of {meta.data_file_name} in {path} is truncated") from None
    if len(body) != size or zlib.crc32(body) != crc:
        raise CorruptFileError(f"deletion vector of {meta.data_file_name} in {path} fails its CRC32 check")
    return body


def decode_vector(data: bytes, meta: DeletionVectorMeta, path: str) -> BitMap | BitMap64:
    """Read the deletion vector of `meta.data_file_name` from the index file bytes; CRC-checked."""
    body = _checked_body(data, meta, path)
    vector = None
    try:  # a body that passed its CRC, yet is no bitmap: a bad writer, or size and CRC zeroed
        (magic_be,) = struct.unpack_from(">i", body, 0)
        (magic_le,) = struct.unpack_from("<i", body, 0)
        if magic_be == MAGIC32:
            vector = BitMap.deserialize(body[4:])
        elif magic_le == MAGIC64:
            vector = _decode_bitmap64(body[4:])
    except (ValueError, struct.error) as exc:
        raise CorruptFileError(f"deletion vector of {meta.data_file_name} in {path} cannot be decoded: "
                               f"{exc}") from exc
    if vector is None:
        raise CorruptFileError(f"deletion vector of {meta.data_file_name} in {path} has an unknown magic number")
    if meta.cardinality is not None and len(vector) != meta.cardinality:
        # a valid vector, not the one the index manifest describes: another file in this one's place
        raise CorruptFileError(f"deletion vector of {meta.data_file_name} in {path} holds {len(vector)} positions "
                               f"but its index manifest entry records {meta.cardinality} (a replaced file)")
    return vector


def decode_in_range(data: bytes, meta: DeletionVectorMeta, path: str, row_count: int) -> BitMap | BitMap64:
    """`decode_vector`, refusing a vector that marks a position beyond its data file's
    `row_count`: a CRC-valid bitmap that belongs elsewhere, which would hide the wrong rows
    (and, merged into a new index file, outlive the restore of this one)."""
    vector = decode_vector(data, meta, path)
    if len(vector) and vector.max() >= row_count:
        raise CorruptFileError(f"deletion vector of {meta.data_file_name} in {path} marks position "
                               f"{vector.max()}, beyond the file's {row_count} rows")
    return vector
