"""Kafka record values -> Arrow rows of a table's schema (JSON, CSV, Avro), with deletes.

Used by `paimon-streaming ingest` on the executors (inside `mapInArrow`), on whole Arrow
batches of Kafka records:

- json: one JSON object per record value; the values are joined into one newline-delimited
  buffer and parsed by `pyarrow.json` with the table's schema (as Spark's `from_json` reads
  them: BYTES fields as base64 text, base64_columns.py, DATE fields as yyyy-mm-dd text, and a
  TIMESTAMP field's time with a zone is no wall time, so refused; a number beyond a FLOAT's or
  DOUBLE's range is refused, never infinity; missing fields are null;
  fields the table lacks are inferred as at table creation and reported by
  `decode_reporting_new_fields`, so ingestion can evolve the table or refuse, never drop them);
- csv: one CSV line per value, columns in the table's order, parsed by `pyarrow.csv` (as
  Spark's CSV reader: only an empty unquoted field is null, text such as NA stays text);
- avro: Avro binary (schemaless, the writer schema given by a schema file), decoded by
  fastavro record by record (Avro has no columnar decoder in Python);
- debezium-json / debezium-avro / debezium-bson / maxwell-json / canal-json / ogg-json /
  aws-dms-json: change events, inserts, updates and deletes (debezium.py, Avro framed for a
  schema registry: schema_registry.py; debezium_bson.py: MongoDB's documents; maxwell.py;
  canal.py; ogg.py; aws_dms.py).

A record with a null value (a Kafka tombstone) deletes its key (debezium-json: it follows a
delete event, and adds nothing): its Kafka key gives the
primary-key columns (`key_format` "string": the key's text is the one key column's value;
"json": a JSON object holding the key columns) and the row is emitted with row kind -D;
every other record is an upsert (+I). Rows keep the records' order, so the last version of
a key in a micro-batch wins. A record that cannot be decoded raises `DecodeError` naming its
topic, partition and offset.
"""
from __future__ import annotations

import functools
import io
import json
import math
from dataclasses import dataclass
from typing import Any

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.csv as pacsv
import pyarrow.json as pajson

from paimon_streaming import variant
from paimon_streaming.decimal_text import DecimalTextRefused, text_decimals
from paimon_streaming.errors import PaimonError
from paimon_streaming.number_text import text_numbers
from paimon_streaming.types import VARIANT_ARROW, from_arrow, is_variant_arrow, map_arrow_leaves
from paimon_streaming.variant import holds_variant
from paimon_streaming.write import check_decimals_fit
from . import avro_types, aws_dms, canal, change_events, debezium, debezium_bson, json_decimals, json_maps, maxwell, \
    ogg, schema_registry, source_tables
from .base64_columns import base64_decoded, holds_binary

CHANGE_EVENT_FORMATS = (debezium.FORMAT, debezium.AVRO_FORMAT, debezium_bson.FORMAT, maxwell.FORMAT, canal.FORMAT,
                        ogg.FORMAT, aws_dms.FORMAT)
FORMATS = ("json", "avro", "csv", *CHANGE_EVENT_FORMATS)
# change events in JSON without Debezium's envelopes: (columns of a table, parser, name in errors)
# (each column type's encoding, parser, name in errors; Canal's encodings depend on the server's zone)
_PLAIN_CHANGE_EVENTS = {maxwell.FORMAT: (maxwell.encoding_of, maxwell.parse_events, "Maxwell JSON"),
                        canal.FORMAT: (canal.encoding_in(None), canal.parse_events, "Canal JSON"),
                        ogg.FORMAT: (ogg.encoding_of, ogg.parse_events, "GoldenGate JSON"),
                        aws_dms.FORMAT: (aws_dms.encoding_of, aws_dms.parse_events, "AWS DMS JSON")}
EVENT_COLUMN = "_event"  # change events: which event of a chunk a row comes from (an update can make two)
ON_ERROR = ("fail", "skip", "dead-letter")
KIND_COLUMN = "_kind"
# what is kept of a record that does not decode (the dead-letter table's columns)
REJECTED_SCHEMA = pa.schema([("topic", pa.string()), ("partition", pa.int32()), ("offset", pa.int64()),
                             ("key", pa.binary()), ("value", pa.binary()), ("error", pa.string())])


class DecodeError(PaimonError):
    """A Kafka record that does not decode into the table's schema."""


# CSV values: only an empty unquoted field is null (Spark's nullValue ""), never text of a STRING
# column ("NA", "null", a quoted ""), and nan in a FLOAT/DOUBLE column is NaN
_CSV_CONVERT = functools.partial(pacsv.ConvertOptions, null_values=[""], strings_can_be_null=True,
                                 quoted_strings_can_be_null=False)


def check_settings(format: str, key_format: str | None, primary_keys: tuple[str, ...], avro_schema: str | None,
                   schema_registry: str | None, on_error: str, decimal_handling: str, server_time_zone: str | None,
                   source_table: str | None) -> None:
    """DecodeError for settings that decode no record whatever the table holds (`key_format`
    None: chosen by the table's key; `avro_schema`: its text, or its file, only whether it is
    given counts), so that `ingest` refuses them before it starts."""
    if on_error not in ON_ERROR:
        raise DecodeError(f"unknown on-error mode '{on_error}'; use one of {', '.join(ON_ERROR)}")
    if format not in FORMATS:
        raise DecodeError(f"unknown format '{format}'; use one of {', '.join(FORMATS)}")
    if format == "avro" and not (avro_schema or schema_registry):
        raise DecodeError("format avro needs the writer schema (--avro-schema FILE or --schema-registry URL)")
    if key_format == "avro" and not schema_registry:
        raise DecodeError("Avro keys need the schema registry (--schema-registry URL)")
    if format == debezium.AVRO_FORMAT and not schema_registry:
        raise DecodeError("format debezium-avro needs the schema registry (--schema-registry URL)")
    if decimal_handling not in debezium.DECIMAL_HANDLING:
        raise DecodeError(f"unknown decimal handling '{decimal_handling}'; use one of "
                          f"{', '.join(debezium.DECIMAL_HANDLING)}")
    if server_time_zone is not None:
        if format != canal.FORMAT:
            raise DecodeError(f"a server time zone is for canal-json (Canal's TIMESTAMP text), not {format}")
        try:
            canal.check_zone(server_time_zone)
        except ValueError as exc:
            raise DecodeError(f"--server-time-zone: {exc}") from None
    if source_table is not None:
        if format not in source_tables.FORMATS:
            raise DecodeError(f"a source table is for change events naming their table ({', '.join(source_tables.FORMATS)}), "
                              f"not {format}")
        try:
            source_tables.check_pattern(source_table)
        except ValueError as exc:
            raise DecodeError(str(exc)) from None
    if key_format not in (None, "string", "json", "avro"):
        raise DecodeError(f"unknown key format '{key_format}'; use string, json or avro")
    if key_format == "string" and len(primary_keys) > 1:
        raise DecodeError(f"a composite primary key {list(primary_keys)} needs JSON keys (--key-format json)")


