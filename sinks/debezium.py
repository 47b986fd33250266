"""Debezium change events (JSON, or Avro through a schema registry) -> table rows with their
row kinds.

A Debezium connector (MySQL, Postgres, ...) writes one Kafka record per row change::

    {"before": {...} | null, "after": {...} | null, "source": {...}, "op": "c", "ts_ms": ...}

or, with Kafka Connect's `schemas.enable`, the same event as the `payload` of an envelope
whose `schema` says how each column is encoded. `op` c (insert) and r (snapshot read) become
+I rows of the after image, u a +U row of it, d a -D row of the before image (a delete needs
only the key columns there). Truncate (t) and message (m) events, and events missing the image
they need, are undecodable records: applying them partially would leave a table that differs
from the source without a word. The tombstone Debezium writes after a delete (a null value)
deletes nothing more and is dropped. An update that moves a row to another partition (its
before image holds another value of the table's key) also deletes the old key.

Debezium's JSON does not carry every type as itself. The schema envelope, when present, names
each column's encoding (`io.debezium.time.Date`, `MicroTimestamp`, Kafka Connect's `Decimal`,
...; a `Decimal` may also be a JSON number, Kafka Connect's decimal.format=NUMERIC, and one
wider than 38 digits is a STRING column of its text, as Paimon's CDC types it); without it the
table's column types decide, with Debezium's defaults: DATE as days since
the epoch, TIMESTAMP(0-3) as epoch milliseconds, (4-6) microseconds, (7-9) nanoseconds,
TIMESTAMP WITH LOCAL TIME ZONE as ISO-8601 text with its offset (`ZonedTimestamp`), BYTES as
base64 and DECIMAL as `decimal.handling.mode` says (`precise`, Debezium's default: base64 of the
big-endian unscaled value; `string`; `double`). A TIME needs the envelope: Debezium writes it in
milliseconds or microseconds of the day by the source column's precision, which the table's
TIME (kept in milliseconds) does not tell. Variable-scale decimals (Postgres NUMERIC without a
declared scale: `io.debezium.data.VariableScaleDecimal`, each value with its own scale) go into
the table's DECIMAL column when they fit its scale and precision; a new column of them is
DECIMAL(38, 18), as Paimon's Postgres CDC types such a NUMERIC. An ARRAY's elements are decoded
as a column of their encoding is (a Postgres date[] is an array of days); new ROW and ARRAY
columns are typed from the envelope, and one that cannot be (a ROW holding an encoding, a map)
is refused rather than left to the JSON reader's inference.
Each encoding is decoded for a whole column at once; a value that does not fit its column
(a wider decimal, a lost fraction of a timestamp) is a ValueError naming the column, which the
decoder turns into an undecodable record. Confluent's AvroConverter writes the same envelope
as an Avro record whose fields name their encodings (`connect.name`); those are read without
Avro's logical types and decoded the same way (`avro_columns`).
"""
from __future__ import annotations

import json
import re
from dataclasses import replace
from typing import Any, Sequence

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from .base64_columns import holds_binary
from . import avro_types, change_events
from .change_events import ARRAY_PREFIX, EPOCH_UNITS, TIME_UNITS, Column, array_of, change_rows, wider

FORMAT = "debezium-json"
AVRO_FORMAT = "debezium-avro"
DECIMAL_HANDLING = ("precise", "string", "double")
# the Kafka Connect JSON converter's envelope, {"schema": ..., "payload": ...} (schema first, as
# it writes it). A JSON string cannot hold `"payload":` (its quotes would be escaped) and no key
# of a Connect schema is "payload", so the first one ends the schema.
_ENVELOPE_START = r'^\s*\{\s*"schema"\s*:'
_ENVELOPE_PREFIX = re.compile(rb'^\s*\{\s*"schema"\s*:')
_PAYLOAD_KEY = r'"payload"\s*:'
_MAX_SCHEMA_GROUPS = 8

