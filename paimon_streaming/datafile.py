"""Data files: Parquet (default) and ORC, laid out the way Paimon Java writes and reads them;
Avro files of Java's (`file.format` = avro, or per level with `file.format.per.level`, as
Paimon's write-performance guide suggests for levels 0 and 1) are read too.

Java reads columns by *name* (Parquet `clipParquetSchema`, ORC schema evolution), but it
decodes values by the declared Paimon type, not by the file's annotations. So the physical
layout matters (FORMAT §6, Java `ParquetSchemaConverter`):

* every Parquet field carries its Paimon field id; nested ids follow `SpecialFields`
  (array element / map value = 536870911 + id*1024 + depth, map key = 536870911 - id*1024 -
  depth, int32 arithmetic, depth counted from 1 below the top-level column);
* TIMESTAMP/LTZ p<=3 as INT64 millis, p<=6 as INT64 micros, p>6 as INT96 (Java reads an
  INT64 as millis or micros by the declared precision, so nanos there would be misread).
  pyarrow can switch INT96 on only for a whole file, so in a file holding a p>6 timestamp the
  p<=6 ones are plain INT64 (no timestamp annotation; Java decodes them by the declared
  precision alone): as INT96 they would read right, but Java's Parquet filter pushdown on
  them fails ("declared type (java.lang.Long) does not match ... INT96");
* DECIMAL p<=9 INT32, p<=18 INT64, else FIXED_LEN_BYTE_ARRAY of minimal width;
* nullability from the Paimon types (required/optional), 3-level lists, `key_value` maps.

ORC follows Java's `OrcTypeUtil` where pyarrow allows (TIME as int, LTZ as timestamp with
local time zone); pyarrow cannot write the `paimon.id` attributes (Java ignores them when
reading), the zstd level, or CHAR/VARCHAR(n) types (plain string; Java converts on read). A
CHAR(n) value is stored padded with spaces to n characters at any depth, as ORC's writer stores
it for Java (its statistics, which Java's filters read, of the padded values), and read
right-trimmed, as Java's ORC reader does.
Limits of pyarrow's ORC: timestamps are read as ns (years 1677-2262 only), and pre-1970
timestamps with a sub-second part are written with negative nanos that Java rejects.

Reading accepts files of any Paimon writer (Java, pypaimon, ours) and returns the canonical
Arrow types of `types.to_arrow`.

Damage is never read as data. Parquet files are written with page checksums (CRC32 of each
page, `write_page_checksum`; Java's reader ignores them) and read with their verification on;
files without checksums (other writers) are read as before. Before decoding, the file's size
is compared with the size its manifest entry records (known from opening the file: no extra
request on object stores), and its row count with the entry's, so a truncated or replaced
file is an error, for ORC too. Footers have no checksum, so what they declare is checked
against the schema the file was written with (`_check_decoded`, `_misdeclared`): every
column and ROW field present, every column as long as the file and of its type's family,
and, in Parquet columns a Paimon writer wrote, timestamps in the unit of their precision and
decimals at their scale (in ORC, decimals at their scale). ORC has no checksums: a flipped
byte inside an ORC stripe is caught only when it breaks decoding or yields invalid strings,
otherwise it can read as another value (use Parquet, the default, where that matters).
Every failure raises `MissingFileError` / `CorruptFileError` naming the file; a read the store
fails is the OSError it is, naming the file, never a damaged file (`_decode_stored`).
"""
from __future__ import annotations

import contextlib
from dataclasses import dataclass, field
from typing import Callable, Sequence

import numpy as np
import fastavro
import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.orc as orc
import pyarrow.parquet as pq

from . import orc_ltz
from .avro_codecs import register_snappy
from .errors import (CorruptFileError, InvalidOptionError, MissingFileError, PaimonError, SchemaMismatchError,
                     UnsupportedOperationError)
from .fileio import FileIO, RecordedReads
from .int96 import beyond_nanoseconds
from .numpy_arrow import from_numpy, narrowable
from .options import ORC_LTZ_LEGACY, PARQUET_DICTIONARY, PARQUET_WRITER_VERSION, CoreOptions, parse_hadoop_bool
from .system_fields import KEY_PREFIX
from .types import DataField, DataType, arrow_schema, map_arrow_leaves, to_arrow

PARQUET = "parquet"
ORC = "orc"
AVRO = "avro"
FORMATS = (PARQUET, ORC)                # written
READ_FORMATS = (PARQUET, ORC, AVRO)     # read
register_snappy()                       # Avro data files of Paimon before 0.9 are snappy

_FIELD_ID = b"PARQUET:field_id"
_STRUCTURED_ID_BASE = (2**31 - 1) // 4       # SpecialFields.STRUCTURED_TYPE_FIELD_ID_BASE
_DEPTH_LIMIT = 1 << 10                       # SpecialFields.STRUCTURED_TYPE_FIELD_DEPTH_LIMIT

# The compression names of each format's library as Java's Paimon 1.4.2 hands them on: the
# enum names of parquet-mr's CompressionCodecName and ORC's CompressionKind in any case, Avro's
# codec names as written (`=`). Each maps to the pyarrow codec written for it, None where
# we write none: ORC's LZO (pyarrow neither writes nor reads it) and Avro's (Avro is written
# as the table's format, file_settings.py). Parquet's LZO and BROTLI, Avro's xz, fail in Java
# for want of their codec classes, so are not listed; Parquet's LZ4 is written as LZ4_RAW, the
# only LZ4 pyarrow writes (Java writes Hadoop-framed LZ4; each reads both).
_LIBRARY_CODECS = {
    PARQUET: {"uncompressed": "none", "snappy": "snappy", "gzip": "gzip", "lz4": "lz4", "lz4_raw": "lz4",
              "zstd": "zstd"},
    ORC: {"none": "uncompressed", "zlib": "zlib", "snappy": "snappy", "lz4": "lz4", "zstd": "zstd", "lzo": None},
    AVRO: {"=null": None, "=deflate": None, "=snappy": None, "=bzip2": None, "=zstandard": None},
}
# The names Paimon adds for `file.compression` (ParquetWriterFactory's `none`, as written;
# AvroFileFormat's zstd, in any case); a format's own option (FORMAT_COMPRESSION_KEYS) lacks them.
_PAIMON_CODECS = {PARQUET: {"=none": "none"}, ORC: {}, AVRO: {"zstd": None}}
# Set on a table, the format's own option replaces `file.compression` for that format's files
# in Java's writers; its key is matched with its format prefix in any case (`ORC.compress`).
FORMAT_COMPRESSION_KEYS = {PARQUET: "parquet.compression", ORC: "orc.compress", AVRO: "avro.codec"}


def java_codec(fmt: str, compression: str, option: str, own_option: bool = False) -> str | None:
    """The pyarrow codec written for `compression` in a `fmt` file: the value of the table
    option `option` names (quoted; the format's own one of FORMAT_COMPRESSION_KEYS when
    `own_option`). InvalidOptionError naming the option and what Java's writer takes, where
    Java's writer fails on it (or we cannot write what it writes)."""
    names = {**_LIBRARY_CODECS[fmt], **({} if own_option else _PAIMON_CODECS[fmt])}
    for name, codec in names.items():
        if compression == name[1:] if name.startswith("=") else compression.upper() == name.upper():
            if codec is None and fmt == ORC:
                raise InvalidOptionError(f"invalid value {compression!r} for table option {option}: Java's ORC "
                                         "writer takes it, but pyarrow cannot write LZO ORC files "
                                         "(tables holding them are read); use zstd, lz4, snappy, zlib or none")
            return codec
    written = [n for n in names if names[n] is not None or fmt == AVRO]
    accepted = " or ".join(f"{', '.join(group)} ({how})" for group, how in (
        ([n for n in written if not n.startswith("=")], "any case"),
        ([n[1:] for n in written if n.startswith("=")], "as written")) if group)
    raise InvalidOptionError(f"invalid value {compression!r} for table option {option}: not a compression Java's "
                             f"{fmt} writer takes (Paimon 1.4.2 fails writing such files); use {accepted}")


# Hadoop compression names -> file extensions (Java `HadoopCompressionType`); "none" has none.
_COMPRESSION_EXT = {"none": None, "gzip": "gz", "bzip2": "bz2", "deflate": "deflate",
                    "snappy": "snappy", "lz4": "lz4", "zstd": "zst"}
_COMPRESSION_EXTS = {e for e in _COMPRESSION_EXT.values() if e}

_UNIT_RANK = {"s": 0, "ms": 1, "us": 2, "ns": 3}
# Types whose Parquet columns may be INT96 (timestamps, also inside nested types).
_MAY_HOLD_TIMESTAMPS = {"TIMESTAMP", "TIMESTAMP_LTZ", "ARRAY", "MAP", "MULTISET", "ROW"}

