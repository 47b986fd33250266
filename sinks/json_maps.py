"""MAP columns from JSON objects, which pyarrow's JSON reader cannot build (it has no map type).

A JSON record whose schema holds a MAP (at any depth) is rewritten before pyarrow reads it: each
object a MAP field holds becomes a list of {"key": ..., "value": ...} objects, which the reader
parses as a list of rows with every value typed as declared; the lists are then turned into maps,
their keys (JSON text) cast to the key type. Spark's `from_json` reads the same: an object's
members as the map's entries in their order, a member whose value is null as an entry holding
null, a null or absent field as a null map; a key given twice is refused, as pyarrow refuses a
field given twice.

The rewrite parses each record in Python (as VARIANT columns are), keeping every number's text
as written, so that a DECIMAL or FLOAT value anywhere in the record is read from the same digits
as without the rewrite. Records of schemas without a MAP are read as they are.
"""
from __future__ import annotations

import json
from typing import Any, Callable

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from paimon_streaming.decimal_text import DecimalTextRefused, text_decimals
from paimon_streaming.variant import unique_members

__all__ = ["DECODER", "Number", "holds_map", "read", "write_any"]


def holds_map(t: pa.DataType) -> bool:
    if pa.types.is_map(t):
        return True
    if pa.types.is_struct(t):
        return any(holds_map(t.field(i).type) for i in range(t.num_fields))
    if pa.types.is_list(t) or pa.types.is_large_list(t):
        return holds_map(t.value_type)
    return False


def read(buffer: bytes, schema: pa.Schema, read_json: Callable[[bytes, pa.Schema], pa.Table]) -> pa.Table:
    """`read_json(buffer, schema)` (newline-delimited JSON objects as rows of `schema`, fields it
    lacks as the reader is told), with MAP fields filled from JSON objects; ValueError naming the
    field when one holds something else, a key is given twice or does not cast to the key type."""
    if not any(holds_map(f.type) for f in schema):
        return read_json(buffer, schema)
    table = read_json(_as_pairs(buffer, schema), pa.schema([f.with_type(_pairs_type(f.type)) for f in schema]))
    for f in schema:
        if holds_map(f.type) and f.name in table.column_names:
            i = table.column_names.index(f.name)
            column = table.column(i)
            maps = [_as_maps(f.name, chunk, f.type) for chunk in column.chunks]
            table = table.set_column(i, f.with_type(_as_maps_type(column.type, f.type)),
                                     pa.chunked_array(maps, _as_maps_type(column.type, f.type)))
    return table


# ---- the rewrite ------------------------------------------------------------------------
class Number(str):
    """A JSON number with a fraction or exponent (or NaN/Infinity, which pyarrow's reader
    takes) kept as its text; integers are Python's ints, exact at any size."""


DECODER = json.JSONDecoder(parse_float=Number, parse_constant=Number,
                            object_pairs_hook=unique_members)
_text = json.encoder.encode_basestring_ascii  # a str as JSON text


def _as_pairs(buffer: bytes, schema: pa.Schema) -> bytes:
    write = _writer(pa.struct(list(schema)), "")
    lines = [write(DECODER.decode(line.decode())) for line in buffer.split(b"\n") if line.strip()]
    return ("\n".join(lines) + "\n").encode()


def _writer(t: pa.DataType | None, path: str) -> Callable[[Any], str]:
    """A function writing a parsed JSON value of declared type `t` (None: not declared) as JSON
    text, with the objects of MAP fields as lists of key/value objects."""
    if t is None or not holds_map(t):
        return write_any
    if pa.types.is_map(t):
        item = _writer(t.item_type, f"{path}{{}}")

        def write_map(value: Any) -> str:
            if value is None:
                return "null"
            if type(value) is not dict:
                raise ValueError(f"field '{path}' is a MAP, written in JSON as an object, not {write_any(value)[:40]}")
            return "[" + ",".join(f'{{"key":{_text(k)},"value":{item(v)}}}' for k, v in value.items()) + "]"
        return write_map
    if pa.types.is_struct(t):
        fields = {t.field(i).name: _writer(t.field(i).type, f"{path}.{t.field(i).name}".lstrip("."))
                  for i in range(t.num_fields)}

        def write_struct(value: Any) -> str:
            if type(value) is not dict:
                return write_any(value)  # the reader refuses it as it would the original
            return "{" + ",".join(f"{_text(k)}:{fields.get(k, write_any)(v)}" for k, v in value.items()) + "}"
        return write_struct
    element = _writer(t.value_type, f"{path}[]")

    def write_list(value: Any) -> str:
        return "[" + ",".join(map(element, value)) + "]" if type(value) is list else write_any(value)
    return write_list


def write_any(value: Any) -> str:
    kind = type(value)
    if kind is str:
        return _text(value)
    if kind is Number:
        return value
    if kind is int:
        return str(value)
    if kind is dict:
        return "{" + ",".join(f"{_text(k)}:{write_any(v)}" for k, v in value.items()) + "}"
    if kind is list:
        return "[" + ",".join(map(write_any, value)) + "]"
    return "null" if value is None else ("true" if value else "false")


