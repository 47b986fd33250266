"""Partition expiration (`partition.expiration-time`), as Java's PartitionExpire runs it after
a commit (Paimon 1.4: `PartitionExpire`, `PartitionValuesTimeExpireStrategy`,
`PartitionUpdateTimeExpireStrategy`, `PartitionTimeExtractor`).

A partition expires once its time is older than now minus `partition.expiration-time` (local
wall-clock time, as Java's LocalDateTime), and expired partitions are dropped by one OVERWRITE
commit that deletes their files (their rows leave the latest snapshot; older snapshots and tags
keep them until they expire). The partition's time comes from
`partition.expiration-strategy`:

* `values-time` (default): from the partition's values: the first value, or
  `partition.timestamp-pattern` with each `$<key>` replaced by that key's value; parsed with
  `partition.timestamp-formatter` (a Java DateTimeFormatter pattern such as `yyyyMMdd`; a
  pattern without a time of day means midnight), else as `yyyy-MM-dd[ HH:mm:ss[.fraction]]`.
  A value that does not parse (or is null) never expires, as in Java: values are taken as Java
  holds them, so a DATE partition (held as its day number) never parses.
* `update-time`: from the newest creation time of the partition's files.

Checked at most every `partition.expiration-check-interval` (default 1 h; 0: after every
commit) per table in a process, the first check within one interval of the first commit (the
phase is random, as Java's, so many writers do not check at once); with
`end-input.check-partition-expire` also after every batch write (Java's end of input: the batch
commit identifier), as Java's. At most
`partition.expiration-max-num` (100) partitions per check, the oldest by value first, dropped
`partition.expiration-batch-size` at a time (default: all in one commit).
"""
from __future__ import annotations

import datetime as dt
import logging
import random
import re
import time
from typing import Any

from .branches import MAIN, branch_path
from .errors import InvalidOptionError, SchemaMismatchError
from .fileio import FileIO
from .options import CoreOptions
from .paths import partition_value_str
from .scan import TableScan
from .schema import TableSchema
from .snapshot import BATCH_COMMIT_IDENTIFIER, SnapshotManager
from .types import DataField

log = logging.getLogger(__name__)

_EPOCH = dt.datetime(1970, 1, 1)
# per table path in this process: when its partitions were last checked (time.monotonic())
_LAST_CHECK: dict[str, float] = {}

_DEFAULT_TIME = re.compile(r"(-?\d{1,10})-(\d{1,2})-(\d{1,2})(?: (\d{1,2}):(\d{1,2}):(\d{1,2})(?:\.(\d{1,9}))?)?")
# Java DateTimeFormatter letters -> strptime directives (strptime takes 1 or 2 digits for %m %d %H %M %S)
_JAVA_LETTERS = {"y": "%Y", "u": "%Y", "M": "%m", "d": "%d", "H": "%H", "m": "%M", "s": "%S", "S": "%f"}


def _tokens(java_pattern: str) -> list[tuple[str | None, str]]:
    """A Java DateTimeFormatter pattern as (letter, its run) for each run of a pattern letter
    and (None, text) for literal text (quoted, or not a letter)."""
    out: list[tuple[str | None, str]] = []
    i = 0
    while i < len(java_pattern):
        c = java_pattern[i]
        if c == "'":
            end = java_pattern.find("'", i + 1)
            if end < 0:
                raise ValueError(f"unclosed quote in {java_pattern!r}")
            out.append((None, java_pattern[i + 1:end] or "'"))
            i = end + 1
            continue
        run = i
        while run < len(java_pattern) and java_pattern[run] == c:
            run += 1
        out.append((c if c.isalpha() else None, java_pattern[i:run]))
        i = run
    return out


def strptime_format(java_pattern: str) -> str:
    """A Java DateTimeFormatter pattern (`yyyyMMdd`, `yyyy-MM-dd HH:mm:ss`, quoted literals) as a
    strptime format; ValueError for letters other than y/u M d H m s S."""
    out = []
    for letter, run in _tokens(java_pattern):
        if letter is None:
            out.append(run.replace("%", "%%"))
            continue
        width, year = len(run), letter in "yu"
        if letter not in _JAVA_LETTERS or (year and width not in (2, 4)) or (not year and letter != "S" and width > 2):
            raise ValueError(f"pattern letters {run!r} are not supported (use y, M, d, H, m, s, S)")
        out.append("%y" if year and width == 2 else _JAVA_LETTERS[letter])
    return "".join(out)


