"""Spark-level edge cases of nested types, key-only deletes and rescaling, each against an
explicit expected answer: what every writer (foreachBatch(paimon_sink) in the driver and
shuffled, df.write.format("paimon"), writeStream.format("paimon")) stores, and what every
reader (spark.read / readStream.format("paimon"), Table.to_arrow, Paimon's Java library)
gives back.

Tests marked xfail(strict=True) pin bugs found here whose fix lies outside the Spark layer
(see their reasons); they start failing, as a reminder to drop the mark, once fixed.
"""
from __future__ import annotations

import datetime as dt
from pathlib import Path
from typing import Any, Callable

import pyarrow as pa
import pytest
from pyspark.sql import functions as F

import paimon_streaming as ps
from paimon_streaming.scan import TableScan
from paimon_streaming.sinks import paimon_sink
from java_oracle import get_oracle
from test_spark_sink import write_input_files
from test_spark_source import apply_changes, conf, flat, run_batches, stream

UTC = dt.timezone.utc
NEW_YORK = "America/New_York"


# ---- helpers ---------------------------------------------------------------------------------------
def canon(v: Any) -> Any:
    """A value with map entries in key order, whichever form the reader gives maps in (Arrow's
    and Java's lists of (key, value) pairs, Spark's dicts): Spark does not keep the entry order
    of a Python dict it is given, and no reader promises one."""
    if isinstance(v, dict):
        return {k: canon(x) for k, x in v.items()}
    if isinstance(v, list):
        if v and all(isinstance(x, tuple) and len(x) == 2 for x in v):
            return sorted(((k, canon(x)) for k, x in v), key=lambda kv: kv[0])
        return [canon(x) for x in v]
    return v


def by_id(rows: list[dict]) -> list[dict]:
    return [canon(r) for r in sorted(rows, key=lambda r: r["id"])]


def spark_rows(df) -> list[dict]:
    """The DataFrame's rows as plain Python values (nested Rows as dicts), by id."""
    return by_id([r.asDict(recursive=True) for r in df.collect()])


def stream_rows(df, checkpoint: Path) -> list[dict]:
    """All rows a stream emits under Trigger.AvailableNow, nested Rows as dicts."""
    got: list[dict] = []

    def collect(batch_df, batch_id):
        got.extend(r.asDict(recursive=True) for r in batch_df.collect())
    q = df.writeStream.foreachBatch(collect).option("checkpointLocation", str(checkpoint)) \
        .trigger(availableNow=True).start()
    q.awaitTermination(300)
    assert q.exception() is None, q.exception()
    return got


def run_query(spark, source: Path, ddl: str, fn: Callable | None = None, checkpoint: Path | None = None, *,
              fmt_path: str | None = None, options: dict[str, str] | None = None) -> Exception | None:
    """Stream the parquet files of `source` (one a micro-batch, AvailableNow) into foreachBatch
    `fn`, or with `fmt_path` into writeStream.format("paimon"); the query's exception, if any."""
    df = spark.readStream.schema(ddl).option("maxFilesPerTrigger", 1).parquet(str(source))
    if fmt_path is None:
        writer = df.writeStream.foreachBatch(fn)
    else:
        writer = df.writeStream.format("paimon")
        for k, v in (options or {}).items():
            writer = writer.option(k, v)
    q = writer.option("checkpointLocation", str(checkpoint)).trigger(availableNow=True)
    q = q.start(fmt_path) if fmt_path is not None else q.start()
    try:
        q.awaitTermination(300)
    except Exception:  # noqa: BLE001 - reported through q.exception()
        pass
    return q.exception()


def bucket_counts(t: ps.Table) -> set[int]:
    scan = TableScan(t.file_io, t.path, t.schema)
    return {e.total_buckets for e in scan.live_entries(t.latest_snapshot())}


# ---- 1. nested types ---------------------------------------------------------------------------------
NESTED_DDL = ("id long, m map<string, array<timestamp>>, mr map<string, struct<a:int, b:string>>, "
              "am array<map<string, int>>, rm struct<x:int, mm:map<string, timestamp_ntz>>, "
              "ml map<string, timestamp>, mn map<string, timestamp_ntz>")
