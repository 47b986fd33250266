"""AWS DMS's change records (its Kafka and Kinesis JSON messages, `aws-dms-json`) -> table rows
with their row kinds.

DMS writes one record per row operation::

    {"data": {"id": 105, "name": "hammer", "BI_id": 104},
     "metadata": {"timestamp": "2024-10-27T12:39:03.210671Z", "record-type": "data",
                  "operation": "update", "partition-key-type": "schema-table",
                  "schema-name": "shop", "table-name": "items", "transaction-id": 670014899490}}

`operation` load (the full load) and insert upsert `data`, update upserts it, delete deletes it.
With DMS's before image on (`BeforeImageSettings`, or a table mapping's `before-image-def`),
an update also carries the previous values as `BI_`-prefixed fields (DMS's default prefix, the
one Paimon's CDC reads); when they hold other values of the table's key, the old key is deleted
too (a row that moved, or whose key changed). Without them such a move cannot be seen, so a
partitioned table refuses an update lacking the before image of its key columns. Control
records (`record-type` control: create-table, add-column, ...) carry no row and are skipped,
except drop-table and truncate-table, whose effect a table that skipped them would lack: those
are undecodable records.

Numbers and DECIMALs arrive as JSON numbers (or text), dates, times and timestamps as text. As
Paimon's parser takes every value as text, a STRING, BOOLEAN or number column takes any JSON
value as its text, cast to the column's type (`change_events.read_loosely`).
DMS writes a DATETIME's wall time with a trailing `Z`: a TIMESTAMP column takes its digits as
the wall time; a TIMESTAMP WITH LOCAL TIME ZONE needs the text's offset (or `Z`). Binary
columns are not decoded: DMS does not say how its JSON encodes them.
"""
from __future__ import annotations

from typing import Sequence

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from . import change_events
from .base64_columns import holds_binary
from .change_events import EVENTS_METADATA, Column, change_rows

FORMAT = "aws-dms-json"
BEFORE_PREFIX = "BI_"
_OPS = {"load": "r", "insert": "c", "update": "u", "delete": "d"}
_UNAPPLIED_CONTROL = ("drop-table", "truncate-table")
_METADATA = pa.struct([("record-type", pa.string()), ("operation", pa.string()), ("schema-name", pa.string()),
                       ("table-name", pa.string())])


def encoding_of(t: pa.DataType) -> str:
    """How the format writes a value of a column of type `t` (change_events.Column)."""
    if holds_binary(t):
        return "dms-binary"
    if pa.types.is_timestamp(t) and t.tz is None:
        return "wall-text"
    if pa.types.is_timestamp(t) or pa.types.is_date(t) or pa.types.is_time(t):
        return "text"
    return "plain"


def row_image(value: bytes | None) -> dict | None:
    """The row a data record carries, without an update's before image (None for control
    records): only updates carry one, so a load's or insert's `BI_` fields are columns."""
    operation = (change_events.row_object(value, "metadata") or {}).get("operation")
    data = change_events.row_object(value, "data") if operation in _OPS else None
    if not data:
        return None
    return {k: v for k, v in data.items() if operation != "update" or not _before_image_of(k, data)}


def _before_image_of(name: str, fields) -> bool:
    """Whether field `name` of an update is the before image of another of its `fields`: BI_x
    beside x (DMS's before image; a column named BI_... with no column it is the image of is
    data)."""
    return name.startswith(BEFORE_PREFIX) and name[len(BEFORE_PREFIX):] in fields


