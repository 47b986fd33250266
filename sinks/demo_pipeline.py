"""The main job (`paimon-streaming demo`): a streaming round trip on a local warehouse.

    generated change stream (format "paimon-demo-changes": upserts and deletes over a key
    space, one batch per trigger, deterministic by batch number)
      -> foreachBatch(paimon_sink(...)) into demo.orders (primary key, deletion vectors)
      -> spark.readStream.format("paimon") (row kinds) applied to a mirror of the table
      -> final spark.read.format("paimon"), checked against the model of what was generated

Needs only Python, Java 17 and `pip install ".[spark]"`: no Kafka, no cluster. Prints one
line per written and per read micro-batch and a verified summary; returns 1 on any mismatch.
The model is exact because each generated batch is a pure function of (seed, batch number):
the model replays the same batches with numpy.
"""
from __future__ import annotations

import shutil
import threading
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Callable, Iterator

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from paimon_streaming.sinks import spark_version  # noqa: F401  (first: PySpark >= 4.2.1, named)
from pyspark.sql import DataFrame, SparkSession
from pyspark.sql.datasource import DataSource, DataSourceStreamReader, InputPartition
from pyspark.sql.streaming.datasource import ReadLimit
from pyspark.sql.types import StructType

import paimon_streaming as ps
from paimon_streaming.catalog import Catalog
from paimon_streaming.errors import TableAlreadyExistsError

from .foreach_batch import paimon_sink

TABLE = "demo.orders"
KIND = "_kind"
CATEGORIES = np.array(["books", "games", "music", "tools"], dtype=object)
TABLE_SCHEMA = pa.schema([pa.field("id", pa.int64(), False), pa.field("amount", pa.float64()),
                          pa.field("category", pa.string())])
CHANGE_SCHEMA = pa.schema([pa.field("id", pa.int64()), pa.field("amount", pa.float64()),
                           pa.field("category", pa.string()), pa.field(KIND, pa.string())])
DELETE_SHARE = 0.1
# Table option marking demo.orders as the demo's own: a later run replaces only a table carrying it.
DEMO_MARK = "paimon-streaming.demo"


@dataclass(frozen=True)
class DemoSpec:
    batches: int = 20
    rows: int = 20_000
    keys: int = 100_000
    seed: int = 7


def generate(spec: DemoSpec, batch: int) -> pa.RecordBatch:
    """Batch `batch` of the change stream: `rows` changes, ~10% deletes, the rest upserts."""
    rng = np.random.default_rng([spec.seed, batch])
    ids = rng.integers(0, spec.keys, spec.rows, dtype=np.int64)
    amount = np.round(rng.random(spec.rows) * 1000, 2)
    deletes = rng.random(spec.rows) < DELETE_SHARE
    kinds = np.where(deletes, "-D", "+I").astype(object)
    return pa.RecordBatch.from_arrays([pa.array(ids), pa.array(amount), pa.array(CATEGORIES[ids % 4]),
                                       pa.array(kinds, pa.string())], schema=CHANGE_SCHEMA)


class KeyModel:
    """The expected table over the key space: which keys are live and their amounts."""

    def __init__(self, keys: int):
        self.live = np.zeros(keys, dtype=bool)
        self.amount = np.zeros(keys, dtype=np.float64)

    def apply(self, ids: np.ndarray, amount: np.ndarray, deleted: np.ndarray) -> None:
        """Apply changes in order: the last change of a key wins (vectorized)."""
        rev_ids = ids[::-1]
        _, first_in_rev = np.unique(rev_ids, return_index=True)
        last = len(ids) - 1 - first_in_rev
        k = ids[last]
        self.live[k] = ~deleted[last]
        self.amount[k] = amount[last]

    def apply_changes(self, changes: pa.Table) -> None:
        if changes.num_rows:
            self.apply(changes.column("id").to_numpy(), changes.column("amount").fill_null(0.0).to_numpy(),
                       pc.equal(changes.column(KIND), "-D").to_numpy(zero_copy_only=False))

    def mismatches(self, table: pa.Table) -> list[str]:
        """Differences between a read of the table and this model ([] when equal)."""
        ids = table.column("id").to_numpy()
        problems = []
        if len(np.unique(ids)) != len(ids):
            problems.append(f"{len(ids) - len(np.unique(ids))} duplicated keys")
        expected = np.flatnonzero(self.live)
        missing, extra = np.setdiff1d(expected, ids), np.setdiff1d(ids, expected)
        if len(missing):
            problems.append(f"{len(missing)} live keys missing, e.g. {missing[:5].tolist()}")
        if len(extra):
            problems.append(f"{len(extra)} deleted or unknown keys present, e.g. {extra[:5].tolist()}")
        if not problems:
            wrong = ids[table.column("amount").to_numpy() != self.amount[ids]]
            if len(wrong):
                problems.append(f"{len(wrong)} keys with a wrong amount, e.g. {wrong[:5].tolist()}")
        return problems


