"""Append tables merge their small files as Paimon's writers do (append_compaction.py)."""
from __future__ import annotations

import numpy as np
import pyarrow as pa
import pytest

import paimon_streaming as ps
from paimon_streaming.commit import CommitMessage, Increment
from paimon_streaming.lsm.dv_maintainer import DeletionVectorMaintainer
from paimon_streaming.manifest.entries import FILE_SOURCE_COMPACT
from paimon_streaming.scan import TableScan
from conftest import pypaimon_read

SCHEMA = pa.schema([("id", pa.int64()), ("p", pa.int32()), ("s", pa.string())])


def batch(start: int, n: int = 100, parts: int = 2) -> pa.Table:
    ids = np.arange(start, start + n)
    return pa.table({"id": ids, "p": (ids % parts).astype(np.int32), "s": [f"v{i}" for i in ids]})


def live(t) -> list:
    return TableScan(t.file_io, t.path, t.schema).live_entries(t.latest_snapshot())


def files_per_bucket(t) -> dict:
    out: dict = {}
    for e in live(t):
        out.setdefault((e.partition, e.bucket), []).append(e.file)
    return out


def test_small_files_merge_once_min_file_num_gather(catalog, warehouse):
    t = catalog.create_table("db.a", SCHEMA, partition_keys=["p"])
    for i in range(4):
        t.write_arrow(batch(i * 100))
    assert [len(fs) for fs in files_per_bucket(t).values()] == [4, 4]
    assert all(s.commit_kind == "APPEND" for s in t.snapshots())
    t.write_arrow(batch(400))                       # the fifth file of each partition
    assert [s.commit_kind for s in t.snapshots()[-2:]] == ["APPEND", "COMPACT"]
    for files in files_per_bucket(t).values():
        (merged,) = files
        assert (merged.row_count, merged.file_source, merged.level) == (250, FILE_SOURCE_COMPACT, 0)
        assert (merged.min_sequence_number, merged.max_sequence_number) == (0, 249)
    for i in range(5, 9):                            # four more, with the merged one: five again
        t.write_arrow(batch(i * 100))
    assert sorted(f.row_count for fs in files_per_bucket(t).values() for f in fs) == [450, 450]
    t.write_arrow(batch(900))
    assert sorted(f.row_count for fs in files_per_bucket(t).values() for f in fs) == [50, 50, 450, 450]
    assert sorted(t.to_arrow().column("id").to_pylist()) == list(range(1000))
    assert sorted(pypaimon_read(warehouse, "db.a").column("id").to_pylist()) == list(range(1000))


def test_a_bucket_keeps_its_row_order(catalog):
    """Files merge in sequence order, so a bucket's rows read back in the order written."""
    t = catalog.create_table("db.ordered", SCHEMA, options={"bucket": "1", "bucket-key": "id"})
    rng = np.random.default_rng(1)
    written = []
    for _ in range(7):
        ids = rng.permutation(10_000)[:300]
        written += ids.tolist()
        t.write_arrow(pa.table({"id": ids, "p": np.zeros(300, np.int32), "s": [str(i) for i in ids]}))
    assert len(live(t)) == 3
    assert t.to_arrow().column("id").to_pylist() == written


def random_rows(rng, n: int) -> pa.Table:
    ids = rng.integers(0, 1 << 62, n)
    return pa.table({"id": ids, "s": [f"{x:016x}" for x in ids]})


@pytest.mark.parametrize("rows, files", [(1000, 6),   # files over 70% of the target: never candidates
                                         (600, 6),    # candidates, but five do not fit in twice the target
                                         (300, 3)])   # small: five merge into two files of the target size, one left
def test_file_sizes_decide_what_merges(catalog, rows, files):
    t = catalog.create_table("db.big", pa.schema([("id", pa.int64()), ("s", pa.string())]),
                             options={"target-file-size": "32 kb", "file.compression": "none"})
    rng = np.random.default_rng(2)
    for i in range(6):  # random values, uncompressed: about 28 bytes a row in the file
        t.write_arrow(random_rows(rng, rows))
    assert len(live(t)) == files
    assert t.to_arrow().num_rows == 6 * rows


@pytest.mark.parametrize("options, files", [({"compaction.min.file-num": "3"}, [2, 2]),
                                            ({"write-only": "true"}, [6, 6])])
