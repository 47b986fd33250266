"""W4 of shared BENCH.md: commit cost over a table's life.

1,000 small commits (1,000 rows each, upserts into a primary-key table with 4 buckets) to one
table; the cost of commit N must stay flat (manifest merging keeps the manifest list short).
Each batch is timed in two parts: writing (data files, plus the compaction universal picking
asks for; with `--dv` the lookup compaction) and committing (manifests, snapshot, conflict
checks). Reports both around commits 10, 100 and 1000 (median of the 5 ending there) and
their ratio, as one JSON line plus a table. A commit publishes one snapshot (APPEND) or two
(APPEND, then COMPACT when the write compacted), so the mean snapshots per commit of each
window is reported too: early commits compact less often, which alone makes them cheaper.

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
    writes, commits, snapshots = [], [], []
    for i in range(args.commits):
        data = batch(rng, i, args.rows)
        start = time.perf_counter()
        messages = table.write_messages(data)
        written = time.perf_counter()
        created = table.new_commit().commit(messages, "w4", i, best_effort_compaction=True)
        writes.append(written - start)
        commits.append(time.perf_counter() - written)
        snapshots.append(len(created))
    marks = [m for m in (10, 100, 1000) if m <= args.commits] or [args.commits]

    def at(series: list[float], m: int) -> float:
        return statistics.median(series[max(0, m - 5):m])
    result = {"workload": "W4", "dv": args.dv, "commits": args.commits, "rows_per_commit": args.rows,
              **{f"commit_{m}_ms": round(at(commits, m) * 1000, 1) for m in marks},
              **{f"write_{m}_ms": round(at(writes, m) * 1000, 1) for m in marks},
              **{f"snapshots_per_commit_{m}": statistics.mean(snapshots[max(0, m - 5):m]) for m in marks},
              "commit_last_over_10": round(at(commits, marks[-1]) / at(commits, marks[0]), 2),
              "write_last_over_10": round(at(writes, marks[-1]) / at(writes, marks[0]), 2),
              "snapshots": table.latest_snapshot().id}
    print(json.dumps(result))
    print(f"{'batch':>8} {'commit ms':>10} {'write ms':>10} {'snapshots':>10}   (median of the 5 ending there; "
          "mean snapshots per commit)")
    for m in marks:
        print(f"{m:>8} {at(commits, m) * 1000:>10.1f} {at(writes, m) * 1000:>10.1f} "
              f"{statistics.mean(snapshots[max(0, m - 5):m]):>10.1f}")


if __name__ == "__main__":
    main()
