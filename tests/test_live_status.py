"""The live status line of `ingest` and `demo`: on a terminal it stays under the log lines
and is cleared at the end; anywhere else the output is exactly the plain lines."""
from __future__ import annotations

import io
import os
import pty
import select
import signal
import time

import pytest

from paimon_streaming.cli import build_parser
from paimon_streaming.sinks.demo_pipeline import DemoSpec, demo_status
from paimon_streaming.sinks.ingest import REJECTED_PER_BATCH, IngestTotals, consumer_lag, ingest_status
from paimon_streaming.sinks.live_status import CLEAR_LINE, LiveStatus


class FakeTerminal(io.StringIO):
    def isatty(self) -> bool:
        return True


@pytest.fixture(autouse=True)
def narrow_terminal(monkeypatch):
    monkeypatch.setenv("COLUMNS", "40")  # shutil.get_terminal_size reads it first


def test_not_a_terminal_prints_exactly_the_lines():
    out, expected = io.StringIO(), io.StringIO()
    with LiveStatus(out, interval=0) as live:
        live.update("status 1")
        live.log("write batch   0: 10 changes")
        live.update("status 2")
        live.log("read  batch   0: 10 rows")
    for line in ("write batch   0: 10 changes", "read  batch   0: 10 rows"):
        print(line, file=expected)
    assert out.getvalue() == expected.getvalue()


def test_terminal_status_stays_under_the_log_lines_and_is_cleared_at_the_end():
    out = FakeTerminal()
    with LiveStatus(out, interval=0) as live:
        live.update("batch 1 running")
        live.update("batch 1 running 0.5s")
        live.log("batch 1: 10 rows")
        live.log("batch 2: 20 rows")
    assert out.getvalue() == (CLEAR_LINE + "batch 1 running" + CLEAR_LINE + "batch 1 running 0.5s"
                              + CLEAR_LINE + "batch 1: 10 rows\n" + CLEAR_LINE + "batch 1 running 0.5s"
                              + CLEAR_LINE + "batch 2: 20 rows\n" + CLEAR_LINE + "batch 1 running 0.5s"
                              + CLEAR_LINE)


def test_status_is_cut_to_the_terminal_width():
    out = FakeTerminal()
    live = LiveStatus(out, interval=0)
    live.update("x" * 100)
    assert out.getvalue() == CLEAR_LINE + "x" * 39


def test_redraws_are_throttled_but_the_newest_text_is_shown_after_a_log_line():
    out = FakeTerminal()
    live = LiveStatus(out, interval=60)
    live.update("first")
    live.update("second")  # within the interval: kept, not drawn
    assert out.getvalue() == CLEAR_LINE + "first"
    live.log("line")
    assert out.getvalue().endswith(CLEAR_LINE + "line\n" + CLEAR_LINE + "second")


def test_cleared_on_an_error_or_ctrl_c():
    for error in (KeyboardInterrupt, RuntimeError):
        out = FakeTerminal()
        with pytest.raises(error):
            with LiveStatus(out, interval=0) as live:
                live.update("running")
                raise error()
        assert out.getvalue() == CLEAR_LINE + "running" + CLEAR_LINE


def test_no_progress_on_a_terminal_prints_plain_lines():
    out = FakeTerminal()
    with LiveStatus(out, enabled=False, interval=0) as live:
        live.update("running")
        live.log("line")
    assert out.getvalue() == "line\n"
    args = build_parser().parse_args(["demo", "--no-progress"])
    assert args.no_progress
    assert not build_parser().parse_args(["ingest", "--bootstrap-servers", "b:9092", "--topic", "t", "--warehouse",
                                          "/wh", "--table", "db.t"]).no_progress


def test_real_pseudo_terminal():
    master, slave = pty.openpty()
    try:
        with open(slave, "w", closefd=False) as tty:
            with LiveStatus(tty, interval=0) as live:
                live.update("batch 3 running")
                live.log("done")
        got = b""
        while select.select([master], [], [], 1)[0]:  # the pty hands the bytes over in chunks
            got += os.read(master, 4096)
    finally:
        os.close(master)
        os.close(slave)
    # the terminal's line discipline turns "\n" into "\r\n"
    assert got.decode() == CLEAR_LINE + "batch 3 running" + CLEAR_LINE + "done\r\n" + CLEAR_LINE + "batch 3 running" \
        + CLEAR_LINE


