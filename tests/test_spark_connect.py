"""The sink from a Spark Connect client.

A local Spark Connect server is started from the pyspark installation (loopback, port chosen
by the OS) and a client process (tests/spark_connect_job.py; a Connect client switches its
whole process to Connect mode, so it cannot share the pytest process with the classic local
session of the other Spark tests) runs:
  (a) the Data Source path: paimon_streaming.register on the Connect session,
      df.write.format("paimon") append/overwrite, df.writeStream.format("paimon") with commitUser;
  (b) foreachBatch(paimon_sink(...)): under Connect the function runs in a Python worker of the
      server and no streaming query id is reachable, so paimon_sink needs commit_user= (without
      it the batch fails with a precise error); with it, a replayed batch is skipped (exactly-once).
Results are read back with paimon_streaming and pypaimon.
"""
from __future__ import annotations

import json
import os
import sys
import time

import pyarrow as pa
import pyarrow.parquet as pq
import pytest

import paimon_streaming as ps
from conftest import pypaimon_read, rows_by
from spark_cluster_support import ConnectServer, SparkProcess, spark_daemon_env
from test_spark_sink import model_of, upsert_batches, write_input_files

pytestmark = pytest.mark.skipif(not sys.platform.startswith("linux"), reason="process-group handling is POSIX")

JOB = os.path.join(os.path.dirname(os.path.abspath(__file__)), "spark_connect_job.py")
CLIENT_TIMEOUT = 300


@pytest.fixture(scope="module")
def server(tmp_path_factory):
    base = str(tmp_path_factory.mktemp("connect-server"))
    t0 = time.monotonic()
    srv = ConnectServer(base)
    print(f"\nSpark Connect server up in {time.monotonic() - t0:.1f}s at {srv.url}")
    try:
        yield srv
    finally:
        srv.stop()  # kills the server's process group, removes its local and temp dirs


def run_client(server: ConnectServer, scenario: str, work: str) -> dict:
    result_path = os.path.join(work, f"result-{scenario}.json")
    env = spark_daemon_env(os.path.join(work, "conf"), os.path.join(work, "tmp"))
    client = SparkProcess(f"connect-client {scenario}", [sys.executable, JOB, server.url, scenario, work, result_path],
                          os.path.join(work, f"client-{scenario}.log"), env, os.path.join(work, "client-cwd"))
    try:
        t0 = time.monotonic()
        rc = client.wait(CLIENT_TIMEOUT)
        print(f"\nconnect client {scenario}: {time.monotonic() - t0:.1f}s")
        if rc != 0 or not os.path.exists(result_path):
            pytest.fail(f"connect client {scenario} failed (exit {rc})\n{client.describe(150)}\n{server.describe()}")
    finally:
        client.stop()
    with open(result_path) as f:
        result = json.load(f)
    print(f"connect client {scenario} steps (s): {result['steps']}")
    result["_logs"] = client.describe(80) + "\n" + server.describe()
    return result


def sorted_rows(rows: list[dict]) -> list[dict]:
    return sorted(rows, key=lambda r: (r["id"], r["dt"]))


