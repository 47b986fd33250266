"""Snapshots: the JSON files that are a table's versions, and the LATEST/EARLIEST hints.

Hints may be stale or missing (FORMAT.md §1): LATEST=n is trusted only when
`snapshot-(n+1)` does not exist, EARLIEST only when its snapshot exists; otherwise the
snapshot directory is listed. Hints lag (committers write LATEST after publishing the
snapshot, and concurrent committers may write them out of order), so a hint *behind* the
newest snapshot is normal. A LATEST hint *beyond* every snapshot file is not: committers
never write it before the snapshot exists, so the newest snapshot file(s) were deleted.
Answering from the older snapshot would be a silent rollback (and the next commit would
reuse the id), so readers and writers raise `SnapshotMissingError` until the file is
restored or `check.repair_hints` (`paimon-streaming check --repair`) accepts the loss.
"""
from __future__ import annotations

import json
from dataclasses import dataclass, field
from typing import Any, Iterator

from .errors import CorruptFileError, SnapshotGapError, SnapshotMissingError, SnapshotNotFoundError
from .fileio import FileIO
from .json_check import CHECK_KEY, check_mismatch, json_check

APPEND, COMPACT, OVERWRITE, ANALYZE = "APPEND", "COMPACT", "OVERWRITE", "ANALYZE"
BATCH_COMMIT_IDENTIFIER = 9223372036854775807  # Long.MAX_VALUE, as Java batch writes

# JSON key <-> attribute, in Java's write order.
_KEYS = [
    ("version", "version"), ("id", "id"), ("schemaId", "schema_id"),
    ("baseManifestList", "base_manifest_list"), ("baseManifestListSize", "base_manifest_list_size"),
    ("deltaManifestList", "delta_manifest_list"), ("deltaManifestListSize", "delta_manifest_list_size"),
    ("changelogManifestList", "changelog_manifest_list"),
    ("changelogManifestListSize", "changelog_manifest_list_size"),
    ("indexManifest", "index_manifest"), ("commitUser", "commit_user"),
    ("commitIdentifier", "commit_identifier"), ("commitKind", "commit_kind"),
    ("timeMillis", "time_millis"), ("totalRecordCount", "total_record_count"),
    ("deltaRecordCount", "delta_record_count"), ("changelogRecordCount", "changelog_record_count"),
    ("watermark", "watermark"), ("statistics", "statistics"), ("properties", "properties"),
    ("nextRowId", "next_row_id"),
]
# What the check in `properties` covers (json_check.py): every field but the format version and
# the properties themselves, each null when absent (Java writes no nulls), as Java copies them
# into the tags and changelogs it makes of a snapshot.
_CHECKED = [(key, attr) for key, attr in _KEYS if key not in ("version", "properties")]


@dataclass(frozen=True)
class Snapshot:
    id: int
    schema_id: int
    base_manifest_list: str
    delta_manifest_list: str
    commit_user: str
    commit_identifier: int
    commit_kind: str
    time_millis: int
    total_record_count: int
    delta_record_count: int
    base_manifest_list_size: int | None = None
    delta_manifest_list_size: int | None = None
    changelog_manifest_list: str | None = None
    changelog_manifest_list_size: int | None = None
    index_manifest: str | None = None
    changelog_record_count: int | None = None
    watermark: int | None = None
    statistics: str | None = None
    properties: dict[str, str] | None = None
    next_row_id: int | None = None
    version: int = 3
    extra: dict[str, Any] = field(default_factory=dict, compare=False)
    stored_check: str | None = field(default=None, compare=False, repr=False)  # as read from the file

    def check(self) -> str:
        """The check of this snapshot's values, written into its `properties`."""
        return json_check([getattr(self, attr) for _, attr in _CHECKED])

    def to_dict(self) -> dict[str, Any]:
        out: dict[str, Any] = {}
        for key, attr in _KEYS:  # getattr, not dataclasses.asdict: that deep-copies every value
            v = getattr(self, attr)
            if attr == "properties":
                v = {**(v or {}), CHECK_KEY: self.check()}
            if v is not None:
                out[key] = v
        for key, v in self.extra.items():
            out.setdefault(key, v)
        return out

    def to_json(self) -> str:
        return json.dumps(self.to_dict(), indent=2)

    @staticmethod
    def from_json(text: str | bytes) -> "Snapshot":
        """Parse a snapshot (or tag) file; ValueError/KeyError/TypeError when it is not one."""
        if isinstance(text, bytes):
            text = text.decode("utf-8")  # strict: a damaged byte is a UnicodeDecodeError (a ValueError)
        obj = json.loads(text)
        if not isinstance(obj, dict):
            raise ValueError(f"a snapshot is a JSON object, not {type(obj).__name__}")
        known = {key for key, _ in _KEYS}
        kwargs = {attr: obj[key] for key, attr in _KEYS if key in obj}
        properties = dict(kwargs.get("properties") or {})  # TypeError when damaged into a non-object
        if CHECK_KEY in properties:
            kwargs["stored_check"] = properties.pop(CHECK_KEY)
            kwargs["properties"] = properties or None
        kwargs.setdefault("total_record_count", 0)
        kwargs.setdefault("delta_record_count", 0)
        kwargs["extra"] = {k: v for k, v in obj.items() if k not in known}
        return Snapshot(**kwargs)


