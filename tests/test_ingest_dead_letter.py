"""Poison records in `paimon-streaming ingest` (issue 18): `--on-error fail|skip|dead-letter`.
Undecodable records (broken JSON, wrong types, null keys, bad Avro) stop the job by default,
are counted and dropped with skip, or kept with their Kafka coordinates in a dead-letter table
committed exactly once together with the batch (also across a crash between the two commits)."""
from __future__ import annotations

import datetime
import re
import json

import pyarrow as pa
import pytest

import paimon_streaming as ps
from kafka_broker import unique_topic
from paimon_streaming.sinks import ingest as ingest_module
from paimon_streaming.sinks.decoders import DecodeError, Decoder
from test_ingest import ingest, model_of, produce, table_state

SCHEMA = pa.schema([pa.field("id", pa.int64(), False), ("name", pa.string()), ("amount", pa.float64())])
GOOD = [(str(i), {"id": i, "name": f"n{i}", "amount": i * 0.5}) for i in range(40)]
POISON = [b'{"id": 7, "name": "broken"', b"not json at all", b'{"id": "seven", "name": "x"}',
          b'{"id": null, "name": "no key"}', b'["a", "list"]']


def records(values: list[bytes | None], keys: list[bytes | None] | None = None) -> pa.RecordBatch:
    n = len(values)
    return pa.RecordBatch.from_pydict({
        "key": pa.array(keys or [str(i).encode() for i in range(n)], pa.binary()),
        "value": pa.array(values, pa.binary()), "topic": ["t"] * n, "partition": pa.array([1] * n, pa.int32()),
        "offset": pa.array(range(100, 100 + n), pa.int64())})


def test_decoder_sets_poison_records_aside_in_order():
    values = [b'{"id": 1, "name": "a"}'] + POISON + [None, b'{"id": 2, "name": "b", "amount": 2.5}']
    decoded = Decoder("json", SCHEMA, ("id",), on_error="dead-letter").decode_all(records(values))
    assert decoded.rows.to_pylist() == [{"id": 1, "name": "a", "amount": None, "_kind": "+I"},
                                        {"id": 6, "name": None, "amount": None, "_kind": "-D"},
                                        {"id": 2, "name": "b", "amount": 2.5, "_kind": "+I"}]
    rejected = decoded.rejected.to_pylist()
    assert [r["offset"] for r in rejected] == [101, 102, 103, 104, 105]
    assert [r["value"] for r in rejected] == POISON and {r["topic"] for r in rejected} == {"t"}
    assert "null" in rejected[3]["error"] and "JSON" in rejected[0]["error"]
    with pytest.raises(DecodeError, match="topic=t partition=1 offset=101 is not valid JSON"):
        Decoder("json", SCHEMA, ("id",)).decode_all(records(values))
    all_bad = Decoder("json", SCHEMA, ("id",), on_error="skip").decode_all(records(POISON[:2]))
    assert all_bad.rows.num_rows == 0 and all_bad.rejected.num_rows == 2
    csv = Decoder("csv", SCHEMA, ("id",), on_error="skip").decode_all(records([b",x,1.0", b"3,y,2.0", b"4,z"]))
    assert csv.rows.column("id").to_pylist() == [3]
    assert [(r["offset"], "null primary key" in r["error"] or "CSV" in r["error"])
            for r in csv.rejected.to_pylist()] == [(100, True), (102, True)]


def test_a_record_that_is_not_utf8_text_is_a_poison_record():
    """pyarrow's JSON reader takes bytes that are not UTF-8 into a STRING column unchecked: such a
    table did not read back, or its statistics failed the job with a bare UnicodeDecodeError.
    The record is set aside naming it (JSON, CSV and change events are UTF-8 text)."""
    values = [b'{"id": 1, "name": "a"}', b'{"id": 2, "name": "\xff\xfe max"}', b'{"id": 3, "name": "m\xc3( z"}',
              b'{"id": 4, "name": "\xc3\xa9"}']
    for fmt, raw in (("json", values), ("csv", [b"1,a,", b"2,\xff\xfe,", b"3,m\xc3(,", b"4,\xc3\xa9,"])):
        decoded = Decoder(fmt, SCHEMA, ("id",), on_error="dead-letter").decode_all(records(raw))
        assert decoded.rows.column("name").to_pylist() == ["a", "é"], fmt
        assert [(r["offset"], "not UTF-8 text" in r["error"]) for r in decoded.rejected.to_pylist()] == \
            [(101, True), (102, True)], fmt
        with pytest.raises(DecodeError, match="offset=101 is not valid .*its bytes are not UTF-8 text"):
            Decoder(fmt, SCHEMA, ("id",)).decode_all(records(raw))


