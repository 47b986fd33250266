"""Automatic tag creation (`tag.automatic-creation`), as Java's `TagAutoCreation`.

Each snapshot gets a time: its commit time in `sink.process-time-zone` (`process-time`) or
its watermark in `sink.watermark-time-zone` (`watermark`; snapshots without one are
skipped). When a snapshot's time minus `tag.creation-delay` reaches the end of the period
after the last automatic tag, the period that just completed is tagged on that snapshot:
a commit at 2024-05-07 00:10 of a daily table creates tag `2024-05-06`; the very first
snapshot tags the period before its own. Names follow `tag.period-formatter`
(daily `2024-05-06` / `20240506`, hourly `2024-05-06 13` / `20240506 13` / `2024050613`,
two-hours always `2024-05-06 12`; `tag.creation-period-duration`, e.g. `30 min`, instead of the
period: `202405061330`). With `tag.num-retained-max` the oldest automatic tags
beyond that number are deleted, with their files. Progress is not kept in memory: it is
the newest automatic tag, so any writer process continues where another stopped.

`batch` (Java's `TagBatchCreation`): after each batch commit (the batch commit identifier,
not a streaming micro-batch) the latest snapshot is tagged `batch-write-<yyyy-MM-dd>`, the day
of its commit time in `sink.process-time-zone`, or `tag.batch.customized-name`; a tag of that
name is replaced. Then with `tag.num-retained-max` the oldest tags beyond it go, counting every
tag (manual ones too), as Java counts them.
"""
from __future__ import annotations

import datetime as dt
import logging
from zoneinfo import ZoneInfo

from .branches import MAIN, branch_path
from .errors import InvalidOptionError, SnapshotNotFoundError
from .fileio import FileIO
from .options import CoreOptions
from .schema import TableSchema
from .snapshot import Snapshot, SnapshotManager
from .tag_deletion import TagDeletion
from .tags import TagManager
from .tzdb import local_tzinfo, zone_info

log = logging.getLogger(__name__)

_EPOCH = dt.datetime(1970, 1, 1)
_PERIODS = {"daily": dt.timedelta(days=1), "hourly": dt.timedelta(hours=1), "two-hours": dt.timedelta(hours=2)}
_FORMATS = {
    ("daily", "with_dashes"): "%Y-%m-%d", ("daily", "without_dashes"): "%Y%m%d",
    ("daily", "without_dashes_and_spaces"): "%Y%m%d",
    ("hourly", "with_dashes"): "%Y-%m-%d %H", ("hourly", "without_dashes"): "%Y%m%d %H",
    ("hourly", "without_dashes_and_spaces"): "%Y%m%d%H",
}


class TagPeriod:
    """Tag names <-> period start times for one `tag.creation-period` and formatter, or a
    `tag.creation-period-duration` (which wins; tags named `yyyyMMddHHmm`, as Java names them)."""

    def __init__(self, period: str, formatter: str, duration_ms: int | None = None):
        if duration_ms is not None:
            self.length, self.format = dt.timedelta(milliseconds=duration_ms), "%Y%m%d%H%M"
            return
        self.length = _PERIODS[period]
        self.format = "%Y-%m-%d %H" if period == "two-hours" else _FORMATS[(period, formatter)]

    def name(self, start: dt.datetime) -> str:
        return start.strftime(self.format)

    def start_of(self, name: str) -> dt.datetime | None:
        """The period start a tag name stands for, None when it is not an automatic tag."""
        try:
            parsed = dt.datetime.strptime(name, self.format)
        except ValueError:
            return None
        return parsed if self.name(parsed) == name else None

    def previous_period(self, time: dt.datetime) -> dt.datetime:
        """Start of the period before the one holding `time` (Java's normalizeToPreviousTag)."""
        offset = (time - _EPOCH) // self.length
        return _EPOCH + offset * self.length - self.length


