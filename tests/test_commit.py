"""The commit protocol: snapshots, hints, manifest merging, conflicts, retries, failure cleanup,
and the exactly-once filter."""
from __future__ import annotations

import json
import os
import threading
import time

import pyarrow as pa
import pyarrow.fs as pafs
import pytest

from paimon_streaming.errors import SnapshotMissingError

import paimon_streaming as ps
from paimon_streaming.check import check_table
from paimon_streaming.errors import CommitConflictError, CommitOutcomeUnknownError, CompactionNotCommittedError
from paimon_streaming.scan import TableScan
from paimon_streaming.snapshot import SnapshotManager
from conftest import pypaimon_read, rows_by

SCHEMA = pa.schema([("id", pa.int64(), False), ("v", pa.string()), ("p", pa.string(), False)])


def batch(ids, v="x", p="a"):
    return pa.table({"id": list(ids), "v": [f"{v}{i}" for i in ids], "p": [p] * len(ids)}, schema=SCHEMA)


@pytest.fixture
def pk_table(catalog):
    return catalog.create_table("db.t", SCHEMA, primary_keys=["id", "p"], partition_keys=["p"],
                                options={"bucket": "2"})


def test_snapshot_json_has_java_fields_in_order(pk_table):
    sid = pk_table.write_arrow(batch(range(5)))
    obj = json.loads(open(f"{pk_table.path}/snapshot/snapshot-{sid}").read())
    assert list(obj)[:13] == ["version", "id", "schemaId", "baseManifestList", "baseManifestListSize",
                              "deltaManifestList", "deltaManifestListSize", "commitUser", "commitIdentifier",
                              "commitKind", "timeMillis", "totalRecordCount", "deltaRecordCount"]
    assert obj["version"] == 3 and obj["commitKind"] == "APPEND"
    assert obj["commitIdentifier"] == 9223372036854775807
    assert open(f"{pk_table.path}/snapshot/LATEST").read() == str(sid)


def test_record_counts(pk_table):
    pk_table.write_arrow(batch(range(10)))
    pk_table.write_arrow(batch(range(5, 8)))
    snaps = pk_table.snapshots()
    assert [s.total_record_count for s in snaps] == [10, 13]
    assert [s.delta_record_count for s in snaps] == [10, 3]


@pytest.mark.parametrize("hint", ["missing", "stale", "garbage"])
def test_bad_latest_hint_still_reads_latest(pk_table, warehouse, hint):
    for i in range(3):
        pk_table.write_arrow(batch([i], v=f"s{i}"))
    latest_path = f"{pk_table.path}/snapshot/LATEST"
    if hint == "missing":
        os.remove(latest_path)
    else:
        open(latest_path, "w").write({"stale": "1", "garbage": "x!"}[hint])
    t = ps.Catalog(warehouse).get_table("db.t")
    assert t.latest_snapshot().id == 3
    assert len(t.to_arrow()) == 3
    assert t.write_arrow(batch([7])) == 4
    assert len(pypaimon_read(warehouse, "db.t")) == 4


def test_latest_hint_beyond_every_snapshot_is_refused(pk_table):
    """A LATEST hint naming a snapshot with no file, and no newer file: the newest snapshot
    file was deleted; reading or writing on would silently roll the table back."""
    pk_table.write_arrow(batch([1]))
    open(f"{pk_table.path}/snapshot/LATEST", "w").write("99")
    with pytest.raises(SnapshotMissingError, match="LATEST"):
        ps.Table.open(pk_table.path).write_arrow(batch([2]))
    with pytest.raises(SnapshotMissingError):
        ps.Table.open(pk_table.path).to_arrow()


def test_earliest_hint_fallback(pk_table):
    for i in range(3):
        pk_table.write_arrow(batch([i]))
    sm = SnapshotManager(pk_table.file_io, pk_table.path)
    open(f"{pk_table.path}/snapshot/EARLIEST", "w").write("2")  # wrong: snapshot 1 exists
    assert sm.earliest_id() == 1


def test_overwrite_replaces_table(pk_table, warehouse):
    pk_table.write_arrow(batch(range(10)))
    pk_table.write_arrow(batch(range(100, 103), p="b"))
    sid = pk_table.write_arrow(batch([1, 2], v="new"), overwrite=True)
    snap = pk_table.snapshot(sid)
    assert snap.commit_kind == "OVERWRITE" and snap.total_record_count == 2
    assert rows_by(pk_table.to_arrow(), "id") == rows_by(batch([1, 2], v="new"), "id")
    assert rows_by(pypaimon_read(warehouse, "db.t"), "id") == rows_by(batch([1, 2], v="new"), "id")


