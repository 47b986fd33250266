"""VARIANT values: the Parquet Variant binary encoding Paimon stores (FORMAT: `VARIANT`; Java's
`GenericVariant`, Spark 4's `VariantVal`), as Arrow structs of `value` and `metadata` bytes.

A variant's `metadata` is a dictionary of the object keys it uses; its `value` is a tree of
typed nodes (primitives, strings, objects of key ids, arrays) whose first byte says what
follows. Spark builds variants with `parse_json` and reads them as `VariantVal`; a Python user
builds them here with `from_json` (in bulk: `variant_json`, the documents it leaves aside
one by one here) or `from_values`, and reads them back with `to_json` (in bulk: `variant_text`,
likewise) or `to_python`, which walks each value in Python; a table's read path hands the bytes
over unchanged. `conform` checks a column on the write path, vectorized.
"""
from __future__ import annotations

import base64
import datetime as dt
import decimal
import functools
import json
import struct
import uuid
from decimal import Decimal
from itertools import accumulate
from typing import Any, Callable, Iterable, Iterator

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from .errors import InvalidOptionError, SchemaMismatchError, UnsupportedOperationError, UnsupportedTypeError
from . import variant_json, variant_text
from .datafile import rebased_offsets
from .java_casts import java_float_text
from .java_text import jackson_quoted
from .numpy_arrow import from_numpy
from .options import CoreOptions
from .types import VARIANT_ARROW, DataField, DataType

_PRIMITIVE, _SHORT_STRING, _OBJECT, _ARRAY = 0, 1, 2, 3
_NULL, _TRUE, _FALSE, _INT8, _INT16, _INT32, _INT64, _DOUBLE = 0, 1, 2, 3, 4, 5, 6, 7
_DECIMAL4, _DECIMAL8, _DECIMAL16, _DATE, _TIMESTAMP, _TIMESTAMP_NTZ = 8, 9, 10, 11, 12, 13
_FLOAT, _BINARY, _STRING, _TIME_NTZ, _TIMESTAMP_NANOS, _TIMESTAMP_NANOS_NTZ, _UUID = 14, 15, 16, 17, 18, 19, 20
_VERSION = 1
_EPOCH = dt.datetime(1970, 1, 1, tzinfo=dt.timezone.utc)
_EPOCH_DATE = dt.date(1970, 1, 1)
_INTEGERS = {_INT8: struct.Struct("<b"), _INT16: struct.Struct("<h"), _INT32: struct.Struct("<i"),
             _INT64: struct.Struct("<q")}
_EXACT = decimal.Context(prec=80)  # room for any 38-digit unscaled value and its scale: no rounding
_DECIMALS = ((_DECIMAL4, 9, 4), (_DECIMAL8, 18, 8), (_DECIMAL16, 38, 16))


class MalformedVariantError(SchemaMismatchError):
    """Bytes that are not a Parquet Variant encoding (raised naming the column or value)."""


class Float32(float):
    """A variant FLOAT (4 bytes) read back: its exact value, printed with the shortest digits
    that identify it as a float, as Java's Float.toString does (1.1, not 1.100000023841858)."""

    def __repr__(self) -> str:
        return repr(float(np.format_float_scientific(np.float32(self), unique=True)))


class TimestampNanos(dt.datetime):
    """A variant TIMESTAMP_NANOS (UTC-aware) or TIMESTAMP_NANOS_NTZ (naive) read back: a datetime
    to the microsecond plus `nanosecond`, the 0-999 nanoseconds below it, which Python's
    datetime cannot hold. Printed with them and written back as nanoseconds, so nothing is cut;
    equal only to a value with the same nanoseconds."""

    nanosecond: int

    def __new__(cls, *args: Any, nanosecond: int = 0, **kwargs: Any) -> "TimestampNanos":
        if not 0 <= nanosecond < 1000:
            raise ValueError(f"nanosecond must be in 0..999, not {nanosecond}")
        moment = super().__new__(cls, *args, **kwargs)
        moment.nanosecond = nanosecond
        return moment

    @classmethod
    def of(cls, moment: dt.datetime, nanosecond: int) -> "TimestampNanos":
        return cls(moment.year, moment.month, moment.day, moment.hour, moment.minute, moment.second,
                   moment.microsecond, moment.tzinfo, nanosecond=nanosecond)

    def replace(self, *args: Any, nanosecond: int | None = None, **kwargs: Any) -> "TimestampNanos":
        """As datetime's, keeping the nanoseconds unless given."""
        moment = dt.datetime.replace(self, *args, **kwargs)
        return TimestampNanos.of(moment, self.nanosecond if nanosecond is None else nanosecond)

    def __eq__(self, other: object) -> bool:
        if not isinstance(other, dt.datetime):
            return NotImplemented
        return dt.datetime.__eq__(self, other) is True and self.nanosecond == getattr(other, "nanosecond", 0)

    def __ne__(self, other: object) -> bool:
        equal = self.__eq__(other)
        return equal if equal is NotImplemented else not equal

    def __hash__(self) -> int:
        return hash((dt.datetime.__hash__(self), self.nanosecond))

    def __repr__(self) -> str:
        return f"{dt.datetime.__repr__(self)[:-1]}, nanosecond={self.nanosecond})"


