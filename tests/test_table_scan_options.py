"""Scan options kept in a table's options steer its batch reads, as Java's (table_scan_options.py).

Java 1.4.2, probed: a table altered with `scan.snapshot-id` = 1 reads as snapshot 1, with
`incremental-between` = '1,2' as that query, with `scan.file-creation-time-millis` only newer
files; reading the latest snapshot instead would answer another question without a word.
"""
from __future__ import annotations

import datetime as dt
import time
from dataclasses import replace

import pyarrow as pa
import pytest

import paimon_streaming as ps
from paimon_streaming.errors import InvalidOptionError, UnsupportedOperationError
from paimon_streaming.streaming_scan import StreamOptions
from stream_batches import open_stream, stream_rows

try:
    from java_oracle import get_oracle
except ImportError:  # pragma: no cover
    from tests.java_oracle import get_oracle

FIELDS = [{"name": "id", "type": "INT NOT NULL"}, {"name": "v", "type": "STRING"}]
# table options -> the ids a batch read returns, on a table whose snapshots 1, 2, 3 added ids
# 1, 2, 3 (tag t1 on snapshot 1) and then a full compaction (snapshot 4) and id 4 (snapshot 5)
CASES = {
    "snapshot": ({"scan.snapshot-id": "2"}, [1, 2]),
    "tag": ({"scan.tag-name": "t1"}, [1]),
    "from-snapshot": ({"scan.mode": "from-snapshot", "scan.snapshot-id": "3"}, [1, 2, 3]),
    "incremental": ({"incremental-between": "1,3"}, [2, 3]),
    "compacted-full": ({"scan.mode": "compacted-full"}, [1, 2, 3]),
    "latest": ({"scan.mode": "latest"}, [1, 2, 3, 4]),
    "log.scan": ({"log.scan": "compacted-full"}, [1, 2, 3]),   # Java's older name of scan.mode
}


def ids(rows) -> list[int]:
    return sorted(r["id"] for r in rows)


def test_batch_reads_take_the_tables_scan_options_as_java(tmp_path):
    java = get_oracle()
    paths = {name: str(tmp_path / "db.db" / name) for name in CASES}
    with java.batch() as b:
        for path in paths.values():
            b.create_table(path, FIELDS, primary_keys=["id"], options={"bucket": "1"})
            for i in (1, 2, 3):
                b.write(path, [{"id": i, "v": f"v{i}"}])
            b.create_tag(path, "t1", 1)
            b.compact(path)
            b.write(path, [{"id": 4, "v": "v4"}])
    with java.batch() as b:
        for name, (options, _) in CASES.items():
            b.alter(paths[name], [{"kind": "set-option", "key": k, "value": v} for k, v in options.items()])
    with java.batch() as b:
        java_reads = {name: b.read(path) for name, path in paths.items()}
    for name, (_, expected) in CASES.items():
        assert ids(java_reads[name].result) == expected, name
        table = ps.Table.open(paths[name])
        assert ids(table.to_arrow().to_pylist()) == expected, name
        assert ids(table.to_arrow(snapshot_id=5).to_pylist()) == [1, 2, 3, 4]  # a read's own choice wins


def test_options_java_honours_that_are_not_implemented_are_refused(catalog):
    t = catalog.create_table("db.t", pa.schema([("id", pa.int64())]))
    t.write_arrow(pa.table({"id": [1]}))
    for key, value in [("scan.file-creation-time-millis", "1"), ("scan.watermark", "5"),
                       ("scan.mode", "from-file-creation-time")]:
        t.update_schema().set_option(key, value).commit()
        with pytest.raises(UnsupportedOperationError, match=key):
            t.to_arrow()
        with pytest.raises(InvalidOptionError, match=key if key != "scan.mode" else "from-file-creation-time"):
            StreamOptions.from_options(t.schema.options, {})   # streams too (the key is the table's)
        t.update_schema().remove_option(key).commit()
    t.update_schema().set_option("scan.mode", "from-timestamp").commit()
    with pytest.raises(InvalidOptionError, match="scan.timestamp"):
        t.to_arrow()
    assert t.to_arrow(snapshot_id=1).num_rows == 1