def test_manifest_minor_merge_keeps_manifest_count_bounded(catalog, warehouse):
    t = catalog.create_table("db.m", SCHEMA, primary_keys=["id", "p"], partition_keys=["p"],
                             options={"bucket": "1", "manifest.merge-min-count": "5"})
    for i in range(23):
        t.write_arrow(batch([i]))
    latest = t.latest_snapshot()
    commit = t.new_commit()
    base = commit.manifest_list.read(latest.base_manifest_list)
    assert len(base) < 6
    assert len(t.to_arrow()) == 23
    assert len(pypaimon_read(warehouse, "db.m")) == 23


def test_manifest_full_compaction_drops_deleted_entries(catalog, warehouse):
    # Tiny thresholds force a full compaction; overwrites leave DELETE entries to cancel.
    t = catalog.create_table("db.f", SCHEMA, primary_keys=["id", "p"], partition_keys=["p"],
                             options={"bucket": "1", "manifest.full-compaction-threshold-size": "1",
                                      "manifest.target-file-size": "1"})
    for i in range(4):
        t.write_arrow(batch(range(i * 3, i * 3 + 3), p=f"p{i % 2}"))
    t.write_arrow(batch([50], p="p0"), overwrite=True)
    t.write_arrow(batch([51], p="p1"))
    latest = t.latest_snapshot()
    commit = t.new_commit()
    base = commit.manifest_list.read(latest.base_manifest_list)
    entries = [e for m in base for e in commit.manifest_file.read(m.file_name)]
    assert all(e.kind == 0 for e in entries), "full compaction leaves only ADD entries"
    assert sorted(r["id"] for r in t.to_arrow().to_pylist()) == [50, 51]
    assert sorted(r["id"] for r in pypaimon_read(warehouse, "db.f").to_pylist()) == [50, 51]


def test_committed_identifiers_exactly_once_filter(pk_table):
    assert pk_table.committed_identifiers("job-1", [1, 2]) == set()
    pk_table.write_arrow(batch([1]), commit_user="job-1", commit_identifier=1)
    pk_table.write_arrow(batch([2]), commit_user="job-2", commit_identifier=7)
    pk_table.write_arrow(batch([3]), commit_user="job-1", commit_identifier=2)
    assert pk_table.committed_identifiers("job-1", [1, 2, 3]) == {1, 2}
    assert pk_table.committed_identifiers("job-2", [7, 8]) == {7}
    with pytest.raises(ps.CommitIdentifierError, match="identifier 6 of commit user 'job-2'"):
        pk_table.committed_identifiers("job-2", [6, 7])  # below the newest, never committed
    assert pk_table.committed_identifiers("job-3", [1]) == set()
    assert pk_table.committed_identifiers("job-1", []) == set()


def test_concurrent_committers_never_lose_a_snapshot(pk_table):
    """Threads race for snapshot ids; every commit lands exactly once, ids contiguous."""
    errors = []

    def writer(w):
        try:
            t = ps.Table.open(pk_table.path)
            for i in range(5):
                t.write_arrow(batch([w * 100 + i], v=f"w{w}"))
        except Exception as exc:  # pragma: no cover - reported below
            errors.append(exc)

    threads = [threading.Thread(target=writer, args=(w,)) for w in range(4)]
    for th in threads:
        th.start()
    for th in threads:
        th.join()
    assert not errors
    snaps = pk_table.snapshots()
    assert [s.id for s in snaps] == list(range(1, len(snaps) + 1))
    assert sum(s.commit_kind == "APPEND" for s in snaps) == 20  # plus the compactions that won their race
    assert len(pk_table.to_arrow()) == 20


def test_failed_commit_leaves_table_unchanged_and_removes_its_files(pk_table, monkeypatch):
    pk_table.write_arrow(batch(range(3)))
    manifests_before = set(os.listdir(f"{pk_table.path}/manifest"))
    commit = pk_table.new_commit()
    messages = pk_table.write_messages(batch([10, 11]))

    def boom(snapshot):
        raise RuntimeError("disk on fire")

    monkeypatch.setattr(commit.snapshots, "try_publish", boom)
    with pytest.raises(RuntimeError):
        commit.commit(messages, "u", 1)
    assert set(os.listdir(f"{pk_table.path}/manifest")) == manifests_before
    assert pk_table.latest_snapshot().id == 1
    assert len(pk_table.to_arrow()) == 3


