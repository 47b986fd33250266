"""Streaming read core (no Spark): start modes, delta/changelog planning, admission limits,
resumable positions, consumer files, the expired-snapshot error, time travel by time and
system tables."""
from __future__ import annotations

import dataclasses
import json
import random

import pyarrow as pa
import pytest

import paimon_streaming as ps
from paimon_streaming.consumers import ConsumerManager
from paimon_streaming.errors import InvalidOptionError, SnapshotExpiredError, SnapshotNotFoundError
from paimon_streaming.manifest import ManifestList
from paimon_streaming.paths import PathFactory
from paimon_streaming.snapshot import COMPACT
from paimon_streaming.streaming_scan import (CHANGELOG, DELTA, FULL, OVERWRITE_DIFF, ReadLimits, StreamingScan,
                                             StreamPosition)
from paimon_streaming.system_tables import SYSTEM_TABLES, split_system_table, system_table, system_table_schema
from paimon_streaming.time_travel import earlier_or_equal, earlier_than, snapshot_at
from conftest import pypaimon_create, pypaimon_write
from stream_batches import open_stream, read_units
from paimon_streaming.json_check import CHECK_KEY, json_check

KIND = "_kind"
SCHEMA = pa.schema([("id", pa.int64()), ("v", pa.string()), ("dt", pa.string())])


# ---- helpers ------------------------------------------------------------------------------------
def stream_scan(t: ps.Table, **options) -> StreamingScan:
    return open_stream(t, {k: str(v) for k, v in options.items()})


def rows_of(ss: StreamingScan, units, columns=("id", "v", "dt")) -> list[dict]:
    return [r for _, rows in read_units(ss, units, list(columns), kind=KIND) for r in rows.to_pylist()]


def drain(ss: StreamingScan, start: StreamPosition | None = None, limits: ReadLimits | None = None,
          last_snapshot: int | None = None):
    """Consume the stream batch by batch; returns (rows per batch, final position)."""
    pos = ss.start_position() if start is None else start
    batches = []
    while True:
        pos = ss.resolved(pos)  # as the source's latestOffset: partitions(start, end) reads from it
        units, end = ss.plan_batch(pos, limits, last_snapshot)
        if not units:
            return batches, pos
        assert ss.units_between(pos, end) == units  # partitions(start, end) sees the admitted units
        batches.append(rows_of(ss, units))
        pos = end


def flat(batches) -> list[dict]:
    return [r for b in batches for r in b]


def key(r) -> tuple:
    return (r["id"], r["dt"])


def pk_table(catalog, name="db.pk", **options) -> ps.Table:
    return catalog.create_table(name, SCHEMA, primary_keys=["id", "dt"], partition_keys=["dt"],
                                options={"bucket": "2", **options})


def append_table(catalog, name="db.ap", **options) -> ps.Table:
    return catalog.create_table(name, SCHEMA, partition_keys=["dt"], options=options)


def batch(ids, v="v", dt=None, op=None) -> pa.Table:
    cols = {"id": pa.array(ids, pa.int64()), "v": [f"{v}{i}" for i in ids],
            "dt": [dt or f"d{i % 2}" for i in ids]}
    if op is not None:
        cols["op"] = [op] * len(ids)
    return pa.table(cols)


def commit_noop(t: ps.Table, kind: str = COMPACT) -> int:
    """A snapshot that changes no data (as a compaction that rewrote nothing would)."""
    latest = t.latest_snapshot()
    ml = ManifestList(t.file_io, PathFactory(t.path, "parquet"))
    base = ml.read(latest.base_manifest_list) + ml.read(latest.delta_manifest_list)
    base_name, base_size = ml.write(base)
    delta_name, delta_size = ml.write([])
    snap = dataclasses.replace(latest, id=latest.id + 1, base_manifest_list=base_name,
                               base_manifest_list_size=base_size, delta_manifest_list=delta_name,
                               delta_manifest_list_size=delta_size, changelog_manifest_list=None,
                               changelog_manifest_list_size=None, commit_kind=kind, delta_record_count=0,
                               time_millis=latest.time_millis + 1)
    assert t.snapshot_manager.try_publish(snap)
    t.snapshot_manager.commit_latest_hint(snap.id)
    return snap.id


def expire_before(t: ps.Table, snapshot_id: int) -> None:
    """Remove snapshot files below `snapshot_id` (their data files stay: enough for these tests)."""
    for s in t.snapshots():
        if s.id < snapshot_id:
            t.file_io.delete(t.snapshot_manager.path(s.id))
    t.snapshot_manager.commit_earliest_hint(snapshot_id)


def create_tag(t: ps.Table, name: str, snapshot_id: int) -> None:
    t.file_io.write_bytes(t.tag_manager.path(name), t.snapshot(snapshot_id).to_json().encode())


