"""Data files: round trips, the physical layout Java needs, and reading other writers' files."""
from __future__ import annotations

import datetime as dt
import glob
import itertools
import json
import os
import random
import re
from decimal import Decimal

import numpy as np
import pyarrow as pa
import pyarrow.orc as orc
import pyarrow.parquet as pq
import pytest

try:
    from tests.java_oracle import epoch_nanos, get_oracle
except ImportError:  # tests/ is not a package: pytest puts tests/ itself on sys.path
    from java_oracle import epoch_nanos, get_oracle
from paimon_streaming import datafile
from paimon_streaming.datafile import (ParquetSettings, conform, data_file_name, format_from_file_name,
                                       read_data_file, write_data_file)
from paimon_streaming.errors import CorruptFileError, InvalidOptionError, SchemaMismatchError
from paimon_streaming.fileio import FileIO
from paimon_streaming.types import DataField, DataType, arrow_schema, parse_atomic

T = parse_atomic


def _row(*fields: DataField, nullable: bool = True) -> DataType:
    return DataType("ROW", nullable, fields=tuple(fields))


def _array(element: DataType) -> DataType:
    return DataType("ARRAY", element=element)


def _map(key: DataType, value: DataType) -> DataType:
    return DataType("MAP", key=key, value=value)


def _fields(*specs: tuple[str, DataType]) -> list[DataField]:
    return [DataField(i, name, t) for i, (name, t) in enumerate(specs)]


# Nested ROW fields need globally unique ids; they start at 100 here.
ATOMIC = [
    ("bool", T("BOOLEAN")), ("i8", T("TINYINT")), ("i16", T("SMALLINT")), ("i32", T("INT")),
    ("i64", T("BIGINT NOT NULL")), ("f32", T("FLOAT")), ("f64", T("DOUBLE")),
    ("dec5", T("DECIMAL(5, 2)")), ("dec10", T("DECIMAL(10, 2)")), ("dec38", T("DECIMAL(38, 6)")),
    ("chr", T("CHAR(3)")), ("vc", T("VARCHAR(10)")), ("s", T("STRING")),
    ("bin", T("BINARY(4)")), ("bytes", T("BYTES")), ("date", T("DATE")), ("time", T("TIME(0)")),
    ("ts0", T("TIMESTAMP(0)")), ("ts3", T("TIMESTAMP(3)")), ("ts6", T("TIMESTAMP(6)")),
    ("ltz3", T("TIMESTAMP(3) WITH LOCAL TIME ZONE")), ("ltz6", T("TIMESTAMP(6) WITH LOCAL TIME ZONE")),
]
NESTED = [
    ("arr", _array(T("INT"))), ("map", _map(T("STRING NOT NULL"), T("INT"))),
    ("row", _row(DataField(100, "x", T("INT")), DataField(101, "y", T("STRING")))),
    ("rows", _array(_row(DataField(102, "a", T("INT")),
                         DataField(103, "b", _array(T("TIMESTAMP(6)")))))),
]
TS = dt.datetime(2024, 1, 2, 3, 4, 5, 678901)
UTC = dt.timezone.utc

ROWS = [
    {"bool": True, "i8": -128, "i16": 32767, "i32": -7, "i64": 2**62, "f32": 1.5, "f64": -2.25,
     "dec5": Decimal("-123.45"), "dec10": Decimal("12345678.90"),
     "dec38": Decimal("-12345678901234567890123456789012.123456"), "chr": "abc", "vc": "varchar",
     "s": "héllo ✓ 𝄞", "bin": b"\x00\x01\x02\x03", "bytes": b"\xff" * 10, "date": dt.date(1969, 12, 31),
     "time": dt.time(23, 59, 59), "ts0": TS.replace(microsecond=0),
     "ts3": TS.replace(microsecond=678000), "ts6": TS, "ltz3": TS.replace(microsecond=678000, tzinfo=UTC),
     "ltz6": TS.replace(tzinfo=UTC), "ts9": 1_704_164_645_678_901_234,
     "arr": [1, None, 3], "map": [("k", 1), ("z", None)], "row": {"x": 1, "y": "why"},
     "rows": [{"a": 1, "b": [TS, None]}, None, {"a": None, "b": None}]},
    {"i64": -1},  # everything else null
    {"bool": False, "i64": 0, "s": "", "bytes": b"", "arr": [], "map": [], "row": {"x": None, "y": None},
     "rows": [], "ts9": -1, "date": dt.date(1, 1, 1), "ts6": dt.datetime(1, 1, 1)},
]


@pytest.fixture
def fio(tmp_path):
    file_io, root = FileIO.for_path(str(tmp_path))
    return file_io, root


# pyarrow's ORC reader yields ns timestamps: years outside 1677-2262 are refused there, and
# digits below the millisecond before 1970, which Java cannot read from pyarrow's ORC files
ORC_ROWS = ROWS[:2] + [{**ROWS[2], "ts6": dt.datetime(1900, 1, 1), "ts9": -1_000_000}]


def _table(fields: list[DataField], rows=ROWS) -> pa.Table:
    names = [f.name for f in fields]
    return pa.Table.from_pylist([{k: v for k, v in r.items() if k in names} for r in rows],
                                schema=arrow_schema(fields))


def _all_fields(with_nanos: bool) -> list[DataField]:
    extra = [("ts9", T("TIMESTAMP(9)"))] if with_nanos else []
    return _fields(*ATOMIC, *extra, *NESTED)


# ---- round trips ------------------------------------------------------------------------------
@pytest.mark.parametrize("fmt", ["parquet", "orc"])
@pytest.mark.parametrize("with_nanos", [False, True])
def test_round_trip_every_type(fio, fmt, with_nanos):
    file_io, root = fio
    fields = _all_fields(with_nanos)
    data = _table(fields, ROWS if fmt == "parquet" else ORC_ROWS)
    path = f"{root}/bucket-0/" + data_file_name("data-", "u", 0, fmt)
    size = write_data_file(file_io, path, data, fields, fmt).size
    assert size == file_io.file_size(path) > 0
    back = read_data_file(file_io, path, fields)
    assert back.schema == data.schema
    assert back.to_pylist() == data.to_pylist()


@pytest.mark.parametrize("fmt, compression, codec", [
    *(("parquet", c, w) for c, w in [("zstd", "ZSTD"), ("ZSTD", "ZSTD"), ("snappy", "SNAPPY"), ("lz4", "LZ4"),
                                     ("LZ4_RAW", "LZ4"), ("gzip", "GZIP"), ("none", "UNCOMPRESSED"),
                                     ("Uncompressed", "UNCOMPRESSED")]),
    *(("orc", c, w) for c, w in [("zstd", "ZSTD"), ("snappy", "SNAPPY"), ("lz4", "LZ4"), ("zlib", "ZLIB"),
                                 ("ZLIB", "ZLIB"), ("none", "UNCOMPRESSED"), ("NONE", "UNCOMPRESSED")])])
def test_compressions(fio, fmt, compression, codec):
    """Each name Java's writer of the format takes (CompressionCodecName, CompressionKind in any
    case; Parquet's `none` as written) is written as Java writes it (Parquet's LZ4 as LZ4_RAW)."""
    file_io, root = fio
    fields = _fields(("id", T("BIGINT")), ("s", T("STRING")))
    data = pa.table({"id": list(range(1000)), "s": ["x" * 50] * 1000}, schema=arrow_schema(fields))
    path = f"{root}/f.{fmt}"
    write_data_file(file_io, path, data, fields, fmt, compression, zstd_level=3)
    assert read_data_file(file_io, path, fields).equals(data)
    written = pq.ParquetFile(path).metadata.row_group(0).column(0).compression if fmt == "parquet" \
        else orc.ORCFile(path).compression
    assert written == codec


