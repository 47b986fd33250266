"""Partition directory names are Java Paimon's (`partition.legacy-name` = true, the default):
Java reads a partition's files at the path it computes from the partition's values, so a name
that differs from Java's is a table Java cannot read."""
from __future__ import annotations

import datetime as dt
import os

import pyarrow as pa

try:
    from java_oracle import get_oracle
except ImportError:  # run from the repository root
    from tests.java_oracle import get_oracle


def _partition_dirs(path: str) -> list[str]:
    return sorted(os.path.relpath(d, path) for d, _, _ in os.walk(path) if os.path.basename(d).startswith("bucket-"))


def test_time_and_floating_partition_names_are_javas(catalog, warehouse):
    rows = [{"id": 1, "t": dt.time(1, 2, 3, 456000), "f": 1.0e20, "d": 1e-5},
            {"id": 2, "t": dt.time(0), "f": 0.1, "d": 123456789.125},
            {"id": 3, "t": dt.time(23, 59, 59, 999000), "f": 3.4028234663852886e38, "d": -0.0},
            {"id": 4, "t": dt.time(12), "f": 1.401298464324817e-45, "d": 4.9e-324},
            {"id": 5, "t": dt.time(12), "f": 1234567.0, "d": float("nan")}]
    java = get_oracle()
    jpath = f"{warehouse}/db.db/java_made"
    with java.batch() as b:
        b.create_table(jpath, [{"name": "id", "type": "BIGINT"}, {"name": "t", "type": "TIME"},
                               {"name": "f", "type": "FLOAT"}, {"name": "d", "type": "DOUBLE"}],
                       partition_keys=["t", "f", "d"])
        b.write(jpath, rows)
    schema = pa.schema([("id", pa.int64()), ("t", pa.time32("ms")), ("f", pa.float32()), ("d", pa.float64())])
    ours = catalog.create_table("db.ours", schema, partition_keys=["t", "f", "d"])
    ours.write_arrow(pa.Table.from_pylist(rows, schema=schema))
    assert _partition_dirs(ours.path) == _partition_dirs(jpath)
    assert "t=3723456/f=1.0E20/d=1.0E-5/bucket-0" in _partition_dirs(ours.path)
    with java.batch() as b:
        back = b.read(ours.path)
    assert sorted(r["id"] for r in back.result) == [1, 2, 3, 4, 5]
