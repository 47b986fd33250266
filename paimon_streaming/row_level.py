"""Row-level changes: `Table.delete(filter)` and `Table.update(filter, values)`, what SQL's
`DELETE FROM t WHERE ...` and `UPDATE t SET ... WHERE ...` do in Paimon's Spark integration
(Java's DeleteFromPaimonTableCommand and UpdatePaimonTableCommand), each in one commit:

- primary-key tables get the matching rows written back as -D rows (delete) or, with the new
  values, as +U rows (update): an APPEND snapshot, merged like any write (deletion vectors mark
  the old rows). The merge engine must remove a key on -D, as Java requires (deduplicate;
  partial-update with `partial-update.remove-record-on-delete` or `...-on-sequence-group`;
  aggregation with `aggregation.remove-record-on-delete`); an update must replace the row:
  deduplicate, or partial-update without setting nulls (which it would skip), aggregate
  functions (which would fold the row into itself) or a cross-partition table's partition
  columns (the row would merge in its old partition). Rows the merge would not end as the
  statement says are refused as read: a sequence field set lower or null (the +U loses the
  comparison), a sequence group left with a null sequence (its fields would be nulled), a
  delete of a row whose `remove-record-on-sequence-group` sequence is null (not removed). A
  delete from a table whose -D rows would not remove the key (other engines, `ignore-delete`;
  such rows) marks the live rows' positions when the table has deletion vectors, as Java's
  falls back to;
- append tables with deletion vectors get the matching rows' positions added to their files'
  vectors, no data rewritten; an update also writes the updated rows as new files;
- other append tables have each file holding a matching row written again without those rows
  (delete) or with them updated (update, through the writer: a row whose partition or bucket
  key changes lands where it now belongs), the old file replaced.

The append cases commit an OVERWRITE snapshot, as Java's do. Only rows for which the filter
is true change: a row where it is null (a comparison with a null) stays, as in SQL.

Concurrent writers: a change is planned again on the new snapshot (up to `commit.max-retries`
times, then CommitConflictError, nothing committed) when a commit since its plan may have
changed the rows it read: any other writer's data commit (compactions aside: they change no
row; level-0 files lookup readers skip are compacted before the read), which may hold rows the
change, committed after it, must change too, and a compaction that removed a file it rewrites or
marks, or rewrote its bucket's vectors.
"""
from __future__ import annotations

import datetime as dt
import decimal
import logging
import math
import uuid
from concurrent.futures import ThreadPoolExecutor
from typing import TYPE_CHECKING, Any, Mapping, NoReturn

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.dataset as ds

from . import cross_partition, data_evolution, row_tracking
from .append_compaction import AppendBucket
from .commit import CommitMessage, Increment
from .errors import SchemaMismatchError, StalePlanError, UnsupportedOperationError
from .evolution import read_evolved
from .keyvalue import DELETE
from .lsm.dv_maintainer import DeletionVectorMaintainer
from .manifest import DataFileMeta
from .manifest.entries import DELETION_VECTORS_INDEX
from .merge_engine import MergeEngine, PartialUpdateEngine, engine_for, row_kind_filter
from .decimal_text import DecimalTextRefused, text_decimals
from .number_text import text_numbers
from .numpy_arrow import from_numpy
from .paths import TableDirs
from .predicate import INEXACT, Filter, column_literal, from_text, parse_filter, plain_literal, timestamp_scalar
from .read import SplitReader
from .scan import TableScan
from .snapshot import BATCH_COMMIT_IDENTIFIER, Snapshot
from .types import from_arrow
from .write import TableWrite, conform, write_threads

if TYPE_CHECKING:
    from .table import Table

log = logging.getLogger("paimon_streaming.row_level")

Values = Mapping[str, Any]  # column -> a value, or a pyarrow.compute.Expression over the row


def delete_rows(table: "Table", filter: Any, commit_user: str | None = None,
                commit_identifier: int | None = None) -> int | None:
    """Delete the rows of `table` that `filter` matches; the new snapshot id, or None when no
    row matched (nothing is committed). With `commit_user` and `commit_identifier` the delete
    happens once: a replay of a committed identifier changes nothing and returns its snapshot
    id (None once expired), as `Table.write_arrow`."""
    _check_filter(table, filter, "delete from", "to empty the table, overwrite it with an empty batch "
                                                "(write_arrow(..., overwrite=True))")
    check_change(table, None)
    return _change(table, filter, None, commit_user, commit_identifier)


