"""Schema evolution (issue 18): `Table.update_schema()` adds, renames, drops and widens columns
(also nested ROW fields), drops NOT NULL, sets options; every older file reads under the new
schema by field id, time travel reads with the snapshot's schema, concurrent changes and
writers stay correct, and pypaimon and Paimon Java read the evolved tables as we do."""
from __future__ import annotations

import decimal
import json
import os
import threading

import pyarrow as pa
import pyarrow.compute as pc
import pytest

import paimon_streaming as ps
from conftest import pypaimon_read, rows_by
from paimon_streaming.cli import main
from paimon_streaming.errors import InvalidOptionError, SchemaMismatchError, TableAlreadyExistsError
from paimon_streaming.schema_update import widening_error
from paimon_streaming.types import parse_atomic

ADDRESS = pa.struct([("city", pa.string()), ("zip", pa.int32())])
SCHEMA = pa.schema([pa.field("id", pa.int64(), False), ("qty", pa.int32()), ("price", pa.decimal128(10, 2)),
                    ("note", pa.string()), ("addr", ADDRESS)])
TABLES = {"dv": {"bucket": "2", "deletion-vectors.enabled": "true"}, "mor": {"bucket": "2"},
          "append": {"bucket": "-1"}}


def first_batch(ids):
    return pa.table({"id": ids, "qty": pa.array([i * 10 for i in ids], pa.int32()),
                     "price": [decimal.Decimal(f"{i}.25") for i in ids], "note": [f"n{i}" for i in ids],
                     "addr": [{"city": f"c{i}", "zip": 1000 + i} for i in ids]}, schema=SCHEMA)


def evolve(t: ps.Table) -> None:
    """One update with every change kind, as one schema file."""
    with t.update_schema() as u:
        u.add_column("coupon", pa.string(), after="id")
        u.rename_column("note", "remark")
        u.update_column("qty", pa.int64())
        u.update_column("price", "DECIMAL(14, 3)")
        u.drop_column(("addr", "city"))
        u.rename_column(("addr", "zip"), "postcode")
        u.update_column(("addr", "postcode"), pa.int64())
        u.add_column(("addr", "country"), pa.string())
        u.set_option("snapshot.num-retained.min", "20")


def second_batch(ids):
    return pa.table({"id": ids, "coupon": [f"X{i}" for i in ids], "qty": [2**40 + i for i in ids],
                     "price": [decimal.Decimal(f"{i}.125") for i in ids], "remark": [f"r{i}" for i in ids],
                     "addr": [{"postcode": 2**33 + i, "country": "NL"} for i in ids]})


def expected_rows(first, second, pk: bool) -> list[dict]:
    rows = {} if pk else []
    for i in first:
        row = {"id": i, "coupon": None, "qty": i * 10, "price": decimal.Decimal(f"{i}.250"), "remark": f"n{i}",
               "addr": {"postcode": 1000 + i, "country": None}}
        rows.__setitem__(i, row) if pk else rows.append(row)
    for i in second:
        row = {"id": i, "coupon": f"X{i}", "qty": 2**40 + i, "price": decimal.Decimal(f"{i}.125"),
               "remark": f"r{i}", "addr": {"postcode": 2**33 + i, "country": "NL"}}
        rows.__setitem__(i, row) if pk else rows.append(row)
    return rows_by(pa.Table.from_pylist(list(rows.values()) if pk else rows), "id", "coupon")


@pytest.fixture
def evolved(request, catalog):
    kind = request.param
    t = catalog.create_table(f"db.{kind}", SCHEMA, primary_keys=None if kind == "append" else ["id"],
                             options=TABLES[kind])
    t.write_arrow(first_batch([1, 2, 3, 4]))
    before = t.latest_snapshot().id
    evolve(t)
    t.write_arrow(second_batch([3, 5]))
    return kind, t, before


@pytest.mark.parametrize("evolved", ["dv", "mor", "append"], indirect=True)
def test_every_change_kind_reads_old_and_new_files_by_field_id(evolved, warehouse):
    kind, t, before = evolved
    pk = kind != "append"
    want = expected_rows([1, 2, 3, 4], [3, 5], pk)
    assert t.schema.id == 1 and sorted(os.listdir(f"{t.path}/schema")) == ["schema-0", "schema-1"]
    assert t.schema.field_names == ["id", "coupon", "qty", "price", "remark", "addr"]
    assert [f.id for f in t.schema.fields] == [0, 7, 1, 2, 3, 4]  # kept ids; the new column got a new one
    assert rows_by(t.to_arrow(), "id", "coupon") == want
    assert rows_by(ps.Table.open(t.path).to_arrow(), "id", "coupon") == want
    # projection and filters by the new names, pruning on widened stats
    got = t.to_arrow(columns=["id", "remark", "qty"], filter=[("qty", ">=", 30)])
    assert rows_by(got, "id", "remark") == rows_by(pa.Table.from_pylist(
        [{"id": r["id"], "remark": r["remark"], "qty": r["qty"]} for r in want if r["qty"] >= 30]), "id", "remark")
    # time travel: the snapshot before the change, with the schema it was written with
    old = t.to_arrow(snapshot_id=before)
    if kind != "dv" or old.num_rows:
        assert old.column_names == ["id", "qty", "price", "note", "addr"]
    if pk:  # compaction rewrites old files into the new schema; the answer stays
        t.compact(full=True)
    assert rows_by(ps.Table.open(t.path).to_arrow(), "id", "coupon") == want
    assert rows_by(pypaimon_read(warehouse, f"db.{kind}"), "id", "coupon") == want


@pytest.mark.parametrize("evolved", ["dv", "mor"], indirect=True)
def test_java_reads_our_evolved_tables(evolved):
    from java_oracle import get_oracle
    kind, t, _ = evolved
    java = get_oracle().read(t.path)
    want = expected_rows([1, 2, 3, 4], [3, 5], True)
    assert rows_by(pa.Table.from_pylist(java), "id", "coupon") == want


def test_drop_then_add_the_same_name_is_a_new_column(catalog):
    t = catalog.create_table("db.t", SCHEMA, primary_keys=["id"], options={"bucket": "1"})
    t.write_arrow(first_batch([1]))
    t.update_schema().drop_column("note").commit()
    t.update_schema().add_column("note", pa.string()).commit()
    assert t.to_arrow().column("note").to_pylist() == [None]  # old values are not resurrected
    assert t.schema.field("note").id == t.schema.highest_field_id == 7


def test_add_column_before_partition(catalog):
    """`add-column-before-partition` = true: a column added without a position goes before the
    first partition column (Java's SchemaManager), nested ones and placed ones as asked."""
    schema = pa.schema([("id", pa.int64(), False), ("dt", pa.string()), ("v", pa.string())])
    t = catalog.create_table("db.before", schema, partition_keys=["dt"],
                             options={"add-column-before-partition": "true"})
    t.update_schema().add_column("a", "INT").add_column("z", "STRING", after="v").commit()
    assert ps.Table.open(t.path).schema.field_names == ["id", "a", "dt", "v", "z"]
    plain = catalog.create_table("db.plain", schema, partition_keys=["dt"])
    plain.update_schema().add_column("a", "INT").commit()
    assert ps.Table.open(plain.path).schema.field_names == ["id", "dt", "v", "a"]


