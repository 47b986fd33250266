"""Change events -> table rows with their row kinds: what the change-event formats share
(debezium.py, maxwell.py, canal.py, ogg.py, aws_dms.py parse them into before and after images).

Each column travels in an encoding (`Column`): its values as the format writes them (epoch
days, epoch milliseconds, base64, text, ...) are parsed as a "wire" Arrow type and decoded to
the column's type for a whole column at once; a value that does not fit its column (a wider
decimal, a lost fraction of a timestamp) is a ValueError naming the column, which the decoder
turns into an undecodable record. `change_rows` turns events (their op and images) into rows
of +I, +U and -D, deleting the old key of an update that moves a row between partitions.
"""
from __future__ import annotations

import io
import json
import math
from dataclasses import dataclass
from typing import Callable, Sequence

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.json as pajson

from paimon_streaming.datafile import rebased_offsets
from paimon_streaming.decimal_text import DecimalTextRefused, text_decimals
from paimon_streaming.java_casts import CastRefused, java_cast
from paimon_streaming.types import from_arrow, map_arrow_leaves, string
from paimon_streaming.write import check_decimals_fit
from paimon_streaming.zones import instants_of_wall_times
from . import json_decimals, json_maps, json_text
from .base64_columns import base64_decoded

_KINDS = {"c": "+I", "r": "+I", "u": "+U", "d": "-D"}
# what Debezium's Postgres connector writes for an unchanged TOASTed value it does not have
# (its `unavailable.value.placeholder` default)
UNAVAILABLE = "__debezium_unavailable_value"
EVENTS_METADATA = b"events"  # in a parsed chunk's schema metadata: how many records it came from
# encodings not decoded: why, for the record's error
_UNDECODABLE = {
    "time": "a TIME without the schema envelope: Debezium writes it in milliseconds or microseconds of the day "
            "by the source column's precision; enable value.converter.schemas.enable",
    "canal-zone": "a TIMESTAMP WITH LOCAL TIME ZONE, which Canal writes in the MySQL server's zone without "
                  "naming it; give that zone (--server-time-zone) or declare the column as TIMESTAMP (a wall time)",
    "canal-nested": "a nested type, which Canal's text does not carry",
    "ogg-binary": "binary, whose text GoldenGate's JSON formatter does not describe, not decoded here",
    "dms-binary": "binary, whose text AWS DMS's JSON messages do not describe, not decoded here",
}
EPOCH_UNITS = {"epoch-ms": "ms", "epoch-us": "us", "epoch-ns": "ns"}
VARIABLE_SCALE = ("variable-scale", "variable-scale-unscaled")
LOCAL_TEXT = "local-text:"  # "local-text:Asia/Shanghai": wall-time text in that zone (Canal's TIMESTAMP)
ARRAY_PREFIX = "array:"  # "array:days": an ARRAY of days since the epoch (see `array_of`)
TIME_UNITS = {"time-ms": "ms", "time-us": "us", "time-ns": "ns"}
MS_PER_DAY = 86_400_000
# a DECIMAL sent as a JSON number (Debezium's decimal.handling.mode=double): read from its text
# with room for any column's digits either side of the point, so a misfit is named by column
JSON_NUMBER_DECIMAL = pa.decimal256(76, 38)
SOURCE_COLUMN = "_source_table"  # parsed rows: the source table their event names (source_tables.py)


@dataclass(frozen=True)
class Column:
    """One column as a change event carries it: the encoding and the Arrow type to parse it as."""

    name: str
    encoding: str  # plain, base64, bits(-bytes), days, epoch-*, zoned, time-*, decimal-bytes/-unscaled/-text/-double,
    #               variable-scale(-unscaled), text, wall-text (DMS's), utc-text (Maxwell's), iso-8859-1 (Canal's
    #               bytes), one of _UNDECODABLE, or "array:" and one of these (`array_of`)
    wire: pa.DataType | None  # None: not declared to the JSON reader (any JSON value; refused when not null)
    type: pa.DataType  # what it becomes: the table column's type, or a new column's
    # decimal-bytes/-unscaled (also as ARRAY elements): the scale the source's unscaled values are in
    # (its schema's), when not `type`'s; they are cast to `type` after, never read at the wrong scale
    scale: int | None = None

    @staticmethod
    def of(name: str, encoding: str, target: pa.DataType, scale: int | None = None) -> "Column":
        return Column(name, encoding, _wire_type(encoding, target), target, scale)


def columns_of(schema: pa.Schema, encoding_of: Callable[[pa.DataType], str]) -> list[Column]:
    """A table's columns, each in the encoding a format gives its type."""
    return [Column.of(f.name, encoding_of(f.type), f.type) for f in schema]


def op_codes(kinds: pa.Array, codes: dict[str, str]) -> pa.Array:
    """A format's operation names as Debezium's op codes (c, r, u, d); names it does not list
    stay as they are (nulls become "?"), for `change_rows` to refuse by name."""
    out = pc.fill_null(kinds, "?")
    for kind, code in codes.items():
        out = pc.if_else(pc.equal(kinds, kind), code, out)
    return out


def array_of(item_encoding: str) -> str:
    """The encoding of an ARRAY whose elements are in `item_encoding` (plain stays plain)."""
    return "plain" if item_encoding == "plain" else ARRAY_PREFIX + item_encoding


