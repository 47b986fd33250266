"""Concurrent writers in separate processes on one (local) table, with a reader process
checking every snapshot it sees: appends all land exactly once with contiguous snapshot ids,
conflicting compactions are detected (and either retried by the writer or fail cleanly),
and readers only ever see complete batches."""
from __future__ import annotations

import multiprocessing
import types
from dataclasses import replace

import pyarrow as pa
import pytest

import paimon_streaming as ps
from paimon_streaming.check import check_table
from paimon_streaming.commit import Increment
from paimon_streaming.errors import CommitConflictError, CompactionNotCommittedError
from concurrent_worker import ROWS, SCHEMA, check_snapshot, compact_repeatedly, read_continuously, write_batches


def drain(queue) -> list:
    out = []
    while not queue.empty():
        out.append(queue.get())
    return out


def run(location: str, writers: int, batches: int, upsert: bool, compactors: int = 0) -> tuple[int, list[str]]:
    """Writers (and compactors) in processes plus a reader; returns (snapshots the reader
    checked, outcomes reported)."""
    ctx = multiprocessing.get_context("spawn")
    errors, outcomes, seen, ready, stop = ctx.Queue(), ctx.Queue(), ctx.Queue(), ctx.Event(), ctx.Event()
    reader = ctx.Process(target=read_continuously, args=(location, upsert, ready, stop, seen, errors))
    procs = [ctx.Process(target=write_batches, args=(location, w, batches, upsert, outcomes, errors))
             for w in range(writers)]
    procs += [ctx.Process(target=compact_repeatedly, args=(location, batches, outcomes, errors))
              for _ in range(compactors)]
    reader.start()
    assert ready.wait(120), drain(errors)
    for p in procs:
        p.start()
    for p in procs:
        p.join(180)
    stop.set()
    reader.join(60)
    problems = drain(errors)
    assert not problems, "\n".join(problems)
    assert all(p.exitcode == 0 for p in procs + [reader])
    return seen.get(timeout=10), drain(outcomes)


def committed_batches(table: ps.Table) -> list[tuple[str, int]]:
    """(writer, batch) of every data snapshot, duplicates kept (a batch must land once).
    Snapshot ids must be contiguous: none lost, none overwritten."""
    snaps = table.snapshots()
    assert [s.id for s in snaps] == list(range(1, len(snaps) + 1))
    return sorted((s.commit_user, s.commit_identifier) for s in snaps
                  if s.commit_user.startswith("writer-") and s.commit_kind != "COMPACT")


def test_appending_processes_all_land(tmp_path):
    writers, batches = 3, 4
    t = ps.Catalog(str(tmp_path / "wh")).create_table("db.t", SCHEMA, primary_keys=["id"], options={"bucket": "2"})
    checked, _ = run(t.path, writers, batches, upsert=False)
    assert committed_batches(t) == sorted((f"writer-{w}", b) for w in range(writers) for b in range(batches))
    assert check_snapshot(t, t.latest_snapshot()) is None and t.to_arrow().num_rows == writers * batches * ROWS
    assert checked >= 1
    assert check_table(t).ok


def test_compactions_racing_writers_conflict_cleanly(tmp_path):
    """Two compactors and two writers on a merge-on-read table: compactions that lose are
    rejected as conflicts and change nothing; every append lands."""
    writers, batches = 2, 4
    t = ps.Catalog(str(tmp_path / "wh")).create_table("db.t", SCHEMA, primary_keys=["id"], options={"bucket": "1"})
    _, outcomes = run(t.path, writers, batches, upsert=False, compactors=2)
    assert set(outcomes) <= {"ok", "conflict"} and len(outcomes) == 2 * batches
    assert committed_batches(t) == sorted((f"writer-{w}", b) for w in range(writers) for b in range(batches))
    assert check_snapshot(t, t.latest_snapshot()) is None
    assert t.to_arrow().num_rows == writers * batches * ROWS and check_table(t).ok


def test_deletion_vector_upserts_from_several_processes(tmp_path):
    """Writers upsert their keys in the same buckets of a DV table, each write an APPEND and a
    COMPACT with lookup: no key may ever be live twice (lost deletion vectors), and the end
    state holds each writer's last batch."""
    writers, batches = 3, 4
    t = ps.Catalog(str(tmp_path / "wh")).create_table(
        "db.t", SCHEMA, primary_keys=["id"], options={"bucket": "1", "deletion-vectors.enabled": "true"})
    checked, outcomes = run(t.path, writers, batches, upsert=True)
    assert committed_batches(t) == sorted((f"writer-{w}", b) for w in range(writers) for b in range(batches))
    final = {(r["w"], r["v"]) for r in t.to_arrow().to_pylist()}
    assert final == {(w, f"w{w}b{batches - 1}") for w in range(writers)}
    report = check_table(t)
    assert report.ok, report.errors()
    assert checked >= 1 and set(outcomes) <= {"conflict"}



