"""Dynamic bucket mode (`bucket` = -1 on a primary-key table), FORMAT.md §7.2.

Each (partition, bucket) has a HASH index file: the big-endian int32 hashes of the keys in
that bucket. A known key hash keeps its bucket; new hashes fill buckets below
`dynamic-bucket.target-row-num` in bucket order, then open the smallest unused bucket ids, up
to `dynamic-bucket.max-buckets` per partition (-1: no limit).
When a bucket gains keys a new full HASH file replaces the old one in the index manifest.
Like Paimon's single assigner, this assumes one writer per partition at a time.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Callable

import numpy as np

from .errors import CorruptFileError, MissingFileError
from .fileio import FileIO
from .manifest import IndexFileMeta, IndexManifestEntry
from .manifest.entries import HASH_INDEX
from .paths import PathFactory


@dataclass
class HashIndexChange:
    """The new full HASH file of one bucket and the file it replaces (None for a new bucket)."""
    partition: bytes
    bucket: int
    new: IndexFileMeta
    old: IndexFileMeta | None


def read_hash_file(file_io: FileIO, path: str, meta: IndexFileMeta) -> np.ndarray:
    """The key hashes of a bucket's HASH index file, checked against its index manifest entry
    (the file has no checksum: a cut or replaced one would send keys to a second bucket)."""
    try:
        data = file_io.read_bytes(path)
    except FileNotFoundError:
        raise MissingFileError(f"HASH index file {path} is referenced by the table but does not exist; "
                               "`paimon-streaming check` lists every missing file") from None
    if len(data) != meta.file_size or len(data) != 4 * meta.row_count:
        raise CorruptFileError(f"HASH index file {path} has {len(data)} bytes but its index manifest entry records "
                               f"{meta.file_size} bytes of {meta.row_count} key hashes (truncated or replaced); "
                               "`paimon-streaming check` lists every damaged file")
    return np.frombuffer(data, dtype=">i4").astype(np.int32)


class DynamicBucketAssigner:
    """Assigns buckets to key hashes of one batch and writes the changed HASH files."""

    def __init__(self, file_io: FileIO, paths: PathFactory, target_row_num: int, max_buckets: int = -1):
        self.file_io = file_io
        self.paths = paths
        self.target = target_row_num
        self.max_buckets = max_buckets if max_buckets > 0 else 32767
        self.changes: list[HashIndexChange] = []

    def assign(self, partition: bytes, hashes: np.ndarray, existing: list[IndexManifestEntry],
               index_dir: Callable[[int], str]) -> np.ndarray:
        """Buckets for `hashes` (int32 key hashes of one partition's rows); `index_dir` says
        where a bucket's index files live (TableDirs)."""
        files = {e.bucket: e.index_file for e in existing
                 if e.partition == partition and e.index_file.index_type == HASH_INDEX}
        known_hashes, known_buckets = self._load(files, index_dir)
        order = np.argsort(known_hashes, kind="stable")
        known_hashes, known_buckets = known_hashes[order], known_buckets[order]
        pos = np.searchsorted(known_hashes, hashes)
        pos_clipped = np.minimum(pos, max(len(known_hashes) - 1, 0))
        found = (len(known_hashes) > 0) & (known_hashes[pos_clipped] == hashes) if len(known_hashes) else \
            np.zeros(len(hashes), bool)
        buckets = np.where(found, known_buckets[pos_clipped] if len(known_hashes) else 0, -1).astype(np.int64)

        new_hashes, first = np.unique(hashes[~found], return_index=True)
        new_hashes = new_hashes[np.argsort(first)]  # in order of first appearance
        if len(new_hashes) == 0:
            return buckets
        new_buckets = self._fill(new_hashes.size, known_buckets)
        lookup = np.argsort(new_hashes)
        idx = lookup[np.searchsorted(new_hashes[lookup], hashes[~found])]
        buckets[~found] = new_buckets[idx]
        for b in np.unique(new_buckets):
            all_hashes = np.concatenate([known_hashes[known_buckets == b], new_hashes[new_buckets == b]])
            self.changes.append(HashIndexChange(partition, int(b), self._write(all_hashes, index_dir(int(b))),
                                                files.get(int(b))))
        return buckets

    def _load(self, files: dict[int, IndexFileMeta], index_dir: Callable[[int], str]) -> tuple[np.ndarray, np.ndarray]:
        hashes, buckets = [np.empty(0, np.int32)], [np.empty(0, np.int64)]
        for bucket, meta in files.items():
            h = read_hash_file(self.file_io, meta.external_path or f"{index_dir(bucket)}/{meta.file_name}", meta)
            hashes.append(h)
            buckets.append(np.full(h.size, bucket, np.int64))
        return np.concatenate(hashes), np.concatenate(buckets)

    def _fill(self, count: int, known_buckets: np.ndarray) -> np.ndarray:
        """Bucket ids for `count` new keys: top up non-full buckets, then open new ones; past
        `dynamic-bucket.max-buckets` the rest go round the partition's buckets (Java picks one
        at random per key; the HASH files record either choice)."""
        used, sizes = np.unique(known_buckets, return_counts=True)
        room = [(int(b), self.target - int(s)) for b, s in zip(used, sizes) if s < self.target]
        ids, caps = [b for b, _ in room], [c for _, c in room]
        candidates = (b for b in range(self.max_buckets) if b not in set(used.tolist()))
        while sum(caps) < count:
            nxt = next(candidates, None)
            if nxt is None:  # every bucket id is taken
                pool = np.asarray(sorted(set(used.tolist()) | set(ids)), np.int64)
                spread = pool[np.arange(count - sum(caps)) % len(pool)]
                return np.concatenate([np.repeat(np.asarray(ids, np.int64), caps), spread])
            ids.append(nxt)
            caps.append(self.target)
        return np.repeat(np.asarray(ids, np.int64), caps)[:count]

    def _write(self, hashes: np.ndarray, directory: str) -> IndexFileMeta:
        name = self.paths.new_index_file()
        data = hashes.astype(">i4").tobytes()
        path, external_path = self.paths.place(directory, name)
        self.file_io.write_bytes(path, data)
        return IndexFileMeta(HASH_INDEX, name, len(data), int(hashes.size), external_path=external_path)
