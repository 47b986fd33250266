"""Table schema: fields with global ids, keys, options; the `schema/schema-<id>` JSON files."""
from __future__ import annotations

import json
import time
import unicodedata
from dataclasses import dataclass, field, replace
from functools import cached_property
from typing import Any, Iterator, Sequence

import pyarrow as pa

from . import options as opts
from .bucket import check_bucket_function
from .errors import InvalidOptionError, PaimonError, SchemaMismatchError, UnsupportedTypeError
from .system_fields import is_system_field, reserved_names_message
from .fileio import FileIO
from .json_check import CHECK_KEY, check_mismatch, json_check
from .option_text import parse_bool
from .variant import check_table as check_variants
from .types import MULTISET_COUNT, DataField, DataType, arrow_schema, assign_field_ids, from_arrow, max_field_id

SCHEMA_VERSION = 3


@dataclass(frozen=True)
class TableSchema:
    id: int
    fields: tuple[DataField, ...]
    highest_field_id: int
    partition_keys: tuple[str, ...] = ()
    primary_keys: tuple[str, ...] = ()
    options: dict[str, str] = field(default_factory=dict)
    comment: str | None = None
    time_millis: int = 0
    version: int = SCHEMA_VERSION

    # ---- derived views ----------------------------------------------------------------
    @property
    def field_names(self) -> list[str]:
        return [f.name for f in self.fields]

    @cached_property
    def _fields_by_name(self) -> dict[str, DataField]:
        return {f.name: f for f in self.fields}

    def field(self, name: str) -> DataField:
        found = self._fields_by_name.get(name)
        if found is None:
            raise SchemaMismatchError(f"column '{name}' is not in the table schema {self.field_names}")
        return found

    def fields_of(self, names: list[str] | tuple[str, ...]) -> list[DataField]:
        return [self.field(n) for n in names]

    @property
    def trimmed_primary_keys(self) -> list[str]:
        return [k for k in self.primary_keys if k not in self.partition_keys]

    @property
    def bucket_keys(self) -> list[str]:
        raw = self.options.get("bucket-key")
        if raw and raw.strip():  # names as written, spaces included, as Java splits them
            return java_split(raw, ",")
        return self.trimmed_primary_keys

    @property
    def core_options(self) -> opts.CoreOptions:
        return opts.CoreOptions(self.options)

    def arrow_schema(self) -> pa.Schema:
        return arrow_schema(self.fields)

    # ---- JSON -------------------------------------------------------------------------
    def to_json(self) -> str:
        obj: dict[str, Any] = {
            "version": self.version, "id": self.id,
            "fields": [f.to_json() for f in self.fields],
            "highestFieldId": self.highest_field_id,
            "partitionKeys": list(self.partition_keys), "primaryKeys": list(self.primary_keys),
            "options": dict(self.options),
        }
        if self.comment is not None:  # Java reads a JSON null comment as the string "null"
            obj["comment"] = self.comment
        obj["timeMillis"] = self.time_millis
        obj[CHECK_KEY] = json_check(obj)  # a key Java's schema reader skips (json_check.py)
        return json.dumps(obj, indent=2)

    @staticmethod
    def from_json(text: str) -> "TableSchema":
        obj = json.loads(text)
        version = obj.get("version", 1)
        options = {k: str(v) for k, v in (obj.get("options") or {}).items()}
        if version <= 1 and "bucket" not in options:
            options["bucket"] = "1"
        if version <= 2 and "file.format" not in options:
            options["file.format"] = "orc"
        fields = tuple(DataField.from_json(f) for f in obj["fields"])
        return TableSchema(
            id=obj["id"], fields=fields,
            highest_field_id=obj.get("highestFieldId", max_field_id(fields)),
            partition_keys=tuple(obj.get("partitionKeys") or ()),
            primary_keys=tuple(obj.get("primaryKeys") or ()),
            options=options, comment=obj.get("comment"),
            time_millis=obj.get("timeMillis", 0), version=version)

    # ---- creation ---------------------------------------------------------------------
    @staticmethod
    def create(schema: pa.Schema, primary_keys: list[str] | None = None,
               partition_keys: list[str] | None = None, options: dict[str, Any] | None = None,
               comment: str | None = None) -> "TableSchema":
        """Build schema 0 from an Arrow schema, applying Paimon's normalization and checks."""
        options = {str(k): _option_str(v) for k, v in (options or {}).items()}
        primary_keys = list(primary_keys or _split(options.pop("primary-key", "")))
        partition_keys = list(partition_keys or _split(options.pop("partition", "")))
        names = list(schema.names)
        if len(set(names)) != len(names):
            raise SchemaMismatchError(f"duplicate column names in schema: {names}")
        reserved = [n for n in names if is_system_field(n)]
        if reserved:
            raise SchemaMismatchError(reserved_names_message(reserved))
        for kind, keys in (("primary key", primary_keys), ("partition key", partition_keys)):
            missing = [k for k in keys if k not in names]
            if missing:
                raise SchemaMismatchError(f"{kind} column(s) {missing} are not in the schema {names}")
            check_distinct_keys(kind, keys)
        next_id = [-1]
        fields = []
        for f in schema:
            next_id[0] += 1
            fid = next_id[0]
            try:
                t = assign_field_ids(from_arrow(f.type, f.nullable), next_id)
            except UnsupportedTypeError as exc:
                hint = " (an untyped null column: cast it to the type it will hold)" if pa.types.is_null(f.type) else ""
                raise UnsupportedTypeError(f"column '{f.name}': {exc}{hint}") from None
            if f.name in primary_keys:
                t = t.copy(nullable=False)
            fields.append(DataField(fid, f.name, t))
        table_schema = TableSchema(0, tuple(fields), max_field_id(fields), tuple(partition_keys),
                                   tuple(primary_keys), options, comment, int(time.time() * 1000))
        opts.refuse_unimplemented(options)
        table_schema.validate()
        check_changelog_producer(table_schema)
        check_moves_kept(table_schema)
        _refuse_binary_partitions(table_schema)
        return table_schema

    def validate(self) -> None:
        from .file_index import FileIndexSpec  # these import this module
        from .full_compaction import validate_schedule
        from .merge_engine import validate_engine_options
        from .partition_expire import validate_partition_expiration
        from .record_expire import validate_record_expiry
        from .row_tracking import check_table as check_row_tracking
        from .data_evolution import check_table as check_data_evolution
        from .file_settings import FileSettingsByLevel
        opts.validate(self.options)
        FileSettingsByLevel(self).check()
        check_field_names(self.fields)
        check_field_options(self.options, self.field_names)
        check_sequence_field(self.options, self.field_names)
        validate_engine_options(self)
        validate_partition_expiration(self.core_options)
        validate_record_expiry(self)
        validate_schedule(self.core_options, self.primary_keys)
        FileIndexSpec.of(self.options, self.fields)
        core = self.core_options
        pk, part = list(self.primary_keys), list(self.partition_keys)
        if pk and not self.trimmed_primary_keys:
            raise InvalidOptionError(
                f"primary key {pk} must contain at least one column that is not a partition key {part}")
        for f in self.fields:
            if f.name in pk and f.type.is_structured:
                raise InvalidOptionError(f"primary key column '{f.name}' has type {f.type}, which has no order to key by")
        check_variants(self.fields, self.options, part + self.bucket_keys + list(core.sequence_field))
        bucket = core.bucket
        bucket_keys = self.bucket_keys
        unknown = [k for k in bucket_keys if k not in self.field_names]
        if unknown:
            raise InvalidOptionError(f"bucket-key column(s) {unknown} are not in the schema")
        if set(bucket_keys) & set(part):
            raise InvalidOptionError(f"bucket-key {bucket_keys} must not contain partition keys {part}")
        if pk and self.options.get("bucket-key") and not set(bucket_keys) <= set(pk):
            raise InvalidOptionError(f"bucket-key {bucket_keys} must be a subset of the primary key {pk}")
        check_row_tracking(self.options, pk, bucket)
        check_data_evolution(self.options)
        if not pk and bucket > 0 and not self.options.get("bucket-key"):
            raise InvalidOptionError("an append table with a fixed 'bucket' needs the 'bucket-key' option")
        if bucket > 0:
            check_bucket_function(core.get("bucket-function.type"), bucket_keys,
                                  [self.field(k).type for k in bucket_keys])
        if pk and not set(part) <= set(pk):
            if bucket != -1:
                raise InvalidOptionError(
                    f"the primary key {pk} must contain every partition key {part}, or the table needs "
                    "'bucket' = -1 (a cross-partition upsert table, whose keys move between partitions)")
            if core.sequence_field:  # Java's SchemaValidation
                raise InvalidOptionError(
                    f"sequence.field cannot be used in a cross-partition upsert table (primary key {pk} "
                    f"without every partition key {part})")
        if bucket == -1 and self.options.get("bucket-key") is not None:  # Java's SchemaValidation
            raise InvalidOptionError(
                f"table option 'bucket-key' = {self.options['bucket-key']!r} cannot go with 'bucket' = -1 (Paimon "
                "refuses to create or open such a table): remove 'bucket-key', or set a bucket count")
        if "partition.expiration-time" in self.options and not part:  # Java's SchemaValidation
            raise InvalidOptionError("table option 'partition.expiration-time' needs a partitioned table (Paimon "
                                     "refuses to create or open a table without partition keys that sets it)")
        _check_streaming_read_overwrite(self)
        if bucket == -2:
            raise InvalidOptionError("postpone bucket mode (bucket = -2) is not supported")


