"""Tables on Azure Blob Storage (Azurite on loopback): a snapshot is published with
`If-None-Match: *`, so racing writers never both win an id; abfs:// catalogs and tables,
concurrent committer processes, a crash or a lost reply around the snapshot work on Azure,
and the commit's client takes pyarrow's credential and never retries."""
from __future__ import annotations

import multiprocessing
import socket
import threading

import pyarrow.fs as pafs
import pytest

import paimon_streaming as ps
from conftest import rows_by
from store_checks import (SCHEMA, catalog_round_trip, crash_before_commit_reads_as_before, each_batch_committed_once,
                          rows)
from paimon_streaming.catalog import create_table_at
from paimon_streaming.errors import StoreConfigurationError
from paimon_streaming.fileio import FileIO
from paimon_streaming.stores import create_if_absent_for
from paimon_streaming.stores.azure import AzureCreateIfAbsent

pytest.importorskip("azure.storage.blob")
pytest.importorskip("azure.identity")
from azure.core import exceptions as aexc  # noqa: E402
from azure.identity import CredentialUnavailableError  # noqa: E402
from azure_server import ACCOUNT, KEY, AzureServer  # noqa: E402



@pytest.fixture(scope="module")
def azure():
    server = AzureServer()
    server.create_container("lake")
    yield server
    server.stop()



def test_create_if_absent_creates_once(azure):
    create = AzureCreateIfAbsent(azure.filesystem())
    assert create("lake/once/snapshot-1", b"first") is True
    assert create("lake/once/snapshot-1", b"second") is False
    assert azure.filesystem().open_input_stream("lake/once/snapshot-1").read() == b"first"


def test_racing_writers_exactly_one_wins_every_time(azure):
    """Threads with separate FileIO instances race for the same snapshot file, 20 times."""
    workers = 8
    for round_ in range(20):
        key = f"lake/race/snapshot/snapshot-{round_}"
        barrier = threading.Barrier(workers)
        wins: list[int] = []

        def race(i: int) -> None:
            file_io, _ = FileIO.for_path(azure.uri("lake/race"))
            barrier.wait()
            if file_io.try_create_atomic(key, f"writer {i}".encode()):
                wins.append(i)
        threads = [threading.Thread(target=race, args=(i,)) for i in range(workers)]
        for t in threads:
            t.start()
        for t in threads:
            t.join()
        assert len(wins) == 1, f"round {round_}: winners {wins}"
        assert azure.filesystem().open_input_stream(key).read() == f"writer {wins[0]}".encode()


def test_catalog_and_tables_on_an_abfs_uri(azure):
    """Everything through an abfs:// location (a SAS in its query signs pyarrow's requests and the
    conditional upload alike); table locations are abfs:// URIs that open the same table again."""
    location, expected = catalog_round_trip(ps.Catalog(azure.uri("lake/cat")))
    assert location.startswith(f"abfs://{ACCOUNT}@{azure.authority}/lake/cat/db.db/t?enable_tls=false&")
    same = ps.Catalog("lake/cat", filesystem=azure.filesystem()).get_table("db.t")  # account key, same blobs
    assert rows_by(same.to_arrow(), "p", "id") == expected


def test_processes_committing_concurrently(azure):
    from concurrent_worker import batch_of, write_batches
    location = azure.uri("lake/procs/t")
    create_table_at(location, batch_of(0, 0).schema)
    ctx = multiprocessing.get_context("spawn")
    errors, outcomes = ctx.Queue(), ctx.Queue()
    writers, batches = 4, 3
    procs = [ctx.Process(target=write_batches, args=(location, w, batches, False, outcomes, errors))
             for w in range(writers)]
    for p in procs:
        p.start()
    for p in procs:
        p.join(120)
    assert errors.empty(), errors.get()
    each_batch_committed_once(ps.Table.open(location), writers, batches)


def test_crash_between_data_files_and_snapshot_leaves_the_table_readable(azure):
    crash_before_commit_reads_as_before(ps.Catalog(azure.uri("lake/crash")))


def test_lost_reply_of_the_snapshot_upload_commits_once(azure, monkeypatch):
    """The upload of the snapshot is applied but its reply is lost: the committer cannot know it
    won, re-reads, finds its own snapshot and does not commit the batch a second time."""
    real, lost = AzureCreateIfAbsent.__call__, []

    def reply_lost(self, path, data):
        created = real(self, path, data)
        if "/snapshot/" in path and not lost:
            lost.append(path)
            raise OSError("connection reset after the request was applied")
        return created

    monkeypatch.setattr(AzureCreateIfAbsent, "__call__", reply_lost)
    t = ps.Catalog(azure.uri("lake/lost")).create_table("db.t", SCHEMA)
    assert t.write_arrow(rows(range(3)), commit_user="u", commit_identifier=1) == 1
    assert lost and [s.id for s in t.snapshots()] == [1] and t.to_arrow().num_rows == 3


