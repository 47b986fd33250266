"""Input that must be refused, not reinterpreted (issue 17, part 4): reserved system column
names, bucket counts beyond Paimon's limit, option keys one edit from Paimon's, and option
values Java cannot parse."""
from __future__ import annotations

import datetime
import os
import re

import numpy as np
import pyarrow as pa
import pytest

from conftest import pypaimon_read, rows_by
from paimon_streaming.bucket import fixed_buckets
from paimon_streaming.catalog import create_table_at
from paimon_streaming.errors import InvalidOptionError, SchemaMismatchError
from paimon_streaming.option_keys import PAIMON_OPTION_KEYS
from paimon_streaming.options import misspelled_key
from paimon_streaming.system_fields import SYSTEM_FIELD_NAMES
from paimon_streaming.types import DataType

KV = pa.schema([pa.field("k", pa.int64(), False), ("v", pa.string())])
RESERVED = sorted(SYSTEM_FIELD_NAMES) + ["_KEY_k"]


# ---- reserved column names ---------------------------------------------------------------
@pytest.mark.parametrize("name", RESERVED)
def test_create_table_refuses_system_column_names(catalog, name):
    schema = KV.append(pa.field(name, pa.int8()))
    with pytest.raises(SchemaMismatchError, match=f"'{name}'.*reserved"):
        catalog.create_table("db.t", schema, primary_keys=["k"], options={"bucket": "1"})
    assert not catalog.table_exists("db.t")


@pytest.mark.parametrize("dv", [False, True])
@pytest.mark.parametrize("name", RESERVED)
def test_system_named_input_column_is_refused_and_nothing_is_written(catalog, name, dv):
    """The issue's reproduction: a `_VALUE_KIND` input column used to turn rows into deletes."""
    t = catalog.create_table("db.t", KV, primary_keys=["k"],
                             options={"bucket": "1", "deletion-vectors.enabled": str(dv).lower()})
    t.write_arrow(pa.table({"k": [1, 2, 3], "v": ["a", "b", "c"]}))
    before = t.latest_snapshot().id, _files(t.path)
    batch = pa.table({"k": [1, 2, 3], "v": ["x", "y", "z"], name: pa.array([3, 3, 3], pa.int8())})
    with pytest.raises(SchemaMismatchError, match=f"'{name}'.*reserved.*row_kind_column"):
        t.write_arrow(batch)
    with pytest.raises(SchemaMismatchError, match=f"'{name}'"):
        t.write_messages(batch)
    assert (t.latest_snapshot().id, _files(t.path)) == before, "a refused batch must leave nothing behind"
    assert rows_by(t.to_arrow(), "k") == [{"k": 1, "v": "a"}, {"k": 2, "v": "b"}, {"k": 3, "v": "c"}]


def _files(path: str) -> set[str]:
    return {os.path.join(d, f) for d, _, fs in os.walk(path) for f in fs}


def test_row_kinds_come_from_the_named_column_even_with_a_system_name(catalog):
    """Streaming an audit log (its `rowkind` column) into a table is explicit, so allowed."""
    t = catalog.create_table("db.t", KV, primary_keys=["k"], options={"bucket": "1"})
    t.write_arrow(pa.table({"k": [1, 2, 3], "v": ["a", "b", "c"]}))
    t.write_arrow(pa.table({"k": [1, 2], "v": ["x", None], "rowkind": ["+U", "-D"]}), row_kind_column="rowkind")
    t.write_arrow(pa.table({"k": [3], "v": [None], "_VALUE_KIND": pa.array([3], pa.int8())}),
                  row_kind_column="_VALUE_KIND")
    assert rows_by(t.to_arrow(), "k") == [{"k": 1, "v": "x"}]


def test_append_table_refuses_system_named_columns_too(catalog):
    t = catalog.create_table("db.a", KV, options={"bucket": "-1"})
    with pytest.raises(SchemaMismatchError, match="'_SEQUENCE_NUMBER'"):
        t.write_arrow(pa.table({"k": [1], "v": ["a"], "_SEQUENCE_NUMBER": [5]}))
    assert t.latest_snapshot() is None


# ---- bucket counts -------------------------------------------------------------------------
@pytest.mark.parametrize("bucket", [str(2**31), "99999999999", "-3", "0"])
def test_create_table_refuses_bucket_counts_paimon_cannot_hold(catalog, bucket):
    with pytest.raises(InvalidOptionError, match="bucket"):
        catalog.create_table("db.t", KV, primary_keys=["k"], options={"bucket": bucket})
    assert not catalog.table_exists("db.t")


