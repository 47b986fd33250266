"""Cross-partition upsert tables: a primary key without every partition key, `bucket` = -1.

A key's partition comes from its row, so a key may move from one partition to another; Java's
writers (`crosspartition/GlobalIndexAssigner`, Java's KEY_DYNAMIC bucket mode) keep a
table-wide index of where each key lives, (partition, bucket), and so do we (`KeyPlacement`).
A row whose key lives in another partition is handled by the merge engine, as Java's
`ExistingProcessor`s do:

* deduplicate: the old row is deleted (a -D row in its old partition and bucket) and the new
  one goes to its own partition (`DeleteExistingProcessor`);
* partial-update, aggregation: the row goes to the old partition and bucket, its partition
  columns set to the old partition's values, and merges with the old row there (`UseOld...`);
* first-row: the row is dropped, the old one stays (`SkipNew...`).

Within a batch the same holds row after row: for deduplicate a key ends in the partition of
its last row (its rows in other partitions are superseded and not written), otherwise in its
old partition or that of its first row. A key new to the table takes a bucket of its
partition: the first, in bucket order, holding fewer than `dynamic-bucket.target-row-num`
keys, else the smallest unused id (Java's `crosspartition/BucketAssigner`). No HASH index
files are written (Java's KEY_DYNAMIC mode keeps none).

The index is built from the table when a process first writes it (the primary keys of each
bucket, read as readers see them) and kept between this process's commits; a commit by any
other writer in between (COMPACT snapshots aside), a rollback past this process's last commit
or an expired snapshot since it makes the next write build it again, and
one racing a write fails that write's commit (`check_no_concurrent_writes`), which is then
placed again, so a key never lands in two partitions (writers of one table in threads of one
process share the index the same way: each thread's batch is kept once it commits). As in Java, keys stay in the index
when their rows are deleted, until it is built again.
"""
from __future__ import annotations

import time
from dataclasses import dataclass, field
from threading import Lock, get_ident

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from .binary_row import deserialize_row, encode_rows
from .branches import branch_path
from .errors import SnapshotNotFoundError, StalePlanError, UnsupportedOperationError
from .fileio import FileIO
from .evolution import read_evolved
from .keyvalue import DELETE, SEQUENCE_NUMBER, VALUE_KIND
from .lsm.lookup import _hash64, _ranges, int_keys, is_int_key
from .manifest import ManifestEntry
from .merge_engine import ignore_delete_option, is_retract, last_of_each_key
from .options import CoreOptions
from .paths import TableDirs, partition_path
from .read import SplitReader
from .scan import TableScan
from .schema import TableSchema
from .snapshot import COMPACT, Snapshot, SnapshotManager

_KEPT_LOCK = Lock()
_DEDUPLICATE, _USE_OLD, _SKIP_NEW = "deduplicate", "use-old", "skip-new"
_PROCESSORS = {"deduplicate": _DEDUPLICATE, "partial-update": _USE_OLD, "aggregation": _USE_OLD,
               "first-row": _SKIP_NEW}


def is_cross_partition(schema: TableSchema) -> bool:
    """A primary-key table whose key leaves out a partition key, in dynamic bucket mode."""
    return bool(schema.primary_keys) and bool(set(schema.partition_keys) - set(schema.primary_keys)) \
        and CoreOptions(schema.options).bucket == -1


def ignored_retractions(schema: TableSchema) -> str | None:
    """The option ('ignore-delete' or an alias) that drops the -D row a deduplicate
    cross-partition table retracts a moved key's old row with, or None. Writers and readers
    drop it alike (Java's too), so a move would leave the key live in both partitions."""
    if is_cross_partition(schema) and CoreOptions(schema.options).merge_engine == "deduplicate":
        return ignore_delete_option(schema.options)
    return None


def check_partition_overwrite(schema: TableSchema, table_name: str) -> None:
    """Refuse an overwrite of some partitions of a cross-partition table: a key of the new rows
    may live in a partition left as it is, and would then be live twice (an overwrite of the
    whole table, or an upsert, keeps each key in one partition)."""
    if is_cross_partition(schema):
        raise UnsupportedOperationError(
            f"a dynamic partition overwrite of {table_name} is not supported: its primary key "
            f"{schema.primary_keys} leaves out the partition keys, so a key written into the replaced "
            "partitions may live in another one, which the overwrite keeps; overwrite the whole table, "
            "or delete the partitions and write the rows")


