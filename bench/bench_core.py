"""Core benchmark, workloads W1 (upsert stream) and W2 (full read) of BENCH.md.

Every system runs in its own fresh subprocess per run, so peak RSS (ru_maxrss) is that
system's alone, and the systems of one run share the machine's state at about the same
time: same-run ratios against the anchors are the figures to trust on a noisy machine.

    .venv/bin/python bench/bench_core.py                 # 10 x 200k rows, 3 runs
    .venv/bin/python bench/bench_core.py --quick         # smoke run, well under a minute
    .venv/bin/python bench/bench_core.py --systems paimon-streaming,pypaimon --json-out out.jsonl
"""
from __future__ import annotations

import argparse
import importlib.util
import itertools
import json
import os
import platform
import resource
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass
from functools import partial
from importlib.metadata import version
from itertools import count
from typing import Callable

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

SCHEMA = pa.schema([
    pa.field("id", pa.int64(), nullable=False),
    pa.field("name", pa.string()),
    pa.field("amount", pa.float64()),
    pa.field("ts", pa.timestamp("us")),
    pa.field("category", pa.string()),
])
NEW_FRACTION = 0.8
SAMPLE_IDS = 1000
BUCKETS = "4"
_NAMES = pa.array([f"name-{i:05d}" for i in range(10_000)])
_CATEGORIES = pa.array(["books", "games", "garden", "grocery", "music", "sports", "tools", "toys"])
_TS0 = np.datetime64("2024-01-01T00:00:00", "us").astype(np.int64)
_HOUR_US = 3_600_000_000

WriteFn = Callable[[pa.Table], None]
ReadFn = Callable[[], pa.Table]


# ---- data ------------------------------------------------------------------------------------
def distinct_ids(rows: int, batches: int) -> int:
    """Batch 0 brings `rows` ids, every later batch brings its 80% of new ids."""
    return rows + (batches - 1) * int(rows * NEW_FRACTION)


def batch_ids(seed: int, rows: int, index: int) -> tuple[np.ndarray, np.ndarray]:
    """(new ids, updated ids) of batch `index`; depends only on (seed, index), so any batch can be
    regenerated without the others. Updates are uniform over ids written before, distinct within
    the batch (a MERGE source must not match one target row twice)."""
    if index == 0:
        return np.arange(rows, dtype=np.int64), np.empty(0, dtype=np.int64)
    rng = np.random.default_rng([seed, index, 0])
    n_new = int(rows * NEW_FRACTION)
    existing = distinct_ids(rows, index)
    new = np.arange(existing, existing + n_new, dtype=np.int64)
    updated = rng.choice(existing, size=rows - n_new, replace=False).astype(np.int64)
    return new, updated


def make_batch(seed: int, rows: int, index: int) -> pa.Table:
    """Batch `index` of the upsert stream, rows in random order; vectorized (numpy + dictionary take)."""
    new, updated = batch_ids(seed, rows, index)
    rng = np.random.default_rng([seed, index, 1])
    ids = rng.permutation(np.concatenate([new, updated]))
    ts = _TS0 + index * _HOUR_US + rng.integers(0, _HOUR_US, rows)
    return pa.table({
        "id": ids,
        "name": _NAMES.take(pa.array(rng.integers(0, len(_NAMES), rows))),
        "amount": np.round(rng.random(rows) * 1000.0, 2),
        "ts": pa.array(ts, pa.timestamp("us")),
        "category": _CATEGORIES.take(pa.array(rng.integers(0, len(_CATEGORIES), rows))),
    }, schema=SCHEMA)