@dataclass(frozen=True)
class Decoder:
    """How to turn Kafka records into rows of `schema` (a picklable description)."""

    format: str
    schema: pa.Schema
    primary_keys: tuple[str, ...] = ()
    key_format: str = "string"
    avro_schema: str | None = None  # JSON text of the writer schema
    schema_registry: str | None = None  # avro: the Confluent Schema Registry naming each record's writer schema
    on_error: str = "fail"  # an undecodable record: fail (DecodeError), or set aside (see `Decoded.rejected`)
    decimal_handling: str = "precise"  # debezium-json without a schema envelope: Debezium's decimal.handling.mode
    server_time_zone: str | None = None  # canal-json: the MySQL server's zone, which its TIMESTAMP text is in
    partition_keys: tuple[str, ...] = ()  # change events: updates must show a row moving between partitions
    partial_update: bool = False  # change events: values the source did not send become nulls (kept by the table)
    defaulted: tuple[str, ...] = ()  # NOT NULL columns with a default value, which fills their nulls at the write
    source_table: str | None = None  # change events: the source tables (a regex of db.table) to keep (source_tables.py)

    def __post_init__(self) -> None:
        check_settings(self.format, self.key_format, self.primary_keys, self.avro_schema, self.schema_registry,
                       self.on_error, self.decimal_handling, self.server_time_zone, self.source_table)
        if self.format in CHANGE_EVENT_FORMATS and not self.primary_keys:
            raise DecodeError(f"format {self.format} needs a primary-key table: its updates and deletes "
                              "find rows by key")
        variants = [f.name for f in self.schema if is_variant_arrow(f.type)]
        if variants and self.format != "json":
            raise DecodeError(f"the table's VARIANT column(s) {variants} are filled from JSON records (format json), "
                              f"not from {self.format}")
        nested = [f.name for f in self.schema if holds_variant(from_arrow(f.type))]
        if nested:
            raise DecodeError(f"the table's column(s) {nested} hold a VARIANT inside a ROW, ARRAY or MAP, which "
                              "ingest does not fill; a top-level VARIANT column takes any JSON")
        internal = [n for n in (KIND_COLUMN, EVENT_COLUMN, change_events.SOURCE_COLUMN) if n in self.schema.names
                    and (self.format in CHANGE_EVENT_FORMATS or n == KIND_COLUMN)]
        if internal:
            raise DecodeError(f"the table's column(s) {internal} have names ingest keeps for itself (row kinds, "
                              "change events, source tables): rename them (paimon-streaming alter)")

    @property
    def output_schema(self) -> pa.Schema:
        """The table's columns (nullable: the sink checks keys), plus the row kind column when
        deletes are possible."""
        fields = [f.with_nullable(True) for f in self.schema]
        if self.primary_keys:
            fields.append(pa.field(KIND_COLUMN, pa.string()))
        return pa.schema(fields)

    @property
    def _json_schema(self) -> pa.Schema:
        """The schema JSON records are read with: a NOT NULL column with a default may be absent
        or null (the default fills it); the others are refused as pyarrow reads them."""
        return pa.schema([f.with_nullable(True) if f.name in self.defaulted else f for f in self.schema])

    @property
    def _parsed_schema(self) -> pa.Schema:
        """What `_values` returns (change events: with their row kinds)."""
        return self.output_schema if self.format in CHANGE_EVENT_FORMATS else self.schema

    def decode(self, records: pa.RecordBatch) -> pa.RecordBatch:
        """Kafka records (columns key, value, topic, partition, offset) -> table rows in order."""
        return self.decode_all(records).rows

    def decode_all(self, records: pa.RecordBatch) -> "Decoded":
        """`decode`, plus what ingestion must act on before committing: the fields JSON records
        carry that the table lacks (typed as inferred; their values are not in the rows, so a
        batch with any must not be committed as it is; fields seen only as null tell no type
        and are left out), and the records set aside as undecodable (`on_error` skip or
        dead-letter; with fail the first one raises DecodeError naming it)."""
        if self.source_table is not None:
            records = self._of_source_tables(records)
        values = records.column("value")
        live = pc.is_valid(values)
        live_idx = np.flatnonzero(live.to_numpy(zero_copy_only=False))
        rows, bad = self._values(pc.filter(values, live), pc.filter(records, live))
        sources: tuple[str, ...] = ()
        if self.format in CHANGE_EVENT_FORMATS and change_events.SOURCE_COLUMN in rows.column_names:
            # change events: the tables their rows are of (a JSON record's own field of that name is data)
            if self.source_table is None:
                sources = tuple(sorted(pc.unique(rows.column(change_events.SOURCE_COLUMN)).drop_null().to_pylist()))
            rows = rows.drop_columns([change_events.SOURCE_COLUMN])
        new_fields = pa.schema([f.with_type(change_events.inferred_column_type(f.type)) for f in rows.schema
                                if f.name not in self.schema.names and f.name != KIND_COLUMN
                                and change_events.typed(f.type)])
        if self.format == "json" and len({f.name.lower() for f in new_fields}) < len(new_fields):
            # `name` in one record, `Name` in another: the first becomes the column, which the others then fill
            # (a field matching a column ignoring case does); two columns of them Spark could tell from neither
            first = {}
            for f in new_fields:
                first.setdefault(f.name.lower(), f)
            new_fields = pa.schema(list(first.values()))
        names = self.schema.names + [KIND_COLUMN] * (KIND_COLUMN in rows.column_names)
        if rows.column_names != names:
            rows = rows.select(names)
        widened = [f for f in rows.schema if f.name in self.schema.names and f.type != self.schema.field(f.name).type]
        if widened:  # change events declaring a wider column: reported as new fields, the batch decoded again
            new_fields = pa.schema(list(new_fields) + widened)
            rows = rows.drop_columns([f.name for f in widened])
            for f in widened:
                rows = rows.add_column(self.schema.get_field_index(f.name), self.schema.field(f.name),
                                       pa.nulls(rows.num_rows, self.schema.field(f.name).type))
        good = np.ones(len(live_idx), bool)
        good[[i for i, _ in bad]] = False
        rows, bad = self._refuse_nulls(rows, live_idx[good], records, bad, good)
        keep = live.to_numpy(zero_copy_only=False).copy()
        keep[live_idx[~good]] = False
        rejected = _rejected(records, [(int(live_idx[i]), error) for i, error in bad])
        return Decoded(self._with_deletes(rows, records, pa.array(keep)), new_fields, rejected, sources)

    def _of_source_tables(self, records: pa.RecordBatch) -> pa.RecordBatch:
        """The records of the source tables `source_table` matches (before parsing: another
        table's records need not fit this one's columns)."""
        if not records.num_rows:
            return records
        keep = source_tables.matching(source_tables.names(self.format, records.column("value"), self.schema_registry),
                                      self.source_table)
        return records if pc.all(keep).as_py() else records.filter(keep)

    def _refuse_nulls(self, rows: pa.Table, positions: np.ndarray, records: pa.RecordBatch,
                      bad: list[tuple[int, str]], good: np.ndarray) -> tuple[pa.Table, list[tuple[int, str]]]:
        """Records whose primary-key fields are null cannot be upserts, nor can inserts and
        updates leave a NOT NULL column without a default null (the writer would refuse the
        whole batch): set aside (or fail), naming the column. Deletes keep theirs: a delete
        set aside would leave its row in the table, so the writer's error stops the job."""
        if not rows.num_rows:
            return rows, bad
        upserts = None
        if KIND_COLUMN in rows.column_names:
            upserts = pc.is_in(rows.column(KIND_COLUMN), pa.array(["+I", "+U"])).to_numpy(zero_copy_only=False)
        nulls = []  # (reason, rows), the keys first
        required = [f.name for f in self.schema if not f.nullable and f.name not in self.primary_keys
                    and f.name not in self.defaulted and f.name in rows.column_names]
        for name in [*self.primary_keys, *required]:
            null = rows.column(name).is_null().to_numpy(zero_copy_only=False)
            if name not in self.primary_keys and upserts is not None:
                null &= upserts
            if null.any():
                nulls.append((f"null primary key {list(self.primary_keys)}" if name in self.primary_keys
                              else f"null in NOT NULL column '{name}'", null))
        if not nulls:
            return rows, bad
        refused = np.logical_or.reduce([null for _, null in nulls])
        rejected = [(int(j), next(why for why, null in nulls if null[j])) for j in np.flatnonzero(refused)]
        if self.on_error == "fail":
            j, why = rejected[0]
            raise DecodeError(f"record {_where(records, int(positions[j]))} has a {why}")
        good_idx = np.flatnonzero(good)
        bad = sorted(bad + [(int(good_idx[j]), why) for j, why in rejected])
        good[good_idx[refused]] = False
        return rows.filter(pa.array(~refused)), bad

    def _with_deletes(self, rows: pa.Table, records: pa.RecordBatch, live: pa.Array) -> pa.RecordBatch:
        if not self.primary_keys:  # append table: a tombstone deletes nothing
            return _as_batch(rows, self.output_schema)
        if self.format in CHANGE_EVENT_FORMATS:  # change events carry their kinds; their tombstones add nothing
            return _as_batch(rows, self.output_schema)
        kinds = pa.array(np.full(rows.num_rows, "+I", dtype=object), pa.string())
        rows = rows.cast(self.output_schema.remove(len(self.schema))).append_column(KIND_COLUMN, kinds)
        dead = pc.invert(pc.is_valid(records.column("value")))
        if pc.any(dead).as_py():
            deletes = self._keys(pc.filter(records, dead))
            live_idx = np.flatnonzero(live.to_numpy(zero_copy_only=False))
            dead_idx = np.flatnonzero(dead.to_numpy(zero_copy_only=False))
            order = np.argsort(np.concatenate([live_idx, dead_idx]), kind="stable")
            rows = pa.concat_tables([rows, deletes]).take(pa.array(order))
        return _as_batch(rows, self.output_schema)

    # ---- values ------------------------------------------------------------------------
    def _values(self, values: pa.Array, records: pa.RecordBatch) -> tuple[pa.Table, list[tuple[int, str]]]:
        """Rows of the values that decode, and (index, error) of those that do not."""
        if len(values) == 0:
            return self._parsed_schema.empty_table(), []
        if self.format == "json":
            return _parse_lines(values, records, self._json, self._json_one, "JSON", self.on_error,
                                self.schema.empty_table())
        if self.format == "csv":
            return _parse_lines(values, records, self._csv, self._csv, "CSV", self.on_error,
                                self.schema.empty_table())
        if self.format in (debezium.FORMAT, *_PLAIN_CHANGE_EVENTS):
            return self._json_change_events(values, records)
        if self.format == debezium.AVRO_FORMAT:
            return self._debezium_avro(values, records)
        if self.format == debezium_bson.FORMAT:
            return self._debezium_bson(values, records)
        return self._avro(values, records)

    def _json_change_events(self, values: pa.Array, records: pa.RecordBatch) -> tuple[pa.Table, list[tuple[int, str]]]:
        """Change events in JSON, parsed in groups of one Debezium envelope schema each (usually
        one group: a schema changes only when the source table does)."""
        if self.format in _PLAIN_CHANGE_EVENTS:
            payloads, codes, schemas = values, np.full(len(values), -1), []
            encoding_of, parser, what = _PLAIN_CHANGE_EVENTS[self.format]
            if self.format == canal.FORMAT:
                encoding_of = canal.encoding_in(self.server_time_zone)
            columns_of = functools.partial(change_events.columns_of, encoding_of=encoding_of)
        else:
            payloads, codes, schemas = debezium.split_envelopes(values)
            columns_of = functools.partial(debezium.default_columns, decimal_handling=self.decimal_handling)
            parser, what = debezium.parse_events, "Debezium JSON"
        tables, origins, bad = [], [], []
        for code in np.unique(codes):
            idx = np.flatnonzero(codes == code)
            whole = len(idx) == len(codes)  # the common case: no copies
            group = records if whole else records.take(pa.array(idx))
            try:
                columns = columns_of(self.schema) if code < 0 else \
                    debezium.envelope_columns(self.schema, debezium.envelope_schema_text(schemas[code]))
            except (ValueError, TypeError, KeyError) as exc:
                if self.on_error == "fail":
                    raise DecodeError(f"record {_where(group, 0)} has a schema envelope not decoded here: {exc}") from None
                bad.extend((int(i), f"a schema envelope not decoded here: {exc}") for i in idx)
                continue
            empty = pa.schema([(c.name, c.type) for c in columns] + [(KIND_COLUMN, pa.string()),
                                                                     (EVENT_COLUMN, pa.int64())]).empty_table()
            parse = functools.partial(parser, columns=columns, kind_column=KIND_COLUMN,
                                      event_column=EVENT_COLUMN, keys=self.primary_keys,
                                      partitioned=bool(self.partition_keys), partial=self.partial_update)
            parse_one = functools.partial(_naming_the_column, parse, functools.partial(
                parser, kind_column=KIND_COLUMN, event_column=EVENT_COLUMN), columns)
            rows, group_bad = _parse_lines(payloads if whole else payloads.take(pa.array(idx)), group, parse,
                                           parse_one, what, self.on_error, empty, count=_events)
            failed = np.zeros(len(idx), bool)
            failed[[i for i, _ in group_bad]] = True
            bad.extend((int(idx[i]), error) for i, error in group_bad)
            tables.append(rows.drop_columns([EVENT_COLUMN]))
            origins.append(idx[~failed][rows.column(EVENT_COLUMN).to_numpy()])
        return _in_record_order(tables, origins, self._parsed_schema), sorted(bad)

    def _json(self, buffer: bytes) -> pa.Table:
        """Rows of newline-delimited JSON objects. A field named as no column but as one ignoring
        case fills that column (as Spark's case-insensitive resolution; the exact name wins in a
        record holding both): it is no new field, which would add a column Spark could not tell
        from it. One matching several columns ignoring case is a DecodeError naming them."""
        schema, absent = self._json_schema, None
        try:
            table = _parse_json(buffer, schema)
        except pa.ArrowInvalid as exc:  # a NOT NULL column absent: maybe named in another case (`Id` for `id`)
            if "required field was absent" not in str(exc):
                raise
            schema, absent = pa.schema([f.with_nullable(True) for f in schema]), exc
            table = _parse_json(buffer, schema)
            if not _case_aliases(table.column_names, self.schema.names):
                raise
        if KIND_COLUMN in table.column_names and KIND_COLUMN not in self.schema.names:
            if table.column(KIND_COLUMN).null_count < table.num_rows:  # would be taken for the rows' kinds
                raise ValueError(f"field '{KIND_COLUMN}' is the name ingest gives the rows' kinds: rename it in the "
                                 "records")
            table = table.drop_columns([KIND_COLUMN])
        table = _nested_aliases_folded(table, self.schema)
        aliases = _case_aliases(table.column_names, self.schema.names)
        if not aliases:
            return table
        extended = pa.schema(list(schema) + [schema.field(column).with_name(alias).with_nullable(True)
                                             for alias, column in aliases.items()])
        merged = _merged_aliases(_parse_json(buffer, extended), aliases)
        if absent is not None and any(merged.column(f.name).null_count for f in self._json_schema if not f.nullable):
            raise absent  # still absent (or null) in some record: refused as pyarrow refuses it
        return merged

    def _json_one(self, buffer: bytes) -> pa.Table:
        """One record (the error path): a value its column cannot hold is named by the column,
        where pyarrow's message names only the value ("couldn't parse:1.5")."""
        document = _json_document(buffer)
        if not isinstance(document, dict):
            raise ValueError("not a JSON object")
        try:
            return self._json(buffer)
        except pa.ArrowInvalid as exc:
            aliases = _case_aliases(list(document), self.schema.names)
            column = _failing_column(buffer, pa.schema(list(self._json_schema) + [
                self._json_schema.field(c).with_name(a) for a, c in aliases.items()]))
            if column is None:
                beyond = [k for k, v in document.items() if isinstance(v, float) and math.isinf(v)]
                if beyond:  # pyarrow refuses the whole record: "Number too big to be stored in double"
                    raise ValueError(f"field '{beyond[0]}' holds a number beyond the range of DOUBLE (about "
                                     "1.8e308)") from None
                raise
            raise ValueError(f"column '{column.name}' ({from_arrow(column.type)}): {exc}") from None

    def _csv(self, buffer: bytes) -> pa.Table:
        """CSV lines in the table's column order, read as Spark's CSV reader does: only an empty
        unquoted field is null (pyarrow's default null list would make text such as NA, N/A, NULL
        or null, a quoted "", and a DOUBLE's nan nulls); a FLOAT/DOUBLE's nan/NaN is NaN."""
        as_text = pa.schema([f.with_type(pa.string()) if _is_number(f.type) else f for f in self.schema])
        table = pacsv.read_csv(io.BytesIO(buffer),
                               read_options=pacsv.ReadOptions(column_names=self.schema.names,
                                                              block_size=max(len(buffer), 1 << 20)),
                               convert_options=_CSV_CONVERT(column_types=as_text))
        return _fitting(_csv_numbers(table, self.schema))

    def _avro(self, values: pa.Array, records: pa.RecordBatch) -> tuple[pa.Table, list[tuple[int, str]]]:
        """Avro bodies, decoded by fastavro one at a time (it has no columnar decoder), built in
        their writer schema's types and cast to the table's (avro_types.py). With a schema
        registry each record names its writer schema, and the fields of writer schemas the table
        lacks come back as new columns (typed from the schema), as JSON's do."""
        out: list[tuple[int, dict]] = []
        decoded: list[int] = []
        bad: list[tuple[int, str]] = []
        writers: dict[int, Any] = {}
        types: dict[int, pa.Schema | _WriterSchemaError] = {}
        for i, raw in enumerate(values.to_pylist()):
            try:
                sid, datum = self._avro_record(raw, writers, types)
            except schema_registry.SchemaRegistryError as exc:
                raise DecodeError(f"record {_where(records, i)}: {exc}") from None
            except DecodeError:
                raise
            except _WriterSchemaError as exc:  # a registry's writer schema (a producer's new version)
                error, verb = str(exc), ":"
            except Exception as exc:
                error, verb = f"not Avro of its writer schema: {exc.__class__.__name__}: {exc}", " is"
            else:
                out.append((sid, datum))
                decoded.append(i)
                continue
            if self.on_error == "fail":
                raise DecodeError(f"record {_where(records, i)}{verb} {error}") from None
            bad.append((i, error))

        def build(items: list[tuple[int, dict]]) -> pa.Table:
            parts, origin = [], []
            for sid in dict.fromkeys(k for k, _ in items):
                idx = [j for j, (k, _) in enumerate(items) if k == sid]
                built = pa.Table.from_pylist([items[j][1] for j in idx], types[sid])
                parts.append(avro_types.conform(built, self.schema))
                origin.extend(idx)
            if not parts:
                return self.schema.empty_table()
            table = pa.concat_tables(parts, promote_options="permissive").take(pa.array(np.argsort(origin)))
            missing = [f for f in self.schema if f.name not in table.column_names]
            for f in missing:  # columns no writer schema has
                table = table.append_column(f, pa.nulls(table.num_rows, f.type))
            return table
        table, unfit = _build_or_find_culprits(out, decoded, build, records,
                                               "Avro whose values do not fit the table's schema", self.on_error)
        return table, sorted(bad + unfit)

    def _debezium_avro(self, values: pa.Array, records: pa.RecordBatch) -> tuple[pa.Table, list[tuple[int, str]]]:
        """Debezium's envelopes as Avro records (Confluent's AvroConverter), read without logical
        types and decoded as debezium-json's, in groups of one writer schema each."""
        import fastavro
        bad: list[tuple[int, str]] = []
        groups: dict[int, list[int]] = {}
        raws = values.to_pylist()
        for i, raw in enumerate(raws):
            try:
                groups.setdefault(schema_registry.schema_id(raw), []).append(i)
            except ValueError as exc:
                if self.on_error == "fail":
                    raise DecodeError(f"record {_where(records, i)} is {exc}") from None
                bad.append((i, str(exc)))
        tables, origins = [], []
        for sid, idx in groups.items():
            try:
                writer = schema_registry.writer_schema_json(self.schema_registry, sid)
                columns = debezium.avro_columns(self.schema, writer)
            except schema_registry.SchemaRegistryError as exc:
                raise DecodeError(f"record {_where(records, idx[0])}: {exc}") from None
            except ValueError as exc:
                if self.on_error == "fail":
                    raise DecodeError(f"record {_where(records, idx[0])} (writer schema {sid}): {exc}") from None
                bad.extend((i, f"writer schema {sid}: {exc}") for i in idx)
                continue
            reader = fastavro.parse_schema(debezium.without_logical_types(writer))
            events, decoded = [], []
            for i in idx:
                try:
                    events.append(_avro_datum(raws[i][schema_registry.HEADER:], reader))
                    decoded.append(i)
                except Exception as exc:
                    if self.on_error == "fail":
                        raise DecodeError(f"record {_where(records, i)} is not Avro of writer schema {sid}: "
                                          f"{exc.__class__.__name__}: {exc}") from exc
                    bad.append((i, f"not Avro of writer schema {sid}: {exc.__class__.__name__}: {exc}"))
            table, unfit = _build_or_find_culprits(
                events, decoded, lambda e: debezium.avro_change_rows(e, columns, KIND_COLUMN, EVENT_COLUMN,
                                                                     self.primary_keys, bool(self.partition_keys),
                                                                     self.partial_update),
                records, "a Debezium change event that does not fit the table", self.on_error)
            failed = {i for i, _ in unfit}
            bad.extend(unfit)
            tables.append(table.drop_columns([EVENT_COLUMN]))
            origins.append(np.array([i for i in decoded if i not in failed], np.int64)[table.column(EVENT_COLUMN).to_numpy()])
        return _in_record_order(tables, origins, self._parsed_schema), sorted(bad)

    def _debezium_bson(self, values: pa.Array, records: pa.RecordBatch) -> tuple[pa.Table, list[tuple[int, str]]]:
        """Debezium's MongoDB events, parsed record by record (documents have no schema), built
        into rows together."""
        events, decoded, bad = [], [], []
        for i, (raw, key) in enumerate(zip(values.to_pylist(), records.column("key").to_pylist())):
            try:
                events.append(debezium_bson.event(raw, key))
                decoded.append(i)
            except Exception as exc:
                error = f"not a Debezium MongoDB change event: {exc.__class__.__name__}: {exc}"
                if self.on_error == "fail":
                    raise DecodeError(f"record {_where(records, i)} is {error}") from exc
                bad.append((i, error))
        table, unfit = _build_or_find_culprits(
            events, decoded, lambda e: debezium_bson.change_rows_of(e, self.schema, KIND_COLUMN, EVENT_COLUMN,
                                                                   self.primary_keys, bool(self.partition_keys)),
            records, "a Debezium MongoDB change event that does not fit the table", self.on_error)
        failed = {i for i, _ in unfit}
        origins = np.array([i for i in decoded if i not in failed], np.int64)[table.column(EVENT_COLUMN).to_numpy()]
        return _in_record_order([table.drop_columns([EVENT_COLUMN])], [origins], self._parsed_schema), sorted(bad + unfit)

    def _avro_writer(self, raw: bytes, writers: dict[int, Any]) -> tuple[int, Any, bytes]:
        """(writer schema id (-1: the schema file), parsed writer schema, Avro body) of one value;
        the parsed schemas are collected in `writers` by id."""
        if not self.schema_registry:
            if -1 not in writers:
                import fastavro
                writers[-1] = fastavro.parse_schema(avro_types.readable(json.loads(self.avro_schema)))
            return -1, writers[-1], raw
        sid = schema_registry.schema_id(raw)
        if sid not in writers:
            writers[sid] = schema_registry.writer_schema(self.schema_registry, sid)
        return sid, writers[sid], raw[schema_registry.HEADER:]

    def _avro_record(self, raw: bytes, writers: dict[int, Any],
                     types: dict[int, pa.Schema | _WriterSchemaError]) -> tuple[int, Any]:
        """(writer schema id, datum) of one value; the Arrow schemas of the writer schemas seen
        are collected in `types` (_WriterSchemaError for one Arrow cannot type, DecodeError for
        the schema file, which every record is read with)."""
        sid, writer, body = self._avro_writer(raw, writers)
        if sid not in types:
            try:
                types[sid] = avro_types.arrow_schema(self._avro_writer_json(sid))
            except avro_types.AvroTypeError as exc:
                if sid < 0:
                    raise DecodeError(f"the Avro schema: {exc}") from None
                types[sid] = _WriterSchemaError(f"writer schema {sid}: {exc}")
        if isinstance(types[sid], _WriterSchemaError):
            raise types[sid]
        return sid, _avro_datum(body, writer)

    def _avro_writer_json(self, sid: int) -> Any:
        return json.loads(self.avro_schema) if sid < 0 else schema_registry.writer_schema_json(self.schema_registry, sid)

    # ---- keys of tombstones ------------------------------------------------------------
    def _keys(self, records: pa.RecordBatch) -> pa.Table:
        keys = records.column("key")
        if keys.null_count:
            i = int(np.flatnonzero(keys.is_null().to_numpy(zero_copy_only=False))[0])
            raise DecodeError(f"record {_where(records, i)} has neither a key nor a value: a tombstone needs "
                              f"the key {list(self.primary_keys)} to delete")
        key_schema = pa.schema([self.schema.field(k) for k in self.primary_keys])
        if self.key_format == "avro":
            table = self._avro_keys(keys, records, key_schema)
        elif self.key_format == "string":
            field = key_schema.field(0)
            if pa.types.is_binary(field.type) or pa.types.is_large_binary(field.type):
                return self._key_rows(pa.table({field.name: keys.cast(field.type)}), key_schema)
            text = _utf8(keys)
            if not text.all():
                bad = int(np.flatnonzero(~text)[0])
                raise DecodeError(f"tombstone key of record {_where(records, bad)} is not UTF-8 text, as "
                                  f"--key-format string reads it (primary key '{field.name}' is {field.type})")
            try:
                cols = {field.name: self._number_keys(keys, records, field) if _is_number(field.type)
                        else pc.cast(keys.cast(pa.string()), field.type)}
            except (pa.ArrowInvalid, pa.ArrowNotImplementedError) as exc:
                texts = keys.cast(pa.string())
                first = next((i for i in range(len(texts)) if not _casts(texts.slice(i, 1), field.type)), 0)
                raise DecodeError(f"tombstone key {texts[first].as_py()!r} of record {_where(records, first)} is not a "
                                  f"{field.type} value of primary key '{field.name}': {exc}") from exc
            table = pa.table(cols)
        else:
            table, _ = _parse_lines(keys, records, lambda b: _read_json(b, key_schema),
                                    lambda b: _read_json(b, key_schema), "JSON key", "fail",
                                    key_schema.empty_table())
        return self._key_rows(table, key_schema)

    @staticmethod
    def _number_keys(keys: pa.Array, records: pa.RecordBatch, field: pa.Field) -> pa.Array:
        """String keys of a number column as its numbers: decimal text only, within its range
        (Arrow's cast took `0xff` for a TINYINT's -1, so the tombstone deleted another row), a
        DECIMAL's exactly."""
        if pa.types.is_decimal(field.type):  # exactly: Arrow's cast wraps beyond the type
            try:
                return text_decimals(keys.cast(pa.string()), field.type)
            except DecimalTextRefused as exc:
                raise DecodeError(f"a tombstone key is not a {field.type} value of primary key '{field.name}': "
                                  f"{exc}") from None
        numbers, bad = text_numbers(keys.cast(pa.string()), field.type)
        if bad.any():
            i = int(np.flatnonzero(bad)[0])
            raise DecodeError(f"tombstone key {keys.cast(pa.string())[i].as_py()!r} of record {_where(records, i)} is "
                              f"not a {field.type} value of primary key '{field.name}': decimal digits within its range "
                              "only (never another row's key)")
        return numbers

    def _key_rows(self, table: pa.Table, key_schema: pa.Schema) -> pa.Table:
        """Deletes of the keys in `table`: the output rows, other columns null, kind -D."""
        n = table.num_rows
        columns = [table.column(f.name) if f.name in key_schema.names else pa.nulls(n, f.type)
                   for f in self.schema]
        columns.append(pa.array(np.full(n, "-D", dtype=object), pa.string()))
        return pa.Table.from_arrays(columns, schema=self.output_schema)

    def _avro_keys(self, keys: pa.Array, records: pa.RecordBatch, key_schema: pa.Schema) -> pa.Table:
        """Tombstone keys framed for the schema registry: a record of the key columns, or the one
        key column's value itself (a primitive key schema)."""
        rows = []
        for i, raw in enumerate(keys.to_pylist()):
            try:
                writer = schema_registry.writer_schema(self.schema_registry, schema_registry.schema_id(raw))
                key = _avro_datum(raw[schema_registry.HEADER:], writer)
            except schema_registry.SchemaRegistryError as exc:
                raise DecodeError(f"record {_where(records, i)}: {exc}") from None
            except Exception as exc:
                raise DecodeError(f"tombstone key of record {_where(records, i)} is not Avro of its writer "
                                  f"schema: {exc}") from exc
            rows.append(key if isinstance(key, dict) else {key_schema.names[0]: key})
        try:
            table = pa.Table.from_pylist(rows, key_schema)
        except (pa.ArrowInvalid, pa.ArrowTypeError) as exc:
            raise DecodeError(f"tombstone keys from {_where(records, 0)} on do not hold the primary key "
                              f"{list(self.primary_keys)}: {exc}") from exc
        for name in self.primary_keys:
            if pa.types.is_integer(key_schema.field(name).type):  # pyarrow truncates a float key: 2.5 -> 2
                for i, row in enumerate(rows):
                    value = row.get(name)
                    if isinstance(value, float) and not value.is_integer():
                        raise DecodeError(f"tombstone key of record {_where(records, i)} holds {value!r} for primary "
                                          f"key '{name}' ({key_schema.field(name).type}), which is no value of it (never "
                                          "truncated: it would delete another row)")
            if table.column(name).null_count:
                i = int(np.flatnonzero(table.column(name).is_null().to_numpy(zero_copy_only=False))[0])
                raise DecodeError(f"tombstone key of record {_where(records, i)} has no '{name}' "
                                  f"(primary key {list(self.primary_keys)})")
        return table


