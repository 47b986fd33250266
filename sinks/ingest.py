"""Kafka -> Paimon ingestion: the pipeline behind `paimon-streaming ingest`.

    from paimon_streaming.sinks.ingest import IngestConfig, run_ingest
    run_ingest(spark, IngestConfig(bootstrap_servers="broker:9092", topics=("orders",),
                                   warehouse="/wh", table="shop.orders", primary_keys=("id",)))

One streaming query: the Kafka source (Spark's `format("kafka")` when its connector is on
the classpath, else the pip-only `format("kafka-python")`; `source` chooses) -> decoding of
the record values on the executors (`decoders.py`: JSON, CSV, Avro from a schema file or a
schema registry, Debezium's change events; tombstones delete their key) ->
`foreachBatch(paimon_sink(...))`. The table is created when missing: columns from `schema` (a
Spark DDL string), from the Avro schema (the registry's: the first record's), from the first
change event's envelope, or inferred from a sample of the topic's JSON records. Kafka offsets live in the query's checkpoint and every batch is
committed with commitUser = query id and commitIdentifier = batch id, so a run killed at any
moment and restarted from the same checkpoint applies every record exactly once.

While it runs, one line per micro-batch: rows, rows/s, consumer lag (records in Kafka not
yet ingested) and the table's last snapshot; on a terminal also a live status line below them
(`ingest_status`, drawn by `live_status.py`). Ctrl-C (or SIGTERM) stops the query between
batches' commits cleanly (the signal is noted and the poll loop stops the query, never an
exception inside a call into Spark's JVM); the next run resumes from the checkpoint.
"""
from __future__ import annotations

import functools
import importlib
import json
import re
import signal
import threading
import time
from dataclasses import dataclass, replace
from typing import Callable, Iterator

import pyarrow as pa
from pyspark.accumulators import Accumulator, AccumulatorParam
from py4j.protocol import Py4JJavaError
from pyspark.errors import PySparkException, StreamingQueryException
from pyspark.sql import DataFrame, SparkSession

import paimon_streaming as ps
from paimon_streaming.catalog import Catalog
from paimon_streaming.errors import InvalidOptionError, PaimonError, SchemaMismatchError
from paimon_streaming.fileio import FileIO
from paimon_streaming.options import OPTIONS
from paimon_streaming.schema_update import widening_error
from paimon_streaming.table import Table
from paimon_streaming.types import DataType, from_arrow

from . import aws_dms, canal, debezium, debezium_bson, maxwell, ogg, schema_registry
from .decoders import CHANGE_EVENT_FORMATS, KIND_COLUMN, REJECTED_SCHEMA, Decoder, avro_to_arrow_schema, infer_json_schema
from .checkpoint_target import check_checkpoint_target
from .foreach_batch import ArrowTransform, PreparedBatch, paimon_sink, query_commit_user
from .ingest_config import IngestConfig, avro_writer_schema, read_avro_schema, trigger_interval
from .spark_write import arrow_schema_of

SPARK_KAFKA_PROVIDER = "org.apache.spark.sql.kafka010.KafkaSourceProvider"
# records set aside per micro-batch (skipped or dead-lettered), for the progress line
REJECTED_PER_BATCH: dict[int, int] = {}
# how often a micro-batch's DataFrame was read (a batch with new fields is decoded again):
# Spark's numInputRows counts its records once per read
READS_PER_BATCH: dict[int, int] = {}
_EVOLUTION_ROUNDS = 3  # a batch's new fields are all seen in one pass; more rounds mean a concurrent change
_SAMPLE_RECORDS = 1000
RECORD_COLUMNS = ("key", "value", "topic", "partition", "offset")  # of a Kafka record, as decoders take them
# change-event formats whose every record names the source's key columns, in this field
_KEYS_IN_RECORDS = {maxwell.FORMAT: "primary_key_columns", canal.FORMAT: "pkNames", ogg.FORMAT: "primary_keys"}


# ---- the table -------------------------------------------------------------------------
Samples = Callable[[], list[tuple[bytes | None, bytes]]]  # (key, value) of records a new table is made from


class Sample(tuple):
    """(key, value) of a sampled record; `where` names its topic, partition and offset."""

    def __new__(cls, key: bytes | None, value: bytes, topic: str, partition: int, offset: int) -> "Sample":
        sample = super().__new__(cls, (key, value))
        sample.where = f"topic={topic} partition={partition} offset={offset}"
        return sample


def _sample_coordinates(sample: list[tuple[bytes | None, bytes]]) -> list[str]:
    return [getattr(s, "where", None) or f"#{i} of the sampled records" for i, s in enumerate(sample)]


