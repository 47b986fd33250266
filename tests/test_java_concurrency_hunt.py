"""Our writer and Apache Paimon's Java library (1.4.2, tests/java_oracle.py) on one table at the
same time, as in production beside a Flink/Spark job: a dedicated Java compaction job, Java
writes of the same keys, a Java overwrite, expiration, schema change or rescale.

Our side: a Java operation is forced between our plan (files written, lookups done, deletion
vectors computed) and our commit by a monkeypatched `FileStoreCommit.commit` (the first call
runs the Java operation, in a JVM, then commits), or between our APPEND and COMPACT snapshots.
Java's side: Java's write or compaction pauses after its files and commit messages are made
(the oracle's `pauseBeforeCommit`) while we commit, then commits on its stale base.

After each race our read, Java's read and a model of the table agree: no row lost or
duplicated, no deleted row back; where our commit cannot be made safe it fails with
CommitConflictError (or a subclass) naming the conflict, and the retry ends right.

Each Java step is a JVM run (seconds): CI runs each race on the table kinds most likely to
break; JAVA_RACE_ALL=1 runs every race on every kind (plain merge-on-read, deletion vectors,
lookup changelog) to hunt longer."""
from __future__ import annotations

import os
import threading
import time
import uuid
from pathlib import Path

import pyarrow as pa
import pyarrow.compute as pc
import pytest

import paimon_streaming as ps
from paimon_streaming.check import check_table
from paimon_streaming.commit import FileStoreCommit
from paimon_streaming.errors import CommitConflictError
from paimon_streaming.scan import TableScan
from java_oracle import JavaOracleError, get_oracle, rows_to_json, read_schema, _field_types
from stream_batches import open_stream, snapshot_changes

SCHEMA = pa.schema([("id", pa.int64(), False), ("v", pa.string()), ("p", pa.string(), False)])
DV = {"deletion-vectors.enabled": "true"}
LOOKUP = {"changelog-producer": "lookup", **DV}
KINDS = {  # table options beside bucket 1; "plain" merges on read
    "plain": {},
    "dv": DV,
    "lookup-changelog": LOOKUP,
}
ALL = bool(os.environ.get("JAVA_RACE_ALL"))


def kinds(*in_ci: str) -> list[str]:
    """The table kinds a race runs on: `in_ci`, or every kind with JAVA_RACE_ALL set."""
    return sorted(KINDS) if ALL else list(in_ci)


@pytest.fixture(scope="module")
def java():
    return get_oracle()


def batch(ids, tag: str, part: str = "a") -> pa.Table:
    ids = list(ids)
    return pa.table({"id": ids, "v": [f"{tag}{i}" for i in ids], "p": [part] * len(ids)}, schema=SCHEMA)


def java_rows(ids, tag: str, part: str = "a") -> list[dict]:
    return batch(ids, tag, part).to_pylist()


def make_table(tmp_path, partitioned: bool = False, **options) -> ps.Table:
    opts = {"bucket": "1", **options}
    return ps.Catalog(str(tmp_path / "wh")).create_table(
        "db.t", schema=SCHEMA, primary_keys=["id", "p"] if partitioned else ["id"],
        partition_keys=["p"] if partitioned else [], options=opts)


def ours(t: ps.Table) -> dict:
    out = {}
    for r in ps.Table.open(t.path).to_arrow().to_pylist():
        key = (r["id"], r["p"])
        assert key not in out, f"key {key} read twice: {r} and {out[key]}"
        out[key] = r["v"]
    return out


def javas(java, t: ps.Table) -> dict:
    out = {}
    for r in java.read(t.path):
        key = (r["id"], r["p"])
        assert key not in out, f"Java read key {key} twice: {r} and {out[key]}"
        out[key] = r["v"]
    return out


