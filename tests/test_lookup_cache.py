"""The key index cache: indexes evicted from memory are spilled to local disk and memory-mapped
back with identical answers; bloom filters never rule out a key a file holds and let probes
skip files without loading them; the disk bound, the retention and the cleanup hold."""
from __future__ import annotations

import os
import subprocess
import sys
import time

import numpy as np
import pyarrow as pa
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from paimon_streaming.errors import InvalidOptionError
from paimon_streaming.lsm.lookup import (BatchKeys, BloomFilter, KeyIndex, KeyIndexCache, _mix64,
                                         env_options)
from paimon_streaming.types import from_arrow

INT = [from_arrow(pa.int64(), False)]
COMPOSITE = [from_arrow(pa.string(), False), from_arrow(pa.int32(), False)]


def int_keys(values) -> pa.Table:
    return pa.table({"k": pa.array(sorted(values), pa.int64())})


def composite_keys(pairs) -> pa.Table:
    return pa.table({"s": pa.array([p[0] for p in pairs], pa.string()),
                     "i": pa.array([p[1] for p in pairs], pa.int32())})


def brute_force(file_keys: pa.Table, batch_keys: pa.Table) -> np.ndarray:
    wanted = set(map(tuple, zip(*[c.to_pylist() for c in batch_keys.columns])))
    rows = list(zip(*[c.to_pylist() for c in file_keys.columns]))
    return np.array([i for i, r in enumerate(rows) if r in wanted], np.int64)


def tiny_cache(tmp_path, **kw) -> KeyIndexCache:
    """A cache whose memory tier holds one index, so every other index is spilled."""
    return KeyIndexCache(max_bytes=kw.pop("max_bytes", 1), directory=str(tmp_path / "spill"), **kw)


def spilled_answers(cache: KeyIndexCache, files: dict[str, pa.Table], types, batch: BatchKeys) -> dict:
    """Index every file through `cache` (spilling all but the last), then probe each again."""
    for name, keys in files.items():
        cache.get(name, lambda keys=keys: KeyIndex(keys, types))
    builds = cache.stats.builds

    def fail():
        raise AssertionError("an index on disk was rebuilt from the data file")
    answers = {name: cache.get(name, fail).positions_of(batch) for name in files}
    assert cache.stats.builds == builds
    return answers


int_lists = st.lists(st.integers(-2 ** 63, 2 ** 63 - 1), max_size=60)
pairs = st.tuples(st.text(max_size=6), st.integers(-2 ** 31, 2 ** 31 - 1))


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(files=st.lists(int_lists, min_size=2, max_size=4), batch=int_lists)
def test_spilled_int_indexes_answer_as_fresh_ones(tmp_path, files, batch):
    cache = tiny_cache(tmp_path)
    tables = {f"f{i}": int_keys(v) for i, v in enumerate(files)}
    probe = BatchKeys.of(int_keys(batch), INT)
    answers = spilled_answers(cache, tables, INT, probe)
    assert cache.stats.disk_hits >= len(tables) - 1
    for name, keys in tables.items():
        fresh = KeyIndex(keys, INT).positions_of(probe)
        assert np.array_equal(answers[name], fresh)
        assert np.array_equal(fresh, brute_force(keys, int_keys(batch)))
        assert np.array_equal(cache.positions(name, None, probe), fresh)   # bloom-first probe
    cache.clear()


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(files=st.lists(st.lists(pairs, max_size=40, unique=True), min_size=2, max_size=4),
       batch=st.lists(pairs, max_size=30), reuse=st.integers(0, 10))
def test_spilled_composite_indexes_answer_as_fresh_ones(tmp_path, files, batch, reuse):
    batch = batch + [p for f in files for p in f[:reuse]]     # some keys the files hold
    cache = tiny_cache(tmp_path)
    tables = {f"f{i}": composite_keys(sorted(v)) for i, v in enumerate(files)}
    probe = BatchKeys.of(composite_keys(batch), COMPOSITE)
    answers = spilled_answers(cache, tables, COMPOSITE, probe)
    for name, keys in tables.items():
        fresh = KeyIndex(keys, COMPOSITE).positions_of(probe)
        assert np.array_equal(answers[name], fresh)
        assert np.array_equal(fresh, brute_force(keys, composite_keys(batch)))
        assert np.array_equal(cache.positions(name, None, probe), fresh)
    cache.clear()


