"""Fault injection at the I/O steps of the table's lifecycle operations: snapshot expiration
(with tags, a consumer, changelog files, the `changelog.num-retained.*` retention, after a
commit, with a branch, on a branch), rollback (to a snapshot, a tag, a tag whose snapshot
expired), tags (create, delete, delete one whose snapshot expired, automatic creation with
`tag.num-retained-max`, expiry by `tagCreateTime`), branches (create, fast-forward, delete,
a write on one), orphan file cleanup, bucket rescaling, a schema change, partition
expiration, a cross-partition upsert (bucket -1), append-table compaction and a write to a
row-tracking table. (`Table.delete`/`update` have their own sweep: test_row_level_faults.py.)

For each operation a clean run on a copy of its template counts its I/O steps; then, for the
steps `plan` picks, the operation runs on a fresh copy with that step failing in one of the
modes of tests/faulty_fileio.py (a refused call, a lost reply, a torn write, a crash from that
step on). Afterwards, through a clean FileIO:

(a) `check_table` passes: no snapshot, tag or branch references a missing or torn file;
(b) every object of the table reads as before the operation or as after it: main's latest
    state, every snapshot still there (time travel), every tag, every branch; a tag the
    operation keeps is still there;
(c) running the operation again, as a user would after the error, leaves the table exactly as
    a clean run does (each snapshot, tag and branch);
(d) every file of the template that the clean run kept is still there: cut short, the
    operation deleted nothing it should not.

Exceptions, each by design and named on its scenario: a rollback or fast-forward may leave main
at a snapshot it had in between (snapshot files go newest first: `earlier_states`); a rollback
to a tag whose snapshot expired may leave, for two I/O steps, the tag's snapshot written back
beside the earliest one (`check` reports the gap; the rollback run again closes it:
`transient`); create_branch may leave a valid branch without its snapshot yet
(`partial_branch`); commits run their maintenance after publishing, and log its failures for the
next commit to redo (`maintenance`).

CI samples about nine steps per operation (`plan`: crashes spread over the steps that change
storage, the other modes at a few of them, a refused read); FAULT_LIFECYCLE_ALL=1 tries every
step in every mode that differs there (about 15 minutes on two busy cores). The bugs this found
are regression tests at the end of the file.
"""
from __future__ import annotations

import os
import shutil
import time
from dataclasses import dataclass
from typing import Callable

import pyarrow as pa
import pytest

import paimon_streaming as ps
from paimon_streaming import file_cache
from paimon_streaming.check import check_table
from paimon_streaming.consumers import ConsumerManager
from paimon_streaming.errors import TagAlreadyExistsError, TagNotFoundError
from paimon_streaming.lsm import dv_compaction
from paimon_streaming.lsm.lookup import KeyIndexCache
from paimon_streaming.maintenance import after_commit
from faulty_fileio import MODES, FaultyFileIO

ALL_STEPS = os.environ.get("FAULT_LIFECYCLE_ALL") == "1"
CRASH_STEPS = int(os.environ.get("FAULT_LIFECYCLE_CRASH_STEPS", "5"))
OTHER_STEPS = int(os.environ.get("FAULT_LIFECYCLE_OTHER_STEPS", "3"))
READ_STEPS = int(os.environ.get("FAULT_LIFECYCLE_READ_STEPS", "1"))
SCHEMA = pa.schema([pa.field("id", pa.int64(), False), ("v", pa.string()), pa.field("p", pa.string(), False)])
READS = {"read_bytes", "read_text", "open_input_file", "exists", "is_dir", "file_size", "list_status",
         "list_names"}
USER = "lifecycle-job"


def batch(ids, v="x", p="a"):
    return pa.table({"id": list(ids), "v": [f"{v}{i}" for i in ids], "p": [p] * len(ids)}, schema=SCHEMA)


