"""The read options of format("paimon") (sources/options.py) that need no Spark session: time
travel spellings resolved to what the reader uses, and options we do not implement refused."""
from __future__ import annotations

import datetime as dt

import pyarrow as pa
import pytest

from paimon_streaming.errors import InvalidOptionError
from paimon_streaming.sources.options import UNSUPPORTED_READ_OPTIONS, ReadSpec

SCHEMA = pa.schema([pa.field("id", pa.int64(), False)])


def test_scan_timestamp_is_local_time(tmp_path):
    spec = ReadSpec.parse({"path": str(tmp_path), "scan.timestamp": "2024-05-01 12:00:00.250"})
    assert spec.timestamp_millis == int(dt.datetime(2024, 5, 1, 12, 0, 0, 250000).astimezone().timestamp() * 1000)
    assert ReadSpec.parse({"path": str(tmp_path), "scan.timestamp": "2024-05-01"}).timestamp_millis == \
        int(dt.datetime(2024, 5, 1).astimezone().timestamp() * 1000)
    with pytest.raises(InvalidOptionError, match="'scan.timestamp' must be a local time"):
        ReadSpec.parse({"path": str(tmp_path), "scan.timestamp": "yesterday"})


def test_scan_version_is_a_tag_else_a_snapshot_id(catalog):
    t = catalog.create_table("db.v", SCHEMA)
    t.write_arrow(pa.table({"id": [1]}, schema=SCHEMA))
    t.write_arrow(pa.table({"id": [2]}, schema=SCHEMA))
    t.create_tag("keep", 2)
    assert ReadSpec.parse({"path": t.path, "scan.version": "keep"}).tag == "keep"
    assert ReadSpec.parse({"path": t.path, "scan.version": "1"}).snapshot_id == 1
    with pytest.raises(InvalidOptionError, match="neither a tag"):
        ReadSpec.parse({"path": t.path, "scan.version": "nope"})


@pytest.mark.parametrize("key", sorted(UNSUPPORTED_READ_OPTIONS))
def test_options_that_would_change_the_answer_are_refused(tmp_path, key):
    with pytest.raises(InvalidOptionError, match=f"read option '{key}'"):
        ReadSpec.parse({"path": str(tmp_path), key: "1"})
    ReadSpec.parse({"path": str(tmp_path), key: " "})  # blank: not set
    ReadSpec.parse({"path": str(tmp_path), "branch": "main"})  # the table's own branch


@pytest.mark.parametrize("key, value", [("scan.fallback-branch", "dev"), ("chain-table.enabled", "true")])
def test_tables_whose_batch_reads_span_branches_are_refused(catalog, caplog, key, value):
    """Java's batch reads of such a table also take partitions from other branches; reads that
    would answer without them are refused, naming the option: chain tables always, fallback
    branches in `plan` (one branch's splits) and incremental queries (`to_arrow` reads them:
    test_interop_java.py; a fallback branch that does not exist is ignored, as Java). Streams
    read the table's own branch, as Java's do."""
    from paimon_streaming.errors import UnsupportedOperationError
    from paimon_streaming.streaming_scan import StreamingScan, StreamOptions
    t = catalog.create_table("db.fallback", SCHEMA, options={key: value})
    t.write_arrow(pa.table({"id": [1]}, schema=SCHEMA))
    refused = [lambda: t.plan(t.latest_snapshot()), lambda: t.changes_between(0, 1)]
    if key == "chain-table.enabled":
        refused.append(t.to_arrow)
    else:
        assert t.to_arrow().num_rows == 1 and "fallback branch 'dev'" in caplog.text
    for read in refused:
        with pytest.raises(UnsupportedOperationError, match=f"'{key}' = '{value}'"):
            read()
    ss = StreamingScan(t.file_io, t.path, t.schema, StreamOptions.from_options(t.schema.options, {}))
    assert ss.snapshot_units(1, True)


