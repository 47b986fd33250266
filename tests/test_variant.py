"""VARIANT columns: the Parquet Variant encoding (paimon_streaming/variant.py) against Java's
and Spark's, tables holding variants written and read by us, Apache Paimon 1.4.2 and Spark 4,
and the refusals (keys, formats, nesting, malformed bytes, shredded files)."""
from __future__ import annotations

import datetime as dt
import json
import os
from decimal import Decimal

import pyarrow as pa
import pytest

import paimon_streaming as ps
from paimon_streaming import variant
from paimon_streaming.catalog import create_table_at, load_table
from paimon_streaming.errors import (InvalidOptionError, SchemaMismatchError, UnsupportedOperationError,
                                     UnsupportedTypeError)
from paimon_streaming.types import VARIANT_ARROW
from paimon_streaming.variant import MalformedVariantError
from conftest import rows_by
from pypaimon_oracle import pypaimon_read

try:
    from java_oracle import get_oracle
except ImportError:  # pragma: no cover
    from tests.java_oracle import get_oracle

DOCS = [
    '{"user":{"id":1001,"name":"ann"},"tags":["a","b"],"active":true,"score":9.5}',
    None,
    "3", "-129", "40000", "3000000000", "12345678901234567890", "1e3", "-0.001", "2.50",
    "-1234567890123456789012345678901234.5678",
    '"' + "long string " * 10 + '"', '"é"', "[]", "{}", "null", "false",
    '{"wide":' + json.dumps({f"k{i:03}": i for i in range(300)}) + "}",
    '{"many":' + json.dumps(list(range(300))) + "}",
]
SCHEMA = pa.schema([pa.field("id", pa.int64(), False), pa.field("payload", VARIANT_ARROW)])


def parsed(text):
    return None if text is None else json.loads(text, parse_float=Decimal)


def test_codec_round_trip_and_narrowest_encodings():
    arr = variant.from_json(DOCS)
    assert [parsed(t) for t in variant.to_json(arr).to_pylist()] == [parsed(t) for t in DOCS]
    values = arr.field("value").to_pylist()
    # integers in 1/2/4/8 bytes, then a decimal; a number with an exponent is a double
    assert [values[i][0] >> 2 for i in (2, 3, 4, 5, 6, 7, 10)] == [3, 4, 5, 6, 10, 7, 10]
    assert variant.to_python(arr)[10] == Decimal("-1234567890123456789012345678901234.5678")  # 38 digits, exact
    wider = "123456789012345678901234567890123456789"  # 39 digits: a double, as in Spark
    assert variant.to_python(variant.from_json([wider])) == [float(wider)]
    assert variant.to_python(arr)[9] == Decimal("2.50")  # the decimal keeps its scale
    assert variant.to_json(arr)[9].as_py() == "2.5"      # printed as Spark and Java print it
    assert variant.to_python(arr)[1] is None and not arr[1].is_valid
    py = variant.to_python(arr)[0]
    assert py == {"active": True, "score": Decimal("9.5"), "tags": ["a", "b"], "user": {"id": 1001, "name": "ann"}}
    # Python values beyond JSON: bytes, dates, timestamps
    value, metadata = variant.encode({"b": b"\x00\x01", "d": dt.date(2026, 11, 29),
                                      "t": dt.datetime(2026, 11, 29, 12, 0, tzinfo=dt.timezone.utc),
                                      "n": dt.datetime(2026, 11, 29, 12, 0)})
    assert variant.decode(value, metadata) == {"b": b"\x00\x01", "d": dt.date(2026, 11, 29),
                                               "n": dt.datetime(2026, 11, 29, 12, 0),
                                               "t": dt.datetime(2026, 11, 29, 12, 0, tzinfo=dt.timezone.utc)}


def test_codec_refuses_what_is_not_a_variant():
    with pytest.raises(MalformedVariantError, match="document 1 is no variant's JSON"):
        variant.from_json(["{}", "{oops"])
    # a key twice in one object: refused, as Spark's parse_json and Java's fromJson refuse it
    with pytest.raises(MalformedVariantError, match=r"document 2 .*the key 'c' is given twice"):
        variant.from_json(['{"c":1}', '[{"c":1},{"c":2}]', '{"a":{"c":1,"b":0,"c":2}}'])
    with pytest.raises(MalformedVariantError, match="NaN"):
        variant.from_json(["NaN"])
    with pytest.raises(MalformedVariantError, match="malformed variant"):
        variant.decode(b"\x02\x05", b"\x01\x00\x00")  # an object whose header promises more bytes
    with pytest.raises(MalformedVariantError, match="metadata version 2"):
        variant.decode(b"\x0c\x01", b"\x02\x00\x00")