@pytest.mark.parametrize("bucket", [16777216, 2**31 - 1])
def test_huge_bucket_counts_write_each_row_to_its_bucket(catalog, warehouse, bucket):
    """Bucket ids above 2^20 once overflowed the (partition, bucket) group id: 16777216 raised
    IndexError, 1.5M put rows into another partition's directory."""
    schema = pa.schema([pa.field("dt", pa.string(), False), pa.field("k", pa.int64(), False), ("v", pa.string())])
    t = catalog.create_table("db.t", schema, primary_keys=["dt", "k"], partition_keys=["dt"],
                             options={"bucket": str(bucket)})
    keys = np.arange(40, dtype=np.int64) * 7919
    data = pa.table({"dt": ["d1", "d2"] * 20, "k": keys, "v": [f"v{i}" for i in range(40)]})
    t.write_arrow(data)
    expected = fixed_buckets(data, ["k"], [DataType("BIGINT", False)], bucket)
    assert expected.max() >= 1 << 20, "the keys must reach buckets beyond the old 20-bit limit"
    on_disk = {(d.split("/")[-2], d.split("/")[-1]) for d, _, fs in os.walk(t.path) if "bucket-" in d and fs}
    assert on_disk == {(f"dt={dt}", f"bucket-{b}") for dt, b in zip(data.column("dt").to_pylist(), expected.tolist())}
    assert rows_by(t.to_arrow(), "dt", "k") == rows_by(data, "dt", "k")
    assert rows_by(pypaimon_read(warehouse, "db.t"), "dt", "k") == rows_by(data, "dt", "k")


# ---- option keys ---------------------------------------------------------------------------
@pytest.mark.parametrize("key,meant", [("buckets", "bucket"), ("bucket ", "bucket"), ("Bucket", "bucket"),
                                       ("merge_engine", "merge-engine"),
                                       ("deletion-vectors.enable", "deletion-vectors.enabled"),
                                       ("changelog-prodcuer", "changelog-producer")])
def test_option_key_one_edit_from_a_paimon_key_is_refused_with_a_suggestion(catalog, key, meant):
    with pytest.raises(InvalidOptionError, match=f"{key!r}: did you mean {meant!r}"):
        catalog.create_table("db.t", KV, primary_keys=["k"], options={"bucket": "1", key: "4"})
    assert not catalog.table_exists("db.t")


def test_custom_and_real_option_keys_are_kept(catalog):
    custom = {"owner": "team-a", "my.pipeline.id": "42", "fields.v.aggregate-function": "max",
              "sink.parallelism": "2", "tpye": "x"}
    t = catalog.create_table("db.t", KV, primary_keys=["k"], options={"bucket": "1", **custom})
    assert {k: t.schema.options[k] for k in custom} == custom
    refused = sorted(k for k in PAIMON_OPTION_KEYS if misspelled_key(k) is not None)
    assert refused == [], f"real Paimon option keys taken for typos: {refused}"
    assert len(PAIMON_OPTION_KEYS) > 300 and {"bucket", "merge-engine", "rowkind.field"} <= PAIMON_OPTION_KEYS


def test_create_table_at_refuses_a_misspelled_key_before_any_file(warehouse):
    with pytest.raises(InvalidOptionError, match="'buckets'"):
        create_table_at(f"{warehouse}/db.db/x", KV, primary_keys=["k"], options={"buckets": "4"})
    assert not os.path.exists(f"{warehouse}/db.db/x/schema")


# ---- option values: parsed as Java parses them ------------------------------------------------
# Java (OptionsUtils, MemorySize, TimeUtils) refuses these: a table we created with one could not
# be opened by Java (Integer.parseInt neither trims nor takes '_'; enums and booleans are
# compared whole, in any case).
JAVA_REFUSES = [("bucket", " 2"), ("bucket", "1_0"), ("bucket", "2 "), ("merge-engine", "first-row "),
                ("deletion-vectors.enabled", "true "), ("changelog-producer", " input"), ("file.format", " orc"),
                ("partition.default-name", ""), ("target-file-size", "\u0661 mb"), ("snapshot.time-retained", "+2 h"),
                ("num-sorted-run.compaction-trigger", " 3"), ("file.compression", " zstd"),
                ("manifest.compression", " zstd"), ("compaction.delete-ratio-threshold", "0_5"),
                ("metadata.stats-mode", "truncate(16)\n"), ("row-tracking.enabled", "true "),
                ("write-buffer-size", "1_000"), ("commit.force-compact", "yes"),
                ("manifest.compression", "Snappy"), ("partition.expiration-strategy", "VALUES-TIME"),
                ("manifest.format", "orc ")]