# Parquet page checksums: written and verified (module docstring). A switch for benchmarks only.
PAGE_CHECKSUMS = True
# The footer key-value entry holding the file's own name (`_write_parquet`, checked on read).
FILE_NAME_KEY = "paimon-streaming.file"
# A string column chunk up to this size may be read as a dictionary (`_dictionary_columns`).
DICTIONARY_READ_BYTES = 1 << 20
# Parquet files below these sizes are read without pre-buffering (coalesced background reads)
# and without pyarrow's column threads: for a small file, handing work to thread pools costs
# more than the work itself (a 100 KB file reads in 0.55 ms inline against 0.64 ms through
# both pools, a 4 KB one in 0.25 against 0.34, four reader threads at once; bench/HISTORY.md).
PREBUFFER_MIN_BYTES = 1 << 20
COLUMN_THREADS_MIN_BYTES = 256 << 10


# ---- file names ---------------------------------------------------------------------------
def data_file_name(prefix: str, uuid: str, counter: int, file_format: str,
                   compression: str | None = None, include_compression: bool = False) -> str:
    """`<prefix><uuid>-<n>.<fmt>`, or `.<ext>.<fmt>` with `file.suffix.include.compression`.

    The compression part is the Hadoop extension Java uses (zstd -> `zst`, gzip -> `gz`).
    """
    ext = "." + file_format.lower()
    if include_compression and compression:
        comp_ext = _COMPRESSION_EXT.get(compression.lower(), compression)
        if comp_ext:
            ext = f".{comp_ext}{ext}"
    return f"{prefix}{uuid}-{counter}{ext}"


def format_from_file_name(name: str) -> str:
    """The format of a data file from its name: the last extension, skipping a compression one."""
    parts = name.rsplit("/", 1)[-1].split(".")
    if len(parts) < 2 or (parts[-1].lower() in _COMPRESSION_EXTS and len(parts) < 3):
        raise InvalidOptionError(f"cannot tell the file format of {name!r}: no extension")
    ext = parts[-2] if parts[-1].lower() in _COMPRESSION_EXTS else parts[-1]
    return ext.lower()


# ---- physical schema ----------------------------------------------------------------------
def _int32(value: int) -> int:
    """Wrap like Java int arithmetic, so ids of huge field ids match Java's."""
    return (value + 2**31) % 2**32 - 2**31


def _array_element_id(field_id: int, depth: int) -> int:
    return _int32(_STRUCTURED_ID_BASE + field_id * _DEPTH_LIMIT + depth)


def _map_key_id(field_id: int, depth: int) -> int:
    return _int32(_STRUCTURED_ID_BASE - field_id * _DEPTH_LIMIT - depth)


def _field(name: str, arrow_type: pa.DataType, nullable: bool, field_id: int | None) -> pa.Field:
    meta = None if field_id is None else {_FIELD_ID: str(field_id).encode()}
    return pa.field(name, arrow_type, nullable, metadata=meta)


def _file_type(t: DataType, field_id: int, depth: int, for_orc: bool) -> pa.DataType:
    """Arrow type whose Parquet/ORC rendering is what Java writes for `t`.

    Nested children get the ids Java derives from the enclosing column's id (`field_id`);
    ORC carries no ids from pyarrow and stores TIME as plain int (Java `OrcTypeUtil`).
    """
    def child(name: str, ct: DataType, cid: int) -> pa.Field:
        return _field(name, _file_type(ct, field_id, depth + 1, for_orc), ct.nullable,
                      None if for_orc else cid)

    r = t.root
    if r == "ARRAY":
        return pa.list_(child("element", t.element, _array_element_id(field_id, depth + 1)))
    if r in ("MAP", "MULTISET"):
        key_type = (t.key if r == "MAP" else t.element).copy(False)  # Parquet keys are required
        value_type = t.value if r == "MAP" else DataType("INT", False)
        return pa.map_(child("key", key_type, _map_key_id(field_id, depth + 1)),
                       child("value", value_type, _array_element_id(field_id, depth + 1)))
    if r == "ROW":
        return pa.struct([_file_field(f, for_orc) for f in t.fields])
    if r == "VARIANT":  # Java's ParquetSchemaConverter: required `value` (id 0), `metadata` (id 1)
        return pa.struct([_field("value", pa.binary(), False, 0), _field("metadata", pa.binary(), False, 1)])
    if r == "TIME" and for_orc:
        return pa.int32()
    return to_arrow(t)


def _file_field(f: DataField, for_orc: bool) -> pa.Field:
    return _field(f.name, _file_type(f.type, f.id, 0, for_orc), f.type.nullable,
                  None if for_orc else f.id)


def _max_timestamp_precision(t: DataType) -> int:
    """Highest TIMESTAMP/LTZ precision in a type, nested ones included (-1 when none)."""
    own = t.precision if t.root in ("TIMESTAMP", "TIMESTAMP_LTZ") else -1
    children = [c for c in (t.element, t.key, t.value) if c is not None] + [f.type for f in t.fields]
    return max([own] + [_max_timestamp_precision(c) for c in children])


# ---- conforming arrays to a target type ---------------------------------------------------
def conform(column: pa.Array | pa.ChunkedArray, target: pa.DataType) -> pa.ChunkedArray | pa.Array:
    """Cast a column to `target`, the way Paimon reads differing physical types.

    Struct children are matched by name (missing ones become nulls), dictionary columns are
    decoded, and timestamps/times are truncated to a coarser unit (Java truncates to the
    declared precision) while widening stays a checked cast.
    """
    if isinstance(column, pa.ChunkedArray):
        if column.type.equals(target):
            return column
        return pa.chunked_array([_conform_array(c, target) for c in column.chunks], type=target)
    return _conform_array(column, target)


def _conform_array(arr: pa.Array, target: pa.DataType) -> pa.Array:
    src = arr.type
    if src.equals(target):
        return arr
    if pa.types.is_dictionary(src):
        return _conform_array(arr.dictionary_decode(), target)
    mask = arr.is_null() if arr.null_count else None
    if pa.types.is_struct(target) and pa.types.is_struct(src):
        names = {src.field(i).name: i for i in range(src.num_fields)}
        children = [_conform_array(arr.field(names[f.name]), f.type) if f.name in names
                    else pa.nulls(len(arr), f.type) for f in target]
        return pa.StructArray.from_arrays(children, fields=list(target), mask=mask)
    if pa.types.is_map(target) and pa.types.is_map(src):
        offsets, start = rebased_offsets(arr)
        return pa.MapArray.from_arrays(offsets, _conform_array(arr.keys.slice(start), target.key_type),
                                       _conform_array(arr.items.slice(start), target.item_type),
                                       type=target, mask=mask)
    if pa.types.is_list(target) and (pa.types.is_list(src) or pa.types.is_large_list(src)):
        offsets, start = rebased_offsets(arr)
        values = _conform_array(arr.values.slice(start), target.value_type)
        return pa.ListArray.from_arrays(offsets, values, type=target, mask=mask)
    if _is_temporal(src) and _is_temporal(target) and finer_unit(src.unit, target.unit):
        if pa.types.is_timestamp(src):
            return _floor_timestamps(arr, target)
        return pc.cast(arr, target, safe=False)  # finer -> coarser times (never negative): truncate
    return pc.cast(narrowable(arr), target)


def finer_unit(unit: str, than: str) -> bool:
    """Whether Arrow time unit `unit` ("s", "ms", "us", "ns") is finer than `than`."""
    return _UNIT_RANK[unit] > _UNIT_RANK[than]


def _floor_timestamps(arr: pa.Array, target: pa.DataType) -> pa.Array:
    """Timestamps cut to a coarser unit by flooring, as Java cuts them to a lower precision
    (Arrow's unchecked cast truncates toward zero: a time before 1970 would round up,
    1969-12-31 23:59:59.999999 to 1970-01-01 00:00:00)."""
    factor = 1000 ** (_UNIT_RANK[arr.type.unit] - _UNIT_RANK[target.unit])
    epochs = pc.fill_null(arr.cast(pa.int64()), 0).to_numpy(zero_copy_only=False)
    mask = arr.is_null().to_numpy(zero_copy_only=False) if arr.null_count else None
    return pa.array(np.floor_divide(epochs, factor), pa.int64(), mask=mask).cast(target)


def rebased_offsets(arr: pa.Array) -> tuple[pa.Array, int]:
    """int32 offsets in a fresh buffer starting at 0, and where they start in the child.

    pyarrow refuses a null mask together with sliced offsets, so slices are rebased.
    """
    offsets, start = arr.offsets, 0
    if arr.offset:
        start = offsets[0].as_py()
        offsets = pc.subtract(offsets, pa.scalar(start, offsets.type))
    return offsets.cast(pa.int32()), start


def _is_temporal(t: pa.DataType) -> bool:
    return pa.types.is_timestamp(t) or pa.types.is_time(t)


