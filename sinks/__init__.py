"""Spark write side of paimon-streaming, installed as `paimon_streaming.sinks`.

- `paimon_sink(...)`: the function for `df.writeStream.foreachBatch(...)` (exactly-once).
- The "paimon" Python Data Source (`paimon_streaming.register(spark)`) for
  `df.write.format("paimon")` and `df.writeStream.format("paimon")`.
"""
from .foreach_batch import paimon_sink

__all__ = ["paimon_sink"]
