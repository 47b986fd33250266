"""Schema evolution through Spark (issue 18): `paimon_sink(merge_schema=True)` and the data source
option `mergeSchema` evolve the table before a batch's data commits (exactly-once across a crash
in between); without them new columns are an error naming them; a streaming read stops at the
first snapshot of a changed schema and a restart continues with the new one."""
from __future__ import annotations

import time

import pyarrow as pa
import pytest

import paimon_streaming as ps
from paimon_streaming.commit import FileStoreCommit
from paimon_streaming.errors import SchemaMismatchError
from paimon_streaming.sinks import paimon_sink
from conftest import pypaimon_read, rows_by
from test_spark_source import flat, ok, run_batches, stream

KV = pa.schema([pa.field("id", pa.int64(), False), ("v", pa.string())])


def test_sink_without_merge_schema_names_the_new_columns(spark, catalog):
    t = catalog.create_table("db.t", KV, primary_keys=["id"], options={"bucket": "2"})
    sink = paimon_sink(t.path, commit_user="job")
    with pytest.raises(SchemaMismatchError, match=r"\['coupon'\].*merge_schema=True"):
        sink(spark.createDataFrame([(1, "a", "X")], "id long, v string, coupon string"), 0)
    assert t.latest_snapshot() is None and ps.Table.open(t.path).schema.id == 0
    # with merge_schema a column without a type (`lit(None)`) was "not in table", which merging was asked
    # to fix; and a column given twice was a bare KeyError
    merging = paimon_sink(t.path, commit_user="job", merge_schema=True)
    with pytest.raises(SchemaMismatchError, match=r"new column\(s\) or field\(s\) \['extra'\] have no type .*lit\(None\)\.cast"):
        merging(spark.sql("select 1L id, 'a' v, null extra"), 0)
    # inside a ROW (or an ARRAY's ROWs) too: it was "Arrow type null has no Paimon equivalent", naming nothing
    with pytest.raises(SchemaMismatchError, match=r"\['st.z', 'arr.element.q'\] have no type"):
        merging(spark.sql("select 1L id, 'a' v, named_struct('a', 2, 'z', null) st, "
                          "array(named_struct('q', null)) arr"), 0)
    with pytest.raises(SchemaMismatchError, match=r"has column\(s\) \['v'\] more than once"):
        sink(spark.sql("select 1L id, 'a' v, 'b' v"), 0)
    assert t.latest_snapshot() is None and ps.Table.open(t.path).schema.id == 0


@pytest.mark.parametrize("dv", [False, True])
def test_sink_merge_schema_evolves_then_commits_exactly_once(spark, catalog, warehouse, monkeypatch, dv):
    t = catalog.create_table("db.t", KV, primary_keys=["id"],
                             options={"bucket": "2", "deletion-vectors.enabled": str(dv).lower()})
    sink = paimon_sink(t.path, commit_user="job", merge_schema=True)
    sink(spark.createDataFrame([(1, "a"), (2, "b")], "id long, v string"), 0)
    batch1 = spark.createDataFrame([(2, "b2", "X", 7), (3, "c", None, 8)], "id long, v string, coupon string, n int")
    # crash between the schema change and the data commit: the schema is evolved, nothing committed
    real_commit = FileStoreCommit.commit

    def crash(self, *args, **kwargs):
        raise OSError("injected crash before the data commit")
    monkeypatch.setattr(FileStoreCommit, "commit", crash)
    with pytest.raises(OSError, match="injected"):
        sink(batch1, 1)
    monkeypatch.setattr(FileStoreCommit, "commit", real_commit)
    assert ps.Table.open(t.path).schema.field_names == ["id", "v", "coupon", "n"]
    sink(batch1, 1)  # the restart replays the batch: the schema is already there
    sink(batch1, 1)  # and a second replay is skipped
    sink(spark.createDataFrame([(4, "d", 2**40)], "id long, v string, n long"), 2)  # widened INT -> BIGINT
    fresh = ps.Table.open(t.path)
    assert fresh.schema.id == 2 and str(fresh.schema.field("n").type) == "BIGINT"
    want = [{"id": 1, "v": "a", "coupon": None, "n": None}, {"id": 2, "v": "b2", "coupon": "X", "n": 7},
            {"id": 3, "v": "c", "coupon": None, "n": 8}, {"id": 4, "v": "d", "coupon": None, "n": 2**40}]
    assert rows_by(fresh.to_arrow(), "id") == want
    assert rows_by(pypaimon_read(warehouse, "db.t"), "id") == want
    assert [s.commit_identifier for s in fresh.snapshots() if s.commit_kind == "APPEND"] == [0, 1, 2]