def expected_latest(seed: int, rows: int, batches: int) -> pa.Table:
    """Latest row of SAMPLE_IDS ids that were updated at least once, sorted by id (from regenerated batches)."""
    updated = np.unique(np.concatenate([batch_ids(seed, rows, i)[1] for i in range(1, batches)]))
    rng = np.random.default_rng([seed, 2**31])
    sample = pa.array(rng.choice(updated, size=min(SAMPLE_IDS, len(updated)), replace=False))
    parts = []
    for i in range(batches):
        batch = make_batch(seed, rows, i)
        hit = batch.filter(pc.is_in(batch["id"], sample))
        parts.append(hit.append_column("batch", pa.array(np.full(hit.num_rows, i))))
    rows_seen = pa.concat_tables(parts).sort_by([("id", "ascending"), ("batch", "descending")])
    first = np.r_[True, np.diff(rows_seen["id"].to_numpy()) != 0]
    return rows_seen.filter(pa.array(first)).drop_columns(["batch"])


def check_read(out: pa.Table, seed: int, rows: int, batches: int, upsert: bool) -> str | None:
    """None if the read is right, else what is wrong. Upsert tables: one row per distinct id and
    the sampled updated ids hold their latest values; raw files: every row written."""
    want = distinct_ids(rows, batches) if upsert else rows * batches
    if out.num_rows != want:
        return f"read {out.num_rows} rows, expected {want}"
    if not upsert:
        return None
    if pc.count_distinct(out["id"]).as_py() != out.num_rows:
        return "duplicate ids in the read"
    expected = expected_latest(seed, rows, batches)
    got = out.filter(pc.is_in(out["id"], expected["id"])).sort_by("id")
    if got.num_rows != expected.num_rows:
        return f"{expected.num_rows - got.num_rows} of {expected.num_rows} sampled ids are missing"
    for name in SCHEMA.names:
        if not got[name].cast(SCHEMA.field(name).type).equals(expected[name]):
            return f"column '{name}' of sampled updated ids does not hold the latest values"
    return None


# ---- systems: one function each, returning (write one batch + commit, read everything) --------
def raw_parquet(workdir: str) -> tuple[WriteFn, ReadFn, str]:
    """The floor: each batch written once as a Parquet file, no upsert semantics."""
    import pyarrow.parquet as pq
    counter = count()

    def write(batch: pa.Table) -> None:
        pq.write_table(batch, os.path.join(workdir, f"batch-{next(counter):05d}.parquet"))

    def read() -> pa.Table:
        return pq.read_table(workdir)

    return write, read, pa.__version__


def pypaimon_table(workdir: str, dv: bool) -> tuple[WriteFn, ReadFn, str]:
    """pypaimon primary-key table, bucket = 4: one batch write + commit per batch, merge-on-read."""
    from pypaimon import CatalogFactory, Schema
    options = {"bucket": BUCKETS, "deletion-vectors.enabled": str(dv).lower()}
    catalog = CatalogFactory.create({"warehouse": workdir})
    catalog.create_database("db", True)
    catalog.create_table("db.w1", Schema.from_pyarrow_schema(SCHEMA, primary_keys=["id"], options=options), False)
    table = catalog.get_table("db.w1")

    def write(batch: pa.Table) -> None:
        builder = table.new_batch_write_builder()
        writer, committer = builder.new_write(), builder.new_commit()
        writer.write_arrow(batch)
        committer.commit(writer.prepare_commit())
        writer.close()
        committer.close()

    def read() -> pa.Table:
        fresh = CatalogFactory.create({"warehouse": workdir}).get_table("db.w1")
        builder = fresh.new_read_builder()
        return builder.new_read().to_arrow(builder.new_scan().plan().splits())

    return write, read, version("pypaimon")


# Extra table options for our systems (`--table-option`), e.g. to measure a compaction setting.
TABLE_OPTIONS: dict[str, str] = {}


