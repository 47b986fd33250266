"""A GCS emulator on loopback for the object-store tests: fake-gcs-server, built from its Go
module (github.com/fsouza/fake-gcs-server) into tests/.gcs-emulator by `ensure_built` (the
test command does it once; the Go module proxy is the only download)."""
from __future__ import annotations

import os
import socket
import subprocess
import time
import urllib.request
from pathlib import Path

import pyarrow.fs as pafs

from service_process import stop_process

VERSION = "v1.56.1"
HERE = Path(__file__).resolve().parent
BIN_DIR = HERE / ".gcs-emulator" / VERSION
BINARY = BIN_DIR / "fake-gcs-server"
PROJECT = "paimon-tests"


def ensure_built() -> Path:
    if not BINARY.exists():
        BIN_DIR.mkdir(parents=True, exist_ok=True)
        subprocess.run(["go", "install", f"github.com/fsouza/fake-gcs-server@{VERSION}"], check=True,
                       env=dict(os.environ, GOBIN=str(BIN_DIR), GOFLAGS="-mod=mod"))
    return BINARY


class GcsServer:
    """fake-gcs-server (in-memory) on 127.0.0.1 with a free port."""

    def __init__(self):
        with socket.socket() as s:
            s.bind(("127.0.0.1", 0))
            self.port = s.getsockname()[1]
        self.endpoint = f"127.0.0.1:{self.port}"
        self.process = subprocess.Popen(
            [str(ensure_built()), "-scheme", "http", "-host", "127.0.0.1", "-port", str(self.port),
             "-backend", "memory", "-log-level", "error"], stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        deadline = time.time() + 30
        while True:
            try:
                urllib.request.urlopen(f"http://{self.endpoint}/storage/v1/b", timeout=1).read()
                break
            except OSError:
                if time.time() > deadline or self.process.poll() is not None:
                    self.stop()
                    raise RuntimeError("fake-gcs-server did not start")
                time.sleep(0.1)

    def filesystem(self) -> pafs.GcsFileSystem:
        return pafs.GcsFileSystem(anonymous=True, scheme="http", endpoint_override=self.endpoint, project_id=PROJECT)

    def create_bucket(self, name: str) -> None:
        self.filesystem().create_dir(name)

    def stop(self) -> None:
        stop_process(self.process)


if __name__ == "__main__":
    print(ensure_built())
