"""`Table.delete(filter)` and `Table.update(filter, values)` (paimon_streaming/row_level.py): SQL's
DELETE FROM ... WHERE and UPDATE ... SET ... WHERE on every kind of table we write, checked
against a model of the rows, against Apache Paimon Java's reader (and its compaction of what we
left), and against concurrent commits that move the files a change planned on."""
from __future__ import annotations

import re

import pyarrow as pa
import pyarrow.compute as pc
import pytest

import paimon_streaming as ps
from paimon_streaming import row_level
from paimon_streaming.errors import CommitConflictError, SchemaMismatchError, UnsupportedOperationError
from conftest import pypaimon_read

SCHEMA = pa.schema([pa.field("id", pa.int64(), False), ("v", pa.int64()), pa.field("p", pa.string(), False)])
TABLES = {
    "pk-dv": (["id", "p"], {"bucket": "2", "deletion-vectors.enabled": "true"}),
    "pk-mor": (["id", "p"], {"bucket": "2"}),
    "pk-cross-partition": (["id"], {"bucket": "-1"}),
    "append-dv": (None, {"deletion-vectors.enabled": "true"}),
    "append-dv-buckets": (None, {"deletion-vectors.enabled": "true", "bucket": "2", "bucket-key": "id"}),
    "append": (None, {}),
    "append-buckets": (None, {"bucket": "2", "bucket-key": "id"}),
    "append-row-tracking": (None, {"row-tracking.enabled": "true"}),
}


def batch(lo: int, hi: int) -> pa.Table:
    """Rows lo..hi-1: v = id except every 7th row's, which is null; p alternates."""
    ids = list(range(lo, hi))
    return pa.table({"id": ids, "v": [None if i % 7 == 0 else i for i in ids],
                     "p": ["a" if i % 2 else "b" for i in ids]}, schema=SCHEMA)


def ids(table: pa.Table) -> list[int]:
    return sorted(table.column("id").to_pylist())


def v_of(i: int) -> int | None:
    return None if i % 7 == 0 else i


def deleted_as_modelled(catalog, kind: str) -> tuple[ps.Table, int, set[int]]:
    """A table of `kind` with two batches and five deletes, each checked against the model;
    returns it, the snapshot before the deletes and the ids expected now."""
    pk, options = TABLES[kind]
    t = catalog.create_table(f"db.{kind.replace('-', '_')}", SCHEMA, primary_keys=pk, partition_keys=["p"],
                             options=options)
    t.write_arrow(batch(0, 60))
    t.write_arrow(batch(60, 120))
    before = t.latest_snapshot().id
    row_ids = t.to_arrow(columns=["id", "_ROW_ID"]) if kind == "append-row-tracking" else None
    expected = set(range(120))

    assert t.delete([("v", ">", 100)]) is not None            # across both files of each partition
    expected -= {i for i in expected if v_of(i) is not None and v_of(i) > 100}
    assert t.delete([[("v", "<", 10), ("p", "=", "a")], [("id", "in", [40, 41])]]) is not None  # OR of ANDs
    expected -= {i for i in expected if (v_of(i) is not None and v_of(i) < 10 and i % 2) or i in (40, 41)}
    assert t.delete(pc.field("v") == 55) is not None          # an Arrow expression: no pruning, same rows
    expected -= {55}
    assert t.delete([("v", "<", 10)]) is not None             # again on files already marked / rewritten
    expected -= {i for i in expected if v_of(i) is not None and v_of(i) < 10}
    latest = t.latest_snapshot().id
    assert t.delete([("v", "!=", 20), ("id", "<", 30)]) is not None  # nulls stay: != is not true for them
    expected -= {i for i in expected if i < 30 and v_of(i) is not None and v_of(i) != 20}
    assert t.delete([("v", ">", 10_000)]) is None and t.delete([("id", "=", 1)]) is None  # nothing matches
    assert t.latest_snapshot().id > latest

    assert ids(t.to_arrow()) == sorted(expected), kind
    assert ids(ps.Table.open(t.path).to_arrow()) == sorted(expected), kind
    assert ids(t.to_arrow(snapshot_id=before)) == list(range(120)), kind  # time travel still sees them
    if pk is None:
        assert t.latest_snapshot().commit_kind == "OVERWRITE"   # as Java's DELETE of an append table
    if row_ids is not None:  # the rows kept keep their ids
        kept = t.to_arrow(columns=["id", "_ROW_ID"]).sort_by("id")
        assert kept == row_ids.filter(pc.is_in(row_ids.column("id"), pa.array(sorted(expected)))).sort_by("id")
    return t, before, expected


def test_deletes_match_a_model_and_java_reads_them(catalog):
    """Every kind of table; then Java reads each (now and before the deletes), compacts it, and
    both read the compacted table."""
    from java_oracle import get_oracle
    tables = {kind: deleted_as_modelled(catalog, kind) for kind in TABLES}
    with get_oracle().batch() as jb:
        java = {kind: (jb.read(t.path), jb.read(t.path, snapshot_id=before), jb.compact(t.path), jb.read(t.path))
                for kind, (t, before, _) in tables.items()}
    for kind, (t, _, expected) in tables.items():
        now, before, _, compacted = java[kind]
        assert sorted(r["id"] for r in now.result) == sorted(expected), kind
        assert sorted(r["id"] for r in before.result) == list(range(120)), kind
        assert sorted(r["id"] for r in compacted.result) == sorted(expected), kind
        assert ids(ps.Table.open(t.path).to_arrow()) == sorted(expected), kind  # we read Java's compaction


