"""Big, wide and odd-shaped input: whatever Arrow shape a pipeline hands over (dictionaries,
large/view types, slices with null-bitmap offsets, thousands of chunks, structs whose fields
come in another order or under other names), sizes (strings past 32-bit offsets, 100 MB
values, thousands of columns, deep nesting, 10 KB keys, tiny `target-file-size` rolling a
batch into many files) and the same through Spark. Each read equals the input (or a model's
merge of it), also when Apache Paimon Java 1.4.2 reads it, or the write fails with a clear
error and commits nothing.

The real 2 GiB+ cases run with BIG_INPUT_FULL=1 (several GB of memory, minutes); CI runs them
with the 32-bit offset limit lowered (`merge_engine.OFFSET_LIMIT`), through the same code."""
from __future__ import annotations

import datetime as dt
import decimal
import glob
import os
import resource

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
import pytest

import paimon_streaming as ps
from paimon_streaming import merge_engine
from paimon_streaming.errors import SchemaMismatchError, UnsupportedTypeError

try:
    from java_oracle import get_oracle
except ImportError:  # pragma: no cover
    from tests.java_oracle import get_oracle

FULL = os.environ.get("BIG_INPUT_FULL") == "1"


def by_id(rows: list[dict], key: str = "id") -> list[dict]:
    return sorted(rows, key=lambda r: r[key])


def plain(table: pa.Table) -> list[dict]:
    """Rows as Python values, MAP values as lists of pairs (as Java's oracle returns them)."""
    return [{k: _plain(v) for k, v in r.items()} for r in table.to_pylist()]


def _plain(v):
    if isinstance(v, list):
        return [_plain(x) for x in v]
    if isinstance(v, tuple):
        return tuple(_plain(x) for x in v)
    if isinstance(v, dict):
        return {k: _plain(x) for k, x in v.items()}
    return v


def data_files(t) -> list[str]:
    return glob.glob(os.path.join(t.path, "**", "data-*"), recursive=True)


# ---- structs: fields matched by name, never silently nulled ---------------------------------------
ROW = pa.struct([("a", pa.int32()), ("b", pa.int32())])
STRUCTS = pa.schema([("id", pa.int64(), False), ("r", ROW), ("l", pa.list_(ROW)),
                     ("m", pa.map_(pa.string(), ROW))])
XY = pa.struct([("x", pa.int32()), ("y", pa.int32())])


@pytest.mark.parametrize("column, value, arrow_type", [
    ("r", {"x": 1, "y": 2}, XY),
    ("l", [{"x": 1, "y": 2}], pa.list_(XY)),
    ("m", [("k", {"x": 1, "y": 2})], pa.map_(pa.string(), XY)),
    ("r", {"a": 1, "y": 2}, pa.struct([("a", pa.int32()), ("y", pa.int32())])),
])
@pytest.mark.parametrize("pk", [True, False])
def test_struct_fields_under_other_names_are_refused_not_written_as_nulls(catalog, column, value, arrow_type, pk):
    """A ROW written with fields the table's ROW does not have (same count and types: Spark's
    `struct(x, y)` into ROW<a, b>) was cast by name, every unknown field becoming null: all
    values lost, silently. Now refused naming the column and the fields; nothing committed."""
    t = catalog.create_table("db.t", STRUCTS, primary_keys=["id"] if pk else None,
                             options={"bucket": "1"} if pk else {})
    data = pa.table({"id": pa.array([1], pa.int64()), column: pa.array([value], arrow_type)})
    with pytest.raises(SchemaMismatchError, match=rf"column '{column}.*'y'.*by name"):
        t.write_arrow(data)
    assert t.snapshots() == [] and data_files(t) == []


@pytest.mark.parametrize("pk", [True, False])
def test_struct_fields_in_another_order_or_some_missing_are_matched_by_name(catalog, pk):
    """Fields in another order land under their names (they were refused, with a message naming
    the wrong type), a missing nullable field is null, as a missing top-level column is."""
    t = catalog.create_table("db.t", STRUCTS, primary_keys=["id"] if pk else None,
                             options={"bucket": "1"} if pk else {})
    ba = pa.struct([("b", pa.int64()), ("a", pa.int8())])
    data = pa.table({"id": pa.array([1, 2], pa.int64()),
                     "r": pa.array([{"b": 2, "a": 1}, None], ba),
                     "l": pa.array([[{"b": 4}], [None, {"b": 5}]], pa.list_(pa.struct([("b", pa.int32())]))),
                     "m": pa.array([[("k", {"b": 6, "a": 7})], None], pa.map_(pa.string(), ba))})
    t.write_arrow(data)
    want = [{"id": 1, "r": {"a": 1, "b": 2}, "l": [{"a": None, "b": 4}], "m": [("k", {"a": 7, "b": 6})]},
            {"id": 2, "r": None, "l": [None, {"a": None, "b": 5}], "m": None}]
    assert by_id(plain(t.to_arrow())) == want
    assert by_id(get_oracle().read(t.path)) == want


def test_a_not_null_struct_field_missing_from_the_input_is_refused(catalog):
    schema = pa.schema([("id", pa.int64(), False),
                        ("r", pa.struct([pa.field("a", pa.int32(), False), ("b", pa.int32())]))])
    t = catalog.create_table("db.t", schema, primary_keys=["id"], options={"bucket": "1"})
    with pytest.raises(SchemaMismatchError, match=r"column 'r'.*NOT NULL.*'a'"):
        t.write_arrow(pa.table({"id": pa.array([1], pa.int64()),
                                "r": pa.array([{"b": 1}], pa.struct([("b", pa.int32())]))}))
    assert t.snapshots() == []


