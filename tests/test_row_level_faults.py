"""`Table.delete` and `Table.update` (paimon_streaming/row_level.py) under faults and concurrent
writers, on every kind of table they change: primary-key with deletion vectors, primary-key
merge-on-read, append with deletion vectors and append copy-on-write (each bucket-unaware and
with fixed buckets), and (delete only) append with row tracking.

Each table starts from the same small template (two batches: on primary-key tables the second
updates part of the first; a null `v`), and a plain-Python model of its rows gives the state
every operation must leave.

* Faults: a clean run of each operation counts its I/O steps; then for every step k until the
  operation completes, it runs again on a fresh copy with step k failing (tests/faulty_fileio.py;
  the mode rotates over the ones that differ at that step: a refused call, a lost reply, a torn
  write, a crash from there on; alternately with and without a commit identifier). After the
  failure: the table reads exactly as before (or, once a snapshot of the operation was published,
  as after; a deletion-vector table's APPEND without its COMPACT reads as before), `check` finds
  nothing wrong, and the same operation again (same commit user and identifier when it had one)
  leaves the model's state, with the operation's data snapshot there exactly once.
* Concurrency: another Table object on the same warehouse commits a whole operation (an upsert
  or append batch, a full compaction, a delete, an update of overlapping rows, or a batch whose
  writer died between its APPEND and COMPACT snapshots) just before the k-th I/O step of the
  change, for steps spread over its whole run (every step with PAIMON_ROW_LEVEL_EVERY_STEP=1).
  The final table must equal the model's state after the two in the order of their snapshots,
  or, if the change raised CommitConflictError (documented), the other operation's alone.
* Apache Paimon Java reads the tables the scenarios left (one JVM for the whole file) and must
  see the model's rows.

Default run: about 45 s (every fault step, five interleavings per pair). PAIMON_ROW_LEVEL_ALL_MODES=1
fails every step in every mode; PAIMON_ROW_LEVEL_EVERY_STEP=1 interleaves at every step. Bugs
found are kept as explicit regression tests at the end of the file.
"""
from __future__ import annotations

import logging
import os
import shutil
import types
from dataclasses import dataclass
from typing import Callable

import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.fs as pafs
import pytest

import paimon_streaming as ps
from paimon_streaming import commit as commit_module, file_cache
from paimon_streaming.check import check_table
from paimon_streaming.errors import CommitConflictError, CompactionNotCommittedError
from paimon_streaming.fileio import FileIO
from paimon_streaming.lsm import dv_compaction
from paimon_streaming.lsm.lookup import KeyIndexCache
from conftest import killed_before_compaction
from faulty_fileio import IO_METHODS, MODES, FaultyFileIO

ALL_MODES = os.environ.get("PAIMON_ROW_LEVEL_ALL_MODES") == "1"
EVERY_STEP = os.environ.get("PAIMON_ROW_LEVEL_EVERY_STEP") == "1"
INTERLEAVINGS = 5  # steps per (table, change, other operation) by default, spread over the change's run

SCHEMA = pa.schema([pa.field("id", pa.int64(), False), ("v", pa.int64()), pa.field("p", pa.string(), False)])
KINDS = {  # name: (primary keys, options)
    "pk-dv": (["id", "p"], {"bucket": "2", "deletion-vectors.enabled": "true"}),
    "pk-mor": (["id", "p"], {"bucket": "2"}),
    "append-dv": (None, {"deletion-vectors.enabled": "true"}),
    "append-dv-buckets": (None, {"deletion-vectors.enabled": "true", "bucket": "2", "bucket-key": "id"}),
    "append-cow": (None, {}),
    "append-cow-buckets": (None, {"bucket": "2", "bucket-key": "id"}),
    "append-row-tracking": (None, {"row-tracking.enabled": "true"}),
}
USER, IDENT = "row-level-job", 5
READS = {"read_bytes", "read_text", "open_input_file", "exists", "is_dir", "file_size", "list_status",
         "list_names"}

