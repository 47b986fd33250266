"""Rescaling a fixed-bucket table: a new `bucket` count, and partitions rewritten to it.

Rows are hashed to buckets by the count, so a partition's files must all share one. As in
Paimon, changing the table option `bucket` (`update_schema().set_option("bucket", "8")`,
Java's `ALTER TABLE ... SET ('bucket' = '8')`) changes no file: partitions written before keep
their count and read as they are, and a write into one of them is refused until it is
rewritten (Java: "Try to write partition ... with a new bucket num ..."). `rescale` rewrites
partitions at the table's count (Java's `CALL sys.rescale` / `INSERT OVERWRITE`): each
partition's live rows are read and written into the new buckets, and one OVERWRITE snapshot
swaps the files of every rescaled partition. A partition already at the count is left alone,
so a rescale that stopped half-way is finished by running it again.

Nothing else may write a partition while it is rescaled: the commit refuses to leave a partition
with files of two counts (a write that landed meanwhile, under either count), and the rescale is
then planned again on the new snapshot, as a compaction that lost a race is.
"""
from __future__ import annotations

import uuid
from dataclasses import replace
from typing import TYPE_CHECKING, Any

import pyarrow as pa

from .commit import CommitMessage, Increment
from .errors import SchemaMismatchError, StalePlanError, UnsupportedOperationError
from .manifest import ManifestEntry
from .predicate import parse_filter
from .read import SplitReader
from .scan import TableScan
from .snapshot import BATCH_COMMIT_IDENTIFIER, Snapshot
from .write import TableWrite

if TYPE_CHECKING:
    from .table import Table

__all__ = ["RESCALE_PROPERTY", "partitions_to_rescale", "rescale"]

# in the properties of a rescale's OVERWRITE snapshot: it moved rows between buckets, changed none
# (streaming readers with streaming-read-overwrite skip it; Java's readers ignore the key)
RESCALE_PROPERTY = "paimon-streaming.rescale"


def rescale(table: "Table", bucket: int | None = None, partitions: Any = None,
            commit_user: str | None = None) -> int | None:
    """Set the table's bucket count to `bucket` (when given) and rewrite the partitions that
    `partitions` matches (a filter over partition columns, as `to_arrow`'s; None: all) to it;
    returns the snapshot id (None when every selected partition already had the count)."""
    table.refresh()  # a Table loaded before another writer's change of `bucket` would skip setting it back
    _check_rescalable(table, bucket)
    selected = _partition_filter(table, partitions)
    if bucket is not None and bucket != table.options.bucket:
        with table.update_schema() as update:
            update.set_option("bucket", str(bucket))
    table.refresh()
    if _needs_compaction(table, selected):
        table.compact()  # level-0 files that deletion-vector readers do not see yet: made visible first
    return table.commit_planned(lambda latest: _rewrite(table, latest, selected), commit_user or str(uuid.uuid4()),
                                BATCH_COMMIT_IDENTIFIER, "rescale", properties={RESCALE_PROPERTY: "true"})


def _check_rescalable(table: "Table", bucket: int | None) -> None:
    current = table.options.bucket
    if current <= 0:
        mode = {-1: "dynamic (-1): its buckets grow as keys come" if table.primary_keys else
                "unaware (-1): an append table without buckets", -2: "postpone (-2)"}.get(current, str(current))
        raise UnsupportedOperationError(f"cannot rescale {table.name}: its bucket mode is {mode}; only tables with "
                                        "a fixed bucket count ('bucket' > 0) are rescaled")
    if bucket is not None and (isinstance(bucket, bool) or not isinstance(bucket, int) or bucket <= 0):
        raise UnsupportedOperationError(f"cannot rescale {table.name} to {bucket!r} buckets: a fixed count above 0 "
                                        "is needed (a table does not change its bucket mode)")


def _partition_filter(table: "Table", partitions: Any) -> pa.compute.Expression | None:
    if partitions is None:
        return None
    fields = [f for f in table.arrow_schema() if f.name in table.partition_keys]
    if not fields:
        raise SchemaMismatchError(f"{table.name} is not partitioned: rescale it whole (no partition filter)")
    try:
        return parse_filter(partitions, pa.schema(fields)).expression
    except SchemaMismatchError as exc:
        raise SchemaMismatchError(f"rescale of {table.name} selects partitions by the partition columns "
                                  f"{list(table.partition_keys)} only: {exc}") from None


def _scan(table: "Table") -> TableScan:
    return TableScan(table.file_io, table.path, table.schema, table.branch)