def test_concurrent_deletion_vector_commits_never_drop_each_others_marks(tmp_path):
    """Writer b plans upserts after a's APPEND but before a's COMPACT: each marks rows of the
    same old file in its own rewrite of the bucket's deletion-vector file. b's COMPACT must
    not replace a's file (a's marks would be lost and keys 1, 2 live twice): it is rejected
    as a conflict, and finishing it as the sink does after a restart marks its rows too.
    (Two writers planned on one snapshot do not get this far: b's APPEND is a sequence
    conflict, tests/test_serializable_writes.py.)"""
    def rows(ids, v):
        return pa.table({"id": ids, "v": [v] * len(ids), "w": [0] * len(ids)}, schema=SCHEMA)

    t = ps.Catalog(str(tmp_path / "wh")).create_table(
        "db.t", SCHEMA, primary_keys=["id"], options={"bucket": "1", "deletion-vectors.enabled": "true"})
    t.write_arrow(rows(list(range(5000)), "old"))
    a, b = ps.Table.open(t.path), ps.Table.open(t.path)
    from_a = a.write_messages(rows([1, 2], "a"))
    assert all(m.compact.new_index_files and not m.compact.deleted_index_files for m in from_a)
    a.new_commit().commit([replace(m, compact=Increment()) for m in from_a], "writer-a", 1)  # APPEND
    from_b = b.write_messages(rows([3, 4], "b"))
    assert all(m.compact.new_index_files for m in from_b)
    a.new_commit().commit([replace(m, data=Increment()) for m in from_a], "writer-a", 1)  # COMPACT
    with pytest.raises(CompactionNotCommittedError, match="DELETION_VECTORS index of bucket 0|no longer live") as err:
        b.new_commit().commit(from_b, "writer-b", 1)
    assert isinstance(err.value.__cause__, CommitConflictError)
    assert t.snapshot_manager.snapshot(err.value.snapshot_id).commit_user == "writer-b"
    assert check_table(t).ok  # b's APPEND landed; its level-0 file is invisible to DV readers
    b.compact(commit_user="writer-b", commit_identifier=1)
    values = {r["id"]: r["v"] for r in t.to_arrow().to_pylist()}
    assert len(values) == t.to_arrow().num_rows == 5000
    assert [values[i] for i in range(6)] == ["old", "a", "a", "b", "b", "old"]
    assert check_table(t).ok


def test_concurrent_dynamic_bucket_writers_conflict_instead_of_losing_hash_entries(tmp_path):
    """Dynamic bucket mode rewrites a bucket's HASH index file on every write: a second writer
    that planned on the same base is rejected, not allowed to drop the first one's keys."""
    def rows(ids):
        return pa.table({"id": ids, "v": ["x"] * len(ids), "w": [0] * len(ids)}, schema=SCHEMA)

    t = ps.Catalog(str(tmp_path / "wh")).create_table("db.t", SCHEMA, primary_keys=["id"])
    t.write_arrow(rows([1]))
    a, b = ps.Table.open(t.path), ps.Table.open(t.path)
    from_a, from_b = a.write_messages(rows([2])), b.write_messages(rows([3]))
    a.new_commit().commit(from_a, "writer-a", 1)
    with pytest.raises(CommitConflictError, match="HASH index|sequence numbers"):
        b.new_commit().commit(from_b, "writer-b", 1)
    b.write_arrow(rows([3]), commit_user="writer-b", commit_identifier=1)
    assert sorted(r["id"] for r in t.to_arrow().to_pylist()) == [1, 2, 3] and check_table(t).ok


def test_sink_redoes_a_compaction_that_lost_to_a_concurrent_writer(tmp_path, monkeypatch):
    """The sink's batch lands (APPEND) but its COMPACT conflicts with another writer's: the
    sink redoes the compaction on the new snapshot instead of failing the query."""
    pytest.importorskip("pyspark")
    from paimon_streaming.sinks import foreach_batch
    from paimon_streaming.sinks.spark_write import WriteResult
    from pyspark.sql.pandas.types import from_arrow_schema

    def rows(ids, v):
        return pa.table({"id": ids, "v": [v] * len(ids), "w": [0] * len(ids)}, schema=SCHEMA)

    t = ps.Catalog(str(tmp_path / "wh")).create_table(
        "db.t", SCHEMA, primary_keys=["id"], options={"bucket": "1", "deletion-vectors.enabled": "true"})
    t.write_arrow(rows(list(range(5000)), "old"))

    def write_then_lose_the_race(df, plan):
        messages = ps.Table.open(t.path).write_messages(rows([3, 4], "sink"))
        ps.Table.open(t.path).write_arrow(rows([1, 2], "other"), commit_user="other", commit_identifier=1)
        return WriteResult(messages, 2)

    monkeypatch.setattr(foreach_batch, "write_dataframe", write_then_lose_the_race)
    session = types.SimpleNamespace(conf=types.SimpleNamespace(get=lambda key: "UTC"))  # the session time zone
    batch = types.SimpleNamespace(schema=from_arrow_schema(SCHEMA), sparkSession=session)  # the write is replaced above
    foreach_batch.paimon_sink(t.path, commit_user="sink", shuffle=True)(batch, 0)
    values = {r["id"]: r["v"] for r in t.to_arrow().to_pylist()}
    assert len(values) == t.to_arrow().num_rows == 5000
    assert [values[i] for i in range(6)] == ["old", "other", "other", "sink", "sink", "old"]
    assert [s.commit_kind for s in t.snapshots() if s.commit_user == "sink"] == ["APPEND", "COMPACT"]
    assert check_table(t).ok