def update_rows(table: "Table", filter: Any, values: Values, commit_user: str | None = None,
                commit_identifier: int | None = None) -> int | None:
    """Set `values` (column -> value or Arrow expression of the row's current values) in the
    rows of `table` that `filter` matches; the new snapshot id, or None when no row matched.
    `commit_user` and `commit_identifier`: once, as `delete_rows`."""
    _check_filter(table, filter, "update of", "to update every row, pass pyarrow.compute.scalar(True)")
    check_change(table, values)
    return _change(table, filter, values, commit_user, commit_identifier)


def check_change(table: "Table", values: Values | None) -> None:
    """What a delete (`values` None) or an update of `table` refuses before it reads a row (a
    dry run's checks): the values, and a table whose merge engine or options would not apply it."""
    if data_evolution.enabled(table.schema.options) and not table.primary_keys:
        raise UnsupportedOperationError(
            f"{'update of' if values else 'delete from'} {table.name}: a data-evolution table's rows are spread "
            "over files by row id; changing them row by row is not implemented (Java's Spark DELETE and UPDATE "
            "do it)")
    if table.primary_keys and table.options.get("write-only"):
        _waiting(table, table.latest_snapshot(), values)  # raises where level-0 files wait
    if values is None:
        if table.primary_keys:
            _deletes_by_rows(table)  # raises where a delete cannot be applied
        return
    check_values(table, values)
    if table.primary_keys:
        _check_updatable(table, values)
    elif row_tracking.enabled(table.schema.options):
        raise UnsupportedOperationError(
            f"update of {table.name}: the updated rows of a row-tracking table keep their _ROW_ID in Java's "
            "UPDATE, which is not implemented here; delete and write the rows again (new ids) instead")


def _change(table: "Table", filter: Any, values: Values | None, commit_user: str | None,
            identifier: int | None) -> int | None:
    """A delete (`values` None) or update, once per (commit_user, identifier) when both are given."""
    if commit_user is not None and identifier is not None:
        commits = table.new_commit().user_commits(commit_user, identifier)
        # a change that died between its APPEND and COMPACT snapshots is committed but invisible
        # to deletion-vector readers: finish it before calling its identifier done
        if table.complete_interrupted_batch(commit_user, commits.own_latest) is not None:
            commits = table.new_commit().user_commits(commit_user, identifier)
        if commits.committed(identifier):
            log.info("change of %s by %s with identifier %s already committed: skipped", table.name,
                     commit_user, identifier)
            return commits.live.get(identifier)
    user = commit_user or str(uuid.uuid4())
    if table.primary_keys and (values is not None or _deletes_by_rows(table)):
        try:
            return _write_by_key(table, filter, values, "+U" if values else "-D", user, identifier)
        except _KeptByMerge:  # rows -D would not remove, in a table with deletion vectors: mark them
            pass
    # placed: another writer's data since the plan may hold rows the filter matches (the change,
    # committed after it, must change them too), or, in a bucket-unaware deletion-vector table,
    # a first vector of a file this one marks (readers take one of the two): plan it again
    return table.commit_planned(lambda latest: _file_changes(table, filter, values, _compacted(table, latest, values)),
                                user,
                                BATCH_COMMIT_IDENTIFIER if identifier is None else identifier,
                                "update" if values else "delete", placed=True)


def _check_filter(table: "Table", filter: Any, what: str, instead: str) -> None:
    if filter is None:
        raise ValueError(f"{what} {table.name} needs a filter; {instead}")


def check_values(table: "Table", values: Values) -> None:
    """The values of an update of `table`: columns that exist, no primary key, literals that
    fit their column."""
    if not values:
        raise ValueError(f"update of {table.name} needs values: {{column: value or expression}}")
    names = table.schema.field_names
    unknown = [c for c in values if c not in names]
    if unknown:
        raise SchemaMismatchError(f"update of {table.name}: columns {unknown} are not in the table {names}")
    keys = [c for c in values if c in table.primary_keys]
    if keys:
        raise UnsupportedOperationError(f"update of {table.name}: primary key columns {keys} cannot be updated "
                                        "(as in Java); delete the rows and write them with the new keys")
    arrow = table.arrow_schema()
    for column, value in values.items():
        if not isinstance(value, pc.Expression):
            _set_value(table.name, column, value, arrow.field(column).type)


