"""The query shapes data engineers run in production, end to end through the Spark plugin, each
checked against a batch recomputation by Spark or a plain Python model:

- stateful queries into primary-key tables through foreachBatch(paimon_sink): an `update`-mode
  aggregation, `dropDuplicatesWithinWatermark`, a windowed aggregation with a watermark in
  `append` mode, a stream-stream join; each stopped between batches and failed mid-batch (after
  the files were written, and after the commit) and restarted from its checkpoint;
- one foreachBatch function writing two tables, writing one table twice, and retrying a write;
- table A -> transform -> table B through readStream/foreachBatch, restarted while A is
  compacted and expired, under Trigger.AvailableNow and Trigger.Once and a files-per-trigger
  limit; changelog-producer input / lookup tables with updates and deletes mirrored into a
  primary-key table;
- session settings: a time zone other than UTC, `spark.sql.ansi.enabled` both ways, columns in
  another order than the table's, missing nullable columns, columns differing only in case.

Bugs found here (fixed in sinks/): a stateful query whose batch was replayed after its commit
could never restart (paimon_sink skipped the batch without computing it, and Spark fails a
batch whose state stores did not commit); a second paimon_sink call for one table in a
micro-batch was silently dropped as a "replay" of the first; a table created by a CDC write
(`row_kind_column` / `rowKindColumn`) stored the row-kind column as data; a replayed
writeStream.format("paimon") batch left its files behind as orphans.
"""
from __future__ import annotations

import contextlib
import datetime
import os

import pyarrow as pa
import pyarrow.parquet as pq
import pytest

import paimon_streaming as ps
from paimon_streaming.errors import SchemaMismatchError
from paimon_streaming.sinks import paimon_sink

# SPARK_PATTERNS_FULL=1 runs every variant (writing sites, changelog producers); CI runs a subset
FULL = os.environ.get("SPARK_PATTERNS_FULL", "") == "1"
UTC = datetime.timezone.utc
T0 = datetime.datetime(2024, 3, 10, 9, 0, tzinfo=UTC)   # the US changes to summer time that day


@contextlib.contextmanager
def conf(spark, **settings):
    old = {k: spark.conf.get(k, None) for k in settings}
    for k, v in settings.items():
        spark.conf.set(k, v)
    try:
        yield
    finally:
        for k, v in old.items():
            if v is None:
                spark.conf.unset(k)
            else:
                spark.conf.set(k, v)


def add_files(directory, tables: list[pa.Table]) -> None:
    """Parquet files the file source reads one per micro-batch, in order (increasing mtimes)."""
    os.makedirs(directory, exist_ok=True)
    start = len(os.listdir(directory))
    for i, t in enumerate(tables, start):
        path = f"{directory}/part-{i:05d}.parquet"
        pq.write_table(t, path)
        os.utime(path, (1_700_000_000 + i, 1_700_000_000 + i))


def run(query_builder, checkpoint, timeout=300):
    """Start a query (`query_builder(checkpoint)` returns a DataStreamWriter), wait for it,
    return its exception (None when it finished)."""
    q = query_builder(str(checkpoint)).start()
    try:
        q.awaitTermination(timeout)
    except Exception:  # noqa: BLE001 - reported through q.exception()
        pass
    exc = q.exception()
    if q.isActive:
        q.stop()
    return exc


def table_rows(path, key) -> list[dict]:
    return sorted(ps.Table.open(path).to_arrow().to_pylist(), key=lambda r: tuple(r[k] for k in key))


def spark_rows(df, key) -> list[dict]:
    return sorted((r.asDict() for r in df.collect()), key=lambda r: tuple(r[k] for k in key))


class Failing:
    """foreachBatch function: paimon_sink, failing once in `batch` at `where` ('before-commit':
    files written, nothing committed; 'after-commit': committed, Spark does not record it)."""

    def __init__(self, sink, batch: int | None = None, where: str = "before-commit"):
        self.sink, self.batch, self.where, self.failed = sink, batch, where, False

    def __call__(self, df, batch_id):
        if batch_id == self.batch and not self.failed:
            self.failed = True
            if self.where == "before-commit":
                prepared = self.sink.prepare(df, batch_id)
                if prepared is not None:
                    prepared.discard()
                raise RuntimeError(f"injected failure before the commit of batch {batch_id}")
            self.sink(df, batch_id)
            raise RuntimeError(f"injected failure after the commit of batch {batch_id}")
        self.sink(df, batch_id)


