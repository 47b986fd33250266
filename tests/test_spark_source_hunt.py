"""End-to-end checks of `spark.readStream/read.format("paimon")` against explicit expected
answers, in situations a production user meets: a checkpointed query stopped and restarted
while writers upsert, delete, compact, expire, rescale and overwrite; schema evolution between
runs; deletion-vector and dynamic-bucket tables under row limits; Trigger.Once; batch filters
on evolved columns. Tests marked xfail(strict=True) are regressions for bugs found here: they
turn green (and then fail as XPASS) once the bug is fixed."""
from __future__ import annotations

import pyarrow as pa
import pyarrow.compute as pc
import pytest

import paimon_streaming as ps
from paimon_streaming.consumers import ConsumerManager
from paimon_streaming.errors import InvalidOptionError, SnapshotExpiredError
from test_spark_source import apply_changes, flat, ok, run_batches, stream

SCHEMA = pa.schema([("id", pa.int64()), ("v", pa.string()), ("dt", pa.string())])


def rows(ids, v, dt=None):
    ids = list(ids)
    return pa.table({"id": pa.array(ids, pa.int64()), "v": [f"{v}{i}" for i in ids],
                     "dt": [dt or f"d{i % 3}" for i in ids]})


def state(t, key=("id", "dt")):
    return sorted(ps.Table.open(t.path).to_arrow().to_pylist(), key=lambda r: tuple(r[c] for c in key))


# ---- a checkpointed query across every kind of writer activity ------------------------------------
def test_restarts_through_upserts_deletes_compaction_expiry_rescale_and_overwrite(spark, tmp_path, catalog):
    """A latest-full stream (row kinds, consumer-id, streaming-read-overwrite, 2 files per
    micro-batch) is stopped inside its initial full read, then restarted twice while the table
    is upserted, deleted from, fully compacted, expired down to one snapshot, rescaled and
    overwritten. Applying every change in delivery order gives the table, the consumer kept
    what the stream needed, and nothing was repeated."""
    t = catalog.create_table("db.life", SCHEMA, primary_keys=["id", "dt"], partition_keys=["dt"],
                             options={"bucket": "2", "write-only": "true"})   # files stay: a many-file full read
    for k in range(3):
        t.write_arrow(rows(range(10 * k, 10 * k + 10), "a"))
    ckpt = tmp_path / "ck"
    options = {"rowKindColumn": "_kind", "consumer-id": "life", "streaming-read-overwrite": "true",
               "max-files-per-trigger": 2}
    first, exc = run_batches(stream(spark, t.path, **options), ckpt, fail_at=2)
    assert "injected failure" in str(exc) and len(first) == 2
    assert ConsumerManager(t.file_io, t.path).consumers() == {"life": 3}      # inside the full read of 3
    assert all(r["_kind"] == "+I" for r in flat(first))

    t.write_arrow(rows([1, 2, 35], "b"))                                      # upserts and a new key
    assert t.delete([("id", "in", [4, 5])]) is not None                       # -D rows
    ps.Table.open(t.path).compact(full=True)
    ps.Table.open(t.path).expire_snapshots(retain_max=1, retain_min=1)
    assert ps.Table.open(t.path).snapshot_manager.earliest_id() == 3          # held by the consumer
    second = ok(run_batches(stream(spark, t.path, **options), ckpt))

    t = ps.Table.open(t.path)
    assert t.rescale(bucket=3) is not None                                    # moves rows, changes none
    t.write_arrow(rows([1, 40], "c"))
    t.write_arrow(pa.concat_tables([rows([1, 2, 50], "o", dt="d1"), rows([6], "o", dt="d0")]), overwrite=True)
    third = ok(run_batches(stream(spark, t.path, **options), ckpt))

    delivered = flat(first + second + third)
    assert apply_changes(delivered) == state(t)
    # nothing repeated: the initial full read delivers each of the 30 first rows once as +I
    initial = [(r["id"], r["v"]) for r in delivered if r["v"].startswith("a") and r["_kind"] == "+I"]
    assert sorted(initial) == sorted((i, f"a{i}") for i in range(30))
    assert ConsumerManager(t.file_io, t.path).consumers()["life"] <= t.snapshot_manager.latest_id() + 1