def test_a_last_publish_that_landed_though_the_store_failed_is_the_commit(catalog, monkeypatch):
    """Every publish of the commit failed with an unknown outcome, the last one having landed:
    the retries ran out and the commit was reported as a conflict, whose callers delete its
    files (a compaction's), which the published snapshot then named."""
    pk_table = catalog.create_table("db.t", SCHEMA, primary_keys=["id", "p"], partition_keys=["p"],
                                    options={"bucket": "2", "commit.max-retries": "1"})
    pk_table.write_arrow(batch([1]))
    commit = pk_table.new_commit()
    messages = pk_table.write_messages(batch([2]))
    original = commit.snapshots.try_publish
    calls = []

    def flaky_publish(snapshot):
        calls.append(snapshot.id)
        if len(calls) == 2:
            original(snapshot)  # lands, but the store's answer is lost
        raise OSError("connection reset")

    monkeypatch.setattr(commit.snapshots, "try_publish", flaky_publish)
    assert commit.commit(messages, "u", 1) == [2]
    assert len(calls) == 2 and sorted(r["id"] for r in pk_table.to_arrow().to_pylist()) == [1, 2]


def _publish_late(monkeypatch, land_at: int = 2):
    """The first snapshot publish times out while the store still holds the request; it lands
    just before publish number `land_at` is decided (that one then finds the id taken)."""
    original, calls, pending = SnapshotManager.try_publish, [], []

    def delayed(self, snapshot):
        calls.append(snapshot.id)
        if len(calls) == 1:
            pending.append((self, snapshot))
            raise OSError("read timeout")
        if len(calls) == land_at and pending:
            assert original(*pending.pop())
        return original(self, snapshot)

    monkeypatch.setattr(SnapshotManager, "try_publish", delayed)
    return calls


@pytest.mark.parametrize("keyed", [True, False], ids=["pk", "append"])
@pytest.mark.parametrize("once", [True, False], ids=["commit-user", "plain"])
def test_a_timed_out_publish_landing_before_the_retrys_is_the_commit(catalog, monkeypatch, keyed, once):
    """The retry of a publish whose outcome was unknown loses the id to that very publish,
    landed late: a lost race, after which the committer forgot the unknown outcome. A plain
    write committed the batch again (snapshot 3 adding its files twice: unreadable); with a
    commit user the next attempt took its own snapshot for another attempt's and deleted the
    files snapshot 2 references. It is the commit now, found by the manifest list it wrote."""
    t = catalog.create_table("db.t", SCHEMA, primary_keys=["id", "p"] if keyed else None,
                             options={"bucket": "1" if keyed else "-1"})
    t.write_arrow(batch([1]))
    calls = _publish_late(monkeypatch)
    kw = dict(commit_user="u", commit_identifier=7) if once else {}
    assert t.write_arrow(batch([2, 3]), **kw) == 2
    monkeypatch.undo()
    assert calls == [2, 2] and [s.id for s in t.snapshots()] == [1, 2]
    assert sorted(r["id"] for r in t.to_arrow().to_pylist()) == [1, 2, 3]
    assert check_table(t).ok


def test_a_compaction_whose_last_publish_may_still_land_keeps_its_files(catalog, monkeypatch):
    """Every publish of a compaction timed out, the last one's id still free: the store may yet
    apply it, so the commit's outcome is unknown (CommitOutcomeUnknownError), not a conflict,
    on which Table.compact deleted the files the snapshot names when it landed afterwards."""
    t = catalog.create_table("db.t", SCHEMA, primary_keys=["id", "p"],
                             options={"bucket": "1", "commit.max-retries": "1"})
    t.write_arrow(batch([1]))
    t.write_arrow(batch([2]))
    original, pending = SnapshotManager.try_publish, []

    def timing_out(self, snapshot):
        pending.append((self, snapshot))
        raise OSError("read timeout")

    monkeypatch.setattr(SnapshotManager, "try_publish", timing_out)
    with pytest.raises(CommitOutcomeUnknownError, match="snapshot 3 .* may still apply it"):
        t.compact(full=True)
    monkeypatch.undo()
    assert len(pending) == 2 and original(*pending[-1])  # the store applies it now
    assert t.latest_snapshot().commit_kind == "COMPACT"
    assert sorted(r["id"] for r in t.to_arrow().to_pylist()) == [1, 2] and check_table(t).ok