def _java_digits(java_pattern: str) -> re.Pattern:
    """The digits Java's formatter takes for each field (strptime takes one or two for any):
    `MM`, `dd`, `HH`, `yy` exactly two, `yyyy` four, `SSS` three, a single letter one or two."""
    parts = []
    for letter, run in _tokens(java_pattern):
        if letter is None:
            parts.append(re.escape(run))
        elif letter in "yu":
            parts.append(rf"\d{{{len(run)}}}")
        elif letter == "S" or len(run) == 2:
            parts.append(rf"\d{{{len(run)}}}")
        else:
            parts.append(r"\d{1,2}")
    return re.compile("".join(parts))


def validate_partition_expiration(options: CoreOptions) -> None:
    """InvalidOptionError for a timestamp formatter this module cannot apply."""
    formatter = options.get("partition.timestamp-formatter")
    if formatter is not None:
        try:
            strptime_format(formatter)
        except ValueError as exc:
            raise InvalidOptionError(f"invalid value {formatter!r} for table option "
                                     f"'partition.timestamp-formatter': {exc}") from None


def time_texts(values: list[Any], fields: list[DataField]) -> list[str | None]:
    """The partition's values as text for `partition_time`: strings as they are (a blank one is
    no null there, unlike in a directory name), others as Java prints them."""
    return [v if isinstance(v, str) else partition_value_str(v, f.type) for v, f in zip(values, fields)]


def partition_time(keys: list[str], values: list[str | None], pattern: str | None,
                   formatter: str | None) -> dt.datetime | None:
    """The time of a partition from its values (Java's PartitionTimeExtractor); None when they
    do not parse. Without a pattern only the first value is read, so a null in another column
    does not matter; a pattern reads every value as text (a blank string is ''), and a null
    anywhere gives no time (Java's extractor fails on it)."""
    if not values or values[0] is None or (pattern is not None and any(v is None for v in values)):
        return None
    text = values[0]
    if pattern is not None:
        text = pattern
        for key, value in zip(keys, values):
            text = text.replace(f"${key}", value)
    if formatter is None:
        m = _DEFAULT_TIME.fullmatch(text)
        if m is None:
            return None
        y, mo, d, h, mi, s, frac = m.groups()
        return _lenient(int(y), int(mo), int(d), int(h or 0) * 3600 + int(mi or 0) * 60 + int(s or 0),
                        int((frac or "0").ljust(6, "0")[:6]))
    try:
        fmt = strptime_format(formatter)
    except ValueError:  # a pattern Java's tables may hold that this module cannot apply
        return None
    letters = {letter for letter, _ in _tokens(formatter) if letter is not None}
    if "d" not in letters or not _java_digits(formatter).fullmatch(text):
        return None  # Java reads no date without a day, nor a field of other digits ('2020-1-5' for yyyy-MM-dd)
    try:
        value = dt.datetime.strptime(text, fmt)
    except ValueError:
        value = _smart(text, fmt)
    except re.error:  # a field given twice
        return None
    if value is not None and "%y" in fmt:  # Java's two-digit years are 2000-2099 (strptime's: 1969-2068)
        value = value.replace(year=2000 + value.year % 100)
    return value


def _lenient(year: int, month: int, day: int, seconds: int, micros: int) -> dt.datetime:
    """Java's default partition time formatter resolves leniently: a month, day, hour... past
    its range rolls over into the next (2024-02-30 is 2024-03-01, 2024-13-01 is 2025-01-01,
    24:00:00 the next day's midnight, day 0 the month before's last). Years before 1 or after
    9999 (beyond Python's datetime) are the earliest or latest time there is."""
    year, month0 = divmod(year * 12 + month - 1, 12)
    if year < 1:
        return dt.datetime.min
    if year > 9999:
        return dt.datetime.max
    try:
        return dt.datetime(year, month0 + 1, 1) + dt.timedelta(days=day - 1, seconds=seconds, microseconds=micros)
    except OverflowError:
        return dt.datetime.min if year < 5000 else dt.datetime.max