def validate_tag_creation(options: CoreOptions, table_path: str) -> ZoneInfo | None:
    """The time zone automatic tags are named in (None: this process's); InvalidOptionError,
    naming the option, for a `tag.creation-delay` not shorter than the period or an unknown
    zone, which Java's writers refuse too."""
    mode = options.get("tag.automatic-creation")
    if mode != "batch":  # (batch tags have no period)
        period = TagPeriod(options.get("tag.creation-period"), options.get("tag.period-formatter"),
                           options.get("tag.creation-period-duration"))
        if dt.timedelta(milliseconds=options.get("tag.creation-delay")) >= period.length:
            raise InvalidOptionError(f"table option 'tag.creation-delay' of {table_path} must be shorter than the "
                                     "tag.creation-period")
    zone_key = "sink.watermark-time-zone" if mode == "watermark" else "sink.process-time-zone"
    zone = options.get(zone_key)
    try:
        return zone_info(zone) if zone else None
    except (KeyError, ValueError) as exc:
        raise InvalidOptionError(f"table option '{zone_key}' of {table_path}: unknown time zone {zone!r}") from exc


class TagAutoCreation:
    """Creates (and trims) the automatic tags of one table after commits."""

    def __init__(self, file_io: FileIO, table_path: str, schema: TableSchema, branch: str = MAIN):
        options = CoreOptions(schema.options)
        self.mode = options.get("tag.automatic-creation")
        self.period = TagPeriod(options.get("tag.creation-period"), options.get("tag.period-formatter"),
                                options.get("tag.creation-period-duration"))
        self.delay = dt.timedelta(milliseconds=options.get("tag.creation-delay"))
        self.num_retained_max = options.get("tag.num-retained-max")
        self.time_retained_ms = options.get("tag.default-time-retained")
        self.completion = options.get("tag.automatic-completion")
        # a table that creates no tags is not held to the options only its tag creation reads
        self.zone = validate_tag_creation(options, table_path) if self.enabled else None
        self.table_path = table_path
        self.snapshots = SnapshotManager(file_io, branch_path(table_path, branch))
        self.tags = TagManager(file_io, branch_path(table_path, branch))
        self.deletion = TagDeletion(file_io, table_path, schema, branch)

    @property
    def enabled(self) -> bool:
        return self.mode in ("process-time", "watermark")

    def snapshot_time(self, snapshot: Snapshot) -> dt.datetime | None:
        millis = snapshot.time_millis if self.mode == "process-time" else snapshot.watermark
        if millis is None or millis == -(2 ** 63):
            return None
        # unset, the zone is the local one, as the JVM's default
        return dt.datetime.fromtimestamp(millis / 1000, self.zone or local_tzinfo()).replace(tzinfo=None)

    def run(self) -> list[str]:
        """Tag every period completed since the newest automatic tag; returns the new names."""
        if not self.enabled:
            return []
        latest_id = self.snapshots.latest_id()
        if latest_id is None:
            return []
        auto = sorted((start, name) for name in self.tags.tag_names()
                      if (start := self.period.start_of(name)) is not None)
        # more automatic tags than `tag.num-retained-max`: a run that created one failed before
        # its trim (the next runs create none until the next period); trim now (no extra read)
        surplus = self.num_retained_max is not None and len(auto) > self.num_retained_max
        next_tag: dt.datetime | None = None
        next_id = self.snapshots.earliest_id()
        latest_time = self.snapshot_time(self.snapshots.snapshot(latest_id))
        if latest_time is None:
            return []  # watermarks only grow: without one on the latest snapshot none has one
        if auto:
            start, name = auto[-1]
            next_tag = start + self.period.length
            next_id = max(next_id, self.tags.snapshot(name).id + 1)
            if latest_time - self.delay < next_tag + self.period.length:
                if surplus:
                    self._trim()
                return []  # the common case: one snapshot read, nothing due
        created = []
        for sid in range(next_id, latest_id + 1):
            try:
                snapshot = self.snapshots.snapshot(sid)
            except SnapshotNotFoundError:
                continue  # expired meanwhile
            when = self.snapshot_time(snapshot)
            if when is None:
                continue
            if next_tag is None or when - self.delay >= next_tag + self.period.length:
                this_tag = next_tag if (self.completion and next_tag is not None) else \
                    self.period.previous_period(when)
                name = self.period.name(this_tag)
                if not self.tags.exists(name):
                    try:
                        self.tags.create(snapshot, name, self.time_retained_ms, allow_numeric=True)
                    except SnapshotNotFoundError:
                        continue  # expired while tagged: the tag was withdrawn
                    created.append(name)
                next_tag = this_tag + self.period.length
        if created:
            log.info("created automatic tags %s of %s", created, self.table_path)
        if created or surplus:
            self._trim()
        return created

    def _trim(self) -> None:
        if self.num_retained_max is None:
            return
        auto = sorted((self.tags.snapshot(n).id, start, n) for n in self.tags.tag_names()
                      if (start := self.period.start_of(n)) is not None)
        for _, _, name in auto[:max(0, len(auto) - self.num_retained_max)]:
            log.info("deleting automatic tag %s of %s: more than tag.num-retained-max=%s", name,
                     self.table_path, self.num_retained_max)
            self.deletion.delete(name)


