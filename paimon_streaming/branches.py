"""Branches, as Java lays them out: branch `<name>` keeps its own snapshots, schemas, tags and
consumers under `<table>/branch/branch-<name>/`, and shares the table's data files, manifests
and index files (its snapshots reference them in the table's own directories). The main
branch is the table directory itself.

A branch is named as Java names it: `Catalog.get_table("db.orders$branch_dev")`, Spark's
`load(".../orders$branch_dev")` (system tables: `orders$branch_dev$snapshots`); it is read and
written like the main branch. `create_branch`, `delete_branch` and `fast_forward` change the
branch directories as Java's FileSystemBranchManager does, in an order that leaves a readable
table after a crash at any step. Cleanup on one branch never deletes what another references
(shared_files.py).
"""
from __future__ import annotations

import datetime
import re

from .errors import (BranchAlreadyExistsError, CommitConflictError, InvalidOptionError, SnapshotNotFoundError,
                     TableNotFoundError, TagNotFoundError, UnsupportedOperationError)
from .fileio import FileIO
from .schema import SchemaManager
from .snapshot import SnapshotManager
from .tags import TagManager, snapshot_json
from .tzdb import local_tzinfo

MAIN = "main"
PREFIX = "branch-"
SUFFIX = "$branch_"  # Java's table name of a branch: `orders$branch_dev`


def branch_path(table_path: str, branch: str | None) -> str:
    """Where a branch's snapshots, schemas and tags live (the table directory for main)."""
    if branch is None or branch == MAIN:
        return table_path
    return f"{table_path}/branch/{PREFIX}{validate_branch_name(branch)}"


def branch_ref(location: str, branch: str | None) -> str:
    """A table location naming its branch as Java does (`.../orders$branch_dev`); main's is plain."""
    return location if branch is None or branch == MAIN else f"{location}{SUFFIX}{branch}"


def split_branch(ref: str) -> tuple[str, str | None]:
    """'<table>$branch_<name>' -> (table, name); any other reference -> (ref, None)."""
    base, sep, name = ref.rpartition(SUFFIX)
    if sep and base and name:
        return base, validate_branch_name(name)
    return ref, None


def resolve_branch(ref: str, option: str | None) -> tuple[str, str | None]:
    """(table reference, branch or None for main) from a reference that may end in
    `$branch_<name>` and a `branch` option, which must agree when both are given."""
    ref, named = split_branch(ref)
    option = (option or "").strip() or None
    if named is not None and option is not None and option != named:
        raise InvalidOptionError(f"the table names branch '{named}' and option 'branch' '{option}'")
    branch = named or option
    return ref, None if branch is None or branch == MAIN else validate_branch_name(branch)


def validate_branch_name(name: str) -> str:
    """Java's rules: not blank, not all digits (a snapshot id), no path separator."""
    if not isinstance(name, str) or not name.strip():
        raise InvalidOptionError(f"invalid branch name {name!r}: a branch name must not be blank")
    if name.isdigit() or "/" in name or "\\" in name or name.startswith("."):
        raise InvalidOptionError(f"invalid branch name {name!r}: it must not be all digits, start with '.' or "
                                 "hold a path separator")
    return name


def branch_names(file_io: FileIO, table_path: str) -> list[str]:
    """The table's branches other than main (directories `branch/branch-<name>`)."""
    return sorted(status.path.rstrip("/").rsplit("/", 1)[-1][len(PREFIX):]
                  for status in file_io.list_status(f"{table_path}/branch")
                  if status.is_dir and status.path.rstrip("/").rsplit("/", 1)[-1].startswith(PREFIX))


