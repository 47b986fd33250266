"""Canal's change messages (MySQL binlog as canal-json) -> table rows with their row kinds.

Canal writes one record per statement, holding every row it changed::

    {"data": [{"id": "1", "price": "1.20"}], "old": [{"price": "1.10"}], "type": "UPDATE",
     "isDdl": false, "pkNames": ["id"], "mysqlType": {"id": "int(11)", "price": "decimal(10,2)"},
     "database": "shop", "table": "items", "es": 1589373560000, "ts": 1589373560798}

Every value is text (a typed JSON value, as Flink's canal-json writes, is read as its text, a
BIT's number too; an object or array is refused: Paimon's parser stores Java's map text of it,
`{a=1}`, no JSON).
`data` holds the rows after an INSERT or UPDATE and the deleted rows of a DELETE; `old` the
previous values of the columns an UPDATE changed, row by row. The rows become those of
`change_events.change_rows`: INSERT and ROW (as Paimon's CDC reads it) +I, UPDATE +U (and a -D of the old key when `old`
shows the table's key changed), DELETE -D. DDL records are skipped (their columns reach the
table with later rows), except TRUNCATE and ERASE (a dropped table), whose effect a table that
skipped them would lack: those are undecodable records.

Text becomes each column's type as Paimon's CDC casts it (`change_events.java_cast_text`: a
BOOLEAN from yes or T, a DECIMAL rounded HALF_UP to the column's scale); ENUM values arrive as
their 1-based index and SET values as a bit mask, turned into labels (a SET's as a list in an
ARRAY<STRING> column, as `[a,b]` in a STRING one, as Paimon's CDC writes them) from the record's
`mysqlType`. A spatial column arrives as MySQL's internal geometry bytes (ISO-8859-1 text): kept
as those bytes in a binary column, refused in a STRING one, where Paimon's CDC writes GeoJSON. Binary columns arrive as ISO-8859-1 text, a character per byte
(Canal's `new String(bytes, ISO_8859_1)`), and become those bytes again. TIMESTAMP WITH LOCAL
TIME ZONE columns: Canal's text is in the MySQL server's zone, which it does not name; they are
read in the zone the decoder is given (`--server-time-zone`), else a record with such a value is
undecodable.
"""
from __future__ import annotations

import json
import re
import zoneinfo
from typing import Callable, Sequence

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from paimon_streaming.tzdb import zone_info

from . import change_events
from .change_events import EVENTS_METADATA, LOCAL_TEXT, Column, change_rows

FORMAT = "canal-json"
_OPS = {"INSERT": "c", "ROW": "c", "UPDATE": "u", "DELETE": "d"}  # ROW: Paimon's CDC inserts it
_UNAPPLIED_DDL = {"TRUNCATE": "a TRUNCATE", "ERASE": "a dropped table (ERASE)"}
_OPTION = re.compile(r"'((?:[^']|'')*)'")


def encoding_in(server_time_zone: str | None) -> Callable[[pa.DataType], str]:
    """How Canal writes a value of a column of each type: text, cast to the column's type; a
    TIMESTAMP WITH LOCAL TIME ZONE's text read in `server_time_zone` (without it: not decoded)."""
    def encoding_of(t: pa.DataType) -> str:
        if pa.types.is_timestamp(t) and t.tz is not None:
            return "canal-zone" if server_time_zone is None else LOCAL_TEXT + server_time_zone
        if pa.types.is_binary(t):
            return "iso-8859-1"
        return "canal-nested" if pa.types.is_nested(t) else "text"
    return encoding_of


def table_schema_of(value: bytes) -> pa.Schema | None:
    """A new table's columns from one record: a row message's `mysqlType` (None for a DDL
    message or a record that is no message; ValueError for a type not read here)."""
    try:
        message = json.loads(value)
    except ValueError:
        return None
    if not isinstance(message, dict) or message.get("isDdl") or not isinstance(message.get("mysqlType"), dict):
        return None
    return table_schema(message["mysqlType"])


