"""Time-zone conversions of timestamp arrays that stay right after 2037.

pyarrow's `local_timestamp` and `assume_timezone` read the time-zone database's transitions,
which end in 2037 (later ones live in a rule the database's files end with, which pyarrow does
not apply): New York's 2040-07-01 12:00 EDT became 11:00, silently. java.time, Spark and
Python's zoneinfo apply the rule. Here a value from 2038 on is converted in the year of
2010-2037 that has its calendar (the weekday of January 1st and whether it is a leap year), so
that rules such as "the second Sunday of March" fall on the same dates, and moved back by the
same whole days. Years are few: the shift is found per distinct year, the arrays stay columnar.

Zones are given as Java's `ZoneId` text, as Spark's `spark.sql.session.timeZone` takes them
(`GMT+08:00`, `UTC+8`, `Z`, `UT`, `CST`, ...): `java_zone` turns one into a name pyarrow and
zoneinfo take; the conversions here apply it to the zones they are given.
"""
from __future__ import annotations

import calendar
import datetime as dt
import functools
import re
import zoneinfo
from typing import Callable

import pyarrow as pa
import pyarrow.compute as pc

from .errors import UnsupportedOperationError

_LAST_LISTED_YEAR = 2037
# java.time.ZoneId.SHORT_IDS (JDK 8-21), which Spark applies to a session time zone
_SHORT_IDS = {
    "ACT": "Australia/Darwin", "AET": "Australia/Sydney", "AGT": "America/Argentina/Buenos_Aires",
    "ART": "Africa/Cairo", "AST": "America/Anchorage", "BET": "America/Sao_Paulo", "BST": "Asia/Dhaka",
    "CAT": "Africa/Harare", "CNT": "America/St_Johns", "CST": "America/Chicago", "CTT": "Asia/Shanghai",
    "EAT": "Africa/Addis_Ababa", "ECT": "Europe/Paris", "IET": "America/Indiana/Indianapolis",
    "IST": "Asia/Kolkata", "JST": "Asia/Tokyo", "MIT": "Pacific/Apia", "NET": "Asia/Yerevan",
    "NST": "Pacific/Auckland", "PLT": "Asia/Karachi", "PNT": "America/Phoenix", "PRT": "America/Puerto_Rico",
    "PST": "America/Los_Angeles", "SST": "Pacific/Guadalcanal", "VST": "Asia/Ho_Chi_Minh",
    "EST": "-05:00", "MST": "-07:00", "HST": "-10:00",
}
# ZoneOffset.of's forms: +h, +hh, +hh:mm, +hhmm, +hh:mm:ss, +hhmmss
_OFFSET = re.compile(r"([+-])(\d{1,2})(?:(:?)(\d{2})(?:\3(\d{2}))?)?")


@functools.lru_cache(maxsize=256)
def java_zone(zone: str) -> str:
    """A zone as Java's `ZoneId.of(zone, ZoneId.SHORT_IDS)` reads it (Spark's session time zone;
    Spark first writes '+8:' as '+08:'), as a name pyarrow and zoneinfo take: `Z`, `UTC`, `GMT`,
    `UT` are 'UTC'; an offset, bare or after UTC/GMT/UT (`+8`, `GMT+08:00`, `UTC-3`), is '+hh:mm';
    a SHORT_IDS abbreviation (`CST`, `IST`, `PST`, ...) the region Java maps it to; a region id
    stays. An offset with seconds, which pyarrow cannot name, is an UnsupportedOperationError."""
    text = re.sub(r"^(.*?[+-])(\d):", r"\g<1>0\2:", zone.strip()) if zone else zone
    text = _SHORT_IDS.get(text, text)
    if text in ("Z", "UTC", "GMT", "UT"):
        return "UTC"
    prefix = next((p for p in ("UTC", "GMT", "UT") if text.startswith(p) and text[len(p):][:1] in ("+", "-")), "")
    offset = text[len(prefix):]
    if not prefix and offset[:1] not in ("+", "-"):
        return text  # a region id (America/New_York, Etc/GMT+8, ...)
    m = _OFFSET.fullmatch(offset)
    if m is None or (len(m.group(2)) == 1 and m.group(4) is not None):
        raise UnsupportedOperationError(f"time zone {zone!r} is no zone offset Java reads (+h, +hh, +hh:mm, +hhmm, "
                                        "+hh:mm:ss, +hhmmss, after UTC, GMT or UT or alone)")
    sign, hours, minutes, seconds = m.group(1), int(m.group(2)), int(m.group(4) or 0), int(m.group(5) or 0)
    if hours > 18 or minutes > 59 or seconds > 59 or (hours == 18 and (minutes or seconds)):
        raise UnsupportedOperationError(f"time zone {zone!r}: an offset beyond Java's -18:00 to +18:00")
    if seconds:
        raise UnsupportedOperationError(f"time zone {zone!r}: an offset with seconds, which pyarrow cannot apply; "
                                        "use an offset in whole minutes or a region id")
    if hours == minutes == 0:
        return "UTC"
    return f"{sign}{hours:02d}:{minutes:02d}"
