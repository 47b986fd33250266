"""A real HDFS for the tests: Hadoop's MiniDFSCluster (one NameNode, one DataNode) on loopback,
reached through pyarrow's `HadoopFileSystem` (libhdfs over JNI).

Three things are fetched on first use and cached in `tests/hdfs/target` (under a file lock):
  - the cluster's jars, `org.apache.hadoop:hadoop-client-minicluster` with the shaded client
    jars, resolved by Maven from `tests/hdfs/pom.xml` into `target/lib`;
  - libhdfs.so, which no registry ships built: its C sources come in the `hdfs-sys` crate
    (crates.io, fetched by `cargo metadata` on `tests/hdfs/Cargo.toml`) and are compiled with
    cc against the JDK's jni.h into `target/native/libhdfs.so` (a second or so);
  - nothing else: the cluster runs as `java -cp 'target/lib/*' org.apache.hadoop.test.MiniDFSClusterManager`.

`get_cluster()` starts the cluster once per test process (stopped at exit; the JVM dies with
its parent: PR_SET_PDEATHSIG). pyarrow reads where libhdfs and the JVM are, and the JVM's
classpath, from the environment when the first HadoopFileSystem of a process connects:
`client_env()` gives those variables and `HdfsCluster.filesystem()` connects with them set
(child processes get them from `client_env()` too). Java, Maven, cargo and cc are required; a
failure raises, so the HDFS tests fail rather than skip.
"""
from __future__ import annotations

import contextlib
import fcntl
import json
import os
import shutil
import subprocess
import time
from pathlib import Path

import pyarrow.fs as pafs

from service_process import ServiceProcess, shared

HDFS_DIR = Path(__file__).resolve().parent / "hdfs"
TARGET = HDFS_DIR / "target"
LIB = TARGET / "lib"
NATIVE = TARGET / "native"
LIBHDFS_VERSION = "hdfs_3_3"  # the newest libhdfs that hdfs-sys vendors; talks to Hadoop 3.4 fine
CLUSTER_MAIN = "org.apache.hadoop.test.MiniDFSClusterManager"  # in hadoop-client-minicluster



