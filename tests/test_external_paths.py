"""Data files under external paths (`data-file.external-paths`), as Java 1.4.2 writes them.

Java's writers put a bucket's new files under one of the external roots (by strategy) and
record the full URI in the manifest; we must read those, write our own the same way (so Java
reads ours), and expire, clean up and check them where they are.
"""
from __future__ import annotations

import os
import time

import pyarrow as pa
import pytest

import paimon_streaming as ps
from paimon_streaming.check import check_table
from paimon_streaming.external_paths import ExternalPaths, entropy_dirs, java_uri
from paimon_streaming.fileio import FileIO
from paimon_streaming.scan import TableScan
from conftest import pypaimon_read

try:
    from java_oracle import get_oracle
except ImportError:  # pragma: no cover
    from tests.java_oracle import get_oracle

SCHEMA = pa.schema([("id", pa.int64(), False), ("v", pa.string()), ("p", pa.string())])
FIELDS = [{"name": "id", "type": "BIGINT NOT NULL"}, {"name": "v", "type": "STRING"}, {"name": "p", "type": "STRING"}]


@pytest.fixture(scope="module")
def java():
    return get_oracle()


def rows(ids, tag):
    return pa.table({"id": list(ids), "v": [f"{tag}{i}" for i in ids], "p": [f"p{i % 2}" for i in ids]},
                    schema=SCHEMA)


def strategy_options(strategy: str, roots: list[str]) -> dict[str, str]:
    options = {"data-file.external-paths": ",".join(f"file://{r}" for r in roots),
               "data-file.external-paths.strategy": strategy}
    if strategy == "weight-robin":
        options["data-file.external-paths.weights"] = ",".join(str(i + 1) for i in range(len(roots)))
    if strategy == "specific-fs":
        options["data-file.external-paths"] += ",s3://not-this-one/x"
        options["data-file.external-paths.specific-fs"] = "file"
    return options


def files_under(root) -> list[str]:
    return sorted(os.path.join(d, f) for d, _, fs in os.walk(root) for f in fs)


def data_files_of(table) -> list:
    return [e.file for e in TableScan(table.file_io, table.path, table.schema).live_entries(table.latest_snapshot())]


def by_id(rows_):
    return sorted(rows_, key=lambda r: r["id"])


@pytest.mark.parametrize("strategy", ["round-robin", "entropy-inject", "weight-robin", "specific-fs"])
def test_java_and_we_read_each_others_external_files(java, catalog, warehouse, tmp_path, strategy):
    """Each of Java's strategies, a primary-key table with deletion vectors and lookup
    changelogs, partitioned, index files beside the data: what we write lands under the
    external roots only, and Java (and pypaimon) read it; what Java writes (into our table and
    its own) we read; all answer the same."""
    roots = [str(tmp_path / "cold1"), str(tmp_path / "cold2")]
    options = {"bucket": "2", "deletion-vectors.enabled": "true", "changelog-producer": "lookup",
               "index-file-in-data-file-dir": "true", **strategy_options(strategy, roots)}
    ours = catalog.create_table("db.ours", SCHEMA, primary_keys=["id", "p"], partition_keys=["p"], options=options)
    ours.write_arrow(rows(range(20), "a"))
    ours.write_arrow(rows(range(0, 30, 3), "b"))
    theirs = str(tmp_path / "java.db" / "t")
    with java.batch() as b:
        b.create_table(theirs, FIELDS, primary_keys=["id", "p"], partition_keys=["p"], options=options)
        b.write(theirs, rows(range(20), "a").to_pylist())
        b.write(theirs, rows(range(0, 30, 3), "b").to_pylist())
        b.write(ours.path, rows(range(5, 9), "j").to_pylist())
    ours.refresh()
    ours.write_arrow(rows(range(7, 12), "c"))
    with java.batch() as b:
        java_read = b.read(ours.path)

    expected = {r["id"]: r for r in rows(range(20), "a").to_pylist()}
    for batch in (rows(range(0, 30, 3), "b"), rows(range(5, 9), "j"), rows(range(7, 12), "c")):
        expected.update({r["id"]: r for r in batch.to_pylist()})
    assert by_id(ours.to_arrow().to_pylist()) == by_id(expected.values())
    assert by_id(java_read.result) == by_id(expected.values())
    assert by_id(pypaimon_read(warehouse, "db.ours").to_pylist()) == by_id(expected.values())
    java_table = ps.Table.open(theirs)
    twice = {r["id"]: r for r in rows(range(20), "a").to_pylist()} | \
        {r["id"]: r for r in rows(range(0, 30, 3), "b").to_pylist()}
    assert by_id(java_table.to_arrow().to_pylist()) == by_id(twice.values())

    # nothing but metadata in the tables' own directories: data, changelog and index files are external
    for table_dir in (ours.path, theirs):
        assert not [f for f in files_under(table_dir) if "/bucket-" in f], table_dir
    for table in (ours, java_table):
        files = data_files_of(table)
        assert files and all(f.external_path and f.external_path.startswith(tuple(f"file:{r}/" for r in roots))
                             for f in files)
        assert all(os.path.exists(f.external_path[len("file:"):]) for f in files)
        if strategy == "entropy-inject":  # Java's hash directories are ours too
            for f in files:
                assert f.external_path.endswith(f"/{entropy_dirs(f.file_name)}/{f.file_name}"), f.external_path
    assert all(files_under(r) for r in roots) or strategy == "weight-robin"  # random picks may skip one
    assert check_table(ours).ok and check_table(java_table).ok


