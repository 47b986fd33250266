"""Deletion-vector tables: every write leaves the table readable without merging, by us,
pypaimon and Apache Paimon Java; lookup marks replaced rows; compaction keeps levels sane."""
from __future__ import annotations

import tempfile

import numpy as np
import pyarrow as pa
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import paimon_streaming as ps
from paimon_streaming.errors import InvalidOptionError
from paimon_streaming.scan import TableScan
from conftest import pypaimon_read

SCHEMA = pa.schema([("k", pa.int64(), False), ("v", pa.string()), ("n", pa.int64())])
DV = {"deletion-vectors.enabled": "true"}


def state(table) -> dict:
    return {r["k"]: (r["v"], r["n"]) for r in table.to_arrow().to_pylist()}


def live_files(table):
    latest = table.latest_snapshot()
    return TableScan(table.file_io, table.path, table.schema).live_entries(latest) if latest else []


def check_invariants(table) -> None:
    """No level-0 file remains, and no key is live twice (DV readers never merge)."""
    assert not [e for e in live_files(table) if e.file.level == 0]
    keys = table.to_arrow().column("k").to_pylist()
    assert len(keys) == len(set(keys))


def batch(keys, tag, ops=None):
    data = {"k": pa.array(keys, pa.int64()), "v": [f"{tag}-{k}" for k in keys], "n": pa.array(keys, pa.int64())}
    if ops is not None:
        data["op"] = ops
    return pa.table(data)


def test_each_write_is_visible_to_dv_readers(catalog, warehouse):
    t = catalog.create_table("db.dv", SCHEMA, primary_keys=["k"], options={"bucket": "2", **DV})
    model = {}
    for step in range(8):
        keys = list(range(step * 30, step * 30 + 60))
        ids = t.write_arrow(batch(keys, f"s{step}"))
        kinds = [t.snapshot(i).commit_kind for i in range(ids - 1, ids + 1)] if step else None
        model.update({k: (f"s{step}-{k}", k) for k in keys})
        assert state(t) == model
        check_invariants(t)
        theirs = {r["k"]: (r["v"], r["n"]) for r in pypaimon_read(warehouse, "db.dv").to_pylist()}
        assert theirs == model, f"pypaimon's DV read differs after batch {step}"
        if kinds:
            assert kinds == ["APPEND", "COMPACT"]
    snaps = t.snapshots()
    assert len({s.commit_identifier for s in snaps[-2:]}) == 1


def test_deletes_and_row_kinds(catalog, warehouse):
    t = catalog.create_table("db.del", SCHEMA, primary_keys=["k"], options={"bucket": "3", **DV})
    t.write_arrow(batch(list(range(20)), "a"))
    t.write_arrow(batch([1, 2, 3, 30], "b", ops=["-D", "+U", "-D", "+I"]), row_kind_column="op")
    expected = {k: (f"a-{k}", k) for k in range(20) if k not in (1, 3)} | {2: ("b-2", 2), 30: ("b-30", 30)}
    assert state(t) == expected
    check_invariants(t)
    assert {r["k"]: (r["v"], r["n"]) for r in pypaimon_read(warehouse, "db.del").to_pylist()} == expected


def test_full_compaction_drops_obsolete_vectors(catalog, warehouse):
    t = catalog.create_table("db.fc", SCHEMA, primary_keys=["k"], options={"bucket": "1", **DV})
    for step in range(4):
        t.write_arrow(batch(list(range(0, 100, step + 1)), f"s{step}"))
    before = state(t)
    t.compact(full=True)
    assert state(t) == before
    files = live_files(t)
    assert {e.file.level for e in files} == {5}
    scan = TableScan(t.file_io, t.path, t.schema)
    index = scan.index_manifest.read(t.latest_snapshot().index_manifest)
    assert not [e for e in index if e.index_file.index_type == "DELETION_VECTORS"]
    assert {r["k"]: (r["v"], r["n"]) for r in pypaimon_read(warehouse, "db.fc").to_pylist()} == before


