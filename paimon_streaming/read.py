"""Reading splits into Arrow: per-file projection with schema evolution by field id,
deletion-vector filtering, and merge-on-read for splits that must be merged by key (scan.py);
the files of other splits are read independently, in parallel.

Everything here is columnar: deletion vectors become boolean masks, the merge is one sort by
(key, sequence.field, sequence) plus the table's merge engine (`merge_engine.py`), after which
-U/-D results are dropped. On tables Java compacts by lookup the merge takes a key's level-0
rows and its row of the lowest level above 0 only, as Java's reads do (`sort_and_merge`).
"""
from __future__ import annotations

import datetime as dt
from concurrent.futures import ThreadPoolExecutor
from typing import Sequence

import numpy as np
import pyarrow as pa

from .binary_row import epoch_nanos
from .datafile import concat_tables
from .deletionvectors import decode_in_range, positions_of, read_index_file
from .errors import SchemaMismatchError, UnsupportedOperationError
from .evolution import read_evolved
from .fileio import LOCAL_IO_THREADS, FileIO
from .keyvalue import SEQUENCE_NUMBER, VALUE_KIND
from .lsm.levels import sorted_runs
from .manifest import DataFileMeta
from .numpy_arrow import from_numpy, narrowable
from . import merge_engine
from .merge_engine import (MergeEngine, engine_for, first_of_each_key, is_retract, last_of_each_key,
                           sort_and_merge)
from .options import CoreOptions, unimplemented_features
from .paths import TableDirs
from . import data_evolution, row_tracking
from .predicate import Filter
from .scan import DataSplit, DeletionFile, TableScan
from .schema import TableSchema
from .types import arrow_field

# Bytes of data files a remote read keeps in flight at most (see SplitReader.threads).
REMOTE_IN_FLIGHT_BYTES = 512 << 20


