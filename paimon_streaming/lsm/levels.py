"""Sorted runs of one bucket (FORMAT.md §9): each level-0 file is its own run, newest first;
each level >= 1 is one run of key-disjoint files."""
from __future__ import annotations

from dataclasses import dataclass

from ..manifest import DataFileMeta


@dataclass(frozen=True)
class SortedRun:
    level: int
    files: tuple[DataFileMeta, ...]

    @property
    def size(self) -> int:
        return sum(f.file_size for f in self.files)


def sorted_runs(files: list[DataFileMeta]) -> list[SortedRun]:
    """Level-0 files newest first (Java's order: max sequence, then min sequence, creation
    time, name, all descending), then one run per non-empty level in ascending order."""
    level0 = sorted((f for f in files if f.level == 0),
                    key=lambda f: (f.max_sequence_number, f.min_sequence_number, f.creation_time or 0,
                                   f.file_name), reverse=True)
    runs = [SortedRun(0, (f,)) for f in level0]
    for level in sorted({f.level for f in files if f.level > 0}):
        runs.append(SortedRun(level, tuple(f for f in files if f.level == level)))
    return runs
