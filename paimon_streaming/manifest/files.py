"""Reading and writing the three Avro metadata files: manifests, manifest lists, index manifests.

Damage is never read as metadata: files written here carry a zstd content checksum and a
header check (`avro_container`); files of a known size (manifests, manifest lists of newer
snapshots) are checked against it; a file that is missing, truncated, garbled or holds
records of the wrong shape raises `MissingFileError` / `CorruptFileError` naming it.
"""
from __future__ import annotations

import contextlib
import gc
import io
import threading
from typing import Callable, Generic, Iterable, Iterator, Sequence, TypeVar

import fastavro

from ..binary_row import deserialize_row, serialize_row
from ..errors import CorruptFileError, MissingFileError
from ..file_cache import ImmutableFileCache
from ..fileio import FileIO
from ..paths import PathFactory
from ..predicate import compare_values
from ..types import DataField
from . import avro_container
from .avro_schemas import INDEX_MANIFEST_ENTRY, MANIFEST_ENTRY, MANIFEST_FILE_META
from .index_avro import encode_index_manifest
from .entries import (ADD, DELETE, DELETION_VECTORS_INDEX, EMPTY_STATS, HASH_INDEX, IndexManifestEntry,
                      ManifestEntry, ManifestFileMeta, SimpleStats)

_CODECS = {"zstd": "zstandard", "null": "null", "none": "null", "deflate": "deflate", "snappy": "snappy"}
T = TypeVar("T")


_CACHE: ImmutableFileCache[list] = ImmutableFileCache(512)  # decoded records by path


def _encode_avro(schema, records: Sequence[dict], codec: str, file_name: str) -> bytes:
    return avro_container.encode(schema, list(records), _CODECS.get(codec, codec), file_name)


def _file_name(path: str) -> str:
    return path.rsplit("/", 1)[-1]


def _write_avro(file_io: FileIO, path: str, schema, records: Sequence[dict], codec: str) -> int:
    data = _encode_avro(schema, records, codec, _file_name(path))
    file_io.write_bytes(path, data)
    return len(data)


def read_avro(file_io: FileIO, path: str, size: int | None = None) -> list[dict]:
    """Decode one Avro metadata file (uncached): MissingFileError when absent, CorruptFileError
    when it is not `size` bytes long (when known) or does not decode."""
    try:
        data = file_io.read_bytes(path)
    except FileNotFoundError:
        raise MissingFileError(f"metadata file {path} is referenced but does not exist (deleted by hand, or "
                               "expired while this read ran); `paimon-streaming check` lists every such file"
                               ) from None
    if data[:4] != b"Obj\x01":  # fastavro does not check the magic
        raise CorruptFileError(f"metadata file {path} is not an Avro file: it starts with {data[:4]!r}")
    if size is not None and len(data) != size:
        raise CorruptFileError(f"metadata file {path} has {len(data)} bytes but its reference records {size} "
                               "(truncated or replaced); `paimon-streaming check` lists every damaged file")
    try:
        reader = fastavro.reader(io.BytesIO(data))
        records = list(reader)
        avro_container.verify(reader.metadata, len(records), _file_name(path))
        return records
    except Exception as exc:  # fastavro raises many types for truncated/garbled input
        raise CorruptFileError(f"cannot decode Avro metadata file {path}: {type(exc).__name__}: {exc}") from exc


def read_records(file_io: FileIO, path: str, convert: Callable[[dict], T], size: int | None = None) -> list[T]:
    """`read_avro`, each record converted by `convert`; a record of the wrong shape (a damaged
    header's schema) is a CorruptFileError too."""
    with paused_gc():
        records = read_avro(file_io, path, size)
        try:
            return [convert(r) for r in records]
        except (KeyError, TypeError, ValueError, AttributeError) as exc:
            raise CorruptFileError(f"Avro metadata file {path} holds records of an unexpected shape "
                                   f"({type(exc).__name__}: {exc})") from exc


_GC_LOCK = threading.Lock()
_gc_holders = 0
_gc_was_enabled = False


