"""Rescaling fixed-bucket tables (rescale.py): a new `bucket` count, partitions rewritten to it.

As in Paimon, a change of the option leaves the files as they are, writes into partitions of
the old count are refused until `Table.rescale` rewrites them, and Paimon 1.4.2 reads, writes
and compacts the rescaled table.
"""
from __future__ import annotations

import json

import pyarrow as pa
import pytest

import paimon_streaming as ps
import paimon_streaming.rescale as rescale_module
from conftest import pypaimon_read
from paimon_streaming.errors import InvalidOptionError, SchemaMismatchError, UnsupportedOperationError
from paimon_streaming.scan import TableScan

SCHEMA = pa.schema([pa.field("id", pa.int64(), False), ("v", pa.string()), ("n", pa.int64()),
                    pa.field("dt", pa.string(), False)])


def batch(ids, tag: str, dt: str | None = None) -> pa.Table:
    ids = list(ids)
    return pa.table({"id": pa.array(ids, pa.int64()), "v": [f"{tag}{i}" for i in ids],
                     "n": pa.array([i % 7 for i in ids], pa.int64()),
                     "dt": [dt or ("x" if i % 2 else "y") for i in ids]})


def layout(t: ps.Table) -> dict[str, set[int]]:
    """The bucket counts of each partition's live files."""
    scan = TableScan(t.file_io, t.path, t.schema)
    out: dict[str, set[int]] = {}
    for e in scan.live_entries(t.latest_snapshot()):
        out.setdefault(scan.partition_values(e.partition)[0], set()).add(e.total_buckets)
    return out


def rows_of(table: pa.Table | list[dict]) -> list[tuple]:
    items = table.to_pylist() if isinstance(table, pa.Table) else table
    return sorted((r["id"], r["dt"], r["v"], r["n"]) for r in items)


@pytest.mark.parametrize("options", [
    {"deletion-vectors.enabled": "true"},
    {},
    {"deletion-vectors.enabled": "true", "changelog-producer": "lookup"},
    {"merge-engine": "aggregation", "fields.n.aggregate-function": "sum"},
], ids=["dv", "mor", "lookup-changelog", "aggregation"])
def test_rescale_rewrites_partitions_and_java_reads_writes_and_compacts(tmp_path, options):
    warehouse = str(tmp_path)
    t = ps.Catalog(warehouse).create_table("db.t", SCHEMA, primary_keys=["id", "dt"], partition_keys=["dt"],
                                           options={"bucket": "2", **options})
    t.write_arrow(batch(range(400), "a"))
    t.write_arrow(batch(range(0, 400, 3), "b"))
    t.write_arrow(batch(range(1000, 1010), "l", dt="z"), commit_user="u", commit_identifier=1)
    before = t.to_arrow()
    with t.update_schema() as update:
        update.set_option("bucket", "5")
    t.refresh()
    assert layout(t) == {"x": {2}, "y": {2}, "z": {2}}
    assert rows_of(t.to_arrow()) == rows_of(before)  # the option alone moves nothing
    with pytest.raises(UnsupportedOperationError, match=r"cannot write partition dt=x of db.t with 5 buckets: its "
                                                        r"files are in 2 buckets .* rescale it first"):
        t.write_arrow(batch([1], "c"))
    t.write_arrow(batch(range(2000, 2010), "w", dt="w"))  # a new partition takes the new count

    sid = t.rescale(partitions=[("dt", "=", "x")])
    assert t.snapshot(sid).commit_kind == "OVERWRITE"
    assert layout(t) == {"x": {5}, "y": {2}, "z": {2}, "w": {5}}
    assert rows_of(t.to_arrow()) == sorted(rows_of(before) + rows_of(batch(range(2000, 2010), "w", dt="w")))
    if options.get("changelog-producer") == "lookup":  # a rescale changes no row: no changelog
        assert t.changes_between(sid - 1, sid, mode="changelog").num_rows == 0
    assert t.rescale(partitions=[("dt", "=", "x")]) is None  # already at the count
    t.rescale()
    assert layout(t) == {"x": {5}, "y": {5}, "z": {5}, "w": {5}}
    t.write_arrow(batch([1, 2], "c"))
    expected = rows_of(t.to_arrow())
    assert len(expected) == before.num_rows + 10
    assert rows_of(pypaimon_read(warehouse, "db.t")) == expected

    from java_oracle import get_oracle
    more = batch([3, 4, 3001], "j")
    with get_oracle().batch() as jb:
        read = jb.read(t.path)
        jb.write(t.path, more.to_pylist())
        jb.compact(t.path)
        after = jb.read(t.path)
    assert rows_of(read.result) == expected
    t.refresh()
    ours = rows_of(t.to_arrow())
    assert rows_of(after.result) == ours
    if "merge-engine" not in options:
        assert {(r[0], r[2]) for r in ours} >= {(3, "j3"), (4, "j4"), (3001, "j3001")}
    assert layout(t) == {"x": {5}, "y": {5}, "z": {5}, "w": {5}}


