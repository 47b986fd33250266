"""`bucket-function.type` (Java's BucketFunction: default, mod, hive): our writers must put a
key in the bucket Java's writers put it in, or a key lives in two buckets (read twice, never
merged). Java 1.4.2's own bucket for every row is the oracle."""
from __future__ import annotations

import datetime as dt
from decimal import Decimal

import numpy as np
import pyarrow as pa
import pytest

import paimon_streaming as ps
from paimon_streaming.errors import InvalidOptionError
from paimon_streaming.scan import TableScan

try:
    from java_oracle import get_oracle
except ImportError:  # pragma: no cover
    from tests.java_oracle import get_oracle

RNG = np.random.default_rng(11)
N = 300
KEYS = {  # column type -> values (with the edge cases each hash has)
    "INT": [0, -1, 1, 2**31 - 1, -2**31] + RNG.integers(-2**31, 2**31, N).tolist(),
    "BIGINT": [0, -1, 2**63 - 1, -2**63, 2**32] + RNG.integers(-2**63, 2**63, N, dtype=np.int64).tolist(),
    "STRING": ["", "a", "héllo wörld", "x" * 300, "日本"] + [f"k{i}-{'z' * (i % 40)}" for i in range(N)],
    "BOOLEAN": [True, False] * 3,
    "SMALLINT": [0, -1, 32767, -32768] + RNG.integers(-2**15, 2**15, N).tolist(),
    "DOUBLE": [0.0, -0.0, 1.5, float("inf"), float("nan")] + RNG.normal(0, 1e6, N).tolist(),
    "FLOAT": [0.0, -0.0, 1.5, float("-inf"), float("nan")] + RNG.normal(0, 1e3, N).astype(np.float32).tolist(),
    "BYTES": [b"", b"\x00", b"\xff\x80\x7f", bytes(range(256))] + [RNG.bytes(i % 50) for i in range(N)],
    "DECIMAL(10, 2)": [Decimal("0.00"), Decimal("1.50"), Decimal("-1.50"), Decimal("100.00"),
                       Decimal("99999999.99")] + [Decimal(int(x)) / 100 for x in RNG.integers(-10**10, 10**10, N)],
    "DECIMAL(18, 4)": [Decimal("0.0001"), Decimal("-99999999999999.9999"), Decimal("12345678901234.5000")] +
                      [Decimal(int(x)) / 10000 for x in RNG.integers(-10**18 + 1, 10**18, N, dtype=np.int64)],
    "DATE": [dt.date(1970, 1, 1), dt.date(1969, 12, 31), dt.date(2024, 2, 29)] +
            [dt.date(2000, 1, 1) + dt.timedelta(days=int(d)) for d in RNG.integers(-20000, 20000, N)],
}
CASES = [("mod", "INT"), ("mod", "BIGINT")] + [("hive", t) for t in KEYS] + [("default", "STRING")]


@pytest.mark.parametrize("buckets", [3, 16])
def test_every_key_goes_to_javas_bucket(tmp_path, buckets):
    java = get_oracle()
    paths = {}
    with java.batch() as b:
        pending = {}
        for function, key_type in CASES:
            path = str(tmp_path / "db.db" / f"{function}_{key_type.lower().replace(', ', '_').replace('(', '_').rstrip(')')}")
            paths[(function, key_type)] = path
            b.create_table(path, [{"name": "k", "type": f"{key_type} NOT NULL"}, {"name": "v", "type": "INT"}],
                           primary_keys=["k"], options={"bucket": str(buckets), "bucket-function.type": function})
            rows = [{"k": k, "v": i} for i, k in enumerate(dict.fromkeys(KEYS[key_type]))]
            pending[(function, key_type)] = (rows, b.buckets(path, rows))
    for case, (rows, javas) in pending.items():
        table = ps.Table.open(paths[case])
        data = pa.Table.from_pylist(rows, schema=table.arrow_schema())
        _, ours = table.new_write().partition_and_bucket(data)
        assert ours.tolist() == javas.result, case


def test_a_table_written_by_both_keeps_each_key_once(tmp_path):
    """Java writes keys 0..99, we update half of them and add more: one row per key, Java's read
    equals ours."""
    java = get_oracle()
    path = str(tmp_path / "db.db" / "t")
    with java.batch() as b:
        b.create_table(path, [{"name": "k", "type": "STRING NOT NULL"}, {"name": "v", "type": "INT"}],
                       primary_keys=["k"], options={"bucket": "4", "bucket-function.type": "hive"})
        b.write(path, [{"k": f"key{i}", "v": 0} for i in range(100)])
    table = ps.Table.open(path)
    table.write_arrow(pa.table({"k": [f"key{i}" for i in range(50, 150)], "v": pa.array([1] * 100, pa.int32())}))
    expected = {f"key{i}": 0 if i < 50 else 1 for i in range(150)}
    assert {r["k"]: r["v"] for r in table.to_arrow().to_pylist()} == expected
    assert {r["k"]: r["v"] for r in java.read(path)} == expected
    assert len(TableScan(table.file_io, table.path, table.schema).live_entries(table.latest_snapshot())) > 1


@pytest.mark.parametrize("function,keys,message", [
    ("mod", ["a", "b"], "single INT or BIGINT"),
    ("mod", ["s"], "single INT or BIGINT"),
    ("hive", ["d"], "cannot hash bucket key column"),  # DECIMAL(20, 2): a 128-bit unscaled value
    ("random", ["a"], "bucket-function.type"),
])
def test_keys_a_function_cannot_hash_are_refused(catalog, function, keys, message):
    schema = pa.schema([pa.field("a", pa.int32(), False), pa.field("b", pa.int64(), False),
                        pa.field("s", pa.string(), False), pa.field("d", pa.decimal128(20, 2), False)])
    with pytest.raises(InvalidOptionError, match=message):
        catalog.create_table("db.t", schema, primary_keys=keys,
                             options={"bucket": "2", "bucket-function.type": function})
