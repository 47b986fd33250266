"""Input partitions of the "paimon" source and what an executor does with one.

The driver plans read units (splits of files with their deletion-vector locations: one file,
or a bucket that must be merged by key), packs consecutive units into input partitions of
about `source.split.target-size` bytes (each file also costs `source.split.open-file-cost`,
as in Paimon), shrinking the target for small reads so they still spread over
`source.split.min-partitions` tasks (default: the driver's CPU count; Spark's file sources
and Paimon's Spark scan do the same with the default parallelism), and Spark ships each
partition to an executor. There `read_partition` opens the table directory, reads the units with the
core's `SplitReader` (schema evolution, deletion vectors, merge-on-read), and yields Arrow
record batches in exactly the Arrow schema Spark expects. Nothing here touches a
SparkContext, so it runs the same under Spark Connect.
"""
from __future__ import annotations

import json
import os
from dataclasses import dataclass, replace
from typing import Iterator, Mapping, Sequence

import pyarrow as pa
from pyspark.sql.datasource import InputPartition
from pyspark.sql.pandas.types import from_arrow_schema, to_arrow_schema
from pyspark.sql.types import ArrayType, DataType as SparkType, MapType, StructField, StructType

from paimon_streaming import row_tracking
from paimon_streaming.change_read import read_unit, to_output
from paimon_streaming.datafile import conform, finer_unit, rows_only
from paimon_streaming.errors import InvalidOptionError, PaimonError, SchemaChangedError, SchemaMismatchError
from paimon_streaming.fileio import FileIO
from paimon_streaming.predicate import parse_filter
from paimon_streaming.read import SplitReader
from paimon_streaming.scan import TableScan
from paimon_streaming.schema import TableSchema
from paimon_streaming.streaming_scan import ReadUnit
from paimon_streaming.types import DataField, DataType, map_arrow_leaves

from .spark_casts import ANSI, SESSION_TIME_ZONE, CastSettings, SparkCastRefused, spark_cast

_KIND = "__paimon_row_kind"
FIELD_ID = "paimon.field.id"    # StructField metadata: the Paimon field a column of a read stands for
SCHEMA_ID = "paimon.schema.id"  # and the table schema it was defined with
MAX_BATCH_ROWS = 64 * 1024


class PaimonInputPartition(InputPartition):
    """Consecutive read units of one micro-batch or batch read (picklable); `fallback`: units of
    the table's fallback branch (fallback_read.py)."""

    def __init__(self, index: int, units: list[ReadUnit], fallback: bool = False):
        self.index = index
        self.units = units
        self.fallback = fallback

    def __repr__(self) -> str:
        return f"PaimonInputPartition(index={self.index}, units={len(self.units)}, " \
               f"files={sum(u.files for u in self.units)})"


MIN_PARTITIONS = "source.split.min-partitions"


def read_min_partitions(options: Mapping[str, str]) -> int:
    """`source.split.min-partitions` of a read (Spark lower-cases option keys)."""
    raw = options.get(MIN_PARTITIONS)
    if raw is None or str(raw).strip() == "":
        return os.cpu_count() or 1
    try:
        value = int(str(raw).strip())
    except ValueError:
        value = 0
    if value < 1:
        raise InvalidOptionError(f"option '{MIN_PARTITIONS}' must be a positive integer, got {raw!r}")
    return value