def model_of(*writes: tuple[list[int], str] | tuple[list[int], str, str]) -> dict:
    out = {}
    for w in writes:
        ids, tag, part = (*w, "a")[:3]
        out.update({(i, part): f"{tag}{i}" for i in ids})
    return out


def agree(java, t: ps.Table, model: dict) -> None:
    """Our read, Java's read and the model hold the same rows; `check` finds no error."""
    mine = ours(t)
    assert mine == model, _diff("ours", mine, model)
    theirs = javas(java, t)
    assert theirs == model, _diff("Java's", theirs, model)
    problems = [p for p in check_table(ps.Table.open(t.path)).problems if p.severity == "error"]
    assert not problems, problems


def changelog_agrees(java, t: ps.Table, before: int, want: list[tuple]) -> None:
    """The changelog of the snapshots after `before`, as our stream reads it and as Java's
    incremental read gives it, is `want`: (row kind, id, v) each exactly once."""
    fresh = ps.Table.open(t.path)
    latest = fresh.latest_snapshot().id
    scan = open_stream(fresh, {})
    mine = sorted((r["_kind"], r["id"], r["v"]) for sid in range(before + 1, latest + 1)
                  for r in snapshot_changes(scan, sid, ["id", "v"]))
    theirs = sorted((r["_ROW_KIND"], r["id"], r["v"])
                    for r in java.read(t.path, incremental_between=(before, latest), with_row_kind=True))
    assert mine == sorted(want), f"our changelog {mine}"
    assert theirs == sorted(want), f"Java's changelog {theirs}"


def updates(old: dict, ids, tag: str) -> list[tuple]:
    """The lookup changelog of writing `ids` tagged `tag` over the table `old`."""
    out = []
    for i in ids:
        if (i, "a") in old:
            out += [("-U", i, old[(i, "a")]), ("+U", i, f"{tag}{i}")]
        else:
            out.append(("+I", i, f"{tag}{i}"))
    return out


def _diff(who: str, got: dict, want: dict) -> str:
    lost = {k: want[k] for k in want if k not in got}
    extra = {k: got[k] for k in got if k not in want}
    wrong = {k: (got[k], want[k]) for k in want if k in got and got[k] != want[k]}
    return f"{who} read differs from the model: lost {lost}, extra {extra}, wrong (got, want) {wrong}"


def java_before_our_commit(monkeypatch, action, kind: str | None = None) -> list:
    """The first commit call of ours (of commit kind `kind`: between our APPEND and COMPACT
    snapshots) runs `action()` first (a Java operation, in its JVM); the list gets its result."""
    ran: list = []
    if kind is None:
        original = FileStoreCommit.commit

        def commit(self, *args, **kwargs):
            if not ran:
                ran.append(action())
            return original(self, *args, **kwargs)
        monkeypatch.setattr(FileStoreCommit, "commit", commit)
    else:
        original_kind = FileStoreCommit._commit_with_retry

        def commit_kind(self, k, *args, **kwargs):
            if k == kind and not ran:
                ran.append(action())
            return original_kind(self, k, *args, **kwargs)
        monkeypatch.setattr(FileStoreCommit, "_commit_with_retry", commit_kind)
    return ran


class PausedJava:
    """A Java write or compaction in a thread of its own, paused after its files and commit
    messages are made (before its commit) until `resume()`; `finish()` gives its outcome
    (the op's result, or the JavaOracleError it failed with)."""

    def __init__(self, java, op: dict, tmp_path: Path):
        tag = uuid.uuid4().hex[:8]
        self.ready, self.go = tmp_path / f"ready-{tag}", tmp_path / f"go-{tag}"
        op = {**op, "pauseBeforeCommit": {"ready": str(self.ready), "go": str(self.go)}}
        self.outcome: list = []
        self.thread = threading.Thread(target=self._run, args=(java, op), daemon=True)
        self.thread.start()
        deadline = time.time() + 120
        while not self.ready.exists():
            if not self.thread.is_alive() or time.time() > deadline:
                self.thread.join(5)
                raise AssertionError(f"Java never reached its commit: {self.outcome}")
            time.sleep(0.02)

    def _run(self, java, op):
        try:
            self.outcome.append(java.run_ops([op])[0])
        except JavaOracleError as e:
            self.outcome.append(e)

    def finish(self):
        self.go.touch()
        self.thread.join(300)
        assert not self.thread.is_alive(), "Java's commit never ended"
        return self.outcome[0]


