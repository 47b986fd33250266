"""The Java oracle's kept JVMs (tests/java_oracle.py, `--serve`): a JVM that died or hangs is
replaced, requests running at once get a JVM each, and a JVM answers in the time zone it was
started in, so a test changing TZ gets another."""
from __future__ import annotations

import datetime
import os
import threading
import time

import pytest

from java_oracle import _SERVERS, JavaOracleError, get_oracle

FIELDS = [{"name": "id", "type": "BIGINT NOT NULL"}, {"name": "v", "type": "STRING"}]


@pytest.fixture
def java():
    return get_oracle()


@pytest.fixture
def table(java, tmp_path):
    path = str(tmp_path / "db.db" / "t")
    java.create_table(path, FIELDS, primary_keys=["id"], options={"bucket": "1"})
    return path


def idle_jvms() -> list:
    return [s for servers in _SERVERS._idle.values() for s in servers if s.key[0] == os.getpid()]


def test_a_killed_jvm_is_replaced(java, table):
    java.write(table, [{"id": 1, "v": "a"}])
    for server in idle_jvms():
        server.proc.kill()
        server.proc.wait()
    java.write(table, [{"id": 2, "v": "b"}])
    assert sorted(r["id"] for r in java.read(table)) == [1, 2]


def test_a_hung_request_times_out_and_the_next_gets_a_fresh_jvm(java, table, tmp_path):
    op = {"op": "write", "path": table, "rows": [{"id": 1, "v": "a"}],
          "pauseBeforeCommit": {"ready": str(tmp_path / "ready"), "go": str(tmp_path / "never")}}
    started = time.monotonic()
    with pytest.raises(JavaOracleError, match="gave no reply"):
        java.run_ops([op], timeout=5)
    assert time.monotonic() - started < 60
    assert java.read(table) == []  # the hung write never committed, and its JVM is gone


def test_requests_at_once_each_have_a_jvm(java, table, tmp_path):
    ready, go = tmp_path / "ready", tmp_path / "go"
    paused = {"op": "write", "path": table, "rows": [{"id": 1, "v": "a"}],
              "pauseBeforeCommit": {"ready": str(ready), "go": str(go)}}
    outcome: list = []
    thread = threading.Thread(target=lambda: outcome.append(java.run_ops([paused])), daemon=True)
    thread.start()
    deadline = time.monotonic() + 120
    while not ready.exists():
        assert thread.is_alive() and time.monotonic() < deadline, outcome
        time.sleep(0.02)
    assert java.read(table) == []  # answered by another JVM while the write waits before its commit
    go.touch()
    thread.join(120)
    assert outcome and [r["id"] for r in java.read(table)] == [1]


def test_a_jvm_per_time_zone(java, tmp_path, monkeypatch):
    """Java reads a TIMESTAMP changed to TIMESTAMP WITH LOCAL TIME ZONE in the JVM's default zone,
    fixed when the JVM starts: after TZ changes, the read is answered by a JVM in the new zone."""
    path = str(tmp_path / "db.db" / "z")
    java.create_table(path, [{"name": "ts", "type": "TIMESTAMP(3)"}])
    java.write(path, [{"ts": datetime.datetime(2026, 1, 1, 12, 0)}])
    java.alter(path, [{"kind": "type", "path": ["ts"], "type": "TIMESTAMP(3) WITH LOCAL TIME ZONE"}])
    read = {}
    for zone in ("Asia/Tokyo", "UTC", "America/New_York", "Asia/Tokyo"):
        monkeypatch.setenv("TZ", zone)
        read.setdefault(zone, set()).add(java.read(path)[0]["ts"])
    utc = datetime.timezone.utc
    assert read == {"Asia/Tokyo": {datetime.datetime(2026, 1, 1, 3, 0, tzinfo=utc)},
                    "UTC": {datetime.datetime(2026, 1, 1, 12, 0, tzinfo=utc)},
                    "America/New_York": {datetime.datetime(2026, 1, 1, 17, 0, tzinfo=utc)}}
