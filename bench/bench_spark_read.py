"""Reading a table through Spark: `spark.read.format("paimon")` against `spark.read.parquet`.

The W1 table of bench_core (10 batches of 200,000 upserts, deletion vectors, 4 buckets: 1.64M
live rows in about 50 files) and the same batches as raw Parquet files (2M rows: no upserts, 10
files) are written once; then one local[2] session as a user starts it (the JVM's defaults, not
the tests' fast-start settings; the README's worker daemon; `ps.register`) runs each query on
each system in turn, `--repeats` times after a warm-up, and reports medians and same-run ratios
to Spark's own Parquet source:

- `scan`: every row and column into Spark's `noop` sink;
- `aggregate`: `count(*)`, `sum(amount)`, `max(name)`;
- `ids < 5%`: the same aggregate over the 5% smallest ids (a range the files' key statistics prune);
- `no match`: a string no file holds (`name = 'nobody'`: every file pruned by its statistics).

Systems: `raw-parquet` (Spark's vectorized Parquet source), `paimon` (as `ps.register` leaves the
session: filter pushdown on), `paimon-no-pushdown` (`spark.sql.python.filterPushdown.enabled`
false: Spark filters after a full read). Every answer is checked against the core's own read of
the table (and the raw files' known counts): a wrong answer fails the bench.

    .venv/bin/python bench/bench_spark_read.py [--repeats 7] [--batches 10] [--rows 200000]
"""
from __future__ import annotations

import argparse
import os
import shutil
import statistics
import tempfile
import time
from typing import Callable

import pyarrow.compute as pc

from bench_core import (_fmt, distinct_ids, host, make_batch, paimon_streaming_table, raw_parquet, report,
                        w1_parser)
from bench_spark import user_session

FLOOR = "raw-parquet"
SYSTEMS = [FLOOR, "paimon", "paimon-no-pushdown"]
PUSHDOWN = "spark.sql.python.filterPushdown.enabled"
AGGREGATE = ("count(*) AS n", "sum(amount) AS amount", "max(name) AS name")


def queries(few_ids: int) -> dict[str, Callable]:
    """Query name -> function of a DataFrame returning what to check (None for the scan)."""
    def aggregate(df):
        row = df.selectExpr(*AGGREGATE).collect()[0]
        return row.n, row.amount, row.name
    return {
        "scan": lambda df: df.write.format("noop").mode("overwrite").save(),
        "aggregate": aggregate,
        "ids < 5%": lambda df: aggregate(df.where(f"id < {few_ids}")),
        "no match": lambda df: df.where("name = 'nobody'").count(),
    }


def expected_answers(core_read: Callable, few_ids: int) -> dict[str, object]:
    """What the paimon reads must answer, from the core's read of the table."""
    table = core_read()
    few = table.filter(pc.less(table["id"], few_ids))
    def agg(t):
        return t.num_rows, pc.sum(t["amount"]).as_py(), pc.max(t["name"]).as_py()
    return {"scan": None, "aggregate": agg(table), "ids < 5%": agg(few), "no match": 0}


def same(got, want) -> bool:
    if isinstance(want, tuple):
        return got[0] == want[0] and abs(got[1] - want[1]) <= 1e-9 * max(1.0, abs(want[1])) and got[2] == want[2]
    return got == want