def test_a_full_read_interrupted_past_expiration_fails_naming_the_snapshot(spark, tmp_path, catalog):
    """Without consumer-id, a stream stopped inside its initial full read of snapshot 3 whose
    snapshot then expires must fail with the documented error, never continue with a gap."""
    t = catalog.create_table("db.gap", SCHEMA, options={"write-only": "true"})
    for k in range(3):
        t.write_arrow(rows(range(10 * k, 10 * k + 6), "a"))
    ckpt = tmp_path / "ck"
    options = {"max-files-per-trigger": 2}
    first, _ = run_batches(stream(spark, t.path, **options), ckpt, fail_at=1)
    assert len(first) == 1
    t.write_arrow(rows([100], "n"))
    t.write_arrow(rows([101], "n"))
    ps.Table.open(t.path).expire_snapshots(retain_max=1, retain_min=1)
    _, exc = run_batches(stream(spark, t.path, **options), ckpt)
    assert exc is not None
    msg = str(exc)
    assert SnapshotExpiredError.__name__ in msg or "no longer exists" in msg
    assert "snapshot 3" in msg and "consumer-id" in msg


# ---- schema evolution between runs -----------------------------------------------------------------
def test_widen_add_and_rename_between_runs_of_a_checkpointed_stream(spark, tmp_path, catalog):
    """Run 1 reads in the first schema; then x is widened INT -> BIGINT (a value beyond INT
    written), a column is added and x renamed, with upserts and a delete in between. Run 2
    (defined again, from the same checkpoint, one file per batch) delivers every later change in
    the newest schema, old snapshots converted by field id; applied, they give the table."""
    s = pa.schema([("id", pa.int64()), ("x", pa.int32()), ("dt", pa.string())])
    t = catalog.create_table("db.evo", s, primary_keys=["id", "dt"], partition_keys=["dt"], options={"bucket": "2"})
    t.write_arrow(pa.table({"id": pa.array(range(6), pa.int64()), "x": pa.array(range(6), pa.int32()),
                            "dt": [f"d{i % 2}" for i in range(6)]}))
    ckpt = tmp_path / "ck"
    options = {"scan.mode": "from-snapshot", "scan.snapshot-id": 1, "rowKindColumn": "_kind",
               "max-files-per-trigger": 1}
    first = ok(run_batches(stream(spark, t.path, **options), ckpt))
    assert sorted(r["x"] for r in flat(first)) == list(range(6))
    t.write_arrow(pa.table({"id": pa.array([1], pa.int64()), "x": pa.array([11], pa.int32()), "dt": ["d1"]}))
    t.update_schema().update_column("x", type=pa.int64()).commit()
    t = ps.Table.open(t.path)
    t.write_arrow(pa.table({"id": pa.array([1, 7], pa.int64()), "x": pa.array([2 ** 40, 7], pa.int64()),
                            "dt": ["d1", "d1"]}))
    with t.update_schema() as u:
        u.add_column("y", pa.string())
    t = ps.Table.open(t.path)
    t.write_arrow(pa.table({"id": pa.array([2, 8], pa.int64()), "x": pa.array([22, 8], pa.int64()),
                            "dt": ["d0", "d0"], "y": ["yy", "y8"]}))
    t.update_schema().rename_column("x", "xx").commit()
    t = ps.Table.open(t.path)
    t.write_arrow(pa.table({"id": pa.array([3], pa.int64()), "xx": pa.array([33], pa.int64()), "dt": ["d1"],
                            "y": ["y3"]}))
    t.delete([("id", "=", 0)])
    second = ok(run_batches(stream(spark, t.path, **options), ckpt))
    later = flat(second)
    assert all(set(r) == {"id", "xx", "dt", "y", "_kind"} for r in later)   # one shape: the newest
    assert [(r["id"], r["xx"], r["y"], r["_kind"]) for r in later if r["id"] == 1] == \
        [(1, 11, None, "+I"), (1, 2 ** 40, None, "+I")]                       # in commit order
    normalized = [{"id": r["id"], "xx": r["x"], "dt": r["dt"], "y": None, "_kind": r["_kind"]}
                  for r in flat(first)] + later
    assert apply_changes(normalized) == state(t)


# ---- table kinds under row limits, restarted ------------------------------------------------------------
@pytest.mark.parametrize("options", [{"bucket": "2", "deletion-vectors.enabled": "true"},
                                     {"bucket": "-1", "dynamic-bucket.target-row-num": "3"}],
                         ids=["deletion-vectors", "dynamic-bucket"])
