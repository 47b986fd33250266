"""Fixed-bucket hashing: Java's worked values (FORMAT.md §7.1) and pypaimon as an oracle."""
from __future__ import annotations

import zlib
from datetime import date, datetime, timedelta
from decimal import Decimal

import numpy as np
import pyarrow as pa
import pytest
from hypothesis import given, settings, strategies as st

from paimon_streaming.binary_row import encode_rows, hash_rows
from paimon_streaming.bucket import bucket_key_hashes, fixed_buckets, hash_to_bucket
from paimon_streaming.errors import InvalidOptionError, SchemaMismatchError
from paimon_streaming.types import DataType, parse_atomic, to_arrow

# pypaimon is a test-only oracle, in its own process (tests/pypaimon_oracle.py).
from pypaimon_oracle import call as pypaimon_call


def T(text: str) -> DataType:
    return parse_atomic(text)


TS = datetime(2024, 1, 1, 1, 2, 3, 456789)

# FORMAT.md §7.1, computed by the real Java 1.4.2 classes: (types, values, hash, bucket N=4, bucket N=7).
WORKED = [
    (["BIGINT"], [0], -300363099, 3, 1),
    (["BIGINT"], [1], 1465514398, 2, 5),
    (["BIGINT"], [2], 1340390384, 0, 4),
    (["BIGINT"], [42], 907821237, 1, 1),
    (["BIGINT"], [-7], 1145478327, 3, 0),
    (["INT"], [-7], 1485184587, 3, 5),
    (["INT"], [0], -300363099, 3, 1),
    (["INT"], [1], 1465514398, 2, 5),
    (["INT"], [2], 1340390384, 0, 4),
    (["INT"], [42], 907821237, 1, 1),
    (["STRING"], ["a"], 943281246, 2, 5),
    (["STRING"], ["hello world!"], 609810467, 3, 0),
    (["STRING"], [""], 302122119, 3, 5),
    (["STRING"], ["1234567"], 199144172, 0, 3),
    (["STRING"], ["12345678"], -391021801, 1, 2),
    (["DECIMAL(10, 2)"], [Decimal("1.23")], 681710603, 3, 0),
    (["DECIMAL(20, 2)"], [Decimal("-1.23")], -1806475919, 3, 3),
    (["DATE"], [date(2024, 1, 1)], -1439008885, 1, 6),
    (["TIMESTAMP(3)"], [TS], -1508629276, 0, 0),
    (["TIMESTAMP(6)"], [TS], -1141303825, 1, 4),
    (["BIGINT", "STRING"], [1, "hello world!"], -904069453, 1, 0),
    (["BIGINT", "STRING"], [None, "x"], 398608515, 3, 4),
    (["TIMESTAMP(6)"], [None], -340882661, 1, 0),          # Java reserves var space (pypaimon differs)
    ([], [], -1670924195, 3, 3),
]


def columns_for(types, values):
    return [pa.array([v], to_arrow(T(t))) for t, v in zip(types, values)]


@pytest.mark.parametrize("types,values,java_hash,b4,b7", WORKED)
def test_worked_hashes_and_buckets(types, values, java_hash, b4, b7):
    rows = encode_rows(columns_for(types, values), [T(t) for t in types], num_rows=1)
    h = hash_rows(rows)
    assert h.dtype == np.int32 and int(h[0]) == java_hash
    assert int(hash_to_bucket(h, 4)[0]) == b4
    assert int(hash_to_bucket(h, 7)[0]) == b7


@pytest.mark.parametrize("types,values,java_hash,b4,b7", [w for w in WORKED if None not in w[1]])
def test_worked_buckets_through_tables(types, values, java_hash, b4, b7):
    names = [f"k{i}" for i in range(len(types))]
    table = pa.table(dict(zip(names, columns_for(types, values)))) if types else pa.table({"v": [1]})
    key_types = [T(t) for t in types]
    assert bucket_key_hashes(table, names, key_types).tolist() == [java_hash]
    assert fixed_buckets(table, names, key_types, 4).tolist() == [b4]
    assert fixed_buckets(table, names, key_types, 7).dtype == np.int32
    assert fixed_buckets(table, names, key_types, 7).tolist() == [b7]


