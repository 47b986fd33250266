"""Concurrent upserts to one bucket are serializable: the table always equals applying whole
commits in snapshot order, whatever the number of writers, with compaction and expiration
running; pypaimon and Apache Paimon Java read the same rows."""
from __future__ import annotations

import multiprocessing
import time

import pyarrow as pa
import pytest

import paimon_streaming as ps
from conftest import pypaimon_read
from paimon_streaming.consumers import ConsumerManager
from paimon_streaming.errors import SequenceConflictError
from paimon_streaming.snapshot import APPEND, OVERWRITE
from serializable_worker import SCHEMA, batch_of, compact_repeatedly, write_batches

WRITERS = 4
BATCHES = 8


def test_two_writers_of_one_snapshot_do_not_interleave(catalog):
    """The issue's reproduction: the second commit of two writers planned on one snapshot is
    refused, and write_arrow writes it again above the first."""
    t = catalog.create_table("db.t", pa.schema([pa.field("k", pa.int64(), False), ("v", pa.string())]),
                             primary_keys=["k"], options={"bucket": "1"})
    t.write_arrow(pa.table({"k": [0], "v": ["init"]}))
    a, b = ps.Table.open(t.path), ps.Table.open(t.path)
    ma = a.write_messages(pa.table({"k": [1, 2], "v": ["A", "A"]}))
    mb = b.write_messages(pa.table({"k": [2, 1], "v": ["B", "B"]}))
    a.new_commit().commit(ma, "wa", 1)
    with pytest.raises(SequenceConflictError, match="bucket 0"):
        b.new_commit().commit(mb, "wb", 1)
    b.new_commit().discard(mb)
    assert sorted(t.to_arrow().to_pylist(), key=lambda r: r["k"]) == [
        {"k": 0, "v": "init"}, {"k": 1, "v": "A"}, {"k": 2, "v": "A"}]
    b.write_arrow(pa.table({"k": [2, 1], "v": ["B", "B"]}), commit_user="wb", commit_identifier=1)
    assert sorted(t.to_arrow().to_pylist(), key=lambda r: r["k"]) == [
        {"k": 0, "v": "init"}, {"k": 1, "v": "B"}, {"k": 2, "v": "B"}]
    discarded = [f.file_name for m in mb for f in m.data.new_files]
    assert discarded and not any(t.file_io.exists(f"{t.path}/bucket-0/{n}") for n in discarded)


def test_uncontended_commits_read_nothing_more(catalog, monkeypatch):
    """Without a concurrent writer the check reads no manifest: the live files it needs are
    kept across commits (the commit advances them by its own entries)."""
    from paimon_streaming.manifest import ManifestFile
    t = catalog.create_table("db.u", SCHEMA, primary_keys=["k"], options={"bucket": "1"})
    committer = t.new_commit()
    committing = []
    reads = []
    original_read, original_commit = ManifestFile.read, ps.commit.FileStoreCommit.commit

    def read(self, *args, **kwargs):
        if committing:
            reads.append(args)
        return original_read(self, *args, **kwargs)

    def commit(self, *args, **kwargs):
        committing.append(1)
        try:
            return original_commit(self, *args, **kwargs)
        finally:
            committing.clear()
    monkeypatch.setattr(ManifestFile, "read", read)
    monkeypatch.setattr(ps.commit.FileStoreCommit, "commit", commit)
    for b in range(8):
        committer.commit(t.write_messages(batch_of(0, b).drop_columns(["_kind"])), "u", b)
    assert len(reads) <= 1  # at most the first commit's replay of the live files


def _model(seen: list[tuple[int, str, int, str]]) -> dict[int, dict]:
    """Whole batches applied in the order of their data snapshots."""
    state: dict[int, dict] = {}
    for _, user, identifier, kind in seen:
        if kind not in (APPEND, OVERWRITE) or not user.startswith("w"):
            continue
        for row in batch_of(int(user[1:]), identifier).to_pylist():
            kind_ = row.pop("_kind")
            if kind_ == "-D":
                state.pop(row["k"], None)
            else:
                state[row["k"]] = row
    return state


@pytest.mark.parametrize("dv", [False, True], ids=["merge-on-read", "deletion-vectors"])
def test_concurrent_upserts_to_one_bucket_equal_commits_in_snapshot_order(warehouse, dv):
    options = {"bucket": "1", "snapshot.num-retained.min": "2", "snapshot.num-retained.max": "4",
               "commit.max-retries": "40"}
    if dv:
        options["deletion-vectors.enabled"] = "true"
    table = ps.Catalog(warehouse).create_table("db.race", SCHEMA, primary_keys=["k"], options=options)
    consumers = ConsumerManager(table.file_io, table.path)
    consumers.record("model", 1)  # expiration keeps every snapshot the model has not read
    ctx = multiprocessing.get_context("spawn")
    errors, stop = ctx.Queue(), ctx.Event()
    writers = [ctx.Process(target=write_batches, args=(table.path, w, BATCHES, errors)) for w in range(WRITERS)]
    compactor = ctx.Process(target=compact_repeatedly, args=(table.path, stop, errors))
    for p in writers + [compactor]:
        p.start()
    seen: list[tuple[int, str, int, str]] = []
    snapshots = table.snapshot_manager
    deadline = time.monotonic() + 600

    def read_new() -> None:
        latest = snapshots.latest_id() or 0
        for sid in range(len(seen) + 1, latest + 1):
            s = snapshots.snapshot(sid)
            seen.append((s.id, s.commit_user, s.commit_identifier, s.commit_kind))
        consumers.record("model", len(seen) + 1)

    try:
        while time.monotonic() < deadline:
            writing = any(p.is_alive() for p in writers)
            read_new()
            table.expire_snapshots()  # races the writers' commits, and the compactor's to the end
            if not writing:  # once more after the writers: on a loaded machine they may all finish
                break        # before the model has read far enough for expiration to remove any
            time.sleep(0.05)
    finally:
        stop.set()
        for p in writers + [compactor]:
            p.join(60)
            if p.is_alive():
                p.kill()
    problems = []
    while not errors.empty():
        problems.append(errors.get())
    assert not problems, "\n".join(problems)
    read_new()
    assert [s[0] for s in seen] == list(range(1, len(seen) + 1))
    data_commits = [(u, i) for _, u, i, k in seen if k in (APPEND, OVERWRITE) and u.startswith("w")]
    assert sorted(data_commits) == sorted((f"w{w}", b) for w in range(WRITERS) for b in range(BATCHES))
    assert snapshots.earliest_id() > 1, "expiration should have run"

    model = _model(seen)
    expected = sorted(model.values(), key=lambda r: r["k"])
    ours = sorted(ps.Table.open(table.path).to_arrow().to_pylist(), key=lambda r: r["k"])
    assert ours == expected
    theirs = sorted(pypaimon_read(warehouse, "db.race").to_pylist(), key=lambda r: r["k"])
    assert theirs == expected
    from java_oracle import get_oracle
    java = sorted(get_oracle().read(table.path), key=lambda r: r["k"])
    assert java == expected
