"""The live data files of a snapshot, kept across commits so a commit costs what it changes.

A snapshot's live files are the replay of all its manifests (`merge_entries`), which grows
with the table. Commits need them for conflict checks, so `LiveFilesCache` keeps the state
of the newest snapshot it saw per table and moves it forward by replaying only the delta
manifests of the snapshots since (a commit of this process hands its own result over
directly). This is safe under concurrent writers because a state is keyed by the manifest
list names of its snapshot, which are unique and immutable: a state never stands for
another snapshot, and the chain of deltas is only followed when the cached snapshot is
still the one on disk (a rollback that rewrote an id breaks the chain: full replay).

`LiveFiles` groups entries by partition and bucket, and a new state shares every bucket its
change does not touch, so deriving it costs the touched buckets, not the table.
"""
from __future__ import annotations

from collections import OrderedDict
from threading import Lock
from typing import Callable, Iterable

from ..errors import CommitConflictError, MissingFileError, SnapshotNotFoundError
from ..snapshot import Snapshot, SnapshotManager
from .entries import ADD, ManifestEntry
from .files import ManifestFile, ManifestList

BucketKey = tuple[bytes, int]
KeyRange = tuple[tuple, tuple]


class BucketFiles:
    """Live entries of one (partition, bucket) by identifier; never changed once built."""

    __slots__ = ("files", "key_ranges", "_total_buckets", "_names")

    def __init__(self, files: dict[tuple, ManifestEntry], key_ranges: dict[str, KeyRange],
                 total_buckets: frozenset[int] | None = None):
        self.files = files
        # decoded (min key, max key) by file name, shared with the bucket's later states
        # (names are unique, so an entry never goes stale; only dead names linger)
        self.key_ranges = key_ranges
        self._total_buckets = total_buckets
        self._names: frozenset[str] | None = None

    @property
    def total_buckets(self) -> frozenset[int]:
        if self._total_buckets is None:
            self._total_buckets = frozenset(e.total_buckets for e in self.files.values())
        return self._total_buckets

    @property
    def names(self) -> frozenset[str]:
        if self._names is None:
            self._names = frozenset(e.file.file_name for e in self.files.values())
        return self._names

    def key_range(self, entry: ManifestEntry, decode: Callable[[bytes], tuple]) -> KeyRange:
        name = entry.file.file_name
        found = self.key_ranges.get(name)
        if found is None:
            found = self.key_ranges[name] = (decode(entry.file.min_key), decode(entry.file.max_key))
        return found


class LiveFiles:
    """The live data files of one snapshot, by partition, then bucket."""

    def __init__(self, partitions: dict[bytes, dict[int, BucketFiles]]):
        self.partitions = partitions

    @staticmethod
    def replay(entries: Iterable[ManifestEntry]) -> "LiveFiles":
        """Build the state from a snapshot's full entry stream (base then delta manifests)."""
        return LiveFiles({}).apply(entries, strict=False)[0]

    def bucket(self, partition: bytes, bucket: int) -> BucketFiles | None:
        return self.partitions.get(partition, {}).get(bucket)

    def entries(self, partitions: set[bytes] | None = None) -> list[ManifestEntry]:
        """Live entries, of the given partitions only when given."""
        return [e for p, buckets in self.partitions.items() if partitions is None or p in partitions
                for b in buckets.values() for e in b.files.values()]

    def apply(self, entries: Iterable[ManifestEntry], strict: bool = True
              ) -> tuple["LiveFiles", list[ManifestEntry], set[BucketKey]]:
        """The state after `entries` (merge_entries' rule), the DELETEs of files that are not
        live (kept only when `strict`: a commit's conflict; a snapshot's own replay drops them
        as `live_entries` does), and the buckets touched.

        Raises CommitConflictError when a file is added while live, as `merge_entries` does.
        """
        partitions = dict(self.partitions)
        fresh: dict[BucketKey, dict[tuple, ManifestEntry]] = {}
        added: dict[BucketKey, set[int]] = {}  # total buckets of the added entries
        missing: dict[tuple, ManifestEntry] = {}
        for e in entries:
            key = (e.partition, e.bucket)
            files = fresh.get(key)
            if files is None:
                old = self.bucket(*key)
                files = fresh[key] = dict(old.files) if old is not None else {}
            ident = e.identifier
            if e.kind == ADD:
                if ident in files:
                    raise CommitConflictError(
                        f"file {e.file.file_name} (bucket {e.bucket}, level {e.file.level}) is added twice")
                files[ident] = e
                added.setdefault(key, set()).add(e.total_buckets)
                missing.pop(ident, None)  # DELETE then ADD of one identifier: the ADD stands
            elif files.pop(ident, None) is None and strict:
                missing[ident] = e
        for (partition, bucket), files in fresh.items():
            buckets = partitions[partition] = dict(partitions.get(partition, {}))
            old = self.bucket(partition, bucket)
            if files:
                ranges = old.key_ranges if old is not None else {}
                if len(ranges) > 2 * len(files) + 64:  # drop names of files long gone
                    names = {e.file.file_name for e in files.values()}
                    ranges = {n: r for n, r in ranges.items() if n in names}
                buckets[bucket] = BucketFiles(files, ranges, _carried_totals(old, added.get((partition, bucket))))
            else:
                buckets.pop(bucket, None)
                if not buckets:
                    del partitions[partition]
        return LiveFiles(partitions), list(missing.values()), set(fresh)


