"""Extreme but legal option values, the way users tune tables after a blog post: files rolled
at 1 kb, one sorted run triggering compaction, two levels, manifests merged at every commit,
a deletion-vector index file per bucket per few rows, a dynamic bucket per two rows, one
snapshot retained... Code paths that are rare under the defaults then run on every batch.

Random tables (primary-key tables of every merge engine, with and without deletion vectors,
each changelog producer we write; append tables; partitioned or not) take random batches
(upserts, deletes, a key several times in one batch) and random compactions by us, then a batch written and a compaction made by Apache Paimon 1.4.2
(tests/java_oracle.py) under the same options, then more of ours. Checked: our read against a
model of the merge engine (tests/merge_model.py) after every step, our time travel to every
retained snapshot against Java's read of it, Java's read of the latest against the model,
the stream's changes (tests/stream_batches.py) applied in order against the model, and
`check_table`. Where we refuse a value Java accepts, the error names the option.

EXTREME_HUNT_EXAMPLES=60 hunts longer (default: a CI-sized run, one world of tables in three
JVM runs).
"""
from __future__ import annotations

import os
import random

import pyarrow as pa
import pytest

import paimon_streaming as ps
from paimon_streaming.check import check_table
from paimon_streaming.errors import InvalidOptionError, UnsupportedOperationError

from java_oracle import get_oracle
from merge_model import Table as Model
from stream_batches import micro_batches, open_stream

EXAMPLES = int(os.environ.get("EXTREME_HUNT_EXAMPLES", "8"))
SEED = int(os.environ.get("EXTREME_HUNT_SEED", "0"))
STEPS = 6  # our steps before Java's turn, and again after it

SCHEMA = pa.schema([pa.field("k", pa.int32(), False), ("a", pa.int32()), ("s", pa.string())])
# the hunt's tables: `p` their partition (or a constant column of the unpartitioned ones)
HUNT_SCHEMA = pa.schema([pa.field("p", pa.int32(), False), pa.field("k", pa.int32(), False), ("a", pa.int32()),
                         ("s", pa.string())])
TYPES = {"p": "INT", "k": "INT", "a": "INT", "s": "STRING"}
KEY = ["k", "p"]
KEYS = 40

# extreme values of options both kinds of table take
EXTREMES = {
    "target-file-size": ["1 b", "1 kb", "1 kb", "2 kb", "16 kb"],
    "file.format": ["orc", "parquet"],
    "file.compression": ["zstd", "lz4", "snappy", "none", "gzip"],
    "parquet.block.size": ["1024"],
    "manifest.target-file-size": ["1 b", "1 kb"],
    "manifest.merge-min-count": ["1", "2"],
    "manifest.full-compaction-threshold-size": ["1 b", "1 kb"],
    "commit.force-compact": ["true"],
    "write-only": ["true"],
}
# ... and those of primary-key tables
KEYED_EXTREMES = {
    **EXTREMES,
    "write-buffer-size": ["64 kb", "256 kb"],
    "page-size": ["1 kb", "4 kb"],
    "sort-spill-threshold": ["2", "3"],
    "file.format.per.level": ["0:avro,3:parquet", "0:orc,1:parquet", "1:avro", "0:parquet,1:orc,2:avro"],
    "file.compression.per.level": ["0:none,1:zstd", "0:lz4,2:gzip", "1:snappy"],
    "num-levels": ["2", "3"],
    "num-sorted-run.compaction-trigger": ["1", "2"],
    "num-sorted-run.stop-trigger": ["1", "2", "3"],
    "compaction.max-size-amplification-percent": ["0", "1000000"],
    "compaction.size-ratio": ["0"],
    "full-compaction.delta-commits": ["1"],
    "compaction.optimization-interval": ["1 ms"],
    "lookup-wait": ["false"],
    "lookup.cache-max-memory-size": ["1 kb"],
    "lookup.local-file-type": ["hash", "sort"],
    "deletion-vector.index-file.target-size": ["1 b", "64 b"],
    "deletion-vectors.bitmap64": ["true"],
    "changelog.num-retained.min": ["1"],
}
# ... and those of append tables
APPEND_EXTREMES = {**EXTREMES, "file.format.per.level": ["0:avro"], "compaction.min.file-num": ["1", "2"]}