# ---- stateful queries into primary-key tables ------------------------------------------------------
def events(n_files=4, rows=40, seed=0) -> list[pa.Table]:
    out = []
    for f in range(n_files):
        ids = range(f * rows, (f + 1) * rows)
        out.append(pa.table({
            "id": pa.array(list(ids), pa.int64()),
            "user": [f"u{(i * 7 + seed) % 11}" for i in ids],
            "amount": pa.array([(i * 13) % 50 + 0.25 for i in ids], pa.float64()),
            "ts": pa.array([T0 + datetime.timedelta(minutes=3 * i) for i in ids], pa.timestamp("us", "UTC")),
        }))
    return out


EVENTS_DDL = "id BIGINT, user STRING, amount DOUBLE, ts TIMESTAMP"


def source(spark, directory):
    return spark.readStream.schema(EVENTS_DDL).option("maxFilesPerTrigger", 1).parquet(str(directory))


@pytest.mark.parametrize("where,shuffle", [("before-commit", False), ("after-commit", None)]
                         + ([("after-commit", True), ("before-commit", None)] if FULL else []))
def test_update_mode_aggregation_upserts_changed_groups_across_restarts(spark, tmp_path, where, shuffle):
    """groupBy(user).agg(...) in `update` mode: each batch upserts the groups it changed. Failed
    in its second batch (files written, or committed and not recorded by Spark), restarted,
    then stopped and restarted with more input: the table equals the aggregation of all input.
    Written in the driver, by one task and shuffled. A replayed batch of a stateful query must
    still be computed: Spark fails a batch whose state stores did not all commit
    (STATE_STORE_COMMIT_VALIDATION_FAILED), and skipping the write left the query unable to
    restart."""
    src, table, ckpt = tmp_path / "in", str(tmp_path / "agg"), tmp_path / "ck"
    files = events(6)
    add_files(src, files[:4])
    sink = paimon_sink(table, options={"primary-key": "user", "bucket": "2"}, shuffle=shuffle)

    def query(fn):
        agg = (source(spark, src).groupBy("user")
               .agg(pyspark_f().count("*").alias("n"), pyspark_f().sum("amount").alias("total"),
                    pyspark_f().max("ts").alias("last_ts")))
        return lambda ck: (agg.writeStream.outputMode("update").foreachBatch(fn)
                           .option("checkpointLocation", ck).trigger(availableNow=True))

    exc = run(query(Failing(sink, 1, where)), ckpt)
    assert "injected failure" in str(exc)
    assert run(query(sink), ckpt) is None
    add_files(src, files[4:])
    assert run(query(sink), ckpt) is None

    F = pyspark_f()
    expected = spark_rows(spark.createDataFrame(pa.concat_tables(files).to_pandas())
                          .groupBy("user").agg(F.count("*").alias("n"), F.sum("amount").alias("total"),
                                               F.unix_micros(F.max("ts")).alias("last_ts")), ["user"])
    got = table_rows(table, ["user"])
    assert [(r["user"], r["n"], round(r["total"], 6), micros(r["last_ts"])) for r in got] == \
        [(r["user"], r["n"], round(r["total"], 6), r["last_ts"]) for r in expected]


def micros(ts: datetime.datetime) -> int:
    """Microseconds since the epoch of an aware datetime (an instant)."""
    assert ts.tzinfo is not None, ts
    return (ts - datetime.datetime(1970, 1, 1, tzinfo=UTC)) // datetime.timedelta(microseconds=1)


def pyspark_f():
    from pyspark.sql import functions as F
    return F