def table_schema(mysql_types: dict[str, str]) -> pa.Schema:
    """A new table's columns from a record's `mysqlType` (column -> MySQL type, in table order),
    typed as Paimon's MySQL CDC types them (`MySqlTypeUtils`): TINYINT(1) BOOLEAN, unsigned
    integers one size up (BIGINT UNSIGNED DECIMAL(20, 0)), DECIMAL(p, s) up to 38 digits
    (wider: STRING; without precision DECIMAL(38, 18)), DATETIME and TIMESTAMP(p) TIMESTAMP(p),
    TIME, text types, JSON and ENUM STRING, SET ARRAY<STRING> (its labels), binary types BYTES.
    ValueError for a type not decoded here (spatial types), naming the column."""
    return pa.schema([(name, _mysql_type(name, declared)) for name, declared in mysql_types.items()])


_MYSQL_FIXED = {
    "BOOL": pa.bool_(), "BOOLEAN": pa.bool_(), "TINYINT": pa.int8(), "TINYINT UNSIGNED": pa.int16(),
    "SMALLINT": pa.int16(), "SMALLINT UNSIGNED": pa.int32(), "MEDIUMINT": pa.int32(), "MEDIUMINT UNSIGNED": pa.int64(),
    "INT": pa.int32(), "INTEGER": pa.int32(), "YEAR": pa.int32(), "INT UNSIGNED": pa.int64(),
    "INTEGER UNSIGNED": pa.int64(), "BIGINT": pa.int64(), "BIGINT UNSIGNED": pa.decimal128(20, 0),
    "SERIAL": pa.decimal128(20, 0), "LONG": pa.int64(), "FLOAT": pa.float32(), "FLOAT UNSIGNED": pa.float32(),
    "REAL": pa.float64(), "REAL UNSIGNED": pa.float64(), "DOUBLE": pa.float64(), "DOUBLE UNSIGNED": pa.float64(),
    "DOUBLE PRECISION": pa.float64(), "DOUBLE PRECISION UNSIGNED": pa.float64(), "DATE": pa.date32(),
    "TIME": pa.time32("ms"), "CHAR": pa.string(), "VARCHAR": pa.string(), "TINYTEXT": pa.string(),
    "TEXT": pa.string(), "MEDIUMTEXT": pa.string(), "LONGTEXT": pa.string(), "JSON": pa.string(),
    "ENUM": pa.string(), "SET": pa.list_(pa.string()), "BINARY": pa.binary(), "VARBINARY": pa.binary(),
    "TINYBLOB": pa.binary(), "BLOB": pa.binary(), "MEDIUMBLOB": pa.binary(), "LONGBLOB": pa.binary(),
}
_SPATIAL = ("GEOMETRY", "POINT", "LINESTRING", "POLYGON", "MULTIPOINT", "MULTILINESTRING", "MULTIPOLYGON",
            "GEOMETRYCOLLECTION", "GEOMCOLLECTION")
_MYSQL_TYPE = re.compile(r"^\s*([a-zA-Z]+(?:\s+[a-zA-Z]+)*?)\s*(?:\((.*)\))?((?:\s+[a-zA-Z]+)*)\s*$")


def _mysql_type(column: str, declared: str) -> pa.DataType:
    m = _MYSQL_TYPE.match(declared or "")
    if not m:
        raise ValueError(f"column '{column}' has MySQL type {declared!r}, not read here: pass --schema")
    base = " ".join(m.group(1).upper().split())
    kind = " ".join([base] + [w for w in m.group(3).upper().split() if w != "ZEROFILL"])
    args = [a.strip() for a in m.group(2).split(",")] if base not in ("ENUM", "SET") and m.group(2) else []
    if base in ("DECIMAL", "NUMERIC", "FIXED"):
        precision, scale = (int(args[0]), int(args[1]) if len(args) > 1 else 0) if args else (38, 18)
        return pa.decimal128(precision, scale) if precision <= 38 else pa.string()
    if base in ("DATETIME", "TIMESTAMP"):
        precision = int(args[0]) if args else 0
        return pa.timestamp("s" if precision == 0 else "ms" if precision <= 3 else "us")
    if base == "TINYINT" and args == ["1"] and kind == "TINYINT":
        return pa.bool_()
    if base == "BIT":
        return pa.bool_() if not args or args == ["1"] else pa.binary()
    if kind in _MYSQL_FIXED:
        return _MYSQL_FIXED[kind]
    raise ValueError(f"column '{column}' has MySQL type {declared!r}, not read here: pass --schema")


