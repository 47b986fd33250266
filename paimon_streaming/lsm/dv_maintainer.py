"""The deletion vectors of one bucket while a compaction changes them.

A bucket keeps one DV index file holding a record per data file. Compaction touches few of
those vectors (the files lookup hit and the files it rewrites), so vectors are decoded only
when asked for, and when the index file is rewritten the records of untouched vectors are
copied over as bytes instead of being encoded again. A bucket whose vectors did not change
keeps its index file. Every vector it loads, or copies, is checked as reads check it (CRC,
cardinality, positions within its file's rows): merged or copied into a new index file, a
damaged vector would stay damaged after the restore of its file.
"""
from __future__ import annotations

import numpy as np
from pyroaring import BitMap, BitMap64

from ..deletionvectors import (bitmap_from_positions, decode_in_range, encode_index_file, positions_of,
                               read_index_file, record_bytes, write_index_file)
from ..fileio import FileIO
from ..manifest import DeletionVectorMeta, IndexFileMeta
from ..manifest.entries import DELETION_VECTORS_INDEX
from ..paths import PathFactory


class DeletionVectorMaintainer:
    def __init__(self, file_io: FileIO, index_dir: str, index: IndexFileMeta | None, live: dict[str, int],
                 bitmap64: bool):
        """`live`: the bucket's live data files, by name, with their row counts."""
        self.file_io = file_io
        self.index_dir = index_dir
        self.index = index
        self.bitmap64 = bitmap64
        self._path = None if index is None else index.external_path or f"{index_dir}/{index.file_name}"
        self._data: bytes | None = None
        # live files with a stored vector; any file not live any more is dropped on rewrite
        self._stored: dict[str, DeletionVectorMeta] = {
            r.data_file_name: r for r in (index.dv_ranges or () if index else ()) if r.data_file_name in live}
        self._changed = len(self._stored) != len(index.dv_ranges or ()) if index else False
        self._rows = live
        self._decoded: dict[str, BitMap | BitMap64] = {}

    def _bytes(self) -> bytes:
        if self._data is None:
            self._data = read_index_file(self.file_io, self._path, self.index.file_size)
        return self._data

    def __contains__(self, name: str) -> bool:
        return name in self._decoded or name in self._stored

    def get(self, name: str) -> BitMap | BitMap64 | None:
        if name not in self._decoded and name in self._stored:
            self._decoded[name] = decode_in_range(self._bytes(), self._stored[name], self._path, self._rows[name])
        return self._decoded.get(name)

    def deleted_count(self, name: str) -> int:
        if name in self._decoded:
            return len(self._decoded[name])
        meta = self._stored.get(name)
        if meta is None:
            return 0
        return meta.cardinality if meta.cardinality is not None else len(self.get(name))

    def deleted_positions(self, name: str) -> np.ndarray | None:
        vector = self.get(name)
        return None if vector is None else positions_of(vector)

    def live_positions(self, name: str, positions: np.ndarray) -> np.ndarray:
        """`positions` of file `name` minus those its vector already deletes."""
        vector = self.get(name)
        if vector is None or not len(positions):
            return positions
        return positions_of(bitmap_from_positions(positions, isinstance(vector, BitMap64)) - vector)

    def mark(self, name: str, positions: np.ndarray) -> None:
        if not len(positions):
            return
        added = bitmap_from_positions(positions, self.bitmap64)
        old = self.get(name)
        self._decoded[name] = added if old is None else old | added
        self._changed = True

    def drop(self, names: set[str]) -> None:
        """Forget the vectors of files compaction removed."""
        for name in names:
            had_vector = self._decoded.pop(name, None) is not None
            if self._stored.pop(name, None) is not None or had_vector:
                self._changed = True

    def write(self, paths: PathFactory) -> tuple[list[IndexFileMeta], list[IndexFileMeta]]:
        """(index files added, index files removed) for the commit; nothing if unchanged."""
        if not self._changed:
            return [], []
        removed = [self.index] if self.index is not None else []
        decoded = {n: v for n, v in self._decoded.items() if len(v)}
        copied = {n: record_bytes(self._bytes(), m, self._path, self._rows[n]) for n, m in self._stored.items()
                  if n not in self._decoded}
        if not decoded and not copied:
            return [], removed
        data, metas = encode_index_file(decoded, copied)
        name = paths.new_index_file()
        path, external_path = paths.place(self.index_dir, name)
        write_index_file(self.file_io, path, data)
        return [IndexFileMeta(DELETION_VECTORS_INDEX, name, len(data), len(metas), tuple(metas),
                              external_path=external_path)], removed
