"""Java's long-lived changelogs (`changelog/changelog-<id>`): kept, never broken.

When a table keeps its changelog longer than its snapshots (`changelog.num-retained.max`,
`.min` or `changelog.time-retained` above the `snapshot.*` value: Java's
`changelogLifecycleDecoupled`), Java's snapshot expiration writes each expired snapshot as
`changelog/changelog-<id>` (the snapshot's JSON) and leaves the files that changelog needs:
the changelog manifests and files, or with `changelog-producer` = none the manifests and
the level-0 files. Java's changelog expiration removes them later.

Our expiration keeps such a table's snapshots themselves as long as its changelog is to be
kept (expire.py), so the changelog stays in the snapshots; it writes entries only when its
arguments keep the snapshots shorter, as Java's would, or to continue Java's (snapshots it
expires right above them, expire.py). A table Java expired holds entries:
streams read their changes where the snapshot is gone (as Java's do), and orphan cleanup,
snapshot expiration and tag deletion count what they reference as used, or a stream reading
that changelog finds its files gone. Our expiration expires them by Java's rule
(changelog_expire.py), and `check` verifies what their streams read. Parts an entry no longer
needs Java deletes already (e.g. its base manifest list), so references are collected from
whatever still exists.
"""
from __future__ import annotations

from dataclasses import replace

from .errors import CorruptFileError, MissingFileError
from .file_cleanup import FileCleaner
from .fileio import FileIO
from .manifest.entries import FILE_SOURCE_COMPACT
from .snapshot import Snapshot, parse_snapshot_file

PREFIX = "changelog-"


def long_lived_changelogs(file_io: FileIO, root: str) -> list[Snapshot]:
    """The long-lived changelogs under a table (or branch) directory, by id; a damaged one is
    a CorruptFileError naming it (its references unknown, nothing can be judged unused)."""
    directory = f"{root}/changelog"
    out = []
    for name in file_io.list_names(directory):
        if not (name.startswith(PREFIX) and name[len(PREFIX):].isdigit()):
            continue  # the LATEST / EARLIEST hints
        path = f"{directory}/{name}"
        data = file_io.read_bytes_if_present(path)
        if data is not None:  # else expired by Java since the listing
            out.append(parse_snapshot_file(path, data, int(name[len(PREFIX):]), kind="changelog"))
    return sorted(out, key=lambda s: s.id)


def long_lived_changelog_ids(file_io: FileIO, root: str) -> list[int]:
    """The ids of the long-lived changelogs under a table (or branch) directory, by their
    names (one listing), ascending."""
    return sorted(int(n[len(PREFIX):]) for n in file_io.list_names(f"{root}/changelog")
                  if n.startswith(PREFIX) and n[len(PREFIX):].isdigit())


def earliest_long_lived_changelog_id(file_io: FileIO, root: str) -> int | None:
    """The smallest id of the long-lived changelogs under a table (or branch) directory (by
    their names only), None when there is none: where Java's streams start at the earliest
    (`ChangelogManager.earliestLongLivedChangelogId`)."""
    ids = long_lived_changelog_ids(file_io, root)
    return ids[0] if ids else None


def changelog_latest_hint(file_io: FileIO, root: str) -> int | None:
    """The `changelog/LATEST` hint's value (-1 after a rollback removed every changelog, as
    Java writes it), None when absent or not a number."""
    raw = file_io.read_bytes_if_present(f"{root}/changelog/LATEST")
    try:
        return None if raw is None else int(raw.strip())
    except ValueError:
        return None


def read_long_lived_changelog(file_io: FileIO, root: str, changelog_id: int) -> Snapshot | None:
    """Long-lived changelog `changelog_id` as written (None when there is none); a damaged one
    is a CorruptFileError naming it."""
    path = f"{root}/changelog/{PREFIX}{changelog_id}"
    data = file_io.read_bytes_if_present(path)
    return None if data is None else parse_snapshot_file(path, data, changelog_id, kind="changelog")


def long_lived_changelog(file_io: FileIO, root: str, snapshot_id: int) -> Snapshot | None:
    """The long-lived changelog of an expired snapshot (to read its changes), None when there
    is none. Java deletes its index manifest (a changelog's files have no deletion vectors):
    then it comes without one."""
    path = f"{root}/changelog/{PREFIX}{snapshot_id}"
    data = file_io.read_bytes_if_present(path)
    if data is None:
        return None
    changelog = parse_snapshot_file(path, data, snapshot_id, kind="changelog")
    if changelog.index_manifest and not file_io.exists(f"{root}/manifest/{changelog.index_manifest}"):
        changelog = replace(changelog, index_manifest=None)
    return changelog


def referenced_names(cleaner: FileCleaner, changelogs: list[Snapshot],
                     produce_changelog: bool | None = None) -> set[str]:
    """Names of every file the changelogs reference (what `referenced_paths` lists): what
    cleanup elsewhere must keep. A damaged file among them raises `CorruptFileError`: what it
    references cannot be known, so the caller keeps everything."""
    return {path.rsplit("/", 1)[-1]
            for path in referenced_paths(cleaner, changelogs, MissingFileError, produce_changelog)}


def referenced_paths(cleaner: FileCleaner, changelogs: list[Snapshot],
                     unreadable: type[CorruptFileError] = CorruptFileError,
                     produce_changelog: bool | None = None) -> set[str]:
    """Paths of every file the changelogs reference: manifest lists, manifests, data files (with
    their extra files), index manifests, index files and statistics. A file that cannot be read
    for `unreadable` (by default: gone or damaged) names nothing more.

    With `produce_changelog` given, only what snapshot expiration keeps for them, as Java's
    `SnapshotDeletion` does: on a table with a `changelog-producer` (True) their changelog
    manifest lists, manifests and files, all a stream reads of them; without one (False) their
    manifest lists and manifests, and the data files writes made (a stream reads an APPEND
    delta's new files; a compaction's are no change). The rest Java deletes with the snapshot;
    keeping it would keep the data files for good, as the retained snapshots' manifests still
    name them."""
    def listed(read) -> list:
        try:
            return list(read())
        except unreadable:
            return []

    scan, manifests = cleaner.scan, cleaner.manifest_dir
    out: set[str] = set()
    for c in changelogs:
        lists = (c.changelog_manifest_list,) if produce_changelog else (
            c.base_manifest_list, c.delta_manifest_list, c.changelog_manifest_list)
        for name in lists:
            if not name:
                continue
            out.add(f"{manifests}/{name}")
            for meta in listed(lambda: scan.manifest_list.read(name)):
                out.add(f"{manifests}/{meta.file_name}")
                for e in listed(lambda: scan.manifest_file.read(meta.file_name)):
                    if produce_changelog is False and e.file.file_source == FILE_SOURCE_COMPACT:
                        continue
                    out.update(cleaner.data_file_paths(e))
        if produce_changelog is not None:
            continue  # Java deletes their index manifests and statistics with the snapshot
        if c.index_manifest:
            out.add(f"{manifests}/{c.index_manifest}")
            out.update(cleaner.index_file_path(e) for e in listed(lambda: scan.index_manifest.read(c.index_manifest)))
        if c.statistics:
            out.add(f"{cleaner.table_path}/statistics/{c.statistics}")
    return out