def history(catalog: ps.Catalog, options: dict | None = None, primary_keys=("id", "p"), name="db.t") -> ps.Table:
    """Eight snapshots: writes into two partitions, an update, two compactions (which delete
    data files), tags on snapshots 2 and 4."""
    t = catalog.create_table(name, SCHEMA, primary_keys=list(primary_keys), partition_keys=["p"],
                             options={"bucket": "2", **(options or {})} if primary_keys else dict(options or {}))
    t.write_arrow(batch(range(6)))                       # 1
    t.write_arrow(batch([1, 2, 7], v="b", p="b"))        # 2
    t.create_tag("t2")
    t.write_arrow(batch([0, 1], v="u"))                  # 3
    t.compact(full=True)                                 # 4
    t.create_tag("t4")
    t.write_arrow(batch([3, 8], v="w", p="b"))           # 5
    t.write_arrow(batch([4, 5, 9], v="z"))               # 6
    t.compact(full=True)                                 # 7
    t.write_arrow(batch([10], v="q", p="b"))             # 8
    return t


# ---- scenarios -----------------------------------------------------------------------------

@dataclass
class Scenario:
    name: str
    build: Callable[[ps.Catalog], ps.Table]
    op: Callable[[ps.Table], object]
    retry: Callable[[ps.Table], object] | None = None   # what a user runs after the error (default: op)
    # main may read as any snapshot it had or gets (a rollback removes the newer snapshots
    # newest first; a fast-forward cuts main back, then copies the branch's oldest first)
    earlier_states: bool = False
    # a commit followed by maintenance, which logs its failures and runs again after the next commit
    maintenance: bool = False
    # the check problems a fault may leave, which the retry must clear
    transient: frozenset[str] = frozenset()
    # a branch the operation creates may be there without snapshots (create_branch writes the
    # schemas first and the snapshot last: a valid, empty branch; its retry deletes it first)
    partial_branch: bool = False

    def again(self, table: ps.Table) -> object:
        return (self.retry or self.op)(table)


def _expired_tag_template(catalog: ps.Catalog) -> ps.Table:
    t = history(catalog)
    t.expire_snapshots(retain_max=3, retain_min=1)      # snapshots 6..8 stay; tags t2, t4 hold theirs
    return t


def _consumer_template(catalog: ps.Catalog) -> ps.Table:
    t = history(catalog)
    ConsumerManager(t.file_io, t.path).record("stream-1", 5)
    return t


def _branch_template(catalog: ps.Catalog) -> ps.Table:
    t = history(catalog)
    dev = t.create_branch("dev", tag="t2")
    dev.write_arrow(batch([1, 30], v="d"))
    dev.compact(full=True)
    dev.create_tag("d1")
    dev.write_arrow(batch([31], v="e", p="b"))
    return t


def _orphan_template(catalog: ps.Catalog) -> ps.Table:
    t = _branch_template(catalog)
    # what failed commits leave: unreferenced data files, manifests, a temp snapshot file
    for rel in ("p=a/bucket-0/data-orphan-1.parquet", "p=b/bucket-1/data-orphan-2.parquet",
                "manifest/manifest-orphan-0", "manifest/manifest-list-orphan-1", "snapshot/.snapshot-9.x.tmp"):
        os.makedirs(os.path.dirname(f"{t.path}/{rel}"), exist_ok=True)
        with open(f"{t.path}/{rel}", "wb") as f:
            f.write(b"orphan")
    t.expire_snapshots(retain_max=4, retain_min=1)
    return t


def _after_commit_template(catalog: ps.Catalog) -> ps.Table:
    t = history(catalog)
    with t.update_schema() as update:
        update.set_option("snapshot.num-retained.max", "5")
        update.set_option("snapshot.num-retained.min", "1")
    return t


def _write_once(table: ps.Table, data: pa.Table, identifier: int = 100) -> object:
    """A write a job redoes after an error: once per (commit user, identifier)."""
    if table.committed_identifiers(USER, [identifier]):
        return None
    return table.write_arrow(data, commit_user=USER, commit_identifier=identifier)