def random_options(rnd: random.Random, keyed: bool) -> dict[str, str]:
    """One table's options: an engine, a producer we write, and a handful of extreme values."""
    if not keyed:
        return append_options(rnd)
    engine = rnd.choice(["deduplicate", "deduplicate", "partial-update", "aggregation", "first-row"])
    o = {"merge-engine": engine}
    dv = engine != "first-row" and rnd.random() < 0.5  # Java: first-row needs no deletion vectors
    if dv:
        o["deletion-vectors.enabled"] = "true"
    producers = ["none", "input"] if engine != "first-row" else ["none"]
    if dv or engine == "first-row":
        producers.append("lookup")  # lookup without deletion vectors: refused, see below
    o["changelog-producer"] = rnd.choice(producers)
    if engine == "partial-update" and rnd.random() < 0.6:
        o["partial-update.remove-record-on-delete"] = "true"
    if engine == "aggregation":
        o["fields.a.aggregate-function"] = "sum"
        o["fields.s.aggregate-function"] = rnd.choice(["last_non_null_value", "max", "min"])
        if rnd.random() < 0.5:
            o["aggregation.remove-record-on-delete"] = "true"
    bucket = rnd.choice(["1", "1", "2", "64", "-1"])
    o["bucket"] = bucket
    if bucket == "-1":
        o["dynamic-bucket.target-row-num"] = str(rnd.randint(1, 3))
    for key in rnd.sample(sorted(KEYED_EXTREMES), rnd.randint(5, 12)):
        if key == "deletion-vectors.bitmap64" and not dv:
            continue
        o[key] = rnd.choice(KEYED_EXTREMES[key])
    if o["changelog-producer"] == "lookup":
        o.pop("full-compaction.delta-commits", None)  # Paimon refuses the two together
    if "avro" in o.get("file.format.per.level", ""):  # Java's Avro writer knows no lz4 (nor gzip)
        o["file.compression"] = rnd.choice(["zstd", "snappy"])
        o.pop("file.compression.per.level", None)
    avoid_gzip(o)
    if "write-buffer-size" in o:  # Java's write buffer needs 3 pages (of 64 kb by default)
        o["page-size"] = rnd.choice(["1 kb", "4 kb"])
    if "changelog.num-retained.min" in o:
        o["changelog.num-retained.max"] = rnd.choice(["1", "2"])
    if rnd.random() < 0.35:
        o["snapshot.num-retained.min"] = "1"
        o["snapshot.num-retained.max"] = rnd.choice(["1", "3"])
    return o


def append_options(rnd: random.Random) -> dict[str, str]:
    """An append table's: bucketed by `k` or not, tiny files, many manifests, a compaction per file."""
    o = {"bucket": rnd.choice(["1", "64", "-1", "-1"])}
    if o["bucket"] != "-1":
        o["bucket-key"] = "k"
    for key in rnd.sample(sorted(APPEND_EXTREMES), rnd.randint(3, 8)):
        o[key] = rnd.choice(APPEND_EXTREMES[key])
    if "avro" in o.get("file.format.per.level", ""):
        o["file.compression"] = rnd.choice(["zstd", "snappy"])
    avoid_gzip(o)
    if rnd.random() < 0.35:
        o["snapshot.num-retained.min"] = "1"
        o["snapshot.num-retained.max"] = rnd.choice(["1", "3"])
    return o


def avoid_gzip(o: dict[str, str]) -> None:
    """Java 1.4.2 cannot write ORC with gzip ("No enum constant ...CompressionKind.GZIP"; create
    refuses it here too): no gzip where a level may be ORC."""
    if "orc" in o.get("file.format", "") + o.get("file.format.per.level", ""):
        if o.get("file.compression") == "gzip":
            o["file.compression"] = "zstd"
        o["file.compression.per.level"] = o.get("file.compression.per.level", "").replace("gzip", "zstd")
        if not o["file.compression.per.level"]:
            del o["file.compression.per.level"]