def _wire_type(encoding: str, target: pa.DataType) -> pa.DataType | None:
    if encoding.startswith(ARRAY_PREFIX):
        item = _wire_type(encoding[len(ARRAY_PREFIX):], target.value_type)
        return None if item is None else pa.list_(item)
    if encoding in ("base64", "decimal-bytes", "decimal-text", "zoned", "text", "wall-text", "utc-text", "iso-8859-1") \
            or encoding.startswith(LOCAL_TEXT):
        return pa.string() if encoding != "base64" else target  # base64_decoded maps binary leaves
    if encoding in ("decimal-unscaled", "bits-bytes"):
        return pa.binary()
    if encoding == "bits":  # Debezium's io.debezium.data.Bits in JSON: base64
        return pa.string()
    if encoding in VARIABLE_SCALE:  # Debezium's VariableScaleDecimal: the value base64 in JSON, bytes in Avro
        return pa.struct([("scale", pa.int32()), ("value", pa.string() if encoding == "variable-scale" else pa.binary())])
    if encoding == "days":
        return pa.int32()
    if encoding in EPOCH_UNITS or encoding in TIME_UNITS:
        return pa.int64()
    if encoding in _UNDECODABLE:
        return None
    if encoding == "decimal-double":  # JSON: the JSON reader reads the number's text as the decimal it writes
        return JSON_NUMBER_DECIMAL
    # plain: nested wall times as text, cast after (the JSON reader would shift "00:00+02:00" to 22:00)
    return map_arrow_leaves(target, lambda t: pa.string() if pa.types.is_timestamp(t) and t.tz is None else t)


def wider(declared: pa.DataType, current: pa.DataType) -> bool:
    """Whether the source now declares a column wider than the table's (a widened INT, FLOAT,
    DECIMAL, or a finer TIMESTAMP upstream; Debezium's envelope, Canal's `mysqlType`): decoded
    as declared, the column's type differs from the table's and the table widens before the
    batch is written, as Paimon's CDC widens it."""
    ints = (pa.int8(), pa.int16(), pa.int32(), pa.int64())
    if declared in ints and current in ints:
        return ints.index(declared) > ints.index(current)
    if declared == pa.float64() and current == pa.float32():
        return True
    # a DATETIME(3) column becoming DATETIME(6) upstream (Timestamp -> MicroTimestamp): a finer
    # unit holds every value of the coarser one (Paimon's CDC widens TIMESTAMP precision too;
    # TIME columns are TIME(3) whatever the source's, as Paimon stores milliseconds of the day)
    units = ("s", "ms", "us", "ns")
    if pa.types.is_timestamp(declared) and pa.types.is_timestamp(current) and declared.tz == current.tz:
        return units.index(declared.unit) > units.index(current.unit)
    # a DECIMAL with at least the table's integer digits and scale holds every value of it (Paimon's
    # CDC widens a DECIMAL the source declares wider too; a narrower one is cast value by value)
    return pa.types.is_decimal(declared) and pa.types.is_decimal(current) and declared != current \
        and declared.scale >= current.scale and \
        declared.precision - declared.scale >= current.precision - current.scale


def with_new_fields(parsed: pa.DataType, declared: pa.DataType) -> pa.DataType:
    """`declared`, with the fields the `parsed` ROW values (in ROWs, ARRAY elements and MAP
    values too, which a schema change adds to as Java's does) carry beyond it, as parsed; fields
    whose values tell no type (only nulls, empty ARRAYs or ROWs) are left out. Casting to it
    keeps them, where a cast to `declared` would drop them without a word (Arrow's struct cast
    drops the fields its target lacks): the column then differs from the table's and is
    reported as wider, so the table evolves to hold them."""
    if pa.types.is_list(parsed) and pa.types.is_list(declared):
        return pa.list_(declared.value_field.with_type(with_new_fields(parsed.value_type, declared.value_type)))
    if pa.types.is_map(parsed) and pa.types.is_map(declared):
        return pa.map_(declared.key_field, declared.item_field.with_type(with_new_fields(parsed.item_type,
                                                                                         declared.item_type)))
    if not (pa.types.is_struct(parsed) and pa.types.is_struct(declared)):
        return declared
    names = {f.name for f in declared}
    fields = [f.with_type(with_new_fields(parsed.field(parsed.get_field_index(f.name)).type, f.type))
              if parsed.get_field_index(f.name) >= 0 else f for f in declared]
    return pa.struct(fields + [f for f in parsed if f.name not in names and typed(f.type)])


def typed(t: pa.DataType) -> bool:
    """Whether values of type `t` tell a type: not only nulls, nor ARRAYs of such (`[]`), nor
    ROWs of nothing else (`{}`), which no column type could be made of."""
    if pa.types.is_null(t):
        return False
    if pa.types.is_list(t) or pa.types.is_large_list(t):
        return typed(t.value_type)
    return any(typed(f.type) for f in t) if pa.types.is_struct(t) else True


def without_untyped(t: pa.DataType) -> pa.DataType | None:
    """`t` without its parts whose values tell no type (`typed`); None when nothing is left."""
    if not typed(t):
        return None
    if pa.types.is_list(t):
        return pa.list_(t.value_field.with_type(without_untyped(t.value_type)))
    if pa.types.is_struct(t):
        return pa.struct([f.with_type(without_untyped(f.type)) for f in t if typed(f.type)])
    return t


def inferred_column_type(t: pa.DataType) -> pa.DataType | None:
    """The column type of a field pyarrow inferred from JSON values: `without_untyped`, with
    timestamps it read from whole-second ISO text (TIMESTAMP(0)) as microseconds, Spark's
    TIMESTAMP, so that a later value with a fraction of a second fits."""
    kept = without_untyped(t)
    return None if kept is None else map_arrow_leaves(
        kept, lambda leaf: pa.timestamp("us", leaf.tz) if pa.types.is_timestamp(leaf) and leaf.unit in ("s", "ms")
        else leaf)


