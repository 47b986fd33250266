"""Worker processes for the concurrent-writer tests (importable by multiprocessing's spawn).

Writer w commits batches b = 0, 1, ... of ROWS rows under commit user `writer-w` and
identifier b. Appends use ids w*1_000_000 + b*ROWS + i (every batch new rows); upserts reuse
ids w*1_000_000 + i (every batch replaces the writer's rows). Either way any state of the
table says exactly which batches landed, and the reader checks every snapshot against that.
"""
from __future__ import annotations

import time
import traceback

import pyarrow as pa

ROWS = 5
SCHEMA = pa.schema([("id", pa.int64(), False), ("v", pa.string()), ("w", pa.int32(), False)])


def batch_of(writer: int, b: int, upsert: bool = False) -> pa.Table:
    ids = [writer * 1_000_000 + (0 if upsert else b * ROWS) + i for i in range(ROWS)]
    return pa.table({"id": ids, "v": [f"w{writer}b{b}"] * ROWS, "w": [writer] * ROWS}, schema=SCHEMA)


def write_batches(location: str, writer: int, batches: int, upsert: bool, outcomes, errors) -> None:
    """Commit `batches` batches; errors go to the queue as text.

    A deletion-vector write is APPEND then COMPACT; when its COMPACT, and the redo of it,
    lose to concurrent compactions (CompactionNotCommittedError) the batch's data is committed
    and the writer finishes the compaction the way the sink does after a restart
    (`Table.compact` with the batch's user and identifier), which is counted as a conflict.
    """
    import paimon_streaming as ps
    from paimon_streaming.errors import CommitConflictError, CompactionNotCommittedError
    try:
        table = ps.Table.open(location)
        user = f"writer-{writer}"
        for b in range(batches):
            try:
                table.write_arrow(batch_of(writer, b, upsert), commit_user=user, commit_identifier=b)
            except (CommitConflictError, CompactionNotCommittedError):
                outcomes.put("conflict")
                if not table.committed_identifiers(user, [b]):
                    raise
                _finish_compaction(table, user, b)
    except Exception:  # reported to the parent, which fails the test with it
        errors.put(f"writer {writer}: {traceback.format_exc()}")


def _finish_compaction(table, user: str, identifier: int) -> None:
    from paimon_streaming.errors import CommitConflictError
    for _ in range(20):
        try:
            table.compact(commit_user=user, commit_identifier=identifier)
            return
        except CommitConflictError:
            time.sleep(0.05)
    raise CommitConflictError(f"{user} could not finish the compaction of batch {identifier}")


def compact_repeatedly(location: str, rounds: int, outcomes, errors) -> None:
    """Run compactions while writers commit; count the ones that lost to a conflict."""
    import paimon_streaming as ps
    from paimon_streaming.errors import CommitConflictError
    try:
        table = ps.Table.open(location)
        for _ in range(rounds):
            try:
                table.compact()
                outcomes.put("ok")
            except CommitConflictError:
                outcomes.put("conflict")
    except Exception:
        errors.put(f"compactor: {traceback.format_exc()}")


def check_snapshot(table, snapshot, upsert: bool = False) -> str | None:
    """None if `snapshot` reads as complete batches: appends — per writer the batches
    0..k-1, each whole, and as many rows as totalRecordCount; upserts — per writer its ROWS
    keys once each, all from one batch."""
    rows = table.to_arrow(snapshot_id=snapshot.id)
    if upsert:
        by_key: dict[int, list[tuple[int, str]]] = {}
        for r in rows.to_pylist():
            by_key.setdefault(r["w"], []).append((r["id"], r["v"]))
        for w, pairs in by_key.items():
            ids, versions = [p[0] for p in pairs], {p[1] for p in pairs}
            if len(ids) != len(set(ids)):
                return f"snapshot {snapshot.id}: a key of writer {w} is live twice: {sorted(pairs)}"
            if len(ids) != ROWS or len(versions) != 1:
                return f"snapshot {snapshot.id}: writer {w} shows a partial batch: {sorted(pairs)}"
        return None
    by_writer: dict[int, dict[int, set[int]]] = {}
    for r in rows.to_pylist():
        b = (r["id"] % 1_000_000) // ROWS
        by_writer.setdefault(r["w"], {}).setdefault(b, set()).add(r["id"])
    for w, batches in by_writer.items():
        if sorted(batches) != list(range(len(batches))):
            return f"snapshot {snapshot.id}: writer {w} batches {sorted(batches)} are not a prefix"
        if any(len(ids) != ROWS for ids in batches.values()):
            return f"snapshot {snapshot.id}: writer {w} has an incomplete batch"
    if not table.options.deletion_vectors and rows.num_rows != snapshot.total_record_count:
        return f"snapshot {snapshot.id}: {rows.num_rows} rows but totalRecordCount {snapshot.total_record_count}"
    return None


def read_continuously(location: str, upsert: bool, ready, stop, seen, errors) -> None:
    """Read each new snapshot until `stop` is set; report how many were checked. `ready` is set
    once the table is open, so that writers start only then (on a loaded machine a reader still
    importing could otherwise see none of their snapshots)."""
    import paimon_streaming as ps
    try:
        table = ps.Table.open(location)
        ready.set()
        checked = 0
        last = None
        while not stop.is_set():
            snap = table.latest_snapshot()
            if snap is not None and snap.id != last:
                problem = check_snapshot(table, snap, upsert)
                if problem:
                    errors.put(f"reader: {problem}")
                    return
                checked += 1
                last = snap.id
            else:
                time.sleep(0.01)
        seen.put(checked)
    except Exception:
        errors.put(f"reader: {traceback.format_exc()}")


def write_and_compact(location: str, batches: int, errors) -> None:
    """Append batches 0..batches-1 (writer 0's rows, `batch_of`), each followed by a full
    compaction, on a table whose options expire snapshots after every commit: the files a
    stream planned are rewritten and deleted under it (tests/test_race_hunt.py)."""
    import paimon_streaming as ps
    try:
        table = ps.Table.open(location)
        for b in range(batches):
            table.write_arrow(batch_of(0, b), commit_user="writer-0", commit_identifier=b)
            table.compact(full=True)
    except Exception:
        errors.put(f"writer: {traceback.format_exc()}")