def test_append_table_with_a_bucket_key_keeps_its_rows(tmp_path):
    t = ps.Catalog(str(tmp_path)).create_table("db.a", SCHEMA, partition_keys=["dt"],
                                               options={"bucket": "3", "bucket-key": "id"})
    for i in range(3):
        t.write_arrow(batch(range(i * 100, i * 100 + 150), f"r{i}"))  # ids written twice: append keeps both
    before = rows_of(t.to_arrow())
    assert t.rescale(bucket=1) is not None
    assert layout(t) == {"x": {1}, "y": {1}} and t.options.bucket == 1
    assert rows_of(t.to_arrow()) == before
    from java_oracle import get_oracle
    assert rows_of(get_oracle().read(t.path)) == before


def test_a_write_landing_during_a_rescale_plans_it_again(tmp_path, monkeypatch):
    """A writer that still has the old count commits into the partition between the rescale's
    read and its commit: the commit refuses to leave files of two counts there, and the rescale,
    planned again, includes the new rows. The old writer's next write takes up the new count
    (the rescale's snapshot has a newer schema: Table.follow_schema)."""
    warehouse = str(tmp_path)
    t = ps.Catalog(warehouse).create_table("db.t", SCHEMA, primary_keys=["id", "dt"], partition_keys=["dt"],
                                           options={"bucket": "2", "deletion-vectors.enabled": "true"})
    t.write_arrow(batch(range(100), "a"))
    old_writer = ps.Catalog(warehouse).get_table("db.t")  # loaded before the change: writes 2 buckets
    real, calls = rescale_module._rewrite, []

    def racing(table, latest, expression):
        messages = real(table, latest, expression)
        if not calls:
            old_writer.write_arrow(batch([7, 500], "late"))
        calls.append(latest.id)
        return messages
    monkeypatch.setattr(rescale_module, "_rewrite", racing)
    t.rescale(bucket=4)
    assert len(calls) == 2
    assert layout(t) == {"x": {4}, "y": {4}}
    got = {r["id"]: r["v"] for r in t.to_arrow().to_pylist()}
    assert got[7] == "late7" and got[500] == "late500" and len(got) == 101
    old_writer.write_arrow(batch([8], "later"))
    assert layout(t) == {"x": {4}, "y": {4}} and old_writer.options.bucket == 4
    assert {r["id"]: r["v"] for r in t.to_arrow().to_pylist()}[8] == "later8"