def java_write_op(t: ps.Table, rows: list[dict], **extra) -> dict:
    types = _field_types(read_schema(t.path)["fields"])
    return {"op": "write", "path": t.path, "rows": rows_to_json(rows, types), **extra}


# ---- a Java compaction between our plan and our commit ------------------------------------------
@pytest.mark.parametrize("kind, full", [(k, f) for k in sorted(KINDS) for f in (True, False)] if ALL else
                         [("dv", True), ("lookup-changelog", False), ("plain", True)])
def test_java_compaction_between_our_plan_and_commit(java, tmp_path, monkeypatch, kind, full):
    """A dedicated Java compaction of the bucket our batch was planned on commits first: on
    deletion-vector and lookup tables our lookup marked rows in (or our compaction read) files
    Java just compacted away; our commit must not land those marks, and the batch must win."""
    t = make_table(tmp_path, **KINDS[kind])
    t.write_arrow(batch(range(0, 10), "a"))
    java.write(t.path, java_rows(range(5, 15), "j"))
    t.write_arrow(batch(range(12, 18), "b"))
    before = t.latest_snapshot().id
    old = model_of((range(0, 10), "a"), (range(5, 15), "j"), (range(12, 18), "b"))
    ran = java_before_our_commit(monkeypatch, lambda: java.run_ops(
        [{"op": "compact", "path": t.path, "full": full}]))
    t.write_arrow(batch(range(3, 13), "o"))
    monkeypatch.undo()
    assert ran
    agree(java, t, {**old, **model_of((range(3, 13), "o"))})
    if kind == "lookup-changelog":  # Java's compaction of compacted files: no changelog of its own
        changelog_agrees(java, t, before, updates(old, range(3, 13), "o"))


@pytest.mark.parametrize("kind", ["dv", "lookup-changelog"] if ALL else ["lookup-changelog"])
def test_java_compaction_between_our_append_and_compact_snapshots(java, tmp_path, monkeypatch, kind):
    """Java compacts after our batch's APPEND snapshot and before its COMPACT one: our
    compaction's input (our level-0 file among them) is gone; it is redone on the new snapshot."""
    t = make_table(tmp_path, **KINDS[kind])
    t.write_arrow(batch(range(0, 10), "a"))
    java.write(t.path, java_rows(range(5, 15), "j"))
    before = t.latest_snapshot().id
    old = model_of((range(0, 10), "a"), (range(5, 15), "j"))
    ran = java_before_our_commit(monkeypatch, lambda: java.compact(t.path), kind="COMPACT")
    t.write_arrow(batch(range(3, 13), "o"), commit_user="me", commit_identifier=1)
    monkeypatch.undo()
    assert ran
    agree(java, t, {**old, **model_of((range(3, 13), "o"))})
    if kind == "lookup-changelog":  # Java's compaction took our level-0 file: its changelog, once
        changelog_agrees(java, t, before, updates(old, range(3, 13), "o"))