def check_zone(zone: str) -> None:
    """ValueError for a zone name the time zone database (Java's: tzdb.py) does not know."""
    try:
        zone_info(zone)
    except (zoneinfo.ZoneInfoNotFoundError, ValueError):
        raise ValueError(f"unknown time zone {zone!r}: give an IANA name such as UTC or Asia/Shanghai") from None


def parse_events(buffer: bytes, columns: list[Column], kind_column: str, event_column: str,
                 keys: Sequence[str] = (), partitioned: bool = False, partial: bool = False) -> pa.Table:
    """Newline-delimited Canal records -> rows as `change_events.change_rows` makes them, in record
    order, the number of records in the schema's metadata (`EVENTS_METADATA`)."""
    events, _ = change_events.read_loosely(buffer, columns, _schema_of, [lambda c: c], ("data", "old"), nested=False,
                                           text_encodings=("text", "iso-8859-1"))
    n = events.num_rows
    kinds = events.column("type").combine_chunks()
    ddl = pc.fill_null(events.column("isDdl").combine_chunks(), False).to_numpy(zero_copy_only=False)
    for kind, what in _UNAPPLIED_DDL.items():
        hit = ddl & pc.fill_null(pc.equal(kinds, kind), False).to_numpy(zero_copy_only=False)
        if hit.any():
            raise ValueError(f"{what} is not a row change: not applied (a table that skipped it would differ "
                             "from the source)")
    kept = np.flatnonzero(~ddl)
    data = events.column("data").combine_chunks().take(pa.array(kept))
    empty = pc.fill_null(pc.list_value_length(data), 0).to_numpy(zero_copy_only=False) == 0
    if empty.any():
        raise ValueError(f"a {kinds[int(kept[np.flatnonzero(empty)[0]])].as_py()} record without rows in 'data'")
    old = events.column("old").combine_chunks().take(pa.array(kept))
    types = events.column("mysqlType").combine_chunks().take(pa.array(kept))
    parents = pc.list_parent_indices(data).to_numpy(zero_copy_only=False)
    rows = pc.list_flatten(data)
    columns = _as_declared(columns, types, [f.name for f in rows.type])
    row_types = types.take(pa.array(parents))
    after = _labelled(rows, row_types, columns)
    before = _labelled(_old_rows(data, old, parents, rows), row_types, columns)
    op = kinds.take(pa.array(kept[parents]))
    op = change_events.op_codes(op, _OPS)
    is_update, is_delete = pc.equal(op, "u"), pc.equal(op, "d")
    before = _rows_where(pc.or_(is_update, is_delete), before)
    after = _rows_where(pc.invert(is_delete), after)
    table = change_rows(op, before, after, columns, kind_column, event_column, keys, partitioned, partial)
    events_of_rows = pa.array(kept[parents]).take(table.column(event_column))
    table = table.set_column(table.schema.get_field_index(event_column), event_column, events_of_rows)
    names = change_events.table_name(events.column("database").combine_chunks(), events.column("table").combine_chunks())
    return change_events.with_sources(table, names, event_column).replace_schema_metadata(
        {EVENTS_METADATA: str(n).encode()})


def _schema_of(columns: list[Column]) -> pa.Schema:
    image = pa.struct([pa.field(c.name, pa.string()) for c in columns if c.wire is not None])
    return pa.schema([("type", pa.string()), ("isDdl", pa.bool_()), ("data", pa.list_(image)), ("old", pa.list_(image)),
                      ("mysqlType", image), ("database", pa.string()), ("table", pa.string())])


