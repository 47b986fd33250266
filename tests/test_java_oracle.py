"""Self-tests of the Paimon Java oracle (tests/java_oracle.py + tests/java/).

JVM start-up is the cost, so each test batches its Java operations into one JVM where it can.
"""

from __future__ import annotations

import datetime as dt
import math
from decimal import Decimal

import pyarrow as pa
import pytest

try:
    from tests.java_oracle import JavaOracleError, epoch_nanos, get_oracle, parse_type
except ImportError:  # tests/ is not a package: pytest puts tests/ itself on sys.path
    from java_oracle import JavaOracleError, epoch_nanos, get_oracle, parse_type

UTC = dt.timezone.utc

ALL_TYPES = [
    {"name": "id", "type": "INT NOT NULL"},
    {"name": "f_bool", "type": "BOOLEAN"},
    {"name": "f_tinyint", "type": "TINYINT"},
    {"name": "f_smallint", "type": "SMALLINT"},
    {"name": "f_int", "type": "INT"},
    {"name": "f_bigint", "type": "BIGINT"},
    {"name": "f_float", "type": "FLOAT"},
    {"name": "f_double", "type": "DOUBLE"},
    {"name": "f_dec10", "type": "DECIMAL(10, 2)"},
    {"name": "f_dec38", "type": "DECIMAL(38, 6)"},
    {"name": "f_char", "type": "CHAR(5)"},
    {"name": "f_varchar", "type": "VARCHAR(20)"},
    {"name": "f_string", "type": "STRING"},
    {"name": "f_binary", "type": "BINARY(4)"},
    {"name": "f_bytes", "type": "BYTES"},
    {"name": "f_date", "type": "DATE"},
    {"name": "f_time", "type": "TIME(0)"},
    {"name": "f_ts3", "type": "TIMESTAMP(3)"},
    {"name": "f_ts6", "type": "TIMESTAMP(6)"},
    {"name": "f_ltz6", "type": "TIMESTAMP(6) WITH LOCAL TIME ZONE"},
    {"name": "f_ts9", "type": "TIMESTAMP(9)"},  # as int epoch nanos
    {"name": "f_array", "type": {"type": "ARRAY", "element": "INT"}},
    {"name": "f_map", "type": {"type": "MAP", "key": "STRING NOT NULL", "value": "INT"}},
    {"name": "f_row", "type": {"type": "ROW", "fields": [
        {"name": "x", "type": "INT"}, {"name": "y", "type": "STRING"}]}},
]

ALL_TYPES_ROWS = [
    {
        "id": 1, "f_bool": True, "f_tinyint": -128, "f_smallint": 32767, "f_int": -2147483648,
        "f_bigint": 9223372036854775807, "f_float": 1.5, "f_double": -2.25e300,
        "f_dec10": Decimal("12345678.90"), "f_dec38": Decimal("-12345678901234567890123456789012.345678"),
        "f_char": "abcde", "f_varchar": "héllo wörld", "f_string": "日本語 ✓", "f_binary": b"\x00\x01\xfe\xff",
        "f_bytes": b"", "f_date": dt.date(2024, 2, 29), "f_time": dt.time(23, 59, 59),
        "f_ts3": dt.datetime(2024, 1, 2, 3, 4, 5, 678000), "f_ts6": dt.datetime(2024, 1, 2, 3, 4, 5, 678901),
        "f_ltz6": dt.datetime(2024, 1, 2, 3, 4, 5, 678901, tzinfo=UTC), "f_ts9": 1_704_164_645_678_901_234,
        "f_array": [1, None, 3], "f_map": [("a", 1), ("b", None)], "f_row": {"x": 7, "y": "seven"},
    },
    {
        "id": 2, "f_bool": False, "f_tinyint": 127, "f_smallint": -32768, "f_int": 0,
        "f_bigint": -9223372036854775808, "f_float": float("inf"), "f_double": float("nan"),
        "f_dec10": Decimal("-0.01"), "f_dec38": Decimal("0.000001"),
        "f_char": "xy   ", "f_varchar": "", "f_string": "", "f_binary": b"abcd",
        "f_bytes": bytes(range(256)), "f_date": dt.date(1969, 12, 31), "f_time": dt.time(0, 0, 0),
        "f_ts3": dt.datetime(1969, 12, 31, 23, 59, 59, 999000), "f_ts6": dt.datetime(1900, 1, 1, 0, 0, 0, 1),
        "f_ltz6": dt.datetime(1969, 12, 31, 23, 59, 59, 999999, tzinfo=UTC), "f_ts9": -1,
        "f_array": [], "f_map": [], "f_row": {"x": None, "y": None},
    },
    {"id": 3, **{f["name"]: None for f in ALL_TYPES[1:]}},
]


def _norm(v):
    """Comparable form: NaN equal to NaN; pandas.Timestamp (pypaimon's TIMESTAMP(9)) as epoch nanos."""
    if isinstance(v, float) and math.isnan(v):
        return "NaN"
    if type(v).__name__ == "Timestamp":
        return epoch_nanos(v)
    if isinstance(v, dict):
        return {k: _norm(x) for k, x in v.items()}
    if isinstance(v, (list, tuple)):
        return type(v)(_norm(x) for x in v)
    return v


