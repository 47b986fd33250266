"""Random histories of writes, compactions, overwrites, tags, consumers, rollbacks and
expirations against a model (hypothesis), on main alone and with a branch beside it (created
from a tag or empty, written, maintained, fast-forwarded into main, deleted). After every step
each retained snapshot and each tag of every branch reads exactly what it held when it was made,
and no file is left that nothing references (except, until orphan cleanup, what a fast-forward
or a deleted branch left, as in Java); after orphan cleanup with a zero threshold that holds."""
from __future__ import annotations

import itertools
import os
import tempfile
import time

import pyarrow as pa
from hypothesis import HealthCheck, event, given, settings, strategies as st

import paimon_streaming as ps
from paimon_streaming.consumers import ConsumerManager
from paimon_streaming.errors import UnsupportedOperationError
from conftest import rows_by
from test_expire import files_on_disk, referenced_files

SCHEMA = pa.schema([("id", pa.int64(), False), ("v", pa.int64()), ("p", pa.string(), False)])
FUTURE = 2 ** 62

keys = st.lists(st.integers(0, 7), min_size=1, max_size=4, unique=True)
ops = st.one_of(
    st.tuples(st.just("write"), keys),
    st.tuples(st.just("overwrite"), keys),
    st.tuples(st.just("compact")),
    st.tuples(st.just("tag"), st.integers(0, 50)),
    st.tuples(st.just("delete_tag"), st.integers(0, 50)),
    st.tuples(st.just("rollback"), st.integers(0, 50), st.booleans()),
    st.tuples(st.just("expire"), st.integers(1, 4), st.booleans()),
    st.tuples(st.just("consumer"), st.integers(0, 50), st.booleans()),
)


class Model:
    """One branch of the table: what each of its snapshots and tags reads."""

    def __init__(self, table: ps.Table, primary_key: bool, serial: itertools.count | None = None):
        self.t = table
        self.pk = primary_key
        self.rows: list[dict] = []                 # the latest content
        self.contents: dict[int, list[dict]] = {}  # what each snapshot id reads
        self.states: dict[int, list[dict]] = {}    # the model's rows at each snapshot id
        self.tags: dict[str, int] = {}
        self.tag_contents: dict[str, list[dict]] = {}
        self.serial = serial or itertools.count(1)  # shared by branches: every write's values differ

    def committed(self, before: int | None) -> None:
        latest = self.t.snapshot_manager.latest_id()
        for sid in range((before or 0) + 1, (latest or 0) + 1):
            self.contents[sid] = rows_by(self.t.to_arrow(snapshot_id=sid), "id", "v")
            self.states[sid] = list(self.rows)

    def write(self, ids: list[int], overwrite: bool) -> None:
        serial = next(self.serial)
        new = [{"id": i, "v": serial, "p": "odd" if i % 2 else "even"} for i in ids]
        before = self.t.snapshot_manager.latest_id()
        self.t.write_arrow(pa.Table.from_pylist(new, SCHEMA), overwrite=overwrite)
        if overwrite:
            self.rows = new
        elif self.pk:
            self.rows = [r for r in self.rows if r["id"] not in ids] + new
        else:
            self.rows = self.rows + new
        self.committed(before)

    def apply(self, op: tuple) -> None:
        kind = op[0]
        snapshots = [s.id for s in self.t.snapshots()]
        if kind in ("write", "overwrite"):
            self.write(op[1], kind == "overwrite")
        elif kind == "compact" and self.pk and snapshots:
            before = snapshots[-1]
            self.t.compact(full=True)
            self.committed(before)
        elif kind == "tag" and snapshots:
            sid = snapshots[op[1] % len(snapshots)]
            name = f"t{len(self.tags)}-{op[1]}"
            if name not in self.tags:
                self.t.create_tag(name, snapshot_id=sid)
                self.tags[name] = sid
                self.tag_contents[name] = self.contents[sid]
        elif kind == "delete_tag" and self.tags:
            name = sorted(self.tags)[op[1] % len(self.tags)]
            self.t.delete_tag(name)
            del self.tags[name], self.tag_contents[name]
        elif kind == "rollback" and (snapshots or self.tags):
            if op[2] and self.tags:
                name = sorted(self.tags)[op[1] % len(self.tags)]
                target, sid = name, self.tags[name]
            elif snapshots:
                target = sid = snapshots[op[1] % len(snapshots)]
            else:
                return
            assert self.t.rollback_to(target).id == sid
            self.rows = list(self.states[sid])
            self.tags = {n: i for n, i in self.tags.items() if i <= sid}
            self.tag_contents = {n: c for n, c in self.tag_contents.items() if n in self.tags}
            self.contents = {i: c for i, c in self.contents.items() if i <= sid}
        elif kind == "expire":
            older_than = FUTURE if op[2] else None
            self.t.expire_snapshots(retain_max=op[1], retain_min=1, older_than=older_than)
        elif kind == "consumer" and snapshots and self.t.branch == "main":
            consumers = ConsumerManager(self.t.file_io, self.t.path)
            if op[2]:
                consumers.record("reader", snapshots[op[1] % len(snapshots)])
            else:
                consumers.delete("reader")

    def check(self) -> None:
        t = self.t
        latest = t.latest_snapshot()
        # deletion-vector readers do not see level 0: after a rollback to an APPEND snapshot its
        # new rows stay invisible until their bucket is compacted again, so only the recorded
        # reads below are the truth there
        if latest is not None and not t.options.deletion_vectors:
            assert rows_by(t.to_arrow(), "id", "v") == rows_by(pa.Table.from_pylist(self.rows, SCHEMA), "id", "v")
        for s in t.snapshots():
            assert rows_by(t.to_arrow(snapshot_id=s.id), "id", "v") == self.contents[s.id], s.id
        assert sorted(t.tags()) == sorted(self.tags)
        for name in self.tags:
            assert rows_by(t.to_arrow(tag=name), "id", "v") == self.tag_contents[name], name
        consumer = ConsumerManager(t.file_io, t.path).next_snapshot("reader")
        if consumer is not None and latest is not None and t.branch == "main":
            assert t.snapshot_manager.earliest_id() <= min(consumer, latest.id)


