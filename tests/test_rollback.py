"""Rollback to a snapshot or a tag: later snapshots and tags go with the files only they used."""
from __future__ import annotations

import pyarrow as pa
import pytest

from paimon_streaming.errors import SnapshotNotFoundError, TagNotFoundError
from conftest import pypaimon_read, rows_by
from test_expire import files_on_disk, referenced_files

SCHEMA = pa.schema([("id", pa.int64(), False), ("v", pa.string())])


def batch(ids, v="x"):
    return pa.table({"id": list(ids), "v": [v] * len(ids)}, schema=SCHEMA)


def pk_table(catalog, **options):
    # these tests count snapshots: no compaction snapshots in between (sorted runs stay < 10)
    return catalog.create_table("db.t", SCHEMA, primary_keys=["id"],
                                options={"bucket": "2", "num-sorted-run.compaction-trigger": "10", **options})


def history(t, n=5):
    contents = {}
    for i in range(n):
        t.write_arrow(batch(range(i * 2, i * 2 + 4), f"v{i}"))
        contents[t.latest_snapshot().id] = rows_by(t.to_arrow(), "id")
    return contents


def test_rollback_to_snapshot_removes_later_snapshots_tags_and_files(catalog, warehouse):
    t = pk_table(catalog)
    contents = history(t)
    t.create_tag("at2", snapshot_id=2)
    t.create_tag("at4", snapshot_id=4)
    t.compact(full=True)
    assert t.rollback_to(3).id == 3
    assert [s.id for s in t.snapshots()] == [1, 2, 3]
    assert t.tags() == ["at2"]
    assert open(f"{t.path}/snapshot/LATEST").read() == "3"
    assert rows_by(t.to_arrow(), "id") == contents[3]
    assert rows_by(t.to_arrow(tag="at2"), "id") == contents[2]
    assert files_on_disk(t) == referenced_files(t)            # no file of snapshots 4..6 is left
    assert rows_by(pypaimon_read(warehouse, "db.t"), "id") == contents[3]
    t.write_arrow(batch([100], "after"))                      # history continues from 3
    assert t.latest_snapshot().id == 4
    assert rows_by(t.to_arrow(), "id") == rows_by(pa.concat_tables([pa.Table.from_pylist(contents[3], SCHEMA),
                                                                    batch([100], "after")]), "id")


def test_rollback_to_tag_whose_snapshot_expired(catalog):
    t = pk_table(catalog)
    contents = history(t, 6)
    t.create_tag("keep", snapshot_id=2)
    t.create_tag("later", snapshot_id=5)
    t.expire_snapshots(retain_max=2, retain_min=1)
    assert [s.id for s in t.snapshots()] == [5, 6]
    assert t.rollback_to("keep").id == 2
    assert [s.id for s in t.snapshots()] == [2]
    assert t.tags() == ["keep"]
    assert open(f"{t.path}/snapshot/EARLIEST").read() == "2"
    assert "tagCreateTime" not in open(t.snapshot_manager.path(2)).read()
    assert rows_by(t.to_arrow(), "id") == contents[2] == rows_by(t.to_arrow(tag="keep"), "id")
    assert files_on_disk(t) == referenced_files(t)
    t.write_arrow(batch([50]))
    assert [s.id for s in t.snapshots()] == [2, 3]
    from java_oracle import get_oracle                          # Java reads the restored history
    with get_oracle().batch() as b:
        restored = b.read(t.path, snapshot_id=2)
        latest = b.read(t.path)
        snapshots = b.snapshots(t.path)
    assert rows_by(pa.Table.from_pylist(restored.result), "id") == contents[2]
    assert rows_by(pa.Table.from_pylist(latest.result), "id") == rows_by(t.to_arrow(), "id")
    assert [s["id"] for s in snapshots.result] == [2, 3]


def test_rollback_by_id_through_a_tag_and_errors(catalog):
    t = pk_table(catalog)
    contents = history(t, 4)
    t.create_tag("two", snapshot_id=2)
    t.expire_snapshots(retain_max=1, retain_min=1)
    assert t.rollback_to(2).id == 2                           # snapshot 2 expired; the tag holds it
    assert rows_by(t.to_arrow(), "id") == contents[2]
    with pytest.raises(SnapshotNotFoundError, match="cannot roll back .* to snapshot 9"):
        t.rollback_to(9)
    with pytest.raises(TagNotFoundError, match="tag 'nope'"):
        t.rollback_to("nope")
    assert t.rollback_to(2).id == 2                           # already there: nothing changes
    assert rows_by(t.to_arrow(), "id") == contents[2]


def test_rollback_to_a_snapshot_whose_metadata_is_unreadable_changes_nothing(catalog):
    """The snapshot rolled back to decides which files stay: when its manifest list cannot be
    read, the rollback refuses, naming the table, the snapshot and the file, and the table
    keeps every snapshot, tag and file."""
    from paimon_streaming.errors import CorruptFileError
    from paimon_streaming.file_cache import clear_all
    t = pk_table(catalog)
    history(t, 4)
    t.create_tag("at4", snapshot_id=4)
    damaged = t.snapshot(2).base_manifest_list
    with open(f"{t.path}/manifest/{damaged}", "wb") as f:
        f.write(b"not avro")
    clear_all()
    before = files_on_disk(t)
    with pytest.raises(CorruptFileError, match=rf"cannot roll back {t.path} to snapshot 2: its metadata is "
                                               rf"unreadable \(.*{damaged}"):
        t.rollback_to(2)
    assert [s.id for s in t.snapshots()] == [1, 2, 3, 4] and t.tags() == ["at4"]
    assert open(f"{t.path}/snapshot/LATEST").read() == "4"
    assert files_on_disk(t) == before
