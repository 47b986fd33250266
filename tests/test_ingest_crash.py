"""Exactly-once Kafka ingestion under SIGKILL: `paimon-streaming ingest` runs as its own process,
is stopped with Ctrl-C once and killed at random moments twice, each time restarted
from its checkpoint; the table then equals the model of the topic (latest value per key,
deleted keys absent), read by us and by pypaimon."""
from __future__ import annotations

import json
import os
import random
import signal
import subprocess
import sys
import time

import paimon_streaming as ps
from conftest import pypaimon_read
from kafka_broker import get_broker, unique_topic
from spark_support import spark_env
from test_ingest import keyed_messages, model_of, produce, table_state

CLI = "import sys; from paimon_streaming.cli import main; sys.exit(main())"


def start(args: list[str]) -> subprocess.Popen:
    return subprocess.Popen([sys.executable, "-u", "-c", CLI, "ingest", *args], env=dict(os.environ, **spark_env()),
                            stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)


def test_sigkill_at_random_moments_then_restart_is_exactly_once(tmp_path):
    broker = get_broker()
    topic = unique_topic("crash")
    broker.create_topic(topic, partitions=3)
    rng = random.Random(int(os.environ.get("PAIMON_CRASH_SEED", "5")))
    messages = keyed_messages(2500, 500, seed=11)
    produce(broker, topic, messages, lambda r: json.dumps(r).encode())
    wh = str(tmp_path / "wh")
    base = ["--bootstrap-servers", broker.bootstrap, "--topic", topic, "--warehouse", wh, "--table", "db.t",
            "--primary-key", "id", "--bucket", "2", "--option", "deletion-vectors.enabled=true",
            "--master", "local[2]", "--conf", "spark.sql.shuffle.partitions=2"]
    kills = []
    # Ctrl-C first (a clean stop), then SIGKILLs; each run resumes from the checkpoint.
    for round_, sig in enumerate((signal.SIGINT, signal.SIGKILL, signal.SIGKILL)):
        p = start(base + ["--trigger", "1s", "--max-offsets-per-trigger", "500"])
        target, seen, out = rng.randint(1, 2), 0, ""
        deadline = time.time() + 240
        while time.time() < deadline:
            line = p.stdout.readline()
            if not line:
                break
            out += line
            if line.startswith("batch "):
                seen += 1
                if seen >= target:
                    time.sleep(rng.uniform(0.0, 1.2))  # land inside a later batch's write or commit
                    break
        p.send_signal(sig)
        rest, _ = p.communicate(timeout=120)
        assert seen >= target, f"round {round_}: no progress before the kill\n{out[-3000:]}"
        if sig == signal.SIGINT:
            assert p.returncode == 0 and "stopped; resume with the same command" in rest, out + rest
        kills.append(seen)
        # More records (updates and deletes of existing keys) arrive while the job is down.
        more = keyed_messages(200, 500, seed=100 + round_, start=10_000 * (round_ + 1))
        produce(broker, topic, more, lambda r: json.dumps(r).encode())
        messages += more
    p = start(base + ["--trigger", "available-now"])  # the rest in one batch
    out, _ = p.communicate(timeout=600)
    assert p.returncode == 0, out[-4000:]
    expected = model_of(messages)
    table = ps.Catalog(wh).get_table("db.t")
    assert table_state(table.to_arrow()) == expected, f"kills after batches {kills}"
    assert table_state(pypaimon_read(wh, "db.t")) == expected, f"kills after batches {kills}"
    appends = [s.commit_identifier for s in table.snapshots() if s.commit_kind == "APPEND"]
    assert appends == sorted(set(appends)), f"a batch was committed twice: {appends}"


def test_a_kill_while_batch_0_offsets_were_written_does_not_stop_reruns(tmp_path):
    """Killed while Spark wrote batch 0's offsets, the job left offsets/.0.<uuid>.tmp, and Spark
    refused every rerun (STATE_STORE_CHECKPOINT_LOCATION_NOT_EMPTY on batch 0)."""
    broker = get_broker()
    topic = unique_topic("first-offsets")
    broker.create_topic(topic, partitions=1)
    messages = keyed_messages(50, 20, seed=3)
    produce(broker, topic, messages, lambda r: json.dumps(r).encode())
    wh = str(tmp_path / "wh")
    offsets = tmp_path / "wh" / ".checkpoints" / "ingest-db.t" / "offsets"
    offsets.mkdir(parents=True)
    (offsets / ".0.5f0c1c1e-7a4e-4d8e-9d57-3c1f6c6a9b10.tmp").write_text("v1\n")  # as the kill left it
    (offsets / "..0.5f0c1c1e-7a4e-4d8e-9d57-3c1f6c6a9b10.tmp.crc").write_bytes(b"crc")
    p = start(["--bootstrap-servers", broker.bootstrap, "--topic", topic, "--warehouse", wh, "--table", "db.t",
               "--primary-key", "id", "--bucket", "1", "--master", "local[1]", "--trigger", "available-now"])
    out, _ = p.communicate(timeout=600)
    assert p.returncode == 0, out[-4000:]
    assert table_state(ps.Catalog(wh).get_table("db.t").to_arrow()) == model_of(messages)