def ensure_table(spark: SparkSession, cfg: IngestConfig, log: Callable[[str], None] = print,
                 samples: Samples | None = None) -> Table:
    """The target table; created from the configured or inferred schema when missing. `samples`
    gives the records a new table's columns and key come from (default: the start of the topic)."""
    catalog = Catalog(cfg.warehouse)
    if catalog.table_exists(cfg.table):
        table = catalog.get_table(cfg.table)
        _check_existing_table(spark, table, cfg)
        return _with_variant_columns(table, cfg)
    from_topic = samples is None
    samples = samples or functools.cache(functools.partial(sample_records, cfg))
    if cfg.format in CHANGE_EVENT_FORMATS and not cfg.primary_keys:
        cfg = replace(cfg, primary_keys=_source_primary_key(cfg, samples))
        log(f"primary key {list(cfg.primary_keys)} from the change events")
    schema, origin = _table_schema(spark, cfg, samples)
    partition_keys = list(cfg.partition_keys)
    if cfg.partition_keys_if_present and not set(partition_keys) <= set(schema.names):
        log(f"{cfg.table}: partition keys {partition_keys} are not all columns of it, so it is not partitioned "
            "(as Paimon's database sync)")
        partition_keys = []
    if from_topic:
        check_topics_exist(cfg)  # before the table is created: a misspelt --topic leaves no table behind
    table = catalog.create_table(cfg.table, _keys_not_null(schema, cfg.primary_keys),
                                 primary_keys=list(cfg.primary_keys) or None,
                                 partition_keys=partition_keys or None, options=cfg.new_table_options())
    log(f"created table {cfg.table} at {table.path} (schema {origin}): "
        + ", ".join(f"{f.name} {f.type}" for f in table.schema.fields))
    return _with_variant_columns(table, cfg)


def _check_existing_table(spark: SparkSession, table: Table, cfg: IngestConfig) -> None:
    """InvalidOptionError naming the setting when --schema, --primary-key, --partition-key,
    --bucket or an --option given for an existing table differs from what the table has (they
    shape a new table only, so the job would silently write otherwise than asked). The table may
    have more columns than --schema, and wider types, as schema evolution makes them."""
    def refuse(what: str, actual, given) -> None:
        raise InvalidOptionError(f"table {cfg.table} exists with {what} {actual}, not {given}: the settings of a new "
                                 f"table do not change an existing one; drop the flag, or change the table "
                                 "(paimon-streaming alter, rescale) or ingest into another table")
    if cfg.schema:
        types = {f.name: f.type for f in table.schema.fields}
        differing = [f for f in _ddl_schema(spark, cfg) if f.name not in types or
                     not _holds(types[f.name], from_arrow(f.type, f.nullable))]
        if differing:
            refuse("column(s)", ", ".join(f"{f.name} {types[f.name]}" if f.name in types else f"no {f.name}"
                                          for f in differing),
                   ", ".join(f"{f.name} {from_arrow(f.type, f.nullable)}" for f in differing) + " of --schema")
    if cfg.primary_keys and tuple(table.primary_keys) != tuple(cfg.primary_keys):
        refuse("primary key", table.primary_keys, list(cfg.primary_keys))
    names = set(table.schema.field_names)
    # --database: a table lacking the partition keys is not partitioned (as it was created)
    if cfg.partition_keys and tuple(table.partition_keys) != tuple(cfg.partition_keys) and \
            not (cfg.partition_keys_if_present and not set(cfg.partition_keys) <= names):
        refuse("partition keys", table.partition_keys, list(cfg.partition_keys))
    if cfg.bucket is not None and table.options.bucket != cfg.bucket:
        refuse("bucket", table.options.bucket, cfg.bucket)
    for key, given in cfg.table_options.items():
        actual = table.options.raw.get(key, OPTIONS[key].default if key in OPTIONS else None)
        if not _same_option(key, actual, given):
            refuse(f"option {key} =", "unset" if actual is None else actual, given)


def _holds(column: DataType, given: DataType) -> bool:
    """Whether a column of this type holds what a column of type `given` would: the same type, or
    one schema evolution made of it (widened, or a ROW with more fields, at any depth)."""
    if column.root == given.root == "ROW":
        fields = {f.name: f.type for f in column.fields}
        return all(f.name in fields and _holds(fields[f.name], f.type) for f in given.fields)
    if column.root == given.root and column.root in ("ARRAY", "MULTISET"):
        return _holds(column.element, given.element)
    if column.root == given.root == "MAP":
        return column.key.copy(True) == given.key.copy(True) and _holds(column.value, given.value)
    return widening_error(given, column) is None


def _same_option(key: str, actual: str | None, given: str) -> bool:
    """Whether an option's table value (None: unset) is the given one, as Paimon parses them."""
    if actual is None or str(actual) == given:
        return actual is not None
    if key not in OPTIONS:
        return False
    try:
        return OPTIONS[key].parse(str(actual)) == OPTIONS[key].parse(given)
    except (ValueError, InvalidOptionError):
        return False


def _with_variant_columns(table: Table, cfg: IngestConfig) -> Table:
    """The table, when each --variant-column is one of its VARIANT columns."""
    types = {f.name: f.type for f in table.schema.fields}
    wrong = [f"{c} ({types[c]})" if c in types else f"{c} (no such column)" for c in cfg.variant_columns
             if c not in types or types[c].root != "VARIANT"]
    if wrong:
        raise InvalidOptionError(f"--variant-column names VARIANT columns of table {cfg.table}: {', '.join(wrong)} "
                                 "(add one with update_schema().add_column(name, 'VARIANT'))")
    return table


class NoRowsYet(InvalidOptionError):
    """A new table's columns cannot be told yet: its records so far carry no row (DDL, markers)."""


def _keys_not_null(schema: pa.Schema, keys: tuple[str, ...]) -> pa.Schema:
    missing = [k for k in keys if k not in schema.names]
    if missing:
        raise InvalidOptionError(f"primary key {missing} is not a column of {schema.names}")
    return pa.schema([f.with_nullable(False) if f.name in keys else f for f in schema])


