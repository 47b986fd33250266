"""Partition expiration (`partition.expiration-time`) after commits, as Java's PartitionExpire:
which partitions expire (values-time with formatters and patterns, update-time), how many per
check, when checks run, and what the drop commits leave readable."""
from __future__ import annotations

import datetime as dt
import time

import pyarrow as pa
import pytest

from paimon_streaming import partition_expire
from paimon_streaming.errors import InvalidOptionError
from paimon_streaming.partition_expire import PartitionExpiration, partition_time, strptime_format
from paimon_streaming.snapshot import OVERWRITE
from conftest import pypaimon_read, rows_by

SCHEMA = pa.schema([pa.field("id", pa.int64(), False), pa.field("dt", pa.string(), False), ("v", pa.string())])
EVERY_COMMIT = {"partition.expiration-check-interval": "0 s"}


def day(days_ago: int, fmt: str = "%Y-%m-%d") -> str:
    return (dt.datetime.now() - dt.timedelta(days=days_ago)).strftime(fmt)


def rows(ids, dts, v="x") -> pa.Table:
    return pa.table({"id": list(ids), "dt": list(dts), "v": [v] * len(dts)}, schema=SCHEMA)


@pytest.mark.parametrize("keys, values, pattern, formatter, expected", [
    (["dt"], ["2024-03-05"], None, None, dt.datetime(2024, 3, 5)),
    (["dt"], ["2024-3-5 7:08:09.5"], None, None, dt.datetime(2024, 3, 5, 7, 8, 9, 500000)),
    (["dt"], ["20240305"], None, "yyyyMMdd", dt.datetime(2024, 3, 5)),
    (["dt", "hr"], ["20240305", "07"], "$dt $hr:00:00", "yyyyMMdd HH:mm:ss", dt.datetime(2024, 3, 5, 7)),
    (["y", "m", "d"], ["2024", "03", "05"], "$y-$m-$d", None, dt.datetime(2024, 3, 5)),
    (["dt"], ["2024-03-05T07"], None, "yyyy-MM-dd'T'HH", dt.datetime(2024, 3, 5, 7)),
    (["dt"], ["19787"], None, None, None),             # a DATE partition, held as its day number
    (["dt"], ["not a date"], None, "yyyyMMdd", None),
    (["dt"], [None], None, None, None),                # null (the default partition)
    # out of range: Java's default formatter rolls over (LENIENT), a formatter takes a day past
    # the month's end as its last day (SMART), years beyond Python's are the first or last time
    (["dt"], ["2024-02-30 24:00:00"], None, None, dt.datetime(2024, 3, 2)),
    (["dt"], ["2024-00-00"], None, None, dt.datetime(2023, 11, 30)),
    (["dt"], ["0001-01-00"], None, None, dt.datetime.min),
    (["dt"], ["9999-12-31 24:00:00"], None, None, dt.datetime.max),
    (["dt"], ["2023-02-31"], None, "yyyy-MM-dd", dt.datetime(2023, 2, 28)),
    (["dt"], ["2023-02-32"], None, "yyyy-MM-dd", None),
    (["dt"], ["202413"], None, "yyyyMM", None),        # no day field: month 13 is no date
    (["dt"], ["2024-01-05 05"], None, "yyyy-MM-dd dd", None),   # a field twice: never a time here
    (["dt"], ["2024-01-05 Mon"], None, "yyyy-MM-dd EEE", None),   # a Java table's pattern we cannot apply
    # Java's DateTimeFormatter: two letters take exactly two digits, no date without a day, and
    # two-digit years are 2000-2099 (strptime took '2020-1-5', '2020-01' and 1999 for '99')
    (["dt"], ["2020-1-5"], None, "yyyy-MM-dd", None),
    (["dt"], ["2020015"], None, "yyyyMMdd", None),
    (["dt"], ["2020-01-05 5"], None, "yyyy-MM-dd HH", None),
    (["dt"], ["2020-01"], None, "yyyy-MM", None),
    (["dt"], ["991231"], None, "yyMMdd", dt.datetime(2099, 12, 31)),
    (["dt"], ["2020-1-5 7"], None, "yyyy-M-d H", dt.datetime(2020, 1, 5, 7)),
])
def test_partition_time_from_values(keys, values, pattern, formatter, expected):
    assert partition_time(keys, values, pattern, formatter) == expected