def paimon_streaming_table(workdir: str, dv: bool) -> tuple[WriteFn, ReadFn, str]:
    """Our core: `Table.write_arrow` (one commit per call, numbered as a stream's batches, so a
    `full-compaction.delta-commits` schedule applies), `Table.to_arrow` from a fresh catalog."""
    import paimon_streaming as ps
    options = {"bucket": BUCKETS, "deletion-vectors.enabled": str(dv).lower(), **TABLE_OPTIONS}
    table = ps.Catalog(workdir).create_table("db.w1", schema=SCHEMA, primary_keys=["id"], options=options)
    batch_ids = itertools.count()

    def write(batch: pa.Table) -> None:
        table.write_arrow(batch, commit_user="bench-w1", commit_identifier=next(batch_ids))

    def read() -> pa.Table:
        return ps.Catalog(workdir).get_table("db.w1").to_arrow()

    return write, read, version("paimon-streaming")


def live_file_reads(workdir: str) -> dict[str, ReadFn]:
    """Bare pyarrow reads of our table's live data files, 4 at a time as our reader reads them,
    deletion vectors not applied: with page checksums verified (as our reader does) and without.
    Timed beside our read, they say how much of it is the files themselves (their number, codec
    and checksums) and how much is ours (deletion vectors, schema, assembly)."""
    import paimon_streaming as ps
    from concurrent.futures import ThreadPoolExecutor
    import pyarrow.parquet as pq
    table = ps.Catalog(workdir).get_table("db.w1")
    paths = [f"{s.bucket_path}/{f.file_name}" for s in table.plan(table.latest_snapshot()) for f in s.files]

    def reader(verify: bool) -> ReadFn:
        def read() -> pa.Table:
            with ThreadPoolExecutor(4) as pool:
                return pa.concat_tables(pool.map(lambda p: pq.ParquetFile(
                    p, pre_buffer=True, page_checksum_verification=verify).read(columns=SCHEMA.names), paths))
        return read
    return {"read_files_s": reader(True), "read_files_unverified_s": reader(False)}


def raw_parquet_beside(workdir: str, seed: int, rows: int, batches: int) -> ReadFn:
    """Raw Parquet's read of the same batches, in our process: the batches written again (after
    our timed runs) as the raw-parquet system writes them, next to our table. The raw-parquet
    system's own read runs in another process minutes apart, which on a shared machine moves
    the ratio by up to 1.5x either way; this one is read in turn with ours."""
    side = os.path.join(workdir, "raw-parquet-beside")
    os.makedirs(side)
    write, read, _ = raw_parquet(side)
    for i in range(batches):
        write(make_batch(seed, rows, i))
    return read


def deltalake_merge(workdir: str) -> tuple[WriteFn, ReadFn, str]:
    """delta-rs MERGE per batch (update matched, insert the rest): Rust, copy-on-write."""
    from deltalake import DeltaTable
    path = os.path.join(workdir, "w1")
    table = DeltaTable.create(path, SCHEMA)

    def write(batch: pa.Table) -> None:
        (table.merge(batch, predicate="t.id = s.id", source_alias="s", target_alias="t")
         .when_matched_update_all().when_not_matched_insert_all().execute())

    def read() -> pa.Table:
        return DeltaTable(path).to_pyarrow_table()

    return write, read, version("deltalake")


@dataclass(frozen=True)
class System:
    name: str
    open: Callable[[str], tuple[WriteFn, ReadFn, str]]
    upsert: bool = True       # reads must hold one row per id with its latest values
    strict: bool = True       # a wrong read fails the bench; False: reported (a known anchor bug)
    module: str | None = None  # skipped when this module is not importable
    default: bool = True      # False: only run when named in --systems


SYSTEMS = [
    System("raw-parquet", raw_parquet, upsert=False),
    System("pypaimon", partial(pypaimon_table, dv=False)),
    System("paimon-streaming", partial(paimon_streaming_table, dv=False)),
    System("deltalake", deltalake_merge, module="deltalake"),
    System("paimon-streaming-dv", partial(paimon_streaming_table, dv=True)),
    # pypaimon's deletion-vector table reads back 0 rows (its writes stay in level 0): opt-in
    System("pypaimon-dv", partial(pypaimon_table, dv=True), strict=False, default=False),
]
BY_NAME = {s.name: s for s in SYSTEMS}
OURS = [s.name for s in SYSTEMS if s.name.startswith("paimon-streaming")]
ANCHORS = ["raw-parquet", "pypaimon", "pypaimon-dv", "deltalake"]


