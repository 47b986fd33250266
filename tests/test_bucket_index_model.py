"""Model-based test of dynamic-bucket (`bucket` = -1) and cross-partition upsert tables:
random histories checked against a plain-Python model after every step.

Three layouts share one schema (`id`, `j`, `dt`, `v`, `n`): a cross-partition table (key `id`,
partitioned by `dt`: a key moves between partitions), a dynamic-bucket table keyed by
`(id, dt)` and partitioned by `dt` (per-partition HASH index files), and an unpartitioned
dynamic-bucket table keyed by `id`. The key is a BIGINT, a STRING (two pairs of them with equal
hashes) or `(id, j)`; partitions include a null and one escaped in its directory name. Each
merge engine the README allows for them (deduplicate; first-row, with and without
`ignore-delete`; partial-update and aggregation with `sum`, both with
`*.remove-record-on-delete`), deletion vectors on and off, a small
`dynamic-bucket.target-row-num` (new buckets open all the time), `dynamic-bucket.max-buckets`,
and one of `dynamic-bucket.initial-buckets`, an input or lookup changelog producer, scheduled
full compactions or small target files.

Steps: batches of upserts and deletes (duplicate keys in a batch, keys changing partition,
+I/+U/-U/-D row kinds) written by several commit users, `Table.delete` (deduplicate),
whole-table overwrites, partition overwrites (the datasource's `overwrite_partitions` commit,
dynamic layout), compactions (full or not, of the table or bucket after bucket), snapshot
expirations, rollbacks to an earlier step, and reopening the table, now and then as a new
process would (file caches and the kept cross-partition index dropped).

The model routes each row as Java's `GlobalIndexAssigner` does: on a cross-partition table
deduplicate deletes a moved key from its old partition and inserts it in the new one,
first-row drops it, partial-update and aggregation merge it into the old partition. Then the
rows of a key in one batch merge together (Java's write buffer), and the result with the key's
row in the table. The cross-partition writer's index keeps deleted keys (as Java's does) until
it is built again from the table, so the model keeps them too and forgets them when the index
is built again: in a new process, after a rollback past the writer's last commit, or when a
snapshot since that commit expired (a batch of a deleted key goes to the partition it was
deleted from, with partial-update and aggregation, until then).

Checked after every step: the read equals the model (sorted), no key twice, every key in
exactly one bucket of the partition the model says, each bucket within
`dynamic-bucket.target-row-num` keys (HASH-indexed tables: hashes) and bucket ids below
`max-buckets`, and for HASH-indexed tables every live key's hash in the index file of its own
bucket and in no other bucket of its partition. Apache Paimon Java reads, compacts and reads
again the tables of two seeded histories (cross-partition, deduplicate and partial-update, a
JVM run each), after which a new process of ours writes on; PAIMON_BUCKET_MODEL_JAVA=N does
the same at the end of N property examples per layout and engine.

PAIMON_BUCKET_MODEL_EXAMPLES sets the number of examples per layout and engine; shrinking
rebuilds tables for a long time and is off unless PAIMON_BUCKET_MODEL_SHRINK=1. Bugs the
property found are kept as explicit regression tests at the end of the file.
"""
from __future__ import annotations

import os
import tempfile
from dataclasses import dataclass, field

import numpy as np
import pyarrow as pa
import pytest
from hypothesis import HealthCheck, Phase, given, settings, strategies as st

import paimon_streaming as ps
from paimon_streaming import cross_partition, file_cache
from paimon_streaming.bucket import bucket_key_hashes
from paimon_streaming.dynamic_bucket import read_hash_file
from paimon_streaming.manifest.entries import HASH_INDEX
from paimon_streaming.read import SplitReader
from paimon_streaming.scan import TableScan

try:
    from conftest import killed_before_compaction
    from java_oracle import get_oracle
except ImportError:  # pragma: no cover
    from tests.conftest import killed_before_compaction
    from tests.java_oracle import get_oracle

