"""Distributed write of a Spark DataFrame into a Paimon table: files on executors, commit on the driver.

The driver plans (`WritePlan`: the table's schema, and per bucket the live files that
sequence numbers continue from). Executors assign each row its partition and bucket with
Paimon's hash (a scalar Arrow UDF over the key columns only), Spark shuffles rows by
(partition, bucket), and each task writes the groups it received (`mapInArrow`: Arrow in,
files out). Only the small pickled commit messages return to the driver; no step collects
rows there.
"""
from __future__ import annotations

import logging
import pickle
from dataclasses import dataclass, replace
from typing import Iterable, Iterator

import numpy as np
import pyarrow as pa

from paimon_streaming.sinks import spark_version  # noqa: F401  (first: PySpark >= 4.2.1, named)
from pyspark.sql import DataFrame
from pyspark.sql import functions as F
from pyspark.sql.pandas.types import to_arrow_schema
from pyspark.sql.types import (ArrayType, CharType, DataType, MapType, StringType, StructField, StructType,
                               VarcharType, VariantType)

from paimon_streaming import cross_partition, full_compaction
from paimon_streaming.branches import MAIN, branch_path
from paimon_streaming.commit import CommitMessage
from paimon_streaming.commit_users import QUERY_PROPERTY, CommitUserRecords
from paimon_streaming.errors import CommitConflictError, CommitIdentifierError, InvalidOptionError, SchemaMismatchError
from paimon_streaming.fileio import FileIO
from paimon_streaming.manifest import IndexManifestEntry, ManifestEntry
from paimon_streaming.options import OPTIONS, misspelled_key
from paimon_streaming.scan import TableScan
from paimon_streaming.schema import TableSchema
from paimon_streaming.snapshot import SnapshotManager
from paimon_streaming.table import Table
from paimon_streaming.write import TableWrite, conform

log = logging.getLogger("paimon_streaming.sink")


def compact_after_commit(table: Table, commit_user: str, identifier: int, written: list) -> list[int]:
    """Tasks sharing a bucket cannot compact it, so the driver compacts after the commit (same
    commitIdentifier, COMPACT snapshot): deletion-vector tables get the batch's level-0 files
    pushed up, and a batch due for scheduled full compaction (`full-compaction.delta-commits`)
    fully compacts the buckets it wrote and those its user wrote since the previous due batch;
    append tables get the small files of the buckets it wrote merged (unless `write-only`)."""
    table = Table(table.file_io, table.path, table.name, table.branch)  # the schema as committed, same store
    if not table.primary_keys:
        if table.options.get("write-only") or not written:
            return []
        sid = table.compact(commit_user=commit_user, commit_identifier=identifier,
                            only={(m.partition, m.bucket) for m in written}, best_effort=True)
        return [sid] if sid is not None else []
    full = set()
    if full_compaction.is_due(table.options, identifier):
        full = {(m.partition, m.bucket) for m in written} | table.scheduled_buckets(commit_user, identifier)
    if not (table.options.lookup_compaction or full):
        return []
    sid = table.compact(commit_user=commit_user, commit_identifier=identifier, full_buckets=full)
    return [sid] if sid is not None else []


