"""Paimon data types: the JSON grammar of schema files, and the mapping to and from Arrow.

A type is one frozen `DataType` record; composite types carry their children. The JSON form
follows Java's serializer byte for byte where it matters (``DECIMAL(p, s)`` with a space,
``NOT NULL`` suffixes, composite types as objects, STRING/BYTES for the unbounded variants).
"""
from __future__ import annotations

import re
from dataclasses import dataclass, replace
from typing import Any, Callable, Iterator

import pyarrow as pa

from .errors import UnsupportedTypeError

MAX_LENGTH = 2147483647

# Roots whose JSON form is a bare word.
_PLAIN = {"BOOLEAN", "TINYINT", "SMALLINT", "INT", "BIGINT", "FLOAT", "DOUBLE", "DATE", "VARIANT"}
_ALIASES = {"INTEGER": "INT", "NUMERIC": "DECIMAL", "DEC": "DECIMAL"}
_DEFAULT_PRECISION = {"CHAR": 1, "VARCHAR": 1, "BINARY": 1, "VARBINARY": 1, "DECIMAL": 10,
                      "TIME": 0, "TIMESTAMP": 6, "TIMESTAMP_LTZ": 6}


@dataclass(frozen=True)
class DataField:
    id: int
    name: str
    type: "DataType"
    description: str | None = None
    default_value: str | None = None

    def to_json(self) -> dict[str, Any]:
        out: dict[str, Any] = {"id": self.id, "name": self.name, "type": self.type.to_json()}
        if self.description is not None:
            out["description"] = self.description
        if self.default_value is not None:
            out["defaultValue"] = self.default_value
        return out

    @staticmethod
    def from_json(obj: dict[str, Any]) -> "DataField":
        return DataField(obj["id"], obj["name"], DataType.from_json(obj["type"]),
                         obj.get("description"), obj.get("defaultValue"))


@dataclass(frozen=True)
class DataType:
    """One Paimon type. `root` is the canonical name (VARCHAR, TIMESTAMP_LTZ, ROW, ...).

    `precision` is the length of CHAR/VARCHAR/BINARY/VARBINARY and the precision of
    DECIMAL/TIME/TIMESTAMP; `scale` is the DECIMAL scale.
    """
    root: str
    nullable: bool = True
    precision: int | None = None
    scale: int | None = None
    element: "DataType | None" = None          # ARRAY, MULTISET
    key: "DataType | None" = None              # MAP
    value: "DataType | None" = None            # MAP
    fields: tuple[DataField, ...] = ()         # ROW

    # ---- classification -------------------------------------------------------------
    @property
    def is_string(self) -> bool:
        return self.root in ("CHAR", "VARCHAR")

    @property
    def is_binary(self) -> bool:
        return self.root in ("BINARY", "VARBINARY")

    @property
    def is_nested(self) -> bool:
        return self.root in ("ARRAY", "MAP", "MULTISET", "ROW")

    @property
    def is_structured(self) -> bool:
        """Composite types and VARIANT: stored as groups, without an order, never keys."""
        return self.is_nested or self.root == "VARIANT"

    @property
    def is_compact_decimal(self) -> bool:
        return self.root == "DECIMAL" and self.precision <= 18

    @property
    def is_compact_timestamp(self) -> bool:
        return self.root in ("TIMESTAMP", "TIMESTAMP_LTZ") and self.precision <= 3

    def copy(self, nullable: bool) -> "DataType":
        return replace(self, nullable=nullable)

    # ---- JSON -----------------------------------------------------------------------
    def to_json(self) -> Any:
        suffix = "" if self.nullable else " NOT NULL"
        r = self.root
        if r == "ARRAY" or r == "MULTISET":
            return {"type": r + suffix, "element": self.element.to_json()}
        if r == "MAP":
            return {"type": "MAP" + suffix, "key": self.key.to_json(), "value": self.value.to_json()}
        if r == "ROW":
            return {"type": "ROW" + suffix, "fields": [f.to_json() for f in self.fields]}
        return self.sql() + suffix

    def sql(self) -> str:
        """The type's SQL name without its own nullability (e.g. ``DECIMAL(10, 2)``); the fields and
        elements of a ROW, ARRAY or MAP with theirs (``ROW<x INT NOT NULL>``), as Java writes them."""
        r = self.root
        if r in _PLAIN:
            return r
        if r == "VARCHAR" and self.precision == MAX_LENGTH:
            return "STRING"
        if r == "VARBINARY" and self.precision == MAX_LENGTH:
            return "BYTES"
        if r == "DECIMAL":
            return f"DECIMAL({self.precision}, {self.scale})"
        if r == "TIMESTAMP_LTZ":
            return f"TIMESTAMP({self.precision}) WITH LOCAL TIME ZONE"
        if r in ("CHAR", "VARCHAR", "BINARY", "VARBINARY", "TIME", "TIMESTAMP"):
            return f"{r}({self.precision})"
        if r in ("ARRAY", "MULTISET"):
            return f"{r}<{self.element}>"
        if r == "MAP":
            return f"MAP<{self.key}, {self.value}>"
        if r == "ROW":
            return "ROW<" + ", ".join(f"{f.name} {f.type}" for f in self.fields) + ">"
        return r

    def __str__(self) -> str:
        return self.sql() + ("" if self.nullable else " NOT NULL")

    @staticmethod
    def from_json(obj: Any) -> "DataType":
        if isinstance(obj, str):
            return parse_atomic(obj)
        if not isinstance(obj, dict) or "type" not in obj:
            raise UnsupportedTypeError(f"cannot parse Paimon type {obj!r}")
        root, nullable = _split_nullability(obj["type"])
        if root in ("ARRAY", "MULTISET"):
            return DataType(root, nullable, element=DataType.from_json(obj["element"]))
        if root == "MAP":
            return DataType("MAP", nullable, key=DataType.from_json(obj["key"]),
                            value=DataType.from_json(obj["value"]))
        if root == "ROW":
            return DataType("ROW", nullable, fields=tuple(DataField.from_json(f) for f in obj["fields"]))
        raise UnsupportedTypeError(f"cannot parse Paimon type {obj!r}")


