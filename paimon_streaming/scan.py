"""Planning a read: snapshot -> live data files and deletion vectors, grouped into splits.

A split is one (partition, bucket) with the files to read. Files are pruned by partition
values, by bucket (a filter pinning the bucket key, bucket_selection.py) and by min/max
statistics. A split either must be merged by key (`needs_merge`), and
is then read whole, or is *raw*: every key lives in at most one of its files, so each file
can be read on its own, in parallel (`DataSplit.pieces`). Raw, as Java's
`MergeTreeSplitGenerator`: append tables; primary-key buckets whose files are all at
level > 0 without -U/-D rows, when keys cannot repeat across them (deletion vectors,
first-row, or one sorted run, i.e. one level); a bucket of one file without -U/-D rows.
Only key statistics may prune files of a split that must be merged (pruning on a value
column could hide the newest version of a row and resurrect an older one).
"""
from __future__ import annotations

import datetime
import math
import struct
from dataclasses import dataclass, field, replace
from typing import Any, Callable

from . import data_evolution, file_index, row_tracking
from .binary_row import deserialize_row
from .bucket_selection import pinned_keys, selected_buckets
from .datafile import format_from_file_name
from .errors import CommitConflictError, CorruptFileError, UnsupportedOperationError
from .fileio import FileIO
from .manifest import (DataFileMeta, IndexManifestFile, ManifestEntry, ManifestFile, ManifestFileMeta,
                       ManifestList, DeletionVectorMeta, live_entries)
from .manifest.entries import DELETION_VECTORS_INDEX
from .options import CoreOptions
from .paths import PathFactory, TableDirs, partition_path
from .predicate import Filter, may_match
from .branches import branch_path
from .schema import SchemaManager, TableSchema
from .schema_update import widening_error
from .types import DataField, DataType
from .snapshot import Snapshot


@dataclass(frozen=True)
class DeletionFile:
    """Where the deletion vector of one data file lives (`file_size`: of the whole index file)."""
    path: str
    meta: DeletionVectorMeta
    file_size: int | None = None


@dataclass
class DataSplit:
    partition: bytes
    partition_values: list[Any]
    bucket: int
    total_buckets: int
    bucket_path: str
    files: list[DataFileMeta]
    deletion_files: dict[str, DeletionFile] = field(default_factory=dict)
    needs_merge: bool = False
    by_row_id: bool = False   # a data-evolution table's files: rows merged by row id (data_evolution.py)

    @property
    def row_count(self) -> int:
        return sum(f.row_count for f in self.files)

    def with_files(self, files: list[DataFileMeta], needs_merge: bool | None = None) -> "DataSplit":
        """The same bucket restricted to `files` (with their deletion files)."""
        names = {f.file_name for f in files}
        return DataSplit(self.partition, self.partition_values, self.bucket, self.total_buckets,
                         self.bucket_path, list(files),
                         {n: d for n, d in self.deletion_files.items() if n in names},
                         self.needs_merge if needs_merge is None else needs_merge, self.by_row_id)

    def pieces(self) -> list["DataSplit"]:
        """What can be read independently: the whole split if it must be merged by key, the
        files of each row-id range of a data-evolution table, else each file."""
        if self.needs_merge and self.files:
            return [self]
        if self.by_row_id:
            return [self.with_files(group) for group in data_evolution.row_groups(self.files)]
        return [self.with_files([f]) for f in self.files]