def progress(batch: int, rows: int, ms: int, end: int, latest: int) -> dict:
    """A finished batch's progress as Spark reports it, reading partition 0 of topic t."""
    return {"batchId": batch, "numInputRows": rows, "durationMs": {"triggerExecution": ms},
            "sources": [{"endOffset": {"t": {"0": end}}, "latestOffset": {"t": {"0": latest}}}]}


def test_ingest_status_from_progress(monkeypatch):
    monkeypatch.setitem(REJECTED_PER_BATCH, 11, 2)
    monkeypatch.setitem(REJECTED_PER_BATCH, 12, 1)
    totals = IngestTotals()
    assert ingest_status("db.t", totals, None, 2.0) == "ingest db.t | waiting 2.0s | 0 rows"
    for p in (progress(11, 38_000, 1000, 38_000, 200_000), progress(12, 49_632, 1100, 87_632, 207_632)):
        totals.add(p)
        totals.lag = consumer_lag(p)
    assert ingest_status("db.t", totals, 1.34, 0.0, "dead-letter", 13) == (
        "ingest db.t | batch 13 running 1.3s | 45,120 rows/s (last) 41,730 avg | lag 120,000 | last batch 1.1s"
        " | 87,632 rows | 3 dead-lettered")
    assert ingest_status("db.t", totals, None, 4.3, "skip") == (
        "ingest db.t | waiting 4.3s | 45,120 rows/s (last) 41,730 avg | lag 120,000 | last batch 1.1s"
        " | 87,632 rows | 3 skipped")
    assert ingest_status("db.t", totals, 0.2, 0.0) == (
        "ingest db.t | batch running 0.2s | 45,120 rows/s (last) 41,730 avg | lag 120,000 | last batch 1.1s"
        " | 87,632 rows")
    totals.add(progress(13, 0, 5, 87_632, 87_632))  # an idle trigger changes nothing but the lag
    assert totals.rows == 87_632 and totals.last["batchId"] == 12


def test_demo_status():
    spec = DemoSpec(batches=20)
    assert demo_status(spec, 0, [], "n/a", 3.2) == "demo | written 0/20 batches | read 0 | n/a changes/s | 3s"
    assert demo_status(spec, 5, [0.9, 0.84], "18,000", 12.0) == \
        "demo | written 5/20 batches | read 2 | 18,000 changes/s | write->read 0.8s | 12s"


def test_not_a_terminal_flushes_every_line():
    """Lines went to a pipe or a file block-buffered: `docker compose logs` (no tty) showed no
    progress until some 8 KB piled up. Every logged line is flushed; the image runs Python
    unbuffered too."""
    class Pipe(io.StringIO):
        flushed = ""

        def flush(self) -> None:
            self.flushed = self.getvalue()

    out = Pipe()
    live = LiveStatus(out)
    live.log("batch 0: 5 rows")
    assert out.flushed == "batch 0: 5 rows\n"
    live.log("batch 1: 7 rows")
    assert out.flushed == "batch 0: 5 rows\nbatch 1: 7 rows\n"
    dockerfile = os.path.join(os.path.dirname(__file__), "..", "docker", "Dockerfile")
    assert "PYTHONUNBUFFERED=1" in open(dockerfile).read()


def test_a_few_rows_in_a_slow_batch_show_their_rate():
    """2 rows in 9 s were "(0 rows/s)"."""
    from paimon_streaming.sinks.ingest import progress_line, rate
    assert [rate(2, 9.0), rate(9, 1.0), rate(15, 1.0), rate(45_120, 1.0), rate(0, 2.0), rate(5, 0)] == \
        ["0.22", "9", "15", "45,120", "0", "n/a"]
    assert progress_line(progress(4, 2, 9000, 9, 9), "last snapshot 3").startswith("batch 4: 2 rows in 9.0s (0.22 rows/s)")


