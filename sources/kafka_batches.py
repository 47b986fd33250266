"""Kafka record batches (message format v2) decoded into Arrow columns with numpy.

kafka-python decodes a fetch response record by record in Python (about 20 µs a record: a
50,000-record micro-batch spends a second there). Here a fetch response's batches are walked
in Python (a batch holds tens to thousands of records), and their records are decoded
together:

- A record is a zigzag varint length followed by its body, whose first byte (attributes) is
  0. Every position where such a length ends just before a 0 byte is a candidate record
  start; each candidate points to where the next record would begin. Candidates whose
  successor is not a candidate, or whose fields do not parse within their length, are
  dropped: in payloads full of zero bytes (UTF-16 text, padded binary) that leaves about one
  candidate a record.
- The records of a batch are the chain of candidates from the batch's first byte to its end.
  The chains of all batches are followed together by pointer doubling (log2 of the longest
  batch's record count numpy steps), then checked: every batch's chain must end exactly at
  its end after exactly its `recordsCount` records. A real record start is always a
  candidate, so a checked chain is the batch's records and nothing else.
- The fields (timestamp and offset deltas, key, value, headers) are varints read at all
  record positions at once (headers a header index at a time); keys and values become Arrow
  binary columns.

`decode_fetched_records` returns None for anything it does not decode itself (message format
v0/v1, a codec whose library is missing, a failed CRC, a record that does not parse, a
non-zero attributes byte, a header key that is not UTF-8): the caller then hands the same
bytes to kafka-python, which decodes them or raises its own precise error. Format facts: Kafka's "Message format" documentation
(RecordBatch and Record layouts, attributes bits).
"""
from __future__ import annotations

import struct
from dataclasses import dataclass
from typing import Iterable

import numpy as np
import pyarrow as pa

BATCH_HEADER = struct.Struct(">qiibIhiqqqhii")  # baseOffset .. recordsCount: 61 bytes
_LOG_OVERHEAD = 12       # baseOffset and batchLength precede what batchLength counts
_CRC_FROM = 21           # the CRC covers the batch from its attributes on
_CODEC_MASK, _LOG_APPEND_TIME, _TRANSACTIONAL, _CONTROL = 0x07, 0x08, 0x10, 0x20
HEADERS_TYPE = pa.list_(pa.struct([pa.field("key", pa.string()), pa.field("value", pa.binary())]))
_MIN_BODY = 6            # attributes, timestamp delta, offset delta, key/value lengths, header count
_INLINE = 12             # the bytes an Arrow binary view holds inline
_PAD = 16                # past the last record: the widest varint (10) and an inline view stay in `buf`


@dataclass
class FetchedRecords:
    """The records of one fetch response, as columns; `offset` is the first record's offset
    (kafka-python skips a fetched item whose `offset` is below the fetch position)."""

    keys: pa.Array
    values: pa.Array
    headers: pa.Array            # list<struct<key: string, value: binary>>
    offsets: np.ndarray          # int64
    timestamps_ms: np.ndarray    # int64
    timestamp_types: np.ndarray  # int32: 0 create time, 1 log-append time
    next_offset: int             # where the next fetch starts (past control batches too)
    leader_epoch: int
    size_in_bytes: int

    @property
    def offset(self) -> int:
        return int(self.offsets[0]) if len(self.offsets) else self.next_offset

    def __len__(self) -> int:
        return len(self.offsets)


@dataclass
class _Batches:
    """The record sections of the data batches, concatenated, and each batch's header."""

    buf: np.ndarray
    size: int                    # bytes of records in `buf` (the rest is padding)
    starts: np.ndarray
    ends: np.ndarray
    counts: np.ndarray
    base_offsets: np.ndarray
    last_deltas: np.ndarray      # lastOffsetDelta: no record's offset delta exceeds it
    first_timestamps: np.ndarray
    max_timestamps: np.ndarray
    log_append: np.ndarray


def decode_fetched_records(data, min_offset: int, check_crcs: bool = True,
                           aborted: Iterable[tuple[int, int]] | None = None) -> FetchedRecords | None:
    """The records at offsets >= `min_offset` in `data` (a fetch response's records for one
    partition), or None when kafka-python should decode `data` instead (see the module
    docstring). A batch cut short at the end of `data` is left for the next fetch.

    `aborted`: read_committed, with the fetch response's aborted transactions as (producer id,
    first offset): their batches are left out, as Kafka's consumer does (None: read_uncommitted,
    every data batch)."""
    batches, next_offset, leader_epoch = _split_batches(memoryview(data), check_crcs, aborted)
    if batches is None:
        return None
    if batches.counts.sum() == 0:
        empty = np.zeros(0, np.int64)
        return FetchedRecords(pa.array([], pa.binary()), pa.array([], pa.binary()), pa.array([], HEADERS_TYPE),
                              empty, empty, np.zeros(0, np.int32), next_offset, leader_epoch, len(data))
    records = _records(batches)
    if records is None:
        return None
    return _columns(batches, records, min_offset, next_offset, leader_epoch, len(data))