def untyped_value(values: pa.Array | pa.ChunkedArray, declared: pa.DataType | None, path: str) -> str | None:
    """The path of a value in `values` (parsed JSON, fields inferred) that no column could hold
    yet: an empty ARRAY, a ROW of no typed field (`{}`, `{"k": null}`), where `declared` (the
    column's type; None: no column) has no type for it. Leaving such a field out would store null
    for the record's `[]` or `{}`; nulls alone tell nothing and are no such value."""
    t = values.type
    if declared is not None and t == declared:  # read as the column's type (no field beyond it): nothing to look at
        return None
    if isinstance(values, pa.ChunkedArray):
        return next((p for chunk in values.chunks if (p := untyped_value(chunk, declared, path))), None)
    if not typed(t):
        return path if declared is None and values.null_count < len(values) else None
    if pa.types.is_struct(t):
        children = values.flatten()  # with the parent's nulls
        for f, child in zip(t, children):
            inner = declared.field(f.name).type if declared is not None and pa.types.is_struct(declared) \
                and declared.get_field_index(f.name) >= 0 else None
            if (found := untyped_value(child, inner, f"{path}.{f.name}")) is not None:
                return found
        return None
    if pa.types.is_list(t) or pa.types.is_large_list(t):
        inner = declared.value_type if declared is not None and pa.types.is_list(declared) else None
        return untyped_value(values.flatten(), inner, f"{path}[]")
    return None


def refuse_untyped(table: pa.Table, schema: pa.Schema) -> None:
    """ValueError naming the field when `table` (parsed JSON) holds an `untyped_value`."""
    for name, column in zip(table.column_names, table.columns):
        found = untyped_value(column, schema.field(name).type if name in schema.names else None, name)
        if found is not None:
            raise ValueError(f"field '{found}' holds an empty array or object (or one of only nulls), which tells no "
                             "type for a column the table lacks: add the column with its type (paimon-streaming "
                             "alter; --schema for a new table), never stored as null")


def table_name(prefix: pa.Array, name: pa.Array) -> pa.Array:
    """`prefix.name` (a source table's qualified name), or `name` where the prefix is missing
    or empty; null where `name` is."""
    bare = pc.fill_null(pc.equal(prefix, ""), True)
    return pc.if_else(bare, name, pc.binary_join_element_wise(prefix, name, "."))


def row_object(value: bytes | None, *path: str) -> dict | None:
    """The JSON object at `path` in a record (a row image), None where there is none: a new
    table's columns are inferred from these for formats whose records name no types."""
    try:
        found = json.loads(value) if value is not None else None
    except ValueError:
        return None
    for name in path:
        found = found.get(name) if isinstance(found, dict) else None
    return found if isinstance(found, dict) and found else None


def with_sources(rows: pa.Table, names: pa.Array, event_column: str) -> pa.Table:
    """Parsed rows with the source table of each one's event (`names`: one per parsed event)."""
    return rows.append_column(SOURCE_COLUMN, names.take(rows.column(event_column)))


def floats_as_doubles(schema: pa.Schema) -> pa.Schema:
    """`schema` with FLOAT leaves read as DOUBLE (see `floats_in_range`)."""
    return pa.schema([f.with_type(map_arrow_leaves(f.type, lambda t: pa.float64() if t == pa.float32() else t))
                      for f in schema])


def floats_in_range(table: pa.Table, buffer: bytes, read_wide: Callable[[], pa.Table]) -> pa.Table:
    """`table` (parsed from the JSON lines of `buffer`), or a ValueError when a FLOAT or DOUBLE
    value is infinite where the record's number is finite: pyarrow's JSON reader rounds a number
    beyond the type's range to infinity (refusing only some beyond DOUBLE's, as 1e309). Only a
    chunk with an infinite value looks again, so the Infinity literal stays what it is: FLOAT's
    by reading the text again with FLOAT as DOUBLE (`read_wide`, `floats_as_doubles`; the values
    stay as read, rounded once from the text), DOUBLE's by reading the records' numbers in Python."""
    infinite = [(path, leaf) for path, leaf in _leaves(table)
                if leaf.null_count < len(leaf) and pc.any(pc.is_inf(leaf)).as_py()]
    if infinite:
        wide = dict(_leaves(read_wide(), pa.float64()))
        for path, leaf in infinite:
            if pc.any(pc.and_(pc.is_inf(leaf), pc.is_finite(wide[path]))).as_py():
                raise ValueError(f"column '{path}' holds a number beyond the range of FLOAT (about 3.4e38), which "
                                 "would be infinity there; declare the column DOUBLE")
    # DOUBLE values, and FLOAT ones whose wide reading is infinite too (a number beyond DOUBLE's range)
    if infinite or any(leaf.null_count < len(leaf) and pc.any(pc.is_inf(leaf)).as_py()
                       for _, leaf in _leaves(table, pa.float64())):
        for line in buffer.split(b"\n"):
            if line.strip():
                json.loads(line, parse_float=_finite, parse_int=_finite)
    return table


def _finite(text: str) -> float:
    """A JSON number's text checked to be within DOUBLE's range (its value is not needed)."""
    if math.isinf(float(text)):
        raise ValueError(f"the number {text[:40]} is beyond the range of DOUBLE (about 1.8e308), which would be "
                         "infinity")
    return 0.0