MAX_EXAMPLES = int(os.environ.get("PAIMON_BUCKET_MODEL_EXAMPLES", "8"))  # per layout and engine
# examples per layout and engine that Java also reads and compacts (a JVM run each); by default
# only the seeded histories of test_java_reads_and_compacts_what_we_wrote do
_JAVA = os.environ.get("PAIMON_BUCKET_MODEL_JAVA")
PHASES = tuple(Phase) if os.environ.get("PAIMON_BUCKET_MODEL_SHRINK") == "1" else \
    (Phase.explicit, Phase.reuse, Phase.generate)

PARTS = ("a", "b", "c d/é", None)  # escaped in a directory name; null: the default partition
COLUMNS = ("id", "dt", "v", "n")
LAYOUTS = {  # name: (primary keys besides the id columns, partition keys)
    "cross": ([], ["dt"]),
    "dynamic": (["dt"], ["dt"]),
    "unpartitioned": ([], []),
}
# How a model id (a small int) is keyed: a BIGINT, a STRING, or (BIGINT, INT `j` = id % 3): the
# integer fast path of the cross-partition index and its BinaryRow path. The strings of ids 0
# and 1, and of 2 and 3, have equal hashes (BinaryRow.hashCode): they share a HASH index entry.
KEYS = ("bigint", "string", "composite")
STRING_IDS = ("k192332", "k219477", "k192477", "k219332", "k4", "k5", "k6")
EXTRAS = {  # name: options
    "none": {},
    "initial-buckets": {"dynamic-bucket.initial-buckets": "2"},
    "changelog-input": {"changelog-producer": "input"},
    "changelog-lookup": {"changelog-producer": "lookup"},  # deletion vectors or first-row only
    "scheduled-full-compaction": {"full-compaction.delta-commits": "2"},
    "small-files": {"target-file-size": "1 kb"},
}
ENGINES = {  # name: table options
    "deduplicate": {},
    "first-row": {"merge-engine": "first-row"},
    "first-row-ignore-delete": {"merge-engine": "first-row", "ignore-delete": "true"},
    "partial-update": {"merge-engine": "partial-update", "partial-update.remove-record-on-delete": "true"},
    "aggregation": {"merge-engine": "aggregation", "fields.n.aggregate-function": "sum",
                    "aggregation.remove-record-on-delete": "true"},
}


@dataclass(frozen=True)
class Config:
    layout: str
    engine: str
    key: str
    dv: bool
    target: int
    max_buckets: int
    extra: str = "none"

    def schema(self) -> pa.Schema:
        return pa.schema([pa.field("id", pa.string() if self.key == "string" else pa.int64(), False),
                          pa.field("j", pa.int32(), False), pa.field("dt", pa.string(), self.layout != "dynamic"),
                          ("v", pa.string()), ("n", pa.int64())])

    def primary_keys(self) -> list[str]:
        return ["id"] + (["j"] if self.key == "composite" else []) + LAYOUTS[self.layout][0]

    def stored_id(self, i: int):
        return STRING_IDS[i] if self.key == "string" else i

    def model_row(self, r: dict) -> dict:
        """A row read from the table as the model holds it (its `j` checked against its id)."""
        i = STRING_IDS.index(r["id"]) if self.key == "string" else r["id"]
        assert r["j"] == i % 3, r
        return {"id": i, "dt": r["dt"], "v": r["v"], "n": r["n"]}

    def options(self) -> dict[str, str]:
        options = {"bucket": "-1", "dynamic-bucket.target-row-num": str(self.target), **ENGINES[self.engine]}
        if self.dv:
            options["deletion-vectors.enabled"] = "true"
        if self.max_buckets > 0:
            options["dynamic-bucket.max-buckets"] = str(self.max_buckets)
        if self.extra != "changelog-lookup" or self.dv or self.engine.startswith("first-row"):
            options.update(EXTRAS[self.extra])
        return options

    def kinds(self) -> tuple[str, ...]:
        """Row kinds written: first-row refuses retractions unless it ignores them. With
        partial-update and aggregation a -D only on deletion-vector tables: there every write
        merges its batch with the key's row (lookup compaction), while on merge-on-read tables
        a compaction of newer files alone drops a -D followed by an upsert (Java's too), so
        their answer depends on which files compaction picked."""
        if self.engine in ("partial-update", "aggregation"):
            return ("+I", "+U", "-D") if self.dv else ("+I", "+U")
        return {"deduplicate": ("+I", "+U", "-U", "-D"), "first-row": ("+I", "+U")}.get(
            self.engine, ("+I", "+U", "-U", "-D"))