# ---- building -------------------------------------------------------------------------------
class JsonNumber(str):
    """A JSON number with a fraction or exponent (from `loads`), kept as its text until its
    encoding is chosen: a decimal while it fits, else a double."""


def from_json(texts: Iterable[str | None] | pa.Array | pa.ChunkedArray) -> pa.StructArray:
    """JSON documents as variants (None stays a null variant), as Spark's `parse_json` encodes
    them: integers in the narrowest of 1/2/4/8 bytes, numbers with a fraction as decimals while
    they fit 38 digits (with an exponent, or wider: doubles), an object's fields by key name.
    MalformedVariantError names the document that is not JSON or names a key twice in an object
    (Spark and Java refuse those too). Encoded in bulk (`variant_json`); the documents that path
    leaves aside are parsed and encoded here one by one."""
    if isinstance(texts, pa.ChunkedArray):
        texts = texts.combine_chunks()
    if not isinstance(texts, pa.Array):
        texts = list(texts)
        try:
            texts = pa.array(texts)
        except (pa.ArrowInvalid, pa.ArrowTypeError):  # mixed str and bytes
            return _from_json_one_by_one(list(enumerate(texts)))
    if not (pa.types.is_string(texts.type) or pa.types.is_large_string(texts.type) or pa.types.is_binary(texts.type)
            or pa.types.is_large_binary(texts.type) or pa.types.is_null(texts.type)):
        return _from_json_one_by_one(list(enumerate(texts.to_pylist())))  # which names the first non-text
    return _concatenated([_from_json_in_bulk(chunk, first) for first, chunk in variant_json.chunks(texts)])


def _from_json_in_bulk(texts: pa.Array, first: int) -> pa.StructArray:
    """`from_json` of documents `first`, `first + 1`, ... (the numbers errors name)."""
    present = texts.is_valid().to_numpy(zero_copy_only=False)
    tape = variant_json.tape(*variant_json.binary_documents(texts))
    variants, python = variant_json.encode(tape, np.where(present, tape.top(), -1))
    python &= present
    if not python.any():
        return variants
    left = np.flatnonzero(python)
    encoded = _from_json_one_by_one(list(zip((left + first).tolist(), texts.take(pa.array(left)).to_pylist())))
    return _with_replaced(variants, python, encoded)


def _concatenated(parts: list[pa.Array]) -> pa.Array:
    return parts[0] if len(parts) == 1 else pa.concat_arrays(parts)


def fields_from_json(records: pa.Array, names: Iterable[str]) -> tuple[dict[str, pa.StructArray], set[str]]:
    """The members `names` of JSON records (one document each) as variant columns, as
    `ingest --variant-column` stores them: an absent member, a JSON null and a record that is
    no object give a null variant. Also the keys the records' objects hold at the top. A record
    that is not JSON raises ValueError, as `loads` does. Encoded in bulk (`variant_json`), the
    records that path leaves aside one by one."""
    names = list(names)
    parts: dict[str, list[pa.StructArray]] = {name: [] for name in names}
    keys: set[str] = set()
    for _, chunk in variant_json.chunks(records):
        tape = variant_json.tape(*variant_json.binary_documents(chunk))
        parsed = {i: loads(chunk[i].as_py()) for i in np.flatnonzero(tape.python).tolist()}
        keys |= tape.top_level_keys() | {k for d in parsed.values() if isinstance(d, dict) for k in d}
        for name in names:
            column, python = variant_json.encode(tape, tape.members(name))
            left = np.flatnonzero(python).tolist()
            if left:
                documents = [parsed[i] if i in parsed else loads(chunk[i].as_py()) for i in left]
                members = [d.get(name) if isinstance(d, dict) else None for d in documents]
                column = _with_replaced(column, python, from_values([NULL_VARIANT if m is None else m for m in members]))
            parts[name].append(column)
    return {name: _concatenated(parts[name]) for name in names}, keys


def _from_json_one_by_one(texts: list[tuple[int, str | bytes | None]]) -> pa.StructArray:
    encoded = []
    for i, text in texts:
        try:
            encoded.append(None if text is None else encode(loads(text)))
        except (ValueError, TypeError) as exc:  # not JSON, a key given twice, a lone surrogate
            raise MalformedVariantError(f"document {i} is no variant's JSON ({exc}): {str(text)[:80]!r}") from None
    return _variants(encoded)


