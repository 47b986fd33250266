"""A new user's walk-through of the README's Spark sections, beyond the happy path: what a
Delta Lake or Iceberg user types (their options, their habits) must either do what they mean or
fail naming the option, never answer or write something else without a word.

- a write option of another connector (`replaceWhere`, `txnAppId`, ...) is refused: ignored,
  `replaceWhere` turned a partition replacement into a replacement of the whole table;
- table options given to a write into an existing table are applied only when the write creates
  it: a misspelt key was silently ignored (now refused), other values than the table's are named
  in a warning;
- `checkpointLocation` of writeStream.format("paimon") is not stored as a table option;
- a query whose commit user already committed later batches (a second query, or a checkpoint
  started afresh, under the same `commitUser`) fails instead of skipping its batches as replays;
- a column differing from the table's only in case is named as such, not as a new column;
- read options of other connectors (`versionAsOf`, `startingVersion`, `as-of-timestamp`, ...)
  and misspellings of this source's own options are refused: ignored, the read answered from
  the latest snapshot, or the stream ran unbounded.
"""
from __future__ import annotations

import os
import shutil

import pyarrow as pa
import pytest

import paimon_streaming as ps
from pyspark.sql.pandas.types import from_arrow_schema

from paimon_streaming.errors import InvalidOptionError
from paimon_streaming.sinks import paimon_sink
from paimon_streaming.sinks.datasource import PaimonBatchWriter
from paimon_streaming.sources.options import ReadSpec
from conftest import rows_by
from test_spark_sink import write_input_files

SCHEMA = pa.schema([pa.field("id", pa.int64(), False), pa.field("dt", pa.string(), False), pa.field("v", pa.string())])
DDL = "id long, dt string, v string"


def partitioned(catalog, name: str = "db.orders", **options) -> ps.Table:
    t = catalog.create_table(name, SCHEMA, primary_keys=["id", "dt"], partition_keys=["dt"],
                             options={"bucket": "2", **options})
    t.write_arrow(pa.table({"id": [1, 2, 3], "dt": ["d1", "d1", "d2"], "v": ["a", "b", "c"]}, schema=SCHEMA))
    return t


def batch_writer(path: str, overwrite: bool = False, **options):
    """The data source's batch writer as Spark makes it (option keys in lower case), without a
    query: the checks run when it is made."""
    return PaimonBatchWriter({"path": path, **{k.lower(): v for k, v in options.items()}},
                             from_arrow_schema(SCHEMA), overwrite)


@pytest.mark.parametrize("key, value", [("replaceWhere", "dt = 'd1'"), ("overwriteSchema", "true"),
                                        ("txnAppId", "app"), ("txnVersion", "3"), ("overwrite-mode", "dynamic"),
                                        ("merge-schema", "true")])
def test_foreign_write_options_are_refused(catalog, key, value):
    t = partitioned(catalog)
    with pytest.raises(InvalidOptionError, match=key.lower()) as info:
        batch_writer(t.path, overwrite=True, **{key: value})
    meant = {"overwrite-mode": "partitionOverwriteMode", "merge-schema": "mergeSchema", "replaceWhere": "dynamic",
             "txnAppId": "paimon_sink", "txnVersion": "commitUser", "overwriteSchema": "update_schema"}[key]
    assert meant in str(info.value)


def test_delta_replace_where_no_longer_replaces_the_whole_table(spark, catalog):
    """Delta's `replaceWhere` asks to replace only the matching rows; ignored, the overwrite
    replaced the whole table (partition d2 was lost). Refused, nothing is written; what it meant
    is a dynamic partition overwrite."""
    t = partitioned(catalog)
    before = rows_by(t.to_arrow(), "id")
    df = spark.createDataFrame([(10, "d1", "new")], DDL)
    with pytest.raises(Exception, match="replaceWhere"):
        df.write.format("paimon").mode("overwrite").option("replaceWhere", "dt = 'd1'").save(t.path)
    assert rows_by(ps.Table.open(t.path).to_arrow(), "id") == before
    df.write.format("paimon").mode("overwrite").option("partitionOverwriteMode", "dynamic").save(t.path)
    assert rows_by(ps.Table.open(t.path).to_arrow(), "id") == [
        {"id": 3, "dt": "d2", "v": "c"}, {"id": 10, "dt": "d1", "v": "new"}]


