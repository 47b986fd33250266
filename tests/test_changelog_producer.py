"""changelog-producer input and lookup: the changelog files each batch commits, read back by
the streaming scan, against a model of what changed."""
from __future__ import annotations

import tempfile

import pyarrow as pa
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import paimon_streaming as ps
from paimon_streaming.errors import InvalidOptionError
from paimon_streaming.streaming_scan import CHANGELOG
from conftest import pypaimon_read
from stream_batches import open_stream, snapshot_changes

SCHEMA = pa.schema([pa.field("k", pa.int64(), False), ("v", pa.string()), ("n", pa.int64())])
DV = {"deletion-vectors.enabled": "true"}


def changes_per_snapshot(t: ps.Table, as_read: bool = False) -> list[list[tuple]]:
    """(k, v, n, kind) rows of each snapshot's changelog, from the streaming scan; sorted
    unless `as_read`."""
    ss = open_stream(t, {"scan.mode": "from-snapshot", "scan.snapshot-id": "1"})
    out = []
    for snapshot in t.snapshots():
        assert all(u.kind == CHANGELOG for u in ss.snapshot_units(snapshot.id, False))
        got = [(r["k"], r["v"], r["n"], r["_kind"]) for r in snapshot_changes(ss, snapshot.id, ["k", "v", "n"])]
        out.append(got if as_read else sorted(got))
    return out


def rows(keys, tag, ops=None):
    data = {"k": pa.array(keys, pa.int64()), "v": [None if tag is None else f"{tag}-{k}" for k in keys],
            "n": pa.array(keys, pa.int64())}
    if ops is not None:
        data["op"] = ops
    return pa.table(data)


def test_lookup_changelog_of_inserts_updates_and_deletes(catalog, warehouse):
    t = catalog.create_table("db.lk", SCHEMA, primary_keys=["k"],
                             options={"bucket": "2", **DV, "changelog-producer": "lookup"})
    t.write_arrow(rows([1, 2, 3], "a"))
    t.write_arrow(rows([2, 4, 3, 5], "b", ops=["+U", "+I", "-D", "-D"]), row_kind_column="op")
    t.write_arrow(rows([2, 6], "c"))
    per_snapshot = changes_per_snapshot(t)
    kinds = [s.commit_kind for s in t.snapshots()]
    assert kinds == ["APPEND", "COMPACT"] * 3
    assert per_snapshot[0] == [] and per_snapshot[2] == [] and per_snapshot[4] == []  # APPENDs carry none
    assert per_snapshot[1] == [(1, "a-1", 1, "+I"), (2, "a-2", 2, "+I"), (3, "a-3", 3, "+I")]
    assert per_snapshot[3] == [(2, "a-2", 2, "-U"), (2, "b-2", 2, "+U"), (3, "a-3", 3, "-D"), (4, "b-4", 4, "+I")]
    assert per_snapshot[5] == [(2, "b-2", 2, "-U"), (2, "c-2", 2, "+U"), (6, "c-6", 6, "+I")]
    expected = {1: "a-1", 2: "c-2", 4: "b-4", 6: "c-6"}
    assert {r["k"]: r["v"] for r in t.to_arrow().to_pylist()} == expected
    assert {r["k"]: r["v"] for r in pypaimon_read(warehouse, "db.lk").to_pylist()} == expected


def test_lookup_changelog_with_partial_update_and_row_deduplicate(catalog):
    t = catalog.create_table("db.pu", SCHEMA, primary_keys=["k"],
                             options={"bucket": "1", **DV, "changelog-producer": "lookup",
                                      "merge-engine": "partial-update",
                                      "changelog-producer.row-deduplicate": "true"})
    t.write_arrow(rows([1, 2], "a"))
    t.write_arrow(rows([1], None))           # v stays "a-1", n unchanged: no change at all
    t.write_arrow(rows([2], None).set_column(2, "n", pa.array([20], pa.int64())))  # n changes, v kept
    per_snapshot = changes_per_snapshot(t)
    assert per_snapshot[1] == [(1, "a-1", 1, "+I"), (2, "a-2", 2, "+I")]
    assert per_snapshot[3] == []
    assert per_snapshot[5] == [(2, "a-2", 2, "-U"), (2, "a-2", 20, "+U")]


