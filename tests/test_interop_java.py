"""Interop with Apache Paimon 1.4.2's own Java library (tests/java, built through Maven).

pypaimon departs from Java in places (FORMAT.md, PY≠J); Java is the authority. Each test
batches its Java operations into as few JVM runs as it can.
"""
from __future__ import annotations

import datetime as dt
import os
import re
import time
from decimal import Decimal

import numpy as np
import pyarrow as pa
import pytest

import paimon_streaming as ps
from paimon_streaming.bucket import fixed_buckets
from paimon_streaming.errors import SnapshotNotFoundError
from paimon_streaming.long_lived_changelogs import long_lived_changelog
from paimon_streaming.scan import TableScan
from conftest import rows_by
from stream_batches import open_stream, snapshot_changes, stream_rows
from test_interop_pypaimon import ALL_TYPES, all_types_data, normalize

try:
    from java_oracle import get_oracle
except ImportError:  # pragma: no cover
    from tests.java_oracle import get_oracle


@pytest.fixture(scope="module")
def java():
    return get_oracle()


def by_id(rows, key="id"):
    return sorted(rows, key=lambda r: r[key])


def test_java_reads_what_we_write(java, catalog):
    """Append (Parquet and ORC, every type), primary key over buckets and partitions, dynamic
    bucket mode, and an overwrite: Java's reads equal ours."""
    a = catalog.create_table("db.types", ALL_TYPES)
    a.write_arrow(all_types_data(0, 12))
    a.write_arrow(all_types_data(12, 4))
    orc = catalog.create_table("db.types_orc", ALL_TYPES, options={"file.format": "orc",
                                                                  "file.suffix.include.compression": "true"})
    orc.write_arrow(all_types_data(0, 8))
    pk = catalog.create_table("db.pk", ALL_TYPES, primary_keys=["id"], options={"bucket": "3"})
    pk.write_arrow(all_types_data(0, 20))
    pk.write_arrow(all_types_data(10, 15))
    part_schema = pa.schema([("id", pa.int64(), False), ("v", pa.string()), ("dt", pa.date32()),
                             ("ts", pa.timestamp("us")), ("s", pa.string())])
    part = catalog.create_table("db.part", part_schema, partition_keys=["dt", "ts", "s"],
                                options={"bucket": "2", "bucket-key": "id"})
    part.write_arrow(pa.table({
        "id": [1, 2, 3, 4, 5, 6], "v": ["a", "b", "c", "d", "e", "f"],
        "dt": [dt.date(2024, 1, 1), dt.date(2024, 1, 1), dt.date(1969, 12, 31), dt.date(2024, 2, 29),
               dt.date(2024, 1, 1), dt.date(2024, 1, 1)],
        "ts": [dt.datetime(2024, 1, 1, 1, 2, 3, 456789), dt.datetime(2024, 1, 1), dt.datetime(2024, 1, 1, 0, 0, 5),
               dt.datetime(2024, 1, 1, 0, 0, 0, 120000)] + [dt.datetime(2024, 1, 1)] * 2,
        # a no-break space is not blank to Java (Character.isWhitespace), an em space is
        "s": ["x y/z", "", None, "a=b%c:d", "\xa0", "\u2003"]}, schema=part_schema))
    dyn = catalog.create_table("db.dyn", pa.schema([("id", pa.int64(), False), ("v", pa.string())]),
                               primary_keys=["id"], options={"dynamic-bucket.target-row-num": "10"})
    dyn.write_arrow(pa.table({"id": list(range(35)), "v": ["a"] * 35}))
    dyn.write_arrow(pa.table({"id": list(range(30, 45)), "v": ["b"] * 15}))
    over = catalog.create_table("db.over", pa.schema([("id", pa.int64(), False)]), primary_keys=["id"],
                                options={"bucket": "2"})
    over.write_arrow(pa.table({"id": [1, 2, 3]}))
    over.write_arrow(pa.table({"id": [7]}), overwrite=True)

    with java.batch() as b:
        reads = {t.name: b.read(t.path) for t in (a, orc, pk, part, dyn, over)}
    for t in (a, orc, pk, dyn, over):
        assert normalize(by_id(reads[t.name].result)) == normalize(by_id(t.to_arrow().to_pylist())), t.name
    ours_part = by_id(part.to_arrow().to_pylist())
    assert by_id(reads["db.part"].result) == ours_part
    assert [r["s"] for r in ours_part] == ["x y/z", "", None, "a=b%c:d", "\xa0", "\u2003"]
    dirs = {d for _, ds, _ in os.walk(part.path) for d in ds}
    assert {"s=__DEFAULT_PARTITION__", "s=x y%2Fz", "s=\xa0", "s=a%3Db%25c%3Ad", "dt=19723", "dt=-1",
            "ts=2024-01-01T01%3A02%3A03.456789", "ts=2024-01-01T00%3A00", "ts=2024-01-01T00%3A00%3A00.120",
            "ts=2024-01-01T00%3A00%3A05"} <= dirs


def test_we_read_what_java_writes(java, warehouse):
    fields = [{"name": "id", "type": "BIGINT NOT NULL"}, {"name": "v", "type": "STRING"},
              {"name": "d", "type": "DECIMAL(20, 2)"}, {"name": "ts", "type": "TIMESTAMP(6)"},
              {"name": "dt", "type": "STRING NOT NULL"}]
    path = f"{warehouse}/db.db/jt"
    rows1 = [{"id": i, "v": f"v{i}", "d": Decimal(i) / 4, "ts": dt.datetime(2024, 1, 1, 0, 0, i % 60),
              "dt": "a" if i % 2 else "b"} for i in range(40)]
    rows2 = [{"id": i, "v": f"w{i}", "d": None, "ts": None, "dt": "a" if i % 2 else "b"} for i in range(30, 50)]
    deletes = [{"id": 3, "v": None, "d": None, "ts": None, "dt": "a", "_ROW_KIND": "-D"}]
    with java.batch() as b:
        b.create_table(path, fields, primary_keys=["id", "dt"], partition_keys=["dt"], options={"bucket": "3"})
        b.write(path, rows1)
        b.write(path, rows2)
        b.write(path, deletes)
        java_read = b.read(path)
    model = {(r["id"], r["dt"]): r for r in rows1 + rows2}
    del model[(3, "a")]
    t = ps.Catalog(warehouse).get_table("db.jt")
    assert rows_by(t.to_arrow(), "id") == by_id(model.values())
    assert by_id(java_read.result) == by_id(model.values())
    assert rows_by(t.to_arrow(filter=[("dt", "=", "b")]), "id") == by_id(r for r in model.values() if r["dt"] == "b")


def test_java_every_type_table_read_by_us(java, warehouse):
    from test_java_oracle import ALL_TYPES as JAVA_TYPES, ALL_TYPES_ROWS
    path = f"{warehouse}/db.db/jtypes"
    rows = ALL_TYPES_ROWS
    with java.batch() as b:
        b.create_table(path, JAVA_TYPES, options={"bucket": "-1"})
        b.write(path, rows)
        java_read = b.read(path)
    ours = ps.Catalog(warehouse).get_table("db.jtypes").to_arrow().to_pylist()
    assert_same_rows(by_id(ours), by_id(java_read.result))


def assert_same_rows(ours: list[dict], theirs: list[dict]) -> None:
    from java_oracle import epoch_nanos
    assert len(ours) == len(theirs)
    for o, t in zip(ours, theirs):
        for k, tv in t.items():
            ov = o[k]
            if isinstance(tv, int) and not isinstance(ov, (int, bool)) and ov is not None:
                ov = epoch_nanos(ov)  # TIMESTAMP(p>6): the oracle returns epoch nanos
            if isinstance(tv, float) and tv != tv:
                assert ov != ov, k
                continue
            if isinstance(tv, list) and tv and isinstance(tv[0], tuple):
                tv, ov = sorted(tv), sorted(ov)
            assert ov == tv, (k, ov, tv)


def test_mixed_writers_on_one_table(java, catalog):
    """We and Java append to one primary-key table in turn; both readers agree with the model."""
    schema = pa.schema([("id", pa.int64(), False), ("v", pa.int64())])
    t = catalog.create_table("db.mixed", schema, primary_keys=["id"], options={"bucket": "4"})
    rng = np.random.default_rng(5)
    model = {}
    for step in range(4):
        ids = rng.integers(0, 300, 120)
        vals = rng.integers(0, 10**9, 120)
        if step % 2 == 0:
            ps.Table.open(t.path).write_arrow(pa.table({"id": ids, "v": vals}, schema=schema))
        else:
            java.write(t.path, [{"id": int(i), "v": int(v)} for i, v in zip(ids, vals)])
        model.update(zip(ids.tolist(), vals.tolist()))
    with java.batch() as b:
        java_read = b.read(t.path)
        snaps = b.snapshots(t.path)
    assert {r["id"]: r["v"] for r in ps.Table.open(t.path).to_arrow().to_pylist()} == model
    assert {r["id"]: r["v"] for r in java_read.result} == model
    assert [s["id"] for s in snaps.result] == [1, 2, 3, 4]


def test_java_compaction_of_our_tables(java, catalog):
    """Java fully compacts tables we wrote (plain and with deletion vectors); we read the
    compacted result, DV-filtered where Java wrote deletion vectors, and keep writing."""
    schema = pa.schema([("id", pa.int64(), False), ("v", pa.string())])
    plain = catalog.create_table("db.plain", schema, primary_keys=["id"], options={"bucket": "2"})
    dvt = catalog.create_table("db.dv", schema, primary_keys=["id"],
                               options={"bucket": "2", "deletion-vectors.enabled": "true"})
    # a large first file, so Java's later compactions push level 0 up to level 4 (with
    # deletion vectors on level 5) instead of rewriting everything
    base = {i: f"{i}-{i * 7919 % 10007}-padding-to-defeat-compression" for i in range(20000)}
    for t in (plain, dvt):
        t.write_arrow(pa.table({"id": list(base), "v": list(base.values())}))
    with java.batch() as b:
        b.compact(plain.path)
        b.compact(dvt.path)
        # a Java write to a DV table compacts its level-0 file by lookup: old rows get DV marks
        b.write(dvt.path, [{"id": i, "v": "java"} for i in range(0, 100, 10)])
    for t in (plain, dvt):
        t = ps.Table.open(t.path)
        t.write_arrow(pa.table({"id": [5, 500], "v": ["ours", "ours"]}))
    with java.batch() as b:
        # touches both buckets, so Java's compaction also lifts our level-0 files
        b.write(dvt.path, [{"id": i, "v": "java2"} for i in range(30000, 30020)])
        reads = {name: b.read(path) for name, path in (("plain", plain.path), ("dv", dvt.path))}
    expected_plain = base | {5: "ours", 500: "ours"}
    expected_dv = base | {i: "java" for i in range(0, 100, 10)} | {5: "ours", 500: "ours"} | \
        {i: "java2" for i in range(30000, 30020)}
    assert {r["id"]: r["v"] for r in ps.Table.open(plain.path).to_arrow().to_pylist()} == expected_plain
    dv_table = ps.Table.open(dvt.path)
    index = TableScan(dv_table.file_io, dv_table.path, dv_table.schema).index_manifest.read(
        dv_table.latest_snapshot().index_manifest)
    assert any(e.index_file.index_type == "DELETION_VECTORS" and e.index_file.dv_ranges for e in index), \
        "Java should have written deletion vectors"
    assert {r["id"]: r["v"] for r in dv_table.to_arrow().to_pylist()} == expected_dv
    assert {r["id"]: r["v"] for r in reads["plain"].result} == expected_plain
    assert {r["id"]: r["v"] for r in reads["dv"].result} == expected_dv


def test_buckets_agree_with_java_including_null_nonCompact_keys(java, catalog):
    """Append table bucketed by a nullable TIMESTAMP(6) and DECIMAL(20,2): Java reserves
    var-part bytes for their nulls (pypaimon does not); our buckets must equal Java's."""
    schema = pa.schema([("ts", pa.timestamp("us")), ("d", pa.decimal128(20, 2)), ("s", pa.string())])
    t = catalog.create_table("db.bk", schema, options={"bucket": "7", "bucket-key": "ts,d,s"})
    rows = [{"ts": None if i % 3 == 0 else dt.datetime(2024, 1, 1, 0, 0, i, i * 7),
             "d": None if i % 4 == 0 else Decimal(i * 13) / 100,
             "s": None if i % 5 == 0 else "key-" * (i % 4) + str(i)} for i in range(60)]
    data = pa.Table.from_pylist(rows, schema=schema)
    ours = fixed_buckets(data, ["ts", "d", "s"], [t.schema.field(n).type for n in ("ts", "d", "s")], 7)
    assert java.buckets(t.path, rows) == ours.tolist()


