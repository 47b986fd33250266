"""Hunt: one dynamic-bucket table ('bucket' = '-1') written by us and by Paimon's Java 1.4.2 in
turn, Java assigning buckets as its Flink sinks do (the oracle's `write_dynamic`: HashBucketAssigners
over the HASH index files, or the cross-partition GlobalIndexAssigner bootstrapped from the
table). Hypothesis draws a seed, the seed a table and a history (examples from
JAVA_DYNAMIC_BUCKET_EXAMPLES, default 8; the longest history from JAVA_DYNAMIC_BUCKET_STEPS).

Tables: HASH_DYNAMIC (primary key (id, dt), partitioned by dt) or KEY_DYNAMIC (primary key id
alone: cross-partition upserts, keys moving between partitions), id a BIGINT, INT, STRING or
DECIMAL (its hash places a key, on both sides), with the deduplicate,
partial-update or (KEY_DYNAMIC) first-row merge engine, deletion vectors on or off, a small
`dynamic-bucket.target-row-num` (buckets fill up), sometimes `dynamic-bucket.max-buckets` and,
for Java's HASH assigners, `dynamic-bucket.initial-buckets` = 2 (two parallel assigners).

Steps: a write by either side (upserts, deletes of keys, keys moving partitions; Java's as a
batch or a stream commit; ours by write_arrow or, HASH_DYNAMIC, as one task of a distributed
write: write_messages, then its commit), our Table.delete, a compaction by either side, an overwrite (Java: a
dynamic partition overwrite, as Flink's INSERT OVERWRITE; ours: the partitions written, or the
whole table), Java changing `dynamic-bucket.target-row-num`, our snapshot expiration, a rollback by
either side (to a snapshot a step ended on: what our process kept of a cross-partition table's
index no longer holds).

After every step: our read equals the model (a dict of rows by key, merged as the engine says);
each key is held once (by the split that holds it, as readers see them); HASH_DYNAMIC tables:
each partition's HASH index files hold each key hash in one bucket only and hold the hash of
every live key in the bucket holding it, and a hash indexed before the step keeps its bucket
(outside the partitions an overwrite replaced); KEY_DYNAMIC tables have no HASH files; a key
that stays in its partition keeps its bucket (ours, compactions, Java's HASH assigners).
Java's read equals the model before and after each of its steps (same JVM) and at the end, and
each row Java's assigners place for a key that lived in that partition goes to its bucket
there (a moved key's retraction too)."""
from __future__ import annotations

import datetime
import os
import random
import tempfile
from collections import defaultdict
from decimal import Decimal

import numpy as np
import pyarrow as pa
import pytest
from hypothesis import HealthCheck, Phase, given, settings, strategies as st

import paimon_streaming as ps
from paimon_streaming.bucket import bucket_key_hashes
from paimon_streaming.dynamic_bucket import read_hash_file
from paimon_streaming.manifest.entries import HASH_INDEX
from paimon_streaming.read import SplitReader
from paimon_streaming.scan import TableScan
from paimon_streaming.snapshot import BATCH_COMMIT_IDENTIFIER
from java_oracle import get_oracle

EXAMPLES = int(os.environ.get("JAVA_DYNAMIC_BUCKET_EXAMPLES", "8"))
STEPS = int(os.environ.get("JAVA_DYNAMIC_BUCKET_STEPS", "8"))  # a history's length: STEPS/2 .. STEPS
SCHEMA = pa.schema([pa.field("id", pa.int64(), False), pa.field("dt", pa.string(), False),
                    ("v", pa.string()), ("w", pa.int64())])
FIELDS = [{"name": "id", "type": "BIGINT NOT NULL"}, {"name": "dt", "type": "STRING NOT NULL"},
          {"name": "v", "type": "STRING"}, {"name": "w", "type": "BIGINT"}]
COLUMNS = ("id", "dt", "v", "w")
# the key column's type (its hash decides a key's bucket on both sides): name, arrow type, value of i
KEY_TYPES = [("BIGINT", pa.int64(), lambda i: i), ("INT", pa.int32(), lambda i: i - 5),
             ("STRING", pa.string(), lambda i: f"key-{i}" * (1 + i % 3)),
             ("DECIMAL(12, 2)", pa.decimal128(12, 2), lambda i: Decimal(i * 101) / 4)]
