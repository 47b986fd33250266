"""The catalog over pyarrow filesystems other than the local one, and format options."""
from __future__ import annotations

import os

import pyarrow as pa
import pyarrow.fs as pafs
import pytest

import paimon_streaming as ps
from conftest import pypaimon_read, rows_by

SCHEMA = pa.schema([("id", pa.int64(), False), ("v", pa.string())])


def test_catalog_over_a_non_local_filesystem(tmp_path, warehouse):
    """A SubTreeFileSystem is not LocalFileSystem, so the generic (object-store) code paths run."""
    os.makedirs(warehouse)
    fs = pafs.SubTreeFileSystem(warehouse, pafs.LocalFileSystem())
    cat = ps.Catalog("", filesystem=fs)
    t = cat.create_table("db.t", SCHEMA, primary_keys=["id"], options={"bucket": "2"})
    t.write_arrow(pa.table({"id": [1, 2, 3], "v": ["a", "b", "c"]}))
    t.write_arrow(pa.table({"id": [2], "v": ["b2"]}))
    assert not t.file_io.is_local
    assert rows_by(t.to_arrow(), "id") == [{"id": 1, "v": "a"}, {"id": 2, "v": "b2"}, {"id": 3, "v": "c"}]
    assert cat.list_tables("db") == ["t"]
    # the same files read through the local path and by pypaimon
    assert rows_by(ps.Catalog(warehouse).get_table("db.t").to_arrow(), "id") == rows_by(t.to_arrow(), "id")
    assert rows_by(pypaimon_read(warehouse, "db.t"), "id") == rows_by(t.to_arrow(), "id")


def test_small_remote_files_are_fetched_whole_and_still_checked(tmp_path, warehouse, monkeypatch):
    """On a remote store a data file of known size up to REMOTE_WHOLE_FILE_BYTES is read in one
    request (no metadata lookup, footer read and column reads); the size in its manifest entry is
    still verified, and a larger file is read in place."""
    from paimon_streaming import fileio
    from paimon_streaming.errors import CorruptFileError
    os.makedirs(warehouse)
    fs = pafs.SubTreeFileSystem(warehouse, pafs.LocalFileSystem())
    t = ps.Catalog("", filesystem=fs).create_table("db.t", SCHEMA, primary_keys=["id"], options={"bucket": "1"})
    t.write_arrow(pa.table({"id": list(range(1000)), "v": [f"v{i}" for i in range(1000)]}))
    opened: list[type] = []
    original = fileio.FileIO.open_input_file

    def recording(self, path, size=None):
        source = original(self, path, size)
        if path.endswith(".parquet"):
            opened.append(type(source))
        return source
    monkeypatch.setattr(fileio.FileIO, "open_input_file", recording)
    assert t.to_arrow().num_rows == 1000
    assert opened == [pa.BufferReader]  # fetched whole
    monkeypatch.setattr(fileio, "REMOTE_WHOLE_FILE_BYTES", 10)
    assert t.to_arrow().num_rows == 1000
    assert len(opened) == 2 and opened[1] is not pa.BufferReader  # read in place
    monkeypatch.undo()
    [data_file] = [p for p in _files(warehouse) if p.endswith(".parquet")]
    with open(data_file, "ab") as f:
        f.write(b"appended")
    with pytest.raises(CorruptFileError, match=f"{os.path.basename(data_file)} has .* bytes but its manifest"):
        t.to_arrow()


def _files(root) -> list[str]:
    return [os.path.join(d, n) for d, _, names in os.walk(root) for n in names]


@pytest.mark.parametrize("compression", ["snappy", "none", "lz4", "gzip"])
@pytest.mark.parametrize("manifest_compression", ["null", "deflate"])
def test_compression_options(catalog, warehouse, compression, manifest_compression):
    t = catalog.create_table("db.c", SCHEMA, primary_keys=["id"],
                             options={"bucket": "1", "file.compression": compression,
                                      "manifest.compression": manifest_compression})
    t.write_arrow(pa.table({"id": [1, 2], "v": ["a", None]}))
    assert rows_by(t.to_arrow(), "id") == [{"id": 1, "v": "a"}, {"id": 2, "v": None}]
    assert rows_by(pypaimon_read(warehouse, "db.c"), "id") == rows_by(t.to_arrow(), "id")


def test_file_suffix_include_compression(catalog, warehouse):
    t = catalog.create_table("db.sfx", SCHEMA, primary_keys=["id"],
                             options={"bucket": "1", "file.suffix.include.compression": "true"})
    t.write_arrow(pa.table({"id": [1], "v": ["a"]}))
    names = os.listdir(f"{t.path}/bucket-0")
    assert len(names) == 1 and names[0].endswith(".zst.parquet")
    assert t.to_arrow().to_pylist() == [{"id": 1, "v": "a"}]
    assert pypaimon_read(warehouse, "db.sfx").to_pylist() == [{"id": 1, "v": "a"}]


def test_a_store_without_atomic_create_refuses_to_commit(monkeypatch):
    """Never the racy check-then-rename by default: a filesystem with no create-if-absent
    (here pyarrow's in-memory mock) refuses, naming the store and the supported ones, until
    the user asserts a single committer per table."""
    from paimon_streaming.stores import SINGLE_COMMITTER_ENV, UnsupportedStoreError
    monkeypatch.delenv(SINGLE_COMMITTER_ENV, raising=False)
    cat = ps.Catalog("wh", filesystem=pafs._MockFileSystem())
    with pytest.raises(UnsupportedStoreError, match="'mock' filesystem.*S3.*PAIMON_SINGLE_COMMITTER"):
        cat.create_table("db.t", SCHEMA, primary_keys=["id"], options={"bucket": "1"})
    monkeypatch.setenv(SINGLE_COMMITTER_ENV, "true")
    cat = ps.Catalog("wh", filesystem=pafs._MockFileSystem())
    t = cat.create_table("db.t", SCHEMA, primary_keys=["id"], options={"bucket": "1"})
    t.write_arrow(pa.table({"id": [1, 2], "v": ["a", "b"]}))
    assert not t.snapshot_manager.try_publish(t.snapshot(1))  # a taken id is still never replaced
    assert rows_by(t.to_arrow(), "id") == [{"id": 1, "v": "a"}, {"id": 2, "v": "b"}]