def test_table_round_trip_updates_and_malformed_writes(tmp_path):
    """Variants written and updated read back as written (also by pypaimon); malformed ones
    commit nothing."""
    t = ps.Catalog(str(tmp_path)).create_table("db.t", SCHEMA, primary_keys=["id"],
                                               options={"bucket": "2", "deletion-vectors.enabled": "true"})
    t.write_arrow(pa.table({"id": range(len(DOCS)), "payload": variant.from_json(DOCS)}, schema=SCHEMA))
    t.write_arrow(pa.table({"id": [0, 1], "payload": variant.from_json(['{"v":2}', '"now set"'])}, schema=SCHEMA))
    want = [parsed(d) for d in DOCS]
    want[0], want[1] = {"v": 2}, "now set"
    read = t.to_arrow().sort_by("id")
    assert read.schema.field("payload").type.field("metadata").metadata == {b"variant": b"true"}
    assert [parsed(x) for x in variant.to_json(read.column("payload")).to_pylist()] == want
    # an untagged struct of the two parts is a variant too (pandas and casts drop the tag)
    untagged = pa.struct([pa.field("value", pa.binary()), pa.field("metadata", pa.binary())])
    parts = variant.from_json(['{"v":3}']).cast(untagged)
    t.write_arrow(pa.table({"id": [2], "payload": parts}))
    assert variant.to_python(t.to_arrow().sort_by("id").column("payload"))[2] == {"v": 3}
    by_pypaimon = pypaimon_read(str(tmp_path), "db.t").sort_by("id")
    assert variant.to_python(by_pypaimon["payload"]) == variant.to_python(t.to_arrow().sort_by("id")["payload"])
    # null variants however they come: a missing column, Arrow's null type, an untagged struct
    # whose parts are null too, a null ROW around a variant
    t.write_arrow(pa.table({"id": [20]}))
    t.write_arrow(pa.table({"id": [21], "payload": pa.nulls(1)}))
    t.write_arrow(pa.table({"id": [22, 23], "payload": pa.array([None, {"value": b"\x0c\x01", "metadata": b"\x01\x00\x00"}],
                                                              untagged)}))
    assert variant.to_python(t.to_arrow(filter=[("id", ">=", 20)]).sort_by("id")["payload"]) == [None, None, None, 1]
    snapshots = t.latest_snapshot().id
    no_metadata = pa.StructArray.from_arrays([pa.array([b"\x0c\x01"]), pa.array([b""])], fields=list(VARIANT_ARROW))
    with pytest.raises(MalformedVariantError, match="'payload': row 0 has no variant metadata"):
        t.write_arrow(pa.table({"id": [5], "payload": no_metadata}))
    wrong_version = pa.StructArray.from_arrays([pa.array([b"\x0c\x01", b"\x0c\x01"]), pa.array([b"\x01\x00\x00", b"\x07\x00\x00"])],
                                               fields=list(VARIANT_ARROW))
    with pytest.raises(MalformedVariantError, match="row 1's metadata is of version 7"):
        t.write_arrow(pa.table({"id": [5, 6], "payload": wrong_version}))
    assert t.latest_snapshot().id == snapshots  # nothing committed
    assert t.to_arrow(filter=[("payload", "is null")]).num_rows == 3  # rows 20-22
    with pytest.raises(SchemaMismatchError, match="'payload' is of type VARIANT: its values do not compare"):
        t.to_arrow(filter=[("payload", "=", 1)])


def test_where_a_table_may_hold_variants(tmp_path):
    def create(name, schema=SCHEMA, **kw):
        return create_table_at(str(tmp_path / name), schema, **kw)

    with pytest.raises(InvalidOptionError, match="primary key column 'payload'"):
        create("pk", primary_keys=["id", "payload"])
    with pytest.raises(InvalidOptionError, match=r"column\(s\) \['payload'\] holding a VARIANT cannot be partition"):
        create("part", partition_keys=["payload"])
    with pytest.raises(InvalidOptionError, match="cannot be partition, bucket or sequence"):
        create("bucket", options={"bucket": "2", "bucket-key": "payload"})
    with pytest.raises(InvalidOptionError, match="need Parquet data files.*file.format=orc"):
        create("orc", options={"file.format": "orc"})
    with pytest.raises(InvalidOptionError, match="file.format.per.level=0:avro"):
        create("avro", options={"file.format.per.level": "0:avro"})
    create("quoted", options={"file.format.per.level": "'0:PARQUET', 1 : parquet"})  # as Java reads the map
    keyed = pa.schema([pa.field("id", pa.int64()), pa.field("m", pa.map_(pa.string(), pa.list_(VARIANT_ARROW)))])
    create("map-values", keyed)  # variants as map values are fine, as map keys not
    with pytest.raises(UnsupportedTypeError, match="holds a VARIANT as a MAP key"):
        create("map-keys", pa.schema([pa.field("m", pa.map_(pa.struct([pa.field("k", VARIANT_ARROW, False)]), pa.int32()))]))
    t = create("ok", pa.schema([pa.field("id", pa.int64(), False), pa.field("s", pa.string())]), primary_keys=["id"],
               options={"bucket": "1"})
    t.write_arrow(pa.table({"id": [1], "s": ["x"]}, schema=t.schema.arrow_schema()))
    with t.update_schema() as update:  # a VARIANT column added later reads as null in older files
        update.add_column("payload", "VARIANT")
    t.write_arrow(pa.table({"id": [2], "payload": variant.from_json(['{"a":1}'])}))
    assert variant.to_python(t.to_arrow().sort_by("id").column("payload")) == [None, {"a": 1}]
    with pytest.raises(SchemaMismatchError, match="STRING cannot be widened to VARIANT"):
        with t.update_schema() as update:
            update.update_column("s", "VARIANT")
    with pytest.raises(SchemaMismatchError, match="column 's' has type VARIANT which cannot be written to table type STRING"):
        t.write_arrow(pa.table({"id": [3], "s": variant.from_json(["1"])}))


