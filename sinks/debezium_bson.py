"""Debezium's MongoDB change events (`debezium-bson`) -> table rows with their row kinds.

Debezium's MongoDB connector writes Debezium's envelope (with or without Kafka Connect's
schema envelope), its `before` and `after` each a document as MongoDB Extended JSON *text*::

    {"before": null, "after": "{\"_id\": {\"$oid\": \"67ab25755c0d5ac87eb8c632\"}, \"qty\": 5}",
     "source": {"collection": "items", ...}, "op": "c", "ts_ms": 1739321992890}

and keys the record by the document's `_id` (`{"id": "{\"$oid\": \"...\"}"}`). `op` c and r
upsert the `after` document, u upserts it too (it must be whole: the connector's
`capture.mode` `change_streams_update_full`, or `..._with_pre_image`), d deletes the `before`
document, or, without it (MongoDB before 6.0 has no pre-images), the `_id` of the record's key.
As in Paimon's CDC, a document's fields are columns by name and its `_id` is the table's key.

Values become what Paimon's CDC stores for them (its `BsonValueConvertor`): an ObjectId its hex
text, `$numberLong`/`$numberInt`/`$numberDouble`/`$numberDecimal` their numbers, a `$date`
epoch milliseconds, a `$timestamp` its seconds, binary base64 (a standard UUID, subtype 4,
its text), a regular expression `/pattern/options`, nested documents and arrays JSON text. A
STRING column takes that text (numbers as Java writes them); other columns take the value
itself (a `$date` into a TIMESTAMP WITH LOCAL TIME ZONE as that instant, binary into BYTES as
its bytes), and a value that does not fit the column makes the record undecodable. A legacy
UUID (binary subtype 3) is undecodable: its byte order depends on the driver that wrote it.

Documents have no schema, so they are parsed record by record (the JSON parser is C, the
Extended JSON wrappers are walked in Python), then built into columns at once.
"""
from __future__ import annotations

import base64
import datetime as dt
import decimal
import functools
import json
import math
import uuid
from typing import Any, Callable, Sequence

import pyarrow as pa

from paimon_streaming.java_text import jackson_quoted, java_float_str
from . import debezium
from .change_events import Column, change_rows, with_sources

FORMAT = "debezium-bson"
OBJECT_ID = "_id"
_EPOCH = dt.datetime(1970, 1, 1, tzinfo=dt.timezone.utc)


class Millis(int):
    """A `$date`: epoch milliseconds (text as the number; a TIMESTAMP column's instant)."""


class Binary(bytes):
    """BSON binary that is no standard UUID (text as base64; a BYTES column's bytes)."""


def natural(value: Any) -> Any:
    """A document's value from Extended JSON (canonical, relaxed or legacy) to Python: numbers,
    text, `Millis`, `Binary`, lists and dicts of them."""
    kind = type(value)
    if kind is list:
        return [natural(v) for v in value]
    if kind is not dict:
        return value
    if len(value) <= 2:  # a wrapper: {"$oid": ...}, {"$binary": ..., "$type": ...}, ...
        keys = set(value)
        if len(keys) == 1 or keys in ({"$binary", "$type"}, {"$regex", "$options"}, {"$code", "$scope"}):
            wrapper = next((k for k in ("$binary", "$regex", "$code") if k in keys), next(iter(keys)))
            if wrapper in _WRAPPERS:
                return _WRAPPERS[wrapper](value)
    return {k: natural(v) for k, v in value.items()}


