"""Spark sink benchmark: W1 of BENCH.md through Spark (local[2]) Structured Streaming.

The W1 batches of bench_core (same generator, same seed) are staged as one Parquet file each;
a streaming query reads them with maxFilesPerTrigger=1 and trigger(availableNow=True), so its
micro-batches are exactly the W1 batches, each in one Spark partition. With
`--input-partitions N` each batch is staged as N files (consecutive slices) read with
maxFilesPerTrigger=N, one file per Spark partition: every micro-batch then has N partitions,
as from a Kafka topic with N partitions, and the sink takes its multi-partition path. Each
system runs in a fresh subprocess per run, in a local[2] session as a user starts it (the JVM's
defaults; `user_session`), the order rotating across runs so no system always runs first on a
warm or cold machine:

- `paimon-sink-dv`: foreachBatch(paimon_sink) into the W1 table with deletion vectors on;
- `paimon-sink`: the same, deletion vectors off;
- `spark-parquet`: foreachBatch writing each batch with `df.write.parquet` (Spark's floor).

Per batch the time inside the foreachBatch function is measured; rows/s is rows over the sum
of those times, end-to-end rows/s is rows over the query's wall time (start to termination,
including Spark's own per-batch work: file listing, planning, checkpoint logs). After each run
the result is read back and checked (paimon tables with bench_core's W1 check): a wrong read
fails the bench.

    .venv/bin/python bench/bench_spark.py                 # 10 x 200k rows, 3 runs
    .venv/bin/python bench/bench_spark.py --quick         # smoke run: 2 x 20k, 1 run
    .venv/bin/python bench/bench_spark.py --input-partitions 4   # 4 Spark partitions per batch
"""
from __future__ import annotations

import argparse
import json
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from functools import partial
from typing import Callable

import pyarrow.parquet as pq

from bench_core import SCHEMA, _fmt, check_read, host, make_batch, paimon_streaming_table, report, w1_parser


FLOOR = "spark-parquet"
SYSTEMS = ["paimon-sink-dv", "paimon-sink", FLOOR]
NUMBERS = ["rows_per_s", "e2e_rows_per_s", "first_batch_s", "median_batch_s", "last_batch_s", "query_s"]
TABLE = "db.w1"

BatchFn = Callable[..., None]


def user_session(app: str):
    """local[2] as `SparkSession.builder` gives a user (the JVM's defaults: not the tests'
    fast-start driver, whose C1-only JIT slows a long query), plus what the README suggests (the
    worker daemon) and `ps.register`."""
    from pyspark.sql import SparkSession
    import paimon_streaming as ps
    from paimon_streaming.sinks.ingest_command import WORKER_DAEMON
    os.environ.setdefault("PYSPARK_PYTHON", sys.executable)
    os.environ.pop("PYSPARK_SUBMIT_ARGS", None)
    spark = (SparkSession.builder.master("local[2]").appName(app)
             .config("spark.ui.enabled", "false").config("spark.ui.showConsoleProgress", "false")
             .config("spark.python.daemon.module", WORKER_DAEMON).getOrCreate())
    spark.sparkContext.setLogLevel("ERROR")
    ps.register(spark)
    return spark


