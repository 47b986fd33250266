"""`data-file.thin-mode`: primary-key data files without the `_KEY_` columns (Paimon 1.0+).

The files must have Java's thin layout (`_SEQUENCE_NUMBER`, `_VALUE_KIND`, the table's columns)
and stats (the key's value columns carry truncate(128) stats, which are also the key stats),
and every path that reads files (reads, lookups, compaction, changelog) must give the same
answers as on a table of full files; pypaimon reads them too. Java interop is in
test_interop_java.py.
"""
from __future__ import annotations

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq
import pytest

import paimon_streaming as ps
from paimon_streaming.binary_row import deserialize_row
from paimon_streaming.keyvalue import SEQUENCE_NUMBER, VALUE_KIND, key_fields
from paimon_streaming.scan import TableScan
from paimon_streaming.stats import collect_stats
from conftest import pypaimon_read
from stream_batches import open_stream, snapshot_changes

SCHEMA = pa.schema([pa.field("id", pa.int64(), False), pa.field("s", pa.string(), False),
                    pa.field("v", pa.string()), pa.field("n", pa.float64())])


def _batch(ids, tag: str) -> pa.Table:
    ids = np.asarray(ids, np.int64)
    return pa.table({"id": ids, "s": [f"key-{i % 7}-" + "x" * 20 for i in ids],
                     "v": [f"{tag}-{i}" for i in ids], "n": ids * 0.5}, schema=SCHEMA)


def _entries(table):
    return TableScan(table.file_io, table.path, table.schema).live_entries(table.latest_snapshot())


def _columns(table, entry) -> list[str]:
    return pq.ParquetFile(f"{table.path}/bucket-{entry.bucket}/{entry.file.file_name}").schema_arrow.names


def _changes(table) -> list[tuple]:
    """Every snapshot's changelog rows with their kinds, as the streaming scan reads them."""
    scan = open_stream(table, {"scan.mode": "from-snapshot", "scan.snapshot-id": "1"})
    return sorted((tuple(r.values()) for snapshot in table.snapshots()
                   for r in snapshot_changes(scan, snapshot.id, SCHEMA.names)), key=repr)


def _stream(table) -> None:
    rng = np.random.default_rng(3)
    table.write_arrow(_batch(range(0, 3000), "a"))
    for b in range(1, 5):
        table.write_arrow(_batch(np.r_[rng.choice(3000 * b, 400, replace=False), 3000 * b + np.arange(3000)], f"b{b}"))
    table.write_arrow(pa.table({"id": pa.array([1, 2, 3], pa.int64()), "s": ["key-1-" + "x" * 20, "key-2-" + "x" * 20,
                                "key-3-" + "x" * 20], "v": [None] * 3, "n": [None] * 3,
                                "_ROW_KIND": ["-D", "-D", "-D"]}), row_kind_column="_ROW_KIND")


@pytest.mark.parametrize("options", [
    {"bucket": "2", "deletion-vectors.enabled": "true"},
    {"bucket": "2"},                                                     # merge-on-read, compaction when picked
    {"bucket": "2", "deletion-vectors.enabled": "true", "changelog-producer": "lookup"},
    {"bucket": "1", "changelog-producer": "input"},
])
def test_thin_files_read_like_full_ones(tmp_path, options):
    """The same stream into a thin and a full table: thin files have no `_KEY_` column, and
    reads, lookups (deletion vectors), merges, compaction and changelogs agree."""
    catalog = ps.Catalog(str(tmp_path))
    keys = ["id", "s"]
    full = catalog.create_table("db.full", SCHEMA, primary_keys=keys, options=options)
    thin = catalog.create_table("db.thin", SCHEMA, primary_keys=keys, options={**options, "data-file.thin-mode": "true"})
    for t in (full, thin):
        _stream(t)
    assert thin.to_arrow().sort_by("id").equals(full.to_arrow().sort_by("id"))
    assert thin.to_arrow().num_rows == 3000 * 5 - 3
    for e in _entries(thin):
        assert _columns(thin, e) == [SEQUENCE_NUMBER, VALUE_KIND, "id", "s", "v", "n"], e.file.file_name
    assert all(_columns(full, e)[:2] == ["_KEY_id", "_KEY_s"] for e in _entries(full))
    if "changelog-producer" in options:
        assert _changes(thin) == _changes(full)
        assert len(_changes(thin)) > 3000
    thin.compact(full=True)
    assert thin.to_arrow().sort_by("id").equals(full.to_arrow().sort_by("id"))