Row = tuple  # (id, v, p)


def batch(ids, v: Callable[[int], int | None] = lambda i: i) -> pa.Table:
    return pa.table({"id": list(ids), "v": [v(i) for i in ids], "p": ["a" if i % 2 else "b" for i in ids]},
                    schema=SCHEMA)


def as_rows(t: pa.Table) -> list[Row]:
    return sorted(((r["id"], r["v"], r["p"]) for r in t.select(["id", "v", "p"]).to_pylist()),
                  key=lambda r: (r[0], r[1] is None, r[1] or 0, r[2]))


def rows_of(path: str) -> list[Row]:
    return as_rows(ps.Table.open(path).to_arrow())


# ---- the model -------------------------------------------------------------------------------------
@dataclass(frozen=True)
class Op:
    """An operation on a table and on the model's rows (`keyed`: primary-key semantics)."""
    name: str
    run: Callable[..., object]
    model: Callable[[list[Row], bool], list[Row]]


def _deleted(matches: Callable[[Row], bool]):
    return lambda rows, keyed: sorted((r for r in rows if not matches(r)), key=_order)


def _updated(matches: Callable[[Row], bool], new_v: Callable[[int | None], int | None]):
    return lambda rows, keyed: sorted(((r[0], new_v(r[1]), r[2]) if matches(r) else r for r in rows), key=_order)


def _written(data: pa.Table):
    new = as_rows(data)

    def apply(rows: list[Row], keyed: bool) -> list[Row]:
        if not keyed:
            return sorted(rows + new, key=_order)
        by_key = {(r[0], r[2]): r for r in rows}
        by_key.update({(r[0], r[2]): r for r in new})
        return sorted(by_key.values(), key=_order)
    return apply


def _order(r: Row):
    return (r[0], r[1] is None, r[1] or 0, r[2])


def _v_below(n: int) -> Callable[[Row], bool]:
    return lambda r: r[1] is not None and r[1] < n  # a null comparison is not true: the row stays


def _id_in(ids) -> Callable[[Row], bool]:
    return lambda r: r[0] in ids


CHANGES = {  # the operation under test
    "delete": Op("delete", lambda t, **kw: t.delete([("v", "<", 6)], **kw), _deleted(_v_below(6))),
    "update": Op("update", lambda t, **kw: t.update([("v", "<", 10)], {"v": pc.field("v") + 1000}, **kw),
                 _updated(_v_below(10), lambda v: v + 1000)),
}
UPSERTS = batch([1, 2, 3, 30, 31], v=lambda i: i + 3)  # 1 and 2 still match `v < 6`, 3 no longer
OTHERS = {  # what another writer commits meanwhile
    "write": Op("write", lambda t: t.write_arrow(UPSERTS), _written(UPSERTS)),
    "compact": Op("compact", lambda t: t.compact(full=True), lambda rows, keyed: rows),
    "delete": Op("delete", lambda t: t.delete([("id", "in", [2, 7, 15])]), _deleted(_id_in({2, 7, 15}))),
    "update": Op("update", lambda t: t.update([("id", "<", 6)], {"v": pc.field("v") + 1}),
                 _updated(lambda r: r[0] < 6, lambda v: None if v is None else v + 1)),
    # a writer that died after its APPEND snapshot: a compaction completes it (see _settle)
    "died-write": Op("died-write", lambda t: _dies_before_compacting(t, UPSERTS), _written(UPSERTS)),
}


def _dies_before_compacting(t: ps.Table, data: pa.Table) -> None:
    with killed_before_compaction(SystemExit("writer died")):
        try:
            t.write_arrow(data)
        except SystemExit:
            pass


def changes_of(kind: str) -> list[str]:
    return ["delete"] if kind == "append-row-tracking" else list(CHANGES)


def others_of(kind: str) -> list[str]:
    return [o for o in OTHERS if not (kind == "append-row-tracking" and o == "update")]