def reconcile_schema(table: Table, schema: pa.Schema, row_kind_column: str | None, merge_schema: bool,
                     how_to_merge: str) -> TableSchema | None:
    """Before a batch is written: with `merge_schema`, the schema that holds the input's columns
    and wider types, to write the batch in; returned (and made `table.schema`) uncommitted, for
    `publish_schema` to commit just before the batch's data, so a batch that fails (a null key,
    a value its column cannot hold) leaves the schema as it was; None when nothing changes.
    The change is idempotent, so a replayed batch finds nothing to change and stays
    exactly-once. Without `merge_schema`, input columns the table lacks are an error naming
    them and `how_to_merge` (never silently dropped)."""
    incoming = pa.schema([f for f in schema if f.name != row_kind_column])
    known = set(table.schema.field_names)
    if merge_schema:
        current = table.schema.arrow_schema()
        untyped = [path for f in incoming for path in _untyped_new_fields(
            f.type, current.field(f.name).type if f.name in known else None, f.name)]
        if untyped:
            raise SchemaMismatchError(
                f"the input's new column(s) or field(s) {untyped} have no type (Spark's NullType: `lit(None)`, or a "
                f"field null in every record), and schema merging cannot add one without it to table {table.name}; give "
                "them a type (`lit(None).cast('string')`), or drop them from the input")
        table.refresh()
        evolved = table.update_schema().union_by_name(incoming).apply(table.schema, table.latest_snapshot() is not None)
        if evolved is table.schema:
            return None
        table.schema = evolved
        return evolved
    new = [n for n in incoming.names if n not in known]
    by_case = {n.lower(): n for n in known}
    for name in new:
        if name.lower() in by_case:
            raise SchemaMismatchError(
                f"input column {name!r} differs from column {by_case[name.lower()]!r} of table {table.name} only in "
                f"case: columns are matched by their exact names, and a second column differing only in case is "
                f"refused (Spark could select neither); rename it in the input (df.withColumnRenamed({name!r}, "
                f"{by_case[name.lower()]!r}))")
    if new:
        raise SchemaMismatchError(f"the input has column(s) {new} that table {table.name} does not have "
                                  f"(columns: {table.schema.field_names}); {how_to_merge} to add them to the "
                                  "table, or drop them from the input")


def publish_schema(table: Table, pending: TableSchema | None) -> bool:
    """Commit the schema a batch was written in (`reconcile_schema`), just before its data; True
    when it is the table's (committed here, or the same change by a replay or another writer
    merging the same columns). False when another change took its id: the batch's files, in
    field ids that schema may give other columns, must be written again in the schema there is
    now (`reconcile_schema` again)."""
    if pending is None:
        return True
    if table.schema_manager.try_commit(pending):
        table.schema = pending
        return True
    there = table.schema_manager.schema(pending.id)
    if _same_schema(there, pending):
        table.schema = there
        return True
    return False


def schema_race(table: Table, pending: TableSchema) -> CommitConflictError:
    return CommitConflictError(
        f"other schema changes of table {table.name} kept taking schema id {pending.id} while this batch was written "
        "in its merged schema; nothing of the batch was committed, and it is written again in the new schema when "
        "the query restarts")


def _same_schema(a: TableSchema, b: TableSchema) -> bool:
    return (a.fields, a.highest_field_id, a.primary_keys, a.partition_keys, a.options, a.comment) == \
        (b.fields, b.highest_field_id, b.primary_keys, b.partition_keys, b.options, b.comment)


def _untyped_new_fields(t: pa.DataType, existing: pa.DataType | None, path: str) -> list[str]:
    """The paths of the fields of an input column of type `t` (the table's column of that name:
    `existing`) that are new and of Spark's NullType, at any depth of ROWs, ARRAYs and MAPs."""
    if pa.types.is_null(t):
        return [] if existing is not None else [path]
    if pa.types.is_struct(t):
        inner = {existing.field(j).name: existing.field(j).type for j in range(existing.num_fields)} \
            if existing is not None and pa.types.is_struct(existing) else {}
        return [p for j in range(t.num_fields)
                for p in _untyped_new_fields(t.field(j).type, inner.get(t.field(j).name), f"{path}.{t.field(j).name}")]
    if pa.types.is_list(t) or pa.types.is_large_list(t):
        within = existing.value_type if existing is not None and pa.types.is_list(existing) else None
        return _untyped_new_fields(t.value_type, within, f"{path}.element")
    if pa.types.is_map(t):
        mapped = existing is not None and pa.types.is_map(existing)
        return _untyped_new_fields(t.key_type, existing.key_type if mapped else None, f"{path}.key") + \
            _untyped_new_fields(t.item_type, existing.item_type if mapped else None, f"{path}.value")
    return []


