"""Corruption is reported, never silently read: each damaged or missing file gives an error
that names it. Every read here runs with a cold metadata cache, as a new process would."""
from __future__ import annotations

import json
import os

import pyarrow as pa
import pytest

import paimon_streaming as ps
from paimon_streaming.errors import CorruptFileError, MissingFileError
from paimon_streaming import file_cache
from vector_edits import rewrite_vector, vector_beyond_its_file

SCHEMA = pa.schema([("id", pa.int64(), False), ("v", pa.string())])


@pytest.fixture(autouse=True)
def cold_cache():
    file_cache.clear_all()


def fresh(table: ps.Table) -> ps.Table:
    file_cache.clear_all()
    return ps.Table.open(table.path)


@pytest.fixture
def pk(catalog):
    t = catalog.create_table("db.pk", SCHEMA, primary_keys=["id"], options={"bucket": "1"})
    t.write_arrow(pa.table({"id": [1, 2, 3], "v": ["a", "b", "c"]}))
    return t


@pytest.fixture
def dv(catalog):
    t = catalog.create_table("db.dv", SCHEMA, primary_keys=["id"],
                             options={"bucket": "1", "deletion-vectors.enabled": "true"})
    t.write_arrow(pa.table({"id": list(range(2000)), "v": ["a"] * 2000}))
    t.write_arrow(pa.table({"id": [1, 2], "v": ["b", "b"]}))  # marked in a deletion vector, no rewrite
    return t


def dv_index_path(t: ps.Table) -> str:
    scan = t.new_commit().index_manifest
    (entry,) = [e for e in scan.read(t.latest_snapshot().index_manifest) if e.index_file.dv_ranges]
    return f"{t.path}/index/{entry.index_file.file_name}"


def data_file_path(t: ps.Table) -> str:
    (split,) = t.plan(t.latest_snapshot())
    return f"{split.bucket_path}/{split.files[0].file_name}"