def test_pypaimon_reads_deletes(catalog, warehouse):
    for name, options in (("dv", {"deletion-vectors.enabled": "true"}), ("cow", {})):
        t = catalog.create_table(f"db.{name}", SCHEMA, partition_keys=["p"], options=options)
        t.write_arrow(batch(0, 40))
        t.delete([("v", ">=", 20)])
        expected = [i for i in range(40) if v_of(i) is None or v_of(i) < 20]
        assert ids(pypaimon_read(warehouse, f"db.{name}")) == ids(t.to_arrow()) == expected


def test_a_whole_file_deleted_leaves_no_file(catalog):
    t = catalog.create_table("db.t", SCHEMA, partition_keys=["p"])
    t.write_arrow(batch(0, 20))
    t.delete([("p", "=", "a")])
    scan_files = [f for s in t.plan(t.latest_snapshot()) for f in s.files]
    assert ids(t.to_arrow()) == list(range(0, 20, 2)) and len(scan_files) == 1


def test_filters_on_columns_added_later_and_on_row_ids(catalog):
    t = catalog.create_table("db.t", SCHEMA, options={"row-tracking.enabled": "true",
                                                      "deletion-vectors.enabled": "true"})
    t.write_arrow(batch(0, 10))
    with t.update_schema() as u:
        u.add_column("w", pa.int64())
    t.write_arrow(batch(10, 20).append_column("w", pa.array(range(10), pa.int64())))
    t.delete([("w", "=", 3)])                     # old rows have w null: kept
    assert ids(t.to_arrow()) == [i for i in range(20) if i != 13]
    t.delete([("w", "is null")])                  # ... and go when asked for
    assert ids(t.to_arrow()) == [i for i in range(10, 20) if i != 13]
    first = t.to_arrow(columns=["id", "_ROW_ID"]).sort_by("_ROW_ID").column("_ROW_ID")[0].as_py()
    t.delete([("_ROW_ID", "=", first)])
    assert ids(t.to_arrow()) == [i for i in range(11, 20) if i != 13]


@pytest.mark.parametrize("options, why", [
    ({"merge-engine": "first-row"}, "merge engine 'first-row'"),
    ({"merge-engine": "partial-update"}, "partial-update.remove-record-on-delete"),
    ({"merge-engine": "aggregation", "fields.v.aggregate-function": "sum"}, "aggregation.remove-record-on-delete"),
    ({"ignore-delete": "true"}, "ignores deletes"),
])
def test_engines_that_keep_keys_on_delete_are_refused(catalog, options, why):
    t = catalog.create_table("db.t", SCHEMA, primary_keys=["id"], options={"bucket": "1", **options})
    t.write_arrow(batch(0, 10))
    latest = t.latest_snapshot().id
    with pytest.raises(UnsupportedOperationError, match=f"{why}.*a table with deletion vectors would have"):
        t.delete([("id", "=", 3)])
    assert t.latest_snapshot().id == latest and ids(t.to_arrow()) == list(range(10))


@pytest.mark.parametrize("options", [
    {"merge-engine": "partial-update"},
    {"merge-engine": "aggregation", "fields.v.aggregate-function": "sum"},
    {"merge-engine": "aggregation", "fields.v.aggregate-function": "sum", "bucket": "-1"},
    {"ignore-delete": "true"},
], ids=["partial-update", "aggregation", "aggregation-dynamic-bucket", "ignore-delete"])
def test_deletion_vector_tables_whose_deletes_keep_keys_have_positions_marked(catalog, options):
    """Their -D rows would not remove the key (or be dropped: ignore-delete, where Java's delete
    does nothing): the live rows' positions are marked instead, as Java's DELETE falls back to,
    in an OVERWRITE snapshot; a key written again starts afresh (an aggregation from its new row)."""
    t = catalog.create_table("db.t", SCHEMA, primary_keys=["id"],
                             options={"bucket": "2", "deletion-vectors.enabled": "true", **options})
    t.write_arrow(batch(0, 10))
    t.write_arrow(batch(0, 4))  # level-0 files compacted, a second version of keys 0-3
    sid = t.delete([("id", "in", [1, 2, 8])])
    assert t.snapshot(sid).commit_kind == "OVERWRITE"
    assert ids(t.to_arrow()) == [0, 3, 4, 5, 6, 7, 9]
    t.write_arrow(pa.table({"id": [1, 5], "v": [100, 100], "p": ["x", "x"]}))
    got = {r["id"]: r["v"] for r in t.to_arrow().to_pylist()}
    assert got[1] == 100  # deleted, then written: the new row alone
    from java_oracle import get_oracle
    with get_oracle().batch() as jb:
        before, _, after = jb.read(t.path), jb.compact(t.path), jb.read(t.path)
    assert {r["id"]: r["v"] for r in before.result} == {r["id"]: r["v"] for r in after.result} == got


@pytest.mark.parametrize("options", [
    {"merge-engine": "partial-update", "partial-update.remove-record-on-delete": "true"},
    {"merge-engine": "aggregation", "fields.v.aggregate-function": "sum", "aggregation.remove-record-on-delete": "true"},
    {"sequence.field": "v"},                       # the -D carries the row's own sequence value: it wins
    {"rowkind.field": "k"},                        # row kinds from a column of the table
])
def test_engines_that_remove_keys_on_delete(catalog, options):
    schema, data = SCHEMA, batch(0, 10)
    if "rowkind.field" in options:
        schema = SCHEMA.append(pa.field("k", pa.string()))
        data = data.append_column("k", pa.array(["+I"] * 10))
    t = catalog.create_table("db.t", schema, primary_keys=["id"], options={"bucket": "1", **options})
    t.write_arrow(data)
    t.delete([("id", "in", [3, 4])])
    assert ids(t.to_arrow()) == [0, 1, 2, 5, 6, 7, 8, 9]


