"""Long table histories against a model of the rows (metadata at scale).

Hundreds (locally thousands: LONG_HISTORY_COMMITS) of tiny commits on primary-key tables with
and without deletion vectors and on append tables: upserts, deletes, partition overwrites,
occasional compactions, tags, with the manifest options at their edges so that manifests merge
(minor and full) at nearly every commit, and snapshot expiration at every commit. Afterwards
every retained snapshot and every tag reads what the model held then, streams started from
several points (and a slow consumer whose progress holds expiration back) read exactly the
model's changes, `check_table` finds nothing wrong, and Java 1.4.2 and pypaimon 2.1.0 read the
same rows. A second test holds thousands of partitions with a few rows each: partition filters,
partition overwrites, deletes by partition, `expire_partitions` and the `files`/`manifests`
system tables agree with the data; merged manifests keep partition statistics covering every
entry they hold.
"""
from __future__ import annotations

import os
import random
import tempfile
import time

import pyarrow as pa
import pytest

import paimon_streaming as ps
from paimon_streaming.binary_row import deserialize_row
from paimon_streaming.check import check_table
from paimon_streaming.commit import CommitMessage
from paimon_streaming.consumers import ConsumerManager
from paimon_streaming.long_lived_changelogs import long_lived_changelog
from paimon_streaming.predicate import compare_values
from paimon_streaming.scan import TableScan
from paimon_streaming.snapshot import COMPACT
from paimon_streaming.streaming_scan import ReadLimits
from paimon_streaming.system_tables import system_table
from java_oracle import get_oracle
from pypaimon_oracle import pypaimon_read
from stream_batches import open_stream, read_batch

COMMITS = int(os.environ.get("LONG_HISTORY_COMMITS", 40))
PARTITIONS = int(os.environ.get("LONG_HISTORY_PARTITIONS", 400))
SEEDS = [int(s) for s in os.environ.get("LONG_HISTORY_SEEDS", "1").split(",")]

SCHEMA = pa.schema([("p", pa.int32(), False), ("id", pa.int64(), False), ("v", pa.string())])
KIND = "_kind"
# merging at (nearly) every commit: minor merges of 2-3 small manifests, full compactions of
# the manifests once a few KB of small ones gather
EDGES = [
    {"manifest.merge-min-count": "2", "manifest.target-file-size": "1kb",
     "manifest.full-compaction-threshold-size": "2kb"},
    {"manifest.merge-min-count": "3", "manifest.target-file-size": "2kb",
     "manifest.full-compaction-threshold-size": "1kb"},
]
RETAIN = {"snapshot.num-retained.min": "4", "snapshot.num-retained.max": "15", "snapshot.expire.limit": "7"}
TABLES = {
    "pk": (True, {"bucket": "2"}),
    "pk-dv": (True, {"bucket": "2", "deletion-vectors.enabled": "true"}),
    "pk-input-changelog": (True, {"bucket": "1", "changelog-producer": "input",
                                  "changelog.num-retained.min": "6", "changelog.num-retained.max": "25"}),
    "pk-dv-lookup-changelog": (True, {"bucket": "2", "deletion-vectors.enabled": "true",
                                      "changelog-producer": "lookup", "changelog.num-retained.max": "40"}),
    "append": (False, {"bucket": "-1"}),
    "append-dv": (False, {"bucket": "-1", "deletion-vectors.enabled": "true"}),
}


def rows_of(table: pa.Table) -> list[tuple]:
    return sorted(zip(table["p"].to_pylist(), table["id"].to_pylist(), table["v"].to_pylist()))


class Model:
    """The rows of the table (primary key (p, id); append tables: a list) at every snapshot."""

    def __init__(self, pk: bool):
        self.pk = pk
        self.rows: dict[tuple[int, int], str] | list[tuple] = {} if pk else []
        self.at: dict[int, list[tuple]] = {}       # what a batch read of each snapshot reads
        self.logical: dict[int, list[tuple]] = {}  # every row committed up to it (level 0 included)

    def current(self) -> list[tuple]:
        if self.pk:
            return sorted((p, i, v) for (p, i), v in self.rows.items())
        return sorted(self.rows)

    def upsert(self, rows: list[tuple]) -> None:
        if self.pk:
            self.rows.update({(p, i): v for p, i, v in rows})
        else:
            self.rows.extend(rows)

    def delete(self, keys: list[tuple[int, int]]) -> None:
        if self.pk:
            for k in keys:
                self.rows.pop(k, None)
        else:
            gone = set(keys)
            self.rows = [r for r in self.rows if (r[0], r[1]) not in gone]

    def overwrite(self, partition: int, rows: list[tuple]) -> None:
        if self.pk:
            self.rows = {k: v for k, v in self.rows.items() if k[0] != partition}
        else:
            self.rows = [r for r in self.rows if r[0] != partition]
        self.upsert(rows)