def file_sink_rows(spark, query_df, directory, output_mode="append") -> list[dict]:
    """What Spark's own parquet file sink stores for the same query (the model of an append-mode query)."""
    q = (query_df.writeStream.format("parquet").outputMode(output_mode).option("path", str(directory / "out"))
         .option("checkpointLocation", str(directory / "ck")).trigger(availableNow=True).start())
    q.awaitTermination(300)
    assert q.exception() is None, q.exception()
    return [r.asDict() for r in spark.read.parquet(str(directory / "out")).collect()]


def as_instants(rows: list[dict], *columns) -> list[dict]:
    """Spark's collected TimestampType values (naive, in the process' local zone) as epoch micros;
    the table's (aware) too."""
    out = []
    for r in rows:
        r = dict(r)
        for c in columns:
            v = r[c]
            r[c] = micros(v if v.tzinfo else v.astimezone())
        out.append(r)
    return out


def resent(files: list[pa.Table]) -> list[pa.Table]:
    """Each file again with its first rows resent (same id and event time, within the watermark)."""
    out = []
    for i, t in enumerate(files):
        out.append(pa.concat_tables([t, t.slice(0, 5)]) if i else t)
        if i:
            out[-1] = pa.concat_tables([out[-1], files[i - 1].slice(files[i - 1].num_rows - 3)])
    return out


def test_drop_duplicates_within_watermark_into_an_append_table(spark, tmp_path):
    """dropDuplicatesWithinWatermark(id) into an append table (no key to hide a second copy):
    failed after committing its second batch and restarted, the table holds what Spark's file
    sink holds for the same query, every id once."""
    src = tmp_path / "in"
    add_files(src, resent(events(4)))

    def dedup():
        return source(spark, src).withWatermark("ts", "30 minutes").dropDuplicatesWithinWatermark(["id"])

    expected = file_sink_rows(spark, dedup(), tmp_path / "model")
    table, ckpt = str(tmp_path / "dedup"), tmp_path / "ck"
    sink = paimon_sink(table)

    def query(fn):
        return lambda ck: dedup().writeStream.foreachBatch(fn).option("checkpointLocation", ck) \
            .trigger(availableNow=True)

    assert "injected failure" in str(run(query(Failing(sink, 1, "after-commit")), ckpt))
    assert run(query(sink), ckpt) is None
    got = table_rows(table, ["id"])
    assert len({r["id"] for r in got}) == len(got) == 160
    assert as_instants(got, "ts") == sorted(as_instants(expected, "ts"), key=lambda r: r["id"])


def test_windowed_aggregation_with_watermark_in_append_mode_in_a_summer_time_zone(spark, tmp_path):
    """10-minute windows with a watermark, `append` mode, session time zone
    America/Los_Angeles across the night it changes to summer time: the table (key: window
    start) holds exactly the windows Spark's file sink holds, same instants; the query is failed
    before a commit and restarted with more input. The same through writeStream.format("paimon"),
    a task failing inside a micro-batch."""
    src = tmp_path / "in"
    files = events(5)
    add_files(src, files[:3])
    F = pyspark_f()

    def windows():
        return (source(spark, src).withWatermark("ts", "20 minutes")
                .groupBy(F.window("ts", "10 minutes")).agg(F.count("*").alias("n"), F.sum("amount").alias("total"))
                .select(F.col("window.start").alias("wstart"), F.col("window.end").alias("wend"), "n", "total"))

    table, ckpt = str(tmp_path / "win"), tmp_path / "ck"
    sink = paimon_sink(table, options={"primary-key": "wstart", "bucket": "2"})

    def query(fn):
        return lambda ck: windows().writeStream.outputMode("append").foreachBatch(fn) \
            .option("checkpointLocation", ck).trigger(availableNow=True)

    with conf(spark, **{"spark.sql.session.timeZone": "America/Los_Angeles"}):
        assert "injected failure" in str(run(query(Failing(sink, 1, "before-commit")), ckpt))
        add_files(src, files[3:])
        assert run(query(sink), ckpt) is None
        expected = file_sink_rows(spark, windows(), tmp_path / "model")
        # the same query through writeStream.format("paimon"), a task failing inside its third batch
        marker = tmp_path / "failed-once"

        def fail_once(row_id):
            if row_id >= 90 and not marker.exists():  # in the third file
                marker.touch()
                raise RuntimeError("injected task failure")
            return True

        def ds_query(ck):
            df = windows() if marker.exists() else \
                (source(spark, src).filter(F.udf(fail_once, "boolean")("id"))
                 .withWatermark("ts", "20 minutes")
                 .groupBy(F.window("ts", "10 minutes")).agg(F.count("*").alias("n"), F.sum("amount").alias("total"))
                 .select(F.col("window.start").alias("wstart"), F.col("window.end").alias("wend"), "n", "total"))
            return (df.writeStream.format("paimon").outputMode("append").option("commitUser", "windows")
                    .option("primary-key", "wstart").option("bucket", "2").option("checkpointLocation", ck)
                    .trigger(availableNow=True).option("path", str(tmp_path / "win_ds")))

        assert "injected task failure" in str(run(ds_query, tmp_path / "ck_ds"))
        assert run(ds_query, tmp_path / "ck_ds") is None
    expected = sorted(as_instants(expected, "wstart", "wend"), key=lambda r: r["wstart"])
    for path in (table, str(tmp_path / "win_ds")):
        got = table_rows(path, ["wstart"])
        assert len(got) == len(expected) > 25
        assert as_instants(got, "wstart", "wend") == expected