def test_no_filter_and_data_evolution_tables_are_refused(catalog):
    t = catalog.create_table("db.t", SCHEMA)
    with pytest.raises(ValueError, match="needs a filter"):
        t.delete(None)
    de = catalog.create_table("db.de", SCHEMA, options={"row-tracking.enabled": "true",
                                                        "data-evolution.enabled": "true"})
    de.write_arrow(batch(0, 5))
    with pytest.raises(UnsupportedOperationError, match="data-evolution"):
        de.delete([("id", "=", 1)])
    assert catalog.create_table("db.empty", SCHEMA).delete([("id", "=", 1)]) is None


@pytest.mark.parametrize("options", [{}, {"deletion-vectors.enabled": "true"}])
def test_a_compaction_committed_after_the_plan_is_a_conflict_planned_again(catalog, monkeypatch, options):
    """Another writer compacts the files the delete planned to rewrite or mark: the commit
    finds them gone, and the delete is planned again on the compacted files."""
    t = catalog.create_table("db.t", SCHEMA, options={"compaction.min.file-num": "10", **options})
    t.write_arrow(batch(0, 10))
    t.write_arrow(batch(10, 20))  # two files, merged only by a full compaction
    assert len(t.plan(t.latest_snapshot())[0].files) == 2
    real, plans = row_level._file_changes, []

    def plan_then_compact(table, spec, values, latest):
        messages = real(table, spec, values, latest)
        if not plans:
            ps.Table.open(table.path).compact(full=True)  # the other writer
        plans.append(latest.id)
        return messages
    monkeypatch.setattr(row_level, "_file_changes", plan_then_compact)
    t.delete([("id", "in", [3, 15])])
    assert len(plans) == 2 and plans[1] > plans[0]
    assert ids(t.to_arrow()) == [i for i in range(20) if i not in (3, 15)]


@pytest.mark.parametrize("bucket", ["-1", "2"])
def test_a_change_committed_while_a_compaction_is_planned_is_kept(catalog, warehouse, monkeypatch, bucket):
    """The reverse order: another writer's delete or update marks rows in files a compaction
    has read but not yet committed. The compaction's copies still hold those rows, so its
    commit is a conflict: a write's own compaction is dropped, `Table.compact` plans again.
    (Before, the COMPACT snapshot removed the marked files and the rows came back.)"""
    options = {"deletion-vectors.enabled": "true", "compaction.min.file-num": "3", "bucket": bucket}
    t = catalog.create_table("db.t", SCHEMA, options={**options, **({"bucket-key": "id"} if bucket != "-1" else {})})
    t.write_arrow(batch(0, 10))
    t.write_arrow(batch(10, 20))
    real_write, real_plan, changed = ps.Table._write_planned, ps.Table._compaction_messages, []

    def write_then_delete(self, *args, **kwargs):  # the write's compaction of the 3 files is planned
        messages = real_write(self, *args, **kwargs)
        ps.Table.open(self.path).delete([("id", "in", [3, 15])])
        return messages
    monkeypatch.setattr(ps.Table, "_write_planned", write_then_delete)
    t.write_arrow(batch(20, 30))
    monkeypatch.setattr(ps.Table, "_write_planned", real_write)
    assert t.latest_snapshot().commit_kind == "APPEND"  # the compaction was dropped
    expected = [i for i in range(30) if i not in (3, 15)]
    assert ids(t.to_arrow()) == expected

    def plan_then_update(self, *args, **kwargs):
        messages = real_plan(self, *args, **kwargs)
        if not changed:
            changed.append(ps.Table.open(self.path).update([("id", "=", 7)], {"id": 107}))
        return messages
    monkeypatch.setattr(ps.Table, "_compaction_messages", plan_then_update)
    assert t.compact(full=True) is not None  # planned again after the update
    expected = sorted([i for i in expected if i != 7] + [107])
    assert ids(t.to_arrow()) == expected and ids(pypaimon_read(warehouse, "db.t")) == expected


def test_a_conflict_on_every_attempt_raises_and_commits_nothing(catalog, monkeypatch):
    t = catalog.create_table("db.t", SCHEMA, options={"commit.max-retries": "1"})
    t.write_arrow(batch(0, 10))
    latest = t.latest_snapshot().id

    def conflict(*args, **kwargs):
        raise CommitConflictError("a concurrent commit")
    monkeypatch.setattr(ps.Table, "new_commit", lambda self: type("C", (), {"commit": conflict,
                                                                             "discard": lambda *a: None})())
    with pytest.raises(CommitConflictError):
        t.delete([("id", "=", 3)])
    monkeypatch.undo()
    assert t.latest_snapshot().id == latest and ids(t.to_arrow()) == list(range(10))


def rows_of(table: pa.Table) -> list[tuple]:
    return sorted((r["id"], r["v"], r["p"]) for r in table.select(["id", "v", "p"]).to_pylist())


def updated_as_modelled(catalog, kind: str) -> tuple[ps.Table, list[tuple]]:
    """A table of `kind` with two batches and updates (an expression, nulls, and where the keys
    allow it a new partition or bucket key), each checked against the model."""
    pk, options = TABLES[kind]
    t = catalog.create_table(f"db.up_{kind.replace('-', '_')}", SCHEMA, primary_keys=pk, partition_keys=["p"],
                             options=options)
    t.write_arrow(batch(0, 60))
    t.write_arrow(batch(60, 120))
    model = {i: (i, v_of(i), "a" if i % 2 else "b") for i in range(120)}

    assert t.update([("v", ">", 100)], {"v": pc.field("v") * 10 + pc.field("id")}) is not None
    model.update({i: (i, v_of(i) * 11, p) for i, (_, v, p) in model.items() if v is not None and v > 100})
    assert t.update([("id", "in", [5, 6, 7])], {"v": None}) is not None
    model.update({i: (i, None, model[i][2]) for i in (5, 6, 7)})
    assert t.update([("v", "=", 20)], {"v": 21}) is not None and t.update([("v", "=", -1)], {"v": 1}) is None
    model[20] = (20, 21, "b")
    if "p" not in (pk or []):                          # a new partition: the row moves there
        assert t.update([("id", "=", 9)], {"p": "c"}) is not None
        model[9] = (9, 9, "c")
    if pk is None:                                     # append tables: the bucket key changes too
        assert t.update([("id", "=", 10)], {"id": 1010}) is not None
        model[1010] = (1010, 10, "b")
        del model[10]
    assert rows_of(t.to_arrow()) == sorted(model.values()), kind
    assert rows_of(ps.Table.open(t.path).to_arrow()) == sorted(model.values()), kind
    return t, sorted(model.values())