def _with_replaced(variants: pa.StructArray, where: np.ndarray, replacements: pa.StructArray) -> pa.StructArray:
    """`variants` with the items at `where` (a mask) taken from `replacements`, in order."""
    mask = pa.array(where)
    fields = [pc.replace_with_mask(variants.field(name), mask, replacements.field(name).cast(pa.binary()))
              for name in ("value", "metadata")]
    valid = variants.is_valid().to_numpy(zero_copy_only=False)
    valid[where] = replacements.is_valid().to_numpy(zero_copy_only=False)
    return pa.StructArray.from_arrays(fields, fields=list(VARIANT_ARROW), mask=from_numpy(~valid))


NULL_VARIANT = object()  # in `from_values`: a null variant (SQL NULL), not one holding JSON null


def loads(text: str | bytes) -> Any:
    """A JSON document as `from_values` takes it (numbers with a fraction kept as their text)."""
    return _DECODER.decode(text.decode() if isinstance(text, (bytes, bytearray)) else text)


def from_values(documents: Iterable[Any]) -> pa.StructArray:
    """Python values (see `encode`; JSON-parsed ones from `loads`) as variants; `None` is a
    variant holding JSON null, `NULL_VARIANT` a null variant."""
    return _variants([None if document is NULL_VARIANT else encode(document) for document in documents])


def _variants(encoded: list[tuple[bytes, bytes] | None]) -> pa.StructArray:
    """Encoded (value, metadata) pairs as a variant column; None is a null variant."""
    valid = np.array([pair is not None for pair in encoded], bool)
    pairs = [pair or (b"", b"") for pair in encoded]
    return pa.StructArray.from_arrays([pa.array([v for v, _ in pairs], pa.binary()),
                                       pa.array([m for _, m in pairs], pa.binary())],
                                      fields=list(VARIANT_ARROW), mask=from_numpy(~valid))


def _refuse_constant(name: str) -> Any:
    raise ValueError(f"{name} is not a JSON number")


def unique_members(pairs: list[tuple[str, Any]]) -> dict[str, Any]:
    """A JSON object (json's `object_pairs_hook`); one naming a key twice is refused, as Spark's
    `parse_json`, Java's `GenericVariant.fromJson` and pyarrow's JSON reader refuse it (Python's
    json would keep the last value silently)."""
    members = dict(pairs)
    if len(members) != len(pairs):
        seen: set[str] = set()
        twice = next(k for k, _ in pairs if k in seen or seen.add(k))
        raise ValueError(f"the key {twice!r} is given twice in one JSON object")
    return members


_DECODER = json.JSONDecoder(parse_float=JsonNumber, parse_constant=_refuse_constant, object_pairs_hook=unique_members)


def utf16_order(key: str) -> bytes:
    """The order of an object's fields: Java's String order (UTF-16 code units), which Spark's
    parse_json writes and its `variant_get` binary-searches in objects of 32 fields or more
    (Paimon 1.4 likewise). It differs from code point order only between characters beyond the
    BMP and U+E000-U+FFFF."""
    return key.encode("utf-16-be", "surrogatepass")


def encode(document: Any) -> tuple[bytes, bytes]:
    """One Python value (dict with str keys, list, str, bool, int, float, Decimal, bytes, date,
    datetime, time without a zone, UUID, None; numpy's numbers by value) as a variant's (value,
    metadata). One pass: keys get ids as they are met (the dictionary is then unsorted, which
    the encoding allows), objects list their fields by key name (`utf16_order`)."""
    ids: dict[str, int] = {}
    value = _encode(document, ids)
    return value, _metadata(tuple(ids))


@functools.lru_cache(maxsize=4096)
def _metadata(keys: tuple[str, ...]) -> bytes:
    """The dictionary of `keys` (cached: the documents of a stream mostly share their keys)."""
    encoded = [k.encode() for k in keys]
    offsets = list(accumulate((len(k) for k in encoded), initial=0))
    width = _width(max(len(keys), offsets[-1]))
    header = _VERSION | ((width - 1) << 6)  # keys unique, in the order met (not sorted)
    return bytes([header]) + _uints([len(keys)] + offsets, width) + b"".join(encoded)


_NULL_BYTE, _TRUE_BYTE, _FALSE_BYTE = bytes([_NULL << 2]), bytes([_TRUE << 2]), bytes([_FALSE << 2])
_INT8_BYTE, _INT16_BYTE, _INT32_BYTE = _INT8 << 2, _INT16 << 2, _INT32 << 2


