"""Table maintenance after each commit, in Java's order (`TableCommitImpl.maintain`):
automatic tags, tags past their retention, expired partitions, expired consumers, then
snapshot expiration; after a batch commit with `tag.automatic-creation` = batch then the batch
tag, as Java's engines create it once the batch's commit is done (`TagBatchCreation`).

Only the batch tag is made for `write-only` tables. Maintenance never fails a commit: the
snapshot is already published, so errors are logged and the next commit tries again.
"""
from __future__ import annotations

import logging
import time
from typing import Any, Callable

from .branches import MAIN, branch_path
from .consumers import CONSUMER_PREFIX, ConsumerManager
from .expire import SnapshotExpiration
from .fileio import FileIO
from .options import CoreOptions
from .partition_expire import expire_partitions
from .schema import TableSchema
from .snapshot import BATCH_COMMIT_IDENTIFIER
from .tag_creation import TagAutoCreation, TagBatchCreation
from .tag_deletion import TagDeletion

log = logging.getLogger(__name__)


def expire_consumers(file_io: FileIO, table_path: str, older_than_ms: int) -> list[str]:
    """Remove consumer files (of the branch whose snapshots live at `table_path`) not updated since `older_than_ms` (`consumer.expiration-time`),
    so an abandoned streaming reader stops holding snapshots back."""
    consumers = ConsumerManager(file_io, table_path)
    expired = []
    for status in file_io.list_status(consumers.dir):
        name = status.path.rsplit("/", 1)[-1]
        if name.startswith(CONSUMER_PREFIX) and not status.is_dir and status.mtime_ms < older_than_ms:
            consumers.delete(name[len(CONSUMER_PREFIX):])
            expired.append(name[len(CONSUMER_PREFIX):])
    return expired


def after_commit(file_io: FileIO, table_path: str, schema: TableSchema, latest: int | None = None,
                 commit_user: str | None = None, identifier: int | None = None, branch: str = MAIN) -> None:
    """Run the table's (or `branch`'s) automatic maintenance; called once after every
    successful commit (`latest`: the id it published, by `commit_user` with `identifier`, who
    also drops expired partitions, as in Java)."""
    options = CoreOptions(schema.options)
    steps = [] if options.get("write-only") else _maintenance(file_io, table_path, schema, options, latest,
                                                               commit_user, identifier, branch)
    if identifier == BATCH_COMMIT_IDENTIFIER and options.get("tag.automatic-creation") == "batch":
        steps.append(("batch tag creation", lambda: TagBatchCreation(file_io, table_path, schema, branch).run()))
    for what, step in steps:
        try:
            step()
        except Exception:  # noqa: BLE001 - the commit succeeded; maintenance retries next time
            log.warning("%s of %s failed after a successful commit; it runs again after the next commit",
                        what, table_path, exc_info=True)


def _maintenance(file_io: FileIO, table_path: str, schema: TableSchema, options: CoreOptions, latest: int | None,
                 commit_user: str | None, identifier: int | None, branch: str) -> list[tuple[str, Callable[[], Any]]]:
    """The steps a table that is not `write-only` runs after a commit, in Java's order."""
    steps = [("automatic tag creation", lambda: TagAutoCreation(file_io, table_path, schema, branch).run())]
    if options.get("tag.time-expire-enabled"):
        steps.append(("tag expiration", lambda: TagDeletion(file_io, table_path, schema, branch).expire_by_time()))
    if commit_user is not None and identifier is not None:
        steps.append(("partition expiration", lambda: expire_partitions(file_io, table_path, schema, commit_user,
                                                                        identifier, branch)))
    consumer_ttl = options.get("consumer.expiration-time")
    if consumer_ttl is not None:
        steps.append(("consumer expiration", lambda: expire_consumers(
            file_io, branch_path(table_path, branch), int(time.time() * 1000) - consumer_ttl)))
    steps.append(("snapshot expiration",
                  lambda: SnapshotExpiration(file_io, table_path, schema, branch).expire(latest=latest)))
    return steps
