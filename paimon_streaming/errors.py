"""Exception classes. Every error names what went wrong and where, so a user can act on it."""


class PaimonError(Exception):
    """Base class of every error raised by paimon_streaming."""


class SchemaMismatchError(PaimonError, ValueError):
    """Input data does not fit the table schema (missing, unknown or incompatible column)."""


class NullKeyError(PaimonError, ValueError):
    """A primary-key (or bucket-key) column holds a null."""


class InvalidOptionError(PaimonError, ValueError):
    """A table option has an invalid value or an unknown combination."""


class UnsupportedTypeError(PaimonError, TypeError):
    """A data type cannot be mapped between Paimon and Arrow."""


class TableNotFoundError(PaimonError, LookupError):
    """The table (or database) does not exist."""


class TableAlreadyExistsError(PaimonError):
    """create_table/create_database was asked for an existing object."""


class SnapshotNotFoundError(PaimonError, LookupError):
    """A snapshot (or tag) asked for does not exist (expired, never written)."""


class CommitConflictError(PaimonError):
    """A concurrent commit changed files this commit depends on; the commit was not applied."""


class CommitOutcomeUnknownError(PaimonError):
    """The store failed the last write of a commit's snapshot in a way that may have applied it
    (a timeout, a reset), and the retries ran out before the snapshot id was taken: the commit
    may still land, so its files are kept. Commit the batch again under the same commit user
    and identifier: the exactly-once check finds it if it landed."""


class CorruptFileError(PaimonError):
    """A metadata or index file cannot be decoded or fails its checksum."""


class MissingFileError(CorruptFileError, FileNotFoundError):
    """A file the table's metadata references does not exist (still a FileNotFoundError)."""


class InvalidNameError(PaimonError, ValueError):
    """A database or table name cannot be used as a directory name or clashes with system tables."""


class SnapshotExpiredError(SnapshotNotFoundError):
    """A streaming reader needs a snapshot that snapshot expiration has already removed."""


class TagNotFoundError(SnapshotNotFoundError):
    """A tag asked for does not exist."""


class TagAlreadyExistsError(PaimonError):
    """create_tag was asked for a name that is already taken."""


class BranchAlreadyExistsError(PaimonError):
    """create_branch was asked for a name that is already taken."""


class InvalidTagNameError(PaimonError, ValueError):
    """A tag name is blank, purely numeric, or holds a path separator or control character."""


class StoreConfigurationError(PaimonError):
    """An object store refused a request or lacks what it needs (credentials, a client library)."""


class S3ConfigurationError(StoreConfigurationError):
    """Settings an S3 request needs (credentials for a conditional PUT) are missing."""


class CommitIdentifierError(PaimonError, ValueError):
    """A commit identifier is below one its commit user already committed, and was never committed
    itself: a user's identifiers must increase, or replays would be applied twice."""


class DuplicateCommitError(CommitIdentifierError):
    """Another attempt of the same batch (a zombie and its retry, under one commit user) committed
    its identifier, or a newer one, while this attempt was writing: this one commits nothing.
    `replay`: the other attempt committed this identifier (not a newer one), in `snapshot_id`
    (None once expired)."""

    def __init__(self, message: str, replay: bool, snapshot_id: int | None):
        super().__init__(message)
        self.replay = replay
        self.snapshot_id = snapshot_id


class CompactionNotCommittedError(PaimonError):
    """A write committed its data, in snapshot `snapshot_id`, but not the compaction it commits
    after it (the cause is chained): do not write the batch again. On tables with lookup
    compaction (deletion vectors) readers see the batch once the next write or `Table.compact`
    compacts it."""

    def __init__(self, message: str, snapshot_id: int):
        super().__init__(message)
        self.snapshot_id = snapshot_id


class SequenceConflictError(CommitConflictError):
    """Another writer committed rows to a bucket this commit writes, numbered at or above this
    commit's sequence numbers: applied as is, the two batches would interleave key by key.
    `Table.write_arrow` and `paimon_sink` write the batch again on the new snapshot; other
    callers get the error and write again."""


class StalePlanError(CommitConflictError):
    """A file of the snapshot a write or compaction planned on vanished while it was read:
    a concurrent compaction replaced it and expiration deleted it. Nothing was committed;
    `Table.write_arrow` and `paimon_sink` plan again on the new snapshot."""


class StaleOptionsError(StalePlanError):
    """The table's options changed since the write (or compaction) was planned, in a way that
    changes what it writes (`options.write_rule_change`: which version of a key wins, what a
    compaction merges, what changelog is produced). Nothing was committed; `Table.write_arrow`,
    `Table.compact` and `paimon_sink` reload the table and plan again."""


class SnapshotMissingError(MissingFileError):
    """A snapshot file the table's history needs does not exist. Raised by readers and writers
    when the LATEST hint names snapshot n but neither snapshot-n nor any later snapshot exists:
    the newest snapshot file(s) were deleted, and answering from an older snapshot would be a
    silent rollback (the next commit would even reuse the id). Restore the file from a backup,
    or accept the loss with `paimon-streaming check --repair` (`check.repair_hints`), which
    points LATEST at the newest snapshot that exists."""


class SnapshotGapError(SnapshotMissingError, SnapshotNotFoundError):
    """A snapshot between the earliest and the latest one is missing (deleted by hand, not
    expired). Also a SnapshotNotFoundError, so tools that skip absent snapshots (expiration,
    rollback) keep working around it."""


class UnsupportedOperationError(PaimonError):
    """The operation cannot be done safely on this table or store (the message says why)."""


class SchemaChangedError(PaimonError):
    """The table's schema changed under a running reader or writer that cannot follow it;
    restart it (it picks the new schema up)."""