class Stream:
    """A streaming reader that applies what it reads to a dict (primary-key tables) or collects
    the rows it is given (append tables)."""

    def __init__(self, table: ps.Table, options: dict[str, str], pk: bool):
        self.options = options
        self.scan = open_stream(table, options)
        self.position = self.scan.start_position()
        self.consumer = "consumer-id" in options
        if self.consumer:
            self.scan.record_progress(self.position)
        self.pk = pk
        self.rows: dict | list = {} if pk else []

    def read(self, limits: ReadLimits | None = None) -> bool:
        batch, end = read_batch(self.scan, ["p", "id", "v"], self.position, kind=KIND, limits=limits)
        if not batch:
            return False
        for unit, out in batch:
            for p, i, v, k in zip(*(out[c].to_pylist() for c in ("p", "id", "v", KIND))):
                if not self.pk:
                    assert k == "+I", (unit, k)
                    self.rows.append((p, i, v))
                elif k in ("+I", "+U"):
                    self.rows[(p, i)] = v
                elif v is None:  # a -D as the writer wrote it: the key only
                    self.rows.pop((p, i), None)
                else:  # a retraction the reader made retracts the row that is there, never a phantom
                    assert self.rows.pop((p, i), "absent") == v, ("retracted", p, i, v, k, unit.snapshot_id, unit.kind)
        self.position = end
        if self.consumer:
            self.scan.record_progress(end)
        return True

    def drain(self) -> None:
        while self.read():
            pass

    def current(self) -> list[tuple]:
        if self.pk:
            return sorted((p, i, v) for (p, i), v in self.rows.items())
        return sorted(self.rows)


def read_overwrite(options: dict[str, str]) -> dict[str, str]:
    """`streaming-read-overwrite` for primary-key streams, except with a lookup changelog, whose
    compaction after an overwrite holds its changes (Java refuses the two together)."""
    return {} if options.get("changelog-producer") in ("lookup", "full-compaction") else \
        {"streaming-read-overwrite": "true"}


def build_history(wh: str, kind: str, seed: int, commits: int):
    """Run a random history; returns (table, model, inserted rows per snapshot, the consumer)."""
    pk, options = TABLES[kind]
    rng = random.Random(seed * 1000 + sorted(TABLES).index(kind))
    opts = dict(options) | EDGES[seed % len(EDGES)] | RETAIN
    if rng.random() < 0.5:
        opts["snapshot.time-retained"] = "1 ms"  # only num-retained.min holds them
    table = ps.Catalog(wh).create_table("db.t", SCHEMA, primary_keys=["p", "id"] if pk else None,
                                        partition_keys=["p"], options=opts)
    model = Model(pk)
    appended: dict[int, list[tuple]] = {}   # the rows an APPEND snapshot of an insert added
    skip_level0 = pk and opts.get("deletion-vectors.enabled") == "true"
    table.write_arrow(pa.table({"p": [0], "id": [0], "v": ["seed"]}, schema=SCHEMA))
    model.upsert([(0, 0, "seed")])
    model.at[1] = model.logical[1] = model.current()
    appended[1] = [(0, 0, "seed")]
    consumer = Stream(table, {"consumer-id": "slow", "scan.mode": "from-snapshot-full", "scan.snapshot-id": "1",
                              **read_overwrite(opts)} if pk else
                      {"consumer-id": "slow", "scan.mode": "from-snapshot", "scan.snapshot-id": "1"}, pk)
    tags = 0
    for step in range(commits):
        before_id = table.snapshot_manager.latest_id()
        before = model.current()
        roll = rng.random()
        what = "upsert"
        if roll < 0.55:
            n = rng.randint(1, 50)
            keys = {(rng.randrange(6), rng.randrange(80)) for _ in range(n)}
            rows = [(p, i, f"s{step}-{j}") for j, (p, i) in enumerate(sorted(keys))]
            table.write_arrow(pa.table({"p": [r[0] for r in rows], "id": [r[1] for r in rows],
                                        "v": [r[2] for r in rows]}, schema=SCHEMA))
            model.upsert(rows)
        elif roll < 0.72:
            what = "delete"
            present = sorted({(r[0], r[1]) for r in model.current()})
            keys = rng.sample(present, min(len(present), rng.randint(1, 8))) if present else [(1, 1)]
            if pk and rng.random() < 0.6:
                table.write_arrow(pa.table({"p": [k[0] for k in keys], "id": [k[1] for k in keys],
                                            "v": [None] * len(keys), "op": ["-D"] * len(keys)}),
                                  row_kind_column="op")
            else:
                table.delete([[("p", "=", p), ("id", "=", i)] for p, i in keys])
            model.delete(keys)
        elif roll < 0.80 and read_overwrite(opts):  # a lookup changelog's streams cannot read overwrites
            what = "overwrite"
            p = rng.randrange(6)
            ids = sorted(rng.sample(range(80), rng.randint(1, 5)))
            rows = [(p, i, f"o{step}") for i in ids]
            data = pa.table({"p": [p] * len(ids), "id": ids, "v": [r[2] for r in rows]}, schema=SCHEMA)
            messages = table.write_messages(data, overwrite=True)
            table.new_commit().commit(messages, "overwriter", step, overwrite=True,
                                      overwrite_partitions=sorted({m.partition for m in messages}))
            before = [r for r in before if r[0] != p]  # as the OVERWRITE (level 0 hidden) reads on DV tables
            model.overwrite(p, rows)
        elif roll < 0.90:
            what = "compact"
            table.compact(full=rng.random() < 0.4)
        elif roll < 0.95 and table.latest_snapshot() is not None:
            what = "tag"
            tags += 1
            table.create_tag(f"t{tags}")
        elif roll < 0.97 and table.tags():
            what = "untag"
            table.delete_tag(rng.choice(table.tags()))
        elif roll < 0.985 or consumer.position.units:
            what = "consume"
            consumer.read(ReadLimits(max_files=rng.choice([None, 1, 3]), max_snapshots=rng.randint(1, 6)))
        else:
            what = "restart"  # the consumer's job restarts: it resumes from its recorded progress
            state = consumer.rows
            consumer = Stream(ps.Table.open(table.path), consumer.options, pk)
            consumer.rows = state
        latest_id = table.snapshot_manager.latest_id()
        new_ids = list(range((before_id or 0) + 1, (latest_id or 0) + 1))
        now = model.current()
        for sid in new_ids:
            snap = table.snapshot(sid)
            # a deletion-vector table's readers skip level 0: a batch's APPEND snapshot before
            # its COMPACT one still reads as the table was
            hidden = skip_level0 and snap.commit_kind != COMPACT and sid != new_ids[-1]
            model.at[sid] = before if hidden else now
            model.logical[sid] = now
            if what == "upsert" and not pk and snap.commit_kind == "APPEND":
                appended[sid] = rows
        assert rows_of(table.to_arrow()) == now, (kind, seed, step, what)
        if rng.random() < 0.15:
            consumer.read(ReadLimits(max_files=rng.choice([None, 2]), max_snapshots=2))
    return table, model, appended, consumer


