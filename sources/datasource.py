"""The read side of the "paimon" data source: schema, batch reader, stream reader.

`paimon_streaming.sinks.datasource.PaimonDataSource` (registered by
`paimon_streaming.register(spark)`) delegates its read methods here; see `reader.py` (batch
reads, time travel, system tables) and `stream_reader.py` (streaming) for the options.
"""
from __future__ import annotations

from typing import Mapping

import pyarrow as pa
from pyspark.sql.datasource import DataSourceReader, DataSourceStreamReader
from pyspark.sql.pandas.types import from_arrow_schema
from pyspark.sql.types import StructType

from paimon_streaming import row_tracking
from paimon_streaming.errors import InvalidOptionError, SchemaMismatchError, SnapshotNotFoundError
from paimon_streaming.system_tables import system_table_schema

from .options import ReadSpec
from .partitions import spark_schema, with_field_ids
from .reader import batch_reader, read_schema


def source_schema(options: Mapping[str, str]) -> StructType:
    """The Spark schema of a read: the table's columns (the time-travel snapshot's schema when
    one is given by `snapshot-id` / `tag` / `timestamp-millis`, see `ReadSpec.reads_old_schema`), plus the row-kind column when `rowKindColumn` is set; or a system table's.
    Each column carries its field id (`with_field_ids`): a DataFrame reads the fields it was defined with."""
    spec = ReadSpec.parse(options)
    if spec.system_table is not None:
        return from_arrow_schema(system_table_schema(spec.system_table))
    table = spec.table()
    schema = table.schema
    if spec.reads_old_schema:
        try:
            schema = read_schema(table, spec)[1]
        except SnapshotNotFoundError:
            pass  # a stream's start snapshot may not exist yet; a batch read reports it when planning
    arrow = schema.arrow_schema()
    if spec.row_tracking:
        if not row_tracking.enabled(schema.options) or schema.primary_keys:
            raise InvalidOptionError(f"table {table.name} does not track rows: '$row_tracking' reads tables created "
                                     f"with '{row_tracking.OPTION}' = 'true'")
        arrow = pa.schema(list(arrow) + list(row_tracking.ARROW_FIELDS))
    if spec.row_kind_column is not None:
        if spec.row_kind_column in arrow.names:
            raise SchemaMismatchError(f"rowKindColumn '{spec.row_kind_column}' is already a column of table "
                                      f"{table.name}; choose another name")
        arrow = arrow.append(pa.field(spec.row_kind_column, pa.string(), False))
    return with_field_ids(spark_schema(arrow), schema)


def reader(options: Mapping[str, str], schema: StructType) -> DataSourceReader:
    return batch_reader(ReadSpec.parse(options), schema)


def stream_reader(options: Mapping[str, str], schema: StructType) -> DataSourceStreamReader:
    try:
        from .stream_reader import PaimonStreamReader
    except ImportError as exc:  # ReadLimit / admission control arrived in PySpark 4.2
        raise ImportError(f"spark.readStream.format('paimon') needs PySpark >= 4.2 (admission control API): "
                          f"{exc}") from exc
    return PaimonStreamReader(ReadSpec.parse(options), schema)