def _carried_totals(old: BucketFiles | None, added: set[int] | None) -> frozenset[int] | None:
    """A bucket's total-buckets set after a change, when known without a pass over its
    files: one value before, and every added file agrees (removals cannot add a value)."""
    if old is None or old._total_buckets is None or len(old._total_buckets) != 1:
        return None
    return old._total_buckets if added is None or added <= old._total_buckets else None


class LiveFilesCache:
    """The newest known live state per table, keyed by its snapshot's manifest lists."""

    def __init__(self, tables: int = 16, max_deltas: int = 200):
        self.tables = tables
        self.max_deltas = max_deltas  # further behind than this, a full replay is simpler
        self._items: OrderedDict[str, tuple[int, tuple[str, str], LiveFiles]] = OrderedDict()
        self._lock = Lock()

    def get(self, snapshot: Snapshot, snapshots: SnapshotManager, manifest_list: ManifestList,
            manifest_file: ManifestFile) -> LiveFiles:
        """The live files of `snapshot` of the table `snapshots` manages."""
        table, lists = snapshots.table_path, _lists(snapshot)
        with self._lock:
            cached = self._items.get(table)
        state = None
        if cached is not None and cached[1] == lists:
            return cached[2]
        if cached is not None and cached[0] < snapshot.id <= cached[0] + self.max_deltas:
            state = self._forward(cached, snapshot.id, snapshots, manifest_list, manifest_file)
        if state is None:
            metas = [m for name, size in _sized_lists(snapshot) for m in manifest_list.read(name, size)]
            state = LiveFiles.replay(e for es in manifest_file.file_io.map(manifest_file.read_meta, metas) for e in es)
        self.put(table, snapshot, state)
        return state

    @staticmethod
    def _forward(cached: tuple[int, tuple[str, str], LiveFiles], target: int, snapshots: SnapshotManager,
                 manifest_list: ManifestList, manifest_file: ManifestFile) -> LiveFiles | None:
        """Replay the deltas after the cached snapshot; None when the chain is broken (the
        cached id now holds another snapshot, or one on the way expired)."""
        cached_id, cached_lists, state = cached
        try:
            if _lists(snapshots.snapshot(cached_id)) != cached_lists:
                return None
            for sid in range(cached_id + 1, target + 1):
                snap = snapshots.snapshot(sid)
                delta = manifest_list.read(snap.delta_manifest_list, snap.delta_manifest_list_size)
                state = state.apply((e for m in delta for e in manifest_file.read_meta(m)), strict=False)[0]
        except (SnapshotNotFoundError, MissingFileError):
            return None
        return state

    def put(self, table: str, snapshot: Snapshot, state: LiveFiles) -> None:
        """Remember `state` as the live files of `snapshot` (ignored if a newer one is known)."""
        with self._lock:
            current = self._items.get(table)
            if current is None or current[0] <= snapshot.id:
                self._items[table] = (snapshot.id, _lists(snapshot), state)
            self._items.move_to_end(table)
            while len(self._items) > self.tables:
                self._items.popitem(last=False)


def _lists(snapshot: Snapshot) -> tuple[str, str]:
    return snapshot.base_manifest_list, snapshot.delta_manifest_list


def _sized_lists(snapshot: Snapshot) -> tuple[tuple[str, int | None], ...]:
    return ((snapshot.base_manifest_list, snapshot.base_manifest_list_size),
            (snapshot.delta_manifest_list, snapshot.delta_manifest_list_size))


LIVE_FILES = LiveFilesCache()