class TableScan:
    """Plans splits of one table at one snapshot."""

    def __init__(self, file_io: FileIO, table_path: str, schema: TableSchema, branch: str | None = None):
        self.file_io = file_io
        self.table_path = table_path
        self.schema = schema
        self.options = CoreOptions(schema.options)
        self.schemas = SchemaManager(file_io, branch_path(table_path, branch))  # a branch's own schema files
        self.dirs = TableDirs.of(table_path, schema.options)
        paths = PathFactory(table_path, self.options.file_format)
        self.partition_fields = schema.fields_of(schema.partition_keys)
        self.manifest_file = ManifestFile(file_io, paths, self.partition_fields)
        self.manifest_list = ManifestList(file_io, paths)
        self.index_manifest = IndexManifestFile(file_io, paths)
        self._partition_cache: dict[bytes, list[Any]] = {}
        self._schema_cache: dict[int, TableSchema] = {schema.id: schema}

    # ---- entries ------------------------------------------------------------------------
    # Every metadata file is read with the size its reference records, so a truncated or
    # replaced file is an error naming it (manifest/files.py), never fewer entries.
    def data_manifests(self, snapshot: Snapshot) -> list[ManifestFileMeta]:
        """The manifests of a snapshot's base and delta manifest lists."""
        lists = [(snapshot.base_manifest_list, snapshot.base_manifest_list_size),
                 (snapshot.delta_manifest_list, snapshot.delta_manifest_list_size)]
        return [m for ms in self.file_io.map(lambda nl: self.manifest_list.read(*nl), lists) for m in ms]

    def entries_of(self, manifests: list[ManifestFileMeta]) -> list[ManifestEntry]:
        """The entries of these manifests, in order (read concurrently on a remote store)."""
        return [e for es in self.file_io.map(self.manifest_file.read_meta, manifests) for e in es]

    def live_entries(self, snapshot: Snapshot, flt: Filter | None = None) -> list[ManifestEntry]:
        """The snapshot's live data files; with a filter on partition columns, only manifests
        whose partition statistics may hold a matching partition are read (those left out hold
        every ADD and DELETE of their partitions, so the replay of the others stays whole)."""
        manifests = self.data_manifests(snapshot)
        if flt is not None and flt.columns & set(self.schema.partition_keys):
            manifests = [m for m in manifests if self._manifest_may_match(m, flt)]
        entries = self.entries_of(manifests)
        try:
            return live_entries(entries)
        except CommitConflictError as exc:  # a committed snapshot always replays: its metadata is damaged
            raise CorruptFileError(
                f"the manifests of snapshot {snapshot.id} of {self.table_path} do not replay ({exc}); manifest "
                f"lists {self.manifest_list.path(snapshot.base_manifest_list)} and "
                f"{self.manifest_list.path(snapshot.delta_manifest_list)}") from exc

    def delta_entries(self, snapshot: Snapshot) -> list[ManifestEntry]:
        return self.entries_of(self.manifest_list.read(snapshot.delta_manifest_list, snapshot.delta_manifest_list_size))

    def changelog_entries(self, snapshot: Snapshot) -> list[ManifestEntry]:
        """The changelog files a snapshot added (empty when it has no changelog manifest list)."""
        if snapshot.changelog_manifest_list is None:
            return []
        return self.entries_of(self.manifest_list.read(snapshot.changelog_manifest_list,
                                                       snapshot.changelog_manifest_list_size))

    def partition_values(self, partition: bytes) -> list[Any]:
        values = self._partition_cache.get(partition)
        if values is None:
            values = deserialize_row(partition, [f.type for f in self.partition_fields])
            self._partition_cache[partition] = values
        return values

    def partition_dir(self, partition: bytes) -> str:
        return partition_path(self.partition_values(partition), self.partition_fields,
                              self.options.partition_default_name, self.options.get("partition.legacy-name"))

    def schema_of(self, schema_id: int) -> TableSchema:
        if schema_id not in self._schema_cache:
            self._schema_cache[schema_id] = self.schemas.schema(schema_id)
        return self._schema_cache[schema_id]

    # ---- planning -------------------------------------------------------------------------
    def plan(self, snapshot: Snapshot | None, flt: Filter | None = None, all_levels: bool = False,
             postponed: bool = False) -> list[DataSplit]:
        """The splits of `snapshot`. A batch read of a primary-key table with deletion vectors
        or first-row leaves level 0 out (its rows are not compacted in yet); `all_levels`
        keeps it, merged, as a stream's starting read does (Java's DataTableStreamScan).
        `postponed` keeps the files still in a postpone bucket too, as a bucket of their own."""
        if snapshot is None:
            return []
        self.schema_of(snapshot.schema_id)  # a deleted (newest) schema file is an error, not an older schema
        pk = bool(self.schema.primary_keys)
        dv = self.options.deletion_vectors
        # a file of a data-evolution table holds some columns of its rows: its stats prune nothing alone
        refuse_map_layouts(self.options.raw, self.table_path)
        by_row_id = data_evolution.enabled(self.options.raw) and not pk
        if by_row_id:
            data_evolution.refuse_deletion_vectors(self.options.raw, self.table_path)
        # the data manifests and the index manifest are independent reads (overlapping remotely)
        live, deletion_files = self.file_io.map(lambda read: read(), [
            lambda: self.live_entries(snapshot, flt), lambda: self.deletion_files(snapshot) if dv else {}])
        may_hold = self._bucket_selection(flt, live)
        groups: dict[tuple[bytes, int], list[ManifestEntry]] = {}
        for e in live:
            if not self.planned(e, all_levels, postponed) or not may_hold(e.total_buckets, e.bucket):
                continue
            groups.setdefault((e.partition, e.bucket), []).append(e)
        selected = {}
        for (partition, bucket), entries in groups.items():
            if not self._partition_may_match(partition, flt):
                continue
            # a postpone bucket's files are read as written, unmerged, as Java's MergeFileSplitRead reads them
            merged = self.needs_merge([e.file for e in entries]) and bucket >= 0
            if by_row_id:
                files = [e.file for e in entries]
                if flt is not None and flt.disjuncts is not None:
                    files = [f for g in data_evolution.row_groups(files) if self._group_may_match(g, flt) for f in g]
            else:
                files = [e.file for e in entries if self._file_may_match(e.file, flt, merged)]
                if not pk:  # an append bucket's rows in the order written, as Java's AppendOnlySplitGenerator:
                    # a compaction's output is committed after the newer files it left alone
                    files.sort(key=lambda f: f.min_sequence_number)
            if files:
                selected[(partition, bucket)] = (entries[0].total_buckets, merged, files)
        if flt is not None and file_index.read_enabled(self.options.raw) and not by_row_id:
            self._drop_by_file_index(selected, flt)
        return [self.split_of(partition, bucket, total, files, deletion_files.get((partition, bucket)),
                              needs_merge=self.needs_merge(files) and bucket >= 0, by_row_id=by_row_id)
                for (partition, bucket), (total, _, files) in selected.items() if files]

    def _drop_by_file_index(self, selected: dict[tuple[bytes, int], tuple[int, bool, list[DataFileMeta]]],
                            flt: Filter) -> None:
        """Drop the files whose file index (file_index.py) rules `flt` out, in place; in a bucket
        that must be merged, on key columns only (as statistics)."""
        ranged = file_index.range_bitmap_columns(self.options.raw)  # range terms: only where files may answer them
        asked = {t.column for conj in flt.disjuncts or () for t in conj
                 if t.op in file_index.EQUALITIES or (t.op in file_index.RANGES and t.column in ranged)}
        asked -= set(self.schema.partition_keys)
        if not asked:
            return
        jobs = []
        for key, (_, merged, files) in selected.items():
            wanted = asked & set(self.schema.trimmed_primary_keys) if merged else asked
            for f in files:
                if wanted and (f.embedded_index is not None or f.extra_files):
                    columns = self._same_columns(f, wanted)
                    if columns:
                        jobs.append((key, f, columns))
        if not jobs:
            return
        literal_memo: dict = {}  # each term's values converted once per type and index, for all files

        def may_match(job) -> bool:
            (partition, bucket), f, columns = job
            path = TableDirs.data_file(self.dirs.bucket(self.partition_dir(partition), bucket), f)
            indexes = file_index.indexes_of(self.file_io, path, f.embedded_index, f.extra_files)
            return indexes is None or file_index.may_match(indexes, flt, columns, path, literal_memo)

        ruled_out = {(key, f.file_name) for (key, f, _), keep in zip(jobs, self.file_io.map(may_match, jobs))
                     if not keep}
        for key, (total, merged, files) in selected.items():
            files[:] = [f for f in files if (key, f.file_name) not in ruled_out]

    def _same_columns(self, f: DataFileMeta, names: set[str]) -> dict[str, DataField]:
        """Of the current columns `names`, those the file holds as a field of the same type (by
        field id), with that field (its name in the file's index). Not a TIMESTAMP(0): Java
        indexes the fraction of a second its values may hold (23:59:58.500) as it reads them,
        and these indexes are not probed with such values (kept out: they prune nothing). Nor
        an ORC file's CHAR: its index holds the padded values ('x  '), which are read trimmed."""
        by_id = {fld.id: fld for fld in self.schema_of(f.schema_id).fields}
        now = {fld.name: fld for fld in self.schema.fields}  # a fallback branch may lack a filter's column
        orc = format_from_file_name(f.file_name) == "orc"
        out = {}
        for name in names & now.keys():
            old = by_id.get(now[name].id)
            if old is not None and old.type.copy(nullable=True) == now[name].type.copy(nullable=True) and \
                    not (old.type.root in ("TIMESTAMP", "TIMESTAMP_LTZ") and old.type.precision == 0) and \
                    not (orc and old.type.root == "CHAR"):
                out[name] = old
        return out

    def _bucket_selection(self, flt: Filter | None, live: list[ManifestEntry]) -> Callable[[int, int], bool]:
        """Whether a bucket (of a layout of so many buckets) may hold rows `flt` matches: those
        its bucket-key literals hash to (bucket_selection.py). Every bucket may, unless the
        table has fixed buckets and every live file was hashed with today's bucket-key types."""
        key_fields = self.schema.fields_of(self.schema.bucket_keys)
        keys = pinned_keys(flt, key_fields) if self.options.bucket > 0 else None
        if keys is None or not self._hashed_as_today(live, key_fields):
            return lambda total, bucket: True
        function = self.options.get("bucket-function.type")
        by_layout: dict[int, frozenset[int]] = {}

        def may_hold(total: int, bucket: int) -> bool:
            if total <= 0:  # a layout the entry does not record
                return True
            if total not in by_layout:
                by_layout[total] = selected_buckets(keys, key_fields, total, function)
            return bucket in by_layout[total]
        return may_hold

    def _hashed_as_today(self, live: list[ManifestEntry], key_fields: list[DataField]) -> bool:
        """Whether every file's schema had the bucket-key columns (by field id) of today's types."""
        today = {f.id: replace(f.type, nullable=True) for f in key_fields}
        for schema_id in {e.file.schema_id for e in live} - {self.schema.id}:
            then = {f.id: replace(f.type, nullable=True) for f in self.schema_of(schema_id).fields if f.id in today}
            if then != today:
                return False
        return True

    def planned(self, entry: ManifestEntry, all_levels: bool = False, postponed: bool = False) -> bool:
        """Whether `plan` reads this live file: not a level-0 file of a primary-key table with
        deletion vectors or first-row (unless `all_levels`), nor one still in a postpone bucket
        (unless `postponed`)."""
        skip_level0 = bool(self.schema.primary_keys) and not all_levels and \
            (self.options.deletion_vectors or self.options.merge_engine == "first-row")
        return not (skip_level0 and entry.file.level == 0) and (postponed or not self.postponed_bucket(entry))

    def postponed_bucket(self, entry: ManifestEntry) -> bool:
        """A file of a postpone-bucket table (`bucket` = -2) still waiting in bucket -2: Java's
        writers leave rows there, unmerged, until a compaction places them in real buckets, and
        its batch reads (and streaming reads of changelogs) leave them out until then."""
        return entry.bucket < 0 and self.options.bucket == -2

    def needs_merge(self, files: list[DataFileMeta]) -> bool:
        """Whether these files of one bucket must be merged by key to be read (module docstring).

        A file's -U/-D rows are known absent only when its delete row count says 0 (files of
        old writers without the count are merged, as Java does)."""
        if not self.schema.primary_keys or not files:
            return False
        clean = all(f.delete_row_count == 0 for f in files)
        if len(files) == 1:
            return not clean
        if not clean or any(f.level == 0 for f in files):
            return True
        one_run = len({f.level for f in files}) == 1
        return not (one_run or self.options.deletion_vectors or self.options.merge_engine == "first-row")

    def split_of(self, partition: bytes, bucket: int, total_buckets: int, files: list[DataFileMeta],
                 deletion_files: dict[str, DeletionFile] | None = None, needs_merge: bool = False,
                 by_row_id: bool = False) -> DataSplit:
        """A split of the given files of one (partition, bucket), with their deletion files."""
        dfs = deletion_files or {}
        return DataSplit(partition, self.partition_values(partition), bucket, total_buckets,
                         self.dirs.bucket(self.partition_dir(partition), bucket), list(files),
                         {f.file_name: dfs[f.file_name] for f in files if f.file_name in dfs},
                         needs_merge=needs_merge, by_row_id=by_row_id)

    def deletion_files(self, snapshot: Snapshot) -> dict[tuple[bytes, int], dict[str, DeletionFile]]:
        """Deletion vectors of a snapshot per (partition, bucket), keyed by data file name."""
        out: dict[tuple[bytes, int], dict[str, DeletionFile]] = {}
        for e in self.index_manifest.read(snapshot.index_manifest):
            f = e.index_file
            if f.index_type != DELETION_VECTORS_INDEX or not f.dv_ranges:
                continue
            path = self.dirs.index_file(self.dirs.bucket(self.partition_dir(e.partition), e.bucket), f)
            target = out.setdefault((e.partition, e.bucket), {})
            for meta in f.dv_ranges:
                target[meta.data_file_name] = DeletionFile(path, meta, f.file_size)
        return out

    def _manifest_may_match(self, manifest: ManifestFileMeta, flt: Filter) -> bool:
        """Whether a manifest's partition statistics (min, max and null count of each partition
        column over its entries) leave room for a partition `flt` matches."""
        types = [f.type.copy(nullable=True) for f in self.partition_fields]
        stats = manifest.partition_stats
        try:
            mins, maxs = deserialize_row(stats.min_values, types), deserialize_row(stats.max_values, types, upper=True)
        except (ValueError, TypeError, IndexError, struct.error):  # statistics we cannot decode: read it
            return True
        mins, maxs = _to_the_microsecond(mins, maxs, types)
        nulls = list(stats.null_counts) if stats.null_counts is not None else [None] * len(types)
        if not (len(mins) == len(maxs) == len(nulls) == len(types)):
            return True
        columns = {f.name: (lo, hi, n) for f, lo, hi, n in zip(self.partition_fields, mins, maxs, nulls)}
        return may_match(flt, columns, manifest.num_added_files + manifest.num_deleted_files)

    def _partition_may_match(self, partition: bytes, flt: Filter | None) -> bool:
        if flt is None or not (flt.columns & set(self.schema.partition_keys)):
            return True
        values = self.partition_values(partition)
        stats = {f.name: (v, v, 1 if v is None else 0) for f, v in zip(self.partition_fields, values)}
        return may_match(flt, stats, 1)

    def _file_may_match(self, f: DataFileMeta, flt: Filter | None, keys_only: bool) -> bool:
        if flt is None or flt.disjuncts is None:
            return True
        wanted = flt.columns - set(self.schema.partition_keys)
        if keys_only:
            wanted &= set(self.schema.trimmed_primary_keys)
        if not wanted:
            return True
        stats = self._file_stats(f, wanted, keys_only)
        return may_match(flt, stats, f.row_count)

    def _group_may_match(self, group: list[DataFileMeta], flt: Filter) -> bool:
        """A data-evolution row-id group (`data_evolution.row_groups`): whether its merged rows
        may match `flt`. Each column of them is the newest file's holding it, so that file's
        stats are the column's (none holding it: all null); the group's files number the same
        rows."""
        wanted = sorted((flt.columns - set(self.schema.partition_keys)) & set(self.schema.field_names))
        rows = group[0].row_count
        stats = {row_tracking.ROW_ID: row_tracking.id_range(group[0])}
        stats.update((n, (None, None, rows)) for n in wanted)  # a column no file holds is null (read_rows)
        for f, taken in data_evolution.columns_by_file(group, wanted, self.schema, self.schema_of):
            for n in taken:
                del stats[n]
            stats.update(self._file_stats(f, set(taken), False))
        return may_match(flt, stats, rows)

    def _file_stats(self, f: DataFileMeta, wanted: set[str], keys_only: bool) -> dict[str, tuple]:
        return file_stats(f, self.schema_of(f.schema_id), self.schema, wanted, keys_only)


