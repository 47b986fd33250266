"""Finding snapshots by time, and resolving a batch read's time-travel options.

Snapshot times increase with ids (each commit is published after its predecessor), so
both lookups are binary searches over [earliest, latest], as Java's
`TimeTravelUtil.earlierThanTimeMills` / `SnapshotManager.earlierOrEqualTimeMills`.
"""
from __future__ import annotations

import datetime as dt
import re
from typing import Callable

from .errors import InvalidOptionError, SnapshotNotFoundError
from .snapshot import Snapshot, SnapshotManager
from .tags import TagManager
from .tzdb import local_tzinfo


# Java's `DateTimeUtils` formatter, `yyyy-[MM][M]-[dd][d][ [HH][H]:[mm][m]:[ss][s][.fraction]]`,
# and besides it 'T' between date and time, seconds left out, and an explicit zone ('Z',
# '+05:30'), which Java refuses and which here mean what they say.
_TIMESTAMP = re.compile(r"(\d{4})-(\d{1,2})-(\d{1,2})"
                        r"(?:[ T](\d{1,2}):(\d{1,2})(?::(\d{1,2})(?:\.(\d{1,9}))?)?(Z|[+-]\d{2}:?\d{2})?)?")
_EPOCH = dt.datetime(1970, 1, 1)
_EPOCH_UTC = dt.datetime(1970, 1, 1, tzinfo=dt.timezone.utc)
_MILLI = dt.timedelta(milliseconds=1)


def parse_local_timestamp(text: str, key: str) -> int:
    """Epoch millis of a 'yyyy-MM-dd[ HH:mm:ss[.fraction]]' local time (Java's `scan.timestamp`,
    read in the JVM's default time zone, which here is this process's), the fraction cut to
    millis as Java does. Exact integer arithmetic: a float on the way made some milliseconds
    the one before."""
    match = _TIMESTAMP.fullmatch(str(text).strip())
    wall = None
    if match:
        year, month, day, hour, minute, second, fraction, zone = match.groups()
        try:
            wall = dt.datetime(int(year), int(month), int(day), int(hour or 0), int(minute or 0), int(second or 0))
        except ValueError:
            wall = None
    if wall is None:
        raise InvalidOptionError(f"option '{key}' must be a local time such as '2024-05-01 12:00:00' or "
                                 f"'2024-05-01 12:00:00.250' (yyyy-MM-dd[ HH:mm:ss[.SSS]]), got {text!r}")
    millis = int((fraction or "").ljust(3, "0")[:3])
    if zone is None:
        return local_epoch_millis(wall) + millis
    offset = 0 if zone == "Z" else (1 if zone[0] == "+" else -1) * (int(zone[1:3]) * 3600 + int(zone[-2:]) * 60)
    return (wall - _EPOCH) // _MILLI - offset * 1000 + millis


def local_epoch_millis(wall: dt.datetime) -> int:
    """Epoch millis of a naive local date-time in the JVM's default zone (`tzdb.local_tzinfo`),
    as Java's `LocalDateTime.atZone(default zone)`: in an overlap (clocks turned back) the
    earlier instant, in a gap (clocks turned forward) the time moved forward by the gap (both
    zoneinfo's fold=0: the offset before the transition)."""
    return (wall.replace(tzinfo=local_tzinfo(), fold=0) - _EPOCH_UTC) // _MILLI


def _last_with(manager: SnapshotManager, millis: int, inclusive: bool, earliest: int | None = None,
               read: Callable[[int], Snapshot] | None = None) -> int | None:
    """Id of the newest snapshot with time < millis (<= when inclusive) among [earliest, latest]
    read by `read` (by default the snapshots themselves); None when none is."""
    earliest, latest = manager.earliest_id() if earliest is None else earliest, manager.latest_id()
    if earliest is None or latest is None:
        return None
    read = manager.snapshot if read is None else read

    def before(snapshot_id: int) -> bool:
        t = read(snapshot_id).time_millis
        return t <= millis if inclusive else t < millis

    if not before(earliest):
        return None
    lo, hi = earliest, latest  # invariant: before(lo)
    while lo < hi:
        mid = (lo + hi + 1) // 2
        if before(mid):
            lo = mid
        else:
            hi = mid - 1
    return lo


def earlier_than(manager: SnapshotManager, millis: int, earliest: int | None = None,
                 read: Callable[[int], Snapshot] | None = None) -> int | None:
    """Newest snapshot id committed strictly before `millis`, or None. A stream searches from
    `earliest` with `read`, Java's long-lived changelogs of expired snapshots included."""
    return _last_with(manager, millis, False, earliest, read)


def earlier_or_equal(manager: SnapshotManager, millis: int) -> int | None:
    """Newest snapshot id committed at or before `millis`, or None."""
    return _last_with(manager, millis, inclusive=True)


def snapshot_at(manager: SnapshotManager, tags: TagManager, snapshot_id: int | None = None,
                tag: str | None = None, timestamp_millis: int | None = None) -> Snapshot | None:
    """The snapshot a batch read should see: by id, tag or time (at most one), else the latest."""
    given = [x for x in (snapshot_id, tag, timestamp_millis) if x is not None]
    if len(given) > 1:
        raise ValueError("time travel takes one of snapshot-id, tag, timestamp-millis, not several")
    if tag is not None:
        return tags.snapshot(tag)
    if snapshot_id is not None:
        return manager.snapshot(snapshot_id)
    if timestamp_millis is not None:
        found = earlier_or_equal(manager, timestamp_millis)
        if found is None:
            raise SnapshotNotFoundError(
                f"table {manager.table_path} has no snapshot committed at or before {timestamp_millis} "
                f"(epoch millis); earliest snapshot is {manager.earliest_id()}")
        return manager.snapshot(found)
    return manager.latest()