def test_a_number_wider_than_its_decimal_column_is_a_poison_record():
    """pyarrow's JSON and CSV readers keep a number with more digits than its DECIMAL column's
    precision (an 11-digit 123456789.50 in DECIMAL(10, 2)); written, Java would read it back as
    null. Such a record is set aside naming the column, the others kept."""
    schema = pa.schema([pa.field("id", pa.int64(), False), ("price", pa.decimal128(10, 2))])
    values = [b'{"id": 1, "price": 12345678.5}', b'{"id": 2, "price": 123456789.5}', b'{"id": 3, "price": -0.5}']
    for fmt, raw in (("json", values), ("csv", [b"1,12345678.5", b"2,123456789.5", b"3,-0.5"])):
        decoded = Decoder(fmt, schema, ("id",), on_error="dead-letter").decode_all(records(raw))
        assert decoded.rows.column("id").to_pylist() == [1, 3], fmt
        (rejected,) = decoded.rejected.to_pylist()
        assert rejected["offset"] == 101 and "column 'price'" in rejected["error"], rejected
        with pytest.raises(DecodeError, match="offset=101 .*column 'price'.*(holds a value that does not fit|beyond "
                                              "DECIMAL)"):
            Decoder(fmt, schema, ("id",)).decode_all(records(raw))


def test_bytes_fields_are_base64_in_json_as_sparks_from_json_reads_them():
    """JSON has no bytes: Kafka Connect, Debezium and Jackson write BYTES as base64 text, and
    Spark's from_json decodes it. So do we, nested fields too; text that is not padded base64
    is a poison record naming the column, never stored as its own bytes."""
    import base64
    schema = pa.schema([pa.field("id", pa.int64(), False), ("raw", pa.binary()),
                        ("parts", pa.list_(pa.binary())), ("meta", pa.struct([("sig", pa.binary())]))])
    payload = bytes(range(256))

    def b64(data: bytes) -> str:
        return base64.b64encode(data).decode()
    values = [json.dumps({"id": 1, "raw": b64(payload), "parts": [b64(b"a"), b64(b"")], "meta": {"sig": b64(b"s")}}),
              json.dumps({"id": 2, "raw": "hello"}), json.dumps({"id": 3, "raw": None, "meta": {"sig": "a!=="}}),
              json.dumps({"id": 4, "raw": b64(b"xy")})]
    decoded = Decoder("json", schema, ("id",), on_error="dead-letter").decode_all(records([v.encode() for v in values]))
    assert decoded.rows.to_pylist() == [
        {"id": 1, "raw": payload, "parts": [b"a", b""], "meta": {"sig": b"s"}, "_kind": "+I"},
        {"id": 4, "raw": b"xy", "parts": None, "meta": None, "_kind": "+I"}]
    errors = {r["offset"]: r["error"] for r in decoded.rejected.to_pylist()}
    assert sorted(errors) == [101, 102]
    assert "column 'raw' is BYTES, written in JSON as base64 text, but b'hello' is not base64" in errors[101]
    assert "column 'meta.sig'" in errors[102]


