"""A real Apache Kafka broker for the tests: single node, KRaft, on a free loopback port.

The broker's jars (org.apache.kafka:kafka_2.13 and its runtime dependencies) are resolved
through Maven from `tests/kafka/broker-pom.xml` on first use and cached in
`tests/kafka/target/broker-lib`; Spark's own Kafka connector likewise from
`tests/kafka/connector-pom.xml` into `tests/kafka/target/connector-lib`. `get_broker()`
formats a fresh log directory (`kafka.tools.StorageTool format`), starts `kafka.Kafka` with
java and waits until it answers; the process is stopped at interpreter exit (and dies with
its parent: PR_SET_PDEATHSIG). Java and Maven are required; a failure raises, so Kafka tests
fail rather than skip.
"""
from __future__ import annotations

import base64
import fcntl
import os
import shutil
import socket
import subprocess
import time
import uuid
from pathlib import Path

from service_process import ServiceProcess, shared

KAFKA_DIR = Path(__file__).resolve().parent / "kafka"
TARGET = KAFKA_DIR / "target"
BROKER_LIB = TARGET / "broker-lib"
CONNECTOR_LIB = TARGET / "connector-lib"



def _mvn(pom: str, lib: Path, *props: str) -> None:
    """Resolve a pom's dependencies into `lib` once (under a file lock: parallel test runs)."""
    TARGET.mkdir(parents=True, exist_ok=True)
    with open(TARGET / ".lock", "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        done = lib / ".complete"
        if done.exists():
            return
        shutil.rmtree(lib, ignore_errors=True)
        mvn = os.environ.get("PAIMON_ORACLE_MVN") or shutil.which("mvn")
        if mvn is None:
            raise RuntimeError("Maven (mvn) is needed to fetch the Kafka test artifacts")
        cmd = [mvn, "-q", "-B", "-s", str(KAFKA_DIR / "settings.xml"), "-f", str(KAFKA_DIR / pom), *props,
               "dependency:copy-dependencies"]
        proc = subprocess.run(cmd, capture_output=True, text=True, timeout=900)
        if proc.returncode != 0:
            raise RuntimeError(f"{' '.join(cmd)} failed:\n{proc.stdout[-3000:]}{proc.stderr[-3000:]}")
        done.touch()


def broker_classpath() -> str:
    _mvn("broker-pom.xml", BROKER_LIB)
    return str(BROKER_LIB / "*")


def connector_jars() -> list[str]:
    """Spark's Kafka connector for the running PySpark (see connector-pom.xml for the versions)."""
    _mvn("connector-pom.xml", CONNECTOR_LIB)
    return sorted(str(p) for p in CONNECTOR_LIB.glob("*.jar"))


def _java() -> str:
    home = os.environ.get("JAVA_HOME")
    return os.path.join(home, "bin", "java") if home else "java"


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


class KafkaBroker(ServiceProcess):
    """One KRaft broker+controller process; `bootstrap` is its host:port."""

    def __init__(self) -> None:
        super().__init__("kafka-test-", "broker.log")
        self.port, controller = _free_port(), _free_port()
        self.bootstrap = f"127.0.0.1:{self.port}"
        config = self.dir / "server.properties"
        config.write_text("\n".join([
            "process.roles=broker,controller", "node.id=1",
            f"controller.quorum.voters=1@127.0.0.1:{controller}",
            f"listeners=PLAINTEXT://127.0.0.1:{self.port},CONTROLLER://127.0.0.1:{controller}",
            f"advertised.listeners=PLAINTEXT://{self.bootstrap}",
            "controller.listener.names=CONTROLLER", "inter.broker.listener.name=PLAINTEXT",
            "listener.security.protocol.map=PLAINTEXT:PLAINTEXT,CONTROLLER:PLAINTEXT",
            f"log.dirs={self.dir / 'data'}", "num.partitions=1", "auto.create.topics.enable=false",
            "offsets.topic.replication.factor=1", "transaction.state.log.replication.factor=1",
            "transaction.state.log.min.isr=1", "group.initial.rebalance.delay.ms=0",
            # tests produce records stamped years ago (TIMESTAMPS_FROM): with the default 7-day
            # retention, the check every 5 minutes deleted them in the middle of a test
            "log.retention.ms=-1", ""]))
        cp = broker_classpath()
        jvm = [_java(), "-Xms128m", "-Xmx512m", "-XX:+UseSerialGC", "-Dorg.slf4j.simpleLogger.defaultLogLevel=warn",
               "-cp", cp]
        cluster_id = base64.urlsafe_b64encode(uuid.uuid4().bytes).decode().rstrip("=")
        # `--cluster-id=` and not `-t <id>`: an id starting with "-" (1 in 64 of them) would read as an option
        fmt = subprocess.run(jvm + ["kafka.tools.StorageTool", "format", f"--cluster-id={cluster_id}", "-c", str(config)],
                             capture_output=True, text=True, timeout=120)
        if fmt.returncode != 0:
            raise RuntimeError(f"formatting Kafka storage failed:\n{fmt.stdout}{fmt.stderr}")
        self.launch(jvm + ["kafka.Kafka", str(config)])
        self._wait_ready()

    def _wait_ready(self, timeout: float = 90) -> None:
        from kafka import KafkaAdminClient
        deadline = time.time() + timeout
        while time.time() < deadline:
            self.fail_if_exited("Kafka broker")
            try:
                admin = KafkaAdminClient(bootstrap_servers=self.bootstrap, request_timeout_ms=3000)
                admin.list_topics()
                admin.close()
                return
            except Exception:
                time.sleep(0.5)
        raise RuntimeError(f"Kafka broker not ready after {timeout}s:\n{self.read_log()[-3000:]}")

    def create_topic(self, name: str, partitions: int = 1) -> None:
        from kafka import KafkaAdminClient
        from kafka.admin import NewTopic
        admin = KafkaAdminClient(bootstrap_servers=self.bootstrap)
        try:
            admin.create_topics([NewTopic(name, partitions, 1)])
        finally:
            admin.close()

    def producer(self, **config):
        from kafka import KafkaProducer
        return KafkaProducer(bootstrap_servers=self.bootstrap, **config)

def get_broker() -> KafkaBroker:
    """The test run's broker, started on first use and stopped at exit."""
    return shared(KafkaBroker)


def unique_topic(prefix: str) -> str:
    return f"{prefix}-{uuid.uuid4().hex[:8]}"