def test_a_failed_merging_batch_leaves_the_schema_as_it_was(spark, catalog, tmp_path):
    """A batch that adds and widens columns but fails its input checks (a null key) commits
    nothing, its schema change included: the merged schema is committed with the batch's data.
    Before, the table kept `v` widened to DOUBLE and `x` added though no row was written. A
    schema change by someone else while a merging batch is written (the same id, another
    change) makes the batch merge again on the new schema and write itself again."""
    schema = pa.schema([pa.field("id", pa.int64(), False), ("v", pa.int32())])
    t = catalog.create_table("db.fails", schema, primary_keys=["id"], options={"bucket": "1"})
    sink = paimon_sink(t.path, commit_user="job", merge_schema=True)
    sink(spark.createDataFrame([(1, 10)], "id long, v int"), 0)
    with pytest.raises(Exception, match="'id'"):
        sink(spark.createDataFrame([(None, 2.5, "x")], "id long, v double, x string"), 1)
    path = str(tmp_path / "ds")
    spark.createDataFrame([(1, 10)], "id long, v int").write.format("paimon").option("primary-key", "id") \
        .option("bucket", "1").mode("append").save(path)
    with pytest.raises(Exception, match="'id'"):
        spark.createDataFrame([(None, 2.5, "x")], "id long, v double, x string").write.format("paimon") \
            .option("mergeSchema", "true").mode("append").save(path)
    for table in (ps.Table.open(t.path), ps.Table.open(path)):
        assert table.schema.id == 0 and [str(f.type) for f in table.schema.fields] == ["BIGINT NOT NULL", "INT"]
        assert table.to_arrow().to_pylist() == [{"id": 1, "v": 10}]
    # another writer's schema change takes the merged schema's id: the batch is merged again on
    # it and written again (its files' field ids would name the other column)
    batch = spark.createDataFrame([(2, 20, "y")], "id long, v int, x string")
    prepared = sink.prepare(batch, 1)
    with t.update_schema() as update:
        update.add_column("other", pa.string())
    prepared.commit()
    sink(batch, 1)  # a replay
    fresh = ps.Table.open(t.path)
    assert fresh.schema.field_names == ["id", "v", "other", "x"]
    assert rows_by(fresh.to_arrow(), "id") == [{"id": 1, "v": 10, "other": None, "x": None},
                                                {"id": 2, "v": 20, "other": None, "x": "y"}]


def test_datasource_merge_schema_option(spark, tmp_path):
    path = str(tmp_path / "wh" / "db.db" / "ds")
    spark.createDataFrame([(1, "a")], "id long, v string").write.format("paimon") \
        .option("primary-key", "id").option("bucket", "1").mode("append").save(path)
    wider = spark.createDataFrame([(2, "b", 1.5)], "id long, v string, score double")
    with pytest.raises(Exception, match="mergeSchema"):
        wider.write.format("paimon").mode("append").save(path)
    wider.write.format("paimon").option("mergeSchema", "true").mode("append").save(path)
    t = ps.Table.open(path)
    assert "mergeschema" not in t.schema.options
    assert rows_by(t.to_arrow(), "id") == [{"id": 1, "v": "a", "score": None}, {"id": 2, "v": "b", "score": 1.5}]
    spark.createDataFrame([(3, "c", 2.5, True)], "id long, v string, score double, ok boolean").write \
        .format("paimon").option("write.merge-schema", "true").mode("append").save(path)  # Paimon's spelling
    assert ps.Table.open(path).schema.field_names == ["id", "v", "score", "ok"]


