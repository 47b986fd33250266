"""Batch incremental queries: what changed between two snapshots, tags or instants, as Java's
`incremental-between`, `incremental-between-timestamp` and `incremental-to-auto-tag`.

Two ways to answer, by `incremental-between-scan-mode`:

- `delta` / `changelog` (and `auto`: changelog when the table has a changelog producer, else
  delta): the files the snapshots in (start, end] added, read without merging, each row with
  the kind it was written with. Delta reads APPEND snapshots' new data files (compactions and
  overwrites change no rows); changelog reads the changelog files of every snapshot but
  overwrites. As Java's IncrementalDeltaStartingScanner; a key changed twice appears twice.
- `diff` (and always between two tags, unless `incremental-between-tag-to-snapshot`): the
  end snapshot's rows against the start snapshot's, per partition and bucket. On primary-key
  tables per key: +I for a new key, -U/+U for a changed row, -D for a removed key. On append
  tables the rows are compared as a multiset: rows only in the end state are +I, rows only in
  the start state -D, so rows a compaction merely rewrote are not reported again (Java's diff
  returns every row of a rewritten file).

A read returns the rows as `change_read.read_unit` does (`_VALUE_KIND` per row); without a row
kind column, -U and -D rows are dropped, so the result holds the rows as they are after the
change (Java drops -D rows of batch reads; ask for the row kind, as Java's audit_log, for all).
"""
from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Mapping

from .branches import branch_path
from .errors import InvalidOptionError, SnapshotExpiredError, SnapshotGapError, SnapshotNotFoundError
from .fileio import FileIO
from .long_lived_changelogs import long_lived_changelog
from .manifest import ADD, ManifestEntry
from .options import CoreOptions
from .scan import DataSplit, TableScan
from .schema import TableSchema
from .snapshot import APPEND, OVERWRITE, Snapshot, SnapshotManager
from .streaming_scan import CHANGELOG, DELTA, DIFF, ReadUnit
from .tag_creation import TagPeriod
from .tags import TagManager
from .time_travel import earlier_or_equal, parse_local_timestamp

MODES = ("auto", "delta", "changelog", "diff")


@dataclass(frozen=True)
class IncrementalRange:
    """One incremental query: `between` snapshot ids or tag names ("start,end"), or
    `between_timestamps` (epoch millis), or `to_auto_tag` (an automatic tag's name)."""
    between: tuple[str, str] | None = None
    between_timestamps: tuple[int, int] | None = None
    to_auto_tag: str | None = None
    mode: str = "auto"
    tag_to_snapshot: bool = False

    def __post_init__(self):
        given = [x for x in (self.between, self.between_timestamps, self.to_auto_tag) if x is not None]
        if len(given) != 1:
            raise InvalidOptionError("an incremental query takes one of incremental-between, "
                                     "incremental-between-timestamp, incremental-to-auto-tag")
        if self.mode not in MODES:
            raise InvalidOptionError(f"incremental-between-scan-mode must be one of {', '.join(MODES)}, "
                                     f"got {self.mode!r}")


INCREMENTAL_OPTIONS = ("incremental-between", "incremental-between-timestamp", "incremental-to-auto-tag")
TIME_TRAVEL_OPTIONS = ("snapshot-id", "tag", "timestamp-millis", "scan.snapshot-id", "scan.tag-name",
                       "scan.timestamp-millis", "scan.timestamp", "scan.version")


_EPOCH_MILLIS = re.compile(r"[+-]?[0-9]+")


