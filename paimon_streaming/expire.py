"""Snapshot expiration (FORMAT.md §11, seeds/pip-tags.txt "Expiring Snapshot").

Which snapshots go: everything below `latest - snapshot.num-retained.max + 1`; above that,
snapshots while the *next* snapshot is older than `snapshot.time-retained` (so a snapshot
is dropped only once its successor has existed that long); never the newest
`snapshot.num-retained.min`, never one at or after the smallest consumer `nextSnapshot`,
and at most `snapshot.expire.limit` per run. This is Java's `ExpireSnapshotsImpl.expire` of
Paimon 2.0 (apache/paimon#7706); 1.4.2 stops at the first snapshot that is itself younger, so it
expires one more (the newest one older than the limit, whose successor is younger).

Which files go, for the expired range [begin, end) where `end` is the new earliest:

* data files DELETEd by the delta of a snapshot s in (begin, end], unless the nearest tag
  below s still holds them. That is the tags document's rule: a file committed at c and
  deleted at s is needed by exactly the tags in [c, s), and such a tag exists iff the
  nearest tag below s is one of them (tags 100, 200, 300: a file committed at 105 and
  deleted at 120 goes; deleted at 201 it stays for tag 200). As a second guard no file the
  new earliest snapshot reads is ever deleted;
* changelog files of the expired snapshots. A table that keeps its changelog longer than its
  snapshots (`changelog.*` retention, Java's decoupled lifecycle) keeps its snapshots that long
  instead (`retention`); what Java's long-lived changelogs need is never deleted: with a
  `changelog-producer` their changelog manifests and files, without one their manifests and
  the files writes made (Java's `SnapshotDeletion`, `referenced_paths`). The expired snapshots
  become long-lived changelogs too, as Java's expiration makes them (what they need stays for
  the changelog expiration), when arguments keep the snapshots shorter than the `changelog.*`
  options (`decoupled`: Java's rule under those arguments as `snapshot.*` options), so streams
  still start as far back as those promise, and where Java's long-lived changelogs reach up to
  the expired snapshots, so no gap opens above Java's;
* manifest lists, manifests, index manifests and index files of the expired snapshots that
  neither the new earliest snapshot nor a tag overlapping the range references.

All of these are chosen first; then the snapshot files are deleted, oldest first, then the
EARLIEST hint is written, and only then the files chosen. So a crash at any point leaves a
contiguous run of snapshots that all read whole; what it had not deleted yet is left to orphan
cleanup (tests/test_fault_injection_lifecycle.py fails each I/O step).

On a table with branches, nothing another branch references is deleted (shared_files.py).
A run that reads the snapshots (not the after-commit shortcut) then expires Java's long-lived
changelogs past the `changelog.*` retention (changelog_expire.py).
"""
from __future__ import annotations

import logging
import time
from dataclasses import dataclass

from .branches import MAIN, branch_path
from .changelog_expire import ChangelogExpiration
from .commit_users import CommitUserRecords
from .consumers import ConsumerManager
from .errors import CorruptFileError, InvalidOptionError, SnapshotNotFoundError
from .file_cleanup import FileCleaner, FileKey, file_key
from .fileio import FileIO
from .manifest import ManifestEntry
from .long_lived_changelogs import PREFIX as CHANGELOG_PREFIX, long_lived_changelogs, referenced_names
from .options import CoreOptions
from .schema import TableSchema
from .shared_files import OtherBranches
from .snapshot import OVERWRITE, Snapshot, SnapshotManager
from .tags import TagManager

log = logging.getLogger(__name__)

# Per table path, in this process: the earliest snapshot id the last expiration that expired
# nothing kept, the commit time of the snapshot after it when that time held it back, and the
# latest id then (see `SnapshotExpiration.expire`).
_HELD_BACK: dict[str, tuple[int, int | None, int]] = {}