# ---- Java writes of the same keys ----------------------------------------------------------------
@pytest.mark.parametrize("kind", kinds("plain", "lookup-changelog"))
def test_java_write_of_the_same_keys_between_our_plan_and_commit(java, tmp_path, monkeypatch, kind):
    """Java writes keys of our batch after we numbered it: both batches start their sequence
    numbers from the same bucket maximum. Merging by sequence number would interleave them key
    by key; our commit conflicts (SequenceConflictError), numbers the batch again and wins, as
    the batch committed last."""
    t = make_table(tmp_path, **KINDS[kind])
    t.write_arrow(batch(range(0, 10), "a"))
    before = t.latest_snapshot().id
    ran = java_before_our_commit(monkeypatch, lambda: java.write(t.path, java_rows(range(5, 15), "j")))
    t.write_arrow(batch(range(3, 8), "o"))
    monkeypatch.undo()
    assert ran
    agree(java, t, model_of((range(0, 10), "a"), (range(5, 15), "j"), (range(3, 8), "o")))
    if kind == "lookup-changelog":  # ours against Java's values, numbered again above them
        old, javas_ = model_of((range(0, 10), "a")), model_of((range(0, 10), "a"), (range(5, 15), "j"))
        changelog_agrees(java, t, before, updates(old, range(5, 15), "j") + updates(javas_, range(3, 8), "o"))


def test_java_commit_on_a_stale_base_ties_are_read_as_java_and_our_compaction_read_them(java, tmp_path):
    """The reverse on a merge-on-read table: Java's write pauses after numbering its rows from
    the bucket as it was; we write keys 5-7 and commit; Java commits on its stale base
    (Java has no sequence check), so keys 5-7 are in two level-0 files with equal sequence
    numbers. Our merge-on-read took the file listed last (Java's: j5-j7) while Java's read and
    our own compaction take the older file's rows (o5-o7): the table's answer changed when it
    was compacted. Now the read merges the files in the order compaction does (level 0 newest
    first: on a tie the file of the lower maximum sequence number wins). Java has no rule for
    such ties (its loser tree decides by the files' places; its compaction of this table can
    even take some keys from each file)."""
    t = make_table(tmp_path)
    t.write_arrow(batch(range(0, 10), "a"))
    paused = PausedJava(java, java_write_op(t, java_rows(range(5, 15), "j")), tmp_path)
    t.write_arrow(batch(range(5, 8), "o"))
    assert paused.finish() == {}  # Java's commit went through
    want = model_of((range(0, 10), "a"), (range(5, 15), "j"), (range(5, 8), "o"))
    agree(java, t, want)
    t.compact(full=True)
    agree(java, t, want)


@pytest.mark.parametrize("kind", ["dv", "lookup-changelog"] if ALL else ["dv"])
def test_java_write_losing_to_ours_leaves_its_rows_in_level_0(java, tmp_path, kind):
    """The reverse on a deletion-vector table: Java's batch commits its level-0 files, then its
    compaction fails ("File deletion conflicts detected": ours rewrote its input). Both readers
    skip level 0 alike; the next compaction (ours) brings Java's rows in by sequence number."""
    t = make_table(tmp_path, **KINDS[kind])
    t.write_arrow(batch(range(0, 10), "a"))
    paused = PausedJava(java, java_write_op(t, java_rows(range(8, 15), "j")), tmp_path)
    t.write_arrow(batch(range(5, 8), "o"))
    outcome = paused.finish()
    assert isinstance(outcome, JavaOracleError) and "File deletion conflicts detected" in str(outcome)
    agree(java, t, model_of((range(0, 10), "a"), (range(5, 8), "o")))
    t.write_arrow(batch([20], "n"))
    agree(java, t, model_of((range(0, 10), "a"), (range(5, 8), "o"), (range(8, 15), "j"), ([20], "n")))


