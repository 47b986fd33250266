"""Differential test against Apache Paimon's Java library (hypothesis): random histories in
which we and Java write, we delete, and both compact one table in turn, for each kind of
primary-key table we write (plain, deletion vectors, partitioned, dynamic bucket,
partial-update) and append tables. After every step our read equals a model of the table;
at each hand-over to Java, and at the end, Java's read equals it too.

The number of examples is small in CI (each Java turn is a JVM run); set
INTEROP_MODEL_EXAMPLES to hunt longer."""
from __future__ import annotations

import os
import tempfile

import pyarrow as pa
import pytest
from hypothesis import HealthCheck, given, settings, strategies as st

import paimon_streaming as ps

try:
    from java_oracle import get_oracle
except ImportError:  # pragma: no cover
    from tests.java_oracle import get_oracle

SCHEMA = pa.schema([("id", pa.int64(), False), ("v", pa.int64()), ("w", pa.string()), ("p", pa.string(), False)])
DV = {"deletion-vectors.enabled": "true"}
KINDS = {  # name: (primary keys, partition keys, options)
    "pk": (["id"], [], {"bucket": "2"}),
    "dv": (["id"], [], {"bucket": "2", **DV}),
    "dv-partitioned": (["id", "p"], ["p"], {"bucket": "2", **DV}),
    "dynamic-bucket": (["id"], [], {"bucket": "-1", "dynamic-bucket.target-row-num": "4"}),
    "partial-update": (["id"], [], {"bucket": "2", "merge-engine": "partial-update", **DV}),
    "aggregation": (["id"], [], {"bucket": "2", "merge-engine": "aggregation", "fields.v.aggregate-function": "sum",
                                 "fields.w.aggregate-function": "max", **DV}),
    "first-row": (["id"], [], {"bucket": "2", "merge-engine": "first-row"}),
    "sequence-field": (["id"], [], {"bucket": "2", "sequence.field": "v", **DV}),
    "append": (None, [], {}),
    "dv-indexed": (["id"], [], {"bucket": "2", **DV, "file-index.bloom-filter.columns": "v,w",
                                "file-index.bloom-filter.v.items": "8", "file-index.bloom-filter.w.items": "8"}),
    "dv-bitmap": (["id"], [], {"bucket": "2", **DV, "file-index.bitmap.columns": "v,w", "file-index.bitmap.v.version": "1",
                               "file-index.bitmap.w.index-block-size": "32 b", "file-index.bsi.columns": "v",
                               "file-index.range-bitmap.columns": "v,w",
                               "file-index.range-bitmap.w.chunk-size": "8 b"}),
}
INDEXED = {"dv-indexed", "dv-bitmap"}  # checked at the end with filtered reads too (ours exact, Java's a superset)
DELETES = ("pk", "dv", "dv-partitioned", "dynamic-bucket", "dv-indexed", "dv-bitmap")
# Java's batch writer cannot assign dynamic buckets (its engines' bucket-assigner operators
# do): on such a table Java reads and compacts what we write.
JAVA_WRITES = set(KINDS) - {"dynamic-bucket"}

rows = st.lists(st.tuples(st.integers(0, 24), st.one_of(st.none(), st.integers(-1000, 1000)),
                          st.one_of(st.none(), st.sampled_from(["a", "b", "ü", ""]))),
                min_size=1, max_size=8, unique_by=lambda r: r[0])
ops = st.lists(st.one_of(
    st.tuples(st.just("ours"), rows),
    st.tuples(st.just("java"), rows),
    st.tuples(st.just("delete"), st.lists(st.integers(0, 24), min_size=1, max_size=4, unique=True)),
    st.tuples(st.just("compact"), st.booleans()),
    st.tuples(st.just("java-compact")),
), min_size=1, max_size=10)


def as_rows(batch: list[tuple]) -> list[dict]:
    return [{"id": i, "v": v, "w": w, "p": "odd" if i % 2 else "even"} for i, v, w in batch]


