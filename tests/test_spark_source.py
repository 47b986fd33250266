"""The "paimon" source in local Spark: readStream (start modes, row kinds, admission control,
restarts, consumer files, expired snapshots) and read (filters with pruning, projection, time
travel, system tables), on tables written by our sink, our core and pypaimon."""
from __future__ import annotations

import decimal

import contextlib
import datetime
import json
import re

import pyarrow as pa
import pytest

from paimon_streaming.consumers import ConsumerManager
from paimon_streaming.errors import InvalidOptionError, SnapshotNotFoundError
from paimon_streaming.sinks import paimon_sink
from conftest import pypaimon_create, pypaimon_write, rows_by
from test_interop_java import fallback_table_renamed_after
from test_spark_sink import model_of, run_stream, upsert_batches, write_input_files
from test_streaming_scan import commit_noop, create_tag, expire_before

SCHEMA = pa.schema([("id", pa.int64()), ("v", pa.string()), ("dt", pa.string())])


@contextlib.contextmanager
def conf(spark, key: str, value: str):
    old = spark.conf.get(key, None)
    spark.conf.set(key, value)
    try:
        yield
    finally:
        if old is None:
            spark.conf.unset(key)
        else:
            spark.conf.set(key, old)


def stream(spark, path, **options):
    reader = spark.readStream.format("paimon")
    for k, v in options.items():
        reader = reader.option(k, str(v))
    return reader.load(path)


def run_batches(df, checkpoint, fail_at: int | None = None) -> tuple[list[list[dict]], Exception | None]:
    """Run a stream with Trigger.AvailableNow; rows of each micro-batch (fail_at: raise in that batch)."""
    batches: list[list[dict]] = []

    def collect(batch_df, batch_id):
        if batch_id == fail_at:
            raise RuntimeError(f"injected failure in batch {batch_id}")
        batches.append([r.asDict() for r in batch_df.collect()])

    q = (df.writeStream.foreachBatch(collect).option("checkpointLocation", str(checkpoint))
         .trigger(availableNow=True).start())
    try:
        q.awaitTermination(300)
    except Exception:  # noqa: BLE001 - reported through q.exception()
        pass
    return batches, q.exception()


def ok(result):
    batches, exc = result
    assert exc is None, exc
    return batches


def flat(batches):
    return [r for b in batches for r in b]


def apply_changes(rows, key=("id", "dt"), kind="_kind") -> list[dict]:
    model = {}
    for r in rows:
        k = tuple(r[c] for c in key)
        if r[kind] in ("+I", "+U"):
            model[k] = {c: v for c, v in r.items() if c != kind}
        elif r[kind] == "-D":
            model.pop(k, None)
    return sorted(model.values(), key=lambda r: tuple(r[c] for c in key))


def pk_table(catalog, name="db.pk"):
    return catalog.create_table(name, SCHEMA, primary_keys=["id", "dt"], partition_keys=["dt"],
                                options={"bucket": "2"})


def batch(ids, v="v", dt=None, op=None):
    cols = {"id": pa.array(ids, pa.int64()), "v": [f"{v}{i}" for i in ids], "dt": [dt or f"d{i % 3}" for i in ids]}
    if op:
        cols["op"] = [op] * len(ids)
    return pa.table(cols)


# ---- round trips -----------------------------------------------------------------------------------
def test_sink_to_source_round_trip(spark, tmp_path):
    """foreachBatch(paimon_sink) writes a stream into a primary-key table; readStream gives back
    exactly what was written: as changes from the first snapshot, and as the latest state."""
    batches = upsert_batches(3, 40)
    write_input_files(tmp_path / "in", batches)
    path = str(tmp_path / "wh/db.db/pk")
    run_stream(spark, tmp_path / "in", "id long, v string, dt string",
               paimon_sink(path, options={"primary-key": "id,dt", "partition": "dt", "bucket": "2"}),
               tmp_path / "ck-sink")
    expected = sorted(model_of(batches, ("id", "dt")).values(), key=lambda r: (r["id"], r["dt"]))
    changes = ok(run_batches(stream(spark, path, rowKindColumn="_kind", **{
        "scan.mode": "from-snapshot", "scan.snapshot-id": 1, "max-snapshots-per-trigger": 1}), tmp_path / "c1"))
    # one micro-batch per sink batch, holding that batch's rows (all +I: new keys or upserts)
    assert [rows_by(pa.Table.from_pylist(b).drop_columns(["_kind"]), "id", "dt") for b in changes] == \
        [rows_by(b, "id", "dt") for b in batches]
    assert apply_changes(flat(changes)) == expected
    full = ok(run_batches(stream(spark, path), tmp_path / "c2"))
    assert len(full) == 1 and rows_by(pa.Table.from_pylist(flat(full)), "id", "dt") == expected
    assert rows_by(spark.read.format("paimon").load(path).toArrow(), "id", "dt") == expected


def test_pypaimon_table_streamed_snapshot_by_snapshot(spark, tmp_path):
    warehouse = str(tmp_path / "wh")
    schema = pa.schema([pa.field("id", pa.int64(), False), ("v", pa.string()), ("x", pa.float64())])
    pypaimon_create(warehouse, "db.py", schema)
    writes = [pa.table({"id": list(range(i * 10, i * 10 + 5)), "v": [f"w{i}"] * 5, "x": [i / 2] * 5}, schema=schema)
              for i in range(3)]
    for w in writes:
        pypaimon_write(warehouse, "db.py", w)
    df = (spark.readStream.format("paimon").option("table", "db.py").option("warehouse", warehouse)
          .option("scan.mode", "from-snapshot").option("scan.snapshot-id", "1")
          .option("max-snapshots-per-trigger", "1").load())
    got = ok(run_batches(df, tmp_path / "ck"))
    assert [rows_by(pa.Table.from_pylist(b), "id") for b in got] == [rows_by(w, "id") for w in writes]


# ---- row kinds -----------------------------------------------------------------------------------------
def test_primary_key_changes_with_row_kinds(spark, tmp_path, catalog):
    t = pk_table(catalog)
    t.write_arrow(batch([1, 2, 3]))
    t.write_arrow(batch([2], v="u", op="+U"), row_kind_column="op")
    t.write_arrow(batch([3], op="-D"), row_kind_column="op")
    commit_noop(t)  # a COMPACT snapshot adds no rows
    df = stream(spark, t.path, rowKindColumn="_kind", **{"scan.mode": "from-snapshot", "scan.snapshot-id": 1})
    assert df.schema["_kind"].dataType.simpleString() == "string"
    rows = flat(ok(run_batches(df, tmp_path / "ck")))
    assert sorted((r["id"], r["v"], r["_kind"]) for r in rows) == \
        [(1, "v1", "+I"), (2, "u2", "+U"), (2, "v2", "+I"), (3, "v3", "+I"), (3, "v3", "-D")]
    # without a row kind column the deletion is dropped
    plain = flat(ok(run_batches(stream(spark, t.path, **{"scan.mode": "from-snapshot", "scan.snapshot-id": 2}),
                                tmp_path / "ck2")))
    assert plain == [{"id": 2, "v": "u2", "dt": "d2"}]


def test_lookup_changelog_from_the_sink_streams_updates_as_pairs(spark, tmp_path, catalog):
    """foreachBatch into a deletion-vector table with changelog-producer = lookup, read back as
    a stream of +I/-U/+U rows; replaying them gives the table."""
    t = catalog.create_table("db.cl", SCHEMA, primary_keys=["id", "dt"], partition_keys=["dt"],
                             options={"bucket": "2", "deletion-vectors.enabled": "true",
                                      "changelog-producer": "lookup"})
    batches = upsert_batches(3, 6)
    write_input_files(tmp_path / "in", batches)
    run_stream(spark, tmp_path / "in", "id BIGINT, v STRING, dt STRING",
               paimon_sink(t.path, commit_user="cl-writer"), tmp_path / "ck-w")
    df = stream(spark, t.path, rowKindColumn="_kind", **{"scan.mode": "from-snapshot", "scan.snapshot-id": 1})
    rows = flat(ok(run_batches(df, tmp_path / "ck-r")))
    kinds = [r["_kind"] for r in rows]
    assert kinds.count("-U") == kinds.count("+U") == 6 and kinds.count("+I") == 12  # 3 x 6 rows, 3 ids repeat twice
    assert apply_changes(rows) == sorted(t.to_arrow().to_pylist(), key=lambda r: (r["id"], r["dt"]))


