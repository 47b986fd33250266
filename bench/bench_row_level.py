"""Row-level changes: `Table.delete(filter)` and `Table.update(filter, values)` against
deltalake's `DeltaTable.delete` / `update` (Rust, copy-on-write) on the same rows.

Each system builds its table from the W1 batches of bench_core (appended as they come; the
primary-key table keeps each id's latest row), then, timed: a delete of about 1% of the rows
spread over every file (`amount < 10`), an update of another 1% (`amount >= 990` set to
`amount + 1000`), and a full read after them. Every system runs in its own fresh process per
run; the figures are medians over runs, with same-run ratios against deltalake.

    .venv/bin/pip install -e ".[bench]"
    .venv/bin/python bench/bench_row_level.py --runs 3           # 5 x 200k rows
    .venv/bin/python bench/bench_row_level.py --batches 2 --rows 20000 --runs 1   # smoke run
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

import pyarrow.compute as pc

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from bench_core import SCHEMA, make_batch  # noqa: E402

DELETE_BELOW = 10.0      # amount < 10: about 1% of the rows
UPDATE_FROM = 990.0      # amount >= 990: about 1%, set to amount + 1000
SYSTEMS = {
    "paimon-streaming-pk-dv": (["id"], {"bucket": "4", "deletion-vectors.enabled": "true"}),
    "paimon-streaming-append-dv": (None, {"deletion-vectors.enabled": "true"}),
    "paimon-streaming-append": (None, {}),
    "deltalake": None,
}


def child(system: str, rows: int, batches: int, seed: int, workdir: str) -> dict:
    """Build the table, then time the delete, the update and a read; check what they left."""
    data = [make_batch(seed, rows, i) for i in range(batches)]
    if system == "deltalake":
        from deltalake import DeltaTable, write_deltalake
        path = os.path.join(workdir, "delta")
        for batch in data:
            write_deltalake(path, batch, mode="append")
        table = DeltaTable(path)
        delete = lambda: table.delete(f"amount < {DELETE_BELOW}")  # noqa: E731
        update = lambda: table.update(predicate=f"amount >= {UPDATE_FROM}",  # noqa: E731
                                      updates={"amount": "amount + 1000.0"})
        read = lambda: DeltaTable(path).to_pyarrow_table()  # noqa: E731
    else:
        import paimon_streaming as ps
        keys, options = SYSTEMS[system]
        table = ps.Catalog(workdir).create_table("bench.t", SCHEMA, primary_keys=keys, options=options)
        for batch in data:
            table.write_arrow(batch)
        delete = lambda: table.delete([("amount", "<", DELETE_BELOW)])  # noqa: E731
        update = lambda: table.update([("amount", ">=", UPDATE_FROM)],  # noqa: E731
                                      {"amount": pc.field("amount") + 1000.0})
        read = lambda: ps.Table.open(table.path).to_arrow()  # noqa: E731
    before = read()
    times = {}
    for name, op in (("delete", delete), ("update", update), ("read", read)):
        start = time.perf_counter()
        result = op()
        times[name] = time.perf_counter() - start
    after = result
    amounts = before.column("amount")
    deleted = pc.sum(pc.less(amounts, DELETE_BELOW)).as_py()
    updated = pc.sum(pc.greater_equal(amounts, UPDATE_FROM)).as_py()
    problems = []
    if after.num_rows != before.num_rows - deleted:
        problems.append(f"{after.num_rows} rows after the delete, expected {before.num_rows - deleted}")
    if pc.sum(pc.less(after.column("amount"), DELETE_BELOW)).as_py():
        problems.append("rows the delete matched are still there")
    if pc.sum(pc.greater_equal(after.column("amount"), UPDATE_FROM + 1000.0)).as_py() != updated:
        problems.append("the update did not change exactly the matching rows")
    return {"system": system, "rows": before.num_rows, "deleted": deleted, "updated": updated, **times,
            "problems": problems}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--rows", type=int, default=200_000)
    parser.add_argument("--batches", type=int, default=5)
    parser.add_argument("--runs", type=int, default=3)
    parser.add_argument("--seed", type=int, default=20240601)
    parser.add_argument("--systems", default=",".join(SYSTEMS))
    parser.add_argument("--child", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.child:
        with tempfile.TemporaryDirectory() as workdir:
            print(json.dumps(child(args.child, args.rows, args.batches, args.seed, workdir)))
        return
    systems = args.systems.split(",")
    results: dict[str, list[dict]] = {s: [] for s in systems}
    for run in range(args.runs):
        for system in systems:
            out = subprocess.run([sys.executable, __file__, "--child", system, "--rows", str(args.rows),
                                  "--batches", str(args.batches), "--seed", str(args.seed)],
                                 capture_output=True, text=True, check=True)
            result = json.loads(out.stdout.strip().splitlines()[-1])
            if result["problems"]:
                sys.exit(f"{system}: {result['problems']}")
            results[system].append(result)
            print(f"run {run + 1} {system}: delete {result['delete']:.3f} s, update {result['update']:.3f} s, "
                  f"read {result['read']:.3f} s ({result['rows']:,} rows)", flush=True)
    load = os.getloadavg()[0]
    print(f"\n{args.batches} batches of {args.rows:,} rows, medians of {args.runs} runs, load average {load:.1f}\n")
    print("| system | rows | delete s | update s | read after s | delete / deltalake | update / deltalake |")
    print("|---|---:|---:|---:|---:|---:|---:|")
    for system in systems:
        med = {k: statistics.median(r[k] for r in results[system]) for k in ("delete", "update", "read")}
        ratio = {}
        if "deltalake" in results and system != "deltalake":
            for k in ("delete", "update"):  # same-run ratios, then their median
                ratio[k] = statistics.median(r[k] / d[k] for r, d in zip(results[system], results["deltalake"]))
        print(f"| {system} | {results[system][0]['rows']:,} | {med['delete']:.3f} | {med['update']:.3f} | "
              f"{med['read']:.3f} | {ratio.get('delete', 1.0):.2f}x | {ratio.get('update', 1.0):.2f}x |")


if __name__ == "__main__":
    main()
