"""Tables on S3 (moto's server on loopback): snapshot publication is a conditional PUT, so
racing writers never both win a snapshot id; the catalog, concurrent committers in separate
processes and the Spark sink work on s3:// tables."""
from __future__ import annotations

import multiprocessing
import os
import threading
import time

import pyarrow as pa
import pyarrow.fs as pafs
import pytest

import paimon_streaming as ps
from paimon_streaming.catalog import create_table_at
from paimon_streaming.check import check_table
from paimon_streaming.fileio import FileIO
from paimon_streaming.scan import TableScan
from paimon_streaming.errors import S3ConfigurationError
from paimon_streaming.stores.s3 import S3CreateIfAbsent, S3DirMarkerRemover
from conftest import rows_by
from store_checks import (SCHEMA, catalog_round_trip, crash_before_commit_reads_as_before,
                          dir_marker_removed_only_when_alone, each_batch_committed_once, empty_directories_cleaned,
                          rows)

pytest.importorskip("moto")
from s3_server import CREDENTIALS, S3Server, self_signed_certificate  # noqa: E402



@pytest.fixture(scope="module")
def s3():
    with pytest.MonkeyPatch.context() as mp:
        for k, v in CREDENTIALS.items():
            mp.setenv(k, v)
        mp.delenv("AWS_ENDPOINT_URL", raising=False)
        server = S3Server()
        server.create_bucket("lake")
        yield server
        server.stop()



def test_conditional_put_creates_once(s3):
    create = S3CreateIfAbsent(s3.filesystem())
    assert create.client().meta.endpoint_url == s3.endpoint
    assert create("lake/once/snapshot-1", b"first") is True
    assert create("lake/once/snapshot-1", b"second") is False
    assert s3.filesystem().open_input_stream("lake/once/snapshot-1").read() == b"first"


def test_racing_writers_exactly_one_wins_every_time(s3):
    """Threads with separate FileIO instances (each its own S3 client, kept warm from round to
    round so their PUTs land close together) race for the same snapshot file, 25 times."""
    workers = 8
    file_ios = [FileIO.for_path(s3.uri("lake/race"))[0] for _ in range(workers)]
    for round_ in range(25):
        key = f"lake/race/snapshot/snapshot-{round_}"
        barrier = threading.Barrier(workers)
        wins: list[int] = []

        def race(i: int) -> None:
            barrier.wait()
            if file_ios[i].try_create_atomic(key, f"writer {i}".encode()):
                wins.append(i)

        threads = [threading.Thread(target=race, args=(i,)) for i in range(workers)]
        for t in threads:
            t.start()
        for t in threads:
            t.join()
        assert len(wins) == 1, f"round {round_}: winners {wins}"
        assert s3.filesystem().open_input_stream(key).read() == f"writer {wins[0]}".encode()


def no_static_credentials(monkeypatch, tmp_path) -> None:
    """Nothing for botocore's chain to find but what a test adds (no real ~/.aws, no IMDS)."""
    for var in ("AWS_ACCESS_KEY_ID", "AWS_SECRET_ACCESS_KEY", "AWS_SESSION_TOKEN", "AWS_PROFILE"):
        monkeypatch.delenv(var, raising=False)
    monkeypatch.setenv("AWS_SHARED_CREDENTIALS_FILE", str(tmp_path / "no-credentials"))
    monkeypatch.setenv("AWS_CONFIG_FILE", str(tmp_path / "no-config"))
    monkeypatch.setenv("AWS_EC2_METADATA_DISABLED", "true")


def test_missing_credentials_fail_clearly(s3, monkeypatch, tmp_path):
    no_static_credentials(monkeypatch, tmp_path)
    fs = ps.Catalog(s3.uri("lake/nocreds")).file_io
    with pytest.raises(S3ConfigurationError, match="no AWS credentials.*web identity"):
        fs.try_create_atomic("lake/nocreds/x", b"1")


