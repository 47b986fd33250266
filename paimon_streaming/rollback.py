"""Rollback: make an older snapshot (or a tag) the latest again.

As Java's `RollbackHelper`: the LATEST hint moves back first, then the later snapshot
files (newest first) and the tags of later snapshots are removed; rolling back to a tag
whose snapshot has expired writes the tag's snapshot back as `snapshot-<id>` and points
EARLIEST at it (the order: `Rollback.rollback_to`). Unlike Java 1.4 (which leaves them to
orphan cleanup) we then delete the files only the removed snapshots and tags used: the full
file set of the first removed snapshot, the files later removed snapshots added, their
changelog, the files of removed tags, and their manifests and index files, minus everything
the retained snapshot references, and minus what another branch references
(shared_files.py). Files are deleted only after no snapshot or tag points at them, so a crash
half-way leaves orphans, never a snapshot with missing files. A writer that commits meanwhile
on a snapshot being removed makes the rollback write the removed snapshots back and fail
(CommitConflictError) rather than leave its commit beyond a gap; a tag made meanwhile of a
removed snapshot is removed with the others.
"""
from __future__ import annotations

import logging

from .branches import MAIN, branch_path
from .consumers import ConsumerManager
from .errors import CommitConflictError, CorruptFileError, SnapshotNotFoundError
from .file_cleanup import FileCleaner, file_key
from .long_lived_changelogs import PREFIX as CHANGELOG_PREFIX
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
        self.root = branch_path(table_path, branch)
        self.snapshots = SnapshotManager(file_io, self.root)
        self.tags = TagManager(file_io, self.root)
        self.cleaner = FileCleaner(file_io, table_path, schema)
        self.other_branches = OtherBranches(self.cleaner, branch)

    def target(self, target: int | str) -> Snapshot:
        """The snapshot to roll back to: a tag by name, or a snapshot id (from a tag when the
        snapshot has expired but a tag holds it)."""
        if isinstance(target, str):
            return self.tags.snapshot(target)
        if self.snapshots.exists(target):
            return self.snapshots.snapshot(target)
        tagged = self.tags.holding(target)
        if tagged is not None:
            return tagged
        raise SnapshotNotFoundError(
            f"cannot roll back {self.table_path} to snapshot {target}: it does not exist and no tag holds it "
            f"({self._snapshot_range()}, tags {self.tags.tag_names()})")

    def _snapshot_range(self) -> str:
        latest = self.snapshots.latest_id()
        return "no snapshots" if latest is None else f"snapshots {self.snapshots.earliest_id()}..{latest}"

    def rollback_to(self, target: int | str) -> Snapshot:
        """Roll back; returns the snapshot that is now the latest.

        Crash-safe order: the LATEST hint moves back first (a failure there changes nothing),
        then the later snapshot files go newest first (each step leaves the table at a state it
        had), then the later tags; only then their files. Rolling back to a tag whose snapshot
        expired first cuts the table back to its earliest snapshot, writes the tag's snapshot
        back atomically, points LATEST at it and removes that earliest one: a crash between the
        last two leaves a gap that `check` reports and running the rollback again closes. The
        snapshots to remove are listed, not taken from the hints, so a second run finishes
        what an interrupted one started."""
        retained = self.target(target)
        self.snapshots.latest_id()  # a LATEST hint beyond the snapshot files: SnapshotMissingError
        restore = not self.snapshots.exists(retained.id)
        listed = self.snapshots.listed_ids()
        removed_ids = [i for i in listed if i > retained.id]
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

        # consumers first: a crash after it leaves them to read again what they read (not to skip
        # the snapshots new commits put under the removed ids)
        ConsumerManager(self.file_io, self.root).roll_back(retained.id)
        # the earliest snapshot stays until the tag's snapshot is back (no moment without one)
        last = removed[:1] if restore else []
        if removed or not restore:
            self._move_latest_hint(removed[0].id if restore else retained.id)
        for s in reversed(removed[len(last):]):
            self.file_io.delete(self.snapshots.path(s.id))
        if not restore:
            self._undo_if_raced(retained.id, removed)
        elif last:  # no writer may have built on the earliest snapshot, which goes too
            self._undo_if_raced(last[0].id, removed[1:], on_base_ok=False)
        # read again: a tag made meanwhile of a removed snapshot (its creator found the snapshot
        # still there) goes too; what it references is among the removed snapshots' files
        gone = {(s.id, s.base_manifest_list, s.delta_manifest_list) for s in removed}
        later = {n for s, names in self.tags.tagged_snapshots()
                 if (s.id, s.base_manifest_list, s.delta_manifest_list) in gone for n in names}
        for name in sorted({n for _, names in removed_tags for n in names} | later):
            self.tags.delete_file(name)
        if restore:
            self.file_io.try_create_atomic(self.snapshots.path(retained.id), snapshot_json(retained))
            self._move_latest_hint(retained.id)
            for s in last:
                self.file_io.delete(self.snapshots.path(s.id))
        if restore or (listed and listed[0] == retained.id):  # (a second run after a crash in the gap)
            self.snapshots.commit_earliest_hint(retained.id)
        self._remove_later_changelogs(retained.id)

        deleted = self.cleaner.delete_data_files(e for e in data if file_key(e) not in keep_data)
        deleted += self.cleaner.delete_paths(meta - keep_meta - self._retained_changelog(retained))
        log.info("rolled %s back to snapshot %s: removed %s snapshots, %s tags, %s files", self.table_path,
                 retained.id, len(removed), sum(len(n) for _, n in removed_tags), deleted)
        return retained

    def _remove_later_changelogs(self, retained_id: int) -> None:
        """Java's long-lived changelogs after the snapshot rolled back to go, as Java's rollback
        removes them, LATEST hint first (their files are left to orphan cleanup, as Java leaves
        them): new commits reuse their ids, and a stream must never read the changes of the
        history rolled back, nor Java's changelog expiration look for them."""
        names = [n for n in self.file_io.list_names(f"{self.root}/changelog")
                 if n.startswith(CHANGELOG_PREFIX) and n[len(CHANGELOG_PREFIX):].isdigit()]
        ids = sorted(int(n[len(CHANGELOG_PREFIX):]) for n in names)
        later = [i for i in ids if i > retained_id]
        if not later:
            return
        kept = [i for i in ids if i <= retained_id]
        # as Java: the newest one kept, or -1 when none is (the real latest unknown)
        self.file_io.overwrite_atomic(f"{self.root}/changelog/LATEST", str(kept[-1] if kept else -1).encode())
        for i in reversed(later):
            self.file_io.delete_quietly(f"{self.root}/changelog/{CHANGELOG_PREFIX}{i}")

    def _undo_if_raced(self, base: int, removed: list[Snapshot], on_base_ok: bool = True) -> None:
        """Check, once the later snapshot files are gone, that no writer committed meanwhile on a
        snapshot being removed: its commit would sit beyond a gap, on files about to be deleted,
        and readers following the LATEST hint would not see it. Commits that came after the
        removal, on `retained`, are fine. Otherwise the removed snapshots below the writer's are
        written back (their files are all still there), so the table is what it was plus the
        writer's commit, and the rollback fails having removed nothing (CommitConflictError).
        `base`: the snapshot kept below the removed ones (`on_base_ok`: a commit on it is fine)."""
        strays = [i for i in self.snapshots.listed_ids() if i > base]
        if not strays or (on_base_ok and strays[0] == base + 1):
            return  # nobody came, or they came after the removal and built on the retained snapshot
        contiguous = strays == list(range(strays[0], strays[-1] + 1))
        if contiguous:
            for s in removed:
                if s.id < strays[0]:
                    self.file_io.try_create_atomic(self.snapshots.path(s.id), s.to_json().encode())
            self.snapshots.commit_latest_hint(strays[-1])
        raise CommitConflictError(
            f"cannot roll back {self.table_path}: snapshot(s) {strays} were committed "
            "by another writer while the rollback removed the later snapshots, on one of them; "
            + (f"the removed snapshots below them were written back: the table reads whole up to snapshot "
               f"{strays[-1]}, their commits included, and no tag or file was deleted. Stop the writers, then roll "
               "back again" if contiguous else
               "the table now has a gap `paimon-streaming check` reports and no file was deleted; stop the writers, "
               "then roll back again"))

    def _move_latest_hint(self, snapshot_id: int) -> None:
        """Point LATEST at `snapshot_id` before newer snapshot files go; unlike a commit's hint,
        this one must land (left at a deleted snapshot it would make readers refuse the table:
        SnapshotMissingError), so a failure raises while nothing has changed yet."""
        self.file_io.overwrite_atomic(self.snapshots.hint_path("LATEST"), str(snapshot_id).encode())

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