@pytest.mark.parametrize("amplification", ["200", "0"])
def test_new_keys_move_up_without_rewrite(catalog, warehouse, amplification):
    """A batch's keys above everything in the bucket get their own file, which compaction moves
    to the top level as it is; only the updated keys go through lookup and merge. With a zero
    size-amplification budget every compaction also rewrites the moved file (netted out)."""
    t = catalog.create_table("db.mv", SCHEMA, primary_keys=["k"],
                             options={"bucket": "1", **DV, "compaction.max-size-amplification-percent": amplification,
                                      "num-sorted-run.compaction-trigger": "2",
                                      "target-file-size": "64 kb"})  # files of 100 rows are not small
    model = {}
    for step in range(6):
        keys = list(range(step * 100, step * 100 + 100)) + list(range(0, step * 100, 7))
        sid = t.write_arrow(batch(keys, f"s{step}"))
        model.update({k: (f"s{step}-{k}", k) for k in keys})
        assert state(t) == model
        check_invariants(t)
        scan = TableScan(t.file_io, t.path, t.schema)
        appended = {e.file.file_name: e.file for e in scan.delta_entries(t.snapshot(sid - 1))}
        fresh = [f for f in appended.values() if f.row_count == 100]  # the batch's new keys alone
        assert len(appended) == (1 if step == 0 else 2) and len(fresh) == 1
        live = {e.file.file_name: e.file.level for e in live_files(t)}
        if amplification == "200":
            assert live.get(fresh[0].file_name) == t.options.num_levels - 1, "the new-key file was rewritten"
    assert {r["k"]: (r["v"], r["n"]) for r in pypaimon_read(warehouse, "db.mv").to_pylist()} == model
    from java_oracle import get_oracle
    assert {r["k"]: (r["v"], r["n"]) for r in get_oracle().read(t.path)} == model


def test_untouched_vectors_are_copied_and_unchanged_buckets_keep_their_index(catalog, warehouse):
    t = catalog.create_table("db.cp", SCHEMA, primary_keys=["k"], options={"bucket": "1", **DV})
    for step in range(3):  # each batch hits an older file: three files with vectors
        t.write_arrow(batch(list(range(step * 10, step * 10 + 10)) + ([step * 10 - 1] if step else []), f"s{step}"))
    scan = TableScan(t.file_io, t.path, t.schema)

    def dv_index():
        return [e.index_file for e in scan.index_manifest.read(t.latest_snapshot().index_manifest)
                if e.index_file.index_type == "DELETION_VECTORS"]
    before = dv_index()
    t.write_arrow(batch([100, 101], "new"))  # only new keys: no vector changes
    assert dv_index() == before
    t.write_arrow(batch([0], "again"))  # one vector changes, the others are copied as bytes
    after = dv_index()
    assert after != before
    expected = {k: (f"s{k // 10}-{k}", k) for k in range(30)} | {9: ("s1-9", 9), 19: ("s2-19", 19)}
    expected |= {0: ("again-0", 0), 100: ("new-100", 100), 101: ("new-101", 101)}
    assert state(t) == expected
    assert {r["k"]: (r["v"], r["n"]) for r in pypaimon_read(warehouse, "db.cp").to_pylist()} == expected


@pytest.mark.parametrize("threshold", ["0.2", "1.0"])
def test_files_with_many_deleted_rows_are_rewritten(catalog, warehouse, threshold):
    t = catalog.create_table("db.ratio", SCHEMA, primary_keys=["k"],
                             options={"bucket": "1", **DV, "compaction.delete-ratio-threshold": threshold})
    t.write_arrow(batch(list(range(100)), "a"))
    first = {e.file.file_name for e in live_files(t)}
    t.write_arrow(batch(list(range(0, 100, 3)), "b"))  # 34 of the file's 100 rows replaced
    scan = TableScan(t.file_io, t.path, t.schema)
    vectors = {r.data_file_name: r.cardinality for e in scan.index_manifest.read(t.latest_snapshot().index_manifest)
               for r in e.index_file.dv_ranges or ()}
    live = {e.file.file_name for e in live_files(t)}
    if threshold == "0.2":
        assert not first & live and not vectors, "the 34%-deleted file should have been rewritten"
    else:
        assert first <= live and vectors == {next(iter(first)): 34}
    expected = {k: ("b" if k % 3 == 0 else "a") + f"-{k}" for k in range(100)}
    assert {k: v for k, (v, _) in state(t).items()} == expected
    check_invariants(t)
    assert {r["k"]: r["v"] for r in pypaimon_read(warehouse, "db.ratio").to_pylist()} == expected


