"""Deletes naming only their key in tables with NOT NULL value columns (retraction_values.py).

A Kafka tombstone or a Debezium delete with a key-only before image becomes a -D row with nulls
in the value columns; with a NOT NULL column there the write failed, so the stream stopped for
good at its first delete. Where the merge engine never reads a retraction's values, the nulls
are now filled with zero values; Paimon 1.4.2 and pypaimon read the tables as we do.
"""
from __future__ import annotations

import datetime as dt
import decimal

import pyarrow as pa
import pytest

import paimon_streaming as ps
from conftest import pypaimon_read
from paimon_streaming import variant
from paimon_streaming.errors import NullKeyError
from paimon_streaming.types import VARIANT_ARROW

SCHEMA = pa.schema([pa.field("id", pa.int64(), False), pa.field("qty", pa.int32(), False),
                    pa.field("price", pa.decimal128(10, 2), False), pa.field("at", pa.timestamp("us"), False),
                    pa.field("tags", pa.list_(pa.string()), False),
                    pa.field("addr", pa.struct([pa.field("zip", pa.string(), False), ("city", pa.string())]), False),
                    pa.field("doc", VARIANT_ARROW, False), ("note", pa.string())])


def rows(ids: list[int], kind: str, full: bool = True) -> pa.Table:
    n = len(ids)

    def values(v):
        return [v] * n if full else [None] * n
    return pa.table({
        "id": ids, "qty": pa.array(values(1), pa.int32()),
        "price": pa.array(values(decimal.Decimal("2.50")), pa.decimal128(10, 2)),
        "at": pa.array(values(dt.datetime(2024, 1, 1)), pa.timestamp("us")),
        "tags": pa.array(values(["a"]), pa.list_(pa.string())),
        "addr": pa.array(values({"zip": "1", "city": "x"}), SCHEMA.field("addr").type),
        "doc": variant.from_json(['{"a":1}' if full else None] * n), "note": [None] * n, "_kind": [kind] * n})


@pytest.mark.parametrize("options", [
    {"bucket": "2", "deletion-vectors.enabled": "true"},
    {"bucket": "2"},
    {"bucket": "-1"},
    {"bucket": "2", "changelog-producer": "lookup", "deletion-vectors.enabled": "true"},
    {"bucket": "2", "merge-engine": "partial-update", "partial-update.remove-record-on-delete": "true"},
    {"bucket": "2", "ignore-delete": "true"},
], ids=["dv", "mor", "dynamic-bucket", "lookup-changelog", "partial-update", "ignore-delete"])
def test_deletes_naming_only_their_key_delete_it(tmp_path, options):
    warehouse = str(tmp_path)
    t = ps.Catalog(warehouse).create_table("db.t", SCHEMA, primary_keys=["id"], options=options)
    t.write_arrow(rows(list(range(10)), "+I"), row_kind_column="_kind")
    batch = pa.concat_tables([rows([1, 2, 3], "-D", full=False), rows([4], "-U", full=False), rows([4], "+U"),
                              rows([42], "-D", full=False)])  # 42: a delete of a key never written
    t.write_arrow(batch, row_kind_column="_kind")
    deleted = set() if options.get("ignore-delete") else {1, 2, 3}
    expected = sorted(set(range(10)) - deleted)
    assert sorted(t.to_arrow().column("id").to_pylist()) == expected
    assert t.to_arrow().filter(pa.compute.equal(t.to_arrow().column("id"), 4)).column("qty").to_pylist() == [1]
    if "merge-engine" not in options and "ignore-delete" not in options:  # pypaimon 2.1 reads neither
        assert sorted(pypaimon_read(warehouse, "db.t").column("id").to_pylist()) == expected
    from java_oracle import get_oracle
    with get_oracle().batch() as jb:
        before = jb.read(t.path)
        jb.compact(t.path)
        after = jb.read(t.path)
    assert sorted(r["id"] for r in before.result) == sorted(r["id"] for r in after.result) == expected
    if options.get("changelog-producer") == "lookup":  # the -D rows carry the deleted rows' values
        changes = t.changes_between(1, t.latest_snapshot().id, mode="changelog", row_kind_column="kind")
        deletes = changes.filter(pa.compute.equal(changes.column("kind"), "-D"))
        assert sorted(deletes.column("id").to_pylist()) == [1, 2, 3] and set(deletes.column("qty").to_pylist()) == {1}


