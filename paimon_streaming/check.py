"""Verifying a table: `check_table` reads every piece of metadata a reader could follow, and
every data file, and reports what is missing, truncated, garbled or inconsistent, instead of
letting a later read fail (or worse, silently return wrong rows).

Checked, for every snapshot and tag:

* snapshot/tag JSON decodes, snapshot ids are contiguous, every schema file decodes and the
  schemas snapshots and files use exist;
* manifest lists and manifests exist with their recorded size and decode, passing their
  checksums (read uncached, so a file corrupted after it was cached is still found);
* every live data file, changelog file (of snapshots: a tag keeps no changelog, as in Java; a
  snapshot copied from a tag whose changelog had expired, by create_branch or a fast-forward,
  is only warned of, `expired-changelog`) and extra file exists, data files with their recorded size; data files are read whole (page checksums, row count), unless `verify_data=False`;
* index files exist with their recorded size; every deletion vector decodes and passes its CRC;
  in the newest snapshot and every tag, every deletion vector marks a live data file (a
  compaction that replaced the file without the vector's rows, such as a Java compaction
  racing our delete, leaves it behind: `deletion-vector-of-dead-file`);
* Java's long-lived changelogs (`changelog/changelog-<id>`) decode, and what a stream reads of
  them is whole (their changelog manifests and files, or with changelog-producer none their
  delta's new files); their LATEST hint names one that exists (Java's commits fail otherwise);
* consumer progress files and commit-user records (what expiration and exactly-once replays
  follow) decode and pass their checks;
* the LATEST/EARLIEST hints parse and point inside the snapshot range. A LATEST hint beyond
  the newest snapshot file is an error: the newest snapshot file(s) were deleted, and readers
  and writers refuse the table (`SnapshotMissingError`) until the files are restored or
  `repair_hints` (`paimon-streaming check --repair`) accepts the loss. A stale hint (behind
  the newest snapshot: hints lag) or a missing one is only a warning: readers list past it;
* the newest snapshot's totalRecordCount equals the rows of its live files (warning);
* every partition's live files in the newest snapshot share one bucket count (rescale.py);
* deletion-vector, first-row and cross-partition upsert tables: no primary key is live twice in the
  newest snapshot (in a cross-partition table, not in two partitions either).
* dynamic-bucket tables (HASH index files): each bucket's HASH file holds the hash of every key
  of its live data files, and each hash is in one bucket of a partition (else a later write,
  ours or Java's, would put a key in a second bucket).

Problems are collected, never raised (an unexpected failure is reported as a `check-failed`
problem), so one run reports everything; `CheckReport.ok` is False when any problem is an
error. `check_location` also reports a table whose schema files are damaged. The main
branch's check covers every branch too (their snapshots, tags and schemas, over shared files);
`<table>$branch_<name>` checks that branch alone. A branch's earliest snapshot, copied by
create_branch with the tag it was made from, has no hints until the branch commits (as Java's):
their absence is no problem.
"""
from __future__ import annotations

from dataclasses import asdict, dataclass, field
from typing import Callable

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from . import file_index
from .branches import MAIN, branch_names, branch_path, branch_ref, resolve_branch
from .commit_users import CommitUserRecords
from .consumers import ConsumerManager
from .datafile import verify_data_file
from .deletionvectors import decode_in_range, decode_vector
from .errors import (CorruptFileError, MissingFileError, PaimonError, TableNotFoundError, TagNotFoundError,
                     UnsupportedOperationError)
from .fileio import FileIO
from .keyvalue import file_fields
from . import data_evolution, row_tracking
from .row_tracking import written_fields
from .long_lived_changelogs import (PREFIX as CHANGELOG_PREFIX, changelog_latest_hint, long_lived_changelog_ids,
                                    read_long_lived_changelog)
from .manifest import ADD, IndexManifestEntry, ManifestEntry, live_entries
from .options import CoreOptions
from .manifest.entries import DELETION_VECTORS_INDEX, HASH_INDEX
from .bucket import bucket_key_hashes
from .cross_partition import ignored_retractions, is_cross_partition
from .dynamic_bucket import read_hash_file
from .evolution import read_evolved
from .manifest.files import IndexManifestFile, ManifestFile, ManifestList, read_records
from .paths import TableDirs, partition_path
from .scan import TableScan, refuse_map_layouts
from .schema import SchemaManager, TableSchema
from .snapshot import APPEND, Snapshot, SnapshotManager
from .table import Table
from .tags import TagManager

ERROR, WARNING = "error", "warning"
HINTS = ("LATEST", "EARLIEST")


@dataclass(frozen=True)
class Problem:
    severity: str   # ERROR or WARNING
    kind: str       # missing-file, size-mismatch, corrupt-file, unreadable-file (a codec library missing),
                    # snapshot-gap, hint, duplicate-key, row-ids, manifest-format, ...
    path: str       # the file (or directory) concerned
    message: str


@dataclass
class CheckReport:
    table: str
    snapshots: int = 0
    files: int = 0
    problems: list[Problem] = field(default_factory=list)
    repaired: list[str] = field(default_factory=list)

    @property
    def ok(self) -> bool:
        return not any(p.severity == ERROR for p in self.problems)

    def errors(self) -> list[Problem]:
        return [p for p in self.problems if p.severity == ERROR]

    def to_dict(self) -> dict:
        return {"table": self.table, "ok": self.ok, "snapshots": self.snapshots, "files": self.files,
                "problems": [asdict(p) for p in self.problems], "repaired": list(self.repaired)}


