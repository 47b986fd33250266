"""Orphan file cleanup: files in the table directory that no snapshot or tag references.

Failed commits, killed writers, and expirations or rollbacks interrupted half-way leave
such files. Only files older than a threshold (default one day, as Java's
`OrphanFilesClean`) are removed, because a writer that is still running has written files
it has not committed yet. Like Java, files are matched by name against everything any
snapshot or tag references: manifest lists, manifests (and every file their entries name,
ADD or DELETE, with extra files), changelog manifests, index manifests, index files and
statistics; and what Java's long-lived changelogs (`changelog/changelog-<id>`) reference.
Where Java skips a snapshot whose manifests cannot be read, we stop: an unreadable reference
set would make live files look orphaned.

Branches (Java's `branch/branch-<name>/`, with their own snapshots, tags and schemas) share the
main branch's data files, manifests and index files, so what their snapshots and tags reference
is in use too, as in Java; a branch without a schema aborts the cleanup, as in Java.

Looked at: `manifest/`, `index/`, `statistics/`, the bucket directories under the
partition directories, the same bucket directories under each external data path
(`data-file.external-paths`, any depth below them), and leftover temp files (`.name.uuid.tmp`) of snapshot, tag,
consumer and schema files.
"""
from __future__ import annotations

import logging
import time
from dataclasses import dataclass

from .branches import branch_names, branch_path
from .errors import CorruptFileError, SnapshotGapError, UnsupportedOperationError
from .external_paths import listed_roots
from .file_cleanup import FileCleaner
from .fileio import FileIO, FileStatus
from .long_lived_changelogs import long_lived_changelogs, referenced_names
from .schema import TableSchema
from .snapshot import Snapshot, SnapshotManager
from .tags import TagManager

log = logging.getLogger(__name__)

DEFAULT_OLDER_THAN_MS = 24 * 3600 * 1000


@dataclass(frozen=True)
class OrphanResult:
    paths: list[str]       # removed (or, on a dry run, removable) files
    bytes: int