# ---- admission control ---------------------------------------------------------------------------------
def test_backlog_is_read_in_bounded_micro_batches(spark, tmp_path, catalog):
    t = catalog.create_table("db.ap", SCHEMA, partition_keys=["dt"], options={"write-only": "true"})  # files stay
    for i in range(5):
        t.write_arrow(batch([10 * i + j for j in range(6)]))       # 3 files per snapshot
    want = sorted(r["id"] for r in t.to_arrow().to_pylist())
    for name, options, sizes in (("files", {"max-files-per-trigger": 4}, [4, 4, 4, 3]),
                                 ("snapshots", {"max-snapshots-per-trigger": 2}, [12, 12, 6])):
        got = ok(run_batches(stream(spark, t.path, **{"scan.mode": "from-snapshot", "scan.snapshot-id": 1},
                                    **options), tmp_path / name))
        assert sorted(r["id"] for r in flat(got)) == want, name
        if name == "snapshots":
            assert [len(b) for b in got] == sizes
            assert [sorted({r["id"] // 10 for r in b}) for b in got] == [[0, 1], [2, 3], [4]]
        else:
            assert len(got) == len(sizes)
    # the initial full scan (latest-full) is bounded too
    got = ok(run_batches(stream(spark, t.path, **{"max-files-per-trigger": 8}), tmp_path / "full"))
    assert len(got) == 2 and sorted(r["id"] for r in flat(got)) == want


# ---- restarts ------------------------------------------------------------------------------------------
def test_restart_from_checkpoint_loses_and_repeats_nothing(spark, tmp_path, catalog):
    t = catalog.create_table("db.r", SCHEMA, partition_keys=["dt"])
    for i in range(4):
        t.write_arrow(batch([10 * i + j for j in range(3)]))
    ckpt = tmp_path / "ck"
    df = stream(spark, t.path, **{"scan.mode": "from-snapshot", "scan.snapshot-id": 1,
                                  "max-snapshots-per-trigger": 1, "consumer-id": "r1"})
    first, exc = run_batches(df, ckpt, fail_at=2)            # batch 2 is planned, then fails
    assert "injected failure" in str(exc) and len(first) == 2
    assert ConsumerManager(t.file_io, t.path).consumers() == {"r1": 3}
    t.write_arrow(batch([100, 101]))                          # more data while the query is down
    second = ok(run_batches(df, ckpt))
    ids = sorted(r["id"] for r in flat(first + second))
    assert ids == sorted(r["id"] for r in t.to_arrow().to_pylist())   # each row exactly once
    assert len(second) == 3                                   # the failed batch again, then 2 more
    # Spark commits a batch's offsets to the source when the next batch starts, so the consumer
    # file trails the last batch of a run by one (keeping more snapshots, never fewer)
    assert ConsumerManager(t.file_io, t.path).consumers() == {"r1": 5}
    t.write_arrow(batch([200]))                               # snapshot 7: 6 merged a partition's five files
    third = ok(run_batches(df, ckpt))
    assert [r["id"] for r in flat(third)] == [200]
    assert ConsumerManager(t.file_io, t.path).consumers() == {"r1": 7}


def test_restart_in_the_first_batch_keeps_its_start(spark, tmp_path, catalog):
    """latest-full resolves its start when the query starts; a restart before batch 0 committed
    must replay the same batch, even though the table has a newer snapshot by then."""
    t = pk_table(catalog)
    t.write_arrow(batch([1, 2, 3]))
    t.write_arrow(batch([2], v="u"))
    ckpt = tmp_path / "ck"
    df = stream(spark, t.path, rowKindColumn="_kind")
    first, exc = run_batches(df, ckpt, fail_at=0)
    assert exc is not None and first == []
    t.write_arrow(batch([4], v="n"))
    second = ok(run_batches(stream(spark, t.path, rowKindColumn="_kind"), ckpt))
    assert [sorted((r["id"], r["v"]) for r in b) for b in second] == \
        [[(1, "v1"), (2, "u2"), (3, "v3")], [(4, "n4")]]


def test_expired_snapshot_fails_the_query_clearly(spark, tmp_path, catalog):
    t = catalog.create_table("db.e", SCHEMA)
    for i in range(4):
        t.write_arrow(batch([i]))
    ckpt = tmp_path / "ck"
    df = stream(spark, t.path, **{"scan.mode": "from-snapshot", "scan.snapshot-id": 1, "max-snapshots-per-trigger": 1})
    first, exc = run_batches(df, ckpt, fail_at=1)
    assert len(first) == 1
    expire_before(t, 3)                                       # the stream still needs snapshot 2
    _, exc = run_batches(df, ckpt)
    msg = str(exc)
    assert "snapshot 2" in msg and "consumer-id" in msg and "snapshot.num-retained.min" in msg


def test_a_tag_start_whose_snapshot_expired(spark, tmp_path, catalog):
    """A stream from a tag whose snapshot expired reads the tag's state, then what follows: cut by
    max-files-per-trigger (marking a batch failed: snapshot 2 does not exist), and with a
    consumer-id (its start, recorded as {"nextSnapshot": 2, "fullRead": true}, was refused as expired)."""
    from pyspark.sql import functions as F
    t = pk_table(catalog, "db.tg")
    t.write_arrow(batch([1, 2]))
    t.write_arrow(batch([2, 3], v="u"))
    create_tag(t, "two", 2)
    t.write_arrow(batch([4]))
    expire_before(t, 3)
    queries = {"limit": {"max-files-per-trigger": 1}, "consumer": {"consumer-id": "c1"}}
    union = None
    for name, options in queries.items():
        df = stream(spark, t.path, **{"scan.tag-name": "two", **options}).withColumn("q", F.lit(name))
        union = df if union is None else union.unionByName(df)
    rows = flat(ok(run_batches(union, tmp_path / "ck")))
    for name in queries:
        assert sorted((r["id"], r["v"]) for r in rows if r["q"] == name) == \
            [(1, "v1"), (2, "u2"), (3, "u3"), (4, "v4")], name


# ---- start modes ---------------------------------------------------------------------------------------
def test_every_scan_mode(spark, tmp_path, catalog):
    from pyspark.sql import functions as F
    t = catalog.create_table("db.m", SCHEMA)
    for i in range(4):
        t.write_arrow(batch([i]))
    times = [s.time_millis for s in t.snapshots()]
    create_tag(t, "two", 2)
    t.write_arrow(batch([2], v="dup"))                        # snapshot 5
    modes = {
        "latest-full": ({}, [0, 1, 2, 2, 3]),
        "from-snapshot": ({"scan.mode": "from-snapshot", "scan.snapshot-id": 3}, [2, 2, 3]),
        "from-snapshot-full": ({"scan.mode": "from-snapshot-full", "scan.snapshot-id": 3}, [0, 1, 2, 2, 3]),
        "from-timestamp": ({"scan.mode": "from-timestamp", "scan.timestamp-millis": times[3]}, [2, 3]),
        "tag": ({"scan.tag-name": "two"}, [0, 1, 2, 2, 3]),
        "latest": ({"scan.mode": "latest"}, []),
    }
    # one query with one source per mode (a union), so the test starts a single query
    union = None
    for name, (options, _) in modes.items():
        df = stream(spark, t.path, **options).withColumn("mode", F.lit(name))
        union = df if union is None else union.unionByName(df)
    rows = flat(ok(run_batches(union, tmp_path / "modes")))
    for name, (_, want) in modes.items():
        assert sorted(r["id"] for r in rows if r["mode"] == name) == want, name
    # latest: only what is committed after the query started
    q = (stream(spark, t.path, **{"scan.mode": "latest"}).writeStream.format("memory").queryName("paimon_latest")
         .option("checkpointLocation", str(tmp_path / "latest")).start())
    try:
        q.processAllAvailable()
        t.write_arrow(batch([7, 8]))
        q.processAllAvailable()
        assert sorted(r["id"] for r in spark.table("paimon_latest").collect()) == [7, 8]
    finally:
        q.stop()


def test_compacted_full_reads_from_the_newest_full_compaction(spark, tmp_path, catalog):
    """`scan.mode = compacted-full` on a table with `full-compaction.delta-commits`: a batch read
    sees the newest full compaction, a stream starts there (read whole) and then follows."""
    t = catalog.create_table("db.cf", SCHEMA, primary_keys=["id"],
                             options={"bucket": "1", "full-compaction.delta-commits": "2"})
    t.write_arrow(batch([1], v="old"), commit_user="w", commit_identifier=1)
    t.write_arrow(batch([2], v="old"), commit_user="w", commit_identifier=2)   # due: a full compaction
    t.write_arrow(batch([2], v="new"), commit_user="w", commit_identifier=3)
    read = spark.read.format("paimon").option("scan.mode", "compacted-full").load(t.path)
    assert sorted((r["id"], r["v"]) for r in read.collect()) == [(1, "old1"), (2, "old2")]
    latest = spark.read.format("paimon").load(t.path)
    assert sorted((r["id"], r["v"]) for r in latest.collect()) == [(1, "old1"), (2, "new2")]
    rows = flat(ok(run_batches(stream(spark, t.path, **{"scan.mode": "compacted-full"}), tmp_path / "cf")))
    assert sorted((r["id"], r["v"]) for r in rows) == [(1, "old1"), (2, "new2"), (2, "old2")]


def test_stream_reader_offsets(catalog):
    """The stream reader's Spark-facing methods, called as Spark's planner process calls them."""
    from pyspark.sql.streaming.datasource import ReadAllAvailable, ReadMaxFiles
    from paimon_streaming.sources.datasource import source_schema, stream_reader
    t = catalog.create_table("db.o", SCHEMA, partition_keys=["dt"])
    for i in range(3):
        t.write_arrow(batch([3 * i, 3 * i + 1]))               # 2 files per snapshot
    options = {"path": t.path, "max-files-per-trigger": "3", "consumer-id": "o1", "rowKindColumn": "k"}
    r = stream_reader(options, source_schema(options))
    assert r.getDefaultReadLimit() == ReadMaxFiles(3)
    start = r.initialOffset()
    assert start == {"snapshot": 3, "units": 0, "full": True}
    end = r.latestOffset(start, r.getDefaultReadLimit())
    assert end == {"snapshot": 3, "units": 3, "full": True, "from": start,
                   "readTime": t.snapshot(3).time_millis}   # the last snapshot read (rollback check)
    parts = r.partitions({"snapshot": 9, "units": 0, "full": True}, end)   # a re-resolved start is ignored
    rows = [row for p in parts for b in r.read(p) for row in b.to_pylist()]
    assert len(rows) == 3 and {row["k"] for row in rows} == {"+I"}   # 3 of the 6 one-row files
    r.commit(end)
    assert ConsumerManager(t.file_io, t.path).consumers() == {"o1": 3}
    end2 = r.latestOffset(end, ReadAllAvailable())
    assert end2 == {"snapshot": 4, "units": 0, "full": False, "readTime": t.snapshot(3).time_millis}
    assert r.latestOffset(end2, ReadAllAvailable()) == end2           # nothing new: offset unchanged
    assert r.reportLatestOffset() == {"snapshot": 4, "units": 0, "full": False}
    r.prepareForTriggerAvailableNow()
    t.write_arrow(batch([50]))
    assert r.latestOffset(end2, ReadAllAvailable()) == end2           # AvailableNow: nothing after its start
    only_snapshots = stream_reader({"path": t.path, "max-snapshots-per-trigger": "1"}, source_schema({"path": t.path}))
    assert isinstance(only_snapshots.getDefaultReadLimit(), ReadMaxFiles)
    assert stream_reader({"path": t.path}, source_schema({"path": t.path})).getDefaultReadLimit() == \
        ReadAllAvailable()
    with pytest.raises(InvalidOptionError, match="scan.snapshot-id"):
        stream_reader({"path": t.path, "snapshot-id": "1"}, source_schema({"path": t.path}))
    with pytest.raises(InvalidOptionError, match="stream"):
        stream_reader({"path": t.path + "$snapshots"}, source_schema({"path": t.path + "$snapshots"}))


def stream_reader_rows(options: dict) -> list[tuple]:
    """Every (kind, id) the stream reader reads until idle, driven as Spark's planner drives it."""
    from pyspark.sql.streaming.datasource import ReadAllAvailable
    from paimon_streaming.sources.datasource import source_schema, stream_reader
    r = stream_reader(options, source_schema(options))
    start = r.initialOffset()
    end = r.latestOffset(start, ReadAllAvailable())
    return sorted((row["k"], row["id"]) for p in r.partitions(start, end) for b in r.read(p) for row in b.to_pylist())


def test_streaming_read_append_overwrite_as_a_read_option_and_a_table_option(catalog):
    """The source streams an append table's OVERWRITE rows with `streaming-read-append-overwrite`
    (Java's key), as a read option (it was refused) or the table's (it was ignored); a read
    option of false overrides the table's true."""
    t = catalog.create_table("db.aow", SCHEMA, options={"streaming-read-append-overwrite": "true"})
    t.write_arrow(batch([1]))
    t.write_arrow(batch([2]), overwrite=True)
    options = {"path": t.path, "rowKindColumn": "k", "scan.mode": "from-snapshot", "scan.snapshot-id": "1"}
    assert stream_reader_rows(options) == [("+I", 1), ("+I", 2)]
    assert stream_reader_rows({**options, "streaming-read-append-overwrite": "false"}) == [("+I", 1)]
    t.update_schema().remove_option("streaming-read-append-overwrite").commit()
    t.write_arrow(batch([3]))
    assert stream_reader_rows(options) == [("+I", 1), ("+I", 3)]
    assert stream_reader_rows({**options, "streaming-read-append-overwrite": "true"}) == \
        [("+I", 1), ("+I", 2), ("+I", 3)]


def test_a_from_timestamp_query_starts_in_the_long_lived_changelogs(catalog):
    """The source's start is the core's: a from-timestamp query of a table whose older commits
    survive only as long-lived changelogs reads them from its instant on (it started at the
    earliest snapshot)."""
    from pyspark.sql.streaming.datasource import ReadAllAvailable
    from paimon_streaming.sources.datasource import source_schema, stream_reader
    t = catalog.create_table("db.lived", SCHEMA, primary_keys=["id", "dt"], partition_keys=["dt"],
                             options={"bucket": "1", "changelog-producer": "input",
                                      "changelog.num-retained.max": "100", "write-only": "true"})
    for i in range(1, 9):
        t.write_arrow(batch([i]))
    times = [s.time_millis for s in t.snapshots()]
    t.expire_snapshots(retain_max=2, retain_min=1)
    options = {"path": t.path, "rowKindColumn": "k", "scan.timestamp-millis": str(times[2] - 1)}
    reader = stream_reader(options, source_schema(options))
    start = reader.initialOffset()
    assert start["snapshot"] == 3 < t.snapshot_manager.earliest_id()
    end = reader.latestOffset(start, ReadAllAvailable())
    assert sorted(row["id"] for p in reader.partitions(start, end) for b in reader.read(p) for row in b.to_pylist()) \
        == [i for i, m in enumerate(times, 1) if m >= times[2] - 1]


def test_a_query_from_a_consumer_beyond_the_table_is_refused(catalog):
    """A consumer ahead of the table's next commit (a rollback that left it there) is refused at
    the query's start, not resumed there to skip the commits up to it; its consumer file is
    left as it was."""
    from paimon_streaming.sources.datasource import source_schema, stream_reader
    t = catalog.create_table("db.ahead", SCHEMA, partition_keys=["dt"])
    for i in range(3):
        t.write_arrow(batch([i]))
    ConsumerManager(t.file_io, t.path).record("c", 7)
    options = {"path": t.path, "consumer-id": "c"}
    with pytest.raises(SnapshotNotFoundError, match="consumer 'c' is at snapshot 7 .*latest snapshot 3"):
        stream_reader(options, source_schema(options)).initialOffset()
    assert ConsumerManager(t.file_io, t.path).consumers() == {"c": 7}


def test_an_idle_query_keeps_its_consumer_alive(catalog, monkeypatch):
    """`consumer.expiration-time` counts from the consumer file's last write: an idle query (all
    read, nothing new) rewrote it never, so expiration removed the consumer of a live stream,
    and with it the snapshots it reads next. It rewrites the same progress once a minute, as
    Flink's checkpoints do."""
    import os
    from pyspark.sql.streaming.datasource import ReadAllAvailable
    from paimon_streaming.sources import stream_reader as module
    from paimon_streaming.sources.datasource import source_schema, stream_reader
    t = catalog.create_table("db.idle", SCHEMA, partition_keys=["dt"])
    t.write_arrow(batch([1]))
    options = {"path": t.path, "consumer-id": "c"}
    reader = stream_reader(options, source_schema(options))
    start = reader.initialOffset()
    end = reader.latestOffset(start, ReadAllAvailable())
    reader.commit(end)
    consumers = ConsumerManager(t.file_io, t.path)
    file = consumers.path("c")
    os.utime(file, (1, 1))   # written long ago
    assert reader.latestOffset(end, ReadAllAvailable()) == end and os.path.getmtime(file) == 1  # within the minute
    monkeypatch.setattr(module, "CONSUMER_REFRESH_S", 0.0)
    assert reader.latestOffset(end, ReadAllAvailable()) == end
    assert os.path.getmtime(file) > 1 and consumers.consumers() == {"c": 2}


def test_a_query_started_on_an_empty_table_resolves_its_start_at_the_first_snapshot(catalog):
    """initialOffset on a table without a snapshot is pending (no consumer progress recorded, as
    Java's); the first latestOffset that sees a snapshot resolves it by the query's options and
    records it in the batch's end (FROM), even for an empty batch: from-timestamp after the
    commits reads none of them (it read them all), latest-full the first snapshot's state (a
    first INSERT OVERWRITE was skipped)."""
    from pyspark.sql.streaming.datasource import ReadAllAvailable
    from paimon_streaming.sources.datasource import source_schema, stream_reader
    t = catalog.create_table("db.empty", SCHEMA, partition_keys=["dt"])
    future = {"path": t.path, "rowKindColumn": "k", "scan.timestamp-millis": "4102444800000", "consumer-id": "c"}
    readers = [stream_reader(o, source_schema(o)) for o in (future, {"path": t.path, "rowKindColumn": "k"})]
    starts = [r.initialOffset() for r in readers]
    assert starts == [{"snapshot": 1, "units": 0, "full": False, "pending": True}] * 2
    assert readers[0].latestOffset(starts[0], ReadAllAvailable()) == starts[0]
    # Spark may run batch 0 from the pending start to itself (no offset committed yet): empty
    assert [r.partitions(s, s) for r, s in zip(readers, starts)] == [[], []]
    assert ConsumerManager(t.file_io, t.path).consumers() == {}
    t.write_arrow(batch([1, 2]), overwrite=True)
    ends = [r.latestOffset(s, ReadAllAvailable()) for r, s in zip(readers, starts)]
    assert ends[0] == {"snapshot": 2, "units": 0, "full": False, "from": {"snapshot": 2, "units": 0, "full": False,
                                                                            "readTime": t.snapshot(1).time_millis},
                       "readTime": t.snapshot(1).time_millis}
    rows = [sorted((row["k"], row["id"]) for p in r.partitions(s, e) for b in r.read(p) for row in b.to_pylist())
            for r, s, e in zip(readers, starts, ends)]
    assert rows == [[], [("+I", 1), ("+I", 2)]]
    t.write_arrow(batch([3]))
    assert readers[0].latestOffset(ends[0], ReadAllAvailable())["snapshot"] == 3   # reads snapshot 2 on


def test_available_now_reads_a_start_committed_after_its_prepare(catalog):
    """Spark calls prepareForTriggerAvailableNow (which fixes the last snapshot to read) before
    initialOffset: a commit between them put latest-full's start beyond that snapshot, and the
    run read nothing, not even the table's state. A full start is read whole."""
    from pyspark.sql.streaming.datasource import ReadAllAvailable
    from paimon_streaming.sources.datasource import source_schema, stream_reader
    t = catalog.create_table("db.now", SCHEMA, partition_keys=["dt"])
    t.write_arrow(batch([1]))
    options = {"path": t.path, "rowKindColumn": "k", "max-files-per-trigger": "1"}
    r = stream_reader(options, source_schema(options))
    r.prepareForTriggerAvailableNow()
    t.write_arrow(batch([2]))
    start = r.initialOffset()
    assert start == {"snapshot": 2, "units": 0, "full": True}
    offsets, rows = [start], []
    while (end := r.latestOffset(offsets[-1], r.getDefaultReadLimit())) != offsets[-1]:
        rows += [(row["k"], row["id"]) for p in r.partitions(offsets[-1], end) for b in r.read(p)
                 for row in b.to_pylist()]
        offsets.append(end)
    assert sorted(rows) == [("+I", 1), ("+I", 2)] and len(offsets) == 3   # one file per batch
    t.write_arrow(batch([3]))
    assert r.latestOffset(offsets[-1], ReadAllAvailable()) == offsets[-1]   # nothing after its start


def test_min_rows_per_trigger_gathers_a_trickle_until_the_delay(catalog, monkeypatch):
    """read.stream.minRowsPerTrigger + read.stream.maxTriggerDelayMs, as Paimon's Spark source."""
    from pyspark.sql.streaming.datasource import ReadAllAvailable, ReadMaxRows, ReadMinRows
    from paimon_streaming.sources import stream_reader as stream_module
    from paimon_streaming.sources.datasource import source_schema, stream_reader
    clock = [1_000.0]
    monkeypatch.setattr(stream_module.time, "time", lambda: clock[0])
    t = catalog.create_table("db.trickle", SCHEMA, partition_keys=["dt"])
    t.write_arrow(batch([0, 1]))
    options = {"path": t.path, "scan.mode": "latest", "read.stream.minRowsPerTrigger": "5",
               "read.stream.maxTriggerDelayMs": "30000"}
    r = stream_reader(options, source_schema(options))
    assert r.getDefaultReadLimit() == ReadMinRows(5)
    start = r.initialOffset()
    t.write_arrow(batch([2]))
    first = r.latestOffset(start, r.getDefaultReadLimit())
    assert first != start  # the first batch of a run is never held back
    t.write_arrow(batch([3, 4]))
    clock[0] += 10
    assert r.latestOffset(first, r.getDefaultReadLimit()) == first  # 2 rows < 5, 10 s < 30 s: wait
    t.write_arrow(batch([5, 6, 7]))
    second = r.latestOffset(first, r.getDefaultReadLimit())
    assert second["snapshot"] == 5  # 5 rows: a batch, of both snapshots
    t.write_arrow(batch([8]))
    clock[0] += 29
    assert r.latestOffset(second, r.getDefaultReadLimit()) == second
    clock[0] += 2  # 31 s since the last batch: whatever is there
    assert r.latestOffset(second, r.getDefaultReadLimit())["snapshot"] == 6
    t.write_arrow(batch([9]))
    assert r.latestOffset({"snapshot": 6, "units": 0, "full": False}, ReadAllAvailable())["snapshot"] == 7  # Once
    limited = stream_reader({**options, "read.stream.maxRowsPerTrigger": "100"}, source_schema(options))
    assert limited.getDefaultReadLimit() == ReadMaxRows(100)  # the minimum still applies with a maximum
    limited._last_trigger_ms = clock[0] * 1000  # as if it had just made a batch
    assert limited.latestOffset({"snapshot": 6, "units": 0, "full": False},
                                limited.getDefaultReadLimit()) == {"snapshot": 6, "units": 0, "full": False}
    limited.prepareForTriggerAvailableNow()  # AvailableNow must finish: no waiting
    assert limited.latestOffset({"snapshot": 6, "units": 0, "full": False},
                                limited.getDefaultReadLimit())["snapshot"] == 7
    with pytest.raises(InvalidOptionError, match="go together"):
        stream_reader({"path": t.path, "read.stream.minRowsPerTrigger": "5"}, source_schema(options))


# ---- batch reads ---------------------------------------------------------------------------------------
def test_batch_filters_prune_and_filter_exactly(spark, tmp_path, catalog):
    t = catalog.create_table("db.f", pa.schema([("id", pa.int64()), ("v", pa.string()), ("x", pa.float64()),
                                                ("dt", pa.string())]), partition_keys=["dt"])
    for p in range(3):
        ids = list(range(p * 100, p * 100 + 50))
        t.write_arrow(pa.table({"id": ids, "v": [f"s{i}" for i in ids], "x": [i / 4 for i in ids],
                                "dt": [f"p{p}"] * 50}))
    one_task_per_file = {"source.split.target-size": "1 b"}

    def read(**options):
        r = spark.read.format("paimon")
        for k, v in {**one_task_per_file, **options}.items():
            r = r.option(k, v)
        return r.load(t.path)

    with conf(spark, "spark.sql.python.filterPushdown.enabled", "true"):
        df = read().where("dt = 'p1' and id >= 120")
        assert sorted(r.id for r in df.collect()) == list(range(120, 150))
        assert df.rdd.getNumPartitions() == 1                       # partitions p0, p2 pruned
        assert read().where("id < 10").rdd.getNumPartitions() == 1  # min/max stats pruned p1, p2
        assert read().where("id in (5, 205)").rdd.getNumPartitions() == 2
        assert read().rdd.getNumPartitions() == 3
        # filters Spark keeps (float, LIKE, OR) still give exact results
        assert sorted(r.id for r in read().where("x > 70.0 or v like 's1%'").collect()) == \
            sorted(i for p in range(3) for i in range(p * 100, p * 100 + 50) if i / 4 > 70.0 or str(i).startswith("1"))
        assert read().where("dt <> 'p0' and v is not null").count() == 100
    # without Spark's pushdown setting the source still reads correctly (Spark filters)
    with conf(spark, "spark.sql.python.filterPushdown.enabled", "false"):
        df = read().where("dt = 'p1' and id >= 120")
        assert sorted(r.id for r in df.collect()) == list(range(120, 150))
        assert df.rdd.getNumPartitions() == 3



def test_pushdown_prunes_by_a_querys_filters(spark, catalog):
    """With `register(spark, filter_pushdown=True)`'s setting a query's filters prune partitions."""
    import paimon_streaming as ps
    t = catalog.create_table("db.pushed", pa.schema([("id", pa.int64()), ("dt", pa.string())]), partition_keys=["dt"])
    for p in range(3):
        t.write_arrow(pa.table({"id": [p], "dt": [f"p{p}"]}))
    with conf(spark, ps.FILTER_PUSHDOWN, "true"):
        df = spark.read.format("paimon").option("source.split.target-size", "1 b").load(t.path).where("dt = 'p1'")
        assert [r.id for r in df.collect()] == [1] and df.rdd.getNumPartitions() == 1


class _Session:
    """What `register` touches of a classic SparkSession, started with `started_with`."""

    def __init__(self, started_with: dict[str, str]):
        self.registered, self.settings = [], {}
        self.dataSource = type("R", (), {"register": lambda _, cls: self.registered.append(cls.name())})()
        self.conf = type("C", (), {"set": lambda _, k, v: self.settings.__setitem__(k, v),
                                   "get": lambda _, k, default=None: self.settings.get(k, started_with.get(k, default))})()
        conf = type("SC", (), {"contains": lambda _, k: k in started_with})()
        self.sparkContext = type("Ctx", (), {"getConf": lambda _: conf})()


def test_register_keeps_the_sessions_own_pushdown_setting():
    import paimon_streaming as ps
    fresh = _Session({})
    ps.register(fresh)  # off by default: Spark <= 4.3 reuses a pushed-down plan (register's docstring)
    assert fresh.registered == ["paimon", "kafka-python"] and fresh.settings == {}
    opted_in = _Session({})
    ps.register(opted_in, filter_pushdown=True)
    assert opted_in.registered == ["paimon", "kafka-python"] and opted_in.settings == {ps.FILTER_PUSHDOWN: "true"}
    started_off = _Session({ps.FILTER_PUSHDOWN: "false"})  # builder .config / --conf / spark-defaults
    ps.register(started_off, filter_pushdown=True)
    assert started_off.settings == {}

@pytest.mark.parametrize("index, options", [
    ("bloom", {"file-index.bloom-filter.columns": "v", "file-index.bloom-filter.v.items": "100",
               "file-index.bloom-filter.v.fpp": "0.001"}),
    ("bitmap", {"file-index.bitmap.columns": "v"}),
])
def test_pushed_down_equalities_skip_files_by_their_indexes(spark, catalog, index, options):
    """`=` and `IN` on a column min/max statistics cannot prune: the files' bloom-filter or
    bitmap indexes leave only the files holding the values to read."""
    t = catalog.create_table(f"db.{index}", pa.schema([("id", pa.int64()), ("v", pa.string())]), options=options)
    for p in range(3):
        ids = list(range(p * 100, p * 100 + 50))
        t.write_arrow(pa.table({"id": ids, "v": [f"s{i}" for i in ids]}))  # "s0".."s49" spans "s120"

    def read():
        return spark.read.format("paimon").option("source.split.target-size", "1 b").load(t.path)

    with conf(spark, "spark.sql.python.filterPushdown.enabled", "true"):
        df = read().where("v = 's120'")
        assert [r.id for r in df.collect()] == [120] and df.rdd.getNumPartitions() == 1
        df = read().where("v in ('s7', 's207', 's77')")
        assert sorted(r.id for r in df.collect()) == [7, 207] and df.rdd.getNumPartitions() == 2
        assert read().where("v = 's1200'").collect() == []
        assert read().where("v > 's120'").rdd.getNumPartitions() == 3


def test_a_read_schema_names_nested_fields_exactly(spark, catalog):
    """`.schema("s struct<aa:int>")` over a stored ROW<Aa INT> read nulls, as did a field the ROW
    lacks (top-level names match in any case, unknown ones were refused)."""
    t = catalog.create_table("db.nested", pa.schema([("id", pa.int64()), ("s", pa.struct([("Aa", pa.int32())])),
                                                     ("l", pa.list_(pa.struct([("Bb", pa.string())])))]))
    t.write_arrow(pa.table({"id": [1], "s": [{"Aa": 10}], "l": [[{"Bb": "x"}]]}))
    read = spark.read.format("paimon")
    assert [tuple(r) for r in read.schema("ID long, S struct<Aa:int>").load(t.path).collect()] == [(1, (10,))]
    for spec, field in (("id long, s struct<aa:int>", "s.aa"), ("id long, s struct<Aa:int, zz:string>", "s.zz"),
                        ("id long, l array<struct<bb:string>>", "l.element.bb")):
        with pytest.raises(Exception, match=f"field '{field}' of the read schema"):
            read.schema(spec).load(t.path).collect()


def test_batch_projection_time_travel_and_table_option(spark, tmp_path, catalog):
    t = pk_table(catalog)
    t.write_arrow(batch([1, 2]))
    t.write_arrow(batch([2, 3], v="u"))
    create_tag(t, "first", 1)
    t.write_arrow(batch([1], op="-D"), row_kind_column="op")
    read = spark.read.format("paimon")
    latest = {(r.id, r.v) for r in read.load(t.path).collect()}
    assert latest == {(2, "u2"), (3, "u3")}
    assert {(r.id, r.v) for r in read.option("snapshot-id", 1).load(t.path).collect()} == {(1, "v1"), (2, "v2")}
    assert {(r.id, r.v) for r in spark.read.format("paimon").option("tag", "first").load(t.path).collect()} == \
        {(1, "v1"), (2, "v2")}
    t2 = t.snapshot(2).time_millis
    assert {(r.id, r.v) for r in spark.read.format("paimon").option("timestamp-millis", t2).load(t.path).collect()} \
        == {(1, "v1"), (2, "u2"), (3, "u3")}
    projected = spark.read.format("paimon").schema("V string, id long").load(t.path)
    assert projected.columns == ["V", "id"] and {tuple(r) for r in projected.collect()} == {("u2", 2), ("u3", 3)}
    by_name = (spark.read.format("paimon").option("table", "db.pk").option("warehouse", catalog.warehouse)
               .option("rowKindColumn", "k").load())
    assert {(r.id, r.k) for r in by_name.collect()} == {(2, "+I"), (3, "+I")}
    with pytest.raises(Exception, match="snapshot 9"):
        spark.read.format("paimon").option("snapshot-id", 9).load(t.path).collect()
    # Paimon 1.1's spellings: scan.timestamp (local time), scan.version (a tag, else a snapshot id)
    local = (datetime.datetime.fromtimestamp(t2 // 1000) + datetime.timedelta(milliseconds=t2 % 1000)) \
        .strftime("%Y-%m-%d %H:%M:%S.%f")[:-3]
    assert {(r.id, r.v) for r in spark.read.format("paimon").option("scan.timestamp", local).load(t.path)
            .collect()} == {(1, "v1"), (2, "u2"), (3, "u3")}
    for version, expected in (("first", {(1, "v1"), (2, "v2")}), ("2", {(1, "v1"), (2, "u2"), (3, "u3")})):
        assert {(r.id, r.v) for r in spark.read.format("paimon").option("scan.version", version).load(t.path)
                .collect()} == expected
    for key, value in (("scan.partitions", "dt=1"),):
        with pytest.raises(Exception, match=f"read option '{key}'.*does not implement"):
            spark.read.format("paimon").option(key, value).load(t.path).collect()
    # table options as read options: Java merges by them (or refuses them); refused, not ignored
    for key, value in (("ignore-delete", "true"), ("sequence.field", "v")):
        with pytest.raises(Exception, match=f"read option '{key}' = '{value}' is a table option"):
            spark.read.format("paimon").option(key, value).load(t.path).collect()
        with pytest.raises(Exception, match=f"read option '{key}' = '{value}' is a table option"):
            stream(spark, t.path, **{key: value}).writeStream.format("noop").start().stop()
    assert spark.read.format("paimon").option("bucket", "2").option("read.batch-size", "5").load(t.path).count() == \
        spark.read.format("paimon").load(t.path).count()
    empty = catalog.create_table("db.empty", SCHEMA)
    assert spark.read.format("paimon").load(empty.path).count() == 0


def test_batch_incremental_queries(spark, catalog):
    """Java's incremental-between options: changes of snapshots (start, end], a diff between
    tags, by time; row kinds with rowKindColumn; refused for streams."""
    t = pk_table(catalog, "db.incr")
    t.write_arrow(batch([1, 2, 3]))                                   # snapshot 1
    create_tag(t, "first", 1)
    t.write_arrow(batch([2], v="u"))                                  # 2
    t.write_arrow(batch([3], op="-D"), row_kind_column="op")          # 3
    create_tag(t, "third", 3)

    def read(**options):
        reader = spark.read.format("paimon")
        for k, v in options.items():
            reader = reader.option(k, str(v))
        return reader.load(t.path)
    assert {(r.id, r.v) for r in read(**{"incremental-between": "1,3"}).collect()} == {(2, "u2")}
    assert {(r.id, r.v, r.k) for r in read(**{"incremental-between": "1,3", "rowKindColumn": "k"}).collect()} == \
        {(2, "u2", "+I"), (3, "v3", "-D")}
    assert {(r.id, r.v, r.k) for r in read(**{"incremental-between": "first,third", "rowKindColumn": "k"})
            .collect()} == {(2, "v2", "-U"), (2, "u2", "+U"), (3, "v3", "-D")}
    assert read(**{"incremental-between": "1,3", "incremental-between-scan-mode": "changelog"}).count() == 0
    assert {r.id for r in read(**{"incremental-between-timestamp": f"0,{t.snapshot(2).time_millis}"}).collect()} \
        == {1, 2, 3}
    with conf(spark, "spark.sql.python.filterPushdown.enabled", "true"):
        # a delta query is every change as written, unmerged (Java's): 3's insert stays without its -D
        assert sorted((r.id, r.v) for r in read(**{"incremental-between": "0,3"}).filter("id >= 2").collect()) == \
            [(2, "u2"), (2, "v2"), (3, "v3")]
    with pytest.raises(Exception, match="cannot be given with scan.mode"):
        read(**{"incremental-between": "1,3", "snapshot-id": 2}).collect()
    with pytest.raises(Exception, match="batch read: use spark.read"):
        stream(spark, t.path, **{"incremental-between": "1,3"}).writeStream.format("memory") \
            .queryName("incr").start().processAllAvailable()


def test_batch_reads_take_scan_options_kept_in_the_table(spark, catalog):
    """A table altered with `scan.snapshot-id` or `incremental-between` reads as that snapshot or
    query in Spark too (as Java's batch reads: table_scan_options.py); a read's own options win."""
    t = pk_table(catalog, "db.kept")
    t.write_arrow(batch([1, 2]))
    t.write_arrow(batch([2], v="u"))
    t.write_arrow(batch([3]))

    def ids_and_values(**options):
        reader = spark.read.format("paimon")
        for k, v in options.items():
            reader = reader.option(k, str(v))
        return sorted((r.id, r.v) for r in reader.load(t.path).collect())
    t.update_schema().set_option("scan.snapshot-id", "2").commit()
    assert ids_and_values() == [(1, "v1"), (2, "u2")]
    assert ids_and_values(**{"snapshot-id": 1}) == [(1, "v1"), (2, "v2")]
    with t.update_schema() as update:
        update.remove_option("scan.snapshot-id")
        update.set_option("incremental-between", "2,3")
    assert ids_and_values() == [(3, "v3")]
    assert ids_and_values(**{"scan.mode": "latest"}) == [(1, "v1"), (2, "u2"), (3, "v3")]


def test_branch_reads(spark, tmp_path, catalog):
    """option("branch", ...): batch reads, time travel and streams of a branch (Java's layout;
    tests/test_interop_java.py reads branches Java made and wrote)."""
    t = pk_table(catalog, "db.branched")
    t.write_arrow(batch([1, 2]))
    create_tag(t, "first", 1)
    t.create_branch("dev", tag="first")
    t.write_arrow(batch([3]))
    main = {r.id for r in spark.read.format("paimon").load(t.path).collect()}
    dev = {r.id for r in spark.read.format("paimon").option("branch", "dev").load(t.path).collect()}
    assert main == {1, 2, 3} and dev == {1, 2}
    assert spark.read.format("paimon").option("branch", "dev").option("tag", "first").load(t.path).count() == 2
    assert spark.read.format("paimon").option("branch", "main").load(t.path).count() == 3
    assert {r.id for r in spark.read.format("paimon").load(t.path + "$branch_dev").collect()} == {1, 2}
    assert [r.snapshot_id for r in spark.read.format("paimon").load(t.path + "$branch_dev$snapshots").collect()] \
        == [1]
    assert {r["id"] for r in flat(ok(run_batches(stream(spark, t.path, branch="dev"), tmp_path / "ck")))} == {1, 2}
    with pytest.raises(Exception, match="no branch 'qa'"):
        spark.read.format("paimon").option("branch", "qa").load(t.path).collect()


def test_fallback_branch_batch_reads(spark, catalog):
    """A table with `scan.fallback-branch`: partitions it lacks come from the branch (Java's
    FallbackReadFileStoreTable; tests/test_interop_java.py checks it against Java)."""
    t = pk_table(catalog, "db.fallback")
    t.write_arrow(batch([1, 2, 3]))                   # d1, d2, d0
    create_tag(t, "first", 1)
    t.create_branch("old", tag="first")
    with t.update_schema() as update:
        update.set_option("scan.fallback-branch", "old")
    t.write_arrow(batch([2], v="u"), overwrite=True)  # the table now holds partition d2 only
    got = {(r.id, r.v) for r in spark.read.format("paimon").load(t.path).collect()}
    assert got == {(1, "v1"), (3, "v3"), (2, "u2")}
    with conf(spark, "spark.sql.python.filterPushdown.enabled", "true"):
        assert {r.id for r in spark.read.format("paimon").load(t.path).filter("dt = 'd2'").collect()} == {2}
    with pytest.raises(Exception, match="'scan.fallback-branch' = 'old'"):
        spark.read.format("paimon").option("incremental-between", "1,2").load(t.path).collect()


def test_fallback_branch_time_travel_reads_in_the_snapshots_schema(spark, tmp_path):
    """Time travel in the snapshot's own schema (`snapshot-id`, `tag`) of a table with
    `scan.fallback-branch` read the branch by name in its newest schema: after a swap of two
    names the branch's row came back swapped and a pushed filter missed it, after a rename the
    read failed. The branch is read in its snapshot's schema, as Java (test_interop_java.py)."""
    swapped = fallback_table_renamed_after(str(tmp_path / "swapped"), [("a", "tmp"), ("b", "a"), ("tmp", "b")])
    renamed = fallback_table_renamed_after(str(tmp_path / "renamed"), [("a", "c")])
    with conf(spark, "spark.sql.python.filterPushdown.enabled", "true"):
        for t in (swapped, renamed):
            df = spark.read.format("paimon").option("snapshot-id", 2).load(t.path)
            assert df.columns == ["id", "a", "b", "dt"]
            assert sorted(map(tuple, df.collect())) == [(1, 11, 91, "d1"), (2, 12, 92, "d2"), (3, 13, 93, "d1")]
            assert [tuple(r) for r in df.where("a = 12").collect()] == [(2, 12, 92, "d2")]
        assert sorted(r.id for r in spark.read.format("paimon").option("tag", "t1").load(renamed.path).collect()) == [1]


def test_system_tables(spark, tmp_path, catalog):
    t = pk_table(catalog)
    t.write_arrow(batch([1, 2, 3]))
    t.write_arrow(batch([4]))
    create_tag(t, "t1", 1)
    ConsumerManager(t.file_io, t.path).record("job", 2)

    def load(name, **options):
        r = spark.read.format("paimon")
        for k, v in options.items():
            r = r.option(k, v)
        return r.load(f"{t.path}${name}")

    snaps = load("snapshots").orderBy("snapshot_id").collect()
    assert [(s.snapshot_id, s.commit_kind, s.total_record_count) for s in snaps] == [(1, "APPEND", 3), (2, "APPEND", 4)]
    assert [(r.tag_name, r.snapshot_id) for r in load("tags").collect()] == [("t1", 1)]
    files = load("files").collect()
    assert sum(f.record_count for f in files) == 4 and all(f.file_path.endswith(".parquet") for f in files)
    assert sum(f.record_count for f in load("files", **{"snapshot-id": "1"}).collect()) == 3
    assert sum(m.num_added_files for m in load("manifests").collect()) == len(files)
    partitions = load("partitions").collect()
    assert sorted((p.partition, p.record_count, p.file_count) for p in partitions) == sorted(
        (f"dt={d}", sum(f.record_count for f in files if f.partition == f"{{{d}}}"),
         sum(f.partition == f"{{{d}}}" for f in files)) for d in {f.partition[1:-1] for f in files})
    schemas = load("schemas").collect()
    assert len(schemas) == 1 and json.loads(schemas[0].primary_keys) == ["id", "dt"]
    assert {(r.key, r.value) for r in load("options").collect()} == {("bucket", "2")}
    assert [(r.consumer_id, r.next_snapshot_id) for r in load("consumers").collect()] == [("job", 2)]
    by_table = (spark.read.format("paimon").option("table", "db.pk$snapshots")
                .option("warehouse", catalog.warehouse).load())
    assert by_table.count() == 2


def test_row_tracking_reads_ids_in_batches_and_streams(spark, tmp_path, catalog):
    """`<table>$row_tracking` (Java's name) reads a row-tracking table's rows with `_ROW_ID` and
    `_SEQUENCE_NUMBER`, in a batch and in a stream; a table without row tracking refuses it."""
    t = catalog.create_table("db.tracked", SCHEMA, options={"row-tracking.enabled": "true"})
    t.write_arrow(batch([1, 2, 3]))
    t.write_arrow(batch([4, 5]))
    expected = {r["id"]: (r["_ROW_ID"], r["_SEQUENCE_NUMBER"])
                for r in t.to_arrow(columns=["id", "_ROW_ID", "_SEQUENCE_NUMBER"]).to_pylist()}
    assert sorted(expected.values()) == [(0, 1), (1, 1), (2, 1), (3, 2), (4, 2)]
    df = spark.read.format("paimon").load(t.path + "$row_tracking")
    assert df.columns == ["id", "v", "dt", "_ROW_ID", "_SEQUENCE_NUMBER"]
    assert {r.id: (r._ROW_ID, r._SEQUENCE_NUMBER) for r in df.collect()} == expected
    pruned = df.where("id > 3").select("_ROW_ID").collect()
    assert sorted(r._ROW_ID for r in pruned) == [3, 4]
    with conf(spark, "spark.sql.python.filterPushdown.enabled", "true"):  # ids prune files as columns do
        tasks = spark.read.format("paimon").option("source.split.target-size", "1 b").load(t.path + "$row_tracking")
        assert tasks.rdd.getNumPartitions() == 2
        by_id = tasks.where("_ROW_ID >= 3")
        assert by_id.rdd.getNumPartitions() == 1
        assert sorted((r.id, r._SEQUENCE_NUMBER) for r in by_id.collect()) == [(4, 2), (5, 2)]
    query = stream(spark, t.path + "$row_tracking", **{"scan.mode": "latest-full"})
    batches, error = run_batches(query, str(tmp_path / "ckpt"))
    assert error is None
    assert {r["id"]: (r["_ROW_ID"], r["_SEQUENCE_NUMBER"]) for r in flat(batches)} == expected
    plain = pk_table(catalog)
    plain.write_arrow(batch([1]))
    with pytest.raises(Exception, match="row-tracking.enabled"):
        spark.read.format("paimon").load(plain.path + "$row_tracking").collect()


def test_data_evolution_tables_are_read_merged_by_row_id(spark, tmp_path):
    """A data-evolution table of Java's whose column Java's MERGE INTO rewrote: Spark's batch
    read (each row-id range one unit) answers as Java, a pushed-down filter on that column too."""
    from java_oracle import get_oracle
    java = get_oracle()
    path = str(tmp_path / "de")
    with java.batch() as b:
        b.create_table(path, [{"name": "id", "type": "BIGINT"}, {"name": "v", "type": "STRING"}],
                       options={"row-tracking.enabled": "true", "data-evolution.enabled": "true"})
        b.write(path, [{"id": i, "v": "old"} for i in range(6)])
        b.write(path, [{"id": i, "v": "old"} for i in range(6, 9)])
        b.write_columns(path, 0, ["v"], [{"v": f"new{i}"} for i in range(6)])
        expected = b.read(path)
    df = spark.read.format("paimon").load(path)
    assert sorted((r.id, r.v) for r in df.collect()) == sorted((r["id"], r["v"]) for r in expected.result)
    assert sorted(r.id for r in df.where("v = 'new2' OR v = 'old'").collect()) == [2, 6, 7, 8]


def test_timestamps_in_a_session_time_zone_other_than_utc(spark, catalog):
    """The other tests run Spark in UTC, where an instant and a wall time print alike. In Los
    Angeles: TIMESTAMP (a wall time, Spark's TimestampNTZ; 02:30 on the day clocks skip it)
    and TIMESTAMP_LTZ (an instant) keep their values through our core, `df.write`, the
    foreachBatch sink, batch reads with pushed-down filters and streams."""
    schema = pa.schema([pa.field("id", pa.int64(), False), ("ntz", pa.timestamp("us")),
                        ("ltz", pa.timestamp("us", tz="UTC")), ("day", pa.date32())])
    wall = datetime.datetime(2024, 3, 10, 2, 30)
    instant = datetime.datetime(2024, 1, 1, 12, 0, tzinfo=datetime.timezone.utc)  # 04:00 in Los Angeles
    t = catalog.create_table("db.zones", schema, primary_keys=["id"], options={"bucket": "1"})
    t.write_arrow(pa.table({"id": [1], "ntz": [wall], "ltz": [instant], "day": [datetime.date(2024, 1, 1)]},
                           schema=schema))
    with conf(spark, "spark.sql.session.timeZone", "America/Los_Angeles"):
        row = "timestamp_ntz'2024-03-10 02:30:00' as ntz, timestamp'2024-01-01 04:00:00' as ltz, date'2024-01-01' as day"
        spark.sql(f"select 2L as id, {row}").write.format("paimon").mode("append").save(t.path)
        paimon_sink(t.path, commit_user="zones")(spark.sql(f"select 3L as id, {row}"), 0)
        assert {r["id"]: (r["ntz"], r["ltz"]) for r in t.to_arrow().to_pylist()} == \
            {i: (wall, instant) for i in (1, 2, 3)}
        df = spark.read.format("paimon").load(t.path)
        shown = df.selectExpr("cast(ntz as string) n", "cast(ltz as string) l").collect()
        assert {(r.n, r.l) for r in shown} == {("2024-03-10 02:30:00", "2024-01-01 04:00:00")}
        for cond in ["ltz = timestamp'2024-01-01 04:00:00'", "ltz > timestamp'2024-01-01 03:59:59'",
                     "ltz < timestamp'2024-01-01 04:00:01'", "ntz = timestamp_ntz'2024-03-10 02:30:00'",
                     "ntz < timestamp_ntz'2024-03-10 02:30:01'", "day = date'2024-01-01'"]:
            assert df.filter(cond).count() == 3, cond
        assert df.filter("ltz = timestamp'2024-01-01 12:00:00'").count() == 0  # 12:00 UTC is 04:00 here
        q = (stream(spark, t.path).writeStream.format("memory").queryName("zones")
             .trigger(availableNow=True).start())
        q.awaitTermination()
        streamed = spark.sql("select cast(ntz as string) n, cast(ltz as string) l from zones").collect()
        assert sorted((r.n, r.l) for r in streamed) == [("2024-03-10 02:30:00", "2024-01-01 04:00:00")] * 3


def test_time_columns_read_as_milliseconds_of_the_day(spark, catalog):
    """Paimon TIME (a MySQL TIME through CDC, say) is milliseconds of the day, which PySpark's
    Arrow conversion cannot take as a time; before, a table with one could not be read through
    Spark at all. Paimon's Spark connector reads it as INT milliseconds; so do batch reads and
    streams here, nested too, and INTs written to a TIME column are taken as such."""
    schema = pa.schema([pa.field("id", pa.int64(), False), ("t", pa.time32("ms")),
                        ("ev", pa.struct([("at", pa.time32("ms"))]))])
    t = catalog.create_table("db.times", schema, primary_keys=["id"], options={"bucket": "1"})
    t.write_arrow(pa.table({"id": [1, 2], "t": [datetime.time(12, 34, 56, 789000), None],
                            "ev": [{"at": datetime.time(0, 0, 1)}, None]}, schema=schema))
    df = spark.read.format("paimon").load(t.path)
    assert [(f.name, f.dataType.simpleString()) for f in df.schema.fields] == \
        [("id", "bigint"), ("t", "int"), ("ev", "struct<at:int>")]
    expected = [(1, 45296789, 1000), (2, None, None)]
    assert sorted((r.id, r.t, r.ev.at if r.ev else None) for r in df.collect()) == expected
    q = (stream(spark, t.path).writeStream.format("memory").queryName("times")
         .trigger(availableNow=True).start())
    q.awaitTermination()
    assert sorted((r.id, r.t, r.ev.at if r.ev else None) for r in spark.sql("select * from times").collect()) == expected
    # and back: Spark's INTs are written to TIME columns as those milliseconds (a copy of the table)
    copy = catalog.create_table("db.times_copy", schema, primary_keys=["id"], options={"bucket": "1"})
    df.write.format("paimon").mode("append").save(copy.path)
    assert copy.to_arrow().sort_by("id").equals(t.to_arrow().sort_by("id"))
    with pytest.raises(Exception, match="column 't' is a TIME: an integer written to it is milliseconds of the day"):
        spark.sql("select 3L as id, 86400000 as t").write.format("paimon").mode("append").save(copy.path)


def test_nanosecond_timestamps_before_1970_are_floored_to_sparks_microseconds(spark, catalog):
    """TIMESTAMP(9) / TIMESTAMP_LTZ(9) values are cut to Spark's microseconds by flooring, as
    Java's connector and our core cut a lower precision; Arrow's cast truncates toward zero,
    which read 1969-12-31 23:59:59.999999999 as 1970-01-01 00:00:00 (another day, and a filter
    `< 1970-01-01` missed it). Nested ones too, in batch reads and streams."""
    schema = pa.schema([pa.field("id", pa.int64(), False), ("ts", pa.timestamp("ns")),
                        ("ltz", pa.timestamp("ns", tz="UTC")), ("ev", pa.struct([("at", pa.timestamp("ns"))])),
                        ("all", pa.list_(pa.timestamp("ns")))])
    nanos = [-1, -1_500, 1_999, None]
    t = catalog.create_table("db.nanos", schema)
    t.write_arrow(pa.table({"id": [1, 2, 3, 4], "ts": pa.array(nanos, pa.timestamp("ns")),
                            "ltz": pa.array(nanos, pa.timestamp("ns", tz="UTC")),
                            "ev": [None if n is None else {"at": n} for n in nanos],
                            "all": [None if n is None else [n, n] for n in nanos]}, schema=schema))
    micros = [-1, -2, 1, None]  # floor(ns / 1000)
    query = "id, unix_micros(to_timestamp(ts)) ts, unix_micros(ltz) ltz, unix_micros(to_timestamp(ev.at)) at, " \
            "unix_micros(to_timestamp(`all`[1])) second"
    expected = [(i, m, m, m, m) for i, m in zip([1, 2, 3, 4], micros)]
    df = spark.read.format("paimon").load(t.path)
    assert sorted(tuple(r) for r in df.selectExpr(*query.split(", ")).collect()) == expected
    assert df.filter("ts < timestamp_ntz'1970-01-01 00:00:00'").count() == 2
    q = (stream(spark, t.path).writeStream.format("memory").queryName("nanos")
         .trigger(availableNow=True).start())
    q.awaitTermination()
    assert sorted(tuple(r) for r in spark.sql(f"select {query} from nanos").collect()) == expected


def test_pushed_filters_taken_over_only_where_arrow_agrees_with_spark(catalog):
    """Spark's pushed filters (as `pushFilters` gets them, in its filter-pushdown worker): a
    filter is taken over only where the reader evaluates it exactly as Spark would; anything
    else goes back to Spark (never a filter evaluated differently: rows silently lost or kept)."""
    import decimal
    from pyspark.sql.datasource import (EqualNullSafe, EqualTo, GreaterThan, GreaterThanOrEqual, In, IsNotNull,
                                        IsNull, LessThan, LessThanOrEqual, Not, StringStartsWith)
    from paimon_streaming.sources.filters import split_filters
    t = catalog.create_table("db.pushable", pa.schema([
        ("id", pa.int64()), ("n", pa.int32()), ("v", pa.string()), ("b", pa.bool_()), ("day", pa.date32()),
        ("d", pa.decimal128(10, 2)), ("x", pa.float64()), ("ts", pa.timestamp("us")),
        ("s", pa.struct([("a", pa.int64())]))]))
    day = datetime.date(2024, 5, 1)
    taken = [EqualTo(("id",), 5), GreaterThan(("n",), -1), GreaterThanOrEqual(("v",), "k"), LessThan(("b",), True),
             LessThanOrEqual(("day",), day), EqualTo(("d",), decimal.Decimal("1.5")), EqualTo(("d",), 7),
             In(("id",), (1, 2)), IsNull(("n",)), IsNotNull(("d",)), Not(EqualTo(("v",), "a"))]
    left = [EqualTo(("x",), 1.5),                          # floats: NaN orders differently
            LessThan(("ts",), datetime.datetime(2024, 1, 1)),  # timestamps
            EqualTo(("s", "a"), 1),                        # a nested field
            EqualTo(("s",), {"a": 1}), EqualTo(("nope",), 1),
            EqualTo(("d",), decimal.Decimal("1.555")),      # more digits than the column's scale
            EqualTo(("d",), 1.5), EqualTo(("d",), True),   # a float or a boolean for a DECIMAL
            EqualTo(("d",), decimal.Decimal("1e40")),       # no exact quantization
            EqualTo(("id",), True), EqualTo(("id",), "5"), EqualTo(("v",), 5), EqualTo(("b",), 1),
            EqualTo(("day",), datetime.datetime(2024, 5, 1)), EqualTo(("id",), None),
            In(("id",), (1, None)), In(("id",), ()),       # IN with a null: null, never false
            Not(In(("id",), (1,))), Not(EqualTo(("x",), 1.0)), EqualNullSafe(("id",), 1),
            StringStartsWith(("v",), "a")]
    columns = {n: n for n in t.schema.field_names}
    terms, rest = split_filters(taken + left, t.schema, columns)
    assert terms == [("id", "=", 5), ("n", ">", -1), ("v", ">=", "k"), ("b", "<", True), ("day", "<=", day),
                     ("d", "=", decimal.Decimal("1.50")), ("d", "=", decimal.Decimal("7.00")), ("id", "in", [1, 2]),
                     ("n", "is null", None), ("d", "is not null", None), ("v", "!=", "a")]
    assert rest == left
    # the taken-over terms filter as Spark would: `v != 'a'` keeps no null
    t.write_arrow(pa.Table.from_pylist([{"id": 1, "v": "a"}, {"id": 2, "v": "b"}, {"id": 3, "v": None}],
                                       t.schema.arrow_schema()))
    assert sorted(r["id"] for r in t.to_arrow(filter=terms[-1:]).to_pylist()) == [2]
    assert split_filters(taken[:1], t.schema, columns, {"id"}) == ([], taken[:1])  # a column read as another type


def test_a_read_schema_with_other_types_fails_alike_with_and_without_pushdown(spark, catalog):
    """`.schema("dec long")` over a DECIMAL holding 1.25 fails naming the column (the documented
    error). With filter pushdown a pushed `dec = 1` compared the stored values and dropped 1.25
    first, so the same query answered instead: filters on a column a read schema retypes are
    Spark's, on the values as cast."""
    import decimal
    t = catalog.create_table("db.retyped", pa.schema([("id", pa.int64()), ("dec", pa.decimal128(5, 2))]))
    t.write_arrow(pa.table({"id": [1, 2], "dec": pa.array([decimal.Decimal("1.00"), decimal.Decimal("1.25")],
                                                           pa.decimal128(5, 2))}))
    for pushdown in ("true", "false"):
        with conf(spark, "spark.sql.python.filterPushdown.enabled", pushdown):
            df = spark.read.format("paimon").schema("id long, dec long").load(t.path)
            with pytest.raises(Exception, match="column 'dec' cannot be read as int64"):
                df.where("dec = 1").collect()
            assert spark.read.format("paimon").load(t.path).where("dec = 1").count() == 1


@pytest.mark.parametrize("options, error", [
    ({}, "a catalog table (spark.table, CREATE TABLE ... USING paimon): read one through a temporary view"),
    ({"scan.snapshot-id": "abc"}, "'snapshot-id' must be a positive integer, got 'abc'"),
    ({"scan.snapshot-id": "0"}, "'snapshot-id' must be a positive integer, got '0'"),
    ({"maxFilesPerTrigger": "many"}, "'max-files-per-trigger' must be a positive integer, got 'many'"),
    ({"read.stream.maxRowsPerTrigger": "-5"}, "'max-rows-per-trigger' must be a positive integer, got '-5'"),
    ({"source.split.target-size": "lots"}, "'source.split.target-size' must be a size such as '128 mb', got 'lots'"),
    ({"scan.timestamp-millis": "yesterday"}, "'timestamp-millis' must be epoch milliseconds, got 'yesterday'"),
])
def test_read_options_with_bad_values_are_refused_by_name(tmp_path, options, error):
    """A read option with a value it cannot take: the specific error naming the option and the
    value (never ignored, never a read of something else)."""
    from paimon_streaming.errors import PaimonError
    from paimon_streaming.sources.options import ReadSpec
    with pytest.raises(PaimonError, match=re.escape(error)):
        ReadSpec.parse({"path": str(tmp_path), **options} if options else {})
    if options:
        with pytest.raises(InvalidOptionError):
            ReadSpec.parse({"path": str(tmp_path), **options})


def test_row_tracking_reads_name_the_table_without_it(catalog):
    """`<table>$row_tracking` of a table that does not track rows: InvalidOptionError naming it."""
    from paimon_streaming.sources.datasource import source_schema
    t = catalog.create_table("db.untracked", SCHEMA)
    with pytest.raises(InvalidOptionError, match="does not track rows.*row-tracking.enabled"):
        source_schema({"path": t.path + "$row_tracking"})
    tracked = catalog.create_table("db.tracked", SCHEMA, options={"row-tracking.enabled": "true"})
    assert source_schema({"path": tracked.path + "$row_tracking"}).fieldNames() == \
        ["id", "v", "dt", "_ROW_ID", "_SEQUENCE_NUMBER"]


def test_batch_reader_on_an_executor_reads_what_the_driver_planned(catalog):
    """The batch reader as Spark uses it, without a JVM: planned on the driver, pickled to the
    executors. Read-schema names match table columns case-insensitively (as Spark resolves
    them); a read-schema type some stored value does not fit is a SchemaMismatchError naming the
    column; a data file removed after planning (an expiration) is a PaimonError naming the
    snapshot and what to do, never a read that silently misses its rows."""
    import pickle
    from pathlib import Path

    from pyspark.sql.types import IntegerType, LongType, StringType, StructField, StructType

    from paimon_streaming.errors import PaimonError, SchemaMismatchError
    from paimon_streaming.sources.datasource import reader
    t = catalog.create_table("db.planned", SCHEMA)
    t.write_arrow(pa.table({"id": pa.array([1, 2**40], pa.int64()), "v": ["a", "b"], "dt": ["x", "x"]}))

    def read(schema: StructType) -> list[dict]:
        r = reader({"path": t.path}, schema)
        parts = r.partitions()  # in the planning worker, which then pickles the reader to the executors
        r = pickle.loads(pickle.dumps(r))
        return [row for p in parts for b in r.read(pickle.loads(pickle.dumps(p))) for row in b.to_pylist()]
    assert read(StructType([StructField("ID", LongType()), StructField("V", StringType())])) == [
        {"ID": 1, "V": "a"}, {"ID": 2**40, "V": "b"}]
    with pytest.raises(SchemaMismatchError, match="column 'id' cannot be read as int32"):
        read(StructType([StructField("id", IntegerType())]))
    planned = reader({"path": t.path}, StructType([StructField("id", LongType())]))
    parts = planned.partitions()
    for f in Path(t.path).rglob("data-*"):
        f.unlink()
    with pytest.raises(PaimonError, match="a file of snapshot 1 is gone .*removed after the read was planned"):
        [b for p in parts for b in planned.read(p)]


def test_stream_reader_bytes_limit_and_a_schema_changed_since_defined(catalog):
    """maxBytesPerTrigger admits files up to that size per micro-batch (at least one: a stream
    always progresses), so a backlog is read over several batches without losing or repeating a
    row; a stream whose columns the table no longer has is a SchemaChangedError naming it."""
    import pickle

    from pyspark.sql.streaming.datasource import ReadMaxBytes
    from pyspark.sql.types import LongType, StructField, StructType

    from paimon_streaming.errors import SchemaChangedError
    from paimon_streaming.sources.datasource import source_schema, stream_reader
    t = catalog.create_table("db.bytes", SCHEMA, partition_keys=["dt"])
    for i in range(3):
        t.write_arrow(batch([3 * i, 3 * i + 1]))  # 2 files per snapshot
    options = {"path": t.path, "maxBytesPerTrigger": "1 b"}
    r = stream_reader(options, source_schema(options))
    assert r.getDefaultReadLimit() == ReadMaxBytes(1)
    offset, seen, triggers = r.initialOffset(), [], 0
    while (end := r.latestOffset(offset, r.getDefaultReadLimit())) != offset and triggers < 20:
        planned = pickle.loads(pickle.dumps(r))  # the executors' copy
        seen += [row["id"] for p in r.partitions(offset, end) for b in planned.read(p) for row in b.to_pylist()]
        offset, triggers = end, triggers + 1
    assert sorted(seen) == [0, 1, 3, 4, 6, 7] and triggers == 6  # one one-row file per micro-batch
    r.stop()
    with pytest.raises(SchemaChangedError, match="the schema of table .*bytes changed since this stream was defined"):
        stream_reader({"path": t.path}, StructType([StructField("id", LongType()), StructField("gone", LongType())]))


def test_a_read_schema_casts_text_to_integers_as_spark_4():
    """Text read as TINYINT/INT/BIGINT as Spark 4's CAST gives it (values taken from Spark 4
    itself): hex is no number (Arrow's cast had read '0xff' as a TINYINT's -1); blanks and
    control bytes around it are trimmed; without ANSI mode a fraction is cut ('.' is 0) and
    anything else, or beyond the type, is null; in ANSI mode those fail (CAST_INVALID_INPUT)."""
    from sources.spark_casts import CastSettings, SparkCastRefused, spark_cast
    texts = pa.array(["0xff", " 12 ", "\t+12\n", "-128", "128", "12.7", "-12.9", ".", "+", "", "1e2", "\u0661\u0662",
                      "\xa012", "000000000000000000000000000000000000000012", None])
    lenient = CastSettings("UTC", ansi=False)
    assert spark_cast(texts, pa.int8(), lenient).to_pylist() == [
        None, 12, 12, -128, None, 12, -12, 0, None, None, None, None, None, 12, None]
    assert spark_cast(pa.array(["0xFFFFFFFF", "2147483648", "-2147483648"]), pa.int32(), lenient).to_pylist() == [
        None, None, -2147483648]
    assert spark_cast(pa.array(["9223372036854775808", "9223372036854775807"]), pa.int64(), lenient).to_pylist() == [
        None, 2**63 - 1]
    ansi = CastSettings("UTC", ansi=True)
    assert spark_cast(pa.array([" 12 ", "-128", "\x0012\x7f", None]), pa.int8(), ansi).to_pylist() == [12, -128, 12, None]
    for bad in ("0xff", "12.7", ".", "128", ""):
        with pytest.raises(SparkCastRefused, match="CAST_INVALID_INPUT"):
            spark_cast(pa.array(["1", bad]), pa.int8(), ansi)


def test_a_read_schema_casts_text_to_decimals_as_spark_4():
    """Text read as DECIMAL as Spark 4's CAST gives it (values taken from Spark 4 itself):
    trimmed, exponents taken, HALF_UP to the scale, beyond the precision or no number null
    (ANSI mode: an error). Arrow's cast gave '-7e36' as -194352661581230730732507851364635770.88
    in DECIMAL(38, 2), '1e-41' as 0.00 by wrapping, and refused '1.005'."""
    from sources.spark_casts import CastSettings, SparkCastRefused, spark_cast
    texts = pa.array(["1.005", "-7e36", " 12 ", "1e-41", "-83920793622.98", "0.80636083778353374068124158683449786907366",
                      "1e2", "abc", "1.5e1", "-0.005", None])
    lenient = CastSettings("UTC", ansi=False)
    d = decimal.Decimal
    assert spark_cast(texts, pa.decimal128(38, 2), lenient).to_pylist() == [
        d("1.01"), None, d("12.00"), d("0.00"), d("-83920793622.98"), d("0.81"), d("100.00"), None, d("15.00"),
        d("-0.01"), None]
    assert spark_cast(texts, pa.decimal128(10, 2), lenient).to_pylist()[4] is None
    # Java's String.trim (not DEL), digits of any script, an exponent beyond Java's int: as Spark 4.3
    assert spark_cast(pa.array(["1.5\x7f", "\uff11\uff12", "\u0661\u0662", "1e-2147483649", "\t2\n", "1e-0"]),
                      pa.decimal128(38, 2), lenient).to_pylist() == [None, d("12.00"), d("12.00"), None, d("2.00"),
                                                                      d("1.00")]
    ansi = CastSettings("UTC", ansi=True)
    assert spark_cast(pa.array(["1.005", " 2 "]), pa.decimal128(38, 2), ansi).to_pylist() == [d("1.01"), d("2.00")]
    for bad in ("-7e36", "abc"):
        with pytest.raises(SparkCastRefused):
            spark_cast(pa.array(["1", bad]), pa.decimal128(38, 2), ansi)


def test_a_read_schema_casts_as_sparks_cast_in_the_session_zone(spark, catalog):
    """`.schema(...)` with other types than the table's gives what Spark's own CAST gives in the
    same session (New York): an instant as TIMESTAMP_NTZ, DATE and text its wall time there, a
    wall time and a DATE as TIMESTAMP the instant they are there (02:30 on a spring-forward day
    moved later by the gap), floats and decimals as Java/Spark print them (NaN, -0.0, 1.0E22,
    0.0000000001), nested too; Arrow's cast had given UTC wall times, 'nan', '1E-10'. A cast not
    reproduced is refused naming the column and the types."""
    import decimal
    from pyspark.sql import functions as F
    utc = datetime.timezone.utc
    t = catalog.create_table("db.read_casts", pa.schema([
        ("id", pa.int64()), ("ts", pa.timestamp("us", tz="UTC")), ("ntz", pa.timestamp("us")), ("d", pa.date32()),
        ("x", pa.float64()), ("f", pa.float32()), ("dec", pa.decimal128(38, 10)), ("big", pa.int64()),
        ("st", pa.struct([("a", pa.timestamp("us", tz="UTC")), ("b", pa.list_(pa.float64()))]))]))
    t.write_arrow(pa.table({
        "id": [1, 2, 3],
        "ts": pa.array([datetime.datetime(2024, 7, 1, 12, tzinfo=utc), datetime.datetime(1969, 12, 31, 23, 59, 59, 999999,
                                                                                          tzinfo=utc), None],
                       pa.timestamp("us", tz="UTC")),
        "ntz": pa.array([datetime.datetime(2024, 7, 1, 12), datetime.datetime(2024, 3, 10, 2, 30, 0, 500000), None],
                        pa.timestamp("us")),
        "d": pa.array([datetime.date(2024, 7, 1), datetime.date(1900, 1, 1), None], pa.date32()),
        "x": [float("nan"), -0.0, 1e22], "f": pa.array([1.5, float("inf"), None], pa.float32()),
        "dec": pa.array([decimal.Decimal("0.0000000001"), decimal.Decimal("-12.5"), None], pa.decimal128(38, 10)),
        "big": [2**63 - 1, -(2**53) - 1, None],
        "st": [{"a": datetime.datetime(2024, 1, 1, 3, tzinfo=utc), "b": [float("nan"), 0.1]}, None, {"a": None, "b": None}]}))
    casts = [("ts", "timestamp_ntz"), ("ts", "date"), ("ts", "string"), ("ntz", "timestamp"), ("ntz", "string"),
             ("d", "timestamp"), ("x", "string"), ("f", "string"), ("f", "double"), ("dec", "string"),
             ("dec", "double"), ("dec", "decimal(20,2)"), ("big", "double"), ("big", "string"),
             ("st", "struct<a:timestamp_ntz,b:array<string>>")]
    with conf(spark, "spark.sql.session.timeZone", "America/New_York"):
        base = spark.read.format("paimon").load(t.path)
        for column, type_ in casts:
            as_text = F.to_json(F.col(column)) if type_.startswith("struct") else F.col(column).cast("string")
            got = spark.read.format("paimon").schema(f"id long, {column} {type_}").load(t.path) \
                .select("id", as_text.alias("v")).collect()
            want = base.select("id", F.col(column).cast(type_).alias(column)) \
                .select("id", (F.to_json(F.col(column)) if type_.startswith("struct")
                               else F.col(column).cast("string")).alias("v")).collect()
            assert sorted(map(tuple, got)) == sorted(map(tuple, want)), (column, type_)
        with pytest.raises(Exception, match=r"column 'big' cannot be read as timestamp.*Spark's CAST"):
            spark.read.format("paimon").schema("id long, big timestamp").load(t.path).collect()


def test_counts_of_merged_and_deletion_vector_tables_are_their_live_rows(spark, catalog):
    """Spark's count() (and select(lit(1)), count(*)) of a read of the source, with and without
    a pushed filter, and of a read with an empty read schema (which read no rows): the rows
    after the merge by key and the deletion vectors, as a full read."""
    from pyspark.sql import functions as F
    from pyspark.sql.types import StructType
    tables = [catalog.create_table("db.cnt_append", SCHEMA, partition_keys=["dt"])]
    for dv in ("false", "true"):
        tables.append(catalog.create_table(f"db.cnt_pk_{dv}", SCHEMA, primary_keys=["id", "dt"], partition_keys=["dt"],
                                           options={"bucket": "2", "deletion-vectors.enabled": dv}))
    for t in tables:
        t.write_arrow(batch(list(range(30))))
        t.write_arrow(batch(list(range(20, 50)), v="u"))      # a key's versions in two files (PK tables)
        t.delete([("id", "<", 5)])
    for t in tables:
        df = spark.read.format("paimon").load(t.path)
        df.createOrReplaceTempView("counted")
        expected = t.to_arrow().num_rows
        assert expected == (50 if t.primary_keys else 60) - 5
        assert df.count() == df.select(F.lit(1)).count() == df.selectExpr("count(*)").first()[0] == \
            spark.sql("select count(*) from counted").first()[0] == expected
        assert spark.read.format("paimon").schema(StructType([])).load(t.path).count() == expected
        with conf(spark, "spark.sql.python.filterPushdown.enabled", "true"):
            filtered = spark.read.format("paimon").load(t.path).where("id >= 25 and dt = 'd1'")
            assert filtered.count() == filtered.select(F.lit(1)).count() == \
                t.to_arrow(filter=[("id", ">=", 25), ("dt", "=", "d1")]).num_rows > 0