def _split_nullability(text: str) -> tuple[str, bool]:
    t = text.strip()
    if t.upper().endswith("NOT NULL"):
        return t[: -len("NOT NULL")].strip().upper(), False
    if t.upper().endswith(" NULL"):
        t = t[: -len(" NULL")]
    return t.strip().upper(), True


_ATOMIC_RE = re.compile(r"^([A-Z_]+)(?:\s*\(\s*(\d+)\s*(?:,\s*(\d+)\s*)?\))?(\s+WITH\s+LOCAL\s+TIME\s+ZONE)?$")


def parse_atomic(text: str) -> DataType:
    """Parse an atomic type string as written in schema files (``VARCHAR(10) NOT NULL``)."""
    body, nullable = _split_nullability(text)
    m = _ATOMIC_RE.match(body)
    if not m:
        raise UnsupportedTypeError(f"cannot parse Paimon type {text!r}")
    name, p, s, ltz = m.group(1), m.group(2), m.group(3), m.group(4)
    name = _ALIASES.get(name, name)
    if name == "STRING":
        return DataType("VARCHAR", nullable, MAX_LENGTH)
    if name == "BYTES":
        return DataType("VARBINARY", nullable, MAX_LENGTH)
    if name == "TIMESTAMP" and ltz:
        name = "TIMESTAMP_LTZ"
    if name in _PLAIN:
        return DataType(name, nullable)
    if name in _DEFAULT_PRECISION:
        precision = int(p) if p is not None else _DEFAULT_PRECISION[name]
        scale = (int(s) if s is not None else 0) if name == "DECIMAL" else None
        return DataType(name, nullable, precision, scale)
    raise UnsupportedTypeError(f"unsupported Paimon type {text!r}")


