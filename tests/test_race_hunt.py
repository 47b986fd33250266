"""Lifecycle operations racing writers and readers: expiration, tags, rollback, fast-forward,
orphan cleanup, exactly-once records, schema changes, partition expiration and rescale, each
forced into a chosen interleaving with a monkeypatched hook (the other party runs at that step,
in this thread), plus a streaming reader racing a writer process whose every commit expires
snapshots. After each race: `check_table` finds no error, every reader got
a documented error or exactly the rows of a committed snapshot, the table holds what the
operations that reported success wrote, and no tag or retained snapshot misses a file.

STREAM_RACE_BATCHES sets the writer process's batches (default 12) to hunt longer locally."""
from __future__ import annotations

import multiprocessing
import os
import time

import pyarrow as pa
import pytest

import paimon_streaming as ps
from paimon_streaming import expire as expire_module
from paimon_streaming import orphans as orphans_module
from paimon_streaming.check import check_table
from paimon_streaming.errors import (CommitConflictError, MissingFileError, SnapshotExpiredError,
                                     SnapshotNotFoundError, TagNotFoundError)
from paimon_streaming.manifest import files as manifest_files
from paimon_streaming.read import SplitReader
from paimon_streaming.rollback import Rollback
from paimon_streaming.streaming_scan import StreamingScan
from paimon_streaming.tags import TagManager
from concurrent_worker import ROWS, SCHEMA, batch_of, write_and_compact
from stream_batches import open_stream, read_units

KV = pa.schema([("id", pa.int64(), False), ("v", pa.string())])


def kv(ids, tag="x") -> pa.Table:
    return pa.table({"id": list(ids), "v": [f"{tag}{i}" for i in ids]}, schema=KV)


def rows(t: ps.Table, **at) -> dict[int, str]:
    return {r["id"]: r["v"] for r in t.to_arrow(**at).to_pylist()}


def assert_whole(t: ps.Table) -> None:
    """No error `check` finds (a gap, a missing or damaged file of any snapshot or tag)."""
    errors = [p for p in check_table(ps.Table.open(t.path)).problems if p.severity == "error"]
    assert not errors, errors


def pk_table(tmp_path, **options) -> ps.Table:
    opts = {"bucket": "1", "write-only": "true", **options}
    return ps.Catalog(str(tmp_path)).create_table("db.t", schema=KV, primary_keys=["id"], options=opts)


# ---- tags and expiration -----------------------------------------------------------------------
def commit_after_delete(monkeypatch, t: ps.Table, path_suffix: str, batch: pa.Table) -> list[int]:
    """Make the first delete of a file ending in `path_suffix` be followed by another writer's
    commit of `batch`; the returned list gets that commit's snapshot id."""
    cls = type(t.file_io)
    original = cls.delete
    written: list[int] = []

    def deleting(self, path):
        original(self, path)
        if path.endswith(path_suffix) and not written:
            written.append(ps.Table.open(t.path).write_arrow(batch))

    monkeypatch.setattr(cls, "delete", deleting)
    return written


def test_tag_created_while_expiration_chooses_its_files_keeps_them(tmp_path, monkeypatch):
    """A tag made of a snapshot that an expiration run is expiring, after the run read the tags:
    the run deleted the tag's files (the tag read MissingFileError). It reads the tags again
    once the snapshot files are gone and keeps what a new tag references."""
    t = pk_table(tmp_path)
    for i in range(4):
        t.write_arrow(kv([i, 100], f"b{i}-"))
    t.compact(full=True)
    t.write_arrow(kv([50]))
    want = rows(t, snapshot_id=4)
    original = expire_module.SnapshotExpiration._data_files_to_delete

    def tag_meanwhile(self, *args):
        ps.Table.open(t.path).create_tag("audit", snapshot_id=4)
        return original(self, *args)

    monkeypatch.setattr(expire_module.SnapshotExpiration, "_data_files_to_delete", tag_meanwhile)
    result = t.expire_snapshots(retain_max=1, retain_min=1)
    assert result.earliest == 6 and t.tags() == ["audit"]
    assert rows(ps.Table.open(t.path), tag="audit") == want
    assert_whole(t)