PARTS = ("a", "b", "c")


class Hunt:
    """The table, its model and what the last observation saw."""

    def __init__(self, wh: str, r: random.Random):
        self.java = get_oracle()
        self.r = r
        self.mode = r.choice(["hash", "key"])
        engines = ["deduplicate", "deduplicate", "partial-update"] + (["first-row"] if self.mode == "key" else [])
        self.engine = r.choice(engines)
        self.pk = ["id", "dt"] if self.mode == "hash" else ["id"]
        options = {"bucket": "-1", "dynamic-bucket.target-row-num": str(r.randint(1, 4)),
                   "merge-engine": self.engine}
        if r.random() < 0.5:
            options["deletion-vectors.enabled"] = "true"
        if r.random() < 0.25:
            options["dynamic-bucket.max-buckets"] = str(r.randint(1, 3))
        if self.mode == "hash" and r.random() < 0.4:
            options["dynamic-bucket.initial-buckets"] = "2"
            if options.get("dynamic-bucket.max-buckets") == "1":
                # (Java's second assigner, owning the odd bucket ids alone, then has no bucket to
                # open and none to pick: Java 1.4.2 fails "list is empty" on its first new key)
                options["dynamic-bucket.max-buckets"] = "2"
        if self.engine == "first-row" and options.get("deletion-vectors.enabled"):
            del options["deletion-vectors.enabled"]  # first-row reads skip level 0 already
        self.options = options
        key_type, arrow_type, self.key_value = r.choice(KEY_TYPES)
        self.schema = SCHEMA.set(0, pa.field("id", arrow_type, False))
        fields = [{"name": "id", "type": f"{key_type} NOT NULL"}] + FIELDS[1:]
        self.path = f"{wh}/db.db/t"
        if r.random() < 0.5:
            self.java.create_table(self.path, fields, primary_keys=self.pk, partition_keys=["dt"], options=options)
        else:
            ps.Catalog(wh).create_table("db.t", self.schema, primary_keys=self.pk, partition_keys=["dt"],
                                        options=options)
        self.model: dict[tuple, dict] = {}
        self.states: dict[int, dict] = {}  # the model of each snapshot a step ended on
        self.log: list = [("table", self.mode, key_type, options)]
        self.seen = self.observe()

    # ---- the model -------------------------------------------------------------------------
    def key(self, row: dict) -> tuple:
        return tuple(row[k] for k in self.pk)

    def apply(self, model: dict, rows: list[dict]) -> None:
        """Rows applied one after another, as the engine merges them (a key's partition: its
        row's under deduplicate, its first under partial-update and first-row)."""
        for row in rows:
            k, kind = self.key(row), row.get("_ROW_KIND", "+I")
            old = model.get(k)
            if kind == "-D":
                model.pop(k, None)
            elif old is None or self.engine == "deduplicate":
                model[k] = {c: row[c] for c in COLUMNS}
            elif self.engine == "partial-update":
                model[k] = {c: old[c] if c == "dt" or row[c] is None else row[c] for c in COLUMNS}
            # first-row: the first stays

    def rows(self, n: int, deletes: bool) -> list[dict]:
        out = []
        for _ in range(n):
            row = {"id": self.key_value(self.r.randint(0, 11)), "dt": self.r.choice(PARTS),
                   "v": self.r.choice([None, f"v{self.r.randint(0, 99)}"]),
                   "w": self.r.choice([None, self.r.randint(0, 99)])}
            if deletes and self.engine == "deduplicate" and self.r.random() < 0.25:
                row["_ROW_KIND"] = "-D"
            out.append(row)
        return out

    def expected(self) -> list[tuple]:
        return sorted(tuple(r[c] for c in COLUMNS) for r in self.model.values())

    # ---- observing the table ---------------------------------------------------------------
    def observe(self) -> dict:
        """{"live": {key: (dt, bucket)}, "index": {dt: {hash: bucket}}}, checking that each key is
        held once and (HASH_DYNAMIC) that the HASH files index every live key, each hash once."""
        t = ps.Table.open(self.path)
        rows = sorted(tuple(r[c] for c in COLUMNS) for r in t.to_arrow().to_pylist())
        assert rows == self.expected(), self.why("our read differs from the model")
        snapshot = t.latest_snapshot()
        live: dict[tuple, tuple] = {}
        index: dict[str, dict[int, int]] = defaultdict(dict)
        if snapshot is None:
            return {"live": live, "index": index}
        scan = TableScan(t.file_io, t.path, t.schema, t.branch)
        reader = SplitReader(t.file_io, scan, t.schema)
        for split in scan.plan(snapshot):
            dt = split.partition_values[0]
            for row in reader.read([split], self.pk).to_pylist():
                k = self.key(row)
                assert k not in live, self.why(f"key {k} held twice: {live[k]} and {(dt, split.bucket)}")
                live[k] = (dt, split.bucket)
        hash_files = [e for e in scan.index_manifest.read(snapshot.index_manifest)
                      if e.index_file.index_type == HASH_INDEX]
        if self.mode == "key":
            assert not hash_files, self.why("a cross-partition table got HASH index files")
        files_of = [(e.partition, e.bucket) for e in hash_files]
        assert len(set(files_of)) == len(files_of), self.why("a bucket with two HASH index files")
        for e in hash_files:
            dt = scan.partition_values(e.partition)[0]
            hashes = read_hash_file(t.file_io, _index_path(scan, e), e.index_file)
            for h in hashes.tolist():
                assert index[dt].get(h, e.bucket) == e.bucket, self.why(
                    f"hash {h} in buckets {index[dt][h]} and {e.bucket} of partition {dt}")
                index[dt][h] = e.bucket
        if self.mode == "hash" and live:
            keys = sorted(live)
            for k, h in zip(keys, self.hashes([k[0] for k in keys])):
                dt, bucket = live[k]
                assert index[dt].get(h) == bucket, self.why(
                    f"key {k} lives in bucket {bucket} of {dt}, its hash {h} is indexed in {index[dt].get(h)}")
        return {"live": live, "index": index}

    def hashes(self, ids: list) -> list[int]:
        """The key hashes (BinaryRow.hashCode of the trimmed primary key, id) of `ids`."""
        t = ps.Table.open(self.path)
        return bucket_key_hashes(pa.table({"id": pa.array(ids, self.schema.field("id").type)}), ["id"],
                                 [t.schema.field("id").type]).tolist()

    def after(self, step: tuple, replaced: set | None = None, moves_by_java: bool = False) -> None:
        """Observe after `step`: what held before still holds (outside `replaced`
        partitions; None: the whole table was replaced)."""
        self.log[-1] = step
        before, now = self.seen, self.observe()
        self.seen = now
        latest = ps.Table.open(self.path).latest_snapshot()
        if latest is not None:
            self.states[latest.id] = dict(self.model)
        if replaced is None:
            return
        for dt, hashes in before["index"].items():
            if dt in replaced:
                continue
            for h, bucket in hashes.items():
                assert now["index"][dt].get(h) == bucket, self.why(
                    f"hash {h} of {dt} moved from bucket {bucket} to {now['index'][dt].get(h)}")
        if moves_by_java:
            return  # Java's assigner may place a key that left and came back in another bucket
        for k, (dt, bucket) in before["live"].items():
            if dt not in replaced and now["live"].get(k, (dt, bucket))[0] == dt:
                assert now["live"].get(k, (dt, bucket)) == (dt, bucket), self.why(
                    f"key {k} moved from bucket {bucket} of {dt} to {now['live'][k]}")

    def why(self, what: str) -> str:
        return what + "\nhistory:\n" + "\n".join(map(repr, self.log))

    def check_java(self, read, what: str) -> None:
        got = sorted(tuple(r[c] for c in COLUMNS) for r in read.result)
        assert got == self.expected(), self.why(f"Java's read {what} differs from the model")

    def check_java_placement(self, written: list[dict]) -> None:
        """Each key's first row Java placed, where the key lived in that partition: its bucket."""
        firsts = set()
        for row in written:
            k = self.key(row)
            if k in firsts:
                continue
            firsts.add(k)
            where = self.seen["live"].get(k)
            if self.mode == "hash":
                h = self.hashes([row["id"]])[0]
                indexed = self.seen["index"].get(row["dt"], {}).get(h)
                if indexed is not None:
                    assert row["_BUCKET"] == indexed, self.why(
                        f"Java placed {k} in bucket {row['_BUCKET']}, our HASH index says {indexed}")
            if where is not None and where[0] == row["dt"]:
                assert row["_BUCKET"] == where[1], self.why(
                    f"Java placed {row} in bucket {row['_BUCKET']}, the key lives in {where}")

    # ---- steps -----------------------------------------------------------------------------
    def step(self) -> None:
        r = self.r
        kind = r.choice(["java_write"] * 4 + ["our_write"] * 4 + ["our_delete", "our_compact", "java_compact",
                                                                 "java_overwrite", "our_overwrite", "java_target",
                                                                 "our_expire", "rollback"])
        if kind == "our_delete" and self.engine != "deduplicate":
            kind = "our_write"
        if kind == "java_overwrite" and self.mode == "key":
            kind = "java_write"  # Java's cross-partition assigner has no overwrite
        self.log.append((kind, "(failed here)"))
        getattr(self, kind)()

    def java_write(self) -> None:
        # (Java 1.4.2's cross-partition assigner, given a batch for a table without keys, takes a
        # bulk-load path that sorts the rows through a JoinedRow and loses their row kind: a -D
        # is written as +I. Flink's batch jobs feed it inserts alone; so do we there)
        bulk = self.mode == "key" and not self.seen["live"]
        rows = self.rows(self.r.randint(1, 8), deletes=not bulk)
        # (a stream commit of Java's leaves the level 0 of a table whose readers skip it, deletion
        # vectors or first-row, to a later compaction, hiding its rows meanwhile: batch writes there)
        stream = self.r.random() < 0.3 and "deletion-vectors.enabled" not in self.options \
            and self.engine != "first-row"
        if stream and bulk:
            rows = self.rows(len(rows), deletes=True)  # a stream ends its bootstrap row by row
        with self.java.batch() as b:
            before = b.read(self.path)
            written = b.write_dynamic(self.path, rows, commit_user="java-stream" if stream else None)
            after = b.read(self.path)
        self.log[-1] = ("java_write", stream, rows, "(failed here)")
        self.check_java(before, "before its write")
        self.check_java_placement(written.result)
        self.apply(self.model, rows)
        self.check_java(after, "after its write")
        self.after(("java_write", stream, rows), replaced=set(), moves_by_java=self.mode == "key")

    def our_write(self) -> None:
        rows = self.rows(self.r.randint(1, 8), deletes=True)
        data = pa.Table.from_pylist([{**{c: row[c] for c in COLUMNS}, "rk": row.get("_ROW_KIND", "+I")}
                                     for row in rows], self.schema.append(pa.field("rk", pa.string())))
        t = ps.Table.open(self.path)
        how = "messages" if self.mode == "hash" and self.r.random() < 0.3 else "arrow"
        if how == "messages":  # a distributed writer's one task: its files, then the commit
            t.new_commit().commit(t.write_messages(data, row_kind_column="rk"), "ours-tasks", BATCH_COMMIT_IDENTIFIER)
        else:
            t.write_arrow(data, row_kind_column="rk")
        self.apply(self.model, rows)
        self.after(("our_write", how, rows), replaced=set())

    def our_delete(self) -> None:
        ids = [self.key_value(i) for i in self.r.sample(range(12), self.r.randint(1, 3))]
        ps.Table.open(self.path).delete([("id", "in", ids)])
        for k in [k for k, row in self.model.items() if row["id"] in ids]:
            del self.model[k]
        self.after(("our_delete", ids), replaced=set())

    def our_compact(self) -> None:
        full = self.r.random() < 0.5
        ps.Table.open(self.path).compact(full=full)
        self.after(("our_compact", full), replaced=set())

    def java_compact(self) -> None:
        with self.java.batch() as b:
            before = b.read(self.path)
            b.compact(self.path)
            after = b.read(self.path)
        self.check_java(before, "before its compaction")
        self.check_java(after, "after its compaction")
        self.after(("java_compact",), replaced=set())

    def java_overwrite(self) -> None:
        rows = self.rows(self.r.randint(1, 6), deletes=False)
        with self.java.batch() as b:
            before = b.read(self.path)
            b.write_dynamic(self.path, rows, overwrite=True)
            after = b.read(self.path)
        self.log[-1] = ("java_overwrite", rows, "(failed here)")
        self.check_java(before, "before its overwrite")
        parts = {row["dt"] for row in rows}
        self.model = {k: row for k, row in self.model.items() if row["dt"] not in parts}
        self.apply(self.model, rows)
        self.check_java(after, "after its overwrite")
        self.after(("java_overwrite", rows), replaced=parts)

    def our_overwrite(self) -> None:
        rows = self.rows(self.r.randint(1, 6), deletes=False)
        data = pa.Table.from_pylist(rows, self.schema)
        t = ps.Table.open(self.path)
        if self.mode == "hash" and self.r.random() < 0.7:  # the partitions written (Spark's dynamic overwrite)
            messages = t.write_messages(data, overwrite=True)
            t.new_commit().commit(messages, "ours", BATCH_COMMIT_IDENTIFIER, overwrite=True,
                                  overwrite_partitions=sorted({m.partition for m in messages}))
            parts = {row["dt"] for row in rows}
            self.model = {k: row for k, row in self.model.items() if row["dt"] not in parts}
            self.apply(self.model, rows)
            self.after(("our_overwrite", "partitions", rows), replaced=parts)
        else:
            t.write_arrow(data, overwrite=True)
            self.model = {}
            self.apply(self.model, rows)
            self.after(("our_overwrite", "table", rows), replaced=None)

    def our_expire(self) -> None:
        t = ps.Table.open(self.path)
        keep = self.r.randint(1, 3)
        t.expire_snapshots(retain_max=keep, retain_min=1, older_than=datetime.datetime.now())
        self.after(("our_expire", keep), replaced=set())

    def rollback(self) -> None:
        """Ours or Java's rollback to a snapshot a step ended on (still retained)."""
        retained = {s.id for s in ps.Table.open(self.path).snapshots()}
        targets = sorted(i for i in self.states if i in retained)
        if len(targets) < 2:
            return self.our_write()
        target, side = self.r.choice(targets[:-1]), self.r.choice(["ours", "java"])
        if side == "ours":
            ps.Table.open(self.path).rollback_to(target)
        else:
            with self.java.batch() as b:
                b.rollback_to(self.path, target)
                after = b.read(self.path)
        self.model = dict(self.states[target])
        self.states = {i: m for i, m in self.states.items() if i <= target}
        if side == "java":
            self.log[-1] = ("rollback", side, target, "(failed here)")
            self.check_java(after, "after its rollback")
        self.after(("rollback", side, target), replaced=None)

    def java_target(self) -> None:
        target = self.r.randint(1, 4)
        self.java.alter(self.path, [{"kind": "set-option", "key": "dynamic-bucket.target-row-num",
                                     "value": str(target)}])
        self.after(("java_target", target), replaced=set())

    def final(self) -> None:
        from paimon_streaming.check import check_table
        with self.java.batch() as b:
            read = b.read(self.path)
        self.check_java(read, "at the end")
        report = check_table(ps.Table.open(self.path))
        assert report.ok, self.why(f"check: {report.problems}")


