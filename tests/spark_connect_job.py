"""The Spark Connect client of tests/test_spark_connect.py, run as its own process: connecting
sets SPARK_CONNECT_MODE_ENABLED for the whole process, which would switch the classic local
session of the other Spark tests over to Connect code paths.

    python spark_connect_job.py SC_URL SCENARIO WORKDIR RESULT_JSON

Scenarios (inputs prepared by the test under WORKDIR; tables under WORKDIR/wh):
  datasource     paimon_streaming.register on the Connect session; df.write.format("paimon")
                 append / dynamic and static overwrite; df.writeStream.format("paimon") with
                 and without option commitUser; spark.read / readStream.format("paimon").
  foreach-batch  foreachBatch(paimon_sink) without commit_user (must fail, precisely), then
                 with commit_user into a primary-key and an append table; a replay of the last
                 batch (its checkpoint commit removed, as after a crash between our commit and
                 Spark's) and a new file in one restart; direct sink calls from the client.
The foreachBatch function runs on the server, so it reports its calls by appending to a file.
"""
from __future__ import annotations

import json
import os
import shutil
import sys
import time

from pyspark.sql import SparkSession
from pyspark.sql import functions as F

import paimon_streaming as ps
from paimon_streaming.sinks import paimon_sink

SCHEMA = "id long, v string, dt string"
STEPS: dict[str, float] = {}
_T = [time.perf_counter()]


def step(name: str) -> None:
    """Record the seconds since the previous step (reported in the result as `steps`)."""
    now = time.perf_counter()
    STEPS[name] = round(now - _T[0], 1)
    _T[0] = now


def run_query(writer, timeout: float = 240) -> str | None:
    """Start, wait, and return the query's failure message (None when it succeeded)."""
    q = writer.trigger(availableNow=True).start()
    try:
        finished = q.awaitTermination(timeout)
    except Exception:  # awaitTermination re-raises the query's failure
        finished = True
    if not finished:
        q.stop()
        raise SystemExit(f"query {q.id} did not finish within {timeout}s")
    exc = q.exception()
    return None if exc is None else str(exc)


def datasource(spark: SparkSession, work: str) -> dict:
    out = {}
    wh = f"{work}/wh"
    path = f"{wh}/db.db/ds"
    rows = spark.createDataFrame([(1, "a", "x"), (2, "b", "y"), (3, "c", "y")], SCHEMA)
    (rows.write.format("paimon").option("primary-key", "id,dt").option("partition", "dt").option("bucket", "2")
     .mode("append").save(path))
    spark.createDataFrame([(2, "b2", "y")], SCHEMA).write.format("paimon").mode("append").save(path)
    out["after_append"] = ps.Table.open(path).to_arrow().to_pylist()
    step("batch appends")
    spark.createDataFrame([(9, "z", "y")], SCHEMA).write.format("paimon").mode("overwrite") \
        .option("partitionOverwriteMode", "dynamic").save(path)
    out["after_dynamic_overwrite"] = ps.Table.open(path).to_arrow().to_pylist()
    spark.createDataFrame([(5, "e", "x"), (6, "f", "y")], SCHEMA).write.format("paimon") \
        .option("table", "db.ds").option("warehouse", wh).mode("overwrite").save()
    step("batch overwrites")

    stream = spark.readStream.schema(SCHEMA).option("maxFilesPerTrigger", 1).parquet(f"{work}/in")
    base = (stream.writeStream.format("paimon").option("primary-key", "id,dt").option("partition", "dt")
            .option("bucket", "2"))
    out["stream_without_commit_user"] = run_query(
        base.option("checkpointLocation", f"{work}/ckpt-nouser").option("path", f"{wh}/db.db/st-nouser"))
    step("stream without commitUser")
    out["stream"] = run_query(base.option("checkpointLocation", f"{work}/ckpt-st")
                              .option("commitUser", "connect-stream-1").option("path", f"{wh}/db.db/st"))
    step("stream")

    # The read side from the Connect client: a batch read and a streaming read of that table.
    out["batch_read"] = [r.asDict() for r in spark.read.format("paimon").load(f"{wh}/db.db/st").collect()]
    reader = spark.readStream.format("paimon").load(f"{wh}/db.db/st")
    out["stream_read"] = run_query(reader.writeStream.format("memory").queryName("paimon_rows")
                                   .option("checkpointLocation", f"{work}/ckpt-read"))
    out["stream_read_rows"] = [r.asDict() for r in spark.sql("select * from paimon_rows").collect()]
    step("reads")
    return out


