"""The in-memory rows of recently compacted intermediate files (paimon_streaming/lsm/recent_rows.py)."""
from __future__ import annotations

import os

import pyarrow as pa

import paimon_streaming as ps
from paimon_streaming import evolution
from paimon_streaming.lsm.recent_rows import RECENT_ROWS, RecentRows

SCHEMA = pa.schema([pa.field("k", pa.int64(), False), ("v", pa.string())])


def rows(n: int, tag: str = "x") -> pa.Table:
    return pa.table({"k": pa.array(range(n), pa.int64()), "v": [tag] * n}, schema=SCHEMA)


def test_bounded_lru_and_discard():
    one = rows(100)
    cache = RecentRows(max_bytes=int(one.nbytes * 2.5))
    for name in ("a", "b"):
        cache.put(name, one)
    assert cache.get("a") is one              # a is now the most recent
    cache.put("c", one)                        # over the bound: the least recent (b) goes
    assert "b" not in cache and "a" in cache and "c" in cache
    assert cache.nbytes == 2 * one.nbytes
    cache.discard(["a", "missing"])
    assert "a" not in cache and cache.nbytes == one.nbytes
    cache.put("huge", rows(1000))              # larger than the whole bound: not kept
    assert "huge" not in cache and "c" in cache
    half = rows(50)
    cache.put("c", half)                       # a file kept again: its old rows' bytes are released
    assert cache.get("c") is half and cache.nbytes == half.nbytes
    off = RecentRows(max_bytes=0)
    off.put("a", one)
    assert "a" not in off


def test_compaction_reuses_intermediate_rows_and_forgets_removed_files(tmp_path, monkeypatch):
    """Small update batches on a larger table leave runs below the top level; the next batch
    merges them from memory (no data file read), files compaction removes leave the cache, and
    the table reads as the batches say."""
    t = ps.Catalog(str(tmp_path / "wh")).create_table(
        "db.t", SCHEMA, primary_keys=["k"], options={"bucket": "1", "deletion-vectors.enabled": "true"})
    reads = []
    real = evolution.read_data_file  # how compaction reads a file (through the schema-evolution reader)
    monkeypatch.setattr(evolution, "read_data_file", lambda io, path, *a: reads.append(path) or real(io, path, *a))
    expected = {}
    intermediate, merged = set(), set()
    for step in range(8):
        keys = range(0, 3000) if step == 0 else range(step, 3000, 97 + step)
        batch = pa.table({"k": pa.array(keys, pa.int64()), "v": [f"s{step}"] * len(keys)}, schema=SCHEMA)
        expected.update(zip(batch.column("k").to_pylist(), batch.column("v").to_pylist()))
        t.write_arrow(batch)
        live = {f.file_name: f.level for split in t.plan(t.latest_snapshot()) for f in split.files}
        merged |= intermediate - set(live)
        intermediate = {n for n, level in live.items() if 0 < level < 5}
        assert intermediate <= {n for n in intermediate if n in RECENT_ROWS}
        assert not {n for n in list(RECENT_ROWS._items) if n.startswith("data-")
                    and os.path.exists(os.path.join(t.path, "bucket-0", n)) and n not in live}
    assert merged, "the scenario must merge intermediate runs again"
    assert not merged & {os.path.basename(p) for p in reads}
    assert {(r["k"], r["v"]) for r in t.to_arrow().to_pylist()} == set(expected.items())