def check_distinct_keys(kind: str, keys: Sequence[str]) -> None:
    """InvalidOptionError naming a column given twice as a primary or partition key: Java's
    Schema refuses such a table (it could not read it), and ours would fail its writes."""
    twice = sorted({k for k in keys if list(keys).count(k) > 1})
    if twice:
        raise InvalidOptionError(f"{kind} {list(keys)} must not contain duplicate columns: {twice} given more "
                                 "than once")


def java_split(text: str, sep: str) -> list[str]:
    """Java's `String.split` by a literal one-character `sep`: trailing empty parts are dropped
    (a text without `sep` is itself, "" included)."""
    parts = text.split(sep)
    if len(parts) > 1:
        while parts and parts[-1] == "":
            parts.pop()
    return parts


def column_option(key: str) -> tuple[str, str] | None:
    """(column, option) of a per-column option `fields.<column>.<option>`, else None. An
    option's name holds no dot, so the column is what lies before the last one:
    `fields.a.b.aggregate-function` sets column `a.b`'s function, not an option of `a`."""
    if not key.startswith("fields."):
        return None
    column, dot, option = key[len("fields."):].rpartition(".")
    return (column, option) if dot and column and option else None


def check_field_options(options: dict[str, str], names: Sequence[str]) -> None:
    """Every option whose key starts with 'fields' names existing columns between its first and
    second dot (several separated by commas, as a sequence group's key), or is
    'fields.default-aggregate-function': Java's SchemaValidation refuses any other, so Java
    could neither create nor open the table (an option of a column that does not exist, or
    was misspelled, would also be silently ignored)."""
    for key in options:
        if not key.startswith("fields"):
            continue
        parts = java_split(key, ".")
        if len(parts) < 2:
            raise InvalidOptionError(f"table option {key!r} names no column: a column option is "
                                     "'fields.<column>.<option>' (Paimon refuses to create or open such a table)")
        for name in java_split(parts[1], ","):
            if name != "default-aggregate-function" and name not in names:
                raise InvalidOptionError(
                    f"table option {key!r} names column {name!r}, which is not in the table schema {list(names)} "
                    "(Paimon refuses to create or open such a table): remove the option or name a column")