# ---- back to maps -----------------------------------------------------------------------
def _pairs_type(t: pa.DataType) -> pa.DataType:
    """How `t` is read from the rewritten JSON: each MAP as a list of (key text, value) rows."""
    if pa.types.is_map(t):
        return pa.list_(pa.struct([pa.field("key", pa.string(), False),
                                   pa.field("value", _pairs_type(t.item_type))]))
    if pa.types.is_struct(t):
        return pa.struct([t.field(i).with_type(_pairs_type(t.field(i).type)) for i in range(t.num_fields)])
    if pa.types.is_list(t):
        return pa.list_(t.value_field.with_type(_pairs_type(t.value_type)))
    return t


def _as_maps_type(parsed: pa.DataType, declared: pa.DataType) -> pa.DataType:
    """The type `_as_maps` gives values parsed as `parsed` (ROWs keep the fields the reader
    found beyond `declared`)."""
    if pa.types.is_map(declared):
        value = parsed.value_type.field(1).type
        return pa.map_(declared.key_field, declared.item_field.with_type(_as_maps_type(value, declared.item_type)))
    if pa.types.is_struct(parsed) and pa.types.is_struct(declared):
        return pa.struct([f.with_type(_as_maps_type(f.type, declared.field(f.name).type))
                          if declared.get_field_index(f.name) >= 0 else f for f in parsed])
    if pa.types.is_list(parsed) and pa.types.is_list(declared):
        return pa.list_(parsed.value_field.with_type(_as_maps_type(parsed.value_type, declared.value_type)))
    return parsed


def _as_maps(path: str, array: pa.Array, declared: pa.DataType) -> pa.Array:
    """Parsed values (MAPs as lists of key/value rows) with their MAPs built."""
    if not holds_map(declared):
        return array
    if array.offset:
        array = pa.concat_arrays([array])  # a slice: its own buffers and offsets, from 0
    mask = array.is_null() if array.null_count else None
    if pa.types.is_map(declared):
        entries = array.values
        keys = _keys(path, entries.field(0), declared.key_type)
        if keys.type != entries.field(0).type:
            _check_keys_once(path, array.offsets, keys)
        items = _as_maps(f"{path}{{}}", entries.field(1), declared.item_type)
        return pa.MapArray.from_arrays(array.offsets, keys, items, type=_as_maps_type(array.type, declared),
                                       mask=mask)
    if pa.types.is_struct(declared):
        t = array.type
        children = [_as_maps(f"{path}.{t.field(i).name}", array.field(i), declared.field(t.field(i).name).type)
                    if declared.get_field_index(t.field(i).name) >= 0 else array.field(i)
                    for i in range(t.num_fields)]
        return pa.StructArray.from_arrays(children, fields=list(_as_maps_type(t, declared)), mask=mask)
    values = _as_maps(f"{path}[]", array.values, declared.value_type)
    return pa.ListArray.from_arrays(array.offsets, values, type=_as_maps_type(array.type, declared), mask=mask)


def _check_keys_once(path: str, offsets: pa.Array, keys: pa.Array) -> None:
    """ValueError naming the field when a map holds a key twice once cast ("7" and "07" of an
    INT key): the texts were checked apart already."""
    starts = offsets.to_numpy(zero_copy_only=False)
    owner = np.repeat(np.arange(len(starts) - 1), np.diff(starts))
    pairs = pa.table({"map": owner, "key": keys.slice(starts[0], len(owner))})
    counts = pairs.group_by(["map", "key"]).aggregate([("map", "count")])
    twice = counts.filter(pc.greater(counts.column("map_count"), 1))
    if twice.num_rows:
        raise ValueError(f"field '{path}' has the key {twice.column('key')[0].as_py()!r} twice "
                         "(keys equal as its MAP's key type)")


def _keys(path: str, keys: pa.Array, key_type: pa.DataType) -> pa.Array:
    """A MAP's keys (JSON text) as its key type; ValueError naming the field and a key that is not one."""
    if key_type == keys.type:
        return keys
    try:
        if pa.types.is_decimal(key_type):  # Arrow's cast of text wraps beyond the type ('1e-41' is 0.00)
            return text_decimals(keys, key_type)
        return keys.cast(key_type)
    except DecimalTextRefused as exc:
        raise ValueError(f"field '{path}' has a key that is not a {key_type} (its MAP's key type): {exc}") from None
    except (pa.ArrowInvalid, pa.ArrowNotImplementedError):
        for key in keys.to_pylist():  # the error path: find a culprit to name
            try:
                pa.array([key]).cast(key_type)
            except (pa.ArrowInvalid, pa.ArrowNotImplementedError):
                raise ValueError(f"field '{path}' has the key {key!r}, which is not a {key_type} "
                                 "(its MAP's key type)") from None
        raise