def _ddl_schema(spark: SparkSession, cfg: IngestConfig) -> pa.Schema:
    """--schema's columns, as Arrow."""
    try:
        ddl = spark.createDataFrame([], cfg.schema).schema
    except (PySparkException, Py4JJavaError) as exc:  # Spark's DDL parser, through Py4J or Spark Connect
        text = str(exc.java_exception.getMessage()) if isinstance(exc, Py4JJavaError) else str(exc)
        reason = text.strip().splitlines()[0] if text.strip() else type(exc).__name__
        raise InvalidOptionError(f"--schema {cfg.schema!r} is not a schema in Spark's DDL (such as "
                                 f"'id BIGINT, name STRING'): {reason}") from None
    return arrow_schema_of(ddl)


def _table_schema(spark: SparkSession, cfg: IngestConfig, samples: Samples) -> tuple[pa.Schema, str]:
    if cfg.schema:
        return _ddl_schema(spark, cfg), "from --schema"
    if cfg.format in ("avro", debezium.AVRO_FORMAT) and cfg.schema_registry:
        return _registry_table_schema(cfg, samples), "from the first record's writer schema in the registry"
    if cfg.format == "avro":
        return avro_writer_schema(cfg), "from the Avro schema"
    if cfg.format == "json":
        sample = samples()
        return infer_json_schema([value for _, value in sample], cfg.variant_columns, cfg.on_error,
                                 _sample_coordinates(sample)), f"inferred from {len(sample)} records"
    if cfg.format in _ROW_IMAGES:
        sample = samples()
        images = [(image, where) for (_, value), where in zip(sample, _sample_coordinates(sample))
                  if (image := _ROW_IMAGES[cfg.format](value))]
        if not images:
            raise NoRowsYet(f"table {cfg.table} does not exist and its records carry no row yet: pass --schema")
        schema = infer_json_schema([json.dumps(image).encode() for image, _ in images], on_error=cfg.on_error,
                                   where=[where for _, where in images])
        return pa.schema([f for f in schema if not pa.types.is_null(f.type) or f.name in cfg.primary_keys]), \
            f"inferred from the rows of {len(images)} change events"
    if cfg.format == debezium.FORMAT:
        return _debezium_table_schema(cfg, samples), "from the first change event's schema envelope"
    if cfg.format == debezium_bson.FORMAT:
        return _first_record_schema(cfg, samples, debezium_bson.table_schema_of, "document"), \
            "from the first change event's document, every column STRING as Paimon's CDC"
    if cfg.format == canal.FORMAT:
        return _first_record_schema(cfg, samples, canal.table_schema_of, "Canal row message"), \
            "from the first message's mysqlType, typed as Paimon's MySQL CDC"
    raise InvalidOptionError(f"table {cfg.table} does not exist: format {cfg.format} needs --schema to create it")


# change-event formats whose records name no types: a new table's columns are inferred from their rows
_ROW_IMAGES = {maxwell.FORMAT: maxwell.row_image, ogg.FORMAT: ogg.row_image, aws_dms.FORMAT: aws_dms.row_image}


def _debezium_table_schema(cfg: IngestConfig, samples: Samples) -> pa.Schema:
    for _, value in samples()[:1]:
        _, _, schemas = debezium.split_envelopes(pa.array([value], pa.binary()))
        if schemas:
            try:
                return debezium.table_schema_of(debezium.envelope_schema_text(schemas[0]))
            except ValueError as exc:
                raise InvalidOptionError(f"cannot create table {cfg.table} from the change events: {exc}; "
                                         "pass --schema") from None
    raise InvalidOptionError(f"table {cfg.table} does not exist and the change events carry no schema envelope "
                             "(value.converter.schemas.enable=false): pass --schema")


def _first_record_schema(cfg: IngestConfig, samples: Samples, schema_of: Callable[[bytes], pa.Schema | None],
                         what: str) -> pa.Schema:
    """A new table's columns from the first sampled record that tells them (`schema_of`: None
    for a record that does not, ValueError for columns not read here)."""
    for _, value in samples():
        try:
            schema = schema_of(value)
        except ValueError as exc:
            raise InvalidOptionError(f"cannot create table {cfg.table} from the change events: {exc}; "
                                     "pass --schema") from None
        if schema is not None:
            return schema
    raise NoRowsYet(f"table {cfg.table} does not exist and the topic holds no {what} yet: pass --schema")


def _source_primary_key(cfg: IngestConfig, samples: Samples) -> tuple[str, ...]:
    """The source table's key columns, from the first change event: its Kafka key (Debezium keys
    each event by the source's primary key: a JSON object, in an envelope or not, or an Avro
    record framed for the registry), or the field each record names them in (`_KEYS_IN_RECORDS`)."""
    if cfg.format == debezium_bson.FORMAT:  # a MongoDB document's key
        return (debezium_bson.OBJECT_ID,)
    if cfg.format == aws_dms.FORMAT:
        raise InvalidOptionError(f"format {cfg.format}: DMS's records do not name the source's primary key; "
                                 f"pass --primary-key to create table {cfg.table}")
    for key, value in samples():  # the first that tells (Maxwell's markers do not)
        try:
            if cfg.format in _KEYS_IN_RECORDS:  # they name them in each record
                return tuple(json.loads(value)[_KEYS_IN_RECORDS[cfg.format]])
            if cfg.format == debezium.AVRO_FORMAT:
                fields = schema_registry.writer_schema_json(cfg.schema_registry, schema_registry.schema_id(key))["fields"]
                return tuple(f["name"] for f in fields)
            doc = json.loads(key)
            if isinstance(doc, dict) and set(doc) == {"schema", "payload"}:
                return tuple(f["field"] for f in doc["schema"]["fields"])
            if isinstance(doc, dict) and doc:
                return tuple(doc)
        except (TypeError, ValueError, KeyError):
            pass
    raise InvalidOptionError(f"format {cfg.format}: the change events carry no key naming the source's primary key; "
                             f"pass --primary-key to create table {cfg.table}")