class AppendModel:
    """An append table's rows: every row written, as a multiset."""

    def __init__(self):
        self.rows: list[dict] = []

    def write(self, batch: list[tuple[str, dict]]) -> None:
        self.rows.extend(v for _, v in batch)

    def read(self) -> list[dict]:
        return list(self.rows)


def random_batch(rnd: random.Random, options: dict[str, str], partitions: int) -> list[tuple[str, dict]]:
    """Upserts, deletes where the engine takes them, duplicated keys, strings of many sizes."""
    engine = options.get("merge-engine", "append")
    # (a lone retraction on an aggregation table without remove-record-on-delete is a row of
    # nulls on a deletion-vector table and nothing on others, in Java and here: not hunted)
    deletes = engine == "deduplicate" or options.get("partial-update.remove-record-on-delete") == "true" or \
        options.get("aggregation.remove-record-on-delete") == "true"
    n = rnd.choice([1, 2, 5, 20, 60])
    keys = [rnd.randrange(KEYS) for _ in range(n)]
    if rnd.random() < 0.3:
        keys += keys[: rnd.randint(1, len(keys))]  # duplicates within the batch
    out = []
    for k in keys:
        kind = "-D" if deletes and rnd.random() < 0.25 else "+I"
        a = None if engine == "partial-update" and rnd.random() < 0.3 else rnd.randint(-50, 50)
        s = None if engine == "partial-update" and rnd.random() < 0.3 else \
            "x" * rnd.choice([0, 1, 30, 400]) + str(rnd.randint(0, 999))
        if kind == "-D" and engine != "deduplicate":
            # with remove-record-on-delete, Java's engines start a key again from the delete's
            # values, unless a compaction to the top level dropped the delete first: a delete
            # without values keeps the answer the same for every layout of the files
            a = s = None
        out.append((kind, {"p": rnd.randrange(partitions), "k": k, "a": a, "s": s}))
    return out


def short(entry):
    """A log entry with long strings abbreviated (assertion messages stay readable)."""
    if isinstance(entry, list):
        return [(kind, v["p"], v["k"], v["a"], v["s"] if v["s"] is None or len(v["s"]) < 8 else f"x*{len(v['s'])}")
                for kind, v in entry]
    if entry[0] == "java":
        return ("java", short(entry[1]))
    return entry


def to_arrow(batch: list[tuple[str, dict]]) -> pa.Table:
    return pa.table({"p": pa.array([v["p"] for _, v in batch], pa.int32()),
                     "k": pa.array([v["k"] for _, v in batch], pa.int32()),
                     "a": pa.array([v["a"] for _, v in batch], pa.int32()),
                     "s": pa.array([v["s"] for _, v in batch], pa.string()),
                     "_kind": pa.array([kind for kind, _ in batch], pa.string())})


def rows(records) -> list[tuple]:
    """Sorted (p, k, a, s), s shortened (our strings are x * n + digits) and None as "-"."""
    return sorted((r.get("p", 0), r["k"], -999 if r["a"] is None else r["a"], "-" if r["s"] is None else
                   f"x*{len(r['s'])}:{r['s'].lstrip('x')}") for r in records)


def hides_level0(options: dict[str, str]) -> bool:
    """Batch reads skip level 0 (deletion-vector and first-row tables, as Java's): with
    `write-only` nothing pushes a batch up, so it is read only after a compaction."""
    return options.get("write-only") == "true" and (
        options.get("deletion-vectors.enabled") == "true" or options.get("merge-engine") == "first-row")


def streams_rows(options: dict[str, str]) -> bool:
    """The stream carries whole rows: appends, deduplicate (deltas or input), or a lookup changelog."""
    return options.get("merge-engine", "deduplicate") == "deduplicate" or options.get("changelog-producer") == "lookup"