UPDATABLE = [k for k in TABLES if k != "append-row-tracking"]


def test_updates_match_a_model_and_java_reads_them(catalog):
    from java_oracle import get_oracle
    tables = {kind: updated_as_modelled(catalog, kind) for kind in UPDATABLE}
    with get_oracle().batch() as jb:
        java = {kind: (jb.read(t.path), jb.compact(t.path), jb.read(t.path)) for kind, (t, _) in tables.items()}
    for kind, (t, expected) in tables.items():
        now, _, compacted = java[kind]
        assert sorted((r["id"], r["v"], r["p"]) for r in now.result) == expected, kind
        assert sorted((r["id"], r["v"], r["p"]) for r in compacted.result) == expected, kind
        assert rows_of(ps.Table.open(t.path).to_arrow()) == expected, kind


def test_update_refusals_name_the_reason_and_commit_nothing(catalog):
    pk = catalog.create_table("db.pk", SCHEMA, primary_keys=["id", "p"], options={"bucket": "1"})
    pk.write_arrow(batch(0, 10))
    for values, error, match in (({"id": 1}, UnsupportedOperationError, "primary key columns \\['id'\\]"),
                                 ({"nope": 1}, SchemaMismatchError, "columns \\['nope'\\] are not in the table"),
                                 ({"v": "x"}, SchemaMismatchError, "value 'x' for column 'v'"),
                                 ({"v": 2 ** 63}, SchemaMismatchError, "does not fit"),
                                 ({"v": pc.field("v") * 2 ** 62}, SchemaMismatchError, "fail on the matching rows"),
                                 ({}, ValueError, "needs values")):
        with pytest.raises(error, match=match):
            pk.update([("id", "=", 3)], values)
    with pytest.raises(ValueError, match="needs a filter"):
        pk.update(None, {"v": 1})
    for options, match in (({"merge-engine": "aggregation", "fields.v.aggregate-function": "sum"}, "aggregates"),
                           ({"merge-engine": "first-row"}, "keeps the first row"),
                           ({"merge-engine": "partial-update"}, "skips null fields")):
        t = catalog.create_table(f"db.e{len(options)}{options['merge-engine']}", SCHEMA, primary_keys=["id"],
                                 options={"bucket": "1", **options})
        t.write_arrow(batch(0, 10))
        with pytest.raises(UnsupportedOperationError, match=match):
            t.update([("id", "=", 1)], {"v": None})
    rt = catalog.create_table("db.rt", SCHEMA, options={"row-tracking.enabled": "true"})
    rt.write_arrow(batch(0, 10))
    with pytest.raises(UnsupportedOperationError, match="_ROW_ID"):
        rt.update([("id", "=", 1)], {"v": 5})
    assert [t.latest_snapshot().id for t in (pk, rt)] == [1, 1]


def test_partial_update_sets_non_null_values(catalog):
    t = catalog.create_table("db.pu", SCHEMA, primary_keys=["id"], options={"bucket": "1",
                                                                           "merge-engine": "partial-update"})
    t.write_arrow(batch(0, 10))
    t.update([("id", "<", 3)], {"v": 100})
    assert rows_of(t.to_arrow())[:4] == [(0, 100, "b"), (1, 100, "a"), (2, 100, "b"), (3, 3, "a")]


GROUPS = pa.schema([pa.field("id", pa.int64(), False), ("g1", pa.int64()), ("a", pa.int64()), ("g2", pa.int64()),
                    ("b", pa.string())])
GROUPS_OPTIONS = {"bucket": "1", "merge-engine": "partial-update", "fields.g1.sequence-group": "a",
                  "fields.g2.sequence-group": "b"}


def grouped(catalog, name: str, options: dict) -> ps.Table:
    """A partial-update table with sequence groups g1 -> a, g2 -> b; id 2 has g1 null, id 3 g2 null."""
    t = catalog.create_table(name, GROUPS, primary_keys=["id"], options={**GROUPS_OPTIONS, **options})
    t.write_arrow(pa.table({"id": [1, 2, 3], "g1": [5, None, 5], "a": [10, 20, 30], "g2": [7, 7, None],
                            "b": ["x", "y", "z"]}, GROUPS))
    return t


@pytest.mark.parametrize("options, fields", [({"fields.a.aggregate-function": "sum"}, "'a'"),
                                             ({"fields.default-aggregate-function": "max"}, "'a', 'b'")])
def test_partial_update_with_aggregate_functions_refuses_updates(catalog, options, fields):
    """The whole row written back would be folded into itself (a sum doubled)."""
    t = grouped(catalog, "db.t", options)
    with pytest.raises(UnsupportedOperationError, match=rf"fields \[{fields}\].*aggregate-function"):
        t.update([("id", "=", 1)], {"b": "X"})
    assert t.latest_snapshot().id == 1 and t.to_arrow().to_pylist()[0]["a"] == 10