def test_merging_a_wider_literal_keeps_the_tables_nullable_elements(spark, catalog):
    """Spark marks a literal's elements and map values NOT NULL (`array(3000000000L)`): widening
    ARRAY<INT> by it made the column ARRAY<BIGINT NOT NULL>, so Java failed to read the null
    elements of the files written before and a later batch with a null element was refused. The
    table's nullability stays, at every level, as in Java's merge."""
    from java_oracle import get_oracle
    schema = pa.schema([pa.field("id", pa.int64(), False), ("a", pa.list_(pa.int32())),
                        ("m", pa.map_(pa.string(), pa.int32()))])
    t = catalog.create_table("db.t", schema, primary_keys=["id"], options={"bucket": "1"})
    sink = paimon_sink(t.path, commit_user="job", merge_schema=True)
    sink(spark.sql("select 1L id, array(1, null) a, map('k', cast(null as int)) m"), 0)
    sink(spark.sql("select 2L id, array(3000000000L) a"), 1)
    spark.sql("select 3L id, map('k', 3000000000L) m").write.format("paimon").option("mergeSchema", "true") \
        .mode("append").save(t.path)
    assert [str(f.type) for f in ps.Table.open(t.path).schema.fields] == \
        ["BIGINT NOT NULL", "ARRAY<BIGINT>", "MAP<STRING NOT NULL, BIGINT>"]
    sink(spark.sql("select 4L id, array(cast(null as bigint)) a, map('x', cast(null as bigint)) m"), 2)
    want = {1: ([1, None], {"k": None}), 2: ([3000000000], None), 3: (None, {"k": 3000000000}),
            4: ([None], {"x": None})}
    java = {r["id"]: (r["a"], None if r["m"] is None else dict(r["m"])) for r in get_oracle().read(t.path)}
    assert java == want
    assert {r.id: (r.a, r.m) for r in spark.read.format("paimon").load(t.path).collect()} == want


def test_a_table_created_by_a_write_has_nullable_columns_so_later_batches_may_lack_them(spark, tmp_path):
    """Spark marks a literal or derived column NOT NULL (`'web' source`, `named_struct('x', 1)`):
    a table created from it kept that, and a later batch without the column or field was refused
    even with merge_schema. Tables are created nullable (keys NOT NULL), as Spark's CTAS and Delta."""
    path = str(tmp_path / "wh" / "db.db" / "t")
    sink = paimon_sink(path, commit_user="job", merge_schema=True, options={"primary-key": "id", "bucket": "1"})
    sink(spark.sql("select 1L id, 'web' source, named_struct('x', 1) s, array(named_struct('q', 1)) a"), 0)
    assert [str(f.type) for f in ps.Table.open(path).schema.fields] == \
        ["BIGINT NOT NULL", "STRING", "ROW<x INT>", "ARRAY<ROW<q INT>>"]
    sink(spark.sql("select 2L id, named_struct('x', 2) s"), 1)                    # source missing
    sink(spark.sql("select 3L id, 'app' source, named_struct('y', 'n') s"), 2)     # s.x missing
    assert rows_by(ps.Table.open(path).to_arrow(), "id") == [
        {"id": 1, "source": "web", "s": {"x": 1, "y": None}, "a": [{"q": 1}]},
        {"id": 2, "source": None, "s": {"x": 2, "y": None}, "a": None},
        {"id": 3, "source": "app", "s": {"x": None, "y": "n"}, "a": None}]
    other = str(tmp_path / "wh" / "db.db" / "ds")  # the data source's writes create tables the same way
    spark.sql("select 1L id, 'web' source").write.format("paimon").option("primary-key", "id").mode("append").save(other)
    assert [str(f.type) for f in ps.Table.open(other).schema.fields] == ["BIGINT NOT NULL", "STRING"]