def test_a_zoned_time_in_a_wall_time_column_is_a_poison_record():
    """A TIMESTAMP column holds wall times; "2024-01-01T00:00:00+02:00" is an instant, which
    pyarrow's JSON reader would store as 22:00 the day before (Spark's from_json reads it as no
    value). Set aside naming the column, nested fields too; TIMESTAMP_LTZ columns take instants
    (a time without zone as UTC)."""
    schema = pa.schema([pa.field("id", pa.int64(), False), ("wall", pa.timestamp("us")),
                        ("at", pa.timestamp("us", tz="UTC")), ("ev", pa.struct([("wall", pa.timestamp("us"))]))])
    values = [b'{"id": 1, "wall": "2024-01-01T00:00:00.5", "at": "2024-01-01T00:00:00+02:00", "ev": {"wall": "2024-02-01 08:00:00"}}',
              b'{"id": 2, "wall": "2024-01-01T00:00:00+02:00"}', b'{"id": 3, "wall": "2024-01-01T00:00:00Z"}',
              b'{"id": 4, "ev": {"wall": "2024-01-01T00:00:00-05:00"}}', b'{"id": 5, "at": "2024-01-01T00:00:00"}']
    decoded = Decoder("json", schema, ("id",), on_error="dead-letter").decode_all(records(values))
    utc = datetime.timezone.utc
    assert decoded.rows.to_pylist() == [
        {"id": 1, "wall": datetime.datetime(2024, 1, 1, 0, 0, 0, 500000),
         "at": datetime.datetime(2023, 12, 31, 22, tzinfo=utc), "ev": {"wall": datetime.datetime(2024, 2, 1, 8)},
         "_kind": "+I"},
        {"id": 5, "wall": None, "at": datetime.datetime(2024, 1, 1, tzinfo=utc), "ev": None, "_kind": "+I"}]
    errors = {r["offset"]: r["error"] for r in decoded.rejected.to_pylist()}
    assert sorted(errors) == [101, 102, 103]
    assert all("is a TIMESTAMP (a wall time, without zone)" in e and "expected no zone offset" in e
               for e in errors.values()), errors
    assert "column 'ev'" in errors[103]


def test_an_avro_value_that_does_not_fit_its_column_is_one_poison_record():
    """An Avro long too big for an INT column, or a decimal wider than the column's, sets that
    record aside; the others of the chunk are kept (before, the whole chunk failed)."""
    import io
    import fastavro
    avro_schema = {"type": "record", "name": "row", "fields": [
        {"name": "id", "type": "long"}, {"name": "qty", "type": "long"},
        {"name": "price", "type": {"type": "bytes", "logicalType": "decimal", "precision": 12, "scale": 2}}]}
    parsed = fastavro.parse_schema(avro_schema)

    def avro(row) -> bytes:
        out = io.BytesIO()
        fastavro.schemaless_writer(out, parsed, row)
        return out.getvalue()
    from decimal import Decimal
    schema = pa.schema([pa.field("id", pa.int64(), False), ("qty", pa.int32()), ("price", pa.decimal128(10, 2))])
    rows = [{"id": 1, "qty": 5, "price": Decimal("1.50")}, {"id": 2, "qty": 2**40, "price": Decimal("1.00")},
            {"id": 3, "qty": 1, "price": Decimal("1234567890.00")}, {"id": 4, "qty": 7, "price": Decimal("-2.25")}]
    decoder = Decoder("avro", schema, ("id",), avro_schema=json.dumps(avro_schema), on_error="dead-letter")
    decoded = decoder.decode_all(records([avro(r) for r in rows]))
    assert decoded.rows.column("id").to_pylist() == [1, 4]
    assert [r["offset"] for r in decoded.rejected.to_pylist()] == [101, 102]
    assert all("do not fit the table's schema" in r["error"] for r in decoded.rejected.to_pylist())
    with pytest.raises(DecodeError, match="offset=101 is Avro whose values do not fit"):
        Decoder("avro", schema, ("id",), avro_schema=json.dumps(avro_schema)).decode_all(records([avro(r) for r in rows]))