# ---- start modes ---------------------------------------------------------------------------------
def test_start_modes(catalog):
    t = append_table(catalog)
    # empty table: latest-full and from-timestamp are resolved at the first snapshot, latest reads from it
    assert stream_scan(t).start_position() == StreamPosition(1, pending=True)
    assert stream_scan(t, **{"scan.timestamp-millis": 0}).start_position() == StreamPosition(1, pending=True)
    assert stream_scan(t, **{"scan.mode": "latest"}).start_position() == StreamPosition(1)
    assert stream_scan(t, **{"scan.snapshot-id": 3}).start_position() == StreamPosition(3)
    for i in range(4):
        t.write_arrow(batch([i]))
    times = [s.time_millis for s in t.snapshots()]
    assert stream_scan(t).start_position() == StreamPosition(4, 0, True)  # latest-full
    assert stream_scan(t, **{"scan.mode": "full"}).start_position() == StreamPosition(4, 0, True)
    assert stream_scan(t, **{"scan.mode": "latest"}).start_position() == StreamPosition(5)
    assert stream_scan(t, **{"scan.snapshot-id": 2}).start_position() == StreamPosition(2)  # default -> from-snapshot
    assert stream_scan(t, **{"scan.mode": "from-snapshot-full", "scan.snapshot-id": 2}).start_position() == \
        StreamPosition(2, 0, True)
    assert stream_scan(t, **{"scan.timestamp-millis": times[2]}).start_position() == StreamPosition(3)
    assert stream_scan(t, **{"scan.timestamp-millis": times[2] + 1}).start_position() == StreamPosition(4)
    assert stream_scan(t, **{"scan.timestamp-millis": 0}).start_position() == StreamPosition(1)
    assert stream_scan(t, **{"scan.timestamp-millis": times[3] + 1}).start_position() == StreamPosition(5)
    create_tag(t, "t2", 2)
    assert stream_scan(t, **{"scan.tag-name": "t2"}).start_position() == StreamPosition(2, 0, True)
    assert stream_scan(t, **{"scan.mode": "from-snapshot", "scan.tag-name": "t2"}).start_position() == \
        StreamPosition(2)
    # an expired start snapshot starts from the earliest one, as Java does
    expire_before(t, 3)
    assert stream_scan(t, **{"scan.snapshot-id": 1}).start_position() == StreamPosition(3)


def test_from_timestamp_starts_in_the_long_lived_changelogs(catalog):
    """Snapshots expired as long-lived changelogs (a table keeping its changelog longer than the
    expiration's arguments keep snapshots): a from-timestamp stream at an instant before the
    earliest snapshot started there, dropping the commits since the instant that the changelogs
    still hold (a from-snapshot start read them). As Java's, it searches the changelogs with the
    snapshots, and an instant before them all starts at the earliest changelog."""
    t = pk_table(catalog, **{"bucket": "1", "changelog-producer": "input", "changelog.num-retained.max": "100",
                             "write-only": "true"})
    for i in range(1, 9):
        t.write_arrow(batch([i]))
    times = [s.time_millis for s in t.snapshots()]
    t.expire_snapshots(retain_max=2, retain_min=1)
    assert t.snapshot_manager.earliest_id() == 7
    for instant in (0, times[0], times[2] - 1, times[2], times[5] + 1, times[7] + 1):
        ss = stream_scan(t, **{"scan.timestamp-millis": instant})
        assert sorted(r["id"] for r in flat(drain(ss)[0])) == [i for i, m in enumerate(times, 1) if m >= instant]


@pytest.mark.parametrize("options, expected", [
    ({}, [1, 2, 3]), ({"scan.mode": "compacted-full"}, [1, 2, 3]),
    ({"scan.timestamp-millis": 4_102_444_800_000}, []),      # 2100: after every commit
    ({"scan.timestamp-millis": 0}, [3])])                    # before: from the first (an OVERWRITE, skipped)
def test_a_start_on_an_empty_table_is_resolved_at_its_first_snapshot(catalog, options, expected):
    """A stream started on a table without a snapshot started at snapshot 1's changes: with
    from-timestamp it read the commits made before its instant (a stream started after them
    reads none), with latest-full it skipped a first INSERT OVERWRITE (an OVERWRITE has no
    changes to stream). Java's starting scanner is asked again at each plan until there is a
    snapshot; ours is pending until then and reads what a stream started then reads."""
    t = pk_table(catalog)
    ss = stream_scan(t, **options)
    start = ss.start_position()
    assert start.pending and ss.plan_batch(start) == ([], start)
    t.write_arrow(batch([1, 2]), overwrite=True)
    t.write_arrow(batch([3]))
    assert sorted(r["id"] for r in flat(drain(ss, start)[0])) == expected == \
        sorted(r["id"] for r in flat(drain(stream_scan(t, **options))[0]))
    with pytest.raises(ValueError, match="pending"):
        ss.units_between(start, StreamPosition(3))


def test_invalid_start_options(catalog):
    t = append_table(catalog)
    t.write_arrow(batch([1]))
    with pytest.raises(InvalidOptionError, match="scan.mode"):
        stream_scan(t, **{"scan.mode": "sometimes"})
    with pytest.raises(InvalidOptionError, match="not supported"):
        stream_scan(t, **{"scan.mode": "incremental"})
    with pytest.raises(InvalidOptionError, match="scan.snapshot-id"):
        stream_scan(t, **{"scan.mode": "from-snapshot"}).start_position()
    with pytest.raises(InvalidOptionError, match="scan.timestamp-millis"):
        stream_scan(t, **{"scan.mode": "from-timestamp"}).start_position()
    with pytest.raises(SnapshotNotFoundError, match="tag 'nope'"):
        stream_scan(t, **{"scan.tag-name": "nope"}).start_position()


def test_table_option_sets_scan_mode(catalog):
    t = append_table(catalog, "db.opt", **{"scan.mode": "latest"})
    t.write_arrow(batch([1]))
    assert stream_scan(t).start_position() == StreamPosition(2)
    assert stream_scan(t, **{"scan.mode": "latest-full"}).start_position() == StreamPosition(1, 0, True)


