"""Tables on a real HDFS (Hadoop's MiniDFSCluster on loopback, reached through pyarrow's
HadoopFileSystem and libhdfs): a snapshot is published by renaming a finished temp file with
HDFS's rename2 (`stores.hdfs`), so racing writers must never both win an id; files are replaced
and directories moved by the same rename; hdfs:// catalogs and tables, concurrent committer
processes and a crash before the snapshot work on HDFS.

The cluster is started by tests/hdfs_cluster.py; if it cannot start, these tests fail."""
from __future__ import annotations

import multiprocessing
import threading
import traceback

import pyarrow.fs as pafs
import pytest

import paimon_streaming as ps
from conftest import rows_by
from store_checks import catalog_round_trip, crash_before_commit_reads_as_before, each_batch_committed_once
from hdfs_cluster import client_environment, get_cluster
from paimon_streaming.catalog import create_table_at
from paimon_streaming.fileio import FileIO
from paimon_streaming.stores import create_if_absent_for
from paimon_streaming.stores.hdfs import HdfsCreateIfAbsent



@pytest.fixture(scope="module")
def hdfs():
    cluster = get_cluster()
    cluster.filesystem()  # the first connection starts this process's JVM with the client's classpath
    return cluster



def read(fs: pafs.FileSystem, path: str) -> bytes:
    with fs.open_input_stream(path) as f:
        return f.read()


def test_pyarrow_move_onto_an_existing_file_replaces_it(hdfs):
    """HDFS's own rename refuses an existing destination, but pyarrow's HadoopFileSystem.move
    then deletes the destination and renames again ("allow file -> file clobber" in Arrow's
    hdfs.cc): `move` is a replace on HDFS, not a create-if-absent. This pins that fact, which
    `stores.hdfs` works around."""
    fs = hdfs.filesystem()
    fs.create_dir("/move", recursive=True)
    for name, data in (("src", b"new"), ("dst", b"old")):
        with fs.open_output_stream(f"/move/{name}") as f:
            f.write(data)
    fs.move("/move/src", "/move/dst")
    assert read(fs, "/move/dst") == b"new"
    assert fs.get_file_info("/move/src").type == pafs.FileType.NotFound


def test_the_store_of_a_hadoop_filesystem_publishes_by_rename(hdfs):
    file_io, path = FileIO.for_path(hdfs.uri("/lake/kind"))
    assert isinstance(file_io.fs, pafs.HadoopFileSystem) and path == "/lake/kind"
    assert isinstance(create_if_absent_for(file_io.fs), HdfsCreateIfAbsent)
    assert file_io.try_create_atomic(f"{path}/snapshot-1", b"1") is True
    assert file_io.try_create_atomic(f"{path}/snapshot-1", b"2") is False


def test_create_if_absent_creates_once(hdfs):
    fs = hdfs.filesystem()
    create = HdfsCreateIfAbsent(fs)
    assert create("/once/snapshot/snapshot-1", b"first") is True
    assert create("/once/snapshot/snapshot-1", b"second") is False
    assert read(fs, "/once/snapshot/snapshot-1") == b"first"
    assert [i.base_name for i in fs.get_file_info(pafs.FileSelector("/once/snapshot"))] == ["snapshot-1"]  # no temp left


