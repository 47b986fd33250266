"""Branches written here: create, write, maintain, fast-forward and delete them, as Java's
branch manager does; cleanup on one branch never deletes what another branch reads.
(Java reading what we write on branches, and the reverse: test_interop_java.py.)"""
from __future__ import annotations

import datetime
import os
import time

import pyarrow as pa
import pytest

import paimon_streaming as ps
from paimon_streaming.check import check_table
from paimon_streaming.errors import (BranchAlreadyExistsError, InvalidOptionError, TableNotFoundError,
                                     UnsupportedOperationError)

SCHEMA = pa.schema([pa.field("id", pa.int64(), nullable=False), pa.field("v", pa.string())])


def rows(table, **kw) -> dict:
    return {r["id"]: r["v"] for r in table.to_arrow(**kw).to_pylist()}


def batch(ids, v) -> pa.Table:
    return pa.table({"id": list(ids), "v": [v] * len(ids)}, schema=SCHEMA)


@pytest.fixture(params=["dv", "merge-on-read", "append"])
def table(request, catalog):
    options = {"bucket": "2"}
    keys = ["id"]
    if request.param == "dv":
        options["deletion-vectors.enabled"] = "true"
    if request.param == "append":
        keys, options = [], {"bucket": "-1"}
    return catalog.create_table("db.t", schema=SCHEMA, primary_keys=keys, options=options)


def test_write_audit_publish(table, catalog):
    """Stage changes on a branch made from a tag, read them there (main unchanged), publish
    them with fast_forward; main's own later commits are refused, then with `force` replaced,
    as Java's fast-forward does."""
    table.write_arrow(batch(range(10), "main"))
    table.create_tag("t1")
    table.write_arrow(batch([0], "main2"))
    dev = table.create_branch("dev", tag="t1")
    assert table.branches() == ["dev"] and dev.name == "db.t$branch_dev"
    assert rows(dev) == rows(table, tag="t1")
    dev.write_arrow(batch(range(5, 15), "dev"))
    staged = {i: "main" for i in range(5)} | {i: "dev" for i in range(5, 15)}
    if not table.primary_keys:
        staged = None
    audit = catalog.get_table("db.t$branch_dev")
    assert audit.to_arrow().num_rows == (15 if table.primary_keys else 20)
    if staged is not None:
        assert rows(audit) == staged
    assert rows(table) == {i: "main" for i in range(1, 10)} | {0: "main2"}  # main untouched
    assert [s.id for s in dev.snapshots()][0] == table.tag_manager.snapshot("t1").id

    before = [s.id for s in table.snapshots()]
    with pytest.raises(UnsupportedOperationError, match=r"main has snapshots? .* that the branch does not hold"):
        table.fast_forward("dev")  # main's "main2" commit came after t1: it would be lost
    assert [s.id for s in table.snapshots()] == before and rows(table)[0] == "main2"
    latest = table.fast_forward("dev", force=True)
    assert latest.id == dev.latest_snapshot().id
    published = catalog.get_table("db.t")
    assert published.to_arrow().sort_by("id").equals(dev.to_arrow().sort_by("id"))
    assert check_table(published).ok
    published.write_arrow(batch([99], "after"))  # main goes on from the branch's history
    assert published.to_arrow().num_rows == dev.to_arrow().num_rows + 1
    table.delete_branch("dev")
    assert table.branches() == [] and check_table(published).ok
    with pytest.raises(TableNotFoundError, match="no branch 'dev'"):
        ps.Table.open(table.path, branch="dev")


def test_a_branch_has_its_own_schema_tags_and_history(catalog):
    t = catalog.create_table("db.t", schema=SCHEMA, primary_keys=["id"],
                             options={"bucket": "1", "deletion-vectors.enabled": "true"})
    t.write_arrow(batch(range(3), "a"))
    dev = t.create_branch("dev")  # empty, the latest schema
    assert dev.latest_snapshot() is None and dev.to_arrow().num_rows == 0
    with dev.update_schema() as update:
        update.add_column("note", pa.string())
    dev.write_arrow(pa.table({"id": [7], "v": ["b"], "note": ["n"]}))
    dev.create_tag("d1")
    dev.write_arrow(pa.table({"id": [7], "v": ["c"], "note": ["m"]}))
    assert dev.to_arrow(tag="d1").to_pylist() == [{"id": 7, "v": "b", "note": "n"}]
    assert t.schema.field_names == ["id", "v"] and t.tags() == [] and dev.tags() == ["d1"]
    assert rows(t) == {0: "a", 1: "a", 2: "a"}
    dev.rollback_to("d1")
    assert dev.to_arrow().to_pylist() == [{"id": 7, "v": "b", "note": "n"}]
    assert rows(t) == {0: "a", 1: "a", 2: "a"} and check_table(t).ok


