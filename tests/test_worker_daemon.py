"""Spark's Python workers import PySpark from its installed package and freeze their heap after
their first task (sinks/worker_daemon.py), the start-up settings of the command-line sessions
(ingest_command.session_confs), and the PySpark the Spark side needs (sinks/spark_version.py)."""
from __future__ import annotations

import gc
import json
import os
import subprocess
import sys
import textwrap
import zipfile

import pyspark
import pytest

from paimon_streaming.sinks.ingest_command import SHORT_JOB_JAVA_OPTIONS, WORKER_DAEMON, session_confs
from paimon_streaming.sinks.worker_daemon import freezing_after_first_task, prefer_installed_packages


def _package(root, name: str, version: str) -> str:
    os.makedirs(root / name, exist_ok=True)
    (root / name / "__init__.py").write_text("")
    (root / name / "version.py").write_text(f"__version__ = '{version}'\n")
    return str(root)


def _archive(path, name: str, version: str) -> str:
    with zipfile.ZipFile(path, "w") as z:
        z.writestr(f"{name}/__init__.py", "")
        z.writestr(f"{name}/version.py", f"__version__ = '{version}'\n")
    return str(path)


def test_archives_give_way_to_the_same_installed_version_only(tmp_path):
    site = _package(tmp_path / "site", "pyspark", "4.3.0")
    _package(tmp_path / "site", "py4j", "0.10.9.9")
    same = _archive(tmp_path / "pyspark.zip", "pyspark", "4.3.0")
    py4j = _archive(tmp_path / "py4j-0.10.9.9-src.zip", "py4j", "0.10.9.9")
    jar = str(tmp_path / "spark-core_2.13-4.3.0.jar")
    assert prefer_installed_packages(["", same, py4j, jar, site]) == ["", jar, site]

    os.makedirs(tmp_path / "old")
    older = _archive(tmp_path / "old" / "pyspark.zip", "pyspark", "4.2.0")
    assert prefer_installed_packages([older, site]) == [older, site]  # another version: Spark's path stays
    assert prefer_installed_packages([same, str(tmp_path / "empty")]) == [same, str(tmp_path / "empty")]  # none installed
    broken = tmp_path / "broken" / "pyspark.zip"
    os.makedirs(broken.parent)
    broken.write_bytes(b"not a zip")
    assert prefer_installed_packages([str(broken), site]) == [str(broken), site]


def test_local_workers_import_the_installed_pyspark(tmp_path):
    """A local session with the daemon module: a worker's PySpark is the installed package
    (byte-compiled), Spark's zip is off its path, and the job's result is right."""
    script = tmp_path / "job.py"
    script.write_text(textwrap.dedent(f"""
        import json, sys
        import pyarrow as pa
        from pyspark.sql import SparkSession
        spark = (SparkSession.builder.master("local[1]").config("spark.python.daemon.module", "{WORKER_DAEMON}")
                 .config("spark.ui.showConsoleProgress", "false").getOrCreate())

        def probe(batches):
            import gc, os, pyspark, sys
            for b in batches:
                yield pa.RecordBatch.from_pydict({{"n": [b.num_rows], "pyspark": [pyspark.__file__],
                                                   "path": [json.dumps(sys.path)], "pid": [os.getpid()],
                                                   "frozen": [gc.get_freeze_count()]}})

        schema = "n long, pyspark string, path string, pid long, frozen long"
        rows = [spark.range(0, 1000, numPartitions=1).mapInArrow(probe, schema).collect() for _ in range(2)]
        print(json.dumps([[r.asDict() for r in job] for job in rows]))
        spark.stop()
    """))
    env = {**os.environ, "PYSPARK_PYTHON": sys.executable}
    done = subprocess.run([sys.executable, str(script)], capture_output=True, text=True, env=env, timeout=300)
    assert done.returncode == 0, done.stderr[-3000:]
    first, second = json.loads(done.stdout.strip().splitlines()[-1])
    assert sum(r["n"] for r in first) == sum(r["n"] for r in second) == 1000
    installed = os.path.dirname(pyspark.__file__)
    for r in first + second:
        assert r["pyspark"].startswith(installed + os.sep) and ".zip" not in r["pyspark"], r["pyspark"]
        assert not any(os.path.basename(p) == "pyspark.zip" for p in json.loads(r["path"])), r["path"]
    # the reused worker froze what its first task left alive (the imports): PySpark's full
    # collection after each later task skips them. Before, only what the interpreter itself
    # freezes at its start (none on 3.11 and 3.14, 375 objects on Ubuntu's 3.12).
    at_start = int(subprocess.run([sys.executable, "-c", "import gc; print(gc.get_freeze_count())"],
                                  capture_output=True, text=True, check=True).stdout)
    assert first[0]["pid"] == second[0]["pid"] and first[0]["frozen"] == at_start, (first, at_start)
    assert second[0]["frozen"] > at_start + 10_000, (second, at_start)