_NESTED_TYPE_RE = re.compile(r"\s*(ARRAY|MULTISET|MAP|ROW)\s*<", re.IGNORECASE)
_NULLABILITY_RE = re.compile(r"\s*(NOT\s+NULL|NULL)\b", re.IGNORECASE)
_COMMENT_RE = re.compile(r"\s*COMMENT\s*'((?:[^']|'')*)'", re.IGNORECASE)
_FIELD_NAME_RE = re.compile(r"\s*(`(?:[^`]|``)+`|[^\s`<>,]+)\s+")


def parse_type(text: str) -> DataType:
    """Parse a type as Paimon's SQL writes it, nested ones included (``ARRAY<BIGINT>``,
    ``MAP<STRING, INT NOT NULL>``, ``ROW<zip STRING, `the code` INT NOT NULL COMMENT 'x'>``);
    the fields of a ROW get id -1 (a schema change numbers them). UnsupportedTypeError names
    the text otherwise."""
    try:
        parsed, end = _parse_type_at(text, 0)
    except (UnsupportedTypeError, IndexError):
        raise UnsupportedTypeError(f"cannot parse Paimon type {text!r}") from None
    if text[end:].strip():
        raise UnsupportedTypeError(f"cannot parse Paimon type {text!r}: unexpected {text[end:].strip()!r}")
    return parsed


def _parse_type_at(text: str, i: int) -> tuple[DataType, int]:
    nested = _NESTED_TYPE_RE.match(text, i)
    if nested is None:  # an atomic type runs to the next ',' or '>' outside its parentheses
        depth, j = 0, i
        while j < len(text) and not (depth == 0 and text[j] in ",>") and \
                not (depth == 0 and _COMMENT_RE.match(text, j) and text[j].isspace()):
            depth += {"(": 1, ")": -1}.get(text[j], 0)
            j += 1
        return parse_atomic(text[i:j]), j
    root, i = nested.group(1).upper(), nested.end()
    if root in ("ARRAY", "MULTISET"):
        element, i = _parse_type_at(text, i)
        t = DataType(root, element=element)
    elif root == "MAP":
        key, i = _parse_type_at(text, i)
        i = _expect(text, i, ",")
        value, i = _parse_type_at(text, i)
        t = DataType("MAP", key=replace(key, nullable=False), value=value)
    else:
        fields = []
        while True:
            name = _FIELD_NAME_RE.match(text, i)
            if name is None:
                raise UnsupportedTypeError("a ROW field needs a name and a type")
            field_type, i = _parse_type_at(text, name.end())
            comment = _COMMENT_RE.match(text, i)
            if comment is not None:
                i = comment.end()
            word = name.group(1)
            fields.append(DataField(-1, word[1:-1].replace("``", "`") if word.startswith("`") else word, field_type,
                                    comment.group(1).replace("''", "'") if comment is not None else None))
            if text[i:].lstrip().startswith(">"):
                break
            i = _expect(text, i, ",")
        t = DataType("ROW", fields=tuple(fields))
    i = _expect(text, i, ">")
    nullability = _NULLABILITY_RE.match(text, i)
    if nullability is not None:
        return replace(t, nullable=not nullability.group(1).upper().startswith("NOT")), nullability.end()
    return t, i


def _expect(text: str, i: int, token: str) -> int:
    stripped = len(text) - len(text[i:].lstrip())
    if not text.startswith(token, stripped):
        raise UnsupportedTypeError(f"expected {token!r}")
    return stripped + 1


# ---- constructors used by callers and tests -------------------------------------------
def string(nullable: bool = True) -> DataType:
    return DataType("VARCHAR", nullable, MAX_LENGTH)


def bigint(nullable: bool = True) -> DataType:
    return DataType("BIGINT", nullable)


# ---- Arrow mapping ----------------------------------------------------------------------
_TS_UNIT = {"s": 0, "ms": 3, "us": 6, "ns": 9}


def _unit_for(precision: int) -> str:
    """Java's unit for a TIMESTAMP(precision): milliseconds up to 3, precision 0 too (Java's
    writers keep the fraction of a second a TIMESTAMP(0) value comes with, in milliseconds,
    and its readers give it back: 23:59:58.500 reads as such, not as 23:59:58)."""
    return "ms" if precision <= 3 else "us" if precision <= 6 else "ns"


