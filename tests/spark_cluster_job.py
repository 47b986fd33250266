"""The driver of the standalone-cluster test, run as its own process (one SparkContext per
process; the pytest process keeps its shared local session).

    python spark_cluster_job.py MASTER_URL SOURCE_DIR BATCH_DIR WAREHOUSE CHECKPOINT RESULT_JSON

1. probes the executors with mapInArrow (pid, working directory of their Python workers);
2. streams the parquet files of SOURCE_DIR (one file per micro-batch) with
   foreachBatch(paimon_sink) into `db.pk` (primary key, fixed buckets) and `db.dyn`
   (primary key, dynamic bucket mode);
3. writes the parquet files of BATCH_DIR (unique keys) with df.write.format("paimon") into
   `db.batch` (append), then overwrites its partition d0 (dynamic partition overwrite);
and writes what the test needs to know (driver pid and cwd, query id, probe rows) as JSON.
"""
from __future__ import annotations

import json
import os
import sys
import time

T_START = time.perf_counter()

import pyarrow as pa
from pyspark.sql import SparkSession
from pyspark.sql import functions as F

import paimon_streaming as ps
from paimon_streaming.sinks import paimon_sink

SCHEMA = "id long, v string, dt string"


def build_session(master: str) -> SparkSession:
    conf = {
        "spark.driver.host": "127.0.0.1",
        "spark.driver.bindAddress": "127.0.0.1",
        "spark.ui.enabled": "false",
        "spark.cores.max": "2",
        "spark.executor.cores": "2",
        "spark.executor.memory": "1g",
        "spark.sql.shuffle.partitions": "4",
        "spark.sql.session.timeZone": "UTC",
        # The executors' Python workers get the file-access probe (see spark_cluster_probe.py).
        "spark.executorEnv.PYTHONPATH": os.environ["PAIMON_PROBE_SITE"],
        "spark.executorEnv.PAIMON_PROBE_LOG": os.environ["PAIMON_PROBE_LOG"],
        # Spark's temp dirs under the test's directory.
        "spark.driver.extraJavaOptions": os.environ.get("PAIMON_TEST_JAVA_OPTS", ""),
        "spark.executor.extraJavaOptions": os.environ.get("PAIMON_TEST_JAVA_OPTS", ""),
        "spark.executorEnv.TMPDIR": os.environ.get("TMPDIR", "/tmp"),
    }
    builder = SparkSession.builder.master(master).appName("paimon-streaming-cluster-test")
    for k, v in conf.items():
        builder = builder.config(k, v)
    spark = builder.getOrCreate()
    spark.sparkContext.setLogLevel("WARN")
    return spark


def probe_executors(spark: SparkSession) -> list[dict]:
    def probe(batches):
        for _ in batches:
            pass
        yield pa.RecordBatch.from_pylist([{"pid": os.getpid(), "cwd": os.getcwd()}])
    rows = spark.range(0, 4, numPartitions=4).mapInArrow(probe, "pid long, cwd string").collect()
    return [r.asDict() for r in rows]


def main() -> None:
    master, source, batch_source, warehouse, checkpoint, result_path = sys.argv[1:7]
    seconds = {"imports": round(time.perf_counter() - T_START, 1)}
    t = time.perf_counter()
    spark = build_session(master)
    seconds["session"] = round(time.perf_counter() - t, 1)
    ps.register(spark)
    result = {"driver_pid": os.getpid(), "driver_cwd": os.getcwd(), "master": spark.sparkContext.master,
              "seconds": seconds}
    t = time.perf_counter()
    result["executor_probe"] = probe_executors(spark)
    seconds["probe"] = round(time.perf_counter() - t, 1)

    t = time.perf_counter()
    pk = paimon_sink("db.pk", warehouse=warehouse,
                     options={"primary-key": "id,dt", "partition": "dt", "bucket": "3"})
    dyn = paimon_sink("db.dyn", warehouse=warehouse, options={"primary-key": "id,dt", "partition": "dt"})

    def both(df, batch_id):
        df.persist()
        pk(df, batch_id)
        dyn(df, batch_id)
        df.unpersist()
        print(f"batch {batch_id} done", flush=True)

    stream = spark.readStream.schema(SCHEMA).option("maxFilesPerTrigger", 1).parquet(source)
    q = (stream.writeStream.foreachBatch(both).option("checkpointLocation", checkpoint)
         .trigger(availableNow=True).start())
    q.awaitTermination()
    if q.exception() is not None:
        raise SystemExit(f"query failed: {q.exception()}")
    result["query_id"] = str(q.id)
    result["seconds"]["stream"] = round(time.perf_counter() - t, 1)

    t = time.perf_counter()
    batch_path = ps.Catalog(warehouse).table_path("db.batch")
    data = spark.read.schema(SCHEMA).parquet(batch_source).repartition(3)
    (data.write.format("paimon").option("primary-key", "id,dt").option("partition", "dt")
     .option("bucket", "2").mode("append").save(batch_path))
    (data.where(F.col("dt") == "d0").withColumn("v", F.concat(F.col("v"), F.lit("-over")))
     .write.format("paimon").mode("overwrite").option("partitionOverwriteMode", "dynamic").save(batch_path))
    result["seconds"]["batch"] = round(time.perf_counter() - t, 1)

    spark.stop()
    with open(result_path, "w") as f:
        json.dump(result, f, indent=1)
    print("cluster job done", flush=True)


if __name__ == "__main__":
    main()
