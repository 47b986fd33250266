"""Time-zone conversions after 2037 (zones.py): pyarrow's stop applying daylight saving there
(its database lists transitions up to 2037), so a summer 2040 New York instant became a wall time
an hour early. The conversions must equal zoneinfo's (java.time's and Spark's) in every year."""
from __future__ import annotations

import datetime as dt
import random
from zoneinfo import ZoneInfo

import pyarrow as pa
import pytest

from paimon_streaming.zones import instants_in, local_wall_times

UTC = dt.timezone.utc
ZONES = ["America/New_York", "Europe/London", "Australia/Sydney", "America/Sao_Paulo", "Asia/Kolkata", "UTC"]


@pytest.mark.parametrize("zone", ZONES)
def test_conversions_equal_zoneinfos_in_every_year(zone):
    rng = random.Random(zone)
    z = ZoneInfo(zone)
    instants = [dt.datetime(1990, 1, 1, tzinfo=UTC) + dt.timedelta(seconds=rng.randrange(300 * 365 * 86400))
                for _ in range(60)]
    instants += [dt.datetime(2040, 7, 1, 16, tzinfo=UTC), dt.datetime(9999, 12, 31, 12, tzinfo=UTC)]
    zoned = pa.array(instants, pa.timestamp("us", tz="UTC")).cast(pa.timestamp("us", tz=zone))
    walls = [i.astimezone(z).replace(tzinfo=None, fold=0) for i in instants]
    assert local_wall_times(zoned).to_pylist() == walls
    back = instants_in(pa.array(walls, pa.timestamp("us")), zone, ambiguous="earliest", nonexistent="earliest")
    assert back.cast(pa.timestamp("us", tz="UTC")).to_pylist() == \
        [w.replace(tzinfo=z).astimezone(UTC) for w in walls]  # a repeated wall time: its earlier instant


def test_instants_written_as_wall_times_after_2037(catalog):
    """`write_arrow` of New York instants into a TIMESTAMP column stores the wall times they
    show there, and wall times into a TIMESTAMP_LTZ column (read in the writer's zone) the
    instants they name, in 2040 and 2262 as in 2024."""
    ny = ZoneInfo("America/New_York")
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
        instant = instants_in(walls, zone)
        assert instant.cast(pa.timestamp("us", tz="UTC"))[0].as_py() == dt.datetime(2024, 7, 1, hours, tzinfo=UTC)
        assert local_wall_times(instant.cast(pa.timestamp("us", tz=zone))).to_pylist() == walls.to_pylist()
