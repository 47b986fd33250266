"""Table options changed on a live table (Spark's ALTER TABLE ... SET TBLPROPERTIES, our
`update_schema().set_option()`), with writers and streams that opened before the change.

Oracles: a model of the rows, and Apache Paimon 1.4.2 (tests/java_oracle.py) reading the same
table. What Java refuses to change on a table with snapshots we refuse too; where Java's own
answer is odd (it lets a change break its table, or a writer opened before a change keeps the
old rules) we refuse or notice instead, and the test says so.

OPTION_HUNT_EXAMPLES=200 runs the random hunt longer (default: a CI-sized run).
"""
from __future__ import annotations

import datetime
import os
import random

import pyarrow as pa
import pytest

import paimon_streaming as ps
from paimon_streaming.errors import InvalidOptionError, StalePlanError
from paimon_streaming.schema_update import _FIXED_OPTIONS
from paimon_streaming.streaming_scan import StreamingScan

from java_oracle import JavaOracleError, get_oracle
from stream_batches import open_stream, read_batch

EXAMPLES = int(os.environ.get("OPTION_HUNT_EXAMPLES", "6"))

SCHEMA = pa.schema([pa.field("k", pa.int32(), False), ("v", pa.int32())])
JAVA_FIELDS = [{"name": "k", "type": "INT NOT NULL"}, {"name": "v", "type": "INT"}]

# CoreOptions' @Immutable keys in Paimon 1.4.2 (CoreOptions.IMMUTABLE_OPTIONS)
JAVA_IMMUTABLE = ["bucket-key", "bucket-function.type", "data-file.path-directory", "merge-engine",
                  "aggregation.remove-record-on-delete", "partial-update.remove-record-on-delete",
                  "partial-update.remove-record-on-sequence-group", "rowkind.field", "primary-key", "partition",
                  "force-lookup", "row-tracking.enabled", "data-evolution.enabled", "index-file-in-data-file-dir",
                  "blob-descriptor-field", "blob-external-storage-path", "blob-external-storage-field",
                  "pk-clustering-override"]


def rows(keys, values, kinds=None) -> pa.Table:
    t = pa.table({"k": pa.array(keys, pa.int32()), "v": pa.array(values, pa.int32())})
    return t if kinds is None else t.append_column("_kind", pa.array(kinds))


def write(t: ps.Table, keys, values, kinds=None):
    return t.write_arrow(rows(keys, values, kinds), row_kind_column=None if kinds is None else "_kind")


def table_rows(t) -> list[tuple]:
    return sorted((r["k"], r["v"]) for r in (t if isinstance(t, list) else t.to_arrow().to_pylist()))


def set_option(path: str, key: str, value: str | None) -> None:
    """The change made by another process: a Table opened for it alone."""
    with ps.Table.open(path).update_schema() as u:
        if value is None:
            u.remove_option(key)
        else:
            u.set_option(key, value)


# ---- what may change at all --------------------------------------------------------------------

def test_every_option_java_refuses_to_change_is_refused(catalog):
    t = catalog.create_table("db.t", SCHEMA, primary_keys=["k"], options={"bucket": "1"})
    write(t, [1], [1])
    assert set(JAVA_IMMUTABLE) <= set(_FIXED_OPTIONS)
    for key in JAVA_IMMUTABLE:
        with pytest.raises(InvalidOptionError, match=f"'{key}'"):
            t.update_schema().set_option(key, "x").commit()
        with pytest.raises(InvalidOptionError, match=f"'{key}'"):
            t.update_schema().remove_option(key).commit() if key in t.schema.options else \
                t.update_schema().set_option(key, "y").commit()