# ---- Java overwrite, expiration, schema change, rescale between our plan and commit --------------
@pytest.mark.parametrize("kind", ["plain", "dv"] if ALL else ["dv"])
def test_java_overwrite_of_our_partition_between_plan_and_commit(java, tmp_path, monkeypatch, kind):
    """Java's INSERT OVERWRITE of partition a lands after we planned a batch into a and b: the
    overwrite's rows are numbered from 0, ours above, so ours win in a as the later commit;
    on a DV table our marks were for files the overwrite removed (conflict, planned again)."""
    t = make_table(tmp_path, partitioned=True, **KINDS[kind])
    t.write_arrow(pa.concat_tables([batch(range(0, 10), "a", "a"), batch(range(0, 10), "a", "b")]))
    ran = java_before_our_commit(monkeypatch, lambda: java.write(
        t.path, java_rows(range(4, 8), "w", "a"), overwrite=True, static_partition={"p": "a"}))
    t.write_arrow(pa.concat_tables([batch(range(6, 12), "o", "a"), batch(range(6, 12), "o", "b")]))
    monkeypatch.undo()
    assert ran
    agree(java, t, model_of((range(4, 8), "w", "a"), (range(6, 12), "o", "a"),
                            (range(0, 10), "a", "b"), (range(6, 12), "o", "b")))


@pytest.mark.parametrize("kind", ["plain", "dv"] if ALL else ["dv"])
def test_java_expiring_the_snapshot_we_planned_on(java, tmp_path, monkeypatch, kind):
    """Java writes, compacts and expires every snapshot but its newest (the one our batch was
    planned on among them, and the files our lookup read) before our commit."""
    t = make_table(tmp_path, **KINDS[kind])
    t.write_arrow(batch(range(0, 10), "a"))
    t.write_arrow(batch(range(5, 12), "b"))

    def java_maintenance():
        with java.batch() as b:
            b.write(t.path, java_rows(range(8, 14), "j"))
            b.compact(t.path)
            b.expire(t.path, {"snapshot.num-retained.max": "1", "snapshot.num-retained.min": "1",
                              "snapshot.time-retained": "1 ms"})
        return True

    ran = java_before_our_commit(monkeypatch, java_maintenance)
    t.write_arrow(batch(range(3, 9), "o"))
    monkeypatch.undo()
    assert ran and ps.Table.open(t.path).snapshot_manager.earliest_id() > 2
    agree(java, t, model_of((range(0, 10), "a"), (range(5, 12), "b"), (range(8, 14), "j"), (range(3, 9), "o")))


@pytest.mark.parametrize("kind", ["plain", "dv"] if ALL else ["dv"])
def test_java_adds_a_column_and_writes_between_our_plan_and_commit(java, tmp_path, monkeypatch, kind):
    """Java adds column x and writes rows with it after we planned: our batch commits under the
    newest schema, its rows read with x null, Java's with theirs."""
    t = make_table(tmp_path, **KINDS[kind])
    t.write_arrow(batch(range(0, 10), "a"))

    def java_evolves():
        java.alter(t.path, [{"kind": "add", "path": ["x"], "type": "STRING"}])
        java.write(t.path, [{**r, "x": f"x{r['id']}"} for r in java_rows(range(6, 12), "j")])
        return True

    ran = java_before_our_commit(monkeypatch, java_evolves)
    t.write_arrow(batch(range(3, 8), "o"))
    monkeypatch.undo()
    assert ran
    agree(java, t, model_of((range(0, 10), "a"), (range(6, 12), "j"), (range(3, 8), "o")))
    xs = {r["id"]: r["x"] for r in ps.Table.open(t.path).to_arrow().to_pylist()}
    assert xs == {i: (f"x{i}" if i in (8, 9, 10, 11) else None) for i in range(12)}
    assert xs == {r["id"]: r["x"] for r in java.read(t.path)}