def test_parquet_writer_v2_tables_interoperate(java, catalog, warehouse):
    """`parquet.writer.version` = v2 (DELTA_BINARY_PACKED integers, version-2 data pages) and
    per-column dictionaries: Java and pypaimon read our files, Java writes and compacts into
    the table (with the same options), and we read Java's files back."""
    import pyarrow.parquet as pq
    from conftest import pypaimon_read
    options = {"bucket": "2", "deletion-vectors.enabled": "true", "parquet.writer.version": "v2",
               "parquet.enable.dictionary#i32": "true", "parquet.enable.dictionary#s": "false"}
    t = catalog.create_table("db.v2", ALL_TYPES, primary_keys=["id"], options=options)
    t.write_arrow(all_types_data(0, 40))
    t.write_arrow(all_types_data(20, 30))  # updates: lookup, deletion vectors, compaction rewrites
    encodings = {}
    for e in TableScan(t.file_io, t.path, t.schema).live_entries(t.latest_snapshot()):
        meta = pq.ParquetFile(f"{t.path}/bucket-{e.bucket}/{e.file.file_name}").metadata.row_group(0)
        for i in range(meta.num_columns):
            encodings.setdefault(meta.column(i).path_in_schema, set()).update(meta.column(i).encodings)
    assert {"_KEY_id", "id", "i8", "date", "ts6", "_SEQUENCE_NUMBER"} <= \
        {c for c, e in encodings.items() if "DELTA_BINARY_PACKED" in e}
    assert "RLE_DICTIONARY" in encodings["i32"] and "RLE_DICTIONARY" not in encodings["s"]
    expected = normalize(by_id(t.to_arrow().to_pylist()))
    assert [r["id"] for r in expected] == list(range(50))
    assert normalize(by_id(pypaimon_read(warehouse, "db.v2").to_pylist())) == expected
    java_rows = [{"id": i, "s": f"java-{i}"} for i in (5, 45, 60)]
    with java.batch() as b:
        java_read = b.read(t.path)
        b.write(t.path, java_rows)
        b.compact(t.path)
        after = b.read(t.path)
    assert normalize(by_id(java_read.result)) == expected
    ours = normalize(by_id(ps.Table.open(t.path).to_arrow().to_pylist()))
    assert normalize(by_id(after.result)) == ours
    assert {r["id"]: r["s"] for r in ours if r["id"] in (5, 45, 60)} == {5: "java-5", 45: "java-45", 60: "java-60"}
    assert len(ours) == 51


def test_per_level_file_settings_interoperate(java, catalog, warehouse):
    """`file.format.per.level`, `file.compression.per.level`, `metadata.stats-mode.per.level`:
    our table mixes Parquet and ORC files, codecs and stats by level; Java reads it, writes and
    compacts into it with the same options, and we read Java's files back."""
    import glob
    options = {"bucket": "1", "deletion-vectors.enabled": "true", "file.compression.per.level": "0:none,5:snappy",
               "file.format.per.level": "4:orc", "metadata.stats-mode.per.level": "0:none"}
    t = catalog.create_table("db.levels", ALL_TYPES, primary_keys=["id"], options=options)
    t.write_arrow(all_types_data(0, 400))
    t.write_arrow(all_types_data(0, 20))
    t.write_arrow(all_types_data(10, 20))  # merges level 0 with level 4 into an ORC file
    levels = {e.file.level: e.file.file_name for e in TableScan(t.file_io, t.path, t.schema).live_entries(
        t.latest_snapshot())}
    assert levels[4].endswith(".orc") and levels[5].endswith(".parquet")
    expected = normalize(by_id(t.to_arrow().to_pylist()))
    with java.batch() as b:
        java_read = b.read(t.path)
        b.write(t.path, [{"id": i, "s": f"java-{i}"} for i in (5, 405)])
        b.compact(t.path)
        after = b.read(t.path)
    assert normalize(by_id(java_read.result)) == expected
    ours = normalize(by_id(ps.Table.open(t.path).to_arrow().to_pylist()))
    assert normalize(by_id(after.result)) == ours and len(ours) == 401
    assert {r["id"]: r["s"] for r in ours if r["id"] in (5, 405)} == {5: "java-5", 405: "java-405"}
    assert glob.glob(f"{t.path}/bucket-0/*.orc")


def test_thin_mode_tables_interoperate(java, catalog, warehouse):
    """`data-file.thin-mode` (no `_KEY_` columns): Java's thin files and ours have the same
    columns, key and value stats; each side updates the other's table (lookups against the
    other's thin files, deletion vectors), Java compacts ours, and both read the same rows."""
    import pyarrow.parquet as pq
    schema = pa.schema([pa.field("id", pa.int64(), False), pa.field("s", pa.string(), False), ("v", pa.string())])
    fields = [{"name": "id", "type": "BIGINT NOT NULL"}, {"name": "s", "type": "STRING NOT NULL"},
              {"name": "v", "type": "STRING"}]
    options = {"bucket": "1", "deletion-vectors.enabled": "true", "data-file.thin-mode": "true"}

    def rows(ids, tag):
        return [{"id": i, "s": f"key-{i % 7}-" + "x" * 20, "v": f"{tag}{i}-" + "y" * 30} for i in ids]

    jpath = f"{warehouse}/db.db/jthin"
    with java.batch() as b:
        b.create_table(jpath, fields, primary_keys=["id", "s"], options=options)
        b.write(jpath, rows(range(200), "j"))
    ours = catalog.create_table("db.othin", schema, primary_keys=["id", "s"], options=options)
    ours.write_arrow(pa.Table.from_pylist(rows(range(200), "j"), schema=schema))
    theirs = ps.Table.open(jpath)
    [je] = TableScan(theirs.file_io, theirs.path, theirs.schema).live_entries(theirs.latest_snapshot())
    [oe] = TableScan(ours.file_io, ours.path, ours.schema).live_entries(ours.latest_snapshot())
    for t, e in ((theirs, je), (ours, oe)):
        names = pq.ParquetFile(f"{t.path}/bucket-0/{e.file.file_name}").schema_arrow.names
        assert names == ["_SEQUENCE_NUMBER", "_VALUE_KIND", "id", "s", "v"], t.path
    for attr in ("row_count", "min_key", "max_key", "key_stats", "value_stats", "value_stats_cols"):
        assert getattr(je.file, attr) == getattr(oe.file, attr), attr

    theirs.write_arrow(pa.Table.from_pylist(rows(range(0, 300, 3), "o"), schema=schema))
    with java.batch() as b:
        b.write(ours.path, rows(range(1, 300, 5), "J"))
        b.compact(ours.path)
        reads = {name: b.read(path) for name, path in (("theirs", jpath), ("ours", ours.path))}
    base = {r["id"]: r["v"] for r in rows(range(200), "j")}
    expected = {"theirs": base | {r["id"]: r["v"] for r in rows(range(0, 300, 3), "o")},
                "ours": base | {r["id"]: r["v"] for r in rows(range(1, 300, 5), "J")}}
    for name, path in (("theirs", jpath), ("ours", ours.path)):
        assert {r["id"]: r["v"] for r in reads[name].result} == expected[name], name
        assert {r["id"]: r["v"] for r in ps.Table.open(path).to_arrow().to_pylist()} == expected[name], name


@pytest.mark.parametrize("key,value", [("upsert-key", "id"), ("metadata.iceberg.storage", "table-location"),
                                       ("metastore.partitioned-table", "true")])
def test_tables_whose_writes_do_more_are_read_not_written(java, catalog, warehouse, key, value):
    """`upsert-key` (Java 1.4: Java's Spark turns an INSERT into such an append table into a
    MERGE INTO by that key; appending would leave both rows of a key) and
    `metadata.iceberg.storage` (each commit also writes Iceberg metadata; ours would leave
    Iceberg readers behind) and `metastore.partitioned-table` (Java's Hive catalog adds each new
    partition to the metastore): writes are refused, and the option at create, naming it."""
    from paimon_streaming.errors import InvalidOptionError, UnsupportedOperationError
    path = f"{warehouse}/db.db/up"
    with java.batch() as b:
        b.create_table(path, [{"name": "id", "type": "BIGINT"}, {"name": "v", "type": "STRING"}], options={key: value})
        b.write(path, [{"id": 1, "v": "a"}])
    t = ps.Table.open(path)
    assert t.to_arrow().to_pylist() == [{"id": 1, "v": "a"}]
    with pytest.raises(UnsupportedOperationError, match=key):
        t.write_arrow(pa.table({"id": [1], "v": ["b"]}))
    assert len(ps.Table.open(path).snapshots()) == 1
    with pytest.raises(InvalidOptionError, match=key):
        catalog.create_table("db.up2", pa.schema([("id", pa.int64())]), options={key: value})
    catalog.create_table("db.up3", pa.schema([("id", pa.int64())]), options={"metadata.iceberg.storage": "disabled"})


@pytest.mark.parametrize("options", [
    {"bucket": "2", "deletion-vectors.enabled": "true"},   # deletion-vector index files
    {"bucket": "-1", "dynamic-bucket.target-row-num": "40"},  # HASH index files (Java only reads these)
])
def test_layout_options_interoperate(java, catalog, warehouse, options):
    """`data-file.path-directory` (buckets under a sub-directory) and
    `index-file-in-data-file-dir` (index files beside their bucket's data files): Java's tables
    and ours put every file where the other looks for it, through writes, reads, expiration,
    `check` and orphan cleanup. (Java's plain table write cannot assign dynamic buckets, so
    there Java only reads.)"""
    import datetime
    import glob
    from paimon_streaming.check import check_table
    java_writes = options["bucket"] != "-1"
    options = {**options, "data-file.path-directory": "data", "index-file-in-data-file-dir": "true"}
    schema = pa.schema([pa.field("id", pa.int64(), False), ("v", pa.string())])
    fields = [{"name": "id", "type": "BIGINT NOT NULL"}, {"name": "v", "type": "STRING"}]

    def rows(ids, v):
        return [{"id": i, "v": v} for i in ids]
    tables = {"ours": catalog.create_table("db.olayout", schema, primary_keys=["id"], options=options).path}
    expected = {"ours": {}}
    for ids, v in ((range(100), "o"), (range(0, 140, 7), "o1")):  # updates and new keys
        ps.Table.open(tables["ours"]).write_arrow(pa.Table.from_pylist(rows(ids, v), schema=schema))
        expected["ours"].update((i, v) for i in ids)
    if java_writes:
        tables["theirs"] = f"{warehouse}/db.db/jlayout"
        with java.batch() as b:
            b.create_table(tables["theirs"], fields, primary_keys=["id"], options=options)
            b.write(tables["theirs"], rows(range(100), "j"))
            b.write(tables["theirs"], rows(range(0, 100, 4), "j2"))
        ps.Table.open(tables["theirs"]).write_arrow(pa.Table.from_pylist(rows(range(1, 120, 3), "o2"), schema=schema))
        expected["theirs"] = {i: "j" for i in range(100)} | {i: "j2" for i in range(0, 100, 4)} | \
            {i: "o2" for i in range(1, 120, 3)}
    with java.batch() as b:
        if java_writes:
            b.write(tables["ours"], rows(range(2, 130, 5), "j3"))
            expected["ours"].update((i, "j3") for i in range(2, 130, 5))
        reads = {name: b.read(path) for name, path in tables.items()}
    for name, path in tables.items():
        assert not glob.glob(f"{path}/bucket-*") and glob.glob(f"{path}/data/bucket-*/data-*"), name
        assert glob.glob(f"{path}/data/bucket-*/index-*") and not glob.glob(f"{path}/index/*"), name
        t = ps.Table.open(path)
        assert {r["id"]: r["v"] for r in reads[name].result} == expected[name], name
        assert {r["id"]: r["v"] for r in t.to_arrow().to_pylist()} == expected[name], name
        assert check_table(t).ok, check_table(t).problems
        before = set(glob.glob(f"{path}/data/bucket-*/index-*"))
        t.expire_snapshots(retain_max=1, retain_min=1, older_than=datetime.datetime.now())
        t.remove_orphan_files(older_than=int(time.time() * 1000) + 1000)
        after = set(glob.glob(f"{path}/data/bucket-*/index-*"))
        assert after and after < before, name  # replaced index files are gone, the live ones stay
        assert {r["id"]: r["v"] for r in ps.Table.open(path).to_arrow().to_pylist()} == expected[name], name
        assert check_table(ps.Table.open(path)).ok, name


def test_javas_postpone_bucket_table(java, warehouse):
    """A postpone-bucket table (`bucket` = -2): Java's writes wait unmerged in bucket -2 until a
    postpone compaction places them, and Java's batch reads leave them out until then; ours
    too (before, we tried to read them and failed on their Avro format). Our writes are refused."""
    from paimon_streaming.errors import UnsupportedOperationError
    path = f"{warehouse}/db.db/postpone"
    with java.batch() as b:
        b.create_table(path, [{"name": "id", "type": "BIGINT NOT NULL"}, {"name": "v", "type": "STRING"}],
                       primary_keys=["id"], options={"bucket": "-2"})
        b.write(path, [{"id": i, "v": "a"} for i in range(5)])
        b.write(path, [{"id": i, "v": "b"} for i in range(3)])
        java_read = b.read(path)
    t = ps.Table.open(path)
    entries = TableScan(t.file_io, t.path, t.schema).live_entries(t.latest_snapshot())
    assert entries and {e.bucket for e in entries} == {-2}
    assert t.to_arrow().to_pylist() == java_read.result == []
    with pytest.raises(UnsupportedOperationError, match="postpone"):
        t.write_arrow(pa.table({"id": pa.array([9], pa.int64()), "v": ["ours"]}))