def _registry_table_schema(cfg: IngestConfig, samples: Samples) -> pa.Schema:
    sample = samples()[:1]
    if not sample:
        raise InvalidOptionError(f"table {cfg.table} does not exist and the topic has no records yet: pass --schema")
    try:
        writer = schema_registry.writer_schema_json(cfg.schema_registry, schema_registry.schema_id(sample[0][1]))
        if cfg.format == debezium.AVRO_FORMAT:
            return pa.schema([(c.name, c.type) for c in debezium.avro_columns(pa.schema([]), writer)])
    except ValueError as exc:
        raise InvalidOptionError(f"cannot create table {cfg.table} from the first record of the topic: {exc}; "
                                 "pass --schema") from None
    return avro_to_arrow_schema(writer)


def check_topics_exist(cfg: IngestConfig) -> None:
    """KafkaSourceError naming the --topic(s) the brokers do not have (a --topic-pattern may match
    topics created later: not checked)."""
    if cfg.topic_pattern:
        return
    from paimon_streaming.sources.kafka import KafkaOptions
    consumer = KafkaOptions.parse(cfg.source_options()).consumer()
    try:
        _refuse_missing_topics(cfg, [t for t in cfg.topics if not consumer.partitions_for_topic(t)])
    finally:
        consumer.close()


def _refuse_missing_topics(cfg: IngestConfig, missing: list[str]) -> None:
    from paimon_streaming.sources.kafka_offsets import KafkaSourceError
    if missing:
        raise KafkaSourceError(f"Kafka topic(s) {missing} do not exist on {cfg.bootstrap_servers}: check --topic "
                               f"(table {cfg.table} was not created)")


def sample_records(cfg: IngestConfig) -> list[tuple[bytes | None, bytes]]:
    """(key, value) of up to 1000 records with values from the start of the topic(s)."""
    from kafka import TopicPartition

    from paimon_streaming.sources.kafka import KafkaOptions
    consumer = KafkaOptions.parse(cfg.source_options()).consumer()
    try:
        topics = cfg.topics
        if cfg.topic_pattern:
            topics = tuple(t for t in consumer.topics() if re.fullmatch(cfg.topic_pattern, t))
        parts = {t: sorted(consumer.partitions_for_topic(t) or ()) for t in topics}
        _refuse_missing_topics(cfg, [t for t in cfg.topics if not parts[t]])
        tps = [TopicPartition(t, p) for t in topics for p in parts[t]]
        if not tps:
            return []
        consumer.assign(tps)
        consumer.seek_to_beginning()
        end = consumer.end_offsets(tps)
        values: list[tuple[bytes | None, bytes]] = []
        deadline = time.monotonic() + 15
        while len(values) < _SAMPLE_RECORDS and time.monotonic() < deadline and \
                any(consumer.position(tp) < end[tp] for tp in tps):
            for msgs in consumer.poll(timeout_ms=500, max_records=_SAMPLE_RECORDS).values():
                values.extend(Sample(m.key, m.value, m.topic, m.partition, m.offset) for m in msgs
                              if m.value is not None)
        return values[:_SAMPLE_RECORDS]
    finally:
        consumer.close()


# ---- the query -------------------------------------------------------------------------
def spark_kafka_available(spark: SparkSession) -> bool:
    """Whether Spark's own Kafka connector (spark-sql-kafka-0-10) is on the driver's classpath."""
    try:
        spark.sparkContext._jvm.java.lang.Thread.currentThread().getContextClassLoader().loadClass(
            SPARK_KAFKA_PROVIDER)
        return True
    except Exception:
        return False


def kafka_source_name(spark: SparkSession, choice: str) -> str:
    if choice == "auto":
        return "kafka" if spark_kafka_available(spark) else "kafka-python"
    return choice  # one of ingest_config.SOURCES (IngestConfig refuses others)


def decode_batches(decoder: Decoder, new_fields: Accumulator, rejected: Accumulator, sources: Accumulator,
                   batches: Iterator[pa.RecordBatch]) -> Iterator[pa.RecordBatch]:
    """The sink's transform (in the driver in local mode, else in the writing tasks): Kafka
    records -> table rows. What the driver must see before it commits travels in accumulators
    (small: a few names, empty lists in the common case): fields the table lacks (serialized
    Arrow schemas), the records set aside as undecodable (Arrow IPC streams of REJECTED_SCHEMA
    rows) and the source tables change events came from."""
    for batch in batches:
        if batch.num_rows:
            decoded = decoder.decode_all(batch)
            if decoded.sources:
                sources.add([name.encode() for name in decoded.sources])
            if len(decoded.new_fields):
                new_fields.add([decoded.new_fields.serialize().to_pybytes()])
            if decoded.rejected.num_rows:
                sink = pa.BufferOutputStream()
                with pa.ipc.new_stream(sink, REJECTED_SCHEMA) as writer:
                    writer.write_table(decoded.rejected)
                rejected.add([sink.getvalue().to_pybytes()])
            yield decoded.rows


class _BytesList(AccumulatorParam):
    """Accumulates byte strings (serialized Arrow schemas or tables) from the decoding tasks."""

    def zero(self, value: list) -> list:
        return []

    def addInPlace(self, a: list, b: list) -> list:
        return a + b


