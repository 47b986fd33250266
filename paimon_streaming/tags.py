"""Tags: named snapshots kept in `tag/tag-<name>` (FORMAT.md §11).

A tag file is the tagged snapshot's JSON, so Java and pypaimon read ours and we read
theirs. Only a tag created with a retention carries `tagCreateTime` (Jackson's
LocalDateTime array) and `tagTimeRetained` (decimal seconds), as Java writes them, because
Paimon 0.7 readers reject those keys otherwise. This module only reads and writes tag
files; deleting a tag's data files lives in `file_cleanup`.
"""
from __future__ import annotations

import datetime as dt
import json
import re

from .errors import (InvalidTagNameError, SnapshotExpiredError, SnapshotNotFoundError, TagAlreadyExistsError,
                     TagNotFoundError)
from .fileio import MAX_ATOMIC_NAME_BYTES, FileIO
from .snapshot import Snapshot, SnapshotManager, parse_snapshot_file

TAG_PREFIX = "tag-"
_BAD_CHARS = re.compile(r"[/\\\x00-\x1f\x7f]")


def validate_tag_name(name: str, allow_numeric: bool = False) -> str:
    """Reject names that cannot be a tag: blank, all digits (a snapshot id in time travel
    and rollback), or holding a path separator or control character (the name is a file
    name). Automatic tags of the `without_dashes` formatter are numeric by design, so their
    creation passes `allow_numeric`."""
    if not isinstance(name, str) or not name.strip():
        raise InvalidTagNameError(f"invalid tag name {name!r}: a tag name must not be blank")
    if not allow_numeric and name.strip().isdigit():
        raise InvalidTagNameError(
            f"invalid tag name {name!r}: a purely numeric name would be read as a snapshot id; "
            "add a letter, e.g. 'v" + name.strip() + "'")
    bad = _BAD_CHARS.search(name)
    if bad:
        raise InvalidTagNameError(
            f"invalid tag name {name!r}: it holds {bad.group()!r}; tag names are file names and must not "
            "contain '/', '\\' or control characters")
    if name.startswith("."):
        raise InvalidTagNameError(f"invalid tag name {name!r}: a tag name must not start with '.'")
    if len(f"{TAG_PREFIX}{name}".encode()) > MAX_ATOMIC_NAME_BYTES:
        raise InvalidTagNameError(f"invalid tag name {name[:40]!r}...: its file name '{TAG_PREFIX}<name>' would "
                                  f"exceed {MAX_ATOMIC_NAME_BYTES} bytes, the longest a tag file can have (file "
                                  "systems take names of up to 255 bytes, its temporary file's included)")
    return name


def tag_create_time_json(when: dt.datetime) -> list[int]:
    """Jackson's LocalDateTime array: y, m, d, h, min[, s[, nanos]], trailing zeros dropped."""
    out = [when.year, when.month, when.day, when.hour, when.minute]
    if when.second or when.microsecond:
        out.append(when.second)
        if when.microsecond:
            out.append(when.microsecond * 1000)
    return out


