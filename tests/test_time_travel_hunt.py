"""A hunt for silent wrong answers in time travel: every way to name a point in time (snapshot
ids, tags, `scan.version`, epoch millis, `scan.timestamp` local-time strings, start modes,
incremental ranges), through `Table.to_arrow` and the table's own options, the "paimon" data
source's options (`ReadSpec`) and a stream's start, against a model of which snapshot holds
which rows and Apache Paimon Java 1.4.2 reading the same table with the same options.

Found (each a regression test below): `scan.timestamp` strings (and naive datetimes) one
millisecond early (float rounding) and an hour early in a DST gap (Java moves them forward);
`scan.timestamp` and `scan.version` kept in a table's options ignored by streams (and
`scan.version` by batch reads), which then read the latest state; `scan.mode` from-timestamp /
from-snapshot / incremental without its option read the latest snapshot (Java refuses them);
time-travel spellings of other systems (`version`, `tag-name`, `scan.startup.mode`, ...)
ignored; a Spark stream with `scan.timestamp` refused; signed epoch millis in
`incremental-between-timestamp` refused.

Divergences from Java kept on purpose (Java's are bugs): snapshots committed in the same
millisecond: a read at that instant sees the newest of them (Java's binary search stops at any:
7 snapshots at T, Java reads snapshot 4); a branch's `scan.tag-name` is the branch's own tag
(Java 1.4.2 looks it up in the main branch's tags).

TIME_TRAVEL_EXAMPLES (default 25) sets how many hypothesis examples the model tests run.
"""
from __future__ import annotations

import datetime as dt
import os

import pyarrow as pa
import pytest
from hypothesis import given, settings, strategies as st, HealthCheck

import paimon_streaming as ps
from paimon_streaming.errors import InvalidOptionError, PaimonError
from paimon_streaming.sources.options import ReadSpec
from paimon_streaming.table_scan_options import TableScanOptions
from paimon_streaming.time_travel import parse_local_timestamp

from java_oracle import JavaRefusal, get_oracle
from stream_batches import open_stream, stream_rows

EXAMPLES = int(os.environ.get("TIME_TRAVEL_EXAMPLES", "25"))
SCHEMA = pa.schema([pa.field("id", pa.int64(), False)])
FIELDS = [{"name": "id", "type": "BIGINT NOT NULL"}]


def local_text(millis: int, digits: int = 3) -> str:
    """`millis` as a local 'yyyy-MM-dd HH:mm:ss.SSS' (exact: no float on the way)."""
    instant = dt.datetime(1970, 1, 1, tzinfo=dt.timezone.utc) + dt.timedelta(milliseconds=millis)
    local = instant.astimezone().replace(tzinfo=None)
    text = local.strftime("%Y-%m-%d %H:%M:%S")
    if digits:
        text += "." + f"{local.microsecond:06d}000"[:digits]
    return text


def ids(table: pa.Table) -> list[int]:
    return sorted(table.column("id").to_pylist())


# ---- scan.timestamp strings -------------------------------------------------------------------

@settings(max_examples=max(EXAMPLES * 25, 200), deadline=None)
@given(st.integers(0, 4102444800000))
def test_a_local_time_with_millis_names_that_very_millisecond(millis):
    """Found: the float `timestamp() * 1000` truncated ~0.6% of millisecond instants to the one
    before ('2039-03-08 19:46:13.411' -> ...410), so time travel to a snapshot's own commit
    time (as `$snapshots` shows it) read the snapshot before."""
    assert parse_local_timestamp(local_text(millis), "scan.timestamp") == millis
    # `changes_between` / `expire_snapshots(older_than=...)` datetimes: naive (local) and aware
    from paimon_streaming.table import _epoch_millis
    assert _epoch_millis(dt.datetime.fromisoformat(local_text(millis, 6))) == millis
    aware = dt.datetime(1970, 1, 1, tzinfo=dt.timezone.utc) + dt.timedelta(milliseconds=millis)
    assert _epoch_millis(aware.astimezone(dt.timezone(dt.timedelta(hours=-3)))) == millis


def test_scan_timestamp_formats_java_parses(time_zone):
    """Java's `yyyy-[MM][M]-[dd][d][ [HH][H]:[mm][m]:[ss][s][.fraction 0-9 digits]]`, in the
    JVM's zone, truncated to millis; ours gives the same instants."""
    time_zone("Asia/Kolkata")
    base = dt.datetime(2024, 5, 1, 12, 0, 0, tzinfo=dt.timezone(dt.timedelta(hours=5, minutes=30)))
    ms = int(base.timestamp()) * 1000
    cases = {"2024-05-01 12:00:00": ms, "2024-05-01": ms - 12 * 3600_000, "2024-5-1": ms - 12 * 3600_000,
             "2024-05-01 12:00:00.1": ms + 100, "2024-05-01 12:00:00.123456789": ms + 123,
             "2024-05-01 12:00:00.0009": ms, "2024-05-01 1:2:3": ms - 11 * 3600_000 + 123_000,
             " 2024-05-01 12:00:00 ": ms}
    for text, expected in cases.items():
        assert parse_local_timestamp(text, "scan.timestamp") == expected, text
    for bad in ("yesterday", "2024-05-01 12", "2024/05/01", "1714564800000", "2024-05-01 25:00:00"):
        with pytest.raises(InvalidOptionError, match="scan.timestamp"):
            parse_local_timestamp(bad, "scan.timestamp")