def _old_rows(data: pa.ListArray, old: pa.ListArray, parents: np.ndarray, rows: pa.StructArray) -> pa.StructArray:
    """Each data row's previous values: its `old` entry (the same position in the record's
    list) over the row itself."""
    lengths = pc.fill_null(pc.list_value_length(old), 0).to_numpy(zero_copy_only=False)
    data_lengths = pc.fill_null(pc.list_value_length(data), 0).to_numpy(zero_copy_only=False)
    mismatch = (lengths > 0) & (lengths != data_lengths)
    if mismatch.any():
        raise ValueError("'old' does not hold one entry per row of 'data'")
    data_starts = np.concatenate([[0], np.cumsum(data_lengths)[:-1]]).astype(np.int64)
    old_starts = np.concatenate([[0], np.cumsum(lengths)[:-1]]).astype(np.int64)
    position = np.arange(len(parents)) - data_starts[parents]
    has_old = lengths[parents] > 0
    flat_old = pc.list_flatten(old)
    picked = flat_old.take(pa.array(np.where(has_old, old_starts[parents] + position, 0), mask=~has_old)) \
        if len(flat_old) else pa.nulls(len(parents), rows.type)
    names = [f.name for f in rows.type]
    olds = dict(zip((f.name for f in picked.type), picked.flatten())) if len(flat_old) else {}
    fields = [pc.coalesce(olds[n], v) if n in olds and olds[n].type == v.type else v
              for n, v in zip(names, rows.flatten())]
    return pa.StructArray.from_arrays(fields, names=names)


def _rows_where(keep: pa.Array, rows: pa.StructArray) -> pa.StructArray:
    """`rows` with the others null (the image an event does not have)."""
    return pa.StructArray.from_arrays(rows.flatten(), names=[f.name for f in rows.type],
                                      mask=pc.invert(pc.fill_null(keep, False)))


def _definitions(types: pa.StructArray) -> dict[str, list[str]]:
    """Each column's distinct `mysqlType` definitions among the messages."""
    return {f.name: pc.unique(values.drop_null()).to_pylist() for f, values in zip(types.type, types.flatten())
            if pa.types.is_string(values.type)}


def _as_declared(columns: list[Column], types: pa.StructArray, fields: Sequence[str]) -> list[Column]:
    """The columns as the messages' `mysqlType` declares them (Canal's text carries no type of
    its own). A column declared wider than the table's (`change_events.wider`: an INT become
    BIGINT, FLOAT DOUBLE, DECIMAL(8, 3) DECIMAL(10, 4), DATETIME(3) DATETIME(6) upstream) is decoded
    as declared, so the table widens before the batch is written, as Paimon's CDC widens it;
    other declared types are cast to the column's value by value (a DECIMAL rounded HALF_UP to
    its scale, as Paimon's CDC casts it; a value that does not fit is an undecodable record).
    Fields of the rows no column names (columns added upstream) are typed from `mysqlType` as a
    new table's are (`table_schema`), not left to the JSON reader's STRING. A binary column
    holding BIT(n > 1) values (Canal: the unsigned number's decimal text) is decoded to bytes by
    `_labelled`."""
    definitions = _definitions(types)
    encoding_of = encoding_in(None)  # the types _mysql_type makes have no zone
    out = []
    for c in columns:
        target = c.type
        for definition in definitions.get(c.name, ()):
            try:
                declared = _mysql_type(c.name, definition)
            except ValueError:
                continue  # a type not read here: its text is cast to the column's type
            if change_events.wider(declared, target):
                target = declared
        c = c if target == c.type else Column.of(c.name, encoding_of(target), target)
        out.append(_as_labelled(c, definitions.get(c.name, ())))
    known = {c.name for c in columns}
    for name in fields:
        if name in known or not definitions.get(name):
            continue  # no mysqlType for it: left to change_rows (as parsed)
        declared = [_mysql_type(name, definition) for definition in definitions[name]]
        target = declared[0]
        for t in declared[1:]:
            target = t if change_events.wider(t, target) else target
        out.append(_as_labelled(Column.of(name, encoding_of(target), target), definitions[name]))
    return out