def _encode(value: Any, ids: dict[str, int]) -> bytes:
    kind = type(value)
    if kind is str:
        data = value.encode()
        if len(data) < 64:
            return bytes([_SHORT_STRING | (len(data) << 2)]) + data
        return bytes([_primitive(_STRING)]) + struct.pack("<I", len(data)) + data
    if kind is int:
        if -128 <= value < 128:
            return struct.pack("<Bb", _INT8_BYTE, value)
        if -32768 <= value < 32768:
            return struct.pack("<Bh", _INT16_BYTE, value)
        if -2147483648 <= value < 2147483648:
            return struct.pack("<Bi", _INT32_BYTE, value)
        return _encode_big_int(value)
    if kind is dict:
        try:
            keys = sorted(value)
        except TypeError:  # keys of several types
            raise MalformedVariantError(f"variant object keys are strings, not {list(value)!r}") from None
        if keys and type(keys[-1]) is str and keys[-1] >= "\ue000":  # (keys sorted by code point here)
            keys.sort(key=utf16_order)
        field_ids = []
        for k in keys:
            i = ids.get(k)
            if i is None:
                if type(k) is not str:
                    raise MalformedVariantError(f"variant object keys are strings, not {k!r}")
                i = ids[k] = len(ids)
            field_ids.append(i)
        id_width = _width(max(field_ids, default=0))
        return _container(_OBJECT, [_encode(value[k], ids) for k in keys], (id_width - 1) << 2,
                          _uints(field_ids, id_width))
    if kind is list or kind is tuple:
        return _container(_ARRAY, [_encode(v, ids) for v in value], 0, b"")
    if value is None:
        return _NULL_BYTE
    if kind is bool:
        return _TRUE_BYTE if value else _FALSE_BYTE
    if kind is JsonNumber:
        return _encode_number(value)
    if kind is float:
        return bytes([_primitive(_DOUBLE)]) + struct.pack("<d", value)
    if kind is Float32:
        return bytes([_primitive(_FLOAT)]) + struct.pack("<f", value)
    if isinstance(value, Decimal):
        return _encode_decimal(value, strict=True)
    if isinstance(value, (bytes, bytearray)):
        return bytes([_primitive(_BINARY)]) + struct.pack("<I", len(value)) + bytes(value)
    if isinstance(value, dt.datetime):
        aware = value.tzinfo is not None
        micros = ((value - _EPOCH) if aware else (value - _EPOCH.replace(tzinfo=None))) // dt.timedelta(microseconds=1)
        if isinstance(value, TimestampNanos):
            type_id, ticks = (_TIMESTAMP_NANOS if aware else _TIMESTAMP_NANOS_NTZ), micros * 1000 + value.nanosecond
            return bytes([_primitive(type_id)]) + struct.pack("<q", ticks)
        return bytes([_primitive(_TIMESTAMP if aware else _TIMESTAMP_NTZ)]) + struct.pack("<q", micros)
    if isinstance(value, dt.date):
        return bytes([_primitive(_DATE)]) + struct.pack("<i", (value - _EPOCH_DATE).days)
    if isinstance(value, dt.time) and value.tzinfo is None:
        micros = ((value.hour * 60 + value.minute) * 60 + value.second) * 1_000_000 + value.microsecond
        return bytes([_primitive(_TIME_NTZ)]) + struct.pack("<q", micros)
    if isinstance(value, uuid.UUID):
        return bytes([_primitive(_UUID)]) + value.bytes
    for base in (int, float, str, dict, list):  # subclasses: IntEnum, OrderedDict, ... (bool has none)
        if isinstance(value, base):
            return _encode(base(value), ids)
    if isinstance(value, (np.integer, np.bool_, np.floating)):  # numpy's (pandas') numbers, by value
        return _encode(Float32(value) if isinstance(value, np.float32) else value.item(), ids)
    raise MalformedVariantError(f"a variant cannot hold {type(value).__name__} {value!r}")


def _encode_big_int(value: int) -> bytes:
    if -(1 << 63) <= value < (1 << 63):
        return bytes([_primitive(_INT64)]) + struct.pack("<q", value)
    return _encode_decimal(Decimal(value), strict=False) or bytes([_primitive(_DOUBLE)]) + struct.pack("<d", float(value))


def _encode_number(text: str) -> bytes:
    if "e" not in text and "E" not in text:
        encoded = _encode_decimal(Decimal(text), strict=False)
        if encoded:
            return encoded
    return bytes([_primitive(_DOUBLE)]) + struct.pack("<d", float(text))


def _encode_decimal(number: Decimal, strict: bool) -> bytes:
    """A decimal in the narrowest of 4/8/16 bytes. Over 38 digits: an error when `strict` (a
    Python Decimal), else b"" (a JSON number, which then becomes a double, as in Spark)."""
    exponent = number.as_tuple().exponent
    scale = max(0, -exponent)
    unscaled = int(number.scaleb(scale, _EXACT))
    precision = max(len(str(abs(unscaled))), scale)
    for type_id, max_precision, size in _DECIMALS:
        if precision <= max_precision:
            return bytes([_primitive(type_id), scale]) + unscaled.to_bytes(size, "little", signed=True)
    if strict:
        raise MalformedVariantError(f"{number} has more than 38 digits, more than a variant decimal holds")
    return b""