def test_incremental_options_parse_as_java_spells_them(tmp_path):
    from paimon_streaming.incremental import IncrementalRange
    base = {"path": str(tmp_path)}
    assert ReadSpec.parse({**base, "incremental-between": "5, 10"}).incremental == IncrementalRange(between=("5", "10"))
    spec = ReadSpec.parse({**base, "incremental-between": "t1,t2", "incremental-between-scan-mode": "DIFF",
                           "incremental-between-tag-to-snapshot": "true"})
    assert spec.incremental == IncrementalRange(between=("t1", "t2"), mode="diff", tag_to_snapshot=True)
    local = ReadSpec.parse({**base, "incremental-between-timestamp": "2024-05-01 00:00:00,1714600000000"})
    assert local.incremental.between_timestamps == (int(dt.datetime(2024, 5, 1).astimezone().timestamp() * 1000),
                                                    1714600000000)
    assert ReadSpec.parse({**base, "incremental-to-auto-tag": "2024-12-02"}).incremental.to_auto_tag == "2024-12-02"
    assert ReadSpec.parse(base).incremental is None
    for bad, message in (({"incremental-between": "5"}, "'start,end'"),
                         ({"incremental-between": "5,"}, "'start,end'"),
                         ({"incremental-between": "1,2", "incremental-to-auto-tag": "x"}, "give one of"),
                         ({"incremental-between": "1,2", "incremental-between-scan-mode": "all"}, "scan-mode"),
                         ({"incremental-between": "1,2", "incremental-between-tag-to-snapshot": "yes"}, "true or false"),
                         ({"incremental-between-scan-mode": "delta"}, "needs 'incremental-between'"),
                         ({"incremental-between": "1,2", "scan.snapshot-id": "1"}, "cannot be given with scan.mode"),
                         ({"incremental-between-timestamp": "1,soon"}, "must be a local time")):
        with pytest.raises(InvalidOptionError, match=message):
            ReadSpec.parse({**base, **bad})


@pytest.mark.parametrize("key, meant", [("scan.snapshotid", "scan.snapshot-id"), ("scan_mode", "scan.mode"),
                                         ("consumer_id", "consumer-id"), ("incremental-betwen", "incremental-between"),
                                         ("scan.tag_name", "scan.tag-name")])
def test_a_misspelt_read_option_is_refused_rather_than_ignored(tmp_path, key, meant):
    with pytest.raises(InvalidOptionError, match=f"unknown read option '{key}': did you mean '{meant}'"):
        ReadSpec.parse({"path": str(tmp_path), key: "1"})


def test_this_sources_own_and_unknown_options_pass(tmp_path):
    spec = ReadSpec.parse({"path": str(tmp_path), "max-files-per-trigger": "3", "rowkindcolumn": "k",
                           "read.stream.maxrowspertrigger": "9", "my.own.setting": "x"})
    assert spec.limits.max_files == 3 and spec.limits.max_rows == 9 and spec.row_kind_column == "k"


AGG_SCHEMA = pa.schema([pa.field("id", pa.int64(), False), pa.field("n", pa.int64()), pa.field("v", pa.string())])


@pytest.mark.parametrize("key, value", [
    ("ignore-delete", "true"), ("sequence.field", "v"), ("merge-engine", "first-row"),
    ("merge-engine", "partial-update"), ("fields.n.aggregate-function", "max"), ("fields.n.ignore-retract", "true"),
    ("deletion-vectors.enabled", "true"), ("partial-update.remove-record-on-delete", "true"),
    ("changelog-producer", "input"), ("bucket", "3"), ("file.format", "orc")])
def test_table_options_given_as_read_options_are_refused(catalog, key, value):
    """Java applies a read's table options to the table it reads (AbstractFileStoreTable.copy: a
    max instead of the table's sum, deletes ignored) or refuses them; ours merges by the table's
    own options, so each is refused rather than ignored (batch reads and streams parse alike)."""
    t = catalog.create_table("db.agg", AGG_SCHEMA, primary_keys=["id"],
                             options={"bucket": "1", "merge-engine": "aggregation", "fields.n.aggregate-function": "sum"})
    with pytest.raises(InvalidOptionError, match=f"read option '{key}' = '{value}' is a table option.*alter"):
        ReadSpec.parse({"path": t.path, key: value})


def test_read_options_that_cannot_change_the_answer_pass(catalog):
    """The table's own values (or its defaults) and planning / batch-size options change nothing."""
    t = catalog.create_table("db.agg", AGG_SCHEMA, primary_keys=["id"],
                             options={"bucket": "1", "merge-engine": "aggregation", "fields.n.aggregate-function": "sum"})
    ReadSpec.parse({"path": t.path, "bucket": "1", "merge-engine": "Aggregation", "fields.n.aggregate-function": "sum",
                    "deletion-vectors.enabled": "false", "file.format": "parquet", "read.batch-size": "7",
                    "scan.manifest.parallelism": "2", "scan.plan-sort-partition": "true",
                    "source.split.target-size": "1 mb", "consumer-id": "c", "streaming-read-overwrite": "true"})