class TableModel:
    """What the table holds: a row per key (merge engine applied), or every appended row."""

    def __init__(self, kind: str):
        self.kind = kind
        self.by_key: dict[int, dict] = {}
        self.appended: list[dict] = []

    def write(self, batch: list[dict]) -> None:
        if self.kind == "append":
            self.appended += batch
            return
        for r in batch:
            old = self.by_key.get(r["id"])
            if old is not None:
                if self.kind == "partial-update":  # nulls keep the old value
                    r = {c: old[c] if r[c] is None else r[c] for c in r}
                elif self.kind == "aggregation":  # sum and max skip nulls; the rest: last non-null
                    r = {"id": r["id"], "v": _skip_nulls(sum, old["v"], r["v"]),
                         "w": _skip_nulls(max, old["w"], r["w"]), "p": r["p"] if r["p"] is not None else old["p"]}
                elif self.kind == "first-row":
                    r = old
                elif self.kind == "sequence-field" and _sequence(r["v"]) < _sequence(old["v"]):
                    r = old  # a null sequence is the lowest; equal ones: the later write wins
            self.by_key[r["id"]] = r

    def delete(self, ids: list[int]) -> None:
        for i in ids:
            self.by_key.pop(i, None)

    def expected(self) -> list[tuple]:
        return _sorted(self.appended if self.kind == "append" else list(self.by_key.values()))


def _skip_nulls(combine, old, new):
    values = [x for x in (old, new) if x is not None]
    return combine(values) if values else None


def _sequence(value) -> tuple:
    return (value is not None, value if value is not None else 0)


def _sorted(rows: list[dict]) -> list[tuple]:
    return sorted(((r["id"], r["v"], r["w"], r["p"]) for r in rows), key=_nulls_first)


def _nulls_first(row: tuple) -> tuple:
    return tuple((value is not None, value) for value in row)


@settings(max_examples=int(os.environ.get("INTEROP_MODEL_EXAMPLES", 6)), deadline=None,
          suppress_health_check=[HealthCheck.too_slow])
@given(kind=st.sampled_from(sorted(KINDS)), steps=ops)
def test_random_histories_written_by_us_and_java(kind, steps):
    _history(kind, steps)


@settings(max_examples=int(os.environ.get("INTEROP_MODEL_EXAMPLES", 3)), deadline=None,
          suppress_health_check=[HealthCheck.too_slow])
@given(steps=ops)
@pytest.mark.parametrize("kind", ["dv-indexed", "dv-bitmap"])
def test_random_histories_of_a_table_with_file_indexes(kind, steps):
    """Files indexed by both writers (bloom filters; bitmaps and bit-sliced indexes), compacted
    by both: filtered reads skip none they need."""
    _history(kind, steps)