@pytest.mark.parametrize("fmt, compression", [
    ("parquet", "NONE"), ("parquet", "zlib"), ("parquet", "brotli"), ("parquet", "lzo"), ("parquet", " zstd"),
    ("orc", "gzip"), ("orc", "GZIP"), ("orc", "uncompressed"), ("orc", "lz4_raw"), ("orc", "lzo"), ("orc", "")])
def test_compressions_java_cannot_write_are_refused(fio, fmt, compression):
    """Names Java's writer of the format fails on (orc with gzip: 'No enum constant
    CompressionKind.GZIP'), and ORC's LZO, which pyarrow cannot write, are refused naming the
    option; no file is left."""
    file_io, root = fio
    fields = _fields(("id", T("BIGINT")))
    lzo = r"cannot write LZO ORC files \(tables holding them are read\)"
    with pytest.raises(InvalidOptionError, match=f"'{compression}' for table option 'file.compression': .*({fmt}|{lzo})"):
        write_data_file(file_io, f"{root}/f.{fmt}", pa.table({"id": [1]}, schema=arrow_schema(fields)), fields,
                        fmt, compression)
    assert os.listdir(root) == []


@pytest.mark.parametrize("options, nanos, delta, dictionary", [
    ({}, False, set(), {"s"}),
    ({"parquet.writer.version": "v2"}, False, {"id", "d", "t", "ts"}, {"s"}),
    ({"parquet.writer.version": "PARQUET_2_0", "parquet.enable.dictionary": "false"}, False,
     {"id", "d", "t", "ts"}, set()),
    ({"parquet.writer.version": "v2", "parquet.enable.dictionary#id": "true",
      "parquet.enable.dictionary#s": "false"}, False, {"d", "t", "ts"}, {"id"}),
    ({"parquet.writer.version": "v2"}, True, {"id", "d", "t"}, {"s"}),  # INT96 timestamps stay plain
    ({"parquet.writer.version": "v1", "parquet.enable.dictionary#x": "true"}, False, set(), {"s", "x"}),
])
def test_parquet_writer_options(fio, options, nanos, delta, dictionary):
    """`parquet.writer.version` and `parquet.enable.dictionary[#column]` decide the encodings."""
    from paimon_streaming.datafile import ParquetSettings
    from paimon_streaming.options import CoreOptions, validate
    validate(options)
    file_io, root = fio
    fields = _fields(("id", T("BIGINT")), ("s", T("STRING")), ("x", T("DOUBLE")), ("d", T("DATE")),
                     ("t", T("TIME")), ("ts", T("TIMESTAMP(9)" if nanos else "TIMESTAMP(6)")))
    n = 3000
    data = pa.table({"id": list(range(n)), "s": [f"v{i % 7}" for i in range(n)], "x": [i / 3 for i in range(n)],
                     "d": [dt.date(2024, 1, 1) + dt.timedelta(days=i % 300) for i in range(n)],
                     "t": [dt.time(1, 2, i % 60) for i in range(n)],
                     "ts": [dt.datetime(2024, 1, 1, 0, 0, i % 60, i) for i in range(n)]}, schema=arrow_schema(fields))
    path = f"{root}/f.parquet"
    write_data_file(file_io, path, data, fields, parquet=ParquetSettings.of(CoreOptions(options)))
    assert read_data_file(file_io, path, fields).equals(data)
    meta = pq.ParquetFile(path).metadata.row_group(0)
    encodings = {meta.column(i).path_in_schema: set(meta.column(i).encodings) for i in range(meta.num_columns)}
    assert {c for c, e in encodings.items() if "DELTA_BINARY_PACKED" in e} == delta
    assert {c for c, e in encodings.items() if "RLE_DICTIONARY" in e} == dictionary


@pytest.mark.parametrize("key, value", [("parquet.writer.version", "v3"), ("parquet.writer.version", "V2"),
                                        ("parquet.enable.dictionary", "yes"),
                                        ("parquet.enable.dictionary#s", "1")])
def test_bad_parquet_writer_options_are_refused(key, value):
    from paimon_streaming.options import validate
    with pytest.raises(InvalidOptionError, match=key):
        validate({key: value})


def test_bad_compression_and_format(fio):
    file_io, root = fio
    fields = _fields(("id", T("INT")))
    data = pa.table({"id": pa.array([1], pa.int32())})
    with pytest.raises(InvalidOptionError, match="file.compression"):
        write_data_file(file_io, f"{root}/a.parquet", data, fields, compression="lzo")
    with pytest.raises(InvalidOptionError, match="file.format"):
        write_data_file(file_io, f"{root}/a.avro", data, fields, "avro")
    assert not file_io.exists(f"{root}/a.parquet")


def test_missing_input_column_is_an_error(fio):
    file_io, root = fio
    fields = _fields(("id", T("INT")), ("v", T("INT")))
    with pytest.raises(SchemaMismatchError, match="'v'"):
        write_data_file(file_io, f"{root}/a.parquet", pa.table({"id": [1]}), fields)


def test_write_conforms_input_types(fio):
    """Non-canonical input (int64 for INT, large_string, dictionary, finer timestamps) is cast."""
    file_io, root = fio
    fields = _fields(("i", T("INT")), ("s", T("STRING")), ("d", T("STRING")), ("t", T("TIMESTAMP(3)")))
    data = pa.table({"i": pa.array([1, None], pa.int64()), "s": pa.array(["a", "b"], pa.large_string()),
                     "d": pa.array(["x", "x"]).dictionary_encode(),
                     "t": pa.array([1_000_999, None], pa.timestamp("us"))})
    path = f"{root}/a.parquet"
    write_data_file(file_io, path, data, fields)
    back = read_data_file(file_io, path, fields)
    assert back.schema == arrow_schema(fields)
    assert back.column("t").to_pylist() == [dt.datetime(1970, 1, 1, 0, 0, 1), None]  # truncated
    assert back.column("d").to_pylist() == ["x", "x"]


# ---- physical layout (what Java reads) --------------------------------------------------------
def _physical(path: str) -> dict[str, tuple[str, str]]:
    schema = pq.ParquetFile(path).schema
    return {schema.column(i).path: (schema.column(i).physical_type, str(schema.column(i).logical_type))
            for i in range(len(schema))}


def _field_id(field: pa.Field) -> int:
    return int(field.metadata[b"PARQUET:field_id"])