def test_stream_stream_join_into_a_primary_key_table(spark, tmp_path):
    """orders joined with payments (watermarks on both, a time-range condition): restarted after
    a failure past its commit, the table holds the pairs Spark's file sink holds."""
    orders_dir, pay_dir = tmp_path / "orders", tmp_path / "payments"
    add_files(orders_dir, events(4))
    pays = []
    for f in range(4):
        ids = list(range(f * 40 + 20, f * 40 + 60, 2))  # a payment for every second order, some a file later
        pays.append(pa.table({"pid": pa.array([10_000 + i for i in ids], pa.int64()),
                              "order_id": pa.array(ids, pa.int64()),
                              "pts": pa.array([T0 + datetime.timedelta(minutes=3 * i + 7) for i in ids],
                                              pa.timestamp("us", "UTC"))}))
    add_files(pay_dir, pays)
    F = pyspark_f()

    def joined():
        o = source(spark, orders_dir).withWatermark("ts", "30 minutes")
        p = (spark.readStream.schema("pid BIGINT, order_id BIGINT, pts TIMESTAMP").option("maxFilesPerTrigger", 1)
             .parquet(str(pay_dir)).withWatermark("pts", "30 minutes"))
        return o.join(p, F.expr("order_id = id AND pts BETWEEN ts AND ts + INTERVAL 1 HOUR")) \
            .select("id", "pid", "user", "amount", "ts", "pts")

    expected = file_sink_rows(spark, joined(), tmp_path / "model")
    table, ckpt = str(tmp_path / "joined"), tmp_path / "ck"
    sink = paimon_sink(table, options={"primary-key": "id,pid", "bucket": "2"})

    def query(fn):
        return lambda ck: joined().writeStream.foreachBatch(fn).option("checkpointLocation", ck) \
            .trigger(availableNow=True)

    assert "injected failure" in str(run(query(Failing(sink, 2, "after-commit")), ckpt))
    assert run(query(sink), ckpt) is None
    got = table_rows(table, ["id", "pid"])
    assert len(got) == len(expected) > 50
    assert as_instants(got, "ts", "pts") == sorted(as_instants(expected, "ts", "pts"),
                                                   key=lambda r: (r["id"], r["pid"]))