# ---- child: one system, one run ---------------------------------------------------------------
def _maxrss_mb() -> float:
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024.0  # Linux: KiB


def run_child(system: System, seed: int, rows: int, batches: int, workdir: str) -> dict:
    """W1 then W2 for one system in this (fresh) process; returns the measurements."""
    write, read, lib_version = system.open(workdir)
    baseline = _maxrss_mb()
    latencies = []
    for i in range(batches):
        batch = make_batch(seed, rows, i)
        start = time.perf_counter()
        write(batch)
        latencies.append(time.perf_counter() - start)
        del batch
    write_peak = _maxrss_mb() - baseline
    start = time.perf_counter()
    out = read()
    first_read_s = time.perf_counter() - start
    problem = check_read(out, seed, rows, batches, system.upsert)
    if problem and system.strict:
        raise SystemExit(f"W2 check FAILED for {system.name}: {problem}")
    read_rows = out.num_rows
    del out  # the reads below reuse its memory, as a long-lived reader's reads do
    read_times = timed_reads(read) if first_read_s < READ_BUDGET_S else [first_read_s]
    read_s = statistics.median(read_times)
    breakdown = (interleaved_medians({"read_beside_files_s": read, **live_file_reads(workdir),
                                      "raw_parquet_beside_s": raw_parquet_beside(workdir, seed, rows, batches)})
                 if system.name in OURS else {})
    if breakdown:
        breakdown["read_over_raw_beside"] = breakdown["read_beside_files_s"] / breakdown["raw_parquet_beside_s"]
    return {
        "version": lib_version,
        "batch_s": latencies,
        "rows_per_s": rows * batches / sum(latencies),
        "first_batch_s": latencies[0],
        "last_batch_s": latencies[-1],
        "last_over_first": latencies[-1] / latencies[0],
        "slowest_batch_s": max(latencies),
        "growth": growth(latencies),
        "write_peak_rss_mb": write_peak,
        "first_read_s": first_read_s,
        "read_s": read_s,
        "read_times_s": read_times,
        "read_rows": read_rows,
        "read_check": problem or "ok",
        "baseline_rss_mb": baseline,
        **breakdown,
    }


# A single full read of a few hundred milliseconds moves by up to 2x from run to run on a shared
# machine (for raw Parquet as for us), so after the first read (checked, and reported on its
# own: a fresh process's first read also pays for its memory, 1-2 s more at 20M rows here, for
# every system alike) each run reads READS times more, within READ_BUDGET_S.
READS = 5
READ_BUDGET_S = 10.0


def timed_reads(read: ReadFn) -> list[float]:
    """The seconds of each read: READS of them, or fewer once READ_BUDGET_S is spent."""
    times: list[float] = []
    while len(times) < READS and sum(times) < READ_BUDGET_S:
        start = time.perf_counter()
        read()
        times.append(time.perf_counter() - start)
    return times


def interleaved_medians(reads: dict[str, ReadFn]) -> dict[str, float]:
    """Median seconds of each read, READS of each, taken in turn so that none gets a warmer or
    quieter machine than the others."""
    times: dict[str, list[float]] = {key: [] for key in reads}
    for _ in range(READS):
        for key, read in reads.items():
            start = time.perf_counter()
            read()
            times[key].append(time.perf_counter() - start)
    return {key: statistics.median(seconds) for key, seconds in times.items()}


def growth(latencies: list[float]) -> float | None:
    """Median latency of the last 10 batches over that of batches 1-10: how the cost of an
    update batch grows with the table (batch 0 inserts only, so it does no lookup and no
    merge). Only for runs of 20 batches or more, where the two windows do not overlap."""
    if len(latencies) < 20:
        return None
    return statistics.median(latencies[-10:]) / statistics.median(latencies[1:11])


