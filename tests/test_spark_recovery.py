"""Exactly-once under crashes: a real Spark driver process dies at chosen and at random moments
and restarts from its checkpoint; afterwards every input row is applied exactly once."""
from __future__ import annotations

import os
import random
import signal
import subprocess
import sys
import time

import pyarrow as pa

import paimon_streaming as ps
from conftest import pypaimon_read
from spark_support import spark_env
from test_spark_sink import write_input_files

JOB = os.path.join(os.path.dirname(__file__), "spark_crash_job.py")
N_FILES, ROWS = 10, 50


def input_batches() -> list[pa.Table]:
    rng = random.Random(11)
    out = []
    for b in range(N_FILES):
        ids = list(range(b * ROWS, (b + 1) * ROWS))
        out.append(pa.table({"id": pa.array(ids, pa.int64()),
                             "k": pa.array([rng.randrange(80) for _ in ids], pa.int64()),
                             "v": [f"f{b}-{i}" for i in ids]}))
    return out


def start_job(args: list[str]) -> subprocess.Popen:
    env = dict(os.environ, **spark_env())
    return subprocess.Popen([sys.executable, JOB, *args], env=env, stdout=subprocess.PIPE,
                            stderr=subprocess.STDOUT, text=True)


def batches_done(output: str) -> int:
    return output.count(" done\n")


def test_kill_and_restart_applies_every_row_exactly_once(tmp_path):
    batches = input_batches()
    source, warehouse, ckpt = str(tmp_path / "in"), str(tmp_path / "wh"), str(tmp_path / "ckpt")
    write_input_files(source, batches)
    base = [source, warehouse, ckpt]
    log = []
    # Crashes at exact moments of the commit protocol.
    for point, batch in (("files-written", 1), ("snapshot-only", 3), ("committed", 5)):
        p = start_job(base + [point, str(batch)])
        out, _ = p.communicate(timeout=600)
        log.append((point, p.returncode, batches_done(out)))
        assert p.returncode == 137, f"{point}: expected the injected crash\n{out[-3000:]}"
    # SIGKILL at a random moment while batches are being written and committed (the ingest
    # tests kill at random more often).
    rng = random.Random(int(os.environ.get("PAIMON_CRASH_SEED", "7")))
    p = start_job(base)
    done_before, out = 0, ""
    deadline, target = time.time() + 300, rng.randint(1, 2)
    while time.time() < deadline:
        line = p.stdout.readline()
        if not line:
            break
        out += line
        if " done" in line:
            done_before += 1
            if done_before >= target:
                time.sleep(rng.uniform(0.0, 1.5))  # land inside the next batch
                break
    p.send_signal(signal.SIGKILL)
    p.wait()
    log.append(("sigkill", p.returncode, done_before))
    # Final run to completion.
    p = start_job(base)
    out, _ = p.communicate(timeout=600)
    assert p.returncode == 0, out[-3000:]
    assert "all batches done" in out

    events = ps.Catalog(warehouse).get_table("db.events").to_arrow()
    ids = events.column("id").to_pylist()
    assert len(ids) == len(set(ids)), f"duplicated rows after restarts: {log}"
    assert sorted(ids) == list(range(N_FILES * ROWS)), f"lost rows after restarts: {log}"
    model = {}
    for b in batches:
        model.update(zip(b.column("k").to_pylist(), b.column("v").to_pylist()))
    latest = ps.Catalog(warehouse).get_table("db.latest")
    assert dict(zip(*latest.to_arrow().select(["k", "v"]).to_pydict().values())) == model
    theirs = pypaimon_read(warehouse, "db.latest")
    assert dict(zip(theirs.column("k").to_pylist(), theirs.column("v").to_pylist())) == model
    assert len(pypaimon_read(warehouse, "db.events")) == N_FILES * ROWS
    # Every committed identifier's data appears once per table, in order (a compaction after a
    # write shares the write's identifier).
    for name in ("db.events", "db.latest"):
        snaps = ps.Catalog(warehouse).get_table(name).snapshots()
        idents = [s.commit_identifier for s in snaps if s.commit_kind != "COMPACT"]
        assert idents == sorted(set(idents)), (name, idents)
        assert [s.commit_identifier for s in snaps] == sorted(s.commit_identifier for s in snaps)