def _leaves(table: pa.Table, kind: pa.DataType = pa.float32()) -> list[tuple[str, pa.Array]]:
    """(path, values) of each leaf of type `kind` in `table`'s columns, nested ones flattened."""
    out = []

    def walk(path: str, array: pa.Array, t: pa.DataType) -> None:
        if t == kind:
            out.append((path, array))
        elif pa.types.is_struct(t):
            for i in range(t.num_fields):
                walk(f"{path}.{t.field(i).name}", array.field(i), t.field(i).type)
        elif pa.types.is_list(t):
            walk(f"{path}[]", array.flatten(), t.value_type)
        elif pa.types.is_map(t):
            walk(f"{path}{{}}", array.items, t.item_type)
    for name, column in zip(table.column_names, table.columns):
        walk(name, column.combine_chunks(), column.type)
    return out


def read_events(buffer: bytes, schema: pa.Schema, closed: Sequence[str] = (), one_by_one: bool = True) -> pa.Table:
    """The columns `schema` names of newline-delimited JSON events; fields it does not name are
    inferred (new columns inside the images), except inside the `closed` columns (records such
    as Debezium's `source`, of which only the named fields are read). When only inferred fields
    conflict between events (a connector's `source` or `ts` changing type is nothing to us), the
    events are read one by one (`one_by_one`), keeping the named columns (the error path only)."""
    def read_json(text: bytes, explicit: pa.Schema) -> pa.Table:
        return pajson.read_json(
            io.BytesIO(text), read_options=pajson.ReadOptions(block_size=max(len(text), 1 << 20)),
            parse_options=pajson.ParseOptions(explicit_schema=explicit, unexpected_field_behavior="infer"))

    def parsed(text: bytes, explicit: pa.Schema) -> pa.Table:
        return json_maps.read(text, explicit, json_decimals.exact(read_json)).select(schema.names)

    def read(text: bytes) -> pa.Table:
        table = floats_in_range(parsed(text, schema), text, lambda: parsed(text, floats_as_doubles(schema)))
        for name in closed:
            table = table.set_column(schema.get_field_index(name), name, table.column(name).cast(schema.field(name).type))
        return table
    try:
        return read(buffer)
    except pa.ArrowInvalid:
        lines = [line for line in buffer.split(b"\n") if line.strip()]
        if len(lines) < 2 or not one_by_one:
            raise
        return pa.concat_tables([read(line + b"\n") for line in lines], promote_options="permissive")


def read_loosely(buffer: bytes, columns: list[Column], schema_of: Callable[[list[Column]], pa.Schema],
                 loosenings: Sequence[Callable[[Column], Column]], images: Sequence[str],
                 also: Callable[[str], Sequence[str]] = lambda name: (), closed: Sequence[str] = (),
                 nested: bool = True, text_encodings: Sequence[str] = ("text",)) -> tuple[pa.Table, list[Column]]:
    """`read_events` of the records as `schema_of(columns)`; when the JSON reader refuses them
    (a value not of the JSON type its column's encoding reads: a number in a STRING column,
    text in a BIGINT one), as `schema_of` the columns each of `loosenings` makes, in turn (the
    vectorized path stays the common one). The values of columns a loosening reads as text
    (those whose encoding is one of `text_encodings`, and the fields `also` names for them, such
    as DMS's before image) are rewritten to Paimon's CDC text of them (`json_text.rewritten`),
    so that any JSON value reaches the column as its text. Returns the events and the columns
    they are in."""
    attempts: list[tuple[list[Column], tuple[str, ...]]] = [(columns, ())]
    for loosen in loosenings:
        loose = [loosen(c) for c in columns]
        texts = tuple(n for c in loose if c.encoding in text_encodings for n in (c.name, *also(c.name)))
        if (texts or loose != columns) and (loose, texts) not in attempts:
            attempts.append((loose, texts))
    first = None
    for i, (tried, texts) in enumerate(attempts):
        last = i == len(attempts) - 1
        try:
            text = json_text.rewritten(buffer, images, texts, nested) if texts else buffer
        except ValueError:  # no JSON: the reader's error says where
            raise first from None
        try:
            return read_events(text, schema_of(tried), closed, one_by_one=last), tried
        except pa.ArrowInvalid as exc:
            first = first or exc
            if last:
                raise


def without_negative_zeros(table: pa.Table) -> pa.Table:
    """Rows of a format whose values Paimon's parser reads as BigDecimal text (Maxwell,
    GoldenGate, AWS DMS; `json_text`): a BigDecimal has no negative zero, so Java stores -0.0
    (or -0) in a FLOAT or DOUBLE column as 0.0, where the JSON reader keeps the sign."""
    for i, f in enumerate(table.schema):
        if pa.types.is_floating(f.type):
            values = table.column(i)
            table = table.set_column(i, f, pc.if_else(pc.equal(values, 0), pa.scalar(0, f.type), values))
    return table


def as_text(c: Column) -> Column:
    """A column of a format whose parser in Paimon takes every value as text (Maxwell,
    GoldenGate, AWS DMS; `read_loosely`): a STRING, BOOLEAN or number column reads a value of
    any JSON type as its text, cast from it as Canal's text is."""
    t = c.type
    if c.encoding == "plain" and (pa.types.is_string(t) or pa.types.is_boolean(t) or pa.types.is_integer(t)
                                  or pa.types.is_floating(t) or pa.types.is_decimal(t)):
        return Column(c.name, "text", pa.string(), t)
    return c