# ---- what each snapshot contributes --------------------------------------------------------------
def test_append_table_deltas_skip_compact_and_overwrite(catalog):
    t = append_table(catalog)
    t.write_arrow(batch([1, 2]))
    t.write_arrow(batch([3]))
    commit_noop(t)                                   # COMPACT: no rows
    t.write_arrow(batch([4, 5], v="o"), overwrite=True)  # OVERWRITE: skipped by default
    t.write_arrow(batch([6]))
    ss = stream_scan(t, **{"scan.mode": "from-snapshot", "scan.snapshot-id": 1})
    batches, pos = drain(ss)
    assert sorted(r["id"] for r in flat(batches)) == [1, 2, 3, 6]
    assert {r[KIND] for r in flat(batches)} == {"+I"}
    assert pos == StreamPosition(6)
    assert [u.kind for s in range(1, 6) for u in ss.snapshot_units(s, False)] == [DELTA] * 4
    assert ss.snapshot_units(3, False) == [] and ss.snapshot_units(4, False) == []
    assert ss.snapshot_units(7, False) is None       # not committed yet
    # streaming-read-overwrite: an append table's overwrite contributes its new files
    ss = stream_scan(t, **{"scan.mode": "from-snapshot", "scan.snapshot-id": 1, "streaming-read-overwrite": "true"})
    assert sorted(r["id"] for r in flat(drain(ss)[0])) == [1, 2, 3, 4, 5, 6]


def test_latest_full_then_changes(catalog):
    t = pk_table(catalog)
    t.write_arrow(batch([1, 2, 3]))
    t.write_arrow(batch([2], v="u"))
    ss = stream_scan(t)
    units, end = ss.plan_batch(ss.start_position())
    assert {u.kind for u in units} == {FULL} and end == StreamPosition(3)
    assert sorted((r["id"], r["v"], r[KIND]) for r in rows_of(ss, units)) == \
        [(1, "v1", "+I"), (2, "u2", "+I"), (3, "v3", "+I")]
    t.write_arrow(batch([3, 4], v="w"))
    units, end2 = ss.plan_batch(end)
    assert {u.kind for u in units} == {DELTA} and end2 == StreamPosition(4)
    assert sorted((r["id"], r["v"]) for r in rows_of(ss, units)) == [(3, "w3"), (4, "w4")]
    assert ss.plan_batch(end2) == ([], end2)


def test_primary_key_deltas_carry_row_kinds(catalog):
    """Without a changelog producer a PK table's deltas hold the written rows: upserts as
    +I/+U of the new value only, deletions as -D."""
    t = pk_table(catalog)
    t.write_arrow(batch([1, 2, 3]))
    t.write_arrow(batch([2], v="u", op="+U"), row_kind_column="op")
    t.write_arrow(batch([3], op="-D"), row_kind_column="op")
    ss = stream_scan(t, **{"scan.mode": "from-snapshot", "scan.snapshot-id": 2})
    got = sorted((r["id"], r["v"], r[KIND]) for r in flat(drain(ss)[0]))
    assert got == [(2, "u2", "+U"), (3, "v3", "-D")]
    # without a row kind column the retractions are dropped
    units = ss.units_between(StreamPosition(2), StreamPosition(4))
    plain = [r for _, rows in read_units(ss, units, ["id", "v"], kind=None) for r in rows.to_pylist()]
    assert plain == [{"id": 2, "v": "u2"}]


@pytest.mark.parametrize("seed", [1, 2, 3])
def test_applying_the_stream_gives_the_table(catalog, seed):
    """Model check: apply every +I/+U as an upsert and -D as a delete; the result is the table,
    whatever limits cut the stream into batches and wherever it starts."""
    rnd = random.Random(seed)
    t = pk_table(catalog, f"db.m{seed}")
    for n in range(8):
        ids = rnd.sample(range(30), rnd.randint(1, 8))
        if n > 1 and rnd.random() < 0.35:
            t.write_arrow(batch(ids, op="-D"), row_kind_column="op")
        else:
            t.write_arrow(batch(ids, v=f"b{n}-"))
        if rnd.random() < 0.3:
            commit_noop(t)
    expected = sorted(t.to_arrow().to_pylist(), key=key)
    limits = ReadLimits(max_files=rnd.randint(1, 3), max_snapshots=rnd.choice([None, 1, 2]))
    for options in ({"scan.mode": "from-snapshot", "scan.snapshot-id": 1}, {}):  # all changes; latest-full
        model = {}
        batches, _ = drain(stream_scan(t, **options), limits=limits)
        assert len(batches) > 1
        for r in flat(batches):
            if r[KIND] in ("+I", "+U"):
                model[key(r)] = {k: r[k] for k in ("id", "v", "dt")}
            elif r[KIND] == "-D":
                model.pop(key(r), None)
        assert sorted(model.values(), key=key) == expected


def test_overwrite_diff_on_primary_key_table(catalog):
    t = pk_table(catalog)
    t.write_arrow(batch([1, 2, 3], dt="a"))
    t.write_arrow(batch([2, 3, 4], v="n", dt="a").set_column(1, "v", pa.array(["v2", "n3", "n4"])),
                  overwrite=True)
    ss = stream_scan(t, **{"scan.mode": "latest", "streaming-read-overwrite": "true"})
    start = StreamPosition(2)
    units = ss.units_between(start, StreamPosition(3))
    assert [u.kind for u in units] == [OVERWRITE_DIFF] * len(units) and units
    got = sorted((r["id"], r["v"], r[KIND]) for r in rows_of(ss, units))
    # as Java's stream (IncrementalChangelogReadProvider): the replaced rows -D, the new ones +I,
    # unchanged rows too (a diff per key is a batch incremental read's)
    assert got == [(1, "v1", "-D"), (2, "v2", "+I"), (2, "v2", "-D"), (3, "n3", "+I"), (3, "v3", "-D"),
                   (4, "n4", "+I")]
    assert stream_scan(t, **{"scan.mode": "latest"}).snapshot_units(2, False) == []  # skipped by default
    # buckets only one side holds (a new partition): before session 23 a KeyError
    t.write_arrow(batch([5], dt="b"), overwrite=True)
    got = sorted((r["id"], r["v"], r[KIND]) for r in rows_of(ss, ss.units_between(StreamPosition(3), StreamPosition(4))))
    assert got == [(2, "v2", "-D"), (3, "n3", "-D"), (4, "n4", "-D"), (5, "v5", "+I")]


