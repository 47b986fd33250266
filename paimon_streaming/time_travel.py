"""Finding snapshots by time, and resolving a batch read's time-travel options.

Snapshot times increase with ids (each commit is published after its predecessor), so
both lookups are binary searches over [earliest, latest], as Java's
`TimeTravelUtil.earlierThanTimeMills` / `SnapshotManager.earlierOrEqualTimeMills`.
"""
from __future__ import annotations

import datetime as dt

from .errors import InvalidOptionError, SnapshotNotFoundError
from .snapshot import Snapshot, SnapshotManager
from .tags import TagManager


def parse_local_timestamp(text: str, key: str) -> int:
    """Epoch millis of a 'yyyy-MM-dd[ HH:mm:ss[.SSS]]' local time (Java's `scan.timestamp`,
    read in the JVM's default time zone, which here is this process's)."""
    try:
        value = dt.datetime.fromisoformat(text.strip())
    except ValueError:
        raise InvalidOptionError(f"option '{key}' must be a local time such as '2024-05-01 12:00:00', "
                                 f"got {text!r}") from None
    if value.tzinfo is None:
        value = value.astimezone()  # the local time zone
    return int(value.timestamp() * 1000)


def _last_with(manager: SnapshotManager, millis: int, inclusive: bool) -> int | None:
    """Id of the newest snapshot with time < millis (<= when inclusive); None when none is."""
    earliest, latest = manager.earliest_id(), manager.latest_id()
    if earliest is None or latest is None:
        return None

    def before(snapshot_id: int) -> bool:
        t = manager.snapshot(snapshot_id).time_millis
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


def earlier_than(manager: SnapshotManager, millis: int) -> int | None:
    """Newest snapshot id committed strictly before `millis`, or None."""
    return _last_with(manager, millis, inclusive=False)


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
