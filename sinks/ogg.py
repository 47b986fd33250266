"""Oracle GoldenGate's change records (its JSON formatter in operation mode, `ogg-json`) ->
table rows with their row kinds.

GoldenGate writes one record per row operation::

    {"table": "SHOP.ITEMS", "op_type": "U", "op_ts": "2024-03-01 10:00:00.000000",
     "current_ts": "...", "pos": "...", "primary_keys": ["ID"], "before": {...}, "after": {...}}

`op_type` I inserts the `after` image, U updates to it (its `before` image shows a key that
moved, a row changing partitions), D deletes the `before` image; T (a truncate) is an
undecodable record, as Debezium's truncate events are (`change_events.change_rows`).

Values arrive as JSON numbers (DECIMALs too), booleans and text (dates, times and timestamps),
or all as text (the formatter's `treatAllColumnsAsStrings`): as Paimon's parser takes every
value as text, a STRING, BOOLEAN or number column takes any JSON value as its text, cast to the
column's type (`change_events.read_loosely`);
a TIMESTAMP WITH LOCAL TIME ZONE needs its text's offset (text without one is an undecodable
record, never read in some zone). Binary columns are not decoded: GoldenGate's JSON formatter
does not say how its text encodes them.
"""
from __future__ import annotations

from typing import Sequence

import pyarrow as pa

from .base64_columns import holds_binary
from . import change_events
from .change_events import Column, change_rows

FORMAT = "ogg-json"
_OPS = {"I": "c", "U": "u", "D": "d", "T": "t"}


def encoding_of(t: pa.DataType) -> str:
    """How the format writes a value of a column of type `t` (change_events.Column)."""
    if holds_binary(t):
        return "ogg-binary"
    if pa.types.is_timestamp(t) or pa.types.is_date(t) or pa.types.is_time(t):
        return "text"
    return "plain"


def row_image(value: bytes | None) -> dict | None:
    """The row a record carries (inserts' and updates' after image, deletes' before image)."""
    return change_events.row_object(value, "after") or change_events.row_object(value, "before")


def parse_events(buffer: bytes, columns: list[Column], kind_column: str, event_column: str,
                 keys: Sequence[str] = (), partitioned: bool = False, partial: bool = False) -> pa.Table:
    """Newline-delimited GoldenGate records -> `change_events.change_rows`."""
    events, columns = change_events.read_loosely(buffer, columns, _schema_of, [change_events.as_text],
                                                 ("before", "after"))
    op = change_events.op_codes(events.column("op_type").combine_chunks(), _OPS)
    rows = change_events.without_negative_zeros(change_rows(
        op, events.column("before").combine_chunks(), events.column("after").combine_chunks(), columns, kind_column,
        event_column, keys, partitioned, partial))
    return change_events.with_sources(rows, events.column("table").combine_chunks(), event_column)


def _schema_of(columns: list[Column]) -> pa.Schema:
    image = pa.struct([pa.field(c.name, c.wire) for c in columns if c.wire is not None])
    return pa.schema([("op_type", pa.string()), ("before", image), ("after", image), ("table", pa.string())])