# ---- one foreachBatch, several writes ---------------------------------------------------------------
def test_one_function_writes_two_tables_and_retries_a_failed_write(spark, tmp_path):
    """foreachBatch writing a raw append table and per-batch counts into a summing aggregation
    table (two paimon_sinks; neither forgives a batch applied twice), the
    raw write retried by the function after a failure inside it (first attempt: files written,
    nothing committed; later: committed then the call raised); failed after the first table's
    commit in another batch, restarted: both tables equal their models, nothing doubled."""
    src = tmp_path / "in"
    files = events(4)
    add_files(src, files)
    raw_path, per_user_path = str(tmp_path / "raw"), str(tmp_path / "per_user")
    raw = paimon_sink(raw_path)
    per_user = paimon_sink(per_user_path, options={"primary-key": "user", "bucket": "1", "merge-engine": "aggregation",
                                                   "fields.n.aggregate-function": "sum"})
    F = pyspark_f()
    state = {"raw_failures": 0, "crashed": False}

    def write_both(df, batch_id):
        for attempt in range(3):
            try:
                if batch_id == 1 and attempt == 0:
                    prepared = raw.prepare(df, batch_id)
                    prepared.discard()
                    raise OSError("injected: the write failed")
                raw(df, batch_id)
                if batch_id == 2 and attempt == 0:
                    raise OSError("injected: the call raised after its commit")
                break
            except OSError:
                state["raw_failures"] += 1
        per_user(df.groupBy("user").agg(F.count("*").alias("n")), batch_id)
        if batch_id == 3 and not state["crashed"]:
            state["crashed"] = True
            raise RuntimeError("injected failure between the two tables")

    def query(ck):
        return source(spark, src).writeStream.foreachBatch(write_both).option("checkpointLocation", ck) \
            .trigger(availableNow=True)

    assert "injected failure" in str(run(query, tmp_path / "ck"))
    assert run(query, tmp_path / "ck") is None
    assert state["raw_failures"] == 2
    got_raw = table_rows(raw_path, ["id"])
    assert [r["id"] for r in got_raw] == list(range(160))
    counts = {}
    for u in pa.concat_tables(files).column("user").to_pylist():
        counts[u] = counts.get(u, 0) + 1
    assert {r["user"]: r["n"] for r in table_rows(per_user_path, ["user"])} == counts


def test_one_table_written_twice_in_a_batch_applies_both_writes_exactly_once(spark, tmp_path):
    """A function splitting each batch into two writes of one table (two paimon_sink calls, one
    batch id): the second was taken for a replay of the first and its rows silently dropped.
    Now the second call commits under `<commit user>#1`: both writes apply, and a crash after
    the first write's commit replays only the second, also with an append table (which would
    double rows written twice)."""
    src = tmp_path / "in"
    add_files(src, events(3))
    pk, append = str(tmp_path / "pk"), str(tmp_path / "append")
    sinks = [paimon_sink(pk, options={"primary-key": "id", "bucket": "2"}), paimon_sink(append)]
    crashed = set()

    def split(df, batch_id):
        for sink in sinks:
            sink(df.filter("amount < 25"), batch_id)
            if batch_id == 1 and sink not in crashed:
                crashed.add(sink)
                raise RuntimeError("injected failure between the two writes of one table")
            sink(df.filter("amount >= 25"), batch_id)

    def query(ck):
        return source(spark, src).writeStream.foreachBatch(split).option("checkpointLocation", ck) \
            .trigger(availableNow=True)

    assert "injected failure" in str(run(query, tmp_path / "ck"))  # in the primary-key table's batch 1
    assert "injected failure" in str(run(query, tmp_path / "ck"))  # in the append table's batch 1
    assert run(query, tmp_path / "ck") is None
    for path in (pk, append):
        assert [r["id"] for r in table_rows(path, ["id"])] == list(range(120)), path
    users = {(s.commit_user, s.commit_identifier) for s in ps.Table.open(append).snapshots()}
    assert {u.rsplit("#", 1)[-1] if "#" in u else "" for u, _ in users} == {"", "1"}


# ---- table A -> transform -> table B ----------------------------------------------------------------
A_SCHEMA = pa.schema([("id", pa.int64()), ("v", pa.string()), ("amount", pa.float64())])


def a_rows(ids, tag):
    ids = list(ids)
    return pa.table({"id": pa.array(ids, pa.int64()), "v": [f"{tag}{i}" for i in ids],
                     "amount": pa.array([i * 1.5 for i in ids], pa.float64())}, schema=A_SCHEMA)


