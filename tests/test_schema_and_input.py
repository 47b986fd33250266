"""Schema files, options validation, catalog operations and bad input handling."""
from __future__ import annotations

import datetime as dt
import json
import os
import re

import pyarrow as pa
import pytest

import paimon_streaming as ps
from paimon_streaming.errors import (InvalidOptionError, NullKeyError, SchemaMismatchError,
                                     TableAlreadyExistsError, TableNotFoundError)
from paimon_streaming.schema import TableSchema
from paimon_streaming.types import DataType, from_arrow, to_arrow
from paimon_streaming.json_check import CHECK_KEY


def test_schema_file_matches_java_serializer(catalog):
    schema = pa.schema([("id", pa.int64()), ("d", pa.decimal128(10, 2)),
                        ("arr", pa.list_(pa.field("element", pa.int32(), False))),
                        ("r", pa.struct([("x", pa.int32()), pa.field("y", pa.string(), False)])),
                        ("ltz", pa.timestamp("us", tz="UTC")), ("p", pa.string())])
    t = catalog.create_table("db.s", schema, primary_keys=["id", "p"], partition_keys=["p"],
                             options={"bucket": 2})
    obj = json.loads(open(f"{t.path}/schema/schema-0").read())
    assert list(obj) == ["version", "id", "fields", "highestFieldId", "partitionKeys", "primaryKeys",
                         "options", "timeMillis", CHECK_KEY]  # no "comment": Java would read null as "null"
    assert obj["version"] == 3
    assert obj["fields"][0] == {"id": 0, "name": "id", "type": "BIGINT NOT NULL"}
    assert obj["fields"][1]["type"] == "DECIMAL(10, 2)"
    assert obj["fields"][2]["type"] == {"type": "ARRAY", "element": "INT NOT NULL"}
    assert obj["fields"][3] == {"id": 3, "name": "r", "type": {"type": "ROW", "fields": [
        {"id": 4, "name": "x", "type": "INT"}, {"id": 5, "name": "y", "type": "STRING NOT NULL"}]}}
    assert obj["fields"][4] == {"id": 6, "name": "ltz", "type": "TIMESTAMP(6) WITH LOCAL TIME ZONE"}
    assert obj["fields"][5]["type"] == "STRING NOT NULL"  # PK columns become NOT NULL
    assert obj["highestFieldId"] == 7
    assert obj["options"] == {"bucket": "2"}


@pytest.mark.parametrize("text", ["INT", "BIGINT NOT NULL", "STRING", "BYTES", "DECIMAL(38, 10)", "CHAR(3)",
                                  "VARCHAR(20) NOT NULL", "BINARY(4)", "VARBINARY(9)", "DATE", "TIME(0)",
                                  "TIMESTAMP(3)", "TIMESTAMP(9) WITH LOCAL TIME ZONE", "BOOLEAN", "TINYINT",
                                  "SMALLINT", "FLOAT", "DOUBLE"])
def test_atomic_type_round_trip(text):
    assert DataType.from_json(text).to_json() == text


def test_type_aliases_parse():
    assert DataType.from_json("TIMESTAMP_LTZ(6)").to_json() == "TIMESTAMP(6) WITH LOCAL TIME ZONE"
    assert DataType.from_json("INTEGER NOT NULL").to_json() == "INT NOT NULL"
    assert DataType.from_json("VARCHAR(2147483647)").to_json() == "STRING"


def test_arrow_mapping_round_trip():
    for at in [pa.bool_(), pa.int8(), pa.int16(), pa.int32(), pa.int64(), pa.float32(), pa.float64(),
               pa.decimal128(20, 4), pa.string(), pa.binary(), pa.date32(), pa.time32("ms"),
               pa.timestamp("ms"), pa.timestamp("us"), pa.timestamp("ns"), pa.timestamp("us", tz="UTC"),
               pa.list_(pa.field("element", pa.int64())), pa.map_(pa.string(), pa.int32()),
               pa.struct([("a", pa.int32())])]:
        got = to_arrow(from_arrow(at))
        assert got.equals(at) or (pa.types.is_map(at) and pa.types.is_map(got)), at
    assert from_arrow(pa.binary(4)).to_json() == "BINARY(4)"
    assert from_arrow(pa.large_string()).to_json() == "STRING"