# ---- the generated stream as a Spark data source ----------------------------------------
@dataclass(frozen=True)
class GeneratedBatch(InputPartition):
    batch: int


class DemoStreamReader(DataSourceStreamReader):
    """One new generated batch per trigger, up to `batches`; offsets {"batch": next batch}."""

    def __init__(self, spec: DemoSpec):
        self.spec = spec

    def initialOffset(self) -> dict:
        return {"batch": 0}

    def latestOffset(self, start: dict, limit: ReadLimit) -> dict:
        return {"batch": min(start["batch"] + 1, self.spec.batches)}

    def partitions(self, start: dict, end: dict) -> list[InputPartition]:
        return [GeneratedBatch(b) for b in range(start["batch"], end["batch"])]

    def read(self, partition: GeneratedBatch) -> Iterator[pa.RecordBatch]:
        yield generate(self.spec, partition.batch)


class DemoChangesSource(DataSource):
    """format("paimon-demo-changes"): options batches, rows, keys, seed (see DemoSpec)."""

    @classmethod
    def name(cls) -> str:
        return "paimon-demo-changes"

    def schema(self) -> StructType:
        from pyspark.sql.pandas.types import from_arrow_schema
        return from_arrow_schema(CHANGE_SCHEMA)

    def streamReader(self, schema: StructType) -> DemoStreamReader:
        o = self.options
        return DemoStreamReader(DemoSpec(int(o["batches"]), int(o["rows"]), int(o["keys"]), int(o["seed"])))


# ---- the job -----------------------------------------------------------------------------
def earlier_demo_table(catalog: Catalog) -> str | None:
    """The path of a demo.orders an earlier demo run made (the demo replaces it), None when
    there is no such table; TableAlreadyExistsError for a table of that name the demo did not
    make, which it must not drop (the default warehouse is ./warehouse, wherever one runs it)."""
    if not catalog.table_exists(TABLE):
        return None
    table = catalog.get_table(TABLE)
    if table.schema.options.get(DEMO_MARK) != "true":
        raise TableAlreadyExistsError(
            f"table {TABLE} at {table.path} was not created by the demo, which replaces only its own "
            f"table (option {DEMO_MARK}=true): run the demo in another warehouse (--warehouse DIR)")
    return table.path


