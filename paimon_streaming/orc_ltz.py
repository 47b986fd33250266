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
These are java.util's rules, not java.time's (zones.py: an overlap's earlier instant), and
pyarrow's time-zone functions stop at 2037: offsets come from the TZif files here, by numpy.
"""
from __future__ import annotations

import datetime as dt
import functools
import importlib.resources
import os
import struct
import time
import zoneinfo
from dataclasses import dataclass

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

_UTC1900 = -2208988800  # seconds: sun.util.calendar.ZoneInfoFile drops transitions before it
_ZONEINFO = "/usr/share/zoneinfo"  # Java's ZONEINFO_DIR on Linux
_PER_SECOND = {"s": 1, "ms": 1000, "us": 10**6, "ns": 10**9}
_EPOCH = dt.datetime(1970, 1, 1, tzinfo=dt.timezone.utc)
_WEEK = 7 * 86400
_END = 9223372800  # 2262-04-12T00:00Z: ORC timestamps are read as nanoseconds


@dataclass(frozen=True, eq=False)
class Zone:
    """A JVM's default zone as java.util's legacy calendar has it (sun.util.calendar.ZoneInfo):
    the instants (seconds) at which its offset changes, from 1900-01-01T00:00Z on, the offset
    (seconds) from each on, and `standard`, the offset before the first."""
    name: str
    transitions: np.ndarray
    offsets: np.ndarray
    standard: int


def to_stored(values: pa.Array, zone: Zone) -> pa.Array:
    """LTZ values (timestamp with tz UTC) as Java's legacy writer stores them in `zone`: their
    UTC wall clock taken at the offset of the last transition whose wall time (at its new
    offset) is not after it (ZoneInfo.getOffsetsByWall), so a gap's wall times take the
    offset before it and an overlap's the one after; ArrowInvalid out of the unit's range."""
    per_second = _PER_SECOND[values.type.unit]
    wall = _ints(values)
    walls_at = (zone.transitions + zone.offsets) * per_second
    return _timestamps(pc.subtract_checked(wall, _offset_at(zone, walls_at, wall) * per_second), values)


def from_stored(values: pa.Array, zone: Zone) -> pa.Array:
    """Stored legacy values (timestamp with tz UTC) as Java's reader gives them back in `zone`
    (the offset at the stored instant added: DateTimeUtils.toInternal); ArrowInvalid when one
    leaves the unit's range (nanoseconds near 1677 or 2262)."""
    per_second = _PER_SECOND[values.type.unit]
    stored = _ints(values)
    return _timestamps(pc.add_checked(stored, _offset_at(zone, zone.transitions * per_second, stored) * per_second),
                       values)


def _offset_at(zone: Zone, starts: np.ndarray, points: np.ndarray) -> np.ndarray:
    """The offset from the last of `starts` (the transitions, in some measure) at or before
    each point; the standard offset before the first."""
    index = np.searchsorted(starts, points, side="right")
    return np.concatenate([[zone.standard], zone.offsets])[index]


def _ints(values: pa.Array) -> np.ndarray:
    return values.cast(pa.int64()).fill_null(0).to_numpy(zero_copy_only=False)


def _timestamps(ints: pa.Array, like: pa.Array) -> pa.Array:
    """`ints` (int64, one per value of `like`) in `like`'s type, null where `like` is."""
    if like.null_count:
        ints = pa.array(ints.to_numpy(), pa.int64(), mask=like.is_null().to_numpy(zero_copy_only=False))
    return ints.cast(like.type)


def local_zone() -> Zone:
    """The zone a JVM started now, in this environment, takes as its default on Linux (JDK's
    TimeZone_md.c): TZ (a leading ':' or 'posix/' dropped), else the zoneinfo file
    /etc/localtime links to or is a copy of, else UTC; a TZ no zone is named by (a POSIX rule
    such as 'XYZ-8') is the C library's present offset, fixed, as Java takes it."""
    tz = os.environ.get("TZ")
    if tz:
        name = tz.removeprefix(":").removeprefix("posix/")
        return _zone(name) if _is_zone(name) else _fixed(_present_offset())
    try:
        link = os.readlink("/etc/localtime")
    except FileNotFoundError:
        return _zone("UTC")
    except OSError:  # a regular file: a copy of one of the zoneinfo files
        with open("/etc/localtime", "rb") as f:
            name = _zone_of_copy(f.read())
        return _zone(name) if name else _fixed(_present_offset())
    name = link.split("zoneinfo/", 1)[1] if "zoneinfo/" in link else ""
    return _zone(name) if _is_zone(name) else _fixed(_present_offset())


def _is_zone(name: str) -> bool:
    try:
        zoneinfo.ZoneInfo(name)
        return True
    except (zoneinfo.ZoneInfoNotFoundError, ValueError, OSError):
        return False


@functools.lru_cache(maxsize=32)
def _zone(name: str) -> Zone:
    data = _tzif_bytes(name)
    times, offsets, first = _tzif(data)
    z = zoneinfo.ZoneInfo(name)
    # Java's zones follow tzdata's rearguard form (daylight saving time is never negative):
    # the standard offset is the lower of winter's and summer's
    standard = min(_utc_offset(z, int(dt.datetime(2200, month, 1, tzinfo=dt.timezone.utc).timestamp()))
                   for month in (1, 7))
    before = times <= _UTC1900  # in Java, one transition at 1900 to the offset then
    times = np.concatenate([[_UTC1900], times[~before]])
    offsets = np.concatenate([[offsets[before][-1] if before.any() else first], offsets[~before]])
    has_rule = b"," in data.rstrip(b"\n").rsplit(b"\n", 1)[-1]  # the footer's POSIX TZ, with DST
    later, later_offsets = _rule_transitions(z, int(times[-1])) if has_rule else ([], [])
    return Zone(name, np.concatenate([times, later]).astype(np.int64),
                np.concatenate([offsets, later_offsets]).astype(np.int64), standard)


def _tzif(data: bytes) -> tuple[np.ndarray, np.ndarray, int]:
    """A TZif file's transitions (seconds), the offset from each on and the offset before the
    first (RFC 8536): from its 64-bit part (version 2 on), else from its 32-bit one."""
    def counts(at: int) -> tuple[int, ...]:  # isutcnt, isstdcnt, leapcnt, timecnt, typecnt, charcnt
        return struct.unpack_from(">6l", data, at + 20)
    isut, isstd, leap, n, types, chars = counts(0)
    at, width = 44, 4
    if data[4:5] >= b"2":
        at += n * 5 + types * 6 + chars + leap * 8 + isstd + isut
        isut, isstd, leap, n, types, chars = counts(at)
        at, width = at + 44, 8
    times = np.frombuffer(data, f">i{width}", n, at).astype(np.int64)
    kinds = np.frombuffer(data, np.uint8, n, at + n * width)
    utoff = np.array([struct.unpack_from(">l", data, at + n * (width + 1) + 6 * i)[0] for i in range(types)], np.int64)
    return times, utoff[kinds], int(utoff[0])


def _tzif_bytes(name: str) -> bytes:
    """The TZif file zoneinfo reads for `name` (its search path, then the tzdata package)."""
    for root in zoneinfo.TZPATH:
        path = os.path.join(root, name)
        if os.path.isfile(path):
            with open(path, "rb") as f:
                return f.read()
    return importlib.resources.files("tzdata").joinpath("zoneinfo", *name.split("/")).read_bytes()


def _rule_transitions(z: zoneinfo.ZoneInfo, after: int) -> tuple[list[int], list[int]]:
    """The transitions after the TZif file's last one, `after`, until ORC's nanoseconds end in
    2262, where the file's closing rule (daylight saving time, at most twice a year, months
    apart) applies: found week by week and bisected to the second."""
    times, offsets = [], []
    t, current = after, _utc_offset(z, after)
    while t < _END:
        if _utc_offset(z, t + _WEEK) != current:
            low, high = t, t + _WEEK
            while high - low > 1:
                middle = (low + high) // 2
                low, high = (middle, high) if _utc_offset(z, middle) == current else (low, middle)
            current = _utc_offset(z, high)
            times.append(high)
            offsets.append(current)
        t += _WEEK
    return times, offsets


def _utc_offset(z: zoneinfo.ZoneInfo, seconds: int) -> int:
    return int((_EPOCH + dt.timedelta(seconds=seconds)).astimezone(z).utcoffset().total_seconds())


def _fixed(seconds: int) -> Zone:
    """A fixed offset, to the minute as Java's "GMT+hh:mm" zones are."""
    minutes = int(seconds / 60)
    text = f"GMT{'-' if minutes < 0 else '+'}{abs(minutes) // 60:02d}:{abs(minutes) % 60:02d}"
    return Zone(text, np.zeros(0, np.int64), np.zeros(0, np.int64), minutes * 60)


def _present_offset() -> int:
    time.tzset()  # as TZ is now
    return time.localtime().tm_gmtoff


@functools.lru_cache(maxsize=4)
def _zone_of_copy(content: bytes) -> str | None:
    """The name of a zoneinfo file holding `content` (JDK's findZoneinfoFile), None if none."""
    for root, dirs, files in os.walk(_ZONEINFO):
        dirs[:] = sorted(d for d in dirs if d not in ("posix", "right") and not d.startswith("."))
        for name in sorted(files):
            path = os.path.join(root, name)
            if name not in ("posixrules", "localtime") and os.path.getsize(path) == len(content):
                with open(path, "rb") as f:
                    if f.read() == content:
                        return os.path.relpath(path, _ZONEINFO)
    return None
