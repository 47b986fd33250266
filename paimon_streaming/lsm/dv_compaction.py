"""Deletion-vector maintenance of one bucket: after level-0 files arrive, push them up with a
universal compaction and mark, by lookup, every older row their keys replace.

After `compact_bucket` the bucket has no level-0 file, and every key is live in at most one
file at level >= 1 (older versions carry a deletion-vector mark), so readers need no merge
(FORMAT.md §8, seeds/pip-deletion-vectors.txt). The result is one `Increment` for the
COMPACT snapshot: the unit's files out (DELETE at their levels), the output in (an upgrade,
i.e. the same file at a new level, or rewritten files), and the bucket's new DV index file.

Merge engines: deduplicate keeps the newest row; partial-update and aggregation merge the
unit's rows onto the old row lookup returns (so the output row is complete); first-row keeps
an existing key's old row and drops the new ones.
"""
from __future__ import annotations

from dataclasses import dataclass, field, replace
from typing import Callable

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from ..commit import Increment
from ..datafile import arrow_schema
from ..evolution import read_evolved
from ..fileio import FileIO
from ..keyvalue import (DELETE, INSERT, SEQUENCE_NUMBER, UPDATE_BEFORE, VALUE_KIND, decode_key, file_fields,
                        first_key_above, key_fields)
from ..manifest import DataFileMeta, IndexFileMeta
from ..merge_engine import engine_for, sort_and_merge, sort_for_merge
from ..numpy_arrow import from_numpy
from ..options import CoreOptions
from ..paths import PathFactory, TableDirs
from ..record_expire import RecordExpiry
from ..schema import TableSchema
from .changelog import lookup_changelog
from .dv_maintainer import DeletionVectorMaintainer
from .levels import sorted_runs
from .lookup import KEY_INDEXES, BatchKeys, KeyIndex, int_keys, is_int_key, key_rows, sorted_distinct
from .recent_rows import RECENT_ROWS
from .universal import CompactUnit, UniversalCompaction

_MERGES_WITH_OLD_ROW = ("partial-update", "aggregation")
# A top-level file averaging less than the target file size over this per column is small
# (`_coalesce_small`): 32 KB a column at Paimon's default 128 MB.
SMALL_COLUMN_CHUNK_DIVISOR = 4096


@dataclass
class BucketFiles:
    """One bucket's live files, deletion vectors and where they live.

    `fresh` holds the rows of files this writer has just written (table columns plus
    `_SEQUENCE_NUMBER` and `_VALUE_KIND`), so compaction need not read them back."""
    bucket_dir: str
    files: list[DataFileMeta]
    dv_index: IndexFileMeta | None
    index_dir: str
    fresh: dict[str, pa.Table] = field(default_factory=dict)


def universal_for(options: CoreOptions) -> UniversalCompaction:
    return UniversalCompaction(options.num_levels, options.get("num-sorted-run.compaction-trigger"),
                               options.get("compaction.max-size-amplification-percent"),
                               options.get("compaction.size-ratio"))


