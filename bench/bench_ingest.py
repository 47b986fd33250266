"""Kafka -> Paimon ingestion throughput: `paimon-streaming ingest` on a local test broker.

    .venv/bin/python bench/bench_ingest.py [--records 200000] [--source kafka-python]

Starts the tests' KRaft broker (tests/kafka_broker.py, jars through Maven), produces keyed
JSON records (15% tombstones) into a 4-partition topic, then runs the ingest command once
with Trigger.AvailableNow into a primary-key table and reports records/s of the whole run
(Spark start-up excluded: timed from the first to the last batch line) and per batch.
"""
from __future__ import annotations

import argparse
import json
import os
import random
import subprocess
import sys
import tempfile
import time

sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", "tests"))
from kafka_broker import connector_jars, get_broker, unique_topic  # noqa: E402


def main() -> None:
    p = argparse.ArgumentParser()
    p.add_argument("--records", type=int, default=200_000)
    p.add_argument("--keys", type=int, default=50_000)
    p.add_argument("--source", choices=("kafka-python", "kafka"), default="kafka-python")
    p.add_argument("--dv", action="store_true", help="deletion-vectors.enabled=true")
    p.add_argument("--max-offsets-per-trigger", type=int, default=50_000)
    args = p.parse_args()
    broker = get_broker()
    topic = unique_topic("bench")
    broker.create_topic(topic, partitions=4)
    producer, rng = broker.producer(linger_ms=20, batch_size=256 * 1024), random.Random(1)
    t0 = time.perf_counter()
    for i in range(args.records):
        k = rng.randrange(args.keys)
        value = None if rng.random() < 0.15 else json.dumps(
            {"id": k, "customer": f"c{k % 997}", "amount": i * 0.01, "status": "paid", "ts": i}).encode()
        producer.send(topic, key=str(k).encode(), value=value)
    producer.flush()
    print(f"produced {args.records:,} records in {time.perf_counter() - t0:.1f}s")
    wh = tempfile.mkdtemp(prefix="bench-ingest-")
    cmd = [sys.executable, "-u", "-c", "import sys; from paimon_streaming.cli import main; sys.exit(main())",
           "ingest", "--bootstrap-servers", broker.bootstrap, "--topic", topic, "--warehouse", wh,
           "--table", "db.t", "--primary-key", "id", "--bucket", "4", "--trigger", "available-now",
           "--max-offsets-per-trigger", str(args.max_offsets_per_trigger), "--source", args.source,
           "--master", "local[2]", "--conf", "spark.sql.shuffle.partitions=4"]
    if args.dv:
        cmd += ["--option", "deletion-vectors.enabled=true"]
    if args.source == "kafka":
        jars = ":".join(connector_jars())
        cmd += ["--conf", f"spark.driver.extraClassPath={jars}", "--conf", f"spark.executor.extraClassPath={jars}"]
    env = dict(os.environ, PYSPARK_PYTHON=sys.executable, PYSPARK_DRIVER_PYTHON=sys.executable)
    proc = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, env=env)
    first = last = None
    rows = first_rows = 0
    for line in proc.stdout:
        print(line, end="")
        if line.startswith("batch "):
            now = time.perf_counter()
            n = int(line.split(":")[1].split(" rows")[0].replace(",", ""))
            if first is None:
                first, first_rows = now, n
            last = now
            rows += n
    proc.wait()
    if proc.returncode or first is None or first == last:
        raise SystemExit(f"ingest exited with {proc.returncode}")
    print(json.dumps({"source": args.source, "dv": args.dv, "records": rows,
                      "records_per_s_after_first_batch": round((rows - first_rows) / (last - first))}))


if __name__ == "__main__":
    main()