def test_a_timed_out_publish_is_not_taken_for_another_attempts_commit(catalog, monkeypatch):
    """A zombie of the batch (same commit user and identifier) commits while this attempt's
    publish is in doubt: the zombie's snapshot is not this attempt's (told by the manifest
    list, not by the user), so this attempt is a replay and deletes its files, rather than a
    success that leaves them behind unreferenced."""
    t = catalog.create_table("db.t", SCHEMA, options={"bucket": "-1"})
    t.write_arrow(batch([1]))
    original, calls = SnapshotManager.try_publish, []

    def zombie_first(self, snapshot):
        calls.append(snapshot.id)
        if len(calls) == 1:
            ps.Table.open(t.path).write_arrow(batch([2]), commit_user="u", commit_identifier=7)
            raise OSError("read timeout")  # never applied
        return original(self, snapshot)

    monkeypatch.setattr(SnapshotManager, "try_publish", zombie_first)
    assert t.write_arrow(batch([2]), commit_user="u", commit_identifier=7) == 2
    monkeypatch.undo()
    assert calls == [2, 2] and [s.id for s in t.snapshots()] == [1, 2]
    assert sorted(r["id"] for r in t.to_arrow().to_pylist()) == [1, 2]
    assert len([n for n in os.listdir(f"{t.path}/bucket-0") if n.startswith("data-")]) == 2


def test_lost_race_retries_on_new_latest(pk_table, monkeypatch):
    """A commit that loses the snapshot id to another writer retries on top of it."""
    pk_table.write_arrow(batch([1]))
    commit = pk_table.new_commit()
    messages = pk_table.write_messages(batch([2]))
    original = commit.snapshots.try_publish
    raced = []

    def racing_publish(snapshot):
        if not raced:
            raced.append(True)
            ps.Table.open(pk_table.path).write_arrow(batch([3]))  # takes snapshot 2 first
        return original(snapshot)

    monkeypatch.setattr(commit.snapshots, "try_publish", racing_publish)
    assert commit.commit(messages, "u", 1) == [3]
    assert sorted(r["id"] for r in pk_table.to_arrow().to_pylist()) == [1, 2, 3]


def test_a_commit_planned_on_an_expired_snapshot_is_not_published_below_the_earliest(catalog):
    """The commit that planned on snapshot 2 finds snapshot 3 free, but only because snapshots
    3 and 4 were published and then expired meanwhile (expiration deletes oldest first, so 2 is
    gone too): it must build on the real latest, not publish a second snapshot 3 that readers,
    starting from the earliest, would never reach (the batch would be lost)."""
    t = catalog.create_table("db.e", SCHEMA, options={"snapshot.num-retained.min": "1",  # append-only:
                                                      "snapshot.num-retained.max": "2"})  # no sequence check
    t.write_arrow(batch([1]))
    t.write_arrow(batch([2]))
    planned_on = t.latest_snapshot()
    messages = t.write_messages(batch([3]))
    for i in (4, 5, 6):
        t.write_arrow(batch([i]))  # each commit's expiration keeps the newest 2 snapshots
    sm = t.snapshot_manager
    assert not sm.exists(planned_on.id) and not sm.exists(planned_on.id + 1)
    latest = sm.latest_id()
    assert t.new_commit().commit(messages, "u", 1, planned_on=planned_on) == [latest + 1]
    assert sorted(r["id"] for r in t.to_arrow().to_pylist()) == [1, 2, 3, 4, 5, 6]


def test_a_commit_whose_base_expires_while_it_writes_manifests_retries(catalog, monkeypatch):
    """The same, with the base snapshot read fresh: other writers commit and expire it while
    this commit writes its manifests. The commit must not publish the freed id."""
    t = catalog.create_table("db.e", SCHEMA, options={"snapshot.num-retained.min": "1",
                                                      "snapshot.num-retained.max": "2"})
    t.write_arrow(batch([1]))
    commit = t.new_commit()
    messages = t.write_messages(batch([2]))
    original = commit.manifest_file.write
    raced = []

    def racing_write(entries):
        if not raced:
            raced.append(True)
            for i in (3, 4, 5):
                ps.Table.open(t.path).write_arrow(batch([i]))  # snapshots 2-4; 1 and 2 expire
        return original(entries)
    monkeypatch.setattr(commit.manifest_file, "write", racing_write)
    assert commit.commit(messages, "u", 1) == [5]
    assert sorted(r["id"] for r in t.to_arrow().to_pylist()) == [1, 2, 3, 4, 5]