@pytest.mark.parametrize("options,column,reason", [
    ({"bucket": "1", "merge-engine": "aggregation"}, "qty", "merge engine 'aggregation' reads a retraction's values"),
    ({"bucket": "1", "merge-engine": "aggregation", "aggregation.remove-record-on-delete": "true"}, "qty",
     "merge engine 'aggregation'"),
    ({"bucket": "1", "changelog-producer": "input"}, "qty", "changelog-producer 'input' would store made-up values"),
    ({"bucket": "1", "sequence.field": "qty"}, "qty", "it is a sequence field column"),
    ({"bucket": "1", "merge-engine": "partial-update", "fields.qty.sequence-group": "note"}, "qty",
     "merge engine 'partial-update'"),
])
def test_deletes_whose_values_are_read_are_refused_naming_the_column(tmp_path, options, column, reason):
    t = ps.Catalog(str(tmp_path)).create_table("db.t", SCHEMA, primary_keys=["id"], options=options)
    t.write_arrow(rows([1, 2], "+I"), row_kind_column="_kind")
    with pytest.raises(NullKeyError, match=rf"NOT NULL column '{column}' of table db.t is null in 1 -U/-D row\(s\).*"
                                           rf"{reason}"):
        t.write_arrow(rows([1], "-D", full=False), row_kind_column="_kind")
    assert sorted(t.to_arrow().column("id").to_pylist()) == [1, 2]  # nothing was committed


def test_an_insert_with_a_null_is_still_refused(tmp_path):
    t = ps.Catalog(str(tmp_path)).create_table("db.t", SCHEMA, primary_keys=["id"], options={"bucket": "1"})
    batch = pa.concat_tables([rows([1], "-D", full=False), rows([2], "+I", full=False)])
    with pytest.raises(NullKeyError, match=r"NOT NULL column 'qty' of table db.t contains 2 null value\(s\)"):
        t.write_arrow(batch, row_kind_column="_kind")
    null_key = rows([1], "-D", full=False).set_column(0, "id", pa.array([None], pa.int64()))
    with pytest.raises(NullKeyError, match="primary key column 'id' .* it is a primary key column"):
        t.write_arrow(null_key, row_kind_column="_kind")


def test_a_partitioned_table_refuses_a_delete_without_its_partition(tmp_path):
    schema = SCHEMA.append(pa.field("dt", pa.string(), False))
    t = ps.Catalog(str(tmp_path)).create_table("db.t", schema, primary_keys=["id"], partition_keys=["dt"],
                                               options={"bucket": "-1"})
    t.write_arrow(rows([1], "+I").append_column("dt", pa.array(["a"])), row_kind_column="_kind")
    with pytest.raises(NullKeyError, match="NOT NULL column 'dt' .* it is a partition column, which a delete must name"):
        t.write_arrow(rows([1], "-D", full=False).append_column("dt", pa.array([None], pa.string())),
                      row_kind_column="_kind")
    t.write_arrow(rows([1], "-D", full=False).append_column("dt", pa.array(["a"])), row_kind_column="_kind")
    assert t.to_arrow().num_rows == 0


def test_zero_values_of_binary_boolean_date_and_time_columns(tmp_path):
    """Key-only deletes into NOT NULL BINARY(n), VARBINARY, BOOLEAN, DATE and TIME columns: the
    filled values have the column's type and width (a fixed-width binary of n zero bytes), so
    the level-0 file holding them stays readable by Java, and the keys are deleted."""
    from java_oracle import get_oracle
    from paimon_streaming.retraction_values import zero_value
    types = {"fb": pa.binary(4), "vb": pa.binary(), "ok": pa.bool_(), "day": pa.date32(), "t3": pa.time32("ms"),
             "t6": pa.time64("us")}
    expected = {"fb": b"\0\0\0\0", "vb": b"", "ok": False, "day": dt.date(1970, 1, 1), "t3": dt.time(0),
                "t6": dt.time(0)}
    assert {n: zero_value(t).as_py() for n, t in types.items()} == expected
    assert all(zero_value(t).type == t for t in types.values())
    schema = pa.schema([pa.field("id", pa.int64(), False)] + [pa.field(n, t, False) for n, t in types.items()])
    t = ps.Catalog(str(tmp_path)).create_table("db.t", schema, primary_keys=["id"], options={"bucket": "1"})
    full = {"fb": b"abcd", "vb": b"xy", "ok": True, "day": dt.date(2024, 5, 1), "t3": dt.time(1, 2, 3, 4000),
            "t6": dt.time(1, 2, 3, 5000)}  # TIME(6) is stored in milliseconds (as Java's TIME)
    t.write_arrow(pa.Table.from_pylist([{"id": i, **full, "_kind": "+I"} for i in (1, 2)],
                                       schema.append(pa.field("_kind", pa.string()))), row_kind_column="_kind")
    deletes = pa.table({"id": [1, 7], **{n: pa.nulls(2, typ) for n, typ in types.items()}, "_kind": ["-D", "-D"]})
    t.write_arrow(deletes, row_kind_column="_kind")
    assert t.to_arrow().to_pylist() == [{"id": 2, **full}]
    java = get_oracle().read(t.path)
    assert [r["id"] for r in java] == [2]
