"""Expiring Java's long-lived changelogs (`changelog/changelog-<id>`, long_lived_changelogs.py).

Java's snapshot expiration leaves one for each expired snapshot when the changelog outlives the
snapshots; Java's changelog expiration (`ExpireChangelogImpl`) removes them later. Ours writes
them only when arguments keep the snapshots shorter than the changelog, or to continue Java's
(else expire.py keeps the snapshots instead), but a table Java wrote and we maintain would keep Java's forever, with every
file they reference: so ours expires them too.

Which go, Java's rule, counted in snapshot ids: every one below `latest snapshot -
changelog.num-retained.max + 1`; above that, those whose own commit time is older than
`changelog.time-retained` (stopping at the first younger one); never the newest
`changelog.num-retained.min` ids, never one at or after the smallest consumer `nextSnapshot`,
at most `snapshot.expire.limit` ids a run (each `changelog.*` option defaults to its
`snapshot.*` one). Tags and branches keep files, not changelogs. Changelogs below a gap
(snapshots expired without a changelog, e.g. by Java's `expire_snapshots` procedure given
`retain_max`, whose retention leaves out the `changelog.*` options) go too, consumers
permitting: no stream gets past the gap, and Java's changelog expiration fails on it. Unlike Java 1.4.2, which
always keeps the newest one (and so, with changelog-producer none, a full copy of the table's
files as of that snapshot, for good once only we maintain the table), the newest goes too
when the rule says so.

Which files go: each file an expired changelog references that no snapshot, tag or remaining
long-lived changelog of any branch references (orphans.py's count of what is in use, so what we
delete orphan cleanup would delete, and what we keep it keeps). Java deletes by kind instead
(changelog files, data files the delta removed, the manifests), trusting tags and the newest
snapshot only. With `snapshot.clean-empty-directories` the directories those deletions emptied
go too, as Java's do (file_cleanup.py).

Order: the changelog files go oldest first (when the newest goes, the LATEST hint first, or
Java would take the hint for the newest and fail reading it), then the EARLIEST hint moves,
then what is in use is read, and only then the files go. So a crash leaves a contiguous run of
changelogs whose files all exist, and orphans for `remove_orphan_files`.
"""
from __future__ import annotations

import logging
import time
from dataclasses import dataclass

from .branches import MAIN, branch_path
from .consumers import ConsumerManager
from .errors import CorruptFileError, InvalidOptionError, UnsupportedOperationError
from .file_cleanup import FileCleaner
from .fileio import FileIO
from .long_lived_changelogs import (PREFIX, changelog_latest_hint, long_lived_changelog_ids, read_long_lived_changelog,
                                    referenced_paths)
from .options import CoreOptions
from .orphans import OrphanFilesClean
from .schema import TableSchema
from .snapshot import SnapshotManager

log = logging.getLogger(__name__)


@dataclass(frozen=True)
class ChangelogExpireResult:
    expired: int                 # long-lived changelog files removed
    earliest: int | None         # earliest long-lived changelog afterwards
    deleted_files: int           # manifests, data, changelog and index files removed