def test_columns_merged_in_are_nullable_as_a_created_tables(spark, catalog, tmp_path):
    """Columns and ROW fields merge_schema (or mergeSchema) added kept Spark's NOT NULL of
    literal elements, fields and map values (ARRAY<INT NOT NULL>, ROW<f INT NOT NULL>), so the
    next batch with a null there was refused, while a table created from the same input has them
    nullable. They are added as a created table's; the core's union_by_name keeps an Arrow
    schema's declared nullability, as create_table does."""
    literal = "array(1) a, named_struct('f', 1) s, map('k', 1) m, array(named_struct('q', 1)) rs"
    created = str(tmp_path / "wh" / "db.db" / "created")
    paimon_sink(created, commit_user="job", options={"primary-key": "id", "bucket": "1"})(
        spark.sql(f"select 1L id, 'x' v, {literal}"), 0)
    types = ["BIGINT NOT NULL", "STRING", "ARRAY<INT>", "ROW<f INT>", "MAP<STRING NOT NULL, INT>", "ARRAY<ROW<q INT>>"]
    assert [str(f.type) for f in ps.Table.open(created).schema.fields] == types
    t = catalog.create_table("db.t", pa.schema([pa.field("id", pa.int64(), False), ("v", pa.string()),
                                                ("rs", pa.list_(pa.struct([("p", pa.int32())])))]),
                             primary_keys=["id"], options={"bucket": "1"})
    sink = paimon_sink(t.path, commit_user="job", merge_schema=True)
    sink(spark.sql(f"select 1L id, 'x' v, {literal}"), 0)
    assert [str(f.type) for f in ps.Table.open(t.path).schema.fields] == \
        types[:2] + ["ARRAY<ROW<p INT, q INT>>"] + types[2:5]
    nulls = "array(cast(null as int)) a, named_struct('f', cast(null as int)) s, map('k', cast(null as int)) m"
    sink(spark.sql(f"select 2L id, 'y' v, {nulls}, array(named_struct('q', cast(null as int))) rs"), 1)
    spark.sql("select 3L id, array(2) b").write.format("paimon").option("mergeSchema", "true").mode("append") \
        .save(t.path)
    assert str(ps.Table.open(t.path).schema.fields[-1].type) == "ARRAY<INT>"
    spark.sql("select 4L id, array(cast(null as int)) b").write.format("paimon").mode("append").save(t.path)
    assert {r["id"]: (r["a"], r["s"], r["b"]) for r in ps.Table.open(t.path).to_arrow().to_pylist()} == {
        1: ([1], {"f": 1}, None), 2: ([None], {"f": None}, None), 3: (None, None, [2]), 4: (None, None, [None])}
    core = catalog.create_table("db.core", pa.schema([("id", pa.int64())]))
    element = pa.list_(pa.field("element", pa.int32(), False))
    core.update_schema().union_by_name(pa.schema([("e", element)])).commit()
    assert str(core.schema.fields[-1].type) == "ARRAY<INT NOT NULL>"  # as create_table keeps it


