"""Kafka -> table ingestion throughput, against Spark's own pipeline in the same run.

    .venv/bin/python bench/bench_ingest.py [--records 200000] [--runs 3] [--dv]
        [--format json|debezium-json [--envelope] [--tables N]]

Starts the tests' KRaft broker (tests/kafka_broker.py, jars through Maven) and produces keyed
JSON records (15% tombstones) into a 4-partition topic once; with `--format debezium-json`,
Debezium change events of the same rows instead (inserts of new keys, updates, 15% deletes;
`--envelope`: each in Kafka Connect's schema envelope, as with `schemas.enable=true`). Then, per run, every system reads
the whole topic with Trigger.AvailableNow in micro-batches of --max-offsets-per-trigger, each in
its own process on local[2]:

- `paimon-kafka-python`: `paimon-streaming ingest` with the pip-only kafka-python source;
- `paimon-kafka`: `paimon-streaming ingest` with Spark's Kafka connector;
- `paimon-database` (with `--tables N`: the events' keys spread over N source tables):
  `paimon-streaming ingest --database` with kafka-python, a table per source table, where the
  two above take the topic into one table (`--source-table '.*'`: the same rows);
- `spark-parquet` (the anchor): Spark's Kafka connector -> `from_json` -> Spark's Parquet file
  sink, no upserts (what Spark itself does with the same records; change events: the image each
  event carries, parsed from the same envelope, without applying them).

Each reports records/s from the end of its first micro-batch to the end of its last (Spark
and Python worker start-up excluded the same way for all); the table prints medians over the
runs and each system's ratio to the anchor of the same run, then where a batch's time goes:
for ingest the sink's steps from its log line (read = Kafka fetch and conversion to Arrow,
transform = decoding, write = files with lookup and compaction, commit) and the rest of the
trigger (`spark`: offset and commit logs, planning); for the anchor Spark's addBatch (read,
from_json and Parquet in its tasks) and the rest.
"""
from __future__ import annotations

import argparse
import datetime as dt
import json
import os
import random
import re
import statistics
import subprocess
import sys
import tempfile
import time

sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", "tests"))
from kafka_broker import connector_jars, get_broker, unique_topic  # noqa: E402

SYSTEMS = ("spark-parquet", "paimon-kafka-python", "paimon-kafka")  # and paimon-database with --tables
VALUE_DDL = "id BIGINT, customer STRING, amount DOUBLE, status STRING, ts BIGINT"
ROW_STRUCT = "STRUCT<" + ", ".join(c.replace(" ", ": ", 1) for c in VALUE_DDL.split(", ")) + ">"
EVENT_DDL = f"op STRING, before {ROW_STRUCT}, after {ROW_STRUCT}"
ENVELOPE_DDL = f"payload STRUCT<op: STRING, before: {ROW_STRUCT}, after: {ROW_STRUCT}>"
CONNECT_TYPES = {"BIGINT": "int64", "STRING": "string", "DOUBLE": "float64"}


def produce(broker, records: int, keys: int, fmt: str = "json", envelope: bool = False, tables: int = 1) -> str:
    topic = unique_topic("bench")
    broker.create_topic(topic, partitions=4)
    producer, rng = broker.producer(linger_ms=20, batch_size=256 * 1024), random.Random(1)
    state: dict[int, dict] = {}
    t0 = time.perf_counter()
    for i in range(records):
        k = rng.randrange(keys)
        row = {"id": k, "customer": f"c{k % 997}", "amount": i * 0.01, "status": "paid", "ts": i}
        if fmt == "json":
            value = None if rng.random() < 0.15 else json.dumps(row).encode()
        else:
            value = json.dumps(change_event(state, row, rng, envelope, f"orders{k % tables}")).encode()
        key = str(k) if fmt == "json" else json.dumps({"id": k})  # Debezium keys by the source's key columns
        producer.send(topic, key=key.encode(), value=value)
    producer.flush()
    print(f"produced {records:,} records in {time.perf_counter() - t0:.1f}s", file=sys.stderr)
    return topic