# Debezium / Kafka Connect logical type names -> encoding
_LOGICAL = {
    "io.debezium.time.Date": "days", "org.apache.kafka.connect.data.Date": "days",
    "io.debezium.time.Timestamp": "epoch-ms", "org.apache.kafka.connect.data.Timestamp": "epoch-ms",
    "io.debezium.time.MicroTimestamp": "epoch-us", "io.debezium.time.NanoTimestamp": "epoch-ns",
    "io.debezium.time.ZonedTimestamp": "zoned",
    "io.debezium.time.Time": "time-ms", "org.apache.kafka.connect.data.Time": "time-ms",
    "io.debezium.time.MicroTime": "time-us", "io.debezium.time.NanoTime": "time-ns",
    "org.apache.kafka.connect.data.Decimal": "decimal-bytes",
    "io.debezium.data.VariableScaleDecimal": "variable-scale",
    "io.debezium.data.Bits": "bits",  # a MySQL BIT(n > 1): little-endian bytes, stored big-endian
}
# a new column of variable-scale decimals: Paimon's Postgres CDC types a NUMERIC without declared
# precision so (after Spark, SPARK-26538)
VARIABLE_SCALE_COLUMN = pa.decimal128(38, 18)
# (Kafka Connect's JSON converter names its floats "float" and "double"; Avro's, as read here, "float32"/"float64")
_CONNECT_TYPES = {"int8": pa.int8(), "int16": pa.int16(), "int32": pa.int32(), "int64": pa.int64(),
                  "float": pa.float32(), "double": pa.float64(), "float32": pa.float32(), "float64": pa.float64(),
                  "boolean": pa.bool_(), "string": pa.string(), "bytes": pa.binary()}


def default_columns(schema: pa.Schema, decimal_handling: str = "precise") -> list[Column]:
    """The table's columns as a connector writes them without a schema envelope."""
    if decimal_handling not in DECIMAL_HANDLING:
        raise ValueError(f"unknown decimal handling '{decimal_handling}'; use one of {', '.join(DECIMAL_HANDLING)}")
    decimals = {"precise": "decimal-bytes", "string": "decimal-text", "double": "decimal-double"}[decimal_handling]

    def encoding_of(t: pa.DataType) -> str:
        if pa.types.is_list(t):
            return array_of(encoding_of(t.value_type))
        if pa.types.is_decimal(t):
            return decimals
        if pa.types.is_date(t):
            return "days"
        if pa.types.is_timestamp(t):
            return "zoned" if t.tz is not None else ("epoch-ms" if t.unit in ("s", "ms") else f"epoch-{t.unit}")
        if pa.types.is_time(t):
            return "time"
        return "base64" if holds_binary(t) else "plain"
    return change_events.columns_of(schema, encoding_of)


def envelope_columns(schema: pa.Schema, envelope_schema: dict) -> list[Column]:
    """The table's columns, and the after image's fields the table lacks, as the envelope's
    schema says they are encoded (table columns it does not list: as without an envelope;
    columns it declares wider than the table's: of the declared type, see `change_events.wider`)."""
    fields = {}
    for image in envelope_schema.get("fields") or ():
        if image.get("field") in ("before", "after") and image.get("type") == "struct":
            fields.update({f["field"]: f for f in image.get("fields") or () if "field" in f})
    defaults = {c.name: c for c in default_columns(schema)}
    out, untyped = [], []
    for f in schema:
        spec = fields.get(f.name)
        if spec is None:
            out.append(defaults[f.name])
            continue
        declared = _new_column_type(spec)
        if _LOGICAL.get(spec.get("name") or "") == "variable-scale":
            declared = None  # each value has its own scale: they go into the column when they fit it
        if declared is not None:  # wider, or ROW fields the table lacks as the envelope types them
            target = declared if wider(declared, f.type) else change_events.with_new_fields(declared, f.type)
        else:
            target = f.type
            unknown = _new_nested_fields(spec, f.type, f.name)
            if unknown:  # never left to the JSON reader's guess (a date inside a ROW would become a number)
                untyped.extend(unknown)
        out.append(Column.of(f.name, _encoding(spec, target), target, _declared_scale(spec)))
    for name, spec in fields.items():
        if name not in schema.names:
            t = _new_column_type(spec)
            if t is None:
                untyped.append(name)
            else:
                out.append(Column.of(name, _encoding(spec, t), t))
    if untyped:  # never left to the JSON reader's guess: an ARRAY of dates would become one of integers
        raise ValueError(f"field(s) {sorted(untyped)} of the change events have types not decoded here (a nested "
                         "value holding one of Debezium's encodings, such as dates or decimals in an ARRAY, or a "
                         "type Kafka Connect's JSON does not describe): leave them out of the table's capture")
    return out