@dataclass
class _Keys:
    """Keys in probe order: sorted int64 values (a single integer-like key) or sorted 64-bit
    hashes of the BinaryRows with the rows themselves, so a hash collision is never a match."""
    values: np.ndarray
    encoded: pa.Array | None = None

    def __len__(self) -> int:
        return len(self.values)


def _probe_values(keys: pa.Table, types: list) -> tuple[np.ndarray, pa.Array | None]:
    if is_int_key(types):
        return int_keys(keys.column(0)), None
    encoded = encode_rows([keys.column(i) for i in range(keys.num_columns)], types)
    return _hash64(encoded), encoded


@dataclass
class _Generation:
    """Keys added together, sorted for probing, with where each lives."""
    keys: _Keys
    partitions: np.ndarray  # int32 ids into KeyPlacement.partitions
    buckets: np.ndarray     # int32

    def find(self, probe: _Keys) -> tuple[np.ndarray, np.ndarray]:
        """(probe index, position here) of every probe key held here (each key at most once)."""
        lo = np.searchsorted(self.keys.values, probe.values, "left")
        hi = np.searchsorted(self.keys.values, probe.values, "right")
        counts = hi - lo
        which = np.repeat(np.arange(len(probe)), counts)
        slots = _ranges(lo, hi)
        if self.keys.encoded is not None and len(slots):
            same = pc.equal(self.keys.encoded.take(pa.array(slots)), probe.encoded.take(pa.array(which)))
            keep = same.to_numpy(zero_copy_only=False)
            which, slots = which[keep], slots[keep]
        return which, slots


def _generation(values: np.ndarray, encoded: pa.Array | None, partitions: np.ndarray,
                buckets: np.ndarray) -> _Generation:
    order = np.argsort(values, kind="stable")
    return _Generation(_Keys(values[order], None if encoded is None else encoded.take(pa.array(order))),
                       partitions[order].astype(np.int32), buckets[order].astype(np.int32))


@dataclass
class Assignment:
    """A batch placed: the rows to write (partition columns set, superseded rows dropped,
    retractions appended), each row's bucket, and the index change to keep once committed."""
    data: pa.Table
    buckets: np.ndarray
    moved: list[tuple[int, np.ndarray, np.ndarray, np.ndarray]]  # (generation, positions, partitions, buckets)
    added: _Generation | None
    counts: dict[tuple[int, int], int]


