"""Compaction of append tables: small files merged into bigger ones, as Paimon's writers do.

A stream into an append table adds a file per (partition, bucket) and batch; left alone, every
reader opens all of them (W5: 10,000 files of 200 rows). Paimon's writers merge them
(`BucketedAppendCompactManager` for tables with buckets, `AppendCompactCoordinator` for
`bucket` = -1, Paimon 1.4), and this module follows their rules:

- a file is a candidate when it is smaller than 70% of `target-file-size` (256 MB for append
  tables) or its deletion vector marks more than `compaction.delete-ratio-threshold` of its
  rows;
- candidates, in sequence order (the order of their rows in the bucket), are taken as a
  window of consecutive files within twice `target-file-size`: a window of
  `compaction.min.file-num` (5) files or more is rewritten, as one group up to that size
  (Paimon's bucketed writer merges five at a time and merges a small output again with the
  next ones, which ends in the same files after more rewrites); a shorter window slides, its
  oldest file leaving for the next; a file with too many deleted rows is rewritten even in a
  shorter group;
- unlike Paimon, a group's oldest files stay out while each is larger than all the newer
  files of the group together: a stream of small commits then merges like a binary counter
  (a file is rewritten when as many new rows have come after it), so a row is rewritten about
  log2(commits) times rather than once every four commits until its file reaches 70% of the
  target size (W5: 12 rewrites a row over 100 commits, bench/HISTORY.md);
- a rewrite reads the group's files in order (deletion vectors applied, older schemas read as
  the current one) into files of about `target-file-size` at level 0, numbered from the
  group's first sequence number (file source COMPACT), and takes the rewritten files'
  vectors out of their index files;
- in a row-tracking table (row_tracking.py) a rewrite keeps each row's `_ROW_ID` and
  `_SEQUENCE_NUMBER` as columns of the new files, and files appended by the commit underway
  (not numbered yet) wait for a later one.

`full` compaction (`Table.compact(full=True)`) rewrites, per bucket, every candidate and
every file with a deletion vector, when there are two or more of them or any vector: files
already near the target size stay, as in Paimon's full compaction of append tables.
"""
from __future__ import annotations

from dataclasses import dataclass, field, replace
from functools import cached_property
from typing import Callable

import numpy as np
import pyarrow as pa

from .commit import Increment
from .evolution import read_evolved
from .fileio import FileIO
from .lsm.dv_maintainer import DeletionVectorMaintainer
from .lsm.recent_rows import RECENT_ROWS
from .manifest import DataFileMeta, IndexFileMeta
from .numpy_arrow import narrowable
from . import data_evolution, row_tracking
from .options import CoreOptions
from .paths import PathFactory, TableDirs
from .schema import TableSchema


@dataclass(frozen=True)
class AppendBucket:
    """One bucket of an append table: its live files and the deletion-vector index files
    that may hold their vectors (Paimon keeps several per partition for `bucket` = -1).
    `fresh`: the rows of files this writer has just written, so they need not be read back."""
    bucket_dir: str
    files: list[DataFileMeta]
    dv_indexes: list[IndexFileMeta]
    index_dir: str
    fresh: dict[str, pa.Table] = field(default_factory=dict)


@dataclass(frozen=True)
class CompactionRules:
    target_file_size: int
    min_file_num: int
    delete_ratio: float
    rewrite_all: bool = False  # `compaction.force-rewrite-all-files`: a full compaction rewrites every file

    @staticmethod
    def of(options: CoreOptions) -> "CompactionRules":
        return CompactionRules(options.target_file_size(False), options.get("compaction.min.file-num"),
                               options.get("compaction.delete-ratio-threshold"),
                               options.get("compaction.force-rewrite-all-files"))

    @property
    def compaction_file_size(self) -> int:
        """Files from this size up are left alone (Paimon: 7/10 of the target, so that output
        files, which land near the target, are not picked again)."""
        return self.target_file_size // 10 * 7


