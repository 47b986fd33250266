"""pypaimon (the test-only oracle) in a virtualenv and a process of its own.

pypaimon 2.1.0 pins pyarrow < 20; the product is tested with the newest pyarrow. So, as the
Java oracle runs in its own JVM, pypaimon runs in `tests/.venv-oracle` (built by `build()`, i.e.
`python tests/pypaimon_oracle.py --build`, which tests/run.sh calls), in one long-lived
process per test process (tests/pypaimon_oracle_server.py). `call(name, ...)` runs one of
the server's functions; Arrow data crosses as Arrow IPC (tests/arrow_wire.py). A failure in
pypaimon raises `OracleError` with pypaimon's exception type, message and traceback.
"""
from __future__ import annotations

import atexit
import hashlib
import os
import subprocess
import sys
import threading
from pathlib import Path
from typing import Any

import pyarrow as pa

from arrow_wire import receive, send

HERE = Path(__file__).resolve().parent
VENV = Path(os.environ.get("PAIMON_PYPAIMON_VENV", HERE / ".venv-oracle"))
REQUIREMENTS = ["pypaimon==2.1.0"]
SERVER = HERE / "pypaimon_oracle_server.py"


class OracleError(Exception):
    """pypaimon raised: `kind` is its exception class name, `remote_traceback` its traceback."""

    def __init__(self, kind: str, message: str, remote_traceback: str):
        super().__init__(f"pypaimon raised {kind}: {message}\n{remote_traceback}")
        self.kind, self.message, self.remote_traceback = kind, message, remote_traceback


def _python() -> Path:
    return VENV / "bin" / "python"


def build() -> Path:
    """Create the oracle virtualenv unless it holds exactly REQUIREMENTS already."""
    marker = VENV / ".requirements"
    wanted = hashlib.sha256("\n".join(REQUIREMENTS).encode()).hexdigest()
    if _python().exists() and marker.exists() and marker.read_text() == wanted:
        return _python()
    subprocess.run([sys.executable, "-m", "venv", "--clear", str(VENV)], check=True)
    subprocess.run([str(_python()), "-m", "pip", "install", "-q", "--disable-pip-version-check", *REQUIREMENTS],
                   check=True)
    marker.write_text(wanted)
    return _python()


class _Server:
    def __init__(self):
        self.process: subprocess.Popen | None = None
        self.lock = threading.Lock()

    def _start(self) -> subprocess.Popen:
        if self.process is None or self.process.poll() is not None:
            self.process = subprocess.Popen([str(build()), str(SERVER)], stdin=subprocess.PIPE,
                                            stdout=subprocess.PIPE, cwd=str(SERVER.parent))
        return self.process

    def call(self, name: str, *args: Any, **kwargs: Any) -> Any:
        with self.lock:
            process = self._start()
            try:
                send(process.stdin, (name, args, kwargs))
                answer = receive(process.stdout)
            except (BrokenPipeError, EOFError) as exc:
                process.kill()
                raise RuntimeError(f"the pypaimon oracle process died (exit {process.wait()})") from exc
        if answer[0] == "ok":
            return answer[1]
        raise OracleError(*answer[1:])

    def stop(self) -> None:
        if self.process is not None and self.process.poll() is None:
            self.process.stdin.close()
            try:
                self.process.wait(10)
            except subprocess.TimeoutExpired:
                self.process.kill()


_SERVER = _Server()
atexit.register(_SERVER.stop)


def call(name: str, *args: Any, **kwargs: Any) -> Any:
    return _SERVER.call(name, *args, **kwargs)


# ---- the helpers the tests use -------------------------------------------------------------------
def pypaimon_read(warehouse: str, identifier: str, snapshot_id: int | None = None,
                  tag: str | None = None) -> pa.Table:
    """Read a table through pypaimon (merge-on-read / DV as pypaimon implements it)."""
    return call("read_table", str(warehouse), identifier, snapshot_id=snapshot_id, tag=tag)


def pypaimon_create(warehouse: str, identifier: str, schema: pa.Schema, primary_keys=None,
                    partition_keys=None, options=None) -> None:
    call("create_table", str(warehouse), identifier, schema, primary_keys=primary_keys,
         partition_keys=partition_keys, options=options or {})


def pypaimon_write(warehouse: str, identifier: str, data: pa.Table) -> None:
    call("write_table", str(warehouse), identifier, data)


def pypaimon_create_tag(warehouse: str, identifier: str, name: str, **kwargs: Any) -> None:
    call("create_tag", str(warehouse), identifier, name, **kwargs)


def pypaimon_tags(warehouse: str, identifier: str) -> list[str]:
    return call("list_tags", str(warehouse), identifier)


if __name__ == "__main__":
    if sys.argv[1:] == ["--build"]:
        print(f"pypaimon oracle: {build()} ({call('versions')})")
    else:
        sys.exit("usage: python tests/pypaimon_oracle.py --build")