class OrphanFilesClean:
    """Finds and removes the orphan files of one table."""

    def __init__(self, file_io: FileIO, table_path: str, schema: TableSchema):
        self.file_io = file_io
        self.table_path = table_path
        self.partition_depth = len(schema.partition_keys)
        self.cleaner = FileCleaner(file_io, table_path, schema)
        self.external_roots = listed_roots(schema.options)

    def clean(self, older_than_ms: int | None = None, dry_run: bool = False) -> OrphanResult:
        """Remove unreferenced files last modified before `older_than_ms` (epoch millis;
        default: one day ago)."""
        now_ms = int(time.time() * 1000)
        threshold = now_ms - DEFAULT_OLDER_THAN_MS if older_than_ms is None else older_than_ms
        candidates = [s for s in self._candidate_files() if s.mtime_ms < threshold]
        if not candidates:
            return OrphanResult([], 0)
        used = self.used_file_names()
        orphans = [s for s in candidates if _name(s.path) not in used]
        if not dry_run:
            for s in orphans:
                self.file_io.delete(s.path)
        if orphans:
            log.info("%s %s orphan files (%s bytes) of %s", "found" if dry_run else "removed", len(orphans),
                     sum(s.size for s in orphans), self.table_path)
        return OrphanResult(sorted(s.path for s in orphans), sum(s.size for s in orphans))

    def used_file_names(self) -> set[str]:
        """Names of every file a snapshot or tag of any branch references.

        A snapshot listed here may expire before it is read, and the files it shared with newer
        snapshots then live on only in snapshots committed after the listing (or a tag made
        meanwhile); a fast-forward copies a branch's snapshots into main, and the branch may be
        deleted before it is read. So the branches, snapshots and tags are listed again until a
        whole pass finds nothing new: the newest snapshot of every branch in that pass was read,
        and a commit after it adds only files too young to be candidates, or files it has."""
        used: set[str] = set()
        done: set[tuple[str, bool, int, str]] = set()
        changelogs_read: set[str] = set()
        walked: set[str] = set()  # manifests whose entries are in `used` (immutable files: walked once)
        while True:
            found = False
            for root in self._branch_roots():
                if root not in changelogs_read:
                    used |= referenced_names(self.cleaner, long_lived_changelogs(self.file_io, root))
                    changelogs_read.add(root)
                snapshots = SnapshotManager(self.file_io, root)
                for snap, is_snapshot in self._referencing_snapshots(snapshots, TagManager(self.file_io, root)):
                    key = (root, is_snapshot, snap.id, snap.base_manifest_list)
                    if key in done:
                        continue
                    done.add(key)
                    found = True
                    try:
                        names, manifests = self._names_of(snap, walked)
                        used |= names
                        walked |= manifests
                    except CorruptFileError:
                        if is_snapshot and not snapshots.exists(snap.id):
                            continue  # expired while we were reading it
                        raise
            if not found:
                return used

    def _branch_roots(self) -> list[str]:
        """The table's directory (the main branch) and each branch's."""
        roots = [self.table_path]
        for name in branch_names(self.file_io, self.table_path):
            root = branch_path(self.table_path, name)
            if not any(n.startswith("schema-") for n in self.file_io.list_names(f"{root}/schema")):
                if not any(self.file_io.list_names(f"{root}/{sub}") for sub in ("snapshot", "tag")):
                    log.warning("branch %s has no schema, snapshot or tag (an interrupted create_branch): it "
                                "references nothing", root)
                    continue
                raise UnsupportedOperationError(
                    f"branch {root} has no schema: orphan file cleanup stops (as Java's does) rather "
                    "than miss the files it uses; check the branch by hand")
            roots.append(root)
        return roots

    def _referencing_snapshots(self, snapshots: SnapshotManager, tags: TagManager) -> list[tuple[Snapshot, bool]]:
        # the latest id as found without a listing (the hint, then existence checks), before
        # listing: a listing that misses it lost entries (a store answering a list request 404 as
        # an empty directory, as pyarrow's Azure filesystem reads it), and the files of the
        # snapshots it lost would look orphaned
        latest = snapshots.latest_id()
        listed = snapshots.listed_ids()
        if latest is not None and (not listed or listed[-1] < latest):
            raise OSError(f"orphan file cleanup of {self.table_path} stops, nothing deleted: listing "
                          f"{snapshots.dir} gave snapshot ids {_id_ranges(listed)}, but snapshot {latest} exists "
                          "(the store returned an incomplete listing); run it again")
        out = []
        for snapshot_id in listed:
            try:
                out.append((snapshots.snapshot(snapshot_id), True))
            except SnapshotGapError:
                raise  # gone (or answered 404) between older and newer ones: not expired; its files are used
            except LookupError:
                continue  # expired since listing
        out.extend((s, False) for s, _ in tags.tagged_snapshots())
        return out

    def _names_of(self, snap: Snapshot, walked: set[str]) -> tuple[set[str], set[str]]:
        """The names `snap` references, and the manifests whose entries it read; a manifest in
        `walked` (its entries counted already) is not read again: snapshots share most of theirs,
        and reading each for every snapshot cost snapshots x live files."""
        names = {_name(p) for p in self.cleaner.metadata_files(snap, changelog=False)}
        read: set[str] = set()
        lists = [snap.base_manifest_list, snap.delta_manifest_list]
        if snap.changelog_manifest_list and self.file_io.exists(
                f"{self.cleaner.manifest_dir}/{snap.changelog_manifest_list}"):
            lists.append(snap.changelog_manifest_list)
            names.add(snap.changelog_manifest_list)
        scan = self.cleaner.scan
        for name in lists:
            for meta in scan.manifest_list.read(name):
                names.add(meta.file_name)
                if meta.file_name in walked:
                    continue
                for e in scan.manifest_file.read(meta.file_name):
                    names.add(e.file.file_name)
                    names.update(e.file.extra_files)
                read.add(meta.file_name)
        return names, read

    # ---- candidates ------------------------------------------------------------------------
    def _candidate_files(self) -> list[FileStatus]:
        out: list[FileStatus] = []
        for sub in ("manifest", "index", "statistics"):
            out.extend(s for s in self.file_io.list_status(f"{self.table_path}/{sub}") if not s.is_dir)
        for bucket in self._bucket_dirs(self.cleaner.scan.dirs.data_root, self.partition_depth):
            out.extend(s for s in self.file_io.list_status(bucket) if not s.is_dir)
        relative_root = self.cleaner.scan.dirs.data_root[len(self.table_path):]
        for root in self.external_roots:
            for bucket in self._bucket_dirs(root + relative_root, self.partition_depth):
                out.extend(self._files_under(bucket))
        for sub in ("snapshot", "tag", "consumer", "schema"):
            out.extend(s for s in self.file_io.list_status(f"{self.table_path}/{sub}")
                       if not s.is_dir and _is_temp(_name(s.path)))
        return out

    def _files_under(self, directory: str) -> list[FileStatus]:
        """Every file below `directory` (an external bucket directory: with `entropy-inject`
        its files are in hash directories below it)."""
        statuses = self.file_io.list_status(directory)
        return [s for s in statuses if not s.is_dir] + \
            [f for s in statuses if s.is_dir for f in self._files_under(s.path)]

    def _bucket_dirs(self, path: str, depth: int) -> list[str]:
        dirs = [s for s in self.file_io.list_status(path) if s.is_dir]
        if depth == 0:
            return [s.path for s in dirs if _name(s.path).startswith("bucket-")]
        return [b for s in dirs if "=" in _name(s.path) for b in self._bucket_dirs(s.path, depth - 1)]


def _id_ranges(ids: list[int]) -> str:
    """`1..3, 7..9` for [1, 2, 3, 7, 8, 9]; `none` for []."""
    if not ids:
        return "none"
    runs, start = [], ids[0]
    for prev, cur in zip(ids, ids[1:] + [None]):
        if cur != prev + 1:
            runs.append(f"{start}..{prev}" if prev != start else str(prev))
            start = cur
    return ", ".join(runs)


def _name(path: str) -> str:
    return path.rsplit("/", 1)[-1]


def _is_temp(name: str) -> bool:
    return name.startswith(".") and name.endswith(".tmp")