def _delete_tag_again(table: ps.Table, name: str) -> None:
    """A user deleting the tag again: TagNotFoundError means the first attempt removed it."""
    try:
        table.delete_tag(name)
    except TagNotFoundError:
        assert name not in table.tags()


def _create_tag_again(table: ps.Table, name: str) -> None:
    try:
        table.create_tag(name)
    except TagAlreadyExistsError:
        assert table.tag_manager.snapshot(name).id == table.latest_snapshot().id


def _add_column(table: ps.Table) -> None:
    with table.update_schema() as update:
        update.add_column("note", pa.string())


def _add_column_again(table: ps.Table) -> None:
    if "note" not in table.arrow_schema().names:
        _add_column(table)


def _branch_write(table: ps.Table) -> object:
    return _write_once(ps.Table(table.file_io, table.path, branch="dev"), batch([2, 40], v="f"))


def _branch_expire(table: ps.Table) -> object:
    return ps.Table(table.file_io, table.path, branch="dev").expire_snapshots(retain_max=1, retain_min=1)


def _create_branch_again(table: ps.Table) -> None:
    if "qa" in table.branches():
        table.delete_branch("qa")  # half made: deleted and made again (README, Branches)
    table.create_branch("qa", tag="t4")


def _changelog_retention_template(catalog: ps.Catalog) -> ps.Table:
    t = history(catalog, {"changelog-producer": "input"})
    with t.update_schema() as update:  # the changelog (so the snapshots) kept longer than the snapshots' own
        update.set_option("snapshot.num-retained.max", "2")
        update.set_option("snapshot.num-retained.min", "1")
        update.set_option("changelog.num-retained.max", "4")
    return t


def _delete_branch_again(table: ps.Table) -> None:
    if "dev" in table.branches():
        table.delete_branch("dev")


def _next_commit(table: ps.Table, data: pa.Table) -> None:
    """What the job does after a write whose maintenance failed: the write again (a no-op when it
    landed), and the maintenance the next commit runs."""
    _write_once(table, data)
    after_commit(table.file_io, table.path, table.schema)


def _auto_tag_template(catalog: ps.Catalog) -> ps.Table:
    t = history(catalog)
    t.create_tag("2020-01-01", snapshot_id=2)
    t.create_tag("2020-01-02", snapshot_id=4)
    with t.update_schema() as update:  # the next commit tags yesterday and drops 2020-01-01
        update.set_option("tag.automatic-creation", "process-time")
        update.set_option("tag.creation-period", "daily")
        update.set_option("tag.num-retained-max", "2")
    return t


def _tag_expiry_template(catalog: ps.Catalog) -> ps.Table:
    t = history(catalog)
    t.create_tag("short", snapshot_id=5, time_retained="1 ms")  # expired at the next commit
    t.expire_snapshots(retain_max=3, retain_min=1)             # with snapshot 5: its files go with the tag
    return t


def _compact_once(table: ps.Table) -> object:
    if table.committed_identifiers(USER, [100]):
        return None
    return table.compact(full=True, commit_user=USER, commit_identifier=100)


def _partition_template(catalog: ps.Catalog) -> ps.Table:
    t = catalog.create_table("db.t", pa.schema([pa.field("id", pa.int64(), False), ("v", pa.string()),
                                                pa.field("dt", pa.string(), False)]),
                             primary_keys=["id", "dt"], partition_keys=["dt"], options={"bucket": "1"})
    for dt in ("2020-01-01", "2020-01-02", "2999-01-01"):
        t.write_arrow(pa.table({"id": [1, 2], "v": ["a", "b"], "dt": [dt, dt]}, schema=t.arrow_schema()))
    t.create_tag("all")
    return t