def _encoding(spec: dict, target: pa.DataType) -> str:
    logical = _LOGICAL.get(spec.get("name") or "")
    if logical is not None:
        return logical
    if spec.get("type") == "array" and isinstance(spec.get("items"), dict) and pa.types.is_list(target):
        return array_of(_encoding(spec["items"], target.value_type))
    if spec.get("type") == "bytes" or holds_binary(target):
        return "base64"
    if spec.get("type") == "string" and pa.types.is_decimal(target):
        return "decimal-text"  # decimal.handling.mode=string
    if spec.get("type") in ("double", "float64") and pa.types.is_decimal(target):
        return "decimal-double"
    return "plain"


def _new_nested_fields(spec: dict, t: pa.DataType, path: str) -> list[str]:
    """The paths of the fields an envelope's ROW (or ARRAY of ROWs) declares that the table's
    type `t` lacks."""
    if spec.get("type") == "array" and isinstance(spec.get("items"), dict) and pa.types.is_list(t):
        return _new_nested_fields(spec["items"], t.value_type, path + "[]")
    if spec.get("type") != "struct" or not pa.types.is_struct(t):
        return []
    out = []
    for part in spec.get("fields") or ():
        name = part.get("field") if isinstance(part, dict) else None
        if name is None:
            continue
        if t.get_field_index(name) < 0:
            out.append(f"{path}.{name}")
        else:
            out.extend(_new_nested_fields(part, t.field(name).type, f"{path}.{name}"))
    return out


def _declared_scale(spec: dict) -> int | None:
    """The scale a Kafka Connect Decimal column (or an ARRAY of them) declares: its unscaled
    values are in it, whatever the table column's scale (a source column retyped from
    DECIMAL(10, 2) to (12, 4) sends 1.2345 as 12345, which read at scale 2 would be 123.45)."""
    while spec.get("type") == "array" and isinstance(spec.get("items"), dict):
        spec = spec["items"]
    if _LOGICAL.get(spec.get("name") or "") != "decimal-bytes":
        return None
    scale = (spec.get("parameters") or {}).get("scale")
    return int(scale) if scale is not None else 0


def _new_column_type(spec: dict, nested: bool = False) -> pa.DataType | None:
    """The Arrow type of a column the source added, ROW and ARRAY ones (Kafka Connect's struct
    and array) from their parts' types. None: not decoded here, which includes Debezium's
    encodings inside a ROW (`nested`: they are decoded as a column or as an ARRAY's elements;
    bytes anywhere, base64 being decoded at any depth) and maps (pyarrow's JSON reader has no
    map type)."""
    encoding = _LOGICAL.get(spec.get("name") or "")
    if nested and encoding is not None:
        return None
    kind = spec.get("type")
    if kind == "array" and encoding is None:
        items = spec.get("items")
        element = _new_column_type(items, nested) if isinstance(items, dict) else None
        return None if element is None else pa.list_(element)
    if kind == "struct" and encoding is None:
        parts = list(spec.get("fields") or ())
        types = [_new_column_type(p, nested=True) if isinstance(p, dict) else None for p in parts]
        if not types or any(t is None for t in types):
            return None
        return pa.struct([pa.field(p.get("field"), t) for p, t in zip(parts, types)])  # nullable: images may be null
    if encoding == "days":
        return pa.date32()
    if encoding in EPOCH_UNITS:
        return pa.timestamp(EPOCH_UNITS[encoding])
    if encoding == "zoned":
        return pa.timestamp("us", tz="UTC")
    if encoding in TIME_UNITS:
        return pa.time32("ms")
    if encoding == "decimal-bytes":  # wider than DECIMAL's 38 digits (MySQL's DECIMAL(65, 30)): STRING, as Paimon's CDC
        params = spec.get("parameters") or {}
        precision = int(params.get("connect.decimal.precision", 38))
        return pa.decimal128(precision, int(params.get("scale", 0))) if precision <= 38 else pa.string()
    if encoding == "variable-scale":
        return VARIABLE_SCALE_COLUMN
    if encoding == "bits":  # Paimon's CDC: BINARY((length + 7) / 8)
        return pa.binary()
    return _CONNECT_TYPES.get(spec.get("type"))


# ---- debezium-avro: Confluent's AvroConverter writes the envelope as an Avro record ------
_AVRO_TO_CONNECT = {"int": "int32", "long": "int64", "float": "float32", "double": "float64",
                    "boolean": "boolean", "string": "string", "bytes": "bytes", "enum": "string", "fixed": "bytes"}
