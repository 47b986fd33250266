"""The Avro writer schemas of Paimon's metadata files, exactly as Java 1.4 generates them.

Java reads by field name against the writer schema in the file, so extra fields are
harmless, but a field Java declares non-null must never be missing (FORMAT.md §4).
"""
from __future__ import annotations

import fastavro

NS = "org.apache.paimon.avro.generated"


def _nullable(t) -> list:
    return ["null", t]


def _opt(name: str, t) -> dict:
    return {"name": name, "type": _nullable(t), "default": None}


def _stats(record_name: str) -> dict:
    return {"type": "record", "name": record_name, "fields": [
        {"name": "_MIN_VALUES", "type": "bytes"},
        {"name": "_MAX_VALUES", "type": "bytes"},
        _opt("_NULL_COUNTS", {"type": "array", "items": ["null", "long"]}),
    ]}


MANIFEST_FILE_META = fastavro.parse_schema({
    "type": "record", "name": "record", "namespace": NS, "fields": [
        {"name": "_VERSION", "type": "int"},
        {"name": "_FILE_NAME", "type": "string"},
        {"name": "_FILE_SIZE", "type": "long"},
        {"name": "_NUM_ADDED_FILES", "type": "long"},
        {"name": "_NUM_DELETED_FILES", "type": "long"},
        {"name": "_PARTITION_STATS", "type": _stats("record__PARTITION_STATS")},
        {"name": "_SCHEMA_ID", "type": "long"},
        _opt("_MIN_BUCKET", "int"), _opt("_MAX_BUCKET", "int"),
        _opt("_MIN_LEVEL", "int"), _opt("_MAX_LEVEL", "int"),
        _opt("_MIN_ROW_ID", "long"), _opt("_MAX_ROW_ID", "long"),
    ]})

MANIFEST_ENTRY = fastavro.parse_schema({
    "type": "record", "name": "record", "namespace": NS, "fields": [
        {"name": "_VERSION", "type": "int"},
        {"name": "_KIND", "type": "int"},
        {"name": "_PARTITION", "type": "bytes"},
        {"name": "_BUCKET", "type": "int"},
        {"name": "_TOTAL_BUCKETS", "type": "int"},
        {"name": "_FILE", "type": {"type": "record", "name": "record__FILE", "fields": [
            {"name": "_FILE_NAME", "type": "string"},
            {"name": "_FILE_SIZE", "type": "long"},
            {"name": "_ROW_COUNT", "type": "long"},
            {"name": "_MIN_KEY", "type": "bytes"},
            {"name": "_MAX_KEY", "type": "bytes"},
            {"name": "_KEY_STATS", "type": _stats("record__FILE__KEY_STATS")},
            {"name": "_VALUE_STATS", "type": _stats("record__FILE__VALUE_STATS")},
            {"name": "_MIN_SEQUENCE_NUMBER", "type": "long"},
            {"name": "_MAX_SEQUENCE_NUMBER", "type": "long"},
            {"name": "_SCHEMA_ID", "type": "long"},
            {"name": "_LEVEL", "type": "int"},
            {"name": "_EXTRA_FILES", "type": {"type": "array", "items": "string"}},
            _opt("_CREATION_TIME", {"type": "long", "logicalType": "timestamp-millis"}),
            _opt("_DELETE_ROW_COUNT", "long"),
            _opt("_EMBEDDED_FILE_INDEX", "bytes"),
            _opt("_FILE_SOURCE", "int"),
            _opt("_VALUE_STATS_COLS", {"type": "array", "items": "string"}),
            _opt("_EXTERNAL_PATH", "string"),
            _opt("_FIRST_ROW_ID", "long"),
            _opt("_WRITE_COLS", {"type": "array", "items": "string"}),
        ]}},
    ]})

# full name of the DV range record: writers name the union branch (fastavro's tuple notation)
# instead of letting fastavro find it by validating each range against every branch
DV_RANGE_RECORD = f"{NS}.record__DELETIONS_VECTORS_RANGES"

INDEX_MANIFEST_ENTRY = fastavro.parse_schema({
    "type": "record", "name": "record", "namespace": NS, "fields": [
        {"name": "_VERSION", "type": "int"},
        {"name": "_KIND", "type": "int"},
        {"name": "_PARTITION", "type": "bytes"},
        {"name": "_BUCKET", "type": "int"},
        {"name": "_INDEX_TYPE", "type": "string"},
        {"name": "_FILE_NAME", "type": "string"},
        {"name": "_FILE_SIZE", "type": "long"},
        {"name": "_ROW_COUNT", "type": "long"},
        _opt("_DELETIONS_VECTORS_RANGES", {"type": "array", "items": ["null", {
            "type": "record", "name": "record__DELETIONS_VECTORS_RANGES", "fields": [
                {"name": "f0", "type": "string"},
                {"name": "f1", "type": "int"},
                {"name": "f2", "type": "int"},
                _opt("_CARDINALITY", "long"),
            ]}]}),
        _opt("_EXTERNAL_PATH", "string"),
        _opt("_GLOBAL_INDEX", {"type": "record", "name": "record__GLOBAL_INDEX", "fields": [
            {"name": "_ROW_RANGE_START", "type": "long"},
            {"name": "_ROW_RANGE_END", "type": "long"},
            {"name": "_INDEX_FIELD_ID", "type": "int"},
            _opt("_EXTRA_FIELD_IDS", {"type": "array", "items": "int"}),
            _opt("_INDEX_META", "bytes"),
        ]}),
    ]})
