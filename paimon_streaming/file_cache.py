"""A per-process LRU of the decoded contents of files that never change once written.

Paimon names every manifest, manifest list and deletion-vector index file uniquely and never
rewrites one, so whatever this process wrote or read under a path stays that path's content:
the next batch of a writer reads back its own metadata from memory instead of the store (on an
object store, a round trip per file saved on every batch).
"""
from __future__ import annotations

import weakref
from collections import OrderedDict
from threading import Lock
from typing import Callable, Generic, TypeVar

V = TypeVar("V")
_ALL: "weakref.WeakSet[ImmutableFileCache]" = weakref.WeakSet()


def clear_all() -> None:
    """Forget every cached file: the process then reads like a fresh one (tests of damaged files)."""
    for cache in list(_ALL):
        cache.clear()


class ImmutableFileCache(Generic[V]):
    """Bounded by entries and, with `weigh`, by the sum of their weights (bytes); thread-safe."""

    def __init__(self, capacity: int, max_weight: int | None = None, weigh: Callable[[V], int] | None = None):
        self.capacity = capacity
        self.max_weight = max_weight
        self.weigh = weigh or (lambda value: 0)
        self._items: OrderedDict[str, V] = OrderedDict()
        self._weight = 0
        self._lock = Lock()
        _ALL.add(self)

    def clear(self) -> None:
        with self._lock:
            self._items.clear()
            self._weight = 0

    def get(self, key: str) -> V | None:
        with self._lock:
            value = self._items.get(key)
            if value is not None:
                self._items.move_to_end(key)
            return value

    def put(self, key: str, value: V) -> None:
        weight = self.weigh(value)
        if self.max_weight is not None and weight > self.max_weight:
            return
        with self._lock:
            old = self._items.pop(key, None)
            if old is not None:
                self._weight -= self.weigh(old)
            self._items[key] = value
            self._weight += weight
            while len(self._items) > self.capacity or (self.max_weight is not None and self._weight > self.max_weight):
                _, evicted = self._items.popitem(last=False)
                self._weight -= self.weigh(evicted)