def change_event(state: dict[int, dict], row: dict, rng: random.Random, envelope: bool, table: str) -> dict:
    """A Debezium event for `row`'s key (the model `state` says which) in source table
    `table`: create, update, or delete."""
    k = row["id"]
    if k in state and rng.random() < 0.15:
        event = {"op": "d", "before": state.pop(k), "after": None}
    else:
        event = {"op": "u" if k in state else "c", "before": state.get(k), "after": row}
        state[k] = row
    event.update(source={"connector": "postgresql", "db": "shop", "table": table, "lsn": row["ts"]},
                 ts_ms=1_700_000_000_000 + row["ts"], transaction=None)
    if not envelope:
        return event
    image = {"type": "struct", "optional": True, "name": "shop.orders.Value", "fields": [
        {"type": CONNECT_TYPES[t], "optional": name != "id", "field": name}
        for name, t in (c.split(" ") for c in VALUE_DDL.split(", "))]}
    return {"schema": {"type": "struct", "name": "shop.orders.Envelope", "optional": False, "fields": [
        dict(image, field="before"), dict(image, field="after"),
        {"type": "string", "optional": False, "field": "op"}]}, "payload": event}


# the ingest command with the sink's per-batch log line (its steps' seconds) on stderr
LOGGED_MAIN = ("import logging, sys; logging.basicConfig(format='%(message)s'); "
               "logging.getLogger('paimon_streaming.sink').setLevel(logging.INFO); "
               "from paimon_streaming.cli import main; sys.exit(main())")
SINK_LINE = re.compile(r"paimon_sink table=\S+ batch=(\d+) .* seconds=([\d.]+) \((.*)\)")


PROGRESS_LINE = re.compile(r"^batch (\d+): ([\d,]+) rows in ([\d.]+)s")


def stage_breakdown(lines: list[str]) -> dict[str, float]:
    """Median seconds per step of the full batches after the first, from the sink's log lines:
    the sink's own steps (prepare, plan, read = Kafka fetch and conversion to Arrow, transform
    = decoding, write = files with lookup and compaction, commit) and `spark`: the rest of the
    batch's trigger time (offset and commit logs, planning, scheduling)."""
    sink, trigger = {}, {}
    for line in lines:
        if m := SINK_LINE.search(line):
            steps = dict((k, float(v)) for k, v in (kv.split("=") for kv in m.group(3).split()))
            sink[int(m.group(1))] = (float(m.group(2)), steps)
        elif m := PROGRESS_LINE.match(line):
            trigger[int(m.group(1))] = float(m.group(3))
    timed = [sink[b] + (trigger[b],) for b in sorted(sink) if b in trigger and b > 0][:-1]  # the last is partial
    if not timed:
        return {}
    out = {k: statistics.median(steps.get(k, 0.0) for _, steps, _ in timed)
           for k in dict.fromkeys(k for _, steps, _ in timed for k in steps)}
    out["spark"] = max(statistics.median(t - total for total, _, t in timed), 0.0)
    return out


def rate(batches: list[tuple[float, int]]) -> tuple[int, float]:
    """(records, records/s) after the first batch, from (end time, records) per batch."""
    if len(batches) < 2:
        raise SystemExit("too few micro-batches to time; give more --records")
    (first_end, _), (last_end, _) = batches[0], batches[-1]
    after = sum(n for _, n in batches[1:])
    return sum(n for _, n in batches), after / (last_end - first_end)


