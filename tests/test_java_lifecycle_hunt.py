"""Hunt: one table written and maintained by both us and Paimon's Java 1.4.2, interleaved at
random (Hypothesis draws a seed, the seed a history of 8..16 steps; examples from
JAVA_LIFECYCLE_EXAMPLES, default 10, the longest history from JAVA_LIFECYCLE_STEPS).

Each step is a write, a full compaction, a tag created or deleted, a rollback (to a snapshot or
a tag), a snapshot/changelog expiration, a consumer's progress recorded, an orphan cleanup (a
zero threshold: every file older than now), a partition expiration, or a branch created from a
tag, fast-forwarded into main or deleted, done by us or by Java, on a primary-key table with
deletion vectors, one with `changelog-producer` lookup (and deletion vectors) and a decoupled
changelog lifecycle (`changelog.num-retained.max`, so expired snapshots leave long-lived
changelogs), or an append table; partitioned or not. Steps Java 1.4.2 cannot take are skipped
(see `Hunt.branch_unguarded` and the branch step).

The model records what each snapshot reads and what each snapshot's stream reads when it is
committed (and the content of each tag and branch when made). After every step our reads of
the latest, of every retained snapshot and tag and branch, the stream of every retained
snapshot or long-lived changelog, and the stream from the consumer's position, agree with the
model, and `check_table` finds nothing; Java's reads of every snapshot, tag and branch are
checked at each Java step (in the same JVM as its operation) and at the end. An expiration by
either side keeps every snapshot the consumer has not read. After either side's orphan cleanup
the other side's finds nothing left to delete."""
from __future__ import annotations

import datetime
import itertools
import os
import random
import tempfile
import time

import pyarrow as pa
import pytest
from hypothesis import HealthCheck, Phase, event, given, settings, strategies as st
from hypothesis.errors import InvalidArgument

import paimon_streaming as ps
from paimon_streaming.check import check_table
from paimon_streaming.consumers import ConsumerManager
from paimon_streaming.long_lived_changelogs import long_lived_changelogs
from paimon_streaming.scan import TableScan
from paimon_streaming.table import Table
from conftest import rows_by
from java_oracle import get_oracle
from stream_batches import open_stream, snapshot_changes

EXAMPLES = int(os.environ.get("JAVA_LIFECYCLE_EXAMPLES", "10"))
STEPS = int(os.environ.get("JAVA_LIFECYCLE_STEPS", "16"))  # a history's length: STEPS/2 .. STEPS
SCHEMA = pa.schema([("id", pa.int64(), False), ("v", pa.int64()), ("p", pa.string(), False)])
FIELDS = [{"name": "id", "type": "BIGINT NOT NULL"}, {"name": "v", "type": "BIGINT"},
          {"name": "p", "type": "STRING NOT NULL"}]
OLD, NEW = "2020-01-01", "2999-01-01"  # partition values: OLD expires under '1 d', NEW never
CONSUMER = "hunt-reader"
KEYS = ("id", "v", "p")

KINDS = ["write"] * 4 + ["compact", "tag", "tag", "delete_tag", "rollback", "expire", "expire", "consumer",
                       "orphans", "expire_partitions", "branch", "delete_branch", "fast_forward"]


def random_step(r: random.Random) -> tuple:
    """One step of a history: (kind, "py" or "java", its arguments...)."""
    side, kind = r.choice(["py", "java"]), r.choice(KINDS)
    if kind == "write":
        return kind, side, r.sample(range(8), r.randint(1, 4))
    if kind in ("tag", "delete_tag", "branch"):
        return kind, side, r.randint(0, 50)
    if kind == "rollback":
        return kind, side, r.randint(0, 50), r.random() < 0.5  # to a tag or a snapshot
    if kind == "expire":  # snapshots to keep, and (Java) changelogs to keep
        return kind, side, r.randint(1, 4), r.choice([None, r.randint(1, 8)])
    if kind == "consumer":
        return kind, side, r.randint(0, 50), r.random() < 0.7  # record or delete
    return kind, side


