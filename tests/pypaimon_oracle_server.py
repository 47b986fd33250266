"""The pypaimon oracle's process: runs only under `tests/.venv-oracle` (pypaimon 2.1.0 with its own
pyarrow < 20), started by tests/pypaimon_oracle.py. Reads requests (function name, args,
kwargs) from stdin and answers ("ok", result) or ("error", type name, message, traceback)
on the real stdout; anything pypaimon prints goes to stderr."""
from __future__ import annotations

import os
import sys
import traceback

import pyarrow as pa
import pypaimon
from pypaimon.schema.data_types import AtomicType, DataField
from pypaimon.schema.schema import Schema
from pypaimon.schema.table_schema import TableSchema
from pypaimon.table.row.generic_row import GenericRow, GenericRowDeserializer, GenericRowSerializer
from pypaimon.write.row_key_extractor import FixedBucketRowKeyExtractor, _hash_bytes_by_words

from arrow_wire import receive, send


def _catalog(warehouse: str):
    return pypaimon.CatalogFactory.create({"warehouse": warehouse})


def _read(table) -> pa.Table:
    rb = table.new_read_builder()
    return rb.new_read().to_arrow(rb.new_scan().plan().splits())


# ---- tables ---------------------------------------------------------------------------------
def read_table(warehouse: str, identifier: str, snapshot_id: int | None = None, tag: str | None = None) -> pa.Table:
    table = _catalog(warehouse).get_table(identifier)
    if snapshot_id is not None:
        table = table.copy({"scan.snapshot-id": str(snapshot_id)})
    if tag is not None:
        table = table.copy({"scan.tag-name": tag})
    return _read(table)


def create_table(warehouse: str, identifier: str, schema: pa.Schema, primary_keys=None, partition_keys=None,
                 options=None) -> None:
    cat = _catalog(warehouse)
    cat.create_database(identifier.split(".")[0], True)
    cat.create_table(identifier, pypaimon.Schema.from_pyarrow_schema(
        schema, partition_keys=partition_keys, primary_keys=primary_keys, options=options or {}), False)


def write_table(warehouse: str, identifier: str, data: pa.Table) -> None:
    table = _catalog(warehouse).get_table(identifier)
    wb = table.new_batch_write_builder()
    w, c = wb.new_write(), wb.new_commit()
    try:
        w.write_arrow(data)
        c.commit(w.prepare_commit())
    finally:
        w.close()
        c.close()


def create_tag(warehouse: str, identifier: str, name: str, **kwargs) -> None:
    _catalog(warehouse).get_table(identifier).create_tag(name, **kwargs)


def list_tags(warehouse: str, identifier: str) -> list[str]:
    return list(_catalog(warehouse).get_table(identifier).list_tags())


# ---- BinaryRow and bucket codecs --------------------------------------------------------------
def _fields(type_sqls: list[str]) -> list[DataField]:
    return [DataField(i, f"f{i}", AtomicType(t)) for i, t in enumerate(type_sqls)]


def row_to_bytes(values: list, type_sqls: list[str]) -> bytes:
    return GenericRowSerializer.to_bytes(GenericRow(list(values), _fields(type_sqls)))


def row_from_bytes(data: bytes, type_sqls: list[str]) -> list:
    return list(GenericRowDeserializer.from_bytes(data, _fields(type_sqls)).values)


def hash_bytes_by_words(rows: list[bytes], seed: int | None = None) -> list[int]:
    return [_hash_bytes_by_words(r) if seed is None else _hash_bytes_by_words(r, seed) for r in rows]


def fixed_buckets(table: pa.Table, type_sqls: list[str], num_buckets: int) -> list[int]:
    """Buckets as pypaimon's writer assigns them for a PK table with these keys."""
    fields = [DataField(i, name, AtomicType(t)) for i, (name, t) in enumerate(zip(table.column_names, type_sqls))]
    schema = Schema(fields=fields, primary_keys=list(table.column_names), options={"bucket": str(num_buckets)})
    extractor = FixedBucketRowKeyExtractor(TableSchema.from_schema(0, schema))
    return list(extractor.extract_partition_bucket_batch(table.combine_chunks().to_batches()[0])[1])


def versions() -> dict[str, str]:
    return {"pypaimon": getattr(pypaimon, "__version__", "2.1.0"), "pyarrow": pa.__version__,
            "python": sys.version.split()[0]}


def serve() -> None:
    protocol = os.fdopen(os.dup(sys.stdout.fileno()), "wb")
    os.dup2(sys.stderr.fileno(), sys.stdout.fileno())  # stray prints cannot corrupt the protocol
    requests = sys.stdin.buffer
    functions = {name: fn for name, fn in globals().items() if callable(fn) and not name.startswith("_")
                 and getattr(fn, "__module__", None) == __name__ and name != "serve"}
    while True:
        try:
            name, args, kwargs = receive(requests)
        except EOFError:
            return
        try:
            send(protocol, ("ok", functions[name](*args, **kwargs)))
        except Exception as exc:  # noqa: BLE001 - every failure goes back to the test
            send(protocol, ("error", type(exc).__name__, str(exc), traceback.format_exc()))


if __name__ == "__main__":
    serve()
