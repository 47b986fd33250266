"""Tags: create/list/delete/read, name validation, the on-disk format, pypaimon and Java
interop, and automatic creation (process time and watermark)."""
from __future__ import annotations

import datetime as dt
import json
import os
import time

import pyarrow as pa
import pytest

from paimon_streaming.errors import (InvalidTagNameError, SnapshotNotFoundError, TagAlreadyExistsError,
                                     TagNotFoundError)
from paimon_streaming.check import check_table
from paimon_streaming.tag_creation import TagPeriod
from conftest import pypaimon_create_tag, pypaimon_read, pypaimon_tags, rows_by

SCHEMA = pa.schema([("id", pa.int64(), False), ("v", pa.string())])


def batch(ids, v="x"):
    return pa.table({"id": list(ids), "v": [v] * len(ids)}, schema=SCHEMA)


def pk_table(catalog, name="db.t", **options):
    return catalog.create_table(name, SCHEMA, primary_keys=["id"], options={"bucket": "2", **options})


def test_create_list_read_delete(catalog):
    t = pk_table(catalog)
    t.write_arrow(batch(range(3), "a"))
    t.write_arrow(batch(range(2, 5), "b"))
    assert t.create_tag("first", snapshot_id=1).id == 1
    assert t.create_tag("second").id == 2
    t.write_arrow(batch(range(5), "c"))
    assert t.tags() == ["first", "second"]
    assert rows_by(t.to_arrow(tag="first"), "id") == [{"id": i, "v": "a"} for i in range(3)]
    assert rows_by(t.to_arrow(tag="second"), "id") == \
        [{"id": i, "v": "a"} for i in range(2)] + [{"id": i, "v": "b"} for i in range(2, 5)]
    assert t.delete_tag("first") == 0          # snapshot 1 still holds every file
    assert t.tags() == ["second"]
    with pytest.raises(TagNotFoundError, match="tag 'first' of table .* does not exist"):
        t.to_arrow(tag="first")
    with pytest.raises(TagNotFoundError):
        t.delete_tag("first")
    assert isinstance(TagNotFoundError("x"), SnapshotNotFoundError)


def test_tag_file_is_the_snapshot_json(catalog):
    t = pk_table(catalog)
    t.write_arrow(batch([1]))
    t.create_tag("plain")
    t.create_tag("kept", time_retained="2 d")
    snap = json.loads(open(t.snapshot_manager.path(1)).read())
    plain = json.loads(open(t.tag_manager.path("plain")).read())
    assert plain == snap
    kept = json.loads(open(t.tag_manager.path("kept")).read())
    assert {k: v for k, v in kept.items() if not k.startswith("tag")} == snap
    assert kept["tagTimeRetained"] == 172800.0
    assert 5 <= len(kept["tagCreateTime"]) <= 7 and kept["tagCreateTime"][0] >= 2024


@pytest.mark.parametrize("name, message", [
    ("", "must not be blank"), ("   ", "must not be blank"), ("123", "purely numeric"),
    ("a/b", "'/'"), ("a\\b", "'\\\\\\\\'"), ("a\nb", "control characters"), ("x\x00", "control"),
    (".hidden", "must not start with '.'"),
    ("t" * 300, "exceed 214 bytes"),  # was OSError [Errno 36] from the temporary file beside it
])
def test_invalid_names(catalog, name, message):
    t = pk_table(catalog)
    t.write_arrow(batch([1]))
    with pytest.raises(InvalidTagNameError, match=message):
        t.create_tag(name)
    assert t.tags() == []


def test_errors(catalog):
    t = pk_table(catalog)
    with pytest.raises(SnapshotNotFoundError, match="no snapshot yet"):
        t.create_tag("v1")
    t.write_arrow(batch([1]))
    t.create_tag("v1")
    with pytest.raises(TagAlreadyExistsError, match="tag 'v1' .* already exists"):
        t.create_tag("v1")
    with pytest.raises(SnapshotNotFoundError, match="snapshot 7"):
        t.create_tag("v7", snapshot_id=7)
    assert t.create_tag("v1.0-rc 1").id == 1   # dots, dashes, spaces are fine