@pytest.mark.parametrize("key", ["ignore-delete", "ignore-update-before"])
def test_ignore_delete_cannot_be_turned_off_as_java(catalog, key):
    """Java refuses `ignore-delete` (`ignore-update-before`) true -> false: retractions written
    while they were ignored would start to count, in the files not compacted yet only. Turning
    it on stays allowed (and applies to the rows written before, as Java reads them)."""
    t = catalog.create_table("db.t", SCHEMA, primary_keys=["k"], options={"bucket": "1", key: "true"})
    write(t, [1, 2], [1, 2])
    for change in (lambda u: u.set_option(key, "false"), lambda u: u.remove_option(key)):
        with pytest.raises(InvalidOptionError, match=f"'{key}'"):
            with t.update_schema() as u:
                change(u)
    off = catalog.create_table("db.off", SCHEMA, primary_keys=["k"], options={"bucket": "1"})
    write(off, [1], [1])
    set_option(off.path, key, "true")  # on is fine


@pytest.mark.parametrize("key, value, partition_type, partition_value", [
    ("partition.default-name", "NULLP", pa.string(), None),
    ("partition.legacy-name", "false", pa.date32(), datetime.date(2024, 1, 2)),
])
def test_partition_path_options_are_fixed_on_a_partitioned_table(catalog, key, value, partition_type,
                                                                  partition_value):
    """Data file paths are made from the partition values with these options, and are not
    stored: Java 1.4.2 accepts the change and then fails to find every file written before
    (test below). We refuse it on a partitioned table with snapshots."""
    schema = pa.schema([("k", pa.int32()), ("p", partition_type)])
    t = catalog.create_table("db.t", schema, partition_keys=["p"])
    t.write_arrow(pa.table({"k": [1], "p": [partition_value]}, schema=schema))
    with pytest.raises(InvalidOptionError, match=f"'{key}'"):
        t.update_schema().set_option(key, value).commit()
    assert t.to_arrow().to_pylist() == [{"k": 1, "p": partition_value}]
    plain = catalog.create_table("db.plain", SCHEMA)  # no partitions: nothing to move
    write(plain, [1], [1])
    set_option(plain.path, key, value)
    assert table_rows(ps.Table.open(plain.path)) == [(1, 1)]


@pytest.mark.parametrize("handle", ["fresh", "stale"])
def test_a_bucket_change_without_rescale_refuses_writes_to_old_partitions(catalog, handle):
    """Rows of a partition written under the old count sit in its old buckets: a write there
    under the new count would put a key in two buckets (two live versions). Refused, as Java
    refuses it ("Try to write table with a new bucket num"), until a rescale; a new partition
    takes the new count; a writer that still has the old count writes the old partitions."""
    schema = pa.schema([pa.field("k", pa.int32(), False), pa.field("p", pa.string(), False), ("v", pa.int32())])
    t = catalog.create_table("db.t", schema, primary_keys=["k", "p"], partition_keys=["p"], options={"bucket": "1"})
    t.write_arrow(pa.table({"k": list(range(6)), "p": ["a"] * 6, "v": [1] * 6}, schema=schema))
    set_option(t.path, "bucket", "3")
    by = ps.Table.open(t.path) if handle == "fresh" else t
    if handle == "fresh":
        with pytest.raises(ps.errors.UnsupportedOperationError, match="rescale"):
            by.write_arrow(pa.table({"k": [0], "p": ["a"], "v": [2]}, schema=schema))
        by.write_arrow(pa.table({"k": [0], "p": ["b"], "v": [2]}, schema=schema))
        want = [(k, "a", 1) for k in range(6)] + [(0, "b", 2)]
    else:
        by.write_arrow(pa.table({"k": [0], "p": ["a"], "v": [2]}, schema=schema))
        want = [(0, "a", 2)] + [(k, "a", 1) for k in range(1, 6)]
    got = sorted((r["k"], r["p"], r["v"]) for r in ps.Table.open(t.path).to_arrow().to_pylist())
    assert got == sorted(want)
    ps.Table.open(t.path).rescale()
    got = sorted((r["k"], r["p"], r["v"]) for r in ps.Table.open(t.path).to_arrow().to_pylist())
    assert got == sorted(want)


