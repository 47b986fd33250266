"""Changing a table's schema: add, rename, drop and widen columns, drop NOT NULL, options, comment.

    with table.update_schema() as update:
        update.add_column("coupon", pa.string(), after="amount")
        update.rename_column("amount", "total")
    # one new schema file, schema/schema-<n+1>

Field ids are kept: a renamed column is the same field, an added column (or nested ROW field)
gets a new id, a dropped id is never reused. Data files keep the id of the schema they were
written with and readers convert them by field id (`datafile.evolve`), so no file is
rewritten. The rules are Paimon's (its `SchemaManager`), stricter in one place: a type change
must be a lossless widening, because every old file is read through that cast and a narrowing
would change or fail old values.

A schema change is committed like a snapshot: `schema-<n+1>` is created only if absent; when
another writer took the id first, the changes are applied again to its schema (they are
recorded as operations, not as a finished schema) and the commit retried.
"""
from __future__ import annotations

import time
from dataclasses import dataclass, replace
from typing import TYPE_CHECKING, Callable, Union

import pyarrow as pa

from .default_values import default_scalar
from .errors import InvalidOptionError, PaimonError, SchemaMismatchError
from .options import refuse_unimplemented
from .schema import (SchemaManager, TableSchema, cast_type_check, check_changelog_producer, check_moves_kept,
                     column_option, java_split)
from .system_fields import is_system_field, reserved_names_message
from .types import DataField, DataType, assign_field_ids, from_arrow, parse_type

if TYPE_CHECKING:
    from .table import Table

ColumnPath = Union[str, tuple[str, ...]]
TypeLike = Union[pa.DataType, str, DataType]

# Options Paimon cannot change once a table has snapshots (CoreOptions' @Immutable keys), plus
# those whose change would need a rewrite we do not implement, each with the reason.
_FIXED_OPTIONS = {key: "Paimon does not support changing it" for key in (
    "type", "bucket-key", "bucket-function.type", "data-file.path-directory", "merge-engine",
    "sequence.snapshot-ordering", "aggregation.remove-record-on-delete", "partial-update.remove-record-on-delete",
    "partial-update.remove-record-on-sequence-group", "rowkind.field", "primary-key", "primary-key.nullable",
    "partition", "dynamic-bucket.initial-buckets", "force-lookup", "row-tracking.enabled",
    "data-evolution.enabled", "index-file-in-data-file-dir", "blob-field", "blob-descriptor-field",
    "blob-view-field", "blob-external-storage-path", "blob-external-storage-field", "pk-clustering-override", "path")}
_FIXED_OPTIONS.update({
    "deletion-vectors.enabled": "switching deletion vectors on or off needs every bucket fully compacted first "
                                "(Paimon refuses it too, unless 'deletion-vectors.modifiable' is set: then its "
                                "readers miss the rows not compacted yet, or read old versions twice)",
    "deletion-vectors.bitmap64": "existing deletion-vector index files keep their bitmap format",
    "manifest.format": "Java 1.4 reads every metadata file in the format it names, so after a change it can read "
                       "none of the table's (it accepts the change, then fails every read and write)",
})

_INT_RANK = {"TINYINT": 0, "SMALLINT": 1, "INT": 2, "BIGINT": 3}
_INT_DIGITS = {"TINYINT": 3, "SMALLINT": 5, "INT": 10, "BIGINT": 19}
_EXACT_IN = {"FLOAT": ("TINYINT", "SMALLINT"), "DOUBLE": ("TINYINT", "SMALLINT", "INT", "FLOAT")}
_WIDENINGS = ("TINYINT -> SMALLINT -> INT -> BIGINT; integers to a DECIMAL with room for their digits; "
              "TINYINT/SMALLINT -> FLOAT; TINYINT/SMALLINT/INT/FLOAT -> DOUBLE; DECIMAL(p, s) -> DECIMAL(p', s') "
              "with s' >= s and p' - s' >= p - s; CHAR/VARCHAR(n) -> VARCHAR(m >= n); BINARY/VARBINARY(n) -> "
              "VARBINARY(m >= n); TIME/TIMESTAMP precision up; element and value types of ARRAY, MULTISET, MAP")


