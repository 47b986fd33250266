"""Row tracking (`row-tracking.enabled`): every row of an append table keeps an id for life, and
the snapshot that wrote it.

Paimon 1.x (Java's `RowTrackingCommitUtils`, `DataFileRecordReader`, `SpecialFields`) keeps both
without rewriting new files:

- a commit numbers the rows of the files it appends: each new file's `first_row_id` is the
  snapshot's running counter (the previous snapshot's `nextRowId`, 0 for the first), which moves
  on by the file's rows; the new snapshot records where it stopped (`nextRowId`). Its sequence
  numbers become the new snapshot's id. The ids are taken at commit time, from the snapshot the
  commit builds on, so concurrent writers never share one;
- a row's `_ROW_ID` is its file's `first_row_id` plus its position in the file, and its
  `_SEQUENCE_NUMBER` the file's `max_sequence_number`;
- compaction cannot keep positions, so it writes both as columns of the rewritten files
  (`write_cols` names them, `first_row_id` stays empty), which readers take instead.

Only append tables with `bucket` = -1 track rows (Java refuses the option elsewhere).
"""
from __future__ import annotations

from dataclasses import replace
from typing import TYPE_CHECKING, Mapping, Sequence

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from .errors import CorruptFileError, InvalidOptionError
from .manifest import DataFileMeta
from .manifest.entries import ADD, FILE_SOURCE_APPEND, ManifestEntry
from .numpy_arrow import from_numpy
from .system_fields import ROW_ID, SEQUENCE_NUMBER
from .types import DataField, DataType

if TYPE_CHECKING:
    from .schema import TableSchema

OPTION = "row-tracking.enabled"
# the columns' field ids are Java's (SpecialFields: Integer.MAX_VALUE - 5 and - 1)
ROW_ID_FIELD = DataField(2147483642, ROW_ID, DataType("BIGINT", False))
SEQUENCE_NUMBER_FIELD = DataField(2147483646, SEQUENCE_NUMBER, DataType("BIGINT", False))
FIELDS = (ROW_ID_FIELD, SEQUENCE_NUMBER_FIELD)
NAMES = (ROW_ID, SEQUENCE_NUMBER)
ARROW_FIELDS = tuple(pa.field(name, pa.int64(), False) for name in NAMES)


def enabled(options: Mapping[str, str]) -> bool:
    return str(options.get(OPTION, "false")).strip().lower() == "true"


def tracks_rows(schema: "TableSchema") -> bool:
    return enabled(schema.options) and not schema.primary_keys


def filterable(schema: "TableSchema") -> pa.Schema:
    """The columns a read's filter may name: the table's, and on a row-tracking table
    `_ROW_ID` and `_SEQUENCE_NUMBER` (files are pruned by the ids they hold, `tracking_stats`)."""
    arrow = schema.arrow_schema()
    return pa.schema(list(arrow) + list(ARROW_FIELDS)) if tracks_rows(schema) else arrow


def check_table(options: Mapping[str, str], primary_keys: Sequence[str], bucket: int) -> None:
    """InvalidOptionError for row tracking where Java refuses it (SchemaValidation)."""
    if not enabled(options):
        return
    if primary_keys:
        raise InvalidOptionError(f"table option '{OPTION}' = 'true' is for append tables; this table has the "
                                 f"primary key {list(primary_keys)} (Paimon refuses it too)")
    if bucket != -1:
        raise InvalidOptionError(f"table option '{OPTION}' = 'true' needs 'bucket' = -1, not {bucket} "
                                 "(Paimon refuses it too)")


def number_rows(entries: Sequence[ManifestEntry], snapshot_id: int,
                next_row_id: int) -> tuple[list[ManifestEntry], int]:
    """`entries` of a commit creating `snapshot_id` with the rows of each appended file numbered
    from `next_row_id` (in entry order) and stamped with the snapshot id; the counter after them.
    Compaction output and files already numbered are left as they are."""
    numbered = []
    for e in entries:
        f = e.file
        if e.kind == ADD and f.file_source == FILE_SOURCE_APPEND and not has_row_ids(f):
            f = replace(f, first_row_id=next_row_id, min_sequence_number=snapshot_id,
                        max_sequence_number=snapshot_id)
            next_row_id += f.row_count
            e = replace(e, file=f)
        numbered.append(e)
    return numbered, next_row_id


def has_row_ids(f: DataFileMeta) -> bool:
    """Whether a file's rows have their ids: numbered by a commit, or held in its own column."""
    return f.first_row_id is not None or stores_row_ids(f)


def stores_row_ids(f: DataFileMeta) -> bool:
    """Whether a file holds `_ROW_ID` and `_SEQUENCE_NUMBER` columns (compaction output)."""
    return f.write_cols is not None and ROW_ID in f.write_cols


