"""Cross-partition upsert tables (a primary key without every partition key, `bucket` = -1):
keys move between partitions as each merge engine says, through the table-wide index of where
keys live (paimon_streaming/cross_partition.py)."""
from __future__ import annotations

import contextlib
import re
import subprocess
import sys
from typing import Iterator

import numpy as np
import pyarrow as pa
import pytest

import paimon_streaming as ps
from paimon_streaming import cross_partition
from paimon_streaming.check import check_table
from paimon_streaming.commit import FileStoreCommit
from paimon_streaming.errors import InvalidOptionError, UnsupportedOperationError
from paimon_streaming.read import SplitReader
from paimon_streaming.scan import TableScan
from conftest import killed_before_compaction, pypaimon_read, rows_by
from metadata_edits import edit_schema

SCHEMA = pa.schema([pa.field("id", pa.int64(), False), pa.field("dt", pa.string(), False), ("v", pa.string()),
                    ("n", pa.int64())])


def rows(ids, dts, vs, ns=None) -> pa.Table:
    return pa.table({"id": ids, "dt": dts, "v": vs, "n": ns if ns is not None else [None] * len(ids)}, schema=SCHEMA)


def make(catalog, name="db.t", **options) -> ps.Table:
    return catalog.create_table(name, SCHEMA, primary_keys=["id"], partition_keys=["dt"],
                                options={"bucket": "-1", **options})


def content(table: ps.Table) -> list[tuple]:
    return [(r["id"], r["dt"], r["v"], r["n"]) for r in rows_by(table.to_arrow(), "id")]


def placement_of(table: ps.Table) -> dict[int, tuple[str, int]]:
    """id -> (partition, bucket) from the files of the latest snapshot."""
    t = ps.Table.open(table.path)
    out = {}
    for split in t.plan(t.latest_snapshot()):
        for i in t.to_arrow(columns=["id"], filter=[("dt", "=", split.partition_values[0])]).column("id").to_pylist():
            out.setdefault(i, set()).add(split.partition_values[0])
    return out


@contextlib.contextmanager
def raced_by(path: str, user: str) -> Iterator[list]:
    """Within the block, just before `user`'s first commit, another writer (another process, as
    far as the index kept here knows) commits key 9 into partition "b"; yields whether it did."""
    original = FileStoreCommit.commit
    raced: list = []

    def racing_commit(self, messages, commit_user, identifier, **kwargs):
        if not raced and commit_user == user:
            raced.append(True)
            ps.Table.open(path).write_arrow(rows([9], ["b"], ["other"]), commit_user="fast")
            cross_partition.forget_all()
        return original(self, messages, commit_user, identifier, **kwargs)
    FileStoreCommit.commit = racing_commit
    try:
        yield raced
    finally:
        FileStoreCommit.commit = original


@pytest.fixture(autouse=True)
def fresh_index():
    cross_partition.forget_all()
    yield
    cross_partition.forget_all()


@pytest.mark.parametrize("options", [{}, {"deletion-vectors.enabled": "true"}, {"changelog-producer": "input"}])
def test_deduplicate_moves_a_key_to_its_new_partition(catalog, options):
    t = make(catalog, **options)
    t.write_arrow(rows([1, 2, 3], ["a", "a", "b"], ["x1", "x2", "x3"]))
    t.write_arrow(rows([1, 3, 4], ["b", "b", "c"], ["y1", "y3", "y4"]))
    # within one batch a key ends in the partition of its last row
    t.write_arrow(rows([2, 2, 5, 5], ["c", "d", "a", "a"], ["z2", "w2", "z5", "w5"]))
    expected = [(1, "b", "y1", None), (2, "d", "w2", None), (3, "b", "y3", None), (4, "c", "y4", None),
                (5, "a", "w5", None)]
    assert content(ps.Table.open(t.path)) == expected
    assert all(len(parts) == 1 for parts in placement_of(t).values())
    theirs = pypaimon_read(catalog.warehouse, "db.t")
    assert [(r["id"], r["dt"], r["v"], r["n"]) for r in rows_by(theirs, "id")] == expected
    # the same after the index is built again from the table (a new process)
    cross_partition.forget_all()
    t.write_arrow(rows([1, 6], ["a", "a"], ["q1", "q6"]))
    assert content(ps.Table.open(t.path)) == sorted(
        [(1, "a", "q1", None), (6, "a", "q6", None)] + [r for r in expected if r[0] != 1])


