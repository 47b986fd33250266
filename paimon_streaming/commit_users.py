"""Which (commitUser, commitIdentifier) pairs a table has committed, past snapshot expiration.

The exactly-once filter asks "did `user` commit `identifier`?", and a user's snapshots answer
it only while they exist. Delta keeps each application's last `txn` version in every log
checkpoint for the same reason; here snapshot expiration records the identifiers of the
snapshots it is about to delete, per commit user, under `<table>/commit-user/` (a directory
Paimon's readers and writers ignore) before deleting any of them. A reader that scans the
snapshots and then reads the records therefore never misses a committed identifier.

Retention: records live as long as the table (Delta's default, when
`delta.setTransactionRetentionDuration` is unset), so a query may be restarted from its
checkpoint however long after. They stay small: identifiers are kept as ranges (a streaming
query's batch ids are consecutive), and each expiration merges a user's records into one
file. Batch commits (identifier Long.MAX_VALUE, Java's batch-write identifier) are never
replayed and not recorded.
"""
from __future__ import annotations

import json
import uuid
from dataclasses import dataclass, field
from typing import Iterable
from urllib.parse import quote

from .errors import CommitIdentifierError, CorruptFileError
from .fileio import FileIO
from .json_check import CHECK_KEY, check_mismatch, json_check
from .snapshot import BATCH_COMMIT_IDENTIFIER, Snapshot, SnapshotManager

RECORDS_DIR = "commit-user"
# The snapshot property naming the streaming query that committed (Spark's checkpoint or query
# id); recorded with the identifiers, so a replay check can tell a restart from another query
QUERY_PROPERTY = "paimon-streaming.spark-query"
QUERIES_CHECK_KEY = "queriesCheck"


@dataclass
class IdentifierRanges:
    """A set of identifiers as sorted, disjoint, non-adjacent closed ranges."""
    ranges: list[tuple[int, int]] = field(default_factory=list)

    @staticmethod
    def of(values: Iterable[int], ranges: Iterable[tuple[int, int]] = ()) -> "IdentifierRanges":
        spans = sorted([(v, v) for v in values] + [tuple(r) for r in ranges])
        merged: list[tuple[int, int]] = []
        for lo, hi in spans:
            if merged and lo <= merged[-1][1] + 1:
                merged[-1] = (merged[-1][0], max(merged[-1][1], hi))
            else:
                merged.append((lo, hi))
        return IdentifierRanges(merged)

    def __contains__(self, identifier: int) -> bool:
        return any(lo <= identifier <= hi for lo, hi in self.ranges)

    def max(self) -> int | None:
        return self.ranges[-1][1] if self.ranges else None