def test_updates_leaving_a_sequence_group_null_are_refused(catalog):
    """Partial-update skips a group whose sequence is null: the merge would null its fields."""
    t = grouped(catalog, "db.t", {})
    for key, values, group in ((2, {"a": 21}, "g1"), (3, {"a": 31}, "g2")):  # its own group, or another one
        with pytest.raises(UnsupportedOperationError, match=rf"\{{'id': {key}\}}.*\['{group}'\].*in the same update"):
            t.update([("id", "=", key)], values)
    assert t.latest_snapshot().id == 1
    t.update([("id", "=", 2)], {"g1": 1, "a": 21})  # its sequence set in the same update
    assert t.to_arrow().to_pylist()[1] == {"id": 2, "g1": 1, "a": 21, "g2": 7, "b": "y"}


@pytest.mark.parametrize("engine", ["deduplicate", "partial-update"])
def test_updates_setting_the_sequence_field_lower_or_null_are_refused(catalog, engine):
    """The +U would sort before the row and lose; equal or higher values win."""
    schema = pa.schema([pa.field("id", pa.int64(), False), ("ts", pa.int64()), ("v", pa.string())])
    t = catalog.create_table("db.t", schema, primary_keys=["id"],
                             options={"bucket": "1", "sequence.field": "ts", "merge-engine": engine})
    t.write_arrow(pa.table({"id": [1, 2, 3], "ts": [10, 10, None], "v": ["a", "b", "c"]}, schema))
    for values in ({"ts": 5, "v": "A"}, {"ts": None}, {"ts": pc.field("ts") - 1}):
        if engine == "partial-update" and values.get("ts", 0) is None:
            continue  # refused as a null set
        with pytest.raises(UnsupportedOperationError, match=r"\{'id': 1\}.*'sequence.field' \['ts'\] null or lower"):
            t.update([("id", "<", 3)], values)
    assert t.latest_snapshot().id == 1
    t.update([("id", "=", 1)], {"ts": 10, "v": "A"})
    t.update([("id", "=", 2)], {"ts": 11, "v": "B"})
    t.update([("id", "=", 3)], {"v": "C"})  # null stays null
    assert t.to_arrow().to_pylist() == [{"id": 1, "ts": 10, "v": "A"}, {"id": 2, "ts": 11, "v": "B"},
                                        {"id": 3, "ts": None, "v": "C"}]


def test_updates_setting_a_group_sequence_lower_are_refused(catalog):
    t = grouped(catalog, "db.t", {})
    with pytest.raises(UnsupportedOperationError, match=r"sequence field\(s\) of group \['a'\] \['g1'\] null or lower"):
        t.update([("id", "=", 1)], {"g1": 4, "a": 11})
    assert t.latest_snapshot().id == 1


def test_cross_partition_partial_update_refuses_partition_updates(catalog):
    """The row would be merged in its old partition; deduplicate moves it (test_updates_match_a_model...)."""
    t = catalog.create_table("db.t", SCHEMA, primary_keys=["id"], partition_keys=["p"],
                             options={"bucket": "-1", "merge-engine": "partial-update"})
    t.write_arrow(batch(0, 4))
    with pytest.raises(UnsupportedOperationError, match=r"partition columns \['p'\] of a cross-partition"):
        t.update([("id", "=", 1)], {"p": "c", "v": 5})
    assert t.latest_snapshot().id == 1
    t.update([("id", "=", 1)], {"v": 5})
    assert rows_of(t.to_arrow())[1] == (1, 5, "a")


@pytest.mark.parametrize("dv", ["false", "true"])
def test_deletes_of_rows_a_sequence_group_would_keep(catalog, dv):
    """Under remove-record-on-sequence-group a -D of a row whose group sequence is null only
    retracts the other groups: refused, or, with deletion vectors, the positions marked."""
    t = grouped(catalog, "db.t", {"partial-update.remove-record-on-sequence-group": "g1",
                                  "deletion-vectors.enabled": dv})
    t.delete([("id", "=", 1)])  # g1 set: its -D removes it
    assert ids(t.to_arrow()) == [2, 3]
    latest = t.latest_snapshot().id
    if dv == "false":
        with pytest.raises(UnsupportedOperationError, match=r"1 matching row\(s\) \(e.g. \{'id': 2\}\).*\['g1'\]"):
            t.delete([("id", "in", [2, 3])])
        assert t.latest_snapshot().id == latest and ids(t.to_arrow()) == [2, 3]
    else:
        sid = t.delete([("id", "in", [2, 3])])
        assert t.snapshot(sid).commit_kind == "OVERWRITE" and ids(t.to_arrow()) == []


@pytest.mark.parametrize("options", [{}, {"deletion-vectors.enabled": "true"}])
def test_expressions_are_evaluated_on_the_matching_rows_only(catalog, options):
    """An expression that would overflow on a row the filter leaves alone changes nothing there."""
    t = catalog.create_table("db.t", SCHEMA, options=options)
    t.write_arrow(pa.table({"id": [1, 2], "v": [3, 2 ** 62], "p": ["a", "a"]}, schema=SCHEMA))
    t.update([("id", "=", 1)], {"v": pc.field("v") * 4})
    assert rows_of(t.to_arrow()) == [(1, 12, "a"), (2, 2 ** 62, "a")]


