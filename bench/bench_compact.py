"""Full compaction of one big bucket: time and peak memory, slice by slice against one piece.

Builds a W1 table (bench_core's upsert stream, 200,000 rows per batch) with deletion vectors
in one bucket, then runs `Table.compact(full=True)` on copies of it, each in a fresh process
so peak RSS (ru_maxrss) is the compaction's own: the writer's slice-by-slice merge (the
product) and, for comparison, the same merge of the whole bucket at once (the slicing
switched off in this benchmark's process only). Reports medians over runs, one JSON line per
mode plus a table.

    .venv/bin/python bench/bench_compact.py [--batches 40] [--runs 3]
"""
from __future__ import annotations

import argparse
import json
import os
import resource
import shutil
import statistics
import subprocess
import sys
import tempfile
import time

import paimon_streaming as ps

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import bench_core  # noqa: E402  (the W1 stream)

MODES = ("slices", "one-piece")
SEED = 20240601  # bench_core's default


def build(warehouse: str, batches: int) -> int:
    table = ps.Catalog(warehouse).create_table("db.w1", schema=bench_core.SCHEMA, primary_keys=["id"],
                                               options={"bucket": "1", "deletion-vectors.enabled": "true"})
    for i in range(batches):
        table.write_arrow(bench_core.make_batch(SEED, 200_000, i))
    return len(table.to_arrow(columns=["id"]))


def compact(warehouse: str, mode: str) -> dict:
    """One full compaction in this (fresh) process."""
    if mode == "one-piece":
        from paimon_streaming.lsm.dv_compaction import BucketCompactor
        BucketCompactor._compact_in_slices = lambda *args: None
    table = ps.Catalog(warehouse).get_table("db.w1")
    start = time.perf_counter()
    table.compact(full=True)
    seconds = time.perf_counter() - start
    return {"seconds": seconds, "peak_rss_mb": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--batches", type=int, default=40, help="W1 batches in the bucket (default 40)")
    parser.add_argument("--runs", type=int, default=3, help="compactions per mode; medians reported (default 3)")
    parser.add_argument("--child", nargs=2, metavar=("WAREHOUSE", "MODE"), help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.child:
        print(json.dumps(compact(*args.child)))
        return
    workdir = tempfile.mkdtemp(prefix="bench-compact-")
    try:
        source = os.path.join(workdir, "source")
        live_rows = build(source, args.batches)
        results: dict[str, list[dict]] = {m: [] for m in MODES}
        for _ in range(args.runs):
            for mode in MODES:  # alternated, so both modes see the machine's load alike
                copy = os.path.join(workdir, mode)
                shutil.copytree(source, copy)
                out = subprocess.run([sys.executable, __file__, "--child", copy, mode],
                                     check=True, capture_output=True, text=True).stdout
                results[mode].append(json.loads(out.strip().splitlines()[-1]))
                shutil.rmtree(copy)
    finally:
        shutil.rmtree(workdir, ignore_errors=True)
    print(f"full compaction of one bucket of {live_rows:,} live rows ({args.batches} W1 batches), "
          f"median of {args.runs} run(s), load average {os.getloadavg()[0]:.1f}")
    print(f"{'mode':<10} {'seconds':>8} {'peak MB':>8}")
    for mode in MODES:
        seconds = statistics.median(r["seconds"] for r in results[mode])
        peak = statistics.median(r["peak_rss_mb"] for r in results[mode])
        print(f"{mode:<10} {seconds:>8.2f} {peak:>8.0f}")
        print(json.dumps({"bench": "compact", "mode": mode, "batches": args.batches, "live_rows": live_rows,
                          "runs": args.runs, "seconds": seconds, "peak_rss_mb": peak}))


if __name__ == "__main__":
    main()
