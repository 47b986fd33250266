"""Tags: named snapshots kept in `tag/tag-<name>` (the snapshot JSON, plus optional retention)."""
from __future__ import annotations

from .errors import SnapshotNotFoundError
from .fileio import FileIO
from .snapshot import Snapshot

TAG_PREFIX = "tag-"


class TagManager:
    def __init__(self, file_io: FileIO, table_path: str):
        self.file_io = file_io
        self.table_path = table_path
        self.dir = f"{table_path}/tag"

    def path(self, name: str) -> str:
        return f"{self.dir}/{TAG_PREFIX}{name}"

    def tag_names(self) -> list[str]:
        return sorted(n[len(TAG_PREFIX):] for n in self.file_io.list_names(self.dir) if n.startswith(TAG_PREFIX))

    def snapshot(self, name: str) -> Snapshot:
        try:
            return Snapshot.from_json(self.file_io.read_text(self.path(name)))
        except FileNotFoundError:
            raise SnapshotNotFoundError(
                f"tag '{name}' of table {self.table_path} does not exist (tags: {self.tag_names()})") from None
