"""Rollback: make an older snapshot (or a tag) the latest again.

As Java's `RollbackHelper`: the LATEST hint moves back first, then the later snapshot
files (newest first) and the tags of later snapshots are removed; rolling back to a tag
whose snapshot has expired writes the tag's snapshot back as `snapshot-<id>` and points
EARLIEST at it. Unlike Java 1.4 (which leaves them to orphan cleanup) we then delete the
files only the removed snapshots and tags used: the full file set of the first removed
snapshot, the files later removed snapshots added, their changelog, the files of removed
tags, and their manifests and index files, minus everything the retained snapshot
references, and minus what another branch references (shared_files.py). Files are deleted
only after no snapshot or tag points at them, so a crash
half-way leaves orphans, never a snapshot with missing files.
"""
from __future__ import annotations

import logging

from .branches import MAIN, branch_path
from .errors import CorruptFileError, SnapshotNotFoundError
from .file_cleanup import FileCleaner, file_key
from .fileio import FileIO
from .manifest import ManifestEntry
from .schema import TableSchema
from .shared_files import OtherBranches
from .snapshot import Snapshot, SnapshotManager
from .tags import TagManager, snapshot_json

log = logging.getLogger(__name__)


class Rollback:
    """Rolls one table back to a snapshot id or a tag name."""

    def __init__(self, file_io: FileIO, table_path: str, schema: TableSchema, branch: str = MAIN):
        self.file_io = file_io
        self.table_path = table_path
        self.snapshots = SnapshotManager(file_io, branch_path(table_path, branch))
        self.tags = TagManager(file_io, branch_path(table_path, branch))
        self.cleaner = FileCleaner(file_io, table_path, schema)
        self.other_branches = OtherBranches(self.cleaner, branch)

    def target(self, target: int | str) -> Snapshot:
        """The snapshot to roll back to: a tag by name, or a snapshot id (from a tag when the
        snapshot has expired but a tag holds it)."""
        if isinstance(target, str):
            return self.tags.snapshot(target)
        if self.snapshots.exists(target):
            return self.snapshots.snapshot(target)
        for snap, _ in self.tags.tagged_snapshots():
            if snap.id == target:
                return snap
        raise SnapshotNotFoundError(
            f"cannot roll back {self.table_path} to snapshot {target}: it does not exist and no tag holds it "
            f"(snapshots {self.snapshots.earliest_id()}..{self.snapshots.latest_id()}, tags {self.tags.tag_names()})")

    def rollback_to(self, target: int | str) -> Snapshot:
        """Roll back; returns the snapshot that is now the latest."""
        retained = self.target(target)
        latest_id = self.snapshots.latest_id()
        earliest_id = self.snapshots.earliest_id()
        restore = not self.snapshots.exists(retained.id)
        removed_ids = [] if latest_id is None else list(
            range(max(earliest_id, retained.id + 1), latest_id + 1))
        removed = [s for s in (self._try_snapshot(i) for i in removed_ids) if s is not None]
        removed_tags = [(s, names) for s, names in self.tags.tagged_snapshots() if s.id > retained.id]
        data, meta = self._candidates(removed, [s for s, _ in removed_tags])
        try:
            keep_data = self.cleaner.live_data_files(retained)
            keep_meta = self.cleaner.metadata_files(retained, changelog=False)
            data = [e for e in data if not self.other_branches.keeps(e.file.file_name)]
            meta = {p for p in meta if not self.other_branches.keeps(p)}
        except CorruptFileError as exc:
            raise CorruptFileError(
                f"cannot roll back {self.table_path} to snapshot {retained.id}: its metadata is unreadable "
                f"({exc})") from exc

        self.snapshots.commit_latest_hint(retained.id)
        for s in reversed(removed):
            self.file_io.delete(self.snapshots.path(s.id))
        for _, names in removed_tags:
            for name in names:
                self.tags.delete_file(name)
        if restore:
            self.file_io.write_bytes(self.snapshots.path(retained.id), snapshot_json(retained))
            self.snapshots.commit_earliest_hint(retained.id)
            self.snapshots.commit_latest_hint(retained.id)

        deleted = self.cleaner.delete_data_files(e for e in data if file_key(e) not in keep_data)
        deleted += self.cleaner.delete_paths(meta - keep_meta - self._retained_changelog(retained))
        log.info("rolled %s back to snapshot %s: removed %s snapshots, %s tags, %s files", self.table_path,
                 retained.id, len(removed), sum(len(n) for _, n in removed_tags), deleted)
        return retained

    def _candidates(self, removed: list[Snapshot], removed_tags: list[Snapshot]
                    ) -> tuple[list[ManifestEntry], set[str]]:
        data: list[ManifestEntry] = []
        meta: set[str] = set()
        for i, s in enumerate(removed):
            data.extend(self.cleaner.live_entries_tolerant(s) if i == 0 else self.cleaner.added_in_delta(s))
            data.extend(self.cleaner.changelog_files(s))
            meta |= self.cleaner.metadata_files_tolerant(s, changelog=True)
        for t in removed_tags:
            data.extend(self.cleaner.live_entries_tolerant(t))
            meta |= self.cleaner.metadata_files_tolerant(t, changelog=False)
        return data, meta

    def _retained_changelog(self, retained: Snapshot) -> set[str]:
        if not retained.changelog_manifest_list:
            return set()
        return self.cleaner.metadata_files_tolerant(retained, changelog=True)

    def _try_snapshot(self, snapshot_id: int) -> Snapshot | None:
        try:
            return self.snapshots.snapshot(snapshot_id)
        except SnapshotNotFoundError:
            return None
