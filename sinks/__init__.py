"""Spark write side of paimon-streaming, installed as `paimon_streaming.sinks`.

- `paimon_sink(...)`: the function for `df.writeStream.foreachBatch(...)` (exactly-once).
- The "paimon" Python Data Source (`paimon_streaming.register(spark)`) for
  `df.write.format("paimon")` and `df.writeStream.format("paimon")`.
- `ingest.py` (+ `decoders.py`): the Kafka -> Paimon pipeline of `paimon-streaming ingest`;
  `demo_pipeline.py`: the streaming round trip of `paimon-streaming demo`.
"""
from .foreach_batch import paimon_sink

__all__ = ["paimon_sink"]