@settings(max_examples=60, deadline=None)
@given(keys=st.lists(st.integers(-2 ** 63, 2 ** 63 - 1), max_size=300),
       fpp=st.sampled_from([0.3, 0.05, 0.01]))
def test_bloom_filter_has_no_false_negatives(keys, fpp):
    hashes = _mix64(np.array(keys, np.int64))
    bloom = BloomFilter.of(hashes, fpp)
    assert bloom.may_contain(hashes).all()


def test_bloom_filter_false_positive_rate_at_ten_bits_a_key():
    rng = np.random.default_rng(7)
    values = rng.choice(2 ** 40, size=200_000, replace=False).astype(np.int64)
    held, other = values[:100_000], values[100_000:]
    bloom = BloomFilter.of(_mix64(held), 0.01)
    assert 9.5 <= bloom.num_bits / len(held) <= 10 and bloom.k == 7
    rate = bloom.may_contain(_mix64(other)).mean()
    assert rate < 0.015                                       # theory: 0.82 % at 9.6 bits, k = 7
    composite = BatchKeys.of(composite_keys([(f"k{i}", i) for i in range(20_000)]), COMPOSITE)
    half = len(composite.hashes) // 2
    bloom = BloomFilter.of(composite.hashes[:half], 0.01)
    assert bloom.may_contain(composite.hashes[:half]).all()
    assert bloom.may_contain(composite.hashes[half:]).mean() < 0.02


def test_bloom_rules_out_a_file_without_loading_it(tmp_path):
    cache = tiny_cache(tmp_path)
    builds = []

    def load(values):
        def build():
            builds.append(1)
            return KeyIndex(int_keys(values), INT)
        return build
    cache.get("a", load(range(0, 1000, 2)))                    # even keys
    cache.get("b", load(range(1, 1000, 2)))                    # odd keys; "a" is spilled
    odd = BatchKeys.of(int_keys([3, 5, 7]), INT)

    def no_load():
        raise AssertionError("loaded an index its bloom filter rules out")
    disk_hits = cache.stats.disk_hits
    assert len(cache.positions("a", no_load, odd)) == 0
    assert cache.stats.bloom_skips == 1 and cache.stats.disk_hits == disk_hits
    assert list(cache.positions("b", no_load, odd)) == [1, 2, 3]
    assert list(cache.positions("a", no_load, BatchKeys.of(int_keys([4, 5]), INT))) == [2]   # from disk
    assert cache.stats.disk_hits == disk_hits + 1 and len(builds) == 2
    cache.get("b", load(range(1, 1000, 2)))                    # "a" leaves memory again ...
    cache.configure({"lookup.cache-max-disk-size": "0 b"})     # ... and the disk: its bloom stays
    assert "a" not in cache._items and cache.disk_bytes == 0
    assert len(cache.positions("a", no_load, odd)) == 0 and cache.stats.bloom_skips == 2
    off = tiny_cache(tmp_path, bloom=False)
    off.get("a", load(range(0, 1000, 2)))
    assert len(off.positions("a", no_load, odd)) == 0 and off.stats.bloom_skips == 0
    cache.clear()
    off.clear()


