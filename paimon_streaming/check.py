"""Verifying a table: `check_table` reads every piece of metadata a reader could follow and
reports what is missing, truncated or inconsistent, instead of letting a later read fail (or
worse, silently return wrong rows).

Checked, for every snapshot and tag:

* snapshot/tag JSON decodes, snapshot ids are contiguous, schemas they use exist;
* manifest lists and manifests exist with their recorded size and decode (read uncached, so a
  file corrupted after it was cached is still found);
* every live data file, changelog file and extra file exists, data files with their recorded size;
* index files exist with their recorded size; every deletion vector decodes and passes its CRC;
* the LATEST/EARLIEST hints parse and point inside the snapshot range (a stale hint is only a
  warning: readers probe past it);
* the newest snapshot's totalRecordCount equals the rows of its live files (warning);
* deletion-vector and first-row tables: no primary key is live twice in the newest snapshot.

Problems are collected, not raised, so one run reports everything; `CheckReport.ok` is False
when any problem is an error.
"""
from __future__ import annotations

from dataclasses import asdict, dataclass, field

import pyarrow as pa
import pyarrow.compute as pc

from .deletionvectors import decode_vector
from .errors import PaimonError
from .manifest import IndexManifestEntry, ManifestEntry, ManifestFileMeta, live_entries
from .manifest.entries import DELETION_VECTORS_INDEX
from .manifest.files import read_avro
from .scan import TableScan
from .snapshot import Snapshot
from .table import Table

ERROR, WARNING = "error", "warning"


@dataclass(frozen=True)
class Problem:
    severity: str   # ERROR or WARNING
    kind: str       # missing-file, size-mismatch, corrupt-file, snapshot-gap, hint, duplicate-key, ...
    path: str       # the file (or directory) concerned
    message: str


@dataclass
class CheckReport:
    table: str
    snapshots: int = 0
    files: int = 0
    problems: list[Problem] = field(default_factory=list)

    @property
    def ok(self) -> bool:
        return not any(p.severity == ERROR for p in self.problems)

    def errors(self) -> list[Problem]:
        return [p for p in self.problems if p.severity == ERROR]

    def to_dict(self) -> dict:
        return {"table": self.table, "ok": self.ok, "snapshots": self.snapshots, "files": self.files,
                "problems": [asdict(p) for p in self.problems]}


def check_table(table: Table) -> CheckReport:
    """Verify `table` (see the module docstring); never raises for a problem in the table."""
    return _Checker(table).run()