def test_cleanup_never_deletes_what_another_branch_reads(catalog):
    """A branch made from tag t1 shares t1's files. Expiring main and deleting t1 on main, and
    expiring the branch after its compactions replaced t1's files, would each delete files the
    other branch still reads, were they not checked against it."""
    t = catalog.create_table("db.t", schema=SCHEMA, primary_keys=["id"],
                             options={"bucket": "1", "deletion-vectors.enabled": "true",
                                      "snapshot.num-retained.min": "1", "snapshot.num-retained.max": "1"})
    t.write_arrow(batch(range(100), "base"))
    t.create_tag("t1")
    dev = t.create_branch("dev", tag="t1")
    for i in range(4):  # main rewrites everything: full compactions replace t1's files
        t.write_arrow(batch(range(100), f"main{i}"))
        t.compact(full=True)
    t.delete_tag("t1")
    for i in range(4):
        dev.write_arrow(batch(range(50), f"dev{i}"))
        dev.compact(full=True)
    assert len(t.snapshots()) == 1 and len(dev.snapshots()) == 1  # both expired down to one snapshot
    assert rows(dev) == {i: "dev3" for i in range(50)} | {i: "base" for i in range(50, 100)}
    assert rows(t) == {i: "main3" for i in range(100)}
    dev.create_tag("keep", snapshot_id=dev.latest_snapshot().id)
    dev.write_arrow(batch(range(100), "dev4"))
    dev.compact(full=True)
    t.delete_branch("dev")
    # the files only the deleted branch used are orphans now, and orphan cleanup removes them
    removed = t.remove_orphan_files(older_than=int(time.time() * 1000) + 1000)
    assert removed.paths and check_table(t).ok
    assert rows(t) == {i: "main3" for i in range(100)}


def test_branch_commits_are_exactly_once_per_branch(catalog):
    t = catalog.create_table("db.t", schema=SCHEMA, primary_keys=["id"], options={"bucket": "1"})
    t.write_arrow(batch([1], "a"), commit_user="u", commit_identifier=5)
    dev = t.create_branch("dev")
    # the same user and identifier on the branch is a commit of its own, not a replay of main's
    sid = dev.write_arrow(batch([2], "b"), commit_user="u", commit_identifier=5)
    assert sid is not None and rows(dev) == {2: "b"}
    assert dev.write_arrow(batch([3], "c"), commit_user="u", commit_identifier=5) == sid  # replay
    assert rows(dev) == {2: "b"} and rows(t) == {1: "a"}


def test_branch_management_refusals(catalog):
    t = catalog.create_table("db.t", schema=SCHEMA, primary_keys=["id"], options={"bucket": "1"})
    t.write_arrow(batch([1], "a"))
    t.create_tag("t1")
    t.create_branch("dev", tag="t1")
    with pytest.raises(BranchAlreadyExistsError, match="branch 'dev' .* already exists"):
        t.create_branch("dev")
    for bad in ("main", "123", "", "a/b", "x$branch_y", "a\nb"):  # the last two: not addressable
        with pytest.raises(InvalidOptionError):
            t.create_branch(bad)
    with pytest.raises(ps.SnapshotNotFoundError, match="tag 'nope'"):
        t.create_branch("x", tag="nope")
    with pytest.raises(TableNotFoundError, match=r"no branch 'nope' \(branches: \['dev'\]\)"):
        t.fast_forward("nope")
    t.create_branch("empty")
    with pytest.raises(ps.SnapshotNotFoundError, match="branch 'empty': it has no snapshot"):
        t.fast_forward("empty")
    dev = ps.Table.open(t.path, branch="dev")
    for change in (lambda: dev.create_branch("x"), lambda: dev.fast_forward("empty"),
                   lambda: dev.delete_branch("empty"), lambda: dev.remove_orphan_files()):
        with pytest.raises(UnsupportedOperationError, match="run it on the main branch"):
            change()
    assert catalog.table_exists("db.t$branch_dev") and not catalog.table_exists("db.t$branch_qa")
    with pytest.raises(ps.PaimonError, match="names a branch: create it from its table"):
        catalog.create_table("db.t$branch_qa", schema=SCHEMA)
    with t.update_schema() as update:
        update.set_option("scan.fallback-branch", "dev")
    with pytest.raises(UnsupportedOperationError, match="'scan.fallback-branch' names it"):
        t.delete_branch("dev")


