"""Spark write side of paimon-streaming, installed as `paimon_streaming.sinks`.

The Structured Streaming sink (`paimon_sink` for foreachBatch and the "paimon" data source
writer) is built on the core's `Table.write_messages` and `FileStoreCommit`.
"""
