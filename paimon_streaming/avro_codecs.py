"""Avro block codecs this package's dependencies lack, and the varint Avro frames blocks with.

fastavro decodes snappy blocks only with cramjam installed, which this package does not
depend on; Paimon before 0.9 wrote its metadata files (and Avro data files) with snappy, and
`manifest.compression` may still choose it. pyarrow has snappy, so the codec is registered
here with fastavro's block readers and writers when fastavro has none of its own, and each
block's CRC32 (part of Avro's snappy framing, which fastavro does not check) is verified.
`register_snappy()` installs it (idempotent).
"""
from __future__ import annotations

import io
import zlib

import pyarrow as pa


def encode_long(n: int) -> bytes:
    """An Avro long (zigzag varint)."""
    n = (n << 1) ^ (n >> 63)
    out = bytearray()
    while n > 0x7F:
        out.append((n & 0x7F) | 0x80)
        n >>= 7
    out.append(n)
    return bytes(out)


def _snappy_block(src) -> io.BytesIO:
    """fastavro's block reader for the Avro codec "snappy" (the raw snappy block followed by
    the big-endian CRC32 of its content), through pyarrow's snappy: the metadata files of
    Paimon before 0.9 are snappy (its `manifest.compression` default), and fastavro reads
    snappy only with cramjam installed. `src`: the file (fastavro's compiled reader) or the
    decoder (its pure-Python one), at the block's length."""
    if hasattr(src, "read_fixed"):
        block = src.read_fixed(src.read_long())
    else:
        shift = length = 0
        while True:
            b = src.read(1)[0]
            length |= (b & 0x7F) << shift
            shift += 7
            if not b & 0x80:
                break
        block = src.read((length >> 1) ^ -(length & 1))  # an Avro long: zigzag
    if len(block) < 5:
        raise ValueError(f"snappy block of {len(block)} bytes is too short")
    data, crc = bytes(block[:-4]), bytes(block[-4:])
    shift = size = pos = 0
    while True:  # a raw snappy block starts with its uncompressed length (varint)
        b = data[pos]
        pos += 1
        size |= (b & 0x7F) << shift
        shift += 7
        if not b & 0x80:
            break
    plain = pa.Codec("snappy").decompress(data, decompressed_size=size, asbytes=True)
    if zlib.crc32(plain) != int.from_bytes(crc, "big"):
        raise ValueError("snappy block fails its CRC32")
    return io.BytesIO(plain)


def _snappy_write_block(out, block: bytes, compression_level=None) -> None:
    """fastavro's block writer for the codec "snappy" (a table's `manifest.compression`), through
    pyarrow. `out`: the file (fastavro's compiled writer) or the encoder (its pure-Python one)."""
    data = pa.Codec("snappy").compress(block, asbytes=True)
    payload = encode_long(len(data) + 4) + data + zlib.crc32(block).to_bytes(4, "big")
    (out._fo if hasattr(out, "write_long") else out).write(payload)


def register_snappy() -> None:
    """Read and write snappy Avro blocks without cramjam (_snappy_block, _snappy_write_block);
    fastavro's own stay when it has its library."""
    from fastavro import _read_py, _write_py
    from fastavro import read as _read
    from fastavro import write as _write
    for tables, codec in (((_read.BLOCK_READERS, _read_py.BLOCK_READERS), _snappy_block),
                          ((getattr(_write, "BLOCK_WRITERS", None) or _compiled_writers(), _write_py.BLOCK_WRITERS),
                           _snappy_write_block)):
        for table in tables:
            current = table.get("snappy")
            if current is None or getattr(current, "__name__", "") == "missing":
                table["snappy"] = codec


def _compiled_writers() -> dict:
    try:
        from fastavro import _write
        return _write.BLOCK_WRITERS
    except (ImportError, AttributeError):  # no compiled writer: the pure-Python one is used
        return {}
