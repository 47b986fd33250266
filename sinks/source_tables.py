"""Which source table each change event comes from, for topics that carry several.

Maxwell, Canal and AWS DMS write every table of a database (or of a server) to one topic by
default; ingesting such a topic into one table would mix rows of different tables under the
same keys. Each record names its table:

- Debezium (JSON, Avro, MongoDB's): `source.db`, then `source.schema` when the connector has
  one (Postgres, SQL Server), then `source.table` (MongoDB: `source.collection`), joined by dots
  (Avro: each record read with its writer schema from the registry, as decoding reads it);
- maxwell-json, canal-json: `database.table`;
- ogg-json: `table` (GoldenGate's `SCHEMA.TABLE`);
- aws-dms-json: `metadata.schema-name.table-name`.

Each format's parser reads its records' names with their rows (`change_events.SOURCE_COLUMN`):
without `--source-table`, a batch with rows of more than one table stops the job naming them
(DDL and control records carry no rows, so they do not count). With it, the records are
matched here first, read for whole batches with the JSON reader, so another table's records
never have to fit this table's columns.

`DatabaseRouting` sends each source table to a table of its own (`ingest --database`, as
Paimon's `kafka_sync_database`): the target is the source table's name (its last part) with a
prefix and suffix, in the given database; source tables of the same name in several databases
or schemas (shards) go to one table, as Paimon's MySQL database sync does by default
(`merge_shards`).
"""
from __future__ import annotations

import io
import re
from dataclasses import dataclass
from typing import Iterable, Iterator

import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.json as pajson

from . import aws_dms, canal, debezium, debezium_bson, maxwell, ogg, schema_registry
from .change_events import table_name

_READ = {
    debezium.FORMAT: pa.schema([("source", debezium.SOURCE), ("payload", pa.struct([("source", debezium.SOURCE)]))]),
    maxwell.FORMAT: pa.schema([("database", pa.string()), ("table", pa.string())]),
    canal.FORMAT: pa.schema([("database", pa.string()), ("table", pa.string())]),
    ogg.FORMAT: pa.schema([("table", pa.string())]),
    aws_dms.FORMAT: pa.schema([("metadata", pa.struct([("schema-name", pa.string()), ("table-name", pa.string())]))]),
}
_READ[debezium_bson.FORMAT] = _READ[debezium.FORMAT]
FORMATS = tuple(_READ) + (debezium.AVRO_FORMAT,)


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


def names(format: str, values: pa.Array, registry: str | None = None) -> pa.Array:
    """The source table each record names (null where it does not say or does not parse);
    debezium-avro reads its writer schemas from the Schema Registry at `registry`."""
    if format == debezium.AVRO_FORMAT:
        return _avro_names(values, registry)
    fields = _fields(format, values)
    if format in (debezium.FORMAT, debezium_bson.FORMAT):
        payload = fields.column("payload").combine_chunks()
        return debezium.source_name(pc.if_else(payload.is_valid(), payload.field("source"),
                                               fields.column("source").combine_chunks()))
    if format == aws_dms.FORMAT:
        meta = fields.column("metadata").combine_chunks()
        return table_name(meta.field("schema-name"), meta.field("table-name"))
    if format == ogg.FORMAT:
        return fields.column("table").combine_chunks()
    return table_name(fields.column("database").combine_chunks(), fields.column("table").combine_chunks())


def _avro_names(values: pa.Array, registry: str) -> pa.Array:
    """Debezium's Avro envelopes' `source` tables, each record read with its writer schema (as
    decoding reads them: record by record); a record that is no framed Avro names none, an
    unknown writer schema is the registry's error."""
    import fastavro
    readers: dict[int, object] = {}
    sources = []
    for raw in values.to_pylist():
        source = None
        try:
            sid = schema_registry.schema_id(raw)
        except (TypeError, ValueError):
            sid = None
        if sid is not None:
            if sid not in readers:
                writer = schema_registry.writer_schema_json(registry, sid)
                readers[sid] = fastavro.parse_schema(debezium.without_logical_types(writer))
            try:
                event = fastavro.schemaless_reader(io.BytesIO(raw[schema_registry.HEADER:]), readers[sid])
                source = event.get("source") if isinstance(event, dict) else None
            except Exception:  # a body that is not Avro of its writer schema: decoding names the error
                source = None
        source = source if isinstance(source, dict) else {}  # (a null struct's fields would not read as nulls)
        sources.append({k: v if isinstance(v := source.get(k), str) else None for k in debezium.SOURCE.names})
    return debezium.source_name(pa.array(sources, debezium.SOURCE))