def file_stats(f: DataFileMeta, file_schema: TableSchema, schema: TableSchema, wanted: set[str],
               keys_only: bool = False) -> dict[str, tuple]:
    """(min, max, null count) of the `wanted` columns (by current name) a file has stats for."""
    if keys_only:
        fields = file_schema.fields_of(file_schema.trimmed_primary_keys)
        stats = f.key_stats
    else:
        fields = row_tracking.value_stats_fields(f, file_schema.fields)
        stats = f.value_stats
    names = [fld.name for fld in fields]
    tracked = row_tracking.tracks_rows(schema) and bool(wanted & set(row_tracking.NAMES))
    if not (set(names) & wanted) and not tracked:
        return {}
    # Stats are stored under the file's schema names; map them to current names by field id.
    current = {fld.id: fld.name for fld in (*schema.fields, *row_tracking.FIELDS)}
    now = {fld.id: fld.type for fld in schema.fields}
    types = [fld.type.copy(nullable=True) for fld in fields]
    mins = deserialize_row(stats.min_values, types)
    maxs = deserialize_row(stats.max_values, types, upper=True)
    nulls = list(stats.null_counts) if stats.null_counts is not None else [None] * len(names)
    orc = format_from_file_name(f.file_name) == "orc"
    out = {}
    for i, fld in enumerate(fields):
        cur = current.get(fld.id)
        # a column whose type changed other than by a lossless widening (Java's schema changes
        # take explicit casts: DOUBLE -> FLOAT, TIMESTAMP(6) -> TIMESTAMP(3), ...) reads values
        # its old statistics do not bound: they prune nothing
        if cur in wanted and i < len(nulls) and (fld.id not in now or not widening_error(fld.type, now[fld.id])):
            lo, hi = mins[i], maxs[i]
            if orc and fld.type.root in ("FLOAT", "DOUBLE") and lo is not None and hi is not None:
                lo, hi = _orc_float_bounds(lo, hi)
            elif fld.type.root in ("TIMESTAMP", "TIMESTAMP_LTZ") and (fld.type.precision or 0) <= 3:
                # Java's writers keep what a value holds below its precision (an ORC file's
                # microseconds, its min/max too); it is read floored to milliseconds
                lo, hi = _floor_datetime(lo, fld.type.precision or 0), _floor_datetime(hi, fld.type.precision or 0)
            elif orc and fld.type.root == "CHAR":
                # ORC pads a CHAR(n) to n with spaces, its statistics too ('ab   '), while the
                # values read are not: padded bounds bound no value ('a\x01   ' < 'a    ')
                lo = hi = None
            out[cur] = (lo, hi, nulls[i])
    if tracked:
        out = {n: s for n, s in out.items() if n not in row_tracking.NAMES} | row_tracking.tracking_stats(f, out)
    return out