def run_ingest(broker, topic: str, source: str, dv: bool, max_offsets: int, fmt: str,
               database: bool = False) -> tuple[int, float]:
    """`paimon-streaming ingest` into one table (or with `database`, a table per source table)."""
    wh = tempfile.mkdtemp(prefix="bench-ingest-")
    cmd = [sys.executable, "-u", "-c", LOGGED_MAIN, "ingest", "--format", fmt,
           "--bootstrap-servers", broker.bootstrap, "--topic", topic, "--warehouse", wh,
           "--bucket", "4", "--trigger", "available-now",
           "--max-offsets-per-trigger", str(max_offsets), "--source", source,
           "--master", "local[2]", "--conf", "spark.sql.shuffle.partitions=4"]
    if database:
        cmd += ["--database", "db"]  # keys and columns from the events (--envelope)
    else:
        cmd += ["--table", "db.t", "--primary-key", "id"]
        if fmt != "json":
            cmd += ["--schema", VALUE_DDL, "--source-table", ".*"]
    if dv:
        cmd += ["--option", "deletion-vectors.enabled=true"]
    if source == "kafka":
        jars = ":".join(connector_jars())
        cmd += ["--conf", f"spark.driver.extraClassPath={jars}", "--conf", f"spark.executor.extraClassPath={jars}"]
    env = dict(os.environ, PYSPARK_PYTHON=sys.executable, PYSPARK_DRIVER_PYTHON=sys.executable)
    proc = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, env=env)
    batches, out = [], []
    for line in proc.stdout:
        out.append(line)
        if line.startswith("batch "):
            batches.append((time.perf_counter(), int(line.split(":")[1].split(" rows")[0].replace(",", ""))))
    if proc.wait():
        raise SystemExit(f"ingest ({source}) exited with {proc.returncode}:\n{''.join(out[-40:])}")
    return rate(batches) + ({} if database else stage_breakdown(out),)  # per table: not one line per batch


def anchor_job(bootstrap: str, topic: str, max_offsets: int, fmt: str, envelope: bool) -> None:
    """Runs in its own process: Spark's Kafka source -> from_json -> Parquet file sink; prints
    the (end, records) of each micro-batch as JSON."""
    from pyspark.sql import SparkSession
    from pyspark.sql import functions as F
    jars = ":".join(connector_jars())
    spark = (SparkSession.builder.master("local[2]").appName("bench-spark-parquet")
             .config("spark.driver.extraClassPath", jars).config("spark.executor.extraClassPath", jars)
             .config("spark.sql.shuffle.partitions", "4").config("spark.ui.enabled", "false").getOrCreate())
    spark.sparkContext.setLogLevel("ERROR")
    out = tempfile.mkdtemp(prefix="bench-spark-parquet-")
    records = (spark.readStream.format("kafka").option("kafka.bootstrap.servers", bootstrap)
               .option("subscribe", topic).option("startingOffsets", "earliest")
               .option("maxOffsetsPerTrigger", max_offsets).load())
    text = F.col("value").cast("string")
    if fmt == "json":
        rows = records.select(F.from_json(text, VALUE_DDL).alias("r")).select("r.*")
    else:
        event = F.from_json(text, ENVELOPE_DDL).getField("payload") if envelope else F.from_json(text, EVENT_DDL)
        rows = records.select(event.alias("e")).select(
            F.when(F.col("e.op") == "d", F.col("e.before")).otherwise(F.col("e.after")).alias("r"),
            F.col("e.op")).select("r.*", "op")
    query = (rows.writeStream.format("parquet").option("path", f"{out}/data")
             .option("checkpointLocation", f"{out}/ckpt").trigger(availableNow=True).start())
    query.awaitTermination()
    batches, steps = [], []
    for p in query.recentProgress:
        if p["numInputRows"]:
            start = dt.datetime.fromisoformat(p["timestamp"].replace("Z", "+00:00")).timestamp()
            batches.append((start + p["durationMs"]["triggerExecution"] / 1000, p["numInputRows"]))
            add = p["durationMs"]["addBatch"] / 1000
            steps.append({"read+decode+write": add, "spark": p["durationMs"]["triggerExecution"] / 1000 - add})
    timed = steps[1:-1] or steps
    print(json.dumps([batches, {k: statistics.median(s[k] for s in timed) for k in timed[0]}]))
    spark.stop()


def run_anchor(broker, topic: str, max_offsets: int, fmt: str, envelope: bool) -> tuple[int, float]:
    env = dict(os.environ, PYSPARK_PYTHON=sys.executable, PYSPARK_DRIVER_PYTHON=sys.executable)
    proc = subprocess.run([sys.executable, __file__, "--anchor-job", broker.bootstrap, topic, str(max_offsets),
                           fmt, str(envelope)], capture_output=True, text=True, env=env)
    if proc.returncode:
        raise SystemExit(f"the Spark anchor failed:\n{proc.stdout[-3000:]}\n{proc.stderr[-3000:]}")
    batches, breakdown = json.loads(proc.stdout.strip().splitlines()[-1])
    return rate([tuple(b) for b in batches]) + (breakdown,)


