"""Avro schemas -> Arrow types, and Avro values -> columns of a table's types.

Every Avro type that has a Paimon column maps: records become ROWs, arrays ARRAYs, maps
MAP<STRING, ...>, enums their symbols as STRING, fixed BYTES; a union of null and one type is
that type, nullable; a named type used again by name is the same type. Logical types: decimal
(bytes or fixed) DECIMAL, date DATE, time-millis/-micros TIME(3)/TIME(6) (Paimon keeps
milliseconds: finer digits are cut, as Java's writers do), timestamp-millis/-micros/-nanos an
instant (TIMESTAMP WITH LOCAL TIME ZONE), local-timestamp-millis/-micros/-nanos a wall time
(TIMESTAMP), uuid STRING. Unions of
several types and recursive records have no column type: a DecodeError naming the field.

Values are built in their writer schema's own types first, then cast to the table's with
Arrow's safe casts, so a value that does not fit its column (a double into INT, a long beyond
INT, an instant into a wall-time TIMESTAMP) is refused naming the column, never truncated; and
what JSON refuses Avro refuses too: text that is no finite number in FLOAT/DOUBLE range (never
infinity), anything but a boolean into BOOLEAN, a timestamp into DATE (its time of day would go),
and a plain number into TIMESTAMP or DATE (no epoch unit is written with it).
"""
from __future__ import annotations

from typing import Any

import pyarrow as pa
import pyarrow.compute as pc

from paimon_streaming.errors import PaimonError

_PRIMITIVES = {"boolean": pa.bool_(), "int": pa.int32(), "long": pa.int64(), "float": pa.float32(),
               "double": pa.float64(), "string": pa.string(), "bytes": pa.binary()}
_LOGICAL = {"date": pa.date32(), "time-millis": pa.time32("ms"), "time-micros": pa.time64("us"),
            "timestamp-millis": pa.timestamp("ms", tz="UTC"), "timestamp-micros": pa.timestamp("us", tz="UTC"),
            "timestamp-nanos": pa.timestamp("ns", tz="UTC"), "local-timestamp-millis": pa.timestamp("ms"),
            "local-timestamp-micros": pa.timestamp("us"), "local-timestamp-nanos": pa.timestamp("ns"),
            "uuid": pa.string()}
_RESOLVING = object()  # a record whose fields are being mapped (a reference to it is recursion)


class AvroTypeError(PaimonError):
    """An Avro schema with a type no column can hold."""


def arrow_schema(avro_schema: Any) -> pa.Schema:
    """A record schema's fields as Arrow fields."""
    if not isinstance(avro_schema, dict) or avro_schema.get("type") not in ("record", "error"):
        raise AvroTypeError("the Avro schema must be a record")
    named: dict[str, Any] = {}
    if isinstance(avro_schema.get("name"), str):  # its fields may not contain it (a linked list): no column holds that
        named[_full_name(avro_schema["name"], avro_schema.get("namespace"))] = _RESOLVING
    return pa.schema(_fields(avro_schema, named, _namespace_of(avro_schema, None)))


def _fields(record: dict, named: dict[str, Any], namespace: str | None) -> list[pa.Field]:
    out = []
    if not isinstance(record.get("fields"), list):  # Avro requires them (fastavro does not check)
        raise AvroTypeError(f"the Avro record {record.get('name')!r} has no list of fields")
    for f in record["fields"]:
        t, nullable = _type(f["type"], named, namespace, f["name"])
        out.append(pa.field(f["name"], t, nullable))
    return out


def _type(t: Any, named: dict[str, Any], namespace: str | None, where: str) -> tuple[pa.DataType, bool]:
    """(Arrow type, nullable) of an Avro type; `named` collects the named types met so far."""
    if isinstance(t, list):
        branches = [b for b in t if b != "null"]
        if len(branches) != 1:
            raise AvroTypeError(f"Avro field '{where}': a union of {t} has no column type (only null and one type)")
        return _type(branches[0], named, namespace, where)[0], len(branches) < len(t)
    if isinstance(t, str):
        if t in _PRIMITIVES:
            return _PRIMITIVES[t], False
        name = _full_name(t, namespace)
        found = named.get(name, named.get(t))
        if found is _RESOLVING:
            raise AvroTypeError(f"Avro field '{where}': the record {name} contains itself, which no column can hold")
        if found is None:
            raise AvroTypeError(f"Avro field '{where}': type {t!r} is not defined before its use")
        return found, False
    if not isinstance(t, dict):
        raise AvroTypeError(f"Avro field '{where}': {t!r} is not an Avro type")
    kind, logical = t.get("type"), t.get("logicalType")
    if logical == "decimal" and kind in ("bytes", "fixed"):
        precision, scale = int(t["precision"]), int(t.get("scale", 0))
        if precision > 38:
            raise AvroTypeError(f"Avro field '{where}': decimal({precision}, {scale}) is wider than Paimon's 38 digits")
        if kind == "fixed":
            named[_full_name(t["name"], t.get("namespace", namespace))] = pa.decimal128(precision, scale)
        return pa.decimal128(precision, scale), False
    if logical in _LOGICAL and kind in ("int", "long", "string"):
        return _LOGICAL[logical], False
    if kind in ("record", "error"):
        name = _full_name(t["name"], t.get("namespace", namespace))
        named[name] = _RESOLVING
        struct = pa.struct(_fields(t, named, _namespace_of(t, namespace)))
        named[name] = struct
        return struct, False
    if kind == "enum":
        named[_full_name(t["name"], t.get("namespace", namespace))] = pa.string()
        return pa.string(), False
    if kind == "fixed":
        named[_full_name(t["name"], t.get("namespace", namespace))] = pa.binary()
        return pa.binary(), False
    if kind == "array":
        item, nullable = _type(t["items"], named, namespace, f"{where}[]")
        return pa.list_(pa.field("element", item, nullable)), False
    if kind == "map":
        value, nullable = _type(t["values"], named, namespace, f"{where}{{}}")
        return pa.map_(pa.string(), pa.field("value", value, nullable)), False
    return _type(kind, named, namespace, where)  # {"type": "long"}, or an unknown logical type over it