# ---- a writer opened before the change -----------------------------------------------------------

@pytest.mark.parametrize("dv", ["true", "false"])
def test_a_stale_writer_follows_a_new_sequence_field(catalog, dv):
    """A Table opened before `sequence.field` was set writes on: its batch must be ordered by
    the new field (a deletion-vector writer marks the older version by it), not by arrival."""
    t = catalog.create_table("db.t", SCHEMA, primary_keys=["k"],
                             options={"bucket": "1", "deletion-vectors.enabled": dv})
    write(t, [1, 2], [5, 5])
    set_option(t.path, "sequence.field", "v")
    write(t, [1, 2, 2], [3, 7, 6])  # the stale handle; key 2 twice in one batch
    assert table_rows(ps.Table.open(t.path)) == [(1, 5), (2, 7)]
    assert table_rows(t) == [(1, 5), (2, 7)]


def test_a_spark_sink_batch_racing_an_option_change_is_written_again(catalog, spark):
    """`sequence.field` set by another process while a paimon_sink micro-batch's files wait for
    their commit: the commit refuses them, the sink reloads the table and writes the batch again
    under the new rule (v orders versions: key 1 keeps 5, key 2 takes 7; with deletion vectors
    the old rule would have marked key 1's 5 deleted for good)."""
    from paimon_streaming.sinks import paimon_sink
    t = catalog.create_table("db.t", SCHEMA, primary_keys=["k"],
                             options={"bucket": "1", "deletion-vectors.enabled": "true"})
    write(t, [1, 2], [5, 5])
    changed = []

    def change_once():
        if not changed:
            changed.append(set_option(t.path, "sequence.field", "v"))

    df = spark.createDataFrame([(1, 3), (2, 7)], "k int, v int")
    paimon_sink(t.path, commit_user="job")(df, 0, before_commit=change_once)
    assert changed and table_rows(ps.Table.open(t.path)) == [(1, 5), (2, 7)]
    snapshot = ps.Table.open(t.path).latest_snapshot()
    assert (snapshot.commit_user, snapshot.commit_identifier) == ("job", 0)


def test_a_stale_writer_compacts_with_the_new_aggregate_function(catalog):
    t = catalog.create_table("db.t", SCHEMA, primary_keys=["k"],
                             options={"bucket": "1", "merge-engine": "aggregation",
                                      "fields.v.aggregate-function": "sum"})
    write(t, [1], [5])
    set_option(t.path, "fields.v.aggregate-function", "max")
    write(t, [1], [3])
    t.compact(full=True)
    assert table_rows(ps.Table.open(t.path)) == [(1, 5)]


def test_a_stale_compaction_is_planned_again_with_the_new_options(catalog):
    t = catalog.create_table("db.t", SCHEMA, primary_keys=["k"],
                             options={"bucket": "1", "merge-engine": "aggregation",
                                      "fields.v.aggregate-function": "sum"})
    stale = ps.Table.open(t.path)
    write(t, [1], [5])
    write(t, [1], [3])
    set_option(t.path, "fields.v.aggregate-function", "max")
    stale.compact(full=True)
    assert table_rows(ps.Table.open(t.path)) == [(1, 5)]


@pytest.mark.parametrize("committer", ["writer", "fresh"])
def test_a_stale_commit_of_written_files_is_refused_naming_the_option(catalog, committer):
    """Files written under the old rules and committed after the change (a distributed write's
    commit step, by the writer's Table or by one opened for the commit as Spark's driver does):
    refused, nothing committed, the option named."""
    t = catalog.create_table("db.t", SCHEMA, primary_keys=["k"], options={"bucket": "1"})
    write(t, [1], [5])
    messages = t.write_messages(rows([1], [3]))
    set_option(t.path, "sequence.field", "v")
    by = t if committer == "writer" else ps.Table.open(t.path)
    with pytest.raises(StalePlanError, match="'sequence.field'"):
        by.new_commit().commit(messages, "u", 1)
    assert table_rows(ps.Table.open(t.path)) == [(1, 5)]
    assert len(t.snapshots()) == 1