def test_compact_commit_conflict_detected(pk_table):
    """Deleting a file that a concurrent commit already removed is a conflict, not a silent loss."""
    from paimon_streaming.commit import CommitMessage, Increment
    pk_table.write_arrow(batch([1]))
    live = TableScan(pk_table.file_io, pk_table.path, pk_table.schema).live_entries(pk_table.latest_snapshot())
    e = live[0]
    pk_table.write_arrow(batch([5]), overwrite=True)  # removes e's file
    msg = CommitMessage(e.partition, e.bucket, e.total_buckets, compact=Increment(deleted_files=[e.file]))
    with pytest.raises(CommitConflictError):
        pk_table.new_commit().commit([msg], "u", 1)


def test_snapshot_id_never_overwritten(pk_table):
    pk_table.write_arrow(batch([1]))
    sm = SnapshotManager(pk_table.file_io, pk_table.path)
    snap = sm.snapshot(1)
    assert sm.try_publish(snap) is False


def test_merge_on_read_writes_compact_when_universal_picking_asks(catalog, warehouse):
    """Like Paimon's writers: sorted runs stay bounded without an explicit compaction."""
    t = catalog.create_table("db.auto", SCHEMA, primary_keys=["id", "p"], partition_keys=["p"],
                             options={"bucket": "1"})
    for i in range(12):
        t.write_arrow(batch(range(i, i + 5), v=f"s{i}"))
    scan_entries = TableScan(t.file_io, t.path, t.schema).live_entries(t.latest_snapshot())
    assert len(scan_entries) <= 5  # num-sorted-run.compaction-trigger
    assert any(s.commit_kind == "COMPACT" for s in t.snapshots())
    expected = {i: f"s{min(i, 11)}{i}" for i in range(16)}
    assert {r["id"]: r["v"] for r in t.to_arrow().to_pylist()} == expected
    assert {r["id"]: r["v"] for r in pypaimon_read(warehouse, "db.auto").to_pylist()} == expected


def test_a_write_whose_compaction_loses_a_race_keeps_its_data(catalog):
    t = catalog.create_table("db.race", SCHEMA, primary_keys=["id", "p"], partition_keys=["p"],
                             options={"bucket": "1"})
    for i in range(4):
        t.write_arrow(batch([i]))
    latest = t.latest_snapshot()
    messages = t.new_write().write(batch([9]).combine_chunks(), TableScan(t.file_io, t.path, t.schema)
                                   .live_entries(latest))
    compacted = [f for m in messages for f in m.compact.new_files]
    assert compacted, "five sorted runs: the write compacts"
    t.compact(full=True)  # a concurrent writer removes the files that compaction read
    ids = t.new_commit().commit(messages, "u", 5, best_effort_compaction=True)
    assert [t.snapshot(i).commit_kind for i in ids] == ["APPEND"]
    assert sorted(r["id"] for r in t.to_arrow().to_pylist()) == [0, 1, 2, 3, 9]
    bucket_dir = f"{t.path}/p=a/bucket-0"
    assert not any(os.path.exists(f"{bucket_dir}/{f.file_name}") for f in compacted)


def test_partition_overwrite_replaces_only_that_partition(pk_table):
    """`overwrite_partitions` (the Spark datasource's dynamic overwrite): files and index
    entries of the other partitions stay live."""
    pk_table.write_arrow(batch([1, 2], v="a", p="a"))
    pk_table.write_arrow(batch([3], v="b", p="b"))
    messages = pk_table.write_messages(batch([7], v="n", p="a"), overwrite=True)
    pk_table.new_commit().commit(messages, "u", 1, overwrite=True,
                                 overwrite_partitions=sorted({m.partition for m in messages}))
    assert rows_by(pk_table.to_arrow(), "id") == [{"id": 3, "v": "b3", "p": "b"}, {"id": 7, "v": "n7", "p": "a"}]


