"""Whether a Parquet file's INT96 timestamps all fit Arrow's nanoseconds (1677-09-21 .. 2262-04-11).

Java's Parquet writers store TIMESTAMP(7-9) as INT96 (8 bytes of nanoseconds of the day, then
the Julian day), for any year from 1 to 9999. pyarrow reads INT96 only as a timestamp, and its
nanosecond read wraps a value outside those years around without a word (year 3000 reads as
1830). Its coarser units cannot tell either: Java writes a pre-1970 value with negative
nanoseconds of the day, which pyarrow's microsecond read takes as unsigned, so a year-2300 value
and a year-1715 one read alike. Only the stored bytes tell, so this module reads them: the
column chunk's pages (Thrift compact headers), decompressed with pyarrow's codecs, and the
values of the dictionary page and of plain-encoded data pages, checked as numpy arrays.
Dictionary-encoded data pages hold indexes into the dictionary, whose values are all checked.
"""
from __future__ import annotations

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq

_DATA_PAGE, _DICTIONARY_PAGE, _DATA_PAGE_V2 = 0, 2, 3
_PLAIN, _PLAIN_DICTIONARY, _RLE_DICTIONARY = 0, 2, 8
_CODECS = {"SNAPPY": "snappy", "GZIP": "gzip", "ZSTD": "zstd", "BROTLI": "brotli", "LZ4_RAW": "lz4_raw"}
_INT96 = np.dtype([("nanos", "<i8"), ("julian_day", "<i4")])
_UNIX_EPOCH_JULIAN_DAY = 2_440_588
# Arrow's nanosecond range, as whole seconds and the nanoseconds past them: [-2^63, 2^63 - 1] ns
_MIN_SECOND, _MIN_NANOS = -9_223_372_037, 145_224_192
_MAX_SECOND, _MAX_NANOS = 9_223_372_036, 854_775_807


def beyond_nanoseconds(source: pa.NativeFile, metadata: pq.FileMetaData, leaves: list[int]) -> bool:
    """Whether a value of the INT96 leaf columns `leaves` (indexes into the file's schema) lies
    outside Arrow's nanosecond range. ValueError for pages that cannot be parsed (damage)."""
    for g in range(metadata.num_row_groups):
        group = metadata.row_group(g)
        for leaf in leaves:
            chunk = group.column(leaf)
            start = chunk.dictionary_page_offset if chunk.has_dictionary_page else chunk.data_page_offset
            data = source.read_at(chunk.total_compressed_size, start)
            for values in _int96_values(data, chunk.compression, metadata.schema.column(leaf)):
                if _outside_nanoseconds(values):
                    return True
    return False


def _outside_nanoseconds(raw: bytes) -> bool:
    if len(raw) % _INT96.itemsize:
        raise ValueError(f"an INT96 page holds {len(raw)} bytes of values, not a multiple of 12")
    values = np.frombuffer(raw, dtype=_INT96)
    days = values["julian_day"].astype(np.int64) - _UNIX_EPOCH_JULIAN_DAY
    extra_seconds, nanos = np.divmod(values["nanos"], 1_000_000_000)
    seconds = days * 86_400 + extra_seconds
    below = (seconds < _MIN_SECOND) | ((seconds == _MIN_SECOND) & (nanos < _MIN_NANOS))
    above = (seconds > _MAX_SECOND) | ((seconds == _MAX_SECOND) & (nanos > _MAX_NANOS))
    return bool(np.any(below | above))


def _int96_values(data: bytes, compression: str, column: pq.ColumnSchema):
    """The PLAIN value bytes of each page of a column chunk holding INT96 values."""
    at = 0
    while at < len(data):
        header, at = _Compact(data, at).struct()
        size = header.get(3, 0)
        page, at = data[at:at + size], at + size
        kind = header.get(1)
        if kind == _DICTIONARY_PAGE:
            yield _decompress(page, header.get(2, 0), compression)
        elif kind == _DATA_PAGE:
            page_header = header.get(5, {})
            if page_header.get(2) == _PLAIN:
                yield _skip_levels(_decompress(page, header.get(2, 0), compression), column)
            elif page_header.get(2) not in (_PLAIN_DICTIONARY, _RLE_DICTIONARY):
                raise ValueError(f"an INT96 data page encoded {page_header.get(2)} (neither plain nor dictionary)")
        elif kind == _DATA_PAGE_V2:
            page_header = header.get(8, {})
            levels = page_header.get(5, 0) + page_header.get(6, 0)
            if page_header.get(4) == _PLAIN:
                values = page[levels:]
                compressed = page_header.get(7, True)
                yield _decompress(values, header.get(2, 0) - levels, compression) if compressed else values
            elif page_header.get(4) not in (_PLAIN_DICTIONARY, _RLE_DICTIONARY):
                raise ValueError(f"an INT96 data page encoded {page_header.get(4)} (neither plain nor dictionary)")


