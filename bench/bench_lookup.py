"""Key index cache micro-benchmark: what one lookup probe of a batch against one data file costs
when the file's key index is in memory, spilled on local disk (read back), rebuilt
from the Parquet file, or ruled out by the file's bloom filter; how often a bloom filter rules
out a batch of absent keys, by batch size; and the filters' false-positive rate at ~10 bits a
key (`lookup.cache.bloom.filter.fpp` = 0.01).

    .venv/bin/python bench/bench_lookup.py                    # 1M-row file, 1,000-key batches
    .venv/bin/python bench/bench_lookup.py --rows 200000 --batch 100

Median of `--repeat` probes each; the disk figure includes reading the spill file back
(the page cache is warm, as it is on an executor that spilled the index recently).
"""
from __future__ import annotations

import argparse
import os
import statistics
import tempfile
import time

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq

from paimon_streaming.lsm.lookup import BatchKeys, BloomFilter, KeyIndex, KeyIndexCache
from paimon_streaming.types import from_arrow


def timed(fn, repeat: int) -> float:
    times = []
    for _ in range(repeat):
        t0 = time.perf_counter()
        fn()
        times.append(time.perf_counter() - t0)
    return statistics.median(times) * 1000


def as_keys(kind: str, values: np.ndarray) -> pa.Table:
    if kind == "bigint":
        return pa.table({"k": pa.array(values, pa.int64())})
    return pa.table({"k": pa.array([f"user-{v:012d}" for v in values])})


def run(kind: str, rows: int, batch: int, repeat: int, work: str) -> None:
    rng = np.random.default_rng(1)
    held = np.sort(rng.choice(rows * 4, size=rows, replace=False)).astype(np.int64)
    types = [from_arrow(pa.int64() if kind == "bigint" else pa.string(), False)]
    hit = BatchKeys.of(as_keys(kind, np.sort(rng.choice(held, batch, replace=False))), types)
    data = os.path.join(work, f"{kind}.parquet")
    pq.write_table(as_keys(kind, held).append_column("v", pa.array(rng.random(rows))), data)

    def build() -> KeyIndex:
        return KeyIndex(pq.read_table(data, columns=["k"]), types)
    index = build()
    spill = os.path.join(work, kind + index.spill_suffix)
    size = index.save(spill)
    assert len(index.positions_of(hit)) == batch
    assert np.array_equal(KeyIndex.load(spill).positions_of(hit), index.positions_of(hit))
    memory = timed(lambda: index.positions_of(hit), repeat)
    disk = timed(lambda: KeyIndex.load(spill).positions_of(hit), repeat)
    rebuilt = timed(lambda: build().positions_of(hit), max(3, repeat // 10))
    print(f"{kind:>6} keys, {rows:,}-row file, {batch:,}-key batch of present keys: probe with the index in "
          f"memory {memory:.3f} ms | on disk {disk:.3f} ms | rebuilt from Parquet {rebuilt:.1f} ms "
          f"(index {index.nbytes / 2**20:.1f} MiB, spill file {size / 2**20:.1f} MiB)")

    cache = KeyIndexCache(max_bytes=1, directory=work)          # holds one index: "f" goes to disk
    cache.get("f", lambda: index)
    cache.get("other", lambda: KeyIndex(as_keys(kind, held[:10]), types))
    absent_pool = np.setdiff1d(np.arange(rows * 4), held)
    for size in (1, 10, 100, 1000):
        batches = [BatchKeys.of(as_keys(kind, np.sort(rng.choice(absent_pool, size, replace=False))), types)
                   for _ in range(200)]
        skipped, loaded = [], []
        for b in batches:
            cache.get("other", build)                           # "f" back to disk only
            before = cache.stats.bloom_skips
            t0 = time.perf_counter()
            assert len(cache.positions("f", build, b)) == 0
            (skipped if cache.stats.bloom_skips > before else loaded).append(time.perf_counter() - t0)
        ms = lambda xs: f"{statistics.median(xs) * 1000:.3f} ms" if xs else "-"  # noqa: E731
        print(f"        batch of {size:>4} absent keys, index on disk: the bloom filter rules out "
              f"{100 * len(skipped) / len(batches):3.0f} % of batches; probe {ms(skipped)} when ruled out, "
              f"{ms(loaded)} when loaded from disk")
    cache.clear()


def false_positive_rate(n: int) -> None:
    rng = np.random.default_rng(3)
    values = rng.choice(2 ** 40, size=2 * n, replace=False).astype(np.int64)
    for kind in ("bigint", "string"):
        types = [from_arrow(pa.int64() if kind == "bigint" else pa.string(), False)]
        h_in = BatchKeys.of(as_keys(kind, values[:n]), types).bloom_hashes
        h_out = BatchKeys.of(as_keys(kind, values[n:]), types).bloom_hashes
        bloom = BloomFilter.of(h_in, 0.01)
        t0 = time.perf_counter()
        rate = bloom.may_contain(h_out).mean()
        check = (time.perf_counter() - t0) / n * 1e9
        print(f"bloom {kind:>6}: {bloom.num_bits / n:.2f} bits/key, k={bloom.k}, false positives "
              f"{100 * rate:.3f} % of {n:,} absent keys (theory {100 * bloom.fpp:.3f} %), {check:.0f} ns/key "
              f"to check, no false negative: {bool(bloom.may_contain(h_in).all())}")


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--rows", type=int, default=1_000_000)
    p.add_argument("--batch", type=int, default=1_000)
    p.add_argument("--repeat", type=int, default=30)
    args = p.parse_args()
    with tempfile.TemporaryDirectory() as work:
        for kind in ("bigint", "string"):
            run(kind, args.rows, args.batch, args.repeat, work)
    false_positive_rate(min(args.rows, 1_000_000))


if __name__ == "__main__":
    main()