def _file_table(data: pa.Table, fields: list[DataField], for_orc: bool) -> pa.Table:
    """The data as the file stores it: columns by field name, file types, field-id schema."""
    schema = pa.schema([_file_field(f, for_orc) for f in fields])
    present = set(data.column_names)
    missing = [f.name for f in fields if f.name not in present]
    if missing:
        raise SchemaMismatchError(f"data has no column(s) {missing} for the data file "
                                  f"(columns: {data.column_names})")
    columns = [conform(data.column(f.name), schema.field(i).type) for i, f in enumerate(fields)]
    columns = [_required_children_filled(c) if _has_required_children(c.type) else c for c in columns]
    if for_orc:
        columns = [pa.chunked_array([_leaves_mapped(c, f.type, "CHAR", _padded) for c in column.chunks], column.type)
                   if _holds(f.type, "CHAR") else column for f, column in zip(fields, columns)]
    return pa.Table.from_arrays(columns, schema=schema)


def _has_required_children(t: pa.DataType) -> bool:
    if pa.types.is_struct(t):
        return any(not t.field(i).nullable or _has_required_children(t.field(i).type) for i in range(t.num_fields))
    if pa.types.is_list(t) or pa.types.is_large_list(t):
        return _has_required_children(t.value_type)
    return False


def _required_children_filled(column: pa.ChunkedArray) -> pa.ChunkedArray:
    """A ROW's NOT NULL fields hold nulls only under a null ROW (a ROW column a schema change
    added reads as nulls from older files, fields and all); Parquet's writer refuses any null in
    a required field, so those slots get a placeholder that no reader sees."""
    return pa.chunked_array([_filled(chunk) for chunk in column.chunks], column.type)


def _filled(arr: pa.Array) -> pa.Array:
    if pa.types.is_struct(arr.type):
        children = []  # (`field` gives a child as the struct is sliced)
        for i in range(arr.type.num_fields):
            f, child = arr.type.field(i), _filled(arr.field(i))
            if not f.nullable and child.null_count:
                from .retraction_values import zero_value  # here: it imports modules that import this one
                child = pc.fill_null(child, zero_value(f.type))
            children.append(child)
        return pa.StructArray.from_arrays(children, fields=list(arr.type),
                                          mask=arr.is_null() if arr.null_count else None)
    if pa.types.is_list(arr.type) or pa.types.is_large_list(arr.type):
        offsets, start = rebased_offsets(arr)
        return type(arr).from_arrays(offsets, _filled(arr.values.slice(start)), type=arr.type,
                                     mask=arr.is_null() if arr.null_count else None)
    return arr




# ---- writing ------------------------------------------------------------------------------
@dataclass(frozen=True)
class WrittenFile:
    """A data file just written: its size in bytes and, for Parquet, the min and max of its
    top-level string columns from the footer statistics the writer computes anyway (as Java
    takes a Parquet file's stats from its footer), by column name; for ORC, those of its CHAR
    columns, of the padded values it stores (as Java takes them from ORC's statistics); a
    column without such bounds (other ORC columns, several row groups, values over Parquet's
    statistics size limit, all nulls) is absent."""
    size: int
    string_bounds: dict[str, tuple[str, str]] = field(default_factory=dict)


@dataclass(frozen=True)
class ParquetSettings:
    """The `parquet.*` table options Paimon passes to its Parquet writer (parquet-mr), applied
    with pyarrow (`ParquetSettings.of`):

    * `parquet.writer.version` `v1` (default) or `v2`. As parquet-mr's v2 writer, `v2` writes
      version-2 data pages and DELTA_BINARY_PACKED integers (here: integer, date, time and
      timestamp columns not dictionary-encoded): sorted keys and sequence numbers shrink to a
      few bits per value, so files are smaller and faster to write and read. Readers need
      DELTA_BINARY_PACKED support (Apache Paimon 1.1 or later, pyarrow, Spark).
    * `parquet.enable.dictionary` (default true) and `parquet.enable.dictionary#<column>`:
      false writes no dictionary pages (for that column). When enabled, string and binary
      columns are dictionary-encoded; other columns only when named per column (building a
      dictionary of nearly distinct numbers costs more than it saves).
    """
    writer_v2: bool = False
    dictionary: bool = True
    dictionary_by_column: tuple[tuple[str, bool], ...] = ()

    @staticmethod
    def of(options: CoreOptions) -> "ParquetSettings":
        per_column = options.per_column(PARQUET_DICTIONARY)
        return ParquetSettings(options.get(PARQUET_WRITER_VERSION) == "v2", options.get(PARQUET_DICTIONARY),
                               tuple(sorted((c, parse_hadoop_bool(v)) for c, v in per_column.items())))

    def dictionary_columns(self, schema: pa.Schema) -> list[str]:
        named = dict(self.dictionary_by_column)
        return [f.name for f in schema if named.get(f.name, self.dictionary and _dictionary_by_default(f.type))]

    def encodings(self, schema: pa.Schema, dictionary: list[str], int96: bool) -> dict[str, str] | None:
        """Column encodings of a v2 file (None: pyarrow's, PLAIN after any dictionary)."""
        if not self.writer_v2:
            return None
        return {f.name: "DELTA_BINARY_PACKED" for f in schema if f.name not in dictionary
                and _delta_packable(f.type, int96)} or None


def _dictionary_by_default(t: pa.DataType) -> bool:
    return pa.types.is_string(t) or pa.types.is_large_string(t) or pa.types.is_binary(t) \
        or pa.types.is_large_binary(t)


def _delta_packable(t: pa.DataType, int96: bool) -> bool:
    """Stored as INT32/INT64 (timestamps are INT96 in a file with a p>6 timestamp)."""
    return pa.types.is_integer(t) or pa.types.is_date(t) or pa.types.is_time(t) \
        or (pa.types.is_timestamp(t) and not int96)


def write_data_file(file_io: FileIO, path: str, data: pa.Table, fields: list[DataField],
                    file_format: str = PARQUET, compression: str = "zstd",
                    zstd_level: int = 1, parquet: ParquetSettings = ParquetSettings(),
                    orc_legacy_ltz: bool = True) -> WrittenFile:
    """Write one data file of `data` laid out by `fields` (`parquet`: the Parquet writer's
    table options, see `ParquetSettings`; `orc_legacy_ltz`: `orc.timestamp-ltz.legacy.type`,
    see orc_ltz.py).

    A partially written file is removed when writing fails.
    """
    fmt, codec, table = _file_input(data, fields, file_format, compression, "'file.compression'")
    try:
        with file_io.open_output_stream(path) as out:
            bounds = _write(out, table, fields, fmt, codec, zstd_level, parquet, path, orc_legacy_ltz)
            return WrittenFile(out.tell(), bounds)
    except BaseException:
        file_io.delete_quietly(path)
        raise


def encode_file(data: pa.Table, fields: list[DataField], file_format: str, compression: str,
                zstd_level: int, parquet: ParquetSettings, path: str) -> bytes:
    """The bytes `write_data_file` would write at `path`, in memory: metadata files in ORC or
    Parquet (`manifest.format`) are small and written whole, as their Avro kin."""
    fmt, codec, table = _file_input(data, fields, file_format, compression, "'manifest.compression'")
    sink = pa.BufferOutputStream()
    _write(sink, table, fields, fmt, codec, zstd_level, parquet, path)
    return sink.getvalue().to_pybytes()


def _file_input(data: pa.Table, fields: list[DataField], file_format: str, compression: str,
                option: str) -> tuple[str, str | None, pa.Table]:
    fmt = file_format.lower()
    if fmt not in FORMATS:
        raise InvalidOptionError(f"file.format {file_format!r} is not supported; use one of {FORMATS}")
    return fmt, java_codec(fmt, compression, option), _file_table(data, fields, for_orc=fmt == ORC)


def _write(out, table: pa.Table, fields: list[DataField], fmt: str, codec: str, zstd_level: int,
           parquet: ParquetSettings, path: str, orc_legacy_ltz: bool = True) -> dict[str, tuple[str, str]]:
    """Write the file table to `out`: the Parquet footer's string bounds (ORC: its CHARs')."""
    if fmt == PARQUET:
        footer = _write_parquet(out, table, fields, codec, zstd_level, parquet, _file_name(path))
        return _string_bounds(footer, table.schema)
    if orc_legacy_ltz:
        for i, f in enumerate(fields):
            if _holds(f.type, "TIMESTAMP_LTZ"):
                table = table.set_column(i, table.schema.field(i), _ltz_shifted(table.column(i), f, orc_ltz.to_stored))
    _check_orc_timestamps(table, path)
    orc.write_table(_orc_writable(table), out, compression=codec)
    return _char_bounds(table, fields)


