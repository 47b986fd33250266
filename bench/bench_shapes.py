"""Table shapes W1 does not exercise: many small files (W5), wide rows (W6), point lookups (W7), keys
moving between partitions (W8), semi-structured payloads (W9).

W5 `small-files`: an append table `(id BIGINT, p INT, payload STRING, amount DOUBLE)`
partitioned by `p` gets `--commits` commits (default 100) of 20,000 rows spread over 100
partitions: each commit adds one small file to every partition (10,000 files of 200 rows), the
shape a streaming writer leaves in a partitioned table. Read whole, and one partition alone.

W6 `wide`: a primary-key table `(id BIGINT, c0 ... c199 DOUBLE)` with 4 buckets and deletion
vectors gets `--commits` commits (default 100) of 2,000 rows, 80% new ids and 20% updates.
Read whole.

W7 `lookup`: a primary-key table `(id BIGINT, email STRING, amount DOUBLE)` with 4 buckets and
deletion vectors gets `--commits` commits (default 100) of 20,000 rows, 80% new ids and 20%
updates; each id has its own email. Read whole, and one email (`email = 'user-7@example.com'`,
one row: a filter on a column that is not the key, which min/max statistics cannot prune), and
one id (`id = 7`: the key's bucket alone is read, as Java selects it).

W8 `moving-keys`: a primary-key table `(id BIGINT, dt STRING, amount DOUBLE)` keyed by `id`,
partitioned by `dt`, `bucket` = -1 with deletion vectors (a cross-partition upsert table) gets
`--commits` commits (default 100) of 20,000 rows, 80% new ids and 20% updates, each row's `dt`
one of 8 days at random: most updates move their key to another partition. Read whole.

W9 `variant`: a primary-key table `(id BIGINT, payload VARIANT)` with 4 buckets and deletion
vectors gets `--commits` commits (default 100) of 20,000 rows, 80% new ids and 20% updates; each
payload is one of 1,000 JSON documents of varying shape (nested objects, arrays of mixed types,
absent fields), encoded once (`paimon_streaming.variant.from_json`) before the timed writes.
Read whole.

Per run and system, in fresh processes: the write (one commit a batch, rows/s), then the first
read of a fresh process and the median of 5 reads after it (and for W5 the median of 5 reads of
one partition, a filter that prunes the others; for W7 of the one email and of the one id). Systems, in the same run:
- `raw-parquet`: pyarrow writing each batch as Parquet (W5: `write_to_dataset` with hive
  partitioning, one file per partition and batch; W6: one `write_table` per batch), read with
  `pyarrow.parquet.read_table` on the directory: the floor, no table format, no upserts;
- `paimon-streaming`: `Table.write_arrow` and `to_arrow` with Paimon's defaults (W5: the
  writer merges each partition's small files once `compaction.min.file-num`, 5, gather);
- `paimon-streaming-write-only` (W5 only): the same with `write-only` = true, so the 10,000
  small files stay, as a dedicated compaction job would leave them between its runs;
- `paimon-streaming-row-tracking` (W5 only): the same with `row-tracking.enabled` = true (each
  commit numbers its rows, compaction keeps the ids as columns), read with `_ROW_ID` and
  `_SEQUENCE_NUMBER`;
- `paimon-streaming-bloom` (W7 only): the same with a bloom-filter file index on `email`
  (`file-index.bloom-filter.columns`, `items` = 20,000 a file), which filtered reads skip files by;
- `paimon-streaming-bitmap` (W7 only): the same with a bitmap file index on `email`
  (`file-index.bitmap.columns`): exact, but a dictionary of every email of a file;
- `paimon-streaming-range-bitmap` (W7 only): the same with a range bitmap on `email`
  (`file-index.range-bitmap.columns`): exact, a chunked dictionary and each row's code;
- `paimon-streaming-key-with-partition` (W8 only): the same rows keyed by `(id, dt)`, so no key
  moves (a key is a row per partition): what placing each key by the table-wide index costs;
- `paimon-streaming-json-string` (W9 only): the same documents as JSON text in a STRING column,
  what a table without VARIANT holds.

    .venv/bin/python bench/bench_shapes.py small-files [--commits 100] [--runs 3]
    .venv/bin/python bench/bench_shapes.py wide [--commits 100] [--columns 200] [--runs 3]
    .venv/bin/python bench/bench_shapes.py lookup [--commits 100] [--runs 3]
    .venv/bin/python bench/bench_shapes.py moving-keys [--commits 100] [--runs 3]
    .venv/bin/python bench/bench_shapes.py variant [--commits 100] [--runs 3]

Prints one JSON line per system (medians, same-run ratios to raw Parquet, per-run numbers) and a
table. Ratios are ours / raw Parquet: higher is better for rows/s, lower for read times.
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

READS = 5
SYSTEMS = ("raw-parquet", "paimon-streaming", "paimon-streaming-write-only", "paimon-streaming-bloom",
           "paimon-streaming-bitmap", "paimon-streaming-range-bitmap", "paimon-streaming-row-tracking",
           "paimon-streaming-key-with-partition", "paimon-streaming-json-string")
EXTRA_OPTIONS = {"paimon-streaming-write-only": {"write-only": "true"},
                 "paimon-streaming-row-tracking": {"row-tracking.enabled": "true"},
                 "paimon-streaming-bloom": {"file-index.bloom-filter.columns": "email",
                                            "file-index.bloom-filter.email.items": "20000"},
                 "paimon-streaming-bitmap": {"file-index.bitmap.columns": "email"},
                 "paimon-streaming-range-bitmap": {"file-index.range-bitmap.columns": "email"}}
# what a system's reads take besides the table's columns
EXTRA_COLUMNS = {"paimon-streaming-row-tracking": ["_ROW_ID", "_SEQUENCE_NUMBER"]}
# a system's primary key instead of the workload's (W8: the partition key in it, no key moves)
PRIMARY_KEYS = {"paimon-streaming-key-with-partition": ["id", "dt"]}
PARTITIONS = 100     # W5
MOVING_PARTITIONS = 8  # W8
ONE_PARTITION = 7    # W5's filtered read


class SmallFiles:
    """W5: one small file per partition and commit."""
    rows = 20_000
    partition_keys = ["p"]
    primary_keys: list[str] | None = None
    options: dict[str, str] = {}

    def __init__(self, columns: int):
        self.schema = pa.schema([("id", pa.int64()), ("p", pa.int32()), ("payload", pa.string()),
                                 ("amount", pa.float64())])

    def batch(self, index: int) -> pa.Table:
        rng = np.random.default_rng(index)
        ids = np.arange(index * self.rows, (index + 1) * self.rows, dtype=np.int64)
        return pa.table({"id": ids, "p": (ids % PARTITIONS).astype(np.int32),
                         "payload": pa.array(np.char.add("event-", rng.integers(0, 10_000, self.rows).astype(str))),
                         "amount": rng.random(self.rows)}, schema=self.schema)

    def expected_rows(self, commits: int) -> int:
        return commits * self.rows

    probe = [("p", "=", ONE_PARTITION)]
    key_probe: list | None = None

    def probe_rows(self, commits: int) -> int:
        return commits * self.rows // PARTITIONS


class Wide:
    """W6: wide rows, upserts with deletion vectors."""
    rows = 2_000
    partition_keys: list[str] = []
    primary_keys = ["id"]
    options = {"bucket": "4", "deletion-vectors.enabled": "true"}

    def __init__(self, columns: int):
        self.columns = columns
        self.schema = pa.schema([pa.field("id", pa.int64(), False)] + [(f"c{i}", pa.float64()) for i in range(columns)])

    updates_from = 0  # the smallest id updates pick

    def batch(self, index: int) -> pa.Table:
        rng = np.random.default_rng(index)
        ids = self._ids(index, rng)
        return pa.table([ids] + [rng.random(len(ids)) for _ in range(self.columns)], schema=self.schema)

    def _ids(self, index: int, rng: np.random.Generator) -> np.ndarray:
        """Batch 0 inserts `rows` ids; later ones 80% new ids and 20% updates of earlier ids."""
        if index == 0:
            return np.arange(self.rows, dtype=np.int64)
        written = self._ids_before(index)
        new = np.arange(written, written + self.rows * 4 // 5, dtype=np.int64)
        updated = self.updates_from + rng.choice(written - self.updates_from, self.rows - len(new), replace=False)
        return np.concatenate([new, updated])

    def _ids_before(self, index: int) -> int:
        return 0 if index == 0 else self.rows + (index - 1) * (self.rows * 4 // 5)

    def expected_rows(self, commits: int) -> int:
        return self._ids_before(commits)

    probe = None
    key_probe: list | None = None


class Lookup(Wide):
    """W7: one email looked up in a primary-key table with deletion vectors."""
    rows = 20_000
    probe = [("email", "=", "user-7@example.com")]
    key_probe = [("id", "=", 7)]

    def __init__(self, columns: int):
        self.schema = pa.schema([pa.field("id", pa.int64(), False), ("email", pa.string()), ("amount", pa.float64())])

    updates_from = 100  # the probed id is written once

    def batch(self, index: int) -> pa.Table:
        rng = np.random.default_rng(index)
        ids = self._ids(index, rng)
        emails = np.char.add(np.char.add("user-", ids.astype(str)), "@example.com")
        return pa.table([ids, pa.array(emails), rng.random(len(ids))], schema=self.schema)

    def probe_rows(self, commits: int) -> int:
        return 1


class MovingKeys(Wide):
    """W8: upserts keyed by `id` alone into a table partitioned by `dt`, whose rows carry a
    random `dt` each: an updated key mostly moves to another partition (cross-partition upserts)."""
    rows = 20_000
    partition_keys = ["dt"]
    options = {"bucket": "-1", "deletion-vectors.enabled": "true"}

    def __init__(self, columns: int):
        self.schema = pa.schema([pa.field("id", pa.int64(), False), pa.field("dt", pa.string(), False),
                                 ("amount", pa.float64())])
        self.primary_keys = ["id"]

    def batch(self, index: int) -> pa.Table:
        rng = np.random.default_rng(index)
        ids = self._ids(index, rng)
        days = pa.array([f"2026-11-{d:02d}" for d in range(1, MOVING_PARTITIONS + 1)])
        return pa.table([ids, days.take(pa.array(rng.integers(0, MOVING_PARTITIONS, len(ids)))), rng.random(len(ids))],
                        schema=self.schema)

    def expected_rows(self, commits: int) -> int:
        if self.primary_keys == ["id"]:
            return self._ids_before(commits)
        pairs = pa.concat_tables([self.batch(i).select(["id", "dt"]) for i in range(commits)])
        return pairs.group_by(["id", "dt"]).aggregate([]).num_rows


class Variants(Wide):
    """W9: upserts of semi-structured payloads, as VARIANT (or, `as_text`, as JSON text)."""
    rows = 20_000
    documents = 1_000

    def __init__(self, columns: int):
        from paimon_streaming import variant
        from paimon_streaming.types import VARIANT_ARROW
        self.as_text = False
        rng = np.random.default_rng(0)
        texts = [json.dumps(_document(i, rng)) for i in range(self.documents)]
        self.texts, self.variants = pa.array(texts), variant.from_json(texts)
        self.schema = pa.schema([pa.field("id", pa.int64(), False), pa.field("payload", VARIANT_ARROW)])

    def use_text(self) -> None:
        self.as_text = True
        self.schema = pa.schema([pa.field("id", pa.int64(), False), pa.field("payload", pa.string())])

    def batch(self, index: int) -> pa.Table:
        rng = np.random.default_rng(index)
        ids = self._ids(index, rng)
        picked = pa.array(rng.integers(0, self.documents, len(ids)))
        return pa.table([ids, (self.texts if self.as_text else self.variants).take(picked)], schema=self.schema)


def _document(i: int, rng: np.random.Generator) -> dict:
    """A payload of varying shape: an event's user, items of mixed types, optional fields."""
    doc = {"event": ["view", "cart", "order"][i % 3], "user": {"id": int(rng.integers(1, 10**6)), "tier": "abc"[i % 3]},
           "items": [int(rng.integers(0, 100)), "sku-%d" % i, round(float(rng.random()) * 100, 2)][: 1 + i % 3],
           "score": round(float(rng.random()), 4)}
    if i % 4 == 0:
        doc["coupon"] = {"code": "C%d" % i, "off": i % 50}
    if i % 7 == 0:
        doc["notes"] = None
    return doc


