"""W1 and W2 (bench_core.py's workloads) on a store with a round-trip time per request, the
way an object store answers: what a remote table costs in waiting rather than in CPU.

The store is the local filesystem behind a pyarrow `PyFileSystem` that sleeps `--rtt-ms`
on every request: an open, a listing or a metadata lookup, each ranged read of an open file,
and the completion of each upload. It counts the requests, so the output says how many round
trips a batch or a read takes, and how much of its time they are. The anchor is raw pyarrow
Parquet on the same store, in the same run: each batch written as one Parquet file, the files
read back with `pq.read_table`. Reads run in a fresh process, as a separate job's would.

    .venv/bin/python bench/bench_object_store.py                 # 20 ms, 10 batches, 3 runs
    .venv/bin/python bench/bench_object_store.py --rtt-ms 50 --batches 5

Real stores differ (S3 first-byte latency is often 10-50 ms, a PUT more); the figures show
how the number of sequential round trips, not bandwidth, sets the time of small batches.
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
import threading
import time

import pyarrow as pa
import pyarrow.fs as pafs
import pyarrow.parquet as pq

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from bench_core import SCHEMA, make_batch  # noqa: E402  (same workload as the core bench)


class RoundTripStore(pafs.FileSystemHandler):
    """The local filesystem, with `rtt` seconds of waiting per request (see module docstring)."""

    def __init__(self, rtt: float):
        self.local = pafs.LocalFileSystem()
        self.rtt = rtt
        self.requests = 0
        self._lock = threading.Lock()

    def request(self) -> None:
        with self._lock:
            self.requests += 1
        time.sleep(self.rtt)

    def __eq__(self, other):
        return isinstance(other, RoundTripStore) and other.rtt == self.rtt

    def __ne__(self, other):
        return not self == other

    def get_type_name(self) -> str:
        return "round-trip"

    def normalize_path(self, path: str) -> str:
        return path

    def get_file_info(self, paths):
        self.request()
        return self.local.get_file_info(paths)

    def get_file_info_selector(self, selector):
        self.request()
        return self.local.get_file_info(selector)

    def create_dir(self, path, recursive):
        self.local.create_dir(path, recursive=recursive)  # object stores have no directories to create

    def delete_dir(self, path):
        self.request()
        self.local.delete_dir(path)

    def delete_dir_contents(self, path, missing_dir_ok=False):
        self.request()
        self.local.delete_dir_contents(path, missing_dir_ok=missing_dir_ok)

    def delete_root_dir_contents(self):
        raise NotImplementedError

    def delete_file(self, path):
        self.request()
        self.local.delete_file(path)

    def move(self, src, dest):
        self.request()
        self.local.move(src, dest)

    def copy_file(self, src, dest):
        self.request()
        self.local.copy_file(src, dest)

    def open_input_stream(self, path):
        self.request()
        return self.local.open_input_stream(path)

    def open_input_file(self, path):
        self.request()
        return pa.PythonFile(_RangedReads(self.local.open_input_file(path), self), mode="r")

    def open_output_stream(self, path, metadata):
        return pa.PythonFile(_Upload(self.local.open_output_stream(path), self), mode="w")

    def open_append_stream(self, path, metadata):
        raise NotImplementedError


class _StoreFile:
    """A local file seen through the store: what pa.PythonFile asks of a file object."""
    reading = False

    def __init__(self, file, store: RoundTripStore):
        self.file, self.store, self.closed = file, store, False

    def tell(self):
        return self.file.tell()

    def readable(self):
        return self.reading

    def seekable(self):
        return self.reading

    def writable(self):
        return not self.reading


class _RangedReads(_StoreFile):
    """An open object: every read is one ranged GET."""
    reading = True

    def read(self, n=-1):
        self.store.request()
        return self.file.read() if n is None or n < 0 else self.file.read(n)

    def seek(self, pos, whence=0):
        return self.file.seek(pos, whence)

    def size(self):
        return self.file.size()

    def close(self):
        self.closed = True
        self.file.close()


class _Upload(_StoreFile):
    """An upload: the object exists once close() returns, one round trip later."""

    def write(self, data):
        return self.file.write(data)

    def flush(self):
        pass

    def close(self):
        if not self.closed:
            self.closed = True
            self.file.close()
            self.store.request()


def run_ours(store: RoundTripStore, root: str, batches: int, rows: int, seed: int) -> dict:
    import paimon_streaming as ps
    fs = pafs.PyFileSystem(store)
    table = ps.Catalog(root, filesystem=fs).create_table(
        "db.w1", schema=SCHEMA, primary_keys=["id"], options={"bucket": "4", "deletion-vectors.enabled": "true"})
    latencies, requests = [], []
    for i in range(batches):
        batch = make_batch(seed, rows, i)
        store.requests = 0
        start = time.perf_counter()
        table.write_arrow(batch, commit_user="bench-remote", commit_identifier=i)
        latencies.append(time.perf_counter() - start)
        requests.append(store.requests)
    return {"batch_s": latencies, "batch_requests": requests, **read_in_child("paimon-streaming-dv", root, store.rtt)}


def run_raw(store: RoundTripStore, root: str, batches: int, rows: int, seed: int) -> dict:
    fs = pafs.PyFileSystem(store)
    latencies, requests, paths = [], [], []
    for i in range(batches):
        batch = make_batch(seed, rows, i)
        paths.append(f"{root}/batch-{i:05d}.parquet")
        store.requests = 0
        start = time.perf_counter()
        pq.write_table(batch, paths[-1], filesystem=fs)
        latencies.append(time.perf_counter() - start)
        requests.append(store.requests)
    return {"batch_s": latencies, "batch_requests": requests, **read_in_child("raw-parquet", root, store.rtt)}


def read_in_child(system: str, root: str, rtt: float) -> dict:
    """The full read, by a fresh process (as a separate job reads a table: no cached metadata)."""
    proc = subprocess.run([sys.executable, os.path.abspath(__file__), "--read", system, root, "--rtt-ms",
                           str(rtt * 1000)], stdout=subprocess.PIPE, text=True, check=True)
    return json.loads(proc.stdout.strip().splitlines()[-1])


def read(system: str, root: str, rtt: float) -> dict:
    import paimon_streaming as ps
    store = RoundTripStore(rtt)
    fs = pafs.PyFileSystem(store)
    start = time.perf_counter()
    if system == "raw-parquet":
        out = pq.read_table(sorted(f"{root}/{n}" for n in os.listdir(root)), filesystem=fs)
    else:
        out = ps.Catalog(root, filesystem=fs).get_table("db.w1").to_arrow()
    return {"read_s": time.perf_counter() - start, "read_requests": store.requests, "read_rows": out.num_rows}


def main(argv: list[str] | None = None) -> None:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--rtt-ms", type=float, default=20.0, help="waiting per request (default 20)")
    p.add_argument("--batches", type=int, default=10)
    p.add_argument("--rows", type=int, default=200_000)
    p.add_argument("--runs", type=int, default=3)
    p.add_argument("--seed", type=int, default=20240601)
    p.add_argument("--read", nargs=2, metavar=("SYSTEM", "ROOT"), help=argparse.SUPPRESS)
    args = p.parse_args(argv)
    if args.read:
        print(json.dumps(read(*args.read, args.rtt_ms / 1000)))
        sys.stdout.flush()
        os._exit(0)
    os.environ.setdefault("PAIMON_SINGLE_COMMITTER", "true")  # the stand-in store has no conditional create
    results: dict[str, list[dict]] = {"raw-parquet": [], "paimon-streaming-dv": []}
    for _ in range(args.runs):
        for name, run in (("raw-parquet", run_raw), ("paimon-streaming-dv", run_ours)):
            root = tempfile.mkdtemp(prefix=f"bench-remote-{name}-")
            try:
                results[name].append(run(RoundTripStore(args.rtt_ms / 1000), root, args.batches, args.rows,
                                         args.seed))
            finally:
                shutil.rmtree(root, ignore_errors=True)
    print(f"W1 {args.batches} x {args.rows:,} rows and a full read, {args.rtt_ms:g} ms per request, "
          f"median of {args.runs} run(s) (load average {os.getloadavg()[0]:.1f})")
    print(f"{'system':<22}{'batch s':>9}{'requests/batch':>16}{'waiting share':>15}{'read s':>9}"
          f"{'read requests':>15}{'read rows':>11}")
    medians = {}
    for name, runs in results.items():
        batch_s = statistics.median(statistics.median(r["batch_s"][1:] or r["batch_s"]) for r in runs)
        reqs = statistics.median(statistics.median(r["batch_requests"][1:] or r["batch_requests"]) for r in runs)
        read_s = statistics.median(r["read_s"] for r in runs)
        read_reqs = statistics.median(r["read_requests"] for r in runs)
        medians[name] = (batch_s, read_s)
        waiting = reqs * args.rtt_ms / 1000 / batch_s
        print(f"{name:<22}{batch_s:>9.3f}{reqs:>16.0f}{waiting:>14.0%}{read_s:>9.3f}{read_reqs:>15.0f}"
              f"{runs[0]['read_rows']:>11,}")
    ours, raw = medians["paimon-streaming-dv"], medians["raw-parquet"]
    print(f"\nours / raw Parquet on the same store: batch time x{ours[0] / raw[0]:.2f}, read time x{ours[1] / raw[1]:.2f}"
          " (batches after the first; 'waiting share' counts requests as if sequential, so over 100% means"
          " they overlapped)")
    sys.stdout.flush()
    os._exit(0)  # pyarrow may abort at exit while Python-implemented files are torn down


if __name__ == "__main__":
    main()