def test_a_worker_freezes_its_heap_once_after_its_first_task():
    tasks = []
    kept = []  # what the second task leaves alive: a second freeze would take these too
    run = freezing_after_first_task(lambda sock, authenticated: tasks.append(sock) or 0)
    gc.unfreeze()
    try:
        assert run("first", False) == 0 and tasks == ["first"]
        frozen = gc.get_freeze_count()
        assert frozen > 0
        kept.extend([i] for i in range(1000))
        assert run("second", True) == 0 and tasks == ["first", "second"]
        # once: later tasks' objects stay collectable (frozen objects freed meanwhile may lower
        # the count, a second freeze would raise it by at least the 1,000 lists kept alive)
        assert gc.get_freeze_count() <= frozen
    finally:
        gc.unfreeze()


def test_session_settings_leave_the_users_own_alone(monkeypatch):
    monkeypatch.delenv("PYSPARK_SUBMIT_ARGS", raising=False)
    confs = session_confs("local[2]", [], short_job=True)
    assert confs["spark.python.daemon.module"] == WORKER_DAEMON
    assert confs["spark.driver.extraJavaOptions"] == SHORT_JOB_JAVA_OPTIONS
    assert "spark.driver.extraJavaOptions" not in session_confs("local[2]", [], short_job=False)  # ingest: long-running
    own = session_confs("local[*]", [("spark.python.daemon.module", "pyspark.daemon"),
                                     ("spark.driver.extraJavaOptions", "-Xss4m")], short_job=True)
    assert own["spark.python.daemon.module"] == "pyspark.daemon" and own["spark.driver.extraJavaOptions"] == "-Xss4m"
    assert "spark.python.daemon.module" not in session_confs("spark://host:7077", [], short_job=True)
    monkeypatch.setenv("PYSPARK_SUBMIT_ARGS", "--driver-java-options '-Xmx2g' pyspark-shell")
    assert "spark.driver.extraJavaOptions" not in session_confs("local[2]", [], short_job=True)


def _import_with_pyspark_version(module: str, version: str) -> subprocess.CompletedProcess:
    code = f"import pyspark; pyspark.__version__ = {version!r}; import {module}"
    return subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120)


@pytest.mark.parametrize("module", ["paimon_streaming.sinks.foreach_batch", "paimon_streaming.sinks.datasource",
                                    "paimon_streaming.sinks.demo_pipeline", "paimon_streaming.sources.stream_reader",
                                    "paimon_streaming.sources.kafka"])
def test_an_older_pyspark_is_named_before_its_missing_modules_fail(module):
    """PySpark 4.1 has no `pyspark.sql.streaming.datasource` (4.0 no `arrow_udf` either), 4.2.0
    hangs a stream: every module that needs them names the version instead of failing later."""
    for older in ("4.1.4", "4.2.0"):
        done = _import_with_pyspark_version(module, older)
        assert done.returncode == 1
        assert done.stderr.strip().splitlines()[-1] == (
            f"ImportError: paimon-streaming's Spark sink and sources need PySpark 4.2.1 or newer; this is PySpark "
            f"{older} ({pyspark.__file__})")


@pytest.mark.parametrize("version", ["4.2.1", "4.3", "4.10.0.dev1", "5.0.0rc1"])
def test_newer_pysparks_pass_the_check(version):
    done = _import_with_pyspark_version("paimon_streaming.sinks.spark_version", version)
    assert done.returncode == 0, done.stderr