def test_several_changes_are_one_schema_file_and_no_change_is_none(catalog):
    t = catalog.create_table("db.t", SCHEMA, primary_keys=["id"], options={"bucket": "1"})
    assert t.update_schema().commit().id == 0  # nothing asked: no file
    t.update_schema().add_column("a", pa.int8()).add_column("b", pa.int8(), first=True).commit()
    assert sorted(os.listdir(f"{t.path}/schema")) == ["schema-0", "schema-1"]
    assert t.schema.field_names[:2] == ["b", "id"] and t.schema.field_names[-1] == "a"
    assert t.update_schema().union_by_name(pa.schema([("a", pa.int8()), ("id", pa.int32())])).commit().id == 1
    t.update_schema().union_by_name(pa.schema([("a", pa.int16()), ("c", pa.string()), ("n", pa.null())])).commit()
    assert sorted(os.listdir(f"{t.path}/schema")) == ["schema-0", "schema-1", "schema-2"]
    assert str(t.schema.field("a").type) == "SMALLINT" and t.schema.field_names[-1] == "c"


@pytest.mark.parametrize("change,error,match", [
    (lambda u: u.update_column("qty", pa.int16()), SchemaMismatchError, "INT cannot be widened to SMALLINT"),
    (lambda u: u.update_column("note", pa.int64()), SchemaMismatchError, "STRING cannot be widened to BIGINT"),
    (lambda u: u.update_column("price", "DECIMAL(10, 3)"), SchemaMismatchError, "without losing information"),
    (lambda u: u.update_column("qty", pa.float32()), SchemaMismatchError, "INT cannot be widened to FLOAT"),
    (lambda u: u.update_column("id", pa.decimal128(20, 0)), SchemaMismatchError, "key column 'id'"),
    (lambda u: u.drop_column("id"), SchemaMismatchError, "primary key column 'id'"),
    # Java renames the key column and keeps the option, then fails every write ("id does not exist")
    (lambda u: u.set_option("file-index.bloom-filter.columns", "id").rename_column("id", "key"), InvalidOptionError,
     "'file-index.bloom-filter.columns' names 'id', which is not a column"),
    (lambda u: u.add_column("n", "INT NOT NULL"), SchemaMismatchError, "cannot be added as NOT NULL"),
    (lambda u: u.update_column("qty", nullable=False), SchemaMismatchError, "cannot become NOT NULL"),
    (lambda u: u.add_column("qty", pa.int8()), SchemaMismatchError, "'qty' already exists"),
    (lambda u: u.add_column("_VALUE_KIND", pa.int8()), SchemaMismatchError, "reserved"),
    (lambda u: u.rename_column("qty", "note"), SchemaMismatchError, "'note' already exists"),
    # a name differing only in case: Spark (case-insensitive by default) could select neither column
    (lambda u: u.add_column("Note", pa.string()), SchemaMismatchError,
     "'Note' differs from the existing column 'note' only in case"),
    (lambda u: u.add_column(("addr", "City"), pa.string()), SchemaMismatchError, "existing column 'addr.city'"),
    (lambda u: u.rename_column("qty", "NOTE"), SchemaMismatchError, "existing column 'note' only in case"),
    (lambda u: u.union_by_name(pa.schema([("QTY", pa.int32())])), SchemaMismatchError, "existing column 'qty'"),
    (lambda u: u.union_by_name(pa.schema([("extra", pa.int32()), ("Extra", pa.int32())])), SchemaMismatchError,
     "'Extra' differs from the existing column 'extra'"),
    (lambda u: u.drop_column("nope"), SchemaMismatchError, "'nope' does not exist"),
    (lambda u: u.add_column(("qty", "x"), pa.int8()), SchemaMismatchError, "not a ROW"),
    (lambda u: u.drop_column(("addr", "city")).drop_column(("addr", "zip")), SchemaMismatchError, "last field"),
    (lambda u: u.set_option("bucket", "-1"), InvalidOptionError, "keeps its bucket mode"),
    (lambda u: u.set_option("deletion-vectors.enabled", "true"), InvalidOptionError, "fully compacted"),
    (lambda u: u.set_option("merge-engine", "first-row"), InvalidOptionError, "'merge-engine'"),
    (lambda u: u.set_option("buckets", "4"), InvalidOptionError, "did you mean 'bucket'"),
    (lambda u: u.set_option("snapshot.num-retained.min", "0"), InvalidOptionError, "at least 1"),
    (lambda u: u.set_option("sequence.field", "gone"), InvalidOptionError, "not in the schema"),
    (lambda u: u.add_column("", pa.int8()), SchemaMismatchError, "invalid column path ''"),
    (lambda u: u.drop_column(("addr", 3)), SchemaMismatchError, r"invalid column path \('addr', 3\)"),
    (lambda u: u.add_column("n", 42), SchemaMismatchError, "expected a pyarrow type or a Paimon type name, got 42"),
    (lambda u: u.add_column("n", pa.int8(), first=True, after="id"), SchemaMismatchError, "first=True or after="),
    (lambda u: u.update_column("id", nullable=True), SchemaMismatchError, "'id' must stay NOT NULL"),
    (lambda u: u.union_by_name(pa.schema([pa.field("id", pa.decimal128(20, 0), False)])), SchemaMismatchError,
     "'id' .* key columns keep their type"),
    (lambda u: u.union_by_name(pa.schema([("note", pa.int64())])), SchemaMismatchError,
     "cannot merge the type of column 'note' .* STRING"),
    (lambda u: u.union_by_name(pa.schema([("addr", pa.struct([("zip", pa.string())]))])), SchemaMismatchError,
     "cannot merge the type of column 'addr.zip'"),
])
def test_refused_changes_name_the_reason_and_write_nothing(catalog, change, error, match):
    t = catalog.create_table("db.t", SCHEMA, primary_keys=["id"], options={"bucket": "1"})
    t.write_arrow(first_batch([1]))
    with pytest.raises(error, match=match):
        change(t.update_schema()).commit()
    assert os.listdir(f"{t.path}/schema") == ["schema-0"] and t.schema.id == 0


def test_a_merge_keeps_a_column_type_the_input_is_cast_into(catalog):
    """merge_schema refused an input the plain write casts (an int for a DECIMAL column, a
    DECIMAL of another scale, a bigint for a DOUBLE): it only adds columns and widens types,
    as Java's merge without type widening keeps the column's type and casts the values."""
    t = catalog.create_table("db.t", SCHEMA.append(pa.field("ratio", pa.float64())), primary_keys=["id"],
                             options={"bucket": "1"})
    incoming = pa.schema([("price", pa.int32()), ("ratio", pa.int64()), ("qty", pa.int64()),
                          ("addr", pa.struct([("zip", pa.int16())]))])
    t.update_schema().union_by_name(incoming).commit()
    assert [str(t.schema.field(c).type) for c in ("price", "ratio", "qty")] == ["DECIMAL(10, 2)", "DOUBLE", "BIGINT"]
    t.update_schema().union_by_name(pa.schema([("price", pa.decimal128(10, 4))])).commit()
    assert str(t.schema.field("price").type) == "DECIMAL(10, 2)"
    # ints are cast into DECIMAL fields at any depth, as into a DECIMAL column (Arrow's cast
    # refused an int32 into a DECIMAL of fewer than 10 integer digits)
    nested = catalog.create_table("db.n", pa.schema([pa.field("k", pa.int64(), False),
                                                     ("r", pa.struct([("d", pa.decimal128(10, 2))])),
                                                     ("a", pa.list_(pa.decimal128(10, 2))),
                                                     ("m", pa.map_(pa.string(), pa.decimal128(4, 1)))]),
                                  primary_keys=["k"], options={"bucket": "1"})
    nested.write_arrow(pa.table({"k": [1], "r": pa.array([{"d": 5}], pa.struct([("d", pa.int32())])),
                                 "a": pa.array([[7, None]], pa.list_(pa.int64())),
                                 "m": pa.array([[("x", 3)]], pa.map_(pa.string(), pa.int8()))}))
    assert nested.to_arrow().to_pylist() == [{"k": 1, "r": {"d": decimal.Decimal("5.00")},
                                             "a": [decimal.Decimal("7.00"), None], "m": [("x", decimal.Decimal("3.0"))]}]
    with pytest.raises(SchemaMismatchError, match="column 'm'"):
        nested.write_arrow(pa.table({"k": [2], "m": pa.array([[("x", 1000)]], pa.map_(pa.string(), pa.int16()))}))


