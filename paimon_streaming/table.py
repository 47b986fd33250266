"""`Table`: the public facade over one Paimon table directory."""
from __future__ import annotations

import contextlib
import datetime
import itertools
import logging
import time
import uuid
from concurrent.futures import ThreadPoolExecutor
from typing import Any, Callable, Collection, Iterator, Sequence

import numpy as np
import pyarrow as pa

from . import cross_partition, full_compaction, row_tracking
from .change_read import read_unit, to_output
from .commit import CommitMessage, FileStoreCommit
from .datafile import concat_tables
from .row_level import delete_rows, update_rows
from .errors import (CommitConflictError, CompactionNotCommittedError, DuplicateCommitError, InvalidOptionError,
                     SequenceConflictError, SnapshotNotFoundError, StaleOptionsError, StalePlanError, TableNotFoundError,
                     UnsupportedOperationError)
from .branches import (MAIN, branch_names, branch_path, branch_ref, create_branch, delete_branch, fast_forward,
                       refuse_on_branch, resolve_branch)
from .evolution import with_current_options
from .fallback_read import FallbackBranch
from .fileio import FileIO
from .incremental import IncrementalRange, IncrementalScan
from .expire import ExpireResult, SnapshotExpiration
from .changelog_expire import ChangelogExpiration, ChangelogExpireResult
from .options import CoreOptions, duration_ms, refuse_other_branch_reads
from .orphans import OrphanFilesClean, OrphanResult
from .partition_expire import PartitionExpiration
from .predicate import parse_filter
from .read import SplitReader
from .rescale import rescale
from .rollback import Rollback
from .scan import DataSplit, TableScan
from .schema import SchemaManager, TableSchema
from .schema_update import SchemaUpdate
from .snapshot import BATCH_COMMIT_IDENTIFIER, COMPACT, Snapshot, SnapshotManager
from .table_scan_options import TableScanOptions
from .tag_deletion import TagDeletion
from .tags import TagManager
from .time_travel import local_epoch_millis
from .keyvalue import VALUE_KIND
from .manifest import ManifestEntry
from .write import TableWrite, arrow_table, conform, write_threads

log = logging.getLogger(__name__)


