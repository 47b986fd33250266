"""Create-if-absent by publishing a finished temp file: the file is written beside the target
under a unique name, then moved onto it in one step, so the target never appears partial.

`TempFileCreateIfAbsent` is that shape with the move as a parameter: HDFS's atomic rename that
refuses a taken name (`stores.hdfs`), or, for a store without an atomic one when only one
process commits to each table (`PAIMON_SINGLE_COMMITTER`, see `stores`), an existence check
and a move (`RenameCreateIfAbsent`). Those two steps are not atomic together: two committers
could both win, which the user rules out by setting the variable."""
from __future__ import annotations

import uuid
from typing import Callable

import pyarrow.fs as pafs

# (temp path, target path) -> True when moved onto the target, False when the target was taken
Publish = Callable[[str, str], bool]


class TempFileCreateIfAbsent:
    """Write `data` to a temp file beside `path`, then `publish` it; the temp file never stays."""

    def __init__(self, fs: pafs.FileSystem, publish: Publish):
        self.fs = fs
        self.publish = publish

    def __call__(self, path: str, data: bytes) -> bool:
        parent, name = path.rsplit("/", 1) if "/" in path else (".", path)
        self.fs.create_dir(parent, recursive=True)
        tmp = f"{parent}/.{name}.{uuid.uuid4()}.tmp"
        published = False
        try:
            with self.fs.open_output_stream(tmp) as f:
                f.write(data)
            published = self.publish(tmp, path)
            return published
        finally:
            if not published:  # a published temp file is gone: deleting it would cost a round trip
                try:
                    self.fs.delete_file(tmp)
                except OSError:
                    pass


class RenameCreateIfAbsent(TempFileCreateIfAbsent):
    """An existence check, then a move (only safe with one committer per table)."""

    def __init__(self, fs: pafs.FileSystem):
        super().__init__(fs, self._check_then_move)

    def _check_then_move(self, tmp: str, path: str) -> bool:
        if self.fs.get_file_info(path).type != pafs.FileType.NotFound:
            return False
        self.fs.move(tmp, path)
        return True