BATCH_TAG_PREFIX = "batch-write-"


class TagBatchCreation:
    """Tags the latest snapshot after a batch commit (`tag.automatic-creation` = batch) and
    trims the tags to `tag.num-retained-max`, as Java's `TagBatchCreation`."""

    def __init__(self, file_io: FileIO, table_path: str, schema: TableSchema, branch: str = MAIN):
        options = CoreOptions(schema.options)
        self.zone = validate_tag_creation(options, table_path)
        self.customized_name = options.get("tag.batch.customized-name")
        self.num_retained_max = options.get("tag.num-retained-max")
        self.time_retained_ms = options.get("tag.default-time-retained")
        self.table_path = table_path
        self.file_io = file_io
        self.snapshots = SnapshotManager(file_io, branch_path(table_path, branch))
        self.tags = TagManager(file_io, branch_path(table_path, branch))
        self.deletion = TagDeletion(file_io, table_path, schema, branch)

    def name(self, snapshot: Snapshot) -> str:
        """`tag.batch.customized-name`, else `batch-write-` and the day of the snapshot's commit
        time in `sink.process-time-zone` (this process's zone when unset, as the JVM's)."""
        if self.customized_name is not None:
            return self.customized_name
        when = dt.datetime.fromtimestamp(snapshot.time_millis / 1000, self.zone or local_tzinfo())
        return BATCH_TAG_PREFIX + when.strftime("%Y-%m-%d")

    def run(self) -> str | None:
        """Tag the latest snapshot (replacing a tag of the name), then trim; the tag's name."""
        latest = self.snapshots.latest()
        if latest is None:
            return None
        name = self.name(latest)
        if self.tags.exists(name):
            self.deletion.delete(name)
        self.tags.create(latest, name, self.time_retained_ms)
        log.info("created batch tag %s of %s on snapshot %s", name, self.table_path, latest.id)
        self._trim()
        return name

    def _trim(self) -> None:
        """Beyond `tag.num-retained-max` tags, the oldest go: by snapshot id, the tags of one
        snapshot by their files' modification time."""
        if self.num_retained_max is None:
            return
        tagged = self.tags.tagged_snapshots()
        count = sum(len(names) for _, names in tagged)
        if count <= self.num_retained_max:
            return
        mtimes = {s.path.rsplit("/", 1)[-1]: s.mtime_ms for s in self.file_io.list_status(self.tags.dir)}
        for _, names in tagged:
            for name in sorted(names, key=lambda n: mtimes.get(self.tags.path(n).rsplit("/", 1)[-1], 0)):
                if count <= self.num_retained_max:
                    return
                log.info("deleting tag %s of %s: more than tag.num-retained-max=%s", name, self.table_path,
                         self.num_retained_max)
                self.deletion.delete(name)
                count -= 1