def test_row_deduplicate_ignores_the_named_fields(catalog):
    """`changelog-producer.row-deduplicate-ignore-fields`: a change in those columns alone makes
    no -U/+U (an updated-at column, say); a change elsewhere still does, carrying them."""
    t = catalog.create_table("db.ignore", SCHEMA, primary_keys=["k"],
                             options={"bucket": "1", **DV, "changelog-producer": "lookup",
                                      "changelog-producer.row-deduplicate": "true",
                                      "changelog-producer.row-deduplicate-ignore-fields": "n"})
    t.write_arrow(rows([1], "a"))
    t.write_arrow(rows([1], "a").set_column(2, "n", pa.array([10], pa.int64())))   # only n changes
    t.write_arrow(rows([1], "b").set_column(2, "n", pa.array([11], pa.int64())))   # v changes
    assert [c for c in changes_per_snapshot(t) if c] == [
        [(1, "a-1", 1, "+I")], [(1, "a-1", 10, "-U"), (1, "b-1", 11, "+U")]]
    assert [r["n"] for r in t.to_arrow().to_pylist()] == [11]


def test_first_row_changelog_has_only_first_versions(catalog):
    t = catalog.create_table("db.fr", SCHEMA, primary_keys=["k"],
                             options={"bucket": "1", "merge-engine": "first-row", "changelog-producer": "lookup"})
    t.write_arrow(rows([1, 2], "a"))
    t.write_arrow(rows([2, 3], "b"))
    per_snapshot = changes_per_snapshot(t)
    assert per_snapshot[1] == [(1, "a-1", 1, "+I"), (2, "a-2", 2, "+I")]
    assert per_snapshot[3] == [(3, "b-3", 3, "+I")]


def test_input_changelog_keeps_every_input_record(catalog):
    t = catalog.create_table("db.in", SCHEMA, primary_keys=["k"],
                             options={"bucket": "1", "changelog-producer": "input"})
    t.write_arrow(rows([1, 2], "a"))
    t.write_arrow(pa.concat_tables([rows([1], "b", ["+U"]), rows([1], "c", ["+U"]), rows([2], "a", ["-D"])]),
                  row_kind_column="op")
    assert changes_per_snapshot(t) == [[(1, "a-1", 1, "+I"), (2, "a-2", 2, "+I")],
                                       [(1, "b-1", 1, "+U"), (1, "c-1", 1, "+U"), (2, "a-2", 2, "-D")]]


def test_full_compaction_producer_is_refused_at_create_and_its_writes_too(catalog):
    """'full-compaction' is not produced here: refused at create; a table made so elsewhere
    (Java) opens, and its writes are refused before anything is written."""
    import dataclasses
    from paimon_streaming.schema import SchemaManager, TableSchema
    with pytest.raises(InvalidOptionError, match="full-compaction"):
        catalog.create_table("db.bad", SCHEMA, primary_keys=["k"],
                             options={"bucket": "1", "changelog-producer": "full-compaction"})
    made = TableSchema.create(SCHEMA, ["k"], options={"bucket": "1"})  # as Java creates it
    made = dataclasses.replace(made, options={**made.options, "changelog-producer": "full-compaction"})
    SchemaManager(catalog.file_io, catalog.table_path("db.java")).create(made)
    t = catalog.get_table("db.java")
    with pytest.raises(InvalidOptionError, match="full-compaction"):
        t.write_arrow(rows([1], "a"))
    assert t.latest_snapshot() is None


