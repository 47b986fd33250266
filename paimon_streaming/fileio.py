"""FileIO: the one place that touches storage, over pyarrow filesystems.

Paths handed around the core are plain strings in the filesystem's own namespace (for the
local filesystem: absolute paths). `FileIO.for_path` turns a user's location
(``/wh``, ``file:///wh``, ``s3://bucket/wh``, ``hdfs://nn/wh``) into a FileIO plus that path.

Snapshot publication needs "create if absent": on the local filesystem a hard link of a
finished temp file (fails if the target exists) gives it atomically; other filesystems
use an exclusive existence check (see `try_create_atomic`).
"""
from __future__ import annotations

import os
import uuid
from dataclasses import dataclass

import pyarrow.fs as pafs


@dataclass(frozen=True)
class FileStatus:
    path: str
    size: int
    mtime_ms: int
    is_dir: bool


class FileIO:
    """Storage access used by every module: read/write whole files, list, delete, atomic create."""

    def __init__(self, fs: pafs.FileSystem):
        self.fs = fs
        self.is_local = isinstance(fs, pafs.LocalFileSystem)

    @staticmethod
    def for_path(location: str, filesystem: pafs.FileSystem | None = None) -> tuple["FileIO", str]:
        if filesystem is not None:
            return FileIO(filesystem), location.rstrip("/") or "/"
        if "://" not in location:
            return FileIO(pafs.LocalFileSystem()), os.path.abspath(location)
        fs, path = pafs.FileSystem.from_uri(location)
        return FileIO(fs), path.rstrip("/")

    # ---- reading ------------------------------------------------------------------------
    def read_bytes(self, path: str) -> bytes:
        with self.fs.open_input_stream(path) as f:
            return f.read()

    def read_text(self, path: str) -> str:
        return self.read_bytes(path).decode("utf-8")

    def open_input_file(self, path: str):
        return self.fs.open_input_file(path)

    def exists(self, path: str) -> bool:
        return self.fs.get_file_info(path).type != pafs.FileType.NotFound

    def is_dir(self, path: str) -> bool:
        return self.fs.get_file_info(path).type == pafs.FileType.Directory

    def file_size(self, path: str) -> int:
        info = self.fs.get_file_info(path)
        if info.type == pafs.FileType.NotFound:
            raise FileNotFoundError(path)
        return info.size

    def list_status(self, path: str) -> list[FileStatus]:
        """Direct children of a directory; empty when it does not exist."""
        try:
            infos = self.fs.get_file_info(pafs.FileSelector(path, allow_not_found=True))
        except FileNotFoundError:
            return []
        return [FileStatus(i.path, i.size or 0, int(i.mtime_ns // 1_000_000) if i.mtime_ns else 0,
                           i.type == pafs.FileType.Directory) for i in infos]

    def list_names(self, path: str) -> list[str]:
        return [s.path.rsplit("/", 1)[-1] for s in self.list_status(path)]

    # ---- writing ------------------------------------------------------------------------
    def mkdirs(self, path: str) -> None:
        self.fs.create_dir(path, recursive=True)

    def write_bytes(self, path: str, data: bytes) -> None:
        """Write (or overwrite) a whole file."""
        self.mkdirs(_parent(path))
        with self.fs.open_output_stream(path) as f:
            f.write(data)

    def open_output_stream(self, path: str):
        self.mkdirs(_parent(path))
        return self.fs.open_output_stream(path)

    def overwrite_atomic(self, path: str, data: bytes) -> None:
        """Replace a file so readers see the old or the new content, never a partial one."""
        if self.is_local:
            tmp = f"{_parent(path)}/.{path.rsplit('/', 1)[-1]}.{uuid.uuid4()}.tmp"
            self.write_bytes(tmp, data)
            os.replace(tmp, path)
        else:  # object stores publish whole objects on close
            self.write_bytes(path, data)

    def try_create_atomic(self, path: str, data: bytes) -> bool:
        """Create `path` with `data` only if it does not exist. False when it already exists.

        Local: write a temp file then hard-link it to the target; link(2) fails atomically
        when the target exists, so two writers can never both win.
        """
        parent = _parent(path)
        self.mkdirs(parent)
        if self.is_local:
            tmp = f"{parent}/.{path.rsplit('/', 1)[-1]}.{uuid.uuid4()}.tmp"
            self.write_bytes(tmp, data)
            try:
                os.link(tmp, path)
                return True
            except FileExistsError:
                return False
            finally:
                os.unlink(tmp)
        if self.exists(path):
            return False
        self.write_bytes(path, data)
        return True

    def delete(self, path: str) -> None:
        """Delete a file; a missing file is not an error."""
        try:
            self.fs.delete_file(path)
        except FileNotFoundError:
            pass

    def delete_quietly(self, path: str) -> None:
        try:
            self.delete(path)
        except OSError:
            pass

    def delete_dir(self, path: str) -> None:
        try:
            self.fs.delete_dir(path)
        except FileNotFoundError:
            pass


def _parent(path: str) -> str:
    return path.rsplit("/", 1)[0] if "/" in path else "."