def check_table(table: Table, verify_data: bool = True) -> CheckReport:
    """Verify `table` (see the module docstring), and every branch when it is the main branch;
    never raises for a problem in the table. `verify_data=False` checks data files by their
    size only (no read of their content)."""
    checker = _Checker(table.file_io, table.path, table, verify_data, branch=table.branch)
    report = checker.run()
    if table.branch == MAIN:
        _check_branches(checker, report)
    return report


def _check_branches(main: "_Checker", report: CheckReport) -> None:
    """Each branch's snapshots, tags and schemas, over the files they share with main (each
    file verified once)."""
    try:
        names = branch_names(main.io, main.path)
    except OSError as exc:
        report.problems.append(Problem(ERROR, "check-failed", f"{main.path}/branch", f"cannot list branches: {exc}"))
        return
    for name in names:
        root = branch_path(main.path, name)
        try:
            table = Table(main.io, main.path, branch=name)
        except Exception as exc:  # noqa: BLE001 - a branch that cannot be opened is a problem to report
            if isinstance(exc, TableNotFoundError) and not SnapshotManager(main.io, root).listed_ids():
                report.problems.append(Problem(WARNING, "empty-branch", root, str(exc)))  # nothing to read
            else:
                report.problems.append(Problem(ERROR, "corrupt-file", root, f"branch '{name}' cannot be opened: "
                                               f"{exc}"))
            continue
        checker = _Checker(main.io, main.path, table, main.verify_data, branch=name)
        checker.share_verdicts(main)
        sub = checker.run()
        report.problems.extend(sub.problems)
        report.snapshots += sub.snapshots
        report.files += sub.files


def check_location(location: str, verify_data: bool = True, filesystem=None) -> CheckReport:
    """`check_table` of the table at `location` (a branch alone: `<table>$branch_<name>`, as
    `Table.open` takes it), also when it cannot be opened (a damaged or missing schema file):
    then the snapshots, hints and schema files are still checked, and the manifests and data
    files with the newest schema that decodes. Never raises."""
    try:
        table_location, branch = resolve_branch(location, None)
        file_io, path = FileIO.for_path(table_location, filesystem)
    except Exception as exc:  # noqa: BLE001 - a bad location is a report too
        report = CheckReport(location)
        report.problems.append(Problem(ERROR, "check-failed", location, f"cannot open {location}: {exc}"))
        return report
    table = None
    opening_error: Exception | None = None
    try:
        table = Table(file_io, path, branch=branch)
    except Exception as exc:  # noqa: BLE001 - reported below
        opening_error = exc
    if table is not None:
        return check_table(table, verify_data)
    return _Checker(file_io, path, table, verify_data, opening_error, branch=branch or MAIN).run()


def repair_hints(location_or_table: str | Table, filesystem=None) -> list[str]:
    """Rewrite the LATEST/EARLIEST hints from the snapshot files that exist; returns what was done.

    LATEST is rewritten when it is missing, garbled or names a snapshot beyond the newest
    snapshot file (its newer snapshots were deleted: this accepts their loss; their files become
    orphans that `remove-orphans` deletes). EARLIEST is rewritten when garbled or outside the
    snapshot range. A hint behind the newest snapshot is left alone (hints lag; readers probe past
    them). Only hints are written, never a value beyond an existing snapshot file, so a commit
    running meanwhile is unharmed (its snapshot makes the rewritten hint merely stale). The hints
    of the table's (or location's) branch: `<table>$branch_<name>` names a branch's."""
    if isinstance(location_or_table, Table):
        file_io, path, branch = location_or_table.file_io, location_or_table.path, location_or_table.branch
    else:
        location, branch = resolve_branch(location_or_table, None)
        file_io, path = FileIO.for_path(location, filesystem)
    sm = SnapshotManager(file_io, branch_path(path, branch))
    ids = sm.listed_ids()
    done = []
    for name in HINTS:
        hint_path = sm.hint_path(name)
        present = file_io.exists(hint_path)
        value = sm.read_hint(name)
        if not ids:
            if present:
                file_io.delete(hint_path)
                done.append(f"deleted {hint_path}: the table has no snapshot file")
            continue
        target = ids[-1] if name == "LATEST" else ids[0]
        if name == "LATEST":
            wrong = value is None or value > ids[-1]
        else:
            wrong = present and (value is None or not ids[0] <= value <= ids[-1])
        if wrong:
            file_io.overwrite_atomic(hint_path, str(target).encode())
            was = "missing" if not present else "garbled" if value is None else f"at snapshot {value}"
            done.append(f"rewrote {hint_path} to {target} (it was {was})")
    root = branch_path(path, branch)
    changelogs, hint = long_lived_changelog_ids(file_io, root), changelog_latest_hint(file_io, root)
    if hint is not None and hint > 0 and hint not in changelogs and hint + 1 not in changelogs:
        target = changelogs[-1] if changelogs else -1  # -1: none, as Java's rollback writes it
        file_io.overwrite_atomic(f"{root}/changelog/LATEST", str(target).encode())
        done.append(f"rewrote {root}/changelog/LATEST to {target} (it named long-lived changelog {hint}, "
                    "which does not exist)")
    return done


