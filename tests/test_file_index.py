"""Bloom-filter file indexes (`file-index.bloom-filter.columns`): written bit for bit as Java's
writers write them (Java 1.4.2 skips our files by them, and reads every row it should), read
to skip files of filtered reads (ours and Java's indexes), and refused where Java refuses.
The tests of filtered reads run with bitmap and bit-sliced indexes too (test_bitmap_index.py and
test_bsi_index.py for the rest)."""
from __future__ import annotations

import datetime as dt
import glob
import os
import random
from typing import Iterator

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq
import pytest
import xxhash

import paimon_streaming as ps
from paimon_streaming import file_index
from paimon_streaming.check import check_table
from paimon_streaming.bloom_filter import BloomFilter64, thomas_wang
from paimon_streaming.errors import CorruptFileError, InvalidOptionError, MissingFileError
from paimon_streaming.file_cache import clear_all
from paimon_streaming.xxhash64 import xxh64

try:
    from java_oracle import get_oracle
except ImportError:  # pragma: no cover
    from tests.java_oracle import get_oracle

# (column, Paimon type): every type family Paimon's bloom filter hashes
COLUMNS = [
    ("c_tiny", "TINYINT"), ("c_small", "SMALLINT"), ("c_int", "INT"), ("c_big", "BIGINT"),
    ("c_float", "FLOAT"), ("c_double", "DOUBLE"), ("c_str", "STRING"), ("c_char", "VARCHAR(40)"),
    ("c_bin", "BYTES"), ("c_date", "DATE"), ("c_time", "TIME(3)"), ("c_ts0", "TIMESTAMP(0)"),
    ("c_ts3", "TIMESTAMP(3)"), ("c_ts6", "TIMESTAMP(6)"), ("c_ts9", "TIMESTAMP(9)"),
    ("c_ltz", "TIMESTAMP(6) WITH LOCAL TIME ZONE"),
]
EPOCH = dt.datetime(1970, 1, 1)


