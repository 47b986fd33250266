"""An overwrite's new files at the top level, as Java's commit places them (`overwrite-upgrade`,
default true; FileStoreCommitImpl.tryUpgrade).

An overwrite of a primary-key table replaces every file of what it writes, so the new files
of a bucket whose key ranges do not overlap are a whole sorted run with nothing older: they
go to the top level at once. Left at level 0, a deletion-vector or first-row table (whose
readers skip level 0) read as empty after the overwrite until a compaction ran, which never
comes on write-only tables; Java's readers read the same files the same way."""
from __future__ import annotations

from collections.abc import Sequence

from .keyvalue import decode_key, key_fields
from .manifest import ADD, ManifestEntry
from .options import CoreOptions
from .schema import TableSchema


def upgraded(entries: Sequence[ManifestEntry], schema: TableSchema) -> list[ManifestEntry]:
    """`entries` (an overwrite's, with no compaction in the same commit) with the ADDs of each
    bucket whose files do not overlap moved to the top level."""
    options = CoreOptions(schema.options)
    adds = [e for e in entries if e.kind == ADD]
    if not schema.primary_keys or not options.get("overwrite-upgrade") or \
            any(e.file.level > 0 or e.bucket < 0 for e in adds):
        return list(entries)
    key_types = tuple(f.type for f in key_fields(schema))
    by_bucket: dict[tuple[bytes, int], list[ManifestEntry]] = {}
    for e in adds:
        by_bucket.setdefault((e.partition, e.bucket), []).append(e)
    top = options.num_levels - 1
    moved: dict[str, ManifestEntry] = {}
    for bucket in by_bucket.values():
        if _disjoint(bucket, schema.id, key_types):
            moved.update({e.file.file_name: ManifestEntry(e.kind, e.partition, e.bucket, e.total_buckets,
                                                          e.file.upgrade(top)) for e in bucket})
    return [moved.get(e.file.file_name, e) if e.kind == ADD else e for e in entries]


def _disjoint(bucket: list[ManifestEntry], schema_id: int, key_types: tuple) -> bool:
    """Whether the files' key ranges are disjoint (bounds with a NaN, or written under another
    schema, are taken as overlapping: the files stay at level 0)."""
    if any(e.file.schema_id != schema_id for e in bucket):
        return False
    bounds = [(decode_key(e.file.min_key, key_types), decode_key(e.file.max_key, key_types)) for e in bucket]
    if any(isinstance(v, float) and v != v for low, high in bounds for v in low + high):
        return False
    bounds.sort(key=lambda b: b[0])
    return all(earlier[1] < later[0] for earlier, later in zip(bounds, bounds[1:]))