@dataclass
class KeyPlacement:
    """Where every key of a cross-partition upsert table lives, and each bucket's key count."""
    schema: TableSchema
    partitions: list[bytes] = field(default_factory=list)
    generations: list[_Generation] = field(default_factory=list)
    counts: dict[tuple[int, int], int] = field(default_factory=dict)  # (partition id, bucket) -> keys
    _ids: dict[bytes, int] = field(default_factory=dict)

    @property
    def key_types(self) -> list:
        return [f.type for f in self.schema.fields_of(self.schema.primary_keys)]

    def partition_id(self, partition: bytes) -> int:
        with _KEPT_LOCK:  # writers of one table in several threads share its index
            if partition not in self._ids:
                self._ids[partition] = len(self.partitions)
                self.partitions.append(partition)
            return self._ids[partition]

    def __len__(self) -> int:
        return sum(len(g.keys) for g in self.generations)

    # ---- building -------------------------------------------------------------------------
    def add_bucket(self, partition: bytes, bucket: int, keys: pa.Table) -> None:
        """Bootstrap: the live keys of one bucket."""
        if not keys.num_rows:
            return
        pid = self.partition_id(partition)
        values, encoded = _probe_values(keys, self.key_types)
        self._append(_generation(values, encoded, np.full(len(values), pid), np.full(len(values), bucket)))
        self.counts[(pid, bucket)] = self.counts.get((pid, bucket), 0) + keys.num_rows

    def _append(self, generation: _Generation) -> None:
        """Add keys as a new generation, merging generations as a binary counter (a
        generation at least half its predecessor's size merges into it), so a probe visits
        about log2(n) sorted arrays and each key is re-sorted about log2(n) times."""
        generations = self.generations + [generation]
        while len(generations) > 1 and 2 * len(generations[-1].keys) >= len(generations[-2].keys):
            b, a = generations.pop(), generations.pop()
            encoded = None if a.keys.encoded is None else pa.concat_arrays([a.keys.encoded, b.keys.encoded])
            generations.append(_generation(np.concatenate([a.keys.values, b.keys.values]), encoded,
                                           np.concatenate([a.partitions, b.partitions]),
                                           np.concatenate([a.buckets, b.buckets])))
        self.generations = generations

    def commit(self, assignment: Assignment) -> None:
        """Keep a committed batch's placement. Changed generations are copied, not changed in
        place: a thread placing another batch meanwhile reads a consistent index (its commit
        then fails the race check and it places again)."""
        generations = list(self.generations)
        for g, positions, partitions, buckets in assignment.moved:
            old = generations[g]
            generations[g] = _Generation(old.keys, old.partitions.copy(), old.buckets.copy())
            generations[g].partitions[positions] = partitions
            generations[g].buckets[positions] = buckets
        self.generations = generations
        if assignment.added is not None and len(assignment.added.keys):
            self._append(assignment.added)
        self.counts = assignment.counts

    def _partition_dir(self, pid: int) -> str:
        fields = self.schema.fields_of(self.schema.partition_keys)
        options = CoreOptions(self.schema.options)
        return partition_path(deserialize_row(self.partitions[int(pid)], [f.type for f in fields]), fields,
                              options.partition_default_name, options.get("partition.legacy-name"))

    # ---- placing a batch ----------------------------------------------------------------------
    def assign(self, data: pa.Table, part_ids: np.ndarray, part_rows: list[bytes], target_rows: int,
               engine: str, table_name: str) -> Assignment:
        """Place a conformed batch (`part_ids`: each row's index into `part_rows`, its partition).
        A key moving to another partition of a table that ignores its retraction is refused."""
        processor = _PROCESSORS.get(engine)
        if processor is None:
            raise UnsupportedOperationError(f"cross-partition upserts with merge engine '{engine}'")
        n = data.num_rows
        rows_part = np.asarray([self.partition_id(p) for p in part_rows], np.int64)[part_ids] if n else \
            np.empty(0, np.int64)
        values, encoded = _probe_values(data.select(list(self.schema.primary_keys)), self.key_types)
        # one id per distinct key, and each key's first and last row
        if encoded is None:
            distinct, key_of_row = np.unique(values, return_inverse=True)
            probe = _Keys(distinct)
        else:
            dictionary = pc.dictionary_encode(encoded)
            key_of_row = dictionary.indices.to_numpy(zero_copy_only=False).astype(np.int64)
            distinct_rows = dictionary.dictionary
            probe = _Keys(_hash64(distinct_rows), distinct_rows)
        k = len(probe)
        first = np.full(k, n, np.int64)
        np.minimum.at(first, key_of_row, np.arange(n))
        last = np.full(k, -1, np.int64)
        np.maximum.at(last, key_of_row, np.arange(n))
        old_part = np.full(k, -1, np.int64)
        old_bucket = np.full(k, -1, np.int64)
        found_at = []  # (generation, key indices, positions)
        for g, generation in enumerate(self.generations):  # a list another thread's commit replaces, never changes
            which, slots = generation.find(probe)
            old_part[which] = generation.partitions[slots]
            old_bucket[which] = generation.buckets[slots]
            found_at.append((g, which, slots))
        exists = old_part >= 0

        if processor == _DEDUPLICATE:
            target = rows_part[last] if n else np.empty(0, np.int64)
        else:
            target = np.where(exists, old_part, rows_part[first] if n else 0)
        keeps_bucket = exists & (old_part == target)
        counts = dict(self.counts)
        retract = np.flatnonzero(exists & ~keeps_bucket) if processor == _DEDUPLICATE else np.empty(0, np.int64)
        option = ignored_retractions(self.schema) if len(retract) else None
        if option:
            k = retract[0]
            key = data.select(list(self.schema.primary_keys)).slice(int(last[k]), 1).to_pylist()[0]
            raise UnsupportedOperationError(
                f"cannot move key {key} of {table_name} from partition {self._partition_dir(old_part[k])} to "
                f"{self._partition_dir(target[k])} ({len(retract)} key(s) of the batch move): the table is a "
                f"cross-partition upsert table with merge engine 'deduplicate' and '{option}' = 'true', which drops "
                "the -D row retracting a key from its old partition, so the old row would stay live beside the new "
                "one (readers would return the key twice, and Java Paimon's next writer fails on the table: 'your "
                "data contains duplicates'); nothing was written. Write the key's rows into the partition it lives "
                "in, or use a table without the option (drop -D rows before writing instead)")
        for p, b in zip(old_part[retract].tolist(), old_bucket[retract].tolist()):
            counts[(p, b)] = counts.get((p, b), 0) - 1
        bucket = np.where(keeps_bucket, old_bucket, -1)
        if processor == _SKIP_NEW:
            bucket = np.where(exists, old_bucket, bucket)
        fresh = np.flatnonzero(bucket < 0)
        fresh = fresh[np.argsort(first[fresh], kind="stable")]  # in order of first appearance
        for pid in np.unique(target[fresh]).tolist():
            mine = fresh[target[fresh] == pid]
            bucket[mine] = _fill(counts, pid, len(mine), target_rows)

        # the rows written: those in their key's target partition, or all moved there
        row_target = target[key_of_row] if n else np.empty(0, np.int64)
        if processor == _USE_OLD:
            out = _set_partitions(data, rows_part != row_target, row_target, self)
            keep = np.arange(n)
        else:
            keep = np.flatnonzero(rows_part == row_target)
            out = data.take(pa.array(keep)) if len(keep) < n else data
        buckets = bucket[key_of_row[keep]]
        if len(retract):
            gone = data.take(pa.array(last[retract]))
            gone = _set_partitions(gone, np.ones(len(retract), bool), old_part[retract], self)
            kinds = pa.array(np.full(len(retract), DELETE, np.int8))
            if VALUE_KIND in gone.column_names:
                at = gone.column_names.index(VALUE_KIND)
                gone = gone.set_column(at, gone.schema.field(at), kinds)
                out = pa.concat_tables([out, gone])
            else:  # an upsert-only batch: every written row becomes +I, the retractions -D
                out = pa.concat_tables([out.append_column(VALUE_KIND, pa.array(np.zeros(out.num_rows, np.int8))),
                                        gone.append_column(VALUE_KIND, kinds)])
            buckets = np.concatenate([buckets, old_bucket[retract]])

        moved = []
        for g, which, slots in found_at:
            change = (old_part[which] != target[which]) | (old_bucket[which] != bucket[which])
            if change.any():
                moved.append((g, slots[change], target[which][change].astype(np.int32),
                              bucket[which][change].astype(np.int32)))
        new = np.flatnonzero(~exists)
        added = None
        if len(new):
            added = _generation(probe.values[new], None if probe.encoded is None else probe.encoded.take(pa.array(new)),
                                target[new], bucket[new])
        return Assignment(out, buckets.astype(np.int64), moved, added, counts)


