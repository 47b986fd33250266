"""Random histories of writes, compactions, overwrites, tags, consumers, rollbacks and
expirations against a model (hypothesis). After every step each retained snapshot and each
tag reads exactly what it held when it was made, and no file is left that nothing
references; after orphan cleanup with a zero threshold that still holds."""
from __future__ import annotations

import tempfile
import time

import pyarrow as pa
from hypothesis import HealthCheck, given, settings, strategies as st

import paimon_streaming as ps
from paimon_streaming.consumers import ConsumerManager
from conftest import rows_by
from test_expire import files_on_disk, referenced_files

SCHEMA = pa.schema([("id", pa.int64(), False), ("v", pa.int64()), ("p", pa.string(), False)])
FUTURE = 2 ** 62

keys = st.lists(st.integers(0, 7), min_size=1, max_size=4, unique=True)
ops = st.one_of(
    st.tuples(st.just("write"), keys),
    st.tuples(st.just("overwrite"), keys),
    st.tuples(st.just("compact")),
    st.tuples(st.just("tag"), st.integers(0, 50)),
    st.tuples(st.just("delete_tag"), st.integers(0, 50)),
    st.tuples(st.just("rollback"), st.integers(0, 50), st.booleans()),
    st.tuples(st.just("expire"), st.integers(1, 4), st.booleans()),
    st.tuples(st.just("consumer"), st.integers(0, 50), st.booleans()),
)


class Model:
    def __init__(self, table: ps.Table, primary_key: bool):
        self.t = table
        self.pk = primary_key
        self.rows: list[dict] = []                 # the latest content
        self.contents: dict[int, list[dict]] = {}  # what each snapshot id reads
        self.states: dict[int, list[dict]] = {}    # the model's rows at each snapshot id
        self.tags: dict[str, int] = {}
        self.serial = 0

    def committed(self, before: int | None) -> None:
        latest = self.t.snapshot_manager.latest_id()
        for sid in range((before or 0) + 1, (latest or 0) + 1):
            self.contents[sid] = rows_by(self.t.to_arrow(snapshot_id=sid), "id", "v")
            self.states[sid] = list(self.rows)

    def write(self, ids: list[int], overwrite: bool) -> None:
        self.serial += 1
        new = [{"id": i, "v": self.serial, "p": "odd" if i % 2 else "even"} for i in ids]
        before = self.t.snapshot_manager.latest_id()
        self.t.write_arrow(pa.Table.from_pylist(new, SCHEMA), overwrite=overwrite)
        if overwrite:
            self.rows = new
        elif self.pk:
            self.rows = [r for r in self.rows if r["id"] not in ids] + new
        else:
            self.rows = self.rows + new
        self.committed(before)

    def apply(self, op: tuple) -> None:
        kind = op[0]
        snapshots = [s.id for s in self.t.snapshots()]
        if kind in ("write", "overwrite"):
            self.write(op[1], kind == "overwrite")
        elif kind == "compact" and self.pk and snapshots:
            before = snapshots[-1]
            self.t.compact(full=True)
            self.committed(before)
        elif kind == "tag" and snapshots:
            sid = snapshots[op[1] % len(snapshots)]
            name = f"t{len(self.tags)}-{op[1]}"
            if name not in self.tags:
                self.t.create_tag(name, snapshot_id=sid)
                self.tags[name] = sid
        elif kind == "delete_tag" and self.tags:
            name = sorted(self.tags)[op[1] % len(self.tags)]
            self.t.delete_tag(name)
            del self.tags[name]
        elif kind == "rollback" and (snapshots or self.tags):
            if op[2] and self.tags:
                name = sorted(self.tags)[op[1] % len(self.tags)]
                target, sid = name, self.tags[name]
            elif snapshots:
                target = sid = snapshots[op[1] % len(snapshots)]
            else:
                return
            assert self.t.rollback_to(target).id == sid
            self.rows = list(self.states[sid])
            self.tags = {n: i for n, i in self.tags.items() if i <= sid}
            self.contents = {i: c for i, c in self.contents.items() if i <= sid}
        elif kind == "expire":
            older_than = FUTURE if op[2] else None
            self.t.expire_snapshots(retain_max=op[1], retain_min=1, older_than=older_than)
        elif kind == "consumer" and snapshots:
            consumers = ConsumerManager(self.t.file_io, self.t.path)
            if op[2]:
                consumers.record("reader", snapshots[op[1] % len(snapshots)])
            else:
                consumers.delete("reader")

    def check(self) -> None:
        t = self.t
        latest = t.latest_snapshot()
        # deletion-vector readers do not see level 0: after a rollback to an APPEND snapshot its
        # new rows stay invisible until their bucket is compacted again, so only the recorded
        # reads below are the truth there
        if latest is not None and not t.options.deletion_vectors:
            assert rows_by(t.to_arrow(), "id", "v") == rows_by(pa.Table.from_pylist(self.rows, SCHEMA), "id", "v")
        for s in t.snapshots():
            assert rows_by(t.to_arrow(snapshot_id=s.id), "id", "v") == self.contents[s.id], s.id
        assert sorted(t.tags()) == sorted(self.tags)
        for name, sid in self.tags.items():
            assert rows_by(t.to_arrow(tag=name), "id", "v") == self.contents[sid], name
        consumer = ConsumerManager(t.file_io, t.path).next_snapshot("reader")
        if consumer is not None and latest is not None:
            assert t.snapshot_manager.earliest_id() <= min(consumer, latest.id)
        assert files_on_disk(t) == referenced_files(t)


@settings(max_examples=50, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(kind=st.sampled_from(["pk", "dv", "append", "partitioned"]), steps=st.lists(ops, min_size=1, max_size=12))
def test_random_lifecycle_histories(kind, steps):
    with tempfile.TemporaryDirectory() as wh:
        options = {"bucket": "2"} if kind != "append" else {}
        if kind == "dv":
            options["deletion-vectors.enabled"] = "true"
        primary_keys = {"append": None, "partitioned": ["id", "p"]}.get(kind, ["id"])
        table = ps.Catalog(wh).create_table("db.t", SCHEMA, primary_keys=primary_keys, options=options,
                                            partition_keys=["p"] if kind == "partitioned" else None)
        model = Model(table, kind != "append")
        for op in steps:
            model.apply(op)
            model.check()
        table.write_messages(pa.Table.from_pylist([{"id": 99, "v": 0, "p": "odd"}], SCHEMA))  # uncommitted
        assert files_on_disk(table) != referenced_files(table)
        table.remove_orphan_files(older_than=int(time.time() * 1000) + 1000)
        assert files_on_disk(table) == referenced_files(table)
        model.check()