def test_reading_overwrites_of_a_lookup_changelog_table_is_refused(catalog):
    """An overwrite of a table with `changelog-producer` = lookup is followed by a compaction
    whose changelog holds its changes again: streamed with `streaming-read-overwrite`, every
    overwritten key came twice (+U from the diff, then +I from the changelog). Java refuses
    the combination (as a table option at create, as SchemaValidation does); so does this
    stream now, by name."""
    options = {"deletion-vectors.enabled": "true", "changelog-producer": "lookup"}
    read = {"streaming-read-overwrite": "true"}
    with pytest.raises(InvalidOptionError, match="'streaming-read-overwrite' = 'true' cannot go with"):
        pk_table(catalog, **options, **read)
    t = pk_table(catalog, **options)
    t.write_arrow(batch([1, 2], dt="a"))
    with pytest.raises(InvalidOptionError, match="'streaming-read-overwrite' = true cannot stream a table whose "
                                                 "changelog-producer is 'lookup'"):
        stream_scan(t, **{"scan.mode": "from-snapshot", "scan.snapshot-id": "1", **read})


def test_changelog_files_of_a_pypaimon_table(warehouse):
    """changelog-producer=input: the stream reads the changelog files pypaimon wrote."""
    schema = pa.schema([pa.field("id", pa.int64(), False), ("v", pa.string())])
    pypaimon_create(warehouse, "db.c", schema, primary_keys=["id"],
                    options={"bucket": "1", "changelog-producer": "input"})
    pypaimon_write(warehouse, "db.c", pa.table({"id": [1, 2], "v": ["a", "b"]}, schema=schema))
    pypaimon_write(warehouse, "db.c", pa.table({"id": [2, 3], "v": ["b2", "c"]}, schema=schema))
    t = ps.Catalog(warehouse).get_table("db.c")
    ss = stream_scan(t, **{"scan.mode": "from-snapshot", "scan.snapshot-id": 1})
    units, _ = ss.plan_batch(ss.start_position())
    assert {u.kind for u in units} == {CHANGELOG}
    assert all(f.file_name.startswith("changelog-") for u in units for f in u.split.files)
    assert [(r["id"], r["v"], r[KIND]) for r in rows_of(ss, units, ("id", "v"))] == \
        [(1, "a", "+I"), (2, "b", "+I"), (2, "b2", "+I"), (3, "c", "+I")]


def test_full_start_from_tag_survives_snapshot_expiration(catalog):
    t = pk_table(catalog)
    t.write_arrow(batch([1, 2]))
    t.write_arrow(batch([2, 3], v="u"))
    create_tag(t, "v2", 2)
    t.write_arrow(batch([4]))
    expire_before(t, 3)
    ss = stream_scan(t, **{"scan.tag-name": "v2"})
    batches, pos = drain(ss)
    assert sorted((r["id"], r["v"], r[KIND]) for r in flat(batches)) == \
        [(1, "v1", "+I"), (2, "u2", "+I"), (3, "u3", "+I"), (4, "v4", "+I")]
    assert pos == StreamPosition(4)
    # cut into batches of one file: each position inside the tag's state is marked from the tag
    # (it failed: snapshot 2 does not exist)
    batches, pos = drain(stream_scan(t, **{"scan.tag-name": "v2"}), limits=ReadLimits(max_files=1))
    assert len(batches) == 4 and pos == StreamPosition(4)
    assert sorted((r["id"], r["v"]) for r in flat(batches)) == [(1, "v1"), (2, "u2"), (3, "u3"), (4, "v4")]
    # a consumer that started there ({"nextSnapshot": 2, "fullRead": true}) resumes the tag's state
    # (it was refused: snapshot 2 expired), as a Spark query with a consumer-id restarts its start
    ss = stream_scan(t, **{"scan.tag-name": "v2", "consumer-id": "c1"})
    ss.record_progress(ss.start_position())
    again = stream_scan(t, **{"scan.tag-name": "v2", "consumer-id": "c1"})
    assert again.start_position() == StreamPosition(2, 0, True)
    assert sorted(r["id"] for r in flat(drain(again)[0])) == [1, 2, 3, 4]
    t.file_io.delete(t.tag_manager.path("v2"))  # without the tag, the state is gone: the documented error
    with pytest.raises(SnapshotExpiredError, match="consumer 'c1' is at snapshot 2 .*consumer-id"):
        stream_scan(t, **{"consumer-id": "c1"}).start_position()


def test_a_starting_state_whose_snapshot_expired_mid_read_is_the_expired_error(catalog):
    """A latest-full read cut by a limit, its snapshot expired before the rest was read: the
    rest of its files is no longer known to exist (expiration deletes those only it had), so the
    stream fails naming the options that keep it, in the running stream (from its cached plan:
    it failed with a bare SnapshotNotFoundError) as after a restart; never a partial state."""
    t = catalog.create_table("db.fe", pa.schema([("id", pa.int64())]), options={"bucket": "-1"})
    for i in range(3):
        t.write_arrow(pa.table({"id": pa.array([i], pa.int64())}))
    ss = stream_scan(t)
    units, pos = ss.plan_batch(ss.start_position(), ReadLimits(max_files=1))
    assert len(units) == 1 and pos == StreamPosition(3, 1, True)
    for i in range(3):
        t.write_arrow(pa.table({"id": pa.array([10 + i], pa.int64())}))
    t.expire_snapshots(retain_max=1, retain_min=1)
    for reader in (ss, stream_scan(t)):
        for limits in (ReadLimits(max_files=1), None):
            with pytest.raises(SnapshotExpiredError) as err:
                reader.plan_batch(pos, limits)
            msg = str(err.value)
            assert "starting state needs snapshot 3" in msg and "earliest snapshot is 7" in msg
            assert "consumer-id" in msg and "snapshot.num-retained.min" in msg


