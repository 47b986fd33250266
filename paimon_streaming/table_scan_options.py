"""Scan options kept in a table's own options, which steer every batch read of it.

Java's batch reads take `scan.*` and `incremental-*` from the table's options, a read's own
(dynamic) options overriding them: a table altered with `scan.snapshot-id` = 1 reads as
snapshot 1 everywhere, one with `incremental-between` = '1,2' reads as that incremental query
(probed against Java 1.4.2, tests/test_table_scan_options.py). So do ours: `Table.to_arrow`
and Spark batch reads without time travel or an incremental query of their own take them:
`scan.snapshot-id`, `scan.tag-name`, `scan.timestamp-millis` / `scan.timestamp`, `scan.mode`
(`compacted-full`; a start mode is answered with the snapshot it starts from), and the
incremental keys. Ones Java's batch reads honour that are not implemented here
(`scan.file-creation-time-millis`, `scan.watermark`, `scan.mode` = `from-file-creation-time`)
make those reads refuse, naming the option, rather than answer with every file.
"""
from __future__ import annotations

from dataclasses import dataclass, replace
from typing import Mapping

from . import full_compaction
from .errors import InvalidOptionError, UnsupportedOperationError
from .incremental import IncrementalRange, incremental_query
from .option_keys import with_fallback_keys
from .options import CoreOptions
from .snapshot import Snapshot, SnapshotManager
from .streaming_scan import UNIMPLEMENTED_SCAN_OPTIONS, check_start_options
from .tags import TagManager
from .time_travel import parse_local_timestamp, snapshot_at

_LATEST_MODES = ("default", "latest", "latest-full", "full")
_SNAPSHOT_MODES = ("from-snapshot", "from-snapshot-full")


@dataclass(frozen=True)
class TableScanOptions:
    """What a batch read without options of its own reads, by the table's options."""
    snapshot_id: int | None = None
    tag: str | None = None
    timestamp_millis: int | None = None
    compacted_full: bool = False
    incremental: IncrementalRange | None = None
    version: str | None = None  # `scan.version`, until `resolved` against the table's tags

    def resolved(self, tags: TagManager) -> "TableScanOptions":
        """`scan.version` as Java reads it: a tag of that name, else a snapshot id."""
        if self.version is None:
            return self
        if tags.exists(self.version):
            return replace(self, tag=self.version, version=None)
        if self.version.isdigit():
            return replace(self, snapshot_id=int(self.version), version=None)
        raise InvalidOptionError(f"table option 'scan.version' = {self.version!r} is neither a tag of "
                                 f"{tags.table_path} nor a snapshot id")

    @staticmethod
    def of(table_options: Mapping[str, str], table_name: str) -> "TableScanOptions":
        opts = with_fallback_keys({k.lower(): str(v).strip() for k, v in table_options.items() if str(v).strip()})
        for key, what in UNIMPLEMENTED_SCAN_OPTIONS.items():
            if key in opts:
                raise UnsupportedOperationError(
                    f"cannot read {table_name} as a batch: its option '{key}' = '{opts[key]}' makes Java's batch "
                    f"reads of it read {what}, which paimon-streaming does not implement; remove the option "
                    "or read with Apache Paimon")
        check_start_options(opts, table_name)
        mode = opts.get("scan.mode", "default").lower()
        if mode not in _LATEST_MODES + _SNAPSHOT_MODES + ("from-timestamp", "compacted-full", "incremental"):
            raise UnsupportedOperationError(f"cannot read {table_name} as a batch: its option 'scan.mode' = "
                                            f"'{mode}' is not implemented by paimon-streaming")
        # check_start_options refused a start mode without its option, and more than one option
        incremental = incremental_query(opts)
        if incremental is not None:
            return TableScanOptions(incremental=incremental)
        timestamp = opts.get("scan.timestamp-millis")
        if timestamp is None and "scan.timestamp" in opts:
            timestamp = str(parse_local_timestamp(opts["scan.timestamp"], "scan.timestamp"))
        snapshot_id = _integer(opts.get("scan.snapshot-id"), "scan.snapshot-id", table_name)
        timestamp_millis = _integer(timestamp, "scan.timestamp-millis", table_name)
        tag = opts.get("scan.tag-name")
        version = opts.get("scan.version")
        return TableScanOptions(snapshot_id, tag, timestamp_millis, compacted_full=mode == "compacted-full",
                                version=version)

    def snapshot(self, snapshots: SnapshotManager, tags: TagManager, options: CoreOptions) -> Snapshot | None:
        """The snapshot such a read sees (not for an incremental query)."""
        if self.version is not None:
            return self.resolved(tags).snapshot(snapshots, tags, options)
        if self.compacted_full:
            compacted = full_compaction.latest_full_compaction(
                snapshots, options.get(full_compaction.DELTA_COMMITS), options.get("changelog-producer"))
            if compacted is not None:
                return snapshots.snapshot(compacted)
        return snapshot_at(snapshots, tags, self.snapshot_id, self.tag, self.timestamp_millis)


def _integer(text: str | None, key: str, table_name: str) -> int | None:
    if text is None:
        return None
    try:
        return int(text)
    except ValueError:
        raise InvalidOptionError(f"{table_name}: table option '{key}' = {text!r} is not an integer") from None
