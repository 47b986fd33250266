"""The main job of the README's first command: upsert batches into a primary-key table in a
local warehouse, read the table back, verify it against a model, print the snapshots."""
from __future__ import annotations

import time

import numpy as np
import pyarrow as pa

from .catalog import Catalog

SCHEMA = pa.schema([("id", pa.int64(), False), ("name", pa.string()), ("amount", pa.float64()),
                    ("category", pa.string())])


def make_batch(rng: np.random.Generator, batch: int, rows: int, next_id: int) -> pa.Table:
    """First batch all new ids; later batches 80% new ids, 20% updates of earlier ids."""
    n_new = rows if batch == 0 else int(rows * 0.8)
    ids = np.arange(next_id, next_id + n_new, dtype=np.int64)
    if n_new < rows:
        ids = np.concatenate([ids, rng.integers(0, next_id, rows - n_new)])
    return pa.table({
        "id": ids,
        "name": pa.array([f"user-{i}" for i in ids % 1000]),
        "amount": rng.random(rows) * 100,
        "category": pa.array(np.array(["books", "games", "music", "tools"])[ids % 4]),
    }, schema=SCHEMA)


def run_demo(warehouse: str, batches: int, rows: int) -> int:
    catalog = Catalog(warehouse)
    if catalog.table_exists("demo.orders"):
        catalog.drop_table("demo.orders")
    table = catalog.create_table("demo.orders", SCHEMA, primary_keys=["id"], options={"bucket": "4"})
    print(f"created table demo.orders at {table.path}")
    rng = np.random.default_rng(7)
    model: dict[int, float] = {}
    next_id = 0
    for b in range(batches):
        batch = make_batch(rng, b, rows, next_id)
        next_id += rows if b == 0 else int(rows * 0.8)
        start = time.perf_counter()
        sid = table.write_arrow(batch)
        took = time.perf_counter() - start
        model.update(zip(batch.column("id").to_pylist(), batch.column("amount").to_pylist()))
        print(f"batch {b}: {batch.num_rows} rows -> snapshot {sid} in {took:.2f}s "
              f"({batch.num_rows / took:,.0f} rows/s)")
    start = time.perf_counter()
    result = table.to_arrow()
    took = time.perf_counter() - start
    got = dict(zip(result.column("id").to_pylist(), result.column("amount").to_pylist()))
    ok = got == model
    print(f"read {result.num_rows} rows in {took:.2f}s; expected {len(model)} distinct ids: "
          f"{'verified' if ok else 'MISMATCH'}")
    print("snapshots:")
    for s in table.snapshots():
        print(f"  {s.id:>3} {s.commit_kind:<9} total={s.total_record_count:<9} delta={s.delta_record_count}")
    return 0 if ok else 1