def run_demo(spark: SparkSession, warehouse: str, spec: DemoSpec, interval: str = "1 second",
             log: Callable[[str], None] = print, status: Callable[[str], None] | None = None) -> int:
    """Run the round trip; 0 when the table, the streamed mirror and the model agree.
    `status` (a terminal's live status line, see `live_status.py`) gets `demo_status` text
    after every batch and every 0.25 s."""
    ps.register(spark)
    spark.dataSource.register(DemoChangesSource)
    catalog = Catalog(warehouse)
    earlier = earlier_demo_table(catalog)
    if earlier is not None:
        log(f"replacing {TABLE} of an earlier demo run at {earlier}")
        catalog.drop_table(TABLE)
    checkpoints = Path(warehouse) / ".checkpoints" / "demo"
    shutil.rmtree(checkpoints, ignore_errors=True)
    table = catalog.create_table(TABLE, TABLE_SCHEMA, primary_keys=["id"],
                                 options={"bucket": "2", "deletion-vectors.enabled": "true", DEMO_MARK: "true"})
    log(f"table {TABLE} at {table.path}: primary key id, 2 buckets, deletion vectors")
    log(f"streaming {spec.batches} batches x {spec.rows:,} changes over {spec.keys:,} keys "
        f"(~{DELETE_SHARE:.0%} deletes), one batch per {interval}")

    written, mirror, started = KeyModel(spec.keys), KeyModel(spec.keys), time.perf_counter()
    done = threading.Event()
    sink = paimon_sink(table.path, row_kind_column=KIND)
    stats = {"write_s": 0.0, "changes": 0, "streamed": 0}  # sink time and changes after batch 0
    # Each written batch commits one snapshot with rows and the reader takes one snapshot per
    # trigger, so the n-th read batch with rows holds the n-th written batch: its write->read latency.
    written_at: list[float] = []
    latencies: list[float] = []  # one per read batch with rows

    def show_status() -> None:
        if status is not None:
            status(demo_status(spec, len(written_at), latencies, sink_rate(stats), time.perf_counter() - started))

    def write(df: DataFrame, batch_id: int) -> None:
        t0 = time.perf_counter()
        sink(df, batch_id)
        took = time.perf_counter() - t0
        snap = ps.Table.open(table.path).latest_snapshot()
        if batch_id > 0:  # batch 0 includes starting the Python workers
            stats["write_s"] += took
            stats["changes"] += spec.rows
        written_at.append(time.perf_counter())
        log(f"write batch {batch_id:>3}: {spec.rows:,} changes -> snapshot {snap.id if snap else '-'} "
            f"({snap.total_record_count if snap else 0:,} records) in {took:.2f}s")
        show_status()
        if batch_id + 1 >= spec.batches:
            done.set()

    def read(df: DataFrame, batch_id: int) -> None:
        changes = df.toArrow()
        if not changes.num_rows:
            return
        mirror.apply_changes(changes)
        stats["streamed"] += changes.num_rows
        if len(latencies) < len(written_at):
            latencies.append(time.perf_counter() - written_at[len(latencies)])
        deletes = int(pc.sum(pc.equal(changes.column(KIND), "-D")).as_py() or 0)
        log(f"read  batch {batch_id:>3}: {changes.num_rows:,} rows ({changes.num_rows - deletes:,} upserts, "
            f"{deletes:,} deletes); mirror has {int(mirror.live.sum()):,} keys")
        show_status()

    gen = (spark.readStream.format("paimon-demo-changes").option("batches", spec.batches)
           .option("rows", spec.rows).option("keys", spec.keys).option("seed", spec.seed).load())
    writer = (gen.writeStream.foreachBatch(write).option("checkpointLocation", str(checkpoints / "write"))
              .trigger(processingTime=interval).queryName("demo-write").start())
    changes = (spark.readStream.format("paimon").option("rowKindColumn", KIND)
               .option("max-snapshots-per-trigger", 1).load(table.path))
    reader = (changes.writeStream.foreachBatch(read).option("checkpointLocation", str(checkpoints / "read"))
              .trigger(processingTime=interval).queryName("demo-read").start())
    try:
        while not done.wait(0.25):
            show_status()
            if writer.exception() or reader.exception():
                raise RuntimeError(f"a demo query failed: {writer.exception() or reader.exception()}")
        writer.stop()
        reader.processAllAvailable()
    finally:
        writer.stop()
        reader.stop()
    for b in range(spec.batches):
        batch = generate(spec, b)
        written.apply(batch.column("id").to_numpy(), batch.column("amount").to_numpy(),
                      pc.equal(batch.column(KIND), "-D").to_numpy(zero_copy_only=False))
    final = spark.read.format("paimon").load(table.path).toArrow()
    problems = [f"batch read: {p}" for p in written.mismatches(final)]
    if not np.array_equal(mirror.live, written.live) or not np.array_equal(
            mirror.amount[written.live], written.amount[written.live]):
        problems.append(f"streamed mirror differs from the model ({int(mirror.live.sum())} vs "
                        f"{int(written.live.sum())} live keys)")
    elapsed = time.perf_counter() - started
    snaps = ps.Table.open(table.path).snapshots()
    log(f"summary: {spec.batches} batches, {spec.batches * spec.rows:,} changes written "
        f"({sink_rate(stats)} changes/s through the sink after batch 0), "
        f"{stats['streamed']:,} rows streamed back, {final.num_rows:,} live keys "
        f"({spec.keys - final.num_rows:,} absent or deleted), {len(snaps)} snapshots, {elapsed:.0f}s")
    if problems:
        for p in problems:
            log(f"MISMATCH: {p}")
        return 1
    log("verified: the table (batch read) and the streamed mirror equal the model of the generated changes")
    return 0


def sink_rate(stats: dict) -> str:
    """Changes per second through the sink after batch 0 (which includes starting the Python workers)."""
    return f"{stats['changes'] / stats['write_s']:,.0f}" if stats["write_s"] else "n/a"


def demo_status(spec: DemoSpec, written: int, latencies: list[float], rate: str, elapsed: float) -> str:
    """The live status line of `paimon-streaming demo`."""
    parts = ["demo", f"written {written}/{spec.batches} batches", f"read {len(latencies)}", f"{rate} changes/s"]
    if latencies:
        parts.append(f"write->read {latencies[-1]:.1f}s")
    return " | ".join(parts + [f"{elapsed:.0f}s"])
