"""The PySpark this package's Spark side needs, named before anything older fails to import.

PySpark 4.2 brought what the sink and sources are built on: admission control for Python
streaming sources (`pyspark.sql.streaming.datasource`: maxFilesPerTrigger, Trigger.AvailableNow)
and, from 4.1, Arrow scalar UDFs (`arrow_udf`: each row's bucket). 4.2.0 itself hangs a
streaming write to the "paimon" data source whose query filters by a Python UDF (its Python
worker waits for a UDF the JVM does not send; 4.2.1 runs it). pip keeps the bound (the
`spark` extra); importing this module checks it where another PySpark is on the path (a Spark
distribution's, say), and the modules that use those APIs import it first.
"""
from __future__ import annotations

import re

import pyspark

MIN_PYSPARK = (4, 2, 1)


def release(version: str) -> tuple[int, ...]:
    """(major, minor, patch) of a PySpark version string: '4.2.0' -> (4, 2, 0), '4.3.0.dev1' and
    '5.0.0rc1' count as their release."""
    return tuple(int(re.match(r"\d*", part).group() or 0) for part in (version.split(".") + ["0", "0"])[:3])


if release(pyspark.__version__) < MIN_PYSPARK:
    raise ImportError(f"paimon-streaming's Spark sink and sources need PySpark {'.'.join(map(str, MIN_PYSPARK))} "
                      f"or newer; this is PySpark {pyspark.__version__} ({pyspark.__file__})")