def _index_path(scan: TableScan, e) -> str:
    return scan.dirs.index_file(scan.dirs.bucket(scan.partition_dir(e.partition), e.bucket), e.index_file)


# a seed draws the table and its history; no shrinking (each step may start a JVM): a failure's
# message carries the history that led to it
@settings(max_examples=EXAMPLES, deadline=None, suppress_health_check=list(HealthCheck),
          phases=[Phase.explicit, Phase.reuse, Phase.generate])
@given(seed=st.integers(0, 2 ** 32 - 1))
def test_java_and_we_write_one_dynamic_bucket_table(seed):
    r = random.Random(seed)
    with tempfile.TemporaryDirectory() as wh:
        hunt = Hunt(wh, r)
        for _ in range(r.randint(max(1, STEPS // 2), STEPS)):
            hunt.step()
        hunt.final()



def _hash_files(t: ps.Table) -> dict[tuple[str, int], tuple[str, np.ndarray]]:
    """{(dt, bucket): (path, hashes)} of the latest snapshot's HASH index files."""
    scan = TableScan(t.file_io, t.path, t.schema, t.branch)
    out = {}
    for e in scan.index_manifest.read(t.latest_snapshot().index_manifest):
        if e.index_file.index_type == HASH_INDEX:
            path = _index_path(scan, e)
            hashes = read_hash_file(t.file_io, path, e.index_file)
            out[(scan.partition_values(e.partition)[0], e.bucket)] = (path, hashes)
    return out


@pytest.mark.parametrize("damage", ["lost", "two-buckets"])
def test_check_finds_a_hash_index_that_misses_a_key(tmp_path, damage):
    """`check_table` verifies a dynamic-bucket table's HASH index files against its keys: a
    key whose hash its bucket's file lacks, or a hash in two buckets of one partition, would
    send a later write of that key (ours or Java's) to a second bucket, the key then live
    twice. Both used to pass the check unnoticed."""
    from paimon_streaming.check import check_table
    t = ps.Catalog(str(tmp_path)).create_table("db.t", SCHEMA, primary_keys=["id", "dt"], partition_keys=["dt"],
                                               options={"bucket": "-1", "dynamic-bucket.target-row-num": "3"})
    t.write_arrow(pa.Table.from_pylist([{"id": i, "dt": "a", "v": "x", "w": i} for i in range(6)], SCHEMA))
    assert check_table(ps.Table.open(t.path)).ok
    files = _hash_files(t)
    path, hashes = files[("a", 1)]
    changed = hashes.copy()
    changed[0] = files[("a", 0)][1][0] if damage == "two-buckets" else 12345  # same size, another hash
    t.file_io.write_bytes(path, changed.astype(">i4").tobytes())
    report = check_table(ps.Table.open(t.path))
    kinds = {p.kind for p in report.problems}
    assert not report.ok and "hash-index" in kinds, report.problems
    if damage == "two-buckets":
        assert any("two buckets" in p.message for p in report.problems), report.problems


@pytest.mark.parametrize("mode", ["hash", "key"])
def test_java_places_keys_by_our_index_and_we_by_its(tmp_path, mode):
    """The hunt's core, fixed: our keys fill buckets of two (target-row-num 2); Java's assigners
    (two of them for HASH_DYNAMIC) put those keys back in our buckets and place new ones; our
    next write finds Java's; a key moving partition (KEY_DYNAMIC) leaves a -D in its old
    bucket. Both readers give every key once; `check_table` is clean."""
    from paimon_streaming.check import check_table
    java = get_oracle()
    pk = ["id", "dt"] if mode == "hash" else ["id"]
    t = ps.Catalog(str(tmp_path)).create_table("db.t", SCHEMA, primary_keys=pk, partition_keys=["dt"], options={
        "bucket": "-1", "dynamic-bucket.target-row-num": "2"})

    def rows(ids, dt, v):
        return [{"id": i, "dt": dt, "v": v, "w": i} for i in ids]

    def where() -> dict:
        scan = TableScan(t.file_io, t.path, t.schema, t.branch)
        reader = SplitReader(t.file_io, scan, t.schema)
        splits = scan.plan(ps.Table.open(t.path).latest_snapshot())
        return {r["id"]: (s.partition_values[0], s.bucket) for s in splits for r in reader.read([s], ["id"]).to_pylist()}
    t.write_arrow(pa.Table.from_pylist(rows(range(6), "a", "ours"), SCHEMA))
    ours = where()
    assert sorted(b for _, b in ours.values()) == [0, 0, 1, 1, 2, 2]
    moved = rows([1], "b", "java") if mode == "key" else []
    written = java.write_dynamic(t.path, rows(range(8), "a", "java") + moved,
                                 assigners=2 if mode == "hash" else None)
    placed = {(r["id"], r["dt"], r["_ROW_KIND"]): r["_BUCKET"] for r in written}
    assert all(placed[(i, "a", "+I")] == ours[i][1] for i in range(6)), (placed, ours)
    if mode == "key":
        assert placed[(1, "a", "-D")] == ours[1][1] and (1, "b", "+I") in placed
    t.write_arrow(pa.Table.from_pylist(rows(range(6, 10), "a", "ours2"), SCHEMA))
    now = where()
    assert all(now[i] == ("a", placed[(i, "a", "+I")]) for i in (6, 7)), (now, placed)
    expected = sorted((i, "b" if i == 1 and mode == "key" else "a") for i in range(10))
    with java.batch() as b:
        read = b.read(t.path)
    assert sorted((r["id"], r["dt"]) for r in read.result) == expected
    assert sorted((r["id"], r["dt"]) for r in ps.Table.open(t.path).to_arrow().to_pylist()) == expected
    report = check_table(ps.Table.open(t.path))
    assert report.ok, report.problems
