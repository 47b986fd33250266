"""Read splits: buckets that need no merge are read file by file (so a one-bucket table of many
files is read by many tasks), buckets that must be merged stay whole and still merge, and the
results are the same either way."""
from __future__ import annotations

import pyarrow as pa
import pytest

from paimon_streaming.read import SplitReader
from paimon_streaming.scan import TableScan
from paimon_streaming.streaming_scan import units_of_splits

SCHEMA = pa.schema([("k", pa.int64(), False), ("v", pa.string()), ("n", pa.int64())])
SMALL_FILES = {"bucket": "1", "target-file-size": "1 kb"}


def batch(keys, tag, ops=None) -> pa.Table:
    data = {"k": pa.array(keys, pa.int64()), "v": [f"{tag}-{k}" for k in keys], "n": pa.array(keys, pa.int64())}
    if ops is not None:
        data["op"] = ops
    return pa.table(data)


def plan(t, flt=None):
    return t.plan(t.latest_snapshot(), flt)


def reads_as_whole_splits(t, splits) -> bool:
    """Whether to_arrow gives the rows of reading each split in one go (as before per-file
    pieces), in the same order."""
    reader = SplitReader(t.file_io, TableScan(t.file_io, t.path, t.schema), t.schema)
    result = t.to_arrow()
    whole = pa.concat_tables([reader.read_split(s, t.schema.field_names, None) for s in splits])
    return result.equals(whole.cast(result.schema))


def source_partitions(t, **options):
    from paimon_streaming.sources.datasource import reader, source_schema
    opts = {"path": t.path, **{k: str(v) for k, v in options.items()}}
    r = reader(opts, source_schema(opts))
    parts = r.partitions()
    rows = [row for p in parts for b in r.read(p) for row in b.to_pylist()]
    return parts, rows


def test_dv_bucket_of_many_files_is_read_by_many_tasks(catalog):
    t = catalog.create_table("db.dv", SCHEMA, primary_keys=["k"],
                             options={**SMALL_FILES, "deletion-vectors.enabled": "true"})
    t.write_arrow(batch(list(range(2000)), "a"))
    t.write_arrow(batch(list(range(0, 2000, 3)), "b"))       # marks rows of the first files deleted
    splits = plan(t)
    assert len(splits) == 1 and not splits[0].needs_merge
    files = splits[0].files
    assert len(files) >= 20 and all(f.level > 0 for f in files)
    units = units_of_splits(1, splits)
    assert [u.split.files for u in units] == [[f] for f in files]
    expected = {k: f"b-{k}" if k % 3 == 0 else f"a-{k}" for k in range(2000)}

    parts, rows = source_partitions(t, **{"source.split.min-partitions": len(files)})
    assert len(parts) == len(files)                           # one task per file, not one per bucket
    assert {r["k"]: r["v"] for r in rows} == expected and len(rows) == len(expected)
    parts, rows = source_partitions(t, **{"source.split.min-partitions": 4})
    assert 4 <= len(parts) <= 5                               # small files spread over the minimum
    assert [u.split.files[0] for p in parts for u in p.units] == files   # consecutive, in order
    assert len(rows) == len(expected)
    parts, _ = source_partitions(t, **{"source.split.min-partitions": 1})
    weights = [sum(u.bytes + (4 << 20) for u in p.units) for p in parts]   # 4 mb open cost per file
    assert len(parts) < len(files) / 10 and max(weights) <= 128 << 20    # the 128 mb target alone

    assert reads_as_whole_splits(t, splits)   # per-file reads: same rows, same order
    assert {r["k"]: r["v"] for r in t.to_arrow().to_pylist()} == expected