def test_variants_inside_rows_arrays_and_maps(tmp_path):
    """Variants nested in ROW fields, ARRAY elements and MAP values, null ones too: written,
    read back, and read by Java as written; Java's nested variants read here."""
    nested = pa.schema([pa.field("id", pa.int64(), False),
                        pa.field("r", pa.struct([pa.field("v", VARIANT_ARROW), pa.field("x", pa.int32())])),
                        pa.field("a", pa.list_(VARIANT_ARROW)), pa.field("m", pa.map_(pa.string(), VARIANT_ARROW))])
    docs = variant.from_json(['{"k":1}', None, '[1,"x"]'])
    r = pa.StructArray.from_arrays([docs.cast(pa.struct([("value", pa.binary()), ("metadata", pa.binary())])),
                                    pa.array([1, 2, 3], pa.int32())], names=["v", "x"],
                                   mask=pa.array([False, False, True]))  # row 3's variant: under a null ROW
    a = pa.ListArray.from_arrays(pa.array([0, 2, 2, 3], pa.int32()), docs, mask=pa.array([False, True, False]))
    m = pa.MapArray.from_arrays(pa.array([0, 1, 2, 3], pa.int32()), pa.array(["p", "q", "r"]), docs)
    path = str(tmp_path / "nested")
    t = create_table_at(path, nested, primary_keys=["id"], options={"bucket": "1", "deletion-vectors.enabled": "true"})
    t.write_arrow(pa.table([pa.array([1, 2, 3]), r, a, m], schema=nested))
    got = t.to_arrow().sort_by("id").to_pylist()
    d0, d2 = variant.encode({"k": 1}), variant.encode([1, "x"])

    def v(pair):
        return None if pair is None else {"value": pair[0], "metadata": pair[1]}
    assert [(g["r"], g["a"], g["m"]) for g in got] == [
        ({"v": v(d0), "x": 1}, [v(d0), None], [("p", v(d0))]), ({"v": None, "x": 2}, None, [("q", None)]),
        (None, [v(d2)], [("r", v(d2))])]
    java = get_oracle()
    theirs = str(tmp_path / "theirs")
    fields = [{"name": "id", "type": "BIGINT NOT NULL"},
              {"name": "r", "type": {"type": "ROW", "fields": [{"id": 10, "name": "v", "type": "VARIANT"},
                                                               {"id": 11, "name": "x", "type": "INT"}]}},
              {"name": "a", "type": {"type": "ARRAY", "element": "VARIANT"}}]
    with java.batch() as b:
        read_ours = b.read(path)
        b.create_table(theirs, fields, primary_keys=["id"], options={"bucket": "1"})
    rows = {row["id"]: row for row in read_ours.result}
    assert parsed(rows[1]["r"]["v"]["json"]) == {"k": 1} and rows[1]["a"][1] is None and rows[3]["r"] is None
    assert parsed(rows[3]["a"][0]["json"]) == [1, "x"] and rows[2]["r"]["v"] is None
    java.write(theirs, [{"id": 1, "r": {"v": '{"k":1}', "x": 2}, "a": ["[1]", None, '"s"']},
                        {"id": 2, "r": None, "a": None}, {"id": 3, "r": {"v": None, "x": 1}, "a": []}])
    read = load_table(theirs).to_arrow().sort_by("id")
    assert [None if r is None else (variant.to_python(pa.array([r["v"]], VARIANT_ARROW)), r["x"])
            for r in read["r"].to_pylist()] == [([{"k": 1}], 2), None, ([None], 1)]
    assert [None if a is None else variant.to_python(pa.array(a, VARIANT_ARROW)) for a in read["a"].to_pylist()] == \
        [[[1], None, "s"], None, []]


