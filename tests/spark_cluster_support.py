"""Spark daemons for the cluster and Connect tests: a standalone master and worker, a Spark
Connect server and driver scripts, each started from the pyspark installation as its own
process group bound to 127.0.0.1, logged to a file, and always killed (group-wide) at the end.
"""
from __future__ import annotations

import os
import re
import shutil
import signal
import socket
import subprocess
import sys
import time

import pyspark

PYSPARK_HOME = os.path.dirname(os.path.abspath(pyspark.__file__))
_SETPRIV = shutil.which("setpriv") if sys.platform.startswith("linux") else None


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def java_tmp_option(tmp_dir: str) -> str:
    """JVM option keeping Spark's temp dirs (artifacts, spark-*) under the test's directory."""
    os.makedirs(tmp_dir, exist_ok=True)
    return f"-Djava.io.tmpdir={tmp_dir}"


def spark_daemon_env(conf_dir: str, tmp_dir: str | None = None, **extra: str) -> dict[str, str]:
    """Environment for Spark's scripts: this pyspark as SPARK_HOME, loopback only, an empty
    configuration directory (no stray spark-defaults), this interpreter for Python workers,
    and TMPDIR (Python temp files) under `tmp_dir`."""
    os.makedirs(conf_dir, exist_ok=True)
    env = {k: v for k, v in os.environ.items()
           if k not in ("SPARK_REMOTE", "SPARK_CONNECT_MODE_ENABLED", "SPARK_LOCAL_HOSTNAME", "SPARK_MASTER_OPTS",
                        "SPARK_WORKER_OPTS", "SPARK_DAEMON_JAVA_OPTS", "PYSPARK_SUBMIT_ARGS",
                        "SPARK_SUBMIT_OPTS")}
    env.update(SPARK_HOME=PYSPARK_HOME, SPARK_LOCAL_IP="127.0.0.1", SPARK_CONF_DIR=conf_dir,
               PYSPARK_PYTHON=sys.executable, PYSPARK_DRIVER_PYTHON=sys.executable)
    if tmp_dir:
        os.makedirs(tmp_dir, exist_ok=True)
        env["TMPDIR"] = tmp_dir
    env.update(extra)
    return env


def tail(path: str, lines: int = 60) -> str:
    try:
        with open(path, "rb") as f:
            f.seek(max(0, os.path.getsize(path) - 200_000))
            text = f.read().decode(errors="replace")
    except OSError as exc:
        return f"<{path}: {exc}>"
    return "\n".join(text.splitlines()[-lines:])


class SparkProcess:
    """One process (and everything it starts) in its own process group, output to a log file."""

    def __init__(self, name: str, argv: list[str], log_path: str, env: dict[str, str], cwd: str):
        self.name, self.log_path = name, log_path
        os.makedirs(cwd, exist_ok=True)
        if _SETPRIV:  # should pytest itself be killed, the process dies with it (no finalizer runs then)
            argv = [_SETPRIV, "--pdeathsig", "KILL", *argv]
        self._log = open(log_path, "wb")
        self.proc = subprocess.Popen(argv, stdout=self._log, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL,
                                     env=env, cwd=cwd, start_new_session=True)

    def log_text(self) -> str:
        with open(self.log_path, "rb") as f:
            return f.read().decode(errors="replace")

    def describe(self, lines: int = 60) -> str:
        state = "running" if self.proc.poll() is None else f"exited with {self.proc.returncode}"
        return f"--- {self.name} ({state}), last lines of {self.log_path}:\n{tail(self.log_path, lines)}"

    def wait_for(self, pattern: str, timeout: float) -> re.Match:
        """Wait until the log matches `pattern`; fail with the log if the process dies or time runs out."""
        regex = re.compile(pattern)
        deadline = time.monotonic() + timeout
        while True:
            m = regex.search(self.log_text())
            if m:
                return m
            if self.proc.poll() is not None:
                raise RuntimeError(f"{self.name} exited before logging {pattern!r}\n{self.describe()}")
            if time.monotonic() > deadline:
                raise RuntimeError(f"{self.name}: no {pattern!r} within {timeout:.0f}s\n{self.describe()}")
            time.sleep(0.25)

    def wait(self, timeout: float) -> int:
        """Wait for the process to exit; on timeout kill its group and fail with the log."""
        try:
            return self.proc.wait(timeout)
        except subprocess.TimeoutExpired:
            self.stop()
            raise RuntimeError(f"{self.name}: still running after {timeout:.0f}s, killed\n{self.describe(120)}")

    def stop(self, grace: float = 10.0) -> None:
        """SIGTERM the whole process group (JVM, its executors and Python workers), then SIGKILL."""
        for sig, wait in ((signal.SIGTERM, grace), (signal.SIGKILL, 5.0)):
            try:
                os.killpg(self.proc.pid, sig)
            except ProcessLookupError:
                break
            deadline = time.monotonic() + wait
            while time.monotonic() < deadline and _group_alive(self.proc.pid):
                self.proc.poll()
                time.sleep(0.1)
            if not _group_alive(self.proc.pid):
                break
        try:
            self.proc.wait(5)
        except subprocess.TimeoutExpired:
            pass
        self._log.close()