@pytest.mark.parametrize("options", [{"changelog-producer": "lookup", "deletion-vectors.enabled": "true"}]
                         + ([{"changelog-producer": "input"}, {}] if FULL else []),
                         ids=["lookup-dv"] + (["input", "no-producer"] if FULL else []))
def test_a_to_b_mirror_converges_through_restarts_compaction_and_expiry(spark, tmp_path, catalog, options):
    """readStream(A, row kinds, one file per trigger, a consumer) -> a projection ->
    foreachBatch(paimon_sink(B, row_kind_column)): A is upserted, deleted from, fully
    compacted and expired to one snapshot between runs; the runs fail after a commit, finish
    under Trigger.AvailableNow and Trigger.Once. B always equals A's projection."""
    a = catalog.create_table("db.a", A_SCHEMA, primary_keys=["id"],
                             options={"bucket": "2", **options})
    a.write_arrow(a_rows(range(0, 30), "a"))
    a.write_arrow(a_rows(range(20, 40), "b"))
    a.delete([("id", "in", [1, 2, 25])])
    a.write_arrow(a_rows([2, 3], "c"))
    b_path = str(tmp_path / "b")
    sink = paimon_sink(b_path, options={"primary-key": "id", "bucket": "3"}, row_kind_column="_kind")
    F = pyspark_f()

    def query(fn, **trigger):
        def build(ck):
            df = (spark.readStream.format("paimon").option("rowKindColumn", "_kind")
                  .option("max-files-per-trigger", 3).option("consumer-id", "mirror").load(a.path)
                  .select("id", F.upper("v").alias("v"), (F.col("amount") * 2).alias("doubled"), "_kind"))
            return df.writeStream.foreachBatch(fn).option("checkpointLocation", ck).trigger(**trigger)
        return build

    def expected():
        return [{"id": r["id"], "v": r["v"].upper(), "doubled": r["amount"] * 2}
                for r in table_rows(a.path, ["id"])]

    ckpt = tmp_path / "ck"
    assert "injected failure" in str(run(query(Failing(sink, 1, "after-commit"), availableNow=True), ckpt))
    assert run(query(sink, availableNow=True), ckpt) is None
    assert table_rows(b_path, ["id"]) == expected()

    a = ps.Table.open(a.path)
    a.write_arrow(a_rows(range(35, 50), "d"))
    a.delete([("id", "in", [3, 36, 0])])
    ps.Table.open(a.path).compact(full=True)
    a.write_arrow(a_rows([0, 5, 60], "e"))
    ps.Table.open(a.path).expire_snapshots(retain_max=1, retain_min=1)
    assert run(query(sink, once=True), ckpt) is None
    assert table_rows(b_path, ["id"]) == expected()
    a = ps.Table.open(a.path)
    for k in range(5):  # a backlog of snapshots, read in a few files per micro-batch
        a.write_arrow(a_rows(range(k, 70, 7), f"f{k}"))
    a.delete([("id", "<", 4)])
    assert run(query(sink, availableNow=True), ckpt) is None
    assert table_rows(b_path, ["id"]) == expected()


# ---- session settings ------------------------------------------------------------------------------
SETTINGS_SCHEMA = pa.schema([pa.field("id", pa.int64(), False), ("userId", pa.string()), ("qty", pa.int64()),
                             ("at", pa.timestamp("us", "UTC")), ("wall", pa.timestamp("us")), ("note", pa.string())])
# columns in another order than the table's, `note` missing, `qty` an INT into BIGINT; `at` a wall
# time into an instant column, `wall` an instant into a wall-time column: both converted in the
# session's zone, around the night Los Angeles skips 02:00-03:00 and the one it repeats 01:00-02:00
SETTINGS_SQL = """SELECT CAST(qty AS INT) AS qty, CAST(wall_text AS TIMESTAMP) AS wall, userId,
                         CAST(at_text AS TIMESTAMP_NTZ) AS at, id FROM VALUES
    (1, 'u1', 5, '2024-03-10 01:59:59', '2024-03-10 01:59:59'),
    (2, 'u2', -7, '2024-03-10 03:00:00', '2024-03-10 03:00:00'),
    (3, NULL, NULL, '2024-11-03 00:30:00', '2024-11-03 00:30:00'),
    (4, 'u4', 2147483647, '1969-12-31 16:00:00.000001', '2024-06-30 23:59:59.999999'),
    (5, 'u5', 0, '2024-11-03 01:30:00', '2024-11-03 01:30:00')
    AS v(id, userId, qty, at_text, wall_text)"""