def test_a_writer_of_a_deleted_branch_or_dropped_table_commits_nothing(table, catalog):
    """A handle on a branch deleted since it opened committed a first snapshot into the deleted
    branch's directory: the branch was listed again, unreadable (no schema), its rows lost.
    The same for a table dropped under its writer."""
    branch = table.create_branch("x")
    table.delete_branch("x")
    with pytest.raises(TableNotFoundError, match="branch 'x' of table .* no longer exists"):
        branch.write_arrow(batch([1], "a"))
    assert table.branches() == [] and check_table(table).ok
    catalog.drop_table("db.t")
    with pytest.raises(TableNotFoundError, match="table .* no longer exists"):
        table.write_arrow(batch([1], "a"))
    assert not catalog.table_exists("db.t")


def test_fast_forward_refuses_to_splice_unrelated_histories(catalog):
    """Main keeps its snapshots below the branch's earliest, so they must be the branch's
    history: the branch's base, or up to the snapshot the branch was made from. A branch that
    expired more than that would follow main's own snapshots (or leave a gap): refused, where
    Java splices; once main has expired everything below the branch's earliest, allowed."""
    t = catalog.create_table("db.t", schema=SCHEMA, primary_keys=["id"], options={"bucket": "1"})
    t.write_arrow(batch([1], "a"))
    t.create_tag("t1")
    t.write_arrow(batch([2], "main"))
    t.write_arrow(batch([3], "main"))
    for name, earliest in (("next", 2), ("behind", 3), ("gap", None)):  # None: only the latest stays
        dev = t.create_branch(name, tag="t1")
        for i in range(5):
            dev.write_arrow(batch([10 + i], "d"))
        latest = dev.latest_snapshot().id
        dev.expire_snapshots(retain_max=latest - (earliest or latest) + 1, retain_min=1)
        assert dev.snapshots()[0].id == (earliest or latest) and latest > 4
    with pytest.raises(UnsupportedOperationError, match="do not continue"):
        t.fast_forward("behind")  # main's own snapshot 2 would precede the branch's 3
    with pytest.raises(UnsupportedOperationError, match="do not continue"):
        t.fast_forward("gap")
    assert rows(t) == {1: "a", 2: "main", 3: "main"}
    t.fast_forward("next", force=True)  # the branch's 2 follows t1, main's 1 (main's own 2, 3 go, as in Java)
    assert rows(ps.Table.open(t.path)) == rows(dev) == {1: "a"} | {10 + i: "d" for i in range(5)}
    assert [s.id for s in t.snapshots()] == list(range(1, latest + 1)) and check_table(t).ok
    for i in range(6):  # main goes on past the branch's earliest, then expires all below it
        t.write_arrow(batch([4 + i], "main"))
    t.expire_snapshots(retain_max=1, retain_min=1)
    t.fast_forward("gap", force=True)
    assert rows(ps.Table.open(t.path)) == {1: "a"} | {10 + i: "d" for i in range(5)} and check_table(t).ok