# ---- instants inside 64-bit-offset and fixed-size lists -------------------------------------------
KOLKATA = pa.timestamp("us", tz="Asia/Kolkata")
NOON_UTC = dt.datetime(2024, 1, 1, 12, 0, tzinfo=dt.timezone.utc)


def test_instants_inside_any_list_become_the_wall_time_they_show_in_their_zone(catalog):
    """An instant written into a TIMESTAMP becomes the wall time it shows in its zone, at the top
    level and inside a list; inside a large_list it kept its UTC wall time (12:00 where its zone
    shows 17:30): the same instant stored 5.5 hours apart depending on the list's offset width
    (and a fixed_size_list was refused)."""
    schema = pa.schema([("id", pa.int64(), False), ("l", pa.list_(pa.timestamp("us")))])
    want = [{"id": 1, "l": [dt.datetime(2024, 1, 1, 17, 30)]}, {"id": 2, "l": None}]
    tables = []
    for name, list_type in [("list", pa.list_), ("large_list", pa.large_list),
                            ("fixed_size_list", lambda t: pa.list_(t, 1))]:
        t = catalog.create_table(f"db.{name}", schema, primary_keys=["id"], options={"bucket": "1"})
        t.write_arrow(pa.table({"id": pa.array([1, 2], pa.int64()),
                                "l": pa.array([[NOON_UTC], None], list_type(KOLKATA))}))
        assert by_id(t.to_arrow().to_pylist()) == want, name
        tables.append(t)
    with get_oracle().batch() as b:
        reads = [b.read(t.path) for t in tables]
    assert [by_id(r.result) for r in reads] == [want] * 3


# ---- Arrow shapes ---------------------------------------------------------------------------------
SHAPES = pa.schema([("id", pa.int64(), False), ("s", pa.string()), ("b", pa.binary()), ("n", pa.int64()),
                    ("d", pa.decimal128(10, 2)), ("l", pa.list_(pa.string())),
                    ("r", pa.struct([("a", pa.string()), ("x", pa.int32())])), ("m", pa.map_(pa.string(), pa.string()))])
IDS = pa.array([1, 2, 3, 4, 5], pa.int64())
STRINGS = ["a", None, "bb" * 30, "", "a"]


def _dict_chunks() -> dict[str, pa.ChunkedArray]:
    """Each column in two chunks whose dictionaries differ, nested ones too."""
    def chunk(values: list, lo: int, hi: int) -> dict[str, pa.Array]:
        d = pa.array(values[lo:hi]).dictionary_encode()
        n = hi - lo
        return {"s": d, "l": pa.ListArray.from_arrays(pa.array(range(n + 1), pa.int32()), d),
                "r": pa.StructArray.from_arrays([d, pa.array(range(n), pa.int32())], names=["a", "x"]),
                "m": pa.MapArray.from_arrays(pa.array(range(n + 1), pa.int32()),
                                             pa.array([f"k{i}" for i in range(n)]), d)}
    first, second = chunk(STRINGS, 0, 2), chunk(STRINGS, 2, 5)
    return {k: pa.chunked_array([first[k], second[k]]) for k in first}