Row = tuple  # (id, dt, kind, v, n)


@dataclass
class Model:
    """The table as Java's writers would leave it: live rows by key, and for cross-partition
    tables the writer's index of where each key lives (deleted keys included)."""
    config: Config
    rows: dict = field(default_factory=dict)
    index: dict = field(default_factory=dict)

    def key(self, r: dict):
        return (r["id"], r["dt"]) if self.config.layout == "dynamic" else r["id"]

    def write(self, batch: list[Row]) -> None:
        """Route each row as the writer's index says, then merge each key's rows of the batch
        (Java's write buffer) and that with the key's row in the table."""
        routed: dict = {}
        for i, dt, kind, v, n in batch:
            if kind in ("-U", "-D") and self.config.engine == "first-row-ignore-delete":
                continue
            record = {"id": i, "dt": dt, "v": v, "n": n}
            key = self.key(record)
            if self.config.layout == "cross" and key in self.index and self.index[key] != dt:
                if self.config.engine == "deduplicate":
                    self.rows.pop(key, None)  # a -D in the old partition, the row goes to its own
                elif self.config.engine.startswith("first-row"):
                    continue
                else:
                    record["dt"] = self.index[key]  # merged into the old partition
            self.index[key] = record["dt"]
            routed.setdefault(key, []).append((kind, record))
        for key, records in routed.items():
            merged = self.merge(self.rows.get(key), records)
            if merged is None:
                self.rows.pop(key, None)
            else:
                self.rows[key] = merged

    def merge(self, old: dict | None, records: list[tuple[str, dict]]) -> dict | None:
        """A key's row after a batch's `records` (kind, values). The batch merges first, so with
        partial-update and aggregation a -D followed by an upsert in one batch does not reach the
        table's row: the upserts after it merge with that row, as in Java."""
        engine = self.config.engine
        if engine.startswith("first-row"):
            return old or records[0][1]
        if records[-1][0] in ("-U", "-D"):
            return None
        if engine == "deduplicate":
            return records[-1][1]
        after = [r for _, r in records[max((j for j, (k, _) in enumerate(records) if k == "-D"), default=-1) + 1:]]
        for r in after:
            old = r if old is None else self.combine(old, r)
        return old

    def combine(self, old: dict, new: dict) -> dict:
        if self.config.engine == "partial-update":
            return {c: old[c] if new[c] is None else new[c] for c in new}
        n = new["n"] if old["n"] is None else old["n"] if new["n"] is None else old["n"] + new["n"]
        last = {c: old[c] if new[c] is None else new[c] for c in new}  # last_non_null_value
        return {**last, "n": n}

    def overwrite(self, batch: list[Row], partitions: set[str] | None = None) -> None:
        """The table (or, given, these partitions) replaced by `batch`."""
        if partitions is None:
            self.rows, self.index = {}, {}
        else:
            self.rows = {k: r for k, r in self.rows.items() if r["dt"] not in partitions}
        self.write(batch)

    def new_process(self) -> None:
        """The cross-partition index built again from the table: deleted keys forgotten."""
        self.index = {k: r["dt"] for k, r in self.rows.items()}

    def expected(self) -> list[tuple]:
        return sorted(_tuple(r) for r in self.rows.values())


def _tuple(r: dict) -> tuple:
    return tuple((r[c] is not None, r[c]) for c in COLUMNS)


def as_table(config: Config, batch: list[Row]) -> pa.Table:
    return pa.table({"id": [config.stored_id(r[0]) for r in batch], "j": [r[0] % 3 for r in batch],
                     "dt": [r[1] for r in batch], "v": [r[3] for r in batch], "n": [r[4] for r in batch],
                     "_kind": [r[2] for r in batch]},
                    schema=config.schema().append(pa.field("_kind", pa.string())))