def widening_error(old: DataType, new: DataType) -> str | None:
    """Why `old` cannot be read as `new` without losing information, or None when it can
    (nullability is not judged here)."""
    if old.copy(True) == new.copy(True):
        return None
    o, n = old.root, new.root
    if o in ("ARRAY", "MULTISET") and n == o:
        return widening_error(old.element, new.element)
    if o == n == "MAP":
        if old.key.copy(True) != new.key.copy(True):
            return f"the key type of a MAP cannot change ({old.key} -> {new.key})"
        return widening_error(old.value, new.value)
    if o == "ROW" or n == "ROW":
        return "a ROW changes field by field: add, rename, drop or widen its fields by their path"
    ok = (
        (o in _INT_RANK and n in _INT_RANK and _INT_RANK[n] >= _INT_RANK[o])
        or (o in _INT_RANK and n == "DECIMAL" and new.precision - new.scale >= _INT_DIGITS[o])
        or (o in _EXACT_IN.get(n, ()))
        or (o == n == "DECIMAL" and new.scale >= old.scale and new.precision - new.scale >= old.precision - old.scale)
        or (o in ("CHAR", "VARCHAR") and n == "VARCHAR" and new.precision >= old.precision)
        or (o in ("BINARY", "VARBINARY") and n == "VARBINARY" and new.precision >= old.precision)
        or (o == n and o in ("TIME", "TIMESTAMP", "TIMESTAMP_LTZ") and new.precision >= old.precision)
    )
    if ok:
        return None
    return (f"{old.sql()} cannot be widened to {new.sql()} without losing information (every file written "
            f"before would be read through that cast); lossless widenings: {_WIDENINGS}")


@dataclass
class _Draft:
    """The schema being edited: what the recorded changes act on."""
    fields: list[DataField]
    highest_field_id: int
    options: dict[str, str]
    comment: str | None
    primary_keys: tuple[str, ...]
    partition_keys: tuple[str, ...]
    has_snapshots: bool

    def keeps_type(self, name: str) -> bool:
        """Whether top-level column `name` is hashed to partitions or buckets by its type (a
        key, or a `bucket-key` column: a widened -3 hashes to another bucket, and Java's
        filters then prune the bucket its old rows are in)."""
        raw = self.options.get("bucket-key")
        bucket_keys = java_split(raw, ",") if raw and raw.strip() else []
        return name in self.partition_keys + self.primary_keys or name in bucket_keys


def _path(column: ColumnPath) -> tuple[str, ...]:
    path = (column,) if isinstance(column, str) else tuple(column)
    if not path or not all(isinstance(p, str) and p for p in path):
        raise SchemaMismatchError(f"invalid column path {column!r}: give a name or a tuple of names")
    return path


def _dotted(path: tuple[str, ...]) -> str:
    return ".".join(path)


def _to_type(value: TypeLike) -> DataType:
    if isinstance(value, DataType):
        return value
    if isinstance(value, pa.DataType):
        return from_arrow(value)
    if isinstance(value, str):
        return parse_type(value)
    raise SchemaMismatchError(f"expected a pyarrow type or a Paimon type name, got {value!r}")


def _edit_siblings(fields: list[DataField], path: tuple[str, ...], edit: Callable[[list[DataField], str], None],
                   full: tuple[str, ...] | None = None) -> None:
    """Apply `edit(siblings, name)` to the field list that holds `path[-1]`, rebuilding the ROW
    types on the way (nested fields live inside their parent's type)."""
    full = full or path
    if len(path) == 1:
        edit(fields, path[0])
        return
    i = _index(fields, path[0], full[:len(full) - len(path) + 1])
    fields[i] = replace(fields[i], type=_edit_inside(fields[i].type, path[1:], edit, full))


