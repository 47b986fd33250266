"""Which files a snapshot (or tag) references, and their safe deletion.

Snapshot expiration, tag deletion and rollback all work the same way: collect candidate
files from the snapshots that go away, subtract what the snapshots and tags that stay
reference, delete the rest. This module holds the two halves:

* references: the live data files of a snapshot keyed by (partition, bucket, file name),
  and its metadata files (manifest lists, manifests, index manifest, index files,
  statistics) as paths;
* candidates: the data files a snapshot's delta DELETEs (a DELETE cancelled by an ADD of
  the same file in the same delta is an upgrade to another level, not a removal), the
  changelog files it ADDs, and deletion of data files with their extra files.

Reading a candidate list tolerates missing manifests (an earlier run may have been killed
half-way and already removed them); reading a reference set never does, because a file
wrongly thought unreferenced would be deleted.
"""
from __future__ import annotations

import logging
from typing import Iterable

from .errors import CorruptFileError
from .fileio import FileIO
from .manifest import ADD, DELETE, IndexManifestEntry, ManifestEntry, live_entries
from .paths import TableDirs
from .scan import TableScan
from .schema import TableSchema
from .snapshot import Snapshot

log = logging.getLogger(__name__)

FileKey = tuple[bytes, int, str]  # (partition, bucket, file name): how Paimon matches data files


def file_key(entry: ManifestEntry) -> FileKey:
    return entry.partition, entry.bucket, entry.file.file_name


