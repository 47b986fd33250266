"""Data-evolution tables (data_evolution.py): rows whose columns Java's MERGE INTO rewrote in
files of their own are read merged by row id, as Java reads them; we append to them as Java's
writers do; streams of column updates are refused naming them."""
from __future__ import annotations

import numpy as np
import pyarrow as pa
import pytest

import paimon_streaming as ps
from paimon_streaming.check import check_table
from paimon_streaming.errors import InvalidOptionError, UnsupportedOperationError

OPTIONS = {"row-tracking.enabled": "true", "data-evolution.enabled": "true"}
FIELDS = [{"name": "id", "type": "INT"}, {"name": "v", "type": "STRING"}, {"name": "n", "type": "BIGINT"}]


@pytest.fixture(scope="module")
def java():
    from java_oracle import get_oracle
    return get_oracle()


def by_id(rows: list[dict]) -> list[dict]:
    return sorted(rows, key=lambda r: r["id"])


def test_columns_rewritten_by_java_are_read_merged_by_row_id(java, tmp_path):
    """Three files of rows, then column updates as Java's MERGE INTO writes them: one column of
    a file, two columns of another, the same file's column twice (the newest wins), and after
    a schema change a new column of an old file; columns no file holds are null."""
    path = str(tmp_path / "de")
    rng = np.random.default_rng(7)
    files = [(0, 40), (40, 25), (65, 30)]  # (first row id, rows) of each batch's file
    with java.batch() as b:
        b.create_table(path, FIELDS, options=OPTIONS)
        for start, n in files:
            b.write(path, [{"id": i, "v": f"v{i}", "n": int(rng.integers(1000))} for i in range(start, start + n)])
        b.write_columns(path, 0, ["v"], [{"v": f"first-{i}"} for i in range(40)])
        b.write_columns(path, 65, ["n", "v"], [{"n": -i, "v": None if i % 3 else f"m{i}"} for i in range(65, 95)])
        b.write_columns(path, 0, ["v"], [{"v": f"second-{i}"} for i in range(40)])
    java.alter(path, [{"kind": "add", "path": ["w"], "type": "DOUBLE"}])
    with java.batch() as b:  # rows are encoded with the schema when queued: after the change
        b.write_columns(path, 40, ["w"], [{"w": i / 2} for i in range(40, 65)])
        expected = b.read(path)
        tracked = b.read(path, system_table="row_tracking")
        low_n = b.read(path, where=("n", "<", 0))
    t = ps.Table.open(path)
    assert by_id(t.to_arrow().to_pylist()) == by_id(expected.result)
    rows = {r["id"]: r for r in expected.result}
    assert rows[3]["v"] == "second-3" and rows[70]["n"] == -70 and rows[70]["v"] is None
    assert rows[41]["w"] == 20.5 and rows[0]["w"] is None
    ours = t.to_arrow(columns=["id", "v", "n", "w", "_ROW_ID", "_SEQUENCE_NUMBER"]).to_pylist()
    assert by_id(ours) == by_id(tracked.result)
    assert {r["id"]: r["_SEQUENCE_NUMBER"] for r in ours}[3] == 6   # the second rewrite of its file
    # a filter on a column one file rewrote: statistics of the older file must not prune the rows
    assert by_id(t.to_arrow(filter=[("n", "<", 0)]).to_pylist()) == by_id(low_n.result) != []
    assert by_id(t.to_arrow(columns=["id", "w"]).to_pylist()) == by_id(
        [{"id": r["id"], "w": r["w"]} for r in expected.result])
    assert check_table(t).problems == []   # a file of some columns is whole, not a damaged footer
    # a filter on row ids prunes whole row-id groups (the files of one group number the same rows)
    wanted = [("_ROW_ID", ">=", 40), ("_ROW_ID", "<", 65)]
    assert by_id(t.to_arrow(filter=wanted).to_pylist()) == by_id([r for r in expected.result if 40 <= r["id"] < 65])
    (split,) = t.plan(t.latest_snapshot(), wanted)
    assert {(f.first_row_id, f.row_count) for f in split.files} == {(40, 25)} and len(split.files) == 2
    assert by_id(t.to_arrow(filter=[("_ROW_ID", ">", 60), ("n", "<", -90)]).to_pylist()) == \
        by_id([r for r in expected.result if r["id"] > 90])
    # and by the merged rows' statistics: each column's are those of the newest file holding it
    def groups(flt) -> set:
        return {(f.first_row_id, f.row_count) for s in t.plan(t.latest_snapshot(), flt) for f in s.files}
    assert groups([("n", "<", 0)]) == {(65, 30)}        # the old file's n (all >= 0) is not the rows'
    assert groups([("v", "=", "v3")]) == set() and t.to_arrow(filter=[("v", "=", "v3")]).num_rows == 0
    assert groups([("v", "=", "second-3")]) == {(0, 40)}
    assert groups([[("v", "=", "second-3")], [("w", ">", 30.0)]]) == {(0, 40), (40, 25)}