def test_stream_stops_at_a_schema_change_and_a_restart_continues_with_it(spark, tmp_path, catalog):
    t = catalog.create_table("db.s", KV)
    t.write_arrow(pa.table({"id": [1, 2], "v": ["a", "b"]}))
    ckpt = tmp_path / "ck"
    options = {"scan.mode": "from-snapshot", "scan.snapshot-id": 1}
    seen: list[dict] = []
    q = (stream(spark, t.path, **options).writeStream
         .foreachBatch(lambda df, _: seen.extend(r.asDict() for r in df.collect()))
         .option("checkpointLocation", str(ckpt)).trigger(processingTime="200 milliseconds").start())
    try:
        _wait(lambda: len(seen) == 2)
        t.write_arrow(pa.table({"id": [3], "v": ["c"]}))
        t.update_schema().set_option("snapshot.num-retained.min", "15").commit()  # options only: no stop
        t.write_arrow(pa.table({"id": [4], "v": ["d"]}))
        _wait(lambda: len(seen) == 4)
        with t.update_schema() as u:
            u.add_column("coupon", pa.string()).rename_column("v", "value")
        t.write_arrow(pa.table({"id": [5], "value": ["e"], "coupon": ["X"]}))
        with pytest.raises(Exception, match="Restart the query") as stopped:
            q.awaitTermination(120)
        assert "snapshot 4 was committed with schema 2" in str(stopped.value)
    finally:
        q.stop()
    assert seen == [{"id": i, "v": v} for i, v in enumerate("abcd", 1)]  # nothing in the wrong shape
    restarted = ok(run_batches(stream(spark, t.path, **options), ckpt))  # the new schema, from the change on
    assert flat(restarted) == [{"id": 5, "value": "e", "coupon": "X"}]


def test_a_stream_defined_before_a_schema_change_reads_the_fields_it_meant(spark, tmp_path, catalog):
    """Its columns are read by field id: after a swap of two names each still reads its own field
    (it read the other one, silently, by name), a renamed one is read under its old name, and
    one dropped since is refused, naming it."""
    t = catalog.create_table("db.s", pa.schema([pa.field("id", pa.int64(), False), ("a", pa.string()),
                                                ("b", pa.string())]))
    t.write_arrow(pa.table({"id": [1], "a": ["A"], "b": ["B"]}))
    df = stream(spark, t.path)
    with t.update_schema() as u:
        u.rename_column("a", "tmp").rename_column("b", "a").rename_column("tmp", "b")
    t.write_arrow(pa.table({"id": [2], "a": ["B2"], "b": ["A2"]}))
    assert sorted(flat(ok(run_batches(df, tmp_path / "ck"))), key=lambda r: r["id"]) == [
        {"id": 1, "a": "A", "b": "B"}, {"id": 2, "a": "A2", "b": "B2"}]
    t.update_schema().drop_column("a").commit()  # the field `b` meant
    _, exc = run_batches(df, tmp_path / "ck2")
    assert "'b' (field id 2 of schema 0) was dropped from Paimon table" in str(exc)


def test_a_dataframe_or_view_defined_before_a_schema_change_reads_the_fields_it_meant(spark, catalog):
    """A batch DataFrame or temporary view keeps the schema it was defined with; its columns are
    read by field id. After a swap of two names it returned each one's values under the other
    name (filters too); after a rename and a re-add of the name, the new column's nulls. A column
    dropped since is refused, naming it; a read schema the user gives matches names."""
    t = catalog.create_table("db.swap", pa.schema([("k", pa.int64()), ("a", pa.string()), ("b", pa.string()),
                                                   ("x", pa.int32())]), options={"bucket": "-1"})
    t.write_arrow(pa.table({"k": [1, 2], "a": ["a1", "a2"], "b": ["b1", "b2"], "x": [10, 20]},
                           t.schema.arrow_schema()))
    df, renamed, dropped = (spark.read.format("paimon").load(t.path) for _ in range(3))  # each read once
    for view in ("before_swap", "before_drop"):
        spark.sql(f"CREATE OR REPLACE TEMPORARY VIEW {view} USING paimon OPTIONS (path '{t.path}')")
    with t.update_schema() as u:
        u.rename_column("a", "tmp").rename_column("b", "a").rename_column("tmp", "b")
    want = [{"k": 1, "a": "a1", "b": "b1", "x": 10}, {"k": 2, "a": "a2", "b": "b2", "x": 20}]
    assert sorted((r.asDict() for r in df.collect()), key=lambda r: r["k"]) == want
    assert [r.k for r in df.where("a = 'a2'").collect()] == [2]  # a pushed filter reads the field too
    assert [r.k for r in df.where("b = 'a2'").collect()] == []
    assert [r.asDict() for r in spark.sql("select * from before_swap where b = 'b1'").collect()] == want[:1]
    now = spark.read.format("paimon").load(t.path)
    assert [r.asDict() for r in now.where("k = 1").collect()] == [{"k": 1, "b": "a1", "a": "b1", "x": 10}]
    given = spark.read.format("paimon").schema("k long, a string").load(t.path)  # by name, as documented
    assert [tuple(r) for r in given.where("k = 1").collect()] == [(1, "b1")]
    travelled = spark.read.format("paimon").option("snapshot-id", 1).load(t.path)  # the snapshot's schema
    assert [r.asDict() for r in travelled.where("a = 'a1'").collect()] == want[:1]

    with t.update_schema() as u:  # `a` (the field the DataFrames read as `b`) renamed, the name re-added
        u.rename_column("b", "w").add_column("b", pa.string())
    ps.Table.open(t.path).write_arrow(pa.table({"k": [3], "a": ["b3"], "w": ["a3"], "b": ["new"], "x": [30]},
                                               ps.Table.open(t.path).schema.arrow_schema()))
    assert [r.asDict() for r in renamed.where("a = 'a3'").collect()] == [{"k": 3, "a": "a3", "b": "b3", "x": 30}]
    with t.update_schema() as u:
        u.drop_column("x").add_column("x", pa.int32())
    for stale in (dropped, spark.table("before_drop")):
        with pytest.raises(Exception, match=r"'x' \(field id 3 of schema 0\) was dropped from Paimon table "
                                            r"swap after this DataFrame, view or stream was defined"):
            stale.collect()
    assert spark.read.format("paimon").option("snapshot-id", 1).load(t.path).count() == 2