def test_parquet_layout_without_nanos(fio):
    file_io, root = fio
    fields = _all_fields(with_nanos=False)
    path = f"{root}/a.parquet"
    write_data_file(file_io, path, _table(fields), fields)
    phys = _physical(path)
    assert phys["ts0"][0] == phys["ts3"][0] == "INT64" and "milliseconds" in phys["ts0"][1]
    assert "milliseconds" in phys["ts3"][1] and "isAdjustedToUTC=false" in phys["ts3"][1]
    assert phys["ts6"][0] == "INT64" and "microseconds" in phys["ts6"][1]
    assert "isAdjustedToUTC=true" in phys["ltz3"][1] and "milliseconds" in phys["ltz3"][1]
    assert "isAdjustedToUTC=true" in phys["ltz6"][1] and "microseconds" in phys["ltz6"][1]
    assert phys["dec5"][0] == "INT32" and phys["dec10"][0] == "INT64"
    assert phys["dec38"][0] == "FIXED_LEN_BYTE_ARRAY"
    assert pq.ParquetFile(path).schema.column(list(phys).index("dec38")).length == 16
    assert phys["i8"] == ("INT32", "Int(bitWidth=8, isSigned=true)")
    assert phys["i16"] == ("INT32", "Int(bitWidth=16, isSigned=true)")
    assert phys["time"] in {("INT32", f"Time(isAdjustedToUTC={utc}, timeUnit=milliseconds)") for utc in TIME_UTC_FLAGS}
    assert phys["date"] == ("INT32", "Date") and phys["s"] == ("BYTE_ARRAY", "String")
    assert phys["bin"] == ("BYTE_ARRAY", "None")
    assert "arr.list.element" in phys and "map.key_value.key" in phys and "map.key_value.value" in phys
    assert phys["rows.list.element.b.list.element"][0] == "INT64"

    arrow = pq.ParquetFile(path).schema_arrow
    assert [_field_id(f) for f in arrow] == [f.id for f in fields]
    assert not arrow.field("i64").nullable and arrow.field("i32").nullable
    assert not arrow.field("map").type.key_field.nullable


def test_decimal_flba_width_matches_java(fio):
    """Java: minimal bytes for the precision (p=19 -> 9, p=38 -> 16)."""
    file_io, root = fio
    fields = _fields(("a", T("DECIMAL(19, 0)")), ("b", T("DECIMAL(28, 3)")))
    data = pa.table({"a": pa.array([Decimal(10**18)], pa.decimal128(19, 0)),
                     "b": pa.array([Decimal("1.5")], pa.decimal128(28, 3))})
    path = f"{root}/a.parquet"
    write_data_file(file_io, path, data, fields)
    schema = pq.ParquetFile(path).schema
    assert [schema.column(i).length for i in range(2)] == [9, 12]
    assert read_data_file(file_io, path, fields).equals(data)


def test_parquet_int96_when_nanos_present(fio):
    """pyarrow's INT96 switch is per file: in a file with a p>6 timestamp (INT96, as Java) the
    p<=6 ones, nested too, are plain INT64 of Java's unit (as INT96 Java's filter pushdown on them
    fails), read back as the declared timestamps."""
    file_io, root = fio
    fields = _all_fields(with_nanos=True)
    path = f"{root}/a.parquet"
    data = _table(fields)
    write_data_file(file_io, path, data, fields)
    phys = _physical(path)
    assert phys["ts9"][0] == "INT96"
    for name in ("ts0", "ts3", "ts6", "ltz3", "ltz6", "rows.list.element.b.list.element"):
        assert phys[name] == ("INT64", "None"), name
    raw = pq.read_table(path)
    assert raw.column("ts0").to_pylist()[0] == data.column("ts0").cast(pa.timestamp("ms")).cast(pa.int64())[0].as_py()
    assert read_data_file(file_io, path, fields).equals(data)
    # Java's TimestampUpdater decodes INT96 as Julian day (LE int32 after 8 LE bytes nanos of day)
    back = read_data_file(file_io, path, fields, ["ts9", "ts6"])
    assert back.column("ts9").to_pylist()[2] == pa.scalar(-1, pa.timestamp("ns")).as_py()
    assert back.column("ts6").to_pylist()[0] == TS


def test_nested_field_ids_follow_java(fio):
    """SpecialFields javadoc: ARRAY(MAP(INT, ARRAY(INT))) with id 10."""
    file_io, root = fio
    base = 536870911
    t = _array(_map(T("INT NOT NULL"), _array(T("INT"))))
    fields = [DataField(10, "a", t), DataField(11, "r", _row(DataField(12, "m", _map(T("STRING"), T("INT")))))]
    data = pa.Table.from_pylist([{"a": [[(1, [2])]], "r": {"m": [("x", 1)]}}], schema=arrow_schema(fields))
    path = f"{root}/a.parquet"
    write_data_file(file_io, path, data, fields)
    a = pq.ParquetFile(path).schema_arrow.field("a")
    outer_element = a.type.value_field
    assert _field_id(a) == 10 and _field_id(outer_element) == base + 10240 + 1
    assert _field_id(outer_element.type.key_field) == base - 10240 - 2
    assert _field_id(outer_element.type.item_field) == base + 10240 + 2
    assert _field_id(outer_element.type.item_field.type.value_field) == base + 10240 + 3
    m = pq.ParquetFile(path).schema_arrow.field("r").type.field("m")
    assert _field_id(m) == 12
    assert _field_id(m.type.key_field) == base - 12 * 1024 - 1  # row fields restart at depth 0
    assert not m.type.key_field.nullable  # nullable map keys become required, as Java
    assert read_data_file(file_io, path, fields).to_pylist() == data.to_pylist()


def test_key_value_layout_ids(fio):
    file_io, root = fio
    fields = [DataField(1073741823 + 0, "_KEY_id", T("BIGINT NOT NULL")),
              DataField(2147483646, "_SEQUENCE_NUMBER", T("BIGINT NOT NULL")),
              DataField(2147483645, "_VALUE_KIND", T("TINYINT NOT NULL")),
              DataField(0, "id", T("BIGINT NOT NULL")), DataField(1, "v", T("STRING"))]
    data = pa.table({"_KEY_id": [1, 2], "_SEQUENCE_NUMBER": [0, 1], "_VALUE_KIND": pa.array([0, 3], pa.int8()),
                     "id": [1, 2], "v": ["a", None]}, schema=arrow_schema(fields))
    path = f"{root}/a.parquet"
    write_data_file(file_io, path, data, fields)
    arrow = pq.ParquetFile(path).schema_arrow
    assert [_field_id(f) for f in arrow] == [f.id for f in fields]
    assert [f.nullable for f in arrow] == [False, False, False, False, True]
    assert read_data_file(file_io, path, fields).equals(data)


def test_orc_types(fio):
    """Java's OrcTypeUtil: TIME as int, LTZ as timestamp with local time zone."""
    file_io, root = fio
    fields = _all_fields(with_nanos=True)
    path = f"{root}/a.orc"
    write_data_file(file_io, path, _table(fields, ORC_ROWS), fields, "orc")
    schema = orc.ORCFile(path).schema
    assert schema.field("time").type == pa.int32()
    assert schema.field("ltz3").type.tz is not None and schema.field("ts3").type.tz is None
    assert schema.field("dec38").type == pa.decimal128(38, 6)


# ---- reading: projection, evolution, other writers ---------------------------------------------
def test_projection_and_columns_the_footer_lacks(fio):
    """Fields are those of the schema the file was written with (`read_evolved` maps newer
    schemas onto them), so a column or ROW field the footer lacks is a damaged footer, never
    a column of nulls."""
    file_io, root = fio
    old = _fields(("id", T("INT")), ("r", _row(DataField(100, "x", T("INT")))))
    data = pa.Table.from_pylist([{"id": 1, "r": {"x": 5}}, {"id": 2, "r": None}], schema=arrow_schema(old))
    for fmt in ("parquet", "orc"):
        path = f"{root}/a.{fmt}"
        write_data_file(file_io, path, data, old, fmt)
        back = read_data_file(file_io, path, old, ["r", "id"])
        assert back.column_names == ["r", "id"]
        assert back.to_pylist() == [{"r": {"x": 5}, "id": 1}, {"r": None, "id": 2}]
        assert read_data_file(file_io, path, old, []).num_rows == 2
        with pytest.raises(SchemaMismatchError):
            read_data_file(file_io, path, old, ["nope"])
        added = old + [DataField(2, "added", T("DECIMAL(20, 2)"))]
        with pytest.raises(CorruptFileError, match="has no column 'added'"):
            read_data_file(file_io, path, added, ["id", "added"])
        with pytest.raises(CorruptFileError, match="has no column 'added'"):  # strings read as dictionaries
            read_data_file(file_io, path, added, ["id", "added"], row_count=2, keep=np.array([False, True]))
        nested = old[:1] + [DataField(1, "r", _row(DataField(100, "x", T("INT")), DataField(101, "y", T("STRING"))))]
        with pytest.raises(CorruptFileError, match="has no field 'y'"):
            read_data_file(file_io, path, nested, ["r"])