def main() -> None:
    if len(sys.argv) == 7 and sys.argv[1] == "--anchor-job":
        anchor_job(sys.argv[2], sys.argv[3], int(sys.argv[4]), sys.argv[5], sys.argv[6] == "True")
        return
    p = argparse.ArgumentParser()
    p.add_argument("--records", type=int, default=200_000)
    p.add_argument("--keys", type=int, default=50_000)
    p.add_argument("--runs", type=int, default=3)
    p.add_argument("--systems", default=",".join(SYSTEMS))
    p.add_argument("--dv", action="store_true", help="paimon tables with deletion-vectors.enabled=true")
    p.add_argument("--max-offsets-per-trigger", type=int, default=50_000)
    p.add_argument("--format", choices=("json", "debezium-json"), default="json")
    p.add_argument("--envelope", action="store_true", help="debezium-json: events in Kafka Connect's schema envelope")
    p.add_argument("--tables", type=int, default=1, help="debezium-json --envelope: source tables the keys spread "
                   "over; adds the system paimon-database (ingest --database)")
    args = p.parse_args()
    if args.tables > 1 and not (args.format == "debezium-json" and args.envelope):
        raise SystemExit("--tables needs --format debezium-json --envelope (new tables take the envelope's columns)")
    systems = [s for s in args.systems.split(",") if s] + ["paimon-database"] * (args.tables > 1)
    broker = get_broker()
    topic = produce(broker, args.records, args.keys, args.format, args.envelope, args.tables)
    results: dict[str, list[float]] = {s: [] for s in systems}
    ratios: dict[str, list[float]] = {s: [] for s in systems}
    breakdowns: dict[str, list[dict[str, float]]] = {s: [] for s in systems}
    for run in range(args.runs):
        measured = {}
        for system in systems:
            if system == "spark-parquet":
                records, per_s, steps = run_anchor(broker, topic, args.max_offsets_per_trigger, args.format,
                                                   args.envelope)
            elif system == "paimon-database":
                records, per_s, steps = run_ingest(broker, topic, "kafka-python", args.dv,
                                                   args.max_offsets_per_trigger, args.format, database=True)
            else:
                records, per_s, steps = run_ingest(broker, topic, system.removeprefix("paimon-"), args.dv,
                                                   args.max_offsets_per_trigger, args.format)
            measured[system] = per_s
            results[system].append(per_s)
            breakdowns[system].append(steps)
            print(json.dumps({"run": run, "system": system, "dv": args.dv, "format": args.format,
                              "envelope": args.envelope, "records": records,
                              "records_per_s_after_first_batch": round(per_s),
                              "median_batch_seconds_per_step": {k: round(v, 3) for k, v in steps.items()}}))
        for system in systems:
            if "spark-parquet" in measured:
                ratios[system].append(measured[system] / measured["spark-parquet"])
    load = os.getloadavg()[0]
    print(f"\n{args.records:,} {args.format} records{' (schema envelopes)' * args.envelope}"
          f"{f' of {args.tables} source tables' * (args.tables > 1)}, batches of "
          f"{args.max_offsets_per_trigger:,}, local[2], dv={args.dv}, medians of {args.runs} runs (load average {load:.1f})")
    print(f"{'system':<22}{'records/s':>12}{'x spark-parquet':>18}")
    for system in systems:
        ratio = f"{statistics.median(ratios[system]):.2f}" if ratios[system] else "-"
        print(f"{system:<22}{statistics.median(results[system]):>12,.0f}{ratio:>18}")
    print("\nwhere a batch's time goes (seconds per full batch after the first, medians):")
    for system in systems:
        steps = dict.fromkeys(k for b in breakdowns[system] for k in b)
        print(f"  {system:<20}" + "  ".join(
            f"{k} {statistics.median(b.get(k, 0.0) for b in breakdowns[system]):.3f}" for k in steps))


if __name__ == "__main__":
    main()