@pytest.mark.parametrize("ansi", ["true", "false"])
def test_session_zone_ansi_column_order_and_missing_columns_through_every_writer(spark, catalog, ansi):
    """Session time zone America/Los_Angeles, ANSI on and off: foreachBatch(paimon_sink) in the
    driver and shuffled, df.write.format("paimon") (with option timeZone) store what Spark's own
    casts to the table's types give; columns matched by name, missing nullable ones null."""
    F = pyspark_f()
    with conf(spark, **{"spark.sql.session.timeZone": "America/Los_Angeles", "spark.sql.ansi.enabled": ansi}):
        df = spark.sql(SETTINGS_SQL)
        expected = sorted((r.asDict() for r in df.select(
            "id", "userId", F.col("qty").cast("bigint").alias("qty"),
            F.unix_micros(F.col("at").cast("timestamp")).alias("at"),
            F.col("wall").cast("timestamp_ntz").alias("wall"), F.lit(None).cast("string").alias("note")).collect()),
            key=lambda r: r["id"])
        paths = []
        for i, write in enumerate([
                lambda p: paimon_sink(p, commit_user="settings")(df, 0),
                lambda p: paimon_sink(p, commit_user="settings", shuffle=True)(df.repartition(3), 0),
                lambda p: df.write.format("paimon").option("timeZone", "America/Los_Angeles").mode("append").save(p)]):
            t = catalog.create_table(f"db.settings{i}", SETTINGS_SCHEMA, primary_keys=["id"], options={"bucket": "2"})
            write(t.path)
            paths.append(t.path)
    for path in paths:
        got = [dict(r, at=micros(r["at"])) for r in table_rows(path, ["id"])]
        assert got == expected, path


def test_a_wall_time_the_session_zone_skips_is_converted_as_spark_does_or_refused(spark, catalog):
    """02:30 on the night Los Angeles skips 02:00-03:00, into an instant column: Spark's cast
    gives 03:30 PDT; the sink stores that, or refuses naming the column, never another instant."""
    F = pyspark_f()
    with conf(spark, **{"spark.sql.session.timeZone": "America/Los_Angeles"}):
        df = spark.sql("SELECT CAST(1 AS BIGINT) AS id, TIMESTAMP_NTZ'2024-03-10 02:30:00' AS at")
        spark_micros = df.select(F.unix_micros(F.col("at").cast("timestamp"))).first()[0]
        t = catalog.create_table("db.gap", SETTINGS_SCHEMA, primary_keys=["id"], options={"bucket": "1"})
        try:
            paimon_sink(t.path, commit_user="gap")(df, 0)
        except SchemaMismatchError as exc:
            assert "'at'" in str(exc) or " at " in str(exc), exc
            assert ps.Table.open(t.path).latest_snapshot() is None
            return
    assert [micros(r["at"]) for r in table_rows(t.path, ["id"])] == [spark_micros]


