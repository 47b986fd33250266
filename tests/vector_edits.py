"""A table's deletion vector rewritten in place with a valid CRC: damage its checksum cannot catch."""
from __future__ import annotations

import struct
import zlib

import paimon_streaming as ps
from pyroaring import BitMap
from paimon_streaming.deletionvectors import MAGIC32, decode_vector


def _only_vector(t: ps.Table):
    (entry,) = [e for e in t.new_commit().index_manifest.read(t.latest_snapshot().index_manifest)
                if e.index_file.dv_ranges]
    (meta,) = entry.index_file.dv_ranges
    return meta, f"{t.path}/index/{entry.index_file.file_name}"


def rewrite_vector(t: ps.Table, body: bytes) -> str:
    """Put `body` (magic + bitmap) in place of the table's deletion vector, with a valid CRC;
    returns the index file's path."""
    meta, path = _only_vector(t)
    data = open(path, "rb").read()
    record = struct.pack(">i", len(body)) + body + struct.pack(">I", zlib.crc32(body))
    padding = len(data) - meta.offset - len(record)  # the file keeps the size the index manifest records
    assert padding >= 0
    open(path, "wb").write(data[:meta.offset] + record + b"\x00" * padding)
    return path


def vector_beyond_its_file(t: ps.Table) -> str:
    """Move the positions of the table's deletion vector past its data file's last row, keeping
    their count (a vector that belongs to a longer file); returns the index file's path."""
    meta, path = _only_vector(t)
    (rows,) = [f.row_count for s in t.plan(t.latest_snapshot()) for f in s.files
               if f.file_name == meta.data_file_name]
    positions = decode_vector(open(path, "rb").read(), meta, path)
    return rewrite_vector(t, struct.pack(">i", MAGIC32) + BitMap([p + rows for p in positions]).serialize())