# ---- primary-key tables: -D / +U rows ----------------------------------------------------------
def _deletes_by_rows(table: "Table") -> bool:
    """Whether a delete from a primary-key table writes -D rows: the merge engine removes a key
    on one (Java's PrimaryKeyTableUtils.validatePKUpsertDeletable) and the writer keeps them (no
    `ignore-delete`, which drops them: Java's delete then does nothing). Otherwise a table with
    deletion vectors has the matching rows' positions marked, as Java's DELETE falls back to; the
    others are refused, naming the reason. (Rows a -D would keep: `_check_rows_removed`.)"""
    options = table.schema.options
    engine = table.options.merge_engine

    def on(key: str) -> bool:
        return str(options.get(key, "false")).strip().lower() == "true"
    kept = row_kind_filter(options, np.array([DELETE], np.int8))
    if kept is not None and not kept[0]:
        why = "the table ignores deletes ('ignore-delete' = true), so the -D rows a delete writes would be dropped"
    elif engine == "deduplicate" or engine == "partial-update" and (
            on("partial-update.remove-record-on-delete") or options.get("partial-update.remove-record-on-sequence-group")) \
            or engine == "aggregation" and on("aggregation.remove-record-on-delete"):
        return True
    else:
        needs = {"partial-update": "set 'partial-update.remove-record-on-delete' = 'true' (or "
                                   "'partial-update.remove-record-on-sequence-group')",
                 "aggregation": "set 'aggregation.remove-record-on-delete' = 'true'"}
        why = f"merge engine '{engine}' does not remove a key on a -D row by default; " + \
            needs.get(engine, "a delete would have to rewrite every file holding a version of the key")
    if table.options.deletion_vectors:
        return False
    raise UnsupportedOperationError(f"delete from {table.name}: {why} (a table with deletion vectors would have "
                                    "the rows' positions marked instead)")


def _compacted(table: "Table", latest: Snapshot, values: Values | None) -> Snapshot:
    """`latest`, when no level-0 files wait in it: a delete by positions of a primary-key table
    must see the rows they hold, which would otherwise come back above its marks once compacted.
    Else they are compacted first and the change is planned again (StalePlanError)."""
    waiting = _waiting(table, latest, values)
    if waiting:
        _compact_first(table, waiting)
    return latest


def _waiting(table: "Table", latest: Snapshot | None, values: Values | None) -> set[tuple[bytes, int]]:
    """The buckets of `latest` whose level-0 files its readers skip, which a change must compact
    before it reads; refused on a `write-only` table, whose writers leave compaction to its own
    job (the change would see neither those rows nor, until that job runs, its own -D or +U)."""
    waiting = table.uncompacted_buckets(latest) if table.primary_keys else set()
    if waiting and table.options.get("write-only"):
        raise UnsupportedOperationError(
            f"{'update of' if values else 'delete from'} {table.name}: {len(waiting)} bucket(s) hold level-0 files "
            "its reads skip until compacted, and the table is 'write-only' (its writers do not compact); run its "
            "compaction first (`paimon-streaming compact`, Table.compact()), then the change")
    return waiting


def _compact_first(table: "Table", waiting: set[tuple[bytes, int]]) -> NoReturn:
    """Compact the level-0 files a change's read would skip, and have it planned again."""
    table.compact(only=waiting)
    raise StalePlanError(f"{table.name}: level-0 files were compacted before the change's read")


