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
Our writers append whole rows (numbered by their commit, row_tracking.py) and do not compact
such tables: a file alone is not its rows, and Java's streaming writers leave them to a
data-evolution compaction too. Streaming and incremental reads of column updates are refused
by file (read.py).
"""
from __future__ import annotations

from typing import Callable, Mapping, Sequence

from .errors import CorruptFileError, InvalidOptionError, UnsupportedOperationError
from . import row_tracking
from .manifest import DataFileMeta
from .options import parse_bool
from .schema import TableSchema

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
    groups: list[list[DataFileMeta]] = []
    end = -1
    for f in sorted(files, key=lambda f: f.first_row_id):
        if groups and f.first_row_id < end:
            groups[-1].append(f)
            end = max(end, f.first_row_id + f.row_count)
        else:
            groups.append([f])
            end = f.first_row_id + f.row_count
    for group in groups:
        group.sort(key=lambda f: f.max_sequence_number, reverse=True)
        ranges = {(f.first_row_id, f.row_count) for f in group}
        if len(ranges) > 1:
            raise UnsupportedOperationError(
                f"data files {[f.file_name for f in group]} of a data-evolution table cover overlapping but "
                f"different row ranges {sorted(ranges)} (first row id, rows): merging them is not implemented")
    return groups


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