def test_we_append_java_rewrites_columns_and_both_read_the_same(java, catalog):
    """The shape data evolution is for: a stream appends rows (ours: numbered by each commit,
    not compacted by the writes), Java's MERGE INTO rewrites a column of some of them; both read
    the merged rows, a later append continues the numbering, and our compaction merges the
    columns into whole rows that keep their ids."""
    schema = pa.schema([("id", pa.int32()), ("v", pa.string()), ("n", pa.int64())])
    t = catalog.create_table("db.de", schema, options={**OPTIONS, "compaction.min.file-num": "2"})
    for start in (0, 10, 20, 30):
        t.write_arrow(pa.table({"id": pa.array(range(start, start + 10), pa.int32()),
                                "v": [f"v{i}" for i in range(start, start + 10)],
                                "n": pa.array(range(start, start + 10), pa.int64())}))
    assert [s.commit_kind for s in t.snapshots()] == ["APPEND"] * 4, "writes leave compaction to compact()"
    java.write_columns(t.path, 10, ["v"], [{"v": f"enriched{i}"} for i in range(10, 20)])
    t.write_arrow(pa.table({"id": pa.array([40], pa.int32()), "v": ["late"], "n": pa.array([40], pa.int64())}))
    t = ps.Table.open(t.path)
    ours = by_id(t.to_arrow(columns=["id", "v", "n", "_ROW_ID"]).to_pylist())
    assert [r["v"] for r in ours[9:21]] == ["v9"] + [f"enriched{i}" for i in range(10, 20)] + ["v20"]
    assert [r["_ROW_ID"] for r in ours] == list(range(41))
    theirs = by_id(java.read(t.path, system_table="row_tracking"))
    assert [{k: r[k] for k in ("id", "v", "n", "_ROW_ID")} for r in theirs] == ours
    assert t.compact() is not None
    t = ps.Table.open(t.path)
    (merged,) = live(t)    # one run of row ids, gathered under the target size: one whole-row file
    assert (merged.first_row_id, merged.row_count, merged.write_cols) == (0, 41, None)
    assert by_id(t.to_arrow(columns=["id", "v", "n", "_ROW_ID"]).to_pylist()) == ours
    compacted = by_id(t.to_arrow(columns=["id", "v", "n", "_ROW_ID", "_SEQUENCE_NUMBER"]).to_pylist())
    assert by_id(java.read(t.path, system_table="row_tracking")) == compacted


def live(t: ps.Table) -> list:
    from paimon_streaming.scan import TableScan
    return [e.file for e in TableScan(t.file_io, t.path, t.schema).live_entries(t.latest_snapshot())]


@pytest.mark.parametrize("options,match", [
    ({"data-evolution.enabled": "true"}, "needs 'row-tracking.enabled'"),
    ({**OPTIONS, "deletion-vectors.enabled": "true"}, "cannot go with 'deletion-vectors.enabled'"),
])
def test_data_evolution_where_paimon_refuses_it(catalog, options, match):
    with pytest.raises(InvalidOptionError, match=match):
        catalog.create_table("db.bad", pa.schema([("id", pa.int64())]), options=options)


def test_column_updates_are_not_streamed(java, tmp_path):
    path = str(tmp_path / "de")
    with java.batch() as b:
        b.create_table(path, FIELDS, options=OPTIONS)
        b.write(path, [{"id": i, "v": "a", "n": i} for i in range(5)])
        b.write_columns(path, 0, ["v"], [{"v": "b"} for _ in range(5)])
    t = ps.Table.open(path)
    assert [r["v"] for r in t.to_arrow().to_pylist()] == ["b"] * 5
    with pytest.raises(UnsupportedOperationError, match="streaming and incremental reads"):
        t.changes_between(1, 2, mode="delta")
    # a diff of the two states compares merged rows: the files both share take part
    diff = t.changes_between(1, 2, mode="diff", row_kind_column="kind").to_pylist()
    assert sorted((r["kind"], r["id"], r["v"]) for r in diff) == \
        sorted([("-D", i, "a") for i in range(5)] + [("+I", i, "b") for i in range(5)])