class NewFieldsSeen(Exception):
    """Records of a micro-batch carry fields the table lacks (raised before its commit)."""

    def __init__(self, fields: pa.Schema):
        super().__init__(f"records carry field(s) {fields.names} that the table does not have")
        self.fields = fields


SOURCE_TABLE_OPTION = "paimon-streaming.ingest.source-table"  # the source table a job without --source-table took


def check_one_source_table(cfg: IngestConfig, accumulated: list[bytes], table: Table | None = None) -> None:
    """InvalidOptionError (before the commit: nothing of the batch is written) when change events
    of several source tables arrive without --source-table saying which this table takes. With
    `table`, also across batches and runs: the first batch's source table is remembered in the
    table option SOURCE_TABLE_OPTION (set before that batch commits), and a later batch of
    another source table is refused as one holding both."""
    tables = sorted({name.decode() for name in accumulated})
    remembered = None if table is None else table.options.raw.get(SOURCE_TABLE_OPTION)
    earlier = ""
    if remembered is not None and tables and tables != [remembered]:
        earlier = (f" (table {cfg.table} took the rows of {remembered} in earlier batches: its option "
                   f"{SOURCE_TABLE_OPTION} says so; unset it with paimon-streaming alter --unset only when the "
                   "table is to take another source table's rows from now on)")
        tables = sorted({*tables, remembered})
    if len(tables) > 1:
        raise InvalidOptionError(
            f"the topic carries change events of {len(tables)} source tables {tables[:10]}{earlier}: ingesting them "
            f"all into {cfg.table} would mix their rows under the same keys; give --source-table with the one to take "
            "(a regular expression of db.table), or '.*' to merge them on purpose (as Paimon's kafka_sync_table "
            "does); nothing of this batch was written")
    if table is not None and tables and remembered is None:
        table.update_schema().set_option(SOURCE_TABLE_OPTION, tables[0]).commit()
        table.refresh()


def _new_fields(accumulated: list) -> pa.Schema:
    schemas = [pa.ipc.read_schema(pa.py_buffer(b)) for b in accumulated]
    return pa.unify_schemas(schemas, promote_options="permissive") if schemas else pa.schema([])


def _rejected_rows(accumulated: list) -> pa.Table:
    tables = [pa.ipc.open_stream(b).read_all() for b in accumulated]
    return pa.concat_tables(tables) if tables else REJECTED_SCHEMA.empty_table()


def dead_letter_table(cfg: IngestConfig) -> Table:
    """The append table that keeps undecodable records (created when missing), next to the target."""
    catalog = Catalog(cfg.warehouse)
    schema = REJECTED_SCHEMA.append(pa.field("batch_id", pa.int64())).append(
        pa.field("ingested_at", pa.timestamp("ms", tz="UTC")))
    return catalog.create_table(cfg.dead_letter_name, schema, ignore_if_exists=True,
                                comment=f"records of {cfg.target} that did not decode (paimon-streaming ingest)")


def set_aside(cfg: IngestConfig, rejected: pa.Table, commit_user: str, batch_id: int) -> None:
    """Commit the batch's undecodable records to the dead-letter table, exactly once per batch:
    before the batch's own commit, under `commit_user` (derived from the query's, one per
    target table), so a replay after a crash between the two commits finds them committed and
    writes them again nowhere."""
    if cfg.on_error != "dead-letter" or not rejected.num_rows:
        return
    now = pa.array([int(time.time() * 1000)] * rejected.num_rows, pa.timestamp("ms", tz="UTC"))
    rows = rejected.append_column("batch_id", pa.array([batch_id] * rejected.num_rows, pa.int64())) \
        .append_column("ingested_at", now)
    dead_letter_table(cfg).write_arrow(rows, commit_user=commit_user, commit_identifier=batch_id)


def make_decoder(cfg: IngestConfig, table: Table, log: Callable[[str], None] = print) -> Decoder:
    """The decoder for the table's current schema. Avro: the writer schema file is read again
    for every batch, and fields a new version of it adds evolve the table first."""
    keys = tuple(table.primary_keys)
    key_format = cfg.key_format or ("string" if len(keys) <= 1 else "json")
    avro = read_avro_schema(cfg) if cfg.format == "avro" and not cfg.schema_registry else None
    if avro is not None:
        writer = avro_to_arrow_schema(json.loads(avro))
        known = set(table.schema.field_names)
        added = pa.schema([f for f in writer if f.name not in known])
        if len(added):
            evolve_table(cfg, table, added, log)
    return Decoder(cfg.format, table.schema.arrow_schema(), keys, key_format=key_format, avro_schema=avro,
                   schema_registry=cfg.schema_registry, on_error=cfg.on_error, decimal_handling=cfg.decimal_handling,
                   server_time_zone=cfg.server_time_zone, source_table=cfg.source_table,
                   partition_keys=tuple(table.partition_keys),
                   partial_update=table.options.merge_engine == "partial-update",
                   defaulted=tuple(f.name for f in table.schema.fields
                                   if not f.type.nullable and f.default_value is not None))


