"""Time-zone rules as the JVM has them: IANA's data as the `tzdata` package ships it.

Java's tzdb (java.time, java.util, Spark, Java Paimon) is compiled from IANA's default data,
without the 'backzone' file of pre-1970 histories that some systems build theirs with (Debian's
/usr/share/zoneinfo, which pyarrow's time-zone kernels and `zoneinfo.ZoneInfo(name)` read): there
Europe/Amsterdam on 1900-01-01 is at +00:19:32 where Java has +00:00 (a link to Brussels), and
Europe/Oslo in 1965 is an hour off. Every conversion of this package reads the `tzdata`
package's TZif files instead: `zone_info` for scalars, `rules` for arrays (numpy transition
tables, looked up with searchsorted).

A TZif file (RFC 8536) lists transitions until the zone's last change of rules and ends with a
POSIX TZ rule for later times (daylight saving each year). `rules` tabulates that rule for 400
years, after which the Gregorian calendar, and so the rule's transitions, repeat: later times
are looked up whole 400-year cycles back.
"""
from __future__ import annotations

import calendar
import datetime as dt
import functools
import importlib.resources
import io
import os
import re
import struct
import time
import zoneinfo
from dataclasses import dataclass

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from .errors import UnsupportedOperationError

PER_SECOND = {"s": 1, "ms": 1000, "us": 10**6, "ns": 10**9}
_INT64_MIN, _INT64_MAX = np.iinfo(np.int64).min, np.iinfo(np.int64).max
_CYCLE = 146097 * 86400  # seconds in 400 Gregorian years: the calendar repeats after them
_ZONEINFO = "/usr/share/zoneinfo"  # Java's ZONEINFO_DIR on Linux, where it names /etc/localtime
# POSIX TZ: std offset [dst [offset] ,start[/time],end[/time]], names alphabetic or <quoted>
_NAME = r"(?:[A-Za-z]{3,}|<[^>]*>)"
_HMS = r"[+-]?\d{1,3}(?::\d{2}){0,2}"
_DAY = r"M\d{1,2}\.\d\.\d|J\d{1,3}|\d{1,3}"
_POSIX = re.compile(rf"{_NAME}({_HMS})(?:{_NAME}({_HMS})?,({_DAY})(?:/({_HMS}))?,({_DAY})(?:/({_HMS}))?)?")


