"""W5: a partitioned table of many small files, the shape a streaming writer leaves behind.

A log-style table `(id BIGINT, p INT, payload STRING, amount DOUBLE)` partitioned by `p` gets
`--commits` commits of `--rows` rows spread over `--partitions` partitions: each commit adds one
small file to every partition (default 100 x 100 = 10,000 files of 200 rows). Then it is read
whole, and one partition alone. Per run and system, in fresh processes: the write (one commit a
batch, rows/s), then the first read of a fresh process and the median of 5 reads after it, and the
median of 5 reads of one partition (a filter that prunes the other partitions).

Systems, in the same run:
- `raw-parquet`: `pyarrow.parquet.write_to_dataset` of each batch with hive partitioning (one file
  per partition per batch, as ours), read with `pyarrow.parquet.read_table` on the directory
  (`filters=` for the one partition): the floor, no table format;
- `paimon-streaming`: an append table (`Table.write_arrow`, `to_arrow`), Paimon's defaults.

    .venv/bin/python bench/bench_small_files.py [--commits 100] [--partitions 100] [--rows 20000] [--runs 3]

Prints one JSON line per system (medians, same-run ratios to raw Parquet, per-run numbers) and a
table. Ratios: ours / raw, lower is better for read times, higher for rows/s.
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

import numpy as np
import pyarrow as pa

SCHEMA = pa.schema([("id", pa.int64()), ("p", pa.int32()), ("payload", pa.string()), ("amount", pa.float64())])
READS = 5
SYSTEMS = ("raw-parquet", "paimon-streaming")


def make_batch(index: int, rows: int, partitions: int) -> pa.Table:
    rng = np.random.default_rng(index)
    ids = np.arange(index * rows, (index + 1) * rows, dtype=np.int64)
    return pa.table({"id": ids, "p": (ids % partitions).astype(np.int32),
                     "payload": pa.array(np.char.add("event-", rng.integers(0, 10_000, rows).astype(str))),
                     "amount": rng.random(rows)}, schema=SCHEMA)


def raw_parquet(workdir: str):
    import pyarrow.parquet as pq

    def write(batch: pa.Table, index: int) -> None:
        pq.write_to_dataset(batch, workdir, partition_cols=["p"], basename_template=f"c{index}-{{i}}.parquet")

    def read(partition: int | None = None) -> pa.Table:
        return pq.read_table(workdir, filters=None if partition is None else [("p", "=", partition)])
    return write, read


def paimon_streaming(workdir: str):
    import paimon_streaming as ps

    opened: list = []  # the table, created by the first write and kept open, as a streaming writer does

    def write(batch: pa.Table, index: int) -> None:
        if not opened:
            opened.append(ps.Catalog(workdir).create_table("db.events", SCHEMA, partition_keys=["p"]))
        opened[0].write_arrow(batch)

    def read(partition: int | None = None) -> pa.Table:
        fresh = ps.Catalog(workdir).get_table("db.events")
        return fresh.to_arrow(filter=None if partition is None else [("p", "=", partition)])
    return write, read


def median_seconds(fn) -> float:
    times = []
    for _ in range(READS):
        start = time.perf_counter()
        fn()
        times.append(time.perf_counter() - start)
    return statistics.median(times)


def child(args: argparse.Namespace) -> None:
    """One system, one phase, in this fresh process: `write` builds the table, `read` reads it."""
    write, read = {"raw-parquet": raw_parquet, "paimon-streaming": paimon_streaming}[args.child](args.workdir)
    if args.phase == "write":
        batches = [make_batch(i, args.rows, args.partitions) for i in range(args.commits)]
        start = time.perf_counter()
        for i, batch in enumerate(batches):
            write(batch, i)
        print(json.dumps({"rows_per_s": args.commits * args.rows / (time.perf_counter() - start)}))
        return
    start = time.perf_counter()
    out = read()
    first = time.perf_counter() - start
    if out.num_rows != args.commits * args.rows:
        raise SystemExit(f"{args.child} read {out.num_rows} rows, expected {args.commits * args.rows}")
    one = read(7)
    if one.num_rows != args.commits * args.rows // args.partitions:
        raise SystemExit(f"{args.child} read {one.num_rows} rows of partition 7")
    print(json.dumps({"first_read_s": first, "read_s": median_seconds(read),
                      "partition_read_s": median_seconds(lambda: read(7))}))


def spawn(system: str, phase: str, workdir: str, args: argparse.Namespace) -> dict:
    cmd = [sys.executable, os.path.abspath(__file__), "--child", system, "--phase", phase, "--workdir", workdir,
           "--commits", str(args.commits), "--partitions", str(args.partitions), "--rows", str(args.rows)]
    proc = subprocess.run(cmd, stdout=subprocess.PIPE, text=True)
    if proc.returncode != 0:
        raise SystemExit(f"{system} {phase} failed (exit {proc.returncode}); its stderr is above")
    return json.loads(proc.stdout.strip().splitlines()[-1])


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--commits", type=int, default=100)
    parser.add_argument("--partitions", type=int, default=100)
    parser.add_argument("--rows", type=int, default=20_000, help="rows per commit")
    parser.add_argument("--runs", type=int, default=3)
    parser.add_argument("--child", choices=SYSTEMS, help=argparse.SUPPRESS)
    parser.add_argument("--phase", choices=("write", "read"), help=argparse.SUPPRESS)
    parser.add_argument("--workdir", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.child:
        child(args)
        return
    runs: dict[str, list[dict]] = {s: [] for s in SYSTEMS}
    for run in range(args.runs):
        for system in SYSTEMS:  # interleaved: run 1 of each, then run 2 of each, ...
            workdir = tempfile.mkdtemp(prefix=f"bench-w5-{system}-")
            try:
                result = spawn(system, "write", workdir, args)
                result.update(spawn(system, "read", workdir, args))
            finally:
                shutil.rmtree(workdir, ignore_errors=True)
            runs[system].append(result)
            print(f"run {run + 1} {system}: " + ", ".join(f"{k}={v:.3f}" for k, v in result.items()),
                  file=sys.stderr, flush=True)
    keys = ["rows_per_s", "first_read_s", "read_s", "partition_read_s"]
    raw = runs["raw-parquet"]
    for system, per_run in runs.items():
        record = {"bench": "small_files", "workload": "W5", "system": system, "commits": args.commits,
                  "partitions": args.partitions, "rows_per_commit": args.rows, "files": args.commits * args.partitions,
                  "median": {k: statistics.median(r[k] for r in per_run) for k in keys},
                  "vs_raw_parquet": {k: statistics.median(a[k] / b[k] for a, b in zip(per_run, raw)) for k in keys},
                  "per_run": per_run, "load_average_1m": round(os.getloadavg()[0], 2)}
        print(json.dumps(record))
    print(f"\n{'system':<18}{'rows/s':>12}{'first read s':>14}{'read s':>9}{'1 partition s':>15}")
    for system, per_run in runs.items():
        med = {k: statistics.median(r[k] for r in per_run) for k in keys}
        ratio = {k: statistics.median(a[k] / b[k] for a, b in zip(per_run, raw)) for k in keys}
        print(f"{system:<18}{med['rows_per_s']:>12,.0f}{med['first_read_s']:>14.3f}{med['read_s']:>9.3f}"
              f"{med['partition_read_s']:>15.4f}")
        if system != "raw-parquet":
            print(f"{'  / raw Parquet':<18}{ratio['rows_per_s']:>11.2f}x{ratio['first_read_s']:>13.2f}x"
                  f"{ratio['read_s']:>8.2f}x{ratio['partition_read_s']:>14.2f}x")


if __name__ == "__main__":
    main()