class _Checker:
    def __init__(self, file_io: FileIO, path: str, table: Table | None, verify_data: bool = True,
                 opening_error: Exception | None = None, branch: str = MAIN):
        self.io = file_io
        self.path = path
        self.branch = branch
        self.table = table
        self.verify_data = verify_data
        self.opening_error = opening_error
        root = branch_path(path, branch)  # snapshots, tags and schemas; files stay in `path`
        self.root = root
        self.snapshot_manager = SnapshotManager(file_io, root)
        self.tag_manager = TagManager(file_io, root)
        self.schema_manager = SchemaManager(file_io, root)
        self.scan: TableScan | None = None
        self.report = CheckReport(branch_ref(path, branch))
        self._listings: dict[str, dict[str, int]] = {}
        self._decoded: dict[str, list | None] = {}
        self._verdicts: dict[str, bool] = {}
        self._data_files_checked: set[tuple[bytes, int, str]] = set()
        self._schema_ids: set[int] | None = None
        self._earliest_snapshot: int | None = None
        self._newest_snapshot: int | None = None
        self._good_schemas: dict[int, TableSchema] = {}

    def share_verdicts(self, other: "_Checker") -> None:
        """Reuse what `other` found of the files both read (branches share main's files)."""
        self._listings, self._decoded, self._verdicts = other._listings, other._decoded, other._verdicts
        self._data_files_checked = other._data_files_checked

    def problem(self, kind: str, path: str, message: str, severity: str = ERROR) -> None:
        self.report.problems.append(Problem(severity, kind, path, message))

    def guarded(self, path: str, what: str, step: Callable[[], None]) -> None:
        """Run one step; a failure no check foresaw is reported, never raised."""
        try:
            step()
        except PaimonError as exc:
            kind = "missing-file" if isinstance(exc, MissingFileError) else "corrupt-file"
            self.problem(kind, path, f"{what}: {exc}")
        except Exception as exc:  # noqa: BLE001 - check never raises
            self.problem("check-failed", path, f"{what} failed unexpectedly: {type(exc).__name__}: {exc}")

    def run(self) -> CheckReport:
        self.guarded(self.schema_manager.dir, "checking the schema files", self._check_schema_files)
        schema = self.table.schema if self.table is not None else self._fallback_schema()
        if schema is not None:
            self.scan = TableScan(self.io, self.path, schema, self.branch)
        snapshots: list[tuple[str, Snapshot]] = []
        self.guarded(self.snapshot_manager.dir, "reading the snapshots and tags",
                     lambda: snapshots.extend(self._snapshots()))
        if self.scan is None and snapshots:
            self.problem("check-failed", self.schema_manager.dir, "no schema file decodes: the manifests and "
                         "data files of the snapshots were not checked")
        if self.scan is not None:
            for label, snap in snapshots:
                self.guarded(self._snapshot_path(label, snap), f"checking {label}",
                             lambda label=label, snap=snap: self._check_snapshot(label, snap))
            self.guarded(f"{self.root}/changelog", "checking the long-lived changelogs", self._check_changelogs)
        self.guarded(self.snapshot_manager.dir, "checking the hints", self._check_hints)
        self._check_progress_files()
        if self.table is not None and self.report.ok:
            ids = self._snapshot_ids()
            newest = next((s for label, s in snapshots if ids and s.id == ids[-1] and label.startswith("snapshot")),
                          None)
            if newest is not None:
                self.guarded(self.snapshot_manager.path(newest.id), f"checking snapshot {newest.id}'s rows",
                             lambda: self._check_newest(newest))
        return self.report

    def _snapshot_path(self, label: str, snap: Snapshot) -> str:
        if label.startswith("tag "):
            return self.tag_manager.path(label[4:])
        return self.snapshot_manager.path(snap.id)

    def _check_progress_files(self) -> None:
        """Consumer positions and commit-user records: expiration keeps what the first say a
        stream still needs, and exactly-once replays trust the second."""
        consumers = ConsumerManager(self.io, self.root)
        for cid in consumers.consumer_ids():
            self.guarded(consumers.path(cid), f"reading consumer {cid!r}",
                         lambda cid=cid: consumers.next_snapshot(cid))
        records = CommitUserRecords(self.io, self.root)
        for path in records.record_files():
            self.guarded(path, "reading a commit-user record", lambda path=path: records.read(path))

    # ---- schemas ------------------------------------------------------------------------------
    def _check_schema_files(self) -> None:
        ids = self.schema_manager.schema_ids()
        self._schema_ids = set(ids)
        for sid in ids:
            try:
                self._good_schemas[sid] = self.schema_manager.schema(sid)
            except PaimonError as exc:
                self.problem("corrupt-file", f"{self.schema_manager.dir}/schema-{sid}", str(exc))
        if self.opening_error is not None:
            err = self.opening_error
            if not ids and not self._snapshot_ids():
                message = str(err) if isinstance(err, TableNotFoundError) else f"no Paimon table at {self.path}: {err}"
                self.problem("not-a-table", self.root, message)
            elif not ids:
                pass  # every snapshot's schema is reported missing by _check_schema
            elif not any(p.path.startswith(self.schema_manager.dir) for p in self.report.problems):
                self.problem("check-failed", self.path, f"the table cannot be opened: {type(err).__name__}: {err}")

    def _fallback_schema(self) -> TableSchema | None:
        return self._good_schemas[max(self._good_schemas)] if self._good_schemas else None

    def _check_schema(self, label: str, schema_id: int) -> None:
        """Readers map every file's columns through the schema it was written with."""
        if self._schema_ids is None:
            self._schema_ids = set(self.schema_manager.schema_ids())
        path = f"{self.schema_manager.dir}/schema-{schema_id}"
        if schema_id not in self._schema_ids and path not in self._verdicts:
            self._verdicts[path] = False
            self.problem("missing-file", path, f"{label} uses schema {schema_id}, whose schema file does not exist")

    # ---- snapshots and tags ---------------------------------------------------------------
    def _snapshots(self) -> list[tuple[str, Snapshot]]:
        sm, tm = self.snapshot_manager, self.tag_manager
        ids = self._snapshot_ids()
        self._earliest_snapshot = ids[0] if ids else None
        self._newest_snapshot = ids[-1] if ids else None
        out: list[tuple[str, Snapshot]] = []
        for prev, cur in zip(ids, ids[1:]):
            if cur != prev + 1:
                missing = sm.path(prev + 1) + (f" .. {sm.path(cur - 1)}" if cur - 1 > prev + 1 else "")
                self.problem("snapshot-gap", sm.dir, f"snapshot file(s) {missing} are missing between snapshots "
                             f"{prev} and {cur}; snapshot ids must be contiguous (restore the files from a "
                             "backup, or roll back to a snapshot before the gap)")
        for sid in ids:
            try:
                out.append((f"snapshot {sid}", sm.snapshot(sid)))
            except PaimonError as exc:
                if sm.exists(sid):  # not expired meanwhile
                    self.problem("corrupt-file", sm.path(sid), str(exc))
        for name in tm.tag_names():
            try:
                out.append((f"tag {name}", tm.snapshot(name)))
            except TagNotFoundError:
                continue  # deleted meanwhile
            except CorruptFileError as exc:
                self.problem("corrupt-file", tm.path(name), str(exc))
        for label, snap in out:
            self._check_schema(label, snap.schema_id)
        self.report.snapshots = len(out)
        return out

    def _snapshot_ids(self) -> list[int]:
        return self.snapshot_manager.listed_ids()

    def _check_snapshot(self, label: str, snap: Snapshot) -> None:
        data = self._entries(label, snap.base_manifest_list, snap.base_manifest_list_size) + \
            self._entries(label, snap.delta_manifest_list, snap.delta_manifest_list_size)
        whole = self._decoded_whole(snap.base_manifest_list) and self._decoded_whole(snap.delta_manifest_list)
        try:
            live = live_entries(data)
        except PaimonError as exc:
            self.problem("corrupt-file", self.scan.manifest_list.path(snap.base_manifest_list),
                         f"{label}: manifests do not replay: {exc}")
            live, whole = [], False
        for e in live:
            self._check_data_file(label, e)
        # a tag keeps its snapshot's data, not its changelog: expiring the snapshot deletes the
        # changelog manifest list, as Java's does (a tag reads and diffs without it)
        if snap.changelog_manifest_list is not None and not label.startswith("tag "):
            # such a copy is its branch's earliest snapshot: the changelog expired with the
            # tagged snapshot, and with it every snapshot before
            tag = self._copied_tag_without_changelog(snap) if snap.id == self._earliest_snapshot else None
            if tag is not None:
                self.problem("expired-changelog", self.scan.manifest_list.path(snap.changelog_manifest_list),
                             f"{label} is a copy of tag '{tag}' (create_branch from the tag, or a fast-forward "
                             "to such a branch) made after the tagged snapshot's changelog expired: a stream "
                             "cannot read that snapshot's changes (as in Java); its data is whole", WARNING)
            else:
                for e in self._entries(label, snap.changelog_manifest_list, snap.changelog_manifest_list_size):
                    self._check_data_file(label, e)
        if snap.index_manifest is not None:
            records = self._decode(self.scan.index_manifest.path(snap.index_manifest), None, label,
                                   IndexManifestFile)
            rows = {e.file.file_name: e.file.row_count for e in live}
            for entry in records or []:
                self._check_index_file(label, entry, rows)
            if whole and (label.startswith("tag ") or snap.id == self._newest_snapshot):
                self._check_vectors_of_live_files(label, snap, records or [], rows)

    def _decoded_whole(self, list_name: str) -> bool:
        """Whether a manifest list and all its manifests decoded (read by `_entries` before)."""
        metas = self._decoded.get(self.scan.manifest_list.path(list_name))
        return metas is not None and all(self._decoded.get(self.scan.manifest_file.path(m.file_name)) is not None
                                         for m in metas)

    def _check_vectors_of_live_files(self, label: str, snap: Snapshot, records: list[IndexManifestEntry],
                                     live: dict[str, int]) -> None:
        """Every deletion vector of the newest snapshot or a tag marks a live file. Compactions
        drop the vectors of the files they replace (ours and Java's), so one of a dead file means
        a compaction rewrote the file without this vector's marks: Java 1.4 checks deletion-vector
        conflicts only in bucket-unaware tables, so its compaction committing over our delete or
        update in a bucketed table does that, and the deleted rows are live again."""
        repair = ("a tag cannot be repaired: delete it and tag a snapshot after the repair" if label.startswith("tag ")
                  else "re-apply the delete or update with paimon-streaming (`paimon-streaming delete`/`update`, "
                  "Table.delete/update): it marks the rows again, and its commit rewrites the bucket's index file "
                  "without this vector (a plain write, a compaction and Java's writers keep it); if no such row is "
                  "left, an overwrite of the partition drops it")
        where = label if label.startswith("snapshot ") else f"{label} (snapshot {snap.id})"
        for e in records:
            if e.index_file.index_type != DELETION_VECTORS_INDEX:
                continue
            path = self.scan.dirs.index_file(self._bucket_dir(e), e.index_file)
            bucket = f"bucket {e.bucket} of partition {self.scan.partition_dir(e.partition) or '(the table)'}"
            for meta in e.index_file.dv_ranges or ():
                if meta.data_file_name not in live:
                    self.problem("deletion-vector-of-dead-file", path,
                                 f"{where}: index file {path} holds a deletion vector of data file "
                                 f"{meta.data_file_name} ({bucket}), which is not live in it: a "
                                 "compaction replaced that file without the rows this vector deletes (such as a "
                                 "Java compaction committing over a delete or update: Java checks no deletion-vector "
                                 "conflict in bucketed tables), so those rows may be live again. To repair, "
                                 f"{repair}")

    def _check_changelogs(self) -> None:
        """Java's long-lived changelogs (long_lived_changelogs.py): each decodes, and what a
        stream reads from it is whole: its changelog files, or (committed under
        changelog-producer none) its delta's new files and their deletion vectors. Its base
        manifest list is not read (Java deletes what it references as the table moves on).
        A LATEST hint naming a changelog that is gone, with none after it, is an error: Java
        takes it for the newest and its changelog expiration fails every Java commit."""
        directory = f"{self.root}/changelog"
        ids = long_lived_changelog_ids(self.io, self.root)
        for cid in ids:
            path = f"{directory}/{CHANGELOG_PREFIX}{cid}"
            try:
                changelog = read_long_lived_changelog(self.io, self.root, cid)
            except CorruptFileError as exc:
                self.problem("corrupt-file", path, str(exc))
                continue
            if changelog is None:
                continue  # expired meanwhile
            label = f"long-lived changelog {cid}"
            self.report.snapshots += 1
            self._check_schema(label, changelog.schema_id)
            self.guarded(path, f"checking {label}", lambda label=label, c=changelog: self._check_changelog(label, c))
        hint = changelog_latest_hint(self.io, self.root)
        if hint is not None and hint > 0 and hint not in ids and hint + 1 not in ids:
            self.problem("hint", f"{directory}/LATEST", f"hint {directory}/LATEST names long-lived changelog {hint}, "
                         f"which does not exist (changelogs: {ids[0] if ids else None}..{ids[-1] if ids else None}): "
                         "Java takes it for the newest and its changelog expiration fails every Java commit; "
                         f"`paimon-streaming check --repair` rewrites it")

    def _check_changelog(self, label: str, c: Snapshot) -> None:
        if c.changelog_manifest_list:
            tag = self._copied_tag_without_changelog(c)
            if tag is not None:
                self.problem("expired-changelog", self.scan.manifest_list.path(c.changelog_manifest_list),
                             f"{label} is a copy of tag '{tag}' made after the tagged snapshot's changelog expired: "
                             "a stream cannot read its changes (as in Java)", WARNING)
                return
            for e in self._entries(label, c.changelog_manifest_list, c.changelog_manifest_list_size):
                self._check_data_file(label, e)
            return
        try:
            producer = CoreOptions(self.scan.schema_of(c.schema_id).options).get("changelog-producer")
        except PaimonError:
            return  # its schema file is missing or damaged: reported on its own
        if producer != "none" or c.commit_kind != APPEND:
            return  # a stream reads nothing of it
        added = [e for e in self._entries(label, c.delta_manifest_list, c.delta_manifest_list_size) if e.kind == ADD]
        for e in added:
            self._check_data_file(label, e)
        if c.index_manifest and self.io.exists(self.scan.index_manifest.path(c.index_manifest)):
            # (Java deletes it with the snapshot unless a newer snapshot shares it; then it is read)
            records = self._decode(self.scan.index_manifest.path(c.index_manifest), None, label,
                                   IndexManifestFile)
            rows = {e.file.file_name: e.file.row_count for e in added}
            for entry in records or []:
                self._check_index_file(label, entry, rows)

    def _entries(self, label: str, list_name: str, list_size: int | None) -> list[ManifestEntry]:
        metas = self._decode(self.scan.manifest_list.path(list_name), list_size, label, ManifestList)
        out = []
        for meta in metas or []:
            out.extend(self._decode(self.scan.manifest_file.path(meta.file_name), meta.file_size, label,
                                    ManifestFile) or [])
        return out

    # ---- files ------------------------------------------------------------------------------
    def _decode(self, path: str, size: int | None, label: str, kind) -> list | None:
        """Records of a metadata file (None when missing or corrupt, reported once); one in
        another format than `manifest.format` is a warning (Java 1.4 reads none of the table)."""
        if path not in self._decoded:
            self._decoded[path] = None
            if self._exists(path, size, label):
                try:
                    fmt, self._decoded[path] = read_records(self.io, path, kind, size)
                except PaimonError as exc:
                    self.problem("corrupt-file", path, f"{label}: {exc}")
                    return None
                option = self.scan.options.get("manifest.format")
                if fmt != option:
                    self.problem("manifest-format", path, f"{label}: {path} is {fmt}, but the table option "
                                 f"'manifest.format' is {option!r}: Java 1.4 reads every metadata file in that "
                                 f"format, so it reads nothing of this table (set the option back to {fmt!r})",
                                 WARNING)
        return self._decoded[path]

    def _exists(self, path: str, size: int | None, label: str) -> bool:
        """Whether `path` exists (with `size` when given); reports a problem the first time."""
        if path in self._verdicts:
            return self._verdicts[path]
        self._verdicts[path] = self._stat(path, size, label)
        return self._verdicts[path]

    def _stat(self, path: str, size: int | None, label: str) -> bool:
        directory, _, name = path.rpartition("/")
        listing = self._listings.get(directory)
        if listing is None:
            listing = {s.path.rsplit("/", 1)[-1]: s.size for s in self.io.list_status(directory) if not s.is_dir}
            self._listings[directory] = listing
        self.report.files += 1
        if name not in listing:
            self.problem("missing-file", path, f"{label} references {path}, which does not exist")
            return False
        if size is not None and listing[name] != size:
            self.problem("size-mismatch", path, f"{label} records {size} bytes for {path} but it has "
                         f"{listing[name]} bytes (truncated or replaced)")
            return False
        return True

    def _check_data_file(self, label: str, e: ManifestEntry) -> None:
        f = e.file
        key = (e.partition, e.bucket, f.file_name)
        if key in self._data_files_checked:  # live in many snapshots: checked (and reported) once
            return
        self._data_files_checked.add(key)
        self._check_schema(f"{label} (data file {f.file_name})", f.schema_id)
        directory = self._bucket_dir(e)
        path = TableDirs.data_file(directory, f)
        if path not in self._verdicts and self._exists(path, f.file_size, label) and self.verify_data:
            self._verify_content(label, path, e)
        for extra in TableDirs.data_file_paths(directory, f)[1:]:
            self._exists(extra, None, label)
        if self.verify_data and (f.embedded_index is not None or f.extra_files):
            self._verify_file_index(label, path, f)

    def _verify_file_index(self, label: str, path: str, f) -> None:
        """Decode a data file's file index (file_index.py): our check, its structure, its indexes."""
        try:
            fields = {fld.name: fld for fld in self.scan.schema_of(f.schema_id).fields}
        except PaimonError:
            return  # its schema file is missing or damaged: reported on its own
        try:
            file_index.verify(file_index.indexes_of(self.io, path, f.embedded_index, f.extra_files), path, fields)
        except MissingFileError:
            return  # reported by the existence check
        except CorruptFileError as exc:
            self.problem("corrupt-file", path, f"{label}: {exc}")

    def _verify_content(self, label: str, path: str, e: ManifestEntry) -> None:
        """Read the whole file: page checksums, footer, row count (datafile.read_data_file)."""
        try:
            schema = self.scan.schema_of(e.file.schema_id)
        except PaimonError:
            return  # its schema file is missing or damaged: reported on its own
        try:
            refuse_map_layouts(schema.options, self.path)  # a layout not read here: unreadable, not damaged
            verify_data_file(self.io, path, written_fields(file_fields(schema), e.file.write_cols),
                             e.file.file_size, e.file.row_count)
        except PaimonError as exc:
            self._verdicts[path] = False
            kind = "missing-file" if isinstance(exc, MissingFileError) else \
                "unreadable-file" if isinstance(exc, UnsupportedOperationError) else "corrupt-file"
            self.problem(kind, path, f"{label}: {exc}")

    def _bucket_dir(self, e: ManifestEntry | IndexManifestEntry) -> str:
        return self.scan.dirs.bucket(self.scan.partition_dir(e.partition), e.bucket)

    def _check_index_file(self, label: str, e: IndexManifestEntry, rows: dict[str, int]) -> None:
        """Every deletion vector decodes and, where `rows` has its data file's row count, marks
        positions within it (as reads check it)."""
        f = e.index_file
        path = self.scan.dirs.index_file(self._bucket_dir(e), f)
        if path in self._verdicts or not self._exists(path, f.file_size, label):
            return
        if f.index_type != DELETION_VECTORS_INDEX or not f.dv_ranges:
            return
        data = self.io.read_bytes(path)
        for meta in f.dv_ranges:
            try:
                count = rows.get(meta.data_file_name)
                if count is None:
                    decode_vector(data, meta, path)
                else:
                    decode_in_range(data, meta, path, count)
            except PaimonError as exc:
                self._verdicts[path] = False
                self.problem("corrupt-file", path, f"{label}: {exc}")
                return

    def _copied_tag_without_changelog(self, snap: Snapshot) -> str | None:
        """The tag `snap` is a copy of, when its changelog manifest list is gone: a tag keeps
        its snapshot's data, not its changelog, and create_branch copies the tag's file as the
        branch's first snapshot (as Java's does), which a fast-forward or a rollback to the tag
        copies into main."""
        if self.io.exists(self.scan.manifest_list.path(snap.changelog_manifest_list)):
            return None
        try:
            tagged = self.tag_manager.tagged_snapshots()
        except PaimonError:
            return None  # reported with the snapshots and tags
        for other, names in tagged:
            if (other.id, other.base_manifest_list, other.delta_manifest_list, other.changelog_manifest_list) == \
                    (snap.id, snap.base_manifest_list, snap.delta_manifest_list, snap.changelog_manifest_list):
                return names[0]
        return None

    # ---- hints and the newest snapshot ------------------------------------------------------
    def _branch_base(self, ids: list[int]) -> bool:
        """Whether a branch's earliest snapshot file is the snapshot it was made from: create_branch
        copies it with its tag and writes no hint (as Java's does), and a branch that committed
        nothing yet holds only it."""
        if self.branch == MAIN or not ids:
            return False
        try:
            first = self.snapshot_manager.snapshot(ids[0])
            return any(tagged.id == first.id and (tagged.base_manifest_list, tagged.delta_manifest_list)
                       == (first.base_manifest_list, first.delta_manifest_list)
                       for tagged, _ in self.tag_manager.tagged_snapshots())
        except PaimonError:
            return False  # reported with the snapshots and tags

    def _check_hints(self) -> None:
        sm = self.snapshot_manager
        ids = self._snapshot_ids()
        repair = "paimon-streaming check --repair" + ("" if self.branch == MAIN else f" '{self.report.table}'")
        base = self._branch_base(ids)  # its hints are only written by the branch's own commits
        for name in HINTS:
            path = sm.hint_path(name)
            try:
                raw = self.io.read_bytes(path)
            except FileNotFoundError:
                if ids and (name == "LATEST" or ids[0] > 1) and not (base and (name == "EARLIEST" or len(ids) == 1)):
                    self.problem("hint", path, f"hint {path} is missing; readers list {sm.dir} instead "
                                 f"(`{repair}` rewrites it)", severity=WARNING)
                continue
            value = sm.read_hint(name)
            if value is None:
                self.problem("hint", path, f"hint {path} holds {raw[:20]!r}, not a snapshot id; readers fall back "
                             f"to listing; `{repair}` rewrites it")
                continue
            if name == "LATEST" and (not ids or value > ids[-1]):
                newest = ids[-1] if ids else None
                self.problem("hint", path, f"hint {path} says snapshot {value} was committed, but snapshot file "
                             f"{sm.path(value)} does not exist and the newest snapshot file is "
                             f"{sm.path(newest) if ids else 'none'}: snapshot file(s) {(newest or 0) + 1}..{value} "
                             "were deleted. Readers and writers refuse the table (SnapshotMissingError) rather "
                             "than silently roll it back; restore the files from a backup, or accept the loss "
                             f"with `{repair}`")
            elif not ids or not ids[0] <= value <= ids[-1]:
                self.problem("hint", path, f"hint {path} points at snapshot {value}, outside the existing snapshots "
                             f"{ids[0] if ids else None}..{ids[-1] if ids else None}; readers list {sm.dir} instead "
                             f"(`{repair}` rewrites it)", severity=WARNING)
            elif value != (ids[-1] if name == "LATEST" else ids[0]):
                self.problem("hint", path, f"hint {path} is stale ({value}); readers probe past it",
                             severity=WARNING)

    def _check_newest(self, snap: Snapshot) -> None:
        live = self.scan.live_entries(snap)
        rows = sum(e.file.row_count for e in live)
        if rows != snap.total_record_count:
            self.problem("record-count", self.snapshot_manager.path(snap.id),
                         f"snapshot {snap.id} records totalRecordCount {snap.total_record_count} but its live "
                         f"files hold {rows} rows", severity=WARNING)
        self._check_bucket_counts(snap, live)
        if self.verify_data:
            self._check_hash_index(snap, live)
        opts = self.table.options
        if self.table.primary_keys and (opts.deletion_vectors or opts.merge_engine == "first-row"
                                        or is_cross_partition(self.table.schema)):
            self._check_unique_keys(snap)
        if row_tracking.enabled(opts.raw) and not self.table.primary_keys:
            for message in row_tracking.id_problems([e.file for e in live], snap.next_row_id,
                                                    data_evolution.enabled(opts.raw)):
                self.problem("row-ids", self.snapshot_manager.path(snap.id), f"snapshot {snap.id}: {message}")

    def _check_bucket_counts(self, snap: Snapshot, live: list[ManifestEntry]) -> None:
        """Every file of a partition written with one bucket count: keys hashed by two counts
        could be live twice (rescale.py)."""
        counts: dict[bytes, set[int]] = {}
        for e in live:
            if e.bucket >= 0:
                counts.setdefault(e.partition, set()).add(e.total_buckets)
        for partition, totals in counts.items():
            if len(totals) > 1:
                self.problem("bucket-count", self.snapshot_manager.path(snap.id),
                             f"snapshot {snap.id}: partition {self.scan.partition_dir(partition) or '(the table)'} "
                             f"has files of {sorted(totals)} buckets; rewrite it with Table.rescale() "
                             "(`paimon-streaming rescale`)")

    def _check_hash_index(self, snap: Snapshot, live: list[ManifestEntry]) -> None:
        """Dynamic bucket tables (HASH index files, dynamic_bucket.py): each bucket's HASH file
        holds the hash of every key of the bucket's data files, and a hash is indexed in one
        bucket of a partition only. Else a later write (ours or Java's) sends a key to a second
        bucket: a key live twice."""
        schema = self.table.schema
        if not schema.primary_keys or self.table.options.bucket != -1 or is_cross_partition(schema):
            return
        indexed: dict[bytes, dict[int, np.ndarray]] = {}
        unreadable: set[tuple[bytes, int]] = set()
        for e in self.scan.index_manifest.read(snap.index_manifest):
            if e.index_file.index_type != HASH_INDEX:
                continue
            path = self.scan.dirs.index_file(self._bucket_dir(e), e.index_file)
            try:
                hashes = read_hash_file(self.io, path, e.index_file)
            except PaimonError:
                unreadable.add((e.partition, e.bucket))  # reported by _check_index_file
                continue
            bucket_files = indexed.setdefault(e.partition, {})
            bucket_files[e.bucket] = np.concatenate([bucket_files.get(e.bucket, hashes[:0]), hashes])
        where = self.snapshot_manager.path(snap.id)
        for partition, buckets in indexed.items():
            both = np.concatenate(list(buckets.values()))
            labels = np.concatenate([np.full(len(h), b) for b, h in buckets.items()])
            pairs = np.unique(np.stack([both.astype(np.int64), labels]), axis=1)
            twice = np.unique(pairs[0][np.r_[False, pairs[0][1:] == pairs[0][:-1]]])
            if len(twice):
                self.problem("hash-index", where,
                             f"snapshot {snap.id}: partition {self.scan.partition_dir(partition) or '(the table)'}: "
                             f"{len(twice)} key hashes are indexed in two buckets (e.g. {twice[:3].tolist()}); "
                             "their keys may be live twice")
        keys = list(schema.trimmed_primary_keys)
        types = [schema.field(k).type for k in keys]
        for e in live:
            path = TableDirs.data_file(self._bucket_dir(e), e.file)
            if self._verdicts.get(path) is False or (e.partition, e.bucket) in unreadable:
                continue
            try:
                rows = read_evolved(self.io, path, self.scan.schema_of(e.file.schema_id), schema, keys, (),
                                    e.file.file_size, e.file.row_count)
            except (PaimonError, OSError, pa.ArrowException):
                continue  # reported with the data file
            hashes = bucket_key_hashes(rows, keys, types)
            bucket_hashes = indexed.get(e.partition, {}).get(e.bucket, np.empty(0, np.int32))
            missing = ~np.isin(hashes, bucket_hashes)
            if missing.any():
                self.problem("hash-index", path,
                             f"snapshot {snap.id}: {int(missing.sum())} keys of data file {e.file.file_name} (bucket "
                             f"{e.bucket} of partition {self.scan.partition_dir(e.partition) or '(the table)'}) are "
                             f"not in the bucket's HASH index file (e.g. "
                             f"{rows.filter(pa.array(missing)).slice(0, 3).to_pylist()}): a later write of such a "
                             "key would place it in another bucket, live twice")

    def _check_unique_keys(self, snap: Snapshot) -> None:
        """No primary key live twice, as readers see the table (merged, deletion vectors applied):
        where writers rely on deletion vectors or the first row, or, in a cross-partition table,
        on each key living in one partition (with where each duplicate lives)."""
        schema = self.table.schema
        keys = list(self.table.primary_keys)
        cross = is_cross_partition(schema)
        parts = [k for k in schema.partition_keys if k not in keys] if cross else []
        try:
            table = self.table.to_arrow(columns=keys + parts, snapshot_id=snap.id)
        except (PaimonError, OSError, pa.ArrowException) as exc:
            self.problem("corrupt-file", self.path, f"snapshot {snap.id} cannot be read: {exc}")
            return
        counts = table.group_by(keys).aggregate([([], "count_all")])
        dup = counts.filter(pc.greater(counts["count_all"], pa.scalar(1, pa.int64())))
        if dup.num_rows and cross:
            option = ignored_retractions(schema)
            cause = f" (merge engine 'deduplicate' with '{option}' = 'true' keeps a moved key's old row)" \
                if option else ""
            self.problem("duplicate-key", self.path,
                         f"snapshot {snap.id}: {dup.num_rows} primary keys are live more than once (e.g. "
                         f"{self._places(table, keys, parts)}): a cross-partition upsert table keeps each key in one "
                         "partition and bucket; readers return such a key once per place and Java Paimon's next "
                         f"writer fails on the table ('your data contains duplicates'){cause}; rewrite the table "
                         "keeping one row per key (an overwrite of the whole table)")
        elif dup.num_rows:
            sample = dup.slice(0, 3).select(keys).to_pylist()
            self.problem("duplicate-key", self.path,
                         f"snapshot {snap.id}: {dup.num_rows} primary keys are live more than once (e.g. "
                         f"{sample}); deletion vectors are missing marks — run a full compaction "
                         "(`paimon-streaming compact --full`) after finding the writer at fault")

    def _places(self, table: pa.Table, keys: list[str], parts: list[str]) -> str:
        """Where a few keys live more than once in `table` (their keys and partition columns)."""
        places = table.group_by(keys).aggregate([([], "count_all")] + [(p, "list") for p in parts])
        places = places.filter(pc.greater(places["count_all"], pa.scalar(1, pa.int64()))).slice(0, 3).to_pylist()
        schema = self.table.schema
        fields = schema.fields_of(schema.partition_keys)
        default, legacy = self.table.options.partition_default_name, self.table.options.get("partition.legacy-name")
        out = []
        for place in places:
            rows = ([place[f"{k}_list"][i] if k in parts else place[k] for k in schema.partition_keys]
                    for i in range(place["count_all"]))
            dirs = sorted(partition_path(values, fields, default, legacy) for values in rows)
            key = {k: place[k] for k in keys}
            out.append(f"{key} in {', '.join(dirs)}")
        return "; ".join(out)
