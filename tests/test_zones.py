"""Time-zone conversions after 2037 (zones.py): pyarrow's stop applying daylight saving there
(its database lists transitions up to 2037), so a summer 2040 New York instant became a wall time
an hour early. The conversions must equal zoneinfo's (java.time's and Spark's) in every year."""
from __future__ import annotations

import datetime as dt
import random

import pyarrow as pa
import pytest

from paimon_streaming.tzdb import zone_info
from paimon_streaming.zones import instants_of_wall_times, local_wall_times

UTC = dt.timezone.utc
ZONES = ["America/New_York", "Europe/London", "Australia/Sydney", "America/Sao_Paulo", "Asia/Kolkata", "UTC"]


@pytest.mark.parametrize("zone", ZONES)
def test_conversions_equal_zoneinfos_in_every_year(zone):
    rng = random.Random(zone)
    z = zone_info(zone)
    instants = [dt.datetime(1990, 1, 1, tzinfo=UTC) + dt.timedelta(seconds=rng.randrange(300 * 365 * 86400))
                for _ in range(60)]
    instants += [dt.datetime(2040, 7, 1, 16, tzinfo=UTC), dt.datetime(9999, 12, 31, 12, tzinfo=UTC)]
    zoned = pa.array(instants, pa.timestamp("us", tz="UTC")).cast(pa.timestamp("us", tz=zone))
    walls = [i.astimezone(z).replace(tzinfo=None, fold=0) for i in instants]
    assert local_wall_times(zoned).to_pylist() == walls
    back = instants_of_wall_times(pa.array(walls, pa.timestamp("us")), zone)
    assert back.cast(pa.timestamp("us", tz="UTC")).to_pylist() == \
        [w.replace(tzinfo=z).astimezone(UTC) for w in walls]  # a repeated wall time: its earlier instant


def test_instants_written_as_wall_times_after_2037(catalog):
    """`write_arrow` of New York instants into a TIMESTAMP column stores the wall times they
    show there, and wall times into a TIMESTAMP_LTZ column (read in the writer's zone) the
    instants they name, in 2040 and 2262 as in 2024."""
    ny = zone_info("America/New_York")
    t = catalog.create_table("db.walls", pa.schema([("id", pa.int32()), ("ts", pa.timestamp("us"))]))
    values = [dt.datetime(2024, 7, 1, 12, tzinfo=ny), dt.datetime(2040, 7, 1, 12, tzinfo=ny),
              dt.datetime(2262, 4, 1, 12, tzinfo=ny)]
    t.write_arrow(pa.table({"id": pa.array([1, 2, 3], pa.int32()),
                            "ts": pa.array(values, pa.timestamp("us", tz="America/New_York"))}))
    got = {r["id"]: r["ts"] for r in t.to_arrow().to_pylist()}
    assert got == {i + 1: v.replace(tzinfo=None) for i, v in enumerate(values)}


def test_java_zone_ids_are_read_as_java_reads_them():
    """Spark's session time zone is a Java ZoneId text (`ZoneId.of(id, ZoneId.SHORT_IDS)`):
    offsets bare or after UTC/GMT/UT, Z/UT/UTC/GMT, the SHORT_IDS abbreviations; each becomes a
    zone pyarrow takes, and the conversions take them as given."""
    from paimon_streaming.errors import UnsupportedOperationError
    from paimon_streaming.zones import java_zone
    cases = {"GMT+08:00": "+08:00", "UTC+08:00": "+08:00", "UTC+8": "+08:00", "UT+1": "+01:00", "UTC-3": "-03:00",
             "+8": "+08:00", "+0800": "+08:00", "+08:00:00": "+08:00", "GMT+8:30": "+08:30", "-00:00": "UTC",
             "Z": "UTC", "UT": "UTC", "UTC": "UTC", "GMT": "UTC", "CST": "America/Chicago", "IST": "Asia/Kolkata",
             "PST": "America/Los_Angeles", "CTT": "Asia/Shanghai", "EST": "-05:00", "HST": "-10:00",
             "America/New_York": "America/New_York", "Etc/GMT+8": "Etc/GMT+8"}
    assert {z: java_zone(z) for z in cases} == cases
    for bad in ("+19:00", "GMT+", "-03:30:15"):
        with pytest.raises(UnsupportedOperationError, match="time zone"):
            java_zone(bad)
    walls = pa.array([dt.datetime(2024, 7, 1, 12)], pa.timestamp("us"))
    for zone, hours in [("GMT+08:00", 4), ("UTC-3", 15), ("CST", 17), ("Z", 12)]:
        instant = instants_of_wall_times(walls, zone)
        assert instant.cast(pa.timestamp("us", tz="UTC"))[0].as_py() == dt.datetime(2024, 7, 1, hours, tzinfo=UTC)
        assert local_wall_times(instant.cast(pa.timestamp("us", tz=zone))).to_pylist() == walls.to_pylist()