def _edit_inside(dtype: DataType, path: tuple[str, ...], edit: Callable[[list[DataField], str], None],
                 full: tuple[str, ...]) -> DataType:
    """`dtype` (the type at the part of `full` before `path`) with `edit` applied to the ROW
    fields `path` leads to: through an ARRAY's (MULTISET's) `element` and a MAP's `value`, as
    Java's paths run (`items.element.price`)."""
    at = full[:len(full) - len(path)]
    if dtype.root == "ROW":
        inner = list(dtype.fields)
        _edit_siblings(inner, path, edit, full)
        return replace(dtype, fields=tuple(inner))
    step = {"ARRAY": "element", "MULTISET": "element", "MAP": "value"}.get(dtype.root)
    if step is not None and path[0] == step and len(path) > 1:
        part = "element" if step == "element" else "value"
        return replace(dtype, **{part: _edit_inside(getattr(dtype, part), path[1:], edit, full)})
    hint = f" (its nested fields are under '{_dotted(at + (step,))}')" if step else ""
    raise SchemaMismatchError(f"column '{_dotted(at)}' is {dtype}, not a ROW: '{_dotted(full)}' does not name a "
                              f"nested field{hint}")


def _index(fields: list[DataField], name: str, path: tuple[str, ...]) -> int:
    for i, f in enumerate(fields):
        if f.name == name:
            return i
    raise SchemaMismatchError(f"column '{_dotted(path)}' does not exist (columns there: {[f.name for f in fields]})")


def _absent(fields: list[DataField], name: str, path: tuple[str, ...], renamed: str | None = None) -> None:
    if any(f.name == name for f in fields):
        raise SchemaMismatchError(f"column '{_dotted(path)}' already exists")
    if len(path) == 1 and is_system_field(name):
        raise SchemaMismatchError(reserved_names_message([name]))
    _no_case_twin([f.name for f in fields if f.name != renamed], name, path)


def _no_case_twin(names: list[str], name: str, path: tuple[str, ...]) -> None:
    """Refuse a column whose name differs from a sibling's only in case: Spark resolves names
    case-insensitively by default, and could then select neither (AMBIGUOUS_REFERENCE)."""
    twin = next((n for n in names if n != name and n.lower() == name.lower()), None)
    if twin is not None:
        raise SchemaMismatchError(
            f"column '{_dotted(path)}' differs from the existing column '{_dotted(path[:-1] + (twin,))}' only in case: "
            "Spark (case-insensitive by default) could select neither; use that column, or another name")


