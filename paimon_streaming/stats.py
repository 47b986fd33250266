"""Per-file column statistics (SimpleStats, FORMAT §5.3): min, max and null count per column.

Modes follow Java's `SimpleColStatsCollector`: `none` (no stats, column dropped from the
dense stats row), `counts` (null count only), `full`, and `truncate(N)` (strings cut to N code
points; the max is then rounded up so it still bounds every value). Stats are pruning hints,
so whenever a bound cannot be stated safely it is left unknown (None):

* ARRAY/MAP/MULTISET/ROW/VARIANT and BINARY/VARBINARY: no min/max (Java: not Comparable, and no Parquet
  footer stats); their null counts are exact.
* FLOAT/DOUBLE containing NaN: no min/max. Java's comparator orders NaN above +inf while
  Parquet readers drop NaN-tainted stats; leaving them unknown is right under both.
  Zero bounds are widened as Parquet does (min 0.0 -> -0.0, max -0.0 -> 0.0).
* a truncated max that cannot be rounded up (all N code points are U+10FFFF): min and max both
  unknown, as Java does.
"""
from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Any, Iterable, Mapping

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from .errors import InvalidOptionError
from .option_text import parse_int
from .system_fields import is_system_field
from .types import DataField, DataType, to_arrow

DEFAULT_STATS_MODE = "truncate(16)"
KEY_STATS_MODE = "truncate(128)"          # system and `_KEY_*` columns (Java)
STATS_MODE_OPTION = "metadata.stats-mode"
KEEP_FIRST_N_OPTION = "metadata.stats-keep-first-n-columns"

_TRUNCATE = re.compile(r"TRUNCATE\(([0-9]+)\)")
_NO_MIN_MAX = {"ARRAY", "MAP", "MULTISET", "ROW", "BINARY", "VARBINARY", "VARIANT"}
_MAX_CODE_POINT = 0x10FFFF
_SURROGATES = range(0xD800, 0xE000)


# ---- modes --------------------------------------------------------------------------------
def parse_stats_mode(text: str, option: str = STATS_MODE_OPTION) -> str:
    """Normalize a stats-mode value (`none`, `counts`, `full`, `truncate(N)`, any case, nothing
    around it: Java's SimpleColStatsCollector.from).

    Raises InvalidOptionError naming `option` for anything else, as Java refuses it.
    """
    upper = str(text).upper()
    if upper in ("NONE", "COUNTS", "FULL"):
        return upper.lower()
    m = _TRUNCATE.fullmatch(upper)
    if m and 0 < int(m.group(1)) < 1 << 31:
        return f"truncate({int(m.group(1))})"
    raise InvalidOptionError(f"{option}={text!r} is not a stats mode; use none, counts, full "
                             f"or truncate(N) with N > 0")


def _truncate_length(mode: str) -> int | None:
    return int(mode[len("truncate("):-1]) if mode.startswith("truncate(") else None


def stats_modes(options: Mapping[str, str], field_names: Iterable[str],
                key_names: Iterable[str] = ()) -> dict[str, str]:
    """The stats mode of each column from table options, with Java's precedence.

    `fields.<name>.stats-mode` wins; system columns, and the key columns named in `key_names`
    (a thin-mode file's keys, whose stats are also its key stats), then get truncate(128); the
    others get `metadata.stats-mode` until `metadata.stats-keep-first-n-columns` columns have
    stats and `none` after that.
    """
    default = parse_stats_mode(options.get(STATS_MODE_OPTION, DEFAULT_STATS_MODE))
    keep_first = _int_option(options, KEEP_FIRST_N_OPTION, -1)
    keys = set(key_names)
    modes: dict[str, str] = {}
    counted = 0
    for name in field_names:
        key = f"fields.{name}.stats-mode"
        if key in options:
            modes[name] = parse_stats_mode(options[key], key)
        elif is_system_field(name) or name in keys:
            modes[name] = KEY_STATS_MODE
            continue
        elif 0 <= keep_first <= counted:
            modes[name] = "none"
        else:
            modes[name] = default
        counted += 1
    return modes


def _int_option(options: Mapping[str, str], key: str, default: int) -> int:
    try:
        return parse_int(str(options.get(key, default)))
    except ValueError:
        raise InvalidOptionError(f"{key}={options[key]!r} is not an integer") from None


def _mode_of(modes: Mapping[str, str] | str, name: str) -> str:
    if isinstance(modes, str):
        return parse_stats_mode(modes)
    return parse_stats_mode(modes.get(name, DEFAULT_STATS_MODE), f"fields.{name}.stats-mode")


def stats_columns(fields: Iterable[DataField], modes: Mapping[str, str] | str) -> list[str] | None:
    """`_VALUE_STATS_COLS` under dense store: the names with stats, or None when that is all."""
    names = [f.name for f in fields]
    kept = [n for n in names if _mode_of(modes, n) != "none"]
    return None if len(kept) == len(names) else kept