@pytest.mark.parametrize("kind", ["pk-dv", "pk-mor", "append", "append-dv"])
def test_array_map_and_row_columns_are_updated(catalog, kind):
    """ARRAY, MAP and ROW values set by an update (an append table's rewrite raised Arrow's
    "replace_with_mask has no kernel" for them, through the command line too)."""
    schema = pa.schema([pa.field("id", pa.int64(), False), ("tags", pa.list_(pa.string())),
                        ("attrs", pa.map_(pa.string(), pa.int32())), ("r", pa.struct([("a", pa.int32())]))])
    pk, options = TABLES[kind]
    t = catalog.create_table("db.nested", schema, primary_keys=pk and ["id"],
                             options={k: v for k, v in options.items() if k != "bucket"})
    t.write_arrow(pa.table({"id": [1, 2, 3], "tags": [["a"], None, ["c", "d"]], "attrs": [[("k", 1)], None, []],
                            "r": [{"a": 1}, None, {"a": 3}]}, schema=schema))
    t.update([("id", "in", [1, 2])], {"tags": ["x", "y"], "attrs": [("z", 9)], "r": {"a": 7}})
    t.update([("id", "=", 3)], {"tags": None})
    assert sorted(t.to_arrow().to_pylist(), key=lambda r: r["id"]) == [
        {"id": 1, "tags": ["x", "y"], "attrs": [("z", 9)], "r": {"a": 7}},
        {"id": 2, "tags": ["x", "y"], "attrs": [("z", 9)], "r": {"a": 7}},
        {"id": 3, "tags": None, "attrs": [], "r": {"a": 3}}]


@pytest.mark.parametrize("pk", [["id", "p"], None], ids=["primary-key", "append"])
def test_a_replayed_identifier_changes_nothing(catalog, pk):
    """A job deleting (or updating) once per micro-batch under (commit user, batch id) and
    restarted after its commit replays the batch: nothing changes a second time (rows written
    since that match the filter stay), and the committed snapshot id is returned; the same
    user without an identifier changes again each time."""
    t = catalog.create_table("db.t", SCHEMA, primary_keys=pk, partition_keys=["p"],
                             options={"bucket": "2", "bucket-key": "id"} if pk is None else {"bucket": "2"})
    t.write_arrow(batch(0, 20))
    first = t.delete([("id", "<", 5)], commit_user="job", commit_identifier=7)
    t.write_arrow(batch(0, 3))                                     # ids 0-2 again
    assert t.delete([("id", "<", 5)], commit_user="job", commit_identifier=7) == first
    assert ids(t.to_arrow()) == [0, 1, 2] + list(range(5, 20))
    updated = t.update([("id", "=", 5)], {"v": 500}, commit_user="job", commit_identifier=8)
    t.write_arrow(batch(5, 6))
    assert t.update([("id", "=", 5)], {"v": 500}, commit_user="job", commit_identifier=8) == updated
    assert sorted(t.to_arrow(filter=[("id", "=", 5)]).column("v").to_pylist()) == ([5] if pk else [5, 500])
    t.delete([("id", "=", 0)], commit_user="job")
    t.write_arrow(batch(0, 1))
    t.delete([("id", "=", 0)], commit_user="job")                    # no identifier: a change each time
    assert 0 not in ids(t.to_arrow())


def test_values_set_are_the_column_values_they_name_exactly(catalog):
    """pyarrow's conversion set 2.5 into an integer column as 2 and 1e39 into a FLOAT as inf
    (silently), and refused 12.5 and "12.5" for a DECIMAL column as "does not fit", so the
    command line (whose values are JSON or text) could set no fraction there."""
    import datetime as dt
    import decimal
    schema = pa.schema([pa.field("id", pa.int64(), False), ("amount", pa.decimal128(12, 2)), ("n", pa.int64()),
                        ("f", pa.float32()), ("day", pa.date32())])
    t = catalog.create_table("db.lit", schema, primary_keys=["id"], options={"bucket": "1"})
    t.write_arrow(pa.table({"id": [1], "amount": pa.array([decimal.Decimal(1)], pa.decimal128(12, 2)), "n": [1],
                            "f": pa.array([1.0], pa.float32()), "day": [dt.date(2024, 1, 1)]}))
    t.update([("id", "=", 1)], {"amount": 12.5, "n": 3.0, "day": "2024-02-03"})
    t.update([("id", "=", 1)], {"f": "2.5"})
    assert t.to_arrow().to_pylist() == [{"id": 1, "amount": decimal.Decimal("12.50"), "n": 3, "f": 2.5,
                                         "day": dt.date(2024, 2, 3)}]
    for values, match in (({"n": 2.5}, "2.5 is not an integer"), ({"n": decimal.Decimal("2.5")}, "not an integer"),
                          ({"f": 1e39}, "beyond the range of float"), ({"amount": 12.555}, "data loss"),
                          ({"amount": "abc"}, "column 'amount'"),
                          ({"day": 20240203}, "not a number")):  # Arrow: day 20,240,203 since 1970
        with pytest.raises(SchemaMismatchError, match=match):
            t.update([("id", "=", 1)], values)
    assert t.to_arrow().column("n").to_pylist() == [3]


def test_text_set_into_a_number_column_is_decimal_text_within_its_range(catalog):
    """Text (what `update --set b=0xff` passes) was cast by Arrow: hex into an integer, wrapped
    ('0xff' stored a TINYINT's -1), and a FLOAT's '1e39' or '3.4028236e38' stored infinity.
    Both are refused as numbers are; decimal text, a spelt-out infinity and FLOAT's largest
    value still set."""
    schema = pa.schema([pa.field("id", pa.int64(), False), ("b", pa.int8()), ("f", pa.float32())])
    t = catalog.create_table("db.text_numbers", schema, primary_keys=["id"], options={"bucket": "1"})
    t.write_arrow(pa.table({"id": [1], "b": pa.array([1], pa.int8()), "f": pa.array([1.0], pa.float32())}))
    for values in ({"b": "0xff"}, {"b": "0x10"}, {"b": "128"}, {"f": "1e39"}, {"f": "3.4028236e38"}, {"f": "0x1p3"}):
        with pytest.raises(SchemaMismatchError, match=f"value {re.escape(repr(next(iter(values.values()))))} for "
                                                      "column .* is no (int8|float) value"):
            t.update([("id", "=", 1)], values)
    assert t.to_arrow().to_pylist() == [{"id": 1, "b": 1, "f": 1.0}]
    t.update([("id", "=", 1)], {"b": "-128", "f": "3.4028235E38"})
    assert t.to_arrow().to_pylist() == [{"id": 1, "b": -128, "f": 3.4028234663852886e38}]
    t.update([("id", "=", 1)], {"b": "+5", "f": "-Infinity"})
    assert t.to_arrow().to_pylist() == [{"id": 1, "b": 5, "f": float("-inf")}]