# ---- tables ----------------------------------------------------------------------------------------
@pytest.fixture(scope="module")
def templates(tmp_path_factory) -> dict[str, tuple[str, list[Row]]]:
    """Per kind: the path of the template table and its rows (= the model's start)."""
    out = {}
    for kind, (pk, options) in KINDS.items():
        base = tmp_path_factory.mktemp(kind)
        t = ps.Catalog(str(base / "wh")).create_table("db.t", SCHEMA, primary_keys=pk, partition_keys=["p"],
                                                      options=options)
        t.write_arrow(batch(range(0, 12), v=lambda i: None if i == 4 else i), commit_user="w", commit_identifier=1)
        t.write_arrow(batch(range(8, 20), v=lambda i: i + 100) if pk else batch(range(12, 20)),
                      commit_user="w", commit_identifier=2)
        out[kind] = (t.path, rows_of(t.path))
    return out


@pytest.fixture(scope="module")
def java_checks() -> list[tuple[str, str, list[Row]]]:
    """(what, table path, expected rows) the scenarios left, for Java to read at the end."""
    return []


def _copy(template: str, path: str) -> str:
    shutil.copytree(template, path)
    return path


def _fresh_caches():
    """Process-wide caches keyed by file name, which copies of a template share: reset so each
    run makes the same I/O calls as the counted clean run."""
    file_cache.clear_all()
    original, dv_compaction.KEY_INDEXES = dv_compaction.KEY_INDEXES, KeyIndexCache()
    return original


def _snapshots(path: str) -> list[tuple]:
    return [(s.id, s.commit_kind, s.commit_user, s.commit_identifier) for s in ps.Table.open(path).snapshots()]


def _assert_checks(path: str, where: str, verify_data: bool = False) -> None:
    """`check` finds nothing wrong (data files by size: a torn one differs from its manifest
    entry; the tables Java reads are read whole)."""
    report = check_table(ps.Table.open(path), verify_data=verify_data)
    assert report.ok, f"{where}: check: {report.errors()}"


# ---- 1. faults -------------------------------------------------------------------------------------
def _modes_at(call: str) -> list[str]:
    """Modes that differ at a step (as tests/test_fault_injection.py: a lost reply or a crash at
    a read is a refused call, or a crash at the next call that changes storage)."""
    if call in READS:
        return ["fail"]
    return [m for m in MODES if m != "torn" or call == "write_bytes"]


@pytest.fixture(autouse=True)
def _quick(monkeypatch):
    """Injected faults log warnings with tracebacks by the thousand: kept out of the run. And a
    crash makes every later call fail, so the committer retries publishing with its randomized
    backoff (up to a second a try): no wait here, where no other process races."""
    logger = logging.getLogger("paimon_streaming")
    level = logger.level
    logger.setLevel(logging.CRITICAL)
    monkeypatch.setattr(commit_module, "random", types.SimpleNamespace(random=lambda: 0.0))
    yield
    logger.setLevel(level)