def test_deleted_rows_are_rewritten_once_the_bucket_passes_the_threshold(catalog, warehouse):
    """The gate is the bucket's deleted share: a file past the threshold alone is left while
    the bucket as a whole is below it (reads scan at most 1 / (1 - threshold) of the live rows)."""
    t = catalog.create_table("db.gate", SCHEMA, primary_keys=["k"],
                             options={"bucket": "1", **DV, "target-file-size": "64 kb"})  # no file is small
    t.write_arrow(batch(list(range(100)), "a"))
    first = {e.file.file_name for e in live_files(t)}
    t.write_arrow(batch(list(range(100, 300)), "b"))  # new keys: a second top-level file

    def vectors() -> dict[str, int]:
        scan = TableScan(t.file_io, t.path, t.schema)
        return {r.data_file_name: r.cardinality for e in scan.index_manifest.read(t.latest_snapshot().index_manifest)
                for r in e.index_file.dv_ranges or ()}
    t.write_arrow(batch(list(range(30)), "c"))  # the first file 30% deleted, the bucket 10%
    assert first <= {e.file.file_name for e in live_files(t)} and vectors()[next(iter(first))] == 30
    t.write_arrow(batch(list(range(30, 70)), "d"))  # the first file 70% deleted, the bucket 23%
    assert not first & {e.file.file_name for e in live_files(t)}
    expected = {k: ("c" if k < 30 else "d" if k < 70 else "a" if k < 100 else "b") + f"-{k}" for k in range(300)}
    assert {k: v for k, (v, _) in state(t).items()} == expected
    check_invariants(t)
    assert {r["k"]: r["v"] for r in pypaimon_read(warehouse, "db.gate").to_pylist()} == expected


def test_the_gate_counts_new_key_files_of_the_same_batch(catalog, warehouse):
    """A batch's new-key file moves to the top level in the batch's own compaction: its rows
    are part of the bucket's top level when the deleted share is weighed (30 of 300 rows here,
    not 30 of 100), so a young table is not rewritten for updates it has just diluted."""
    t = catalog.create_table("db.dilute", SCHEMA, primary_keys=["k"],
                             options={"bucket": "1", **DV, "target-file-size": "64 kb"})  # no file is small
    t.write_arrow(batch(list(range(100)), "a"))
    first = {e.file.file_name for e in live_files(t)}
    t.write_arrow(batch(list(range(30)) + list(range(100, 300)), "b"))
    live = {e.file.file_name: e.file.level for e in live_files(t)}
    assert first <= set(live), "the 30%-deleted file was rewritten though the bucket is 10% deleted"
    assert sorted(live.values()) == [4, 5, 5]  # updates upgraded below the top, new keys moved up
    expected = {k: ("b" if k < 30 or k >= 100 else "a") + f"-{k}" for k in range(300)}
    assert {k: v for k, (v, _) in state(t).items()} == expected
    check_invariants(t)
    assert {r["k"]: r["v"] for r in pypaimon_read(warehouse, "db.dilute").to_pylist()} == expected


@pytest.mark.parametrize("target, bounded", [("128 mb", True), ("1 kb", False)])
def test_small_commits_of_new_keys_do_not_pile_up_files(catalog, warehouse, target, bounded):
    """Keys new to the bucket move up without a rewrite; small ones then merge by size ratio,
    so 40 small commits leave a handful of files, not 40 (unless the files are not small)."""
    t = catalog.create_table("db.tail", SCHEMA, primary_keys=["k"],
                             options={"bucket": "1", **DV, "target-file-size": target})
    model = {}
    for step in range(40):
        keys = list(range(step * 10, step * 10 + 10))
        t.write_arrow(batch(keys, f"s{step}"))
        model.update({k: (f"s{step}-{k}", k) for k in keys})
    t.write_arrow(batch([5, 205, 395], "u"))  # updates land in merged files too
    model.update({k: (f"u-{k}", k) for k in (5, 205, 395)})
    top = [e for e in live_files(t) if e.file.level == 5]
    assert (len(top) <= 8) == bounded, len(top)
    assert state(t) == model
    check_invariants(t)
    assert {r["k"]: (r["v"], r["n"]) for r in pypaimon_read(warehouse, "db.tail").to_pylist()} == model