_KNOWN_KEYS = {key for key, _ in _KEYS}
_KINDS = (APPEND, COMPACT, OVERWRITE, ANALYZE)
_STRINGS = ("base_manifest_list", "delta_manifest_list", "commit_user", "changelog_manifest_list",
            "index_manifest")
_INTEGERS = ("id", "schema_id", "commit_identifier", "time_millis", "total_record_count", "delta_record_count")


def snapshot_damage(snap: Snapshot, snapshot_id: int | None = None) -> str | None:
    """What makes a decoded snapshot (or tag) implausible, or None. JSON has no checksum: ours
    carry one (json_check.py) and must match it; for every writer's this catches what a
    damaged byte that still parses can do: another id, a commit kind or value type no writer
    writes, or a known key misspelt by one character (then read as absent)."""
    if snap.stored_check is not None:
        mismatch = check_mismatch(snap.stored_check, snap.check())
        if mismatch:
            return mismatch
    if snapshot_id is not None and snap.id != snapshot_id:
        return f"it holds snapshot id {snap.id!r}"
    if snap.commit_kind not in _KINDS:
        return f"commitKind {snap.commit_kind!r} is none of {', '.join(_KINDS)}"
    for attr in _STRINGS:
        value = getattr(snap, attr)
        if not isinstance(value, str) and (value is not None or attr in _STRINGS[:3]):
            return f"{attr} is {value!r}, not a string"
    for attr in _INTEGERS:
        if type(getattr(snap, attr)) is not int:
            return f"{attr} is {getattr(snap, attr)!r}, not an integer"
    for key in snap.extra:
        near = [k for k in _KNOWN_KEYS if len(k) == len(key) and sum(a != b for a, b in zip(k, key)) == 1]
        if near:
            return f"it has the unknown key {key!r}, one character away from {near[0]!r}"
    return None


def parse_snapshot_file(path: str, data: bytes, snapshot_id: int | None = None, kind: str = "snapshot") -> Snapshot:
    """Decode a snapshot (or tag: `kind`) file; undecodable or implausible (`snapshot_damage`)
    is a CorruptFileError naming the file."""
    try:
        snap = Snapshot.from_json(data)
    except (ValueError, KeyError, TypeError) as exc:  # UnicodeDecodeError is a ValueError
        raise CorruptFileError(f"{kind} file {path} cannot be parsed ({type(exc).__name__}: {exc}); "
                               "restore it from a backup; `paimon-streaming check` lists every damaged "
                               "file") from exc
    damage = snapshot_damage(snap, snapshot_id)
    if damage:
        raise CorruptFileError(f"{kind} file {path} is damaged: {damage}; restore it from a backup")
    return snap


_LISTINGS = 3  # listings of the snapshot directory while a gap in them keeps moving