def test_options_decide_when_files_merge(catalog, options, files):
    t = catalog.create_table("db.opt", SCHEMA, partition_keys=["p"], options=options)
    for i in range(6):
        t.write_arrow(batch(i * 100))
    assert sorted(len(fs) for fs in files_per_bucket(t).values()) == files
    assert sorted(t.to_arrow().column("id").to_pylist()) == list(range(600))


def test_compact_merges_on_demand_and_fully(catalog):
    t = catalog.create_table("db.c", SCHEMA, partition_keys=["p"], options={"write-only": "true"})
    for i in range(3):
        t.write_arrow(batch(i * 100))
    assert t.compact() is None                       # three files: under compaction.min.file-num
    sid = t.compact(full=True)
    assert t.snapshot_manager.snapshot(sid).commit_kind == "COMPACT"
    assert [len(fs) for fs in files_per_bucket(t).values()] == [1, 1]
    assert t.compact(full=True) is None              # one file a bucket: nothing to do
    assert sorted(t.to_arrow().column("id").to_pylist()) == list(range(300))


def test_older_schemas_are_rewritten_as_the_current_one(catalog, warehouse):
    t = catalog.create_table("db.evolved", SCHEMA)
    for i in range(2):
        t.write_arrow(batch(i * 100))
    t.update_schema().add_column("n", pa.int32()).commit()
    t = ps.Table.open(t.path)
    for i in range(2, 5):
        b = batch(i * 100)
        t.write_arrow(b.append_column("n", pa.array(np.arange(100, dtype=np.int32))))
    ((merged,),) = files_per_bucket(t).values()
    assert merged.schema_id == t.schema.id
    rows = {r["id"]: r["n"] for r in t.to_arrow().to_pylist()}
    assert rows == {i: (None if i < 200 else i % 100) for i in range(500)}
    assert {r["id"]: r["n"] for r in pypaimon_read(warehouse, "db.evolved").to_pylist()} == rows


def mark_deleted(t, positions_by_file: dict[str, list[int]]) -> None:
    """Commit deletion vectors for files of bucket 0 (unpartitioned), as Java's DELETE does."""
    w = t.new_write()
    bucket_dir = w.bucket_dir([], 0)
    entries = live(t)
    vectors = DeletionVectorMaintainer(t.file_io, w.dirs.index_dir(bucket_dir), None,
                                       {e.file.file_name: e.file.row_count for e in entries}, False)
    for name, positions in positions_by_file.items():
        vectors.mark(name, np.array(positions))
    added, _ = vectors.write(w.paths)
    t.new_commit().commit([CommitMessage(entries[0].partition, 0, entries[0].total_buckets,
                                         data=Increment(new_index_files=added))], "dv", 1)


def test_deletion_vectors_are_applied_and_leave_their_index(catalog, warehouse):
    t = catalog.create_table("db.dv", pa.schema([("id", pa.int64()), ("s", pa.string())]),
                             options={"deletion-vectors.enabled": "true", "target-file-size": "32 kb",
                                      "file.compression": "none"})
    rng = np.random.default_rng(5)
    for n in (1000, 100, 100):  # a file near the target size, then two small ones
        t.write_arrow(random_rows(rng, n))
    big, small, other = sorted((e.file for e in live(t)), key=lambda f: f.min_sequence_number)
    ids = t.to_arrow().column("id").to_pylist()  # in file order
    mark_deleted(t, {big.file_name: [0, 5, 999], small.file_name: list(range(50))})
    expected = sorted(set(ids) - {ids[0], ids[5], ids[999]} - set(ids[1000:1050]))
    assert sorted(t.to_arrow().column("id").to_pylist()) == expected
    # half of a small file deleted (over the 0.2 ratio): its group of small files is rewritten,
    # and the big file's vector (3 of 1,000 rows) stays, moved to the bucket's new index file
    sid = t.compact()
    kept = {e.file.file_name for e in live(t)}
    assert big.file_name in kept and not kept & {small.file_name, other.file_name} and len(kept) == 2
    scan = TableScan(t.file_io, t.path, t.schema)
    assert list(scan.deletion_files(t.latest_snapshot())[(live(t)[0].partition, 0)]) == [big.file_name]
    assert sorted(t.to_arrow().column("id").to_pylist()) == expected
    t.compact(full=True)                             # every file with a vector too
    assert scan.deletion_files(t.latest_snapshot()) == {}
    assert sum(e.file.row_count for e in live(t)) == len(expected)
    assert sorted(t.to_arrow().column("id").to_pylist()) == expected
    assert sorted(pypaimon_read(warehouse, "db.dv").column("id").to_pylist()) == expected
    from java_oracle import get_oracle
    with get_oracle().batch() as jb:                 # the moved vector, and the end state
        moved, end = jb.read(t.path, snapshot_id=sid), jb.read(t.path)
    assert sorted(r["id"] for r in moved.result) == sorted(r["id"] for r in end.result) == expected
    assert sorted(t.to_arrow(snapshot_id=sid - 1).column("id").to_pylist()) == expected  # time travel