@pytest.mark.parametrize("producer", ["none", "input"])
def test_javas_postpone_bucket_rows_start_a_stream_as_javas(java, warehouse, producer):
    """Java's stream reads the rows still in bucket -2 when the table has no changelog producer
    (DataTableStreamScan reads real buckets only when one writes a changelog): its start
    (latest-full, from-snapshot-full, compacted-full) as well as its deltas, unmerged, each row
    with the kind it was written with. Before, our start left them out; with a producer both
    leave them out. Batch reads leave them out either way."""
    path = f"{warehouse}/db.db/postpone_{producer}"
    with java.batch() as b:
        b.create_table(path, [{"name": "id", "type": "BIGINT NOT NULL"}, {"name": "v", "type": "STRING"}],
                       primary_keys=["id"], options={"bucket": "-2", "changelog-producer": producer})
        b.write(path, [{"id": 1, "v": "a"}, {"id": 2, "v": "b"}])
        b.write(path, [{"id": 1, "v": "c"}, {"id": 3, "v": "d"}, {"id": 2, "v": "b", "_ROW_KIND": "-D"}])
        b.read(path)
    t = ps.Table.open(path)
    modes = [{}, {"scan.mode": "from-snapshot-full", "scan.snapshot-id": "2"}, {"scan.mode": "compacted-full"},
             {"scan.mode": "from-snapshot", "scan.snapshot-id": "1"}]
    with java.batch() as b:
        batch = b.read(path)
        streams = [b.read(path, with_row_kind=True, options=m, stream_plans=4) for m in modes]
    assert t.to_arrow().to_pylist() == batch.result == []
    for m, javas in zip(modes, streams):
        ours = stream_rows(open_stream(t, m), ["id", "v"])
        assert sorted((r["id"], r["v"], r["_kind"]) for r in ours) == \
            sorted((r["id"], r["v"], r["_ROW_KIND"]) for r in javas.result), m
        assert javas.result or producer != "none", m


def test_a_from_timestamp_stream_starts_in_javas_long_lived_changelogs_as_java(java, warehouse):
    """A table whose changelog outlives its snapshots (`changelog.num-retained.max` above
    `snapshot.num-retained.max`): a from-timestamp stream at an instant before the earliest
    snapshot started there and dropped the commits since the instant, which Java's expiration
    kept as long-lived changelogs and Java's stream reads. Both search the changelogs with the
    snapshots; an instant before them all starts at the earliest changelog."""
    path = f"{warehouse}/db.db/ts_changelogs"
    with java.batch() as b:
        b.create_table(path, [{"name": "id", "type": "BIGINT NOT NULL"}, {"name": "v", "type": "STRING"}],
                       primary_keys=["id"], options={"bucket": "1", "changelog-producer": "input",
                                                     "snapshot.num-retained.min": "2", "snapshot.num-retained.max": "3",
                                                     "changelog.num-retained.max": "50"})
        for i in range(1, 9):
            b.write(path, [{"id": i, "v": f"v{i}"}])
    t = ps.Table.open(path)
    earliest = t.snapshot_manager.earliest_id()
    kept = [t.snapshot(i) if i >= earliest else long_lived_changelog(t.file_io, t.path, i)
            for i in range(1, t.snapshot_manager.latest_id() + 1)]
    assert earliest > 4 and all(kept), "Java kept the expired snapshots' changelogs"
    instants = [0, kept[2].time_millis - 1, kept[2].time_millis, kept[earliest - 2].time_millis + 1]
    modes = [{"scan.mode": "from-timestamp", "scan.timestamp-millis": str(m)} for m in instants]
    with java.batch() as b:
        javas = [b.read(path, with_row_kind=True, options=m, stream_plans=12) for m in modes]
    for m, j in zip(modes, javas):
        ours = stream_rows(open_stream(t, m), ["id", "v"])
        assert [(r["_kind"], r["id"]) for r in ours] == [(r["_ROW_KIND"], r["id"]) for r in j.result], m
    assert [r["id"] for r in javas[1].result] == list(range(3, 9))


def test_a_consumer_javas_rollback_left_beyond_the_table_is_refused_as_java(java, warehouse):
    """Java's rollback does not move consumers: a consumer at snapshot 6 of a table rolled back
    to 3 started there, and read nothing of the commits 4 and 5 made since. Java's stream
    refuses it ("The next expected snapshot is too big"); ours too, naming the consumer."""
    path = f"{warehouse}/db.db/consumer_ahead"
    with java.batch() as b:
        b.create_table(path, [{"name": "id", "type": "BIGINT NOT NULL"}, {"name": "v", "type": "STRING"}],
                       primary_keys=["id"], options={"bucket": "1"})
        for i in range(1, 6):
            b.write(path, [{"id": i, "v": f"v{i}"}])
        b.record_consumer(path, "job", 6)
        b.rollback_to(path, 3)
        b.write(path, [{"id": 10, "v": "after"}])
    t = ps.Table.open(path)
    assert t.snapshot_manager.latest_id() == 4
    with pytest.raises(SnapshotNotFoundError, match="consumer 'job' is at snapshot 6 .*latest snapshot 4"):
        open_stream(t, {"consumer-id": "job"}).start_position()
    with java.batch() as b:
        javas = b.read(path, options={"consumer-id": "job"}, stream_plans=17, catch_error=True)
    assert "too big" in str(javas.result)


def test_streaming_read_append_overwrite_streams_an_append_tables_overwrites_as_java(java, catalog):
    """`streaming-read-append-overwrite` = true (the key our refusal of `streaming-read-overwrite`
    on an append table points to) makes Java's stream of an append table emit an OVERWRITE's new
    rows; ours accepted the table option and skipped them. A read option overrides the table's;
    a primary-key table ignores the key, as Java's."""
    schema = pa.schema([pa.field("id", pa.int64(), False), ("v", pa.string())])
    cases = [("ap_table", None, {"streaming-read-append-overwrite": "true"}, {}),
             ("ap_read_off", None, {"streaming-read-append-overwrite": "true"},
              {"streaming-read-append-overwrite": "false"}),
             ("ap_read_on", None, {}, {"streaming-read-append-overwrite": "true"}),
             ("pk_table", ["id"], {"bucket": "1", "streaming-read-append-overwrite": "true"}, {})]
    tables = {}
    for name, keys, options, _ in cases:
        t = catalog.create_table(f"db.{name}", schema, primary_keys=keys, options=options)
        for i, overwrite in ((1, False), (2, True), (3, False)):
            t.write_arrow(pa.table({"id": [i], "v": [f"v{i}"]}, schema=schema), overwrite=overwrite)
        tables[name] = ps.Table.open(t.path)
    start = {"scan.mode": "from-snapshot", "scan.snapshot-id": "1"}
    with java.batch() as b:
        javas = {name: b.read(tables[name].path, with_row_kind=True, options={**start, **read}, stream_plans=6)
                 for name, _, _, read in cases}
    for name, _, _, read in cases:
        ours = stream_rows(open_stream(tables[name], {**start, **read}), ["id", "v"])
        assert [(r["_kind"], r["id"]) for r in ours] == \
            [(r["_ROW_KIND"], r["id"]) for r in javas[name].result], name
    assert [r["id"] for r in javas["ap_table"].result] == [1, 2, 3]
    assert [r["id"] for r in javas["ap_read_off"].result] == [r["id"] for r in javas["pk_table"].result] == [1, 3]


@pytest.mark.parametrize("name, options, level0", [
    ("agg", {"merge-engine": "aggregation", "fields.n.aggregate-function": "sum",
             "fields.s.aggregate-function": "listagg", "changelog-producer": "lookup"}, False),
    ("agg_force", {"merge-engine": "aggregation", "fields.n.aggregate-function": "sum",
                   "fields.s.aggregate-function": "listagg", "force-lookup": "true"}, True),
    ("partial", {"merge-engine": "partial-update", "changelog-producer": "lookup"}, True),
    ("dedup_seq", {"sequence.field": "n", "changelog-producer": "lookup"}, False)])
def test_javas_lookup_tables_merge_a_keys_lowest_level_as_java(java, warehouse, name, options, level0):
    """A table Java compacts by lookup without deletion vectors (changelog-producer lookup,
    force-lookup): a lookup compaction writes a key's merged row one level below its old row,
    which stays until a compaction reaches it. Java's reads merge a key's level-0 rows and its
    row of the lowest level above 0 only (LookupMergeFunction); before, we merged every level
    and counted the old row twice (sum 122 for 111, listagg 'a,b,a,b,c')."""
    path = f"{warehouse}/db.db/lookup_{name}"
    fields = [{"name": "id", "type": "BIGINT NOT NULL"}, {"name": "n", "type": "BIGINT"},
              {"name": "s", "type": "STRING"}]
    with java.batch() as b:
        b.create_table(path, fields, primary_keys=["id"], options={"bucket": "1", **options})
        b.write(path, [{"id": i, "n": 1, "s": "a"} for i in range(1, 201)])
        b.write(path, [{"id": 1, "n": 10, "s": "b"}, {"id": 2, "n": None, "s": "b"}])
        b.compact(path)  # every row at the top level
        b.write(path, [{"id": 1, "n": 100, "s": "c"}, {"id": 2, "n": 5, "s": None}])  # lookup compaction: level 4
    if level0:  # rows left at level 0 merge with the lowest level's
        java.alter(path, [{"kind": "set-option", "key": "write-only", "value": "true"}])
        java.write(path, [{"id": 1, "n": 1000, "s": "d"}, {"id": 3, "n": 7, "s": "d"}])
    t = ps.Table.open(path)
    levels = sorted({f.level for s in t.plan(t.latest_snapshot()) for f in s.files})
    assert levels == ([0] if level0 else []) + [4, 5]
    last = t.latest_snapshot().id
    with java.batch() as b:
        batch = b.read(path)
        start = b.read(path, with_row_kind=True, stream_plans=1)
        diff = b.read(path, incremental_between=(1, last), options={"incremental-between-scan-mode": "diff"})

    def rows(got):
        return sorted((r["id"], r["n"], r["s"]) for r in got if r["id"] <= 3)
    assert rows(t.to_arrow().to_pylist()) == rows(batch.result)
    assert rows(stream_rows(open_stream(t, {}), ["id", "n", "s"])) == rows(start.result)
    assert rows(t.changes_between(1, last, mode="diff").to_pylist()) == rows(diff.result)
    if name == "agg":
        assert rows(batch.result)[0] == (1, 111, "a,b,c")


def test_cross_partition_upsert_tables_java_created_we_write_java_reads(java, warehouse):
    """A primary key without the partition keys and 'bucket' = -1 (Java's KEY_DYNAMIC mode):
    we move keys between partitions through the table-wide index (cross_partition.py), and
    Java reads each key once, in its last partition, from plain and deletion-vector tables, and
    compacts them. With fixed buckets a key is one row per partition, in Java as here."""
    fields = [{"name": "id", "type": "BIGINT NOT NULL"}, {"name": "dt", "type": "STRING NOT NULL"},
              {"name": "v", "type": "STRING"}]
    variants = {"plain": {"bucket": "-1"}, "dv": {"bucket": "-1", "deletion-vectors.enabled": "true"},
                "fixed": {"bucket": "2"}}
    paths = {name: f"{warehouse}/db.db/xpart_{name}" for name in variants}
    with java.batch() as b:
        for name, options in variants.items():
            b.create_table(paths[name], fields, primary_keys=["id"], partition_keys=["dt"], options=options)
    schema = pa.schema([pa.field("id", pa.int64(), False), pa.field("dt", pa.string(), False), ("v", pa.string())])
    batches = [pa.table({"id": [1, 2, 3], "dt": ["a", "a", "b"], "v": ["x1", "x2", "x3"]}, schema=schema),
               pa.table({"id": [1, 3, 4], "dt": ["b", "c", "c"], "v": ["y1", "y3", "y4"]}, schema=schema)]
    for path in paths.values():
        for batch in batches:
            ps.Table.open(path).write_arrow(batch)
    moved = [(1, "b", "y1"), (2, "a", "x2"), (3, "c", "y3"), (4, "c", "y4")]
    per_partition = sorted({(1, "a", "x1"), (2, "a", "x2"), (3, "b", "x3")} | set(moved))
    with java.batch() as b:
        reads = {name: b.read(path) for name, path in paths.items()}
        for name in ("plain", "dv"):
            b.compact(paths[name])
        compacted = {name: b.read(paths[name]) for name in ("plain", "dv")}
    for name in ("plain", "dv"):
        assert sorted((r["id"], r["dt"], r["v"]) for r in reads[name].result) == moved, name
        assert sorted((r["id"], r["dt"], r["v"]) for r in compacted[name].result) == moved, name
        ours = ps.Table.open(paths[name])
        ours.write_arrow(pa.table({"id": [2], "dt": ["d"], "v": ["z2"]}, schema=schema))  # after Java's compaction
        assert sorted((r["id"], r["dt"], r["v"]) for r in ps.Table.open(paths[name]).to_arrow().to_pylist()) == \
            [(1, "b", "y1"), (2, "d", "z2"), (3, "c", "y3"), (4, "c", "y4")], name
    assert sorted((r["id"], r["dt"], r["v"]) for r in reads["fixed"].result) == per_partition