class Case:
    """One random table, its model, and what was seen of it."""

    def __init__(self, root: str, index: int, rnd: random.Random):
        self.index = index
        self.keyed = rnd.random() < 0.75
        self.options = random_options(rnd, self.keyed)
        self.rnd = random.Random(rnd.random())
        self.partitions = rnd.choice([1, 1, 3])  # a table of 3 partitions, or of none
        self.table = ps.Catalog(root).create_table(f"db.t{index}", HUNT_SCHEMA, primary_keys=KEY if self.keyed else [],
                                                   partition_keys=["p"] if self.partitions > 1 else [],
                                                   options=self.options)
        self.path = self.table.path
        self.model = Model(self.options, TYPES, KEY) if self.keyed else AppendModel()
        self.log: list = []
        self.streamed: dict[int, tuple] | list[tuple] = {} if self.keyed else []
        self.stream = self.position = None
        if streams_rows(self.options):  # its consumer keeps the snapshots it has not read from expiring
            self.stream = open_stream(self.table, {"consumer-id": "hunt"})
            self.position = self.stream.start_position()
            self.stream.record_progress(self.position)
        self.java_batch: list[tuple[str, dict]] | None = None
        self.java_compacts = False

    def where(self) -> str:
        return f"case {self.index} {self.options} partitions {self.partitions} steps {[short(e) for e in self.log]}"

    def step(self) -> None:
        t = ps.Table.open(self.path)
        if self.rnd.random() < 0.25:
            full = self.rnd.random() < 0.5
            self.log.append(("compact", full))
            t.compact(full=full)
        else:
            batch = random_batch(self.rnd, self.options, self.partitions)
            self.log.append(batch)
            if self.keyed:
                t.write_arrow(to_arrow(batch), row_kind_column="_kind")
            else:
                t.write_arrow(to_arrow(batch).drop_columns(["_kind"]))
            self.model.write(batch)
        self.check_latest()
        self.read_stream()

    def check_latest(self) -> None:
        t = ps.Table.open(self.path)
        if not hides_level0(self.options) or self.log[-1:] == [("compact", True)]:
            assert rows(t.to_arrow().to_pylist()) == rows(self.model.read()), self.where()

    def read_stream(self) -> None:
        if self.stream is None:
            return
        for batch, self.position in micro_batches(self.stream, ["p", "k", "a", "s"], self.position):
            for _, changes in batch:
                for r in changes.to_pylist():
                    if not self.keyed:
                        assert r["_kind"] == "+I", self.where()
                        self.streamed.append(rows([r])[0])
                    elif r["_kind"] in ("-D", "-U"):
                        self.streamed.pop((r["p"], r["k"]), None)
                    else:
                        self.streamed[(r["p"], r["k"])] = rows([r])[0]
            self.stream.record_progress(self.position)

    def java_turn(self) -> None:
        """What Java does to the table in its turn (chosen now, done in one JVM for all)."""
        if self.rnd.random() < 0.7 and self.options["bucket"] != "-1":  # the oracle's writes take a bucket
            self.java_batch = random_batch(self.rnd, self.options, self.partitions)
        # Java's writer does not compact a write-only table (its compaction job sets write-only off)
        # (and Java 1.4.2's compaction of an append table fails under 'compaction.min.file-num' = 1:
        # "AppendOnlyCompactionTask need more than one file input")
        self.java_compacts = self.rnd.random() < 0.5 and self.options.get("write-only") != "true" and \
            self.options.get("compaction.min.file-num") != "1"


