"""Whether the micro-batches a streaming query's checkpoint finished are in the table it writes.

A Spark checkpoint resumes after its newest finished batch (`commits/<batch id>`), wherever it
is pointed: at another table, or at a table dropped and created again, the records its earlier
batches read (`offsets/<batch id>`) are never written there, and nothing says so. The sink
commits every batch under the query's commit user (by default Spark's query id, the
checkpoint's `metadata`) with the batch id as commitIdentifier, so a table the checkpoint wrote
holds a snapshot of that user, or a record of one that expired (commit_users.py). Batches that
wrote no row (every record filtered out or set aside) commit nothing, though, so a table
without such a commit is refused only when it was evidently not there: it does not exist, or
(where the table is made before the query's first batch runs, as `ingest` does; a Data Source
writer makes it while batch 0 runs) it was created after the checkpoint's oldest kept batch ran.
"""
from __future__ import annotations

import json
from dataclasses import dataclass

from paimon_streaming.branches import branch_path
from paimon_streaming.commit_users import CommitUserRecords
from paimon_streaming.errors import InvalidOptionError
from paimon_streaming.fileio import FileIO
from paimon_streaming.table import Table


@dataclass(frozen=True)
class CheckpointBatches:
    """What a Spark checkpoint tells of its finished micro-batches."""

    location: str
    query_id: str | None  # Spark's query id (`metadata`)
    first: int | None  # the oldest finished batch its log keeps (Spark purges old ones)
    last: int | None  # the newest finished batch: the query resumes after it
    first_ran_ms: int | None  # when `first` was planned (its offsets' batchTimestampMs)

    @staticmethod
    def read(location: str) -> "CheckpointBatches":
        file_io, path = FileIO.for_path(location)
        done = sorted(int(n) for n in _names(file_io, f"{path}/commits") if n.isdigit())
        if not done:
            return CheckpointBatches(location, None, None, None, None)
        return CheckpointBatches(location, _json_field(file_io.read_bytes_if_present(f"{path}/metadata"), "id"),
                                 done[0], done[-1],
                                 _json_field(file_io.read_bytes_if_present(f"{path}/offsets/{done[0]}"),
                                             "batchTimestampMs"))


def _names(file_io: FileIO, path: str) -> list[str]:
    return file_io.list_names(path) if file_io.is_dir(path) else []


def _json_field(data: bytes | None, key: str):
    """`key` of the first JSON object line of a checkpoint file holding it (None: none does)."""
    for line in (data or b"").decode("utf-8", "replace").splitlines():
        try:
            obj = json.loads(line)
        except ValueError:
            continue
        if isinstance(obj, dict) and key in obj:
            return obj[key]
    return None


def check_checkpoint_target(checkpoint: str, table: Table | None, name: str, fix: str,
                            made_before_batches: bool = False) -> None:
    """InvalidOptionError, before anything is written, when the batches `checkpoint` finished
    are not in table `name` (None: it does not exist); `fix`: what to do, as the caller's user
    says it. `made_before_batches`: the query made its table before its first batch ran, so a
    table created later, holding no commit of the checkpoint's query id, is not the one it wrote.
    A checkpoint without finished batches fits any table."""
    batches = CheckpointBatches.read(checkpoint)
    if batches.last is None:
        return
    user = batches.query_id
    if table is None:
        reason = "the table does not exist (it was dropped, or this checkpoint wrote another table)"
    elif not made_before_batches or (user is not None and _committed_as(table, user)):
        return
    else:
        created = table.schema_manager.schema(table.schema_manager.schema_ids()[0]).time_millis
        if batches.first_ran_ms is None or created <= int(batches.first_ran_ms):
            return  # it was there: those batches may have written no row
        reason = (f"the table was created after batch {batches.first} ran, and holds no commit of commit user "
                  f"{user!r} (it was created again, or this checkpoint wrote another table)")
    raise InvalidOptionError(
        f"checkpoint {batches.location} finished micro-batches up to {batches.last} and resumes after it, but "
        f"their records are not in table {name}: {reason}; resuming would skip every record those batches read. "
        f"{fix}. Nothing was written")


def _committed_as(table: Table, user: str) -> bool:
    """Whether `user` committed to the table: a live snapshot, or one expiration recorded."""
    if table.snapshot_manager.latest_of_user(user) is not None:
        return True
    return bool(CommitUserRecords(table.file_io, branch_path(table.path, table.branch)).recorded(user).ranges)