@contextlib.contextmanager
def paused_gc() -> Iterator[None]:
    """Cyclic garbage collection paused while a metadata file decodes: decoding builds tens of
    thousands of small objects without cycles, all kept, and every collection their allocation
    triggers walks them all again (a third of a cold plan of 50,000 files: bench/HISTORY.md).
    Concurrent and nested holders share one pause; the collector's state from before the first
    is restored after the last."""
    global _gc_holders, _gc_was_enabled
    with _GC_LOCK:
        if _gc_holders == 0:
            _gc_was_enabled = gc.isenabled()
            gc.disable()
        _gc_holders += 1
    try:
        yield
    finally:
        with _GC_LOCK:
            _gc_holders -= 1
            if _gc_holders == 0 and _gc_was_enabled:
                gc.enable()


def partition_stats(partitions: Iterable[bytes], fields: list[DataField]) -> SimpleStats:
    """Min/max/null count of each partition column over the given partition rows, in Java's
    order (`compare_values`: a NaN partition is the maximum, whatever order the rows come in)."""
    if not fields:
        return EMPTY_STATS  # unpartitioned: every manifest has the same empty stats
    types = [f.type.copy(nullable=True) for f in fields]
    mins: list = [None] * len(fields)
    maxs: list = [None] * len(fields)
    nulls = [0] * len(fields)
    for part in set(partitions):
        for i, v in enumerate(deserialize_row(part, types)):
            if v is None:
                nulls[i] += 1
                continue
            mins[i] = v if mins[i] is None or compare_values(v, mins[i]) < 0 else mins[i]
            maxs[i] = v if maxs[i] is None or compare_values(v, maxs[i]) > 0 else maxs[i]
    return SimpleStats(serialize_row(mins, types), serialize_row(maxs, types), tuple(nulls))


class _MetadataFiles(Generic[T]):
    """One kind of Avro metadata file in the table's manifest directory. Such a file never
    changes once written, so its decoded records are cached by path (`_CACHE`)."""

    def __init__(self, file_io: FileIO, path_factory: PathFactory, compression: str = "zstd"):
        self.file_io = file_io
        self.paths = path_factory
        self.compression = compression

    @staticmethod
    def decode(record: dict) -> T:
        raise NotImplementedError

    def path(self, name: str) -> str:
        return f"{self.paths.manifest_dir}/{name}"

    def read(self, name: str, size: int | None = None) -> list[T]:
        """The records of one file, checked against its recorded `size` when given."""
        path = self.path(name)
        cached = _CACHE.get(path)
        if cached is None:
            cached = read_records(self.file_io, path, self.decode, size)
            _CACHE.put(path, cached)
        return cached


