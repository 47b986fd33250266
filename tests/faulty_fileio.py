"""A FileIO that fails its Nth I/O call, for fault-injection tests of the commit path.

Every public I/O method of `FileIO` counts as one step (nested calls, e.g. the temp-file write
inside `try_create_atomic`, count too). At step `fail_at` the wrapper injects one of:

* ``fail``: the call raises before touching storage (a refused request);
* ``lost-reply``: the call takes effect, then raises (the reply was lost: the caller cannot
  know it succeeded, as with a timed-out object-store PUT);
* ``torn``: a `write_bytes` writes only the first half of its data, then raises (a process
  dying mid-write); other calls fail as in ``fail``;
* ``crash``: the call and every later one raise (the process is gone; nothing it does after
  that point reaches storage).

`calls` holds the names of the calls made so far, so a clean run gives the number of steps;
`paths` the first argument of each (the path it touches), to find a step by its file.
"""
from __future__ import annotations

import functools

import pyarrow.fs as pafs

from paimon_streaming.fileio import FileIO

MODES = ("fail", "lost-reply", "torn", "crash")
IO_METHODS = ("read_bytes", "read_text", "open_input_file", "exists", "is_dir", "file_size", "list_status",
              "list_names", "mkdirs", "write_bytes", "open_output_stream", "overwrite_atomic",
              "try_create_atomic", "delete", "delete_quietly", "delete_dir")


class InjectedFault(OSError):
    """The failure the wrapper injects (an OSError, as storage errors are)."""


class FaultyFileIO(FileIO):
    def __init__(self, fail_at: int | None = None, mode: str = "fail", fs: pafs.FileSystem | None = None):
        super().__init__(fs or pafs.LocalFileSystem())
        if mode not in MODES:
            raise ValueError(f"mode must be one of {MODES}")
        self.fail_at = fail_at
        self.mode = mode
        self.calls: list[str] = []
        self.paths: list[str] = []
        self.fired: str | None = None

    def _injected(self, name: str, path: str = "") -> bool:
        """Count one step; True when this step (or, after a crash, any later one) must fail."""
        self.calls.append(name)
        self.paths.append(path)
        if self.fail_at is None:
            return False
        step = len(self.calls)
        if step == self.fail_at:
            self.fired = name
            return True
        return self.mode == "crash" and step > self.fail_at


def _faulty(name: str):
    method = getattr(FileIO, name)

    @functools.wraps(method)
    def wrapper(self: FaultyFileIO, *args, **kwargs):
        if not self._injected(name, str(args[0]) if args else ""):
            return method(self, *args, **kwargs)
        step = len(self.calls)
        if self.mode == "lost-reply" and step == self.fail_at:
            method(self, *args, **kwargs)
        elif self.mode == "torn" and step == self.fail_at and name == "write_bytes":
            path, data = args[0], args[1]
            method(self, path, data[: len(data) // 2])
        raise InjectedFault(f"injected {self.mode} at I/O step {step} ({name} {args[0] if args else ''})")

    return wrapper


for _name in IO_METHODS:
    setattr(FaultyFileIO, _name, _faulty(_name))