def pick(files: list[DataFileMeta], deleted: Callable[[str], int], rules: CompactionRules,
         full: bool = False) -> list[list[DataFileMeta]]:
    """The groups of `files` (one bucket's) to rewrite, each in sequence order.
    `deleted(name)`: the rows a file's deletion vector marks."""
    def too_many_deleted(f: DataFileMeta) -> bool:
        return deleted(f.file_name) > f.row_count * rules.delete_ratio

    ordered = sorted(files, key=lambda f: (f.min_sequence_number, f.file_name))
    if full and rules.rewrite_all:
        return [ordered] if ordered else []
    if full:
        chosen = [f for f in ordered if f.file_size < rules.compaction_file_size or deleted(f.file_name)]
        return [chosen] if len(chosen) > 1 or any(deleted(f.file_name) for f in chosen) else []
    candidates = [f for f in ordered if f.file_size < rules.compaction_file_size or too_many_deleted(f)]
    limit = 2 * rules.target_file_size
    groups: list[list[DataFileMeta]] = []
    window: list[DataFileMeta] = []  # consecutive candidates within twice the target size

    def merge(files: list[DataFileMeta]) -> None:
        """Take `files` as a group once the newer files together have caught up with the older
        ones: a file larger than all that follow it waits (unless its deleted rows must go)."""
        while len(files) > 1 and not too_many_deleted(files[0]) and \
                files[0].file_size > sum(f.file_size for f in files[1:]):
            files = files[1:]
        if len(files) >= rules.min_file_num or any(too_many_deleted(f) for f in files):
            groups.append(files)
    size = 0
    for f in candidates:
        if window and size + f.file_size > limit and len(window) >= rules.min_file_num:
            merge(window)  # full
            window, size = [], 0
        while window and size + f.file_size > limit:  # slide: the oldest leaves (alone, if it must go)
            oldest = window.pop(0)
            size -= oldest.file_size
            if too_many_deleted(oldest):
                groups.append([oldest])
        window.append(f)
        size += f.file_size
    merge(window)
    return groups


