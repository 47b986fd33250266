"""A service the tests run as a child JVM (the Kafka broker, the HDFS cluster): its files and
its log in a temp directory, a process that dies with the test process (PR_SET_PDEATHSIG), and
one instance per test process, started on first use and stopped at exit (`shared`)."""
from __future__ import annotations

import atexit
import ctypes
import shutil
import signal
import subprocess
import tempfile
from pathlib import Path
from typing import Callable, TypeVar


def die_with_parent() -> None:
    ctypes.CDLL("libc.so.6").prctl(1, signal.SIGKILL)  # PR_SET_PDEATHSIG


def stop_process(proc: subprocess.Popen, grace_s: float = 20) -> None:
    """SIGTERM, then SIGKILL if it has not ended within `grace_s` (a loaded machine can take
    more than 10 s to stop Azurite: CI saw it)."""
    if proc.poll() is None:
        proc.terminate()
        try:
            proc.wait(timeout=grace_s)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()


class ServiceProcess:
    """Base of a test service: `self.dir` holds its files, `launch` starts its process logging
    to `self.dir/<log_name>`, `stop` ends it and removes the directory."""

    def __init__(self, prefix: str, log_name: str) -> None:
        self.dir = Path(tempfile.mkdtemp(prefix=prefix))
        self.log_path = self.dir / log_name
        self.log = open(self.log_path, "w")
        self.proc: subprocess.Popen | None = None

    def launch(self, cmd: list[str]) -> None:
        self.proc = subprocess.Popen(cmd, stdout=self.log, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL,
                                     preexec_fn=die_with_parent)

    def fail_if_exited(self, what: str) -> None:
        """While waiting for readiness: a process that already ended is an error with its log."""
        if self.proc is not None and self.proc.poll() is not None:
            raise RuntimeError(f"{what} exited with {self.proc.returncode}:\n{self.read_log()[-3000:]}")

    def read_log(self) -> str:
        return self.log_path.read_text(errors="replace")

    def stop(self) -> None:
        if self.proc is not None:
            stop_process(self.proc)
        self.log.close()
        shutil.rmtree(self.dir, ignore_errors=True)


S = TypeVar("S", bound=ServiceProcess)
_RUNNING: dict[Callable, ServiceProcess] = {}


def shared(start: Callable[[], S]) -> S:
    """The test process's one service made by `start`, started on first use, stopped at exit."""
    if start not in _RUNNING:
        _RUNNING[start] = service = start()
        atexit.register(service.stop)
    return _RUNNING[start]  # type: ignore[return-value]