def _value(column: str, rng: random.Random):
    n = rng.randrange(-10**6, 10**6)
    if column == "c_tiny":
        return rng.randrange(-128, 128)
    if column == "c_small":
        return rng.randrange(-2**15, 2**15)
    if column in ("c_int", "c_big"):
        return n * (1 if column == "c_int" else 10**9 + 7)
    if column in ("c_float", "c_double"):
        return n / 8
    if column == "c_str":
        return "".join(rng.choice("abcé€😀") for _ in range(rng.randrange(0, 50)))
    if column == "c_char":
        return f"k{n}"
    if column == "c_bin":
        return rng.randbytes(rng.randrange(0, 40))
    if column == "c_date":
        return dt.date(1970, 1, 1) + dt.timedelta(days=n // 100)
    if column == "c_time":
        return (dt.datetime(2000, 1, 1) + dt.timedelta(milliseconds=rng.randrange(86_400_000))).time()
    at = EPOCH + dt.timedelta(microseconds=n * 7_919_993)  # negative instants too
    if column == "c_ts0":
        return at.replace(microsecond=0)
    if column == "c_ts3":
        return at.replace(microsecond=at.microsecond // 1000 * 1000)
    if column == "c_ltz":
        return at.replace(tzinfo=dt.timezone.utc)
    return at


def _rows(rng: random.Random, ids: range, columns=COLUMNS) -> list[dict]:
    return [{"id": i, **{c: None if rng.random() < 0.05 else _value(c, rng) for c, _ in columns}} for i in ids]


def _options(items: int, threshold: str = "500 b", columns=COLUMNS) -> dict[str, str]:
    options = {"file-index.bloom-filter.columns": ",".join(c for c, _ in columns),
               "file-index.in-manifest-threshold": threshold}
    options.update({f"file-index.bloom-filter.{c}.items": str(items) for c, _ in columns})
    options.update({f"file-index.bloom-filter.{c}.fpp": "0.01" for c, _ in columns})
    return options


def _fields(columns=COLUMNS) -> list[dict]:
    return [{"name": "id", "type": "INT NOT NULL"}] + [{"name": c, "type": t} for c, t in columns]
TABLE_OPTIONS = {"bucket": "2", "deletion-vectors.enabled": "true"}


@pytest.fixture(scope="module")
def java():
    return get_oracle()


def _write_ours(path: str, batches: list[list[dict]]) -> ps.Table:
    table = ps.Table.open(path)
    schema = table.arrow_schema()
    for rows in batches:
        table.write_arrow(pa.Table.from_pylist(rows, schema))
    return table


def _batches(seed: int, columns=COLUMNS) -> list[list[dict]]:
    rng = random.Random(seed)
    return [_rows(rng, ids, columns) for ids in (range(0, 150), range(150, 300), range(100, 200))]  # updates too


def _live(batches: list[list[dict]]) -> list[dict]:
    return list({row["id"]: row for rows in batches for row in rows}.values())


def written_by_java(java, path: str, fields: list[dict], options: dict[str, str], batches: list[list[dict]]) \
        -> ps.Table:
    """A primary-key table (`id`) Java creates, writes `batches` to, one commit each, and compacts."""
    java.create_table(path, fields, primary_keys=["id"], options=options)
    with java.batch() as b:
        for rows in batches:
            b.write(path, rows)
        b.compact(path)
    return ps.Table.open(path)


def javas_files_with_indexes(path: str) -> Iterator[tuple[str, pa.Table, file_index.Indexes]]:
    """Each data file of a table Java wrote (with `.index` files), its rows and its indexes."""
    for data_path in sorted(glob.glob(os.path.join(path, "bucket-*", "data-*.parquet"))):
        with open(data_path + ".index", "rb") as f:
            yield data_path, pq.read_table(data_path), file_index.decode(f.read(), data_path)


def assert_equalities_read_exactly(table: ps.Table, live: list[dict], columns, seed: int) -> list[dict]:
    """For values of live rows of each column: `=` and `in` filtered reads return exactly the
    rows of an unfiltered read that hold them. Returns the unfiltered read."""
    everything = table.to_arrow().to_pylist()
    assert len(everything) == len(live)
    rng = random.Random(seed)
    for column, _ in columns:
        values = [row[column] for row in rng.sample(live, 5) if row[column] is not None]
        for value in values:
            got = table.to_arrow(filter=[(column, "=", value)]).column("id").to_pylist()
            assert sorted(got) == sorted(r["id"] for r in everything if r[column] == value), (column, value)
        got = table.to_arrow(filter=[(column, "in", values)]).column("id").to_pylist()
        assert sorted(got) == sorted(r["id"] for r in everything if r[column] in values), column
    return everything


def assert_java_filters_rows_exactly(java, table: ps.Table, live: list[dict], asks: list[tuple],
                                     absent: list[tuple]) -> None:
    """Java's read with each pushed-down equality (column, value) of `asks` returns exactly the
    live rows holding the value, as ours does; with each of `absent`, nothing."""
    with java.batch() as b:
        reads = [b.read(table.path, equal=ask) for ask in asks + absent]
    for (column, value), read in zip(asks, reads):
        want = sorted(row["id"] for row in live if row[column] == value)
        assert sorted(row["id"] for row in read.result) == want, (column, value)
        assert sorted(table.to_arrow(filter=[(column, "=", value)]).column("id").to_pylist()) == want
    assert [len(read.result) for read in reads[len(asks):]] == [0] * len(absent)


def _index_files(path: str) -> list[str]:
    return [os.path.join(d, f) for d, _, files in os.walk(path) for f in files if f.endswith(".index")
            and "bucket-" in d]


@pytest.mark.parametrize("threshold", ["500 b", "1 mb"])
def test_java_skips_our_files_by_our_indexes_and_reads_every_matching_row(java, tmp_path, threshold):
    """Java 1.4.2 reads our table with a pushed-down equality: for present values it must return
    every row holding them (a wrong bit in our filter would make it skip the file), for absent
    values it skips the files by our filters; with our `.index` files' bits cleared it skips
    everything, so it does consult them. Indexes in files beside the data, and embedded in the
    manifest entries (a threshold above their size)."""
    path = str(tmp_path / "db.db" / "ours")
    java.create_table(path, _fields(COLUMNS), primary_keys=["id"],
                      options={**TABLE_OPTIONS, **_options(200, threshold, COLUMNS)})
    batches = _batches(1, COLUMNS)
    table = _write_ours(path, batches)
    assert bool(_index_files(path)) == (threshold == "500 b")
    live = _live(batches)
    rng = random.Random(2)
    asks = [(c, row[c]) for c, _ in COLUMNS for row in rng.sample(live, 4) if row[c] is not None]
    absent = [(c, _value(c, rng)) for c, _ in COLUMNS if c not in ("c_tiny",)]  # few tinyint values
    absent = [(c, v) for c, v in absent if all(row[c] != v for row in live)]
    with java.batch() as b:
        everything = b.read(path)
        present_reads = [b.read(path, equal=ask) for ask in asks]
        absent_reads = [b.read(path, equal=ask) for ask in absent]
    total = len(everything.result)
    assert total == len(live) == table.to_arrow().num_rows
    for (column, value), read in zip(asks, present_reads):
        got = {row["id"] for row in read.result}
        want = {row["id"] for row in live if row[column] == value}
        assert want <= got, f"Java skipped a file holding {column} = {value!r}"
    assert sum(len(read.result) for read in absent_reads) < total * len(absent) / 4
    if threshold != "500 b":
        return
    for index_path in _index_files(path):  # the control: every bit cleared
        with open(index_path, "rb") as f:
            indexes = file_index.decode(f.read(), index_path)
        cleared = {c: {k: b[:4] + bytes(len(b) - 4) for k, b in kinds.items()} for c, kinds in indexes.items()}
        with open(index_path, "wb") as f:
            f.write(file_index.encode(cleared))
    assert len(java.read(path, equal=asks[0])) == 0


def test_we_skip_javas_files_by_javas_indexes(java, tmp_path):
    """Java writes the indexes (embedded in its manifests when small, files beside the data when
    not): our filtered reads plan fewer files for absent values and return exactly the rows of
    an unfiltered read that match, for every column type."""
    batches = _batches(3)
    live = _live(batches)
    paths = {}
    for name, items, threshold in (("embedded", 300, "100 kb"), ("files", 300, "500 b")):
        paths[name] = str(tmp_path / "db.db" / name)
        java.create_table(paths[name], _fields(), primary_keys=["id"], options={**TABLE_OPTIONS,
                                                                              **_options(items, threshold)})
        with java.batch() as b:
            for rows in batches:
                b.write(paths[name], rows)
            b.compact(paths[name])
    rng = random.Random(4)
    for name, path in paths.items():
        table = ps.Table.open(path)
        assert bool(_index_files(path)) == (name == "files")
        everything = table.to_arrow()
        snapshot = table.latest_snapshot()
        planned = lambda flt: sum(len(s.files) for s in table.plan(snapshot, flt))  # noqa: E731
        all_files = planned(None)
        for column, _ in COLUMNS:
            values = [row[column] for row in rng.sample(live, 5) if row[column] is not None]
            for value in values:
                got = table.to_arrow(filter=[(column, "=", value)])
                assert sorted(got.column("id").to_pylist()) == sorted(
                    r["id"] for r in everything.to_pylist() if r[column] == value), (name, column, value)
            got = table.to_arrow(filter=[(column, "in", values)])
            assert got.num_rows == sum(1 for r in everything.to_pylist() if r[column] in values)
        ruled_out = [c for c, _ in COLUMNS if c != "c_tiny" and planned([(c, "=", _value(c, rng))]) < all_files]
        assert len(ruled_out) >= len(COLUMNS) - 3, ruled_out


INDEX_OPTIONS = {  # index type: the options indexing columns id, name and score
    "bloom-filter": {"file-index.bloom-filter.columns": "id,name,score", "file-index.bloom-filter.id.items": "100",
                     "file-index.bloom-filter.name.items": "100", "file-index.bloom-filter.score.items": "100"},
    "bitmap": {"file-index.bitmap.columns": "id,name,score", "file-index.bitmap.name.version": "1"},
    "range-bitmap": {"file-index.range-bitmap.columns": "id,name,score",
                     "file-index.range-bitmap.name.chunk-size": "32 b"},
}


@pytest.mark.parametrize("index", list(INDEX_OPTIONS))
@pytest.mark.parametrize("kind", ["append", "primary-key", "merge-on-read"])
def test_filtered_reads_skip_files_and_return_the_same_rows(tmp_path, kind, index):
    """Our own tables: for random present and absent values of every column, the filtered read
    returns what an unfiltered read filtered by hand does, while planning fewer files; files of
    a bucket read merged are skipped on key columns only."""
    schema = pa.schema([("id", pa.int32(), False), ("name", pa.string()), ("score", pa.float64())])
    pk = [] if kind == "append" else ["id"]
    options = {"bucket": "2", **INDEX_OPTIONS[index]}
    if kind == "primary-key":
        options["deletion-vectors.enabled"] = "true"
    if kind == "append":
        options["bucket-key"] = "id"
    table = ps.Catalog(str(tmp_path)).create_table("db.t", schema, primary_keys=pk, options=options)
    rng = np.random.default_rng(5)
    for batch in range(6):
        ids = rng.choice(2000, 100, replace=False).astype(np.int32) if kind != "append" \
            else np.arange(batch * 200, batch * 200 + 200, 2, dtype=np.int32)
        table.write_arrow(pa.table({"id": ids, "name": [f"name-{i % 300}-{batch}" for i in ids],
                                    "score": rng.integers(0, 10**6, 100) / 4}, schema))
    everything = table.to_arrow().to_pylist()
    snapshot = table.latest_snapshot()
    planned = lambda flt: sum(len(s.files) for s in table.plan(snapshot, flt))  # noqa: E731
    all_files = planned(None)
    for column in ("id", "name", "score"):
        for row in random.Random(6).sample(everything, 5):
            got = table.to_arrow(filter=[(column, "=", row[column])]).to_pylist()
            assert sorted(r["id"] for r in got) == sorted(r["id"] for r in everything if r[column] == row[column])
    ids = {r["id"] for r in everything}
    absent = {"id": next(i for i in range(min(ids), max(ids)) if i not in ids),  # inside the min/max range
              "name": "name-150-9", "score": 12345.3}
    for column, value in absent.items():
        skipped = planned([(column, "=", value)]) < all_files
        assert skipped == (kind != "merge-on-read" or column == "id"), (column, skipped)
        assert table.to_arrow(filter=[(column, "=", value)]).num_rows == 0
    # a disjunct the index cannot answer keeps every file
    assert planned([[("name", "=", "name-150-9")], [("score", ">", -1.0)]]) == all_files
    table.update_schema().set_option("file-index.read.enabled", "false").commit()
    table = ps.Table.open(table.path)
    assert sum(len(s.files) for s in table.plan(table.latest_snapshot(), [("name", "=", "name-150-9")])) == all_files


def test_indexes_follow_renames_and_ignore_retyped_columns(tmp_path):
    """An index names a column as its file's schema did: a renamed column still skips old files,
    a widened one (INT -> BIGINT hashes alike, FLOAT -> DOUBLE would not) no longer uses them."""
    schema = pa.schema([("id", pa.int32(), False), ("v", pa.float32()), ("s", pa.string())])
    table = ps.Catalog(str(tmp_path)).create_table(
        "db.t", schema, primary_keys=["id"],
        options={"bucket": "1", "deletion-vectors.enabled": "true", "file-index.bloom-filter.columns": "v,s",
                 "file-index.bloom-filter.v.items": "50", "file-index.bloom-filter.s.items": "50"})
    table.write_arrow(pa.table({"id": pa.array([1, 2], pa.int32()), "v": pa.array([1.5, 2.5], pa.float32()),
                                "s": ["a", "b"]}, schema))
    update = table.update_schema().rename_column("s", "t").update_column("v", pa.float64())
    update.set_option("file-index.bloom-filter.columns", "v,t").remove_option("file-index.bloom-filter.s.items")
    update.set_option("file-index.bloom-filter.t.items", "50").commit()
    table = ps.Table.open(table.path)
    snapshot = table.latest_snapshot()
    planned = lambda flt: sum(len(s.files) for s in table.plan(snapshot, flt))  # noqa: E731
    assert planned([("t", "=", "zzz")]) == 0 and planned([("t", "=", "b")]) == 1
    # the file's filter hashed floats, the column now holds doubles: their hashes would miss it
    assert planned([("v", "=", 2.5)]) == 1 and planned([("v", "=", 2.0)]) == 1
    assert table.to_arrow(filter=[("t", "=", "b")]).column("id").to_pylist() == [2]


def test_xxh64_is_the_xxhash_packages():
    """Every length around the algorithm's 32-, 8-, 4- and 1-byte steps, sliced arrays, strings
    and large binaries: the same 64 bits as the reference implementation."""
    rng = random.Random(7)
    values = [rng.randbytes(n) for n in list(range(0, 80)) + [rng.randrange(80, 3000) for _ in range(300)]]
    rng.shuffle(values)
    want = np.array([xxhash.xxh64_intdigest(v) for v in values], np.uint64)
    for array in (pa.array(values, pa.binary()), pa.array(values, pa.large_binary())):
        assert (xxh64(array) == want).all()
        assert (xxh64(array.slice(17, 200)) == want[17:217]).all()
    text = ["", "a", "é€😀" * 20, "paimon"]
    assert (xxh64(pa.array(text)) == [xxhash.xxh64_intdigest(t.encode()) for t in text]).all()
    assert xxh64(pa.array([], pa.string())).size == 0


def _java_long_hash(key: int) -> int:
    """Thomas Wang's hash as Java's FastHash writes it, on Python ints wrapped to 64 bits."""
    def wrap(x: int) -> int:
        x &= (1 << 64) - 1
        return x - (1 << 64) if x >> 63 else x
    key = wrap(~key + (key << 21))
    key = wrap(key ^ (key >> 24))
    key = wrap(key + (key << 3) + (key << 8))
    key = wrap(key ^ (key >> 14))
    key = wrap(key + (key << 2) + (key << 4))
    key = wrap(key ^ (key >> 28))
    return wrap(key + (key << 31))


def test_integer_hash_is_javas():
    keys = [0, 1, -1, 2**31 - 1, -2**31, 2**63 - 1, -2**63] + [random.Random(8).randrange(-2**63, 2**63) for _ in range(200)]
    assert thomas_wang(np.array(keys, np.int64)).tolist() == [_java_long_hash(k) for k in keys]


def test_bloom_filter_sizes_as_javas_and_never_forgets_a_value():
    bloom = BloomFilter64.sized(1_000_000, 0.1)  # Java's defaults: 4,792,536 bits, 3 probes
    assert (bloom.num_bits, bloom.probes) == (4_792_536, 3)
    bloom = BloomFilter64.sized(100, 0.01)
    hashes = thomas_wang(np.arange(100, dtype=np.int64))
    bloom.add(hashes)
    assert bloom.may_contain(hashes).all()
    again = BloomFilter64.from_bytes(bloom.to_bytes())
    assert again.may_contain(hashes).all()
    assert again.may_contain(thomas_wang(np.arange(1000, 11000, dtype=np.int64))).mean() < 0.05


@pytest.mark.parametrize("own_name", [None, "data-1.parquet.index"])
def test_every_damaged_byte_of_our_index_is_caught(own_name):
    """A flipped byte anywhere in an index we wrote (embedded, or a `.index` file naming
    itself) is a CorruptFileError, except in the mark of our check, which makes it read as
    Java's (unchecked) with the same, intact indexes."""
    bloom = BloomFilter64.sized(20, 0.1)
    bloom.add(thomas_wang(np.arange(20, dtype=np.int64)))
    indexes = {"col": {"bloom-filter": bloom.to_bytes()}, "naïve": {"bloom-filter": bloom.to_bytes()}}
    data = file_index.encode(indexes, own_name)
    assert file_index.decode(data, "x", own_name) == indexes
    for i in range(len(data)):
        damaged = bytearray(data)
        damaged[i] ^= 0x10
        try:
            assert file_index.decode(bytes(damaged), "x", own_name) == indexes, i
        except CorruptFileError as exc:
            assert "file index x is damaged" in str(exc)


@pytest.mark.parametrize("kind, problem", [("bitmap", "past the file's 40 rows"),
                                           ("range-bitmap", "marks a row without a value")])
def test_a_damaged_index_without_our_check_is_found_by_check(tmp_path, kind, problem):
    """Java's index files carry no checksum: `check` decodes every bitmap, so a damaged one in
    such a file (our check mark removed, as Java writes them) is reported, naming the file."""
    table = ps.Catalog(str(tmp_path)).create_table(
        "db.t", pa.schema([("id", pa.int64(), False), ("s", pa.string())]), primary_keys=["id"],
        options={"bucket": "1", "deletion-vectors.enabled": "true", f"file-index.{kind}.columns": "s",
                 "file-index.in-manifest-threshold": "1 b"})
    table.write_arrow(pa.table({"id": list(range(40)), "s": [f"v{i % 3}" for i in range(40)]}))
    (index_path,) = _index_files(table.path)
    with open(index_path, "rb") as f:
        indexes = file_index.decode(f.read(), index_path)
    data = bytearray(indexes["s"][kind])
    data[-2:] = b"\xff\x7f"  # the last bitmap's last row: past the file's rows
    unchecked = file_index.encode({"s": {kind: bytes(data)}}).replace(b"PSC1", b"JAVA")  # as Java's
    with open(index_path, "wb") as f:
        f.write(unchecked)
    clear_all()
    report = check_table(ps.Table.open(table.path))
    problems = {(p.kind, os.path.basename(index_path)[:-len(".index")] in p.message, problem in p.message)
                for p in report.errors()}
    assert problems == {("corrupt-file", True, True)}


def test_a_missing_index_file_is_an_error_naming_it(tmp_path):
    table = ps.Catalog(str(tmp_path)).create_table(
        "db.t", pa.schema([("id", pa.int64(), False), ("s", pa.string())]), primary_keys=["id"],
        options={"bucket": "1", "deletion-vectors.enabled": "true", "file-index.bloom-filter.columns": "s"})
    table.write_arrow(pa.table({"id": [1, 2], "s": ["a", "b"]}))
    (index_path,) = _index_files(table.path)
    os.remove(index_path)
    clear_all()
    assert table.to_arrow().num_rows == 2  # unfiltered reads do not need it
    with pytest.raises(MissingFileError, match=os.path.basename(index_path)):
        table.to_arrow(filter=[("s", "=", "a")])


@pytest.mark.parametrize("options, message", [
    ({"file-index.bloom-filter.columns": "nope"}, "'nope', which is not a column"),
    ({"file-index.bloom-filter.columns": "flag"}, "'flag' of type BOOLEAN"),
    ({"file-index.bloom-filter.columns": "price"}, "'price' of type DECIMAL"),
    ({"file-index.bloom-filter.columns": "s,"}, "names an empty column"),
    ({"file-index.bloom-filter.columns": "s", "file-index.bloom-filter.id.fpp": "0.1"},
     "is for column 'id', which 'file-index.bloom-filter.columns' does not name"),
    ({"file-index.bloom-filter.columns": "s", "file-index.bloom-filter.s.fpp": "2"}, "between 0 and 1"),
    ({"file-index.bloom-filter.columns": "s", "file-index.bloom-filter.s.items": "-5"}, "positive number"),
    ({"file-index.in-manifest-threshold": "lots"}, "file-index.in-manifest-threshold"),
    ({"file-index.bloom-filter.columns": "s", "file-index.bloom-filter.s.fpp": "low"}, "between 0 and 1"),
    ({"file-index.bloom-filter.columns": "s", "file-index.bloom-filter.s.items": "lots"}, "positive number"),
])
def test_options_javas_writers_reject_are_refused_at_create(tmp_path, options, message):
    schema = pa.schema([("id", pa.int64(), False), ("s", pa.string()), ("flag", pa.bool_()),
                        ("price", pa.decimal128(10, 2)), ("tags", pa.map_(pa.string(), pa.string()))])
    with pytest.raises(InvalidOptionError, match=message.replace("[", r"\[")):
        ps.Catalog(str(tmp_path)).create_table("db.t", schema, primary_keys=["id"], options=options)


def test_expired_files_take_their_indexes_with_them(tmp_path):
    """Compaction rewrites files; expiring the snapshots that used the old ones deletes their
    `.index` files too, and the table checks clean."""
    table = ps.Catalog(str(tmp_path)).create_table(
        "db.t", pa.schema([("id", pa.int64(), False), ("s", pa.string())]), primary_keys=["id"],
        options={"bucket": "1", "deletion-vectors.enabled": "true", "file-index.bloom-filter.columns": "s",
                 "snapshot.num-retained.min": "1", "snapshot.num-retained.max": "1"})
    for i in range(8):
        table.write_arrow(pa.table({"id": [i, i + 1], "s": [f"v{i}", f"w{i}"]}))
    table.compact(full=True)
    table.expire_snapshots()
    live = {f.file_name for s in table.plan(table.latest_snapshot()) for f in s.files}
    assert {os.path.basename(p)[:-len(".index")] for p in _index_files(table.path)} == live
    assert check_table(table).ok
    (index_path,) = _index_files(table.path)
    with open(index_path, "r+b") as f:  # a damaged filter: the table check names it
        f.seek(-3, os.SEEK_END)
        f.write(b"\xff\xff\xff")
    clear_all()
    report = check_table(ps.Table.open(table.path))
    assert [(p.kind, "checksum mismatch" in p.message) for p in report.errors()] == [("corrupt-file", True)]
    with pytest.raises(CorruptFileError, match="checksum mismatch"):
        ps.Table.open(table.path).to_arrow(filter=[("s", "=", "v1")])


@pytest.mark.parametrize("index", ["bloom-filter", "bitmap", "bsi", "range-bitmap"])
def test_edge_values_never_skip_a_file_they_match(tmp_path, index):
    """One file per row, so any wrong skip loses the row: float zeros of either sign (equal in
    SQL, not in their bits), NaN, infinities, empty strings and bytes, integer extremes, nulls,
    each looked up with `=` and `in`; every answer is the unfiltered read's rows that match."""
    schema = pa.schema([("k", pa.int64(), False), ("f", pa.float32()), ("d", pa.float64()), ("s", pa.string()),
                        ("b", pa.binary()), ("i", pa.int64())])
    # the types each indexes
    columns = {"bloom-filter": "fdsbi", "bitmap": "fdsi", "bsi": "i", "range-bitmap": "fdsi"}[index]
    table = ps.Catalog(str(tmp_path)).create_table(
        "db.t", schema, options={"bucket": "1", "bucket-key": "k", "write-only": "true",
                                 f"file-index.{index}.columns": ",".join(columns),
                                 **{f"file-index.bloom-filter.{c}.items": "10" for c in columns
                                    if index == "bloom-filter"}})
    values = {"f": [0.0, -0.0, float("nan"), float("inf"), 1.5, None], "d": [-0.0, 0.0, float("-inf"), 2.5, None, 1e300],
              "s": ["", "a", "é", None, "x" * 100, " "], "b": [b"", b"\x00", b"\xff" * 33, None, b"a", b"b"],
              "i": [-2**63, 2**63 - 1, 0, -1, None, 7]}
    for k in range(6):
        table.write_arrow(pa.table({"k": [k], **{c: [v[k]] for c, v in values.items()}}, schema))
    everything = table.to_arrow().to_pylist()
    assert len({f.file_name for s in table.plan(table.latest_snapshot()) for f in s.files}) == 6

    def same(a, b) -> bool:
        return a is not None and b is not None and a == b  # SQL's =: -0.0 = 0.0, NaN = nothing

    for column, column_values in values.items():
        for value in column_values:
            if value is None:
                continue
            want = sorted(r["k"] for r in everything if same(r[column], value))
            assert sorted(r["k"] for r in table.to_arrow(filter=[(column, "=", value)]).to_pylist()) == want, \
                (column, value)
        present = [v for v in column_values if v is not None]
        want = sorted(r["k"] for r in everything if any(same(r[column], v) for v in present))  # IN is ORed =
        assert sorted(r["k"] for r in table.to_arrow(filter=[(column, "in", present)]).to_pylist()) == want


def test_map_value_indexes_are_not_written_and_the_rest_is(tmp_path):
    """A table (Java's, say) asking for a bloom filter of a map's values by key: written here
    without that one (Java reads such files whole), with the others."""
    schema = pa.schema([("id", pa.int64(), False), ("s", pa.string()), ("tags", pa.map_(pa.string(), pa.string()))])
    table = ps.Catalog(str(tmp_path)).create_table(
        "db.t", schema, primary_keys=["id"],
        options={"bucket": "1", "deletion-vectors.enabled": "true", "file-index.in-manifest-threshold": "1 mb",
                 "file-index.bloom-filter.columns": "s,tags[color]", "file-index.bloom-filter.s.items": "10",
                 "file-index.bloom-filter.tags[color].items": "10"})
    table.write_arrow(pa.table({"id": [1], "s": ["a"], "tags": [[("color", "red")]]}, schema))
    (f,) = [f for s in table.plan(table.latest_snapshot()) for f in s.files]
    assert list(file_index.decode(f.embedded_index, "x")) == ["s"]
    assert table.to_arrow(filter=[("s", "=", "b")]).num_rows == 0


def test_a_filter_on_a_column_the_scanned_schema_lacks_keeps_the_files(tmp_path):
    """A fallback branch's scan plans with the main branch's filter: a column it does not have
    rules nothing out (and is no error)."""
    from paimon_streaming.predicate import parse_filter
    from paimon_streaming.scan import TableScan
    table = ps.Catalog(str(tmp_path)).create_table(
        "db.t", pa.schema([("id", pa.int64(), False), ("s", pa.string())]), primary_keys=["id"],
        options={"bucket": "1", "deletion-vectors.enabled": "true", "file-index.bloom-filter.columns": "s"})
    table.write_arrow(pa.table({"id": [1], "s": ["a"]}))
    wider = pa.schema([("id", pa.int64(), False), ("s", pa.string()), ("extra", pa.string())])
    flt = parse_filter([[("extra", "=", "x")], [("s", "=", "zzz")]], wider)
    scan = TableScan(table.file_io, table.path, table.schema, table.branch)
    assert sum(len(s.files) for s in scan.plan(table.latest_snapshot(), flt)) == 1


def test_column_names_beyond_ascii_in_index_heads_as_javas(java, tmp_path):
    """An index file's head names its columns in Java's modified UTF-8 (three bytes a unit from
    U+0800, a surrogate pair as two units): Java reads the heads we write, we read Java's, and
    both skip and keep files by them."""
    path = str(tmp_path / "db.db" / "names")
    columns = ["名字", "a😀"]
    options = {"bucket": "-1", "file-index.bloom-filter.columns": ",".join(columns),
               "file-index.in-manifest-threshold": "1 b"}  # an append table: value filters skip files
    java.create_table(path, [{"name": "id", "type": "INT NOT NULL"}, {"name": columns[0], "type": "STRING"},
                             {"name": columns[1], "type": "INT"}], options=options)
    with java.batch() as b:
        b.write(path, [{"id": i, columns[0]: f"j{i}", columns[1]: i} for i in range(5)])
    table = ps.Table.open(path)
    table.write_arrow(pa.table({"id": pa.array(range(5, 10), pa.int32()), columns[0]: [f"o{i}" for i in range(5, 10)],
                                columns[1]: pa.array(range(5, 10), pa.int32())}, schema=table.arrow_schema()))
    heads = []
    for index_path in sorted(_index_files(path)):
        with open(index_path, "rb") as f:
            heads.append(sorted(file_index.decode(f.read(), index_path)))
    assert heads == [sorted(columns)] * 2  # Java's file and ours
    for column, value, want in [(columns[0], "j3", [3]), (columns[0], "o7", [7]), (columns[1], 8, [8]),
                                (columns[1], 2, [2])]:
        assert set(want) <= {r["id"] for r in java.read(path, equal=(column, value))}, (column, value)
        assert table.to_arrow(filter=[(column, "=", value)]).column("id").to_pylist() == want, (column, value)
    for absent in ("j35", "o55"):  # within each file's min..max: only the bloom filters skip them
        assert java.read(path, equal=(columns[0], absent)) == []
        assert table.plan(table.latest_snapshot(), filter=[(columns[0], "=", absent)]) == []


def _small_indexes() -> list[tuple[str, str, bytes]]:
    """(kind, Paimon type, index bytes) of a few rows with repeats and a null, of every kind."""
    from paimon_streaming import bitmap_index, bsi_index, range_bitmap_index
    from paimon_streaming.types import parse_atomic
    ints = pa.array([5, -3, None, 5, 70000, -3, 2**40], pa.int64())
    strings = pa.array(["b", "a", None, "b", "ccc", "a", "d"])
    bloom = BloomFilter64.sized(10, 0.1)
    bloom.add(thomas_wang(np.arange(10, dtype=np.int64)))
    big, text = parse_atomic("BIGINT"), parse_atomic("STRING")
    return [("bitmap", "BIGINT", bitmap_index.build(ints, big)),
            ("bitmap", "STRING", bitmap_index.build(strings, text, bitmap_index.VERSION_1)),
            ("bitmap", "STRING", bitmap_index.build(strings, text, bitmap_index.VERSION_2, 24)),
            ("bsi", "BIGINT", bsi_index.build(ints, big)),
            ("range-bitmap", "BIGINT", range_bitmap_index.build(ints, big, 16)),
            ("range-bitmap", "STRING", range_bitmap_index.build(strings, text, 16)),
            ("bloom-filter", "BIGINT", bloom.to_bytes())]


@pytest.mark.parametrize("case", range(7))
def test_every_damaged_byte_of_an_unchecked_index_is_caught_or_harmless(case):
    """Java's index files carry no checksum: each byte of each kind of index, damaged (three
    ways), or the index cut short, is read by `check`'s verification and by a filtered read's
    pruning either as an index (a change no structural rule sees) or as a CorruptFileError
    naming the file and column; never another exception (before, pyroaring's IndexError, a
    dictionary cut short and a damaged container count allocating without end escaped)."""
    from paimon_streaming.predicate import parse_filter
    from paimon_streaming.types import DataField, parse_atomic
    kind, type_name, data = _small_indexes()[case]
    fields = {"c": DataField(0, "c", parse_atomic(type_name))}
    schema = pa.schema([("c", pa.int64() if type_name == "BIGINT" else pa.string())])
    values = [5, 6, 2**40] if type_name == "BIGINT" else ["b", "bb", "zz"]
    filters = [parse_filter([("c", op, v)], schema) for v in values for op in ("=", "<", ">=")]
    file_index.verify({"c": {kind: data}}, "data-1.parquet", fields)
    damaged = [data[:i] + bytes([data[i] ^ flip]) + data[i + 1:] for i in range(len(data)) for flip in (1, 0x80, 0xFF)]
    caught = 0
    for d in damaged + [data[:cut] for cut in range(len(data))]:
        for check in [lambda: file_index.verify({"c": {kind: d}}, "data-1.parquet", fields)] + \
                [lambda f=f: file_index.may_match({"c": {kind: d}}, f, fields, "data-1.parquet") for f in filters]:
            try:
                check()
            except CorruptFileError as exc:
                assert "data-1.parquet is damaged: column 'c'," in str(exc)
                caught += 1
    assert caught > len(data)


@pytest.mark.parametrize("kind", ["bloom-filter", "bitmap", "range-bitmap"])
def test_an_orc_files_char_index_prunes_nothing(tmp_path, kind):
    """ORC pads CHAR(n) values, and so the values a file index holds ('x  '), while reads trim
    them: `c = 'x'` ruled out the files holding 'x' (Spark and Flink write CHAR padded)."""
    from paimon_streaming.fileio import FileIO
    from paimon_streaming.schema import SchemaManager, TableSchema
    from paimon_streaming.types import DataField, max_field_id
    fields = (DataField.from_json({"id": 0, "name": "id", "type": "INT"}),
              DataField.from_json({"id": 1, "name": "c", "type": "CHAR(5)"}))
    path = str(tmp_path / "ch")
    SchemaManager(*FileIO.for_path(path)).create(TableSchema(
        0, fields, max_field_id(fields), (), (), {"file.format": "orc", f"file-index.{kind}.columns": "c"}, None, 0))
    t = ps.Table.open(path)
    t.write_arrow(pa.table({"id": pa.array([1, 2], pa.int32()), "c": ["x  ", "ab"]}))
    assert t.to_arrow().to_pylist() == [{"id": 1, "c": "x"}, {"id": 2, "c": "ab"}]
    assert t.to_arrow(filter=[("c", "=", "x")]).to_pylist() == [{"id": 1, "c": "x"}]
    assert t.to_arrow(filter=[("c", "in", ["ab", "zz"])]).to_pylist() == [{"id": 2, "c": "ab"}]