@settings(max_examples=50, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(kind=st.sampled_from(["pk", "dv", "append", "partitioned"]), steps=st.lists(ops, min_size=1, max_size=12))
def test_random_lifecycle_histories(kind, steps):
    with tempfile.TemporaryDirectory() as wh:
        options = {"bucket": "2"} if kind != "append" else {}
        if kind == "dv":
            options["deletion-vectors.enabled"] = "true"
        primary_keys = {"append": None, "partitioned": ["id", "p"]}.get(kind, ["id"])
        table = ps.Catalog(wh).create_table("db.t", SCHEMA, primary_keys=primary_keys, options=options,
                                            partition_keys=["p"] if kind == "partitioned" else None)
        model = Model(table, kind != "append")
        for op in steps:
            model.apply(op)
            model.check()
            assert files_on_disk(table) == referenced_files(table)
        table.write_messages(pa.Table.from_pylist([{"id": 99, "v": 0, "p": "odd"}], SCHEMA))  # uncommitted
        assert files_on_disk(table) != referenced_files(table)
        table.remove_orphan_files(older_than=int(time.time() * 1000) + 1000)
        assert files_on_disk(table) == referenced_files(table)
        model.check()


# ---- with a branch ------------------------------------------------------------------------
BRANCH = "b"
on_branch = st.booleans()
branch_ops = st.one_of(
    st.tuples(st.just("on"), on_branch, ops),               # an op on main or on the branch
    st.tuples(st.just("create_branch"), st.integers(0, 50), st.booleans()),
    st.tuples(st.just("fast_forward")),
    st.tuples(st.just("delete_branch")),
)


def all_referenced_files(t: ps.Table) -> set[str]:
    return set().union(*(referenced_files(ps.Table.open(t.path, branch=b)) for b in ["main", *t.branches()]))


class BranchedModel:
    """Main and at most one branch, each a Model; fast-forward and branch deletion as Java's."""

    def __init__(self, table: ps.Table, primary_key: bool):
        self.main = Model(table, primary_key)
        self.branch: Model | None = None
        self.pk = primary_key
        self.orphans_allowed = False  # a fast-forward or a deleted branch leaves files to orphan cleanup

    def apply(self, op: tuple) -> None:
        kind = op[0]
        main = self.main
        if kind == "on":
            (self.branch if op[1] and self.branch is not None else main).apply(op[2])
        elif kind == "create_branch" and self.branch is None:
            tagged = sorted(main.tags)
            tag = tagged[op[1] % len(tagged)] if op[2] and tagged else None
            branch = Model(main.t.create_branch(BRANCH, tag=tag), self.pk, main.serial)
            if tag is not None:
                sid = main.tags[tag]
                branch.contents[sid], branch.states[sid] = main.tag_contents[tag], list(main.states[sid])
                branch.rows = list(main.states[sid])
                branch.tags[tag], branch.tag_contents[tag] = sid, main.tag_contents[tag]
            self.branch = branch
        elif kind == "fast_forward" and self.branch is not None and self.branch.contents:
            self.fast_forward()
        elif kind == "delete_branch" and self.branch is not None:
            main.t.delete_branch(BRANCH)
            self.branch = None
            self.orphans_allowed = True

    def fast_forward(self) -> None:
        main, branch = self.main, self.branch
        first = min(s.id for s in branch.t.snapshots())
        from_main = first in {s.id for s in main.t.snapshots()}
        try:
            latest = main.t.fast_forward(BRANCH)
            # without force, no snapshot of main's is lost: those it replaces read as the branch's
            assert all(branch.contents.get(i) == c for i, c in main.contents.items() if i >= first)
        except UnsupportedOperationError as refused:
            if "do not continue" in str(refused):
                event("fast-forward refused")
                return  # main unchanged: check() says so
            assert "that the branch does not hold" in str(refused)
            assert any(i >= first for i in main.contents)
            main.check()  # unchanged
            event("fast-forward refused: main has commits the branch does not hold; forced")
            latest = main.t.fast_forward(BRANCH, force=True)  # as Java's: they are dropped
        assert latest.id == max(branch.contents)
        main.contents = {i: c for i, c in main.contents.items() if i < first} | dict(branch.contents)
        main.states = {i: c for i, c in main.states.items() if i < first} | dict(branch.states)
        main.rows = list(branch.rows)
        kept = {n: i for n, i in main.tags.items() if i < first}
        main.tag_contents = {n: main.tag_contents[n] for n in kept} | dict(branch.tag_contents)
        main.tags = kept | dict(branch.tags)
        self.orphans_allowed = True
        event(f"fast-forward from {'main' if from_main else 'a new'} snapshot")

    def check(self) -> None:
        self.main.check()
        if self.branch is not None:
            assert ps.Table.open(self.main.t.path).branches() == [BRANCH]
            self.branch.check()
        on_disk, referenced = files_on_disk(self.main.t), all_referenced_files(self.main.t)
        assert referenced <= on_disk, sorted(referenced - on_disk)  # nothing read is missing
        if not self.orphans_allowed:
            assert on_disk == referenced


def main_op(op: tuple) -> tuple:
    return ("on", False, op)


# A history: main's own, a branch made from one of its tags (or empty), both written and
# maintained in turn, the branch fast-forwarded into main or deleted (or neither), main goes on.
histories = st.tuples(
    st.lists(ops.map(main_op), max_size=8),
    st.tuples(st.just("create_branch"), st.integers(0, 50), st.booleans()).map(lambda op: [op]),
    st.lists(branch_ops, max_size=12),
    st.sampled_from([[("fast_forward",)], [("delete_branch",)], []]),
    st.lists(ops.map(main_op), max_size=6),
).map(lambda parts: [("on", False, ("write", [0, 1])), ("on", False, ("tag", 0))] + [op for p in parts for op in p])


@settings(max_examples=int(os.environ.get("LIFECYCLE_EXAMPLES", 40)), deadline=None,
          suppress_health_check=[HealthCheck.too_slow])
@given(kind=st.sampled_from(["pk", "dv", "append"]), steps=histories)
def test_random_histories_with_a_branch(kind, steps):
    with tempfile.TemporaryDirectory() as wh:
        options = {"bucket": "2"} if kind != "append" else {}
        if kind == "dv":
            options["deletion-vectors.enabled"] = "true"
        table = ps.Catalog(wh).create_table("db.t", SCHEMA, primary_keys=None if kind == "append" else ["id"],
                                            options=options)
        model = BranchedModel(table, kind != "append")
        for op in steps:
            model.apply(op)
            model.check()
        table.remove_orphan_files(older_than=int(time.time() * 1000) + 1000)
        model.orphans_allowed = False
        model.check()