@dataclass(frozen=True)
class ExpireResult:
    expired: int                 # snapshot files removed
    earliest: int | None         # earliest snapshot afterwards
    deleted_files: int           # data, changelog, manifest and index files removed


class SnapshotExpiration:
    """Expires the snapshots of one table and deletes the files only they needed."""

    def __init__(self, file_io: FileIO, table_path: str, schema: TableSchema, branch: str = MAIN):
        self.file_io = file_io
        self.table_path = table_path
        self.branch = branch
        self.schema = schema
        self.meta = branch_path(table_path, branch)  # the branch's snapshots, tags and consumers
        self.options = CoreOptions(schema.options)
        self.snapshots = SnapshotManager(file_io, self.meta)
        self.tags = TagManager(file_io, self.meta)
        self.consumers = ConsumerManager(file_io, self.meta)
        self.cleaner = FileCleaner(file_io, table_path, schema)
        self.other_branches = OtherBranches(self.cleaner, branch)

    def expire(self, retain_max: int | None = None, retain_min: int | None = None,
               older_than_ms: int | None = None, max_deletes: int | None = None,
               now_ms: int | None = None, latest: int | None = None) -> ExpireResult:
        """Expire per the table options; arguments override `snapshot.num-retained.max`,
        `snapshot.num-retained.min`, `now - snapshot.time-retained` and
        `snapshot.expire.limit`.

        `latest`: the id a commit just published. Then a run that would find nothing to expire
        reads nothing. The last run here that expired nothing kept some earliest snapshot E;
        while `latest` keeps within `snapshot.num-retained.max` of E, and either within
        `snapshot.num-retained.min` of it or the snapshot after E (whose time held E back) is
        still within `snapshot.time-retained`, nothing can expire (the earliest only moves up,
        and commit times with it), so the run stops before any request. On an object store
        that saves the 8 round trips every commit would otherwise spend. A `latest` below the
        one of that run tells of a rollback, or of a table dropped and made again: the earliest
        may have moved down (a tag's snapshot written back), so the run reads."""
        now_ms = int(time.time() * 1000) if now_ms is None else now_ms
        split = (retain_max, retain_min, older_than_ms) != (None, None, None) and decoupled(
            self.options, retain_max, retain_min, None if older_than_ms is None else now_ms - older_than_ms)
        kept = retention(self.options)
        retain_max = kept.num_max if retain_max is None else retain_max
        retain_min = kept.num_min if retain_min is None else retain_min
        max_deletes = self.options.get("snapshot.expire.limit") if max_deletes is None else max_deletes
        older_than_ms = now_ms - kept.time_ms if older_than_ms is None else older_than_ms
        if retain_min < 1 or retain_max < retain_min or max_deletes < 1:
            raise InvalidOptionError(
                f"cannot expire snapshots of {self.table_path}: need 1 <= retain_min ({retain_min}) <= "
                f"retain_max ({retain_max}) and max_deletes ({max_deletes}) >= 1 (command line: --retain-min, "
                "--retain-max, --max-deletes); retain_min defaults to snapshot.num-retained.min (or the longer "
                "changelog.num-retained.min), so pass it too when retain_max is smaller")
        held = _HELD_BACK.get(self.meta)
        if latest is not None and held is not None and latest >= held[2] and latest - retain_max + 1 <= held[0] and (
                latest - retain_min + 1 <= held[0] or (held[1] is not None and older_than_ms <= held[1])):
            return ExpireResult(0, held[0], 0)
        latest = self.snapshots.latest_id()
        earliest = self.snapshots.earliest_id()
        if latest is None or earliest is None:
            return ExpireResult(0, None, 0)
        low = max(latest - retain_max + 1, earliest)
        end = latest - retain_min + 1
        consumer_next = self.consumers.min_next_snapshot()
        if consumer_next is not None:
            end = min(end, self._consumer_floor(consumer_next))
        end = min(end, earliest + max_deletes)
        held_by: int | None = None  # the commit time that keeps the earliest snapshot
        for sid in range(low, end):
            try:
                successor = self.snapshots.snapshot(sid + 1)
            except SnapshotNotFoundError:
                continue
            if older_than_ms <= successor.time_millis:
                end = sid
                held_by = successor.time_millis if sid == earliest else None
                break
        if end <= earliest:
            _HELD_BACK[self.meta] = (earliest, held_by, latest)
        result = self.expire_until(earliest, end, split)
        self._expire_changelogs(now_ms)
        return result

    def _expire_changelogs(self, now_ms: int | None) -> None:
        """Java's long-lived changelogs past the `changelog.*` retention go too, as after Java's
        commits (changelog_expire.py); a failure there is logged, the snapshots' expiration stands."""
        try:
            ChangelogExpiration(self.file_io, self.table_path, self.schema, self.branch).expire(now_ms=now_ms)
        except (CorruptFileError, InvalidOptionError, OSError) as exc:
            log.warning("the long-lived changelogs of %s were not expired: %s", self.meta, exc)

    def _consumer_floor(self, consumer_next: int) -> int:
        """The earliest snapshot a consumer whose next snapshot is `consumer_next` needs: that
        one, and when it is an OVERWRITE also the one before it. A stream reading overwrites
        (`streaming-read-overwrite`) diffs the files the overwrite replaced, which are deleted
        with the snapshot before it (Java keeps only the consumer's snapshot, and its stream
        then fails on them)."""
        snapshot = self._try_snapshot(consumer_next)
        return consumer_next - 1 if snapshot is not None and snapshot.commit_kind == OVERWRITE else consumer_next

    def expire_until(self, earliest: int, end: int, decoupled: bool = False) -> ExpireResult:
        """Expire snapshots [earliest, end); `end` becomes the earliest snapshot. `decoupled`:
        the changelog outlives them, so they become long-lived changelogs."""
        if end <= earliest:
            if not self.file_io.exists(f"{self.snapshots.dir}/EARLIEST"):
                self.snapshots.commit_earliest_hint(earliest)
            return ExpireResult(0, earliest, 0)
        including_end = [s for s in (self._try_snapshot(i) for i in range(earliest, end + 1)) if s is not None]
        if not including_end or including_end[-1].id != end:
            log.warning("snapshot %s of %s is missing; not expiring up to it", end, self.table_path)
            return ExpireResult(0, earliest, 0)
        end_snapshot = including_end[-1]
        expiring = including_end[:-1]
        # exactly-once outlives the snapshots: their identifiers are recorded before anything goes
        CommitUserRecords(self.file_io, self.meta).record(expiring)
        tags_read = self.tags.tagged_snapshots()
        tagged = [s for s, _ in tags_read]
        javas = long_lived_changelogs(self.file_io, self.meta)
        produces = self.options.get("changelog-producer") != "none"
        held = referenced_names(self.cleaner, javas, produces)
        # Java's changelogs run up to the snapshots: the expired ones continue that run, as Java's
        # expiration writes them, or the changelogs before would sit below a gap (and Java's
        # changelog expiration, reading every id of its range, fails on a gap between changelogs)
        continued = bool(expiring) and (decoupled or bool(javas) and javas[-1].id >= expiring[0].id - 1)
        if continued:
            held |= referenced_names(self.cleaner, expiring, produces)
        # Everything to delete is chosen while the snapshots are still there; then the snapshot
        # files go, oldest first, and only then their files. A crash at any point leaves a
        # contiguous run of snapshots whose files all exist (what was not deleted yet is an
        # orphan for `remove_orphan_files`), never a snapshot pointing at a deleted file.
        data = self._data_files_to_delete(including_end, tagged, held)
        changelog = self._changelog_files_to_delete(expiring, held)
        metadata = self._metadata_to_delete(expiring, end_snapshot, tagged, held)
        for s in expiring:
            if continued:
                self.file_io.overwrite_atomic(f"{self.meta}/changelog/{CHANGELOG_PREFIX}{s.id}",
                                              self.file_io.read_bytes(self.snapshots.path(s.id)))
                self.file_io.overwrite_atomic(f"{self.meta}/changelog/LATEST", str(s.id).encode())
            self.file_io.delete(self.snapshots.path(s.id))
        self.snapshots.commit_earliest_hint(end)
        data, metadata = self._kept_by_new_tags(tags_read, data, metadata)
        files = self.cleaner.data_paths(data + changelog)
        deleted = self.cleaner.delete_paths(files) + self.cleaner.delete_paths(metadata)
        self.cleaner.delete_empty_dirs(files)
        log.info("expired snapshots [%s, %s) of %s, deleted %s files", expiring[0].id if expiring else end,
                 end, self.table_path, deleted)
        return ExpireResult(len(expiring), end, deleted)

    # ---- steps ------------------------------------------------------------------------------
    def _kept_by_new_tags(self, tags_read: list[tuple[Snapshot, list[str]]], data: list[ManifestEntry],
                          metadata: list[str]) -> tuple[list[ManifestEntry], list[str]]:
        """`data` and `metadata` without what a tag created since `tags_read` references.

        A tag made of a snapshot this run expires, while the run chose its files, would lose
        them. So the tags are read again once the snapshot files are gone: a tag written before
        that is seen here and keeps its files; one written after finds its snapshot gone and is
        withdrawn by its creator (`Table.create_tag`)."""
        before = {(name, s.id) for s, names in tags_read for name in names}
        try:
            new = [s for s, names in self.tags.tagged_snapshots() if any((n, s.id) not in before for n in names)]
            if not new:
                return data, metadata
            keep_data = frozenset().union(*(self.cleaner.live_data_files(s) for s in new))
            keep_meta = set().union(*(self.cleaner.metadata_files(s, changelog=False) for s in new))
        except (CorruptFileError, OSError) as exc:
            log.warning("a tag of %s was created while snapshots expired and cannot be read (%s): the files of "
                        "the expired snapshots are left for orphan cleanup", self.table_path, exc)
            return [], []
        log.info("tags %s of %s were created while snapshots expired: their files stay", [s.id for s in new],
                 self.table_path)
        return [e for e in data if file_key(e) not in keep_data], [p for p in metadata if p not in keep_meta]

    def _data_files_to_delete(self, including_end: list[Snapshot], tagged: list[Snapshot],
                              held: set[str]) -> list[ManifestEntry]:
        try:
            keep_end = self.cleaner.live_data_files(including_end[-1])
        except CorruptFileError as exc:
            log.warning("not deleting data files of expired snapshots of %s: %s", self.table_path, exc)
            return []
        doomed = []
        for s in including_end[1:]:
            tag = nearest_tag_below(tagged, s.id)
            keep: frozenset[FileKey] = frozenset()
            if tag is not None:
                try:
                    keep = self.cleaner.live_data_files(tag)
                except CorruptFileError as exc:
                    log.warning("keeping the files snapshot %s deleted: tag of snapshot %s unreadable: %s",
                                s.id, tag.id, exc)
                    continue
            doomed.extend(e for e in self.cleaner.deleted_in_delta(s)
                          if file_key(e) not in keep and file_key(e) not in keep_end and e.file.file_name not in held)
        return self._not_shared(doomed, "data files")

    def _changelog_files_to_delete(self, expiring: list[Snapshot], held: set[str]) -> list[ManifestEntry]:
        doomed = [e for s in expiring for e in self.cleaner.changelog_files(s) if e.file.file_name not in held]
        return self._not_shared(doomed, "changelog files")

    def _not_shared(self, entries: list[ManifestEntry], what: str) -> list[ManifestEntry]:
        """The `entries` no other branch references; none when another branch is unreadable."""
        try:
            return [e for e in entries if not self.other_branches.keeps(e.file.file_name)]
        except CorruptFileError as exc:
            log.warning("not deleting %s of expired snapshots of %s: another branch is unreadable: %s",
                        what, self.table_path, exc)
            return []

    def _metadata_to_delete(self, expiring: list[Snapshot], end_snapshot: Snapshot, tagged: list[Snapshot],
                            held: set[str]) -> list[str]:
        if not expiring:
            return []
        keepers = overlapping_tags(tagged, expiring[0].id, end_snapshot.id) + [end_snapshot]
        try:
            keep = set().union(*(self.cleaner.metadata_files(s, changelog=False) for s in keepers))
            candidates = set().union(*(self.cleaner.metadata_files_tolerant(s, changelog=True) for s in expiring))
            doomed = [p for p in candidates - keep
                      if p.rsplit("/", 1)[-1] not in held and not self.other_branches.keeps(p)]
        except CorruptFileError as exc:
            log.warning("not deleting manifests of expired snapshots of %s: %s", self.table_path, exc)
            return []
        return doomed

    def _try_snapshot(self, snapshot_id: int) -> Snapshot | None:
        try:
            return self.snapshots.snapshot(snapshot_id)
        except SnapshotNotFoundError:
            return None