def test_force_lookup_where_our_compactions_would_lose_values_is_refused(catalog):
    """'force-lookup' makes Java's reads merge a key's row of the lowest level above 0 only
    (and its compactions look higher levels up to fold them in). Our compactions of a table
    without deletion vectors do not look up: an aggregation's row compacted to level 4 would
    leave the sum at level 5 out of every read. So such tables are refused at create, and the
    write of one Java made is refused before anything is written; where the lowest level's
    row is the answer anyway (deletion vectors, first-row, deduplicate) they are written."""
    import dataclasses
    from paimon_streaming.schema import SchemaManager, TableSchema
    agg = {"merge-engine": "aggregation", "fields.n.aggregate-function": "sum", "force-lookup": "true"}
    for refused in (agg, {"merge-engine": "partial-update", "force-lookup": "true"},
                    {"sequence.field": "n", "force-lookup": "true"}):
        with pytest.raises(InvalidOptionError, match="'force-lookup' = 'true' is supported on deletion-vector"):
            catalog.create_table("db.bad", SCHEMA, primary_keys=["k"], options={"bucket": "1", **refused})
        assert not catalog.table_exists("db.bad")
    for i, ok in enumerate(({**agg, **DV}, {"merge-engine": "first-row", "force-lookup": "true"},
                            {"force-lookup": "true"})):
        t = catalog.create_table(f"db.ok{i}", SCHEMA, primary_keys=["k"], options={"bucket": "1", **ok})
        t.write_arrow(rows([1], "a"))
    made = TableSchema.create(SCHEMA, ["k"], options={"bucket": "1"})  # as Java creates it
    made = dataclasses.replace(made, options={**made.options, **agg})
    SchemaManager(t.file_io, catalog.table_path("db.java")).create(made)
    java = catalog.get_table("db.java")
    with pytest.raises(InvalidOptionError, match="'force-lookup'"):
        java.write_arrow(rows([1], "a"))
    assert java.latest_snapshot() is None


LOOKUP_REFUSED = ("changelog-producer 'lookup' is supported on deletion-vector tables ('deletion-vectors.enabled' "
                  "= 'true') and first-row tables; use 'input' otherwise")


def test_lookup_without_deletion_vectors_is_refused_at_create_and_alter(catalog):
    """Every write of a primary-key table with changelog-producer 'lookup' but neither deletion
    vectors nor first-row is refused: creating one, or altering a table into one, is refused with
    the writer's message. A table made so elsewhere (Java writes it) still opens, reads and
    alters, and its writes are refused as before."""
    import dataclasses
    from paimon_streaming.schema import SchemaManager, TableSchema
    with pytest.raises(InvalidOptionError) as refused:
        catalog.create_table("db.bad", SCHEMA, primary_keys=["k"],
                             options={"bucket": "1", "changelog-producer": "lookup"})
    assert LOOKUP_REFUSED in str(refused.value) and not catalog.table_exists("db.bad")
    for name, ok in (("dv", DV), ("first", {"merge-engine": "first-row"})):  # lookup compaction: accepted
        catalog.create_table(f"db.{name}", SCHEMA, primary_keys=["k"],
                             options={"bucket": "1", "changelog-producer": "lookup", **ok})
    for producer in ("input", "lookup"):  # an append table with a producer: Java refuses to create or open it
        with pytest.raises(InvalidOptionError, match=f"without primary key: changelog-producer '{producer}' needs a "
                                                     "primary key"):
            catalog.create_table("db.append", SCHEMA, options={"bucket": "-1", "changelog-producer": producer})
        assert not catalog.table_exists("db.append")
    append = catalog.create_table("db.append", SCHEMA, options={"bucket": "-1", "changelog-producer": "none"})
    with pytest.raises(InvalidOptionError, match="needs a primary key"):
        append.update_schema().set_option("changelog-producer", "input").commit()

    t = catalog.create_table("db.t", SCHEMA, primary_keys=["k"], options={"bucket": "1"})
    t.write_arrow(rows([1], "a"))
    with pytest.raises(InvalidOptionError) as refused:
        t.update_schema().set_option("changelog-producer", "lookup").commit()
    assert str(refused.value).startswith("after this schema change: ") and LOOKUP_REFUSED in str(refused.value)
    lookup = catalog.create_table("db.lookup", SCHEMA, primary_keys=["k"],
                                  options={"bucket": "1", "changelog-producer": "lookup", **DV})
    with pytest.raises(InvalidOptionError, match="deletion-vector tables"):
        lookup.update_schema().set_option("deletion-vectors.enabled", "false").commit()
    assert ps.Table.open(t.path).schema.options.get("changelog-producer") is None
    t.write_arrow(rows([2], "b"))

    made = TableSchema.create(SCHEMA, ["k"], options={"bucket": "1"})  # as Java creates it
    made = dataclasses.replace(made, options={**made.options, "changelog-producer": "lookup"})
    SchemaManager(t.file_io, catalog.table_path("db.java")).create(made)
    java = catalog.get_table("db.java")
    assert java.to_arrow().num_rows == 0
    java.update_schema().set_comment("made by Java").commit()  # a change that keeps what it had
    with pytest.raises(InvalidOptionError) as refused:
        java.write_arrow(rows([1], "a"))
    assert LOOKUP_REFUSED in str(refused.value) and java.latest_snapshot() is None