class _WriterSchemaError(Exception):
    """A registry's writer schema that has no Arrow schema: its records are poison records."""


def _avro_datum(body: bytes, schema: Any) -> Any:
    """The one Avro datum `body` holds, which must fill it: bytes left over mean it was written
    with another schema (a producer already on a newer schema than `--avro-schema`'s file), whose
    fields would otherwise be read shifted, as other values, without an error."""
    import fastavro
    stream = io.BytesIO(body)
    datum = fastavro.schemaless_reader(stream, schema)
    if stream.tell() != len(body):
        raise ValueError(f"{len(body) - stream.tell()} of its {len(body)} bytes are left after the datum: it was "
                         "written with another schema than the one read with")
    return datum


def _naming_the_column(parse, parse_columns, columns: list, line: bytes) -> pa.Table:
    """`parse(line)` (one change event, the error path): a value its column's type cannot hold is
    named by the column, where pyarrow's message names only the value ("couldn't parse:...")."""
    try:
        return parse(line)
    except pa.ArrowInvalid as exc:
        if "couldn't parse" not in str(exc):
            raise
        for c in columns:
            try:
                parse_columns(line, columns=[c])
            except (pa.ArrowInvalid, ValueError):
                raise ValueError(f"column '{c.name}' ({from_arrow(c.type)}): {exc}") from None
        raise