def readable(avro_schema: Any) -> Any:
    """The schema to decode with: uuid strings read as their text (fastavro would give UUID
    objects, which are no column's values); everything else as written."""
    if isinstance(avro_schema, list):
        return [readable(t) for t in avro_schema]
    if not isinstance(avro_schema, dict):
        return avro_schema
    out = {k: readable(v) if k in ("type", "items", "values", "fields") else v for k, v in avro_schema.items()
           if not (k == "logicalType" and v == "uuid")}
    if "fields" in out:
        out["fields"] = [dict(f, type=readable(f["type"])) for f in avro_schema["fields"]]
    return out


def inline_references(schema: Any, definitions: dict[str, Any]) -> Any:
    """`schema` with the types it names from `definitions` (full name -> schema: a schema
    registry's references) defined where first used, as if written there, so it stands alone;
    a type met again after its definition becomes its name."""
    defined: set[str] = set()

    def walk(node: Any, namespace: str | None) -> Any:
        if isinstance(node, list):
            return [walk(n, namespace) for n in node]
        if isinstance(node, str):
            if node in _PRIMITIVES or node == "null":
                return node
            for name in (_full_name(node, namespace), node):
                if name not in defined and name in definitions:
                    return walk(_spelled_out(definitions[name]), None)
            return node
        if not isinstance(node, dict):
            return node
        kind = node.get("type")
        if kind in ("record", "error", "enum", "fixed"):
            name = _full_name(node["name"], node.get("namespace", namespace))
            if name in defined:
                return name
            defined.add(name)
            if kind in ("record", "error"):
                inner = _namespace_of(node, namespace)
                return {**node, "fields": [{**f, "type": walk(f["type"], inner)} for f in node["fields"]]}
            return node
        if kind == "array":
            return {**node, "items": walk(node["items"], namespace)}
        if kind == "map":
            return {**node, "values": walk(node["values"], namespace)}
        if isinstance(kind, (list, dict)) or (isinstance(kind, str) and kind not in _PRIMITIVES and kind != "null"):
            return {**node, "type": walk(kind, namespace)}
        return node
    return walk(schema, None)


def _spelled_out(definition: Any) -> Any:
    """A named type with its namespace explicit ("" for none): placed inside another namespace,
    it keeps its own full name."""
    if not isinstance(definition, dict) or "name" not in definition or "." in definition["name"]:
        return definition
    return {**definition, "namespace": definition.get("namespace") or ""}


def _full_name(name: str, namespace: str | None) -> str:
    return name if "." in name or not namespace else f"{namespace}.{name}"


def _namespace_of(named_type: dict, enclosing: str | None) -> str | None:
    name = named_type["name"]
    return name.rsplit(".", 1)[0] if "." in name else named_type.get("namespace", enclosing) or None


def conform(rows: pa.Table, target: pa.Schema) -> pa.Table:
    """Rows built in their writer's types, cast to the `target` columns they share (safe: a value
    that does not fit raises ValueError naming the column); other columns are kept as they are,
    and so are the fields a writer's ROWs (also inside ARRAYs and MAPs) have beyond the column's:
    the column then differs from the table's, which evolves to take them (a cast to the column's
    ROW would drop them without a word)."""
    from .change_events import with_new_fields
    columns = []
    for field, column in zip(rows.schema, rows.columns):
        if field.name in target.names and target.field(field.name).type != field.type:
            column = _cast(field.name, column, with_new_fields(field.type, target.field(field.name).type))
        columns.append(column)
    names = rows.column_names
    return pa.table(columns, names=names)