# ---- admission and positions ---------------------------------------------------------------------
def test_limits_cut_a_backlog_into_resumable_batches(catalog):
    t = append_table(catalog)
    for i in range(5):
        t.write_arrow(batch([10 * i + j for j in range(4)]))  # 2 files per snapshot (2 partitions)
    ss = stream_scan(t, **{"scan.mode": "from-snapshot", "scan.snapshot-id": 1})
    all_rows = sorted(r["id"] for r in flat(drain(ss)[0]))
    assert len(all_rows) == 20
    for limits, n_batches in ((ReadLimits(max_files=3), 4), (ReadLimits(max_snapshots=2), 3),
                              (ReadLimits(max_rows=5), 5), (ReadLimits(max_files=1), 10),
                              (ReadLimits(max_files=100, max_snapshots=1), 5)):
        batches, pos = drain(ss, limits=limits)
        assert len(batches) == n_batches, limits
        assert sorted(r["id"] for r in flat(batches)) == all_rows  # nothing lost, nothing repeated
        assert pos == StreamPosition(7)  # past snapshot 6, the COMPACT that merged five files a partition
    units, end = ss.plan_batch(StreamPosition(1), ReadLimits(max_files=3))
    assert end == StreamPosition(2, 1)                # stopped inside snapshot 2
    # a unit larger than the limit still goes through (at least one unit per batch)
    units, end = ss.plan_batch(StreamPosition(1), ReadLimits(max_rows=1))
    assert len(units) == 1 and end == StreamPosition(1, 1)


def test_full_phase_is_cut_by_limits_too(catalog):
    t = append_table(catalog)
    for i in range(3):
        t.write_arrow(batch([10 * i + j for j in range(4)]))
    ss = stream_scan(t)
    batches, pos = drain(ss, limits=ReadLimits(max_files=2))
    assert len(batches) == 3 and sorted(r["id"] for r in flat(batches)) == sorted(
        r["id"] for r in t.to_arrow().to_pylist())
    assert pos == StreamPosition(4)


def test_available_now_cap(catalog):
    t = append_table(catalog)
    for i in range(3):
        t.write_arrow(batch([i]))
    ss = stream_scan(t, **{"scan.mode": "from-snapshot", "scan.snapshot-id": 1})
    batches, pos = drain(ss, last_snapshot=2)
    assert sorted(r["id"] for r in flat(batches)) == [0, 1] and pos == StreamPosition(3)
    # a full start newer than the cap (committed after AvailableNow fixed it) is read whole, in batches too
    batches, pos = drain(stream_scan(t), limits=ReadLimits(max_files=1), last_snapshot=2)
    assert sorted(r["id"] for r in flat(batches)) == [0, 1, 2] and pos == StreamPosition(4)


def test_position_round_trip():
    p = StreamPosition(7, 3, True)
    assert StreamPosition.from_dict(json.loads(json.dumps(p.to_dict()))) == p
    pending = StreamPosition(1, pending=True)
    assert pending.to_dict() == {"snapshot": 1, "units": 0, "full": False, "pending": True}
    assert StreamPosition.from_dict(pending.to_dict()) == pending
    assert not StreamPosition.from_dict({"snapshot": 1, "units": 0, "full": False}).pending  # offsets before it
    with pytest.raises(ValueError, match="offset"):
        StreamPosition.from_dict({"units": 1})
    with pytest.raises(InvalidOptionError):
        ReadLimits(max_files=0)


# ---- expired snapshots -----------------------------------------------------------------------------
def test_expired_snapshot_is_a_clear_error(catalog):
    t = append_table(catalog)
    for i in range(4):
        t.write_arrow(batch([i]))
    ss = stream_scan(t, **{"scan.mode": "from-snapshot", "scan.snapshot-id": 1})
    units, pos = ss.plan_batch(StreamPosition(1), ReadLimits(max_snapshots=1))
    assert pos == StreamPosition(2)
    expire_before(t, 3)
    ss = stream_scan(t, **{"scan.mode": "from-snapshot", "scan.snapshot-id": 1})  # a restarted reader
    with pytest.raises(SnapshotExpiredError) as err:
        ss.plan_batch(pos)
    msg = str(err.value)
    assert "snapshot 2" in msg and "earliest snapshot is 3" in msg
    assert "consumer-id" in msg and "snapshot.num-retained.min" in msg
    with pytest.raises(SnapshotExpiredError, match="snapshot 2"):
        ss.units_between(pos, StreamPosition(4))