def _fill(counts: dict[tuple[int, int], int], pid: int, n: int, target_rows: int) -> np.ndarray:
    """Buckets of partition `pid` for `n` new keys (Java's BucketAssigner, key after key):
    buckets below `target_rows` keys in bucket order, then the smallest unused ids. Updates
    `counts`."""
    used = sorted(b for (p, b) in counts if p == pid)
    ids, caps = [], []
    for b in used:
        room = target_rows - counts[(pid, b)]
        if room > 0:
            ids.append(b)
            caps.append(room)
    taken, candidate = set(used), 0
    while sum(caps) < n:
        while candidate in taken:
            candidate += 1
        ids.append(candidate)
        caps.append(target_rows)
        taken.add(candidate)
    out = np.repeat(np.asarray(ids, np.int64), caps)[:n]
    for b, c in zip(*np.unique(out, return_counts=True)):
        counts[(pid, int(b))] = counts.get((pid, int(b)), 0) + int(c)
    return out


def _set_partitions(data: pa.Table, rows: np.ndarray, partitions: np.ndarray, placement: KeyPlacement) -> pa.Table:
    """`data` with the partition columns of `rows` (a mask) set to the values of `partitions`
    (per row, ids into `placement.partitions`)."""
    if not rows.any():
        return data
    fields = placement.schema.fields_of(placement.schema.partition_keys)
    wanted = np.unique(partitions[rows])
    values = [deserialize_row(placement.partitions[int(p)], [f.type for f in fields]) for p in wanted]
    index = pa.array(np.searchsorted(wanted, np.where(rows, partitions, wanted[0])))
    mask = pa.array(rows)
    for i, f in enumerate(fields):
        column = data.column(f.name).combine_chunks()
        moved = pa.array([v[i] for v in values], column.type).take(index)
        at = data.column_names.index(f.name)
        data = data.set_column(at, data.schema.field(at), pc.if_else(mask, moved, column))
    return data