def test_tag_of_a_snapshot_expired_while_it_is_written_is_withdrawn(tmp_path, monkeypatch):
    """The other order: the expiration removes the snapshot after the tag file was written but
    before the tag is checked. The expiration sees the tag and keeps its files; the tag's creator
    finds its snapshot gone, removes the tag and raises SnapshotExpiredError (tagged nothing)."""
    t = pk_table(tmp_path)
    for i in range(4):
        t.write_arrow(kv([i, 100], f"b{i}-"))
    t.compact(full=True)
    t.write_arrow(kv([50]))
    original = TagManager._withdraw_if_gone

    def expire_meanwhile(self, snapshot, name):
        ps.Table.open(t.path).expire_snapshots(retain_max=1, retain_min=1)
        return original(self, snapshot, name)

    monkeypatch.setattr(TagManager, "_withdraw_if_gone", expire_meanwhile)
    with pytest.raises(SnapshotExpiredError, match="nothing was tagged"):
        t.create_tag("audit", snapshot_id=4)
    assert t.tags() == [] and t.snapshot_manager.earliest_id() == 6
    assert rows(t) == {0: "b0-0", 1: "b1-1", 2: "b2-2", 3: "b3-3", 100: "b3-100", 50: "x50"}
    assert_whole(t)
    ps.Table.open(t.path).remove_orphan_files(older_than=int(time.time() * 1000) + 1000)
    assert_whole(t)


# ---- rollback and writers ----------------------------------------------------------------------
def _rollback_race(tmp_path, monkeypatch, when: str):
    """Roll back from 6 or more snapshots to 3 while a writer commits id 99 at step `when`."""
    t = ps.Catalog(str(tmp_path)).create_table("db.t", schema=KV, primary_keys=["id"], options={"bucket": "1"})
    for i in range(3):
        t.write_arrow(kv([i]))
    at3 = rows(t)
    for i in range(3, 5):
        t.write_arrow(kv([i]))
    assert t.snapshot_manager.latest_id() > 4
    writes: list[int | None] = []

    def write():
        writes.append(ps.Table.open(t.path).write_arrow(kv([99], "w")))

    if when == "after-listing":
        original = Rollback._candidates

        def hook(self, *args):
            out = original(self, *args)
            write()
            return out
        monkeypatch.setattr(Rollback, "_candidates", hook)
    elif when == "between-deletes":
        cls = type(t.file_io)
        original_delete = cls.delete

        def deleting(self, path):
            original_delete(self, path)
            if "/snapshot/snapshot-" in path and not writes:
                write()
        monkeypatch.setattr(cls, "delete", deleting)
    else:  # after every later snapshot file is gone: the write lands on the retained snapshot
        original_check = Rollback._undo_if_raced

        def hook(self, *args):
            write()
            return original_check(self, *args)
        monkeypatch.setattr(Rollback, "_undo_if_raced", hook)
    return t, at3, writes


@pytest.mark.parametrize("when", ["after-listing", "between-deletes"])
def test_rollback_losing_to_a_commit_on_a_removed_snapshot_changes_nothing(tmp_path, monkeypatch, when):
    """A writer committing on a snapshot the rollback is removing: the rollback left a gap, a
    snapshot on deleted manifests and a LATEST hint that hid the writer's commit (readers saw the
    rolled-back table, the commit silently lost). Now the rollback writes the removed snapshots
    back and fails: the table is what it was plus the writer's commit."""
    t, _, writes = _rollback_race(tmp_path, monkeypatch, when)
    before = rows(t)
    with pytest.raises(CommitConflictError, match="were written back"):
        t.rollback_to(3)
    monkeypatch.undo()
    assert writes and writes[0] is not None
    fresh = ps.Table.open(t.path)
    assert rows(fresh) == {**before, 99: "w99"}
    assert [s.id for s in fresh.snapshots()] == list(range(1, fresh.snapshot_manager.latest_id() + 1))
    assert_whole(t)
    fresh.rollback_to(3)  # writers stopped: it goes through
    assert rows(ps.Table.open(t.path)) == {0: "x0", 1: "x1", 2: "x2"}
    assert_whole(t)


def test_commit_after_a_rollback_removed_the_snapshots_lands_on_the_retained_one(tmp_path, monkeypatch):
    t, at3, writes = _rollback_race(tmp_path, monkeypatch, "after-removal")
    assert t.rollback_to(3).id == 3
    monkeypatch.undo()
    assert writes[0] is not None and writes[0] > 3
    assert rows(ps.Table.open(t.path)) == {**at3, 99: "w99"}
    assert_whole(t)


def test_rollback_to_an_expired_tag_losing_to_a_commit_leaves_the_table_whole(tmp_path, monkeypatch):
    """Rolling back to a tag whose snapshot expired keeps the earliest snapshot until the tag's
    is written back; a writer that commits on it meanwhile was left beyond a gap, hidden by the
    LATEST hint, on files about to go. Now the rollback stops: the table reads whole with the
    writer's commit, the tag is still there."""
    t = pk_table(tmp_path)
    t.write_arrow(kv([1]))
    t.create_tag("t1")
    for i in range(2, 6):
        t.write_arrow(kv([i]))
    t.expire_snapshots(retain_max=2, retain_min=1)
    assert t.snapshot_manager.earliest_id() == 4
    at4 = rows(t, snapshot_id=4)
    written = commit_after_delete(monkeypatch, t, "/snapshot/snapshot-5", kv([99], "w"))
    with pytest.raises(CommitConflictError, match="were committed"):
        t.rollback_to("t1")
    monkeypatch.undo()
    assert written == [5]
    fresh = ps.Table.open(t.path)
    assert rows(fresh) == {**at4, 99: "w99"} and fresh.tags() == ["t1"]
    assert_whole(t)
    fresh.rollback_to("t1")
    assert rows(ps.Table.open(t.path)) == {1: "x1"}
    assert_whole(t)