class World:
    """Every random table, written by us, by Java, by us again; read by both."""

    def __init__(self, root: str, n: int, seed: int):
        rnd = random.Random(seed)
        self.java = get_oracle()
        self.cases = [Case(f"{root}/w", i, rnd) for i in range(n)]
        for case in self.cases:
            for _ in range(STEPS):
                case.step()
            case.java_turn()
        with self.java.batch() as b:
            self.java_read_before = {}
            for case in self.cases:
                if case.java_batch is not None:
                    b.write(case.path, [{**v, "_ROW_KIND": kind} if case.keyed else v for kind, v in case.java_batch])
                if case.java_compacts:
                    b.compact(case.path)
                self.java_read_before[case.index] = b.read(case.path)
        for case in self.cases:
            if case.java_batch is not None:
                case.model.write(case.java_batch)
                case.log.append(("java", case.java_batch))
            if case.java_compacts:
                case.log.append(("java-compact",))
            case.after_java = rows(case.model.read())
            case.read_stream()
            for _ in range(STEPS):
                case.step()
            ps.Table.open(case.path).compact(full=True)
            case.log.append(("compact", True))
            case.check_latest()
            case.read_stream()
        self.snapshots = {c.index: [s.id for s in ps.Table.open(c.path).snapshots()] for c in self.cases}
        with self.java.batch() as b:
            self.java_reads = {c.index: {sid: b.read(c.path, snapshot_id=sid) for sid in self.snapshots[c.index]}
                               for c in self.cases}


@pytest.fixture(scope="module")
def world(tmp_path_factory) -> World:
    return World(str(tmp_path_factory.mktemp("extreme")), EXAMPLES, SEED)


def test_java_reads_what_we_wrote_under_extreme_options(world):
    """Java's read of the latest snapshot after its turn is the model's (Java's read after
    our first steps, its batch and its compaction), unless level 0 is hidden (write-only)."""
    for case in world.cases:
        got = rows(world.java_read_before[case.index].result)
        if not hides_level0(case.options) or case.java_compacts:
            assert got == case.after_java, case.where()


def test_time_travel_to_every_retained_snapshot_reads_as_java(world):
    for case in world.cases:
        t = ps.Table.open(case.path)
        for sid, java in world.java_reads[case.index].items():
            assert rows(t.to_arrow(snapshot_id=sid).to_pylist()) == rows(java.result), (sid, case.where())
        latest = max(world.java_reads[case.index])
        assert rows(world.java_reads[case.index][latest].result) == rows(case.model.read()), case.where()


def test_streams_apply_to_the_model(world):
    for case in world.cases:
        if case.stream is not None:
            streamed = case.streamed.values() if case.keyed else case.streamed
            assert sorted(streamed) == rows(case.model.read()), case.where()


def test_check_table_finds_nothing(world):
    for case in world.cases:
        report = check_table(ps.Table.open(case.path))
        assert report.ok, (report.errors(), case.where())


# ---- values we refuse where Java accepts them: the error names the option -------------------------

@pytest.mark.parametrize("options, key", [
    ({"file.format": "avro"}, "file.format"),
    ({"changelog-producer": "full-compaction"}, "changelog-producer"),
    ({"changelog-producer": "lookup"}, "changelog-producer"),
])
def test_refused_values_name_their_option(catalog, options, key):
    with pytest.raises((InvalidOptionError, UnsupportedOperationError), match=key):
        catalog.create_table("db.t", SCHEMA, primary_keys=["k"], options={"bucket": "1", **options})


# ---- regressions found by the hunt -----------------------------------------------------------------

BIG = "x" * 400  # a few rows fill a 1 kb file