@pytest.mark.parametrize("options,match", [
    ({"bucket": "0"}, "bucket"), ({"bucket": "x"}, "bucket"), ({"file.format": "csv"}, "file.format"),
    ({"merge-engine": "newest"}, "merge-engine"), ({"deletion-vectors.enabled": "yes"}, "deletion-vectors"),
    ({"manifest.target-file-size": "big"}, "manifest.target-file-size"),
    ({"snapshot.time-retained": "2 fortnights"}, "snapshot.time-retained.*expected a duration such as 1 h"),
    ({"dynamic-bucket.max-buckets": "0"}, r"dynamic-bucket.max-buckets.*must be -1 \(no limit\)"),
    ({"tag.creation-period-duration": "0 s"}, "tag.creation-period-duration.*must be a positive duration"),
    ({"compaction.delete-ratio-threshold": "1.5"}, "compaction.delete-ratio-threshold.*between 0 and 1"),
])
def test_invalid_options_rejected(catalog, options, match):
    with pytest.raises(InvalidOptionError, match=match):
        catalog.create_table("db.bad", pa.schema([("id", pa.int64())]), primary_keys=["id"], options=options)
    assert not catalog.table_exists("db.bad")


def test_invalid_key_definitions(catalog):
    schema = pa.schema([("id", pa.int64()), ("p", pa.string())])
    with pytest.raises(SchemaMismatchError, match="nope"):
        catalog.create_table("db.k1", schema, primary_keys=["nope"])
    with pytest.raises(InvalidOptionError, match="partition"):
        catalog.create_table("db.k2", schema, primary_keys=["p"], partition_keys=["p"], options={"bucket": 2})
    with pytest.raises(InvalidOptionError, match="bucket-key"):
        catalog.create_table("db.k3", schema, options={"bucket": 2})


def test_catalog_operations(catalog, warehouse):
    schema = pa.schema([("id", pa.int64())])
    catalog.create_database("a")
    catalog.create_table("a.t1", schema)
    catalog.create_table("b.t2", schema)  # creates database b
    assert catalog.list_databases() == ["a", "b"]
    assert catalog.list_tables("a") == ["t1"]
    with pytest.raises(TableAlreadyExistsError):
        catalog.create_table("a.t1", schema)
    assert catalog.create_table("a.t1", schema, ignore_if_exists=True).path.endswith("a.db/t1")
    with pytest.raises(ValueError, match="not empty"):
        catalog.drop_database("a")
    catalog.drop_table("a.t1")
    with pytest.raises(TableNotFoundError):
        catalog.get_table("a.t1")
    catalog.drop_database("b", cascade=True)
    assert catalog.list_databases() == ["a"]
    for bad in ["a/b.t", "db.t/x", "db.", ".t", "db.t\n"]:
        with pytest.raises(ValueError):
            catalog.create_table(bad, schema)
    assert ps.Catalog("file://" + warehouse).list_tables("a") == []


def test_bad_input_fails_clearly_and_commits_nothing(catalog):
    t = catalog.create_table("db.in", pa.schema([("id", pa.int64()), ("v", pa.string()), ("n", pa.int32())]),
                             primary_keys=["id"], options={"bucket": "2"})
    t.write_arrow(pa.table({"id": [1], "v": ["a"], "n": [1]}))
    files_before = sorted(os.listdir(t.path))
    with pytest.raises(SchemaMismatchError, match="'extra'"):
        t.write_arrow(pa.table({"id": [2], "v": ["b"], "extra": [1]}))
    with pytest.raises(SchemaMismatchError, match="'v'"):
        t.write_arrow(pa.table({"id": [2], "v": [1.5]}))
    with pytest.raises(NullKeyError, match="'id'"):
        t.write_arrow(pa.table({"id": pa.array([2, None], pa.int64()), "v": ["b", "c"]}))
    with pytest.raises(SchemaMismatchError, match="'id'"):
        t.write_arrow(pa.table({"v": ["b"]}))
    assert t.latest_snapshot().id == 1
    assert sorted(os.listdir(t.path)) == files_before
    # missing nullable columns become nulls; narrower ints widen
    t.write_arrow(pa.table({"id": pa.array([3], pa.int32()), "v": ["c"]}))
    assert t.to_arrow(filter=[("id", "=", 3)]).to_pylist() == [{"id": 3, "v": "c", "n": None}]


