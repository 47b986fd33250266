"""`paimon-streaming demo`: the main job, a streaming round trip on a local warehouse.

A generated change stream goes through the Spark sink into a deletion-vector table and back
out through the streaming source (see `paimon_streaming.sinks.demo_pipeline`). pyspark is
imported only inside the handler, so `paimon-streaming --help` and the table
commands work without it; the module lives here because the core package never imports pyspark.
"""
from __future__ import annotations

import argparse

from .live_status import LiveStatus, add_progress_argument


def cmd_demo(args: argparse.Namespace) -> int:
    from paimon_streaming.catalog import Catalog

    from .demo_pipeline import DemoSpec, earlier_demo_table, run_demo
    from .ingest_command import spark_session
    earlier_demo_table(Catalog(args.warehouse))  # refuses another table of the demo's name before Spark starts
    spark = spark_session(args.master, [("spark.sql.shuffle.partitions", "2")], "paimon-streaming-demo",
                          short_job=True)
    try:
        with LiveStatus(enabled=not args.no_progress) as live:
            return run_demo(spark, args.warehouse, DemoSpec(args.batches, args.rows, args.keys, args.seed),
                            f"{args.interval} seconds", live.log, live.update)
    finally:
        spark.stop()


def register(sub: argparse._SubParsersAction) -> None:
    demo = sub.add_parser("demo", help="streaming demo: generated upserts/deletes -> Spark sink -> deletion-vector "
                          "table -> streaming source, verified against a model",
                          description="Streams generated changes (deterministic upserts and deletes) through "
                          "foreachBatch(paimon_sink) into demo.orders (deletion vectors) and reads them back with "
                          "readStream.format('paimon'); exits 1 if the table or the streamed copy differs from "
                          "the model. Replaces a demo.orders an earlier run made; refuses any other table of "
                          "that name. Needs pyspark (pip install '.[spark]') and Java 17.")
    demo.add_argument("--warehouse", default="./warehouse", help="warehouse directory (default ./warehouse)")
    demo.add_argument("--batches", type=int, default=20, help="micro-batches to stream (default 20)")
    demo.add_argument("--rows", type=int, default=20_000, help="changes per batch (default 20000)")
    demo.add_argument("--keys", type=int, default=100_000, help="size of the key space (default 100000)")
    demo.add_argument("--seed", type=int, default=7, help="seed of the generated changes")
    demo.add_argument("--interval", type=float, default=1.0, help="seconds between micro-batches (default 1)")
    demo.add_argument("--master", default="local[*]", help="Spark master (default local[*])")
    add_progress_argument(demo)
    demo.set_defaults(func=cmd_demo)
