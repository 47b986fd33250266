"""Kafka record batches decoded in bulk (sources/kafka_batches.py) against kafka-python's own
record-by-record decoding of the same bytes."""
from __future__ import annotations

import struct

import numpy as np
from hypothesis import HealthCheck, given, settings, strategies as st
from kafka.record import MemoryRecords
from kafka.record.default_records import DefaultRecordBatch, DefaultRecordBatchBuilder
from kafka.record.util import calc_crc32c

from paimon_streaming.sources.kafka_batches import BATCH_HEADER, decode_fetched_records, varints

_ATTRIBUTES_AT, _CRC_AT = 21, 17
CODECS = [0, 1, 4]  # none, gzip, zstd (snappy and lz4 need libraries the tests do not install)


def batch(base_offset: int, codec: int, records: list[tuple], flags: int = 0, producer: int = -1) -> bytes:
    """One v2 batch from (offset delta, timestamp, key, value, headers); `flags` sets the
    log-append-time (0x08) or control (0x20) attribute as a broker would, CRC recomputed; a
    `producer` id makes it transactional."""
    builder = DefaultRecordBatchBuilder(magic=2, compression_type=codec, is_transactional=producer >= 0,
                                        producer_id=producer, producer_epoch=0 if producer >= 0 else -1,
                                        base_sequence=0 if producer >= 0 else -1, batch_size=1 << 30)
    for delta, ts, key, value, headers in records:
        assert builder.append(delta, ts, key, value, headers) is not None
    data = bytearray(builder.build())
    struct.pack_into(">q", data, 0, base_offset)
    if flags:
        (attributes,) = struct.unpack_from(">h", data, _ATTRIBUTES_AT)
        struct.pack_into(">h", data, _ATTRIBUTES_AT, attributes | flags)
        struct.pack_into(">I", data, _CRC_AT, calc_crc32c(memoryview(data)[_ATTRIBUTES_AT:]))
    return bytes(data)


def kafka_python(data: bytes, min_offset: int) -> list[tuple]:
    """What kafka-python's consumer returns for these bytes."""
    out, records = [], MemoryRecords(data)
    while (b := records.next_batch()) is not None:
        assert b.validate_crc()
        if not b.is_control_batch:
            out += [(r.offset, r.timestamp, r.timestamp_type, r.key, r.value,
                     [{"key": k, "value": v} for k, v in r.headers] or None) for r in b if r.offset >= min_offset]
    return out


def bulk(data: bytes, min_offset: int) -> list[tuple]:
    got = decode_fetched_records(data, min_offset)
    assert got is not None
    return list(zip(got.offsets.tolist(), got.timestamps_ms.tolist(), got.timestamp_types.tolist(),
                    got.keys.to_pylist(), got.values.to_pylist(), got.headers.to_pylist()))


blobs = st.one_of(st.none(), st.binary(max_size=40), st.binary(min_size=100, max_size=400),
                  st.text(max_size=40).map(lambda t: t.encode("utf-16-le")),  # zero bytes everywhere
                  st.just(b"\x00" * 70), st.just(bytes(range(256)) * 70))  # 2- and 3-byte lengths
headers = st.lists(st.tuples(st.text(max_size=5), st.one_of(st.none(), st.binary(max_size=10), st.just(b"\x00" * 200))),
                   max_size=3)


@st.composite
def fetched(draw):
    data, offset = b"", draw(st.integers(0, 1 << 40))
    for _ in range(draw(st.integers(1, 5))):
        n = draw(st.integers(1, 60))
        gaps = draw(st.lists(st.integers(0, 3), min_size=n, max_size=n))  # compacted: offsets skipped
        deltas = np.cumsum([0] + gaps[1:]).tolist()
        base_ts = draw(st.integers(0, 1 << 42))
        records = [(d, base_ts + draw(st.integers(-5000, 5000)), draw(blobs), draw(blobs), draw(headers))
                   for d in deltas]
        flags = draw(st.sampled_from([0, 0, 0, 0x08, 0x20]))
        data += batch(offset, draw(st.sampled_from(CODECS)), records, flags)
        offset += deltas[-1] + 1 + draw(st.integers(0, 2))
    return data, draw(st.integers(0, 40))


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large])
@given(fetched())
def test_bulk_decoding_equals_kafka_python(case):
    data, skip = case
    first = struct.unpack_from(">q", data, 0)[0]
    assert bulk(data, first + skip) == kafka_python(data, first + skip)


def test_a_batch_cut_short_is_left_for_the_next_fetch():
    whole = batch(10, 0, [(i, 1000 + i, b"k", b"v%d" % i, []) for i in range(5)])
    second = batch(15, 1, [(i, 2000, None, b"w", []) for i in range(3)])
    got = decode_fetched_records(whole + second[:-7], 0)
    assert got.offsets.tolist() == list(range(10, 15)) and got.next_offset == 15
    assert got.values.to_pylist() == [b"v0", b"v1", b"v2", b"v3", b"v4"]


