"""Spark read side of paimon-streaming, installed as `paimon_streaming.sources`.

The streaming and batch "paimon" data source is built on the core's `TableScan` and
`SplitReader`.
"""