def parse_events(buffer: bytes, columns: list[Column], kind_column: str, event_column: str,
                 keys: Sequence[str] = (), partitioned: bool = False, partial: bool = False) -> pa.Table:
    """Newline-delimited DMS records -> rows as `change_events.change_rows` makes them, the
    number of records in the schema's metadata (`EVENTS_METADATA`)."""
    def schema_of(columns: list[Column]) -> pa.Schema:
        wire = {c.name: c.wire for c in columns if c.wire is not None}
        image = pa.struct([pa.field(n, t) for n, t in wire.items()] + [
            pa.field(BEFORE_PREFIX + k, wire[k]) for k in keys if k in wire and BEFORE_PREFIX + k not in wire])
        return pa.schema([("metadata", _METADATA), ("data", image)])
    events, columns = change_events.read_loosely(
        buffer, columns, schema_of, [change_events.as_text], ("data",), closed=("metadata",),
        also=lambda name: (BEFORE_PREFIX + name,) if name in keys else ())
    meta = events.column("metadata").combine_chunks()
    record_type, operation = meta.field("record-type"), meta.field("operation")
    control = pc.fill_null(pc.and_(meta.is_valid(), pc.not_equal(record_type, "data")), False)
    unapplied = pc.and_(control, pc.is_in(operation, pa.array(_UNAPPLIED_CONTROL)))
    kept = np.flatnonzero(~control.to_numpy(zero_copy_only=False) | unapplied.to_numpy(zero_copy_only=False))
    op = change_events.op_codes(operation.take(pa.array(kept)), _OPS)
    data = events.column("data").combine_chunks().take(pa.array(kept))
    after = _without_before_image(data, pc.equal(op, "u"), {c.name for c in columns})
    table = change_events.without_negative_zeros(change_rows(
        op, _before(op, data, after, keys, partitioned), after, columns, kind_column, event_column, keys, partitioned,
        partial))
    table = table.set_column(table.schema.get_field_index(event_column), event_column,
                             pa.array(kept).take(table.column(event_column)))
    names = change_events.table_name(meta.field("schema-name"), meta.field("table-name"))
    return change_events.with_sources(table, names, event_column).replace_schema_metadata(
        {EVENTS_METADATA: str(len(meta)).encode()})


def _without_before_image(data: pa.StructArray, is_update: pa.Array, columns: set[str]) -> pa.StructArray:
    """The row each record holds: its fields less an update's before image (`_before_image_of`;
    as Paimon's CDC, only updates carry one: a load's or insert's BI_ fields are data). Such a
    field stays (null in updates) where it is a table column or data of other records."""
    names = data.type.names
    fields, arrays = [], []
    for f in data.type:
        values = data.field(f.name)
        if _before_image_of(f.name, names):
            values = pc.if_else(is_update, pa.scalar(None, f.type), values)
            if f.name not in columns and values.null_count == len(values):
                continue  # only the before image of updates: no column
        fields.append(f)
        arrays.append(values)
    return pa.StructArray.from_arrays(arrays, fields=fields, mask=data.is_null() if data.null_count else None)


def _before(op: pa.Array, data: pa.StructArray, after: pa.StructArray, keys: Sequence[str],
            partitioned: bool) -> pa.StructArray:
    """The row before the change: a delete's data; an update's data with the before image's
    key values put back (none when the record lacks one of them: the key is taken as unchanged,
    which a partitioned table cannot risk); none for inserts."""
    names = [f.name for f in after.type]
    has_image = pc.and_(pc.equal(op, "u"), data.is_valid())
    for k in keys:
        prior = BEFORE_PREFIX + k
        has_image = pc.and_(has_image, data.field(prior).is_valid() if prior in data.type.names else False)
    lacking = pc.and_(pc.equal(op, "u"), pc.invert(has_image))
    if partitioned and pc.any(lacking).as_py():
        missing = [k for k in keys if BEFORE_PREFIX + k not in data.type.names
                   or data.field(BEFORE_PREFIX + k).null_count]
        raise ValueError(f"an update without the before image of key columns {missing}, into a partitioned table: "
                         "a row moving to another partition could not be deleted from the old one (turn on DMS's "
                         f"before image with every key column, `{BEFORE_PREFIX}` prefix)")
    fields = [pc.if_else(has_image, data.field(BEFORE_PREFIX + n), after.field(n))
              if n in keys and BEFORE_PREFIX + n in data.type.names else after.field(n) for n in names]
    present = pc.or_(pc.equal(op, "d"), has_image)
    return pa.StructArray.from_arrays(fields, names=names, mask=pc.invert(pc.and_(present, data.is_valid())))