@pytest.mark.parametrize("kind", KINDS)
def test_a_failure_at_every_io_step_commits_nothing_and_a_retry_applies_once(templates, java_checks, tmp_path,
                                                                               kind):
    template, before = templates[kind]
    keyed = KINDS[kind][0] is not None
    lookup = keyed and KINDS[kind][1].get("deletion-vectors.enabled") == "true"
    for name in changes_of(kind):
        change = CHANGES[name]
        after = change.model(before, keyed)
        clean = _copy(template, str(tmp_path / f"{name}-clean"))
        counter = FaultyFileIO()
        cached = _fresh_caches()
        try:
            change.run(ps.Table(counter, clean), commit_user=USER, commit_identifier=IDENT)
        finally:
            dv_compaction.KEY_INDEXES = cached
        assert rows_of(clean) == after, f"{kind} {name}: a clean run does not match the model"
        runs, k, done = 0, 0, False
        while not done:
            k += 1
            modes = _modes_at(counter.calls[k - 1]) if k <= len(counter.calls) else ["fail"]
            for i, mode in enumerate(modes if ALL_MODES else [modes[k % len(modes)]]):
                with_identifier = (k + i) % 2 == 0
                path = _copy(template, str(tmp_path / f"{name}-{mode}-{k}"))
                faulty = FaultyFileIO(k, mode)
                ident = {"commit_user": USER, "commit_identifier": IDENT} if with_identifier else {}
                cached = _fresh_caches()
                try:
                    change.run(ps.Table(faulty, path), **ident)
                    error = None
                except (OSError, CompactionNotCommittedError) as exc:
                    error = exc
                finally:
                    dv_compaction.KEY_INDEXES = cached
                if faulty.fired is None:  # the change completed before step k: every step was failed
                    done = True
                    break
                runs += 1
                where = f"{kind} {name}: {mode} at step {k} ({faulty.fired}), identifier {with_identifier}"
                if error is not None and READS.issuperset(faulty.calls[:k - 1]) and mode != "lost-reply":
                    # failed before its first change to storage: the table is the template's
                    assert rows_of(path) == before, where
                    shutil.rmtree(path)
                    continue
                _check_after_failure(path, where, change, ident, before, after, error, lookup)
                if k % 7 == 0:
                    java_checks.append((where, path, after))
                else:
                    shutil.rmtree(path)
        assert runs > 10, f"{kind} {name}: only {runs} steps"


def _check_after_failure(path: str, where: str, change: Op, ident: dict, before: list[Row], after: list[Row],
                         error: BaseException | None, lookup: bool) -> None:
    published = [s for s in _snapshots(path) if s[2] not in ("w",)]
    ours = [s for s in published if not ident or s[2] == USER]
    rows = rows_of(path)
    assert not isinstance(error, CompactionNotCommittedError) or ours, f"{where}: {error}, yet nothing landed"
    if error is None:  # the failure was absorbed (a retried call): the change is complete
        assert rows == after, f"{where}: returned without error but reads {rows}"
    elif not ours:
        assert rows == before, f"{where}: nothing was published, yet the table reads {rows}"
    elif lookup and ours[-1][1] != "COMPACT":
        assert rows == before, f"{where}: an APPEND without its COMPACT changed what readers see: {rows}"
    else:
        assert rows == after, f"{where}: the change was published, yet the table reads {rows}"
    _assert_checks(path, where)
    if not ident and ours and rows == after:
        return  # without an identifier a retry would apply it again, as documented
    change.run(ps.Table.open(path), **ident)
    assert rows_of(path) == after, f"{where}: after the retry {rows_of(path)}"
    _assert_checks(path, f"{where}, after the retry")
    if ident:
        data = [s for s in _snapshots(path) if s[2] == USER and s[1] != "COMPACT"]
        assert len(data) == 1, f"{where}: applied {len(data)} times: {data}"


# ---- 2. concurrency ---------------------------------------------------------------------------------
class InterleavingFileIO(FileIO):
    """A local FileIO that runs `other` (another writer's whole operation) just before its
    `at`-th I/O call."""

    def __init__(self, at: int | None, other: Callable[[], None] | None = None):
        super().__init__(pafs.LocalFileSystem())
        self.at, self.other, self.calls, self.fired = at, other, 0, False


def _interleaving(name: str):
    method = getattr(FileIO, name)

    def wrapper(self: InterleavingFileIO, *args, **kwargs):
        self.calls += 1
        if self.calls == self.at and not self.fired:
            self.fired = True
            self.other()
        return method(self, *args, **kwargs)
    return wrapper


for _name in IO_METHODS:
    setattr(InterleavingFileIO, _name, _interleaving(_name))


def _settle(path: str) -> None:
    """Compact what a writer that died between its snapshots left at level 0 (any later writer
    of its buckets or `Table.compact` does), so the table reads as its committed batches say."""
    ps.Table.open(path).compact()


