"""Exactly-once commits that survive snapshot expiration: committed (commitUser,
commitIdentifier) pairs are recognised after expiration removed every snapshot of the user,
replays are no-ops, and identifiers that go backwards are refused."""
from __future__ import annotations

import threading
import time

import pyarrow as pa
import pytest

import paimon_streaming as ps
from paimon_streaming.commit_users import RECORDS_DIR, CommitUserRecords, IdentifierRanges
from paimon_streaming.errors import CommitIdentifierError, CorruptFileError

SCHEMA = pa.schema([pa.field("id", pa.int64(), False), ("batch", pa.int64())])


def rows(first: int, n: int, batch: int) -> pa.Table:
    return pa.table({"id": list(range(first, first + n)), "batch": [batch] * n}, schema=SCHEMA)


@pytest.fixture
def append_table(catalog):
    """An append table: a batch applied twice shows as duplicated rows."""
    return catalog.create_table("db.events", SCHEMA, options={"snapshot.num-retained.min": "1",
                                                              "snapshot.num-retained.max": "1"})


def test_replays_after_expiration_removed_every_snapshot_of_the_user(catalog, append_table):
    t = append_table
    for user in ("job-a", "job-b"):
        for i in range(5):
            t.write_arrow(rows(100 * i + (0 if user == "job-a" else 50), 3, i), commit_user=user, commit_identifier=i)
    for i in range(3):
        t.write_arrow(rows(10_000 + i, 1, -1))  # anonymous batch writes push the users' snapshots out
    t.expire_snapshots()
    users = {s.commit_user for s in t.snapshots()}
    assert not users & {"job-a", "job-b"}, "the test needs every snapshot of both users expired"
    before = t.to_arrow().num_rows
    snapshots_before = len(t.snapshots())
    for user in ("job-a", "job-b"):
        assert t.committed_identifiers(user, range(6)) == set(range(5))
        for i in range(5):  # every committed pair replayed
            assert t.write_arrow(rows(100 * i, 3, i), commit_user=user, commit_identifier=i) is None
    assert t.to_arrow().num_rows == before == 33
    assert len(t.snapshots()) == snapshots_before
    t.write_arrow(rows(900, 2, 5), commit_user="job-a", commit_identifier=5)  # the next batch still lands
    assert t.to_arrow().num_rows == 35


def test_replay_of_a_live_commit_returns_its_snapshot(catalog):
    t = catalog.create_table("db.t", SCHEMA, primary_keys=["id"], options={"bucket": "1"})
    sid = t.write_arrow(rows(0, 3, 7), commit_user="u", commit_identifier=7)
    assert t.write_arrow(rows(0, 3, 8), commit_user="u", commit_identifier=7) == sid
    assert t.to_arrow().column("batch").to_pylist() == [7, 7, 7]
    assert t.latest_snapshot().id == sid


def test_an_identifier_below_the_users_newest_is_refused(catalog, append_table):
    t = append_table
    t.write_arrow(rows(0, 2, 1199), commit_user="u", commit_identifier=1199)
    with pytest.raises(CommitIdentifierError, match=r"identifier 0 of commit user 'u'.*1199"):
        t.write_arrow(rows(5, 2, 0), commit_user="u", commit_identifier=0)
    assert t.to_arrow().num_rows == 2  # nothing written
    t.write_arrow(rows(10, 1, -1))
    t.expire_snapshots()  # also when the newest identifier is known only from the records
    assert {s.commit_user for s in t.snapshots()} != {"u"}
    with pytest.raises(CommitIdentifierError):
        t.committed_identifiers("u", [5])
    assert t.committed_identifiers("u", [1199, 1200]) == {1199}
    # batch writes of a user (Java's Long.MAX_VALUE identifier) do not take part in the order
    t.write_arrow(rows(20, 1, -1), commit_user="u")
    t.write_arrow(rows(30, 1, 1200), commit_user="u", commit_identifier=1200)
    assert t.to_arrow().num_rows == 5


def test_sink_filter_recognises_expired_batches(catalog, append_table):
    """The commit API the Spark sink uses: filter, then commit the messages."""
    t = append_table
    for batch in range(4):
        msgs = t.write_messages(rows(batch * 10, 2, batch))
        assert not t.committed_identifiers("query-1", [batch])
        t.new_commit().commit(msgs, "query-1", batch)
        t.write_arrow(rows(1000 + batch, 1, -1))  # another writer's commits expire ours
        t.expire_snapshots()
    assert "query-1" not in {s.commit_user for s in t.snapshots()}
    assert t.committed_identifiers("query-1", [3]) == {3}
    assert t.committed_identifiers("query-1", [4]) == set()


