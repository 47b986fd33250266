"""Record-level expiration (`record-level.expire-time`, `record-level.time-field`): compaction
drops rows whose time is past the expire time, as Java's RecordLevelExpire."""
from __future__ import annotations

import datetime as dt
import time

import pyarrow as pa
import pytest

from paimon_streaming.errors import InvalidOptionError
from paimon_streaming.record_expire import RecordExpiry

NOW = int(time.time())
DAY = 86400


def table(catalog, name, ts_type=pa.int64(), dv=True, **options):
    schema = pa.schema([pa.field("id", pa.int64(), False), ("v", pa.string()), ("ts", ts_type)])
    return catalog.create_table(name, schema, primary_keys=["id"], options={
        "bucket": "1", "deletion-vectors.enabled": str(dv).lower(), "record-level.expire-time": "1 d",
        "record-level.time-field": "ts", **options}), schema


def values(t) -> dict[int, str]:
    return {r["id"]: r["v"] for r in t.to_arrow().to_pylist()}


def test_compaction_of_a_deletion_vector_table_drops_expired_rows(catalog):
    t, schema = table(catalog, "db.dv")
    t.write_arrow(pa.table({"id": [1, 2, 3, 4], "v": ["old", "new", "old-ms", "no-time"],
                            "ts": [NOW - 3 * DAY, NOW - 60, (NOW - 2 * DAY) * 1000, None]}, schema=schema))
    assert values(t) == {2: "new", 4: "no-time"}, "a DV write compacts at once: expired rows never show"
    # a key's expired newest row is dropped before the merge: its older row stays (Java's order)
    t.write_arrow(pa.table({"id": [2], "v": ["stale update"], "ts": [NOW - 5 * DAY]}, schema=schema))
    assert values(t) == {2: "new", 4: "no-time"}


def test_merge_on_read_rows_go_when_compaction_reaches_them(catalog):
    t, schema = table(catalog, "db.mor", dv=False)
    t.write_arrow(pa.table({"id": [1, 2], "v": ["old", "new"], "ts": [NOW - 3 * DAY, NOW]}, schema=schema))
    assert values(t) == {1: "old", 2: "new"}, "no guarantee of when: not before a compaction"
    t.compact(full=True)
    assert values(t) == {2: "new"}


@pytest.mark.parametrize("ts_type, old, new", [
    (pa.int32(), NOW - 2 * DAY, NOW),
    (pa.timestamp("us"), dt.datetime.fromtimestamp(NOW - 2 * DAY, dt.timezone.utc).replace(tzinfo=None),
     dt.datetime.fromtimestamp(NOW, dt.timezone.utc).replace(tzinfo=None)),
    (pa.timestamp("ms", tz="UTC"), dt.datetime.fromtimestamp(NOW - 2 * DAY, dt.timezone.utc),
     dt.datetime.fromtimestamp(NOW, dt.timezone.utc)),
], ids=["int-seconds", "timestamp", "timestamp-ltz"])  # not the values: NOW differs between xdist workers
def test_time_field_types(catalog, ts_type, old, new):
    t, schema = table(catalog, f"db.types_{abs(hash(str(ts_type)))}", ts_type=ts_type)
    t.write_arrow(pa.table({"id": [1, 2], "v": ["old", "new"], "ts": pa.array([old, new], ts_type)}, schema=schema))
    assert values(t) == {2: "new"}


def test_files_with_expired_rows_are_rewritten_not_moved(catalog):
    t, schema = table(catalog, "db.files", dv=False)
    t.write_arrow(pa.table({"id": [1, 2], "v": ["a", "b"], "ts": [NOW, NOW - 2 * DAY]}, schema=schema))
    expiry = RecordExpiry.of(t.schema)
    [entry] = [e for s in t.plan(t.latest_snapshot()) for e in s.files]
    assert expiry.holds_expired(entry, t.schema)
    t.write_arrow(pa.table({"id": [3], "v": ["c"], "ts": [NOW]}, schema=schema))
    assert not expiry.holds_expired([e for s in t.plan(t.latest_snapshot()) for e in s.files][-1], t.schema)
    # a file whose times are all null has no minimum: no row of it ever expires, nor is it rewritten
    t.write_arrow(pa.table({"id": [4], "v": ["d"], "ts": pa.array([None], pa.int64())}, schema=schema))
    assert not expiry.holds_expired([e for s in t.plan(t.latest_snapshot()) for e in s.files][-1], t.schema)
    t.compact(full=True)
    assert values(t) == {1: "a", 3: "c", 4: "d"}


@pytest.mark.parametrize("options, says", [
    ({"record-level.time-field": None}, "needs 'record-level.time-field'"),
    ({"record-level.time-field": "nope"}, "not in the schema"),
    ({"record-level.time-field": "v"}, "is VARCHAR"),
])
def test_bad_settings_are_refused(catalog, options, says):
    schema = pa.schema([pa.field("id", pa.int64(), False), ("v", pa.string()), ("ts", pa.int64())])
    opts = {"record-level.expire-time": "1 d", "record-level.time-field": "ts", **options}
    with pytest.raises(InvalidOptionError, match=says):
        catalog.create_table("db.bad", schema, primary_keys=["id"], options={k: v for k, v in opts.items() if v})
