"""Java's long-lived changelogs (`changelog/changelog-<id>`, Paimon's decoupled changelog
lifecycle) through their whole life: Java writes them, we and Java expire them, `check` verifies
them (changelog_expire.py, long_lived_changelogs.py, check.py).

The hunt: random histories (Hypothesis draws a seed, the seed a table and a history of
CHANGELOG_LIFECYCLE_STEPS/2 .. CHANGELOG_LIFECYCLE_STEPS steps; examples from
CHANGELOG_LIFECYCLE_EXAMPLES, default 4) on a primary-key table whose changelog outlives its
snapshots (`changelog.num-retained.max` 12 over `snapshot.num-retained.max` 6), with
changelog-producer input, lookup (deletion vectors), full-compaction (Java writes only: ours
refuses that producer) or none. Steps: writes and full compactions (by Java or us; every commit
runs its side's maintenance under those options), Java's expirations (snapshots, leaving
long-lived changelogs; changelogs), ours (snapshots; changelogs with random retention), tags
created and deleted, a consumer recorded at a snapshot or changelog id, rollbacks to a snapshot
or tag, a branch made from a tag and deleted, orphan cleanup by either side.

The model records, when each snapshot is committed, what it reads and what its stream reads.
After every step: `check_table` passes (long-lived changelogs included); the latest, every
snapshot and every tag read as recorded, by us and (at Java's steps, in its JVM) by Java; every
retained snapshot's and long-lived changelog's stream reads as recorded; a stream started at
each kept changelog id (the earliest and one more) reads the recorded changes from there on;
the consumer's changelogs and snapshots are kept. After our changelog expiration, no file only
an expired changelog referenced is left for orphan cleanup, and nothing a retained
snapshot, tag, changelog or branch references is gone (`check`). After either side's orphan
cleanup the other's finds nothing. At the end Java reads every snapshot and tag, streams from
the earliest kept changelog as we do, and its changelog expiration succeeds.

The fixed tests pin the rule against Java's on copies of one table, what `check` reports of
damaged changelog files, and our changelog expiration cut short at each I/O step."""
from __future__ import annotations

import datetime
import itertools
import json
import os
import random
import shutil
import tempfile
from collections import Counter

import pyarrow as pa
import pytest
from hypothesis import HealthCheck, Phase, given, settings, strategies as st

import paimon_streaming as ps
from paimon_streaming.check import check_table, repair_hints
from paimon_streaming.consumers import ConsumerManager
from paimon_streaming.errors import SnapshotExpiredError
from paimon_streaming.file_cleanup import FileCleaner
from paimon_streaming.long_lived_changelogs import long_lived_changelog_ids, long_lived_changelogs, referenced_paths
from paimon_streaming.orphans import OrphanFilesClean
from paimon_streaming.scan import TableScan
from paimon_streaming.table import Table
from conftest import rows_by
from faulty_fileio import FaultyFileIO
from java_oracle import get_oracle
from stream_batches import open_stream, snapshot_changes, stream_rows
from test_fault_injection_lifecycle import _run, files, plan
from test_java_lifecycle_hunt import FIELDS, KEYS, SCHEMA, Hunt as LifecycleHunt, _change_key, _event, _now_plus

EXAMPLES = int(os.environ.get("CHANGELOG_LIFECYCLE_EXAMPLES", "4"))
STEPS = int(os.environ.get("CHANGELOG_LIFECYCLE_STEPS", "10"))
CONSUMER = "changelog-reader"
PRODUCERS = ["input", "lookup", "full-compaction", "none"]
KINDS = ["write"] * 5 + ["compact", "tag", "delete_tag", "rollback", "consumer", "java_expire", "java_expire",
                       "java_expire_changelogs", "py_expire", "py_expire_changelogs", "py_expire_changelogs",
                       "orphans", "branch", "delete_branch"]


def table_options(producer: str) -> dict[str, str]:
    options = {"bucket": "2", "changelog-producer": producer, "snapshot.num-retained.min": "1",
               "snapshot.num-retained.max": "6", "changelog.num-retained.max": "12",
               "changelog.num-retained.min": "1"}
    if producer == "lookup":
        options["deletion-vectors.enabled"] = "true"
    if producer == "full-compaction":
        options["full-compaction.delta-commits"] = "1"  # Java's writes compact fully: a changelog each
    return options


def random_step(r: random.Random) -> tuple:
    side, kind = r.choice(["py", "java"]), r.choice(KINDS)
    if kind == "write":
        return kind, side, r.sample(range(10), r.randint(1, 4))
    if kind in ("tag", "delete_tag", "branch", "consumer"):
        return kind, side, r.randint(0, 60)
    if kind == "rollback":
        return kind, side, r.randint(0, 60), r.random() < 0.5
    if kind == "java_expire":  # snapshots kept; whether Java's changelog expiration may go by time
        return kind, "java", r.randint(1, 4), r.random() < 0.3
    if kind == "java_expire_changelogs":  # changelog.num-retained.max, at least its min (2)
        return kind, "java", r.randint(2, 12)
    if kind == "py_expire":
        return kind, "py", r.randint(1, 4)
    if kind == "py_expire_changelogs":  # retain max, min, by time or by the options' time
        return kind, "py", r.randint(1, 12), r.randint(1, 3), r.random() < 0.8
    return kind, side


