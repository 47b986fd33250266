"""A shared local Spark session for the Spark tests (started once per test run, on demand)."""
from __future__ import annotations

import os
import sys

_SPARK = None


def spark_env() -> dict[str, str]:
    """Executors' Python must be this interpreter (it has pyarrow and paimon_streaming)."""
    return {"PYSPARK_PYTHON": sys.executable, "PYSPARK_DRIVER_PYTHON": sys.executable}


def get_spark():
    global _SPARK
    if _SPARK is None:
        os.environ.update(spark_env())
        from pyspark.sql import SparkSession
        _SPARK = (SparkSession.builder.master("local[2]").appName("paimon-streaming-tests")
                  .config("spark.ui.enabled", "false")
                  .config("spark.sql.shuffle.partitions", "4")
                  .config("spark.sql.session.timeZone", "UTC")
                  .config("spark.driver.memory", "1g")
                  .getOrCreate())
        _SPARK.sparkContext.setLogLevel("ERROR")
        import paimon_streaming as ps
        ps.register(_SPARK)
    return _SPARK