def _rollback_before_first_commit(t: ps.Table, monkeypatch, target: int) -> list[int]:
    """Roll `t` back to `target` just before the next commit call publishes (its plan was made
    on the newer snapshots)."""
    from paimon_streaming.commit import FileStoreCommit
    original = FileStoreCommit.commit
    done: list[int] = []

    def rollback_first(self, *args, **kwargs):
        if not done:
            done.append(ps.Table.open(t.path).rollback_to(target).id)
        return original(self, *args, **kwargs)

    monkeypatch.setattr(FileStoreCommit, "commit", rollback_first)
    return done


ROW_LEVEL_TABLES = {"pk": (["id"], {"bucket": "1"}),
                    "pk-dv": (["id"], {"bucket": "1", "deletion-vectors.enabled": "true"}),
                    "append-dv": (None, {"deletion-vectors.enabled": "true"})}


@pytest.mark.parametrize("shape", sorted(ROW_LEVEL_TABLES))
@pytest.mark.parametrize("op", ["delete", "update"])
def test_delete_or_update_planned_before_a_rollback_is_planned_again(tmp_path, monkeypatch, shape, op):
    """`delete(v == 'x')` read its rows on snapshot 3 (where key 2 was already deleted); the
    table is rolled back to snapshot 1 (key 2 back) before it commits. Its commit checked only
    for newer snapshots by other writers, found none (the ids went down), and landed: key 2
    kept v = 'x' after a delete of every such row that reported success (primary-key tables;
    with deletion vectors the write failed with CommitConflictError, its data committed). The
    commit now refuses a plan whose snapshot left the history (StalePlanError), and the
    operation reads its rows again."""
    keys, options = ROW_LEVEL_TABLES[shape]
    t = ps.Catalog(str(tmp_path)).create_table("db.t", schema=KV, primary_keys=keys, options=options)
    t.write_arrow(pa.table({"id": [1, 2, 3], "v": ["x", "x", "x"]}, schema=KV))
    t.delete([("id", "=", 2)])
    t.write_arrow(kv([9], "y"))
    rolled = _rollback_before_first_commit(t, monkeypatch, 1)
    if op == "delete":
        t.delete([("v", "=", "x")])
        want = {}
    else:
        t.update([("v", "=", "x")], {"v": "z"})
        want = {1: "z", 2: "z", 3: "z"}
    monkeypatch.undo()
    assert rolled == [1]
    assert rows(ps.Table.open(t.path)) == want
    assert_whole(t)


def test_deletion_vector_upsert_planned_before_a_rollback_lands_once(tmp_path, monkeypatch):
    """An upsert into a deletion-vector table planned on snapshot 6 commits after a rollback to
    2: its data lands (on snapshot 2), its compaction conflicts (it marked rows of removed files).
    The retry looked for its own data snapshot above 6 only, found none and raised
    CommitConflictError, though the data had landed (visible once anyone compacted). It now
    finds it below and redoes the compaction: the write succeeds, once."""
    t = ps.Catalog(str(tmp_path)).create_table("db.t", schema=KV, primary_keys=["id"],
                                               options={"bucket": "1", "deletion-vectors.enabled": "true"})
    t.write_arrow(kv([0, 1, 50]))
    for i in range(2, 4):
        t.write_arrow(kv([i, 50], "late"))
    rolled = _rollback_before_first_commit(t, monkeypatch, 2)
    t.write_arrow(kv([0, 4, 50], "w"))
    monkeypatch.undo()
    assert rolled == [2]
    assert rows(ps.Table.open(t.path)) == {0: "w0", 1: "x1", 4: "w4", 50: "w50"}
    assert_whole(t)


def test_tag_made_of_a_snapshot_a_rollback_removes_goes_with_it(tmp_path, monkeypatch):
    """A tag created of snapshot 5 after the rollback to 3 read the tags, before it removed 5:
    the rollback reads the tags again and removes it too (it named a snapshot whose files go)."""
    t = pk_table(tmp_path)
    for i in range(5):
        t.write_arrow(kv([i]))
    original = Rollback._undo_if_raced
    snapshot_4 = t.snapshot(4)

    def tag_meanwhile(self, *args):
        TagManager(t.file_io, t.path).create(snapshot_4, "late")  # its check ran before snapshot 4 went
        return original(self, *args)

    monkeypatch.setattr(Rollback, "_undo_if_raced", tag_meanwhile)
    monkeypatch.setattr(TagManager, "_withdraw_if_gone", lambda self, snapshot, name: None)
    t.rollback_to(3)
    assert t.tags() == []
    assert rows(ps.Table.open(t.path)) == {0: "x0", 1: "x1", 2: "x2"}
    assert_whole(t)


