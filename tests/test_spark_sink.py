"""Spark sink: foreachBatch(paimon_sink) and format("paimon") writes in local mode, read back
by us and by pypaimon."""
from __future__ import annotations

import logging
import os

import pyarrow as pa
import pyarrow.parquet as pq
import pytest

import paimon_streaming as ps
from paimon_streaming.errors import InvalidOptionError, PaimonError
from paimon_streaming.scan import TableScan
from paimon_streaming.sinks import foreach_batch, paimon_sink
from conftest import killed_before_compaction, pypaimon_read, rows_by


def write_input_files(directory, batches: list[pa.Table]) -> None:
    """One parquet file per batch; increasing mtimes fix the order the file source reads them in."""
    os.makedirs(directory, exist_ok=True)
    for i, b in enumerate(batches):
        path = f"{directory}/part-{i:05d}.parquet"
        pq.write_table(b, path)
        os.utime(path, (1_700_000_000 + i, 1_700_000_000 + i))


def run_stream(spark, source_dir, schema_ddl, sink, checkpoint):
    """Stream the parquet files of a directory, one file per micro-batch, into `sink`."""
    df = (spark.readStream.schema(schema_ddl).option("maxFilesPerTrigger", 1).parquet(str(source_dir)))
    q = (df.writeStream.foreachBatch(sink).option("checkpointLocation", str(checkpoint))
         .trigger(availableNow=True).start())
    q.awaitTermination(300)
    assert q.exception() is None, q.exception()


