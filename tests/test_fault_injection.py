"""Fault injection at every I/O step of a commit.

For each operation (append to a primary-key table, a deletion-vector write = APPEND + COMPACT,
an overwrite, a full compaction) a clean run counts its I/O steps N; then for every n in 1..N
and every fault mode (refused call, lost reply, torn write, crash) the operation runs on a
fresh copy of the same table with step n failing. Afterwards, read through a clean FileIO:

* the table verifies (`check_table`: no snapshot references a missing or torn file);
* it reads exactly as before, or — when the failure hit after the snapshot was published —
  exactly as after, with the operation's snapshots each present once;
* recovering as the sink does after a restart (`Table.complete_interrupted_batch`, then ask
  `committed_identifiers` with the same commit user and identifier, redo only if missing)
  leaves the table with the operation's effect applied exactly once.
"""
from __future__ import annotations

import shutil
from dataclasses import dataclass
from typing import Callable

import pyarrow as pa
import pyarrow.fs as pafs
import pytest

import paimon_streaming as ps
from paimon_streaming.check import check_table
from paimon_streaming.errors import CompactionNotCommittedError
from paimon_streaming.lsm import dv_compaction
from paimon_streaming.lsm.lookup import KeyIndexCache
from faulty_fileio import MODES, FaultyFileIO
from conftest import rows_by

SCHEMA = pa.schema([("id", pa.int64(), False), ("v", pa.string()), ("p", pa.string(), False)])
USER, IDENT = "recovering-job", 7
READS = {"read_bytes", "read_text", "open_input_file", "exists", "is_dir", "file_size", "list_status",
         "list_names"}


def batch(ids, v="x", p="a"):
    return pa.table({"id": list(ids), "v": [f"{v}{i}" for i in ids], "p": [p] * len(ids)}, schema=SCHEMA)


@dataclass
class Scenario:
    name: str
    options: dict
    op: Callable[[ps.Table], object]
    writes: bool = True   # a write (sink recovery applies) rather than a compaction
    non_local: bool = False  # through a non-local filesystem: publication by check + rename
    primary_keys: tuple[str, ...] = ("id", "p")

    def file_io(self, fail_at: int | None = None, mode: str = "fail") -> FaultyFileIO:
        fs = pafs.SubTreeFileSystem("/", pafs.LocalFileSystem()) if self.non_local else None
        return FaultyFileIO(fail_at, mode, fs)


SCENARIOS = [
    Scenario("pk-append", {"bucket": "2"},
             lambda t: t.write_arrow(batch([2, 3, 20], v="n"), commit_user=USER, commit_identifier=IDENT)),
    Scenario("dv-append-compact", {"bucket": "1", "deletion-vectors.enabled": "true"},
             lambda t: t.write_arrow(batch([2, 3, 20], v="n"), commit_user=USER, commit_identifier=IDENT)),
    Scenario("overwrite", {"bucket": "2"},
             lambda t: t.write_arrow(batch([5, 6], v="o", p="b"), overwrite=True, commit_user=USER,
                                     commit_identifier=IDENT)),
    Scenario("full-compaction", {"bucket": "1"},
             lambda t: t.compact(full=True, commit_user=USER, commit_identifier=IDENT), writes=False),
    Scenario("pk-append-non-local-fs", {"bucket": "2"},
             lambda t: t.write_arrow(batch([2, 3, 20], v="n"), commit_user=USER, commit_identifier=IDENT),
             non_local=True),
    # data files under an external path (`data-file.external-paths`; `{external}` is set per run)
    Scenario("dv-external-paths", {"bucket": "1", "deletion-vectors.enabled": "true",
                                   "data-file.external-paths": "file://{external}",
                                   "data-file.external-paths.strategy": "round-robin"},
             lambda t: t.write_arrow(batch([2, 3, 20], v="n"), commit_user=USER, commit_identifier=IDENT)),
    # bloom-filter, bitmap and bit-sliced file indexes in `.index` files beside the data files
    Scenario("dv-file-indexes", {"bucket": "1", "deletion-vectors.enabled": "true",
                                 "file-index.bloom-filter.columns": "v", "file-index.bloom-filter.v.items": "10",
                                 "file-index.bitmap.columns": "v", "file-index.bsi.columns": "id",
                                 "file-index.range-bitmap.columns": "v",
                                 "file-index.in-manifest-threshold": "1 b"},
             lambda t: t.write_arrow(batch([2, 3, 20], v="n"), commit_user=USER, commit_identifier=IDENT)),
    # an append table's write that merges its partition's small files (APPEND + COMPACT; the new
    # file outweighs the older one, so the older one does not wait: append_compaction.pick)
    Scenario("append-merge", {"compaction.min.file-num": "2"},
             lambda t: t.write_arrow(batch(range(2, 14), v="n"), commit_user=USER, commit_identifier=IDENT),
             primary_keys=()),
]


def _injectable(mode: str, call: str) -> bool:
    """Steps worth failing in `mode`. A torn write needs a write. A lost reply only differs
    from a refused call when the call changes storage. A crash at a read leaves storage as a
    crash at the next changing call does (reads change nothing), so crashes start at those."""
    if mode == "torn":
        return call == "write_bytes"
    if mode in ("lost-reply", "crash"):
        return call not in READS
    return True


