"""Time-zone conversions of timestamp arrays, as java.time and Spark's casts make them.

Offsets come from the JVM's data (tzdb.py: the `tzdata` package's, not the system's, whose
pre-1970 histories differ; its closing rules applied after 2037, where pyarrow's time-zone
kernels stopped applying daylight saving), looked up with numpy's searchsorted in the zone's
transition table: no per-value Python.

Zones are given as Java's `ZoneId` text, as Spark's `spark.sql.session.timeZone` takes them
(`GMT+08:00`, `UTC+8`, `Z`, `UT`, `CST`, ...): `java_zone` turns one into a region id or a
fixed offset; the conversions here apply it to the zones they are given.
"""
from __future__ import annotations

import functools
import re

import numpy as np
import pyarrow as pa

from .errors import UnsupportedOperationError
from .tzdb import PER_SECOND, epoch_ints, rules, shifted

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
    Spark first writes '+8:' as '+08:'), as a name `tzdb.rules` and Arrow types take: `Z`, `UTC`, `GMT`,
    `UT` are 'UTC'; an offset, bare or after UTC/GMT/UT (`+8`, `GMT+08:00`, `UTC-3`), is '+hh:mm';
    a SHORT_IDS abbreviation (`CST`, `IST`, `PST`, ...) the region Java maps it to; a region id
    stays. An offset with seconds, which an Arrow type cannot name, is an UnsupportedOperationError."""
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


def local_wall_times(instants: pa.Array) -> pa.Array:
    """The wall times (timestamps without zone) instants of a zoned type show in their zone (a
    Java zone id too, `java_zone`); ArrowInvalid for one beyond the unit's range."""
    per_second = PER_SECOND[instants.type.unit]
    table = rules(java_zone(instants.type.tz))
    ints = epoch_ints(instants)
    offsets = (table.offsets * per_second)[table.index_at(ints, per_second)]
    return shifted(instants, ints, offsets, pa.timestamp(instants.type.unit))


def instants_of_wall_times(arr: pa.Array, zone: str, strict: bool = False) -> pa.Array:
    """Wall times read in `zone` (a Java zone id too, `java_zone`) as java.time's
    `LocalDateTime.atZone` and Spark's casts read them: a repeated one as the earlier instant,
    one the clocks skipped moved later by the gap (02:30 on a spring-forward day in New York is
    03:30 EDT), that is read with the offset before the gap. `strict`: ArrowInvalid for such a
    wall time (which names no single instant) instead, as for one beyond the unit's range.
    Instants as timestamps in UTC."""
    per_second = PER_SECOND[arr.type.unit]
    table = rules(java_zone(zone))
    before, after = table.offsets[:-1], table.offsets[1:]
    ints = epoch_ints(arr)
    # a transition is past for the wall times from the later of the two it happens at on: up to
    # it the offset before (in a gap, in an overlap the earlier instant)
    index = table.index_at(ints, per_second, table.transitions + np.maximum(before, after))
    if strict:
        inside = table.index_at(ints, per_second, table.transitions + np.minimum(before, after)) > index
        if inside.any():
            at = int(np.argmax(inside))
            gap = after[index[at]] > before[index[at]]
            raise pa.ArrowInvalid(f"wall time {arr[at]} {'does not exist' if gap else 'is ambiguous'} in time zone "
                                  f"{zone!r} (clocks {'skip' if gap else 'repeat'} it)")
    return shifted(arr, ints, (table.offsets * -per_second)[index], pa.timestamp(arr.type.unit, "UTC"))