def check_sequence_field(options: dict[str, str], names: Sequence[str]) -> None:
    """`sequence.field` names existing columns, each once, as Java's SchemaValidation requires."""
    raw = options.get("sequence.field")
    if raw is None:
        return
    fields = [f.strip() for f in java_split(raw, ",")]
    for f in fields:
        if f not in names:
            raise InvalidOptionError(f"sequence.field column {f!r} is not in the schema {list(names)} (table "
                                     f"option 'sequence.field' = {raw!r})")
        if fields.count(f) > 1:
            raise InvalidOptionError(f"table option 'sequence.field' = {raw!r} names column {f!r} more than once "
                                     "(Paimon refuses it: sequence field is defined repeatedly)")


def _check_streaming_read_overwrite(schema: "TableSchema") -> None:
    """`streaming-read-overwrite` as a table option: Java's SchemaValidation refuses it with a
    'lookup' or 'full-compaction' changelog producer (a stream would read the changes twice) and
    on a table without primary key ('streaming-read-append-overwrite' is that table's)."""
    raw = schema.options.get("streaming-read-overwrite")
    if raw is None:
        return
    try:
        if not parse_bool(str(raw)):
            return
    except ValueError as exc:
        raise InvalidOptionError(f"invalid value {raw!r} for table option 'streaming-read-overwrite': {exc}") from None
    if not schema.primary_keys:
        raise InvalidOptionError("table option 'streaming-read-overwrite' = 'true' needs a primary-key table (Paimon "
                                 "refuses it on a table without primary key): use 'streaming-read-append-overwrite'")
    producer = str(schema.options.get("changelog-producer", "none")).strip().lower()
    if producer in ("lookup", "full-compaction"):
        raise InvalidOptionError(
            f"table option 'streaming-read-overwrite' = 'true' cannot go with 'changelog-producer' = '{producer}' "
            "(Paimon refuses it: a stream would read an overwrite's changes twice); pass it as a read option "
            "of the stream instead, or leave it out")


