"""Per-level file settings (`file.format.per.level`, `file.compression.per.level`,
`metadata.stats-mode.per.level`): each file is written as its level asks, as Java's writers do,
and every reader reads the mix. The changelog's (`changelog-file.*`): test_changelog_producer.py."""
from __future__ import annotations

import glob

import pyarrow as pa
import pyarrow.orc as orc
import pyarrow.parquet as pq
import pytest

import paimon_streaming as ps
from paimon_streaming.errors import InvalidOptionError
from paimon_streaming.option_text import parse_map
from paimon_streaming.scan import TableScan
from conftest import pypaimon_read
from java_oracle import JavaOracleError, get_oracle

SCHEMA = pa.schema([pa.field("id", pa.int64(), False), ("v", pa.string())])
PER_LEVEL = {"file.compression.per.level": "0:none,5:snappy", "file.format.per.level": "4:orc",
             "metadata.stats-mode.per.level": "0:none"}


def rows(ids, v: str) -> pa.Table:
    ids = list(ids)
    return pa.table({"id": pa.array(ids, pa.int64()), "v": [v] * len(ids)}, schema=SCHEMA)


def live_files(t: ps.Table) -> list[tuple[int, str, str, tuple | None]]:
    """(level, format, codec, value stats columns) of each live file, by level."""
    out = []
    for e in TableScan(t.file_io, t.path, t.schema).live_entries(t.latest_snapshot()):
        f = e.file
        path = f"{t.path}/bucket-{e.bucket}/{f.file_name}"
        if path.endswith(".parquet"):
            fmt, codec = "parquet", pq.ParquetFile(path).metadata.row_group(0).column(0).compression
        else:
            fmt, codec = path.rsplit(".", 1)[1], None
        out.append((f.level, fmt, codec, f.value_stats_cols))
    return sorted(out)


def test_each_level_is_written_as_its_options_say(catalog, warehouse):
    t = catalog.create_table("db.levels", SCHEMA, primary_keys=["id"],
                             options={"bucket": "1", "deletion-vectors.enabled": "true", **PER_LEVEL})
    t.write_arrow(rows(range(1000), "a"))  # level 0, moved to the top as it is
    assert live_files(t) == [(5, "parquet", "UNCOMPRESSED", ())]
    t.write_arrow(rows(range(50), "b"))    # level 0, moved to level 4 as it is
    assert live_files(t) == [(4, "parquet", "UNCOMPRESSED", ()), (5, "parquet", "UNCOMPRESSED", ())]
    t.write_arrow(rows(range(50), "c"))    # level 0 and level 4 merged into a new level-4 file
    assert live_files(t) == [(4, "orc", None, None), (5, "parquet", "UNCOMPRESSED", ())]
    t.compact(full=True)                   # one rewrite at the top: the table's stats mode
    assert live_files(t) == [(5, "parquet", "SNAPPY", None)]
    expected = {i: "c" if i < 50 else "a" for i in range(1000)}
    assert {r["id"]: r["v"] for r in t.to_arrow().to_pylist()} == expected
    assert {r["id"]: r["v"] for r in pypaimon_read(warehouse, "db.levels").to_pylist()} == expected


def test_level_zero_files_without_stats_still_prune_by_key(catalog):
    """A level whose stats mode is none keeps its key stats (Java's `_KEY_` columns always get
    truncate(128)), so key filters still skip it."""
    t = catalog.create_table("db.nostats", SCHEMA, primary_keys=["id"],
                             options={"bucket": "1", "metadata.stats-mode.per.level": "0:none"})
    t.write_arrow(rows(range(10), "a"))
    t.write_arrow(rows(range(100, 110), "b"))
    [first, second] = sorted(TableScan(t.file_io, t.path, t.schema).live_entries(t.latest_snapshot()),
                             key=lambda e: e.file.min_sequence_number)
    assert first.file.value_stats_cols == () and first.file.key_stats.min_values == first.file.min_key
    [split] = t.plan(t.latest_snapshot(), filter=[("id", ">=", 100)])
    assert [f.file_name for f in split.files] == [second.file.file_name]
    assert t.to_arrow(filter=[("id", ">=", 100)]).num_rows == 10


def test_levels_asking_for_avro_are_written_as_the_table_format(catalog):
    """Avro is read here, not written: where a level asks for it (as Paimon's write-performance
    guide suggests for levels 0 and 1), the level is written as the table's format, and the
    level's compression (meant for Avro: `null` is Avro's name) gives way to the table's too."""
    t = catalog.create_table("db.avrolevels", SCHEMA, primary_keys=["id"],
                             options={"bucket": "1", "file.format.per.level": "0:avro",
                                      "file.compression.per.level": "0:null"})
    t.write_arrow(rows(range(10), "a"))
    assert live_files(t) == [(0, "parquet", "ZSTD", None)]


