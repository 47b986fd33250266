"""Reading data-evolution tables (`data-evolution.enabled`, Paimon 1.3+): rows whose columns are
spread over several files, merged by row id.

Java's Spark `MERGE INTO` / `UPDATE` on such a table (row tracking on, `bucket` = -1) does not
rewrite whole rows: it writes the changed columns of every row of a file into a new file that
covers the same row ids (same `first_row_id` and row count; `write_cols` names its columns),
committed with a newer sequence number. A reader (Java's `DataEvolutionSplitRead`) groups a
bucket's files by overlapping row-id ranges and takes each column from the newest file of the
group that holds it; a column no file holds is null. Files are aligned by position: the n-th
row of each file of a group is the same row.

Statistics of one file of a group say nothing about the merged rows, so these reads prune by
partition only and filter the merged rows (Java prunes whole groups by merged statistics).
Our writers append whole rows (numbered by their commit, row_tracking.py) and, like Java's
streaming writers, leave compaction to an explicit `compact()`, which rewrites as Java's
data-evolution compaction does (`DataEvolutionCompactCoordinator` and `...CompactTask`, Paimon
1.4): in each run of adjacent row ids, consecutive row ranges are gathered until their files
weigh more than `target-file-size` (each file at least `source.split.open-file-cost`), a range
heavier than that alone is rewritten alone, and a gathering of at least
`compaction.min.file-num` files is rewritten as its merged rows, in row-id order, into a file
numbered from its first row id and spanning its sequence numbers. Streaming and incremental
reads of column updates are refused by file (read.py).
"""
from __future__ import annotations

from typing import Callable, Mapping, Sequence

import pyarrow as pa

from . import row_tracking
from .datafile import rows_only
from .errors import CorruptFileError, InvalidOptionError, UnsupportedOperationError
from .evolution import read_evolved
from .fileio import FileIO
from .manifest import DataFileMeta
from .option_text import parse_bool
from .paths import TableDirs
from .schema import TableSchema
from .types import arrow_schema

OPTION = "data-evolution.enabled"


def enabled(options: Mapping[str, str]) -> bool:
    return str(options.get(OPTION, "false")).strip().lower() == "true"


def check_table(options: Mapping[str, str]) -> None:
    """InvalidOptionError where Java refuses data evolution (SchemaValidation)."""
    if not enabled(options):
        return
    if not row_tracking.enabled(options):
        raise InvalidOptionError(f"table option '{OPTION}' = 'true' needs 'row-tracking.enabled' = 'true' "
                                 "(Paimon refuses it too)")
    if parse_bool(str(options.get("deletion-vectors.enabled", "false"))):
        raise InvalidOptionError(f"table option '{OPTION}' = 'true' cannot go with 'deletion-vectors.enabled' = "
                                 "'true' (Paimon refuses it too)")


def refuse_deletion_vectors(options: Mapping[str, str], table: str) -> None:
    """UnsupportedOperationError for a data-evolution table with deletion vectors (pypaimon 2.1
    writes them; Java refuses the combination): its vectors mark rows that reads by row id here
    would return, and a compaction here would bring back."""
    if enabled(options) and parse_bool(str(options.get("deletion-vectors.enabled", "false"))):
        raise UnsupportedOperationError(
            f"table {table} has data evolution with deletion vectors ('{OPTION}' and 'deletion-vectors.enabled' = "
            "'true', as pypaimon writes it; Java refuses it): paimon-streaming does not apply deletion vectors to "
            "rows read by row id, so it neither reads nor writes this table")


def row_groups(files: Sequence[DataFileMeta]) -> list[list[DataFileMeta]]:
    """`files` (one bucket's) grouped by overlapping row-id ranges, in row-id order, each group
    newest first (by max sequence number). Every file of a group must cover the same rows."""
    unnumbered = [f.file_name for f in files if f.first_row_id is None]
    if unnumbered:
        raise CorruptFileError(f"data files {unnumbered} of a data-evolution table have no first_row_id: their rows "
                               "cannot be matched with the other columns' files")
    blobs = [f.file_name for f in files if f.file_name.endswith(".blob")]
    if blobs:
        raise UnsupportedOperationError(f"data files {blobs} hold BLOB columns, which paimon-streaming does not read")
    groups = _runs(files, touching=False)
    for group in groups:
        group.sort(key=lambda f: f.max_sequence_number, reverse=True)
        ranges = {(f.first_row_id, f.row_count) for f in group}
        if len(ranges) > 1:
            raise UnsupportedOperationError(
                f"data files {[f.file_name for f in group]} of a data-evolution table cover overlapping but "
                f"different row ranges {sorted(ranges)} (first row id, rows): merging them is not implemented")
    return groups