def test_deletes_follow_the_key_and_a_deleted_key_can_come_back_elsewhere(catalog):
    t = make(catalog)
    t.write_arrow(rows([1, 2], ["a", "a"], ["x", "y"]))
    deletes = rows([1], ["b"], [None]).append_column("kind", pa.array(["-D"]))
    t.write_arrow(deletes, row_kind_column="kind")  # a delete naming another partition still deletes
    assert content(ps.Table.open(t.path)) == [(2, "a", "y", None)]
    t.write_arrow(rows([1], ["c"], ["back"]))
    assert content(ps.Table.open(t.path)) == [(1, "c", "back", None), (2, "a", "y", None)]


def test_partial_update_merges_into_the_old_partition(catalog):
    t = make(catalog, **{"merge-engine": "partial-update"})
    t.write_arrow(rows([1, 2], ["a", "a"], ["x", None], [10, 20]))
    t.write_arrow(rows([1, 2, 3, 3], ["b", "a", "c", "d"], [None, "y", "z", None], [None, None, None, 33]))
    assert content(ps.Table.open(t.path)) == [(1, "a", "x", 10), (2, "a", "y", 20), (3, "c", "z", 33)]


def test_aggregation_stays_in_the_old_partition(catalog):
    t = make(catalog, **{"merge-engine": "aggregation", "fields.n.aggregate-function": "sum"})
    t.write_arrow(rows([1], ["a"], ["x"], [1]))
    t.write_arrow(rows([1, 1], ["b", "c"], ["y", "z"], [2, 3]))
    assert content(ps.Table.open(t.path)) == [(1, "a", "z", 6)]


def test_first_row_keeps_the_first_partition(catalog):
    t = make(catalog, **{"merge-engine": "first-row"})
    t.write_arrow(rows([1, 2, 2], ["a", "b", "c"], ["x", "y", "z"]))
    t.write_arrow(rows([1, 3], ["b", "b"], ["late", "w"]))
    assert content(ps.Table.open(t.path)) == [(1, "a", "x", None), (2, "b", "y", None), (3, "b", "w", None)]


def test_new_keys_fill_buckets_as_javas_assigner(catalog):
    """Each partition's buckets take keys in bucket order up to dynamic-bucket.target-row-num,
    then the smallest unused id opens; a key that leaves frees its place."""
    t = make(catalog, **{"dynamic-bucket.target-row-num": "2"})
    t.write_arrow(rows([1, 2, 3, 4, 5], ["a"] * 5, list("abcde")))
    scan = TableScan(t.file_io, t.path, t.schema)

    def buckets_of(partition: str) -> dict[int, list[int]]:
        latest = ps.Table.open(t.path)
        out = {}
        for split in latest.plan(latest.latest_snapshot()):
            if split.partition_values[0] == partition:
                keys = SplitReader(t.file_io, scan, t.schema).read([split], ["id"]).column("id").to_pylist()
                out[split.bucket] = sorted(keys)
        return out
    assert buckets_of("a") == {0: [1, 2], 1: [3, 4], 2: [5]}
    t.write_arrow(rows([3, 6, 7], ["b", "a", "a"], list("xyz")))  # 3 leaves bucket 1 of "a": 6 takes its place
    assert buckets_of("a") == {0: [1, 2], 1: [4, 6], 2: [5, 7]}
    assert buckets_of("b") == {0: [3]}