def test_row_limited_stream_restarted_across_deletes_compaction_and_expiry(spark, tmp_path, catalog, options):
    t = catalog.create_table("db.k", SCHEMA, primary_keys=["id", "dt"], partition_keys=["dt"], options=options)
    t.write_arrow(rows(range(12), "a"))
    ckpt = tmp_path / "ck"
    read = {"scan.mode": "from-snapshot", "scan.snapshot-id": 1, "rowKindColumn": "_kind",
            "max-rows-per-trigger": 4, "consumer-id": "k"}
    first, exc = run_batches(stream(spark, t.path, **read), ckpt, fail_at=1)
    assert len(first) == 1 and exc is not None
    t.write_arrow(rows([1, 2, 13], "b"))
    t.delete([("id", "in", [3, 4])])
    ps.Table.open(t.path).compact(full=True)
    ps.Table.open(t.path).write_arrow(rows([3, 20], "c"))
    ps.Table.open(t.path).expire_snapshots(retain_max=1, retain_min=1)
    second = ok(run_batches(stream(spark, t.path, **read), ckpt))
    assert len(second) > 2                                                     # bounded batches
    assert apply_changes(flat(first + second)) == state(t)


def test_trigger_once_ignores_the_limits_and_reads_everything_once(spark, tmp_path, catalog):
    t = catalog.create_table("db.once", SCHEMA, options={"write-only": "true"})
    for k in range(3):
        t.write_arrow(rows(range(10 * k, 10 * k + 6), "a"))
    sizes: list[int] = []
    ids: list[int] = []

    def collect(df, _):
        got = [r["id"] for r in df.collect()]
        sizes.append(len(got))
        ids.extend(got)
    q = (stream(spark, t.path, **{"scan.mode": "from-snapshot", "scan.snapshot-id": 1, "max-files-per-trigger": 1})
         .writeStream.foreachBatch(collect).option("checkpointLocation", str(tmp_path / "once"))
         .trigger(once=True).start())
    q.awaitTermination(120)
    assert sizes == [18] and sorted(ids) == sorted(r["id"] for r in t.to_arrow().to_pylist())


# ---- batch reads: filters on evolved columns --------------------------------------------------------
FILTERS = {
    "n IS NULL": pc.field("n").is_null(),
    "n IS NOT NULL": pc.field("n").is_valid(),
    "n = 7": pc.field("n") == 7,
    "n < 100": pc.field("n") < 100,
    "x > 25": pc.field("x") > 25,
    "x > 3000000000": pc.field("x") > 3000000000,
    "x IN (10, 8589934592)": pc.field("x").isin([10, 2 ** 33]),
    "s2 = 'a'": pc.field("s2") == "a",
    "s2 > 'b'": pc.field("s2") > "b",
    "NOT (n = 7)": pc.field("n") != 7,
    "n IS NULL OR x = 20": pc.field("n").is_null() | (pc.field("x") == 20),
}


def evolved_table(catalog):
    s = pa.schema([("id", pa.int64()), ("x", pa.int32()), ("s", pa.string())])
    t = catalog.create_table("db.ev", s, primary_keys=["id"], options={"bucket": "1"})
    t.write_arrow(pa.table({"id": pa.array([1, 2, 3], pa.int64()), "x": pa.array([10, 20, 30], pa.int32()),
                            "s": ["a", "b", "c"]}))
    with t.update_schema() as u:
        u.add_column("n", pa.int32()).update_column("x", type=pa.int64()).rename_column("s", "s2")
    t = ps.Table.open(t.path)
    t.write_arrow(pa.table({"id": pa.array([4, 5], pa.int64()), "x": pa.array([2 ** 33, 40], pa.int64()),
                            "s2": ["d", "e"], "n": pa.array([7, None], pa.int32())}))
    return t


def test_pushed_filters_on_added_widened_and_renamed_columns(spark, catalog):
    """Each filter on a fresh DataFrame: old files lack n, hold x as INT and s2 under its old
    name; pruning by their statistics must not drop or keep a wrong row."""
    t = evolved_table(catalog)
    data = t.to_arrow()
    for sql, expr in FILTERS.items():
        want = sorted(data.filter(expr)["id"].to_pylist())
        got = sorted(r["id"] for r in spark.read.format("paimon").load(t.path).where(sql).collect())
        assert got == want, sql
    # time travel in the snapshot's own schema (old name) and in the newest (new name)
    old = spark.read.format("paimon").option("snapshot-id", 1).load(t.path)
    assert [r["id"] for r in old.where("s = 'a'").collect()] == [1]
    new = spark.read.format("paimon").option("scan.snapshot-id", 1).load(t.path)
    assert [r["id"] for r in new.where("s2 = 'b' AND n IS NULL").collect()] == [2]