def _date(value: dict) -> Millis:
    d = value["$date"]
    if isinstance(d, dict):
        return Millis(int(d["$numberLong"]))
    if isinstance(d, str):  # relaxed: ISO-8601 with its offset
        at = dt.datetime.fromisoformat(d)
        if at.tzinfo is None:
            raise ValueError(f"a $date without a zone offset: {d!r}")
        return Millis((at - _EPOCH) // dt.timedelta(milliseconds=1))
    return Millis(int(d))


def _binary(value: dict) -> Any:
    spec = value["$binary"]
    data, subtype = (spec["base64"], spec["subType"]) if isinstance(spec, dict) else (spec, value["$type"])
    raw = base64.b64decode(data, validate=True)
    subtype = int(subtype, 16)
    if subtype == 4:
        return str(uuid.UUID(bytes=raw))
    if subtype == 3:
        raise ValueError("a legacy UUID (binary subtype 3), whose byte order depends on the driver that wrote it")
    return Binary(raw)


def _regex(value: dict) -> str:
    spec = value["$regularExpression"] if "$regularExpression" in value else \
        {"pattern": value["$regex"], "options": value["$options"]}
    pattern = spec["pattern"].replace("/", "\\/") if spec["pattern"] else "(?:)"
    return f"/{pattern}/{spec['options']}"


def _code(value: dict) -> Any:
    return {"$code": value["$code"], "$scope": natural(value["$scope"])} if "$scope" in value else value["$code"]


def _db_pointer(value: dict) -> str:
    spec = value["$dbPointer"]
    return f"BsonDbPointer{{namespace='{spec['$ref']}', id={natural(spec['$id'])}}}"


_WRAPPERS = {
    "$oid": lambda v: v["$oid"],
    "$numberLong": lambda v: int(v["$numberLong"]),
    "$numberInt": lambda v: int(v["$numberInt"]),
    "$numberDouble": lambda v: float(v["$numberDouble"]),
    "$numberDecimal": lambda v: decimal.Decimal(v["$numberDecimal"]),
    "$date": _date,
    "$timestamp": lambda v: int(v["$timestamp"]["t"]),
    "$binary": _binary,
    "$uuid": lambda v: str(uuid.UUID(v["$uuid"])),
    "$regularExpression": _regex,
    "$regex": _regex,
    "$symbol": lambda v: v["$symbol"],
    "$code": _code,
    "$undefined": lambda v: None,
    "$minKey": lambda v: "BsonMinKey",
    "$maxKey": lambda v: "BsonMaxKey",
    "$dbPointer": _db_pointer,
}


def text(value: Any) -> str | None:
    """A value as Paimon's CDC writes it into a STRING column (Java's `toString`, JSON text for
    documents and arrays)."""
    kind = type(value)
    if value is None or kind is str:
        return value
    if kind is dict or kind is list:
        return _json(value)
    return _scalar(value)


def _scalar(value: Any) -> str:
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, float):
        return java_float_str(value, single=False)
    if isinstance(value, Binary):
        return base64.b64encode(value).decode()
    return str(value)  # int, Millis, Decimal (its scientific form is Java BigDecimal's)


def _json(value: Any) -> str:
    """Compact JSON as Jackson writes it (Java's doubles; NaN and Infinity quoted)."""
    if isinstance(value, dict):
        return "{" + ",".join(f"{jackson_quoted(k)}:{_json(v)}" for k, v in value.items()) + "}"
    if isinstance(value, list):
        return "[" + ",".join(_json(v) for v in value) + "]"
    if value is None:
        return "null"
    if isinstance(value, str):
        return jackson_quoted(value)
    if isinstance(value, Binary) or not _finite(value):
        return jackson_quoted(_scalar(value))  # base64, and NaN/Infinity quoted, as Jackson writes them
    return _scalar(value)


def _finite(value: Any) -> bool:
    if isinstance(value, decimal.Decimal):
        return value.is_finite()
    return not isinstance(value, float) or math.isfinite(value)


def document(value: str | None, what: str) -> dict | None:
    """One `before`/`after` field: Extended JSON text of a document (or null)."""
    if value is None:
        return None
    if not isinstance(value, str):
        raise ValueError(f"'{what}' is not Extended JSON text of a document (a {type(value).__name__})")
    doc = natural(json.loads(value))
    if not isinstance(doc, dict):
        raise ValueError(f"'{what}' is not a document")
    return doc


def event(value: bytes, key: bytes | None) -> dict:
    """One record -> {"op", "before", "after"}, documents as `natural` values; a delete without
    its before image takes the `_id` of the record's key."""
    env = json.loads(value)
    if isinstance(env, dict) and set(env) == {"schema", "payload"}:
        env = env["payload"]
    if not isinstance(env, dict) or "op" not in env:
        raise ValueError("not a Debezium change event (no 'op')")
    source = env.get("source")
    out = {"op": env["op"], "before": document(env.get("before"), "before"), "after": document(env.get("after"), "after"),
           "source": {k: v for k, v in source.items() if k in debezium.SOURCE.names and isinstance(v, str)}
           if isinstance(source, dict) else None}
    if out["op"] == "d" and out["before"] is None:
        out["before"] = {OBJECT_ID: key_id(key)}
    if out["op"] == "u" and out["after"] is None:
        raise ValueError("an update without its full document: set the connector's capture.mode to "
                         "change_streams_update_full (a partial update's changed fields are not a row)")
    return out


def key_id(key: bytes | None) -> Any:
    """The `_id` a record's key holds ({"id": "<Extended JSON>"}, maybe in a schema envelope)."""
    doc = json.loads(key) if key is not None else None
    if isinstance(doc, dict) and set(doc) == {"schema", "payload"}:
        doc = doc["payload"]
    if not isinstance(doc, dict) or not isinstance(doc.get("id"), str):
        raise ValueError("a delete without its before image, and no _id in the record's key")
    return natural(json.loads(doc["id"]))