def test_string_and_composite_keys(catalog):
    schema = pa.schema([pa.field("k1", pa.string(), False), pa.field("k2", pa.int32(), False),
                        pa.field("dt", pa.string(), False), ("v", pa.string())])
    t = catalog.create_table("db.c", schema, primary_keys=["k1", "k2"], partition_keys=["dt"],
                             options={"bucket": "-1", "deletion-vectors.enabled": "true"})
    t.write_arrow(pa.table({"k1": ["a", "a", "b"], "k2": [1, 2, 1], "dt": ["x", "x", "y"], "v": ["1", "2", "3"]},
                           schema=schema))
    t.write_arrow(pa.table({"k1": ["a", "b"], "k2": [2, 1], "dt": ["y", "x"], "v": ["4", "5"]}, schema=schema))
    out = rows_by(ps.Table.open(t.path).to_arrow(), "k1", "k2")
    assert [(r["k1"], r["k2"], r["dt"], r["v"]) for r in out] == [("a", 1, "x", "1"), ("a", 2, "y", "4"),
                                                                   ("b", 1, "x", "5")]


def test_many_keys_moving_match_a_model(catalog):
    """Random batches over a few hundred keys and ten partitions, with the index kept between
    commits and built again now and then: our read and Java's equal a dict of the last row per key."""
    from java_oracle import get_oracle
    t = make(catalog, **{"deletion-vectors.enabled": "true", "dynamic-bucket.target-row-num": "50"})
    rng = np.random.default_rng(7)
    model = {}
    for batch in range(12):
        n = 300
        ids = rng.integers(0, 400, n)
        dts = [f"p{d}" for d in rng.integers(0, 10, n)]
        vs = [f"{batch}-{i}" for i in range(n)]
        t.write_arrow(rows(ids.tolist(), dts, vs))
        for i, d, v in zip(ids.tolist(), dts, vs):
            model[i] = (i, d, v, None)
        if batch % 4 == 3:
            cross_partition.forget_all()
    assert content(ps.Table.open(t.path)) == sorted(model.values())
    java = get_oracle().read(t.path)  # Apache Paimon 1.4.2 reads each key once, in its last partition
    assert sorted((r["id"], r["dt"], r["v"], r["n"]) for r in java) == sorted(model.values())


def test_a_concurrent_writer_makes_the_batch_place_again(catalog):
    """Another writer commits between this batch's placement and its commit: the commit is
    refused and the batch placed again on the new snapshot, so no key is in two partitions."""
    t = make(catalog)
    t.write_arrow(rows([1, 2], ["a", "a"], ["x", "y"]))
    with raced_by(t.path, "slow") as raced:
        t.write_arrow(rows([9], ["c"], ["slow"]), commit_user="slow", commit_identifier=1)
    assert raced
    assert content(ps.Table.open(t.path)) == [(1, "a", "x", None), (2, "a", "y", None), (9, "c", "slow", None)]


def test_threads_writing_one_table_never_leave_a_key_in_two_partitions(catalog):
    """Two threads of one process write batches over the same keys: the table equals the
    batches replayed in commit order, each key once."""
    import threading
    t = make(catalog, **{"deletion-vectors.enabled": "true"})
    t.write_arrow(rows([0], ["p0"], ["seed"]))
    batches = {}
    rng = np.random.default_rng(3)
    for user in ("A", "B"):
        for i in range(8):
            ids = rng.integers(0, 60, 100).tolist()
            batches[(user, i)] = rows(ids, [f"p{d}" for d in rng.integers(0, 4, 100)],
                                      [f"{user}{i}-{j}" for j in range(100)])
    errors = []

    def writer(user: str) -> None:
        try:
            table = ps.Table.open(t.path)
            for i in range(8):
                table.write_arrow(batches[(user, i)], commit_user=user, commit_identifier=i)
        except Exception as exc:  # noqa: BLE001 (reported by the assertion below)
            errors.append(exc)
    threads = [threading.Thread(target=writer, args=(u,)) for u in ("A", "B")]
    for th in threads:
        th.start()
    for th in threads:
        th.join()
    assert not errors
    order = sorted((s.id, s.commit_user, s.commit_identifier) for s in ps.Table.open(t.path).snapshots()
                   if s.commit_kind == "APPEND" and s.commit_user in ("A", "B"))
    assert len(order) == 16
    model = {0: (0, "p0", "seed", None)}
    for _, user, i in order:
        for r in batches[(user, i)].to_pylist():
            model[r["id"]] = (r["id"], r["dt"], r["v"], None)
    assert content(ps.Table.open(t.path)) == sorted(model.values())