def _container(basic: int, parts: list[bytes], id_bits: int, field_ids: bytes) -> bytes:
    """An object (`field_ids` in key order) or an array: header, count, ids, offsets, items."""
    offsets = list(accumulate(map(len, parts), initial=0))
    offset_width = _width(offsets[-1])
    large = len(parts) > 0xFF
    large_bit = (1 << (4 if basic == _OBJECT else 2)) if large else 0
    header = bytes([basic | ((offset_width - 1 | id_bits | large_bit) << 2)])
    return b"".join((header, _uint(len(parts), 4 if large else 1), field_ids, _uints(offsets, offset_width), *parts))


def _primitive(type_id: int) -> int:
    return _PRIMITIVE | (type_id << 2)


def _width(largest: int) -> int:
    return 1 if largest <= 0xFF else 2 if largest <= 0xFFFF else 3 if largest <= 0xFFFFFF else 4


def _uint(value: int, width: int) -> bytes:
    return value.to_bytes(width, "little")


_UINT_FORMATS = {1: "B", 2: "H", 4: "I"}


def _uints(values: list[int], width: int) -> bytes:
    """Little-endian unsigned integers of `width` bytes (3: four-byte ones cut to three)."""
    if width == 3:
        packed = struct.pack(f"<{len(values)}I", *values)
        return b"".join(packed[i:i + 3] for i in range(0, len(packed), 4))
    return struct.pack(f"<{len(values)}{_UINT_FORMATS[width]}", *values)


# ---- reading --------------------------------------------------------------------------------
def to_python(variants: pa.Array | pa.ChunkedArray) -> list[Any]:
    """Each variant as Python values: dict, list, str, int, Decimal, float (`Float32` for a
    FLOAT), bool, bytes, date, datetime (UTC-aware for a timestamp, naive for timestamp_ntz;
    `TimestampNanos` for the nanosecond ones), time, UUID, None for a null variant and for a variant's JSON null."""
    values = variants.field("value") if isinstance(variants, pa.StructArray) else pc.struct_field(variants, "value")
    metadatas = (variants.field("metadata") if isinstance(variants, pa.StructArray)
                 else pc.struct_field(variants, "metadata"))
    valid = variants.is_valid().to_pylist()
    return [decode(v, m) if ok else None for v, m, ok in zip(values.to_pylist(), metadatas.to_pylist(), valid)]


def to_json(variants: pa.Array | pa.ChunkedArray) -> pa.StringArray:
    """Each variant as compact JSON text, the same text as Java's `Variant.toJson()` and Spark's
    `to_json`: an object's fields by key name, decimals without trailing zeros, doubles and
    floats as Java's Double/Float.toString (1.0E10; NaN and Infinity quoted), timestamps as
    "2026-11-29 12:00:00.5+00:00" (UTC) and timestamp_ntz without the offset, dates in ISO 8601,
    bytes as base64 strings; null for a null variant."""
    if isinstance(variants, pa.ChunkedArray):
        variants = variants.combine_chunks()
    values, metadatas = variants.field("value"), variants.field("metadata")
    valid = variants.is_valid().to_numpy(zero_copy_only=False)
    parts = []
    for first, chunk in variant_json.chunks(values):
        end = first + len(chunk)
        texts, python = variant_text.json_texts(chunk, metadatas.slice(first, len(chunk)), valid[first:end])
        if python.any():
            left = variants.slice(first, len(chunk)).filter(pa.array(python))
            texts = pc.replace_with_mask(texts, pa.array(python), pa.array(_to_json_one_by_one(left), pa.large_string()))
        parts.append(texts)
    texts = pa.concat_arrays(parts) if len(parts) != 1 else parts[0]
    return pc.if_else(pa.array(valid), texts, pa.scalar(None, pa.large_string())).cast(pa.string())


def _to_json_one_by_one(variants: pa.StructArray) -> list[str | None]:
    """`to_json` value by value in Python (the variants the bulk path leaves aside)."""
    documents = to_python(variants)
    doubles: list[float] = []
    floats: list[float] = []
    _gather_floats(documents, doubles, floats)
    texts = {float: iter(_float_texts(doubles, pa.float64())), Float32: iter(_float_texts(floats, pa.float32()))}
    valid = variants.is_valid().to_pylist()
    return [_json(v, texts) if ok else None for v, ok in zip(documents, valid)]


def _gather_floats(value: Any, doubles: list[float], floats: list[float]) -> None:
    """The doubles and floats in `value`, in the order `_json` meets them (printed all at once)."""
    if isinstance(value, dict):
        value = list(value.values())
    if isinstance(value, list):
        for v in value:
            _gather_floats(v, doubles, floats)
    elif isinstance(value, float):
        (floats if isinstance(value, Float32) else doubles).append(value)


def _float_texts(values: list[float], arrow_type: pa.DataType) -> list[str]:
    """Java's text of each value, as JSON: NaN and the infinities quoted, as Java's toJson does."""
    if not values:
        return []
    texts = java_float_text(pa.array(values, arrow_type)).to_pylist()
    return [json.dumps(t) if t[-1] in "Ny" else t for t in texts]


