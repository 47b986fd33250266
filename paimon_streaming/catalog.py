"""Filesystem catalog: a warehouse directory of `<db>.db/<table>/` Paimon tables."""
from __future__ import annotations

import re
from typing import Any

import pyarrow as pa
import pyarrow.fs as pafs

from .branches import SUFFIX, branch_names, branch_path, resolve_branch, split_branch
from .errors import InvalidNameError, TableAlreadyExistsError, TableNotFoundError
from .external_paths import listed_roots
from .fileio import FileIO
from .schema import SchemaManager, TableSchema
from .table import Table

DB_SUFFIX = ".db"
SYSTEM_TABLE_SPLITTER = "$"
_NAME = re.compile(r"^[^./\\\x00-\x1f\x7f]+$")


def check_name(kind: str, name: str, new: bool = False) -> str:
    """Database and table names are directory names: a name never has a path separator ('/',
    '\\') or NUL, nor is '', '.' or '..'; a table name has no '$' (it selects system tables,
    `orders$snapshots`, as in Paimon). `new` (a name being created) also refuses '.', control
    characters and surrounding spaces, which other engines' identifiers trip on, and ':', which a
    Hadoop path segment cannot hold (HDFS refuses it, Java's Path reads 'a:b' as a URI scheme);
    existing ones (Java and other writers make ' lead', 'a.b', '.hid'; ours made 'a:b') are
    looked up as Java's filesystem catalog does. Unicode is fine."""
    if not isinstance(name, str) or name in ("", ".", "..") or any(c in name for c in "/\\\x00"):
        raise InvalidNameError(f"invalid {kind} name {name!r}: a name is one directory name (not '', '.' or '..', "
                               "without '/', '\\' or NUL)")
    if new and (not _NAME.match(name) or name.strip() != name):
        raise InvalidNameError(f"invalid {kind} name {name!r}: use a non-empty name without '.', '/', '\\', "
                               "control characters or surrounding spaces")
    if new and ":" in name:
        raise InvalidNameError(f"invalid {kind} name {name!r}: ':' cannot be in a Hadoop path's directory name "
                               "(HDFS refuses it; Paimon Java's paths take 'a:b' for a URI scheme); choose a name without it")
    if kind == "table" and SYSTEM_TABLE_SPLITTER in name:
        raise InvalidNameError(f"invalid table name {name!r}: '$' separates a table from its system tables "
                               "(orders$snapshots); choose a name without it")
    return name


def split_identifier(identifier: str) -> tuple[str, str]:
    """'db.table' -> ('db', 'table'), split at the first '.' as Java's Identifier.fromString
    ('db.a.b' is table 'a.b'); a bare name means database 'default'."""
    db, sep, table = identifier.partition(".")
    if not sep:
        db, table = "default", identifier
    return check_name("database", db), check_name("table", table)