def test_level0_files_a_writer_left_decide_where_their_keys_live(catalog):
    """A deletion-vector table's readers skip level 0: a batch whose writer died between its
    APPEND and COMPACT snapshots is invisible to them, yet its keys live where it put them."""
    t = make(catalog, **{"deletion-vectors.enabled": "true"})
    t.write_arrow(rows([1, 2], ["a", "a"], ["x", "y"]))
    with killed_before_compaction(SystemExit("killed")), pytest.raises(SystemExit, match="killed"):
        t.write_arrow(rows([3, 1], ["b", "b"], ["z", "x2"]), commit_user="dead", commit_identifier=1)
    cross_partition.forget_all()  # another process
    ps.Table.open(t.path).write_arrow(rows([3], ["c"], ["z2"]), commit_user="alive", commit_identifier=1)
    ps.Table.open(t.path).compact(full=True)
    assert content(ps.Table.open(t.path)) == [(1, "b", "x2", None), (2, "a", "y", None), (3, "c", "z2", None)]


def test_writers_that_cannot_place_rows_refuse(catalog):
    t = make(catalog)
    with pytest.raises(UnsupportedOperationError, match="cross-partition upsert"):
        t.write_messages(rows([1], ["a"], ["x"]))


def test_a_dynamic_partition_overwrite_is_refused_and_a_whole_overwrite_places_every_key(catalog):
    """A key of the rows may live in a partition the overwrite keeps: it would be live twice
    (before, `(1, a)` stayed beside the new `(1, b)`), so replacing some partitions is refused;
    replacing the whole table leaves each key once."""
    t = make(catalog, **{"dynamic-partition-overwrite": "true"})
    t.write_arrow(rows([1, 2], ["a", "b"], ["old1", "old2"]))
    with pytest.raises(UnsupportedOperationError, match="dynamic partition overwrite"):
        t.write_arrow(rows([1], ["b"], ["new1"]), overwrite=True)
    assert content(t) == [(1, "a", "old1", None), (2, "b", "old2", None)]
    whole = make(catalog, "db.whole")
    whole.write_arrow(rows([1, 2], ["a", "b"], ["old1", "old2"]))
    whole.write_arrow(rows([1], ["b"], ["new1"]), overwrite=True)
    whole.write_arrow(rows([1], ["c"], ["newer"]))
    assert content(whole) == [(1, "c", "newer", None)]


def test_table_options_java_refuses_are_refused(catalog):
    with pytest.raises(InvalidOptionError, match="sequence.field"):
        make(catalog, **{"sequence.field": "n"})
    with pytest.raises(InvalidOptionError, match="bucket"):
        catalog.create_table("db.fixed", SCHEMA, primary_keys=["id"], partition_keys=["dt"], options={"bucket": "2"})


def java_made(catalog, name: str, **options) -> ps.Table:
    """A table with `options` set as Java creates it (options we refuse to create it with)."""
    t = make(catalog, name)
    edit_schema(f"{t.path}/schema/schema-0", lambda s: s["options"].update(options))
    return catalog.get_table(name)