def change_rows(op: pa.Array, before: pa.StructArray, after: pa.StructArray, columns: list[Column],
                kind_column: str, event_column: str, keys: Sequence[str] = (), partitioned: bool = False,
                partial: bool = False) -> pa.Table:
    """Events (their op, before and after images as wire values) -> rows of the columns, then
    the fields of the after image no column names (new fields, as parsed), their row kinds
    (+I, +U, -D) in `kind_column` and the event each row comes from in `event_column`;
    ValueError for an event that is not a row change.

    An update whose before image holds other values of the table's primary key `keys` (a row
    moving to another partition: the source's key stays, the table's includes the partition)
    also deletes the old key, in a -D row just before it. Without the before image such a move
    cannot be seen, so a `partitioned` table refuses updates that lack it.

    A value Debezium did not have (`UNAVAILABLE`: an unchanged TOASTed Postgres value) is refused
    naming its column, or with `partial` (a partial-update table, which keeps a column's stored
    value where a row brings null) written as null."""
    known = pc.fill_null(pc.is_in(op, pa.array(list(_KINDS))), False)
    if not known.to_numpy(zero_copy_only=False).all():
        bad = op[int(np.flatnonzero(~known.to_numpy(zero_copy_only=False))[0])].as_py()
        what = {"t": "a truncate", "m": "a message"}.get(bad, f"operation {bad!r}")
        raise ValueError(f"{what} event is not a row change: not applied (a table that skipped it would "
                         "differ from the source)")
    is_delete = pc.equal(op, "d")
    missing = pc.if_else(is_delete, before.is_null(), after.is_null())
    if pc.any(missing).as_py():
        i = int(np.flatnonzero(missing.to_numpy(zero_copy_only=False))[0])
        raise ValueError(f"a '{op[i].as_py()}' event without its {'before' if op[i].as_py() == 'd' else 'after'} image")
    olds = dict(zip((f.name for f in before.type), before.flatten()))
    news = dict(zip((f.name for f in after.type), after.flatten()))
    n = len(op)
    names, arrays = [], []
    for c in columns:
        old, new = olds.get(c.name), news.get(c.name)
        if old is None or new is None or old.type != new.type:  # undeclared fields: where some event has them
            raw = new if new is not None else (old if old is not None else pa.nulls(n))
        else:
            raw = pc.if_else(is_delete, old, new)
        names.append(c.name)
        arrays.append(_without_placeholders(c.name, _decoded(c, raw), partial))
    for name, values in news.items():  # fields the source added that no column or envelope names
        if name not in names:
            refuse_untyped(pa.table({name: values}), pa.schema([]))
            if name in (kind_column, event_column, SOURCE_COLUMN) and values.null_count < len(values):
                raise ValueError(f"field '{name}' of the row is a name ingest keeps for itself (row kinds, events, "
                                 "source tables): rename the source column, or leave it out of the capture")
            names.append(name)
            arrays.append(values)
    kinds = pc.if_else(is_delete, "-D", pc.if_else(pc.equal(op, "u"), "+U", "+I"))
    rows = pa.Table.from_arrays(arrays + [kinds, pa.array(np.arange(n))], names + [kind_column, event_column])
    for k in keys:  # here, where each row is its event's (a moved row adds one below)
        if rows.column(k).null_count:
            raise ValueError(f"null primary key {list(keys)}")
    is_update = pc.equal(op, "u").to_numpy(zero_copy_only=False)
    rows = rows.replace_schema_metadata({EVENTS_METADATA: str(n).encode()})
    if not keys or not is_update.any():
        return rows
    has_before = before.is_valid().to_numpy(zero_copy_only=False)
    if partitioned and (is_update & ~has_before).any():
        raise ValueError("an update without its before image, into a partitioned table: a row moving to another "
                         "partition could not be deleted from the old one (Postgres: set REPLICA IDENTITY FULL)")
    by_name = {c.name: c for c in columns}
    moved = np.zeros(n, bool)
    for k in keys:
        if k in olds and k in by_name:
            differs = pc.not_equal(_decoded(by_name[k], olds[k]), rows.column(k))
            moved |= pc.fill_null(differs, False).to_numpy(zero_copy_only=False)
    moved &= is_update & has_before
    if not moved.any():
        return rows
    idx = pa.array(np.flatnonzero(moved))
    rows = rows.set_column(len(names), kind_column, pc.if_else(pa.array(moved), "+I", rows.column(kind_column)))
    old_rows = pa.Table.from_arrays(
        [_decoded(by_name[f.name], olds[f.name].take(idx)) if f.name in olds and f.name in by_name
         else pa.nulls(len(idx), f.type) for f in list(rows.schema)[:len(names)]]
        + [pa.array(["-D"] * len(idx), pa.string()), idx.cast(pa.int64())], schema=rows.schema)
    order = np.argsort(np.concatenate([2 * np.arange(n) + 1, 2 * np.flatnonzero(moved)]), kind="stable")
    return pa.concat_tables([rows, old_rows]).take(pa.array(order)).replace_schema_metadata(rows.schema.metadata)


def _without_placeholders(name: str, values: pa.Array, partial: bool) -> pa.Array:
    if not (pa.types.is_string(values.type) or pa.types.is_binary(values.type)):
        return values
    placeholder = pc.fill_null(pc.equal(values, pa.scalar(UNAVAILABLE.encode() if pa.types.is_binary(values.type)
                                                              else UNAVAILABLE, values.type)), False)
    if not pc.any(placeholder).as_py():
        return values
    if not partial:
        raise ValueError(f"column '{name}' is '{UNAVAILABLE}': the source did not send its value (an unchanged "
                         "TOASTed Postgres value); set REPLICA IDENTITY FULL on the source table, or ingest into a "
                         "table with merge-engine partial-update, which keeps the stored value")
    return pc.if_else(placeholder, pa.nulls(len(values), values.type), values)