def test_javas_avro_data_files_read_by_us(java, warehouse):
    """Java writes Avro data files for `file.format` = avro, or for some levels with
    `file.format.per.level` (Paimon's write-performance guide suggests '0:avro,1:avro'): we
    read every type from them, and lookups and merges read them too; we write Parquet only."""
    from test_java_oracle import ALL_TYPES as JAVA_TYPES, ALL_TYPES_ROWS
    from paimon_streaming.errors import UnsupportedOperationError
    import glob
    types = [t for t in JAVA_TYPES if t["name"] != "f_ts9"]  # Java's Avro writer refuses p > 6
    rows = [{k: v for k, v in r.items() if k != "f_ts9"} for r in ALL_TYPES_ROWS]
    avro, per_level = f"{warehouse}/db.db/javro", f"{warehouse}/db.db/jlevels"
    schema = pa.schema([pa.field("id", pa.int64(), False), ("v", pa.string())])
    fields = [{"name": "id", "type": "BIGINT NOT NULL"}, {"name": "v", "type": "STRING"}]
    with java.batch() as b:
        b.create_table(avro, types, primary_keys=["id"], options={"bucket": "1", "file.format": "avro"})
        b.write(avro, rows)
        avro_read = b.read(avro)
        b.create_table(per_level, fields, primary_keys=["id"],
                       options={"bucket": "2", "file.format.per.level": "0:avro,1:avro"})
        b.write(per_level, [{"id": i, "v": "a"} for i in range(50)])
        b.write(per_level, [{"id": i, "v": "b"} for i in range(0, 50, 3)])
    assert glob.glob(f"{avro}/bucket-0/*.avro") and glob.glob(f"{per_level}/bucket-*/*.avro")
    assert_same_rows(by_id(ps.Table.open(avro).to_arrow().to_pylist()), by_id(avro_read.result))
    with pytest.raises(UnsupportedOperationError, match="avro"):
        t = ps.Table.open(avro)
        t.write_arrow(t.to_arrow().slice(0, 1))
    ours = ps.Table.open(per_level)
    expected = {i: "a" for i in range(50)} | {i: "b" for i in range(0, 50, 3)}
    assert {r["id"]: r["v"] for r in ours.to_arrow().to_pylist()} == expected  # merge-on-read over Avro files
    ours.write_arrow(pa.table({"id": list(range(1, 60, 4)), "v": ["ours"] * 15}, schema=schema))
    ours.compact(full=True)  # reads Java's Avro files to merge them into Parquet
    expected |= {i: "ours" for i in range(1, 60, 4)}
    with java.batch() as b:
        java_read = b.read(per_level)
    assert {r["id"]: r["v"] for r in java_read.result} == expected
    assert {r["id"]: r["v"] for r in ps.Table.open(per_level).to_arrow().to_pylist()} == expected


@pytest.mark.parametrize("producer, dv", [("input", "false"), ("none", "true"), ("none", "false")])
def test_javas_long_lived_changelog_is_streamed_and_kept(java, warehouse, producer, dv):
    """`changelog.num-retained.max` above `snapshot.num-retained.max`: Java's expiration moves
    expired snapshots' changelog to `changelog/changelog-<id>`. Our stream reads those changes
    where the snapshots are gone; our writes keep snapshots as long as the changelog retention
    asks; our expiration and orphan cleanup keep every file those changelogs need (before,
    orphan cleanup deleted them)."""
    import datetime
    import glob
    path = f"{warehouse}/db.db/longcl_{producer}_{dv}"
    fields = [{"name": "id", "type": "BIGINT NOT NULL"}, {"name": "v", "type": "STRING"}]
    options = {"bucket": "1", "changelog-producer": producer, "deletion-vectors.enabled": dv,
               "snapshot.num-retained.min": "1", "snapshot.num-retained.max": "3", "changelog.num-retained.max": "50"}
    batches = [[{"id": k, "v": f"v{i}"} for k in range(i, i + 5)] for i in range(6)]
    with java.batch() as b:
        b.create_table(path, fields, primary_keys=["id"], options=options)
        for rows in batches:
            b.write(path, rows)
    changelogs = glob.glob(f"{path}/changelog/changelog-*")
    assert len(changelogs) >= 4, "Java moved the expired snapshots' changelog"

    def streamed(last: int | None = None) -> list[list[tuple]]:
        """Each snapshot's changes, from snapshot 1 through `last` (default: the latest)."""
        t = ps.Table.open(path)
        ss = open_stream(t, {"scan.mode": "from-snapshot", "scan.snapshot-id": "1"})
        out = []
        for sid in range(1, (last or t.latest_snapshot().id) + 1):
            rows = snapshot_changes(ss, sid, ["id", "v"])
            out.append(sorted((r["id"], r["v"]) for r in rows if r["_kind"] in ("+I", "+U")))
        return [c for c in out if c]
    expected = [sorted((r["id"], r["v"]) for r in rows) for rows in batches]
    assert streamed() == expected
    t = ps.Table.open(path)
    before = len(t.snapshots())
    for i in range(3):  # our commits: snapshots kept by the changelog retention, not the snapshot one
        t.write_arrow(pa.table({"id": pa.array([100 + i], pa.int64()), "v": ["ours"]}))
    assert len(ps.Table.open(path).snapshots()) > before
    expected += [[(100 + i, "ours")] for i in range(3)]
    t.expire_snapshots(retain_max=1, retain_min=1, older_than=datetime.datetime.now())  # an explicit expiration
    assert len(ps.Table.open(path).snapshots()) == 1
    t.remove_orphan_files(older_than=int(time.time() * 1000) + 1000)
    kept = max(int(p.rsplit("-", 1)[1]) for p in changelogs)  # what Java moved stays readable
    assert streamed(kept) == expected[:len(streamed(kept))] and len(streamed(kept)) >= 3
    with java.batch() as b:
        java_read = b.read(path)
    final = {r["id"]: r["v"] for rows in batches for r in rows} | {100 + i: "ours" for i in range(3)}
    assert {r["id"]: r["v"] for r in java_read.result} == final
    assert {r["id"]: r["v"] for r in ps.Table.open(path).to_arrow().to_pylist()} == final


def test_partition_expiration_agrees_with_java(java, catalog):
    """`partition.expiration-time`: our commit drops the expired partitions; Java reads what we
    left, and Java's own commit into the table expires partitions by the same rule."""
    import datetime
    schema = pa.schema([pa.field("id", pa.int64(), False), pa.field("dt", pa.string(), False)])

    def day(n):
        return (datetime.datetime.now() - datetime.timedelta(days=n)).strftime("%Y%m%d")
    t = catalog.create_table("db.pexp", schema, partition_keys=["dt"], options={
        "partition.expiration-time": "2 d", "partition.expiration-check-interval": "0 s",
        "partition.timestamp-formatter": "yyyyMMdd"})
    t.write_arrow(pa.table({"id": [0, 1, 2, 3], "dt": [day(6), day(3), day(1), day(0)]}, schema=schema))
    assert sorted(r["dt"] for r in t.to_arrow().to_pylist()) == [day(1), day(0)]
    with java.batch() as b:
        java_read = b.read(t.path)
        b.write(t.path, [{"id": 4, "dt": day(9)}, {"id": 5, "dt": day(0)}])  # Java's maintenance expires day 9
        after = b.read(t.path)
    assert sorted(r["dt"] for r in java_read.result) == [day(1), day(0)]
    assert sorted(r["id"] for r in after.result) == [2, 3, 5]
    assert sorted(r["id"] for r in ps.Table.open(t.path).to_arrow().to_pylist()) == [2, 3, 5]


def test_record_level_expiration_agrees_with_java(java, catalog):
    """`record-level.expire-time`: the same rows compacted by Java and by us leave the same rows
    (seconds and milliseconds in a BIGINT time field, nulls, a key whose newest row expired)."""
    import time
    now, day = int(time.time()), 86400
    schema = pa.schema([pa.field("id", pa.int64(), False), ("v", pa.string()), ("ts", pa.int64())])
    options = {"bucket": "1", "record-level.expire-time": "1 d", "record-level.time-field": "ts"}
    batches = [pa.table({"id": [1, 2, 3, 4, 5], "v": ["old", "new", "old-ms", "none", "new-ms"],
                         "ts": [now - 3 * day, now, (now - 2 * day) * 1000, None, now * 1000]}, schema=schema),
               pa.table({"id": [2], "v": ["expired update"], "ts": [now - 9 * day]}, schema=schema)]
    ours, theirs = (catalog.create_table(name, schema, primary_keys=["id"], options=options)
                    for name in ("db.rexp_ours", "db.rexp_java"))
    for t in (ours, theirs):
        for b in batches:
            t.write_arrow(b)
    ours.compact(full=True)
    with java.batch() as b:
        b.compact(theirs.path)
        java_read = b.read(theirs.path)
    expected = {2: "new", 4: "none", 5: "new-ms"}
    assert {r["id"]: r["v"] for r in java_read.result} == expected
    assert {r["id"]: r["v"] for r in ours.to_arrow().to_pylist()} == expected


def test_orphan_cleanup_keeps_the_files_of_javas_branches(java, warehouse):
    """A branch (Java's `branch/branch-<name>/`) has its own snapshots and tags but writes its
    data files and manifests beside the main branch's: orphan cleanup must count what branch
    snapshots reference as used, as Java's does, or it deletes the branch's data."""
    path = f"{warehouse}/db.db/branched"
    fields = [{"name": "id", "type": "BIGINT NOT NULL"}, {"name": "v", "type": "STRING"}]
    with java.batch() as b:
        b.create_table(path, fields, primary_keys=["id"], options={"bucket": "1"})
        b.write(path, [{"id": i, "v": "main"} for i in range(10)])
        b.create_tag(path, "t1")
        b.create_branch(path, "dev", tag="t1")
        b.write(path, [{"id": i, "v": "dev"} for i in range(5, 15)], branch="dev")
    t = ps.Table.open(path)
    removed = t.remove_orphan_files(older_than=int(time.time() * 1000) + 1000)
    assert removed.paths == []
    with java.batch() as b:
        dev = b.read(path, branch="dev")
        main = b.read(path)
    assert {r["id"]: r["v"] for r in dev.result} == {i: "main" for i in range(5)} | {i: "dev" for i in range(5, 15)}
    assert {r["id"]: r["v"] for r in main.result} == {i: "main" for i in range(10)}


def test_we_read_javas_branches(java, warehouse):
    """A branch made and written by Java (its own snapshots, tags and, here, a schema with one
    more column; the table's data directories): batch reads, time travel, incremental queries
    and streams of the branch answer as Java's reads do; the main branch is untouched; an
    unknown branch is an error naming the branches."""
    from paimon_streaming.errors import TableNotFoundError, UnsupportedOperationError
    path = f"{warehouse}/db.db/branches"
    fields = [{"name": "id", "type": "BIGINT NOT NULL"}, {"name": "v", "type": "STRING"}]
    with java.batch() as b:
        b.create_table(path, fields, primary_keys=["id"], options={"bucket": "2", "deletion-vectors.enabled": "true"})
        b.write(path, [{"id": i, "v": "main"} for i in range(10)])
        b.create_tag(path, "t1")
        b.create_branch(path, "dev", tag="t1")
    with java.batch() as b:
        b.alter(path, [{"kind": "add", "path": ["note"], "type": "STRING"}], branch="dev")
    with java.batch() as b:
        b.write(path, [{"id": i, "v": "dev", "note": f"n{i}"} for i in range(5, 15)], branch="dev")
        b.write(path, [{"id": 0, "v": "main2"}])
    with java.batch() as b:
        java_dev = b.read(path, branch="dev")
        java_main = b.read(path)
    dev = ps.Table.open(path, branch="dev")
    assert ps.Catalog(warehouse).get_table("db.branches$branch_dev").to_arrow().equals(dev.to_arrow())
    assert dev.schema.field_names == ["id", "v", "note"] and ps.Table.open(path).schema.field_names == ["id", "v"]
    ours = {r["id"]: (r["v"], r["note"]) for r in dev.to_arrow().to_pylist()}
    assert ours == {r["id"]: (r["v"], r["note"]) for r in java_dev.result}
    assert ours == {i: ("main", None) for i in range(5)} | {i: ("dev", f"n{i}") for i in range(5, 15)}
    assert {r["id"]: r["v"] for r in ps.Table.open(path).to_arrow().to_pylist()} == \
        {r["id"]: r["v"] for r in java_main.result}
    # the branch's own history: its tag t1 and first snapshot hold the main rows of t1
    assert {r["id"]: r["v"] for r in dev.to_arrow(tag="t1").to_pylist()} == {i: "main" for i in range(10)}
    first = dev.snapshots()[0].id
    assert dev.to_arrow(snapshot_id=first).num_rows == 10
    changed = dev.changes_between(first, dev.latest_snapshot().id, mode="diff")
    assert sorted(changed.column("id").to_pylist()) == list(range(5, 15))
    ss = open_stream(dev, {"scan.mode": "latest-full"})
    units, _ = ss.plan_batch(ss.start_position())
    assert sum(u.rows for u in units) >= 15
    with pytest.raises(UnsupportedOperationError, match="branch 'dev'.*run it on the main branch"):
        dev.remove_orphan_files()  # table-wide: it covers every branch
    with pytest.raises(TableNotFoundError, match=r"no branch 'nope' \(branches: \['dev'\]\)"):
        ps.Table.open(path, branch="nope")


