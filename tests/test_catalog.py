"""The filesystem catalog (paimon_streaming/catalog.py): databases and tables by name, and the
errors that name what is missing or already there."""
from __future__ import annotations

import os

import pyarrow as pa
import pytest

import paimon_streaming as ps
from paimon_streaming.catalog import create_table_at, load_table, split_identifier
from paimon_streaming.errors import InvalidNameError, TableAlreadyExistsError, TableNotFoundError

SCHEMA = pa.schema([("id", pa.int64())])


def test_a_bare_table_name_is_in_the_default_database(catalog, warehouse):
    assert split_identifier("orders") == ("default", "orders")
    t = catalog.create_table("orders", SCHEMA)
    assert t.path == f"{warehouse}/default.db/orders" and catalog.list_tables("default") == ["orders"]
    assert load_table("orders", warehouse=warehouse).path == t.path
    with pytest.raises(InvalidNameError, match=r"table 'orders' is not a path; .*pass warehouse="):
        load_table("orders")


def test_file_uris_with_one_slash_are_local_paths(catalog, warehouse, tmp_path, monkeypatch):
    """`file:/abs/path` (how Spark and Hadoop qualify a local path: CREATE TABLE ... LOCATION,
    OPTIONS(path)) was taken as a relative path, so the table landed in ./file:/abs/path."""
    t = catalog.create_table("db.t", SCHEMA)
    t.write_arrow(pa.table({"id": [1]}))
    monkeypatch.chdir(tmp_path)
    for location in (f"file:{t.path}", f"file://{t.path}"):
        assert ps.Table.open(location).path == t.path
        assert ps.Table.open(location).to_arrow().column("id").to_pylist() == [1]
    assert ps.Catalog(f"file:{warehouse}").get_table("db.t").path == t.path
    assert not os.path.exists(tmp_path / "file:")
    with pytest.raises(ValueError, match="not absolute"):
        ps.Table.open("file:relative/t")


def test_a_column_of_a_type_paimon_lacks_is_named(catalog):
    """A Spark interval or NULL-literal column (df.write creates the table from it) was refused
    as "Arrow type duration[us] has no Paimon equivalent", without its name."""
    from paimon_streaming.errors import UnsupportedTypeError
    for arrow, match in ((pa.duration("us"), r"column 'iv': Arrow type duration\[us\]"),
                         (pa.null(), r"column 'iv': Arrow type null .*cast it to the type it will hold")):
        with pytest.raises(UnsupportedTypeError, match=match):
            catalog.create_table("db.t", pa.schema([("id", pa.int64()), ("iv", arrow)]))
    assert not catalog.table_exists("db.t")


def test_databases_and_tables_that_are_missing_or_already_there(catalog, warehouse):
    catalog.create_database("db")
    with pytest.raises(TableAlreadyExistsError, match=rf"database db already exists in {warehouse}"):
        catalog.create_database("db")
    catalog.create_database("db", ignore_if_exists=True)
    for call in (lambda: catalog.drop_database("nodb"), lambda: catalog.list_tables("nodb")):
        with pytest.raises(TableNotFoundError, match=rf"database nodb does not exist in {warehouse}"):
            call()
    catalog.drop_database("nodb", ignore_if_not_exists=True)
    with pytest.raises(TableNotFoundError, match=rf"table db.missing does not exist in {warehouse}"):
        catalog.drop_table("db.missing")
    catalog.drop_table("db.missing", ignore_if_not_exists=True)
    with pytest.raises(TableNotFoundError, match=rf"table db.missing does not exist in {warehouse}"):
        catalog.rename_table("db.missing", "db.other")
    assert not os.path.exists(f"{warehouse}/db.db/other")