class SnapshotManager:
    """Finds, reads and publishes the snapshot files of one table."""

    def __init__(self, file_io: FileIO, table_path: str):
        self.file_io = file_io
        self.table_path = table_path
        self.dir = f"{table_path}/snapshot"

    def path(self, snapshot_id: int) -> str:
        return f"{self.dir}/snapshot-{snapshot_id}"

    def exists(self, snapshot_id: int) -> bool:
        return self.file_io.exists(self.path(snapshot_id))

    def snapshot(self, snapshot_id: int) -> Snapshot:
        """Read one snapshot. Absent: SnapshotNotFoundError (expired or not written yet), or
        SnapshotGapError when older and newer snapshots exist (deleted by hand); undecodable:
        CorruptFileError. Both name the file."""
        found = self._read_if_present(snapshot_id)
        if found is not None:
            return found
        return parse_snapshot_file(self.path(snapshot_id), self._absent(snapshot_id), snapshot_id)

    def _absent(self, snapshot_id: int) -> bytes:
        path = self.path(snapshot_id)
        earliest, latest = self.earliest_id(), self.latest_id()
        if earliest is not None and latest is not None and earliest <= snapshot_id <= latest:
            try:  # published (or expired) while the bounds were looked up: not a gap
                return self.file_io.read_bytes(path)
            except FileNotFoundError:
                if (self.earliest_id() or snapshot_id + 1) <= snapshot_id:
                    raise SnapshotGapError(
                        f"snapshot file {path} does not exist, but older and newer snapshots do (snapshots "
                        f"{earliest}..{latest}): it was deleted, not expired. Restore it from a backup, or roll "
                        f"back to an older snapshot; `paimon-streaming check {self.table_path}` lists every "
                        "damaged file") from None
        raise SnapshotNotFoundError(
            f"snapshot {snapshot_id} of table {self.table_path} does not exist "
            f"(expired or never written; earliest is {earliest}, latest {latest})") from None

    def listed_ids(self) -> list[int]:
        """The ids of the snapshot files there are, ascending, from listings (no hint read); a
        gap between them is one that stayed while it was looked at (`_listed_ids`)."""
        return self._listed_ids()

    def _listed_ids(self) -> list[int]:
        """A listing of several pages (object stores list in text order: snapshot-1,
        snapshot-10, ..., snapshot-2) taken while an expiration deletes oldest first can show
        an id whose file went since and miss those deleted before their page came: a gap that
        was never there (and a rollback, deleting newest first, the same from above). A gap
        stands when the ids on both sides still exist and the first missing one still does
        not; else the directory is listed again, at most `_LISTINGS` times in all."""
        ids = self._list_once()
        for _ in range(_LISTINGS - 1):
            if self._gaps_stand(ids):
                break
            ids = self._list_once()
        return ids

    def _list_once(self) -> list[int]:
        return sorted(int(n[9:]) for n in self.file_io.list_names(self.dir)
                      if n.startswith("snapshot-") and n[9:].isdigit())

    def _gaps_stand(self, ids: list[int]) -> bool:
        """Whether every gap between `ids` is still there (no gap: trivially)."""
        gaps = [(prev, cur) for prev, cur in zip(ids, ids[1:]) if cur != prev + 1]
        probes = [(i, True) for gap in gaps for i in gap] + [(prev + 1, False) for prev, _ in gaps]
        return all(self.file_io.map(lambda probe: self.exists(probe[0]) == probe[1], probes))

    def hint_path(self, name: str) -> str:
        return f"{self.dir}/{name}"

    def read_hint(self, name: str) -> int | None:
        """The id a hint file (LATEST/EARLIEST) holds; None when absent, not a positive id, or
        unreadable: a hint only saves a listing, and a read that races its rewrite on an object
        store can fail (Azure: 416 when the blob changed size between the size check and the
        read), so callers then list the snapshot files."""
        try:
            text = self.file_io.read_bytes(self.hint_path(name)).decode("utf-8").strip()
        except (OSError, ValueError):
            return None
        return int(text) if text.isascii() and text.isdigit() and int(text) > 0 else None

    def latest_id(self) -> int | None:
        """The newest snapshot id (None: no snapshot yet). Raises SnapshotMissingError when the
        LATEST hint names a snapshot beyond every snapshot file (module docstring)."""
        hint = self.read_hint("LATEST")
        if hint is not None and not self.exists(hint + 1):
            if self.exists(hint):
                return hint
            ids = self._listed_ids()
            if not ids or ids[-1] < hint:
                newest = ids[-1] if ids else None
                raise SnapshotMissingError(
                    f"table {self.table_path}: the hint {self.hint_path('LATEST')} says snapshot {hint} was "
                    f"committed, but snapshot file {self.path(hint)} does not exist and the newest snapshot "
                    f"file is {self.path(newest) if ids else 'none'}: snapshot file(s) "
                    f"{(newest or 0) + 1}..{hint} were deleted. Reading or writing on would silently roll the "
                    f"table back to {f'snapshot {newest}' if ids else 'no snapshot at all'}. Restore the missing file(s) from a backup, or accept "
                    f"the loss with `paimon-streaming check --repair {self.table_path}` (rewrites the hint)")
            return ids[-1]
        ids = self._listed_ids()
        return ids[-1] if ids else None

    def earliest_id(self) -> int | None:
        hint = self.read_hint("EARLIEST")
        if hint is not None and self.exists(hint) and not self.exists(hint - 1):
            return hint
        ids = self._listed_ids()
        return ids[0] if ids else None

    def latest(self) -> Snapshot | None:
        """The newest snapshot. When the LATEST hint is current, the probe for a newer snapshot
        and the read of the hinted one run together (two round trips on an object store, not
        four); otherwise `latest_id` settles it."""
        hint = self.read_hint("LATEST")
        if hint is not None:
            newer, hinted = self.file_io.map(lambda probe: probe(), [lambda: self.exists(hint + 1),
                                                                      lambda: self._read_if_present(hint)])
            if not newer and hinted is not None:
                return hinted
        latest = self.latest_id()
        return None if latest is None else self.snapshot(latest)

    def _read_if_present(self, snapshot_id: int) -> Snapshot | None:
        path = self.path(snapshot_id)
        data = self.file_io.read_bytes_if_present(path)
        return None if data is None else parse_snapshot_file(path, data, snapshot_id)

    def snapshots(self) -> list[Snapshot]:
        """Every snapshot, oldest first. A hole in the ids raises SnapshotGapError and a LATEST
        hint beyond the files SnapshotMissingError: a listing never silently skips one."""
        ids = self._listed_ids()
        if ids:
            self.latest_id()
        for prev, cur in zip(ids, ids[1:]):
            if cur != prev + 1:
                raise SnapshotGapError(
                    f"snapshot file {self.path(prev + 1)} does not exist, but older and newer snapshots do "
                    f"(snapshots {prev + 1}..{cur - 1} are missing between {prev} and {cur}): deleted, not "
                    f"expired; `paimon-streaming check {self.table_path}` lists every damaged file")
        out = []
        for i in ids:
            try:
                out.append(self.snapshot(i))
            except SnapshotGapError:
                raise
            except SnapshotNotFoundError:
                continue  # expired while listing
        return out

    def iter_descending(self, from_id: int | None = None) -> Iterator[Snapshot]:
        """Snapshots from `from_id` (default latest) down to the earliest, stopping at a gap.

        The earliest id is not looked up first: scans usually stop near the newest snapshot,
        and the first id below the earliest has no file (SnapshotNotFoundError ends the scan)."""
        if from_id is None:
            latest = self.latest()
            if latest is None:
                return
            yield latest
            from_id = latest.id - 1
        current = from_id
        while current is not None and current >= 1:
            try:
                yield self.snapshot(current)
            except SnapshotNotFoundError:
                return
            current -= 1

    def try_publish(self, snapshot: Snapshot) -> bool:
        """Atomically create snapshot-<id>; False if another committer already took the id."""
        return self.file_io.try_create_atomic(self.path(snapshot.id), snapshot.to_json().encode())

    def commit_latest_hint(self, snapshot_id: int) -> None:
        try:
            self.file_io.overwrite_atomic(self.hint_path("LATEST"), str(snapshot_id).encode())
        except OSError:
            pass  # a stale hint is corrected by readers

    def commit_earliest_hint(self, snapshot_id: int) -> None:
        try:
            self.file_io.overwrite_atomic(self.hint_path("EARLIEST"), str(snapshot_id).encode())
        except OSError:
            pass

    def latest_of_user(self, commit_user: str) -> Snapshot | None:
        """Newest snapshot committed by `commit_user` (Java's latestSnapshotOfUser)."""
        for snap in self.iter_descending():
            if snap.commit_user == commit_user:
                return snap
        return None