def table_schema_of(value: bytes) -> pa.Schema | None:
    """A new table's columns from one record, as Paimon's CDC makes them: its `after` document's
    fields, in order, each STRING (None for a record without one: a delete, or no event)."""
    try:
        doc = event(value, b'{"id": "null"}')["after"]
    except (ValueError, KeyError, TypeError):
        return None
    return pa.schema([(name, pa.string()) for name in doc]) if doc else None


def change_rows_of(events: list[dict], schema: pa.Schema, kind_column: str, event_column: str,
                   keys: Sequence[str] = (), partitioned: bool = False) -> pa.Table:
    """Parsed events -> `change_events.change_rows`: each document's fields in the type of their
    column (a field no column names: STRING, a new column)."""
    names = set(schema.names)
    new = {n: None for e in events for doc in (e["before"], e["after"]) if doc for n in doc if n not in names}
    image = pa.struct(list(schema) + [pa.field(n, pa.string()) for n in new])
    columns = [Column.of(f.name, "plain", f.type) for f in schema]
    if partitioned:
        moved_unseen = [e for e in events if e["op"] == "u" and e["before"] is None]
        if moved_unseen:
            raise ValueError("an update without its before image, into a partitioned table: a document moving to "
                             "another partition could not be deleted from the old one (turn on MongoDB's pre-images "
                             "and capture.mode change_streams_update_full_with_pre_image)")
    ops = pa.array([e["op"] for e in events], pa.string())
    converters = [(f.name, text if pa.types.is_string(f.type) else functools.partial(_as, t=f.type, name=f.name))
                  for f in image]
    before = pa.array([_row(e["before"], converters) for e in events], image)
    after = pa.array([_row(e["after"], converters) for e in events], image)
    rows = change_rows(ops, before, after, columns, kind_column, event_column, keys, partitioned)
    rows = with_sources(rows, debezium.source_name(pa.array([e.get("source") for e in events], debezium.SOURCE)),
                        event_column)
    unseen = [n for n in new if rows.column(n).null_count == rows.num_rows]
    return rows.drop_columns(unseen) if unseen else rows


def _row(doc: dict | None, converters: list[tuple[str, Callable[[Any], Any]]]) -> dict | None:
    """A document's fields as values of their columns (each column's converter)."""
    if doc is None:
        return None
    return {name: convert(doc[name]) for name, convert in converters if name in doc}


def _as(value: Any, t: pa.DataType, name: str) -> Any:
    """One value for a column (or a nested field) of type `t`: converted only where nothing is
    lost; anything else is a ValueError naming the column."""
    if value is None:
        return None
    if pa.types.is_string(t) or pa.types.is_large_string(t):
        return text(value)
    if pa.types.is_list(t) or pa.types.is_large_list(t):
        if not isinstance(value, list):
            raise ValueError(f"column '{name}' is {t} but holds {text(value)!r}")
        return [_as(v, t.value_type, name) for v in value]
    if pa.types.is_struct(t):
        if not isinstance(value, dict) or set(value) - {f.name for f in t}:
            raise ValueError(f"column '{name}' is {t} but holds {text(value)!r}")
        return {f.name: _as(value.get(f.name), f.type, f"{name}.{f.name}") for f in t}
    if isinstance(value, (dict, list)) or pa.types.is_nested(t) or isinstance(value, bool) != pa.types.is_boolean(t):
        raise ValueError(f"column '{name}' is {t} but holds {text(value)!r}")
    if pa.types.is_temporal(t):  # only an instant into a column of instants: no unit or zone is guessed
        if isinstance(value, Millis) and pa.types.is_timestamp(t) and t.tz is not None:
            return _EPOCH + dt.timedelta(milliseconds=int(value))
        what = "a $date (an instant)" if isinstance(value, Millis) else repr(text(value))
        raise ValueError(f"column '{name}' is {t} but holds {what}; a $date goes into a TIMESTAMP WITH LOCAL TIME "
                         "ZONE column (or STRING: epoch milliseconds, as Paimon's CDC)")
    if pa.types.is_integer(t) and isinstance(value, (float, decimal.Decimal)):
        if not math.isfinite(value) or value != int(value):
            raise ValueError(f"column '{name}' is {t} but holds {text(value)}")
        return int(value)
    if pa.types.is_decimal(t) and isinstance(value, (int, float)):
        return decimal.Decimal(repr(value)) if isinstance(value, float) else decimal.Decimal(value)
    if pa.types.is_floating(t) and isinstance(value, decimal.Decimal):
        return float(value)
    if pa.types.is_binary(t) and isinstance(value, Binary):
        return bytes(value)
    return value
