"""Model-based test: random sequences of batch upserts (with duplicate keys inside a batch),
overwrites and reopenings of a partitioned primary-key table, checked against a dict model
after every step with our reader, and with pypaimon at the end of each sequence."""
from __future__ import annotations

import tempfile

import pyarrow as pa
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import paimon_streaming as ps
from conftest import pypaimon_read

SCHEMA = pa.schema([("k", pa.int32(), False), ("p", pa.string(), False), ("v", pa.int64())])

rows = st.lists(st.tuples(st.integers(-20, 20), st.sampled_from(["a", "b", "c d"]),
                          st.one_of(st.none(), st.integers(-10**12, 10**12))), min_size=0, max_size=30)
ops = st.lists(st.tuples(st.sampled_from(["write", "write", "write", "overwrite", "reopen"]), rows),
               min_size=1, max_size=8)


@settings(max_examples=25, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(ops=ops, buckets=st.sampled_from(["1", "3", "-1"]))
def test_random_operations_match_model(ops, buckets):
    warehouse = tempfile.mkdtemp()
    table = ps.Catalog(warehouse).create_table(
        "db.t", SCHEMA, primary_keys=["k", "p"], partition_keys=["p"],
        options={"bucket": buckets, "dynamic-bucket.target-row-num": "7"})
    model: dict[tuple, int | None] = {}
    for op, batch_rows in ops:
        data = pa.table({"k": [r[0] for r in batch_rows], "p": [r[1] for r in batch_rows],
                         "v": [r[2] for r in batch_rows]}, schema=SCHEMA)
        if op == "reopen":
            table = ps.Table.open(table.path)
            continue
        table.write_arrow(data, overwrite=(op == "overwrite"))
        if op == "overwrite":
            model.clear()
        model.update({(r[0], r[1]): r[2] for r in batch_rows})
        got = {(r["k"], r["p"]): r["v"] for r in table.to_arrow().to_pylist()}
        assert got == model
    theirs = {(r["k"], r["p"]): r["v"] for r in pypaimon_read(warehouse, "db.t").to_pylist()}
    assert theirs == model
