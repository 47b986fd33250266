"""Snapshots: the JSON files that are a table's versions, and the LATEST/EARLIEST hints.

Hints may be stale or missing (FORMAT.md §1): LATEST=n is trusted only when
`snapshot-(n+1)` does not exist, EARLIEST only when its snapshot exists; otherwise the
snapshot directory is listed.
"""
from __future__ import annotations

import json
from dataclasses import dataclass, field
from typing import Any, Iterator

from .errors import CorruptFileError, SnapshotNotFoundError
from .fileio import FileIO

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

    def to_dict(self) -> dict[str, Any]:
        out: dict[str, Any] = {}
        for key, attr in _KEYS:  # getattr, not dataclasses.asdict: that deep-copies every value
            v = getattr(self, attr)
            if v is not None and not (attr == "properties" and not v):
                out[key] = v
        for key, v in self.extra.items():
            out.setdefault(key, v)
        return out

    def to_json(self) -> str:
        return json.dumps(self.to_dict(), indent=2)

    @staticmethod
    def from_json(text: str) -> "Snapshot":
        obj = json.loads(text)
        known = {key for key, _ in _KEYS}
        kwargs = {attr: obj[key] for key, attr in _KEYS if key in obj}
        kwargs.setdefault("total_record_count", 0)
        kwargs.setdefault("delta_record_count", 0)
        kwargs["extra"] = {k: v for k, v in obj.items() if k not in known}
        return Snapshot(**kwargs)


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
        path = self.path(snapshot_id)
        try:
            text = self.file_io.read_text(path)
        except FileNotFoundError:
            raise SnapshotNotFoundError(
                f"snapshot {snapshot_id} of table {self.table_path} does not exist "
                f"(expired or never written; earliest is {self.earliest_id()}, latest {self.latest_id()})"
            ) from None
        try:
            return Snapshot.from_json(text)
        except (ValueError, KeyError, TypeError) as exc:
            raise CorruptFileError(f"snapshot file {path} cannot be parsed: {exc}") from exc

    def _listed_ids(self) -> list[int]:
        ids = []
        for name in self.file_io.list_names(self.dir):
            if name.startswith("snapshot-") and name[9:].isdigit():
                ids.append(int(name[9:]))
        return sorted(ids)

    def _read_hint(self, name: str) -> int | None:
        try:
            return int(self.file_io.read_text(f"{self.dir}/{name}").strip())
        except (FileNotFoundError, ValueError):
            return None

    def latest_id(self) -> int | None:
        hint = self._read_hint("LATEST")
        if hint is not None and self.exists(hint) and not self.exists(hint + 1):
            return hint
        ids = self._listed_ids()
        return ids[-1] if ids else None

    def earliest_id(self) -> int | None:
        hint = self._read_hint("EARLIEST")
        if hint is not None and self.exists(hint) and not self.exists(hint - 1):
            return hint
        ids = self._listed_ids()
        return ids[0] if ids else None

    def latest(self) -> Snapshot | None:
        latest = self.latest_id()
        return None if latest is None else self.snapshot(latest)

    def snapshots(self) -> list[Snapshot]:
        return [self.snapshot(i) for i in self._listed_ids()]

    def iter_descending(self, from_id: int | None = None) -> Iterator[Snapshot]:
        """Snapshots from `from_id` (default latest) down to the earliest, stopping at a gap."""
        current = self.latest_id() if from_id is None else from_id
        earliest = self.earliest_id()
        while current is not None and earliest is not None and current >= earliest:
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
            self.file_io.overwrite_atomic(f"{self.dir}/LATEST", str(snapshot_id).encode())
        except OSError:
            pass  # a stale hint is corrected by readers

    def commit_earliest_hint(self, snapshot_id: int) -> None:
        try:
            self.file_io.overwrite_atomic(f"{self.dir}/EARLIEST", str(snapshot_id).encode())
        except OSError:
            pass

    def latest_of_user(self, commit_user: str) -> Snapshot | None:
        """Newest snapshot committed by `commit_user` (Java's latestSnapshotOfUser)."""
        for snap in self.iter_descending():
            if snap.commit_user == commit_user:
                return snap
        return None