def test_a_bucket_key_column_keeps_its_type(catalog):
    """A bucket-key column widened from INT hashes -3 to another bucket: Java's filters then
    pruned the bucket holding its old rows. Its type stays, as a key's does."""
    t = catalog.create_table("db.a", pa.schema([("uid", pa.int32()), ("v", pa.string())]),
                             options={"bucket": "4", "bucket-key": "uid"})
    with pytest.raises(SchemaMismatchError, match="cannot change the type of key column 'uid'"):
        t.update_schema().update_column("uid", type=pa.int64()).commit()
    with pytest.raises(SchemaMismatchError, match="'uid' .* key columns keep their type"):
        t.update_schema().union_by_name(pa.schema([("uid", pa.decimal128(20, 0))])).commit()
    t.update_schema().update_column("v", type=pa.string()).commit()


def test_a_rename_may_change_only_the_case_of_a_column(catalog):
    t = catalog.create_table("db.t", SCHEMA, primary_keys=["id"], options={"bucket": "1"})
    t.update_schema().rename_column("note", "Note").commit()
    assert t.schema.field_names == ["id", "qty", "price", "Note", "addr"]


def test_options_fixed_by_data_may_change_on_an_empty_table(catalog):
    t = catalog.create_table("db.t", SCHEMA, primary_keys=["id"], options={"bucket": "1"})
    t.update_schema().set_option("bucket", "4").set_option("deletion-vectors.enabled", "true").commit()
    assert t.options.bucket == 4 and t.options.deletion_vectors


@pytest.mark.parametrize("old,new,ok", [
    ("TINYINT", "BIGINT", True), ("INT", "DECIMAL(10, 0)", True), ("BIGINT", "DECIMAL(18, 0)", False),
    ("INT", "DOUBLE", True), ("BIGINT", "DOUBLE", False), ("FLOAT", "DOUBLE", True), ("DOUBLE", "FLOAT", False),
    ("DECIMAL(10, 2)", "DECIMAL(12, 4)", True), ("DECIMAL(10, 2)", "DECIMAL(11, 4)", False),
    ("VARCHAR(10)", "STRING", True), ("STRING", "VARCHAR(10)", False), ("CHAR(3)", "VARCHAR(3)", True),
    ("BINARY(4)", "BYTES", True), ("TIMESTAMP(3)", "TIMESTAMP(6)", True), ("TIMESTAMP(6)", "TIMESTAMP(3)", False),
    ("DATE", "TIMESTAMP(3)", False), ("INT", "STRING", False), ("BOOLEAN", "INT", False),
])
def test_widening_rules(old, new, ok):
    assert (widening_error(parse_atomic(old), parse_atomic(new)) is None) is ok


def test_concurrent_schema_changes_are_both_applied_once(catalog):
    t = catalog.create_table("db.t", SCHEMA, primary_keys=["id"], options={"bucket": "1"})
    barrier = threading.Barrier(4)
    errors = []

    def add(name):
        try:
            table = ps.Table.open(t.path)
            update = table.update_schema().add_column(name, pa.string())
            barrier.wait()
            update.commit()
        except Exception as exc:  # noqa: BLE001 - collected for the assertion
            errors.append(exc)
    threads = [threading.Thread(target=add, args=(f"c{i}",)) for i in range(4)]
    for th in threads:
        th.start()
    for th in threads:
        th.join()
    assert not errors
    t.refresh()
    assert t.schema.id == 4 and sorted(t.schema.field_names[5:]) == ["c0", "c1", "c2", "c3"]
    assert len({f.id for f in t.schema.fields}) == 9


def test_writer_planned_under_the_old_schema_commits_correctly(catalog):
    """Its files keep their schema id; the snapshot takes the newer schema id, readers convert."""
    t = catalog.create_table("db.t", SCHEMA, primary_keys=["id"], options={"bucket": "1"})
    t.write_arrow(first_batch([1]))
    old_writer = ps.Table.open(t.path)
    messages = old_writer.write_messages(first_batch([2]))
    with t.update_schema() as u:
        u.add_column("coupon", pa.string()).rename_column("note", "remark")
    old_writer.new_commit().commit(messages, "old-writer", 1)
    assert t.latest_snapshot().schema_id == 1  # the newest schema, as Java's commit records (latestSchemaId)
    t.write_arrow(pa.table({"id": [3], "coupon": ["X"], "remark": ["r3"]}))
    late = old_writer.write_messages(first_batch([4]))  # planned on schema 1's snapshot, schema 0 files
    old_writer.new_commit().commit(late, "old-writer", 2)
    assert [s.schema_id for s in t.snapshots()] == [0, 1, 1, 1]
    got = {r["id"]: (r["remark"], r["coupon"]) for r in ps.Table.open(t.path).to_arrow().to_pylist()}
    assert got == {1: ("n1", None), 2: ("n2", None), 3: ("r3", "X"), 4: ("n4", None)}


def test_a_stale_table_handle_reads_the_newer_schema(catalog):
    t = catalog.create_table("db.t", SCHEMA, primary_keys=["id"], options={"bucket": "1"})
    stale = ps.Table.open(t.path)
    t.update_schema().add_column("coupon", pa.string()).commit()
    t.write_arrow(pa.table({"id": [1], "coupon": ["X"]}))
    assert stale.to_arrow().column("coupon").to_pylist() == ["X"]


def test_rename_table(catalog):
    t = catalog.create_table("db.t", SCHEMA, primary_keys=["id"], options={"bucket": "1"})
    t.write_arrow(first_batch([1, 2]))
    catalog.create_table("db.other", SCHEMA, primary_keys=["id"], options={"bucket": "1"})
    with pytest.raises(TableAlreadyExistsError):
        catalog.rename_table("db.t", "db.other")
    moved = catalog.rename_table("db.t", "archive.t2")
    assert not catalog.table_exists("db.t") and moved.to_arrow().num_rows == 2
    assert catalog.list_tables("archive") == ["t2"]


def test_rename_onto_a_name_taken_after_the_check_is_table_already_exists(catalog, monkeypatch):
    """A concurrent rename that takes the name between the existence check and the directory
    rename: the rename refuses (non-empty directory), reported as TableAlreadyExistsError."""
    catalog.create_table("db.t", SCHEMA, primary_keys=["id"], options={"bucket": "1"})
    catalog.create_table("db.other", SCHEMA, primary_keys=["id"], options={"bucket": "1"})
    table_exists, path_exists, taken = catalog.table_exists, catalog.file_io.exists, catalog.table_path("db.other")
    checked = []  # the check sees the name free once, as if the other table came right after it

    def exists_after_the_check(path: str) -> bool:
        if path == taken and not checked:
            checked.append(path)
            return False
        return path_exists(path)
    monkeypatch.setattr(catalog, "table_exists", lambda ident: ident != "db.other" and table_exists(ident))
    monkeypatch.setattr(catalog.file_io, "exists", exists_after_the_check)
    with pytest.raises(TableAlreadyExistsError, match="db.other"):
        catalog.rename_table("db.t", "db.other")
    assert catalog.table_exists("db.t")