def test_disk_bound_and_retention(tmp_path):
    one = KeyIndex(int_keys(range(1000)), INT)
    size = one.save(str(tmp_path / "probe.arrow"))
    cache = tiny_cache(tmp_path, max_disk_bytes=3 * size + size // 2)
    for i in range(8):
        cache.get(f"f{i}", lambda: KeyIndex(int_keys(range(1000)), INT))
    files = os.listdir(cache.directory)
    assert len(files) == 3 and cache.disk_bytes == 3 * size <= cache.max_disk_bytes
    assert sum(os.path.getsize(os.path.join(cache.directory, f)) for f in files) == cache.disk_bytes
    builds = cache.stats.builds
    cache.get("f4", lambda: one)                               # the newest spilled ones are on disk
    assert cache.stats.builds == builds and cache.stats.disk_hits == 1
    cache.get("f0", lambda: one)                               # the oldest was dropped: rebuilt
    assert cache.stats.builds == builds + 1
    cache.configure({"lookup.cache-file-retention": "1 ms"})
    time.sleep(0.01)
    cache.get("f5", lambda: one)                               # expired: rebuilt, files removed
    assert cache.stats.builds == builds + 2
    assert len(os.listdir(cache.directory)) <= 1
    cache.configure({"lookup.cache-max-disk-size": "0 b"})
    assert cache.disk_bytes == 0 and os.listdir(cache.directory) == []
    directory = cache.directory
    cache.clear()
    assert not os.path.exists(directory)


def test_memory_bound_holds(tmp_path):
    size = KeyIndex(int_keys(range(1000)), INT).nbytes
    assert 8000 < size < 9000
    cache = tiny_cache(tmp_path, max_bytes=3 * size + 100)
    for i in range(10):
        cache.get(f"f{i}", lambda: KeyIndex(int_keys(range(1000)), INT))
    assert len(cache._items) == 3 and cache.stats.spills == 7
    cache.clear()


def test_a_cyclic_scan_over_more_indexes_than_memory_keeps_hitting_memory(tmp_path):
    """A lookup probes every file of a bucket each batch: with 5 indexes and room for 3, plain
    LRU would evict each index just before its next probe and never hit memory. Indexes read
    back from disk do not push resident ones out, so 3 of every 5 probes stay in memory."""
    values = {f"f{i}": range(i * 1000, i * 1000 + 1000) for i in range(5)}
    size = KeyIndex(int_keys(values["f0"]), INT).nbytes
    cache = tiny_cache(tmp_path, max_bytes=3 * size + 100)
    probe = BatchKeys.of(int_keys([1500, 3999, 4000, 4001]), INT)

    def fail():
        raise AssertionError("an index on disk was rebuilt from the data file")
    for name, v in values.items():
        cache.get(name, lambda v=v: KeyIndex(int_keys(v), INT))
    for _ in range(4):
        hits = cache.stats.memory_hits
        answers = {name: list(cache.positions(name, fail, probe)) for name in values}
        assert answers == {"f0": [], "f1": [500], "f2": [], "f3": [999], "f4": [0, 1]}
        assert cache.stats.memory_hits - hits == 3
    assert cache._bytes <= cache.max_bytes and cache.stats.builds == 5
    cache.clear()


def test_a_damaged_spill_file_is_rebuilt_from_the_data_file(tmp_path):
    cache = tiny_cache(tmp_path)
    cache.get("a", lambda: KeyIndex(int_keys(range(0, 100, 2)), INT))
    cache.get("b", lambda: KeyIndex(int_keys(range(1, 100, 2)), INT))      # "a" is spilled
    (path,) = [os.path.join(cache.directory, f) for f in os.listdir(cache.directory)]
    with open(path, "r+b") as f:
        f.truncate(os.path.getsize(path) - 8)                       # the last key, exactly
    builds = cache.stats.builds
    index = cache.get("a", lambda: KeyIndex(int_keys(range(0, 100, 2)), INT))
    assert cache.stats.builds == builds + 1
    assert list(index.positions_of(BatchKeys.of(int_keys([4, 98]), INT))) == [2, 49]
    cache.clear()


def test_discarded_indexes_leave_every_tier(tmp_path):
    """Indexes of files compaction removed are dropped from memory, disk and bloom filters
    at once: nothing is spilled for them, and live indexes keep their room."""
    size = KeyIndex(int_keys(range(1000)), INT).nbytes
    cache = tiny_cache(tmp_path, max_bytes=3 * size + 100)
    for i in range(5):                      # f0, f1 spilled (with bloom filters); f2-f4 in memory
        cache.get(f"f{i}", lambda: KeyIndex(int_keys(range(1000)), INT))
    spills, disk = cache.stats.spills, cache.disk_bytes
    assert spills == 2 and disk > 0
    cache.discard(["f0", "f3", "unknown"])
    assert set(cache._items) == {"f2", "f4"} and cache._bytes == 2 * size
    assert set(cache._disk) == {"f1"} and cache.disk_bytes == disk // 2 and len(os.listdir(cache.directory)) == 1
    assert set(cache._blooms) == {"f1"}
    cache.get("f5", lambda: KeyIndex(int_keys(range(1000)), INT))    # fits: nothing evicted
    assert cache.stats.spills == spills
    cache.clear()


def test_compaction_discards_the_indexes_of_files_it_removes(tmp_path):
    """After a deletion-vector batch, the process cache holds indexes of live files only."""
    import paimon_streaming as ps
    from paimon_streaming.lsm.lookup import KEY_INDEXES
    schema = pa.schema([pa.field("k", pa.int64(), False), ("v", pa.string())])
    t = ps.Catalog(str(tmp_path / "wh")).create_table(
        "db.t", schema, primary_keys=["k"], options={"bucket": "1", "deletion-vectors.enabled": "true"})
    for step in range(8):
        keys = list(range(0, 400, 3 + step))           # overlapping keys: runs merge, files go
        t.write_arrow(pa.table({"k": pa.array(keys, pa.int64()), "v": [f"s{step}"] * len(keys)}, schema=schema))
    live = {f.file_name for split in t.plan(t.latest_snapshot()) for f in split.files}
    cached = set(KEY_INDEXES._items) | set(KEY_INDEXES._disk)
    mine = {n for n in cached if n.startswith("data-") and os.path.exists(
        os.path.join(t.path, "bucket-0", n))}
    assert mine and mine <= live, mine - live


def test_spill_directory_is_removed_at_exit(tmp_path):
    parent = tmp_path / "parent"
    code = (
        "import pyarrow as pa\n"
        "from paimon_streaming.lsm.lookup import KEY_INDEXES, KeyIndex\n"
        "from paimon_streaming.types import from_arrow\n"
        "t = [from_arrow(pa.int64(), False)]\n"
        "for i in range(3):\n"
        "    KEY_INDEXES.get(f'f{i}', lambda: KeyIndex(pa.table({'k': pa.array(range(100), pa.int64())}), t))\n"
        "print(KEY_INDEXES.directory, len(__import__('os').listdir(KEY_INDEXES.directory)))\n")
    env = {**os.environ, "PAIMON_LOOKUP_CACHE_MAX_MEMORY_SIZE": "1 b", "PAIMON_LOOKUP_CACHE_DIR": str(parent)}
    out = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True, check=True)
    directory, count = out.stdout.split()
    assert directory.startswith(str(parent)) and int(count) == 2   # spilled while the process ran
    assert not os.path.exists(directory) and os.listdir(parent) == []
    # a process killed before its exit handlers ran leaves a directory: the next one removes it
    stale = parent / "paimon-key-index-999999999-x"
    stale.mkdir()
    subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True, check=True)
    assert not stale.exists()