def _char_bounds(table: pa.Table, fields: list[DataField]) -> dict[str, tuple[str, str]]:
    """Min/max of the top-level CHAR columns of an ORC file's table (padded): the values read
    back are trimmed, but Java's statistics of the file, and so its filters, are of these."""
    bounds = {}
    for f in fields:
        column = table.column(f.name)
        if f.type.root == "CHAR" and column.null_count < len(column):
            low_high = pc.min_max(column)
            bounds[f.name] = (low_high["min"].as_py(), low_high["max"].as_py())
    return bounds


def _orc_writable(table: pa.Table) -> pa.Table:
    """The table laid out so pyarrow's ORC writer writes its values. A file's rows are often a
    slice of a batch (a bucket's, a rolled file's), and the writer ignores a sliced struct array's
    offset (writing other rows' values): nested columns are copied out of any slice. The writer
    also stores a struct's child values under the struct's null slots, where ORC readers (Java's
    too) expect none, so every later value of that child is read one slot off, unless the child
    is null there too; it nulls them itself but stops descending at a struct without nulls (a
    null ROW inside a ROW that has none, or inside an ARRAY, read as '', 0, [] in every later
    row): every struct's nulls are pushed into its children here, at every depth."""
    if not any(pa.types.is_nested(f.type) for f in table.schema):
        return table
    copied = table.take(pa.array(np.arange(table.num_rows)))  # offsets 0 all the way down
    return pa.Table.from_arrays([pa.chunked_array([_nulls_pushed_down(chunk) for chunk in column.chunks], column.type)
                                 for column in copied.columns], schema=table.schema)


def _nulls_pushed_down(arr: pa.Array) -> pa.Array:
    """`arr` (unsliced, as `take` gives it) with each null struct slot's children null too."""
    t, mask = arr.type, arr.is_null() if arr.null_count else None
    if pa.types.is_struct(t):
        children = arr.flatten() if arr.null_count else [arr.field(i) for i in range(t.num_fields)]
        return pa.StructArray.from_arrays([_nulls_pushed_down(c) for c in children], fields=list(t), mask=mask)
    if pa.types.is_map(t):
        return pa.MapArray.from_arrays(arr.offsets, _nulls_pushed_down(arr.keys), _nulls_pushed_down(arr.items),
                                       type=t, mask=mask)
    if pa.types.is_list(t) or pa.types.is_large_list(t):
        return type(arr).from_arrays(arr.offsets, _nulls_pushed_down(arr.values), type=t, mask=mask)
    return arr


def _check_orc_timestamps(table: pa.Table, path: str) -> None:
    """Timestamps an ORC file cannot give back, refused before it is written: pyarrow reads ORC
    timestamps as nanoseconds, so none outside 1677-09-21 .. 2262-04-11; and pyarrow's writer
    stores one before 1970 with digits below the millisecond with negative nanoseconds, which
    Java's reader refuses (IllegalArgumentException), so none of those either."""
    for name, column in zip(table.column_names, table.columns):
        as_ns = _nanosecond_type(column.type)
        if as_ns == column.type and not _holds_timestamps(column.type):
            continue
        try:
            in_ns = column.cast(as_ns)
        except pa.ArrowInvalid:
            raise SchemaMismatchError(
                f"column {name!r} holds a TIMESTAMP outside 1677-09-21 .. 2262-04-11, which an ORC file cannot give "
                f"back to pyarrow (it reads ORC timestamps in nanoseconds); file.format = parquet keeps years 1 to "
                f"9999 (writing {path})") from None
        for chunk in in_ns.chunks:
            _check_orc_sub_milliseconds(name, chunk, path)


def _holds_timestamps(t: pa.DataType) -> bool:
    return pa.types.is_timestamp(t) or (pa.types.is_nested(t) and any(
        _holds_timestamps(t.field(i).type) for i in range(t.num_fields)))


def _check_orc_sub_milliseconds(name: str, arr: pa.Array, path: str) -> None:
    """A timestamp (nanoseconds) before 1970 with digits below the millisecond in `arr`, nested
    ones too: refused naming the column (`_check_orc_timestamps`)."""
    t = arr.type
    if pa.types.is_timestamp(t):
        ns = arr.cast(pa.int64()).fill_null(0).to_numpy(zero_copy_only=False)
        bad = (ns < 0) & (ns % 1_000_000 != 0)
        if bad.any():
            value = arr[int(np.argmax(bad))]
            raise SchemaMismatchError(
                f"column {name!r} holds {value}, a TIMESTAMP before 1970 with digits below the millisecond, which "
                f"pyarrow's ORC writer stores in a form Java's reader refuses; file.format = parquet keeps them "
                f"(writing {path})")
    elif pa.types.is_struct(t):
        for i in range(t.num_fields):
            _check_orc_sub_milliseconds(f"{name}.{t.field(i).name}", arr.field(i), path)
    elif pa.types.is_map(t):
        _check_orc_sub_milliseconds(f"{name}.key", arr.keys, path)
        _check_orc_sub_milliseconds(f"{name}.value", arr.items, path)
    elif pa.types.is_list(t) or pa.types.is_large_list(t):
        _check_orc_sub_milliseconds(f"{name}[]", arr.flatten(), path)


def _nanosecond_type(t: pa.DataType) -> pa.DataType:
    if pa.types.is_timestamp(t):
        return pa.timestamp("ns", tz=t.tz)
    if pa.types.is_struct(t):
        return pa.struct([f.with_type(_nanosecond_type(f.type)) for f in t])
    if pa.types.is_list(t):
        return pa.list_(t.value_field.with_type(_nanosecond_type(t.value_type)))
    if pa.types.is_large_list(t):
        return pa.large_list(t.value_field.with_type(_nanosecond_type(t.value_type)))
    if pa.types.is_map(t):
        return pa.map_(t.key_field.with_type(_nanosecond_type(t.key_type)),
                       t.item_field.with_type(_nanosecond_type(t.item_type)))
    return t


def _needs_int96(fields: list[DataField]) -> bool:
    """Java wants INT96 for p>6; pyarrow's switch is per file, so one such column decides."""
    return max((_max_timestamp_precision(f.type) for f in fields), default=-1) > 6


def _plain_int64_timestamps(table: pa.Table) -> pa.Table:
    """The file table with every timestamp of precision up to 6 (nested ones too) as the INT64
    of its millis (up to 3, seconds included) or micros, field ids kept (module docstring)."""
    def retyped(leaf: Callable[[pa.DataType], pa.DataType]) -> pa.Schema:
        return pa.schema([f.with_type(map_arrow_leaves(f.type, leaf)) for f in table.schema])
    millis = retyped(lambda t: pa.timestamp("ms", t.tz) if pa.types.is_timestamp(t) and t.unit == "s" else t)
    return table.cast(millis).cast(retyped(lambda t: pa.int64() if pa.types.is_timestamp(t) and t.unit != "ns" else t))


def _file_name(path: str) -> str:
    return path.rsplit("/", 1)[-1]


def _write_parquet(out, table: pa.Table, fields: list[DataField], codec: str,
                   zstd_level: int, parquet: ParquetSettings, file_name: str) -> pq.FileMetaData:
    # Only string and binary columns get a dictionary by default: on keys, sequence numbers,
    # doubles and timestamps (nearly all distinct) building it costs more than the whole rest
    # of the write and it is then thrown away when the dictionary page overflows.
    dictionary = parquet.dictionary_columns(table.schema)
    int96 = _needs_int96(fields)
    if int96:
        table = _plain_int64_timestamps(table)
    footer: list[pq.FileMetaData] = []
    writer = pq.ParquetWriter(
        out, table.schema,
        metadata_collector=footer,
        compression=codec,
        use_dictionary=dictionary or False,
        column_encoding=parquet.encodings(table.schema, dictionary, int96),
        data_page_version="2.0" if parquet.writer_v2 else "1.0",
        compression_level=zstd_level if codec == "zstd" else None,
        use_deprecated_int96_timestamps=int96,
        store_decimal_as_integer=True,   # p<=9 INT32, p<=18 INT64 as Java; larger stay FLBA
        store_schema=False,              # Java writes no ARROW:schema; readers use the Paimon schema
        use_compliant_nested_type=True,
        write_statistics=_statistics_columns(table),
        write_page_checksum=PAGE_CHECKSUMS,  # CRC32 per page, verified on read (module docstring)
    )
    try:
        writer.write_table(table)
        # the file's own name, so that another valid file put in its place is refused on read
        writer.add_key_value_metadata({FILE_NAME_KEY: file_name})
    except BaseException:
        # closing a writer whose write failed raises its own error ("file metadata is only
        # available after writer close"), which would hide the cause
        with contextlib.suppress(Exception):
            writer.close()
        raise
    writer.close()
    return footer[0]