# Write options of other connectors (Delta Lake, Apache Iceberg): taken as table options they
# would be ignored, and the write would do something else than asked (`replaceWhere` in an
# overwrite: the whole table replaced). Keys in lower case, as Spark gives them.
FOREIGN_WRITE_OPTIONS = {
    "replacewhere": ("Delta's replaceWhere", "mode('overwrite') with .option('partitionOverwriteMode', 'dynamic') "
                     "replaces exactly the partitions the DataFrame holds"),
    "overwriteschema": ("Delta's overwriteSchema", "the table's schema changes with Table.update_schema() or "
                        "`paimon-streaming alter`; option 'mergeSchema' adds the DataFrame's new columns"),
    "txnappid": ("Delta's txnAppId", "exactly-once micro-batch writes: foreachBatch(paimon_sink(...)), or "
                 "writeStream.format('paimon') with option 'commitUser'"),
    "txnversion": ("Delta's txnVersion", "exactly-once micro-batch writes: foreachBatch(paimon_sink(...)), or "
                   "writeStream.format('paimon') with option 'commitUser'"),
    "overwrite-mode": ("Iceberg's overwrite-mode", "option 'partitionOverwriteMode' ('static' or 'dynamic')"),
    "merge-schema": ("Iceberg's merge-schema", "option 'mergeSchema' ('true')"),
}


def refuse_foreign_write_options(options: dict[str, str]) -> None:
    """InvalidOptionError for a write option of another connector (FOREIGN_WRITE_OPTIONS)."""
    for key in options:
        foreign = FOREIGN_WRITE_OPTIONS.get(key.lower())
        if foreign is not None:
            raise InvalidOptionError(f"write option {key!r} is {foreign[0]}, which format('paimon') does not "
                                     f"implement; ignored, the write would do something else than asked, so it is "
                                     f"refused. Here: {foreign[1]}")


def check_existing_table_options(table: Table, options: dict[str, str], where: str) -> None:
    """Table options given to a write are applied when the write creates the table. Given to a
    write into an existing table, a misspelt key (`buckett`, one typo from a Paimon option) is
    an InvalidOptionError: ignored, it would hide that the option meant is not what the table
    has. A value other than the table's (the table was rescaled or altered since the write
    created it) is logged as a warning, naming the value that applies. Keys are compared in
    lower case (Spark lower-cases a data source's option keys)."""
    schema = table.schema
    current = {k.lower(): v for k, v in schema.options.items()}
    differing = []
    for key, value in options.items():
        key_l = key.lower()
        meant = misspelled_key(key_l)
        if meant is not None:
            raise InvalidOptionError(f"unknown table option {key!r} of {where}: did you mean {meant!r}? (it would be "
                                     "ignored)")
        given = str(value).strip()
        if key_l in ("primary-key", "partition"):
            have = list(schema.primary_keys if key_l == "primary-key" else schema.partition_keys)
            same = [c.strip() for c in given.split(",") if c.strip()] == have
            shown = ",".join(have) if have else "none"
        elif key_l in OPTIONS:
            opt = OPTIONS[key_l]
            raw = current.get(key_l, opt.default)
            try:
                same = opt.parse(given) == (None if raw is None else opt.parse(str(raw)))
            except ValueError as exc:
                raise InvalidOptionError(f"invalid value {given!r} for table option {key!r} of {where}: {exc}") \
                    from None
            shown = repr(str(raw)) if raw is not None else "unset"
        else:
            raw = current.get(key_l)
            have_text = None if raw is None else str(raw).strip()
            same = have_text == given or (have_text is not None and given.lower() in ("true", "false")
                                          and have_text.lower() == given.lower())
            shown = repr(have_text) if have_text is not None else "unset"
        if not same:
            differing.append(f"{key!r} = {given!r} (the table's: {shown})")
    if differing:
        log.warning("%s into existing table %s: table option(s) %s not applied; table options apply when a write "
                    "creates the table, later writes use the table's own (change them with Table.update_schema()"
                    ".set_option(...), `paimon-streaming alter --set`, or `rescale` for 'bucket')",
                    where, table.name, ", ".join(differing))