INSTANT = dt.datetime(2024, 7, 1, 12, 30, tzinfo=UTC)   # 08:30 in New York
WALL = dt.datetime(2024, 3, 10, 2, 30)                  # a wall time New York skips (DST starts)
NESTED_ROWS = [
    (1, {"a": [INSTANT, None], "b": None, "c": []}, {"k": (1, "x"), "n": None, "e": (None, None)},
     [{"p": 1, "q": None}, None, {}], (5, {"t": WALL, "u": None}), {"i": INSTANT, "j": None}, {"w": WALL, "x": None}),
    (2, None, None, None, None, None, None),
    (3, {}, {}, [], (None, None), {}, {}),
    (4, {"z": None}, {"k": (None, None)}, [None], (None, {}), {"a": None}, {"a": None}),
]
# What Table.to_arrow() (and Java) read: TIMESTAMP_LTZ as UTC instants, TIMESTAMP as wall times
NESTED_EXPECTED = by_id([
    {"id": 1, "m": [("a", [INSTANT, None]), ("b", None), ("c", [])],
     "mr": [("k", {"a": 1, "b": "x"}), ("n", None), ("e", {"a": None, "b": None})],
     "am": [[("p", 1), ("q", None)], None, []], "rm": {"x": 5, "mm": [("t", WALL), ("u", None)]},
     "ml": [("i", INSTANT), ("j", None)], "mn": [("w", WALL), ("x", None)]},
    {"id": 2, "m": None, "mr": None, "am": None, "rm": None, "ml": None, "mn": None},
    {"id": 3, "m": [], "mr": [], "am": [], "rm": {"x": None, "mm": None}, "ml": [], "mn": []},
    {"id": 4, "m": [("z", None)], "mr": [("k", {"a": None, "b": None})], "am": [None],
     "rm": {"x": None, "mm": []}, "ml": [("a", None)], "mn": [("a", None)]},
])


@pytest.mark.parametrize("writer", ["sink", "sink-shuffle", "format", "format-stream"])
def test_nested_maps_arrays_and_rows_through_every_writer_and_reader(spark, tmp_path, writer):
    """MAP values that are ARRAY<TIMESTAMP_LTZ> or ROW, ARRAY<MAP>, a ROW holding a MAP, nulls
    at every level and empty maps and arrays, written under a session zone that is not UTC:
    stored as Spark gave them (instants as instants, wall times as wall times, even one that
    New York skips), and read back the same by spark.read, readStream, to_arrow and Java."""
    path = str(tmp_path / "wh" / "db.db" / "nested")
    options = {"primary-key": "id", "bucket": "2"}
    with conf(spark, "spark.sql.session.timeZone", NEW_YORK):
        source = spark.createDataFrame(NESTED_ROWS, NESTED_DDL)
        given = spark_rows(source)
        if writer.startswith("sink"):
            paimon_sink(path, commit_user="nested", options=options,
                        shuffle=True if writer == "sink-shuffle" else None)(source.repartition(3), 0)
        elif writer == "format":
            w = source.repartition(1).write.format("paimon").mode("append")
            for k, v in options.items():
                w = w.option(k, v)
            w.save(path)
        else:
            source.coalesce(1).write.parquet(str(tmp_path / "in"))
            exc = run_query(spark, tmp_path / "in", NESTED_DDL, fmt_path=path, checkpoint=tmp_path / "ck-w",
                            options={"commitUser": "nested", **options})
            assert exc is None, exc
        t = ps.Table.open(path)
        assert str(t.schema.field("ml").type).endswith(", TIMESTAMP(6) WITH LOCAL TIME ZONE>")
        assert str(t.schema.field("mn").type).endswith(", TIMESTAMP(6)>")
        assert by_id(t.to_arrow().to_pylist()) == NESTED_EXPECTED
        assert spark_rows(spark.read.format("paimon").load(path)) == given
        assert by_id(stream_rows(stream(spark, path), tmp_path / "ck-r")) == given
    assert by_id(get_oracle().read(path)) == NESTED_EXPECTED