def test_java_reads_our_variants_and_we_read_javas(tmp_path):
    """Apache Paimon 1.4.2 reads what we write (the same JSON as our to_json, after a compaction
    of its own too), and we read what it writes; its shredded files are refused by name."""
    java = get_oracle()
    ours, theirs, shredded = (str(tmp_path / n) for n in ("ours", "theirs", "shredded"))
    t = create_table_at(ours, SCHEMA, primary_keys=["id"], options={"bucket": "2", "deletion-vectors.enabled": "true"})
    t.write_arrow(pa.table({"id": range(len(DOCS)), "payload": variant.from_json(DOCS)}, schema=SCHEMA))
    t.write_arrow(pa.table({"id": [3], "payload": variant.from_json(['{"again":[1,{"x":null}]}'])}, schema=SCHEMA))
    want = {i: parsed(d) for i, d in enumerate(DOCS)}
    want[3] = {"again": [1, {"x": None}]}
    fields = [{"name": "id", "type": "BIGINT NOT NULL"}, {"name": "payload", "type": "VARIANT"}]
    with java.batch() as b:
        read_ours = b.read(ours)
        b.create_table(theirs, fields, primary_keys=["id"], options={"bucket": "2", "deletion-vectors.enabled": "true"})
        b.create_table(shredded, fields, primary_keys=["id"], options={
            "bucket": "1", "parquet.variant.shreddingSchema":
                '{"type":"ROW","fields":[{"name":"payload","type":{"type":"ROW","fields":'
                '[{"name":"user","type":{"type":"ROW","fields":[{"name":"id","type":"BIGINT"}]}}]}}]}'})
    rows = {r["id"]: r["payload"] for r in read_ours.result}
    assert {i: parsed(v and v["json"]) for i, v in rows.items()} == want
    ours_json = dict(zip(t.to_arrow()["id"].to_pylist(), variant.to_json(t.to_arrow()["payload"]).to_pylist()))
    assert {i: v and v["json"] for i, v in rows.items()} == ours_json  # the same text as Java's toJson
    with java.batch() as b:
        b.write(theirs, [{"id": i, "payload": d} for i, d in enumerate(DOCS)])
        b.write(theirs, [{"id": 0, "payload": {"value": b"\x0c\x07", "metadata": b"\x01\x00\x00"}}])
        b.write(shredded, [{"id": 1, "payload": DOCS[0]}])
        b.compact(ours)
    java_table = load_table(theirs).to_arrow().sort_by("id")
    want_theirs = [parsed(d) for d in DOCS]
    want_theirs[0] = 7
    assert [parsed(x) for x in variant.to_json(java_table["payload"]).to_pylist()] == want_theirs
    after = java.read(ours)  # Java compacted our table: still the same values
    assert {r["id"]: parsed(r["payload"] and r["payload"]["json"]) for r in after} == want
    assert rows_by(load_table(ours).to_arrow(columns=["id"]), "id") == [{"id": i} for i in range(len(DOCS))]
    with pytest.raises(UnsupportedOperationError, match=r"data file .*\.parquet: VARIANT column 'payload' is shredded"):
        load_table(shredded).to_arrow()


JAVA_TEXTS = [  # (value, Java's Variant.toJson() of it)
    (dt.datetime(2026, 11, 29, 12, 0, tzinfo=dt.timezone.utc), '"2026-11-29 12:00:00+00:00"'),
    (dt.datetime(2026, 11, 29, 12, 0, 0, 500000, tzinfo=dt.timezone.utc), '"2026-11-29 12:00:00.5+00:00"'),
    (dt.datetime(1969, 12, 31, 23, 59, 59, 123400), '"1969-12-31 23:59:59.1234"'),
    (dt.datetime(1, 1, 1), '"0001-01-01 00:00:00"'), (dt.date(1, 1, 1), '"0001-01-01"'),
    (1e10, "1.0E10"), (1e-5, "1.0E-5"), (123456789.0, "1.23456789E8"), (1e7, "1.0E7"), (9999999.0, "9999999.0"),
    (0.001, "0.001"), (0.0001, "1.0E-4"), (0.0015, "0.0015"), (100.0, "100.0"), (-0.0, "-0.0"), (-2.5e-7, "-2.5E-7"),
    (0.1 + 0.2, "0.30000000000000004"), (1e300, "1.0E300"), (5e-324, "4.9E-324"), (-1e-310, "-1.0E-310"),
    (float("nan"), '"NaN"'), (float("inf"), '"Infinity"'), (float("-inf"), '"-Infinity"'),
    (variant.Float32(1.1), "1.1"), (variant.Float32(3.4028235e38), "3.4028235E38"),
    (variant.Float32(1e-45), "1.4E-45"), (variant.Float32(1e-40), "1.0E-40"), (variant.Float32(16777216.0), "1.6777216E7"),
    (variant.Float32(0.001), "0.001"), (variant.Float32(1e-4), "1.0E-4"), (variant.Float32("nan"), '"NaN"'),
    ("a\x01b\x1f\n\t\"\\/\u2028é \\u001f", '"a\\u0001b\\u001F\\n\\t\\"\\\\/\u2028é \\\\u001f"'),
]


def test_to_json_prints_the_text_of_javas_toJson(tmp_path):
    """Timestamps, doubles, floats and escapes print as Apache Paimon 1.4.2's `Variant.toJson()`
    prints them (Spark's `to_json` is the same code): checked against Java's text, and over
    random bit patterns the same value with at most Java's digits (JDK 17's Double/Float.toString
    sometimes prints a digit or two more than the shortest, which JDK 19+ prints as we do)."""
    import numpy as np
    rng = np.random.default_rng(7)
    doubles = rng.integers(0, 2 ** 63, 1500, dtype=np.uint64).view(np.float64)
    floats = rng.integers(0, 2 ** 31, 1500, dtype=np.uint32).view(np.float32)
    randoms = [float(x) for x in doubles[np.isfinite(doubles)]] + [variant.Float32(x) for x in floats[np.isfinite(floats)]]
    values = [v for v, _ in JAVA_TEXTS] + randoms
    assert variant.to_python(variant.from_values([variant.Float32(1.1)])) == [np.float32(1.1)]  # kept as a FLOAT
    assert repr(variant.Float32(1.1)) == "1.1"
    t = create_table_at(str(tmp_path / "t"), SCHEMA, primary_keys=["id"], options={"bucket": "1"})
    t.write_arrow(pa.table({"id": range(len(values)), "payload": variant.from_values(values)}, schema=SCHEMA))
    javas = {r["id"]: r["payload"]["json"] for r in get_oracle().read(str(tmp_path / "t"))}
    ours = variant.to_json(variant.from_values(values)).to_pylist()
    assert ours[:len(JAVA_TEXTS)] == [text for _, text in JAVA_TEXTS]
    assert [javas[i] for i in range(len(JAVA_TEXTS))] == [text for _, text in JAVA_TEXTS]
    as_value = [(lambda s: np.float32(s)) if isinstance(v, variant.Float32) else float for v in randoms]
    differing = [(javas[i], ours[i], parse) for i, parse in zip(range(len(JAVA_TEXTS), len(values)), as_value)
                 if javas[i] != ours[i]]
    assert all(parse(j) == parse(o) and len(o) < len(j) for j, o, parse in differing)
    assert len(differing) < len(randoms) // 5


