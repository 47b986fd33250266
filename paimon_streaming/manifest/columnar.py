"""Metadata files in ORC or Parquet: the table option `manifest.format` (default avro).

Java writes manifests, manifest lists and index manifests with the data file writer of the
format that option names (`FileFormat.manifestFormat`), its rows of the RowTypes
ManifestEntry.SCHEMA, ManifestFileMeta.SCHEMA and IndexManifestEntry.SCHEMA with `_VERSION`
(id -1) in front (`VersionedObjectSerializer`); every field id is its position. The records go
through the dicts of the Avro path (`to_avro` / `from_avro` of `entries`), and the files through
`datafile`, which lays ORC and Parquet out and checks them as Java writes and reads data files.
"""
from __future__ import annotations

from dataclasses import replace
from typing import Sequence

import pyarrow as pa

from ..datafile import ORC, PARQUET, ParquetSettings, decode_file, encode_file
from ..types import DataField, DataType, arrow_schema, parse_type

AVRO = "avro"
# a file's format from its first bytes, as each format's reader checks it
MAGIC = {b"Obj\x01": AVRO, b"PAR1": PARQUET, b"ORC": ORC}


def file_format(data: bytes) -> str | None:
    """The format of a metadata file from its magic bytes (None: none of the three)."""
    return next((fmt for magic, fmt in MAGIC.items() if data.startswith(magic)), None)


def _numbered(t: DataType) -> DataType:
    """`t` with the fields of every ROW in it numbered by position, as Java's schemas number them."""
    if t.root == "ROW":
        return replace(t, fields=tuple(DataField(i, f.name, _numbered(f.type)) for i, f in enumerate(t.fields)))
    if t.root == "ARRAY":
        return replace(t, element=_numbered(t.element))
    return t


def _versioned(row: str) -> list[DataField]:
    return [DataField(-1, "_VERSION", parse_type("INT NOT NULL"))] + list(_numbered(parse_type(f"ROW<{row}>")).fields)


_STATS = "ROW<_MIN_VALUES BYTES NOT NULL, _MAX_VALUES BYTES NOT NULL, _NULL_COUNTS ARRAY<BIGINT>> NOT NULL"

MANIFEST_FILE_META = _versioned(
    f"_FILE_NAME STRING NOT NULL, _FILE_SIZE BIGINT NOT NULL, _NUM_ADDED_FILES BIGINT NOT NULL, "
    f"_NUM_DELETED_FILES BIGINT NOT NULL, _PARTITION_STATS {_STATS}, _SCHEMA_ID BIGINT NOT NULL, "
    "_MIN_BUCKET INT, _MAX_BUCKET INT, _MIN_LEVEL INT, _MAX_LEVEL INT, _MIN_ROW_ID BIGINT, _MAX_ROW_ID BIGINT")

MANIFEST_ENTRY = _versioned(
    "_KIND TINYINT NOT NULL, _PARTITION BYTES NOT NULL, _BUCKET INT NOT NULL, _TOTAL_BUCKETS INT NOT NULL, "
    "_FILE ROW<_FILE_NAME STRING NOT NULL, _FILE_SIZE BIGINT NOT NULL, _ROW_COUNT BIGINT NOT NULL, "
    f"_MIN_KEY BYTES NOT NULL, _MAX_KEY BYTES NOT NULL, _KEY_STATS {_STATS}, _VALUE_STATS {_STATS}, "
    "_MIN_SEQUENCE_NUMBER BIGINT NOT NULL, _MAX_SEQUENCE_NUMBER BIGINT NOT NULL, _SCHEMA_ID BIGINT NOT NULL, "
    "_LEVEL INT NOT NULL, _EXTRA_FILES ARRAY<STRING NOT NULL> NOT NULL, _CREATION_TIME TIMESTAMP(3), "
    "_DELETE_ROW_COUNT BIGINT, _EMBEDDED_FILE_INDEX BYTES, _FILE_SOURCE TINYINT, "
    "_VALUE_STATS_COLS ARRAY<STRING NOT NULL>, _EXTERNAL_PATH STRING, _FIRST_ROW_ID BIGINT, "
    "_WRITE_COLS ARRAY<STRING NOT NULL>> NOT NULL")

INDEX_MANIFEST_ENTRY = _versioned(
    "_KIND TINYINT NOT NULL, _PARTITION BYTES NOT NULL, _BUCKET INT NOT NULL, _INDEX_TYPE STRING NOT NULL, "
    "_FILE_NAME STRING NOT NULL, _FILE_SIZE BIGINT NOT NULL, _ROW_COUNT BIGINT NOT NULL, "
    "_DELETIONS_VECTORS_RANGES ARRAY<ROW<f0 STRING NOT NULL, f1 INT NOT NULL, f2 INT NOT NULL, "
    "_CARDINALITY BIGINT>>, _EXTERNAL_PATH STRING, "
    "_GLOBAL_INDEX ROW<_ROW_RANGE_START BIGINT NOT NULL, _ROW_RANGE_END BIGINT NOT NULL, "
    "_INDEX_FIELD_ID INT NOT NULL, _EXTRA_FIELD_IDS ARRAY<INT NOT NULL>, _INDEX_META BYTES>")


def encode(fields: list[DataField], records: Sequence[dict], fmt: str, compression: str, zstd_level: int,
           parquet: ParquetSettings, path: str) -> bytes:
    """The ORC or Parquet file `path` of `records` (dicts of the Avro path); `compression` is one
    of `options.COLUMNAR_MANIFEST_CODECS`."""
    table = pa.Table.from_pylist(list(records), schema=arrow_schema(fields))
    return encode_file(table, fields, fmt, compression, zstd_level, parquet, path)


def decode(data: bytes, fmt: str, fields: list[DataField], path: str) -> list[dict]:
    """The records of the ORC or Parquet file `path` (held in `data`) as the Avro path's dicts."""
    return decode_file(data, fmt, fields, path).to_pylist()