@contextlib.contextmanager
def _locked():
    TARGET.mkdir(parents=True, exist_ok=True)
    with open(TARGET / ".lock", "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        yield


def _run(cmd: list[str], what: str, **kw) -> subprocess.CompletedProcess:
    proc = subprocess.run(cmd, capture_output=True, text=True, timeout=900, **kw)
    if proc.returncode != 0:
        raise RuntimeError(f"{what}: {' '.join(cmd)} failed:\n{proc.stdout[-3000:]}{proc.stderr[-3000:]}")
    return proc


def jars() -> list[Path]:
    """The Hadoop jars (resolved through Maven once)."""
    with _locked():
        done = LIB / ".complete"
        if not done.exists():
            shutil.rmtree(LIB, ignore_errors=True)
            mvn = os.environ.get("PAIMON_ORACLE_MVN") or shutil.which("mvn")
            if mvn is None:
                raise RuntimeError("Maven (mvn) is needed to fetch the HDFS test cluster's jars")
            _run([mvn, "-q", "-B", "-s", str(HDFS_DIR / "settings.xml"), "-f", str(HDFS_DIR / "pom.xml"),
                  "dependency:copy-dependencies"], "resolving the Hadoop jars")
            done.touch()
    return sorted(LIB.glob("*.jar"))


def java_home() -> str:
    home = os.environ.get("JAVA_HOME")
    if not home:
        java = shutil.which("java")
        if java is None:
            raise RuntimeError("Java is needed for the HDFS test cluster")
        home = str(Path(os.path.realpath(java)).parent.parent)
    if not (Path(home) / "include" / "jni.h").exists():
        raise RuntimeError(f"{home} is not a JDK (no include/jni.h): set JAVA_HOME to one")
    return home


def _libhdfs_sources() -> Path:
    """The directory of hdfs-sys's vendored libhdfs (downloaded by cargo into its registry cache)."""
    # rustup installs cargo into $CARGO_HOME/bin (~/.cargo/bin), which a CI shell may not have on PATH
    cargo = shutil.which("cargo") or os.path.join(os.environ.get("CARGO_HOME") or Path.home() / ".cargo", "bin", "cargo")
    if not Path(cargo).exists():
        raise RuntimeError(f"cargo is needed to fetch libhdfs's sources (the hdfs-sys crate): not on PATH nor at {cargo}")
    meta = _run([cargo, "metadata", "--format-version", "1", "--locked", "--manifest-path", str(HDFS_DIR / "Cargo.toml")],
                "fetching the hdfs-sys crate", env=dict(os.environ, CARGO_TARGET_DIR=str(TARGET / "cargo")))
    for package in json.loads(meta.stdout)["packages"]:
        if package["name"] == "hdfs-sys":
            return Path(package["manifest_path"]).parent / "libhdfs"
    raise RuntimeError("cargo metadata did not list hdfs-sys")


def libhdfs_dir() -> Path:
    """A directory holding libhdfs.so (built once), for ARROW_LIBHDFS_DIR."""
    with _locked():
        lib = NATIVE / "libhdfs.so"
        if not lib.exists():
            src = _libhdfs_sources()
            ver, jdk = src / LIBHDFS_VERSION, java_home()
            sources = [ver / name for name in ("exception.c", "jni_helper.c", "hdfs.c", "jclasses.c")]
            sources += sorted((ver / "os" / "posix").glob("*.c"))
            includes = [src, ver, ver / "include", ver / "os", ver / "os" / "posix",
                        Path(jdk) / "include", Path(jdk) / "include" / "linux"]
            NATIVE.mkdir(parents=True, exist_ok=True)
            tmp = NATIVE / f".libhdfs.{os.getpid()}.so"
            cc = os.environ.get("CC") or shutil.which("cc") or "gcc"
            _run([cc, "-shared", "-fPIC", "-O2", "-w", "-fcommon", "-o", str(tmp), *(f"-I{i}" for i in includes),
                  *map(str, sources), f"-L{jdk}/lib/server", "-ljvm", f"-Wl,-rpath,{jdk}/lib/server", "-lpthread"],
                 "compiling libhdfs")
            tmp.rename(lib)
    return NATIVE


def client_env() -> dict[str, str]:
    """What pyarrow's HadoopFileSystem (libhdfs) needs in the environment of a process before its
    first connection: where libhdfs.so and the JVM are, and the client's jars (JNI does not
    expand `dir/*`, so each jar is named)."""
    client_jars = [str(j) for j in jars() if "minicluster" not in j.name]
    return {
        "ARROW_LIBHDFS_DIR": str(libhdfs_dir()),
        "JAVA_HOME": java_home(),
        "CLASSPATH": os.pathsep.join(client_jars),
        # -Xrs: the JVM inside the Python process leaves SIGINT/SIGTERM to Python
        "LIBHDFS_OPTS": "-Xrs -Xmx256m -XX:+UseSerialGC",
    }


@contextlib.contextmanager
def client_environment():
    """The client's variables set in os.environ for the block (restored after), e.g. around the
    first connection of this process or around starting child processes."""
    env = client_env()
    saved = {k: os.environ.get(k) for k in env}
    os.environ.update(env)
    try:
        yield env
    finally:
        for k, v in saved.items():
            if v is None:
                os.environ.pop(k, None)
            else:
                os.environ[k] = v


class HdfsCluster(ServiceProcess):
    """One MiniDFSCluster JVM (NameNode + DataNode, every port on 127.0.0.1, chosen free)."""

    def __init__(self) -> None:
        classpath = os.pathsep.join(str(j) for j in jars())
        super().__init__("hdfs-test-", "cluster.log")
        details = self.dir / "details.json"
        cmd = [os.path.join(java_home(), "bin", "java"), "-Xms128m", "-Xmx768m", "-XX:+UseSerialGC",
               f"-Dtest.build.data={self.dir / 'data'}", "-cp", classpath, CLUSTER_MAIN,
               "-format", "-nnport", "0", "-httpport", "0", "-datanodes", "1",
               "-writeDetails", str(details), "-writeConfig", str(self.dir / "hdfs-site.xml"),
               "-D", f"hdfs.minidfs.basedir={self.dir / 'data'}",
               "-D", "dfs.replication=1",
               "-D", "dfs.namenode.safemode.extension=0"]
        self.launch(cmd)
        self.port = self._wait_ready(details)
        self.host = "127.0.0.1"
        self._fs: pafs.HadoopFileSystem | None = None

    def _wait_ready(self, details: Path, timeout: float = 120) -> int:
        deadline = time.time() + timeout
        while time.time() < deadline:
            self.fail_if_exited("MiniDFSCluster")
            try:
                return int(json.loads(details.read_text())["namenode_port"])
            except (OSError, ValueError, KeyError):
                time.sleep(0.3)  # written once the cluster is up (NameNode out of safe mode, DataNode in)
        self.stop()
        raise RuntimeError(f"MiniDFSCluster not ready after {timeout}s:\n{self.read_log()[-3000:]}")

    def uri(self, path: str) -> str:
        """An hdfs:// location (replication 1: there is one DataNode)."""
        return f"hdfs://{self.host}:{self.port}/{path.lstrip('/')}?replication=1"

    def filesystem(self) -> pafs.HadoopFileSystem:
        """A HadoopFileSystem connected to the cluster (the first one starts this process's JVM)."""
        with client_environment():
            return pafs.HadoopFileSystem(self.host, self.port, replication=1)

def get_cluster() -> HdfsCluster:
    """The test run's cluster, started on first use and stopped at exit."""
    return shared(HdfsCluster)


if __name__ == "__main__":  # fetch and build everything (for a setup step), without starting a cluster
    print(client_env()["ARROW_LIBHDFS_DIR"])