def evolve_table(cfg: IngestConfig, table: Table, fields: pa.Schema, log: Callable[[str], None]) -> None:
    """Add the records' new fields to the table as nullable columns and widen the columns change
    events declare wider (Paimon's Kafka sync does the same), or refuse naming them when schema
    evolution is off."""
    known = set(table.schema.field_names)
    if not cfg.evolve_schema:
        added, widened = [n for n in fields.names if n not in known], [n for n in fields.names if n in known]
        what = " and ".join(([f"field(s) {added} that table {cfg.table} does not have"] if added else [])
                            + ([f"wider types of (or new fields inside) {widened}"] if widened else []))
        raise SchemaMismatchError(
            f"records carry {what}, and schema evolution is off (--no-schema-evolution): add or widen the columns "
            "(paimon-streaming alter) or drop the flag; nothing was written")
    schema = table.update_schema().union_by_name(pa.schema([f.with_nullable(True) for f in fields])).commit()
    log(f"table {cfg.table} evolved to schema {schema.id}: "
        + ", ".join(f"{'widened' if f.name in known else 'added'} {f.name} {f.type}" for f in fields))


def prepare_table_batch(spark: SparkSession, cfg: IngestConfig, table: Table, records: DataFrame, batch_id: int,
                        log: Callable[[str], None], prefiltered: bool = False,
                        collected: pa.Table | None = None) -> PreparedBatch | None:
    """Decode one micro-batch's Kafka records (key, value, topic, partition, offset) and write
    them into the table's files, to be committed (None: committed before); when they carried
    new fields, nothing is written: the table evolves and the batch is decoded again (the
    schema change is idempotent, so a crash in between replays the batch exactly once).
    `prefiltered`: the records are those of the source tables that go to this table (routed by
    `ingest_database.py`), which may be several (shards); `collected`: they are these, in the
    driver already (`records` is the micro-batch's DataFrame)."""
    sink = paimon_sink(table.ref, row_kind_column=KIND_COLUMN if table.primary_keys else None)
    commit_user = query_commit_user(records)
    dead_letter_user = f"{commit_user}:dead-letter" + (f":{cfg.table}" if prefiltered else "")
    for _ in range(_EVOLUTION_ROUNDS):
        table.refresh()
        decoder = make_decoder(cfg, table, log)
        seen = spark.sparkContext.accumulator([], _BytesList())
        rejected = spark.sparkContext.accumulator([], _BytesList())
        sources = spark.sparkContext.accumulator([], _BytesList())

        def before_commit() -> None:
            if not prefiltered and cfg.source_table is None:
                check_one_source_table(cfg, sources.value, table)
            fields = _new_fields(seen.value)
            if len(fields):
                raise NewFieldsSeen(fields)
            bad = _rejected_rows(rejected.value)
            set_aside(cfg, bad, dead_letter_user, batch_id)
            REJECTED_PER_BATCH[batch_id] = REJECTED_PER_BATCH.get(batch_id, 0) + bad.num_rows
        decode = ArrowTransform(functools.partial(decode_batches, decoder, seen, rejected, sources),
                                decoder.output_schema)
        if collected is None:
            READS_PER_BATCH[batch_id] = READS_PER_BATCH.get(batch_id, 0) + 1
        try:
            return sink.prepare(records, batch_id, before_commit=before_commit, transform=decode, collected=collected)
        except NewFieldsSeen as exc:
            evolve_table(cfg, table, exc.fields, log)
    raise SchemaMismatchError(f"batch {batch_id} still carried new fields after {_EVOLUTION_ROUNDS} schema changes")


def table_writer(spark: SparkSession, cfg: IngestConfig, table: Table,
                 log: Callable[[str], None]) -> Callable[[DataFrame, int], None]:
    """The foreachBatch function of a job ingesting into one table."""
    def write(df: DataFrame, batch_id: int) -> None:
        REJECTED_PER_BATCH[batch_id] = READS_PER_BATCH[batch_id] = 0
        prepared = prepare_table_batch(spark, cfg, table, df.select(*RECORD_COLUMNS), batch_id, log)
        if prepared is not None:
            prepared.commit()
    return write


def check_checkpoint_fits(cfg: IngestConfig) -> None:
    """InvalidOptionError, before the table is created, when the checkpoint finished batches
    that are not in the table (see checkpoint_target.py): a checkpoint of a dropped table, or
    of another one, would skip every record its batches read."""
    catalog = Catalog(cfg.warehouse)
    table = catalog.get_table(cfg.table) if catalog.table_exists(cfg.table) else None
    location = cfg.checkpoint_location()
    check_checkpoint_target(location, table, cfg.table,
                            f"Give --checkpoint a new directory (or delete {location}) to ingest into {cfg.table} "
                            f"from --starting-offsets ({cfg.starting_offsets}), or use the table it wrote",
                            made_before_batches=True)


def start_query(spark: SparkSession, cfg: IngestConfig, source: str, write: Callable[[DataFrame, int], None]):
    drop_unfinished_first_offsets(cfg.checkpoint_location())
    reader = spark.readStream.format(source)
    for k, v in cfg.source_options().items():
        reader = reader.option(k, v)
    writer = reader.load().writeStream.foreachBatch(write).option("checkpointLocation", cfg.checkpoint_location())
    if cfg.trigger == "available-now":
        writer = writer.trigger(availableNow=True)
    else:
        writer = writer.trigger(processingTime=trigger_interval(cfg.trigger))
    return writer.queryName(f"ingest-{cfg.target}").start()