WORKLOADS = {"small-files": SmallFiles, "wide": Wide, "lookup": Lookup, "moving-keys": MovingKeys,
             "variant": Variants}
DEFAULT_SYSTEMS = {"small-files": SYSTEMS[:3], "wide": SYSTEMS[:2], "lookup": SYSTEMS[:2] + SYSTEMS[3:7],
                   "moving-keys": ("raw-parquet", "paimon-streaming", "paimon-streaming-key-with-partition"),
                   "variant": ("raw-parquet", "paimon-streaming", "paimon-streaming-json-string")}


def raw_parquet(workload, workdir: str):
    import pyarrow.parquet as pq

    def write(batch: pa.Table, index: int) -> None:
        if workload.partition_keys:
            pq.write_to_dataset(batch, workdir, partition_cols=workload.partition_keys,
                                basename_template=f"c{index}-{{i}}.parquet")
        else:
            pq.write_table(batch, f"{workdir}/c{index}.parquet")

    def read(probe: list | None = None) -> pa.Table:
        return pq.read_table(workdir, filters=probe)
    return write, read


def paimon_streaming(workload, workdir: str, extra_options: dict[str, str] | None = None,
                     extra_columns: list[str] | None = None):
    import paimon_streaming as ps
    opened: list = []  # the table, created by the first write and kept open, as a streaming writer does

    def write(batch: pa.Table, index: int) -> None:
        if not opened:
            opened.append(ps.Catalog(workdir).create_table(
                "db.t", workload.schema, partition_keys=workload.partition_keys,
                primary_keys=workload.primary_keys, options={**workload.options, **(extra_options or {})}))
        opened[0].write_arrow(batch)

    def read(probe: list | None = None) -> pa.Table:
        fresh = ps.Catalog(workdir).get_table("db.t")
        return fresh.to_arrow(columns=workload.schema.names + extra_columns if extra_columns else None,
                              filter=probe)
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
    workload = WORKLOADS[args.workload](args.columns)
    workload.primary_keys = PRIMARY_KEYS.get(args.child, workload.primary_keys)
    if args.child == "paimon-streaming-json-string":
        workload.use_text()
    if args.child == "raw-parquet":
        write, read = raw_parquet(workload, args.workdir)
    else:
        write, read = paimon_streaming(workload, args.workdir, EXTRA_OPTIONS.get(args.child),
                                       EXTRA_COLUMNS.get(args.child))
    if args.phase == "write":
        batches = [workload.batch(i) for i in range(args.commits)]
        start = time.perf_counter()
        for i, batch in enumerate(batches):
            write(batch, i)
        print(json.dumps({"rows_per_s": args.commits * workload.rows / (time.perf_counter() - start)}))
        return
    start = time.perf_counter()
    out = read()
    result = {"first_read_s": time.perf_counter() - start}
    expected = args.commits * workload.rows if args.child == "raw-parquet" else workload.expected_rows(args.commits)
    if out.num_rows != expected:
        raise SystemExit(f"{args.child} read {out.num_rows} rows, expected {expected}")
    result["read_s"] = median_seconds(read)
    if workload.probe is not None:
        one = read(workload.probe)
        if one.num_rows != workload.probe_rows(args.commits):
            raise SystemExit(f"{args.child} read {one.num_rows} rows of {workload.probe}")
        result["probe_read_s"] = median_seconds(lambda: read(workload.probe))
    if workload.key_probe is not None:
        if read(workload.key_probe).num_rows != 1:
            raise SystemExit(f"{args.child} did not read one row of {workload.key_probe}")
        result["key_read_s"] = median_seconds(lambda: read(workload.key_probe))
    print(json.dumps(result))