@pytest.mark.parametrize("option", ["ignore-delete", "deduplicate.ignore-delete"])
def test_ignore_delete_refuses_to_move_a_key(catalog, option):
    """Moving a key writes a -D into its old partition, which 'ignore-delete' drops (writers and
    readers alike, Java's too): the key stayed live in both partitions, read twice, and Java's
    next writer failed on the table. Such a batch is refused whole; keys that stay are written."""
    t = java_made(catalog, "db.t", **{option: "true"})
    t.write_arrow(rows([1, 2], ["a", "a"], ["x1", "x2"]))
    moved = rows([2, 1, 3], ["a", "b", "b"], ["y2", "y1", "y3"])
    for index in ("kept", "built again"):
        with pytest.raises(UnsupportedOperationError, match=re.escape(
                f"cannot move key {{'id': 1}} of db.t from partition dt=a to dt=b (1 key(s) of the batch move): ")
                + f".*'{option}' = 'true'.*nothing was written"):
            t.write_arrow(moved)
        assert t.latest_snapshot().id == 1
        cross_partition.forget_all()
    t.write_arrow(rows([2, 1, 3, 4, 4], ["a", "a", "b", "c", "d"], ["y2", "y1", "y3", "z4", "w4"]))
    assert content(ps.Table.open(t.path)) == [(1, "a", "y1", None), (2, "a", "y2", None), (3, "b", "y3", None),
                                              (4, "d", "w4", None)]
    assert check_table(ps.Table.open(t.path)).ok


def test_ignore_delete_with_deduplicate_is_refused_when_a_table_is_made_so(catalog):
    """A table whose key moves would leave the old row live is not created, nor made so by a
    schema change; other engines (which keep a key in its old partition) take 'ignore-delete'."""
    for option in ("ignore-delete", "deduplicate.ignore-delete", "first-row.ignore-delete"):
        with pytest.raises(InvalidOptionError, match=re.escape(
                f"table option '{option}' = 'true' cannot go with merge engine 'deduplicate' on a cross-partition")):
            make(catalog, **{option: "true"})
    t = make(catalog)
    t.write_arrow(rows([1], ["a"], ["x"]))
    with pytest.raises(InvalidOptionError, match="after this schema change: table option 'ignore-delete'"):
        t.update_schema().set_option("ignore-delete", "true").commit()
    for options in ({"ignore-delete": "false"}, {"merge-engine": "partial-update", "ignore-delete": "true"},
                    {"merge-engine": "first-row", "first-row.ignore-delete": "true"}):
        make(catalog, f"db.t{len(options)}{options.get('merge-engine', '')}".replace("-", "_"), **options)
    java = java_made(catalog, "db.java", **{"ignore-delete": "true"})
    java.update_schema().set_option("snapshot.num-retained.max", "50").commit()  # a table Java made so stays alterable


def test_the_index_is_kept_between_commits_and_built_again_after_another_writer(catalog, monkeypatch):
    t = make(catalog)
    built = []
    real = cross_partition.bootstrap
    monkeypatch.setattr(cross_partition, "bootstrap", lambda *a: built.append(1) or real(*a))
    t.write_arrow(rows([1, 2], ["a", "a"], ["x", "y"]), commit_user="u", commit_identifier=1)
    t.write_arrow(rows([1], ["b"], ["x"]), commit_user="u", commit_identifier=2)
    t.compact(full=True)  # another writer's COMPACT snapshot moves no key
    t.write_arrow(rows([2], ["c"], ["y"]), commit_user="u", commit_identifier=3)
    assert built == []
    other = ("import sys, pyarrow as pa, paimon_streaming as ps\n"
             "ps.Table.open(sys.argv[1]).write_arrow(pa.table({'id': [3], 'dt': ['a'], 'v': ['z']}))")
    subprocess.run([sys.executable, "-c", other, t.path], check=True)  # a writer in another process
    t.write_arrow(rows([3], ["d"], ["z"]), commit_user="u", commit_identifier=4)
    assert built == [1]
    assert content(ps.Table.open(t.path)) == [(1, "b", "x", None), (2, "c", "y", None), (3, "d", "z", None)]


