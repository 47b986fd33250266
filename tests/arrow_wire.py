"""Framed pickles between the test process and the pypaimon oracle process, which run
different pyarrow versions: Arrow objects cross as Arrow IPC streams (stable across versions),
never as pyarrow's own pickles; pandas Timestamps as epoch nanoseconds. Both sides import it."""
from __future__ import annotations

import io
import pickle
import struct
from typing import Any, BinaryIO

import pyarrow as pa


def _ipc(table: pa.Table) -> bytes:
    sink = io.BytesIO()
    with pa.ipc.new_stream(sink, table.schema) as writer:
        writer.write_table(table)
    return sink.getvalue()


def _table(data: bytes) -> pa.Table:
    return pa.ipc.open_stream(data).read_all()


def _batch(data: bytes) -> pa.RecordBatch:
    return _table(data).combine_chunks().to_batches()[0]


def _schema(data: bytes) -> pa.Schema:
    return _table(data).schema


def _array(data: bytes) -> pa.Array:
    return _table(data).column(0).combine_chunks()


def _chunked(data: bytes) -> pa.ChunkedArray:
    return _table(data).column(0)


def _data_type(data: bytes) -> pa.DataType:
    return _table(data).schema.field(0).type


def _timestamp(nanos: int, tz: str | None):
    import pandas
    return pandas.Timestamp(nanos, tz=tz)


class _Pickler(pickle.Pickler):
    def reducer_override(self, obj: Any):
        if isinstance(obj, pa.Table):
            return _table, (_ipc(obj),)
        if isinstance(obj, pa.RecordBatch):
            return _batch, (_ipc(pa.Table.from_batches([obj])),)
        if isinstance(obj, pa.Schema):
            return _schema, (_ipc(obj.empty_table()),)
        if isinstance(obj, (pa.Array, pa.ChunkedArray)):
            fn = _array if isinstance(obj, pa.Array) else _chunked
            return fn, (_ipc(pa.table({"c": obj})),)
        if isinstance(obj, pa.DataType):
            return _data_type, (_ipc(pa.schema([("c", obj)]).empty_table()),)
        if type(obj).__name__ == "Timestamp" and type(obj).__module__.startswith("pandas"):
            return _timestamp, (obj.value, None if obj.tz is None else str(obj.tz))
        return NotImplemented


def send(stream: BinaryIO, message: Any) -> None:
    buf = io.BytesIO()
    _Pickler(buf, protocol=4).dump(message)
    data = buf.getvalue()
    stream.write(struct.pack(">Q", len(data)) + data)
    stream.flush()


def receive(stream: BinaryIO) -> Any:
    head = stream.read(8)
    if len(head) < 8:
        raise EOFError("the other process closed the pipe")
    (size,) = struct.unpack(">Q", head)
    data = stream.read(size)
    if len(data) < size:
        raise EOFError("the other process closed the pipe mid-message")
    return pickle.loads(data)