def test_credentials_from_a_profile_file(s3, monkeypatch, tmp_path):
    """A named profile in a shared credentials file (AWS_PROFILE): the commit's client and
    pyarrow's data path both find it."""
    no_static_credentials(monkeypatch, tmp_path)
    (tmp_path / "credentials").write_text("[lake]\naws_access_key_id = AKIDPROFILE\naws_secret_access_key = s\n")
    monkeypatch.setenv("AWS_SHARED_CREDENTIALS_FILE", str(tmp_path / "credentials"))
    monkeypatch.setenv("AWS_PROFILE", "lake")
    cat = ps.Catalog(s3.uri("lake/profile"))
    t = cat.create_table("db.t", SCHEMA)
    assert t.write_arrow(rows(range(3))) == 1 and t.to_arrow().num_rows == 3
    create = t.file_io._create
    assert create.client()._request_signer._credentials.access_key == "AKIDPROFILE"


def test_credentials_from_a_web_identity_token(s3, monkeypatch, tmp_path):
    """IRSA-style: AWS_ROLE_ARN + AWS_WEB_IDENTITY_TOKEN_FILE; botocore exchanges the token at
    STS (moto's, on loopback) for temporary credentials that sign the conditional PUT."""
    no_static_credentials(monkeypatch, tmp_path)
    (tmp_path / "token").write_text("eyJhbGciOiJub25lIn0.eyJzdWIiOiJsYWtlIn0.")
    monkeypatch.setenv("AWS_ROLE_ARN", "arn:aws:iam::123456789012:role/lake-writer")
    monkeypatch.setenv("AWS_WEB_IDENTITY_TOKEN_FILE", str(tmp_path / "token"))
    monkeypatch.setenv("AWS_ENDPOINT_URL_STS", s3.endpoint)
    create = S3CreateIfAbsent(pafs.S3FileSystem(scheme="http", endpoint_override=f"127.0.0.1:{s3.port}",
                                                region="us-east-1"))
    assert create("lake/webid/snapshot/snapshot-1", b"one") is True
    assert create("lake/webid/snapshot/snapshot-1", b"two") is False
    credentials = create.client()._request_signer._credentials.get_frozen_credentials()
    assert credentials.token and credentials.access_key != "testing"  # temporary, from STS


def test_tls_ca_file_proxy_and_anonymous_access_carry_to_the_commit(s3, monkeypatch, tmp_path):
    """The conditional PUT goes through botocore, which was given only the endpoint, region and
    keys of the pyarrow filesystem: with `tls_ca_file_path` (a private CA) pyarrow read and wrote
    but the first commit failed "CERTIFICATE_VERIFY_FAILED"; with `proxy_options` or
    `anonymous` the commit went out by another network path or identity than the reads (and its
    `connect_timeout`/`request_timeout` were botocore's defaults). Each
    now carries over; a `role_arn`, which botocore is not given, is a configuration error."""
    import botocore
    from store_proxy import StoreProxy
    monkeypatch.delenv("AWS_CA_BUNDLE", raising=False)
    server = S3Server(self_signed_certificate(str(tmp_path)))
    try:
        server.create_bucket("lake")
        t = ps.Catalog(server.uri("lake/tls")).create_table("db.t", SCHEMA)
        assert t.write_arrow(rows(range(3))) == 1 and t.to_arrow().num_rows == 3
    finally:
        server.stop()
    proxy = StoreProxy(f"127.0.0.1:{s3.port}")
    try:
        fs = pafs.S3FileSystem(access_key="testing", secret_key="testing", region="us-east-1", scheme="http",
                               endpoint_override=f"127.0.0.1:{s3.port}",
                               proxy_options={"scheme": "http", "host": "127.0.0.1", "port": proxy.port})
        t = ps.Catalog("lake/proxied", filesystem=fs).create_table("db.t", SCHEMA)
        assert t.write_arrow(rows(range(3))) == 1
        assert [r for r in proxy.requests("PUT") if r[1].endswith("/snapshot/snapshot-1")]
    finally:
        proxy.stop()
    anonymous = S3CreateIfAbsent(pafs.S3FileSystem(anonymous=True, region="us-east-1", scheme="http",
                                                   endpoint_override=f"127.0.0.1:{s3.port}"))
    assert anonymous.client().meta.config.signature_version is botocore.UNSIGNED
    timed = S3CreateIfAbsent(pafs.S3FileSystem(region="us-east-1", connect_timeout=2, request_timeout=7)).client()
    assert (timed.meta.config.connect_timeout, timed.meta.config.read_timeout) == (2, 7)  # were botocore's 10 s, 60 s
    role = S3CreateIfAbsent(pafs.S3FileSystem(role_arn="arn:aws:iam::123456789012:role/lake", region="us-east-1"))
    with pytest.raises(S3ConfigurationError, match=r"role_arn \(arn:aws:iam::123456789012:role/lake\)"):
        role("lake/role/snapshot/snapshot-1", b"{}")