def _json(value: Any, float_texts: dict[type, Iterator[str]]) -> str:
    if isinstance(value, dict):
        return "{" + ",".join(jackson_quoted(k) + ":" + _json(v, float_texts) for k, v in value.items()) + "}"
    if isinstance(value, list):
        return "[" + ",".join(_json(v, float_texts) for v in value) + "]"
    if isinstance(value, str):
        return jackson_quoted(value)
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, float):
        return next(float_texts[type(value)])
    if isinstance(value, Decimal):  # trailing zeros dropped, as Spark's and Java's toJson do
        return format(value.normalize(_EXACT), "f")
    if isinstance(value, (bytes, bytearray)):
        return json.dumps(base64.b64encode(value).decode())
    if isinstance(value, dt.datetime):
        text = dt.datetime.isoformat(value, sep=" ", timespec="seconds")[:19]
        fraction = (f"{value.microsecond:06d}{value.nanosecond:03d}" if isinstance(value, TimestampNanos)
                    else f"{value.microsecond:06d}")
        text = _without_trailing_zeros(f"{text}.{fraction}")
        return json.dumps(text + ("+00:00" if value.tzinfo is not None else ""))
    if isinstance(value, dt.time):
        return json.dumps(_without_trailing_zeros(value.isoformat()))
    if isinstance(value, (dt.date, uuid.UUID)):  # as Spark's toJson: their canonical text, quoted
        return json.dumps(str(value))
    return json.dumps(value)


def _without_trailing_zeros(clock: str) -> str:
    """ISO time text with the fraction's trailing zeros dropped (and the point, if nothing is
    left), as java.time's ISO_LOCAL_TIME prints it."""
    if "." not in clock:
        return clock
    return clock.rstrip("0").rstrip(".")


def decode(value: bytes, metadata: bytes) -> Any:
    """One variant's (value, metadata) as Python values (see `to_python`)."""
    try:
        keys = _dictionary(bytes(metadata))
        decoded, _ = _decode(memoryview(value), 0, keys, [len(value)])
        return decoded
    except (IndexError, struct.error, ValueError, UnicodeDecodeError) as exc:
        raise MalformedVariantError(f"malformed variant ({exc}): value {bytes(value[:16]).hex()}..., "
                                    f"metadata {bytes(metadata[:16]).hex()}...") from None


@functools.lru_cache(maxsize=4096)
def _dictionary(metadata: bytes) -> tuple[str, ...]:
    """The keys of a variant's metadata (cached: the variants of a column mostly share theirs)."""
    header = metadata[0]
    if header & 0x0F != _VERSION:
        raise ValueError(f"metadata version {header & 0x0F}, not {_VERSION}")
    width = (header >> 6) + 1
    count = int.from_bytes(metadata[1:1 + width], "little")
    start = 1 + width
    offsets = [int.from_bytes(metadata[start + i * width:start + (i + 1) * width], "little") for i in range(count + 1)]
    base = start + (count + 1) * width
    return tuple(bytes(metadata[base + offsets[i]:base + offsets[i + 1]]).decode() for i in range(count))


def _decode(buf: memoryview, pos: int, keys: tuple[str, ...], budget: list[int]) -> tuple[Any, int]:
    """The value at `pos` and where it ends. `budget`: the values left to read; each has a byte
    of its own, so damaged offsets that read values again (and again: exponentially) stop."""
    budget[0] -= 1
    if budget[0] < 0:
        raise ValueError("more values than bytes: offsets read values twice")
    header = buf[pos]
    basic, info = header & 0x3, header >> 2
    if basic == _SHORT_STRING:
        return bytes(buf[pos + 1:pos + 1 + info]).decode(), pos + 1 + info
    if basic in (_OBJECT, _ARRAY):
        offset_width = (info & 0x3) + 1
        if basic == _OBJECT:
            id_width, large = ((info >> 2) & 0x3) + 1, (info >> 4) & 1
        else:
            id_width, large = 0, (info >> 2) & 1
        count_width = 4 if large else 1
        count = int.from_bytes(buf[pos + 1:pos + 1 + count_width], "little")
        ids_at = pos + 1 + count_width
        offsets_at = ids_at + count * id_width
        data_at = offsets_at + (count + 1) * offset_width
        offsets = _read_uints(buf, offsets_at, count + 1, offset_width)
        items = [_decode(buf, data_at + offset, keys, budget)[0] for offset in offsets[:-1]]
        end = data_at + offsets[count]
        if basic == _ARRAY:
            return items, end
        return {keys[i]: item for i, item in zip(_read_uints(buf, ids_at, count, id_width), items)}, end
    return _decode_primitive(buf, pos + 1, info)


def _read_uints(buf: memoryview, at: int, count: int, width: int) -> tuple[int, ...]:
    """`count` little-endian unsigned integers of `width` bytes from `at`."""
    if width == 3:
        return tuple(int.from_bytes(buf[at + i * 3:at + i * 3 + 3], "little") for i in range(count))
    return struct.unpack_from(f"<{count}{_UINT_FORMATS[width]}", buf, at)


