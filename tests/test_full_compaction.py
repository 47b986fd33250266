"""Scheduled full compaction (`full-compaction.delta-commits`): a due batch leaves every bucket
its writer touched since the previous due batch as one sorted run at the top level, without
deletion vectors; other batches compact as usual; the rows stay right for us, pypaimon and
Apache Paimon Java."""
from __future__ import annotations

import numpy as np
import pyarrow as pa
import pytest

import paimon_streaming as ps
from paimon_streaming.errors import InvalidOptionError
from paimon_streaming.full_compaction import is_due
from paimon_streaming.options import CoreOptions
from paimon_streaming.scan import TableScan
from paimon_streaming.snapshot import BATCH_COMMIT_IDENTIFIER
from conftest import pypaimon_read, rows_by

SCHEMA = pa.schema([("id", pa.int64(), False), ("v", pa.int64()), ("p", pa.string(), False)])
TOP = 5  # num-sorted-run.compaction-trigger 5 + 1 levels
KEYS = 6000


def bucket_state(table) -> dict[tuple[str, int], tuple[list[int], int]]:
    """(partition, bucket) -> (levels of its live files, how many of them have a deletion vector)."""
    latest = table.latest_snapshot()
    scan = TableScan(table.file_io, table.path, table.schema)
    vectors = scan.deletion_files(latest)
    out: dict = {}
    for e in scan.live_entries(latest):
        key = (scan.partition_values(e.partition)[0], e.bucket)
        levels, with_dv = out.get(key, ([], 0))
        out[key] = (sorted(levels + [e.file.level]),
                    with_dv + (e.file.file_name in vectors.get((e.partition, e.bucket), {})))
    return out


def fully_compacted(levels_and_vectors: tuple[list[int], int]) -> bool:
    levels, with_dv = levels_and_vectors
    return set(levels) == {TOP} and with_dv == 0


def updates(rng, partition: str, step: int, first: bool = False) -> pa.Table:
    """Every key of the partition (`first`), or 300 random updates of them (a few percent)."""
    ids = np.arange(KEYS) if first else rng.integers(0, KEYS, 300)
    return pa.table({"id": ids, "v": np.full(len(ids), step), "p": [partition] * len(ids)}, schema=SCHEMA)


@pytest.mark.parametrize("options", [
    {"deletion-vectors.enabled": "true"},
    {},  # merge-on-read
], ids=["dv", "merge-on-read"])
def test_due_batches_fully_compact_what_their_writer_touched(catalog, warehouse, options):
    """Every third batch (identifiers 0, 3, 6) compacts fully; batch 6 also compacts partition
    'a', written in batch 4 and not since, found in the writer's snapshots (each batch opens
    the table afresh, as a restarted writer would)."""
    catalog.create_table("db.fc", SCHEMA, primary_keys=["p", "id"], partition_keys=["p"],
                         options={"bucket": "2", "full-compaction.delta-commits": "3", **options})
    rng = np.random.default_rng(7)
    model: dict = {}
    touched: set[str] = set()
    for step in range(8):
        partition = "a" if step < 5 else "b"
        data = updates(rng, partition, step, first=step in (0, 5))
        t = catalog.get_table("db.fc")
        t.write_arrow(data, commit_user="writer", commit_identifier=step)
        model.update({(r["p"], r["id"]): r for r in data.to_pylist()})
        touched.add(partition)
        state = bucket_state(catalog.get_table("db.fc"))
        if step in (0, 3, 6):
            assert all(fully_compacted(state[(p, b)]) for p in touched for b in (0, 1)), (step, state)
            touched = set()
            kinds = [s.commit_kind for s in t.snapshots() if s.commit_identifier == step]
            assert kinds == ["APPEND", "COMPACT"]
        elif step != 5:  # updates (batch 5 writes keys new to its partition): not one run at the top
            assert not all(fully_compacted(state[(partition, b)]) for b in (0, 1)), (step, state)
    expected = sorted(model.values(), key=lambda r: (r["p"], r["id"]))
    assert rows_by(catalog.get_table("db.fc").to_arrow(), "p", "id") == expected
    assert rows_by(pypaimon_read(warehouse, "db.fc"), "p", "id") == expected
    from java_oracle import get_oracle
    java_rows = sorted(get_oracle().read(catalog.get_table("db.fc").path), key=lambda r: (r["p"], r["id"]))
    assert java_rows == expected