def test_small_files_of_wide_tables_merge_by_column_chunk_size(catalog):
    """A 200-column file of 400 rows is over half of 1 MB, which alone would never merge, but
    its column chunks are 3 KB each: such files merge too, up to 32 KB a column chunk."""
    columns = 200
    schema = pa.schema([pa.field("k", pa.int64(), False)] + [(f"c{i}", pa.float64()) for i in range(columns)])
    t = catalog.create_table("db.wide", schema, primary_keys=["k"], options={"bucket": "1", **DV})
    rng = np.random.default_rng(3)
    written = []
    for step in range(12):
        rows = pa.table([np.arange(step * 400, step * 400 + 400)] + [rng.random(400) for _ in range(columns)],
                        schema=schema)
        t.write_arrow(rows)
        written.append(rows)
    top = [e.file for e in live_files(t) if e.file.level == 5]
    assert min(f.file_size for f in top) > 512 << 10  # each commit's file alone is "not small" by bytes
    assert len(top) <= 4, [f.row_count for f in top]  # 12 of them merged as a binary counter
    assert max(f.file_size for f in top) <= (columns + 3) * (32 << 10)  # 128 MB / 4096 a column
    assert t.to_arrow().sort_by("k").equals(pa.concat_tables(written))
    check_invariants(t)


@pytest.mark.parametrize("buckets", ["1", "2"])
def test_sequence_field_lets_an_older_row_win(catalog, warehouse, buckets):
    """With sequence.field the old row found by lookup can outrank the batch's row."""
    t = catalog.create_table("db.seq", SCHEMA, primary_keys=["k"],
                             options={"bucket": buckets, **DV, "sequence.field": "n"})
    t.write_arrow(pa.table({"k": pa.array([1, 3], pa.int64()), "v": ["a", "x"], "n": pa.array([5, 1], pa.int64())}))
    t.write_arrow(pa.table({"k": pa.array([1, 2, 3], pa.int64()), "v": ["old", "c", "y"],
                            "n": pa.array([3, 1, 2], pa.int64())}))
    expected = {1: ("a", 5), 2: ("c", 1), 3: ("y", 2)}
    assert state(t) == expected
    check_invariants(t)
    assert {r["k"]: (r["v"], r["n"]) for r in pypaimon_read(warehouse, "db.seq").to_pylist()} == expected


def test_a_batch_whose_compaction_loses_a_race_is_compacted_again(catalog, warehouse, monkeypatch):
    t = catalog.create_table("db.race", SCHEMA, primary_keys=["k"],
                             options={"bucket": "1", **DV, "target-file-size": "64 kb"})  # no file is small
    t.write_arrow(batch(list(range(10)), "a"))
    t.write_arrow(batch(list(range(10, 20)), "a"))  # a second top-level file: full compaction rewrites both
    original = ps.Table._write_planned  # what write_arrow writes with, once it read the latest snapshot

    def racing(self, *args, **kwargs):
        messages = original(self, *args, **kwargs)
        ps.Table.open(self.path).compact(full=True)  # another writer rewrites what we compacted
        return messages
    monkeypatch.setattr(ps.Table, "_write_planned", racing)
    before = len(t.snapshots())
    t.write_arrow(batch([3, 4, 30], "b"))
    monkeypatch.undo()
    # the race's COMPACT, our APPEND, our COMPACT refused (it marked rewritten files), our redone COMPACT
    assert [s.commit_kind for s in t.snapshots()[before:]] == ["COMPACT", "APPEND", "COMPACT"]
    expected = {k: (f"a-{k}", k) for k in range(20)} | {k: (f"b-{k}", k) for k in (3, 4, 30)}
    assert state(t) == expected
    check_invariants(t)
    assert {r["k"]: (r["v"], r["n"]) for r in pypaimon_read(warehouse, "db.race").to_pylist()} == expected