def check_field_names(fields: Sequence[DataField], row: str = "") -> None:
    """Every ROW's field names (the table's columns, nested ROWs inside ARRAY and MAP too) hold
    a character other than whitespace and are unique, as Java's RowType requires: Java 1.4.2
    cannot open a table with a column named '' or ' '."""
    names = [f.name for f in fields]
    blank = [n for n in names if all(_java_whitespace(c) for c in n)]
    if blank:
        raise SchemaMismatchError(f"column name {blank[0]!r}{f' in {row}' if row else ''} has no character other than "
                                  "whitespace, which Apache Paimon refuses (Java cannot open such a table)")
    twice = sorted({n for n in names if names.count(n) > 1})
    if twice:
        raise SchemaMismatchError(f"duplicate field names {twice} in {row or 'the schema'}")
    for f in fields:
        for path, nested in _rows_in(f.type, f"{row}.{f.name}".lstrip(".")):
            check_field_names(nested, path)


def _rows_in(t: DataType, path: str) -> Iterator[tuple[str, tuple[DataField, ...]]]:
    """The ROW types in `t` (itself, or inside ARRAY, MULTISET and MAP), with their paths."""
    if t.fields:
        yield path, t.fields
    for inner, suffix in ((t.element, "[]"), (t.key, ".key"), (t.value, ".value")):
        if inner is not None:
            yield from _rows_in(inner, path + suffix)


def _java_whitespace(c: str) -> bool:
    """Java's Character.isWhitespace: Unicode spaces other than the no-break ones, and the
    ASCII separators and controls \t \n \x0b \x0c \r \x1c-\x1f."""
    return c in "\t\n\x0b\x0c\r\x1c\x1d\x1e\x1f" or (
        unicodedata.category(c) in ("Zs", "Zl", "Zp") and c not in "\u00a0\u2007\u202f")


def _refuse_binary_partitions(schema: TableSchema) -> None:
    """Java names a partition directory by the partition value's text, which for BINARY,
    VARBINARY and BYTES is a Java array's identity (`k=[B@5649d11a`, new at every call): Java
    1.4.2 cannot find the files of its own such table, nor of ours. Refused when a table is
    created (Spark refuses binary partition columns too); tables that already have one are read."""
    binary = [k for k in schema.partition_keys if schema.field(k).type.is_binary]
    if binary:
        raise InvalidOptionError(
            f"partition column(s) {binary} are binary: Apache Paimon names a partition directory by its value "
            "as text, which a binary value has not (Java names it by an array's identity, so no reader finds "
            "the files); partition by a STRING (hex or base64 of the bytes), or leave it out of the partition")


