"""Batch reads of a table with `scan.fallback-branch` (Java's FallbackReadFileStoreTable): the
partitions the table itself holds are read from it, and every other partition the fallback
branch holds is read from that branch (a streaming table, say, whose older partitions a batch
job writes into a branch).

As Java: a partition is the table's when any live file of the read snapshot is in it (filters
on other columns do not make it incomplete); the fallback branch must have the same column
types and primary keys (we also require the same column names, so rows line up by name); time
travel reads the fallback branch at the same point: a snapshot id by its commit time, a
timestamp as given, a tag by the branch's tag of that name. A fallback branch that does not
exist is ignored, as Java does (with a warning). Streams read the table's own branch.
"""
from __future__ import annotations

import logging
from dataclasses import dataclass

from .branches import branch_path
from .errors import UnsupportedOperationError
from .fileio import FileIO
from .predicate import Filter
from .scan import DataSplit, TableScan
from .schema import SchemaManager, TableSchema
from .snapshot import Snapshot, SnapshotManager
from .tags import TagManager
from .time_travel import earlier_or_equal

log = logging.getLogger(__name__)

OPTION = "scan.fallback-branch"


@dataclass(frozen=True)
class FallbackBranch:
    """The fallback branch of a table: its name and latest schema."""
    name: str
    schema: TableSchema
    snapshots: SnapshotManager
    tags: TagManager

    @staticmethod
    def of(file_io: FileIO, table_path: str, schema: TableSchema, table_name: str) -> "FallbackBranch | None":
        """The table's fallback branch, None when it has none (or it does not exist, as Java)."""
        name = str(schema.options.get(OPTION, "")).strip()
        if not name:
            return None
        root = branch_path(table_path, name)
        fallback = SchemaManager(file_io, root).latest()
        if fallback is None:
            log.warning("fallback branch '%s' of %s does not exist: reading the table's own partitions only "
                        "(as Java does)", name, table_name)
            return None
        mine = [(f.name, f.type.copy(nullable=True)) for f in schema.fields]
        theirs = [(f.name, f.type.copy(nullable=True)) for f in fallback.fields]
        if mine != theirs or (schema.primary_keys and list(schema.primary_keys) != list(fallback.primary_keys)):
            raise UnsupportedOperationError(
                f"cannot read {table_name} with its fallback branch '{name}': the branch's columns {theirs} and "
                f"primary keys {list(fallback.primary_keys)} must be the table's ({mine}, "
                f"{list(schema.primary_keys)}) for its rows to be read as the table's")
        return FallbackBranch(name, fallback, SnapshotManager(file_io, root), TagManager(file_io, root))

    def snapshot(self, main: Snapshot | None, snapshot_id: int | None, tag: str | None,
                 timestamp_millis: int | None) -> Snapshot | None:
        """The branch's snapshot for a read of the table at `main` (found by these options)."""
        if tag is not None:
            return self.tags.snapshot(tag)
        if timestamp_millis is not None:
            found = earlier_or_equal(self.snapshots, timestamp_millis)
            return None if found is None else self.snapshots.snapshot(found)
        if snapshot_id is not None and main is not None:
            found = earlier_or_equal(self.snapshots, main.time_millis)
            found = found if found is not None else self.snapshots.earliest_id()
            return None if found is None else self.snapshots.snapshot(found)
        return self.snapshots.latest()

    def plan(self, file_io: FileIO, table_path: str, main_scan: TableScan, main: Snapshot | None,
             snapshot: Snapshot | None, flt: Filter | None) -> list[DataSplit]:
        """The branch's splits of the partitions the table's snapshot `main` does not hold."""
        if snapshot is None:
            return []
        # a partition main's read shows nothing of (a deletion-vector table's level-0 files) is not
        # held, as in Java, whose fallback takes the partitions of main's planned splits
        held = {e.partition for e in main_scan.live_entries(main, flt) if main_scan.planned(e)} \
            if main is not None else set()
        scan = TableScan(file_io, table_path, self.schema, self.name)
        return [s for s in scan.plan(snapshot, flt) if s.partition not in held]