@pytest.mark.parametrize("key, value, says", [
    ("file.compression.per.level", "x:lz4", "level:value pairs"),
    ("file.compression.per.level", "0:brotlix", r" \(level 0\): not a compression Java's parquet writer"),
    ("file.format.per.level", "1:csv", "expected one of"),
    ("metadata.stats-mode.per.level", "0:some", "truncate"),
    ("metadata.stats-mode", "bogus", "truncate"),
    ("changelog-file.format", "json", "expected one of"),
])
def test_bad_values_are_refused_at_create(catalog, key, value, says):
    with pytest.raises(InvalidOptionError, match=f"'{key}'.*{says}"):
        catalog.create_table("db.bad", SCHEMA, primary_keys=["id"], options={key: value})


def test_sparse_stats_store_keeps_every_column(catalog):
    """`metadata.stats-dense-store` = false (Java: full-width stats rows, no value_stats_cols)
    was accepted and ignored; a column of mode none is there with unknown stats, and filters
    on both columns still prune right."""
    for dense in ("true", "false"):
        t = catalog.create_table(f"db.t{dense}", pa.schema([pa.field("id", pa.int64(), False), ("v", pa.string())]),
                                 options={"fields.v.stats-mode": "none", "metadata.stats-dense-store": dense})
        t.write_arrow(pa.table({"id": pa.array([1, 2], pa.int64()), "v": ["a", None]}))
        t.write_arrow(pa.table({"id": pa.array([5], pa.int64()), "v": ["b"]}))
        files = [e.file for e in TableScan(t.file_io, t.path, t.schema).live_entries(t.latest_snapshot())]
        if dense == "true":
            assert {f.value_stats_cols for f in files} == {("id",)}
            assert {tuple(f.value_stats.null_counts) for f in files} == {(0,)}
        else:
            assert {f.value_stats_cols for f in files} == {None}
            assert {tuple(f.value_stats.null_counts) for f in files} == {(0, None)}
        assert t.to_arrow(filter=[("id", ">", 2)]).column("id").to_pylist() == [5]
        assert sorted(t.to_arrow(filter=[("v", "=", "a")]).column("id").to_pylist()) == [1]
        assert sorted(pypaimon_read(catalog.warehouse, f"db.t{dense}").column("id").to_pylist()) == [1, 2, 5]


def _codec(path: str) -> str:
    return pq.ParquetFile(path).metadata.row_group(0).column(0).compression if path.endswith(".parquet") \
        else orc.ORCFile(path).compression if path.endswith(".orc") else "avro"


@pytest.mark.parametrize("primary_keys, options", [
    ((), {"file.format": "orc", "file.compression": "gzip"}),
    ((), {"file.format": "orc", "file.compression": "uncompressed"}),
    ((), {"file.format": "orc", "file.compression": "ZLIB"}),
    ((), {"file.format": "orc", "file.compression": "None"}),
    ((), {"file.format": "parquet", "file.compression": "NONE"}),
    ((), {"file.format": "parquet", "file.compression": "zlib"}),
    ((), {"file.format": "parquet", "file.compression": "lz4_raw"}),
    ((), {"file.format": "parquet", "file.compression": "Uncompressed"}),
    ((), {"file.format": "orc", "file.compression": "gzip", "orc.compress": "zlib"}),
    ((), {"file.format": "orc", "file.compression": "zstd", "ORC.compress": "snappy"}),
    ((), {"file.format": "orc", "file.compression": "zstd", "orc.compress": "gzip"}),
    ((), {"file.format": "parquet", "file.compression": "zlib", "parquet.compression": "gzip"}),
    ((), {"file.format": "parquet", "parquet.compression": "none"}),
    ((), {"file.compression.per.level": "0:zlib", "file.format.per.level": "0:orc"}),  # append: no levels
    ((), {"file.format.per.level": "0:orc", "metadata.stats-mode.per.level": "0:none"}),
    (("id",), {"file.compression.per.level": "0:zlib"}),
    (("id",), {"file.format.per.level": "0:orc", "file.compression": "gzip"}),
    (("id",), {"file.format": "orc", "file.compression.per.level": "5:gzip"}),  # Java fails compacting
    (("id",), {"file.format.per.level": "0:avro", "file.compression.per.level": "0:none"}),
    (("id",), {"file.format.per.level": "0:avro", "file.compression.per.level": "0:null"}),
    (("id",), {"file.format.per.level": "0:avro", "file.compression": "lz4"}),
    (("id",), {"file.format.per.level": "0:avro", "file.compression": "lz4", "avro.codec": "deflate"}),
    (("id",), {"changelog-producer": "input", "changelog-file.format": "orc", "changelog-file.compression": "gzip"}),
    (("id",), {"changelog-file.format": "orc", "changelog-file.compression": "gzip"}),  # no changelog written
])
def test_compressions_are_taken_as_javas_writers_take_them(catalog, warehouse, primary_keys, options):
    """A compression is taken where Java 1.4.2 writes (and compacts) the table with it, and
    written as Java writes it (the format's own `orc.compress` / `parquet.compression` first);
    where Java fails, create refuses it naming the option. Names differ by format: ORC's are
    CompressionKind's (zlib, not gzip; none, not uncompressed), Parquet's CompressionCodecName's
    and Paimon's `none` (as written), Avro's its codecs' (for a level of Avro)."""
    options = {"bucket": "1", **options} if primary_keys else options
    both = _written_by_both(catalog, warehouse, primary_keys, options, "*-0.*")
    if both is None:
        return
    t, java_first, ours_first = both
    assert [r["v"] for r in t.to_arrow().to_pylist()] == (["b"] if primary_keys else ["a", "b"])
    (java_file,), (our_file,) = java_first, ours_first
    if not java_file.endswith(".avro"):
        assert (our_file.rsplit(".", 1)[1], _codec(our_file)) == (java_file.rsplit(".", 1)[1], _codec(java_file))