def _events(table: pa.Table) -> int:
    """How many records a parsed chunk of change events came from (an update can make two
    rows, a marker none)."""
    return int((table.schema.metadata or {}).get(change_events.EVENTS_METADATA, b"0"))


def _in_record_order(tables: list[pa.Table], origins: list[np.ndarray], empty: pa.Schema) -> pa.Table:
    """Rows parsed in groups, back in the order of the records they come from."""
    if not tables:
        return empty.empty_table()
    if len(tables) == 1:
        return tables[0]
    order = np.argsort(np.concatenate(origins), kind="stable")
    return pa.concat_tables(tables, promote_options="permissive").take(pa.array(order))


def _build_or_find_culprits(items: list, positions: list[int], build, records: pa.RecordBatch, what: str,
                            on_error: str) -> tuple[pa.Table, list[tuple[int, str]]]:
    """`build(items)`; when that fails, each item alone finds the culprits (the error path only):
    the first raises DecodeError naming its record with `on_error` fail, else they come back as
    (position, error) and the others are built together."""
    errors = (pa.ArrowInvalid, pa.ArrowTypeError, pa.ArrowNotImplementedError, ValueError, TypeError)
    try:
        return build(items), []
    except errors:
        pass
    bad, good = [], []
    for position, item in zip(positions, items):
        try:
            build([item])
        except errors as exc:
            error = f"{what}: {exc.__class__.__name__}: {exc}"
            if on_error == "fail":
                raise DecodeError(f"record {_where(records, position)} is {error}") from exc
            bad.append((position, error))
        else:
            good.append(item)
    return build(good), bad