def test_fast_forward_refuses_to_drop_mains_newer_commits(catalog):
    """A job appending to main while a branch is audited: publishing the branch would drop its
    rows (Java's fast-forward does, silently). Refused, naming main's snapshots, unless `force`;
    a branch made from main's latest snapshot (main an ancestor of it) fast-forwards, again and
    again as it goes on; an empty branch would replace all of main: refused too."""
    t = catalog.create_table("db.t", schema=SCHEMA, primary_keys=["id"], options={"bucket": "1"})
    t.write_arrow(batch([1], "a"))
    t.create_tag("before")
    dev = t.create_branch("backfill", tag="before")
    dev.write_arrow(batch([1], "corrected"))
    t.write_arrow(batch([2], "meanwhile"))  # main's snapshot 2, after the branch was made
    with pytest.raises(UnsupportedOperationError) as refused:
        t.fast_forward("backfill")
    message = str(refused.value)
    assert "main has snapshot 2 that the branch does not hold" in message and "after snapshot 1" in message
    assert "2 (APPEND by commit user" in message and "force=True" in message and "--force" in message
    assert rows(ps.Table.open(t.path)) == {1: "a", 2: "meanwhile"} and [s.id for s in t.snapshots()] == [1, 2]
    assert rows(dev) == {1: "corrected"} and check_table(t).ok

    t.create_tag("now")  # redo the backfill on a branch made from main's latest snapshot
    redo = t.create_branch("redo", tag="now")
    redo.write_arrow(batch([1], "corrected"))
    assert t.fast_forward("redo").id == 3
    assert rows(ps.Table.open(t.path)) == {1: "corrected", 2: "meanwhile"}
    redo.write_arrow(batch([3], "more"))  # main holds the branch's history: publishing again is allowed
    assert t.fast_forward("redo").id == 4 and rows(ps.Table.open(t.path)) == {1: "corrected", 2: "meanwhile",
                                                                                3: "more"}
    t.write_arrow(batch([4], "main"))  # (and perhaps a compaction)
    latest = t.latest_snapshot().id
    redo.write_arrow(batch([5], "branch"))
    with pytest.raises(UnsupportedOperationError, match=rf"main has snapshots? 5(\.\.{latest})? that the branch "):
        t.fast_forward("redo")

    empty = t.create_branch("empty")
    empty.write_arrow(batch([9], "only"))
    with pytest.raises(UnsupportedOperationError, match=rf"main has snapshots 1\.\.{latest} .*created empty"):
        t.fast_forward("empty")
    assert rows(ps.Table.open(t.path)) == {1: "corrected", 2: "meanwhile", 3: "more", 4: "main"}
    t.fast_forward("backfill", force=True)  # as Java's: main's commits after the branch's base go
    assert rows(ps.Table.open(t.path)) == {1: "corrected"} and check_table(ps.Table.open(t.path)).ok


def test_branch_operations_on_a_branch_say_why(catalog):
    """Creating, deleting or fast-forwarding branches from a branch's table is refused with a
    message about branches (not the one of table-wide cleanup)."""
    t = catalog.create_table("db.t", schema=SCHEMA, primary_keys=["id"], options={"bucket": "1"})
    t.write_arrow(batch([1], "a"))
    t.create_tag("t1")
    dev = t.create_branch("dev", tag="t1")
    for change, what in ((lambda: dev.create_branch("x", tag="t1"), "creating branch 'x'"),
                         (lambda: dev.delete_branch("dev"), "deleting branch 'dev'"),
                         (lambda: dev.fast_forward("dev"), "fast-forwarding to branch 'dev'")):
        with pytest.raises(UnsupportedOperationError) as refused:
            change()
        message = str(refused.value)
        assert message.startswith(f"{what} on branch 'dev' of {t.path}: branches are created") and \
            "from the main branch" in message and "$branch_dev" in message and "whole table" not in message
    assert t.branches() == ["dev"]


def test_check_covers_every_branch(catalog):
    """`check` of a table verifies its branches too: a file only a branch uses, deleted by hand,
    is reported (as a missing file of that branch), and main alone would look whole."""
    t = catalog.create_table("db.t", schema=SCHEMA, primary_keys=["id"], options={"bucket": "1"})
    t.write_arrow(batch(range(3), "a"))
    t.create_tag("t1")
    dev = t.create_branch("dev", tag="t1")
    dev.write_arrow(batch([7], "b"))
    assert check_table(t).ok
    [added] = [e for e in dev.plan(dev.latest_snapshot())[0].files if e.file_name not in
               {f.file_name for s in t.plan(t.latest_snapshot()) for f in s.files}]
    t.file_io.delete(f"{t.path}/bucket-0/{added.file_name}")
    report = check_table(t)
    assert not report.ok and [p.kind for p in report.errors()] == ["missing-file"]
    assert added.file_name in report.errors()[0].path
    assert check_table(ps.Table.open(t.path, branch="dev")).errors() == report.errors()


def test_branches_system_table(catalog):
    from paimon_streaming.system_tables import system_table
    t = catalog.create_table("db.t", schema=SCHEMA, primary_keys=["id"], options={"bucket": "1"})
    assert system_table(t, "branches").num_rows == 0
    before = datetime.datetime.now().replace(microsecond=0) - datetime.timedelta(seconds=1)
    t.create_branch("b2")
    t.create_branch("b1")
    out = system_table(t, "branches").to_pylist()
    assert [r["branch_name"] for r in out] == ["b1", "b2"]
    assert all(before <= r["create_time"] <= datetime.datetime.now() for r in out)


