"""Model-based test of the streaming read (hypothesis): writes, deletes, compactions and
snapshot expirations interleave with a consumer reading the stream batch by batch under random
admission limits, its progress recorded (`consumer-id`) so expiration keeps what it has not
read. Applying every change the stream delivers (+I/+U upsert, -D/-U retract) gives, at every
step, the table as of the snapshot the stream has reached, and at the end the table itself;
the consumer is never told a snapshot it needs has expired."""
from __future__ import annotations

import os
import tempfile

import pyarrow as pa
from hypothesis import HealthCheck, given, settings, strategies as st

import paimon_streaming as ps
from paimon_streaming.streaming_scan import ReadLimits

from stream_batches import open_stream, read_batch

SCHEMA = pa.schema([("id", pa.int64(), False), ("v", pa.string())])
KIND = "_kind"
TABLES = {
    "pk": {"bucket": "2"},
    "dv": {"bucket": "2", "deletion-vectors.enabled": "true"},
    "dv-lookup-changelog": {"bucket": "1", "deletion-vectors.enabled": "true", "changelog-producer": "lookup"},
    "input-changelog": {"bucket": "2", "changelog-producer": "input"},
}
ids = st.lists(st.integers(0, 15), min_size=1, max_size=6, unique=True)
steps = st.lists(st.one_of(
    st.tuples(st.just("write"), ids),
    st.tuples(st.just("delete"), ids),
    st.tuples(st.just("compact"), st.booleans()),
    st.tuples(st.just("expire"), st.integers(1, 3)),
    st.tuples(st.just("read"), st.integers(1, 3), st.sampled_from([None, 1, 2])),
), min_size=1, max_size=16)


class Consumer:
    """A stream reader with a model of what it has been told."""

    def __init__(self, table: ps.Table, start: str):
        options = {"consumer-id": "model", "consumer.expiration-time": "1 d"}
        options |= {"scan.mode": "from-snapshot", "scan.snapshot-id": "1"} if start == "first" else {}
        self.scan = open_stream(table, options)
        self.position = self.scan.start_position()
        self.scan.record_progress(self.position)  # registered from its start, as a query's first batch is
        self.rows: dict[int, str] = {}

    def read(self, limits: ReadLimits | None) -> bool:
        """One micro-batch; False when there was nothing new."""
        batch, end = read_batch(self.scan, ["id", "v"], self.position, kind=KIND, limits=limits)
        if not batch:
            return False
        for _, rows in batch:
            for r in rows.to_pylist():
                if r[KIND] in ("+I", "+U"):
                    self.rows[r["id"]] = r["v"]
                else:
                    self.rows.pop(r["id"], None)
        self.position = end
        self.scan.record_progress(end)
        return True


@settings(max_examples=int(os.environ.get("STREAMING_EXAMPLES", 40)), deadline=None,
          suppress_health_check=[HealthCheck.too_slow])
@given(kind=st.sampled_from(sorted(TABLES)), start=st.sampled_from(["first", "latest"]), ops=steps)
def test_the_stream_applied_is_the_table(kind, start, ops):
    with tempfile.TemporaryDirectory() as wh:
        table = ps.Catalog(wh).create_table("db.t", SCHEMA, primary_keys=["id"], options=TABLES[kind])
        table.write_arrow(pa.table({"id": [0, 1], "v": ["first", "first"]}, schema=SCHEMA))
        consumer = Consumer(table, start)
        serial = 0
        for op in ops:
            serial += 1
            t = ps.Table.open(table.path)
            if op[0] == "write":
                t.write_arrow(pa.table({"id": op[1], "v": [f"w{serial}"] * len(op[1])}, schema=SCHEMA))
            elif op[0] == "delete":
                t.write_arrow(pa.table({"id": op[1], "v": [None] * len(op[1]), "op": ["-D"] * len(op[1])}),
                              row_kind_column="op")
            elif op[0] == "compact":
                t.compact(full=op[1])
            elif op[0] == "expire":
                t.expire_snapshots(retain_max=op[1], retain_min=1)
            elif consumer.read(ReadLimits(max_files=op[1], max_snapshots=op[2])):
                # the stream has read everything before its position: the table as it was then
                reached = consumer.position.snapshot - (0 if consumer.position.units else 1)
                if consumer.position.units == 0:
                    as_of = t.to_arrow(snapshot_id=reached)
                    assert consumer.rows == dict(zip(as_of["id"].to_pylist(), as_of["v"].to_pylist())), reached
        while consumer.read(None):
            pass
        now = ps.Table.open(table.path).to_arrow()
        assert consumer.rows == dict(zip(now["id"].to_pylist(), now["v"].to_pylist()))