def test_expiration_orphan_cleanup_and_check_follow_external_files(catalog, tmp_path):
    roots = [str(tmp_path / "cold1"), str(tmp_path / "cold2")]
    t = catalog.create_table("db.t", SCHEMA, primary_keys=["id", "p"], partition_keys=["p"],
                             options={"bucket": "1", "deletion-vectors.enabled": "true",
                                      **strategy_options("entropy-inject", roots)})
    for i in range(4):
        t.write_arrow(rows(range(10), f"v{i}-"))
    t.compact(full=True)
    live = {f.external_path for f in data_files_of(t)}
    written = {f"file:{p}" for r in roots for p in files_under(r)}
    assert live < written  # compaction left replaced files behind, still referenced by old snapshots

    t.expire_snapshots(retain_max=1, retain_min=1, older_than=int(time.time() * 1000) + 60_000)
    assert {f"file:{p}" for r in roots for p in files_under(r)} == live
    assert by_id(t.to_arrow().to_pylist()) == by_id(rows(range(10), "v3-").to_pylist())

    # an orphan in an external bucket directory (a killed writer's file), and one deep in a hash directory
    some_live = sorted(live)[0][len("file:"):]
    bucket_dir = some_live.split("/bucket-0/")[0] + "/bucket-0"
    orphans = [f"{bucket_dir}/data-orphan-0.parquet", f"{os.path.dirname(some_live)}/data-orphan-1.parquet"]
    for o in orphans:
        with open(o, "wb") as f:
            f.write(b"x")
    assert sorted(t.remove_orphan_files(older_than=int(time.time() * 1000) + 60_000).paths) == sorted(f"file:{o}" for o in orphans)
    assert {f"file:{p}" for r in roots for p in files_under(r)} == live
    assert by_id(t.to_arrow().to_pylist()) == by_id(rows(range(10), "v3-").to_pylist())

    assert check_table(t).ok
    os.remove(some_live)
    report = check_table(t)
    assert not report.ok and any(some_live in p.message for p in report.errors())


def test_external_path_settings_are_checked(catalog):
    base = {"data-file.external-paths": "file:///cold/a,file:///cold/b"}
    for options, message in [
        ({**base, "data-file.external-paths.strategy": "nearest"}, "expected one of"),
        ({"data-file.external-paths": "/cold/a", "data-file.external-paths.strategy": "round-robin"}, "no scheme"),
        ({**base, "data-file.external-paths.strategy": "specific-fs"}, "specific-fs"),
        ({**base, "data-file.external-paths.strategy": "specific-fs",
          "data-file.external-paths.specific-fs": "s3"}, "no path of scheme 's3'"),
        ({**base, "data-file.external-paths.strategy": "weight-robin",
          "data-file.external-paths.weights": "1,2,3"}, "one weight per path"),
        ({**base, "data-file.external-paths.strategy": "weight-robin",
          "data-file.external-paths.weights": "1,0"}, "positive"),
        ({**base, "data-file.external-paths.strategy": "weight-robin",
          "data-file.external-paths.weights": "1,x"}, "expected positive integers separated by commas"),
    ]:
        with pytest.raises(ps.InvalidOptionError, match=message):
            catalog.create_table("db.bad", SCHEMA, options=options)
    # paths without a strategy stay unused, as in Java
    t = catalog.create_table("db.none", SCHEMA, options=base)
    t.write_arrow(rows(range(3), "a"))
    assert all(f.external_path is None for f in data_files_of(t))