def test_a_harmless_option_change_does_not_disturb_a_stale_writer(catalog):
    t = catalog.create_table("db.t", SCHEMA, primary_keys=["k"], options={"bucket": "1"})
    write(t, [1], [5])
    messages = t.write_messages(rows([1], [3]))
    set_option(t.path, "snapshot.num-retained.min", "20")
    set_option(t.path, "file.compression", "gzip")
    t.new_commit().commit(messages, "u", 1)
    assert table_rows(ps.Table.open(t.path)) == [(1, 3)]


def test_a_stale_writer_goes_on_after_a_rename_moves_a_columns_options(catalog):
    """Renaming a column moves its `fields.<name>.*` options to the new name: the same rules
    for the same field, so a writer that still uses the old name is not refused."""
    schema = pa.schema([pa.field("k", pa.int32(), False), ("a", pa.int32())])
    t = catalog.create_table("db.t", schema, primary_keys=["k"], options={
        "bucket": "1", "merge-engine": "aggregation", "fields.a.aggregate-function": "sum"})
    t.write_arrow(pa.table({"k": [1], "a": [5]}, schema=schema))
    with ps.Table.open(t.path).update_schema() as u:
        u.rename_column("a", "b")
    t.write_arrow(pa.table({"k": [1], "a": [3]}, schema=schema))  # the stale handle, old name
    assert ps.Table.open(t.path).to_arrow().to_pylist() == [{"k": 1, "b": 8}]


# ---- a stream opened before the change ----------------------------------------------------------

def latest_stream(t: ps.Table) -> StreamingScan:
    """A stream of `t` opened now, from its next snapshot on (its options as they are now)."""
    return open_stream(t, {"scan.mode": "latest"})


def batch_rows(scan: StreamingScan, position):
    """The next micro-batch's rows as sorted (k, v, row kind), and the position after it."""
    batch, after = read_batch(scan, ["k", "v"], position)
    return sorted((r["k"], r["v"], r["_kind"]) for _, rows in batch for r in rows.to_pylist()), after


@pytest.mark.parametrize("before, after", [("input", "none"), ("none", "input"), ("input", "lookup"),
                                           ("lookup", "none"), ("none", "lookup")])
def test_a_stream_reads_on_across_a_changelog_producer_change(catalog, before, after):
    """A stream opened under one `changelog-producer` reads the snapshots committed under
    another: delta files where no changelog was produced, changelog where it was. (Java's
    stream keeps reading what its start options say, and misses the rows of snapshots
    without a changelog.)"""
    dv = {"deletion-vectors.enabled": "true"}
    t = catalog.create_table("db.t", SCHEMA, primary_keys=["k"],
                             options={"bucket": "1", "changelog-producer": before, **dv})
    write(t, [1], [1])
    scan = latest_stream(t)
    position = scan.start_position()
    set_option(t.path, "changelog-producer", after)
    write(ps.Table.open(t.path), [2], [2])
    write(t, [3], [3])  # the stale handle
    got, position = batch_rows(scan, position)
    assert got == [(2, 2, "+I"), (3, 3, "+I")]
    # and a new stream from the first snapshot reads the ones before the change
    fresh = ps.Table.open(t.path)
    scan = open_stream(fresh, {"scan.mode": "from-snapshot", "scan.snapshot-id": "1"})
    got, _ = batch_rows(scan, scan.start_position())
    assert got == [(1, 1, "+I"), (2, 2, "+I"), (3, 3, "+I")]


