"""Dynamic bucket mode (bucket = -1 primary-key tables): HASH index files kept per commit."""
from __future__ import annotations

import numpy as np
import pyarrow as pa

from paimon_streaming.dynamic_bucket import read_hash_file
from paimon_streaming.scan import TableScan
from conftest import pypaimon_read, pypaimon_write

SCHEMA = pa.schema([("id", pa.int64(), False), ("v", pa.string()), ("p", pa.string(), False)])


def batch(ids, tag, p="a"):
    return pa.table({"id": ids, "v": [f"{tag}{i}" for i in ids], "p": [p] * len(ids)}, schema=SCHEMA)


def hash_index(table):
    latest = table.latest_snapshot()
    scan = TableScan(table.file_io, table.path, table.schema)
    out = {}
    for e in scan.index_manifest.read(latest.index_manifest):
        out[(e.partition, e.bucket)] = read_hash_file(table.file_io, f"{table.path}/index/{e.index_file.file_name}",
                                                      e.index_file)
    return out


def test_known_example_buckets(catalog):
    """FORMAT §7.2: keys 0,1,2,42,-7 with target-row-num 2 fill buckets 0,1,2 in order."""
    t = catalog.create_table("db.ex", pa.schema([("k", pa.int64(), False)]), primary_keys=["k"],
                             options={"bucket": "-1", "dynamic-bucket.target-row-num": "2"})
    t.write_arrow(pa.table({"k": [0, 1, 2, 42, -7]}))
    index = {b: sorted(h.tolist()) for (_, b), h in hash_index(t).items()}
    assert index == {0: sorted([-300363099, 1465514398]), 1: sorted([907821237, 1340390384]), 2: [1145478327]}
    assert all(e.total_buckets == -1 for e in TableScan(t.file_io, t.path, t.schema).live_entries(t.latest_snapshot()))


def test_dynamic_bucket_upserts_interop(catalog, warehouse):
    t = catalog.create_table("db.dyn", SCHEMA, primary_keys=["id", "p"], partition_keys=["p"],
                             options={"bucket": "-1", "dynamic-bucket.target-row-num": "100"})
    model = {}
    rng = np.random.default_rng(1)
    for step in range(6):
        ids = rng.integers(0, 400, 150).tolist()
        b = batch(ids, f"s{step}-", p="a" if step % 3 else "b")
        if step in (2, 4):
            pypaimon_write(warehouse, "db.dyn", b)
        else:
            catalog.get_table("db.dyn").write_arrow(b)
        model.update({(r["id"], r["p"]): r["v"] for r in b.to_pylist()})
        t = catalog.get_table("db.dyn")
        assert {(r["id"], r["p"]): r["v"] for r in t.to_arrow().to_pylist()} == model
        assert {(r["id"], r["p"]): r["v"] for r in pypaimon_read(warehouse, "db.dyn").to_pylist()} == model
    index = hash_index(catalog.get_table("db.dyn"))
    for hashes in index.values():
        assert len(hashes) <= 100 and len(set(hashes.tolist())) == len(hashes)
    # every key's hash is in exactly one bucket of its partition
    total = sum(len(h) for h in index.values())
    assert total == len(model)


def test_max_buckets_caps_each_partition(catalog):
    """`dynamic-bucket.max-buckets`: past it, new keys go round the partition's buckets (Java
    picks one at random); every key stays in one bucket, and updates find it."""
    t = catalog.create_table("db.cap", SCHEMA, primary_keys=["id", "p"], partition_keys=["p"],
                             options={"bucket": "-1", "dynamic-bucket.target-row-num": "10",
                                      "dynamic-bucket.max-buckets": "3"})
    t.write_arrow(batch(list(range(25)), "a"))
    t.write_arrow(batch(list(range(20, 70)), "b"))
    index = hash_index(t)
    assert sorted(b for _, b in index) == [0, 1, 2]
    assert sum(len(h) for h in index.values()) == 70 == len({h for hs in index.values() for h in hs.tolist()})
    assert {r["id"]: r["v"] for r in t.to_arrow().to_pylist()} == \
        {i: f"a{i}" for i in range(20)} | {i: f"b{i}" for i in range(20, 70)}


def test_an_overwrite_places_its_keys_afresh_so_later_upserts_find_them(catalog):
    """An overwrite drops the partitions' HASH indexes with their files: its keys are placed
    anew and indexed, so a later upsert lands in the key's bucket (it went to another bucket,
    and the key was read twice, when the overwrite reused the old index for known keys)."""
    schema = pa.schema([("k", pa.int64(), False), ("v", pa.int64())])
    rng = np.random.default_rng(7)
    for trial in range(40):
        t = catalog.create_table(f"db.o{trial}", schema, primary_keys=["k"],
                                 options={"bucket": "-1", "dynamic-bucket.target-row-num": "2"})
        model: dict[int, int] = {}
        for step in range(4):
            keys = rng.integers(0, 8, rng.integers(1, 10)).tolist()
            values = rng.integers(0, 100, len(keys)).tolist()
            overwrite = step > 0 and rng.random() < 0.4
            t.write_arrow(pa.table({"k": keys, "v": values}, schema=schema), overwrite=overwrite)
            model = dict(zip(keys, values)) if overwrite else {**model, **dict(zip(keys, values))}
            if rng.random() < 0.5:
                t.compact()
        rows = t.to_arrow().to_pylist()
        assert sorted((r["k"], r["v"]) for r in rows) == sorted(model.items()), trial
        latest = t.latest_snapshot()
        indexed = [h for e in TableScan(t.file_io, t.path, t.schema).index_manifest.read(latest.index_manifest)
                   for h in read_hash_file(t.file_io, f"{t.path}/index/{e.index_file.file_name}",
                                           e.index_file).tolist()]
        assert len(indexed) == len(set(indexed)) == len(model), trial  # each key indexed once, no stale ones


def test_a_missing_hash_index_file_fails_the_upsert_naming_it(catalog):
    """Without its HASH index a key already in the table would land in a second bucket: the
    upsert is refused (MissingFileError naming the file) and commits nothing."""
    import os

    import pytest

    from paimon_streaming.errors import MissingFileError
    t = catalog.create_table("db.lost", SCHEMA, primary_keys=["id", "p"], partition_keys=["p"],
                             options={"bucket": "-1"})
    t.write_arrow(batch([1, 2], "x"))
    latest = t.latest_snapshot()
    scan = TableScan(t.file_io, t.path, t.schema)
    (entry,) = scan.index_manifest.read(latest.index_manifest)
    path = f"{t.path}/index/{entry.index_file.file_name}"
    os.remove(path)
    with pytest.raises(MissingFileError, match="HASH index file") as err:
        catalog.get_table("db.lost").write_arrow(batch([2, 3], "y"))
    assert path in str(err.value)
    assert catalog.get_table("db.lost").latest_snapshot().id == latest.id