def _check_updatable(table: "Table", values: Values) -> None:
    """An update must leave each matching row with the values set: a deduplicate table takes
    the +U row whole; partial-update takes its non-null fields (a null set would be skipped),
    folds it into the old row in aggregated fields, and merges it in the old partition of a
    cross-partition table; aggregation would aggregate the new values into the old, first-row
    keep the old row. (What depends on the rows: `_check_rows_updated`.)"""
    engine = table.options.merge_engine
    if engine == "deduplicate":
        return
    if engine == "partial-update":
        nulls = [c for c, v in values.items() if v is None]
        if nulls:
            raise UnsupportedOperationError(
                f"update of {table.name}: merge engine 'partial-update' skips null fields, so setting {nulls} to "
                "null would change nothing; delete the rows and write them again instead")
        aggregated = engine_for(table.schema).aggregators
        if aggregated:
            options = table.schema.options
            keys = [k if k in options else "fields.default-aggregate-function"
                    for k in (f"fields.{f}.aggregate-function" for f in aggregated)]
            raise UnsupportedOperationError(
                f"update of {table.name}: fields {list(aggregated)} of merge engine 'partial-update' have aggregate "
                f"functions ({sorted(set(keys))}): the whole row an update writes back would be folded into the "
                "current values (a sum doubled); write rows holding just the key and the new values instead "
                "(partial-update merges their non-null fields)")
        partitions = [c for c in values if c in table.partition_keys]
        if partitions and cross_partition.is_cross_partition(table.schema):
            raise UnsupportedOperationError(
                f"update of {table.name}: partition columns {partitions} of a cross-partition table with merge "
                "engine 'partial-update' are not updated: the row is merged in the partition its key lives in "
                "(as Java's writers do); delete the rows and write them again with the new partition values")
        return
    raise UnsupportedOperationError(
        f"update of {table.name}: merge engine '{engine}' "
        + ("aggregates" if engine == "aggregation" else "keeps the first row of a key, ignoring")
        + " the rows an update writes, so the rows would not end with the values set")


def _write_by_key(table: "Table", spec: Any, values: Values | None, kind: str, user: str,
                  identifier: int | None) -> int | None:
    """The matching rows (updated by `values`) written back with row kind `kind`, written on
    the snapshot they were read from and committed only while no other writer's data came since
    (`exclusive`): rows read before another writer updated or deleted them would undo its change.
    Sequence numbers alone cannot tell: a delete leaves no file behind once compacted (deletion
    vectors, or a full compaction). On a conflict the change is read and written again."""
    def rows_on(latest: Snapshot | None) -> tuple[pa.Table, str | None] | None:
        if latest is None:
            return None
        with table._planned_on(latest):
            waiting = _waiting(table, latest, values)
            if not waiting:
                return _rows_to_write(table, latest, spec, values, kind)
        # level-0 rows (a batch between its APPEND and COMPACT, or whose writer died there) are
        # hidden from this read, but this write's compaction would publish them below its own
        # rows: make them visible first, then read again
        _compact_first(table, waiting)
    return table.write_planned_rows(rows_on, user, BATCH_COMMIT_IDENTIFIER if identifier is None else identifier,
                                    exclusive=True)


def _rows_to_write(table: "Table", latest: Snapshot, spec: Any, values: Values | None,
                   kind: str) -> tuple[pa.Table, str | None] | None:
    """The rows of `latest` that `spec` matches, updated, with row kind `kind` (the column
    holding it: None for a table with `rowkind.field`); None when none matches."""
    schema = table.read_schema(latest, latest=True)
    flt = parse_filter(spec, schema.arrow_schema())
    scan = TableScan(table.file_io, table.path, schema, table.branch)
    rows = SplitReader(table.file_io, scan, schema).read(scan.plan(latest, flt), None, flt)
    if rows.num_rows == 0:
        return None
    engine = engine_for(schema)
    if values:
        updated = _updated(rows, values, schema.arrow_schema(), table.name)
        _check_rows_updated(table.name, engine, rows, updated, values)
        rows = updated
    else:
        _check_rows_removed(table, engine, rows)
    kind_field = schema.options.get("rowkind.field")
    if kind_field:  # the table takes row kinds from a column of its own
        rows = rows.set_column(rows.schema.get_field_index(kind_field), kind_field, pa.array([kind] * rows.num_rows))
        return rows, None
    kind_column = _unused_name(rows.column_names, "_row_kind")
    return rows.append_column(kind_column, pa.array([kind] * rows.num_rows)), kind_column


class _KeptByMerge(Exception):
    """A delete's -D rows would not remove some matching rows: mark their positions instead."""


def _check_rows_removed(table: "Table", engine: MergeEngine, rows: pa.Table) -> None:
    """Refuse (with deletion vectors: turn into a delete by positions) a delete of rows a -D
    keeps: under `partial-update.remove-record-on-sequence-group` a row whose every named
    group has a null sequence (Java skips such a group; the -D only retracts the others)."""
    if not isinstance(engine, PartialUpdateEngine) or not engine.reset_groups:
        return
    kept = np.ones(rows.num_rows, bool)
    for i in engine.reset_groups:
        kept &= _all_null(rows, engine.groups[i].seq)
    if not kept.any():
        return
    if table.options.deletion_vectors:
        raise _KeptByMerge()
    raise UnsupportedOperationError(
        f"delete from {table.name}: {int(kept.sum())} matching row(s) (e.g. {_key_of(rows, kept, engine)}) have "
        f"the sequence field(s) {engine.remove_on_group} of 'partial-update.remove-record-on-sequence-group' null, "
        "so their -D rows would not remove them (only null other groups' fields); set those sequence fields first "
        "(an update), or enable deletion vectors (the rows' positions are then marked)")


