"""Deletes that name only their key, in tables with NOT NULL value columns.

A Kafka tombstone, a Debezium delete from a Postgres table with the default replica identity
(its before image holds the key alone), or an upsert stream's delete carries a key and no other
values. Java's writer refuses every row with a null in a NOT NULL column, whatever its kind
(TableWriteImpl.checkNullability), so a stream with such deletes stops for good at the first one.
Where nothing ever reads a retraction's (-U/-D row's) other values, this writer fills those nulls
with the type's zero value instead: a deduplicate table (the key is deleted), partial-update with
`partial-update.remove-record-on-delete` (the row is removed; a later row of the key must bring
all NOT NULL values itself), and tables that drop retractions (`ignore-delete`). Elsewhere the
values are read, and the nulls are refused naming the column and why: aggregation (a retraction
subtracts its values, or the row continues from them), partial-update's sequence groups (a
group's sequence value decides), a `changelog-producer = input` table (the changelog would hold
the made-up values), and columns a delete is routed or ordered by (key, partition, bucket key,
sequence field).
"""
from __future__ import annotations

import decimal

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from .errors import NullKeyError
from .merge_engine import IGNORE_DELETE_KEYS, is_retract, sequence_fields
from .schema import TableSchema
from .types import is_variant_arrow
from . import variant

__all__ = ["fill_retractions", "zero_value"]


def fill_retractions(column: pa.ChunkedArray, name: str, schema: TableSchema, kinds: np.ndarray | None,
                     table_name: str) -> pa.ChunkedArray:
    """The NOT NULL column `name`, whose values hold nulls, with those of retractions filled;
    NullKeyError naming the column when a null may not be filled (an insert's, or see above)."""
    kind = "primary key" if name in schema.primary_keys else "NOT NULL"
    nulls = column.is_null().to_numpy(zero_copy_only=False)
    retract = is_retract(kinds) if kinds is not None else np.zeros(len(nulls), bool)
    if (nulls & ~retract).any():
        raise NullKeyError(f"{kind} column '{name}' of table {table_name} contains {int(nulls.sum())} null value(s)")
    why = _why_values_are_read(name, schema)
    if why:
        raise NullKeyError(f"{kind} column '{name}' of table {table_name} is null in {int(nulls.sum())} -U/-D row(s) "
                           f"(deletes naming only their key, such as Kafka tombstones), and {why}: make the "
                           "column nullable, or send deletes with their values")
    return pc.fill_null(column, zero_value(column.type))


def _why_values_are_read(name: str, schema: TableSchema) -> str | None:
    options = schema.options
    routed = {"primary key": schema.primary_keys, "partition": schema.partition_keys,
              "bucket key": schema.bucket_keys, "sequence field": sequence_fields(options)}
    for what, columns in routed.items():
        if name in columns:
            return f"it is a {what} column, which a delete must name"

    def on(key: str) -> bool:
        return str(options.get(key, "false")).strip().lower() == "true"
    if str(options.get("changelog-producer", "none")).strip().lower() == "input":
        return "the table's changelog-producer 'input' would store made-up values in its changelog"
    if any(on(k) for k in IGNORE_DELETE_KEYS):
        return None  # the writer drops retractions
    engine = str(options.get("merge-engine", "deduplicate")).strip().lower()
    if engine in ("deduplicate", "first-row"):  # first-row refuses retractions itself, naming its option
        return None
    if engine == "partial-update" and on("partial-update.remove-record-on-delete") and \
            not any(k.startswith("fields.") and k.endswith(".sequence-group") for k in options):
        return None
    return f"merge engine '{engine}' reads a retraction's values (only deduplicate and partial-update with " \
           "'partial-update.remove-record-on-delete' do not)"


def zero_value(t: pa.DataType) -> pa.Scalar:
    """The zero value of an Arrow type: 0, "", b"", false, the epoch, an empty list or map, a
    ROW of zeros (nulls where its fields allow), a VARIANT holding JSON null."""
    if is_variant_arrow(t):
        value, metadata = variant.encode(None)
        return pa.scalar({"value": value, "metadata": metadata}, t)
    if pa.types.is_struct(t):
        return pa.scalar({f.name: None if f.nullable else zero_value(f.type).as_py() for f in t}, t)
    if pa.types.is_list(t) or pa.types.is_large_list(t) or pa.types.is_map(t):
        return pa.scalar([], t)
    if pa.types.is_string(t) or pa.types.is_large_string(t):
        return pa.scalar("", t)
    if pa.types.is_fixed_size_binary(t):
        return pa.scalar(b"\0" * t.byte_width, t)
    if pa.types.is_binary(t) or pa.types.is_large_binary(t):
        return pa.scalar(b"", t)
    if pa.types.is_boolean(t):
        return pa.scalar(False, t)
    if pa.types.is_decimal(t):
        return pa.scalar(decimal.Decimal(0), t)
    if pa.types.is_date32(t) or pa.types.is_time32(t):
        return pa.scalar(0, pa.int32()).cast(t)
    return pa.scalar(0, pa.int64()).cast(t)  # integers, floats, timestamps, TIME(>3)
