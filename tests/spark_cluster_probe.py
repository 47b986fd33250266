"""File-access probe for the standalone-cluster test; installed as `sitecustomize`.

tests/test_spark_cluster.py copies this file to <tmp>/site/sitecustomize.py and puts that
directory on PYTHONPATH of the driver process (so of the Python workers its JVM starts too)
and, through `spark.executorEnv.PYTHONPATH`, of the executors' Python workers. With
PAIMON_PROBE_LOG set, every table file opened through `paimon_streaming.fileio.FileIO` is
recorded as one JSON line: which process (pid, working directory, and the main class of the
nearest JVM ancestor: the executor backend or the driver's SparkSubmit) read or wrote which
path. The test uses the records to show that data files are written by executor processes
and that driver-side processes never open them. Test-only: the library is not changed.
"""
from __future__ import annotations

import json
import os

LOG_ENV = "PAIMON_PROBE_LOG"
_JVM_CACHE: dict[int, tuple[int, str] | None] = {}


def _parent_pid(pid: int) -> int:
    with open(f"/proc/{pid}/stat") as f:
        return int(f.read().rsplit(")", 1)[1].split()[1])


def jvm_ancestor() -> tuple[int, str] | None:
    """(pid, Spark main class) of the nearest `java` ancestor of this process, or None."""
    me = os.getpid()
    if me not in _JVM_CACHE:
        found = None
        pid = os.getppid()
        try:
            for _ in range(10):
                if pid <= 1:
                    break
                with open(f"/proc/{pid}/cmdline", "rb") as f:
                    argv = [a.decode(errors="replace") for a in f.read().split(b"\0") if a]
                if argv and os.path.basename(argv[0]) == "java":
                    found = (pid, next((a for a in argv if a.startswith("org.apache.spark.")), ""))
                    break
                pid = _parent_pid(pid)
        except OSError:
            found = None
        _JVM_CACHE[me] = found
    return _JVM_CACHE[me]


def _record(log_dir: str, op: str, path: str) -> None:
    jvm = jvm_ancestor()
    line = json.dumps({"pid": os.getpid(), "cwd": os.getcwd(), "op": op, "path": str(path),
                       "jvm_pid": jvm[0] if jvm else None, "jvm_main": jvm[1] if jvm else None})
    with open(os.path.join(log_dir, f"files-{os.getpid()}.jsonl"), "a") as f:
        f.write(line + "\n")


def install() -> None:
    log_dir = os.environ.get(LOG_ENV)
    if not log_dir:
        return
    from paimon_streaming.fileio import FileIO
    if getattr(FileIO, "_paimon_probe", False):
        return

    def wrap(name: str, op: str) -> None:
        original = getattr(FileIO, name)

        def method(self, path, *args, **kwargs):
            _record(log_dir, op, path)
            return original(self, path, *args, **kwargs)
        method.__name__ = name
        setattr(FileIO, name, method)

    for name, op in (("open_output_stream", "write"), ("write_bytes", "write"),
                     ("open_input_file", "read"), ("read_bytes", "read")):
        wrap(name, op)
    FileIO._paimon_probe = True


def read_records(log_dir: str) -> list[dict]:
    out = []
    for name in sorted(os.listdir(log_dir)):
        if name.startswith("files-") and name.endswith(".jsonl"):
            with open(os.path.join(log_dir, name)) as f:
                out.extend(json.loads(line) for line in f if line.strip())
    return out


if __name__ == "sitecustomize":  # only as the copy on PYTHONPATH, never when the test imports it
    try:
        install()
    except Exception as exc:  # never break interpreter start-up; the test notices missing records
        import sys
        print(f"spark_cluster_probe: not installed: {exc!r}", file=sys.stderr)
