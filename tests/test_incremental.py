"""Batch incremental queries (`Table.changes_between`, Java's `incremental-between*`): against
a model of the writes, and against Apache Paimon's Java reader on the same tables."""
from __future__ import annotations

import datetime as dt
import time

import pyarrow as pa
import pytest

from paimon_streaming.errors import InvalidOptionError, SnapshotExpiredError, SnapshotNotFoundError
from paimon_streaming.incremental import IncrementalRange

SCHEMA = pa.schema([pa.field("k", pa.int64(), False), ("v", pa.string())])
DV = {"deletion-vectors.enabled": "true"}


def rows(keys, tag, ops=None):
    data = {"k": pa.array(keys, pa.int64()), "v": [f"{tag}-{k}" for k in keys]}
    if ops is not None:
        data["op"] = ops
    return pa.table(data)


def kinds(table: pa.Table) -> list[tuple]:
    return sorted((r["k"], r["v"], r["kind"]) for r in table.to_pylist())


def plain(table: pa.Table) -> list[tuple]:
    return sorted((r["k"], r["v"]) for r in table.to_pylist())


def java_rows(path, start, end, with_kind=True) -> list[tuple]:
    from java_oracle import get_oracle
    got = get_oracle().read(path, with_row_kind=with_kind, incremental_between=(start, end))
    return sorted((r["k"], r["v"], r["_ROW_KIND"]) if with_kind else (r["k"], r["v"]) for r in got)


def three_commits(catalog, name, options):
    """Snapshots: 1 = +I 1..4; 2 = +U 2, -D 3, +I 5; 3 = +I 6 (plus compactions with DVs)."""
    t = catalog.create_table(f"db.{name}", SCHEMA, primary_keys=["k"], options={"bucket": "2", **options})
    t.write_arrow(rows([1, 2, 3, 4], "a"))
    first = t.latest_snapshot().id
    t.write_arrow(rows([2, 3, 5], "b", ops=["+U", "-D", "+I"]), row_kind_column="op")
    second = t.latest_snapshot().id
    t.write_arrow(rows([6], "c"))
    return t, first, second, t.latest_snapshot().id


@pytest.mark.parametrize("options", [{}, DV], ids=["merge-on-read", "dv"])
def test_delta_between_snapshots_matches_java(catalog, options):
    t, first, second, third = three_commits(catalog, "delta", options)
    assert kinds(t.changes_between(first, second, row_kind_column="kind")) == \
        [(2, "b-2", "+U"), (3, "b-3", "-D"), (5, "b-5", "+I")]
    assert plain(t.changes_between(first, third)) == [(2, "b-2"), (5, "b-5"), (6, "c-6")]
    assert plain(t.changes_between(0, first)) == [(k, f"a-{k}") for k in (1, 2, 3, 4)]
    assert t.changes_between(second, second).num_rows == 0
    if not options:  # Java's batch scans of a DV table skip level 0, so its delta query there is empty
        assert kinds(t.changes_between(first, third, row_kind_column="kind")) == java_rows(t.path, first, third)


def test_changelog_producer_reads_changelog_files(catalog):
    t, first, second, third = three_commits(catalog, "clog", {**DV, "changelog-producer": "lookup"})
    want = [(2, "a-2", "-U"), (2, "b-2", "+U"), (3, "a-3", "-D"), (5, "b-5", "+I")]
    assert kinds(t.changes_between(first, second, row_kind_column="kind")) == want
    assert kinds(t.changes_between(first, third, row_kind_column="kind")) == java_rows(t.path, first, third)
    assert plain(t.changes_between(first, second)) == [(2, "b-2"), (5, "b-5")]
    # delta mode reads what was written instead
    assert kinds(t.changes_between(first, second, mode="delta", row_kind_column="kind")) == \
        [(2, "b-2", "+U"), (3, "b-3", "-D"), (5, "b-5", "+I")]


@pytest.mark.parametrize("options", [{}, DV], ids=["merge-on-read", "dv"])
def test_diff_between_tags_per_key(catalog, options):
    t = catalog.create_table("db.diff", SCHEMA, primary_keys=["k"], options={"bucket": "2", **options})
    t.write_arrow(rows([1, 2, 3, 4], "a"))
    t.create_tag("t1")
    t.write_arrow(rows([2, 3, 5], "b", ops=["+U", "-D", "+I"]), row_kind_column="op")
    t.write_arrow(rows([2], "c"))
    t.write_arrow(rows([4], "a"))  # rewritten with the same value: no change
    t.compact(full=True)
    t.create_tag("t2")
    got = t.changes_between("t1", "t2", row_kind_column="kind")
    assert kinds(got) == [(2, "a-2", "-U"), (2, "c-2", "+U"), (3, "a-3", "-D"), (5, "b-5", "+I")]
    assert plain(t.changes_between("t1", "t2")) == [(2, "c-2"), (5, "b-5")]
    # Java's diff returns the rows of new and changed keys (-D only to audit_log)
    assert plain(t.changes_between("t1", "t2")) == java_rows(t.path, "t1", "t2", with_kind=False)
    # the same query as a diff of snapshot ids, and between the tags' snapshots as a delta
    t1, t2 = t.tag_manager.snapshot("t1").id, t.tag_manager.snapshot("t2").id
    assert kinds(t.changes_between(t1, t2, mode="diff", row_kind_column="kind")) == kinds(got)
    assert kinds(t.changes_between("t1", "t2", tag_to_snapshot=True, row_kind_column="kind")) == \
        [(2, "b-2", "+U"), (2, "c-2", "+I"), (3, "b-3", "-D"), (4, "a-4", "+I"), (5, "b-5", "+I")]