CHAR_DDL = "id long, c char(5), v varchar(3), a array<varchar(4)>, m map<string, struct<x: char(2)>>"
CHAR_ROWS = [(1, "ab", "xyz", ["q", None], {"k": ("z",)}), (2, None, None, None, None)]


@pytest.mark.parametrize("writer", ["sink", "sink-shuffle", "format"])
def test_char_and_varchar_columns_kept_by_spark_are_strings(spark, tmp_path, writer):
    """Under `spark.sql.preserveCharVarcharTypeInfo` Spark keeps CHAR(n)/VARCHAR(n) in schemas,
    which PySpark's Arrow conversions refuse ("CharType(5) is not supported in conversion to
    Arrow"): every writer stores them as strings, as Spark reads them without the setting."""
    path = str(tmp_path / "wh" / "db.db" / "chars")
    options = {"primary-key": "id", "bucket": "2"}
    with conf(spark, "spark.sql.preserveCharVarcharTypeInfo", "true"):
        source = spark.createDataFrame(CHAR_ROWS, CHAR_DDL)
        assert "CharType(5)" in str(source.schema)
        if writer.startswith("sink"):
            paimon_sink(path, commit_user="chars", options=options,
                        shuffle=True if writer == "sink-shuffle" else None)(source, 0)
        elif writer == "format":
            w = source.write.format("paimon").mode("append")
            for k, v in options.items():
                w = w.option(k, v)
            w.save(path)
        t = ps.Table.open(path)
        assert [str(f.type) for f in t.schema.fields[1:3]] == ["STRING", "STRING"]
        expected = [{"id": 1, "c": "ab", "v": "xyz", "a": ["q", None], "m": {"k": {"x": "z"}}},
                    {"id": 2, "c": None, "v": None, "a": None, "m": None}]
        assert spark_rows(spark.read.format("paimon").load(path)) == expected
    assert by_id([{**r, "m": r["m"] and dict(r["m"])} for r in t.to_arrow().to_pylist()]) == expected


def test_large_var_types_through_every_writer_and_reader(spark, tmp_path):
    """Under `spark.sql.execution.arrow.useLargeVarTypes` Spark sends strings and binaries as
    large_string / large_binary: paimon_sink writing in the driver failed every batch with
    "Schema at index 0 was different: ... string vs large_string". Every writer takes them, at
    the top level and nested, and every reader gives them back."""
    path = str(tmp_path / "wh" / "db.db" / "large")
    row = ("select {id}L id, 'abc' v, X'00ff' b, array('x', null) a, named_struct('s', 'y', 'bb', X'01') r, "
           "map('k', 'v') m union all select {id2}L, null, null, null, "
           "named_struct('s', cast(null as string), 'bb', cast(null as binary)), null")
    options = {"primary-key": "id", "bucket": "2"}
    writers = {"sink": lambda df, i: paimon_sink(path, commit_user="large", options=options)(df, i),
               "sink-task": lambda df, i: paimon_sink(path, commit_user="large", shuffle=False)(df.repartition(2), i),
               "sink-shuffle": lambda df, i: paimon_sink(path, commit_user="large", shuffle=True)(df.repartition(2), i),
               "format": lambda df, _: df.write.format("paimon").mode("append").save(path)}
    with conf(spark, "spark.sql.execution.arrow.useLargeVarTypes", "true"):
        for i, write in enumerate(writers.values()):
            write(spark.sql(row.format(id=2 * i, id2=2 * i + 1)), i)
        full = {"v": "abc", "b": b"\x00\xff", "a": ["x", None], "r": {"s": "y", "bb": b"\x01"}, "m": {"k": "v"}}
        empty = {**dict.fromkeys(full), "r": {"s": None, "bb": None}}
        expected = [{"id": i, **(empty if i % 2 else full)} for i in range(2 * len(writers))]
        assert spark_rows(spark.read.format("paimon").load(path)) == expected
        assert by_id(stream_rows(stream(spark, path), tmp_path / "ck")) == expected
    assert by_id([{**r, "m": r["m"] and dict(r["m"])} for r in ps.Table.open(path).to_arrow().to_pylist()]) == expected