def test_cli_alter(catalog, capsys):
    t = catalog.create_table("db.t", SCHEMA, primary_keys=["id"], options={"bucket": "1"})
    t.write_arrow(first_batch([1]))
    assert main(["alter", t.path, "--add-column", "coupon STRING AFTER id", "--rename", "note=remark",
                 "--type", "qty=BIGINT", "--drop", "addr", "--set", "snapshot.num-retained.min=20", "--json"]) == 0
    out = json.loads(capsys.readouterr().out)
    assert out["schema_id"] == 1 and [c["name"] for c in out["columns"]] == ["id", "coupon", "qty", "price", "remark"]
    assert ps.Table.open(t.path).to_arrow().to_pylist() == [
        {"id": 1, "coupon": None, "qty": 10, "price": decimal.Decimal("1.25"), "remark": "n1"}]
    assert main(["alter", t.path, "--type", "qty=INT", "--json"]) == 1
    assert "cannot be widened" in json.loads(capsys.readouterr().out)["error"]
    assert main(["alter", t.path, "--default", "remark='none'", "--json"]) == 0
    capsys.readouterr()
    t = ps.Table.open(t.path)
    assert t.schema.field("remark").default_value == "'none'"
    t.write_arrow(pa.table({"id": [2]}))
    assert t.to_arrow().filter(pc.field("id") == 2).column("remark").to_pylist() == ["none"]
    assert main(["alter", t.path, "--drop-default", "remark", "--json"]) == 0
    assert ps.Table.open(t.path).schema.field("remark").default_value is None


def test_cli_alter_names_in_backticks(catalog, capsys):
    """A column whose name holds a dot (JSON keys such as user.id become one) was unreachable:
    `user.id` always meant field id of a ROW user. Backticks name it, as in Spark SQL."""
    schema = pa.schema([pa.field("id", pa.int64(), False), ("user.id", pa.string()),
                        ("addr", pa.struct([("zip", pa.string())]))])
    t = catalog.create_table("db.dots", schema, primary_keys=["id"], options={"bucket": "1"})
    t.write_arrow(pa.table({"id": [1], "user.id": ["u1"], "addr": [{"zip": "z1"}]}))
    assert main(["alter", t.path, "--rename", "`user.id`=`uid`", "--add-column", "`a b` INT AFTER id",
                 "--add-column", "addr.`c=d` STRING", "--type", "`a b`=BIGINT", "--json"]) == 0
    out = json.loads(capsys.readouterr().out)
    assert [(c["name"], c["type"]) for c in out["columns"]] == [
        ("id", "BIGINT NOT NULL"), ("a b", "BIGINT"), ("uid", "STRING"), ("addr", "ROW<zip STRING, c=d STRING>")]
    assert main(["alter", t.path, "--default", "`uid`=anon", "--drop", "addr.zip", "--json"]) == 0
    capsys.readouterr()
    assert ps.Table.open(t.path).to_arrow().to_pylist() == [{"id": 1, "a b": None, "uid": "u1", "addr": {"c=d": None}}]
    assert main(["alter", t.path, "--drop", "user.id", "--json"]) == 1  # a ROW user's field id: no such column
    assert "user" in json.loads(capsys.readouterr().out)["error"]
    assert main(["alter", t.path, "--drop", "`unclosed", "--json"]) == 1
    assert "in backticks" in json.loads(capsys.readouterr().out)["error"]


@pytest.mark.parametrize("dv", [False, True])
def test_we_read_tables_java_evolved(tmp_path, dv):
    """Every change kind made by Paimon's own SchemaManager, with data written by Java before and
    after: we read what Java reads."""
    from java_oracle import get_oracle
    java = get_oracle()
    path = tmp_path / "t"
    options = {"bucket": "2", "deletion-vectors.enabled": str(dv).lower()}
    java.create_table(path, [{"name": "id", "type": "BIGINT NOT NULL"}, {"name": "qty", "type": "INT"},
                             {"name": "note", "type": "STRING"}, {"name": "gone", "type": "STRING"},
                             {"name": "addr", "type": {"type": "ROW", "fields": [
                                 {"id": 5, "name": "city", "type": "STRING"}, {"id": 6, "name": "zip", "type": "INT"}]}}],
                      primary_keys=["id"], options=options)
    java.write(path, [{"id": i, "qty": i, "note": f"n{i}", "gone": "g", "addr": {"city": f"c{i}", "zip": i}}
                      for i in range(1, 6)])
    java.alter(path, [{"kind": "add", "path": ["coupon"], "type": "STRING", "after": "id"},
                      {"kind": "rename", "path": ["note"], "newName": "remark"},
                      {"kind": "type", "path": ["qty"], "type": "BIGINT"},
                      {"kind": "drop", "path": ["gone"]},
                      {"kind": "rename", "path": ["addr", "zip"], "newName": "postcode"},
                      {"kind": "add", "path": ["addr", "country"], "type": "STRING"}])
    java.write(path, [{"id": i, "coupon": f"X{i}", "qty": 2**40 + i, "remark": f"r{i}",
                       "addr": {"city": f"C{i}", "postcode": i * 7, "country": "NL"}} for i in (4, 6)])
    ours = ps.Table.open(str(path))
    assert ours.schema.field_names == ["id", "coupon", "qty", "remark", "addr"]
    assert rows_by(ours.to_arrow(), "id") == rows_by(pa.Table.from_pylist(java.read(path)), "id")
    got = {r["id"]: r for r in ours.to_arrow().to_pylist()}
    assert got[1] == {"id": 1, "coupon": None, "qty": 1, "remark": "n1",
                      "addr": {"city": "c1", "postcode": 1, "country": None}}
    assert got[4]["qty"] == 2**40 + 4 and got[4]["addr"] == {"city": "C4", "postcode": 28, "country": "NL"}