def pack(units: Sequence[ReadUnit], target_size: int, open_file_cost: int,
         min_partitions: int = 1) -> list[PaimonInputPartition]:
    """Consecutive units into partitions of about `target_size` bytes (order is kept).

    The target shrinks to total / `min_partitions` (never below `open_file_cost`), so a read
    of few small files still gets up to `min_partitions` tasks rather than one."""
    weights = [u.bytes + open_file_cost * u.files for u in units]
    target = min(target_size, max(open_file_cost, sum(weights) // max(1, min_partitions)))
    out: list[PaimonInputPartition] = []
    current: list[ReadUnit] = []
    weight = 0
    for u, w in zip(units, weights):
        if current and weight + w > target:
            out.append(PaimonInputPartition(len(out), current))
            current, weight = [], 0
        current.append(u)
        weight += w
    if current:
        out.append(PaimonInputPartition(len(out), current))
    return out


@dataclass(frozen=True)
class ReadContext:
    """Everything an executor needs besides the units; pickled with the reader."""
    location: str
    schema_json: str             # the table schema the units were planned with
    output_json: str             # the Spark schema of the result
    columns: tuple[tuple[str, str | None], ...]   # output name -> table column (None: the row kind)
    row_kind_column: str | None = None
    filter_terms: tuple = ()
    branch: str | None = None    # whose schema files the units' files were written with
    merge_schema_json: str | None = None  # time travel: the snapshot's schema under today's options

    @staticmethod
    def create(location: str, schema: TableSchema, output: StructType, row_kind_column: str | None,
               table_name: str, branch: str | None = None, ids_of: TableSchema | None = None) -> "ReadContext":
        """The context of a read of `schema` answering in `output`. A column of `output` carrying a
        field id (`with_field_ids`) reads that field of `ids_of` (default `schema`; a fallback
        branch's read resolves the ids in the main schema, then matches the names), whatever it
        is named now; the others are matched by name (a read schema the user gave)."""
        names = schema.field_names
        if row_tracking.enabled(schema.options) and not schema.primary_keys:
            names = names + list(row_tracking.NAMES)  # read with the rows when asked for
        lower = {}
        for n in names:
            lower.setdefault(n.lower(), []).append(n)
        by_id = {f.id: f.name for f in (ids_of or schema).fields}
        columns = []
        for f in output.fields:
            if row_kind_column is not None and f.name == row_kind_column:
                columns.append((f.name, None))
                continue
            name = f.name if FIELD_ID not in f.metadata else _named_by_id(f, by_id, f"Paimon table {table_name}")
            if name in names or len(lower.get(name.lower(), [])) == 1:
                column = name if name in names else lower[name.lower()][0]
                if column in schema.field_names:  # (a fallback's nested ids: checked in the main read's)
                    _check_nested_names(f.dataType, schema.field(column).type, column, table_name, ids_of is None)
                columns.append((f.name, column))
            else:
                raise SchemaMismatchError(
                    f"column '{f.name}' of the read schema is not a column of Paimon table {table_name} "
                    f"(columns: {names}{'' if row_kind_column is None else f', row kind column {row_kind_column!r}'})")
        return ReadContext(location, schema.to_json(), output.json(), tuple(columns), row_kind_column, (), branch)

    def with_filter(self, terms: Sequence[tuple]) -> "ReadContext":
        return replace(self, filter_terms=tuple(terms))

    def merging_under(self, merge_schema: TableSchema) -> "ReadContext":
        """Rows merged under `merge_schema` (`evolution.with_current_options`: time travel
        merges under the table's current options, as Java's)."""
        return replace(self, merge_schema_json=merge_schema.to_json())

    @property
    def table_columns(self) -> list[str]:
        return list(dict.fromkeys(c for _, c in self.columns if c is not None))

    @property
    def wants_row_kind(self) -> bool:
        return any(c is None for _, c in self.columns)


def with_field_ids(spark: StructType, schema: TableSchema) -> StructType:
    """`spark` (the Spark schema of a read of `schema`'s columns) with each column's and nested
    ROW field's Paimon field id, and the schema id, in its metadata. Spark keeps the schema a
    DataFrame, view or stream was defined with, and its reader resolves the columns by these
    ids (`ReadContext.create`): after a rename, a swap of names or a drop and re-add of a name,
    a column still reads the field it meant, or the read is refused."""
    stored = {f.name: f for f in schema.fields}
    return StructType([_with_id(f, stored[f.name], schema.id) if f.name in stored else f for f in spark.fields])


def _with_id(given: StructField, stored: DataField, schema_id: int) -> StructField:
    return StructField(given.name, _with_nested_ids(given.dataType, stored.type, schema_id), given.nullable,
                       {**given.metadata, FIELD_ID: stored.id, SCHEMA_ID: schema_id})


def _with_nested_ids(given: SparkType, stored: DataType, schema_id: int) -> SparkType:
    if isinstance(given, StructType) and stored.root == "ROW":
        fields = {f.name: f for f in stored.fields}
        return StructType([_with_id(f, fields[f.name], schema_id) if f.name in fields else f for f in given.fields])
    if isinstance(given, ArrayType) and stored.element is not None:
        return ArrayType(_with_nested_ids(given.elementType, stored.element, schema_id), given.containsNull)
    if isinstance(given, MapType) and stored.root == "MAP":
        return MapType(_with_nested_ids(given.keyType, stored.key, schema_id),
                       _with_nested_ids(given.valueType, stored.value, schema_id), given.valueContainsNull)
    return given


def _named_by_id(field: StructField, names: Mapping[int, str], where: str) -> str:
    """The current name of the field `field` stands for (by the field id it carries), or
    SchemaChangedError when that field has been dropped from `where` since."""
    name = names.get(field.metadata[FIELD_ID])
    if name is None:
        raise SchemaChangedError(
            f"'{field.name}' (field id {field.metadata[FIELD_ID]} of schema {field.metadata.get(SCHEMA_ID)}) was "
            f"dropped from {where} after this DataFrame, view or stream was defined; define it again to read the "
            "current columns")
    return name


def _check_nested_names(given: SparkType, stored: DataType, path: str, table_name: str, by_id: bool = True) -> None:
    """A read schema's ROW fields name the table's exactly, at any depth (a field named in
    another case, or one the ROW lacks, would read as nulls); a field carrying a field id
    (`with_field_ids`) must still be that field under that name (nested fields are read by
    name: a renamed one is refused rather than read from another)."""
    if isinstance(given, StructType) and stored.root == "ROW":
        have = {f.name: f for f in stored.fields}
        for f in given.fields:
            if by_id and FIELD_ID in f.metadata:
                name = _named_by_id(f, {s.id: s.name for s in stored.fields},
                                    f"column '{path}' of Paimon table {table_name}")
                if name != f.name:
                    raise SchemaChangedError(
                        f"field '{path}.{f.name}' of column '{path}' of Paimon table {table_name} was renamed to "
                        f"'{name}' after this DataFrame, view or stream was defined; define it again to read the "
                        "current fields")
            if f.name not in have:
                raise SchemaMismatchError(
                    f"field '{path}.{f.name}' of the read schema is not a field of column '{path}' of Paimon table "
                    f"{table_name} (its fields: {list(have)}; nested names are matched exactly, in their case)")
            _check_nested_names(f.dataType, have[f.name].type, f"{path}.{f.name}", table_name, by_id)
    elif isinstance(given, ArrayType) and stored.element is not None:
        _check_nested_names(given.elementType, stored.element, f"{path}.element", table_name, by_id)
    elif isinstance(given, MapType) and stored.root == "MAP":
        _check_nested_names(given.keyType, stored.key, f"{path}.key", table_name, by_id)
        _check_nested_names(given.valueType, stored.value, f"{path}.value", table_name, by_id)


def read_partition(ctx: ReadContext, partition: InputPartition) -> Iterator[pa.RecordBatch]:
    """Executor side: read the units of one partition and yield batches in Spark's Arrow schema."""
    units = getattr(partition, "units", None)
    if not units:
        return
    file_io, path = FileIO.for_path(ctx.location)
    schema = TableSchema.from_json(ctx.schema_json)
    scan = TableScan(file_io, path, schema, ctx.branch)
    merging = schema if ctx.merge_schema_json is None else TableSchema.from_json(ctx.merge_schema_json)
    reader = SplitReader(file_io, scan, merging)
    output = StructType.fromJson(json.loads(ctx.output_json))
    target = to_arrow_schema(output, timezone="UTC")
    flt = parse_filter([tuple(t) for t in ctx.filter_terms], row_tracking.filterable(schema)) if ctx.filter_terms \
        else None
    names = ctx.table_columns
    settings = None
    for unit in units:
        try:
            table = read_unit(reader, unit, names, flt)
        except FileNotFoundError as exc:
            raise PaimonError(
                f"table {ctx.location}: a file of snapshot {unit.snapshot_id} is gone ({exc}); it was removed "
                "after the read was planned (snapshot expiration or a rollback). Give streams a 'consumer-id' "
                "or retain more snapshots ('snapshot.num-retained.min', 'snapshot.time-retained')") from exc
        table = to_output(table, _KIND if ctx.wants_row_kind else None)
        if table.num_rows == 0:
            continue
        arrays = [table.column(_KIND if col is None else col) for _, col in ctx.columns]
        result = pa.Table.from_arrays(arrays, names=[name for name, _ in ctx.columns]) if arrays else \
            rows_only(table.num_rows)  # an empty read schema: Spark counts the rows
        if settings is None and not result.schema.equals(target):
            settings = session_cast_settings()
        yield from _conform(result, target, settings).to_batches(max_chunksize=MAX_BATCH_ROWS)


def spark_schema(arrow: pa.Schema) -> StructType:
    """The Spark schema of a read of columns `arrow`: Paimon TIME (milliseconds of the day, time32
    in Arrow, which PySpark cannot convert) as an INT of those milliseconds, as Paimon's own Spark
    connector maps it (nested too); the readers cast the data to it (`_conform`)."""
    return from_arrow_schema(pa.schema([f.with_type(map_arrow_leaves(
        f.type, lambda leaf: pa.int32() if pa.types.is_time(leaf) else leaf)) for f in arrow]))


def _conform(table: pa.Table, target: pa.Schema, settings: CastSettings | None = None) -> pa.Table:
    """Cast to Spark's Arrow schema: timestamps to microseconds (floored), a read schema's other
    types as Spark's CAST casts them in the session's time zone (`spark_casts`), or refused
    naming the column."""
    if table.schema.equals(target):
        return table
    settings = settings or CastSettings()
    arrays = []
    for column, field in zip(table.columns, target):
        if column.type.equals(field.type):
            arrays.append(column)
            continue
        floored = _floored_type(column.type, field.type)
        if not floored.equals(column.type):
            column = conform(column, floored)
        try:
            arrays.append(pa.chunked_array([spark_cast(c, field.type, settings) for c in column.chunks], field.type))
        except SparkCastRefused as exc:
            raise SchemaMismatchError(
                f"column {field.name!r} cannot be read as {field.type} (the read schema's type) from its "
                f"{column.type} values as Spark's CAST reads them: {exc}; read it as its table type, or cast it "
                "in Spark") from None
        except (pa.ArrowInvalid, pa.ArrowNotImplementedError) as exc:
            # a read schema's type (`.schema("id int")`) that some stored value does not fit
            raise SchemaMismatchError(
                f"column {field.name!r} cannot be read as {field.type} (the read schema's type): its values "
                f"({column.type}) do not all convert ({exc}); read it as its table type, or cast it in Spark") \
                from None
    return pa.Table.from_arrays(arrays, schema=target)


def session_cast_settings() -> CastSettings:
    """The session's time zone and ANSI mode as a task sees them (Spark gives a task the SQL
    settings a session sets as local properties; a Python data source is given nothing else)."""
    from pyspark import TaskContext
    context = TaskContext.get()
    if context is None:
        return CastSettings.of({})
    return CastSettings.of({key: context.getLocalProperty(key) for key in (SESSION_TIME_ZONE, ANSI)})


def _floored_type(src: pa.DataType, dst: pa.DataType) -> pa.DataType:
    """`src` with each TIMESTAMP finer than Spark's microseconds at `dst`'s unit (also inside
    ROW, ARRAY and MAP): those are floored first (`datafile.conform`), as Java's connector cuts
    TIMESTAMP(7-9) to microseconds; Arrow's cast truncates toward zero, which would move
    1969-12-31 23:59:59.999999999 to 1970-01-01 00:00:00."""
    if pa.types.is_timestamp(src) and pa.types.is_timestamp(dst):
        return pa.timestamp(dst.unit, src.tz) if finer_unit(src.unit, dst.unit) else src
    if pa.types.is_struct(src) and pa.types.is_struct(dst) and src.num_fields == dst.num_fields:
        return pa.struct([src.field(i).with_type(_floored_type(src.field(i).type, dst.field(i).type))
                          for i in range(src.num_fields)])
    if pa.types.is_map(src) and pa.types.is_map(dst):
        return pa.map_(src.key_field.with_type(_floored_type(src.key_type, dst.key_type)),
                       src.item_field.with_type(_floored_type(src.item_type, dst.item_type)))
    if pa.types.is_list(src) and pa.types.is_list(dst):
        return pa.list_(src.value_field.with_type(_floored_type(src.value_type, dst.value_type)))
    return src