def test_stream_options_kept_in_the_table_that_streams_do_not_implement_are_refused(tmp_path):
    """`scan.bounded.watermark` in a table's options ends Java's streams at the first snapshot
    whose watermark is above it, and `incremental-between` there makes Java refuse to stream
    ('Cannot read incremental in streaming mode'); our streams ignored both: one never ended,
    the other streamed the whole table. Streams now refuse them naming the option; batch reads
    answer as Java's (the bound ignored, the incremental query read)."""
    java = get_oracle()
    schema = pa.schema([pa.field("id", pa.int32(), False), ("v", pa.string())])
    paths = {}
    for name, key, value in (("bounded", "scan.bounded.watermark", "150"), ("incr", "incremental-between", "1,3")):
        t = ps.Catalog(str(tmp_path)).create_table(f"db.{name}", schema, primary_keys=["id"], options={"bucket": "1"})
        for i, watermark in ((1, 100), (2, 200), (3, 300)):
            t = ps.Table.open(t.path)
            t.new_commit().commit(t.write_messages(pa.table({"id": [i], "v": [f"v{i}"]}, schema=schema)), "job", i,
                                  watermark=watermark)
        java.alter(t.path, [{"kind": "set-option", "key": key, "value": value}])
        paths[key] = t.path
    start = {"scan.mode": "from-snapshot", "scan.snapshot-id": "1"}
    with java.batch() as b:
        batches = {key: b.read(path) for key, path in paths.items()}
        bounded = b.read(paths["scan.bounded.watermark"], options=start, stream_plans=2)
        ended = b.read(paths["scan.bounded.watermark"], options=start, stream_plans=3, catch_error=True)
        incremental = b.read(paths["incremental-between"], stream_plans=2, catch_error=True)
    assert ids(bounded.result) == [1] and "EndOfScanException" in ended.result.error
    assert "Cannot read incremental in streaming mode" in incremental.result.error
    for key, path in paths.items():
        table = ps.Table.open(path)
        assert ids(table.to_arrow().to_pylist()) == ids(batches[key].result) == \
            ([1, 2, 3] if key == "scan.bounded.watermark" else [2, 3])
        for read in ({}, start):
            with pytest.raises(InvalidOptionError, match=f"'{key}'"):
                StreamOptions.from_options(table.schema.options, read)


def test_javas_older_option_names_steer_reads_and_writes_as_java(tmp_path):
    """Java reads `scan.mode`, `scan.timestamp-millis` and `write-only` under their older names
    (`log.scan`, `log.scan.timestamp-millis`, `write.compaction-skip`) too, so a table created
    by an older job reads and writes as with the new names; we ignored them: a `log.scan` =
    `from-timestamp` table read its latest state and streamed from the full table, a
    `write.compaction-skip` table was compacted and its snapshots expired by our writes."""
    java = get_oracle()
    paths = {name: str(tmp_path / "db.db" / name) for name in ("ts", "latest", "skip")}
    with java.batch() as b:
        for path in paths.values():
            b.create_table(path, FIELDS, primary_keys=["id"], options={"bucket": "1"})
            b.write(path, [{"id": 1, "v": "v1"}])
    time.sleep(0.01)
    after_first = java.snapshots(paths["ts"])[-1]["timeMillis"] + 1
    time.sleep(0.01)
    old_names = {"ts": {"log.scan": "from-timestamp", "log.scan.timestamp-millis": str(after_first)},
                 "latest": {"log.scan": "latest"},
                 "skip": {"write.compaction-skip": "true", "snapshot.num-retained.max": "2",
                          "snapshot.num-retained.min": "1", "snapshot.time-retained": "1 ms"}}
    with java.batch() as b:
        for name, path in paths.items():
            b.write(path, [{"id": 2, "v": "v2"}])
            b.alter(path, [{"kind": "set-option", "key": k, "value": v} for k, v in old_names[name].items()])
            b.write(path, [{"id": 3, "v": "v3"}])
    with java.batch() as b:
        batch = b.read(paths["ts"])
        streams = {name: b.read(paths[name], stream_plans=4) for name in ("ts", "latest")}
    ts = ps.Table.open(paths["ts"])
    assert ids(ts.to_arrow().to_pylist()) == ids(batch.result) == [1]
    for name, expected in (("ts", [2, 3]), ("latest", [])):
        assert ids(streams[name].result) == expected
        assert ids(stream_rows(open_stream(ps.Table.open(paths[name]), {}), ["id", "v"])) == expected
    skip = ps.Table.open(paths["skip"])
    for i in range(4, 10):
        skip.write_arrow(pa.table({"id": pa.array([i], pa.int32()), "v": [f"v{i}"]}))
    assert [(s.id, s.commit_kind) for s in skip.snapshot_manager.snapshots()] == \
        [(i, "APPEND") for i in range(1, 10)]   # no compaction, nothing expired: write-only


