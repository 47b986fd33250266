"""Batch incremental queries (`Table.changes_between`, Java's `incremental-between*`): against
a model of the writes, and against Apache Paimon's Java reader on the same tables."""
from __future__ import annotations

import datetime as dt
import time

import pyarrow as pa
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from paimon_streaming.errors import (InvalidOptionError, SnapshotExpiredError, SnapshotNotFoundError,
                                     UnsupportedTypeError)
from paimon_streaming.incremental import IncrementalRange
from paimon_streaming.table import Table

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


ops = st.lists(st.tuples(st.sampled_from(["upsert", "upsert", "delete", "compact"]),
                         st.lists(st.integers(0, 25), min_size=1, max_size=12)), min_size=2, max_size=8)


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(ops=ops, options=st.sampled_from([{}, DV, {"bucket": "-1"}]), data=st.data())
def test_diff_matches_a_model_of_the_states(ops, options, data):
    """A diff between any two snapshots is the per-key (append tables: per-row) difference of
    the table's states at them, whatever compactions ran in between."""
    import tempfile
    from paimon_streaming.catalog import Catalog
    append = options.get("bucket") == "-1"
    t = Catalog(tempfile.mkdtemp()).create_table(
        "db.m", SCHEMA, primary_keys=[] if append else ["k"],
        options={"bucket": "2", "num-sorted-run.compaction-trigger": "2", **options})
    states = [(0, {} if not append else [])]
    for step, (op, keys) in enumerate(ops):
        keys = sorted(set(keys))
        if op == "compact":
            t.compact(full=step % 2 == 0)
        elif op == "delete" and not append:
            t.write_arrow(rows(keys, f"d{step}", ["-D"] * len(keys)), row_kind_column="op")
        else:
            t.write_arrow(rows(keys, f"u{step}"))
        state = sorted((r["k"], r["v"]) for r in t.to_arrow().to_pylist())
        latest = t.latest_snapshot()
        states.append((0 if latest is None else latest.id, state if append else dict(state)))
    i, j = sorted(data.draw(st.lists(st.integers(0, len(states) - 1), min_size=2, max_size=2, unique=True)))
    (a, before), (b, after) = states[i], states[j]
    if a == b:
        return
    got = kinds(t.changes_between(a, b, mode="diff", row_kind_column="kind"))
    if append:
        from collections import Counter
        plus, minus = Counter(after) - Counter(before), Counter(before) - Counter(after)
        want = sorted([(k, v, "+I") for (k, v), n in plus.items() for _ in range(n)] +
                      [(k, v, "-D") for (k, v), n in minus.items() for _ in range(n)])
    else:
        want = sorted([(k, v, "+I") for k, v in after.items() if k not in before] +
                      [(k, v, "-D") for k, v in before.items() if k not in after] +
                      [x for k, v in after.items() if k in before and before[k] != v
                       for x in ((k, before[k], "-U"), (k, v, "+U"))])
    assert got == want


NESTED = pa.schema([pa.field("k", pa.int64(), False), ("r", pa.struct([("a", pa.int64()), ("b", pa.string())])),
                    ("l", pa.list_(pa.int64()))])


def nested_rows(ks, rs, ls):
    return pa.table({"k": pa.array(ks, pa.int64()), "r": pa.array(rs, NESTED.field("r").type),
                     "l": pa.array(ls, NESTED.field("l").type)}, schema=NESTED)


@pytest.mark.parametrize("keyed", [True, False], ids=["primary-key", "append"])
def test_diff_compares_nested_values(catalog, keyed):
    """A diff of ROW and ARRAY columns (which Arrow cannot compare element-wise): an unchanged
    nested value is no change, a changed nested field or element is one."""
    t = catalog.create_table("db.nested", NESTED, primary_keys=["k"] if keyed else None,
                             options={"bucket": "1"} if keyed else {"bucket": "-1"})
    t.write_arrow(nested_rows([1, 2, 3], [{"a": 1, "b": "x"}, {"a": 2, "b": None}, None], [[1], [2, 3], None]))
    t.create_tag("t1")
    if keyed:
        t.write_arrow(nested_rows([1, 2, 3], [{"a": 1, "b": "x"}, {"a": 2, "b": "y"}, None], [[1], [2, 3], [4]]))
        want = [(2, {"a": 2, "b": None}, [2, 3], "-U"), (2, {"a": 2, "b": "y"}, [2, 3], "+U"),
                (3, None, None, "-U"), (3, None, [4], "+U")]
    else:
        t.write_arrow(nested_rows([2], [{"a": 2, "b": None}], [[2, 3]]))
    t.create_tag("t2")
    if not keyed:  # a multiset difference needs the rows' binary encoding: refused, never a wrong diff
        with pytest.raises(UnsupportedTypeError, match="ROW<a BIGINT, b STRING>"):
            t.changes_between("t1", "t2")
        return
    got = t.changes_between("t1", "t2", row_kind_column="kind").to_pylist()
    assert sorted(((r["k"], r["r"], r["l"], r["kind"]) for r in got), key=lambda x: (x[0], x[3] == "+U")) == want


