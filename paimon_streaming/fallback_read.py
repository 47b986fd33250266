"""Batch reads of a table with `scan.fallback-branch` (Java's FallbackReadFileStoreTable): the
partitions the table itself holds are read from it, and every other partition the fallback
branch holds is read from that branch (a streaming table, say, whose older partitions a batch
job writes into a branch).

As Java: a partition is the table's when any live file of the read snapshot is in it (filters
on other columns do not make it incomplete); time travel reads the fallback branch at the same
point (a snapshot id by its commit time, a timestamp as given, a tag by the branch's tag of that
name) in the schema of the branch's snapshot, as Java time-travels its fallback table (else in
the branch's latest schema), merging under the branch's options of today. Java reads the
branch's rows by the field ids of the table's read schema and checks the column types by
position; we require the branch's read schema to have the table's columns (names, field ids,
types) and primary keys, so rows, filters and field ids line up alike. A fallback branch that
does not exist is ignored, as Java does (with a warning). Streams read the table's own branch.
"""
from __future__ import annotations

import logging
from dataclasses import dataclass

from .branches import branch_path
from .errors import UnsupportedOperationError
from .evolution import with_current_options
from .fileio import FileIO
from .predicate import Filter
from .scan import DataSplit, TableScan
from .schema import SchemaManager, TableSchema
from .snapshot import Snapshot, SnapshotManager
from .tags import TagManager
from .time_travel import earlier_or_equal
from .types import DataType

log = logging.getLogger(__name__)

OPTION = "scan.fallback-branch"


@dataclass(frozen=True)
class FallbackBranch:
    """The fallback branch of one read: the snapshot read (None: it has none then), the schema
    its rows are read in and the one they merge under."""
    name: str
    snapshot: Snapshot | None
    schema: TableSchema
    merging: TableSchema

    @staticmethod
    def of(file_io: FileIO, table_path: str, options: dict[str, str], read: TableSchema, table_name: str,
           main: Snapshot | None, snapshot_id: int | None = None, tag: str | None = None,
           timestamp_millis: int | None = None, travelled: bool = False) -> "FallbackBranch | None":
        """The fallback branch (by today's `options`, as Java) of a read of the table's snapshot
        `main` (found by these time-travel options) in schema `read`; `travelled`: `read` is the
        snapshot's own schema, so the branch is read in its snapshot's. None when the table has
        none (or it does not exist, as Java)."""
        name = str(options.get(OPTION, "")).strip()
        if not name:
            return None
        root = branch_path(table_path, name)
        schemas = SchemaManager(file_io, root)
        latest = schemas.latest()
        if latest is None:
            log.warning("fallback branch '%s' of %s does not exist: reading the table's own partitions only "
                        "(as Java does)", name, table_name)
            return None
        at = _branch_snapshot(SnapshotManager(file_io, root), TagManager(file_io, root), main, snapshot_id, tag,
                              timestamp_millis)
        schema = schemas.schema(at.schema_id) if travelled and at is not None else latest
        _check_same_columns(read, schema, name, table_name)
        return FallbackBranch(name, at, schema, with_current_options(schema, latest))

    def plan(self, file_io: FileIO, table_path: str, main_scan: TableScan, main: Snapshot | None,
             flt: Filter | None) -> list[DataSplit]:
        """The branch's splits of the partitions the table's snapshot `main` does not hold."""
        if self.snapshot is None:
            return []
        # a partition main's read shows nothing of (a deletion-vector table's level-0 files) is not
        # held, as in Java, whose fallback takes the partitions of main's planned splits
        held = {e.partition for e in main_scan.live_entries(main, flt) if main_scan.planned(e)} \
            if main is not None else set()
        scan = TableScan(file_io, table_path, self.schema, self.name)
        return [s for s in scan.plan(self.snapshot, flt) if s.partition not in held]


def _branch_snapshot(snapshots: SnapshotManager, tags: TagManager, main: Snapshot | None, snapshot_id: int | None,
                     tag: str | None, timestamp_millis: int | None) -> Snapshot | None:
    """The branch's snapshot for a read of the table at `main` (found by these options), as
    Java's rewriteOtherOptions: a snapshot id by its commit time, the rest as given."""
    if tag is not None:
        return tags.snapshot(tag)
    if timestamp_millis is not None:
        found = earlier_or_equal(snapshots, timestamp_millis)
        return None if found is None else snapshots.snapshot(found)
    if snapshot_id is not None and main is not None:
        found = earlier_or_equal(snapshots, main.time_millis)
        found = found if found is not None else snapshots.earliest_id()
        return None if found is None else snapshots.snapshot(found)
    return snapshots.latest()


def _check_same_columns(read: TableSchema, branch: TableSchema, name: str, table_name: str) -> None:
    """The branch's schema has the columns of the table's read schema (names, field ids, types
    but nullability) and its primary keys, or UnsupportedOperationError naming both."""
    def columns(schema: TableSchema) -> list[tuple[str, int, DataType]]:
        return [(f.name, f.id, f.type.copy(nullable=True)) for f in schema.fields]
    if columns(read) != columns(branch) or \
            (read.primary_keys and list(read.primary_keys) != list(branch.primary_keys)):
        def shown(schema: TableSchema) -> list[str]:
            return [f"{n} {t} (field id {i})" for n, i, t in columns(schema)]
        raise UnsupportedOperationError(
            f"cannot read {table_name} with its fallback branch '{name}': the branch's columns {shown(branch)} and "
            f"primary keys {list(branch.primary_keys)} (its schema {branch.id}) must be those of the table's schema "
            f"{read.id} read ({shown(read)}, {list(read.primary_keys)}) for its rows to be read as the table's")
