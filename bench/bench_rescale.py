"""Rescaling buckets: `Table.rescale(bucket=8)` of W1's table (4 buckets, deletion vectors).

The table is built from bench_core's W1 batches (10 x 200,000 rows, 80% new ids, 20% updates:
1.64M live rows), then rescaled to 8 buckets, timed, in a fresh process per run. The anchor,
measured in the same process right after, is the least a rewrite of those rows costs with raw
pyarrow: reading the same live rows back (our read) and writing them as 8 Parquet files, hashed
by `id` and sorted, with Paimon's default codec (zstd). Prints medians over runs and the ratio.

    .venv/bin/python bench/bench_rescale.py --runs 3
    .venv/bin/python bench/bench_rescale.py --batches 2 --rows 20000 --runs 1   # smoke run
"""
from __future__ import annotations

import argparse
import json
import os
import resource
import statistics
import subprocess
import sys
import tempfile
import time

import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.parquet as pq

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from bench_core import SCHEMA, make_batch  # noqa: E402

import paimon_streaming as ps  # noqa: E402


def child(rows: int, batches: int, seed: int, workdir: str) -> dict:
    table = ps.Catalog(workdir).create_table("bench.w1", SCHEMA, primary_keys=["id"],
                                             options={"bucket": "4", "deletion-vectors.enabled": "true"})
    for i in range(batches):
        table.write_arrow(make_batch(seed, rows, i))
    live = table.to_arrow().num_rows
    start = time.perf_counter()
    table.rescale(bucket=8)
    ours = time.perf_counter() - start
    after = table.to_arrow()
    assert after.num_rows == live, (after.num_rows, live)
    peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024

    start = time.perf_counter()
    rows_back = table.to_arrow()
    bucket = pc.bit_wise_and(pc.abs(rows_back.column("id")), 7).to_numpy()
    out = os.path.join(workdir, "raw")
    os.makedirs(out)
    for b in range(8):
        part = rows_back.filter(pa.array(bucket == b)).sort_by("id")
        pq.write_table(part, os.path.join(out, f"part-{b}.parquet"), compression="zstd")
    anchor = time.perf_counter() - start
    return {"live_rows": live, "rescale_s": ours, "anchor_s": anchor, "peak_mb": peak}


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--rows", type=int, default=200_000)
    p.add_argument("--batches", type=int, default=10)
    p.add_argument("--runs", type=int, default=3)
    p.add_argument("--seed", type=int, default=20240601)
    p.add_argument("--child", action="store_true", help=argparse.SUPPRESS)
    p.add_argument("--workdir", help=argparse.SUPPRESS)
    args = p.parse_args()
    if args.child:
        print(json.dumps(child(args.rows, args.batches, args.seed, args.workdir)))
        return
    with open("/proc/loadavg") as f:
        load = f.read().split()[0]
    results = []
    for _ in range(args.runs):
        with tempfile.TemporaryDirectory() as workdir:
            out = subprocess.run([sys.executable, __file__, "--child", "--workdir", workdir, "--rows", str(args.rows),
                                  "--batches", str(args.batches), "--seed", str(args.seed)],
                                 capture_output=True, text=True, check=True)
            results.append(json.loads(out.stdout.strip().splitlines()[-1]))

    def median(key: str) -> float:
        return statistics.median(r[key] for r in results)
    ratio = statistics.median(r["rescale_s"] / r["anchor_s"] for r in results)
    print(f"{results[0]['live_rows']:,} live rows, 4 -> 8 buckets, median of {args.runs} runs, load {load}")
    print(f"Table.rescale(bucket=8)                      {median('rescale_s'):7.2f} s   "
          f"{results[0]['live_rows'] / median('rescale_s'):12,.0f} rows/s   peak {median('peak_mb'):,.0f} MB")
    per_run = ", ".join(f"{r['rescale_s'] / r['anchor_s']:.2f}" for r in results)
    print(f"anchor: read + pyarrow write of 8 sorted files {median('anchor_s'):7.2f} s   "
          f"ratio {ratio:.2f}x (per run {per_run})")
    print(json.dumps({"runs": results, "ratio": ratio, "load": float(load)}))


if __name__ == "__main__":
    main()