def test_options_from_environment_and_validation():
    env = {"PAIMON_LOOKUP_CACHE_MAX_MEMORY_SIZE": "1 gb", "PAIMON_LOOKUP_CACHE_MAX_DISK_SIZE": "2 gb",
           "PAIMON_LOOKUP_CACHE_FILE_RETENTION": "10 min", "PAIMON_LOOKUP_CACHE_BLOOM_FILTER_ENABLED": "false",
           "PAIMON_LOOKUP_CACHE_BLOOM_FILTER_FPP": "0.05", "UNRELATED": "x"}
    cache = KeyIndexCache.from_options(env_options(env))
    assert (cache.max_bytes, cache.max_disk_bytes, cache.retention_ms, cache.bloom_enabled, cache.bloom_fpp) == \
        (1 << 30, 2 << 30, 600_000, False, 0.05)
    defaults = KeyIndexCache()
    assert (defaults.max_bytes, defaults.retention_ms, defaults.bloom_enabled) == (256 << 20, 3_600_000, True)
    for key, bad in (("lookup.cache.bloom.filter.fpp", "1.5"), ("lookup.cache-max-memory-size", "lots")):
        with pytest.raises(InvalidOptionError, match=key) as err:
            KeyIndexCache().configure({key: bad})
        assert "PAIMON_LOOKUP_CACHE_" in str(err.value)


def test_concurrent_probes_under_pressure_answer_exactly(tmp_path):
    """Threads probing while indexes are evicted, spilled, dropped from disk and reloaded."""
    from concurrent.futures import ThreadPoolExecutor
    rng = np.random.default_rng(5)
    files = {f"f{i}": np.sort(rng.choice(50_000, 2_000, replace=False)) for i in range(20)}
    size = KeyIndex(int_keys(files["f0"]), INT).nbytes
    cache = tiny_cache(tmp_path, max_bytes=2 * size, max_disk_bytes=5 * size)
    batches = [np.sort(rng.choice(50_000, int(n), replace=False)) for n in rng.integers(1, 300, 40)]
    expected = {(name, b): np.flatnonzero(np.isin(keys, batches[b])) for name, keys in files.items()
                for b in range(len(batches))}

    def work(seed: int) -> int:
        r = np.random.default_rng(seed)
        for _ in range(150):
            name, b = f"f{r.integers(20)}", int(r.integers(len(batches)))
            got = cache.positions(name, lambda name=name: KeyIndex(int_keys(files[name]), INT),
                                  BatchKeys.of(int_keys(batches[b]), INT))
            assert np.array_equal(got, expected[(name, b)]), (name, b)
        return 150
    with ThreadPoolExecutor(8) as pool:
        assert sum(pool.map(work, range(8))) == 1200
    s = cache.stats
    assert s.disk_hits and s.builds > 20 and s.spills and s.bloom_skips   # every path was taken
    assert cache.disk_bytes <= cache.max_disk_bytes
    assert len(os.listdir(cache.directory)) == len(cache._disk)
    cache.clear()


