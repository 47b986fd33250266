"""Rows of the intermediate-level files compaction just wrote, kept in memory for the next merge.

With level 0 forced up at every batch (deletion-vector tables), the run a compaction writes
below the top level is merged again by one of the next few batches: level 1 takes in level 0
almost every time. Data files never change, so their rows can be kept by file name and that
merge skips reading and decoding them again. The cache is one per process (as the key index
cache, so a Spark executor's Python worker keeps it across micro-batches), a byte-bounded LRU;
compaction forgets the files it removes at once.

Bound: `PAIMON_COMPACTION_ROWS_CACHE_SIZE` (default 64 mb; 0 turns the cache off).
"""
from __future__ import annotations

import os
from collections import OrderedDict
from threading import Lock
from typing import Iterable

import pyarrow as pa

from ..option_text import parse_memory_size

ENV_SIZE = "PAIMON_COMPACTION_ROWS_CACHE_SIZE"


class RecentRows:
    def __init__(self, max_bytes: int):
        self.max_bytes = max_bytes
        # rows and their size (Table.nbytes walks every buffer of a slice: taken once)
        self._items: OrderedDict[str, tuple[pa.Table, int]] = OrderedDict()
        self._bytes = 0
        self._lock = Lock()

    def put(self, name: str, rows: pa.Table) -> None:
        """Keep the rows of data file `name` (ignored when larger than the whole bound)."""
        if not self.max_bytes:
            return
        size = rows.nbytes
        if size > self.max_bytes:
            return
        with self._lock:
            old = self._items.pop(name, None)
            if old is not None:
                self._bytes -= old[1]
            self._items[name] = (rows, size)
            self._bytes += size
            while self._bytes > self.max_bytes:
                _, (_, evicted) = self._items.popitem(last=False)
                self._bytes -= evicted

    def get(self, name: str) -> pa.Table | None:
        with self._lock:
            item = self._items.get(name)
            if item is None:
                return None
            self._items.move_to_end(name)
            return item[0]

    def discard(self, names: Iterable[str]) -> None:
        with self._lock:
            for name in names:
                item = self._items.pop(name, None)
                if item is not None:
                    self._bytes -= item[1]

    @property
    def nbytes(self) -> int:
        return self._bytes

    def __contains__(self, name: str) -> bool:
        return name in self._items


RECENT_ROWS = RecentRows(parse_memory_size(os.environ.get(ENV_SIZE, "").strip() or "64 mb"))