@pytest.mark.usefixtures("spark")
def test_spark_writes_and_reads_variants(spark, tmp_path):
    """Spark 4's VariantType through foreachBatch(paimon_sink) (driver and one task), the data
    source's write and batch and streaming reads: values as Spark's parse_json built them."""
    from paimon_streaming.sinks import paimon_sink
    path = str(tmp_path / "events")
    df = spark.sql("""select id, parse_json(j) as payload from values
        (1, '{"user":{"id":1001},"city":"Hangzhou","active":true}'), (2, null), (3, '2.50'), (4, '[1,"x"]')
        as t(id, j) union all select 9L, to_variant_object(named_struct(
          'big', 1e10d, 'small', 1e-5d, 'f', cast(1.1 as float), 'nan', cast('NaN' as double),
          't', timestamp'2026-11-29 12:00:00.5', 'n', timestamp_ntz'1969-12-31 23:59:59', 's', 'a\\u0001b'))""")
    paimon_sink(path, commit_user="u", options={"primary-key": "id", "bucket": "2",
                                                 "deletion-vectors.enabled": "true"})(df, 0)
    paimon_sink(path, commit_user="u", shuffle=False)(spark.sql(
        """select 5L as id, parse_json('{"in":"a task"}') as payload union all select 6L, null"""), 1)
    spark.sql("""select 7L as id, parse_json('{"by":"the data source"}') as payload union all select 8L, null"""
              ).write.format("paimon").mode("append").save(path)
    table = load_table(path)
    assert table.schema.field("payload").type.root == "VARIANT"
    ours = dict(zip(table.to_arrow()["id"].to_pylist(), variant.to_json(table.to_arrow()["payload"]).to_pylist()))
    read = spark.read.format("paimon").load(path)
    assert read.schema["payload"].dataType.typeName() == "variant"
    got = {r.id: (r.j, r.uid) for r in read.selectExpr(
        "id", "to_json(payload) as j", "variant_get(payload, '$.user.id', 'int') as uid").collect()}
    assert got == {1: ('{"active":true,"city":"Hangzhou","user":{"id":1001}}', 1001), 2: (None, None),
                   3: ("2.5", None), 4: ('[1,"x"]', None), 5: ('{"in":"a task"}', None), 6: (None, None),
                   7: ('{"by":"the data source"}', None), 8: (None, None),
                   9: ('{"big":1.0E10,"f":1.1,"n":"1969-12-31 23:59:59","nan":"NaN","s":"a\\u0001b",'
                       '"small":1.0E-5,"t":"2026-11-29 12:00:00.5+00:00"}', None)}
    assert ours == {k: j for k, (j, _) in got.items()}  # our to_json prints what Spark's does
    checkpoint = str(tmp_path / "checkpoint")
    query = (spark.readStream.format("paimon").load(path).selectExpr("id", "to_json(payload) as j")
             .writeStream.format("memory").queryName("variants").option("checkpointLocation", checkpoint)
             .trigger(availableNow=True).start())
    query.awaitTermination(120)
    assert {r.id: r.j for r in spark.sql("select * from variants").collect()} == {k: j for k, (j, _) in got.items()}
    assert os.listdir(checkpoint)


def test_spark_finds_every_field_of_bulk_encoded_variants(spark, tmp_path):
    """Spark (and Java) look a field up by binary search in objects of 32 fields or more, so an
    object must list its fields in their key order: `from_json`'s bulk encoder sorts them by
    UTF-8 bytes (code points), with keys beyond the BMP and past U+E000, where Java's UTF-16
    order differs, and nested objects sharing one sorted dictionary."""
    keys = [f"k{i:02d}" for i in range(36)] + ["\U0001F600", "\ue000", "\u00e9", "Z", ""]
    document = {k: i for i, k in enumerate(keys)}
    document["nested"] = {k: -i for i, k in enumerate(reversed(keys))}
    texts = [json.dumps(document, ensure_ascii=ensure_ascii) for ensure_ascii in (False, True)]
    path = str(tmp_path / "t")
    create_table_at(path, SCHEMA, primary_keys=["id"], options={"bucket": "1"}).write_arrow(
        pa.table({"id": [1, 2], "payload": variant.from_json(texts)}, schema=SCHEMA))
    read = spark.read.format("paimon").load(path).orderBy("id")
    lookups = [f"variant_get(payload, '$[\"{k}\"]', 'int')" for k in keys]
    nested = [f"variant_get(payload, '$.nested[\"{k}\"]', 'int')" for k in keys]
    for row in read.selectExpr(*lookups, *nested, "to_json(payload) = to_json(parse_json(" + repr(texts[0]) + "))").collect():
        assert list(row)[:len(keys)] == list(range(len(keys)))
        assert list(row)[len(keys):2 * len(keys)] == [-i for i in reversed(range(len(keys)))]
        assert row[-1] is True