def _with_variants(buffer: bytes, schema: pa.Schema, variants: list[str]) -> pa.Table:
    """Rows of a table with VARIANT columns. pyarrow parses the other columns (a variant's JSON
    has no Arrow type it could infer: arrays mix types), each record is parsed again in Python
    for its variant fields (an absent field or a JSON null is a null variant, as for a column of
    any other type; `variant.fields_from_json`, in bulk), and fields the table lacks are typed
    as pyarrow infers them (for schema evolution, as `_read_json` with unexpected fields
    inferred reports them)."""
    rest = pa.schema([f for f in schema if f.name not in variants])
    table = _fitting(_read_json(buffer, rest, unexpected="ignore"))
    records = [line for line in buffer.split(b"\n") if line.strip()]
    columns, keys = variant.fields_from_json(pa.array(records, pa.binary()), variants)
    for name in variants:
        table = table.add_column(schema.get_field_index(name), schema.field(name), columns[name])
    unknown = sorted(keys - set(schema.names))
    if unknown:
        documents = [variant.loads(line) for line in records]
        documents = [d if isinstance(d, dict) else {} for d in documents]
        lines = b"".join(json.dumps({k: _plain(d[k]) for k in unknown if k in d}).encode() + b"\n" for d in documents)
        inferred = _read_json(lines, pa.schema([]), unexpected="infer")
        for name in inferred.column_names:
            table = table.append_column(inferred.field(name), inferred.column(name))
    return table


def _parse_json(buffer: bytes, schema: pa.Schema) -> pa.Table:
    """Rows of newline-delimited JSON objects in `schema`'s columns, then the fields it lacks
    (inferred); VARIANT columns take any JSON (`_with_variants`)."""
    variants = [f.name for f in schema if is_variant_arrow(f.type)]
    if not variants:
        return _fitting(_read_json(buffer, schema, unexpected="infer"))
    return _with_variants(buffer, schema, variants)


def _case_aliases(names: list[str], columns: list[str]) -> dict[str, str]:
    """{field: column} of the `names` that are no column but one column ignoring case; a name
    matching several columns ignoring case (and none exactly) is a DecodeError naming them."""
    lowered: dict[str, list[str]] = {}
    for column in columns:
        lowered.setdefault(column.lower(), []).append(column)
    known = set(columns)
    aliases = {}
    for name in names:
        if name in known or name.lower() not in lowered:
            continue
        matches = lowered[name.lower()]
        if len(matches) > 1:
            raise DecodeError(f"JSON field '{name}' matches the table's columns {matches} ignoring case, and none "
                              "exactly: rename one of those columns (paimon-streaming alter), or the field")
        aliases[name] = matches[0]
    return aliases