def incremental_query(opts: Mapping[str, str]) -> IncrementalRange | None:
    """The batch incremental query options ask for (Java's keys, in lower case), None for none."""
    given = {k: str(opts[k]).strip() for k in INCREMENTAL_OPTIONS if str(opts.get(k, "")).strip()}
    if not given:
        for key in ("incremental-between-scan-mode", "incremental-between-tag-to-snapshot"):
            if str(opts.get(key, "")).strip():
                raise InvalidOptionError(f"option '{key}' needs 'incremental-between' or "
                                         "'incremental-between-timestamp'")
        return None
    if len(given) > 1:
        raise InvalidOptionError(f"give one of {', '.join(INCREMENTAL_OPTIONS)}, not {', '.join(given)}")
    travel = [k for k in TIME_TRAVEL_OPTIONS if str(opts.get(k, "")).strip()]
    if travel:
        raise InvalidOptionError(f"an incremental query ({', '.join(given)}) takes no time travel option "
                                 f"({', '.join(travel)})")
    mode = str(opts.get("incremental-between-scan-mode", "auto")).strip().lower() or "auto"
    tag_to_snapshot = str(opts.get("incremental-between-tag-to-snapshot", "false")).strip().lower()
    if tag_to_snapshot not in ("true", "false"):
        raise InvalidOptionError("option 'incremental-between-tag-to-snapshot' must be true or false, "
                                 f"got {opts['incremental-between-tag-to-snapshot']!r}")
    if "incremental-between" in given:
        return IncrementalRange(between=parse_pair(given["incremental-between"], "incremental-between"),
                                mode=mode, tag_to_snapshot=tag_to_snapshot == "true")
    if "incremental-between-timestamp" in given:
        key = "incremental-between-timestamp"
        pair = parse_pair(given[key], key)
        # epoch millis (signed, as Java's Long.parseLong takes them) or local times (Java takes
        # two of a kind; one of each means what it says here)
        millis = tuple(int(p) if _EPOCH_MILLIS.fullmatch(p) else parse_local_timestamp(p, key) for p in pair)
        return IncrementalRange(between_timestamps=millis, mode=mode)
    return IncrementalRange(to_auto_tag=given["incremental-to-auto-tag"], mode=mode)


def parse_pair(text: str, key: str) -> tuple[str, str]:
    """'start,end' of an incremental option."""
    parts = [p.strip() for p in str(text).split(",")]
    if len(parts) != 2 or not all(parts):
        raise InvalidOptionError(f"option '{key}' must be 'start,end' (start exclusive, end inclusive), "
                                 f"e.g. '5,10', got {text!r}")
    return parts[0], parts[1]


