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
        path = self.path(consumer_id)
        data = self.file_io.read_bytes_if_present(path)
        if data is None:
            return None
        try:
            obj = json.loads(data)
            next_snapshot = obj["nextSnapshot"]
            if type(next_snapshot) is not int:
                raise TypeError(f"nextSnapshot is {next_snapshot!r}, not an integer")
            mismatch = check_mismatch(obj[CHECK_KEY], json_check([next_snapshot])) if CHECK_KEY in obj else None
        except (ValueError, KeyError, TypeError) as exc:
            raise CorruptFileError(f"consumer file {path} cannot be parsed: {exc}") from exc
        if mismatch:
            raise CorruptFileError(f"consumer file {path} is damaged: {mismatch}; the stream's position is unknown: "
                                   f"restore the file from a backup, or delete it to start the consumer afresh")
        return next_snapshot

    def record(self, consumer_id: str, next_snapshot: int) -> None:
        """Record that `consumer_id` has consumed everything before `next_snapshot` (with a check
        of it, json_check.py, which Java's reader skips)."""
        n = int(next_snapshot)
        self.file_io.overwrite_atomic(self.path(consumer_id),
                                      json.dumps({"nextSnapshot": n, CHECK_KEY: json_check([n])}, indent=2).encode())

    def delete(self, consumer_id: str) -> None:
        self.file_io.delete_quietly(self.path(consumer_id))

    def consumer_ids(self) -> list[str]:
        return sorted(n[len(CONSUMER_PREFIX):] for n in self.file_io.list_names(self.dir)
                      if n.startswith(CONSUMER_PREFIX) and not n.startswith("."))

    def consumers(self) -> dict[str, int]:
        """Every consumer id with its nextSnapshot."""
        out = {}
        for cid in self.consumer_ids():
            n = self.next_snapshot(cid)
            if n is not None:
                out[cid] = n
        return out

    def min_next_snapshot(self) -> int | None:
        """The smallest nextSnapshot over all consumers (what expiration must keep), or None."""
        values = self.consumers().values()
        return min(values) if values else None