@pytest.mark.parametrize("zone, text, utc", [
    # DST gaps: the local time does not exist; Java moves it forward by the gap
    ("Europe/Berlin", "2026-03-29 02:30:00", "2026-03-29 01:30:00"),
    ("America/New_York", "2026-03-08 02:30:00", "2026-03-08 07:30:00"),
    ("Australia/Lord_Howe", "2026-10-04 02:15:00", "2026-10-03 15:45:00"),
    # overlaps: the earlier of the two instants, as Java
    ("Europe/Berlin", "2026-10-25 02:30:00", "2026-10-25 00:30:00"),
    ("America/New_York", "2026-11-01 01:30:00", "2026-11-01 05:30:00"),
    ("Australia/Lord_Howe", "2026-04-05 01:45:00", "2026-04-04 14:45:00"),
    ("UTC", "2026-03-29 02:30:00", "2026-03-29 02:30:00"),
])
def test_scan_timestamp_across_dst_transitions(time_zone, zone, text, utc):
    time_zone(zone)
    expected = int(dt.datetime.fromisoformat(utc).replace(tzinfo=dt.timezone.utc).timestamp()) * 1000
    assert parse_local_timestamp(text, "scan.timestamp") == expected


ZONES = ["Europe/Berlin", "America/New_York", "Australia/Lord_Howe", "Asia/Kolkata", "America/St_Johns",
         "Pacific/Chatham", "Europe/Dublin", "America/Sao_Paulo", "UTC"]