def _decoded(c: Column, raw: pa.Array) -> pa.Array:
    """One column's wire values -> values of its type (ValueError naming the column when one
    does not fit)."""
    try:
        value = _natural(c, raw)
        if pa.types.is_timestamp(value.type) and pa.types.is_timestamp(c.type) and \
                (value.type.tz is None) != (c.type.tz is None):
            raise ValueError(f"column '{c.name}' is a TIMESTAMP {'WITH' if c.type.tz else 'WITHOUT'} LOCAL TIME ZONE "
                             f"but Debezium sends {'a wall time' if value.type.tz is None else 'an instant'} "
                             f"({c.encoding}); declare the column as the source's type")
        if value.type != c.type:  # new fields inside ROWs kept (and reported): never cast away
            value = pc.cast(value, with_new_fields(value.type, c.type) if c.encoding == "plain" else c.type, safe=True)
        if pa.types.is_floating(c.type) and pa.types.is_string(raw.type) and pc.any(pc.and_(
                pc.is_inf(value), pc.invert(pc.match_substring_regex(raw, r"(?i)^[+-]?inf(inity)?$")))).as_py():
            raise ValueError(f"column '{c.name}' has a number beyond the range of {c.type}, which would be infinity")
        check_decimals_fit(c.name, value)
        return value
    except (pa.ArrowInvalid, pa.ArrowNotImplementedError, pa.ArrowTypeError) as exc:
        raise ValueError(f"column '{c.name}' ({c.encoding} in the change events) does not fit {c.type}: {exc}") from None


def _natural(c: Column, raw: pa.Array) -> pa.Array:
    """The values an encoding stands for, in their own Arrow type."""
    e = c.encoding
    if c.wire is None:  # not decoded here (_UNDECODABLE): only nulls pass
        if raw.null_count < len(raw):
            element = e.split(ARRAY_PREFIX)[-1]
            raise ValueError(f"column '{c.name}' is {'an ARRAY of ' if element != e else ''}{_UNDECODABLE[element]}")
        return pa.nulls(len(raw), c.type)
    if e == "plain":
        return raw
    if e.startswith(ARRAY_PREFIX):  # the elements of all rows decoded at once, the lists rebuilt over them
        offsets, start = rebased_offsets(raw)
        element = Column.of(f"{c.name}[]", e[len(ARRAY_PREFIX):], c.type.value_type, c.scale)
        values = _decoded(element, raw.values.slice(start, offsets[-1].as_py()))
        return pa.ListArray.from_arrays(offsets, values, type=c.type, mask=raw.is_null() if raw.null_count else None)
    if e == "text" and pa.types.is_time(c.type):  # "05:33:37.5": a time of the epoch's first day, cut to ms
        stamps = pc.binary_join_element_wise("1970-01-01 ", raw, "").cast(pa.timestamp("ns"))
        return pc.divide(stamps.cast(pa.int64()), 1_000_000).cast(pa.int32()).cast(pa.time32("ms"))
    if e == "text" and pa.types.is_integer(c.type):  # Arrow's cast also takes hex ("0x10"), which MySQL reads as 0
        if pc.any(pc.invert(pc.match_substring_regex(raw, r"^-?[0-9]+$"))).as_py():
            raise ValueError(f"column '{c.name}' has text that is no decimal integer")
        return raw
    if e == "text" and (pa.types.is_boolean(c.type) or pa.types.is_decimal(c.type)):
        return java_cast_text(c, raw)
    if e == "text":
        return raw  # cast to the column's type below
    if e == "wall-text":  # DMS's DATETIME: the wall time's digits, then a "Z" it appends
        return pc.replace_substring_regex(raw, "Z$", "")
    if e == "utc-text":
        return pc.assume_timezone(raw.cast(pa.timestamp(_text_unit(c.type))), "UTC")
    if e.startswith(LOCAL_TEXT):  # an hour the zone repeats or skips (daylight saving) names no one instant
        return instants_of_wall_times(raw.cast(pa.timestamp(_text_unit(c.type))), e[len(LOCAL_TEXT):], strict=True)
    if e == "base64":
        return base64_decoded(c.name, raw)
    if e == "iso-8859-1":
        return iso_8859_1_bytes(c.name, raw)
    if e == "days":
        return raw.cast(pa.date32())
    if e in EPOCH_UNITS:
        return raw.cast(pa.timestamp(EPOCH_UNITS[e]))
    if e == "zoned":
        return raw.cast(pa.timestamp(_text_unit(c.type), tz="UTC"))
    if e in TIME_UNITS:
        # Paimon keeps a TIME in milliseconds of the day: finer digits are cut, as Java's writers do.
        # A MySQL TIME outside 0-24h ('25:00:00', '-01:00:00') is the time of day it names on a
        # clock (01:00, 23:00): Paimon's Debezium CDC reads it as an instant's UTC time of day
        per_ms = {"ms": 1, "us": 1000, "ns": 1_000_000}[TIME_UNITS[e]]
        ms = np.floor_divide(raw.fill_null(0).to_numpy(zero_copy_only=False), per_ms) % MS_PER_DAY
        return pa.array(ms.astype(np.int32), pa.int32(), mask=raw.is_null().to_numpy(zero_copy_only=False)) \
            .cast(pa.time32("ms"))
    if e in ("bits", "bits-bytes"):  # little-endian bytes of the bits, stored big-endian as Paimon's CDC does
        return reversed_bytes(base64_decoded(c.name, raw.cast(pa.binary())) if e == "bits" else raw.cast(pa.binary()))
    if e in ("decimal-bytes", "decimal-unscaled"):  # at the source's scale; cast to the column's (safely) after
        data = base64_decoded(c.name, raw.cast(pa.binary())) if e == "decimal-bytes" else raw.cast(pa.binary())
        if pa.types.is_string(c.type):  # wider than 38 digits (a STRING column): the decimal's text
            return _unscaled_decimals(c.name, data, pa.decimal256(76, c.scale or 0))
        if c.scale is None or not pa.types.is_decimal(c.type) or c.scale == c.type.scale:
            return _unscaled_decimals(c.name, data, c.type)
        return _unscaled_decimals(c.name, data, pa.decimal256(76, c.scale))  # a DECIMAL(65, 30)'s too
    if e in VARIABLE_SCALE:
        unscaled = raw.field("value") if e == "variable-scale-unscaled" else \
            base64_decoded(c.name, raw.field("value").cast(pa.binary()))
        return _variable_scale_decimals(c.name, raw.field("scale"), unscaled, raw.is_valid(), c.type)
    if e == "decimal-text":  # exactly: Arrow's cast of text wraps beyond the type
        if not pa.types.is_decimal(c.type):
            return raw
        try:
            return text_decimals(raw, c.type)
        except DecimalTextRefused as exc:
            raise ValueError(f"column '{c.name}' ({c.encoding} in the change events) does not fit {c.type}: {exc}") \
                from None
    if e == "decimal-double" and pa.types.is_decimal(raw.type):  # JSON: the number's text, read exactly
        # (a STRING column, one wider than 38 digits: the decimal's text at the source's scale)
        scale = c.type.scale if pa.types.is_decimal(c.type) else c.scale or 0
        kept = raw.cast(pa.decimal256(raw.type.precision, scale), safe=False)
        if pc.any(pc.invert(pc.fill_null(pc.equal(kept.cast(raw.type), raw), True))).as_py():
            raise ValueError(f"column '{c.name}' has a number with more digits than the scale of {c.type}")
        return kept  # its precision: checked by the cast to the column's type
    if e == "decimal-double":  # Avro's doubles
        exact = pc.cast(raw, pa.decimal128(38, c.type.scale), safe=False)  # precision: checked after
        if pc.any(pc.invert(pc.fill_null(pc.equal(exact.cast(pa.float64()), raw), True))).as_py():
            raise ValueError(f"column '{c.name}' has a double with more digits than the scale of {c.type}")
        return exact
    raise ValueError(f"column '{c.name}': unknown encoding {e!r}")