def test_avro_written_with_a_newer_schema_than_the_file_is_a_poison_record():
    """A producer already on a newer writer schema than `--avro-schema`'s file: a record with a
    field appended, or inserted before another, leaves bytes after the datum read with the old
    schema. Before, both were committed, one without its new field and the other with `amount`
    read from the inserted string's length (1 instead of 30)."""
    import io
    import fastavro

    def avro(fields: list, row: dict) -> bytes:
        out = io.BytesIO()
        fastavro.schemaless_writer(out, fastavro.parse_schema({"type": "record", "name": "r", "fields": fields}), row)
        return out.getvalue()
    v1 = [{"name": "id", "type": "long"}, {"name": "amount", "type": "long"}]
    appended = v1 + [{"name": "note", "type": "string"}]
    inserted = [v1[0], {"name": "note", "type": "string"}, v1[1]]
    values = [avro(v1, {"id": 1, "amount": 10}), avro(appended, {"id": 2, "amount": 20, "note": "gift wrap"}),
              avro(inserted, {"id": 3, "note": "x", "amount": 30}), avro(v1, {"id": 4, "amount": 40})]
    schema = pa.schema([pa.field("id", pa.int64(), False), ("amount", pa.int64())])
    avro_schema = json.dumps({"type": "record", "name": "r", "fields": v1})
    decoded = Decoder("avro", schema, ("id",), avro_schema=avro_schema, on_error="dead-letter").decode_all(records(values))
    assert decoded.rows.select(["id", "amount"]).to_pylist() == [{"id": 1, "amount": 10}, {"id": 4, "amount": 40}]
    errors = {r["offset"]: r["error"] for r in decoded.rejected.to_pylist()}
    assert sorted(errors) == [101, 102] and all("written with another schema" in e for e in errors.values()), errors
    with pytest.raises(DecodeError, match="offset=101 is not Avro of its writer schema.*bytes are left"):
        Decoder("avro", schema, ("id",), avro_schema=avro_schema).decode_all(records(values))


