"""Paimon's range-bitmap file index (`file-index.range-bitmap.columns`, Paimon 1.2+): per data
file and column, the sorted dictionary of the column's distinct values and each row's code (its
value's rank in the dictionary) as a bit-sliced index, so that a range of values is a range of
codes. Written as Java's RangeBitmapFileIndex writes it; read here to skip files for equality
and IN filters (by the dictionary) and range filters (by the smallest and largest value, which
is what prunes a table without statistics); Java's readers also use the codes to filter rows,
so the row numbers are those of the file.

Layout (big-endian; Java's RangeBitmap, ChunkedDictionary, Fixed/VariableLengthChunk and
rangebitmap.BitSliceIndexBitmap). Each of the three parts is a 4-byte header length, its header,
then its body:
- the index: header {version 1, row count, distinct non-null values, the smallest and the
  largest value (absent when there are none), the dictionary's length}; body: the dictionary,
  then the codes;
- the dictionary: header {version 1, chunk count, the chunk offsets' length, the chunk headers'
  length}; body: each chunk header's offset, the chunk headers, the chunks' further keys. Values
  fill chunks in order, at most `chunk-size` bytes of further keys each (16 KiB; booleans,
  TINYINT and SMALLINT 0: a chunk per value). A chunk header: version 1, its first value, that
  value's code, where its further keys start, their count, then for fixed-width values their
  bytes' length and the width, for strings the length of their offsets (4 bytes each, before
  the keys) and of the keys;
- the codes: header {version 1, slice count (the bit length of the largest code, at least 1; 64
  when no row has a value), the existence bitmap's length, the slice directory's length, each
  slice's offset and length}; body: the Roaring bitmap of the rows holding a value, then per
  bit of the codes the rows whose code has it set.
Values as index_values.py gives them: strings a 4-byte length and their UTF-8 bytes, floats their
bits (compared by Float.compare), DECIMALs of up to 18 digits unscaled, timestamps of precision
up to 6 in milliseconds (up to 3) or microseconds; Java refuses wider DECIMALs and timestamps.
"""
from __future__ import annotations

import decimal
import struct
from typing import Any

import numpy as np
import pyarrow as pa

from .index_values import (FLOATS, INTEGERS, KEY_WIDTH, STRINGS, TIMESTAMPS, float_total_order, plain,
                           key_at, sorted_distinct, string_entries, valid_rows)
from .roaring import roaring_at, roaring_many, roaring_of_masks
from .types import DataType, to_arrow

VERSION = 1
DEFAULT_CHUNK_SIZE = 16 * 1024
_UNCHUNKED = ("BOOLEAN", "TINYINT", "SMALLINT")  # Java's default chunk size for these: 0 bytes
_EMPTY_SLICES = 64  # Java's slice count when no row has a value (the bit length of code -1)


def indexable(t: DataType) -> bool:
    """Whether Java's range-bitmap index takes a column of type `t`."""
    if t.root == "DECIMAL":
        return t.precision <= 18
    if t.root in TIMESTAMPS:
        return t.precision <= 6
    return t.root in INTEGERS + FLOATS + STRINGS + ("BOOLEAN",)


def default_chunk_size(t: DataType) -> int:
    return 0 if t.root in _UNCHUNKED else DEFAULT_CHUNK_SIZE


# ---- writing ------------------------------------------------------------------------------
def build(values: pa.Array | pa.ChunkedArray, t: DataType, chunk_size: int | None = None) -> bytes:
    """The range-bitmap index of a file's column `values` (all rows, in file order)."""
    values = plain(values)
    rows, non_null_values = valid_rows(values)
    distinct, codes = sorted_distinct(non_null_values, t)
    keys, starts, sizes = _serialized(distinct, t)
    dictionary = _dictionary(keys, starts, sizes, t, default_chunk_size(t) if chunk_size is None else chunk_size)
    header = struct.pack(">bii", VERSION, len(values), len(distinct))
    if len(distinct):
        header += keys[starts[0]:starts[0] + sizes[0]] + keys[starts[-1]:starts[-1] + sizes[-1]]
    header += struct.pack(">i", len(dictionary))
    return struct.pack(">i", len(header)) + header + dictionary + _codes(rows, codes, len(distinct))


