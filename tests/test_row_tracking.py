"""Row tracking (`row-tracking.enabled`, row_tracking.py): every row of an append table keeps the
id its commit gave it and the snapshot that wrote it, through compaction, deletes, overwrites,
concurrent writers and Java's writers; Java reads the same ids through its `$row_tracking`
table."""
from __future__ import annotations

from dataclasses import replace

import numpy as np
import pyarrow as pa
import pytest

import paimon_streaming as ps
from paimon_streaming import row_tracking
from paimon_streaming.check import check_table
from paimon_streaming.errors import CorruptFileError, InvalidOptionError, SchemaMismatchError
from paimon_streaming.manifest.entries import FILE_SOURCE_APPEND, FILE_SOURCE_COMPACT
from conftest import pypaimon_read
from test_append_compaction import live, mark_deleted

SCHEMA = pa.schema([("id", pa.int64()), ("p", pa.int32()), ("s", pa.string())])
TRACKED = ["id", "_ROW_ID", "_SEQUENCE_NUMBER"]


def batch(start: int, n: int) -> pa.Table:
    ids = np.arange(start, start + n)
    return pa.table({"id": ids, "p": (ids % 2).astype(np.int32), "s": [f"v{i}" for i in ids]})


def lineage(t: ps.Table, **read) -> dict[int, tuple[int, int]]:
    """id -> (_ROW_ID, _SEQUENCE_NUMBER) as we read them."""
    return {r["id"]: (r["_ROW_ID"], r["_SEQUENCE_NUMBER"]) for r in t.to_arrow(columns=TRACKED, **read).to_pylist()}


def java_lineage(rows: list[dict]) -> dict[int, tuple[int, int]]:
    return {r["id"]: (r["_ROW_ID"], r["_SEQUENCE_NUMBER"]) for r in rows}


def tracked_table(catalog, name: str, **options) -> ps.Table:
    return catalog.create_table(name, SCHEMA, partition_keys=["p"],
                                options={"row-tracking.enabled": "true", "compaction.min.file-num": "3", **options})


def test_each_commit_numbers_its_rows_and_compaction_keeps_them(catalog, warehouse):
    t = tracked_table(catalog, "db.rt")
    sizes = [5, 7, 3, 9, 4, 6]
    first: dict[int, tuple[int, int]] = {}
    start = 0
    for k, n in enumerate(sizes):
        if k == 3:  # files of both schemas are merged and read with their ids
            t.update_schema().add_column("n", pa.int32()).commit()
            t = ps.Table.open(t.path)
        rows = batch(start, n)
        t.write_arrow(rows if k < 3 else rows.append_column("n", pa.array(np.zeros(n, np.int32))))
        snap = t.latest_snapshot()
        appended = next(s for s in reversed(t.snapshots()) if s.commit_kind == "APPEND")
        now = lineage(t)
        new = {i: now[i] for i in range(start, start + n)}
        # the commit numbered exactly its own rows, after all earlier ones, stamped with its id
        assert sorted(v[0] for v in new.values()) == list(range(start, start + n))
        assert {v[1] for v in new.values()} == {appended.id}
        assert snap.next_row_id == start + n
        assert {i: now[i] for i in first} == first, "earlier rows keep their ids"
        first.update(new)
        start += n
    kinds = [s.commit_kind for s in t.snapshots()]
    assert "COMPACT" in kinds, kinds
    compacted = [e.file for e in live(t) if e.file.file_source == FILE_SOURCE_COMPACT]
    assert compacted and all(f.first_row_id is None and f.write_cols[-2:] == row_tracking.NAMES
                             for f in compacted)
    t.compact(full=True)
    assert lineage(t) == first
    assert check_table(t).problems == []  # the merged files' id columns verified too
    assert {r["id"] for r in pypaimon_read(warehouse, "db.rt").to_pylist()} == set(first)


def test_java_reads_our_ids_and_we_read_its(catalog):
    from java_oracle import get_oracle
    java = get_oracle()
    t = tracked_table(catalog, "db.interop")
    for start, n in ((0, 4), (4, 4), (8, 4), (12, 5)):
        t.write_arrow(batch(start, n))
    ours = lineage(t)
    java.write(t.path, [{"id": 100 + i, "p": i % 2, "s": "java"} for i in range(3)])
    java.compact(t.path)               # as Spark's compaction: ids kept in the rewritten files
    t = ps.Table.open(t.path)
    with_java = lineage(t)
    assert {i: with_java[i] for i in ours} == ours
    assert sorted(with_java[100 + i][0] for i in range(3)) == [17, 18, 19]
    t.write_arrow(batch(200, 2))      # our commit continues Java's counter
    t = ps.Table.open(t.path)
    ours = lineage(t)
    assert sorted(ours[200 + i][0] for i in range(2)) == [20, 21]
    assert t.latest_snapshot().next_row_id == 22
    t.compact(full=True)
    assert java_lineage(java.read(t.path, system_table="row_tracking")) == ours == lineage(ps.Table.open(t.path))