@pytest.mark.parametrize("pooled", [False, True], ids=["small-file reads", "pooled reads"])
@pytest.mark.parametrize("layout", ["dictionary", "no dictionary", "over the bound", "row groups"])
def test_rows_dropped_before_strings_are_decoded_read_as_a_filter_would(fio, monkeypatch, layout, pooled):
    """`keep` (a deletion vector's complement) gives what a full read then a filter gives, for
    strings read as dictionaries (small chunks with dictionary pages), built directly (no
    dictionary, or chunks over DICTIONARY_READ_BYTES), and dictionaries per row group; read
    inline as small files are, and with pre-buffering and column threads as large ones are."""
    file_io, root = fio
    monkeypatch.setattr(datafile, "PREBUFFER_MIN_BYTES", 0 if pooled else 1 << 62)
    monkeypatch.setattr(datafile, "COLUMN_THREADS_MIN_BYTES", 0 if pooled else 1 << 62)
    fields = _fields(("id", T("BIGINT NOT NULL")), ("s", T("STRING")), ("b", T("BYTES")), ("c", T("CHAR(2)")))
    rng = np.random.default_rng(7)
    words = np.array([f"w{i}" for i in range(20)] + [None], dtype=object)
    data = pa.table({"id": np.arange(3000), "s": words[rng.integers(0, 21, 3000)],
                     "b": [None if i % 7 == 0 else bytes([i % 5]) for i in range(3000)],
                     "c": ["ab", "cd", None] * 1000}, schema=arrow_schema(fields))
    path = f"{root}/f.parquet"
    if layout == "row groups":
        pq.write_table(data, path, row_group_size=1000, store_schema=False)
    else:
        write_data_file(file_io, path, data, fields, parquet=ParquetSettings(dictionary=layout != "no dictionary"))
    if layout == "over the bound":
        monkeypatch.setattr(datafile, "DICTIONARY_READ_BYTES", 100)
    chosen = []
    pick = datafile._dictionary_columns
    monkeypatch.setattr(datafile, "_dictionary_columns", lambda pf, f: chosen.extend(pick(pf, f)) or pick(pf, f))
    keep = rng.random(3000) < 0.7
    for columns in (None, ["c", "s"], []):
        expected = read_data_file(file_io, path, fields, columns).filter(pa.array(keep))
        back = read_data_file(file_io, path, fields, columns, row_count=3000, keep=keep)
        assert back.equals(expected) and back.num_rows == keep.sum()
    assert sorted(set(chosen)) == ([] if layout in ("no dictionary", "over the bound") else ["b", "c", "s"])
    with pytest.raises(CorruptFileError, match="deletion vector covers 2999"):
        read_data_file(file_io, path, fields, keep=keep[:-1])


def test_read_foreign_physical_layouts(fio):
    """Layouts other writers use: ns INT64 timestamps, FLBA/large decimals, large strings, dictionaries."""
    file_io, root = fio
    fields = _fields(("ts6", T("TIMESTAMP(6)")), ("ts3", T("TIMESTAMP(3)")), ("ltz", T("TIMESTAMP(6) WITH LOCAL TIME ZONE")),
                     ("dec", T("DECIMAL(10, 2)")), ("s", T("STRING")), ("d", T("STRING")),
                     ("arr", _array(T("STRING"))), ("time", T("TIME(0)")), ("bin", T("BINARY(2)")))
    raw = pa.table({
        "ts6": pa.array([1_000_001_000], pa.timestamp("ns")),
        "ts3": pa.array([1_999], pa.timestamp("us")),          # truncated to the declared precision
        "ltz": pa.array([5], pa.timestamp("us")),               # written without isAdjustedToUTC
        "dec": pa.array([Decimal("1.25")], pa.decimal128(10, 2)),
        "s": pa.array(["x"], pa.large_string()),
        "d": pa.array(["y"]).dictionary_encode(),
        "arr": pa.array([["a", None]], pa.large_list(pa.large_string())),
        "time": pa.array([3_600_000_000], pa.time64("us")),
        "bin": pa.array([b"ab"], pa.binary(2)),
    })
    path = f"{root}/foreign.parquet"
    pq.write_table(raw, path)  # pyarrow defaults: ARROW:schema stored, FLBA decimals
    back = read_data_file(file_io, path, fields)
    assert back.schema == arrow_schema(fields)
    assert back.to_pylist() == [{
        "ts6": dt.datetime(1970, 1, 1, 0, 0, 1, 1), "ts3": dt.datetime(1970, 1, 1, 0, 0, 0, 1000),
        "ltz": dt.datetime(1970, 1, 1, 0, 0, 0, 5, tzinfo=UTC), "dec": Decimal("1.25"), "s": "x", "d": "y",
        "arr": ["a", None], "time": dt.time(1), "bin": b"ab"}]


def test_units_and_scales_a_paimon_writer_would_not_write_are_damage(fio):
    """A column with a Paimon field id was written by Java or by us, which store a timestamp in
    the unit of its precision and a decimal at its scale (Java decodes by the declared type):
    a footer saying otherwise was damaged, at any depth. The same layouts without field ids
    (other writers') read converted (test_read_foreign_physical_layouts)."""
    file_io, root = fio
    fields = _fields(("ts", T("TIMESTAMP(6)")), ("decs", _array(T("DECIMAL(10, 2)"))))

    def with_id(name, arrow_type, field_id):
        return pa.field(name, arrow_type, metadata={b"PARQUET:field_id": str(field_id).encode()})
    cases = {
        "'ts' of type TIMESTAMP(6) is stored as timestamp[ms], not in us":
            pa.table({"ts": pa.array([1], pa.timestamp("ms")), "decs": pa.array([[Decimal("1.25")]])}),
        "'decs' of type ARRAY<DECIMAL(10, 2)> is stored as decimal128(10, 3) (at [])":
            pa.table({"ts": pa.array([1], pa.timestamp("us")),
                      "decs": pa.array([[Decimal("1.250")]], pa.list_(pa.decimal128(10, 3)))}),
    }
    for message, data in cases.items():
        path = f"{root}/x.parquet"
        ids = pa.schema([with_id(f.name, f.type, i) for i, f in enumerate(data.schema)])
        pq.write_table(data.cast(ids), path)
        with pytest.raises(CorruptFileError, match=re.escape(message)) as err:
            read_data_file(file_io, path, fields)
        assert path in str(err.value)
        pq.write_table(data, path)  # no field ids: another writer's layout, converted
        assert read_data_file(file_io, path, fields).num_rows == 1