def normalized(config: Config, batch: list[Row]) -> list[Row]:
    """The batch with kinds the engine refuses made +I, retractions carrying no values (but
    their partition), and no null partition where the partition is part of the primary key."""
    kinds = config.kinds()
    out = []
    for i, dt, kind, v, n in batch:
        kind = kind if kind in kinds else "+I"
        dt = PARTS[0] if dt is None and config.layout == "dynamic" else dt
        if kind in ("+I", "+U"):
            out.append((i, dt, kind, v, n))
        else:  # a retraction's values would seed the row an upsert after it merges into (Java's)
            out.append((i, None if config.layout == "unpartitioned" else dt, kind, None, None))
    return out


# ---- the checks ------------------------------------------------------------------------------
def check(table: ps.Table, model: Model, step) -> None:
    """The table, opened afresh, against the model."""
    t = ps.Table.open(table.path)
    read = [model.config.model_row(r) for r in t.to_arrow().to_pylist()]
    got = sorted(_tuple(r) for r in read)
    keys = [model.key(r) for r in read]
    assert len(keys) == len(set(keys)), ("a key read twice", step, got)
    assert got == model.expected(), step
    check_buckets(t, model, step)


def check_buckets(t: ps.Table, model: Model, step) -> None:
    """Every live key in one bucket, of its partition; bucket sizes and HASH index files agree."""
    latest = t.latest_snapshot()
    if latest is None:
        return
    config = model.config
    scan = TableScan(t.file_io, t.path, t.schema)
    reader = SplitReader(t.file_io, scan, t.schema)
    partitioned = config.layout != "unpartitioned"
    hash_index: dict[tuple[bytes, int], set[int]] = {}
    for e in scan.index_manifest.read(latest.index_manifest):
        if e.index_file.index_type == HASH_INDEX:
            assert config.layout != "cross", ("a cross-partition table got a HASH index file", step)
            path = e.index_file.external_path or f"{t.path}/index/{e.index_file.file_name}"
            hashes = read_hash_file(t.file_io, path, e.index_file).tolist()
            assert len(hashes) == len(set(hashes)), ("a hash twice in one HASH file", step)
            assert (e.partition, e.bucket) not in hash_index, ("two HASH files for one bucket", step)
            hash_index[(e.partition, e.bucket)] = set(hashes)
    seen: dict = {}
    for split in t.plan(latest):
        data = reader.read([split], list(t.schema.field_names))
        if not data.num_rows:
            continue
        where = (split.partition_values[0] if partitioned else None, split.bucket)
        assert split.bucket >= 0, step
        keys = t.schema.trimmed_primary_keys
        hashes = bucket_key_hashes(data, keys, [t.schema.field(k).type for k in keys]).tolist()
        if config.max_buckets > 0 and config.layout != "cross":
            assert split.bucket < config.max_buckets, ("bucket beyond max-buckets", where, step)
        else:  # a HASH index counts hashes, the cross-partition index keys
            size = data.num_rows if config.layout == "cross" else len(set(hashes))
            assert size <= config.target, ("bucket above target-row-num", where, size, step)
        for r in map(config.model_row, data.to_pylist()):
            key = model.key(r)
            assert key not in seen, ("key in two buckets", key, seen[key], where, step)
            seen[key] = where
            if partitioned:
                assert r["dt"] == split.partition_values[0], ("row in another partition", r, where, step)
        if config.layout != "cross":
            indexed = hash_index.get((split.partition, split.bucket), set())
            missing = [i for i, h in zip(data.column("id").to_pylist(), hashes) if h not in indexed]
            assert not missing, ("keys missing from their bucket's HASH index", missing, where, step)
    if config.layout != "cross":  # each hash in one bucket of its partition
        by_partition: dict[bytes, list[int]] = {}
        for (partition, _), hashes in hash_index.items():
            by_partition.setdefault(partition, []).extend(hashes)
        for partition, hashes in by_partition.items():
            assert len(hashes) == len(set(hashes)), ("a hash in two buckets of one partition", step)