def test_branches_we_write_are_javas_branches(java, warehouse):
    """Write-audit-publish across engines: a branch we create from a tag, evolve and write
    (deletion vectors, compaction, expiration) reads in Java as in ours; Java writes on and
    fast-forwards it, and our read of main is Java's; we fast-forward a branch Java made and
    wrote, and Java reads our main as ours. Cleanup on either branch leaves the other whole."""
    path = f"{warehouse}/db.db/wap"
    t = ps.Catalog(warehouse).create_table(
        "db.wap", schema=pa.schema([pa.field("id", pa.int64(), nullable=False), pa.field("v", pa.string())]),
        primary_keys=["id"], options={"bucket": "2", "deletion-vectors.enabled": "true",
                                      "snapshot.num-retained.min": "2", "snapshot.num-retained.max": "2"})
    t.write_arrow(pa.table({"id": list(range(20)), "v": ["main"] * 20}))
    t.create_tag("t1")
    dev = t.create_branch("dev", tag="t1")
    with dev.update_schema() as update:
        update.add_column("note", pa.string())
    for i in range(3):  # expires the branch's base snapshot: main's files must stay
        dev.write_arrow(pa.table({"id": list(range(10 * i, 10 * i + 5)), "v": [f"dev{i}"] * 5, "note": ["n"] * 5}))
    t.write_arrow(pa.table({"id": [0], "v": ["main2"]}))
    t.compact(full=True)
    t.write_arrow(pa.table({"id": [1], "v": ["main3"]}))  # expires main down to 2 snapshots
    ours_dev = {r["id"]: (r["v"], r["note"]) for r in dev.to_arrow().to_pylist()}
    assert len(ours_dev) == 25 and ours_dev[21] == ("dev2", "n") and ours_dev[19] == ("main", None)
    with java.batch() as b:
        java_dev = b.read(path, branch="dev")
        java_main = b.read(path)
    assert {r["id"]: (r["v"], r["note"]) for r in java_dev.result} == ours_dev
    assert {r["id"]: r["v"] for r in java_main.result} == {r["id"]: r["v"] for r in t.to_arrow().to_pylist()}

    with java.batch() as b:  # Java writes on our branch, then publishes it
        b.write(path, [{"id": 100, "v": "java", "note": "j"}], branch="dev")
        b.fast_forward(path, "dev")
    with java.batch() as b:
        java_main = b.read(path)
    main = ps.Table.open(path)
    assert main.schema.field_names == ["id", "v", "note"]
    ours_main = {r["id"]: (r["v"], r["note"]) for r in main.to_arrow().to_pylist()}
    assert ours_main == ours_dev | {100: ("java", "j")}
    assert ours_main == {r["id"]: (r["v"], r["note"]) for r in java_main.result}

    with java.batch() as b:  # a branch Java makes and writes; we publish it
        b.create_tag(path, "t2")
        b.create_branch(path, "java", tag="t2")
    with java.batch() as b:
        b.write(path, [{"id": 200, "v": "jb", "note": None}], branch="java")
    main = ps.Table.open(path)
    main.fast_forward("java")
    main.write_arrow(pa.table({"id": [201], "v": ["after"], "note": ["x"]}))
    with java.batch() as b:
        java_main = b.read(path)
        java_dev = b.read(path, branch="dev")
    ours_main = {r["id"]: (r["v"], r["note"]) for r in ps.Table.open(path).to_arrow().to_pylist()}
    assert ours_main == {r["id"]: (r["v"], r["note"]) for r in java_main.result}
    assert ours_main[200] == ("jb", None) and ours_main[201] == ("after", "x") and len(ours_main) == 28
    assert {r["id"]: (r["v"], r["note"]) for r in java_dev.result} == \
        {r["id"]: (r["v"], r["note"]) for r in ps.Table.open(path, branch="dev").to_arrow().to_pylist()}


def test_fallback_branch_reads_as_javas(java, warehouse):
    """`scan.fallback-branch`: a batch read takes the table's own partitions from it and every
    other partition from the branch, as Java's reads do (also through a filter and through
    time travel); streams read the table's own branch."""
    path = f"{warehouse}/db.db/fallback"
    fields = [{"name": "id", "type": "BIGINT NOT NULL"}, {"name": "dt", "type": "STRING NOT NULL"},
              {"name": "v", "type": "STRING"}]
    with java.batch() as b:
        b.create_table(path, fields, primary_keys=["id", "dt"], partition_keys=["dt"], options={"bucket": "1"})
        b.create_branch(path, "batch")
    with java.batch() as b:
        b.alter(path, [{"kind": "set-option", "path": [], "key": "scan.fallback-branch", "value": "batch"}])
    with java.batch() as b:
        b.write(path, [{"id": i, "dt": dt, "v": "batch"} for i in range(3) for dt in ("d1", "d2")], branch="batch")
        b.write(path, [{"id": i, "dt": dt, "v": "main"} for i in range(2) for dt in ("d2", "d3")])
    with java.batch() as b:
        java_rows = b.read(path)
    t = ps.Table.open(path)

    def rows(table):
        return sorted((r["id"], r["dt"], r["v"]) for r in table.to_pylist())
    ours = rows(t.to_arrow())
    assert ours == sorted((r["id"], r["dt"], r["v"]) for r in java_rows.result)
    assert ours == sorted([(i, "d1", "batch") for i in range(3)] + [(i, dt, "main") for i in range(2)
                                                                       for dt in ("d2", "d3")])
    # a filter on another column does not make the table's partition d2 look absent
    assert rows(t.to_arrow(filter=[("id", "=", 2)])) == [(2, "d1", "batch")]
    with java.batch() as b:
        java_first = b.read(path, snapshot_id=1)
    assert rows(t.to_arrow(snapshot_id=1)) == ours == sorted((r["id"], r["dt"], r["v"]) for r in java_first.result)
    ss = open_stream(t, {})
    units, _ = ss.plan_batch(ss.start_position())
    assert sum(u.rows for u in units) == 4


def test_the_checks_of_our_metadata_files_survive_javas_copies(java, catalog):
    """Our snapshot, schema and consumer files carry a check (json_check.py) in places Java
    ignores. Java's tags and branches of our snapshots keep the snapshot's check valid (Java
    copies `properties` with the values), Java's schema change writes a schema without one, and
    we read all of them; Java reads what we write after that; a value altered in our files is
    an error naming the file."""
    import json
    from paimon_streaming.errors import CorruptFileError
    from paimon_streaming.json_check import CHECK_KEY
    t = catalog.create_table("db.checks", pa.schema([pa.field("id", pa.int64(), False), ("v", pa.string())]),
                             primary_keys=["id"], options={"bucket": "2", "deletion-vectors.enabled": "true"})
    t.write_arrow(pa.table({"id": [1, 2, 3], "v": ["a", "b", "c"]}, schema=t.arrow_schema()))
    ours = t.latest_snapshot()
    with java.batch() as b:
        b.create_tag(t.path, "j1", snapshot_id=ours.id)
        b.create_branch(t.path, "jb", tag="j1")
        b.alter(t.path, [{"kind": "add", "path": ["note"], "type": "STRING"}])
    text = open(f"{t.path}/tag/tag-j1").read()
    assert '"id" : ' in text  # Java's serialization of our snapshot, with our check
    assert json.loads(text)["properties"][CHECK_KEY] == ours.check()
    assert ps.Table.open(t.path).to_arrow(tag="j1").num_rows == 3
    assert ps.Table.open(t.path, branch="jb").to_arrow().num_rows == 3
    altered = ps.Table.open(t.path)
    assert CHECK_KEY not in json.load(open(f"{t.path}/schema/schema-1"))  # Java's schema file
    altered.write_arrow(pa.table({"id": [4], "v": ["d"], "note": ["n"]}, schema=altered.arrow_schema()))
    assert {r["id"]: r["note"] for r in java.read(t.path)} == {1: None, 2: None, 3: None, 4: "n"}
    # Java's tag of our snapshot, a value altered: the check fails
    damaged = json.load(open(f"{t.path}/tag/tag-j1"))
    damaged["totalRecordCount"] += 1
    json.dump(damaged, open(f"{t.path}/tag/tag-j1", "w"))
    with pytest.raises(CorruptFileError, match=r"tag-j1 is damaged: its values do not match"):
        ps.Table.open(t.path).to_arrow(tag="j1")


def test_the_partitions_system_table_is_javas(java, warehouse):
    """`t$partitions` answers as Java's PartitionsTable over a filesystem catalog: each live
    partition's files at every level, the rows in them (before merging and deletion vectors),
    their bytes and the newest file creation time; partition values printed as Java casts them
    (dates as dates, nulls and blank strings as the default partition name), sorted by that text."""
    from paimon_streaming.system_tables import system_table
    fields = [{"name": "id", "type": "BIGINT NOT NULL"}, {"name": "dt", "type": "STRING NOT NULL"},
              {"name": "d", "type": "DATE NOT NULL"}, {"name": "v", "type": "STRING"}]
    appended = [{"name": "id", "type": "BIGINT"}, {"name": "dt", "type": "STRING"}, {"name": "d", "type": "DATE"}]
    keyed, plain = f"{warehouse}/db.db/parts", f"{warehouse}/db.db/plain"
    day, other = dt.date(2024, 5, 1), dt.date(2023, 12, 31)
    with java.batch() as b:
        b.create_table(keyed, fields, primary_keys=["id", "dt", "d"], partition_keys=["dt", "d"],
                       options={"bucket": "2", "deletion-vectors.enabled": "true"})
        b.write(keyed, [{"id": i, "dt": p, "d": day, "v": "java"} for i in range(6) for p in ("a", "b")])
        b.create_table(plain, appended, partition_keys=["dt", "d"], options={"bucket": "-1"})
        b.write(plain, [{"id": i, "dt": p, "d": d} for i, (p, d) in enumerate(
            [("a", day), ("a", None), (None, day), (" ", day), ("", None)])])
    t = ps.Table.open(keyed)
    t.write_arrow(pa.table({"id": pa.array([1, 2, 9], pa.int64()), "dt": ["a", "a", "c/x"],
                            "d": [day, day, other], "v": ["ours"] * 3}, schema=t.arrow_schema()))
    with_cx = t.latest_snapshot()
    t.compact(full=True)
    t.write_arrow(pa.table({"id": pa.array([3], pa.int64()), "dt": ["b"], "d": [day], "v": ["ours"]},
                           schema=t.arrow_schema()))
    # a partition whose files a compaction deleted (all its rows deleted) is no longer listed
    t.write_arrow(pa.table({"id": pa.array([9], pa.int64()), "dt": ["c/x"], "d": [other], "v": [None],
                            "op": ["-D"]}), row_kind_column="op")
    t.compact(full=True)
    p = ps.Table.open(plain)
    p.write_arrow(pa.table({"id": pa.array([7, 8], pa.int64()), "dt": [None, "z"], "d": pa.array([None, other])},
                           schema=p.arrow_schema()))
    with java.batch() as b:
        javas = {path: b.read(path, system_table="partitions") for path in (keyed, plain)}
    for path, want in javas.items():
        ours = system_table(ps.Table.open(path), "partitions")
        # a blank string and a null print alike (Java's quirk): those rows compare in any order
        def tied(r):
            return r["partition"], r["file_size_in_bytes"], r["last_update_time"]
        assert sorted(ours.to_pylist(), key=tied) == sorted(want.result, key=tied), path
        assert [r["partition"] for r in ours.to_pylist()] == [r["partition"] for r in want.result]
    assert [r["partition"] for r in system_table(t, "partitions").to_pylist()] == [
        "dt=a/d=2024-05-01", "dt=b/d=2024-05-01"]
    assert [r["partition"] for r in system_table(t, "partitions", with_cx).to_pylist()] == [
        "dt=a/d=2024-05-01", "dt=b/d=2024-05-01", "dt=c/x/d=2023-12-31"]


def test_values_a_lossy_java_type_change_cannot_fit_read_as_java_reads_them(java, warehouse):
    """Java's schema change takes explicit casts (BIGINT -> INT): a file written before holds
    values the new type cannot hold, which Java's cast wraps around (2^40 + 7 as INT is 7): we
    read what Java reads (paimon_streaming/java_casts.py, tests/test_java_cast_hunt.py)."""
    path = f"{warehouse}/db.db/narrowed"
    with java.batch() as b:
        b.create_table(path, [{"name": "id", "type": "INT"}, {"name": "c", "type": "BIGINT"}], options={"bucket": "-1"})
        b.write(path, [{"id": 1, "c": 5}, {"id": 2, "c": 2 ** 40 + 7}, {"id": 3, "c": 2 ** 31}])
    with java.batch() as b:
        b.alter(path, [{"kind": "type", "path": ["c"], "type": "INT"}])
        want = b.read(path)
    got = ps.Table.open(path).to_arrow().sort_by("id").to_pylist()
    assert got == sorted(want.result, key=lambda r: r["id"]) == [
        {"id": 1, "c": 5}, {"id": 2, "c": 7}, {"id": 3, "c": -2 ** 31}]