def upsert_batches(n_batches: int, rows: int, partitions: bool = True) -> list[pa.Table]:
    out = []
    for b in range(n_batches):
        ids = list(range(b * rows // 2, b * rows // 2 + rows))
        out.append(pa.table({"id": pa.array(ids, pa.int64()), "v": [f"b{b}-{i}" for i in ids],
                             "dt": [f"d{i % 3}" for i in ids] if partitions else ["x"] * rows}))
    return out


def model_of(batches: list[pa.Table], key=("id",)) -> dict:
    model = {}
    for b in batches:
        for r in b.to_pylist():
            model[tuple(r[k] for k in key)] = r
    return model


@pytest.mark.parametrize("options", [
    {"primary-key": "id,dt", "partition": "dt", "bucket": "3"},
    {"primary-key": "id,dt", "partition": "dt"},              # dynamic bucket mode
    {"primary-key": "id", "bucket": "2"},
], ids=["pk-fixed", "pk-dynamic", "pk-unpartitioned"])
def test_foreach_batch_primary_key_tables(spark, tmp_path, options, caplog):
    batches = upsert_batches(4, 60, partitions="partition" in options)
    write_input_files(tmp_path / "in", batches)
    table_path = str(tmp_path / "wh" / "db.db" / "t")
    caplog.set_level(logging.INFO, logger="paimon_streaming.sink")
    run_stream(spark, tmp_path / "in", "id long, v string, dt string", paimon_sink(table_path, options=options),
               tmp_path / "ckpt")
    key = ("id", "dt") if "partition" in options else ("id",)
    expected = sorted(model_of(batches, key).values(), key=lambda r: (r["id"], r["dt"]))
    table = ps.Table.open(table_path)
    assert rows_by(table.to_arrow(), "id", "dt") == expected
    assert rows_by(pypaimon_read(str(tmp_path / "wh"), "db.t"), "id", "dt") == expected
    snaps = table.snapshots()
    assert [s.commit_identifier for s in snaps] == [0, 1, 2, 3]
    assert len({s.commit_user for s in snaps}) == 1
    lines = [r.getMessage() for r in caplog.records if "paimon_sink" in r.getMessage()]
    assert len(lines) == 4 and "rows_in=60" in lines[0] and "files=" in lines[0] and "seconds=" in lines[0]


@pytest.mark.parametrize("shuffle", [None, True])
def test_foreach_batch_append_tables(spark, tmp_path, shuffle):
    """Six batches: the fifth file of each bucket merges the five small ones (in the write, or
    after the commit when tasks share a bucket: shuffle=True without buckets)."""
    batches = upsert_batches(6, 40)
    write_input_files(tmp_path / "in", batches)
    for name, options in (("unaware", {"partition": "dt"}), ("bucketed", {"bucket": "2", "bucket-key": "id"})):
        path = str(tmp_path / "wh" / "db.db" / name)
        run_stream(spark, tmp_path / "in", "id long, v string, dt string",
                   paimon_sink(path, options=options, shuffle=shuffle), tmp_path / f"ckpt-{name}")
        expected = rows_by(pa.concat_tables(batches), "id", "v")
        t = ps.Table.open(path)
        assert rows_by(t.to_arrow(), "id", "v") == expected
        assert rows_by(pypaimon_read(str(tmp_path / "wh"), f"db.{name}"), "id", "v") == expected
        assert "COMPACT" in {s.commit_kind for s in t.snapshots()}
        live = TableScan(t.file_io, t.path, t.schema).live_entries(t.latest_snapshot())
        per_bucket: dict = {}
        for e in live:
            per_bucket[(e.partition, e.bucket)] = per_bucket.get((e.partition, e.bucket), 0) + 1
        assert max(per_bucket.values()) <= 2, per_bucket


def test_datasource_writes_merge_small_files_of_append_tables(spark, tmp_path):
    path = str(tmp_path / "wh" / "db.db" / "small")
    for i in range(5):
        spark.createDataFrame([(i, f"v{i}")], "id long, v string").write.format("paimon").mode("append").save(path)
    t = ps.Table.open(path)
    (only,) = TableScan(t.file_io, t.path, t.schema).live_entries(t.latest_snapshot())
    assert only.file.row_count == 5 and t.latest_snapshot().commit_kind == "COMPACT"
    assert sorted(t.to_arrow().column("id").to_pylist()) == list(range(5))


def test_timestamps_and_dates_through_the_sink(spark, tmp_path):
    """Spark TimestampType is an instant: the created table column is TIMESTAMP_LTZ(6)."""
    import datetime as dt
    path = str(tmp_path / "wh" / "db.db" / "ts")
    df = spark.createDataFrame([(1, dt.datetime(2024, 1, 2, 3, 4, 5, 678901, tzinfo=dt.timezone.utc),
                                 dt.date(2024, 2, 29))], "id long, ts timestamp, d date")
    paimon_sink(path, commit_user="ts", options={"primary-key": "id", "bucket": "1"})(df, 0)
    t = ps.Table.open(path)
    assert str(t.schema.field("ts").type) == "TIMESTAMP(6) WITH LOCAL TIME ZONE"
    assert t.to_arrow().to_pylist() == [{"id": 1, "ts": dt.datetime(2024, 1, 2, 3, 4, 5, 678901, tzinfo=dt.timezone.utc),
                                         "d": dt.date(2024, 2, 29)}]


@pytest.mark.parametrize("shuffle", [False, True])
def test_instants_and_wall_times_convert_in_the_session_time_zone(spark, catalog, shuffle):
    """A Spark TIMESTAMP (an instant) into a Paimon TIMESTAMP column (a wall time) keeps the wall
    time it shows in the session's zone, and a TIMESTAMP_NTZ into a TIMESTAMP_LTZ column is read
    in that zone, as Spark's own casts (and Java's Spark connector) do; the bucket of a
    timestamp key is that of the stored value. `df.write.format("paimon")` keeps the wall time
    Spark sends in the session's zone too."""
    import datetime as dt
    schema = pa.schema([pa.field("at", pa.timestamp("us"), False), ("id", pa.int64()),
                        ("inst", pa.timestamp("us", tz="UTC"))])
    t = catalog.create_table(f"db.zones_{shuffle}", schema, primary_keys=["at"], options={"bucket": "4"})
    sql = ("select timestamp'2024-01-01 10:00:00' + make_interval(0, 0, 0, 0, id) as at, id, "
           "timestamp_ntz'2024-07-01 08:30:00' as inst from range({0}, {1})")
    old = spark.conf.get("spark.sql.session.timeZone")
    spark.conf.set("spark.sql.session.timeZone", "America/New_York")
    try:
        paimon_sink(t.path, commit_user="zones", shuffle=shuffle)(spark.sql(sql.format(0, 8)).repartition(3), 0)
        spark.sql(sql.format(8, 10)).write.format("paimon").mode("append").save(t.path)
    finally:
        spark.conf.set("spark.sql.session.timeZone", old)
    rows = sorted(ps.Table.open(t.path).to_arrow().to_pylist(), key=lambda r: r["id"])
    assert [r["at"] for r in rows] == [dt.datetime(2024, 1, 1, 10 + i) for i in range(10)]
    # EDT: -4h; format("paimon") reads the session's zone off the TimestampType column `at`
    assert {r["inst"] for r in rows} == {dt.datetime(2024, 7, 1, 12, 30, tzinfo=dt.timezone.utc)}
    # each key went to the bucket its stored value hashes to: an upsert of it replaces it
    again = ps.Table.open(t.path)
    again.write_arrow(pa.table({"at": pa.array([dt.datetime(2024, 1, 1, 13)], pa.timestamp("us")), "id": [100],
                                "inst": pa.array([None], pa.timestamp("us", tz="UTC"))}))
    after = {r["at"]: r["id"] for r in ps.Table.open(t.path).to_arrow().to_pylist()}
    assert len(after) == 10 and after[dt.datetime(2024, 1, 1, 13)] == 100


def test_the_data_source_refuses_wall_times_into_instants_without_the_session_zone(spark, catalog):
    """`df.write.format("paimon")` is not given the session's time zone: with no TimestampType
    column to tell it, a TimestampNTZ into a TIMESTAMP_LTZ column needs the `timeZone` option
    (read as UTC it would be silently 4 hours off in New York)."""
    import datetime as dt
    t = catalog.create_table("db.ntz", pa.schema([("id", pa.int64()), ("inst", pa.timestamp("us", tz="UTC"))]))
    df = spark.sql("select id, timestamp_ntz'2024-07-01 08:30:00' as inst from range(2)")
    old = spark.conf.get("spark.sql.session.timeZone")
    spark.conf.set("spark.sql.session.timeZone", "America/New_York")
    try:
        with pytest.raises(Exception, match="column inst of table .*option\\('timeZone'"):
            df.write.format("paimon").mode("append").save(t.path)
        df.write.format("paimon").option("timeZone", "America/New_York").mode("append").save(t.path)
    finally:
        spark.conf.set("spark.sql.session.timeZone", old)
    assert {r["inst"] for r in ps.Table.open(t.path).to_arrow().to_pylist()} == {
        dt.datetime(2024, 7, 1, 12, 30, tzinfo=dt.timezone.utc)}
    assert ps.Table.open(t.path).latest_snapshot().id == 1  # the refused write committed nothing


def test_session_zones_in_java_spellings_convert_as_sparks_casts(spark, catalog):
    """Spark takes its session time zone as Java's ZoneId reads it ('GMT+08:00', 'UTC-3', 'Z',
    ZoneId.SHORT_IDS such as 'CST'); an instant into a TIMESTAMP column and a wall time into a
    TIMESTAMP_LTZ column, through foreachBatch(paimon_sink) and format("paimon") with the
    `timeZone` option, store what Spark's own casts give in that zone (pyarrow, given the id
    as it is, could not find the zone)."""
    import datetime as dt
    schema = pa.schema([pa.field("id", pa.int64(), False), ("wall", pa.timestamp("us")),
                        ("inst", pa.timestamp("us", tz="UTC"))])
    old = spark.conf.get("spark.sql.session.timeZone")
    try:
        for i, zone in enumerate(["GMT+08:00", "UTC-3", "Z", "CST"]):
            spark.conf.set("spark.sql.session.timeZone", zone)
            df = spark.sql("SELECT 1L AS id, TIMESTAMP'2024-07-01 12:00:00 UTC' AS wall, "
                           "TIMESTAMP_NTZ'2024-07-01 12:00:00' AS inst")
            want = df.selectExpr("cast(cast(wall AS timestamp_ntz) AS string)",
                                 "cast(unix_micros(cast(inst AS timestamp)) AS string)").first()
            for j, write in enumerate([lambda p: paimon_sink(p, commit_user="zone")(df, 0),
                                       lambda p: df.write.format("paimon").option("timeZone", zone)
                                       .mode("append").save(p)]):
                t = catalog.create_table(f"db.java_zone_{i}_{j}", schema, primary_keys=["id"])
                write(t.path)
                row = ps.Table.open(t.path).to_arrow().to_pylist()[0]
                got_inst = row["inst"] - dt.datetime(1970, 1, 1, tzinfo=dt.timezone.utc)
                assert (str(row["wall"]), str(got_inst // dt.timedelta(microseconds=1))) == tuple(want), zone
    finally:
        spark.conf.set("spark.sql.session.timeZone", old)


def test_session_zones_convert_with_the_jvms_zone_data(spark, catalog):
    """Spark's casts use the JVM's zone data, IANA's default build; pyarrow and zoneinfo read the
    system's, which on Debian has the 'backzone' histories before 1970: an Amsterdam instant of
    1900 was stored as a wall time 19:32 minutes off Spark's cast, Oslo's of 1965 and Reykjavik's
    of 1930 an hour off. Instants into a TIMESTAMP column and wall times into a TIMESTAMP_LTZ
    column store what Spark's own casts give, in 2045 and in a gap and an overlap too."""
    import datetime as dt
    texts = ["1900-01-01 12:00:00", "1930-07-01 12:00:00", "1937-06-30 12:00:00", "1965-07-01 12:00:00",
             "2045-07-01 12:00:00", "2024-03-31 02:30:00", "2024-10-27 02:30:00", "2024-10-27 00:30:00"]
    values = ", ".join(f"({i}L, TIMESTAMP'{s} UTC', TIMESTAMP_NTZ'{s}')" for i, s in enumerate(texts))
    schema = pa.schema([pa.field("id", pa.int64(), False), ("wall", pa.timestamp("us")),
                        ("inst", pa.timestamp("us", tz="UTC"))])
    epoch = dt.datetime(1970, 1, 1, tzinfo=dt.timezone.utc)
    old = spark.conf.get("spark.sql.session.timeZone")
    try:
        for i, zone in enumerate(["Europe/Amsterdam", "Europe/Oslo", "Atlantic/Reykjavik"]):
            spark.conf.set("spark.sql.session.timeZone", zone)
            df = spark.sql(f"SELECT col1 AS id, col2 AS wall, col3 AS inst FROM VALUES {values}")
            want = {r.id: (r.w, r.u) for r in df.selectExpr("id", "cast(cast(wall AS timestamp_ntz) AS string) w",
                                                              "unix_micros(cast(inst AS timestamp)) u").collect()}
            t = catalog.create_table(f"db.jvm_zone_{i}", schema, primary_keys=["id"])
            paimon_sink(t.path, commit_user="zone")(df, 0)
            got = {r["id"]: (str(r["wall"]), (r["inst"] - epoch) // dt.timedelta(microseconds=1))
                   for r in ps.Table.open(t.path).to_arrow().to_pylist()}
            assert got == want, zone
    finally:
        spark.conf.set("spark.sql.session.timeZone", old)


def test_replayed_batch_is_skipped(spark, tmp_path, catalog):
    t = catalog.create_table("db.r", pa.schema([("id", pa.int64()), ("v", pa.string())]))
    sink = paimon_sink(t.path, commit_user="job-1")
    df = spark.createDataFrame([(1, "a"), (2, "b")], "id long, v string")
    sink(df, 0)
    sink(df, 0)  # replay after a crash between our commit and Spark's checkpoint
    sink(spark.createDataFrame([(3, "c")], "id long, v string"), 1)
    assert sorted(r["id"] for r in t.to_arrow().to_pylist()) == [1, 2, 3]
    assert [s.commit_identifier for s in t.snapshots()] == [0, 1]


@pytest.mark.parametrize("shuffle", [False, True])
def test_a_zombie_attempt_of_a_committed_batch_commits_nothing(spark, catalog, shuffle):
    """Two attempts of micro-batch 1 under one commit user (a zombie driver and the restarted
    query): the zombie wrote its files before the other committed, and its commit finds the
    batch committed since its exactly-once check: it deletes its files and commits nothing
    (before, both applied: every amount summed twice)."""
    t = catalog.create_table("db.zombie", pa.schema([pa.field("id", pa.int64(), False), ("v", pa.int64())]),
                             primary_keys=["id"], options={"bucket": "2", "merge-engine": "aggregation",
                                                           "fields.v.aggregate-function": "sum"})
    sink = paimon_sink(t.path, commit_user="job-z", shuffle=shuffle)
    df = spark.createDataFrame([(1, 10), (2, 20)], "id long, v long")
    sink(df, 0)
    zombie = sink.prepare(df, 1)
    sink(df, 1)
    zombie.commit()
    assert sorted((r["id"], r["v"]) for r in t.to_arrow().to_pylist()) == [(1, 20), (2, 40)]
    assert [s.commit_identifier for s in t.snapshots() if s.commit_kind != "COMPACT"] == [0, 1]
    sink(spark.createDataFrame([(1, 1)], "id long, v long"), 2)
    assert sorted((r["id"], r["v"]) for r in t.to_arrow().to_pylist()) == [(1, 21), (2, 40)]


def test_bad_input_fails_batch_and_commits_nothing(spark, tmp_path, catalog):
    t = catalog.create_table("db.bad", pa.schema([("id", pa.int64()), ("v", pa.string())]),
                             primary_keys=["id"], options={"bucket": "2"})
    sink = paimon_sink(t.path, commit_user="u")
    with pytest.raises(Exception, match="'extra'"):
        sink(spark.createDataFrame([(1, "a", 1)], "id long, v string, extra int"), 0)
    with pytest.raises(Exception, match="'v'"):
        sink(spark.createDataFrame([(1, 1.5)], "id long, v double"), 0)
    with pytest.raises(Exception, match="'id'"):
        sink(spark.createDataFrame([(None, "a")], "id long, v string"), 0)
    assert t.latest_snapshot() is None


def test_sink_outside_streaming_needs_commit_user(spark, tmp_path):
    sink = paimon_sink(str(tmp_path / "t"), options={"primary-key": "id", "bucket": "1"})
    with pytest.raises(PaimonError, match="commit_user"):
        sink(spark.createDataFrame([(1,)], "id long"), 0)


def test_datasource_batch_writes(spark, tmp_path):
    path = str(tmp_path / "wh" / "db.db" / "ds")
    df1 = spark.createDataFrame([(1, "a", "x"), (2, "b", "y"), (3, "c", "y")], "id long, v string, dt string")
    (df1.write.format("paimon").option("primary-key", "id,dt").option("partition", "dt").option("bucket", "2")
        .mode("append").save(path))
    spark.createDataFrame([(2, "b2", "y")], "id long, v string, dt string").write.format("paimon") \
        .mode("append").save(path)
    t = ps.Table.open(path)
    assert rows_by(t.to_arrow(), "id") == [{"id": 1, "v": "a", "dt": "x"}, {"id": 2, "v": "b2", "dt": "y"},
                                           {"id": 3, "v": "c", "dt": "y"}]
    # dynamic partition overwrite replaces partition y only
    spark.createDataFrame([(9, "z", "y")], "id long, v string, dt string").write.format("paimon") \
        .mode("overwrite").option("partitionOverwriteMode", "dynamic").save(path)
    assert rows_by(t.to_arrow(), "id") == [{"id": 1, "v": "a", "dt": "x"}, {"id": 9, "v": "z", "dt": "y"}]
    # static overwrite replaces everything
    spark.createDataFrame([(5, "e", "x")], "id long, v string, dt string").write.format("paimon") \
        .option("table", "db.ds").option("warehouse", str(tmp_path / "wh")).mode("overwrite").save()
    assert rows_by(t.to_arrow(), "id") == [{"id": 5, "v": "e", "dt": "x"}]
    assert rows_by(pypaimon_read(str(tmp_path / "wh"), "db.ds"), "id") == [{"id": 5, "v": "e", "dt": "x"}]


def test_an_insert_into_a_time_travel_view_is_refused(spark, tmp_path):
    """`INSERT INTO v` where v is `USING paimon OPTIONS (path ..., 'snapshot-id' '1')`: the write
    went to the latest snapshot, with only a warning that the option differs from the table's.
    It changed the current table, not what the view shows; now it is refused, writing nothing."""
    path = str(tmp_path / "wh" / "db.db" / "tt")
    spark.createDataFrame([(1, "a")], "id long, v string").write.format("paimon").option("primary-key", "id") \
        .option("bucket", "1").mode("append").save(path)
    spark.createDataFrame([(2, "b")], "id long, v string").write.format("paimon").mode("append").save(path)
    for key, value in (("snapshot-id", "1"), ("scan.tag-name", "t1"), ("timestamp-millis", "1")):
        spark.sql(f"CREATE OR REPLACE TEMPORARY VIEW tt USING paimon OPTIONS (path '{path}', '{key}' '{value}')")
        with pytest.raises(Exception, match=f"write option '{key}' picks a snapshot to read"):
            spark.sql("INSERT INTO tt VALUES (3, 'c')")
    assert rows_by(ps.Table.open(path).to_arrow(), "id") == [{"id": 1, "v": "a"}, {"id": 2, "v": "b"}]
    assert [s.id for s in ps.Table.open(path).snapshots()] == [1, 2]


def test_datasource_overwrite_follows_the_sessions_partition_overwrite_mode(spark, tmp_path):
    """spark.sql.sources.partitionOverwriteMode=dynamic as register() sees it makes overwrites
    dynamic, as in Paimon's, Delta's and Iceberg's connectors; a misspelt option or value is an
    error, not a replacement of the whole table."""
    path = str(tmp_path / "t")
    rows = "id long, v string, dt string"
    spark.createDataFrame([(1, "a", "x"), (2, "b", "y")], rows).write.format("paimon") \
        .option("primary-key", "id,dt").option("partition", "dt").mode("append").save(path)
    t = ps.Table.open(path)
    for key, value, match in [("partitionOverwriteMod", "dynamic", "did you mean 'partitionOverwriteMode'"),
                              ("partitionOverwriteMode", "dynamc", "must be 'static'.*or 'dynamic'")]:
        with pytest.raises(Exception, match=match) as info:
            spark.createDataFrame([(9, "z", "y")], rows).write.format("paimon").mode("overwrite") \
                .option(key, value).save(path)
        assert "InvalidOptionError" in str(info.value) or isinstance(info.value, InvalidOptionError)
    assert len(t.to_arrow()) == 2  # nothing written
    spark.conf.set("spark.sql.sources.partitionOverwriteMode", "dynamic")
    try:
        ps.register(spark)
        spark.createDataFrame([(9, "z", "y")], rows).write.format("paimon").mode("overwrite").save(path)
        assert rows_by(t.to_arrow(), "id") == [{"id": 1, "v": "a", "dt": "x"}, {"id": 9, "v": "z", "dt": "y"}]
        spark.createDataFrame([(7, "s", "y")], rows).write.format("paimon").mode("overwrite") \
            .option("partitionOverwriteMode", "static").save(path)  # the write's own option wins
        assert rows_by(t.to_arrow(), "id") == [{"id": 7, "v": "s", "dt": "y"}]
    finally:
        spark.conf.unset("spark.sql.sources.partitionOverwriteMode")
        ps.register(spark)
    spark.createDataFrame([(8, "t", "x")], rows).write.format("paimon").mode("overwrite").save(path)
    assert rows_by(t.to_arrow(), "id") == [{"id": 8, "v": "t", "dt": "x"}]  # static again


def test_datasource_writes_to_dynamic_buckets_never_store_a_key_twice(spark, tmp_path):
    """A dynamic-bucket table ('bucket' = -1): tasks of one partition would each place new keys
    on their own, so such a write is refused before anything is committed; one task per
    partition writes, and an overwrite places its keys afresh so later upserts find them."""
    path = str(tmp_path / "t")
    spark.range(0, 300).selectExpr("id", "'a' as v").coalesce(1).write.format("paimon") \
        .option("primary-key", "id").option("bucket", "-1").option("dynamic-bucket.target-row-num", "50") \
        .mode("append").save(path)
    t = ps.Table.open(path)
    with pytest.raises(Exception, match="several Spark tasks wrote rows of one partition"):
        spark.range(0, 300).selectExpr("id", "'b' as v").repartition(3).write.format("paimon").mode("append").save(path)
    assert t.to_arrow().num_rows == 300 and len(t.snapshots()) == 1
    spark.range(0, 100).selectExpr("id", "'c' as v").coalesce(1).write.format("paimon").mode("overwrite").save(path)
    spark.range(50, 150).selectExpr("id", "'d' as v").coalesce(1).write.format("paimon").mode("append").save(path)
    rows = t.to_arrow().to_pylist()
    assert sorted((r["id"], r["v"]) for r in rows) == [(i, "c") for i in range(50)] + [(i, "d") for i in range(50, 150)]


def test_datasource_streaming_write(spark, tmp_path):
    batches = upsert_batches(3, 30)
    write_input_files(tmp_path / "in", batches)
    path = str(tmp_path / "wh" / "db.db" / "st")
    df = spark.readStream.schema("id long, v string, dt string").option("maxFilesPerTrigger", 1) \
        .parquet(str(tmp_path / "in"))
    q = (df.writeStream.format("paimon").option("checkpointLocation", str(tmp_path / "ckpt"))
         .option("commitUser", "stream-1").option("primary-key", "id,dt").option("partition", "dt")
         .option("bucket", "2").trigger(availableNow=True).start(path))
    q.awaitTermination(300)
    assert q.exception() is None, q.exception()
    expected = sorted(model_of(batches, ("id", "dt")).values(), key=lambda r: (r["id"], r["dt"]))
    t = ps.Table.open(path)
    assert rows_by(t.to_arrow(), "id", "dt") == expected
    assert {s.commit_user for s in t.snapshots()} == {"stream-1"}
    assert [s.commit_identifier for s in t.snapshots()] == [0, 1, 2]


def test_streams_and_writes_to_a_branch(spark, tmp_path, catalog, warehouse):
    """A stream stages its batches on a branch (foreachBatch with Java's `$branch_` name, and
    writeStream / write with option `branch`); main stays as it was until the branch is
    fast-forwarded. A missing branch is an error, not a new table."""
    t = catalog.create_table("db.staged", schema=pa.schema([pa.field("id", pa.int64(), nullable=False),
                                                             pa.field("v", pa.string())]),
                             primary_keys=["id"], options={"bucket": "2", "deletion-vectors.enabled": "true"})
    t.write_arrow(pa.table({"id": [1, 2], "v": ["main", "main"]}))
    t.create_branch("dev", tag=None)
    sink = paimon_sink("db.staged$branch_dev", warehouse=warehouse, commit_user="staging")
    sink(spark.createDataFrame([(2, "dev"), (3, "dev")], "id long, v string"), 0)
    sink(spark.createDataFrame([(2, "dev"), (3, "dev")], "id long, v string"), 0)  # a replay: skipped
    spark.createDataFrame([(4, "ds")], "id long, v string").write.format("paimon").option("branch", "dev") \
        .mode("append").save(t.path)
    dev = ps.Table.open(t.path, branch="dev")
    assert rows_by(dev.to_arrow(), "id") == [{"id": 2, "v": "dev"}, {"id": 3, "v": "dev"}, {"id": 4, "v": "ds"}]
    assert rows_by(t.to_arrow(), "id") == [{"id": 1, "v": "main"}, {"id": 2, "v": "main"}]
    assert [s.commit_user for s in dev.snapshots()][:2] == ["staging", "staging"]
    with pytest.raises(Exception, match="no branch 'qa'"):
        paimon_sink(t.path + "$branch_qa", commit_user="x")(spark.createDataFrame([(1, "a")], "id long, v string"), 0)
    t.fast_forward("dev", force=True)   # the branch was made empty: main's own rows go (refused without force)
    assert rows_by(ps.Table.open(t.path).to_arrow(), "id") == rows_by(dev.to_arrow(), "id")


def test_deletion_vector_table_with_cdc_input(spark, tmp_path, catalog, warehouse):
    """foreachBatch into a DV table with a row-kind column: each batch is visible to DV readers
    (ours, pypaimon) right after the call, deletes included."""
    t = catalog.create_table("db.cdc", pa.schema([("id", pa.int64()), ("v", pa.string())]), primary_keys=["id"],
                             options={"bucket": "2", "deletion-vectors.enabled": "true"})
    sink = paimon_sink(t.path, commit_user="cdc-1", row_kind_column="op")
    sink(spark.createDataFrame([(i, f"a{i}", "+I") for i in range(20)], "id long, v string, op string"), 0)
    sink(spark.createDataFrame([(1, None, "-D"), (2, "b2", "+U"), (2, "b3", "+U"), (30, "c", "+I")],
                               "id long, v string, op string"), 1)
    expected = {i: f"a{i}" for i in range(20) if i != 1} | {2: "b3", 30: "c"}
    assert {r["id"]: r["v"] for r in t.to_arrow().to_pylist()} == expected
    assert {r["id"]: r["v"] for r in pypaimon_read(warehouse, "db.cdc").to_pylist()} == expected
    assert [s.commit_kind for s in t.snapshots()] == ["APPEND", "COMPACT", "APPEND", "COMPACT"]


def test_interrupted_dv_batch_is_completed_on_restart(spark, tmp_path, catalog, warehouse):
    """A crash after a batch's APPEND but before its COMPACT: the next call finishes it."""
    t = catalog.create_table("db.rep", pa.schema([("id", pa.int64()), ("v", pa.string())]), primary_keys=["id"],
                             options={"bucket": "2", "deletion-vectors.enabled": "true"})
    sink = paimon_sink(t.path, commit_user="rep-1")
    sink(spark.createDataFrame([(1, "a"), (2, "b")], "id long, v string"), 0)
    with killed_before_compaction(SystemExit("driver killed between APPEND and COMPACT")), pytest.raises(SystemExit):
        sink(spark.createDataFrame([(2, "b2"), (3, "c")], "id long, v string"), 1)
    assert {r["id"]: r["v"] for r in t.to_arrow().to_pylist()} == {1: "a", 2: "b"}  # batch 1 not visible yet
    sink(spark.createDataFrame([(2, "b2"), (3, "c")], "id long, v string"), 1)  # Spark replays batch 1
    expected = {1: "a", 2: "b2", 3: "c"}
    assert {r["id"]: r["v"] for r in t.to_arrow().to_pylist()} == expected
    assert {r["id"]: r["v"] for r in pypaimon_read(warehouse, "db.rep").to_pylist()} == expected
    assert [(s.commit_kind, s.commit_identifier) for s in t.snapshots()][-2:] == [("APPEND", 1), ("COMPACT", 1)]


def test_datasource_write_to_dv_table(spark, tmp_path, catalog, warehouse):
    t = catalog.create_table("db.dsdv", pa.schema([("id", pa.int64()), ("v", pa.string())]), primary_keys=["id"],
                             options={"bucket": "2", "deletion-vectors.enabled": "true"})
    df = spark.createDataFrame([(i, f"a{i}") for i in range(40)], "id long, v string").repartition(3)
    df.write.format("paimon").mode("append").save(t.path)
    spark.createDataFrame([(5, "x", "+U"), (6, None, "-D")], "id long, v string, op string").repartition(2) \
        .write.format("paimon").option("rowKindColumn", "op").mode("append").save(t.path)
    expected = {i: f"a{i}" for i in range(40) if i != 6} | {5: "x"}
    assert {r["id"]: r["v"] for r in t.to_arrow().to_pylist()} == expected
    assert {r["id"]: r["v"] for r in pypaimon_read(warehouse, "db.dsdv").to_pylist()} == expected


@pytest.mark.parametrize("engine,options,batches,expected", [
    ("partial-update", {}, [[(1, "a", None), (2, "b", 5)], [(1, None, 7), (2, "b2", None)]],
     {1: ("a", 7), 2: ("b2", 5)}),
    ("aggregation", {"fields.n.aggregate-function": "sum", "fields.v.aggregate-function": "max"},
     [[(1, "a", 1), (1, "c", 2)], [(1, "b", 10), (2, "z", 3)]], {1: ("c", 13), 2: ("z", 3)}),
    ("first-row", {}, [[(1, "a", 1)], [(1, "b", 2), (2, "c", 3)]], {1: ("a", 1), 2: ("c", 3)}),
    ("deduplicate", {"sequence.field": "n"}, [[(1, "a", 5)], [(1, "old", 3), (2, "c", 1)]],
     {1: ("a", 5), 2: ("c", 1)}),
])
@pytest.mark.parametrize("dv", [False, True], ids=["mor", "dv"])
def test_merge_engines_through_foreach_batch(spark, catalog, warehouse, engine, options, batches, expected, dv):
    """Each merge engine end to end through foreachBatch; read by us and by pypaimon."""
    table_options = {"bucket": "2", "merge-engine": engine, **options}
    if dv:
        table_options["deletion-vectors.enabled"] = "true"
    name = f"db.{engine.replace('-', '_')}_{'dv' if dv else 'mor'}"
    schema = pa.schema([("k", pa.int64()), ("v", pa.string()), ("n", pa.int64())])
    if dv and engine == "first-row":  # Paimon refuses to open such a table: refused at create
        with pytest.raises(InvalidOptionError, match="'first-row' cannot go with 'deletion-vectors.enabled'"):
            catalog.create_table(name, schema, primary_keys=["k"], options=table_options)
        return
    t = catalog.create_table(name, schema, primary_keys=["k"], options=table_options)
    sink = paimon_sink(t.path, commit_user="engines")
    for batch_id, rows in enumerate(batches):
        sink(spark.createDataFrame(rows, "k long, v string, n long").coalesce(1), batch_id)
    assert {r["k"]: (r["v"], r["n"]) for r in t.to_arrow().to_pylist()} == expected
    assert {r["k"]: (r["v"], r["n"]) for r in pypaimon_read(warehouse, name).to_pylist()} == expected


@pytest.mark.parametrize("options", [
    {"partition": "dt", "bucket": "2"},
    {"partition": "dt"},                                       # dynamic bucket mode
    {"bucket": "3", "deletion-vectors.enabled": "true"},
], ids=["fixed-partitioned", "dynamic-partitioned", "dv"])
@pytest.mark.parametrize("shuffle", [True, False, None], ids=["shuffled", "one-task", "driver"])
def test_multi_partition_batch_keeps_key_order(spark, catalog, warehouse, options, shuffle, monkeypatch):
    """A micro-batch in several Spark partitions (shuffled by bucket to be written, coalesced
    into one task, or in local mode collected into the driver) with keys repeated within and
    across partitions, updates and deletes: each key ends as its last row in input order
    (partition by partition, row by row) says, for us and for pypaimon."""
    pk = ["id", "dt"] if "partition" in options else ["id"]
    t = catalog.create_table("db.mp", pa.schema([("id", pa.int64()), ("v", pa.string()), ("dt", pa.string())]),
                             primary_keys=pk, partition_keys=["dt"] if "partition" in options else None,
                             options=options)
    sink = paimon_sink(t.path, commit_user="mp", row_kind_column="op", shuffle=shuffle)
    sites = []
    monkeypatch.setattr(foreach_batch, "write_site",
                        lambda df, shuffle, site=foreach_batch.write_site: sites.append(site(df, shuffle)) or sites[-1])
    kinds = ["+I", "+U", "-D", "+I", "+U", "-U", "+U"]
    batches = [[(i % 40, f"b{b}-{j}", f"d{i % 2}", kinds[(i * 3 + j + b) % len(kinds)]) for j in range(3)
                for i in range(120)] for b in range(2)]   # each key 3x per slice, in every slice
    model: dict = {}
    for batch_id, rows in enumerate(batches):
        df = spark.sparkContext.parallelize(rows, 3).toDF("id long, v string, dt string, op string")
        assert df.rdd.getNumPartitions() == 3
        sink(df, batch_id)
        for i, v, dt, op in rows:
            key = (i, dt) if "partition" in options else i
            if op in ("-U", "-D"):  # deduplicate: the last row wins, a trailing retraction deletes
                model.pop(key, None)
            else:
                model[key] = {"id": i, "v": v, "dt": dt}
    assert sites == [{True: "shuffle", False: "task", None: "driver"}[shuffle]] * 2  # local mode: the driver
    expected = sorted(model.values(), key=lambda r: (r["id"], r["dt"]))
    assert rows_by(t.to_arrow(), "id", "dt") == expected
    assert rows_by(pypaimon_read(warehouse, "db.mp"), "id", "dt") == expected


@pytest.mark.parametrize("shuffle", [True, False, None], ids=["shuffled", "one-task", "driver"])
def test_transform_runs_where_the_rows_are_written(spark, catalog, shuffle):
    """A transform (ingestion's decoding) turns the DataFrame's rows into the table's rows
    wherever the batch is written; rows it drops are not written, its schema is the input's."""
    t = catalog.create_table("db.tr", pa.schema([pa.field("id", pa.int64(), False), ("v", pa.string())]),
                             primary_keys=["id"], options={"bucket": "2", "deletion-vectors.enabled": "true"})
    out_schema = pa.schema([("id", pa.int64()), ("v", pa.string())])

    def parse(batches):  # "id:v" text -> rows; lines without a colon are dropped
        import pyarrow.compute as pc
        for b in batches:
            lines = b.column("line")
            keep = pc.match_substring(lines, ":")
            parts = pc.split_pattern(pc.filter(lines, keep), ":")
            yield pa.RecordBatch.from_arrays([pc.cast(pc.list_element(parts, 0), pa.int64()),
                                              pc.list_element(parts, 1)], schema=out_schema)

    df = spark.sparkContext.parallelize([(f"{i % 7}:x{i}",) for i in range(30)] + [("junk",)], 3).toDF("line string")
    paimon_sink(t.path, commit_user="tr", shuffle=shuffle)(df, 0, transform=foreach_batch.ArrowTransform(parse, out_schema))
    assert rows_by(t.to_arrow(), "id") == [{"id": i, "v": f"x{max(j for j in range(30) if j % 7 == i)}"}
                                           for i in range(7)]


def test_a_batch_beyond_max_result_size_is_written_by_one_task(tmp_path):
    """In local mode the driver collects the batch; one larger than spark.driver.maxResultSize
    cannot be collected, so the sink says so and one task writes it, whole and once."""
    import subprocess
    import sys
    from spark_support import spark_env
    rows = 200_000  # about 15 MiB as Arrow, against a 1 MiB limit
    job = os.path.join(os.path.dirname(__file__), "spark_big_batch_job.py")
    proc = subprocess.run([sys.executable, job, str(tmp_path / "t"), str(rows)], capture_output=True, text=True,
                          env={**os.environ, **spark_env()}, timeout=600)
    assert proc.returncode == 0, proc.stderr[-3000:]
    assert "larger than spark.driver.maxResultSize, so one task writes it" in proc.stderr
    t = ps.Table.open(str(tmp_path / "t"))
    got = t.to_arrow()
    got = got.sort_by("id")
    assert got["id"].to_pylist() == list(range(rows))
    assert got["v"][rows - 1].as_py() == f"value-{'x' * 40}{rows - 1}"
    assert len(t.snapshots()) == 2  # APPEND + COMPACT of the one batch


def top_level_only(t) -> bool:
    """Every live file at the top level (num-sorted-run.compaction-trigger 5: level 5)."""
    latest = t.latest_snapshot()
    return {e.file.level for e in TableScan(t.file_io, t.path, t.schema).live_entries(latest)} == {5}


FC_SCHEMA = pa.schema([pa.field("id", pa.int64(), False), ("v", pa.string())])
FC_BATCHES = [[(1, "a")], [(2, "b")], [(2, "c")], [(3, "d")]]


@pytest.mark.parametrize("shuffle", [True, False, None], ids=["shuffled", "one-task", "driver"])
def test_scheduled_full_compaction_through_foreach_batch(spark, catalog, warehouse, shuffle):
    """With `full-compaction.delta-commits` = 2, batches 0 and 2 (Paimon's full-compaction
    identifiers) end in a COMPACT snapshot that leaves one sorted run at the top, 1 and 3 do not."""
    t = catalog.create_table("db.fcs", FC_SCHEMA, primary_keys=["id"],
                             options={"bucket": "1", "full-compaction.delta-commits": "2"})
    sink = paimon_sink(t.path, commit_user="fc", shuffle=shuffle)
    for batch_id, rows in enumerate(FC_BATCHES):
        sink(spark.createDataFrame(rows, "id long, v string"), batch_id)
        t = ps.Table.open(t.path)
        assert t.latest_snapshot().commit_kind == ("APPEND" if batch_id % 2 else "COMPACT"), batch_id
        assert top_level_only(t) == (batch_id % 2 == 0), batch_id
    expected = [{"id": 1, "v": "a"}, {"id": 2, "v": "c"}, {"id": 3, "v": "d"}]
    assert rows_by(t.to_arrow(), "id") == expected
    assert rows_by(pypaimon_read(warehouse, "db.fcs"), "id") == expected


def test_scheduled_full_compaction_through_format_paimon(spark, catalog, warehouse, tmp_path):
    """writeStream.format("paimon") (tasks share buckets; the driver compacts after the commit)
    follows the same schedule; a batch write is due at every commit."""
    t = catalog.create_table("db.fcd", FC_SCHEMA, primary_keys=["id"],
                             options={"bucket": "2", "full-compaction.delta-commits": "2"})
    write_input_files(tmp_path / "in", [pa.table({"id": pa.array([r[0] for r in rows], pa.int64()),
                                                  "v": [r[1] for r in rows]}) for rows in FC_BATCHES])
    df = spark.readStream.schema("id long, v string").option("maxFilesPerTrigger", 1).parquet(str(tmp_path / "in"))
    q = (df.writeStream.format("paimon").option("checkpointLocation", str(tmp_path / "ckpt"))
         .option("commitUser", "fc-stream").trigger(availableNow=True).start(t.path))
    q.awaitTermination(300)
    assert q.exception() is None, q.exception()
    t = ps.Table.open(t.path)
    compacted = {s.commit_identifier for s in t.snapshots() if s.commit_kind == "COMPACT"}
    assert compacted == {0, 2}
    assert not top_level_only(t)
    spark.createDataFrame([(4, "e")], "id long, v string").write.format("paimon").mode("append").save(t.path)
    t = ps.Table.open(t.path)
    assert t.latest_snapshot().commit_kind == "COMPACT" and top_level_only(t)
    expected = [{"id": 1, "v": "a"}, {"id": 2, "v": "c"}, {"id": 3, "v": "d"}, {"id": 4, "v": "e"}]
    assert rows_by(pypaimon_read(warehouse, "db.fcd"), "id") == expected


def test_sink_and_reader_with_external_data_paths(spark, tmp_path, catalog):
    """Executors write a table's data files under its external path (`data-file.external-paths`)
    and Spark's reads open them there."""
    cold = tmp_path / "cold"
    t = catalog.create_table("db.ext", pa.schema([("id", pa.int64(), False), ("v", pa.string())]),
                             primary_keys=["id"], options={"bucket": "2", "deletion-vectors.enabled": "true",
                                                           "data-file.external-paths": f"file://{cold}",
                                                           "data-file.external-paths.strategy": "round-robin"})
    sink = paimon_sink(t.path, commit_user="ext")
    sink(spark.createDataFrame([(i, f"a{i}") for i in range(30)], "id long, v string").repartition(3), 0)
    sink(spark.createDataFrame([(i, f"b{i}") for i in range(0, 30, 4)], "id long, v string").repartition(2), 1)
    expected = sorted(({"id": i, "v": f"b{i}" if i % 4 == 0 else f"a{i}"} for i in range(30)), key=lambda r: r["id"])
    assert rows_by(spark.read.format("paimon").load(t.path).toArrow(), "id") == expected
    files = [e.file for e in TableScan(t.file_io, t.path, t.schema).live_entries(ps.Table.open(t.path).latest_snapshot())]
    assert files and all(f.external_path.startswith(f"file:{cold}/bucket-") for f in files)
    assert not [f for d, _, fs in os.walk(t.path) for f in fs if "bucket-" in d]


def test_a_write_options_value_the_option_cannot_take_is_refused(catalog, caplog):
    """A write into an existing table giving a table option a value it cannot take: an
    InvalidOptionError naming the option, the value and the write (never ignored as 'differing');
    a valid value other than the table's is only warned about, naming the value that applies."""
    from paimon_streaming.sinks.spark_write import check_existing_table_options
    t = catalog.create_table("db.opts", pa.schema([pa.field("id", pa.int64(), False)]), primary_keys=["id"],
                             options={"bucket": "2"})
    for key, value in [("bucket", "many"), ("target-file-size", "lots"), ("deletion-vectors.enabled", "maybe")]:
        with pytest.raises(InvalidOptionError, match=f"invalid value '{value}' for table option '{key}' of paimon_sink"):
            check_existing_table_options(t, {key: value}, "paimon_sink")
    with caplog.at_level(logging.WARNING, logger="paimon_streaming.sink"):
        check_existing_table_options(t, {"bucket": "4", "snapshot.num-retained.min": "10"}, "paimon_sink")
    assert "'bucket' = '4' (the table's: '2')" in caplog.text and "num-retained" not in caplog.text


def test_a_batch_too_big_for_the_driver_is_written_by_one_task(spark, catalog, monkeypatch, caplog):
    """Local mode writes a micro-batch in the driver; when collecting it exceeds
    spark.driver.maxResultSize (nothing was written), one task writes the batch instead, with a
    warning naming the setting: every row lands once, the batch's order kept. Another failure of
    the driver's write is raised as it is."""
    t = catalog.create_table("db.big", pa.schema([("id", pa.int64()), ("v", pa.string())]), primary_keys=["id"],
                             options={"bucket": "2"})

    def too_big(*args, **kwargs):
        raise RuntimeError("Job aborted: Total size of serialized results of 3 tasks (1100.0 MiB) is bigger than "
                           "spark.driver.maxResultSize (1024.0 MiB)")
    monkeypatch.setattr(foreach_batch, "write_in_driver", too_big)
    sink = paimon_sink(t.path, commit_user="big")
    rows = [(i % 5, f"v{i}") for i in range(20)]
    with caplog.at_level(logging.WARNING, logger="paimon_streaming.sink"):
        sink(spark.sparkContext.parallelize(rows, 2).toDF("id long, v string"), 0)
    assert "larger than spark.driver.maxResultSize, so one task writes it" in caplog.text
    assert rows_by(t.to_arrow(), "id") == [{"id": i, "v": f"v{15 + i}"} for i in range(5)]
    assert len(list(t.snapshots())) == 1

    def broken(*args, **kwargs):
        raise RuntimeError("the executor was lost")
    monkeypatch.setattr(foreach_batch, "write_in_driver", broken)
    with pytest.raises(RuntimeError, match="the executor was lost"):
        sink(spark.createDataFrame([(9, "x")], "id long, v string"), 1)
    assert len(list(ps.Table.open(t.path).snapshots())) == 1


def test_datasource_writer_refusals_and_nested_wall_times(tmp_path, catalog):
    """format("paimon")'s writer as Spark's Python workers run it, without a JVM: no path, a
    branch that does not exist, a streaming write without commitUser are refused before anything
    is created; a TimestampNTZ nested in a ROW, ARRAY or MAP going into a TIMESTAMP WITH LOCAL
    TIME ZONE field without the timeZone option is a SchemaMismatchError naming the column
    (read in a guessed zone its instants would be silently wrong); labelled with the session's
    zone (as Spark hands TimestampType values), nested ones included, it is written."""
    import datetime as dt

    from pyspark.sql.types import LongType, StructField, StructType

    from paimon_streaming.errors import SchemaMismatchError, TableNotFoundError
    from paimon_streaming.sinks.datasource import PaimonDataSource
    plain = StructType([StructField("id", LongType())])
    with pytest.raises(PaimonError, match="format\\('paimon'\\) needs a path.*no path for a catalog table"):
        PaimonDataSource({}).writer(plain, False)
    with pytest.raises(PaimonError, match="needs .option\\('commitUser'"):
        PaimonDataSource({"path": str(tmp_path / "s")}).streamWriter(plain, False)
    with pytest.raises(TableNotFoundError):
        PaimonDataSource({"path": str(tmp_path / "b"), "branch": "dev"}).writer(plain, False)
    assert not (tmp_path / "s").exists() and not (tmp_path / "b").exists()
    ltz = pa.timestamp("us", tz="UTC")
    t = catalog.create_table("db.zones", pa.schema([
        ("id", pa.int64()), ("r", pa.struct([("at", ltz)])), ("l", pa.list_(ltz)),
        ("m", pa.map_(pa.string(), ltz))]))
    spark_schema = StructType([StructField("id", LongType())])  # only its names matter to the writer here
    at = dt.datetime(2024, 1, 1, 12)
    for column, wall, zoned in [("r", pa.struct([("at", pa.timestamp("us"))]), pa.struct([("at", pa.timestamp("us", "Asia/Tokyo"))])),
                                ("l", pa.list_(pa.timestamp("us")), pa.list_(pa.timestamp("us", "Asia/Tokyo"))),
                                ("m", pa.map_(pa.string(), pa.timestamp("us")), pa.map_(pa.string(), pa.timestamp("us", "Asia/Tokyo")))]:
        value = {"r": {"at": at}, "l": [at], "m": [("k", at)]}[column]  # naive: UTC in a zoned array
        writer = PaimonDataSource({"path": t.path}).writer(spark_schema, False)
        with pytest.raises(SchemaMismatchError, match=f"column {column} of table .*TimestampNTZ value .*timeZone"):
            writer.write(iter([pa.record_batch([pa.array([1], pa.int64()), pa.array([value], wall)],
                                               names=["id", column])]))
        message = writer.write(iter([pa.record_batch([pa.array([1], pa.int64()), pa.array([value], zoned)],
                                                     names=["id", column])]))
        writer.commit([message])
    rows = ps.Table.open(t.path).to_arrow()
    utc = dt.datetime(2024, 1, 1, 12, tzinfo=dt.timezone.utc)  # instants: labelled, not shifted
    assert rows.column("r").to_pylist()[0] == {"at": utc} and rows.column("l").to_pylist()[1] == [utc]
    assert rows.column("m").to_pylist()[2] == [("k", utc)]


def test_multiset_columns_round_trip_through_spark(spark, catalog):
    """Spark reads a MULTISET as a map of each element to its count (Paimon's Spark connector's
    MapType(element, int)); writing such a DataFrame back was refused ("MAP<STRING, INT NOT NULL>
    cannot be written to table type MULTISET<STRING>"), nested ones too."""
    t = catalog.create_table("db.ms", pa.schema([pa.field("id", pa.int64(), False)]), primary_keys=["id"],
                             options={"bucket": "1"})
    t.update_schema().add_column("ms", "MULTISET<STRING>").add_column("r", "ROW<m MULTISET<INT>>").commit()
    rows = [{"id": 1, "ms": [("a", 2), ("b", 1)], "r": {"m": [(5, 3)]}}, {"id": 2, "ms": None, "r": None},
            {"id": 3, "ms": [], "r": {"m": None}}]
    t.write_arrow(pa.Table.from_pylist(rows, schema=t.arrow_schema()))
    df = spark.read.format("paimon").load(t.path)
    assert str(df.schema["ms"].dataType) == "MapType(StringType(), IntegerType(), False)"
    from pyspark.sql import functions as F
    df.withColumn("id", F.col("id") + 10).write.format("paimon").mode("append").save(t.path)
    assert rows_by(t.to_arrow(), "id") == rows + [{**r, "id": r["id"] + 10} for r in rows]