# ...and takes these, as we do
JAVA_TAKES = [("bucket", "+2"), ("bucket", "02"), ("merge-engine", "FIRST-ROW"), ("deletion-vectors.enabled", "TRUE"),
              ("file.format", "ORC"), ("partition.default-name", "  "), ("target-file-size", " 1 mb "),
              ("target-file-size", "1 mebibytes"), ("snapshot.time-retained", " 2 H "), ("file.compression", "ZSTD"),
              ("compaction.delete-ratio-threshold", "0.5d"), ("file.format.per.level", "0: orc , 1:parquet"),
              ("manifest.compression", "Zstd"), ("manifest.compression", "snappy"), ("manifest.format", "Parquet"),
              ("manifest.format", "ORC")]


def _table_options(key: str, value: str) -> dict[str, str]:
    return {key: value} if key == "bucket" else {"bucket": "2", key: value}


@pytest.mark.parametrize("key,value", JAVA_REFUSES)
def test_option_values_java_cannot_parse_are_refused_naming_option_and_value(catalog, key, value):
    with pytest.raises(InvalidOptionError, match=f"{re.escape(repr(value))} for table option '{re.escape(key)}'"):
        catalog.create_table("db.t", KV, primary_keys=["k"], options=_table_options(key, value))
    assert not catalog.table_exists("db.t")
    t = catalog.create_table("db.t", KV, primary_keys=["k"], options={"bucket": "2"})
    with pytest.raises(InvalidOptionError, match=f"table option '{re.escape(key)}'"):
        t.update_schema().set_option(key, value).commit()
    assert t.schema.id == 0


def test_option_values_java_parses_are_taken_and_java_reads_the_table(catalog):
    from java_oracle import get_oracle
    java = get_oracle()
    for i, (key, value) in enumerate(JAVA_TAKES):
        t = catalog.create_table(f"db.t{i}", KV, primary_keys=["k"], options=_table_options(key, value))
        t.write_arrow(pa.table({"k": [1, 1, 2], "v": ["a", "b", "c"]}, schema=KV))
        assert t.schema.options[key] == value
        ours = rows_by(t.to_arrow(), "k")
        assert sorted(java.read(t.path), key=lambda r: r["k"]) == ours and len(ours) == 2, (key, value)


@pytest.mark.parametrize("fmt", ["orc", "parquet"])
def test_avro_only_manifest_codecs_are_refused_for_orc_and_parquet_manifests(catalog, fmt):
    """Java's ORC and Parquet writers take no codec named 'null' or 'deflate': it would fail on
    every commit of the table."""
    with pytest.raises(InvalidOptionError, match=f"'manifest.compression' = 'deflate'.*'manifest.format' is '{fmt}'"):
        catalog.create_table("db.t", KV, primary_keys=["k"], options={"bucket": "1", "manifest.format": fmt,
                                                                      "manifest.compression": "deflate"})
    with pytest.raises(InvalidOptionError, match="'lz4' for table option 'manifest.compression'.* ORC and Parquet "
                                                 "manifests with zstd, none, snappy"):  # Java's, not written here
        catalog.create_table("db.t", KV, primary_keys=["k"], options={"bucket": "1", "manifest.format": fmt,
                                                                      "manifest.compression": "lz4"})
    t = catalog.create_table("db.t", KV, primary_keys=["k"], options={"bucket": "1", "manifest.compression": "null"})
    with pytest.raises(InvalidOptionError, match="'manifest.compression' = 'null'"):
        t.update_schema().set_option("manifest.format", fmt).commit()
    assert t.schema.id == 0


def test_nulls_in_not_null_elements_and_map_values_are_refused_naming_the_column(catalog):
    """Arrow's cast let them through and Parquet's writer failed without naming anything ("file
    metadata is only available after writer close"); nothing is committed."""
    schema = pa.schema([pa.field("id", pa.int64(), False), ("l", pa.list_(pa.field("element", pa.int32(), False))),
                        ("m", pa.map_(pa.string(), pa.field("value", pa.int32(), False)))])
    t = catalog.create_table("db.nn", schema, primary_keys=["id"], options={"bucket": "1"})
    ints, strings_to_ints = pa.list_(pa.int32()), pa.map_(pa.string(), pa.int32())
    with pytest.raises(SchemaMismatchError, match="column 'l' has a null element"):
        t.write_arrow(pa.table({"id": [1], "l": pa.array([[1, None]], ints), "m": pa.array([[("a", 1)]], strings_to_ints)}))
    with pytest.raises(SchemaMismatchError, match="column 'm' has a null value"):
        t.write_arrow(pa.table({"id": [1], "l": pa.array([[1]], ints), "m": pa.array([[("a", None)]], strings_to_ints)}))
    assert t.latest_snapshot() is None
    t.write_arrow(pa.table({"id": [1], "l": pa.array([[1], [None]], ints).slice(0, 1),
                            "m": pa.array([[("a", 2)]], strings_to_ints)}))
    assert t.to_arrow().to_pylist() == [{"id": 1, "l": [1], "m": [("a", 2)]}]