def _sorted(rows, *keys):
    return sorted((_norm(r) for r in rows), key=lambda r: tuple(r[k] for k in keys))


@pytest.fixture(scope="module")
def oracle():
    return get_oracle()  # raises (fails the tests) if Java or Maven is missing


@pytest.fixture(scope="module")
def java_tables(oracle, tmp_path_factory):
    """Tables created and written by Java, in one JVM; yields (warehouse, results)."""
    wh = tmp_path_factory.mktemp("java_wh")
    types_path = wh / "db.db" / "all_types"
    pk_path = wh / "db.db" / "pk"
    dv_path = wh / "db.db" / "dv"
    pk_fields = [
        {"name": "id", "type": "BIGINT NOT NULL"},
        {"name": "dt", "type": "STRING NOT NULL"},
        {"name": "name", "type": "STRING"},
        {"name": "price", "type": "DECIMAL(20, 2)"},
    ]
    with oracle.batch() as b:
        b.create_table(types_path, ALL_TYPES)
        b.write(types_path, ALL_TYPES_ROWS)
        r = {"types": b.read(types_path)}

        b.create_table(pk_path, pk_fields, primary_keys=["dt", "id"], partition_keys=["dt"],
                       options={"bucket": 3})
        b.write(pk_path, [
            {"id": i, "dt": d, "name": f"n{i}", "price": Decimal(i) / 4} for i in range(10) for d in ("a", "b")
        ])
        b.write(pk_path, [
            {"id": 1, "dt": "a", "name": "one", "price": Decimal("1.11")},
            {"id": 2, "dt": "b", "name": "two", "price": None, "_ROW_KIND": "+U"},
            {"id": 3, "dt": "a", "_ROW_KIND": "-D"},
            {"id": 100, "dt": "c", "name": "new", "price": Decimal("-5.50")},
        ])
        r["pk"] = b.read(pk_path)
        r["pk_v1"] = b.read(pk_path, snapshot_id=1)
        r["pk_cols"] = b.read(pk_path, columns=["name", "id"], with_row_kind=True)
        b.create_tag(pk_path, "t1", snapshot_id=1)
        r["pk_tag"] = b.read(pk_path, tag="t1")
        b.write(pk_path, [{"id": 7, "dt": "a", "name": "seven"}], commit_user="alice", commit_identifier=42)
        r["compacted"] = b.compact(pk_path)
        r["pk_after_compact"] = b.read(pk_path)
        r["pk_snapshots"] = b.snapshots(pk_path)

        b.create_table(dv_path, pk_fields[:3], primary_keys=["id"],
                       options={"bucket": 2, "deletion-vectors.enabled": True})
        b.write(dv_path, [{"id": i, "dt": "x", "name": f"v{i}"} for i in range(6)])
        b.compact(dv_path)
        b.write(dv_path, [{"id": 1, "dt": "x", "name": "upd"}, {"id": 2, "dt": "x", "_ROW_KIND": "-D"}])
        r["dv"] = b.read(dv_path)
    yield wh, {k: p.result for k, p in r.items()}


def test_all_types_roundtrip_through_java(java_tables):
    _, r = java_tables
    assert _sorted(r["types"], "id") == _sorted(ALL_TYPES_ROWS, "id")


def test_pk_table_merges_upserts_and_deletes(java_tables):
    _, r = java_tables
    expected = {(i, d): (f"n{i}", Decimal(i) / 4) for i in range(10) for d in ("a", "b")}
    expected[(1, "a")] = ("one", Decimal("1.11"))
    expected[(2, "b")] = ("two", None)
    del expected[(3, "a")]
    expected[(100, "c")] = ("new", Decimal("-5.50"))
    got = {(row["id"], row["dt"]): (row["name"], row["price"]) for row in r["pk"]}
    assert len(r["pk"]) == len(got)
    assert got == expected

    assert len(r["pk_v1"]) == 20 and len(r["pk_tag"]) == 20
    assert {(x["id"], x["dt"]) for x in r["pk_v1"]} == {(i, d) for i in range(10) for d in ("a", "b")}
    # projection (in the order asked) with row kinds
    assert all(list(row) == ["name", "id", "_ROW_KIND"] for row in r["pk_cols"])
    assert all(row["_ROW_KIND"] in ("+I", "+U") for row in r["pk_cols"])
    assert sorted((x["id"], x["name"]) for x in r["pk_cols"]) == sorted((k[0], v[0]) for k, v in expected.items())

    # stream write path, then a full compaction: same content
    expected[(7, "a")] = ("seven", None)
    got = {(row["id"], row["dt"]): (row["name"], row["price"]) for row in r["pk_after_compact"]}
    assert got == expected
    assert r["compacted"] >= 3  # (partition, bucket) pairs compacted

    snaps = r["pk_snapshots"]
    assert [s["id"] for s in snaps] == list(range(1, len(snaps) + 1))
    assert snaps[0]["commitKind"] == "APPEND" and snaps[0]["deltaRecordCount"] == 20
    assert snaps[0]["commitIdentifier"] == 2**63 - 1  # batch commits use Long.MAX_VALUE
    stream = [s for s in snaps if s["commitUser"] == "alice"]
    assert [s["commitIdentifier"] for s in stream] == [42]
    assert snaps[-1]["commitKind"] == "COMPACT"
    assert {"schemaId", "totalRecordCount", "deltaRecordCount"} <= set(snaps[-1])