def _group_alive(pgid: int) -> bool:
    try:
        os.killpg(pgid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return True  # (an unreaped leader counts too: stop() polls it)


def spark_class(name: str, main_class: str, args: list[str], log_path: str, env: dict[str, str],
                cwd: str) -> SparkProcess:
    return SparkProcess(name, [os.path.join(PYSPARK_HOME, "bin", "spark-class"), main_class, *args],
                        log_path, env, cwd)


class StandaloneCluster:
    """A Spark standalone master and one worker on 127.0.0.1 (RPC and web UI ports chosen by
    the OS; the master's REST server off, so no fixed port is bound)."""

    def __init__(self, base_dir: str, cores: int = 2, memory: str = "2g", timeout: float = 120.0):
        self.base_dir = base_dir
        self.work_dir = os.path.join(base_dir, "worker-work")
        self.local_dir = os.path.join(base_dir, "worker-local")
        os.makedirs(self.work_dir, exist_ok=True)
        os.makedirs(self.local_dir, exist_ok=True)
        conf_dir = os.path.join(base_dir, "conf")
        self.tmp_dir = os.path.join(base_dir, "tmp")
        daemon_opts = java_tmp_option(self.tmp_dir)
        self.processes: list[SparkProcess] = []
        try:
            self.master = spark_class(
                "master", "org.apache.spark.deploy.master.Master",
                ["--host", "127.0.0.1", "--port", "0", "--webui-port", "0"],
                os.path.join(base_dir, "master.log"),
                spark_daemon_env(conf_dir, self.tmp_dir, SPARK_MASTER_OPTS="-Dspark.master.rest.enabled=false",
                                 SPARK_DAEMON_JAVA_OPTS=daemon_opts, SPARK_DAEMON_MEMORY="512m"),
                os.path.join(base_dir, "master-cwd"))
            self.processes.append(self.master)
            self.url = self.master.wait_for(r"Starting Spark master at (spark://127\.0\.0\.1:\d+)", timeout).group(1)
            self.master.wait_for(r"I have been elected leader", timeout)
            self.worker = spark_class(
                "worker", "org.apache.spark.deploy.worker.Worker",
                ["--host", "127.0.0.1", "--port", "0", "--webui-port", "0", "--cores", str(cores),
                 "--memory", memory, "--work-dir", self.work_dir, self.url],
                os.path.join(base_dir, "worker.log"),
                spark_daemon_env(conf_dir, self.tmp_dir, SPARK_LOCAL_DIRS=self.local_dir,
                                 SPARK_DAEMON_JAVA_OPTS=daemon_opts, SPARK_DAEMON_MEMORY="512m"),
                os.path.join(base_dir, "worker-cwd"))
            self.processes.append(self.worker)
            self.worker.wait_for(r"Successfully registered with master", timeout)
        except BaseException:
            self.stop()
            raise

    def executor_logs(self, lines: int = 40) -> str:
        out = []
        for root, _, files in os.walk(self.work_dir):
            for name in ("stderr", "stdout"):
                if name in files:
                    out.append(f"--- executor {os.path.join(root, name)}:\n{tail(os.path.join(root, name), lines)}")
        return "\n".join(out)

    def describe(self) -> str:
        return "\n".join([p.describe() for p in self.processes] + [self.executor_logs()])

    def stop(self) -> None:
        for p in reversed(self.processes):  # worker first: it takes its executors down with it
            p.stop()
        for d in (self.work_dir, self.local_dir, self.tmp_dir):
            shutil.rmtree(d, ignore_errors=True)


class ConnectServer:
    """A local Spark Connect server (spark-submit of SparkConnectServer, master local[2]) on a
    loopback port chosen by the OS; its Python workers (UDFs, Python data sources, the
    foreachBatch worker) run this interpreter."""

    CLASS = "org.apache.spark.sql.connect.service.SparkConnectServer"

    def __init__(self, base_dir: str, timeout: float = 180.0):
        os.makedirs(base_dir, exist_ok=True)
        self.base_dir = base_dir
        self.local_dir = os.path.join(base_dir, "local")
        self.tmp_dir = os.path.join(base_dir, "tmp")
        conf = {
            "spark.connect.grpc.binding.address": "127.0.0.1",
            "spark.connect.grpc.binding.port": "0",
            "spark.driver.host": "127.0.0.1",
            "spark.driver.bindAddress": "127.0.0.1",
            "spark.ui.enabled": "false",
            "spark.sql.shuffle.partitions": "4",
            "spark.sql.session.timeZone": "UTC",
            "spark.sql.warehouse.dir": os.path.join(base_dir, "spark-warehouse"),
        }
        argv = [os.path.join(PYSPARK_HOME, "bin", "spark-submit"), "--class", self.CLASS, "--master", "local[2]",
                "--name", "paimon-streaming-connect-test", "--driver-memory", "1g",
                "--driver-java-options", java_tmp_option(self.tmp_dir)]
        for k, v in conf.items():
            argv += ["--conf", f"{k}={v}"]
        self.process = SparkProcess("connect-server", argv, os.path.join(base_dir, "server.log"),
                                    spark_daemon_env(os.path.join(base_dir, "conf"), self.tmp_dir,
                                                     SPARK_LOCAL_DIRS=self.local_dir),
                                    os.path.join(base_dir, "cwd"))
        try:
            port = self.process.wait_for(r"Spark Connect server started at: 127\.0\.0\.1:(\d+)", timeout).group(1)
        except BaseException:
            self.stop()
            raise
        self.url = f"sc://127.0.0.1:{port}"

    def describe(self, lines: int = 100) -> str:
        return self.process.describe(lines)

    def stop(self) -> None:
        self.process.stop()
        for d in (self.local_dir, self.tmp_dir):
            shutil.rmtree(d, ignore_errors=True)