def _steps(total: int, offset: int) -> list[int]:
    if EVERY_STEP or total <= INTERLEAVINGS:
        return list(range(1, total + 1))
    stride = total / INTERLEAVINGS
    return sorted({min(total, 1 + int(i * stride + offset % max(1, int(stride)))) for i in range(INTERLEAVINGS)})


@pytest.mark.parametrize("kind", KINDS)
def test_concurrent_commits_give_a_serial_order_or_a_documented_conflict(templates, java_checks, tmp_path, kind):
    template, before = templates[kind]
    keyed = KINDS[kind][0] is not None
    for name in changes_of(kind):
        change = CHANGES[name]
        counter = InterleavingFileIO(None)
        clean = _copy(template, str(tmp_path / f"{name}-clean"))
        cached = _fresh_caches()
        try:
            change.run(ps.Table(counter, clean), commit_user=USER)
        finally:
            dv_compaction.KEY_INDEXES = cached
        for index, other_name in enumerate(others_of(kind)):
            other = OTHERS[other_name]
            serial = {
                "change, then other": other.model(change.model(before, keyed), keyed),
                "other, then change": change.model(other.model(before, keyed), keyed),
            }
            alone = other.model(before, keyed)
            for k in _steps(counter.calls, index):
                path = _copy(template, str(tmp_path / f"{name}-{other_name}-{k}"))
                io = InterleavingFileIO(k, lambda p=path: other.run(ps.Table.open(p)))
                where = f"{kind}: {name} with a concurrent {other_name} before I/O step {k}"
                cached = _fresh_caches()
                try:
                    change.run(ps.Table(io, path), commit_user=USER)
                    conflict = None
                except CommitConflictError as exc:  # documented: then the change has no effect
                    conflict = exc
                finally:
                    dv_compaction.KEY_INDEXES = cached
                if not io.fired:  # the change made fewer calls this time (its maintenance after the commit)
                    other.run(ps.Table.open(path))
                if other_name == "died-write":
                    _settle(path)
                rows = rows_of(path)
                if conflict is not None:
                    assert rows == alone, f"{where}: {conflict!r}, yet the change took effect: {rows}"
                else:
                    order = _serial_order(path)
                    expected = [serial[order]] if order else list(serial.values())
                    assert rows in expected, f"{where}: {rows} is not {order or 'a serial order'}: {serial}"
                _assert_checks(path, where)
                if k == _steps(counter.calls, index)[-1]:
                    java_checks.append((where, path, rows))
                else:
                    shutil.rmtree(path)


def _serial_order(path: str) -> str | None:
    """The order of the change's and the other writer's first data snapshots (None when one of
    them committed none: a compaction, which changes no row)."""
    data = [s for s in _snapshots(path) if s[2] != "w" and s[1] != "COMPACT"]
    change = next((s[0] for s in data if s[2] == USER), None)
    other = next((s[0] for s in data if s[2] != USER), None)
    if change is None or other is None:
        return None
    return "change, then other" if change < other else "other, then change"


# ---- 3. Java reads what the scenarios left -----------------------------------------------------------
def test_java_reads_the_tables_the_scenarios_left(java_checks):
    if not java_checks:
        pytest.skip("run with the scenarios above (they collect the tables)")
    from java_oracle import get_oracle
    with get_oracle().batch() as jb:
        reads = [(where, jb.read(path), expected) for where, path, expected in java_checks]
    for (where, path, _), (_, read, expected) in zip(java_checks, reads):
        got = sorted(((r["id"], r["v"], r["p"]) for r in read.result), key=_order)
        assert got == expected, f"{where}: Java reads {got}"
        _assert_checks(path, where, verify_data=True)


# ---- regression tests: bugs the sweeps found ------------------------------------------------------------
def _table(catalog, kind: str, name: str = "db.t") -> ps.Table:
    pk, options = KINDS[kind]
    t = catalog.create_table(name, SCHEMA, primary_keys=pk, partition_keys=["p"], options=options)
    t.write_arrow(batch(range(0, 12)))
    return t