def test_rows_inside_arrays_and_maps_evolve_as_java_evolves_them(catalog, tmp_path):
    """Fields of ROWs inside an ARRAY's elements or a MAP's values are added, renamed and
    dropped by Java's paths (`items.element.qty`, `m.value.b`); old files read them as nulls;
    Paimon 1.4.2 reads ours (also after its compaction) and we read what its SchemaManager
    evolved the same way."""
    item = pa.struct([("sku", pa.string()), ("n", pa.int32())])
    schema = pa.schema([pa.field("id", pa.int64(), False), ("items", pa.list_(item)),
                        ("m", pa.map_(pa.string(), pa.struct([("a", pa.int32()), ("old", pa.string())])))])
    t = catalog.create_table("db.nested", schema, primary_keys=["id"], options={"bucket": "1"})
    t.write_arrow(pa.table({"id": [1], "items": [[{"sku": "x", "n": 1}]],
                            "m": pa.array([[("k", {"a": 1, "old": "o"})]], schema.field("m").type)}))
    with t.update_schema() as update:
        update.add_column(("items", "element", "qty"), pa.int64())
        update.rename_column(("items", "element", "sku"), "code")
        update.add_column(("m", "value", "b"), "STRING")
        update.drop_column(("m", "value", "old"))
    with pytest.raises(SchemaMismatchError, match=r"not a ROW: 'items.qty' .* under 'items.element'"):
        t.update_schema().add_column(("items", "qty"), pa.int64()).commit()
    t.write_arrow(pa.table({"id": [2], "items": [[{"code": "y", "n": 2, "qty": 5}]],
                            "m": pa.array([[("j", {"a": 2, "b": "z"})]], t.arrow_schema().field("m").type)}))
    expected = {1: {"id": 1, "items": [{"code": "x", "n": 1, "qty": None}], "m": [("k", {"a": 1, "b": None})]},
                2: {"id": 2, "items": [{"code": "y", "n": 2, "qty": 5}], "m": [("j", {"a": 2, "b": "z"})]}}
    assert {r["id"]: r for r in t.to_arrow().to_pylist()} == expected
    from java_oracle import get_oracle
    java = get_oracle()
    with java.batch() as jb:
        before, _, after = jb.read(t.path), jb.compact(t.path), jb.read(t.path)

    def maps_as_pairs(row: dict) -> dict:
        m = row["m"]
        return {**row, "m": sorted(m.items()) if isinstance(m, dict) else [tuple(p) for p in m]}
    for result in (before.result, after.result):
        assert {r["id"]: maps_as_pairs(r) for r in result} == expected
    java.alter(t.path, [{"kind": "add", "path": ["items", "element", "price"], "type": "DOUBLE"},
                        {"kind": "rename", "path": ["m", "value", "b"], "newName": "bee"}])
    java.write(t.path, [{"id": 3, "items": [{"code": "w", "n": 3, "qty": 1, "price": 1.5}],
                         "m": {"i": {"a": 3, "bee": "q"}}}])
    got = {r["id"]: r for r in ps.Table.open(t.path).to_arrow().to_pylist()}
    assert got[1]["items"] == [{"code": "x", "n": 1, "qty": None, "price": None}]
    assert got[3] == {"id": 3, "items": [{"code": "w", "n": 3, "qty": 1, "price": 1.5}], "m": [("i", {"a": 3, "bee": "q"})]}


def test_union_by_name_widens_nested_elements_keeping_their_field_ids(catalog):
    """ARRAY elements and MAP values widen in place: a ROW inside keeps its field ids, so the
    files written before read by id into the wider type."""
    schema = pa.schema([pa.field("id", pa.int64(), False), ("l", pa.list_(pa.struct([("a", pa.int32())]))),
                        ("m", pa.map_(pa.string(), pa.struct([("b", pa.int32())]))),
                        ("li", pa.list_(pa.int32())), ("mi", pa.map_(pa.string(), pa.int32()))])
    t = catalog.create_table("db.nest", schema, primary_keys=["id"], options={"bucket": "1"})
    t.write_arrow(pa.table({"id": [1], "l": [[{"a": 1}]], "m": [[("k", {"b": 2})]], "li": [[3]], "mi": [[("k", 4)]]},
                           schema=schema))
    ids = {f.name: f.id for f in t.schema.fields[1].type.element.fields + t.schema.fields[2].type.value.fields}
    t.update_schema().union_by_name(pa.schema([("l", pa.list_(pa.struct([("a", pa.int64())]))),
                                               ("m", pa.map_(pa.string(), pa.struct([("b", pa.int64())]))),
                                               ("li", pa.list_(pa.int64())),
                                               ("mi", pa.map_(pa.string(), pa.int64()))])).commit()
    assert [str(f.type) for f in t.schema.fields[1:]] == \
        ["ARRAY<ROW<a BIGINT>>", "MAP<STRING NOT NULL, ROW<b BIGINT>>", "ARRAY<BIGINT>", "MAP<STRING NOT NULL, BIGINT>"]
    assert {f.name: f.id for f in t.schema.fields[1].type.element.fields + t.schema.fields[2].type.value.fields} == ids
    big = 2**40
    t.write_arrow(pa.table({"id": [2], "l": [[{"a": big}]], "m": [[("k", {"b": big})]], "li": [[big]],
                            "mi": [[("k", big)]]}, schema=t.arrow_schema()))
    assert ps.Table.open(t.path).to_arrow().to_pylist() == [
        {"id": 1, "l": [{"a": 1}], "m": [("k", {"b": 2})], "li": [3], "mi": [("k", 4)]},
        {"id": 2, "l": [{"a": big}], "m": [("k", {"b": big})], "li": [big], "mi": [("k", big)]}]


def test_union_by_name_keeps_the_tables_nested_nullability(catalog):
    """A widening merge took the input's nested nullability: NOT NULL elements and map values
    (Spark's `array(3000000000L)`) made ARRAY<BIGINT NOT NULL> of a column whose files hold null
    elements, which Java then failed to read (NullPointerException) and later writes with a null
    element were refused. Java's merge keeps the table's nullability at every level; so do we,
    either way (NOT NULL elements of the table stay NOT NULL)."""
    from java_oracle import get_oracle
    schema = pa.schema([pa.field("id", pa.int64(), False), ("a", pa.list_(pa.int32())),
                        ("m", pa.map_(pa.string(), pa.int32())), ("aa", pa.list_(pa.list_(pa.int32()))),
                        ("nn", pa.list_(pa.field("element", pa.int32(), False)))])
    t = catalog.create_table("db.nulls", schema, primary_keys=["id"], options={"bucket": "1"})
    t.write_arrow(pa.table({"id": [1], "a": [[1, None]], "m": [[("k", None)]], "aa": [[[2, None]]], "nn": [[3]]},
                           schema=schema))
    not_null = lambda at: pa.field("element", at, False)  # noqa: E731
    t.update_schema().union_by_name(pa.schema([
        ("a", pa.list_(not_null(pa.int64()))), ("m", pa.map_(pa.string(), pa.field("value", pa.int64(), False))),
        ("aa", pa.list_(not_null(pa.list_(not_null(pa.int64()))))), ("nn", pa.list_(pa.int64()))])).commit()
    assert [str(f.type) for f in t.schema.fields[1:]] == \
        ["ARRAY<BIGINT>", "MAP<STRING NOT NULL, BIGINT>", "ARRAY<ARRAY<BIGINT>>", "ARRAY<BIGINT NOT NULL>"]
    t.write_arrow(pa.table({"id": [2], "a": [[None]], "m": [[("x", None)]], "aa": [[None, [None]]], "nn": [[2**40]]},
                           schema=t.arrow_schema()))
    want = [{"id": 1, "a": [1, None], "m": [("k", None)], "aa": [[2, None]], "nn": [3]},
            {"id": 2, "a": [None], "m": [("x", None)], "aa": [None, [None]], "nn": [2**40]}]
    assert rows_by(ps.Table.open(t.path).to_arrow(), "id") == want
    java = sorted(get_oracle().read(t.path), key=lambda r: r["id"])
    assert [{**r, "m": [tuple(kv) for kv in r["m"]]} for r in java] == want  # Java's map entries: lists
    # an explicit type change making elements NOT NULL is refused, as NOT NULL of a column is
    with pytest.raises(SchemaMismatchError, match=r"makes 'aa\.element\.element' NOT NULL.*may hold nulls"):
        t.update_schema().update_column("aa", pa.list_(pa.list_(not_null(pa.int64())))).commit()