def test_a_diff_compares_whole_rows_as_java_does(catalog):
    """A diff compared only the requested columns (a key whose value changed vanished from a
    read of the key), compared floats by value (an untouched NaN came as -U/+U, 0.0 to -0.0
    was no change), and filtered after projecting (a filter on another column failed)."""
    schema = pa.schema([pa.field("k", pa.int64(), False), ("v", pa.string()), ("d", pa.float64()),
                        ("l", pa.list_(pa.float32()))])
    t = catalog.create_table("db.whole", schema, primary_keys=["k"], options={"bucket": "1"})
    t.write_arrow(pa.table({"k": [1, 2, 3, 4], "v": ["a", "a", "a", "a"], "d": [1.0, float("nan"), 0.0, 1.0],
                            "l": [[1.0], [float("nan")], [0.0], [float("nan")]]}, schema=schema))
    t.create_tag("t1")
    t.write_arrow(pa.table({"k": [1, 2, 3, 4], "v": ["b", "a", "a", "a"], "d": [1.0, float("nan"), -0.0, 1.0],
                            "l": [[1.0], [float("nan")], [0.0], [-0.0]]}, schema=schema))
    t.create_tag("t2")
    assert sorted(r["k"] for r in t.changes_between("t1", "t2", columns=["k"]).to_pylist()) == [1, 3, 4]
    got = t.changes_between("t1", "t2", columns=["v"], filter=[("k", "=", 1)], row_kind_column="kind").to_pylist()
    assert sorted((r["v"], r["kind"]) for r in got) == [("a", "-U"), ("b", "+U")]


def test_reversed_tag_and_time_ranges_are_refused(catalog):
    t, first, second, third = three_commits(catalog, "rev", {})
    t.create_tag("old", snapshot_id=first)
    t.create_tag("new", snapshot_id=third)
    assert plain(t.changes_between("old", "new")) == [(2, "b-2"), (5, "b-5"), (6, "c-6")]
    with pytest.raises(InvalidOptionError, match="end tag 'old' .* is older than start tag 'new'"):
        t.changes_between("new", "old")
    now = dt.datetime.now()
    with pytest.raises(InvalidOptionError, match="is before start time"):
        t.changes_between(now, now - dt.timedelta(seconds=1))
    for bad in ({}, {"between": ("1", "2"), "to_auto_tag": "x"}):
        with pytest.raises(InvalidOptionError, match="takes one of incremental-between, "):
            IncrementalRange(**bad)


def test_changelog_mode_reads_javas_long_lived_changelog_of_expired_snapshots(warehouse):
    """Java moves an expired snapshot's changelog to changelog/changelog-<id>
    (`changelog.num-retained.max` above `snapshot.num-retained.max`): a changelog-mode
    incremental query over those ids reads it (the changes, in full) rather than refusing them as
    expired; Java 1.4.2 refuses the range (its snapshots are gone)."""
    import paimon_streaming as ps
    from java_oracle import JavaRefusal, get_oracle
    java = get_oracle()
    path = f"{warehouse}/db.db/longcl"
    options = {"bucket": "1", "changelog-producer": "input", "snapshot.num-retained.min": "1",
               "snapshot.num-retained.max": "2", "changelog.num-retained.max": "50"}
    with java.batch() as b:
        b.create_table(path, [{"name": "k", "type": "BIGINT NOT NULL"}, {"name": "v", "type": "STRING"}],
                       primary_keys=["k"], options=options)
        for i in range(5):
            b.write(path, [{"k": k, "v": f"v{i}"} for k in (i, i + 1)])
    t = ps.Table.open(path)
    assert t.snapshot_manager.earliest_id() > 2, "Java expired the first snapshots"
    got = t.changes_between(1, 3, mode="changelog", row_kind_column="kind")
    want = [(1, "v1", "+I"), (2, "v1", "+I"), (2, "v2", "+I"), (3, "v2", "+I")]
    assert sorted((r["k"], r["v"], r["kind"]) for r in got.to_pylist()) == sorted(want)
    with java.batch() as b:
        javas = b.read(path, with_row_kind=True, incremental_between=(1, 3),
                       options={"incremental-between-scan-mode": "changelog"}, catch_error=True)
    assert isinstance(javas.result, JavaRefusal) and "out of available snapshotId range" in javas.result.error
    with pytest.raises(SnapshotExpiredError, match="has expired"):  # delta mode needs the snapshots' own files
        t.changes_between(1, 3, mode="delta")


@pytest.mark.parametrize("options", [DV, {"merge-engine": "first-row", "ignore-delete": "true"}],
                         ids=["dv", "first-row"])
def test_a_diff_across_javas_rescale_is_refused_though_its_files_are_at_level_0(catalog, options):
    """Java's rescale (ALTER bucket, then INSERT OVERWRITE) leaves its OVERWRITE snapshot with
    level-0 files only, which deletion-vector and first-row readers skip; the bucket counts were
    compared over the read plans, which left them out, so a diff ending there answered every key
    as deleted where Java refuses (InconsistentTagBucketException)."""
    from java_oracle import get_oracle
    java = get_oracle()
    t, first, _, _ = three_commits(catalog, "rescaled", options)
    java.alter(t.path, [{"kind": "set-option", "key": "bucket", "value": "1"}])
    java.write(t.path, [{"k": 7, "v": "j"}], overwrite=True)
    t = Table.open(t.path)
    overwrite = next(s.id for s in t.snapshots() if s.commit_kind == "OVERWRITE")
    for end in (overwrite, t.latest_snapshot().id):
        with pytest.raises(InvalidOptionError, match="bucket count of a partition changed"):
            t.changes_between(first, end, mode="diff")