SCENARIOS = [
    Scenario("expire-with-tags", history, lambda t: t.expire_snapshots(retain_max=2, retain_min=1)),
    Scenario("expire-with-consumer", _consumer_template, lambda t: t.expire_snapshots(retain_max=2, retain_min=1)),
    Scenario("expire-changelog", lambda c: history(c, {"changelog-producer": "input"}),
             lambda t: t.expire_snapshots(retain_max=3, retain_min=1)),
    Scenario("expire-after-commit", _after_commit_template, lambda t: _write_once(t, batch([11, 12], v="c")),
             lambda t: _next_commit(t, batch([11, 12], v="c")), maintenance=True),
    Scenario("tag-auto-creation", _auto_tag_template, lambda t: _write_once(t, batch([11, 12], v="c")),
             lambda t: _next_commit(t, batch([11, 12], v="c")), maintenance=True),
    Scenario("tag-time-expiration", _tag_expiry_template, lambda t: _write_once(t, batch([11, 12], v="c")),
             lambda t: _next_commit(t, batch([11, 12], v="c")), maintenance=True),
    Scenario("expire-with-branch", _branch_template, lambda t: t.expire_snapshots(retain_max=1, retain_min=1)),
    Scenario("expire-on-branch", _branch_template, _branch_expire),
    Scenario("rollback-to-snapshot", history, lambda t: t.rollback_to(3), earlier_states=True),
    Scenario("rollback-to-tag", history, lambda t: t.rollback_to("t4"), earlier_states=True),
    # the tag's snapshot is written back, then the earliest snapshot removed: a gap between
    Scenario("rollback-to-expired-tag", _expired_tag_template, lambda t: t.rollback_to("t4"),
             earlier_states=True, transient=frozenset({"snapshot-gap"})),
    Scenario("create-tag", history, lambda t: t.create_tag("new"), lambda t: _create_tag_again(t, "new")),
    Scenario("delete-tag", history, lambda t: t.delete_tag("t4"), lambda t: _delete_tag_again(t, "t4")),
    Scenario("delete-expired-tag", _expired_tag_template, lambda t: t.delete_tag("t4"),
             lambda t: _delete_tag_again(t, "t4")),
    Scenario("expire-changelog-retention", _changelog_retention_template, lambda t: t.expire_snapshots()),
    Scenario("create-branch", history, lambda t: t.create_branch("qa", tag="t4"), _create_branch_again,
             partial_branch=True),
    Scenario("fast-forward", _branch_template, lambda t: t.fast_forward("dev", force=True), earlier_states=True),
    Scenario("delete-branch", _branch_template, lambda t: t.delete_branch("dev"), _delete_branch_again),
    Scenario("write-on-branch", _branch_template, _branch_write),
    Scenario("remove-orphan-files", _orphan_template,
             lambda t: t.remove_orphan_files(older_than=int(time.time() * 1000) + 86_400_000)),
    Scenario("rescale", history, lambda t: t.rescale(bucket=3)),
    Scenario("add-column", history, _add_column, _add_column_again),
    Scenario("expire-partitions", _partition_template, lambda t: t.expire_partitions("30 d")),
    Scenario("cross-partition-upsert", lambda c: history(c, {"bucket": "-1"}, primary_keys=("id",)),
             lambda t: _write_once(t, batch([1, 7, 50], v="m", p="a"))),
    Scenario("append-compaction", lambda c: history(c, primary_keys=()), _compact_once),
    Scenario("row-tracking-write", lambda c: history(c, {"row-tracking.enabled": "true"}, primary_keys=()),
             lambda t: _write_once(t, batch([60, 61], v="r"))),
]


# ---- the table's observable state --------------------------------------------------------

def _rows(table: ps.Table, **at) -> tuple:
    return tuple(sorted(repr(sorted(r.items())) for r in table.to_arrow(**at).to_pylist()))


