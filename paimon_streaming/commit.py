"""The commit protocol (FORMAT.md §10, seeds/commit-process.txt).

A commit turns commit messages (files written per partition and bucket) into at most two
snapshots with the same commitIdentifier: APPEND (or OVERWRITE) for new data, then COMPACT
for compaction results. One attempt (`_try_commit_once`) reads the latest snapshot, checks
conflicts, merges manifests, writes the base list, the delta manifests and list, the index
manifest, and publishes the snapshot with an atomic create-if-absent. If another writer took
the id, the attempt's files are deleted and it retries from the new latest snapshot. Any
failure before the snapshot exists deletes the attempt's files, so the table is unchanged.
"""
from __future__ import annotations

import logging
import random
import time
from dataclasses import dataclass, field
from typing import Callable, Sequence

from .binary_row import deserialize_row
from .branches import MAIN, branch_path
from .commit_users import CommitUserRecords, UserCommits, user_commits
from .cross_partition import check_no_concurrent_writes
from .errors import (CommitConflictError, CommitOutcomeUnknownError, CompactionNotCommittedError, DuplicateCommitError,
                     PaimonError, SequenceConflictError, SnapshotNotFoundError, StaleOptionsError, StalePlanError,
                     TableNotFoundError)
from .fileio import FileIO
from .manifest import (ADD, DELETE, DataFileMeta, IndexFileMeta, IndexManifestEntry, IndexManifestFile,
                       ManifestEntry, ManifestFile, ManifestFileMeta, ManifestList, combine_index_entries, index_key,
                       merge_manifests)
from .manifest.files import MetadataFormat
from .manifest.live import LIVE_FILES, LiveFiles
from .maintenance import after_commit
from .options import CoreOptions, write_rule_change
from .paths import PathFactory, TableDirs, partition_path
from . import data_evolution, overwrite_upgrade, row_tracking
from .schema import SchemaManager, TableSchema
from .snapshot import APPEND, BATCH_COMMIT_IDENTIFIER, COMPACT, OVERWRITE, Snapshot, SnapshotManager

log = logging.getLogger(__name__)


@dataclass
class Increment:
    """File changes of one kind of commit for one (partition, bucket)."""
    new_files: list[DataFileMeta] = field(default_factory=list)
    deleted_files: list[DataFileMeta] = field(default_factory=list)
    changelog_files: list[DataFileMeta] = field(default_factory=list)
    new_index_files: list[IndexFileMeta] = field(default_factory=list)
    deleted_index_files: list[IndexFileMeta] = field(default_factory=list)

    def is_empty(self) -> bool:
        return not (self.new_files or self.deleted_files or self.changelog_files
                    or self.new_index_files or self.deleted_index_files)


@dataclass
class CommitMessage:
    """What one writer task produced for one (partition, bucket): the unit sent to the committer.

    `data` goes into the APPEND snapshot (new level-0 / append files, HASH index files,
    input changelog); `compact` into the COMPACT snapshot (compaction before/after, DV
    index files, lookup changelog).
    """
    partition: bytes
    bucket: int
    total_buckets: int
    data: Increment = field(default_factory=Increment)
    compact: Increment = field(default_factory=Increment)


@dataclass
class _Changes:
    entries: list[ManifestEntry] = field(default_factory=list)
    changelog: list[ManifestEntry] = field(default_factory=list)
    index: list[IndexManifestEntry] = field(default_factory=list)

    def is_empty(self) -> bool:
        return not (self.entries or self.changelog or self.index)


def _collect(messages: Sequence[CommitMessage], pick: Callable[[CommitMessage], Increment]) -> _Changes:
    out = _Changes()
    for m in messages:
        inc = pick(m)
        for f in inc.deleted_files:
            out.entries.append(ManifestEntry(DELETE, m.partition, m.bucket, m.total_buckets, f))
        for f in inc.new_files:
            out.entries.append(ManifestEntry(ADD, m.partition, m.bucket, m.total_buckets, f))
        for f in inc.changelog_files:
            out.changelog.append(ManifestEntry(ADD, m.partition, m.bucket, m.total_buckets, f))
        for f in inc.deleted_index_files:
            out.index.append(IndexManifestEntry(DELETE, m.partition, m.bucket, f))
        for f in inc.new_index_files:
            out.index.append(IndexManifestEntry(ADD, m.partition, m.bucket, f))
    return out