def test_deleted_rows_leave_the_others_their_ids(catalog):
    t = catalog.create_table("db.dv", pa.schema([("id", pa.int64()), ("s", pa.string())]),
                             options={"row-tracking.enabled": "true", "deletion-vectors.enabled": "true",
                                      "compaction.min.file-num": "10"})
    for start in (0, 50, 100):
        t.write_arrow(pa.table({"id": np.arange(start, start + 50), "s": ["x"] * 50}))
    before = lineage(t)
    files = sorted((e.file for e in live(t)), key=lambda f: f.first_row_id)
    mark_deleted(t, {files[0].file_name: [0, 7, 49], files[2].file_name: list(range(20))})
    gone = {0, 7, 49} | set(range(100, 120))
    expected = {i: v for i, v in before.items() if i not in gone}
    assert lineage(t) == expected       # positions skip the deleted rows
    t.compact(full=True)
    assert lineage(t) == expected
    assert all(row_tracking.stores_row_ids(e.file) for e in live(t))


def test_overwrite_numbers_the_new_rows(catalog):
    t = tracked_table(catalog, "db.ow")
    t.write_arrow(batch(0, 10))
    t.write_arrow(batch(10, 4), overwrite=True)
    assert sorted(v[0] for v in lineage(t).values()) == [10, 11, 12, 13]
    assert t.latest_snapshot().next_row_id == 14


def test_concurrent_commits_never_share_ids(catalog):
    """Two writers plan on the same snapshot; ids are taken when each commits, so the second
    to commit numbers its rows after the first's."""
    t = tracked_table(catalog, "db.race")
    t.write_arrow(batch(0, 3))
    a, b = ps.Table.open(t.path), ps.Table.open(t.path)
    messages_a, messages_b = a.write_messages(batch(100, 5)), b.write_messages(batch(200, 6))
    b.new_commit().commit(messages_b, "writer-b", 1)
    a.new_commit().commit(messages_a, "writer-a", 1)
    ids = lineage(ps.Table.open(t.path))
    assert sorted(v[0] for v in ids.values()) == list(range(14))
    assert sorted(ids[200 + i][0] for i in range(6)) == list(range(3, 9))
    assert all(f.file_source == FILE_SOURCE_APPEND and f.first_row_id is not None for f in
               (e.file for e in live(ps.Table.open(t.path))))


@pytest.mark.parametrize("options,keys,match", [
    ({"bucket": "2", "bucket-key": "id"}, None, "needs 'bucket' = -1"),
    ({}, ["id"], "is for append tables"),
])
def test_row_tracking_where_paimon_refuses_it(catalog, options, keys, match):
    with pytest.raises(InvalidOptionError, match=match):
        catalog.create_table("db.bad", pa.schema([("id", pa.int64())]), primary_keys=keys,
                             options={"row-tracking.enabled": "true", **options})


def test_row_ids_are_read_only_from_tables_that_keep_them(catalog):
    t = catalog.create_table("db.plain", SCHEMA)
    t.write_arrow(batch(0, 3))
    with pytest.raises(SchemaMismatchError, match="row-tracking tables only"):
        t.to_arrow(columns=["id", "_ROW_ID"])


def planned_files(t: ps.Table, flt) -> int:
    return sum(len(s.files) for s in t.plan(t.latest_snapshot(), flt))


def test_incremental_reads_of_row_ids(catalog):
    """A delta of a range with no appended file (a compaction) answered a raw KeyError for
    `_ROW_ID`; a diff compares rows by their values, which ids are no part of: refused."""
    t = tracked_table(catalog, "db.rt")
    for start in (0, 5, 10, 15):   # the fourth commit compacts the three files before it
        t.write_arrow(batch(start, 5))
    assert [s.commit_kind for s in t.snapshots()] == ["APPEND"] * 4 + ["COMPACT"]
    assert sorted(t.changes_between(1, 2, mode="delta", columns=TRACKED).column("_ROW_ID").to_pylist()) == \
        [5, 6, 7, 8, 9]
    empty = t.changes_between(4, 5, mode="delta", columns=TRACKED)
    assert empty.num_rows == 0 and empty.schema.names == TRACKED
    with pytest.raises(SchemaMismatchError, match="column 'nope' is not in the table schema"):
        t.changes_between(4, 5, mode="delta", columns=["id", "nope"])
    with pytest.raises(SchemaMismatchError, match=r"\['_ROW_ID'\] are not part of a diff"):
        t.changes_between(1, 2, mode="diff", columns=["id", "_ROW_ID"])


