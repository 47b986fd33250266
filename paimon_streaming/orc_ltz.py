"""ORC TIMESTAMP WITH LOCAL TIME ZONE values as Java stores them, by the table option
`orc.timestamp-ltz.legacy.type` (Paimon's OrcOptions, default true).

In legacy mode Java's ORC writer (FieldWriterFactory) stores an LTZ value as
`java.sql.Timestamp.valueOf(<its UTC wall clock>)`: that wall clock read in the JVM's default
zone, so the stored instant is off by the zone's offset. Its reader (DateTimeUtils.toInternal)
and its statistics extractor (OrcSimpleStatsExtractor) undo that with the zone's offset at the
stored instant. With false, the true instant is stored (as with every zone in UTC).

The zone is the one a JVM started in this environment takes as its default (`local_zone`): TZ,
else /etc/localtime, as Java's TimeZone reads them on Linux. (A JVM started with
-Duser.timezone=X needs TZ=X here.) Wall times are mapped as java.util's calendar maps them:
one in a gap (clocks set forward) at the offset before the gap, so it reads back later by the
gap's length; one in an overlap as the later of its instants; one before 1900-01-01T00:00Z at
the zone's standard offset (Java's legacy zones keep no earlier transitions, so no LMT).
These are java.util's rules, not java.time's (zones.py: an overlap's earlier instant), on the
JVM's data (tzdb.py), by numpy.
"""
from __future__ import annotations

import dataclasses
import datetime as dt
import functools

import numpy as np
import pyarrow as pa

from .tzdb import PER_SECOND, Rules, epoch_ints, local_offset, local_zone_name, rules, shifted

_UTC1900 = -2208988800  # seconds: sun.util.calendar.ZoneInfoFile drops transitions before it
# A JVM's default zone as java.util's legacy calendar has it (sun.util.calendar.ZoneInfo): the
# transitions from 1900-01-01T00:00Z on, before them the zone's standard offset (`_zone`)
Zone = Rules


def to_stored(values: pa.Array, zone: Zone) -> pa.Array:
    """LTZ values (timestamp with tz UTC) as Java's legacy writer stores them in `zone`: their
    UTC wall clock taken at the offset of the last transition whose wall time (at its new
    offset) is not after it (ZoneInfo.getOffsetsByWall), so a gap's wall times take the
    offset before it and an overlap's the one after; ArrowInvalid out of the unit's range."""
    per_second = PER_SECOND[values.type.unit]
    wall = epoch_ints(values)
    index = zone.index_at(wall, per_second, zone.transitions + zone.offsets[1:])
    return shifted(values, wall, (zone.offsets * -per_second)[index], values.type)


def from_stored(values: pa.Array, zone: Zone) -> pa.Array:
    """Stored legacy values (timestamp with tz UTC) as Java's reader gives them back in `zone`
    (the offset at the stored instant added: DateTimeUtils.toInternal); ArrowInvalid when one
    leaves the unit's range (nanoseconds near 1677 or 2262)."""
    per_second = PER_SECOND[values.type.unit]
    stored = epoch_ints(values)
    return shifted(values, stored, (zone.offsets * per_second)[zone.index_at(stored, per_second)], values.type)


def local_zone() -> Zone:
    """The zone a JVM started now, in this environment, takes as its default (`tzdb.local_zone_name`);
    for a TZ that names no zone the C library's present offset, fixed, as Java takes it."""
    name = local_zone_name()
    return _zone(name) if name else _fixed(local_offset())


@functools.lru_cache(maxsize=32)
def _zone(name: str) -> Zone:
    """`name`'s rules cut at 1900, the standard offset before: Java's zones follow tzdata's
    rearguard form (daylight saving time is never negative), so it is the lower of winter's and
    summer's, taken in 2200."""
    zone = rules(name)
    summer_winter = np.array([int(dt.datetime(2200, month, 1, tzinfo=dt.timezone.utc).timestamp()) for month in (1, 7)])
    standard = int(zone.offsets[zone.index_at(summer_winter, 1)].min())
    before = zone.transitions <= _UTC1900  # in Java, one transition at 1900 to the offset then
    return dataclasses.replace(zone, transitions=np.concatenate([[_UTC1900], zone.transitions[~before]]),
                               offsets=np.concatenate([[standard, zone.offsets[before.sum()]],
                                                       zone.offsets[1:][~before]]))


def _fixed(seconds: int) -> Zone:
    """A fixed offset, as Java's "GMT+hh:mm" zones are."""
    minutes = seconds // 60
    text = f"GMT{'-' if minutes < 0 else '+'}{abs(minutes) // 60:02d}:{abs(minutes) % 60:02d}"
    return Zone(text, np.zeros(0, np.int64), np.array([seconds], np.int64), None)
