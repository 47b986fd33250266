"""A schema-drift hunt on Kafka ingestion: real streams drift (fields come and go, change type,
nest deeper, change case, collide with names we use), and every record must end up either in
the table with its value exactly (or widened losslessly), or in the dead-letter table, or in a
clear error naming the field and the record (topic, partition, offset): never silently nulled,
truncated, rounded or dropped.

The records go through ingest's own pieces in process, as `prepare_table_batch` strings them
together for each micro-batch (`ensure_table` from sampled records, `make_decoder`,
`Decoder.decode_all`, `evolve_table` and decoding again, `set_aside` to the dead-letter table,
the write): no broker, no Spark (tests/test_ingest_evolution.py runs the real pipeline). The
table is compared with a model of the records: what a careful user expects, and what Paimon's
Kafka CDC (`UpdatedDataFieldsProcessFunctionBase.canConvert`: a DECIMAL the source declares
wider, a wider INT or FLOAT, widens the column) does.

Bugs this hunt found (each test says which it guards):
- Debezium: a DECIMAL column whose scale the source changed (the envelope's `scale` 4, the
  table's 2) was read at the table's scale: 1.2345 stored as 123.45.
- Debezium JSON (with or without the envelope) and Avro (schema file or registry, also
  debezium-avro): a field added inside an existing ROW column (or the ROWs of an ARRAY) was
  dropped without a word (Arrow's struct cast drops the fields its target lacks).
- Avro: a writer schema's double into a FLOAT column was rounded (0.1 -> 0.10000000149...).
- JSON: a field named `_source_table` (the name change events carry their source table in)
  was dropped; a field named `_kind` failed the batch with an Arrow error.
- JSON: a field seen only as null (or [], {}) in the sample made table creation fail with
  "Arrow type null has no Paimon equivalent"; `{}` made a ROW<> column no file can hold, so
  every later batch failed; `[]` as a new field failed the batch.
- JSON and Debezium JSON: a new field that is a number in one record and text in another of
  the same batch failed the whole batch, on every restart; so did `name` and `Name` as new
  fields (and a new table's sample made both columns); `Id` for a NOT NULL `id` was refused.
- Avro through a registry: a writer schema no column can hold failed the job whatever
  --on-error said, naming no record.

DRIFT_HUNT_EXAMPLES=500 hunts longer with random drifting records (default: a CI-sized run).
"""
from __future__ import annotations

import base64
import datetime
import decimal
import io
import json
import os
from typing import Any

import fastavro
import pyarrow as pa
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import paimon_streaming as ps
from paimon_streaming.errors import SchemaMismatchError
from paimon_streaming.sinks import schema_registry
from paimon_streaming.sinks.decoders import KIND_COLUMN, DecodeError
from paimon_streaming.sinks.ingest import (IngestConfig, dead_letter_table, ensure_table, evolve_table, make_decoder,
                                           set_aside)

EXAMPLES = int(os.environ.get("DRIFT_HUNT_EXAMPLES", "25"))
TOPIC = "drift"


# ---- the pipeline, in process ------------------------------------------------------------
class Ingest:
    """One ingest job: micro-batches of record values (dicts are JSON-encoded, bytes as they
    are, None a tombstone) through what `prepare_table_batch` does for each, at increasing
    offsets of one partition. `table_schema` creates the table (else it is created from the
    first batch, as `ensure_table` does from the topic's first records)."""

    def __init__(self, warehouse, fmt: str = "json", table_schema: pa.Schema | None = None,
                 on_error: str = "dead-letter", primary_keys=("id",), **kw):
        self.cfg = IngestConfig(bootstrap_servers="unused", warehouse=str(warehouse), table="db.t", format=fmt,
                                primary_keys=tuple(primary_keys), bucket=1, on_error=on_error, **kw)
        self.offset = 0
        self.batch_id = 0
        self.log: list[str] = []
        self.table = None
        if table_schema is not None:
            self.table = ps.Catalog(str(warehouse)).create_table("db.t", table_schema, primary_keys=list(primary_keys),
                                                                 options={"bucket": "1"})

    def batch(self, values: list, keys: list | None = None, crash_after_evolution: bool = False):
        raw = [v if v is None or isinstance(v, bytes) else json.dumps(v).encode() for v in values]
        batch = records(raw, self.offset, keys)
        if self.table is None:
            self.table = ensure_table(None, self.cfg, self.log.append,
                                      samples=lambda: [(None, v) for v in raw if v is not None])
        self.offset += len(values)
        batch_id, self.batch_id = self.batch_id, self.batch_id + 1
        for _ in range(3):
            self.table.refresh()
            decoded = make_decoder(self.cfg, self.table, self.log.append).decode_all(batch)
            if len(decoded.new_fields):
                evolve_table(self.cfg, self.table, decoded.new_fields, self.log.append)
                if crash_after_evolution:
                    self.offset -= len(values)  # the checkpoint replays the batch
                    self.batch_id -= 1
                    return None
                continue
            set_aside(self.cfg, decoded.rejected, "drift-hunt:dead-letter", batch_id)
            if decoded.rows.num_rows:
                self.table.write_arrow(pa.Table.from_batches([decoded.rows]), commit_user="drift-hunt",
                                       commit_identifier=batch_id,
                                       row_kind_column=KIND_COLUMN if self.table.primary_keys else None)
            return decoded
        raise AssertionError("the batch still carried new fields after 3 schema changes")

    def rows(self) -> dict:
        table = ps.Catalog(self.cfg.warehouse).get_table("db.t")
        return {r["id"]: r for r in table.to_arrow().to_pylist()}

    def types(self) -> dict[str, str]:
        table = ps.Catalog(self.cfg.warehouse).get_table("db.t")
        return {f.name: str(f.type) for f in table.schema.fields}

    def dead_letters(self) -> dict[int, str]:
        """{offset: error} of the dead-lettered records, each checked to name its topic and partition."""
        rows = dead_letter_table(self.cfg).to_arrow().to_pylist()
        assert all(r["topic"] == TOPIC and r["partition"] == 0 for r in rows), rows
        return {r["offset"]: r["error"] for r in rows}


