"""Reading and writing the three metadata files: manifests, manifest lists, index manifests.

They are Avro files unless the table option `manifest.format` says orc or parquet
(`columnar`). Each file is read in the format its magic bytes say, so a reader never depends
on the option; a commit writes in the option's format and refuses to build on files of
another (Java reads every file in the option's format: after a change of the option it reads
none of those written before, and a commit of the new format on top of them would leave a
table it reads under no value of the option).

Damage is never read as metadata: Avro files written here carry a zstd content checksum and a
header check (`avro_container`), Parquet ones page checksums (`datafile`); files of a known
size (manifests, manifest lists of newer snapshots) are checked against it; a file that is
missing, truncated, garbled or holds records of the wrong shape raises `MissingFileError` /
`CorruptFileError` naming it.
"""
from __future__ import annotations

import contextlib
import gc
import io
import threading
from dataclasses import dataclass
from typing import Generic, Iterable, Iterator, Sequence, TypeVar

import fastavro

from ..binary_row import deserialize_row, serialize_row
from ..datafile import ParquetSettings
from ..errors import CorruptFileError, InvalidOptionError, MissingFileError
from ..file_cache import ImmutableFileCache
from ..fileio import FileIO
from ..options import CoreOptions, check_manifest_compression
from ..paths import PathFactory
from ..predicate import compare_values
from ..types import DataField
from . import avro_container, columnar
from .avro_schemas import INDEX_MANIFEST_ENTRY, MANIFEST_ENTRY, MANIFEST_FILE_META
from .index_avro import encode_index_manifest
from .entries import (ADD, DELETE, DELETION_VECTORS_INDEX, EMPTY_STATS, HASH_INDEX, IndexManifestEntry,
                      ManifestEntry, ManifestFileMeta, SimpleStats)

_CODECS = {"zstd": "zstandard", "null": "null", "none": "null", "deflate": "deflate", "snappy": "snappy"}
T = TypeVar("T")


_CACHE: ImmutableFileCache[tuple[str, list]] = ImmutableFileCache(512)  # (format, decoded records) by path


def _encode_avro(schema, records: Sequence[dict], codec: str, file_name: str) -> bytes:
    return avro_container.encode(schema, list(records), _CODECS.get(codec, codec), file_name)


def _file_name(path: str) -> str:
    return path.rsplit("/", 1)[-1]


def read_metadata(file_io: FileIO, path: str, columns: list[DataField],
                  size: int | None = None) -> tuple[str, list[dict]]:
    """Decode one metadata file (uncached) in the format its magic bytes say: (format, records
    as the Avro path's dicts). `columns`: the fields of its rows, which an ORC or Parquet file is
    read with. MissingFileError when absent, CorruptFileError when it is not `size` bytes long
    (when known) or does not decode."""
    try:
        data = file_io.read_bytes(path)
    except FileNotFoundError:
        raise MissingFileError(f"metadata file {path} is referenced but does not exist (deleted by hand, or "
                               "expired while this read ran); `paimon-streaming check` lists every such file"
                               ) from None
    fmt = columnar.file_format(data)
    if fmt is None:
        raise CorruptFileError(f"metadata file {path} is not an Avro, ORC or Parquet file: it starts with "
                               f"{data[:4]!r}")
    if size is not None and len(data) != size:
        raise CorruptFileError(f"metadata file {path} has {len(data)} bytes but its reference records {size} "
                               "(truncated or replaced); `paimon-streaming check` lists every damaged file")
    if fmt != columnar.AVRO:
        try:
            return fmt, columnar.decode(data, fmt, columns, path)
        except CorruptFileError as exc:
            raise CorruptFileError(f"cannot decode {fmt} metadata file {path}: {exc}") from exc
    try:
        reader = fastavro.reader(io.BytesIO(data))
        records = list(reader)
        avro_container.verify(reader.metadata, len(records), _file_name(path))
        return fmt, records
    except Exception as exc:  # fastavro raises many types for truncated/garbled input
        raise CorruptFileError(f"cannot decode Avro metadata file {path}: {type(exc).__name__}: {exc}") from exc


