"""A shared local Spark session for the Spark tests (started once per test run, on demand), and
the environment every Spark driver of the tests starts with (also the jobs and `ingest`
commands they run as processes).

Test drivers are short-lived JVMs, most of whose time is start-up: they run with the C1
compiler only, the serial collector and a class-data archive of the classes a Spark driver
loads (`python tests/spark_support.py --build`, run by tests/run.sh, writes it to
tests/spark/target), which halves a driver's start and its first queries. Without the
archive (a pytest run without run.sh) drivers start the usual way, only slower.
"""
from __future__ import annotations

import os
import shlex
import subprocess
import sys
import tempfile
from importlib.metadata import version
from pathlib import Path

_SPARK = None
TARGET = Path(__file__).resolve().parent / "spark" / "target"
FAST_START = ["-XX:TieredStopAtLevel=1", "-XX:+UseSerialGC"]


def class_archive() -> Path:
    """The driver's class-data archive for this PySpark (its jars are the archived classpath)."""
    return TARGET / f"spark-driver-{version('pyspark')}.jsa"


def spark_env() -> dict[str, str]:
    """Executors' Python must be this interpreter (it has pyarrow and paimon_streaming); the
    driver's JVM starts fast (see the module's docstring)."""
    archive = class_archive()
    return _driver_env(FAST_START + ([f"-XX:SharedArchiveFile={archive}"] if archive.exists() else []))


def _driver_env(java_options: list[str]) -> dict[str, str]:
    return {"PYSPARK_PYTHON": sys.executable, "PYSPARK_DRIVER_PYTHON": sys.executable,
            "PYSPARK_SUBMIT_ARGS": f"--driver-java-options {shlex.quote(' '.join(java_options))} pyspark-shell"}


_ARCHIVE_WORKLOAD = """
import pyarrow as pa
from pyspark.sql import SparkSession
spark = SparkSession.builder.master("local[2]").config("spark.ui.enabled", "false").getOrCreate()
spark.range(10000).selectExpr("id % 7 AS k", "id").groupBy("k").count().collect()
df = spark.createDataFrame([(i, str(i)) for i in range(100)], "a INT, b STRING")
df.mapInArrow(lambda batches: batches, df.schema).write.mode("overwrite").parquet(OUT + "/p")
spark.read.parquet(OUT + "/p").toArrow()
query = (spark.readStream.format("rate").option("rowsPerSecond", 10).load().writeStream
         .foreachBatch(lambda batch, batch_id: batch.count()).start())
query.processAllAvailable()
query.stop()
spark.stop()
"""


def build_class_archive() -> None:
    """Dump the classes of a driver running typical test work (a query, Arrow both ways,
    Parquet, a stream) into the archive; once per PySpark version."""
    archive = class_archive()
    if archive.exists():
        return
    TARGET.mkdir(parents=True, exist_ok=True)
    partial = archive.with_suffix(".partial")
    env = dict(os.environ, **_driver_env(FAST_START + [f"-XX:ArchiveClassesAtExit={partial}"]))
    with tempfile.TemporaryDirectory() as out:
        subprocess.run([sys.executable, "-c", f"OUT = {out!r}\n" + _ARCHIVE_WORKLOAD], env=env, check=True,
                       capture_output=True, timeout=600)
    partial.replace(archive)


def get_spark():
    global _SPARK
    if _SPARK is None:
        os.environ.update(spark_env())
        from pyspark.sql import SparkSession

        from paimon_streaming.sinks.ingest_command import WORKER_DAEMON
        _SPARK = (SparkSession.builder.master("local[2]").appName("paimon-streaming-tests")
                  .config("spark.ui.enabled", "false")
                  .config("spark.sql.shuffle.partitions", "4")
                  .config("spark.sql.session.timeZone", "UTC")
                  .config("spark.driver.memory", "1g")
                  # its Python workers run as `paimon-streaming demo` and `ingest` start them
                  .config("spark.python.daemon.module", WORKER_DAEMON)
                  .getOrCreate())
        _SPARK.sparkContext.setLogLevel("ERROR")
        import paimon_streaming as ps
        ps.register(_SPARK)
    return _SPARK


if __name__ == "__main__" and sys.argv[1:] == ["--build"]:
    build_class_archive()