def test_a_batch_after_an_idle_trigger_is_reported(monkeypatch):
    """Spark reports an idle trigger's progress (0 rows) under the id of the batch that runs
    next; run_ingest took that id as seen, so the batch's own line and rows were never shown."""
    import types

    from paimon_streaming.sinks import ingest
    from paimon_streaming.sinks.ingest import IngestConfig, run_ingest

    def at(p: dict, timestamp: str) -> dict:
        return dict(p, timestamp=timestamp)
    reports = [at(progress(2, 1, 900, 9, 9), "t1"), at(progress(3, 0, 5, 9, 11), "t2"),
               at(progress(3, 2, 900, 11, 11), "t3"), at(progress(4, 0, 5, 11, 11), "t4"),
               at(progress(4, 0, 5, 11, 11), "t5"), at(progress(4, 3, 900, 14, 14), "t6")]

    class Query:  # each poll one more report; Spark keeps the recent ones (here the last three)
        polls, status = 0, {"isTriggerActive": False}
        isActive = property(lambda self: self.polls < len(reports))
        recentProgress = property(lambda self: reports[max(self.polls - 3, 0):self.polls])
        lastProgress = reports[-1]

        def awaitTermination(self, timeout):
            self.polls += 1

        def exception(self):
            return None
    monkeypatch.setattr(ingest, "READS_PER_BATCH", {})      # batches of earlier tests in this process
    monkeypatch.setattr(ingest, "REJECTED_PER_BATCH", {})
    monkeypatch.setattr(ingest.ps, "register", lambda spark: None)
    monkeypatch.setattr(ingest, "ensure_table", lambda spark, cfg, log: types.SimpleNamespace(ref="x"))
    monkeypatch.setattr(ingest, "table_writer", lambda *args: None)
    monkeypatch.setattr(ingest, "table_state", lambda table: "last snapshot ?")
    monkeypatch.setattr(ingest, "start_query", lambda *args: Query())
    lines, statuses = [], []
    cfg = IngestConfig(bootstrap_servers="h:1", warehouse="/nowhere", table="db.t", topics=("t",), source="kafka-python")
    assert run_ingest(None, cfg, lines.append, statuses.append) == 0
    assert [line.split(" in ")[0] for line in lines if line.startswith("batch ")] == \
        ["batch 2: 1 rows", "batch 3: 2 rows", "batch 4: 3 rows"]
    assert statuses[-1].endswith("| 6 rows")


@pytest.mark.parametrize("signum", [signal.SIGTERM, signal.SIGINT])
def test_a_stop_signal_is_never_raised_inside_a_call_into_spark(monkeypatch, signum):
    """SIGTERM (docker compose stop) and Ctrl-C raised KeyboardInterrupt wherever the driver
    was, mostly inside a py4j call (awaitTermination), which made py4j log "KeyboardInterrupt
    while sending command." and three tracebacks before the "stopping" line. The signal is now
    noted; the call returns and the poll loop stops the query."""
    import types

    from paimon_streaming.sinks import ingest
    from paimon_streaming.sinks.ingest import IngestConfig, run_ingest
    calls = {"finished": 0, "stopped": 0}

    class Query:
        status, recentProgress, lastProgress = {"isTriggerActive": False}, [], None
        isActive = property(lambda self: calls["stopped"] == 0)

        def awaitTermination(self, timeout):  # a py4j call, blocking while the signal arrives
            os.kill(os.getpid(), signum)
            time.sleep(0.2)
            calls["finished"] += 1

        def stop(self):
            calls["stopped"] += 1
    monkeypatch.setattr(ingest, "READS_PER_BATCH", {})      # batches of earlier tests in this process
    monkeypatch.setattr(ingest, "REJECTED_PER_BATCH", {})
    monkeypatch.setattr(ingest.ps, "register", lambda spark: None)
    monkeypatch.setattr(ingest, "ensure_table", lambda spark, cfg, log: types.SimpleNamespace(ref="x"))
    monkeypatch.setattr(ingest, "table_writer", lambda *args: None)
    monkeypatch.setattr(ingest, "start_query", lambda *args: Query())
    before = signal.getsignal(signum)
    lines = []
    cfg = IngestConfig(bootstrap_servers="h:1", warehouse="/nowhere", table="db.t", topics=("t",), source="kafka-python")
    assert run_ingest(None, cfg, lines.append) == 0
    assert calls == {"finished": 1, "stopped": 1}
    assert lines[-2].startswith("stopping: the current micro-batch is abandoned") and lines[-1].startswith("stopped;")
    assert signal.getsignal(signum) is before