def test_a_dead_batch_is_never_published_bucket_by_bucket(catalog, warehouse):
    """A batch whose writer died between its APPEND and COMPACT snapshots has level-0 files in
    several buckets, which deletion-vector readers skip. Another writer's batch compacted only the
    buckets it wrote, so the dead batch became visible in those and stayed hidden in the others
    (a part of a batch: found by tests/test_row_level_faults.py). Now any writer's batch compacts
    every such bucket with its own."""
    from conftest import killed_before_compaction
    t = catalog.create_table("db.dead", SCHEMA, primary_keys=["k"], options={"bucket": "4", **DV})
    t.write_arrow(batch(list(range(40)), "a"))
    with killed_before_compaction(SystemExit("the writer died")), pytest.raises(SystemExit):
        ps.Table.open(t.path).write_arrow(batch(list(range(40)), "dead"))
    assert {v for v, _ in state(t).values()} == {f"a-{k}" for k in range(40)}  # hidden, all of it
    t.write_arrow(batch([0], "b"))                    # one row: one bucket of the four
    expected = {k: (f"dead-{k}", k) for k in range(1, 40)} | {0: ("b-0", 0)}
    assert state(t) == expected
    assert t.uncompacted_buckets(t.latest_snapshot()) == set()
    check_invariants(t)


@pytest.mark.parametrize("bitmap64", ["false", "true"])
def test_java_reads_our_dv_tables(catalog, bitmap64):
    from java_oracle import get_oracle
    t = catalog.create_table("db.j", SCHEMA, primary_keys=["k"],
                             options={"bucket": "2", "deletion-vectors.bitmap64": bitmap64, **DV})
    model = {}
    rng = np.random.default_rng(3)
    for step in range(5):
        keys = sorted(set(rng.integers(0, 200, 80).tolist()))
        t.write_arrow(batch(keys, f"s{step}"))
        model.update({k: (f"s{step}-{k}", k) for k in keys})
    java_rows = get_oracle().read(t.path)
    assert {r["k"]: (r["v"], r["n"]) for r in java_rows} == model


ops = st.lists(st.tuples(st.sampled_from(["upsert", "upsert", "delete", "compact", "reopen"]),
                         st.lists(st.integers(0, 40), min_size=1, max_size=25)), min_size=1, max_size=10)