_DIRECTIVE = {"Y": r"\d{4}", "y": r"\d{2}", "m": r"\d{1,2}", "H": r"(?P<hour>\d{1,2})", "M": r"(?P<minute>\d{1,2})",
              "S": r"(?P<second>\d{1,2})", "f": r"(?P<fraction>\d{1,6})", "d": r"(?P<day>\d{1,2})"}


def _smart(text: str, fmt: str) -> dt.datetime | None:
    """A `partition.timestamp-formatter` resolves as Java's (SMART): 24:00 (minutes, seconds and
    fraction zero) is the next day's midnight (2020010124 for yyyyMMddHH), and a day of the
    month past the month's end (20240230, 20230229, 20240431) is the month's last day; any
    other value out of range does not parse (None)."""
    m = _directives(fmt).fullmatch(text)
    if m is None:
        return None
    hour = m.groupdict().get("hour")
    if hour is not None and int(hour) == 24 and all(int(m.groupdict().get(g) or 0) == 0
                                                    for g in ("minute", "second", "fraction")):
        midnight = f"{text[:m.start('hour')]}{0:0{len(hour)}d}{text[m.end('hour'):]}"
        try:
            value = dt.datetime.strptime(midnight, fmt)
        except ValueError:
            value = _past_month_end(midnight, fmt)
        return None if value is None else value + dt.timedelta(days=1)
    return _past_month_end(text, fmt)


def _directives(fmt: str) -> re.Pattern:
    parts, i = [], 0
    while i < len(fmt):
        if fmt[i] == "%" and i + 1 < len(fmt):
            parts.append("%" if fmt[i + 1] == "%" else _DIRECTIVE.get(fmt[i + 1], "(?!)"))
            i += 2
        else:
            parts.append(re.escape(fmt[i]))
            i += 1
    try:
        return re.compile("".join(parts))
    except re.error:  # a field given twice: parses nothing
        return re.compile("(?!)")


def _past_month_end(text: str, fmt: str) -> dt.datetime | None:
    """`_smart` for a day of the month past the month's end."""
    m = _directives(fmt).fullmatch(text)
    day = None if m is None else m.groupdict().get("day")
    if day is None or not 29 <= int(day) <= 31:
        return None
    for last in range(int(day) - 1, 27, -1):
        try:
            return dt.datetime.strptime(f"{text[:m.start('day')]}{last:0{len(day)}d}{text[m.end('day'):]}", fmt)
        except ValueError:
            continue
    return None


class PartitionTimeCheck:
    """`partition.timestamp-format.strict`: a write whose partition values do not parse with
    `partition.timestamp-pattern` / `-formatter` is refused (SchemaMismatchError naming the
    partition; nothing is committed), as Java's writers refuse it, so no partition is written
    that would never expire."""

    def __init__(self, schema: TableSchema):
        options = CoreOptions(schema.options)
        self.keys = list(schema.partition_keys)
        self.fields = schema.fields_of(self.keys)
        self.pattern = options.get("partition.timestamp-pattern")
        self.formatter = options.get("partition.timestamp-formatter")
        self.enabled = bool(options.get("partition.timestamp-format.strict") and self.keys
                            and (self.pattern is not None or self.formatter is not None))

    def check(self, values: list[Any], table_name: str) -> None:
        if not self.enabled:
            return
        text = [partition_value_str(v, f.type) for v, f in zip(values, self.fields)]
        if partition_time(self.keys, time_texts(values, self.fields), self.pattern, self.formatter) is None:
            shown = ", ".join(f"{k}={v}" for k, v in zip(self.keys, text))
            raise SchemaMismatchError(
                f"cannot write to {table_name}: partition {shown} does not match 'partition.timestamp-formatter' "
                f"({self.formatter}) / 'partition.timestamp-pattern' ({self.pattern}), and "
                "'partition.timestamp-format.strict' is true; check the partition column's values")