def create_branch(file_io: FileIO, table_path: str, name: str, tag: str | None = None) -> None:
    """A new branch: empty with the latest schema, or (`tag`) starting from that tag's snapshot
    with the tag and the schemas up to the snapshot's. Schemas are written first and the
    snapshot last, so a crash leaves a valid (perhaps empty) branch."""
    validate_branch_name(name)
    if SUFFIX in name or re.search(r"[\x00-\x1f\x7f]", name):
        raise InvalidOptionError(f"invalid branch name {name!r}: it must not hold control characters or "
                                 f"'{SUFFIX}', which would name another branch (TABLE{SUFFIX}<name>)")
    if name == MAIN:
        raise InvalidOptionError(f"'{MAIN}' is the main branch's name; pick another for a new branch")
    root = branch_path(table_path, name)
    if SchemaManager(file_io, root).schema_ids():
        raise BranchAlreadyExistsError(f"branch '{name}' of {table_path} already exists (branches: "
                                       f"{branch_names(file_io, table_path)}); delete it first or pick another name")
    schemas = SchemaManager(file_io, table_path)
    snapshot = TagManager(file_io, table_path).snapshot(tag) if tag is not None else None
    last_schema = snapshot.schema_id if snapshot is not None else max(schemas.schema_ids(), default=-1)
    for schema_id in schemas.schema_ids():
        if schema_id <= last_schema:
            _copy(file_io, schemas.path(schema_id), SchemaManager(file_io, root).path(schema_id))
    if tag is not None:
        tags = TagManager(file_io, table_path)
        try:  # the copy keeps the tag's files from a deletion of the tag that reads the branches later
            _copy(file_io, tags.path(tag), TagManager(file_io, root).path(tag))
        except FileNotFoundError:
            file_io.delete_dir(root)
            raise TagNotFoundError(f"cannot create branch '{name}' of {table_path} from tag '{tag}': the tag was "
                                   "deleted meanwhile; nothing was created") from None
        _write(file_io, SnapshotManager(file_io, root).path(snapshot.id), snapshot_json(snapshot))


def delete_branch(file_io: FileIO, table_path: str, name: str, fallback_branch: str | None) -> None:
    """Remove a branch's directory (its snapshots, schemas and tags). The data files only it
    used are left to orphan cleanup, as Java leaves them."""
    validate_branch_name(name)
    if name == MAIN:
        raise UnsupportedOperationError(f"cannot delete branch 'main' of {table_path}: main is the table itself "
                                        "(delete other branches; drop the table to remove it)")
    if name == fallback_branch:
        raise UnsupportedOperationError(
            f"cannot delete branch '{name}' of {table_path}: the table's 'scan.fallback-branch' names it; "
            "reset that option first")
    if name not in branch_names(file_io, table_path):
        raise TableNotFoundError(f"table {table_path} has no branch '{name}' (branches: "
                                 f"{branch_names(file_io, table_path)})")
    file_io.delete_dir(branch_path(table_path, name))


def refuse_on_branch(current: str, table_path: str, what: str) -> None:
    """Branches are managed from the main branch: a branch's table refuses `what`."""
    if current != MAIN:
        raise UnsupportedOperationError(
            f"{what} on branch '{current}' of {table_path}: branches are created (from the main branch's latest "
            "schema or one of its tags), deleted and fast-forwarded into main from the main branch, not from "
            f"another branch; run it on the main branch ({table_path}, without '{SUFFIX}{current}')")


