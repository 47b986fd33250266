"""The same checks on every store (S3, GCS, Azure, HDFS, ...): a catalog round trip (one table
with deletion vectors, partitions and three commits, listed, reopened from its table location,
checked and read back, and a taken snapshot id never published twice), concurrent committers,
a crash before the commit, and on the object stores the removal of empty directories."""
from __future__ import annotations

import pyarrow as pa
import pyarrow.fs as pafs

import paimon_streaming as ps
from concurrent_worker import check_snapshot
from conftest import rows_by
from paimon_streaming.check import check_table

SCHEMA = pa.schema([pa.field("id", pa.int64(), False), ("v", pa.string()), pa.field("p", pa.string(), False)])


def rows(ids, v: str = "a", p: str = "x") -> pa.Table:
    return pa.table({"id": list(ids), "v": [f"{v}{i}" for i in ids], "p": [p] * len(ids)}, schema=SCHEMA)


def catalog_round_trip(cat: ps.Catalog) -> tuple[str, list[dict]]:
    """Create db.t in `cat`, commit three batches, and check what every store must give; returns
    the table's location (for store-specific checks) and its expected rows (`rows_by` p, id)."""
    t = cat.create_table("db.t", SCHEMA, primary_keys=["id", "p"], partition_keys=["p"],
                         options={"bucket": "2", "deletion-vectors.enabled": "true"})
    t.write_arrow(rows(range(10)))
    t.write_arrow(rows(range(5), v="b", p="y/z"))
    t.write_arrow(rows(range(3), v="c"))
    expected = rows_by(pa.concat_tables([rows(range(3), v="c"), rows(range(3, 10)), rows(range(5), v="b", p="y/z")]),
                       "p", "id")
    assert cat.list_databases() == ["db"] and cat.list_tables("db") == ["t"]
    location = cat.table_location("db.t")
    reopened = ps.Table.open(location)
    assert rows_by(reopened.to_arrow(), "p", "id") == expected
    assert [s.id for s in reopened.snapshots()] == list(range(1, 7))  # APPEND + COMPACT per batch
    report = check_table(reopened)
    assert report.ok and not report.problems, report.problems
    assert not reopened.snapshot_manager.try_publish(reopened.snapshot(6))  # taken: never replaced
    return location, expected


def each_batch_committed_once(table: ps.Table, writers: int, batches: int, rows_per_batch: int = 5) -> None:
    """After `writers` processes committed `batches` each (tests/concurrent_worker.py's batches, as
    commit user writer-<w>, identifier <b>): snapshot ids have no gap, every batch is in exactly
    one APPEND snapshot (COMPACT ones merge the small files the writers leave), and the last
    snapshot checks clean and reads as all the batches."""
    snaps = table.snapshots()
    assert [s.id for s in snaps] == list(range(1, len(snaps) + 1))
    committed = sorted((s.commit_user, s.commit_identifier) for s in snaps if s.commit_kind == "APPEND")
    expected = sorted((f"writer-{w}", b) for w in range(writers) for b in range(batches))
    assert committed == expected, f"batches lost (a snapshot replaced): {sorted(set(expected) - set(committed))}"
    assert check_snapshot(table, snaps[-1]) is None and check_table(table).ok
    assert table.to_arrow().num_rows == writers * batches * rows_per_batch


def crash_before_commit_reads_as_before(cat: ps.Catalog) -> None:
    """A writer's data files are written and its process dies before the commit: the table reads
    as before and checks clean, and the next writer goes on."""
    t = cat.create_table("db.t", SCHEMA, primary_keys=["id", "p"],
                         options={"bucket": "2", "deletion-vectors.enabled": "true"})
    t.write_arrow(rows(range(4)))
    before, latest = rows_by(t.to_arrow(), "id"), t.latest_snapshot().id
    t.write_messages(rows(range(2, 6), v="lost"))
    reopened = ps.Table.open(cat.table_location("db.t"))
    assert rows_by(reopened.to_arrow(), "id") == before and check_table(reopened).ok
    assert reopened.latest_snapshot().id == latest
    reopened.write_arrow(rows(range(2, 6), v="b"))
    assert rows_by(reopened.to_arrow(), "id") == before[:2] + rows_by(rows(range(2, 6), v="b"), "id")


def empty_directories_cleaned(cat: ps.Catalog, fs: pafs.FileSystem, root: str) -> None:
    """`snapshot.clean-empty-directories` on an object store: pyarrow leaves a marker object for
    every directory a file was written in, and expiration removes the markers of the bucket and
    partition directories its deletions emptied, never an object beside them: a partition with
    files keeps its directories. `root` is db.t's path in `fs`."""
    schema = pa.schema([("id", pa.int64(), False), ("p", pa.string(), False)])
    t = cat.create_table("db.t", schema, partition_keys=["p"],
                         options={"bucket": "-1", "snapshot.clean-empty-directories": "true",
                                  "snapshot.num-retained.min": "1"})
    t.write_arrow(pa.table({"id": [1, 2], "p": ["2020-01-01", "2099-01-01"]}, schema=schema))
    t.expire_partitions("1 d")
    t.write_arrow(pa.table({"id": [3], "p": ["2099-01-01"]}, schema=schema))
    assert fs.get_file_info(f"{root}/p=2020-01-01/bucket-0").type == pafs.FileType.Directory
    assert t.expire_snapshots(retain_max=1, retain_min=1).expired == 2
    assert fs.get_file_info(f"{root}/p=2020-01-01/bucket-0").type == pafs.FileType.NotFound
    assert fs.get_file_info(f"{root}/p=2020-01-01").type == pafs.FileType.NotFound
    assert fs.get_file_info(pafs.FileSelector(f"{root}/p=2099-01-01/bucket-0"))
    assert t.to_arrow().num_rows == 2


def dir_marker_removed_only_when_alone(remove, fs: pafs.FileSystem, directory: str) -> None:
    """A store's directory-marker remover (`stores.DirMarkerRemover`): it keeps a marker another
    object shares the prefix with, and that object; it removes a lone marker; a marker already
    gone counts as removed."""
    fs.create_dir(directory)
    with fs.open_output_stream(f"{directory}/file") as out:
        out.write(b"x")
    assert remove(directory) is False
    assert fs.get_file_info(f"{directory}/file").type == pafs.FileType.File
    fs.delete_file(f"{directory}/file")
    fs.create_dir(directory)  # the marker, should deleting the file have taken it
    assert remove(directory) is True
    assert fs.get_file_info(directory).type == pafs.FileType.NotFound
    assert remove(directory) is True