def test_racing_writers_exactly_one_wins_every_time(hdfs):
    """8 threads, each with its own HadoopFileSystem, race to create one snapshot file, 20 times:
    every time exactly one wins, nobody fails, the file holds the winner's bytes, and no temp
    file is left behind. (Every round is run before asserting, so a failure shows them all.)"""
    workers, fs = 8, hdfs.filesystem()
    bad = []
    for round_ in range(20):
        path = f"/race/snapshot/snapshot-{round_}"
        barrier = threading.Barrier(workers)
        wins: list[int] = []
        failures: list[str] = []

        def race(i: int) -> None:
            create = HdfsCreateIfAbsent(hdfs.filesystem())
            barrier.wait()
            try:
                if create(path, f"writer {i} ".encode() * 100):
                    wins.append(i)
            except OSError as exc:
                failures.append(f"writer {i}: {exc}")
        threads = [threading.Thread(target=race, args=(i,)) for i in range(workers)]
        for t in threads:
            t.start()
        for t in threads:
            t.join()
        content = read(fs, path)
        if len(wins) != 1 or failures or content != f"writer {wins[0]} ".encode() * 100:
            bad.append(f"round {round_}: winners {wins}, failures {failures}, file holds {content[:9]!r}")
    assert not bad, "\n".join(bad)
    names = [i.base_name for i in fs.get_file_info(pafs.FileSelector("/race/snapshot"))]
    assert sorted(names) == sorted(f"snapshot-{r}" for r in range(20))


def test_create_if_absent_refuses_a_directory_at_the_target(hdfs):
    """libhdfs's hdfsRename (FileSystem#rename) would move the temp file into the directory and
    report success; HDFS's rename2 refuses."""
    fs = hdfs.filesystem()
    fs.create_dir("/taken/snapshot-1", recursive=True)
    assert HdfsCreateIfAbsent(fs)("/taken/snapshot-1", b"x") is False
    assert fs.get_file_info(pafs.FileSelector("/taken/snapshot-1")) == []
    assert [i.base_name for i in fs.get_file_info(pafs.FileSelector("/taken"))] == ["snapshot-1"]


def test_overwrite_is_one_step_for_readers_and_concurrent_writers(hdfs):
    """FileIO.overwrite_atomic (LATEST/EARLIEST hints, consumer progress, tags) replaces a file by one
    rename: a reader polling it never finds it missing, and two writers replacing it at once both
    succeed. (pyarrow's move deletes the old file and renames again: a gap, and a concurrent
    writer's delete or rename fails.)"""
    file_io, _ = FileIO.for_path(hdfs.uri("/over"))
    path, writes = "/over/consumer/consumer-c", 25
    file_io.overwrite_atomic(path, b"start")
    assert file_io.read_text(path) == "start"
    done, missing, errors = threading.Event(), [], []

    def write(w: int) -> None:
        try:
            for i in range(writes):
                file_io.overwrite_atomic(path, f"{w}-{i}".encode())
        except OSError as exc:
            errors.append(f"writer {w}: {exc}")

    def poll() -> None:
        while not done.is_set():
            if not file_io.exists(path):
                missing.append(1)
    writers = [threading.Thread(target=write, args=(w,)) for w in range(2)]
    reader = threading.Thread(target=poll)
    reader.start()
    for t in writers:
        t.start()
    for t in writers:
        t.join()
    done.set()
    reader.join()
    assert not errors, errors
    assert not missing, f"the file was missing {len(missing)} times while being replaced"
    assert file_io.read_text(path) in (f"0-{writes - 1}", f"1-{writes - 1}")
    assert file_io.list_names("/over/consumer") == ["consumer-c"]  # no temp file left