def test_ingest_fills_variant_columns_from_json_records(spark, broker, tmp_path):
    """`paimon-streaming ingest --variant-column payload`: a new table gets `payload` as VARIANT
    (its shapes vary, which inference could not type), each record's field JSON becomes a
    variant (absent or null: a null variant); only JSON records may fill one, and an existing
    table's column must be VARIANT."""
    from kafka_broker import unique_topic
    from paimon_streaming.sinks.decoders import DecodeError, Decoder
    from paimon_streaming.sinks.ingest import IngestConfig, run_ingest
    schema = pa.schema([pa.field("id", pa.int64(), False), pa.field("payload", VARIANT_ARROW), pa.field("n", pa.int32())])
    with pytest.raises(DecodeError, match=r"VARIANT column\(s\) \['payload'\] are filled from JSON records"):
        Decoder("avro", schema, avro_schema='{"type":"record","name":"r","fields":[]}')
    with pytest.raises(InvalidOptionError, match="--variant-column takes fields of JSON records"):
        IngestConfig(bootstrap_servers="unused", warehouse="unused", table="db.t", format="csv",
                     variant_columns=("payload",))
    warehouse = str(tmp_path / "wh")
    topic = unique_topic("variant")
    broker.create_topic(topic, partitions=1)
    messages = [(b"1", b'{"id":1,"payload":{"user":{"id":1001},"tags":["a"],"score":9.5},"n":1}'),
                (b"2", b'{"id":2,"n":2}'), (b"3", b'{"id":3,"payload":null}'), (b"4", b'{"id":4,"payload":[1,"x",2.50]}'),
                (b"1", b'{"id":1,"payload":"replaced","n":5}'), (b"5", b'{"id":5,"payload":{"k":[1,"x"]},"city":"Hangzhou"}')]
    producer = broker.producer()
    for key, value in messages:
        producer.send(topic, key=key, value=value)
    producer.flush()
    producer.close()
    lines: list[str] = []
    cfg = IngestConfig(bootstrap_servers=broker.bootstrap, warehouse=warehouse, table="db.events", topics=(topic,),
                       primary_keys=("id",), bucket=2, table_options={"deletion-vectors.enabled": "true"},
                       variant_columns=("payload",), trigger="available-now", checkpoint=str(tmp_path / "ckpt"))
    assert run_ingest(spark, cfg, lines.append) == 0, lines
    table = ps.Catalog(warehouse).get_table("db.events")
    assert {f.name: str(f.type) for f in table.schema.fields} == {"id": "BIGINT NOT NULL", "n": "BIGINT",
                                                                 "city": "STRING", "payload": "VARIANT"}
    rows = table.to_arrow().sort_by("id")
    assert rows["id"].to_pylist() == [1, 2, 3, 4, 5] and rows["n"].to_pylist() == [5, 2, None, None, None]
    assert variant.to_json(rows["payload"]).to_pylist() == ['"replaced"', None, None, '[1,"x",2.5]', '{"k":[1,"x"]}']
    assert rows["city"].to_pylist() == [None, None, None, None, "Hangzhou"]
    with pytest.raises(InvalidOptionError, match=r"names VARIANT columns of table db.events: n \(BIGINT\)"):
        run_ingest(spark, IngestConfig(bootstrap_servers=broker.bootstrap, warehouse=warehouse, table="db.events",
                                       topics=(topic,), variant_columns=("n",), trigger="available-now"), lines.append)


@pytest.mark.usefixtures("spark")
def test_spark_writes_and_reads_nested_variants(spark, tmp_path):
    """A struct and an array of VariantType, null variants among them, through the sink's driver
    path and the data source, read back by Spark."""
    from paimon_streaming.sinks import paimon_sink
    path = str(tmp_path / "nested")
    df = spark.sql("""select id, named_struct('v', parse_json(j), 'x', id) as r, array(parse_json(j), null) as a
        from values (1L, '{"a":1}'), (2L, null) as t(id, j)""")
    paimon_sink(path, commit_user="u", options={"primary-key": "id", "bucket": "1"})(df, 0)
    spark.sql("""select 3L as id, named_struct('v', parse_json('[3]'), 'x', 3L) as r, array(parse_json('true')) as a"""
              ).write.format("paimon").mode("append").save(path)
    got = {row.id: (row.rv, row.a0, row.a1) for row in spark.read.format("paimon").load(path).selectExpr(
        "id", "to_json(r.v) as rv", "to_json(get(a, 0)) as a0", "to_json(get(a, 1)) as a1").collect()}
    assert got == {1: ('{"a":1}', '{"a":1}', None), 2: (None, None, None), 3: ("[3]", "true", None)}
    assert load_table(path).schema.field("r").type.fields[0].type.root == "VARIANT"