def _shape(name: str) -> tuple[pa.Table, list[dict]]:
    """An input of the given Arrow shape and the rows it stands for."""
    want = [{"id": i + 1, "s": s, "b": None, "n": None, "d": None, "l": None, "r": None, "m": None}
            for i, s in enumerate(STRINGS)]
    if name == "dictionaries differing per chunk, nested too":
        cols = _dict_chunks()
        for i, w in enumerate(want):
            w.update(l=[STRINGS[i]], r={"a": STRINGS[i], "x": i if i < 2 else i - 2},
                     m=[(f"k{i if i < 2 else i - 2}", STRINGS[i])])
        return pa.table({"id": IDS, **cols}), want
    if name == "dictionary of integers":
        for i, w in enumerate(want):
            w["n"] = [7, None, 7, 9, 7][i]
        return pa.table({"id": IDS, "s": STRINGS,
                         "n": pa.array([7, None, 7, 9, 7], pa.int32()).dictionary_encode()}), want
    if name in ("large_string", "string_view"):
        return pa.table({"id": IDS, "s": pa.array(STRINGS, getattr(pa, name)())}), want
    if name in ("large_binary", "binary_view", "fixed_size_binary"):
        values = [b"\x00\x01", None, b"zz", b"\xff\xfe", b"ab"]
        for w, v in zip(want, values):
            w["b"] = v
        arrow = pa.binary(2) if name == "fixed_size_binary" else getattr(pa, name)()
        return pa.table({"id": IDS, "s": STRINGS, "b": pa.array(values, arrow)}), want
    if name in ("large_list", "fixed_size_list"):
        values = [["x", None], None, ["y", "z"], ["", ""], ["w", "w"]]
        for w, v in zip(want, values):
            w["l"] = v
        arrow = pa.large_list(pa.large_string()) if name == "large_list" else pa.list_(pa.string(), 2)
        return pa.table({"id": IDS, "s": STRINGS, "l": pa.array(values, arrow)}), want
    if name == "run-end encoded":
        return pa.table({"id": IDS, "s": pc.run_end_encode(pa.array(STRINGS))}), want
    if name == "extension types (storage written)":
        for w in want:
            w["s"] = '{"k": 1}'
        return pa.table({"id": IDS, "s": pa.array(['{"k": 1}'] * 5, pa.json_())}), want
    if name == "decimal256":
        values = [decimal.Decimal("12345678.91"), None, decimal.Decimal("-0.01"), decimal.Decimal("0"),
                  decimal.Decimal("1.5")]
        for w, v in zip(want, values):
            w["d"] = v if v is None else v.quantize(decimal.Decimal("0.01"))
        return pa.Table.from_arrays([IDS, pa.array(STRINGS), pa.array(values, pa.decimal256(20, 2)).cast(pa.decimal256(21, 2))],
                                    names=["id", "s", "d"]), want
    if name == "columns in another order, schema metadata, other nullable flags":
        schema = pa.schema([("s", pa.string(), False), ("id", pa.int64(), True)], metadata={"k": "v"})
        values = [s if s is not None else "-" for s in STRINGS]
        for w, v in zip(want, values):
            w["s"] = v
        return pa.table({"s": values, "id": IDS}, schema=schema), want
    if name == "a slice of a bigger batch (null bitmaps at an offset)":
        n = 101
        big = pa.table({"id": pa.array(range(-50, n - 50), pa.int64()),
                        "s": pa.array([None if i % 3 == 0 else f"v{i}" for i in range(n)]),
                        "l": pa.array([None if i % 4 == 0 else [f"e{i}", None][: i % 3] for i in range(n)],
                                      pa.list_(pa.string())),
                        "r": pa.StructArray.from_arrays(
                            [pa.array([None if i % 5 == 0 else str(i) for i in range(n)]),
                             pa.array(range(n), pa.int32())], names=["a", "x"],
                            mask=pa.array([i % 7 == 0 for i in range(n)])),
                        "m": pa.array([None if i % 6 == 0 else [(f"k{i}", None if i % 2 else "v")] for i in range(n)],
                                      pa.map_(pa.string(), pa.string()))})
        part = big.to_batches()[0].slice(51, 37)
        rows = pa.Table.from_batches([part]).to_pylist()
        return pa.Table.from_batches([part]), [
            {"b": None, "n": None, "d": None, **r, "m": r["m"] if r["m"] is None else [tuple(e) for e in r["m"]]}
            for r in rows]
    if name == "2000 chunks, some empty":
        ids = pa.array(range(2000), pa.int64())
        strings = pa.array([None if i % 9 == 0 else f"s{i}" for i in range(2000)])
        batch = pa.record_batch([ids, strings], names=["id", "s"])
        chunks = [batch.slice(i, 1) for i in range(2000)]
        chunks[::100] = [batch.slice(0, 0)] * len(chunks[::100])  # every 100th row is replaced by an empty chunk
        table = pa.Table.from_batches(chunks)
        return table, [{"id": r["id"], "s": r["s"], "b": None, "n": None, "d": None, "l": None, "r": None, "m": None}
                       for r in table.to_pylist()]
    raise AssertionError(name)


SHAPE_NAMES = ["dictionaries differing per chunk, nested too", "dictionary of integers", "large_string",
               "string_view", "large_binary", "binary_view", "fixed_size_binary", "large_list", "fixed_size_list",
               "run-end encoded", "extension types (storage written)", "decimal256",
               "columns in another order, schema metadata, other nullable flags",
               "a slice of a bigger batch (null bitmaps at an offset)", "2000 chunks, some empty"]


def test_every_arrow_shape_reads_back_as_its_values_here_and_in_java(catalog):
    """Each shape into a primary-key table (4 buckets, deletion vectors, written twice: the
    second write's values win) and an append table; both read back as the plain values, by us
    and by Java."""
    tables = []
    for i, name in enumerate(SHAPE_NAMES):
        data, want = _shape(name)
        pk = catalog.create_table(f"db.pk{i}", SHAPES, primary_keys=["id"],
                                  options={"bucket": "4", "deletion-vectors.enabled": "true"})
        append = catalog.create_table(f"db.ap{i}", SHAPES)
        pk.write_arrow(pa.table({"id": data.column("id").cast(pa.int64()), "n": pa.array([-1] * len(data), pa.int64())}))
        pk.write_arrow(data)
        append.write_arrow(data)
        assert by_id(plain(pk.to_arrow())) == by_id(want), name
        assert by_id(plain(append.to_arrow())) == by_id(want), name
        tables.append((name, pk, append, want))
    with get_oracle().batch() as b:
        reads = [(name, b.read(pk.path), b.read(append.path), want) for name, pk, append, want in tables]
    for name, from_pk, from_append, want in reads:
        assert by_id(from_pk.result) == by_id(want), name
        assert by_id(from_append.result) == by_id(want), name


@pytest.mark.parametrize("column, arrow, match", [
    ("l", pa.list_view(pa.string()), r"column 'l' is an Arrow list_view.*pass it as a list"),
    ("n", pa.duration("s"), r"column 'n' of the input of table db.t: Arrow type duration\[s\] has no Paimon"),
    ("s", pa.month_day_nano_interval(), r"column 's' of the input.*month_day_nano_interval"),
])
def test_shapes_the_writer_cannot_take_are_refused_naming_the_column(catalog, column, arrow, match):
    t = catalog.create_table("db.t", SHAPES, primary_keys=["id"], options={"bucket": "1"})
    values = {"l": [["a"], None], "n": [1, None], "s": [None, None]}[column] if column != "s" else \
        pa.array([None, None], arrow)
    data = pa.table({"id": pa.array([1, 2], pa.int64()), column: pa.array(values, arrow)})
    with pytest.raises(UnsupportedTypeError, match=match):
        t.write_arrow(data)
    assert t.snapshots() == [] and data_files(t) == []