def test_a_caught_up_stream_steps_over_compactions(catalog):
    """A stream with nothing to read but compaction snapshots stayed before them: once they
    expired, its restart failed with SnapshotExpiredError (and never read what came after),
    though it had needed nothing of them. Java's stream steps over them (nextSnapshotId++)."""
    t = catalog.create_table("db.c", pa.schema([pa.field("id", pa.int64(), False), ("v", pa.string())]),
                             primary_keys=["id"], options={"bucket": "2"})
    t.write_arrow(pa.table({"id": [1, 2, 3, 4], "v": list("abcd")}))
    ss = stream_scan(t, **{"scan.mode": "latest-full"})
    units, pos = ss.plan_batch(ss.start_position())
    assert units and pos.snapshot == 2
    t.compact(full=True)
    assert t.latest_snapshot().commit_kind == COMPACT
    units, moved = ss.plan_batch(pos)
    assert units == [] and moved.snapshot == 3 and moved.read_time == t.latest_snapshot().time_millis
    assert ss.plan_batch(moved) == ([], moved)  # idle: the same position
    t.write_arrow(pa.table({"id": [9], "v": ["z"]}))
    t.expire_snapshots(retain_max=1, retain_min=1)
    restarted = stream_scan(t, **{"scan.mode": "latest-full"})
    units, _ = restarted.plan_batch(moved)
    assert [r["id"] for _, rows in read_units(restarted, units, ["id"]) for r in rows.to_pylist()] == [9]


def test_a_rollback_below_the_position_is_an_error(catalog):
    """A stream at snapshot 4 (read 1-3): rolled back to 2 and committed again (3, 4 anew), its
    next plan refuses instead of skipping the new snapshot 3; a position whose last snapshot
    expired since (a plain expiration) goes on."""
    t = append_table(catalog)
    for i in range(3):
        t.write_arrow(batch([i]))
    ss = stream_scan(t, **{"scan.mode": "from-snapshot", "scan.snapshot-id": 1})
    _, pos = ss.plan_batch(StreamPosition(1))
    assert pos == StreamPosition(4) and pos.read_time == t.snapshot(3).time_millis
    assert StreamPosition.from_dict(pos.to_dict()).read_time == pos.read_time
    t.rollback_to(2)
    with pytest.raises(SnapshotNotFoundError, match="rolled back below this stream's position: snapshot 3"):
        ss.plan_batch(pos)   # not yet committed again: snapshot 3 does not exist
    for i in (10, 11):
        t.write_arrow(batch([i]))
    with pytest.raises(SnapshotNotFoundError, match="snapshot 3, which the stream had reached .* is now another"):
        stream_scan(t).plan_batch(pos)
    with pytest.raises(SnapshotNotFoundError, match="rolled back"):
        stream_scan(t).units_between(pos, StreamPosition(5))
    _, pos = stream_scan(t).plan_batch(StreamPosition(1))   # a new stream: read 1-4
    t.write_arrow(batch([12]))
    expire_before(t, 5)
    units, _ = stream_scan(t).plan_batch(pos)                 # snapshot 4 expired since: goes on
    assert [u.snapshot_id for u in units] == [5]


@pytest.mark.parametrize("mode", ["latest", "from-timestamp"])
def test_a_rollback_below_a_new_streams_start_is_an_error(catalog, mode):
    """A stream that has read nothing yet (started after snapshot 3, idle): rolled back to 2
    and committed again, its next plan refuses. Before, the start carried no mark, and the
    stream read only the newest snapshot: the rows of the new 3 were skipped."""
    t = append_table(catalog)
    for i in range(3):
        t.write_arrow(batch([i]))
    options = {"scan.mode": mode}
    if mode == "from-timestamp":
        options["scan.timestamp-millis"] = t.snapshot(3).time_millis + 1
    ss = stream_scan(t, **options)
    start = ss.start_position()
    assert start == StreamPosition(4) and start.read_time == t.snapshot(3).time_millis
    units, pos = ss.plan_batch(start)
    assert units == [] and pos.read_time == start.read_time
    t.rollback_to(2)
    for i in (10, 11):
        t.write_arrow(batch([i]))
    with pytest.raises(SnapshotNotFoundError, match="snapshot 3, which the stream had reached .* is now another"):
        stream_scan(t, **options).plan_batch(pos)


def test_a_plan_made_before_a_rollback_is_made_again(catalog):
    """A batch limited to one file plans snapshot 2 without delivering it; the table is rolled
    back to 1 and committed again (a new snapshot 2). The next batch read the cached plan of the
    old snapshot 2, the rolled-back row, and never the new one."""
    t = append_table(catalog)
    t.write_arrow(batch([1]))
    t.write_arrow(batch([2], v="old"))
    t.create_tag("t2", 2)  # keeps the old snapshot's files
    ss = stream_scan(t, **{"scan.mode": "from-snapshot", "scan.snapshot-id": 1})
    units, pos = ss.plan_batch(ss.start_position(), ReadLimits(max_files=1))
    assert rows_of(ss, units) == [{"id": 1, "v": "v1", "dt": "d1", "_kind": "+I"}] and pos.snapshot == 2
    t.rollback_to(1)
    t.write_arrow(batch([3], v="new"))
    units, _ = ss.plan_batch(pos, ReadLimits(max_files=1))
    assert rows_of(ss, units) == [{"id": 3, "v": "new3", "dt": "d1", "_kind": "+I"}]


# ---- consumers ---------------------------------------------------------------------------------------
def test_consumer_files(catalog):
    t = append_table(catalog)
    cm = ConsumerManager(t.file_io, t.path)
    assert cm.consumers() == {} and cm.min_next_snapshot() is None and cm.next_snapshot("a") is None
    cm.record("a", 5)
    cm.record("b", 3)
    cm.record("a", 7)
    assert json.loads(t.file_io.read_text(f"{t.path}/consumer/consumer-a")) == {"nextSnapshot": 7, CHECK_KEY: json_check([7])}
    assert cm.consumers() == {"a": 7, "b": 3} and cm.min_next_snapshot() == 3
    cm.delete("b")
    assert cm.consumer_ids() == ["a"]
    with pytest.raises(ValueError, match="consumer id"):
        cm.record("../x", 1)


