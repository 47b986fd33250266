"""DECIMAL fields from JSON, exact or refused.

pyarrow's JSON reader converts a number (or a string) into a decimal field as Arrow's cast
converts text (decimal_text.py): a value with an exponent, more digits than the decimal's
backing width (38, 76 for a decimal256) or more digits before the point than the width leaves
beside the scale comes out as another number ({"k": -7e36} into DECIMAL(38, 2)). A value
without those is read exactly, or refused by the reader (also one with zeros beyond the
precision, 6.000000 into DECIMAL(2, 1)). `exact` wraps a reader: one regex over the buffer
looks for such values (in any field: it cannot tell them apart); the rare buffer holding one,
or one the reader refuses, is parsed in Python, its DECIMAL fields rewritten as JSON strings of
the values' text, read as text and cast by `text_decimals`.
"""
from __future__ import annotations

import json
from typing import Any, Callable

import pyarrow as pa
import pyarrow.compute as pc

from paimon_streaming.decimal_text import DecimalTextRefused, text_decimals
from paimon_streaming.types import map_arrow_leaves
from paimon_streaming.variant import unique_members

from .json_maps import Number, write_any

__all__ = ["exact"]

Reader = Callable[[bytes, pa.Schema], pa.Table]
# every number kept as its text (an int of 5000 digits too, which json's int() refuses)
_DECODER = json.JSONDecoder(parse_float=Number, parse_int=Number, parse_constant=Number,
                            object_pairs_hook=unique_members)
_text = json.encoder.encode_basestring_ascii


def exact(read_json: Reader) -> Reader:
    """`read_json` (newline-delimited JSON objects as rows of a schema), with every DECIMAL
    field read exactly; a value one cannot hold is an ArrowInvalid naming the field."""
    def read(buffer: bytes, schema: pa.Schema) -> pa.Table:
        leaves = [t for f in schema for t in _decimal_leaves(f.type)]
        if not leaves:
            return read_json(buffer, schema)
        if pc.match_substring_regex(pa.array([buffer], pa.large_binary()), _risky(leaves))[0].as_py():
            return _read_exactly(buffer, schema, read_json, None)
        try:
            return read_json(buffer, schema)
        except pa.ArrowInvalid as exc:  # maybe for zeros beyond the precision or scale (6.000000 into DECIMAL(2, 1))
            return _read_exactly(buffer, schema, read_json, exc)
    return read


def _read_exactly(buffer: bytes, schema: pa.Schema, read_json: Reader, refused: pa.ArrowInvalid | None) -> pa.Table:
    """The records parsed in Python, their DECIMAL fields rewritten as text, read, and cast."""
    try:
        rewritten = _rewritten(buffer, pa.struct(list(schema)))
    except ValueError:  # no JSON: the reader's error says where
        if refused is None:
            return read_json(buffer, schema)
        raise refused from None
    as_text = pa.schema([f.with_type(map_arrow_leaves(f.type, _as_text)) for f in schema])
    table = read_json(rewritten, as_text)
    for f in schema:
        if f.name in table.column_names and _decimal_leaves(f.type):
            i = table.column_names.index(f.name)
            table = table.set_column(i, f.name, _decimals(f.name, table.column(i).combine_chunks(), f.type))
    return table


def _decimal_leaves(t: pa.DataType) -> list[pa.DataType]:
    if pa.types.is_decimal(t):
        return [t]
    if pa.types.is_struct(t):
        return [d for i in range(t.num_fields) for d in _decimal_leaves(t.field(i).type)]
    if pa.types.is_list(t) or pa.types.is_map(t):
        return _decimal_leaves(t.value_type if pa.types.is_list(t) else t.key_type) + \
            (_decimal_leaves(t.item_type) if pa.types.is_map(t) else [])
    return []


def _as_text(t: pa.DataType) -> pa.DataType:
    return pa.string() if pa.types.is_decimal(t) else t


def _risky(leaves: list[pa.DataType]) -> str:
    """A value a decimal field may take wrongly: a number, or a string holding one, with an
    exponent; a run of more digits than the narrowest backing width (and the point); one of
    more digits before the point than a width leaves beside its scale. (Searched by Arrow's RE2,
    whose automaton scans a batch about 30 times faster than Python's re tries the alternatives.)"""
    width = min(38 if pa.types.is_decimal128(t) else 76 for t in leaves)
    whole = min((38 if pa.types.is_decimal128(t) else 76) - t.scale for t in leaves)
    return r'[:\[,]\s*-?[\d.]+[eE]|"[+-]?[\d.]+[eE][+-]?\d+"|\d[\d.]{%d}|\d{%d}' % (width, whole + 1)


def _rewritten(buffer: bytes, t: pa.DataType) -> bytes:
    write = _writer(t)
    return b"".join(write(_DECODER.decode(line.decode())).encode() + b"\n"
                    for line in buffer.split(b"\n") if line.strip())


def _writer(t: pa.DataType) -> Callable[[Any], str]:
    """A function writing a parsed JSON value of declared type `t` as JSON text, with each
    number or string a DECIMAL field holds as a string of its text."""
    if pa.types.is_decimal(t):
        return lambda value: _text(value) if isinstance(value, str) else write_any(value)
    if pa.types.is_struct(t):
        fields = {t.field(i).name: _writer(t.field(i).type) for i in range(t.num_fields)}

        def write_struct(value: Any) -> str:
            if type(value) is not dict:
                return write_any(value)  # the reader refuses it as it would the original
            return "{" + ",".join(f"{_text(k)}:{fields.get(k, write_any)(v)}" for k, v in value.items()) + "}"
        return write_struct
    if pa.types.is_list(t):
        element = _writer(t.value_type)
        return lambda value: "[" + ",".join(map(element, value)) + "]" if type(value) is list else write_any(value)
    return write_any


def _decimals(path: str, array: pa.Array, declared: pa.DataType) -> pa.Array:
    """Values read with `declared`'s DECIMALs as text, those cast to the DECIMALs (fields the
    reader found beyond `declared` kept)."""
    if pa.types.is_decimal(declared):
        try:
            return text_decimals(array, declared)
        except DecimalTextRefused as exc:  # refused as the reader refuses a value (callers may read the text)
            raise pa.ArrowInvalid(f"Failed to convert JSON to {declared} (field '{path}'): {exc}") from None
    if array.offset and (pa.types.is_struct(declared) or pa.types.is_list(declared)):
        array = pa.concat_arrays([array])  # a slice: its own buffers and offsets, from 0
    mask = array.is_null() if array.null_count else None
    if pa.types.is_struct(declared):
        t = array.type
        children = [_decimals(f"{path}.{t.field(i).name}", array.field(i), declared.field(t.field(i).name).type)
                    if declared.get_field_index(t.field(i).name) >= 0 else array.field(i) for i in range(t.num_fields)]
        return pa.StructArray.from_arrays(children, fields=[t.field(i).with_type(c.type) for i, c in enumerate(children)],
                                          mask=mask)
    if pa.types.is_list(declared):
        values = _decimals(f"{path}[]", array.values, declared.value_type)
        return pa.ListArray.from_arrays(array.offsets, values, type=pa.list_(array.type.value_field.with_type(values.type)),
                                        mask=mask)
    return array