@pytest.mark.parametrize("kind, op", [("dv", "write"), ("plain", "compact")] + ([("lookup-changelog", "write")] if ALL else []))
def test_a_table_opened_before_javas_new_column_keeps_its_values(java, tmp_path, kind, op):
    """A Table object opened before Java added column x and wrote rows with it: our next write
    (deletion vectors: its lookup compaction) or full compaction rewrote Java's rows under the
    schema the object held, without x: Java's values of x silently gone, for Java's reader
    too. Now a write or compaction planned on a snapshot of a newer schema takes that schema up."""
    t = make_table(tmp_path, **KINDS[kind])
    t.write_arrow(batch(range(0, 10), "a"))
    java.alter(t.path, [{"kind": "add", "path": ["x"], "type": "STRING"}])
    java.write(t.path, [{**r, "x": f"x{r['id']}"} for r in java_rows(range(6, 12), "j")])
    if op == "write":
        t.write_arrow(batch(range(3, 8), "o"))
        want = model_of((range(0, 10), "a"), (range(6, 12), "j"), (range(3, 8), "o"))
    else:
        t.compact(full=True)
        want = model_of((range(0, 10), "a"), (range(6, 12), "j"))
    agree(java, t, want)
    xs = {r["id"]: r["x"] for r in java.read(t.path)}
    assert xs == {i: (f"x{i}" if (i, "a") in want and want[(i, "a")] == f"j{i}" else None) for i in range(12)}
    assert xs == {r["id"]: r["x"] for r in ps.Table.open(t.path).to_arrow().to_pylist()}


def test_java_changes_the_changelog_producer_between_our_plan_and_commit(java, tmp_path, monkeypatch):
    """Java turns the lookup changelog producer on after we planned a batch without one: the
    commit fails as stale (StaleOptionsError) and write_arrow writes the batch again under the
    new options, with its changelog, which Java reads."""
    t = make_table(tmp_path, **DV)
    t.write_arrow(batch(range(0, 6), "a"))
    before = t.latest_snapshot().id
    ran = java_before_our_commit(monkeypatch, lambda: java.alter(
        t.path, [{"kind": "set-option", "key": "changelog-producer", "value": "lookup"}]))
    t.write_arrow(batch(range(4, 8), "o"))
    monkeypatch.undo()
    assert ran
    agree(java, t, model_of((range(0, 6), "a"), (range(4, 8), "o")))
    changes = java.read(t.path, incremental_between=(before, ps.Table.open(t.path).latest_snapshot().id),
                        with_row_kind=True)
    assert sorted((r["_ROW_KIND"], r["id"], r["v"]) for r in changes) == sorted(
        [("-U", 4, "a4"), ("+U", 4, "o4"), ("-U", 5, "a5"), ("+U", 5, "o5"), ("+I", 6, "o6"), ("+I", 7, "o7")])


@pytest.mark.parametrize("kind", kinds("lookup-changelog"))
def test_java_rollback_between_our_plan_and_commit(java, tmp_path, monkeypatch, kind):
    """Java rolls the table back below the snapshot our batch was planned on (our marks and
    compaction were for files the rollback removed): the batch lands on the rolled-back table,
    its rows and changelog against what the table holds after the rollback."""
    t = make_table(tmp_path, **KINDS[kind])
    t.write_arrow(batch(range(0, 10), "a"))
    target = t.latest_snapshot().id
    t.write_arrow(batch(range(5, 15), "b"))
    ran = java_before_our_commit(monkeypatch, lambda: java.run_ops(
        [{"op": "rollback-to", "path": t.path, "snapshotId": target}]))
    t.write_arrow(batch(range(3, 8), "o"))
    monkeypatch.undo()
    assert ran
    old = model_of((range(0, 10), "a"))
    agree(java, t, {**old, **model_of((range(3, 8), "o"))})
    if kind == "lookup-changelog":
        changelog_agrees(java, t, target, updates(old, range(3, 8), "o"))


def java_rescale(java, t: ps.Table, buckets: int) -> None:
    """Java's rescale (Paimon's documented steps): set the bucket count, overwrite the table
    with its own rows."""
    rows = java.read(t.path)
    java.run_ops([{"op": "alter", "path": t.path,
                   "changes": [{"kind": "set-option", "key": "bucket", "value": str(buckets)}]},
                  java_write_op(t, rows, overwrite=True, staticPartition={})])  # INSERT OVERWRITE of all