def test_endpoint_from_the_environment(s3, monkeypatch):
    """AWS_ENDPOINT_URL configures pyarrow and the conditional PUT alike; plain s3:// URIs work."""
    monkeypatch.setenv("AWS_ENDPOINT_URL", s3.endpoint)
    cat = ps.Catalog("s3://lake/envcat")
    t = cat.create_table("db.t", SCHEMA)
    assert t.write_arrow(rows(range(2))) == 1 and not t.snapshot_manager.try_publish(t.snapshot(1))
    assert t.file_io._create.client().meta.endpoint_url == s3.endpoint
    assert ps.Table.open(cat.table_location("db.t")).to_arrow().num_rows == 2
    # Hadoop's s3a:// (how Java tables often name S3) opens the same objects
    assert ps.Table.open(cat.table_location("db.t").replace("s3://", "s3a://", 1)).to_arrow().num_rows == 2


def test_catalog_and_tables_on_s3(s3):
    cat = ps.Catalog("s3://lake/cat", options={"s3.endpoint": s3.endpoint, "s3.region": "us-east-1"})
    location, _ = catalog_round_trip(cat)
    assert location.startswith("s3://lake/cat/db.db/t?") and "endpoint_override" in location


def test_clean_empty_directories_on_s3(s3):
    cat = ps.Catalog("s3://lake/dirs", options={"s3.endpoint": s3.endpoint, "s3.region": "us-east-1"})
    empty_directories_cleaned(cat, s3.filesystem(), "lake/dirs/db.db/t")


def test_dir_marker_remover_on_s3(s3):
    dir_marker_removed_only_when_alone(S3DirMarkerRemover(s3.filesystem()), s3.filesystem(), "lake/marker/d")


def test_table_locations_name_their_table_whatever_its_characters(s3):
    """`table_location` percent-encodes the path, as opening a URI decodes it: `d%41.t` used to
    open `dA.t`, and a space, `#`, `?` or a non-ASCII letter broke the location."""
    cat = ps.Catalog(s3.uri("lake/names"))
    names = ["dA.t", "d%41.t", "db.a b", "db.t#1", "db.t?x", "db.tä", "db.100%"]
    for i, name in enumerate(names):
        cat.create_table(name, SCHEMA).write_arrow(rows(range(i + 1)))
    for i, name in enumerate(names):
        location = cat.table_location(name)
        assert "endpoint_override" in location, location
        assert ps.Table.open(location).to_arrow().num_rows == i + 1, (name, location)


def test_lost_reply_of_the_snapshot_put_commits_once(s3, monkeypatch):
    """The PUT of the snapshot is applied but its reply is lost: the committer cannot know it
    won, re-reads, finds its own snapshot and does not commit the batch a second time."""
    real, lost = S3CreateIfAbsent.__call__, []

    def reply_lost(self, path, data):
        created = real(self, path, data)
        if "/snapshot/" in path and not lost:
            lost.append(path)
            raise OSError("connection reset after the request was applied")
        return created

    monkeypatch.setattr(S3CreateIfAbsent, "__call__", reply_lost)
    t = ps.Catalog(s3.uri("lake/lost")).create_table("db.t", SCHEMA)
    assert t.write_arrow(rows(range(3)), commit_user="u", commit_identifier=1) == 1
    assert lost and [s.id for s in t.snapshots()] == [1] and t.to_arrow().num_rows == 3


