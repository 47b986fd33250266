"""Worker processes for the serializable-writes test (importable by multiprocessing's spawn).

Writer w commits batches b = 0, 1, ... under commit user `w<w>` and identifier b. Batch (w, b)
upserts and deletes keys drawn from one small key space shared by every writer (all in one
bucket), so concurrent batches overlap key by key. `batch_of` is deterministic: the test
rebuilds each batch to apply whole commits to its model in snapshot order.
"""
from __future__ import annotations

import random
import time
import traceback

import pyarrow as pa

KEYS = 40
ROWS = 12
SCHEMA = pa.schema([pa.field("k", pa.int64(), False), ("v", pa.string()), ("w", pa.int32()), ("b", pa.int32())])


def batch_of(writer: int, b: int) -> pa.Table:
    """Rows of batch (writer, b) with a `_kind` column (+I or -D); each key once."""
    rng = random.Random(writer * 10_000 + b)
    keys = rng.sample(range(KEYS), ROWS)
    kinds = ["-D" if rng.random() < 0.2 else "+I" for _ in keys]
    return pa.table({"k": pa.array(keys, pa.int64()), "v": [f"w{writer}b{b}"] * ROWS,
                     "w": pa.array([writer] * ROWS, pa.int32()), "b": pa.array([b] * ROWS, pa.int32()),
                     "_kind": kinds})


def write_batches(location: str, writer: int, batches: int, errors) -> None:
    """Commit `batches` batches through `Table.write_arrow` (which writes a batch again when
    it races another writer of the bucket). A DV write whose COMPACT lost to the compactor
    has its data committed; its compaction is finished as the sink does after a restart."""
    import paimon_streaming as ps
    from paimon_streaming.errors import CommitConflictError
    try:
        table = ps.Table.open(location)
        user = f"w{writer}"
        for b in range(batches):
            try:
                table.write_arrow(batch_of(writer, b), commit_user=user, commit_identifier=b,
                                  row_kind_column="_kind")
            except CommitConflictError:
                if not table.committed_identifiers(user, [b]):
                    raise
                table.compact(commit_user=user, commit_identifier=b)  # plans again while it loses
    except Exception:  # reported to the parent, which fails the test with it
        errors.put(f"writer {writer}: {traceback.format_exc()}")


def compact_repeatedly(location: str, stop, errors) -> None:
    """Compaction racing the writers (full every third round); lost races are expected."""
    import paimon_streaming as ps
    from paimon_streaming.errors import CommitConflictError
    try:
        table = ps.Table.open(location)
        round_ = 0
        while not stop.is_set():
            try:
                table.compact(full=round_ % 3 == 2)
            except CommitConflictError:
                pass
            round_ += 1
            time.sleep(0.05)
    except Exception:
        errors.put(f"compactor: {traceback.format_exc()}")

