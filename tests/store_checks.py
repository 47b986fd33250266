"""The same catalog round trip on every store (S3, Azure, HDFS, ...): one table with deletion
vectors, partitions and three commits, listed, reopened from its table location, checked and
read back, and a taken snapshot id never published twice."""
from __future__ import annotations

import pyarrow as pa

import paimon_streaming as ps
from conftest import rows_by
from paimon_streaming.check import check_table

SCHEMA = pa.schema([pa.field("id", pa.int64(), False), ("v", pa.string()), pa.field("p", pa.string(), False)])


def rows(ids, v: str = "a", p: str = "x") -> pa.Table:
    return pa.table({"id": list(ids), "v": [f"{v}{i}" for i in ids], "p": [p] * len(ids)}, schema=SCHEMA)


def catalog_round_trip(cat: ps.Catalog) -> tuple[str, list[dict]]:
    """Create db.t in `cat`, commit three batches, and check what every store must give; returns
    the table's location (for store-specific checks) and its expected rows (`rows_by` p, id)."""
    t = cat.create_table("db.t", SCHEMA, primary_keys=["id", "p"], partition_keys=["p"],
                         options={"bucket": "2", "deletion-vectors.enabled": "true"})
    t.write_arrow(rows(range(10)))
    t.write_arrow(rows(range(5), v="b", p="y/z"))
    t.write_arrow(rows(range(3), v="c"))
    expected = rows_by(pa.concat_tables([rows(range(3), v="c"), rows(range(3, 10)), rows(range(5), v="b", p="y/z")]),
                       "p", "id")
    assert cat.list_databases() == ["db"] and cat.list_tables("db") == ["t"]
    location = cat.table_location("db.t")
    reopened = ps.Table.open(location)
    assert rows_by(reopened.to_arrow(), "p", "id") == expected
    assert [s.id for s in reopened.snapshots()] == list(range(1, 7))  # APPEND + COMPACT per batch
    report = check_table(reopened)
    assert report.ok and not report.problems, report.problems
    assert not reopened.snapshot_manager.try_publish(reopened.snapshot(6))  # taken: never replaced
    return location, expected