def test_processes_committing_concurrently_on_s3(s3):
    from concurrent_worker import batch_of, write_batches
    location = s3.uri("lake/procs/t", credentials=True)
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


def test_crash_between_data_files_and_snapshot_leaves_the_table_readable(s3):
    crash_before_commit_reads_as_before(ps.Catalog(s3.uri("lake/crash")))


def test_spark_sink_on_s3(s3, tmp_path):
    pytest.importorskip("pyspark")
    from paimon_streaming.sinks import paimon_sink
    from spark_support import get_spark
    spark = get_spark()
    warehouse = s3.uri("lake/spark", credentials=True)
    sink = paimon_sink("db.events", warehouse=warehouse, commit_user="s3-sink-test",
                       options={"primary-key": "id", "bucket": "2"})
    for batch_id, data in enumerate([rows(range(6)), rows(range(3, 9), v="u")]):
        df = spark.createDataFrame(data.select(["id", "v"]).to_pandas())
        sink(df, batch_id)
    sink(spark.createDataFrame(rows([1], v="replayed").select(["id", "v"]).to_pandas()), 1)  # replay: skipped
    table = ps.Catalog(warehouse).get_table("db.events")
    got = rows_by(table.to_arrow(), "id")
    assert got == [{"id": i, "v": f"a{i}"} for i in range(3)] + [{"id": i, "v": f"u{i}"} for i in range(3, 9)]
    assert [s.commit_identifier for s in table.snapshots()] == [0, 1]
    # the "paimon" source reads the same table from S3: a batch read and a stream of every snapshot
    ps.register(spark)
    location = ps.Catalog(warehouse).table_location("db.events")
    assert rows_by(pa.Table.from_pylist([r.asDict() for r in spark.read.format("paimon").load(location).collect()]),
                   "id") == got
    seen: list[dict] = []
    q = (spark.readStream.format("paimon").option("scan.mode", "from-snapshot").option("scan.snapshot-id", 1)
         .load(location).writeStream.foreachBatch(lambda df, _: seen.extend(r.asDict() for r in df.collect()))
         .option("checkpointLocation", str(tmp_path / "ck")).trigger(availableNow=True).start())
    q.awaitTermination(300)
    assert q.exception() is None, q.exception()
    assert sorted((r["id"], r["v"]) for r in seen) == sorted([(i, f"a{i}") for i in range(6)] +
                                                            [(i, f"u{i}") for i in range(3, 9)])


def test_spark_data_source_writes_on_s3(s3, tmp_path):
    """df.write.format("paimon") and writeStream.format("paimon") into s3:// tables: each batch
    commits once and the write reports success (the compaction after the commit reopened the
    table by its store-relative path, as a local directory, and failed a committed write)."""
    pytest.importorskip("pyspark")
    from spark_support import get_spark
    spark = get_spark()
    ps.register(spark)
    catalog = ps.Catalog(s3.uri("lake/source-writes", credentials=True))
    for name, options in (("appended", {}), ("keyed", {"primary-key": "id", "bucket": "2",
                                                       "deletion-vectors.enabled": "true"})):
        location = catalog.table_location(f"db.{name}")
        for v in ("a", "u"):
            w = spark.createDataFrame(rows(range(4), v=v).select(["id", "v"]).to_pandas()).write.format("paimon")
            for k, x in options.items():
                w = w.option(k, x)
            w.mode("append").save(location)
        expected = [{"id": i, "v": f"{v}{i}"} for v in ("a", "u") for i in range(4)] if not options else \
            [{"id": i, "v": f"u{i}"} for i in range(4)]
        assert sorted(catalog.get_table(f"db.{name}").to_arrow().to_pylist(), key=lambda r: (r["v"], r["id"])) == \
            sorted(expected, key=lambda r: (r["v"], r["id"])), name
    source = tmp_path / "in"
    spark.createDataFrame(rows(range(3), v="s").select(["id", "v"]).to_pandas()).write.parquet(str(source))
    location = catalog.table_location("db.streamed")
    q = (spark.readStream.schema("id long, v string").parquet(str(source)).writeStream.format("paimon")
         .option("primary-key", "id").option("bucket", "2").option("deletion-vectors.enabled", "true")
         .option("commitUser", "s3-stream").option("checkpointLocation", str(tmp_path / "ck"))
         .trigger(availableNow=True).start(location))
    q.awaitTermination(300)
    assert q.exception() is None, q.exception()
    assert rows_by(catalog.get_table("db.streamed").to_arrow(), "id") == [{"id": i, "v": f"s{i}"} for i in range(3)]


