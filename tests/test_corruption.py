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


def _rewrite_vector(t: ps.Table, body: bytes) -> str:
    """Put `body` (magic + bitmap) in place of the table's deletion vector, with a valid CRC."""
    import struct
    import zlib
    scan = t.new_commit().index_manifest
    (entry,) = [e for e in scan.read(t.latest_snapshot().index_manifest) if e.index_file.dv_ranges]
    (meta,) = entry.index_file.dv_ranges
    path = f"{t.path}/index/{entry.index_file.file_name}"
    data = open(path, "rb").read()
    record = struct.pack(">i", len(body)) + body + struct.pack(">I", zlib.crc32(body))
    padding = len(data) - meta.offset - len(record)  # the file keeps the size the index manifest records
    assert padding >= 0
    open(path, "wb").write(data[:meta.offset] + record + b"\x00" * padding)
    return path


def test_deletion_vector_with_an_unknown_magic_number(dv):
    path = _rewrite_vector(dv, b"\x00\x00\x00\x07" + b"\x00" * 16)
    with pytest.raises(CorruptFileError, match="unknown magic number") as err:
        fresh(dv).to_arrow()
    assert path in str(err.value)


def test_deletion_vector_replaced_by_another_is_refused(dv):
    """A valid vector of other positions (another file in its place) would hide other rows."""
    import struct
    from pyroaring import BitMap
    from paimon_streaming.deletionvectors import MAGIC32
    path = _rewrite_vector(dv, struct.pack(">i", MAGIC32) + BitMap([7]).serialize())
    with pytest.raises(CorruptFileError, match="holds 1 positions but its index manifest entry records 2") as err:
        fresh(dv).to_arrow()
    assert path in str(err.value)