@pytest.mark.parametrize("producer", ["input", "lookup"])
def test_a_changelog_rolled_into_many_files_is_read_in_order(catalog, producer):
    """With a tiny `target-file-size` one batch's changelog rolls into more than ten files
    (`...-0`, `...-1`, ... `...-10`): a stream, and an incremental query, read them in the
    order written, as Java, not by file name (`-10` before `-2`), which put a key's later
    change before its earlier one: here an update stream ended on the wrong value and a -D
    read after the +I that followed it lost the key."""
    t = catalog.create_table("db.t", SCHEMA, primary_keys=["k"], options={
        "bucket": "1", "changelog-producer": producer, "target-file-size": "1 kb", "deletion-vectors.enabled": "true"})
    t.write_arrow(pa.table({"k": pa.array(range(2, 30), pa.int32()), "a": pa.array([0] * 28, pa.int32()),
                            "s": [BIG] * 28}, schema=SCHEMA))
    scan = open_stream(t, {"scan.mode": "latest"})
    position = scan.start_position()
    n = 24  # key 1, 24 times in one batch (input: 24 changelog rows in ~12 files); keys 2..29 updated
    kinds = ["+I"] * (n - 2) + ["-D", "+I"]
    batch = pa.table({"k": pa.array([1] * n + list(range(2, 30)), pa.int32()),
                      "a": pa.array(list(range(n)) + [1] * 28, pa.int32()), "s": [BIG] * (n + 28),
                      "_kind": kinds + ["-D"] + ["+I"] * 27})
    t.write_arrow(batch, row_kind_column="_kind")
    streamed = [r for b, _ in micro_batches(scan, ["k", "a"], position) for _, rows in b for r in rows.to_pylist()]
    incremental = ps.Table.open(t.path).changes_between(1, ps.Table.open(t.path).latest_snapshot().id,
                                                        row_kind_column="_kind")
    for changes in (streamed, incremental.to_pylist()):
        state = {}
        for r in changes:
            if r["_kind"] in ("-D", "-U"):
                state.pop(r["k"], None)
            else:
                state[r["k"]] = r["a"]
        assert state == {1: n - 1, **{k: 1 for k in range(3, 30)}}
        if producer == "input":
            assert [(r["_kind"], r["a"]) for r in changes if r["k"] == 1] == list(zip(kinds, range(n)))


def test_an_append_buckets_rolled_files_stream_in_the_order_written(catalog):
    """A bucketed append table keeps its rows in the order written, per bucket (what users
    pick it for: a log read back in order). A batch rolled into more than ten files at a
    tiny `target-file-size` streamed `-10` ... `-19` before `-2`; now in the order written,
    for a stream and an incremental query."""
    t = catalog.create_table("db.t", SCHEMA, options={"bucket": "1", "bucket-key": "k", "target-file-size": "1 kb"})
    scan = open_stream(t, {})
    n = 40
    t.write_arrow(pa.table({"k": pa.array(range(n), pa.int32()), "a": pa.array(range(n), pa.int32()),
                            "s": [BIG] * n}, schema=SCHEMA))
    assert len(ps.Table.open(t.path).plan(ps.Table.open(t.path).latest_snapshot())[0].files) > 10
    streamed = [r["a"] for b, _ in micro_batches(scan, ["a"]) for _, rows in b for r in rows.to_pylist()]
    assert streamed == list(range(n))
    assert ps.Table.open(t.path).changes_between(0, 1).column("a").to_pylist() == list(range(n))


def test_an_append_bucket_reads_in_the_order_written_after_a_partial_compaction(catalog):
    """A compaction of some of a bucket's files (the small ones in a row) commits its output
    after the files it left alone: a batch read listed them in that (manifest) order, so rows
    written later came first. Java's batch reads order an append bucket's files by sequence
    number (AppendOnlySplitGenerator); so do ours now, and a stream's full start too."""
    t = catalog.create_table("db.t", SCHEMA, options={"bucket": "1", "bucket-key": "k", "target-file-size": "4 kb",
                                                      "compaction.min.file-num": "3", "write-only": "true"})
    start = 0
    for n in [1, 1, 1, 1, 20, 1, 1, 1]:  # the compaction rewrites the first seven, leaves the last
        t.write_arrow(pa.table({"k": pa.array(range(n), pa.int32()), "a": pa.array(range(start, start + n), pa.int32()),
                                "s": ["x" * 100] * n}, schema=SCHEMA))
        start += n
    t.compact()
    t = ps.Table.open(t.path)
    assert t.to_arrow().column("a").to_pylist() == list(range(start))
    scan = open_stream(t, {"scan.mode": "latest-full"})
    assert [r["a"] for b, _ in micro_batches(scan, ["a"]) for _, rows in b for r in rows.to_pylist()] == \
        list(range(start))