def check_changelog_producer(schema: TableSchema, base: TableSchema | None = None) -> None:
    """Refuse a `changelog-producer` every write would refuse (lsm/changelog.py's rules: 'lookup'
    on a primary-key table needs deletion vectors or the first-row engine, and so does
    'force-lookup' but on deduplicate; 'full-compaction' is not produced here), when a table
    is created so (`base` None) or a schema change makes it so. Not when a table is opened,
    nor when a change keeps what `base` already had: a table Java made so (Java writes it)
    stays readable and alterable here."""
    refusal = _unwritable_producer(schema)
    if refusal is not None and (base is None or _unwritable_producer(base) is None):
        raise refusal


def check_moves_kept(schema: TableSchema, base: TableSchema | None = None) -> None:
    """Refuse a cross-partition upsert table whose key moves would leave the old row live:
    merge engine 'deduplicate' retracts a moved key from its old partition with a -D row, which
    'ignore-delete' (or an alias) drops for writers and readers alike, Java's too (whose next
    writer then fails on the duplicate keys); our writers refuse such moves. Refused when a table
    is created so or a schema change makes it so, as `check_changelog_producer`; a table Java
    made so stays readable and writable here."""
    from .cross_partition import ignored_retractions  # imports this module
    option = ignored_retractions(schema)
    if option and (base is None or not ignored_retractions(base)):
        raise InvalidOptionError(
            f"table option '{option}' = 'true' cannot go with merge engine 'deduplicate' on a cross-partition upsert "
            f"table (primary key {list(schema.primary_keys)} without partition keys "
            f"{[k for k in schema.partition_keys if k not in schema.primary_keys]}, 'bucket' = -1): a key written "
            "into another partition is retracted from its old one by a -D row, which the option drops, so the old "
            "row would stay live beside the new one (Paimon accepts the table; its next writer then fails on the "
            "duplicate keys); drop -D rows before writing instead, or put the partition keys in the primary key")


def _unwritable_producer(schema: TableSchema) -> InvalidOptionError | None:
    from .lsm.changelog import changelog_producer  # the writer's module: imported when needed
    keys = list(schema.primary_keys)
    try:  # an append table with a producer: Java refuses to create or open it
        changelog_producer(schema.core_options, keys, f"with primary key {keys}" if keys else "without primary key")
    except InvalidOptionError as exc:
        return exc
    return None


def _split(text: str) -> list[str]:
    return [s.strip() for s in text.split(",") if s.strip()]


def _option_str(value: Any) -> str:
    if isinstance(value, bool):
        return "true" if value else "false"
    return str(value)