def _statistics_columns(table: pa.Table) -> bool | list[str]:
    """Parquet `write_statistics`: every column, but no float column holding NaN (nested ones
    too). pyarrow leaves NaN out of a footer's min/max, so {NaN, 1.0} would get [1.0, 1.0], and
    Java's Parquet reader (NaN above every number, as Java's and Spark's predicates have it)
    would skip the row group for `x = NaN` or `x > 2`: one without min/max is always read."""
    leaves: list[tuple[str, pa.Array | pa.ChunkedArray]] = []

    def walk(path: str, values) -> None:
        t = values.type
        if pa.types.is_struct(t):
            chunks = values.chunks if isinstance(values, pa.ChunkedArray) else [values]
            children = [c.flatten() for c in chunks]  # offsets and the struct's nulls applied
            for i in range(t.num_fields):
                walk(f"{path}.{t.field(i).name}", pa.chunked_array([c[i] for c in children], t.field(i).type))
        elif pa.types.is_map(t):
            for part in ("keys", "items"):
                walk(f"{path}.key_value.{'key' if part == 'keys' else 'value'}", _flat(values, part))
        elif pa.types.is_list(t) or pa.types.is_large_list(t):
            walk(f"{path}.list.element", _flat(values, "values"))
        else:
            leaves.append((path, values))

    for name in table.column_names:
        walk(name, table.column(name))
    tainted = {path for path, values in leaves
               if pa.types.is_floating(values.type) and len(values) and pc.any(pc.is_nan(values)).as_py()}
    return True if not tainted else [path for path, _ in leaves if path not in tainted]


def _flat(values: pa.Array | pa.ChunkedArray, part: str) -> pa.Array:
    """The element (`values`), key or item array of a list or map column, all chunks."""
    chunks = values.chunks if isinstance(values, pa.ChunkedArray) else [values]
    arrays = [getattr(c, part) for c in chunks]
    t = values.type
    return pa.chunked_array(arrays, {"values": lambda: t.value_type, "keys": lambda: t.key_type,
                                     "items": lambda: t.item_type}[part]())


def _string_bounds(metadata: pq.FileMetaData, schema: pa.Schema) -> dict[str, tuple[str, str]]:
    """Footer min/max of the top-level string columns of a one-row-group file. Parquet orders
    strings by their UTF-8 bytes, as Paimon does; pyarrow leaves out (never truncates) bounds
    over its statistics size limit, and all-null columns have none."""
    if metadata.num_row_groups != 1:
        return {}
    strings = {f.name for f in schema if pa.types.is_string(f.type)}
    group = metadata.row_group(0)
    bounds = {}
    for i in range(group.num_columns):
        column = group.column(i)
        if column.path_in_schema in strings and column.statistics is not None and column.statistics.has_min_max:
            bounds[column.path_in_schema] = (column.statistics.min, column.statistics.max)
    return bounds


# ---- reading ------------------------------------------------------------------------------
def read_data_file(file_io: FileIO, path: str, fields: list[DataField],
                   columns: list[str] | None = None, file_size: int | None = None,
                   row_count: int | None = None, keep: np.ndarray | None = None,
                   orc_legacy_ltz: bool = True) -> pa.Table:
    """Read a data file as the canonical Arrow types of `fields` (projected to `columns`).

    `fields` are those of the schema the file was written with (`evolution.read_evolved` maps
    newer schemas onto them). Columns are found by name, as Java does; one the footer lacks, or
    declares other than a Paimon writer would, is a damaged footer (`_check_decoded`).
    `file_size` and `row_count` (from the file's manifest entry) are verified when given; a
    missing file raises MissingFileError, a damaged one CorruptFileError, both naming it.
    `keep` (a boolean per row: a deletion vector's complement) drops rows before
    dictionary-encoded strings are decoded (`_dictionary_columns`), so the dropped rows'
    strings are never built and the kept ones are built once. `orc_legacy_ltz`: the table's
    `orc.timestamp-ltz.legacy.type` (orc_ltz.py).
    """
    by_name = {f.name: f for f in fields}
    unknown = [c for c in columns or () if c not in by_name]
    if unknown:
        raise SchemaMismatchError(f"columns {unknown} are not among the fields {list(by_name)}")
    wanted = [by_name[c] for c in columns] if columns is not None else list(fields)
    fmt = format_from_file_name(path)
    if fmt not in READ_FORMATS:
        raise UnsupportedOperationError(f"cannot read {path}: file format {fmt!r} is not supported (Parquet, ORC "
                                        "and Avro data files are)")  # a sound file: `check` says unreadable
    try:
        source = file_io.open_input_file(path, file_size)
    except FileNotFoundError:
        raise MissingFileError(f"data file {path} is referenced by the table but does not exist (deleted by "
                               "hand, or expired while this read ran); `paimon-streaming check` lists every "
                               "missing file") from None
    with source:
        if file_size is not None:
            actual = source.size()
            if actual != file_size:
                raise CorruptFileError(f"data file {path} has {actual} bytes but its manifest entry records "
                                       f"{file_size} (truncated or replaced); `paimon-streaming check` lists "
                                       "every damaged file")
        raw, num_rows = _decode_stored(source, fmt, wanted, path, as_dictionary=keep is not None,
                                       orc_legacy_ltz=orc_legacy_ltz)
    if row_count is not None and num_rows != row_count:
        raise CorruptFileError(f"data file {path} holds {num_rows} rows but its manifest entry records "
                               f"{row_count} (damaged footer or replaced file)")
    _check_decoded(path, raw, wanted, num_rows, exact_scale=fmt == ORC)
    if keep is not None:
        if len(keep) != num_rows:
            raise CorruptFileError(f"data file {path} holds {num_rows} rows but its deletion vector covers {len(keep)}")
        num_rows = int(np.count_nonzero(keep))
        if raw:
            raw = dict(zip(raw, pa.table(raw).filter(from_numpy(keep)).columns))
    return _table(path, raw, wanted, num_rows)


def decode_file(data: bytes, file_format: str, fields: list[DataField], path: str) -> pa.Table:
    """A whole ORC or Parquet file held in memory (a metadata file of `manifest.format`),
    decoded and checked as `read_data_file` reads one written with `fields`."""
    raw, num_rows = _decode(pa.BufferReader(data), file_format, fields, path)
    _check_decoded(path, raw, fields, num_rows, exact_scale=file_format == ORC)
    return _table(path, raw, fields, num_rows)


def _decode_stored(source: pa.NativeFile, fmt: str, wanted: list[DataField], path: str,
                   as_dictionary: bool, orc_legacy_ltz: bool) -> tuple[dict[str, pa.ChunkedArray], int]:
    """`_decode` of a file as `FileIO.open_input_file` opened it. One read in place (remote and
    over REMOTE_WHOLE_FILE_BYTES, or local) fails alike when its bytes are damaged and when the
    store fails a ranged read (throttled past the SDK's retries, a gateway ignoring Range): the
    decoders wrap both. So before calling it damaged it is decoded once more through
    `RecordedReads`: a store failure then is the OSError it is, naming the file (callers retry
    it, `check` does not list the file as damaged), and a transient one is over."""
    try:
        return _decode(source, fmt, wanted, path, as_dictionary, orc_legacy_ltz)
    except CorruptFileError:
        if isinstance(source, pa.BufferReader):
            raise  # fetched whole: the store's errors were raised then, and these bytes are what it holds
    source.seek(0)  # Avro is read from where the failed decode stopped
    reads = RecordedReads(source)
    try:
        return _decode(pa.PythonFile(reads, mode="r"), fmt, wanted, path, as_dictionary, orc_legacy_ltz)
    except CorruptFileError:
        if reads.failure is None:
            raise
        raise OSError(f"reading data file {path} failed: {reads.failure}") from reads.failure


def _decode(source, fmt: str, wanted: list[DataField], path: str,
            as_dictionary: bool = False, orc_legacy_ltz: bool = True) -> tuple[dict[str, pa.ChunkedArray], int]:
    """The file's columns by name and its row count; CorruptFileError naming it when it does
    not decode."""
    try:
        if fmt == PARQUET:
            return _read_parquet(source, wanted, path, as_dictionary=as_dictionary)
        if fmt == ORC:
            return _read_orc(source, wanted, path, orc_legacy_ltz)
        return _read_avro(source, wanted, path)
    except PaimonError:
        raise
    except pa.ArrowInvalid as exc:
        if "Map keys must be annotated as required" in str(exc):  # a valid file pyarrow refuses
            raise UnsupportedOperationError(
                f"data file {path} has a MAP column whose keys the Parquet schema declares optional "
                "(as Paimon 0.8's writer did), which pyarrow cannot read (not even other columns of "
                "the file); rewrite its rows with Paimon Java 0.9 or newer (INSERT OVERWRITE; a compaction "
                "that only moves the file up a level keeps it)") from exc
        raise CorruptFileError(f"data file {path} cannot be decoded ({type(exc).__name__}: {exc}); "
                               "`paimon-streaming check` lists every damaged file") from exc
    except (pa.ArrowException, OSError, ValueError, EOFError) as exc:
        # truncated, overwritten or failing a page checksum: pyarrow's message omits the path
        # (UnicodeDecodeError, a ValueError, comes from a garbled footer's names)
        raise CorruptFileError(f"data file {path} cannot be decoded ({type(exc).__name__}: {exc}); "
                               "`paimon-streaming check` lists every damaged file") from exc


