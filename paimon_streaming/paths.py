"""Where every file of a table lives, and how partition directories are named.

Java recomputes a data file's directory from the manifest's partition row, so the partition
directory must match Java byte for byte (FORMAT.md §1.1): Java's `toString` of the internal
value (DATE as a day number, TIMESTAMP as LocalDateTime text), Paimon's escaping, and the
default partition name for null or blank values.
"""
from __future__ import annotations

import datetime as dt
import decimal
import itertools
import re
import uuid
from dataclasses import dataclass
from typing import Any, Mapping

from .datafile import data_file_name
from .external_paths import ExternalPaths
from .java_text import java_blank, java_float_str
from .tzdb import local_tzinfo
from .types import DataField, DataType

# Characters Paimon escapes in partition directory names: controls, DEL and these.
_ESCAPED = re.compile(r'[\x00-\x1f\x7f"#%\'*/:=?\\{}\[\]^]')
_EPOCH_DATE = dt.date(1970, 1, 1)


def escape_path_name(text: str) -> str:
    return _ESCAPED.sub(lambda m: f"%{ord(m.group()):02X}", text)


def _local_datetime_str(value: dt.datetime) -> str:
    """java.time.LocalDateTime.toString of the UTC wall clock (years padded to 4 digits, as
    Java does; strftime's %Y does not pad years before 1000). The fraction has 3, 6 or 9
    digits, as many as it needs: nanoseconds below the microsecond come from the value's
    `nanosecond` (pandas.Timestamp, binary_row.NanoDatetime)."""
    nanos = value.microsecond * 1000 + getattr(value, "nanosecond", 0)
    if value.tzinfo is not None:
        value = value.astimezone(dt.timezone.utc).replace(tzinfo=None)
    text = f"{value.year:04d}-{value:%m-%dT%H:%M}"
    if value.second or nanos:
        text += f":{value.second:02d}"
        if nanos:
            frac = f"{nanos:09d}"
            text += "." + (frac[:3] if frac.endswith("000000") else frac[:6] if frac.endswith("000") else frac)
    return text


def _cast_timestamp_str(value: dt.datetime, precision: int) -> str:
    """Java's CAST(timestamp AS STRING), which names partitions when `partition.legacy-name` is
    false: 'yyyy-MM-dd HH:mm:ss', then the fraction with at least `precision` digits (trailing
    zeros beyond it dropped); a TIMESTAMP WITH LOCAL TIME ZONE as the wall clock of this
    process's zone (Java's: the JVM's default zone)."""
    nanos = value.microsecond * 1000 + getattr(value, "nanosecond", 0)
    if value.tzinfo is not None:
        value = value.astimezone(local_tzinfo()).replace(tzinfo=None)
    fraction = f"{nanos:09d}"
    while len(fraction) > precision and fraction.endswith("0"):
        fraction = fraction[:-1]
    text = f"{value.year:04d}-{value:%m-%d %H:%M:%S}"
    return text + "." + fraction if fraction else text