@settings(max_examples=20, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(ops=ops, buckets=st.sampled_from(["1", "2"]), engine=st.sampled_from(["deduplicate", "partial-update"]))
def test_model_based_dv(ops, buckets, engine):
    """Random upserts, deletes, compactions and reopenings against a dict model, after every step."""
    warehouse = tempfile.mkdtemp()
    options = {"bucket": buckets, **DV, "merge-engine": engine, "num-sorted-run.compaction-trigger": "3"}
    if engine == "partial-update":
        options["partial-update.remove-record-on-delete"] = "true"
    table = ps.Catalog(warehouse).create_table("db.m", SCHEMA, primary_keys=["k"], options=options)
    model: dict[int, tuple] = {}
    for step, (op, keys) in enumerate(ops):
        keys = sorted(set(keys))
        if op == "reopen":
            table = ps.Table.open(table.path)
            continue
        if op == "compact":
            table.compact(full=step % 2 == 0)
        elif op == "delete":
            table.write_arrow(batch(keys, f"d{step}", ops=["-D"] * len(keys)), row_kind_column="op")
            for k in keys:
                model.pop(k, None)
        else:
            data = batch(keys, f"u{step}")
            if engine == "partial-update" and step % 3 == 1:
                data = data.set_column(1, "v", pa.nulls(len(keys), pa.string()))  # keep old v
                for k in keys:
                    old_v = model.get(k, (None, None))[0]
                    model[k] = (old_v, k)
            else:
                model.update({k: (f"u{step}-{k}", k) for k in keys})
            table.write_arrow(data)
        assert state(table) == model, f"after step {step} ({op})"
        check_invariants(table)
    if engine == "deduplicate":  # pypaimon refuses partial-update.remove-record-on-delete
        theirs = {r["k"]: (r["v"], r["n"]) for r in pypaimon_read(warehouse, "db.m").to_pylist()}
        assert theirs == model


def layout(table) -> list[tuple]:
    """Per live file: bucket, level, rows and its deleted rows, in a thread-independent order."""
    scan = TableScan(table.file_io, table.path, table.schema)
    deleted = {r.data_file_name: r.cardinality for e in scan.index_manifest.read(table.latest_snapshot().index_manifest)
               for r in e.index_file.dv_ranges or ()}
    return sorted((e.bucket, e.file.level, e.file.row_count, deleted.get(e.file.file_name, 0))
                  for e in live_files(table))


def test_buckets_written_in_parallel_equal_a_sequential_write(catalog, monkeypatch):
    """Buckets are written and compacted on several threads; the result must not depend on it."""
    rng = np.random.default_rng(3)
    batches = [batch(sorted(set(rng.integers(0, 3000, 800).tolist())), f"b{i}") for i in range(6)]
    tables = {}
    for threads in ("1", "4"):
        monkeypatch.setenv("PAIMON_WRITE_THREADS", threads)
        t = catalog.create_table(f"db.threads{threads}", SCHEMA, primary_keys=["k"], options={"bucket": "4", **DV})
        for b in batches:
            t.write_arrow(b)
        check_invariants(t)
        tables[threads] = t
    assert state(tables["1"]) == state(tables["4"])
    assert layout(tables["1"]) == layout(tables["4"])


@pytest.mark.parametrize("failing", ["files", "compaction"])
def test_a_bucket_failing_on_the_write_threads_fails_the_whole_batch(catalog, monkeypatch, failing):
    """One bucket's files or compaction failing on a writer thread (each is its own task) fails
    the batch: nothing is committed, the other buckets' finished work included, and the batch
    written again lands whole."""
    from paimon_streaming.lsm.dv_compaction import BucketCompactor
    from paimon_streaming.write import TableWrite
    monkeypatch.setenv("PAIMON_WRITE_THREADS", "2")
    t = catalog.create_table("db.failing", SCHEMA, primary_keys=["k"], options={"bucket": "4", **DV})
    t.write_arrow(batch(list(range(0, 400)), "a"))
    before = (t.latest_snapshot().id, state(t))
    cls, name = (TableWrite, "write_group") if failing == "files" else (BucketCompactor, "compact")
    original = getattr(cls, name)

    def fail_bucket_2(self, target, *args, **kwargs):
        bucket = target.bucket if failing == "files" else int(target.bucket_dir.rsplit("-", 1)[1])
        if bucket == 2:
            raise OSError("disk full (injected)")
        return original(self, target, *args, **kwargs)
    monkeypatch.setattr(cls, name, fail_bucket_2)
    update = batch(list(range(200, 600)), "b")
    with pytest.raises(OSError, match="injected"):
        t.write_arrow(update)
    assert (t.latest_snapshot().id, state(t)) == before
    monkeypatch.setattr(cls, name, original)
    t.write_arrow(update)
    expected = {**before[1], **{k: (f"b-{k}", k) for k in range(200, 600)}}
    assert state(t) == expected
    check_invariants(t)


@pytest.mark.parametrize("value", ["0", "two"])
def test_write_threads_setting_is_checked(catalog, monkeypatch, value):
    monkeypatch.setenv("PAIMON_WRITE_THREADS", value)
    t = catalog.create_table("db.bad_threads", SCHEMA, primary_keys=["k"], options={"bucket": "2", **DV})
    with pytest.raises(InvalidOptionError, match="PAIMON_WRITE_THREADS"):
        t.write_arrow(batch([1, 2, 3], "x"))
    assert t.latest_snapshot() is None


def test_write_only_leaves_level_0_to_a_dedicated_compaction(catalog):
    """`write-only` = true (Paimon's pattern of writers beside one compaction job): a write
    neither looks keys up nor compacts, so its rows wait in level 0, which batch readers of a
    deletion-vector table skip (as Java's); streams read them at once; the compaction (ours,
    or Java's dedicated job) publishes them, newest version per key."""
    from stream_batches import open_stream, stream_rows
    t = catalog.create_table("db.wo", SCHEMA, primary_keys=["k"], options={"bucket": "2", "write-only": "true", **DV})
    t.write_arrow(batch([1, 2, 3], "a"))
    t.write_arrow(batch([2, 3, 4], "b", ops=["+U", "-D", "+I"]), row_kind_column="op")
    assert {e.file.level for e in live_files(t)} == {0} and [s.commit_kind for s in t.snapshots()] == ["APPEND"] * 2
    assert state(t) == {}
    streamed = stream_rows(open_stream(t, {"scan.mode": "from-snapshot", "scan.snapshot-id": "1"}), ["k", "v"])
    assert sorted((r["k"], r["v"], r["_kind"]) for r in streamed) == [
        (1, "a-1", "+I"), (2, "a-2", "+I"), (2, "b-2", "+U"), (3, "a-3", "+I"), (3, "b-3", "-D"), (4, "b-4", "+I")]
    t.compact()
    assert state(t) == {1: ("a-1", 1), 2: ("b-2", 2), 4: ("b-4", 4)}
    check_invariants(t)


@pytest.mark.parametrize("engine", [DV, {"merge-engine": "first-row"}])
def test_an_overwrite_of_a_write_only_table_is_read_at_once(catalog, engine):
    """An overwrite's files stayed at level 0, which deletion-vector and first-row readers
    skip: a write-only table read as empty after it (ours and Java's), where Java's commit
    moves a bucket's disjoint new files to the top level (`overwrite-upgrade`)."""
    t = catalog.create_table("db.ow", SCHEMA, primary_keys=["k"], options={"bucket": "1", "write-only": "true",
                                                                          **engine})
    t.write_arrow(batch([1, 2, 3], "a"))
    t.write_arrow(batch([2, 5], "b"), overwrite=True)
    assert {e.file.level for e in live_files(t)} == {t.options.num_levels - 1}
    assert state(t) == {2: ("b-2", 2), 5: ("b-5", 5)}
    # two writers' overlapping files in one bucket stay in level 0, as do all with the option off
    messages = t.write_messages(batch([7, 9], "c")) + t.write_messages(batch([8], "d"))
    t.new_commit().commit(messages, "u", 1, overwrite=True)
    assert {e.file.level for e in live_files(t)} == {0}
    t.update_schema().set_option("overwrite-upgrade", "false").commit()
    t.write_arrow(batch([1], "e"), overwrite=True)
    assert {e.file.level for e in live_files(t)} == {0} and state(t) == {}


def test_compactions_around_a_file_whose_bounds_bound_nothing(tmp_path, monkeypatch):
    """A top-level file of an earlier version sorted NaN first (its first key NaN, its last a
    number): compactions that order files by their key bounds (merging small top-level files,
    cutting a full compaction into slices) leave it out of those plans and stay exact."""
    import math
    import pyarrow.compute as pc
    from paimon_streaming import merge_engine

    def nan_first(table, columns):
        return pc.sort_indices(table, sort_keys=[(c, "ascending", "at_start") for c in columns]).to_numpy()
    table = ps.Catalog(str(tmp_path)).create_table(
        "db.t", pa.schema([pa.field("k", pa.float64(), False), ("v", pa.string())]), primary_keys=["k"],
        options={"bucket": "1", **DV})
    with monkeypatch.context() as m:
        m.setattr(merge_engine, "sort_nulls_first", nan_first)
        table.write_arrow(pa.table({"k": [math.nan, 1.0, 2.0, 3.0], "v": ["old"] * 4}))
    expected = {"nan": "old", "1.0": "old", "2.0": "old", "3.0": "old"}
    for i in range(4):   # small commits of new keys: small top-level files next to the old one
        table.write_arrow(pa.table({"k": [10.0 + i], "v": [f"n{i}"]}))
        expected[str(10.0 + i)] = f"n{i}"
    table.write_arrow(pa.table({"k": [math.nan, 2.0], "v": ["new", "new"]}))
    expected.update({"nan": "new", "2.0": "new"})

    def rows():
        return {str(r["k"]): r["v"] for r in table.to_arrow().to_pylist()}
    assert rows() == expected
    table.compact(full=True)
    assert rows() == expected
    check_invariants(table)