def test_dropping_a_column_drops_its_field_options(catalog):
    """`fields.<column>.*` options go with the column, so a column added later under the same
    name does not inherit them (Java 1.4.2 keeps them, and so refuses the drop: an option of a
    column that is not in the schema)."""
    schema = pa.schema([pa.field("id", pa.int64(), False), ("n", pa.int64()), ("s", pa.int64())])
    t = catalog.create_table("db.agg", schema, primary_keys=["id"],
                             options={"bucket": "1", "merge-engine": "aggregation",
                                      "fields.n.aggregate-function": "sum", "fields.s.aggregate-function": "sum"})
    t.update_schema().drop_column("n").commit()
    assert "fields.n.aggregate-function" not in t.schema.options and "fields.s.aggregate-function" in t.schema.options
    t.update_schema().add_column("n", pa.int64()).commit()
    for v in (1, 2):
        t.write_arrow(pa.table({"id": [1], "s": [v], "n": [v]}, schema=t.arrow_schema()))
    assert t.to_arrow().to_pylist() == [{"id": 1, "s": 3, "n": 2}]  # the new n: last value, not a sum


@pytest.mark.parametrize("kwargs, match", [
    ({"options": {"bucket": "2", "bucket-key": "nope"}}, r"bucket-key column\(s\) \['nope'\] are not in the schema"),
    ({"partition_keys": ["dt"], "options": {"bucket": "2", "bucket-key": "dt"}},
     r"bucket-key \['dt'\] must not contain partition keys \['dt'\]"),
    ({"primary_keys": ["id"], "options": {"bucket": "2", "bucket-key": "v"}},
     r"bucket-key \['v'\] must be a subset of the primary key \['id'\]"),
    ({"primary_keys": ["id"], "options": {"bucket": "-2"}}, r"postpone bucket mode \(bucket = -2\) is not supported"),
])
def test_create_table_refuses_bad_bucket_layouts(catalog, warehouse, kwargs, match):
    schema = pa.schema([pa.field("id", pa.int64(), False), ("v", pa.int64()), pa.field("dt", pa.string(), False)])
    with pytest.raises(InvalidOptionError, match=match):
        catalog.create_table("db.bad", schema, **kwargs)
    assert not os.path.exists(f"{warehouse}/db.db/bad")  # nothing written


@pytest.mark.parametrize("kwargs, match", [
    ({"primary_keys": ["id", "id"]}, r"primary key \['id', 'id'\] must not contain duplicate columns: \['id'\]"),
    ({"partition_keys": ["dt", "dt"]}, r"partition key \['dt', 'dt'\] must not contain duplicate columns"),
    ({"options": {"primary-key": "id, id"}}, r"primary key \['id', 'id'\] must not contain duplicate"),
    ({"options": {"partition": "dt,dt"}}, r"partition key \['dt', 'dt'\] must not contain duplicate"),
])
def test_create_table_refuses_a_key_column_given_twice(catalog, warehouse, kwargs, match):
    """Java's Schema refuses it (and cannot read such a table); a primary key with a column twice
    failed every write with Arrow's 'Field "_KEY_id" exists 2 times'."""
    schema = pa.schema([pa.field("id", pa.int64(), False), pa.field("dt", pa.string(), False)])
    with pytest.raises(InvalidOptionError, match=match):
        catalog.create_table("db.bad", schema, **kwargs)
    assert not os.path.exists(f"{warehouse}/db.db/bad")


def test_create_table_refuses_duplicate_names_and_spells_booleans_as_java(catalog):
    with pytest.raises(SchemaMismatchError, match=r"duplicate column names in schema: \['a', 'a'\]"):
        catalog.create_table("db.dup", pa.schema([("a", pa.int64()), ("a", pa.string())]))
    # blank names (nested ones too), which Java 1.4.2 cannot open a table with ("Field names must
    # contain at least one non-whitespace character"), and duplicates inside a ROW
    for schema, match in ((pa.schema([("", pa.int64())]), "column name '' has no character other than whitespace"),
                          (pa.schema([("s", pa.list_(pa.struct([(" \t", pa.int64())])))]), r"' \\t' in s\[\]"),
                          (pa.schema([("m", pa.map_(pa.string(), pa.struct([("a", pa.int8()), ("a", pa.int8())])))]),
                           r"duplicate field names \['a'\] in m.value")):
        with pytest.raises(SchemaMismatchError, match=match):
            catalog.create_table("db.blank", schema)
    t = catalog.create_table("db.named", pa.schema([("a", pa.int64()), ("\u00a0", pa.int64())]))  # Java takes a no-break space
    for change in (lambda u: u.rename_column("a", " "), lambda u: u.add_column("  ", "INT")):
        with pytest.raises(SchemaMismatchError, match="has no character other than whitespace"):
            change(t.update_schema()).commit()
    assert t.arrow_schema().names == ["a", "\u00a0"]
    t = catalog.create_table("db.opts", pa.schema([("a", pa.int64())]),
                             options={"bucket": -1, "deletion-vectors.enabled": True, "write-only": False})
    assert {k: t.schema.options[k] for k in ("bucket", "deletion-vectors.enabled", "write-only")} == \
        {"bucket": "-1", "deletion-vectors.enabled": "true", "write-only": "false"}


def _damage_schema(path, edit) -> None:
    """Edit schema-0 as JSON, written as Java writes it (without our check, which would catch it first)."""
    from paimon_streaming.json_check import CHECK_KEY
    name = f"{path}/schema/schema-0"
    obj = json.load(open(name))
    obj.pop(CHECK_KEY, None)
    edit(obj)
    with open(name, "w") as f:
        json.dump(obj, f)


@pytest.mark.parametrize("edit, error, match", [
    (lambda o: o.update(id=3), "CorruptFileError", "is damaged: it holds schema id 3"),
    (lambda o: o["fields"][1].update(name="id"), "CorruptFileError", "is damaged: its field names or ids repeat"),
    (lambda o: o["fields"][1].update(id=0), "CorruptFileError", "is damaged: its field names or ids repeat"),
    (lambda o: o.update(primaryKeys=["idd"]), "CorruptFileError", r"primary/partition keys \['idd'\] are not among"),
    (lambda o: o.update(primaryKeyz=o.pop("primaryKeys")), "CorruptFileError",
     "unknown key 'primaryKeyz', one character away from 'primaryKeys'"),
    (lambda o: o["fields"][1].update(type="INT)("), "UnsupportedTypeError", r"cannot parse Paimon type 'INT\)\('"),
    (lambda o: o["fields"][1].update(type="INTEGR"), "UnsupportedTypeError", "unsupported Paimon type 'INTEGR'"),
    (lambda o: o["fields"][1].update(type={"type": "VECTOR"}), "UnsupportedTypeError", "cannot parse Paimon type"),
    (lambda o: o["fields"][1].update(type=7), "UnsupportedTypeError", "cannot parse Paimon type 7"),
])
def test_a_damaged_schema_file_is_an_error_naming_it(catalog, edit, error, match):
    from paimon_streaming import errors
    t = catalog.create_table("db.dmg", pa.schema([pa.field("id", pa.int64(), False), ("v", pa.int32())]),
                             primary_keys=["id"], options={"bucket": "1"})
    t.write_arrow(pa.table({"id": [1], "v": [2]}, schema=t.arrow_schema()))
    _damage_schema(t.path, edit)
    with pytest.raises(getattr(errors, error), match=f"schema file {t.path}/schema/schema-0.*{match}"):
        ps.Table.open(t.path).to_arrow()


