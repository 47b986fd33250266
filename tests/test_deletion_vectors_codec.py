"""Deletion-vector index file codec against the bytes Java 1.4.2 writes (FORMAT.md §8)."""
from __future__ import annotations

import pytest

from paimon_streaming.deletionvectors import (bitmap_from_positions, decode_vector, encode_index_file,
                                              positions_of)
from paimon_streaming.errors import CorruptFileError


def test_32bit_bytes_match_java():
    data, metas = encode_index_file({"data-1.parquet": bitmap_from_positions([0, 5, 6, 7, 50, 99])})
    expected = bytes.fromhex("01" "00000020" "5e43f2d0" "3a300000" "01000000" "0000" "0500" "10000000"
                             "0000" "0500" "0600" "0700" "3200" "6300" "7101a9bd")
    assert data == expected
    (meta,) = metas
    assert (meta.offset, meta.length, meta.cardinality) == (1, 0x20, 6)
    assert positions_of(decode_vector(data, meta, "f")).tolist() == [0, 5, 6, 7, 50, 99]


def test_64bit_record_matches_java_prefix_and_round_trips():
    positions = [0, 5, 2 ** 33]
    data, metas = encode_index_file({"f.parquet": bitmap_from_positions(positions, bitmap64=True)})
    assert data[1:].hex().startswith("00000046" "d1d33964" "0300000000000000" "00000000" "3a300000")
    assert metas[0].length == 78  # 64-bit length covers the whole record
    assert positions_of(decode_vector(data, metas[0], "f")).tolist() == positions


def test_several_files_offsets_and_crc_check():
    vectors = {f"data-{i}.parquet": bitmap_from_positions(range(i, 100, 7)) for i in range(3)}
    data, metas = encode_index_file(vectors)
    assert metas[0].offset == 1
    for meta in metas:
        assert positions_of(decode_vector(data, meta, "f")).tolist() == \
            list(range(int(meta.data_file_name[5]), 100, 7))
    corrupt = bytearray(data)
    corrupt[metas[1].offset + 10] ^= 0xFF
    with pytest.raises(CorruptFileError, match="data-1.parquet"):
        decode_vector(bytes(corrupt), metas[1], "index-x")
    with pytest.raises(CorruptFileError, match="truncated"):
        decode_vector(data[: metas[2].offset + 6], metas[2], "index-x")
