"""Aggregation over collections: batches of upserts into an `aggregation` table that keeps,
per key, a distinct `collect` of tags, a `merge_map` of attributes and a keyed `nested_update`
of order lines (README "Aggregating collections"), with deletion vectors and merge-on-read.

Each run is a fresh process: N batches of R rows over K keys are written with `write_arrow`;
the anchor, measured in the same process, is raw pyarrow writing the same batches as Parquet
files (zstd, Paimon's default codec). Prints per system the median batch time, rows/s and
the ratio to the anchor, medians over runs.

    .venv/bin/python bench/bench_aggregation.py --runs 3
    .venv/bin/python bench/bench_aggregation.py --batches 2 --rows 10000 --runs 1   # smoke run
"""
from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))
import paimon_streaming as ps  # noqa: E402

ITEM = pa.struct([("sku", pa.string()), ("qty", pa.int32())])
SCHEMA = pa.schema([pa.field("id", pa.int64(), False), ("tags", pa.list_(pa.string())),
                    ("attrs", pa.map_(pa.string(), pa.string())), ("lines", pa.list_(ITEM))])
OPTIONS = {"bucket": "2", "merge-engine": "aggregation",
           "fields.tags.aggregate-function": "collect", "fields.tags.distinct": "true",
           "fields.attrs.aggregate-function": "merge_map",
           "fields.lines.aggregate-function": "nested_update", "fields.lines.nested-key": "sku"}
SYSTEMS = {"paimon-streaming-dv": {"deletion-vectors.enabled": "true"}, "paimon-streaming-mor": {}}


def make_batch(rng: np.random.Generator, rows: int, keys: int) -> pa.Table:
    """Two tags, two attributes and two order lines a row, drawn from small vocabularies."""
    offsets = pa.array(np.arange(0, 2 * rows + 1, 2, dtype=np.int32))
    tags = pa.ListArray.from_arrays(offsets, pa.array(rng.choice(["a", "b", "c", "d", "e"], 2 * rows)))
    attrs = pa.MapArray.from_arrays(offsets, pa.array(rng.choice(["k1", "k2", "k3"], 2 * rows)),
                                    pa.array(rng.choice(["x", "y"], 2 * rows)))
    lines = pa.ListArray.from_arrays(offsets, pa.StructArray.from_arrays(
        [pa.array(rng.choice(["s1", "s2", "s3", "s4"], 2 * rows)),
         pa.array(rng.integers(0, 9, 2 * rows).astype(np.int32))], fields=list(ITEM)))
    return pa.Table.from_arrays([pa.array(rng.integers(0, keys, rows)), tags, attrs, lines], schema=SCHEMA)


def child(system: str, rows: int, batches: int, keys: int, seed: int, workdir: str) -> dict:
    rng = np.random.default_rng(seed)
    data = [make_batch(rng, rows, keys) for _ in range(batches)]
    table = ps.Catalog(workdir).create_table("bench.agg", SCHEMA, primary_keys=["id"],
                                             options={**OPTIONS, **SYSTEMS[system]})
    ours, raw = [], []
    for i, batch in enumerate(data):
        start = time.perf_counter()
        table.write_arrow(batch)
        ours.append(time.perf_counter() - start)
        start = time.perf_counter()
        pq.write_table(batch, os.path.join(workdir, f"raw-{i}.parquet"), compression="zstd")
        raw.append(time.perf_counter() - start)
    start = time.perf_counter()
    live = table.to_arrow().num_rows
    read = time.perf_counter() - start
    return {"batch_s": statistics.median(ours), "raw_batch_s": statistics.median(raw), "read_s": read,
            "live_rows": live}


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--runs", type=int, default=3)
    p.add_argument("--batches", type=int, default=6)
    p.add_argument("--rows", type=int, default=100_000)
    p.add_argument("--keys", type=int, default=50_000)
    p.add_argument("--systems", default=",".join(SYSTEMS))
    p.add_argument("--child", help=argparse.SUPPRESS)
    args = p.parse_args()
    if args.child:
        with tempfile.TemporaryDirectory() as workdir:
            print(json.dumps(child(args.child, args.rows, args.batches, args.keys, 20261130, workdir)))
        return
    print(f"load average before: {os.getloadavg()[0]:.1f}")
    for system in args.systems.split(","):
        results = []
        for _ in range(args.runs):
            out = subprocess.run([sys.executable, __file__, "--child", system, "--rows", str(args.rows),
                                  "--batches", str(args.batches), "--keys", str(args.keys)],
                                 check=True, capture_output=True, text=True).stdout
            results.append(json.loads(out.strip().splitlines()[-1]))
        batch = statistics.median(r["batch_s"] for r in results)
        raw = statistics.median(r["raw_batch_s"] for r in results)
        print(f"{system}: batch {batch:.3f} s ({args.rows / batch:,.0f} rows/s), raw pyarrow Parquet "
              f"{raw:.3f} s ({args.rows / raw:,.0f} rows/s): {raw / batch:.2f}x raw's rows/s; "
              f"read {statistics.median(r['read_s'] for r in results):.3f} s, {results[0]['live_rows']:,} keys")
    print(f"load average after: {os.getloadavg()[0]:.1f}")


if __name__ == "__main__":
    main()