def test_a_misspelt_table_option_given_to_an_existing_table_is_refused(catalog):
    """Table options of a write are applied when the write creates the table; a misspelt one
    given to a write into an existing table was silently ignored."""
    t = partitioned(catalog)
    with pytest.raises(InvalidOptionError, match="'buckett'.*did you mean 'bucket'"):
        batch_writer(t.path, buckett="2")
    with pytest.raises(InvalidOptionError, match="'merge_engine'.*did you mean 'merge-engine'"):
        paimon_sink(t.path, commit_user="u", options={"merge_engine": "first-row"})._table(None)


def test_other_values_of_table_options_are_named_in_a_warning(catalog, caplog):
    """Values other than the table's (it was rescaled or altered since a write created it) are
    not applied: the write says so, naming each and the table's value, and writes as the table
    says (a job that passes its creation options again keeps running after a rescale)."""
    t = partitioned(catalog)
    with caplog.at_level("WARNING", logger="paimon_streaming.sink"):
        batch_writer(t.path, **{"primary-key": "id, dt", "partition": "dt", "bucket": "2", "write-only": "False"})
        assert not caplog.records  # the README's first write, run again: the table's own values
        batch_writer(t.path, **{"bucket": "8", "merge-engine": "first-row", "commit.timeout": "5 s"})
    text = caplog.records[-1].getMessage()
    assert "'bucket' = '8' (the table's: '2')" in text and "'merge-engine' = 'first-row' (the table's: " \
        "'deduplicate')" in text and "'commit.timeout' = '5 s' (the table's: unset)" in text, text


def test_table_options_of_writes_through_spark_and_the_sink(spark, tmp_path):
    path = str(tmp_path / "t")
    df = spark.createDataFrame([(1, "d1", "a")], DDL)
    for _ in range(2):  # the README's first line, run twice
        df.write.format("paimon").option("primary-key", "id,dt").option("bucket", "4").mode("append").save(path)
    with pytest.raises(Exception, match="did you mean 'bucket'"):
        df.write.format("paimon").option("buckett", "8").mode("append").save(path)
    assert ps.Table.open(path).options.bucket == 4 and ps.Table.open(path).latest_snapshot().id == 2
    with pytest.raises(InvalidOptionError, match="did you mean 'bucket'"):
        paimon_sink(path, commit_user="u", options={"Bucket ": "8"})(df, 0)
    paimon_sink(path, commit_user="u", options={"bucket": "8", "primary-key": "id,dt"})(df, 0)
    assert ps.Table.open(path).options.bucket == 4 and ps.Table.open(path).latest_snapshot().id == 3


def write_files(directory, tables: list[pa.Table]) -> str:
    """The tables as a file source's input (test_spark_sink.write_input_files); its directory."""
    write_input_files(directory, tables)
    return str(directory)


def stream_into(spark, source: str, checkpoint, target: str | None = None, sink=None, **options):
    df = spark.readStream.schema("id long, v string").option("maxFilesPerTrigger", 1).parquet(source)
    writer = df.writeStream.format("paimon") if sink is None else df.writeStream.foreachBatch(sink)
    for key, value in options.items():
        writer = writer.option(key, value)
    q = writer.option("checkpointLocation", str(checkpoint)).trigger(availableNow=True)
    q = q.start(target) if sink is None else q.start()
    try:
        q.awaitTermination(300)
    except Exception:  # noqa: BLE001 - reported through q.exception()
        pass
    return q.exception()