def test_scan_options_java_refuses_are_refused_naming_them(tmp_path):
    """A `scan.version` that is neither a tag nor a snapshot id, a `scan.snapshot-id` or
    `scan.timestamp-millis` that is not a number: Java's reads refuse the table, so do ours,
    naming the option and its value, rather than read the latest snapshot."""
    java = get_oracle()
    path = str(tmp_path / "db.db" / "t")
    with java.batch() as b:
        b.create_table(path, FIELDS, primary_keys=["id"], options={"bucket": "1"})
        b.write(path, [{"id": 1, "v": "a"}])
    cases = [("scan.version", "nope", r"'scan.version' = 'nope' is neither a tag of .* nor a snapshot id"),
             ("scan.snapshot-id", "abc", r"'scan.snapshot-id' = 'abc' is not an integer"),
             ("scan.timestamp-millis", "1.5", r"'scan.timestamp-millis' = '1.5' is not an integer")]
    with java.batch() as b:
        refusals = [b.read(path, options={key: value}, catch_error=True) for key, value, _ in cases]
    t = ps.Table.open(path)
    for (key, value, message), refusal in zip(cases, refusals):
        assert "IllegalArgumentException" in refusal.result.error, key
        if key == "scan.version":
            t.update_schema().set_option(key, value).commit()
        else:  # a number Java cannot parse is refused by our option changes; another writer's table may hold one
            with pytest.raises(InvalidOptionError, match=f"invalid value '{value}' for table option '{key}'"):
                t.update_schema().set_option(key, value).commit()
            schema = t.schema_manager.latest()
            assert t.schema_manager.try_commit(replace(schema, id=schema.id + 1, options={**schema.options, key: value}))
            t.refresh()
        with pytest.raises(InvalidOptionError, match=message):
            t.to_arrow()
        assert ids(t.to_arrow(snapshot_id=1).to_pylist()) == [1]
        t.update_schema().remove_option(key).commit()
    t.update_schema().set_option("scan.version", "1").commit()   # a snapshot id: that snapshot
    t.write_arrow(pa.table({"id": pa.array([2], pa.int32()), "v": ["b"]}, schema=t.arrow_schema()))
    assert ids(t.to_arrow().to_pylist()) == [1]


def test_scan_timestamp_with_an_explicit_zone_means_that_instant(catalog):
    """`scan.timestamp` with 'Z' or an offset (which Java refuses) is read in that zone, not
    this process's: the read sees the newest snapshot committed at or before that instant. A
    table without snapshots has none there: the error names the table."""
    t = catalog.create_table("db.t", pa.schema([("id", pa.int64())]))
    t.update_schema().set_option("scan.timestamp-millis", "0").commit()
    with pytest.raises(ps.SnapshotNotFoundError, match=r"committed at or before 0 .*earliest snapshot is None"):
        t.to_arrow()
    t.update_schema().remove_option("scan.timestamp-millis").commit()
    t.write_arrow(pa.table({"id": [1]}))
    first = t.latest_snapshot().time_millis
    while int(time.time() * 1000) <= first + 2:
        time.sleep(0.001)
    t.write_arrow(pa.table({"id": [2]}))
    utc = dt.datetime(1970, 1, 1) + dt.timedelta(milliseconds=first)
    for zone, offset in [("Z", dt.timedelta(0)), ("+05:30", dt.timedelta(hours=5, minutes=30)),
                         ("-0130", -dt.timedelta(hours=1, minutes=30))]:
        wall = (utc + offset).strftime("%Y-%m-%d %H:%M:%S.%f")[:-3]
        t.update_schema().set_option("scan.timestamp", wall + zone).commit()
        assert ids(t.to_arrow().to_pylist()) == [1], zone
        before = (utc + offset - dt.timedelta(milliseconds=1)).strftime("%Y-%m-%dT%H:%M:%S.%f")[:-3]
        t.update_schema().set_option("scan.timestamp", before + zone).commit()
        with pytest.raises(ps.SnapshotNotFoundError, match="earliest snapshot is 1"):
            t.to_arrow()
    t.update_schema().remove_option("scan.timestamp").commit()
    assert ids(t.to_arrow().to_pylist()) == [1, 2]