def truncate(path: str) -> None:
    data = open(path, "rb").read()
    open(path, "wb").write(data[: len(data) // 2])


def test_deletion_vector_with_a_bad_checksum(dv):
    path = dv_index_path(dv)
    data = bytearray(open(path, "rb").read())
    data[12] ^= 0xFF  # inside the first bitmap
    open(path, "wb").write(bytes(data))
    with pytest.raises(CorruptFileError, match="CRC32") as err:
        fresh(dv).to_arrow()
    assert path in str(err.value)


def test_truncated_manifest(pk):
    commit = pk.new_commit()
    snap = pk.latest_snapshot()
    (meta,) = commit.manifest_list.read(snap.delta_manifest_list)
    path = commit.manifest_file.path(meta.file_name)
    truncate(path)
    with pytest.raises(CorruptFileError) as err:
        fresh(pk).to_arrow()
    assert path in str(err.value)


def test_truncated_manifest_list(pk):
    path = pk.new_commit().manifest_list.path(pk.latest_snapshot().base_manifest_list)
    open(path, "wb").write(b"Obj\x01")
    with pytest.raises(CorruptFileError) as err:
        fresh(pk).to_arrow()
    assert path in str(err.value)


def test_snapshot_pointing_at_a_missing_manifest_list(pk):
    path = pk.new_commit().manifest_list.path(pk.latest_snapshot().delta_manifest_list)
    os.remove(path)
    with pytest.raises(MissingFileError) as err:
        fresh(pk).to_arrow()
    assert path in str(err.value) and isinstance(err.value, FileNotFoundError)


def test_snapshot_pointing_at_a_missing_data_file(pk):
    path = data_file_path(pk)
    os.remove(path)
    with pytest.raises(MissingFileError) as err:  # still a FileNotFoundError
        fresh(pk).to_arrow()
    assert path in str(err.value)


def test_missing_deletion_vector_file(dv):
    path = dv_index_path(dv)
    os.remove(path)
    with pytest.raises(MissingFileError) as err:
        fresh(dv).to_arrow()
    assert path in str(err.value)


def test_undecodable_snapshot_and_schema_files_name_themselves(pk):
    for path in (f"{pk.path}/snapshot/snapshot-1", f"{pk.path}/schema/schema-0"):
        data = open(path, "rb").read()
        open(path, "wb").write(b"\xff" + data[1:])  # not UTF-8: was a bare UnicodeDecodeError
        with pytest.raises(CorruptFileError) as err:
            fresh(pk).to_arrow()
        assert path in str(err.value)
        open(path, "wb").write(data)


def test_truncated_data_file(pk):
    path = data_file_path(pk)
    truncate(path)
    with pytest.raises(CorruptFileError) as err:
        fresh(pk).to_arrow()
    assert path in str(err.value)


def test_garbled_snapshot_file(pk):
    path = f"{pk.path}/snapshot/snapshot-1"
    open(path, "w").write('{"version": 3, "id": 1, "schemaId"')
    with pytest.raises(CorruptFileError) as err:
        fresh(pk).to_arrow()
    assert path in str(err.value)


def test_snapshot_missing_required_fields(pk):
    path = f"{pk.path}/snapshot/snapshot-1"
    obj = json.load(open(path))
    del obj["baseManifestList"]
    open(path, "w").write(json.dumps(obj))
    with pytest.raises(CorruptFileError) as err:
        fresh(pk).to_arrow()
    assert path in str(err.value)


@pytest.mark.parametrize("change, why", [
    ({"id": 7}, "holds snapshot id 7"),
    ({"commitKind": "APPENDX"}, "commitKind 'APPENDX'"),
    ({"commitUser": 5}, "commit_user is 5, not a string"),
    ({"schemaId": "0"}, "schema_id is '0', not an integer"),
])
def test_plausibility_of_a_snapshot_without_our_check(pk, change, why):
    """A snapshot another writer made (no check entry) whose damage still parses as JSON is
    refused, naming the file and what is wrong, instead of being read."""
    from paimon_streaming.json_check import CHECK_KEY
    path = f"{pk.path}/snapshot/snapshot-1"
    obj = json.load(open(path))
    obj["properties"].pop(CHECK_KEY)
    open(path, "w").write(json.dumps(obj))
    assert fresh(pk).to_arrow().num_rows == 3  # as Java writes it: read as before
    obj.update(change)
    open(path, "w").write(json.dumps(obj))
    with pytest.raises(CorruptFileError, match=why) as err:
        fresh(pk).to_arrow()
    assert path in str(err.value)


def test_snapshot_file_holding_a_json_array(pk):
    path = f"{pk.path}/snapshot/snapshot-1"
    open(path, "w").write("[1, 2]")
    with pytest.raises(CorruptFileError, match="JSON object, not list") as err:
        fresh(pk).to_arrow()
    assert path in str(err.value)


def test_deletion_vector_with_an_unknown_magic_number(dv):
    path = rewrite_vector(dv, b"\x00\x00\x00\x07" + b"\x00" * 16)
    with pytest.raises(CorruptFileError, match="unknown magic number") as err:
        fresh(dv).to_arrow()
    assert path in str(err.value)


def test_deletion_vector_replaced_by_another_is_refused(dv):
    """A valid vector of other positions (another file in its place) would hide other rows."""
    import struct
    from pyroaring import BitMap
    from paimon_streaming.deletionvectors import MAGIC32
    path = rewrite_vector(dv, struct.pack(">i", MAGIC32) + BitMap([7]).serialize())
    with pytest.raises(CorruptFileError, match="holds 1 positions but its index manifest entry records 2") as err:
        fresh(dv).to_arrow()
    assert path in str(err.value)


def _rows(ids, v="a") -> pa.Table:
    return pa.table({"id": list(ids), "v": [v] * len(ids)}, schema=SCHEMA)


# (table options, primary key?, the change after the damage: its write loads the damaged vector)
VECTOR_TABLES = {
    "pk": ({"bucket": "1"}, True, lambda t: t.write_arrow(_rows([5], "w"))),     # merged with the new mark
    "append": ({"bucket": "-1"}, False, lambda t: t.delete([("id", "=", 5)])),  # merged with the new mark
    # another file of the bucket gets a vector: the damaged one is copied into the new index file
    "append-copied": ({"bucket": "1", "bucket-key": "id"}, False, lambda t: t.delete([("id", "=", 105)])),
}


@pytest.mark.parametrize("kind", VECTOR_TABLES)
def test_deletion_vector_beyond_its_file_is_never_merged_into_a_new_one(catalog, kind):
    """A CRC-valid vector marking positions past its data file's end (one that belongs to
    another file) is refused by reads, and by every write and compaction that loads it: merged
    or copied into a new index file, it outlived the restore of the damaged one, and the
    deletion it hid was lost (compaction raised a raw IndexError)."""
    options, pk, change = VECTOR_TABLES[kind]
    t = catalog.create_table("db.t", SCHEMA, primary_keys=["id"] if pk else None,
                             options={**options, "deletion-vectors.enabled": "true"})
    t.write_arrow(_rows(range(40)))
    t.compact(full=True)
    if pk:
        t.write_arrow(_rows([1, 2], "b"))
    else:
        t.delete([("id", "<", 2)])
        t.write_arrow(_rows(range(100, 140)))
    before, newest = fresh(t).to_arrow().sort_by("id"), t.snapshot_manager.latest_id()
    (index_file,) = os.listdir(f"{t.path}/index")
    original = open(f"{t.path}/index/{index_file}", "rb").read()
    path = vector_beyond_its_file(t)
    for op in (lambda t: t.to_arrow(), lambda t: t.compact(full=True), change):
        with pytest.raises(CorruptFileError, match="beyond the file's 40 rows") as err:
            op(fresh(t))
        assert path in str(err.value)
    assert fresh(t).snapshot_manager.latest_id() == newest  # nothing committed
    open(path, "wb").write(original)  # restored from a backup: the table is whole again
    assert fresh(t).to_arrow().sort_by("id").equals(before)