def test_types_paimon_lacks_are_written_as_the_values_they_hold(catalog):
    """Unsigned integers (polars' row index is UInt32, duckdb has UTINYINT..UBIGINT), half floats,
    date64, DECIMALs of more than 38 digits and extension types inside a ROW were refused ("no
    Paimon equivalent"); an int64 into DECIMAL(12, 2) was refused by Arrow's cast ("precision
    ... at least 21") while an int32 was taken; a DOUBLE beyond FLOAT's range was written as inf."""
    import datetime as dt
    import uuid
    schema = pa.schema([pa.field("id", pa.int64(), False), ("u", pa.int32()), ("h", pa.float32()), ("day", pa.date32()),
                        ("d", pa.decimal128(12, 2)), ("r", pa.struct([("k", pa.binary(16))]))])
    t = catalog.create_table("db.t", schema)
    key = uuid.UUID(int=7).bytes
    t.write_arrow(pa.table({"id": pa.array([1, 2], pa.uint64()), "u": pa.array([0, 2 ** 16 - 1], pa.uint16()),
                            "h": pa.array(np.array([1.5, -2], np.float16)),
                            "day": pa.array([dt.date(2024, 1, 1), None], pa.date64()),
                            "d": pa.array([decimal.Decimal("1.50"), 10 ** 9], pa.decimal256(40, 2)),
                            "r": pa.StructArray.from_arrays([pa.array([key, key], pa.uuid())], names=["k"])}))
    t.write_arrow(pa.table({"id": [3], "d": [10]}))  # int64 into DECIMAL(12, 2)
    assert sorted(t.to_arrow().to_pylist(), key=lambda r: r["id"]) == [
        {"id": 1, "u": 0, "h": 1.5, "day": dt.date(2024, 1, 1), "d": decimal.Decimal("1.50"), "r": {"k": key}},
        {"id": 2, "u": 65535, "h": -2.0, "day": None, "d": decimal.Decimal("1000000000.00"), "r": {"k": key}},
        {"id": 3, "u": None, "h": None, "day": None, "d": decimal.Decimal("10.00"), "r": None}]
    for column, values, match in (("id", pa.array([2 ** 63], pa.uint64()), r"column 'id' \(uint64\) holds a value beyond"),
                                  ("d", pa.array([10 ** 10]), r"column 'd' cannot be cast"),
                                  ("h", pa.array([1e39]), r"column 'h' holds 1e\+39, beyond the range of FLOAT")):
        with pytest.raises(SchemaMismatchError, match=match):
            t.write_arrow(pa.table({"id": [9], column: values}) if column != "id" else pa.table({"id": values}))
    assert t.to_arrow().num_rows == 3


def test_writes_take_what_deltalake_takes(catalog):
    """A RecordBatchReader, a list of batches, a pandas DataFrame or any object with the Arrow
    stream interface (polars, duckdb) failed with AttributeError: no attribute 'column_names'."""
    import pandas as pd
    t = catalog.create_table("db.t", pa.schema([("id", pa.int64()), ("v", pa.string())]))
    batch = pa.record_batch({"id": [1], "v": ["a"]})

    class Stream:  # what polars and duckdb hand over
        def __arrow_c_stream__(self, requested_schema=None):
            return pa.table({"id": [5], "v": ["e"]}).__arrow_c_stream__(requested_schema)

    t.write_arrow(pa.RecordBatchReader.from_batches(batch.schema, [batch]))
    t.write_arrow([batch, pa.record_batch({"id": [2], "v": ["b"]})])
    t.write_arrow(pd.DataFrame({"id": [3, 4], "v": ["c", "d"]}))
    t.write_arrow(Stream())
    assert sorted(t.to_arrow().column("id").to_pylist()) == [1, 1, 2, 3, 4, 5]
    with pytest.raises(TypeError, match="not dict"):
        t.write_arrow({"id": [1]})


def test_pandas_indexes_polars_categoricals_and_mixed_batches(catalog):
    """A pandas index named like a column was written when its values were not a range and
    stored as nulls when they were (pandas keeps a RangeIndex in metadata only); an unnamed
    index left by a filter failed on '__index_level_0__'; polars' categoricals (dictionaries of
    string views) and string-view row kinds were refused; a list of batches whose types or
    column order differ failed in Arrow's concat."""
    import pandas as pd
    t = catalog.create_table("db.t", pa.schema([pa.field("id", pa.int64(), False), ("v", pa.string())]),
                             primary_keys=["id"], options={"bucket": "1"})
    t.write_arrow(pd.DataFrame({"id": [1, 2, 3], "v": ["a", "b", "c"]}).set_index("id"))       # a RangeIndex
    t.write_arrow(pd.DataFrame({"id": [30, 10], "v": ["y", "x"]}).set_index("id"))            # not a range
    frame = pd.DataFrame({"id": [4, 5, 6], "v": ["d", "e", "f"]})
    t.write_arrow(frame[frame.id != 5])                                                        # index 0, 2
    view = pa.DictionaryArray.from_arrays(pa.array([0, 1], pa.uint32()), pa.array(["g", "h"], pa.string_view()))
    t.write_arrow(pa.table({"id": [7, 8], "v": view, "op": pa.array(["+I", "+I"], pa.string_view())}),
                  row_kind_column="op")
    t.write_arrow([pa.record_batch({"id": [9], "v": [None]}), pa.record_batch({"v": ["j"], "id": [11]})])
    assert {r["id"]: r["v"] for r in t.to_arrow().to_pylist()} == {
        1: "a", 2: "b", 3: "c", 10: "x", 30: "y", 4: "d", 6: "f", 7: "g", 8: "h", 9: None, 11: "j"}
    with pytest.raises(ValueError, match="empty list of batches"):
        t.write_arrow([])