_AVRO_LOGICAL_NAMES = {"date": "org.apache.kafka.connect.data.Date",
                       "timestamp-millis": "org.apache.kafka.connect.data.Timestamp",
                       "timestamp-micros": "io.debezium.time.MicroTimestamp",
                       "time-millis": "org.apache.kafka.connect.data.Time", "time-micros": "io.debezium.time.MicroTime",
                       "decimal": "org.apache.kafka.connect.data.Decimal"}


def avro_columns(schema: pa.Schema, writer: dict) -> list[Column]:
    """`envelope_columns` for an Avro envelope (its images' fields carry Connect's names as
    `connect.name`, or Avro logical types); bytes and decimals arrive as bytes, not base64.
    A field the table lacks whose type is not decoded here is a ValueError (never dropped)."""
    images = []
    for f in writer.get("fields", ()):
        if f.get("name") in ("before", "after"):
            record = _non_null(f["type"])
            if isinstance(record, str):  # `after` names the record `before` defined
                record = next((i["record"] for i in images if record in (i["record"].get("name"),
                               f'{i["record"].get("namespace", "")}.{i["record"].get("name")}')), None)
            if isinstance(record, dict) and record.get("type") == "record":
                images.append({"field": f["name"], "type": "struct", "record": record,
                               "fields": [_connect_field(x) for x in record.get("fields", ())]})
    columns = [Column.of(c.name, _as_avro(c.encoding), c.type, c.scale)
               for c in envelope_columns(schema, {"fields": images})]
    # plain values are built in the writer's own types, then cast safely to the column's
    # (change_events._decoded): a double never lands truncated in an INT column
    written = _writer_types(images[-1]["record"]) if images else {}
    return [replace(c, wire=written[c.name]) if c.encoding == "plain" and c.name in written
            else replace(c, wire=pa.float64()) if c.encoding == "decimal-double" else c for c in columns]


def _writer_types(record: dict) -> dict[str, pa.DataType]:
    """An image record's fields as Arrow types, read without logical types (as they are
    decoded); fields of types no column holds are left out."""
    out = {}
    for f in record.get("fields", ()):
        try:
            out[f["name"]] = avro_types.arrow_schema(
                {"type": "record", "name": "r", "fields": [without_logical_types(f)]}).field(0).type
        except (avro_types.AvroTypeError, KeyError, TypeError):
            pass
    return out


def _as_avro(encoding: str) -> str:
    """A JSON encoding as Avro carries it: bytes and decimals as bytes, not base64."""
    if encoding.startswith(ARRAY_PREFIX):
        return array_of(_as_avro(encoding[len(ARRAY_PREFIX):]))
    return {"base64": "plain", "decimal-bytes": "decimal-unscaled", "bits": "bits-bytes",
            "variable-scale": "variable-scale-unscaled"}.get(encoding, encoding)


def without_logical_types(schema: Any) -> Any:
    """An Avro schema read without logical types: the values as they are encoded (ints, bytes),
    for the same decoding as JSON's."""
    if isinstance(schema, dict):
        return {k: without_logical_types(v) for k, v in schema.items() if k != "logicalType"}
    if isinstance(schema, list):
        return [without_logical_types(x) for x in schema]
    return schema


def avro_change_rows(events: list[dict], columns: list[Column], kind_column: str, event_column: str,
                     keys: Sequence[str] = (), partitioned: bool = False, partial: bool = False) -> pa.Table:
    """Decoded Avro envelopes -> `change_rows`."""
    image = pa.struct([pa.field(c.name, c.wire) for c in columns if c.wire is not None])
    rows = change_rows(pa.array([e.get("op") for e in events], pa.string()),
                       pa.array([e.get("before") for e in events], image),
                       pa.array([e.get("after") for e in events], image), columns, kind_column, event_column,
                       keys, partitioned, partial)
    sources = pa.array([{k: v for k, v in (e.get("source") or {}).items() if k in SOURCE.names}
                        if isinstance(e.get("source"), dict) else None for e in events], SOURCE)
    return change_events.with_sources(rows, source_name(sources), event_column)


def _non_null(t: Any) -> Any:
    if isinstance(t, list):
        branches = [b for b in t if b != "null"]
        return branches[0] if len(branches) == 1 else t
    return t