def _decode_primitive(buf: memoryview, at: int, type_id: int) -> tuple[Any, int]:
    if type_id == _NULL:
        return None, at
    if type_id in (_TRUE, _FALSE):
        return type_id == _TRUE, at
    if type_id in _INTEGERS:
        fmt = _INTEGERS[type_id]
        return fmt.unpack_from(buf, at)[0], at + fmt.size
    if type_id == _DOUBLE:
        return struct.unpack_from("<d", buf, at)[0], at + 8
    if type_id == _FLOAT:
        return Float32(struct.unpack_from("<f", buf, at)[0]), at + 4
    for decimal_type, _, size in _DECIMALS:
        if type_id == decimal_type:
            scale = buf[at]
            unscaled = int.from_bytes(buf[at + 1:at + 1 + size], "little", signed=True)
            return Decimal(unscaled).scaleb(-scale, _EXACT), at + 1 + size
    if type_id == _DATE:
        days = struct.unpack_from("<i", buf, at)[0]
        day = _in_python_years(lambda: _EPOCH_DATE + dt.timedelta(days=days), f"date {days} days from 1970-01-01")
        return day, at + 4
    if type_id in (_TIMESTAMP, _TIMESTAMP_NTZ, _TIMESTAMP_NANOS, _TIMESTAMP_NANOS_NTZ):
        ticks = struct.unpack_from("<q", buf, at)[0]
        nanos = type_id in (_TIMESTAMP_NANOS, _TIMESTAMP_NANOS_NTZ)
        micros = ticks // 1000 if nanos else ticks
        moment = _in_python_years(lambda: _EPOCH + dt.timedelta(microseconds=micros),
                                  f"timestamp {ticks} {'nano' if nanos else 'micro'}seconds from 1970-01-01")
        if type_id in (_TIMESTAMP_NTZ, _TIMESTAMP_NANOS_NTZ):
            moment = moment.replace(tzinfo=None)
        return (TimestampNanos.of(moment, ticks % 1000) if nanos else moment), at + 8
    if type_id == _TIME_NTZ:
        micros = struct.unpack_from("<q", buf, at)[0]
        if not 0 <= micros < 86_400_000_000:
            raise ValueError(f"a time of day of {micros} microseconds")
        return (dt.datetime.min + dt.timedelta(microseconds=micros)).time(), at + 8
    if type_id in (_BINARY, _STRING):
        size = struct.unpack_from("<I", buf, at)[0]
        data = bytes(buf[at + 4:at + 4 + size])
        return (data.decode() if type_id == _STRING else data), at + 4 + size
    if type_id == _UUID:
        return uuid.UUID(bytes=bytes(buf[at:at + 16])), at + 16
    raise ValueError(f"unknown primitive type {type_id}")


def _in_python_years(build: Callable[[], Any], what: str) -> Any:
    """A date or datetime that Python holds (years 1 to 9999), or an error naming the value: a
    variant may hold any (Java prints year 10000 as +10000-01-01); read those with Spark or Java."""
    try:
        return build()
    except OverflowError:
        raise UnsupportedOperationError(f"a variant holds a {what}, outside the years 1 to 9999 that "
                                        "Python's datetime holds; read it with Spark's variant_get or Java") from None


# ---- checking writes ------------------------------------------------------------------------
def conform(name: str, column: pa.Array | pa.ChunkedArray, t: DataType) -> pa.Array | pa.ChunkedArray:
    """A column of type `t` about to be written, with every VARIANT in it (also in ROW fields,
    ARRAY elements and MAP values) checked, and the parts of null variants (or of variants under
    a null ROW, ARRAY or MAP) made empty: Parquet stores them as required fields.
    MalformedVariantError naming the column when a non-null variant lacks its value or metadata,
    or its metadata is not of the encoding's version 1: such bytes would be stored and fail every
    reader later (Java's included). Unchanged when `t` holds no variant."""
    if t.root != "VARIANT" and not holds_variant(t):
        return column
    if isinstance(column, pa.ChunkedArray):
        return pa.chunked_array([_conform_chunk(name, c, t, None) for c in column.chunks])
    return _conform_chunk(name, column, t, None)