class SchemaUpdate:
    """Changes to one table's schema, committed together as one new schema file.

    Use as a context manager (commits on a clean exit) or call `commit()`. Columns are named
    by a string, or for nested ROW fields by a tuple path (`("address", "zip")`); types are
    pyarrow types or Paimon type names (`"BIGINT"`, `"DECIMAL(12, 2)"`).
    """

    def __init__(self, table: "Table"):
        self._table = table
        self._changes: list[Callable[[_Draft], None]] = []

    # ---- columns ----------------------------------------------------------------------------
    def add_column(self, column: ColumnPath, type: TypeLike, comment: str | None = None,
                   first: bool = False, after: str | None = None) -> "SchemaUpdate":
        """Add a nullable column (at the end, `first`, or `after` a sibling): files written
        before read it as null. With the table option `add-column-before-partition` = true a
        top-level column added without a position goes before the first partition column, as
        Java places it."""
        path = _path(column)
        dtype = _to_type(type)
        if not dtype.nullable:
            raise SchemaMismatchError(f"column '{_dotted(path)}' cannot be added as NOT NULL: the rows written "
                                      "before have no value for it")
        if first and after is not None:
            raise SchemaMismatchError("give first=True or after=, not both")

        def change(d: _Draft) -> None:
            def edit(siblings: list[DataField], name: str) -> None:
                _absent(siblings, name, path)
                new = _new_field(d, name, dtype, comment)
                if first:
                    at = 0
                elif after is not None:
                    at = _index(siblings, after, path[:-1] + (after,)) + 1
                elif len(path) == 1 and str(d.options.get("add-column-before-partition", "")).lower() == "true":
                    at = next((i for i, f in enumerate(siblings) if f.name in d.partition_keys), len(siblings))
                else:
                    at = len(siblings)
                siblings.insert(at, new)
            _edit_siblings(d.fields, path, edit)
        self._changes.append(change)
        return self

    def rename_column(self, column: ColumnPath, new_name: str) -> "SchemaUpdate":
        """Rename a column (or nested field); its id, and so its data, stay. A primary key
        column is renamed in the primary key too, as Java's SchemaManager does (data files keep
        their `_KEY_<old name>` columns, read by field id); a partition column is not."""
        path = _path(column)

        def change(d: _Draft) -> None:
            if len(path) == 1 and path[0] in d.partition_keys:
                raise SchemaMismatchError(f"cannot rename partition column '{path[0]}' (Paimon refuses it: "
                                          "partition values name the partition directories)")

            def edit(siblings: list[DataField], name: str) -> None:
                i = _index(siblings, name, path)
                _absent(siblings, new_name, path[:-1] + (new_name,), renamed=name)
                siblings[i] = replace(siblings[i], name=new_name)
            _edit_siblings(d.fields, path, edit)
            if len(path) == 1:
                d.primary_keys = tuple(new_name if k == path[0] else k for k in d.primary_keys)
                _rename_field_options(d.options, path[0], new_name)
        self._changes.append(change)
        return self

    def drop_column(self, column: ColumnPath) -> "SchemaUpdate":
        """Drop a column (or nested field): it is no longer read; its id is never reused."""
        path = _path(column)

        def change(d: _Draft) -> None:
            if len(path) == 1 and path[0] in d.partition_keys + d.primary_keys:
                raise SchemaMismatchError(f"cannot drop partition key or primary key column '{path[0]}'")

            def edit(siblings: list[DataField], name: str) -> None:
                del siblings[_index(siblings, name, path)]
                if not siblings:
                    what = "table" if len(path) == 1 else f"ROW '{_dotted(path[:-1])}'"
                    raise SchemaMismatchError(f"cannot drop '{_dotted(path)}': it is the last field of the {what}")
            _edit_siblings(d.fields, path, edit)
            if len(path) == 1:
                for key in [k for k in d.options if (column_option(k) or ("",))[0] == path[0]]:
                    del d.options[key]
        self._changes.append(change)
        return self

    def update_column(self, column: ColumnPath, type: TypeLike | None = None, nullable: bool | None = None,
                      comment: str | None = None) -> "SchemaUpdate":
        """Widen a column's type (losslessly, see `widening_error`), drop its NOT NULL
        (`nullable=True`), or set its comment."""
        path = _path(column)
        new_type = None if type is None else _to_type(type)
        if nullable is False:
            raise SchemaMismatchError(f"column '{_dotted(path)}' cannot become NOT NULL: files written before may "
                                      "hold nulls (Paimon refuses it by default too)")

        def change(d: _Draft) -> None:
            key = len(path) == 1 and path[0] in d.partition_keys + d.primary_keys
            if len(path) == 1 and d.keeps_type(path[0]) and new_type is not None:
                raise SchemaMismatchError(f"cannot change the type of key column '{path[0]}' (Paimon refuses it: "
                                          "keys are hashed to buckets and partitions by their type)")
            if key and nullable:
                raise SchemaMismatchError(f"primary key column '{path[0]}' must stay NOT NULL")

            def edit(siblings: list[DataField], name: str) -> None:
                i = _index(siblings, name, path)
                f = siblings[i]
                dtype = f.type
                if new_type is not None:
                    reason = widening_error(dtype, new_type)
                    if reason:
                        raise SchemaMismatchError(f"cannot change column '{_dotted(path)}': {reason}")
                    narrowed = _nested_not_null_added(dtype, new_type, _dotted(path))
                    if narrowed:
                        raise SchemaMismatchError(f"cannot change column '{_dotted(path)}' to {new_type}: it makes "
                                                  f"'{narrowed}' NOT NULL, and files written before may hold nulls "
                                                  "there (give the type with nullable elements and values)")
                    dtype = _keep_nested_ids(dtype, new_type).copy(dtype.nullable)
                if nullable:
                    dtype = dtype.copy(True)
                siblings[i] = replace(f, type=dtype, description=f.description if comment is None else comment)
            _edit_siblings(d.fields, path, edit)
        self._changes.append(change)
        return self

    def set_default(self, column: str, value: str | None) -> "SchemaUpdate":
        """Give a top-level column a default value (text, cast as Paimon casts a STRING; None
        removes it): Java's writers and ours then write it in place of each null of the column
        (default_values.py). Files written before keep their nulls."""
        path = _path(column)
        if len(path) != 1:
            raise SchemaMismatchError(f"a default value is for a top-level column, not '{_dotted(path)}' "
                                      "(Paimon's writers fill only those)")

        def change(d: _Draft) -> None:
            def edit(siblings: list[DataField], name: str) -> None:
                i = _index(siblings, name, path)
                siblings[i] = replace(siblings[i], default_value=None if value is None else str(value))
                if value is not None:
                    default_scalar(siblings[i])
            _edit_siblings(d.fields, path, edit)
        self._changes.append(change)
        return self

    def union_by_name(self, schema: pa.Schema) -> "SchemaUpdate":
        """Evolve towards an Arrow schema (Delta's mergeSchema): columns and ROW fields it has
        that the table lacks are added (nullable), types it widens are widened; columns it
        lacks stay. A narrower or incompatible type is an error naming the column."""
        def change(d: _Draft) -> None:
            _union(d, d.fields, list(schema), ())
        self._changes.append(change)
        return self

    # ---- table ------------------------------------------------------------------------------
    def set_option(self, key: str, value: str) -> "SchemaUpdate":
        def change(d: _Draft) -> None:
            if d.options.get(key) != str(value):
                _check_option_change(d, key, str(value))
                d.options[key] = str(value)
                refuse_unimplemented({key: str(value)})
        self._changes.append(change)
        return self

    def remove_option(self, key: str) -> "SchemaUpdate":
        def change(d: _Draft) -> None:
            if key in d.options:
                _check_option_change(d, key)
                del d.options[key]
        self._changes.append(change)
        return self

    def set_comment(self, comment: str | None) -> "SchemaUpdate":
        def change(d: _Draft) -> None:
            d.comment = comment
        self._changes.append(change)
        return self

    # ---- committing -------------------------------------------------------------------------
    def apply(self, base: TableSchema, has_snapshots: bool) -> TableSchema:
        """The schema these changes make of `base` (id `base.id + 1`), validated; `base` itself
        when they change nothing."""
        draft = _Draft(list(base.fields), base.highest_field_id, dict(base.options), base.comment,
                       base.primary_keys, base.partition_keys, has_snapshots)
        for change in self._changes:
            change(draft)
        new = replace(base, id=base.id + 1, fields=tuple(draft.fields), highest_field_id=draft.highest_field_id,
                      primary_keys=draft.primary_keys, options=draft.options, comment=draft.comment,
                      time_millis=int(time.time() * 1000))
        if (new.fields, new.options, new.comment) == (base.fields, base.options, base.comment):
            return base
        try:
            new.validate()
            check_changelog_producer(new, base)
            check_moves_kept(new, base)
        except PaimonError as exc:
            raise type(exc)(f"after this schema change: {exc}") from None
        return new

    def commit(self, max_retries: int = 10) -> TableSchema:
        """Write the new schema file and point the table at it; returns the new (or unchanged)
        schema. A concurrent schema change makes this apply the changes again on top of it."""
        table = self._table
        manager: SchemaManager = table.schema_manager
        for _ in range(max_retries + 1):
            base = manager.latest()
            new = self.apply(base, table.snapshot_manager.latest_id() is not None)
            if new is base:
                table.schema = base
                return base
            if manager.try_commit(new):
                table.schema = new
                return new
        raise PaimonError(f"schema change of {table.path} lost the race for a new schema id "
                          f"{max_retries + 1} times; try again")

    def __enter__(self) -> "SchemaUpdate":
        return self

    def __exit__(self, exc_type, exc, tb) -> None:
        if exc_type is None:
            self.commit()