def apply_diff(start: list[tuple], diff: pa.Table, pk: bool) -> list[tuple]:
    """`start` with a diff's changes applied: per key (primary-key tables), as a multiset (append)."""
    rows = list(start)
    by_key = {(p, i): v for p, i, v in start}
    for p, i, v, k in zip(*(diff[c].to_pylist() for c in ("p", "id", "v", KIND))):
        if pk:
            if k in ("+I", "+U"):
                by_key[(p, i)] = v
            else:
                assert by_key.pop((p, i), None) == v, ("retracted a row that was not there", p, i, v, k)
        elif k == "+I":
            rows.append((p, i, v))
        else:
            rows.remove((p, i, v))
    return sorted((p, i, v) for (p, i), v in by_key.items()) if pk else sorted(rows)


def expected_appends(appended: dict[int, list[tuple]], start: int) -> list[tuple]:
    return sorted(r for sid, rows in appended.items() if sid >= start for r in rows)


@pytest.mark.parametrize("seed", SEEDS)
@pytest.mark.parametrize("kind", sorted(TABLES))
def test_long_history_reads_the_model(kind, seed):
    pk = TABLES[kind][0]
    with tempfile.TemporaryDirectory() as wh:
        table, model, appended, consumer = build_history(wh, kind, seed, COMMITS)
        table = ps.Table.open(table.path)
        # expiration at every commit left nothing unreferenced, and an orphan cleanup removes
        # nothing any retained snapshot, tag or consumer needs (all are read below)
        orphans = table.remove_orphan_files(older_than=2 ** 62, dry_run=True)
        assert orphans.paths == [], (kind, orphans.paths[:5])
        snaps = table.snapshots()
        assert len(snaps) >= 4
        # time travel: every retained snapshot and every tag reads the model of its moment
        for s in snaps:
            assert rows_of(table.to_arrow(snapshot_id=s.id)) == model.at[s.id], (kind, s.id, s.commit_kind)
        for name in table.tags():
            sid = table.tag_manager.snapshot(name).id
            assert rows_of(table.to_arrow(tag=name)) == model.at[sid], (kind, name, sid)
        # plans with partition filters over merged manifests, at the latest and an old snapshot
        for sid in (snaps[0].id, snaps[-1].id):
            for lo, hi in ((2, 2), (1, 3), (5, 9)):
                want = [r for r in model.at[sid] if lo <= r[0] <= hi]
                got = table.to_arrow(snapshot_id=sid, filter=[("p", ">=", lo), ("p", "<=", hi)])
                assert rows_of(got) == want, (kind, sid, lo, hi)
            # value and key filters: statistics of files rewritten, merged and marked many times
            for flt, keep in (([("id", "<", 20)], lambda r: r[1] < 20),
                              ([("id", ">=", 40), ("p", "=", 1)], lambda r: r[1] >= 40 and r[0] == 1),
                              ([("v", ">=", "s5")], lambda r: r[2] is not None and r[2] >= "s5"),
                              ([[("v", "=", "seed")], [("id", "=", 7)]], lambda r: r[2] == "seed" or r[1] == 7)):
                got = rows_of(table.to_arrow(snapshot_id=sid, filter=flt))
                assert got == [r for r in model.at[sid] if keep(r)], (kind, sid, flt)
        manifest_stats_cover(table)
        # incremental diffs between retained snapshots: applied to the start, they give the end
        for a, b in ((snaps[0].id, snaps[-1].id), (snaps[len(snaps) // 2].id, snaps[-1].id), (snaps[0].id, snaps[1].id)):
            if a == b:
                continue
            diff = table.changes_between(a, b, mode="diff", row_kind_column=KIND)
            assert apply_diff(model.at[a], diff, pk) == model.at[b], (kind, "diff", a, b)
        report = check_table(table)
        assert report.ok, [str(p) for p in report.errors]
        final = model.current()
        # the slow consumer, whose progress held expiration back, reads to the end
        consumer.drain()
        if pk:
            assert consumer.current() == final
        else:
            assert consumer.current() == expected_appends(appended, 1)
        # streams started at several retained snapshots
        for s in (snaps[0], snaps[len(snaps) // 2], snaps[-1]):
            if pk:
                full = Stream(table, {"scan.mode": "from-snapshot-full", "scan.snapshot-id": str(s.id),
                                      **read_overwrite(TABLES[kind][1])}, pk)
                full.drain()
                assert full.current() == final, (kind, "from-snapshot-full", s.id)
                delta = Stream(table, {"scan.mode": "from-snapshot", "scan.snapshot-id": str(s.id),
                                       **read_overwrite(TABLES[kind][1])}, pk)
                delta.rows = {(p, i): v for p, i, v in model.logical[s.id - 1]} if s.id - 1 in model.at else None
                if delta.rows is not None and TABLES[kind][1].get("changelog-producer") != "lookup":
                    delta.drain()
                    assert delta.current() == final, (kind, "from-snapshot", s.id)
            else:
                delta = Stream(table, {"scan.mode": "from-snapshot", "scan.snapshot-id": str(s.id)}, pk)
                delta.drain()
                assert delta.current() == expected_appends(appended, s.id), (kind, s.id)
        # second oracles: Java 1.4.2 and pypaimon 2.1.0 on the latest, the earliest retained and a tag
        probe = [snaps[0].id, snaps[len(snaps) // 2].id]
        java = get_oracle()
        with java.batch() as b:
            latest = b.read(table.path)
            old = [b.read(table.path, snapshot_id=sid) for sid in probe]
            tagged = [(n, b.read(table.path, tag=n)) for n in table.tags()[:2]]
        as_tuples = lambda rows: sorted((r["p"], r["id"], r["v"]) for r in rows)  # noqa: E731
        assert as_tuples(latest.result) == final, (kind, "java latest")
        for sid, got in zip(probe, old):
            assert as_tuples(got.result) == model.at[sid], (kind, "java", sid)
        for name, got in tagged:
            assert as_tuples(got.result) == model.at[table.tag_manager.snapshot(name).id], (kind, "java", name)
        assert rows_of(pypaimon_read(wh, "db.t")) == final, (kind, "pypaimon latest")
        assert rows_of(pypaimon_read(wh, "db.t", snapshot_id=probe[0])) == model.at[probe[0]], (kind, "pypaimon")


def manifest_stats_cover(table: ps.Table) -> None:
    """Each manifest of each retained snapshot: partition statistics covering every entry,
    added/deleted counts matching its entries."""
    scan = TableScan(table.file_io, table.path, table.schema)
    types = [f.type.copy(nullable=True) for f in scan.partition_fields]
    for snap in table.snapshots():
        for m in scan.data_manifests(snap):
            entries = scan.manifest_file.read_meta(m)
            assert m.num_added_files == sum(1 for e in entries if e.kind == 0), m.file_name
            assert m.num_deleted_files == sum(1 for e in entries if e.kind == 1), m.file_name
            lo = deserialize_row(m.partition_stats.min_values, types)
            hi = deserialize_row(m.partition_stats.max_values, types)
            for e in entries:
                for a, b, v in zip(lo, hi, deserialize_row(e.partition, types)):
                    assert compare_values(a, v) <= 0 <= compare_values(b, v), (m.file_name, a, b, v)


@pytest.mark.parametrize("pk", [True, False])
def test_many_partitions(pk, tmp_path):
    n = PARTITIONS
    rng = random.Random(n + pk)
    wh = str(tmp_path / "wh")
    opts = {"bucket": "1" if pk else "-1", "manifest.merge-min-count": "2", "manifest.target-file-size": "4kb",
            "manifest.full-compaction-threshold-size": "16kb", "snapshot.num-retained.min": "3",
            "snapshot.num-retained.max": "6", "partition.expiration-check-interval": "0"}
    table = ps.Catalog(wh).create_table("db.t", SCHEMA, primary_keys=["p", "id"] if pk else None,
                                        partition_keys=["p"], options=opts)
    model = Model(pk)
    chunk = max(1, n // 8)
    for start in range(0, n, chunk):
        parts = range(start, min(n, start + chunk))
        rows = [(p, i, f"a{p}") for p in parts for i in range(rng.randint(1, 3))]
        table.write_arrow(pa.table({"p": [r[0] for r in rows], "id": [r[1] for r in rows],
                                    "v": [r[2] for r in rows]}, schema=SCHEMA))
        model.upsert(rows)
    # partition overwrites, deletes by partition, a few upserts across many partitions
    for step in range(12):
        p = rng.randrange(n)
        roll = step % 3
        if roll == 0:
            rows = [(p, 7, f"o{step}")]
            messages = table.write_messages(pa.table({"p": [p], "id": [7], "v": [f"o{step}"]}, schema=SCHEMA),
                                            overwrite=True)
            table.new_commit().commit(messages, "u", step, overwrite=True,
                                      overwrite_partitions=[m.partition for m in messages])
            model.overwrite(p, rows)
        elif roll == 1:
            table.delete([("p", "=", p)])
            model.delete([(r[0], r[1]) for r in model.current() if r[0] == p])
        else:
            ps_ = rng.sample(range(n), 40)
            rows = [(q, 1, f"u{step}") for q in ps_]
            table.write_arrow(pa.table({"p": [r[0] for r in rows], "id": [r[1] for r in rows],
                                        "v": [r[2] for r in rows]}, schema=SCHEMA))
            model.upsert(rows)
    table = ps.Table.open(table.path)
    final = model.current()
    assert rows_of(table.to_arrow()) == final
    # plans with partition filters
    for lo in (0, n // 3, n - 5):
        hi = lo + rng.randint(0, 50)
        want = [r for r in final if lo <= r[0] <= hi]
        assert rows_of(table.to_arrow(filter=[("p", ">=", lo), ("p", "<=", hi)])) == want, (lo, hi)
        assert rows_of(table.to_arrow(filter=[("p", "=", lo)])) == [r for r in final if r[0] == lo]
    assert rows_of(table.to_arrow(filter=[[("p", "<", 3)], [("p", ">", n - 3)]])) == \
        [r for r in final if r[0] < 3 or r[0] > n - 3]
    manifest_stats_cover(table)
    # the files system table agrees with the data
    files = system_table(table, "files")
    parts_with_rows = {r[0] for r in final}
    listed = {int(s.strip("{}")) for s in files["partition"].to_pylist()}
    if pk:
        assert listed >= parts_with_rows
    assert sum(files["record_count"].to_pylist()) >= len(final)
    manifests = system_table(table, "manifests")
    scan = TableScan(table.file_io, table.path, table.schema)
    assert sum(manifests["num_added_files"].to_pylist()) - sum(manifests["num_deleted_files"].to_pylist()) \
        == len(scan.live_entries(table.latest_snapshot()))
    report = check_table(table)
    assert report.ok, [str(p) for p in report.errors]
    java = get_oracle()
    with java.batch() as b:
        got = b.read(table.path)
        filtered = b.read(table.path, where=("p", "=", n // 3))
    assert sorted((r["p"], r["id"], r["v"]) for r in got.result) == final
    assert sorted((r["p"], r["id"], r["v"]) for r in filtered.result) == [r for r in final if r[0] == n // 3]


def test_consumer_at_an_overwrite_keeps_the_files_it_replaced():
    """Regression: a consumer whose next snapshot is an OVERWRITE (a partition overwrite of a
    primary-key table read with `streaming-read-overwrite`) must still find the files that
    overwrite replaced: its diff reads them. Expiration held at the consumer's snapshot used to
    delete them (they are deleted by the new earliest snapshot) and the stream failed with
    MissingFileError on a file the consumer protected."""
    with tempfile.TemporaryDirectory() as wh:
        table = ps.Catalog(wh).create_table("db.t", SCHEMA, primary_keys=["p", "id"], partition_keys=["p"],
                                            options={"bucket": "1", "snapshot.num-retained.min": "1",
                                                     "snapshot.num-retained.max": "100",
                                                     "snapshot.time-retained": "1 ms"})
        table.write_arrow(pa.table({"p": [1, 1, 2], "id": [1, 2, 3], "v": ["a", "b", "c"]}, schema=SCHEMA))
        stream = Stream(table, {"consumer-id": "c", "scan.mode": "from-snapshot-full", "scan.snapshot-id": "1",
                                "streaming-read-overwrite": "true"}, True)
        stream.drain()
        assert stream.current() == [(1, 1, "a"), (1, 2, "b"), (2, 3, "c")]
        messages = table.write_messages(pa.table({"p": [1], "id": [9], "v": ["o"]}, schema=SCHEMA), overwrite=True)
        (sid,) = table.new_commit().commit(messages, "u", 1, overwrite=True,
                                           overwrite_partitions=[m.partition for m in messages])
        for i in range(3):
            table.write_arrow(pa.table({"p": [3], "id": [i], "v": ["x"]}, schema=SCHEMA))
        time.sleep(0.01)
        table.expire_snapshots(retain_max=100, retain_min=1)
        assert table.snapshot_manager.earliest_id() == sid - 1  # kept for the consumer's diff
        stream.drain()
        assert stream.current() == rows_of(table.to_arrow()) == [(1, 9, "o"), (2, 3, "c"), (3, 0, "x"), (3, 1, "x"),
                                                                   (3, 2, "x")]
        assert check_table(table).ok


@pytest.mark.parametrize("mode", ["from-snapshot-full", "latest-full"])
def test_stream_starting_on_an_append_snapshot_of_a_dv_table_reads_its_level0(mode):
    """Regression: a stream's starting full read of a deletion-vector table read the snapshot
    as a batch read does, without level 0. When the starting snapshot is an APPEND whose
    level-0 files its COMPACT snapshot pushes up later (or a writer that compacts
    asynchronously, as Java's do), the stream skips that COMPACT snapshot and never delivered
    the rows: silently lost. Java's stream scan reads every level at its start (only lookup and
    full-compaction changelog producers filter levels)."""
    with tempfile.TemporaryDirectory() as wh:
        table = ps.Catalog(wh).create_table("db.t", SCHEMA, primary_keys=["p", "id"], partition_keys=["p"],
                                            options={"bucket": "1", "deletion-vectors.enabled": "true"})
        table.write_arrow(pa.table({"p": [1, 1], "id": [1, 2], "v": ["a", "b"]}, schema=SCHEMA))
        # a batch committed without its compaction (an asynchronous compactor's writer)
        written = table.write_messages(pa.table({"p": [1, 2], "id": [2, 3], "v": ["B", "c"]}, schema=SCHEMA))
        table.new_commit().commit([CommitMessage(m.partition, m.bucket, m.total_buckets, data=m.data)
                                   for m in written], "w", 7)
        latest = table.latest_snapshot()
        assert latest.commit_kind == "APPEND"
        options = {"scan.mode": mode} | ({"scan.snapshot-id": str(latest.id)} if mode != "latest-full" else {})
        stream = Stream(table, options, True)
        stream.drain()
        assert stream.current() == [(1, 1, "a"), (1, 2, "B"), (2, 3, "c")]
        table.compact()  # the COMPACT snapshot the stream skips
        table.write_arrow(pa.table({"p": [3], "id": [4], "v": ["d"]}, schema=SCHEMA))
        stream.drain()
        assert stream.current() == [(1, 1, "a"), (1, 2, "B"), (2, 3, "c"), (3, 4, "d")] == rows_of(table.to_arrow())


def test_expire_partitions_over_many_partitions(tmp_path):
    """Thousands of day partitions; `expire_partitions` (at most `partition.expiration-max-num`
    per run, oldest first) drops exactly those older than the expiration time; a tag from
    before keeps every row; Java reads the same."""
    import datetime as dt
    n = PARTITIONS
    wh = str(tmp_path / "wh")
    schema = pa.schema([("dt", pa.string(), False), ("id", pa.int64(), False), ("v", pa.string())])
    table = ps.Catalog(wh).create_table("db.t", schema, primary_keys=["dt", "id"], partition_keys=["dt"],
                                        options={"bucket": "1", "manifest.merge-min-count": "2",
                                                 "manifest.target-file-size": "2kb",
                                                 "manifest.full-compaction-threshold-size": "8kb"})
    today = dt.date.today()
    days = [(today - dt.timedelta(days=j)).isoformat() for j in range(1, n + 1)]
    rows = [(d, i, f"{d}/{i}") for d in days for i in range(1 + int(d[-1]) % 2)]
    for start in range(0, len(rows), max(1, len(rows) // 4)):
        part = rows[start:start + max(1, len(rows) // 4)]
        table.write_arrow(pa.table({"dt": [r[0] for r in part], "id": [r[1] for r in part],
                                    "v": [r[2] for r in part]}, schema=schema))
    table.create_tag("before")
    k = n // 2
    dropped = []
    while True:
        got = table.expire_partitions(f"{k} d")
        if not got:
            break
        assert len(got) <= 100
        assert [g["dt"] for g in got] == sorted(g["dt"] for g in got)
        dropped += [g["dt"] for g in got]
    assert sorted(dropped) == sorted(days[k - 1:])
    as_rows = lambda t: sorted(zip(t["dt"].to_pylist(), t["id"].to_pylist(), t["v"].to_pylist()))  # noqa: E731
    kept = sorted(r for r in rows if r[0] > days[k - 1])
    assert as_rows(table.to_arrow()) == kept
    assert as_rows(table.to_arrow(tag="before")) == sorted(rows)
    assert as_rows(table.to_arrow(filter=[("dt", "<=", days[k + 5])])) == []
    assert as_rows(table.to_arrow(filter=[("dt", "=", days[3])])) == [r for r in rows if r[0] == days[3]]
    manifest_stats_cover(table)
    report = check_table(table)
    assert report.ok, [str(p) for p in report.errors]
    java = get_oracle()
    with java.batch() as b:
        now = b.read(table.path)
        old = b.read(table.path, tag="before")
        one = b.read(table.path, where=("dt", "=", days[1]))
    key = lambda rs: sorted((r["dt"], r["id"], r["v"]) for r in rs)  # noqa: E731
    assert key(now.result) == kept
    assert key(old.result) == sorted(rows)
    assert key(one.result) == [r for r in rows if r[0] == days[1]]


JAVA_COMMITS = int(os.environ.get("LONG_HISTORY_JAVA_COMMITS", 16))


@pytest.mark.parametrize("producer", ["input", "none"])
def test_java_long_lived_changelogs_then_ours(tmp_path, producer):
    """Java 1.4.2 writes a history whose changelog outlives its snapshots (`changelog.*`
    retention above `snapshot.*`: Java's decoupled lifecycle moves expired snapshots'
    changelogs to `changelog/changelog-<id>`). Our streams started anywhere in it read exactly
    the model's changes; then we write on, expiring at every commit, and streams, time travel,
    `check_table` and Java still agree with the model."""
    rng = random.Random(7 + len(producer))
    path = str(tmp_path / "t")
    fields = [{"name": "p", "type": "INT NOT NULL"}, {"name": "id", "type": "BIGINT NOT NULL"},
              {"name": "v", "type": "STRING"}]
    options = {"bucket": "1", "changelog-producer": producer, "snapshot.num-retained.min": "2",
               "snapshot.num-retained.max": "3", "changelog.num-retained.min": "200",
               "changelog.num-retained.max": "300", "manifest.merge-min-count": "2",
               "manifest.target-file-size": "1kb", "manifest.full-compaction-threshold-size": "2kb"}
    model: dict[tuple[int, int], str] = {}
    states: dict[int, dict] = {0: {}}
    java = get_oracle()
    with java.batch() as b:
        b.create_table(path, fields, primary_keys=["p", "id"], partition_keys=["p"], options=options)
        for c in range(1, JAVA_COMMITS + 1):
            rows = []
            for _ in range(rng.randint(1, 6)):
                p, i = rng.randrange(3), rng.randrange(12)
                if any(r["p"] == p and r["id"] == i for r in rows):
                    continue  # one change per key and commit
                if (p, i) in model and rng.random() < 0.3:
                    rows.append({"p": p, "id": i, "v": model.pop((p, i)), "_ROW_KIND": "-D"})
                else:
                    model[(p, i)] = f"j{c}-{i}"
                    rows.append({"p": p, "id": i, "v": model[(p, i)]})
            # the stream write path: one snapshot per commit, changelog of the batch
            b.write(path, rows, commit_user="java", commit_identifier=c)
            states[c] = dict(model)
    table = ps.Table.open(path)
    assert table.snapshot_manager.earliest_id() > 1  # Java expired snapshots ...
    assert os.listdir(f"{path}/changelog")          # ... and kept their changelogs
    final = sorted((p, i, v) for (p, i), v in model.items())
    assert rows_of(table.to_arrow()) == final

    def record(sid: int):
        """Snapshot `sid`, or Java's long-lived changelog of it."""
        return long_lived_changelog(table.file_io, table.path, sid) if sid < table.snapshot_manager.earliest_id() \
            else table.snapshot(sid)

    # Java's writer compacts too: snapshot ids are not commit numbers; an APPEND's identifier is
    appends = [sid for sid in range(1, table.snapshot_manager.latest_id() + 1) if record(sid).commit_kind == "APPEND"]

    def stream_from(start: int, limits: ReadLimits | None = None) -> list[tuple]:
        s = Stream(table, {"scan.mode": "from-snapshot", "scan.snapshot-id": str(start)}, True)
        s.rows = dict(states[record(start).commit_identifier - 1])
        while s.read(limits):
            pass
        return s.current()

    for start in (appends[0], appends[1], appends[len(appends) // 2], appends[-1]):
        assert stream_from(start) == final, start
        assert stream_from(start, ReadLimits(max_snapshots=1)) == final, start
    # our commits on top, expiring at every commit
    ours = 0
    for c in range(8):
        ours += 1
        keys = {(rng.randrange(3), rng.randrange(12)) for _ in range(rng.randint(1, 5))}
        rows = [(p, i, f"o{c}-{i}") for p, i in sorted(keys)]
        table.write_arrow(pa.table({"p": [r[0] for r in rows], "id": [r[1] for r in rows],
                                    "v": [r[2] for r in rows]}, schema=SCHEMA))
        model.update({(p, i): v for p, i, v in rows})
    final = sorted((p, i, v) for (p, i), v in model.items())
    table = ps.Table.open(path)
    assert rows_of(table.to_arrow()) == final
    assert stream_from(appends[0]) == final
    report = check_table(table)
    assert report.ok, [str(p) for p in report.errors]
    with java.batch() as b:
        got = b.read(path)
    assert sorted((r["p"], r["id"], r["v"]) for r in got.result) == final


def test_stream_from_an_expired_snapshot_starts_at_the_earliest_long_lived_changelog(tmp_path):
    """Regression: a stream asked to start at snapshot 1 of a table whose snapshot 1 expired
    but whose changelog Java kept (`changelog/changelog-1`, decoupled changelog retention)
    started at the earliest *snapshot*, silently skipping the changes Java kept for it. Java's
    ContinuousFromSnapshotStartingScanner starts at the earliest long-lived changelog. A
    consumer whose progress is such a changelog resumes there too (it was refused as expired)."""
    path = str(tmp_path / "t")
    fields = [{"name": "p", "type": "INT NOT NULL"}, {"name": "id", "type": "BIGINT NOT NULL"},
              {"name": "v", "type": "STRING"}]
    java = get_oracle()
    with java.batch() as b:
        b.create_table(path, fields, primary_keys=["p", "id"], partition_keys=["p"],
                       options={"bucket": "1", "changelog-producer": "input", "snapshot.num-retained.min": "1",
                                "snapshot.num-retained.max": "2", "changelog.num-retained.max": "50"})
        for c in range(1, 7):
            b.write(path, [{"p": 0, "id": c, "v": f"v{c}"}], commit_user="java", commit_identifier=c)
    table = ps.Table.open(path)
    assert table.snapshot_manager.earliest_id() == 5 and os.path.exists(f"{path}/changelog/changelog-1")
    stream = Stream(table, {"scan.mode": "from-snapshot", "scan.snapshot-id": "1"}, True)
    assert stream.position.snapshot == 1
    stream.drain()
    assert stream.current() == [(0, c, f"v{c}") for c in range(1, 7)]
    # read a snapshot (a changelog) at a time: each position marks what it read, a changelog too
    limited = Stream(table, {"scan.mode": "from-snapshot", "scan.snapshot-id": "1"}, True)
    while limited.read(ReadLimits(max_snapshots=1)):
        pass
    assert limited.current() == [(0, c, f"v{c}") for c in range(1, 7)]
    ConsumerManager(table.file_io, table.path).record("c", 3)
    resumed = Stream(table, {"consumer-id": "c"}, True)
    assert resumed.position.snapshot == 3
    resumed.drain()
    assert resumed.current() == [(0, c, f"v{c}") for c in range(3, 7)]


def test_overwrite_diff_of_a_deletion_vector_table_retracts_only_live_rows():
    """Regression: a stream reading a partition overwrite of a deletion-vector table
    (`streaming-read-overwrite`) diffed the replaced files without their deletion vectors, so
    rows deleted long before came back as -D retractions of rows that no longer existed (a
    downstream count goes negative). Java reads the replaced files with the deletion vectors of
    the snapshot before the overwrite."""
    with tempfile.TemporaryDirectory() as wh:
        table = ps.Catalog(wh).create_table("db.t", SCHEMA, primary_keys=["p", "id"], partition_keys=["p"],
                                            options={"bucket": "1", "deletion-vectors.enabled": "true"})
        table.write_arrow(pa.table({"p": [1] * 50, "id": list(range(50)), "v": ["a"] * 50}, schema=SCHEMA))
        table.compact(full=True)
        table.write_arrow(pa.table({"p": [1], "id": [2], "v": ["B"]}, schema=SCHEMA))
        table.write_arrow(pa.table({"p": [1], "id": [3], "v": [None], "op": ["-D"]}), row_kind_column="op")
        scan = TableScan(table.file_io, table.path, table.schema)
        assert scan.deletion_files(table.latest_snapshot())  # id 3 (and 2's old row) marked deleted
        stream = Stream(table, {"scan.mode": "latest-full", "streaming-read-overwrite": "true"}, True)
        stream.drain()
        messages = table.write_messages(pa.table({"p": [1], "id": [9], "v": ["o"]}, schema=SCHEMA), overwrite=True)
        table.new_commit().commit(messages, "u", 1, overwrite=True,
                                  overwrite_partitions=[m.partition for m in messages])
        stream.drain()  # asserts each -D / -U retracts the row the stream holds
        assert stream.current() == [(1, 9, "o")] == rows_of(table.to_arrow())