# ---- parent: runs, medians, ratios ------------------------------------------------------------
def child_python(name: str) -> str:
    """pypaimon 2.1.0 pins pyarrow<20, so it runs in the tests' oracle virtualenv
    (tests/.venv-oracle, built on first use); every other system runs with this interpreter's
    packages, the newest a user's `pip install` gets."""
    if not name.startswith("pypaimon"):
        return sys.executable
    sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "tests"))
    from pypaimon_oracle import build
    return str(build())


def spawn(name: str, seed: int, rows: int, batches: int, workroot: str | None) -> dict:
    """Run one system in a fresh interpreter and return its measurements (dies loudly on failure)."""
    workdir = tempfile.mkdtemp(prefix=f"bench-{name}-", dir=workroot)
    try:
        cmd = [child_python(name), os.path.abspath(__file__), "--child", name, "--seed", str(seed),
               "--rows", str(rows), "--batches", str(batches), "--workdir", workdir]
        cmd += [f"--table-option={k}={v}" for k, v in TABLE_OPTIONS.items()]
        proc = subprocess.run(cmd, stdout=subprocess.PIPE, text=True)
        result = _last_json_line(proc.stdout)
        if proc.returncode != 0:
            if result is None or name.startswith("paimon-streaming"):
                raise SystemExit(f"{name} failed (exit {proc.returncode}); its stderr is above")
            # deltalake 1.6's process sometimes aborts at interpreter exit ("terminate called
            # without an active exception"), after its measurements and read check were printed
            print(f"note: {name} exited with {proc.returncode} after reporting its run; the run is kept",
                  file=sys.stderr, flush=True)
        return result
    finally:
        shutil.rmtree(workdir, ignore_errors=True)


def _last_json_line(stdout: str) -> dict | None:
    """A child's result: the last line it printed, when that is a whole JSON object."""
    lines = stdout.strip().splitlines()
    try:
        return json.loads(lines[-1]) if lines else None
    except json.JSONDecodeError:
        return None


READ_BREAKDOWN = ["read_beside_files_s", "read_files_s", "read_files_unverified_s", "raw_parquet_beside_s",
                  "read_over_raw_beside"]
NUMBERS = ["rows_per_s", "first_batch_s", "last_batch_s", "last_over_first", "slowest_batch_s",
           "write_peak_rss_mb", "read_s", "first_read_s"]


def ratios(runs: dict[str, list[dict]], system: str) -> dict[str, dict[str, float | None]]:
    """Same-run ratios of `system` against each anchor present, median over runs:
    rows/s (higher is better), read time and write peak RSS (lower is better). A read ratio is
    None when either side read back wrong data (a fast wrong read is no anchor)."""
    out = {}
    for anchor in ANCHORS:
        if anchor == system or anchor not in runs:
            continue
        pairs = list(zip(runs[system], runs[anchor]))
        reads_ok = all(a["read_check"] == b["read_check"] == "ok" for a, b in pairs)
        out[anchor] = {
            "rows_per_s": statistics.median(a["rows_per_s"] / b["rows_per_s"] for a, b in pairs),
            "read_s": statistics.median(a["read_s"] / b["read_s"] for a, b in pairs) if reads_ok else None,
            "first_read_s": (statistics.median(a["first_read_s"] / b["first_read_s"] for a, b in pairs)
                             if reads_ok else None),
            "write_peak_rss_mb": statistics.median(
                a["write_peak_rss_mb"] / max(b["write_peak_rss_mb"], 1.0) for a, b in pairs),
        }
    return out