def test_java_patterns_become_strptime_formats():
    assert strptime_format("yyyyMMdd") == "%Y%m%d"
    assert strptime_format("yyyy-MM-dd HH:mm:ss") == "%Y-%m-%d %H:%M:%S"
    assert strptime_format("yy/M/d'T'H") == "%y/%m/%dT%H"
    for bad in ("yyyy-MM-dd EEE", "yyyy-MMM-dd", "'open"):
        with pytest.raises(ValueError):
            strptime_format(bad)


def test_bad_formatter_is_refused_at_create(catalog):
    with pytest.raises(InvalidOptionError, match="partition.timestamp-formatter"):
        catalog.create_table("db.bad", SCHEMA, partition_keys=["dt"], options={"partition.timestamp-formatter": "EEE"})
    with pytest.raises(InvalidOptionError, match="partition.expiration-strategy"):
        catalog.create_table("db.bad", SCHEMA, partition_keys=["dt"],
                             options={"partition.expiration-strategy": "sometimes"})


@pytest.mark.parametrize("options", [{}, {"bucket": "2", "deletion-vectors.enabled": "true"}])
def test_old_partitions_are_dropped_after_a_commit(catalog, warehouse, options):
    t = catalog.create_table("db.events", SCHEMA, primary_keys=["id", "dt"] if options else [],
                             partition_keys=["dt"],
                             options={"partition.expiration-time": "2 d", **EVERY_COMMIT, **options})
    t.write_arrow(rows(range(4), [day(5), day(3), day(1), day(0)]))
    latest = t.latest_snapshot()
    assert latest.commit_kind == OVERWRITE, "the commit's maintenance dropped two partitions"
    assert [r["id"] for r in rows_by(t.to_arrow(), "id")] == [2, 3]
    assert sorted(r["dt"] for r in pypaimon_read(warehouse, "db.events").to_pylist()) == [day(1), day(0)]
    before = t.snapshots()[-2].id
    assert t.to_arrow(snapshot_id=before).num_rows == 4, "older snapshots keep the rows until they expire"
    t.write_arrow(rows([9], [day(0)], "y"))  # nothing more expires: no drop commit
    assert t.latest_snapshot().commit_kind != OVERWRITE and t.to_arrow().num_rows == 3


def test_multi_key_partitions_with_a_pattern_and_formatter(catalog):
    schema = pa.schema([("id", pa.int64()), ("d", pa.string()), ("h", pa.int32())])
    t = catalog.create_table("db.hours", schema, partition_keys=["d", "h"],
                             options={"partition.expiration-time": "3 h", **EVERY_COMMIT,
                                      "partition.timestamp-pattern": "$d $h:00:00",
                                      "partition.timestamp-formatter": "yyyyMMdd H:mm:ss"})
    now = dt.datetime.now()
    hours = [now - dt.timedelta(hours=n) for n in (6, 5, 1)]
    t.write_arrow(pa.table({"id": [0, 1, 2], "d": [h.strftime("%Y%m%d") for h in hours],
                            "h": pa.array([h.hour for h in hours], pa.int32())}, schema=schema))
    assert [r["id"] for r in rows_by(t.to_arrow(), "id")] == [2]


def test_update_time_strategy_uses_the_newest_file(catalog):
    t = catalog.create_table("db.upd", SCHEMA, partition_keys=["dt"],
                             options={"partition.expiration-time": "2 s", **EVERY_COMMIT,
                                      "partition.expiration-strategy": "update-time"})
    t.write_arrow(rows([0], ["quiet"]))
    t.write_arrow(rows([1], ["busy"]))
    time.sleep(2.5)
    t.write_arrow(rows([2], ["busy"]))  # busy has a new file; quiet's newest is 2.5 s old
    assert {r["dt"] for r in t.to_arrow().to_pylist()} == {"busy"}


def test_values_that_are_not_times_never_expire(catalog, caplog):
    t = catalog.create_table("db.names", SCHEMA, partition_keys=["dt"],
                             options={"partition.expiration-time": "1 d", **EVERY_COMMIT})
    t.write_arrow(rows([0, 1], ["eu", day(9)]))
    assert [r["dt"] for r in t.to_arrow().to_pylist()] == ["eu"]
    assert "never expires" in caplog.text


def test_at_most_max_num_partitions_a_check_in_batches(catalog):
    t = catalog.create_table("db.many", SCHEMA, partition_keys=["dt"],
                             options={"partition.expiration-time": "1 d", **EVERY_COMMIT,
                                      "partition.expiration-max-num": "3", "partition.expiration-batch-size": "2"})
    t.write_arrow(rows(range(6), [day(n) for n in (10, 9, 8, 7, 6, 0)]))
    assert [s.commit_kind for s in t.snapshots()] == ["APPEND", OVERWRITE, OVERWRITE]  # the oldest 3, by 2
    assert sorted(r["dt"] for r in t.to_arrow().to_pylist()) == [day(7), day(6), day(0)]
    t.write_arrow(rows([6], [day(0)]))  # the next commit's check takes the rest
    assert sorted(r["dt"] for r in t.to_arrow().to_pylist()) == [day(0), day(0)]