def drop_unfinished_first_offsets(checkpoint: str) -> None:
    """A job killed while Spark wrote batch 0's offsets leaves their temp file
    (offsets/.0.<uuid>.tmp) behind, and Spark refuses to start batch 0 in an offsets directory
    holding anything (STATE_STORE_CHECKPOINT_LOCATION_NOT_EMPTY): every rerun failed. Before
    any batch's offsets were written, such files are no one's (the job does not run)."""
    file_io, path = FileIO.for_path(checkpoint)
    offsets = f"{path}/offsets"
    if not file_io.is_dir(offsets):
        return
    names = file_io.list_names(offsets)
    if any(not n.startswith(".") for n in names):
        return  # a batch's offsets were written: Spark goes on from them
    for name in names:
        if name.endswith((".tmp", ".tmp.crc")):
            file_io.delete_quietly(f"{offsets}/{name}")


# ---- progress --------------------------------------------------------------------------
def consumer_lag(progress: dict) -> int | None:
    """Records in Kafka not yet ingested: latest minus end offsets of the last batch."""
    total = 0
    for src in progress.get("sources", []):
        end, latest = _offsets(src.get("endOffset")), _offsets(src.get("latestOffset"))
        if latest is None or end is None:
            return None
        total += sum(max(o - end.get(tp, 0), 0) for tp, o in latest.items())
    return total


def _offsets(value) -> dict[tuple[str, str], int] | None:
    if isinstance(value, str):
        try:
            value = json.loads(value)
        except ValueError:
            return None
    if not isinstance(value, dict):
        return None
    return {(t, p): int(o) for t, parts in value.items() if isinstance(parts, dict) for p, o in parts.items()}


def batch_records(progress: dict) -> int:
    """The records a finished micro-batch read (once, however often it was decoded)."""
    return progress.get("numInputRows", 0) // max(READS_PER_BATCH.get(progress.get("batchId"), 1), 1)


def batch_seconds(progress: dict) -> float:
    """How long a finished micro-batch took, trigger to commit."""
    return progress.get("durationMs", {}).get("triggerExecution", 0) / 1000


def rate(rows: int, seconds: float) -> str:
    """Rows per second as shown: whole numbers from 10 on, two significant digits below (a few
    rows in a slow batch are 0.22 rows/s, not 0); n/a without a duration."""
    if not seconds:
        return "n/a"
    per_second = rows / seconds
    return f"{per_second:,.0f}" if per_second >= 10 or per_second == 0 else f"{per_second:.2g}"


_SET_ASIDE = {"skip": "skipped", "dead-letter": "dead-lettered"}  # per --on-error, how set-aside records are named


def progress_line(progress: dict, written: str, on_error: str = "fail") -> str:
    """One finished micro-batch; `written`: what the target holds now (`table_state`)."""
    lag = consumer_lag(progress)
    rows = batch_records(progress)
    seconds = batch_seconds(progress)
    rejected = REJECTED_PER_BATCH.get(progress.get("batchId"), 0)
    aside = f", {rejected:,} {_SET_ASIDE[on_error]}" if on_error in _SET_ASIDE else ""
    return (f"batch {progress.get('batchId')}: {rows:,} rows in {seconds:.1f}s ({rate(rows, seconds)} rows/s){aside}, "
            f"lag {'n/a' if lag is None else f'{lag:,}'}, {written}")


def table_state(table: Table) -> str:
    snap = Table.open(table.ref).snapshot_manager.latest()
    return f"last snapshot {'none' if snap is None else f'{snap.id} ({snap.total_record_count:,} records)'}"


@dataclass
class IngestTotals:
    """What the live status shows, folded from the run's finished micro-batches (Spark's
    progress dicts): totals over the batches that read rows, and the newest consumer lag."""

    rows: int = 0
    seconds: float = 0.0
    set_aside: int = 0
    last: dict | None = None  # the progress of the newest batch that read rows
    lag: int | None = None  # of the newest progress, also an idle trigger's

    def add(self, progress: dict) -> None:
        rows = batch_records(progress)
        if rows > 0:
            self.rows += rows
            self.seconds += batch_seconds(progress)
            self.set_aside += REJECTED_PER_BATCH.get(progress.get("batchId"), 0)
            self.last = progress


def ingest_status(table: str, totals: IngestTotals, running: float | None, idle: float, on_error: str = "fail",
                next_batch: int | None = None) -> str:
    """The live status line of `paimon-streaming ingest`. `running`: seconds the current
    trigger has been active (None: waiting for the next one); `idle`: seconds since the last
    batch finished; `next_batch`: the id of the batch that runs next, when known."""
    if running is not None:
        state = f"batch {'' if next_batch is None else f'{next_batch} '}running {running:.1f}s"
    else:
        state = f"waiting {idle:.1f}s"
    parts = [f"ingest {table}", state]
    if totals.last is not None:
        last_s = batch_seconds(totals.last)
        last_rate = rate(batch_records(totals.last), last_s)
        avg_rate = rate(totals.rows, totals.seconds)
        parts += [f"{last_rate} rows/s (last) {avg_rate} avg",
                  f"lag {'n/a' if totals.lag is None else f'{totals.lag:,}'}", f"last batch {last_s:.1f}s"]
    parts.append(f"{totals.rows:,} rows")
    if on_error in _SET_ASIDE:
        parts.append(f"{totals.set_aside:,} {_SET_ASIDE[on_error]}")
    return " | ".join(parts)