def test_values_longer_than_char_varchar_and_binary_lengths_are_refused(catalog):
    """VARCHAR(3) stored 'abcdef' and VARBINARY(2) four bytes, silently: Spark's writers refuse
    them (EXCEED_LIMIT_LENGTH), and our own error for a value that does not fit names the
    column. Lengths count characters (bytes for binaries); shorter CHAR values are kept as given."""
    from paimon_streaming.types import DataField, DataType
    t = catalog.create_table("db.lengths", pa.schema([("id", pa.int64())]))
    with t.update_schema() as update:
        update.add_column("v", "VARCHAR(3)").add_column("ch", "CHAR(3)").add_column("vb", "VARBINARY(2)")
        update.add_column("r", DataType("ROW", fields=(DataField(-1, "s", DataType("VARCHAR", precision=2)),)))
    t.write_arrow(pa.table({"id": [1, 2], "v": ["abc", "é€x"], "ch": ["a", None], "vb": [b"ab", b""],
                            "r": [None, {"s": "ab"}]}))
    for column, value, error in (("v", ["abcd"], "'v' is VARCHAR(3): a value of 4 characters"),
                                 ("ch", ["abcd"], "'ch' is CHAR(3): a value of 4 characters"),
                                 ("vb", [b"abc"], "'vb' is VARBINARY(2): a value of 3 bytes"),
                                 ("r", [{"s": "abc"}], "'r.s' is VARCHAR(2): a value of 3 characters")):
        with pytest.raises(SchemaMismatchError, match=re.escape(error)):
            t.write_arrow(pa.table({"id": [3], column: value}))
    assert t.to_arrow().column("v").to_pylist() == ["abc", "é€x"] and t.latest_snapshot().id == 1


def test_strings_that_are_not_utf8_text_are_refused(catalog):
    """Arrow arrays built from buffers (and Spark's strings, which may hold any bytes) are not
    checked where they are made: such a STRING was written and its file did not read back."""
    t = catalog.create_table("db.utf8", pa.schema([("id", pa.int64()), ("v", pa.string()),
                                                   ("r", pa.struct([("s", pa.large_string())]))]))
    raw = pa.array([b"ok", b"\xff\xfe"], pa.binary())
    for column, bad in (("v", pa.Array.from_buffers(pa.string(), 2, raw.buffers())),
                        ("r", pa.StructArray.from_arrays([pa.Array.from_buffers(pa.large_string(), 2, raw.cast(
                            pa.large_binary()).buffers())], names=["s"]))):
        with pytest.raises(SchemaMismatchError, match=f"column '{column}(.s)?' holds a value that is not UTF-8 text"):
            t.write_arrow(pa.table({"id": [1, 2], column: bad}))
    assert t.latest_snapshot() is None


def test_a_missing_row_column_with_not_null_fields_is_written_as_nulls(catalog):
    """A ROW column whose type has NOT NULL fields, missing from the input (or given as Arrow
    nulls), failed in Parquet's writer ("file metadata is only available after writer close")."""
    schema = pa.schema([("id", pa.int64()), ("st", pa.struct([pa.field("a", pa.int32(), False), ("b", pa.string())])),
                        ("l", pa.list_(pa.field("e", pa.struct([pa.field("x", pa.int8(), False)]), False)))])
    t = catalog.create_table("db.missing", schema)
    t.write_arrow(pa.table({"id": [1, 2]}))
    t.write_arrow(pa.table({"id": [3], "st": pa.nulls(1), "l": pa.nulls(1)}))
    assert t.to_arrow().to_pylist() == [{"id": i, "st": None, "l": None} for i in (1, 2, 3)]


def test_table_schema_round_trip_json():
    s = TableSchema.create(pa.schema([("a", pa.int32()), ("b", pa.string())]), ["a"], None, {"bucket": "3"})
    assert TableSchema.from_json(s.to_json()) == s