class FileStoreCommit:
    """Commits messages of one table as snapshots; safe against concurrent committers."""

    def __init__(self, file_io: FileIO, table_path: str, schema: TableSchema,
                 path_factory: PathFactory | None = None, branch: str = MAIN):
        self.file_io = file_io
        self.table_path = table_path
        self.schema = schema
        self.branch = branch
        self.options = CoreOptions(schema.options)
        # Java's BUCKET_UNAWARE mode: its deletion-vector index files are kept by name
        self.bucket_unaware = not schema.primary_keys and self.options.bucket == -1
        self.tracks_rows = row_tracking.enabled(schema.options) and not schema.primary_keys
        self.merges_by_row_id = data_evolution.enabled(schema.options) and not schema.primary_keys
        self.meta = branch_path(table_path, branch)  # the branch's snapshots; files stay in the table's dirs
        self.snapshots = SnapshotManager(file_io, self.meta)
        self.paths = path_factory or PathFactory(table_path, self.options.file_format)
        self.dirs = TableDirs.of(table_path, schema.options)
        written = MetadataFormat.of(self.options)
        self.partition_fields = schema.fields_of(schema.partition_keys)
        self.manifest_file = ManifestFile(file_io, self.paths, self.partition_fields, written,
                                          self.options.get("manifest.target-file-size"), only_written=True)
        self.manifest_list = ManifestList(file_io, self.paths, written, only_written=True)
        self.index_manifest = IndexManifestFile(file_io, self.paths, written, only_written=True)

    # ---- public -----------------------------------------------------------------------
    def committed_identifiers(self, commit_user: str, identifiers: Sequence[int]) -> set[int]:
        """The identifiers of `commit_user` already committed: the exactly-once filter.

        Committed means carried by a live snapshot of the user, or recorded when expiration
        removed such a snapshot (commit_users.py), however long ago. An identifier below the
        user's newest that was never committed raises CommitIdentifierError (Java's
        filterCommitted would call it committed and drop the data silently)."""
        if not identifiers:
            return set()
        commits = user_commits(self.snapshots, CommitUserRecords(self.file_io, self.meta),
                               commit_user, min(identifiers))
        return {i for i in identifiers if commits.committed(i)}

    def user_commits(self, commit_user: str, lowest: int) -> UserCommits:
        """What the table knows of `commit_user`'s identifiers from `lowest` up, with the
        snapshots the check read (the table's newest, for a write to plan on; the user's newest)."""
        return user_commits(self.snapshots, CommitUserRecords(self.file_io, self.meta), commit_user, lowest)

    def commit(self, messages: Sequence[CommitMessage], commit_user: str, identifier: int,
               overwrite_partitions: list[bytes] | None = None, overwrite: bool = False,
               ignore_empty: bool = True, watermark: int | None = None,
               properties: dict[str, str] | None = None, best_effort_compaction: bool = False,
               planned_on: Snapshot | None = None, maintain: bool = True, placed: bool = False,
               unique_since: int | None = None) -> list[int]:
        """Commit one committable; returns the ids of the snapshots created (0, 1 or 2).

        `overwrite=True` replaces the whole table, or only `overwrite_partitions` when given.
        `best_effort_compaction`: writers pass it for the compaction they did after a write; on
        a merge-on-read table losing that compaction to a concurrent writer is then logged and
        its files removed instead of failing a write whose data is committed. Other failures
        of a compaction after the data committed raise CompactionNotCommittedError, naming the
        data's snapshot (a lookup table's readers see the batch only once it is compacted).
        `planned_on`: the snapshot the messages were written on, if the caller read it just
        before; the first attempt builds on it while no snapshot follows it.
        `maintain=False`: no maintenance after it (a commit of the maintenance itself).
        `placed`: the rows of a cross-partition upsert table were placed by where keys lived at
        `planned_on` (cross_partition.py), or a delete or update read its rows there: a newer
        snapshot by another writer (other than a compaction) fails the commit.
        `unique_since`: the caller's exactly-once check found (commit_user, identifier) not
        committed up to this snapshot id; the snapshots after it are checked before publishing,
        so two attempts of one batch racing each other commit it once (DuplicateCommitError for
        the later, which commits nothing).
        """
        created: list[Snapshot] = []
        try:
            data = _collect(messages, lambda m: m.data)
            if overwrite and _collect(messages, lambda m: m.compact).is_empty():
                data.entries = overwrite_upgrade.upgraded(data.entries, self.schema)
            if overwrite:
                created.append(self._commit_with_retry(OVERWRITE, data, commit_user, identifier, watermark, properties,
                                                       replace=True, overwrite_partitions=overwrite_partitions,
                                                       check_conflicts=True, previous=planned_on, placed=placed,
                                                       unique_since=unique_since))
            elif not data.is_empty() or not ignore_empty:
                deletes = any(e.kind == DELETE for e in data.entries) or any(
                    e.index_file.index_type == "DELETION_VECTORS" for e in data.index)
                kind = OVERWRITE if deletes else APPEND
                created.append(self._commit_with_retry(kind, data, commit_user, identifier, watermark,
                                                       properties, check_conflicts=deletes, previous=planned_on,
                                                       placed=placed, unique_since=unique_since))
            compact = _collect(messages, lambda m: m.compact)
            if not compact.is_empty():
                try:
                    created.append(self._commit_with_retry(COMPACT, compact, commit_user, identifier, watermark,
                                                           properties, check_conflicts=True,
                                                           previous=created[-1] if created else planned_on,
                                                           previous_is_own=bool(created)))
                except Exception as exc:
                    lookup = bool(self.schema.primary_keys) and self.options.lookup_compaction
                    if isinstance(exc, CommitConflictError) and best_effort_compaction and not lookup:
                        # a merge-on-read (or append table's) compaction after a write only
                        # saves reads; the data is committed, and the next write compacts again
                        log.warning("compaction of %s lost a race with another writer and was dropped: %s",
                                    self.table_path, exc)
                        self._delete_unused_outputs(messages)
                    elif created:  # the caller must not take the committed data for uncommitted
                        raise CompactionNotCommittedError(
                            f"{self.table_path}: the data of commit identifier {identifier} was committed in "
                            f"snapshot {created[-1].id}, its compaction was not ({type(exc).__name__}: {exc}); "
                            "do not write it again: the next write or Table.compact compacts it",
                            created[-1].id) from exc
                    else:
                        raise
        finally:
            if created:  # once per call: a hint one snapshot behind (a crash) is corrected by readers
                self.snapshots.commit_latest_hint(created[-1].id)
        if created and maintain:
            # tags, expiration; never raises
            after_commit(self.file_io, self.table_path, self.schema, created[-1].id, commit_user, identifier,
                         self.branch)
        return [s.id for s in created]

    # ---- one commit kind, with retries ------------------------------------------------
    def _commit_with_retry(self, kind: str, changes: _Changes, commit_user: str, identifier: int,
                           watermark: int | None, properties: dict[str, str] | None,
                           replace: bool = False, overwrite_partitions: list[bytes] | None = None,
                           check_conflicts: bool = False, previous: Snapshot | None = None,
                           previous_is_own: bool = False, placed: bool = False,
                           unique_since: int | None = None) -> Snapshot:
        """`previous`: a snapshot that was the latest a moment ago: the one this commit call just
        published (`previous_is_own`), or the one its messages were planned on, while no snapshot
        follows it. The first attempt builds on it without reading the hint and the snapshot
        again; should another writer have taken the next id, publishing fails and the next
        attempt reads (and `_try_commit_once` publishes only while `previous` still exists)."""
        max_retries = self.options.get("commit.max-retries")
        unknown: list[Snapshot] = []  # the snapshots of attempts whose publish may have landed
        unknown_cause: BaseException | None = None
        for attempt in range(max_retries + 1):
            if attempt == 0 and previous is not None and (previous_is_own or
                                                          not self.snapshots.exists(previous.id + 1)):
                latest = previous
            else:
                latest = self.snapshots.latest()
            # before anything else: a later attempt's lost race, a duplicate or a conflict may be
            # this commit itself, landed late
            done = self._find_own_commit(unknown, latest)
            if done is not None:
                return done
            if unique_since is not None and latest is not None and latest.id > unique_since:
                self._refuse_duplicate(unique_since, latest, commit_user, identifier)
                unique_since = latest.id
            planned_id = previous.id if previous else 0
            if placed and previous is not None:
                self._check_plan_not_rolled_back(previous, latest)
            if placed and latest is not None and latest.id != planned_id:
                check_no_concurrent_writes(self.table_path, previous, [
                    self.snapshots.snapshot(i) for i in range(planned_id + 1, latest.id + 1)], commit_user)
            try:
                published = self._try_commit_once(kind, changes, latest, commit_user, identifier, watermark,
                                                  properties, replace, overwrite_partitions, check_conflicts,
                                                  check_options=not previous_is_own)
            except _PublishUnknown as exc:
                unknown.append(exc.snapshot)
                unknown_cause = exc.__cause__
                published = None
            if published is not None:
                return published
            time.sleep(min(1.0, 0.01 * (2 ** attempt)) * random.random())
        latest = self.snapshots.latest()
        done = self._find_own_commit(unknown, latest)
        if done is not None:  # the last write landed: its files are the table's
            return done
        if unknown and (latest.id if latest else 0) < unknown[-1].id:  # its id is free: it may still land
            raise CommitOutcomeUnknownError(
                f"commit of {kind} snapshot {unknown[-1].id} to {self.table_path} by commit user {commit_user!r} "
                f"failed after {max_retries} retries, the last write with an unknown outcome ({unknown_cause}): "
                "the store may still apply it, so its files are kept. Written again under the same commit user "
                f"and identifier the batch commits once; otherwise see whether snapshot {unknown[-1].id} is this "
                "commit (its commit user) before writing it again")
        raise CommitConflictError(
            f"commit of {kind} snapshot to {self.table_path} failed after {max_retries} retries: " +
            (f"the store kept failing the snapshot's write ({unknown_cause})" if unknown else
             "other writers keep taking the next snapshot id"))

    def _check_plan_not_rolled_back(self, planned_on: Snapshot, latest: Snapshot | None) -> None:
        """A batch placed on `planned_on` (rows a delete or update read, keys a cross-partition
        batch placed) commits only while that snapshot is still in the table's history: after a
        rollback below it (perhaps with new commits under the same ids) no newer snapshot tells
        of the change, and the batch would delete or move what the table no longer holds while
        missing what it holds again (StalePlanError: plan it again)."""
        if latest is not None and latest.id == planned_on.id:
            now: Snapshot | None = latest
        else:
            try:
                now = self.snapshots.snapshot(planned_on.id)
            except SnapshotNotFoundError:
                now = None
        if now != planned_on:
            raise StalePlanError(
                f"snapshot {planned_on.id} of {self.table_path}, on which this batch was planned, "
                + ("was rolled back or expired" if now is None else "was rolled back and replaced")
                + f" (latest is {latest.id if latest else None}); nothing was committed, plan the batch again")

    def _refuse_duplicate(self, after: int, latest: Snapshot, commit_user: str, identifier: int) -> None:
        """DuplicateCommitError when a snapshot after `after` carries `commit_user` with
        `identifier` or a newer one: another attempt of this batch got there first. Snapshots
        expired meanwhile answer through the commit-user records, which expiration writes
        before it deletes them (read after the scan, as `user_commits` reads them)."""
        expired = False
        for sid in range(after + 1, latest.id + 1):
            try:
                snap = latest if sid == latest.id else self.snapshots.snapshot(sid)
            except SnapshotNotFoundError:
                expired = True  # or rolled back
                continue
            theirs = snap.commit_identifier
            if snap.commit_user == commit_user and theirs != BATCH_COMMIT_IDENTIFIER and theirs >= identifier:
                self._raise_duplicate(commit_user, identifier, theirs, f"snapshot {sid}", sid)
        if expired:
            newest = CommitUserRecords(self.file_io, self.meta).recorded(commit_user).max()
            if newest is not None and newest >= identifier:
                self._raise_duplicate(commit_user, identifier, newest, "a snapshot expired since", None)

    def _raise_duplicate(self, commit_user: str, identifier: int, theirs: int, where: str,
                         snapshot_id: int | None) -> None:
        raise DuplicateCommitError(
            f"commit identifier {theirs} of commit user {commit_user!r} was committed to {self.table_path} ({where}) "
            f"by another attempt while this one wrote identifier {identifier} (a zombie writer next to its retry?): "
            "this attempt commits nothing", theirs == identifier, snapshot_id if theirs == identifier else None)

    def _find_own_commit(self, unknown: list[Snapshot], latest: Snapshot | None) -> Snapshot | None:
        """The snapshot of `unknown` (attempts whose publish failed with an unknown outcome) that
        landed, up to `latest`. Told by its delta manifest list, a file only that attempt wrote:
        a commit user and identifier are shared by a zombie and its retry (or are a fresh
        name per batch), but the list name is never. An id taken by another writer, expired or
        rolled back is not this commit's."""
        for sid in sorted({s.id for s in unknown if latest is not None and s.id <= latest.id}):
            try:
                snap = latest if sid == latest.id else self.snapshots.snapshot(sid)
            except SnapshotNotFoundError:
                continue
            if any(s.id == sid and s.delta_manifest_list == snap.delta_manifest_list for s in unknown):
                return snap
        return None

    def _newest_schema_id(self, known: int, first: bool) -> int:
        """The id of the table's newest schema, at least `known` (this writer's, or the latest
        snapshot's), which a snapshot records, as Java's commit does: a writer that planned under
        an older schema commits under the newest one (another process changed the schema
        meanwhile), so time travel to its snapshot answers in the columns Java answers in; its
        files keep their own schema id and readers convert them. One probe when there is none
        newer (overlapping the manifest uploads); a `first` snapshot also checks that the
        schema still exists."""
        schemas = SchemaManager(self.file_io, self.meta)
        if not self.file_io.exists(schemas.path(known + 1)):
            if first and not self.file_io.exists(schemas.path(known)):
                # the table or branch was dropped since this writer opened it: a first snapshot
                # would recreate it without a schema, the rows unreachable
                what = f"branch '{self.branch}' of table" if self.branch != MAIN else "table"
                raise TableNotFoundError(f"{what} {self.table_path} no longer exists (its schema {known} is gone: "
                                         "dropped or deleted since this writer opened it); nothing was committed")
            return known
        return max([known] + schemas.schema_ids())

    def _check_write_rules(self, schema_id: int, entries: list[ManifestEntry],
                           changelog: list[ManifestEntry]) -> None:
        """StaleOptionsError when files this commit adds were written under a schema (their
        schema id) whose options a writer acts on differ from those of the table's schema
        `schema_id`, the one it commits under (`write_rule_change`): a writer that opened the
        table before `sequence.field`, an aggregate function, the changelog producer, ...
        changed. (Java's writers keep the options they started with.) Files a compaction only
        moves up a level (deleted and added under one name) were not written now."""
        moved = {e.file.file_name for e in entries if e.kind == DELETE}
        written = {e.file.schema_id for e in entries if e.kind == ADD and e.file.file_name not in moved}
        written |= {e.file.schema_id for e in changelog}
        stale = sorted(i for i in written if i < schema_id)
        if not stale:
            return
        schemas = SchemaManager(self.file_io, self.meta)
        newest = schemas.schema(schema_id)
        for old_id in stale:
            old = self.schema if old_id == self.schema.id else schemas.schema(old_id)
            key = write_rule_change(old.options, newest.options, {f.name: f.id for f in old.fields},
                                    {f.name: f.id for f in newest.fields})
            if key is not None:
                raise StaleOptionsError(
                    f"table option '{key}' of {self.table_path} changed to {newest.options.get(key)!r} (schema "
                    f"{schema_id}) after files of this commit were written with {old.options.get(key)!r} (schema "
                    f"{old_id}); nothing was committed: reload the table and write again")

    def _try_commit_once(self, kind: str, changes: _Changes, latest: Snapshot | None, commit_user: str,
                         identifier: int, watermark: int | None, properties: dict[str, str] | None,
                         replace: bool, overwrite_partitions: list[bytes] | None,
                         check_conflicts: bool, check_options: bool = True) -> Snapshot | None:
        entries = list(changes.entries)
        index_changes = list(changes.index)
        base_metas = self._data_manifests(latest)
        targets = {} if replace else _vector_targets(index_changes)
        live = self._live_files(latest) if replace or check_conflicts or targets else None
        after = None
        if replace:
            replaced = None if overwrite_partitions is None else set(overwrite_partitions)
            entries = [ManifestEntry(DELETE, e.partition, e.bucket, e.total_buckets, e.file)
                       for e in live.entries(replaced)] + entries
            index_changes = [IndexManifestEntry(DELETE, e.partition, e.bucket, e.index_file)
                             for e in self.index_manifest.read(latest.index_manifest if latest else None)
                             if replaced is None or e.partition in replaced] + index_changes
        new_id = latest.id + 1 if latest else 1
        next_row_id = latest.next_row_id if latest else None
        if self.tracks_rows:  # numbered from the snapshot this attempt builds on, so writers never share ids
            entries, next_row_id = row_tracking.number_rows(entries, new_id, next_row_id or 0)
        if self.schema.primary_keys and not replace and kind != COMPACT:
            live = live or self._live_files(latest)
            self._check_sequence_order(live, entries, kind)
        if check_conflicts:
            after = self._check_conflicts(live, entries, kind)
        elif self.options.bucket > 0 and any(e.kind == ADD for e in entries):  # counts only fixed buckets change
            live = live or self._live_files(latest)
            self._check_bucket_counts(live.apply(entries, strict=False)[0], entries, kind)
        if index_changes and not replace:
            self._check_index_conflicts(latest, index_changes, kind)
        if check_conflicts and not replace:
            self._check_removed_files_unmarked(latest, index_changes, after, entries, kind)
        if targets:
            self._check_vector_targets(after or live.apply(entries, strict=False)[0], targets, kind)

        written: list[str] = []  # appended to by the writing threads (list.append is atomic)

        def write_base() -> tuple[str, int]:
            merged = merge_manifests(
                base_metas, self.manifest_file, self.options.get("manifest.target-file-size"),
                self.options.get("manifest.full-compaction-threshold-size"),
                self.options.get("manifest.merge-min-count"), written)
            return self._write_list(merged, written)

        def write_listed(listed: list[ManifestEntry]) -> tuple[str, int]:
            metas = self.manifest_file.write(listed)
            written.extend(m.file_name for m in metas)
            return self._write_list(metas, written)

        def write_index() -> str | None:
            if not index_changes:
                return latest.index_manifest if latest else None
            previous = self.index_manifest.read(latest.index_manifest if latest else None)
            name = self.index_manifest.write(combine_index_entries(previous, index_changes, self.bucket_unaware))
            written.append(name)
            return name

        known_schema = max(self.schema.id, latest.schema_id if latest else 0)
        jobs = [write_base, lambda: write_listed(entries), write_index, lambda: self._newest_schema_id(known_schema, latest is None)]
        if changes.changelog:
            jobs.append(lambda: write_listed(changes.changelog))
        try:
            # independent files: on an object store their uploads overlap (FileIO.map)
            (base_name, base_size), (delta_name, delta_size), index_name, schema_id, *changelog = \
                self.file_io.map(lambda job: job(), jobs)
            changelog_name, changelog_size = changelog[0] if changelog else (None, None)
            if check_options:
                self._check_write_rules(schema_id, entries, changes.changelog)

            delta_count = sum(e.file.row_count if e.kind == ADD else -e.file.row_count for e in entries)
            snapshot = Snapshot(
                id=new_id, schema_id=schema_id,
                base_manifest_list=base_name, base_manifest_list_size=base_size,
                delta_manifest_list=delta_name, delta_manifest_list_size=delta_size,
                changelog_manifest_list=changelog_name, changelog_manifest_list_size=changelog_size,
                index_manifest=index_name, commit_user=commit_user, commit_identifier=identifier,
                commit_kind=kind, time_millis=int(time.time() * 1000),
                total_record_count=(latest.total_record_count if latest else 0) + delta_count,
                delta_record_count=delta_count,
                changelog_record_count=sum(e.file.row_count for e in changes.changelog) if changes.changelog
                else None,
                watermark=_max_watermark(watermark, latest.watermark if latest else None),
                statistics=latest.statistics if latest and latest.schema_id == schema_id else None,
                properties=properties or None, next_row_id=next_row_id)
            try:
                # `latest` expired while the manifests were written (or before: a stale base):
                # expiration deletes oldest first, so the id after it may have been published
                # and expired as well, and would look free; creating it again would put this
                # commit below the earliest snapshot, which no reader goes back to. A lost
                # race: read the latest again.
                published = (latest is None or self.snapshots.exists(latest.id)) and \
                    self.snapshots.try_publish(snapshot)
            except OSError as exc:
                log.warning("publishing snapshot %s of %s failed with an unknown outcome: %s",
                            new_id, self.table_path, exc)
                raise _PublishUnknown(snapshot) from exc
        except _PublishUnknown:
            raise
        except BaseException:
            self._delete_files(written)
            raise
        if not published:
            self._delete_files(written)
            return None
        if after is None and live is not None:
            after = live.apply(entries, strict=False)[0]
        if after is not None:
            LIVE_FILES.put(self.meta, snapshot, after)  # the next commit starts from here
        return snapshot

    # ---- helpers ------------------------------------------------------------------------
    def _write_list(self, metas: list[ManifestFileMeta], written: list[str]) -> tuple[str, int]:
        name, size = self.manifest_list.write(metas)
        written.append(name)
        return name, size

    def _data_manifests(self, latest: Snapshot | None):
        if latest is None:
            return []
        return self.manifest_list.read(latest.base_manifest_list, latest.base_manifest_list_size) + \
            self.manifest_list.read(latest.delta_manifest_list, latest.delta_manifest_list_size)

    def _live_files(self, latest: Snapshot | None) -> LiveFiles:
        """Live files of `latest`, from the cache kept across commits (FORMAT §10 replay)."""
        if latest is None:
            return LiveFiles({})
        return LIVE_FILES.get(latest, self.snapshots, self.manifest_list, self.manifest_file)

    def _check_conflicts(self, live: LiveFiles, delta: list[ManifestEntry], kind: str) -> LiveFiles:
        """The live files after `delta`; a conflict when it deletes a file that is not live,
        adds one twice, leaves a partition with files of two bucket counts (its keys would be
        hashed two ways: a write racing a rescale) or overlaps keys in an LSM level."""
        after, missing, _ = live.apply(delta)
        self._check_bucket_counts(after, delta, kind)
        if missing:
            names = ", ".join(e.file.file_name for e in missing[:5])
            raise CommitConflictError(
                f"{kind} commit to {self.table_path} deletes files that are no longer live ({names}): "
                "a concurrent commit (compaction or overwrite) removed them; the commit was not applied")
        if self.schema.primary_keys:
            self._check_lsm_overlaps(after, [d for d in delta if d.kind == ADD and d.file.level > 0])
        if kind == COMPACT and self.merges_by_row_id:
            self._check_row_ranges(after, [d for d in delta if d.kind == ADD])
        return after

    def _check_bucket_counts(self, after: LiveFiles, delta: list[ManifestEntry], kind: str) -> None:
        """Every partition `delta` touches keeps files of one bucket count: keys hashed by two
        counts could be live twice (a write racing a rescale, either way round; rescale.py)."""
        for part in {d.partition for d in delta}:
            totals = frozenset().union(*(b.total_buckets for bucket, b in after.partitions.get(part, {}).items()
                                         if bucket >= 0))  # postponed files (bucket -2) wait outside
            if len(totals) > 1:
                raise CommitConflictError(
                    f"{kind} commit to {self.table_path} would leave a partition with files of {sorted(totals)} "
                    "buckets: the partition was rescaled, or written to while it was, by another writer; "
                    "the commit was not applied")

    def _check_row_ranges(self, after: LiveFiles, added: list[ManifestEntry]) -> None:
        """A data-evolution compaction merged rows whose columns another writer (Java's MERGE
        INTO) rewrote since it was planned: its whole-row file would now overlap their new
        file's rows without covering the same range, which no reader can merge."""
        for d in added:
            bucket = after.bucket(d.partition, d.bucket)
            others = [] if bucket is None else [e.file for e in bucket.files.values()
                                                if e.file.file_name != d.file.file_name]
            clash = data_evolution.overlapping(d.file, others)
            if clash:
                raise CommitConflictError(
                    f"compaction of {self.table_path} merged rows {d.file.first_row_id}.."
                    f"{d.file.first_row_id + d.file.row_count - 1} that files committed since it was planned "
                    f"also hold ({', '.join(clash[:5])}): a concurrent column update; the compaction was not applied")

    def _check_sequence_order(self, live: LiveFiles, delta: list[ManifestEntry], kind: str) -> None:
        """Serializable writes to a bucket. A writer numbers its rows from the highest sequence
        number live in the bucket when it planned; a file another writer committed since then
        reaches this commit's lowest number, and merging by sequence number would interleave
        the two batches key by key (a state no commit order gives). That is a conflict: the
        batch must be numbered again above the new files. Without a concurrent writer every
        live file is below the new ones, and the check reads nothing new."""
        lowest: dict[tuple[bytes, int], int] = {}
        for e in delta:
            if e.kind == ADD and e.file.level == 0:
                key = (e.partition, e.bucket)
                lowest[key] = min(lowest.get(key, e.file.min_sequence_number), e.file.min_sequence_number)
        for (partition, bucket), low in lowest.items():
            files = live.bucket(partition, bucket)
            newer = [] if files is None else \
                [e.file.file_name for e in files.files.values() if e.file.max_sequence_number >= low]
            if newer:
                raise SequenceConflictError(
                    f"{kind} commit to {self.table_path} bucket {bucket}: another writer committed "
                    f"{', '.join(sorted(newer)[:3])} with sequence numbers at or above this commit's ({low}) since "
                    "this batch was written; the commit was not applied, write the batch again on the new "
                    "snapshot (Table.write_arrow and paimon_sink do)")

    def discard(self, messages: Sequence[CommitMessage]) -> None:
        """Delete the files `messages` wrote (data, changelog and index files of a batch that
        will not be committed), so a write that is redone leaves no orphans behind."""
        for m in messages:
            bucket_dir = self.dirs.bucket(self._partition_path(m.partition), m.bucket)
            removed = {f.file_name for f in m.compact.deleted_files}
            for inc in (m.data, m.compact):
                for f in inc.new_files + inc.changelog_files:
                    if inc is m.data or f.file_name not in removed:
                        for path in TableDirs.data_file_paths(bucket_dir, f):
                            self.file_io.delete_quietly(path)
                for f in inc.new_index_files:
                    self.file_io.delete_quietly(self.dirs.index_file(bucket_dir, f))

    def _check_index_conflicts(self, latest: Snapshot | None, changes: list[IndexManifestEntry],
                               kind: str) -> None:
        """A bucket's index file (deletion vectors, HASH) is rewritten whole, so a commit must
        replace exactly the file that is live now: deleting one that is gone, or adding one
        while another writer's file is live and not deleted, would silently drop that writer's
        deletion vectors (keys live twice) or hash entries. Index files kept by name (the
        deletion vectors of bucket-unaware append tables, other index types) are only added
        beside the others; deleting one that is gone is the conflict."""
        live = {index_key(e, self.bucket_unaware): e.index_file.file_name
                for e in self.index_manifest.read(latest.index_manifest if latest else None)}
        deleted: dict[tuple, set[str]] = {}
        for e in changes:
            if e.kind == DELETE:
                deleted.setdefault(index_key(e, self.bucket_unaware), set()).add(e.index_file.file_name)
        for e in changes:
            key = index_key(e, self.bucket_unaware)
            current = live.get(key)
            gone = e.kind == DELETE and e.index_file.file_name != current
            replaced = e.kind == ADD and key[0] != "file" and current is not None and current not in deleted.get(key, ())
            if gone or replaced:
                raise CommitConflictError(
                    f"{kind} commit to {self.table_path} conflicts on the {e.index_file.index_type} index of bucket "
                    f"{e.bucket}: a concurrent commit replaced it (now {current}); the commit was not applied, "
                    "retry it on the new snapshot (the sink and Table.compact redo it)")

    def _check_removed_files_unmarked(self, latest: Snapshot | None, index_changes: list[IndexManifestEntry],
                                      after: LiveFiles, entries: list[ManifestEntry], kind: str) -> None:
        """A file this commit removes must not keep a deletion vector it leaves live: such a
        vector came from a concurrent delete or upsert since the plan (a compaction or rewrite
        drops the vectors it read), and the rows it marks would be back in the files written
        from the unmarked copy (Java's conflict check compares each removed file's vector too)."""
        removed: set[tuple[bytes, str]] = set()
        for e in entries:
            if e.kind == DELETE:
                live = after.bucket(e.partition, e.bucket)
                if live is None or e.file.file_name not in live.names:  # an upgrade keeps the file
                    removed.add((e.partition, e.file.file_name))
        if not removed or latest is None or latest.index_manifest is None:
            return
        previous = self.index_manifest.read(latest.index_manifest)
        for e in combine_index_entries(previous, index_changes, self.bucket_unaware):
            if e.index_file.index_type != "DELETION_VECTORS" or not e.index_file.dv_ranges:
                continue
            for r in e.index_file.dv_ranges:
                if (e.partition, r.data_file_name) in removed:
                    raise CommitConflictError(
                        f"{kind} commit to {self.table_path} removes {r.data_file_name}, whose rows a concurrent "
                        f"commit marked deleted since this commit was planned (deletion vector in "
                        f"{e.index_file.file_name}); the commit was not applied, plan it again on the new snapshot")

    def _check_vector_targets(self, after: LiveFiles, targets: dict[tuple[bytes, int], set[str]], kind: str) -> None:
        """Deletion vectors must mark files that are live after this commit: marks computed
        for a file a concurrent compaction rewrote would miss its copy of the rows (keys live
        twice), so that is a conflict."""
        missing = []
        for (partition, bucket), names in targets.items():
            files = after.bucket(partition, bucket)
            missing.extend(names - files.names if files is not None else names)
        missing.sort()
        if missing:
            raise CommitConflictError(
                f"{kind} commit to {self.table_path} marks deleted rows in files a concurrent commit removed "
                f"({', '.join(missing[:3])}); the commit was not applied, retry it on the new snapshot "
                "(the sink and Table.write_arrow redo the compaction)")

    def _check_lsm_overlaps(self, after: LiveFiles, added: list[ManifestEntry]) -> None:
        """Files of one LSM level (>= 1) of a bucket must not overlap in key range. Only a pair
        with a file this commit adds can be new (the rest was checked when committed; Java
        checks every level of the changed partitions), so the added files that are still live
        are compared with the other files of their level."""
        key_types = [f.type for f in self.schema.fields_of(self.schema.trimmed_primary_keys)]

        def decode(key: bytes) -> tuple:
            return tuple(deserialize_row(key, key_types))
        runs: dict[tuple[bytes, int, int], list[ManifestEntry]] = {}
        for e in added:
            runs.setdefault((e.partition, e.bucket, e.file.level), []).append(e)
        for (partition, bucket, level), news in runs.items():
            files = after.bucket(partition, bucket)
            news = [e for e in news if files is not None and e.identifier in files.files]  # not removed again
            if not news:
                continue
            run = [(files.key_range(e, decode), e.file.file_name) for e in files.files.values()
                   if e.file.level == level]
            for new in news:
                lo, hi = files.key_range(new, decode)
                for (other_lo, other_hi), name in run:
                    if other_lo <= hi and lo <= other_hi and name != new.file.file_name:
                        raise CommitConflictError(
                            f"LSM conflicts detected in {self.table_path} bucket {bucket} level {level}: "
                            f"files {new.file.file_name} and {name} overlap in key range")

    def _delete_unused_outputs(self, messages: Sequence[CommitMessage]) -> None:
        """Remove the files a dropped compaction wrote (upgraded files are not new: kept)."""
        for m in messages:
            kept = {f.file_name for f in m.compact.deleted_files} | {f.file_name for f in m.data.new_files}
            for f in m.compact.new_files:
                if f.file_name not in kept:
                    self.file_io.delete_quietly(
                        TableDirs.data_file(self.dirs.bucket(self._partition_path(m.partition), m.bucket), f))

    def _partition_path(self, partition: bytes) -> str:
        values = deserialize_row(partition, [f.type for f in self.partition_fields])
        return partition_path(values, self.partition_fields, self.options.partition_default_name,
                              self.options.get("partition.legacy-name"))

    def _delete_files(self, names: list[str]) -> None:
        for name in names:
            self.file_io.delete_quietly(f"{self.paths.manifest_dir}/{name}")


class _PublishUnknown(PaimonError):
    """The write of `snapshot` failed in a way that may or may not have created the file."""

    def __init__(self, snapshot: Snapshot):
        super().__init__(f"publishing snapshot {snapshot.id} had an unknown outcome")
        self.snapshot = snapshot


def _vector_targets(index_changes: list[IndexManifestEntry]) -> dict[tuple[bytes, int], set[str]]:
    """The data files of every deletion vector the commit adds, by (partition, bucket)."""
    targets: dict[tuple[bytes, int], set[str]] = {}
    for e in index_changes:
        if e.kind == ADD and e.index_file.index_type == "DELETION_VECTORS" and e.index_file.dv_ranges:
            targets.setdefault((e.partition, e.bucket), set()).update(r.data_file_name for r in e.index_file.dv_ranges)
    return targets


def _max_watermark(new: int | None, old: int | None) -> int | None:
    if new is None:
        return old
    return new if old is None else max(new, old)