@pytest.mark.parametrize("writer", ["sink", "sink-shuffle", "format", "format-nested-only"])
def test_nested_instants_and_wall_times_convert_in_the_session_zone(spark, catalog, writer):
    """Into an existing table whose nested types are the other kind of timestamp, a Spark
    TIMESTAMP (an instant) keeps the wall time it shows in the session's zone and a
    TIMESTAMP_NTZ is read in that zone, inside a MAP, an ARRAY and a ROW as at the top level
    (Spark's casts of nested types do the same)."""
    schema = pa.schema([pa.field("id", pa.int64(), False), ("top", pa.timestamp("us")),
                        ("wall", pa.map_(pa.string(), pa.timestamp("us"))),
                        ("inst", pa.map_(pa.string(), pa.timestamp("us", tz="UTC"))),
                        ("arr", pa.list_(pa.timestamp("us"))), ("row", pa.struct([("w", pa.timestamp("us"))]))])
    t = catalog.create_table(f"db.zones_{writer.replace('-', '_')}", schema, primary_keys=["id"],
                             options={"bucket": "2"})
    sql = ("select id, timestamp'2024-07-01 08:30:00' as top, map('k', timestamp'2024-07-01 08:30:00') as wall, "
           "map('k', timestamp_ntz'2024-07-01 08:30:00') as inst, array(timestamp'2024-07-01 08:30:00') as arr, "
           "named_struct('w', timestamp'2024-07-01 08:30:00') as row from range(3)")
    with conf(spark, "spark.sql.session.timeZone", NEW_YORK):
        df = spark.sql(sql)
        if writer == "format-nested-only":  # the zone is only on nested values (Spark labels them too)
            df.drop("top").write.format("paimon").mode("append").save(t.path)
        elif writer == "format":
            df.write.format("paimon").mode("append").save(t.path)
        else:
            paimon_sink(t.path, commit_user="z", shuffle=writer == "sink-shuffle")(df, 0)
    wall = dt.datetime(2024, 7, 1, 8, 30)
    expected = [{"id": i, "top": None if writer == "format-nested-only" else wall, "wall": [("k", wall)], "inst": [("k", dt.datetime(2024, 7, 1, 12, 30, tzinfo=UTC))],
                 "arr": [wall], "row": {"w": wall}} for i in range(3)]
    assert by_id(ps.Table.open(t.path).to_arrow().to_pylist()) == expected


def test_the_data_source_refuses_nested_wall_times_into_instants_without_the_session_zone(spark, catalog):
    """`df.write.format("paimon")` is not given the session's zone: a TimestampNTZ inside a MAP
    written into a MAP of TIMESTAMP_LTZ, with no TimestampType value anywhere in the input to
    show the zone, is refused naming the column (it was silently read as UTC)."""
    t = catalog.create_table("db.ntz_nested", pa.schema([pa.field("id", pa.int64(), False),
                                                         ("inst", pa.map_(pa.string(), pa.timestamp("us", tz="UTC")))]),
                             primary_keys=["id"], options={"bucket": "1"})
    df = spark.sql("select id, map('k', timestamp_ntz'2024-07-01 08:30:00') as inst from range(2)")
    with conf(spark, "spark.sql.session.timeZone", NEW_YORK):
        with pytest.raises(Exception, match=r"column inst of table .*option\('timeZone'"):
            df.write.format("paimon").mode("append").save(t.path)
    assert ps.Table.open(t.path).latest_snapshot() is None


def test_a_null_row_whose_type_has_not_null_fields(spark, catalog):
    """A null ROW (and a null ROW as a MAP value) of a type with NOT NULL fields: Spark's Arrow
    holds nulls in the fields under the null row, which mean nothing there."""
    schema = pa.schema([pa.field("id", pa.int64(), False),
                        ("addr", pa.struct([pa.field("zip", pa.string(), False), ("city", pa.string())])),
                        ("m", pa.map_(pa.string(), pa.struct([pa.field("z", pa.int32(), False)])))])
    t = catalog.create_table("db.notnull_fields", schema, primary_keys=["id"], options={"bucket": "1"})
    df = spark.createDataFrame([(1, ("1", "x"), {"a": (1,), "b": None}), (2, None, None)],
                               "id long, addr struct<zip:string, city:string>, m map<string, struct<z:int>>")
    paimon_sink(t.path, commit_user="n")(df, 0)
    assert by_id(ps.Table.open(t.path).to_arrow().to_pylist()) == by_id([
        {"id": 1, "addr": {"zip": "1", "city": "x"}, "m": [("a", {"z": 1}), ("b", None)]},
        {"id": 2, "addr": None, "m": None}])