def records(values: list[bytes | None], start: int = 0, keys: list | None = None) -> pa.RecordBatch:
    n = len(values)
    return pa.RecordBatch.from_pydict({
        "key": pa.array(keys or [None] * n, pa.binary()), "value": pa.array(values, pa.binary()),
        "topic": [TOPIC] * n, "partition": pa.array([0] * n, pa.int32()),
        "offset": pa.array(range(start, start + n), pa.int64())})


# ---- JSON --------------------------------------------------------------------------------
def test_fields_added_nulled_and_dropped_evolve_exactly(tmp_path):
    job = Ingest(tmp_path)
    job.batch([{"id": 1, "a": 1, "gone": "x", "later": None}, {"id": 2, "a": 2, "gone": "y", "later": None}])
    assert job.types() == {"id": "BIGINT NOT NULL", "a": "BIGINT", "gone": "STRING"}  # `later`: no type yet
    job.batch([{"id": 3, "a": 3, "later": 7, "new": {"x": 1}}, {"id": 4, "a": 4}])
    job.batch([{"id": 5, "a": 5, "new": {"x": 2, "y": "deep"}, "later": None}])
    assert job.types() == {"id": "BIGINT NOT NULL", "a": "BIGINT", "gone": "STRING", "later": "BIGINT",
                           "new": "ROW<x BIGINT, y STRING>"}
    assert job.rows() == {
        1: {"id": 1, "a": 1, "gone": "x", "later": None, "new": None},
        2: {"id": 2, "a": 2, "gone": "y", "later": None, "new": None},
        3: {"id": 3, "a": 3, "gone": None, "later": 7, "new": {"x": 1, "y": None}},
        4: {"id": 4, "a": 4, "gone": None, "later": None, "new": None},
        5: {"id": 5, "a": 5, "gone": None, "later": None, "new": {"x": 2, "y": "deep"}}}
    assert job.dead_letters() == {}


@pytest.mark.parametrize("first, later, column", [
    (1, 2.5, "a"), (1, 2**70, "a"), (1, 1e3, "a"), ("text", 5, "a"), ("text", {"k": 1}, "a"), ("text", [1], "a"),
    (True, "yes", "a"), (True, 1, "a"), (1, True, "a"), ({"x": 1}, {"x": 1.5}, "a"), ([1], [1.5], "a"),
    ([1], ["s"], "a"), ("2024-01-01 10:00:00", "soon", "a")])
def test_a_value_its_column_cannot_hold_is_dead_lettered_naming_column_and_offset(tmp_path, first, later, column):
    """Type drift in JSON records: the column keeps the type the first records gave it (Paimon's
    JSON sync would have made every column STRING); a later value it cannot hold exactly is set
    aside naming the column and the record, its neighbours kept."""
    job = Ingest(tmp_path)
    job.batch([{"id": 1, "a": first}])
    job.batch([{"id": 2, "a": first}, {"id": 3, "a": later}, {"id": 4}])
    rows = job.rows()
    assert sorted(rows) == [1, 2, 4]
    dead = job.dead_letters()
    assert list(dead) == [2] and f"column '{column}'" in dead[2], dead


def test_a_float_column_takes_later_integers_as_doubles(tmp_path):
    """The other way round: integers into a DOUBLE column are its nearest doubles, as any JSON
    number's text is (0.1 is no double either); documented, not a silent change of type."""
    job = Ingest(tmp_path)
    job.batch([{"id": 1, "a": 1.5}])
    job.batch([{"id": 2, "a": 2}, {"id": 3, "a": 2**53 + 1}])
    assert {i: r["a"] for i, r in job.rows().items()} == {1: 1.5, 2: 2.0, 3: float(2**53 + 1)}


def test_empty_arrays_and_objects_before_their_column_has_a_type(tmp_path):
    """`[]`, `{}` and `{"k": null}` tell no column type. Before: the sample's made table creation
    fail with "Arrow type null has no Paimon equivalent" (or created a ROW<> column no file can
    hold, failing every later batch), and a batch's made the schema change fail. Now the
    sample's are a DecodeError naming the field, and a batch's a record set aside naming it
    (its `[]` is never stored as null); records that give the field a type evolve the table,
    and after that `[]` is stored as itself."""
    for value in ([], {}, {"k": None}, [None], {"k": {"e": []}}):
        with pytest.raises(DecodeError, match="field 'tags.*' holds an empty array or object"):
            Ingest(tmp_path / f"new{len(str(value))}{type(value).__name__}").batch([{"id": 1, "tags": value}])
    job = Ingest(tmp_path / "t")
    job.batch([{"id": 1, "none": None}])  # only nulls: no column, nothing lost
    assert job.types() == {"id": "BIGINT NOT NULL"}
    job.batch([{"id": 2, "tags": []}, {"id": 3, "obj": {}}, {"id": 4, "meta": {"a": 1, "e": []}}, {"id": 5}])
    assert sorted(job.rows()) == [1, 5]
    dead = job.dead_letters()
    assert sorted(dead) == [1, 2, 3] and "field 'tags'" in dead[1] and "field 'obj'" in dead[2] \
        and "field 'meta.e'" in dead[3], dead
    job.batch([{"id": 6, "tags": []}, {"id": 7, "tags": ["a"]}, {"id": 8, "meta": {"a": 2, "e": [1]}}])
    job.batch([{"id": 9, "tags": [], "meta": {"a": 3, "e": []}}])
    rows = job.rows()
    assert {i: rows[i]["tags"] for i in (6, 7, 9)} == {6: [], 7: ["a"], 9: []}
    assert {i: rows[i]["meta"] for i in (8, 9)} == {8: {"a": 2, "e": [1]}, 9: {"a": 3, "e": []}}


def test_names_with_dots_spaces_unicode_and_case(tmp_path):
    """Such names are columns as they are; a field differing from a column only in case fills it
    (the exact name winning), as Spark's reader does."""
    job = Ingest(tmp_path)
    job.batch([{"id": 1, "Name": "a", "a.b": 1}])
    job.batch([{"id": 2, "name": "b", "c d": "x", "é": "ü"}, {"id": 3, "NAME": "c", "Name": "d"}])
    assert job.types() == {"id": "BIGINT NOT NULL", "Name": "STRING", "a.b": "BIGINT", "c d": "STRING", "é": "STRING"}
    assert {i: r["Name"] for i, r in job.rows().items()} == {1: "a", 2: "b", 3: "d"}
    assert job.rows()[2]["c d"] == "x" and job.rows()[2]["é"] == "ü"