def test_a_failed_upload_among_a_snapshots_concurrent_metadata_writes_leaves_nothing(tmp_path, monkeypatch):
    """On a remote store a snapshot's manifest files, lists and index manifest upload at once.
    When one upload fails, the commit publishes nothing and deletes what the others wrote; the
    batch, written again under the same commit identifier, completes."""
    from paimon_streaming.fileio import FileIO
    fs = pafs.SubTreeFileSystem(str(tmp_path), pafs.LocalFileSystem())
    t = ps.Catalog("", filesystem=fs).create_table(
        "db.t", SCHEMA, primary_keys=["id", "p"], options={"bucket": "2", "deletion-vectors.enabled": "true"})
    assert not t.file_io.is_local  # FileIO.map runs the uploads concurrently
    t.write_arrow(batch([1, 2, 3]), commit_user="u", commit_identifier=0)
    original = FileIO.write_bytes
    manifests, failed = [], []

    def failing_compact_manifest(self, path, data):
        name = path.rsplit("/", 1)[-1]
        if name.startswith("manifest-") and not name.startswith("manifest-list-"):
            manifests.append(path)
            if len(manifests) >= 2:  # the COMPACT snapshot's (the APPEND wrote the first), and its redo
                time.sleep(0.2)  # the base manifest list, uploaded beside it, lands first
                failed.append(path)
                raise OSError(f"injected upload failure of {path}")
        return original(self, path, data)
    monkeypatch.setattr(FileIO, "write_bytes", failing_compact_manifest)
    with pytest.raises(CompactionNotCommittedError, match="injected upload failure") as err:
        t.write_arrow(batch([2, 4], v="new"), commit_user="u", commit_identifier=1)
    assert t.snapshot_manager.snapshot(err.value.snapshot_id).commit_kind == "APPEND"
    monkeypatch.undo()
    assert failed
    # the metadata files uploaded beside the failed one were deleted: no snapshot's, none left
    orphans = t.remove_orphan_files(older_than=2 ** 50, dry_run=True).paths
    assert not [p for p in orphans if "/manifest/" in p], orphans
    assert [s.commit_kind for s in t.snapshots()][-1] == "APPEND"  # the batch's data, not yet compacted
    t.write_arrow(batch([2, 4], v="new"), commit_user="u", commit_identifier=1)  # the stream replays it
    assert [s.commit_kind for s in t.snapshots()][-1] == "COMPACT"
    assert {r["id"]: r["v"] for r in t.to_arrow().to_pylist()} == {1: "x1", 2: "new2", 3: "x3", 4: "new4"}


def test_concurrent_compactions_overlapping_in_a_level_conflict(catalog):
    """Two compactions of different level-0 files of one bucket, each moving its file to the
    top level: each deletes only live files, yet together they put overlapping key ranges in
    one level (a reader would see a key twice). The second commit is a conflict and commits
    nothing."""
    import dataclasses

    from paimon_streaming.commit import CommitMessage, Increment
    t = catalog.create_table("db.lsm", SCHEMA, primary_keys=["id", "p"], partition_keys=["p"],
                             options={"bucket": "1"})
    t.write_arrow(batch([1, 2, 3]))
    t.write_arrow(batch([2, 3, 4, 5], v="y"))
    live = TableScan(t.file_io, t.path, t.schema).live_entries(t.latest_snapshot())
    assert len(live) == 2 and {e.file.level for e in live} == {0}

    def upgrade(e):
        return CommitMessage(e.partition, e.bucket, e.total_buckets, compact=Increment(
            deleted_files=[e.file], new_files=[dataclasses.replace(e.file, level=5)]))
    assert t.new_commit().commit([upgrade(live[0])], "w1", 1) == [3]
    with pytest.raises(CommitConflictError, match=r"LSM conflicts detected in .* bucket 0 level 5: files "):
        t.new_commit().commit([upgrade(live[1])], "w2", 1)
    assert t.latest_snapshot().id == 3
    assert sorted((r["id"], r["v"]) for r in t.to_arrow().to_pylist()) == \
        [(1, "x1"), (2, "y2"), (3, "y3"), (4, "y4"), (5, "y5")]


def test_a_compaction_adding_a_live_file_again_is_a_conflict(pk_table):
    """A compaction whose output is already live (its messages committed once) would count the
    file's rows twice: a conflict, nothing committed."""
    from paimon_streaming.commit import CommitMessage, Increment
    pk_table.write_arrow(batch([1]))
    (e,) = TableScan(pk_table.file_io, pk_table.path, pk_table.schema).live_entries(pk_table.latest_snapshot())
    msg = CommitMessage(e.partition, e.bucket, e.total_buckets, compact=Increment(new_files=[e.file]))
    with pytest.raises(CommitConflictError, match=f"file {e.file.file_name} .* is added twice"):
        pk_table.new_commit().commit([msg], "u", 1)
    assert pk_table.latest_snapshot().id == 1 and pk_table.to_arrow().num_rows == 1