def spawn(system: str, phase: str, workdir: str, args: argparse.Namespace) -> dict:
    cmd = [sys.executable, os.path.abspath(__file__), args.workload, "--child", system, "--phase", phase,
           "--workdir", workdir, "--commits", str(args.commits), "--columns", str(args.columns)]
    proc = subprocess.run(cmd, stdout=subprocess.PIPE, text=True)
    if proc.returncode != 0:
        raise SystemExit(f"{system} {phase} failed (exit {proc.returncode}); its stderr is above")
    return json.loads(proc.stdout.strip().splitlines()[-1])


def report(args: argparse.Namespace, runs: dict[str, list[dict]]) -> None:
    keys = [k for k in ("rows_per_s", "first_read_s", "read_s", "probe_read_s", "key_read_s") if k in runs["raw-parquet"][0]]
    raw = runs["raw-parquet"]
    medians = {s: {k: statistics.median(r[k] for r in per_run) for k in keys} for s, per_run in runs.items()}
    ratios = {s: {k: statistics.median(a[k] / b[k] for a, b in zip(per_run, raw)) for k in keys}
              for s, per_run in runs.items()}
    for system, per_run in runs.items():
        print(json.dumps({"bench": "shapes", "workload": args.workload, "system": system, "commits": args.commits,
                          "columns": args.columns if args.workload == "wide" else None,
                          "median": medians[system], "vs_raw_parquet": ratios[system], "per_run": per_run,
                          "load_average_1m": round(os.getloadavg()[0], 2)}))
    width = max(28, *(len(s) + 2 for s in runs))
    print(f"\n{'system':<{width}}" + "".join(f"{k:>18}" for k in keys))
    for system in runs:
        print(f"{system:<{width}}" + "".join(f"{medians[system][k]:>18,.3f}" for k in keys))
        if system != "raw-parquet":
            print(f"{'  / raw Parquet':<{width}}" + "".join(f"{ratios[system][k]:>17.2f}x" for k in keys))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("workload", choices=sorted(WORKLOADS))
    parser.add_argument("--commits", type=int, default=100)
    parser.add_argument("--columns", type=int, default=200, help="wide: DOUBLE columns besides the key")
    parser.add_argument("--runs", type=int, default=3)
    parser.add_argument("--systems", help="comma-separated, of " + ", ".join(SYSTEMS) +
                        " (default: the ones each workload names above)")
    parser.add_argument("--child", choices=SYSTEMS, help=argparse.SUPPRESS)
    parser.add_argument("--phase", choices=("write", "read"), help=argparse.SUPPRESS)
    parser.add_argument("--workdir", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.child:
        child(args)
        return
    systems = args.systems.split(",") if args.systems else DEFAULT_SYSTEMS[args.workload]
    unknown = set(systems) - set(SYSTEMS)
    if unknown or "raw-parquet" not in systems:
        raise SystemExit(f"--systems: {sorted(unknown)} unknown (raw-parquet, the anchor, is needed)")
    runs: dict[str, list[dict]] = {s: [] for s in systems}
    for run in range(args.runs):
        for system in systems:  # interleaved: run 1 of each, then run 2 of each, ...
            workdir = tempfile.mkdtemp(prefix=f"bench-{args.workload}-{system}-")
            try:
                result = spawn(system, "write", workdir, args)
                result.update(spawn(system, "read", workdir, args))
            finally:
                shutil.rmtree(workdir, ignore_errors=True)
            runs[system].append(result)
            print(f"run {run + 1} {system}: " + ", ".join(f"{k}={v:.3f}" for k, v in result.items()),
                  file=sys.stderr, flush=True)
    report(args, runs)


if __name__ == "__main__":
    main()