def _table(path: str, raw: dict[str, pa.ChunkedArray], wanted: list[DataField], num_rows: int) -> pa.Table:
    """The decoded columns as the canonical Arrow types of `wanted` (absent ones: nulls)."""
    arrays = [_conformed(path, raw[f.name], f) if f.name in raw else pa.nulls(num_rows, to_arrow(f.type))
              for f in wanted]
    if not arrays:
        return rows_only(num_rows)
    return pa.Table.from_arrays(arrays, schema=arrow_schema(wanted))


def rows_only(num_rows: int) -> pa.Table:
    """A table of `num_rows` rows and no columns: what a zero-column projection (a count query)
    reads; `pa.Table.from_arrays([])` would hold no rows."""
    return pa.table({"_": pa.nulls(num_rows)}).select([])


def concat_tables(tables: Sequence[pa.Table]) -> pa.Table:
    """`pa.concat_tables` of tables of one schema, keeping the rows of tables without columns (a
    count query's projection), which pyarrow's concatenation drops."""
    if tables and not tables[0].num_columns:
        return rows_only(sum(t.num_rows for t in tables))
    return pa.concat_tables(tables)


def _check_decoded(path: str, raw: dict[str, pa.ChunkedArray], wanted: list[DataField], num_rows: int,
                   exact_scale: bool) -> None:
    """The decoded columns against the schema the file was written with (`wanted` are fields
    of that schema): footers carry no checksum, and a flipped bit there can rename a column,
    change its type or drop rows of a row group, which would otherwise read as nulls, as other
    values or as fewer rows. Every Paimon writer (Java, pypaimon, ours) writes every column and
    ROW field of the file's schema (`_KEY_` columns only outside thin mode) in its type's family
    (`_decodes_as`); decimals at their scale in ORC (`exact_scale`), as Java's and Hive's writers
    do (Parquet: `_check_declared`)."""
    missing = [f.name for f in wanted if f.name not in raw and not f.name.startswith(KEY_PREFIX)]
    if missing:
        raise CorruptFileError(f"data file {path} has no column {missing[0]!r}, which the schema it was written "
                               "with has (a damaged footer); `paimon-streaming check` lists every damaged file")
    for f in wanted:
        column = raw.get(f.name)
        if column is None:
            continue
        if len(column) != num_rows:
            raise CorruptFileError(f"data file {path}: column {f.name!r} decodes to {len(column)} rows, its footer "
                                   f"says {num_rows} (a damaged footer)")
        for where, found, declared in _nodes(column.type, f.type):
            at = f" (at {where})" if where else ""
            if declared.root == "VARIANT" and pa.types.is_struct(found) and found.get_field_index("typed_value") >= 0:
                raise UnsupportedOperationError(
                    f"data file {path}: VARIANT column {f.name!r}{at} is shredded (typed sub-columns Java writes under "
                    "the table options 'parquet.variant.shreddingSchema' or 'variant.inferShreddingSchema'); "
                    "paimon-streaming reads plain variants only: remove those options and rewrite the files (a full "
                    "compaction by Java) to read them here")
            if found is None:
                raise CorruptFileError(f"data file {path}: column {f.name!r} has no field {where!r}, which the "
                                       "schema it was written with has (a damaged footer)")
            if not _decodes_as(found, declared, exact_scale):
                raise CorruptFileError(f"data file {path}: column {f.name!r} of type {f.type.sql()} is stored as "
                                       f"{found}{at} (a damaged footer, or a writer mixing up types)")


def _is_string_or_binary(a: pa.DataType) -> bool:
    return pa.types.is_string(a) or pa.types.is_large_string(a) or pa.types.is_binary(a) \
        or pa.types.is_large_binary(a) or pa.types.is_fixed_size_binary(a)


# Arrow types each Paimon type decodes to from any writer's files (other writers' strings may lack
# their UTF-8 annotation, ORC stores TIME as an integer, integers may be of another width: the
# cast that `conform` makes checks that the values fit).
_FAMILIES = {
    "BOOLEAN": pa.types.is_boolean, "TINYINT": pa.types.is_integer, "SMALLINT": pa.types.is_integer,
    "INT": pa.types.is_integer, "BIGINT": pa.types.is_integer, "FLOAT": pa.types.is_float32,
    "DOUBLE": pa.types.is_float64, "DATE": lambda a: pa.types.is_date32(a) or pa.types.is_int32(a),
    "TIME": lambda a: pa.types.is_time(a) or pa.types.is_integer(a),
    "TIMESTAMP": pa.types.is_timestamp, "TIMESTAMP_LTZ": pa.types.is_timestamp,
    "CHAR": _is_string_or_binary, "VARCHAR": _is_string_or_binary,
    "BINARY": _is_string_or_binary, "VARBINARY": _is_string_or_binary,
    "ROW": pa.types.is_struct, "ARRAY": lambda a: pa.types.is_list(a) or pa.types.is_large_list(a),
    "MAP": pa.types.is_map, "MULTISET": pa.types.is_map,
    "VARIANT": lambda a: pa.types.is_struct(a) and a.get_field_index("value") >= 0
    and a.get_field_index("metadata") >= 0,
}


def _decodes_as(found: pa.DataType, declared: DataType, exact_scale: bool) -> bool:
    """Whether a decoded type can hold `declared`'s values: a column decoding as another family
    (a string column as booleans, a DOUBLE as floats) is a damaged footer, which the cast would
    otherwise turn into other values. Decimals: at the declared scale when `exact_scale`."""
    if declared.root == "DECIMAL":
        return pa.types.is_decimal(found) and (found.scale == declared.scale or not exact_scale)
    family = _FAMILIES.get(declared.root)
    return family is None or family(found)


def _nodes(arrow: pa.DataType, t: DataType, where: str = ""):
    """(path, decoded type or None when absent, Paimon type) for `t` and every type nested in
    it, ROW fields matched by name as readers match them."""
    if pa.types.is_dictionary(arrow):
        arrow = arrow.value_type
    yield where, arrow, t
    if t.root == "ROW" and pa.types.is_struct(arrow):
        children = {arrow.field(i).name: arrow.field(i).type for i in range(arrow.num_fields)}
        for f in t.fields:
            inner = f"{where}.{f.name}" if where else f.name
            if f.name in children:
                yield from _nodes(children[f.name], f.type, inner)
            else:
                yield inner, None, f.type
    elif t.root == "ARRAY" and (pa.types.is_list(arrow) or pa.types.is_large_list(arrow)):
        yield from _nodes(arrow.value_type, t.element, f"{where}[]")
    elif t.root in ("MAP", "MULTISET") and pa.types.is_map(arrow):
        yield from _nodes(arrow.key_type, t.key or t.element, f"{where}[key]")
        if t.root == "MAP":
            yield from _nodes(arrow.item_type, t.value, f"{where}[value]")


def _misdeclared(arrow: pa.DataType, t: DataType) -> str | None:
    """Why a Parquet column a Paimon writer wrote (it carries a field id) cannot hold values of
    `t`, or None. Java and we write a timestamp in the unit of its precision and a decimal at
    its scale, and Java decodes by the declared type alone, so a footer saying otherwise was
    damaged (a unit or scale flipped there would read as values 1000 or 10 times off). Files
    from other writers (adopted by a migration, say) may use other units: those are converted."""
    for where, found, declared in _nodes(arrow, t):
        at = f" (at {where})" if where else ""
        if found is None:
            continue
        if declared.root in ("TIMESTAMP", "TIMESTAMP_LTZ"):
            unit = "ms" if declared.precision <= 3 else "us" if declared.precision <= 6 else "ns"
            if not pa.types.is_timestamp(found) or found.unit != unit:
                return f"is stored as {found}, not in {unit}{at}"
        elif declared.root == "DECIMAL" and not _decodes_as(found, declared, exact_scale=True):
            return f"is stored as {found}{at}"
    return None


def _conformed(path: str, column: pa.ChunkedArray, f: DataField) -> pa.ChunkedArray:
    try:
        return conform(column, to_arrow(f.type))
    except (pa.ArrowException, ValueError) as exc:
        raise CorruptFileError(f"data file {path}: column {f.name!r} holds {column.type}, which does not read as "
                               f"{f.type.sql()} ({exc}; a damaged footer or a foreign writer)") from exc


_MAGIC = {PARQUET: b"PAR1", ORC: b"ORC", AVRO: b"Obj\x01"}


