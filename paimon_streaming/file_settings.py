"""How each data file is written: its format, compression and statistics, by LSM level.

Paimon lets a table write its levels differently (`file.format.per.level`,
`file.compression.per.level`, `metadata.stats-mode.per.level`, maps such as `0:lz4,1:zstd`) and
its changelog files too (`changelog-file.format`, `.compression`, `.stats-mode`). Java's
KeyValueFileWriterFactory (Paimon 1.4) resolves them in this order: a changelog file takes the
`changelog-file.*` value when set; any other file the value of its level, else the table's
`file.format` / `file.compression` / `metadata.stats-mode`; an append table's files always take
the table's (BaseAppendFileStoreWrite). The format's own option (`orc.compress`, ...) replaces
the compression, and each compression must be one Java's writer of its format takes
(datafile.java_codec). Per-column `fields.<c>.stats-mode` still wins over a level's stats
mode. A file's name carries its own format's extension; its compression suffix
(`file.suffix.include.compression`) stays the table's, as Java names it. Avro, which
paimon-streaming reads but does not write, is written as the table's format and compression
where a level or the changelog asks for it (every reader reads either).
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from . import row_tracking
from .datafile import FORMAT_COMPRESSION_KEYS, java_codec
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

    def _pick(self, level: int, changelog: bool, changelog_key: str, per_level_key: str,
              table_key: str) -> tuple[str, Any]:
        """The option that decides this for files of `level` (quoted, with the level where a
        per-level one), and its value. An append table's files take the table's value at every
        level, as Java's append writers."""
        if changelog and self.options.get(changelog_key) is not None:
            return f"'{changelog_key}'", self.options.get(changelog_key)
        if self.schema.primary_keys and level in self.options.get(per_level_key):
            return f"'{per_level_key}' (level {level})", self.options.get(per_level_key)[level]
        return f"'{table_key}'", self.options.get(table_key)

    def compression(self, level: int, changelog: bool = False) -> tuple[str, str]:
        """The format files of `level` are written in and the compression Java writes them with."""
        file_format = self._pick(level, changelog, CHANGELOG_FORMAT, FORMAT_PER_LEVEL, "file.format")[1]
        key, compression = self._pick(level, changelog, CHANGELOG_COMPRESSION, COMPRESSION_PER_LEVEL,
                                      "file.compression")
        return self._written(file_format, key, compression)

    def _written(self, file_format: str, key: str, compression: str) -> tuple[str, str]:
        """`file_format` and the compression of option `key`, unless the format's own option
        (`orc.compress`, ...) is set, which Java's writer then takes; InvalidOptionError naming
        the option where Java's writer fails on it."""
        own_key = FORMAT_COMPRESSION_KEYS[file_format]
        prefix = file_format + "."
        own = [k for k in self.schema.options if k.lower().startswith(prefix) and prefix + k[len(prefix):] == own_key]
        if own:
            key, compression = f"'{own[0]}'", self.schema.options[own[0]]
        java_codec(file_format, compression, key, own_option=bool(own))
        return file_format, compression

    def check(self) -> None:
        """InvalidOptionError where Java's writers fail on the compression of some files: of
        each level a per-level option names and of the others, and their changelog files."""
        named = set(self.options.get(FORMAT_PER_LEVEL)) | set(self.options.get(COMPRESSION_PER_LEVEL))
        changelog = self.schema.primary_keys and self.options.get("changelog-producer") != "none"
        for level in named | {max(named, default=-1) + 1}:
            for is_changelog in (False, True) if changelog else (False,):
                self.compression(level, is_changelog)

    def _resolve(self, level: int, changelog: bool, tracked: bool) -> FileSettings:
        stats_mode = self._pick(level, changelog, CHANGELOG_STATS_MODE, STATS_MODE_PER_LEVEL, STATS_MODE_OPTION)[1]
        fields = self.schema.fields + (row_tracking.FIELDS if tracked else ())
        modes = stats_modes({**self.schema.options, STATS_MODE_OPTION: stats_mode}, [f.name for f in fields],
                            self.thin_keys)
        dense = parse_bool(self.options.raw.get(STATS_DENSE_STORE, "true"))
        cols = stats_columns(fields, modes) if dense else None
        file_format, compression = self.compression(level, changelog)
        if file_format == "avro":  # read, not written: the table's format instead
            file_format, compression = self._written(self.options.file_format, "'file.compression'",
                                                     self.options.file_compression)
        return FileSettings(file_format, compression, modes, None if cols is None else tuple(cols), fields, dense)
