"""Spark write side of paimon-streaming, installed as `paimon_streaming.sinks`.

- `paimon_sink(...)`: the function for `df.writeStream.foreachBatch(...)` (exactly-once).
- The "paimon" Python Data Source (`paimon_streaming.register(spark)`) for
  `df.write.format("paimon")` and `df.writeStream.format("paimon")`.
- `ingest.py` (+ `decoders.py`): the Kafka -> Paimon pipeline of `paimon-streaming ingest`;
  `demo_pipeline.py`: the streaming round trip of `paimon-streaming demo`;
  `ingest_command.py`, `demo_command.py`: their command-line entries.

`paimon_sink` is imported on first use, so the command line can list these commands without
importing pyspark.
"""
from typing import Any

__all__ = ["paimon_sink"]


def __getattr__(name: str) -> Any:
    if name == "paimon_sink":
        from .foreach_batch import paimon_sink
        return paimon_sink
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
