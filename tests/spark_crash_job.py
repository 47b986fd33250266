"""A streaming job for the crash tests, run as its own driver process.

    python spark_crash_job.py SOURCE_DIR WAREHOUSE CHECKPOINT [CRASH_POINT BATCH]

Streams the parquet files of SOURCE_DIR (one file per micro-batch) into two tables with
foreachBatch(paimon_sink): `db.events` (append: a duplicate would show) and `db.latest`
(primary key). CRASH_POINT makes the driver die with os._exit at a chosen moment of batch
BATCH, standing in for a SIGKILL at exactly that moment:
  files-written   after the executors wrote the batch's files, before the commit
  snapshot-only   after snapshot-N of db.latest exists, before the LATEST hint is written
  committed       after both tables committed, before Spark records the batch as done
"""
from __future__ import annotations

import os
import sys

from pyspark.sql import SparkSession

from paimon_streaming.commit import FileStoreCommit
from paimon_streaming.sinks import paimon_sink
from paimon_streaming.snapshot import SnapshotManager


def crash_here() -> None:
    sys.stdout.flush()
    os._exit(137)


def install_crash(point: str, batch: int) -> None:
    if point == "files-written":
        original = FileStoreCommit.commit

        def commit(self, messages, commit_user, identifier, **kw):
            if identifier == batch:
                crash_here()
            return original(self, messages, commit_user, identifier, **kw)
        FileStoreCommit.commit = commit
    elif point == "snapshot-only":
        original_hint = SnapshotManager.commit_latest_hint

        def hint(self, snapshot_id):
            if self.table_path.endswith("latest") and self.snapshot(snapshot_id).commit_identifier == batch:
                crash_here()
            return original_hint(self, snapshot_id)
        SnapshotManager.commit_latest_hint = hint


def main() -> None:
    source, warehouse, checkpoint = sys.argv[1:4]
    point, batch = (sys.argv[4], int(sys.argv[5])) if len(sys.argv) > 5 else ("", -1)
    install_crash(point, batch)
    spark = (SparkSession.builder.master("local[2]").config("spark.ui.enabled", "false")
             .config("spark.sql.shuffle.partitions", "3").getOrCreate())
    spark.sparkContext.setLogLevel("ERROR")
    events = paimon_sink("db.events", warehouse=warehouse, options={"bucket": "-1"})
    latest = paimon_sink("db.latest", warehouse=warehouse, options={"primary-key": "k", "bucket": "2"})

    def both(df, batch_id):
        df.persist()
        events(df, batch_id)
        latest(df.select("k", "v"), batch_id)
        df.unpersist()
        print(f"batch {batch_id} done", flush=True)
        if point == "committed" and batch_id == batch:
            crash_here()

    df = spark.readStream.schema("id long, k long, v string").option("maxFilesPerTrigger", 1).parquet(source)
    q = (df.writeStream.foreachBatch(both).option("checkpointLocation", checkpoint)
         .trigger(availableNow=True).start())
    q.awaitTermination()
    if q.exception() is not None:
        raise SystemExit(f"query failed: {q.exception()}")
    print("all batches done", flush=True)


if __name__ == "__main__":
    main()