@dataclass
class AppendCompactor:
    """Rewrites picked groups of an append table's buckets (schema fixed for its lifetime).

    `write_files(bucket_dir, rows, first_sequence, rows_per_file)` writes rows as level-0
    compaction output, numbered from `first_sequence`, cut every `rows_per_file` rows."""
    file_io: FileIO
    schema: TableSchema
    schema_of: Callable[[int], TableSchema]
    paths: PathFactory
    write_files: Callable[[str, pa.Table, int, int], list[DataFileMeta]]

    @cached_property
    def options(self) -> CoreOptions:
        return CoreOptions(self.schema.options)

    @cached_property
    def rules(self) -> CompactionRules:
        return CompactionRules.of(self.options)

    @cached_property
    def tracks_rows(self) -> bool:
        return row_tracking.enabled(self.schema.options)

    @cached_property
    def columns(self) -> list[str]:
        """The columns a rewrite reads and writes: a row-tracking table's keep their ids."""
        return self.schema.field_names + (list(row_tracking.NAMES) if self.tracks_rows else [])

    def compact(self, bucket: AppendBucket, full: bool = False) -> Increment | None:
        if data_evolution.enabled(self.schema.options):
            return self._compact_by_row_id(bucket)
        live = {f.file_name: f.row_count for f in bucket.files}
        vectors = [DeletionVectorMaintainer(self.file_io, bucket.index_dir, index, live,
                                            self.options.get("deletion-vectors.bitmap64"))
                   for index in bucket.dv_indexes]
        holder = {name: v for v in vectors for name in live if name in v}

        def deleted(name: str) -> int:
            return holder[name].deleted_count(name) if name in holder else 0

        files = bucket.files
        if self.tracks_rows:  # files this commit appends get their row ids from it: merged by a later one
            files = [f for f in files if row_tracking.has_row_ids(f)]
        groups = pick(files, deleted, self.rules, full)
        for f in bucket.files:  # the small files just written wait in memory for their merge
            if f.file_name in bucket.fresh and f.file_size < self.rules.compaction_file_size:
                RECENT_ROWS.put(f.file_name, bucket.fresh[f.file_name])
        if not groups:
            return None
        inc = Increment()
        for group in groups:
            inc.new_files.extend(self._rewrite(bucket, group, holder))
            inc.deleted_files.extend(group)
        rewritten = {f.file_name for f in inc.deleted_files}
        RECENT_ROWS.discard(rewritten)
        for v in vectors:
            v.drop(rewritten)
            added, removed = v.write(self.paths)
            inc.new_index_files.extend(added)
            inc.deleted_index_files.extend(removed)
        return inc

    def _compact_by_row_id(self, bucket: AppendBucket) -> Increment | None:
        """A data-evolution table's compaction (data_evolution.py): each picked run of row
        ranges rewritten as its merged rows, in files numbered from the run's first row id."""
        groups = data_evolution.compaction_groups(bucket.files, self.rules.target_file_size,
                                                  self.options.get("source.split.open-file-cost"),
                                                  self.rules.min_file_num)
        if not groups:
            return None
        inc = Increment()
        for group in groups:
            rows = pa.concat_tables(
                [data_evolution.read_rows(self.file_io, bucket.bucket_dir, rows, self.schema.field_names,
                                          self.schema, self.schema_of)
                 for rows in data_evolution.row_groups(group)]).combine_chunks()
            first_row_id = min(f.first_row_id for f in group)
            sequence = (min(f.min_sequence_number for f in group), max(f.max_sequence_number for f in group))
            for f in self.write_files(bucket.bucket_dir, rows, sequence[0], _rows_per_file(group, self.rules.target_file_size)):
                inc.new_files.append(replace(f, first_row_id=first_row_id, min_sequence_number=sequence[0],
                                             max_sequence_number=sequence[1]))
                first_row_id += f.row_count
            inc.deleted_files.extend(group)
        return inc

    def rewrite_without(self, bucket: AppendBucket, f: DataFileMeta, positions: np.ndarray) -> list[DataFileMeta]:
        """File `f` (of a bucket without deletion vectors) written again without the rows at
        `positions`: a copy-on-write delete (delete.py). Its rows keep their order, sequence
        numbers from the file's first, and on a row-tracking table their ids."""
        return self._rewrite(bucket, [f], {}, {f.file_name: positions})

    def _rewrite(self, bucket: AppendBucket, group: list[DataFileMeta],
                 holder: dict[str, DeletionVectorMaintainer],
                 dropped: dict[str, np.ndarray] | None = None) -> list[DataFileMeta]:
        """Read the group file by file and write it out in files of about the target size,
        holding at most one output file's rows (plus one input file) in memory. `dropped`:
        positions of rows to leave out, by file name."""
        rows_per_file = _rows_per_file(group, self.rules.target_file_size)
        out: list[DataFileMeta] = []
        pending: list[pa.Table] = []
        buffered = 0
        sequence = group[0].min_sequence_number

        def write(rows: pa.Table) -> None:
            nonlocal sequence
            written = self.write_files(bucket.bucket_dir, rows, sequence, rows_per_file)
            for i, f in enumerate(written):  # a small output is merged again soon: keep its rows
                if f.file_size < self.rules.compaction_file_size:
                    RECENT_ROWS.put(f.file_name, rows.slice(i * rows_per_file, rows_per_file))
            out.extend(written)
            sequence += rows.num_rows

        target = self.schema.arrow_schema()
        if self.tracks_rows:
            target = pa.schema(list(target) + list(row_tracking.ARROW_FIELDS))
        for f in group:
            rows = self._read(bucket, f, holder, (dropped or {}).get(f.file_name))
            pending.append(rows if rows.schema.equals(target) else pa.Table.from_arrays(
                [pa.chunked_array([narrowable(c) for c in col.chunks], col.type) for col in rows.columns],
                schema=rows.schema).cast(target))
            buffered += rows.num_rows
            if buffered >= rows_per_file:
                whole = pa.concat_tables(pending).combine_chunks()  # one chunk: cheaper to encode and slice
                cut = buffered - buffered % rows_per_file
                write(whole.slice(0, cut))
                pending, buffered = [whole.slice(cut)], buffered - cut
        if buffered:
            write(pa.concat_tables(pending).combine_chunks())
        return out

    def _read(self, bucket: AppendBucket, f: DataFileMeta, holder: dict[str, DeletionVectorMaintainer],
              dropped: np.ndarray | None = None) -> pa.Table:
        """A file's rows as the current schema has them, without the rows its vector deletes
        (and those at `dropped` positions); from memory when this process has just written it
        with the current schema."""
        vector = holder[f.file_name].deleted_positions(f.file_name) if f.file_name in holder else None
        keep = None
        for gone in (vector, dropped):
            if gone is not None and len(gone):
                keep = np.ones(f.row_count, bool) if keep is None else keep
                keep[gone] = False
        rows = bucket.fresh.get(f.file_name)
        if rows is None and f.schema_id == self.schema.id:
            rows = RECENT_ROWS.get(f.file_name)
        path = TableDirs.data_file(bucket.bucket_dir, f)
        if rows is not None and rows.num_rows == f.row_count and rows.schema.names in (self.columns,
                                                                                      self.schema.field_names):
            if rows.schema.names != self.columns:  # an appended file's rows: numbered by their commit since
                rows = row_tracking.with_tracking(rows, row_tracking.tracking_columns(f, path, None, None))
            return rows if keep is None else rows.filter(pa.array(keep))
        stored = list(row_tracking.NAMES) if self.tracks_rows and row_tracking.stores_row_ids(f) else []
        rows = read_evolved(self.file_io, path, self.schema_of(f.schema_id), self.schema, self.schema.field_names,
                            stored, file_size=f.file_size, row_count=f.row_count, keep=keep)
        if not self.tracks_rows:
            return rows
        return row_tracking.with_tracking(rows, row_tracking.tracking_columns(f, path, rows if stored else None, keep))


def _rows_per_file(group: list[DataFileMeta], target_file_size: int) -> int:
    """Rows that fill a file of the target size, estimated from the group's own files (their
    bytes per row): in-memory sizes overstate encoded ones many times, so outputs cut by them
    would stay small and be picked again and again."""
    rows = sum(f.row_count for f in group)
    size = sum(f.file_size for f in group)
    return max(1, int(target_file_size * rows / max(size, 1)))
