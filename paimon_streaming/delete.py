"""Row-level deletes: `Table.delete(filter)`, what `DELETE FROM t WHERE ...` does in Paimon's
Spark integration (Java's DeleteFromPaimonTableCommand), in one commit:

- primary-key tables whose merge engine removes a key on -D (deduplicate; partial-update with
  `partial-update.remove-record-on-delete` or `partial-update.remove-record-on-sequence-group`;
  aggregation with `aggregation.remove-record-on-delete`, as Java requires) get the matching
  rows written back as -D rows: an APPEND snapshot, merged like any write (deletion vectors
  mark the old rows);
- append tables with deletion vectors get the matching rows' positions added to their files'
  vectors, no data rewritten;
- other append tables have each file holding a matching row written again without those rows
  (copy-on-write), the old file replaced.

The append cases commit an OVERWRITE snapshot, as Java's do. Only rows for which the filter
is true go: a row where it is null (a comparison with a null) stays, as in SQL. A concurrent
commit that removed a file this delete rewrites or marks is a conflict: the delete is
planned again on the new snapshot, up to `commit.max-retries` times.
"""
from __future__ import annotations

import logging
import uuid
from concurrent.futures import ThreadPoolExecutor
from typing import TYPE_CHECKING, Any

import numpy as np
import pyarrow as pa

from . import data_evolution, row_tracking
from .append_compaction import AppendBucket
from .commit import CommitMessage, Increment
from .errors import UnsupportedOperationError
from .evolution import read_evolved
from .keyvalue import DELETE
from .lsm.dv_maintainer import DeletionVectorMaintainer
from .manifest import DataFileMeta
from .manifest.entries import DELETION_VECTORS_INDEX
from .merge_engine import row_kind_filter
from .numpy_arrow import from_numpy
from .paths import TableDirs
from .predicate import Filter, parse_filter
from .read import SplitReader
from .scan import TableScan
from .snapshot import BATCH_COMMIT_IDENTIFIER, Snapshot
from .write import TableWrite, write_threads

if TYPE_CHECKING:
    from .table import Table

log = logging.getLogger("paimon_streaming.delete")


def delete_rows(table: "Table", filter: Any, commit_user: str | None = None) -> int | None:
    """Delete the rows of `table` that `filter` matches; the new snapshot id, or None when no
    row matched (nothing is committed)."""
    if filter is None:
        raise ValueError(f"delete from {table.name} needs a filter; to empty the table, overwrite it with an "
                         "empty batch (write_arrow(..., overwrite=True))")
    user = commit_user or str(uuid.uuid4())
    if table.primary_keys:
        return _delete_by_key(table, filter, user)
    if data_evolution.enabled(table.schema.options):
        raise UnsupportedOperationError(
            f"delete from {table.name}: a data-evolution table's rows are spread over files by row id; "
            "deleting them is not implemented (Java's Spark DELETE does it)")
    return _delete_in_files(table, filter, user)


# ---- primary-key tables: -D rows ---------------------------------------------------------------
def _delete_by_key(table: "Table", spec: Any, user: str) -> int | None:
    _check_deletable(table)
    latest = table.latest_snapshot()
    if latest is None:
        return None
    schema = table.read_schema(latest, latest=True)
    flt = parse_filter(spec, schema.arrow_schema())
    scan = TableScan(table.file_io, table.path, schema, table.branch)
    rows = SplitReader(table.file_io, scan, schema).read(scan.plan(latest, flt), None, flt)
    if rows.num_rows == 0:
        return None
    kind_field = schema.options.get("rowkind.field")
    if kind_field:  # the table takes row kinds from a column of its own
        rows = rows.set_column(rows.schema.get_field_index(kind_field), kind_field, pa.array(["-D"] * rows.num_rows))
        kind_column = None
    else:
        kind_column = _unused_name(rows.column_names, "_delete_kind")
        rows = rows.append_column(kind_column, pa.array(["-D"] * rows.num_rows))
    log.info("deleting %d rows from %s by key", rows.num_rows, table.name)
    return table.write_arrow(rows, commit_user=user, row_kind_column=kind_column)


def _check_deletable(table: "Table") -> None:
    """Java's rules (PrimaryKeyTableUtils.validatePKUpsertDeletable), plus `ignore-delete`,
    under which the -D rows would be dropped and the delete would do nothing."""
    options = table.schema.options
    engine = table.options.merge_engine
    kept = row_kind_filter(options, np.array([DELETE], np.int8))
    if kept is not None and not kept[0]:
        raise UnsupportedOperationError(f"delete from {table.name}: the table ignores deletes ('ignore-delete' = "
                                        "true), so the -D rows a delete writes would be dropped")

    def on(key: str) -> bool:
        return str(options.get(key, "false")).strip().lower() == "true"
    if engine == "deduplicate":
        return
    if engine == "partial-update" and (on("partial-update.remove-record-on-delete")
                                       or options.get("partial-update.remove-record-on-sequence-group")):
        return
    if engine == "aggregation" and on("aggregation.remove-record-on-delete"):
        return
    needs = {"partial-update": "set 'partial-update.remove-record-on-delete' = 'true' (or "
                               "'partial-update.remove-record-on-sequence-group')",
             "aggregation": "set 'aggregation.remove-record-on-delete' = 'true'"}
    raise UnsupportedOperationError(
        f"delete from {table.name}: merge engine '{engine}' does not remove a key on a -D row by default; "
        + needs.get(engine, "deleting from such a table is not implemented"))