class CommitUserRecords:
    """The recorded identifiers of expired snapshots, one directory per commit user."""

    def __init__(self, file_io: FileIO, table_path: str):
        self.file_io = file_io
        self.dir = f"{table_path}/{RECORDS_DIR}"

    def user_dir(self, commit_user: str) -> str:
        return f"{self.dir}/u-{quote(commit_user, safe='')}"

    def _files(self, commit_user: str) -> list[str]:
        return self._files_in(self.user_dir(commit_user))

    def _files_in(self, user_dir: str) -> list[str]:
        return [f"{user_dir}/{n}" for n in self.file_io.list_names(user_dir)
                if n.startswith("identifiers-") and n.endswith(".json")]

    def read(self, path: str) -> IdentifierRanges:
        """The identifiers one record file holds (none when it is gone: merged into a newer
        record by a concurrent expiration); CorruptFileError naming it when damaged."""
        found = self._read_present(path)
        return IdentifierRanges() if found is None else found

    def _read_present(self, path: str) -> IdentifierRanges | None:
        try:
            obj = json.loads(self.file_io.read_bytes(path).decode("utf-8"))
            ranges = [(int(lo), int(hi)) for lo, hi in obj["ranges"]]
            mismatch = (check_mismatch(obj[CHECK_KEY], json_check([obj["commitUser"], obj["ranges"]]))
                        if CHECK_KEY in obj else None)  # none in records of earlier versions
        except FileNotFoundError:
            return None
        except (ValueError, KeyError, TypeError) as exc:
            raise CorruptFileError(f"commit-user record {path} cannot be parsed: {exc}") from exc
        if mismatch:
            raise CorruptFileError(f"commit-user record {path} is damaged: {mismatch}; without it, batches of "
                                   "expired snapshots could be committed twice: restore it from a backup")
        return IdentifierRanges.of((), ranges)

    def record_files(self) -> list[str]:
        """Every record file of every commit user."""
        return [path for user_dir in self.file_io.list_names(self.dir)
                for path in self._files_in(f"{self.dir}/{user_dir}")]

    def recorded(self, commit_user: str) -> IdentifierRanges:
        """Every recorded identifier of `commit_user`. A file that vanished between the listing
        and its read was merged by a concurrent expiration into one the listing missed: list
        again (missing its identifiers would fail a replay with CommitIdentifierError)."""
        while True:
            found = [self._read_present(path) for path in self._files(commit_user)]
            if all(f is not None for f in found):
                return IdentifierRanges.of((), [r for f in found for r in f.ranges])

    def recorded_queries(self, commit_user: str) -> dict[str, IdentifierRanges]:
        """The recorded identifiers of `commit_user` by the query that committed them (those of
        snapshots that named one: QUERY_PROPERTY)."""
        out: dict[str, list[tuple[int, int]]] = {}
        for path in self._files(commit_user):
            for query, ranges in self._read_queries(path).items():
                out.setdefault(query, []).extend(ranges)
        return {q: IdentifierRanges.of((), r) for q, r in out.items()}

    def _read_queries(self, path: str) -> dict[str, list[tuple[int, int]]]:
        try:
            obj = json.loads(self.file_io.read_bytes(path).decode("utf-8"))
            queries = {str(q): [(int(lo), int(hi)) for lo, hi in r] for q, r in obj.get("queries", {}).items()}
            mismatch = check_mismatch(obj[QUERIES_CHECK_KEY], json_check([obj["commitUser"], obj["queries"]])) \
                if QUERIES_CHECK_KEY in obj else None
        except FileNotFoundError:
            return {}
        except (ValueError, KeyError, TypeError, AttributeError) as exc:
            raise CorruptFileError(f"commit-user record {path} cannot be parsed: {exc}") from exc
        if mismatch:
            raise CorruptFileError(f"commit-user record {path} is damaged: {mismatch}; restore it from a backup")
        return queries

    def record(self, expiring: Iterable[Snapshot]) -> None:
        """Record the identifiers of `expiring` per user (and per query, QUERY_PROPERTY); call
        before deleting any of them.

        A user's new file holds its old records too; the old files are deleted only after it
        is written, so a crash or a concurrent expiration never loses an identifier."""
        by_user: dict[str, set[int]] = {}
        by_query: dict[str, dict[str, set[int]]] = {}
        for snap in expiring:
            if snap.commit_identifier != BATCH_COMMIT_IDENTIFIER:
                by_user.setdefault(snap.commit_user, set()).add(snap.commit_identifier)
                query = (snap.properties or {}).get(QUERY_PROPERTY)
                if query is not None:
                    by_query.setdefault(snap.commit_user, {}).setdefault(query, set()).add(snap.commit_identifier)
        for user, identifiers in by_user.items():
            old = self._files(user)
            merged = IdentifierRanges.of(identifiers, [r for path in old for r in self.read(path).ranges])
            queries = {q: IdentifierRanges.of(ids) for q, ids in by_query.get(user, {}).items()}
            for q, ranges in (item for path in old for item in self._read_queries(path).items()):
                queries[q] = IdentifierRanges.of((), queries.get(q, IdentifierRanges()).ranges + ranges)
            query_ranges = {q: [list(r) for r in queries[q].ranges] for q in sorted(queries)}
            record = {"commitUser": user, "ranges": merged.ranges, CHECK_KEY: json_check([user, merged.ranges])}
            if query_ranges:
                record.update({"queries": query_ranges, QUERIES_CHECK_KEY: json_check([user, query_ranges])})
            body = json.dumps(record).encode()
            self.file_io.overwrite_atomic(f"{self.user_dir(user)}/identifiers-{uuid.uuid4().hex}.json", body)
            for path in old:
                self.file_io.delete_quietly(path)


@dataclass(frozen=True)
class UserCommits:
    """What a table knows of one commit user's identifiers at or above some identifier."""
    commit_user: str
    live: dict[int, int]          # identifier -> id of the newest live snapshot that carries it
    recorded: IdentifierRanges    # identifiers of the user's expired snapshots
    newest: int | None            # the highest identifier committed (batch commits aside)
    latest: Snapshot | None = None    # the table's newest snapshot when the scan began (None: none read)
    own_latest: Snapshot | None = None  # the user's newest snapshot the scan read (None: none live)

    def committed(self, identifier: int) -> bool:
        """True if committed; False if new; CommitIdentifierError below the newest but never committed."""
        if identifier in self.live or identifier in self.recorded:
            return True
        if identifier == BATCH_COMMIT_IDENTIFIER or self.newest is None or identifier > self.newest:
            return False
        raise CommitIdentifierError(
            f"commit identifier {identifier} of commit user {self.commit_user!r} was never committed, but the "
            f"user already committed identifier {self.newest}: a user's identifiers must increase, or every "
            "replay after this commit would be applied again. A new query (or a checkpoint started afresh) "
            "needs a new commit user.")


def user_commits(snapshots: SnapshotManager, records: CommitUserRecords, commit_user: str,
                 lowest: int) -> UserCommits:
    """The identifiers `commit_user` committed from `lowest` up.

    Snapshots are scanned newest first until one of the user's carries an identifier at or
    below `lowest` (so a replay of the newest batch reads one or two snapshots); the records
    of expired snapshots are read after the scan, so an expiration running meanwhile, which
    records before it deletes, cannot hide an identifier."""
    live: dict[int, int] = {}
    newest = None
    latest = own_latest = None
    settled = False
    for snap in snapshots.iter_descending():
        latest = latest or snap
        if snap.commit_user != commit_user:
            continue
        own_latest = own_latest or snap
        ident = snap.commit_identifier
        live.setdefault(ident, snap.id)
        if ident != BATCH_COMMIT_IDENTIFIER:
            newest = ident if newest is None else max(newest, ident)
            if ident <= lowest:
                settled = True
                break
    recorded = IdentifierRanges() if settled else records.recorded(commit_user)
    top = recorded.max()
    if top is not None and (newest is None or top > newest):
        newest = top
    return UserCommits(commit_user, live, recorded, newest, latest, own_latest)