@pytest.mark.parametrize("fmt", ["parquet", "orc"])
def test_a_column_decoding_as_another_type_family_is_damage(fio, fmt):
    """A footer can say a DOUBLE column holds floats, or a STRING column booleans (a flipped
    type, or names swapped): the cast would turn them into other values, so it is an error."""
    file_io, root = fio
    fields = _fields(("f", T("DOUBLE")), ("s", T("STRING")), ("dec", T("DECIMAL(10, 2)")))
    cases = {
        "'f' of type DOUBLE is stored as float": pa.table({"f": pa.array([0.5], pa.float32()), "s": ["x"],
                                                           "dec": pa.array([Decimal("1.25")])}),
        "'s' of type STRING is stored as bool": pa.table({"f": [0.5], "s": [True], "dec": pa.array([Decimal("1.25")])}),
    }
    if fmt == "orc":  # ORC writers (Java's, Hive's) keep the declared scale
        cases["'dec' of type DECIMAL(10, 2) is stored as decimal128(10, 3)"] = pa.table(
            {"f": [0.5], "s": ["x"], "dec": pa.array([Decimal("1.250")], pa.decimal128(10, 3))})
    for message, data in cases.items():
        path = f"{root}/x.{fmt}"
        (pq.write_table if fmt == "parquet" else orc.write_table)(data, path)
        with pytest.raises(CorruptFileError, match=re.escape(message)):
            read_data_file(file_io, path, fields)


def test_orc_char_is_right_trimmed_like_java(fio):
    file_io, root = fio
    fields = _fields(("c", T("CHAR(4)")), ("v", T("VARCHAR(4)")))
    orc.write_table(pa.table({"c": ["ab  ", None], "v": ["ab  ", "x"]}), f"{root}/a.orc")
    assert read_data_file(file_io, f"{root}/a.orc", fields).to_pylist() == [
        {"c": "ab", "v": "ab  "}, {"c": None, "v": "x"}]


def test_orc_timestamps_beyond_nanoseconds_are_refused(fio):
    """pyarrow reads ORC timestamps as nanoseconds: a year-1 value (or one nested in a list of
    structs) written to ORC could not be read back, so it is refused naming the column, and no
    file is left; the same values go to Parquet."""
    file_io, root = fio
    fields = _fields(("ts", T("TIMESTAMP(6)")), ("n", _array(_row(DataField(100, "t", T("TIMESTAMP(3)"))))))
    for bad, column in [({"ts": [dt.datetime(1, 1, 1)], "n": [None]}, "ts"),
                        ({"ts": [None], "n": [[{"t": dt.datetime(9999, 12, 31)}]]}, "n")]:
        data = pa.table(bad, schema=arrow_schema(fields))
        with pytest.raises(SchemaMismatchError, match=f"column '{column}' holds a TIMESTAMP outside 1677-09-21"):
            write_data_file(file_io, f"{root}/a.orc", data, fields, "orc")
        assert not os.path.exists(f"{root}/a.orc")
        write_data_file(file_io, f"{root}/a.parquet", data, fields, "parquet")
        assert read_data_file(file_io, f"{root}/a.parquet", fields).to_pylist() == data.to_pylist()
    fine = pa.table({"ts": [dt.datetime(1677, 9, 22), dt.datetime(2262, 4, 10)], "n": [None, None]},
                    schema=arrow_schema(fields))
    write_data_file(file_io, f"{root}/b.orc", fine, fields, "orc")
    assert read_data_file(file_io, f"{root}/b.orc", fields).to_pylist() == fine.to_pylist()


@pytest.mark.parametrize("fmt", ["parquet", "orc"])
def test_sliced_array_of_rows_with_a_not_null_field_and_a_null_array_is_written(fio, fmt):
    """A file's rows are often a slice of a batch (a rolled file's): an ARRAY of ROWs with a NOT
    NULL field failed to write ('Null bitmap with offsets slice not supported') once the slice
    held a null ARRAY."""
    file_io, root = fio
    fields = _fields(("a", _array(_row(DataField(100, "x", T("INT NOT NULL")), DataField(101, "s", T("STRING"))))))
    data = pa.Table.from_pylist([{"a": [{"x": 1, "s": "a"}]}, {"a": None}, {"a": [{"x": 2, "s": None}, None]}],
                                schema=arrow_schema(fields)).slice(1)
    write_data_file(file_io, f"{root}/a.{fmt}", data, fields, fmt)
    assert read_data_file(file_io, f"{root}/a.{fmt}", fields).to_pylist() == data.to_pylist()


def _random_type(rng: random.Random, ids: itertools.count, depth: int = 0) -> DataType:
    """ROWs, ARRAYs and MAPs up to three deep over a few atomic types, some NOT NULL."""
    kind = rng.choice(["atomic"] * 2 + ["ROW", "ROW", "ARRAY", "MAP"] * (depth < 3))
    if kind == "ROW":
        return _row(*(DataField(next(ids), f"f{i}", _random_type(rng, ids, depth + 1))
                      for i in range(rng.randint(1, 3))))
    if kind == "ARRAY":
        return _array(_random_type(rng, ids, depth + 1))
    if kind == "MAP":
        return _map(T("STRING NOT NULL"), _random_type(rng, ids, depth + 1))
    return T(rng.choice(["INT", "STRING", "BIGINT NOT NULL", "DOUBLE", "BOOLEAN", "BYTES", "DECIMAL(10, 2)"]))


def _random_value(rng: random.Random, t: DataType):
    if t.nullable and rng.random() < 0.3:
        return None
    if t.root == "ROW":
        return {f.name: _random_value(rng, f.type) for f in t.fields}
    if t.root == "ARRAY":
        return [_random_value(rng, t.element) for _ in range(rng.randint(0, 3))]
    if t.root == "MAP":
        return [(f"k{i}", _random_value(rng, t.value)) for i in range(rng.randint(0, 3))]
    return {"INT": lambda: rng.randint(-9, 9), "VARCHAR": lambda: rng.choice(["", "a", "xyz"]),
            "BIGINT": lambda: rng.randint(-9, 9), "DOUBLE": rng.random, "BOOLEAN": lambda: rng.random() < 0.5,
            "VARBINARY": lambda: rng.choice([b"", b"\x00b"]),
            "DECIMAL": lambda: Decimal(rng.randint(-999, 999)) / 100}[t.root]()