class Table:
    """A Paimon table: batch writes with `write_arrow`, reads with `to_arrow`, snapshot history.

    Open one with `Catalog.get_table("db.t")` or directly with `Table.open(path)`; a branch
    with `Table.open(path, branch="dev")` or `Catalog.get_table("db.t$branch_dev")` (branches.py).
    """

    def __init__(self, file_io: FileIO, path: str, name: str | None = None, branch: str | None = None):
        self.file_io = file_io
        self.path = path
        self.branch = branch or MAIN
        self.name = name or path.rstrip("/").rsplit("/", 1)[-1]
        meta = branch_path(path, self.branch)  # snapshots, schemas and tags; data stays in `path`
        self.schema_manager = SchemaManager(file_io, meta)
        self.snapshot_manager = SnapshotManager(file_io, meta)
        self.tag_manager = TagManager(file_io, meta)
        schema = self.schema_manager.latest()
        if schema is None and self.branch != MAIN:
            branches = branch_names(file_io, path)
            if self.branch in branches:
                raise TableNotFoundError(f"branch '{self.branch}' of table {self.name} has no schema file (a "
                                         "create_branch interrupted: delete the branch or create it again)")
            raise TableNotFoundError(f"table {self.name} has no branch '{self.branch}' (branches: {branches})")
        if schema is None:
            raise TableNotFoundError(f"no Paimon table at {path} (no schema/schema-* file)")
        self.schema: TableSchema = schema
        if self.branch != MAIN:
            self.name = f"{self.name}$branch_{self.branch}"

    @staticmethod
    def open(location: str, filesystem=None, branch: str | None = None) -> "Table":
        """The table at `location`; a branch with `branch` or Java's `$branch_<name>` suffix."""
        location, branch = resolve_branch(location, branch)
        file_io, path = FileIO.for_path(location, filesystem)
        return Table(file_io, path, branch=branch)

    @property
    def ref(self) -> str:
        """This table's (or branch's) location as `Table.open`, `paimon_sink` and Spark take it."""
        return branch_ref(self.path, self.branch)

    def _on_main(self, what: str) -> None:
        """Table-wide maintenance runs on the main branch (it covers every branch)."""
        if self.branch != MAIN:
            raise UnsupportedOperationError(
                f"{what} on branch '{self.branch}' of {self.path}: it covers the whole table, every branch "
                "included; run it on the main branch")

    # ---- metadata -------------------------------------------------------------------------
    @property
    def options(self) -> CoreOptions:
        return self.schema.core_options

    @property
    def primary_keys(self) -> list[str]:
        return list(self.schema.primary_keys)

    @property
    def partition_keys(self) -> list[str]:
        return list(self.schema.partition_keys)

    def arrow_schema(self) -> pa.Schema:
        return self.schema.arrow_schema()

    def refresh(self) -> None:
        """Reload the latest schema (another writer may have changed it)."""
        self.schema = self.schema_manager.latest()

    def follow_schema(self, snapshot: Snapshot | None) -> bool:
        """Take up the newer schema `snapshot` was committed under (another writer, e.g. Java,
        changed the schema since this object read it); True when it did. A write or compaction
        planned on it must: its files may hold columns this object's schema lacks, and merging
        them into files of the older schema would silently drop those columns' values."""
        if snapshot is None or snapshot.schema_id <= self.schema.id:
            return False
        self.refresh()
        return True

    def latest_snapshot(self) -> Snapshot | None:
        return self.snapshot_manager.latest()

    def snapshot(self, snapshot_id: int) -> Snapshot:
        return self.snapshot_manager.snapshot(snapshot_id)

    def snapshots(self) -> list[Snapshot]:
        return self.snapshot_manager.snapshots()

    def tags(self) -> list[str]:
        return self.tag_manager.tag_names()

    # ---- snapshot lifecycle ---------------------------------------------------------------
    def create_tag(self, name: str, snapshot_id: int | None = None,
                   time_retained: str | int | datetime.timedelta | None = None) -> Snapshot:
        """Tag the latest snapshot, or `snapshot_id` (expired, it is taken from a tag holding it,
        as Java does); returns it.

        `time_retained` (a duration such as "7 d", a timedelta, or millis) makes the tag expire that long
        after its creation; default: the table option `tag.default-time-retained`.
        """
        if snapshot_id is None:
            snapshot = self.snapshot_manager.latest()
        elif self.snapshot_manager.exists(snapshot_id):
            snapshot = self.snapshot(snapshot_id)
        else:  # SnapshotNotFoundError when no tag holds it either
            snapshot = self.tag_manager.holding(snapshot_id) or self.snapshot(snapshot_id)
        if snapshot is None:
            raise SnapshotNotFoundError(f"cannot tag table {self.name}: it has no snapshot yet; write first")
        retained = self.options.get("tag.default-time-retained") if time_retained is None else \
            duration_ms(time_retained, "time_retained")
        self.tag_manager.create(snapshot, name, retained)
        return snapshot

    def delete_tag(self, name: str) -> int:
        """Delete a tag and the files only it kept alive; returns how many files went."""
        return TagDeletion(self.file_io, self.path, self.schema, self.branch).delete(name)

    def rollback_to(self, target: int | str) -> Snapshot:
        """Make snapshot `target` (int) or tag `target` (str) the latest: later snapshots and
        tags are removed with the files only they used. Returns the new latest snapshot."""
        return Rollback(self.file_io, self.path, self.schema, self.branch).rollback_to(target)

    # ---- branches (branches.py) ---------------------------------------------------------
    def branches(self) -> list[str]:
        """The table's branches other than main."""
        return branch_names(self.file_io, self.path)

    def create_branch(self, name: str, tag: str | None = None) -> "Table":
        """Create branch `name`, empty with the latest schema or starting at `tag`'s snapshot,
        as Java's `create_branch`; returns it. Write it like any table, then `fast_forward` it
        into main (write-audit-publish) or `delete_branch` it."""
        refuse_on_branch(self.branch, self.path, f"creating branch '{name}'")
        create_branch(self.file_io, self.path, name, tag)
        return Table(self.file_io, self.path, name=self.name, branch=name)

    def delete_branch(self, name: str) -> None:
        """Remove branch `name`; files only it used are left to orphan cleanup, as in Java."""
        refuse_on_branch(self.branch, self.path, f"deleting branch '{name}'")
        delete_branch(self.file_io, self.path, name, self.schema.options.get("scan.fallback-branch"))

    def fast_forward(self, branch: str, force: bool = False) -> Snapshot:
        """Make main what `branch` is (Java's fast-forward: main's snapshots, tags and schemas
        from the branch's earliest snapshot on are replaced by the branch's); returns main's new
        latest snapshot. Refused when main has commits the branch does not hold (made after the
        snapshot the branch was made from), which would be dropped; `force=True` drops them."""
        refuse_on_branch(self.branch, self.path, f"fast-forwarding to branch '{branch}'")
        latest = fast_forward(self.file_io, self.path, branch, force)
        self.refresh()
        return self.snapshot(latest)

    def expire_snapshots(self, retain_max: int | None = None, retain_min: int | None = None,
                         older_than: Any = None, max_deletes: int | None = None) -> ExpireResult:
        """Expire old snapshots now and delete the files no retained snapshot, tag or consumer
        needs. Arguments override `snapshot.num-retained.max`, `snapshot.num-retained.min`,
        `snapshot.time-retained` (`older_than`: a datetime, or epoch millis; a snapshot may go
        once its successor was committed before it, Paimon 2.0's rule, one snapshot fewer than
        1.4.2 expires) and `snapshot.expire.limit`; an option not overridden is raised to its
        `changelog.*` counterpart when that is longer. Where the arguments keep snapshots shorter
        than a `changelog.*` option, the expired snapshots stay as long-lived changelogs
        (`changelog/changelog-<id>`), as Java's expiration keeps them, so streams can still start
        that far back. Then long-lived changelogs past the table's `changelog.*` retention go,
        as `expire_changelogs()` does. Returns an ExpireResult."""
        return SnapshotExpiration(self.file_io, self.path, self.schema, self.branch).expire(
            retain_max, retain_min, _epoch_millis(older_than), max_deletes)

    def expire_changelogs(self, retain_max: int | None = None, retain_min: int | None = None,
                          older_than: Any = None, max_deletes: int | None = None) -> ChangelogExpireResult:
        """Expire the long-lived changelogs Java's expiration left (`changelog/changelog-<id>`)
        now, by Java's rule, and delete the files nothing else references (changelog_expire.py;
        `expire_snapshots` and commits do it too, by the table options). Arguments override
        `changelog.num-retained.max`, `.min`, `changelog.time-retained` (`older_than`: a
        datetime, or epoch millis) and `snapshot.expire.limit`."""
        return ChangelogExpiration(self.file_io, self.path, self.schema, self.branch).expire(
            retain_max, retain_min, _epoch_millis(older_than), max_deletes)

    def expire_partitions(self, expiration_time: str | int | datetime.timedelta | None = None, dry_run: bool = False) -> list[dict[str, str]]:
        """Drop the partitions older than `expiration_time` (e.g. '7 d'; default the table's
        `partition.expiration-time`) now, as after a commit (partition_expire.py); returns their
        values, oldest first. `dry_run`: only list them. An unpartitioned table is refused, as
        Java's procedure refuses it."""
        if not self.partition_keys:
            raise UnsupportedOperationError(f"cannot expire partitions of {self.name}: it is not partitioned "
                                            "(Paimon refuses 'partition.expiration-time' on such a table too)")
        ttl = None if expiration_time is None else duration_ms(expiration_time, "expiration_time")
        expiration = PartitionExpiration(self.file_io, self.path, self.schema, ttl, self.branch)
        if expiration.ttl_ms is None:
            raise InvalidOptionError(f"{self.name} has no 'partition.expiration-time'; pass expiration_time")
        if dry_run:
            return [values for _, values in expiration.expired()]
        return expiration.expire(str(uuid.uuid4()), BATCH_COMMIT_IDENTIFIER)

    def remove_orphan_files(self, older_than: Any = None, dry_run: bool = False) -> OrphanResult:
        """Delete files no snapshot or tag references, last modified before `older_than`
        (datetime or epoch millis; default one day ago, so files of running writers stay).
        Returns an OrphanResult with the paths.

        A datetime in the future is refused, as Java's procedure refuses it: most often a UTC
        wall time taken as local time, it would delete the files of writes not committed yet.
        Epoch millis are taken as given (a cleanup of everything, with no writer running)."""
        self._on_main("orphan file cleanup")
        cutoff = _epoch_millis(older_than)
        if isinstance(older_than, datetime.datetime) and cutoff > time.time() * 1000:
            raise ValueError(f"older_than {older_than} is in the future (a naive datetime is local time): files of "
                             "writes not committed yet would be deleted; Java refuses it too")
        return OrphanFilesClean(self.file_io, self.path, self.schema).clean(cutoff, dry_run)

    # ---- writing --------------------------------------------------------------------------
    def new_write(self) -> TableWrite:
        return TableWrite(self.file_io, self.path, self.schema, self.name, self.branch)

    def new_commit(self) -> FileStoreCommit:
        return FileStoreCommit(self.file_io, self.path, self.schema, branch=self.branch)

    def write_messages(self, data: pa.Table | pa.RecordBatch, row_kind_column: str | None = None,
                       overwrite: bool = False, full_compaction: bool = False) -> list[CommitMessage]:
        """Write files for a batch without committing them (the distributed sink's task step).

        `row_kind_column`: an input column (not stored) of +I/-U/+U/-D row kinds.
        `full_compaction`: the written buckets are compacted fully (see full_compaction.py)."""
        return self._write_planned(self.latest_snapshot(), data, row_kind_column, overwrite, full_compaction)

    def _write_planned(self, latest: Snapshot | None, data: pa.Table | pa.RecordBatch, row_kind_column: str | None,
                       overwrite: bool, full_compaction: bool, writer: TableWrite | None = None) -> list[CommitMessage]:
        """`write_messages` on the snapshot `latest` (the newest a moment ago). A `writer` given
        for a cross-partition upsert table gets the index of where its keys live
        (cross_partition.py), for a commit that checks no other writer came in between."""
        conformed = conform(data, self.schema, self.name, row_kind_column)
        place = writer is not None and writer.cross_partition
        writer = writer or self.new_write()
        if latest is None:
            if place:
                cross_partition.place(writer, None, [])
            return writer.write(conformed, [], full_compaction=full_compaction)
        scan = TableScan(self.file_io, self.path, self.schema, self.branch)
        with self._planned_on(latest):
            live = scan.live_entries(latest)
            if place:
                cross_partition.place(writer, latest, live, overwrite)
            return writer.write(conformed, live, scan.index_manifest.read(latest.index_manifest), overwrite=overwrite,
                                full_compaction=full_compaction)

    @contextlib.contextmanager
    def _planned_on(self, snapshot: Snapshot) -> Iterator[None]:
        """A file of `snapshot` that vanishes while it is read, after newer snapshots came, was
        replaced by a concurrent compaction and deleted by expiration: a conflict to plan
        again (StalePlanError), not a damaged table (then the error stands)."""
        try:
            yield
        except FileNotFoundError as exc:
            if self.snapshot_manager.latest_id() == snapshot.id:
                raise
            raise StalePlanError(f"{self.name}: a file of snapshot {snapshot.id}, on which this write was "
                                 f"planned, was removed by a concurrent compaction and expiration ({exc}); "
                                 "nothing was committed, plan the write again") from exc

    def write_arrow(self, data: pa.Table | pa.RecordBatch, overwrite: bool = False,
                    commit_user: str | None = None, commit_identifier: int | None = None,
                    row_kind_column: str | None = None) -> int | None:
        """Write one batch and commit it; returns the new snapshot id (None if nothing changed).
        `data`: a pyarrow Table or RecordBatch, a RecordBatchReader, a list of batches, or a
        pandas or polars DataFrame or duckdb result (anything with the Arrow stream interface).

        `overwrite=True` replaces the table's whole content with `data` (only the partitions it
        writes when the table sets `dynamic-partition-overwrite` = true). A failed write commits
        nothing; files it wrote are unreferenced and removed by orphan cleanup. Except
        CompactionNotCommittedError: the data was committed (in its `snapshot_id`), the
        compaction committed after it was not; do not write it again.
        `row_kind_column` names an input column (not stored) whose values +I, -U, +U, -D give
        each row's kind (primary-key tables: -U/-D retract or delete as the merge engine says);
        a table with the option `rowkind.field` takes them from that (stored) column instead.
        Given `commit_user` and `commit_identifier`, the write happens exactly once: a replay of
        an identifier already committed writes nothing and returns that commit's snapshot id
        (None once expired), and an identifier below the user's newest that was never
        committed raises CommitIdentifierError.
        """
        data = arrow_table(data)  # once: a RecordBatchReader reads only once, and a retry writes it again
        just_read = None  # the newest snapshot, when the exactly-once check has just read it
        unique_since = None  # the snapshot id up to which the identifier is known not committed
        if commit_user is not None and commit_identifier is not None:
            commits = self.new_commit().user_commits(commit_user, commit_identifier)
            just_read = commits.latest
            if self.complete_interrupted_batch(commit_user, commits.own_latest) is not None:
                just_read = None  # a snapshot was added
                commits = self.new_commit().user_commits(commit_user, commit_identifier)
            if commits.committed(commit_identifier):  # a replay: exactly once
                existing = commits.live.get(commit_identifier)
                log.info("write to %s by %s with identifier %s already committed (snapshot %s): skipped",
                         self.name, commit_user, commit_identifier, existing)
                return existing
            unique_since = commits.latest.id if commits.latest is not None else 0
        user = commit_user or str(uuid.uuid4())
        identifier = BATCH_COMMIT_IDENTIFIER if commit_identifier is None else commit_identifier
        return self.write_planned_rows(lambda latest: (data, row_kind_column), user, identifier, overwrite, just_read,
                                       unique_since=unique_since)

    def write_planned_rows(self, rows_on: Callable[[Snapshot | None], tuple[pa.Table, str | None] | None],
                           user: str, identifier: int, overwrite: bool = False, just_read: Snapshot | None = None,
                           exclusive: bool = False, unique_since: int | None = None) -> int | None:
        """Write and commit the rows `rows_on(latest)` gives (with their row-kind column; None:
        nothing to write) on the newest snapshot; returns the last snapshot id. A plan that
        loses a race (StalePlanError, SequenceConflictError) is discarded and made again, up to
        `commit.max-retries` times. `exclusive`: the rows were read from that snapshot (a
        delete or update by key), so any other writer's data commit since fails the commit and
        they are read again. `just_read`: the newest snapshot, when the caller has just read it.
        `unique_since`: the exactly-once check's snapshot (FileStoreCommit.commit); another
        attempt of the same identifier committing first makes this one a replay."""
        if overwrite and self.overwrites_partitions:
            cross_partition.check_partition_overwrite(self.schema, self.name)
        full = bool(self.primary_keys) and full_compaction.is_due(self.options, identifier)
        committer = self.new_commit()
        retries = self.options.get("commit.max-retries")
        for attempt in range(retries + 1):
            messages: list[CommitMessage] = []
            # planning on a snapshot read a moment ago is as safe as a concurrent commit during
            # the write: the commit finds any newer snapshot and checks for conflicts
            planned_on = just_read if attempt == 0 and just_read is not None else self.latest_snapshot()
            if self.follow_schema(planned_on):
                full = bool(self.primary_keys) and full_compaction.is_due(self.options, identifier)
                committer = self.new_commit()
            try:
                rows = rows_on(planned_on)
                if rows is None:
                    return None
                writer = self.new_write()
                messages = self._write_planned(planned_on, rows[0], rows[1], overwrite, full, writer)
                if writer.cross_partition:
                    cross_partition.placed(writer)
                if full and not overwrite:
                    messages += self.scheduled_compaction(user, identifier, messages)
                if not overwrite:
                    messages += self.stranded_compaction(planned_on, messages)
                partitions = self._dynamically_overwritten(messages) if overwrite else None
                if partitions == []:
                    return None  # a dynamic overwrite of no rows changes nothing
                ids = committer.commit(messages, user, identifier, overwrite=overwrite, overwrite_partitions=partitions,
                                       best_effort_compaction=True, planned_on=planned_on,
                                       placed=writer.cross_partition or exclusive, unique_since=unique_since)
                if writer.cross_partition:
                    cross_partition.committed(self.path, self.branch, planned_on.id if planned_on else None, ids,
                                              user, identifier)
                return ids[-1] if ids else None
            except (StalePlanError, SequenceConflictError) as exc:
                # planned on files a concurrent compaction and expiration removed, read before another
                # writer's commit (exclusive, cross-partition placement), or numbered into sequence
                # numbers another writer of the same bucket reached: plan it again
                committer.discard(messages)
                if attempt == retries:
                    raise
                if isinstance(exc, StaleOptionsError):  # under the table's new options
                    self.refresh()
                    full = bool(self.primary_keys) and full_compaction.is_due(self.options, identifier)
                    committer = self.new_commit()
                log.info("write to %s raced another writer; planning it again", self.name)
            except DuplicateCommitError as exc:
                committer.discard(messages)
                if not exc.replay:
                    raise
                log.info("write to %s by %s with identifier %s was committed by another attempt (snapshot %s): "
                         "skipped", self.name, user, identifier, exc.snapshot_id)
                return exc.snapshot_id
            except CompactionNotCommittedError as exc:
                if not self.reads_compacted_level0:
                    raise  # readers see the data: the next write compacts it
                # the data landed but its lookup compaction lost to a concurrent writer or failed
                return self.complete_landed_batch(user, exc.snapshot_id)
            except CommitConflictError:
                landed = self._own_snapshot_since(planned_on, user, identifier)
                if landed is None:
                    raise
                return self.complete_landed_batch(user, landed.id)  # the store's answer was lost, not the data
        raise AssertionError("unreachable")

    @property
    def reads_compacted_level0(self) -> bool:
        """Whether readers skip level-0 files until a lookup compaction pushes them up (primary-key
        tables with deletion vectors, or first-row): each write compacts what it wrote."""
        return bool(self.primary_keys) and self.options.lookup_compaction

    def complete_landed_batch(self, commit_user: str, landed: int) -> int:
        """Compact `commit_user`'s batch whose data landed in snapshot `landed` without its
        lookup compaction, on the newest snapshot, so deletion-vector readers see it; returns the
        batch's last snapshot id. A failure is CompactionNotCommittedError: the caller must not
        take the committed data for uncommitted and write it again."""
        try:
            sid = self.complete_interrupted_batch(commit_user, self.snapshot_manager.snapshot(landed))
        except Exception as exc:
            raise CompactionNotCommittedError(
                f"{self.name}: the batch was committed in snapshot {landed}, its compaction was not "
                f"({type(exc).__name__}: {exc}); do not write it again: the next write or Table.compact "
                "compacts it", landed) from exc
        return landed if sid is None else sid  # None: a concurrent compaction took the files

    @property
    def overwrites_partitions(self) -> bool:
        """Whether an overwrite replaces only the partitions it writes: the table sets
        `dynamic-partition-overwrite` = true (Java's option; unset, ours replaces the table, as
        Delta's and pyarrow's overwrites do, where Java's default is true)."""
        return bool(self.partition_keys) and \
            self.options.raw.get("dynamic-partition-overwrite", "").strip().lower() == "true"

    def _dynamically_overwritten(self, messages: list[CommitMessage]) -> list[bytes] | None:
        """The partitions an overwrite replaces: those the rows are written to when
        `overwrites_partitions`, else None (the whole table)."""
        return sorted({m.partition for m in messages}) if self.overwrites_partitions else None

    def _own_snapshot_since(self, planned_on: Snapshot | None, user: str, identifier: int) -> Snapshot | None:
        """The newest snapshot `user` committed with `identifier` after `planned_on` (a write's
        data that landed before its compaction failed), or None. A rollback since the plan may
        have put it below `planned_on`'s id, so the scan stops only at an older snapshot."""
        floor = planned_on.id if planned_on is not None else 0
        for snap in self.snapshot_manager.iter_descending():
            if snap.id <= floor and (planned_on is None or snap.time_millis <= planned_on.time_millis):
                return None
            if snap.commit_user == user and snap.commit_identifier == identifier:
                return snap
        return None

    def delete(self, filter: Any, commit_user: str | None = None, commit_identifier: int | None = None) -> int | None:
        """Delete the rows `filter` matches (SQL's DELETE FROM ... WHERE; the filter as in
        `to_arrow`), in one commit; returns its snapshot id, None when no row matched.
        Primary-key tables write -D rows for them, append tables mark them in deletion
        vectors or rewrite the files holding them (row_level.py). Given `commit_user` and
        `commit_identifier`, it happens once, as `write_arrow`."""
        return delete_rows(self, filter, commit_user, commit_identifier)

    def update(self, filter: Any, values: dict[str, Any], commit_user: str | None = None,
               commit_identifier: int | None = None) -> int | None:
        """Set `values` in the rows `filter` matches (SQL's UPDATE ... SET ... WHERE), in one
        commit: {column: value, or a pyarrow.compute.Expression of the row's current values}.
        Returns its snapshot id, None when no row matched (row_level.py); once per
        `commit_user` and `commit_identifier`, as `write_arrow`."""
        return update_rows(self, filter, values, commit_user, commit_identifier)

    def rescale(self, bucket: int | None = None, partitions: Any = None, commit_user: str | None = None) -> int | None:
        """Change a fixed-bucket table's bucket count to `bucket` (when given) and rewrite the
        partitions `partitions` selects (a filter over partition columns; None: all) in the
        table's count, in one OVERWRITE snapshot (Java's CALL sys.rescale); returns its id, None
        when every selected partition had the count already (rescale.py)."""
        return rescale(self, bucket, partitions, commit_user)

    def complete_interrupted_batch(self, commit_user: str, own_latest: Snapshot | None = None) -> int | None:
        """Finish the compaction of `commit_user`'s last batch when it has none: a crash or a
        failed upload between a batch's APPEND and COMPACT snapshots leaves its level-0 files
        invisible to deletion-vector readers (tables with lookup compaction). `own_latest`: the
        user's newest snapshot, when the caller has read it. Returns the COMPACT snapshot id,
        or None when nothing was interrupted (or the table is `write-only`: its batches have none)."""
        if not self.reads_compacted_level0 or self.options.get("write-only"):
            return None
        last = own_latest or self.snapshot_manager.latest_of_user(commit_user)
        if last is None or last.commit_kind == COMPACT:
            return None
        sid = self.compact(commit_user=commit_user, commit_identifier=last.commit_identifier)
        log.warning("%s: completed the compaction of %s's batch %d, interrupted after its %s snapshot %d "
                    "(compaction snapshot %s)", self.name, commit_user, last.commit_identifier,
                    last.commit_kind, last.id, sid)
        return sid

    def compact(self, full: bool = False, commit_user: str | None = None,
                commit_identifier: int | None = None,
                full_buckets: Collection[tuple[bytes, int]] = (),
                only: Collection[tuple[bytes, int]] | None = None, best_effort: bool = False) -> int | None:
        """Compact the table; returns the COMPACT snapshot id (None if nothing to do).

        Primary-key tables, by default: every bucket that holds level-0 files gets them pushed
        up by a universal compaction (with lookup and deletion vectors on DV tables), which also
        repairs a batch whose COMPACT snapshot was lost in a crash. `full=True` rewrites every
        bucket into one sorted run at the highest level, dropping deletes and the deletion
        vectors it obsoletes; `full_buckets` (partition, bucket)s are compacted so and the
        others by default. Append tables: small files merged as Paimon's writers merge them,
        and with `full=True` every small file and every file with a deletion vector
        (append_compaction.py); data-evolution tables as Java's data-evolution compaction
        (data_evolution.py). `only`: just these (partition, bucket)s. `best_effort`: a
        compaction of a merge-on-read or append table that loses a race with another writer's
        is dropped (logged, None). Otherwise a compaction that loses such a race (another
        compaction took its files, or rewrote a bucket's index) is discarded and planned again
        on the new snapshot, up to `commit.max-retries` times, then CommitConflictError.
        """
        full_buckets = set(full_buckets)
        identifier = BATCH_COMMIT_IDENTIFIER if commit_identifier is None else commit_identifier
        return self.commit_planned(
            lambda latest: self._compaction_messages(latest, lambda bucket: full or bucket in full_buckets, only),
            commit_user or str(uuid.uuid4()), identifier, "compaction", best_effort_compaction=best_effort)

    def commit_planned(self, plan: Callable[[Snapshot], list[CommitMessage]], commit_user: str, identifier: int,
                       what: str, **commit_options: Any) -> int | None:
        """Commit the messages `plan` makes on the latest snapshot; returns the last snapshot id
        (None when there is nothing to commit). A commit that loses a race with another writer
        (it took the files or index the messages replace) is discarded and planned again on the
        new snapshot, up to `commit.max-retries` times, then CommitConflictError."""
        committer = self.new_commit()
        retries = self.options.get("commit.max-retries")
        for attempt in itertools.count():
            messages: list[CommitMessage] = []
            try:
                latest = self.latest_snapshot()
                if latest is None:
                    return None
                if self.follow_schema(latest):
                    committer = self.new_commit()
                with self._planned_on(latest):
                    messages = plan(latest)
                ids = committer.commit(messages, commit_user, identifier, planned_on=latest, **commit_options)
                return ids[-1] if ids else None
            except CommitConflictError as exc:
                committer.discard(messages)
                if attempt == retries:
                    raise
                if isinstance(exc, StaleOptionsError):  # plan it under the table's new options
                    self.refresh()
                    committer = self.new_commit()
                log.info("%s of %s lost a race with another writer; planning it again", what, self.name)

    def uncompacted_buckets(self, latest: Snapshot | None) -> set[tuple[bytes, int]]:
        """The (partition, bucket)s of `latest` whose level-0 files its readers skip (primary-key
        tables with lookup compaction): a batch between its APPEND and COMPACT snapshots, or
        one whose writer died there."""
        if latest is None or not self.reads_compacted_level0:
            return set()
        scan = TableScan(self.file_io, self.path, self.schema, self.branch)
        return {(e.partition, e.bucket) for e in scan.live_entries(latest)
                if e.file.level == 0 and not scan.postponed_bucket(e)}

    def stranded_compaction(self, latest: Snapshot | None, written: Sequence[CommitMessage]) -> list[CommitMessage]:
        """The compaction of the `uncompacted_buckets` a batch does not write, to commit with the
        batch's own: compacting only its own buckets would publish another batch's level-0
        files bucket by bucket (the rest stays hidden until someone compacts them). None on
        `write-only` tables, whose level 0 waits for a dedicated compaction."""
        if self.options.get("write-only"):
            return []
        waiting = self.uncompacted_buckets(latest) - {(m.partition, m.bucket) for m in written}
        return self._compaction_messages(latest, lambda bucket: False, only=waiting) if waiting else []

    def scheduled_buckets(self, commit_user: str, identifier: int) -> set[tuple[bytes, int]]:
        """The (partition, bucket)s a due batch `identifier` compacts fully besides its own:
        those `commit_user` wrote since the previous due batch (see full_compaction.py)."""
        n = full_compaction.delta_commits(self.options)
        if n is None or identifier == BATCH_COMMIT_IDENTIFIER:
            return set()
        scan = TableScan(self.file_io, self.path, self.schema, self.branch)
        return full_compaction.buckets_written_since(self.snapshot_manager, scan, commit_user, identifier, n)

    def scheduled_compaction(self, commit_user: str, identifier: int,
                             written: Sequence[CommitMessage]) -> list[CommitMessage]:
        """A due batch's full compaction of its `scheduled_buckets` that it did not write (a
        write compacts its own buckets): messages to commit with the batch's."""
        behind = self.scheduled_buckets(commit_user, identifier) - {(m.partition, m.bucket) for m in written}
        latest = self.latest_snapshot()
        if not behind or latest is None:
            return []
        return self._compaction_messages(latest, lambda bucket: True, only=behind)

    def _compaction_messages(self, latest: Snapshot, full_for: Callable[[tuple[bytes, int]], bool],
                             only: Collection[tuple[bytes, int]] | None = None) -> list[CommitMessage]:
        """Compact the buckets of `latest` (those in `only`, if given), fully where `full_for` says."""
        scan = TableScan(self.file_io, self.path, self.schema, self.branch)
        index = scan.index_manifest.read(latest.index_manifest)
        buckets: dict[tuple[bytes, int], list] = {}
        for e in scan.live_entries(latest):
            if only is None or (e.partition, e.bucket) in only:
                buckets.setdefault((e.partition, e.bucket), []).append(e)
        writer = self.new_write()
        writer.compactor()  # built once, before the threads share it

        def compact_one(item: tuple[tuple[bytes, int], list[ManifestEntry]]) -> CommitMessage | None:
            (partition, bucket), entries = item
            inc = writer.compact_bucket(partition, scan.partition_values(partition), bucket,
                                        [e.file for e in entries], index, full_for((partition, bucket)))
            if inc is None or inc.is_empty():
                return None
            return CommitMessage(partition, bucket, entries[0].total_buckets, compact=inc)

        # buckets side by side, as a write compacts them (see write_threads)
        with self._planned_on(latest), ThreadPoolExecutor(
                write_threads(len(buckets), remote=not self.file_io.is_local), thread_name_prefix="paimon-compact") as pool:
            return [m for m in pool.map(compact_one, buckets.items()) if m is not None]

    def committed_identifiers(self, commit_user: str, identifiers: Sequence[int]) -> set[int]:
        """Which of `identifiers` `commit_user` has already committed (exactly-once filter)."""
        return self.new_commit().committed_identifiers(commit_user, identifiers)

    # ---- reading --------------------------------------------------------------------------
    def resolve_snapshot(self, snapshot_id: int | None = None, tag: str | None = None) -> Snapshot | None:
        if snapshot_id is not None and tag is not None:
            raise ValueError("give snapshot_id or tag, not both")
        if tag is not None:
            return self.tag_manager.snapshot(tag)
        if snapshot_id is not None:
            return self.snapshot_manager.snapshot(snapshot_id)
        return self.snapshot_manager.latest()

    def plan(self, snapshot: Snapshot | None, filter: Any = None) -> list[DataSplit]:
        refuse_other_branch_reads(self.schema.options, self.name)
        flt = parse_filter(filter, row_tracking.filterable(self.schema))
        return TableScan(self.file_io, self.path, self.schema, self.branch).plan(snapshot, flt)

    def to_arrow(self, columns: Sequence[str] | None = None, filter: Any = None,
                 snapshot_id: int | None = None, tag: str | None = None) -> pa.Table:
        """Read the table (latest, or a snapshot id, or a tag) as one Arrow table. Without
        `snapshot_id` or `tag`, scan options kept in the table's options (`scan.snapshot-id`,
        `incremental-between`, ...) steer the read, as Java's (table_scan_options.py).

        `filter` is a list of (column, op, value) tuples (AND), a list of such lists (OR), or
        a pyarrow.compute.Expression. Tuple filters also prune partitions and files.
        """
        if snapshot_id is None and tag is None:
            kept = TableScanOptions.of(self.schema.options, self.name)
            if kept.incremental is not None:
                return self.read_incremental(kept.incremental, columns, filter)
            snapshot = kept.snapshot(self.snapshot_manager, self.tag_manager, self.options)
        else:
            snapshot = self.resolve_snapshot(snapshot_id, tag)
        refuse_other_branch_reads(self.schema.options, self.name, fallback_ok=True)
        latest = snapshot_id is None and tag is None
        schema = self.read_schema(snapshot, latest)
        flt = parse_filter(filter, row_tracking.filterable(schema))
        scan = TableScan(self.file_io, self.path, schema, self.branch)
        splits = scan.plan(snapshot, flt)
        if schema.id > self.schema.id:  # a Table opened before that schema: today's options are newer still
            self.refresh()
        merging = with_current_options(schema, self.schema)  # time travel merges under today's options, as Java
        fallback = FallbackBranch.of(self.file_io, self.path, self.schema.options, schema, self.name, snapshot,
                                     snapshot_id, tag, travelled=not latest)  # today's options, as Java
        table = SplitReader(self.file_io, scan, merging).read(splits, columns, flt)
        more = [] if fallback is None else fallback.plan(self.file_io, self.path, scan, snapshot, flt)
        if not more:
            return table
        rest = SplitReader(self.file_io, TableScan(self.file_io, self.path, fallback.schema, fallback.name),
                           fallback.merging).read(more, table.column_names, flt)  # the columns of the snapshot read
        return concat_tables([table, rest if rest.schema.equals(table.schema) else rest.cast(table.schema)])

    def changes_between(self, start: int | str | datetime.datetime, end: int | str | datetime.datetime,
                        mode: str = "auto", columns: Sequence[str] | None = None, filter: Any = None,
                        row_kind_column: str | None = None, tag_to_snapshot: bool = False) -> pa.Table:
        """What changed after `start` up to `end` (Java's batch incremental query): snapshot
        ids (int), tag names (str) or instants (datetime, or epoch millis with `mode` given as
        for ids: use datetimes for time). `mode`: auto, delta, changelog or diff (see
        incremental.py; two tags always diff unless `tag_to_snapshot`). Rows as they are after
        the change; with `row_kind_column`, every change ('+I', '-U', '+U', '-D') in that column."""
        if isinstance(start, datetime.datetime) and isinstance(end, datetime.datetime):
            query = IncrementalRange(between_timestamps=(_epoch_millis(start), _epoch_millis(end)), mode=mode)
        elif isinstance(start, (int, str)) and isinstance(end, (int, str)) and \
                not isinstance(start, bool) and not isinstance(end, bool):
            query = IncrementalRange(between=(str(start), str(end)), mode=mode, tag_to_snapshot=tag_to_snapshot)
        else:
            raise TypeError(f"changes_between takes two snapshot ids, two tag names or two datetimes, "
                            f"got {start!r} and {end!r}")
        return self.read_incremental(query, columns, filter, row_kind_column)

    def read_incremental(self, query: IncrementalRange, columns: Sequence[str] | None = None, filter: Any = None,
                         row_kind_column: str | None = None) -> pa.Table:
        """The rows of an incremental query (`changes_between`; Spark's `incremental-*` options)."""
        refuse_other_branch_reads(self.schema.options, self.name)
        names = list(columns) if columns is not None else self.schema.field_names
        if row_kind_column is not None and row_kind_column in self.schema.field_names:
            raise InvalidOptionError(f"row kind column '{row_kind_column}' is a column of table {self.name}")
        flt = parse_filter(filter, self.arrow_schema())
        units = IncrementalScan(self.file_io, self.path, self.schema, self.branch).plan(query)
        reader = SplitReader(self.file_io, TableScan(self.file_io, self.path, self.schema, self.branch), self.schema)
        with ThreadPoolExecutor(max_workers=reader.threads([u.split for u in units]) if units else 1) as pool:
            parts = list(pool.map(lambda u: to_output(read_unit(reader, u, names, flt), row_kind_column), units))
        if parts:
            return concat_tables(parts)
        empty = pa.schema(list(reader.arrow_schema(names)) + [pa.field(VALUE_KIND, pa.int8(), False)]).empty_table()
        return to_output(empty, row_kind_column)

    def read_schema(self, snapshot: Snapshot | None, latest: bool) -> TableSchema:
        """The schema a read of `snapshot` answers in: time travel (a snapshot id or tag) reads
        a snapshot with the schema it was committed with, as Paimon does (its fields; its rows
        merge under the table's current options, `evolution.with_current_options`); the
        latest snapshot is read with this table's schema, refreshed when another writer
        changed it since."""
        if snapshot is None:
            return self.schema
        if not latest:
            return self.schema_manager.schema(snapshot.schema_id)
        if snapshot.schema_id > self.schema.id:
            self.refresh()
        return self.schema

    def update_schema(self) -> SchemaUpdate:
        """Change the schema (add, rename, drop, widen columns; options; comment): see
        `schema_update.SchemaUpdate`. Use `with table.update_schema() as update: ...`."""
        return SchemaUpdate(self)

    def __repr__(self) -> str:
        return f"Table({self.path!r})" if self.branch == MAIN else f"Table({self.path!r}, branch={self.branch!r})"


def _epoch_millis(value: Any) -> int | None:
    """A point in time given as epoch millis (numpy's too) or a datetime (naive = local time;
    pandas.Timestamp too)."""
    if value is None:
        return None
    if isinstance(value, (int, np.integer)) and not isinstance(value, (bool, np.bool_)):
        return int(value)
    if isinstance(value, datetime.datetime) and value != value:  # pandas.NaT
        raise TypeError("expected a datetime or epoch milliseconds, got NaT")
    if isinstance(value, datetime.datetime):  # exact: a float on the way made some millis the one before
        if value.tzinfo is None:
            return local_epoch_millis(value.replace(microsecond=0)) + value.microsecond // 1000
        epoch = datetime.datetime(1970, 1, 1, tzinfo=datetime.timezone.utc)
        return (value - epoch) // datetime.timedelta(milliseconds=1)
    raise TypeError(f"expected a datetime or epoch milliseconds, got {value!r}")