# A snapshot's rows by its manifest lists and schema (uuid names, the same in every copy of a
# template): `state` reads each once per process. Sound because `check_table`, run first, reads
# every file each snapshot and tag references whole.
_READ: dict[tuple, tuple] = {}


def _rows_of(t: ps.Table, snap, **at) -> tuple:
    key = (snap.base_manifest_list, snap.delta_manifest_list, snap.index_manifest, snap.schema_id,
           tuple(t.arrow_schema().names))
    if key not in _READ:
        _READ[key] = _rows(t, **at)
    return _READ[key]


def _branch_state(t: ps.Table) -> dict:
    snapshots = {s.id: (s.commit_kind, s.commit_identifier, _rows_of(t, s, snapshot_id=s.id)) for s in t.snapshots()}
    tags = {}
    for name in t.tags():
        snap = t.tag_manager.snapshot(name)
        tags[name] = (snap.id, _rows_of(t, snap, tag=name))
    latest = t.latest_snapshot()
    return {"snapshots": snapshots, "tags": tags, "latest": None if latest is None else latest.id,
            "rows": () if latest is None else _rows_of(t, latest), "schema": tuple(t.arrow_schema().names)}


def state(path: str) -> dict:
    main = ps.Table.open(path)
    out = {"main": _branch_state(main)}
    for b in main.branches():
        schemas = f"{path}/branch/branch-{b}/schema"
        if not (os.path.isdir(schemas) and os.listdir(schemas)):
            continue  # a create_branch cut short before the schema: `check` warns, nothing reads it
        out[f"branch {b}"] = _branch_state(ps.Table.open(path, branch=b))
    return out


def files(path: str) -> set[str]:
    return {os.path.relpath(os.path.join(d, f), path) for d, _, fs in os.walk(path) for f in fs}


def _between(where: str, got: dict, before: dict, after: dict, earlier_states: bool = False,
             partial_branch: bool = False) -> None:
    """(b): each object of `got` reads as in `before` or as in `after` (or, `earlier_states`,
    main's latest as any snapshot of `before`)."""
    if earlier_states:
        had = {snap[2] for x in (before, after) for snap in x["main"]["snapshots"].values()}
        if got["main"]["rows"] in had:
            got = {**got, "main": {**got["main"], "rows": after["main"]["rows"]}}
    for ref in set(before) | set(after) | set(got):
        g, b, a = got.get(ref), before.get(ref), after.get(ref)
        if g is None:
            assert b is None or a is None, f"{where}: {ref} vanished"
            continue
        assert b is not None or a is not None, f"{where}: {ref} appeared from nowhere"
        if partial_branch and b is None and not g["snapshots"]:
            assert g["rows"] == () and all(a["tags"].get(n) == tag for n, tag in g["tags"].items()), \
                f"{where}: {ref} half made"
            continue
        olds = [x for x in (b, a) if x is not None]
        assert (g["rows"], g["schema"]) in [(x["rows"], x["schema"]) for x in olds], \
            f"{where}: {ref} reads neither as before nor as after"
        for sid, snap in g["snapshots"].items():
            assert snap in [x["snapshots"].get(sid) for x in olds], f"{where}: {ref} snapshot {sid} changed"
        for name, tag in g["tags"].items():
            assert tag in [x["tags"].get(name) for x in olds], f"{where}: {ref} tag {name} changed"
        for x, y in ((b, a), (a, b)):
            if x is not None and y is not None:
                for name in set(x["tags"]) & set(y["tags"]):
                    assert name in g["tags"], f"{where}: {ref} lost tag {name} the operation keeps"


def _same(where: str, got: dict, expected: dict) -> None:
    assert got.keys() == expected.keys(), f"{where}: branches {sorted(got)} != {sorted(expected)}"
    for ref in expected:
        g, e = got[ref], expected[ref]
        for key in ("rows", "schema", "tags"):
            assert g[key] == e[key], f"{where}: {ref} {key} differs after the retry"
        assert [s[::2] for s in g["snapshots"].values()] == [s[::2] for s in e["snapshots"].values()], \
            f"{where}: {ref} snapshots differ after the retry"