# snapshot property: which streaming query committed a micro-batch ("query-id:<Spark's query id>"
# or "checkpoint:<checkpoint location>"), so a replay can be told from another query's batch


def committed_replay(table: Table, commit_user: str, batch_id: int, query: str | None, how: str) -> tuple[bool, int]:
    """Whether micro-batch `batch_id` of `commit_user` is committed already: a replay after a
    restart (or a query restarted from an older copy of its checkpoint), to skip; and the
    snapshot id up to which it is not (the commit's `unique_since`). `query` names
    the running query (QUERY_PROPERTY); when the snapshots that committed the batch name another
    one, this is a second query, or a checkpoint started afresh, under the same commit user: its
    batches would be skipped as already written and their rows lost, so CommitIdentifierError,
    naming `how` to pass a new commit user. Expired snapshots answer through the records
    expiration keeps (commit_users.py); snapshots that name no query (Spark Connect, older
    writers) are taken as replays, as before."""
    commits = table.new_commit().user_commits(commit_user, batch_id)
    checked = commits.latest.id if commits.latest is not None else 0
    if not commits.committed(batch_id):
        return False, checked
    if query is None:
        return True, checked
    if batch_id in commits.live:
        others = set()
        for snap in table.snapshot_manager.iter_descending(commits.live[batch_id]):
            if snap.commit_user != commit_user:
                continue
            if snap.commit_identifier != batch_id:
                break
            recorded = (snap.properties or {}).get(QUERY_PROPERTY)
            if recorded is not None and recorded != query:
                others.add(recorded)
    else:  # expired: the records name the query of each identifier
        records = CommitUserRecords(table.file_io, branch_path(table.path, table.branch))
        others = {q for q, ids in records.recorded_queries(commit_user).items() if batch_id in ids and q != query}
    if others:
        raise CommitIdentifierError(
            f"batch {batch_id} was committed to table {table.name} under commit user {commit_user!r} by another "
            f"streaming query ({sorted(others)[0]}; this one is {query}): a second query, or a checkpoint started "
            f"afresh, under the same commit user would have its batches skipped as already written and their rows "
            f"lost. Nothing was written; give this query its own {how}")
    return True, checked


def query_property(query: str | None) -> dict[str, str] | None:
    """The snapshot properties that name the query committing (see QUERY_PROPERTY)."""
    return None if query is None else {QUERY_PROPERTY: query}


KEY_COL = "__paimon_group"    # (serialized partition, bucket): what rows are shuffled by
ORDER_COL = "__paimon_order"  # (Spark partition, row index): keeps input order through the shuffle
MESSAGE_SCHEMA = "message binary, rows long"


