"""Create-if-absent by renaming a finished temp file onto the target, after an existence check.

HDFS renames atomically and refuses a destination that exists, so there two writers cannot
both win. Elsewhere the check and the rename are two steps: safe only with one committer per
table, which the user asserts with PAIMON_SINGLE_COMMITTER (see `stores`)."""
from __future__ import annotations

import uuid

import pyarrow.fs as pafs


class RenameCreateIfAbsent:
    def __init__(self, fs: pafs.FileSystem):
        self.fs = fs

    def __call__(self, path: str, data: bytes) -> bool:
        parent = path.rsplit("/", 1)[0] if "/" in path else "."
        self.fs.create_dir(parent, recursive=True)
        tmp = f"{parent}/.{path.rsplit('/', 1)[-1]}.{uuid.uuid4()}.tmp"
        try:
            with self.fs.open_output_stream(tmp) as f:
                f.write(data)
            if self.fs.get_file_info(path).type != pafs.FileType.NotFound:
                return False
            try:
                self.fs.move(tmp, path)
            except OSError:
                if self.fs.get_file_info(path).type != pafs.FileType.NotFound:
                    return False  # HDFS: the destination was taken between the check and the rename
                raise
            return True
        finally:
            try:
                self.fs.delete_file(tmp)
            except OSError:
                pass