@dataclass(frozen=True, eq=False)
class Rules:
    """A zone's UTC offsets (seconds): `offsets[i]` is the offset after the first i
    `transitions` (instants, in seconds, sorted), `offsets[0]` the one before them all; from
    `cycle_start` (seconds) on, offsets repeat every 400 years (None: never changing again)."""
    name: str
    transitions: np.ndarray
    offsets: np.ndarray
    cycle_start: int | None

    def index_at(self, values: np.ndarray, per_second: int, starts: np.ndarray | None = None) -> np.ndarray:
        """For each of `values` (epoch times, `per_second` to the second), how many of `starts`
        are at or before it: of the transitions (default) or, one for each, of another measure
        of them in seconds (such as the wall times they happen at); times past the tabulated
        cycle looked up whole cycles back. `offsets[index]` is the offset then."""
        starts = self.transitions if starts is None else starts
        if not len(starts):
            return np.zeros(len(values), np.intp)
        if self.cycle_start is not None and self.cycle_start + _CYCLE <= _INT64_MAX // per_second:
            first, cycle = self.cycle_start * per_second, _CYCLE * per_second
            if values.max(initial=first + cycle - 1) >= first + cycle:
                values = np.where(values >= first + cycle, first + (values - first) % cycle, values)
        # in the values' unit: a transition beyond int64 there is after every value, one before it before every one
        starts = starts[:np.searchsorted(starts, _INT64_MAX // per_second, side="right")]
        scaled = np.where(starts < _INT64_MIN // per_second + 1, _INT64_MIN, starts * per_second)
        return np.searchsorted(scaled, values, side="right")


def epoch_ints(values: pa.Array) -> np.ndarray:
    """Timestamps as their int64 epoch values (nulls as 0), without a copy where they have none."""
    ints = values.cast(pa.int64())
    return (ints.fill_null(0) if ints.null_count else ints).to_numpy(zero_copy_only=False)


def shifted(values: pa.Array, ints: np.ndarray, deltas: np.ndarray, type_: pa.DataType) -> pa.Array:
    """`values` (timestamps; `ints`, their `epoch_ints`) plus `deltas` (a new array, in their
    unit, reused) as `type_`, null where `values` is; ArrowInvalid for a sum beyond int64."""
    limit = _INT64_MAX - 2 * 86400 * PER_SECOND[values.type.unit]  # any offset is less than a day
    if len(ints) and (ints.max() > limit or ints.min() < -limit):
        total = pc.add_checked(ints, deltas).to_numpy()
    else:
        total = np.add(deltas, ints, out=deltas)
    mask = values.is_null().to_numpy(zero_copy_only=False) if values.null_count else None
    return pa.array(total, pa.int64(), mask=mask).cast(type_)


@functools.lru_cache(maxsize=1)
def _names() -> frozenset[str]:
    return frozenset(importlib.resources.files("tzdata").joinpath("zones").read_text().split())


def _tzif_bytes(name: str) -> bytes:
    """The tzdata package's TZif file of region id `name` (ZoneInfoNotFoundError if none)."""
    if name not in _names():
        raise zoneinfo.ZoneInfoNotFoundError(f"No time zone found with key {name}")
    return importlib.resources.files("tzdata").joinpath("zoneinfo", *name.split("/")).read_bytes()


def is_zone(name: str) -> bool:
    return name in _names()


@functools.lru_cache(maxsize=256)
def zone_info(name: str) -> zoneinfo.ZoneInfo:
    """Region id `name` as a ZoneInfo of the tzdata package's data, as Java has it (not the
    system's: module docstring); ZoneInfoNotFoundError (a KeyError) for an unknown name."""
    return zoneinfo.ZoneInfo.from_file(io.BytesIO(_tzif_bytes(name)), key=name)


@functools.lru_cache(maxsize=256)
def rules(zone: str) -> Rules:
    """The offsets of `zone`: a region id of the tzdata package, or a fixed offset '+hh:mm' /
    '-hh:mm' (`zones.java_zone`'s names); ZoneInfoNotFoundError for an unknown name."""
    if zone[:1] in ("+", "-"):
        seconds = int(zone[1:3]) * 3600 + int(zone[4:6]) * 60
        return Rules(zone, np.zeros(0, np.int64), np.array([-seconds if zone[0] == "-" else seconds], np.int64), None)
    data = _tzif_bytes(zone)
    times, offsets = _tzif(data)
    footer = data.rstrip(b"\n").rsplit(b"\n", 1)[-1].decode("ascii")
    m = _POSIX.fullmatch(footer)
    if footer and m is None:
        raise UnsupportedOperationError(f"time zone {zone!r}: its TZif rule {footer!r} is not read here")
    if m is None or m.group(3) is None:  # no daylight saving after the last transition
        return Rules(zone, times, offsets, None)
    std = -_seconds(m.group(1))
    dst = -_seconds(m.group(2)) if m.group(2) else std + 3600
    last = int(times[-1]) if len(times) else 0
    first_year = dt.datetime.fromtimestamp(last, dt.timezone.utc).year
    events = []  # (instant, offset from it on): the rule's two changes a year, through one cycle
    for year in range(first_year - 1, first_year + 404):
        events.append((_rule_day(m.group(3), year) + _seconds(m.group(4) or "2") - std, dst))
        events.append((_rule_day(m.group(5), year) + _seconds(m.group(6) or "2") - dst, std))
    later_times, later_offsets, current = [], [], int(offsets[-1])
    for instant, offset in sorted(events):
        if instant > last and offset != current:
            later_times.append(instant)
            later_offsets.append(offset)
            current = offset
    cycle_start = int(dt.datetime(first_year + 2, 1, 1, tzinfo=dt.timezone.utc).timestamp())
    return Rules(zone, np.concatenate([times, np.array(later_times, np.int64)]),
                 np.concatenate([offsets, np.array(later_offsets, np.int64)]), cycle_start)


def _tzif(data: bytes) -> tuple[np.ndarray, np.ndarray]:
    """A TZif file's transitions (seconds) and the offset before the first, then after each
    (RFC 8536): from its 64-bit part (version 2 on), else from its 32-bit one."""
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
    return times, np.concatenate([utoff[:1], utoff[kinds]])


def _seconds(text: str) -> int:
    """A POSIX TZ [+-]hh[:mm[:ss]] in seconds."""
    parts = [int(p) for p in text.lstrip("+-").split(":")] + [0, 0]
    return (-1 if text.startswith("-") else 1) * (parts[0] * 3600 + parts[1] * 60 + parts[2])


def _rule_day(day: str, year: int) -> int:
    """The midnight (seconds, as if at UTC) of a POSIX TZ rule's day in `year`: Mm.w.d (weekday d,
    0 Sunday, of week w, 5 the last, of month m), Jn (1-365, no February 29th) or n (0-365)."""
    if day.startswith("M"):
        month, week, weekday = (int(p) for p in day[1:].split("."))
        first = dt.date(year, month, 1)
        date = 1 + (weekday - first.isoweekday() % 7) % 7 + 7 * (week - 1)
        while date > calendar.monthrange(year, month)[1]:
            date -= 7
        ordinal = first.replace(day=date).toordinal()
    elif day.startswith("J"):
        n = int(day[1:])
        ordinal = dt.date(year, 1, 1).toordinal() + n - 1 + (calendar.isleap(year) and n >= 60)
    else:
        ordinal = dt.date(year, 1, 1).toordinal() + int(day)
    return (ordinal - dt.date(1970, 1, 1).toordinal()) * 86400


def local_zone_name() -> str | None:
    """The region id a JVM started now, in this environment, takes as its default zone on Linux
    (JDK's TimeZone_md.c): TZ (a leading ':' or 'posix/' dropped), else the zoneinfo file
    /etc/localtime links to or is a copy of, else UTC; None when that names no zone (a POSIX rule
    such as 'XYZ-8' in TZ): then Java takes the C library's present offset (`local_offset`)."""
    tz = os.environ.get("TZ")
    if tz:
        name = tz.removeprefix(":").removeprefix("posix/")
        return name if is_zone(name) else None
    try:
        link = os.readlink("/etc/localtime")
    except FileNotFoundError:
        return "UTC"
    except OSError:  # a regular file: a copy of one of the zoneinfo files
        with open("/etc/localtime", "rb") as f:
            return _zone_of_copy(f.read())
    name = link.split("zoneinfo/", 1)[1] if "zoneinfo/" in link else ""
    return name if is_zone(name) else None


def local_offset() -> int:
    """The C library's present offset (seconds) in whole minutes, as Java's "GMT+hh:mm" zone for
    a TZ that names no zone has it."""
    time.tzset()  # as TZ is now
    return int(time.localtime().tm_gmtoff / 60) * 60


def local_tzinfo() -> dt.tzinfo:
    """The JVM's default zone (`local_zone_name`) as a tzinfo, for scalar conversions."""
    name = local_zone_name()
    return zone_info(name) if name else dt.timezone(dt.timedelta(seconds=local_offset()))


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
                        name = os.path.relpath(path, _ZONEINFO)
                        return name if is_zone(name) else None
    return None