class SchemaManager:
    """Reads and creates the schema files of one table."""

    def __init__(self, file_io: FileIO, table_path: str):
        self.file_io = file_io
        self.dir = f"{table_path}/schema"

    def path(self, schema_id: int) -> str:
        return f"{self.dir}/schema-{schema_id}"

    def schema_ids(self) -> list[int]:
        ids = []
        for name in self.file_io.list_names(self.dir):
            if name.startswith("schema-") and name[7:].isdigit():
                ids.append(int(name[7:]))
        return sorted(ids)

    def latest(self) -> TableSchema | None:
        ids = self.schema_ids()
        if not ids:
            self._no_schema_but_snapshots()
        return self.schema(ids[-1]) if ids else None

    def _no_schema_but_snapshots(self) -> None:
        """A table with snapshots and no schema file lost it: MissingFileError naming the one
        its newest snapshot uses (not "no table here")."""
        from .errors import MissingFileError
        snapshot_dir = f"{self.dir.rsplit('/', 1)[0]}/snapshot"
        ids = sorted(int(n[9:]) for n in self.file_io.list_names(snapshot_dir)
                     if n.startswith("snapshot-") and n[9:].isdigit())
        if not ids:
            return
        try:
            schema_id = int(json.loads(self.file_io.read_bytes(f"{snapshot_dir}/snapshot-{ids[-1]}"))["schemaId"])
        except (OSError, ValueError, KeyError, TypeError):
            schema_id = 0
        raise MissingFileError(f"schema file {self.dir}/schema-{schema_id} does not exist (no schema file is "
                               f"left in {self.dir}), but the table has snapshots {ids[0]}..{ids[-1]}; restore "
                               "the schema files from a backup")

    def schema(self, schema_id: int) -> TableSchema:
        """Load schema file `schema_id`: MissingFileError when absent, CorruptFileError when it
        does not decode (or holds another id); both name the file."""
        from .errors import CorruptFileError, MissingFileError
        path = self.path(schema_id)
        try:
            data = self.file_io.read_bytes(path)
        except FileNotFoundError:
            raise MissingFileError(f"schema file {path} does not exist; data files written with schema "
                                   f"{schema_id} cannot be read without it (restore it from a backup)") from None
        try:
            text = data.decode("utf-8")  # strict: a damaged byte is an error
            obj = json.loads(text)
            damage = _check_failure(obj)
            if not damage:
                schema = TableSchema.from_json(text)
                damage = _schema_damage(schema, schema_id, obj)
        except PaimonError as exc:  # e.g. an unknown type: keep the class, name the file
            raise type(exc)(f"schema file {path}: {exc}") from exc
        except (ValueError, KeyError, TypeError, AttributeError, IndexError) as exc:
            raise CorruptFileError(f"schema file {path} cannot be parsed ({type(exc).__name__}: {exc}); "
                                   "restore it from a backup") from exc
        if damage:
            raise CorruptFileError(f"schema file {path} is damaged: {damage}; restore it from a backup")
        return schema

    def try_commit(self, schema: TableSchema) -> bool:
        """Publish `schema` as `schema-<its id>` unless that id is taken (then False): schema
        changes race like snapshot commits."""
        return self.file_io.try_create_atomic(self.path(schema.id), schema.to_json().encode())

    def create(self, schema: TableSchema) -> TableSchema:
        """Write schema 0 (or the next id); fails if that id was taken concurrently."""
        ids = self.schema_ids()
        schema = replace(schema, id=(ids[-1] + 1) if ids else 0)
        if not self.file_io.try_create_atomic(self.path(schema.id), schema.to_json().encode()):
            raise PaimonError(f"schema {schema.id} of {self.dir} was created concurrently")
        return schema


_SCHEMA_KEYS = ("version", "id", "fields", "highestFieldId", "partitionKeys", "primaryKeys", "options", "comment",
                "timeMillis")


def _check_failure(obj: Any) -> str | None:
    """Why a schema file we wrote fails its check (json_check.py), or None; checked before its
    values are decoded, so damage is never taken for, say, a type of a newer Paimon."""
    if not isinstance(obj, dict) or CHECK_KEY not in obj:
        return None
    return check_mismatch(obj[CHECK_KEY], json_check({k: v for k, v in obj.items() if k != CHECK_KEY}))


def _schema_damage(schema: TableSchema, schema_id: int, obj: dict) -> str | None:
    """What makes a decoded schema file implausible, or None (JSON has no checksum: this catches
    what a damaged byte that still parses can do)."""
    if schema.id != schema_id:
        return f"it holds schema id {schema.id!r}"
    names = {f.name for f in schema.fields}
    ids = [f.id for f in schema.fields]
    if len(names) < len(schema.fields) or len(set(ids)) < len(ids):
        return f"its field names or ids repeat ({[(f.id, f.name) for f in schema.fields]})"
    top = max_field_id(schema.fields)
    if top > schema.highest_field_id:  # every writer counts each id, nested ones too, into highestFieldId
        return f"its field ids reach {top}, above its highestFieldId {schema.highest_field_id}"
    unknown = [k for k in (*schema.primary_keys, *schema.partition_keys) if k not in names]
    if unknown:
        return f"its primary/partition keys {unknown} are not among its fields {sorted(names)}"
    for key in obj:
        near = [k for k in _SCHEMA_KEYS if k != key and len(k) == len(key) and sum(a != b for a, b in zip(k, key)) == 1]
        if near:
            return f"it has the unknown key {key!r}, one character away from {near[0]!r}"
    return None


