"""Time-zone conversions of timestamp arrays that stay right after 2037.

pyarrow's `local_timestamp` and `assume_timezone` read the time-zone database's transitions,
which end in 2037 (later ones live in a rule the database's files end with, which pyarrow does
not apply): New York's 2040-07-01 12:00 EDT became 11:00, silently. java.time, Spark and
Python's zoneinfo apply the rule. Here a value from 2038 on is converted in the year of
2010-2037 that has its calendar (the weekday of January 1st and whether it is a leap year), so
that rules such as "the second Sunday of March" fall on the same dates, and moved back by the
same whole days. Years are few: the shift is found per distinct year, the arrays stay columnar.
"""
from __future__ import annotations

import calendar
import datetime as dt
import functools
import zoneinfo
from typing import Callable

import pyarrow as pa
import pyarrow.compute as pc

from .errors import UnsupportedOperationError

_LAST_LISTED_YEAR = 2037
_UNIT_PER_DAY = {"s": 86_400, "ms": 86_400_000, "us": 86_400_000_000, "ns": 86_400_000_000_000}


def local_wall_times(instants: pa.Array) -> pa.Array:
    """`pc.local_timestamp`: the wall times instants (of a zoned type) show in their zone."""
    return _through_listed_years(instants, instants.type.tz, pc.local_timestamp)


def instants_in(wall_times: pa.Array, zone: str, **options) -> pa.Array:
    """`pc.assume_timezone(wall_times, zone, **options)`: wall times read as instants of `zone`."""
    return _through_listed_years(wall_times, zone, lambda a: pc.assume_timezone(a, zone, **options))


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