ops = st.lists(st.tuples(st.sampled_from(["upsert", "upsert", "delete", "compact"]),
                         st.lists(st.integers(0, 30), min_size=1, max_size=15)), min_size=1, max_size=8)


@settings(max_examples=25, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(ops=ops, producer=st.sampled_from(["lookup", "input"]))
def test_replaying_the_changelog_rebuilds_the_table(ops, producer):
    """Applying every changelog row in snapshot order to an empty dict gives the table."""
    warehouse = tempfile.mkdtemp()
    table = ps.Catalog(warehouse).create_table(
        "db.m", SCHEMA, primary_keys=["k"],
        options={"bucket": "2", **DV, "changelog-producer": producer, "num-sorted-run.compaction-trigger": "2"})
    for step, (op, keys) in enumerate(ops):
        keys = sorted(set(keys))
        if op == "compact":
            table.compact(full=step % 2 == 0)
        elif op == "delete":
            table.write_arrow(rows(keys, f"d{step}", ["-D"] * len(keys)), row_kind_column="op")
        else:
            table.write_arrow(rows(keys, f"u{step}"))
    replayed: dict[int, str] = {}
    for changes in changes_per_snapshot(table, as_read=True):
        for k, v, _, kind in changes:
            if kind in ("+I", "+U"):
                replayed[k] = v
            elif producer == "lookup" or kind == "-D":  # input: a -U alone does not remove the key
                replayed.pop(k, None)
    assert replayed == {r["k"]: r["v"] for r in table.to_arrow().to_pylist()}


@pytest.mark.parametrize("producer", ["input", "lookup"])
def test_changelog_files_are_written_as_the_changelog_options_say(catalog, producer):
    """`changelog-file.format` / `.compression` / `.stats-mode` apply to changelog files alone
    (data files keep the table's), at whatever level compaction writes a lookup changelog."""
    import glob
    import pyarrow.parquet as pq
    t = catalog.create_table("db.clog", SCHEMA, primary_keys=["k"],
                             options={"bucket": "1", "changelog-producer": producer, "file.compression": "snappy",
                                      "changelog-file.format": "orc", "changelog-file.compression": "zstd",
                                      "changelog-file.stats-mode": "none", **DV})
    t.write_arrow(rows(range(5), "a"))
    t.write_arrow(rows(range(3), "b"))
    changelogs = glob.glob(f"{t.path}/bucket-0/changelog-*")
    data = glob.glob(f"{t.path}/bucket-0/data-*")
    assert len(changelogs) == 2 and all(p.endswith(".orc") for p in changelogs)
    assert data and all(pq.ParquetFile(p).metadata.row_group(0).column(0).compression == "SNAPPY" for p in data)
    changes = changes_per_snapshot(t)
    assert [c for c in changes if c] == [[(k, f"a-{k}", k, "+I") for k in range(5)],
                                         [(k, f"{tag}-{k}", k, kind) for k in range(3)
                                          for tag, kind in (("a", "-U"), ("b", "+U"))]
                                         if producer == "lookup" else [(k, f"b-{k}", k, "+I") for k in range(3)]]


def test_java_reads_our_lookup_changelog(catalog):
    from java_oracle import get_oracle
    t = catalog.create_table("db.jv", SCHEMA, primary_keys=["k"],
                             options={"bucket": "2", **DV, "changelog-producer": "lookup"})
    t.write_arrow(rows([1, 2, 3], "a"))
    t.write_arrow(rows([2, 3, 4], "b", ops=["+U", "-D", "+I"]), row_kind_column="op")
    java = get_oracle().read(t.path, with_row_kind=True, incremental_between=(2, 4))
    assert sorted((r["k"], r["v"], r["_ROW_KIND"]) for r in java) == \
        [(2, "a-2", "-U"), (2, "b-2", "+U"), (3, "a-3", "-D"), (4, "b-4", "+I")]
