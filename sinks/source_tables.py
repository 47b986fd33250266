"""Which source table each change event comes from, for topics that carry several.

Maxwell, Canal and AWS DMS write every table of a database (or of a server) to one topic by
default; ingesting such a topic into one table would mix rows of different tables under the
same keys. Each record names its table, read here for whole batches with the JSON reader:

- debezium-json, debezium-bson: `source.db`, then `source.schema` when the connector has one
  (Postgres, SQL Server), then `source.table` (MongoDB: `source.collection`), joined by dots,
  from the envelope or its `payload`;
- maxwell-json, canal-json: `database.table` (DDL records and Maxwell's bootstrap markers
  carry no rows: they do not count as a table seen);
- ogg-json: `table` (GoldenGate's `SCHEMA.TABLE`);
- aws-dms-json: `metadata.schema-name.table-name` (control records carry one too, but no rows:
  they do not count as a table seen).

`ingest --source-table REGEX` keeps the records whose name matches it whole; without it, a
batch holding records of more than one table stops the job naming them.
"""
from __future__ import annotations

import io

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.json as pajson

from . import aws_dms, canal, debezium, debezium_bson, maxwell, ogg

_DEBEZIUM_SOURCE = pa.struct([("db", pa.string()), ("schema", pa.string()), ("table", pa.string()),
                              ("collection", pa.string())])
_READ = {
    debezium.FORMAT: pa.schema([("source", _DEBEZIUM_SOURCE), ("payload", pa.struct([("source", _DEBEZIUM_SOURCE)]))]),
    maxwell.FORMAT: pa.schema([("database", pa.string()), ("table", pa.string()), ("type", pa.string())]),
    canal.FORMAT: pa.schema([("database", pa.string()), ("table", pa.string()), ("isDdl", pa.bool_())]),
    ogg.FORMAT: pa.schema([("table", pa.string())]),
    aws_dms.FORMAT: pa.schema([("metadata", pa.struct([("record-type", pa.string()), ("schema-name", pa.string()),
                                                       ("table-name", pa.string())]))]),
}
_READ[debezium_bson.FORMAT] = _READ[debezium.FORMAT]
FORMATS = tuple(_READ)


def matching(names: pa.Array, pattern: str) -> pa.Array:
    """Whether each name matches `pattern` whole (RE2 syntax); a record naming no table is kept
    (it is decoded, or set aside when it does not decode)."""
    return pc.fill_null(pc.match_substring_regex(names, f"^(?:{pattern})$"), True)


def check_pattern(pattern: str) -> None:
    """ValueError for a pattern that is no regular expression."""
    try:
        matching(pa.array([""], pa.string()), pattern)
    except (pa.ArrowInvalid, pa.ArrowNotImplementedError) as exc:
        raise ValueError(f"--source-table {pattern!r} is not a regular expression: {exc}") from None


def names(format: str, values: pa.Array) -> tuple[pa.Array, pa.Array]:
    """(the source table of each record, null where it does not say or does not parse; whether
    the record carries a row of it)."""
    fields = _fields(format, values)
    if format in (debezium.FORMAT, debezium_bson.FORMAT):
        source = pc.if_else(fields.column("payload").combine_chunks().is_valid(),
                            fields.column("payload").combine_chunks().field("source"),
                            fields.column("source").combine_chunks())
        table = pc.coalesce(source.field("table"), source.field("collection"))
        parts = [source.field("db"), source.field("schema"), table]
        rows = pa.array(np.ones(len(values), bool))
    elif format == aws_dms.FORMAT:
        meta = fields.column("metadata").combine_chunks()
        parts = [meta.field("schema-name"), meta.field("table-name")]
        rows = pc.fill_null(pc.equal(meta.field("record-type"), "data"), False)
    else:
        parts = [fields.column(n).combine_chunks() for n in _READ[format].names if n in ("database", "table")]
        if format == maxwell.FORMAT:  # DDL records and bootstrap markers carry no row
            rows = pc.fill_null(pc.is_in(fields.column("type"), pa.array(["insert", "update", "delete",
                                                                            "bootstrap-insert"])), False)
        elif format == canal.FORMAT:
            rows = pc.invert(pc.fill_null(fields.column("isDdl").combine_chunks(), False))
        else:
            rows = pa.array(np.ones(len(values), bool))
    joined = pc.binary_join_element_wise(*[pc.fill_null(p, "") for p in parts], ".")
    joined = pc.replace_substring_regex(pc.replace_substring_regex(joined, r"\.\.+", "."), r"^\.|\.$", "")
    return pc.if_else(parts[-1].is_valid(), joined, pa.nulls(len(values), pa.string())), rows  # the table named


def _fields(format: str, values: pa.Array) -> pa.Table:
    """The fields naming the table, read from every record (one by one where the batch does not
    parse: a broken record names none)."""
    schema = _READ[format]
    flat = pc.fill_null(pc.replace_substring_regex(values.cast(pa.binary()), r"[\r\n]+", " "), b"{}")  # a tombstone: none

    def read(buffer: bytes) -> pa.Table:
        return pajson.read_json(io.BytesIO(buffer), read_options=pajson.ReadOptions(block_size=max(len(buffer), 1 << 20)),
                                parse_options=pajson.ParseOptions(explicit_schema=schema,
                                                                  unexpected_field_behavior="ignore"))
    try:
        table = read(b"\n".join(flat.to_pylist()) + b"\n")
        if table.num_rows == len(values):
            return table
    except (pa.ArrowInvalid, pa.ArrowNotImplementedError):
        pass
    parts = []
    for value in flat.to_pylist():
        try:
            one = read(value + b"\n")
            parts.append(one if one.num_rows == 1 else _null_row(schema))
        except (pa.ArrowInvalid, pa.ArrowNotImplementedError):
            parts.append(_null_row(schema))
    return pa.concat_tables(parts) if parts else schema.empty_table()


def _null_row(schema: pa.Schema) -> pa.Table:
    return pa.table([pa.nulls(1, f.type) for f in schema], schema=schema)