# ---- the sweep -----------------------------------------------------------------------------

def _injectable(mode: str, call: str) -> bool:
    """As in test_fault_injection: a torn write needs a write; a lost reply and a crash only
    differ from a refused call at calls that change storage."""
    if mode == "torn":
        return call == "write_bytes"
    if mode in ("lost-reply", "crash"):
        return call not in READS
    return True


def plan(calls: list[str]) -> list[tuple[int, str]]:
    """(step, mode) pairs to try: with FAULT_LIFECYCLE_ALL=1 every step in every mode that differs
    there. Otherwise crashes at CRASH_STEPS steps that change storage, evenly spaced (a crash
    half-way through a run of deletions is what leaves a table inconsistent), the other modes in
    turn (lost reply, refused call, and at a write a torn one) at OTHER_STEPS of them (the first,
    the last, evenly spaced between) and refused reads at READ_STEPS."""
    if ALL_STEPS:
        return [(n, mode) for n in range(1, len(calls) + 1) for mode in MODES if _injectable(mode, calls[n - 1])]
    changes = [n for n in range(1, len(calls) + 1) if calls[n - 1] not in READS]
    reads = [n for n in range(1, len(calls) + 1) if calls[n - 1] in READS]
    out = {(n, "fail") for n in _spread(reads, READ_STEPS)}
    out |= {(n, "crash") for n in _spread(changes, CRASH_STEPS, edge=0)}
    for i, n in enumerate(_spread(changes, OTHER_STEPS, edge=1)):
        modes = [m for m in ("lost-reply", "torn", "fail") if _injectable(m, calls[n - 1])]
        out.add((n, modes[i % len(modes)]))
    return sorted(out)