def _now_plus(seconds: float) -> int:
    return int((time.time() + seconds) * 1000)


class Hunt:
    def __init__(self, wh: str, kind: str, partitioned: bool):
        self.kind = kind
        self.pk = kind != "append"
        self.partitioned = partitioned
        options = {"bucket": "2"} if self.pk else {"bucket": "-1"}
        self.dv = kind in ("dv", "lookup")  # we produce a lookup changelog on deletion-vector tables
        if self.dv:
            options["deletion-vectors.enabled"] = "true"
        if kind == "lookup":
            # (not a `changelog.num-retained.min` above the latest snapshot id: Java 1.4.2's
            # changelog expiration then reads changelog-<negative id> and fails the commit)
            options.update({"changelog-producer": "lookup", "changelog.num-retained.max": "30",
                            "changelog.num-retained.min": "1"})
        primary_keys = (["id", "p"] if partitioned else ["id"]) if self.pk else None
        self.t = ps.Catalog(wh).create_table("db.t", SCHEMA, primary_keys=primary_keys, options=options,
                                             partition_keys=["p"] if partitioned else None)
        self.path = self.t.path
        self.java = get_oracle()
        self.serial = itertools.count(1)
        self.rows: list[dict] = []
        self.contents: dict[int, list[dict]] = {}  # what each snapshot id reads
        self.states: dict[int, list[dict]] = {}    # the model's latest rows at that snapshot
        self.changes: dict[int, list[dict]] = {}   # what the stream reads for that snapshot
        self.tags: dict[str, int] = {}
        self.branch: tuple[str, list[dict]] | None = None  # (name, what it reads)
        self.branch_tag: str | None = None
        self.branch_sid = 0
        self.tag_serial = itertools.count()
        self.branch_serial = itertools.count()
        self.log: list[str] = []

    # ---- the model

    def refresh(self) -> None:
        self.t = Table(self.t.file_io, self.path, name=self.t.name)

    def snapshot_ids(self) -> list[int]:
        return [s.id for s in self.t.snapshots()]

    def committed(self, before: int | None) -> None:
        self.refresh()
        latest = self.t.snapshot_manager.latest_id()
        scan = open_stream(self.t, {})
        for sid in range((before or 0) + 1, (latest or 0) + 1):
            self.contents[sid] = rows_by(self.t.to_arrow(snapshot_id=sid), *KEYS)
            self.states[sid] = list(self.rows)
            self.changes[sid] = sorted(snapshot_changes(scan, sid, list(KEYS)), key=_change_key)

    def forget_after(self, sid: int) -> None:
        """Snapshot `sid` is the latest again (rollback, fast-forward): later ones are gone."""
        self.rows = list(self.states[sid])
        for d in (self.contents, self.states, self.changes):
            for i in [i for i in d if i > sid]:
                del d[i]

    def new_rows(self, ids: list[int]) -> list[dict]:
        serial = next(self.serial)
        return [{"id": i, "v": serial, "p": (OLD if i % 2 else NEW) if self.partitioned else "x"} for i in ids]

    def merged(self, new: list[dict]) -> list[dict]:
        if not self.pk:
            return self.rows + new
        ids = {r["id"] for r in new}
        return [r for r in self.rows if r["id"] not in ids] + new

    # ---- one step

    def step(self, op: tuple) -> None:
        kind, side = op[0], op[1]
        self.log.append(repr(op))
        self.java_checks = self.read_plan() if side == "java" else []  # before the model moves
        sids = self.snapshot_ids()
        before = sids[-1] if sids else None
        java_ops = []  # (method, args) run in one JVM after the checks of what Java reads
        taken = self.shared_step(kind, side, op, sids, java_ops)
        if taken is False:
            return None
        if taken:
            pass  # a step both lifecycle hunts take alike
        elif kind == "expire" and sids and not (side == "java" and self.branch_unguarded()):
            k, changelogs = op[2], op[3]
            if side == "py":
                self.t.expire_snapshots(retain_max=k, retain_min=1, older_than=datetime.datetime.now())
            else:
                # Java's changelog lifecycle always decoupled (more changelogs kept than snapshots):
                # an expiration that is not drops the data files of the long-lived changelogs an
                # earlier one left, and leaves those changelogs behind (Paimon 1.4.2)
                options = {"snapshot.num-retained.max": k, "snapshot.num-retained.min": 1,
                           "snapshot.time-retained": "1 ms",
                           "changelog.num-retained.max": k + (changelogs or 30), "changelog.num-retained.min": 1}
                if changelogs is not None:  # Java's changelog expiration too (long-lived ones)
                    options["changelog.time-retained"] = "1 ms"
                java_ops.append(("expire", (self.path, options)))
        elif kind == "consumer" and sids:
            nxt = sids[op[2] % len(sids)] if op[3] else None
            if side == "py":
                consumers = ConsumerManager(self.t.file_io, self.path)
                consumers.record(CONSUMER, nxt) if nxt is not None else consumers.delete(CONSUMER)
            else:
                java_ops.append(("record_consumer", (self.path, CONSUMER, nxt)))
        elif kind == "expire_partitions" and self.partitioned and sids:
            if side == "py":
                self.t.expire_partitions(expiration_time="1 d")
            else:
                java_ops.append(("expire_partitions", (self.path, "1 d")))
            self.rows = [r for r in self.rows if r["p"] != OLD]
        elif kind == "branch" and self.tags and self.branch is None:
            tag = sorted(self.tags)[op[2] % len(self.tags)]
            if side == "java" and self.tags[tag] not in sids:
                return self.skipped()  # Java 1.4.2 copies the tagged snapshot's file: it must still exist
            name = f"b{next(self.branch_serial)}"
            if side == "py":
                self.t.create_branch(name, tag=tag)
            else:
                java_ops.append(("create_branch", (self.path, name, tag)))
            self.branch = (name, rows_by(self.t.to_arrow(tag=tag), *KEYS))
            self.branch_tag, self.branch_sid = tag, self.tags[tag]
            sid = self.branch_sid
            self.branch_saved = (self.contents[sid], self.states[sid], self.changes[sid])
        elif kind == "fast_forward" and self.branch is not None:
            sid = self.branch_sid
            if side == "py":
                self.t.fast_forward(self.branch[0], force=True)
            else:
                java_ops.append(("fast_forward", (self.path, self.branch[0])))
            # main's snapshots and tags from the branch's first snapshot on are the branch's
            self.contents[sid], self.states[sid], self.changes[sid] = self.branch_saved
            self.forget_after(sid)
            self.tags = {n: i for n, i in self.tags.items() if i < sid}
            self.tags[self.branch_tag] = sid  # the branch holds the tag it was made from
        else:
            return self.skipped()
        _event(f"{kind} by {side}")
        if side == "java":
            self.run_java(java_ops)
        self.refresh()
        if kind in ("write", "compact", "expire_partitions"):
            self.committed(before)
        if kind == "orphans":
            self.cross_check_orphans(side)
        self.check(kind, side)

    def shared_step(self, kind: str, side: str, op: tuple, sids: list[int], java_ops: list) -> bool | None:
        """A step both lifecycle hunts take alike (test_changelog_lifecycle_hunt's too): True
        when taken, False when the model refused it (logged as skipped), None for another kind."""
        if kind == "write":
            new = self.new_rows(op[2])
            if side == "py":
                self.t.write_arrow(pa.Table.from_pylist(new, SCHEMA))
            else:
                java_ops.append(("write", (self.path, new)))
            self.rows = self.merged(new)
        elif kind == "compact" and sids:
            if side == "py":
                self.t.compact(full=True)
            else:
                java_ops.append(("compact", (self.path,)))
        elif kind == "tag" and sids:
            sid = sids[op[2] % len(sids)]
            name = f"t{next(self.tag_serial)}"
            if side == "py":
                self.t.create_tag(name, snapshot_id=sid)
            else:
                java_ops.append(("create_tag", (self.path, name, sid)))
            self.tags[name] = sid
        elif kind == "delete_tag" and self.tags:
            name = sorted(self.tags)[op[2] % len(self.tags)]
            if self.keeps_tag(side, name):
                self.skipped()
                return False
            if side == "py":
                self.t.delete_tag(name)
            else:
                java_ops.append(("delete_tag", (self.path, name)))
            del self.tags[name]
        elif kind == "rollback" and sids:
            if op[3] and self.tags:
                name = sorted(self.tags)[op[2] % len(self.tags)]
                target, sid = name, self.tags[name]
            else:
                target = sid = sids[op[2] % len(sids)]
            if sid not in self.states or self.refuses_rollback(side, sid):
                self.skipped()
                return False
            if side == "py":
                self.t.rollback_to(target)
            else:
                java_ops.append(("rollback_to", (self.path, target)))
            self.forget_after(sid)
            self.tags = {n: i for n, i in self.tags.items() if i <= sid}
        elif kind == "orphans":
            # let every file's modification time fall before the threshold
            time.sleep(0.01)
            threshold = _now_plus(1)
            if side == "py":
                self.t.remove_orphan_files(older_than=threshold)
            else:
                java_ops.append(("remove_orphan_files", (self.path, threshold)))
        elif kind == "delete_branch" and self.branch is not None:
            if side == "py":
                self.t.delete_branch(self.branch[0])
            else:
                java_ops.append(("delete_branch", (self.path, self.branch[0])))
            self.branch = None
        else:
            return None
        return True

    def keeps_tag(self, side: str, name: str) -> bool:
        """Whether the model refuses `side` deleting tag `name`."""
        return side == "java" and self.branch_unguarded(name)

    def refuses_rollback(self, side: str, sid: int) -> bool:
        """Whether the model refuses `side` rolling back to snapshot `sid` (one it holds)."""
        return side == "java" and self.branch_unguarded(*[n for n, i in self.tags.items() if i > sid])

    def skipped(self) -> None:
        self.log[-1] += " (skipped)"

    def branch_unguarded(self, *deleting: str) -> bool:
        """Whether a branch exists whose tag is gone (or among the tags `deleting`). Java's
        snapshot expiration, tag deletion and rollback count tags, not branches: they would
        delete files such a branch reads (Paimon 1.4.2's own limit; ours keep them)."""
        return self.branch is not None and (self.branch_tag not in self.tags or self.branch_tag in deleting)

    def run_java(self, java_ops: list) -> None:
        """Java's checks of the table as it stands, then Java's operations, in one JVM."""
        with self.java.batch() as b:
            reads = [(what, b.read(self.path, **kw) if kw is not None else b.tags(self.path), expected)
                     for what, kw, expected in self.java_checks]
            for method, args in java_ops:
                getattr(b, method)(*args)
        self.compare_java_reads(reads)

    def read_plan(self) -> list:
        """What Java reads of the table as the model has it now: (what, read arguments, rows)."""
        reads = [(f"snapshot {sid}", {"snapshot_id": sid}, self.contents[sid]) for sid in self.snapshot_ids()]
        reads += [(f"tag {name}", {"tag": name}, self.contents[sid]) for name, sid in sorted(self.tags.items())]
        if self.branch is not None:
            reads.append((f"branch {self.branch[0]}", {"branch": self.branch[0]}, self.branch[1]))
        reads.append(("tags", None, dict(self.tags)))
        return reads

    def compare_java_reads(self, reads: list) -> None:
        for what, pending, expected in reads:
            got = pending.result
            if what != "tags":
                got = sorted(got, key=lambda r: tuple(r[k] for k in KEYS))
            assert got == expected, (f"Java's read of {what}", self.log)

    def cross_check_orphans(self, side: str) -> None:
        """What one side's orphan cleanup left, the other's finds nothing to delete in."""
        threshold = _now_plus(1)
        if side == "java":
            left = self.t.remove_orphan_files(older_than=threshold, dry_run=True)
            assert not left.paths if hasattr(left, "paths") else not left, (left, self.log)
        else:
            with self.java.batch() as b:
                deleted = b.remove_orphan_files(self.path, threshold)
            assert deleted.result == [], (deleted.result, self.log)
            self.refresh()

    # ---- checks

    def check(self, kind: str, side: str) -> None:
        t = self.t
        where = (kind, side, self.log)
        report = check_table(t)
        assert report.ok, ([p.message for p in report.errors()], where)
        sids = self.snapshot_ids()
        latest = sids[-1] if sids else None
        # deletion-vector readers do not see level 0: the latest snapshot reads the model's rows
        # unless level-0 files are left (after a rollback to an APPEND snapshot)
        if latest is not None and (not self.dv or not self.level0(latest)):
            assert rows_by(t.to_arrow(), *KEYS) == rows_by(pa.Table.from_pylist(self.rows, SCHEMA), *KEYS), where
        scan = open_stream(t, {})
        for sid in sids:
            assert rows_by(t.to_arrow(snapshot_id=sid), *KEYS) == self.contents[sid], (sid, where)
            if not self.has_changelog(sid):
                continue  # a tag's copy after its changelog expired (check_table warns of it)
            assert sorted(snapshot_changes(scan, sid, list(KEYS)), key=_change_key) == self.changes[sid], (sid, where)
        for changelog in long_lived_changelogs(t.file_io, self.path):
            sid = changelog.id
            if sid in self.changes and sid not in sids:
                _event("long-lived changelog read")
                got = sorted(snapshot_changes(scan, sid, list(KEYS)), key=_change_key)
                assert got == self.changes[sid], (f"long-lived changelog {sid}", where)
        assert sorted(t.tags()) == sorted(self.tags), where
        for name, sid in self.tags.items():
            assert rows_by(t.to_arrow(tag=name), *KEYS) == self.contents[sid], (name, where)
        if self.branch is not None:
            branch = Table(t.file_io, self.path, name=t.name, branch=self.branch[0])
            assert rows_by(branch.to_arrow(), *KEYS) == self.branch[1], where
            assert branch.tags() == [self.branch_tag], where
        consumer = ConsumerManager(t.file_io, self.path).next_snapshot(CONSUMER)
        if consumer is not None and latest is not None:
            assert t.snapshot_manager.earliest_id() <= min(consumer, latest), ("consumer's snapshots expired", where)
            self.check_consumer_stream(scan, consumer, sids, where)

    def has_changelog(self, sid: int) -> bool:
        """Whether the changelog manifest list snapshot `sid` names exists (none: it does)."""
        name = self.t.snapshot(sid).changelog_manifest_list
        return name is None or self.t.file_io.exists(f"{self.path}/manifest/{name}")

    def level0(self, sid: int) -> bool:
        scan = TableScan(self.t.file_io, self.path, self.t.schema)
        return any(e.file.level == 0 for e in scan.live_entries(self.t.snapshot(sid)))

    def check_consumer_stream(self, scan, consumer: int, sids: list[int], where) -> None:
        """The stream from the consumer's position applied to what the snapshot before it read
        gives what the latest snapshot reads (primary-key tables: by key)."""
        latest = sids[-1]
        base = consumer - 1
        if consumer > latest or (base != 0 and base not in self.states):
            return
        if self.kind == "lookup" and self.t.snapshot(latest).commit_kind == "APPEND":
            return  # its changes come with the changelog of the compaction after it
        if any(self.t.snapshot(i).commit_kind == "OVERWRITE" for i in range(consumer, latest + 1)):
            return  # streams skip overwrites
        if not all(self.has_changelog(i) for i in range(consumer, latest + 1)):
            return
        state = {}
        for n, r in enumerate(self.states.get(base, [])):
            state[(r["id"], r["p"]) if self.pk else n] = r
        extra = itertools.count(len(state))
        for sid in range(consumer, latest + 1):
            for r in snapshot_changes(scan, sid, list(KEYS)):
                row = {k: r[k] for k in KEYS}
                if not self.pk:
                    assert r["_kind"] == "+I", where
                    state[next(extra)] = row
                elif r["_kind"] in ("+I", "+U"):
                    state[(r["id"], r["p"])] = row
                else:
                    state.pop((r["id"], r["p"]), None)
        # level-0 files left at the latest snapshot (a rollback to an APPEND snapshot, then a write
        # of other buckets) are hidden from deletion-vector readers, and from streams until the
        # compaction whose changelog brings them: the stream then equals the latest read
        hidden = self.dv and self.level0(latest)
        expected = rows_by(self.t.to_arrow() if hidden else pa.Table.from_pylist(self.states[latest], SCHEMA), *KEYS)
        assert rows_by(pa.Table.from_pylist(list(state.values()), SCHEMA), *KEYS) == expected, \
            ("the consumer's stream", where)

    def final(self) -> None:
        if self.snapshot_ids():
            self.java_checks = self.read_plan()
            self.run_java([])


