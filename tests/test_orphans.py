"""Orphan file cleanup: unreferenced files older than the threshold go, everything else stays."""
from __future__ import annotations

import os
import time

import pyarrow as pa

from conftest import rows_by
from test_expire import files_on_disk, referenced_files

SCHEMA = pa.schema([("id", pa.int64(), False), ("v", pa.string()), ("p", pa.string())])
DAY = 24 * 3600


def batch(ids, p="a", v="x"):
    return pa.table({"id": list(ids), "v": [v] * len(ids), "p": [p] * len(ids)}, schema=SCHEMA)


def age(path: str, seconds: float) -> None:
    then = time.time() - seconds
    os.utime(path, (then, then))


def stray(path: str, seconds_old: float) -> str:
    os.makedirs(os.path.dirname(path), exist_ok=True)
    with open(path, "wb") as f:
        f.write(b"junk")
    age(path, seconds_old)
    return path


def test_old_unreferenced_files_go_new_ones_and_referenced_stay(catalog):
    t = catalog.create_table("db.t", SCHEMA, primary_keys=["id", "p"], partition_keys=["p"],
                             options={"bucket": "2", "deletion-vectors.enabled": "true"})
    t.write_arrow(batch(range(10), "a"))
    t.write_arrow(batch(range(5), "b"))
    t.create_tag("v1")
    t.write_arrow(batch(range(3, 12), "a", "y"))
    expected = rows_by(t.to_arrow(), "id", "p")
    for f in files_on_disk(t):                                     # everything real is old too
        age(f, 2 * DAY)
    bucket = f"{t.path}/p=a/bucket-0"
    old = [stray(f"{bucket}/data-dead-0.parquet", 2 * DAY),
           stray(f"{t.path}/manifest/manifest-dead-0", 2 * DAY),
           stray(f"{t.path}/manifest/manifest-list-dead-0", 2 * DAY),
           stray(f"{t.path}/index/index-dead-0", 2 * DAY),
           stray(f"{t.path}/snapshot/.snapshot-9.1234.tmp", 2 * DAY),
           stray(f"{t.path}/tag/.tag-x.1234.tmp", 2 * DAY)]
    young = [stray(f"{bucket}/data-inflight-0.parquet", 60),
             stray(f"{t.path}/manifest/manifest-inflight-0", 60)]
    dry = t.remove_orphan_files(dry_run=True)
    assert dry.paths == sorted(old) and dry.bytes == 4 * len(old)
    assert all(os.path.exists(p) for p in old)
    result = t.remove_orphan_files()
    assert result.paths == sorted(old)
    assert not any(os.path.exists(p) for p in old) and all(os.path.exists(p) for p in young)
    assert rows_by(t.to_arrow(), "id", "p") == expected and t.to_arrow(tag="v1").num_rows == 15
    # an explicit threshold reaches the young ones too
    assert t.remove_orphan_files(older_than=int(time.time() * 1000) + 1000).paths == sorted(young)
    assert files_on_disk(t) == referenced_files(t)
    assert rows_by(t.to_arrow(), "id", "p") == expected


def test_files_of_a_failed_commit_are_orphans(catalog):
    t = catalog.create_table("db.t", SCHEMA)
    t.write_arrow(batch([1]))
    written = set(files_on_disk(t))
    t.write_messages(batch([2]))                                    # written, never committed
    leftovers = files_on_disk(t) - written
    assert leftovers
    assert t.remove_orphan_files().paths == []                      # too young
    assert t.remove_orphan_files(older_than=int(time.time() * 1000) + 1000).paths == sorted(leftovers)
    assert t.to_arrow().num_rows == 1


def test_cleanup_that_cannot_know_every_used_file_deletes_nothing(catalog, monkeypatch):
    """Orphan cleanup deletes a file only when nothing may use it: a snapshot whose manifest
    list is unreadable, a branch without a schema, or a listing of the snapshot directory that
    misses the latest snapshot each stop it with an error naming the cause, nothing deleted."""
    import pytest
    from paimon_streaming.errors import CorruptFileError, UnsupportedOperationError
    from paimon_streaming.file_cache import clear_all
    t = catalog.create_table("db.t", SCHEMA, primary_keys=["id"], options={"bucket": "1"})
    for i in range(3):
        t.write_arrow(batch([i]))
    junk = stray(f"{t.path}/bucket-0/data-junk.parquet", 2 * DAY)
    for path in files_on_disk(t):
        age(path, 2 * DAY)
    before = files_on_disk(t)

    listed = t.file_io.list_names
    monkeypatch.setattr(t.file_io, "list_names", lambda path: [
        n for n in listed(path) if not (path.endswith("/snapshot") and n == "snapshot-3")])
    with pytest.raises(OSError, match=r"listing .*/snapshot gave snapshot ids 1\.\.2, but snapshot 3 exists"):
        t.remove_orphan_files()
    monkeypatch.undo()
    assert files_on_disk(t) == before

    t.create_tag("t1", 1)
    t.create_branch("dev", tag="t1")
    schema_dir = f"{t.path}/branch/branch-dev/schema"
    saved = {n: open(f"{schema_dir}/{n}", "rb").read() for n in os.listdir(schema_dir)}
    for n in saved:
        os.remove(f"{schema_dir}/{n}")
    with pytest.raises(UnsupportedOperationError, match=r"branch .*branch-dev has no schema: orphan file cleanup"):
        t.remove_orphan_files()
    assert files_on_disk(t) == before
    for n, data in saved.items():
        with open(f"{schema_dir}/{n}", "wb") as f:
            f.write(data)

    damaged = f"{t.path}/manifest/{t.snapshot(2).delta_manifest_list}"
    with open(damaged, "wb") as f:
        f.write(b"not avro")
    clear_all()
    with pytest.raises(CorruptFileError, match=os.path.basename(damaged)):
        t.remove_orphan_files()
    assert files_on_disk(t) == before and os.path.exists(junk)


def test_a_cutoff_in_the_future_is_refused(catalog):
    """A naive UTC time read as local time (8 h ahead in UTC-8) deleted the files of a write not
    yet committed; its commit then referenced missing files. Java refuses such a cutoff too."""
    import datetime as dt
    import pytest
    t = catalog.create_table("db.t", SCHEMA, partition_keys=["p"])
    t.write_arrow(batch([1]))
    pending = t.write_messages(batch([2]))
    with pytest.raises(ValueError, match="in the future"):
        t.remove_orphan_files(older_than=dt.datetime.now() + dt.timedelta(hours=8))
    t.new_commit().commit(pending, "u", 1)
    assert sorted(t.to_arrow().column("id").to_pylist()) == [1, 2]
