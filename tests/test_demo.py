"""The main job (`paimon-streaming demo`): a streaming round trip through the sink, a
deletion-vector table and the streaming source, verified against its model."""
from __future__ import annotations

import numpy as np
import pyarrow as pa

import paimon_streaming as ps
from conftest import pypaimon_read
from paimon_streaming.sinks.demo_pipeline import DemoSpec, KeyModel, generate, run_demo
from spark_support import get_spark


def test_demo_streams_through_a_deletion_vector_table_and_verifies(tmp_path):
    lines: list[str] = []
    wh = str(tmp_path / "wh")
    spec = DemoSpec(batches=3, rows=2000, keys=3000, seed=3)
    assert run_demo(get_spark(), wh, spec, "0.5 seconds", lines.append) == 0, "\n".join(lines)
    assert lines[-1].startswith("verified"), lines
    assert sum(line.startswith("write batch") for line in lines) == 3
    assert any(line.startswith("read  batch") for line in lines)
    table = ps.Catalog(wh).get_table("demo.orders")
    assert table.options.deletion_vectors
    model = KeyModel(spec.keys)
    for b in range(spec.batches):
        batch = generate(spec, b)
        model.apply(batch.column("id").to_numpy(), batch.column("amount").to_numpy(),
                    np.array([k == "-D" for k in batch.column("_kind").to_pylist()]))
    assert model.mismatches(pypaimon_read(wh, "demo.orders")) == []


def test_model_reports_wrong_tables():
    spec = DemoSpec(batches=1, rows=50, keys=40, seed=1)
    batch = generate(spec, 0)
    assert batch.num_rows == 50 and generate(spec, 0).equals(batch)  # deterministic by batch number
    model = KeyModel(spec.keys)
    model.apply(np.array([1, 2, 1, 3]), np.array([1.0, 2.0, 1.5, 3.0]), np.array([False, False, False, True]))
    good = pa.table({"id": [1, 2], "amount": [1.5, 2.0]})
    assert model.mismatches(good) == []
    assert "1 live keys missing" in model.mismatches(good.slice(0, 1))[0]
    assert "deleted or unknown" in model.mismatches(pa.table({"id": [1, 2, 3], "amount": [1.5, 2.0, 3.0]}))[0]
    assert "wrong amount" in model.mismatches(pa.table({"id": [1, 2], "amount": [1.0, 2.0]}))[0]
    assert "duplicated" in model.mismatches(pa.table({"id": [1, 1, 2], "amount": [1.5, 1.5, 2.0]}))[0]
