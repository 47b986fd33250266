"""Start-up of the Spark commands as a user runs them: `paimon-streaming demo` and `ingest`.

    .venv/bin/python bench/bench_startup.py [--runs 3] [--baseline REV] [--commands demo,ingest]
        [--records 2500] [--batch-records 500]

Each run starts every command in a fresh process from a checkout's root (the source tree is
what the driver and Spark's Python workers import), with the JVM options a user gets
(PYSPARK_SUBMIT_ARGS unset), and times, from the process start: the first written batch's
line, batch 0's own seconds as the command reports them, the median of the later batches' and
the whole run.
- `demo`: the default run (20 batches of 20,000 changes, one a second) in a new warehouse;
- `ingest`: a keyed JSON topic on the tests' Kafka broker (tests/kafka_broker.py; `--records`,
  default 2,500) into a deletion-vector table, `--trigger available-now`, batches of
  `--batch-records` (default 500), kafka-python source, local[2].
With `--baseline REV`, that revision is checked out beside this one (`git worktree`) and run
in turn with it, so both get the same machine; medians and the ranges are printed per checkout.
"""
from __future__ import annotations

import argparse
import json
import os
import re
import shutil
import statistics
import subprocess
import sys
import tempfile
import time

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, os.path.join(ROOT, "tests"))
CLI = "import sys; from paimon_streaming.cli import main; sys.exit(main())"
BATCH = {"demo": re.compile(r"^write batch +(\d+): .* in ([0-9.]+)s"),
         "ingest": re.compile(r"^batch (\d+): .* in ([0-9.]+)s")}


def timed(checkout: str, args: list[str], batch: re.Pattern) -> dict[str, float]:
    """Run the CLI with `args` from `checkout`; seconds to the first batch line, batch 0's, the
    median of the later batches', total."""
    env = {k: v for k, v in os.environ.items() if k != "PYSPARK_SUBMIT_ARGS"}
    env["PYSPARK_PYTHON"] = sys.executable
    start = time.perf_counter()
    proc = subprocess.Popen([sys.executable, "-u", "-c", CLI, *args], cwd=checkout, env=env,
                            stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    out: dict[str, float] = {}
    lines, later = [], {}
    for line in proc.stdout:
        lines.append(line)
        match = batch.match(line.strip())
        if match and "first_batch_line_s" not in out:
            out["first_batch_line_s"], out["batch0_s"] = time.perf_counter() - start, float(match.group(2))
        elif match:
            later[int(match.group(1))] = float(match.group(2))  # ingest repeats its last line when caught up
    if proc.wait() != 0 or "first_batch_line_s" not in out or not later:
        raise SystemExit(f"{args[0]} from {checkout} failed (exit {proc.returncode}):\n{''.join(lines[-30:])}")
    out["later_batch_s"] = statistics.median(later.values())
    out["total_s"] = time.perf_counter() - start
    return out


def ingest_topic(records: int) -> str:
    """The tests' broker with a new topic of `records` keyed JSON records (a fifth of them
    updates); its bootstrap and topic as 'host:port/topic'."""
    from kafka_broker import get_broker, unique_topic
    from test_ingest import keyed_messages, produce
    broker = get_broker()
    topic = unique_topic("startup")
    broker.create_topic(topic, partitions=3)
    produce(broker, topic, keyed_messages(records, records // 5, seed=11), lambda r: json.dumps(r).encode())
    return f"{broker.bootstrap}/{topic}"


def command_args(command: str, warehouse: str, kafka: str | None, batch_records: int) -> list[str]:
    if command == "demo":
        return ["demo", "--warehouse", warehouse, "--no-progress"]
    bootstrap, topic = kafka.split("/", 1)
    return ["ingest", "--bootstrap-servers", bootstrap, "--topic", topic, "--warehouse", warehouse,
            "--table", "db.t", "--primary-key", "id", "--bucket", "2", "--option", "deletion-vectors.enabled=true",
            "--master", "local[2]", "--conf", "spark.sql.shuffle.partitions=2", "--source", "kafka-python",
            "--trigger", "available-now", "--max-offsets-per-trigger", str(batch_records), "--no-progress"]


def _median_and_range(values: list[float], digits: int) -> str:
    return f"{statistics.median(values):.{digits}f} ({min(values):.{digits}f}-{max(values):.{digits}f})"


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--runs", type=int, default=3)
    p.add_argument("--baseline", default=None, help="a git revision to run in turn with this checkout")
    p.add_argument("--commands", default="demo,ingest")
    p.add_argument("--records", type=int, default=2500, help="ingest: records in the topic (default 2500)")
    p.add_argument("--batch-records", type=int, default=500, help="ingest: records a micro-batch (default 500)")
    args = p.parse_args()
    commands = [c for c in args.commands.split(",") if c]
    work = tempfile.mkdtemp(prefix="bench-startup-")
    checkouts = {"this checkout": ROOT}
    try:
        if args.baseline:
            base = os.path.join(work, "baseline")
            subprocess.run(["git", "-C", ROOT, "worktree", "add", "-q", "--detach", base, args.baseline], check=True)
            checkouts[f"baseline {args.baseline}"] = base
        kafka = ingest_topic(args.records) if "ingest" in commands else None
        results: dict[tuple[str, str], list[dict[str, float]]] = {}
        for run in range(args.runs):
            for command in commands:
                for name, checkout in checkouts.items():
                    warehouse = os.path.join(work, "wh")
                    shutil.rmtree(warehouse, ignore_errors=True)
                    r = timed(checkout, command_args(command, warehouse, kafka, args.batch_records), BATCH[command])
                    results.setdefault((command, name), []).append(r)
                    print(json.dumps({"run": run + 1, "command": command, "checkout": name, **r}), flush=True)
        print(f"\nmedian (range) over {args.runs} runs, seconds from the process start (load average "
              f"{os.getloadavg()[0]:.1f})")
        print(f"{'command':<8}{'checkout':<26}{'first batch line':>22}{'batch 0':>20}{'later batches':>20}"
              f"{'whole run':>22}")
        for (command, name), rs in results.items():
            cells = [_median_and_range([r[k] for r in rs], 2 if k == "later_batch_s" else 1)
                     for k in ("first_batch_line_s", "batch0_s", "later_batch_s", "total_s")]
            print(f"{command:<8}{name:<26}{cells[0]:>22}{cells[1]:>20}{cells[2]:>20}{cells[3]:>22}")
    finally:
        if args.baseline:
            subprocess.run(["git", "-C", ROOT, "worktree", "remove", "--force", os.path.join(work, "baseline")])
        shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    main()
