"""Maxwell's change events (MySQL binlog as JSON) -> table rows with their row kinds.

Maxwell writes one record per row change::

    {"database": "shop", "table": "orders", "type": "update", "ts": 1477053217, "xid": 23396,
     "data": {"id": 1, "qty": 5, ...}, "old": {"qty": 4}}

`data` is the row after an insert or update and the deleted row of a delete; `old` holds the
previous values of the columns an update changed. They become the same rows as Debezium's
events (`change_events.change_rows`): insert and bootstrap-insert +I, update +U (and a -D of the old
key when the update changed the table's key, a row moving partitions), delete -D. The markers
around a bootstrap (bootstrap-start, bootstrap-complete) carry no row and are skipped; any other
type (DDL with `output_ddl`, which reaches the table as the columns of later rows) is an
undecodable record.

Maxwell's JSON carries numbers and DECIMALs as JSON numbers, DATE, DATETIME and TIME as text,
MySQL TIMESTAMP as UTC text without a zone, and binary columns as base64. As Paimon's parser
takes every value as text, a STRING, BOOLEAN or number column takes any JSON value as its text
(a number's digits, an object's JSON: a table whose columns Paimon created as STRING), cast to
the column's type (`change_events.read_loosely`).
"""
from __future__ import annotations

from typing import Sequence

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from .base64_columns import holds_binary
from . import change_events
from .change_events import EVENTS_METADATA, Column, change_rows

FORMAT = "maxwell-json"
_OPS = {"insert": "c", "bootstrap-insert": "r", "update": "u", "delete": "d"}
_MARKERS = ("bootstrap-start", "bootstrap-complete")


def encoding_of(t: pa.DataType) -> str:
    """How the format writes a value of a column of type `t` (change_events.Column)."""
    if pa.types.is_timestamp(t) and t.tz is not None:
        return "utc-text"
    if pa.types.is_timestamp(t) or pa.types.is_date(t) or pa.types.is_time(t):
        return "text"
    return "base64" if holds_binary(t) else "plain"


def row_image(value: bytes | None) -> dict | None:
    """The row a record carries (None for markers, DDL and what is no record)."""
    record = change_events.row_object(value)
    return change_events.row_object(value, "data") if record and record.get("type") in _OPS else None


def parse_events(buffer: bytes, columns: list[Column], kind_column: str, event_column: str,
                 keys: Sequence[str] = (), partitioned: bool = False, partial: bool = False) -> pa.Table:
    """Newline-delimited Maxwell records -> rows as `change_events.change_rows` makes them, the
    number of records in the schema's metadata (`EVENTS_METADATA`)."""
    events, columns = change_events.read_loosely(buffer, columns, _schema_of, [change_events.as_text], ("data", "old"))
    kinds = events.column("type").combine_chunks()
    names = change_events.table_name(events.column("database").combine_chunks(), events.column("table").combine_chunks())
    rows = pc.invert(pc.fill_null(pc.is_in(kinds, pa.array(_MARKERS)), False)).to_numpy(zero_copy_only=False)
    kept = np.flatnonzero(rows)
    events = events.take(pa.array(kept)) if len(kept) < len(kinds) else events
    op = pc.fill_null(kinds.take(pa.array(kept)), "?")
    op = change_events.op_codes(op, _OPS)
    data = events.column("data").combine_chunks()
    old = events.column("old").combine_chunks()
    table = change_events.without_negative_zeros(change_rows(
        op, _before(op, data, old), pc.if_else(pc.equal(op, "d"), pa.nulls(len(op), data.type), data), columns,
        kind_column, event_column, keys, partitioned, partial))
    table = table.set_column(table.schema.get_field_index(event_column), event_column,
                             pa.array(kept).take(table.column(event_column)))
    return change_events.with_sources(table, names, event_column).replace_schema_metadata(
        {EVENTS_METADATA: str(len(kinds)).encode()})


def _schema_of(columns: list[Column]) -> pa.Schema:
    image = pa.struct([pa.field(c.name, c.wire) for c in columns if c.wire is not None])
    return pa.schema([("type", pa.string()), ("data", image), ("old", image), ("database", pa.string()),
                      ("table", pa.string())])


def _before(op: pa.Array, data: pa.StructArray, old: pa.StructArray) -> pa.StructArray:
    """The row before the change: a delete's data; an update's data with its old values put
    back; none for inserts."""
    names = [f.name for f in data.type]
    news = dict(zip(names, data.flatten()))
    olds = dict(zip((f.name for f in old.type), old.flatten()))
    is_update = pc.equal(op, "u")
    fields = [pc.if_else(is_update, pc.coalesce(olds[n], news[n]), news[n]) if n in olds and olds[n].type == news[n].type
              else news[n] for n in names]
    present = pc.or_(pc.equal(op, "d"), is_update)
    return pa.StructArray.from_arrays(fields, names=names, mask=pc.invert(pc.and_(present, data.is_valid())))