def test_local_table_with_its_data_files_on_s3(s3, catalog, monkeypatch):
    """A table on local disk whose data files live on S3 (`data-file.external-paths`; the store
    opened from the URI, its endpoint from the environment): written, read, compacted, expired
    and checked there, with only metadata on the local disk."""
    monkeypatch.setenv("AWS_ENDPOINT_URL", s3.endpoint)
    t = catalog.create_table("db.tiered", SCHEMA, primary_keys=["id", "p"], partition_keys=["p"],
                             options={"bucket": "2", "deletion-vectors.enabled": "true",
                                      "data-file.external-paths": "s3://lake/cold/,file:///not/this",
                                      "data-file.external-paths.strategy": "specific-fs",
                                      "data-file.external-paths.specific-fs": "s3"})
    t.write_arrow(rows(range(10)))
    t.write_arrow(rows(range(5), v="b"))
    t.compact(full=True)
    expected = rows_by(pa.concat_tables([rows(range(5), v="b"), rows(range(5, 10))]), "p", "id")
    assert rows_by(ps.Table.open(t.path).to_arrow(), "p", "id") == expected

    def on_s3() -> set[str]:
        infos = s3.filesystem().get_file_info(pafs.FileSelector("lake/cold", recursive=True))
        return {f"s3://{i.path}" for i in infos if i.type == pafs.FileType.File}

    assert not [f for d, _, fs in os.walk(t.path) for f in fs if "/bucket-" in f"{d}/"]
    assert on_s3() and all(p.startswith("s3://lake/cold/p=x/bucket-") for p in on_s3())
    t.expire_snapshots(retain_max=1, retain_min=1, older_than=int(time.time() * 1000) + 60_000)
    live = {e.file.external_path for e in TableScan(t.file_io, t.path, t.schema).live_entries(t.latest_snapshot())}
    assert on_s3() == live
    some = sorted(live)[0]  # Java may record s3a:// URIs: the same objects
    assert t.file_io.read_bytes(some.replace("s3://", "s3a://", 1)) == t.file_io.read_bytes(some)
    assert rows_by(t.to_arrow(), "p", "id") == expected
    assert check_table(t).ok


def test_renaming_a_table_on_s3_is_refused_and_the_table_stays(s3):
    """S3 has no atomic directory rename (a copy of every file): refused, naming what to do."""
    from paimon_streaming.errors import UnsupportedOperationError
    cat = ps.Catalog("s3://lake/renames", options={"s3.endpoint": s3.endpoint, "s3.region": "us-east-1"})
    t = cat.create_table("db.t", pa.schema([("id", pa.int64())]))
    t.write_arrow(pa.table({"id": [1, 2]}))
    with pytest.raises(UnsupportedOperationError, match="renaming a directory on s3 is not atomic"):
        cat.rename_table("db.t", "other.t2")
    assert cat.get_table("db.t").to_arrow().num_rows == 2
    assert not cat.table_exists("other.t2")
    assert cat.list_databases() == ["db"]  # nothing made for the new name either
