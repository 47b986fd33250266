"""Avro encoding of index manifests without fastavro's per-record union resolution.

An index manifest lists every live deletion-vector range of the table and is rewritten on
every commit that changes one (FORMAT.md §4.3, as Java does), so its size follows the number
of data files with deletions. fastavro resolves the `["null", record]` union of each range
by validating the value against the branches, about 12 µs a range; this writer emits the
same bytes directly: the header (with the check entry of `avro_container`), one block of
records encoded by hand, compressed by fastavro's own block writer (zstd: a frame with its
content checksum, `avro_container.block_file`). Entries with a global
index (a nested record this writer does not encode) go back to fastavro.
"""
from __future__ import annotations

import io
from typing import Sequence

from fastavro._write_py import BLOCK_WRITERS
from fastavro.io.binary_encoder import BinaryEncoder

from . import avro_container
from .avro_schemas import INDEX_MANIFEST_ENTRY
from .entries import INDEX_ENTRY_VERSION, IndexManifestEntry

_NULL, _PRESENT = b"\x00", b"\x02"   # union branch 0 / 1 as zigzag varints


def _long(out: bytearray, n: int) -> None:
    n = (n << 1) ^ (n >> 63)
    while n > 0x7F:
        out.append((n & 0x7F) | 0x80)
        n >>= 7
    out.append(n)


def _text(out: bytearray, value: str | bytes) -> None:
    data = value.encode() if isinstance(value, str) else value
    _long(out, len(data))
    out += data


def encode_index_manifest(entries: Sequence[IndexManifestEntry], codec: str, file_name: str) -> bytes | None:
    """The Avro file `file_name` of `entries` in fastavro codec `codec`; None when one has a
    global index."""
    out = bytearray()
    for e in entries:
        f = e.index_file
        if f.global_index is not None:
            return None
        for n in (INDEX_ENTRY_VERSION, e.kind):
            _long(out, n)
        _text(out, e.partition)
        _long(out, e.bucket)
        _text(out, f.index_type)
        _text(out, f.file_name)
        _long(out, f.file_size)
        _long(out, f.row_count)
        if f.dv_ranges is None:
            out += _NULL
        else:
            out += _PRESENT
            if f.dv_ranges:
                _long(out, len(f.dv_ranges))
                for r in f.dv_ranges:
                    out += _PRESENT
                    _text(out, r.data_file_name)
                    _long(out, r.offset)
                    _long(out, r.length)
                    if r.cardinality is None:
                        out += _NULL
                    else:
                        out += _PRESENT
                        _long(out, r.cardinality)
            out += _NULL  # end of the array
        if f.external_path is None:
            out += _NULL
        else:
            out += _PRESENT
            _text(out, f.external_path)
        out += _NULL  # _GLOBAL_INDEX
    header, sync = avro_container.header(INDEX_MANIFEST_ENTRY, codec, len(entries), file_name)
    if not entries:
        return header
    if codec == "zstandard":
        return avro_container.block_file(header, sync, len(entries), bytes(out))
    buf = io.BytesIO()
    buf.write(header)
    encoder = BinaryEncoder(buf)
    encoder.write_long(len(entries))
    BLOCK_WRITERS[codec](encoder, bytes(out), None)
    buf.write(sync)
    return buf.getvalue()