def test_consumer_progress_is_recorded_and_resumed(catalog):
    t = append_table(catalog)
    for i in range(3):
        t.write_arrow(batch([i]))
    ss = stream_scan(t, **{"scan.mode": "from-snapshot", "scan.snapshot-id": 1, "consumer-id": "job"})
    units, end = ss.plan_batch(ss.start_position(), ReadLimits(max_snapshots=2))
    ss.record_progress(end)
    assert ConsumerManager(t.file_io, t.path).consumers() == {"job": 3}
    # a new stream with the same consumer id starts where the consumer stopped
    again = stream_scan(t, **{"consumer-id": "job"})
    assert again.start_position() == StreamPosition(3)
    assert [r["id"] for r in flat(drain(again)[0])] == [2]
    assert stream_scan(t, **{"consumer-id": "job", "consumer.ignore-progress": "true"}).start_position() == \
        StreamPosition(3, 0, True)
    t.write_arrow(batch([3]))
    t.write_arrow(batch([4]))
    expire_before(t, 5)
    with pytest.raises(SnapshotExpiredError, match="consumer 'job'"):
        stream_scan(t, **{"consumer-id": "job"}).start_position()


def test_a_consumer_beyond_the_next_commit_is_refused(catalog):
    """A consumer whose next snapshot is beyond the latest + 1 (left by Java's rollback, which does
    not move consumers, or kept when the table was re-created): the stream started there
    silently, and once the writers caught up skipped every commit up to it. It is refused
    naming the consumer, its snapshot and the latest, as Java's stream refuses it; at the
    latest + 1 it waits for the next commit, and `consumer.ignore-progress` starts afresh."""
    t = append_table(catalog)
    cm = ConsumerManager(t.file_io, t.path)
    cm.record("job", 3)
    with pytest.raises(SnapshotNotFoundError, match="consumer 'job' is at snapshot 3.*latest snapshot [(]none[)]"):
        stream_scan(t, **{"consumer-id": "job"}).start_position()
    for i in range(5):
        t.write_arrow(batch([i]))
    cm.record("job", 9)
    with pytest.raises(SnapshotNotFoundError, match=r"consumer 'job' is at snapshot 9 .*latest snapshot 5.*6\.\.8"
                                                    r".*consumer.ignore-progress"):
        stream_scan(t, **{"consumer-id": "job"}).start_position()
    assert stream_scan(t, **{"consumer-id": "job", "consumer.ignore-progress": "true"}).start_position() == \
        StreamPosition(5, 0, True)
    cm.record("job", 6)
    ss = stream_scan(t, **{"consumer-id": "job"})
    start = ss.start_position()
    assert start == StreamPosition(6)
    t.write_arrow(batch([5]))
    assert [r["id"] for r in flat(drain(ss, start)[0])] == [5]


def test_progress_past_a_rollback_is_not_recorded(catalog):
    """Spark commits a batch's end after planning the next: a rollback in between moved the
    consumer back, and the commit wrote the old end again, so a new query with the consumer id
    skipped what was committed after the rollback."""
    t = append_table(catalog)
    for i in range(3):
        t.write_arrow(batch([i]))
    ss = stream_scan(t, **{"scan.mode": "from-snapshot", "scan.snapshot-id": 1, "consumer-id": "job"})
    _, end = ss.plan_batch(ss.start_position())
    assert end.snapshot == 4
    t.rollback_to(1)
    t.write_arrow(batch([10]))
    with pytest.raises(SnapshotNotFoundError, match="rolled back below this stream's position"):
        ss.record_progress(end)
    assert ConsumerManager(t.file_io, t.path).consumers() == {} or \
        ConsumerManager(t.file_io, t.path).next_snapshot("job") <= 2


def test_a_consumer_mid_way_through_the_starting_state_resumes_it_whole(catalog):
    """A stream stopped part way through its full starting read recorded only {"nextSnapshot": 3}:
    a new stream with the consumer id read snapshot 3's changes, and never the rest of the state."""
    t = append_table(catalog)
    for i in range(3):
        t.write_arrow(batch([i * 10, i * 10 + 1]))
    ss = stream_scan(t, **{"consumer-id": "job"})
    start = ss.start_position()
    assert start == StreamPosition(3, 0, True)
    _, end = ss.plan_batch(start, ReadLimits(max_files=1))
    assert end.full and end.units > 0
    ss.record_progress(end)
    recorded = json.loads(t.file_io.read_text(f"{t.path}/consumer/consumer-job"))
    assert recorded["nextSnapshot"] == 3 and recorded["fullRead"] is True
    again = stream_scan(t, **{"consumer-id": "job"})
    assert again.start_position() == StreamPosition(3, 0, True)
    assert sorted(r["id"] for r in flat(drain(again)[0])) == [0, 1, 10, 11, 20, 21]
    ss.record_progress(StreamPosition(4))  # past the starting state: a plain position again
    assert "fullRead" not in json.loads(t.file_io.read_text(f"{t.path}/consumer/consumer-job"))


def test_a_rollback_moves_consumers_back_to_what_remains(catalog):
    """After a rollback to 2 and new commits 3-6, a consumer that had read to 7 started at 7,
    skipping the four new commits."""
    t = append_table(catalog)
    for i in range(6):
        t.write_arrow(batch([i]))
    cm = ConsumerManager(t.file_io, t.path)
    cm.record("ahead", 7)
    cm.record("starting", 5, full_read=True)
    cm.record("behind", 2)
    t.rollback_to(2)
    assert cm.every_progress() == {"ahead": (3, False), "starting": (2, True), "behind": (2, False)}
    for i in range(10, 14):
        t.write_arrow(batch([i]))
    assert sorted(r["id"] for r in flat(drain(stream_scan(t, **{"consumer-id": "ahead"}))[0])) == [10, 11, 12, 13]
    assert sorted(r["id"] for r in flat(drain(stream_scan(t, **{"consumer-id": "starting"}))[0])) == \
        [0, 1, 10, 11, 12, 13]