def java_compacts_then_we_write(table: ps.Table, model: Model) -> None:
    """Java reads the table, compacts it and reads it again (one JVM run); then a new process
    of ours builds its index from Java's files and moves every key to partition "b"."""
    with get_oracle().batch() as b:
        before = b.read(table.path)
        b.compact(table.path)
        after = b.read(table.path)
    config = model.config
    for name, read in (("before", before), ("after", after)):
        assert sorted(_tuple(config.model_row(r)) for r in read.result) == model.expected(), \
            (f"Java's read {name} its compaction", config)
    file_cache.clear_all()
    cross_partition.forget_all()
    model.new_process()
    batch = normalized(config, [(i, "b", "+I", "java", 1) for i in range(7)])
    ps.Table.open(table.path).write_arrow(as_table(config, batch), row_kind_column="_kind")
    model.write(batch)
    check(table, model, "after Java's compaction")


# ---- the property ----------------------------------------------------------------------------
rows = st.lists(st.tuples(st.integers(0, 6), st.sampled_from(PARTS),
                          st.sampled_from(["+I", "+I", "+I", "+U", "-U", "-D", "-D"]),
                          st.one_of(st.none(), st.sampled_from(["x", "y", "z"])),
                          st.one_of(st.none(), st.integers(-5, 5))),
                min_size=1, max_size=8)
steps = st.lists(st.one_of(
    st.tuples(st.just("write"), rows, st.sampled_from([None, "u1", "u2"])),
    st.tuples(st.just("write"), rows, st.sampled_from([None, "u1", "u2"])),
    st.tuples(st.just("overwrite"), rows),
    st.tuples(st.just("overwrite-partitions"), rows),
    st.tuples(st.just("delete"), st.lists(st.integers(0, 6), min_size=1, max_size=3)),
    st.tuples(st.just("compact"), st.booleans()),
    st.tuples(st.just("compact-buckets"), st.booleans()),
    st.tuples(st.just("expire"), st.sampled_from([1, 1, 2, 3])),
    st.tuples(st.just("reopen"), st.booleans()),
    st.tuples(st.just("rollback"), st.integers(0, 9)),
    st.tuples(st.just("replay"), st.sampled_from(["u1", "u2"])),
    st.tuples(st.just("crash"), rows, st.booleans()),
), min_size=1, max_size=10)

_java_left: dict[tuple[str, str], int] = {}  # Java runs left per layout and engine


@settings(max_examples=MAX_EXAMPLES, deadline=None, phases=PHASES,
          suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large])
@given(key=st.sampled_from(KEYS), dv=st.booleans(), target=st.integers(1, 4),
       max_buckets=st.sampled_from([-1, -1, 2]), extra=st.sampled_from(sorted(EXTRAS)), history=steps)
@pytest.mark.parametrize("engine", sorted(ENGINES))
@pytest.mark.parametrize("layout", sorted(LAYOUTS))
def test_random_histories_match_the_model(layout, engine, key, dv, target, max_buckets, extra, history):
    dv = dv and not engine.startswith("first-row")  # refused at create, as Java refuses the pair
    if engine.startswith("first-row") and extra == "changelog-input":
        extra = "changelog-lookup"  # first-row takes only lookup (or none), as Java's validation
    run_history(Config(layout, engine, key, dv, target, max_buckets, extra), history)


class _Killed(BaseException):
    """The writer dying (killed_before_compaction)."""