class SplitReader:
    """Reads splits of one table for a projection of its current schema."""

    def __init__(self, file_io: FileIO, scan: TableScan, schema: TableSchema):
        self.file_io = file_io
        self.scan = scan
        self.schema = schema
        self.options = CoreOptions(schema.options)
        self._dv_cache: dict[str, bytes] = {}
        self._engine: MergeEngine | None = None
        # a row-tracking table also reads `_ROW_ID` and `_SEQUENCE_NUMBER` when asked (row_tracking.py)
        self.tracking = row_tracking.NAMES if row_tracking.enabled(schema.options) and not schema.primary_keys else ()

    @property
    def engine(self) -> MergeEngine:
        if self._engine is None:
            self._engine = engine_for(self.schema)
        return self._engine

    def read(self, splits: Sequence[DataSplit], columns: Sequence[str] | None = None,
             flt: Filter | None = None) -> pa.Table:
        names = list(columns) if columns is not None else self.schema.field_names
        out_schema = self.arrow_schema(names)
        pieces = [p for s in splits for p in s.pieces()]  # files of raw splits are read in parallel
        if not pieces:
            return out_schema.empty_table()
        self._load_deletion_files(splits)
        with ThreadPoolExecutor(max_workers=self.threads(pieces)) as pool:
            tables = list(pool.map(lambda s: self.read_split(s, names, flt), pieces))
        return concat_tables([_as(t.select(out_schema.names), out_schema) for t in tables])

    def arrow_schema(self, names: list[str]) -> pa.Schema:
        """The Arrow schema of current columns `names` (a clear error for unknown ones)."""
        untracked = [n for n in names if n in row_tracking.NAMES and n not in self.tracking
                     and n not in self.schema.field_names]
        if untracked:
            raise SchemaMismatchError(f"columns {untracked} are kept by row-tracking tables only; table "
                                      f"{self.scan.table_path} does not track rows ('{row_tracking.OPTION}' is set "
                                      "when a table is created)")
        tracking = dict(zip(self.tracking, row_tracking.ARROW_FIELDS))
        return pa.schema([tracking.get(n) or arrow_field(self.schema.field(n)) for n in names])

    def threads(self, pieces: list[DataSplit]) -> int:
        """Pieces read at once: the store's I/O threads, but on a remote store no more than keep
        REMOTE_IN_FLIGHT_BYTES of files in flight (each thread holds its piece decoded)."""
        if self.file_io.is_local:
            return LOCAL_IO_THREADS
        largest = max(sum(f.file_size for f in p.files) for p in pieces)
        return max(LOCAL_IO_THREADS, min(self.file_io.io_threads, REMOTE_IN_FLIGHT_BYTES // max(largest, 1)))

    def read_split(self, split: DataSplit, names: list[str], flt: Filter | None,
                   with_row_kind: bool = False) -> pa.Table:
        named = set(names)
        filter_cols = [c for c in (flt.columns if flt else []) if c not in named]
        if flt is not None and flt.disjuncts is None:
            filter_cols = [n for n in self.schema.field_names if n not in named]  # opaque expression
        wanted = names + filter_cols
        if split.needs_merge:
            table = self._merge(split, wanted)
        elif split.by_row_id:
            parts = [self._read_row_group(split, group, wanted) for group in data_evolution.row_groups(split.files)]
            table = concat_tables(parts) if parts else None
        else:
            system = [VALUE_KIND] if with_row_kind and self.schema.primary_keys else []
            parts = [self._read_file(split, f, wanted, system) for f in split.files]
            table = concat_tables(parts) if parts else None
        if table is None:
            table = self._empty(wanted)
        elif flt is not None:
            table = table.filter(flt.expression)
        if with_row_kind and VALUE_KIND not in table.column_names:
            table = table.append_column(VALUE_KIND, from_numpy(np.zeros(table.num_rows, np.int8)))
        return table.select(names + ([VALUE_KIND] if with_row_kind else []))

    def _empty(self, names: list[str]) -> pa.Table:
        return self.arrow_schema(names).empty_table()

    # ---- one file --------------------------------------------------------------------------
    def _read_file(self, split: DataSplit, meta: DataFileMeta, names: list[str],
                   system: list[str]) -> pa.Table:
        """Read one file for current column `names` (+ system columns), mapping by field id."""
        path = TableDirs.data_file(split.bucket_path, meta)
        if meta.write_cols is not None:
            missing = [n for n in self.scan.schema_of(meta.schema_id).field_names if n not in meta.write_cols]
            if missing:  # a data-evolution file read alone (a stream's or an incremental read's delta)
                raise UnsupportedOperationError(
                    f"data file {path} holds only the columns {list(meta.write_cols)} of its rows (data evolution); "
                    f"batch reads merge them with {missing} from other files by row id, streaming and incremental "
                    "reads of such column updates are not implemented")
        deletion = split.deletion_files.get(meta.file_name)
        keep = None if deletion is None else self._keep_mask(deletion, meta.row_count)
        tracking = [n for n in names if n in self.tracking]
        stored = list(row_tracking.NAMES) if tracking and row_tracking.stores_row_ids(meta) else []
        table = read_evolved(self.file_io, path, self.scan.schema_of(meta.schema_id), self.schema,
                             [n for n in names if n not in tracking], system + stored,
                             file_size=meta.file_size, row_count=meta.row_count, keep=keep)
        table = self._partition_timestamps(split, table)
        if tracking:
            table = row_tracking.with_tracking(
                table, row_tracking.tracking_columns(meta, path, table if stored else None, keep))
        return table.select(names + system)

    def _partition_timestamps(self, split: DataSplit, table: pa.Table) -> pa.Table:
        """TIMESTAMP partition columns as the split's partition value, as Java reads them (from
        the partition, not the file): pyarrow misreads the timestamps of Java's ORC files in the
        second before 1970 that have a fraction (23:59:59.999 as 00:00:00.999 of 1970-01-01)."""
        if not table.num_rows:
            return table
        values = None
        for i, f in enumerate(self.scan.partition_fields):
            if f.type.root not in ("TIMESTAMP", "TIMESTAMP_LTZ") or f.name not in table.column_names:
                continue
            values = values or self.scan.partition_values(split.partition)
            if values[i] is None:
                continue
            at = table.column_names.index(f.name)
            field = table.schema.field(at)
            epoch = pa.scalar(_epoch_in(values[i], field.type.unit), pa.int64())
            table = table.set_column(at, field, pa.repeat(epoch, table.num_rows).cast(field.type))
        return table

    def _read_row_group(self, split: DataSplit, group: list[DataFileMeta], names: list[str]) -> pa.Table:
        """The rows of one row-id range of a data-evolution table (data_evolution.py)."""
        tracking = [n for n in names if n in self.tracking]
        table = data_evolution.read_rows(self.file_io, split.bucket_path, group, [n for n in names if n not in tracking],
                                         self.schema, self.scan.schema_of)
        if tracking:  # the newest file's: its sequence number is the rows' latest change
            newest = group[0]
            table = row_tracking.with_tracking(table, row_tracking.tracking_columns(
                newest, TableDirs.data_file(split.bucket_path, newest), None, None))
        return table.select(names)

    def _load_deletion_files(self, splits: Sequence[DataSplit]) -> None:
        """Read each index file the splits' deletion vectors live in once, before the pieces
        (one holds the vectors of a whole bucket: threads reading its files would each miss
        the cache and fetch it), all at once on a remote store."""
        wanted = {d.path: d.file_size for s in splits for d in s.deletion_files.values()
                  if d.path not in self._dv_cache}
        loaded = self.file_io.map(lambda item: read_index_file(self.file_io, *item), wanted.items())
        self._dv_cache.update(zip(wanted, loaded))

    def _keep_mask(self, deletion: DeletionFile, num_rows: int) -> np.ndarray:
        data = self._dv_cache.get(deletion.path)
        if data is None:
            data = read_index_file(self.file_io, deletion.path, deletion.file_size)
            self._dv_cache[deletion.path] = data
        positions = positions_of(decode_in_range(data, deletion.meta, deletion.path, num_rows))
        mask = np.ones(num_rows, dtype=bool)
        mask[positions] = False
        return mask

    # ---- merge on read -------------------------------------------------------------------
    def _merge(self, split: DataSplit, names: list[str]) -> pa.Table | None:
        if "sequence.snapshot-ordering" in unimplemented_features(self.schema.options):
            raise UnsupportedOperationError(
                f"table {self.scan.table_path} orders versions of a key by the snapshot that committed them "
                "('sequence.snapshot-ordering' = true), which merge-on-read does not implement; its buckets read "
                "without a merge once compacted (or with deletion vectors)")
        engine = self.engine
        keys = list(self.schema.trimmed_primary_keys)
        seq_fields = self.options.sequence_field
        cols = list(dict.fromkeys(engine.read_columns(names) + keys + seq_fields))
        # in compaction's order (sorted_runs), so rows of equal key and sequence number (two
        # writers numbering from one stale base, e.g. Java's commit racing ours) resolve as
        # compaction, and Java's read, resolve them: the answer must not change when compacted
        files = [f for run in sorted_runs(split.files) for f in run.files]
        parts = [self._read_file(split, f, cols, [SEQUENCE_NUMBER, VALUE_KIND]) for f in files]
        if not parts:
            return None
        table = pa.concat_tables(parts)
        if table.num_rows == 0:
            return table
        levels = None
        if self.options.need_lookup:  # Java merges a key's level-0 rows and lowest level above 0 only
            levels = np.repeat(np.array([f.level for f in files], np.int64), [p.num_rows for p in parts])
        table = sort_and_merge(table, keys, engine, levels)
        kinds = table.column(VALUE_KIND).to_numpy()
        return table.filter(from_numpy(~is_retract(kinds)))


def _as(table: pa.Table, schema: pa.Schema) -> pa.Table:
    """`table` cast to `schema` (field nullability included), without a cast when it already is.
    A merge of a bucket holding more string bytes than 32-bit offsets reach was made in 64-bit
    offsets (`merge_engine.offsets_widened`): it is cast back in pieces that fit them."""
    if table.schema.equals(schema):
        return table
    if table.nbytes > merge_engine.OFFSET_LIMIT and any(t in _WIDE for t in table.schema.types):
        rows = max(1, table.num_rows * (merge_engine.OFFSET_LIMIT // 2) // table.nbytes)
        return pa.concat_tables([_narrowed(table.slice(i, rows)).cast(schema) for i in range(0, table.num_rows, rows)])
    return table.cast(schema)


_WIDE = (pa.large_string(), pa.large_binary())


def _narrowed(table: pa.Table) -> pa.Table:
    return pa.Table.from_arrays([pa.chunked_array([narrowable(c) for c in col.chunks], col.type) for col in table.columns],
                                schema=table.schema)


__all__ = ["SplitReader", "last_of_each_key", "first_of_each_key"]


def _epoch_in(value: dt.datetime, unit: str) -> int:
    """A decoded partition timestamp (naive, or aware in UTC; `nanosecond` below the
    microsecond of a TIMESTAMP(7..9)) since the epoch in `unit`, floored as Java cuts it."""
    return epoch_nanos(value) // {"s": 10 ** 9, "ms": 10 ** 6, "us": 1000, "ns": 1}[unit]