def test_java_path_strings_and_strategies():
    assert java_uri("file:///data/cold/") == "file:/data/cold"
    assert java_uri("s3://bucket/prefix/") == "s3://bucket/prefix"
    assert java_uri("hdfs://nn:8020/x") == "hdfs://nn:8020/x"
    turns = ExternalPaths(("file:/a", "file:/b", "file:/c"), "round-robin")
    picked = [turns.locate("p=1/bucket-0", "data-x.parquet") for _ in range(6)]
    assert sorted(picked[:3]) == ["file:/a/p=1/bucket-0/data-x.parquet", "file:/b/p=1/bucket-0/data-x.parquet",
                                  "file:/c/p=1/bucket-0/data-x.parquet"] and picked[3:] == picked[:3]
    weighted = ExternalPaths(("file:/a", "file:/b"), "weight-robin", (1, 9))
    counts = [weighted.locate("bucket-0", "f").startswith("file:/b/") for _ in range(2000)]
    assert 0.85 < sum(counts) / len(counts) < 0.95
    assert entropy_dirs("data-x.parquet").count("/") == 3 and len(entropy_dirs("data-x.parquet")) == 23


def test_an_external_path_on_a_store_we_cannot_open_is_named(tmp_path):
    file_io, _ = FileIO.for_path(str(tmp_path))
    with pytest.raises(ps.errors.UnsupportedOperationError, match="oss://b/t/bucket-0/data-1.parquet.*'oss'"):
        file_io.open_input_file("oss://b/t/bucket-0/data-1.parquet")
    assert file_io.exists(f"file:{tmp_path}") and file_io.exists(f"file://{tmp_path}")


def test_dropping_a_table_deletes_its_external_paths_as_java_does(catalog, tmp_path):
    """Java's drop deletes the table directory and every external root any schema (any branch)
    names; a root the table never named stays."""
    roots = [tmp_path / "cold1", tmp_path / "cold2", tmp_path / "branch-cold"]
    t = catalog.create_table("db.t", SCHEMA, options=strategy_options("round-robin", [str(r) for r in roots[:2]]))
    t.write_arrow(rows(range(10), "a"))
    t.create_tag("t1")
    b = t.create_branch("b", tag="t1")
    b.update_schema().set_option("data-file.external-paths", f"file://{roots[2]}").commit()
    b.write_arrow(rows(range(3), "b"))
    other = tmp_path / "other"
    other.mkdir()
    (other / "keep").write_bytes(b"x")
    assert (files_under(roots[0]) or files_under(roots[1])) and files_under(roots[2])
    catalog.drop_table("db.t")
    assert not os.path.exists(t.path) and not any(os.path.exists(r) for r in roots)
    assert files_under(other)


@pytest.mark.parametrize("primary_keys", [["id", "p"], []], ids=["dv", "append"])
def test_a_forced_full_compaction_moves_every_file_to_new_external_paths(java, catalog, tmp_path, primary_keys):
    """External paths set on a table that has files: new files go there, and a full compaction
    with `compaction.force-rewrite-all-files` (Java's option for this) rewrites the old ones
    there too, even files a full compaction would leave as they are."""
    options = {"bucket": "1", "deletion-vectors.enabled": "true"} if primary_keys else {}
    t = catalog.create_table("db.m", SCHEMA, primary_keys=primary_keys, partition_keys=["p"], options=options)
    t.write_arrow(rows(range(20), "a"))
    t.compact(full=True)
    assert all(f.external_path is None for f in data_files_of(t))
    cold = tmp_path / "cold"
    with t.update_schema() as update:
        update.set_option("data-file.external-paths", f"file://{cold}")
        update.set_option("data-file.external-paths.strategy", "round-robin")
    before = data_files_of(t)
    t.compact(full=True)
    assert {f.file_name for f in data_files_of(t)} == {f.file_name for f in before}  # nothing to do without it
    t.update_schema().set_option("compaction.force-rewrite-all-files", "true").commit()
    t.compact(full=True)
    files = data_files_of(t)
    assert files and all(f.external_path and f.external_path.startswith(f"file:{cold}/p=") for f in files)
    expected = sorted(rows(range(20), "a").to_pylist(), key=lambda r: r["id"])
    assert by_id(t.to_arrow().to_pylist()) == expected
    assert by_id(java.read(t.path)) == expected
