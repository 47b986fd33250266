"""`paimon-streaming ingest`: a Kafka topic into a Paimon table, as one streaming Spark job.

The command imports pyspark and the sink only inside its handler: the core package never
imports pyspark (`pip install ".[spark,kafka]"` provides what the handler needs).
"""
from __future__ import annotations

import argparse
import os
import sys
import warnings

from .live_status import LiveStatus, add_progress_argument


def _key_value(text: str) -> tuple[str, str]:
    key, sep, value = text.partition("=")
    if not sep or not key:
        raise argparse.ArgumentTypeError(f"expected KEY=VALUE, got '{text}'")
    return key, value


# Local Python workers import PySpark from its installed package, not from Spark's zip (worker_daemon.py).
WORKER_DAEMON = "paimon_streaming.sinks.worker_daemon"
# A short job's driver JVM: C1 only and the serial collector leave the other core to the job's
# Python processes while the JVM loads Spark (README, "Command line": the demo's start-up).
SHORT_JOB_JAVA_OPTIONS = "-XX:TieredStopAtLevel=1 -XX:+UseSerialGC"


def session_confs(master: str, confs: list[tuple[str, str]], short_job: bool) -> dict[str, str]:
    """The user's `confs` plus the start-up settings they do not give themselves (nor through
    PYSPARK_SUBMIT_ARGS, which holds driver Java options too)."""
    given = {"spark.ui.showConsoleProgress": "false", **dict(confs)}
    if master.startswith("local"):  # executors elsewhere may hold paimon-streaming only as --py-files
        given.setdefault("spark.python.daemon.module", WORKER_DAEMON)
    if short_job and "PYSPARK_SUBMIT_ARGS" not in os.environ:
        given.setdefault("spark.driver.extraJavaOptions", SHORT_JOB_JAVA_OPTIONS)
    return given


def spark_session(master: str, confs: list[tuple[str, str]], app: str, short_job: bool = False):
    """A Spark session whose Python workers run this interpreter (it has paimon-streaming)."""
    os.environ.setdefault("PYSPARK_PYTHON", sys.executable)
    os.environ.setdefault("PYSPARK_DRIVER_PYTHON", sys.executable)
    # PySpark 4.3 warns at every session start when pandas 3 is installed (its own pyspark.testing
    # import); these commands move Arrow only, never pandas, so the line would only mislead.
    warnings.filterwarnings("ignore", message="PySpark does not yet fully support pandas", category=FutureWarning)
    from pyspark.sql import SparkSession
    builder = SparkSession.builder.master(master).appName(app)
    for key, value in session_confs(master, confs, short_job).items():
        builder = builder.config(key, value)
    spark = builder.getOrCreate()
    spark.sparkContext.setLogLevel("ERROR")
    return spark