def test_legacy_schema_defaults():
    legacy = json.dumps({"id": 0, "fields": [{"id": 0, "name": "a", "type": "INT"}], "highestFieldId": 0,
                         "partitionKeys": [], "primaryKeys": [], "options": {}})
    s = TableSchema.from_json(legacy)
    assert s.options["bucket"] == "1" and s.options["file.format"] == "orc"


def test_integer_overflow_names_column(catalog):
    t = catalog.create_table("db.o", pa.schema([("id", pa.int64()), ("small", pa.int8())]),
                             primary_keys=["id"], options={"bucket": "1"})
    with pytest.raises(SchemaMismatchError, match="'small'"):
        t.write_arrow(pa.table({"id": [1], "small": [1000]}))
    assert t.latest_snapshot() is None


def test_a_decimal_wider_than_its_precision_names_column(catalog):
    """Arrow lets a DECIMAL(10, 2) array hold 11 digits (pyarrow's JSON and CSV readers build
    such arrays); Parquet would store them and Java read them back as nulls. Refused, naming
    the column, also inside a ROW, and nothing is committed."""
    import io
    import pyarrow.json as pajson
    schema = pa.schema([pa.field("id", pa.int64(), False), ("d", pa.decimal128(10, 2)),
                        ("r", pa.struct([("x", pa.decimal128(4, 2))]))])
    t = catalog.create_table("db.dec", schema, primary_keys=["id"], options={"bucket": "1"})

    def parsed(text: bytes, fields=schema) -> pa.Table:
        return pajson.read_json(io.BytesIO(text), parse_options=pajson.ParseOptions(explicit_schema=fields))
    t.write_arrow(parsed(b'{"id": 1, "d": 99999999.99, "r": {"x": 99.99}}\n'))
    # 100.5 has 4 digits, 5 at scale 2: the readers check a number's own digits, not the rescaled ones
    wide_x = parsed(b'{"x": 100.5}\n', pa.schema([("x", pa.decimal128(4, 2))])).column("x").combine_chunks()
    nested = pa.table({"id": [3], "r": pa.StructArray.from_arrays([wide_x], names=["x"])})
    for bad, column in ((parsed(b'{"id": 2, "d": 123456789.5}\n'), "d"), (nested, "r")):
        with pytest.raises(SchemaMismatchError, match=f"column '{column}' holds a value that does not fit"):
            t.write_arrow(bad)
    assert t.to_arrow().column("id").to_pylist() == [1] and t.latest_snapshot().id == 1


def test_integers_written_to_time_columns_are_milliseconds_of_the_day(catalog):
    """Paimon keeps TIME as milliseconds of the day and Spark reads it as such an INT: an INT
    is taken as one (nested too), and one outside the day is refused naming the column."""
    schema = pa.schema([pa.field("id", pa.int64(), False), ("t", pa.time32("ms")),
                        ("ev", pa.struct([("at", pa.time32("ms"))]))])
    t = catalog.create_table("db.times", schema, primary_keys=["id"], options={"bucket": "1"})
    t.write_arrow(pa.table({"id": [1], "t": pa.array([45296789], pa.int32()),
                            "ev": pa.array([{"at": 1000}], pa.struct([("at", pa.int32())]))}))
    assert t.to_arrow().to_pylist() == [{"id": 1, "t": dt.time(12, 34, 56, 789000), "ev": {"at": dt.time(0, 0, 1)}}]
    for bad, column in (({"t": pa.array([-1], pa.int32())}, "t"),
                        ({"ev": pa.array([{"at": 86_400_000}], pa.struct([("at", pa.int32())]))}, "ev.at")):
        with pytest.raises(SchemaMismatchError, match=f"column '{column}' is a TIME: .* not (-1|86400000)"):
            t.write_arrow(pa.table({"id": [2], **bad}))
    with pytest.raises(SchemaMismatchError, match="column 't' has type BIGINT which cannot be written"):
        t.write_arrow(pa.table({"id": [2], "t": [5]}))


