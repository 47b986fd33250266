"""What `paimon-streaming ingest` was asked to do, checked before any of it starts.

`IngestConfig` refuses settings that cannot work whatever the topic holds (names the catalog
refuses, option values Paimon's parsers refuse, a format without its companions, Kafka source
options its parser refuses), and `check_before_start` what the warehouse and local files tell
(the name of a table or database to be created, the Avro schema file). Neither imports pyspark
nor asks a broker, so the command reports a mistyped argument before Spark starts (seconds)
and before a broker is tried (which, when unreachable, would hide it).
"""
from __future__ import annotations

import json
import re
from dataclasses import dataclass, field
from pathlib import Path
from typing import Callable

import pyarrow as pa

from paimon_streaming.branches import split_branch
from paimon_streaming.catalog import Catalog, check_name, split_identifier
from paimon_streaming.errors import InvalidNameError, InvalidOptionError
from paimon_streaming.options import OPTIONS, validate
from paimon_streaming.schema import check_distinct_keys
from paimon_streaming.sources.kafka_options import KafkaOptions

from . import source_tables
from .decoders import DecodeError, avro_to_arrow_schema, check_settings
from .source_tables import DatabaseRouting

SOURCES = ("auto", "kafka", "kafka-python")


@dataclass(frozen=True)
class IngestConfig:
    """What `paimon-streaming ingest` was asked to do (see the CLI's --help)."""

    bootstrap_servers: str
    warehouse: str
    table: str = ""  # db.table; or `database` routes each source table to its own
    topics: tuple[str, ...] = ()
    topic_pattern: str | None = None
    format: str = "json"
    avro_schema: str | None = None  # path of an .avsc file
    schema_registry: str | None = None  # Confluent Schema Registry URL: framed Avro values (and keys)
    schema: str | None = None  # Spark DDL, e.g. "id BIGINT, name STRING"
    primary_keys: tuple[str, ...] = ()
    partition_keys: tuple[str, ...] = ()
    partition_keys_if_present: bool = False  # --database: a table lacking one of them is not partitioned
    bucket: int | None = None
    table_options: dict[str, str] = field(default_factory=dict)
    key_format: str | None = None
    checkpoint: str | None = None
    trigger: str = "10s"
    starting_offsets: str = "earliest"
    max_offsets_per_trigger: int | None = None
    source: str = "auto"
    kafka_options: dict[str, str] = field(default_factory=dict)
    reader_options: dict[str, str] = field(default_factory=dict)  # Spark's Kafka source options, e.g. minPartitions
    evolve_schema: bool = True  # records' new fields become columns; False: they are an error
    on_error: str = "fail"  # an undecodable record: fail, skip, or dead-letter (see `set_aside`)
    decimal_handling: str = "precise"  # debezium-json without schema envelopes: the connector's decimal.handling.mode
    server_time_zone: str | None = None  # canal-json: the MySQL server's zone, which its TIMESTAMP text is in
    source_table: str | None = None  # change events: the source tables (regex of db.table) this table takes
    dead_letter_table: str | None = None  # default <db.table>_dead_letter (with `database`: <db>.ingest_dead_letter)
    database: DatabaseRouting | None = None  # change events: a table per source table (ingest_database.py)
    variant_columns: tuple[str, ...] = ()  # JSON: fields stored as VARIANT (a new table's are inferred without them)

    def __post_init__(self) -> None:
        if bool(self.table) == (self.database is not None):
            raise InvalidOptionError("give the target table (--table DB.TABLE) or a database to sync (--database DB)")
        self._check_names()
        if self.database is not None and self.format not in source_tables.FORMATS:
            raise InvalidOptionError(f"--database routes change events naming their tables "
                                     f"({', '.join(source_tables.FORMATS)}), not {self.format}")
        try:
            check_settings(self.format, self.key_format, self.primary_keys, self.avro_schema, self.schema_registry,
                           self.on_error, self.decimal_handling, self.server_time_zone, self.source_table)
        except DecodeError as exc:
            raise InvalidOptionError(str(exc)) from None
        if self.variant_columns and self.format != "json":
            raise InvalidOptionError(f"--variant-column takes fields of JSON records (--format json), not {self.format}")
        for flag, keys in (("--primary-key", self.primary_keys), ("--partition-key", self.partition_keys)):
            check_distinct_keys(flag, keys)
        keyed = set(self.variant_columns) & set(self.primary_keys + self.partition_keys)
        if keyed:
            raise InvalidOptionError(f"--variant-column {sorted(keyed)} cannot be a primary or partition key")
        if self.bucket is not None:
            try:
                OPTIONS["bucket"].parse(str(self.bucket))
            except ValueError as exc:
                raise InvalidOptionError(f"--bucket {self.bucket}: {exc}") from None
        validate(self.new_table_options())  # --option KEY=VALUE as the table would take them
        if self.source not in SOURCES:
            raise InvalidOptionError(f"unknown source '{self.source}'; use auto, kafka (Spark's connector) or "
                                     "kafka-python")
        if self.trigger != "available-now":
            trigger_interval(self.trigger)
        if self.topics or self.topic_pattern:  # (one without serves the table helpers only, ensure_table...)
            KafkaOptions.parse(self.source_options())  # as both sources parse them
        if self.database is not None and (self.schema or self.source_table):
            raise InvalidOptionError("--schema and --source-table are for one table; with --database each source "
                                     "table gets its own (--including-tables/--excluding-tables choose them; create "
                                     "a table first to give it other columns)")

    def _check_names(self) -> None:
        """InvalidNameError naming the argument for a name the catalog refuses whatever the
        warehouse holds (`check_before_start` checks those of tables to be created)."""
        for flag, name in (("--table", self.table), ("--dead-letter-table", self.dead_letter_table)):
            if name:
                _named(flag, lambda: split_identifier(split_branch(name)[0]))
        if self.database is not None:
            routing = self.database
            _named("--database", lambda: check_name("database", routing.database))
            _named("--table-prefix/--table-suffix",
                   lambda: check_name("table", f"{routing.table_prefix}t{routing.table_suffix}"))

    @property
    def target(self) -> str:
        """What the job writes: db.table, or database db."""
        return self.table or f"database {self.database.database}"

    @property
    def dead_letter_name(self) -> str:
        """Where --on-error dead-letter keeps the records that do not decode."""
        if self.dead_letter_table:
            return self.dead_letter_table
        return f"{self.table}_dead_letter" if self.table else f"{self.database.database}.ingest_dead_letter"

    def new_table_options(self) -> dict[str, str]:
        """The options of a table the job creates: --option's, and --bucket."""
        return {**self.table_options, **({"bucket": str(self.bucket)} if self.bucket is not None else {})}

    def checkpoint_location(self) -> str:
        """Default: <warehouse>/.checkpoints/ingest-<db.table> (or ingest-database-<db>), stable
        so that a rerun resumes."""
        name = self.table or f"database-{self.database.database}"
        return self.checkpoint or f"{self.warehouse.rstrip('/')}/.checkpoints/ingest-{name}"

    def source_options(self) -> dict[str, str]:
        opts = {"kafka.bootstrap.servers": self.bootstrap_servers, "startingOffsets": self.starting_offsets}
        if self.topic_pattern:
            opts["subscribePattern"] = self.topic_pattern
        else:
            opts["subscribe"] = ",".join(self.topics)
        if self.max_offsets_per_trigger is not None:
            opts["maxOffsetsPerTrigger"] = str(self.max_offsets_per_trigger)
        opts.update({f"kafka.{k}" if not k.startswith("kafka.") else k: v for k, v in self.kafka_options.items()})
        opts.update(self.reader_options)
        return opts


