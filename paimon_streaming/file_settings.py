"""How each data file is written: its format, compression and statistics, by LSM level.

Paimon lets a table write its levels differently (`file.format.per.level`,
`file.compression.per.level`, `metadata.stats-mode.per.level`, maps such as `0:lz4,1:zstd`) and
its changelog files too (`changelog-file.format`, `.compression`, `.stats-mode`). Java's
KeyValueFileWriterFactory (Paimon 1.4) resolves them in this order: a changelog file takes the
`changelog-file.*` value when set; any other file the value of its level, else the table's
`file.format` / `file.compression` / `metadata.stats-mode`. Per-column `fields.<c>.stats-mode`
still wins over a level's stats mode. A file's name carries its own format's extension; its
compression suffix (`file.suffix.include.compression`) stays the table's, as Java names it.
Avro, which paimon-streaming reads but does not write, is written as the table's format and
compression where a level or the changelog asks for it (every reader reads either).
"""
from __future__ import annotations

from dataclasses import dataclass

from . import row_tracking
from .option_text import parse_bool
from .options import CoreOptions
from .schema import TableSchema
from .stats import STATS_MODE_OPTION, stats_columns, stats_modes
from .types import DataField

FORMAT_PER_LEVEL = "file.format.per.level"
COMPRESSION_PER_LEVEL = "file.compression.per.level"
STATS_MODE_PER_LEVEL = "metadata.stats-mode.per.level"
CHANGELOG_FORMAT = "changelog-file.format"
CHANGELOG_COMPRESSION = "changelog-file.compression"
CHANGELOG_STATS_MODE = "changelog-file.stats-mode"
STATS_DENSE_STORE = "metadata.stats-dense-store"


@dataclass(frozen=True)
class FileSettings:
    """What one kind of file (a level's data files, or changelog files) is written with."""
    file_format: str
    compression: str
    modes: dict[str, str]                 # stats mode of each column with stats
    value_stats_cols: tuple[str, ...] | None
    stats_fields: tuple[DataField, ...]   # the columns value stats are kept for
    # `metadata.stats-dense-store` (Java's default true): the stats row holds only the columns
    # with stats (named in value_stats_cols); false: every column, unknown where mode is none
    dense: bool = True


class FileSettingsByLevel:
    """The settings of each level's files (and of changelog files), resolved once each."""

    def __init__(self, schema: TableSchema, thin_keys: tuple[str, ...] = ()):
        self.schema = schema
        self.options = CoreOptions(schema.options)
        self.thin_keys = thin_keys  # a thin-mode file's key columns (their stats are its key stats)
        self._resolved: dict[tuple[int, bool], FileSettings] = {}

    def of(self, level: int, changelog: bool = False, tracked: bool = False) -> FileSettings:
        """`tracked`: files holding a row-tracking table's `_ROW_ID` and `_SEQUENCE_NUMBER`
        columns (compaction output), which keep stats for them too, as Java's."""
        key = (level, changelog, tracked)
        if key not in self._resolved:
            self._resolved[key] = self._resolve(level, changelog, tracked)
        return self._resolved[key]

    def _resolve(self, level: int, changelog: bool, tracked: bool) -> FileSettings:
        def pick(changelog_key: str, per_level_key: str, table_value: str) -> str:
            if changelog and self.options.get(changelog_key) is not None:
                return self.options.get(changelog_key)
            return self.options.get(per_level_key).get(level, table_value)
        stats_mode = pick(CHANGELOG_STATS_MODE, STATS_MODE_PER_LEVEL, self.options.get(STATS_MODE_OPTION))
        fields = self.schema.fields + (row_tracking.FIELDS if tracked else ())
        modes = stats_modes({**self.schema.options, STATS_MODE_OPTION: stats_mode}, [f.name for f in fields],
                            self.thin_keys)
        dense = parse_bool(self.options.raw.get(STATS_DENSE_STORE, "true"))
        cols = stats_columns(fields, modes) if dense else None
        file_format = pick(CHANGELOG_FORMAT, FORMAT_PER_LEVEL, self.options.file_format)
        compression = pick(CHANGELOG_COMPRESSION, COMPRESSION_PER_LEVEL, self.options.file_compression)
        if file_format == "avro":
            file_format, compression = self.options.file_format, self.options.file_compression
        return FileSettings(file_format, compression, modes, None if cols is None else tuple(cols), fields, dense)