class IncrementalScan:
    """Plans the read units of an incremental query on one table (schema: the table's latest)."""

    def __init__(self, file_io: FileIO, table_path: str, schema: TableSchema, branch: str | None = None):
        self.file_io = file_io
        self.table_path = branch_path(table_path, branch)  # where the branch's snapshots and tags live
        self.schema = schema
        self.options = CoreOptions(schema.options)
        self.scan = TableScan(file_io, table_path, schema, branch)
        self.snapshots = SnapshotManager(file_io, self.table_path)
        self.tags = TagManager(file_io, self.table_path)

    def plan(self, query: IncrementalRange) -> list[ReadUnit]:
        if query.between is not None:
            return self._between(*query.between, query.mode, query.tag_to_snapshot)
        if query.between_timestamps is not None:
            return self._between_timestamps(*query.between_timestamps, query.mode)
        return self._to_auto_tag(query.to_auto_tag)

    # ---- resolving the range -------------------------------------------------------------
    def _between(self, start: str, end: str, mode: str, tag_to_snapshot: bool) -> list[ReadUnit]:
        if self.tags.exists(start) and self.tags.exists(end):
            before, after = self.tags.snapshot(start), self.tags.snapshot(end)
            if tag_to_snapshot and mode != "diff":
                return self._changes(before.id, after.id, mode)
            if after.id < before.id:
                raise InvalidOptionError(f"incremental query of {self.table_path}: end tag '{end}' (snapshot "
                                         f"{after.id}) is older than start tag '{start}' (snapshot {before.id})")
            return [] if after.id == before.id else self.diff(before, after)
        try:
            start_id, end_id = int(start), int(end)
        except ValueError:
            raise InvalidOptionError(
                f"incremental query of {self.table_path}: '{start}' and '{end}' are neither two tags "
                f"(tags: {self.tags.tag_names()}) nor two snapshot ids") from None
        if end_id < start_id:
            raise InvalidOptionError(f"incremental query of {self.table_path}: end snapshot {end_id} is before "
                                     f"start snapshot {start_id}")
        if self.snapshots.earliest_id() is None or start_id == end_id:
            return []
        if mode == "diff":  # snapshot 0: the empty table before the first commit
            before = None if start_id == 0 and self.snapshots.earliest_id() == 1 else self.snapshots.snapshot(start_id)
            return self.diff(before, self.snapshots.snapshot(end_id))
        return self._changes(start_id, end_id, mode)

    def _between_timestamps(self, start_ms: int, end_ms: int, mode: str) -> list[ReadUnit]:
        if end_ms < start_ms:
            raise InvalidOptionError(f"incremental query of {self.table_path}: end time {end_ms} is before "
                                     f"start time {start_ms}")
        earliest_id, latest = self.snapshots.earliest_id(), self.snapshots.latest()
        earliest = None if earliest_id is None else self.snapshots.snapshot(earliest_id)
        if earliest is None or latest is None or start_ms == end_ms or start_ms > latest.time_millis \
                or end_ms < earliest.time_millis:
            return []
        start_id = earlier_or_equal(self.snapshots, start_ms)
        end_id = earlier_or_equal(self.snapshots, end_ms)
        if mode == "diff":
            before = earliest if start_id is None else self.snapshots.snapshot(start_id)
            after = latest if end_id is None else self.snapshots.snapshot(end_id)
            return self.diff(before, after)
        if start_id is None or earliest.time_millis > start_ms:  # the earliest snapshot is in the range
            start_id = earliest.id - 1
        return self._changes(start_id, latest.id if end_id is None else end_id, mode)

    def _to_auto_tag(self, end_tag: str) -> list[ReadUnit]:
        """From the newest automatic tag of an earlier period to `end_tag` (diff); empty when
        either does not exist, as Java."""
        o = self.options
        period = TagPeriod(o.get("tag.creation-period"), o.get("tag.period-formatter"),
                           o.get("tag.creation-period-duration"))
        end_time = period.start_of(end_tag)
        if end_time is None:
            raise InvalidOptionError(f"incremental-to-auto-tag: '{end_tag}' is not an automatic tag name of "
                                     f"{self.table_path} (tag.creation-period and tag.period-formatter)")
        if not self.tags.exists(end_tag):
            return []
        earlier = [(t, n) for n in self.tags.tag_names() if (t := period.start_of(n)) is not None and t < end_time]
        if not earlier:
            return []
        return self.diff(self.tags.snapshot(max(earlier)[1]), self.tags.snapshot(end_tag))

    # ---- delta and changelog -------------------------------------------------------------
    def _changes(self, start_id: int, end_id: int, mode: str) -> list[ReadUnit]:
        """The files snapshots start_id+1..end_id added: their data files (delta) or changelog
        files (changelog), one unit per file, in snapshot order."""
        auto = mode == "auto"
        if auto:
            mode = "delta" if self.options.get("changelog-producer") == "none" else "changelog"
        earliest, latest = self.snapshots.earliest_id(), self.snapshots.latest_id()
        if latest is None or end_id <= start_id:
            return []
        if end_id > latest:
            raise SnapshotNotFoundError(f"incremental query of {self.table_path}: end snapshot {end_id} does not "
                                        f"exist (latest is {latest})")
        units: list[ReadUnit] = []
        for snapshot_id in range(start_id + 1, end_id + 1):
            snapshot = self._snapshot(snapshot_id, mode, earliest)
            if auto:  # as the snapshot was committed: a changelog only under a producer (or when it has one)
                mode = "delta" if self._producer(snapshot) == "none" and not snapshot.changelog_manifest_list \
                    else "changelog"
            if mode == "delta":
                if snapshot.commit_kind != APPEND:
                    continue
                entries, kind = self.scan.delta_entries(snapshot), DELTA
            else:
                if snapshot.commit_kind == OVERWRITE:
                    continue
                entries, kind = self.scan.changelog_entries(snapshot), CHANGELOG
            entries = [e for e in entries if e.kind == ADD and not self.scan.postponed_bucket(e)]
            units.extend(self._file_units(snapshot_id, entries, kind, len(units)))
        return units

    def _producer(self, snapshot: Snapshot) -> str:
        """The `changelog-producer` of the schema `snapshot` was committed under (writers commit
        only under the options they wrote with: commit.py's StaleOptionsError). Snapshots
        committed before the table's producer went from none to another have no changelog, and
        their changes are read from their delta files. (Java's auto mode takes the table's
        current producer for every snapshot, and misses them.)"""
        if snapshot.schema_id == self.schema.id:
            return self.options.get("changelog-producer")
        return CoreOptions(self.scan.schema_of(snapshot.schema_id).options).get("changelog-producer")

    def _snapshot(self, snapshot_id: int, mode: str, earliest: int | None) -> Snapshot:
        """A snapshot of the range; a changelog outlives its snapshot in Java's long-lived
        changelogs (changelog.num-retained.*), data files do not."""
        try:
            return self.snapshots.snapshot(snapshot_id)
        except SnapshotGapError:
            raise  # deleted between others, not expired: the error names the file
        except SnapshotNotFoundError:
            if mode == "changelog":
                changelog = long_lived_changelog(self.file_io, self.table_path, snapshot_id)
                if changelog is not None:
                    return changelog
            raise SnapshotExpiredError(
                f"incremental query of {self.table_path}: snapshot {snapshot_id} has expired (earliest is "
                f"{earliest}), so its changes can no longer be read; start at snapshot {(earliest or 1) - 1} or "
                "later, or retain more snapshots ('snapshot.num-retained.min', 'snapshot.time-retained')") from None

    def _file_units(self, snapshot_id: int, entries: list[ManifestEntry], kind: str, first: int) -> list[ReadUnit]:
        # by bucket, each bucket's files in the order committed (the order written): a changelog rolled
        # into files `-0` ... `-10` holds a key's changes across them in that order, not by name
        entries = sorted(entries, key=lambda e: (e.partition, e.bucket))
        return [ReadUnit(snapshot_id, first + i, kind, self.scan.split_of(e.partition, e.bucket, e.total_buckets,
                                                                           [e.file]))
                for i, e in enumerate(entries)]

    # ---- diff ------------------------------------------------------------------------------
    def diff(self, before: Snapshot | None, after: Snapshot) -> list[ReadUnit]:
        """One unit per partition and bucket whose live rows differ: the end state's split and
        the start state's (None: the empty table), without the files both hold with the same
        deletion vector (their rows are the same on both sides) where rows need no merge by key."""
        old = {(s.partition, s.bucket): s for s in self.scan.plan(before)}
        new = {(s.partition, s.bucket): s for s in self.scan.plan(after)}
        counts: dict[bytes, tuple[set[int], set[int]]] = {}
        for side, snapshot in enumerate((before, after)):  # every live file: a plan leaves out level 0 where
            for e in self.scan.live_entries(snapshot) if snapshot is not None else ():  # readers skip it
                counts.setdefault(e.partition, (set(), set()))[side].add(e.total_buckets)
        for was, now in counts.values():
            if was and now and was != now:  # a rescale: keys moved between buckets (whose ids may not meet)
                raise InvalidOptionError(
                    f"incremental diff of {self.table_path}: the bucket count of a partition changed between "
                    f"snapshots {before.id} ({sorted(was)}) and {after.id} ({sorted(now)}); a key may have moved "
                    "between buckets, so a diff per bucket would be wrong")
        units: list[ReadUnit] = []
        for key in sorted(old.keys() | new.keys()):
            b, a = old.get(key), new.get(key)
            b, a = self._without_shared(b, a)
            if b is None and a is None:
                continue
            template = a if a is not None else b
            units.append(ReadUnit(after.id, len(units), DIFF, a or template.with_files([], False),
                                  b or template.with_files([], False)))
        return units

    def _without_shared(self, before: DataSplit | None, after: DataSplit | None) \
            -> tuple[DataSplit | None, DataSplit | None]:
        if before is None or after is None:
            return before, after
        same = {f.file_name for f in before.files} & {f.file_name for f in after.files}
        same = {n for n in same if before.deletion_files.get(n) == after.deletion_files.get(n)}
        if same == {f.file_name for f in before.files} == {f.file_name for f in after.files}:
            return None, None
        if before.needs_merge or after.needs_merge or after.by_row_id:  # merged: the shared files take part
            return before, after
        b = [f for f in before.files if f.file_name not in same]
        a = [f for f in after.files if f.file_name not in same]
        return before.with_files(b, self.scan.needs_merge(b)), after.with_files(a, self.scan.needs_merge(a))
