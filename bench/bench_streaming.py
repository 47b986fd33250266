"""W3 of shared BENCH.md: streaming latency through Spark, sink -> table -> source.

A writer query (rate source, trigger every second) commits each micro-batch with
foreachBatch(paimon_sink); a reader query streams the same table with
readStream.format("paimon") and the same trigger. For every writer batch the bench measures
the time from its snapshot's commit (snapshot timeMillis) to the moment its rows arrive in a
reader micro-batch, and prints the median and p95 as one JSON line plus a short table.

    .venv/bin/python bench/bench_streaming.py [--seconds 60] [--rows-per-second 2000] [--trigger 1]
"""
from __future__ import annotations

import argparse
import json
import os
import statistics
import sys
import tempfile
import threading
import time

from pyspark.sql import SparkSession
from pyspark.sql import functions as F

import paimon_streaming as ps
from paimon_streaming.sinks import paimon_sink


def percentile(values: list[float], q: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(round(q * (len(ordered) - 1))))]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--seconds", type=int, default=60, help="how long both queries run")
    parser.add_argument("--rows-per-second", type=int, default=2000)
    parser.add_argument("--trigger", type=float, default=1.0, help="trigger interval of both queries (s)")
    parser.add_argument("--dv", action="store_true", help="deletion-vector table")
    args = parser.parse_args()
    os.environ.setdefault("PYSPARK_PYTHON", sys.executable)
    work = tempfile.mkdtemp(prefix="paimon-w3-")
    spark = (SparkSession.builder.master("local[2]").config("spark.ui.enabled", "false")
             .config("spark.sql.shuffle.partitions", "2").getOrCreate())
    spark.sparkContext.setLogLevel("ERROR")
    ps.register(spark)
    path = f"{work}/wh/db.db/events"
    options = {"primary-key": "id", "bucket": "2"}
    if args.dv:
        options["deletion-vectors.enabled"] = "true"
    sink = paimon_sink(path, options=options)

    def write(df, batch_id):
        sink(df.withColumn("wb", F.lit(batch_id)), batch_id)

    source = (spark.readStream.format("rate").option("rowsPerSecond", args.rows_per_second).load()
              .select(F.col("value").alias("id"), F.col("timestamp").alias("ts")))
    trigger = f"{args.trigger} seconds"
    writer = (source.writeStream.foreachBatch(write).trigger(processingTime=trigger)
              .option("checkpointLocation", f"{work}/ckpt-w").start())
    while not os.path.exists(f"{path}/snapshot"):  # the table is created by the first batch
        time.sleep(0.2)
    arrivals: dict[int, float] = {}
    lock = threading.Lock()

    def read(df, batch_id):
        now = time.time()
        seen = [r["wb"] for r in df.select("wb").distinct().collect()]
        with lock:
            for wb in seen:
                arrivals.setdefault(wb, now)

    reader = (spark.readStream.format("paimon").option("scan.mode", "latest").load(path)
              .writeStream.foreachBatch(read).trigger(processingTime=trigger)
              .option("checkpointLocation", f"{work}/ckpt-r").start())
    time.sleep(args.seconds)
    writer.stop()
    time.sleep(3 * args.trigger)
    reader.stop()
    table = ps.Table.open(path)
    commits = {s.commit_identifier: s.time_millis / 1000 for s in table.snapshots() if s.commit_kind == "APPEND"}
    latencies = [arrivals[wb] - commits[wb] for wb in sorted(arrivals) if wb in commits]
    result = {"bench": "streaming", "workload": "W3", "trigger_s": args.trigger, "dv": args.dv,
              "rows_per_second": args.rows_per_second, "batches": len(latencies),
              "median_s": statistics.median(latencies), "p95_s": percentile(latencies, 0.95),
              "max_s": max(latencies), "target_p95_s": args.trigger + 1}
    print(json.dumps(result))
    print(f"W3 visibility latency over {len(latencies)} writer batches (trigger {args.trigger}s): "
          f"median {result['median_s']:.2f}s, p95 {result['p95_s']:.2f}s, max {result['max_s']:.2f}s "
          f"(target p95 <= {result['target_p95_s']:.1f}s)")
    spark.stop()


if __name__ == "__main__":
    main()