def _spread(targets: list[int], k: int, edge: int = 0) -> list[int]:
    """`k` of `targets`: the first and last `edge`, and the rest evenly spaced between them."""
    if len(targets) <= k:
        return targets
    middle, want = targets[edge:len(targets) - edge], k - 2 * edge
    picked = [middle[(i + 1) * len(middle) // (want + 1)] for i in range(want)]
    return sorted(set(targets[:edge] + picked + targets[len(targets) - edge:]))


def _run(op: Callable[[ps.Table], object], table_path: str, file_io) -> BaseException | None:
    file_cache.clear_all()
    original, dv_compaction.KEY_INDEXES = dv_compaction.KEY_INDEXES, KeyIndexCache()
    try:
        op(ps.Table(file_io, table_path))
    except OSError as exc:
        return exc
    finally:
        dv_compaction.KEY_INDEXES = original
    return None


@pytest.fixture(scope="module")
def templates(tmp_path_factory):
    """Per scenario: the template table, its state and files before, and after a clean run."""
    out = {}
    for sc in SCENARIOS:
        base = tmp_path_factory.mktemp(sc.name)
        t = sc.build(ps.Catalog(str(base / "wh")))
        clean = str(base / "clean")
        shutil.copytree(t.path, clean)
        counter = FaultyFileIO()
        assert _run(sc.op, clean, counter) is None, sc.name
        kept = files(t.path) & files(clean)
        out[sc.name] = (t.path, state(t.path), state(clean), kept, counter.calls)
    return out


@pytest.mark.parametrize("scenario", SCENARIOS, ids=lambda s: s.name)
def test_failure_at_an_io_step(templates, tmp_path, scenario):
    template, before, after, kept, calls = templates[scenario.name]
    assert before != after or kept != files(template), f"{scenario.name}: the operation changes nothing"
    for n, mode in plan(calls):
        path = str(tmp_path / f"run-{n}-{mode}")
        shutil.copytree(template, path)
        faulty = FaultyFileIO(n, mode)
        error = _run(scenario.op, path, faulty)
        where = f"{scenario.name}: {mode} at step {n} ({calls[n - 1]}), {type(error).__name__}"
        assert faulty.fired is not None, where

        report = check_table(ps.Table.open(path))
        errors = [p for p in report.errors() if p.kind not in scenario.transient]
        assert not errors, f"{where}: {errors}"
        if report.ok:
            got = state(path)
            _between(where, got, before, after, scenario.earlier_states, scenario.partial_branch)
            if error is None and scenario.maintenance:
                assert got["main"]["rows"] == after["main"]["rows"], f"{where}: the commit did not land"
            elif error is None:
                _same(where + " (no error raised)", got, after)

        scenario.again(ps.Table.open(path))
        report = check_table(ps.Table.open(path))
        assert report.ok, f"{where}, after the retry: {report.errors()}"
        _same(where, state(path), after)
        lost = kept - files(path)
        assert not lost, f"{where}: deleted {sorted(lost)}"
        shutil.rmtree(path)


def test_each_operation_reads_and_changes_storage(templates):
    """The sweep is meaningful: each operation does I/O that changes the table."""
    for name, (_, _, _, _, calls) in templates.items():
        assert READS & set(calls), name
        assert set(calls) - READS, name


# ---- regressions found by the sweep --------------------------------------------------------

def _fail_at(tmp_path, template: str, op, mode: str, pick: Callable[[FaultyFileIO], int]
             ) -> tuple[str, BaseException | None]:
    """Run `op` on a copy of `template` with step `pick(the clean run's FaultyFileIO)` (1-based) failing."""
    counter, clean = FaultyFileIO(), str(tmp_path / "count")
    shutil.copytree(template, clean)
    _run(op, clean, counter)
    path = str(tmp_path / "faulty")
    shutil.copytree(template, path)
    return path, _run(op, path, FaultyFileIO(pick(counter), mode))


def test_expiration_cut_short_leaves_no_snapshot_with_missing_files(tmp_path):
    """Expiration deleted the expired snapshots' data files and manifests before their snapshot
    files: a crash in between (after every commit, on a table with `snapshot.num-retained.*`)
    left snapshots whose files were gone, failing `check` and time travel. Now the snapshot
    files go first, oldest first; the files after."""
    t = history(ps.Catalog(str(tmp_path / "wh")))
    path, error = _fail_at(tmp_path, t.path, lambda t: t.expire_snapshots(retain_max=2, retain_min=1), "crash",
                           lambda run: run.calls.index("delete") + 2)
    assert isinstance(error, OSError)
    table = ps.Table.open(path)
    assert check_table(table).ok, check_table(table).errors()
    for s in table.snapshots():
        table.to_arrow(snapshot_id=s.id)
    table.expire_snapshots(retain_max=2, retain_min=1)
    assert [s.id for s in table.snapshots()] == [7, 8] and check_table(table).ok


def test_rollback_whose_latest_hint_write_fails_changes_nothing(tmp_path):
    """A rollback moved the LATEST hint with the commit's best-effort write, which swallows a
    failure, then deleted the newer snapshot files: the hint, left beyond every snapshot file,
    made readers and writers refuse the table (SnapshotMissingError) after an error nobody saw.
    Now the hint must land first, or the rollback raises with nothing changed."""
    t = history(ps.Catalog(str(tmp_path / "wh")))
    expected = _rows(t)
    path, error = _fail_at(tmp_path, t.path, lambda t: t.rollback_to(3), "fail",
                           lambda run: run.calls.index("write_bytes") + 1)
    assert isinstance(error, OSError)
    table = ps.Table.open(path)
    assert check_table(table).ok and _rows(table) == expected and table.latest_snapshot().id == 8
    table.rollback_to(3)
    assert table.latest_snapshot().id == 3 and check_table(table).ok


@pytest.mark.parametrize("mode", ["torn", "crash"])
def test_rollback_to_a_tag_whose_snapshot_expired_survives_a_fault_at_the_restore(tmp_path, mode):
    """Rolling back to a tag whose snapshot expired removed every snapshot, then wrote the tag's
    snapshot back with a plain write: a crash between left no snapshot and a LATEST hint naming
    a missing one (the table refused to open: SnapshotMissingError), a torn write a snapshot file
    that does not parse. Now the earliest snapshot stays until the tag's is back (written
    atomically), and a second run finishes the job."""
    t = _expired_tag_template(ps.Catalog(str(tmp_path / "wh")))
    tagged = _rows(t, tag="t4")
    def restore(run: FaultyFileIO) -> int:  # the first write of snapshot-4
        return 1 + next(i for i, (call, path) in enumerate(zip(run.calls, run.paths))
                        if path.endswith("/snapshot-4") and call in ("write_bytes", "try_create_atomic"))
    path, error = _fail_at(tmp_path, t.path, lambda t: t.rollback_to("t4"), mode, restore)
    assert isinstance(error, OSError)
    table = ps.Table.open(path)
    assert not [p for p in check_table(table).errors() if p.kind != "snapshot-gap"]
    assert _rows(table) in (_rows(t, snapshot_id=6), tagged)
    table.rollback_to("t4")
    assert check_table(table).ok and [s.id for s in table.snapshots()] == [4] and _rows(table) == tagged


def test_automatic_tags_beyond_the_maximum_are_trimmed_after_an_interrupted_run(tmp_path):
    """A commit's automatic tag creation that failed after writing the new tag (a lost reply,
    a crash) never trimmed the tags beyond `tag.num-retained-max`: the next commits found
    nothing due and returned before trimming, so the surplus tag (and the files it holds) stayed
    until the next period's tag. Now a run trims whenever there are more automatic tags than the
    maximum (counted from the listing it reads anyway)."""
    t = _auto_tag_template(ps.Catalog(str(tmp_path / "wh")))
    new_tag = lambda run: 1 + next(i for i, (call, path) in enumerate(zip(run.calls, run.paths))  # noqa: E731
                                   if call == "overwrite_atomic" and "/tag/tag-" in path)
    path, error = _fail_at(tmp_path, t.path, lambda t: _write_once(t, batch([11], v="c")), "lost-reply", new_tag)
    assert error is None  # maintenance logs its failures: the commit succeeded
    table = ps.Table.open(path)
    assert len(table.tags()) == 5  # t2, t4 and three automatic ones
    table.write_arrow(batch([12], v="c"))
    assert "2020-01-01" not in table.tags() and len(table.tags()) == 4 and check_table(table).ok


def test_fast_forward_cut_short_keeps_the_tag_main_and_the_branch_share(tmp_path):
    """A fast-forward deleted all of main's tags from the branch's first snapshot on, the tag the
    branch was made from included, and copied the branch's back at the end: cut short in between,
    main had lost that tag (TagNotFoundError for its readers) though the operation keeps it. A tag
    main holds byte for byte as the branch does now stays."""
    t = _branch_template(ps.Catalog(str(tmp_path / "wh")))
    tagged = _rows(t, tag="t2")
    first_tag_delete = lambda run: 1 + next(  # noqa: E731
        i for i, (call, path) in enumerate(zip(run.calls, run.paths))
        if call == "delete" and "/tag/tag-" in path and "/branch/" not in path)
    path, error = _fail_at(tmp_path, t.path, lambda t: t.fast_forward("dev", force=True), "lost-reply",
                           first_tag_delete)
    assert isinstance(error, OSError)
    table = ps.Table.open(path)
    assert "t2" in table.tags() and _rows(table, tag="t2") == tagged and check_table(table).ok
    table.fast_forward("dev", force=True)
    assert table.tags() == ["d1", "t2"] and _rows(table) == _rows(ps.Table.open(t.path, branch="dev"))