_UNIT_PER_DAY = {"s": 86_400, "ms": 86_400_000, "us": 86_400_000_000, "ns": 86_400_000_000_000}


def local_wall_times(instants: pa.Array) -> pa.Array:
    """`pc.local_timestamp`: the wall times instants (of a zoned type) show in their zone (a Java
    zone id too, `java_zone`)."""
    zone = java_zone(instants.type.tz)
    if zone != instants.type.tz:
        instants = instants.cast(pa.timestamp(instants.type.unit, zone))
    return _through_listed_years(instants, zone, pc.local_timestamp)


def instants_in(wall_times: pa.Array, zone: str, **options) -> pa.Array:
    """`pc.assume_timezone(wall_times, zone, **options)`: wall times read as instants of `zone`
    (a Java zone id too, `java_zone`)."""
    zone = java_zone(zone)
    return _through_listed_years(wall_times, zone, lambda a: pc.assume_timezone(a, zone, **options))


def instants_of_wall_times(arr: pa.Array, zone: str) -> pa.Array:
    """Wall times read in `zone` as java.time and Spark's casts read them: a repeated one as the
    earlier instant, one the clocks skipped moved later by the gap (02:30 on a spring-forward
    day in New York is 03:30 EDT), that is read with the offset before the gap."""
    earliest = instants_in(arr, zone, ambiguous="earliest", nonexistent="earliest")
    latest = instants_in(arr, zone, ambiguous="earliest", nonexistent="latest")
    skipped = pc.not_equal(earliest, latest)  # only in a gap: the instants before and after it
    if not pc.any(skipped).as_py():
        return latest
    # `earliest` is the gap's last instant before it: its wall time minus it is the offset before
    offset_before = pc.subtract(local_wall_times(earliest).cast(pa.int64()), earliest.cast(pa.int64()))
    moved = pc.subtract(arr.cast(pa.int64()), offset_before).cast(latest.type)
    return pc.if_else(skipped, moved, latest)


def _through_listed_years(arr: pa.Array, zone: str, convert: Callable[[pa.Array], pa.Array]) -> pa.Array:
    """`convert(arr)`, with values after 2037 converted in a listed year of the same calendar and
    shifted back (module docstring). The shift is taken from the year of the value as given
    (an instant's in UTC): a shift by whole days keeps month, day and weekday."""
    years = pc.year(arr.cast(pa.timestamp(arr.type.unit)))
    late = pc.fill_null(pc.and_(pc.greater(years, _LAST_LISTED_YEAR), pc.less_equal(years, dt.MAXYEAR)), False)
    if not pc.any(late).as_py() or _fixed(zone):
        return convert(arr)
    distinct = pc.unique(pc.filter(years, late)).to_pylist()
    days = pa.array([_days_to_listed_year(zone, y) for y in distinct], pa.int64())
    shift = pc.multiply(pc.fill_null(pc.take(days, pc.index_in(years, pa.array(distinct, years.type))), 0),
                        _UNIT_PER_DAY[arr.type.unit])
    moved = pc.add(arr.cast(pa.int64()), shift).cast(arr.type)
    out = convert(moved)
    return pc.subtract(out.cast(pa.int64()), shift).cast(out.type)


def _fixed(zone: str) -> bool:
    return zone.upper() in ("UTC", "Z", "GMT", "ETC/UTC") or zone[:1] in ("+", "-")


@functools.lru_cache(maxsize=4096)
def _days_to_listed_year(zone: str, year: int) -> int:
    """Days from January 1st of `year` to January 1st of a year up to 2037 in which `zone` has
    the offsets, hour by hour, that zoneinfo (applying the database's closing rule) gives
    `year`: the latest with its calendar, else (a zone without daylight saving by then, such as
    Brazil's since 2019) the latest with the same offsets."""
    jan1 = dt.date(year, 1, 1)
    z = zoneinfo.ZoneInfo(zone)
    start = dt.datetime(year, 1, 1, tzinfo=dt.timezone.utc)
    hours = (dt.date(year + 1, 1, 1) - jan1).days * 24 if year < dt.MAXYEAR else 364 * 24
    offsets = [z.utcoffset(start + dt.timedelta(hours=h)) for h in range(hours)]
    same_calendar = [y for y in range(_LAST_LISTED_YEAR, 1969, -1)
                     if dt.date(y, 1, 1).weekday() == jan1.weekday() and calendar.isleap(y) == calendar.isleap(year)]
    others = [y for y in range(_LAST_LISTED_YEAR - 1, 1969, -1) if y not in same_calendar] \
        if len(set(offsets)) == 1 else []
    for listed in same_calendar + others:
        days = (dt.date(listed, 1, 1) - jan1).days
        there = start + dt.timedelta(days=days)
        if all(z.utcoffset(there + dt.timedelta(hours=h)) == offset for h, offset in enumerate(offsets)):
            return days
    raise UnsupportedOperationError(f"time zone {zone!r} has rules in {year} that no year up to 2037 has: its times "
                                    "cannot be converted exactly (pyarrow's time zone database ends in 2037)")