def _conform_chunk(name: str, arr: pa.Array, t: DataType, outer: np.ndarray | None) -> pa.Array:
    """`outer`: whether each row's enclosing values are all non-null (None: top level)."""
    valid = arr.is_valid().to_numpy(zero_copy_only=False)
    if outer is not None:
        valid = valid & outer
    if t.root == "VARIANT":
        return _check_variants(name, arr, valid)
    if not holds_variant(t):
        return arr
    mask = None if valid.all() else from_numpy(~valid)
    if t.root == "ROW":
        children = [_conform_chunk(f"{name}.{f.name}", arr.field(f.name), f.type, valid) for f in t.fields]
        return pa.StructArray.from_arrays(children, fields=[arr.type.field(f.name).with_type(c.type)
                                                            for f, c in zip(t.fields, children)], mask=mask)
    offsets, start = rebased_offsets(arr)
    bounds = offsets.to_numpy()
    owners = np.repeat(valid, np.diff(bounds))  # each element's list (map) is non-null
    if t.root == "ARRAY":
        values = _conform_chunk(f"{name}[]", arr.values.slice(start, bounds[-1]), t.element, owners)
        return pa.ListArray.from_arrays(offsets, values, type=pa.list_(arr.type.value_field.with_type(values.type)),
                                        mask=mask)
    items = _conform_chunk(f"{name}[value]", arr.items.slice(start, bounds[-1]), t.value, owners)  # keys hold none
    return pa.MapArray.from_arrays(offsets, arr.keys.slice(start, bounds[-1]), items, mask=mask)


def _check_variants(name: str, chunk: pa.StructArray, valid: np.ndarray) -> pa.StructArray:
    value, metadata = chunk.field("value"), chunk.field("metadata")
    for part, array in (("value", value), ("metadata", metadata)):
        empty = pc.equal(pc.binary_length(array.fill_null(b"")), 0).to_numpy(zero_copy_only=False)
        missing = np.flatnonzero(empty & valid)
        if len(missing):
            raise MalformedVariantError(f"VARIANT column {name!r}: row {int(missing[0])} has no variant {part} bytes")
    keep = from_numpy(valid)
    versioned = pc.if_else(keep, metadata, pa.scalar(b"\x01", metadata.type))
    first = pc.binary_slice(versioned, 0, 1).cast(pa.binary())
    starts = np.frombuffer(first.buffers()[1], np.int32)[first.offset:first.offset + len(first)]
    version = np.frombuffer(first.buffers()[2], np.uint8)[starts] & 0x0F
    wrong = np.flatnonzero(version != _VERSION)
    if len(wrong):
        raise MalformedVariantError(f"VARIANT column {name!r}: row {int(wrong[0])}'s metadata is of version "
                                    f"{int(version[wrong[0]])}, not the Variant encoding's {_VERSION}")
    blank = pa.scalar(b"", pa.binary())
    children = [pc.if_else(keep, value.cast(pa.binary()), blank), pc.if_else(keep, metadata.cast(pa.binary()), blank)]
    return pa.StructArray.from_arrays(children, fields=list(VARIANT_ARROW), mask=None if valid.all() else from_numpy(~valid))


# ---- where a table may hold variants ---------------------------------------------------------
def check_table(fields: Iterable[DataField], options: dict[str, str], keyed: Iterable[str]) -> None:
    """A table's VARIANT columns (also inside ROW, ARRAY and MAP values), as Paimon allows them:
    in Parquet files only (Java's ORC and Avro writers have no encoding for them), never a
    partition, bucket or sequence column (a variant has no order and no BinaryRow form), nor a
    MAP key or MULTISET element (map keys are compared)."""
    variants = [f.name for f in fields if f.type.root == "VARIANT" or holds_variant(f.type)]
    for f in fields:
        if _keyed_variant(f.type):
            raise UnsupportedTypeError(f"column {f.name!r} ({f.type}) holds a VARIANT as a MAP key or MULTISET "
                                       "element; a variant has no order to compare keys by")
    if not variants:
        return
    keyed_variants = sorted(set(variants) & set(keyed))
    if keyed_variants:
        raise InvalidOptionError(f"column(s) {keyed_variants} holding a VARIANT cannot be partition, bucket or "
                                 "sequence columns (a variant has no order)")
    core = CoreOptions(options)  # the formats as Java reads them (a per-level map's quotes, spaces)
    named = [f"{k}={options[k]}" for k in ("file.format", "changelog-file.format", "file.format.per.level")
             if k in options and any(fmt != "parquet" for fmt in (
                 core.get(k).values() if k == "file.format.per.level" else [core.get(k)]))]
    if named:
        raise InvalidOptionError(f"VARIANT column(s) {variants} need Parquet data files, as in Apache Paimon; "
                                 f"the table sets {', '.join(named)}")


def _keyed_variant(t: DataType) -> bool:
    key = t.key if t.root == "MAP" else t.element if t.root == "MULTISET" else None
    if key is not None and (key.root == "VARIANT" or holds_variant(key)):
        return True
    children = [c for c in (t.element, t.value) if c is not None] + [f.type for f in t.fields]
    return any(_keyed_variant(c) for c in children)


def holds_variant(t: DataType) -> bool:
    """Whether a VARIANT is nested in `t` (a ROW field, an ARRAY element, a MAP key or value)."""
    children = [c for c in (t.element, t.key, t.value) if c is not None] + [f.type for f in t.fields]
    return any(c.root == "VARIANT" or holds_variant(c) for c in children)