@pytest.mark.parametrize("writer", ["sink", "sink-task", "sink-shuffle", "format"])
def test_a_null_row_whose_spark_type_has_not_null_fields(spark, tmp_path, writer):
    """A null struct whose fields Spark itself declares NOT NULL (`when(c, struct(id, array(1)))`:
    the struct is nullable, its fields are not). paimon_sink writing in the driver failed the
    batch with PySpark's "nulls in input cannot be viewed as non-nullable" (`toArrow`)."""
    path = str(tmp_path / "wh" / "db.db" / "spark_not_null")
    df = spark.range(4).select(F.col("id"), F.when(F.col("id") % 2 == 1, F.struct(
        F.col("id").alias("a"), F.array(F.lit(1)).alias("b"))).alias("s"))
    assert not df.schema["s"].dataType["a"].nullable and df.schema["s"].nullable
    options = {"primary-key": "id", "bucket": "2"}
    writers = {"sink": lambda: paimon_sink(path, commit_user="nn", options=options)(df, 0),
               "sink-task": lambda: paimon_sink(path, commit_user="nn", shuffle=False,
                                                options=options)(df.repartition(2), 0),
               "sink-shuffle": lambda: paimon_sink(path, commit_user="nn", shuffle=True,
                                                   options=options)(df.repartition(2), 0),
               "format": lambda: df.write.format("paimon").options(**options).mode("append").save(path)}
    writers[writer]()
    expected = [{"id": i, "s": {"a": i, "b": [1]} if i % 2 else None} for i in range(4)]
    assert by_id(ps.Table.open(path).to_arrow().to_pylist()) == expected
    assert spark_rows(spark.read.format("paimon").load(path)) == expected

# ---- 2. key-only deletes into NOT NULL columns ---------------------------------------------------------
CDC_SCHEMA = pa.schema([pa.field("id", pa.int64(), False), pa.field("qty", pa.int32(), False),
                        pa.field("at", pa.timestamp("us"), False),
                        pa.field("tags", pa.map_(pa.string(), pa.int32()), False),
                        pa.field("addr", pa.struct([("zip", pa.string()), ("city", pa.string())]), False),
                        ("note", pa.string())])
CDC_DDL = ("id long, qty int, at timestamp_ntz, tags map<string, int>, addr struct<zip:string, city:string>, "
           "note string, op string")
CDC_INPUT = pa.schema([pa.field(f.name, f.type) for f in CDC_SCHEMA] + [("op", pa.string())])


def run_cdc_query(spark, tmp_path, t: ps.Table, writer: str, user: str) -> BaseException | None:
    """The CDC input files of `tmp_path / "in"` streamed into `t` by `writer` (sink, sink-shuffle,
    format-stream) with their `op` column as row kinds; the query's exception, if any."""
    if writer == "format-stream":
        return run_query(spark, tmp_path / "in", CDC_DDL, fmt_path=t.path, checkpoint=tmp_path / "ck",
                         options={"commitUser": user, "rowKindColumn": "op"})
    sink = paimon_sink(t.path, row_kind_column="op", shuffle=True if writer == "sink-shuffle" else None)
    return run_query(spark, tmp_path / "in", CDC_DDL, sink, checkpoint=tmp_path / "ck")


def cdc_rows(ids: list[int], kind: str, qty: int | None = 1) -> pa.Table:
    """Rows of one kind; qty=None: key-only rows (every other column null, as a tombstone)."""
    n, full = len(ids), qty is not None

    def col(v):
        return [v if full else None] * n
    return pa.table({"id": ids, "qty": col(qty), "at": col(dt.datetime(2024, 1, 1)), "tags": col([("a", 1)]),
                     "addr": col({"zip": "1", "city": "x"}), "note": col("n"), "op": [kind] * n}, schema=CDC_INPUT)