# ---- branches --------------------------------------------------------------------------------
def _branched(tmp_path) -> ps.Table:
    t = pk_table(tmp_path)
    t.write_arrow(kv([1]))
    t.write_arrow(kv([2]))
    t.create_tag("base")
    dev = t.create_branch("dev", tag="base")
    dev.write_arrow(kv([10], "b"))
    dev.write_arrow(kv([11], "b"))
    return t


def test_fast_forward_racing_a_commit_on_main_does_not_drop_it(tmp_path, monkeypatch):
    """main commits snapshot 3 after the fast-forward checked main has no commits the branch
    lacks: the branch's snapshot 3 replaced it, its row gone from main without a word. The copy
    now creates snapshot files only where none is, and stops with CommitConflictError."""
    from paimon_streaming import branches as branches_module
    t = _branched(tmp_path)
    original = branches_module._copy
    written = []

    def commit_on_main_first(file_io, source, target, replace=False):
        if not written and "/snapshot/snapshot-" in target:
            written.append(ps.Table.open(t.path).write_arrow(kv([99], "m")))
        return original(file_io, source, target, replace)

    monkeypatch.setattr(branches_module, "_copy", commit_on_main_first)
    with pytest.raises(CommitConflictError, match="committed snapshot 3 on main"):
        t.fast_forward("dev")
    monkeypatch.undo()
    assert written == [3]
    assert rows(ps.Table.open(t.path)) == {1: "x1", 2: "x2", 99: "m99"}
    assert_whole(t)


def test_fast_forward_racing_a_commit_on_main_it_replaces_changes_nothing(tmp_path, monkeypatch):
    """force=True replaces main's snapshot 3; a commit on main landing while main's snapshots
    are removed made snapshot 4, which the copy overwrote. Now main's snapshots are written
    back, the commit kept, and the fast-forward fails having changed nothing."""
    t = _branched(tmp_path)
    t.write_arrow(kv([5], "m"))
    written = commit_after_delete(monkeypatch, t, "/snapshot/LATEST", kv([99], "m"))
    with pytest.raises(CommitConflictError, match="nothing changed"):
        t.fast_forward("dev", force=True)
    monkeypatch.undo()
    assert written == [4]
    assert rows(ps.Table.open(t.path)) == {1: "x1", 2: "x2", 5: "m5", 99: "m99"}
    assert_whole(t)
    ps.Table.open(t.path).fast_forward("dev", force=True)  # writers stopped: it goes through
    assert rows(ps.Table.open(t.path)) == {1: "x1", 2: "x2", 10: "b10", 11: "b11"}
    assert_whole(t)


def test_branch_from_a_tag_deleted_meanwhile_is_not_created(tmp_path, monkeypatch):
    """The tag (whose snapshot expired) is deleted with its files while the branch copies the
    schemas: the branch fails with TagNotFoundError and leaves nothing, not a raw
    FileNotFoundError and a half-made branch."""
    from paimon_streaming import branches as branches_module
    t = pk_table(tmp_path)
    t.write_arrow(kv([1]))
    t.create_tag("base")
    t.write_arrow(kv([1], "y"))
    t.compact(full=True)
    t.expire_snapshots(retain_max=1, retain_min=1)
    original = branches_module._write
    deleted = []

    def delete_tag_meanwhile(file_io, target, data, replace=False):
        if not deleted:
            deleted.append(ps.Table.open(t.path).delete_tag("base"))
        return original(file_io, target, data, replace)

    monkeypatch.setattr(branches_module, "_write", delete_tag_meanwhile)
    with pytest.raises(TagNotFoundError, match="deleted meanwhile"):
        t.create_branch("dev", tag="base")
    assert deleted[0] > 0 and t.branches() == []
    assert_whole(t)