def test_lists_of_batches_are_cast_batch_by_batch_and_index_levels_repeating_columns(catalog):
    """A list of batches was unified by Arrow before the checked cast: an INT32 batch beside a
    FLOAT one went in as FLOAT and 16777217 was rounded (alone it is refused); a categorical,
    zoned or unsigned batch beside a plain one failed in Arrow's merge. An index level
    repeating its column (`set_index("id", drop=False)`) failed in pandas."""
    import pandas as pd
    t = catalog.create_table("db.f", pa.schema([pa.field("id", pa.int64(), False), ("f", pa.float32()),
                                                ("v", pa.string()), ("ts", pa.timestamp("us")), ("u", pa.int64())]),
                             primary_keys=["id"], options={"bucket": "1"})
    plain = pa.table({"id": [2], "f": pa.array([0.5], pa.float32())})
    with pytest.raises(SchemaMismatchError, match="column 'f' cannot be cast from int32 to float"):
        t.write_arrow([pa.table({"id": [1], "f": pa.array([16777217], pa.int32())}), plain])
    with pytest.raises(SchemaMismatchError, match="column 'f' cannot be cast from int64 to float"):
        t.write_arrow([plain, pa.table({"id": [1], "f": pa.array([2**53 + 1], pa.int64())})])
    assert t.latest_snapshot() is None
    wall = dt.datetime(2020, 1, 1, 12)
    categorical = pa.Table.from_pandas(pd.DataFrame({"id": [3], "v": pd.Categorical(["c"])}), preserve_index=False)
    t.write_arrow([categorical, pa.table({"id": [4], "v": pa.array(["d"], pa.string_view())}),
                   pa.table({"id": [5], "ts": pa.array([wall], pa.timestamp("ms", tz="UTC")),
                             "u": pa.array([7], pa.uint64())}),
                   pa.table({"id": [6], "ts": pa.array([wall], pa.timestamp("us")), "u": pa.array([8], pa.int64())})])
    t.write_arrow(pd.DataFrame({"id": [7], "v": ["g"]}).set_index("id", drop=False))
    moved = pd.DataFrame({"id": [8], "v": ["h"]}).set_index("id", drop=False)
    moved.index = pd.Index([9], name="id")
    with pytest.raises(SchemaMismatchError, match="index level 'id' holds other values than its column"):
        t.write_arrow(moved)
    assert sorted((r["id"], r["v"], r["ts"], r["u"]) for r in t.to_arrow().to_pylist()) == [
        (3, "c", None, None), (4, "d", None, None), (5, None, wall, 7), (6, None, wall, 8), (7, "g", None, None)]