def test_a_retried_change_completes_the_compaction_its_failure_left_out(catalog):
    """A deletion-vector delete that died after its APPEND snapshot (before the COMPACT that
    makes its -D rows visible to readers) was, on retry with the same commit user and
    identifier, taken as committed and skipped: the rows stayed, silently."""
    t = _table(catalog, "pk-dv")
    with killed_before_compaction(SystemExit("died")), pytest.raises(SystemExit):
        t.delete([("id", "<", 4)], commit_user=USER, commit_identifier=IDENT)
    assert sorted(t.to_arrow().column("id").to_pylist()) == list(range(12))  # invisible so far
    t.delete([("id", "<", 4)], commit_user=USER, commit_identifier=IDENT)
    assert sorted(t.to_arrow().column("id").to_pylist()) == list(range(4, 12))
    assert [s.commit_kind for s in t.snapshots() if s.commit_user == USER] == ["APPEND", "COMPACT"]


def _between_read_and_commit(t: ps.Table, other: Callable[[], object]) -> None:
    """Run `other` once, on the first snapshot publication of `t`'s next operation (its plan and
    files are made by then)."""
    io = t.file_io
    original = io.try_create_atomic
    state = {"done": False}

    def publish(*args, **kwargs):
        if not state["done"]:
            state["done"] = True
            other()
        return original(*args, **kwargs)
    io.try_create_atomic = publish


@pytest.mark.parametrize("kind", ["pk-dv", "pk-mor"])
def test_concurrent_updates_of_a_primary_key_table_lose_nothing(catalog, kind):
    """Two `v = v + 1` updates of the same rows, one committing while the other wrote its rows:
    the second wrote back the rows it had read, so one increment was lost (and an update after a
    concurrent delete brought the deleted rows back). Now a data commit since the read makes
    the change read and write again."""
    t = _table(catalog, kind)
    t.file_io = FileIO(pafs.LocalFileSystem())
    other = ps.Table.open(t.path)
    _between_read_and_commit(t, lambda: other.update([("id", "<", 3)], {"v": pc.field("v") + 1}))
    t.update([("id", "<", 3)], {"v": pc.field("v") + 1})
    assert rows_of(t.path)[:4] == [(0, 2, "b"), (1, 3, "a"), (2, 4, "b"), (3, 3, "a")]

    t2 = _table(catalog, kind, "db.t2")
    t2.file_io = FileIO(pafs.LocalFileSystem())
    other = ps.Table.open(t2.path)
    _between_read_and_commit(t2, lambda: other.delete([("id", "in", [1, 2])]))
    t2.update([("id", "<", 3)], {"v": 100})
    assert rows_of(t2.path)[:3] == [(0, 100, "b"), (3, 3, "a"), (4, 4, "b")]


def test_a_concurrent_delete_of_a_row_a_deletion_vector_write_hid_is_not_undone(catalog):
    """Deletion-vector table: the other writer's -D rows leave no file once compacted, so their
    sequence numbers cannot reveal the conflict; the check is on the snapshots committed since."""
    t = _table(catalog, "pk-dv")
    t.file_io = FileIO(pafs.LocalFileSystem())
    other = ps.Table.open(t.path)
    _between_read_and_commit(t, lambda: other.delete([("id", "=", 2)]))
    t.update([("id", "<", 4)], {"v": pc.field("v") * 10})
    assert rows_of(t.path)[:4] == [(0, 0, "b"), (1, 10, "a"), (3, 30, "a"), (4, 4, "b")]