def _split_batches(view: memoryview, check_crcs: bool,
                   aborted: Iterable[tuple[int, int]] | None) -> tuple[_Batches | None, int, int]:
    """Walk the batch headers (a Python step a batch, not a record); decompress the data batches
    (read_committed: not those of aborted transactions)."""
    from kafka.record.util import calc_crc32c
    sections, headers = [], []
    next_offset, leader_epoch, pos = -1, -1, 0
    pending = sorted(aborted or (), key=lambda a: a[1])[::-1]  # popped from the end: lowest first offset
    aborting: set[int] = set()  # producers whose open transaction was aborted
    while len(view) - pos >= BATCH_HEADER.size:
        (base_offset, length, epoch, magic, crc, attributes, last_delta, first_ts, max_ts,
         producer, _pepoch, _seq, count) = BATCH_HEADER.unpack_from(view, pos)
        end = pos + _LOG_OVERHEAD + length
        if end > len(view):
            break  # cut short by the fetch size: the next fetch starts at this batch
        if magic != 2 or length < BATCH_HEADER.size - _LOG_OVERHEAD or count < 0:
            return None, -1, -1
        if check_crcs and calc_crc32c(view[pos + _CRC_FROM:end]) != crc:
            return None, -1, -1
        next_offset, leader_epoch = base_offset + last_delta + 1, epoch
        skip = False
        if aborted is not None and attributes & _TRANSACTIONAL:
            while pending and pending[-1][1] <= next_offset - 1:
                aborting.add(pending.pop()[0])
            if attributes & _CONTROL:
                if _is_abort_marker(view[pos:end]):
                    aborting.discard(producer)
            else:
                skip = producer in aborting
        if not attributes & _CONTROL and count and not skip:
            records = _decompressed(attributes & _CODEC_MASK, view[pos + BATCH_HEADER.size:end])
            if records is None:
                return None, -1, -1
            sections.append(records)
            headers.append((base_offset, last_delta, first_ts, max_ts, bool(attributes & _LOG_APPEND_TIME),
                            count, len(records)))
        pos = end
    if next_offset < 0:
        return None, -1, -1  # not one whole batch: kafka-python reports why
    if not headers:
        empty = np.zeros(0, np.int64)
        return _Batches(np.zeros(_PAD, np.uint8), 0, empty, empty, empty, empty, empty, empty, empty,
                        np.zeros(0, bool)), next_offset, leader_epoch
    base, last, first, top, log_append, counts, sizes = (np.array(c) for c in zip(*headers))
    ends = np.cumsum(sizes)
    buf = np.frombuffer(b"".join(sections) + bytes(_PAD), np.uint8)
    return _Batches(buf, int(ends[-1]), ends - sizes, ends, counts.astype(np.int64), base.astype(np.int64),
                    last.astype(np.int64), first.astype(np.int64), top.astype(np.int64), log_append), \
        next_offset, leader_epoch


def _is_abort_marker(batch: memoryview) -> bool:
    """Whether a control batch ends a transaction by aborting it (its record's key: version,
    type 0 abort / 1 commit); read with kafka-python's record reader, one record a batch."""
    from kafka.record.default_records import DefaultRecordBatch
    record = next(iter(DefaultRecordBatch(bytes(batch))), None)
    return record is not None and record.abort


def _decompressed(codec: int, payload: memoryview):
    """A batch's record bytes; None for a codec kafka-python cannot decode here either."""
    if codec == 0:
        return payload
    from kafka import codec as kc
    decoders = {1: (kc.has_gzip, kc.gzip_decode), 2: (kc.has_snappy, kc.snappy_decode),
                3: (kc.has_lz4, kc.lz4_decode), 4: (kc.has_zstd, kc.zstd_decode)}
    if codec not in decoders or not decoders[codec][0]():
        return None
    return decoders[codec][1](payload.tobytes())


def varints(buf: np.ndarray, pos: np.ndarray, width: int) -> tuple[np.ndarray, np.ndarray]:
    """The zigzag varints starting at `pos` (`buf` padded by `width` bytes): (values, byte
    lengths), length 0 where no byte within `width` ends the varint. Each further byte is read
    only for the varints still going (most lengths here take one or two bytes)."""
    byte = buf[pos]
    raw = (byte & 0x7F).astype(np.uint64)
    lengths = np.ones(len(pos), np.int64)
    going = np.flatnonzero(byte >= 0x80)
    for k in range(1, width):
        if not len(going):
            break
        byte = buf[pos[going] + k]
        raw[going] |= (byte & 0x7F).astype(np.uint64) << np.uint64(7 * k)
        lengths[going] += 1
        going = going[byte >= 0x80]
    lengths[going] = 0
    return (raw >> np.uint64(1)).astype(np.int64) ^ -(raw & np.uint64(1)).astype(np.int64), lengths