@pytest.mark.parametrize("file_format, options", [
    ("parquet", {}), ("orc", {}), ("parquet", {"file.compression": "lz4"}),
    ("parquet", {"parquet.enable.dictionary": "false", "parquet.writer.version": "v2", "file.compression": "snappy"}),
    ("parquet", {"parquet.enable.dictionary": "false", "file.compression": "gzip"}),
    ("parquet", {"file.compression": "none", "parquet.writer.version": "v2"})])
def test_javas_timestamps_beyond_nanoseconds_are_refused_by_name(java, warehouse, file_format, options):
    """Java writes TIMESTAMP values of years 1 to 9999. Arrow holds TIMESTAMP(7-9) as nanoseconds
    (1677-09-21 .. 2262-04-11), and pyarrow reads every ORC timestamp as nanoseconds: its Parquet
    INT96 read wrapped a year-3000 value around to 1830 without a word (its ORC read failed and
    the file was called damaged). Such a file is now an UnsupportedOperationError naming it and
    the column (`check`: unreadable-file, not corrupt-file); values up to the edges of the range,
    negative sub-microsecond digits included, still read exactly. Java's Parquet pages are read
    as each codec, encoding and page version leaves them (`paimon_streaming/int96.py`)."""
    import datetime
    import glob
    from paimon_streaming.check import check_location
    from paimon_streaming.errors import UnsupportedOperationError
    fields = [{"name": "id", "type": "INT NOT NULL"}, {"name": "t9", "type": "TIMESTAMP(9)"},
              {"name": "r", "type": {"type": "ROW", "fields": [{"id": 10, "name": "z", "type": "TIMESTAMP(9)"}]}},
              {"name": "a", "type": {"type": "ARRAY", "element": "TIMESTAMP(9)"}}]
    ns_min, ns_max = -(2 ** 63), 2 ** 63 - 1
    inside = [ns_min, ns_min + 1, -1_000_000_001, -1, 0, 1_700_000_000_123_456_789, ns_max]
    if file_format == "orc":  # pyarrow's ORC reader refuses the first second of the range; the second
        # before 1970 with a fraction reads shifted, in Java too (README, Compatibility)
        inside = [ns_min + 10 ** 9, -1_000_000_001, 0, 1_700_000_000_123_456_789, ns_max - 1]
    beyond = {"t9": datetime.datetime(3000, 1, 1, 0, 0, 0, 7), "r": {"z": datetime.datetime(1500, 6, 1)},
              "a": [0, datetime.datetime(9999, 12, 31, 23, 59, 59)]}
    for column, value in beyond.items():
        path = f"{warehouse}/db.db/jwide_{file_format}_{len(options)}{options.get('file.compression')}_{column}"
        rows = [{"id": i, "t9": v, "r": {"z": v}, "a": [v, None]} for i, v in enumerate(inside)]
        with java.batch() as b:
            b.create_table(path, fields, options={"file.format": file_format, "bucket": "-1", **options})
            b.write(path, rows)
        t = ps.Table.open(path)
        got = t.to_arrow().sort_by("id")
        assert got.column("t9").cast(pa.int64()).to_pylist() == inside
        assert [r["z"].value for r in got.column("r").to_pylist()] == inside
        before = set(glob.glob(f"{path}/bucket-0/data-*"))
        with java.batch() as b:
            b.write(path, [{"id": 99, **{c: ([] if c == "a" else {"z": None} if c == "r" else None)
                                         for c in beyond}, column: value}])
        (late,) = set(glob.glob(f"{path}/bucket-0/data-*")) - before
        with pytest.raises(UnsupportedOperationError, match=f"column '{column}' .*outside 1677-09-21") as err:
            ps.Table.open(path).to_arrow()
        assert late in str(err.value)
        assert {p.path: p.kind for p in check_location(path).problems} == {late: "unreadable-file"}



def test_binary_partition_columns_are_refused_as_java_cannot_find_their_files(java, warehouse, catalog):
    """Java names a partition directory by the value's text, for BINARY/VARBINARY/BYTES a Java
    array's identity (`k=%5BB@5649d11a`, new at each call): Java 1.4.2 cannot read its own such
    table, nor did it read ours (we named the directory by the bytes). Creating one is refused
    here; Java's read fails on a missing file, and so does ours, naming it."""
    from paimon_streaming.errors import InvalidOptionError, MissingFileError
    path = f"{warehouse}/db.db/jbinpart"
    with java.batch() as b:
        b.create_table(path, [{"name": "id", "type": "INT NOT NULL"}, {"name": "k", "type": "BYTES"}],
                       partition_keys=["k"], options={"bucket": "-1"})
        b.write(path, [{"id": 1, "k": b"ab"}])
        refused = b.read(path, catch_error=True)
    assert "FileNotFoundException" in refused.result.error and "k=%5BB@" in refused.result.error
    with pytest.raises(MissingFileError, match="k=ab/bucket-0"):
        ps.Table.open(path).to_arrow()
    for binary in (pa.binary(), pa.binary(4)):
        with pytest.raises(InvalidOptionError, match=r"partition column\(s\) \['k'\] are binary"):
            catalog.create_table("db.obinpart", pa.schema([pa.field("id", pa.int32(), False), ("k", binary)]),
                                 partition_keys=["k"])


def test_orc_char_inside_rows_arrays_and_maps_is_trimmed_as_java_reads_it(java, tmp_path):
    """ORC pads CHAR(n) at any depth; only top-level CHAR columns were trimmed, so `r.b`, the
    array's elements and the map's keys and values read 'ab ' where Java reads 'ab' (and our
    compaction wrote the padding back as values)."""
    path = str(tmp_path / "db.db" / "t")
    fields = [{"name": "id", "type": "INT NOT NULL"}, {"name": "c", "type": "CHAR(3)"},
              {"name": "r", "type": {"type": "ROW", "fields": [{"id": 10, "name": "b", "type": "CHAR(3)"},
                                                               {"id": 11, "name": "n", "type": "INT"}]}},
              {"name": "a", "type": {"type": "ARRAY", "element": "CHAR(3)"}},
              {"name": "m", "type": {"type": "MAP", "key": "CHAR(3)", "value": "CHAR(3)"}}]
    rows = [{"id": 1, "c": "ab", "r": {"b": "ab", "n": 1}, "a": ["ab", None, "abc"], "m": {"ab": "x", "c": None}},
            {"id": 2, "c": None, "r": None, "a": None, "m": None},
            {"id": 3, "c": "", "r": {"b": None, "n": None}, "a": [], "m": {}}]
    with java.batch() as b:
        b.create_table(path, fields, primary_keys=["id"], options={"file.format": "orc", "bucket": "1"})
        b.write(path, rows)
        want = b.read(path)
    t = ps.Table.open(path)
    assert sorted(t.to_arrow().to_pylist(), key=lambda r: r["id"]) == sorted(want.result, key=lambda r: r["id"])
    t.compact(full=True)
    assert sorted(java.read(path), key=lambda r: r["id"]) == sorted(want.result, key=lambda r: r["id"])


def test_orc_null_rows_inside_rows_arrays_and_maps_read_in_java_as_written(java, catalog):
    """pyarrow's ORC writer stored a ROW's fields under a null ROW nested in a ROW (or in an
    ARRAY, or a MAP's value) where ORC keeps nothing, so Java (and we) read every later row of
    that ROW as '', 0 and [] (when no ROW above it was null: the writer nulls those fields
    itself below ROWs that hold a null): our writes and compactions, append and primary-key tables."""
    inner = pa.struct([("s", pa.string()), ("i", pa.int32()), ("d", pa.list_(pa.int32()))])
    schema = pa.schema([pa.field("id", pa.int32(), False), ("v", pa.struct([("b", inner)])),
                        ("a", pa.list_(pa.struct([("b", inner)]))),
                        ("m", pa.map_(pa.string(), pa.struct([("b", inner)])))])
    b1, b2 = {"s": "x", "i": 1, "d": [1, 2]}, {"s": "y", "i": 2, "d": [3, None]}
    rows = [{"id": 1, "v": {"b": b1}, "a": [{"b": b1}, {"b": None}, {"b": b2}],
             "m": [("k", {"b": None}), ("j", {"b": b2})]},
            {"id": 2, "v": {"b": None}, "a": [{"b": None}], "m": [("k", {"b": None})]},
            {"id": 3, "v": {"b": None}, "a": None, "m": None},
            {"id": 4, "v": {"b": b2}, "a": [{"b": b1}], "m": [("k", {"b": b1})]},
            {"id": 5, "v": {"b": {"s": None, "i": None, "d": None}}, "a": [], "m": []}]
    tables = [catalog.create_table("db.orc_nested_append", schema, options={"file.format": "orc", "bucket": "-1"}),
              catalog.create_table("db.orc_nested_pk", schema, primary_keys=["id"],
                                   options={"file.format": "orc", "bucket": "1", "deletion-vectors.enabled": "true"})]
    for t in tables:
        t.write_arrow(pa.Table.from_pylist(rows[:3], schema=schema))
        t.write_arrow(pa.Table.from_pylist(rows[2:], schema=schema))
    with java.batch() as b:
        written = [b.read(t.path) for t in tables]
    for t in tables:
        t.compact(full=True)
    with java.batch() as b:
        compacted = [b.read(t.path) for t in tables]
    assert by_id(written[0].result) == by_id(rows[:3] + rows[2:])
    assert by_id(written[1].result) == by_id(compacted[1].result) == rows
    assert by_id(compacted[0].result) == by_id(rows[:3] + rows[2:])


@pytest.mark.parametrize("fmt,thin", [("orc", False), ("orc", True), ("parquet", False)])
def test_char_values_and_statistics_are_stored_as_javas_writer_stores_them(java, tmp_path, fmt, thin):
    """Java's ORC writer pads a CHAR(n) value to n characters at any depth ('zz' is stored
    'zz   '), and its key and value statistics of the file are of the padded values. We stored
    'zz', and our compaction (which reads them trimmed, as Java does) wrote 'zz' with min/max
    'zz' where Java's writes 'zz   ': Java's filter `ch = 'zz   '` skipped our file and lost the
    row. Now both writers' files hold the same values and statistics, written or compacted;
    Parquet keeps the values as given, as Java's does."""
    import pyarrow.orc as orc
    import pyarrow.parquet as pq
    fields = [{"name": "k", "type": "CHAR(4) NOT NULL"}, {"name": "ch", "type": "CHAR(5)"},
              {"name": "r", "type": {"type": "ROW", "fields": [{"id": 10, "name": "c", "type": "CHAR(3)"}]}},
              {"name": "a", "type": {"type": "ARRAY", "element": "CHAR(2)"}}]
    writes = [[{"k": "a", "ch": "zz", "r": {"c": "é"}, "a": ["x", None]}, {"k": "b", "ch": "zz   ", "r": None, "a": []},
               {"k": "cc  ", "ch": "éé", "r": {"c": None}, "a": None}, {"k": "d", "ch": None, "r": {"c": ""}, "a": [""]}],
              [{"k": "a", "ch": "", "r": {"c": "q"}, "a": ["yy"]}]]
    options = {"file.format": fmt, "bucket": "1", "data-file.thin-mode": str(thin).lower(),
               "num-sorted-run.compaction-trigger": "10"}
    paths = {who: str(tmp_path / who) for who in ("java", "ours")}
    with java.batch() as b:
        for path in paths.values():
            b.create_table(path, fields, primary_keys=["k"], options=options)
        for rows in writes:
            b.write(paths["java"], rows)
    t = ps.Table.open(paths["ours"])
    for rows in writes:
        t.write_arrow(pa.Table.from_pylist(rows, schema=t.arrow_schema()))

    def files(path):  # min/max as Java's `files` system table gives them, the key stats, the values stored
        t = ps.Table.open(path)
        entries = {e.file.file_name: e.file for e in TableScan(t.file_io, t.path, t.schema).live_entries(t.latest_snapshot())}
        read = orc.read_table if fmt == "orc" else pq.read_table
        return sorted([({c: r[c] for c in ("level", "record_count", "min_key", "max_key", "min_value_stats",
                                            "max_value_stats")},
                        entries[r["file_path"].rsplit("/", 1)[-1]].key_stats,
                        read(r["file_path"]).drop_columns(["_SEQUENCE_NUMBER"]).to_pylist())
                       for r in java.read(path, system_table="files")], key=repr)

    assert files(paths["ours"]) == files(paths["java"])
    java.compact(paths["java"])
    t.compact(full=True)
    compacted = files(paths["java"])
    assert files(paths["ours"]) == compacted and len(compacted) == 1
    if fmt == "orc":
        assert {r["ch"] for r in compacted[0][2]} == {"     ", "zz   ", "éé   ", None}
    with java.batch() as b:
        found = {who: b.read(path, where=("ch", "=", "zz   ")) for who, path in paths.items()}
        everything = b.read(paths["ours"])
    assert found["ours"].result == found["java"].result and "b" in {r["k"] for r in found["ours"].result}
    assert sorted(t.to_arrow().to_pylist(), key=lambda r: r["k"]) == sorted(everything.result, key=lambda r: r["k"])