def test_checks_run_once_an_interval(catalog, monkeypatch):
    t = catalog.create_table("db.interval", SCHEMA, partition_keys=["dt"],
                             options={"partition.expiration-time": "1 d", "partition.expiration-check-interval": "1 h"})
    expiration = PartitionExpiration(t.file_io, t.path, t.schema)
    checked = time.monotonic()
    monkeypatch.setitem(partition_expire._LAST_CHECK, t.path, checked)
    t.write_arrow(rows([0], [day(5)]))  # checked a moment ago in this process: not due, the partition stays
    assert t.to_arrow().num_rows == 1
    assert [p for _, p in expiration.expired()] == [{"dt": day(5)}]
    assert not expiration.due(now=checked + 3599)
    assert expiration.due(now=checked + 3601)
    assert not expiration.due(now=checked + 3602)


def test_end_input_checks_after_every_batch_write(catalog, monkeypatch):
    """`end-input.check-partition-expire`: a batch write (Java's end of input, the batch commit
    identifier) checks whatever the interval, as Java's PartitionExpire; a streaming commit (its
    own identifier) keeps the interval. The option was ignored: a batch write left the expired
    partition until the interval passed."""
    t = catalog.create_table("db.end_input", SCHEMA, partition_keys=["dt"],
                             options={"partition.expiration-time": "1 d", "partition.expiration-check-interval": "1 h",
                                      "end-input.check-partition-expire": "true"})
    monkeypatch.setitem(partition_expire._LAST_CHECK, t.path, time.monotonic())
    t.write_arrow(rows([0], [day(5)]), commit_user="stream", commit_identifier=1)
    assert t.to_arrow().num_rows == 1  # a micro-batch: not due
    t.write_arrow(rows([1], [day(0)]))
    assert [r["dt"] for r in t.to_arrow().to_pylist()] == [day(0)]
    assert t.snapshots()[-1].commit_kind == OVERWRITE


def test_strict_format_refuses_partitions_that_are_no_time(catalog):
    from paimon_streaming.errors import SchemaMismatchError
    t = catalog.create_table("db.strict", SCHEMA, partition_keys=["dt"],
                             options={"partition.timestamp-formatter": "yyyyMMdd",
                                      "partition.timestamp-format.strict": "true"})
    t.write_arrow(rows([0], ["20240501"]))
    with pytest.raises(SchemaMismatchError, match="partition dt=2024-05-01 does not match"):
        t.write_arrow(rows([1, 2], ["20240502", "2024-05-01"]))
    assert [r["dt"] for r in t.to_arrow().to_pylist()] == ["20240501"] and len(t.snapshots()) == 1
    lax = catalog.create_table("db.lax", SCHEMA, partition_keys=["dt"],
                               options={"partition.timestamp-formatter": "yyyyMMdd"})
    lax.write_arrow(rows([1], ["2024-05-01"]))  # not strict: written (and never expires)
    assert lax.to_arrow().num_rows == 1


@pytest.mark.parametrize("formatter, values", [
    (None, ["2024-02-30", "2024-13-01", "2024-00-10", "2024-01-00", "2024-01-01 24:00:00", "2024-01-01 23:60:00",
            "0000-01-01", "99999-01-01", "2024-02-30 01:02:03.123456789", "2024-01-01T00:00:00", "eu",
            "-2020-01-01", "+2020-01-01"]),
    ("yyyyMMdd", ["20240230", "20230229", "20240431", "20241301", "20240132", "20240105", "2024-01-05"]),
    # 24:00 is the next midnight (SMART), 24:30 and minute 60 are no time
    ("yyyyMMddHH", ["2020010124", "2020013124", "2020010123", "2020010125"]),
    ("yyyy-MM-dd HH:mm", ["2020-01-01 24:00", "2020-01-01 24:30", "2020-01-01 23:60", "2020-02-30 24:00"]),
])
def test_out_of_range_dates_expire_as_javas_formatter_resolves_them(catalog, warehouse, formatter, values):
    """Java reads a partition value with its default formatter leniently (2024-02-30 is March
    1st, month 13 the next January, 24:00 the next midnight) and with a
    `partition.timestamp-formatter` smartly (a day past the month's end is its last day, month
    13 no date): the partitions it would expire are the ones we expire."""
    from java_oracle import get_oracle
    path = f"{warehouse}/db.db/odd"
    options = {"bucket": "-1", **({"partition.timestamp-formatter": formatter} if formatter else {})}
    java = get_oracle()
    with java.batch() as b:
        b.create_table(path, [{"name": "id", "type": "INT"}, {"name": "dt", "type": "STRING"}],
                       partition_keys=["dt"], options=options)
        b.write(path, [{"id": i, "dt": v} for i, v in enumerate(values)])
    ours = catalog.get_table("db.odd").expire_partitions("1 d", dry_run=True)
    with java.batch() as b:
        javas = b.expire_partitions(path, "1 d")
    assert sorted(p["dt"] for p in ours) == sorted(p["dt"] for p in javas.result)