@dataclass(frozen=True)
class WritePlan:
    """Everything an executor needs to write files for one batch; pickled into the tasks."""
    location: str
    table_name: str
    schema_json: str
    live: tuple[ManifestEntry, ...] = ()
    index_entries: tuple[IndexManifestEntry, ...] = ()
    row_kind_column: str | None = None
    compact: bool = True            # deletion-vector compaction in the write task
    full_compaction: bool = False   # written buckets compacted fully (a batch due by the table's schedule)
    branch: str = MAIN
    time_zone: str | None = None    # Spark's session time zone: instants <-> wall times (write.conform)
    snapshot_id: int | None = None  # the snapshot planned on (cross-partition tables place rows by it)
    overwrite: bool = False         # the rows replace the partitions they are in (dynamic buckets: placed afresh)

    @staticmethod
    def for_table(table: Table, location: str, row_kind_column: str | None = None,
                  compact: bool = True, full_compaction: bool = False, time_zone: str | None = None) -> "WritePlan":
        latest = table.latest_snapshot()
        table.follow_schema(latest)  # a retry after another writer (Java) changed the schema: write in the new one
        if latest is None:
            return WritePlan(location, table.name, table.schema.to_json(), row_kind_column=row_kind_column,
                             compact=compact, full_compaction=full_compaction, branch=table.branch,
                             time_zone=time_zone)
        scan = TableScan(table.file_io, table.path, table.schema)
        return WritePlan(location, table.name, table.schema.to_json(), tuple(scan.live_entries(latest)),
                         tuple(scan.index_manifest.read(latest.index_manifest)), row_kind_column, compact,
                         full_compaction, table.branch, time_zone, latest.id)

    @property
    def cross_partition(self) -> bool:
        return cross_partition.is_cross_partition(TableSchema.from_json(self.schema_json))

    def writer(self) -> TableWrite:
        file_io, path = FileIO.for_path(self.location)
        return TableWrite(file_io, path, TableSchema.from_json(self.schema_json), self.table_name, self.branch)

    def write(self, data: pa.Table, sequence_offset: int = 0, whole_batch: bool = False) -> list[CommitMessage]:
        """Write one group of rows (conformed here, on the executor) into files. `whole_batch`:
        these are all the batch's rows, so a cross-partition table's rows can be placed here
        (cross_partition.py; a shuffled write refuses such tables)."""
        writer = self.writer()
        rows = conform(data, writer.schema, self.table_name, self.row_kind_column, self.time_zone)
        if whole_batch and writer.cross_partition:
            snapshot = None if self.snapshot_id is None else \
                SnapshotManager(writer.file_io, branch_path(writer.table_path, self.branch)).snapshot(self.snapshot_id)
            cross_partition.place(writer, snapshot, list(self.live))
        messages = writer.write(rows, self.live, self.index_entries, sequence_offset=sequence_offset,
                                overwrite=self.overwrite, compact=self.compact, full_compaction=self.full_compaction)
        if whole_batch and writer.cross_partition:
            cross_partition.placed(writer)
        return messages


def session_time_zone(df: DataFrame) -> str:
    """The zone Spark's casts between instants and wall times use (`spark.sql.session.timeZone`)."""
    return df.sparkSession.conf.get("spark.sql.session.timeZone")


def arrow_schema_of(schema) -> pa.Schema:
    """The Arrow schema of a Spark schema; TimestampType (an instant) maps to UTC timestamps,
    i.e. Paimon TIMESTAMP_LTZ, TimestampNTZType to TIMESTAMP. CHAR(n) and VARCHAR(n), which
    Spark keeps in schemas under `spark.sql.preserveCharVarcharTypeInfo` and PySpark cannot
    convert, are strings, as Spark reads them everywhere else."""
    return to_arrow_schema(_chars_as_strings(schema), timezone="UTC")


def without_char_types(df: DataFrame) -> DataFrame:
    """`df` with its CHAR(n)/VARCHAR(n) columns (`spark.sql.preserveCharVarcharTypeInfo`) cast
    to strings: PySpark's Arrow conversions (`toArrow`, `mapInArrow`) refuse them."""
    wanted = _chars_as_strings(df.schema)
    if wanted == df.schema:
        return df
    return df.select([df[i].cast(w.dataType).alias(f.name) if w != f else df[i]
                      for i, (f, w) in enumerate(zip(df.schema.fields, wanted.fields))])


def _chars_as_strings(t: DataType) -> DataType:
    if isinstance(t, (CharType, VarcharType)):
        return StringType()
    if isinstance(t, StructType):
        return StructType([StructField(f.name, _chars_as_strings(f.dataType), f.nullable, f.metadata) for f in t.fields])
    if isinstance(t, ArrayType):
        return ArrayType(_chars_as_strings(t.elementType), t.containsNull)
    if isinstance(t, MapType):
        return MapType(_chars_as_strings(t.keyType), _chars_as_strings(t.valueType), t.valueContainsNull)
    return t