def test_each_delete_keeps_its_own_index_file_on_bucket_unaware_tables(catalog, warehouse):
    """Java's DELETE on a bucket-unaware append table adds an index file of its own beside the
    partition's others (its index manifest keeps them by file name): a later commit must keep
    them all, and compaction apply them all."""
    t = catalog.create_table("db.dels", pa.schema([("id", pa.int64()), ("s", pa.string())]),
                             options={"deletion-vectors.enabled": "true", "compaction.min.file-num": "10"})
    rng = np.random.default_rng(9)
    for _ in range(3):
        t.write_arrow(random_rows(rng, 100))
    first, second, _ = sorted((e.file for e in live(t)), key=lambda f: f.min_sequence_number)
    ids = t.to_arrow().column("id").to_pylist()  # in file order
    mark_deleted(t, {first.file_name: [0, 1]})
    mark_deleted(t, {second.file_name: [7]})     # a second DELETE: a second index file
    more = random_rows(rng, 10)
    t.write_arrow(more)                          # an unrelated commit keeps both
    scan = TableScan(t.file_io, t.path, t.schema)
    assert len(scan.index_manifest.read(t.latest_snapshot().index_manifest)) == 2
    expected = sorted(set(ids) - {ids[0], ids[1], ids[107]}) + more.column("id").to_pylist()
    assert sorted(t.to_arrow().column("id").to_pylist()) == sorted(expected)
    from java_oracle import get_oracle
    assert sorted(r["id"] for r in get_oracle().read(t.path)) == sorted(expected)
    t.compact(full=True)
    assert scan.deletion_files(t.latest_snapshot()) == {}
    assert sorted(t.to_arrow().column("id").to_pylist()) == sorted(expected)
    assert sorted(pypaimon_read(warehouse, "db.dels").column("id").to_pylist()) == sorted(expected)


def test_a_compaction_that_loses_a_race_is_dropped_not_the_data(catalog):
    t = catalog.create_table("db.race", SCHEMA, options={"compaction.min.file-num": "3"})
    for i in range(2):
        t.write_arrow(batch(i * 100, parts=1))
    a, b = ps.Table.open(t.path), ps.Table.open(t.path)
    from_a = a.write_messages(batch(200, parts=1))   # both plan to merge the same two old files
    from_b = b.write_messages(batch(300, parts=1))
    assert from_a[0].compact.deleted_files and from_b[0].compact.deleted_files
    a.new_commit().commit(from_a, "a", 1, best_effort_compaction=True)
    ids = b.new_commit().commit(from_b, "b", 1, best_effort_compaction=True)
    assert [t.snapshot_manager.snapshot(i).commit_kind for i in ids] == ["APPEND"]
    assert sorted(t.to_arrow().column("id").to_pylist()) == list(range(400))
    assert {e.file.file_name for e in live(t)} == (
        {f.file_name for f in from_a[0].compact.new_files} | {f.file_name for f in from_b[0].data.new_files})


def test_java_reads_what_we_merged_and_we_merge_what_java_wrote(catalog):
    from java_oracle import get_oracle
    java = get_oracle()
    t = catalog.create_table("db.j", SCHEMA, partition_keys=["p"], options={"bucket": "2", "bucket-key": "id"})
    for i in range(2):
        t.write_arrow(batch(i * 100))
    with java.batch() as jb:                         # four files a bucket: Java's writer does not merge yet
        for i in range(2, 4):
            jb.write(t.path, batch(i * 100).to_pylist())
    t = ps.Table.open(t.path)
    assert all(len(fs) == 4 for fs in files_per_bucket(t).values())
    t.write_arrow(batch(400))                        # the fifth: ours merges Java's files with its own
    assert t.latest_snapshot().commit_kind == "COMPACT"
    assert all(len(fs) == 1 and fs[0].file_source == FILE_SOURCE_COMPACT for fs in files_per_bucket(t).values())
    java_ids = sorted(r["id"] for r in java.read(t.path))
    assert java_ids == sorted(t.to_arrow().column("id").to_pylist()) == list(range(500))


