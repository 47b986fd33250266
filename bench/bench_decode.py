"""Decoding rate of `paimon-streaming ingest`'s record formats, in one process, no Kafka.

    .venv/bin/python bench/bench_decode.py [--records 50000] [--runs 5] [--formats json,avro,...]

The same rows (id, customer, amount, status, ts) as each format carries them: plain JSON, Avro
(a schema file), and the change events of Debezium (JSON, and MongoDB's BSON documents),
Maxwell, Canal, GoldenGate and AWS DMS (inserts), and `json+variant`: the JSON rows with an
object field `attrs` going into a VARIANT column, and `json+map`: the same object of strings
going into a MAP<STRING, STRING> column. Each format's records go through the decoder
`ingest` runs in its tasks (`sinks/decoders.Decoder.decode_all`, one Arrow batch of Kafka
records); the anchor, measured in the same run, is `pyarrow.json` parsing the plain JSON rows
alone. Prints records/s (median of --runs) and each format's ratio to the anchor; with
json+variant also `variant.from_json` of the `attrs` documents alone.
"""
from __future__ import annotations

import argparse
import io
import json
import os
import statistics
import sys
import time

import fastavro
import pyarrow as pa
import pyarrow.json as pajson

sys.path.insert(0, os.path.join(os.path.dirname(__file__), ".."))
from paimon_streaming.sinks.decoders import Decoder  # noqa: E402
from paimon_streaming import variant  # noqa: E402
from paimon_streaming.types import VARIANT_ARROW  # noqa: E402

SCHEMA = pa.schema([pa.field("id", pa.int64(), False), ("customer", pa.string()), ("amount", pa.float64()),
                    ("status", pa.string()), ("ts", pa.int64())])
AVRO = {"type": "record", "name": "Order", "fields": [
    {"name": "id", "type": "long"}, {"name": "customer", "type": "string"}, {"name": "amount", "type": "double"},
    {"name": "status", "type": "string"}, {"name": "ts", "type": "long"}]}
VARIANT_SCHEMA = SCHEMA.append(pa.field("attrs", VARIANT_ARROW))
MAP_SCHEMA = SCHEMA.append(pa.field("attrs", pa.map_(pa.string(), pa.string())))
FORMATS = ("json", "json+variant", "json+map", "avro", "debezium-json", "debezium-bson", "maxwell-json", "canal-json", "ogg-json", "aws-dms-json")


def rows(n: int) -> list[dict]:
    return [{"id": i, "customer": f"c{i % 997}", "amount": i * 0.25, "status": "paid", "ts": 1_700_000_000 + i}
            for i in range(n)]


def encoded(fmt: str, row: dict) -> bytes:
    """One record value of `fmt` carrying `row` (an insert)."""
    if fmt == "json":
        return json.dumps(row).encode()
    if fmt == "json+variant":
        return json.dumps(dict(row, attrs={"channel": "web", "items": [row["id"] % 7, "sku"], "gift": False})).encode()
    if fmt == "json+map":
        return json.dumps(dict(row, attrs={"channel": "web", "sku": f"s{row['id'] % 7}", "gift": "no"})).encode()
    if fmt == "debezium-json":
        return json.dumps({"before": None, "after": row, "op": "c", "ts_ms": 1,
                           "source": {"connector": "mysql", "db": "shop", "table": "orders"}}).encode()
    if fmt == "debezium-bson":
        doc = dict(row, _id={"$numberLong": str(row["id"])}, ts={"$numberLong": str(row["ts"])})
        return json.dumps({"before": None, "after": json.dumps(doc), "op": "c",
                           "source": {"connector": "mongodb", "db": "shop", "collection": "orders"}}).encode()
    if fmt == "maxwell-json":
        return json.dumps({"database": "shop", "table": "orders", "type": "insert", "ts": 1, "data": row}).encode()
    if fmt == "canal-json":
        return json.dumps({"data": [{k: str(v) for k, v in row.items()}], "type": "INSERT", "isDdl": False,
                           "database": "shop", "table": "orders", "pkNames": ["id"],
                           "mysqlType": {"id": "bigint", "customer": "varchar(32)", "amount": "double",
                                         "status": "varchar(8)", "ts": "bigint"}}).encode()
    if fmt == "ogg-json":
        return json.dumps({"table": "SHOP.ORDERS", "op_type": "I", "op_ts": "2024-03-01 10:00:00.000000",
                           "after": row}).encode()
    if fmt == "aws-dms-json":
        return json.dumps({"data": row, "metadata": {"record-type": "data", "operation": "insert",
                                                     "schema-name": "shop", "table-name": "orders"}}).encode()
    if fmt == "avro":
        out = io.BytesIO()
        fastavro.schemaless_writer(out, PARSED_AVRO, row)
        return out.getvalue()
    raise ValueError(fmt)