class BucketCompactor:
    """Compacts buckets of one table (schema fixed for the compactor's lifetime)."""

    def __init__(self, file_io: FileIO, schema: TableSchema, schema_of: Callable[[int], TableSchema],
                 paths: PathFactory, write_files: Callable[[str, pa.Table, int], list[DataFileMeta]],
                 lookup: bool = True,
                 write_changelog: Callable[[str, pa.Table, int], list[DataFileMeta]] | None = None):
        self.file_io = file_io
        self.schema = schema
        self.schema_of = schema_of
        self.paths = paths
        self.write_files = write_files
        self.options = CoreOptions(schema.options)
        self.universal = universal_for(self.options)
        self.keys = list(schema.trimmed_primary_keys)
        self.key_types = [f.type for f in schema.fields_of(self.keys)]
        self.engine = engine_for(schema)
        self.bitmap64 = self.options.get("deletion-vectors.bitmap64")
        self.lookup = lookup
        self._file_key_types: dict[int, tuple] = {}
        self._bounds: dict[str, tuple[tuple, tuple] | None] = {}
        # changelog-producer = lookup: compaction also writes what changed (see lsm/changelog.py)
        self.write_changelog = write_changelog if self.options.get("changelog-producer") == "lookup" else None
        self.expiry = RecordExpiry.of(schema)  # record-level.expire-time: rows compaction drops
        # a full compaction rewrites every file (Java's option, e.g. to move them to new external paths)
        self.rewrite_all = self.options.get("compaction.force-rewrite-all-files")

    # ---- entry point ------------------------------------------------------------------------
    def compact(self, bucket: BucketFiles, full: bool = False, force_level0: bool = True) -> Increment | None:
        vectors = DeletionVectorMaintainer(self.file_io, bucket.index_dir, bucket.dv_index,
                                           {f.file_name: f.row_count for f in bucket.files}, self.bitmap64)
        level0_bytes = sum(f.file_size for f in bucket.files if f.level == 0)
        moved = [] if full or not self.lookup else self._disjoint_level0(bucket.files)
        merged_rows = self._changed_by_merge(bucket, moved)
        if merged_rows and any(f.level > 0 for f in bucket.files):
            # Java moves a level-0 file up as it is only into an empty top (its output level
            # is then the top); below files it rewrites it through the merge function
            moved = [f for f in moved if f.file_name not in merged_rows]
        up = [f.upgrade(self.universal.max_level) for f in moved]
        names = {f.file_name for f in moved}
        if moved:
            bucket = replace(bucket, files=[f for f in bucket.files if f.file_name not in names] + up)
        inc = self._compact_runs(bucket, full, vectors, force_level0) or Increment()
        if up:
            self._coalesce_small(bucket, up, inc, vectors)
        if moved and self.write_changelog is not None:  # keys new to the bucket: +I, no lookup needed
            # the changelog holds the merged rows even where the data stays as written (as Java's)
            rows = pa.concat_tables([merged_rows[f.file_name] if f.file_name in merged_rows
                                     else self._read_file(bucket, f, self._all_columns(), None)[0] for f in moved])
            kinds = pa.array(np.full(rows.num_rows, INSERT, np.int8))
            inc.changelog_files.extend(self.write_changelog(
                bucket.bucket_dir, rows.set_column(rows.column_names.index(VALUE_KIND), VALUE_KIND, kinds),
                self.universal.max_level))
        rewritten = {f.file_name for f in inc.deleted_files}  # moved, then picked for a rewrite
        inc.deleted_files = moved + [f for f in inc.deleted_files if f.file_name not in names]
        inc.new_files = [f for f in up if f.file_name not in rewritten] + inc.new_files
        if self.lookup:
            if not full:
                self._upkeep(bucket, inc, vectors, level0_bytes)
            added, removed = vectors.write(self.paths)
            inc.new_index_files.extend(added)
            inc.deleted_index_files.extend(removed)
        kept = {f.file_name for f in inc.new_files}  # an upgraded file is deleted and added
        removed = [f.file_name for f in inc.deleted_files if f.file_name not in kept]
        KEY_INDEXES.discard(removed)
        RECENT_ROWS.discard(removed)
        return None if inc.is_empty() else inc

    def _changed_by_merge(self, bucket: BucketFiles, files: list[DataFileMeta]) -> dict[str, pa.Table]:
        """The merged rows of those `files` whose rows the engine's merge changes when it runs
        on each key's lone row, by file name. Java's lookup compaction merges every key it
        rewrites: partial-update drops a sequence group whose sequence is null, a distinct
        `collect` its repeats."""
        if not self.engine.lookup_merges_every_key:
            return {}
        out = {}
        for f in files:
            rows = self._read_file(bucket, f, self._all_columns(), None)[0]
            merged = self.engine.merge_every_key(sort_for_merge(rows, self.keys, self.engine.sequence_fields),
                                                 self.keys)
            if not merged.equals(rows):
                out[f.file_name] = merged
        return out

    def _coalesce_small(self, bucket: BucketFiles, up: list[DataFileMeta], inc: Increment,
                        vectors: DeletionVectorMaintainer) -> None:
        """Merge a small file just moved to the top level with its small neighbours, by
        universal's size-ratio rule (a neighbour joins while it is no larger than what is
        merged so far) and only while the merged file stays small: small top-level files then
        form a binary counter, so small commits with keys new to the bucket (an ever-increasing
        id, say) leave about log2(n) small files instead of one per commit, and a row is
        rewritten at most log2(small / its commit's file size) times. Files of half the small
        size or more are never rewritten for their size: merging them would double the write
        cost of a steady stream of mid-sized commits for little gain.
        Small is under 1/128 of the target file size (1 MB at Paimon's 128 MB): below that a
        file costs more to open, list in manifests and probe than to read. A wide table's file
        is small up to 1/4096 of the target size a column (32 KB): readers and writers pay for
        each column chunk (its page, codec and statistics), so 400 rows of 200 columns in a
        650 KB file cost about as much to read as 16,000 would in one."""
        target = self.options.target_file_size(True)
        small = max(target // 128, len(file_fields(self.schema)) * (target // SMALL_COLUMN_CHUNK_DIVISOR))
        ratio = 1 + self.options.get("compaction.size-ratio") / 100
        gone = {f.file_name for f in inc.deleted_files}
        top = [f for f in bucket.files if f.level == self.universal.max_level and f.file_name not in gone]
        bounds = {f.file_name: self._key_bounds(f) for f in top}
        if any(b is None for b in bounds.values()):
            return
        top.sort(key=lambda f: bounds[f.file_name][0])
        position = {f.file_name: i for i, f in enumerate(top)}
        for f in up:
            if f.file_name not in position or f.file_size >= small:
                continue
            lo = hi = position[f.file_name]
            size = f.file_size
            while True:
                side = [i for i in (lo - 1, hi + 1) if 0 <= i < len(top) and top[i].file_size < small
                        and top[i].file_name in position and top[i].file_size <= size * ratio
                        and size + top[i].file_size <= small]
                if not side:
                    break
                i = min(side, key=lambda i: top[i].file_size)
                lo, hi = min(lo, i), max(hi, i)
                size += top[i].file_size
            if hi == lo:
                continue
            window = top[lo:hi + 1]
            self._rewrite_top(bucket, window, inc, vectors)
            for g in window:
                del position[g.file_name]  # merged once per compaction

    def _upkeep(self, bucket: BucketFiles, inc: Increment, vectors: DeletionVectorMaintainer,
                level0_bytes: int) -> None:
        """Once deleted rows make up more than `compaction.delete-ratio-threshold` of the
        bucket's top level, rewrite the top-level file with the most deleted rows, together with
        neighbours while the rewrite stays within twice the bytes this compaction brought in from
        level 0 (the target file size for a compaction without new files): deleted rows are
        dropped and small files merge, and each batch's extra work stays bounded whatever the
        table's size.

        The gate is the bucket's share, not one file's: what deleted rows cost is read
        amplification, which the bucket-wide share bounds (1 / (1 - threshold)); rewriting every
        file that passes the threshold on its own would rewrite about 1 / threshold rows per
        deleted row, as much as the batch itself under a steady stream of updates."""
        fresh = {f.file_name for f in inc.new_files}
        gone = {f.file_name for f in inc.deleted_files} - fresh  # an upgraded file is deleted and added
        top = [f for f in bucket.files if f.level == self.universal.max_level and f.file_name not in gone]
        bounds = [self._key_bounds(f) for f in top]
        if not top or any(b is None for b in bounds):
            return
        order = sorted(range(len(top)), key=lambda i: bounds[i][0])
        top = [top[i] for i in order]
        deleted = [vectors.deleted_count(f.file_name) for f in top]
        ratio = [d / max(f.row_count, 1) for d, f in zip(deleted, top)]
        threshold = self.options.get("compaction.delete-ratio-threshold")
        if sum(deleted) <= threshold * sum(f.row_count for f in top):
            return
        first = max(range(len(top)), key=lambda i: ratio[i])
        if ratio[first] <= threshold or top[first].file_name in fresh:
            return
        budget = 2 * level0_bytes if level0_bytes else self.options.target_file_size(True)

        def live_bytes(i: int) -> float:
            return top[i].file_size * (1 - ratio[i])
        lo = hi = first
        size = live_bytes(first)
        while True:
            options = [i for i in (lo - 1, hi + 1) if 0 <= i < len(top) and top[i].file_name not in fresh
                       and size + live_bytes(i) <= budget]
            if not options:
                break
            i = max(options, key=lambda i: ratio[i])
            lo, hi = min(lo, i), max(hi, i)
            size += live_bytes(i)
        self._rewrite_top(bucket, top[lo:hi + 1], inc, vectors)

    def _rewrite_top(self, bucket: BucketFiles, window: list[DataFileMeta], inc: Increment,
                     vectors: DeletionVectorMaintainer) -> None:
        """Replace adjacent top-level files by one rewrite of their live rows (key-disjoint and
        sorted files, so their concatenation is sorted), dropping their deletion vectors."""
        rows = pa.concat_tables([self._unit_rows(bucket, f, vectors) for f in window])
        inc.deleted_files.extend(window)
        if rows.num_rows:
            inc.new_files.extend(self.write_files(bucket.bucket_dir, rows, self.universal.max_level))
        vectors.drop({f.file_name for f in window})

    def _disjoint_level0(self, files: list[DataFileMeta]) -> list[DataFileMeta]:
        """Level-0 files whose key range overlaps no other live file of the bucket.

        No other version of their keys exists, so there is nothing to look up or merge: they
        move to the top level as they are (the writer cuts a batch's keys that are new to the
        bucket into their own files for this). Files with -U/-D rows are rewritten instead."""
        ranges = [(f, self._key_bounds(f)) for f in files]
        if any(r is None for _, r in ranges):
            return []
        out = []
        for f, (lo, hi) in ranges:
            if f.level != 0 or f.delete_row_count or not f.row_count or self._holds_expired(f):
                continue
            if all(g is f or ghi < lo or glo > hi for g, (glo, ghi) in ranges):
                out.append(f)
        return out

    def _key_bounds(self, f: DataFileMeta) -> tuple[tuple, tuple] | None:
        """The file's (min key, max key), decoded once per compactor (picking and lookup ask
        for every file's bounds several times per batch)."""
        if f.file_name not in self._bounds:
            self._bounds[f.file_name] = self._decode_bounds(f)
        return self._bounds[f.file_name]

    def _decode_bounds(self, f: DataFileMeta) -> tuple[tuple, tuple] | None:
        file_key_types = self._file_key_types.get(f.schema_id)
        if file_key_types is None:
            file_key_types = tuple(fld.type for fld in key_fields(self.schema_of(f.schema_id)))
            self._file_key_types[f.schema_id] = file_key_types
        try:
            bounds = decode_key(f.min_key, file_key_types), decode_key(f.max_key, file_key_types)
        except (TypeError, ValueError):
            return None
        return bounds if _nan_last(*bounds) else None

    def _compact_runs(self, bucket: BucketFiles, full: bool, vectors: DeletionVectorMaintainer,
                      force_level0: bool) -> Increment | None:
        runs = sorted_runs(bucket.files)
        if full:
            unit = CompactUnit(self.universal.max_level, tuple(runs)) if runs else None
        elif force_level0:
            unit = self.universal.pick_force_up_level0(runs)
        else:
            unit = self.universal.pick(runs)
        if unit is None:
            return None
        unit_names = {f.file_name for f in unit.files}
        older = [f for f in bucket.files if f.file_name not in unit_names]
        if not older and len(unit.files) > 1:
            sliced = self._compact_in_slices(bucket, unit, vectors)
            if sliced is not None:
                vectors.drop(unit_names)
                return sliced
        rows, level0 = self._read_unit(bucket, unit, vectors)
        changelog = None
        if self.lookup:
            merged, changelog = self._merge(rows, level0, older, bucket, vectors)
        else:  # merge-on-read table: older versions stay; deletes go only when nothing is older
            merged = sort_and_merge(rows, self.keys, self.engine)
            if not older:
                merged = _without_retractions(merged)
        outputs = self._output(bucket, unit, merged, vectors, rewrite=full and self.rewrite_all)
        if outputs == list(unit.files):
            return None  # a lone, clean file already at the output level: nothing changes
        vectors.drop(unit_names)
        inc = Increment(deleted_files=list(unit.files), new_files=outputs)
        if changelog is not None and changelog.num_rows:
            inc.changelog_files.extend(self.write_changelog(bucket.bucket_dir, changelog, unit.output_level))
        return inc

    # ---- a whole bucket, slice by slice ---------------------------------------------------------
    def _compact_in_slices(self, bucket: BucketFiles, unit: CompactUnit,
                           vectors: DeletionVectorMaintainer) -> Increment | None:
        """Compact a unit that holds the whole bucket (a full compaction, or universal picking
        every run) one key range at a time, so memory holds a slice rather than the bucket.

        Slices are cut at file key bounds, about an eighth of the target file size of input
        each. Every run is sorted by key, so a run contributes the rows up to the cut and keeps
        the rest of its last file read for the next slice: each file is read once. All versions
        of a key fall in one slice, and nothing outside the unit holds the key, so slices merge
        independently. Output rows are carried until they fill a target-size file, so files
        come out as one merge of the whole unit would write them. None: one slice would do, or
        a file's key bounds cannot be decoded (an older key schema)."""
        cuts = self._slice_cuts(unit.files)
        if not cuts:
            return None
        runs = []
        for run in unit.runs:
            files = sorted(run.files, key=lambda f: self._key_bounds(f)[0])
            runs.append(_RunCursor(files, run.level == 0, lambda f: self._unit_rows(bucket, f, vectors),
                                   self.keys, self._key_bounds,
                self._read_schema(self._all_columns()).empty_table()))
        inc = Increment(deleted_files=list(unit.files))
        carried = None
        for cut in cuts + [None]:
            parts = [run.take_through(cut) for run in runs]
            rows = pa.concat_tables([part for part, _ in parts])
            level0 = np.concatenate([np.full(part.num_rows, fresh) for part, fresh in parts])
            if self.lookup:
                merged, changelog = self._merge(rows, level0, [], bucket, vectors)
                if changelog is not None and changelog.num_rows:
                    inc.changelog_files.extend(self.write_changelog(bucket.bucket_dir, changelog, unit.output_level))
            else:
                merged = _without_retractions(sort_and_merge(rows, self.keys, self.engine))
            carried = merged if carried is None else pa.concat_tables([carried, merged])
            whole = self._whole_files_rows(carried) if cut is not None else carried.num_rows
            if whole:
                inc.new_files.extend(self.write_files(bucket.bucket_dir, carried.slice(0, whole), unit.output_level))
                carried = carried.slice(whole)
        return inc

    def _slice_cuts(self, files: list[DataFileMeta]) -> list[tuple]:
        """Keys to cut a bucket's files at (each slice holds the keys up to its cut)."""
        bounds = {f.file_name: self._key_bounds(f) for f in files}
        if any(b is None for b in bounds.values()):
            return []
        budget = self.options.target_file_size(True) // 8
        cuts, size = [], 0
        for f in sorted(files, key=lambda f: bounds[f.file_name][1]):
            size += f.file_size
            if size >= budget:
                cuts.append(bounds[f.file_name][1])
                size = 0
        last = max(b[1] for b in bounds.values())
        return [c for i, c in enumerate(cuts) if c != last and (i == 0 or c != cuts[i - 1])]

    def _whole_files_rows(self, rows: pa.Table) -> int:
        """How many leading rows fill whole target-size files (the rest waits for more rows)."""
        per_file = max(1, int(rows.num_rows * self.options.target_file_size(True) / max(rows.nbytes, 1)))
        return rows.num_rows // per_file * per_file

    # ---- reading ----------------------------------------------------------------------------
    def _read_file(self, bucket: BucketFiles, f: DataFileMeta, columns: list[str],
                   vectors: DeletionVectorMaintainer | None) -> tuple[pa.Table, np.ndarray]:
        """Rows of a file (by current column names, mapped by field id) and their positions,
        without the rows its deletion vector marks."""
        deleted = vectors.deleted_positions(f.file_name) if vectors is not None else None
        keep = None
        if deleted is not None:
            keep = np.ones(f.row_count, bool)
            keep[deleted] = False
        fresh = bucket.fresh.get(f.file_name)
        if fresh is None and f.schema_id == self.schema.id:
            fresh = RECENT_ROWS.get(f.file_name)
        if fresh is not None:
            table = fresh.select(columns).cast(self._read_schema(columns))
            if keep is not None:
                table = table.filter(from_numpy(keep))
        else:
            system = [c for c in columns if c in (SEQUENCE_NUMBER, VALUE_KIND)]
            table = read_evolved(self.file_io, TableDirs.data_file(bucket.bucket_dir, f),
                                 self.schema_of(f.schema_id), self.schema,
                                 [c for c in columns if c not in system], system, f.file_size, f.row_count, keep)
        positions = np.arange(f.row_count, dtype=np.int64) if keep is None else np.flatnonzero(keep)
        return table.select(columns), positions

    def _unit_rows(self, bucket: BucketFiles, f: DataFileMeta, vectors: DeletionVectorMaintainer) -> pa.Table:
        """The rows a compaction merges from a file: live ones, without expired records."""
        rows = self._read_file(bucket, f, self._all_columns(), vectors)[0]
        return rows if self.expiry is None else self.expiry.live(rows)

    def _holds_expired(self, f: DataFileMeta) -> bool:
        """A file that must be rewritten, not moved up: it holds rows past record-level expiry."""
        return self.expiry is not None and self.expiry.holds_expired(f, self.schema_of(f.schema_id))

    def _read_schema(self, columns: list[str]) -> pa.Schema:
        """The Arrow schema `read_data_file` gives these columns (fresh rows are cast to it)."""
        by_name = {f.name: f for f in file_fields(self.schema)}
        return arrow_schema([by_name[c] for c in columns])

    def _all_columns(self) -> list[str]:
        return self.schema.field_names + [SEQUENCE_NUMBER, VALUE_KIND]

    def _read_unit(self, bucket: BucketFiles, unit: CompactUnit,
                   vectors: DeletionVectorMaintainer) -> tuple[pa.Table, np.ndarray]:
        """The unit's live rows, and which of them come from level-0 files."""
        parts = [self._unit_rows(bucket, f, vectors) for f in unit.files]
        level0 = np.concatenate([np.full(p.num_rows, f.level == 0) for p, f in zip(parts, unit.files)])
        return pa.concat_tables(parts), level0

    # ---- lookup and merge -----------------------------------------------------------------------
    def _load_key_index(self, bucket: BucketFiles, f: DataFileMeta) -> KeyIndex:
        keys, _ = self._read_file(bucket, f, self.keys, None)
        return KeyIndex(keys, self.key_types)

    def _lookup(self, keys: pa.Table, older: list[DataFileMeta], bucket: BucketFiles,
                vectors: DeletionVectorMaintainer, live_only: bool) -> dict[str, np.ndarray]:
        """Positions of rows in older files whose key is among `keys` (sorted, distinct); with
        `live_only`, without the rows deletion vectors already mark (needed when the old rows
        themselves are used; marking a marked row again changes nothing).

        Each file is probed only with the batch keys inside its [min key, max key], so the
        cost follows the batch, not the number of files: files of a level are key-disjoint,
        so a key reaches at most one file per level."""
        found = {}
        hit = [(f, r) for f, r in zip(older, self._slices(keys, older)) if r[0] < r[1]]
        for (f, _), batch in zip(hit, BatchKeys.slices(keys, self.key_types, [r for _, r in hit])):
            positions = KEY_INDEXES.positions(f.file_name, lambda f=f: self._load_key_index(bucket, f), batch)
            if live_only:
                positions = vectors.live_positions(f.file_name, positions)
            if len(positions):
                found[f.file_name] = positions
        return found

    def _slices(self, keys: pa.Table, files: list[DataFileMeta]) -> list[tuple[int, int]]:
        """For each file, the slice of the sorted batch `keys` within its key range: where
        its min key and max key rank among the batch keys, found by one vectorized sort."""
        n = keys.num_rows
        bounds = [self._key_bounds(f) for f in files]
        known = [i for i, b in enumerate(bounds) if b is not None]
        out = [(0, n)] * len(files)
        if not known or not n:
            return out
        if is_int_key(self.key_types):  # sorted integers: two binary searches
            col = keys.column(0)
            ints = int_keys(col)
            starts = np.searchsorted(ints, int_keys(pa.array([bounds[i][0][0] for i in known], col.type)), "left")
            stops = np.searchsorted(ints, int_keys(pa.array([bounds[i][1][0] for i in known], col.type)), "right")
            for j, i in enumerate(known):
                out[i] = (int(starts[j]), int(stops[j]))
            return out
        columns = []
        for c, name in enumerate(self.keys):
            col = keys.column(name)
            lows = pa.array([bounds[i][0][c] for i in known], col.type)
            highs = pa.array([bounds[i][1][c] for i in known], col.type)
            columns.append(pa.concat_arrays([col.combine_chunks(), lows, highs]))
        # tie order: a min key ranks before equal batch keys, a max key after them
        tag = np.concatenate([np.ones(n, np.int8), np.zeros(len(known), np.int8), np.full(len(known), 2, np.int8)])
        table = pa.table(columns + [tag], names=self.keys + ["_tag"])
        order = pc.sort_indices(table, sort_keys=[(k, "ascending") for k in self.keys] + [("_tag", "ascending")])
        order = order.to_numpy()
        batch_before = np.cumsum(tag[order] == 1) - (tag[order] == 1)
        rank = np.empty(len(order), np.int64)
        rank[order] = batch_before
        for j, i in enumerate(known):
            out[i] = (int(rank[n + j]), int(rank[n + len(known) + j]))
        return out

    def _merge(self, rows: pa.Table, level0: np.ndarray, older: list[DataFileMeta], bucket: BucketFiles,
               vectors: DeletionVectorMaintainer) -> tuple[pa.Table, pa.Table | None]:
        """Merge the unit's rows per key (with old rows where the engine needs them) and mark
        every replaced older row in the deletion vectors. Returns the rows without -U/-D, and
        the changelog of the level-0 rows when the table produces one by lookup."""
        merged = sort_and_merge(rows, self.keys, self.engine)
        # the old row takes part in the merge unless a plain "newest wins" decides alone
        merges_old = self.engine.name in _MERGES_WITH_OLD_ROW or bool(self.engine.sequence_fields)
        wants_old = merges_old or self.engine.name == "first-row" or self.write_changelog is not None
        found = self._lookup(self._level0_keys(merged, rows, level0), older, bucket, vectors, live_only=wants_old)
        wants_old = wants_old and bool(found)
        old = pa.concat_tables([self._rows_at(bucket, older, name, pos) for name, pos in found.items()]) \
            if wants_old else None
        if found and self.engine.name == "first-row":
            merged = merged.filter(_not_in(merged, old.select(self.keys), self.keys, self.key_types))
            found = {}
        elif self.engine.lookup_merges_every_key:
            # as Java's lookup merge: the old row and the level-0 rows in one pass, every key
            # through the functions (aggregating is not associative: retractions, `collect`,
            # partial-update's aggReversed of rows with an older group sequence)
            both = pa.concat_tables([old.select(rows.column_names), rows]) if found else rows
            merged = self.engine.merge_every_key(sort_for_merge(both, self.keys, self.engine.sequence_fields),
                                                 self.keys)
        elif found and merges_old:
            both = pa.concat_tables([old.select(merged.column_names), merged])
            merged = sort_and_merge(both, self.keys, self.engine)
        changelog = None if self.write_changelog is None else self._changelog(rows, level0, merged, old)
        for name, positions in found.items():
            vectors.mark(name, positions)
        return _without_retractions(merged), changelog

    def _level0_keys(self, merged: pa.Table, rows: pa.Table, level0: np.ndarray) -> pa.Table:
        """The merged keys that came from level-0 files: only they can have a live version
        outside the unit. A key from a file above level 0 is live in that file alone (the DV
        invariant), its older versions already marked when it was written; probing for it
        would re-mark them, at a cost growing with the runs a merge takes in."""
        keys = merged.select(self.keys)
        if level0.all():
            return keys
        if not level0.any():
            return keys.slice(0, 0)
        if is_int_key(self.key_types):  # sorted distinct integers: place the fewer level-0 keys
            mine = int_keys(keys.column(0))
            theirs = sorted_distinct(int_keys(rows.column(self.keys[0]))[level0])
            at = np.searchsorted(mine, theirs)
            at = at[at < len(mine)]
            found = np.zeros(len(mine), bool)
            found[at[mine[at] == theirs[:len(at)]]] = True
            return keys.filter(pa.array(found))
        fresh = rows.select(self.keys).filter(pa.array(level0))
        return keys.filter(pc.invert(_not_in(keys, fresh, self.keys, self.key_types)))

    def _changelog(self, rows: pa.Table, level0: np.ndarray, merged: pa.Table, found: pa.Table | None) -> pa.Table:
        """Changelog of the level-0 rows' keys: their old live row is either in a higher-level
        file of the unit or was found in an older file (at most one of them: DV invariant)."""
        fresh_keys = rows.select(self.keys).filter(pa.array(level0))
        unit_old = rows.filter(pa.array(~level0))
        old_parts = [unit_old.filter(pc.invert(_not_in(unit_old, fresh_keys, self.keys, self.key_types)))]
        if found is not None:
            old_parts.append(found.select(rows.column_names))
        old = pa.concat_tables(old_parts)
        new = merged.filter(pc.invert(_not_in(merged, fresh_keys, self.keys, self.key_types)))
        if self.engine.name == "first-row":  # only keys seen for the first time
            new = new.filter(_not_in(new, old.select(self.keys), self.keys, self.key_types))
            old = old.slice(0, 0)
        return lookup_changelog(new, old, self.keys, self.key_types,
                                self.options.get("changelog-producer.row-deduplicate"),
                                self.options.get("changelog-producer.row-deduplicate-ignore-fields"))

    def _rows_at(self, bucket: BucketFiles, files: list[DataFileMeta], name: str,
                 positions: np.ndarray) -> pa.Table:
        f = next(f for f in files if f.file_name == name)
        table, _ = self._read_file(bucket, f, self._all_columns(), None)
        return table.take(pa.array(positions))

    # ---- output -----------------------------------------------------------------------------
    def _output(self, bucket: BucketFiles, unit: CompactUnit, merged: pa.Table,
                vectors: DeletionVectorMaintainer, rewrite: bool = False) -> list[DataFileMeta]:
        """The unit's output files; a lone clean file moves up a level as it is, unless
        `rewrite` (a full compaction with `compaction.force-rewrite-all-files`)."""
        files = unit.files
        single = files[0] if len(files) == 1 and not rewrite else None
        if single is not None and single.file_name not in vectors and (single.delete_row_count == 0) \
                and merged.num_rows == single.row_count and self.engine.name == "deduplicate" \
                and not self.engine.sequence_fields:  # else an old row may have won the merge
            if unit.output_level < self.universal.max_level and single.file_name in bucket.fresh:
                RECENT_ROWS.put(single.file_name, bucket.fresh[single.file_name])  # merged again soon
            return [single.upgrade(unit.output_level)]  # same file, new level: no rewrite
        if merged.num_rows == 0:
            return []
        outputs = self.write_files(bucket.bucket_dir, merged, unit.output_level)
        if unit.output_level < self.universal.max_level:  # merged again soon: keep the rows
            start = 0
            for f in outputs:
                RECENT_ROWS.put(f.file_name, merged.slice(start, f.row_count))
                start += f.row_count
        return outputs


class _RunCursor:
    """Reads one sorted run of a slice-by-slice compaction in key order (`take_through`)."""

    def __init__(self, files: list[DataFileMeta], level0: bool, read: Callable[[DataFileMeta], pa.Table],
                 keys: list[str], bounds: Callable[[DataFileMeta], tuple[tuple, tuple]], empty: pa.Table):
        self.files, self.level0, self.read, self.keys, self.bounds = files, level0, read, keys, bounds
        self.next = 0
        self.pending: list[pa.Table] = [empty]

    def take_through(self, cut: tuple | None) -> tuple[pa.Table, bool]:
        """The run's rows with a key up to `cut` (all that remain for None) not taken yet, and
        whether they come from level 0."""
        while self.next < len(self.files) and (cut is None or self.bounds(self.files[self.next])[0] <= cut):
            self.pending.append(self.read(self.files[self.next]))
            self.next += 1
        rows = pa.concat_tables(self.pending) if len(self.pending) > 1 else self.pending[0]
        end = rows.num_rows if cut is None else first_key_above(rows, self.keys, cut)
        self.pending = [rows.slice(end)]
        return rows.slice(0, end), self.level0


def _without_retractions(rows: pa.Table) -> pa.Table:
    kinds = rows.column(VALUE_KIND).to_numpy()
    keep = (kinds != UPDATE_BEFORE) & (kinds != DELETE)
    return rows if keep.all() else rows.filter(pa.array(keep))


def _not_in(table: pa.Table, keys: pa.Table, names: list[str], types: list) -> pa.Array:
    """Mask of rows of `table` whose key is not among `keys` (keys compared as BinaryRows)."""
    mine = key_rows([table.column(n) for n in names], types)
    theirs = key_rows([keys.column(n) for n in names], types)
    return pc.invert(pc.is_in(mine, value_set=theirs))


def _nan_last(low: tuple, high: tuple) -> bool:
    """Whether a file's bounds order a float NaN last, as keys sort (merge_engine): files written
    before this connector sorted NaN last begin with a NaN key, so their bounds bound nothing
    (the file is then probed for every key)."""
    for a, b in zip(low, high):
        a_nan, b_nan = isinstance(a, float) and a != a, isinstance(b, float) and b != b
        if a_nan and b_nan:
            continue
        if a_nan or b_nan:
            return b_nan
        if a != b:
            return True
    return True