# ---- exactly-once records and expiration ------------------------------------------------------
def test_replay_while_an_expiration_merges_the_identifier_records_is_skipped(tmp_path, monkeypatch):
    """Writer W replays identifier 1 (its snapshot expired, recorded). Between the listing of
    W's record files and their read, an expiration merges them into a new file and deletes the
    listed one: the read found nothing, and the replay failed with CommitIdentifierError (a
    restarted query stopped). Now the records are listed again."""
    t = ps.Catalog(str(tmp_path)).create_table("db.t", schema=KV, options={"write-only": "true"})
    for b in range(3):
        t.write_arrow(kv([b], "w"), commit_user="W", commit_identifier=b)
    for b in range(3):
        t.write_arrow(kv([10 + b], "o"))
    t.expire_snapshots(retain_max=4, retain_min=1)  # W's identifiers 0 and 1 are recorded, 2 is live
    cls = type(t.file_io)
    original = cls.read_bytes
    raced = []

    def reading(self, path, *args, **kwargs):
        if "/commit-user/" in path and not raced:
            raced.append(None)
            raced[0] = ps.Table.open(t.path).expire_snapshots(retain_max=1, retain_min=1).expired
        return original(self, path, *args, **kwargs)

    monkeypatch.setattr(cls, "read_bytes", reading)
    assert t.write_arrow(kv([1], "w"), commit_user="W", commit_identifier=1) is None  # a replay: skipped
    monkeypatch.undo()
    assert raced == [3]
    assert sorted(ps.Table.open(t.path).to_arrow().column("id").to_pylist()) == [0, 1, 2, 10, 11, 12]


# ---- orphan cleanup ----------------------------------------------------------------------------
def _age(path: str, seconds: float) -> None:
    when = time.time() - seconds
    for root, _, names in os.walk(path):
        for n in names:
            os.utime(os.path.join(root, n), (when, when))


def test_orphan_cleanup_racing_a_commit_and_expiration_keeps_live_files(tmp_path, monkeypatch):
    """Cleanup lists snapshot 1; a writer commits snapshot 2 (sharing 1's old manifest and data
    file) and expiration removes 1 before cleanup reads it: the old file lived on only in a
    snapshot cleanup never listed, and was deleted (snapshot 2 then missed a manifest and a data
    file). Cleanup now lists again until a pass finds no new snapshot or tag."""
    schema = pa.schema([("id", pa.int64(), False), ("p", pa.string())])
    t = ps.Catalog(str(tmp_path)).create_table("db.t", schema=schema, partition_keys=["p"],
                                               options={"write-only": "true"})
    t.write_arrow(pa.table({"id": [1], "p": ["a"]}, schema=t.arrow_schema()))
    _age(t.path, 3 * 86400)
    original = orphans_module.OrphanFilesClean._names_of
    raced = []

    def commit_and_expire(self, snap, walked):
        if not raced:
            raced.append(1)
            other = ps.Table.open(t.path)
            other.write_arrow(pa.table({"id": [2], "p": ["b"]}, schema=t.arrow_schema()))
            other.expire_snapshots(retain_max=1, retain_min=1)
            manifest_files._CACHE.clear()  # as another process: snapshot 1's lists are gone
        return original(self, snap, walked)

    monkeypatch.setattr(orphans_module.OrphanFilesClean, "_names_of", commit_and_expire)
    removed = t.remove_orphan_files()
    assert raced and not [p for p in removed.paths if "/manifest/manifest-list" not in p]
    assert sorted(r["id"] for r in ps.Table.open(t.path).to_arrow().to_pylist()) == [1, 2]
    assert_whole(t)


def test_orphan_cleanup_racing_a_publish_of_a_branch_keeps_its_files(tmp_path, monkeypatch):
    """Write-audit-publish during cleanup: main's snapshots were read, then the branch (written
    days ago) is fast-forwarded into main and deleted before cleanup reads it. The branch's files,
    now main's, were referenced by nothing cleanup had read, and went. Cleanup now passes over
    every branch again until nothing new shows up."""
    t = pk_table(tmp_path)
    t.write_arrow(kv([1]))
    t.create_tag("base")
    dev = t.create_branch("dev", tag="base")
    dev.write_arrow(kv([10], "b"))
    dev.write_arrow(kv([11], "b"))
    _age(t.path, 3 * 86400)
    original = orphans_module.OrphanFilesClean._referencing_snapshots
    published = []

    def publish_meanwhile(self, snapshots, tags):
        if "/branch/" in snapshots.dir and not published:
            main = ps.Table.open(t.path)
            published.append(main.fast_forward("dev").id)
            main.delete_branch("dev")
        return original(self, snapshots, tags)

    monkeypatch.setattr(orphans_module.OrphanFilesClean, "_referencing_snapshots", publish_meanwhile)
    removed = t.remove_orphan_files()
    assert published == [3] and removed.paths == []
    assert rows(ps.Table.open(t.path)) == {1: "x1", 10: "b10", 11: "b11"}
    assert_whole(t)


def test_orphan_cleanup_keeps_the_files_of_a_write_in_flight(tmp_path):
    """Files written but not committed yet survive the default threshold (one day, as Java's),
    so the commit that follows publishes whole files."""
    t = pk_table(tmp_path)
    t.write_arrow(kv([1]))
    _age(t.path, 3 * 86400)
    messages = t.write_messages(kv([2]))
    assert t.remove_orphan_files().paths == []
    t.new_commit().commit(messages, "late", 1)
    assert rows(ps.Table.open(t.path)) == {1: "x1", 2: "x2"}
    assert_whole(t)