def test_pypaimon_lists_and_reads_our_tags_and_we_read_theirs(catalog, warehouse):
    t = pk_table(catalog)
    t.write_arrow(batch(range(4), "a"))
    t.create_tag("ours")
    t.create_tag("ours-ttl", time_retained="1 d")
    t.write_arrow(batch(range(2), "b"))
    assert sorted(pypaimon_tags(warehouse, "db.t")) == ["ours", "ours-ttl"]
    for name in ("ours", "ours-ttl"):
        got = pypaimon_read(warehouse, "db.t", tag=name)
        assert rows_by(got, "id") == [{"id": i, "v": "a"} for i in range(4)]
    pypaimon_create_tag(warehouse, "db.t", "theirs", snapshot_id=1)
    pypaimon_create_tag(warehouse, "db.t", "theirs-ttl", time_retained="12h")
    t = catalog.get_table("db.t")
    assert t.tags() == ["ours", "ours-ttl", "theirs", "theirs-ttl"]
    assert rows_by(t.to_arrow(tag="theirs"), "id") == [{"id": i, "v": "a"} for i in range(4)]
    assert t.to_arrow(tag="theirs-ttl").num_rows == 4
    assert t.tag_manager.snapshot("theirs-ttl").extra["tagTimeRetained"] == 43200.0


def test_java_reads_our_tags_and_we_read_javas(catalog):
    from java_oracle import get_oracle
    java = get_oracle()
    t = pk_table(catalog)
    t.write_arrow(batch(range(4), "a"))
    t.create_tag("ours", time_retained="1 d")
    t.write_arrow(batch(range(2), "b"))
    with java.batch() as b:
        ours = b.read(t.path, tag="ours")
        b.create_tag(t.path, "javas", snapshot_id=2)
        javas = b.read(t.path, tag="javas")
    assert rows_by(pa.Table.from_pylist(ours.result), "id") == [{"id": i, "v": "a"} for i in range(4)]
    assert rows_by(t.to_arrow(tag="javas"), "id") == rows_by(pa.Table.from_pylist(javas.result), "id")
    assert "javas" in t.tags() and t.tag_manager.snapshot("javas").id == 2


# ---- automatic creation ---------------------------------------------------------------------------
def test_period_names_and_parsing():
    daily = TagPeriod("daily", "with_dashes")
    assert daily.name(dt.datetime(2024, 5, 6)) == "2024-05-06"
    assert daily.start_of("2024-05-06") == dt.datetime(2024, 5, 6)
    assert daily.start_of("manual") is None and daily.start_of("2024-5-6") is None
    assert daily.previous_period(dt.datetime(2024, 5, 7, 0, 10)) == dt.datetime(2024, 5, 6)
    assert TagPeriod("hourly", "without_dashes").name(dt.datetime(2024, 5, 6, 13)) == "20240506 13"
    assert TagPeriod("hourly", "without_dashes_and_spaces").name(dt.datetime(2024, 5, 6, 13)) == "2024050613"
    two = TagPeriod("two-hours", "without_dashes")
    assert two.previous_period(dt.datetime(2024, 5, 6, 13, 59)) == dt.datetime(2024, 5, 6, 10)
    assert two.name(dt.datetime(2024, 5, 6, 10)) == "2024-05-06 10"
    half_hour = TagPeriod("daily", "with_dashes", 30 * 60 * 1000)  # tag.creation-period-duration wins
    assert half_hour.previous_period(dt.datetime(2024, 5, 6, 13, 59)) == dt.datetime(2024, 5, 6, 13, 0)
    assert half_hour.name(dt.datetime(2024, 5, 6, 13)) == "202405061300"
    assert half_hour.start_of("202405061330") == dt.datetime(2024, 5, 6, 13, 30)


class FakeClock:
    def __init__(self, start: dt.datetime):
        self.now = start.replace(tzinfo=dt.timezone.utc).timestamp()

    def set(self, when: dt.datetime) -> None:
        self.now = when.replace(tzinfo=dt.timezone.utc).timestamp()

    def __call__(self) -> float:
        return self.now


def test_process_time_hourly_with_retention(catalog, monkeypatch):
    import paimon_streaming.commit as commit_module
    clock = FakeClock(dt.datetime(2024, 5, 6, 10, 30))
    monkeypatch.setattr(commit_module.time, "time", clock)
    t = pk_table(catalog, **{"tag.automatic-creation": "process-time", "tag.creation-period": "hourly",
                             "sink.process-time-zone": "UTC", "tag.num-retained-max": "2"})
    t.write_arrow(batch([1]))                                    # first snapshot tags the hour before
    assert t.tags() == ["2024-05-06 09"]
    clock.set(dt.datetime(2024, 5, 6, 10, 50))
    t.write_arrow(batch([2]))
    assert t.tags() == ["2024-05-06 09"]                         # hour 10 not complete yet
    clock.set(dt.datetime(2024, 5, 6, 11, 5))
    t.write_arrow(batch([3]))
    assert t.tags() == ["2024-05-06 09", "2024-05-06 10"]
    assert t.tag_manager.snapshot("2024-05-06 10").id == 3
    assert t.to_arrow(tag="2024-05-06 10").num_rows == 3
    manual = t.create_tag("manual")
    clock.set(dt.datetime(2024, 5, 6, 13, 10))                   # hour 11 and 12 complete: one tag
    t.write_arrow(batch([4]))
    assert t.tags() == ["2024-05-06 10", "2024-05-06 12", "manual"]   # max 2 automatic ones kept
    assert t.tag_manager.snapshot("manual").id == manual.id