@pytest.mark.parametrize("key", ["snapshot-id", "tag", "timestamp-millis"])
def test_an_incremental_query_with_a_time_travel_table_option_is_refused(key):
    """Table options (the Python API's path, which has no source aliases) that ask for an
    incremental query and a time travel at once: refused, naming both, not one silently ignored."""
    from paimon_streaming.table_scan_options import TableScanOptions
    with pytest.raises(InvalidOptionError, match=rf"incremental query \(incremental-between\) takes no time travel "
                                                 rf"option \({key}\)"):
        TableScanOptions.of({"incremental-between": "1,2", key: "1"}, "db.t")



def test_fallback_branch_tags_and_empty_branch(warehouse):
    """`scan.fallback-branch` and tags: a read at a tag takes the branch's partitions from the
    branch's tag of the same name (as Java's rewriteOtherOptions keeps the tag name; Java 1.4.2's
    read then adds none of the branch's rows), and is refused, naming the branch, when the branch
    has no such tag; a branch without snapshots adds nothing; a branch whose columns differ is
    refused, naming both."""
    import paimon_streaming as ps
    from java_oracle import get_oracle
    from paimon_streaming.errors import TagNotFoundError, UnsupportedOperationError
    java = get_oracle()
    path = f"{warehouse}/db.db/fbtags"
    fields = [{"name": "id", "type": "BIGINT NOT NULL"}, {"name": "dt", "type": "STRING NOT NULL"},
              {"name": "v", "type": "STRING"}]
    with java.batch() as b:
        b.create_table(path, fields, partition_keys=["dt"], options={"bucket": "-1"})
        b.create_branch(path, "batch")
        b.alter(path, [{"kind": "set-option", "path": [], "key": "scan.fallback-branch", "value": "batch"}])
        # Java's fallback time travel looks up the main snapshot's schema id in the branch too
        b.alter(path, [{"kind": "set-option", "path": [], "key": "snapshot.num-retained.max", "value": "99"}],
                branch="batch")
        b.write(path, [{"id": 1, "dt": "d2", "v": "main"}])
    t = ps.Table.open(path)

    def rows(table):
        return sorted((r["id"], r["dt"], r["v"]) for r in (table if isinstance(table, list) else table.to_pylist()))
    assert rows(t.to_arrow()) == rows(java.read(path)) == [(1, "d2", "main")]  # the branch has no snapshot
    with java.batch() as b:
        b.write(path, [{"id": 2, "dt": "d1", "v": "batch-1"}], branch="batch")
        b.write(path, [{"id": 3, "dt": "d1", "v": "batch-2"}], branch="batch")
        b.create_tag(path, "t", snapshot_id=1)
    with pytest.raises(TagNotFoundError, match="tag 't' of table .*branch-batch does not exist"):
        t.to_arrow(tag="t")
    ps.Table.open(path, branch="batch").create_tag("t", snapshot_id=1)
    assert rows(t.to_arrow(tag="t")) == [(1, "d2", "main"), (2, "d1", "batch-1")]
    assert rows(java.read(path, tag="t")) == [(1, "d2", "main")]
    assert rows(t.to_arrow()) == rows(java.read(path)) == \
        [(1, "d2", "main"), (2, "d1", "batch-1"), (3, "d1", "batch-2")]
    with java.batch() as b:
        b.alter(path, [{"kind": "add", "path": ["extra"], "type": "INT"}], branch="batch")
    with pytest.raises(UnsupportedOperationError, match="fallback branch 'batch': the branch's columns .*extra"):
        ps.Table.open(path).to_arrow()


def test_javas_older_option_names_as_read_options_yield_to_the_tables_own(catalog):
    """Java merges a read's options over the table's and only then reads `scan.mode` under its
    older name `log.scan`: a read's `log.scan` applies where the table sets no `scan.mode`, and
    the table's own `scan.mode` wins over it (here a read's `log.scan` = latest had overridden
    a table's latest-full, so the stream left out the rows already there)."""
    from paimon_streaming.streaming_scan import StreamOptions
    kept = catalog.create_table("db.kept", pa.schema([("id", pa.int64())]), options={"scan.mode": "latest-full"})
    plain = catalog.create_table("db.plain", pa.schema([("id", pa.int64())]))
    for table, expected in ((kept, "latest-full"), (plain, "latest")):
        spec = ReadSpec.parse({"path": table.path, "log.scan": "latest"})
        assert StreamOptions.from_options(table.schema.options, spec.options).scan_mode == expected