def test_decoder_with_a_variant_column_reports_new_fields():
    """The JSON decoder of a table with a VARIANT column: variants of any shape, and fields the
    table lacks reported typed as pyarrow infers them (schema evolution), as without one."""
    from paimon_streaming.sinks.decoders import DecodeError, Decoder
    schema = pa.schema([pa.field("id", pa.int64(), False), pa.field("payload", VARIANT_ARROW)])
    values = [b'{"id":1,"payload":[1,"x"],"extra":{"q":1.5},"m":"s"}', b'{"id":2,"payload":{"a":[1,"x"]}}']
    records = pa.RecordBatch.from_pydict({
        "key": pa.array([b"1", b"2"]), "value": pa.array(values), "topic": ["t", "t"],
        "partition": pa.array([0, 0], pa.int32()), "offset": pa.array([0, 1], pa.int64())})
    decoded = Decoder("json", schema, ("id",)).decode_all(records)
    assert variant.to_python(decoded.rows.column("payload")) == [[1, "x"], {"a": [1, "x"]}]
    assert {f.name: f.type for f in decoded.new_fields} == {"extra": pa.struct([("q", pa.float64())]), "m": pa.string()}
    # a key twice in a variant's object: the record is refused (set aside with --on-error skip), as
    # pyarrow refuses one elsewhere in a record, and Spark's parse_json in a variant
    twice = pa.RecordBatch.from_pydict({
        "key": pa.array([b"1", b"2"]), "value": pa.array([values[0], b'{"id":2,"payload":{"a":1,"a":2}}']),
        "topic": ["t", "t"], "partition": pa.array([0, 0], pa.int32()), "offset": pa.array([0, 1], pa.int64())})
    with pytest.raises(DecodeError, match=r"record topic=t partition=0 offset=1 .*the key 'a' is given twice"):
        Decoder("json", schema, ("id",)).decode_all(twice)
    skipped = Decoder("json", schema, ("id",), on_error="skip").decode_all(twice)
    assert skipped.rows.column("id").to_pylist() == [1] and skipped.rejected.num_rows == 1


def test_ingest_command_passes_variant_columns(monkeypatch):
    """`paimon-streaming ingest --variant-column` reaches the job's configuration."""
    from paimon_streaming.cli import main
    from paimon_streaming.sinks import ingest, ingest_command
    seen = []

    class Session:
        def stop(self):
            pass
    monkeypatch.setattr(ingest_command, "spark_session", lambda *a: Session())
    monkeypatch.setattr(ingest, "run_ingest", lambda spark, cfg, *a: seen.append(cfg) or 0)
    assert main(["ingest", "--bootstrap-servers", "127.0.0.1:1", "--topic", "t", "--warehouse", "/unused",
                 "--table", "db.t", "--variant-column", "payload", "--variant-column", "attrs", "--no-progress"]) == 0
    assert seen[0].variant_columns == ("payload", "attrs")


def test_python_values_encode_by_their_base_type_and_print_as_json():
    """`from_values` takes subclasses by their base type (IntEnum, str and dict subclasses),
    floats as doubles, Decimals exactly (refused beyond 38 digits), and refuses what no variant
    holds (naming it); `to_json` prints bytes as base64 and dates in ISO 8601."""
    import base64
    import collections
    import enum

    class Level(enum.IntEnum):
        HIGH = 3

    class Name(str):
        pass
    docs = [Level.HIGH, Name("x"), collections.OrderedDict(b=1, a=[0.5]), 0.1, Decimal("-12.340"),
            b"\x00\xff", dt.date(2024, 2, 29), {"k": Decimal(10) ** 30}]
    arr = variant.from_values(docs)
    assert variant.to_python(arr) == [3, "x", {"b": 1, "a": [0.5]}, 0.1, Decimal("-12.340"), b"\x00\xff",
                                      dt.date(2024, 2, 29), {"k": Decimal(10) ** 30}]
    assert type(variant.to_python(arr)[3]) is float
    assert variant.to_json(arr).to_pylist() == [
        "3", '"x"', '{"a":[0.5],"b":1}', "0.1", "-12.34", json.dumps(base64.b64encode(b"\x00\xff").decode()),
        '"2024-02-29"', '{"k":' + "1" + "0" * 30 + "}"]
    import numpy as np  # numpy's numbers by value; a float32 stays a FLOAT
    assert variant.to_json(variant.from_values([[np.int64(2 ** 40), np.int8(-3), np.bool_(True), np.float64(0.5),
                                                 np.float32(1.1)]])).to_pylist() == ["[1099511627776,-3,true,0.5,1.1]"]
    with pytest.raises(MalformedVariantError, match="cannot hold datetime64"):
        variant.from_values([np.datetime64(1, "ns")])
    with pytest.raises(MalformedVariantError, match="more than 38 digits"):
        variant.from_values([Decimal(10) ** 40 + 1])
    with pytest.raises(MalformedVariantError, match="variant object keys are strings, not 1"):
        variant.from_values([{1: "a"}])
    with pytest.raises(MalformedVariantError, match=r"variant object keys are strings, not \[1, 'b'\]"):
        variant.from_values([{1: "a", "b": 2}])  # (was a bare TypeError from sorting them)
    with pytest.raises(MalformedVariantError, match="a variant cannot hold set"):
        variant.from_values([{"k": {1, 2}}])


def test_large_variants_use_three_byte_offsets():
    """An object whose values pass 64 KiB, and a dictionary of more than 64 KiB of key bytes:
    three-byte offsets, read back whole (as Spark reads them)."""
    big = "x" * 70_000
    keys = {f"key-{i:05d}-" + "k" * 20: i for i in range(3000)}
    arr = variant.from_values([{"a": big, "b": [big, 1]}, keys])
    assert variant.to_python(arr) == [{"a": big, "b": [big, 1]}, keys]