@dataclass
class _Parsed:
    """Records parsed at candidate positions: one entry each, in position order."""

    pos: np.ndarray
    section: np.ndarray
    following: np.ndarray        # where the next record would start
    ts_delta: np.ndarray
    offset_delta: np.ndarray
    key_at: np.ndarray
    key_len: np.ndarray
    value_at: np.ndarray
    value_len: np.ndarray
    headers_at: np.ndarray
    header_count: np.ndarray

    def take(self, rows: np.ndarray) -> "_Parsed":
        return _Parsed(*(getattr(self, f)[rows] for f in self.__dataclass_fields__))


def _candidates(b: _Batches) -> _Parsed:
    """Every position where a record could start: a non-negative length of at least
    `_MIN_BODY` (a zigzag varint: its first byte even) ending just before a zero byte (the
    attributes), whose successor is another such position or its batch's end, and whose fields
    parse within that length. A real record always passes; the successor and field checks keep
    few false ones even in payloads full of zero bytes (text in UTF-16, padded binary)."""
    buf, size = b.buf, b.size
    zeros = np.flatnonzero(buf[:size] == 0)
    zeros = zeros[zeros > 0]
    zeros = zeros[buf[zeros - 1] < 0x80]  # a varint's last byte precedes the attributes
    marked = np.zeros(size + 1, bool)  # + 1: a batch's end, where its chain stops
    one = buf[zeros - 1]
    marked[(zeros - 1)[(one >= 2 * _MIN_BODY) & (one & 1 == 0)]] = True
    for width in range(2, 6):  # longer lengths: the bytes before the last have the high bit
        zeros = zeros[zeros >= width]
        zeros = zeros[buf[zeros - width] >= 0x80]
        marked[(zeros - width)[buf[zeros - width] & 1 == 0]] = True
    pos = np.flatnonzero(marked[:size])
    body, width = varints(buf, pos, 5)
    following = pos + width + body
    ok = (body >= _MIN_BODY) & (following <= size)
    pos, width, body, following = pos[ok], width[ok], body[ok], following[ok]
    for _ in range(3):  # drop those whose successor is not one of them: false chains die fast
        marked[:] = False
        marked[pos] = True
        marked[b.ends] = True
        ok = marked[following]
        pos, width, body, following = pos[ok], width[ok], body[ok], following[ok]
    section = np.searchsorted(b.starts, pos, "right") - 1
    keep = following <= b.ends[section]
    pos, section, following, at = pos[keep], section[keep], following[keep], (pos + width + 1)[keep]
    limit = b.size  # reads stay within `buf`; a field that runs past its record fails below
    ts_delta, n1 = varints(buf, at, 10)
    at = np.minimum(at + n1, limit)
    offset_delta, n2 = varints(buf, at, 5)
    at = np.minimum(at + n2, limit)
    key_len, n3 = varints(buf, at, 5)
    key_at = np.minimum(at + n3, limit)
    at = np.minimum(key_at + np.maximum(key_len, 0), limit)
    value_len, n4 = varints(buf, at, 5)
    value_at = np.minimum(at + n4, limit)
    at = np.minimum(value_at + np.maximum(value_len, 0), limit)
    header_count, n5 = varints(buf, at, 5)
    at = at + n5
    ok = ((n1 > 0) & (n2 > 0) & (n3 > 0) & (n4 > 0) & (n5 > 0) & (key_len >= -1) & (value_len >= -1)
          & (offset_delta >= 0) & (offset_delta <= b.last_deltas[section])
          & (header_count >= 0) & np.where(header_count == 0, at == following, at + 2 * header_count <= following))
    return _Parsed(pos, section, following, ts_delta, offset_delta, key_at, key_len, value_at, value_len, at,
                   header_count).take(np.flatnonzero(ok))


def _records(b: _Batches) -> _Parsed | None:
    """The records, in order: each batch's chain of candidates from its first byte, followed by
    pointer doubling; None unless every chain ends at its batch's end after `recordsCount`."""
    c = _candidates(b)
    n = len(c.pos)
    first = np.searchsorted(c.pos, b.starts)
    if n == 0 or not np.array_equal(c.pos[np.minimum(first, n - 1)], b.starts):
        return None
    end_node, dead_node = n, n + 1
    at = np.minimum(np.searchsorted(c.pos, c.following), n - 1)
    step = np.where(c.following == b.ends[c.section], end_node,
                    np.where(c.pos[at] == c.following, at, dead_node))
    jump = np.append(step, [end_node, dead_node])
    reached = first
    while True:  # reached: the nodes at distances [0, 2^k) of each chain; jump: 2^k steps
        ahead = jump[reached]
        ahead = ahead[ahead < n]
        if not len(ahead):
            break
        reached = np.concatenate([reached, ahead])
        jump = jump[jump]
    nodes = np.sort(reached)
    if ((step[nodes] == dead_node).any()
            or not np.array_equal(np.bincount(c.section[nodes], minlength=len(b.starts)), b.counts)):
        return None
    return c.take(nodes)