def test_mixed_case_field_names_read_case_insensitively_with_pushdown(spark, catalog):
    """A table with mixed-case fields (userId, Amount, partition Dt) read with Spark's default
    spark.sql.caseSensitive=false, filters pushed down: `userid`, `AMOUNT`, `dt` in a query name
    the table's columns; the answer equals the Python model's."""
    schema = pa.schema([("userId", pa.string()), ("Amount", pa.int64()), ("Dt", pa.string())])
    t = catalog.create_table("db.mixed", schema, primary_keys=["userId", "Dt"], partition_keys=["Dt"],
                             options={"bucket": "2"})
    rows = [{"userId": f"u{i % 9}", "Amount": i, "Dt": f"d{i % 3}"} for i in range(60)]
    for k in range(3):
        t.write_arrow(pa.Table.from_pylist(rows[k * 20:(k + 1) * 20], schema))
    model = {}
    for r in rows:
        model[(r["userId"], r["Dt"])] = r
    want = sorted((r["userId"], r["Amount"]) for r in model.values() if r["Dt"] == "d1" and r["Amount"] > 20
                  and r["userId"] in ("u1", "u4", "u7"))
    with conf(spark, **{"spark.sql.python.filterPushdown.enabled": "true", "spark.sql.caseSensitive": "false"}):
        df = spark.read.format("paimon").load(t.path)
        got = df.filter("dt = 'd1' AND AMOUNT > 20 AND userid IN ('u1', 'u4', 'u7')").select("USERID", "amount")
        assert sorted(tuple(r) for r in got.collect()) == want
        assert got.columns == ["USERID", "amount"]
        streamed = []
        q = (spark.readStream.format("paimon").load(t.path).filter("dt = 'd1' AND AMOUNT > 20")
             .select("USERID", "amount").writeStream
             .foreachBatch(lambda b, _: streamed.extend(tuple(r) for r in b.collect()))
             .trigger(availableNow=True).start())
        q.awaitTermination(120)
        assert q.exception() is None
    assert sorted(streamed) == sorted((r["userId"], r["Amount"]) for r in model.values()
                                      if r["Dt"] == "d1" and r["Amount"] > 20)


def test_a_table_created_by_a_cdc_write_does_not_store_the_row_kind_column(spark, tmp_path):
    """paimon_sink(row_kind_column=) and format("paimon") with rowKindColumn creating the table:
    the row-kind column says how to apply a row and is not stored (it was made a table column,
    so every row carried '+I'/'+U' as data)."""
    df = spark.sql("SELECT * FROM VALUES (1L, 'a', '+I'), (2L, 'b', '+I'), (1L, 'c', '+U'), (2L, 'b', '-D') "
                   "AS v(id, v, _kind)")
    sink_path, ds_path = str(tmp_path / "sink"), str(tmp_path / "ds")
    paimon_sink(sink_path, commit_user="cdc", row_kind_column="_kind",
                options={"primary-key": "id", "bucket": "1"})(df.coalesce(1), 0)
    (df.coalesce(1).write.format("paimon").option("rowKindColumn", "_kind").option("primary-key", "id")
     .option("bucket", "1").mode("append").save(ds_path))
    for path in (sink_path, ds_path):
        assert ps.Table.open(path).schema.field_names == ["id", "v"]
        assert table_rows(path, ["id"]) == [{"id": 1, "v": "c"}]


def test_a_replayed_stream_write_leaves_no_orphan_files(tmp_path):
    """writeStream.format("paimon"): a micro-batch replayed after its commit (the driver died
    before Spark recorded it) is skipped; the files its tasks wrote again are deleted."""
    from pyspark.sql.types import LongType, StringType, StructField, StructType

    from paimon_streaming.sinks.datasource import PaimonStreamWriter
    options = {"path": str(tmp_path / "t"), "commituser": "replayed", "primary-key": "id", "bucket": "1",
               "checkpointlocation": str(tmp_path / "ck")}
    schema = StructType([StructField("id", LongType(), False), StructField("v", StringType())])
    batch = pa.record_batch({"id": pa.array([1, 2], pa.int64()), "v": ["a", "b"]})

    def data_files():
        return sorted(str(p) for p in (tmp_path / "t").rglob("data-*"))

    writer = PaimonStreamWriter(options, schema)
    writer.commit([writer.write(iter([batch]))], 0)
    committed = data_files()
    replay = PaimonStreamWriter(options, schema)
    replay.commit([replay.write(iter([batch]))], 0)
    assert data_files() == committed and len(committed) == 1
    assert table_rows(options["path"], ["id"]) == [{"id": 1, "v": "a"}, {"id": 2, "v": "b"}]