def _serialized(distinct: pa.Array | np.ndarray, t: DataType) -> tuple[bytes, np.ndarray, np.ndarray]:
    """The values serialized one after the other, each one's start and size."""
    if t.root in STRINGS:
        return string_entries(distinct, np.zeros((len(distinct), 0), np.int64))
    width = np.dtype(KEY_WIDTH[t.root]).itemsize
    n = len(distinct)
    return (np.asarray(distinct).astype(KEY_WIDTH[t.root]).tobytes(), np.arange(n, dtype=np.int64) * width,
            np.full(n, width, np.int64))


def _dictionary(keys: bytes, starts: np.ndarray, sizes: np.ndarray, t: DataType, chunk_size: int) -> bytes:
    if t.root in STRINGS:
        offsets, headers, areas = _variable_chunks(keys, starts, sizes, chunk_size)
    else:
        offsets, headers, areas = _fixed_chunks(keys, len(starts), t, chunk_size)
    head = struct.pack(">biii", VERSION, len(offsets), 4 * len(offsets), len(headers))
    return struct.pack(">i", len(head)) + head + offsets.astype(">i4").tobytes() + headers + areas


def _fixed_chunks(keys: bytes, n: int, t: DataType, chunk_size: int) -> tuple[np.ndarray, bytes, bytes]:
    """Chunks of fixed-width values (a first value and up to chunk_size // width further keys):
    each header's offset, the headers, the further keys."""
    width = np.dtype(KEY_WIDTH[t.root]).itemsize
    values = np.frombuffer(keys, KEY_WIDTH[t.root], n)
    firsts = np.arange(0, n, 1 + chunk_size // width)
    further = np.diff(np.append(firsts, n)) - 1
    header = np.zeros(len(firsts), _fixed_header_dtype(t))
    header["version"] = VERSION
    header["key"] = values[firsts]
    header["code"] = firsts
    header["offset"] = np.cumsum(further * width) - further * width
    header["size"] = further
    header["keys_length"] = further * width
    header["width"] = width
    is_further = np.ones(n, np.bool_)
    is_further[firsts] = False
    return np.arange(len(firsts)) * header.dtype.itemsize, header.tobytes(), values[is_further].tobytes()


def _fixed_header_dtype(t: DataType) -> np.dtype:
    return np.dtype([("version", "i1"), ("key", KEY_WIDTH[t.root]), ("code", ">i4"), ("offset", ">i4"),
                     ("size", ">i4"), ("keys_length", ">i4"), ("width", ">i4")])


def _variable_chunks(keys: bytes, starts: np.ndarray, sizes: np.ndarray, chunk_size: int) \
        -> tuple[np.ndarray, bytes, bytes]:
    """Chunks of strings, filled as Java's writer fills them (a first value, then further keys
    while their bytes fit in chunk_size and so do their 4-byte offsets): each header's offset,
    the headers, the chunks' offsets and keys."""
    n = len(starts)
    ends = starts + sizes
    headers, areas, at, first = [], [], 0, 0
    while first < n:
        begin = first + 1
        end = n if begin >= n else int(np.searchsorted(ends, starts[begin] + chunk_size, side="right"))
        end = max(begin, min(end, begin + chunk_size // 4))
        offsets = (starts[begin:end] - (starts[begin] if end > begin else 0)).astype(">i4").tobytes()
        further = keys[starts[begin]:ends[end - 1]] if end > begin else b""
        headers.append(struct.pack(">b", VERSION) + keys[starts[first]:ends[first]]
                       + struct.pack(">iiiii", first, at, end - begin, len(offsets), len(further)))
        areas.append(offsets + further)
        at += len(offsets) + len(further)
        first = end
    lengths = np.array([len(h) for h in headers], np.int64)
    return np.cumsum(lengths) - lengths, b"".join(headers), b"".join(areas)


def _codes(rows: np.ndarray, codes: np.ndarray, cardinality: int) -> bytes:
    """The bit-sliced index of each row's code."""
    slices = max(int(cardinality - 1).bit_length(), 1) if cardinality else _EMPTY_SLICES
    code_bytes = np.ascontiguousarray(codes.astype("<u4").view(np.uint8).reshape(-1, 4).T)  # byte j of each code
    bits = np.zeros((slices, len(codes)), np.bool_)  # row i: bit i of each code (codes < 2^31)
    bits[:min(slices, 32)] = np.unpackbits(code_bytes, axis=0, bitorder="little")[:slices].view(np.bool_)
    ebm, _ = roaring_many(rows, np.zeros(len(rows), np.int64), 1)
    body, lengths = roaring_of_masks(rows, bits)
    directory = np.stack([np.cumsum(lengths) - lengths, lengths], axis=1).astype(">i4")
    header = struct.pack(">bbii", VERSION, slices, len(ebm), directory.nbytes) + directory.tobytes()
    return struct.pack(">i", len(header)) + header + ebm + body


# ---- reading ------------------------------------------------------------------------------
class RangeBitmapIndex:
    """A parsed range-bitmap index: whether values occur in its file, and (for `check`) a full
    structural verification. ValueError (or struct.error) when the bytes are not one (callers
    name the file)."""

    def __init__(self, data: bytes, t: DataType):
        self.data, self.type = data, t
        (length,) = struct.unpack_from(">i", data, 0)
        version, self.rows, self.cardinality = struct.unpack_from(">bii", data, 4)
        if version != VERSION or self.rows < 0 or not 0 <= self.cardinality <= self.rows:
            raise ValueError(f"a range-bitmap index of version {version}, {self.cardinality} values over "
                             f"{self.rows} rows")
        at = 13
        self.min = self.max = None
        if self.cardinality:
            self.min, at = key_at(self.data, at, self.type)
            self.max, at = key_at(self.data, at, self.type)
        (dictionary_length,) = struct.unpack_from(">i", data, at)
        dictionary = 4 + length
        if at + 4 != dictionary or dictionary_length < 0 or dictionary + dictionary_length > len(data):
            raise ValueError(f"a header of {length} bytes and a dictionary of {dictionary_length} in {len(data)}")
        self.codes_start = dictionary + dictionary_length
        (head,) = struct.unpack_from(">i", data, dictionary)
        version, self.chunks, offsets_length, headers_length = struct.unpack_from(">biii", data, dictionary + 4)
        if version != VERSION or head != 13 or offsets_length != 4 * self.chunks or headers_length < 0:
            raise ValueError(f"a dictionary of version {version}, {self.chunks} chunks, {offsets_length} "
                             "bytes of offsets")
        self.offsets_start = dictionary + 4 + head
        self.headers_start = self.offsets_start + offsets_length
        self.keys_start = self.headers_start + headers_length
        if self.keys_start > self.codes_start:
            raise ValueError("the chunk headers run past the dictionary")

    def bounds(self) -> tuple[Any, Any] | None:
        """The smallest and largest value as Python values of the column's type (as the files'
        statistics give them), or None when there are none or they do not convert."""
        if self.cardinality == 0:
            return None
        if self.type.root in STRINGS:
            return self.min.decode("utf-8", "replace"), self.max.decode("utf-8", "replace")
        if self.type.root == "DECIMAL":
            return tuple(decimal.Decimal(k).scaleb(-self.type.scale) for k in (self.min, self.max))
        raw = pa.array([self.min, self.max], pa.int64())
        if self.type.root in TIMESTAMPS:
            raw = raw.cast(pa.timestamp("ms" if self.type.precision <= 3 else "us"))
        elif self.type.root == "TIME":
            raw = raw.cast(pa.int32()).cast(pa.time32("ms"))
        elif self.type.root == "DATE":
            raw = raw.cast(pa.int32()).cast(pa.date32())
        try:
            low, high = raw.cast(to_arrow(self.type)).to_pylist()
        except (pa.ArrowInvalid, pa.ArrowNotImplementedError):
            return None
        return low, high

    def may_contain(self, literals: np.ndarray | list[bytes]) -> bool:
        """Whether any of `literals` (index keys: Java numbers, or UTF-8 bytes) occurs in the
        file. Strings are searched as their serialized form in the dictionary's bytes (a match
        elsewhere only keeps the file); numbers are compared with every value."""
        if self.cardinality == 0:
            return False
        if self.type.root in STRINGS:
            return any(self.data.find(struct.pack(">i", len(v)) + v, self.headers_start, self.codes_start) >= 0
                       for v in literals)
        return bool(np.isin(np.asarray(literals), self.keys()).any())

    def chunk_heads(self) -> tuple[np.ndarray | list[bytes], np.ndarray, np.ndarray, np.ndarray]:
        """The chunks' first values, their codes, where their further keys start and their
        counts."""
        starts = np.frombuffer(self.data, ">i4", self.chunks, self.offsets_start).astype(np.int64)
        if self.type.root not in STRINGS:
            dtype = _fixed_header_dtype(self.type)
            if self.keys_start - self.headers_start != self.chunks * dtype.itemsize:
                raise ValueError(f"{self.keys_start - self.headers_start} bytes of headers for {self.chunks} chunks")
            heads = np.frombuffer(self.data, dtype, self.chunks, self.headers_start)
            width = dtype["key"].itemsize
            if ((heads["version"] != VERSION).any() or (heads["size"] < 0).any() or (heads["width"] != width).any()
                    or (heads["keys_length"] != heads["size"] * width).any()
                    or (starts != np.arange(self.chunks) * dtype.itemsize).any()):
                raise ValueError("a chunk header out of shape")
            return (heads["key"].astype(np.int64), heads["code"].astype(np.int64), heads["offset"].astype(np.int64),
                    heads["size"].astype(np.int64))
        keys, numbers, at = [], [], self.headers_start
        for i in range(self.chunks):
            if self.headers_start + starts[i] != at:
                raise ValueError(f"chunk {i} at header offset {starts[i]}, expected {at - self.headers_start}")
            (version,) = struct.unpack_from(">b", self.data, at)
            key, at = key_at(self.data, at + 1, self.type)
            code, offset, size, offsets_length, _ = struct.unpack_from(">iiiii", self.data, at)
            at += 20
            if version != VERSION or size < 0 or offsets_length != 4 * size:
                raise ValueError(f"chunk {i} of version {version}, {size} further keys")
            keys.append(key)
            numbers.append((code, offset, size))
        if at != self.keys_start:
            raise ValueError("the chunk headers do not fill their part")
        code, offset, size = np.array(numbers, np.int64).reshape(-1, 3).T
        return keys, code, offset, size

    def keys(self) -> np.ndarray | list[bytes]:
        """Every value of the dictionary, in order."""
        firsts, _, offsets, sizes = self.chunk_heads()
        if self.type.root not in STRINGS:
            dtype = np.dtype(KEY_WIDTH[self.type.root])
            further = np.frombuffer(self.data, dtype, (self.codes_start - self.keys_start) // dtype.itemsize,
                                    self.keys_start).astype(np.int64)
            if len(further) != int(sizes.sum()):
                raise ValueError(f"{len(further)} further keys in the dictionary, its chunks say {int(sizes.sum())}")
            return np.insert(further, np.cumsum(sizes) - sizes, firsts)
        out: list[bytes] = []
        for first, offset, size in zip(firsts, offsets.tolist(), sizes.tolist()):
            out.append(first)
            base = self.keys_start + offset
            for start in np.frombuffer(self.data, ">i4", size, base).tolist():
                out.append(key_at(self.data, base + 4 * size + start, self.type)[0])
        return out

    def row_codes(self) -> tuple[np.ndarray, np.ndarray]:
        """The rows holding a value (ascending) and each one's code."""
        (length,) = struct.unpack_from(">i", self.data, self.codes_start)
        version, slices, ebm_length, directory_length = struct.unpack_from(">bbii", self.data, self.codes_start + 4)
        if version != VERSION or not 1 <= slices <= 64 or directory_length != 8 * slices or length != 10 + 8 * slices:
            raise ValueError(f"codes of version {version}, {slices} slices")
        directory = np.frombuffer(self.data, ">i4", 2 * slices, self.codes_start + 14).reshape(-1, 2)
        body = self.codes_start + 4 + length
        ebm, end = roaring_at(self.data, body)
        if end != body + ebm_length:
            raise ValueError(f"an existence bitmap of {end - body} bytes, the header says {ebm_length}")
        rows = np.array(ebm, np.uint32)
        codes = np.zeros(len(rows), np.int64)
        for bit, (offset, size) in enumerate(directory.tolist()):
            bitmap, stop = roaring_at(self.data, end + offset)
            if stop != end + offset + size:
                raise ValueError(f"slice {bit} of {stop - end - offset} bytes, the header says {size}")
            if not bitmap.issubset(ebm):
                raise ValueError(f"slice {bit} marks a row without a value")
            if bitmap and bit >= 31:
                raise ValueError(f"slice {bit} marks rows: codes past an int's")
            if bitmap:
                codes[np.isin(rows, np.array(bitmap, np.uint32))] |= 1 << bit
        return rows, codes

    def verify(self) -> None:
        """ValueError unless the dictionary's values are strictly ascending from the minimum to
        the maximum, chunk codes and offsets run on, and the rows' codes name every value and
        lie within the file."""
        _, codes, offsets, sizes = self.chunk_heads()
        keys = self.keys()
        if len(keys) != self.cardinality:
            raise ValueError(f"{len(keys)} values in the dictionary, the header says {self.cardinality}")
        areas = np.array([self._area_size(o, n) for o, n in zip(offsets.tolist(), sizes.tolist())], np.int64)
        if (codes != np.cumsum(1 + sizes) - (1 + sizes)).any() or (offsets != np.cumsum(areas) - areas).any():
            raise ValueError("the chunks' codes or key offsets do not run on")
        offsets_run = int(areas.sum())
        if self.keys_start + offsets_run != self.codes_start:
            raise ValueError("the chunks' keys do not fill the dictionary")
        if self.cardinality and (keys[0] != self.min or keys[-1] != self.max):
            raise ValueError("the minimum or maximum is not the dictionary's")
        ordered = _ordered(keys, self.type)
        if any(a >= b for a, b in zip(ordered[:-1], ordered[1:])) if self.type.root in STRINGS \
                else (ordered[1:] <= ordered[:-1]).any():
            raise ValueError("the dictionary's values are not strictly ascending")
        rows, codes = self.row_codes()
        if len(rows) and rows[-1] >= self.rows:
            raise ValueError(f"a code for row {rows[-1]}, past the file's {self.rows} rows")
        if len(np.unique(codes)) != self.cardinality or (len(codes) and codes.max() >= self.cardinality):
            raise ValueError(f"the rows' codes do not name the {self.cardinality} values exactly")

    def _area_size(self, offset: int, size: int) -> int:
        if self.type.root not in STRINGS:
            return size * np.dtype(KEY_WIDTH[self.type.root]).itemsize
        if size == 0:
            return 0
        base = self.keys_start + offset
        (last,) = struct.unpack_from(">i", self.data, base + 4 * (size - 1))
        (n,) = struct.unpack_from(">i", self.data, base + 4 * size + last)
        return 4 * size + last + 4 + n


def _ordered(keys: np.ndarray | list[bytes], t: DataType) -> np.ndarray | list[bytes]:
    """Keys as values that compare as Java compares them (floats: their total order)."""
    return float_total_order(np.asarray(keys, np.int64), t) if t.root in FLOATS else keys