# ---- the index of each table, kept between this process's commits -------------------------------
@dataclass
class _Kept:
    snapshot_id: int
    placement: KeyPlacement
    # who committed `snapshot_id`, and when the commit returned: a snapshot of that id by another
    # commit (user, identifier) or made later is another's, committed after a rollback removed this one
    commit_user: str
    identifier: int
    committed_ms: int


_KEPT: dict[tuple[str, str], _Kept] = {}
# batches placed and not yet committed, by (table path, branch, thread): a thread writes a
# batch and commits it, and another thread's batch of the same table never takes its place
_PENDING: dict[tuple[str, str, int], tuple[int, KeyPlacement, Assignment]] = {}


def place(writer, snapshot: Snapshot | None, live: list[ManifestEntry], overwrite: bool = False) -> None:
    """Give `writer` (a TableWrite of a cross-partition table) the index for a write planned on
    `snapshot`: empty for an empty table or an overwrite; the one this process kept for
    `snapshot` (or for an older snapshot followed only by COMPACT snapshots); else built from
    the table (`bootstrap`)."""
    schema, key = writer.schema, (writer.table_path, writer.branch)
    writer.planned_on = snapshot
    if snapshot is None or overwrite:
        writer.placement = KeyPlacement(schema)
        return
    meta = branch_path(writer.table_path, writer.branch)
    snapshots = SnapshotManager(writer.file_io, meta)
    with _KEPT_LOCK:
        kept = _KEPT.get(key)
    if kept is not None and kept.placement.schema.primary_keys == schema.primary_keys \
            and kept.placement.schema.partition_keys == schema.partition_keys and kept.snapshot_id <= snapshot.id \
            and _still_holds(snapshots, kept, snapshot):
        kept.placement.schema = schema
        writer.placement = kept.placement
        return
    scan = TableScan(writer.file_io, writer.table_path, schema, writer.branch)
    writer.placement = bootstrap(writer.file_io, scan, schema, snapshot, writer.table_name, live)


def _still_holds(snapshots: SnapshotManager, kept: _Kept, latest: Snapshot) -> bool:
    """Whether the index kept at snapshot `kept.snapshot_id` holds at `latest`: that snapshot is
    still the one this process committed (not another's that took its id after a rollback), and
    only COMPACT snapshots follow it. False when one of them has expired: what it did is unknown."""
    try:
        ours = latest if latest.id == kept.snapshot_id else snapshots.snapshot(kept.snapshot_id)
        mine = (ours.commit_user, ours.commit_identifier) == (kept.commit_user, kept.identifier) \
            and ours.time_millis <= kept.committed_ms
        return mine and all(
            snapshots.snapshot(i).commit_kind == COMPACT for i in range(kept.snapshot_id + 1, latest.id + 1))
    except SnapshotNotFoundError:
        return False


def placed(writer) -> None:
    """After `writer` wrote a batch: remember its placement until the batch commits."""
    if writer.assignment is None:
        return
    with _KEPT_LOCK:
        _PENDING[(writer.table_path, writer.branch, get_ident())] = (
            writer.planned_on.id if writer.planned_on else 0, writer.placement, writer.assignment)


def committed(table_path: str, branch: str, planned_on: int | None, snapshot_ids: list[int], commit_user: str,
              identifier: int) -> None:
    """After a commit of a batch planned on snapshot `planned_on`: keep the index with the
    batch placed in it, when the batch was placed in this process and its snapshots follow
    the planned one directly; else forget the index (the next write builds it again)."""
    key, planned = (table_path, branch), planned_on or 0
    with _KEPT_LOCK:
        pending = _PENDING.pop((table_path, branch, get_ident()), None)
        if pending is not None and pending[0] == planned and snapshot_ids and snapshot_ids[0] == planned + 1 \
                and snapshot_ids == list(range(planned + 1, planned + 1 + len(snapshot_ids))):
            _, placement, assignment = pending
            placement.commit(assignment)
            _KEPT[key] = _Kept(snapshot_ids[-1], placement, commit_user, identifier, int(time.time() * 1000))
        else:
            _KEPT.pop(key, None)