def summarize(runs: dict[str, list[dict]], args: argparse.Namespace) -> list[dict]:
    """One JSON-ready record per system: medians, ratios to anchors, raw per-run numbers."""
    records = []
    for name, per_run in runs.items():
        checks = sorted({r["read_check"] for r in per_run})
        records.append({
            "bench": "core", "workload": "W1+W2", "system": name, "version": per_run[0]["version"],
            "rows_per_batch": args.rows, "batches": args.batches, "runs": len(per_run), "seed": args.seed,
            "table_options": TABLE_OPTIONS if name in OURS else {},
            "median": {k: statistics.median(r[k] for r in per_run) for k in NUMBERS},
            "growth": None if per_run[0].get("growth") is None else statistics.median(r["growth"] for r in per_run),
            "read_breakdown": {k: statistics.median(r[k] for r in per_run) for k in READ_BREAKDOWN if k in per_run[0]},
            "read_check": "; ".join(checks),
            "vs": ratios(runs, name),
            "per_run": per_run,
            "host": host(),
        })
    return records


def host() -> dict:
    """The machine a record was measured on, with its load then (shared machines: compare ratios)."""
    return {"cpus": os.cpu_count(), "python": platform.python_version(), "load_average_1m": round(os.getloadavg()[0], 2)}


def _fmt(value: float | None, spec: str) -> str:
    return "n/a" if value is None else spec.format(value)


def print_table(records: list[dict]) -> None:
    """Medians per system, then the same-run ratios of our systems against the anchors."""
    print(f"\nW1 {records[0]['batches']} x {records[0]['rows_per_batch']:,} rows, median of "
          f"{records[0]['runs']} run(s); W2 full read: a fresh process's first read ('1st read'), then "
          f"the median of up to {READS} more a run ('read s') "
          f"(load average {os.getloadavg()[0]:.1f})")
    if TABLE_OPTIONS:
        print("our table options: " + ", ".join(f"{k}={v}" for k, v in TABLE_OPTIONS.items()))
    head = (f"{'system':<20}{'rows/s':>11}{'first s':>9}{'last s':>9}{'last/1st':>9}{'slowest s':>10}"
            f"{'peak MB':>9}{'1st read':>9}{'/raw':>6}{'read s':>8}{'read/raw':>9}  read check")
    print(head + "\n" + "-" * len(head))
    for r in records:
        m = r["median"]
        read_ratio, first_ratio = (("1.00", "1.00") if r["system"] == "raw-parquet" else
                                   (_fmt(r["vs"].get("raw-parquet", {}).get(k), "{:.2f}") for k in ("read_s", "first_read_s")))
        print(f"{r['system']:<20}{m['rows_per_s']:>11,.0f}{m['first_batch_s']:>9.2f}{m['last_batch_s']:>9.2f}"
              f"{m['last_over_first']:>9.2f}{m['slowest_batch_s']:>10.2f}{m['write_peak_rss_mb']:>9.0f}"
              f"{m['first_read_s']:>9.2f}{first_ratio:>6}{m['read_s']:>8.2f}{read_ratio:>9}"
              f"  {r['read_check']}")
    grown = [r for r in records if r.get("growth") is not None]
    if grown:
        print("\nupdate batches, median latency of the last 10 over batches 1-10 (table growth alone): "
              + ", ".join(f"{r['system']} {r['growth']:.2f}" for r in grown))
    for r in records:
        b = r.get("read_breakdown")
        if b:
            ours_s, files, unverified, raw, beside = (b[k] for k in READ_BREAKDOWN)
            print(f"\nwhere {r['system']}'s read goes (medians of reads taken in turn in its process): our read "
                  f"{ours_s:.3f} s; its live files read bare {files:.3f} s, {unverified:.3f} s without page "
                  f"checksums; raw Parquet's read of the same batches {raw:.3f} s: ours x{beside:.2f} of raw "
                  "Parquet's read, read in turn (median over runs)")
    ours = [r for r in records if r["system"] in OURS and r["vs"]]
    if ours:
        print("\nsame-run ratios (median over runs): rows/s is ours / anchor (higher is better); "
              "read s and peak MB are ours / anchor (lower is better)")
        for r in ours:
            for anchor, v in r["vs"].items():
                print(f"  {r['system']:<20} vs {anchor:<12} rows/s x{v['rows_per_s']:<8.2f}"
                      f"read s {_fmt(v['read_s'], 'x{:.2f}'):<9}1st read {_fmt(v['first_read_s'], 'x{:.2f}'):<9}"
                      f"peak MB x{v['write_peak_rss_mb']:.2f}")