def foreach_batch(spark: SparkSession, work: str) -> dict:
    out = {}
    wh = f"{work}/wh"
    calls = f"{work}/calls.log"
    stream = spark.readStream.schema(SCHEMA).option("maxFilesPerTrigger", 1).parquet(f"{work}/in")

    # 1. Without commit_user: no query id is reachable under Connect; the batch fails, nothing is created.
    out["without_commit_user"] = run_query(
        stream.writeStream.foreachBatch(paimon_sink(f"{wh}/db.db/nouser", options={"primary-key": "id,dt"}))
        .option("checkpointLocation", f"{work}/ckpt-nouser"))
    step("without commit_user")

    # 2. With commit_user: one function, two tables; it logs each call (it runs on the server).
    pk = paimon_sink("db.pk", warehouse=wh, commit_user="connect-orders-pk",
                     options={"primary-key": "id,dt", "partition": "dt", "bucket": "2"})
    log = paimon_sink("db.log", warehouse=wh, commit_user="connect-orders-log", options={"bucket": "-1"})

    def both(df, batch_id):
        import os as _os
        with open(calls, "a") as f:
            f.write(f"{batch_id} {_os.getpid()} {type(df).__module__}\n")
        pk(df, batch_id)
        log(df, batch_id)

    ckpt = f"{work}/ckpt-fb"
    out["first_run"] = run_query(stream.writeStream.foreachBatch(both).option("checkpointLocation", ckpt))
    out["calls_first_run"] = open(calls).read().splitlines()
    step("first run")

    # 3. Crash between our commit and Spark's: drop the checkpoint's commit of the last batch, so a
    #    restart replays it; a new input file is picked up by the same restart.
    last = max(int(n) for n in os.listdir(f"{ckpt}/commits") if n.isdigit())
    os.remove(f"{ckpt}/commits/{last}")
    if os.path.exists(f"{ckpt}/commits/.{last}.crc"):
        os.remove(f"{ckpt}/commits/.{last}.crc")
    out["replayed_batch"] = last
    shutil.move(f"{work}/late/part-late.parquet", f"{work}/in/part-late.parquet")
    out["second_run"] = run_query(stream.writeStream.foreachBatch(both).option("checkpointLocation", ckpt))
    out["calls"] = open(calls).read().splitlines()
    step("second run")

    # 4. The sink called directly from the client with a Connect DataFrame: a replayed id is skipped.
    direct = paimon_sink("db.direct", warehouse=wh, commit_user="client-direct",
                         options={"primary-key": "id", "bucket": "2"})
    df = spark.createDataFrame([(1, "a", "x"), (2, "b", "y")], SCHEMA)
    direct(df, 7)
    direct(df.withColumn("v", F.lit("replayed")), 7)
    direct(spark.createDataFrame([(3, "c", "x")], SCHEMA), 8)
    try:
        paimon_sink("db.direct", warehouse=wh)(df, 9)
        out["direct_without_commit_user"] = None
    except Exception as exc:
        out["direct_without_commit_user"] = f"{type(exc).__name__}: {exc}"
    step("direct calls")
    return out


def main() -> None:
    url, scenario, work, result_path = sys.argv[1:5]
    spark = SparkSession.builder.remote(url).getOrCreate()
    ps.register(spark)
    result = {"session_type": f"{type(spark).__module__}.{type(spark).__name__}", "client_pid": os.getpid()}
    step("connect")
    result.update({"datasource": datasource, "foreach-batch": foreach_batch}[scenario](spark, work))
    result["steps"] = STEPS
    spark.stop()
    with open(result_path, "w") as f:
        json.dump(result, f, indent=1)
    print(f"connect job {scenario} done", flush=True)


if __name__ == "__main__":
    main()
