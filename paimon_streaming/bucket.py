"""Fixed-bucket assignment (`bucket` = N > 0), identical to Java's bucket functions.

`bucket-function.type` picks the function (Java's BucketFunction, Paimon 1.2+):
- `default` (DefaultBucketFunction): the hash of the BinaryRow of the bucket-key columns,
  built with the table types (FORMAT.md §7.1); any byte difference moves rows to other buckets
  and breaks key uniqueness across writers, so everything goes through `binary_row`;
- `mod` (ModBucketFunction): `floorMod(key, N)` of a single INT or BIGINT bucket key;
- `hive` (HiveBucketFunction): Hive's bucketing hash, `31 * h + hash(field)` over the fields,
  then `(h & Integer.MAX_VALUE) % N`; a field hashes as Hive's: integers and DATE/TIME as the
  int, BIGINT as Long.hashCode, FLOAT/DOUBLE by their bits (-0.0 as 0), strings and binaries as
  `31 * h + byte` over their (signed) bytes, DECIMAL as `BigDecimal.hashCode()` of the value
  with its trailing zeros stripped (down to scale 0), null as 0. Java refuses other types
  (TIMESTAMP); DECIMAL with more than 18 digits (a 128-bit unscaled value) is refused here.
"""
from __future__ import annotations

from typing import Sequence

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from .binary_row import row_hashes
from .errors import InvalidOptionError, SchemaMismatchError
from .types import DataType


def bucket_key_hashes(table: pa.Table, key_names: Sequence[str], key_types: Sequence[DataType]) -> np.ndarray:
    """BinaryRow.hashCode() (int32) of each row's bucket key.

    Nulls are hashed as Java hashes them (a bucket-key of an append table may be null);
    primary-key columns are checked for nulls before they get here.
    """
    columns = []
    for name in key_names:
        if name not in table.column_names:
            raise SchemaMismatchError(f"bucket key column {name!r} is missing from the data "
                                      f"(columns: {table.column_names})")
        columns.append(table.column(name))
    return row_hashes(columns, key_types, num_rows=table.num_rows)


def hash_to_bucket(hashes: np.ndarray, num_buckets: int) -> np.ndarray:
    """Java's ``Math.abs(hash % N)``: `fmod` is the remainder with the dividend's sign, as
    Java's %, and its magnitude is below N, so abs never overflows (not even for INT_MIN)."""
    if num_buckets <= 0:
        raise InvalidOptionError(f"fixed bucket mode needs 'bucket' > 0, got {num_buckets}")
    return np.abs(np.fmod(hashes.astype(np.int32, copy=False), np.int32(num_buckets)))


FUNCTIONS = ("default", "mod", "hive")
_MOD_TYPES = ("INT", "BIGINT")
_HIVE_INTS = ("BOOLEAN", "TINYINT", "SMALLINT", "INT", "DATE", "TIME")
_HIVE_TYPES = _HIVE_INTS + ("BIGINT", "FLOAT", "DOUBLE", "CHAR", "VARCHAR", "BINARY", "VARBINARY", "DECIMAL")
_HIVE_MAX_DECIMAL_DIGITS = 18  # unscaled values in an int64: BigDecimal's compact form


def check_bucket_function(function: str, key_names: Sequence[str], key_types: Sequence[DataType]) -> None:
    """InvalidOptionError when `bucket-function.type` cannot hash these bucket keys (as Java
    refuses them, or, for `hive` DECIMAL keys, as this connector does)."""
    if function == "mod" and (len(key_types) != 1 or key_types[0].root not in _MOD_TYPES):
        raise InvalidOptionError(f"'bucket-function.type' = 'mod' needs a single INT or BIGINT bucket key, "
                                 f"not {list(key_names)} ({', '.join(t.root for t in key_types)})")
    if function == "hive":
        bad = [n for n, t in zip(key_names, key_types) if t.root not in _HIVE_TYPES
               or (t.root == "DECIMAL" and t.precision > _HIVE_MAX_DECIMAL_DIGITS)]
        if bad:
            raise InvalidOptionError(f"'bucket-function.type' = 'hive' cannot hash bucket key column(s) {bad}: "
                                     f"supported are {', '.join(_HIVE_TYPES)} (DECIMAL up to "
                                     f"{_HIVE_MAX_DECIMAL_DIGITS} digits)")


def fixed_buckets(table: pa.Table, key_names: Sequence[str], key_types: Sequence[DataType],
                  num_buckets: int, function: str = "default") -> np.ndarray:
    """The bucket (int32, 0..N-1) of every row of `table` for a table with `bucket` = N."""
    if function == "default":
        return hash_to_bucket(bucket_key_hashes(table, key_names, key_types), num_buckets)
    check_bucket_function(function, key_names, key_types)
    columns = [_bucket_key_column(table, name) for name in key_names]
    if function == "mod":  # a null key reads as 0 from its BinaryRow slot
        values = pc.fill_null(columns[0], 0).to_numpy().astype(np.int64)
        return np.mod(values, num_buckets).astype(np.int32)  # numpy's mod is floorMod for a positive N
    h = np.zeros(table.num_rows, np.uint32)
    for column, t in zip(columns, key_types):
        h = h * np.uint32(31) + _hive_hash(column, t)
    return ((h & np.uint32(0x7FFFFFFF)) % np.uint32(num_buckets)).astype(np.int32)