def _event(what: str) -> None:
    """Count what a hunt did in Hypothesis's statistics (when run by Hypothesis)."""
    try:
        event(what)
    except InvalidArgument:
        pass


def _change_key(r: dict):
    return tuple(r[k] for k in (*KEYS, "_kind"))


# a seed draws the history (random steps mix every kind from the first example on; Hypothesis's
# own small lists repeat the simplest step); no shrinking: each step may start a JVM, and a
# failure's message carries the steps that led to it
@settings(max_examples=EXAMPLES, deadline=None, suppress_health_check=list(HealthCheck),
          phases=[Phase.explicit, Phase.reuse, Phase.generate])
@given(seed=st.integers(0, 2 ** 32 - 1))
def test_java_and_we_maintain_one_table(seed):
    r = random.Random(seed)
    kind, partitioned = r.choice(["dv", "lookup", "append"]), r.random() < 0.5
    steps = [random_step(r) for _ in range(r.randint(STEPS // 2, STEPS))]
    with tempfile.TemporaryDirectory() as wh:
        hunt = Hunt(wh, kind, partitioned)
        for op in steps:
            hunt.step(op)
        hunt.final()


def _lookup_table(wh: str) -> ps.Table:
    return ps.Catalog(wh).create_table("db.t", SCHEMA, primary_keys=["id"], options={
        "bucket": "1", "deletion-vectors.enabled": "true", "changelog-producer": "lookup"})


@pytest.mark.parametrize("expire_by", ["py", "java"])
def test_a_branch_made_from_a_tag_whose_changelog_expired_checks_clean(expire_by):
    """Expiring a tagged snapshot deletes its changelog manifest list (a tag keeps data, not
    changelog: ours and Java's). A branch made from that tag copies the tag, so its first
    snapshot names the deleted list, as Java's create_branch leaves it; after a fast-forward
    main's snapshot does too. `check_table` reported those snapshots as missing a file (found
    by the hunt: Java wrote and expired, we branched)."""
    with tempfile.TemporaryDirectory() as wh:
        t = _lookup_table(wh)
        for i in range(3):
            t.write_arrow(pa.Table.from_pylist([{"id": i, "v": i, "p": "x"}], SCHEMA))
        tagged = t.latest_snapshot()
        assert tagged.changelog_manifest_list is not None
        t.create_tag("t", snapshot_id=tagged.id)
        t.write_arrow(pa.Table.from_pylist([{"id": 9, "v": 9, "p": "x"}], SCHEMA))
        if expire_by == "py":
            t.expire_snapshots(retain_max=1, retain_min=1, older_than=datetime.datetime.now())
        else:
            get_oracle().run_ops([{"op": "expire", "path": t.path, "options": {
                "snapshot.num-retained.max": "1", "snapshot.num-retained.min": "1",
                "snapshot.time-retained": "1 ms"}}])
        assert not t.file_io.exists(f"{t.path}/manifest/{tagged.changelog_manifest_list}")
        assert check_table(t).ok
        t.create_branch("b", tag="t")
        report = check_table(t)
        assert report.ok, [p.message for p in report.errors()]
        t.fast_forward("b", force=True)
        report = check_table(t)
        assert report.ok, [p.message for p in report.errors()]
        assert rows_by(t.to_arrow(), *KEYS) == [{"id": i, "v": i, "p": "x"} for i in range(3)]
        with get_oracle().batch() as b:  # Java reads what main holds now
            rows = b.read(t.path)
        assert rows_by(pa.Table.from_pylist(rows.result, SCHEMA), *KEYS) == rows_by(t.to_arrow(), *KEYS)



def test_our_rollback_removes_javas_later_long_lived_changelogs():
    """Java's rollback removes the long-lived changelogs after the snapshot it rolls back to
    (and moves their LATEST hint back); ours left them: once new commits reused their ids, a
    stream reading such an id after its snapshot expired would get the changes of the history
    rolled back, and Java's changelog expiration failed reading a changelog its hint named
    (found by the hunt: Java expired, we rolled back to a tag, Java expired again)."""
    with tempfile.TemporaryDirectory() as wh:
        t = _lookup_table(wh)
        for i in range(4):
            t.write_arrow(pa.Table.from_pylist([{"id": i, "v": i, "p": "x"}], SCHEMA))
            if i == 0:
                t.create_tag("t", snapshot_id=2)
        java = get_oracle()
        with java.batch() as b:  # snapshots 1..7 expire, leaving long-lived changelogs
            b.expire(t.path, {"snapshot.num-retained.max": "1", "snapshot.num-retained.min": "1",
                              "snapshot.time-retained": "1 ms", "changelog.num-retained.max": "20"})
        assert [c.id for c in long_lived_changelogs(t.file_io, t.path)][-1] == 7
        t.rollback_to("t")
        assert [c.id for c in long_lived_changelogs(t.file_io, t.path) if c.id > 2] == []
        assert not t.file_io.exists(f"{t.path}/changelog/LATEST") or \
            int(t.file_io.read_bytes(f"{t.path}/changelog/LATEST")) <= 2
        for i in range(3):  # snapshots 3..8 again, other rows
            t.write_arrow(pa.Table.from_pylist([{"id": 10 + i, "v": i, "p": "x"}], SCHEMA))
        with java.batch() as b:
            b.expire(t.path, {"snapshot.num-retained.max": "1", "snapshot.num-retained.min": "1",
                              "snapshot.time-retained": "1 ms", "changelog.num-retained.max": "20"})
            java_rows = b.read(t.path)
        scan = open_stream(t, {})
        later = [c.id for c in long_lived_changelogs(t.file_io, t.path) if c.id > 2]
        assert later == [3, 4, 5, 6, 7]
        for sid in later:  # the new history's changes, nothing of the one rolled back
            assert {r["id"] for r in snapshot_changes(scan, sid, list(KEYS))} <= {10, 11, 12}, sid
        assert rows_by(t.to_arrow(), *KEYS) == rows_by(pa.Table.from_pylist(java_rows.result, SCHEMA), *KEYS)
        assert check_table(t).ok