def test_records_stay_one_file_per_user_and_skip_batch_commits(catalog, append_table, warehouse):
    t = append_table
    for i in range(6):
        t.write_arrow(rows(i, 1, i), commit_user="stream", commit_identifier=i)
        t.write_arrow(rows(100 + i, 1, -1), commit_user="batch-user")
        t.expire_snapshots()
    records = CommitUserRecords(t.file_io, t.path)
    assert records.recorded("stream").ranges == [(0, 5)]
    assert len(t.file_io.list_names(records.user_dir("stream"))) == 1
    assert not t.file_io.exists(records.user_dir("batch-user"))
    assert t.file_io.exists(f"{t.path}/{RECORDS_DIR}")
    assert ps.Table.open(t.path).to_arrow().num_rows == 12  # readers ignore the directory


def test_a_damaged_record_is_an_error_naming_it(catalog, append_table):
    t = append_table
    t.write_arrow(rows(0, 1, 0), commit_user="u", commit_identifier=0)
    t.write_arrow(rows(1, 1, -1))
    t.expire_snapshots()
    records = CommitUserRecords(t.file_io, t.path)
    (name,) = t.file_io.list_names(records.user_dir("u"))
    t.file_io.write_bytes(f"{records.user_dir('u')}/{name}", b'{"ranges": [[0,')
    with pytest.raises(CorruptFileError, match=name):
        t.committed_identifiers("u", [0])


def test_identifier_ranges():
    r = IdentifierRanges.of([5, 1, 2, 3, 9], [(6, 7)])
    assert r.ranges == [(1, 3), (5, 7), (9, 9)]
    assert 6 in r and 4 not in r and r.max() == 9
    assert IdentifierRanges().max() is None


def test_concurrent_expiration_never_lets_a_replay_apply_twice(catalog, append_table):
    """Every batch is committed and then replayed while an expire loop runs: each batch is
    applied once (before the records, replays after expiration committed it again)."""
    t = append_table
    stop = threading.Event()
    errors: list[BaseException] = []

    def expire_loop():
        table = ps.Table.open(t.path)
        while not stop.is_set():
            try:
                table.expire_snapshots()
            except BaseException as exc:  # noqa: BLE001 - reported below
                errors.append(exc)
                return

    expirer = threading.Thread(target=expire_loop)
    expirer.start()
    try:
        writer = ps.Table.open(t.path)
        for batch in range(40):
            for _ in range(2):  # the batch, then its replay
                writer.write_arrow(rows(batch * 10, 2, batch), commit_user="w", commit_identifier=batch)
            writer.write_arrow(rows(100_000 + batch, 1, -1))  # pushes "w" out of the retained snapshots
    finally:
        stop.set()
        expirer.join()
    assert not errors, errors
    data = t.to_arrow()
    assert data.num_rows == 40 * 2 + 40
    assert len(set(data.column("id").to_pylist())) == data.num_rows


def test_a_batch_of_another_query_is_told_apart_after_its_snapshots_expired(catalog, append_table):
    """A fresh checkpoint under an old commit user: while the first query's snapshots were live its
    batch 0 was refused (CommitIdentifierError); once they expired, the records had lost which query
    committed them, and batches 0-2 were skipped as replays: their rows lost."""
    from paimon_streaming.commit_users import QUERY_PROPERTY
    from paimon_streaming.sinks.spark_write import committed_replay
    t = append_table
    for batch in range(3):
        t.new_commit().commit(t.write_messages(rows(batch * 10, 2, batch)), "src-to-tgt", batch,
                              properties={QUERY_PROPERTY: "checkpoint:/ck1"})
    t.write_arrow(rows(1000, 1, -1))
    t.expire_snapshots()
    assert "src-to-tgt" not in {s.commit_user for s in t.snapshots()}
    records = CommitUserRecords(t.file_io, t.path)
    assert {q: r.ranges for q, r in records.recorded_queries("src-to-tgt").items()} == {"checkpoint:/ck1": [(0, 2)]}
    assert committed_replay(t, "src-to-tgt", 2, "checkpoint:/ck1", "commitUser")[0]  # the same query: a replay
    with pytest.raises(CommitIdentifierError, match=r"by another streaming query \(checkpoint:/ck1; this one is "):
        committed_replay(t, "src-to-tgt", 0, "checkpoint:/ck2", "commitUser")
    # a later expiration merges the records, queries included; a damaged query list is named
    t.new_commit().commit(t.write_messages(rows(50, 1, 3)), "src-to-tgt", 3, properties={QUERY_PROPERTY: "checkpoint:/ck1"})
    t.write_arrow(rows(1001, 1, -1))
    t.expire_snapshots()
    assert records.recorded_queries("src-to-tgt")["checkpoint:/ck1"].ranges == [(0, 3)]
    (name,) = t.file_io.list_names(records.user_dir("src-to-tgt"))
    path = f"{records.user_dir('src-to-tgt')}/{name}"
    t.file_io.write_bytes(path, t.file_io.read_bytes(path).replace(b"ck1", b"ck9"))
    with pytest.raises(CorruptFileError, match=name):
        committed_replay(t, "src-to-tgt", 0, "checkpoint:/ck2", "commitUser")