def test_a_dataframe_refuses_a_nested_field_renamed_since(spark, catalog):
    """Nested ROW fields are read by name: one renamed (or swapped) since the DataFrame was
    defined is refused, naming it, rather than read from another field."""
    t = catalog.create_table("db.nested", pa.schema([("k", pa.int64()),
                                                     ("s", pa.struct([("x", pa.int32()), ("y", pa.int32())]))]))
    t.write_arrow(pa.table({"k": [1], "s": [{"x": 1, "y": 2}]}, t.schema.arrow_schema()))
    df = spark.read.format("paimon").load(t.path)
    with t.update_schema() as u:
        u.rename_column(["s", "x"], "tmp").rename_column(["s", "y"], "x").rename_column(["s", "tmp"], "y")
    with pytest.raises(Exception, match=r"field 's.x' of column 's' of Paimon table nested was renamed to 'y'"):
        df.collect()
    assert [r.s.asDict() for r in spark.read.format("paimon").load(t.path).collect()] == [{"y": 1, "x": 2}]


def _wait(condition, timeout: float = 120) -> None:
    deadline = time.monotonic() + timeout
    while not condition():
        assert time.monotonic() < deadline, "timed out"
        time.sleep(0.1)


def test_time_travel_merges_under_the_tables_current_options(spark, catalog):
    """As Java's time travel (and Table.to_arrow(snapshot_id=...)): a snapshot's rows merge under
    the table's options of today, so the latest snapshot by its id reads as a plain read."""
    schema = pa.schema([pa.field("k", pa.int64(), False), ("v", pa.int64())])
    t = catalog.create_table("db.agg", schema, primary_keys=["k"], options={
        "bucket": "1", "merge-engine": "aggregation", "fields.v.aggregate-function": "sum"})
    t.write_arrow(pa.table({"k": [1], "v": [5]}, schema))
    t.write_arrow(pa.table({"k": [1], "v": [3]}, schema))
    with t.update_schema() as update:
        update.set_option("fields.v.aggregate-function", "max")
    latest = ps.Table.open(t.path).latest_snapshot().id
    plain = spark.read.format("paimon").load(t.path).collect()
    travelled = spark.read.format("paimon").option("snapshot-id", latest).load(t.path).collect()
    assert [tuple(r) for r in plain] == [tuple(r) for r in travelled] == [(1, 5)]