@pytest.mark.parametrize("kind", ["plain", "dv"] if ALL else ["dv"])
def test_java_rescale_between_our_plan_and_commit(java, tmp_path, monkeypatch, kind):
    """Java rescales the table from 1 bucket to 2 after we planned: our files (hashed for one
    bucket) must not land in a table of two (keys live twice); the commit fails naming the
    rescale and nothing of it lands, and writing the batch again ends right."""
    t = make_table(tmp_path, **KINDS[kind])
    t.write_arrow(batch(range(0, 10), "a"))
    ran = java_before_our_commit(monkeypatch, lambda: java_rescale(java, t, 2) or True)
    with pytest.raises(CommitConflictError, match=r"files of \[1, 2\] buckets: the partition was rescaled"):
        t.write_arrow(batch(range(3, 8), "o"))
    monkeypatch.undo()
    assert ran
    agree(java, t, model_of((range(0, 10), "a")))
    ps.Table.open(t.path).write_arrow(batch(range(3, 8), "o"))
    agree(java, t, model_of((range(0, 10), "a"), (range(3, 8), "o")))
    fresh = ps.Table.open(t.path)
    live = TableScan(fresh.file_io, fresh.path, fresh.schema).live_entries(fresh.latest_snapshot())
    assert {e.total_buckets for e in live} == {2}


# ---- our write-only writer beside Java's dedicated compaction -----------------------------------
@pytest.mark.parametrize("kind", ["plain", "dv"])
def test_our_write_only_writer_commits_while_javas_dedicated_compaction_is_running(java, tmp_path, kind):
    """Paimon's documented pattern: writers with 'write-only' = true, one dedicated compaction
    job. Java's compaction pauses after merging (on a stale base), we commit two batches of
    the same keys, Java commits its compaction: our level-0 files were not its input, they stay
    live above its output by sequence number; every reader agrees, before and after the next
    compaction (deletion-vector readers see our batches once it ran: they skip level 0)."""
    t = make_table(tmp_path, **{"write-only": "true", **KINDS[kind]})
    t.write_arrow(batch(range(0, 10), "a"))
    java.write(t.path, java_rows(range(5, 15), "j"))
    dedicated = {"write-only": "false"}  # as Paimon's dedicated compaction job runs
    paused = PausedJava(java, {"op": "compact", "path": t.path, "options": dedicated}, tmp_path)
    t.write_arrow(batch(range(3, 8), "o"))
    t.write_arrow(batch(range(7, 9), "p"))
    outcome = paused.finish()
    everything = model_of((range(0, 10), "a"), (range(5, 15), "j"), (range(3, 8), "o"), (range(7, 9), "p"))
    assert outcome == {"compacted": 1}
    agree(java, t, model_of((range(0, 10), "a"), (range(5, 15), "j")) if kind == "dv" else everything)
    java.run_ops([{"op": "compact", "path": t.path, "options": dedicated}])
    agree(java, t, everything)