def _orc_float_bounds(lo: float, hi: float) -> tuple[float | None, float | None]:
    """The bounds a FLOAT/DOUBLE column's statistics of an ORC file can be trusted for. Java
    takes them from ORC's own column statistics, which compare with `<` and `>`: a NaN after the
    first value is left out of min/max, a NaN first makes both NaN whatever follows. So a NaN
    bound says nothing (unknown bounds), and any file may hold NaN beyond its max (NaN is the
    greatest in Paimon's order: `x != max` must not skip a file whose min = max)."""
    if math.isnan(lo) or math.isnan(hi):
        return None, None
    return lo, math.nan


def _floor_datetime(value: Any, precision: int) -> Any:
    """A TIMESTAMP(precision <= 3) bound floored to the unit it is read in, milliseconds
    (`types.to_arrow`): an ORC file's bounds may hold microseconds."""
    if not isinstance(value, datetime.datetime):
        return value
    return value.replace(microsecond=value.microsecond // 1000 * 1000)


def _to_the_microsecond(mins: list[Any], maxs: list[Any], types: list[DataType]) -> tuple[list[Any], list[Any]]:
    """TIMESTAMP(7-9) partition bounds widened to whole microseconds: until 2026-12 our writer kept,
    of a manifest's partitions within one microsecond, the first seen as both bounds (they compared
    as microseconds), so a bound is known only to its microsecond."""
    mins, maxs = list(mins), list(maxs)
    for i, t in enumerate(types):
        if t.root in ("TIMESTAMP", "TIMESTAMP_LTZ") and t.precision > 6:
            if isinstance(mins[i], datetime.datetime):  # a NanoDatetime as its microsecond
                mins[i] = datetime.datetime.combine(mins[i].date(), mins[i].timetz())
            if isinstance(maxs[i], datetime.datetime):  # (rounded up to a microsecond when decoded)
                maxs[i] = maxs[i] + datetime.timedelta(microseconds=1)
    return mins, maxs


def refuse_map_layouts(options: dict[str, str], table: str) -> None:
    """UnsupportedOperationError for MAP columns stored in another layout than Paimon's plain
    one (pypaimon 2.1's `fields.<column>.map.storage-layout` = `shared-shredding`: a struct of
    key columns and an overflow, which would otherwise be reported as a damaged file)."""
    for key, value in options.items():
        if key.startswith("fields.") and key.endswith(".map.storage-layout") and str(value).strip().lower() != "default":
            column = key[len("fields."):-len(".map.storage-layout")]
            raise UnsupportedOperationError(
                f"table {table} stores MAP column '{column}' in layout '{value}' (option '{key}', as pypaimon writes "
                "it), which paimon-streaming does not read")