def test_a_streaming_writer_merges_from_memory(catalog, monkeypatch):
    """Files this process just wrote (its batches' and its merges' small outputs) are merged
    from memory; only files it did not write are read back."""
    import paimon_streaming.append_compaction as append_compaction
    reads = []
    original = append_compaction.read_evolved
    monkeypatch.setattr(append_compaction, "read_evolved", lambda *a, **k: reads.append(a[1]) or original(*a, **k))
    t = catalog.create_table("db.mem", SCHEMA, partition_keys=["p"])
    for i in range(13):                              # merges at writes 5, 9 and 13
        t.write_arrow(batch(i * 100))
    assert reads == [] and sum(s.commit_kind == "COMPACT" for s in t.snapshots()) == 3
    append_compaction.RECENT_ROWS.discard([e.file.file_name for e in live(t)])  # as a new process
    for i in range(13, 17):
        t.write_arrow(batch(i * 100))
    assert len(reads) == 2                           # each partition's merged file, read once
    assert sorted(t.to_arrow().column("id").to_pylist()) == list(range(1700))


def test_the_window_slides_past_files_too_large_to_merge_five_of():
    """Consecutive candidates within twice the target size: of three 170 MB files (candidates:
    under 70% of 256 MB) the first leaves the window, and the other two merge with the four
    small ones; a full window is merged whole."""
    from types import SimpleNamespace
    from paimon_streaming.append_compaction import CompactionRules, pick
    mb = 1 << 20
    files = [SimpleNamespace(file_name=f"f{i}", file_size=size * mb, row_count=100, min_sequence_number=i * 100)
             for i, size in enumerate([170, 170, 170, 10, 10, 10, 10, 200])]
    rules = CompactionRules(256 * mb, 5, 0.2)
    assert [[f.file_name for f in g] for g in pick(files, lambda name: 0, rules)] == [["f1", "f2", "f3", "f4", "f5", "f6"]]
    # a file with a third of its rows deleted is rewritten even when it leaves the window
    deleted = {"f0": 34}
    assert [[f.file_name for f in g] for g in pick(files, lambda name: deleted.get(name, 0), rules)] == \
        [["f0"], ["f1", "f2", "f3", "f4", "f5", "f6"]]
    many = [SimpleNamespace(file_name=f"s{i}", file_size=mb, row_count=10, min_sequence_number=i) for i in range(100)]
    assert [len(g) for g in pick(many, lambda name: 0, rules)] == [100]  # e.g. after write-only writers


def test_a_stream_of_small_commits_rewrites_each_row_about_log2_times():
    """A file waits while it is larger than all newer files of its group together, so small
    commits merge like a binary counter: over 500 commits of equal files each row is rewritten
    about 4 times (Paimon's rule, merging the growing file with every four new ones until it
    reaches 70% of the target size, rewrites it 62 times), and the bucket keeps a few files."""
    from types import SimpleNamespace
    from paimon_streaming.append_compaction import CompactionRules, pick
    rules = CompactionRules(256 << 20, 5, 0.2)
    files, rewritten, seq = [], 0, 0
    for commit in range(500):
        files.append(SimpleNamespace(file_name=f"c{commit}", file_size=1 << 10, row_count=1,
                                     min_sequence_number=seq))
        seq += 1
        for group in pick(files, lambda name: 0, rules):
            names = {f.file_name for f in group}
            rewritten += sum(f.row_count for f in group)
            merged = SimpleNamespace(file_name=f"m{commit}-{len(files)}", file_size=sum(f.file_size for f in group),
                                     row_count=sum(f.row_count for f in group),
                                     min_sequence_number=group[0].min_sequence_number)
            files = sorted([f for f in files if f.file_name not in names] + [merged],
                           key=lambda f: f.min_sequence_number)
    assert sum(f.row_count for f in files) == 500
    assert rewritten / 500 <= 6 and len(files) <= 10, (rewritten / 500, len(files))  # 3.8 and 3 here
