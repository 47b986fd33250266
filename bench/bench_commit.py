"""W4 of shared BENCH.md: commit cost over a table's life.

1,000 small commits (1,000 rows each, upserts into a primary-key table with 4 buckets) to one
table; the cost of commit N must stay flat (manifest merging keeps the manifest list short).
Reports the latency of commits around 10, 100 and 1000 (median of the 5 commits ending there)
and their ratio, as one JSON line plus a table. Deletion vectors on (`--dv`) include the lookup
compaction in each commit.

    .venv/bin/python bench/bench_commit.py [--commits 1000] [--rows 1000] [--dv]
"""
from __future__ import annotations

import argparse
import json
import statistics
import tempfile
import time

import numpy as np
import pyarrow as pa

import paimon_streaming as ps

SCHEMA = pa.schema([pa.field("id", pa.int64(), False), ("v", pa.string()), ("amount", pa.float64())])


def batch(rng: np.random.Generator, index: int, rows: int) -> pa.Table:
    """Half new ids, half updates of earlier ones."""
    new = np.arange(index * rows, index * rows + rows // 2, dtype=np.int64)
    old = rng.integers(0, max(index * rows, 1), rows - len(new))
    ids = np.unique(np.concatenate([new, old]))
    return pa.table({"id": ids, "v": pa.array([f"v{index}"] * len(ids)), "amount": rng.random(len(ids))},
                    schema=SCHEMA)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--commits", type=int, default=1000)
    parser.add_argument("--rows", type=int, default=1000)
    parser.add_argument("--dv", action="store_true", help="deletion-vector table")
    args = parser.parse_args()
    options = {"bucket": "4"}
    if args.dv:
        options["deletion-vectors.enabled"] = "true"
    table = ps.Catalog(tempfile.mkdtemp(prefix="paimon-w4-")).create_table(
        "db.t", SCHEMA, primary_keys=["id"], options=options)
    rng = np.random.default_rng(7)
    latencies = []
    for i in range(args.commits):
        data = batch(rng, i, args.rows)
        start = time.perf_counter()
        table.write_arrow(data)
        latencies.append(time.perf_counter() - start)
    marks = [m for m in (10, 100, 1000) if m <= args.commits] or [args.commits]
    at = {m: statistics.median(latencies[max(0, m - 5):m]) for m in marks}
    result = {"workload": "W4", "dv": args.dv, "commits": args.commits, "rows_per_commit": args.rows,
              **{f"commit_{m}_ms": round(at[m] * 1000, 1) for m in marks},
              "last_over_10": round(at[marks[-1]] / at[marks[0]], 2),
              "snapshots": table.latest_snapshot().id}
    print(json.dumps(result))
    print(f"{'commit':>8} {'latency ms (median of 5)':>26}")
    for m in marks:
        print(f"{m:>8} {at[m] * 1000:>26.1f}")


if __name__ == "__main__":
    main()