def _state(path: str) -> tuple[list[tuple], list[dict]]:
    t = ps.Table.open(path)
    snaps = [(s.id, s.commit_kind, s.commit_user, s.commit_identifier) for s in t.snapshots()]
    return snaps, rows_by(t.to_arrow(), "p", "id")


def _run(path: str, scenario: Scenario, faulty: FaultyFileIO) -> BaseException | None:
    # Lookup key indexes are cached by data file name, which copies of the template share;
    # a fresh cache keeps the I/O sequence of every run the same as the counted clean run.
    original, dv_compaction.KEY_INDEXES = dv_compaction.KEY_INDEXES, KeyIndexCache()
    try:
        scenario.op(ps.Table(faulty, path))
    except CompactionNotCommittedError as exc:  # the data landed: the error must say in which snapshot
        assert ps.Table.open(path).snapshot_manager.snapshot(exc.snapshot_id).commit_identifier == IDENT
        assert isinstance(exc.__cause__, OSError), exc
        return exc
    except OSError as exc:
        return exc
    finally:
        dv_compaction.KEY_INDEXES = original  # later tests share the process-wide cache
    return None


def _recover(path: str, scenario: Scenario) -> None:
    table = ps.Table.open(path)
    if scenario.writes:
        table.complete_interrupted_batch(USER)
    if not table.committed_identifiers(USER, [IDENT]):
        scenario.op(table)


@pytest.fixture(scope="module")
def templates(tmp_path_factory):
    """Per scenario: the table before the operation, and its state after a clean run."""
    out = {}
    for sc in SCENARIOS:
        base = tmp_path_factory.mktemp(sc.name)
        options = {k: v.format(external=base / "external") for k, v in sc.options.items()}
        t = ps.Catalog(str(base / "wh")).create_table(
            "db.t", SCHEMA, primary_keys=list(sc.primary_keys), partition_keys=["p"], options=options)
        t.write_arrow(batch(range(4)), commit_user="earlier", commit_identifier=1)
        t.write_arrow(batch([1, 2, 9], v="y", p="b"), commit_user="earlier", commit_identifier=2)
        clean = str(base / "clean")
        shutil.copytree(t.path, clean)
        counter = sc.file_io()
        assert _run(clean, sc, counter) is None
        out[sc.name] = (t.path, _state(t.path), _state(clean), len(counter.calls), counter.calls)
    return out


@pytest.mark.parametrize("mode", MODES)
@pytest.mark.parametrize("scenario", SCENARIOS, ids=lambda s: s.name)
def test_failure_at_every_io_step(templates, tmp_path, scenario, mode):
    template, before, after, steps, calls = templates[scenario.name]
    before_snaps, before_rows = before
    after_snaps, after_rows = after
    new_snaps = after_snaps[len(before_snaps):]
    targets = [n for n in range(1, steps + 1) if _injectable(mode, calls[n - 1])]
    assert targets
    for n in targets:
        path = str(tmp_path / f"run-{n}")
        shutil.copytree(template, path)
        faulty = scenario.file_io(fail_at=n, mode=mode)
        error = _run(path, scenario, faulty)
        where = f"{scenario.name}: {mode} at step {n} ({faulty.fired})"
        assert faulty.fired is not None, where

        report = check_table(ps.Table.open(path))
        assert report.ok, f"{where}: {report.errors()}"
        snaps, rows = _state(path)
        landed = [s[1:] for s in snaps[len(before_snaps):]]
        assert snaps[:len(before_snaps)] == before_snaps, where
        assert landed == [s[1:] for s in new_snaps[:len(landed)]], f"{where}: {landed}"
        if error is None:
            assert len(landed) == len(new_snaps), f"{where}: returned without committing everything"
        if not landed:
            assert rows == before_rows, f"{where}: a failed commit changed what readers see"
        elif len(landed) == len(new_snaps):
            assert rows == after_rows, where
        elif not scenario.options.get("deletion-vectors.enabled"):
            # the data snapshot without the compaction after it: merge-on-read readers see it all
            assert landed[0][0] != "COMPACT" and rows == after_rows, f"{where}: {landed}"
        else:  # a DV batch's APPEND without its COMPACT: level 0 is invisible to DV readers
            assert rows == before_rows, f"{where}: a failed commit changed what readers see"

        _recover(path, scenario)
        snaps, rows = _state(path)
        recovered, expected = [s[1:] for s in snaps], [s[1:] for s in after_snaps]
        if not scenario.primary_keys and recovered == expected[:-1]:
            expected = expected[:-1]  # an append table's merge is not redone: the next write merges
        assert recovered == expected, f"{where}: not applied exactly once"
        assert rows == after_rows, where
        shutil.rmtree(path)


def test_clean_runs_touch_storage_in_each_step_kind(templates):
    """The sweep is meaningful: each operation reads, writes and publishes through FileIO."""
    for name, (_, _, _, steps, calls) in templates.items():
        assert {"read_bytes", "write_bytes", "try_create_atomic"} <= set(calls), name
        assert steps > 10, name
    (_, before, after, _, _) = templates["append-merge"]
    assert [s[1] for s in after[0][len(before[0]):]] == ["APPEND", "COMPACT"]  # the merge is swept too