def test_a_directory_is_never_moved_onto_an_existing_one(hdfs):
    """FileIO.rename_dir (Catalog.rename_table) onto an existing directory raises and moves nothing
    (HDFS's FileSystem#rename, and pyarrow's move, put the source inside it). Four directories
    moved to one new name at once, 5 times: one moves, the others stay where they were."""
    file_io, _ = FileIO.for_path(hdfs.uri("/mv"))
    for name in ("a", "b"):
        file_io.write_bytes(f"/mv/{name}/schema/schema-0", name.encode())
    with pytest.raises(FileExistsError, match="/mv/b exists"):
        file_io.rename_dir("/mv/a", "/mv/b")
    assert file_io.list_names("/mv/b") == ["schema"] and file_io.read_text("/mv/a/schema/schema-0") == "a"
    bad = []
    for round_ in range(5):
        base = f"/mv/race-{round_}"
        sources = [f"{base}/t{i}" for i in range(4)]
        for src in sources:
            file_io.write_bytes(f"{src}/schema/schema-0", src.encode())
        barrier, moved, refused = threading.Barrier(len(sources)), [], []

        def move(src: str) -> None:
            barrier.wait()
            try:
                file_io.rename_dir(src, f"{base}/new")
                moved.append(src)
            except FileExistsError:
                refused.append(src)
        threads = [threading.Thread(target=move, args=(src,)) for src in sources]
        for t in threads:
            t.start()
        for t in threads:
            t.join()
        inside = file_io.list_names(f"{base}/new")
        stayed = [src for src in sources if file_io.exists(f"{src}/schema/schema-0")]
        if len(moved) != 1 or inside != ["schema"] or sorted(stayed) != sorted(refused):
            bad.append(f"round {round_}: moved {moved}, refused {refused}, {base}/new holds {inside}")
        elif file_io.read_text(f"{base}/new/schema/schema-0") != moved[0]:
            bad.append(f"round {round_}: {base}/new is not {moved[0]}")
    assert not bad, "\n".join(bad)


def test_catalog_and_tables_on_an_hdfs_uri(hdfs):
    """Everything through an hdfs:// location; table locations are hdfs:// URIs that open the same
    table again, and a filesystem object reaches the same files."""
    cat = ps.Catalog(hdfs.uri("/lake/cat"))
    location, expected = catalog_round_trip(cat)
    assert location == f"hdfs://127.0.0.1:{hdfs.port}/lake/cat/db.db/t?replication=1"
    reopened = ps.Table.open(location)
    assert read(hdfs.filesystem(), "/lake/cat/db.db/t/snapshot/snapshot-3") == reopened.snapshot(3).to_json().encode()
    same = ps.Catalog("/lake/cat", filesystem=hdfs.filesystem()).get_table("db.t")
    assert rows_by(same.to_arrow(), "p", "id") == expected
    renamed = cat.rename_table("db.t", "db2.u")
    assert cat.list_tables("db") == [] and rows_by(renamed.to_arrow(), "p", "id") == expected


def commit_in_step(location: str, writer: int, batches: int, barrier, errors) -> None:
    """Process body: commit batch b of writer `writer` at the moment every writer commits its
    batch b (a barrier before each), so the commits race for the same snapshot ids."""
    from concurrent_worker import batch_of
    try:
        table = ps.Table.open(location)
        for b in range(batches):
            barrier.wait(120)
            table.write_arrow(batch_of(writer, b), commit_user=f"writer-{writer}", commit_identifier=b)
    except BaseException:  # noqa: BLE001 - reported to the test
        barrier.abort()
        errors.put(f"writer {writer}: {traceback.format_exc()}")


def test_processes_committing_concurrently(hdfs):
    """4 processes commit 3 batches each to one table, all at once: every batch lands in exactly
    one snapshot, the ids have no gap, and the last snapshot reads as all the batches."""
    from concurrent_worker import batch_of
    location = hdfs.uri("/lake/procs/t")
    create_table_at(location, batch_of(0, 0).schema)
    ctx = multiprocessing.get_context("spawn")
    errors = ctx.Queue()
    writers, batches = 4, 3
    barrier = ctx.Barrier(writers)
    procs = [ctx.Process(target=commit_in_step, args=(location, w, batches, barrier, errors)) for w in range(writers)]
    with client_environment():  # each child's libhdfs starts its JVM from these variables
        for p in procs:
            p.start()
    for p in procs:
        p.join(180)
    assert errors.empty(), errors.get()
    assert [p.exitcode for p in procs] == [0] * writers
    each_batch_committed_once(ps.Table.open(location), writers, batches)


def test_crash_between_data_files_and_snapshot_leaves_the_table_readable(hdfs):
    crash_before_commit_reads_as_before(ps.Catalog(hdfs.uri("/lake/crash")))