def _check_rows_updated(table_name: str, engine: MergeEngine, old: pa.Table, new: pa.Table, values: Values) -> None:
    """Refuse an update of rows the merge would not end with the values set: a `sequence.field`
    or a sequence group's sequence set null or lower than the row's (the +U sorts before the
    row and loses), a sequence group whose sequence is null while its fields are not (partial-
    update skips such a group, so the merge nulls its fields)."""
    groups = engine.groups if isinstance(engine, PartialUpdateEngine) else []
    for group in groups:
        lost = _all_null(new, group.seq)
        if not lost.any():
            continue
        lost &= ~_all_null(new, [f for f in group.values if f not in group.seq])
        if lost.any():
            raise UnsupportedOperationError(
                f"update of {table_name}: {int(lost.sum())} matching row(s) (e.g. {_key_of(new, lost, engine)}) "
                f"have the sequence field(s) {list(group.seq)} of sequence group {list(group.values)} null, which "
                f"partial-update skips: the merge would set the group's fields to null; set {list(group.seq)} in "
                "the same update")
    for seq, what in [(engine.sequence_fields, "'sequence.field'")] + \
            [(list(g.seq), f"sequence field(s) of group {list(g.values)}") for g in groups]:
        if not set(seq) & set(values):
            continue
        lower = _lower(new, old, seq)
        if lower.any():
            raise UnsupportedOperationError(
                f"update of {table_name}: {int(lower.sum())} matching row(s) (e.g. {_key_of(new, lower, engine)}) "
                f"would set {what} {list(seq)} null or lower than their current value: the "
                "merge orders a key's rows by them, so the update would be ignored; set them to the current value "
                "or higher, or delete the rows and write them again")


def _all_null(rows: pa.Table, columns: Any) -> np.ndarray:
    """Per row, whether every one of `columns` is null."""
    null = np.ones(rows.num_rows, bool)
    for c in columns:
        null &= pc.is_null(rows.column(c)).to_numpy(zero_copy_only=False)
    return null


def _lower(new: pa.Table, old: pa.Table, columns: list[str]) -> np.ndarray:
    """Per row, whether `new`'s tuple of `columns` sorts before `old`'s (nulls first, as merges order)."""
    lower, equal = np.zeros(new.num_rows, bool), np.ones(new.num_rows, bool)
    for c in columns:
        a, b = new.column(c), old.column(c)
        a_null = pc.is_null(a).to_numpy(zero_copy_only=False)
        b_null = pc.is_null(b).to_numpy(zero_copy_only=False)
        less = pc.fill_null(pc.less(a, b), False).to_numpy(zero_copy_only=False) | (a_null & ~b_null)
        lower |= equal & less
        equal &= pc.fill_null(pc.equal(a, b), False).to_numpy(zero_copy_only=False) | (a_null & b_null)
    return lower


def _key_of(rows: pa.Table, mask: np.ndarray, engine: MergeEngine) -> dict[str, Any]:
    """The primary key of the first row `mask` picks, to name it in an error."""
    i = int(np.flatnonzero(mask)[0])
    return {k: rows.column(k)[i].as_py() for k in engine.schema.primary_keys}