def test_deletion_vector_table(java_tables):
    _, r = java_tables
    got = {row["id"]: row["name"] for row in r["dv"]}
    assert got == {0: "v0", 1: "upd", 3: "v3", 4: "v4", 5: "v5"}


def test_pypaimon_reads_what_java_wrote(java_tables):
    from pypaimon_oracle import pypaimon_read

    wh, r = java_tables
    for name, java_rows, key in (("all_types", r["types"], "id"), ("pk", r["pk_after_compact"], "id")):
        py_rows = pypaimon_read(str(wh), f"db.{name}").to_pylist()
        if name == "pk":
            key = ("dt", "id")
            assert _sorted(py_rows, *key) == _sorted(java_rows, *key)
        else:
            assert _sorted(py_rows, key) == _sorted(java_rows, key)


def test_java_reads_what_pypaimon_wrote(oracle, tmp_path):
    from pypaimon_oracle import pypaimon_create, pypaimon_read, pypaimon_write

    wh = tmp_path / "wh"
    pa_schema = pa.schema([
        pa.field("k", pa.int64(), nullable=False),
        pa.field("s", pa.string()),
        pa.field("d", pa.float64()),
        pa.field("amount", pa.decimal128(12, 3)),
        pa.field("day", pa.date32()),
        pa.field("ts", pa.timestamp("us")),
        pa.field("tags", pa.list_(pa.string())),
    ])
    pypaimon_create(str(wh), "db.t", pa_schema, primary_keys=["k"], options={"bucket": "2"})

    def write(rows):
        pypaimon_write(str(wh), "db.t", pa.Table.from_pylist(rows, schema=pa_schema))

    write([{"k": i, "s": f"s{i}", "d": i / 3, "amount": Decimal(i) / 8, "day": dt.date(2020, 1, 1 + i),
            "ts": dt.datetime(2020, 1, 1, 0, 0, i, i), "tags": [str(i)] * (i % 3)} for i in range(20)])
    write([{"k": 5, "s": "five", "d": None, "amount": None, "day": None, "ts": None, "tags": None}])

    py_rows = pypaimon_read(str(wh), "db.t").to_pylist()
    table_path = wh / "db.db" / "t"
    with oracle.batch() as b:
        java_rows = b.read(table_path)
        snaps = b.snapshots(table_path)
        buckets = b.buckets(table_path, [{"k": i} for i in range(20)])
    assert len(py_rows) == 20
    assert _sorted(java_rows.result, "k") == _sorted(py_rows, "k")
    assert [s["id"] for s in snaps.result] == [1, 2]
    # every data file pypaimon wrote sits in the bucket Java assigns to its keys
    for k, bucket in enumerate(buckets.result):
        files = list((table_path / f"bucket-{bucket}").glob("data-*"))
        assert files, (k, bucket)


def test_bucket_assignment_known_values(oracle, tmp_path):
    keys = [0, 1, 2, 42, -7]
    with oracle.batch() as b:
        res = {}
        for n in (4, 7):
            path = tmp_path / "db.db" / f"b{n}"
            b.create_table(path, [{"name": "id", "type": "BIGINT NOT NULL"}, {"name": "v", "type": "STRING"}],
                           primary_keys=["id"], options={"bucket": n})
            res[n] = b.buckets(path, [{"id": k} for k in keys])
    assert res[4].result == [3, 2, 0, 1, 3]
    assert res[7].result == [1, 5, 4, 1, 0]


def test_java_errors_are_raised(oracle, tmp_path):
    with pytest.raises(JavaOracleError, match="'create'") as err:
        with oracle.batch() as b:
            ok = b.create_table(tmp_path / "db.db" / "x", [{"name": "a", "type": "INT"}])
            b.create_table(tmp_path / "db.db" / "y", [{"name": "a", "type": "NO_SUCH_TYPE"}])
            never = b.snapshots(tmp_path / "db.db" / "x")
    assert err.value.index == 1 and "NO_SUCH_TYPE" in err.value.java_error
    assert ok.result == {}
    with pytest.raises(RuntimeError, match="not run"):
        never.result


def test_parse_type_strings():
    t = parse_type("ROW<`a` INT NOT NULL, b MAP<STRING, ARRAY<DECIMAL(5, 2)>>> NOT NULL")
    assert t.root == "ROW" and not t.nullable
    assert [n for n, _ in t.fields] == ["a", "b"]
    assert t.fields[1][1].value.element.precision == 5 and t.fields[1][1].value.element.scale == 2
    assert parse_type("TIMESTAMP(9) WITH LOCAL TIME ZONE").root == "TIMESTAMP_LTZ"
    assert parse_type("TIMESTAMP").precision == 6