def _merged_aliases(table: pa.Table, aliases: dict[str, str]) -> pa.Table:
    """Each column's values from the records that name it exactly, else from a field that names
    it ignoring case (`_case_aliases`); those fields' columns dropped."""
    for column in dict.fromkeys(aliases.values()):
        merged = table.column(column)
        for alias in (a for a, c in aliases.items() if c == column):
            merged = pc.coalesce(merged, table.column(alias))
        table = table.set_column(table.schema.get_field_index(column), table.field(column), merged)
    return table.drop_columns(list(aliases))


def _nested_aliases_folded(table: pa.Table, schema: pa.Schema) -> pa.Table:
    """`_case_aliases` inside ROW columns (also ROWs in ARRAYs), at any depth: a field named as no
    field of the table's ROW but as one ignoring case fills that field (the exact name wins in a
    record holding both) and goes. Before, `{"o": {"X": 2}}` against a ROW `o` with field `x`
    was a new field the table could not take (it differs from `x` only in case), and the job
    stopped on it at every restart."""
    for i, name in enumerate(table.column_names):
        if name in schema.names and table.field(i).type != schema.field(name).type:
            folded = _folded(table.column(i).combine_chunks(), schema.field(name).type, name)
            if folded is not None:
                table = table.set_column(i, table.field(i).with_type(folded.type), folded)
    return table


def _folded(array: pa.Array, wanted: pa.DataType, path: str) -> pa.Array | None:
    """`array` with its case-alias fields folded into the fields of `wanted` they name, or None
    when it has none."""
    if pa.types.is_struct(array.type) and pa.types.is_struct(wanted):
        names = [array.type.field(j).name for j in range(array.type.num_fields)]
        aliases = _case_aliases(names, [wanted.field(j).name for j in range(wanted.num_fields)])
        children, changed = {}, bool(aliases)
        for name in dict.fromkeys(aliases.get(n, n) for n in names):  # a field, or the one its alias fills
            child = None
            for source in [name] * (name in names) + [a for a, target in aliases.items() if target == name]:
                part = array.field(source)
                if wanted.get_field_index(name) >= 0:
                    inner = _folded(part, wanted.field(name).type, f"{path}.{source}")
                    changed |= inner is not None
                    part = part if inner is None else inner
                if child is not None and part.type != child.type and pa.types.is_integer(part.type) and \
                        pa.types.is_integer(child.type) and _casts(part, child.type):
                    part = part.cast(child.type)  # inferred int64 for an INT field: its values fit
                if child is not None and part.type != child.type:
                    raise ValueError(f"field '{path}.{source}' fills '{path}.{name}' (its name ignoring case), but "
                                     f"holds {part.type} where other records hold {child.type}")
                child = part if child is None else pc.coalesce(child, part)
            children[name] = child
        if not changed:
            return None
        return pa.StructArray.from_arrays(list(children.values()), names=list(children),
                                          mask=array.is_null() if array.null_count else None)
    if (pa.types.is_list(array.type) or pa.types.is_large_list(array.type)) and \
            (pa.types.is_list(wanted) or pa.types.is_large_list(wanted)):
        offsets = array.offsets
        start = offsets[0].as_py()
        values = _folded(array.values.slice(start, offsets[-1].as_py() - start), wanted.value_type, f"{path}.element")
        if values is None:
            return None
        return type(array).from_arrays(pc.subtract(offsets, start) if start else offsets, values,
                                       mask=array.is_null() if array.null_count else None)
    return None


def _plain(value: Any) -> Any:
    """A `variant.loads` value as `json.loads` gives it (numbers with a fraction as floats)."""
    if isinstance(value, variant.JsonNumber):
        return float(value)
    if isinstance(value, dict):
        return {k: _plain(v) for k, v in value.items()}
    if isinstance(value, list):
        return [_plain(v) for v in value]
    return value


def _is_number(t: pa.DataType) -> bool:
    return pa.types.is_integer(t) or pa.types.is_floating(t) or pa.types.is_decimal(t)


def _csv_numbers(table: pa.Table, schema: pa.Schema) -> pa.Table:
    """The CSV's number columns, read as text, as numbers Spark's CSV reader takes: decimal
    digits (pyarrow's reader took `0x10` as 16), each text cast straight to its type (a FLOAT
    through a double rounded twice), and no value beyond its type's range (pyarrow's made `1e39`
    a FLOAT's infinity); such a field is a ValueError naming its column, so the record is a
    poison record."""
    for i, f in enumerate(schema):
        if pa.types.is_decimal(f.type):  # exactly (Arrow's reader and cast wrap: '-7e36' into DECIMAL(38, 2))
            try:
                table = table.set_column(i, f, text_decimals(table.column(i).combine_chunks(), f.type))
            except DecimalTextRefused as exc:
                raise ValueError(f"column '{f.name}' ({from_arrow(f.type)}): {exc}") from None
            continue
        if not _is_number(f.type):
            continue
        numbers, bad = text_numbers(table.column(i).combine_chunks(), f.type)  # (nulls are no text)
        if bad.any():
            raise ValueError(f"column '{f.name}' ({from_arrow(f.type)}) has text that is no number within its range")
        table = table.set_column(i, f, numbers)
    return table


def _fitting(table: pa.Table) -> pa.Table:
    """The parsed rows, or a ValueError naming the column when a number has more digits than its
    DECIMAL column's precision (pyarrow's readers keep them), so the record is set aside as
    undecodable rather than failing the whole batch at the write."""
    for name, column in zip(table.column_names, table.columns):
        check_decimals_fit(name, column)
    return table


def _wall_times_as_text(schema: pa.Schema) -> pa.Schema:
    """The schema to parse JSON with: TIMESTAMP (wall time, no zone) and DATE fields as text,
    which `_wall_times` then casts. pyarrow's JSON reader would take "00:00+02:00" as 22:00 of
    the day before, where Spark's from_json reads it as no value (Arrow's cast refuses a zone
    offset), and reads a DATE only from a number of days, where Spark's takes ISO text."""
    def as_text(t: pa.DataType) -> pa.DataType:
        return pa.string() if pa.types.is_timestamp(t) and t.tz is None or pa.types.is_date32(t) else t
    return pa.schema([f.with_type(map_arrow_leaves(f.type, as_text)) for f in schema])


def _wall_times(table: pa.Table, schema: pa.Schema) -> pa.Table:
    """Columns parsed as text by `_wall_times_as_text`, cast to their TIMESTAMP and DATE types;
    a value with a zone (an instant, not a wall time) is a ValueError naming the column. Fields
    of a ROW column the table lacks stay in its type, so that they are reported as new (a wider
    column, `Decoder.decode_all`) and evolve the table, never dropped."""
    for i, name in enumerate(table.column_names):
        if name in schema.names and table.field(i).type != schema.field(name).type:
            target = schema.field(name).with_type(_with_new_fields(table.field(i).type, schema.field(name).type))
            try:
                table = table.set_column(i, target, table.column(i).cast(target.type))
            except (pa.ArrowInvalid, pa.ArrowNotImplementedError) as exc:
                what = "a TIMESTAMP (a wall time, without zone)" if _holds_timestamp(schema.field(name).type) \
                    else "a DATE, written in JSON as yyyy-mm-dd text"
                raise ValueError(f"column '{name}' is {what}: {exc}") from None
    return table


_with_new_fields = change_events.with_new_fields  # fields the table's ROWs lack, kept (also change events')
_typed = change_events.typed


def _holds_timestamp(t: pa.DataType) -> bool:
    return pa.types.is_timestamp(t) or any(_holds_timestamp(t.field(i).type) for i in range(t.num_fields))


def _read_json_bytes(table: pa.Table) -> pa.Table:
    """BYTES columns of parsed JSON hold base64 text (base64_columns.py): the bytes it encodes."""
    for i, (name, column) in enumerate(zip(table.column_names, table.columns)):
        if holds_binary(column.type):
            table = table.set_column(i, table.field(i), pa.chunked_array(
                [base64_decoded(name, chunk) for chunk in column.chunks], column.type))
    return table