def _unused_name(names: list[str], base: str) -> str:
    name = base
    while name in names:
        name = f"_{name}"
    return name


# ---- append tables: deletion vectors or rewritten files -----------------------------------------
def _delete_in_files(table: "Table", spec: Any, user: str) -> int | None:
    return table.commit_planned(lambda latest: _file_changes(table, spec, latest), user, BATCH_COMMIT_IDENTIFIER,
                                "delete")


def _file_changes(table: "Table", spec: Any, latest: Snapshot) -> list[CommitMessage]:
    """One message per (partition, bucket) holding a matching row, planned on `latest`."""
    schema = table.schema
    flt = parse_filter(spec, row_tracking.filterable(schema))
    scan = TableScan(table.file_io, table.path, schema, table.branch)
    candidates: dict[tuple[bytes, int], list[DataFileMeta]] = {}
    for split in scan.plan(latest, flt):
        candidates.setdefault((split.partition, split.bucket), []).extend(split.files)
    live: dict[tuple[bytes, int], list] = {}
    for e in scan.live_entries(latest):
        if (e.partition, e.bucket) in candidates:
            live.setdefault((e.partition, e.bucket), []).append(e)
    index = [e for e in scan.index_manifest.read(latest.index_manifest)
             if e.index_file.index_type == DELETION_VECTORS_INDEX]
    writer = table.new_write()
    writer.compactor()  # built once, before the threads share it
    vectors = table.options.deletion_vectors

    def one_bucket(item: tuple[tuple[bytes, int], list[DataFileMeta]]) -> CommitMessage | None:
        (partition, bucket), files = item
        entries = live[(partition, bucket)]
        directory = writer.bucket_dir(scan.partition_values(partition), bucket)
        place = AppendBucket(directory, [e.file for e in entries],
                             [e.index_file for e in index if e.partition == partition and e.bucket == bucket],
                             writer.dirs.index_dir(directory))
        inc = (_mark(writer, place, files, flt, table.options.bucket == -1) if vectors
               else _rewrite(writer, place, files, flt))
        return None if inc.is_empty() else CommitMessage(partition, bucket, entries[0].total_buckets, data=inc)

    with ThreadPoolExecutor(write_threads(len(candidates), remote=not table.file_io.is_local),
                            thread_name_prefix="paimon-delete") as pool:
        return [m for m in pool.map(one_bucket, candidates.items()) if m is not None]


def _mark(writer: TableWrite, bucket: AppendBucket, files: list[DataFileMeta], flt: Filter,
          unaware: bool) -> Increment:
    """The matching rows of `files` added to their deletion vectors. A vector stays in the index
    file holding it; a file without one gets it in the bucket's index file, or, in a
    bucket-unaware table (which keeps an index file per delete, by name), in a new one."""
    live = {f.file_name for f in bucket.files}
    bitmap64 = writer.options.get("deletion-vectors.bitmap64")
    vectors = [DeletionVectorMaintainer(writer.file_io, bucket.index_dir, index, live, bitmap64)
               for index in bucket.dv_indexes]
    holder = {name: v for v in vectors for name in live if name in v}
    fresh: DeletionVectorMaintainer | None = None
    touched: list[DeletionVectorMaintainer] = []
    for f in files:
        positions = _matching_positions(writer, bucket.bucket_dir, f, flt)
        vector = holder.get(f.file_name)
        if vector is None and not unaware and vectors:
            vector = vectors[0]
        if vector is None:
            fresh = fresh or DeletionVectorMaintainer(writer.file_io, bucket.index_dir, None, live, bitmap64)
            vector = fresh
        positions = vector.live_positions(f.file_name, positions)
        if len(positions):
            vector.mark(f.file_name, positions)
            if vector not in touched:
                touched.append(vector)
    inc = Increment()
    for vector in touched:
        added, removed = vector.write(writer.paths)
        inc.new_index_files.extend(added)
        inc.deleted_index_files.extend(removed)
    return inc


def _rewrite(writer: TableWrite, bucket: AppendBucket, files: list[DataFileMeta], flt: Filter) -> Increment:
    """Each of `files` holding a matching row written again without such rows."""
    inc = Increment()
    for f in files:
        positions = _matching_positions(writer, bucket.bucket_dir, f, flt)
        if len(positions):
            inc.new_files.extend(writer.compactor().rewrite_without(bucket, f, positions))
            inc.deleted_files.append(f)
    return inc


def _matching_positions(writer: TableWrite, bucket_dir: str, f: DataFileMeta, flt: Filter) -> np.ndarray:
    """The positions in file `f` of the rows `flt` is true for (deleted rows included)."""
    schema = writer.schema
    wanted = sorted(flt.columns) if flt.disjuncts is not None else schema.field_names
    tracking = [n for n in wanted if n in row_tracking.NAMES]
    stored = list(row_tracking.NAMES) if tracking and row_tracking.stores_row_ids(f) else []
    path = TableDirs.data_file(bucket_dir, f)
    rows = read_evolved(writer.file_io, path, writer.compactor().schema_of(f.schema_id), schema,
                        [n for n in wanted if n not in tracking], stored, file_size=f.file_size,
                        row_count=f.row_count)
    if tracking:
        rows = row_tracking.with_tracking(rows, row_tracking.tracking_columns(f, path, rows if stored else None, None))
    position = _unused_name(rows.column_names, "_position")
    rows = rows.append_column(position, from_numpy(np.arange(f.row_count, dtype=np.int64)))
    return rows.filter(flt.expression).column(position).to_numpy()
