"""W4: a commit's cost must not grow with the table's history.

The live files a commit checks conflicts against are kept across commits (`LiveFilesCache`)
and moved forward by the deltas of the snapshots since; these tests pin that the kept state
is always the replay of the snapshot it stands for (other writers, rollbacks), that the
manifests a commit reads stay bounded as history grows, and that the hand-written index
manifest encoding is the records fastavro writes.
"""
from __future__ import annotations

import io
import statistics

import fastavro
import pyarrow as pa
import pytest

from paimon_streaming.commit import CommitMessage, Increment
from paimon_streaming.errors import CommitConflictError
from paimon_streaming.manifest import ManifestFile
from paimon_streaming.manifest.avro_schemas import INDEX_MANIFEST_ENTRY
from paimon_streaming.manifest.entries import (ADD, DELETE, DeletionVectorMeta, IndexFileMeta,
                                               IndexManifestEntry)
from paimon_streaming.manifest.index_avro import encode_index_manifest
from paimon_streaming.scan import TableScan

SCHEMA = pa.schema([pa.field("id", pa.int64(), False), ("v", pa.string())])


def rows(ids, v="x"):
    return pa.table({"id": list(ids), "v": [f"{v}{i}" for i in ids]}, schema=SCHEMA)


def replayed(table) -> set[tuple]:
    """The latest snapshot's live files by a full replay of its manifests."""
    scan = TableScan(table.file_io, table.path, table.schema)
    return {e.identifier for e in scan.live_entries(table.latest_snapshot())}


def kept(table) -> set[tuple]:
    """The live files a commit would check against now."""
    return {e.identifier for e in table.new_commit()._live_files(table.latest_snapshot()).entries()}


@pytest.fixture
def pk_table(catalog):
    return catalog.create_table("db.t", SCHEMA, primary_keys=["id"], options={"bucket": "2"})


def test_kept_live_files_follow_other_writers(catalog, pk_table):
    """Another Table object (another writer) commits in between: the kept state moves forward
    by its deltas and never serves the files it removed."""
    other = catalog.get_table("db.t")
    for i in range(8):
        writer = pk_table if i % 2 else other
        writer.write_arrow(rows(range(i * 3, i * 3 + 5), v=f"w{i}"))
        assert kept(pk_table) == replayed(pk_table)
    before = pk_table.new_commit()._live_files(pk_table.latest_snapshot())
    victim = before.entries()[0]
    other.compact(full=True)  # removes every file `before` holds
    assert kept(pk_table) == replayed(pk_table)
    msg = CommitMessage(victim.partition, victim.bucket, victim.total_buckets,
                        compact=Increment(deleted_files=[victim.file]))
    with pytest.raises(CommitConflictError, match="no longer live"):
        pk_table.new_commit().commit([msg], "u", 1)


def test_kept_live_files_not_reused_after_a_rollback_rewrote_the_id(pk_table):
    """Rollback then a new commit gives an old id new content: the chain of deltas from the
    kept state is broken and the state is replayed from the manifests."""
    for i in range(4):
        pk_table.write_arrow(rows(range(i, i + 3), v=f"a{i}"))
    assert kept(pk_table) == replayed(pk_table)
    pk_table.rollback_to(2)
    pk_table.write_arrow(rows([100, 101], v="b"))
    pk_table.write_arrow(rows([102], v="c"))
    assert kept(pk_table) == replayed(pk_table)
    assert {r["id"] for r in pk_table.to_arrow().to_pylist()} >= {100, 101, 102}


def test_a_commit_reads_no_more_manifests_as_history_grows(catalog, monkeypatch):
    """Manifest reads per commit (cached or not) stay bounded: only manifest merges (every
    `manifest.merge-min-count` manifests) read many; conflict checks read none."""
    table = catalog.create_table("db.h", SCHEMA, primary_keys=["id"],
                                 options={"bucket": "2", "num-sorted-run.compaction-trigger": "2"})
    reads = [0]
    original = ManifestFile.read

    def counting(self, name, size=None):
        reads[0] += 1
        return original(self, name, size)
    monkeypatch.setattr(ManifestFile, "read", counting)
    per_commit = []
    for i in range(150):
        messages = table.write_messages(rows(range(i * 10, i * 10 + 20), v=f"r{i}"))
        reads[0] = 0  # the write's own scan is not the commit's
        table.new_commit().commit(messages, "u", i, best_effort_compaction=True)
        per_commit.append(reads[0])
    assert any(s.commit_kind == "COMPACT" for s in table.snapshots())
    early, late = per_commit[20:50], per_commit[120:150]
    assert statistics.median(late) <= statistics.median(early) <= 2
    assert max(late) <= 30 + 4  # a minor merge reads at most merge-min-count manifests and a few deltas


def test_dv_commits_check_their_deletion_vectors_against_the_kept_state(catalog):
    table = catalog.create_table("db.dv", SCHEMA, primary_keys=["id"],
                                 options={"bucket": "2", "deletion-vectors.enabled": "true"})
    other = catalog.get_table("db.dv")
    for i in range(12):
        (table if i % 3 else other).write_arrow(rows(range(i * 2, i * 2 + 6), v=f"d{i}"))
        assert kept(table) == replayed(table)
    expected = {}
    for i in range(12):
        expected.update({k: f"d{i}{k}" for k in range(i * 2, i * 2 + 6)})
    assert {r["id"]: r["v"] for r in table.to_arrow().to_pylist()} == expected


@pytest.mark.parametrize("codec", ["zstandard", "null", "deflate"])
def test_index_manifest_encoding_matches_fastavro(codec):
    ranges = (DeletionVectorMeta("data-a.parquet", 1, 20, 3), DeletionVectorMeta("data-b.parquet", 21, 7, None))
    entries = [
        IndexManifestEntry(ADD, b"\x00" * 12, 0, IndexFileMeta("DELETION_VECTORS", "index-1", 300, 2, ranges)),
        IndexManifestEntry(ADD, b"\x01" * 12, -1, IndexFileMeta("HASH", "index-2", 64, 9, None, "s3://x/index-2")),
        IndexManifestEntry(DELETE, b"\x02" * 12, 300, IndexFileMeta("DELETION_VECTORS", "index-3", 1 << 40, 0, ())),
    ]
    ours = encode_index_manifest(entries, codec, "index-manifest-1")
    buf = io.BytesIO()
    fastavro.writer(buf, INDEX_MANIFEST_ENTRY, [e.to_avro() for e in entries], codec=codec)
    assert list(fastavro.reader(io.BytesIO(ours))) == list(fastavro.reader(io.BytesIO(buf.getvalue())))
    assert [IndexManifestEntry.from_avro(r) for r in fastavro.reader(io.BytesIO(ours))] == entries
    assert list(fastavro.reader(io.BytesIO(encode_index_manifest([], codec, "index-manifest-2")))) == []


def test_index_manifest_with_a_global_index_is_left_to_fastavro():
    meta = IndexFileMeta("BTREE", "index-g", 10, 1, global_index={"_ROW_RANGE_START": 0})
    assert encode_index_manifest([IndexManifestEntry(ADD, b"\x00" * 12, 0, meta)], "null", "index-manifest-3") is None


def test_kept_state_is_per_table(catalog):
    a = catalog.create_table("db.a", SCHEMA, primary_keys=["id"], options={"bucket": "1"})
    b = catalog.create_table("db.b", SCHEMA, primary_keys=["id"], options={"bucket": "1"})
    for i in range(3):
        a.write_arrow(rows([i]))
        b.write_arrow(rows([i + 10, i + 20]))
    assert kept(a) == replayed(a) and kept(b) == replayed(b)