def test_a_key_named_in_another_case_fills_its_not_null_column(tmp_path):
    """`Id` for the primary key `id` (NOT NULL): the README's case-insensitive match was refused
    there ("a required field was absent") while it worked for nullable columns."""
    job = Ingest(tmp_path)
    job.batch([{"id": 1, "a": 1}])
    job.batch([{"Id": 2, "a": 2}, {"ID": 3, "id": 4, "a": 4}, {"a": 5}, {"id": 6, "a": 6}])
    assert {i: r["a"] for i, r in job.rows().items()} == {1: 1, 2: 2, 4: 4, 6: 6}
    dead = job.dead_letters()
    assert list(dead) == [3] and "column 'id'" in dead[3] and "required field was absent" in dead[3]


def test_a_new_field_of_clashing_types_within_one_batch(tmp_path):
    """A field the table lacks, a number in one record and text in the next of the same batch:
    each record parsed alone, never together, and the whole batch failed ("do not parse as JSON
    one row per record", again on every restart). Now the first records give the column its
    type and a later record that does not fit is set aside naming the field."""
    job = Ingest(tmp_path)
    job.batch([{"id": 1}])
    job.batch([{"id": 2, "d": 0}, {"id": 3, "d": "10%"}, {"id": 4, "d": 1.5}, {"id": 5, "e": [1]}, {"id": 6, "e": ["x"]},
               {"id": 7, "r": {"x": 1}}, {"id": 8, "r": {"y": "s"}}])
    assert job.types() == {"id": "BIGINT NOT NULL", "d": "DOUBLE", "e": "ARRAY<BIGINT>", "r": "ROW<x BIGINT, y STRING>"}
    rows = job.rows()
    assert sorted(rows) == [1, 2, 4, 5, 7, 8]
    assert (rows[2]["d"], rows[4]["d"], rows[5]["e"], rows[7]["r"], rows[8]["r"]) == \
        (0.0, 1.5, [1], {"x": 1, "y": None}, {"x": None, "y": "s"})
    dead = job.dead_letters()
    assert sorted(dead) == [2, 5] and "column 'd'" in dead[2] and "column 'e'" in dead[5], dead
    fail = Ingest(tmp_path / "fail", on_error="fail")
    fail.batch([{"id": 1}])
    with pytest.raises(DecodeError, match="offset=2 is not valid JSON .*field 'd' is string here but int64"):
        fail.batch([{"id": 2, "d": 0}, {"id": 3, "d": "10%"}])


def test_new_fields_differing_only_in_case_become_one_column(tmp_path):
    """`name` in one record and `Name` in another of a batch, neither a column: the schema change
    failed ("differs from the existing column 'name' only in case") on every restart, naming no
    record. The first becomes the column, which the other then fills, as a field matching a
    column ignoring case does (with the exact name winning in a record holding both)."""
    job = Ingest(tmp_path)
    job.batch([{"id": 1}])
    job.batch([{"id": 2, "name": "b"}, {"id": 3, "Name": "c"}, {"id": 4, "NAME": "d", "name": "e"}])
    assert job.types() == {"id": "BIGINT NOT NULL", "name": "STRING"}
    assert {i: r["name"] for i, r in job.rows().items()} == {1: None, 2: "b", 3: "c", 4: "e"}
    new = Ingest(tmp_path / "new")  # a new table's sample: it made both columns, which Spark tells from neither
    new.batch([{"id": 1, "name": "a"}, {"id": 2, "Name": "b"}])
    assert new.types() == {"id": "BIGINT NOT NULL", "name": "STRING"}
    assert {i: r["name"] for i, r in new.rows().items()} == {1: "a", 2: "b"}


def test_timestamps_with_a_zone_are_inferred_as_instants(tmp_path):
    """ISO text with `Z` or an offset was inferred as a wall-time TIMESTAMP, which the decoder
    then refused for every record (a new table ingested nothing, a new field dead-lettered the
    record that brought it): TIMESTAMP WITH LOCAL TIME ZONE, at table creation and in drift."""
    job = Ingest(tmp_path)
    job.batch([{"id": 1, "at": "2026-01-05T10:00:00Z"}, {"id": 2, "at": "2026-01-05T10:00:00+02:00"}])
    job.batch([{"id": 3, "at": "2026-01-05T12:00:00Z", "o": {"when": "2026-01-05T10:00:00-01:00"},
                "wall": "2026-01-05T10:00:00"}])
    types = job.types()
    assert (types["at"], types["o"], types["wall"]) == (
        "TIMESTAMP(6) WITH LOCAL TIME ZONE", "ROW<when TIMESTAMP(6) WITH LOCAL TIME ZONE>", "TIMESTAMP(6)")
    rows = job.rows()
    assert [rows[i]["at"].replace(tzinfo=None) for i in (1, 2, 3)] == [
        datetime.datetime(2026, 1, 5, 10), datetime.datetime(2026, 1, 5, 8), datetime.datetime(2026, 1, 5, 12)]
    assert rows[3]["o"]["when"].replace(tzinfo=None) == datetime.datetime(2026, 1, 5, 11)
    assert job.dead_letters() == {}


def test_nested_fields_named_in_another_case_fill_their_fields(tmp_path):
    """`{"o": {"X": 2}}` against a ROW `o` with field `x` (and in ROWs of an ARRAY, at any depth):
    the field fills `x`, as a top-level field fills its column; before, it was reported as a
    new field ('records carry field(s) ['o']'), whose schema change failed ("differs ... only
    in case") at every restart, even with --on-error dead-letter, and the records after it
    never arrived."""
    job = Ingest(tmp_path)
    job.batch([{"id": 1, "o": {"x": 1, "r": {"y": "a"}}, "arr": [{"k": 1}]}])
    job.batch([{"id": 2, "o": {"X": 2, "R": {"Y": "b"}}, "arr": [{"K": 7}, {"k": 8}]},
               {"id": 3, "o": {"x": 3, "X": 9}}, {"id": 4, "o": None, "arr": None}, {"id": 5, "o": {"x": 5}}])
    assert job.types()["o"] == "ROW<x BIGINT, r ROW<y STRING>>" and job.types()["arr"] == "ARRAY<ROW<k BIGINT>>"
    rows = job.rows()
    assert [(rows[i]["o"], rows[i]["arr"]) for i in sorted(rows)] == [
        ({"x": 1, "r": {"y": "a"}}, [{"k": 1}]), ({"x": 2, "r": {"y": "b"}}, [{"k": 7}, {"k": 8}]),
        ({"x": 3, "r": None}, None), (None, None), ({"x": 5, "r": None}, None)]
    assert job.dead_letters() == {}


