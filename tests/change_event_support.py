"""What the change-event tests share (test_debezium.py, test_maxwell.py, test_canal.py): Kafka
records as the decoder gets them, and the table state a sequence of decoded rows leaves."""
from __future__ import annotations

import pyarrow as pa


def records(values: list, topic: str = "cdc") -> pa.RecordBatch:
    """Kafka records (no keys) holding `values`, at offsets 0, 1, ... of partition 0."""
    n = len(values)
    return pa.RecordBatch.from_pydict({
        "key": pa.array([None] * n, pa.binary()), "value": pa.array(values, pa.binary()), "topic": [topic] * n,
        "partition": pa.array([0] * n, pa.int32()), "offset": pa.array(range(n), pa.int64())})


def applied(rows: list[dict]) -> dict[int, dict]:
    """The rows by `id` after applying decoded rows (their `_kind`) in order."""
    state: dict[int, dict] = {}
    for r in rows:
        kind = r.pop("_kind")
        if kind == "-D":
            state.pop(r["id"], None)
        else:
            state[r["id"]] = r
    return state