@pytest.mark.parametrize("pattern", [None, "$dt"])
def test_a_null_or_blank_value_of_another_partition_column(catalog, warehouse, pattern):
    """Java reads a partition's time from its first value (or the pattern's values, as text): a
    null or blank value in another column does not keep the partition from expiring, except a
    null that the pattern reads as text. We kept all of them for good; a strict table refused
    to write them."""
    from java_oracle import get_oracle
    path = f"{warehouse}/db.db/two"
    options = {"bucket": "-1", **({"partition.timestamp-pattern": pattern} if pattern else {})}
    java = get_oracle()
    regions = [None, "", " ", "eu"]
    with java.batch() as b:
        b.create_table(path, [{"name": "id", "type": "INT"}, {"name": "dt", "type": "STRING"},
                              {"name": "region", "type": "STRING"}], partition_keys=["dt", "region"], options=options)
        b.write(path, [{"id": i, "dt": "2020-01-01", "region": r} for i, r in enumerate(regions)])
    ours = catalog.get_table("db.two").expire_partitions("1 d", dry_run=True)
    with java.batch() as b:
        javas = b.expire_partitions(path, "1 d")
    assert sorted(p["region"] for p in ours) == sorted(p["region"] for p in javas.result)
    assert len(ours) >= 2
    strict = catalog.create_table("db.strict", pa.schema([("id", pa.int64()), ("dt", pa.string()), ("region", pa.string())]),
                                  partition_keys=["dt", "region"], options={"partition.timestamp-format.strict": "true"})
    assert strict.write_arrow(pa.table({"id": [1, 2], "dt": ["2020-01-01"] * 2, "region": [None, ""]})) == 1


def test_nothing_to_expire_without_partitions_or_snapshots(catalog):
    """An unpartitioned table has no partition to expire: expiring them is refused, as Java's
    procedure refuses it; a partitioned one without a snapshot has none yet and answers with
    none. Neither commits anything. (An unpartitioned table cannot set
    'partition.expiration-time', as in Java.)"""
    from paimon_streaming.errors import UnsupportedOperationError
    with pytest.raises(InvalidOptionError, match="'partition.expiration-time' needs a partitioned table"):
        catalog.create_table("db.plain", pa.schema([pa.field("id", pa.int64(), False)]),
                             options={"partition.expiration-time": "1 d"})
    plain = catalog.create_table("db.plain", pa.schema([pa.field("id", pa.int64(), False)]))
    with pytest.raises(UnsupportedOperationError, match="db.plain.* is not partitioned"):
        plain.expire_partitions("1 d")
    assert plain.latest_snapshot() is None
    plain.write_arrow(pa.table({"id": [1]}))
    with pytest.raises(UnsupportedOperationError, match="not partitioned"):
        plain.expire_partitions("1 ms")
    assert len(plain.snapshots()) == 1
    empty = catalog.create_table("db.empty", SCHEMA, partition_keys=["dt"])
    assert empty.expire_partitions("1 d", dry_run=True) == empty.expire_partitions("1 d") == []
    assert empty.latest_snapshot() is None


def test_a_time_to_live_past_the_calendar_expires_nothing(catalog):
    """'1000000 d' (Java takes it) raised OverflowError after every commit."""
    t = catalog.create_table("db.t", SCHEMA, partition_keys=["dt"], options={"partition.expiration-time": "1000000 d"})
    t.write_arrow(rows([1], ["2000-01-01"]))
    assert t.expire_partitions() == [] and t.expire_partitions(dt.timedelta(days=1), dry_run=True) == [{"dt": "2000-01-01"}]