def test_diff_of_an_append_table_is_a_multiset_difference(catalog):
    """Rows a compaction rewrote are not changes (Java's diff would return them again)."""
    t = catalog.create_table("db.app", SCHEMA, options={"bucket": "-1"})
    t.write_arrow(rows([1, 2, 2], "a"))
    t.create_tag("t1")
    t.write_arrow(rows([2, 3], "a"))
    t.write_arrow(rows([4], "b"))
    t.compact(full=True)
    assert len(t.plan(t.latest_snapshot())[0].files) == 1
    t.create_tag("t2")
    assert kinds(t.changes_between("t1", "t2", row_kind_column="kind")) == \
        [(2, "a-2", "+I"), (3, "a-3", "+I"), (4, "b-4", "+I")]
    assert plain(t.changes_between("t1", "t2", mode="delta")) == [(2, "a-2"), (3, "a-3"), (4, "b-4")]


def test_projection_and_filter(catalog):
    t, first, second, third = three_commits(catalog, "proj", DV)
    got = t.changes_between(first, third, columns=["v"], filter=[("k", ">", 2)])
    assert got.column_names == ["v"] and sorted(got.column("v").to_pylist()) == ["b-5", "c-6"]
    empty = t.changes_between(third, third, columns=["k"], row_kind_column="kind")
    assert empty.num_rows == 0 and empty.column_names == ["k", "kind"]


def test_between_timestamps(catalog):
    t = catalog.create_table("db.ts", SCHEMA, primary_keys=["k"], options={"bucket": "1"})
    t.write_arrow(rows([1], "a"))
    time.sleep(0.02)
    after_first = dt.datetime.now()
    time.sleep(0.02)
    t.write_arrow(rows([2], "a"))
    t.write_arrow(rows([3], "a"))
    time.sleep(0.02)
    after_third = dt.datetime.now()
    time.sleep(0.02)
    t.write_arrow(rows([4], "a"))
    assert plain(t.changes_between(after_first, after_third)) == [(2, "a-2"), (3, "a-3")]
    assert plain(t.changes_between(after_first, after_third, mode="diff")) == [(2, "a-2"), (3, "a-3")]
    before_all = after_first - dt.timedelta(days=1)
    assert plain(t.changes_between(before_all, after_first)) == [(1, "a-1")]
    assert t.changes_between(before_all - dt.timedelta(days=1), before_all).num_rows == 0


def test_to_auto_tag(catalog):
    t = catalog.create_table("db.auto", SCHEMA, primary_keys=["k"],
                             options={"bucket": "1", "tag.creation-period": "daily"})
    t.write_arrow(rows([1], "a"))
    t.create_tag("2024-12-01")
    t.write_arrow(rows([2], "a"))
    t.create_tag("2024-12-02")
    t.write_arrow(rows([3], "a"))
    t.create_tag("2024-12-04")

    def read(tag):
        return plain(t.read_incremental(IncrementalRange(to_auto_tag=tag)))
    assert read("2024-12-01") == [] and read("2024-12-03") == []
    assert read("2024-12-02") == [(2, "a-2")]
    assert read("2024-12-04") == [(3, "a-3")]
    with pytest.raises(InvalidOptionError, match="not an automatic tag"):
        read("latest")


def test_bad_ranges_are_refused(catalog):
    t, first, second, third = three_commits(catalog, "bad", {})
    with pytest.raises(InvalidOptionError, match="before start"):
        t.changes_between(third, first)
    with pytest.raises(InvalidOptionError, match="neither two tags"):
        t.changes_between("nope", "t2")
    with pytest.raises(SnapshotNotFoundError, match="does not exist"):
        t.changes_between(first, third + 5)
    with pytest.raises(InvalidOptionError, match="scan-mode"):
        t.changes_between(first, third, mode="everything")
    with pytest.raises(TypeError):
        t.changes_between(first, dt.datetime.now())
    t.expire_snapshots(retain_max=1, retain_min=1)
    with pytest.raises(SnapshotExpiredError, match="has expired"):
        t.changes_between(first, third)
    assert plain(t.changes_between(third - 1, third)) == [(6, "c-6")]