def read_records(file_io: FileIO, path: str, kind: type[_MetadataFiles[T]],
                 size: int | None = None) -> tuple[str, list[T]]:
    """`read_metadata` of a file of `kind` (ManifestFile, ManifestList, IndexManifestFile), each
    record converted by its `decode`; a record of the wrong shape (a damaged header's schema) is a
    CorruptFileError too."""
    with paused_gc():
        fmt, records = read_metadata(file_io, path, kind.columns, size)
        try:
            return fmt, [kind.decode(r) for r in records]
        except (KeyError, TypeError, ValueError, AttributeError) as exc:
            raise CorruptFileError(f"metadata file {path} holds records of an unexpected shape "
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


@dataclass(frozen=True)
class MetadataFormat:
    """How a table's metadata files are written: its `manifest.format` and `manifest.compression`
    options, and for ORC and Parquet the options Java's data file writers take from the table
    too (the zstd level, the `parquet.*` settings)."""
    file_format: str = columnar.AVRO
    compression: str = "zstd"
    zstd_level: int = 1
    parquet: ParquetSettings = ParquetSettings()

    @staticmethod
    def of(options: CoreOptions) -> "MetadataFormat":
        check_manifest_compression(options)
        return MetadataFormat(options.get("manifest.format"), options.get("manifest.compression"),
                              options.get("file.compression.zstd-level"), ParquetSettings.of(options))

    def encode(self, schema, columns: list[DataField], records: Sequence[dict], path: str) -> bytes:
        """The file `path` of `records` (Avro dicts): Avro of `schema`, or ORC/Parquet of `columns`."""
        if self.file_format == columnar.AVRO:
            return _encode_avro(schema, records, self.compression, _file_name(path))
        return columnar.encode(columns, records, self.file_format, self.compression, self.zstd_level,
                               self.parquet, path)


class _MetadataFiles(Generic[T]):
    """One kind of metadata file in the table's manifest directory, written as `written` says.
    Files of every format are read, unless `only_written` (a commit's: see the module
    docstring). Such a file never changes once written, so its decoded records are cached by
    path (`_CACHE`)."""
    columns: list[DataField]   # the fields of its rows in ORC and Parquet (`columnar`)

    def __init__(self, file_io: FileIO, path_factory: PathFactory, written: MetadataFormat = MetadataFormat(),
                 only_written: bool = False):
        self.file_io = file_io
        self.paths = path_factory
        self.written = written
        self.only_written = only_written

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
            cached = read_records(self.file_io, path, type(self), size)
            _CACHE.put(path, cached)
        fmt, records = cached
        if self.only_written and fmt != self.written.file_format:
            raise InvalidOptionError(
                f"metadata file {path} is {fmt}, but the table option 'manifest.format' is "
                f"{self.written.file_format!r} (changed after it was written): Java Paimon reads every metadata "
                f"file in that format, so it cannot read this table either, and a commit in it here would leave "
                f"a table it reads under no value; set 'manifest.format' back to {fmt!r}")
        return records

    def _write(self, name: str, schema, records: Sequence[dict], decoded: list[T]) -> int:
        """Write the file `name` of `records` (whose decoded form is `decoded`): its size."""
        data = self.written.encode(schema, self.columns, records, self.path(name))
        self.file_io.write_bytes(self.path(name), data)
        _CACHE.put(self.path(name), (self.written.file_format, decoded))
        return len(data)


class ManifestFile(_MetadataFiles[ManifestEntry]):
    """Manifest files (ManifestEntry records) of one table, rolled at the target size."""
    decode = staticmethod(ManifestEntry.from_avro)
    columns = columnar.MANIFEST_ENTRY

    def __init__(self, file_io: FileIO, path_factory: PathFactory, partition_fields: list[DataField],
                 written: MetadataFormat = MetadataFormat(), target_size: int = 8 << 20, only_written: bool = False):
        super().__init__(file_io, path_factory, written, only_written)
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
        whole = self.written.encode(MANIFEST_ENTRY, self.columns, records, self.path(first))
        chunks = max(1, -(-len(whole) // self.target_size))
        if chunks == 1:  # the common case fits one file: the size probe is then the file itself
            self.file_io.write_bytes(self.path(first), whole)
            _CACHE.put(self.path(first), (self.written.file_format, list(entries)))
            return [self._meta(first, len(whole), entries)]
        per_chunk = -(-len(entries) // chunks)
        metas = []
        for start in range(0, len(entries), per_chunk):
            name, part = self.paths.new_manifest(), list(entries[start:start + per_chunk])
            metas.append(self._meta(name, self._write(name, MANIFEST_ENTRY, records[start:start + per_chunk], part),
                                    part))
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
    """Manifest list files: one file of ManifestFileMeta records (never rolled); `read`'s
    `size` is the snapshot's *ManifestListSize."""
    decode = staticmethod(ManifestFileMeta.from_avro)
    columns = columnar.MANIFEST_FILE_META

    def write(self, metas: Sequence[ManifestFileMeta]) -> tuple[str, int]:
        name = self.paths.new_manifest_list()
        return name, self._write(name, MANIFEST_FILE_META, [m.to_avro() for m in metas], list(metas))


class IndexManifestFile(_MetadataFiles[IndexManifestEntry]):
    """The index manifest: a full list of the live index files (HASH, DELETION_VECTORS)."""
    decode = staticmethod(IndexManifestEntry.from_avro)
    columns = columnar.INDEX_MANIFEST_ENTRY

    def read(self, name: str | None, size: int | None = None) -> list[IndexManifestEntry]:
        return [] if name is None else super().read(name, size)

    def write(self, entries: Sequence[IndexManifestEntry]) -> str:
        name = self.paths.new_index_manifest()
        w = self.written
        data = None
        if w.file_format == columnar.AVRO:
            data = encode_index_manifest(entries, _CODECS.get(w.compression, w.compression), name)
        if data is None:
            data = w.encode(INDEX_MANIFEST_ENTRY, self.columns,
                            [e.to_avro(tagged=w.file_format == columnar.AVRO) for e in entries], self.path(name))
        self.file_io.write_bytes(self.path(name), data)
        _CACHE.put(self.path(name), (w.file_format, list(entries)))
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