def test_refusals(tmp_path):
    cat = ps.Catalog(str(tmp_path))
    dynamic = cat.create_table("db.d", SCHEMA, primary_keys=["id"], options={"bucket": "-1"})
    dynamic.write_arrow(batch([1], "a"))
    with pytest.raises(UnsupportedOperationError, match=r"bucket mode is dynamic \(-1\)"):
        dynamic.rescale(bucket=4)
    with pytest.raises(InvalidOptionError, match=r"'bucket' can change from one fixed count to another \(-1 -> 4"):
        with dynamic.update_schema() as update:
            update.set_option("bucket", "4")
    fixed = cat.create_table("db.f", SCHEMA, primary_keys=["id", "dt"], partition_keys=["dt"], options={"bucket": "2"})
    fixed.write_arrow(batch([1, 2], "a"))
    for value in ("-1", "-2", "0"):
        with pytest.raises(InvalidOptionError, match=rf"\(2 -> {value} cannot\)"):
            with fixed.update_schema() as update:
                update.set_option("bucket", value)
    with pytest.raises(InvalidOptionError, match=r"\(2 -> None cannot\)"):
        with fixed.update_schema() as update:
            update.remove_option("bucket")
    with pytest.raises(UnsupportedOperationError, match="a fixed count above 0"):
        fixed.rescale(bucket=0)
    with pytest.raises(SchemaMismatchError, match=r"partition columns \['dt'\] only"):
        fixed.rescale(bucket=3, partitions=[("id", "=", 1)])
    assert fixed.options.bucket == 2  # refused before the option changed
    whole = cat.create_table("db.w", SCHEMA, primary_keys=["id"], options={"bucket": "2"})
    assert rescale_module.partitions_to_rescale(whole, 4) == []   # no snapshot yet: nothing to rewrite
    assert whole.rescale(bucket=4) is None and whole.options.bucket == 4
    whole.write_arrow(batch([1], "a"))
    with pytest.raises(SchemaMismatchError, match=r"db.w is not partitioned: rescale it whole \(no partition filter\)"):
        whole.rescale(bucket=3, partitions=[("dt", "=", "x")])
    assert whole.options.bucket == 4


def test_cli_rescale(tmp_path, capsys):
    from paimon_streaming.cli import main
    t = ps.Catalog(str(tmp_path)).create_table("db.t", SCHEMA, primary_keys=["id", "dt"], partition_keys=["dt"],
                                               options={"bucket": "2", "deletion-vectors.enabled": "true"})
    t.write_arrow(batch(range(50), "a"))
    t.write_arrow(batch(range(10), "b"))  # new versions of 10 rows: records in files, not live rows
    assert main(["rescale", t.path, "--bucket", "3", "--dry-run", "--json"]) == 0
    planned = json.loads(capsys.readouterr().out)
    # the figure was labelled "rows" and documented as live rows, but counts every record in the files
    records = {p["partition"]["dt"]: p["records"] for p in planned["partitions"]}
    assert planned["bucket"] == 3 and [p["buckets"] for p in planned["partitions"]] == [[2], [2]]
    assert sum(records.values()) == t.latest_snapshot().total_record_count and min(records.values()) > 25
    assert main(["rescale", t.path, "--bucket", "3", "--dry-run"]) == 0
    out = capsys.readouterr().out.splitlines()  # partitions as k=v, as expire-partitions prints them
    assert out[0].startswith("2 partition(s) of") and out[1].split() == ["partition", "buckets", "records"]
    assert sorted(line.split() for line in out[3:]) == [["dt=x", "[2]", str(records["x"])],
                                                         ["dt=y", "[2]", str(records["y"])]]
    t.refresh()
    assert t.options.bucket == 2 and layout(t) == {"x": {2}, "y": {2}}  # nothing changed
    assert main(["rescale", t.path, "--bucket", "3", "--where", "dt", "=", "x", "--json"]) == 0
    result = json.loads(capsys.readouterr().out)
    assert result["bucket"] == 3 and result["snapshot"] is not None
    t.refresh()
    assert layout(t) == {"x": {3}, "y": {2}}
    assert main(["rescale", t.path]) == 0
    assert capsys.readouterr().out.startswith(f"rescaled {t.path} to 3 buckets: snapshot ")
    t.refresh()
    assert layout(t) == {"x": {3}, "y": {3}}
    assert sorted(t.to_arrow().column("id").to_pylist()) == list(range(50))


