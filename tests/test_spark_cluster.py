"""The Spark sink on a real standalone cluster, not one local-mode JVM.

A Spark standalone master and one worker are started from the pyspark installation (bound to
127.0.0.1, ports chosen by the OS); a driver process (tests/spark_cluster_job.py, its own
SparkContext) streams parquet files through foreachBatch(paimon_sink) into a fixed-bucket and
a dynamic-bucket primary-key table and does a df.write.format("paimon") batch write. The
executors run in their own JVM, with their own Python workers and working directory (the
worker's work dir). A file-access probe (tests/spark_cluster_probe.py, installed as
sitecustomize in every Python process of the job) shows that the data and index files were
written by executor processes and never opened by the driver's processes, which only commit.
Results are read back with paimon_streaming and with pypaimon.
"""
from __future__ import annotations

import json
import os
import shutil
import sys
import time
from dataclasses import dataclass

import pyarrow as pa
import pytest

import paimon_streaming as ps
from conftest import pypaimon_read, rows_by
from spark_cluster_probe import read_records
from spark_cluster_support import SparkProcess, StandaloneCluster, java_tmp_option, spark_daemon_env
from test_spark_sink import model_of, upsert_batches, write_input_files

pytestmark = pytest.mark.skipif(not sys.platform.startswith("linux"),
                                reason="uses /proc and process groups to tell processes apart")

HERE = os.path.dirname(os.path.abspath(__file__))
JOB = os.path.join(HERE, "spark_cluster_job.py")
PROBE = os.path.join(HERE, "spark_cluster_probe.py")
EXECUTOR_MAIN = "org.apache.spark.executor.CoarseGrainedExecutorBackend"
DRIVER_JVM_MAIN = "org.apache.spark.deploy.SparkSubmit"
JOB_TIMEOUT = 300


@dataclass
class ClusterRun:
    base: str
    warehouse: str
    work_dir: str
    result: dict
    records: list[dict]
    stream_batches: list[pa.Table]
    batch_rows: pa.Table
    logs: str
    seconds: dict

    def role(self, record: dict) -> str:
        if record["pid"] == self.result["driver_pid"]:
            return "driver"
        if record["jvm_main"] == EXECUTOR_MAIN:
            return "executor"
        if record["jvm_main"] == DRIVER_JVM_MAIN:
            return "driver-jvm-worker"  # Python workers of the driver JVM (Data Source writer()/commit())
        return f"other({record['jvm_main']})"


def batch_input() -> pa.Table:
    ids = list(range(150))
    return pa.table({"id": pa.array(ids, pa.int64()), "v": [f"x{i}" for i in ids], "dt": [f"d{i % 3}" for i in ids]})


@pytest.fixture(scope="module")
def run(tmp_path_factory) -> ClusterRun:
    base = str(tmp_path_factory.mktemp("cluster"))
    stream_batches = upsert_batches(3, 60)
    write_input_files(os.path.join(base, "in"), stream_batches)
    rows = batch_input()
    write_input_files(os.path.join(base, "batch-in"), [rows.slice(0, 50), rows.slice(50, 50), rows.slice(100)])
    site, probe_log = os.path.join(base, "site"), os.path.join(base, "probe")
    os.makedirs(site)
    os.makedirs(probe_log)
    shutil.copy(PROBE, os.path.join(site, "sitecustomize.py"))
    warehouse = os.path.join(base, "wh")
    result_path = os.path.join(base, "result.json")
    seconds = {}

    t0 = time.monotonic()
    cluster = StandaloneCluster(os.path.join(base, "spark"))
    seconds["cluster_start"] = round(time.monotonic() - t0, 1)
    job = None
    try:
        t = time.monotonic()
        driver_tmp = os.path.join(base, "driver-tmp")
        env = spark_daemon_env(os.path.join(base, "spark", "conf"), driver_tmp,
                               PYTHONPATH=os.pathsep.join(filter(None, [site, os.environ.get("PYTHONPATH")])),
                               PAIMON_PROBE_SITE=site, PAIMON_PROBE_LOG=probe_log,
                               PAIMON_TEST_JAVA_OPTS=java_tmp_option(driver_tmp),
                               SPARK_LOCAL_DIRS=os.path.join(base, "driver-local"))
        job = SparkProcess("driver", [sys.executable, JOB, cluster.url, os.path.join(base, "in"),
                                      os.path.join(base, "batch-in"), warehouse, os.path.join(base, "ckpt"),
                                      result_path],
                           os.path.join(base, "driver.log"), env, os.path.join(base, "driver-cwd"))
        try:
            rc = job.wait(JOB_TIMEOUT)
        except RuntimeError as exc:  # timed out (and killed)
            pytest.fail(f"{exc}\n{cluster.describe()}")
        seconds["job"] = round(time.monotonic() - t, 1)
        logs = job.describe(120) + "\n" + cluster.describe()
        if rc != 0 or not os.path.exists(result_path):
            pytest.fail(f"cluster job failed (exit {rc})\n{logs}")
        with open(result_path) as f:
            result = json.load(f)
        seconds.update({f"job_{k}": v for k, v in result["seconds"].items()})
        yield ClusterRun(base, warehouse, cluster.work_dir, result, read_records(probe_log), stream_batches,
                         rows, logs, seconds)
    finally:
        t = time.monotonic()
        if job is not None:
            job.stop()
        cluster.stop()  # kills master and worker (and executors) group-wide, removes their work dirs
        seconds["cluster_stop"] = round(time.monotonic() - t, 1)
        print(f"\nstandalone cluster test timings (s): {seconds}")
        for d in ("driver-local", "driver-tmp"):
            shutil.rmtree(os.path.join(base, d), ignore_errors=True)