class Catalog:
    """Databases and tables in a warehouse: a local path or a pyarrow filesystem URI
    (file://, s3://, hdfs://, gs://...), or any `pyarrow.fs.FileSystem` via `filesystem=`.

    `options`: `s3.endpoint` (URL of an S3-compatible server) and `s3.region` for s3://
    warehouses; credentials come from the URI or the standard AWS_* environment variables.
    """

    def __init__(self, warehouse: str, filesystem: pafs.FileSystem | None = None,
                 options: dict[str, str] | None = None):
        self.file_io, self.warehouse = FileIO.for_path(warehouse, filesystem, options)

    # ---- databases ------------------------------------------------------------------------
    def database_path(self, name: str) -> str:
        return f"{self.warehouse}/{check_name('database', name)}{DB_SUFFIX}"

    def list_databases(self) -> list[str]:
        return sorted(s.path.rsplit("/", 1)[-1][: -len(DB_SUFFIX)] for s in self.file_io.list_status(self.warehouse)
                      if s.is_dir and s.path.endswith(DB_SUFFIX))

    def database_exists(self, name: str) -> bool:
        return self.file_io.is_dir(self.database_path(name))

    def create_database(self, name: str, ignore_if_exists: bool = False) -> None:
        if self.database_exists(name):
            if ignore_if_exists:
                return
            raise TableAlreadyExistsError(f"database {name} already exists in {self.warehouse}")
        self.file_io.mkdirs(self.database_path(check_name("database", name, new=True)))

    def drop_database(self, name: str, ignore_if_not_exists: bool = False, cascade: bool = False) -> None:
        if not self.database_exists(name):
            if ignore_if_not_exists:
                return
            raise TableNotFoundError(f"database {name} does not exist in {self.warehouse}")
        tables = self.list_tables(name)
        if tables and not cascade:
            raise ValueError(f"database {name} is not empty (tables: {tables}); use cascade=True")
        self.file_io.delete_dir(self.database_path(name))

    # ---- tables ---------------------------------------------------------------------------
    def table_path(self, identifier: str) -> str:
        db, table = split_identifier(identifier)
        return f"{self.database_path(db)}/{table}"

    def table_location(self, identifier: str) -> str:
        """The table as a location string (URI with the warehouse's settings for object
        stores) that `Table.open` and Spark executors open without this catalog."""
        return self.file_io.uri(self.table_path(identifier))

    def list_tables(self, database: str) -> list[str]:
        if not self.database_exists(database):
            raise TableNotFoundError(f"database {database} does not exist in {self.warehouse}")
        out = []
        for s in self.file_io.list_status(self.database_path(database)):
            if s.is_dir and SchemaManager(self.file_io, s.path).schema_ids():
                out.append(s.path.rsplit("/", 1)[-1])
        return sorted(out)

    def table_exists(self, identifier: str) -> bool:
        """Whether the table (or its branch: `db.t$branch_dev`) exists."""
        identifier, branch = split_branch(identifier)
        return bool(SchemaManager(self.file_io, branch_path(self.table_path(identifier), branch)).schema_ids())

    def create_table(self, identifier: str, schema: pa.Schema, primary_keys: list[str] | None = None,
                     partition_keys: list[str] | None = None, options: dict[str, Any] | None = None,
                     ignore_if_exists: bool = False, comment: str | None = None) -> Table:
        """Create a table from an Arrow schema. The database is created when missing."""
        if split_branch(identifier)[1] is None and self.table_exists(identifier):
            if ignore_if_exists:
                return self.get_table(identifier)
            raise TableAlreadyExistsError(f"table {identifier} already exists at {self.table_path(identifier)}")
        db = self.check_new_table(identifier)
        table_schema = TableSchema.create(schema, primary_keys, partition_keys, options, comment)
        self.create_database(db, ignore_if_exists=True)
        path = self.table_path(identifier)
        SchemaManager(self.file_io, path).create(table_schema)
        return Table(self.file_io, path, identifier)

    def check_new_table(self, identifier: str) -> str:
        """The database of a table `create_table` would create; InvalidNameError for a name it
        refuses: a branch, a table name that is no plain directory name, or such a name of a
        database not created yet (callers check before work that would be lost)."""
        if split_branch(identifier)[1] is not None:
            raise InvalidNameError(f"{identifier} names a branch: create it from its table with "
                                   "Table.create_branch (or `paimon-streaming branch create`)")
        db, table = split_identifier(identifier)
        check_name("table", table, new=True)
        if not self.database_exists(db):
            check_name("database", db, new=True)
        return db

    def get_table(self, identifier: str) -> Table:
        """The table; TableNotFoundError when there is none, MissingFileError when its directory
        has snapshots but lost its schema files."""
        identifier, branch = split_branch(identifier)
        path = self.table_path(identifier)
        try:
            return Table(self.file_io, path, identifier, branch)
        except TableNotFoundError:
            if branch is not None and self.table_exists(identifier):
                raise  # the table exists, the branch does not: the error names the branches
            raise TableNotFoundError(f"table {identifier} does not exist in {self.warehouse} "
                                     f"(looked in {path})") from None

    def rename_table(self, identifier: str, new_identifier: str) -> Table:
        """Rename (or move to another database) a table: one atomic directory rename, so a
        reader sees the table under one name or the other (local filesystems and HDFS)."""
        if not self.table_exists(identifier):
            raise TableNotFoundError(f"table {identifier} does not exist in {self.warehouse}")
        check_name("table", split_identifier(new_identifier)[1], new=True)
        if self.table_exists(new_identifier) or self.file_io.exists(self.table_path(new_identifier)):
            raise TableAlreadyExistsError(f"table {new_identifier} already exists at {self.table_path(new_identifier)}")
        self.file_io.check_dir_rename()  # before the new name's database is created
        self.create_database(split_identifier(new_identifier)[0], ignore_if_exists=True)
        try:
            self.file_io.rename_dir(self.table_path(identifier), self.table_path(new_identifier))
        except OSError as exc:  # another rename took the name since the check (EEXIST, ENOTEMPTY)
            if not self.file_io.exists(self.table_path(new_identifier)):
                raise
            raise TableAlreadyExistsError(f"table {new_identifier} already exists at "
                                          f"{self.table_path(new_identifier)}") from exc
        return self.get_table(new_identifier)

    def drop_table(self, identifier: str, ignore_if_not_exists: bool = False) -> None:
        if not self.table_exists(identifier):
            if ignore_if_not_exists:
                return
            raise TableNotFoundError(f"table {identifier} does not exist in {self.warehouse}")
        path = self.table_path(identifier)
        roots = external_roots(self.file_io, path)
        self.file_io.delete_dir(path)
        for root in roots:  # as Java's drop: the table's external data paths go with it
            self.file_io.delete_dir(root)


def external_roots(file_io: FileIO, table_path: str) -> set[str]:
    """Every `data-file.external-paths` root any schema of the table (any branch) names."""
    roots = set()
    for branch in [None, *branch_names(file_io, table_path)]:
        schemas = SchemaManager(file_io, branch_path(table_path, branch))
        for schema_id in schemas.schema_ids():
            roots.update(listed_roots(schemas.schema(schema_id).options))
    return roots


def create_table_at(location: str, schema: pa.Schema, primary_keys: list[str] | None = None,
                    partition_keys: list[str] | None = None, options: dict[str, Any] | None = None) -> Table:
    """Create a table in a directory (or URI) outside any catalog; `primary-key` and
    `partition` may also come as options, as Paimon accepts them."""
    file_io, path = FileIO.for_path(location)
    SchemaManager(file_io, path).create(TableSchema.create(schema, primary_keys, partition_keys, options))
    return Table(file_io, path)


def load_table(table: str, warehouse: str | None = None, branch: str | None = None) -> Table:
    """Open a table given as a directory/URI, or as "db.table" inside `warehouse`; a branch
    with `branch` or Java's `$branch_<name>` suffix on either."""
    ref, branch = resolve_branch(table, branch)
    if warehouse is not None:
        return Catalog(warehouse).get_table(ref if branch is None else f"{ref}{SUFFIX}{branch}")
    if "/" not in ref and "://" not in ref:
        raise InvalidNameError(f"table {table!r} is not a path; give a table directory (or URI), "
                               "or pass warehouse= to resolve a 'db.table' name")
    return Table.open(ref, branch=branch)