def _updated(rows: pa.Table, values: Values, schema: pa.Schema, table_name: str) -> pa.Table:
    """`rows` with `values` set: literals as the column's type, expressions evaluated on the
    rows as they were; a value that does not fit the column is an error naming it."""
    expressions = {c: v for c, v in values.items() if isinstance(v, pc.Expression)}
    try:
        computed = ds.dataset(rows).to_table(columns=expressions) if expressions else None
    except (pa.ArrowInvalid, pa.ArrowTypeError, pa.ArrowNotImplementedError) as exc:
        raise SchemaMismatchError(f"update of {table_name}: the expressions {expressions} fail on the matching "
                                  f"rows: {exc}") from None
    for column, value in values.items():
        target = schema.field(column).type
        if column not in expressions:
            new = pa.repeat(_set_value(table_name, column, value, target), rows.num_rows)
        else:
            try:
                new = computed.column(column).cast(target)
            except (pa.ArrowInvalid, pa.ArrowTypeError, pa.ArrowNotImplementedError) as exc:
                raise SchemaMismatchError(f"update of {table_name}: the expression {value} for column '{column}' "
                                          f"({target}) gives values that do not fit: {exc}") from None
        rows = rows.set_column(rows.schema.get_field_index(column), schema.field(column), new)
    return rows


def _set_value(table_name: str, column: str, value: Any, target: pa.DataType) -> pa.Scalar:
    """`_literal` (ISO text for a date or time read as filters read it), its errors naming the
    update, the column and the value."""
    try:
        return _literal(from_text(column, value, target, "value"), target)
    except (pa.ArrowInvalid, pa.ArrowTypeError, pa.ArrowNotImplementedError, TypeError, ValueError,
            OverflowError) as exc:
        raise SchemaMismatchError(f"update of {table_name}: value {value!r} for column '{column}' "
                                  f"({target}) does not fit: {exc}") from None


def _literal(value: Any, target: pa.DataType) -> pa.Scalar:
    """A value to set, as a value of the column's type exactly (ValueError otherwise): a float
    into a DECIMAL is the decimal it prints as (as in filters), text into a column of another
    type is cast from its text (`"12.5"`, `"2024-01-01"`: what the command line passes), and a
    number is never truncated or rounded to infinity (pyarrow turns 2.5 into 2 for an integer
    column, 1e39 into inf for a FLOAT)."""
    value = plain_literal(value, target)  # numpy and pandas scalars as Python values, as filters take them
    if isinstance(value, dt.time) and pa.types.is_time(target):
        scalar = column_literal(value, target)
        if not isinstance(scalar, pa.Scalar):
            raise ValueError(f"it is finer than the column's unit ({target.unit}): it would be cut, which writes "
                             "refuse too")
        return scalar
    if isinstance(value, str) and (pa.types.is_integer(target) or pa.types.is_floating(target)):
        numbers, bad = text_numbers(pa.array([value]), target)   # Arrow's cast takes hex: '0xff' a TINYINT's -1
        if bad[0]:
            raise ValueError(f"{value!r} is no {target} value (decimal digits, within its range)")
        return numbers[0]
    if isinstance(value, str) and pa.types.is_decimal(target):  # exactly: Arrow's cast wraps ('-7e36')
        try:
            return text_decimals(pa.array([value]), target)[0]
        except DecimalTextRefused as exc:
            raise ValueError(str(exc)) from None
    if isinstance(value, str) and not (pa.types.is_string(target) or pa.types.is_large_string(target)):
        return pa.scalar(value).cast(target)
    if isinstance(value, (dict, list, tuple)) and pa.types.is_nested(target):
        return pa.scalar(_nested(value, target, "value"), type=target)
    if isinstance(value, dt.datetime) and pa.types.is_timestamp(target):
        scalar = timestamp_scalar(value, target)
        if scalar is INEXACT:
            raise ValueError(f"it is finer than the column's unit ({target.unit}) or beyond its range: it would be "
                             "cut, which writes refuse too")
        return scalar
    if isinstance(value, float) and pa.types.is_decimal(target) and math.isfinite(value):
        value = decimal.Decimal(repr(value))
    numeric = isinstance(value, (int, float, decimal.Decimal)) and not isinstance(value, bool)
    if numeric and (pa.types.is_date(target) or pa.types.is_timestamp(target)):
        raise ValueError("a date or timestamp is given as ISO text ('2024-01-05', '2024-01-05 10:30:00') or a "
                         "datetime value, not a number (which Arrow would take as days or units since 1970)")
    if numeric and pa.types.is_integer(target) and not (_finite(value) and value == int(value)):
        raise ValueError(f"{value!r} is not an integer")
    scalar = pa.scalar(value, type=target)
    if numeric and pa.types.is_floating(target) and _finite(value) and not math.isfinite(scalar.as_py()):
        raise ValueError(f"{value!r} is beyond the range of {target}")
    return scalar


