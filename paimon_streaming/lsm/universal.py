"""Universal compaction picking, as Paimon's UniversalCompaction and ForceUpLevel0Compaction
(FORMAT.md §9): a pure function from sorted runs to the runs to merge and their output level."""
from __future__ import annotations

from dataclasses import dataclass

from ..manifest import DataFileMeta
from .levels import SortedRun


@dataclass(frozen=True)
class CompactUnit:
    output_level: int
    runs: tuple[SortedRun, ...]

    @property
    def files(self) -> list[DataFileMeta]:
        return [f for r in self.runs for f in r.files]


@dataclass(frozen=True)
class UniversalCompaction:
    num_levels: int
    trigger: int = 5                # num-sorted-run.compaction-trigger
    max_size_amp: int = 200         # compaction.max-size-amplification-percent
    size_ratio: int = 1             # compaction.size-ratio

    @property
    def max_level(self) -> int:
        return self.num_levels - 1

    def pick(self, runs: list[SortedRun]) -> CompactUnit | None:
        unit = self._size_amplification(runs)
        if unit is None:
            unit = self._size_ratio(runs)
        if unit is None and len(runs) > self.trigger:
            unit = self.pick_size_ratio(runs, len(runs) - self.trigger + 1)
        return unit

    def pick_force_up_level0(self, runs: list[SortedRun]) -> CompactUnit | None:
        """Universal picking, else every level-0 run (plus following runs by size ratio), so
        level 0 is empty after each compaction: what lookup and deletion-vector modes need."""
        unit = self.pick(runs)
        if unit is not None:
            return unit
        level0 = 0
        while level0 < len(runs) and runs[level0].level == 0:
            level0 += 1
        return self.pick_size_ratio(runs, level0, force=True) if level0 else None

    def _size_amplification(self, runs: list[SortedRun]) -> CompactUnit | None:
        if len(runs) < self.trigger:
            return None
        candidate = sum(r.size for r in runs[:-1])
        if candidate * 100 > self.max_size_amp * runs[-1].size:
            return CompactUnit(self.max_level, tuple(runs))
        return None

    def _size_ratio(self, runs: list[SortedRun]) -> CompactUnit | None:
        return self.pick_size_ratio(runs, 1) if len(runs) >= self.trigger else None

    def pick_size_ratio(self, runs: list[SortedRun], count: int, force: bool = False) -> CompactUnit | None:
        size = sum(r.size for r in runs[:count])
        while count < len(runs) and size * (100 + self.size_ratio) / 100 >= runs[count].size:
            size += runs[count].size
            count += 1
        if force or count > 1:
            return self._unit(runs, count)
        return None

    def _unit(self, runs: list[SortedRun], count: int) -> CompactUnit:
        if count == len(runs):
            return CompactUnit(self.max_level, tuple(runs))
        level = max(0, runs[count].level - 1)
        if level == 0:  # never output to level 0: take runs until one above level 0 is included
            while count < len(runs):
                count += 1
                if runs[count - 1].level != 0:
                    level = runs[count - 1].level
                    break
        if count == len(runs):
            level = self.max_level
        return CompactUnit(level, tuple(runs[:count]))