def test_java_spellings_of_schema_files_are_read(catalog):
    """A type written `INT NULL` and a column with a description (Java's COMMENT) are read; our
    next schema keeps the description."""
    t = catalog.create_table("db.spell", pa.schema([pa.field("id", pa.int64(), False), ("v", pa.int32())]),
                             primary_keys=["id"], options={"bucket": "1"})
    t.write_arrow(pa.table({"id": [1], "v": [2]}, schema=t.arrow_schema()))
    _damage_schema(t.path, lambda o: o["fields"][1].update(type="INT NULL", description="the value"))
    t = ps.Table.open(t.path)
    assert t.to_arrow().to_pylist() == [{"id": 1, "v": 2}]
    t.update_schema().add_column("w", pa.string(), comment="new one").commit()
    saved = json.load(open(f"{t.path}/schema/schema-1"))["fields"]
    assert [(f["name"], f["type"], f.get("description")) for f in saved] == \
        [("id", "BIGINT NOT NULL", None), ("v", "INT", "the value"), ("w", "STRING", "new one")]


def test_a_missing_schema_file_of_data_files_is_an_error_naming_it(catalog):
    from paimon_streaming.errors import MissingFileError
    t = catalog.create_table("db.gone", pa.schema([pa.field("id", pa.int64(), False), ("v", pa.int32())]),
                             primary_keys=["id"], options={"bucket": "1"})
    t.update_schema().add_column("w", pa.string()).commit()
    t.write_arrow(pa.table({"id": [1], "v": [2], "w": ["x"]}, schema=t.arrow_schema()))
    os.remove(f"{t.path}/schema/schema-1")
    with pytest.raises(MissingFileError, match=f"schema file {t.path}/schema/schema-1 does not exist"):
        ps.Table.open(t.path).to_arrow()


def test_map_keys_keep_their_type_and_decimals_keep_within_38_digits(catalog):
    from paimon_streaming.errors import UnsupportedTypeError
    schema = pa.schema([pa.field("id", pa.int64(), False), ("m", pa.map_(pa.int32(), pa.int32()))])
    t = catalog.create_table("db.mk", schema, primary_keys=["id"], options={"bucket": "1"})
    with pytest.raises(SchemaMismatchError, match=r"the key type of a MAP cannot change \(INT NOT NULL -> BIGINT"):
        t.update_schema().update_column("m", pa.map_(pa.int64(), pa.int32())).commit()
    t.update_schema().update_column("m", pa.map_(pa.int32(), pa.int64())).commit()  # its values may widen
    assert str(t.schema.field("m").type) == "MAP<INT NOT NULL, BIGINT>"
    with pytest.raises(UnsupportedTypeError, match="DECIMAL precision 40 exceeds Paimon's maximum 38"):
        catalog.create_table("db.wide", pa.schema([("d", pa.decimal256(40, 2))]))
    # a negative scale (Spark's legacy decimals) was written into schema-0 as DECIMAL(3, -2), which
    # no reader parses: the path could then be neither opened nor created again
    with pytest.raises(UnsupportedTypeError, match=r"column 'd': DECIMAL\(3, -2\): Paimon has no negative scale"):
        catalog.create_table("db.neg", pa.schema([("d", pa.decimal128(3, -2))]))
    assert catalog.create_table("db.neg", pa.schema([("d", pa.decimal128(5, 0))])).schema.id == 0


@pytest.mark.parametrize("dv", [False, True])
def test_a_row_column_with_not_null_fields_added_to_a_table_with_rows(catalog, dv):
    """A ROW column with NOT NULL fields (Spark's `named_struct`) added to a table that has rows:
    the older rows read it as null, and every file written of them since (a compaction, a
    deletion-vector write's lookup compaction) failed with "file metadata is only available
    after writer close", hiding pyarrow's "Column 'a' is declared non-nullable but contains
    nulls". A null ROW's fields are not stored: they are written, and read back, as null."""
    schema = pa.schema([pa.field("id", pa.int64(), False), ("v", pa.int64())])
    t = catalog.create_table("db.rows", schema, primary_keys=["id"],
                             options={"bucket": "1", **({"deletion-vectors.enabled": "true"} if dv else {})})
    t.write_arrow(pa.table({"id": [0, 1, 2, 3], "v": [0, 1, 2, 3]}, schema=schema))
    with t.update_schema() as update:
        update.add_column("s", pa.struct([pa.field("a", pa.int64(), False),
                                          pa.field("b", pa.list_(pa.field("item", pa.int64(), False)), False)]))
    s_type = t.arrow_schema().field("s").type
    t.write_arrow(pa.table({"id": [2, 3, 4], "v": [20, 30, 40],
                            "s": pa.array([{"a": 2, "b": [1]}, None, {"a": 4, "b": []}], s_type)}))
    t.compact(full=True)
    expected = [{"id": 0, "v": 0, "s": None}, {"id": 1, "v": 1, "s": None}, {"id": 2, "v": 20, "s": {"a": 2, "b": [1]}},
                {"id": 3, "v": 30, "s": None}, {"id": 4, "v": 40, "s": {"a": 4, "b": []}}]
    assert rows_by(t.to_arrow(), "id") == expected
    from java_oracle import get_oracle
    assert rows_by(pa.Table.from_pylist(get_oracle().read(t.path)), "id") == expected


RENAME_CASES = [  # options, primary keys, renames (in one change), the rows read after the writes
    # group (s, t): (1, 3) is older than (2, 1), (3, 0) newest: its null a; b sums every row
    ({"merge-engine": "partial-update", "fields.s,t.sequence-group": "a,b", "fields.b.aggregate-function": "sum",
      "fields.c.sequence-group": "d"}, ["k"], [("s", "s2"), ("a", "a2"), ("b", "b2"), ("d", "d2")],
     [{"k": 1, "s2": 3, "t": 0, "a2": None, "b2": 22, "c": 2, "d2": "q"}]),
    ({"merge-engine": "partial-update", "fields.s.sequence-group": "a,b"}, ["k"], [("s", "s2")],
     [{"k": 1, "s2": 3, "t": 0, "a": None, "b": 7, "c": 2, "d": "r"}]),
    ({"sequence.field": "s,t"}, ["k"], [("t", "t2")],  # (3, 0) is the newest
     [{"k": 1, "s": 3, "t2": 0, "a": None, "b": 7, "c": None, "d": "r"}]),
    # primary key columns (Java renames them in the primary key, and in bucket-key or sequence.field)
    ({"bucket-key": "k"}, ["k", "s"], [("k", "k2")],
     [{"k2": 1, "s": s, "t": t, "a": a, "b": b, "c": c, "d": d}
      for s, t, a, b, c, d in ((1, 3, "y", 5, 2, "q"), (2, 1, "x", 10, 1, "p"), (3, 0, None, 7, None, "r"))]),
    ({"sequence.field": "k,t"}, ["k"], [("k", "k2"), ("t", "t2")],  # (1, 3) is the newest
     [{"k2": 1, "s": 1, "t2": 3, "a": "y", "b": 5, "c": 2, "d": "q"}]),
    ({"bucket": "2", "bucket-key": "a,s"}, [], [("s", "s2"), ("c", "c2")],
     [{"k": 1, "s2": 1, "t": 3, "a": "y", "b": 5, "c2": 2, "d": "q"},
      {"k": 1, "s2": 2, "t": 1, "a": "x", "b": 10, "c2": 1, "d": "p"},
      {"k": 1, "s2": 3, "t": 0, "a": None, "b": 7, "c2": None, "d": "r"}]),
]
_RENAME_FIELDS = [("k", "BIGINT NOT NULL", pa.int64()), ("s", "INT", pa.int32()), ("t", "INT", pa.int32()),
                  ("a", "STRING", pa.string()), ("b", "BIGINT", pa.int64()), ("c", "INT", pa.int32()),
                  ("d", "STRING", pa.string())]