def test_a_dataframe_queried_twice_does_not_keep_the_first_querys_filter(spark, catalog):
    """Spark <= 4.3 keeps a pushed-down query's plan on the DataFrame's source, so `register`
    leaves filter pushdown off by default (its docstring)."""
    t = evolved_table(catalog)
    df = spark.read.format("paimon").load(t.path)
    assert [r["id"] for r in df.where("x = 10").collect()] == [1]
    answers = {
        "no filter": sorted(r["id"] for r in df.collect()),
        "count": df.count(),
        "an OR (not pushed)": sorted(r["id"] for r in df.where("n IS NULL OR n = 7").collect()),
    }
    assert answers == {"no filter": [1, 2, 3, 4, 5], "count": 5, "an OR (not pushed)": [1, 2, 3, 4, 5]}


# ---- start options Java refuses in combination ------------------------------------------------------
CONFLICTS = [
    {"scan.mode": "latest-full", "scan.snapshot-id": "2"},
    {"scan.mode": "latest", "scan.snapshot-id": "2"},
    {"scan.mode": "compacted-full", "scan.snapshot-id": "2"},
    {"scan.mode": "latest", "scan.tag-name": "t2"},
    {"scan.mode": "from-timestamp", "scan.timestamp-millis": "TS", "scan.snapshot-id": "1"},
    {"scan.snapshot-id": "2", "scan.timestamp-millis": "TS"},
]


@pytest.mark.parametrize("options", CONFLICTS, ids=lambda o: "+".join(sorted(o)))
def test_contradicting_start_options_are_refused(catalog, options):
    from paimon_streaming.sources.datasource import source_schema, stream_reader
    t = catalog.create_table("db.c", SCHEMA)
    for i in range(4):
        t.write_arrow(rows([i], "v"))
    t.create_tag("t2", 2)
    ts = str(t.snapshot(3).time_millis)
    opts = {"path": t.path, **{k: ts if v == "TS" else v for k, v in options.items()}}
    with pytest.raises(InvalidOptionError):
        stream_reader(opts, source_schema(opts)).initialOffset()


def test_batch_read_refuses_latest_full_with_a_snapshot_id(spark, catalog):
    t = catalog.create_table("db.cb", SCHEMA)
    for i in range(3):
        t.write_arrow(rows([i], "v"))
    with pytest.raises(Exception, match="scan.snapshot-id"):
        spark.read.format("paimon").option("scan.mode", "latest-full").option("scan.snapshot-id", "1").load(t.path)


# ---- a rollback below the stream's position -------------------------------------------------------
def test_a_rollback_below_the_streams_position_is_not_a_silent_gap(spark, tmp_path, catalog):
    t = catalog.create_table("db.rb", SCHEMA, options={"write-only": "true"})
    for i in range(5):
        t.write_arrow(rows([i], "a"))                                         # snapshots 1..5
    ckpt = tmp_path / "ck"
    options = {"scan.mode": "from-snapshot", "scan.snapshot-id": 1}
    first = ok(run_batches(stream(spark, t.path, **options), ckpt))
    assert sorted(r["id"] for r in flat(first)) == [0, 1, 2, 3, 4]         # the stream is at snapshot 6
    t.rollback_to(3)
    for i in (40, 50, 60):
        t.write_arrow(rows([i], "n"))                                         # snapshots 4, 5, 6 again
    second, exc = run_batches(stream(spark, t.path, **options), ckpt)
    delivered = sorted(r["id"] for r in flat(second))
    # either the new commits are delivered, or the query fails saying the table was rolled back
    assert exc is not None or delivered == [40, 50, 60], delivered


def test_pushed_date_filters_of_the_calendar_switch(spark, catalog):
    """PySpark hands `DATE '1582-10-10'` (a day its hybrid calendar lacks) to a Python data
    source as 1582-10-15: pushed, `d = DATE '1582-10-10'` returned the 1582-10-15 row and
    `d < DATE '1582-10-10'` the 1582-10-10 one. Dates up to 1582-10-15 are left to Spark."""
    import datetime as dt
    from test_spark_source import conf
    days = [dt.date(1582, 10, 10), dt.date(1582, 10, 4), dt.date(1582, 10, 15), dt.date(1000, 1, 1),
            dt.date(1582, 10, 16), dt.date(2024, 1, 1)]
    t = catalog.create_table("db.dates", pa.schema([("id", pa.int32()), ("d", pa.date32())]))
    t.write_arrow(pa.table({"id": pa.array(range(len(days)), pa.int32()), "d": pa.array(days, pa.date32())}))
    with conf(spark, "spark.sql.python.filterPushdown.enabled", "true"):
        for i, day in enumerate(days):
            df = spark.read.format("paimon").load(t.path)
            assert sorted(r.id for r in df.where(f"d = DATE '{day}'").collect()) == [i], day
            assert sorted(r.id for r in spark.read.format("paimon").load(t.path).where(f"d < DATE '{day}'").collect()) \
                == sorted(j for j, other in enumerate(days) if other < day), day