# ---- writers whose base snapshot expires ---------------------------------------------------------
def test_write_planned_on_a_snapshot_that_expires_under_it_is_planned_again(tmp_path, monkeypatch):
    """The writer's base snapshot is compacted and expired (with the files it read) while the
    write runs: the write plans again on the new snapshot and lands once."""
    t = ps.Catalog(str(tmp_path)).create_table("db.t", schema=KV, primary_keys=["id"],
                                               options={"bucket": "1", "deletion-vectors.enabled": "true"})
    for i in range(3):
        t.write_arrow(kv([i, 10 + i]))
    from paimon_streaming import write as write_module
    original = write_module.TableWrite.write
    raced = []

    def compact_and_expire(self, *args, **kwargs):
        if not raced:
            raced.append(1)
            other = ps.Table.open(t.path)
            other.compact(full=True)
            other.write_arrow(kv([7], "o"))
            other.expire_snapshots(retain_max=1, retain_min=1)
            manifest_files._CACHE.clear()
        return original(self, *args, **kwargs)

    monkeypatch.setattr(write_module.TableWrite, "write", compact_and_expire)
    t.write_arrow(kv([0, 11], "w"))
    monkeypatch.undo()
    assert rows(ps.Table.open(t.path)) == {0: "w0", 1: "x1", 2: "x2", 10: "x10", 11: "w11", 12: "x12", 7: "o7"}
    assert_whole(t)


# ---- streaming readers and expiration -------------------------------------------------------------
def _read(ss: StreamingScan, units) -> list[int]:
    return sorted(i for _, rows in read_units(ss, units, ["id"], kind=None) for i in rows.column("id").to_pylist())


def test_stream_whose_planned_files_expire_raises_a_documented_error(tmp_path):
    """A stream planned snapshots 1..3; a compaction and an expiration delete their files before
    the batch is read: reading fails with MissingFileError, and continuing from the position
    raises SnapshotExpiredError, never fewer rows."""
    t = ps.Catalog(str(tmp_path)).create_table("db.t", schema=KV, options={"write-only": "true"})
    for i in range(3):
        t.write_arrow(kv([i]))
    ss = open_stream(t, {"scan.mode": "from-snapshot", "scan.snapshot-id": "1"})
    pos = ss.start_position()
    units, end = ss.plan_batch(pos)
    assert len(units) == 3
    other = ps.Table.open(t.path)
    other.compact(full=True)
    other.write_arrow(kv([3]))
    other.expire_snapshots(retain_max=1, retain_min=1)
    manifest_files._CACHE.clear()
    with pytest.raises(MissingFileError):
        _read(ss, ss.units_between(pos, end))
    with pytest.raises(SnapshotExpiredError):
        open_stream(t, {}).units_between(pos, end)
    with pytest.raises(SnapshotExpiredError):
        open_stream(t, {}).plan_batch(end)
    assert_whole(t)


def test_micro_batch_planned_before_a_rollback_is_refused_not_read_from_its_plan(tmp_path):
    """latestOffset planned snapshots 1 (APPEND) and 2 (COMPACT, nothing to read); then the
    table is rolled back to 1 and snapshot 2 committed again (an APPEND). The micro-batch's
    content came from the cached plans: the new snapshot 2's row was skipped without a word (the
    next batch noticed, after this one was committed). Now the batch itself is refused."""
    t = pk_table(tmp_path)
    t.write_arrow(kv([1]))
    t.compact(full=True)
    ss = open_stream(t, {"scan.mode": "from-snapshot", "scan.snapshot-id": "1"})
    start = ss.start_position()
    units, end = ss.plan_batch(start)
    assert end.snapshot == 3 and [u.snapshot_id for u in units] == [1]
    t.rollback_to(1)
    t.write_arrow(kv([2]))
    with pytest.raises(SnapshotNotFoundError, match="rolled back below this stream"):
        ss.units_between(start, end)