def _fields(format: str, values: pa.Array) -> pa.Table:
    """The fields naming the table, read from every record (one by one where the batch does not
    parse: a broken record names none)."""
    schema = _READ[format]
    values = pc.fill_null(values.cast(pa.binary()), b"{}")  # a tombstone names none
    if pc.any(pc.match_substring(values, "\n")).as_py():  # one record per line
        values = pc.replace_substring_regex(values, r"[\r\n]+", " ")

    def read(buffer: bytes) -> pa.Table:
        return pajson.read_json(io.BytesIO(buffer), read_options=pajson.ReadOptions(block_size=max(len(buffer), 1 << 20)),
                                parse_options=pajson.ParseOptions(explicit_schema=schema,
                                                                  unexpected_field_behavior="ignore"))
    try:
        joined = pc.binary_join(pa.ListArray.from_arrays(pa.array([0, len(values)], pa.int32()), values), b"\n")
        table = read(joined[0].as_py() + b"\n")
        if table.num_rows == len(values):
            return table
    except (pa.ArrowInvalid, pa.ArrowNotImplementedError):
        pass
    parts = []
    for value in values.to_pylist():
        try:
            one = read(value + b"\n")
            parts.append(one if one.num_rows == 1 else _null_row(schema))
        except (pa.ArrowInvalid, pa.ArrowNotImplementedError):
            parts.append(_null_row(schema))
    return pa.concat_tables(parts) if parts else schema.empty_table()


def _null_row(schema: pa.Schema) -> pa.Table:
    return pa.table([pa.nulls(1, f.type) for f in schema], schema=schema)


SOURCE_FIELD = pa.field("_source_table", pa.string())  # the column `with_names` adds


def with_names(format: str, registry: str | None, batches: Iterator[pa.RecordBatch]) -> Iterator[pa.RecordBatch]:
    """Kafka records with the source table each names (a `mapInArrow` function)."""
    for batch in batches:
        yield batch.append_column(SOURCE_FIELD, names(format, batch.column("value"), registry))


@dataclass(frozen=True)
class DatabaseRouting:
    """Which table of `database` each source table's change events go to (`ingest --database`).
    `including`/`excluding`: Python regular expressions of source table names (the last part
    of db.table), matched whole, as Paimon's `--including_tables`/`--excluding_tables`."""

    database: str
    table_prefix: str = ""
    table_suffix: str = ""
    including: str = ".*"
    excluding: str | None = None

    def __post_init__(self) -> None:
        for flag, pattern in (("--including-tables", self.including), ("--excluding-tables", self.excluding)):
            try:
                re.compile(pattern or "")
            except re.error as exc:
                raise ValueError(f"{flag} {pattern!r} is not a regular expression: {exc}") from None

    def target(self, source: str) -> str | None:
        """db.table the source table's rows go to; None when it is not included."""
        name = source.rsplit(".", 1)[-1]
        if not re.fullmatch(self.including, name) or (self.excluding and re.fullmatch(self.excluding, name)):
            return None
        return f"{self.database}.{self.table_prefix}{name}{self.table_suffix}"

    def targets(self, sources: Iterable[str]) -> dict[str, tuple[str, ...]]:
        """Each target table and the source tables (one, or the shards of one) it takes."""
        found: dict[str, list[str]] = {}
        for source in sorted(set(sources)):
            target = self.target(source)
            if target is not None:
                found.setdefault(target, []).append(source)
        return {target: tuple(names) for target, names in sorted(found.items())}

