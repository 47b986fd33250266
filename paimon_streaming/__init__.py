"""paimon-streaming: a pure-Python Apache Paimon table format core.

    import paimon_streaming as ps
    cat = ps.Catalog("/tmp/warehouse")
    t = cat.create_table("db.orders", schema, primary_keys=["id"], options={"bucket": "4"})
    t.write_arrow(batch)
    t.to_arrow()

This package never imports pyspark; the Spark sink and source live in
`paimon_streaming.sinks` and `paimon_streaming.sources`.
"""
import os as _os

# The Spark plugins live at the repository's top level (sinks/, sources/); a wheel maps them
# into this package. When this package is imported from a source checkout instead (the
# repository root is first on sys.path in a driver or a Spark Python worker started there),
# the checkout's root joins the package's search path so that `paimon_streaming.sinks` and
# `paimon_streaming.sources` still resolve, to the checkout's own folders.
_here = _os.path.dirname(_os.path.abspath(__file__))
_checkout = _os.path.dirname(_here)
if (not _os.path.isdir(_os.path.join(_here, "sinks"))
        and all(_os.path.isfile(_os.path.join(_checkout, plugin, "__init__.py")) for plugin in ("sinks", "sources"))):
    __path__.append(_checkout)
del _os, _here, _checkout
from typing import TYPE_CHECKING

from .errors import (CommitConflictError, CommitIdentifierError, CorruptFileError, InvalidOptionError, NullKeyError,
                     PaimonError, SchemaMismatchError, SnapshotNotFoundError, TableAlreadyExistsError,
                     TableNotFoundError, UnsupportedTypeError)

if TYPE_CHECKING:
    from .catalog import Catalog
    from .snapshot import Snapshot
    from .table import Table

# Catalog, Table and Snapshot load on first use (PEP 562): importing the package alone stays
# light (no pyarrow, numpy or threads), which Spark's Python worker daemon needs before it
# forks (sinks/worker_daemon.py), and `paimon-streaming --help` starts faster.
_LAZY = {"Catalog": "catalog", "Table": "table", "Snapshot": "snapshot"}


def __getattr__(name: str):
    if name in _LAZY:
        import importlib
        value = getattr(importlib.import_module(f".{_LAZY[name]}", __name__), name)
        globals()[name] = value
        return value
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


__all__ = ["Catalog", "Table", "Snapshot", "register", "PaimonError", "SchemaMismatchError", "NullKeyError",
           "InvalidOptionError", "UnsupportedTypeError", "TableNotFoundError", "TableAlreadyExistsError",
           "SnapshotNotFoundError", "CommitConflictError", "CommitIdentifierError", "CorruptFileError"]


FILTER_PUSHDOWN = "spark.sql.python.filterPushdown.enabled"
PARTITION_OVERWRITE_MODE = "spark.sql.sources.partitionOverwriteMode"


def register(spark, filter_pushdown: bool = False) -> None:
    """Register the Spark data sources "paimon" and "kafka-python" (need pyspark; imported
    only here; kafka-python itself is imported only when a Kafka topic is read).

    `filter_pushdown=True` also turns on Spark's filter pushdown to Python data sources for
    this session (`spark.sql.python.filterPushdown.enabled`, off by Spark's default), so batch
    reads prune partitions and files by a query's filters; a session started with that setting
    (builder `.config`, `--conf`, spark-defaults) keeps it. Off by default because Spark 4.x up
    to 4.3 keeps the plan of a pushed-down query on the DataFrame's source: a later query of
    the same DataFrame (or temp view) that pushes no filter reads with the earlier one's filter
    (fixed in Spark's main line, SPARK-58551). Safe with it: a fresh `spark.read` per query.

    `df.write.format("paimon").mode("overwrite")` takes the session's
    `spark.sql.sources.partitionOverwriteMode` (static or dynamic) as it is now, as Paimon's,
    Delta's and Iceberg's connectors do: a Python data source writer is not given the session's
    settings, so a later change of it needs `register` again (or the write's own option).
    """
    from .sinks.datasource import PaimonDataSource, PaimonDataSourceDynamicOverwrite
    from .sources.kafka import KafkaPythonDataSource
    dynamic = (spark.conf.get(PARTITION_OVERWRITE_MODE, None) or "static").strip().lower() == "dynamic"
    spark.dataSource.register(PaimonDataSourceDynamicOverwrite if dynamic else PaimonDataSource)
    spark.dataSource.register(KafkaPythonDataSource)
    if filter_pushdown and not _started_with(spark, FILTER_PUSHDOWN):
        spark.conf.set(FILTER_PUSHDOWN, "true")


def _started_with(spark, key: str) -> bool:
    """Whether the session's start-up configuration sets `key` (a Spark Connect client cannot
    see its server's, so there it counts as unset)."""
    if type(spark).__module__.startswith("pyspark.sql.connect"):
        return False
    return spark.sparkContext.getConf().contains(key)