def test_java_remainder_semantics_including_int_min():
    hashes = np.array([-2**31, -1, -9, 9, 2**31 - 1, 0], np.int32)
    # Java: Math.abs(h % N) with a truncating remainder.
    expected = [abs(int(h) - int(int(h) / 7) * 7) for h in hashes.tolist()]
    assert hash_to_bucket(hashes, 7).tolist() == expected == [2, 1, 2, 2, 1, 0]
    assert hash_to_bucket(hashes, 4).tolist() == [0, 1, 1, 1, 3, 0]
    assert hash_to_bucket(hashes, 1).tolist() == [0] * 6
    with pytest.raises(InvalidOptionError):
        hash_to_bucket(hashes, 0)


def test_null_bucket_key_hashes_like_a_null_field():
    """Append tables may bucket by nullable columns; a null hashes as Java's null slot."""
    table = pa.table({"id": pa.array([None], pa.int64()), "name": ["x"]})
    assert bucket_key_hashes(table, ["id", "name"], [T("BIGINT"), T("STRING")]).tolist() == [398608515]


def test_missing_key_column_raises():
    with pytest.raises(SchemaMismatchError, match="'nope'"):
        fixed_buckets(pa.table({"id": [1]}), ["nope"], [T("BIGINT")], 4)


def test_chunked_and_int_typed_input():
    table = pa.Table.from_batches([pa.record_batch({"k": pa.array([0, 1], pa.int32())}),
                                   pa.record_batch({"k": pa.array([2, 42], pa.int32())})])
    assert fixed_buckets(table, ["k"], [T("BIGINT")], 4).tolist() == [3, 2, 0, 1]


# ---- pypaimon as oracle ------------------------------------------------------------------------
def pypaimon_buckets(table: pa.Table, key_types: list[DataType], num_buckets: int) -> list[int]:
    """Buckets as pypaimon's writer assigns them for a PK table with these keys and `bucket` = N."""
    return pypaimon_call("fixed_buckets", table, [t.sql() for t in key_types], num_buckets)


def decimals(p: int, s: int) -> st.SearchStrategy:
    return st.integers(-(10**p - 1), 10**p - 1).map(lambda u: Decimal(f"{u}E-{s}"))


