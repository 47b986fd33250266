"""The main job (`paimon-streaming demo`): a streaming round trip through the sink, a
deletion-vector table and the streaming source, verified against its model."""
from __future__ import annotations

import numpy as np
import pyarrow as pa
import pytest

import paimon_streaming as ps
from conftest import pypaimon_read
from paimon_streaming.cli import main
from paimon_streaming.errors import TableAlreadyExistsError
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
    # re-runnable: a second run replaces the table the first one made, and says so
    rerun: list[str] = []
    assert run_demo(get_spark(), wh, DemoSpec(batches=1, rows=50, keys=40, seed=1), "0.5 seconds", rerun.append) == 0
    assert rerun[0] == f"replacing demo.orders of an earlier demo run at {table.path}", rerun
    assert rerun[-1].startswith("verified"), rerun


def test_demo_refuses_a_table_of_that_name_it_did_not_create(tmp_path, capsys):
    wh = str(tmp_path / "wh")
    mine = ps.Catalog(wh).create_table("demo.orders", pa.schema([pa.field("id", pa.int64(), False)]),
                                       primary_keys=["id"], options={"bucket": "1"})
    mine.write_arrow(pa.table({"id": pa.array([1, 2], pa.int64())}))
    mine.create_tag("keep")
    with pytest.raises(TableAlreadyExistsError, match=r"demo.orders .* was not created by the demo"):
        run_demo(get_spark(), wh, DemoSpec(batches=1, rows=10, keys=10), "0.5 seconds", print)
    # the command refuses before it starts Spark
    assert main(["demo", "--warehouse", wh, "--batches", "1", "--rows", "10", "--keys", "10", "--no-progress"]) == 1
    err = capsys.readouterr().err
    assert f"table demo.orders at {mine.path} was not created by the demo" in err and "--warehouse" in err, err
    table = ps.Catalog(wh).get_table("demo.orders")
    assert table.to_arrow().num_rows == 2 and "keep" in table.tags()


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
