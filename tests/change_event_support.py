"""What the change-event tests share (test_debezium.py, test_maxwell.py, test_canal.py, ...): Kafka
records as the decoder gets them, and the table state a sequence of decoded rows leaves."""
from __future__ import annotations

import pyarrow as pa


def records(values: list, topic: str = "cdc") -> pa.RecordBatch:
    """Kafka records (no keys) holding `values`, at offsets 0, 1, ... of partition 0."""
    n = len(values)
    return pa.RecordBatch.from_pydict({
        "key": pa.array([None] * n, pa.binary()), "value": pa.array(values, pa.binary()), "topic": [topic] * n,
        "partition": pa.array([0] * n, pa.int32()), "offset": pa.array(range(n), pa.int64())})


def applied(rows: list[dict], key: str = "id") -> dict:
    """The rows by `key` after applying decoded rows (their `_kind`) in order."""
    state: dict = {}
    for r in rows:
        kind = r.pop("_kind")
        if kind == "-D":
            state.pop(r[key], None)
        else:
            state[r[key]] = r
    return state


def ingest_cli(monkeypatch, *args: str) -> tuple[int, list]:
    """`paimon-streaming ingest <args>` with Spark and the run itself stubbed out: its exit code
    and the IngestConfigs it built."""
    from paimon_streaming.cli import main
    from paimon_streaming.sinks import ingest, ingest_command

    seen: list = []

    class Spark:
        def stop(self):
            pass
    monkeypatch.setattr(ingest_command, "spark_session", lambda *a: Spark())
    monkeypatch.setattr(ingest, "run_ingest", lambda spark, cfg, *a: seen.append(cfg) or 0)
    return main(["ingest", "--bootstrap-servers", "127.0.0.1:1", "--no-progress", *args]), seen


def ingest_config(monkeypatch, tmp_path, *flags: str):
    """The IngestConfig `paimon-streaming ingest` builds from its command line with `flags`."""
    code, seen = ingest_cli(monkeypatch, "--topic", "dbserver1.shop.items", "--warehouse", str(tmp_path),
                            "--table", "db.items", "--primary-key", "id", *flags)
    assert code == 0
    return seen[0]


def produce(broker, topic: str, records: list[tuple[bytes | None, bytes | None]]) -> None:
    """(key, value) records into `topic`, in order."""
    producer = broker.producer(linger_ms=5)
    for key, value in records:
        producer.send(topic, key=key, value=value)
    producer.flush()
    producer.close()


def ingest_items(spark, broker, tmp_path, topic: str, key: str = "id", **options) -> tuple[list[dict], list[dict], list[str]]:
    """`paimon-streaming ingest` of `topic` into a new db.items (2 buckets, available-now), its
    primary key (`key`) taken from the change events unless `primary_keys` gives it: (our rows,
    Java's rows, both by key; the log)."""
    import paimon_streaming as ps
    from java_oracle import get_oracle
    from paimon_streaming.sinks.ingest import IngestConfig, run_ingest

    cfg = IngestConfig(bootstrap_servers=broker.bootstrap, warehouse=str(tmp_path / "wh"), table="db.items",
                       topics=(topic,), bucket=2, trigger="available-now", checkpoint=str(tmp_path / "ckpt"), **options)
    lines: list[str] = []
    assert run_ingest(spark, cfg, lines.append) == 0, lines
    assert "primary_keys" in options or any(f"primary key ['{key}'] from the change events" in line for line in lines), lines
    ours = ps.Catalog(str(tmp_path / "wh")).get_table("db.items").to_arrow().sort_by(key).to_pylist()
    java = sorted(get_oracle().read(str(tmp_path / "wh" / "db.db" / "items")), key=lambda r: r[key])
    return ours, java, lines
