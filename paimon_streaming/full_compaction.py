"""Scheduled full compaction: the table option `full-compaction.delta-commits` (N), as Paimon's
writers honour it.

A long stream of updates grows its sorted runs below the top level without bound (each update
row is rewritten about log2(runs / batch) times by universal compaction, and nothing drains the
runs into the top level while the top holds most rows). Paimon's remedy is a full compaction
every N commits, which merges each bucket into one sorted run at the top level and applies its
deletion vectors.

When a write is due (`is_due`):
* streaming writes, whose commits carry an identifier (Spark's batch id), are due when the
  identifier is a multiple of N: 0, N, 2N, ... That is the identifier Paimon's readers take
  for a full compaction (FullCompactedStartingScanner.isFullCompactedIdentifier, behind
  `scan.mode = compacted-full`), and the one Flink's writer compacts at (its checkpoint ids);
* batch writes (no identifier: Java's Long.MAX_VALUE) are due at every commit, as Java's;
* N <= 0, or `write-only` tables (whose compaction is someone else's job), are never due.

A due write fully compacts the buckets it writes, and every bucket its commit user wrote since
the previous due batch (`buckets_written_since`, read from the user's snapshots, so a restart
between two due batches forgets none), in the same commit: Flink's writer does the same
(GlobalFullCompactionSinkWrite), so a bucket that stops receiving rows is still compacted once.
"""
from __future__ import annotations

from .errors import InvalidOptionError
from .manifest.entries import ADD
from .options import CoreOptions
from .scan import TableScan
from .snapshot import BATCH_COMMIT_IDENTIFIER, COMPACT, SnapshotManager

DELTA_COMMITS = "full-compaction.delta-commits"


def delta_commits(options: CoreOptions) -> int | None:
    """N, or None when full compaction is not scheduled."""
    n = options.get(DELTA_COMMITS)
    if n is None or n <= 0 or options.get("write-only"):
        return None
    return n


def is_due(options: CoreOptions, identifier: int) -> bool:
    """Whether the commit with `identifier` fully compacts what it writes (see the module doc)."""
    n = delta_commits(options)
    if n is None:
        return False
    return is_full_compacted_identifier(identifier, n)


def is_full_compacted_identifier(identifier: int, n: int) -> bool:
    """Paimon's mark of a full compaction's commit (readers of `compacted-full` look for it)."""
    return identifier == BATCH_COMMIT_IDENTIFIER or identifier % n == 0


def latest_full_compaction(snapshots: SnapshotManager, delta_commits: int | None,
                           changelog_producer: str) -> int | None:
    """The snapshot a `scan.mode = compacted-full` read starts from, as Java's starting
    scanners pick it: the newest COMPACT snapshot whose identifier marks a full compaction when
    the table schedules them (`full-compaction.delta-commits`, or the `full-compaction`
    changelog producer, N = 1), else the newest COMPACT snapshot; None when there is none
    (the read then starts from the latest snapshot)."""
    scheduled = delta_commits is not None or changelog_producer == "full-compaction"
    n = max(delta_commits or 1, 1)
    for snap in snapshots.iter_descending():
        if snap.commit_kind == COMPACT and (not scheduled or is_full_compacted_identifier(snap.commit_identifier, n)):
            return snap.id
    return None


def buckets_written_since(snapshots: SnapshotManager, scan: TableScan, commit_user: str,
                          identifier: int, n: int) -> set[tuple[bytes, int]]:
    """The (partition, bucket)s `commit_user` added files to in its commits after the previous
    due identifier (`identifier - n`) and before `identifier`. Snapshots are read newest first
    until one of the user's carries an identifier at or below that one (or they run out:
    expired snapshots are not read, their buckets were compacted by a due batch or are lost
    to this schedule only)."""
    previous_due = identifier - n
    written: set[tuple[bytes, int]] = set()
    for snap in snapshots.iter_descending():
        if snap.commit_user != commit_user or snap.commit_identifier == BATCH_COMMIT_IDENTIFIER:
            continue
        if snap.commit_identifier <= previous_due:
            break
        if snap.commit_identifier < identifier and snap.commit_kind != COMPACT:
            written.update((e.partition, e.bucket) for e in scan.delta_entries(snap) if e.kind == ADD)
    return written


def validate_schedule(options: CoreOptions, primary_keys: list[str] | tuple[str, ...]) -> None:
    """Refuse what Paimon refuses (SchemaValidation) and what this writer cannot compact."""
    if options.raw.get(DELTA_COMMITS) is None:
        return
    if options.get("changelog-producer") == "lookup":
        raise InvalidOptionError(
            f"'{DELTA_COMMITS}' is incompatible with 'changelog-producer' = 'lookup' (Paimon refuses it too): "
            f"remove '{DELTA_COMMITS}', or produce the changelog with 'input'")
    if not primary_keys:
        raise InvalidOptionError(
            f"'{DELTA_COMMITS}' schedules full compactions of primary-key tables; append tables merge their "
            "small files as they gather ('compaction.min.file-num'), so it would be ignored: remove it")
