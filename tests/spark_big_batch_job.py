"""A driver process for the big-batch test: local[2] with a small spark.driver.maxResultSize,
one micro-batch larger than it written through paimon_sink, which must fall back from the
driver to one task and write it whole.

    python spark_big_batch_job.py TABLE_DIR ROWS
"""
from __future__ import annotations

import logging
import sys

from pyspark.sql import SparkSession

from paimon_streaming.sinks import paimon_sink


def main(table_dir: str, rows: int) -> None:
    logging.basicConfig(format="%(levelname)s %(message)s")
    spark = (SparkSession.builder.master("local[2]").config("spark.ui.enabled", "false")
             .config("spark.driver.maxResultSize", "1m").getOrCreate())
    spark.sparkContext.setLogLevel("OFF")
    df = spark.range(rows, numPartitions=4).selectExpr("id", "concat('value-', repeat('x', 40), id) AS v")
    paimon_sink(table_dir, commit_user="big", options={"primary-key": "id", "bucket": "2",
                                                       "deletion-vectors.enabled": "true"})(df, 0)
    spark.stop()


if __name__ == "__main__":
    main(sys.argv[1], int(sys.argv[2]))