def _read_json(buffer: bytes, schema: pa.Schema, unexpected: str = "ignore") -> pa.Table:
    """Newline-delimited JSON objects as rows of `schema` (fields it lacks: `unexpected`, as
    pyarrow's `unexpected_field_behavior`), with Spark's from_json readings of wall times, dates
    and bytes, and no FLOAT beyond its range."""
    def read_json(text: bytes, explicit: pa.Schema) -> pa.Table:
        return pajson.read_json(
            io.BytesIO(text), read_options=pajson.ReadOptions(block_size=max(len(text), 1 << 20)),
            parse_options=pajson.ParseOptions(explicit_schema=explicit, unexpected_field_behavior=unexpected))

    def read(explicit: pa.Schema) -> pa.Table:
        return json_maps.read(buffer, _wall_times_as_text(explicit), json_decimals.exact(read_json))
    parsed = change_events.floats_in_range(read(schema), buffer, lambda: read(change_events.floats_as_doubles(schema)))
    if unexpected == "infer":  # `[]` or `{}` where the table has no column: refused, never cast away
        change_events.refuse_untyped(parsed, schema)
        parsed = _zoned_as_instants(parsed, schema, buffer)
    return _read_json_bytes(_wall_times(parsed, schema))


_ZONED = r"(?i)(Z|[+-][0-9]{2}(:?[0-9]{2})?)$"  # ISO text ending in a zone or an offset


def _zoned_as_instants(table: pa.Table, known: pa.Schema, buffer: bytes) -> pa.Table:
    """Fields `known` lacks whose timestamps pyarrow inferred from text with a zone or offset
    (`...T10:00:00Z`, `+02:00`), as TIMESTAMP WITH LOCAL TIME ZONE: they are instants (pyarrow
    gives them in UTC), and as a wall-time TIMESTAMP column the decoder would refuse every one."""
    def naive(t: pa.DataType) -> bool:
        return pa.types.is_timestamp(t) and t.tz is None or any(naive(t.field(i).type) for i in range(t.num_fields))
    inferred = [f for f in table.schema if f.name not in known.names and naive(f.type)]
    if not inferred:
        return table
    as_text = pa.schema([f.with_type(map_arrow_leaves(f.type, lambda t: pa.string() if pa.types.is_timestamp(t)
                                                      else t)) for f in inferred])
    text = pajson.read_json(io.BytesIO(buffer), read_options=pajson.ReadOptions(block_size=max(len(buffer), 1 << 20)),
                            parse_options=pajson.ParseOptions(explicit_schema=as_text,
                                                              unexpected_field_behavior="ignore"))

    def zoned(t: pa.DataType, values: pa.Array) -> pa.DataType:
        if pa.types.is_timestamp(t):
            return pa.timestamp(t.unit, "UTC") if t.tz is None and \
                pc.any(pc.match_substring_regex(values, _ZONED)).as_py() else t
        if pa.types.is_struct(t):
            return pa.struct([f.with_type(zoned(f.type, values.field(f.name))) for f in t])
        if pa.types.is_list(t):
            return pa.list_(t.value_field.with_type(zoned(t.value_type, values.flatten())))
        return t
    for f in inferred:
        t = zoned(f.type, text.column(f.name).combine_chunks())
        if t != f.type:
            i = table.schema.get_field_index(f.name)
            table = table.set_column(i, f.with_type(t), table.column(i).cast(t))
    return table


def _failing_column(buffer: bytes, schema: pa.Schema) -> pa.Field | None:
    """The first column of `schema` that one JSON record's value does not fit (VARIANT columns
    take any JSON). None when the record fails whatever its columns (it does not parse)."""
    try:
        _read_json(buffer, pa.schema([]))
    except (pa.ArrowInvalid, pa.ArrowNotImplementedError, ValueError):
        return None
    for f in schema:
        if is_variant_arrow(f.type):
            continue
        try:
            _fitting(_read_json(buffer, pa.schema([f])))
        except (pa.ArrowInvalid, pa.ArrowNotImplementedError, ValueError):
            return f
    return None


def _where(records: pa.RecordBatch, i: int) -> str:
    return (f"topic={records.column('topic')[i].as_py()} partition={records.column('partition')[i].as_py()} "
            f"offset={records.column('offset')[i].as_py()}")


def _parse_lines(values: pa.Array, records: pa.RecordBatch, parse_all, parse_one, what: str,
                 on_error: str, empty: pa.Table, count=lambda t: t.num_rows) -> tuple[pa.Table, list[tuple[int, str]]]:
    """Parse all values as one newline-delimited buffer. When that fails, each record alone
    finds the culprits (the error path only): the first raises DecodeError with `on_error`
    fail, else they are returned as (index, error) and the others parsed together again."""
    values = values.cast(pa.binary())
    text = _utf8(values)
    objects = text.copy()
    flat = values
    if what != "CSV":
        # one line per record: a newline becomes a tab, whitespace between tokens as the newline is,
        # and, as the newline, no JSON inside a string (a space there would change the text)
        flat = pc.replace_substring(pc.replace_substring(values, "\n", "\t"), "\r", "\t")
        objects &= _braced(flat)
    table = _parse_joined(flat, parse_all) if objects.all() else None
    if table is not None and count(table) == len(values):
        return table, []
    bad: list[tuple[int, str]] = []
    singles: dict[int, pa.Table] = {}
    for i, raw in enumerate(flat.to_pylist()):
        try:
            if not text[i]:  # pyarrow's readers would take the bytes into a STRING column unchecked
                raise _NotJson(f"its bytes are not UTF-8 text, which {what} is")
            if not objects[i]:
                _json_document(raw)
                raise ValueError("not a JSON object")
            singles[i] = parse_one(raw + b"\n")
            if count(singles[i]) != 1:
                raise ValueError("not exactly one row")
        except Exception as exc:
            error = f"not valid {what}: {str(exc).strip()[:300]}" if isinstance(exc, _NotJson) else \
                f"not valid {what} for the table's schema: {exc.__class__.__name__}: {str(exc).strip()[:300]}"
            if on_error == "fail":
                raise DecodeError(f"record {_where(records, i)} is {error}; value={values[i].as_py()[:200]!r}") \
                    from exc
            bad.append((i, error))
    if bad:
        keep = np.ones(len(values), bool)
        keep[[i for i, _ in bad]] = False
        table = _parse_joined(pc.filter(flat, pa.array(keep)), parse_all) if keep.any() else None
        if table is not None and count(table) == int(keep.sum()):
            return table, bad
        if not keep.any():
            return empty, bad
    if what != "CSV" and singles:  # each parses alone: fields the table lacks hold values of clashing types
        return _new_fields_in_record_order(singles, records, what, on_error, bad)
    raise DecodeError(f"records from {_where(records, 0)} on do not parse as {what} one row per record")


def _new_fields_in_record_order(singles: dict[int, pa.Table], records: pa.RecordBatch, what: str, on_error: str,
                                bad: list[tuple[int, str]]) -> tuple[pa.Table, list[tuple[int, str]]]:
    """JSON records (or change events) that parse alone but not together: a field the table
    lacks is a number in one and text in another, say. The first records give its type (as the
    first records give a new table's); a later record whose value does not fit it is refused
    naming the field. Change events' rows keep the index of their event among those kept."""
    failed = {i for i, _ in bad}
    parts, schema = [], None
    for i, table in singles.items():
        if i in failed:
            continue
        try:
            merged = table.schema if schema is None else \
                pa.unify_schemas([schema, table.schema], promote_options="permissive")
        except (pa.ArrowInvalid, pa.ArrowTypeError, pa.ArrowNotImplementedError):
            clash = next((f.name for f in table.schema if f.name in schema.names and not _unifies(schema.field(f.name),
                                                                                                   f)), "?")
            error = (f"not valid {what} for the table's schema: field '{clash}' is {table.schema.field(clash).type} "
                     f"here but {schema.field(clash).type} in the batch's records before it") if clash != "?" else \
                f"not valid {what} for the table's schema: its fields' types clash with the batch's records before it"
            if on_error == "fail":
                raise DecodeError(f"record {_where(records, i)} is {error}") from None
            bad.append((i, error))
            continue
        schema = merged
        if EVENT_COLUMN in table.column_names:
            table = table.set_column(table.schema.get_field_index(EVENT_COLUMN), EVENT_COLUMN,
                                     pa.array(np.full(table.num_rows, len(parts), np.int64)))
        parts.append(table)
    try:
        joined = pa.concat_tables(parts, promote_options="permissive")
    except pa.ArrowInvalid:  # an integer beyond 2**53 in a field others made DOUBLE: its nearest, as one parse gives
        joined = pa.concat_tables([pa.table([part.column(f.name).cast(f.type, safe=False) if f.name in part.column_names
                                             else pa.nulls(part.num_rows, f.type) for f in schema], schema=schema)
                                   for part in parts])
    if parts and EVENT_COLUMN in joined.column_names:
        joined = joined.replace_schema_metadata({change_events.EVENTS_METADATA: str(len(parts)).encode()})
    return joined, sorted(bad)