def test_a_reused_commit_user_fails_instead_of_dropping_the_batches(spark, tmp_path):
    """Two queries (or one restarted with a fresh checkpoint) under one commitUser: the second's
    batch ids 0 and 1 were committed by the first, so they were skipped as replays and their rows
    silently lost. The snapshots now name the query that committed them (its checkpoint for
    writeStream.format("paimon"), its query id for foreachBatch), and a batch committed by
    another query is refused naming the commit user option; replays of the same query are
    still skipped. The stream writer did not store `checkpointLocation` as a table option
    either."""
    source = write_files(tmp_path / "in", [pa.table({"id": [i * 10 + j for j in range(3)], "v": [f"b{i}"] * 3})
                                           for i in range(2)])
    path = str(tmp_path / "t")
    assert stream_into(spark, source, tmp_path / "ck1", path, commitUser="ingest") is None
    t = ps.Table.open(path)
    assert t.to_arrow().num_rows == 6
    assert "checkpointlocation" not in {k.lower() for k in t.schema.options}
    error = stream_into(spark, source, tmp_path / "ck2", path, commitUser="ingest")
    assert error is not None and "commitUser" in str(error) and "CommitIdentifierError" in str(error), error
    assert ps.Table.open(path).to_arrow().num_rows == 6 and ps.Table.open(path).latest_snapshot().id == 2
    # restarted from its own checkpoint, the query finds nothing to do and fails on nothing
    assert stream_into(spark, source, tmp_path / "ck1", path, commitUser="ingest") is None
    # foreachBatch with an explicit commit_user: the same rule (the query id tells the queries apart)
    sink_path = str(tmp_path / "s")
    assert stream_into(spark, source, tmp_path / "ck3", sink=paimon_sink(sink_path, commit_user="job")) is None
    error = stream_into(spark, source, tmp_path / "ck4", sink=paimon_sink(sink_path, commit_user="job"))
    assert error is not None and "commit_user=" in str(error) and "CommitIdentifierError" in str(error), error
    assert ps.Table.open(sink_path).to_arrow().num_rows == 6 and ps.Table.open(sink_path).latest_snapshot().id == 2
    # a replay of a batch (outside a query, as a restart would) is still skipped
    paimon_sink(sink_path, commit_user="job")(spark.createDataFrame([(3, "c")], "id long, v string"), 1)
    assert ps.Table.open(sink_path).latest_snapshot().id == 2


def test_a_checkpoint_of_a_dropped_table_is_refused_before_it_is_created_again(spark, tmp_path):
    """writeStream.format("paimon") restarted from its checkpoint after its table was dropped
    created the table again and resumed after the checkpoint's batches: their rows were missing
    from it, silently. Refused naming the checkpoint; a new checkpoint writes every row."""
    source = tmp_path / "in"
    batches = [pa.table({"id": [i * 10 + j for j in range(3)], "v": [f"b{i}"] * 3}) for i in range(2)]
    write_files(source, batches)
    path = str(tmp_path / "t")
    assert stream_into(spark, str(source), tmp_path / "ck", path, commitUser="orders") is None
    shutil.rmtree(path)
    write_files(source, batches + [pa.table({"id": [100], "v": ["new"]})])
    error = stream_into(spark, str(source), tmp_path / "ck", path, commitUser="orders")
    assert error is not None and f"checkpoint {tmp_path / 'ck'} finished micro-batches up to 1" in str(error) \
        and "the table does not exist" in str(error) and "new checkpointLocation" in str(error), error
    assert not os.path.exists(path)
    assert stream_into(spark, str(source), tmp_path / "ck2", path, commitUser="orders2") is None
    assert ps.Table.open(path).to_arrow().num_rows == 7


def test_a_column_differing_only_in_case_is_named(spark, catalog):
    """`ID` against the table's `id` was reported as a new column, with the advice to merge the
    schema (which then refused it): the error names the table's column."""
    t = partitioned(catalog)
    df = spark.createDataFrame([(5, "d1", "e")], "ID long, dt string, v string")
    with pytest.raises(Exception) as info:
        df.write.format("paimon").mode("append").save(t.path)
    text = str(info.value)
    assert "only in case" in text and "'id'" in text, text[-2000:]
    with pytest.raises(Exception, match="only in case"):
        paimon_sink(t.path, commit_user="u")(df, 0)
    assert t.latest_snapshot().id == 1