_SIMPLE_ARROW = {"BOOLEAN": pa.bool_(), "TINYINT": pa.int8(), "SMALLINT": pa.int16(), "INT": pa.int32(),
                 "BIGINT": pa.int64(), "FLOAT": pa.float32(), "DOUBLE": pa.float64(), "DATE": pa.date32(),
                 "CHAR": pa.string(), "VARCHAR": pa.string(), "BINARY": pa.binary(),
                 "VARBINARY": pa.binary(), "TIME": pa.time32("ms")}


# A MULTISET is stored, and exchanged through Arrow, as a MAP of each element to its count (Java's
# `InternalMap` of `IntType(false)` values, any int: Java checks none)
MULTISET_COUNT = DataType("INT", nullable=False)


# VARIANT as Spark 4 exchanges it through Arrow (pyspark.sql.pandas.types): the Parquet Variant
# binary encoding's two parts, `metadata` tagged so that Spark reads the struct back as a variant.
VARIANT_ARROW = pa.struct([pa.field("value", pa.binary(), False),
                           pa.field("metadata", pa.binary(), False, metadata={b"variant": b"true"})])


def is_variant_arrow(at: pa.DataType) -> bool:
    """An Arrow type that stands for a VARIANT: Spark's struct of `value` and a tagged `metadata`."""
    if not pa.types.is_struct(at) or at.num_fields != 2 or {at.field(0).name, at.field(1).name} != {"value", "metadata"}:
        return False
    return (at.field("metadata").metadata or {}).get(b"variant") == b"true"


def to_arrow(t: DataType) -> pa.DataType:
    """The Arrow type users see for a Paimon type."""
    r = t.root
    if r == "VARIANT":
        return VARIANT_ARROW
    simple = _SIMPLE_ARROW.get(r)
    if simple is not None:
        return simple
    if r == "DECIMAL":
        return pa.decimal128(t.precision, t.scale)
    if r == "TIMESTAMP":
        return pa.timestamp(_unit_for(t.precision))
    if r == "TIMESTAMP_LTZ":
        return pa.timestamp(_unit_for(t.precision), tz="UTC")
    if r == "ARRAY":
        return pa.list_(pa.field("element", to_arrow(t.element), t.element.nullable))
    if r == "MULTISET":
        return pa.map_(pa.field("key", to_arrow(t.element), False), pa.field("value", to_arrow(MULTISET_COUNT), False))
    if r == "MAP":
        return pa.map_(pa.field("key", to_arrow(t.key), False),
                       pa.field("value", to_arrow(t.value), t.value.nullable))
    if r == "ROW":
        return pa.struct([arrow_field(f) for f in t.fields])
    raise UnsupportedTypeError(f"Paimon type {t} has no Arrow equivalent")


def map_arrow_leaves(t: pa.DataType, leaf: Callable[[pa.DataType], pa.DataType]) -> pa.DataType:
    """`t` with every type that is not a struct, list or map replaced by `leaf(type)`, field
    names and nullability kept (readers that parse or present some types as others)."""
    if pa.types.is_struct(t):
        return pa.struct([t.field(i).with_type(map_arrow_leaves(t.field(i).type, leaf)) for i in range(t.num_fields)])
    if pa.types.is_map(t):
        return pa.map_(t.key_field.with_type(map_arrow_leaves(t.key_type, leaf)),
                       t.item_field.with_type(map_arrow_leaves(t.item_type, leaf)))
    if pa.types.is_list(t):
        return pa.list_(t.value_field.with_type(map_arrow_leaves(t.value_type, leaf)))
    return leaf(t)


def arrow_field(f: DataField) -> pa.Field:
    return pa.field(f.name, to_arrow(f.type), f.type.nullable)


def arrow_schema(fields: Iterator[DataField] | list[DataField]) -> pa.Schema:
    return pa.schema([arrow_field(f) for f in fields])


