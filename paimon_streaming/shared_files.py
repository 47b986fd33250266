"""The files a table's other branches reference, which cleanup on one branch must keep.

Branches share the table's data files, manifests and index files: a branch created from a tag
starts from a copy of that tag's snapshot, and `fast_forward` copies a branch's snapshots into
main. So a file one branch's expiration, tag deletion or rollback finds unneeded may still be
read by another branch. Java 1.4 leaves this to the user (do not delete the tag a branch was
made from); here every deletion of those three first subtracts `OtherBranches.names()`.

A branch references what its snapshots and tags do. A data file lives in one unbroken run of a
branch's snapshots, so the run's files are those of its earliest snapshot plus the files every
later delta adds: reading deltas, not every snapshot's full file list, keeps this linear in the
branch's history (and is remembered while the branch's ends and tags stay as they were).
Unreadable metadata raises (`CorruptFileError`): callers then keep their
candidates rather than guess.
"""
from __future__ import annotations

from .branches import MAIN, branch_names, branch_path
from .file_cleanup import FileCleaner
from .long_lived_changelogs import long_lived_changelogs, referenced_names
from .manifest import ADD, ManifestEntry
from .snapshot import Snapshot, SnapshotManager
from .tags import TagManager


class OtherBranches:
    """Names of the files the branches other than `branch` (main included) reference; read on
    first use, once."""

    def __init__(self, cleaner: FileCleaner, branch: str):
        self.cleaner = cleaner
        self.branch = branch
        self._names: frozenset[str] | None = None

    def roots(self) -> list[str]:
        """Where each other branch keeps its snapshots and tags."""
        table = self.cleaner.table_path
        others = [branch_path(table, b) for b in branch_names(self.cleaner.file_io, table) if b != self.branch]
        return others if self.branch == MAIN else [table] + others

    def names(self) -> frozenset[str]:
        if self._names is None:
            names: set[str] = set()
            for root in self.roots():
                names |= self._referenced_by(root)
            self._names = frozenset(names)
        return self._names

    def keeps(self, path_or_name: str) -> bool:
        return path_or_name.rsplit("/", 1)[-1] in self.names()

    def _referenced_by(self, root: str) -> frozenset[str]:
        cleaner = self.cleaner
        snapshots = SnapshotManager(cleaner.file_io, root)
        tagged = [s for s, _ in TagManager(cleaner.file_io, root).tagged_snapshots()]
        changelogs = long_lived_changelogs(cleaner.file_io, root)
        latest = snapshots.latest()
        key = (snapshots.earliest_id(), None if latest is None else _lists(latest),
               tuple(_lists(s) for s in tagged + changelogs))
        known = _KNOWN.get(root)
        if known is not None and known[0] == key:
            return known[1]
        names = referenced_names(cleaner, changelogs)
        live = snapshots.snapshots()
        entries: list[ManifestEntry] = []
        for i, snap in enumerate(live):
            entries.extend(cleaner.scan.live_entries(snap) if i == 0
                           else [e for e in cleaner.scan.delta_entries(snap) if e.kind == ADD])
            if snap.changelog_manifest_list:
                entries.extend(cleaner.scan.changelog_entries(snap))
        for tag in tagged:
            entries.extend(cleaner.scan.live_entries(tag))
        for e in entries:
            names.add(e.file.file_name)
            names.update(e.file.extra_files)
        for snap, changelog in [(s, True) for s in live] + [(t, False) for t in tagged]:
            names.update(p.rsplit("/", 1)[-1] for p in cleaner.metadata_files(snap, changelog))
        _KNOWN[root] = (key, frozenset(names))
        return _KNOWN[root][1]


# Per branch root, in this process: the names its snapshots and tags referenced, and the state
# they were read for (earliest id, the latest snapshot's and every tag's manifest lists). A
# branch's snapshots between those ends never change while these stay (a rollback or a
# fast-forward that rewrites history leaves another latest snapshot), so a branch that commits
# while another is unchanged does not read the other's whole history at every expiration.
_KNOWN: dict[str, tuple[tuple, frozenset[str]]] = {}


def _lists(snapshot: Snapshot) -> tuple[str, str, str | None, str | None]:
    return (snapshot.base_manifest_list, snapshot.delta_manifest_list, snapshot.changelog_manifest_list,
            snapshot.index_manifest)