CDC_BATCHES = [
    cdc_rows(list(range(10)), "+I"),
    pa.concat_tables([cdc_rows([1, 2, 3], "-D", None), cdc_rows([4], "-U", None), cdc_rows([4], "+U", 7),
                      cdc_rows([42], "-D", None)]),    # 42: a key never written
    pa.concat_tables([cdc_rows([5], "-D", None), cdc_rows([2], "+I", 9)]),
]
CDC_EXPECTED = {0: 1, 2: 9, 4: 7, 6: 1, 7: 1, 8: 1, 9: 1}  # id -> qty


@pytest.mark.parametrize("options,writer", [
    ({"deletion-vectors.enabled": "true"}, "sink"),
    ({"deletion-vectors.enabled": "true"}, "sink-shuffle"),
    ({"deletion-vectors.enabled": "true"}, "format-stream"),
    ({}, "sink"),
    ({"merge-engine": "partial-update", "partial-update.remove-record-on-delete": "true"}, "sink-shuffle"),
    ({"merge-engine": "partial-update", "partial-update.remove-record-on-delete": "true",
      "deletion-vectors.enabled": "true"}, "sink"),
], ids=["dv-sink", "dv-shuffle", "dv-format", "mor-sink", "partial-update-shuffle", "partial-update-dv-sink"])
def test_key_only_deletes_into_not_null_columns(spark, tmp_path, catalog, options, writer):
    """A CDC stream whose -D/-U rows carry only the key deletes the keys of a table with NOT NULL
    value columns (INT, TIMESTAMP, MAP, ROW), in every writer; Java reads the same rows."""
    write_input_files(tmp_path / "in", CDC_BATCHES)
    t = catalog.create_table("db.cdc", CDC_SCHEMA, primary_keys=["id"], options={"bucket": "2", **options})
    exc = run_cdc_query(spark, tmp_path, t, writer, "cdc")
    assert exc is None, exc
    expected = [{"id": i, "qty": q, "at": dt.datetime(2024, 1, 1), "tags": [("a", 1)],
                 "addr": {"zip": "1", "city": "x"}, "note": "n"} for i, q in sorted(CDC_EXPECTED.items())]
    assert by_id(ps.Table.open(t.path).to_arrow().to_pylist()) == expected
    assert {r.id: r.qty for r in spark.read.format("paimon").load(t.path).collect()} == CDC_EXPECTED
    assert by_id(get_oracle().read(t.path)) == expected


@pytest.mark.parametrize("writer", ["sink", "sink-shuffle", "format-stream"])
def test_key_only_deletes_into_an_aggregation_table_are_refused(spark, tmp_path, catalog, writer):
    """An aggregation table reads a retraction's values: the batch fails naming the column, and
    commits nothing (the first batch stays the table's only one)."""
    write_input_files(tmp_path / "in", CDC_BATCHES[:2])
    t = catalog.create_table("db.agg", CDC_SCHEMA, primary_keys=["id"],
                             options={"bucket": "2", "merge-engine": "aggregation", "fields.qty.aggregate-function": "sum"})
    exc = run_cdc_query(spark, tmp_path, t, writer, "agg")
    assert exc is not None and "column 'qty'" in str(exc) and "aggregation" in str(exc), exc
    t = ps.Table.open(t.path)
    assert {s.commit_identifier for s in t.snapshots()} == {0}
    assert sorted((r["id"], r["qty"]) for r in t.to_arrow().to_pylist()) == [(i, 1) for i in range(10)]


# ---- 3. rescaling under Spark ----------------------------------------------------------------------------
RESCALE_DDL = "id long, v string, dt string"


def rescale_batch(ids, tag: str) -> pa.Table:
    ids = list(ids)
    return pa.table({"id": pa.array(ids, pa.int64()), "v": [f"{tag}{i}" for i in ids],
                     "dt": ["p" if i % 2 else "q" for i in ids]})


RESCALE_BATCHES = [rescale_batch(range(0, 40), "a"), rescale_batch(range(20, 60), "b"),
                   rescale_batch(range(50, 90), "c")]
RESCALE_OPTIONS = {"primary-key": "id,dt", "partition": "dt", "bucket": "2"}


