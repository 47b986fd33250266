"""Consumers: the progress files of named streaming readers (FORMAT.md §11).

`consumer/consumer-<id>` holds `{"nextSnapshot": n}`: the reader has consumed everything
before snapshot n and still needs n and later. Snapshot expiration keeps every snapshot
at or after the smallest `nextSnapshot` of all consumers, so a reader with a consumer id
never loses the snapshots it has not read yet. Readers overwrite their file whenever they
commit progress; Java's `ConsumerManager` reads and writes the same files.
"""
from __future__ import annotations

import json
import re

from .errors import CorruptFileError
from .fileio import FileIO
from .json_check import CHECK_KEY, check_mismatch, json_check

CONSUMER_PREFIX = "consumer-"
FULL_READ_KEY = "fullRead"  # ours: the stream is reading nextSnapshot's full plan (its starting state)
_BAD_ID = re.compile(r"[/\\\x00-\x1f]")


def check_consumer_id(consumer_id: str) -> str:
    if not consumer_id or not consumer_id.strip() or _BAD_ID.search(consumer_id):
        raise ValueError(f"invalid consumer id {consumer_id!r}: use a non-blank name without '/', '\\' "
                         "or control characters")
    return consumer_id


class ConsumerManager:
    """Reads and writes the consumer progress files of one table."""

    def __init__(self, file_io: FileIO, table_path: str):
        self.file_io = file_io
        self.table_path = table_path
        self.dir = f"{table_path}/consumer"

    def path(self, consumer_id: str) -> str:
        return f"{self.dir}/{CONSUMER_PREFIX}{check_consumer_id(consumer_id)}"

    def next_snapshot(self, consumer_id: str) -> int | None:
        """The consumer's `nextSnapshot`, or None when it has no progress file."""
        found = self.progress(consumer_id)
        return None if found is None else found[0]

    def progress(self, consumer_id: str) -> tuple[int, bool] | None:
        """The consumer's `nextSnapshot`, and whether its stream is still reading that snapshot's
        full plan (its starting state: `fullRead`, which Java's readers ignore); None when it
        has no progress file."""
        path = self.path(consumer_id)
        data = self.file_io.read_bytes_if_present(path)
        if data is None:
            return None
        try:
            obj = json.loads(data)
            next_snapshot = obj["nextSnapshot"]
            if type(next_snapshot) is not int:
                raise TypeError(f"nextSnapshot is {next_snapshot!r}, not an integer")
            if not -2 ** 63 <= next_snapshot < 2 ** 63:  # Java's reader refuses it; expiration would drop everything
                raise ValueError(f"nextSnapshot {next_snapshot} is beyond a 64-bit integer")
            mismatch = check_mismatch(obj[CHECK_KEY], json_check([next_snapshot])) if CHECK_KEY in obj else None
            full = obj.get(FULL_READ_KEY, False)
            if type(full) is not bool:
                raise TypeError(f"{FULL_READ_KEY} is {full!r}, not a boolean")
        except (ValueError, KeyError, TypeError) as exc:
            raise CorruptFileError(f"consumer file {path} cannot be parsed: {exc}") from exc
        if mismatch:
            raise CorruptFileError(f"consumer file {path} is damaged: {mismatch}; the stream's position is unknown: "
                                   f"restore the file from a backup, or delete it to start the consumer afresh")
        return next_snapshot, full

    def record(self, consumer_id: str, next_snapshot: int, full_read: bool = False) -> None:
        """Record that `consumer_id` has consumed everything before `next_snapshot` (with a check
        of it, json_check.py, which Java's reader skips); `full_read`: its stream is reading
        that snapshot's full plan, which a restart from this file must read whole again (Java
        records the snapshot after a full plan once the plan is handed out)."""
        n = int(next_snapshot)
        body = {"nextSnapshot": n, CHECK_KEY: json_check([n])}
        if full_read:
            body[FULL_READ_KEY] = True
        self.file_io.overwrite_atomic(self.path(consumer_id), json.dumps(body, indent=2).encode())

    def roll_back(self, retained: int) -> None:
        """Move every consumer past snapshot `retained` back (a rollback to it: the snapshots
        after it are gone, and their ids will be taken by new commits, which it must read): to
        `retained + 1`, or, for one reading a later snapshot's full plan, to the full plan of
        `retained` (the part of its starting state it has not read is there)."""
        for cid, (n, full) in self.every_progress().items():
            if full and n > retained:
                self.record(cid, retained, full_read=True)
            elif n > retained + 1:
                self.record(cid, retained + 1)

    def delete(self, consumer_id: str) -> None:
        self.file_io.delete_quietly(self.path(consumer_id))

    def consumer_ids(self) -> list[str]:
        return sorted(n[len(CONSUMER_PREFIX):] for n in self.file_io.list_names(self.dir)
                      if n.startswith(CONSUMER_PREFIX) and not n.startswith("."))

    def consumers(self) -> dict[str, int]:
        """Every consumer id with its nextSnapshot."""
        return {cid: n for cid, (n, _) in self.every_progress().items()}

    def every_progress(self) -> dict[str, tuple[int, bool]]:
        out = {}
        for cid in self.consumer_ids():
            found = self.progress(cid)
            if found is not None:
                out[cid] = found
        return out

    def min_next_snapshot(self) -> int | None:
        """The smallest nextSnapshot over all consumers (what expiration must keep), or None."""
        values = self.consumers().values()
        return min(values) if values else None