@pytest.mark.parametrize("key, value, meant", [
    ("versionasof", "1", "snapshot-id"),                 # Delta
    ("timestampasof", "2024-05-01 00:00:00", "scan.timestamp"),
    ("startingversion", "1", "scan.snapshot-id"),
    ("startingtimestamp", "2024-05-01", "scan.timestamp"),
    ("readchangefeed", "true", "rowKindColumn"),
    ("as-of-timestamp", "1700000000000", "timestamp-millis"),   # Iceberg
    ("start-snapshot-id", "1", "incremental-between"),
    ("end-snapshot-id", "2", "incremental-between"),
    ("stream-from-timestamp", "1700000000000", "scan.timestamp-millis"),
    ("streaming-max-files-per-micro-batch", "1", "max-files-per-trigger"),
    ("snapshotid", "1", "snapshot-id"),                  # typos of this source's own options
    ("max-file-per-trigger", "1", "max-files-per-trigger"),
    ("maxfilespertriger", "1", "maxFilesPerTrigger"),
    ("rowkindcolum", "_k", "rowKindColumn"),
])
def test_foreign_and_misspelt_read_options_are_refused(tmp_path, key, value, meant):
    """Read as given, each would be ignored: a batch read answered from the latest snapshot and a
    stream started from the full state, or ran without its bound."""
    with pytest.raises(InvalidOptionError) as info:
        ReadSpec.parse({"path": str(tmp_path / "t"), key: value})
    assert key in str(info.value) and meant in str(info.value), str(info.value)


def test_reads_through_spark_refuse_delta_time_travel_and_name_an_unreadable_column(spark, catalog):
    """Delta's versionAsOf answered from the latest snapshot; a read schema whose type a stored
    value does not fit (`id int` over a BIGINT holding 2**40) failed in pyarrow without naming
    the column."""
    t = partitioned(catalog)
    t.write_arrow(pa.table({"id": [2**40], "dt": ["d2"], "v": ["d"]}, schema=SCHEMA))
    with pytest.raises(Exception, match="versionAsOf"):
        spark.read.format("paimon").option("versionAsOf", 1).load(t.path).collect()
    got = spark.read.format("paimon").option("snapshot-id", 1).load(t.path).collect()
    assert rows_by(pa.Table.from_pylist([r.asDict() for r in got]), "id") == rows_by(t.to_arrow(snapshot_id=1), "id")
    with pytest.raises(Exception, match="column 'id' cannot be read as int32"):
        spark.read.format("paimon").schema("id int, v string").load(t.path).collect()


def test_complete_output_mode_replaces_the_table_each_batch(spark, tmp_path):
    """An aggregation written with outputMode("complete") hands every micro-batch the whole
    result: Paimon's Java sink overwrites the table with it each time. Ours appended it, so the
    table held every batch's stale counts (a: 1, 2 and 4 rows) instead of the result."""
    source = write_files(tmp_path / "in", [pa.table({"id": list(range(i + 1)), "v": ["a", "b", "a"][: i + 1]})
                                           for i in range(3)])
    path = str(tmp_path / "agg")
    counts = spark.readStream.schema("id long, v string").option("maxFilesPerTrigger", 1).parquet(source) \
        .groupBy("v").count()
    q = (counts.writeStream.format("paimon").outputMode("complete").option("commitUser", "agg")
         .option("checkpointLocation", str(tmp_path / "ck")).trigger(availableNow=True).start(path))
    q.awaitTermination(300)
    assert q.exception() is None, q.exception()
    t = ps.Table.open(path)
    assert rows_by(t.to_arrow(), "v") == [{"v": "a", "count": 4}, {"v": "b", "count": 2}]
    assert [s.commit_kind for s in t.snapshots()] == ["OVERWRITE"] * 3