def _cast_time_str(value: dt.time, precision: int) -> str:
    """Java's CAST(time AS STRING) (`partition.legacy-name` = false): 'HH:mm:ss', then for a
    precision above 0 the milliseconds' digits up to the last non-zero one (at least one)."""
    text = f"{value.hour:02d}:{value.minute:02d}:{value.second:02d}"
    if precision <= 0:
        return text
    millis, digits = value.microsecond // 1000, ""
    while precision > 0:
        digits += str(millis // 100)
        millis = millis % 100 * 10
        if millis == 0:
            break
        precision -= 1
    return f"{text}.{digits}"


def partition_value_str(value: Any, t: DataType, legacy: bool = True) -> str | None:
    """The text of one partition value as Java prints it; None for null or blank."""
    if value is None:
        return None
    r = t.root
    if r in ("CHAR", "VARCHAR"):
        return None if java_blank(value) else value
    if r == "BOOLEAN":
        return "true" if value else "false"
    if r == "DATE":
        return str((value - _EPOCH_DATE).days) if legacy else value.isoformat()
    if r == "TIME":
        if not legacy:
            return _cast_time_str(value, t.precision or 0)
        return str((value.hour * 3600 + value.minute * 60 + value.second) * 1000 + value.microsecond // 1000)
    if r in ("TIMESTAMP", "TIMESTAMP_LTZ"):
        if not legacy:
            return _cast_timestamp_str(value, 6 if t.precision is None else t.precision)
        return _local_datetime_str(value)
    if r == "DECIMAL":
        return format(decimal.Decimal(value), "f")
    if r in ("FLOAT", "DOUBLE"):
        return java_float_str(value, r == "FLOAT")
    if r in ("BINARY", "VARBINARY"):
        return value.decode("utf-8", errors="replace")
    return str(value)


def partition_path(values: list[Any], fields: list[DataField], default_name: str,
                   legacy: bool = True) -> str:
    """`k1=v1/k2=v2` for one partition (empty string for an unpartitioned table)."""
    parts = []
    for v, f in zip(values, fields):
        text = partition_value_str(v, f.type, legacy)
        parts.append(f"{escape_path_name(f.name)}={escape_path_name(default_name if text is None else text)}")
    return "/".join(parts)


def bucket_dir(bucket: int) -> str:
    return "bucket-postpone" if bucket == -2 else f"bucket-{max(bucket, 0)}"


class PathFactory:
    """Names new files of one writer: one UUID per instance plus a counter per file kind; and
    places the files of bucket directories under the table's external paths, if it has any."""

    def __init__(self, table_path: str, file_format: str, data_prefix: str = "data-",
                 changelog_prefix: str = "changelog-", compression: str | None = None,
                 include_compression: bool = False, external: ExternalPaths | None = None):
        self.table_path = table_path
        self.external = external
        self.file_format = file_format
        self.data_prefix = data_prefix
        self.changelog_prefix = changelog_prefix
        self.compression = compression
        self.include_compression = include_compression
        self.uuid = str(uuid.uuid4())
        self._counters: dict[str, itertools.count] = {}

    def _next(self, kind: str) -> int:
        return next(self._counters.setdefault(kind, itertools.count()))

    @property
    def manifest_dir(self) -> str:
        return f"{self.table_path}/manifest"

    def new_manifest(self) -> str:
        return f"manifest-{self.uuid}-{self._next('manifest')}"

    def new_manifest_list(self) -> str:
        return f"manifest-list-{self.uuid}-{self._next('manifest-list')}"

    def new_index_manifest(self) -> str:
        return f"index-manifest-{self.uuid}-{self._next('index-manifest')}"

    def new_index_file(self) -> str:
        return f"index-{self.uuid}-{self._next('index')}"

    def _file_name(self, prefix: str, file_format: str | None) -> str:
        return data_file_name(prefix, self.uuid, self._next("data"), file_format or self.file_format,
                              self.compression, self.include_compression)

    def place(self, directory: str, file_name: str) -> tuple[str, str | None]:
        """(where to write a new file `file_name` of `directory`, its external path or None):
        a file of a bucket directory goes under an external path when the table has them."""
        if self.external is None or not directory.rsplit("/", 1)[-1].startswith("bucket-"):
            return f"{directory}/{file_name}", None
        uri = self.external.locate(directory[len(self.table_path) + 1:], file_name)
        return uri, uri

    def new_data_file(self, file_format: str | None = None) -> str:
        """A data file's name; `file_format` when its level's format is not the table's."""
        return self._file_name(self.data_prefix, file_format)

    def new_changelog_file(self, file_format: str | None = None) -> str:
        return self._file_name(self.changelog_prefix, file_format)


def bucket_path(table_path: str, partition_dir: str, bucket: int) -> str:
    base = f"{table_path}/{partition_dir}" if partition_dir else table_path
    return f"{base}/{bucket_dir(bucket)}"


@dataclass(frozen=True)
class TableDirs:
    """Where a table's data and index files live (Java's FileStorePathFactory): partition and
    bucket directories under the table, or under `data-file.path-directory`; index files
    (deletion vectors, HASH) in `index/`, or with `index-file-in-data-file-dir` beside the data
    files of their bucket. Both options are immutable, so the table's options decide for all
    its files. A file with an external path is where that path says."""
    table_path: str
    data_directory: str | None = None
    index_in_bucket: bool = False

    @staticmethod
    def of(table_path: str, options: Mapping[str, str]) -> "TableDirs":
        return TableDirs(table_path, options.get("data-file.path-directory") or None,
                         str(options.get("index-file-in-data-file-dir", "false")).strip().lower() == "true")

    @property
    def data_root(self) -> str:
        """The directory partition and bucket directories are under."""
        return f"{self.table_path}/{self.data_directory}" if self.data_directory else self.table_path

    def bucket(self, partition_dir: str, bucket: int) -> str:
        return bucket_path(self.data_root, partition_dir, bucket)

    def index_dir(self, bucket_dir: str) -> str:
        """Where the index files of the bucket in `bucket_dir` live."""
        return bucket_dir if self.index_in_bucket else f"{self.table_path}/index"

    @staticmethod
    def data_file(bucket_dir: str, meta) -> str:
        """The path of a data file (a DataFileMeta) of the bucket in `bucket_dir`."""
        return meta.external_path or f"{bucket_dir}/{meta.file_name}"

    @staticmethod
    def data_file_paths(bucket_dir: str, meta) -> list[str]:
        """A data file's path and its extra files' (e.g. `.index` file indexes), which live beside it."""
        main = TableDirs.data_file(bucket_dir, meta)
        parent = main.rsplit("/", 1)[0]
        return [main] + [f"{parent}/{extra}" for extra in meta.extra_files]

    def index_file(self, bucket_dir: str, meta) -> str:
        """The path of an index file (an IndexFileMeta) of the bucket in `bucket_dir`."""
        return meta.external_path or f"{self.index_dir(bucket_dir)}/{meta.file_name}"