def test_values_from_numpy_and_pandas_are_set_as_filters_read_them(catalog):
    """np.float32(2.5) was set into an integer column as 2, a pd.Timestamp's nanoseconds were cut
    against TIMESTAMP(6) (write_arrow refuses that loss), and an instant into a wall-time column
    became its UTC wall time (write_arrow stores its own)."""
    import datetime as dt
    import decimal
    import numpy as np
    import pandas as pd
    schema = pa.schema([pa.field("id", pa.int64(), False), ("n", pa.int64()), ("amount", pa.decimal128(12, 2)),
                        ("ts", pa.timestamp("us")), ("ns", pa.timestamp("ns"))])
    t = catalog.create_table("db.np", schema, primary_keys=["id"], options={"bucket": "1"})
    t.write_arrow(pa.table({"id": [1], "n": [1], "amount": pa.array([decimal.Decimal(1)], pa.decimal128(12, 2)),
                            "ts": [dt.datetime(2024, 1, 1)], "ns": pa.array([0], pa.timestamp("ns"))}))
    t.update([("id", "=", np.int64(1))], {"n": np.float32(3.0), "amount": np.float64(1.1),
                                          "ts": pd.Timestamp("2024-01-01 12:00", tz="Europe/Berlin"),
                                          "ns": pd.Timestamp("2024-01-01 12:00:00.123456789")})
    assert t.to_arrow().to_pylist() == [{"id": 1, "n": 3, "amount": decimal.Decimal("1.10"),
                                         "ts": dt.datetime(2024, 1, 1, 12),
                                         "ns": pd.Timestamp("2024-01-01 12:00:00.123456789")}]
    for values, match in (({"n": np.float32(2.5)}, "2.5 is not an integer"),
                          ({"ts": pd.Timestamp("2024-01-01 12:00:00.123456789")}, "finer than the column's unit"),
                          ({"ts": np.datetime64(10 ** 18 + 1, "ns")}, "finer than the column's unit")):
        with pytest.raises(SchemaMismatchError, match=match):
            t.update([("id", "=", 1)], values)
    assert t.delete([("ns", "=", "2024-01-01 12:00:00.123456789")]) is not None
    assert t.to_arrow().num_rows == 0


def test_text_and_rows_set_as_filters_and_writes_read_them(catalog):
    """ISO text for TIME, TIMESTAMP_LTZ (no offset) and TIMESTAMP (with an offset: that instant's
    wall time here, as filters read it) failed with Arrow's cast errors although `--where` took
    the same text; a ROW value naming a field its type lacks set the real field to null."""
    import datetime as dt
    schema = pa.schema([pa.field("id", pa.int64(), False), ("tm", pa.time32("ms")), ("ltz", pa.timestamp("us", "UTC")),
                        ("ts", pa.timestamp("ms")), ("address", pa.struct([("zip", pa.string())])),
                        ("items", pa.list_(pa.struct([("sku", pa.string())])))])
    t = catalog.create_table("db.text", schema, primary_keys=["id"], options={"bucket": "1"})
    t.write_arrow(pa.table({"id": [1], "tm": [dt.time(10, 30)], "ltz": [dt.datetime(2024, 1, 1, tzinfo=dt.timezone.utc)],
                            "ts": [dt.datetime(2024, 1, 1)], "address": [{"zip": "01234"}], "items": [[{"sku": "a"}]]},
                           schema=schema))
    t.update([("tm", "=", "10:30:00")], {"tm": "11:00:00", "ltz": "2024-01-02 10:30:00+00:00",
                                         "ts": dt.datetime(2024, 1, 2, 10).isoformat(), "address": {"zip": "99"}})
    row = t.to_arrow().to_pylist()[0]
    assert (row["tm"], row["ltz"].replace(tzinfo=None), row["ts"], row["address"]) == \
        (dt.time(11), dt.datetime(2024, 1, 2, 10, 30), dt.datetime(2024, 1, 2, 10), {"zip": "99"})
    for values, match in (({"address": {"zpi": "1"}}, r"has field\(s\) \['zpi'\]"),
                          ({"items": [{"sku": "b", "qty": 1}]}, r"value\[0\] has field\(s\) \['qty'\]"),
                          ({"tm": "11:00:00.0005"}, "finer than the column's unit"),
                          ({"tm": "eleven"}, "value 'eleven' for column 'tm'.* is not a time of day")):
        with pytest.raises(SchemaMismatchError, match=match):
            t.update([("id", "=", 1)], values)
    assert t.to_arrow().to_pylist()[0]["address"] == {"zip": "99"}