def measure(args: argparse.Namespace, root: str) -> dict[str, dict[str, list[float]]]:
    raw_dir, ours_dir = os.path.join(root, "raw"), os.path.join(root, "paimon")
    os.makedirs(raw_dir)
    write_raw, _, _ = raw_parquet(raw_dir)
    write_ours, read_ours, _ = paimon_streaming_table(ours_dir, dv=True)
    for i in range(args.batches):
        batch = make_batch(args.seed, args.rows, i)
        write_raw(batch)
        write_ours(batch)
    few_ids = distinct_ids(args.rows, args.batches) // 20
    want = expected_answers(read_ours, few_ids)
    raw_rows = args.rows * args.batches

    spark = user_session("bench-spark-read")
    table_path = os.path.join(ours_dir, "db.db", "w1")
    loaders = {FLOOR: lambda: spark.read.parquet(raw_dir),
               "paimon": lambda: spark.read.format("paimon").load(table_path),
               "paimon-no-pushdown": lambda: spark.read.format("paimon").load(table_path)}
    systems = [s for s in SYSTEMS if s in args.systems.split(",")]
    times = {s: {q: [] for q in queries(few_ids)} for s in systems}

    def run(system: str, name: str, query: Callable) -> float:
        spark.conf.set(PUSHDOWN, "false" if system == "paimon-no-pushdown" else "true")
        start = time.perf_counter()
        got = query(loaders[system]())
        elapsed = time.perf_counter() - start
        if system == FLOOR:  # every written row, updates included: only the totals are known
            ok = {"aggregate": lambda: got[0] == raw_rows, "no match": lambda: got == 0}.get(name, lambda: True)()
        else:
            ok = same(got, want[name])
        if not ok:
            raise SystemExit(f"{system} answered {name!r} wrong: {got} (expected {want[name]})")
        return elapsed

    for repeat in range(args.repeats + 1):  # the first round warms up
        for name, query in queries(few_ids).items():
            for system in systems:
                elapsed = run(system, name, query)
                if repeat:
                    times[system][name].append(elapsed)
    return times


def summarize(times: dict[str, dict[str, list[float]]], args: argparse.Namespace) -> list[dict]:
    records = []
    for system, per_query in times.items():
        median = {q: statistics.median(v) for q, v in per_query.items()}
        vs = {}
        if system != FLOOR and FLOOR in times:
            vs = {q: statistics.median(a / b for a, b in zip(v, times[FLOOR][q])) for q, v in per_query.items()}
        records.append({
            "bench": "spark-read", "workload": "W2 through Spark", "system": system,
            "rows_per_batch": args.rows, "batches": args.batches, "repeats": args.repeats, "seed": args.seed,
            "median_s": median, "vs_raw_parquet": vs, "per_repeat_s": per_query,
            "host": host(),
        })
    return records


def print_table(records: list[dict]) -> None:
    """Seconds per query and system (medians), and the ratio to raw Parquet's time (lower is faster)."""
    r0 = records[0]
    print(f"\nW1's table read through Spark local[2], {r0['batches']} x {r0['rows_per_batch']:,} rows written, "
          f"median of {r0['repeats']} (load average {os.getloadavg()[0]:.1f})\n")
    names = list(r0["median_s"])
    print("| system | " + " | ".join(f"{q} s" for q in names) + " | " +
          " | ".join(f"{q} / raw" for q in names) + " |")
    print("|---|" + "---:|" * (2 * len(names)))
    for r in records:
        seconds = " | ".join(f"{r['median_s'][q]:.3f}" for q in names)
        ratios = " | ".join(_fmt(r["vs_raw_parquet"].get(q), "{:.2f}") for q in names)
        print(f"| {r['system']} | {seconds} | {ratios} |")


def parse_args(argv: list[str] | None = None) -> argparse.Namespace:
    p = w1_parser(__doc__)
    p.add_argument("--repeats", type=int, default=7, help="timed rounds after a warm-up; medians (default 7)")
    p.add_argument("--systems", default=",".join(SYSTEMS), help=f"comma-separated subset of {SYSTEMS}")
    p.add_argument("--quick", action="store_true", help="smoke run: 2 batches of 20000 rows, 1 repeat")
    args = p.parse_args(argv)
    if args.quick:
        args.rows, args.batches, args.repeats = 20_000, 2, 1
    return args


def main(argv: list[str] | None = None) -> None:
    args = parse_args(argv)
    root = tempfile.mkdtemp(prefix="bench-spark-read-")
    try:
        times = measure(args, root)
    finally:
        shutil.rmtree(root, ignore_errors=True)
    report(summarize(times, args), args.json_out, print_table)


if __name__ == "__main__":
    main()
