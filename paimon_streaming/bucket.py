"""Fixed-bucket assignment (`bucket` = N > 0), identical to Java's DefaultBucketFunction.

A row's bucket is derived from the hash of the BinaryRow of its bucket-key columns, built
with the table types (FORMAT.md §7.1); any byte difference moves rows to other buckets and
breaks key uniqueness across writers, so everything goes through `binary_row`.
"""
from __future__ import annotations

from typing import Sequence

import numpy as np
import pyarrow as pa

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


def fixed_buckets(table: pa.Table, key_names: Sequence[str], key_types: Sequence[DataType],
                  num_buckets: int) -> np.ndarray:
    """The bucket (int32, 0..N-1) of every row of `table` for a table with `bucket` = N."""
    return hash_to_bucket(bucket_key_hashes(table, key_names, key_types), num_buckets)