def test_orc_rows_nested_in_rows_and_arrays_with_nulls_at_every_depth_round_trip(fio):
    """pyarrow's ORC writer stores a struct's children under its null slots unless they are null
    there too (ORC readers expect nothing there), and nulls them itself but stops at a struct
    without nulls: a null ROW inside a ROW without nulls, or inside an ARRAY, shifted every
    later row's values of that ROW ('' for strings, 0, []), for pyarrow and Java alike."""
    file_io, root = fio
    inner = _row(DataField(101, "s", T("STRING")), DataField(102, "i", T("INT")),
                 DataField(103, "d", _array(T("INT"))))
    fields = _fields(("v", _row(DataField(100, "b", inner))),
                     ("a", _array(_row(DataField(104, "b", _row(DataField(105, "d", _array(T("INT")))))))),
                     ("m", _map(T("STRING NOT NULL"),
                                _row(DataField(106, "b", _row(DataField(107, "s", T("STRING"))))))))
    data = pa.Table.from_pylist([
        {"v": {"b": {"s": "x", "i": 1, "d": [1, 2]}}, "a": [{"b": {"d": [1]}}, {"b": None}, {"b": {"d": [2, 3]}}],
         "m": [("k", {"b": {"s": "x"}}), ("n", {"b": None}), ("y", {"b": {"s": "y"}})]},
        {"v": {"b": None}, "a": [{"b": None}], "m": [("n", {"b": None})]},
        {"v": {"b": {"s": "y", "i": 2, "d": [3, 4]}}, "a": [{"b": {"d": [4]}}], "m": [("z", {"b": {"s": "z"}})]},
    ], schema=arrow_schema(fields))
    write_data_file(file_io, f"{root}/a.orc", data, fields, "orc")
    assert orc.read_table(f"{root}/a.orc").to_pylist() == data.to_pylist()
    assert read_data_file(file_io, f"{root}/a.orc", fields).to_pylist() == data.to_pylist()

    rng = random.Random(7)
    for case in range(150):  # random shapes, nulls at every depth, and the rows of a slice
        ids = itertools.count(100)
        fields = _fields(*((f"c{i}", _random_type(rng, ids)) for i in range(rng.randint(1, 3))))
        rows = [{f.name: _random_value(rng, f.type) for f in fields} for _ in range(rng.randint(1, 30))]
        data = pa.Table.from_pylist(rows, schema=arrow_schema(fields))
        data = data.slice(rng.randint(0, data.num_rows - 1))
        write_data_file(file_io, f"{root}/{case}.orc", data, fields, "orc")
        assert orc.read_table(f"{root}/{case}.orc").to_pylist() == data.to_pylist(), fields
        assert read_data_file(file_io, f"{root}/{case}.orc", fields).to_pylist() == data.to_pylist(), fields


def test_conform_sliced_nested_arrays():
    t = pa.map_(pa.field("key", pa.string(), False), pa.field("value", pa.int64()))
    src = pa.array([[("a", 1)], None, [("b", 2)]], pa.map_(pa.string(), pa.int32())).slice(1)
    assert conform(src, t).to_pylist() == [None, [("b", 2)]]
    lst = pa.array([[1], None, [2, 3]], pa.large_list(pa.int32())).slice(1)
    assert conform(lst, pa.list_(pa.field("element", pa.int64()))).to_pylist() == [None, [2, 3]]
    after_null = pa.array([None, [], None, [4]], pa.list_(pa.int32())).slice(1)
    assert conform(after_null, pa.list_(pa.int64())).to_pylist() == [[], None, [4]]
    rows = pa.array([None, {"x": 1}, None, {"x": 2}], pa.struct([("x", pa.int32())])).slice(1)
    target = pa.struct([("y", pa.string()), ("x", pa.int64())])
    assert conform(rows, target).to_pylist() == [{"y": None, "x": 1}, None, {"y": None, "x": 2}]


def _pypaimon_table(tmp_path, fmt: str, schema: pa.Schema, data: pa.Table) -> str:
    from pypaimon_oracle import pypaimon_create, pypaimon_write
    pypaimon_create(str(tmp_path / "wh"), f"db.t_{fmt}", schema, options={"file.format": fmt})
    pypaimon_write(str(tmp_path / "wh"), f"db.t_{fmt}", data)
    return str(tmp_path / "wh" / "db.db" / f"t_{fmt}")


@pytest.mark.parametrize("fmt", ["parquet", "orc"])
def test_read_pypaimon_files(tmp_path, fmt):
    schema = pa.schema([
        ("b", pa.bool_()), ("i8", pa.int8()), ("i16", pa.int16()), ("i32", pa.int32()), ("i64", pa.int64()),
        ("f", pa.float32()), ("d", pa.float64()), ("s", pa.string()), ("bin", pa.binary()), ("dt", pa.date32()),
        ("tm", pa.time32("ms")), ("ts0", pa.timestamp("s")), ("ts3", pa.timestamp("ms")),
        ("ts6", pa.timestamp("us")), ("ts9", pa.timestamp("ns")), ("ltz3", pa.timestamp("ms", tz="UTC")),
        ("ltz6", pa.timestamp("us", tz="UTC")), ("dec", pa.decimal128(10, 2)), ("dec38", pa.decimal128(38, 6)),
        ("arr", pa.list_(pa.int32())), ("m", pa.map_(pa.string(), pa.int32())),
        ("r", pa.struct([("x", pa.int32()), ("y", pa.string())]))])
    rows = [{"b": True, "i8": 1, "i16": 2, "i32": 3, "i64": 4, "f": 1.5, "d": 2.5, "s": "x", "bin": b"ab",
             "dt": dt.date(2024, 1, 2), "tm": dt.time(1, 2, 3, 4000), "ts0": TS.replace(microsecond=0),
             "ts3": TS.replace(microsecond=678000), "ts6": TS, "ts9": TS, "ltz3": TS.replace(microsecond=678000),
             "ltz6": TS, "dec": Decimal("1.23"), "dec38": Decimal("-1.230000"), "arr": [1, None],
             "m": [("a", 1)], "r": {"x": 1, "y": "q"}}, {}]
    data = pa.Table.from_pylist(rows, schema=schema)
    table_dir = _pypaimon_table(tmp_path, fmt, schema, data)
    with open(f"{table_dir}/schema/schema-0") as f:
        fields = [DataField.from_json(x) for x in json.load(f)["fields"]]
    files = glob.glob(f"{table_dir}/bucket-*/data-*")
    assert len(files) == 1 and format_from_file_name(os.path.basename(files[0])) == fmt
    file_io, _ = FileIO.for_path(table_dir)
    back = read_data_file(file_io, files[0], fields)
    assert back.schema == arrow_schema(fields)
    assert back.to_pylist() == conform_table(data, fields).to_pylist()


def conform_table(data: pa.Table, fields: list[DataField]) -> pa.Table:
    return pa.Table.from_arrays([conform(data.column(f.name), arrow_schema([f]).field(0).type) for f in fields],
                                schema=arrow_schema(fields))


# ---- names ------------------------------------------------------------------------------------
def test_file_names():
    assert data_file_name("data-", "abc", 3, "parquet") == "data-abc-3.parquet"
    assert data_file_name("changelog-", "abc", 0, "orc", "zstd") == "changelog-abc-0.orc"
    assert data_file_name("data-", "abc", 0, "parquet", "zstd", True) == "data-abc-0.zst.parquet"
    assert data_file_name("data-", "abc", 0, "orc", "gzip", True) == "data-abc-0.gz.orc"
    # a name not Hadoop's is the extension as written (Java's DataFilePathFactory)
    assert data_file_name("data-", "abc", 0, "orc", "ZLIB", True) == "data-abc-0.ZLIB.orc"
    assert data_file_name("data-", "abc", 0, "parquet", "none", True) == "data-abc-0.parquet"
    assert data_file_name("data-", "abc", 0, "parquet", "brotli", True) == "data-abc-0.brotli.parquet"
    assert format_from_file_name("data-abc-0.parquet") == "parquet"
    assert format_from_file_name("/x/bucket-0/data-abc-0.zst.parquet") == "parquet"
    assert format_from_file_name("data-abc-0.json.gz") == "json"
    assert format_from_file_name("data-abc-0.ORC") == "orc"
    with pytest.raises(InvalidOptionError):
        format_from_file_name("data-abc-0")
    with pytest.raises(InvalidOptionError):
        format_from_file_name("data.gz")


