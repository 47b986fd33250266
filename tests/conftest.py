"""Shared fixtures (a fresh warehouse per test, the Spark session, the Kafka broker) and pypaimon
(the test-only oracle) helpers."""
from __future__ import annotations

import pyarrow as pa
import pytest


@pytest.fixture
def warehouse(tmp_path):
    return str(tmp_path / "wh")


@pytest.fixture
def catalog(warehouse):
    import paimon_streaming as ps
    return ps.Catalog(warehouse)


@pytest.fixture(scope="module")
def spark():
    """The shared local Spark session (imported here only when a test asks for it)."""
    from spark_support import get_spark
    return get_spark()


@pytest.fixture(scope="module")
def broker():
    """The shared loopback Kafka broker, started on first use."""
    from kafka_broker import get_broker
    return get_broker()


def pypaimon_catalog(warehouse: str):
    import pypaimon
    return pypaimon.CatalogFactory.create({"warehouse": warehouse})


def pypaimon_read(warehouse: str, identifier: str, snapshot_id: int | None = None) -> pa.Table:
    """Read a table through pypaimon (merge-on-read / DV as pypaimon implements it)."""
    table = pypaimon_catalog(warehouse).get_table(identifier)
    if snapshot_id is not None:
        table = table.copy({"scan.snapshot-id": str(snapshot_id)})
    rb = table.new_read_builder()
    return rb.new_read().to_arrow(rb.new_scan().plan().splits())


def pypaimon_create(warehouse: str, identifier: str, schema: pa.Schema, primary_keys=None,
                    partition_keys=None, options=None):
    import pypaimon
    cat = pypaimon_catalog(warehouse)
    cat.create_database(identifier.split(".")[0], True)
    cat.create_table(identifier, pypaimon.Schema.from_pyarrow_schema(
        schema, partition_keys=partition_keys, primary_keys=primary_keys, options=options or {}), False)
    return cat.get_table(identifier)


def pypaimon_write(warehouse: str, identifier: str, data: pa.Table) -> None:
    table = pypaimon_catalog(warehouse).get_table(identifier)
    wb = table.new_batch_write_builder()
    w = wb.new_write()
    c = wb.new_commit()
    try:
        w.write_arrow(data)
        c.commit(w.prepare_commit())
    finally:
        w.close()
        c.close()


def rows_by(table: pa.Table, *keys: str) -> list[dict]:
    """Rows as dicts sorted by the given columns, for order-independent comparison."""
    return sorted(table.to_pylist(), key=lambda r: tuple((r[k] is None, r[k]) for k in keys))