def run_ingest(spark: SparkSession, cfg: IngestConfig, log: Callable[[str], None] = print,
               status: Callable[[str], None] | None = None) -> int:
    """Run the ingestion until Ctrl-C/SIGTERM (or, with trigger available-now, until caught up).
    `status` (a terminal's live status line, see `live_status.py`) gets `ingest_status` at every poll."""
    ps.register(spark)
    source = kafka_source_name(spark, cfg.source)
    if cfg.database is not None:
        from .ingest_database import TABLES_PER_BATCH, database_writer  # it builds on this module
        write = database_writer(spark, cfg, log)

        def written(progress: dict) -> str:
            return f"{TABLES_PER_BATCH.get(progress.get('batchId'), 0)} table(s) written"
    else:
        check_checkpoint_fits(cfg)
        table = ensure_table(spark, cfg, log)
        write = table_writer(spark, cfg, table, log)

        def written(progress: dict) -> str:
            return table_state(table)
    query = start_query(spark, cfg, source, write)
    log(f"ingesting {cfg.topic_pattern or ','.join(cfg.topics)} ({cfg.format}, source {source}) into "
        f"{cfg.target}; checkpoint {cfg.checkpoint_location()}; Ctrl-C stops")
    stop = threading.Event()

    def request_stop(signum, frame) -> None:
        """Ctrl-C or SIGTERM: the poll loop stops the query. Raised inside a py4j call (as a
        KeyboardInterrupt would be) it made py4j log tracebacks of a normal stop."""
        if stop.is_set():
            raise KeyboardInterrupt  # a second one: stop now
        stop.set()
    previous = {sig: signal.signal(sig, request_stop) for sig in (signal.SIGTERM, signal.SIGINT)}
    last_batch = [-1]  # the newest batch that read rows
    seen: set[tuple] = set()  # the progress reports of `query.recentProgress` already folded in
    totals = IngestTotals()
    finished_at = [time.monotonic()]  # when the newest batch with rows finished (or the query started)
    trigger_since: list[float | None] = [None]  # when the running trigger was first seen active

    def report_finished_batches() -> None:
        recent = query.recentProgress
        if recent:
            totals.lag = consumer_lag(recent[-1])
        # each report once, also several finished between polls. Not by batch id alone: an idle
        # trigger reports 0 rows under the id of the batch that runs next, and then that batch its rows
        keys = [_progress_key(progress) for progress in recent]
        for key, progress in zip(keys, recent):
            if key in seen:
                continue
            totals.add(progress)
            if progress.get("numInputRows", 0) > 0:
                last_batch[0] = max(last_batch[0], progress.get("batchId", -1))
                finished_at[0] = time.monotonic()
                log(progress_line(progress, written(progress), cfg.on_error))
        seen.clear()
        seen.update(keys)  # the reports Spark still keeps (its recent ones): older ones never come back

    def show_status() -> None:
        now = time.monotonic()
        if not query.status.get("isTriggerActive"):
            trigger_since[0] = None
        elif trigger_since[0] is None:
            trigger_since[0] = now
        # back to back (a backlog) the trigger stays active: the batch began when the previous one finished
        running = None if trigger_since[0] is None else now - max(trigger_since[0], finished_at[0])
        status(ingest_status(cfg.target, totals, running, now - finished_at[0], cfg.on_error,
                           last_batch[0] + 1 if last_batch[0] >= 0 else None))
    try:
        try:
            while query.isActive and not stop.is_set():
                try:
                    query.awaitTermination(0.25)
                except StreamingQueryException:
                    break  # reported below
                report_finished_batches()
                if status is not None:
                    show_status()
            report_finished_batches()
        except KeyboardInterrupt:
            stop.set()
        if stop.is_set():
            log("stopping: the current micro-batch is abandoned and replayed exactly once on the next run")
            query.stop()
            log(f"stopped; resume with the same command (checkpoint {cfg.checkpoint_location()})")
            return 0
    finally:
        for sig, handler in previous.items():
            signal.signal(sig, handler)
    if query.exception() is not None:
        log(f"error: ingestion failed: {failure_summary(str(query.exception()))}")
        return 1
    log(f"caught up; {progress_line(query.lastProgress or {}, written(query.lastProgress or {}), cfg.on_error)}")
    return 0


def _progress_key(progress: dict) -> tuple:
    """One progress report of a query (Spark's timestamp tells an idle trigger's report from the
    batch of the same id that follows it)."""
    return progress.get("batchId"), progress.get("timestamp"), progress.get("numInputRows", 0)


def failure_summary(text: str) -> str:
    """The error line of our own exceptions (any PaimonError) out of a Spark failure (which wraps
    the Python worker's traceback), else the first line of the failure."""
    ours = [f"{name}: {message}" for module, name, message in _ERROR_LINE.findall(text)
            if _is_paimon_error(module, name)]
    return (ours or [text.strip().splitlines()[0] if text.strip() else text])[-1]


# an exception's line of a traceback: the class, qualified by its module unless printed bare, and its message
_ERROR_LINE = re.compile(r"\b((?:[A-Za-z_]\w*\.)*)([A-Za-z_]\w*): (.*)")


def _is_paimon_error(module: str, name: str) -> bool:
    """Whether a traceback's exception class is a PaimonError: one of our modules' (imported to
    tell), or printed bare and the name of one."""
    if module.startswith("paimon_streaming."):
        try:
            cls = getattr(importlib.import_module(module.rstrip(".")), name, None)
        except ImportError:
            return False
        return isinstance(cls, type) and issubclass(cls, PaimonError)
    return not module and name in _subclass_names(PaimonError)


def _subclass_names(cls: type) -> set[str]:
    return {cls.__name__}.union(*(_subclass_names(sub) for sub in cls.__subclasses__()))
