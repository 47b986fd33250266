"""docker/: the compose file (Kafka in KRaft mode, Spark master and worker, the ingest job)
is valid for `docker compose config` where the CLI has compose, and its structure is
checked with a YAML parser everywhere."""
from __future__ import annotations

import shutil
import subprocess
from pathlib import Path

import pytest

DOCKER = Path(__file__).resolve().parent.parent / "docker"
COMPOSE = DOCKER / "compose.yaml"


def _compose_command() -> list[str] | None:
    for cmd in (["docker", "compose"], ["docker-compose"]):
        if shutil.which(cmd[0]) and subprocess.run(cmd + ["version"], capture_output=True).returncode == 0:
            return cmd
    return None


def test_docker_compose_config_validates():
    cmd = _compose_command()
    if cmd is None:
        pytest.skip("no docker compose here (neither the docker CLI's compose plugin nor docker-compose)")
    proc = subprocess.run(cmd + ["-f", str(COMPOSE), "config", "--quiet"], capture_output=True, text=True)
    assert proc.returncode == 0, proc.stderr


def test_compose_structure():
    yaml = pytest.importorskip("yaml")
    spec = yaml.safe_load(COMPOSE.read_text())
    services = spec["services"]
    assert {"kafka", "spark-master", "spark-worker", "ingest"} <= set(services)
    kafka = services["kafka"]["environment"]
    assert kafka["KAFKA_PROCESS_ROLES"] == "broker,controller" and "KAFKA_CONTROLLER_QUORUM_VOTERS" in kafka
    ingest = services["ingest"]
    command = ingest["command"]
    assert command[:2] == ["paimon-streaming", "ingest"]
    assert "--bootstrap-servers=kafka:9092" in command and "--master=spark://spark-master:7077" in command
    assert ingest["depends_on"]["kafka"]["condition"] == "service_healthy"
    # The job's arguments parse with the real CLI.
    from paimon_streaming.cli import build_parser
    args = build_parser().parse_args(command[1:])
    assert (args.table, args.primary_key, args.warehouse) == ("shop.orders", ["id"], "/data/warehouse")
    # Executors write table files: the worker and the driver share the warehouse volume.
    assert "data:/data" in services["spark-worker"]["volumes"] and "data:/data" in ingest["volumes"]
    build = ingest["build"]
    assert (COMPOSE.parent / build["context"] / build["dockerfile"]).is_file()
    for copied in ("paimon_streaming", "sinks", "sources", "docker/produce_sample.py"):
        assert (DOCKER.parent / copied).exists(), copied