def final_state(batches: list[pa.Table]) -> dict[int, str]:
    return {r["id"]: r["v"] for b in batches for r in b.to_pylist()}


def assert_state(t: ps.Table, expected: dict[int, str]) -> None:
    """Every key once, with its newest value."""
    ids = t.to_arrow().column("id").to_pylist()
    assert len(ids) == len(set(ids)), "duplicate keys"
    assert {r["id"]: r["v"] for r in t.to_arrow().to_pylist()} == expected


def test_rescale_between_two_runs_of_a_query(spark, tmp_path):
    """Run 1 writes two batches in 2 buckets; Table.rescale(bucket=5); run 2 of the same query
    (same checkpoint) writes its batch in 5 buckets. Streams over the table skip the rescale's
    OVERWRITE, time travel to before it reads the old rows, and Java reads the same end state."""
    path = str(tmp_path / "wh" / "db.db" / "t")
    write_input_files(tmp_path / "in", RESCALE_BATCHES[:2])
    assert run_query(spark, tmp_path / "in", RESCALE_DDL, paimon_sink(path, options=RESCALE_OPTIONS),
                     checkpoint=tmp_path / "ck") is None
    t = ps.Table.open(path)
    sid = t.rescale(bucket=5)
    write_input_files(tmp_path / "in", RESCALE_BATCHES)
    assert run_query(spark, tmp_path / "in", RESCALE_DDL, paimon_sink(path, options=RESCALE_OPTIONS),
                     checkpoint=tmp_path / "ck") is None
    t = ps.Table.open(path)
    assert t.snapshot(sid).commit_kind == "OVERWRITE"
    assert [(s.commit_kind, s.commit_identifier) for s in t.snapshots() if s.id > sid] == [("APPEND", 2)]
    assert bucket_counts(t) == {5}
    expected = final_state(RESCALE_BATCHES)
    assert_state(t, expected)
    assert {r["id"]: r["v"] for r in get_oracle().read(path)} == expected
    # a stream from the first snapshot: each batch's rows once, nothing of the rescale
    changes = flat(run_batches(stream(spark, path, rowKindColumn="_kind", **{
        "scan.mode": "from-snapshot", "scan.snapshot-id": 1}), tmp_path / "r1")[0])
    assert sorted((r["id"], r["v"], r["_kind"]) for r in changes) == \
        sorted((r["id"], r["v"], "+I") for b in RESCALE_BATCHES for r in b.to_pylist())
    # latest-full after the rescale: the state, each key once
    full = flat(run_batches(stream(spark, path), tmp_path / "r2")[0])
    assert sorted((r["id"], r["v"]) for r in full) == sorted(expected.items())
    # time travel to before the rescale: the old rows, also with a filter on the key
    old = final_state(RESCALE_BATCHES[:2])
    before = spark.read.format("paimon").option("snapshot-id", sid - 1).load(path)
    assert {r.id: r.v for r in before.collect()} == old
    assert [(r.id, r.v) for r in before.filter("id = 33").collect()] == [(33, old[33])]
    assert {r.id: r.v for r in spark.read.format("paimon").option("scan.snapshot-id", sid - 1)
            .load(path).collect()} == old


@pytest.mark.parametrize("shuffle,dv", [(None, False), (True, True)], ids=["driver-mor", "shuffle-dv"])
def test_rescale_between_batches_of_a_running_query(spark, tmp_path, shuffle, dv):
    """A query started before the rescale whose next batch comes after it writes that batch in
    the new layout, without duplicating keys."""
    path = str(tmp_path / "wh" / "db.db" / "t")
    options = {**RESCALE_OPTIONS, **({"deletion-vectors.enabled": "true"} if dv else {})}
    sink = paimon_sink(path, options=options, shuffle=shuffle)

    def rescaling_sink(df, batch_id):
        if batch_id == 1:
            ps.Table.open(path).rescale(bucket=5)
        sink(df, batch_id)
    write_input_files(tmp_path / "in", RESCALE_BATCHES)
    assert run_query(spark, tmp_path / "in", RESCALE_DDL, rescaling_sink, checkpoint=tmp_path / "ck") is None
    t = ps.Table.open(path)
    assert bucket_counts(t) == {5}
    assert_state(t, final_state(RESCALE_BATCHES))


