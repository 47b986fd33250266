"""Spark read side of paimon-streaming, installed as `paimon_streaming.sources`.

`paimon_streaming.register(spark)` registers the "paimon" data source; its read methods live
here, on top of the core's `TableScan`/`SplitReader` and `streaming_scan`:

- `reader.py`: `spark.read.format("paimon")`: batch reads, filter pushdown, projection, time
  travel, system tables (`load("<table>$snapshots")`, ...);
- `stream_reader.py`: `spark.readStream.format("paimon")`: start modes, row kinds, admission
  control, consumer progress;
- `options.py`: the read options; `filters.py`: Spark filters -> filter terms;
  `partitions.py`: input partitions and the executor-side read; `spark_casts.py`: a read schema's
  other types, cast as Spark's CAST casts them in the session's time zone;
- `datasource.py`: schema / reader / streamReader entry points of the data source;
- `kafka.py`: the "kafka-python" source, streams and batch queries (Apache Kafka through
  kafka-python, with the options and columns of Spark's Kafka source), also registered by
  `register(spark)`; `kafka_options.py` its options, `kafka_offsets.py` the partitions read and
  their offsets, `kafka_batches.py` a fetch response's records decoded into Arrow.
"""