class FileCleaner:
    """References and deletion of the data, changelog, manifest and index files of one table."""

    def __init__(self, file_io: FileIO, table_path: str, schema: TableSchema):
        self.file_io = file_io
        self.table_path = table_path
        self.scan = TableScan(file_io, table_path, schema)
        self.manifest_dir = f"{table_path}/manifest"
        self._live_cache: dict[str, frozenset[FileKey]] = {}

    # ---- references (strict) ------------------------------------------------------------
    def live_data_files(self, snapshot: Snapshot) -> frozenset[FileKey]:
        """Data files a batch read of `snapshot` uses. Cached by base+delta list names, which
        identify the content (a tag and its snapshot share them)."""
        key = f"{snapshot.base_manifest_list}|{snapshot.delta_manifest_list}"
        cached = self._live_cache.get(key)
        if cached is None:
            cached = frozenset(file_key(e) for e in self.scan.live_entries(snapshot))
            self._live_cache[key] = cached
        return cached

    def metadata_files(self, snapshot: Snapshot, changelog: bool) -> set[str]:
        """Paths of the metadata files `snapshot` references (the changelog manifests only
        when asked: tags keep none, their changelog belongs to the snapshot)."""
        lists = [snapshot.base_manifest_list, snapshot.delta_manifest_list]
        if changelog and snapshot.changelog_manifest_list:
            lists.append(snapshot.changelog_manifest_list)
        out = set()
        for name in lists:
            out.add(self._manifest_path(name))
            out.update(self._manifest_path(m.file_name) for m in self.scan.manifest_list.read(name))
        if snapshot.index_manifest:
            out.add(self._manifest_path(snapshot.index_manifest))
            out.update(self.index_file_path(e)
                       for e in self.scan.index_manifest.read(snapshot.index_manifest))
        if snapshot.statistics:
            out.add(f"{self.table_path}/statistics/{snapshot.statistics}")
        return out

    # ---- candidates (tolerant) ----------------------------------------------------------
    def deleted_in_delta(self, snapshot: Snapshot) -> list[ManifestEntry]:
        """Data files removed by `snapshot`'s delta: DELETE entries whose file the same delta
        does not ADD again (an upgrade is DELETE + ADD of one file at two levels)."""
        pending: dict[str, ManifestEntry] = {}
        for e in self._tolerant(lambda: self.scan.delta_entries(snapshot), snapshot.delta_manifest_list):
            path = self.data_file_path(e)
            if e.kind == ADD:
                pending.pop(path, None)
            elif e.kind == DELETE:
                pending[path] = e
        return list(pending.values())

    def added_in_delta(self, snapshot: Snapshot) -> list[ManifestEntry]:
        return [e for e in self._tolerant(lambda: self.scan.delta_entries(snapshot), snapshot.delta_manifest_list)
                if e.kind == ADD]

    def changelog_files(self, snapshot: Snapshot) -> list[ManifestEntry]:
        if snapshot.changelog_manifest_list is None:
            return []
        return [e for e in self._tolerant(lambda: self.scan.changelog_entries(snapshot),
                                          snapshot.changelog_manifest_list) if e.kind == ADD]

    def live_entries_tolerant(self, snapshot: Snapshot) -> list[ManifestEntry]:
        return self._tolerant(lambda: live_entries(
            e for name in (snapshot.base_manifest_list, snapshot.delta_manifest_list)
            for m in self.scan.manifest_list.read(name) for e in self.scan.manifest_file.read(m.file_name)),
            snapshot.base_manifest_list)

    def metadata_files_tolerant(self, snapshot: Snapshot, changelog: bool) -> set[str]:
        """Like `metadata_files`, for candidates: whatever can still be read, plus the list
        and index manifest names themselves."""
        out = {self._manifest_path(snapshot.base_manifest_list), self._manifest_path(snapshot.delta_manifest_list)}
        lists = [snapshot.base_manifest_list, snapshot.delta_manifest_list]
        if changelog and snapshot.changelog_manifest_list:
            lists.append(snapshot.changelog_manifest_list)
            out.add(self._manifest_path(snapshot.changelog_manifest_list))
        for name in lists:
            out.update(self._manifest_path(m.file_name)
                       for m in self._tolerant(lambda: self.scan.manifest_list.read(name), name))
        if snapshot.index_manifest:
            out.add(self._manifest_path(snapshot.index_manifest))
            out.update(self.index_file_path(e) for e in self._tolerant(
                lambda: self.scan.index_manifest.read(snapshot.index_manifest), snapshot.index_manifest))
        if snapshot.statistics:
            out.add(f"{self.table_path}/statistics/{snapshot.statistics}")
        return out

    # ---- paths and deletion -------------------------------------------------------------
    def data_file_path(self, entry: ManifestEntry) -> str:
        return TableDirs.data_file(self._bucket_dir(entry), entry.file)

    def data_file_paths(self, entry: ManifestEntry) -> list[str]:
        return TableDirs.data_file_paths(self._bucket_dir(entry), entry.file)

    def index_file_path(self, entry: IndexManifestEntry) -> str:
        return self.scan.dirs.index_file(self._bucket_dir(entry), entry.index_file)

    def data_paths(self, entries: Iterable[ManifestEntry]) -> set[str]:
        """The paths of the data files `entries` with their extra files."""
        return {p for e in entries for p in self.data_file_paths(e)}

    def delete_data_files(self, entries: Iterable[ManifestEntry]) -> int:
        return self.delete_paths(self.data_paths(entries))

    def delete_paths(self, paths: Iterable[str]) -> int:
        count = 0
        for path in sorted(set(paths)):
            try:
                self.file_io.delete(path)
                count += 1
            except OSError as exc:
                log.warning("could not delete %s (left for orphan cleanup): %s", path, exc)
        return count

    def delete_empty_dirs(self, deleted: Iterable[str]) -> None:
        """`snapshot.clean-empty-directories`, as Java's `FileDeletionBase.cleanEmptyDirectories`
        after snapshot expiration, changelog expiration and tag deletion: the bucket directories
        the files just `deleted` were in (paths; manifests and files at external paths are in
        none of the table's), then each one's partition directory, and once that went the
        partition directories above it, deepest first, each only when nothing is left in it
        (`FileIO.delete_empty_dir`: a file a writer adds meanwhile stays). A directory that
        cannot go is left, logged at debug level. Nothing without the option."""
        if not self.scan.options.get("snapshot.clean-empty-directories"):
            return
        levels = len(self.scan.schema.partition_keys)
        root = f"{self.scan.dirs.data_root}/"
        buckets = {d for d in (p.rsplit("/", 1)[0] for p in deleted) if d.startswith(root)
                   and d.count("/") - root.count("/") == levels and d.rsplit("/", 1)[-1].startswith("bucket-")}
        for bucket in sorted(buckets):
            self._delete_if_empty(bucket)
        above: set[str] = set()
        for partition in sorted({b.rsplit("/", 1)[0] for b in buckets} if levels else ()):
            if self._delete_if_empty(partition):
                for _ in range(levels - 1):
                    partition = partition.rsplit("/", 1)[0]
                    above.add(partition)
        for directory in sorted(above, key=lambda d: d.count("/"), reverse=True):
            self._delete_if_empty(directory)

    def _delete_if_empty(self, directory: str) -> bool:
        try:
            return self.file_io.delete_empty_dir(directory)
        except OSError as exc:
            log.debug("directory %s was not removed (not empty?): %s", directory, exc)
            return False

    def _bucket_dir(self, entry: ManifestEntry | IndexManifestEntry) -> str:
        return self.scan.dirs.bucket(self.scan.partition_dir(entry.partition), entry.bucket)

    def _manifest_path(self, name: str) -> str:
        return f"{self.manifest_dir}/{name}"

    @staticmethod
    def _tolerant(read, name: str | None) -> list:
        try:
            return list(read())
        except CorruptFileError as exc:
            log.warning("skipping unreadable metadata %s while collecting files to delete: %s", name, exc)
            return []