def test_dates_and_timestamps_outside_the_years_1_to_9999_are_refused_before_a_file_is_written(catalog):
    """Arrow holds days and microseconds far beyond year 9999 (an integer 20240105 cast to a
    DATE is a day in the year 57,000); the statistics of such a file failed with a bare
    OverflowError after the file was written, leaving it behind. Refused first, naming the
    column (nested too); the years' own edges are written and read back."""
    schema = pa.schema([("d", pa.date32()), ("ts", pa.timestamp("ms", tz="UTC")),
                        ("ev", pa.struct([("at", pa.list_(pa.timestamp("us")))]))])
    t = catalog.create_table("db.years", schema)
    edges = {"d": [dt.date(1, 1, 1), dt.date(9999, 12, 31)],
             "ts": [dt.datetime(1, 1, 1, tzinfo=dt.timezone.utc),
                    dt.datetime(9999, 12, 31, 23, 59, 59, 999000, tzinfo=dt.timezone.utc)],
             "ev": [{"at": [dt.datetime(1, 1, 1)]}, {"at": [dt.datetime(9999, 12, 31, 23, 59, 59, 999999)]}]}
    t.write_arrow(pa.table(edges, schema=schema))
    assert t.to_arrow().to_pydict() == edges
    files_before = sorted(os.listdir(f"{t.path}/bucket-0"))
    for column, arr, path in (("d", pa.array([20240105], pa.date32()), "d"),
                              ("ts", pa.array([253402300800000], pa.timestamp("ms", tz="UTC")), "ts"),
                              ("ev", pa.array([{"at": [-62135596800000001]}], schema.field("ev").type), r"ev\.at\[\]")):
        with pytest.raises(SchemaMismatchError, match=f"column '{path}' holds a (DATE|TIMESTAMP) outside the years 1 to"):
            t.write_arrow(pa.table({column: arr}))
    assert sorted(os.listdir(f"{t.path}/bucket-0")) == files_before and t.latest_snapshot().id == 1


def test_instants_and_wall_times_meet_in_a_zone(catalog):
    """An instant written into a TIMESTAMP column keeps the wall time of its Arrow zone; a wall
    time into a TIMESTAMP_LTZ column is UTC's (write.conform; Spark's session zone in the sink)."""
    t = catalog.create_table("db.zoned", pa.schema([("wall", pa.timestamp("us")), ("inst", pa.timestamp("us", tz="UTC"))]))
    noon_ny = pa.array([dt.datetime(2024, 1, 1, 17)], pa.timestamp("us", tz="UTC")).cast(
        pa.timestamp("us", tz="America/New_York"))
    t.write_arrow(pa.table({"wall": noon_ny, "inst": pa.array([dt.datetime(2024, 1, 1, 12)], pa.timestamp("us"))}))
    assert t.to_arrow().to_pylist() == [{"wall": dt.datetime(2024, 1, 1, 12),
                                         "inst": dt.datetime(2024, 1, 1, 12, tzinfo=dt.timezone.utc)}]
    from paimon_streaming.write import conform
    zoned = conform(pa.table({"wall": pa.array([dt.datetime(2024, 3, 10, 2, 30)], pa.timestamp("us")),
                              "inst": pa.array([dt.datetime(2024, 11, 3, 1, 30)], pa.timestamp("us"))}).select(["inst"]),
                    t.schema, "db.zoned", time_zone="America/New_York")
    assert zoned.column("inst")[0].as_py() == dt.datetime(2024, 11, 3, 5, 30, tzinfo=dt.timezone.utc)  # the earlier
    # 02:30 that day never happened: moved later by the gap, as java.time and Spark's casts do (it was
    # refused, so a stream writing Spark's TIMESTAMP_NTZ values failed at every spring-forward)
    skipped = pa.array([dt.datetime(2024, 3, 10, 2, 30), dt.datetime(2024, 3, 10, 1, 59), None,
                        dt.datetime(2024, 3, 10, 3, 0)], pa.timestamp("us"))
    moved = conform(pa.table({"inst": skipped}), t.schema, "db.zoned", time_zone="America/New_York").column("inst")
    assert moved.to_pylist() == [dt.datetime(2024, 3, 10, h, m, tzinfo=dt.timezone.utc) if h is not None else None
                                 for h, m in ((7, 30), (6, 59), (None, None), (7, 0))]