def test_bloom_filters_stay_within_their_bound(tmp_path):
    """Bloom filters of spilled indexes are an LRU of their own: beyond `bloom_max_bytes` the
    oldest go (that file's probes then read its index from disk, answering alike)."""
    bloom = BloomFilter.of(KeyIndex(int_keys(range(1000)), INT).bloom_hashes, 0.01)
    cache = tiny_cache(tmp_path, bloom_max_bytes=2 * bloom.nbytes + 1)
    for i in range(5):
        cache.get(f"f{i}", lambda i=i: KeyIndex(int_keys(range(i * 1000, i * 1000 + 1000)), INT))
    assert list(cache._blooms) == ["f2", "f3"] and cache._bloom_bytes == 2 * bloom.nbytes

    def fail():
        raise AssertionError("an index on disk was rebuilt from the data file")
    assert list(cache.positions("f0", fail, BatchKeys.of(int_keys([5, 1005]), INT))) == [5]
    cache.clear()


def test_a_failed_spill_costs_a_rebuild_never_a_failed_lookup(tmp_path, monkeypatch):
    def full_disk(self, path):
        with open(path, "wb") as f:
            f.write(b"partial")
        raise OSError(28, "No space left on device")
    monkeypatch.setattr(KeyIndex, "save", full_disk)
    cache = tiny_cache(tmp_path)
    cache.get("a", lambda: KeyIndex(int_keys(range(0, 100, 2)), INT))
    cache.get("b", lambda: KeyIndex(int_keys(range(1, 100, 2)), INT))      # "a" leaves memory: no spill
    assert cache.stats.spills == 0 and cache.disk_bytes == 0 and os.listdir(cache.directory) == []
    index = cache.get("a", lambda: KeyIndex(int_keys(range(0, 100, 2)), INT))
    assert cache.stats.builds == 3 and list(index.positions_of(BatchKeys.of(int_keys([4, 5]), INT))) == [2]
    cache.clear()


def test_a_forked_child_leaves_its_parents_spill_files_alone(tmp_path):
    cache = tiny_cache(tmp_path)
    cache.get("a", lambda: KeyIndex(int_keys(range(0, 100, 2)), INT))
    cache.get("b", lambda: KeyIndex(int_keys(range(1, 100, 2)), INT))      # "a" spilled by the "parent"
    parent_dir = cache.directory
    parent_files = os.listdir(parent_dir)
    cache._pid = os.getpid() + 1                                           # as a forked child sees it
    builds = cache.stats.builds
    cache.get("a", lambda: KeyIndex(int_keys(range(0, 100, 2)), INT))      # not the parent's file: rebuilt
    assert cache.stats.builds == builds + 1 and cache._pid == os.getpid()
    cache.get("c", lambda: KeyIndex(int_keys(range(5)), INT))              # spills into a directory of its own
    assert cache.directory != parent_dir and os.listdir(parent_dir) == parent_files
    cache.clear()
    assert os.listdir(parent_dir) == parent_files


def test_spill_directories_of_dead_processes_are_removed(tmp_path):
    """Spark kills idle Python workers without their exit handlers: the next cache to spill
    under the same parent removes the directories of processes that are gone, and only those."""
    parent = tmp_path / "spill"
    dead = subprocess.Popen([sys.executable, "-c", "pass"])
    dead.wait()
    for name in (f"paimon-key-index-{dead.pid}-x", f"paimon-key-index-{os.getpid()}-y", "paimon-key-index-z",
                 "unrelated"):
        (parent / name).mkdir(parents=True)
        (parent / name / "f.ints").write_bytes(b"\0" * 8)
    cache = tiny_cache(tmp_path)
    cache.get("a", lambda: KeyIndex(int_keys(range(10)), INT))
    cache.get("b", lambda: KeyIndex(int_keys(range(10)), INT))             # the first spill
    assert sorted(os.listdir(parent)) == sorted([f"paimon-key-index-{os.getpid()}-y", "paimon-key-index-z",
                                                 "unrelated", os.path.basename(cache.directory)])
    cache.clear()