def _bucket_key_column(table: pa.Table, name: str) -> pa.Array:
    if name not in table.column_names:
        raise SchemaMismatchError(f"bucket key column {name!r} is missing from the data (columns: {table.column_names})")
    return table.column(name).combine_chunks()


def _hive_hash(column: pa.Array, t: DataType) -> np.ndarray:
    """Hive's hash of each value of one column (uint32 bits of Java's int), null as 0."""
    valid = ~column.is_null().to_numpy(zero_copy_only=False)
    if t.root in _HIVE_INTS:
        return pc.fill_null(column.cast(pa.int32()), 0).to_numpy().astype(np.int64).astype(np.uint32)
    if t.root in ("BIGINT", "DOUBLE"):
        values = pc.fill_null(column, 0).to_numpy()
        if t.root == "DOUBLE":
            values = np.where(values == 0, 0.0, values)  # -0.0 hashes as 0
            values = np.where(np.isnan(values), np.nan, values)  # Java's canonical NaN bits
        bits = values.astype(np.float64 if t.root == "DOUBLE" else np.int64).view(np.uint64)
        return np.where(valid, (bits ^ (bits >> np.uint64(32))).astype(np.uint32), np.uint32(0))
    if t.root == "FLOAT":
        values = pc.fill_null(column, 0).to_numpy().astype(np.float32)
        values = np.where(values == 0, np.float32(0), values)
        values = np.where(np.isnan(values), np.float32(np.nan), values).astype(np.float32)
        return np.where(valid, values.view(np.uint32), np.uint32(0))
    if t.root == "DECIMAL":
        return np.where(valid, _hive_decimal_hash(column, t.scale), np.uint32(0))
    return _hive_bytes_hash(column.cast(pa.binary()))  # strings and binaries: over their bytes


def _hive_decimal_hash(column: pa.Array, scale: int) -> np.ndarray:
    """Java's BigDecimal.hashCode() of each value with trailing zeros stripped (not below scale
    0; zero is 0 at scale 0), for unscaled values in an int64 (the compact form): with
    v = |unscaled|, `31 * sign * (int)((int)(v >>> 32) * 31 + (v & 0xFFFFFFFF)) + scale`."""
    words = np.frombuffer(column.buffers()[1], np.int64, 2 * len(column), column.offset * 16)
    unscaled = words[0::2].copy()  # little-endian: the low word holds the value (|v| < 10^18)
    scales = np.full(len(column), scale, np.int64)
    for _ in range(scale):  # strip one trailing zero per step, at most `scale` steps
        strip = (unscaled % 10 == 0) & (scales > 0) & (unscaled != 0)
        unscaled = np.where(strip, unscaled // 10, unscaled)
        scales -= strip
    scales[unscaled == 0] = 0
    magnitude = np.abs(unscaled).astype(np.uint64)
    high = (magnitude >> np.uint64(32)).astype(np.uint32) * np.uint32(31)
    temp = (high.astype(np.uint64) + (magnitude & np.uint64(0xFFFFFFFF))).astype(np.uint32)
    signed = np.where(unscaled < 0, -temp.astype(np.int64), temp.astype(np.int64)).astype(np.uint32)
    return signed * np.uint32(31) + scales.astype(np.uint32)


def _hive_bytes_hash(column: pa.Array) -> np.ndarray:
    """`31 * h + b` over each value's signed bytes (null or empty: 0), vectorized: byte i of a
    value of length n contributes b * 31^(n-1-i), all modulo 2^32."""
    n = len(column)
    offsets = np.frombuffer(column.buffers()[1], np.int32, n + 1, column.offset * 4).astype(np.int64)
    first, size = int(offsets[0]), int(offsets[-1] - offsets[0])
    offsets -= first
    raw = np.frombuffer(column.buffers()[2], np.int8, size, first) if size else np.zeros(0, np.int8)
    lengths = np.diff(offsets)
    row = np.repeat(np.arange(n), lengths)
    exponent = offsets[1:][row] - 1 - np.arange(size)
    terms = raw.astype(np.int64).astype(np.uint64) * _powers_of_31(int(lengths.max(initial=0)))[exponent]
    sums = np.concatenate([np.zeros(1, np.uint64), np.cumsum(terms, dtype=np.uint64)])
    hashes = ((sums[offsets[1:]] - sums[offsets[:-1]]) & np.uint64(0xFFFFFFFF)).astype(np.uint32)
    return np.where(column.is_null().to_numpy(zero_copy_only=False), np.uint32(0), hashes)


def _powers_of_31(count: int) -> np.ndarray:
    """31^0 .. 31^(count-1) modulo 2^32, by doubling blocks (log2(count) numpy steps)."""
    powers = np.ones(1, np.uint64)
    while len(powers) < count:
        step = powers[-1] * np.uint64(31) & np.uint64(0xFFFFFFFF)  # 31^len
        powers = np.concatenate([powers, powers * step & np.uint64(0xFFFFFFFF)])
    return powers[:max(count, 1)]