def check_before_start(cfg: IngestConfig) -> None:
    """What the warehouse and local files tell without a broker: InvalidNameError naming the
    argument for the name of a table (or database) to be created that the catalog refuses,
    OSError or InvalidOptionError for an Avro schema file that does not read."""
    catalog = Catalog(cfg.warehouse)
    new_tables = [("--table", cfg.table)] if cfg.table else []
    if cfg.on_error == "dead-letter":
        new_tables.append(("--dead-letter-table", cfg.dead_letter_name))
    for flag, name in new_tables:
        if not catalog.table_exists(name):
            _named(flag, lambda: catalog.check_new_table(name))
    if cfg.database is not None and not catalog.database_exists(cfg.database.database):
        _named("--database", lambda: check_name("database", cfg.database.database, new=True))
    if cfg.format == "avro" and not cfg.schema_registry:
        avro_writer_schema(cfg)


def _named(flag: str, check: Callable[[], object]) -> None:
    """Run a name check of the catalog's; its error names the argument."""
    try:
        check()
    except ValueError as exc:
        raise InvalidNameError(f"{flag}: {exc}") from None


def read_avro_schema(cfg: IngestConfig) -> str:
    """The text of the --avro-schema file, which is JSON."""
    text = Path(cfg.avro_schema).read_text()
    try:
        json.loads(text)
    except ValueError as exc:
        raise InvalidOptionError(f"--avro-schema {cfg.avro_schema} is not an Avro schema (JSON): {exc}") from None
    return text


def avro_writer_schema(cfg: IngestConfig) -> pa.Schema:
    """The --avro-schema file's fields as Arrow."""
    return avro_to_arrow_schema(json.loads(read_avro_schema(cfg)))


def trigger_interval(trigger: str) -> str:
    """--trigger as Spark's processingTime takes it; InvalidOptionError for what it does not."""
    m = re.fullmatch(r"(\d+(?:\.\d+)?)\s*(ms|s|m|min)?", trigger.strip())
    if not m or ("." in m.group(1) and m.group(2) in ("m", "min")):  # Spark: no fraction of a minute
        raise InvalidOptionError(f"--trigger must be an interval like 10s, 500ms, 1m, or available-now; got '{trigger}'")
    unit = {"ms": "milliseconds", "s": "seconds", None: "seconds", "m": "minutes", "min": "minutes"}[m.group(2)]
    return f"{m.group(1)} {unit}"