def verify_data_file(file_io: FileIO, path: str, fields: list[DataField], file_size: int | None = None,
                     row_count: int | None = None) -> None:
    """Read a whole data file as `read_data_file` does (every column: every page checksum), and
    its leading magic bytes, which readers skip; CorruptFileError / MissingFileError naming it."""
    read_data_file(file_io, path, fields, None, file_size, row_count)
    fmt = format_from_file_name(path)
    with file_io.open_input_file(path) as source:
        head = source.read(len(_MAGIC[fmt]))
    if head != _MAGIC[fmt]:
        raise CorruptFileError(f"data file {path} starts with {head!r}, not the {fmt} magic {_MAGIC[fmt]!r} "
                               "(damaged header)")


def _read_parquet(source, wanted: list[DataField], path: str,
                  as_dictionary: bool = False) -> tuple[dict[str, pa.ChunkedArray], int]:
    """Columns by name. INT96 columns are read in the unit of their declared precision.
    `as_dictionary`: string columns that qualify (`_dictionary_columns`) stay dictionary-encoded.

    pyarrow's INT96 unit is per read; reading everything as ns would overflow p<=6 values
    outside 1677-2262, so a file holding INT96 is read once per needed unit. pyarrow's ns read
    wraps a value outside those years around without a word (Java writes years 1 to 9999): the
    values of another writer's INT96 columns are checked first (`int96.beyond_nanoseconds`).
    """
    file_name = _file_name(path)
    size = source.size()
    pre_buffer = size >= PREBUFFER_MIN_BYTES
    use_threads = size >= COLUMN_THREADS_MIN_BYTES
    pf = pq.ParquetFile(source, pre_buffer=pre_buffer, page_checksum_verification=PAGE_CHECKSUMS)
    written_as = (pf.metadata.metadata or {}).get(FILE_NAME_KEY.encode())
    if written_as is not None and written_as.decode("utf-8", "replace") != file_name:
        raise ValueError(f"the file was written as {written_as.decode('utf-8', 'replace')!r}: another file put "
                         "in this one's place")
    names = set(pf.schema_arrow.names)
    present = [f for f in wanted if f.name in names]
    if len(present) < len(wanted):  # absent: added by a later schema, or a damaged name in the footer
        ids = {fld.metadata.get(_FIELD_ID) for fld in pf.schema_arrow if fld.metadata}
        renamed = [f.name for f in wanted if f.name not in names and str(f.id).encode() in ids]
        if renamed:
            raise ValueError(f"the footer has no column named {renamed} but holds their field ids under other "
                             "names (a damaged footer)")
    maybe_int96 = any(f.type.root in _MAY_HOLD_TIMESTAMPS for f in present)
    if not maybe_int96 or not any(pf.schema.column(i).physical_type == "INT96" for i in range(len(pf.schema))):
        dictionary = _dictionary_columns(pf, present) if as_dictionary else []
        if dictionary:  # known from the footer only: open again on it, not read again
            pf = pq.ParquetFile(source, metadata=pf.metadata, pre_buffer=pre_buffer, read_dictionary=dictionary,
                                page_checksum_verification=PAGE_CHECKSUMS)
        table = _timestamps_of_int64(pf.read(columns=[f.name for f in present], use_threads=use_threads), present)
        _check_declared(table.schema, present)
        return dict(zip(table.column_names, table.columns)), pf.metadata.num_rows
    by_unit: dict[str, list[str]] = {}
    for f in present:
        by_unit.setdefault(_int96_unit(f.type), []).append(f.name)
    columns: dict[str, pa.ChunkedArray] = {}
    for unit, names_in_unit in by_unit.items():
        part = pq.ParquetFile(source, metadata=pf.metadata, pre_buffer=pre_buffer,
                              page_checksum_verification=PAGE_CHECKSUMS,
                              coerce_int96_timestamp_unit=unit)
        table = _timestamps_of_int64(part.read(columns=names_in_unit, use_threads=use_threads), present)
        _check_declared(table.schema, [f for f in present if f.name in names_in_unit])
        if unit == "ns" and written_as is None:  # ours come from Arrow nanoseconds
            for f in present:
                leaves = [i for i in range(len(pf.schema)) if pf.schema.column(i).physical_type == "INT96"
                          and pf.schema.column(i).path.split(".")[0] == f.name]
                if f.name in names_in_unit and leaves and beyond_nanoseconds(source, pf.metadata, leaves):
                    raise _timestamps_beyond_nanoseconds(path, f)
        columns.update(zip(table.column_names, table.columns))
    return columns, pf.metadata.num_rows


def _timestamps_beyond_nanoseconds(path: str, f: DataField) -> UnsupportedOperationError:
    """A sound file holding timestamps Arrow's nanoseconds cannot hold (`_beyond_nanoseconds`,
    `_read_orc`): refused by name rather than read as other instants."""
    return UnsupportedOperationError(
        f"data file {path}: column {f.name!r} ({f.type.sql()}) holds a timestamp outside 1677-09-21 .. "
        "2262-04-11, which pyarrow reads only as nanoseconds since 1970 (a TIMESTAMP(7-9) column, or any "
        "TIMESTAMP of an ORC file); Java's writers take years 1 to 9999. Read the table with Java, or have "
        "Java rewrite those rows (TIMESTAMP(0-6) columns of Parquet files hold years 1 to 9999 here)")


def _timestamps_of_int64(table: pa.Table, fields: list[DataField]) -> pa.Table:
    """Plain INT64 columns (and nested leaves) declared TIMESTAMP/LTZ of precision up to 6 as
    timestamps of Java's unit for that precision, as Java decodes them (ours in files that
    hold INT96, `_plain_int64_timestamps`)."""
    declared = {f.name: f.type for f in fields}
    schema = pa.schema([f.with_type(_int64_as_timestamp(f.type, declared[f.name])) if f.name in declared else f
                        for f in table.schema])
    return table if schema.equals(table.schema) else table.cast(schema)


def _int64_as_timestamp(arrow: pa.DataType, t: DataType) -> pa.DataType:
    if t.root in ("TIMESTAMP", "TIMESTAMP_LTZ"):
        if pa.types.is_int64(arrow) and t.precision <= 6:
            return pa.timestamp("ms" if t.precision <= 3 else "us", "UTC" if t.root == "TIMESTAMP_LTZ" else None)
        return arrow
    if t.root == "ROW" and pa.types.is_struct(arrow):
        by_name = {f.name: f.type for f in t.fields}
        return pa.struct([f.with_type(_int64_as_timestamp(f.type, by_name[f.name])) if f.name in by_name else f
                          for f in arrow])
    if t.root == "ARRAY" and pa.types.is_list(arrow):
        return pa.list_(arrow.value_field.with_type(_int64_as_timestamp(arrow.value_type, t.element)))
    if t.root in ("MAP", "MULTISET") and pa.types.is_map(arrow):
        item = _int64_as_timestamp(arrow.item_type, t.value) if t.root == "MAP" else arrow.item_type
        return pa.map_(arrow.key_field.with_type(_int64_as_timestamp(arrow.key_type, t.key or t.element)),
                       arrow.item_field.with_type(item))
    return arrow


def _check_declared(schema: pa.Schema, fields: list[DataField]) -> None:
    """`_misdeclared` for the columns with a field id (ValueError: the caller names the file)."""
    for f in fields:
        index = schema.get_field_index(f.name)
        if index < 0:
            raise ValueError(f"the footer names column {f.name!r} more than once (a damaged footer)")
        column = schema.field(index)
        if column.metadata and _FIELD_ID in column.metadata:
            wrong = _misdeclared(column.type, f.type)
            if wrong:
                raise ValueError(f"column {f.name!r} of type {f.type.sql()} {wrong} (a damaged footer)")


def _dictionary_columns(pf: pq.ParquetFile, fields: list[DataField]) -> list[str]:
    """Top-level string and binary columns to read as dictionaries before rows are dropped:
    those with a dictionary page in every row group and at most DICTIONARY_READ_BYTES of pages.
    The bound keeps the worst case small: a chunk whose dictionary overflowed into plain pages
    (which the footer cannot tell) has its plain values hashed into a dictionary, and that
    costs more than building the strings. Writers overflow at 1 MB of dictionary by default."""
    leaf = {pf.schema.column(i).path: i for i in range(len(pf.schema))}
    groups = [pf.metadata.row_group(g) for g in range(pf.metadata.num_row_groups)]
    out = []
    for f in fields:
        if not _is_string_like(f.type) or f.name not in leaf:
            continue
        chunks = [g.column(leaf[f.name]) for g in groups]
        if chunks and all(c.has_dictionary_page and c.total_uncompressed_size <= DICTIONARY_READ_BYTES for c in chunks):
            out.append(f.name)
    return out


def _is_string_like(t: DataType) -> bool:
    arrow = to_arrow(t)
    return pa.types.is_string(arrow) or pa.types.is_binary(arrow)