def tag_create_time_from_json(value) -> dt.datetime | None:
    """Parse `tagCreateTime` as Java writes it (array) or accepts it (ISO string)."""
    if value is None:
        return None
    if isinstance(value, str):
        return dt.datetime.fromisoformat(value)
    parts = list(value) + [0] * (7 - len(value))
    return dt.datetime(parts[0], parts[1], parts[2], parts[3], parts[4], parts[5], parts[6] // 1000)


def snapshot_fields(snapshot: Snapshot) -> dict:
    """A tag's snapshot as a snapshot file holds it: without the tag's own fields."""
    return {k: v for k, v in snapshot.to_dict().items() if k not in ("tagCreateTime", "tagTimeRetained")}


def snapshot_json(snapshot: Snapshot) -> bytes:
    return json.dumps(snapshot_fields(snapshot), indent=2).encode()


class TagManager:
    """Lists, reads, writes and removes the tag files of one table."""

    def __init__(self, file_io: FileIO, table_path: str):
        self.file_io = file_io
        self.table_path = table_path
        self.dir = f"{table_path}/tag"

    def path(self, name: str) -> str:
        return f"{self.dir}/{TAG_PREFIX}{name}"

    def tag_names(self) -> list[str]:
        return sorted(n[len(TAG_PREFIX):] for n in self.file_io.list_names(self.dir) if n.startswith(TAG_PREFIX))

    def exists(self, name: str) -> bool:
        return self.file_io.exists(self.path(name))

    def snapshot(self, name: str) -> Snapshot:
        """The tagged snapshot; TagNotFoundError when absent, CorruptFileError when damaged."""
        path = self.path(name)
        try:
            data = self.file_io.read_bytes(path)
        except FileNotFoundError:
            raise TagNotFoundError(
                f"tag '{name}' of table {self.table_path} does not exist (tags: {self.tag_names()})") from None
        return parse_snapshot_file(path, data, kind="tag")

    def tagged_snapshots(self) -> list[tuple[Snapshot, list[str]]]:
        """Every tagged snapshot (tag fields dropped) with its tag names, by snapshot id.

        A tag removed while listing (another process) is skipped, as Java does."""
        by_id: dict[int, tuple[Snapshot, list[str]]] = {}
        for name in self.tag_names():
            try:
                snap = self.snapshot(name)
            except TagNotFoundError:
                continue
            by_id.setdefault(snap.id, (snap, []))[1].append(name)
        return [by_id[i] for i in sorted(by_id)]

    def holding(self, snapshot_id: int) -> Snapshot | None:
        """The snapshot `snapshot_id` as a tag keeps it (tag fields dropped), None when no tag
        does: what an expired snapshot id still names, as Java's findSnapshot falls back to."""
        return next((snap for snap, _ in self.tagged_snapshots() if snap.id == snapshot_id), None)

    def create(self, snapshot: Snapshot, name: str, time_retained_ms: int | None = None,
               allow_numeric: bool = False, now: dt.datetime | None = None) -> None:
        """Write `tag-<name>` for `snapshot`; TagAlreadyExistsError if the name is taken."""
        validate_tag_name(name, allow_numeric)
        if self.exists(name):
            raise TagAlreadyExistsError(
                f"tag '{name}' of table {self.table_path} already exists (snapshot {self.snapshot(name).id}); "
                "delete it first or pick another name")
        body = snapshot_fields(snapshot)
        if time_retained_ms is not None:
            body["tagCreateTime"] = tag_create_time_json(now or dt.datetime.now())
            body["tagTimeRetained"] = time_retained_ms / 1000
        self.file_io.overwrite_atomic(self.path(name), json.dumps(body, indent=2).encode())
        self._withdraw_if_gone(snapshot, name)

    def _withdraw_if_gone(self, snapshot: Snapshot, name: str) -> None:
        """Remove the tag `name` just written for `snapshot` when neither the snapshot nor
        another tag holds it any more (SnapshotExpiredError): an expiration, rollback or tag
        deletion that chose its files before the tag existed may delete them. One that removes
        the snapshot or the other tag after this check reads the tags again before it deletes
        files, and keeps the tag's (expire.py, tag_deletion.py)."""
        snapshots = SnapshotManager(self.file_io, self.table_path)
        try:
            still = snapshots.snapshot(snapshot.id) == snapshot
        except SnapshotNotFoundError:
            still = any(snap.id == snapshot.id and set(names) - {name} for snap, names in self.tagged_snapshots())
        if still:
            return
        self.delete_file(name)
        raise SnapshotExpiredError(
            f"cannot tag snapshot {snapshot.id} of table {self.table_path} as '{name}': the snapshot expired (or "
            "was rolled back) while the tag was written, and its files may be gone; nothing was tagged. Tag a "
            f"snapshot that is retained (earliest now {snapshots.earliest_id()})")

    def delete_file(self, name: str) -> None:
        self.file_io.delete(self.path(name))