@pytest.mark.parametrize("before, after", [("lookup", "none"), ("none", "lookup")])
def test_a_producer_change_between_a_batchs_two_snapshots_loses_nothing(catalog, monkeypatch, before, after):
    """The change lands between a batch's APPEND and its COMPACT snapshot (a lookup table's
    two commits): the batch is streamed once, from its changelog or from its delta file."""
    from paimon_streaming.commit import FileStoreCommit
    t = catalog.create_table("db.t", SCHEMA, primary_keys=["k"],
                             options={"bucket": "1", "changelog-producer": before, "deletion-vectors.enabled": "true"})
    write(t, [1], [1])
    scan = latest_stream(t)
    position = scan.start_position()
    real = FileStoreCommit._commit_with_retry

    def change_first(self, kind, *args, **kwargs):
        if kind == "COMPACT" and not getattr(change_first, "done", False):
            change_first.done = True
            set_option(t.path, "changelog-producer", after)
        return real(self, kind, *args, **kwargs)
    monkeypatch.setattr(FileStoreCommit, "_commit_with_retry", change_first)
    write(t, [2], [2])
    assert change_first.done
    got, _ = batch_rows(scan, position)
    assert got == [(2, 2, "+I")]
    assert table_rows(ps.Table.open(t.path).changes_between(2, ps.Table.open(t.path).latest_snapshot().id)
                      .to_pylist()) == [(2, 2)]


# ---- allowed changes: ours and Java read the same table ------------------------------------------

CHANGES = [  # (options, change, first batches, later batches)
    ({}, ("file.format", "orc"), [[(1, 1), (2, 2)]], [[(1, 10), (3, 30)]]),
    ({"file.format": "orc"}, ("file.format", "parquet"), [[(1, 1), (2, 2)]], [[(1, 10), (3, 30)]]),
    ({}, ("file.compression", "gzip"), [[(1, 1)], [(2, 2)]], [[(1, 10)]]),
    ({"deletion-vectors.enabled": "true"}, ("file.format", "orc"), [[(1, 1), (2, 2)]], [[(1, 10), (3, 30)]]),
    ({}, ("sequence.field", "v"), [[(1, 5), (2, 5)]], [[(1, 3), (2, 7)]]),
    ({"sequence.field": "v"}, ("sequence.field", None), [[(1, 5), (2, 5)]], [[(1, 3), (2, 7)]]),
    ({"deletion-vectors.enabled": "true"}, ("sequence.field", "v"), [[(1, 5), (2, 5)]], [[(1, 3), (2, 7)]]),
    ({"merge-engine": "aggregation", "fields.v.aggregate-function": "sum"}, ("fields.v.aggregate-function", "max"),
     [[(1, 5)], [(1, 1)]], [[(1, 3)]]),
    ({"merge-engine": "aggregation", "fields.v.aggregate-function": "sum"},
     ("fields.v.aggregate-function", "last_non_null_value"), [[(1, 5)], [(1, 1)]], [[(1, None)], [(2, 4)]]),
    ({"merge-engine": "partial-update"}, ("fields.v.default-value", "9"), [[(1, 1)]], [[(2, None)]]),
    ({"changelog-producer": "input"}, ("changelog-producer", "none"), [[(1, 1)]], [[(1, 2), (2, 2)]]),
    ({}, ("num-sorted-run.compaction-trigger", "2"), [[(1, 1)], [(1, 2)]], [[(1, 3)], [(2, 1)], [(1, 4)]]),
]


def model(options: dict, change: tuple, first: list, later: list) -> list[tuple]:
    """The rows of a single-bucket key table: deduplicate by arrival (or by `v` with
    sequence.field), aggregation by the function in force when read (no compaction between)."""
    final = dict(options)
    if change[1] is None:
        final.pop(change[0], None)
    else:
        final[change[0]] = change[1]
    state: dict[int, list] = {}
    for batch in first + later:
        for k, v in batch:
            state.setdefault(k, []).append(v)
    out = []
    for k, vs in state.items():
        if final.get("merge-engine") == "aggregation":
            fn, present = final["fields.v.aggregate-function"], [v for v in vs if v is not None]
            out.append((k, {"sum": sum, "max": max, "last_non_null_value": lambda p: p[-1]}[fn](present)))
        elif final.get("merge-engine") == "partial-update":
            out.append((k, next((v for v in reversed(vs) if v is not None), None)))
        elif final.get("sequence.field") == "v":
            out.append((k, max(vs)))  # ties: the later one; the cases hold none
        else:
            out.append((k, vs[-1]))
    return sorted(out)