# ---- Spark ---------------------------------------------------------------------------------------
@pytest.mark.parametrize("shuffle", [None, False])
def test_paimon_sink_places_rows_in_the_driver_or_one_task(spark, catalog, shuffle, monkeypatch):
    """foreachBatch(paimon_sink): in local mode the driver places and writes the batch (the
    index kept between batches), with shuffle=False one task does; a shuffled write is refused."""
    from sinks.foreach_batch import paimon_sink
    t = make(catalog, f"db.spark_{shuffle}", **{"deletion-vectors.enabled": "true"})
    built = []
    real = cross_partition.bootstrap
    monkeypatch.setattr(cross_partition, "bootstrap", lambda *a: built.append(1) or real(*a))
    sink = paimon_sink(t.path, commit_user="job", shuffle=shuffle)
    sink(spark.createDataFrame([(1, "a", "x"), (2, "a", "y"), (3, "b", "z")], "id long, dt string, v string")
         .repartition(2), 0)
    sink(spark.createDataFrame([(1, "c", "x2"), (3, "b", "z2"), (4, "c", "w")], "id long, dt string, v string")
         .repartition(2), 1)
    sink(spark.createDataFrame([(2, "d", "y2"), (1, "a", "x3")], "id long, dt string, v string"), 2)
    assert content(ps.Table.open(t.path)) == [(1, "a", "x3", None), (2, "d", "y2", None), (3, "b", "z2", None),
                                              (4, "c", "w", None)]
    if shuffle is None:
        assert built == []  # the driver kept the index between its commits
    with pytest.raises(UnsupportedOperationError, match="cannot be shuffled"):
        paimon_sink(t.path, commit_user="job", shuffle=True)(
            spark.createDataFrame([(5, "a", "v")], "id long, dt string, v string"), 3)


def test_paimon_sink_places_a_batch_again_after_a_concurrent_writer(spark, catalog):
    from sinks.foreach_batch import paimon_sink
    t = make(catalog, "db.spark_race")
    with raced_by(t.path, "job") as raced:
        batch = spark.createDataFrame([(9, "c", "sink")], "id long, dt string, v string")
        paimon_sink(t.path, commit_user="job")(batch, 0)
    assert raced
    assert content(ps.Table.open(t.path)) == [(9, "c", "sink", None)]


def test_the_data_source_refuses_cross_partition_tables(spark, catalog):
    t = make(catalog, "db.ds")
    with pytest.raises(Exception, match="cross-partition upsert"):
        spark.createDataFrame([(1, "a", "x", 1)], "id long, dt string, v string, n long") \
            .write.format("paimon").mode("append").save(t.path)


def test_ingest_moves_keys_between_partitions(spark, broker, tmp_path):
    """`paimon-streaming ingest --primary-key id --partition-key dt` (bucket -1): JSON upserts whose
    date changes move their key, batch after batch; we and Java read each key once."""
    import json
    from change_event_support import produce
    from java_oracle import get_oracle
    from kafka_broker import unique_topic
    from paimon_streaming.sinks.ingest import IngestConfig, run_ingest

    topic = unique_topic("xpart")
    broker.create_topic(topic, partitions=2)
    rng = np.random.default_rng(5)
    model = {}
    records = []
    for i in range(1200):
        row = {"id": int(rng.integers(0, 150)), "dt": f"2026-11-{int(rng.integers(1, 6)):02d}", "v": f"v{i}"}
        model[row["id"]] = row
        records.append((str(row["id"]).encode(), json.dumps(row).encode()))
    produce(broker, topic, records)
    cfg = IngestConfig(bootstrap_servers=broker.bootstrap, warehouse=str(tmp_path / "wh"), table="db.moving",
                       topics=(topic,), schema="id BIGINT, dt STRING, v STRING", primary_keys=("id",),
                       partition_keys=("dt",), bucket=-1, table_options={"deletion-vectors.enabled": "true"},
                       trigger="available-now", checkpoint=str(tmp_path / "ckpt"), max_offsets_per_trigger=300)
    lines: list[str] = []
    assert run_ingest(spark, cfg, lines.append) == 0, lines
    expected = sorted((r["id"], r["dt"], r["v"]) for r in model.values())
    table = ps.Catalog(str(tmp_path / "wh")).get_table("db.moving")
    assert len(table.snapshots()) >= 6  # four batches, each placed on the one before
    assert sorted((r["id"], r["dt"], r["v"]) for r in table.to_arrow().to_pylist()) == expected
    java = get_oracle().read(str(tmp_path / "wh" / "db.db" / "moving"))
    assert sorted((r["id"], r["dt"], r["v"]) for r in java) == expected