@pytest.mark.parametrize("fmt", ["parquet", "orc"])
def test_multiset_columns_are_written_as_java_reads_them(java, tmp_path, fmt):
    """A MULTISET is a map of each element to its INT NOT NULL count (Java checks no count), and
    `arrow_schema()` gives it as that map; but every write of one was refused ("MAP<STRING NOT
    NULL, INT NOT NULL> cannot be written to table type MULTISET<STRING>"). Maps of elements to
    integer counts are written now (nested ones too, in ORC CHAR elements padded as Java's), Java
    reads them and compacts them; a null count is refused naming the column, as is a count that
    does not fit an INT, and nothing is committed."""
    from paimon_streaming.errors import SchemaMismatchError
    path = str(tmp_path / fmt)
    fields = [{"name": "id", "type": "INT NOT NULL"}, {"name": "ms", "type": {"type": "MULTISET", "element": "STRING"}},
              {"name": "r", "type": {"type": "ROW", "fields": [
                  {"id": 10, "name": "mc", "type": {"type": "MULTISET", "element": "CHAR(3)"}}]}}]
    java_rows = [{"id": 0, "ms": [("a", 2), ("", 1)], "r": {"mc": [("x", 1)]}}, {"id": 1, "ms": [], "r": None}]
    with java.batch() as b:
        b.create_table(path, fields, primary_keys=["id"], options={"bucket": "1", "file.format": fmt})
        b.write(path, java_rows)
    t = ps.Table.open(path)
    ours = [{"id": 2, "ms": [("b", 3), ("c", 0), ("d", -1)], "r": {"mc": [("yy", 2), ("", 1)]}},
            {"id": 3, "ms": None, "r": {"mc": None}}, {"id": 1, "ms": [("e", 1)], "r": {"mc": []}}]
    t.write_arrow(pa.Table.from_pylist(ours, schema=t.arrow_schema()))
    wide = pa.schema([("id", pa.int32()), ("ms", pa.map_(pa.string(), pa.int64()))])
    t.write_arrow(pa.Table.from_pylist([{"id": 4, "ms": [("f", 7)]}], schema=wide))
    for bad, message in ((pa.Table.from_pylist([{"id": 5, "ms": [("g", None)]}], schema=t.arrow_schema()),
                          "column 'ms' has a null count, where its type MULTISET<STRING> holds NOT NULL counts"),
                         (pa.Table.from_pylist([{"id": 5, "ms": [("g", 2 ** 31)]}], schema=wide),
                          "column 'ms' cannot be cast")):
        with pytest.raises(SchemaMismatchError, match=re.escape(message)):
            t.write_arrow(bad)
    assert t.latest_snapshot().id == 3
    expected = sorted([java_rows[0], *ours, {"id": 4, "ms": [("f", 7)], "r": None}], key=lambda r: r["id"])
    with java.batch() as b:
        before = b.read(path)
        b.compact(path)
        after = b.read(path)
    assert sorted(before.result, key=lambda r: r["id"]) == expected
    assert sorted(after.result, key=lambda r: r["id"]) == expected
    assert sorted(t.to_arrow().to_pylist(), key=lambda r: r["id"]) == expected
    t.write_arrow(pa.Table.from_pylist([{"id": 6, "ms": [("h", 1)], "r": {"mc": [("z", 4)]}}], schema=t.arrow_schema()))
    t.compact(full=True)
    expected.append({"id": 6, "ms": [("h", 1)], "r": {"mc": [("z", 4)]}})
    assert sorted(java.read(path), key=lambda r: r["id"]) == expected


def test_orc_timestamps_before_1970_below_the_millisecond_are_refused_as_java_cannot_read_them(java, catalog):
    """pyarrow's ORC writer stores a timestamp before 1970 with digits below the millisecond
    with negative nanoseconds, and Java 1.4.2's reader fails on the file (IllegalArgumentException):
    such a batch is refused naming the column (nested ones too) and commits nothing. Millisecond
    values before 1970 and any after it are written, and Java reads them exactly."""
    import re
    from java_oracle import epoch_nanos
    from paimon_streaming.errors import SchemaMismatchError
    schema = pa.schema([pa.field("id", pa.int32(), False), ("ts", pa.timestamp("us")), ("ns", pa.timestamp("ns")),
                        ("n", pa.list_(pa.struct([("t", pa.timestamp("us"))])))])
    t = catalog.create_table("db.orcts", schema, primary_keys=["id"], options={"bucket": "1", "file.format": "orc"})
    fine = [dt.datetime(1969, 12, 31, 23, 59, 59, 500000), dt.datetime(1960, 6, 1, 12, 0, 0, 1000),
            dt.datetime(1971, 1, 1, 0, 0, 0, 1), dt.datetime(2024, 2, 29, 12, 30, 0, 123456)]
    t.write_arrow(pa.table({"id": range(4), "ts": fine, "ns": fine, "n": [[{"t": v}] for v in fine]}, schema=schema))
    for column, row in [("ts", {"ts": dt.datetime(1969, 12, 31, 23, 59, 59, 1)}),
                        ("ns", {"ns": dt.datetime(1900, 1, 1, 0, 0, 0, 123456)}),
                        ("n[].t", {"n": [{"t": None}, {"t": dt.datetime(1969, 12, 31, 23, 59, 59, 999999)}]})]:
        with pytest.raises(SchemaMismatchError, match=rf"column '{re.escape(column)}' holds .* before 1970 with digits below "
                                                      "the millisecond"):
            t.write_arrow(pa.table({"id": [9], **{k: [row.get(k)] for k in ("ts", "ns", "n")}}, schema=schema))
    assert t.latest_snapshot().id == 1
    got = sorted(java.read(t.path), key=lambda r: r["id"])
    assert [r["ts"] for r in got] == fine and [r["n"] for r in got] == [[{"t": v}] for v in fine]
    assert [r["ns"] for r in got] == [epoch_nanos(v) for v in fine]


_UTC = dt.timezone.utc
# per zone: a UTC wall clock in a gap of its offsets (read back one hour later, by Java too)
_GAPS = {"America/Los_Angeles": dt.datetime(2024, 3, 10, 2, 30, tzinfo=_UTC),
         "Asia/Shanghai": dt.datetime(1988, 4, 17, 2, 30, tzinfo=_UTC),
         "Europe/Amsterdam": dt.datetime(2024, 3, 31, 2, 30, tzinfo=_UTC)}


# Europe/Amsterdam: in 1900 at +00:00 in the JVM's data, at +00:19:32 in Debian's (its 'backzone')
@pytest.mark.parametrize("zone", ["Asia/Shanghai", "America/Los_Angeles", "Europe/Amsterdam"])
@pytest.mark.parametrize("legacy", [None, "false"])
def test_orc_local_zoned_timestamps_read_and_written_as_java_in_any_time_zone(java, tmp_path, time_zone,
                                                                              zone, legacy):
    """Java's ORC writer stores a TIMESTAMP WITH LOCAL TIME ZONE, at any depth, shifted by the
    JVM's zone's offset while `orc.timestamp-ltz.legacy.type` is true (its default), and its
    reader shifts it back; we stored and read the true instant, so outside UTC each side read
    the other's values hours off. Both now follow the option in the process's zone (TZ): values
    across DST changes, before 1900 (LMT) and after 2037 read the same on both sides, a value
    in a gap of the zone's offsets reads one hour later (as in Java), and filters (file
    statistics included) find the values read."""
    time_zone(zone)
    path = str(tmp_path / "db.db" / "t")
    lz = "TIMESTAMP(6) WITH LOCAL TIME ZONE"
    fields = [{"name": "k", "type": "INT NOT NULL"}, {"name": "lz3", "type": "TIMESTAMP(3) WITH LOCAL TIME ZONE"},
              {"name": "lz6", "type": lz},
              {"name": "r", "type": {"type": "ROW", "fields": [{"id": 10, "name": "t", "type": lz}]}},
              {"name": "a", "type": {"type": "ARRAY", "element": lz}},
              {"name": "m", "type": {"type": "MAP", "key": "STRING NOT NULL", "value": lz}}]
    plain = [dt.datetime(2024, 1, 1, tzinfo=_UTC), dt.datetime(2024, 11, 3, 1, 30, tzinfo=_UTC),  # LA: repeated
             dt.datetime(2024, 7, 1, 12, 0, 0, 123000, tzinfo=_UTC), dt.datetime(1850, 6, 1, 12, tzinfo=_UTC),
             dt.datetime(1900, 6, 1, 12, tzinfo=_UTC), dt.datetime(2100, 7, 1, 1, 30, tzinfo=_UTC), None]

    def rows(first: int, values: list) -> list[dict]:
        return [{"k": first + i, "lz3": v, "lz6": v, "r": {"t": v}, "a": [v, None], "m": {"x": v}}
                for i, v in enumerate(values)]

    with java.batch() as b:
        b.create_table(path, fields, options={"file.format": "orc",
                                              **({"orc.timestamp-ltz.legacy.type": legacy} if legacy else {})})
        b.write(path, rows(0, plain))
        b.write(path, rows(50, [_GAPS[zone]]))
    t = ps.Table.open(path)
    schema = t.arrow_schema()
    t.write_arrow(pa.Table.from_pylist(rows(100, plain), schema))
    t.write_arrow(pa.Table.from_pylist(rows(150, [_GAPS[zone]]), schema))

    def comparable(rows: list[dict]) -> dict[int, dict]:
        return {r["k"]: {**r, "m": dict(r["m"]) if r["m"] is not None else None} for r in rows}

    java_read = comparable(java.read(path))
    assert comparable(ps.Table.open(path).to_arrow().to_pylist()) == java_read
    read_back = _GAPS[zone] + dt.timedelta(hours=1 if legacy is None else 0)
    for first, values in [(0, plain), (100, plain), (50, [read_back]), (150, [read_back])]:
        assert [java_read[first + i]["lz6"] for i in range(len(values))] == values
        assert [java_read[first + i]["r"] for i in range(len(values))] == [{"t": v} for v in values]
    assert sorted(ps.Table.open(path).to_arrow(filter=[("lz6", "=", plain[1])])["k"].to_pylist()) == [1, 101]
    assert sorted(ps.Table.open(path).to_arrow(filter=[("lz6", "=", read_back)])["k"].to_pylist()) == [50, 150]


@pytest.mark.parametrize("setting", ["true", "false", None])
@pytest.mark.parametrize("keys", [None, ["id", "dt"]])
def test_an_overwrite_follows_the_tables_dynamic_partition_overwrite(java, tmp_path, setting, keys):
    """`dynamic-partition-overwrite` = true (Java's option) makes an overwrite replace only the
    partitions it writes, as Java's overwrite of the same table does; the option was accepted
    and ignored (every other partition dropped). Unset, our overwrite replaces the table (the
    README's rule; Java's default is dynamic), set to false both replace it."""
    schema = pa.schema([pa.field("id", pa.int64(), False), pa.field("dt", pa.string(), False)])
    fields = [{"name": "id", "type": "BIGINT NOT NULL"}, {"name": "dt", "type": "STRING NOT NULL"}]
    options = {"bucket": "1"} if keys else {}
    if setting is not None:
        options["dynamic-partition-overwrite"] = setting
    base, new = [{"id": 1, "dt": "a"}, {"id": 2, "dt": "b"}], [{"id": 3, "dt": "a"}]
    t = ps.Catalog(str(tmp_path)).create_table("db.t", schema, primary_keys=keys, partition_keys=["dt"],
                                              options=options)
    t.write_arrow(pa.Table.from_pylist(base, schema=schema))
    t.write_arrow(pa.Table.from_pylist(new, schema=schema), overwrite=True)
    expected = [base[1]] + new if setting == "true" else new  # by id
    assert rows_by(t.to_arrow(), "id") == expected
    if setting == "true":  # no rows: no partition replaced, no snapshot
        assert t.write_arrow(schema.empty_table(), overwrite=True) is None
        assert rows_by(t.to_arrow(), "id") == expected
    if setting is not None:
        path = str(tmp_path / "java" / "t")
        with java.batch() as b:
            b.create_table(path, fields, primary_keys=keys or (), partition_keys=["dt"], options=options)
            b.write(path, base)
        with java.batch() as b:
            b.write(path, new, overwrite=True)
        assert rows_by(pa.Table.from_pylist(java.read(path)), "id") == expected