def _nested(value: Any, t: pa.DataType, path: str) -> Any:
    """An ARRAY, MAP or ROW value with each element, key and field a `_literal` of its type, so
    nested values follow the top level's rules (pyarrow would cut 2.9 to 2 in an ARRAY<INT> and
    take 19723 as a DATE); a ROW field its type lacks is refused (pyarrow would leave it out and
    the field null: `{"zpi": ...}` for `zip`), as writes refuse it."""
    if pa.types.is_struct(t):
        if not isinstance(value, dict):
            raise ValueError(f"{path} is a {from_arrow(t)}: give it as a dict {{field: value}}")
        names = [t.field(i).name for i in range(t.num_fields)]
        unknown = [k for k in value if k not in names]
        if unknown:
            raise ValueError(f"{path} has field(s) {unknown} that its type {from_arrow(t)} does not have")
        return {name: _element(value.get(name), t.field(i).type, f"{path}.{name}") for i, name in enumerate(names)}
    if pa.types.is_map(t):
        pairs = value.items() if isinstance(value, dict) else value
        return [(_element(k, t.key_type, f"{path}{{key}}"), _element(v, t.item_type, f"{path}{{{k!r}}}"))
                for k, v in pairs]
    if pa.types.is_list(t) or pa.types.is_large_list(t):
        return [_element(item, t.value_type, f"{path}[{i}]") for i, item in enumerate(value)]
    raise ValueError(f"{path} is a {from_arrow(t)}, which takes no list or dict")


def _element(value: Any, t: pa.DataType, path: str) -> Any:
    """One element of a nested value (`_nested`), its errors naming where it is."""
    if value is None:
        return None
    if pa.types.is_nested(t) and isinstance(value, (dict, list, tuple)):
        return _nested(value, t, path)
    try:
        return _literal(from_text(path, value, t, "value"), t)
    except SchemaMismatchError:
        raise
    except (pa.ArrowInvalid, pa.ArrowTypeError, pa.ArrowNotImplementedError, TypeError, ValueError,
            OverflowError) as exc:
        raise ValueError(f"{path} ({from_arrow(t)}): {exc}") from None


def _finite(value: int | float | decimal.Decimal) -> bool:
    return value.is_finite() if isinstance(value, decimal.Decimal) else not isinstance(value, float) or math.isfinite(value)


def _unused_name(names: list[str], base: str) -> str:
    name = base
    while name in names:
        name = f"_{name}"
    return name


# ---- append tables (and deletes by position from primary-key tables): vectors or rewrites -------
def _file_changes(table: "Table", spec: Any, values: Values | None, latest: Snapshot) -> list[CommitMessage]:
    """The messages of a delete (or update) planned on `latest`: per (partition, bucket) holding
    a matching row its vectors marked or files replaced, plus the updated rows written anew."""
    schema = table.schema
    flt = parse_filter(spec, row_tracking.filterable(schema))
    scan = TableScan(table.file_io, table.path, schema, table.branch)
    candidates: dict[tuple[bytes, int], list[DataFileMeta]] = {}
    for split in scan.plan(latest, flt):
        candidates.setdefault((split.partition, split.bucket), []).extend(split.files)
    live_entries = scan.live_entries(latest)
    live: dict[tuple[bytes, int], list] = {}
    for e in live_entries:
        live.setdefault((e.partition, e.bucket), []).append(e)
    index = scan.index_manifest.read(latest.index_manifest)
    vector_index = [e for e in index if e.index_file.index_type == DELETION_VECTORS_INDEX]
    writer = table.new_write()
    writer.compactor()  # built once, before the threads share it
    vectors = table.options.deletion_vectors

    def one_bucket(item: tuple[tuple[bytes, int], list[DataFileMeta]]) -> tuple[CommitMessage | None, list[pa.Table]]:
        (partition, bucket), files = item
        entries = live[(partition, bucket)]
        directory = writer.bucket_dir(scan.partition_values(partition), bucket)
        place = AppendBucket(directory, [e.file for e in entries],
                             [e.index_file for e in vector_index if e.partition == partition and e.bucket == bucket],
                             writer.dirs.index_dir(directory))
        unaware = table.options.bucket == -1 and not table.primary_keys  # index files side by side
        inc, rewritten = (_mark(writer, place, files, flt, values, unaware) if vectors
                          else _rewrite(writer, place, files, flt, values))
        message = None if inc.is_empty() else CommitMessage(partition, bucket, entries[0].total_buckets, data=inc)
        return message, rewritten

    with ThreadPoolExecutor(write_threads(len(candidates), remote=not table.file_io.is_local),
                            thread_name_prefix="paimon-row-level") as pool:
        results = list(pool.map(one_bucket, candidates.items()))
    messages = [m for m, _ in results if m is not None]
    rewritten = [t for _, tables in results for t in tables]
    if rewritten:  # through the writer: rows land in the partition and bucket their values now give
        rows = conform(pa.concat_tables(rewritten), schema, table.name)
        messages += writer.write(rows, live_entries, index, compact=False)
    return messages