def test_process_time_with_a_period_duration(catalog, monkeypatch):
    import paimon_streaming.commit as commit_module
    clock = FakeClock(dt.datetime(2024, 5, 6, 10, 20))
    monkeypatch.setattr(commit_module.time, "time", clock)
    t = pk_table(catalog, **{"tag.automatic-creation": "process-time", "tag.creation-period-duration": "15 min",
                             "sink.process-time-zone": "UTC"})
    t.write_arrow(batch([1]))
    clock.set(dt.datetime(2024, 5, 6, 10, 31))
    t.write_arrow(batch([2]))
    assert t.tags() == ["202405061000", "202405061015"]  # the first tags the period before its own


def test_watermark_daily_with_delay(catalog):
    t = pk_table(catalog, **{"tag.automatic-creation": "watermark", "tag.creation-delay": "1 h"})

    def write(ids, watermark):
        t.new_commit().commit(t.write_messages(batch(ids)), "u", len(t.snapshots()) + 1,
                              watermark=None if watermark is None else
                              int(watermark.replace(tzinfo=dt.timezone.utc).timestamp() * 1000))
    write([1], None)
    assert t.tags() == []                                        # no watermark: nothing to tag
    write([2], dt.datetime(2024, 5, 6, 12))
    assert t.tags() == ["2024-05-05"]
    write([3], dt.datetime(2024, 5, 7, 0, 30))                   # within the 1 h delay
    assert t.tags() == ["2024-05-05"]
    write([4], dt.datetime(2024, 5, 7, 1, 0))
    assert t.tags() == ["2024-05-05", "2024-05-06"]
    assert t.tag_manager.snapshot("2024-05-06").id == 4


def test_batch_tags_after_each_batch_write(catalog, monkeypatch):
    """`tag.automatic-creation` = batch, as Java's TagBatchCreation: each batch commit tags the
    latest snapshot `batch-write-<day of its commit time in sink.process-time-zone>` (or
    `tag.batch.customized-name`), replacing a tag of that name, with `tag.default-time-retained`;
    a streaming commit (its own identifier) tags nothing; beyond `tag.num-retained-max` the
    oldest tags go, manual ones too (Java counts every tag). The value was refused at create, and
    on a table Java made with it every commit logged a failure and tagged nothing."""
    from java_oracle import get_oracle
    import paimon_streaming.commit as commit_module
    clock = FakeClock(dt.datetime(2024, 5, 6, 10, 0))                 # 19:00 in Tokyo
    monkeypatch.setattr(commit_module.time, "time", clock)
    t = pk_table(catalog, **{"tag.automatic-creation": "batch", "sink.process-time-zone": "Asia/Tokyo",
                             "tag.num-retained-max": "2", "tag.default-time-retained": "7 d"})
    t.write_arrow(batch([1]))
    assert t.tags() == ["batch-write-2024-05-06"] and t.tag_manager.snapshot("batch-write-2024-05-06").id == 1
    assert t.tag_manager.snapshot("batch-write-2024-05-06").extra["tagTimeRetained"] == 7 * 86400
    t.write_arrow(batch([2]))                                           # the day's tag moves on
    assert t.tags() == ["batch-write-2024-05-06"] and t.tag_manager.snapshot("batch-write-2024-05-06").id == 2
    t.write_arrow(batch([3]), commit_user="stream", commit_identifier=1)  # a micro-batch: no tag
    assert t.tag_manager.snapshot("batch-write-2024-05-06").id == 2
    t.create_tag("manual")
    clock.set(dt.datetime(2024, 5, 6, 16, 0))                           # 01:00 next day in Tokyo
    t.write_arrow(batch([4]))
    assert t.tags() == ["batch-write-2024-05-07", "manual"]             # three tags: the oldest went
    assert t.to_arrow(tag="batch-write-2024-05-07").num_rows == 4
    with t.update_schema() as update:
        update.set_option("tag.batch.customized-name", "nightly")
    t.write_arrow(batch([5]))
    assert t.tags() == ["batch-write-2024-05-07", "nightly"]            # "manual" (snapshot 3) was the oldest
    with get_oracle().batch() as b:
        javas = b.read(t.path, tag="nightly")
    assert rows_by(pa.Table.from_pylist(javas.result), "id") == rows_by(t.to_arrow(tag="nightly"), "id")