def test_a_write_planned_before_a_rescale_cannot_commit_after_it(tmp_path):
    """Its files, written with the old count, would sit beside the rescaled ones: the commit
    refuses (a plain APPEND commit checks the counts too), and nothing of it is committed."""
    from paimon_streaming.errors import CommitConflictError
    warehouse = str(tmp_path)
    t = ps.Catalog(warehouse).create_table("db.t", SCHEMA, primary_keys=["id", "dt"], partition_keys=["dt"],
                                           options={"bucket": "2"})
    t.write_arrow(batch(range(20), "a"))
    old_writer = ps.Catalog(warehouse).get_table("db.t")
    messages = old_writer.write_messages(batch([5, 100], "late"))
    t.rescale(bucket=3)
    with pytest.raises(CommitConflictError, match=r"would leave a partition with files of \[2, 3\] buckets"):
        old_writer.new_commit().commit(messages, "late-writer", 1)
    assert {r["id"]: r["v"] for r in t.to_arrow().to_pylist()}[5] == "a5" and t.to_arrow().num_rows == 20


def test_check_reports_a_partition_of_two_bucket_counts(tmp_path, monkeypatch):
    from paimon_streaming.check import check_table
    from paimon_streaming.commit import FileStoreCommit
    t = ps.Catalog(str(tmp_path)).create_table("db.t", SCHEMA, primary_keys=["id", "dt"], partition_keys=["dt"],
                                               options={"bucket": "2"})
    t.write_arrow(batch(range(20), "a"))
    messages = t.write_messages(batch([100], "b"))
    with t.update_schema() as update:
        update.set_option("bucket", "3")
    t.refresh()
    messages += t.write_messages(batch([200], "c", dt="new"))
    for m in messages:
        m.total_buckets = 3  # as a faulty writer would have written them
    monkeypatch.setattr(FileStoreCommit, "_check_bucket_counts", lambda *args: None)
    t.new_commit().commit(messages, "faulty", 1)
    found = [(p.kind, p.message) for p in check_table(t).problems]
    assert [k for k, _ in found] == ["bucket-count"], found
    assert "partition dt=y has files of [2, 3] buckets" in found[0][1] or "partition dt=x has files" in found[0][1]


def test_streaming_read_overwrite_skips_a_rescale_and_refuses_an_unmarked_one(tmp_path, monkeypatch):
    """A rescale's OVERWRITE snapshot is marked and changes no row for streams reading overwrites;
    an OVERWRITE that changes a partition's bucket count otherwise (Java's rescale) would be
    diffed per bucket, wrongly: the stream stops naming the snapshot."""
    from paimon_streaming.errors import InvalidOptionError
    from paimon_streaming.rescale import RESCALE_PROPERTY
    from paimon_streaming.streaming_scan import StreamingScan, StreamOptions, StreamPosition
    t = ps.Catalog(str(tmp_path)).create_table("db.t", SCHEMA, primary_keys=["id", "dt"], partition_keys=["dt"],
                                               options={"bucket": "2"})
    t.write_arrow(batch(range(40), "a"))
    sid = t.rescale(bucket=5)
    assert t.snapshot(sid).properties[RESCALE_PROPERTY] == "true"

    def units(snapshot_id: int) -> list:
        options = StreamOptions.from_options(t.schema.options, {"streaming-read-overwrite": "true"})
        scan = StreamingScan(t.file_io, t.path, ps.Table.open(t.path).schema, options)
        return scan.units_between(StreamPosition(snapshot_id), StreamPosition(snapshot_id + 1))
    assert units(sid) == []
    real = ps.Table.commit_planned
    monkeypatch.setattr(ps.Table, "commit_planned", lambda self, *a, properties=None, **kw: real(self, *a, **kw))
    unmarked = t.rescale(bucket=3)
    with pytest.raises(InvalidOptionError, match=rf"OVERWRITE snapshot {unmarked} changed the bucket count"):
        units(unmarked)