# Options naming the directory of a partition's files, which are found by it (their path is
# not stored): Java accepts a change and then looks for every file written before in the wrong place.
_PARTITION_PATH_OPTIONS = ("partition.default-name", "partition.legacy-name")
# Retractions ignored while these are true are still in the files not compacted since: Java
# refuses to turn 'ignore-delete' and 'ignore-update-before' off (true -> false); we refuse
# removing them too (the default is false), and turning off the engine-specific aliases.
_ONE_WAY_OPTIONS = ("ignore-delete", "ignore-update-before", "first-row.ignore-delete", "deduplicate.ignore-delete",
                    "partial-update.ignore-delete")


def _check_option_change(d: _Draft, key: str, value: str | None = None) -> None:
    if not d.has_snapshots:
        return
    if key in _FIXED_OPTIONS:
        raise InvalidOptionError(f"table option '{key}' cannot be changed on a table with snapshots: "
                                 f"{_FIXED_OPTIONS[key]}")
    if key == "bucket":
        _check_bucket_change(d.options.get("bucket"), value)
    if key in _PARTITION_PATH_OPTIONS and d.partition_keys:
        raise InvalidOptionError(
            f"table option '{key}' cannot be changed on a partitioned table with snapshots: the files written "
            "before are found by the partition directory names it makes (Java accepts the change, then cannot "
            "find them); copy the rows to a new table to change it")
    if key in _ONE_WAY_OPTIONS and str(d.options.get(key, "false")).strip().lower() == "true" and \
            (value is None or value.strip().lower() != "true"):
        raise InvalidOptionError(
            f"table option '{key}' cannot change from true to false on a table with snapshots (Paimon refuses "
            "it too): the retractions ignored until now would count again wherever they are not compacted away")