# ---- Apache Paimon Java (tests/java_oracle.py) ---------------------------------------------------
JAVA_FIELDS = [
    {"name": "id", "type": "INT NOT NULL"}, {"name": "dec5", "type": "DECIMAL(5, 2)"},
    {"name": "dec18", "type": "DECIMAL(18, 2)"}, {"name": "dec20", "type": "DECIMAL(20, 2) NOT NULL"},
    {"name": "ts0", "type": "TIMESTAMP(0)"}, {"name": "ts3", "type": "TIMESTAMP(3)"},
    {"name": "ts6", "type": "TIMESTAMP(6)"}, {"name": "ltz3", "type": "TIMESTAMP(3) WITH LOCAL TIME ZONE"},
    {"name": "tm", "type": "TIME(0)"}, {"name": "ch", "type": "CHAR(3)"}, {"name": "bin", "type": "BINARY(2)"},
    {"name": "i8", "type": "TINYINT"}, {"name": "f", "type": "FLOAT"},
    {"name": "arr", "type": {"type": "ARRAY", "element": {"type": "ROW", "fields": [
        {"name": "a", "type": "INT"}, {"name": "b", "type": {"type": "ARRAY", "element": "STRING"}}]}}},
    {"name": "m", "type": {"type": "MAP", "key": "INT NOT NULL", "value": {"type": "ARRAY", "element": "INT"}}},
]
JAVA_NANO_FIELDS = [{"name": "ts9", "type": "TIMESTAMP(9)"},
                    {"name": "ltz9", "type": "TIMESTAMP(9) WITH LOCAL TIME ZONE"}]
JAVA_ROWS = [
    {"id": 1, "dec5": Decimal("-1.25"), "dec18": Decimal("1234567890123456.78"),
     "dec20": Decimal("-123456789012345678.90"), "ts0": dt.datetime(2024, 1, 2, 3, 4, 5),
     "ts3": dt.datetime(2024, 1, 2, 3, 4, 5, 678000), "ts6": dt.datetime(1900, 1, 2, 3, 4, 5, 678901),
     "ltz3": dt.datetime(2024, 1, 2, 3, 4, 5, 678000, tzinfo=UTC), "tm": dt.time(1, 2, 3), "ch": "ab",
     "bin": b"xy", "i8": -3, "f": 0.5, "arr": [{"a": 1, "b": ["x", None]}, None], "m": [(1, [2, None])],
     "ts9": 1_704_164_645_678_901_234, "ltz9": -1_500_000_001},
    {"id": 2, "dec20": Decimal("0.00")},
]
# Pre-1970 timestamps with a sub-second part do not survive ORC between pyarrow and Java
# (Arrow's ORC writer emits negative nanos; Java's ORC itself misreads the last second before
# 1970): keep ORC rows clear of them.
JAVA_ORC_ROWS = [dict(JAVA_ROWS[0], ts6=dt.datetime(1900, 1, 2, 3, 4, 5), ltz9=-1_000_000_000), JAVA_ROWS[1]]


def _java_value(v):
    if isinstance(v, pa.lib.Scalar):
        v = v.as_py()
    return epoch_nanos(v) if hasattr(v, "nanosecond") else v


def _leaves(path: str) -> list[tuple]:
    schema = pq.ParquetFile(path).schema
    cols = [schema.column(i) for i in range(len(schema))]
    return [(c.path, c.physical_type, str(c.logical_type), c.max_definition_level, c.max_repetition_level)
            for c in cols]


def _ids(fields) -> list[tuple[str, int, bool]]:
    out = []
    for f in fields:
        out.append((f.name, _field_id(f), f.nullable))
        t = f.type
        children = ([t.value_field] if pa.types.is_list(t) else [t.key_field, t.item_field] if pa.types.is_map(t)
                    else list(t) if pa.types.is_struct(t) else [])
        out.extend(_ids(children))
    return out


# Java writes TIME with isAdjustedToUTC=true; newer pyarrow writes false (the Parquet spec's
# flag for a time without zone) and has no setting for it. Java reads both (test_java_interop
# and tests/test_interop_java.py read our TIME columns back through Java).
TIME_UTC_FLAGS = ("true", "false")


def _time_flag_free(leaves: list[tuple]) -> list[tuple]:
    return [tuple(str(v).replace("isAdjustedToUTC=false", "isAdjustedToUTC=true") if isinstance(v, str)
                  and v.startswith("Time(") else v for v in leaf) for leaf in leaves]


def test_java_interop(tmp_path):
    """We read Java's files; Java reads ours; our Parquet layout equals Java's leaf for leaf.

    Both formats share two JVM runs (the oracle's cost is JVM start-up).
    """
    from paimon_streaming.table import Table

    oracle = get_oracle()
    rows_of = {"parquet": JAVA_ROWS, "orc": JAVA_ORC_ROWS}
    fields_of = {"java": JAVA_FIELDS + JAVA_NANO_FIELDS, "java_us": JAVA_FIELDS}
    fields_of.update(ours=fields_of["java"], ours_us=fields_of["java_us"])
    names_of = {k: [f["name"] for f in v] for k, v in fields_of.items()}
    tables = {(fmt, name): str(tmp_path / "db.db" / f"{name}_{fmt}") for fmt in rows_of for name in fields_of}

    def rows(fmt: str, name: str) -> list[dict]:
        return [{n: r.get(n) for n in names_of[name]} for r in rows_of[fmt]]

    def data_file(fmt: str, name: str) -> str:
        (found,) = glob.glob(f"{tables[fmt, name]}/bucket-0/data-*.{fmt}")
        return found

    with oracle.batch() as b:
        for (fmt, name), path in tables.items():
            b.create_table(path, fields_of[name], options={"file.format": fmt})
            if name.startswith("java"):
                b.write(path, rows(fmt, name))

    file_io, _ = FileIO.for_path(str(tmp_path))
    nanos = {"ts9": pa.timestamp("ns"), "ltz9": pa.timestamp("ns", tz="UTC")}
    for (fmt, name), path in tables.items():
        if name.startswith("java"):  # Java's files through read_data_file
            with open(f"{path}/schema/schema-0") as f:
                fields = [DataField.from_json(x) for x in json.load(f)["fields"]]
            got = read_data_file(file_io, data_file(fmt, name), fields).to_pylist()
            assert [{k: _java_value(v) for k, v in r.items()} for r in got] == rows(fmt, name), (fmt, name)
        else:  # our files, written by the table writer through write_data_file
            table = Table.open(path)
            arrow_rows = [{k: pa.scalar(v, nanos[k]) if k in nanos and v is not None else v
                           for k, v in r.items()} for r in rows(fmt, name)]
            table.write_arrow(pa.Table.from_pylist(arrow_rows, schema=table.arrow_schema()))
    with oracle.batch() as b:
        java_read = {key: b.read(path) for key, path in tables.items() if key[1].startswith("ours")}
    for (fmt, name), pending in java_read.items():
        assert sorted(pending.result, key=lambda r: r["id"]) == rows(fmt, name), (fmt, name)

    # same Parquet physical layout as Java where no INT96 is involved
    assert _time_flag_free(_leaves(data_file("parquet", "ours_us"))) == \
        _time_flag_free(_leaves(data_file("parquet", "java_us")))
    assert _ids(pq.ParquetFile(data_file("parquet", "ours_us")).schema_arrow) == \
        _ids(pq.ParquetFile(data_file("parquet", "java_us")).schema_arrow)
    int96 = {path for path, phys, *_ in _leaves(data_file("parquet", "java")) if phys == "INT96"}
    assert int96 == {"ts9", "ltz9"}