class ManifestFile(_MetadataFiles[ManifestEntry]):
    """Manifest files (ManifestEntry records) of one table, rolled at the target size."""
    decode = staticmethod(ManifestEntry.from_avro)

    def __init__(self, file_io: FileIO, path_factory: PathFactory, partition_fields: list[DataField],
                 compression: str = "zstd", target_size: int = 8 << 20):
        super().__init__(file_io, path_factory, compression)
        self.partition_fields = partition_fields
        self.target_size = target_size

    def read_meta(self, meta: ManifestFileMeta) -> list[ManifestEntry]:
        """Entries of the manifest `meta` describes, checked against its recorded size."""
        return self.read(meta.file_name, meta.file_size)

    def write(self, entries: Sequence[ManifestEntry]) -> list[ManifestFileMeta]:
        """Write entries into one or more manifest files of about `target_size` bytes each."""
        if not entries:
            return []
        records = [e.to_avro() for e in entries]
        first = self.paths.new_manifest()
        whole = _encode_avro(MANIFEST_ENTRY, records, self.compression, first)
        chunks = max(1, -(-len(whole) // self.target_size))
        per_chunk = -(-len(entries) // chunks)
        metas = []
        for start in range(0, len(entries), per_chunk):
            part = entries[start:start + per_chunk]
            # the common case fits one file: the size probe is then the file itself
            name = first if chunks == 1 else self.paths.new_manifest()
            data = whole if chunks == 1 else _encode_avro(MANIFEST_ENTRY, records[start:start + per_chunk],
                                                          self.compression, name)
            self.file_io.write_bytes(self.path(name), data)
            _CACHE.put(self.path(name), list(part))
            metas.append(self._meta(name, len(data), part))
        return metas

    def _meta(self, name: str, size: int, entries: Sequence[ManifestEntry]) -> ManifestFileMeta:
        buckets = [e.bucket for e in entries]
        levels = [e.file.level for e in entries]
        row_ids = [e.file.first_row_id for e in entries]
        has_row_ids = all(r is not None for r in row_ids)
        return ManifestFileMeta(
            name, size, sum(1 for e in entries if e.kind == ADD), sum(1 for e in entries if e.kind == DELETE),
            partition_stats((e.partition for e in entries), self.partition_fields),
            max(e.file.schema_id for e in entries),
            min(buckets), max(buckets), min(levels), max(levels),
            min(row_ids) if has_row_ids else None,
            max(r + e.file.row_count - 1 for r, e in zip(row_ids, entries)) if has_row_ids else None)


class ManifestList(_MetadataFiles[ManifestFileMeta]):
    """Manifest list files: one Avro file of ManifestFileMeta records (never rolled); `read`'s
    `size` is the snapshot's *ManifestListSize."""
    decode = staticmethod(ManifestFileMeta.from_avro)

    def write(self, metas: Sequence[ManifestFileMeta]) -> tuple[str, int]:
        name = self.paths.new_manifest_list()
        size = _write_avro(self.file_io, self.path(name), MANIFEST_FILE_META, [m.to_avro() for m in metas],
                           self.compression)
        _CACHE.put(self.path(name), list(metas))
        return name, size


class IndexManifestFile(_MetadataFiles[IndexManifestEntry]):
    """The index manifest: a full list of the live index files (HASH, DELETION_VECTORS)."""
    decode = staticmethod(IndexManifestEntry.from_avro)

    def read(self, name: str | None, size: int | None = None) -> list[IndexManifestEntry]:
        return [] if name is None else super().read(name, size)

    def write(self, entries: Sequence[IndexManifestEntry]) -> str:
        name = self.paths.new_index_manifest()
        data = encode_index_manifest(entries, _CODECS.get(self.compression, self.compression), name)
        if data is None:
            data = _encode_avro(INDEX_MANIFEST_ENTRY, [e.to_avro() for e in entries], self.compression, name)
        self.file_io.write_bytes(self.path(name), data)
        _CACHE.put(self.path(name), list(entries))
        return name


def combine_index_entries(previous: Sequence[IndexManifestEntry], changes: Sequence[IndexManifestEntry],
                          bucket_unaware: bool) -> list[IndexManifestEntry]:
    """Apply index changes to the previous full list (FORMAT §4.3), as Java's
    IndexManifestFileHandler combines them.

    HASH files, and DV files of bucketed tables, are keyed by (partition, bucket, type): an ADD
    replaces, a DELETE removes. DV files of a bucket-unaware append table (`bucket_unaware`:
    several per partition, each DELETE adds its own) and every other index type are keyed by
    file name.
    """
    state: dict[tuple, IndexManifestEntry] = {index_key(e, bucket_unaware): e for e in previous}
    for e in changes:
        key = index_key(e, bucket_unaware)
        if e.kind == ADD:
            state[key] = e
        elif key in state and state[key].index_file.file_name == e.index_file.file_name:
            del state[key]
    return list(state.values())


def index_key(e: IndexManifestEntry, bucket_unaware: bool) -> tuple:
    """What identifies an index manifest entry (see `combine_index_entries`)."""
    kind = e.index_file.index_type
    if kind not in (DELETION_VECTORS_INDEX, HASH_INDEX) or (kind == DELETION_VECTORS_INDEX and bucket_unaware):
        return ("file", e.index_file.file_name)
    return e.bucket_key
