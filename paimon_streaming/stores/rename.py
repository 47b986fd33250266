"""Create-if-absent for a store without an atomic one, when only one process commits to each
table (`PAIMON_SINGLE_COMMITTER`, see `stores`): an existence check, then a move of a finished
temp file onto the target. The two steps are not atomic together: two committers could both
win, which the user rules out by setting the variable."""
from __future__ import annotations

import uuid

import pyarrow.fs as pafs


class RenameCreateIfAbsent:
    def __init__(self, fs: pafs.FileSystem):
        self.fs = fs

    def __call__(self, path: str, data: bytes) -> bool:
        if self.fs.get_file_info(path).type != pafs.FileType.NotFound:
            return False
        parent, name = path.rsplit("/", 1) if "/" in path else (".", path)
        self.fs.create_dir(parent, recursive=True)
        tmp = f"{parent}/.{name}.{uuid.uuid4()}.tmp"
        try:
            with self.fs.open_output_stream(tmp) as f:
                f.write(data)
            self.fs.move(tmp, path)
            return True
        except BaseException:
            try:
                self.fs.delete_file(tmp)
            except OSError:
                pass
            raise