def run_history(config: Config, history: list[tuple], java: bool | None = None) -> None:
    """Play `history` on a new table, checking it against the model after every step, then let
    Java read and compact it if `java` (None: for the first PAIMON_BUCKET_MODEL_JAVA examples
    per layout and engine with something to read)."""
    cross_partition.forget_all()
    with tempfile.TemporaryDirectory() as wh:
        table = ps.Catalog(wh).create_table("db.t", config.schema(), primary_keys=config.primary_keys(),
                                            partition_keys=LAYOUTS[config.layout][1] or None,
                                            options=config.options())
        model = Model(config)
        identifiers = {"u1": 0, "u2": 0}
        kept = None  # the snapshot of the writer's last cross-partition commit, while it keeps its index
        saved: dict[int, dict] = {}  # the model's rows at each snapshot a step ended on
        last_batch: dict[str, list[Row]] = {}  # by commit user
        for step in history:
            op = step[0]
            if op in ("write", "overwrite", "delete") and kept is not None \
                    and table.snapshot_manager.earliest_id() > kept:
                model.new_process()  # the index's snapshot expired (so what followed is unknown): built again
                kept = None
            if op in ("write", "overwrite"):
                batch = normalized(config, step[1])
                user = step[2] if op == "write" else None
                kwargs = {}
                if user is not None:
                    identifiers[user] += 1
                    kwargs = {"commit_user": user, "commit_identifier": identifiers[user]}
                    last_batch.pop(user, None)
                if table.write_arrow(as_table(config, batch), overwrite=op == "overwrite", row_kind_column="_kind",
                                     **kwargs) is not None and user is not None:
                    last_batch[user] = batch  # committed (a batch that changes nothing commits nothing)
                model.overwrite(batch) if op == "overwrite" else model.write(batch)
            elif op == "replay":  # a batch written again under its identifier: exactly once, nothing changes
                if step[1] not in last_batch:
                    continue
                table.write_arrow(as_table(config, last_batch[step[1]]), row_kind_column="_kind",
                                  commit_user=step[1], commit_identifier=identifiers[step[1]])
            elif op == "crash":  # the writer dies between the batch's APPEND and COMPACT snapshots
                batch = normalized(config, step[1])
                identifiers["u1"] += 1
                last_batch.pop("u1", None)
                before = table.snapshot_manager.latest_id()
                try:
                    with killed_before_compaction(_Killed()):
                        table.write_arrow(as_table(config, batch), row_kind_column="_kind", commit_user="u1",
                                          commit_identifier=identifiers["u1"])
                except _Killed:
                    pass
                file_cache.clear_all()  # a new process repairs it: a compaction, or u1's next write
                cross_partition.forget_all()
                table = ps.Table.open(table.path)
                if table.snapshot_manager.latest_id() != before:
                    last_batch["u1"] = batch
                table.compact() if step[2] else table.complete_interrupted_batch("u1")
                model.write(batch)
                model.new_process()
            elif op == "overwrite-partitions":
                if config.layout != "dynamic":
                    continue
                batch = normalized(config, step[1])
                messages = table.write_messages(as_table(config, batch), row_kind_column="_kind", overwrite=True)
                table.new_commit().commit(messages, "u3", 1, overwrite=True,
                                          overwrite_partitions=sorted({m.partition for m in messages}))
                model.overwrite(batch, {r[1] for r in batch if not (
                    r[2] in ("-U", "-D") and config.engine == "first-row-ignore-delete")})
            elif op == "delete":  # Table.delete: the matching rows written back as -D rows
                if config.engine != "deduplicate":
                    continue
                gone = [config.stored_id(i) for i in step[1]]
                table.delete([("id", "in", gone)])
                model.write([(r["id"], r["dt"], "-D", r["v"], r["n"]) for r in model.rows.values()
                             if r["id"] in step[1]])
            elif op == "compact":
                table.compact(full=step[1])
            elif op == "compact-buckets":  # bucket after bucket: a COMPACT snapshot each
                latest = table.latest_snapshot()
                for bucket in sorted({(s.partition, s.bucket) for s in table.plan(latest)}) if latest else []:
                    table.compact(full=step[1], only={bucket})
            elif op == "expire":
                table.expire_snapshots(retain_max=step[1], retain_min=1)
            elif op == "rollback":  # to an older snapshot a step ended on
                latest, earliest = table.snapshot_manager.latest_id(), table.snapshot_manager.earliest_id()
                targets = sorted(i for i in saved if latest is not None and earliest <= i < latest)
                if not targets:
                    continue
                target = targets[step[1] % len(targets)]
                table.rollback_to(target)
                model.rows = dict(saved[target])
                saved = {i: rows for i, rows in saved.items() if i <= target}
                last_batch.clear()  # whether a replay of a rolled back commit writes is not modelled
                if kept is None or target < kept:  # no index kept, or its snapshot is gone: built again
                    model.new_process()
                    kept = None
            elif op == "reopen":
                table = ps.Table.open(table.path)
                if step[1]:  # a new process
                    file_cache.clear_all()
                    cross_partition.forget_all()
                    model.new_process()
                    kept = None
            if op in ("write", "overwrite", "delete") and config.layout == "cross":
                kept = table.snapshot_manager.latest_id()
            elif op == "crash":  # a new process: nothing kept
                kept = None
            check(table, model, step)
            latest = table.snapshot_manager.latest_id()
            if latest is not None:
                saved[latest] = dict(model.rows)
        if java is None:  # with PAIMON_BUCKET_MODEL_JAVA, the first examples with something to read
            kind = (config.layout, config.engine)
            left = _java_left.setdefault(kind, int(_JAVA or 0))
            java = left > 0 and len(model.rows) >= 3 and len(history) >= 4
            _java_left[kind] = left - java
        if java:
            java_compacts_then_we_write(table, model)
    cross_partition.forget_all()