def _check_bucket_change(old: str | None, new: str | None) -> None:
    """A fixed bucket count may change (the files keep theirs until `Table.rescale` rewrites
    them, see rescale.py), as in Paimon; the bucket mode may not."""
    def count(text: str | None) -> int | None:
        try:
            return int(str(text).strip())
        except ValueError:
            return None
    before, after = count(old), count(new)
    if new is None or before is None or after is None or before <= 0 or after <= 0:
        raise InvalidOptionError(
            f"table option 'bucket' can change from one fixed count to another ({old} -> {new} cannot): rows are "
            "hashed to buckets by the count, and a table with snapshots keeps its bucket mode (dynamic -1, postpone "
            "-2); after a change, Table.rescale() rewrites the partitions written before it")


def _rename_field_options(options: dict[str, str], old: str, new: str) -> None:
    """Options naming column `old` name `new` after its rename, as Java's SchemaManager rewrites
    them (applyRenameColumnsToOptions): the names in 'bucket-key' and 'sequence.field', the
    columns in a sequence group's key and value (`fields.<a,b>.sequence-group` = 'c,d'), and the
    key of every other `fields.<old>.*` option (Java moves only the aggregate-function,
    ignore-retract, distinct and list-agg-delimiter ones and refuses the rename with another;
    moving them all keeps the table one Java opens). A `nested-key` value names fields of the
    nested ROW, not columns, so it stays (Java renames its names too). Other options naming the
    column (rowkind.field, ...) are caught by the validation of the new schema, as in Java."""
    def renamed(names: list[str]) -> str:
        return ",".join(new if n == old else n for n in names)

    for key in ("bucket-key", "sequence.field"):
        value = options.get(key)
        if value is not None and value.strip():
            options[key] = renamed(java_split(value, ","))
    for key in list(options):
        value = options[key]
        suffix = next((sfx for sfx in (".sequence-group", ".nested-key")
                       if key.startswith("fields.") and key.endswith(sfx) and len(key) > len("fields.") + len(sfx)),
                      None)
        if suffix is not None:
            columns = key[len("fields."):-len(suffix)]
            del options[key]
            if suffix == ".sequence-group":
                value = renamed(java_split(value, ","))
            options[f"fields.{renamed(java_split(columns, ','))}{suffix}"] = value
        elif (column_option(key) or ("",))[0] == old:
            del options[key]
            options[f"fields.{new}.{column_option(key)[1]}"] = value


def _keep_nested_ids(old: DataType, new: DataType, keep_nullability: bool = False) -> DataType:
    """`new` (a widening of `old`, so the same shape) with `old`'s nested field ids; with
    `keep_nullability` also with `old`'s nullability at every nested level, as Java's merge
    keeps the table's (`SchemaMergingUtils.merge`): an input's NOT NULL elements (Spark's
    `array(1)`) must not make the null elements of the files written before unreadable."""
    if old.root in ("ARRAY", "MULTISET"):
        new = replace(new, element=_keep_nested_ids(old.element, new.element, keep_nullability))
    elif old.root == "MAP":
        new = replace(new, key=old.key, value=_keep_nested_ids(old.value, new.value, keep_nullability))
    return new.copy(old.nullable) if keep_nullability else new