# ---- collected stats ----------------------------------------------------------------------
@dataclass(frozen=True)
class ColStats:
    """One column's stats; None means unknown."""
    min: Any
    max: Any
    null_count: int | None


@dataclass(frozen=True)
class ColumnStats:
    """Stats of the columns whose mode is not `none`, in field order.

    `fields` are the stats columns (their table types; writers make them nullable for the
    BinaryRow), `min_values`/`max_values` are Python values as `to_pylist` gives them for the
    canonical Arrow type, `null_counts` ints; None anywhere = unknown.
    """
    fields: tuple[DataField, ...]
    min_values: tuple[Any, ...]
    max_values: tuple[Any, ...]
    null_counts: tuple[int | None, ...]

    @property
    def names(self) -> list[str]:
        return [f.name for f in self.fields]

    def __getitem__(self, name: str) -> ColStats:
        i = self.names.index(name)
        return ColStats(self.min_values[i], self.max_values[i], self.null_counts[i])


def collect_stats(data: pa.Table, fields: list[DataField],
                  modes: Mapping[str, str] | str = DEFAULT_STATS_MODE,
                  string_bounds: Mapping[str, tuple[str, str]] | None = None,
                  all_fields: bool = False) -> ColumnStats:
    """Stats of `data` for `fields` (columns found by name) under the given mode(s).
    `string_bounds` are exact (min, max) of string columns known already (a Parquet footer's).
    Columns of mode `none` are left out, or with `all_fields` (key stats, which have no
    stats-columns list) kept with every stat unknown, as Java's NoneSimpleColStatsCollector."""
    kept: list[DataField] = []
    stats: list[ColStats] = []
    for f in fields:
        mode = _mode_of(modes, f.name)
        if mode == "none":
            if all_fields:
                kept.append(f)
                stats.append(ColStats(None, None, None))
            continue
        kept.append(f)
        known = string_bounds.get(f.name) if string_bounds and f.type.is_string else None
        stats.append(_column_stats(data.column(f.name), f.type, mode, known))
    return ColumnStats(tuple(kept), tuple(s.min for s in stats), tuple(s.max for s in stats),
                       tuple(s.null_count for s in stats))


def _column_stats(column: pa.ChunkedArray | pa.Array, t: DataType, mode: str,
                  known: tuple[str, str] | None = None) -> ColStats:
    nulls = column.null_count
    if mode == "counts" or t.root in _NO_MIN_MAX or nulls == len(column):
        return ColStats(None, None, nulls)
    target = to_arrow(t)
    low, high = known if known is not None else _min_max(column, target)
    if low is None:  # NaN
        return ColStats(None, None, nulls)
    if pa.types.is_floating(target):
        low, high = (-0.0 if low == 0 else low), (0.0 if high == 0 else high)
    length = _truncate_length(mode)
    if length is not None and t.is_string:
        low, high = low[:length], truncate_max(high, length)
        if high is None:
            return ColStats(None, None, nulls)
    return ColStats(low, high, nulls)


# 64-bit-offset twins a written batch may hold (merge_engine.wide_enough), compared as they are
_SAME_VALUES = {(pa.large_string(), pa.string()), (pa.large_binary(), pa.binary())}


def _min_max(column: pa.ChunkedArray | pa.Array, target: pa.DataType) -> tuple[Any, Any]:
    """Min and max of a column with some non-null values; (None, None) for floats with NaN."""
    if not column.type.equals(target) and (column.type, target) not in _SAME_VALUES:
        column = column.cast(target)
    if pa.types.is_floating(target):
        if not column.null_count:  # numpy's min and max propagate NaN: one pass each, no kernel calls
            values = column.to_numpy()
            low, high = values.min(), values.max()
            return (None, None) if np.isnan(low) or np.isnan(high) else (float(low), float(high))
        if pc.any(pc.is_nan(column)).as_py():
            return None, None
    bounds = pc.min_max(column)
    return bounds["min"].as_py(), bounds["max"].as_py()


def truncate_max(value: str, length: int) -> str | None:
    """An upper bound of `value` with at most `length` code points, or None if there is none.

    Java's TruncateSimpleColStatsCollector: keep the first `length` code points and bump the
    last one that can be bumped, dropping what follows it. Surrogates are skipped (they
    cannot be encoded as UTF-8).
    """
    if len(value) <= length:
        return value
    prefix = value[:length]
    for i in range(length - 1, -1, -1):
        nxt = ord(prefix[i]) + 1
        if nxt in _SURROGATES:
            nxt = _SURROGATES.stop
        if nxt <= _MAX_CODE_POINT:
            return prefix[:i] + chr(nxt)
    return None