class JavaWorld:
    """Every table of this file that Java writes or reads, made in a few JVM runs for all tests
    (one JVM per stage: create and write, alter, write, read, read after our compaction)."""

    def __init__(self, root):
        self.java = get_oracle()
        self.changes = {("ours", i): f"{root}/ours/db.db/t{i}" for i in range(len(CHANGES))}
        self.changes.update({("java", i): f"{root}/java-t{i}" for i in range(len(CHANGES))})
        self.producer = {case: f"{root}/producer-{case[0]}-{case[1]}"
                         for case in [("none", "input"), ("input", "none")]}
        self.ignore_delete, self.partitioned = f"{root}/ignore-delete", f"{root}/partitioned"
        self.full_compaction = f"{root}/full-compaction"
        self.before: dict[tuple, int] = {}
        self._ours(root)
        self._java()

    def _ours(self, root) -> None:
        cat = ps.Catalog(f"{root}/ours")
        for i, (options, change, first, later) in enumerate(CHANGES):
            t = cat.create_table(f"db.t{i}", SCHEMA, primary_keys=["k"], options={"bucket": "1", **options})
            for batch in first:
                t.write_arrow(pa.table({"k": [k for k, _ in batch], "v": [v for _, v in batch]}, schema=SCHEMA))
            self.before[("ours", i)] = t.latest_snapshot().id
            set_option(t.path, *change)
            for batch in later:
                t.write_arrow(pa.table({"k": [k for k, _ in batch], "v": [v for _, v in batch]}, schema=SCHEMA))

    def _java(self) -> None:
        java = self.java
        with java.batch() as b:
            for i, (options, change, first, _) in enumerate(CHANGES):
                path = self.changes[("java", i)]
                b.create_table(path, JAVA_FIELDS, primary_keys=["k"], options={"bucket": "1", **options})
                for batch in first:
                    b.write(path, [{"k": k, "v": v} for k, v in batch])
            for (before, _), path in self.producer.items():
                b.create_table(path, JAVA_FIELDS, primary_keys=["k"],
                               options={"bucket": "1", "changelog-producer": before})
                b.write(path, [{"k": 1, "v": 1}])
                b.write(path, [{"k": 2, "v": 2}])
            b.create_table(self.ignore_delete, JAVA_FIELDS, primary_keys=["k"],
                           options={"bucket": "1", "ignore-delete": "true"})
            b.write(self.ignore_delete, [{"k": 1, "v": 1}])
            b.create_table(self.partitioned, [{"name": "k", "type": "INT"}, {"name": "p", "type": "STRING"}],
                           partition_keys=["p"])
            b.write(self.partitioned, [{"k": 1, "p": None}])
            b.create_table(self.full_compaction, JAVA_FIELDS, primary_keys=["k"],
                           options={"bucket": "1", "changelog-producer": "full-compaction"})
            b.write(self.full_compaction, [{"k": 1, "v": 1}, {"k": 2, "v": 2}])
            b.compact(self.full_compaction)
        b = java.batch()
        b.alter(self.full_compaction,
                [{"kind": "set-option", "key": "num-sorted-run.compaction-trigger", "value": "2"}])
        for i, (_, change, _, _) in enumerate(CHANGES):
            if change[1] is not None:  # the oracle has no remove-option: ours removes it (below)
                b.alter(self.changes[("java", i)], [{"kind": "set-option", "key": change[0], "value": change[1]}])
        for (_, after), path in self.producer.items():
            b.alter(path, [{"kind": "set-option", "key": "changelog-producer", "value": after}])
        b.alter(self.partitioned, [{"kind": "set-option", "key": "partition.default-name", "value": "NULLP"}])
        b.alter(self.ignore_delete, [{"kind": "set-option", "key": "ignore-delete", "value": "false"}])  # refused
        with pytest.raises(JavaOracleError) as refused:
            b.run()
        self.ignore_delete_refusal = str(refused.value)
        for i, (_, change, _, _) in enumerate(CHANGES):
            if change[1] is None:
                set_option(self.changes[("java", i)], change[0], None)
            self.before[("java", i)] = ps.Table.open(self.changes[("java", i)]).latest_snapshot().id
        with java.batch() as b:
            for i, (_, _, _, later) in enumerate(CHANGES):
                for batch in later:
                    b.write(self.changes[("java", i)], [{"k": k, "v": v} for k, v in batch])
            for path in self.producer.values():
                b.write(path, [{"k": 3, "v": 3}])
        b = java.batch()
        self.reads = {key: (b.read(path), b.read(path, snapshot_id=self.before[key]))
                      for key, path in self.changes.items()}
        self.incremental = {case: b.read(path, incremental_between=(1, 3)) for case, path in self.producer.items()}
        b.read(self.partitioned)  # fails
        with pytest.raises(JavaOracleError) as broken:
            b.run()
        self.partitioned_read = str(broken.value)
        for path in self.changes.values():
            ps.Table.open(path).compact(full=True)
        with java.batch() as b:
            self.after_compaction = {key: b.read(path) for key, path in self.changes.items()}