@pytest.mark.parametrize("name", ["_KEY_id", "_SEQUENCE_NUMBER", "rowkind", "_VALUE_KIND"])
def test_fields_named_as_paimon_system_fields_are_an_error_naming_them(tmp_path, name):
    job = Ingest(tmp_path)
    job.batch([{"id": 1}])
    with pytest.raises(SchemaMismatchError, match=f"{name}.*reserved by Paimon"):
        job.batch([{"id": 2, name: 5}])
    assert job.rows() == {1: {"id": 1}}


def test_fields_named_as_ingests_own_columns(tmp_path):
    """`_source_table` is where change events carry their source table: a JSON record's own field
    of that name was dropped without a word. `_kind` is the rows' kinds: a JSON field of that
    name failed the batch with Arrow's "field names are not matching"; now the record is set
    aside naming it (a null one says nothing and passes), and a table column of that name is
    refused by name."""
    job = Ingest(tmp_path)
    job.batch([{"id": 1}])
    job.batch([{"id": 2, "_source_table": "mine"}, {"id": 3, "_event": 7}, {"id": 4, "_kind": "-D"},
               {"id": 5, "_kind": None}])
    assert job.rows() == {1: {"id": 1, "_source_table": None, "_event": None},
                          2: {"id": 2, "_source_table": "mine", "_event": None},
                          3: {"id": 3, "_source_table": None, "_event": 7},
                          5: {"id": 5, "_source_table": None, "_event": None}}
    dead = job.dead_letters()
    assert list(dead) == [3] and "field '_kind'" in dead[3]
    table = ps.Catalog(str(tmp_path / "k")).create_table(
        "db.t", pa.schema([pa.field("id", pa.int64(), False), ("_kind", pa.string())]), primary_keys=["id"])
    with pytest.raises(DecodeError, match=r"column\(s\) \['_kind'\] have names ingest keeps for itself"):
        make_decoder(IngestConfig(bootstrap_servers="u", warehouse=str(tmp_path / "k"), table="db.t"), table)


def test_duplicate_keys_in_one_object_are_dead_lettered(tmp_path):
    job = Ingest(tmp_path)
    job.batch([{"id": 1, "a": 1}])
    job.batch([b'{"id": 2, "a": 2, "a": 3}', b'{"id": 3, "b": 1, "b": 2}', b'{"id": 4, "id": 5}', {"id": 6, "a": 6}])
    assert sorted(job.rows()) == [1, 6]
    assert sorted(job.dead_letters()) == [1, 2, 3]
    assert all("specified twice" in e for e in job.dead_letters().values())


# ---- restarts in the middle of a drift -----------------------------------------------------
def test_a_restart_between_the_schema_change_and_the_batch_and_a_second_job_of_old_shape(tmp_path):
    """The job dies after the table evolved and before the batch committed; the restarted job
    (a new process: its own Table objects) replays the batch once, without evolving again. A
    second job, started before the change (its Table holds the old schema), whose records have
    the old shape, writes them with the new column null, and the new shape with it."""
    job = Ingest(tmp_path)
    job.batch([{"id": 1, "a": 1}])
    other = Ingest(tmp_path)
    other.table = ps.Catalog(str(tmp_path)).get_table("db.t")  # loaded before the drift
    other.batch_id = 100
    drifted = [{"id": 2, "a": 2, "coupon": "C"}, None, {"id": 3, "a": 3, "coupon": None}]
    assert job.batch(drifted, keys=[None, b"1", None], crash_after_evolution=True) is None
    assert "coupon" in job.types() and job.rows() == {1: {"id": 1, "a": 1, "coupon": None}}
    restarted = Ingest(tmp_path)
    restarted.offset, restarted.batch_id = job.offset, job.batch_id
    restarted.batch(drifted, keys=[None, b"1", None])
    other.batch([{"id": 10, "a": 10}, {"id": 11, "a": 11, "coupon": "D"}])
    assert job.rows() == {2: {"id": 2, "a": 2, "coupon": "C"}, 3: {"id": 3, "a": 3, "coupon": None},
                          10: {"id": 10, "a": 10, "coupon": None}, 11: {"id": 11, "a": 11, "coupon": "D"}}
    table = ps.Catalog(str(tmp_path)).get_table("db.t")
    assert len(table.schema_manager.schema_ids()) == 2  # evolved once


# ---- Debezium JSON -----------------------------------------------------------------------
def _spec(name: str, type_: str, logical: str | None = None, params: dict | None = None, **extra) -> dict:
    s = {"type": type_, "optional": name != "id", "field": name, **extra}
    if logical:
        s.update(name=logical, version=1)
    if params:
        s["parameters"] = params
    return s


ID = _spec("id", "int64")


def _envelope(columns: list[dict]) -> dict:
    image = {"type": "struct", "optional": True, "name": "dbserver1.shop.t.Value", "fields": columns}
    return {"type": "struct", "optional": False, "name": "dbserver1.shop.t.Envelope",
            "fields": [dict(image, field="before"), dict(image, field="after"),
                       {"type": "string", "optional": False, "field": "op"}]}


def dbz(columns: list[dict] | None, op: str, before: dict | None, after: dict | None) -> bytes:
    """A Debezium JSON event, in Kafka Connect's schema envelope unless `columns` is None."""
    payload = {"before": before, "after": after, "op": op, "ts_ms": 1,
               "source": {"connector": "postgresql", "db": "shop", "schema": "public", "table": "t"}}
    return json.dumps(payload if columns is None else {"schema": _envelope(columns), "payload": payload}).encode()


