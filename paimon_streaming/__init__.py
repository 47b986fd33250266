"""paimon-streaming: a pure-Python Apache Paimon table format core.

    import paimon_streaming as ps
    cat = ps.Catalog("/tmp/warehouse")
    t = cat.create_table("db.orders", schema, primary_keys=["id"], options={"bucket": "4"})
    t.write_arrow(batch)
    t.to_arrow()

This package never imports pyspark; the Spark sink and source live in
`paimon_streaming.sinks` and `paimon_streaming.sources`.
"""
from .catalog import Catalog
from .errors import (CommitConflictError, CorruptFileError, InvalidOptionError, NullKeyError, PaimonError,
                     SchemaMismatchError, SnapshotNotFoundError, TableAlreadyExistsError, TableNotFoundError,
                     UnsupportedTypeError)
from .snapshot import Snapshot
from .table import Table

__all__ = ["Catalog", "Table", "Snapshot", "register", "PaimonError", "SchemaMismatchError", "NullKeyError",
           "InvalidOptionError", "UnsupportedTypeError", "TableNotFoundError", "TableAlreadyExistsError",
           "SnapshotNotFoundError", "CommitConflictError", "CorruptFileError"]


def register(spark) -> None:
    """Register the Spark data sources "paimon" and "kafka-python" (need pyspark; imported
    only here; kafka-python itself is imported only when a Kafka stream is read)."""
    from .sinks.datasource import PaimonDataSource
    from .sources.kafka import KafkaPythonDataSource
    spark.dataSource.register(PaimonDataSource)
    spark.dataSource.register(KafkaPythonDataSource)