def _race_stream(location: str, batches: int, consumer: str | None) -> tuple[list[int], BaseException | None]:
    """Stream the table while a writer process appends and compacts `batches` times (each commit
    expires to one snapshot); returns the ids read and the error that stopped the stream."""
    ctx = multiprocessing.get_context("spawn")
    errors = ctx.Queue()
    writer = ctx.Process(target=write_and_compact, args=(location, batches, errors))
    writer.start()
    t = ps.Table.open(location)
    options = {"scan.mode": "from-snapshot", "scan.snapshot-id": "1"}
    if consumer:
        options["consumer-id"] = consumer
    ss = open_stream(t, options)
    pos, got, stopped = ss.start_position(), [], None
    ss.record_progress(pos)
    try:
        while True:
            done = not writer.is_alive()
            units, end = ss.plan_batch(pos)
            if units:
                got.extend(_read(ss, ss.units_between(pos, end)))
                ss.record_progress(end)
                pos = end
            elif done:
                break
            else:
                time.sleep(0.01)
    except (SnapshotNotFoundError, MissingFileError) as exc:  # SnapshotExpiredError, a file expired under it
        stopped = exc
    writer.join(120)
    assert errors.empty(), errors.get()
    assert writer.exitcode == 0
    return got, stopped


@pytest.mark.parametrize("consumer", [None, "race"])
def test_stream_racing_a_writer_that_expires_every_commit(tmp_path, consumer):
    """With a consumer id the stream reads every batch exactly once (expiration keeps what it
    has not read); without one it reads whole batches in order until a documented error stops
    it, never a batch short or a skipped one."""
    batches = int(os.environ.get("STREAM_RACE_BATCHES", "12"))
    t = ps.Catalog(str(tmp_path)).create_table("db.t", schema=SCHEMA, options={
        "snapshot.num-retained.min": "1", "snapshot.num-retained.max": "1", "snapshot.time-retained": "1 ms"})
    t.write_arrow(batch_of(0, 0).slice(0, 0))  # snapshot 1 exists before the stream starts
    got, stopped = _race_stream(t.path, batches, consumer)
    assert len(got) == len(set(got))
    read_batches = sorted({i // ROWS for i in got})
    assert read_batches == list(range(len(read_batches))), "a batch was skipped"
    assert sorted(got) == [b * ROWS + i for b in read_batches for i in range(ROWS)], "a partial batch"
    if consumer:
        assert stopped is None and len(read_batches) == batches
    assert_whole(t)
    assert sorted(ps.Table.open(t.path).to_arrow().column("id").to_pylist()) == list(range(batches * ROWS))


# ---- schema changes and writers ----------------------------------------------------------------
@pytest.mark.parametrize("change", ["rename", "drop", "add", "widen"])
def test_write_prepared_under_an_old_schema_lands_by_field_id(tmp_path, change):
    """A writer opened before another process changed the schema writes files of its schema
    id; they read through the new schema by field id (a renamed column keeps its values)."""
    schema = pa.schema([("id", pa.int64(), False), ("v", pa.string()), ("n", pa.int32())])
    t = ps.Catalog(str(tmp_path)).create_table("db.t", schema=schema, primary_keys=["id"], options={"bucket": "1"})
    t.write_arrow(pa.table({"id": [1], "v": ["a"], "n": [1]}, schema=schema))
    stale = ps.Table.open(t.path)
    with ps.Table.open(t.path).update_schema() as update:
        {"rename": lambda: update.rename_column("v", "v2"), "drop": lambda: update.drop_column("n"),
         "add": lambda: update.add_column("z", pa.string()),
         "widen": lambda: update.update_column("n", type=pa.int64())}[change]()
    stale.write_arrow(pa.table({"id": [2], "v": ["b"], "n": [2]}, schema=schema))
    fresh = ps.Table.open(t.path)
    got = fresh.to_arrow().sort_by("id").to_pylist()
    expected = {"rename": [{"id": 1, "v2": "a", "n": 1}, {"id": 2, "v2": "b", "n": 2}],
                "drop": [{"id": 1, "v": "a"}, {"id": 2, "v": "b"}],
                "add": [{"id": 1, "v": "a", "n": 1, "z": None}, {"id": 2, "v": "b", "n": 2, "z": None}],
                "widen": [{"id": 1, "v": "a", "n": 1}, {"id": 2, "v": "b", "n": 2}]}[change]
    assert got == expected
    # its snapshot records the newest schema, as Java's commit does (FileStoreCommitImpl: latestSchemaId):
    # time travel to it answers in the columns the latest read does, as Java's would
    assert fresh.latest_snapshot().schema_id == fresh.schema.id == 1
    assert fresh.to_arrow(snapshot_id=2).sort_by("id").to_pylist() == expected
    assert_whole(t)


# ---- partition expiration, rescale and time travel racing writers and readers ------------------
PS = pa.schema([("id", pa.int64(), False), ("v", pa.string()), ("dt", pa.string(), False)])


@pytest.mark.parametrize("dv", ["true", "false"])
@pytest.mark.parametrize("when", ["before-write", "after-write"])
def test_partition_expiration_racing_an_upsert_into_the_partition(tmp_path, monkeypatch, dv, when):
    """The upsert was planned on the partition's old files; the expiration's OVERWRITE commits
    while it writes. The overwrite drops what is live at its commit, so the upsert's row is the
    partition's only row afterwards (drop, then upsert), never the dropped rows back."""
    from paimon_streaming import write as write_module
    t = ps.Catalog(str(tmp_path)).create_table("db.t", schema=PS, primary_keys=["id", "dt"], partition_keys=["dt"],
                                               options={"bucket": "1", "deletion-vectors.enabled": dv,
                                                        "partition.expiration-time": "1 d",
                                                        "partition.timestamp-formatter": "yyyyMMdd",
                                                        "partition.expiration-check-interval": "1000 d"})
    t.write_arrow(pa.table({"id": [1, 2], "v": ["a", "b"], "dt": ["20200101"] * 2}, schema=PS))
    t.write_arrow(pa.table({"id": [1], "v": ["n"], "dt": ["29990101"]}, schema=PS))
    original = write_module.TableWrite.write
    dropped = []

    def expire_meanwhile(self, *args, **kwargs):
        if when == "before-write" and not dropped:
            dropped.append(ps.Table.open(t.path).expire_partitions())
        out = original(self, *args, **kwargs)
        if when == "after-write" and not dropped:
            dropped.append(ps.Table.open(t.path).expire_partitions())
        return out

    monkeypatch.setattr(write_module.TableWrite, "write", expire_meanwhile)
    t.write_arrow(pa.table({"id": [1], "v": ["u"], "dt": ["20200101"]}, schema=PS))
    monkeypatch.undo()
    assert dropped == [[{"dt": "20200101"}]]
    got = sorted((r["dt"], r["id"], r["v"]) for r in ps.Table.open(t.path).to_arrow().to_pylist())
    assert got == [("20200101", 1, "u"), ("29990101", 1, "n")]
    assert_whole(t)


@pytest.mark.parametrize("when", ["before-write", "after-write"])
def test_rescale_racing_a_write_fails_it_cleanly(tmp_path, monkeypatch, when):
    """A write planned with 2 buckets commits after a rescale to 3: CommitConflictError, nothing
    of it committed, the table whole with the rescale's rows (the writer plans again)."""
    from paimon_streaming import write as write_module
    t = ps.Catalog(str(tmp_path)).create_table("db.t", schema=KV, primary_keys=["id"], options={"bucket": "2"})
    t.write_arrow(kv(range(20), "a"))
    original = write_module.TableWrite.write
    rescaled = []

    def rescale_meanwhile(self, *args, **kwargs):
        if when == "before-write" and not rescaled:
            rescaled.append(ps.Table.open(t.path).rescale(bucket=3))
        out = original(self, *args, **kwargs)
        if when == "after-write" and not rescaled:
            rescaled.append(ps.Table.open(t.path).rescale(bucket=3))
        return out

    monkeypatch.setattr(write_module.TableWrite, "write", rescale_meanwhile)
    with pytest.raises(CommitConflictError, match="rescaled"):
        t.write_arrow(kv(range(0, 30, 2), "u"))
    monkeypatch.undo()
    fresh = ps.Table.open(t.path)
    assert fresh.options.bucket == 3 and rows(fresh) == {i: f"a{i}" for i in range(20)}
    assert_whole(t)
    fresh.write_arrow(kv(range(0, 30, 2), "u"))  # planned again on the rescaled table
    assert rows(ps.Table.open(t.path)) == {**{i: f"a{i}" for i in range(20)}, **{i: f"u{i}" for i in range(0, 30, 2)}}
    assert_whole(t)


@pytest.mark.parametrize("at", ["snapshot", "latest"])
def test_time_travel_whose_files_expire_mid_read_raises_a_documented_error(tmp_path, monkeypatch, at):
    """A batch read planned snapshot 3 (or the latest, 3); a compaction and an expiration delete
    its files before they are read: MissingFileError naming the file, never fewer rows."""
    t = ps.Catalog(str(tmp_path)).create_table("db.t", schema=KV, options={"write-only": "true"})
    for i in range(3):
        t.write_arrow(kv([i]))
    original = SplitReader.read
    raced = []

    def expire_meanwhile(self, *args, **kwargs):
        if not raced:
            raced.append(1)
            other = ps.Table.open(t.path)
            other.compact(full=True)
            other.write_arrow(kv([3]))
            other.expire_snapshots(retain_max=1, retain_min=1)
            manifest_files._CACHE.clear()
        return original(self, *args, **kwargs)

    monkeypatch.setattr(SplitReader, "read", expire_meanwhile)
    with pytest.raises(MissingFileError, match="expired while this read ran"):
        t.to_arrow(**({"snapshot_id": 3} if at == "snapshot" else {}))
    monkeypatch.undo()
    assert rows(ps.Table.open(t.path)) == {i: f"x{i}" for i in range(4)}
    assert_whole(t)
