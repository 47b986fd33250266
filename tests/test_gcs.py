"""Tables on Google Cloud Storage (fake-gcs-server on loopback): a snapshot is published with
`ifGenerationMatch=0`, so racing writers never both win an id; tables, concurrent committer
processes and a crash before the snapshot work on GCS."""
from __future__ import annotations

import datetime as dt
import multiprocessing
import threading

import pyarrow as pa
import pytest

import paimon_streaming as ps
from conftest import rows_by
from paimon_streaming.check import check_table
from paimon_streaming.fileio import FileIO
from paimon_streaming.stores.gcs import GcsCreateIfAbsent, GcsDirMarkerRemover
from store_checks import dir_marker_removed_only_when_alone, empty_directories_cleaned

pytest.importorskip("google.cloud.storage")
from gcs_server import GcsServer  # noqa: E402

SCHEMA = pa.schema([pa.field("id", pa.int64(), False), ("v", pa.string())])


@pytest.fixture(scope="module")
def gcs():
    server = GcsServer()
    server.create_bucket("lake")
    yield server
    server.stop()


def rows(ids, v="a"):
    return pa.table({"id": list(ids), "v": [f"{v}{i}" for i in ids]}, schema=SCHEMA)


def test_create_if_absent_creates_once(gcs):
    create = GcsCreateIfAbsent(gcs.filesystem())
    assert create("lake/once/snapshot-1", b"first") is True
    assert create("lake/once/snapshot-1", b"second") is False
    assert gcs.filesystem().open_input_stream("lake/once/snapshot-1").read() == b"first"


def test_the_impersonated_service_account_carries_to_the_commit():
    """pyarrow's `target_service_account` impersonates a service account for every read and
    write; the conditional upload's client ignored it and committed under the caller's own
    identity. It now impersonates the same account, from the same source credentials."""
    import pyarrow.fs as pafs
    from google.auth import impersonated_credentials
    fs = pafs.GcsFileSystem(access_token="ya29.token", credential_token_expiration=dt.datetime(2100, 1, 1),
                            target_service_account="writer@lake.iam.gserviceaccount.com", project_id="lake")
    credentials = GcsCreateIfAbsent(fs).client()._credentials
    assert isinstance(credentials, impersonated_credentials.Credentials)
    assert credentials.service_account_email == "writer@lake.iam.gserviceaccount.com"
    assert credentials._source_credentials.token == "ya29.token"


def test_racing_writers_exactly_one_wins_every_time(gcs):
    workers = 8
    for round_ in range(20):
        key = f"lake/race/snapshot/snapshot-{round_}"
        barrier = threading.Barrier(workers)
        wins: list[int] = []

        def race(i: int) -> None:
            file_io = FileIO(gcs.filesystem())
            barrier.wait()
            if file_io.try_create_atomic(key, f"writer {i}".encode()):
                wins.append(i)
        threads = [threading.Thread(target=race, args=(i,)) for i in range(workers)]
        for t in threads:
            t.start()
        for t in threads:
            t.join()
        assert len(wins) == 1, f"round {round_}: winners {wins}"
        assert gcs.filesystem().open_input_stream(key).read() == f"writer {wins[0]}".encode()


def test_tables_on_gcs_and_a_crash_before_the_snapshot(gcs):
    cat = ps.Catalog("lake/cat", filesystem=gcs.filesystem())
    t = cat.create_table("db.t", SCHEMA, primary_keys=["id"], options={"bucket": "2", "deletion-vectors.enabled": "true"})
    t.write_arrow(rows(range(10)))
    t.write_arrow(rows(range(5), v="b"))
    expected = rows_by(pa.concat_tables([rows(range(5), v="b"), rows(range(5, 10))]), "id")
    assert rows_by(t.to_arrow(), "id") == expected
    t.write_messages(rows(range(3), v="lost"))  # data files written, then the process dies
    reopened = ps.Catalog("lake/cat", filesystem=gcs.filesystem()).get_table("db.t")
    assert rows_by(reopened.to_arrow(), "id") == expected and check_table(reopened).ok
    assert not t.snapshot_manager.try_publish(t.snapshot(t.latest_snapshot().id))  # taken: never replaced


def test_clean_empty_directories_on_gcs(gcs):
    empty_directories_cleaned(ps.Catalog("lake/dirs", filesystem=gcs.filesystem()), gcs.filesystem(),
                              "lake/dirs/db.db/t")


def test_dir_marker_remover_on_gcs(gcs):
    dir_marker_removed_only_when_alone(GcsDirMarkerRemover(gcs.filesystem()), gcs.filesystem(), "lake/marker/d")


def commit_batches(endpoint: str, writer: int, batches: int, errors) -> None:
    """Process body: one committer writing `batches` batches of its own keys."""
    import pyarrow.fs as pafs
    try:
        fs = pafs.GcsFileSystem(anonymous=True, scheme="http", endpoint_override=endpoint, project_id="paimon-tests")
        table = ps.Table(FileIO(fs), "lake/procs/db.db/t")
        for b in range(batches):
            table.write_arrow(rows(range(writer * 100 + b * 10, writer * 100 + b * 10 + 5)),
                              commit_user=f"writer-{writer}", commit_identifier=b)
    except BaseException as exc:  # noqa: BLE001 - reported to the test
        errors.put(f"writer {writer}: {exc!r}")


def test_processes_committing_concurrently(gcs):
    ps.Catalog("lake/procs", filesystem=gcs.filesystem()).create_table("db.t", SCHEMA)
    ctx = multiprocessing.get_context("spawn")
    errors = ctx.Queue()
    writers, batches = 4, 3
    procs = [ctx.Process(target=commit_batches, args=(gcs.endpoint, w, batches, errors)) for w in range(writers)]
    for p in procs:
        p.start()
    for p in procs:
        p.join(180)
    assert errors.empty(), errors.get()
    table = ps.Catalog("lake/procs", filesystem=gcs.filesystem()).get_table("db.t")
    snaps = table.snapshots()
    assert [s.id for s in snaps] == list(range(1, len(snaps) + 1))
    # APPEND snapshots: one a batch (COMPACT ones merge the small files the writers leave)
    assert sorted((s.commit_user, s.commit_identifier) for s in snaps if s.commit_kind == "APPEND") == \
        sorted((f"writer-{w}", b) for w in range(writers) for b in range(batches))
    assert table.to_arrow().num_rows == writers * batches * 5 and check_table(table).ok