def _avro_file(path: str, codec: str = "deflate") -> pa.Table:
    """An Avro data file as Java's Avro writer lays one out (nullable columns as unions with
    null, timestamps as `timestamp-micros` longs), and the table it holds."""
    import fastavro
    rows = [{"id": i, "s": None if i % 3 == 0 else f"s{i}", "d": Decimal(i) / 4,
             "ts": dt.datetime(2024, 1, 1, 0, 0, i % 60, i, tzinfo=dt.timezone.utc)} for i in range(200)]
    schema = {"type": "record", "name": "record", "fields": [
        {"name": "id", "type": "long"},
        {"name": "s", "type": ["null", "string"], "default": None},
        {"name": "d", "type": ["null", {"type": "bytes", "logicalType": "decimal", "precision": 10, "scale": 2}]},
        {"name": "ts", "type": ["null", {"type": "long", "logicalType": "timestamp-micros"}]}]}
    with open(path, "wb") as f:
        fastavro.writer(f, schema, rows, codec=codec)
    return pa.table({"id": pa.array(range(200), pa.int64()), "s": [r["s"] for r in rows],
                     "d": pa.array([r["d"] for r in rows], pa.decimal128(10, 2)),
                     "ts": pa.array([r["ts"].replace(tzinfo=None) for r in rows], pa.timestamp("us"))})


AVRO_FIELDS = _fields(("id", T("BIGINT NOT NULL")), ("s", T("STRING")), ("d", T("DECIMAL(10, 2)")),
                      ("ts", T("TIMESTAMP(6)")))


def test_avro_data_files_are_read(fio, monkeypatch):
    """Java's Avro data files read as the table's types (projections, a mask);
    a damaged one is a CorruptFileError, and one whose codec needs a library fastavro lacks
    says so instead of calling the file damaged."""
    import fastavro.read
    from paimon_streaming.errors import UnsupportedOperationError
    file_io, root = fio
    path = f"{root}/data-x-0.avro"
    expected = _avro_file(path)
    size = os.path.getsize(path)
    assert read_data_file(file_io, path, AVRO_FIELDS, file_size=size, row_count=200).to_pylist() == expected.to_pylist()
    keep = np.arange(200) % 2 == 0
    got = read_data_file(file_io, path, AVRO_FIELDS, ["s"], keep=keep)
    assert got.column("s").to_pylist() == expected.column("s").filter(pa.array(keep)).to_pylist()
    with pytest.raises(CorruptFileError, match="has no column 'new'"):
        read_data_file(file_io, path, AVRO_FIELDS + [DataField(9, "new", T("INT"))], ["new", "s"], keep=keep)
    with pytest.raises(CorruptFileError, match="holds 200 rows but its manifest entry records 7"):
        read_data_file(file_io, path, AVRO_FIELDS, row_count=7)
    with open(path, "r+b") as f:
        f.seek(size // 2)
        f.write(b"\xff" * 64)
    with pytest.raises(CorruptFileError, match="data-x-0.avro cannot be decoded"):
        read_data_file(file_io, path, AVRO_FIELDS)
    _avro_file(path)

    def missing(*args, **kwargs):
        raise ValueError("snappy codec is supported but you need to install one of the following libraries: "
                         "('cramjam',)")
    monkeypatch.setitem(fastavro.read.BLOCK_READERS, "deflate", missing)
    with pytest.raises(UnsupportedOperationError, match=r"data-x-0.avro is Avro compressed with 'deflate'.*cramjam"):
        read_data_file(file_io, path, AVRO_FIELDS)


class _ThrottledStore(FileIO):
    """Local files whose reads after the first fail `failures` times (-1: always) with an
    OSError, as an object store's ranged GETs of a file read in place (over
    REMOTE_WHOLE_FILE_BYTES) fail once the SDK's retries run out."""

    def __init__(self, failures: int):
        super().__init__(pa.fs.LocalFileSystem())
        self.failures, self.reads = failures, 0

    def open_input_file(self, path: str, size: int | None = None):
        store, source = self, super().open_input_file(path, size)

        class Throttled:
            closed = property(lambda _: source.closed)
            seek, tell, close = source.seek, source.tell, source.close

            def read(self, nbytes: int = -1) -> bytes:
                store.reads += 1
                if store.reads > 1 and store.failures:
                    store.failures -= 1
                    raise OSError("AWS Error SLOW_DOWN during GetObject operation: Please reduce your request rate.")
                return source.read(nbytes)
        return pa.PythonFile(Throttled(), mode="r")


@pytest.mark.parametrize("fmt", ["parquet", "orc", "avro"])
def test_a_store_failing_reads_is_an_os_error_not_a_damaged_file(fio, fmt):
    """The decoders wrap a store's failed read into a failed decode: a throttled read of a file
    read in place was a CorruptFileError sending users to `check` (which listed healthy files as
    damaged), and callers retrying on OSError gave up. Now it is an OSError naming the file, a
    failure that passes is read through, and damage stays a CorruptFileError."""
    file_io, root = fio
    path = f"{root}/data-x-0.{fmt}"
    if fmt == "avro":
        fields, expected = AVRO_FIELDS, _avro_file(path)
    else:
        fields = _fields(("id", T("BIGINT NOT NULL")), ("s", T("STRING")))
        expected = pa.table({"id": pa.array(range(5000), pa.int64()), "s": [f"s{i}" for i in range(5000)]})
        write_data_file(file_io, path, expected, fields, fmt)
    with pytest.raises(OSError, match=f"reading data file {re.escape(path)} failed: AWS Error SLOW_DOWN") as err:
        read_data_file(_ThrottledStore(-1), path, fields)
    assert not isinstance(err.value, CorruptFileError)
    assert read_data_file(_ThrottledStore(1), path, fields).to_pylist() == expected.to_pylist()
    with open(path, "r+b") as f:  # the tail: ORC's postscript (a byte flipped in a stripe may read as data)
        f.seek(-65, os.SEEK_END)
        f.write(b"\xff" * 64)
    with pytest.raises(CorruptFileError, match="cannot be decoded"):
        read_data_file(_ThrottledStore(0), path, fields)


def test_a_java_csv_data_file_is_unsupported_not_damaged(warehouse, capsys):
    """Java 1.4.2 writes CSV data files (`file.format` = csv); a table that switched to Parquet
    keeps them. Reading one is an UnsupportedOperationError naming it, and `check` calls it
    unreadable, not damaged (it was an InvalidOptionError, reported as a corrupt file)."""
    import paimon_streaming as ps
    from paimon_streaming.check import check_location
    from paimon_streaming.errors import UnsupportedOperationError
    java = get_oracle()
    path = f"{warehouse}/db.db/csv_then_parquet"
    with java.batch() as b:
        b.create_table(path, [{"name": "id", "type": "BIGINT"}, {"name": "v", "type": "STRING"}],
                       options={"file.format": "csv", "file.compression": "none"})
        b.write(path, [{"id": 1, "v": "a"}])
    with java.batch() as b:
        b.alter(path, [{"kind": "set-option", "key": "file.format", "value": "parquet"}])
    with java.batch() as b:
        b.write(path, [{"id": 2, "v": "b"}])
    (csv_file,) = glob.glob(f"{path}/bucket-0/*.csv")
    with pytest.raises(UnsupportedOperationError, match="file format 'csv' is not supported") as err:
        ps.Table.open(path).to_arrow()
    assert csv_file in str(err.value)
    kinds = {p.path: p.kind for p in check_location(path).problems}
    assert kinds == {csv_file: "unreadable-file"}