@pytest.mark.parametrize("mode", ["fail", "lost-reply", "torn", "crash"])
def test_fast_forward_and_create_branch_survive_a_failure_at_every_io_step(tmp_path, mode):
    """A failure at any I/O step of `create_branch` or `fast_forward` leaves a table that checks
    whole and reads some state it had or the branch has (main cut back, or a prefix of the
    branch's history); the branch is untouched; running the operation again finishes it."""
    import shutil
    from faulty_fileio import FaultyFileIO
    t = ps.Catalog(str(tmp_path / "wh")).create_table(
        "db.t", schema=SCHEMA, primary_keys=["id"], options={"bucket": "1", "deletion-vectors.enabled": "true"})
    t.write_arrow(batch(range(4), "a"))
    t.create_tag("t1")
    t.write_arrow(batch([0, 9], "main"))
    t.create_tag("t2")
    dev = t.create_branch("dev", tag="t1")
    with dev.update_schema() as update:
        update.add_column("note", pa.string())
    for i in range(2):
        dev.write_arrow(pa.table({"id": [1, 20 + i], "v": [f"d{i}"] * 2, "note": ["n"] * 2}))
    dev.create_tag("d")

    def state(table, snapshot_id=None) -> frozenset:
        return frozenset((r["id"], r["v"]) for r in table.to_arrow(snapshot_id=snapshot_id, columns=["id", "v"])
                         .to_pylist())
    main, branch = ps.Table.open(t.path), ps.Table.open(t.path, branch="dev")
    allowed = ({state(main, s.id) for s in main.snapshots()} | {state(branch, s.id) for s in branch.snapshots()}
               | {frozenset()})
    dev_state = state(branch)

    operations = {"fast-forward": lambda table: table.fast_forward("dev", force=True),  # main's t2 goes
                  "create-branch": lambda table: table.create_branch("qa", tag="t2")}
    for name, operation in operations.items():
        template = str(tmp_path / f"template-{name}")
        shutil.copytree(t.path, template)
        counter = FaultyFileIO()
        operation(ps.Table(counter, template))
        done = state(ps.Table.open(template) if name == "fast-forward" else ps.Table.open(template, branch="qa"))
        targets = [n for n in range(1, len(counter.calls) + 1)
                   if mode != "torn" or counter.calls[n - 1] == "write_bytes"]
        if mode in ("lost-reply", "crash"):
            targets = [n for n in targets if counter.calls[n - 1] not in
                       {"read_bytes", "exists", "list_status", "list_names", "file_size", "is_dir"}]
        assert targets or mode == "torn"
        for n in targets:
            path = str(tmp_path / f"{name}-{n}")
            shutil.copytree(t.path, path)
            faulty = FaultyFileIO(n, mode)
            where = f"{name}: {mode} at step {n} ({counter.calls[n - 1]})"
            try:
                operation(ps.Table(faulty, path))
            except OSError:
                pass
            assert check_table(ps.Table.open(path)).ok, where
            assert state(ps.Table.open(path)) in allowed, where
            assert state(ps.Table.open(path, branch="dev")) == dev_state, where
            again = ps.Table.open(path)
            if name == "create-branch" and "qa" in again.branches():
                again.delete_branch("qa")  # a half-made branch is deleted and made again
            operation(again)
            out = ps.Table.open(path) if name == "fast-forward" else ps.Table.open(path, branch="qa")
            assert state(out) == done, where
            shutil.rmtree(path)


def test_a_half_made_branch_is_reported_and_made_again(catalog):
    """A crash inside create_branch can leave a branch directory without a schema (local and
    HDFS directories exist before their files): `check` warns, orphan cleanup goes on (it
    references nothing), opening it says so, and create_branch or delete_branch clear it."""
    import os
    t = catalog.create_table("db.t", schema=SCHEMA, primary_keys=["id"], options={"bucket": "1"})
    t.write_arrow(batch([1], "a"))
    os.makedirs(f"{t.path}/branch/branch-x/schema")
    report = check_table(t)
    assert report.ok and [p.kind for p in report.problems] == ["empty-branch"]
    with pytest.raises(TableNotFoundError, match="branch 'x' of table .* has no schema file"):
        ps.Table.open(t.path, branch="x")
    t.remove_orphan_files(older_than=int(time.time() * 1000) + 1000)
    assert rows(t) == {1: "a"}
    t.create_branch("x")
    assert ps.Table.open(t.path, branch="x").latest_snapshot() is None and check_table(t).problems == []