def test_datasource_writes_from_connect_client(server, tmp_path):
    batches = upsert_batches(3, 30)
    write_input_files(tmp_path / "in", batches)
    r = run_client(server, "datasource", str(tmp_path))
    wh = str(tmp_path / "wh")
    assert r["session_type"] == "pyspark.sql.connect.session.SparkSession"
    assert sorted_rows(r["after_append"]) == [{"id": 1, "v": "a", "dt": "x"}, {"id": 2, "v": "b2", "dt": "y"},
                                              {"id": 3, "v": "c", "dt": "y"}]
    assert sorted_rows(r["after_dynamic_overwrite"]) == [{"id": 1, "v": "a", "dt": "x"}, {"id": 9, "v": "z", "dt": "y"}]
    final = [{"id": 5, "v": "e", "dt": "x"}, {"id": 6, "v": "f", "dt": "y"}]
    assert rows_by(ps.Catalog(wh).get_table("db.ds").to_arrow(), "id") == final
    assert rows_by(pypaimon_read(wh, "db.ds"), "id") == final
    assert [s.commit_kind for s in ps.Catalog(wh).get_table("db.ds").snapshots()] == \
        ["APPEND", "APPEND", "OVERWRITE", "OVERWRITE"]
    # writeStream.format("paimon"): commitUser is required, then every batch is committed once.
    assert r["stream_without_commit_user"] and "commitUser" in r["stream_without_commit_user"], r["_logs"]
    assert not os.path.exists(os.path.join(wh, "db.db", "st-nouser", "snapshot"))
    assert r["stream"] is None, r["stream"]
    expected = sorted_rows(list(model_of(batches, ("id", "dt")).values()))
    st = ps.Catalog(wh).get_table("db.st")
    assert rows_by(st.to_arrow(), "id", "dt") == expected
    assert rows_by(pypaimon_read(wh, "db.st"), "id", "dt") == expected
    assert [(s.commit_user, s.commit_identifier) for s in st.snapshots()] == [("connect-stream-1", i) for i in range(3)]
    # The source from the Connect client: batch and streaming reads return the table's rows.
    assert sorted_rows(r["batch_read"]) == expected
    assert r["stream_read"] is None, r["stream_read"]
    assert sorted_rows(r["stream_read_rows"]) == expected


def test_foreach_batch_from_connect_client(server, tmp_path):
    batches = upsert_batches(4, 40)
    write_input_files(tmp_path / "in", batches[:3])
    os.makedirs(tmp_path / "late")
    late = str(tmp_path / "late" / "part-late.parquet")
    pq.write_table(batches[3], late)
    os.utime(late, (1_700_000_010, 1_700_000_010))  # after the first three files
    r = run_client(server, "foreach-batch", str(tmp_path))
    wh = str(tmp_path / "wh")

    # Without commit_user the batch fails with the precise error, before anything is created.
    err = r["without_commit_user"]
    assert err and "paimon_sink under Spark Connect needs commit_user=" in err, r["_logs"]
    assert not os.path.exists(os.path.join(wh, "db.db", "nouser"))

    # The function ran on the server (a Connect DataFrame in a server-side Python worker), once per
    # batch and once more for the replayed batch.
    assert r["first_run"] is None and r["second_run"] is None, r["_logs"]
    calls = [line.split() for line in r["calls"]]
    assert [int(c[0]) for c in calls] == [0, 1, 2, 2, 3]
    assert r["replayed_batch"] == 2
    assert {c[2] for c in calls} == {"pyspark.sql.connect.dataframe"}
    assert all(int(c[1]) != r["client_pid"] for c in calls)

    # Exactly once: the replayed batch 2 was skipped, batch 3 committed.
    pk = ps.Catalog(wh).get_table("db.pk")
    expected = sorted_rows(list(model_of(batches, ("id", "dt")).values()))
    assert rows_by(pk.to_arrow(), "id", "dt") == expected
    assert rows_by(pypaimon_read(wh, "db.pk"), "id", "dt") == expected
    assert [(s.commit_user, s.commit_identifier) for s in pk.snapshots()] == \
        [("connect-orders-pk", i) for i in range(4)]
    log = ps.Catalog(wh).get_table("db.log")
    all_rows = rows_by(pa.concat_tables(batches), "id", "v")
    assert rows_by(log.to_arrow(), "id", "v") == all_rows  # an append table: a duplicate would show
    assert rows_by(pypaimon_read(wh, "db.log"), "id", "v") == all_rows
    assert [(s.commit_user, s.commit_identifier) for s in log.snapshots()] == \
        [("connect-orders-log", i) for i in range(4)]

    # The sink called from the client with Connect DataFrames: a replayed id is skipped; no
    # commit_user fails with the same precise error.
    direct = ps.Catalog(wh).get_table("db.direct")
    assert rows_by(direct.to_arrow(), "id") == [{"id": 1, "v": "a", "dt": "x"}, {"id": 2, "v": "b", "dt": "y"},
                                                {"id": 3, "v": "c", "dt": "x"}]
    assert [s.commit_identifier for s in direct.snapshots()] == [7, 8]
    assert "PaimonError: paimon_sink under Spark Connect needs commit_user=" in r["direct_without_commit_user"]
