"""The Avro container framing of metadata files, with what makes damage detectable.

Avro files carry no checksum of their own, and fastavro reads what a block's record count
says and ignores the rest of the block, so a flipped byte could turn into other file names,
statistics or fewer entries. Files written here carry two guards, both readable by every
Avro reader (Java's, pypaimon's fastavro), which ignore them:

* zstd blocks are zstd frames with a content checksum (XXH64, part of the zstd frame format),
  verified by decompression;
* the header holds the user metadata key `paimon-streaming.check` = "<records>:<crc32>",
  the number of records in the file and a CRC32 of that number, the codec and the writer
  schema JSON (the header's other entries), so a damaged schema, codec or block count, or a
  file cut at a block boundary, fails the check (`verify`);
* and `paimon-streaming.file`, the file's own name, so that another valid file put in its
  place (a stale copy of the same size passes every other check) is refused.

Files of other writers have neither and are read as before.
"""
from __future__ import annotations

import io
import os
import sys
import zlib

import fastavro

from ..avro_codecs import encode_long, register_snappy

if sys.version_info >= (3, 14):
    from compression import zstd
else:
    from backports import zstd

CHECK_KEY = "paimon-streaming.check"
FILE_KEY = "paimon-streaming.file"
_MAGIC = b"Obj\x01"
_CHECKSUM = {zstd.CompressionParameter.checksum_flag: 1}
register_snappy()  # Paimon before 0.9 wrote snappy metadata


def checked_zstd(data) -> bytes:
    """A zstd frame of `data` with its content checksum, which decompression verifies."""
    return zstd.compress(data, options=_CHECKSUM)


def read_long(data, pos: int) -> tuple[int, int]:
    """The Avro long at `pos`: (position after it, value)."""
    shift = n = 0
    while True:
        b = data[pos]
        pos += 1
        n |= (b & 0x7F) << shift
        shift += 7
        if not b & 0x80:
            return pos, (n >> 1) ^ -(n & 1)


def _bytes(value: bytes) -> bytes:
    return encode_long(len(value)) + value


_SCHEMA_JSON: dict[int, str] = {}


def schema_json(schema) -> str:
    """The writer schema JSON fastavro stores in a header for `schema` (a module constant)."""
    found = _SCHEMA_JSON.get(id(schema))
    if found is None:
        buf = io.BytesIO()
        fastavro.writer(buf, schema, [], codec="null")
        found = _SCHEMA_JSON[id(schema)] = fastavro.reader(io.BytesIO(buf.getvalue())).metadata["avro.schema"]
    return found


def check_value(records: int, codec: str, writer_schema: str) -> str:
    crc = zlib.crc32(f"{records}\n{codec}\n{writer_schema}".encode("utf-8"))
    return f"{records}:{crc:08x}"


def header(schema, codec: str, records: int, file_name: str) -> tuple[bytes, bytes]:
    """A container header for `records` records (with the check and name entries) and its
    sync marker."""
    text = schema_json(schema)
    sync = os.urandom(16)
    meta = [(b"avro.schema", text.encode("utf-8")), (b"avro.codec", codec.encode()),
            (CHECK_KEY.encode(), check_value(records, codec, text).encode()),
            (FILE_KEY.encode(), file_name.encode("utf-8"))]
    body = b"".join(_bytes(k) + _bytes(v) for k, v in meta)
    return _MAGIC + encode_long(len(meta)) + body + encode_long(0) + sync, sync


def encode(schema, records: list[dict], codec: str, file_name: str) -> bytes:
    """The Avro container file `file_name` of `records` in fastavro codec `codec`, with the guards."""
    if codec != "zstandard":  # fastavro compresses; the header still gets the check entries
        buf = io.BytesIO()
        fastavro.writer(buf, schema, records, codec=codec,
                        metadata={CHECK_KEY: check_value(len(records), codec, schema_json(schema)),
                                  FILE_KEY: file_name})
        return buf.getvalue()
    buf = io.BytesIO()
    fastavro.writer(buf, schema, records, codec="null", sync_interval=1 << 62)
    plain = buf.getvalue()
    head, sync = header(schema, codec, len(records), file_name)
    pos = _header_end(plain)
    if pos == len(plain):  # no records, no block
        return head
    pos, count = read_long(plain, pos)
    pos, size = read_long(plain, pos)
    if count != len(records) or pos + size + 16 != len(plain):  # never drop records
        raise AssertionError(f"expected one Avro block of {len(records)} records ({len(plain)} bytes)")
    return block_file(head, sync, count, plain[pos:pos + size])


def block_file(head: bytes, sync: bytes, count: int, block: bytes) -> bytes:
    """Header + one zstd block of `count` records encoded as `block` (uncompressed)."""
    data = checked_zstd(block)
    return b"".join((head, encode_long(count), encode_long(len(data)), data, sync))


def _header_end(data: bytes) -> int:
    """Where the first block starts: after the magic, the metadata map and the sync marker."""
    pos = len(_MAGIC)
    while True:
        pos, n = read_long(data, pos)
        if n == 0:
            return pos + 16
        if n < 0:  # a block of -n entries preceded by its size in bytes
            pos, _ = read_long(data, pos)
            n = -n
        for _ in range(2 * n):
            pos, length = read_long(data, pos)
            pos += length


def verify(metadata: dict, records: int, file_name: str) -> None:
    """Raise ValueError when a header's check entries do not match what was read from the file
    `file_name`."""
    written_as = metadata.get(FILE_KEY)
    if written_as is not None and written_as != file_name:
        raise ValueError(f"the file was written as {written_as!r}: another file put in this one's place")
    check = metadata.get(CHECK_KEY)
    if check is None:
        return  # written by another writer
    expected = check_value(records, metadata.get("avro.codec", "null"), metadata.get("avro.schema", ""))
    if check != expected:
        raise ValueError(f"the file fails its header check (holds {records} records; the check entry "
                         f"{check!r} does not match {expected!r}): damaged header or block")