def test_table_api_argument_errors_change_nothing(catalog):
    """Wrong arguments to the Table API raise a specific error before anything is changed."""
    t = catalog.create_table("db.args", pa.schema([("id", pa.int64(), False), ("v", pa.string()),
                                                  ("p", pa.string(), False)]),
                             primary_keys=["id", "p"], partition_keys=["p"], options={"bucket": "1"})
    t.write_arrow(pa.table({"id": [1], "v": ["a"], "p": ["x"]}))
    t.write_arrow(pa.table({"id": [2], "v": ["b"], "p": ["y"]}))
    t.create_tag("t1", 1)
    assert repr(t) == f"Table({t.path!r})"
    assert t.resolve_snapshot().id == 2 and t.resolve_snapshot(tag="t1").id == 1
    with pytest.raises(InvalidOptionError, match="db.args has no 'partition.expiration-time'"):
        t.expire_partitions()
    with pytest.raises(ValueError, match="give snapshot_id or tag, not both"):
        t.to_arrow(snapshot_id=1, tag="t1")
    with pytest.raises(InvalidOptionError, match="row kind column 'v' is a column of table db.args"):
        t.changes_between(1, 2, row_kind_column="v")
    for call in (t.expire_snapshots, t.expire_changelogs, t.remove_orphan_files):
        with pytest.raises(TypeError, match="expected a datetime or epoch milliseconds, got '2024-01-01'"):
            call(older_than="2024-01-01")
    assert [s.id for s in t.snapshot_manager.iter_descending()] == [2, 1]
    assert sorted(t.to_arrow().column("id").to_pylist()) == [1, 2]


def test_fixed_size_list_input_writes_an_array_column(catalog):
    """A fixed-size list column (embeddings, tensors) writes an ARRAY<INT NOT NULL>: a null
    list's hidden null elements are not values (they were refused as null elements), a null
    element of a list is."""
    element = pa.field("element", pa.int32(), nullable=False)
    t = catalog.create_table("db.fsl", pa.schema([("id", pa.int64()), ("a", pa.list_(element))]))
    values = pa.FixedSizeListArray.from_arrays(pa.array([1, 2, None, None, 5, 6], pa.int32()), 2,
                                               mask=pa.array([False, True, False]))
    t.write_arrow(pa.table({"id": [1, 2, 3], "a": values}))
    assert t.to_arrow().sort_by("id").to_pylist() == [{"id": 1, "a": [1, 2]}, {"id": 2, "a": None},
                                                      {"id": 3, "a": [5, 6]}]
    real_null = pa.FixedSizeListArray.from_arrays(pa.array([1, None], pa.int32()), 2)
    with pytest.raises(SchemaMismatchError, match="column 'a' has a null element"):
        t.write_arrow(pa.table({"id": [4], "a": real_null}))
    assert t.latest_snapshot().id == 1


def test_a_table_object_reads_a_schema_another_writer_added_since(catalog):
    """A Table opened before another process changed the schema reads the new column (and
    merges under the newest options), not the rows cut to its own old schema."""
    t = catalog.create_table("db.evolving", pa.schema([("id", pa.int64(), False), ("v", pa.string())]),
                             primary_keys=["id"], options={"bucket": "1"})
    t.write_arrow(pa.table({"id": [1], "v": ["a"]}))
    stale = catalog.get_table("db.evolving")
    stale_travel = catalog.get_table("db.evolving")
    other = catalog.get_table("db.evolving")
    with other.update_schema() as update:
        update.add_column("n", "INT")
    other.write_arrow(pa.table({"id": [2], "v": ["b"], "n": [7]}))
    assert stale.schema.id == 0
    rows = stale.to_arrow().sort_by("id").to_pylist()
    assert rows == [{"id": 1, "v": "a", "n": None}, {"id": 2, "v": "b", "n": 7}]
    assert stale.schema.id == 1
    sid = stale.latest_snapshot().id
    assert stale_travel.to_arrow(snapshot_id=sid).sort_by("id").to_pylist() == rows  # time travel to it
    assert stale_travel.schema.id == 1