def test_an_uncompacted_batch_is_made_visible_before_a_change_reads(catalog):
    """A batch whose writer died between APPEND and COMPACT is hidden from deletion-vector
    readers, but the change's own compaction publishes it below the change's rows: the delete
    decided on the rows without it (a row it then updated to a non-matching value was deleted)."""
    t = _table(catalog, "pk-dv")
    _dies_before_compacting(ps.Table.open(t.path), batch([1, 3], v=lambda i: 50))  # 1 and 3 no longer match
    t.delete([("v", "<", 6)])
    assert rows_of(t.path) == sorted([(1, 50, "a"), (3, 50, "a")] + [(i, i, "a" if i % 2 else "b")
                                                                     for i in range(6, 12)], key=_order)


@pytest.mark.parametrize("change", ["delete", "update"])
def test_first_vectors_of_one_file_from_two_writers_conflict(catalog, change):
    """Bucket-unaware deletion-vector table: two changes each gave the same file its first
    vector, in index files of their own; readers took one of the two, so the other's rows came
    back (an update's rows twice)."""
    t = _table(catalog, "append-dv")
    t.file_io = FileIO(pafs.LocalFileSystem())
    other = ps.Table.open(t.path)
    _between_read_and_commit(t, lambda: other.delete([("id", "in", [1, 2])]))
    if change == "delete":
        t.delete([("id", "in", [2, 3])])
        expected = [(i, i, "a" if i % 2 else "b") for i in range(12) if i not in (1, 2, 3)]
    else:
        t.update([("id", "in", [2, 3])], {"v": 100})
        expected = sorted([(i, i, "a" if i % 2 else "b") for i in range(12) if i not in (1, 2, 3)] + [(3, 100, "a")],
                          key=_order)
    assert rows_of(t.path) == expected


@pytest.mark.parametrize("kind", ["pk-dv", "pk-mor", "append-dv"])
def test_a_conflict_on_every_attempt_is_a_documented_error_that_commits_nothing(catalog, kind):
    """With no retries left (`commit.max-retries` = 0), the change that lost the race raises
    CommitConflictError, and the table holds the other writer's change alone."""
    pk, options = KINDS[kind]
    t = catalog.create_table("db.t", SCHEMA, primary_keys=pk, partition_keys=["p"],
                             options={**options, "commit.max-retries": "0"})
    t.write_arrow(batch(range(0, 12)))
    t.file_io = FileIO(pafs.LocalFileSystem())
    other = ps.Table.open(t.path)
    _between_read_and_commit(t, lambda: other.delete([("id", "in", [1, 2])]))
    with pytest.raises(CommitConflictError):
        t.update([("id", "in", [2, 3])], {"v": 100})
    assert rows_of(t.path) == [(i, i, "a" if i % 2 else "b") for i in range(12) if i not in (1, 2)]
    _assert_checks(t.path, kind, verify_data=True)


@pytest.mark.parametrize("kind,change", [(k, c) for k in KINDS if k.startswith("append") for c in changes_of(k)])
def test_a_change_committed_after_a_concurrent_append_changes_its_rows_too(catalog, kind, change):
    """Append tables: a delete or update planned before another writer appended rows it matches
    committed after that append (a later snapshot), yet left those rows as they were (all but
    bucket-unaware deletion-vector tables): the table was not the commits applied in snapshot
    order. Now another writer's data since the plan makes the change plan again."""
    t = _table(catalog, kind)
    t.file_io = FileIO(pafs.LocalFileSystem())
    other = ps.Table.open(t.path)
    _between_read_and_commit(t, lambda: other.write_arrow(batch([2, 3, 40])))
    rows = [(i, i, "a" if i % 2 else "b") for i in list(range(12)) + [2, 3, 40]]
    if change == "delete":
        t.delete([("v", "<", 4)])
        expected = [r for r in rows if r[1] >= 4]
    else:
        t.update([("v", "<", 4)], {"v": pc.field("v") + 100})
        expected = [(r[0], r[1] + 100 if r[1] < 4 else r[1], r[2]) for r in rows]
    assert [s[1] for s in _snapshots(t.path)] == ["APPEND", "APPEND", "OVERWRITE"]
    assert rows_of(t.path) == sorted(expected, key=_order)
    _assert_checks(t.path, kind, verify_data=True)
