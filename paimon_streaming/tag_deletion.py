"""Deleting a tag, and the files only that tag kept alive (seeds/pip-tags.txt "Deleting Tag").

While the tagged snapshot still exists it holds every file of the tag, so only the tag
file goes. Otherwise the tag's files are candidates, and the neighbours decide: a file the
tag shares with any other snapshot or tag is also in the tag just before it or in the
nearest of (earliest snapshot, tag just after it), because a file lives in one contiguous
run of snapshots. What neither neighbour references is deleted: data files, manifests,
index files (and with `snapshot.clean-empty-directories` the directories that emptied, as Java
does). Another tag on the same snapshot keeps everything, and so does another branch
that references a file (a branch made from this tag, say: shared_files.py), and so does one of
Java's long-lived changelogs (long_lived_changelogs.py: the tagged snapshot's own, say).
"""
from __future__ import annotations

import datetime as dt
import logging

from .errors import CorruptFileError
from .branches import MAIN, branch_path
from .file_cleanup import FileCleaner, file_key
from .long_lived_changelogs import long_lived_changelogs, referenced_names
from .fileio import FileIO
from .schema import TableSchema
from .shared_files import OtherBranches
from .snapshot import Snapshot, SnapshotManager
from .tags import TagManager, tag_create_time_from_json

log = logging.getLogger(__name__)


class TagDeletion:
    """Deletes tags of one table with their no longer needed files."""

    def __init__(self, file_io: FileIO, table_path: str, schema: TableSchema, branch: str = MAIN):
        self.table_path = table_path
        self.root = branch_path(table_path, branch)
        self.snapshots = SnapshotManager(file_io, branch_path(table_path, branch))
        self.tags = TagManager(file_io, branch_path(table_path, branch))
        self.cleaner = FileCleaner(file_io, table_path, schema)
        self.other_branches = OtherBranches(self.cleaner, branch)

    def delete(self, name: str) -> int:
        """Delete tag `name` (TagNotFoundError if absent); returns how many files went with it."""
        tagged = self.tags.snapshot(name)
        if self.snapshots.exists(tagged.id):
            self.tags.delete_file(name)
            return 0
        all_tags = self.tags.tagged_snapshots()  # read before the tag file goes
        self.tags.delete_file(name)
        ids = [s.id for s, _ in all_tags]
        index = ids.index(tagged.id)
        if len(all_tags[index][1]) > 1 or self.tags.holding(tagged.id) is not None:
            return 0  # another tag holds it (one made from this tag meanwhile: read again now)
        neighbours: list[Snapshot] = []
        if index > 0:
            neighbours.append(all_tags[index - 1][0])
        right = all_tags[index + 1][0] if index + 1 < len(all_tags) else None
        earliest_id = self.snapshots.earliest_id()
        if earliest_id is not None and (right is None or earliest_id < right.id):
            right = self.snapshots.snapshot(earliest_id)
        if right is not None:
            neighbours.append(right)
        latest_id = self.snapshots.latest_id()
        if latest_id is not None and latest_id < tagged.id:  # a tag newer than every snapshot
            neighbours.append(self.snapshots.snapshot(latest_id))
        return self._delete_files(tagged, neighbours)

    def _delete_files(self, tagged: Snapshot, neighbours: list[Snapshot]) -> int:
        deleted = 0
        try:
            # Java's long-lived changelogs may read the tagged snapshot's files (its own changelog
            # when the snapshot expired into one: the same manifest lists and level-0 files)
            held = referenced_names(self.cleaner, long_lived_changelogs(self.cleaner.file_io, self.root))
        except CorruptFileError as exc:
            log.warning("not deleting files of the tag of snapshot %s of %s: a long-lived changelog is "
                        "unreadable: %s", tagged.id, self.table_path, exc)
            return 0
        try:
            keep = frozenset().union(*(self.cleaner.live_data_files(s) for s in neighbours))
            doomed = [e for e in self.cleaner.live_entries_tolerant(tagged)
                      if file_key(e) not in keep and e.file.file_name not in held
                      and not self.other_branches.keeps(e.file.file_name)]
        except CorruptFileError as exc:
            log.warning("not deleting data files of the tag of snapshot %s of %s: %s", tagged.id,
                        self.table_path, exc)
        else:
            files = self.cleaner.data_paths(doomed)
            deleted += self.cleaner.delete_paths(files)
            self.cleaner.delete_empty_dirs(files)
        try:
            keep_meta = set().union(*(self.cleaner.metadata_files(s, changelog=False) for s in neighbours))
            doomed_meta = [p for p in self.cleaner.metadata_files_tolerant(tagged, changelog=False) - keep_meta
                           if p.rsplit("/", 1)[-1] not in held and not self.other_branches.keeps(p)]
        except CorruptFileError as exc:
            log.warning("not deleting manifests of the tag of snapshot %s of %s: %s", tagged.id,
                        self.table_path, exc)
            return deleted
        return deleted + self.cleaner.delete_paths(doomed_meta)

    def expire_by_time(self, now: dt.datetime | None = None) -> list[str]:
        """Delete the tags whose `tagCreateTime + tagTimeRetained` has passed (Java's
        TagTimeExpire); tags without a retention live until deleted."""
        now = now or dt.datetime.now()
        expired = []
        for snap, names in self.tags.tagged_snapshots():
            for name in names:
                tag = snap if len(names) == 1 else self.tags.snapshot(name)
                created = tag_create_time_from_json(tag.extra.get("tagCreateTime"))
                retained = tag.extra.get("tagTimeRetained")
                if created is not None and retained is not None and _passed(created, float(retained), now):
                    self.delete(name)
                    expired.append(name)
        return expired


def _passed(created: dt.datetime, retained_s: float, now: dt.datetime) -> bool:
    """Whether `created` + `retained_s` seconds is before `now`; a retention reaching past the
    year 9999 (Java's '3000000 d') never passes."""
    try:
        return created + dt.timedelta(seconds=retained_s) < now
    except OverflowError:
        return False
