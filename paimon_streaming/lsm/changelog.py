"""Changelog production (`changelog-producer`): the rows streaming readers of the table's
changelog see, written as `changelog-*` files next to the data and committed through the
snapshot's changelog manifest list.

* `input`: every input record of a batch as written (sorted by key and sequence, not merged),
  in the APPEND snapshot; what the upstream sent is what readers get.
* `lookup`: produced when compaction pushes level 0 up, from the same lookup that finds the
  replaced rows (so it costs no extra scan): a key new to the table gives +I; a key with a
  live old row gives -U (old values) and +U (new values); a delete of a live key gives -D
  with the old values; a delete of an absent key gives nothing. Committed with the COMPACT
  snapshot, as Paimon does. `changelog-producer.row-deduplicate` drops -U/+U pairs whose
  values did not change (`changelog-producer.row-deduplicate-ignore-fields`: but for these).

`full-compaction` is not produced here; writing such a table fails with a clear error rather
than leaving its changelog readers without rows.
"""
from __future__ import annotations

from typing import Sequence

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from ..binary_row import encode_rows
from ..errors import InvalidOptionError
from ..keyvalue import DELETE, INSERT, SEQUENCE_NUMBER, UPDATE_AFTER, UPDATE_BEFORE, VALUE_KIND
from ..merge_engine import is_retract, sort_nulls_first
from ..options import CoreOptions
from ..types import DataType, from_arrow
from .lookup import key_rows

_ORDER = "__changelog_order"


def changelog_producer(options: CoreOptions, primary_keys: Sequence[str], table: str) -> str:
    """The table's producer, refusing combinations this writer cannot produce, and 'force-lookup'
    where this writer cannot compact as Paimon reads (`CoreOptions.need_lookup`)."""
    producer = options.get("changelog-producer")
    if primary_keys and options.get("force-lookup") and not options.lookup_compaction and \
            (options.merge_engine != "deduplicate" or options.sequence_field):
        raise InvalidOptionError(
            f"table {table}: 'force-lookup' = 'true' is supported on deletion-vector tables, first-row tables "
            "and deduplicate tables without 'sequence.field': Paimon's reads of it merge a key's row of the "
            "lowest level above 0 only, which this writer's compactions (no lookup) leave without the values "
            "of higher levels")
    if producer == "none":
        return producer
    if not primary_keys:
        raise InvalidOptionError(f"table {table}: changelog-producer '{producer}' needs a primary key")
    if producer == "full-compaction":
        raise InvalidOptionError(
            f"table {table}: changelog-producer 'full-compaction' is not supported by this writer; "
            "use 'lookup' (same changelog, produced at every batch) or 'input'")
    if producer == "lookup" and not options.lookup_compaction:
        raise InvalidOptionError(
            f"table {table}: changelog-producer 'lookup' is supported on deletion-vector tables "
            "('deletion-vectors.enabled' = 'true') and first-row tables; use 'input' otherwise")
    return producer