def table_schema_of(schema, row_kind_column: str | None) -> pa.Schema:
    """The Arrow schema of a table created from a stream's or DataFrame's schema: every column
    and nested field nullable (key columns become NOT NULL at create), as Spark's CTAS and
    Delta create tables, since Spark marks a literal or derived column NOT NULL and a later
    batch without it would be refused; without the row-kind column, which says how to apply
    each row and is not stored."""
    arrow = arrow_schema_of(_as_nullable(schema))
    if row_kind_column is not None and row_kind_column in arrow.names:
        arrow = arrow.remove(arrow.get_field_index(row_kind_column))
    return arrow


def _as_nullable(t: DataType) -> DataType:
    """Spark's `asNullable`: `t` with its fields, elements and map values nullable (a map key
    cannot be null in Spark)."""
    if isinstance(t, StructType):
        return StructType([StructField(f.name, _as_nullable(f.dataType), True, f.metadata) for f in t.fields])
    if isinstance(t, ArrayType):
        return ArrayType(_as_nullable(t.elementType), True)
    if isinstance(t, MapType):
        return MapType(_as_nullable(t.keyType), _as_nullable(t.valueType), True)
    return t


def collect_arrow(df: DataFrame) -> pa.Table:
    """The DataFrame's rows in the driver as Arrow (`toArrow`). PySpark's `toArrow` fails on a
    null VARIANT (Spark sends its value and metadata as nulls in fields it declares non-null)
    and on a null struct, array or map whose fields, elements or values Spark declares non-null
    (Spark sends nulls under it, which Arrow refuses to view as non-nullable). Such columns are
    taken as Spark sends them: variants as they are (`write.conform` makes the null variants'
    parts empty, `variant.conform`), the others cast to their types with every nested field
    nullable (the write checks the table's own NOT NULL fields)."""
    raw = [f.name for f in df.schema.fields if _holds_variant(f.dataType)]
    relaxed = [f.name for f in df.schema.fields if f.name not in raw and _as_nullable(f.dataType) != f.dataType]
    if not raw and not relaxed:
        return df.toArrow()
    schema = arrow_schema_of(StructType([
        StructField(f.name, _as_nullable(f.dataType), f.nullable, f.metadata) if f.name in relaxed else f
        for f in df.schema.fields]))
    table = pa.Table.from_batches(df._collect_as_arrow(empty_list_if_zero_records=False))
    columns = [table.column(name) if name in raw else table.column(name).cast(schema.field(name).type)
               for name in schema.names]
    return pa.Table.from_arrays(columns, schema=schema)


def _holds_variant(t) -> bool:
    if isinstance(t, VariantType):
        return True
    if isinstance(t, StructType):
        return any(_holds_variant(f.dataType) for f in t.fields)
    if isinstance(t, ArrayType):
        return _holds_variant(t.elementType)
    if isinstance(t, MapType):
        return _holds_variant(t.keyType) or _holds_variant(t.valueType)
    return False


def encode_messages(messages: list[CommitMessage], rows_in: int) -> pa.Table:
    return pa.table({"message": pa.array([pickle.dumps(messages)], pa.binary()),
                     "rows": pa.array([rows_in], pa.int64())})


def decode_messages(blobs: Iterable[bytes]) -> list[CommitMessage]:
    return [m for blob in blobs for m in pickle.loads(blob)]


@dataclass
class WriteResult:
    messages: list[CommitMessage]
    rows_in: int
    compacted: bool = True  # False: tasks shared buckets and left their compaction to the driver

    @staticmethod
    def collect(df: DataFrame) -> "WriteResult":
        rows = df.collect()
        return WriteResult(decode_messages(r["message"] for r in rows), sum(r["rows"] for r in rows))