def test_compaction_picks_as_javas_planner():
    """DataEvolutionCompactCoordinator's rules: runs of adjacent row ids; ranges gathered until
    their files weigh more than the target (each at least the open-file cost); a range heavier
    than the target alone; gatherings of fewer than compaction.min.file-num files left."""
    from paimon_streaming.data_evolution import compaction_groups
    from paimon_streaming.manifest.entries import DataFileMeta, SimpleStats
    stats = SimpleStats(b"", b"", ())

    def f(name, first, rows, size, seq=1):
        return DataFileMeta(name, size, rows, b"", b"", stats, stats, seq, seq, 0, 0, first_row_id=first)
    mb = 1 << 20
    files = [f("a", 0, 10, mb), f("a2", 0, 10, mb, seq=2), f("b", 10, 10, mb), f("c", 20, 10, 300 * mb),
             f("d", 30, 10, mb), f("e", 40, 10, mb),
             f("g", 100, 5, mb), f("h", 105, 5, mb)]   # after a gap: a run of its own
    groups = compaction_groups(files, target_file_size=256 * mb, open_file_cost=4 * mb, min_file_num=2)
    assert [sorted(x.file_name for x in g) for g in groups] == [["a", "a2", "b"], ["d", "e"], ["g", "h"]]
    # "c" alone is one file, under min_file_num: left; with 1 it is rewritten (its own columns merged)
    groups = compaction_groups(files, target_file_size=256 * mb, open_file_cost=4 * mb, min_file_num=1)
    assert ["c"] in [[x.file_name for x in g] for g in groups]
    # the weight of small files is the open-file cost: 3 ranges of 4 mb pass a 10 mb target
    groups = compaction_groups([f(str(i), i * 10, 10, 1000) for i in range(7)], target_file_size=10 * mb,
                               open_file_cost=4 * mb, min_file_num=2)
    assert [[x.file_name for x in g] for g in groups] == [["0", "1", "2"], ["3", "4", "5"]]


def test_a_compaction_racing_a_column_update_is_not_applied(java, catalog):
    """Our compaction planned, then Java's MERGE INTO rewrites a column of rows it merges, then
    the compaction commits: its whole-row file would overlap the update's file without the same
    range (a table no reader can merge), so it is a conflict; compact() plans again and keeps
    the update."""
    from paimon_streaming.errors import CommitConflictError
    schema = pa.schema([("id", pa.int32()), ("v", pa.string())])
    t = catalog.create_table("db.race", schema, options={**OPTIONS, "compaction.min.file-num": "2"})
    for start in (0, 5, 10):
        t.write_arrow(pa.table({"id": pa.array(range(start, start + 5), pa.int32()), "v": ["old"] * 5}))
    planned = t._compaction_messages(t.latest_snapshot(), lambda bucket: False)
    java.write_columns(t.path, 5, ["v"], [{"v": "new"}] * 5)
    with pytest.raises(CommitConflictError, match="concurrent column update"):
        t.new_commit().commit(planned, "compactor", 1)
    expected = by_id(java.read(t.path))
    assert [r["v"] for r in expected] == ["old"] * 5 + ["new"] * 5 + ["old"] * 5
    assert t.compact() is not None
    t = ps.Table.open(t.path)
    assert by_id(t.to_arrow().to_pylist()) == expected == by_id(java.read(t.path))
    assert len(live(t)) == 1


def test_column_files_over_part_of_a_files_rows_are_refused_naming_them(java, tmp_path):
    """Java's MERGE INTO may rewrite a column for part of a file's rows: a file of other row-id
    bounds overlapping the first. Merging such ranges is not implemented (nor in Java 1.4.2):
    the read is refused, naming the files and ranges, never answered from one of them."""
    path = str(tmp_path / "part")
    with java.batch() as b:
        b.create_table(path, FIELDS, options=OPTIONS)
        b.write(path, [{"id": i, "v": f"v{i}", "n": i} for i in range(10)])
        b.write_columns(path, 2, ["v"], [{"v": f"new{i}"} for i in range(2, 6)])
        javas = b.read(path, catch_error=True)
    t = ps.Table.open(path)
    with pytest.raises(UnsupportedOperationError, match=r"cover overlapping but different row ranges "
                                                         r"\[\(0, 10\), \(2, 4\)\] .* not implemented"):
        t.to_arrow()
    assert "should be all row id ranges same" in javas.result.error  # Java 1.4.2 refuses it too


def test_a_table_with_deletion_vectors_as_pypaimon_writes_it_is_refused(catalog):
    """pypaimon 2.1 writes data evolution with deletion vectors (Java refuses the combination):
    reads by row id here ignored its vectors, returning deleted rows, and a compaction here
    brought them back for every reader."""
    import json
    t = catalog.create_table("db.dv", pa.schema([("id", pa.int64())]),
                             options={"row-tracking.enabled": "true", "data-evolution.enabled": "true"})
    t.write_arrow(pa.table({"id": [1, 2]}))
    path = f"{t.path}/schema/schema-0"
    schema = json.loads(t.file_io.read_text(path))
    schema["options"]["deletion-vectors.enabled"] = "true"
    schema.pop("paimon-streaming.check")  # as pypaimon writes it: no check of ours
    t.file_io.overwrite_atomic(path, json.dumps(schema).encode())
    opened = ps.Table.open(t.path)
    for action in (opened.to_arrow, lambda: opened.write_arrow(pa.table({"id": [3]})), opened.compact):
        with pytest.raises(UnsupportedOperationError, match="data evolution with deletion vectors"):
            action()