@pytest.mark.parametrize("options, keys, renames, expected", RENAME_CASES)
def test_renames_rewrite_the_options_naming_the_column_as_java(tmp_path, options, keys, renames, expected):
    """A column named in 'sequence.field', 'bucket-key' or a sequence group's key or value is
    renamed in those options, as Java's SchemaManager rewrites them (before, such a rename was
    refused): the options equal Java's after the same rename, and rows written after it merge
    by the renamed columns, in Java's read of our table as in ours."""
    from java_oracle import get_oracle
    java = get_oracle()
    options = {"bucket": "1", **options}
    schema = pa.schema([pa.field(n, t, n != "k") for n, _, t in _RENAME_FIELDS])
    t = ps.Catalog(str(tmp_path / "ours")).create_table("db.t", schema, primary_keys=keys, options=options)
    rows = [{"k": 1, "s": 2, "t": 1, "a": "x", "b": 10, "c": 1, "d": "p"}]
    t.write_arrow(pa.Table.from_pylist(rows, schema=schema))
    update = t.update_schema()
    for old, new in renames:
        update.rename_column(old, new)
    update.commit()
    jpath = tmp_path / "java"
    java.create_table(jpath, [{"name": n, "type": j} for n, j, _ in _RENAME_FIELDS], keys, [], options)
    java.alter(jpath, [{"kind": "rename", "path": [old], "newName": new} for old, new in renames])
    java_schema = json.load(open(jpath / "schema" / "schema-1"))
    assert (t.schema.options, list(t.schema.primary_keys)) == (java_schema["options"], java_schema["primaryKeys"])
    names = dict(renames)
    later = [{"k": 1, "s": 1, "t": 3, "a": "y", "b": 5, "c": 2, "d": "q"},
             {"k": 1, "s": 3, "t": 0, "a": None, "b": 7, "c": None, "d": "r"}]
    t.write_arrow(pa.Table.from_pylist([{names.get(n, n): v for n, v in r.items()} for r in later],
                                       schema=t.arrow_schema()))
    key = names.get("k", "k")
    ours = sorted(t.to_arrow().to_pylist(), key=lambda r: (r[key], str(r)))
    assert ours == sorted(java.read(t.path), key=lambda r: (r[key], str(r)))
    assert ours == sorted(expected, key=lambda r: (r[key], str(r)))


@pytest.mark.parametrize("dv", [False, True])
def test_a_renamed_primary_key_column_reads_writes_and_compacts_as_in_java(tmp_path, dv):
    """Renaming a primary key column was refused ("Paimon refuses it") where Java's
    SchemaManager renames it, in the primary key too (only partition columns are refused). Our
    rename makes the schema Java's does; upserts and deletes by the new name, ours and Java's,
    merge with the rows written before it (their files name the old key column), and both read
    the same before and after each side compacts."""
    from java_oracle import get_oracle
    java = get_oracle()
    fields = [("k", "BIGINT NOT NULL", pa.int64()), ("p", "STRING NOT NULL", pa.string()), ("v", "STRING", pa.string())]
    options = {"bucket": "2", "deletion-vectors.enabled": str(dv).lower()}
    schema = pa.schema([pa.field(n, t, not j.endswith("NOT NULL")) for n, j, t in fields])
    t = ps.Catalog(str(tmp_path / "ours")).create_table("db.t", schema, primary_keys=["k", "p"], partition_keys=["p"],
                                                        options=options)
    t.write_arrow(pa.table({"k": list(range(20)) * 2, "p": ["a"] * 20 + ["b"] * 20, "v": ["old"] * 40}, schema=schema))
    with pytest.raises(SchemaMismatchError, match="cannot rename partition column 'p'"):
        t.update_schema().rename_column("p", "q").commit()
    t.update_schema().rename_column("k", "id").commit()
    jpath = tmp_path / "java"
    java.create_table(jpath, [{"name": n, "type": j} for n, j, _ in fields], ["k", "p"], ["p"], options)
    java.alter(jpath, [{"kind": "rename", "path": ["k"], "newName": "id"}])
    ours_json, java_json = json.load(open(f"{t.path}/schema/schema-1")), json.load(open(jpath / "schema" / "schema-1"))
    for key in ("fields", "highestFieldId", "primaryKeys", "partitionKeys", "options"):
        assert ours_json[key] == java_json[key], key
    model = {(k, p): "old" for k in range(20) for p in "ab"}

    def upsert_ours(ids: range, value: str, kind: str = "+I") -> None:
        t.write_arrow(pa.table({"id": list(ids), "p": ["a"] * len(ids), "v": [value] * len(ids),
                                "op": [kind] * len(ids)}), row_kind_column="op")
        model.update({(i, "a"): value for i in ids} if kind == "+I" else {})
        for i in ids if kind == "-D" else ():
            model.pop((i, "a"))

    def agree() -> None:
        expected = sorted(({"id": k, "p": p, "v": v} for (k, p), v in model.items()), key=lambda r: (r["id"], r["p"]))
        assert rows_by(ps.Table.open(t.path).to_arrow(), "id", "p") == expected
        assert rows_by(pa.Table.from_pylist(java.read(t.path)), "id", "p") == expected
        assert rows_by(ps.Table.open(t.path).to_arrow(filter=[("id", "=", 15)]), "p") == \
            [r for r in expected if r["id"] == 15]

    upsert_ours(range(10, 30), "ours")
    upsert_ours(range(0, 3), "", "-D")
    agree()
    java.write(t.path, [{"id": i, "p": "a", "v": "java"} for i in range(25, 35)] +
               [{"id": 5, "p": "a", "v": None, "_ROW_KIND": "-D"}])
    model.update({(i, "a"): "java" for i in range(25, 35)})
    model.pop((5, "a"))
    agree()
    t = ps.Table.open(t.path)
    t.compact(full=True)
    agree()
    upsert_ours(range(30, 40), "after")
    java.compact(t.path)
    agree()


def test_options_of_a_dotted_column_stay_with_it(tmp_path):
    """Columns `a` and `a.b`: `fields.a.b.aggregate-function` is `a.b`'s (an option's name
    holds no dot). Renaming or dropping `a` moved or deleted it, so `a.b` lost its sum (5 on
    10 gave 5). Now the option stays, and the change is refused as Java refuses it: the key
    names `a` in Java's reading (SchemaValidation); renaming `a.b` moves it."""
    schema = pa.schema([pa.field("id", pa.int64(), False), ("a", pa.int64()), ("a.b", pa.int64())])
    options = {"merge-engine": "aggregation", "bucket": "1", "fields.a.aggregate-function": "max",
               "fields.a.b.aggregate-function": "sum"}
    t = ps.Catalog(str(tmp_path)).create_table("db.t", schema, primary_keys=["id"], options=options)
    for change in (lambda u: u.rename_column("a", "z"), lambda u: u.drop_column("a")):
        with pytest.raises(InvalidOptionError, match="fields.a.b.aggregate-function"):
            change(t.update_schema()).commit()
    t.update_schema().rename_column("a.b", "c").commit()
    t = ps.Table.open(t.path)
    assert {k: v for k, v in t.schema.options.items() if k.startswith("fields.")} == {
        "fields.a.aggregate-function": "max", "fields.c.aggregate-function": "sum"}
    t.write_arrow(pa.table({"id": [1], "a": [1], "c": [10]}))
    t.write_arrow(pa.table({"id": [1], "a": [0], "c": [5]}))
    assert t.to_arrow().to_pylist() == [{"id": 1, "a": 1, "c": 15}]