def test_tags_past_their_retention_expire_after_commits(catalog):
    t = pk_table(catalog, **{"tag.default-time-retained": "1 h"})
    t.write_arrow(batch([1]))
    t.create_tag("hour")                                          # the table default: 1 h
    t.create_tag("brief", time_retained=1)                        # 1 ms
    assert json.loads(open(t.tag_manager.path("hour")).read())["tagTimeRetained"] == 3600.0
    time.sleep(0.01)
    t.write_arrow(batch([2]))
    assert t.tags() == ["hour"]
    t.update_schema().set_option("tag.time-expire-enabled", "false").commit()  # Java's switch: none expire
    t.refresh()
    t.create_tag("brief2", time_retained=1)
    time.sleep(0.01)
    t.write_arrow(batch([3]))
    assert t.tags() == ["brief2", "hour"]


def expired_under_tag(catalog, later: int):
    """Snapshot 1 (ids 0-3 as 'a') tagged 'one', `later` batches (b0, b1, ...) and a full
    compaction after it, then every snapshot but the newest expired: only the tag holds 1."""
    t = pk_table(catalog, **{"snapshot.num-retained.min": "1"})
    t.write_arrow(batch(range(4), "a"))
    t.create_tag("one")
    for i in range(later):
        t.write_arrow(batch(range(4), f"b{i}"))
    t.compact(full=True)
    t.expire_snapshots(older_than=2 ** 62)
    return t


def test_two_tags_on_one_expired_snapshot_share_its_files(catalog):
    """The second tag is made after the snapshot expired, from the tag holding it (as Java's
    findSnapshot falls back to)."""
    t = expired_under_tag(catalog, 3)
    assert [s.id for s in t.snapshots()] == [5]
    with pytest.raises(SnapshotNotFoundError, match="snapshot 2"):
        t.create_tag("other", snapshot_id=2)  # expired, and no tag holds it
    assert t.create_tag("other", snapshot_id=1).id == 1
    assert json.loads(open(t.tag_manager.path("other")).read()) == json.loads(open(t.tag_manager.path("one")).read())
    assert check_table(t).ok
    assert t.delete_tag("one") == 0                        # "other" still holds everything
    assert rows_by(t.to_arrow(tag="other"), "id") == [{"id": i, "v": "a"} for i in range(4)]
    assert t.delete_tag("other") > 0                       # now its own data files go
    assert rows_by(t.to_arrow(), "id") == [{"id": i, "v": "b2"} for i in range(4)]


def test_a_tag_made_from_a_tag_being_deleted_keeps_its_files(catalog, monkeypatch):
    """Tag 'other' is made from expired snapshot 1, held by tag 'one', just after the deletion
    of 'one' listed the tags: the deletion reads them again before deleting files."""
    from paimon_streaming.tags import TagManager
    t = expired_under_tag(catalog, 2)
    delete_file = TagManager.delete_file

    def made_meanwhile(self, name):
        if name == "one":
            t.create_tag("other", snapshot_id=1)
        delete_file(self, name)

    monkeypatch.setattr(TagManager, "delete_file", made_meanwhile)
    assert t.delete_tag("one") == 0
    assert t.tags() == ["other"]
    assert rows_by(t.to_arrow(tag="other"), "id") == [{"id": i, "v": "a"} for i in range(4)]
    assert check_table(t).ok