def compaction_groups(files: Sequence[DataFileMeta], target_file_size: int, open_file_cost: int,
                      min_file_num: int) -> list[list[DataFileMeta]]:
    """The files (one partition's) each rewrite takes, in row-id order (module docstring)."""
    picked: list[list[DataFileMeta]] = []

    def take(chosen: list[DataFileMeta]) -> None:
        if len(chosen) >= min_file_num:
            picked.append(chosen)
    for run in _runs(files, touching=True):
        waiting: list[DataFileMeta] = []
        weight = 0
        for group in row_groups(run):
            group_weight = sum(max(f.file_size, open_file_cost) for f in group)
            if group_weight > target_file_size:
                take(group)
                take(waiting)
                waiting, weight = [], 0
                continue
            waiting += group
            weight += group_weight
            if weight > target_file_size:
                take(waiting)
                waiting, weight = [], 0
        take(waiting)
    return picked


def _runs(files: Sequence[DataFileMeta], touching: bool) -> list[list[DataFileMeta]]:
    """`files` in row-id order, cut where their row ranges do not overlap (`touching`: where
    they leave a gap)."""
    runs: list[list[DataFileMeta]] = []
    end = -1
    for f in sorted(files, key=lambda f: f.first_row_id):
        if runs and (f.first_row_id <= end if touching else f.first_row_id < end):
            runs[-1].append(f)
            end = max(end, f.first_row_id + f.row_count)
        else:
            runs.append([f])
            end = f.first_row_id + f.row_count
    return runs


def read_rows(file_io: FileIO, bucket_dir: str, group: Sequence[DataFileMeta], names: Sequence[str],
              schema: TableSchema, schema_of: Callable[[int], TableSchema]) -> pa.Table:
    """The rows of one row range (a group of `row_groups`), current columns `names`: each from
    the newest file holding it, null where none does (files are aligned by position)."""
    columns: dict[str, pa.ChunkedArray] = {}
    for f, taken in columns_by_file(group, names, schema, schema_of):
        read = read_evolved(file_io, TableDirs.data_file(bucket_dir, f), schema_of(f.schema_id), schema, list(taken),
                            file_size=f.file_size, row_count=f.row_count)
        columns.update((n, read.column(n)) for n in taken)
    out = arrow_schema(schema.fields_of(list(names)))
    rows = group[0].row_count
    lost = [n for n in names if n not in columns and not out.field(n).nullable]
    if lost:
        raise CorruptFileError(f"no data file of rows {group[0].first_row_id}..{group[0].first_row_id + rows - 1} "
                               f"holds the NOT NULL column(s) {lost}: {[f.file_name for f in group]}")
    if not names:
        return rows_only(rows)  # a count's projection
    return pa.Table.from_arrays([columns[n] if n in columns else pa.nulls(rows, out.field(n).type) for n in names],
                                schema=out)


def overlapping(f: DataFileMeta, others: Sequence[DataFileMeta]) -> list[str]:
    """The names of `others` whose row ranges overlap `f`'s."""
    end = f.first_row_id + f.row_count
    return [o.file_name for o in others if o.first_row_id is not None
            and o.first_row_id < end and f.first_row_id < o.first_row_id + o.row_count]


def columns_by_file(group: Sequence[DataFileMeta], names: Sequence[str], schema: TableSchema,
                    schema_of: Callable[[int], TableSchema]) -> list[tuple[DataFileMeta, list[str]]]:
    """Which file of a group (newest first) each of the current columns `names` is read from:
    the newest one holding the column's field (by id); a column no file holds is left out."""
    remaining = list(names)
    chosen = []
    for f in group:
        held = {field.id for field in schema_of(f.schema_id).fields
                if f.write_cols is None or field.name in f.write_cols}
        taken = [n for n in remaining if schema.field(n).id in held]
        if taken:
            chosen.append((f, taken))
            remaining = [n for n in remaining if n not in taken]
    return chosen
