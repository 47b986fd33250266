"""Record-level expiration of primary-key tables (`record-level.expire-time` with
`record-level.time-field`), as Java's RecordLevelExpire (Paimon 1.4).

Compaction drops every row whose time field is older than now minus the expire time, before
merging (a key whose expired newest row is dropped keeps an older row the compaction did not
drop, as in Java), and rewrites rather than moves up a file whose statistics say it holds such
rows. Rows leave the table only as compaction reaches their files: there is no guarantee of
when, as in Java. The time field is INT (seconds), BIGINT (seconds, or milliseconds from 1e12
on), TIMESTAMP or TIMESTAMP_LTZ; a null time never expires.
"""
from __future__ import annotations

import time

import pyarrow as pa
import pyarrow.compute as pc

from .errors import InvalidOptionError
from .manifest import DataFileMeta
from .options import CoreOptions
from .scan import file_stats
from .schema import TableSchema

EXPIRE_TIME = "record-level.expire-time"
TIME_FIELD = "record-level.time-field"
_TYPES = ("INT", "BIGINT", "TIMESTAMP", "TIMESTAMP_LTZ")
_MILLIS_FROM = 1_000_000_000_000  # a BIGINT time at or above this is in milliseconds (Java's rule)


def validate_record_expiry(schema: TableSchema) -> None:
    """InvalidOptionError when the options name no usable time field."""
    options = CoreOptions(schema.options)
    if options.get(EXPIRE_TIME) is None:
        return
    name = options.get(TIME_FIELD)
    if not name:
        raise InvalidOptionError(f"'{EXPIRE_TIME}' needs '{TIME_FIELD}': the column whose time expires a row")
    if name not in schema.field_names:
        raise InvalidOptionError(f"'{TIME_FIELD}' column {name!r} is not in the schema")
    root = schema.field(name).type.root
    if root not in _TYPES:
        raise InvalidOptionError(f"'{TIME_FIELD}' column {name!r} is {root}; use INT, BIGINT, TIMESTAMP or "
                                 "TIMESTAMP_LTZ")


def _seconds(values: pa.Array | pa.ChunkedArray, root: str) -> pa.Array:
    """Epoch seconds of a time column (null stays null)."""
    if pa.types.is_timestamp(values.type):
        per_second = {"s": 1, "ms": 1000, "us": 1_000_000, "ns": 1_000_000_000}[values.type.unit]
        return pc.divide(values.cast(pa.int64()), per_second)  # integer division truncates, as Java's
    ints = values.cast(pa.int64())
    if root == "BIGINT":
        return pc.if_else(pc.greater_equal(ints, _MILLIS_FROM), pc.divide(ints, 1000), ints)
    return ints


class RecordExpiry:
    """What expires now in one table: rows to drop, files to rewrite."""

    def __init__(self, schema: TableSchema, ttl_ms: int, field: str):
        self.schema = schema
        self.field = field
        self.root = schema.field(field).type.root
        self.ttl_s = ttl_ms // 1000

    @staticmethod
    def of(schema: TableSchema) -> "RecordExpiry | None":
        options = CoreOptions(schema.options)
        ttl = options.get(EXPIRE_TIME)
        if ttl is None or not schema.primary_keys:
            return None
        return RecordExpiry(schema, ttl, options.get(TIME_FIELD))

    def _threshold(self) -> int:
        return int(time.time()) - self.ttl_s

    def live(self, rows: pa.Table) -> pa.Table:
        """`rows` without the expired ones."""
        if self.field not in rows.column_names or not rows.num_rows:
            return rows
        expired = pc.fill_null(pc.less(_seconds(rows.column(self.field), self.root), self._threshold()), False)
        return rows.filter(pc.invert(expired)) if pc.any(expired).as_py() else rows

    def holds_expired(self, f: DataFileMeta, file_schema: TableSchema) -> bool:
        """Whether a file's statistics say it holds an expired row (no stats: assume not, as Java)."""
        stats = file_stats(f, file_schema, self.schema, {self.field})
        low = stats.get(self.field, (None,))[0]
        if low is None:
            return False
        seconds = _seconds(pa.array([low], pa.timestamp("us") if self.root.startswith("TIMESTAMP") else pa.int64()),
                           self.root)[0].as_py()
        return seconds < self._threshold()