def fast_forward(file_io: FileIO, table_path: str, name: str, force: bool = False) -> int:
    """Make the main branch what branch `name` is (Java's fast-forward): main's snapshots and
    tags from the branch's earliest snapshot on, and its schemas from that snapshot's on, are
    replaced by the branch's. Returns main's new latest snapshot id. Refused when main would
    keep older snapshots the branch's history does not continue: main keeps what is below the
    branch's earliest snapshot, which must then be main's own too (the branch's base), or
    follow the snapshot the branch was made from (the branch's tag of it); Java splices the
    two histories otherwise.

    Also refused, unless `force`, when main has snapshots the branch's history does not hold
    (commits main got after the snapshot the branch was made from, or any snapshot of main's
    for a branch created empty): Java's fast-forward drops them silently, and their rows with
    them. As Iceberg's fastForwardBranch, main must be an ancestor of the branch; `force`
    replaces them as Java does.

    Crash-safe order: main first rolls back (the LATEST hint goes, then snapshot files newest
    first, then tags), then takes the branch's schemas, then its snapshots oldest first and its tags,
    so at every step main is some consistent table: its old history cut back, or a prefix of
    the branch's. The files main's removed snapshots alone used are left to orphan cleanup, as
    Java leaves them."""
    validate_branch_name(name)
    if SUFFIX in name or re.search(r"[\x00-\x1f\x7f]", name):
        raise InvalidOptionError(f"invalid branch name {name!r}: it must not hold control characters or "
                                 f"'{SUFFIX}', which would name another branch (TABLE{SUFFIX}<name>)")
    if name == MAIN:
        raise InvalidOptionError("fast-forward takes a branch other than main")
    if name not in branch_names(file_io, table_path):
        raise TableNotFoundError(f"table {table_path} has no branch '{name}' (branches: "
                                 f"{branch_names(file_io, table_path)})")
    root = branch_path(table_path, name)
    source = SnapshotManager(file_io, root)
    first, last = source.earliest_id(), source.latest_id()
    if first is None or last is None:
        raise SnapshotNotFoundError(f"cannot fast-forward {table_path} to branch '{name}': it has no snapshot")
    main = SnapshotManager(file_io, table_path)
    main_earliest, main_latest = main.earliest_id(), main.latest_id()
    base = source.snapshot(first)
    shared_base = _same_snapshot(main, first, base)  # kept until the copy replaces it: a retry sees it
    main_tags, branch_tags = TagManager(file_io, table_path), TagManager(file_io, root)
    made_from = [t for t, _ in branch_tags.tagged_snapshots() if t.id == first - 1]
    continues = shared_base or any(_same_snapshot(main, first - 1, t) for t in made_from)
    if main_earliest is not None and main_earliest < first and not continues:
        raise UnsupportedOperationError(
            f"cannot fast-forward {table_path} to branch '{name}': main's snapshots {main_earliest}.."
            f"{min(first - 1, main_latest)} would be followed by the branch's from {first}, which do not continue "
            "them (the branch expired the snapshots after the one it was made from, so main would get a gap or "
            "its own snapshots under the branch's schemas): Java splices them so. Fast-forward before the branch "
            f"expires those, or once main has expired every snapshot below {first}")
    if main_latest is not None and not force:
        # main's snapshots the fast-forward replaces, but those that are the branch's own (a
        # fast-forward earlier, or one a crash interrupted, copied them)
        lost = [sid for sid in range(max(first + 1 if shared_base else first, main_earliest), main_latest + 1)
                if not (sid <= last and source.exists(sid) and _same_snapshot(main, sid, source.snapshot(sid)))]
        if lost:
            raise UnsupportedOperationError(_diverged(table_path, name, main, lost, first, shared_base, continues))
    first_schema = base.schema_id
    fresh_from = first + 1 if shared_base else first  # main's ids from here on become the branch's copies
    if main_latest is not None and main_latest >= first:
        low = max(fresh_from, main_earliest)
        removed = {sid: file_io.read_bytes_if_present(main.path(sid)) for sid in range(low, main_latest + 1)}
        file_io.delete(main.hint_path("LATEST"))  # readers list instead (Java's do too, and Java deletes it)
        for sid in range(main_latest, low - 1, -1):
            file_io.delete(main.path(sid))
        _undo_if_raced(file_io, table_path, name, main, low, removed)
    branch_tag_names, kept_tags = set(branch_tags.tag_names()), set()
    for snap, names in main_tags.tagged_snapshots():
        if snap.id >= first:
            for tag in names:
                if tag in branch_tag_names and \
                        file_io.read_bytes(main_tags.path(tag)) == file_io.read_bytes(branch_tags.path(tag)):
                    kept_tags.add(tag)  # the branch's copy of it (the tag it was made from): never missing
                    continue
                main_tags.delete_file(tag)
    main_schemas, branch_schemas = SchemaManager(file_io, table_path), SchemaManager(file_io, root)
    wanted = set(branch_schemas.schema_ids())
    for schema_id in reversed(main_schemas.schema_ids()):
        if schema_id >= first_schema and schema_id not in wanted:
            file_io.delete(main_schemas.path(schema_id))
    for schema_id in sorted(wanted):
        if schema_id >= first_schema:
            _copy(file_io, branch_schemas.path(schema_id), main_schemas.path(schema_id), replace=True)
    for sid in range(first, last + 1):
        if sid < fresh_from:
            _copy(file_io, source.path(sid), main.path(sid), replace=True)
        elif not file_io.try_create_atomic(main.path(sid), file_io.read_bytes(source.path(sid))):
            # a writer committed on main, on the branch's snapshot sid - 1 copied a moment ago:
            # replacing its snapshot would drop its rows without a word
            raise CommitConflictError(
                f"fast-forward of {table_path} to branch '{name}' stopped: a writer committed snapshot {sid} on "
                f"main while the branch's snapshots were copied; main now holds the branch's snapshots up to "
                f"{sid - 1} and that commit on top (a consistent table, without the branch's snapshots "
                f"{sid}..{last} and tags). Stop main's writers and fast-forward again (force=True, after "
                "applying that commit's changes to the branch, or they leave main)")
    for tag in sorted(branch_tag_names - kept_tags):
        _copy(file_io, branch_tags.path(tag), main_tags.path(tag), replace=True)
    main.commit_earliest_hint(min(first, main_earliest) if main_earliest is not None else first)
    main.commit_latest_hint(last)
    return last