def _written_by_both(catalog, warehouse, primary_keys, options, first_files):
    """Java 1.4.2 and we each create a table (id, v) with `options`, write a row, then another
    of the same key (two files: a compaction rewrites them) and compact fully. Either both take
    the options or both refuse them (None); else our table, and the bucket's files matching
    `first_files` after the first write, Java's and ours."""
    java = get_oracle()
    path = f"{warehouse}/db.db/java"
    try:
        with java.batch() as b:
            b.create_table(path, [{"name": "id", "type": "BIGINT NOT NULL"}, {"name": "v", "type": "STRING"}],
                           primary_keys=list(primary_keys), options=options)
            b.write(path, [{"id": 1, "v": "a"}])
        java_first = sorted(glob.glob(f"{path}/bucket-0/{first_files}"))
        java.write(path, [{"id": 1, "v": "b"}])
        java.compact(path)
        java_error = None
    except JavaOracleError as exc:
        java_error = str(exc)
    try:
        t = catalog.create_table("db.ours", SCHEMA, primary_keys=list(primary_keys), options=options)
    except InvalidOptionError as exc:
        assert java_error is not None, f"refused what Java writes: {exc}"
        return None
    assert java_error is None, f"took what Java fails on: {java_error}"
    t.write_arrow(rows([1], "a"))
    ours_first = sorted(glob.glob(f"{t.path}/bucket-0/{first_files}"))
    t.write_arrow(rows([1], "b"))
    t.compact(full=True)
    return t, java_first, ours_first


@pytest.mark.parametrize("text", [
    "0:gzip,5:snappy", " 0 : gzip , 5:snappy ", ",0:gzip", "0:gzip,", "0:gzip,,5:snappy", "'0:gzip',5:snappy",
    "0:\"gzip\"", "0:'gzip' ,5:snappy", "0:gzip,0:snappy", "0:gzip,00:snappy", "+0:gzip", "0:", ":gzip", "0::gzip",
    "0:gzip:snappy", "0:'gzip' x", "0:'gzip", "' 0':gzip", "0:' gzip'", "0:gzip\u3000", "\u30000:gzip", "\u00a00:gzip",
    "0:gzip\x01", "\t0:gzip\n", "x:gzip", "0 1:gzip", "", "  ", ","])
def test_per_level_maps_are_read_as_java_reads_them(catalog, warehouse, text):
    """`file.compression.per.level` is read by Java's map parser (StructuredOptionsSplitter):
    entries trimmed, quotes taken off, a leading or trailing ',' ignored, an empty entry, a key
    given twice (`0` and `00` too) or a level that is not a number refused. Taken here exactly
    where Java writes and compacts the table, and each level compressed as Java compresses it."""
    both = _written_by_both(catalog, warehouse, ("id",), {"bucket": "1", "file.compression.per.level": text},
                            "*.parquet")
    if both is None:
        return
    t, java_first, ours_first = both
    assert [_codec(f) for f in ours_first] == [_codec(f) for f in java_first]
    assert {(e.file.level, _codec(f"{t.path}/bucket-0/{e.file.file_name}"))
            for e in TableScan(t.file_io, t.path, t.schema).live_entries(t.latest_snapshot())} == \
        {(5, "SNAPPY" if "5:snappy" in text.replace(" ", "") else "ZSTD")}


def test_map_splitting_edge_cases():
    """Quotes (doubled inside), separators inside quotes, and the errors Java raises."""
    assert parse_map("'0:a','1:''b,c'''") == {"0": "a", "1": "b,c"}
    assert parse_map("0:'it''s'") == {"0": "it's"}
    assert parse_map("0:a'b") == {"0": "a'b"}  # a quote inside an unquoted part is kept
    for bad, says in [("0:a,,1:b", "not one key:value"), ("0:a,0:b", "twice"), ("0:'a", "not closed"),
                      ("'0'x:a", "quoted part")]:
        with pytest.raises(ValueError, match=says):
            parse_map(bad)