def _history(kind: str, steps: list[tuple]) -> None:
    java = get_oracle()
    primary_keys, partition_keys, options = KINDS[kind]
    with tempfile.TemporaryDirectory() as wh:
        table = ps.Catalog(wh).create_table("db.t", SCHEMA, primary_keys=primary_keys,
                                            partition_keys=partition_keys or None, options=options)
        model = TableModel(kind)
        java_turn: list[tuple] = []

        def hand_over_to_java() -> None:
            """Run Java's queued steps in one JVM, checking first that Java reads our state."""
            if not java_turn:
                return
            with java.batch() as b:
                before = b.read(table.path)
                for op in java_turn:
                    if op[0] == "java":
                        b.write(table.path, as_rows(op[1]))
                    else:
                        b.compact(table.path)
            assert _sorted(before.result) == expected_before, "Java's read of our table"
            java_turn.clear()

        expected_before = model.expected()
        for op in steps:
            if op[0] == "java" and kind not in JAVA_WRITES:
                continue
            if op[0] in ("java", "java-compact"):
                if not java_turn:
                    expected_before = model.expected()
                java_turn.append(op)
                if op[0] == "java":
                    model.write(as_rows(op[1]))
                continue
            hand_over_to_java()
            current = ps.Table.open(table.path)
            if op[0] == "ours":
                current.write_arrow(pa.Table.from_pylist(as_rows(op[1]), SCHEMA))
                model.write(as_rows(op[1]))
            elif op[0] == "delete" and kind in DELETES:
                deleted = [r for r in as_rows([(i, None, None) for i in op[1]])]
                current.write_arrow(pa.Table.from_pylist(deleted, SCHEMA).append_column(
                    "_kind", pa.array(["-D"] * len(deleted))), row_kind_column="_kind")
                model.delete(op[1])
            elif op[0] == "compact" and primary_keys:
                current.compact(full=op[1])
            assert _sorted(ps.Table.open(table.path).to_arrow().to_pylist()) == model.expected(), op
        hand_over_to_java()
        java_read = java.read(table.path)
        assert _sorted(ps.Table.open(table.path).to_arrow().to_pylist()) == model.expected()
        assert _sorted(java_read) == model.expected(), "Java's read at the end"
        if kind in INDEXED:
            _check_filtered_reads(java, table.path, model.expected())


def _check_filtered_reads(java, path: str, expected: list[tuple]) -> None:
    """For every value of the indexed columns (and one absent): our filtered read is exactly the
    model's matching rows, Java's (which skips files, not rows) holds all of them."""
    asks = [("v", value) for value in {row[1] for row in expected if row[1] is not None} | {5000}] + \
        [("w", value) for value in {row[2] for row in expected if row[2] is not None} | {"absent"}]
    table = ps.Table.open(path)
    with java.batch() as b:
        java_reads = [b.read(path, equal=ask) for ask in asks]
    for (column, value), java_read in zip(asks, java_reads):
        position = 1 if column == "v" else 2
        want = [row for row in expected if row[position] == value]
        assert _sorted(table.to_arrow(filter=[(column, "=", value)]).to_pylist()) == want, (column, value)
        assert set(want) <= set(_sorted(java_read.result)), ("Java skipped a file holding", column, value)


# ---- schema drift: columns added, renamed, widened and dropped by either side ---------------
EVOLVING = {"pk": (["id"], {"bucket": "2"}), "dv": (["id"], {"bucket": "2", **DV}), "append": (None, {})}
ARROW = {"INT": pa.int32(), "BIGINT": pa.int64(), "STRING": pa.string()}

changes = st.one_of(
    st.tuples(st.just("add"), st.sampled_from(["INT", "STRING"])),
    st.tuples(st.just("rename"), st.integers(0, 9)),
    st.tuples(st.just("widen"), st.integers(0, 9)),
    st.tuples(st.just("drop"), st.integers(0, 9)),
)
evolving_ops = st.lists(st.one_of(
    st.tuples(st.just("ours"), st.lists(st.integers(0, 24), min_size=1, max_size=6, unique=True)),
    st.tuples(st.just("java"), st.lists(st.integers(0, 24), min_size=1, max_size=6, unique=True)),
    st.tuples(st.sampled_from(["alter", "java-alter"]), changes),
    st.tuples(st.just("compact")),
), min_size=1, max_size=10)


