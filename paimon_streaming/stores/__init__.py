"""Atomic create-if-absent, per storage system: the one operation a commit needs atomically.

Paimon publishes a snapshot (and a schema) by creating `snapshot-<id>` only if no writer has
created it: two writers racing for one id must never both win, or one snapshot silently
replaces the other. Each store gives that guarantee its own way, so each is one module here:

| store                      | how                                              | module      |
|----------------------------|--------------------------------------------------|-------------|
| local filesystem           | hard link of a finished temp file (link(2))      | `local`     |
| S3 and S3-compatible       | `PutObject` with `If-None-Match: *` (botocore)   | `s3`        |
| Google Cloud Storage       | upload with `ifGenerationMatch=0`                | `gcs`       |
| Azure Blob / ADLS Gen2     | upload with `If-None-Match: *`                   | `azure`     |
| HDFS                       | HDFS rename2 of a finished temp file (JNI)       | `hdfs`      |

Any other filesystem has no atomic create: committing there raises UnsupportedStoreError,
unless the environment says there is only one committer per table
(`PAIMON_SINGLE_COMMITTER=true`), which makes an existence check followed by a move safe
(`rename`).
A `SubTreeFileSystem` uses its base filesystem's creator with the prefixed path.
"""
from __future__ import annotations

import os
from typing import Any, Callable, Iterable

import pyarrow.fs as pafs

from ..errors import UnsupportedOperationError

# (path, bytes) -> True when created, False when the path already existed. An OSError means
# the outcome is unknown (the request may have been applied): callers re-read to find out.
CreateIfAbsent = Callable[[str, bytes], bool]
# path -> True when the directory's marker object is gone, False when something else has its prefix
RemoveDirMarker = Callable[[str], bool]

SINGLE_COMMITTER_ENV = "PAIMON_SINGLE_COMMITTER"

# 4xx answers to a conditional create that are no refusal: 408 Request Timeout (the request may
# still be applied) and 429 Too Many Requests (GCS's rate limit; S3-compatible stores and
# gateways throttle with it too). The creators report them as an unknown outcome (OSError), so
# the committer re-reads and tries again, instead of a configuration error that ends the commit.
THROTTLED_OR_TIMED_OUT = frozenset({408, 429})


class UnsupportedStoreError(UnsupportedOperationError):
    """The filesystem offers no atomic create-if-absent, so commits could overwrite each other."""


class ConditionalUpload:
    """Base of the object stores' creators, a conditional upload through the store's own SDK
    (pyarrow has no conditional writes), and of their directory-marker removers. The SDK
    client is made on first use from the keyword arguments pyarrow rebuilds the filesystem
    from, so the creator pickles to Spark executors as plain settings."""

    def __init__(self, fs: pafs.FileSystem):
        self.settings = fs.__reduce__()[1][0]
        self._client: Any = None

    def client(self) -> Any:
        if self._client is None:
            self._client = self.make_client(self.settings)
        return self._client

    def make_client(self, settings: dict) -> Any:
        raise NotImplementedError


class DirMarkerRemover(ConditionalUpload):
    """Deletes the marker object `<dir>/` of a directory once no other object has that prefix
    (`FileIO.delete_empty_dir`); only the marker, so an object written meanwhile stays. A marker
    already gone counts as removed. The stores differ only in the SDK calls (the hooks below)."""

    scheme = ""  # of the URLs errors name: s3, gs

    def __call__(self, path: str) -> bool:
        bucket, _, key = path.lstrip("/").partition("/")
        marker = key.rstrip("/") + "/"
        try:
            if any(name != marker for name in self.list_names(bucket, marker)):
                return False
            self.delete_object(bucket, marker)
        except self.gone_errors():
            pass
        except self.sdk_errors() as exc:  # the directory stays; callers leave it
            raise OSError(f"removing the directory marker {self.scheme}://{bucket}/{marker}: {exc}") from exc
        return True

    def list_names(self, bucket: str, prefix: str) -> Iterable[str]:
        """The names of up to two objects in `bucket` starting with `prefix`."""
        raise NotImplementedError

    def delete_object(self, bucket: str, key: str) -> None:
        raise NotImplementedError

    def sdk_errors(self) -> tuple[type[Exception], ...]:
        """What the SDK raises when a request fails (imported on use: the SDK is an extra)."""
        raise NotImplementedError

    def gone_errors(self) -> tuple[type[Exception], ...]:
        """What the SDK raises for an object that does not exist."""
        raise NotImplementedError


def create_if_absent_for(fs: pafs.FileSystem, uri_query: str = "") -> CreateIfAbsent:
    """The atomic create-if-absent of the store behind `fs` (see the module docstring);
    `uri_query`: that of the URI `fs` was opened from, for what pyarrow keeps out of its settings."""
    if isinstance(fs, pafs.SubTreeFileSystem):
        inner, base = create_if_absent_for(fs.base_fs, uri_query), fs.base_path.rstrip("/")
        return lambda path, data: inner(f"{base}/{path.lstrip('/')}", data)
    if isinstance(fs, pafs.LocalFileSystem):
        from .local import create_if_absent
        return create_if_absent
    if isinstance(fs, pafs.S3FileSystem):
        from .s3 import S3CreateIfAbsent
        return S3CreateIfAbsent(fs)
    if isinstance(fs, pafs.GcsFileSystem):
        from .gcs import GcsCreateIfAbsent
        return GcsCreateIfAbsent(fs)
    if isinstance(fs, getattr(pafs, "AzureFileSystem", ())):  # absent from pyarrow builds without Azure
        from .azure import AzureCreateIfAbsent
        return AzureCreateIfAbsent(fs, uri_query)
    if isinstance(fs, pafs.HadoopFileSystem):
        from .hdfs import HdfsCreateIfAbsent
        return HdfsCreateIfAbsent(fs)
    if _single_committer():
        from .rename import RenameCreateIfAbsent
        return RenameCreateIfAbsent(fs)
    raise UnsupportedStoreError(
        f"the {fs.type_name!r} filesystem has no atomic create-if-absent, so two writers committing at once "
        "could replace each other's snapshot. Supported: the local filesystem, S3 (and S3-compatible stores "
        f"with conditional writes), Google Cloud Storage, Azure Blob Storage, HDFS. If only one process ever commits to each table, set "
        f"{SINGLE_COMMITTER_ENV}=true to publish by an existence check and a rename")


def dir_marker_remover_for(fs: pafs.FileSystem) -> RemoveDirMarker:
    """What removes an empty directory's marker object on S3 and GCS, where pyarrow writes one
    for every directory a file is written in (`FileIO.delete_empty_dir`); elsewhere one that
    removes nothing."""
    if isinstance(fs, pafs.SubTreeFileSystem):
        inner, base = dir_marker_remover_for(fs.base_fs), fs.base_path.rstrip("/")
        return lambda path: inner(f"{base}/{path.lstrip('/')}")
    if isinstance(fs, pafs.S3FileSystem):
        from .s3 import S3DirMarkerRemover
        return S3DirMarkerRemover(fs)
    if isinstance(fs, pafs.GcsFileSystem):
        from .gcs import GcsDirMarkerRemover
        return GcsDirMarkerRemover(fs)
    return lambda path: False


def _single_committer() -> bool:
    return os.environ.get(SINGLE_COMMITTER_ENV, "").strip().lower() in ("1", "true", "yes")