def _connect_field(field: dict) -> dict:
    """An Avro field as Kafka Connect's JSON schema describes it."""
    t = _non_null(field["type"])
    if isinstance(t, dict) and t.get("type") == "array":
        return {"field": field["name"], "type": "array", "items": _connect_field({"name": None, "type": t.get("items")})}
    if not isinstance(t, dict):
        return {"field": field["name"], "type": _AVRO_TO_CONNECT.get(t, t) if isinstance(t, str) else "union"}
    params = dict(t.get("connect.parameters") or {})
    if t.get("logicalType") == "decimal":
        params.setdefault("scale", str(t.get("scale", 0)))
        params.setdefault("connect.decimal.precision", str(t.get("precision", 38)))
    return {"field": field["name"], "type": t.get("connect.type") or _AVRO_TO_CONNECT.get(t.get("type"), t.get("type")),
            "name": t.get("connect.name") or _AVRO_LOGICAL_NAMES.get(t.get("logicalType")), "parameters": params}


def split_envelopes(values: pa.Array) -> tuple[pa.Array, np.ndarray, list[bytes]]:
    """(each value's payload, its envelope group (-1: no envelope, the value is its own
    payload), each group's schema text). Found with numpy over the values' bytes: regex captures
    over whole envelopes (schemas of kilobytes) are 30x slower."""
    values = values.cast(pa.binary())
    if values.offset:
        values = pa.concat_arrays([values])
    n = len(values)
    groups = np.full(n, -1, np.int64)
    enveloped = pc.match_substring_regex(values, _ENVELOPE_START).fill_null(False).to_numpy(zero_copy_only=False)
    if not enveloped.any():
        return values, groups, []
    offsets = np.frombuffer(values.buffers()[1], np.int32, n + 1).astype(np.int64)
    data = np.frombuffer(values.buffers()[2], np.uint8)
    key = pc.find_substring_regex(values, _PAYLOAD_KEY).to_numpy(zero_copy_only=False).astype(np.int64)
    colon = _first_at_or_after(data, offsets[:-1] + np.maximum(key, 0) + len('"payload"'), ord(":"))
    close = _last_before(data, offsets[1:], ord("}"))
    # each found within its own value, in order (the windows may reach into the neighbours)
    enveloped &= (key >= 0) & (colon >= 0) & (colon < close) & (close < offsets[1:])
    starts = np.where(enveloped, colon + 1, offsets[:-1])
    ends = np.where(enveloped, close, offsets[1:])
    payloads = _views(values, data, starts, ends).cast(pa.binary())  # what the JSON reader takes
    schemas = _views(values, data, offsets[:-1], offsets[:-1] + np.maximum(key, 0))
    texts: list[bytes] = []
    while (left := enveloped & (groups < 0)).any():
        first = int(np.flatnonzero(left)[0])
        if len(texts) == _MAX_SCHEMA_GROUPS:  # a schema per record: hash them instead
            codes = schemas.cast(pa.binary()).filter(pa.array(left)).dictionary_encode()
            groups[left] = codes.indices.to_numpy(zero_copy_only=False) + len(texts)
            texts.extend(codes.dictionary.to_pylist())
            break
        groups[left & pc.equal(schemas, schemas[first]).to_numpy(zero_copy_only=False)] = len(texts)
        texts.append(schemas[first].as_py())
    return payloads, groups, [_ENVELOPE_PREFIX.sub(b"", t).rstrip().rstrip(b",") for t in texts]


def _first_at_or_after(data: np.ndarray, at: np.ndarray, byte: int, reach: int = 64) -> np.ndarray:
    """Per row, the position of the first `byte` in data[at:at + reach], or -1."""
    window = np.minimum(at[:, None] + np.arange(reach), len(data) - 1)
    hits = data[window] == byte
    found = hits.any(axis=1)
    return np.where(found, at + hits.argmax(axis=1), -1)


def _last_before(data: np.ndarray, end: np.ndarray, byte: int, reach: int = 64) -> np.ndarray:
    """Per row, the position of the last `byte` in data[end - reach:end], or -1."""
    window = np.maximum(end[:, None] - 1 - np.arange(reach), 0)
    hits = data[window] == byte
    found = hits.any(axis=1)
    return np.where(found, end - 1 - hits.argmax(axis=1), -1)