def lookup_changelog(new: pa.Table, old: pa.Table, keys: Sequence[str], key_types: Sequence[DataType],
                     row_deduplicate: bool = False, ignore_fields: Sequence[str] = ()) -> pa.Table:
    """The changelog of replacing `old` (the live rows of some keys, one per key) with `new`
    (the merged rows of the batch's keys, one per key, kinds as merged). Both carry the
    table columns plus `_SEQUENCE_NUMBER` and `_VALUE_KIND`; the result is sorted by key with
    a key's -U before its +U."""
    old = old.select(new.column_names)
    new_kinds = new.column(VALUE_KIND).to_numpy()
    deleting = is_retract(new_kinds)
    had_old = _member(new, old, keys, key_types)
    new_in_old = _member(old, new, keys, key_types)  # every old row has a new version
    old_deleted = _member(old, new.filter(pa.array(deleting)), keys, key_types)
    after = np.where(had_old, UPDATE_AFTER, INSERT).astype(np.int8)
    adds = new.filter(pa.array(~deleting)).set_column(
        new.column_names.index(VALUE_KIND), VALUE_KIND, pa.array(after[~deleting], pa.int8()))
    old = old.filter(pa.array(new_in_old))
    old_deleted = old_deleted[new_in_old]
    before = np.where(old_deleted, DELETE, UPDATE_BEFORE).astype(np.int8)
    removes = old.set_column(old.column_names.index(VALUE_KIND), VALUE_KIND, pa.array(before, pa.int8()))
    if row_deduplicate:
        adds, removes = _drop_unchanged(adds, removes, keys, key_types, ignore_fields)
    both = pa.concat_tables([
        removes.append_column(_ORDER, pa.array(np.zeros(removes.num_rows, np.int8))),
        adds.append_column(_ORDER, pa.array(np.ones(adds.num_rows, np.int8)))])
    order = pc.sort_indices(both, sort_keys=[(k, "ascending") for k in keys] + [(_ORDER, "ascending")])
    return both.take(order).drop_columns([_ORDER])


def input_changelog(rows: pa.Table, keys: Sequence[str], seq_fields: Sequence[str] = ()) -> pa.Table:
    """Input records in the order they are merged (key, `sequence.field` columns, sequence
    number; nulls first), every record kept with its kind: a consumer applying them in turn
    ends with the row the table keeps, as with Java's changelog from its write buffer."""
    return rows.take(sort_nulls_first(rows, [*keys, *seq_fields, SEQUENCE_NUMBER]))


def _member(table: pa.Table, other: pa.Table, keys: Sequence[str], key_types: Sequence[DataType]) -> np.ndarray:
    """Per row of `table`: is its key among `other`'s keys?"""
    if not table.num_rows or not other.num_rows:
        return np.zeros(table.num_rows, bool)
    mine = key_rows([table.column(k) for k in keys], key_types)
    theirs = key_rows([other.column(k) for k in keys], key_types)
    return pc.is_in(mine, value_set=theirs).to_numpy(zero_copy_only=False)


def _drop_unchanged(adds: pa.Table, removes: pa.Table, keys: Sequence[str], key_types: Sequence[DataType],
                    ignore_fields: Sequence[str] = ()) -> tuple[pa.Table, pa.Table]:
    """Drop -U/+U pairs whose value columns are equal (values compared as BinaryRows), the
    `ignore_fields` left out of the comparison."""
    updates = adds.filter(pc.equal(adds.column(VALUE_KIND), UPDATE_AFTER))
    befores = removes.filter(pc.equal(removes.column(VALUE_KIND), UPDATE_BEFORE))
    if not updates.num_rows:
        return adds, removes
    values = [c for c in adds.column_names if c not in (SEQUENCE_NUMBER, VALUE_KIND) and c not in ignore_fields]
    key_order = [(k, "ascending") for k in keys]
    updates = updates.take(pc.sort_indices(updates, sort_keys=key_order))
    befores = befores.take(pc.sort_indices(befores, sort_keys=key_order))
    same_rows = pc.equal(_row_bytes(updates, values), _row_bytes(befores, values)).to_numpy(zero_copy_only=False)
    unchanged = updates.filter(pa.array(same_rows))
    keep_adds = ~_member(adds, unchanged, keys, key_types) | (adds.column(VALUE_KIND).to_numpy() != UPDATE_AFTER)
    keep_removes = ~_member(removes, unchanged, keys, key_types) | \
        (removes.column(VALUE_KIND).to_numpy() != UPDATE_BEFORE)
    return adds.filter(pa.array(keep_adds)), removes.filter(pa.array(keep_removes))


def _row_bytes(table: pa.Table, columns: Sequence[str]) -> pa.Array:
    return encode_rows([table.column(c) for c in columns], [from_arrow(table.schema.field(c).type)
                                                           for c in columns])