def _undo_if_raced(file_io: FileIO, table_path: str, name: str, main: SnapshotManager, low: int,
                   removed: dict[int, bytes | None]) -> None:
    """Once main's snapshots from `low` are deleted, check no writer committed on main
    meanwhile (after the check for main's commits the branch lacks): such a commit would be
    replaced by, or sit on top of, the branch's copies, its rows gone from main without a word.
    Then main's deleted snapshots below it are written back (their files are untouched), so main
    is what it was plus that commit, and the fast-forward fails having changed nothing."""
    strays = [i for i in main.listed_ids() if i >= low]
    if not strays:
        return
    contiguous = strays == list(range(strays[0], strays[-1] + 1))
    if contiguous:
        for sid, data in sorted(removed.items()):
            if sid < strays[0] and data is not None:
                file_io.try_create_atomic(main.path(sid), data)
        main.commit_latest_hint(strays[-1])
    raise CommitConflictError(
        f"cannot fast-forward {table_path} to branch '{name}': snapshot(s) {strays} were committed on main while "
        "the fast-forward replaced main's snapshots; "
        + ("main's snapshots were written back and nothing changed. " if contiguous else
           "main now has a gap `paimon-streaming check` reports (no file was deleted). ")
        + "Stop main's writers, then fast-forward again")


def _diverged(table_path: str, name: str, main: SnapshotManager, lost: list[int], first: int, shared_base: bool,
              continues: bool) -> str:
    """Why fast-forwarding branch `name` would drop main's snapshots `lost`, and what to do."""
    def describe(sid: int) -> str:
        try:
            snap = main.snapshot(sid)
        except Exception:  # noqa: BLE001 - expired meanwhile: its id still says enough
            return str(sid)
        when = datetime.datetime.fromtimestamp(snap.time_millis / 1000, local_tzinfo()).strftime("%Y-%m-%d %H:%M:%S")
        return f"{sid} ({snap.commit_kind} by commit user '{snap.commit_user}' at {when})"
    shown = [describe(sid) for sid in (lost if len(lost) <= 5 else lost[:2] + lost[-2:])]
    if len(lost) > 5:
        shown[2:2] = [f"... {len(lost) - 4} more ..."]
    ids = (f"snapshot {lost[0]}" if len(lost) == 1 else f"snapshots {lost[0]}..{lost[-1]}"
           if lost == list(range(lost[0], lost[-1] + 1)) else f"snapshots {', '.join(map(str, lost))}")
    if shared_base or continues:
        since = f"main's commits after snapshot {first if shared_base else first - 1}, which the branch was made from"
    else:
        since = (f"it was created empty, or main no longer has the snapshot it was made from: the branch's history "
                 f"starts at its own snapshot {first}")
    return (f"cannot fast-forward {table_path} to branch '{name}': main has {ids} that the branch does not hold "
            f"({since}): "
            f"{', '.join(shown)}. A fast-forward replaces main's snapshots from {first} on with the branch's, so "
            "the rows those commits wrote would leave main (Java's fast-forward drops them silently). Redo the "
            "branch's changes on a branch made from a tag of main's latest snapshot, or apply those commits' "
            "changes to this branch as well and pass force=True (`paimon-streaming branch fast-forward --force`), "
            "which drops main's snapshots as Java does")


def _same_snapshot(snapshots: SnapshotManager, snapshot_id: int, other) -> bool:
    """Whether `snapshots` holds `other` as its snapshot `snapshot_id` (a branch's copy of a
    tagged snapshot names the same manifest lists)."""
    if not snapshots.exists(snapshot_id):
        return False
    mine = snapshots.snapshot(snapshot_id)
    return (mine.base_manifest_list, mine.delta_manifest_list) == (other.base_manifest_list,
                                                                   other.delta_manifest_list)


def _copy(file_io: FileIO, source: str, target: str, replace: bool = False) -> None:
    _write(file_io, target, file_io.read_bytes(source), replace)


def _write(file_io: FileIO, target: str, data: bytes, replace: bool = False) -> None:
    if replace:
        file_io.overwrite_atomic(target, data)
    elif not file_io.try_create_atomic(target, data):
        raise BranchAlreadyExistsError(f"cannot create {target}: it already exists (another process is "
                                       "creating the same branch)")