def _skip_levels(page: bytes, column: pq.ColumnSchema) -> bytes:
    """A version 1 data page's values: after its repetition and definition levels, each run
    prefixed with its 4-byte length (RLE encoding, the only one Parquet writers use)."""
    at = 0
    for present in (column.max_repetition_level > 0, column.max_definition_level > 0):
        if present:
            at += 4 + int.from_bytes(page[at:at + 4], "little")
    if at > len(page):
        raise ValueError("an INT96 data page's levels run past its end")
    return page[at:]


def _decompress(page: bytes, size: int, compression: str) -> bytes:
    if compression == "UNCOMPRESSED":
        return page
    if compression in ("LZ4", "UNKNOWN"):  # parquet-mr's LZ4, which pyarrow's metadata calls UNKNOWN
        return _hadoop_lz4(page, size)
    if compression not in _CODECS:
        raise ValueError(f"an INT96 column chunk compressed with {compression}, which pyarrow cannot decompress")
    return pa.decompress(page, size, codec=_CODECS[compression], asbytes=True)


def _hadoop_lz4(page: bytes, size: int) -> bytes:
    """parquet-mr's LZ4 codec frames LZ4 blocks as Hadoop does (each block's raw and compressed
    sizes, big-endian); some writers wrote bare blocks, which pyarrow's reader also accepts."""
    out, at = [], 0
    try:
        while at < len(page):
            raw, length = int.from_bytes(page[at:at + 4], "big"), int.from_bytes(page[at + 4:at + 8], "big")
            if at + 8 + length > len(page):
                raise ValueError("not Hadoop framing")
            out.append(pa.decompress(page[at + 8:at + 8 + length], raw, codec="lz4_raw", asbytes=True))
            at += 8 + length
        return b"".join(out)
    except (ValueError, OSError, pa.ArrowException):
        return pa.decompress(page, size, codec="lz4_raw", asbytes=True)


class _Compact:
    """Thrift's compact protocol, enough to read a page header: structs of integers, booleans and
    nested structs, other fields skipped (statistics' binaries, lists)."""

    def __init__(self, data: bytes, at: int):
        self.data, self.at = data, at

    def struct(self) -> tuple[dict[int, object], int]:
        fields: dict[int, object] = {}
        last = 0
        while True:
            byte = self._byte()
            if byte == 0:
                return fields, self.at
            kind, delta = byte & 0x0F, byte >> 4
            last = last + delta if delta else self._zigzag()
            fields[last] = self._value(kind)

    def _value(self, kind: int):
        if kind in (1, 2):  # booleans live in the type nibble
            return kind == 1
        if kind == 3:
            return self._byte()
        if kind in (4, 5, 6):
            return self._zigzag()
        if kind == 7:
            self.at += 8
            return None
        if kind == 8:
            self.at += self._varint()
            return None
        if kind in (9, 10):
            head = self._byte()
            count = head >> 4 if head >> 4 != 15 else self._varint()
            for _ in range(count):
                self._byte() if head & 0x0F in (1, 2) else self._value(head & 0x0F)  # a byte a boolean here
            return None
        if kind == 11:
            count = self._varint()
            if count:
                types = self._byte()
                for _ in range(count):
                    self._value(types >> 4)
                    self._value(types & 0x0F)
            return None
        if kind == 12:
            value, self.at = _Compact(self.data, self.at).struct()
            return value
        raise ValueError(f"a Parquet page header holds Thrift type {kind} (a damaged page header)")

    def _byte(self) -> int:
        if self.at >= len(self.data):
            raise ValueError("a Parquet page header runs past its column chunk (a damaged page header)")
        self.at += 1
        return self.data[self.at - 1]

    def _varint(self) -> int:
        value = shift = 0
        while True:
            byte = self._byte()
            value |= (byte & 0x7F) << shift
            if not byte & 0x80:
                return value
            shift += 7
            if shift > 63:
                raise ValueError("a Parquet page header holds an overlong integer (a damaged page header)")

    def _zigzag(self) -> int:
        n = self._varint()
        return (n >> 1) ^ -(n & 1)