def cmd_ingest(args: argparse.Namespace) -> int:
    from .ingest_config import IngestConfig, check_before_start
    from .source_tables import DatabaseRouting
    topics = tuple(t.strip() for arg in args.topic for t in arg.split(",") if t.strip())
    if bool(topics) == bool(args.topic_pattern):
        raise ValueError("give --topic T (repeatable, or comma-separated) or --topic-pattern REGEX")
    database = None
    if args.database:
        database = DatabaseRouting(args.database, args.table_prefix, args.table_suffix, args.including_tables,
                                   args.excluding_tables)
    elif args.table_prefix or args.table_suffix or args.including_tables != ".*" or args.excluding_tables:
        raise ValueError("--table-prefix, --table-suffix, --including-tables and --excluding-tables go with --database")
    if args.dead_letter_table and args.on_error != "dead-letter":
        raise ValueError("--dead-letter-table goes with --on-error dead-letter")
    cfg = IngestConfig(
        bootstrap_servers=args.bootstrap_servers, warehouse=args.warehouse, table=args.table or "", database=database,
        topics=topics,
        topic_pattern=args.topic_pattern, format=args.format, avro_schema=args.avro_schema,
        schema_registry=args.schema_registry, schema=args.schema,
        primary_keys=tuple(args.primary_key), partition_keys=tuple(args.partition_key), bucket=args.bucket,
        table_options=dict(args.option), key_format=args.key_format, checkpoint=args.checkpoint,
        trigger=args.trigger, starting_offsets=args.starting_offsets,
        max_offsets_per_trigger=args.max_offsets_per_trigger, source=args.source,
        kafka_options=dict(args.kafka_option), reader_options=dict(args.source_option),
        evolve_schema=not args.no_schema_evolution,
        on_error=args.on_error, dead_letter_table=args.dead_letter_table, decimal_handling=args.decimal_handling,
        server_time_zone=args.server_time_zone, source_table=args.source_table,
        variant_columns=tuple(args.variant_column))
    check_before_start(cfg)  # every argument is checked before Spark starts (seconds) and a broker is asked
    from .ingest import run_ingest
    spark = spark_session(args.master, args.conf, f"paimon-ingest-{args.table or args.database}")
    try:
        with LiveStatus(enabled=not args.no_progress) as live:
            return run_ingest(spark, cfg, live.log, live.update)
    finally:
        spark.stop()