def _int96_unit(t: DataType) -> str:
    precision = _max_timestamp_precision(t)
    return "ns" if precision > 6 else "us" if precision > 3 else "ms"


def _read_avro(source, wanted: list[DataField], path: str) -> tuple[dict[str, pa.ChunkedArray], int]:
    """Columns by name. fastavro decodes the records in C, logical types included (decimals,
    dates, times; timestamps as instants, which pyarrow stores as the epoch value Java wrote),
    and pyarrow builds the wanted columns from them in C++. Avro has sync markers but no
    checksums, as ORC: damage is caught when it breaks decoding. fastavro decodes the null,
    deflate, bzip2, xz and zstandard codecs with what this package depends on, snappy (the
    default of Paimon before 0.9) through pyarrow (avro_codecs.py); lz4
    (`file.compression` of Java's writer) needs cramjam installed, which is said as such, not
    as a damaged file."""
    codec = "?"
    try:
        reader = fastavro.reader(source)
        schema = reader.writer_schema
        if isinstance(schema, list):  # Paimon before 0.9 wrote the row as a union ["null", record]
            schema = next((s for s in schema if isinstance(s, dict) and s.get("type") == "record"), None)
            if schema is None:
                raise ValueError(f"its writer schema is a union without a record: {reader.writer_schema}")
        names = {f["name"] for f in schema["fields"]}
        codec = reader.metadata.get("avro.codec", "null")
        records = list(reader)
    except (ValueError, EOFError, OSError) as exc:
        if "need to install" in str(exc):  # fastavro knows the codec but not its library
            raise UnsupportedOperationError(f"data file {path} is Avro compressed with {codec!r}, which fastavro "
                                            f"reads only with another library installed: {exc}") from None
        raise
    except Exception as exc:  # fastavro's own errors (schema resolution, bad unions, ...)
        raise ValueError(f"{type(exc).__name__}: {exc}") from exc
    present = [f for f in wanted if f.name in names]
    table = pa.Table.from_pylist(records, schema=pa.schema([pa.field(f.name, to_arrow(f.type)) for f in present]))
    return {f.name: table.column(f.name) for f in present}, len(records)


def _read_orc(source, wanted: list[DataField], path: str,
              legacy_ltz: bool = True) -> tuple[dict[str, pa.ChunkedArray], int]:
    """Columns by name. ORC pads CHAR(n) and Java's ORC reader right-trims it: so do we.
    `legacy_ltz` (`orc.timestamp-ltz.legacy.type`): LTZ values are stored shifted by the local
    zone's offset, and shifted back (orc_ltz.py).
    pyarrow reads ORC timestamps as nanoseconds and refuses one outside 1677-2262: the column
    holding it is named (`_timestamps_beyond_nanoseconds`), the file is not called damaged."""
    of = orc.ORCFile(source)
    names = set(of.schema.names)
    present = [f for f in wanted if f.name in names]
    try:
        table = of.read(columns=[f.name for f in present])
    except pa.ArrowInvalid as exc:
        if "out of range for nanosecond resolution" not in str(exc):
            raise
        for f in present:
            if f.type.root in _MAY_HOLD_TIMESTAMPS:
                try:
                    of.read(columns=[f.name])
                except pa.ArrowInvalid:
                    raise _timestamps_beyond_nanoseconds(path, f) from exc
        raise
    table.validate(full=True)  # ORC has no checksums: at least no invalid UTF-8 or offsets go on
    types = {f.name: f.type for f in wanted}
    columns = {name: pa.chunked_array([_leaves_mapped(c, types[name], "CHAR", _trimmed) for c in col.chunks])
               if _holds(types[name], "CHAR") else col
               for name, col in zip(table.column_names, table.columns)}
    if legacy_ltz:
        for f in present:
            if _holds(f.type, "TIMESTAMP_LTZ"):
                try:
                    columns[f.name] = _orc_ltz_mapped(columns[f.name], f.type, orc_ltz.from_stored)
                except pa.ArrowInvalid:
                    raise _timestamps_beyond_nanoseconds(path, f) from None
    return columns, of.nrows


def _orc_ltz_mapped(column: pa.ChunkedArray, t: DataType,
                    shift: Callable[[pa.Array, orc_ltz.Zone], pa.Array]) -> pa.ChunkedArray:
    """`column` (of Paimon type `t`) with its LTZ values, nested ones too, shifted by `shift` in
    the local zone (orc_ltz.py), each in the unit of its precision first (as Java reads it).
    ArrowInvalid when a value leaves the range of its unit."""
    zone = orc_ltz.local_zone()

    def leaf(arr: pa.Array, lt: DataType) -> pa.Array:
        return shift(_conform_array(arr, to_arrow(lt)), zone)
    chunks = [_leaves_mapped(c, t, "TIMESTAMP_LTZ", leaf) for c in column.chunks]
    return pa.chunked_array(chunks) if chunks else column


def orc_legacy_ltz_as_read(table: pa.Table, fields: list[DataField]) -> pa.Table:
    """`table` (columns named by `fields`, some may be absent) with its LTZ values as they read
    back from an ORC file written in legacy mode: those in a gap of the local zone's offsets (a
    wall time clocks skip) come back later by the gap's length, as in Java. Statistics, file
    indexes and rows kept for compaction are of these. SchemaMismatchError naming the column
    where a value leaves the range of its unit."""
    for f in fields:
        if f.name in table.column_names and _holds(f.type, "TIMESTAMP_LTZ"):
            i = table.column_names.index(f.name)
            column = _ltz_shifted(table.column(i), f, lambda a, z: orc_ltz.from_stored(orc_ltz.to_stored(a, z), z))
            table = table.set_column(i, table.schema.field(i), column)
    return table


def _ltz_shifted(column: pa.ChunkedArray, f: DataField,
                 shift: Callable[[pa.Array, orc_ltz.Zone], pa.Array]) -> pa.ChunkedArray:
    """`_orc_ltz_mapped` of a column being written: SchemaMismatchError naming it out of range."""
    try:
        return _orc_ltz_mapped(column, f.type, shift)
    except pa.ArrowInvalid:
        raise SchemaMismatchError(
            f"column {f.name!r} holds a TIMESTAMP WITH LOCAL TIME ZONE that, shifted by the local time zone's offset "
            f"as Java's ORC writer stores it ({ORC_LTZ_LEGACY} = true), falls outside what the file can "
            "hold; set the table option to false or use file.format = parquet") from None


def _holds(t: DataType, root: str) -> bool:
    """Whether `t` is of type `root` or holds one (in ROWs, ARRAYs, MAPs, MULTISETs)."""
    return t.root == root or any(_holds(c, root) for c in (t.element, t.key, t.value) if c is not None) or \
        any(_holds(f.type, root) for f in t.fields)


def _trimmed(arr: pa.Array, t: DataType) -> pa.Array:
    return pc.utf8_rtrim(arr.cast(pa.string()), characters=" ")


def _padded(arr: pa.Array, t: DataType) -> pa.Array:
    return pc.utf8_rpad(arr, width=t.precision, padding=" ")


def _leaves_mapped(arr: pa.Array, t: DataType, root: str, leaf: Callable[[pa.Array, DataType], pa.Array]) -> pa.Array:
    """`arr` (of Paimon type `t`) with `leaf` applied to its values of type `root`, in ROWs,
    ARRAYs, MAPs and MULTISETs too: ORC pads CHARs to their length at any depth (Java's reader
    trims them), Java's ORC writer shifts LTZ values at any depth (`_orc_ltz_mapped`)."""
    if t.root == root:
        return leaf(arr, t)
    if not _holds(t, root):
        return arr
    mask = arr.is_null() if arr.null_count else None
    if t.root == "ROW":
        children = [_leaves_mapped(arr.field(i), f.type, root, leaf) for i, f in enumerate(t.fields)]
        return pa.StructArray.from_arrays(children, fields=[arr.type.field(i).with_type(c.type)
                                                            for i, c in enumerate(children)], mask=mask)
    offsets, start = rebased_offsets(arr)
    end = start + offsets[-1].as_py()
    if t.root == "ARRAY":
        values = _leaves_mapped(arr.values.slice(start, end - start), t.element, root, leaf)
        return pa.ListArray.from_arrays(offsets, values, type=pa.list_(arr.type.value_field.with_type(values.type)),
                                        mask=mask)
    key_type, item_type = (t.key, t.value) if t.root == "MAP" else (t.element, None)  # a MULTISET: counts
    keys = _leaves_mapped(arr.keys.slice(start, end - start), key_type, root, leaf)
    items = arr.items.slice(start, end - start)
    items = items if item_type is None else _leaves_mapped(items, item_type, root, leaf)
    return pa.MapArray.from_arrays(offsets, keys, items, mask=mask,
                                   type=pa.map_(arr.type.key_field.with_type(keys.type),
                                                arr.type.item_field.with_type(items.type)))