class ChangelogExpiration:
    """Expires the long-lived changelogs of one table (or branch) and the files only they need."""

    def __init__(self, file_io: FileIO, table_path: str, schema: TableSchema, branch: str = MAIN):
        self.file_io = file_io
        self.table_path = table_path
        self.schema = schema
        self.meta = branch_path(table_path, branch)
        self.dir = f"{self.meta}/changelog"
        self.options = CoreOptions(schema.options)
        self.snapshots = SnapshotManager(file_io, self.meta)
        self.consumers = ConsumerManager(file_io, self.meta)

    def expire(self, retain_max: int | None = None, retain_min: int | None = None,
               older_than_ms: int | None = None, max_deletes: int | None = None,
               now_ms: int | None = None) -> ChangelogExpireResult:
        """Expire per the table options; arguments override `changelog.num-retained.max`,
        `changelog.num-retained.min`, `now - changelog.time-retained` and `snapshot.expire.limit`."""
        ids = long_lived_changelog_ids(self.file_io, self.meta)
        if not ids:
            return ChangelogExpireResult(0, None, 0)
        o = self.options
        retain_max = _either(retain_max, o.get("changelog.num-retained.max"), o.get("snapshot.num-retained.max"))
        retain_min = _either(retain_min, o.get("changelog.num-retained.min"), o.get("snapshot.num-retained.min"))
        max_deletes = o.get("snapshot.expire.limit") if max_deletes is None else max_deletes
        if older_than_ms is None:
            now_ms = int(time.time() * 1000) if now_ms is None else now_ms
            older_than_ms = now_ms - _either(None, o.get("changelog.time-retained"), o.get("snapshot.time-retained"))
        if retain_min < 1 or retain_max < retain_min or max_deletes < 1:
            raise InvalidOptionError(
                f"cannot expire the long-lived changelogs of {self.meta}: need 1 <= retain_min ({retain_min}) <= "
                f"retain_max ({retain_max}) and max_deletes ({max_deletes}) >= 1 (changelog.num-retained.min, "
                "changelog.num-retained.max, snapshot.expire.limit)")
        latest, earliest = self.snapshots.latest_id(), self.snapshots.earliest_id()
        if latest is None or earliest is None:
            return ChangelogExpireResult(0, ids[0], 0)
        low = max(latest - retain_max + 1, ids[0])
        end = latest - retain_min + 1
        consumer_next = self.consumers.min_next_snapshot()
        if consumer_next is not None:
            end = min(end, consumer_next)
        end = min(end, ids[0] + max_deletes, ids[-1] + 1)
        present = set(ids)
        for cid in range(low, end):
            if cid in present:
                changelog = read_long_lived_changelog(self.file_io, self.meta, cid)
                if changelog is not None and older_than_ms <= changelog.time_millis:
                    end = cid
                    break
        # Changelogs below a gap (ids neither a changelog nor a snapshot: snapshots an expiration
        # with explicit retention, ours or Java's, removed without a changelog) go too: no stream
        # gets past the gap, and Java's changelog expiration reads every id of its range and
        # fails on the gap, failing every later Java commit.
        gaps = [i for i in range(ids[0], earliest) if i not in present]
        if gaps:
            end = max(end, min(gaps[-1], consumer_next if consumer_next is not None else gaps[-1],
                               ids[0] + max_deletes))
        return self.expire_until(ids, end)

    def expire_until(self, ids: list[int], end: int) -> ChangelogExpireResult:
        """Expire the long-lived changelogs `ids` below `end`."""
        expiring_ids = [i for i in ids if i < end]
        kept = [i for i in ids if i >= end]
        if not expiring_ids:
            if kept and not self.file_io.exists(f"{self.dir}/EARLIEST"):  # as Java's run writes it
                self.file_io.overwrite_atomic(f"{self.dir}/EARLIEST", str(kept[0]).encode())
            return ChangelogExpireResult(0, kept[0] if kept else None, 0)
        expiring = [c for c in (read_long_lived_changelog(self.file_io, self.meta, i) for i in expiring_ids)
                    if c is not None]  # (None: expired by another process meanwhile)
        cleaner = FileCleaner(self.file_io, self.table_path, self.schema)
        candidates = referenced_paths(cleaner, expiring)
        # no LATEST hint may name an expired one: Java takes it for the newest when no next one
        # exists, and fails reading it (without the hint Java lists the directory)
        # (each deletion raises on failure: what is left stays a contiguous run)
        if not kept or changelog_latest_hint(self.file_io, self.meta) in expiring_ids:
            self.file_io.delete(f"{self.dir}/LATEST")
        for i in expiring_ids:
            self.file_io.delete(f"{self.dir}/{PREFIX}{i}")
        if kept:
            self.file_io.overwrite_atomic(f"{self.dir}/EARLIEST", str(kept[0]).encode())
        else:
            self.file_io.delete(f"{self.dir}/EARLIEST")
        try:
            used = OrphanFilesClean(self.file_io, self.table_path, self.schema).used_file_names()
        except (CorruptFileError, UnsupportedOperationError, OSError) as exc:
            log.warning("expired long-lived changelogs %s..%s of %s, but what the table still uses cannot be read "
                        "(%s): their files are left for orphan cleanup", expiring_ids[0], expiring_ids[-1],
                        self.meta, exc)
            return ChangelogExpireResult(len(expiring_ids), kept[0] if kept else None, 0)
        doomed = [p for p in candidates if p.rsplit("/", 1)[-1] not in used]
        deleted = cleaner.delete_paths(doomed)
        cleaner.delete_empty_dirs(doomed)
        log.info("expired long-lived changelogs %s..%s of %s, deleted %s files", expiring_ids[0], expiring_ids[-1],
                 self.meta, deleted)
        return ChangelogExpireResult(len(expiring_ids), kept[0] if kept else None, deleted)


def _either(given, changelog, snapshot):
    if given is not None:
        return given
    return changelog if changelog is not None else snapshot