@pytest.fixture(scope="module")
def java_world(tmp_path_factory) -> JavaWorld:
    return JavaWorld(tmp_path_factory.mktemp("java-world"))


def test_java_refuses_turning_ignore_delete_off(java_world):
    assert "ignore-delete from true to false" in java_world.ignore_delete_refusal


def test_java_breaks_its_table_when_the_partition_default_name_changes(java_world):
    """Documents Java's answer, which we do not copy (we refuse the change): it is accepted,
    and the files written before are then looked for under the new directory name."""
    assert "p=NULLP" in java_world.partitioned_read and "FileNotFoundException" in java_world.partitioned_read


def test_incremental_auto_reads_snapshots_from_before_a_changelog_producer_change(java_world):
    """`changes_between` in its default mode (auto) over snapshots committed before
    `changelog-producer` went from none to input: those hold no changelog, their changes are in
    their delta files. Java 1.4.2 answers from changelog files only and misses them (its
    answer is checked here too, documented, not copied); the other way round both read deltas."""
    assert table_rows(java_world.incremental[("none", "input")].result) == [(3, 3)]  # Java misses snapshot 2
    assert table_rows(java_world.incremental[("input", "none")].result) == [(2, 2), (3, 3)]
    for path in java_world.producer.values():
        assert table_rows(ps.Table.open(path).changes_between(1, 3).to_pylist()) == [(2, 2), (3, 3)]


def test_a_full_compaction_stream_starts_with_the_top_level_written_before_num_levels_shrank(java_world):
    """`changelog-producer` = full-compaction: a stream starting with the full state reads the
    top level only (level-0 and middle files will reach the changelog with the next full
    compaction). Lowering `num-sorted-run.compaction-trigger` (so the default `num-levels`)
    leaves the files fully compacted before at their old top level, where Java's levels keep
    them (Levels restores max(num-levels, highest level + 1)); Java's stream start looks at the
    new top level only and reads nothing, as ours did."""
    t = ps.Table.open(java_world.full_compaction)
    scan = open_stream(t, {})
    got, _ = batch_rows(scan, scan.start_position())
    assert got == [(1, 1, "+I"), (2, 2, "+I")]