_INTEGERS = ("TINYINT", "SMALLINT", "INT", "BIGINT")
_WRITABLE_FROM = {  # target root -> input roots Arrow can cast safely (overflow is still checked)
    **{r: _INTEGERS for r in _INTEGERS},
    "FLOAT": _INTEGERS + ("FLOAT", "DOUBLE"), "DOUBLE": _INTEGERS + ("FLOAT", "DOUBLE"),
    "DECIMAL": _INTEGERS + ("DECIMAL",),
    "CHAR": ("CHAR", "VARCHAR"), "VARCHAR": ("CHAR", "VARCHAR"),
    "BINARY": ("BINARY", "VARBINARY"), "VARBINARY": ("BINARY", "VARBINARY"),
    "TIMESTAMP": ("TIMESTAMP", "TIMESTAMP_LTZ"), "TIMESTAMP_LTZ": ("TIMESTAMP", "TIMESTAMP_LTZ"),
    "TIME": ("TIME", "INT"),  # milliseconds of the day, as Spark reads TIME (write.conform checks the range)
}


def _variant_parts(t: DataType) -> bool:
    """A ROW of exactly binary `value` and `metadata`: a variant whose Arrow tag was lost."""
    return t.root == "ROW" and sorted(f.name for f in t.fields) == ["metadata", "value"] and all(
        f.type.is_binary for f in t.fields)


def _row_fields_check(column: str, have: DataType, want: DataType) -> None:
    """ROW fields are matched by name, as the write casts them (and as top-level columns are):
    any order; a missing nullable field is null; a field the table's ROW lacks is refused (a
    cast would drop it, and leave the table's fields null)."""
    wanted = {w.name for w in want.fields}
    given = {h.name: h for h in have.fields}
    unknown = [h.name for h in have.fields if h.name not in wanted]
    if unknown:
        raise SchemaMismatchError(
            f"column '{column}' has field(s) {unknown} that its table type {want.sql()} does not have: ROW "
            f"fields are matched by name, rename them to the table's ({sorted(wanted)})")
    missing = [w.name for w in want.fields if w.name not in given and not w.type.nullable]
    if missing:
        raise SchemaMismatchError(f"column '{column}' lacks the NOT NULL field(s) {missing} of its table type "
                                  f"{want.sql()}")
    for w in want.fields:
        if w.name in given:
            cast_type_check(f"{column}.{w.name}", given[w.name].type, w.type)


def cast_type_check(column: str, have: DataType, want: DataType) -> None:
    """Raise a SchemaMismatchError naming the column when `have` cannot be written as `want`.

    Widening and same-family casts are allowed; values that do not fit (integer overflow,
    lost decimal digits) are caught by Arrow's safe cast when the column is converted.
    """
    if have.root == want.root == "ROW":
        _row_fields_check(column, have, want)
        return
    if have.root == want.root and have.root in ("ARRAY", "MULTISET"):
        cast_type_check(f"{column}[]", have.element, want.element)
        return
    if have.root == want.root == "MAP":
        cast_type_check(f"{column}.key", have.key, want.key)
        cast_type_check(f"{column}.value", have.value, want.value)
        return
    if have.root == "MAP" and want.root == "MULTISET":  # Arrow has none: each element's count, as `to_arrow`
        cast_type_check(f"{column}.key", have.key, want.element)
        cast_type_check(f"{column}.value", have.value, MULTISET_COUNT)
        return
    if want.root == "VARIANT" and (have.root == "VARIANT" or _variant_parts(have)):
        return
    if not have.is_structured and (have.root == want.root or have.root in _WRITABLE_FROM.get(want.root, ())):
        return
    raise SchemaMismatchError(
        f"column '{column}' has type {have.sql()} which cannot be written to table type {want.sql()}")