def test_completing_an_interrupted_batch_plans_again_after_losing_a_race(tmp_path, monkeypatch):
    """A DV batch's APPEND landed without its COMPACT; completing it races a compaction of
    another process that rewrites the same files: the completion loses, plans again on the new
    snapshot and lands (CI once saw the lost race end the writer's next batch instead)."""
    t = ps.Catalog(str(tmp_path / "wh")).create_table(
        "db.t", SCHEMA, primary_keys=["id"], options={"bucket": "1", "deletion-vectors.enabled": "true"})
    rows = lambda ids, v: pa.table({"id": ids, "v": [v] * len(ids), "w": [0] * len(ids)}, schema=SCHEMA)  # noqa: E731
    t.write_arrow(rows([1, 2, 3], "old"))
    messages = t.write_messages(rows([2, 3, 4], "new"))
    t.new_commit().commit([replace(m, compact=Increment()) for m in messages], "sink", 7)  # APPEND only
    original = ps.commit.FileStoreCommit.commit
    raced = []

    def commit(self, messages, commit_user, *args, **kwargs):
        if commit_user == "sink" and not raced:  # first try: another process compacts first
            raced.append(1)
            ps.Table.open(t.path).compact(full=True)
        return original(self, messages, commit_user, *args, **kwargs)

    monkeypatch.setattr(ps.commit.FileStoreCommit, "commit", commit)
    t.write_arrow(rows([5], "next"), commit_user="sink", commit_identifier=8)
    assert raced
    # planned again, batch 7's compaction had nothing left to do: the rival's full one took its files
    assert [(s.commit_identifier, s.commit_kind) for s in t.snapshots() if s.commit_user == "sink"] == [
        (7, "APPEND"), (8, "APPEND"), (8, "COMPACT")]
    assert sorted((r["id"], r["v"]) for r in t.to_arrow().to_pylist()) == [
        (1, "old"), (2, "new"), (3, "new"), (4, "new"), (5, "next")]
    assert check_table(t).ok


@pytest.mark.parametrize("dv", [False, True], ids=["merge-on-read", "deletion-vectors"])
def test_compaction_that_loses_a_race_is_planned_again(tmp_path, monkeypatch, dv):
    """`Table.compact` whose files another process compacted first: its outputs are deleted
    and it plans again on the new snapshot (a user's compaction beside a streaming writer)."""
    import time
    options = {"bucket": "1", "write-only": "true", "deletion-vectors.enabled": str(dv).lower()}
    t = ps.Catalog(str(tmp_path / "wh")).create_table("db.t", SCHEMA, primary_keys=["id"], options=options)
    for i in range(3):  # three files, not compacted together
        t.write_arrow(pa.table({"id": [i, i + 1], "v": [f"b{i}"] * 2, "w": [0, 0]}, schema=SCHEMA))
    before = len(t.snapshots())
    original = ps.commit.FileStoreCommit.commit
    raced = []

    def commit(self, messages, commit_user, *args, **kwargs):
        if commit_user == "mine" and not raced:
            raced.append(1)
            ps.Table.open(t.path).compact(full=True)
        return original(self, messages, commit_user, *args, **kwargs)

    monkeypatch.setattr(ps.commit.FileStoreCommit, "commit", commit)
    t.compact(full=True, commit_user="mine")
    assert raced  # planned again, it found the rival's single sorted run: nothing left to do
    assert [(s.commit_kind, s.commit_user == "mine") for s in t.snapshots()[before:]] == [("COMPACT", False)]
    assert sorted((r["id"], r["v"]) for r in t.to_arrow().to_pylist()) == [
        (0, "b0"), (1, "b1"), (2, "b2"), (3, "b2")]
    assert t.remove_orphan_files(older_than=int(time.time() * 1000) + 1000).paths == []  # the lost attempt's files
    assert check_table(t).ok
