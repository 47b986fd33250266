"""`paimon_streaming.int96`: a Parquet file's INT96 values checked against Arrow's nanosecond
range from their bytes, whatever the codec, encoding and page version (Java's files:
test_interop_java.py::test_javas_timestamps_beyond_nanoseconds_are_refused_by_name)."""
from __future__ import annotations

import datetime as dt
import io

import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from paimon_streaming.int96 import beyond_nanoseconds

NS_MIN, NS_MAX = -(2 ** 63), 2 ** 63 - 1
US_MIN, US_MAX = -(2 ** 63) // 1000 + 1, (2 ** 63 - 1) // 1000   # the outermost microseconds Arrow's ns hold


def _file(values: pa.Array, nested: bool, **write) -> tuple[pa.BufferReader, pq.FileMetaData, list[int]]:
    with_nulls = pa.concat_arrays([values, pa.nulls(len(values), values.type)])
    pairs = pa.ListArray.from_arrays(pa.array(range(0, 2 * len(values) + 1, 2), pa.int32()),
                                     with_nulls.take(pa.array([i // 2 + (i % 2) * len(values) for i in range(2 * len(values))])))
    column = pairs if nested else values   # each value and a null in a list: repetition levels
    sink = io.BytesIO()
    pq.write_table(pa.table({"id": pa.array(range(len(values))), "t": column}), sink,
                   use_deprecated_int96_timestamps=True, row_group_size=3, **write)
    source = pa.BufferReader(sink.getvalue())
    metadata = pq.ParquetFile(source).metadata
    leaves = [i for i in range(len(metadata.schema)) if metadata.schema.column(i).physical_type == "INT96"]
    return source, metadata, leaves


@pytest.mark.parametrize("nested", [False, True])
@pytest.mark.parametrize("write", [
    {"compression": "zstd"}, {"compression": "snappy", "use_dictionary": False},
    {"compression": "gzip", "data_page_version": "2.0"}, {"compression": "lz4", "use_dictionary": False},
    {"compression": "brotli"}, {"compression": "none", "data_page_version": "2.0", "use_dictionary": False},
    {"compression": "zstd", "data_page_version": "2.0", "dictionary_pagesize_limit": 1}])
def test_values_beyond_nanoseconds_are_found_in_every_page_layout(nested, write):
    inside = pa.array([NS_MIN, NS_MAX, 0, -1, None, 1_700_000_000_123_456_789, -86_400 * 10 ** 9 - 1] * 3,
                      pa.timestamp("ns"))
    source, metadata, leaves = _file(inside, nested, **write)
    assert leaves and not beyond_nanoseconds(source, metadata, leaves)
    at_the_edges = pa.array([US_MIN, US_MAX, None], pa.timestamp("us"))
    assert not beyond_nanoseconds(*_file(at_the_edges, nested, **write))
    for outside in (US_MIN - 1, US_MAX + 1, dt.datetime(9999, 12, 31, 23, 59, 59, 999999), dt.datetime(1, 1, 1),
                    dt.datetime(2300, 1, 1), dt.datetime(1600, 1, 1, 0, 0, 0, 1)):
        values = pa.array([0, None, US_MAX, -1, outside] * 2, pa.timestamp("us"))
        assert beyond_nanoseconds(*_file(values, nested, **write)), outside


def test_a_damaged_page_header_is_an_error_not_an_answer():
    source, metadata, leaves = _file(pa.array([0, 1, 2], pa.timestamp("ns")), False, compression="none",
                                     use_dictionary=False)
    chunk = metadata.row_group(0).column(leaves[0])
    data = bytearray(source.read_at(source.size(), 0))
    data[chunk.data_page_offset] = 0x0D          # a Thrift type no page header holds
    with pytest.raises(ValueError, match="damaged page header"):
        beyond_nanoseconds(pa.BufferReader(bytes(data)), metadata, leaves)