# ---- time travel --------------------------------------------------------------------------------------
def test_time_travel_by_timestamp(catalog):
    t = append_table(catalog)
    for i in range(3):
        t.write_arrow(batch([i]))
    times = [s.time_millis for s in t.snapshots()]
    sm = t.snapshot_manager
    assert earlier_or_equal(sm, times[1]) == 2 and earlier_than(sm, times[1]) == 1
    assert earlier_or_equal(sm, times[0] - 1) is None and earlier_or_equal(sm, times[2] + 10) == 3
    assert snapshot_at(sm, t.tag_manager, timestamp_millis=times[1]).id == 2
    with pytest.raises(SnapshotNotFoundError, match="at or before"):
        snapshot_at(sm, t.tag_manager, timestamp_millis=times[0] - 1)
    with pytest.raises(ValueError, match="one of"):
        snapshot_at(sm, t.tag_manager, snapshot_id=1, tag="x")


# ---- system tables ------------------------------------------------------------------------------------
def test_system_tables(catalog):
    t = pk_table(catalog, **{"deletion-vectors.enabled": "false"})
    t.write_arrow(batch([1, 2, 3]))
    t.write_arrow(batch([4]))
    create_tag(t, "first", 1)
    ConsumerManager(t.file_io, t.path).record("c1", 2)
    tables = {name: system_table(t, name) for name in SYSTEM_TABLES}
    for name, data in tables.items():
        assert data.schema.equals(system_table_schema(name)), name
    snaps = tables["snapshots"].to_pylist()
    assert [(s["snapshot_id"], s["commit_kind"], s["total_record_count"]) for s in snaps] == \
        [(1, "APPEND", 3), (2, "APPEND", 4)]
    assert snaps[0]["commit_time"].tzinfo is not None
    assert [(r["tag_name"], r["snapshot_id"], r["record_count"]) for r in tables["tags"].to_pylist()] == \
        [("first", 1, 3)]
    files = tables["files"].to_pylist()
    assert sum(f["record_count"] for f in files) == 4 and {f["partition"] for f in files} == {"{d0}", "{d1}"}
    assert all(t.file_io.exists(f["file_path"]) and f["file_format"] == "parquet" for f in files)
    assert all(f["min_key"].startswith("[") and "id=" in f["min_value_stats"] for f in files)
    assert sum(system_table(t, "files", t.snapshot(1)).column("record_count").to_pylist()) == 3
    assert [(p["partition"], p["record_count"], p["file_count"]) for p in tables["partitions"].to_pylist()] == \
        [(f"dt={d}", sum(f["record_count"] for f in files if f["partition"] == f"{{{d}}}"),
          sum(f["partition"] == f"{{{d}}}" for f in files)) for d in ("d0", "d1")]
    manifests = tables["manifests"].to_pylist()
    assert sum(m["num_added_files"] for m in manifests) == len(files)
    schemas = tables["schemas"].to_pylist()
    assert schemas[0]["schema_id"] == 0 and json.loads(schemas[0]["primary_keys"]) == ["id", "dt"]
    assert [f["name"] for f in json.loads(schemas[0]["fields"])] == ["id", "v", "dt"]
    assert {"key": "bucket", "value": "2"} in tables["options"].to_pylist()
    assert tables["consumers"].to_pylist() == [{"consumer_id": "c1", "next_snapshot_id": 2}]
    assert split_system_table("/wh/db.db/t$Snapshots") == ("/wh/db.db/t", "snapshots")
    assert split_system_table("/wh/db.db/t") == ("/wh/db.db/t", None)
    assert split_system_table("/wh/a$b/t") == ("/wh/a$b/t", None)


def test_start_options_resolved_against_the_table(catalog):
    """`scan.version` names a tag, else a snapshot id, else is refused naming it; `from-timestamp`
    on a table without snapshots is resolved at the first one; a boolean option takes true/false only."""
    t = append_table(catalog, "db.ver")
    assert stream_scan(t, **{"scan.mode": "from-timestamp", "scan.timestamp-millis": 1}).start_position() == \
        StreamPosition(1, pending=True)
    t.write_arrow(batch([1]))
    t.write_arrow(batch([2]))
    t.create_tag("v1", snapshot_id=1)
    assert stream_scan(t, **{"scan.version": "v1"}).start_position() == StreamPosition(1, 0, True)  # as scan.tag-name
    assert stream_scan(t, **{"scan.version": "2"}).start_position() == StreamPosition(2)
    with pytest.raises(InvalidOptionError, match="'scan.version' = 'v9' is neither a tag of .* nor a snapshot id"):
        stream_scan(t, **{"scan.version": "v9"}).start_position()
    with pytest.raises(InvalidOptionError, match="'consumer.ignore-progress' must be true or false, got 'yes'"):
        stream_scan(t, **{"consumer.ignore-progress": "yes"})
    with pytest.raises(InvalidOptionError, match="'scan.snapshot-id' must be an integer, got 'x'"):
        stream_scan(t, **{"scan.snapshot-id": "x"})
    with pytest.raises(InvalidOptionError, match="give only one of"):
        stream_scan(t, **{"scan.version": "1", "scan.tag-name": "2"})