def test_a_wrong_account_key_is_a_configuration_error(azure):
    """Refused authentication is a definite failure (nothing was created), not an unknown outcome."""
    fs = pafs.AzureFileSystem(account_name=ACCOUNT, account_key=KEY[:-4] + "AAA=",
                              blob_storage_authority=azure.authority, blob_storage_scheme="http")
    with pytest.raises(StoreConfigurationError, match="Azure refused to create lake/badkey/snapshot-1"):
        AzureCreateIfAbsent(fs)("lake/badkey/snapshot-1", b"1")


def service_error(kind, status: int, code: str) -> Exception:
    error = kind(f"refused: {code}")
    error.status_code, error.error_code = status, code
    return error


class Raising:
    """A blob service client whose upload fails with `error`."""

    def __init__(self, error: Exception):
        self.error = error

    def get_blob_client(self, container: str, name: str) -> "Raising":
        return self

    def upload_blob(self, data: bytes, overwrite: bool) -> None:
        raise self.error


@pytest.mark.parametrize("error, outcome", [
    (service_error(aexc.ResourceExistsError, 409, "BlobAlreadyExists"), False),
    (service_error(aexc.ResourceModifiedError, 412, "ConditionNotMet"), False),
    (service_error(aexc.ResourceExistsError, 409, "ContainerBeingDeleted"), StoreConfigurationError),
    (CredentialUnavailableError("DefaultAzureCredential found no credential"), StoreConfigurationError),
    (service_error(aexc.HttpResponseError, 500, "InternalError"), OSError),
    (aexc.ServiceResponseError("connection reset"), OSError),
], ids=["taken-409", "taken-412", "409-other", "no-credential", "500", "reply-lost"])
def test_answers_of_the_service_map_to_created_taken_refused_or_unknown(error, outcome):
    """Only "the blob exists" means another writer won; a credential that finds no token fails
    definitely (nothing was sent); server and transport errors leave the outcome unknown (OSError)."""
    create = AzureCreateIfAbsent(pafs.AzureFileSystem(account_name="acct", account_key=KEY))
    create._client = Raising(error)
    if outcome is False:
        assert create("c/t/snapshot/snapshot-1", b"1") is False
    else:
        with pytest.raises(outcome) as raised:
            create("c/t/snapshot/snapshot-1", b"1")
        assert (outcome is OSError) == isinstance(raised.value, OSError)


def test_a_lost_reply_is_an_unknown_outcome_and_never_retried():
    """A server that reads the upload and closes the connection: one request, then an OSError (a
    retry could meet the blob the first request created and report a lost race)."""
    listener = socket.create_server(("127.0.0.1", 0))
    requests: list[bytes] = []

    def swallow() -> None:
        while True:
            try:
                conn, _ = listener.accept()
            except OSError:
                return
            with conn:
                requests.append(conn.recv(65536))
    threading.Thread(target=swallow, daemon=True).start()
    fs = pafs.AzureFileSystem(account_name=ACCOUNT, account_key=KEY, blob_storage_scheme="http",
                              blob_storage_authority=f"127.0.0.1:{listener.getsockname()[1]}")
    try:
        with pytest.raises(OSError, match="unknown outcome"):
            AzureCreateIfAbsent(fs)("lake/gone/snapshot-1", b"1")
        assert len(requests) == 1 and requests[0].startswith(b"PUT /devstoreaccount1/lake/gone/snapshot-1")
        assert b"if-none-match: *" in requests[0].lower()
    finally:
        listener.close()


def test_the_commit_uses_the_credential_pyarrow_uses():
    """Settings of the pyarrow filesystem -> the credential of the conditional upload (no request is sent)."""
    from azure.identity import ClientSecretCredential, DefaultAzureCredential, ManagedIdentityCredential

    def credential(**kwargs):
        return AzureCreateIfAbsent(pafs.AzureFileSystem(account_name="acct", **kwargs)).client().credential

    assert credential(account_key=KEY).account_key == KEY
    assert isinstance(credential(tenant_id="t", client_id="c", client_secret="s"), ClientSecretCredential)
    assert isinstance(credential(client_id="user-assigned"), ManagedIdentityCredential)
    assert isinstance(credential(), DefaultAzureCredential)
    fs, _ = pafs.FileSystem.from_uri("abfs://acct.blob.core.windows.net/c/p?enable_tls=false&sv=2025-01-05"
                                     "&sig=a%2Bb%3D")
    client = AzureCreateIfAbsent(fs).client()
    assert client.url == "http://acct.blob.core.windows.net/?sv=2025-01-05&sig=a%2Bb%3D"  # only the SAS, as given
    # a URI's credential_kind, which pyarrow keeps out of its settings: the commit used DefaultAzureCredential
    from azure.identity import AzureCliCredential, EnvironmentCredential

    def of_uri(query: str):
        file_io, _ = FileIO.for_path(f"abfs://acct.blob.core.windows.net/c/p?{query}")
        return create_if_absent_for(file_io.fs, file_io.uri_query).client().credential

    assert isinstance(of_uri("credential_kind=cli"), AzureCliCredential)
    assert isinstance(of_uri("credential_kind=environment&sv=2025-01-05&sig=x"), EnvironmentCredential)
    assert of_uri("credential_kind=anonymous") is None