def w1_parser(description: str) -> argparse.ArgumentParser:
    """A bench's parser with the options of the W1 stream it writes: --rows, --batches, --seed
    (the same batches in every bench) and --json-out."""
    p = argparse.ArgumentParser(description=description, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--rows", type=int, default=200_000, help="rows per batch (default 200000)")
    p.add_argument("--batches", type=int, default=10, help="batches, one commit each (default 10)")
    p.add_argument("--seed", type=int, default=20240601)
    p.add_argument("--json-out", default=None, help="also write the JSON lines to this file")
    return p


def parse_args(argv: list[str] | None = None) -> argparse.Namespace:
    p = w1_parser(__doc__)
    p.add_argument("--runs", type=int, default=3, help="runs; medians are reported (default 3)")
    p.add_argument("--systems", default=None,
                   help=f"comma-separated subset of: {', '.join(BY_NAME)} "
                        "(default: all importable, DV systems opt-in)")
    p.add_argument("--quick", action="store_true", help="smoke run: 3 batches of 20000 rows, 1 run")
    p.add_argument("--workdir", default=None, help="where tables are written (default: system temp dir)")
    p.add_argument("--table-option", action="append", default=[], metavar="KEY=VALUE",
                   help="a table option for our systems (repeatable), e.g. "
                        "num-sorted-run.compaction-trigger=10")
    p.add_argument("--child", default=None, help=argparse.SUPPRESS)
    args = p.parse_args(argv)
    if args.quick:
        args.rows, args.batches, args.runs = 20_000, 3, 1
    if args.rows < 5 or args.batches < 1 or args.runs < 1:
        p.error("need --rows >= 5, --batches >= 1, --runs >= 1")
    if any("=" not in o for o in args.table_option):
        p.error("--table-option takes KEY=VALUE")
    return args


def selected_systems(spec: str | None) -> list[str]:
    """Requested systems in registry order; by default every system whose module imports."""
    if spec is None:
        return [s.name for s in SYSTEMS
                if s.default and (s.module is None or importlib.util.find_spec(s.module))]
    names = [n.strip() for n in spec.split(",") if n.strip()]
    unknown = [n for n in names if n not in BY_NAME]
    if unknown:
        raise SystemExit(f"unknown system(s) {unknown}; choose from {list(BY_NAME)}")
    return [s.name for s in SYSTEMS if s.name in names]


def main(argv: list[str] | None = None) -> None:
    args = parse_args(argv)
    TABLE_OPTIONS.update(o.split("=", 1) for o in args.table_option)
    if args.child:
        result = run_child(BY_NAME[args.child], args.seed, args.rows, args.batches, args.workdir)
        print(json.dumps(result))
        return
    names = selected_systems(args.systems)
    runs: dict[str, list[dict]] = {n: [] for n in names}
    for run in range(args.runs):
        for name in names:
            started = time.perf_counter()
            runs[name].append(spawn(name, args.seed, args.rows, args.batches, args.workdir))
            print(f"run {run + 1}/{args.runs} {name}: {runs[name][-1]['rows_per_s']:,.0f} rows/s "
                  f"({time.perf_counter() - started:.0f} s)", file=sys.stderr, flush=True)
    report(summarize(runs, args), args.json_out)


def report(records: list[dict], json_out: str | None,
           table: Callable[[list[dict]], None] | None = None) -> None:
    """One JSON line per system (also to `json_out`), then the table (`print_table` by default)."""
    lines = [json.dumps(r) for r in records]
    print("\n".join(lines))
    if json_out:
        with open(json_out, "w") as f:
            f.write("\n".join(lines) + "\n")
    (table or print_table)(records)


if __name__ == "__main__":
    main()