def forget_all() -> None:
    with _KEPT_LOCK:
        _KEPT.clear()
        _PENDING.clear()


def check_no_concurrent_writes(table_name: str, planned_on: Snapshot | None, newer: list[Snapshot],
                               commit_user: str) -> None:
    """A batch placed on `planned_on` (a cross-partition batch by where its keys lived; a
    delete or update by the rows it read there): a snapshot another writer added since (other
    than a compaction) may have moved those keys or changed those rows."""
    for s in newer:
        if s.commit_kind != COMPACT:
            raise StalePlanError(
                f"{s.commit_user} committed snapshot {s.id} ({s.commit_kind}) to {table_name} after this batch of "
                f"{commit_user} was planned on snapshot {planned_on.id if planned_on else 'none'}: the keys or rows "
                "it was planned by may have changed; nothing was committed, plan the batch again")


def bootstrap(file_io: FileIO, scan: TableScan, schema: TableSchema, snapshot: Snapshot, table_name: str,
              live: list[ManifestEntry]) -> KeyPlacement:
    """The index of the table at `snapshot`: the primary keys of each bucket, read as readers
    see them (merged, deletion vectors applied). Tables whose readers skip level 0 (deletion
    vectors, first-row) may hold level-0 files a writer has not compacted yet (another writer's
    batch between its two snapshots, or Java's): their newest version of a key decides."""
    placement = KeyPlacement(schema)
    pk = list(schema.primary_keys)
    level0: dict[tuple[bytes, int], list[ManifestEntry]] = {}
    if CoreOptions(schema.options).lookup_compaction:
        for e in live:
            if e.file.level == 0:
                level0.setdefault((e.partition, e.bucket), []).append(e)
    reader = SplitReader(file_io, scan, schema)
    for split in scan.plan(snapshot):
        keys = reader.read([split], pk)
        waiting = level0.pop((split.partition, split.bucket), None)
        if waiting:
            keys = _with_level0(keys, _level0_rows(file_io, scan, schema, waiting), placement.key_types)
        placement.add_bucket(split.partition, split.bucket, keys)
    for (partition, bucket), waiting in level0.items():  # buckets with level-0 files alone
        placement.add_bucket(partition, bucket, _with_level0(
            reader.read([], pk), _level0_rows(file_io, scan, schema, waiting), placement.key_types))
    return placement


def _level0_rows(file_io: FileIO, scan: TableScan, schema: TableSchema, entries: list[ManifestEntry]) -> pa.Table:
    """The primary keys, sequence numbers and row kinds of one bucket's level-0 files."""
    e = entries[0]
    directory = scan.split_of(e.partition, e.bucket, e.total_buckets, []).bucket_path
    return pa.concat_tables([
        read_evolved(file_io, TableDirs.data_file(directory, f.file), scan.schema_of(f.file.schema_id), schema,
                     list(schema.primary_keys), [SEQUENCE_NUMBER, VALUE_KIND], f.file.file_size, f.file.row_count)
        for f in entries])


def _with_level0(keys: pa.Table, level0: pa.Table, types: list) -> pa.Table:
    """A bucket's live keys once its level-0 rows apply: a key whose newest level-0 row is an
    insert or update is live, one whose newest is a retraction is not."""
    names = keys.column_names
    newest = level0.sort_by([(n, "ascending") for n in names] + [(SEQUENCE_NUMBER, "ascending")])
    newest = newest.filter(pa.array(last_of_each_key(newest, names)))
    kinds = newest.column(VALUE_KIND).to_numpy(zero_copy_only=False)
    touched = _comparable(newest.select(names), types)
    untouched = keys.filter(pc.invert(pc.is_in(_comparable(keys, types), value_set=touched)))
    return pa.concat_tables([untouched, newest.filter(pa.array(~is_retract(kinds))).select(names).cast(keys.schema)])


def _comparable(keys: pa.Table, types: list) -> pa.Array:
    """One value per key that equals another key's exactly when the keys are equal."""
    if is_int_key(types):
        return pa.array(int_keys(keys.column(0)))
    return encode_rows([keys.column(i) for i in range(keys.num_columns)], types)
