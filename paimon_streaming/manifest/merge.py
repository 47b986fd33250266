"""Replaying manifest entries into live files, and keeping the number of manifests bounded.

`merge_entries` is the one replay rule used everywhere (scan, conflict checks, manifest
merge): ADD of a present identifier is an error, DELETE of a present one cancels it, DELETE of
an absent one is kept (its ADD lives in an older manifest).
`merge_manifests` is Paimon's ManifestFileMerger: a full compaction when the small or
delete-carrying manifests add up to `manifest.full-compaction-threshold-size`, else a minor
merge of runs of small manifests (FORMAT.md §10).
"""
from __future__ import annotations

from typing import Iterable

from ..errors import CommitConflictError
from .entries import ADD, DELETE, ManifestEntry, ManifestFileMeta
from .files import ManifestFile


def merge_entries(entries: Iterable[ManifestEntry]) -> dict[tuple, ManifestEntry]:
    state: dict[tuple, ManifestEntry] = {}
    for e in entries:
        key = e.identifier
        if e.kind == ADD:
            if key in state and state[key].kind == ADD:
                raise CommitConflictError(
                    f"file {e.file.file_name} (bucket {e.bucket}, level {e.file.level}) is added twice")
            state[key] = e
        elif key in state and state[key].kind == ADD:
            del state[key]
        else:
            state[key] = e
    return state


def live_entries(entries: Iterable[ManifestEntry]) -> list[ManifestEntry]:
    """The ADD entries left after a full replay (a snapshot's live data files)."""
    return [e for e in merge_entries(entries).values() if e.kind == ADD]


def merge_manifests(metas: list[ManifestFileMeta], manifest_file: ManifestFile, target_size: int, full_threshold: int, min_count: int,
                    written: list[str]) -> list[ManifestFileMeta]:
    """Return the base manifest list for a new snapshot. Names of new files go to `written`."""
    full = _try_full_compaction(metas, manifest_file, target_size, full_threshold, written)
    if full is not None:
        return full
    result: list[ManifestFileMeta] = []
    candidates: list[ManifestFileMeta] = []
    total = 0
    for meta in metas:
        total += meta.file_size
        candidates.append(meta)
        if total >= target_size:
            result.extend(_merge_candidates(candidates, manifest_file, written))
            candidates, total = [], 0
    if len(candidates) >= min_count:
        result.extend(_merge_candidates(candidates, manifest_file, written))
    else:
        result.extend(candidates)
    return result


def _merge_candidates(candidates: list[ManifestFileMeta], manifest_file: ManifestFile,
                      written: list[str]) -> list[ManifestFileMeta]:
    if len(candidates) <= 1:
        return list(candidates)
    merged = merge_entries(e for m in candidates for e in manifest_file.read_meta(m))
    new = manifest_file.write(list(merged.values()))
    written.extend(m.file_name for m in new)
    return new


def _try_full_compaction(metas: list[ManifestFileMeta], manifest_file: ManifestFile, target_size: int, threshold: int, written: list[str]) -> list[ManifestFileMeta] | None:
    base_end = 0
    while base_end < len(metas) and metas[base_end].num_deleted_files == 0 \
            and metas[base_end].file_size >= target_size:
        base_end += 1
    base, delta = metas[:base_end], metas[base_end:]
    if sum(m.file_size for m in delta) < threshold:
        return None
    delta_entries = [e for m in delta for e in manifest_file.read_meta(m)]
    deleted = {e.identifier for e in delta_entries if e.kind == DELETE}
    kept: list[ManifestFileMeta] = []
    rewrite: list[ManifestEntry] = []
    for m in base:
        entries = manifest_file.read_meta(m)
        if any(e.identifier in deleted for e in entries):
            rewrite.extend(entries)
        else:
            kept.append(m)
    adds = [e for e in merge_entries(rewrite + delta_entries).values() if e.kind == ADD]
    new = manifest_file.write(adds)
    written.extend(m.file_name for m in new)
    return kept + new