class EvolvingModel:
    """The table's columns (name -> Paimon type, `id` first) and rows by current column names."""

    def __init__(self, primary_key: bool):
        self.columns = {"id": "BIGINT", "a": "INT", "b": "STRING"}
        self.pk = primary_key
        self.rows: list[dict] = []
        self.serial = 0
        self.added = 0  # columns added so far: a new column's name is never one dropped before

    def batch(self, ids: list[int]) -> list[dict]:
        self.serial += 1
        value = {"INT": self.serial, "BIGINT": 10**10 + self.serial, "STRING": f"s{self.serial}"}
        return [{c: i if c == "id" else value[t] for c, t in self.columns.items()} for i in ids]

    def write(self, batch: list[dict]) -> None:
        ids = {r["id"] for r in batch}
        self.rows = [r for r in self.rows if not self.pk or r["id"] not in ids] + batch

    def change(self, op: tuple) -> dict | None:
        """Apply a schema change to the model; the change as the Java oracle takes it (None: skip)."""
        kind, arg = op
        others = [c for c in self.columns if c != "id"]
        if kind == "add":
            self.added += 1
            name = f"c{self.serial}_{self.added}"
            self.columns[name] = arg
            self.rows = [r | {name: None} for r in self.rows]
            return {"kind": "add", "path": [name], "type": arg}
        if not others:
            return None
        name = others[arg % len(others)]
        if kind == "rename":
            new = f"{name}_r"
            self.columns = {new if c == name else c: t for c, t in self.columns.items()}
            self.rows = [{new if c == name else c: v for c, v in r.items()} for r in self.rows]
            return {"kind": "rename", "path": [name], "newName": new}
        if kind == "widen" and self.columns[name] == "INT":
            self.columns[name] = "BIGINT"
            return {"kind": "type", "path": [name], "type": "BIGINT"}
        if kind == "drop" and len(others) > 1:
            del self.columns[name]
            self.rows = [{c: v for c, v in r.items() if c != name} for r in self.rows]
            return {"kind": "drop", "path": [name]}
        return None

    def arrow_schema(self) -> pa.Schema:
        return pa.schema([pa.field(c, ARROW[t], c != "id") for c, t in self.columns.items()])

    def expected(self) -> list[tuple]:
        return sorted((tuple(r[c] for c in self.columns) for r in self.rows), key=_nulls_first)


def _apply_ours(table: ps.Table, change: dict) -> None:
    with table.update_schema() as update:
        if change["kind"] == "add":
            update.add_column(change["path"][0], ARROW[change["type"]])
        elif change["kind"] == "rename":
            update.rename_column(change["path"][0], change["newName"])
        elif change["kind"] == "type":
            update.update_column(change["path"][0], change["type"])
        else:
            update.drop_column(change["path"][0])


@settings(max_examples=int(os.environ.get("INTEROP_MODEL_EXAMPLES", 6)), deadline=None,
          suppress_health_check=[HealthCheck.too_slow])
@given(kind=st.sampled_from(sorted(EVOLVING)), steps=evolving_ops)
def test_random_schema_drift_by_us_and_java(kind, steps):
    java = get_oracle()
    primary_keys, options = EVOLVING[kind]
    with tempfile.TemporaryDirectory() as wh:
        model = EvolvingModel(primary_keys is not None)
        table = ps.Catalog(wh).create_table("db.t", model.arrow_schema(), primary_keys=primary_keys,
                                            options=options)

        def check(step) -> None:
            got = ps.Table.open(table.path).to_arrow()
            assert got.column_names == list(model.columns), step
            assert sorted((tuple(r.values()) for r in got.to_pylist()), key=_nulls_first) == model.expected(), step

        for op in steps:
            if op[0] in ("ours", "java"):
                batch = model.batch(op[1])
                if op[0] == "ours":
                    ps.Table.open(table.path).write_arrow(pa.Table.from_pylist(batch, model.arrow_schema()))
                else:
                    java.write(table.path, batch)
                model.write(batch)
            elif op[0] in ("alter", "java-alter"):
                change = model.change(op[1])
                if change is None:
                    continue
                if op[0] == "alter":
                    _apply_ours(ps.Table.open(table.path), change)
                else:
                    java.alter(table.path, [change])
            elif primary_keys:
                java.compact(table.path) if model.serial % 2 else ps.Table.open(table.path).compact(full=True)
            check(op)
        java_rows = java.read(table.path)
        assert sorted((tuple(r[c] for c in model.columns) for r in java_rows), key=_nulls_first) == model.expected()