def java_cast_text(c: Column, raw: pa.Array) -> pa.Array:
    """Text into a BOOLEAN or DECIMAL column as Paimon's CDC casts it from STRING
    (`java_casts.java_cast`): t/true/y/yes/1 and f/false/n/no/0 in any case, a number rounded
    HALF_UP to the column's scale. A number then beyond the precision, which Java stores as null,
    is refused here, as is text Java's cast fails on."""
    text = raw.cast(pa.string())  # a typed JSON value Canal's new field was inferred as: its text
    target = from_arrow(c.type)
    try:
        if pa.types.is_decimal(c.type):
            out = text_decimals(text, c.type, half_up=True, beyond_null=True)
        else:
            out = java_cast(text, string(), target)
    except (CastRefused, DecimalTextRefused) as exc:
        raise ValueError(f"column '{c.name}' ({c.encoding} in the change events) does not fit {target}: {exc}") \
            from None
    if out.null_count > text.null_count:
        raise ValueError(f"column '{c.name}' has a number beyond {target}, rounded to its scale (Paimon's CDC "
                         "would store null for it)")
    return out


def reversed_bytes(values: pa.Array) -> pa.Array:
    """Each binary value's bytes in reverse order, in one numpy pass."""
    values, offsets, data = _binary_buffers(values)
    n = len(values)
    lengths = np.diff(offsets)
    rows = np.repeat(np.arange(n), lengths)
    position = np.arange(offsets[0], offsets[-1])
    flipped = data[(offsets[:-1] + offsets[1:] - 1)[rows] - position] if len(position) else data[:0]
    out = np.concatenate([data[:offsets[0]], flipped])
    return pa.Array.from_buffers(pa.binary(), n, [values.buffers()[0], values.buffers()[1], pa.py_buffer(out.tobytes())],
                                 null_count=values.null_count)


def _binary_buffers(values: pa.Array) -> tuple[pa.Array, np.ndarray, np.ndarray]:
    """A binary array unsliced, with its int32 offsets and its data bytes as numpy views."""
    if values.offset:
        values = pa.concat_arrays([values])
    offsets = np.frombuffer(values.buffers()[1], np.int32, len(values) + 1)
    data = np.frombuffer(values.buffers()[2], np.uint8) if values.buffers()[2] is not None else np.zeros(0, np.uint8)
    return values, offsets, data


def _text_unit(t: pa.DataType) -> str:
    """The unit to parse timestamp text in for a column of type `t`: microseconds unless the
    column keeps nanoseconds (whose range, 1677-2262, would refuse other years)."""
    return "ns" if pa.types.is_timestamp(t) and t.unit == "ns" else "us"