def _nested_not_null_added(old: DataType, new: DataType, path: str) -> str | None:
    """The path of an element or map value `new` (a widening of `old`) makes NOT NULL where
    `old`'s is nullable, or None: the files written before may hold nulls there."""
    parts = {"ARRAY": ("element",), "MULTISET": ("element",), "MAP": ("value",)}.get(old.root, ())
    for part in parts:
        o, n = getattr(old, part), getattr(new, part)
        if o.nullable and not n.nullable:
            return f"{path}.{part}"
        inner = _nested_not_null_added(o, n, f"{path}.{part}")
        if inner:
            return inner
    return None


def _new_field(d: _Draft, name: str, dtype: DataType, comment: str | None = None) -> DataField:
    """A field with the next id; its nested ROW fields get the ids after it (as Paimon assigns)."""
    counter = [d.highest_field_id + 1]
    field_id = counter[0]
    typed = assign_field_ids(dtype, counter)
    d.highest_field_id = counter[0]
    return DataField(field_id, name, typed, comment)


def _union_rows(d: _Draft, current: DataType, incoming: pa.DataType, path: tuple[str, ...]) -> DataType | None:
    """`current` with the fields `incoming` brings to its ROWs (also ROWs inside ARRAY elements
    and MAP values, as Java evolves them), or None when `current` holds no ROW to merge into."""
    if current.root == "ROW" and pa.types.is_struct(incoming):
        inner = list(current.fields)
        _union(d, inner, list(incoming), path)
        return replace(current, fields=tuple(inner))
    if current.root in ("ARRAY", "MULTISET") and (pa.types.is_list(incoming) or pa.types.is_large_list(incoming)):
        element = _union_rows(d, current.element, incoming.value_type, path + ("element",))
        return None if element is None else replace(current, element=element)
    if current.root == "MAP" and pa.types.is_map(incoming):
        value = _union_rows(d, current.value, incoming.item_type, path + ("value",))
        return None if value is None else replace(current, value=value)
    return None


def _union(d: _Draft, fields: list[DataField], incoming: list[pa.Field], parent: tuple[str, ...]) -> None:
    """Edit `fields` in place towards `incoming` (see `SchemaUpdate.union_by_name`)."""
    by_name = {f.name: i for i, f in enumerate(fields)}
    for af in incoming:
        if pa.types.is_null(af.type):
            continue  # an all-null input column tells no type: it adds nothing and fits any column
        path = parent + (af.name,)
        wanted = from_arrow(af.type)
        if af.name not in by_name:
            if is_system_field(af.name) and not parent:
                raise SchemaMismatchError(reserved_names_message([af.name]))
            _no_case_twin([f.name for f in fields], af.name, path)
            fields.append(_new_field(d, af.name, wanted))
            continue
        current = fields[by_name[af.name]]
        merged = _union_rows(d, current.type, af.type, path)
        if merged is not None:
            fields[by_name[af.name]] = replace(current, type=merged)
            continue
        if widening_error(wanted, current.type) is None:
            continue  # the table's type already holds these values
        reason = widening_error(current.type, wanted)
        if not reason and not parent and d.keeps_type(af.name):
            reason = "key columns keep their type (they are hashed to buckets and partitions by it)"
        if reason:
            try:  # a type the write casts into the column's (int into DECIMAL, bigint into DOUBLE)
                cast_type_check(_dotted(path), wanted, current.type)
                continue  # keeps the column's type, as Java's merge without type widening
            except SchemaMismatchError:
                pass
            raise SchemaMismatchError(f"cannot merge the type of column '{_dotted(path)}' ({af.type}) into the "
                                      f"table's {current.type}: {reason}")
        fields[by_name[af.name]] = replace(current, type=_keep_nested_ids(current.type, wanted, keep_nullability=True))