def test_deleting_a_tag_beside_unreadable_metadata_deletes_only_the_tag_file(catalog):
    """The files of an expired snapshot's tag go only when its neighbours (the earliest
    snapshot, the tags beside it) and Java's long-lived changelogs say nobody else uses them:
    when one of those cannot be read, the tag goes and its files stay (orphan cleanup takes
    them once the table is mended) rather than delete what a neighbour may still use."""
    from paimon_streaming.file_cache import clear_all
    from test_expire import files_on_disk

    def tagged_then_expired(name):
        t = pk_table(catalog, name, **{"snapshot.num-retained.min": "1"})
        t.write_arrow(batch(range(4), "a"))
        t.create_tag("one")
        t.write_arrow(batch(range(4), "b"))
        t.compact(full=True)
        t.expire_snapshots(older_than=2 ** 62)
        assert [s.id for s in t.snapshots()] == [3]
        return t

    def damage(path):
        with open(path, "w") as f:
            f.write("damaged")
        clear_all()
    t = tagged_then_expired("db.neighbour")
    damage(f"{t.path}/manifest/{t.latest_snapshot().base_manifest_list}")   # the earliest snapshot
    before = files_on_disk(t)
    assert t.delete_tag("one") == 0
    assert t.tags() == [] and files_on_disk(t) == before
    # a long-lived changelog (Java's, `changelog.num-retained.*`) that cannot be parsed
    t = tagged_then_expired("db.changelog")
    os.makedirs(f"{t.path}/changelog")
    damage(f"{t.path}/changelog/changelog-1")
    before = files_on_disk(t)
    assert t.delete_tag("one") == 0
    assert t.tags() == [] and files_on_disk(t) == before
    assert rows_by(t.to_arrow(), "id") == [{"id": i, "v": "b"} for i in range(4)]


@pytest.mark.parametrize("options, says", [
    ({"tag.creation-period": "hourly", "tag.creation-delay": "2 h"},
     r"'tag.creation-delay' of .* must be shorter than the tag.creation-period"),
    ({"sink.process-time-zone": "Nope/Zone"}, r"'sink.process-time-zone' of .*: unknown time zone 'Nope/Zone'"),
    ({"tag.automatic-creation": "watermark", "sink.watermark-time-zone": "Mars/Olympus"},
     r"'sink.watermark-time-zone' of .*: unknown time zone 'Mars/Olympus'"),
])
def test_automatic_tag_options_java_refuses_are_errors_naming_them(catalog, caplog, options, says):
    """A creation delay as long as the period, an unknown zone: Java's writers refuse the table;
    ours commit (the data is safe) and the tag creation after the commit fails with an error
    naming the option, logged at every commit until the option is fixed. A table that creates
    no tags is not held to those options."""
    from paimon_streaming.errors import InvalidOptionError
    from paimon_streaming.tag_creation import TagAutoCreation
    t = pk_table(catalog, **{"tag.automatic-creation": "process-time", **options})
    with pytest.raises(InvalidOptionError, match=says):
        TagAutoCreation(t.file_io, t.path, t.schema)
    t.write_arrow(batch([1]))
    assert t.to_arrow().num_rows == 1 and t.tags() == []
    assert "automatic tag creation" in caplog.text and "InvalidOptionError" in caplog.text
    caplog.clear()
    with t.update_schema() as update:
        update.set_option("tag.automatic-creation", "none")
    t.write_arrow(batch([2]))
    assert t.to_arrow().num_rows == 2 and "automatic tag creation" not in caplog.text


def test_durations_as_java_writes_them_and_as_python_holds_them(catalog):
    """Java's duration labels ('2 hours', '7 days', '10 secs') were refused, so a Java table with
    snapshot.time-retained = '2 hours' failed every expiration (num-retained.max no longer held);
    a timedelta or np.int64 retention was a raw re.error, -5 and True were taken; one tag kept
    '3000000 d' (Java takes it) overflowed and stopped every other tag's expiration."""
    import numpy as np
    from paimon_streaming.option_text import parse_duration_ms
    assert [parse_duration_ms(t) for t in ("2 hours", "7 days", "10 secs", "30 Minutes", "1500 micros", "5 ms")] == \
        [7_200_000, 604_800_000, 10_000, 1_800_000, 1, 5]
    t = pk_table(catalog, **{"snapshot.time-retained": "2 hours", "snapshot.num-retained.min": "1",
                             "snapshot.num-retained.max": "2"})
    for i in range(4):
        t.write_arrow(batch([i]))
    assert len(t.snapshots()) == 2
    t.create_tag("a", time_retained=dt.timedelta(days=7))
    t.create_tag("b", time_retained=np.int64(3_600_000))
    t.create_tag("forever", time_retained="3000000 d")
    t.create_tag("brief", time_retained=1)
    assert t.tag_manager.snapshot("a").extra["tagTimeRetained"] in (604800, 604800.0)
    for bad, error in ((-5, ValueError), (True, TypeError), (1.5, TypeError)):
        with pytest.raises(error, match="time_retained"):
            t.create_tag("c", time_retained=bad)
    time.sleep(0.01)
    t.write_arrow(batch([9]))  # expiration after the commit: 'brief' goes, whatever 'forever' holds
    assert sorted(t.tags()) == ["a", "b", "forever"]