def test_dead_letter_keeps_every_poison_record_once_with_a_real_broker(spark, broker, tmp_path):
    topic = unique_topic("poison")
    broker.create_topic(topic)
    p = broker.producer()
    messages = []
    for i, (key, row) in enumerate(GOOD):
        p.send(topic, key=key.encode(), value=json.dumps(row).encode(), partition=0)
        messages.append((key, row))
        if i % 8 == 3:
            p.send(topic, key=f"bad{i}".encode(), value=POISON[(i // 8) % len(POISON)], partition=0)
    p.flush()
    rc, lines = ingest(spark, broker, tmp_path, topic, schema="id BIGINT, name STRING, amount DOUBLE",
                       primary_keys=("id",), bucket=1, on_error="dead-letter", max_offsets_per_trigger=15)
    assert rc == 0, lines
    assert any("dead-lettered" in line for line in lines if line.startswith("batch ")), lines
    catalog = ps.Catalog(str(tmp_path / "wh"))
    assert table_state(catalog.get_table("db.t").to_arrow()) == model_of(messages)
    letters = catalog.get_table("db.t_dead_letter").to_arrow().sort_by("offset").to_pylist()
    assert [r["value"] for r in letters] == [POISON[(i // 8) % len(POISON)] for i in range(40) if i % 8 == 3]
    assert [r["key"] for r in letters] == [f"bad{i}".encode() for i in range(40) if i % 8 == 3]
    assert all(r["topic"] == topic and r["partition"] == 0 and r["error"] for r in letters)
    # skip on another table: counted, dropped, the good records all in
    rc, lines = ingest(spark, broker, tmp_path / "skip", topic, schema="id BIGINT, name STRING, amount DOUBLE",
                       primary_keys=("id",), bucket=1, on_error="skip")
    assert rc == 0 and any(", 5 skipped," in line for line in lines), lines
    assert table_state(ps.Catalog(str(tmp_path / "skip" / "wh")).get_table("db.t").to_arrow()) == model_of(messages)
    assert not ps.Catalog(str(tmp_path / "skip" / "wh")).table_exists("db.t_dead_letter")


def test_crash_between_the_dead_letter_and_the_batch_commit_is_exactly_once(spark, broker, tmp_path, monkeypatch):
    topic = unique_topic("poison-crash")
    broker.create_topic(topic)
    produce(broker, topic, GOOD[:10], lambda r: json.dumps(r).encode())
    p = broker.producer()
    for value in POISON[:3]:
        p.send(topic, key=b"bad", value=value)
    p.flush()
    produce(broker, topic, GOOD[10:20], lambda r: json.dumps(r).encode())
    real = ingest_module.set_aside
    crashed = []

    def set_aside_then_crash(*args):
        real(*args)
        if not crashed:
            crashed.append(True)
            raise RuntimeError("injected crash after the dead-letter commit, before the batch's")
    monkeypatch.setattr(ingest_module, "set_aside", set_aside_then_crash)
    kw = dict(schema="id BIGINT, name STRING, amount DOUBLE", primary_keys=("id",), bucket=1, on_error="dead-letter")
    rc, lines = ingest(spark, broker, tmp_path, topic, **kw)
    assert rc == 1 and crashed, lines
    catalog = ps.Catalog(str(tmp_path / "wh"))
    assert catalog.get_table("db.t_dead_letter").to_arrow().num_rows == 3
    assert catalog.get_table("db.t").to_arrow().num_rows == 0  # the batch itself did not commit
    rc, lines = ingest(spark, broker, tmp_path, topic, **kw)  # restart from the checkpoint
    assert rc == 0, lines
    assert table_state(catalog.get_table("db.t").to_arrow()) == model_of(GOOD[:20])
    assert catalog.get_table("db.t_dead_letter").to_arrow().num_rows == 3  # not twice


def test_fail_is_the_default_and_commits_nothing_of_the_batch(spark, broker, tmp_path):
    topic = unique_topic("poison-fail")
    broker.create_topic(topic)
    p = broker.producer()
    p.send(topic, key=b"1", value=b'{"id": 1, "name": "a"}', partition=0)
    p.send(topic, key=b"2", value=b'{"id": 2, "name": ', partition=0)
    p.flush()
    rc, lines = ingest(spark, broker, tmp_path, topic, schema="id BIGINT, name STRING, amount DOUBLE",
                       primary_keys=("id",), bucket=1)
    assert rc == 1 and f"topic={topic} partition=0 offset=1" in lines[-1], lines[-1]
    assert ps.Catalog(str(tmp_path / "wh")).get_table("db.t").to_arrow().num_rows == 0


@pytest.mark.parametrize("fmt", ["json", "maxwell-json"])
def test_a_poison_record_among_the_inference_sample_follows_on_error(tmp_path, fmt):
    """One undecodable record among those a new table's columns are inferred from stopped the
    job with pyarrow's ArrowInvalid whatever --on-error said. skip and dead-letter now leave it
    out of the inference (decoding then sets it aside as any poison record); fail names it."""
    from paimon_streaming.sinks.ingest import IngestConfig, Sample, ensure_table

    def wrap(row: bytes) -> bytes:
        if fmt == "json":
            return row
        return b'{"database":"s","table":"t","type":"insert","primary_key_columns":["id"],"data":' + row + b"}"
    values = [wrap(b'{"id": 1, "v": "a"}'), b"{broken", wrap(b'{"id": "x", "v": "b"}'), wrap(b'{"id": 2, "v": "c"}')]
    sample = [Sample(None, v, "orders", 3, 10 + i) for i, v in enumerate(values)]
    for on_error in ("skip", "dead-letter"):
        cfg = IngestConfig(bootstrap_servers="127.0.0.1:1", warehouse=str(tmp_path), table=f"db.{on_error[:4]}",
                           topics=("orders",), format=fmt, on_error=on_error, primary_keys=("id",), bucket=1)
        table = ensure_table(None, cfg, lambda line: None, lambda: sample)
        assert [(f.name, str(f.type)) for f in table.schema.fields] == [("id", "BIGINT NOT NULL"), ("v", "STRING")]
    cfg = IngestConfig(bootstrap_servers="127.0.0.1:1", warehouse=str(tmp_path), table="db.fail", topics=("orders",),
                       format=fmt, primary_keys=("id",), bucket=1)
    first = "offset=11 is not valid JSON" if fmt == "json" else \
        "offset=12 is a JSON object whose fields do not fit those of the records before it"
    with pytest.raises(DecodeError, match=f"record topic=orders partition=3 {first}.*pass --schema"):
        ensure_table(None, cfg, lambda line: None, lambda: sample)
    assert not ps.Catalog(str(tmp_path)).table_exists("db.fail")


def test_an_empty_array_typed_by_another_sampled_record_survives_a_poison_record():
    """With a poison record in the sample, each record was inferred alone, and one holding `[]`
    (typed by an earlier record's `[1]`) stopped the job as untyped. The records are typed
    together; a field no record types is still the error naming it."""
    from paimon_streaming.sinks.decoders import infer_json_schema
    sample = [b'{"id": 1, "arr": [1]}', b'{"id": 2, "arr": []}', b'{"id": 3, "v": 1}', b'{"id": 4, "v": "x"}']
    assert [(f.name, str(f.type)) for f in infer_json_schema(sample, on_error="dead-letter")] == \
        [("id", "int64"), ("arr", "list<item: int64>"), ("v", "int64")]
    with pytest.raises(DecodeError, match="field 'arr' holds an empty array"):
        infer_json_schema([b'{"id": 2, "arr": []}', b'{"id": 3, "v": 1}', b'{"id": 4, "v": "x"}'], on_error="skip")


def test_timestamps_inferred_from_whole_second_text_take_fractions_later():
    """A column inferred from "2026-01-02T03:04:05" was TIMESTAMP(0): every later value with a
    fraction of a second was a poison record. Inferred as Spark's TIMESTAMP (microseconds)."""
    from paimon_streaming.sinks.decoders import infer_json_schema
    schema = infer_json_schema([b'{"id": 1, "ts": "2026-01-02T03:04:05"}', b'{"id": 2, "ts": "2026-01-03 00:00:00"}'])
    assert schema.field("ts").type == pa.timestamp("us")
    decoded = Decoder("json", pa.schema([pa.field("id", pa.int64(), False), ("ts", pa.timestamp("us"))]), ("id",),
                      on_error="dead-letter").decode_all(records([b'{"id": 3, "ts": "2026-01-04T10:00:00.250"}']))
    assert decoded.rows.column("ts").to_pylist() == [datetime.datetime(2026, 1, 4, 10, 0, 0, 250000)]


def test_a_schema_that_is_not_spark_ddl_is_one_line_naming_it(spark, tmp_path):
    """An invalid --schema printed a Py4J traceback of ~90 lines; now an InvalidOptionError
    naming the text and Spark's reason."""
    from paimon_streaming.errors import InvalidOptionError
    from paimon_streaming.sinks.ingest import IngestConfig, _table_schema
    for ddl, reason in (("id BIGINT, name STRNG", "STRNG"), ("id BIGINT, created TIMESTAMP_NTZ(3)", "PRECISION")):
        cfg = IngestConfig(bootstrap_servers="127.0.0.1:1", warehouse=str(tmp_path), table="db.t", topics=("x",),
                           schema=ddl)
        with pytest.raises(InvalidOptionError, match=f"--schema '.*' is not a schema in Spark's DDL .*{reason}"):
            _table_schema(spark, cfg, lambda: [])


def test_fail_mode_errors_quote_the_record_and_name_the_bad_tombstone():
    """The error quoted the value with its newlines turned into tabs (not the record's bytes), and
    a tombstone key that is not the key's type was named by the batch's first tombstone."""
    with pytest.raises(DecodeError, match=re.escape('''value=b'{"id": 1, "name": "a\\nb"}\'''')):
        Decoder("json", SCHEMA, ("id",)).decode_all(records([b'{"id": 1, "name": "a\nb"}']))
    with pytest.raises(DecodeError, match="tombstone key 'x y' of record topic=t partition=1 offset=102 is not"):
        Decoder("json", SCHEMA, ("id",), key_format="string").decode_all(
            records([None, None, None], [b"1", b"2", b"x y"]))
    # a key's bytes are a BYTES key as they are; for other keys, bytes not UTF-8 are named
    # (both raised a bare ArrowInvalid)
    keyed_by_bytes = pa.schema([pa.field("id", pa.binary(), False), ("name", pa.string())])
    deleted = Decoder("json", keyed_by_bytes, ("id",), key_format="string").decode_all(
        records([None], [b"\xff\x00"]))
    assert deleted.rows.column("id").to_pylist() == [b"\xff\x00"]
    with pytest.raises(DecodeError, match="tombstone key of record topic=t partition=1 offset=101 is not UTF-8"):
        Decoder("json", SCHEMA, ("id",), key_format="string").decode_all(records([None, None], [b"1", b"\xff"]))


def test_a_string_tombstone_key_of_a_number_column_is_decimal_text_only():
    """Arrow's cast took a string key `0xff` for a TINYINT's -1 (and `0x10` for 16): the
    tombstone deleted another row. Such a key, or one beyond the column's range, is refused
    naming the record, whatever --on-error says (a tombstone whose key does not decode fails the
    job); decimal keys, `+5` too, still delete."""
    schema = pa.schema([pa.field("id", pa.int8(), False), ("name", pa.string())])
    for key in (b"0xff", b"0x10", b"128", b"1e2", b"\xd9\xa1"):
        with pytest.raises(DecodeError, match=f"tombstone key {re.escape(repr(key.decode()))} of record topic=t "
                                              r"partition=1 offset=101 is not a int8 value of primary key 'id'"):
            Decoder("json", schema, ("id",), key_format="string", on_error="dead-letter").decode_all(
                records([None, None], [b"1", key]))
    deleted = Decoder("json", schema, ("id",), key_format="string").decode_all(records([None, None], [b"-128", b"+5"]))
    assert deleted.rows.column("id").to_pylist() == [-128, 5]


def test_csv_numbers_beyond_their_type_or_not_decimal_are_poison_records():
    """pyarrow's CSV reader took `1e39` as a FLOAT's infinity, `1e309` as a DOUBLE's, and
    `0x10` as 16; Spark's CSV reader takes none of them (and JSON's refuse them): poison records
    naming the column. Infinity and NaN spelt out, `+5`, and empty fields (nulls) still read."""
    schema = pa.schema([pa.field("id", pa.int32(), False), ("f", pa.float32()), ("d", pa.float64()), ("i", pa.int8())])
    values = [b"1,1.5,2.5,3", b"2,1e39,1,1", b"3,1,1e309,1", b"4,1,1,0x10", b"5,inf,-Infinity,-7", b"6,nan,NaN,",
              b"7,3.4028234e38,1.7e308,127", b"8,1,1,128", b"9,+1.5,.5,+5", b'10,"",1,1']
    decoded = Decoder("csv", schema, ("id",), on_error="dead-letter").decode_all(records(values))
    rows = {r["id"]: (r["f"], r["d"], r["i"]) for r in decoded.rows.to_pylist()}
    assert sorted(rows) == [1, 5, 6, 7, 9]
    assert rows[5] == (float("inf"), float("-inf"), -7) and rows[9] == (1.5, 0.5, 5) and rows[6][2] is None
    errors = {r["offset"] - 100: r["error"] for r in decoded.rejected.to_pylist()}
    assert sorted(errors) == [1, 2, 3, 7, 9], errors
    assert "column 'f' (FLOAT) has text that is no number within its range" in errors[1]
    assert "column 'd' (DOUBLE) has text that is no number within its range" in errors[2]
    assert "column 'i' (TINYINT) has text that is no number" in errors[3]
    assert "column 'i' (TINYINT)" in errors[7] and "column 'f' (FLOAT)" in errors[9]


def test_csv_floats_are_their_text_rounded_once():
    """A FLOAT's text went through a double (rounded twice: the text just above 1 + 2^-24 was
    1.0, where Java's Float.parseFloat and Spark give 1.0000001), and Java's own text of FLOAT's
    largest value, 3.4028235E38, was refused as beyond its range; each is its nearest FLOAT now."""
    schema = pa.schema([pa.field("id", pa.int32(), False), ("f", pa.float32())])
    decoded = Decoder("csv", schema, ("id",)).decode_all(
        records([b"1,1.00000005960464477539062500000001", b"2,3.4028235E38", b"3,-3.4028235e+38"]))
    assert decoded.rows.column("f").to_pylist() == [1.0000001192092896, 3.4028234663852886e38, -3.4028234663852886e38]