def write_dataframe(df: DataFrame, plan: WritePlan) -> WriteResult:
    """Write `df` through executors; returns the commit messages (nothing is committed).

    Only the partition and bucket-key columns cross into Python to compute each row's group
    (`group_key_udf`); Spark numbers the rows in input order (`monotonically_increasing_id`:
    the Spark partition in the upper bits, the row's index in it below), shuffles them by group
    and each task writes all the groups it holds in one `plan.write` (buckets side by side on
    threads), after putting its rows back in input order: versions of a key need it."""
    writer = plan.writer()
    schema = writer.schema
    conform(arrow_schema_of(df.schema).empty_table(), schema, plan.table_name, plan.row_kind_column)  # fail fast
    if not schema.primary_keys and writer.options.bucket == -1:
        return _write_unbucketed(df, plan)
    dynamic = writer.options.bucket == -1  # buckets are then assigned per partition in the write step
    key_names = list(schema.partition_keys) + ([] if dynamic else schema.bucket_keys)
    key = group_key_udf(plan, key_names)(F.struct(*[df[n] for n in key_names])) if key_names else F.lit(b"")

    def write(batches: Iterator[pa.RecordBatch]) -> Iterator[pa.RecordBatch]:
        batches = [b for b in batches if b.num_rows]
        if batches:
            rows = pa.Table.from_batches(batches).sort_by(ORDER_COL).drop_columns([KEY_COL, ORDER_COL])
            yield from encode_messages(plan.write(rows), rows.num_rows).to_batches()

    grouped = (df.withColumn(ORDER_COL, F.monotonically_increasing_id()).withColumn(KEY_COL, key)
               .repartition(KEY_COL))
    return WriteResult.collect(grouped.mapInArrow(write, MESSAGE_SCHEMA))


def group_key_udf(plan: WritePlan, key_names: list[str]):
    """Scalar Arrow UDF: (the struct of a row's partition and bucket-key columns) -> its
    serialized partition and fixed bucket (0 in dynamic bucket mode), computed as the core's
    `TableWrite.partition_and_bucket` does once the columns are cast to the table's types."""
    key_schema = replace(plan.writer().schema, options={})  # no rowkind.field: kinds play no part here
    key_schema = replace(key_schema, fields=tuple(key_schema.fields_of(key_names)))

    def group_key(keys: pa.Array) -> pa.Array:  # a StructArray; Spark wants the hint pa.Array
        writer = plan.writer()
        rows = conform(pa.Table.from_struct_array(keys), key_schema, plan.table_name, time_zone=plan.time_zone)
        partitions, buckets = writer.partition_and_bucket(rows)
        if buckets is None:
            buckets = np.zeros(rows.num_rows, np.int32)
        return pa.StructArray.from_arrays([partitions, pa.array(buckets.astype(np.int32))],
                                          names=["partition", "bucket"])

    return F.arrow_udf(group_key, "partition binary, bucket int")


def _write_unbucketed(df: DataFrame, plan: WritePlan) -> WriteResult:
    """Append tables without buckets need no shuffle: every task writes what it holds. The
    tasks share each partition's bucket, so none merges small files; the caller compacts
    after the commit (`WriteResult.compacted` is False)."""
    plan = replace(plan, compact=False)

    def write_partition(batches: Iterator[pa.RecordBatch]) -> Iterator[pa.RecordBatch]:
        batches = [b for b in batches if b.num_rows]
        if batches:
            yield encode_messages(write_task(plan, batches), sum(b.num_rows for b in batches)).to_batches()[0]

    return replace(WriteResult.collect(df.mapInArrow(write_partition, MESSAGE_SCHEMA)), compacted=False)


def task_index() -> int:
    from pyspark import TaskContext
    ctx = TaskContext.get()
    return ctx.partitionId() if ctx is not None else 0


def write_task(plan: WritePlan, batches: Iterable[pa.RecordBatch], task_index: int = 0,
               whole_batch: bool = False) -> list[CommitMessage]:
    """Write all rows one Spark task holds (used where rows are not shuffled by bucket;
    `whole_batch`: the task holds the batch's every row).

    Several tasks may then write the same bucket, so task i continues sequence numbers from
    the bucket's maximum + i * 2^32: numbers stay unique and one task's rows keep their order.
    """
    batches = [b for b in batches if b.num_rows]
    if not batches:
        return []
    return plan.write(pa.Table.from_batches(batches), task_index << 32, whole_batch)