@dataclass(frozen=True)
class Retention:
    num_max: int
    num_min: int
    time_ms: int


def retention(options: CoreOptions) -> Retention:
    """How long snapshots are kept: `snapshot.num-retained.max`, `.min` and
    `snapshot.time-retained`, each raised to its `changelog.*` counterpart when the table keeps
    its changelog longer (Java's decoupled changelog lifecycle). Java then moves an expired
    snapshot's changelog to `changelog/changelog-<id>`; we keep the snapshot, which carries the
    changelog, as long instead (long_lived_changelogs.py), so a stream can start as far back as
    the options promise, reading us or Java."""
    def longer(snapshot_key: str, changelog_key: str) -> int:
        changelog = options.get(changelog_key)
        return max(options.get(snapshot_key), changelog if changelog is not None else 0)
    return Retention(longer("snapshot.num-retained.max", "changelog.num-retained.max"),
                     longer("snapshot.num-retained.min", "changelog.num-retained.min"),
                     longer("snapshot.time-retained", "changelog.time-retained"))


def decoupled(options: CoreOptions, retain_max: int | None, retain_min: int | None,
              time_retained_ms: int | None) -> bool:
    """Whether the changelog outlives snapshots kept by these arguments: Java's
    `changelogLifecycleDecoupled` with them as `snapshot.*` options (those not given: the
    table's), a `changelog.*` option above its `snapshot.*` one (one not set follows it). Java
    then keeps the expired snapshots as long-lived changelogs. (Without arguments `retention`
    keeps the snapshots as long instead.)"""
    def longer(changelog_key: str, snapshot_key: str, given: int | None) -> bool:
        changelog = options.get(changelog_key)
        return changelog is not None and changelog > (options.get(snapshot_key) if given is None else given)
    return (longer("changelog.num-retained.max", "snapshot.num-retained.max", retain_max)
            or longer("changelog.num-retained.min", "snapshot.num-retained.min", retain_min)
            or longer("changelog.time-retained", "snapshot.time-retained", time_retained_ms))


def nearest_tag_below(tagged: list[Snapshot], snapshot_id: int) -> Snapshot | None:
    """The tag with the largest id < snapshot_id (`tagged` sorted by id)."""
    best = None
    for t in tagged:
        if t.id >= snapshot_id:
            break
        best = t
    return best


def overlapping_tags(tagged: list[Snapshot], begin: int, end: int) -> list[Snapshot]:
    """Tags that may share metadata with snapshots [begin, end): the last tag at or before
    `begin` and every tag inside the range (a manifest, once merged away, never returns,
    so anything an older tag shares with the range the last one before it shares too)."""
    before = [t for t in tagged if t.id <= begin]
    inside = [t for t in tagged if begin < t.id < end]
    return before[-1:] + inside