def _views(values: pa.Array, data: np.ndarray, starts: np.ndarray, ends: np.ndarray) -> pa.Array:
    """A binary_view array of data[starts:ends] per row, over the values' own data buffer."""
    n = len(starts)
    lengths = (ends - starts).astype(np.int32)
    views = np.zeros((n, 16), np.uint8)
    views[:, :4] = lengths.view(np.uint8).reshape(n, 4)
    inline = lengths <= 12
    take = np.minimum(starts[:, None] + np.arange(12), max(len(data) - 1, 0))
    head = data[take] if len(data) else np.zeros((n, 12), np.uint8)
    head = np.where(np.arange(12) < lengths[:, None], head, 0)
    views[inline, 4:16] = head[inline]
    views[~inline, 4:8] = head[~inline, :4]  # the value's first 4 bytes; buffer index 0
    views[~inline, 12:16] = starts[~inline].astype(np.int32).view(np.uint8).reshape(-1, 4)
    return pa.Array.from_buffers(pa.binary_view(), n, [values.buffers()[0], pa.py_buffer(views.tobytes()),
                                                       values.buffers()[2]], null_count=values.null_count)


def parse_events(buffer: bytes, columns: list[Column], kind_column: str, event_column: str,
                 keys: Sequence[str] = (), partitioned: bool = False, partial: bool = False) -> pa.Table:
    """Newline-delimited Debezium payloads -> `change_rows`."""
    events, columns = change_events.read_loosely(buffer, columns, _schema_of, _LOOSENINGS, ("before", "after"),
                                                 closed=("source",))
    rows = change_rows(*(events.column(c).combine_chunks() for c in ("op", "before", "after")), columns, kind_column,
                       event_column, keys, partitioned, partial)
    return change_events.with_sources(rows, source_name(events.column("source").combine_chunks()), event_column)


def _schema_of(columns: list[Column]) -> pa.Schema:
    image = pa.struct([pa.field(c.name, c.wire) for c in columns if c.wire is not None])
    return pa.schema([("op", pa.string()), ("before", image), ("after", image), ("source", SOURCE)])


def _numbers(c: Column) -> Column:
    """A Kafka Connect Decimal read as a JSON number (the JSON converter's decimal.format=NUMERIC)."""
    if c.encoding == "decimal-bytes":
        return Column(c.name, "decimal-double", change_events.JSON_NUMBER_DECIMAL, c.type, c.scale)
    return c


def _float_texts(c: Column) -> Column:
    """A FLOAT or DOUBLE's value read as text too (Jackson writes NaN and infinities quoted)."""
    if c.encoding == "plain" and pa.types.is_floating(c.type):
        return Column(c.name, "text", pa.string(), c.type)
    return c


# how columns are read when the JSON reader refuses the events (`change_events.read_loosely`)
_LOOSENINGS = (_numbers, _float_texts, lambda c: _float_texts(_numbers(c)))


SOURCE = pa.struct([("db", pa.string()), ("schema", pa.string()), ("table", pa.string()), ("collection", pa.string())])


def source_name(source: pa.StructArray) -> pa.Array:
    """The table a Debezium event's `source` names: db[.schema].table (MongoDB: db.collection)."""
    table = pc.coalesce(source.field("table"), source.field("collection"))
    return change_events.table_name(source.field("db"), change_events.table_name(source.field("schema"), table))


def table_schema_of(envelope_schema: dict) -> pa.Schema:
    """A new table's columns from an event's envelope: the after image's fields, typed by their
    encodings (ValueError when one has no type here: declare the table's schema). They are
    nullable whatever the source's (a later ALTER ... NULL upstream would stop the ingest), as
    Paimon's CDC creates them; the primary key's are NOT NULL in the table."""
    columns = envelope_columns(pa.schema([]), envelope_schema)
    fields = {}
    for image in envelope_schema.get("fields") or ():
        if image.get("field") == "after":
            fields = {f.get("field"): f for f in image.get("fields") or ()}
    if not fields:
        raise ValueError("the envelope has no after image")
    return pa.schema([pa.field(c.name, c.type) for c in columns])


def envelope_schema_text(text: Any) -> dict:
    """The envelope's schema as a dict (ValueError when it is not JSON)."""
    try:
        parsed = json.loads(text)
    except json.JSONDecodeError as exc:
        raise ValueError(f"the envelope's schema is not JSON: {exc}") from None
    if not isinstance(parsed, dict):
        raise ValueError("the envelope's schema is not a JSON object")
    return parsed