_UTC = dt.timezone.utc


@pytest.mark.parametrize("type_id, payload, want, text", [
    (17, (45296789000).to_bytes(8, "little"), dt.time(12, 34, 56, 789000), '"12:34:56.789"'),
    (20, bytes(range(16)), "00010203-0405-0607-0809-0a0b0c0d0e0f", '"00010203-0405-0607-0809-0a0b0c0d0e0f"'),
    (18, (1_764_417_600_123_456_789).to_bytes(8, "little"),
     variant.TimestampNanos(2025, 11, 29, 12, 0, 0, 123456, _UTC, nanosecond=789), '"2025-11-29 12:00:00.123456789+00:00"'),
    (19, (-1).to_bytes(8, "little", signed=True),
     variant.TimestampNanos(1969, 12, 31, 23, 59, 59, 999999, nanosecond=999), '"1969-12-31 23:59:59.999999999"'),
    (19, (1_500).to_bytes(8, "little"), variant.TimestampNanos(1970, 1, 1, 0, 0, 0, 1, nanosecond=500),
     '"1970-01-01 00:00:00.0000015"'),
    (18, (-1_000).to_bytes(8, "little", signed=True),
     variant.TimestampNanos(1969, 12, 31, 23, 59, 59, 999999, _UTC), '"1969-12-31 23:59:59.999999+00:00"'),
])
def test_variant_time_uuid_and_nanosecond_timestamps_written_by_others_are_read(type_id, payload, want, text):
    """Variant types other writers may use (TIME_NTZ, UUID, TIMESTAMP_NANOS(_NTZ)): decoded,
    printed as JSON strings, and written back as the same bytes. Nanosecond timestamps were cut
    to the microsecond (and written back as microsecond ones)."""
    import uuid
    metadata = bytes([1, 0, 0])  # version 1, no keys
    value = bytes([type_id << 2]) + payload
    arr = pa.StructArray.from_arrays([pa.array([value], pa.binary()),
                                      pa.array([metadata], pa.binary())], fields=list(VARIANT_ARROW))
    got = variant.to_python(arr)[0]
    assert (str(got) if isinstance(got, uuid.UUID) else got) == want
    assert type(got) is type(want) or isinstance(got, uuid.UUID)
    assert variant.to_json(arr).to_pylist() == [text]
    assert variant.encode(got) == (value, metadata)


def test_nanosecond_timestamps_compare_and_replace_with_their_nanoseconds():
    moment = variant.TimestampNanos(2026, 1, 2, 3, 4, 5, 6, nanosecond=7)
    assert moment != dt.datetime(2026, 1, 2, 3, 4, 5, 6) and dt.datetime(2026, 1, 2, 3, 4, 5, 6) != moment
    assert moment == variant.TimestampNanos(2026, 1, 2, 3, 4, 5, 6, nanosecond=7)
    assert len({moment, variant.TimestampNanos(2026, 1, 2, 3, 4, 5, 6, nanosecond=8)}) == 2
    assert variant.TimestampNanos(2026, 1, 1) == dt.datetime(2026, 1, 1)
    assert moment.replace(year=2027).nanosecond == 7 and moment.replace(nanosecond=1).nanosecond == 1
    assert repr(moment) == "TimestampNanos(2026, 1, 2, 3, 4, 5, 6, nanosecond=7)"
    with pytest.raises(ValueError, match="nanosecond must be in 0..999, not 1000"):
        variant.TimestampNanos(2026, 1, 1, nanosecond=1000)


@pytest.mark.parametrize("type_id, payload, error", [
    (11, (3_000_000).to_bytes(4, "little", signed=True), "date 3000000 days from 1970-01-01, outside the years 1 to 9999"),
    (12, (2 ** 62).to_bytes(8, "little"), "timestamp 4611686018427387904 microseconds from 1970-01-01, outside"),
    (17, (86_400_000_000).to_bytes(8, "little"), r"malformed variant \(a time of day of 86400000000 microseconds\)"),
])
def test_variant_dates_python_cannot_hold_and_times_beyond_a_day_are_named(type_id, payload, error):
    """A date or timestamp beyond Python's years 1-9999 (a variant holds any: Java prints year
    10000 as +10000-01-01) is an error naming it, not an OverflowError; a TIME of 24 hours or
    more is malformed (it was read as a time of the next day)."""
    metadata = bytes([1, 0, 0])
    arr = pa.StructArray.from_arrays([pa.array([bytes([type_id << 2]) + payload], pa.binary()),
                                      pa.array([metadata], pa.binary())], fields=list(VARIANT_ARROW))
    with pytest.raises((UnsupportedOperationError, MalformedVariantError), match=error):
        variant.to_json(arr)


def test_an_unknown_variant_type_and_arrow_json_input():
    metadata = bytes([1, 0, 0])
    arr = pa.StructArray.from_arrays([pa.array([bytes([21 << 2])], pa.binary()), pa.array([metadata], pa.binary())],
                                     fields=list(VARIANT_ARROW))
    with pytest.raises(MalformedVariantError, match=r"malformed variant \(unknown primitive type 21\)"):
        variant.to_python(arr)
    assert variant.to_python(variant.from_json(pa.array(['{"a": 1}', None]))) == [{"a": 1}, None]