def _sorted_changes(rows) -> list[dict]:
    return sorted(rows, key=_change_key)


class Hunt(LifecycleHunt):
    """The model and Java's checks of test_java_lifecycle_hunt (an unpartitioned primary-key
    table; `rows`, `contents`, `states`, `changes`, `tags`, `branch`), with this file's steps
    and checks."""

    def __init__(self, wh: str, producer: str):  # (not the parent's: Java creates this table)
        self.producer, self.kind, self.pk, self.partitioned = producer, producer, True, False
        self.dv = producer == "lookup"
        self.java = get_oracle()
        self.path = f"{wh}/db.db/t"
        self.java.create_table(self.path, FIELDS, primary_keys=["id"], options=table_options(producer))
        self.t = Table.open(self.path)
        self.serial = itertools.count(1)
        self.rows: list[dict] = []
        self.contents, self.states, self.changes = {}, {}, {}
        self.tags: dict[str, int] = {}
        self.branch: tuple[str, list[dict]] | None = None
        self.branch_tag: str | None = None
        self.tag_serial = itertools.count()
        self.branch_serial = itertools.count()
        self.log: list[str] = []
        self.java_checks: list = []

    def changelog_ids(self) -> list[int]:
        return long_lived_changelog_ids(self.t.file_io, self.path)

    # ---- one step

    def step(self, op: tuple) -> None:
        kind, side = op[0], op[1]
        if self.producer == "full-compaction" and kind in ("write", "compact"):
            side = "java"  # our writer refuses that producer
        if kind == "branch":
            side = "py"  # Java's create_branch needs the tagged snapshot to exist
        self.log.append(repr((kind, side, *op[2:])))
        self.java_checks = self.read_plan() if side == "java" else []
        sids = self.snapshot_ids()
        before = sids[-1] if sids else None
        java_ops: list = []
        expired_refs: dict[int, set[str]] = {}
        consumer_before = ConsumerManager(self.t.file_io, self.path).next_snapshot(CONSUMER)
        ids_before = set(sids) | set(self.changelog_ids())
        taken = self.shared_step(kind, side, op, sids, java_ops)
        if taken is False:
            return None
        if taken:
            pass  # a step both lifecycle hunts take alike
        elif kind == "consumer" and sids:  # at a snapshot or a long-lived changelog
            ids = sorted(ids_before)
            nxt = ids[op[2] % len(ids)] if op[2] % 4 else None
            if side == "py":
                consumers = ConsumerManager(self.t.file_io, self.path)
                consumers.record(CONSUMER, nxt) if nxt is not None else consumers.delete(CONSUMER)
            else:
                java_ops.append(("record_consumer", (self.path, CONSUMER, nxt)))
        elif kind == "java_expire" and sids:
            options = {"snapshot.num-retained.max": op[2], "snapshot.num-retained.min": 1,
                       "snapshot.time-retained": "1 ms"}
            if not op[3]:
                options["changelog.time-retained"] = "1 h"
            java_ops.append(("expire", (self.path, options)))
        elif kind == "java_expire_changelogs" and sids:
            # changelog.num-retained.min 2 > the snapshots' 1: decoupled, so Java expires changelogs
            java_ops.append(("expire", (self.path, {"changelog.num-retained.max": op[2],
                                                    "changelog.num-retained.min": 2,
                                                    "changelog.time-retained": "1 ms"})))
        elif kind == "py_expire" and sids:
            expired_refs = self.changelog_refs()
            self.t.expire_snapshots(retain_max=op[2], retain_min=1, older_than=datetime.datetime.now())
        elif kind == "py_expire_changelogs" and sids:
            expired_refs = self.changelog_refs()
            retain_max, retain_min, by_time = op[2], op[3], op[4]
            result = self.t.expire_changelogs(retain_max=max(retain_max, retain_min), retain_min=retain_min,
                                              older_than=datetime.datetime.now() if by_time else None)
            if result.expired:
                _event("our changelog expiration expired some")
        elif kind == "branch" and self.tags and self.branch is None:
            tag = sorted(self.tags)[op[2] % len(self.tags)]
            name = f"b{next(self.branch_serial)}"
            self.t.create_branch(name, tag=tag)
            self.branch, self.branch_tag = (name, rows_by(self.t.to_arrow(tag=tag), *KEYS)), tag
        else:
            return self.skipped()
        _event(f"{kind} by {side}")
        if side == "java":
            self.run_java(java_ops)
        self.refresh()
        if kind in ("write", "compact"):
            self.committed(before)
        if kind == "orphans":
            self.cross_check_orphans(side)
        if expired_refs:
            self.nothing_left_of(expired_refs)
        self.check_changelogs(kind, side, consumer_before, ids_before)

    def keeps_tag(self, side: str, name: str) -> bool:
        return self.branch is not None and self.branch_tag == name  # Java counts tags, not branches (README)

    def refuses_rollback(self, side: str, sid: int) -> bool:
        return self.branch is not None and self.tags.get(self.branch_tag, 0) > sid

    def changelog_refs(self) -> dict[int, set[str]]:
        """The files each long-lived changelog references now, by id."""
        cleaner = FileCleaner(self.t.file_io, self.path, self.t.schema)
        return {c.id: referenced_paths(cleaner, [c]) for c in long_lived_changelogs(self.t.file_io, self.path)}

    def nothing_left_of(self, refs: dict[int, set[str]]) -> None:
        """Our expiration left no file only the changelogs it expired referenced."""
        expired = set(refs) - set(self.changelog_ids())
        if not expired:
            return
        _event("long-lived changelogs expired by us")
        theirs = set().union(*(refs[i] for i in expired))
        left = set(self.t.remove_orphan_files(older_than=_now_plus(1), dry_run=True).paths)
        assert not (left & theirs), (sorted(left & theirs), self.log)

    # ---- checks

    def check_changelogs(self, kind: str, side: str, consumer_before: int | None, ids_before: set[int]) -> None:
        t = self.t
        where = (kind, side, self.log)
        report = check_table(t)
        assert report.ok, ([p.message for p in report.errors()], where)
        sids = self.snapshot_ids()
        changelogs = self.changelog_ids()
        latest = sids[-1] if sids else None
        # (a rollback to a tag whose snapshot expired writes it back beside its changelog)
        assert not changelogs or not sids or changelogs[-1] <= sids[0], (changelogs, sids, where)
        if latest is not None and (not self.dv or not self.level0(latest)):
            assert rows_by(t.to_arrow(), *KEYS) == rows_by(pa.Table.from_pylist(self.rows, SCHEMA), *KEYS), where
        scan = open_stream(t, {})
        for sid in sids:
            assert rows_by(t.to_arrow(snapshot_id=sid), *KEYS) == self.contents[sid], (sid, where)
            if self.has_changelog(sid):
                assert _sorted_changes(snapshot_changes(scan, sid, list(KEYS))) == self.changes[sid], (sid, where)
        for c in long_lived_changelogs(t.file_io, self.path):
            assert c.id in self.changes, (f"long-lived changelog {c.id} of a history rolled back", where)
            name = c.changelog_manifest_list
            if name is None or t.file_io.exists(f"{self.path}/manifest/{name}"):
                got = _sorted_changes(snapshot_changes(scan, c.id, list(KEYS)))
                assert got == self.changes[c.id], (f"long-lived changelog {c.id}", where)
        for cid in changelogs[:1] + changelogs[1:][-1:]:
            self.check_stream_from(cid, where)
        assert sorted(t.tags()) == sorted(self.tags), where
        for name, sid in self.tags.items():
            assert rows_by(t.to_arrow(tag=name), *KEYS) == self.contents[sid], (name, where)
        if self.branch is not None:
            branch = Table(t.file_io, self.path, name=t.name, branch=self.branch[0])
            assert rows_by(branch.to_arrow(), *KEYS) == self.branch[1], where
        consumer = ConsumerManager(t.file_io, self.path).next_snapshot(CONSUMER)
        if consumer is not None and consumer == consumer_before and kind != "rollback":
            needed = {i for i in ids_before if i >= consumer}
            assert needed <= set(changelogs) | set(sids), \
                ("the consumer's changelogs or snapshots expired", consumer, sorted(needed), changelogs, sids, where)

    def check_stream_from(self, cid: int, where) -> None:
        """A stream started at long-lived changelog `cid` reads the recorded changes from there on
        (or, when our snapshot expiration left a gap after the changelogs, fails naming it)."""
        t = self.t
        latest = t.snapshot_manager.latest_id()
        scan = open_stream(t, {"scan.mode": "from-snapshot", "scan.snapshot-id": str(cid)})
        readable = set(self.changelog_ids()) | set(self.snapshot_ids())
        if not set(range(cid, latest + 1)) <= readable:
            with pytest.raises(SnapshotExpiredError):
                stream_rows(scan, list(KEYS))
            _event("a stream from a long-lived changelog stops at a gap")
            return
        expected = [r for sid in range(cid, latest + 1) for r in self.changes[sid]]
        got = stream_rows(scan, list(KEYS))
        assert _sorted_changes(got) == _sorted_changes(expected), (f"a stream from changelog {cid}", where)
        _event("stream from a long-lived changelog")

    def final(self) -> None:
        """Java reads what the model holds, streams from the earliest kept changelog as we do,
        and its changelog expiration succeeds on what we left."""
        sids = self.snapshot_ids()
        if not sids:
            return
        self.java_checks = self.read_plan()
        changelogs = self.changelog_ids()
        stream = None
        with self.java.batch() as b:
            reads = [(what, b.read(self.path, **kw) if kw is not None else b.tags(self.path), expected)
                     for what, kw, expected in self.java_checks]
            if changelogs and set(range(changelogs[0], sids[-1] + 1)) <= set(changelogs) | set(sids):
                stream = b.read(self.path, with_row_kind=True, stream_plans=sids[-1] - changelogs[0] + 2,
                                options={"scan.mode": "from-snapshot", "scan.snapshot-id": changelogs[0]})
            b.expire(self.path, {"changelog.num-retained.max": 3, "changelog.num-retained.min": 2,
                                 "changelog.time-retained": "1 ms"})
            after = b.read(self.path)
        self.compare_java_reads(reads)
        if stream is not None:
            ours = [(*(r[k] for k in KEYS), r["_kind"]) for sid in range(changelogs[0], sids[-1] + 1)
                    for r in self.changes[sid]]
            javas = [(*(r[k] for k in KEYS), r["_ROW_KIND"]) for r in stream.result]
            assert Counter(javas) == Counter(ours), ("Java's stream from changelog", changelogs[0], self.log)
            _event("Java streamed from a long-lived changelog")
        assert rows_by(pa.Table.from_pylist(after.result, SCHEMA), *KEYS) == \
            rows_by(Table.open(self.path).to_arrow(), *KEYS)
        self.refresh()
        assert check_table(self.t).ok, ([p.message for p in check_table(self.t).errors()], self.log)


