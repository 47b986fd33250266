"""Paimon features this connector does not implement (options.UNIMPLEMENTED_FEATURES): tables
are not created or altered with them, tables created elsewhere with them are never written, and
reads that would need them raise instead of answering wrongly."""
from __future__ import annotations

import dataclasses
import os

import pyarrow as pa
import pytest

import paimon_streaming as ps
from paimon_streaming.errors import InvalidOptionError, UnsupportedOperationError
from paimon_streaming.options import UNIMPLEMENTED_FEATURES
from paimon_streaming.read import SplitReader
from paimon_streaming.scan import TableScan

from metadata_edits import edit_schema

SCHEMA = pa.schema([pa.field("id", pa.int64(), False), ("v", pa.string())])


def _with_options_written_elsewhere(table: ps.Table, options: dict[str, str]) -> ps.Table:
    """The table as another writer (Apache Paimon 2.0, say) would have created it: the options
    in its first schema file."""
    edit_schema(os.path.join(table.path, "schema", "schema-0"), lambda schema: schema["options"].update(options))
    return ps.Table.open(table.path)


@pytest.mark.parametrize("key", sorted(UNIMPLEMENTED_FEATURES))
def test_tables_are_not_created_or_altered_with_unimplemented_features(catalog, key):
    with pytest.raises(InvalidOptionError, match=key):
        catalog.create_table("db.t", SCHEMA, primary_keys=["id"], options={"bucket": "1", key: "true"})
    t = catalog.create_table("db.t", SCHEMA, primary_keys=["id"], options={"bucket": "1", key: "false"})
    with pytest.raises(InvalidOptionError, match=key):
        with t.update_schema() as update:
            update.set_option(key, "true")
    assert ps.Table.open(t.path).schema.id == 0


@pytest.mark.parametrize("key", sorted(UNIMPLEMENTED_FEATURES))
@pytest.mark.parametrize("dv", [False, True])
def test_tables_with_unimplemented_features_are_read_but_never_written(catalog, key, dv):
    """Writes and compaction refuse, naming the option, and commit nothing; reads that need no
    merge still work."""
    t = catalog.create_table("db.t", SCHEMA, primary_keys=["id"],
                             options={"bucket": "1", "deletion-vectors.enabled": str(dv).lower()})
    t.write_arrow(pa.table({"id": [1, 2], "v": ["a", "b"]}, schema=SCHEMA))
    t = _with_options_written_elsewhere(t, {key: "true"})
    snapshots = len(t.snapshots())
    for attempt in (lambda: t.write_arrow(pa.table({"id": [3], "v": ["c"]}, schema=SCHEMA)),
                    lambda: t.compact(full=True)):
        with pytest.raises(UnsupportedOperationError, match=f"cannot write to .*'{key}' = 'true'"):
            attempt()
    assert len(ps.Table.open(t.path).snapshots()) == snapshots
    assert sorted(t.to_arrow().to_pylist(), key=lambda r: r["id"]) == [{"id": 1, "v": "a"}, {"id": 2, "v": "b"}]


def test_merge_on_read_refuses_snapshot_ordering(catalog):
    """Versions of a key in two level-0 files would be merged by their sequence numbers, where
    the table says the committing snapshot decides."""
    t = catalog.create_table("db.t", SCHEMA, primary_keys=["id"], options={"bucket": "1"})
    t.write_arrow(pa.table({"id": [1, 2], "v": ["a", "b"]}, schema=SCHEMA))
    t.write_arrow(pa.table({"id": [1], "v": ["A"]}, schema=SCHEMA))
    t = _with_options_written_elsewhere(t, {"sequence.snapshot-ordering": "true"})
    with pytest.raises(UnsupportedOperationError, match="sequence.snapshot-ordering"):
        t.to_arrow()


def test_a_file_holding_some_columns_of_its_rows_is_refused(catalog):
    """Data evolution: a file whose `_WRITE_COLS` leave out columns holds the rest of its rows
    elsewhere, to be merged by row id; reading it alone would give nulls for them."""
    t = catalog.create_table("db.t", pa.schema([("id", pa.int64()), ("v", pa.string())]))
    t.write_arrow(pa.table({"id": [1, 2], "v": ["a", "b"]}))
    scan = TableScan(t.file_io, t.path, t.schema)
    splits = t.plan(t.latest_snapshot())
    partial = [dataclasses.replace(s, files=[dataclasses.replace(f, write_cols=("id",)) for f in s.files])
               for s in splits]
    with pytest.raises(UnsupportedOperationError, match=r"holds only the columns \['id'\].*\['v'\]"):
        SplitReader(t.file_io, scan, t.schema).read(partial)
    whole = [dataclasses.replace(s, files=[dataclasses.replace(f, write_cols=("id", "v")) for f in s.files])
             for s in splits]
    assert SplitReader(t.file_io, scan, t.schema).read(whole).num_rows == 2