def test_a_partition_left_between_due_batches_stays_as_it_was(catalog):
    """Only buckets written since the previous due batch are compacted: a partition last written
    before it is not touched again."""
    t = catalog.create_table("db.left", SCHEMA, primary_keys=["p", "id"], partition_keys=["p"],
                             options={"bucket": "1", "full-compaction.delta-commits": "2"})
    rng = np.random.default_rng(3)
    t.write_arrow(updates(rng, "a", 0, first=True), commit_user="w", commit_identifier=1)
    t.write_arrow(updates(rng, "a", 1), commit_user="w", commit_identifier=2)   # due: 'a' compacted
    t.write_arrow(updates(rng, "b", 2, first=True), commit_user="w", commit_identifier=3)
    t.write_arrow(updates(rng, "a", 3), commit_user="other", commit_identifier=1)  # another writer's, not due
    t.write_arrow(updates(rng, "b", 4), commit_user="w", commit_identifier=4)   # due: 'b' only
    state = bucket_state(catalog.get_table("db.left"))
    assert fully_compacted(state[("b", 0)])
    assert not fully_compacted(state[("a", 0)]), "compacted a bucket only another writer wrote since"


def test_batch_writes_compact_fully_at_every_commit(catalog, warehouse):
    t = catalog.create_table("db.batch", SCHEMA, primary_keys=["p", "id"], partition_keys=["p"],
                             options={"bucket": "2", "full-compaction.delta-commits": "5"})
    rng = np.random.default_rng(5)
    model = {}
    for step in range(3):
        data = updates(rng, "a", step)
        t.write_arrow(data)
        model.update({(r["p"], r["id"]): r for r in data.to_pylist()})
        assert t.latest_snapshot().commit_identifier == BATCH_COMMIT_IDENTIFIER
        assert t.latest_snapshot().commit_kind == "COMPACT"
        assert all(fully_compacted(v) for v in bucket_state(t).values())
    expected = sorted(model.values(), key=lambda r: (r["p"], r["id"]))
    assert rows_by(pypaimon_read(warehouse, "db.batch"), "p", "id") == expected


def test_the_schedule():
    three = CoreOptions({"full-compaction.delta-commits": "3"})
    assert [i for i in range(10) if is_due(three, i)] == [0, 3, 6, 9]   # Paimon's full-compaction identifiers
    assert is_due(three, BATCH_COMMIT_IDENTIFIER)
    assert not is_due(CoreOptions({}), BATCH_COMMIT_IDENTIFIER)
    assert not any(is_due(CoreOptions({"full-compaction.delta-commits": "0"}), i) for i in (0, 1, BATCH_COMMIT_IDENTIFIER))
    write_only = CoreOptions({"full-compaction.delta-commits": "1", "write-only": "true"})
    assert not is_due(write_only, 0)


@pytest.mark.parametrize("options, primary_keys, message", [
    ({"full-compaction.delta-commits": "1", "deletion-vectors.enabled": "true", "changelog-producer": "lookup"},
     ["id"], "incompatible with 'changelog-producer' = 'lookup'"),
    ({"full-compaction.delta-commits": "2", "bucket": "2", "bucket-key": "id"}, None, "append tables"),
    ({"full-compaction.delta-commits": "often"}, ["id"], "full-compaction.delta-commits"),
], ids=["lookup-changelog", "append", "not-a-number"])
def test_refused_schedules(catalog, options, primary_keys, message):
    with pytest.raises(InvalidOptionError, match=message):
        catalog.create_table("db.bad", SCHEMA, primary_keys=primary_keys, options=options)


def test_the_schedule_can_be_set_on_an_existing_table(catalog):
    t = catalog.create_table("db.alter", SCHEMA, primary_keys=["p", "id"], partition_keys=["p"],
                             options={"bucket": "1"})
    rng = np.random.default_rng(9)
    t.write_arrow(updates(rng, "a", 0, first=True), commit_user="w", commit_identifier=0)
    t.write_arrow(updates(rng, "a", 1), commit_user="w", commit_identifier=1)
    assert not fully_compacted(bucket_state(t)[("a", 0)])
    t.update_schema().set_option("full-compaction.delta-commits", "1").commit()
    t = catalog.get_table("db.alter")
    t.write_arrow(updates(rng, "a", 2), commit_user="w", commit_identifier=2)
    assert fully_compacted(bucket_state(t)[("a", 0)])
    with pytest.raises(InvalidOptionError, match="lookup"):
        t.update_schema().set_option("changelog-producer", "lookup").commit()