def test_nested_values_set_follow_the_top_level_rules(catalog):
    """Numbers inside ARRAY, MAP and ROW values were cut (2.9 into an ARRAY<INT> stored 2, 1.7
    into a MAP's TINYINT 1) or read as days (19723 into a DATE field stored 2024-01-01), which
    the same value at top level is refused for; nested ISO text is a date as at top level."""
    import datetime as dt
    schema = pa.schema([pa.field("id", pa.int64(), False), ("arr", pa.list_(pa.int32())),
                        ("m", pa.map_(pa.string(), pa.int8())),
                        ("r", pa.struct([("a", pa.int32()), ("d", pa.date32())])), ("dl", pa.list_(pa.date32()))])
    t = catalog.create_table("db.nested_values", schema, primary_keys=["id"], options={"bucket": "1"})
    t.write_arrow(pa.table({"id": [1], "arr": [[0]], "m": [[("k", 0)]], "r": [None], "dl": [[]]}, schema=schema))
    for values, match in (({"arr": [7.9]}, r"value\[0\] \(INT\): 7.9 is not an integer"),
                          ({"m": {"k": 1.7}}, r"value\{'k'\} \(TINYINT\): 1.7 is not an integer"),
                          ({"r": {"a": 3.99}}, r"value.a \(INT\): 3.99 is not an integer"),
                          ({"r": {"d": 19723}}, r"value.d \(DATE\): a date .* not a number"),
                          ({"dl": [19723]}, r"value\[0\] \(DATE\): a date .* not a number"),
                          ({"r": (1, None)}, "give it as a dict")):
        with pytest.raises(SchemaMismatchError, match=match):
            t.update([("id", "=", 1)], values)
    assert t.to_arrow().to_pylist()[0]["arr"] == [0]
    t.update([("id", "=", 1)], {"arr": [7.0, None], "m": {"k": 2}, "r": {"a": 3, "d": "2024-02-02"},
                                "dl": ["2024-03-03", dt.date(2024, 3, 4)]})
    assert t.to_arrow().to_pylist() == [{"id": 1, "arr": [7, None], "m": [("k", 2)],
                                         "r": {"a": 3, "d": dt.date(2024, 2, 2)},
                                         "dl": [dt.date(2024, 3, 3), dt.date(2024, 3, 4)]}]


def test_a_dry_run_refuses_what_the_delete_refuses(catalog):
    de = catalog.create_table("db.de", SCHEMA, options={"row-tracking.enabled": "true",
                                                        "data-evolution.enabled": "true"})
    with pytest.raises(UnsupportedOperationError, match="data-evolution"):
        row_level.check_change(de, None)


def test_a_delete_by_positions_compacts_waiting_level0_files_first(catalog):
    """Level-0 files (left by a writer that died before its compaction) would bring a key back
    above the marks of a delete by positions once compacted: they are compacted first, then the
    delete is planned again on that snapshot, and Java reads the same rows."""
    from conftest import killed_before_compaction
    t = catalog.create_table("db.t", SCHEMA, primary_keys=["id"],
                             options={"bucket": "1", "deletion-vectors.enabled": "true",
                                      "merge-engine": "partial-update"})
    with killed_before_compaction(SystemExit()):
        for rows in (batch(0, 6), batch(0, 3)):  # a second version of keys 0-2, on level 0 too
            with pytest.raises(SystemExit):
                t.write_arrow(rows)
    assert t.uncompacted_buckets(t.latest_snapshot())
    sid = t.delete([("id", "in", [1, 4])])
    assert [t.snapshot(i).commit_kind for i in range(3, sid + 1)] == ["COMPACT", "OVERWRITE"]
    assert ids(t.to_arrow()) == [0, 2, 3, 5]
    from java_oracle import get_oracle
    with get_oracle().batch() as jb:
        read = jb.read(t.path)
    assert sorted(r["id"] for r in read.result) == [0, 2, 3, 5]


def test_changes_of_a_write_only_table_with_level0_files_waiting_are_refused(catalog):
    """A write-only deletion-vector table's level-0 files are hidden from reads until its
    compaction job runs: a dry run counted 0 rows, the delete compacted the table (which its
    writers must not), wrote its -D to level 0 (the row still shown) and the next delete, of no
    row, committed that compaction. Both refuse now, naming the option; after the compaction the
    change applies."""
    t = catalog.create_table("db.wo", SCHEMA, primary_keys=["id"],
                             options={"bucket": "1", "deletion-vectors.enabled": "true", "write-only": "true"})
    t.write_arrow(batch(0, 3))
    t.compact()
    t.write_arrow(pa.table({"id": [1], "v": [11], "p": ["a"]}, schema=SCHEMA))  # waits in level 0
    latest = t.latest_snapshot().id
    for change in (lambda: row_level.check_change(t, None), lambda: t.delete([("v", "=", 11)]),
                   lambda: t.update([("id", "=", 1)], {"v": 5})):
        with pytest.raises(UnsupportedOperationError, match="level-0 files.*'write-only'.*compaction first"):
            change()
    assert t.latest_snapshot().id == latest
    t.compact()
    t.delete([("v", "=", 11)])
    t.compact()
    assert ids(t.to_arrow()) == [0, 2]


def test_text_set_into_a_decimal_is_exact_or_refused(catalog):
    """Text set into a DECIMAL column went through Arrow's cast, which wraps a value beyond the
    type into another number: update(..., {"q": "-7e36"}) stored -194352661581230730732507851364635770.88
    in a DECIMAL(38, 2), "1e-41" stored 0.00."""
    import decimal
    schema = pa.schema([pa.field("id", pa.int64(), False), ("q", pa.decimal128(38, 2))])
    t = catalog.create_table("db.dec_text", schema, primary_keys=["id"])
    t.write_arrow(pa.table({"id": [1], "q": [decimal.Decimal("1.00")]}, schema=schema))
    for text in ("-7e36", "1e-41"):
        with pytest.raises(SchemaMismatchError, match="column 'q'"):
            t.update([("id", "=", 1)], {"q": text})
    t.update([("id", "=", 1)], {"q": "25e-1"})
    assert t.to_arrow().column("q").to_pylist() == [decimal.Decimal("2.50")]