PARSED_AVRO = fastavro.parse_schema(AVRO)


def kafka_batch(values: list[bytes]) -> pa.RecordBatch:
    n = len(values)
    return pa.RecordBatch.from_pydict({
        "key": pa.nulls(n, pa.binary()), "value": pa.array(values, pa.binary()), "topic": ["bench"] * n,
        "partition": pa.array([0] * n, pa.int32()), "offset": pa.array(range(n), pa.int64())})


def decoder(fmt: str) -> Decoder:
    if fmt == "json+variant":
        return Decoder("json", VARIANT_SCHEMA, ("id",))
    if fmt == "json+map":
        return Decoder("json", MAP_SCHEMA, ("id",))
    if fmt == "debezium-bson":
        schema = pa.schema([pa.field("_id", pa.string(), False)] + [(f.name, pa.string()) for f in SCHEMA])
        return Decoder(fmt, schema, ("_id",))
    return Decoder(fmt, SCHEMA, ("id",), avro_schema=json.dumps(AVRO) if fmt == "avro" else None)


def timed(fn, runs: int) -> float:
    times = []
    for _ in range(runs):
        start = time.perf_counter()
        fn()
        times.append(time.perf_counter() - start)
    return statistics.median(times)


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--records", type=int, default=50_000)
    p.add_argument("--runs", type=int, default=5)
    p.add_argument("--formats", default=",".join(FORMATS))
    args = p.parse_args()
    data = rows(args.records)
    plain = b"\n".join(encoded("json", r) for r in data) + b"\n"
    anchor = timed(lambda: pajson.read_json(io.BytesIO(plain), parse_options=pajson.ParseOptions(
        explicit_schema=SCHEMA)), args.runs)
    with open("/proc/loadavg") as f:
        load = f.read().split()[0]
    print(f"{args.records:,} records, median of {args.runs} runs, load {load}")
    print(f"{'format':<16}{'records/s':>14}{'vs anchor':>11}")
    print(f"{'pyarrow.json':<16}{args.records / anchor:>14,.0f}{1.0:>10.2f}x   (anchor: plain JSON rows parsed alone)")
    for fmt in args.formats.split(","):
        batch, dec = kafka_batch([encoded(fmt, r) for r in data]), decoder(fmt)
        decoded = dec.decode_all(batch)
        assert decoded.rows.num_rows == args.records and decoded.rejected.num_rows == 0, fmt
        seconds = timed(lambda: dec.decode_all(batch), args.runs)
        print(f"{fmt:<16}{args.records / seconds:>14,.0f}{anchor / seconds:>10.2f}x")
    if "json+variant" in args.formats.split(","):  # the Python API on the variant documents alone
        documents = [json.dumps(json.loads(encoded("json+variant", r))["attrs"]) for r in data]
        seconds = timed(lambda: variant.from_json(documents), args.runs)
        print(f"{'from_json':<16}{args.records / seconds:>14,.0f}{anchor / seconds:>10.2f}x   "
              "(variant.from_json of the attrs documents alone)")


if __name__ == "__main__":
    main()
