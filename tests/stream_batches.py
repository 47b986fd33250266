"""Reading a table's stream in tests as the Spark source does, without Spark: plan a
micro-batch with `StreamingScan.plan_batch`, read each of its units, turn the row kinds into
the source's output column."""
from __future__ import annotations

from collections.abc import Iterator

import pyarrow as pa

import paimon_streaming as ps
from paimon_streaming.change_read import read_unit, to_output
from paimon_streaming.predicate import Filter
from paimon_streaming.read import SplitReader
from paimon_streaming.schema import TableSchema
from paimon_streaming.streaming_scan import ReadLimits, ReadUnit, StreamingScan, StreamOptions, StreamPosition

# what a micro-batch read: each unit it planned with its rows
Batch = list[tuple[ReadUnit, pa.Table]]


def open_stream(t: ps.Table, options: dict[str, str], schema: TableSchema | None = None) -> StreamingScan:
    """A stream of `t` (its branch) with the source options `options` over the table's own,
    read with `schema` (the table's current one unless given)."""
    schema = schema or t.schema
    return StreamingScan(t.file_io, t.path, schema, StreamOptions.from_options(schema.options, options), t.branch)


def read_units(scan: StreamingScan, units: list[ReadUnit], names: list[str], flt: Filter | None = None,
               kind: str | None = "_kind") -> Batch:
    """Each unit with its rows: columns `names` and a `kind` row-kind column (retractions
    dropped when `kind` is None), as the source outputs them."""
    reader = SplitReader(scan.file_io, scan.scan, scan.schema)
    return [(u, to_output(read_unit(reader, u, names, flt), kind)) for u in units]


def snapshot_changes(scan: StreamingScan, snapshot_id: int, names: list[str], kind: str = "_kind") -> list[dict]:
    """The rows a stream reads for one snapshot (its changelog under a changelog producer)."""
    return [r for _, rows in read_units(scan, scan.snapshot_units(snapshot_id, False), names, kind=kind)
            for r in rows.to_pylist()]


def read_batch(scan: StreamingScan, names: list[str], position: StreamPosition, flt: Filter | None = None,
               kind: str | None = "_kind", limits: ReadLimits | None = None) -> tuple[Batch, StreamPosition]:
    """The next micro-batch after `position` and the position after it ([] and `position`
    when the stream is idle)."""
    units, after = scan.plan_batch(position, limits)
    return read_units(scan, units, names, flt, kind), after


def micro_batches(scan: StreamingScan, names: list[str], position: StreamPosition | None = None,
                  flt: Filter | None = None, kind: str | None = "_kind",
                  limit: int = 200) -> Iterator[tuple[Batch, StreamPosition]]:
    """Each micro-batch from `position` (the stream's start position by default) until the
    stream is idle, with the position after it; fails if it is not idle after `limit` batches."""
    position = scan.start_position() if position is None else position
    for _ in range(limit):
        batch, position = read_batch(scan, names, position, flt, kind)
        if not batch:
            return
        yield batch, position
    raise AssertionError(f"the stream of {scan.table_path} never went idle")


def stream_rows(scan: StreamingScan, names: list[str], **kw) -> list[dict]:
    """Every row the stream reads until idle, in order, as dicts."""
    return [r for batch, _ in micro_batches(scan, names, **kw) for _, rows in batch for r in rows.to_pylist()]