def _cast(name: str, column: pa.ChunkedArray, to: pa.DataType) -> pa.ChunkedArray:
    src = column.type
    refused = _refusal(name, src, to)
    if refused:
        raise ValueError(refused)
    try:
        cast = pc.cast(column, to, safe=not _cuts_time(src, to))
    except (pa.ArrowInvalid, pa.ArrowNotImplementedError, pa.ArrowTypeError) as exc:
        raise ValueError(f"column '{name}' is {to} but the Avro writer schema gives {src}: {exc}") from None
    for path, before, after in _leaf_pairs(name, column.combine_chunks(), cast.combine_chunks()):
        lost = _lost(before, after)
        if lost is not None:
            i = pc.index(lost, True).as_py()
            raise ValueError(f"column '{path}' is {after.type} but the Avro writer schema gives {before.type}: "
                             f"{before[i].as_py()!r} would be {'' if pa.types.is_string(before.type) else 'rounded to '}"
                             f"{after[i].as_py()!r}")
    return cast


def _refusal(path: str, src: pa.DataType, to: pa.DataType) -> str | None:
    """Why no value of Avro type `src` goes into a column (or field, at `path`) of type `to`, as
    JSON refuses it; None when the values decide (`_lost`) or Arrow's safe cast does."""
    if pa.types.is_struct(src) and pa.types.is_struct(to):
        return next((why for f in to if src.get_field_index(f.name) >= 0
                     for why in [_refusal(f"{path}.{f.name}", src.field(f.name).type, f.type)] if why), None)
    if _is_list(src) and _is_list(to):
        return _refusal(f"{path}.element", src.value_type, to.value_type)
    if pa.types.is_map(src) and pa.types.is_map(to):
        return _refusal(f"{path}.key", src.key_type, to.key_type) or \
            _refusal(f"{path}.value", src.item_type, to.item_type)
    if pa.types.is_timestamp(src) and pa.types.is_timestamp(to) and (src.tz is None) != (to.tz is None):
        return (f"column '{path}' is a TIMESTAMP {'WITH' if to.tz else 'WITHOUT'} LOCAL TIME ZONE but the "
                f"Avro writer schema has {'a wall time' if src.tz is None else 'an instant'} "
                f"({'local-' if src.tz is None else ''}timestamp); declare the column as the writer's type")
    if pa.types.is_boolean(to) and not pa.types.is_boolean(src):
        return f"column '{path}' is BOOLEAN but the Avro writer schema gives {src}, which is no truth value"
    if pa.types.is_date(to) and pa.types.is_timestamp(src):
        return (f"column '{path}' is a DATE but the Avro writer schema gives a timestamp ({src}), whose time of day "
                "would be dropped; declare the column TIMESTAMP")
    if (pa.types.is_date(to) or pa.types.is_timestamp(to)) and pa.types.is_integer(src):
        return (f"column '{path}' is {to} but the Avro writer schema gives a plain number ({src}), which names no "
                "epoch unit; give the Avro field a logical type (date, timestamp-micros, ...)")
    return None


def _cuts_time(src: pa.DataType, to: pa.DataType) -> bool:
    """A TIME of microseconds into one of milliseconds: Paimon keeps milliseconds, so the finer
    digits are cut, as Java's writers do (the one cast allowed to lose digits)."""
    return pa.types.is_time(src) and pa.types.is_time(to)


def _is_list(t: pa.DataType) -> bool:
    return pa.types.is_list(t) or pa.types.is_large_list(t)


def _leaf_pairs(path: str, before: pa.Array, after: pa.Array):
    """(path, writer's values, cast values) of each leaf the cast changed the type of."""
    if pa.types.is_struct(after.type) and pa.types.is_struct(before.type):
        for f in after.type:
            if before.type.get_field_index(f.name) >= 0:
                yield from _leaf_pairs(f"{path}.{f.name}", before.field(f.name), after.field(f.name))
    elif _is_list(after.type) and _is_list(before.type):
        yield from _leaf_pairs(f"{path}.element", before.flatten(), after.flatten())
    elif pa.types.is_map(after.type) and pa.types.is_map(before.type):
        yield from _leaf_pairs(f"{path}.key", before.keys, after.keys)
        yield from _leaf_pairs(f"{path}.value", before.items, after.items)
    elif before.type != after.type:
        yield path, before, after


def _lost(before: pa.Array, after: pa.Array) -> pa.Array | None:
    """Which values a cast into FLOAT/DOUBLE changed that Arrow's safe cast lets by: a double
    rounded to a float, and text beyond the type's range (infinity) or no number (NaN, inf),
    which JSON refuses as text in a number column; None when none."""
    if not pa.types.is_floating(after.type):
        return None
    if pa.types.is_string(before.type) or pa.types.is_large_string(before.type):
        changed = pc.invert(pc.is_finite(after))
    elif pa.types.is_float64(before.type) and pa.types.is_float32(after.type):  # Arrow's safe cast rounds it
        back = pc.cast(after, before.type)
        changed = pc.and_kleene(pc.not_equal(back, before), pc.invert(pc.and_(pc.is_nan(back), pc.is_nan(before))))
    else:
        return None
    return changed if pc.any(changed).as_py() else None