class PartitionExpiration:
    """Finds and drops the expired partitions of one table."""

    def __init__(self, file_io: FileIO, table_path: str, schema: TableSchema, ttl_ms: int | None = None,
                 branch: str = MAIN):
        self.file_io = file_io
        self.table_path = table_path
        self.schema = schema
        self.branch = branch
        self.options = CoreOptions(schema.options)
        self.ttl_ms = self.options.get("partition.expiration-time") if ttl_ms is None else ttl_ms

    def due(self, identifier: int | None = None, now: float | None = None) -> bool:
        """Whether this process checks the table now, after a commit with `identifier`
        (`partition.expiration-check-interval`, `end-input.check-partition-expire`)."""
        interval = self.options.get("partition.expiration-check-interval") / 1000
        now = time.monotonic() if now is None else now
        last = _LAST_CHECK.setdefault(branch_path(self.table_path, self.branch), now - random.uniform(0, interval))
        end_input = identifier == BATCH_COMMIT_IDENTIFIER and self.options.get("end-input.check-partition-expire")
        if interval and now <= last + interval and not end_input:
            return False
        _LAST_CHECK[branch_path(self.table_path, self.branch)] = now
        return True

    def expired(self, now: dt.datetime | None = None) -> list[tuple[bytes, dict[str, str]]]:
        """(serialized partition, its values as text) of the latest snapshot's expired
        partitions, oldest values first, at most `partition.expiration-max-num`."""
        if self.ttl_ms is None or not self.schema.partition_keys:
            return []
        try:
            threshold = (dt.datetime.now() if now is None else now) - dt.timedelta(milliseconds=self.ttl_ms)
        except OverflowError:  # a time to live reaching before the year 1 ('1000000 d'): nothing expires
            return []
        latest = SnapshotManager(self.file_io, branch_path(self.table_path, self.branch)).latest()
        if latest is None:
            return []
        scan = TableScan(self.file_io, self.table_path, self.schema)
        newest: dict[bytes, int] = {}
        for e in scan.live_entries(latest):
            created = e.file.creation_time if e.file.creation_time is not None else 0
            newest[e.partition] = max(newest.get(e.partition, 0), created)
        keys = list(self.schema.partition_keys)
        fields = self.schema.fields_of(keys)
        by_update_time = self.options.get("partition.expiration-strategy") == "update-time"
        out = []
        for partition, created in newest.items():
            values = time_texts(scan.partition_values(partition), fields)  # a blank string as it is, as Java shows it
            if by_update_time:
                when: dt.datetime | None = _EPOCH + dt.timedelta(milliseconds=created)
            else:
                when = partition_time(keys, values, self.options.get("partition.timestamp-pattern"),
                                      self.options.get("partition.timestamp-formatter"))
                if when is None:
                    log.warning("partition %s of %s has no time in its values; it never expires (drop it by "
                                "hand, or use 'partition.expiration-strategy' = 'update-time')",
                                dict(zip(keys, values)), self.table_path)
            if when is not None and when < threshold:
                text = [self.options.partition_default_name if v is None else v for v in values]
                out.append((partition, dict(zip(keys, text))))
        out.sort(key=lambda p: ",".join(p[1].values()))
        return out[:self.options.get("partition.expiration-max-num")]

    def expire(self, commit_user: str, identifier: int, now: dt.datetime | None = None) -> list[dict[str, str]]:
        """Drop the expired partitions (OVERWRITE commits by `commit_user`); their values."""
        doomed = self.expired(now)
        if not doomed:
            return []
        from .commit import FileStoreCommit  # commits run this module after them
        batch = self.options.get("partition.expiration-batch-size") or len(doomed)
        committer = FileStoreCommit(self.file_io, self.table_path, self.schema, branch=self.branch)
        for start in range(0, len(doomed), batch):
            part = doomed[start:start + batch]
            committer.commit([], commit_user, identifier, overwrite=True,
                             overwrite_partitions=[p for p, _ in part], maintain=False)
            log.info("expired partitions %s of %s", [values for _, values in part], self.table_path)
        return [values for _, values in doomed]


def expire_partitions(file_io: FileIO, table_path: str, schema: TableSchema, commit_user: str,
                      identifier: int, branch: str = MAIN) -> list[dict[str, Any]]:
    """After a commit: drop expired partitions when a check is due."""
    expiration = PartitionExpiration(file_io, table_path, schema, branch=branch)
    if expiration.ttl_ms is None or not expiration.due(identifier):
        return []
    return expiration.expire(commit_user, identifier)