def id_problems(files: Sequence[DataFileMeta], next_row_id: int | None, shared_ranges: bool) -> list[str]:
    """What is wrong with the row ids of a snapshot's live `files` (`check`): a file without
    ids, two files numbering the same rows (`shared_ranges`: data evolution, where files of one
    range must cover it exactly), a snapshot counter below ids in use (the next commit would
    give them again)."""
    problems = [f"data file {f.file_name} has no row ids (no first_row_id, no {ROW_ID} column)"
                for f in files if not has_row_ids(f)]
    numbered = sorted((f for f in files if f.first_row_id is not None), key=lambda f: (f.first_row_id, f.row_count))
    for a, b in zip(numbered, numbered[1:]):
        same = (a.first_row_id, a.row_count) == (b.first_row_id, b.row_count)
        if b.first_row_id < a.first_row_id + a.row_count and not (shared_ranges and same):
            problems.append(f"data files {a.file_name} and {b.file_name} both number rows from {b.first_row_id}")
    end = max((f.first_row_id + f.row_count for f in numbered), default=0)
    if numbered and (next_row_id is None or next_row_id < end):
        problems.append(f"the snapshot's nextRowId {next_row_id} is below row ids in use (up to {end - 1}): "
                        "the next commit would number rows with them again")
    return problems


def written_fields(fields: Sequence[DataField], write_cols: Sequence[str] | None) -> list[DataField]:
    """The columns a data file holds, of its schema's file `fields`: all of them, or those its
    `write_cols` names (a data-evolution file's columns, compaction output's row ids)."""
    if write_cols is None:
        return list(fields)
    named = {f.name: f for f in (*fields, *FIELDS)}
    return [named[n] for n in write_cols if n in named]


def value_stats_fields(f: DataFileMeta, fields: Sequence[DataField]) -> list[DataField]:
    """The columns a file's value stats are kept for (of its schema's `fields`): its
    `value_stats_cols`, else every column it holds (dense stats)."""
    if f.value_stats_cols is None:
        return written_fields(fields, f.write_cols)
    named = {x.name: x for x in (*fields, *FIELDS)}
    return [named[n] for n in f.value_stats_cols]


def tracking_stats(f: DataFileMeta, stored: Mapping[str, tuple]) -> dict[str, tuple]:
    """(min, max, null count) of a file's `_ROW_ID` and `_SEQUENCE_NUMBER`, where known: the
    stats of its own columns (`stored`) when they have no nulls (a null takes the file's
    numbering, `tracking_columns`), else its metadata's: ids from `first_row_id` up by
    position, every row the file's `max_sequence_number`."""
    if stores_row_ids(f):
        return {n: s for n, s in stored.items() if n in NAMES and s[2] == 0 and s[0] is not None}
    out = {SEQUENCE_NUMBER: (f.max_sequence_number, f.max_sequence_number, 0)}
    if f.first_row_id is not None:
        out[ROW_ID] = id_range(f)
    return out


def id_range(f: DataFileMeta) -> tuple[int, int, int]:
    """(min, max, null count) of the ids a numbered file's rows take by position."""
    return f.first_row_id, f.first_row_id + f.row_count - 1, 0


def tracking_columns(f: DataFileMeta, path: str, stored: pa.Table | None,
                     keep: np.ndarray | None) -> list[pa.Array]:
    """The `_ROW_ID` and `_SEQUENCE_NUMBER` of a file's rows (those `keep` marks): from its own
    columns (`stored`, read with `keep` applied) where it has them, else from its metadata.
    A row with no id is a damaged file, never answered with a null or a guess."""
    positions = np.arange(f.row_count, dtype=np.int64) if keep is None else np.flatnonzero(keep).astype(np.int64)
    derived_ids = None if f.first_row_id is None else from_numpy(positions + f.first_row_id)
    derived_seq = pa.array(np.full(len(positions), f.max_sequence_number, np.int64))
    if stored is None:
        if derived_ids is None:
            raise CorruptFileError(f"data file {path} of a row-tracking table has no row ids: neither a "
                                   f"first_row_id in its manifest entry nor a {ROW_ID} column")
        return [derived_ids, derived_seq]
    ids = stored.column(ROW_ID).combine_chunks()
    seq = stored.column(SEQUENCE_NUMBER).combine_chunks()
    if ids.null_count:
        if derived_ids is None:
            raise CorruptFileError(f"data file {path} has rows without a {ROW_ID} and no first_row_id to "
                                   "number them by")
        ids = pc.coalesce(ids, derived_ids)
    if seq.null_count:
        seq = pc.coalesce(seq, derived_seq)
    return [ids.cast(pa.int64()), seq.cast(pa.int64())]


def with_tracking(rows: pa.Table, columns: Sequence[pa.Array]) -> pa.Table:
    """`rows` with the tracking columns appended (replacing any read from the file)."""
    rows = rows.drop_columns([n for n in NAMES if n in rows.column_names])
    for field, column in zip(ARROW_FIELDS, columns):
        rows = rows.append_column(field, column)
    return rows