def _mark(writer: TableWrite, bucket: AppendBucket, files: list[DataFileMeta], flt: Filter,
          values: Values | None, unaware: bool) -> tuple[Increment, list[pa.Table]]:
    """The matching rows of `files` added to their deletion vectors (and, for an update, read
    and updated). A vector stays in the index file holding it; a file without one gets it in the
    bucket's index file, or, in a bucket-unaware table (which keeps an index file per change, by
    name), in a new one."""
    live = {f.file_name: f.row_count for f in bucket.files}
    bitmap64 = writer.options.get("deletion-vectors.bitmap64")
    vectors = [DeletionVectorMaintainer(writer.file_io, bucket.index_dir, index, live, bitmap64)
               for index in bucket.dv_indexes]
    holder = {name: v for v in vectors for name in live if name in v}
    fresh: DeletionVectorMaintainer | None = None
    touched: list[DeletionVectorMaintainer] = []
    updated: list[pa.Table] = []
    for f in files:
        vector = holder.get(f.file_name)
        if vector is None and not unaware and vectors:
            vector = vectors[0]
        if vector is None:
            fresh = fresh or DeletionVectorMaintainer(writer.file_io, bucket.index_dir, None, live, bitmap64)
            vector = fresh
        positions = vector.live_positions(f.file_name, _matching_positions(writer, bucket.bucket_dir, f, flt))
        if not len(positions):
            continue
        vector.mark(f.file_name, positions)
        if vector not in touched:
            touched.append(vector)
        if values:
            rows = _file_rows(writer, bucket.bucket_dir, f).take(from_numpy(positions))
            updated.append(_updated(rows, values, writer.schema.arrow_schema(), writer.table_name))
    inc = Increment()
    for vector in touched:
        added, removed = vector.write(writer.paths)
        inc.new_index_files.extend(added)
        inc.deleted_index_files.extend(removed)
    return inc, updated


def _rewrite(writer: TableWrite, bucket: AppendBucket, files: list[DataFileMeta], flt: Filter,
             values: Values | None) -> tuple[Increment, list[pa.Table]]:
    """Each of `files` holding a matching row replaced: a delete writes it again without them
    (in place, keeping its rows' order and row ids); an update returns all its rows, the
    matching ones updated, for the writer."""
    inc, rewritten = Increment(), []
    for f in files:
        positions = _matching_positions(writer, bucket.bucket_dir, f, flt)
        if not len(positions):
            continue
        inc.deleted_files.append(f)
        if values is None:
            inc.new_files.extend(writer.compactor().rewrite_without(bucket, f, positions))
            continue
        rows = _file_rows(writer, bucket.bucket_dir, f)
        new = _updated(rows.take(from_numpy(positions)), values, writer.schema.arrow_schema(), writer.table_name)
        # row i from the file, or its update (Arrow's replace_with_mask takes no ARRAY, MAP or ROW)
        source = np.arange(rows.num_rows)
        source[positions] = rows.num_rows + np.arange(len(positions))
        rewritten.append(pa.Table.from_arrays(
            [pa.chunked_array(rows.column(n).chunks + new.column(n).chunks, rows.schema.field(n).type).take(
                from_numpy(source)) if n in values else rows.column(n) for n in rows.column_names], schema=rows.schema))
    return inc, rewritten


def _file_rows(writer: TableWrite, bucket_dir: str, f: DataFileMeta) -> pa.Table:
    """All rows of file `f` (deleted ones included), as the current schema has them."""
    return read_evolved(writer.file_io, TableDirs.data_file(bucket_dir, f), writer.compactor().schema_of(f.schema_id),
                        writer.schema, writer.schema.field_names, file_size=f.file_size, row_count=f.row_count)


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