def test_fallback_branch_under_todays_options_and_level0_partitions(java, tmp_path):
    """`scan.fallback-branch` as Java reads it: a time-travel read decides by the table's options
    of today (not those of the snapshot's schema: fallback rows were missing from, or added to,
    old snapshots), checks today's columns of both branches (a schema change both made failed
    such a read), and a deletion-vector table's partition whose files are all at level 0 (not
    read yet) comes from the fallback, as Java takes it (it returned nothing)."""
    from paimon_streaming.catalog import create_table_at
    schema = pa.schema([("id", pa.int64()), ("dt", pa.string())])

    def both(path, **kw):
        ours = sorted((r["id"], r["dt"]) for r in ps.Table.open(path).to_arrow(**kw).to_pylist())
        javas = sorted((r["id"], r["dt"]) for r in java.read(path, **kw))
        assert ours == javas, (path, kw)
        return ours
    p = str(tmp_path / "later")
    t = create_table_at(p, schema, partition_keys=["dt"])
    t.create_branch("fb").write_arrow(pa.table({"id": [100, 101], "dt": ["a", "b"]}))
    t.write_arrow(pa.table({"id": [1], "dt": ["a"]}))  # snapshot 1, under a schema without the option
    with t.update_schema() as update:
        update.set_option("scan.fallback-branch", "fb")
    ps.Table.open(p).write_arrow(pa.table({"id": [2], "dt": ["a"]}))
    assert both(p, snapshot_id=1) == [(1, "a"), (101, "b")]
    with ps.Table.open(p).update_schema() as update:
        update.remove_option("scan.fallback-branch")
    assert both(p, snapshot_id=2) == [(1, "a"), (2, "a")]
    p = str(tmp_path / "evolved")
    t = create_table_at(p, schema, partition_keys=["dt"], options={"scan.fallback-branch": "fb"})
    fb = t.create_branch("fb")
    fb.write_arrow(pa.table({"id": [100, 101], "dt": ["a", "b"]}))
    t.write_arrow(pa.table({"id": [1], "dt": ["a"]}))
    for branch in (ps.Table.open(p), ps.Table.open(p, branch="fb")):
        with branch.update_schema() as update:
            update.add_column("note", pa.string())
    assert both(p, snapshot_id=1) == [(1, "a"), (101, "b")]
    p = str(tmp_path / "level0")
    t = create_table_at(p, schema, primary_keys=["id", "dt"], partition_keys=["dt"],
                        options={"bucket": "1", "deletion-vectors.enabled": "true"})
    t.create_branch("fb").write_arrow(pa.table({"id": [100, 101], "dt": ["a", "b"]}))
    with t.update_schema() as update:
        update.set_option("scan.fallback-branch", "fb")
        update.set_option("write-only", "true")  # main's files stay at level 0
    ps.Table.open(p).write_arrow(pa.table({"id": [1], "dt": ["a"]}))
    assert both(p) == [(100, "a"), (101, "b")]


def fallback_table_renamed_after(path: str, renames: list[tuple[str, str]]) -> ps.Table:
    """A table (id, a, b, dt) whose fallback branch 'fb' holds partition d2 (a=12, b=92), its
    snapshot 2 written after the branch's write, then `renames` made on the table and the branch."""
    from paimon_streaming.catalog import create_table_at
    schema = pa.schema([pa.field("id", pa.int64(), False), ("a", pa.int32()), ("b", pa.int32()),
                        pa.field("dt", pa.string(), False)])

    def row(i, a, b, d):
        return pa.table({"id": [i], "a": pa.array([a], pa.int32()), "b": pa.array([b], pa.int32()), "dt": [d]},
                        schema=schema)
    t = create_table_at(path, schema, primary_keys=["id", "dt"], partition_keys=["dt"], options={"bucket": "1"})
    t.write_arrow(row(1, 11, 91, "d1"))
    t.create_tag("t1", 1)
    branch = t.create_branch("fb", tag="t1")
    time.sleep(0.02)
    branch.write_arrow(row(2, 12, 92, "d2"))
    time.sleep(0.02)
    t.write_arrow(row(3, 13, 93, "d1"))
    for x in (t, branch):
        for old, new in renames:
            x.update_schema().rename_column(old, new).commit()
    t.update_schema().set_option("scan.fallback-branch", "fb").commit()
    return ps.Table.open(path)


def test_fallback_branch_time_travel_reads_the_branch_in_its_snapshots_schema(java, tmp_path):
    """Time travel of a table with `scan.fallback-branch` read the branch's rows by name in the
    branch's newest schema: after a swap of two names on the table and the branch, the branch's
    partition came back with the two columns swapped (a filter on one missed its row), after a
    rename the read failed naming the old name. As Java, the branch is read in the schema of its
    snapshot read (Spark's reads: test_spark_source.py); a branch whose column of a name is
    another field (by field id) than the table's is refused, naming both."""
    from paimon_streaming.errors import UnsupportedOperationError
    swapped = fallback_table_renamed_after(str(tmp_path / "swapped"), [("a", "tmp"), ("b", "a"), ("tmp", "b")])
    renamed = fallback_table_renamed_after(str(tmp_path / "renamed"), [("a", "c")])
    with java.batch() as b:
        javas = {t.path: b.read(t.path, options={"scan.snapshot-id": 2}) for t in (swapped, renamed)}
    then = [(1, 11, 91, "d1"), (2, 12, 92, "d2"), (3, 13, 93, "d1")]
    for t in (swapped, renamed):
        assert sorted((r["id"], r["a"], r["b"], r["dt"]) for r in t.to_arrow(snapshot_id=2).to_pylist()) == \
            sorted((r["id"], r["a"], r["b"], r["dt"]) for r in javas[t.path].result) == then, t.path
    assert swapped.to_arrow(snapshot_id=2, filter=[("a", "=", 12)]).to_pylist() == \
        [{"id": 2, "a": 12, "b": 92, "dt": "d2"}]
    assert sorted((r["id"], r["b"], r["a"]) for r in swapped.to_arrow().to_pylist()) == \
        [(1, 11, 91), (2, 12, 92), (3, 13, 93)]  # today's names, each the same field
    swapped.update_schema().drop_column("b").commit()
    swapped.update_schema().add_column("b", pa.int32()).commit()  # another field named b (field id 4)
    with pytest.raises(UnsupportedOperationError, match=r"fallback branch 'fb': .*b INT \(field id 1\).*"
                                                        r"b INT \(field id 4\)"):
        ps.Table.open(swapped.path).to_arrow()


@pytest.mark.parametrize("fmt", ["orc", "parquet"])
def test_manifest_format_tables_interoperate(java, catalog, warehouse, fmt):
    """`manifest.format` orc or parquet: Java writes manifests, manifest lists and index manifests
    in that format. Its tables and ours are read, written on top of, compacted, expired and
    checked by either side, and our files have the schema of Java's."""
    import datetime
    import glob
    import pyarrow.orc as orc
    import pyarrow.parquet as pq
    from paimon_streaming.check import check_table
    options = {"bucket": "2", "deletion-vectors.enabled": "true", "manifest.format": fmt,
               "manifest.merge-min-count": "2"}
    schema = pa.schema([pa.field("dt", pa.string(), False), pa.field("id", pa.int64(), False), ("v", pa.string())])
    fields = [{"name": "dt", "type": "STRING NOT NULL"}, {"name": "id", "type": "BIGINT NOT NULL"},
              {"name": "v", "type": "STRING"}]

    def rows(ids, v):
        return [{"dt": f"d{i % 2}", "id": i, "v": v} for i in ids]

    def write_ours(path, ids, v):
        ps.Table.open(path).write_arrow(pa.Table.from_pylist(rows(ids, v), schema=schema))
        expected[path].update(((f"d{i % 2}", i), v) for i in ids)

    def write_java(b, path, ids, v):
        b.write(path, rows(ids, v))
        expected[path].update(((f"d{i % 2}", i), v) for i in ids)

    def as_dict(result):
        return {(r["dt"], r["id"]): r["v"] for r in result}

    ours = catalog.create_table("db.omf", schema, primary_keys=["dt", "id"], partition_keys=["dt"],
                                options=options).path
    theirs = f"{warehouse}/db.db/jmf"
    expected = {ours: {}, theirs: {}}
    with java.batch() as b:
        b.create_table(theirs, fields, primary_keys=["dt", "id"], partition_keys=["dt"], options=options)
        write_java(b, theirs, range(40), "j")
        write_java(b, theirs, range(0, 40, 3), "j1")  # deletion vectors: an index manifest
    for ids, v in ((range(30), "o"), (range(0, 50, 4), "o1"), (range(1, 50, 5), "o2")):
        write_ours(ours, ids, v)
    write_ours(theirs, range(2, 60, 6), "o3")
    with java.batch() as b:
        write_java(b, ours, range(5, 45, 7), "j2")
        reads = {path: b.read(path) for path in expected}
    for path in expected:
        assert as_dict(reads[path].result) == expected[path]
        assert as_dict(ps.Table.open(path).to_arrow().to_pylist()) == expected[path]
        assert check_table(ps.Table.open(path)).ok, check_table(ps.Table.open(path)).problems
    with java.batch() as b:
        b.compact(theirs)
    ps.Table.open(ours).compact(full=True)
    write_ours(theirs, range(3, 30, 9), "o4")
    with java.batch() as b:
        write_java(b, ours, range(7, 20), "j3")
        b.expire(ours, {"snapshot.num-retained.max": "1", "snapshot.num-retained.min": "1"})
    ps.Table.open(theirs).expire_snapshots(retain_max=1, retain_min=1, older_than=datetime.datetime.now())
    with java.batch() as b:
        reads = {path: b.read(path) for path in expected}
    for path in expected:
        assert as_dict(reads[path].result) == expected[path]
        assert as_dict(ps.Table.open(path).to_arrow().to_pylist()) == expected[path]
        assert check_table(ps.Table.open(path)).ok, check_table(ps.Table.open(path)).problems

    magic = {"orc": b"ORC", "parquet": b"PAR1"}[fmt]

    def file_schema(path):  # Parquet: the fields with their ids (not the file's key-value metadata)
        return orc.ORCFile(path).schema if fmt == "orc" else pa.schema(list(pq.read_schema(path)))

    def by_java(path):
        return orc.ORCFile(path).writer == "ORC_JAVA" if fmt == "orc" else \
            pq.ParquetFile(path).metadata.created_by.startswith("parquet-mr")
    for prefix in ("manifest-list-", "manifest-", "index-manifest-"):
        files = [f for path in expected for f in glob.glob(f"{path}/manifest/{prefix}*")
                 if prefix != "manifest-" or "manifest-list-" not in f]
        for f in files:
            with open(f, "rb") as fh:
                assert fh.read(len(magic)) == magic, f
        javas, others = [f for f in files if by_java(f)], [f for f in files if not by_java(f)]
        assert javas and others, prefix
        for f in files:  # ORC: Java's field ids are attributes pyarrow cannot write
            assert file_schema(f).equals(file_schema(javas[0]), check_metadata=fmt == "parquet"), (f, file_schema(f))


def test_manifest_format_changed_on_a_table_with_snapshots(java, warehouse):
    """Java 1.4 reads every metadata file in the format `manifest.format` names: after Java
    changes it on a table with snapshots, Java reads and writes nothing of it. We read it (each
    file in its own format), refuse to commit on it naming the option (a commit of the new format
    would leave a table Java reads under no value of it) and refuse the change ourselves; set
    back, both write again."""
    from paimon_streaming.check import check_table
    from paimon_streaming.errors import InvalidOptionError
    path = f"{warehouse}/db.db/altered"
    schema = pa.schema([pa.field("id", pa.int64(), False), ("v", pa.string())])
    with java.batch() as b:
        b.create_table(path, [{"name": "id", "type": "BIGINT NOT NULL"}, {"name": "v", "type": "STRING"}],
                       primary_keys=["id"], options={"bucket": "1", "deletion-vectors.enabled": "true",
                                                     "manifest.format": "orc"})
        b.write(path, [{"id": 1, "v": "a"}, {"id": 2, "v": "b"}])
        b.write(path, [{"id": 1, "v": "c"}])
    with java.batch() as b:
        b.alter(path, [{"kind": "set-option", "path": [], "key": "manifest.format", "value": "parquet"}])
    with pytest.raises(Exception, match="Failed to read manifest-list|is not a Parquet file"):
        java.read(path)
    t = ps.Table.open(path)
    assert by_id(t.to_arrow().to_pylist()) == [{"id": 1, "v": "c"}, {"id": 2, "v": "b"}]
    report = check_table(t)
    assert report.problems and {(p.severity, p.kind) for p in report.problems} == {("warning", "manifest-format")}
    snapshots = len(t.snapshots())
    with pytest.raises(InvalidOptionError, match="is orc, but the table option 'manifest.format' is 'parquet'"):
        t.write_arrow(pa.table({"id": [3], "v": ["x"]}, schema=schema))
    with pytest.raises(InvalidOptionError, match="'manifest.format' cannot be changed on a table with snapshots"):
        t.update_schema().set_option("manifest.format", "avro").commit()
    assert len(ps.Table.open(path).snapshots()) == snapshots
    with java.batch() as b:
        b.alter(path, [{"kind": "set-option", "path": [], "key": "manifest.format", "value": "orc"}])
    ps.Table.open(path).write_arrow(pa.table({"id": [3], "v": ["x"]}, schema=schema))
    assert by_id(java.read(path)) == [{"id": 1, "v": "c"}, {"id": 2, "v": "b"}, {"id": 3, "v": "x"}]
    assert check_table(ps.Table.open(path)).ok