EXTREME_INTS = st.sampled_from([0, -1, 1, -2**31, 2**31 - 1, -2**63, 2**63 - 1])
VALUE_STRATEGIES = {
    "TINYINT": st.integers(-128, 127),
    "SMALLINT": st.integers(-2**15, 2**15 - 1),
    "INT": st.one_of(st.integers(-2**31, 2**31 - 1), EXTREME_INTS.filter(lambda v: -2**31 <= v < 2**31)),
    "BIGINT": st.one_of(st.integers(-2**63, 2**63 - 1), EXTREME_INTS),
    "BOOLEAN": st.booleans(),
    "DOUBLE": st.floats(allow_nan=False),
    "STRING": st.one_of(st.text(max_size=7), st.text(min_size=8, max_size=40), st.just("")),
    "BYTES": st.binary(max_size=20),
    "DECIMAL(10, 2)": decimals(10, 2),
    "DECIMAL(18, 0)": decimals(18, 0),
    "DECIMAL(20, 4)": decimals(20, 4),
    "DECIMAL(38, 10)": decimals(38, 10),
    "DATE": st.dates(),
    "TIMESTAMP(3)": st.datetimes(min_value=datetime(1000, 1, 1)).map(
        lambda d: d.replace(microsecond=d.microsecond // 1000 * 1000)),
    "TIMESTAMP(6)": st.datetimes(min_value=datetime(1000, 1, 1)),
}
KEY_SHAPES = [["INT"], ["BIGINT"], ["STRING"], ["BYTES"], ["DECIMAL(10, 2)"], ["DECIMAL(38, 10)"],
              ["DATE"], ["TIMESTAMP(3)"], ["TIMESTAMP(6)"], ["BIGINT", "STRING"],
              ["INT", "DECIMAL(20, 4)", "STRING"], ["TINYINT", "SMALLINT", "BOOLEAN", "DOUBLE"],
              ["STRING", "DECIMAL(18, 0)", "TIMESTAMP(6)", "STRING"]]


def key_table(shape: list[str], rows: list[tuple]) -> pa.Table:
    return pa.table({f"k{i}": pa.array([r[i] for r in rows], to_arrow(T(t))) for i, t in enumerate(shape)})


@settings(max_examples=60, deadline=None)
@given(st.data())
def test_buckets_match_pypaimon_hypothesis(data):
    shape = data.draw(st.sampled_from(KEY_SHAPES))
    rows = data.draw(st.lists(st.tuples(*(VALUE_STRATEGIES[t] for t in shape)), min_size=1, max_size=25))
    num_buckets = data.draw(st.sampled_from([1, 2, 3, 4, 7, 16, 128, 1000]))
    table = key_table(shape, rows)
    key_types = [T(t) for t in shape]
    ours = fixed_buckets(table, table.column_names, key_types, num_buckets)
    assert ours.tolist() == pypaimon_buckets(table, key_types, num_buckets)


def random_values(t: str, n: int, rng: np.random.Generator) -> list:
    if t in ("INT", "BIGINT"):
        bits = 31 if t == "INT" else 63
        values = rng.integers(-2**bits, 2**bits - 1, n, endpoint=True).tolist()
        return values[: n - 3] + [-2**bits, 2**bits - 1, 0]
    if t == "STRING":
        pool = "aé✓z0 \U0001F600"
        return ["".join(rng.choice(list(pool), int(rng.integers(0, 25)))) for _ in range(n)]
    if t.startswith("DECIMAL"):
        p, s = (int(x) for x in t[8:-1].split(","))
        return [Decimal(f"{int(rng.integers(-10**min(p, 18) + 1, 10**min(p, 18))) * 10**max(p - 18, 0)}E-{s}")
                for _ in range(n)]
    if t == "DATE":
        return [date(1970, 1, 1) + timedelta(days=int(d)) for d in rng.integers(-200_000, 200_000, n)]
    if t.startswith("TIMESTAMP"):
        step = 1000 if t == "TIMESTAMP(3)" else 1
        micros = rng.integers(-4 * 10**16, 4 * 10**16, n) // step * step
        return [datetime(1970, 1, 1) + timedelta(microseconds=int(m)) for m in micros]
    raise AssertionError(t)


@pytest.mark.parametrize("shape", [["INT"], ["BIGINT"], ["STRING"], ["DECIMAL(10, 2)"], ["DECIMAL(38, 10)"],
                                   ["DATE"], ["TIMESTAMP(3)"], ["TIMESTAMP(6)"], ["BIGINT", "STRING"],
                                   ["INT", "DECIMAL(20, 4)", "STRING"]], ids=str)
def test_buckets_match_pypaimon_random_batches(shape):
    rng = np.random.default_rng(zlib.crc32(repr(shape).encode()))
    n = 1500
    columns = [random_values(t, n, rng) for t in shape]
    table = key_table(shape, list(zip(*columns)))
    key_types = [T(t) for t in shape]
    for num_buckets in (4, 7, 100):
        ours = fixed_buckets(table, table.column_names, key_types, num_buckets)
        assert ours.tolist() == pypaimon_buckets(table, key_types, num_buckets)


@settings(max_examples=100, deadline=None)
@given(st.lists(st.tuples(st.integers(0, 3), st.integers(0, 40)), max_size=300),
       st.sampled_from([1, 1 << 10, 1 << 15]), st.booleans())
def test_write_groups_rows_stably_by_partition_and_bucket(rows, bucket_scale, few):
    """The writer's grouping (a pass per group for a few groups, else a 16-bit or 64-bit
    stable sort) equals a stable sort of (partition, bucket): rows of a group stay in input
    order, which decides which duplicate key wins."""
    from paimon_streaming.write import group_rows
    if few:  # at most 8 groups: the comparison-pass path when ids are dense
        rows = [(p % 2, b % 4) for p, b in rows]
    part_ids = np.array([p for p, _ in rows], np.int64)
    buckets = np.array([b for _, b in rows], np.int64) * bucket_scale
    expected = sorted(range(len(rows)), key=lambda i: (part_ids[i], buckets[i], i))
    groups = group_rows(part_ids, buckets)
    assert [int(i) for _, _, g in groups for i in g] == expected
    for pid, bucket, g in groups:
        assert len(g) and (part_ids[g] == pid).all() and (buckets[g] == bucket).all()