def test_driver_and_executors_are_separate_processes(run):
    r = run.result
    assert r["master"].startswith("spark://127.0.0.1:")
    probe = r["executor_probe"]
    assert len(probe) == 4
    for row in probe:
        assert row["pid"] != r["driver_pid"]
        assert row["cwd"] != r["driver_cwd"]
        assert row["cwd"].startswith(run.work_dir + os.sep), (row, run.work_dir)  # work-dir/app-id/executor-id


@pytest.mark.parametrize("name", ["pk", "dyn"])
def test_foreach_batch_on_cluster(run, name):
    expected = sorted(model_of(run.stream_batches, ("id", "dt")).values(), key=lambda x: (x["id"], x["dt"]))
    table = ps.Catalog(run.warehouse).get_table(f"db.{name}")
    assert rows_by(table.to_arrow(), "id", "dt") == expected
    assert rows_by(pypaimon_read(run.warehouse, f"db.{name}"), "id", "dt") == expected
    snaps = table.snapshots()
    assert [s.commit_identifier for s in snaps] == [0, 1, 2]
    assert {s.commit_user for s in snaps} == {run.result["query_id"]}  # the streaming query id
    if name == "dyn":
        assert table.options.bucket == -1
        assert any(n.startswith("index-") for n in os.listdir(os.path.join(table.path, "index")))


def test_datasource_batch_write_on_cluster(run):
    expected = {(r["id"], r["dt"]): dict(r) for r in run.batch_rows.to_pylist()}
    for key, r in expected.items():
        if r["dt"] == "d0":
            r["v"] += "-over"
    expected = sorted(expected.values(), key=lambda x: (x["id"], x["dt"]))
    table = ps.Catalog(run.warehouse).get_table("db.batch")
    assert rows_by(table.to_arrow(), "id", "dt") == expected
    assert rows_by(pypaimon_read(run.warehouse, "db.batch"), "id", "dt") == expected
    assert [s.commit_kind for s in table.snapshots()] == ["APPEND", "OVERWRITE"]


def table_files(warehouse: str) -> dict[str, str]:
    """basename -> path of every data file and index file in the warehouse."""
    out = {}
    for root, _, files in os.walk(warehouse):
        for n in files:
            if n.startswith("data-") or (n.startswith("index-") and not n.startswith("index-manifest")):
                out[n] = os.path.join(root, n)
    return out


def test_data_files_are_written_by_executors_only(run):
    files = table_files(run.warehouse)
    assert any(n.startswith("data-") for n in files) and any(n.startswith("index-") for n in files)
    roles = {}
    for rec in run.records:
        roles.setdefault(os.path.basename(rec["path"]), []).append((rec["op"], run.role(rec), rec))
    for name in files:
        writes = [(role, rec) for op, role, rec in roles.get(name, []) if op == "write"]
        assert writes, f"no recorded writer of {files[name]}\n{run.logs}"
        for role, rec in writes:
            assert role == "executor", (name, rec)
            assert rec["cwd"].startswith(run.work_dir + os.sep) and rec["pid"] != run.result["driver_pid"], rec
    # The driver's processes never opened a data or index file, but they did commit snapshots.
    driver_side = [rec for rec in run.records if run.role(rec) != "executor"]
    opened = sorted({os.path.basename(rec["path"]) for rec in driver_side} & set(files))
    assert not opened, f"driver-side processes opened table files: {opened}"
    snapshot_writers = {run.role(rec) for rec in driver_side if "/snapshot/" in rec["path"] and rec["op"] == "write"}
    assert snapshot_writers == {"driver", "driver-jvm-worker"}, snapshot_writers
    assert not [rec for rec in run.records if run.role(rec).startswith("other")]