@pytest.mark.parametrize("op", ["delete", "update"])
def test_javas_compaction_over_our_delete_on_a_bucketed_append_table_is_reported_by_check(java, tmp_path, op):
    """Java 1.4 checks deletion-vector conflicts only in bucket-unaware tables: its dedicated
    compaction of a bucketed append table, paused while we delete (or update) a row, commits
    a file rewritten without our mark, and our vector is left on the dead file, the row live
    again. We cannot stop that commit, but `check` reports the stale vector, naming the index
    file, the data file and the snapshot; re-applying the delete (update) repairs the table."""
    t = ps.Catalog(str(tmp_path / "wh")).create_table("db.t", schema=SCHEMA, options={
        "bucket": "1", "bucket-key": "id", "write-only": "true", **DV})
    t.write_arrow(batch(range(0, 3), "a"))
    t.write_arrow(batch([3], "b"))
    paused = PausedJava(java, {"op": "compact", "path": t.path, "options": {"write-only": "false"}}, tmp_path)
    scan = TableScan(t.file_io, t.path, t.schema)

    def apply(table: ps.Table) -> None:
        if op == "delete":
            table.delete(pc.field("id") == 1)
        else:
            table.update(pc.field("id") == 1, {"v": "u1"})
    apply(t)
    marked = {r.data_file_name for e in scan.index_manifest.read(t.latest_snapshot().index_manifest)
              for r in e.index_file.dv_ranges}
    assert paused.finish() == {"compacted": 1}
    t = ps.Table.open(t.path)
    for rows in (t.to_arrow().to_pylist(), java.read(t.path)):  # our mark is lost, for every reader
        assert sorted(r["v"] for r in rows if r["id"] == 1) == (["a1"] if op == "delete" else ["a1", "u1"])
    newest = t.latest_snapshot()
    index = scan.index_manifest.read(newest.index_manifest)
    t.create_tag("raced")
    problems = [p for p in check_table(t).problems if p.kind == "deletion-vector-of-dead-file"]
    assert [(p.severity, p.path.rsplit("/", 1)[-1]) for p in problems] == [("error", index[0].index_file.file_name)] * 2
    dead, = marked
    assert [p.message.split(":")[0] for p in problems] == [f"snapshot {newest.id}", f"tag raced (snapshot {newest.id})"]
    assert all(dead in p.message for p in problems)
    apply(t)
    assert [p.message.split(":")[0] for p in check_table(ps.Table.open(t.path)).errors()] == \
        [f"tag raced (snapshot {newest.id})"]  # a tag keeps what it was made of
    t.delete_tag("raced")
    assert check_table(ps.Table.open(t.path)).ok
    want = {0: "a0", 2: "a2", 3: "b3"} | ({} if op == "delete" else {1: "u1"})
    assert {r["id"]: r["v"] for r in java.read(t.path)} == want


def test_sink_batch_written_again_after_javas_new_column_keeps_its_values(java, tmp_path, monkeypatch):
    """paimon_sink's batch loses a race to Java, which added column x and wrote the same keys
    in between: the sink writes the batch again (SequenceConflictError) on the new snapshot.
    Its plan held the schema loaded at the batch's start, so the task's deletion-vector
    compaction rewrote Java's rows without x; the plan now takes the newer schema up."""
    import types
    from pyspark.sql.pandas.types import from_arrow_schema
    from paimon_streaming.sinks import foreach_batch
    from paimon_streaming.sinks.spark_write import WriteResult

    t = make_table(tmp_path, **DV)
    t.write_arrow(batch(range(0, 10), "a"))
    ours_batch = batch(range(3, 8), "o")
    calls = []

    def write_racing_java(df, plan):  # the executors' write of the batch, Java committing after the first
        calls.append(plan.schema_json)
        messages = plan.write(ours_batch, whole_batch=True)
        if len(calls) == 1:
            java.alter(t.path, [{"kind": "add", "path": ["x"], "type": "STRING"}])
            java.write(t.path, [{**r, "x": f"x{r['id']}"} for r in java_rows(range(6, 12), "j")])
        return WriteResult(messages, ours_batch.num_rows)

    monkeypatch.setattr(foreach_batch, "write_dataframe", write_racing_java)
    session = types.SimpleNamespace(conf=types.SimpleNamespace(get=lambda key: "UTC"))
    df = types.SimpleNamespace(schema=from_arrow_schema(SCHEMA), sparkSession=session)
    foreach_batch.paimon_sink(t.path, commit_user="sink", shuffle=True)(df, 0)
    assert len(calls) == 2  # written again after the race
    agree(java, t, model_of((range(0, 10), "a"), (range(6, 12), "j"), (range(3, 8), "o")))
    xs = {r["id"]: r["x"] for r in java.read(t.path)}
    assert xs == {i: (f"x{i}" if i >= 8 else None) for i in range(12)}