def register(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser("ingest", help="stream a Kafka topic into a Paimon table (exactly-once, resumable)",
                       description="Stream Kafka records into a Paimon table with Spark Structured Streaming. "
                       "Creates the table when missing; a record with a null value (tombstone) deletes its key. "
                       "Ctrl-C stops; rerunning the same command resumes from the checkpoint.")
    p.add_argument("--bootstrap-servers", required=True, metavar="HOST:PORT", help="Kafka brokers")
    p.add_argument("--topic", action="append", default=[], help="topic(s) to read (repeatable or comma-separated)")
    p.add_argument("--topic-pattern", help="regex of topics to read instead of --topic")
    p.add_argument("--warehouse", required=True, help="Paimon warehouse (directory or URI)")
    target = p.add_mutually_exclusive_group(required=True)
    target.add_argument("--table", metavar="DB.TABLE", help="target table")
    target.add_argument("--database", metavar="DB", help="change events of several source tables: each into a table "
                        "of its own in DB, created as its first rows arrive (as Paimon's kafka_sync_database)")
    p.add_argument("--table-prefix", default="", help="--database: prefix of the target tables' names")
    p.add_argument("--table-suffix", default="", help="--database: suffix of the target tables' names")
    p.add_argument("--including-tables", default=".*", metavar="REGEX",
                   help="--database: the source tables to sync (a Python regular expression of their names, "
                   "without the database; default all)")
    p.add_argument("--excluding-tables", metavar="REGEX", help="--database: source tables not to sync")
    p.add_argument("--format", choices=("json", "avro", "csv", "debezium-json", "debezium-avro", "debezium-bson", "maxwell-json",
                                        "canal-json", "ogg-json", "aws-dms-json"),
                   default="json", help="record value format; debezium-json/-avro/-bson, maxwell-json, canal-json, ogg-json, "
                   "aws-dms-json: "
                   "change events "
                   "(inserts, updates, deletes; debezium-avro with --schema-registry)")
    p.add_argument("--avro-schema", metavar="FILE", help="Avro writer schema (.avsc) for --format avro")
    p.add_argument("--schema-registry", metavar="URL", help="--format avro/debezium-avro: records framed by Confluent's serializers, "
                   "their writer schemas fetched from this Schema Registry (credentials as https://user:secret@host)")
    p.add_argument("--decimal-handling", choices=("precise", "string", "double"), default="precise",
                   help="debezium-json events without a schema envelope: the connector's decimal.handling.mode")
    p.add_argument("--server-time-zone", metavar="ZONE",
                   help="canal-json: the MySQL server's time zone (UTC, Asia/Shanghai, ...), which Canal's text of "
                   "TIMESTAMP columns is in; needed for TIMESTAMP WITH LOCAL TIME ZONE columns")
    p.add_argument("--source-table", metavar="REGEX",
                   help="change events of a topic carrying several tables (Maxwell's, Canal's, DMS's defaults): the "
                   "source table(s) to take, a regular expression of db.table ('.*' merges them all); without it "
                   "records of more than one table stop the job")
    p.add_argument("--schema", metavar="DDL", help="columns of a new table, e.g. 'id BIGINT, name STRING' "
                   "(default: from the Avro schema, or inferred from a sample of JSON records)")
    p.add_argument("--primary-key", action="append", default=[], metavar="COL", help="primary key column(s)")
    p.add_argument("--variant-column", action="append", default=[], metavar="COL",
                   help="JSON: a field stored as VARIANT, whatever JSON it holds (shapes and types may vary "
                   "from record to record); a new table gets it as a VARIANT column")
    p.add_argument("--partition-key", action="append", default=[], metavar="COL", help="partition column(s) (with --database: of the new tables holding them all; a "
                   "primary key without them makes a cross-partition upsert table, which needs --bucket -1 or none)")
    p.add_argument("--bucket", type=int, help="number of buckets of a new table (Paimon's default: -1, dynamic)")
    p.add_argument("--option", action="append", default=[], type=_key_value, metavar="KEY=VALUE",
                   help="Paimon table option for a new table, e.g. deletion-vectors.enabled=true")
    p.add_argument("--key-format", choices=("string", "json", "avro"),
                   help="Kafka key of tombstones: the key column's text (default for one key column), a JSON "
                   "object, or Avro framed for --schema-registry")
    p.add_argument("--checkpoint", metavar="DIR", help="Spark checkpoint (default <warehouse>/.checkpoints/ingest-<table>)")
    p.add_argument("--trigger", default="10s", help="micro-batch interval (10s, 500ms, 1m) or available-now "
                   "(ingest what is there, then stop)")
    p.add_argument("--starting-offsets", default="earliest", help="earliest, latest or Spark's JSON offsets "
                   "(a new checkpoint only)")
    p.add_argument("--max-offsets-per-trigger", type=int, metavar="N", help="bound each micro-batch")
    p.add_argument("--source", choices=("auto", "kafka", "kafka-python"), default="auto",
                   help="Spark's Kafka connector (kafka) or the pip-only kafka-python source; auto: the "
                   "connector when it is on the classpath")
    p.add_argument("--kafka-option", action="append", default=[], type=_key_value, metavar="KEY=VALUE",
                   help="Kafka consumer option, e.g. security.protocol=SSL")
    p.add_argument("--source-option", action="append", default=[], type=_key_value, metavar="KEY=VALUE",
                   help="an option of Spark's Kafka source (both sources take them), e.g. "
                   "startingTimestamp=1700000000000, minPartitions=8, failOnDataLoss=false")
    p.add_argument("--no-schema-evolution", action="store_true",
                   help="records with fields the table lacks are an error naming them (default: the fields "
                   "become new nullable columns, typed as inferred; Avro: fields of a new writer schema file)")
    p.add_argument("--on-error", choices=("fail", "skip", "dead-letter"), default="fail",
                   help="a record that does not decode (bad JSON/CSV/Avro, wrong types, null key): stop "
                   "(default), skip and count it, or keep it in the dead-letter table")
    p.add_argument("--dead-letter-table", metavar="DB.TABLE",
                   help="where --on-error dead-letter keeps them (default <table>_dead_letter; with --database "
                   "<db>.ingest_dead_letter)")
    p.add_argument("--master", default="local[*]", help="Spark master (default local[*])")
    p.add_argument("--conf", action="append", default=[], type=_key_value, metavar="KEY=VALUE",
                   help="Spark configuration, e.g. spark.driver.extraClassPath=...")
    add_progress_argument(p)
    p.set_defaults(func=cmd_ingest)