def seeded_history(seed: int) -> list[tuple]:
    """A fixed random history: batches moving keys, deletes, compactions, a new process."""
    rng = np.random.default_rng(seed)

    def batch() -> list[Row]:
        return [(int(rng.integers(0, 7)), PARTS[int(rng.integers(0, len(PARTS)))],
                 ["+I", "+I", "+U", "-D"][int(rng.integers(0, 4))], f"s{seed}-{j}", int(rng.integers(-5, 5)))
                for j in range(8)]
    return [("write", batch(), "u1"), ("write", batch(), "u2"), ("compact", False), ("write", batch(), None),
            ("delete", [int(rng.integers(0, 7))]), ("reopen", True), ("write", batch(), "u1"),
            ("compact-buckets", True), ("expire", 1), ("write", batch(), "u2")]


@pytest.mark.parametrize("engine, seed", [("deduplicate", 1), ("partial-update", 2)])
def test_java_reads_and_compacts_what_we_wrote(engine, seed):
    """Java reads a cross-partition table we wrote, compacts it, reads it again; we write on."""
    run_history(Config("cross", engine, "composite", dv=True, target=2, max_buckets=-1), seeded_history(seed),
                java=True)


# ---- regression tests of bugs found by the property ------------------------------------------
def test_a_write_after_compactions_and_expiration_builds_the_index_again():
    """The index this process kept after its write is reused when only COMPACT snapshots
    followed; two compactions (bucket by bucket) and an expiration of the first left a gap,
    and reading the expired snapshot failed every later write of the process with
    SnapshotNotFoundError. An expired snapshot's kind is unknown: the index is built again."""
    config = Config("cross", "deduplicate", "bigint", dv=False, target=1, max_buckets=-1)
    run_history(config, [("write", [(1, "a", "+I", "x", 1), (2, "b", "+I", "y", 2)], None),
                         ("write", [(1, "a", "+I", "x2", 1), (2, "b", "+I", "y2", 2)], None),
                         ("compact-buckets", False), ("expire", 1),
                         ("write", [(1, "c d/é", "+I", "moved", 3)], None)], java=False)


def test_a_rollback_past_the_kept_index_builds_it_again():
    """After a rollback past this process's last commit, a compaction took that commit's
    snapshot id: the index kept for that id still placed key 1 in partition "b", where the
    rollback had undone it, so the next write moving key 1 left its row in "a" too (read
    twice). A snapshot of the kept id committed after this process's commit is not its own:
    the index is built again."""
    config = Config("cross", "deduplicate", "bigint", dv=False, target=2, max_buckets=-1)
    run_history(config, [("write", [(1, "a", "+I", "x", 1), (2, "a", "+I", "y", 2)], None),
                         ("write", [(1, "a", "+I", "x2", 1)], None),
                         ("write", [(1, "b", "+I", "moved", 1)], None),
                         ("rollback", 1), ("compact", True),
                         ("write", [(1, "c d/é", "+I", "moved again", 3)], None)], java=False)