# ---- staging: the W1 batches as the stream's input ---------------------------------------------
def stage_batches(directory: str, seed: int, rows: int, batches: int, files_per_batch: int = 1) -> None:
    """`files_per_batch` Parquet files (consecutive slices) per W1 batch; increasing mtimes fix the
    order the file source reads them in, so each trigger of that many files is one batch."""
    os.makedirs(directory)
    for i in range(batches):
        batch = make_batch(seed, rows, i)
        bounds = [rows * j // files_per_batch for j in range(files_per_batch + 1)]
        for j in range(files_per_batch):
            path = os.path.join(directory, f"batch-{i:05d}-{j:03d}.parquet")
            pq.write_table(batch.slice(bounds[j], bounds[j + 1] - bounds[j]), path)
            mtime = 1_700_000_000 + i * files_per_batch + j
            os.utime(path, (mtime, mtime))


# ---- child: one system, one run ---------------------------------------------------------------
def open_system(name: str, workdir: str) -> tuple[BatchFn, Callable, bool]:
    """(foreachBatch function, read-back, upsert semantics) of one system."""
    if name == FLOOR:
        out = os.path.join(workdir, "parquet")

        def write_parquet(df, batch_id: int) -> None:
            df.write.mode("append").parquet(out)

        return write_parquet, partial(pq.read_table, out), False
    from paimon_streaming.sinks import paimon_sink
    # the W1 table exactly as bench_core creates it (id NOT NULL primary key, 4 buckets)
    _, read, _ = paimon_streaming_table(workdir, dv=name.endswith("-dv"))
    return paimon_sink(TABLE, warehouse=workdir), read, True


def run_child(name: str, staging: str, seed: int, rows: int, batches: int, workdir: str,
              input_partitions: int = 1) -> dict:
    """Run the streaming query over the staged batches in this (fresh) process; check the result."""
    from pyspark.sql.pandas.types import from_arrow_schema
    spark = user_session("bench-spark")
    # an open cost above maxPartitionBytes keeps every (small) staged file in a Spark partition of its own
    spark.conf.set("spark.sql.files.openCostInBytes", str(1 << 40))
    write, read, upsert = open_system(name, workdir)
    latencies: list[float] = []
    partitions: list[int] = []

    def timed(df, batch_id: int) -> None:
        partitions.append(df.rdd.getNumPartitions())  # outside the timing: planning only
        start = time.perf_counter()
        write(df, batch_id)
        latencies.append(time.perf_counter() - start)

    source = (spark.readStream.schema(from_arrow_schema(SCHEMA)).option("maxFilesPerTrigger", input_partitions)
              .parquet(staging))
    start = time.perf_counter()
    query = (source.writeStream.foreachBatch(timed).trigger(availableNow=True)
             .option("checkpointLocation", os.path.join(workdir, "checkpoint")).start())
    query.awaitTermination()
    query_s = time.perf_counter() - start
    if query.exception() is not None:
        raise SystemExit(f"{name}: the query failed: {query.exception()}")
    batch_rows = [p["numInputRows"] for p in query.recentProgress if p["numInputRows"]]
    if batch_rows != [rows] * batches or len(latencies) != batches or set(partitions) != {input_partitions}:
        raise SystemExit(f"{name}: micro-batches are not the W1 batches: rows per batch {batch_rows}, "
                         f"{len(latencies)} foreachBatch calls, Spark partitions per batch {partitions}, "
                         f"expected {batches} x {rows} in {input_partitions} partition(s)")
    problem = check_read(read(), seed, rows, batches, upsert)
    if problem:
        raise SystemExit(f"read check FAILED for {name}: {problem}")
    total = rows * batches
    return {
        "batch_s": latencies,
        "rows_per_s": total / sum(latencies),
        "e2e_rows_per_s": total / query_s,
        "first_batch_s": latencies[0],
        "median_batch_s": statistics.median(latencies),
        "last_batch_s": latencies[-1],
        "query_s": query_s,
        "input_partitions": input_partitions,
        "read_check": "ok",
        "spark": spark.version,
    }


# ---- parent: runs, medians, ratios ------------------------------------------------------------
def spawn(name: str, root: str, args: argparse.Namespace) -> dict:
    """Run one system in a fresh interpreter (own Spark JVM) and return its measurements."""
    workdir = tempfile.mkdtemp(prefix=f"{name}-", dir=root)
    staging = os.path.join(root, "staging")
    try:
        cmd = [sys.executable, os.path.abspath(__file__), "--child", name, "--staging", staging,
               "--seed", str(args.seed), "--rows", str(args.rows), "--batches", str(args.batches),
               "--workdir", workdir, "--input-partitions", str(args.input_partitions)]
        proc = subprocess.run(cmd, stdout=subprocess.PIPE, text=True)
        if proc.returncode != 0:
            raise SystemExit(f"{name} failed (exit {proc.returncode}); its stderr is above")
        return json.loads(proc.stdout.strip().splitlines()[-1])
    finally:
        shutil.rmtree(workdir, ignore_errors=True)


def summarize(runs: dict[str, list[dict]], args: argparse.Namespace) -> list[dict]:
    """One JSON-ready record per system: medians, same-run ratios to the floor, raw per-run numbers."""
    records = []
    for name, per_run in runs.items():
        vs = {}
        if name != FLOOR and FLOOR in runs:
            pairs = list(zip(per_run, runs[FLOOR]))
            vs[FLOOR] = {k: statistics.median(a[k] / b[k] for a, b in pairs)
                         for k in ("rows_per_s", "e2e_rows_per_s")}
        records.append({
            "bench": "spark", "workload": "W1", "system": name, "spark": per_run[0]["spark"],
            "rows_per_batch": args.rows, "batches": args.batches, "input_partitions": args.input_partitions,
            "runs": len(per_run), "seed": args.seed,
            "median": {k: statistics.median(r[k] for r in per_run) for k in NUMBERS},
            "read_check": "; ".join(sorted({r["read_check"] for r in per_run})),
            "vs": vs, "target_vs_floor": 0.5 if vs else None,
            "per_run": per_run,
            "host": host(),
        })
    return records


def print_table(records: list[dict]) -> None:
    """Medians per system and the same-run ratio against Spark's df.write.parquet (target >= 0.5)."""
    r0 = records[0]
    print(f"\nW1 through Spark local[2] foreachBatch, {r0['batches']} x {r0['rows_per_batch']:,} rows in "
          f"{r0['input_partitions']} Spark partition(s) per batch, median of {r0['runs']} run(s) "
          f"(load average {os.getloadavg()[0]:.1f})\n")
    print("| system | rows/s (in foreachBatch) | end-to-end rows/s | first s | median s | last s "
          f"| x {FLOOR} rows/s | x {FLOOR} e2e | read check |")
    print("|---|---:|---:|---:|---:|---:|---:|---:|---|")
    for r in records:
        m, vs = r["median"], r["vs"].get(FLOOR, {})
        print(f"| {r['system']} | {m['rows_per_s']:,.0f} | {m['e2e_rows_per_s']:,.0f} | {m['first_batch_s']:.2f} "
              f"| {m['median_batch_s']:.2f} | {m['last_batch_s']:.2f} | {_fmt(vs.get('rows_per_s'), '{:.2f}')} "
              f"| {_fmt(vs.get('e2e_rows_per_s'), '{:.2f}')} | {r['read_check']} |")


def parse_args(argv: list[str] | None = None) -> argparse.Namespace:
    p = w1_parser(__doc__)
    p.add_argument("--runs", type=int, default=3, help="runs; medians are reported (default 3)")
    p.add_argument("--systems", default=",".join(SYSTEMS), help=f"comma-separated subset of {SYSTEMS}")
    p.add_argument("--input-partitions", type=int, default=1,
                   help="Spark partitions per micro-batch (files staged per batch; default 1)")
    p.add_argument("--quick", action="store_true", help="smoke run: 2 batches of 20000 rows, 1 run")
    p.add_argument("--workdir", default=None, help="where staging and tables go (default: system temp dir)")
    p.add_argument("--child", default=None, help=argparse.SUPPRESS)
    p.add_argument("--staging", default=None, help=argparse.SUPPRESS)
    args = p.parse_args(argv)
    if args.quick:
        args.rows, args.batches, args.runs = 20_000, 2, 1
    if args.rows < 5 or args.batches < 1 or args.runs < 1 or not 1 <= args.input_partitions <= args.rows:
        p.error("need --rows >= 5, --batches >= 1, --runs >= 1, 1 <= --input-partitions <= --rows")
    args.systems = [n.strip() for n in args.systems.split(",") if n.strip()]
    unknown = sorted(set(args.systems) - set(SYSTEMS))
    if unknown:
        p.error(f"unknown system(s) {unknown}; choose from {SYSTEMS}")
    return args


def main(argv: list[str] | None = None) -> None:
    args = parse_args(argv)
    if args.child:
        print(json.dumps(run_child(args.child, args.staging, args.seed, args.rows, args.batches, args.workdir,
                                   args.input_partitions)))
        return
    root = tempfile.mkdtemp(prefix="bench-spark-", dir=args.workdir)
    try:
        stage_batches(os.path.join(root, "staging"), args.seed, args.rows, args.batches, args.input_partitions)
        runs: dict[str, list[dict]] = {n: [] for n in args.systems}
        for run in range(args.runs):
            shift = run % len(args.systems)
            for name in args.systems[shift:] + args.systems[:shift]:
                started = time.perf_counter()
                runs[name].append(spawn(name, root, args))
                print(f"run {run + 1}/{args.runs} {name}: {runs[name][-1]['rows_per_s']:,.0f} rows/s "
                      f"({time.perf_counter() - started:.0f} s)", file=sys.stderr, flush=True)
    finally:
        shutil.rmtree(root, ignore_errors=True)
    report(summarize(runs, args), args.json_out, print_table)


if __name__ == "__main__":
    main()