def from_arrow(at: pa.DataType, nullable: bool = True) -> DataType:
    """The Paimon type for an Arrow type (nested field ids are assigned by the schema)."""
    T = pa.types
    if T.is_boolean(at):
        return DataType("BOOLEAN", nullable)
    for check, name in ((T.is_int8, "TINYINT"), (T.is_int16, "SMALLINT"), (T.is_int32, "INT"),
                        (T.is_int64, "BIGINT"), (T.is_float32, "FLOAT"), (T.is_float64, "DOUBLE"),
                        (T.is_date32, "DATE")):
        if check(at):
            return DataType(name, nullable)
    if T.is_string(at) or T.is_large_string(at) or getattr(T, "is_string_view", lambda _: False)(at):
        return DataType("VARCHAR", nullable, MAX_LENGTH)
    if T.is_fixed_size_binary(at):
        return DataType("BINARY", nullable, at.byte_width)
    if T.is_binary(at) or T.is_large_binary(at) or getattr(T, "is_binary_view", lambda _: False)(at):
        return DataType("VARBINARY", nullable, MAX_LENGTH)
    if T.is_decimal(at):
        if at.precision > 38:
            raise UnsupportedTypeError(f"DECIMAL precision {at.precision} exceeds Paimon's maximum 38")
        if at.scale < 0:  # Spark's legacy allowNegativeScaleOfDecimal, pyarrow's decimal128(3, -2)
            raise UnsupportedTypeError(f"DECIMAL({at.precision}, {at.scale}): Paimon has no negative scale; cast "
                                       f"the column to DECIMAL({at.precision - at.scale}, 0)")
        return DataType("DECIMAL", nullable, at.precision, at.scale)
    if T.is_timestamp(at):
        root = "TIMESTAMP" if at.tz is None else "TIMESTAMP_LTZ"
        return DataType(root, nullable, _TS_UNIT[at.unit])
    if T.is_time(at):
        return DataType("TIME", nullable, _TS_UNIT[at.unit])
    if T.is_list(at) or T.is_large_list(at) or T.is_fixed_size_list(at):
        return DataType("ARRAY", nullable, element=from_arrow(at.value_type, at.value_field.nullable))
    if T.is_map(at):
        return DataType("MAP", nullable, key=from_arrow(at.key_type, False),
                        value=from_arrow(at.item_type, at.item_field.nullable))
    if is_variant_arrow(at):
        return DataType("VARIANT", nullable)
    if T.is_struct(at):
        fields = tuple(DataField(-1, at.field(i).name, from_arrow(at.field(i).type, at.field(i).nullable))
                       for i in range(at.num_fields))
        return DataType("ROW", nullable, fields=fields)
    if T.is_dictionary(at):
        return from_arrow(at.value_type, nullable)
    raise UnsupportedTypeError(f"Arrow type {at} has no Paimon equivalent")


def assign_field_ids(t: DataType, next_id: list[int]) -> DataType:
    """Give every nested ROW field a fresh id from the shared counter (Paimon's ids are global)."""
    if t.root == "ROW":
        fields = []
        for f in t.fields:
            next_id[0] += 1
            fid = next_id[0]
            fields.append(replace(f, id=fid, type=assign_field_ids(f.type, next_id)))
        return replace(t, fields=tuple(fields))
    if t.root in ("ARRAY", "MULTISET"):
        return replace(t, element=assign_field_ids(t.element, next_id))
    if t.root == "MAP":
        return replace(t, key=assign_field_ids(t.key, next_id), value=assign_field_ids(t.value, next_id))
    return t


def max_field_id(fields: list[DataField] | tuple[DataField, ...]) -> int:
    """Highest id among the fields and every nested ROW field."""
    best = -1
    for f in fields:
        best = max(best, f.id, _max_nested_id(f.type))
    return best


def _max_nested_id(t: DataType) -> int:
    if t.root == "ROW":
        return max_field_id(t.fields)
    if t.root in ("ARRAY", "MULTISET"):
        return _max_nested_id(t.element)
    if t.root == "MAP":
        return max(_max_nested_id(t.key), _max_nested_id(t.value))
    return -1
