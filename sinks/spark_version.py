"""The PySpark this package's Spark side needs, named before anything older fails to import.

PySpark 4.2 brought what the sink and sources are built on: admission control for Python
streaming sources (`pyspark.sql.streaming.datasource`: maxFilesPerTrigger, Trigger.AvailableNow)
and, from 4.1, Arrow scalar UDFs (`arrow_udf`: each row's bucket). pip keeps that bound
(the `spark` extra); importing this module checks it where another PySpark is on the path (a
Spark distribution's, say), and the modules that use those APIs import it first.
"""
from __future__ import annotations

import pyspark

MIN_PYSPARK = (4, 2)


def _major_minor(version: str) -> tuple[int, int]:
    major, minor = version.split(".")[:2]
    return int(major), int("".join(c for c in minor if c.isdigit()) or 0)


if _major_minor(pyspark.__version__) < MIN_PYSPARK:
    raise ImportError(f"paimon-streaming's Spark sink and sources need PySpark {'.'.join(map(str, MIN_PYSPARK))} "
                      f"or newer; this is PySpark {pyspark.__version__} ({pyspark.__file__})")