def _as_labelled(c: Column, definitions: Sequence[str]) -> Column:
    """Column `c` as `_labelled` makes its values of these definitions: the bytes of BIT(n > 1)
    numbers in a binary column (`_bits_into`), the labels of SETs in an ARRAY<STRING> one; as
    it is otherwise."""
    sets = pa.types.is_list(c.type) and pa.types.is_string(c.type.value_type) and bool(definitions) and \
        all(_kind(d) == "set" for d in definitions)
    return Column.of(c.name, "plain", c.type) if sets or _bits_into(c, definitions) else c


def _kind(definition: str) -> str:
    """The lower-case type name of a `mysqlType` definition (set of "set('a','b')")."""
    return definition.split("(", 1)[0].strip().lower()


def _bit_width(definition: str) -> int | None:
    """n of a BIT(n) definition with n > 1 (None: another type, or BIT(1), a BOOLEAN)."""
    m = _MYSQL_TYPE.match(definition or "")
    if not m or m.group(1).strip().upper() != "BIT" or not m.group(2) or not m.group(2).strip().isdigit():
        return None
    n = int(m.group(2))
    return n if n > 1 else None


def _bits_into(c: Column, definitions: Sequence[str]) -> bool:
    """Whether binary column `c` holds BIT(n > 1) values among these definitions: its text
    (numbers, and ISO-8859-1 text of other definitions) becomes bytes in `_labelled`."""
    return pa.types.is_binary(c.type) and any(_bit_width(d) for d in definitions)


def _bit_bytes(column: str, width: int, text: pa.Array) -> pa.Array:
    """A BIT(width)'s values as Canal writes them (the unsigned number's decimal text; a BIT(64)
    with its top bit set maybe as a negative long) -> the big-endian bytes of the number,
    (width + 7) // 8 of them, as Paimon's MySQL CDC stores a BIT(n > 1) (BINARY((n + 7) / 8))."""
    if pc.any(pc.invert(pc.match_substring_regex(text, r"^-?[0-9]+$"))).as_py():
        raise ValueError(f"column '{column}' (BIT({width})) has text that is no number")
    negative = pc.fill_null(pc.starts_with(text, "-"), False)
    none = pa.scalar(None, pa.string())
    try:
        unsigned = pc.cast(pc.if_else(negative, none, text), pa.uint64())
        signed = pc.cast(pc.if_else(negative, text, none), pa.int64())
    except pa.ArrowInvalid:
        raise ValueError(f"column '{column}' (BIT({width})) has a number beyond 64 bits") from None
    numbers = np.where(negative.to_numpy(zero_copy_only=False),
                       signed.fill_null(0).to_numpy(zero_copy_only=False).view(np.uint64),
                       unsigned.fill_null(0).to_numpy(zero_copy_only=False))
    if width < 64 and (numbers >> np.uint64(width)).any():
        raise ValueError(f"column '{column}' holds a number beyond its BIT({width})")
    size = (width + 7) // 8
    data = numbers.astype(">u8").view(np.uint8).reshape(-1, 8)[:, 8 - size:]
    offsets = (np.arange(len(text) + 1) * size).astype(np.int32)
    values = pa.Array.from_buffers(pa.binary(), len(text), [None, pa.py_buffer(offsets.tobytes()),
                                                            pa.py_buffer(np.ascontiguousarray(data).tobytes())])
    return pc.if_else(text.is_valid(), values, pa.scalar(None, pa.binary()))