# no shrinking: each step may start a JVM, and a failure's message carries the steps
@settings(max_examples=EXAMPLES, deadline=None, suppress_health_check=list(HealthCheck),
          phases=[Phase.explicit, Phase.reuse, Phase.generate])
@given(seed=st.integers(0, 2 ** 32 - 1))
def test_javas_long_lived_changelogs_expired_by_both_sides(seed):
    r = random.Random(seed)
    producer = r.choice(PRODUCERS)
    steps = [random_step(r) for _ in range(r.randint(STEPS // 2, STEPS))]
    _event(f"changelog-producer {producer}")
    with tempfile.TemporaryDirectory() as wh:
        hunt = Hunt(wh, producer)
        for op in steps:
            hunt.step(op)
        hunt.final()


# ---- fixed cases ---------------------------------------------------------------------------

def _history_options(producer: str) -> dict[str, str]:
    """A decoupled changelog lifecycle: Java's commits expire all but 3 snapshots and leave the
    rest as long-lived changelogs."""
    options = {"bucket": "1", "changelog-producer": producer, "snapshot.num-retained.min": "1",
               "snapshot.num-retained.max": "3", "changelog.num-retained.max": "50",
               "changelog.num-retained.min": "1"}
    if producer == "full-compaction":
        options["full-compaction.delta-commits"] = "1"
    if producer == "lookup":
        options["deletion-vectors.enabled"] = "true"
    return options


@pytest.fixture(scope="module")
def java_tables(tmp_path_factory) -> dict[str, str]:
    """Per changelog producer, a table Java wrote 8 batches into (lookup: 5) under
    `_history_options`, all in one JVM; tests work on copies (`_copy`)."""
    base = tmp_path_factory.mktemp("java-histories")
    out = {p: str(base / "db.db" / p.replace("-", "_")) for p in PRODUCERS}
    out["tagged"] = str(base / "db.db" / "tagged")  # changelog-producer none, a tag on snapshot 2
    with get_oracle().batch() as b:
        for producer, path in out.items():
            b.create_table(path, FIELDS, primary_keys=["id"],
                           options=_history_options("none" if producer == "tagged" else producer))
            for i in range(8 if producer != "lookup" else 5):
                b.write(path, [{"id": k, "v": i, "p": "x"} for k in range(i, i + 3)])
                if producer == "tagged" and i == 1:
                    b.create_tag(path, "t2", 2)
    return out


def _copy(java_tables: dict[str, str], producer: str, to) -> str:
    path = str(to)
    shutil.copytree(java_tables[producer], path)
    return path


def _changes(t: ps.Table, ids) -> dict[int, list[dict]]:
    scan = open_stream(t, {})
    return {i: _sorted_changes(snapshot_changes(scan, i, list(KEYS))) for i in ids}


def _age(path: str, ids, ms: int) -> None:
    """Make long-lived changelogs `ids` look committed `ms` earlier (their `timeMillis`)."""
    for i in ids:
        with open(f"{path}/changelog/changelog-{i}") as f:
            data = json.load(f)
        data["timeMillis"] -= ms
        with open(f"{path}/changelog/changelog-{i}", "w") as f:
            json.dump(data, f)


HELD_BY = ("retain_min", "consumer", "time")


def test_our_changelog_expiration_keeps_what_javas_keeps(java_tables, tmp_path):
    """On copies of tables Java expired (each changelog producer), Java's changelog expiration and
    ours, under the same retention, keep the same long-lived changelogs: from the third newest on,
    held there by `changelog.num-retained.min`, by a consumer at that id, or (all beyond
    `changelog.num-retained.max`) by `changelog.time-retained` (the older ones an hour old); the
    ones kept stream what they did, and what Java deleted that ours keeps is still named by a
    retained manifest. Before, ours expired none: a table written by Java and maintained by us kept
    every changelog and its files for good. Java's next commit on what ours left reads the same."""
    cases = []  # (producer, held_by, Java's copy, ours, Java's options, our arguments)
    facts = {}
    for producer in PRODUCERS:
        path = _copy(java_tables, producer, tmp_path / producer)
        t = ps.Table.open(path)
        ids = long_lived_changelog_ids(t.file_io, path)
        latest = t.latest_snapshot().id
        assert len(ids) >= 5, (producer, ids)
        facts[producer] = (ids, _changes(t, ids))
        first = ids[-3]
        for held_by in HELD_BY:
            javas, ours = str(tmp_path / f"java-{producer}-{held_by}"), str(tmp_path / f"ours-{producer}-{held_by}")
            shutil.copytree(path, javas)
            shutil.copytree(path, ours)
            java_options = {"changelog.num-retained.max": 40, "changelog.time-retained": "1 ms"}
            ours_args = {"retain_max": 40, "retain_min": 1, "older_than": datetime.datetime.now()}
            if held_by == "retain_min":
                java_options["changelog.num-retained.min"] = ours_args["retain_min"] = latest - first + 1
            elif held_by == "consumer":
                for where in (javas, ours):
                    ConsumerManager(t.file_io, where).record("reader", first)
            else:
                for where in (javas, ours):
                    _age(where, ids[:-3], 3_600_000)
                java_options["changelog.time-retained"] = "30 min"
                ours_args["older_than"] = datetime.datetime.now() - datetime.timedelta(minutes=30)
            cases.append((producer, held_by, javas, ours, java_options, ours_args))
    with get_oracle().batch() as b:
        for _, _, javas, _, java_options, _ in cases:
            b.expire(javas, java_options)
    for producer, held_by, javas, ours, _, ours_args in cases:
        where = (producer, held_by)
        ids, streamed = facts[producer]
        mine = ps.Table.open(ours)
        result = mine.expire_changelogs(**ours_args)
        assert long_lived_changelog_ids(mine.file_io, javas) == ids[-3:], where
        assert long_lived_changelog_ids(mine.file_io, ours) == ids[-3:], where
        assert result.expired == len(ids) - 3 and result.earliest == ids[-3] and result.deleted_files > 0, where
        assert int(open(f"{ours}/changelog/EARLIEST").read()) == ids[-3], where
        assert check_table(mine).ok, (where, check_table(mine).errors())
        assert _changes(mine, ids[-3:]) == {i: streamed[i] for i in ids[-3:]}, where
        # a file Java deleted and ours kept is still named by a manifest of a retained snapshot (with
        # changelog-producer none: a level-0 file compacted away, its ADD and DELETE not merged yet),
        # which orphan cleanup (Java's too) counts as used: it goes once no manifest names it
        used = OrphanFilesClean(mine.file_io, ours, mine.schema).used_file_names()
        assert {f.rsplit("/", 1)[-1] for f in files(ours) - files(javas)} <= used, where
        assert not mine.remove_orphan_files(older_than=_now_plus(1), dry_run=True).paths, where
    reads = []
    with get_oracle().batch() as b:  # Java's next commit (and its changelog expiration) on what we left
        for producer, held_by, _, ours, _, _ in cases:
            if held_by == "consumer":
                b.write(ours, [{"id": 100, "v": 100, "p": "x"}])
                reads.append((ours, b.read(ours), b.remove_orphan_files(ours, _now_plus(1))))
    for ours, java_rows, java_orphans in reads:
        assert java_orphans.result == [], ours
        assert rows_by(pa.Table.from_pylist(java_rows.result, SCHEMA), *KEYS) == \
            rows_by(ps.Table.open(ours).to_arrow(), *KEYS), ours


@pytest.mark.parametrize("producer", ["input", "lookup", "none"])
def test_our_snapshot_expiration_deletes_what_javas_deletes(java_tables, tmp_path, producer):
    """Our snapshot expiration continuing Java's long-lived changelogs (the expired snapshots
    become changelogs too) kept every file the expired snapshots referenced. Java's
    `SnapshotDeletion` keeps only what the changelogs need: with a changelog producer their
    changelog manifests and files, without one the manifests and the files writes made; it
    deletes the data files the snapshots removed and, with a producer, their base and delta
    manifest lists. Ours kept those for good: no changelog expiration or orphan cleanup deleted
    them, as the retained snapshots' unmerged manifests still name them. Now, on copies of one
    table (a tag inside the expired range), ours leaves exactly Java's files, and both read every
    retained snapshot, the tag and every changelog's stream as before."""
    base = _copy(java_tables, producer, tmp_path / "base")
    with get_oracle().batch() as b:
        b.write(base, [{"id": 1, "v": 100, "p": "x"}])
        b.compact(base)
        b.create_tag(base, "kept")
    t = ps.Table.open(base)
    for i in range(3):
        t.write_arrow(pa.Table.from_pylist([{"id": 50 + i, "v": i, "p": "x"}], SCHEMA))
    javas, ours = str(tmp_path / "java"), str(tmp_path / "ours")
    shutil.copytree(base, javas)
    shutil.copytree(base, ours)
    mine = ps.Table.open(ours)
    assert mine.expire_snapshots(retain_max=2, retain_min=1).expired > 0
    with get_oracle().batch() as b:
        b.expire(javas, {"snapshot.num-retained.max": 2, "snapshot.num-retained.min": 1})
    assert files(ours) == files(javas)
    ids = long_lived_changelog_ids(mine.file_io, ours)
    retained = [s.id for s in mine.snapshots()]
    assert check_table(mine).ok, check_table(mine).errors()
    assert _changes(mine, ids) == _changes(ps.Table.open(base), ids)
    with get_oracle().batch() as b:
        snapshots = {i: b.read(ours, snapshot_id=i) for i in retained}
        tag = b.read(ours, tag="kept")
        stream = b.read(ours, with_row_kind=True, stream_plans=len(ids) + len(retained),
                        options={"scan.mode": "from-snapshot", "scan.snapshot-id": ids[0]})
    for i, rows in snapshots.items():
        assert rows_by(pa.Table.from_pylist(rows.result, SCHEMA), *KEYS) == \
            rows_by(mine.to_arrow(snapshot_id=i), *KEYS), i
    assert rows_by(pa.Table.from_pylist(tag.result, SCHEMA), *KEYS) == rows_by(mine.to_arrow(tag="kept"), *KEYS)
    assert stream.result


BY_COUNT = {"changelog.num-retained.max": "20", "changelog.num-retained.min": "10"}
ONE = {"retain_max": 1, "retain_min": 1}, {"snapshot.num-retained.max": 1, "snapshot.num-retained.min": 1}
OLDER_THAN_ALL = {"older_than": 2 ** 62}, {"snapshot.time-retained": "1 ms"}  # (epoch millis, taken as given)


@pytest.mark.parametrize("producer, changelog_options, arguments", [
    ("full-compaction", BY_COUNT, ONE), ("input", BY_COUNT, ONE),
    ("none", {"changelog.time-retained": "1 d"}, OLDER_THAN_ALL)])
def test_expiration_with_arguments_keeps_the_changelog_as_javas_does(tmp_path, producer, changelog_options,
                                                                       arguments):
    """Arguments keeping snapshots shorter than the `changelog.*` options (`retain_max=1` on a
    table keeping its changelog 20 snapshots, `older_than` now on one keeping it a day): Java's
    expiration under those `snapshot.*` options keeps each expired snapshot as a long-lived
    changelog; ours left none, so a stream from snapshot 2 read 8 of Java's 39 rows (the rest
    of the history gone). Now, on copies of one table Java wrote, ours leaves exactly Java's
    files, and both streams read alike."""
    base = str(tmp_path / "db.db" / "base")
    options = {"bucket": "2", "changelog-producer": producer, "snapshot.num-retained.max": "100",
               "snapshot.num-retained.min": "1", **changelog_options}
    with get_oracle().batch() as b:
        b.create_table(base, FIELDS, primary_keys=["id"], options=options)
        for i in range(5):
            b.write(base, [{"id": k, "v": i, "p": "x"} for k in range(i, i + 4)])
            b.compact(base)
    javas, ours = str(tmp_path / "db.db" / "java"), str(tmp_path / "db.db" / "ours")
    shutil.copytree(base, javas)
    shutil.copytree(base, ours)
    latest = ps.Table.open(base).latest_snapshot().id
    streamed = _changes(ps.Table.open(base), range(2, latest))
    mine = ps.Table.open(ours)
    assert mine.expire_snapshots(**arguments[0]).expired == latest - 1
    with get_oracle().batch() as b:
        b.expire(javas, arguments[1])
    assert files(ours) == files(javas)
    assert long_lived_changelog_ids(mine.file_io, ours) == list(range(1, latest))
    assert check_table(mine).ok, check_table(mine).errors()
    assert _changes(mine, range(2, latest)) == streamed
    with get_oracle().batch() as b:
        streams = [b.read(path, with_row_kind=True, stream_plans=latest + 1,
                          options={"scan.mode": "from-snapshot", "scan.snapshot-id": 2}) for path in (javas, ours)]
    rows = [Counter((*(r[k] for k in KEYS), r["_ROW_KIND"]) for r in stream.result) for stream in streams]
    assert rows[0] == rows[1] and sum(rows[0].values()) > 4 * 2  # more than the last snapshot's


def test_changelogs_past_retention_all_go_with_their_hints(java_tables, tmp_path):
    """When every long-lived changelog is past retention ours expires the newest too (Java 1.4.2
    keeps it, and with changelog-producer none a copy of every file live at its snapshot, for
    good once only we maintain the table): the hints go first, so Java lists the directory,
    finds none, and its commits and streams go on."""
    paths = [_copy(java_tables, producer, tmp_path / producer) for producer in ("input", "none")]
    for path in paths:
        t = ps.Table.open(path)
        assert long_lived_changelog_ids(t.file_io, path)
        t.expire_changelogs(retain_max=1, retain_min=1, older_than=datetime.datetime.now())
        assert long_lived_changelog_ids(t.file_io, path) == []
        assert not os.path.exists(f"{path}/changelog/LATEST") and not os.path.exists(f"{path}/changelog/EARLIEST")
        assert check_table(t).ok and not t.remove_orphan_files(older_than=_now_plus(1), dry_run=True).paths
    with get_oracle().batch() as b:
        results = []
        for path in paths:
            b.write(path, [{"id": 100, "v": 100, "p": "x"}])
            b.expire(path, {"changelog.num-retained.max": 4, "changelog.time-retained": "1 ms"})
            results.append((path, b.read(path, with_row_kind=True, stream_plans=2,
                                         options={"scan.mode": "from-snapshot", "scan.snapshot-id": 1}),
                            b.read(path)))
    for path, stream, rows in results:
        assert rows_by(pa.Table.from_pylist(rows.result, SCHEMA), *KEYS) == \
            rows_by(ps.Table.open(path).to_arrow(), *KEYS)
        assert stream.result  # from the earliest snapshot or changelog Java made since


def test_expiration_after_a_commit_expires_javas_changelogs(java_tables, tmp_path):
    """Our commits' maintenance expires Java's long-lived changelogs past the table's
    `changelog.*` retention (`changelog.num-retained.max`, counted from the latest snapshot), and
    the consumer's are kept."""
    path = _copy(java_tables, "input", tmp_path / "t")
    t = ps.Table.open(path)
    ids = long_lived_changelog_ids(t.file_io, path)
    ConsumerManager(t.file_io, path).record("reader", ids[2])
    with t.update_schema() as update:
        update.set_option("changelog.num-retained.max", "6")
    t = ps.Table.open(path)
    t.write_arrow(pa.Table.from_pylist([{"id": 1, "v": 1, "p": "x"}], SCHEMA))
    assert long_lived_changelog_ids(t.file_io, path) == ids[2:]  # the consumer's on
    ConsumerManager(t.file_io, path).delete("reader")
    t.write_arrow(pa.Table.from_pylist([{"id": 2, "v": 2, "p": "x"}], SCHEMA))
    t.expire_snapshots()  # (a commit's own run is skipped while the snapshots' time holds them all)
    latest = t.latest_snapshot().id
    assert long_lived_changelog_ids(t.file_io, path) == [i for i in ids if i >= latest - 6 + 1]
    assert check_table(t).ok and not t.remove_orphan_files(older_than=_now_plus(1), dry_run=True).paths


@pytest.mark.parametrize("gap_by", ["java", "ours"])
def test_no_changelog_is_left_below_a_gap(java_tables, tmp_path, gap_by):
    """Java's changelog expiration reads every id of its range: a gap between long-lived
    changelogs (snapshots expired without one) fails it, and so every later Java commit. Our
    snapshot expiration with explicit retention removed snapshots above Java's changelogs without
    writing changelogs, opening such a gap once Java's next expiration wrote changelogs above it.
    Now ours continues Java's run (the expired snapshots become long-lived changelogs, as Java's
    expiration makes them), and our changelog expiration removes changelogs below a gap another
    expiration left (here Java's own, not decoupled): no stream gets past it. Java then writes,
    expires its changelogs and reads as we do."""
    path = _copy(java_tables, "input", tmp_path / "t")
    t = ps.Table.open(path)
    ids = long_lived_changelog_ids(t.file_io, path)
    streamed = _changes(t, ids)
    if gap_by == "ours":
        t.write_arrow(pa.Table.from_pylist([{"id": 1, "v": 1, "p": "x"}], SCHEMA))
        t.expire_snapshots(retain_max=1, retain_min=1, older_than=datetime.datetime.now())
        earliest = t.snapshot_manager.earliest_id()
        assert long_lived_changelog_ids(t.file_io, path) == list(range(ids[0], earliest))
        assert _changes(t, ids) == streamed
    else:
        with get_oracle().batch() as b:  # not decoupled: snapshots go without changelogs
            b.expire(path, {"snapshot.num-retained.max": 1, "snapshot.time-retained": "1 ms",
                            "changelog.num-retained.max": 1, "changelog.time-retained": "1 ms"})
        assert long_lived_changelog_ids(t.file_io, path) == ids
        assert t.snapshot_manager.earliest_id() > ids[-1] + 1
        t.expire_changelogs()
        assert long_lived_changelog_ids(t.file_io, path) == []
    assert check_table(t).ok and not t.remove_orphan_files(older_than=_now_plus(1), dry_run=True).paths
    with get_oracle().batch() as b:
        for i in range(5):
            b.write(path, [{"id": 60 + i, "v": 60, "p": "x"}])
        b.expire(path, {"changelog.num-retained.max": 4, "changelog.num-retained.min": 2,
                        "changelog.time-retained": "1 ms"})
        rows = b.read(path)
    assert rows_by(pa.Table.from_pylist(rows.result, SCHEMA), *KEYS) == rows_by(ps.Table.open(path).to_arrow(), *KEYS)
    assert check_table(ps.Table.open(path)).ok


def test_deleting_a_tag_keeps_the_files_of_its_snapshots_long_lived_changelog(java_tables, tmp_path):
    """A tag whose snapshot expired into a long-lived changelog (changelog-producer none: the same
    manifest lists, and the level-0 files its stream reads): deleting the tag deleted them, so
    `check` failed and a stream of that changelog (or of the one before, sharing files) failed on a
    missing file (found by the hunt: Java wrote, tagged and expired, we deleted the tag)."""
    path = _copy(java_tables, "tagged", tmp_path / "t")
    t = ps.Table.open(path)
    ids = long_lived_changelog_ids(t.file_io, path)
    assert 2 in ids and t.tags() == ["t2"] and not t.snapshot_manager.exists(2)
    streamed = _changes(t, ids)
    t.delete_tag("t2")
    assert check_table(t).ok, check_table(t).errors()
    assert _changes(t, ids) == streamed
    assert not t.remove_orphan_files(older_than=_now_plus(1), dry_run=True).paths
    t.expire_changelogs(retain_max=1, retain_min=1, older_than=datetime.datetime.now())  # now they go
    assert long_lived_changelog_ids(t.file_io, path) == []
    assert check_table(t).ok and not t.remove_orphan_files(older_than=_now_plus(1), dry_run=True).paths


def _damage(path: str, how: str) -> str:
    """Damage one file a stream of long-lived changelog 2 reads; returns its path."""
    t = ps.Table.open(path)
    changelog = next(c for c in long_lived_changelogs(t.file_io, path) if c.changelog_manifest_list)
    scan = TableScan(t.file_io, path, t.schema)
    if how == "changelog json":
        victim = f"{path}/changelog/changelog-{changelog.id}"
    elif how == "manifest list":
        victim = f"{path}/manifest/{changelog.changelog_manifest_list}"
    elif how == "manifest":
        victim = f"{path}/manifest/{scan.manifest_list.read(changelog.changelog_manifest_list)[0].file_name}"
    else:
        entry = scan.changelog_entries(changelog)[0]
        victim = FileCleaner(t.file_io, path, t.schema).data_file_path(entry)
    if how == "missing data file":
        os.remove(victim)
    else:
        with open(victim, "r+b") as f:
            f.seek(os.path.getsize(victim) // 2)
            f.write(b"\x00garbage\x00")
    return victim


@pytest.mark.parametrize("how", ["changelog json", "manifest list", "manifest", "missing data file",
                                 "damaged data file"])
def test_check_reports_damaged_files_of_long_lived_changelogs(java_tables, tmp_path, how):
    """`check` verifies what a stream reads of Java's long-lived changelogs: a damaged changelog
    file, changelog manifest list or manifest, or a missing or damaged changelog data file is an
    error naming that file (before, `check` passed and the stream failed later)."""
    path = _copy(java_tables, "input", tmp_path / "t")
    assert check_table(ps.Table.open(path)).ok
    victim = _damage(path, how)
    errors = check_table(ps.Table.open(path)).errors()
    assert errors and any(p.path == victim for p in errors), (victim, errors)


def test_check_reports_a_changelog_latest_hint_naming_a_missing_changelog(java_tables, tmp_path):
    """Java takes `changelog/LATEST` for the newest long-lived changelog when none follows it,
    and its changelog expiration then reads it: a hint naming a missing one fails every Java
    commit. `check` reports it, `repair_hints` rewrites it, and Java commits again."""
    path = _copy(java_tables, "input", tmp_path / "t")
    t = ps.Table.open(path)
    ids = long_lived_changelog_ids(t.file_io, path)
    with open(f"{path}/changelog/LATEST", "w") as f:  # damage
        f.write(str(ids[-1] + 100))
    errors = check_table(t).errors()
    assert [p.kind for p in errors] == ["hint"] and errors[0].path.endswith("changelog/LATEST"), errors
    assert repair_hints(t)
    assert check_table(t).ok
    with get_oracle().batch() as b:
        b.write(path, [{"id": 50, "v": 50, "p": "x"}])
        b.expire(path, {"changelog.num-retained.max": 4, "changelog.time-retained": "1 ms"})
    assert check_table(ps.Table.open(path)).ok


@pytest.fixture(scope="module")
def fault_template(java_tables, tmp_path_factory):
    """Tables with long-lived changelogs of both kinds Java leaves (changelog files; the delta of
    changelog-producer none), a tag and a branch made from it, a consumer in the middle."""
    out = {}
    for producer in ("input", "none"):
        path = _copy(java_tables, producer, tmp_path_factory.mktemp(f"changelogs-{producer}") / "t")
        t = ps.Table.open(path)
        ids = long_lived_changelog_ids(t.file_io, path)
        ConsumerManager(t.file_io, path).record("reader", ids[len(ids) // 2])
        t.create_tag("kept", snapshot_id=t.latest_snapshot().id)
        t.create_branch("dev", tag="kept")
        out[producer] = (path, ids, _changes(t, ids))
    return out


def _expire_changelogs(table: ps.Table) -> object:
    return table.expire_changelogs(retain_max=4, retain_min=1, older_than=datetime.datetime.now())


@pytest.mark.parametrize("producer", ["input", "none"])
def test_changelog_expiration_cut_short_at_each_io_step(fault_template, tmp_path, producer):
    """Our changelog expiration failing at an I/O step (tests/faulty_fileio.py: a refused call, a
    lost reply, a torn write, a crash from there on) leaves a table `check` accepts whose kept
    changelogs stream what they did (a contiguous run: the oldest go first), with every file a
    clean run keeps; run again, it leaves what a clean run does."""
    template, ids, streamed = fault_template[producer]
    clean = str(tmp_path / "clean")
    shutil.copytree(template, clean)
    counter = FaultyFileIO()
    assert _run(_expire_changelogs, clean, counter) is None
    kept_ids = long_lived_changelog_ids(ps.Table.open(clean).file_io, clean)
    assert kept_ids == ids[len(ids) // 2:]  # the consumer's on
    kept_files = files(template) & files(clean)
    steps = plan(counter.calls)
    assert any(mode == "crash" for _, mode in steps)
    for n, mode in steps:
        path = str(tmp_path / f"run-{n}-{mode}")
        shutil.copytree(template, path)
        faulty = FaultyFileIO(n, mode)
        error = _run(_expire_changelogs, path, faulty)
        where = f"{mode} at step {n} ({counter.calls[n - 1]} {counter.paths[n - 1]}), {type(error).__name__}"
        t = ps.Table.open(path)
        report = check_table(t)
        assert report.ok, (where, report.errors())
        left = long_lived_changelog_ids(t.file_io, path)
        assert left == ids[ids.index(left[0]):] if left else True, (where, left)
        assert set(kept_ids) <= set(left), where
        assert _changes(t, left) == {i: streamed[i] for i in left}, where
        _expire_changelogs(t)
        assert long_lived_changelog_ids(t.file_io, path) == kept_ids, where
        assert not (kept_files - files(path)), (where, sorted(kept_files - files(path)))
        t.remove_orphan_files(older_than=_now_plus(1))
        assert files(path) <= files(clean), (where, sorted(files(path) - files(clean)))
        assert check_table(ps.Table.open(path)).ok, where
        shutil.rmtree(path)

