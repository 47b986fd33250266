"""An Azure Blob Storage emulator on loopback for the object-store tests: Azurite, installed
from npm into tests/.azurite by `ensure_installed` (the test command does it once).

Azurite serves the flat blob API (no hierarchical namespace, no DFS endpoint): pyarrow detects
that and uses blob operations, as on a flat storage account."""
from __future__ import annotations

import socket
import subprocess
import time
import urllib.request
from datetime import datetime, timedelta, timezone
from pathlib import Path

import pyarrow.fs as pafs

from service_process import stop_process

VERSION = "3.35.0"
HERE = Path(__file__).resolve().parent
PREFIX = HERE / ".azurite" / VERSION
BINARY = PREFIX / "node_modules" / ".bin" / "azurite-blob"
ACCOUNT = "devstoreaccount1"
# Azurite's documented, public development account key (not a secret)
KEY = "Eby8vdM02xNOcqFlqUwJPLlmEtlCDXJ1OUzFT50uSRZ6IFsuFq2UVErCz4I6tq/K1SZFPTOtr/KBHBeksoGMGw=="


def ensure_installed() -> Path:
    if not BINARY.exists():
        PREFIX.mkdir(parents=True, exist_ok=True)
        subprocess.run(["npm", "install", "--silent", "--no-audit", "--no-fund", "--prefix", str(PREFIX),
                        f"azurite@{VERSION}"], check=True)
    return BINARY


class AzureServer:
    """Azurite's blob service (in memory) on 127.0.0.1 with a free port."""

    def __init__(self):
        with socket.socket() as s:
            s.bind(("127.0.0.1", 0))
            self.port = s.getsockname()[1]
        self.authority = f"127.0.0.1:{self.port}"
        self.process = subprocess.Popen(
            [str(ensure_installed()), "--blobHost", "127.0.0.1", "--blobPort", str(self.port),
             "--inMemoryPersistence", "--skipApiVersionCheck", "--silent"],
            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        deadline = time.time() + 30
        while True:
            try:
                urllib.request.urlopen(f"http://{self.authority}/", timeout=1)
                break
            except urllib.error.HTTPError:
                break  # answering (an anonymous request is refused): up
            except OSError:
                if time.time() > deadline or self.process.poll() is not None:
                    self.stop()
                    raise RuntimeError("Azurite did not start")
                time.sleep(0.1)

    def filesystem(self) -> pafs.AzureFileSystem:
        return pafs.AzureFileSystem(account_name=ACCOUNT, account_key=KEY, blob_storage_authority=self.authority,
                                    blob_storage_scheme="http", dfs_storage_authority=self.authority,
                                    dfs_storage_scheme="http")

    def uri(self, path: str) -> str:
        """An abfs:// location on this server. pyarrow's URIs carry no account key, so an account SAS
        signed with it travels in the query (with enable_tls=false: the emulator speaks http)."""
        from azure.storage.blob import AccountSasPermissions, ResourceTypes, generate_account_sas
        sas = generate_account_sas(ACCOUNT, KEY, ResourceTypes(service=True, container=True, object=True),
                                   AccountSasPermissions(read=True, write=True, delete=True, list=True, add=True,
                                                         create=True),
                                   expiry=datetime.now(timezone.utc) + timedelta(hours=2))
        return f"abfs://{ACCOUNT}@{self.authority}/{path}?enable_tls=false&{sas}"

    def create_container(self, name: str) -> None:
        self.filesystem().create_dir(name)

    def stop(self) -> None:
        stop_process(self.process)


if __name__ == "__main__":
    print(ensure_installed())