@settings(max_examples=max(EXAMPLES * 2, 40), deadline=None,
          suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(zone=st.sampled_from(ZONES), wall=st.datetimes(dt.datetime(1901, 1, 1), dt.datetime(2100, 1, 1)))
def test_local_times_in_any_zone_as_java_reads_them(time_zone, zone, wall):
    """Java's `LocalDateTime.atZone` is zoneinfo's fold=0 (PEP 495): an overlap's earlier instant,
    a gap's time moved forward by the gap (the offset before it), in the JVM's zone data."""
    from paimon_streaming.tzdb import zone_info
    time_zone(zone)
    text = wall.strftime("%Y-%m-%d %H:%M:%S") + f".{wall.microsecond:06d}"
    epoch = dt.datetime(1970, 1, 1, tzinfo=dt.timezone.utc)
    expected = (wall.replace(tzinfo=zone_info(zone), fold=0) - epoch) // dt.timedelta(milliseconds=1)
    assert parse_local_timestamp(text, "scan.timestamp") == expected, (zone, text)


JAVA_TEXTS = {"Europe/Berlin": ["2026-03-29 02:30:00", "2026-10-25 02:30:00", "2026-03-29 02:00:00.5",
                                "2026-10-25 03:00:00", "2024-2-9 7:05:09.123456"],
              "America/New_York": ["2026-03-08 02:30:00", "2026-11-01 01:30:00.999", "2026-11-01"],
              "Australia/Lord_Howe": ["2026-10-04 02:15:00", "2026-04-05 01:45:00"],
              # the JVM's zone data, not the system's: Debian's has other offsets before 1970 here
              "Europe/Amsterdam": ["1900-01-01 12:00:00", "1937-06-30 13:00:00"], "Europe/Oslo": ["1965-07-01 13:00:00"]}


def test_scan_timestamp_instants_match_javas_in_other_zones(tmp_path, time_zone):
    """Java names the instant it parsed when no snapshot is that old: the two parses agree in
    zones with DST (the JVM takes its default zone from TZ, as this process does)."""
    import re
    java = get_oracle()
    path = str(tmp_path / "db.db" / "t")
    with java.batch() as b:
        b.create_table(path, FIELDS)
        b.write(path, [{"id": 1}])
    for zone, texts in JAVA_TEXTS.items():
        time_zone(zone)
        with java.batch() as b:
            refusals = [b.read(path, options={"scan.timestamp": text}, catch_error=True) for text in texts]
        for text, refusal in zip(texts, refusals):
            parsed = re.search(r"earlier than or equal to timestamp \[(-?\d+)\]", refusal.result.error)
            assert parsed, refusal.result
            assert parse_local_timestamp(text, "scan.timestamp") == int(parsed.group(1)), (zone, text)


# ---- start options kept in a table's options, and the data source's ---------------------------

KEPT = {"scan.timestamp": ([1, 2], 2, [2, 3]), "scan.version": ([1, 2], 2, [2, 3]), "scan.version-tag": ([1], 1, None)}


def _three_snapshots(b, path: str):
    """Ids 1, 2, 3 in snapshots 1, 2, 3, and tag '3' (numeric: Java allows it) on snapshot 1;
    the snapshots as Java lists them (pending)."""
    b.create_table(path, FIELDS)
    for i in (1, 2, 3):
        b.write(path, [{"id": i}])
    b.create_tag(path, "3", 1)
    return b.snapshots(path)


def _set_options(path: str, options: dict[str, str]) -> ps.Table:
    t = ps.Table.open(path)
    update = t.update_schema()
    for key, value in options.items():
        update = update.set_option(key, value)
    update.commit()
    return ps.Table.open(path)


def test_start_options_kept_in_the_tables_options_steer_batch_reads_and_streams(tmp_path):
    """Found: a table altered with `scan.timestamp` streamed from its latest state, and one with
    `scan.version` read (batch and stream) its latest snapshot, as if the option were not
    there; Java reads both from the point they name. And a Spark stream given `scan.timestamp`
    was refused: ReadSpec turned it into `scan.timestamp-millis` in the options the stream then
    took as two start options."""
    from paimon_streaming.sources.reader import read_schema
    java = get_oracle()
    paths = {kind: str(tmp_path / "db.db" / kind.replace(".", "_")) for kind in [*KEPT, "read option"]}
    with java.batch() as b:
        listed = {kind: _three_snapshots(b, path) for kind, path in paths.items()}
    at2 = {kind: local_text(snapshots.result[1]["timeMillis"]) for kind, snapshots in listed.items()}
    tables = {kind: _set_options(paths[kind], {kind.removesuffix("-tag"): {"scan.timestamp": at2[kind],
                                                                           "scan.version": "2"}.get(kind, "3")})
              for kind in KEPT}
    with java.batch() as b:
        java_batch = {kind: b.read(paths[kind]) for kind in KEPT}
        java_stream = {kind: b.read(paths[kind], stream_plans=5) for kind, (_, _, s) in KEPT.items() if s}
        java_read_option = b.read(paths["read option"], options={"scan.timestamp": at2["read option"]},
                                  stream_plans=5)
    for kind, (rows, snapshot_id, streamed) in KEPT.items():
        t = tables[kind]
        assert sorted(r["id"] for r in java_batch[kind].result) == rows == ids(t.to_arrow()), kind
        spec = ReadSpec.parse({"path": t.path}).with_table_scan_options()
        assert read_schema(t, spec)[0].id == snapshot_id, kind
        # Java refuses a tag in a stream; ours reads the tagged state, then what follows
        got = sorted(r["id"] for r in stream_rows(open_stream(t, {}), ["id"]))
        if streamed is None:
            assert got == [1, 2, 3], kind
        else:
            assert got == sorted(r["id"] for r in java_stream[kind].result) == streamed, kind
    # the data source's `scan.timestamp`, batch and stream
    path = paths["read option"]
    spec = ReadSpec.parse({"path": path, "scan.timestamp": at2["read option"]})
    assert spec.timestamp_millis == listed["read option"].result[1]["timeMillis"]
    streamed = sorted(r["id"] for r in stream_rows(open_stream(ps.Table.open(path), spec.options), ["id"]))
    assert streamed == sorted(r["id"] for r in java_read_option.result) == [2, 3]


# ---- every way to name a point, against a model and Java ----------------------------------------
#
# A primary-key table (one bucket) whose snapshots 1-7 are: +[1], +[2], COMPACT, +[3], OVERWRITE
# [10], +[11], +[12]; tags '3' -> 1 and '7' -> 4 (numeric names, as Java allows: a tag wins over
# the snapshot id of the same digits in `scan.version` and `incremental-between`), 'v2' -> 2,
# 'v5' -> 5, and daily automatic tags '2024-12-01' -> 4, '2024-12-02' -> 6, '2024-12-04' -> 7
# (`incremental-to-auto-tag`); then snapshots 1-3 expire (their tags keep them readable).

STATE = {1: [1], 2: [1, 2], 3: [1, 2], 4: [1, 2, 3], 5: [10], 6: [10, 11], 7: [10, 11, 12]}
ADDED = {1: [1], 2: [2], 3: [], 4: [3], 5: [], 6: [11], 7: [12]}  # what a stream reads per snapshot
TAGS = {"3": 1, "7": 4, "v2": 2, "v5": 5, "2024-12-01": 4, "2024-12-02": 6, "2024-12-04": 7}  # daily auto tags
EARLIEST = 4


@pytest.fixture(scope="module")
def history(tmp_path_factory):
    java = get_oracle()
    path = str(tmp_path_factory.mktemp("tt") / "db.db" / "t")
    with java.batch() as b:
        b.create_table(path, FIELDS, primary_keys=["id"],
                       options={"bucket": "1", "num-sorted-run.compaction-trigger": "20",
                                "tag.creation-period": "daily"})
        b.write(path, [{"id": 1}])
        b.write(path, [{"id": 2}])
        b.compact(path)
        b.write(path, [{"id": 3}])
    # ours (the oracle's overwrite of an unpartitioned table sends no static partition: Java appends)
    ps.Table.open(path).write_arrow(pa.table({"id": [10]}, schema=SCHEMA), overwrite=True)
    with java.batch() as b:
        b.write(path, [{"id": 11}])
        b.write(path, [{"id": 12}])
        for tag, snapshot_id in TAGS.items():
            b.create_tag(path, tag, snapshot_id)
        listed = b.snapshots(path)
        b.expire(path, {"snapshot.num-retained.max": "4", "snapshot.num-retained.min": "1"})
    kinds = [s["commitKind"] for s in listed.result]
    assert kinds == ["APPEND", "APPEND", "COMPACT", "APPEND", "OVERWRITE", "APPEND", "APPEND"], kinds
    times = {s["id"]: s["timeMillis"] for s in listed.result}
    assert ps.Table.open(path).snapshot_manager.earliest_id() == EARLIEST
    return path, times


def model_at(times: dict[int, int], millis: int) -> int | None:
    """The snapshot a batch read at `millis` sees: the newest committed at or before it (None:
    none, or only expired ones: an error)."""
    at = [i for i, t in times.items() if t <= millis]
    return max(at) if at and max(at) >= EARLIEST else None


def ambiguous_for_java(times: dict[int, int], millis: int) -> bool:
    """Java's `earlierOrEqualTimeMills` stops at any snapshot whose time equals the instant
    exactly, not the newest of several committed in that millisecond."""
    return sum(1 for t in times.values() if t == millis) > 1


def batch_queries(times: dict[int, int]) -> list[tuple[str, dict[str, str], int | None]]:
    """(name, read options, the snapshot read, None: an error) for every spelling."""
    q = []
    for i in range(1, 9):
        q.append((f"snapshot {i}", {"scan.snapshot-id": str(i)}, i if EARLIEST <= i <= 7 else None))
        q.append((f"from-snapshot {i}", {"scan.mode": "from-snapshot", "scan.snapshot-id": str(i)},
                  i if EARLIEST <= i <= 7 else None))
        q.append((f"from-snapshot-full {i}", {"scan.mode": "from-snapshot-full", "scan.snapshot-id": str(i)},
                  i if EARLIEST <= i <= 7 else None))
    for tag, i in TAGS.items():
        q.append((f"tag {tag}", {"scan.tag-name": tag}, i))
        q.append((f"version {tag}", {"scan.version": tag}, i))
    for version in ("6", "5", "2", "9"):
        q.append((f"version {version}", {"scan.version": version}, int(version) if EARLIEST <= int(version) <= 7
                  else None))
    for i, t in times.items():
        for delta in (-1, 0, 1):
            millis = t + delta
            expected = model_at(times, millis)
            q.append((f"millis t{i}{delta:+d}", {"scan.timestamp-millis": str(millis)}, expected))
            q.append((f"from-timestamp t{i}{delta:+d}", {"scan.mode": "from-timestamp",
                                                         "scan.timestamp-millis": str(millis)}, expected))
        q.append((f"local t{i}", {"scan.timestamp": local_text(t)}, model_at(times, t)))
        q.append((f"local t{i} 9 digits", {"scan.timestamp": local_text(t, 9)}, model_at(times, t)))
    last = max(times.values())
    q.append(("millis far later", {"scan.timestamp-millis": str(last + 86_400_000)}, 7))
    q.append(("local day", {"scan.timestamp": local_text(last + 86_400_000, 0)[:10]}, 7))
    q.append(("latest", {"scan.mode": "latest"}, 7))
    q.append(("latest-full", {"scan.mode": "latest-full"}, 7))
    q.append(("full", {"scan.mode": "full"}, 7))
    return q


def test_batch_time_travel_matches_the_model_and_java(history):
    path, times = history
    t = ps.Table.open(path)
    from paimon_streaming.sources.reader import read_schema
    from paimon_streaming.table_scan_options import TableScanOptions
    queries = batch_queries(times)
    ok = [(name, opts, want) for name, opts, want in queries
          if want is not None and not ambiguous_for_java(times, int(opts.get("scan.timestamp-millis", 0)))]
    java = get_oracle()
    with java.batch() as b:
        java_rows = {name: b.read(path, options=opts) for name, opts, _ in ok}
    for name, opts, want in queries:
        # the data source's options
        if want is None:
            with pytest.raises(PaimonError):
                spec = ReadSpec.parse({"path": path, **opts}).with_table_scan_options()
                read_schema(t, spec)
        else:
            spec = ReadSpec.parse({"path": path, **opts}).with_table_scan_options()
            snapshot, _ = read_schema(t, spec)
            assert snapshot.id == want, name
            read = t.to_arrow(tag=spec.tag) if spec.tag is not None else t.to_arrow(snapshot_id=snapshot.id)
            assert ids(read) == STATE[want], name
        # the same keys kept in the table's options
        if want is None:
            with pytest.raises(PaimonError):
                TableScanOptions.of(opts, t.name).snapshot(t.snapshot_manager, t.tag_manager, t.options)
        else:
            kept = TableScanOptions.of(opts, t.name).snapshot(t.snapshot_manager, t.tag_manager, t.options)
            assert kept.id == want, name
        if name in java_rows:
            assert sorted(r["id"] for r in java_rows[name].result) == STATE[want], name


REFUSED = {
    "expired snapshot": {"scan.snapshot-id": "2"}, "no such snapshot": {"scan.snapshot-id": "8"},
    "expired version": {"scan.version": "2"}, "before the earliest retained": {"scan.timestamp-millis": "0"},
    "snapshot and tag": {"scan.snapshot-id": "5", "scan.tag-name": "v5"},
    "latest with a snapshot": {"scan.mode": "latest", "scan.snapshot-id": "5"},
    "timestamp with a snapshot": {"scan.timestamp-millis": "5", "scan.snapshot-id": "5"},
    # found: these read the latest snapshot (the mode's option missing)
    "from-timestamp without one": {"scan.mode": "from-timestamp"},
    "from-snapshot without one": {"scan.mode": "from-snapshot"},
    "from-snapshot-full with a tag": {"scan.mode": "from-snapshot-full", "scan.tag-name": "v5"},
    "incremental without a range": {"scan.mode": "incremental"},
}
REFUSED_INCREMENTAL = {
    "expired range": {"incremental-between": "1,4"}, "backwards": {"incremental-between": "6,4"},
    "a tag and an id": {"incremental-between": "v2,6"},
    "tags to expired snapshots": {"incremental-between": "3,7", "incremental-between-tag-to-snapshot": "true"},
}


def test_what_java_refuses_is_refused(history):
    """Each answers with an error in Java; ours too, rather than the latest snapshot."""
    from paimon_streaming.sources.reader import read_schema
    path, _ = history
    t = ps.Table.open(path)
    with get_oracle().batch() as b:
        java = {name: b.read(path, options=opts, catch_error=True) for name, opts in
                {**REFUSED, **REFUSED_INCREMENTAL}.items()}
    for name, refusal in java.items():
        assert isinstance(refusal.result, JavaRefusal), name
    for name, opts in REFUSED.items():
        with pytest.raises(PaimonError):
            read_schema(t, ReadSpec.parse({"path": path, **opts}).with_table_scan_options())
        with pytest.raises(PaimonError):
            TableScanOptions.of(opts, t.name).snapshot(t.snapshot_manager, t.tag_manager, t.options)
    for name, opts in REFUSED_INCREMENTAL.items():
        with pytest.raises(PaimonError):
            t.read_incremental(ReadSpec.parse({"path": path, **opts}).incremental)


def model_stream(start: int, full: bool) -> list[int]:
    """The ids a stream reads from `start` (clamped to the earliest retained snapshot): that
    snapshot's state when `full`, else its changes, then every later snapshot's changes."""
    start = max(start, EARLIEST)
    first = STATE[start] if full else ADDED[start]
    return sorted(first + [i for s in range(start + 1, 8) for i in ADDED[s]])


def stream_queries(times: dict[int, int]) -> list[tuple[str, dict[str, str], list[int] | None, bool]]:
    """(name, options, the ids streamed (None: an error), whether Java reads it the same)."""
    q = [("default", {}, STATE[7], True), ("latest", {"scan.mode": "latest"}, [], True),
         ("latest-full", {"scan.mode": "latest-full"}, STATE[7], True), ("full", {"scan.mode": "full"}, STATE[7], True)]
    for k in range(1, 8):
        q.append((f"snapshot {k}", {"scan.snapshot-id": str(k)}, model_stream(k, False), True))
        q.append((f"from-snapshot {k}", {"scan.mode": "from-snapshot", "scan.snapshot-id": str(k)},
                  model_stream(k, False), True))
        q.append((f"from-snapshot-full {k}", {"scan.mode": "from-snapshot-full", "scan.snapshot-id": str(k)},
                  model_stream(k, True), True))
    q.append(("snapshot 8 (next)", {"scan.snapshot-id": "8"}, [], True))
    for i, t in times.items():
        for delta in (-1, 0, 1):
            millis = t + delta
            before = [s for s, ts in times.items() if ts < millis]
            start = max(before) + 1 if before else 1
            expected = [] if start > 7 else model_stream(start, False)
            q.append((f"millis t{i}{delta:+d}", {"scan.timestamp-millis": str(millis)}, expected, True))
        q.append((f"local t{i}", {"scan.timestamp": local_text(t)},
                  [] if min(s for s, ts in times.items() if ts >= t) > 7 else
                  model_stream(min(s for s, ts in times.items() if ts >= t), False), True))
    q.append(("version 6", {"scan.version": "6"}, model_stream(6, False), True))
    # tags: Java refuses a tag in a stream; ours reads the tagged state, then the later changes
    q.append(("version 7 (a tag)", {"scan.version": "7"}, model_stream(4, True), False))
    q.append(("tag v5", {"scan.tag-name": "v5"}, model_stream(5, True), False))
    return q


def test_stream_starts_match_the_model_and_java(history):
    path, times = history
    t = ps.Table.open(path)
    queries = stream_queries(times)
    java = get_oracle()
    with java.batch() as b:
        java_rows = {name: b.read(path, options=opts, stream_plans=10) for name, opts, _, same in queries if same}
    for name, opts, want, _ in queries:
        # as the data source hands the options over (scan.version resolved, scan.timestamp kept)
        spec = ReadSpec.parse({"path": path, **opts})
        got = sorted(r["id"] for r in stream_rows(open_stream(t, spec.options), ["id"]))
        assert got == want, name
        assert sorted(r["id"] for r in stream_rows(open_stream(t, opts), ["id"])) == want, name
        if name in java_rows:
            assert sorted(r["id"] for r in java_rows[name].result) == want, name


# ---- snapshots committed in the same millisecond: a model over random commit times -------------

@settings(max_examples=EXAMPLES, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(gaps=st.lists(st.integers(0, 3), min_size=1, max_size=6), data=st.data())
def test_instants_against_a_model_of_commit_times(tmp_path_factory, gaps, data):
    """Snapshot i adds id i; commit times rise by `gaps` (0: the same millisecond as the one
    before). A batch read at T sees the newest snapshot committed at or before T (the newest of
    those sharing T's millisecond: Java's search may stop at any of them), a stream from T reads
    the snapshots committed at or after T, an incremental query (T1, T2] those in between."""
    from metadata_edits import edit_snapshot
    from paimon_streaming.incremental import IncrementalRange
    from paimon_streaming.sources.reader import read_schema
    catalog = ps.Catalog(str(tmp_path_factory.mktemp("same-ms")))
    t = catalog.create_table("db.t", SCHEMA, options={"write-only": "true"})  # no compaction snapshots
    base = 1_700_000_000_000
    times = {}
    for i, gap in enumerate(gaps, start=1):
        t.write_arrow(pa.table({"id": [i]}, schema=SCHEMA))
        times[i] = (times[i - 1] if i > 1 else base) + gap
    for i, millis in times.items():
        edit_snapshot(f"{t.path}/snapshot/snapshot-{i}", time_millis=millis)
    t = ps.Table.open(t.path)
    points = st.sampled_from(sorted({m + d for m in times.values() for d in (-1, 0, 1)}))
    for _ in range(4):
        at = data.draw(points)
        newest = max((i for i, m in times.items() if m <= at), default=None)
        for opts in ({"scan.timestamp-millis": str(at)}, {"scan.timestamp": local_text(at)}):
            spec = ReadSpec.parse({"path": t.path, **opts})
            if newest is None:
                with pytest.raises(PaimonError, match="no snapshot"):
                    read_schema(t, spec)
            else:
                assert read_schema(t, spec)[0].id == newest, (times, at)
            streamed = sorted(r["id"] for r in stream_rows(open_stream(t, spec.options), ["id"]))
            assert streamed == [i for i, m in times.items() if m >= at], (times, at)
        end = data.draw(points)
        if end < at:
            at, end = end, at
        query = IncrementalRange(between_timestamps=(at, end), mode="delta")
        got = ids(t.read_incremental(query))
        assert got == [i for i, m in times.items() if at < m <= end], (times, at, end)
        wall = [dt.datetime.fromisoformat(local_text(m)) for m in (at, end)]  # naive: local time
        assert ids(t.changes_between(*wall, mode="delta")) == got, (times, at, end)
        text = ReadSpec.parse({"path": t.path, "incremental-between-timestamp":
                               f"{local_text(at)},{local_text(end)}"}).incremental
        assert text.between_timestamps == (at, end)


def incremental_queries(times: dict[int, int]) -> list[tuple[str, dict[str, str]]]:
    t = times
    q = [("ids 4,7", {"incremental-between": "4,7"}),
         ("ids 4,7 diff", {"incremental-between": "4,7", "incremental-between-scan-mode": "diff"}),
         ("ids 4,7 delta", {"incremental-between": "4,7", "incremental-between-scan-mode": "delta"}),
         ("ids 5,6", {"incremental-between": "5,6"}),
         ("ids 3,6 (tag 3, no tag 6)", {"incremental-between": "3,6"}),
         ("tags 3,7 (numeric)", {"incremental-between": "3,7"}),
         ("tags v2,v5", {"incremental-between": "v2,v5"}),
         ("tags 7,v5", {"incremental-between": "7,v5"}),
         ("tags 7,7", {"incremental-between": "7,7"}),
         ("tags 7,v5 to snapshot", {"incremental-between": "7,v5", "incremental-between-tag-to-snapshot": "true"}),
         ("millis t4,t7", {"incremental-between-timestamp": f"{t[4]},{t[7]}"}),
         ("millis t1,t6", {"incremental-between-timestamp": f"{t[1]},{t[6]}"}),
         ("millis t5-1,t6+1 diff", {"incremental-between-timestamp": f"{t[5] - 1},{t[6] + 1}",
                                    "incremental-between-scan-mode": "diff"}),
         ("millis t6,later", {"incremental-between-timestamp": f"{t[6]},{t[7] + 10_000}"}),
         ("signed millis", {"incremental-between-timestamp": f"-1,+{t[6]}"}),
         ("local t4,t7", {"incremental-between-timestamp": f"{local_text(t[4])},{local_text(t[7])}"}),
         ("local t3,t5", {"incremental-between-timestamp": f"{local_text(t[3])},{local_text(t[5])}"}),
         *((f"to auto tag {day}", {"incremental-to-auto-tag": day}) for day in
           ("2024-12-01", "2024-12-02", "2024-12-03", "2024-12-04"))]
    return q


def changes(rows, kind_key) -> list[tuple[str, int]]:
    """The rows after the change with their kinds (Java's batch reads drop -D and -U rows; ours
    give them with a row kind column, as Java's audit_log: incremental.py)."""
    return sorted((r[kind_key], r["id"]) for r in rows if r[kind_key] in ("+I", "+U"))


def test_incremental_queries_match_java(history):
    """Every spelling of an incremental range over expired snapshots, numeric tags (a tag wins
    over a snapshot id of the same digits only when both ends are tags, as Java), COMPACT and
    OVERWRITE snapshots, instants and local times."""
    path, times = history
    t = ps.Table.open(path)
    queries = incremental_queries(times)
    java = get_oracle()
    with java.batch() as b:
        java_rows = {name: b.read(path, options=opts, with_row_kind=True) for name, opts in queries}
    for name, opts in queries:
        query = ReadSpec.parse({"path": path, **opts}).incremental
        ours = changes(t.read_incremental(query, row_kind_column="_kind").to_pylist(), "_kind")
        assert ours == changes(java_rows[name].result, "_ROW_KIND"), name
        kept = TableScanOptions.of(opts, t.name).incremental  # the same kept in the table's options
        assert kept == query, name


# ---- spellings users try ---------------------------------------------------------------------

@pytest.mark.parametrize("key, value, meant", [
    ("versionAsOf", "1", "snapshot-id"), ("timestampAsOf", "2024-01-01", "scan.timestamp"),
    ("as-of-timestamp", "1", "timestamp-millis"), ("scan.snapshotid", "1", "scan.snapshot-id"),
    ("scan.tag_name", "v1", "scan.tag-name"), ("snapshotId", "1", "snapshot-id"),
    # found: each of these was ignored, and the read answered from the latest snapshot
    ("version", "1", "scan.version"), ("snapshot", "1", "snapshot-id"), ("tag-name", "v1", "scan.tag-name"),
    ("tagName", "v1", "scan.tag-name"), ("scan.tag", "v1", "scan.tag-name"),
    ("timestamp", "2024-01-01", "scan.timestamp"),
    ("version-as-of", "1", "scan.version"), ("as-of-version", "1", "scan.version"),
    ("scan.snapshot", "1", "scan.snapshot-id"), ("snapshot-timestamp", "1", "timestamp-millis"),
    ("scan.timestamp-ms", "1", "scan.timestamp-millis"), ("scan.startup.mode", "latest", "scan.mode"),
    ("scan.startup-mode", "latest", "scan.mode"), ("startup-mode", "latest", "scan.mode"),
    ("scan.incremental-between", "1,2", "incremental-between"), ("branch-name", "dev", "branch"),
    ("branchName", "dev", "branch"), ("scan.branch", "dev", "branch"),
])
def test_time_travel_spellings_of_other_systems_are_refused_naming_ours(tmp_path, key, value, meant):
    with pytest.raises(InvalidOptionError, match=f"(?s){key.lower()!r}.*'{meant}'"):
        ReadSpec.parse({"path": str(tmp_path), key.lower(): value})


# ---- branches ----------------------------------------------------------------------------------

def test_time_travel_on_a_branch_reads_the_branchs_snapshots_and_tags(tmp_path):
    """A branch from tag 't' (main snapshot 1) with two snapshots of its own, its own tags 'bt'
    and 'dup' (main has a 'dup' too). Snapshot ids, instants and incremental ranges: as Java.
    Tags: the branch's own (Java 1.4.2 looks a `scan.tag-name` up in the main branch's tags:
    'dup' reads main's, 'bt' does not exist there, StaticFromTagStartingScanner)."""
    java = get_oracle()
    path = str(tmp_path / "db.db" / "t")
    with java.batch() as b:
        b.create_table(path, FIELDS)
        b.write(path, [{"id": 1}])
        b.write(path, [{"id": 2}])
        b.create_tag(path, "t", 1)
        b.create_branch(path, "dev", "t")
        b.write(path, [{"id": 100}], branch="dev")
        b.write(path, [{"id": 101}], branch="dev")
    dev = ps.Table.open(path, branch="dev")
    dev.create_tag("bt", 2)
    dev.create_tag("dup", 3)
    ps.Table.open(path).create_tag("dup", 1)
    state = {1: [1], 2: [1, 100], 3: [1, 100, 101]}
    times = {i: dev.snapshot(i).time_millis for i in state}
    cases = [({}, 3, True), ({"scan.snapshot-id": "2"}, 2, True), ({"scan.version": "2"}, 2, True),
             ({"scan.timestamp-millis": str(times[2])}, 2, not ambiguous_for_java(times, times[2])),
             ({"scan.timestamp": local_text(times[3])}, 3, not ambiguous_for_java(times, times[3])),
             ({"scan.tag-name": "bt"}, 2, False), ({"scan.version": "dup"}, 3, False),
             ({"scan.tag-name": "t"}, 1, False)]
    with java.batch() as b:
        java_rows = [b.read(path, branch="dev", options=opts) if same else None for opts, _, same in cases]
        java_changes = b.read(path, branch="dev", options={"incremental-between": "bt,dup"})
    from paimon_streaming.sources.reader import read_schema
    for (opts, want, _), rows in zip(cases, java_rows):
        spec = ReadSpec.parse({"path": path, "branch": "dev", **opts}).with_table_scan_options()
        snapshot, _ = read_schema(spec.table(), spec)
        assert snapshot.id == want, opts
        assert ids(dev.to_arrow(tag=spec.tag) if spec.tag else dev.to_arrow(snapshot_id=want)) == state[want], opts
        if rows is not None:
            assert sorted(r["id"] for r in rows.result) == state[want], opts
    query = ReadSpec.parse({"path": path, "branch": "dev", "incremental-between": "bt,dup"}).incremental
    assert ids(dev.read_incremental(query)) == sorted(r["id"] for r in java_changes.result) == [101]
    # a stream of the branch from its tag 'bt' (ours: the tagged state, then what follows)
    assert sorted(r["id"] for r in stream_rows(open_stream(dev, {"scan.version": "bt"}), ["id"])) == [1, 100, 101]
    assert sorted(r["id"] for r in stream_rows(open_stream(dev, {"scan.version": "3"}), ["id"])) == [101]


# ---- through Spark -----------------------------------------------------------------------------

def test_spark_reads_every_spelling_of_a_point_in_time(spark, tmp_path):
    """spark.read / readStream.format("paimon") with the spellings found wrong above."""
    path = str(tmp_path / "db.db" / "t")
    with get_oracle().batch() as b:
        snapshots = _three_snapshots(b, path)
    ps.register(spark)
    at2 = local_text(snapshots.result[1]["timeMillis"])

    def batch(**options) -> list[int]:
        reader = spark.read.format("paimon")
        for k, v in options.items():
            reader = reader.option(k, v)
        return sorted(r["id"] for r in reader.load(path).collect())

    assert batch(**{"scan.timestamp": at2}) == [1, 2]
    assert batch(**{"scan.version": "3"}) == [1]           # the tag '3', not snapshot 3
    assert batch(**{"scan.version": "2"}) == [1, 2]
    seen: list[int] = []
    q = (spark.readStream.format("paimon").option("scan.timestamp", at2).load(path).writeStream
         .foreachBatch(lambda df, _: seen.extend(r["id"] for r in df.collect()))
         .option("checkpointLocation", str(tmp_path / "ck")).trigger(availableNow=True).start())
    q.awaitTermination(300)
    assert q.exception() is None, q.exception()
    assert sorted(seen) == [2, 3]
    with pytest.raises(Exception, match="scan.version"):
        batch(version="2")
    _set_options(path, {"scan.version": "2"})  # kept in the table's options (its streams: tested above)
    assert batch() == [1, 2]


def test_a_stream_from_a_tag_whose_later_snapshots_expired_fails_naming_them(history):
    """Tag 'v2' keeps snapshot 2, but snapshot 3 (the changes after it) expired: the stream
    cannot read on from the tag and says so, rather than skipping to the earliest snapshot."""
    path, _ = history
    t = ps.Table.open(path)
    for opts in ({"scan.tag-name": "v2"}, {"scan.version": "v2"},
                 {"scan.mode": "from-snapshot", "scan.tag-name": "v2"}):
        with pytest.raises(PaimonError, match="no longer exists"):
            stream_rows(open_stream(t, opts), ["id"])