def test_control_batches_move_the_next_offset_only():
    data = batch(0, 0, [(0, 5, b"k", b"v", [])]) + batch(1, 0, [(0, 6, b"\x00\x00\x00\x00", b"\x00\x00", [])],
                                                         flags=0x20)
    got = decode_fetched_records(data, 0)
    assert got.offsets.tolist() == [0] and got.next_offset == 2
    only_control = decode_fetched_records(data[len(batch(0, 0, [(0, 5, b"k", b"v", [])])):], 0)
    assert len(only_control) == 0 and only_control.next_offset == 2


def test_read_committed_leaves_aborted_transactions_out():
    def marker(offset: int, producer: int, commit: bool) -> bytes:
        return batch(offset, 0, [(0, 9, struct.pack(">hh", 0, int(commit)), b"\x00" * 6, [])], 0x20, producer)

    data = (batch(0, 0, [(i, 1, b"k", b"aborted", []) for i in range(3)], producer=7) + marker(3, 7, False)
            + batch(4, 4, [(i, 1, b"k", b"committed", []) for i in range(2)], producer=8) + marker(6, 8, True)
            + batch(7, 0, [(i, 1, None, b"plain", []) for i in range(2)]))
    assert decode_fetched_records(data, 0).offsets.tolist() == [0, 1, 2, 4, 5, 7, 8]  # read_uncommitted
    committed = decode_fetched_records(data, 0, aborted=[(7, 0)])
    assert committed.offsets.tolist() == [4, 5, 7, 8] and committed.next_offset == 9
    assert committed.values.to_pylist() == [b"committed"] * 2 + [b"plain"] * 2
    assert decode_fetched_records(data, 0, aborted=[]).offsets.tolist() == [0, 1, 2, 4, 5, 7, 8]


def test_what_it_does_not_decode_goes_back_to_kafka_python():
    good = batch(0, 0, [(i, 7, b"key", b"value", []) for i in range(20)])
    corrupt = bytearray(good)
    corrupt[-3] ^= 0xFF
    assert decode_fetched_records(bytes(corrupt), 0) is None  # the CRC: kafka-python raises its error
    no_zero = bytearray(good)  # a record whose attributes byte is not 0: not a record start here
    rec = BATCH_HEADER.size
    no_zero[rec + 1] = 1
    struct.pack_into(">I", no_zero, _CRC_AT, calc_crc32c(memoryview(no_zero)[_ATTRIBUTES_AT:]))
    assert decode_fetched_records(bytes(no_zero), 0) is None
    legacy = bytearray(good)
    legacy[16] = 1  # message format v1
    assert decode_fetched_records(bytes(legacy), 0) is None
    assert decode_fetched_records(good[:30], 0) is None  # not one whole batch
    raw_key = batch(0, 0, [(0, 7, b"k", b"v", [("h\u00e9", b"x")])])  # a header key that is not UTF-8:
    assert decode_fetched_records(raw_key.replace("h\u00e9".encode(), b"h\xff\xff"), 0, check_crcs=False) is None
    lied = bytearray(good)  # recordsCount says 21: the chain ends after 20
    struct.pack_into(">i", lied, BATCH_HEADER.size - 4, 21)
    struct.pack_into(">I", lied, _CRC_AT, calc_crc32c(memoryview(lied)[_ATTRIBUTES_AT:]))
    assert decode_fetched_records(bytes(lied), 0) is None
    assert DefaultRecordBatch(bytes(lied)).validate_crc()


def test_varints_read_at_many_positions():
    from kafka.record.util import encode_varint
    values = [0, -1, 1, 63, -64, 64, 8191, -8192, 1 << 20, -(1 << 30), (1 << 62), -(1 << 63)]
    data, starts = bytearray(), []
    for v in values:
        starts.append(len(data))
        encode_varint(v, data.append)
    buf = np.frombuffer(bytes(data) + bytes(10), np.uint8)
    got, lengths = varints(buf, np.array(starts), 10)
    assert got.tolist() == values
    assert (np.diff(starts + [len(data)]) == lengths).all()


def test_codecs_and_record_lengths_it_cannot_trust_go_back_to_kafka_python():
    """A batch of a codec not decodable here (snappy without its library, an unknown codec id)
    and a record whose key length runs past its record: None (kafka-python decodes them, or
    raises its precise error), never rows read from the wrong bytes."""
    good = batch(0, 0, [(i, 7, b"key", b"value", []) for i in range(3)])

    def patched(at: int, value: int, fmt: str = ">h") -> bytes:
        data = bytearray(good)
        struct.pack_into(fmt, data, at, value)
        struct.pack_into(">I", data, _CRC_AT, calc_crc32c(memoryview(data)[_ATTRIBUTES_AT:]))
        return bytes(data)
    assert decode_fetched_records(patched(_ATTRIBUTES_AT, 2), 0) is None  # snappy: not installed for the tests
    assert decode_fetched_records(patched(_ATTRIBUTES_AT, 6), 0) is None  # no such codec
    rec = BATCH_HEADER.size  # record 0: length, attributes, timestamp delta, offset delta, key length (zigzag)
    assert good[rec + 4] == 6  # the key's 3 bytes
    for key_length in (5, 60):  # into the value, or past the record
        assert decode_fetched_records(patched(rec + 4, 2 * key_length, ">B"), 0) is None
    assert bulk(good, 0) == kafka_python(good, 0)
