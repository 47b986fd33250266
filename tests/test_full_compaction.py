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
from stream_batches import open_stream, snapshot_changes

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


# ---- a bucket compacted slice by slice ------------------------------------------------------------
SLICE_SCHEMA = pa.schema([pa.field("k", pa.string(), False), pa.field("id", pa.int64(), False),
                          ("v", pa.int64()), ("s", pa.string())])


def slice_batches(engine: str) -> list[pa.Table]:
    """Upserts over a composite key, with deletes where the engine takes them."""
    rng = np.random.default_rng(11)
    out = []
    for step in range(8):
        ids = rng.integers(0, 3000, 2500)
        kinds = rng.choice(["+I", "+U", "-D"], 2500, p=[0.5, 0.4, 0.1]) if engine == "deduplicate" \
            else np.full(2500, "+I")
        out.append(pa.table({"k": [f"key-{i % 7}" for i in ids], "id": ids, "v": rng.integers(0, 99, 2500),
                             "s": [None if i % 3 else f"s{step}" for i in ids], "op": kinds}))
    return out


def changelog_of(t, snapshot) -> list[tuple]:
    rows = snapshot_changes(open_stream(t, {}), snapshot.id, ["k", "id", "v", "s"])
    return sorted((r["k"], r["id"], r["v"], r["s"] or "", r["_kind"]) for r in rows)


@pytest.mark.parametrize("options", [
    {"deletion-vectors.enabled": "true"},
    {"deletion-vectors.enabled": "true", "changelog-producer": "lookup"},
    {"deletion-vectors.enabled": "true", "merge-engine": "partial-update"},
    {"merge-engine": "first-row"},
    {},
    {"merge-engine": "partial-update"},
], ids=["dv", "dv-lookup-changelog", "dv-partial-update", "first-row", "merge-on-read", "mor-partial-update"])
def test_a_bucket_compacts_slice_by_slice_as_in_one_piece(tmp_path, monkeypatch, options):
    """A full compaction of a bucket far above an eighth of the target file size goes slice by
    slice (memory holds a slice, not the bucket). It gives what one merge of the whole bucket
    gives: the same rows, files, levels and changelog; pypaimon and Java read it."""
    from paimon_streaming.lsm.dv_compaction import BucketCompactor
    sliced_calls = []
    real = BucketCompactor._compact_in_slices
    results = {}
    for mode in ("slices", "whole"):
        wh = str(tmp_path / mode)
        t = ps.Catalog(wh).create_table("db.s", SLICE_SCHEMA, primary_keys=["k", "id"],
                                        options={"bucket": "1", "target-file-size": "24kb", **options})
        engine = options.get("merge-engine", "deduplicate")
        for b in slice_batches(engine)[:-1]:
            t.write_arrow(b, row_kind_column="op")
        # the last batch stays at level 0 (as another writer may leave it), so the full
        # compaction also merges it and, with a lookup changelog, produces its changelog
        conform_last = slice_batches(engine)[-1]
        scan = TableScan(t.file_io, t.path, t.schema)
        latest = t.latest_snapshot()
        messages = t.new_write().write(ps.write.conform(conform_last, t.schema, t.name, "op"),
                                       scan.live_entries(latest), scan.index_manifest.read(latest.index_manifest),
                                       compact=False)
        t.new_commit().commit(messages, "w", 1)
        if mode == "whole":
            monkeypatch.setattr(BucketCompactor, "_compact_in_slices", lambda *args: None)
        else:
            monkeypatch.setattr(BucketCompactor, "_compact_in_slices",
                                lambda *args: sliced_calls.append(1) or real(*args))
        t.compact(full=True)
        monkeypatch.undo()
        t = ps.Catalog(wh).get_table("db.s")
        latest = t.latest_snapshot()
        files = TableScan(t.file_io, t.path, t.schema).live_entries(latest)
        results[mode] = (rows_by(t.to_arrow(), "k", "id"), sorted(f.file.row_count for f in files),
                         {f.file.level for f in files}, changelog_of(t, latest))
        if mode == "slices":
            assert rows_by(pypaimon_read(wh, "db.s"), "k", "id") == results[mode][0]
            from java_oracle import get_oracle
            assert sorted(get_oracle().read(t.path), key=lambda r: (r["k"], r["id"])) == results[mode][0]
    assert sliced_calls and results["slices"][0]  # the sliced path ran, on a table with rows
    assert len(results["slices"][1]) > 3, "expected a bucket of several target-size files"
    (rows, sizes, levels, changelog), (rows_whole, sizes_whole, levels_whole, changelog_whole) = \
        results["slices"], results["whole"]
    assert rows == rows_whole and levels == levels_whole == {TOP} and changelog == changelog_whole
    # files are cut at the same target size; the estimate of rows per file differs a little
    assert sum(sizes) == sum(sizes_whole) and abs(len(sizes) - len(sizes_whole)) <= 1, (sizes, sizes_whole)
    if options.get("changelog-producer") == "lookup":
        assert results["slices"][3], "the level-0 batch produced no changelog"


def test_a_run_gives_each_slice_every_row_up_to_its_cut():
    """A run's files are read in key order, once each; a slice gets every row with a key up
    to its cut, a file starting exactly at the cut included, and the rest waits."""
    from paimon_streaming.lsm.dv_compaction import _RunCursor
    files = {"a": [1, 3, 5], "b": [6, 8], "c": [9, 12]}
    reads = []

    def read(name):
        reads.append(name)
        return pa.table({"id": pa.array(files[name], pa.int64())})
    cursor = _RunCursor(list(files), False, read, ["id"], lambda name: ((files[name][0],), (files[name][-1],)),
                        pa.table({"id": pa.array([], pa.int64())}))
    taken = [cursor.take_through(cut)[0].column("id").to_pylist() for cut in [(4,), (6,), (6,), (10,), None]]
    assert taken == [[1, 3], [5, 6], [], [8, 9], [12]]
    assert reads == ["a", "b", "c"]


# ---- scan.mode = compacted-full -------------------------------------------------------------------
def test_compacted_full_starts_from_the_newest_full_compaction(catalog):
    """As Java's FullCompactedStartingScanner: the newest COMPACT snapshot whose identifier
    marks a full compaction; without a schedule the newest COMPACT snapshot; else the latest."""
    from paimon_streaming.streaming_scan import StreamPosition

    def start(t, **options):
        return open_stream(t, {"scan.mode": "compacted-full", **options}).start_position()
    t = catalog.create_table("db.cf", SCHEMA, primary_keys=["p", "id"], partition_keys=["p"],
                             options={"bucket": "1", "full-compaction.delta-commits": "3"})
    rng = np.random.default_rng(4)
    t.write_arrow(updates(rng, "a", 0, first=True), commit_user="w", commit_identifier=1)
    assert start(t) == StreamPosition(1, 0, True)  # no full compaction yet: the latest
    for identifier in (2, 3, 4, 5):
        t.write_arrow(updates(rng, "a", identifier), commit_user="w", commit_identifier=identifier)
    full = [s for s in t.snapshots() if s.commit_kind == "COMPACT" and s.commit_identifier == 3]
    assert len(full) == 1 and full[0].id < t.latest_snapshot().id
    assert start(t) == StreamPosition(full[0].id, 0, True)
    # the same table read as if it had no schedule: the newest COMPACT snapshot of any kind
    newest_compact = max(s.id for s in t.snapshots() if s.commit_kind == "COMPACT")
    t.update_schema().remove_option("full-compaction.delta-commits").commit()
    assert start(catalog.get_table("db.cf")) == StreamPosition(newest_compact, 0, True)