class _Checker:
    def __init__(self, table: Table):
        self.table = table
        self.io = table.file_io
        self.scan = TableScan(table.file_io, table.path, table.schema)
        self.report = CheckReport(table.path)
        self._listings: dict[str, dict[str, int]] = {}
        self._decoded: dict[str, list[dict] | None] = {}
        self._verdicts: dict[str, bool] = {}
        self._schema_ids: set[int] | None = None

    def problem(self, kind: str, path: str, message: str, severity: str = ERROR) -> None:
        self.report.problems.append(Problem(severity, kind, path, message))

    def run(self) -> CheckReport:
        snapshots = self._snapshots()
        for label, snap in snapshots:
            self._check_snapshot(label, snap)
        self._check_hints()
        latest = self.table.snapshot_manager.latest_id()
        newest = next((s for label, s in snapshots if s.id == latest and label.startswith("snapshot")), None)
        if newest is not None and self.report.ok:
            self._check_newest(newest)
        return self.report

    # ---- snapshots and tags ---------------------------------------------------------------
    def _snapshots(self) -> list[tuple[str, Snapshot]]:
        sm, tm = self.table.snapshot_manager, self.table.tag_manager
        ids = self._snapshot_ids()
        out: list[tuple[str, Snapshot]] = []
        for prev, cur in zip(ids, ids[1:]):
            if cur != prev + 1:
                self.problem("snapshot-gap", sm.dir, f"snapshots {prev + 1}..{cur - 1} are missing between "
                             f"{prev} and {cur}; snapshot ids must be contiguous")
        for sid in ids:
            try:
                out.append((f"snapshot {sid}", sm.snapshot(sid)))
            except PaimonError as exc:
                self.problem("corrupt-file", sm.path(sid), str(exc))
        for name in tm.tag_names():
            try:
                out.append((f"tag {name}", Snapshot.from_json(self.io.read_text(tm.path(name)))))
            except (ValueError, KeyError, TypeError) as exc:
                self.problem("corrupt-file", tm.path(name), f"tag file cannot be parsed: {exc}")
        for label, snap in out:
            self._check_schema(label, snap.schema_id)
        self.report.snapshots = len(out)
        return out

    def _snapshot_ids(self) -> list[int]:
        names = self.io.list_names(self.table.snapshot_manager.dir)
        return sorted(int(n[9:]) for n in names if n.startswith("snapshot-") and n[9:].isdigit())

    def _check_snapshot(self, label: str, snap: Snapshot) -> None:
        data = self._entries(label, snap.base_manifest_list, snap.base_manifest_list_size) + \
            self._entries(label, snap.delta_manifest_list, snap.delta_manifest_list_size)
        try:
            live = live_entries(data)
        except PaimonError as exc:
            self.problem("corrupt-file", snap.base_manifest_list, f"{label}: manifests do not replay: {exc}")
            live = []
        for e in live:
            self._check_data_file(label, e)
        if snap.changelog_manifest_list is not None:
            for e in self._entries(label, snap.changelog_manifest_list, snap.changelog_manifest_list_size):
                self._check_data_file(label, e)
        if snap.index_manifest is not None:
            records = self._decode(self.scan.index_manifest.path(snap.index_manifest), None, label)
            for rec in records or []:
                self._check_index_file(label, IndexManifestEntry.from_avro(rec))

    def _entries(self, label: str, list_name: str, list_size: int | None) -> list[ManifestEntry]:
        metas = self._decode(self.scan.manifest_list.path(list_name), list_size, label)
        out = []
        for rec in metas or []:
            meta = ManifestFileMeta.from_avro(rec)
            records = self._decode(self.scan.manifest_file.path(meta.file_name), meta.file_size, label)
            out.extend(ManifestEntry.from_avro(r) for r in records or [])
        return out

    # ---- files ------------------------------------------------------------------------------
    def _decode(self, path: str, size: int | None, label: str) -> list[dict] | None:
        """Avro records of a metadata file (None when missing or corrupt, reported once)."""
        if path not in self._decoded:
            self._decoded[path] = None
            if self._exists(path, size, label):
                try:
                    self._decoded[path] = read_avro(self.io, path)
                except PaimonError as exc:
                    self.problem("corrupt-file", path, f"{label}: {exc}")
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

    def _check_schema(self, label: str, schema_id: int) -> None:
        """Readers map every file's columns through the schema it was written with."""
        if self._schema_ids is None:
            self._schema_ids = set(self.table.schema_manager.schema_ids())
        path = f"{self.table.path}/schema/schema-{schema_id}"
        if schema_id not in self._schema_ids and path not in self._verdicts:
            self._verdicts[path] = False
            self.problem("missing-file", path, f"{label} uses schema {schema_id}, whose schema file does not exist")

    def _check_data_file(self, label: str, e: ManifestEntry) -> None:
        f = e.file
        self._check_schema(f"{label} (data file {f.file_name})", f.schema_id)
        directory = self._bucket_dir(e)
        path = f.external_path or f"{directory}/{f.file_name}"
        self._exists(path, f.file_size, label)
        for extra in f.extra_files:
            self._exists(f"{directory}/{extra}", None, label)

    def _bucket_dir(self, e: ManifestEntry) -> str:
        return self.scan.split_of(e.partition, e.bucket, e.total_buckets, []).bucket_path

    def _check_index_file(self, label: str, e: IndexManifestEntry) -> None:
        f = e.index_file
        path = f.external_path or f"{self.scan.table_path}/index/{f.file_name}"
        if path in self._verdicts or not self._exists(path, f.file_size, label):
            return
        if f.index_type != DELETION_VECTORS_INDEX or not f.dv_ranges:
            return
        data = self.io.read_bytes(path)
        for meta in f.dv_ranges:
            try:
                decode_vector(data, meta, path)
            except PaimonError as exc:
                self.problem("corrupt-file", path, f"{label}: {exc}")
                return

    # ---- hints and the newest snapshot ------------------------------------------------------
    def _check_hints(self) -> None:
        sm = self.table.snapshot_manager
        ids = self._snapshot_ids()
        for name in ("LATEST", "EARLIEST"):
            path = f"{sm.dir}/{name}"
            try:
                text = self.io.read_text(path)
            except FileNotFoundError:
                continue
            if not text.strip().isdigit():
                self.problem("hint", path, f"hint {path} holds {text[:20]!r}, not a snapshot id; readers fall "
                             "back to listing, rewrite it with the right id or delete it")
                continue
            value = int(text.strip())
            if not ids or not ids[0] <= value <= ids[-1]:
                self.problem("hint", path, f"hint {path} points at snapshot {value}, outside the existing "
                             f"snapshots {ids[0] if ids else None}..{ids[-1] if ids else None}")
            elif value != (ids[-1] if name == "LATEST" else ids[0]):
                self.problem("hint", path, f"hint {path} is stale ({value}); readers probe past it",
                             severity=WARNING)

    def _check_newest(self, snap: Snapshot) -> None:
        live = self.scan.live_entries(snap)
        rows = sum(e.file.row_count for e in live)
        if rows != snap.total_record_count:
            self.problem("record-count", self.table.snapshot_manager.path(snap.id),
                         f"snapshot {snap.id} records totalRecordCount {snap.total_record_count} but its live "
                         f"files hold {rows} rows", severity=WARNING)
        opts = self.table.options
        if self.table.primary_keys and (opts.deletion_vectors or opts.merge_engine == "first-row"):
            self._check_unique_keys(snap)

    def _check_unique_keys(self, snap: Snapshot) -> None:
        keys = self.table.primary_keys
        try:
            table = self.table.to_arrow(columns=keys, snapshot_id=snap.id)
        except (PaimonError, OSError, pa.ArrowException) as exc:
            self.problem("corrupt-file", self.table.path, f"snapshot {snap.id} cannot be read: {exc}")
            return
        counts = table.group_by(keys).aggregate([([], "count_all")])
        dup = counts.filter(pc.greater(counts["count_all"], pa.scalar(1, pa.int64())))
        if dup.num_rows:
            sample = dup.slice(0, 3).select(keys).to_pylist()
            self.problem("duplicate-key", self.table.path,
                         f"snapshot {snap.id}: {dup.num_rows} primary keys are live more than once (e.g. "
                         f"{sample}); deletion vectors are missing marks — run a full compaction "
                         "(`paimon-streaming compact --full`) after finding the writer at fault")