def _unscaled_decimals(column: str, data: pa.Array, target: pa.DataType) -> pa.Array:
    """Kafka Connect's Decimal: each value the big-endian two's-complement bytes of the unscaled
    integer, placed into 16-byte little-endian decimal128 slots (32-byte decimal256 ones for a
    DECIMAL256 `target`) in one numpy pass."""
    if not pa.types.is_decimal(target):
        raise ValueError(f"column '{column}' holds Kafka Connect decimals but is {target}")
    width = target.byte_width
    digits = 38 if width == 16 else 76
    data, offsets, raw = _binary_buffers(data)
    n = len(data)
    lengths = np.diff(offsets)
    if ((lengths == 0) & data.is_valid().to_numpy(zero_copy_only=False)).any():
        raise ValueError(f"column '{column}' has a decimal of no bytes (Kafka Connect writes at least one)")
    has_bytes = lengths > 0
    first = np.where(lengths > width, offsets[1:] - width, offsets[:-1])  # the first of the bytes kept
    negative = np.zeros(n, bool)
    negative[has_bytes] = raw[first[has_bytes]] >= 0x80
    slots = np.zeros((n, width), np.uint8)
    slots[negative] = 0xFF  # sign extension
    rows = np.repeat(np.arange(n), lengths)
    from_end = np.repeat(offsets[1:], lengths) - np.arange(offsets[0], offsets[-1])  # 1 = the last byte
    values = raw[offsets[0]:offsets[-1]]
    beyond = from_end > width
    if beyond.any():  # more bytes than a slot: only a redundant sign extension of those kept (00 or FF) fits
        if (values[beyond] != np.where(negative, 0xFF, 0x00)[rows[beyond]]).any():
            raise ValueError(f"column '{column}' has a decimal wider than {digits} digits")
        rows, from_end, values = rows[~beyond], from_end[~beyond], values[~beyond]
    slots[rows, width - from_end] = values
    if ((slots[:, 0] == 0x80) & ~slots[:, 1:].any(axis=1)).any():  # -2**127: 39 digits, which Arrow's check misses
        raise ValueError(f"column '{column}' has a decimal wider than {digits} digits")
    little = np.ascontiguousarray(slots[:, ::-1])
    wide = pa.Array.from_buffers(pa.decimal128(38, target.scale) if width == 16 else pa.decimal256(76, target.scale),
                                 n, [data.buffers()[0], pa.py_buffer(little.tobytes())], null_count=data.null_count)
    narrowed = wide.cast(target, safe=False)
    check_decimals_fit(column, narrowed)
    return narrowed


def _variable_scale_decimals(column: str, scales: pa.Array, unscaled: pa.Array, valid: pa.Array,
                             target: pa.DataType) -> pa.Array:
    """Debezium's VariableScaleDecimal (Postgres NUMERIC without a declared scale): each value an
    unscaled integer and its own scale, placed as `target`'s decimals. The rows of each scale are
    rescaled at once; a value with more fraction digits than `target`'s scale, or more digits
    than its precision, is a ValueError (never rounded)."""
    if not pa.types.is_decimal(target):
        raise ValueError(f"column '{column}' holds variable-scale decimals but is {target}")
    # the values of null structs are no decimals (the JSON reader leaves them empty)
    whole = _unscaled_decimals(column, pc.if_else(valid, unscaled, pa.scalar(None, unscaled.type)), pa.decimal128(38, 0))
    present = (valid.to_numpy(zero_copy_only=False) & whole.is_valid().to_numpy(zero_copy_only=False)
               & scales.is_valid().to_numpy(zero_copy_only=False))
    scale_of = scales.fill_null(0).to_numpy(zero_copy_only=False)
    out = pa.nulls(len(whole), target)
    for scale in np.unique(scale_of[present]):
        rows = pa.array(present & (scale_of == scale))
        as_scaled = pa.Array.from_buffers(pa.decimal128(38, int(scale)), len(whole), whole.buffers())
        out = pc.replace_with_mask(out, rows, as_scaled.filter(rows).cast(target, safe=True))
    return out


def iso_8859_1_bytes(column: str, text: pa.Array) -> pa.Array:
    """Bytes written as ISO-8859-1 text (Canal's binary columns: a character per byte), back to
    those bytes in one numpy pass over the UTF-8 the text arrives as: characters U+0080-U+00FF
    are two bytes there (lead 0xC2/0xC3), the rest one. A character above U+00FF is no byte: a
    ValueError naming the column."""
    text = text.cast(pa.string())
    if text.offset:
        text = pa.concat_arrays([text])
    offsets = np.frombuffer(text.buffers()[1], np.int32, len(text) + 1)
    data = np.frombuffer(text.buffers()[2], np.uint8)[offsets[0]:offsets[-1]] if text.buffers()[2] is not None \
        else np.zeros(0, np.uint8)
    if (data >= 0xC4).any():
        raise ValueError(f"column '{column}' holds a character above U+00FF, which ISO-8859-1 text of bytes cannot")
    lead = np.flatnonzero(data >= 0xC2)
    out = data.copy()
    out[lead] = ((data[lead] & 0x03) << 6) | (data[lead + 1] & 0x3F)
    kept = (data & 0xC0) != 0x80  # continuation bytes fold into their lead
    ends = np.concatenate([[0], np.cumsum(kept, dtype=np.int64)])[offsets - offsets[0]].astype(np.int32)
    return pa.Array.from_buffers(pa.binary(), len(text), [text.buffers()[0], pa.py_buffer(ends.tobytes()),
                                                           pa.py_buffer(out[kept].tobytes())],
                                 null_count=text.null_count)