@pytest.mark.parametrize("writer", ["ours", "java"])
def test_allowed_changes_read_as_java_and_the_model(java_world, writer):
    """Each case: batches, the change, batches (written by us or by Java); read by us and by
    Java: latest, time travel to the snapshot before the change (its rows merged under
    today's options, as Java), and after a full compaction by us."""
    for i, case in enumerate(CHANGES):
        key = (writer, i)
        want = model(*case)
        java_latest, java_before = java_world.reads[key]
        t = ps.Table.open(java_world.changes[key])
        assert table_rows(java_latest.result) == want, case
        assert table_rows(java_world.after_compaction[key].result) == want, case
        assert table_rows(t) == want, case
        assert table_rows(t.to_arrow(snapshot_id=java_world.before[key]).to_pylist()) == \
            table_rows(java_before.result), case


# ---- random hunt: option changes between batches, stale and fresh writers -----------------------

HUNT_CHANGES = [  # options whose change leaves the answer of a deduplicate table as it was
    ("file.format", "orc"), ("file.format", "parquet"), ("file.compression", "snappy"), ("file.compression", "zstd"),
    ("num-sorted-run.compaction-trigger", "2"), ("num-sorted-run.compaction-trigger", "5"), ("num-levels", "3"),
    ("num-levels", None), ("changelog-producer", "input"), ("changelog-producer", "none"),
    ("target-file-size", "1 kb"), ("target-file-size", None), ("dynamic-bucket.target-row-num", "2"),
    ("dynamic-bucket.target-row-num", None), ("compaction.delete-ratio-threshold", "0.01"),
]


@pytest.mark.parametrize("seed", range(EXAMPLES))
def test_random_option_changes_with_stale_writers(catalog, seed):
    """Batches of upserts and deletes by two handles (one opened at the start and kept, one
    opened per batch), option changes and compactions in between: the table, and a stream
    opened at the start (its changes applied in order), agree with the model."""
    rnd = random.Random(seed)
    dv, bucket = rnd.choice(["true", "false"]), rnd.choice(["1", "2", "-1"])
    t = catalog.create_table("db.t", SCHEMA, primary_keys=["k"],
                             options={"bucket": bucket, "deletion-vectors.enabled": dv})
    stale = ps.Table.open(t.path)
    scan = latest_stream(t)
    position = scan.start_position()
    state: dict[int, int] = {}
    streamed: dict[int, int] = {}
    log = []
    changes = HUNT_CHANGES + ([("changelog-producer", "lookup")] if dv == "true" else [])
    for step in range(20):
        action = rnd.random()
        if action < 0.3:
            change = rnd.choice(changes)
            log.append(change)
            set_option(t.path, *change)
        elif action < 0.4:
            full = rnd.random() < 0.5
            log.append(("compact", full))
            rnd.choice([stale, ps.Table.open(t.path)]).compact(full=full)
        else:
            keys = rnd.sample(range(8), rnd.randint(1, 4))
            values = [rnd.randint(0, 20) for _ in keys]
            kinds = [rnd.choice(["+I", "+I", "+I", "-D"]) for _ in keys]
            log.append(list(zip(keys, values, kinds)))
            write(rnd.choice([stale, ps.Table.open(t.path)]), keys, values, kinds)
            for k, v, kind in zip(keys, values, kinds):
                if kind == "-D":
                    state.pop(k, None)
                else:
                    state[k] = v
        if rnd.random() < 0.3:
            position = apply_stream(scan, position, streamed)
    position = apply_stream(scan, position, streamed)
    assert table_rows(ps.Table.open(t.path)) == sorted(state.items()), (seed, dv, bucket, log)
    assert sorted(streamed.items()) == sorted(state.items()), (seed, dv, bucket, log)


def apply_stream(scan: StreamingScan, position, streamed: dict[int, int]):
    batch, after = read_batch(scan, ["k", "v"], position)
    for _, rows in batch:
        for r in rows.to_pylist():
            if r["_kind"] in ("-D", "-U"):
                streamed.pop(r["k"], None)
            else:
                streamed[r["k"]] = r["v"]
    return after