def _decimal(value: str, scale: int) -> str:
    unscaled = int(decimal.Decimal(value).scaleb(scale))
    return base64.b64encode(unscaled.to_bytes(max(1, (unscaled.bit_length() + 8) // 8), "big", signed=True)).decode()


def _decimal_spec(scale: int, precision: int | None) -> dict:
    params = {"scale": str(scale)} | ({"connect.decimal.precision": str(precision)} if precision else {})
    return _spec("p", "bytes", "org.apache.kafka.connect.data.Decimal", params)


PRICE = pa.schema([pa.field("id", pa.int64(), False), ("p", pa.decimal128(10, 2))])


@pytest.mark.parametrize("scale, precision, value, stored, widened", [
    (4, 12, "1.2345", "1.2345", "DECIMAL(12, 4)"),  # wider both ways: widened, as Paimon's CDC does
    (4, 12, "1.2300", "1.2300", "DECIMAL(12, 4)"),
    (1, 10, "1.5", "1.50", None),  # a narrower scale: the value fits the column
    (3, 10, "1234567.125", None, None),  # scale 3 but fewer integer digits: cast value by value
    (3, 10, "1234567.120", "1234567.12", None),
    (2, None, "123456789012.34", "123456789012.34", "DECIMAL(38, 2)")])
def test_debezium_decimal_scale_changed_upstream(tmp_path, scale, precision, value, stored, widened):
    """The source retypes `p DECIMAL(10,2)`: the envelope's scale is the one its unscaled bytes
    are in. Before, they were read at the table's scale: 1.2345 stored as 123.45, 1.5 as 0.15."""
    job = Ingest(tmp_path, "debezium-json", PRICE)
    job.batch([dbz([ID, _decimal_spec(2, 10)], "c", None, {"id": 1, "p": _decimal("9.99", 2)})])
    job.batch([dbz([ID, _decimal_spec(scale, precision)], "c", None, {"id": 2, "p": _decimal(value, scale)}),
               dbz([ID, _decimal_spec(scale, precision)], "d", {"id": 1, "p": _decimal("9.99", scale)}, None)])
    rows = job.rows()
    assert 1 not in rows  # the delete, under the new scale, applied
    if stored is None:
        assert 2 not in rows and "column 'p'" in job.dead_letters()[1]
    else:
        assert rows[2]["p"] == decimal.Decimal(stored) and str(rows[2]["p"]) == stored
    assert job.types()["p"] == (widened or "DECIMAL(10, 2)")


def test_debezium_arrays_of_decimals_at_a_changed_scale(tmp_path):
    schema = pa.schema([pa.field("id", pa.int64(), False), ("ps", pa.list_(pa.decimal128(10, 2)))])
    job = Ingest(tmp_path, "debezium-json", schema)
    spec = _spec("ps", "array", items=_decimal_spec(1, 9) | {"optional": True})
    job.batch([dbz([ID, spec], "c", None, {"id": 1, "ps": [_decimal("1.5", 1), _decimal("-2.5", 1)]})])
    assert job.rows()[1]["ps"] == [decimal.Decimal("1.50"), decimal.Decimal("-2.50")]


ADDRESS = pa.schema([pa.field("id", pa.int64(), False), ("addr", pa.struct([("city", pa.string())])),
                     ("items", pa.list_(pa.struct([("k", pa.int32())])))])


@pytest.mark.parametrize("with_envelope", [True, False])
def test_debezium_new_fields_inside_rows_evolve_the_table(tmp_path, with_envelope):
    """A field the source adds inside a ROW column (a Postgres composite type, a ROW in an ARRAY)
    was dropped without a word; now the table evolves to take it, typed by the envelope (or
    inferred without one, as new top-level fields are)."""
    job = Ingest(tmp_path, "debezium-json", ADDRESS)
    addr = {"type": "struct", "optional": True, "field": "addr",
            "fields": [_spec("city", "string"), _spec("zip", "int32")]}
    items = {"type": "array", "optional": True, "field": "items",
             "items": {"type": "struct", "optional": True, "fields": [_spec("k", "int32"), _spec("v", "string")]}}
    columns = [ID, addr, items] if with_envelope else None
    job.batch([dbz(columns, "c", None, {"id": 1, "addr": {"city": "a", "zip": 5}, "items": [{"k": 1, "v": "x"}]})])
    assert job.rows() == {1: {"id": 1, "addr": {"city": "a", "zip": 5}, "items": [{"k": 1, "v": "x"}]}}
    types = job.types()
    assert types["addr"] == f"ROW<city STRING, zip {'INT' if with_envelope else 'BIGINT'}>"
    assert types["items"] == "ARRAY<ROW<k INT, v STRING>>"


def test_debezium_new_nested_fields_holding_encodings_are_refused_not_guessed(tmp_path):
    """A date inside a ROW arrives as a number of days: a nested new field of such an encoding
    is refused naming it, never added as a BIGINT column of day numbers."""
    job = Ingest(tmp_path, "debezium-json", ADDRESS)
    addr = {"type": "struct", "optional": True, "field": "addr",
            "fields": [_spec("city", "string"), _spec("since", "int32", "io.debezium.time.Date")]}
    job.batch([dbz([ID, addr], "c", None, {"id": 1, "addr": {"city": "a", "since": 19000}})])
    assert job.rows() == {} and "addr.since" in job.dead_letters()[0]
    assert job.types()["addr"] == "ROW<city STRING>"


def test_debezium_columns_added_dropped_retyped_and_events_that_are_no_row_changes(tmp_path):
    """The envelope changes mid-stream: a column added, one dropped (null from then on, as
    Paimon's CDC writes it), INT widened to BIGINT, a column turned to text (set aside: a
    narrowing the table refuses); updates whose before image lacks fields, deletes and their
    tombstones, truncate, message, heartbeat and schema-change records (no row changes: set
    aside, never applied in part)."""
    schema = pa.schema([pa.field("id", pa.int64(), False), ("a", pa.int32()), ("b", pa.string())])
    job = Ingest(tmp_path, "debezium-json", schema)
    v1 = [ID, _spec("a", "int32"), _spec("b", "string")]
    v2 = [ID, _spec("a", "int64"), _spec("c", "boolean")]  # b dropped, c added, a widened
    job.batch([dbz(v1, "c", None, {"id": i, "a": i, "b": f"b{i}"}) for i in range(1, 5)])
    job.batch([dbz(v2, "u", {"id": 1}, {"id": 1, "a": 2**40, "c": True}),
               dbz(v2, "c", None, {"id": 5, "a": 5, "c": False}),
               dbz(v2, "d", {"id": 2}, None), None,
               dbz([ID, _spec("a", "string")], "c", None, {"id": 6, "a": "six"}),
               json.dumps({"schema": _envelope(v2), "payload": {"op": "t", "before": None, "after": None,
                                                               "source": {}}}).encode(),
               json.dumps({"op": "m", "message": {"prefix": "p", "content": "eA=="}, "source": {}}).encode(),
               json.dumps({"schema": {"type": "struct", "fields": [{"type": "string", "field": "serverName"}]},
                           "payload": {"serverName": "dbserver1"}}).encode(),
               json.dumps({"source": {"db": "shop"}, "databaseName": "shop", "ddl": "ALTER TABLE t ADD c BOOL",
                           "tableChanges": []}).encode(),
               dbz(v2, "u", {"id": 3}, {"id": 3, "a": 33, "c": None})],
              keys=[None, None, None, b'{"id": 2}'] + [None] * 6)
    assert job.types() == {"id": "BIGINT NOT NULL", "a": "BIGINT", "b": "STRING", "c": "BOOLEAN"}
    assert job.rows() == {1: {"id": 1, "a": 2**40, "b": None, "c": True}, 3: {"id": 3, "a": 33, "b": None, "c": None},
                          4: {"id": 4, "a": 4, "b": "b4", "c": None}, 5: {"id": 5, "a": 5, "b": None, "c": False}}
    dead = job.dead_letters()
    assert sorted(dead) == [8, 9, 10, 11, 12], dead
    assert "truncate" in dead[9] and "message" in dead[10] and "not a row change" in dead[11] + dead[12]


def test_debezium_new_fields_of_clashing_types_within_one_batch(tmp_path):
    """Without the envelope, new fields are inferred: a number in one event and text in the next
    (also inside a ROW) failed the whole batch on every restart; now the later one is set aside."""
    schema = pa.schema([pa.field("id", pa.int64(), False), ("r", pa.struct([("x", pa.int64())]))])
    job = Ingest(tmp_path, "debezium-json", schema)
    job.batch([dbz(None, "c", None, {"id": 1, "n": 1, "r": {"x": 1, "y": 1}}),
               dbz(None, "c", None, {"id": 2, "n": "s"}), dbz(None, "c", None, {"id": 3, "r": {"x": 3, "y": "t"}}),
               dbz(None, "c", None, {"id": 4, "n": 4, "r": {"x": 4, "y": 4}}), dbz(None, "d", {"id": 1}, None)])
    assert job.types() == {"id": "BIGINT NOT NULL", "r": "ROW<x BIGINT, y BIGINT>", "n": "BIGINT"}
    assert job.rows() == {4: {"id": 4, "r": {"x": 4, "y": 4}, "n": 4}}
    dead = job.dead_letters()
    assert sorted(dead) == [1, 2] and "/after/n" in dead[1] and "/after/r/y" in dead[2], dead


def test_debezium_source_columns_named_as_ingests_own_are_refused_by_name(tmp_path):
    job = Ingest(tmp_path, "debezium-json", pa.schema([pa.field("id", pa.int64(), False)]))
    job.batch([dbz(None, "c", None, {"id": 1, "_kind": "-D"}), dbz(None, "c", None, {"id": 2, "_event": 0}),
               dbz(None, "c", None, {"id": 3})])
    assert list(job.rows()) == [3]
    dead = job.dead_letters()
    assert sorted(dead) == [0, 1] and "field '_kind'" in dead[0] and "field '_event'" in dead[1]


# ---- Avro through a schema registry ----------------------------------------------------------
@pytest.fixture
def registry():
    from test_schema_registry import Registry
    schema_registry._cache.clear()
    registered: dict[int, dict] = {}
    r = Registry(registered)
    r.add = lambda sid, schema: r.schemas.__setitem__(sid, {"schema": json.dumps(schema)})
    yield r
    r.close()
    schema_registry._cache.clear()


def _record(fields: list[dict], name: str = "row") -> dict:
    return {"type": "record", "name": name, "namespace": "shop", "fields": [{"name": "id", "type": "long"}] + fields}


def _framed(sid: int, schema: dict, row: dict) -> bytes:
    out = io.BytesIO()
    fastavro.schemaless_writer(out, fastavro.parse_schema(schema), row)
    return schema_registry.frame(sid, out.getvalue())


def _nullable(t: Any) -> list:
    return ["null", t]


def test_avro_writer_schemas_adding_fields_inside_records_evolve_the_table(tmp_path, registry):
    """A new writer schema adding a field inside a nested record (or the records of an array):
    it was cast away to the table's ROW; now the table evolves to take it."""
    def addr(*extra):
        return {"name": "addr", "type": _nullable({"type": "record", "name": "Addr", "fields": [
            {"name": "city", "type": _nullable("string")}, *extra]})}

    def items(*extra):
        return {"name": "items", "type": {"type": "array", "items": {"type": "record", "name": "Item", "fields": [
            {"name": "k", "type": "int"}, *extra]}}}
    v1 = _record([addr(), items()])
    v2 = _record([addr({"name": "zip", "type": _nullable("int"), "default": None}),
                  items({"name": "v", "type": _nullable("string"), "default": None})])
    v3 = _record([{"name": "addr", "type": _nullable({"type": "record", "name": "Addr", "fields": [
        {"name": "zip", "type": _nullable("int"), "default": None}]})}, items()])  # city dropped again
    registry.add(1, v1), registry.add(2, v2), registry.add(3, v3)
    job = Ingest(tmp_path, "avro", schema_registry=registry.url)
    job.batch([_framed(1, v1, {"id": 1, "addr": {"city": "a"}, "items": [{"k": 1}]})])
    job.batch([_framed(2, v2, {"id": 2, "addr": {"city": "b", "zip": 5}, "items": [{"k": 2, "v": "x"}]}),
               _framed(3, v3, {"id": 3, "addr": {"zip": 6}, "items": []})])
    assert job.types()["addr"] == "ROW<city STRING, zip INT>"
    assert job.types()["items"] == "ARRAY<ROW<k INT NOT NULL, v STRING> NOT NULL> NOT NULL"
    assert job.rows() == {1: {"id": 1, "addr": {"city": "a", "zip": None}, "items": [{"k": 1, "v": None}]},
                          2: {"id": 2, "addr": {"city": "b", "zip": 5}, "items": [{"k": 2, "v": "x"}]},
                          3: {"id": 3, "addr": {"city": None, "zip": 6}, "items": []}}


def test_avro_values_a_narrower_column_cannot_hold_are_dead_lettered(tmp_path, registry):
    """A writer schema widening a column (float -> double, int -> long, a decimal's scale) into
    the table's narrower column: values that fit are cast, the others set aside naming the
    column. A double into a FLOAT was rounded without a word (0.1 -> 0.10000000149011612)."""
    dec = lambda p, s: _nullable({"type": "bytes", "logicalType": "decimal", "precision": p, "scale": s})  # noqa: E731
    v1 = _record([{"name": "f", "type": _nullable("float")}, {"name": "i", "type": _nullable("int")},
                  {"name": "d", "type": dec(10, 2)}])
    v2 = _record([{"name": "f", "type": _nullable("double")}, {"name": "i", "type": _nullable("long")},
                  {"name": "d", "type": dec(12, 4)}])
    registry.add(1, v1), registry.add(2, v2)
    job = Ingest(tmp_path, "avro", schema_registry=registry.url)
    job.batch([_framed(1, v1, {"id": 1, "f": 1.5, "i": 1, "d": decimal.Decimal("1.50")})])
    job.batch([_framed(2, v2, {"id": 2, "f": 0.25, "i": 2, "d": decimal.Decimal("2.5000")}),
               _framed(2, v2, {"id": 3, "f": 0.1, "i": 3, "d": decimal.Decimal("3.00")}),
               _framed(2, v2, {"id": 4, "f": float("nan"), "i": 2**40, "d": decimal.Decimal("4.00")}),
               _framed(2, v2, {"id": 5, "f": None, "i": None, "d": decimal.Decimal("5.0001")})])
    rows = job.rows()
    assert sorted(rows) == [1, 2]
    assert (rows[2]["f"], rows[2]["i"], rows[2]["d"]) == (0.25, 2, decimal.Decimal("2.50"))
    dead = job.dead_letters()
    assert sorted(dead) == [2, 3, 4], dead
    assert "column 'f'" in dead[2] and "rounded" in dead[2]
    assert "column 'i'" in dead[3] and "column 'd'" in dead[4]


def test_avro_writer_schema_no_column_can_hold_sets_its_records_aside(tmp_path, registry):
    """A producer's new writer schema with a union of several types: the whole job failed
    (whatever --on-error), naming the schema but no record; now its records are set aside by
    their coordinates (with fail: the first one named), the other schemas' kept."""
    v1 = _record([{"name": "a", "type": _nullable("int")}])
    v2 = _record([{"name": "a", "type": ["null", "int", "string"]}])
    registry.add(1, v1), registry.add(2, v2)
    job = Ingest(tmp_path, "avro", schema_registry=registry.url)
    job.batch([_framed(1, v1, {"id": 1, "a": 1})])
    job.batch([_framed(1, v1, {"id": 2, "a": 2}), _framed(2, v2, {"id": 3, "a": "x"}), _framed(1, v1, {"id": 4, "a": 4})])
    assert sorted(job.rows()) == [1, 2, 4]
    dead = job.dead_letters()
    assert list(dead) == [2] and "writer schema 2: Avro field 'a'" in dead[2]
    fail = Ingest(tmp_path / "fail", "avro", schema_registry=registry.url, on_error="fail")
    fail.batch([_framed(1, v1, {"id": 1, "a": 1})])
    with pytest.raises(DecodeError, match="record topic=drift partition=0 offset=2: writer schema 2: Avro field 'a'"):
        fail.batch([_framed(1, v1, {"id": 2, "a": 2}), _framed(2, v2, {"id": 3, "a": "x"})])


def test_debezium_avro_decimal_scale_changed_upstream(tmp_path, registry):
    """As `test_debezium_decimal_scale_changed_upstream`, through Confluent's AvroConverter."""
    import test_debezium as dbz_support

    from paimon_streaming.sinks import debezium
    v1 = dbz_support.avro_envelope([("id", "int64", None, None), ("p", "bytes", "org.apache.kafka.connect.data.Decimal",
                                                                  {"scale": "2", "connect.decimal.precision": "10"})])
    v2 = dbz_support.avro_envelope([("id", "int64", None, None), ("p", "bytes", "org.apache.kafka.connect.data.Decimal",
                                                                  {"scale": "4", "connect.decimal.precision": "10"})])
    registry.add(1, v1), registry.add(2, v2)

    def event(sid, schema, row, scale):
        unscaled = int(decimal.Decimal(row["p"]).scaleb(scale))
        image = {"id": row["id"], "p": unscaled.to_bytes(max(1, (unscaled.bit_length() + 8) // 8), "big", signed=True)}
        body = io.BytesIO()
        fastavro.schemaless_writer(body, fastavro.parse_schema(debezium.without_logical_types(schema)),
                                   {"before": None, "after": image, "op": "c", "ts_ms": 1,
                                    "source": {"connector": "postgresql", "lsn": 1}})
        return schema_registry.frame(sid, body.getvalue())
    job = Ingest(tmp_path, "debezium-avro", PRICE, schema_registry=registry.url)
    job.batch([event(1, v1, {"id": 1, "p": "1.25"}, 2), event(2, v2, {"id": 2, "p": "1.5000"}, 4),
               event(2, v2, {"id": 3, "p": "1.2345"}, 4)])
    rows = job.rows()
    assert {i: str(r["p"]) for i, r in rows.items()} == {1: "1.25", 2: "1.50"}
    assert list(job.dead_letters()) == [2] and "column 'p'" in job.dead_letters()[2]


# ---- random drift ----------------------------------------------------------------------------
_VALUES = st.one_of(
    st.none(), st.integers(-10, 10), st.integers(-2**63, 2**63 - 1), st.integers(2**63, 2**80),
    st.floats(allow_nan=False, allow_infinity=False, width=64), st.text(max_size=4), st.booleans(),
    st.just([]), st.lists(st.integers(-5, 5), min_size=1, max_size=3), st.lists(st.text(max_size=2), min_size=1, max_size=2),
    st.just({}), st.fixed_dictionaries({"x": st.integers(-5, 5)}, optional={"y": st.text(max_size=2)}))
_RECORD = st.dictionaries(st.sampled_from(["a", "b", "c"]), _VALUES, max_size=3)


def _same(stored: Any, sent: Any) -> bool:
    """Whether the table holds the sent JSON value exactly (an integer in a DOUBLE column as its
    nearest double, as any number text; new ROW fields of later records as null)."""
    if sent is None:
        return stored is None
    if isinstance(sent, bool) or isinstance(stored, bool):
        return stored is sent
    if isinstance(sent, (int, float)) and isinstance(stored, (int, float)):
        if isinstance(stored, float):
            return stored == float(sent)
        return isinstance(sent, int) and stored == sent
    if isinstance(sent, dict):
        return isinstance(stored, dict) and all(_same(stored.get(k), v) for k, v in sent.items()) \
            and all(v is None for k, v in stored.items() if k not in sent)
    if isinstance(sent, list):
        return isinstance(stored, list) and len(stored) == len(sent) and all(map(_same, stored, sent))
    return stored == sent


@pytest.mark.parametrize("fmt", ["json", "debezium-json"])
@settings(max_examples=EXAMPLES, deadline=None, derandomize="DRIFT_HUNT_EXAMPLES" not in os.environ,
          suppress_health_check=[HealthCheck.too_slow, HealthCheck.function_scoped_fixture])
@given(batches=st.lists(st.lists(_RECORD, min_size=1, max_size=5), min_size=1, max_size=4))
def test_random_drift_every_record_exact_or_dead_lettered(tmp_path_factory, fmt, batches):
    """Random JSON records (or Debezium inserts of such rows, without the envelope) whose fields
    drift between types, nesting and emptiness, in batches: each ends up in the table with its
    values exactly, or dead-lettered naming a column or field. A first sample that tells no
    type for a field is refused naming it (the table is then made with the key alone)."""
    warehouse = tmp_path_factory.mktemp("drift")
    only_key = pa.schema([pa.field("id", pa.int64(), False)])
    job = Ingest(warehouse, fmt, only_key if fmt != "json" else None)
    sent: dict[int, dict] = {}
    for batch in batches:
        rows = [{"id": len(sent) + i, **r} for i, r in enumerate(batch)]
        values = rows if fmt == "json" else [dbz(None, "c", None, r) for r in rows]
        try:
            job.batch(values)
        except DecodeError as exc:
            assert job.table is None and "holds an empty array or object" in str(exc), exc
            job = Ingest(warehouse, fmt, only_key)
            job.batch(values)
        sent.update({r["id"]: r for r in rows})
    stored, dead = job.rows(), job.dead_letters()
    assert set(stored) | set(dead) == set(sent) and not set(stored) & set(dead), (stored, dead)
    for i, error in dead.items():
        assert "column '" in error or "field '" in error or "/after/" in error, error
    for i, row in stored.items():
        for name, value in row.items():
            if name != "id":
                assert _same(value, sent[i].get(name)), (name, value, sent[i], job.types())


def test_new_fields_clashing_over_numbers_beyond_2_to_the_53():
    """Found by the random hunt: an event's new field an integer beyond 2**53, another's a number
    beyond BIGINT (inferred DOUBLE): joining them refused the integer (Arrow's safe cast), which
    failed the whole batch; it is the DOUBLE column's nearest double, as one parse of both gives."""
    from paimon_streaming.sinks.decoders import Decoder
    table = pa.schema([pa.field("id", pa.int64(), False)])
    values = [dbz(None, "c", None, {"id": 0, "b": 2**53 + 1}), dbz(None, "c", None, {"id": 1, "b": 2**63, "c": {"x": 0}}),
              dbz(None, "c", None, {"id": 2, "c": 0})]
    decoded = Decoder("debezium-json", table, ("id",), on_error="dead-letter").decode_all(records(values))
    assert decoded.new_fields == pa.schema([("b", pa.float64()), ("c", pa.struct([("x", pa.int64())]))])
    assert decoded.rejected.column("offset").to_pylist() == [2]


def test_debezium_avro_new_fields_inside_rows_evolve_the_table(tmp_path, registry):
    """As `test_debezium_new_fields_inside_rows_evolve_the_table`, through the AvroConverter: the
    writer schema's new field inside a record column was cast away."""
    from paimon_streaming.sinks import debezium

    def envelope(*addr_fields):
        value = {"type": "record", "name": "Value", "fields": [{"name": "id", "type": "long"}, {
            "name": "addr", "type": ["null", {"type": "record", "name": "Addr", "fields": list(addr_fields)}],
            "default": None}]}
        return {"type": "record", "name": "Envelope", "namespace": "dbserver1.shop.t", "fields": [
            {"name": "before", "type": ["null", value], "default": None},
            {"name": "after", "type": ["null", "Value"], "default": None},
            {"name": "source", "type": {"type": "record", "name": "Source", "fields": [
                {"name": "connector", "type": "string"}]}}, {"name": "op", "type": "string"}]}

    def event(sid, schema, after):
        body = io.BytesIO()
        fastavro.schemaless_writer(body, fastavro.parse_schema(debezium.without_logical_types(schema)),
                                   {"before": None, "after": after, "op": "c", "source": {"connector": "postgresql"}})
        return schema_registry.frame(sid, body.getvalue())
    city = {"name": "city", "type": ["null", "string"]}
    v1, v2 = envelope(city), envelope(city, {"name": "zip", "type": ["null", "int"], "default": None})
    registry.add(1, v1), registry.add(2, v2)
    job = Ingest(tmp_path, "debezium-avro", ADDRESS.remove(2), schema_registry=registry.url)
    job.batch([event(1, v1, {"id": 1, "addr": {"city": "a"}}), event(2, v2, {"id": 2, "addr": {"city": "b", "zip": 5}})])
    assert job.types()["addr"] == "ROW<city STRING, zip INT>"
    assert job.rows() == {1: {"id": 1, "addr": {"city": "a", "zip": None}}, 2: {"id": 2, "addr": {"city": "b", "zip": 5}}}