def _columns(b: _Batches, r: _Parsed, min_offset: int, next_offset: int, leader_epoch: int,
             size_in_bytes: int) -> FetchedRecords | None:
    r = r.take(np.flatnonzero(b.base_offsets[r.section] + r.offset_delta >= min_offset))
    headers = _headers(b.buf, r.headers_at, r.header_count, r.following)
    if headers is None:
        return None
    log_append = b.log_append[r.section]
    timestamps = np.where(log_append, b.max_timestamps[r.section], b.first_timestamps[r.section] + r.ts_delta)
    return FetchedRecords(binary_column(b.buf, r.key_at, r.key_len), binary_column(b.buf, r.value_at, r.value_len),
                          headers, b.base_offsets[r.section] + r.offset_delta, timestamps,
                          log_append.astype(np.int32), next_offset, leader_epoch, size_in_bytes)


def _headers(buf: np.ndarray, at: np.ndarray, counts: np.ndarray, record_end: np.ndarray) -> pa.Array | None:
    """Each record's headers (key: a UTF-8 string, value: nullable bytes) as a list column, null
    for a record without any (as Spark's connector), read a header index at a time over the
    records that have that many; None when they do not fill their records exactly or a key is
    not UTF-8."""
    slots = np.zeros(len(counts) + 1, np.int64)
    np.cumsum(counts, out=slots[1:])
    key_at, key_len, value_at, value_len = (np.zeros(slots[-1], np.int64) for _ in range(4))
    pos, rows, index = at.copy(), np.flatnonzero(counts > 0), 0
    while len(rows):
        end = record_end[rows]
        klen, w1 = varints(buf, np.minimum(pos[rows], end), 5)
        kat = pos[rows] + w1
        vlen, w2 = varints(buf, np.minimum(kat + np.maximum(klen, 0), end), 5)
        vat = kat + np.maximum(klen, 0) + w2
        after = vat + np.maximum(vlen, 0)
        if not ((w1 > 0) & (w2 > 0) & (klen >= 0) & (vlen >= -1) & (after <= end)).all():
            return None
        slot = slots[rows] + index
        key_at[slot], key_len[slot], value_at[slot], value_len[slot] = kat, klen, vat, vlen
        pos[rows] = after
        index += 1
        rows = rows[counts[rows] > index]
    if not np.array_equal(pos, record_end):
        return None
    try:
        keys = binary_column(buf, key_at, key_len).cast(pa.string())
    except pa.ArrowInvalid:
        return None
    entries = pa.StructArray.from_arrays([keys, binary_column(buf, value_at, value_len)], ["key", "value"])
    return pa.ListArray.from_arrays(pa.array(slots.astype(np.int32)), entries, mask=pa.array(counts == 0))


def binary_column(buf: np.ndarray, starts: np.ndarray, lengths: np.ndarray) -> pa.Array:
    """The byte strings buf[start:start + length] as one Arrow binary column; length -1 is null.

    Built as Arrow binary views into `buf` (16 bytes a row: the length, then the bytes inline
    up to 12, else a 4-byte prefix and the offset), which Arrow's cast copies into a binary
    column in C++: a third of the time of gathering the bytes with numpy indexes."""
    valid = lengths >= 0
    sizes = np.where(valid, lengths, 0).astype("<i4")
    n = len(sizes)
    window = buf[starts[:, None] + np.arange(_INLINE)]
    inline = sizes <= _INLINE
    window[inline] *= np.arange(_INLINE) < sizes[inline, None]
    spilled = ~inline
    window[spilled, 4:8] = 0  # data buffer 0: `buf`
    window[spilled, 8:] = starts[spilled].astype("<i4").view(np.uint8).reshape(-1, 4)
    views = np.empty((n, 16), np.uint8)
    views[:, :4] = sizes.view(np.uint8).reshape(n, 4)
    views[:, 4:] = window
    validity = None if valid.all() else pa.py_buffer(np.packbits(valid, bitorder="little"))
    column = pa.Array.from_buffers(pa.binary_view(), n, [validity, pa.py_buffer(views), pa.py_buffer(buf)],
                                   null_count=int(n - valid.sum()))
    return column.cast(pa.binary())