# (zone, instant, the wall time java.time shows it at); java.time's instants of the wall times too
_JAVAS = [("Europe/Amsterdam", dt.datetime(1900, 1, 1, 12), dt.datetime(1900, 1, 1, 12)),  # backzone: +00:19:32
          ("Europe/Amsterdam", dt.datetime(1937, 6, 30, 12), dt.datetime(1937, 6, 30, 13)),  # backzone: +01:19:32
          ("Europe/Oslo", dt.datetime(1965, 7, 1, 12), dt.datetime(1965, 7, 1, 13)),  # backzone: summer time
          ("Atlantic/Reykjavik", dt.datetime(1930, 7, 1, 12), dt.datetime(1930, 7, 1, 12)),  # backzone: -01:00
          ("Europe/Amsterdam", dt.datetime(2045, 7, 1, 12), dt.datetime(2045, 7, 1, 14))]
# wall times java.time's LocalDateTime.atZone moves (a gap: by its length) or chooses (an overlap: the earlier)
_JAVA_WALLS = [("Europe/Amsterdam", dt.datetime(2045, 3, 26, 2, 30), dt.datetime(2045, 3, 26, 1, 30)),
               ("Europe/Amsterdam", dt.datetime(2045, 10, 29, 2, 30), dt.datetime(2045, 10, 29, 0, 30))]


def test_conversions_use_the_jvms_zone_data_not_the_systems(time_zone):
    """Java's (and Spark's) zone data is IANA's default build; Debian's /usr/share/zoneinfo,
    which pyarrow and zoneinfo.ZoneInfo read, has the 'backzone' histories before 1970, so
    Amsterdam's 1900 instants were stored 19:32 minutes off, Oslo's and Reykjavik's an hour.
    Arrays, scalars (`scan.timestamp` in the local zone) and java.util's ORC mapping take the
    JVM's offsets (values from java.time)."""
    from paimon_streaming import orc_ltz
    from paimon_streaming.time_travel import parse_local_timestamp
    for zone, instant, wall in _JAVAS:
        zoned = pa.array([instant], pa.timestamp("us")).cast(pa.timestamp("us", tz=zone))
        assert local_wall_times(zoned).to_pylist() == [wall], zone
        cases = [(zone, wall, instant)] + [c for c in _JAVA_WALLS if c[0] == zone]
        for zone_, w, want in cases:
            assert instants_of_wall_times(pa.array([w], pa.timestamp("us")), zone_).to_pylist() == \
                [want.replace(tzinfo=UTC)], (zone, w)
            time_zone(zone_)
            assert parse_local_timestamp(str(w), "scan.timestamp") == (want - dt.datetime(1970, 1, 1)) // \
                dt.timedelta(milliseconds=1), (zone, w)
        stored = orc_ltz.to_stored(pa.array([instant.replace(tzinfo=UTC)], pa.timestamp("us", tz="UTC")),
                                   orc_ltz.local_zone())  # the UTC wall clock read as a local wall time
        assert stored.to_pylist() == [(instant - (wall - instant)).replace(tzinfo=UTC)], zone