def test_fast_forward_drops_the_schemas_main_added_after_the_branch(catalog):
    """Main evolved its schema after the branch was made: forced, the fast-forward removes
    those schema files too, so main's schema is the branch's again (a schema the branch never
    had, left as main's latest, would read the branch's files under the wrong columns)."""
    t = catalog.create_table("db.t", schema=SCHEMA, primary_keys=["id"], options={"bucket": "1"})
    t.write_arrow(batch(range(3), "a"))
    t.create_tag("t1")
    dev = t.create_branch("dev", tag="t1")
    with t.update_schema() as update:
        update.add_column("note", pa.string())
    t.write_arrow(pa.table({"id": [9], "v": ["main"], "note": ["n"]}))
    dev.write_arrow(batch([5], "dev"))
    t.fast_forward("dev", force=True)
    main = catalog.get_table("db.t")
    assert main.schema_manager.schema_ids() == [0] and main.schema.field_names == ["id", "v"]
    assert rows(main) == {0: "a", 1: "a", 2: "a", 5: "dev"} and check_table(main).ok
    main.write_arrow(batch([6], "after"))
    assert rows(main)[6] == "after"


def test_a_branch_named_twice_must_agree_and_main_cannot_fast_forward(catalog):
    from paimon_streaming.catalog import load_table
    t = catalog.create_table("db.t", schema=SCHEMA, primary_keys=["id"], options={"bucket": "1"})
    t.write_arrow(batch([1], "a"))
    t.create_tag("t1")
    t.create_branch("dev", tag="t1")
    with pytest.raises(InvalidOptionError, match=r"the table names branch 'dev' and option 'branch' 'qa'"):
        load_table(f"{t.path}$branch_dev", branch="qa")
    assert rows(load_table(f"{t.path}$branch_dev", branch="dev")) == {1: "a"}
    with pytest.raises(InvalidOptionError, match="fast-forward takes a branch other than main"):
        t.fast_forward("main")


def test_main_expiration_keeps_the_changelog_a_branch_snapshot_still_names(catalog):
    """A branch made from tag t1 starts from a copy of t1's snapshot, changelog included:
    expiring that snapshot on main (whose changelog files go with it) keeps the changelog
    files the branch's snapshot names, so the branch's changes stay readable."""
    from paimon_streaming.file_cleanup import FileCleaner
    t = catalog.create_table("db.t", schema=SCHEMA, primary_keys=["id"],
                             options={"bucket": "1", "changelog-producer": "input"})
    t.write_arrow(batch(range(3), "a"))
    t.create_tag("t1")
    dev = t.create_branch("dev", tag="t1")
    cleaner = FileCleaner(t.file_io, t.path, t.schema)
    changelog = {cleaner.data_file_path(e) for e in cleaner.changelog_files(dev.snapshot(1))}
    assert changelog and all(os.path.exists(p) for p in changelog)
    for i in range(3):
        t.write_arrow(batch([10 + i], "main"))
    t.delete_tag("t1")
    t.expire_snapshots(retain_max=1, retain_min=1, older_than=2 ** 62)
    assert [s.id for s in t.snapshots()] == [4]
    assert all(os.path.exists(p) for p in changelog)
    assert sorted(r["id"] for r in dev.changes_between(0, 1).to_pylist()) == [0, 1, 2]
    assert check_table(dev).ok


def test_partitions_of_a_table_with_a_fallback_branch_list_the_branchs_other_partitions(catalog):
    """`$partitions` listed the table's own partitions only, where a read (and Java's
    `$partitions`) also takes the fallback branch's partitions the table lacks."""
    from paimon_streaming.system_tables import system_table
    schema = pa.schema([pa.field("id", pa.int64(), False), pa.field("dt", pa.string(), False)])
    t = catalog.create_table("db.fb", schema, primary_keys=["id", "dt"], partition_keys=["dt"],
                             options={"bucket": "1"})
    t.create_branch("batch").write_arrow(pa.table({"id": [1, 2, 3], "dt": ["d1", "d2", "d2"]}, schema=schema))
    t.write_arrow(pa.table({"id": [9], "dt": ["d2"]}, schema=schema))
    t.update_schema().set_option("scan.fallback-branch", "batch").commit()
    t = catalog.get_table("db.fb")
    assert sorted((r["id"], r["dt"]) for r in t.to_arrow().to_pylist()) == [(1, "d1"), (9, "d2")]
    assert t.to_arrow(columns=[]).num_rows == 2  # a count keeps the fallback branch's rows
    rows = system_table(t, "partitions").to_pylist()
    assert [(r["partition"], r["record_count"]) for r in rows] == [("dt=d1", 1), ("dt=d2", 1)]