@pytest.mark.parametrize("fmt", ["parquet", "orc"])
def test_nulls_in_not_null_elements_of_the_tables_own_types_are_refused(catalog, fmt):
    """An Arrow array of the table's own type may hold a null in a field it declares NOT NULL
    (a list element, a map value, a MULTISET count): with no cast to catch it, Parquet's writer
    failed with "declared non-nullable but contains nulls" and ORC's stored the null. Refused
    naming the column now. A ROW of such a map missing from the input is null, not an error
    ("Struct child array does not match type field"); a sliced map's length check sees its own
    entries only."""
    schema = pa.schema([pa.field("id", pa.int64(), False), ("l", pa.list_(pa.field("element", pa.int32(), False))),
                        ("m", pa.map_(pa.string(), pa.field("value", pa.int32(), False)))])
    t = catalog.create_table("db.own", schema, primary_keys=["id"], options={"bucket": "1", "file.format": fmt})
    t.update_schema().add_column("r", "ROW<m MAP<VARCHAR(2), INT NOT NULL>>").commit()
    own = t.arrow_schema()
    for bad, message in (({"id": 1, "l": [1, None]}, "column 'l' has a null element"),
                         ({"id": 1, "m": [("a", None)]}, "column 'm' has a null value"),
                         ({"id": 1, "r": {"m": [("a", None)]}}, "column 'r.m' has a null value")):
        with pytest.raises(SchemaMismatchError, match=re.escape(message)):
            t.write_arrow(pa.Table.from_pylist([bad], schema=own))
    assert t.latest_snapshot() is None
    t.write_arrow(pa.table({"id": pa.array([1], pa.int64()), "l": pa.array([[1]], own.field("l").type)}))
    rows = pa.Table.from_pylist([{"id": 2, "r": {"m": [("abc", 1)]}}, {"id": 3, "r": {"m": [("ab", 1)]}}], schema=own)
    t.write_arrow(rows.slice(1))
    assert rows_by(t.to_arrow(), "id") == [{"id": 1, "l": [1], "m": None, "r": None},
                                           {"id": 3, "l": None, "m": None, "r": {"m": [("ab", 1)]}}]


def test_a_map_holding_a_key_twice_is_refused_naming_the_column(catalog):
    """Arrow's maps may hold a key twice; the write took it, and Java's read gave both entries
    back (Spark refuses such a map). Refused naming the column, nested ones too, with nothing
    committed; the entries of a null map, or under a null row, and keys of different maps are no
    duplicates."""
    t = catalog.create_table("db.maps", pa.schema([pa.field("id", pa.int64(), False)]), primary_keys=["id"],
                             options={"bucket": "1"})
    t.update_schema().add_column("m", "MAP<STRING, INT>").add_column("ms", "MULTISET<DOUBLE>") \
        .add_column("r", "ROW<a ARRAY<MAP<DATE, STRING>>>").commit()
    own = t.arrow_schema()
    day = datetime.date(2024, 1, 1)
    for bad, message in (({"id": 1, "m": [("a", 1), ("b", 2), ("a", 3)]}, "column 'm' has a map holding a key twice"),
                         ({"id": 1, "ms": [(1.5, 1), (1.5, 2)]}, "column 'ms' has a map holding a key twice"),
                         ({"id": 1, "r": {"a": [[], [(day, "x"), (day, "y")]]}},
                          "column 'r.a[]' has a map holding a key twice")):
        with pytest.raises(SchemaMismatchError, match=re.escape(message)):
            t.write_arrow(pa.Table.from_pylist([{"id": 0, "m": [("a", 1)]}, bad], schema=own))
    assert t.latest_snapshot() is None
    m = own.field("m").type   # a null map whose offsets span entries, keys repeated across maps
    hidden = pa.MapArray.from_arrays(pa.array([0, 2, 3]), pa.array(["a", "a", "a"]), pa.array([1, 2, 3], pa.int32()),
                                     mask=pa.array([True, False]))
    t.write_arrow(pa.table({"id": [1, 2], "m": hidden.cast(m)}))
    assert rows_by(t.to_arrow(columns=["id", "m"]), "id") == [{"id": 1, "m": None}, {"id": 2, "m": [("a", 3)]}]
    twice = pa.array([[(day, "x"), (day, "y")]], own.field("r").type.field("a").type.value_type)
    under_null = pa.StructArray.from_arrays([pa.ListArray.from_arrays(pa.array([0, 1]), twice)], names=["a"],
                                            mask=pa.array([True]))   # a null row hiding a repeated key
    t.write_arrow(pa.table({"id": [3], "r": under_null.cast(own.field("r").type)}))
    assert rows_by(t.to_arrow(columns=["id", "r"]), "id")[-1] == {"id": 3, "r": None}