def test_a_missing_branch_of_an_existing_table_names_the_branches(catalog):
    t = catalog.create_table("db.t", SCHEMA)
    t.write_arrow(pa.table({"id": [1]}))
    t.create_tag("t1")
    t.create_branch("dev", tag="t1")
    with pytest.raises(TableNotFoundError, match=r"no branch 'nope'.*dev"):
        catalog.get_table("db.t$branch_nope")
    with pytest.raises(TableNotFoundError, match=r"table db.gone does not exist"):
        catalog.get_table("db.gone$branch_dev")
    assert catalog.get_table("db.t$branch_dev").to_arrow().num_rows == 1
    assert isinstance(catalog.get_table("db.t"), ps.Table)


def test_tables_and_databases_other_writers_named_are_listed_and_opened(catalog, warehouse):
    """Java's filesystem catalog makes tables named ' lead', 'trail ', 'a.b', '.hid' and a
    database ' sp ' (it checks no names); list_tables/list_databases returned them and
    get_table then refused them with InvalidNameError. They are looked up as Java's catalog
    does, 'db.a.b' split at the first '.' as Java's Identifier.fromString; we still create
    none of them."""
    names = [" lead", "trail ", "a.b", ".hid"]
    for db, name in [("db", n) for n in names] + [(" sp ", "t")]:
        create_table_at(f"{warehouse}/{db}.db/{name}", SCHEMA).write_arrow(pa.table({"id": [len(name)]}))
    assert catalog.list_databases() == [" sp ", "db"] and catalog.list_tables("db") == sorted(names)
    for db, name in [("db", n) for n in names] + [(" sp ", "t")]:
        assert catalog.table_exists(f"{db}.{name}")
        t = catalog.get_table(f"{db}.{name}")
        assert t.path == f"{warehouse}/{db}.db/{name}" and t.to_arrow()["id"].to_pylist() == [len(name)]
    assert catalog.create_table("db. lead", SCHEMA, ignore_if_exists=True).path == f"{warehouse}/db.db/ lead"
    catalog.rename_table("db.a.b", "db.ab")
    catalog.drop_table("db.ab")
    assert catalog.list_tables("db") == [" lead", ".hid", "trail "]
    for identifier in ("db.x.y", "db. new", " sp .new ", "db..new"):
        with pytest.raises(InvalidNameError, match="invalid table name"):
            catalog.create_table(identifier, SCHEMA)
    with pytest.raises(InvalidNameError, match="invalid database name"):
        catalog.create_table(" new .t", SCHEMA)
    for identifier in ("db..", "db.x/y", "db.t$snapshots", "../x.t"):
        with pytest.raises(InvalidNameError, match="invalid (table|database) name"):
            catalog.get_table(identifier)


def test_a_new_name_with_a_colon_is_refused_and_an_existing_one_opens(catalog, warehouse):
    """A table named 'c:d' was created locally, but on HDFS (whose paths cannot hold ':' in a
    directory name) create_table failed with a bare "OSError [Errno 22] HDFS create directory
    failed", and Java's Path takes 'c:d' for a URI scheme. New names with ':' are refused,
    naming the character; a table an earlier version made still lists and opens."""
    for create in (lambda: catalog.create_table("db.c:d", SCHEMA), lambda: catalog.create_table("d:b.t", SCHEMA),
                   lambda: catalog.create_database("d:b")):
        with pytest.raises(InvalidNameError, match=r"(table|database) name '(c:d|d:b)': ':' cannot be"):
            create()
    assert catalog.list_databases() == []
    create_table_at(f"{warehouse}/db.db/c:d", SCHEMA).write_arrow(pa.table({"id": [1]}))
    assert catalog.list_tables("db") == ["c:d"]
    assert catalog.get_table("db.c:d").to_arrow()["id"].to_pylist() == [1]
    catalog.create_table("db.t", SCHEMA)
    with pytest.raises(InvalidNameError, match="':' cannot be"):
        catalog.rename_table("db.t", "db.e:f")
    catalog.rename_table("db.c:d", "db.cd")
    assert catalog.list_tables("db") == ["cd", "t"]