def _unifies(a: pa.Field, b: pa.Field) -> bool:
    try:
        pa.unify_schemas([pa.schema([a]), pa.schema([b])], promote_options="permissive")
        return True
    except (pa.ArrowInvalid, pa.ArrowTypeError, pa.ArrowNotImplementedError):
        return False


def _casts(values: pa.Array, to: pa.DataType) -> bool:
    try:
        pc.cast(values, to)
        return True
    except (pa.ArrowInvalid, pa.ArrowNotImplementedError):
        return False


def _utf8(values: pa.Array) -> np.ndarray:
    """Which binary values are UTF-8 text (checked all at once; one by one on the error path)."""
    if _casts(values, pa.string()):
        return np.ones(len(values), bool)
    return np.array([_casts(values.slice(i, 1), pa.string()) for i in range(len(values))], bool)


class _NotJson(ValueError):
    """A record value that is no JSON at all (Python's json module's message)."""


def _json_document(raw: bytes) -> Any:
    """The JSON value `raw` holds, or _NotJson (the error path only)."""
    try:
        return json.loads(raw)
    except ValueError as exc:
        raise _NotJson(str(exc)) from None


def _braced(values: pa.Array) -> np.ndarray:
    """Which values start with "{" and end with "}" (whitespace around): the only ones handed to
    pyarrow's JSON reader, which takes a top-level `null` for a row of nulls, and crashes the
    process on one alone when the schema has a ROW (pyarrow 26)."""
    if values.offset:
        values = pa.concat_arrays([values])
    offsets = np.frombuffer(values.buffers()[1], np.int32, len(values) + 1)
    data = np.frombuffer(values.buffers()[2], np.uint8) if values.buffers()[2] is not None else np.zeros(0, np.uint8)
    data = data if len(data) else np.zeros(1, np.uint8)
    last = len(data) - 1
    braced = (np.diff(offsets) > 0) & (data[np.minimum(offsets[:-1], last)] == ord("{")) \
        & (data[np.clip(offsets[1:] - 1, 0, last)] == ord("}"))
    rest = np.flatnonzero(~braced)
    if len(rest):  # whitespace around the object (rare)
        braced[rest] = pc.match_substring_regex(values.take(pa.array(rest)), r"(?s)^\s*\{.*\}\s*$") \
            .to_numpy(zero_copy_only=False)
    return braced


def _parse_joined(values: pa.Array, parse_all) -> pa.Table | None:
    buffer = pc.binary_join(pa.ListArray.from_arrays(pa.array([0, len(values)], pa.int32()), values), b"\n")[0].as_py()
    try:
        return parse_all(buffer + b"\n")
    except (pa.ArrowInvalid, pa.ArrowTypeError, pa.ArrowNotImplementedError, ValueError):
        return None


def _rejected(records: pa.RecordBatch, bad: list[tuple[int, str]]) -> pa.Table:
    """The set-aside records as rows of REJECTED_SCHEMA (their Kafka coordinates, key, value, why)."""
    if not bad:
        return REJECTED_SCHEMA.empty_table()
    idx = pa.array([i for i, _ in bad], pa.int64())
    picked = records.take(idx)
    return pa.table([picked.column("topic").cast(pa.string()), picked.column("partition").cast(pa.int32()),
                     picked.column("offset").cast(pa.int64()), picked.column("key").cast(pa.binary()),
                     picked.column("value").cast(pa.binary()), pa.array([e for _, e in bad], pa.string())],
                    schema=REJECTED_SCHEMA)


@dataclass(frozen=True)
class Decoded:
    """One decoded chunk: the table rows, new fields the table lacks, the rejected records."""
    rows: pa.RecordBatch
    new_fields: pa.Schema
    rejected: pa.Table
    sources: tuple[str, ...] = ()  # change events without a source-table filter: the tables their rows are of


def _as_batch(table: pa.Table, schema: pa.Schema) -> pa.RecordBatch:
    table = table.cast(schema) if table.schema != schema else table
    return table.combine_chunks().to_batches()[0] if table.num_rows else pa.RecordBatch.from_pylist([], schema)


def infer_json_schema(values: list[bytes], variants: tuple[str, ...] = (), on_error: str = "fail",
                      where: list[str] | None = None) -> pa.Schema:
    """The schema pyarrow infers from sample JSON values (for a table that does not exist yet),
    the `variants` fields as VARIANT columns at the end (left out of the inference: their JSON
    may take any shape). A sampled value that is no JSON object, or whose fields' types clash
    with those of the values before it, is left out (`on_error` skip or dead-letter: decoding
    then sets it aside as any undecodable record), or with fail a DecodeError naming it
    (`where`: each value's Kafka coordinates)."""
    if not values:
        raise DecodeError("cannot infer a schema: the topic has no records yet; pass --schema")
    lines = [v.replace(b"\n", b" ") for v in values]
    errors = (pa.ArrowInvalid, pa.ArrowTypeError, pa.ArrowNotImplementedError, ValueError)
    try:
        return _inferred_schema(lines, variants)
    except errors:
        pass
    kept: list[bytes] = []  # the error path: record by record, each against those kept before it
    schema = None
    for i, line in enumerate(lines):
        try:
            if not isinstance(_json_document(line), dict):
                raise _NotAnObject("not a JSON object")
            try:
                one = _inferred_schema([line], variants)
            except DecodeError:  # a field typed by no value of its own (`[]`): the others may type it,
                one = None       # if it fits them (a clash goes to `except errors`, as any other)
                try:
                    _inferred_schema(kept + [line], variants)
                except DecodeError:
                    pass
            try:
                if one is not None:
                    schema = one if schema is None else pa.unify_schemas([schema, one], promote_options="permissive")
            except errors:  # pyarrow's joint inference may still fit them (a timestamp's text and other text)
                schema = _inferred_schema(kept + [line], variants)
            kept.append(line)
        except errors as exc:
            why = str(exc) if isinstance(exc, _NotAnObject) else f"not valid JSON: {exc}" \
                if isinstance(exc, _NotJson) else f"a JSON object whose fields do not fit those of the records " \
                f"before it ({exc.__class__.__name__}: {str(exc).strip()[:300]})"
            if on_error == "fail":
                raise DecodeError(f"record {where[i] if where else f'#{i} of the sample'} is {why}: the new table's "
                                  "columns cannot be inferred from it (pass --schema, or --on-error skip or "
                                  "dead-letter to leave it out)") from None
    if not kept:
        raise DecodeError("cannot infer a schema: no sampled record of the topic is a JSON object; pass --schema")
    try:
        return _inferred_schema(kept, variants)  # a field no record types: DecodeError naming it
    except errors:
        if schema is None:
            raise
        return schema


class _NotAnObject(ValueError):
    """A JSON value that is no object."""


def _inferred_schema(lines: list[bytes], variants: tuple[str, ...]) -> pa.Schema:
    """The schema pyarrow infers from one-line JSON objects, `variants` as VARIANT columns last."""
    if variants:
        documents = [json.loads(v) for v in lines]
        lines = [json.dumps({k: x for k, x in d.items() if k not in variants} if isinstance(d, dict) else d).encode()
                 for d in documents]
    buffer = b"\n".join(lines) + b"\n"
    sample = _zoned_as_instants(pajson.read_json(io.BytesIO(buffer)), pa.schema([]), buffer)
    try:
        change_events.refuse_untyped(sample, pa.schema([]))
    except ValueError as exc:
        raise DecodeError(f"cannot infer the new table's columns from the sampled records: {exc}") from None
    # fields seen only as nulls tell no type: they become columns when records give them values
    inferred = [f.with_type(change_events.inferred_column_type(f.type)) for f in sample.schema
                if change_events.typed(f.type)]
    first: dict[str, pa.Field] = {}  # `name` and `Name`: one column (the first), which the other fills
    inferred = [first.setdefault(f.name.lower(), f) for f in inferred if f.name.lower() not in first]
    return pa.schema(inferred + [pa.field(name, VARIANT_ARROW) for name in variants])


def avro_to_arrow_schema(avro_schema: dict) -> pa.Schema:
    """An Avro record schema's fields as Arrow (avro_types.py); DecodeError for a type no
    column can hold."""
    try:
        return avro_types.arrow_schema(avro_schema)
    except avro_types.AvroTypeError as exc:
        raise DecodeError(str(exc)) from None