def test_merge_on_read_bucket_stays_whole_and_merges(catalog):
    t = catalog.create_table("db.mor", SCHEMA, primary_keys=["k"], options=SMALL_FILES)
    t.write_arrow(batch(list(range(300)), "a"))
    t.write_arrow(batch(list(range(0, 300, 2)), "b"))
    t.write_arrow(batch([1, 3, 4], "c", ops=["-D", "-D", "+U"]), row_kind_column="op")
    splits = plan(t)
    assert len(splits) == 1 and splits[0].needs_merge and len(splits[0].files) > 3
    units = units_of_splits(1, splits)
    assert len(units) == 1 and units[0].split.files == splits[0].files
    expected = {k: ("b" if k % 2 == 0 else "a") + f"-{k}" for k in range(300) if k not in (1, 3)} | {4: "c-4"}
    parts, rows = source_partitions(t, **{"source.split.min-partitions": 64, "source.split.target-size": "1 b"})
    assert len(parts) == 1
    assert {r["k"]: r["v"] for r in rows} == expected and len(rows) == len(expected)
    result = t.to_arrow()
    assert {r["k"]: r["v"] for r in result.to_pylist()} == expected
    assert reads_as_whole_splits(t, splits)


def test_primary_key_buckets_that_need_no_merge_are_read_raw(catalog):
    t = catalog.create_table("db.raw", SCHEMA, primary_keys=["k"], options=SMALL_FILES)
    t.write_arrow(batch(list(range(20)), "a", ops=["+I"] * 20), row_kind_column="op")
    [split] = plan(t)
    assert [f.level for f in split.files] == [0] and not split.needs_merge   # one file, no -U/-D rows
    t.write_arrow(batch(list(range(500)), "b"))
    t.write_arrow(batch([7], "c", ops=["-D"]), row_kind_column="op")
    assert plan(t)[0].needs_merge                               # overlapping level-0 files
    t.compact(full=True)
    [split] = plan(t)
    assert len(split.files) > 3 and len({f.level for f in split.files}) == 1
    assert not split.needs_merge                                # one sorted run without -U/-D rows
    assert len(units_of_splits(1, [split])) == len(split.files)
    expected = {k: f"b-{k}" for k in range(500) if k != 7}
    assert {r["k"]: r["v"] for r in t.to_arrow().to_pylist()} == expected
    assert reads_as_whole_splits(t, [split])
    # a raw bucket may prune files by value statistics (each key lives in one file)
    [pruned] = plan(t, [("n", ">=", 450)])
    assert 0 < len(pruned.files) < len(split.files)
    assert sorted(t.to_arrow(filter=[("n", ">=", 450)]).column("k").to_pylist()) == list(range(450, 500))


def test_one_file_with_retractions_is_merged(catalog):
    t = catalog.create_table("db.retract", SCHEMA, primary_keys=["k"], options={"bucket": "1"})
    t.write_arrow(batch([1, 2, 3], "a", ops=["+I", "-D", "+I"]), row_kind_column="op")
    [split] = plan(t)
    assert len(split.files) == 1 and split.files[0].delete_row_count == 1 and split.needs_merge
    assert sorted(t.to_arrow().column("k").to_pylist()) == [1, 3]


def test_append_table_is_read_per_file(catalog):
    t = catalog.create_table("db.app", SCHEMA, options={"bucket": "1", "bucket-key": "k",
                                                        "write-only": "true"})  # six small files, unmerged
    for i in range(6):
        t.write_arrow(batch(list(range(i * 10, i * 10 + 10)), f"s{i}"))
    [split] = plan(t)
    assert len(split.files) == 6 and not split.needs_merge
    parts, rows = source_partitions(t, **{"source.split.min-partitions": 6})
    assert len(parts) == 6 and sorted(r["k"] for r in rows) == list(range(60))
    assert reads_as_whole_splits(t, [split])


@pytest.mark.parametrize("bad", ["0", "-2", "many"])
def test_min_partitions_option_is_checked(catalog, bad):
    from paimon_streaming.errors import InvalidOptionError
    t = catalog.create_table("db.opt", SCHEMA, options={"bucket": "1", "bucket-key": "k"})
    t.write_arrow(batch([1], "a"))
    with pytest.raises(InvalidOptionError, match="source.split.min-partitions"):
        source_partitions(t, **{"source.split.min-partitions": bad})