@pytest.mark.parametrize("options", [{}, {"primary-key": "id", "bucket": "2", "merge-engine": "aggregation",
                                          "fields.batch.aggregate-function": "sum"}])
def test_two_attempts_of_one_batch_racing_commit_it_once(catalog, options, monkeypatch):
    """A zombie attempt and its retry (one commit user, one identifier): the second to commit
    finds the first's snapshot among those committed since its exactly-once check and commits
    nothing, its files deleted; before, both applied (rows twice, sums doubled). An attempt of
    an older identifier than one committed meanwhile is refused."""
    from paimon_streaming.table import Table
    pk = options.pop("primary-key", None)
    t = catalog.create_table("db.raced", SCHEMA, primary_keys=[pk] if pk else None, options=options)
    a, b = Table.open(t.path), Table.open(t.path)
    write_planned_rows = Table.write_planned_rows

    def b_commits_first(self, *args, **kwargs):  # A has passed its check; B, the same batch, commits now
        monkeypatch.setattr(Table, "write_planned_rows", write_planned_rows)
        assert b.write_arrow(rows(0, 3, 1), commit_user="nightly", commit_identifier=7) == 1
        return write_planned_rows(self, *args, **kwargs)
    monkeypatch.setattr(Table, "write_planned_rows", b_commits_first)
    assert a.write_arrow(rows(0, 3, 1), commit_user="nightly", commit_identifier=7) == 1
    assert [(s.commit_user, s.commit_identifier) for s in t.snapshots()] == [("nightly", 7)]
    assert sorted(t.to_arrow().column("batch").to_pylist()) == [1, 1, 1]

    def b_commits_newer(self, *args, **kwargs):
        monkeypatch.setattr(Table, "write_planned_rows", write_planned_rows)
        b.write_arrow(rows(0, 3, 1), commit_user="nightly", commit_identifier=9)
        return write_planned_rows(self, *args, **kwargs)
    monkeypatch.setattr(Table, "write_planned_rows", b_commits_newer)
    with pytest.raises(CommitIdentifierError, match="identifier 9 of commit user 'nightly' was committed"):
        a.write_arrow(rows(0, 3, 1), commit_user="nightly", commit_identifier=8)
    assert [s.commit_identifier for s in t.snapshots()] == [7, 9]
    assert sorted(t.to_arrow().column("batch").to_pylist()) == ([1, 1, 1, 1, 1, 1] if pk is None else [2, 2, 2])
    # the refused attempts' files were deleted, so nothing is left for orphan cleanup
    assert t.remove_orphan_files(older_than=int(time.time() * 1000) + 60_000, dry_run=True).paths == []


def test_racing_attempts_across_an_expiration(catalog, monkeypatch):
    """The other attempt's snapshot expired before this attempt publishes: the commit-user
    records (written before expiration deletes) answer, so the batch still commits once (it
    was applied twice: the expired snapshot was skipped) and the write returns None as a
    replay of an expired commit does."""
    from paimon_streaming.table import Table
    t = catalog.create_table("db.expiring", SCHEMA, primary_keys=["id"], options={
        "bucket": "1", "merge-engine": "aggregation", "fields.batch.aggregate-function": "sum",
        "snapshot.num-retained.max": "2", "snapshot.num-retained.min": "1"})
    a, b = Table.open(t.path), Table.open(t.path)
    write_planned_rows = Table.write_planned_rows

    def b_commits_then_expires(self, *args, **kwargs):
        monkeypatch.setattr(Table, "write_planned_rows", write_planned_rows)
        b.write_arrow(rows(0, 2, 5), commit_user="nightly", commit_identifier=7)
        for i in range(3):  # another user's writes: expiration drops b's snapshot
            b.write_arrow(rows(100 + i, 1, 1), commit_user="other", commit_identifier=i)
        assert "nightly" not in {s.commit_user for s in t.snapshots()}
        return write_planned_rows(self, *args, **kwargs)
    monkeypatch.setattr(Table, "write_planned_rows", b_commits_then_expires)
    assert a.write_arrow(rows(0, 2, 5), commit_user="nightly", commit_identifier=7) is None
    assert sorted((r["id"], r["batch"]) for r in t.to_arrow().to_pylist() if r["id"] < 100) == [(0, 5), (1, 5)]
    assert "nightly" not in {s.commit_user for s in t.snapshots()}