def test_thin_file_stats_are_javas(tmp_path):
    """Java's thin writer gives the key's value columns truncate(128) stats (not
    `metadata.stats-mode`), not counted by `metadata.stats-keep-first-n-columns`, and takes the
    key stats from them; a `fields.<key>.stats-mode` still wins, `none` included."""
    catalog = ps.Catalog(str(tmp_path))
    data = _batch(range(50), "a")
    t = catalog.create_table("db.t", SCHEMA, primary_keys=["id", "s"],
                             options={"bucket": "1", "data-file.thin-mode": "true",
                                      "metadata.stats-mode": "truncate(4)",
                                      "metadata.stats-keep-first-n-columns": "1"})
    t.write_arrow(data)
    [entry] = _entries(t)
    f = entry.file
    assert f.value_stats_cols == ("id", "s", "v")  # keys do not use up the first-n budget
    value_fields = [t.schema.field(n) for n in f.value_stats_cols]
    expected = collect_stats(data, value_fields, {"id": "truncate(128)", "s": "truncate(128)", "v": "truncate(4)"})
    types = [fl.type.copy(nullable=True) for fl in value_fields]
    assert deserialize_row(f.value_stats.min_values, types) == list(expected.min_values)
    assert deserialize_row(f.value_stats.max_values, types) == list(expected.max_values)
    kfields = key_fields(t.schema)
    key_types = [fl.type.copy(nullable=True) for fl in kfields]
    assert deserialize_row(f.key_stats.min_values, key_types) == list(expected.min_values[:2])
    assert deserialize_row(f.key_stats.max_values, key_types) == list(expected.max_values[:2])
    assert len(expected.max_values[1]) > 16  # whole key values, not truncated to the stats mode

    none = catalog.create_table("db.none", SCHEMA, primary_keys=["id", "s"],
                                options={"bucket": "1", "data-file.thin-mode": "true",
                                         "fields.s.stats-mode": "none"})
    none.write_arrow(data)
    [entry] = _entries(none)
    assert deserialize_row(entry.file.key_stats.min_values, key_types) == [0, None]
    assert list(entry.file.key_stats.null_counts) == [0, None]
    assert entry.file.value_stats_cols == ("id", "v", "n")


@pytest.mark.parametrize("dv", [False, True])
def test_switching_thin_mode_on_a_live_table(tmp_path, dv):
    """Files written before and after `data-file.thin-mode` changes live side by side, each
    with the layout of its schema; reads merge across them (merge-on-read keeps both level-0
    runs) and lookups find keys in either (with deletion vectors the old file is rewritten)."""
    catalog = ps.Catalog(str(tmp_path))
    t = catalog.create_table("db.t", SCHEMA, primary_keys=["id", "s"],
                             options={"bucket": "1", "deletion-vectors.enabled": str(dv).lower()})
    t.write_arrow(_batch(range(100), "a"))
    with t.update_schema() as update:
        update.set_option("data-file.thin-mode", "true")
    t = catalog.get_table("db.t")
    t.write_arrow(_batch(range(50, 150), "b"))
    layouts = {_columns(t, e)[0] for e in _entries(t)}
    assert layouts == ({SEQUENCE_NUMBER} if dv else {"_KEY_id", SEQUENCE_NUMBER})
    expected = {i: ("a" if i < 50 else "b") + f"-{i}" for i in range(150)}
    assert {r["id"]: r["v"] for r in t.to_arrow().to_pylist()} == expected
    assert {r["id"]: r["v"] for r in pypaimon_read(str(tmp_path), "db.t").to_pylist()} == expected
