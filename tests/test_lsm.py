"""LSM pieces: sorted runs, universal compaction picking, and the lookup key index."""
from __future__ import annotations

import numpy as np
import pyarrow as pa

from paimon_streaming.lsm.levels import SortedRun, sorted_runs
from paimon_streaming.lsm.lookup import BatchKeys, KeyIndex
from paimon_streaming.lsm.universal import UniversalCompaction
from paimon_streaming.manifest import DataFileMeta
from paimon_streaming.manifest.entries import EMPTY_ROW, EMPTY_STATS
from paimon_streaming.types import DataType


def meta(name, level, size, seq=0):
    return DataFileMeta(name, size, 1, EMPTY_ROW, EMPTY_ROW, EMPTY_STATS, EMPTY_STATS, seq, seq, 0, level)


def runs(*spec):
    """spec: (level, size) per run, newest first."""
    return [SortedRun(level, (meta(f"f{i}", level, size),)) for i, (level, size) in enumerate(spec)]


U = UniversalCompaction(num_levels=6)


def test_sorted_runs_order():
    files = [meta("a", 0, 1, seq=1), meta("b", 0, 1, seq=5), meta("c", 3, 1), meta("d", 3, 1), meta("e", 1, 1)]
    rs = sorted_runs(files)
    assert [(r.level, [f.file_name for f in r.files]) for r in rs] == \
        [(0, ["b"]), (0, ["a"]), (1, ["e"]), (3, ["c", "d"])]


def test_nothing_to_pick_below_trigger():
    assert U.pick(runs((0, 1), (5, 100))) is None


def test_size_amplification_compacts_everything_to_max_level():
    unit = U.pick(runs((0, 100), (1, 100), (2, 100), (3, 100), (5, 100)))
    assert unit.output_level == 5 and len(unit.runs) == 5


def test_size_ratio_picks_similar_newest_runs():
    unit = U.pick(runs((0, 10), (1, 10), (2, 20), (3, 1000), (5, 10000)))
    assert [r.level for r in unit.runs] == [0, 1, 2] and unit.output_level == 2


def test_file_number_trigger():
    rs = runs((0, 1), (0, 100), (0, 10000), (1, 10**6), (2, 10**8), (3, 10**10), (5, 10**12))
    unit = U.pick(rs)
    assert len(unit.runs) >= len(rs) - 5 + 1


def test_force_up_level0_moves_level0_above_zero():
    unit = U.pick_force_up_level0(runs((0, 1), (5, 1000)))
    assert unit.output_level == 4 and [r.level for r in unit.runs] == [0]
    unit = U.pick_force_up_level0(runs((0, 1), (4, 1000), (5, 10000)))
    assert unit.output_level == 3
    unit = U.pick_force_up_level0(runs((0, 1), (1, 1000), (5, 10000)))
    assert unit.output_level == 1 and [r.level for r in unit.runs] == [0, 1]  # level 0 is never an output
    assert U.pick_force_up_level0(runs((5, 10))) is None
    unit = U.pick_force_up_level0(runs((0, 5)))
    assert unit.output_level == 5


def test_lookup_integer_keys():
    file_keys = pa.table({"id": pa.array([1, 3, 5, 7, 9], pa.int64())})
    index = KeyIndex(file_keys, [DataType("BIGINT", False)])
    batch = BatchKeys.of(pa.table({"id": pa.array([9, 2, 3, 100], pa.int64())}), [DataType("BIGINT", False)])
    assert index.positions_of(batch).tolist() == [1, 4]


def test_lookup_composite_and_string_keys():
    types = [DataType("VARCHAR", False, 2147483647), DataType("INT", False)]
    names = [f"key-{i:04d}-long-enough-for-the-var-part" for i in range(1000)]
    file_keys = pa.table({"s": names, "n": pa.array(np.arange(1000) % 7, pa.int32())})
    index = KeyIndex(file_keys, types)
    probe = pa.table({"s": [names[10], names[999], "nope", names[5]],
                      "n": pa.array([10 % 7, 999 % 7, 0, 0], pa.int32())})  # names[5] has n=5, not 0
    assert index.positions_of(BatchKeys.of(probe, types)).tolist() == [10, 999]