def test_filters_on_row_ids_prune_files_and_rows(catalog):
    """`_ROW_ID` and `_SEQUENCE_NUMBER` filter like columns: files whose ids (by position, or in
    their own columns after compaction) cannot match are not read, the rows are filtered, with
    deletion vectors applied; a table without row tracking refuses them."""
    t = catalog.create_table("db.filtered", SCHEMA, options={"row-tracking.enabled": "true", "deletion-vectors.enabled":
                                                              "true", "compaction.min.file-num": "4"})
    for k in range(6):
        t.write_arrow(batch(10 * k, 10))
    files = {e.file.file_source: e.file for e in live(t)}
    assert set(files) == {FILE_SOURCE_COMPACT, FILE_SOURCE_APPEND}, files  # ids stored, and by position
    mark_deleted(t, {files[FILE_SOURCE_COMPACT].file_name: [3, 14], files[FILE_SOURCE_APPEND].file_name: [5]})
    rows = {r["id"]: r for r in t.to_arrow(columns=TRACKED).to_pylist()}
    assert len(rows) == 57
    ops = {"=": lambda a, b: a == b, ">=": lambda a, b: a >= b, "<": lambda a, b: a < b, ">": lambda a, b: a > b,
           "in": lambda a, b: a in b}
    for flt in ([("_ROW_ID", "=", 45)], [("_ROW_ID", ">=", 12), ("_ROW_ID", "<", 17)], [("_ROW_ID", "in", [3, 58])],
                [[("_ROW_ID", "<", 2)], [("id", ">", 57)]], [("_SEQUENCE_NUMBER", "=", 2)],
                [("_SEQUENCE_NUMBER", ">", 4), ("id", "<", 59)]):
        groups = flt if isinstance(flt[0], list) else [flt]
        expected = sorted(i for i, r in rows.items() if any(all(ops[op](r[c], v) for c, op, v in g) for g in groups))
        got = t.to_arrow(columns=TRACKED, filter=flt).to_pylist()
        assert expected and sorted(r["id"] for r in got) == expected, flt
        assert all(rows[r["id"]] == r for r in got)
    assert planned_files(t, [("_ROW_ID", "=", 45)]) == 1 < planned_files(t, None)
    assert planned_files(t, [("_ROW_ID", "<", 10)]) == 1
    assert planned_files(t, [("_ROW_ID", ">", 10_000)]) == 0
    plain = catalog.create_table("db.untracked", SCHEMA)
    plain.write_arrow(batch(0, 3))
    with pytest.raises(SchemaMismatchError, match="filter column '_ROW_ID' is not in the table"):
        plain.to_arrow(filter=[("_ROW_ID", "=", 1)])


def test_a_file_without_row_ids_is_refused_not_answered_with_nulls(catalog):
    t = tracked_table(catalog, "db.lost")
    t.write_arrow(batch(0, 3))
    (e, *_) = live(t)
    unnumbered = replace(e.file, first_row_id=None)
    with pytest.raises(CorruptFileError, match="has no row ids"):
        row_tracking.tracking_columns(unnumbered, "data-x.parquet", None, None)
    stored = pa.table({"_ROW_ID": pa.array([5, None], pa.int64()), "_SEQUENCE_NUMBER": pa.array([1, None], pa.int64())})
    with pytest.raises(CorruptFileError, match="without a _ROW_ID"):
        row_tracking.tracking_columns(replace(unnumbered, row_count=2), "data-x.parquet", stored, None)
    ids, seq = row_tracking.tracking_columns(replace(e.file, row_count=2, first_row_id=10, max_sequence_number=4),
                                             "data-x.parquet", stored, None)
    assert ids.to_pylist() == [5, 11] and seq.to_pylist() == [1, 4]


def test_check_reports_row_ids_given_twice(catalog):
    """`check` on a row-tracking table: a snapshot whose nextRowId went back (the next commit
    would number rows with ids in use), and two files numbering the same rows, are errors."""
    import os
    from metadata_edits import edit_snapshot
    t = tracked_table(catalog, "db.checked")
    t.write_arrow(batch(0, 6))
    t.write_arrow(batch(6, 4))
    assert check_table(ps.Table.open(t.path)).problems == []
    snap = t.latest_snapshot()
    edit_snapshot(os.path.join(t.path, "snapshot", f"snapshot-{snap.id}"), next_row_id=7)
    problems = check_table(ps.Table.open(t.path)).problems
    assert [p.kind for p in problems] == ["row-ids"] and "nextRowId 7 is below row ids in use (up to 9)" in \
        problems[0].message
    assert row_tracking.id_problems([e.file for e in live(t)], 10, False) == []
    a, b = [e.file for e in live(t)][:2]
    clash = [a, replace(b, first_row_id=a.first_row_id)]
    assert any("both number rows" in m for m in row_tracking.id_problems(clash, 10, False))
    same = [a, replace(b, first_row_id=a.first_row_id, row_count=a.row_count)]
    assert row_tracking.id_problems(same, 10, True) == []   # data evolution: one range, two files