def _labelled(rows: pa.StructArray, types: pa.StructArray, columns: list[Column]) -> pa.StructArray:
    """ENUM indexes and SET bit masks as their labels, and the numbers of BIT(n > 1) columns
    (binary ones, `_bits_into`) as their bytes, by each row's `mysqlType`."""
    names = [f.name for f in rows.type]
    values = dict(zip(names, rows.flatten()))
    declared = dict(zip((f.name for f in types.type), types.flatten()))
    for c in columns:
        if c.name not in values or c.name not in declared or not pa.types.is_string(declared[c.name].type):
            continue
        if c.encoding == "plain" and pa.types.is_binary(c.type) and \
                (pa.types.is_string(values[c.name].type) or pa.types.is_integer(values[c.name].type)):
            text = values[c.name].cast(pa.string())  # a new field's typed numbers (inferred): their text
            bits = pa.nulls(len(text), pa.binary())
            is_bit = pa.array(np.zeros(len(text), bool))
            none = pa.scalar(None, pa.string())
            for definition in pc.unique(declared[c.name].drop_null()).to_pylist():
                width = _bit_width(definition)
                if width:
                    rows_of_it = pc.fill_null(pc.equal(declared[c.name], definition), False)
                    bits = pc.if_else(rows_of_it, _bit_bytes(c.name, width, pc.if_else(rows_of_it, text, none)), bits)
                    is_bit = pc.or_(is_bit, rows_of_it)
            others = change_events.iso_8859_1_bytes(c.name, pc.if_else(is_bit, none, text))
            values[c.name] = pc.if_else(is_bit, bits, others)
            continue
        definitions = pc.unique(declared[c.name].drop_null()).to_pylist()
        if pa.types.is_integer(values[c.name].type) and any(_kind(d) in ("enum", "set") for d in definitions):
            values[c.name] = values[c.name].cast(pa.string())  # a typed index or bit mask (5): its text
        for definition in definitions:
            kind = _kind(definition)
            rows_of_it = pc.fill_null(pc.equal(declared[c.name], definition), False)
            if kind.upper() in _SPATIAL and not pa.types.is_binary(c.type) and \
                    pc.any(pc.and_(rows_of_it, values[c.name].is_valid())).as_py():
                raise ValueError(f"column '{c.name}' is a MySQL {kind.upper()}, which Canal sends as MySQL's internal "
                                 "geometry bytes: declare the column BYTES to store them (Paimon's CDC writes "
                                 "GeoJSON text, which is not written here)")
            if kind in ("enum", "set"):
                labelled = _labels(c.name, kind, definition,
                                   pc.if_else(rows_of_it, values[c.name], pa.scalar(None, pa.string())))
                values[c.name] = pc.if_else(rows_of_it, labelled, values[c.name])
        if pa.types.is_list(c.type) and c.encoding == "plain":  # a SET's `[a,b]` as its labels
            values[c.name] = _label_list(values[c.name])
    return pa.StructArray.from_arrays([values[n] for n in names], names=names, mask=rows.is_null())


def _label_list(text: pa.Array) -> pa.Array:
    """SET labels as `_labels` writes them (`[a,b]`) -> ARRAY<STRING> ([] for `[]`), as Paimon's
    cast of that text to ARRAY<STRING> splits it."""
    inner = pc.replace_substring_regex(text, r"^\[|\]$", "")
    split = pc.split_pattern(inner, ",")
    return pc.if_else(pc.equal(inner, ""), pa.scalar([], split.type), split)


def _labels(column: str, kind: str, definition: str, text: pa.Array) -> pa.Array:
    """An ENUM's 1-based indexes or a SET's bit masks (as text) -> their labels (a SET: `[a,b]`);
    values that are not numbers (labels already) stay as they are."""
    labels = [o.replace("''", "'") for o in _OPTION.findall(definition)]
    number = pc.cast(pc.if_else(pc.match_substring_regex(text, r"^\d+$"), text, pa.scalar(None, pa.string())), pa.int64())
    if kind == "enum":
        outside = pc.or_(pc.less(number, 1), pc.greater(number, len(labels)))
        if pc.any(outside).as_py():
            raise ValueError(f"column '{column}' holds an index outside its ENUM {definition}")
        return pc.if_else(number.is_null(), text, pa.array(labels, pa.string()).take(pc.subtract(number, 1)))
    if pc.any(pc.greater_equal(number, 1 << len(labels))).as_py():
        raise ValueError(f"column '{column}' holds a bit outside its SET {definition}")
    pieces = [pc.if_else(pc.not_equal(pc.bit_wise_and(number, 1 << i), 0), label + ",", "")
              for i, label in enumerate(labels)]
    joined = pc.utf8_rtrim(pc.binary_join_element_wise(*pieces, ""), characters=",")
    return pc.if_else(number.is_null(), text, pc.binary_join_element_wise("[", joined, "]", ""))