def partitions_to_rescale(table: "Table", bucket: int | None = None, partitions: Any = None) -> list[dict]:
    """What `rescale(bucket, partitions)` would rewrite, changing nothing: per partition its
    values, the bucket counts of its files and the records in them (`paimon-streaming rescale
    --dry-run`): the files' row counts, superseded versions, -D records and rows deletion
    vectors mark included, as a snapshot's total_records; its live rows would take a read."""
    table.refresh()
    _check_rescalable(table, bucket)
    latest = table.latest_snapshot()
    if latest is None:
        return []
    scan = _scan(table)
    selected = _selected(table, scan, latest, _partition_filter(table, partitions), bucket or table.options.bucket)
    return [{"partition": dict(zip(table.partition_keys, scan.partition_values(p))),
             "buckets": sorted({e.total_buckets for e in entries}),
             "records": sum(e.file.row_count for e in entries)} for p, entries in selected.items()]


def _selected(table: "Table", scan: TableScan, latest: Snapshot, expression: pa.compute.Expression | None,
              total: int | None = None) -> dict[bytes, list[ManifestEntry]]:
    """The live entries of the partitions to rescale: matched, and not all at `total` buckets
    (the table's count by default)."""
    by_partition: dict[bytes, list[ManifestEntry]] = {}
    for e in scan.live_entries(latest):
        by_partition.setdefault(e.partition, []).append(e)
    total = total or table.options.bucket
    chosen = {p: entries for p, entries in by_partition.items() if any(e.total_buckets != total for e in entries)}
    if expression is None or not chosen:
        return chosen
    names = list(table.partition_keys)
    types = pa.schema([f for f in table.arrow_schema() if f.name in names])
    values = pa.Table.from_pylist([dict(zip(names, scan.partition_values(p))) for p in chosen], schema=types)
    keep = values.filter(expression)
    wanted = {tuple(r[n] for n in names) for r in keep.to_pylist()}
    return {p: entries for p, entries in chosen.items() if tuple(scan.partition_values(p)) in wanted}


def _needs_compaction(table: "Table", expression: pa.compute.Expression | None) -> bool:
    latest = table.latest_snapshot()
    if latest is None or not table.primary_keys or not table.options.lookup_compaction:
        return False
    scan = _scan(table)
    return any(e.file.level == 0 for entries in _selected(table, scan, latest, expression).values() for e in entries)


def _rewrite(table: "Table", latest: Snapshot, expression: pa.compute.Expression | None) -> list[CommitMessage]:
    """Messages deleting the selected partitions' files and adding their rows in the table's buckets."""
    scan = _scan(table)
    selected = _selected(table, scan, latest, expression)
    if not selected:
        return []
    lookup = bool(table.primary_keys) and table.options.lookup_compaction
    pending = [e.file.file_name for entries in selected.values() for e in entries if lookup and e.file.level == 0]
    if pending:
        raise StalePlanError(f"{table.name}: level-0 files ({', '.join(pending[:3])}) were written while it was "
                             "being rescaled; nothing was committed")
    options = {k: v for k, v in table.schema.options.items() if k != "changelog-producer"}  # no row changes
    writer = TableWrite(table.file_io, table.path, replace(table.schema, options=options), table.name, table.branch)
    reader = SplitReader(table.file_io, scan, table.schema)
    splits: dict[bytes, list] = {}
    for split in scan.plan(latest):
        if split.partition in selected:
            splits.setdefault(split.partition, []).append(split)
    index = [e for e in scan.index_manifest.read(latest.index_manifest) if e.partition in selected]
    level = writer.options.num_levels - 1 if table.primary_keys else 0
    messages: list[CommitMessage] = []
    try:
        for partition, entries in selected.items():
            rows = reader.read(splits.get(partition, []))
            for g in writer.group(rows):
                files, _ = writer.write_group(g, 0, level=level)
                messages.append(CommitMessage(g.partition, g.bucket, table.options.bucket, Increment(new_files=files)))
            old: dict[int, CommitMessage] = {}
            for e in entries:
                m = old.setdefault(e.bucket, CommitMessage(partition, e.bucket, e.total_buckets, Increment()))
                m.data.deleted_files.append(e.file)
            for e in index:
                if e.partition == partition:
                    m = old.setdefault(e.bucket, CommitMessage(partition, e.bucket, table.options.bucket, Increment()))
                    m.data.deleted_index_files.append(e.index_file)
            messages.extend(old.values())
    except BaseException:
        table.new_commit().discard(messages)
        raise
    return messages