# ---- strings past 32-bit offsets --------------------------------------------------------------------
def _blob_rows(rows: int, size: int, large: bool, start: int = 0) -> pa.Table:
    """`rows` strings (and as many binaries) of `size` bytes, each distinct, in chunks of at most
    1000 rows (`large`: one large_string chunk, as a pipeline with 64-bit offsets hands it over)."""
    ids = np.arange(start, start + rows, dtype=np.int64)
    body = np.frombuffer(np.random.default_rng(rows).bytes(size // 2).hex().encode(), np.uint8)[:size]
    data = np.tile(body, rows).reshape(rows, size)
    data[:, :12] = np.frombuffer(np.char.zfill(ids.astype("U12"), 12).astype("S12").tobytes(), np.uint8).reshape(rows, 12)
    data = data.reshape(-1)
    offsets = np.arange(rows + 1, dtype=np.int64) * size
    if large:
        s = pa.chunked_array([pa.LargeStringArray.from_buffers(rows, pa.py_buffer(offsets), pa.py_buffer(data))])
    else:
        chunks = []
        for lo in range(0, rows, 1000):
            hi = min(rows, lo + 1000)
            chunks.append(pa.StringArray.from_buffers(hi - lo, pa.py_buffer((offsets[lo:hi + 1] - offsets[lo]).astype(np.int32)),
                                                      pa.py_buffer(data[offsets[lo]:offsets[hi]])))
        s = pa.chunked_array(chunks)
    return pa.table({"id": ids, "p": (ids % 2).astype(np.int32), "s": s, "b": s.cast(pa.large_binary() if large else pa.binary())})


BLOBS = pa.schema([("id", pa.int64(), False), ("p", pa.int32(), False), ("s", pa.string()), ("b", pa.binary())])
BLOB_TABLES = {"pk": {"bucket": "2"}, "dv": {"bucket": "2", "deletion-vectors.enabled": "true"},
               "append": {}}


def _check_blobs(t, want_ids: list[int], size: int, rows_of) -> None:
    got = t.to_arrow(columns=["id", "s", "b"])
    assert sorted(got.column("id").to_pylist()) == sorted(want_ids)
    lengths = pc.binary_length(got.column("s"))
    assert pc.all(pc.equal(lengths, size)).as_py() and pc.all(pc.equal(pc.binary_length(got.column("b")), size)).as_py()
    for i in (0, got.num_rows // 2, got.num_rows - 1):  # each value is its own (its id leads it)
        row_id, s, b = got.column("id")[i].as_py(), got.column("s")[i].as_py(), got.column("b")[i].as_py()
        assert s == rows_of(row_id) and b == s.encode()


@pytest.mark.parametrize("kind, large", [("pk", False), ("dv", True), ("append", True)])
def test_a_batch_of_strings_past_32_bit_offsets_is_written_whole(catalog, monkeypatch, kind, large):
    """A batch whose STRING column holds more than 2 GiB: its rows are regrouped by bucket and
    sorted into one array, which 32-bit offsets cannot hold (raw ArrowInvalid 'offset overflow',
    or 'input array too large' for a large_string column; nothing written). Such columns are
    now carried with 64-bit offsets through grouping, merging, compaction and stats, and files
    store plain strings. Here with the limit lowered to 64 KB (BIG_INPUT_FULL=1: the real one)."""
    monkeypatch.setattr(merge_engine, "OFFSET_LIMIT", 64 << 10)
    size, rows = 1000, 300
    t = catalog.create_table("db.t", BLOBS, primary_keys=None if kind == "append" else ["id", "p"],
                             partition_keys=["p"], options={**BLOB_TABLES[kind], "target-file-size": "32 kb"})
    first = _blob_rows(rows, size, large)
    t.write_arrow(first)
    again = _blob_rows(rows, size, large, start=rows // 2)  # half the keys again, half new
    t.write_arrow(again)
    text = {r: v for tb in (first, again) for r, v in zip(tb.column("id").to_pylist(), tb.column("s").to_pylist())}
    ids = list(range(rows + rows // 2)) if kind != "append" else \
        list(range(rows)) + list(range(rows // 2, rows + rows // 2))
    assert len(data_files(t)) > 10  # rolled into many files
    _check_blobs(t, ids, size, text.get)
    java = by_id(get_oracle().read(t.path, columns=["id", "s"]))
    assert [r["id"] for r in java] == sorted(ids) and all(r["s"] == text[r["id"]] for r in java)


def test_a_merge_on_read_of_a_bucket_past_32_bit_offsets_reads_as_plain_strings(catalog, monkeypatch):
    """A bucket whose uncompacted files hold more string bytes than 32-bit offsets reach is
    merged on read in 64-bit offsets and handed back as the table's plain string type, in
    pieces (the whole bucket cast back at once: 'input array too large')."""
    schema = pa.schema([("id", pa.int64(), False), ("s", pa.string()), ("b", pa.binary())])
    t = catalog.create_table("db.t", schema, primary_keys=["id"], options={"bucket": "1", "write-only": "true"})
    for i in range(3):
        t.write_arrow(pa.table({"id": pa.array(range(200), pa.int64()), "s": [f"v{i}-{k}-" + "x" * 500 for k in range(200)],
                                "b": [b"y" * 500] * 200}, schema=schema))
    monkeypatch.setattr(merge_engine, "OFFSET_LIMIT", 20_000)
    got = t.to_arrow()
    assert got.schema.field("s").type == pa.string()
    assert got.schema.field("b").type == pa.binary() and got.column("s").num_chunks > 1
    assert by_id(got.to_pylist()) == [{"id": k, "s": f"v2-{k}-" + "x" * 500, "b": b"y" * 500} for k in range(200)]


def test_widened_key_and_partition_columns_place_rows_where_narrow_ones_do(warehouse, monkeypatch):
    """String key and partition columns carried with 64-bit offsets hash to the same buckets,
    land in the same partitions, and merge the same (bloom-filter index, deletion vectors)."""
    import pyarrow.parquet as pq
    schema = pa.schema([("k", pa.string(), False), ("p", pa.string(), False), ("v", pa.binary())])
    data = pa.table({"k": [f"key-{i}-" + "z" * 300 for i in range(500)], "p": [f"p{i % 3}" + "q" * 200 for i in range(500)],
                     "v": [b"v" * 100] * 500}, schema=schema)

    def layout(name: str) -> tuple[dict, list]:
        t = ps.Catalog(warehouse).create_table(name, schema, primary_keys=["k", "p"], partition_keys=["p"], options={
            "bucket": "5", "deletion-vectors.enabled": "true", "file-index.bloom-filter.columns": "k",
            "target-file-size": "16 kb"})
        t.write_arrow(data)
        t.write_arrow(data.slice(100, 200))
        placed: dict[str, set] = {}
        for f in glob.glob(os.path.join(t.path, "p=*", "bucket-*", "data-*.parquet")):
            placed.setdefault(os.path.relpath(os.path.dirname(f), t.path), set()).update(
                pq.read_table(f, columns=["k"]).column("k").to_pylist())
        return placed, by_id(t.to_arrow().to_pylist(), "k")
    narrow = layout("db.narrow")
    monkeypatch.setattr(merge_engine, "OFFSET_LIMIT", 1000)
    assert layout("db.wide") == narrow


@pytest.mark.parametrize("kind", ["pk", "append"])
def test_a_real_batch_of_2_gib_of_strings(catalog, monkeypatch, kind):
    """BIG_INPUT_FULL=1: 2.2 GB in one batch into one bucket (peak RSS about 9.5 GB, 1.5 minutes
    for the primary-key table); else 22 MB with the offset limit lowered to 16 MB, same code."""
    size, rows = (1 << 20, 2200) if FULL else (10_000, 2200)
    if not FULL:
        monkeypatch.setattr(merge_engine, "OFFSET_LIMIT", 16 << 20)
    t = catalog.create_table("db.t", BLOBS, primary_keys=None if kind == "append" else ["id"],
                             options={"bucket": "1"} if kind == "pk" else {})  # one group of all the rows
    data = _blob_rows(rows, size, large=False)
    t.write_arrow(data.drop_columns(["b"]))
    print(f"peak RSS after a {data.column('s').nbytes >> 20} MiB write ({kind}): "
          f"{resource.getrusage(resource.RUSAGE_SELF).ru_maxrss >> 10} MiB")
    got = t.to_arrow(columns=["id", "s"])
    assert sorted(got.column("id").to_pylist()) == list(range(rows))
    assert pc.all(pc.equal(pc.binary_length(got.column("s")), size)).as_py()


# ---- through Spark -----------------------------------------------------------------------------------
SPARK_COLUMNS = int(os.environ.get("BIG_INPUT_SPARK_COLUMNS", "1000" if FULL else "60"))  # + id and `big`


def _spark_source(spark, update: bool):
    """300 keys (the update: every third, new values) in 24 input partitions, 8 of them empty,
    SPARK_COLUMNS columns of BIGINT / STRING / DOUBLE plus a few 3 MB strings."""
    exprs = ["id"]
    bump = "+ 1000" if update else ""
    for i in range(SPARK_COLUMNS):
        kind = i % 3
        if kind == 0:
            exprs.append(f"IF(id % {i + 2} = 0, NULL, id * {i} {bump}) AS c{i}")
        elif kind == 1:
            suffix = ", '-u'" if update else ""
            exprs.append(f"IF(id % {i + 3} = 1, NULL, concat('s{i}-', id{suffix})) AS c{i}")
        else:
            exprs.append(f"CAST(id AS DOUBLE) / {i} {bump} AS c{i}")
    exprs.append(f"IF(id % 100 = 7, repeat('{'y' if update else 'x'}', 3000000), concat('small', id)) AS big")
    df = spark.range(0, 400, 1, 24).where("id < 200 OR id >= 300")
    if update:
        df = df.where("id % 3 = 0")
    return df.selectExpr(*exprs)


SPARK_CASES = [("sink", "7"), ("sink-shuffle", "7"), ("format", "7"), ("format", "10000")] if FULL else \
    [("sink-shuffle", "7"), ("format", "7")]


@pytest.mark.parametrize("writer, records_per_batch", SPARK_CASES)
def test_wide_rows_huge_strings_many_and_empty_partitions_through_spark(spark, tmp_path, writer, records_per_batch):
    """Each writer, with tiny and default Arrow batches, stores exactly the DataFrame's rows
    (the update's win); spark.read, Table.to_arrow and Java read them back."""
    from test_spark_source import conf
    from paimon_streaming.sinks import paimon_sink
    path = str(tmp_path / "wh" / "db.db" / "wide")
    options = {"primary-key": "id", "bucket": "3", "deletion-vectors.enabled": "true", "target-file-size": "1 mb"}
    with conf(spark, "spark.sql.execution.arrow.maxRecordsPerBatch", records_per_batch):
        for batch_id, update in enumerate((False, True)):
            source = _spark_source(spark, update)
            if writer.startswith("sink"):
                paimon_sink(path, commit_user="wide", options=options,
                            shuffle=writer == "sink-shuffle")(source, batch_id)
            else:
                w = source.write.format("paimon").mode("append")
                for k, v in options.items():
                    w = w.option(k, v)
                w.save(path)
        want = {r["id"]: r for r in _spark_source(spark, False).toArrow().to_pylist()}
        want.update({r["id"]: r for r in _spark_source(spark, True).toArrow().to_pylist()})
        want = [want[k] for k in sorted(want)]
        got = spark.read.format("paimon").load(path).toArrow()
    t = ps.Table.open(path)
    assert len(want) == 300 and len(t.schema.fields) == SPARK_COLUMNS + 2
    assert by_id(got.to_pylist()) == want
    assert by_id(t.to_arrow().to_pylist()) == want
    assert by_id(get_oracle().read(path)) == want


@pytest.mark.parametrize("writer", ["sink", "format"])
def test_a_spark_struct_under_other_field_names_is_refused_through_spark(spark, catalog, writer):
    """`struct(x, y)` into a ROW<a, b> column (Spark names a struct's fields after its columns):
    refused naming the fields, nothing committed (the values were stored as nulls)."""
    from paimon_streaming.sinks import paimon_sink
    t = catalog.create_table("db.t", STRUCTS, primary_keys=["id"], options={"bucket": "1"})
    df = spark.range(3).selectExpr("id", "named_struct('x', CAST(id AS INT), 'y', 1) AS r")
    with pytest.raises(Exception, match=r"field\(s\) \['x', 'y'\].*matched by name"):
        if writer == "sink":
            paimon_sink(t.path, commit_user="s")(df, 0)
        else:
            df.write.format("paimon").mode("append").save(t.path)
    assert t.snapshots() == [] and data_files(t) == []


# ---- sizes: wide, deep, long keys, tiny files, empty and all-null batches ------------------------------
def _wide(columns: int) -> tuple[pa.Schema, pa.Table]:
    cols = {"id": pa.array(range(40), pa.int64())}
    for i in range(columns):
        cols[f"c{i}"] = pa.array([None if (j + i) % 7 == 0 else j * i for j in range(40)], pa.int64()) if i % 2 else \
            pa.array([None if (j + i) % 5 == 0 else f"s{i}-{j}" for j in range(40)])
    data = pa.table(cols)
    schema = pa.schema([pa.field("id", pa.int64(), False)] + list(data.schema)[1:])
    return schema, data.cast(schema)


def _deep(levels: int) -> tuple[pa.Schema, pa.Table]:
    """ROW and ARRAY nested alternately `levels` deep, an INT at the bottom."""
    typ = pa.int32()
    for i in range(levels):
        typ = pa.struct([("a", typ), ("b", pa.string())]) if i % 2 == 0 else pa.list_(typ)

    def value(j: int, depth: int):
        if depth == 0:
            return j
        inner = value(j, depth - 1)
        return {"a": inner, "b": f"{depth}-{j}"} if (depth - 1) % 2 == 0 else ([inner] if j else [])
    schema = pa.schema([pa.field("id", pa.int64(), False), pa.field("d", typ)])
    return schema, pa.table({"id": pa.array(range(3), pa.int64()), "d": pa.array([value(j, levels) for j in range(3)], typ)})


def test_wide_deep_long_keyed_tiny_filed_empty_and_null_batches_read_back_here_and_in_java(catalog):
    """1000 columns (FULL: 2000) into a primary-key and an append table; ROW/ARRAY nesting 30
    deep; 10 KB string keys upserted in a deletion-vector table; a table whose 1 KB
    `target-file-size` rolls each batch into dozens of files holding the same keys (with
    deletion vectors, partial-update, first-row); batches of 0 rows, of 1 row, and with all-null
    columns (typed and of Arrow type null). Each read equals the model, ours and Java's."""
    checks = []  # (table, expected rows, key)
    columns = 2000 if FULL else 1000
    schema, data = _wide(columns)
    for pk in (True, False):
        t = catalog.create_table(f"db.wide_{pk}", schema, primary_keys=["id"] if pk else None,
                                 options={"bucket": "2"} if pk else {})
        t.write_arrow(data)
        checks.append((t, data.to_pylist(), "id"))

    schema, data = _deep(30)
    t = catalog.create_table("db.deep", schema, primary_keys=["id"], options={"bucket": "1"})
    t.write_arrow(data)
    checks.append((t, data.to_pylist(), "id"))

    keyed = pa.schema([("k", pa.string(), False), ("v", pa.int64())])
    t = catalog.create_table("db.long_keys", keyed, primary_keys=["k"],
                             options={"bucket": "3", "deletion-vectors.enabled": "true"})
    keys = [f"{i:05d}" * 2000 for i in range(100)]
    t.write_arrow(pa.table({"k": keys, "v": list(range(100))}, schema=keyed))
    t.write_arrow(pa.table({"k": keys[::2], "v": [-1] * 50}, schema=keyed))
    checks.append((t, [{"k": k, "v": -1 if i % 2 == 0 else i} for i, k in enumerate(keys)], "k"))

    rng = np.random.default_rng(7)
    tiny = pa.schema([("id", pa.int64(), False), ("v", pa.string()), ("n", pa.int64())])
    for engine, extra in [("deduplicate", {"deletion-vectors.enabled": "true"}), ("partial-update", {}),
                          ("first-row", {})]:
        t = catalog.create_table(f"db.tiny_{engine.replace('-', '_')}", tiny, primary_keys=["id"],
                                 options={"bucket": "2", "target-file-size": "1 kb", "merge-engine": engine, **extra})
        model: dict[int, dict] = {}
        for b in range(3):
            ids = rng.integers(0, 300, 2000)
            values = [None if rng.random() < 0.1 else f"v{b}-{i}" for i in range(2000)]
            t.write_arrow(pa.table({"id": ids, "v": values, "n": np.full(2000, b)}, schema=tiny))
            for k, v in zip(ids.tolist(), values):
                old = model.get(k)
                if engine == "first-row" and old is not None:
                    continue
                if engine == "partial-update" and old is not None and v is None:
                    v = old["v"]
                model[k] = {"id": k, "v": v, "n": b}
        assert len(data_files(t)) > 30, engine
        checks.append((t, list(model.values()), "id"))

    t = catalog.create_table("db.edges", STRUCTS, primary_keys=["id"], options={"bucket": "2"})
    assert t.write_arrow(STRUCTS.empty_table()) is None and t.snapshots() == []
    t.write_arrow(pa.RecordBatch.from_pylist([{"id": 1}], schema=pa.schema([STRUCTS.field("id")])))
    t.write_arrow(pa.table({"id": pa.array([2, 3], pa.int64()), "r": pa.nulls(2), "l": pa.nulls(2, STRUCTS.field("l").type),
                            "m": pa.nulls(2)}))
    checks.append((t, [{"id": i, "r": None, "l": None, "m": None} for i in (1, 2, 3)], "id"))

    for t, want, key in checks:
        assert by_id(plain(t.to_arrow()), key) == by_id(want, key), t.name
    with get_oracle().batch() as b:
        reads = [(t.name, b.read(t.path), want, key) for t, want, key in checks]
    for name, got, want, key in reads:
        assert by_id(got.result, key) == by_id(want, key), name


def test_a_single_huge_value_round_trips(catalog):
    """One string and one binary of 8 MB (FULL: 100 MB, about 1.8 GB of memory at peak)."""
    size = (100 if FULL else 8) << 20
    schema = pa.schema([("id", pa.int64(), False), ("s", pa.string()), ("b", pa.binary())])
    t = catalog.create_table("db.h", schema, primary_keys=["id"], options={"bucket": "1"})
    big = "ab" * (size // 2)
    t.write_arrow(pa.table({"id": [1, 2], "s": [big, "x"], "b": [b"\x00\xff" * (size // 2), None]}, schema=schema))
    got = by_id(t.to_arrow().to_pylist())
    assert got[0]["s"] == big and got[0]["b"] == b"\x00\xff" * (size // 2) and got[1] == {"id": 2, "s": "x", "b": None}
    if FULL:
        print(f"peak RSS after a {size >> 20} MB value: {resource.getrusage(resource.RUSAGE_SELF).ru_maxrss >> 10} MiB")
    java = by_id(get_oracle().read(t.path, columns=["id", "s"]))
    assert java[0]["s"] == big and java[1]["s"] == "x"