def test_a_batch_racing_a_rescale_fails_clearly_and_replays_correctly(spark, tmp_path):
    """A batch whose files were written in 2 buckets while the rescale to 5 committed cannot
    commit (its partition would hold two counts): the query fails naming the rescale, nothing of
    the batch is committed, and the query restarted from its checkpoint writes it anew."""
    path = str(tmp_path / "wh" / "db.db" / "t")
    sink = paimon_sink(path, options=RESCALE_OPTIONS)

    def racing_sink(df, batch_id):
        if batch_id != 1:
            return sink(df, batch_id)
        prepared = sink.prepare(df, batch_id)    # written on the 2-bucket layout
        ps.Table.open(path).rescale(bucket=5)    # ... and the rescale commits first
        prepared.commit()
    write_input_files(tmp_path / "in", RESCALE_BATCHES)
    exc = run_query(spark, tmp_path / "in", RESCALE_DDL, racing_sink, checkpoint=tmp_path / "ck")
    assert exc is not None and "rescaled" in str(exc), exc
    t = ps.Table.open(path)
    assert [s.commit_identifier for s in t.snapshots() if s.commit_kind != "OVERWRITE"] == [0]
    assert_state(t, final_state(RESCALE_BATCHES[:1]))
    assert run_query(spark, tmp_path / "in", RESCALE_DDL, paimon_sink(path, options=RESCALE_OPTIONS),
                     checkpoint=tmp_path / "ck") is None
    t = ps.Table.open(path)
    assert bucket_counts(t) == {5}
    assert_state(t, final_state(RESCALE_BATCHES))


def test_format_stream_writer_across_a_rescale(spark, tmp_path):
    """writeStream.format("paimon") plans each batch when it runs: after a rescale between two
    runs its batch lands in the new layout."""
    path = str(tmp_path / "wh" / "db.db" / "t")
    options = {"commitUser": "fmt", **RESCALE_OPTIONS}
    write_input_files(tmp_path / "in", RESCALE_BATCHES[:2])
    assert run_query(spark, tmp_path / "in", RESCALE_DDL, fmt_path=path, checkpoint=tmp_path / "ck",
                     options=options) is None
    ps.Table.open(path).rescale(bucket=5)
    write_input_files(tmp_path / "in", RESCALE_BATCHES)
    assert run_query(spark, tmp_path / "in", RESCALE_DDL, fmt_path=path, checkpoint=tmp_path / "ck",
                     options=options) is None
    t = ps.Table.open(path)
    assert bucket_counts(t) == {5}
    assert_state(t, final_state(RESCALE_BATCHES))


def test_streaming_read_overwrite_across_a_rescale_loses_and_repeats_nothing(spark, tmp_path, catalog):
    """With streaming-read-overwrite=true an OVERWRITE is read as changes, diffed per bucket:
    across a rescale a key that moved buckets came as -D in one unit and +I in another, and one
    moved to a lower bucket was deleted last (5 of 60 keys lost). A rescale's snapshot is marked
    and skipped (it changes no row); an OVERWRITE that changes a partition's count otherwise (a
    Java rescale) stops the stream with an error naming the snapshot."""
    t = catalog.create_table("db.t", pa.schema([("id", pa.int64()), ("v", pa.string())]), primary_keys=["id"],
                             options={"bucket": "2"})
    t.write_arrow(pa.table({"id": pa.array(range(60), pa.int64()), "v": [f"a{i}" for i in range(60)]}))
    t.rescale(bucket=5)
    t.write_arrow(pa.table({"id": pa.array(range(50, 70), pa.int64()), "v": [f"b{i}" for i in range(50, 70)]}))
    expected = {r["id"]: r["v"] for r in t.to_arrow().to_pylist()}
    rows = flat(run_batches(stream(spark, t.path, rowKindColumn="_kind", **{
        "scan.mode": "from-snapshot", "scan.snapshot-id": 1, "streaming-read-overwrite": "true"}), tmp_path / "r")[0])
    assert {r["id"]: r["v"] for r in apply_changes(rows, key=("id",))} == expected
