"""File indexes: per data file, an index of some columns that lets a filtered read skip the
file (Paimon's `file-index.<type>.columns`; the format in FORMAT.md and Paimon's fileindex spec).

Written here, for every data and changelog file of a table that asks for them, as Java's
writers write them: bloom filters (`bloom-filter`, bloom_filter.py), bitmap indexes (`bitmap`,
bitmap_index.py), bit-sliced indexes (`bsi`, bsi_index.py) and range bitmaps (`range-bitmap`,
range_bitmap_index.py). An index of at most
`file-index.in-manifest-threshold` bytes (default 500) travels in the file's manifest entry
(`embedded_index`), a larger one is the file `<data file>.index` beside it (`extra_files`).
Read here: all four in any writer's files, to skip files an equality or IN filter cannot
match, and by range bitmaps files a range filter cannot (`file-index.read.enabled`, default
true).

The container: magic, version 1, head length, then per column its index types with the
offset and length of each index's bytes, the head's "redundant" bytes, then the bodies. Ours
carry a CRC32 in the redundant bytes (Java reads past them), so a damaged index of ours is an
error, never a file wrongly skipped; a `.index` file of ours also carries its own name there, so
another data file's index put in its place is an error too. Java's have no check (their
structure is verified).
"""
from __future__ import annotations

import struct
import zlib
from dataclasses import dataclass
from typing import Any, Callable

import numpy as np
import pyarrow as pa

from . import bitmap_index, bsi_index, range_bitmap_index
from .bitmap_index import BITMAPPABLE, BitmapIndex
from .bsi_index import BitSlicedIndex
from .range_bitmap_index import RangeBitmapIndex
from .bloom_filter import DEFAULT_FPP, DEFAULT_ITEMS, HASHABLE, BloomFilter64, value_hashes
from .index_values import FLOATS, STRINGS, java_numbers
from .errors import CorruptFileError, InvalidOptionError, MissingFileError
from .file_cache import ImmutableFileCache
from .fileio import FileIO
from .option_text import parse_bool, parse_memory_size
from .predicate import Filter, Term, term_may_match
from .types import DataField, DataType, to_arrow

PREFIX = "file-index."
BLOOM_FILTER = "bloom-filter"
BITMAP = "bitmap"
BSI = "bsi"
RANGE_BITMAP = "range-bitmap"
KINDS = (BLOOM_FILTER, BITMAP, BSI, RANGE_BITMAP)  # the index types written and read here
EQUALITIES = ("=", "==", "in")  # the terms every kind answers
RANGES = ("<", "<=", ">", ">=")  # the terms range bitmaps answer too
INDEX_SUFFIX = ".index"
IN_MANIFEST_THRESHOLD = "file-index.in-manifest-threshold"
READ_ENABLED = "file-index.read.enabled"

_MAGIC = 1493475289347502
_VERSION = 1
_EMPTY = -1  # an index with no bytes (Java: a map column's key never seen)
_CHECK_MARK = b"PSC1"  # our redundant bytes: this mark, then the CRC32 of the file without them
_OWNED_MARK = b"PSC2"  # the same, then the `.index` file's own name (Java's writeUTF)

Indexes = dict[str, dict[str, bytes | None]]  # column -> index type -> its bytes (None: empty)


@dataclass(frozen=True)
class BloomFilterColumn:
    column: str
    items: int
    fpp: float


@dataclass(frozen=True)
class BitmapColumn:
    column: str
    version: int
    block_size: int


@dataclass(frozen=True)
class RangeBitmapColumn:
    column: str
    chunk_size: int


@dataclass(frozen=True)
class FileIndexSpec:
    """What a table's options ask its writers to index in each file."""
    bloom_filters: tuple[BloomFilterColumn, ...] = ()
    bitmaps: tuple[BitmapColumn, ...] = ()
    bit_sliced: tuple[str, ...] = ()  # columns
    range_bitmaps: tuple[RangeBitmapColumn, ...] = ()
    in_manifest_threshold: int = 500

    @staticmethod
    def of(options: dict[str, str], fields: tuple[DataField, ...] | list[DataField]) -> "FileIndexSpec":
        """The spec of a table's options; InvalidOptionError for what Java's writers reject (an
        unknown column or one of a type the index cannot take, a column option of a column not
        indexed, a bad option value)."""
        by_name = {f.name: f for f in fields}
        columns: dict[str, dict[str, dict[str, str]]] = {}  # index type -> column -> options
        for key, value in options.items():
            if key.startswith(PREFIX) and key.endswith(".columns"):
                kind = key[len(PREFIX):-len(".columns")]
                for name in str(value).split(","):
                    if not name.strip():
                        raise InvalidOptionError(f"table option '{key}' = '{value}' names an empty column")
                    columns.setdefault(kind, {})[name.strip()] = {}
        for key, value in options.items():
            parts = key[len(PREFIX):].split(".") if key.startswith(PREFIX) else []
            if len(parts) == 3 and not key.endswith(".columns"):
                kind, column, option = parts
                if column not in columns.get(kind, {}):
                    raise InvalidOptionError(f"table option '{key}' is for column '{column}', which "
                                             f"'{PREFIX}{kind}.columns' does not name")
                columns[kind][column][option] = str(value)
        blooms = [BloomFilterColumn(column, _items(opts, column), _fpp(opts, column))
                  for column, opts in _indexed(columns, BLOOM_FILTER, by_name, lambda t: t.root in HASHABLE,
                                               "numbers (not DECIMAL), strings, binary, dates, times and "
                                               "timestamps")]
        bitmaps = [BitmapColumn(column, _bitmap_version(opts, column), _block_size(opts, column))
                   for column, opts in _indexed(columns, BITMAP, by_name, lambda t: t.root in BITMAPPABLE,
                                                "numbers (not DECIMAL), strings, booleans, dates, times "
                                                "and timestamps")]
        bit_sliced = [column for column, _ in _indexed(columns, BSI, by_name, bsi_index.indexable,
                                                       "integers, DECIMALs of up to 18 digits, dates, times "
                                                       "and timestamps")]
        range_bitmaps = [RangeBitmapColumn(column, _chunk_size(opts, column, by_name[column].type))
                         for column, opts in _indexed(columns, RANGE_BITMAP, by_name, range_bitmap_index.indexable,
                                                      "numbers, DECIMALs of up to 18 digits, strings, booleans, "
                                                      "dates, times and timestamps of precision up to 6")]
        threshold = options.get(IN_MANIFEST_THRESHOLD)
        return FileIndexSpec(tuple(blooms), tuple(bitmaps), tuple(bit_sliced), tuple(range_bitmaps),
                             500 if threshold is None else parse_memory_size(str(threshold)))

    def build(self, rows: pa.Table, fields: dict[str, DataField]) -> Indexes | None:
        """The indexes of one data file's `rows` (its table columns), or None to write none
        (`encode` makes the file)."""
        if not (self.bloom_filters or self.bitmaps or self.bit_sliced or self.range_bitmaps):
            return None
        indexes: Indexes = {}
        for spec in self.bloom_filters:
            bloom = BloomFilter64.sized(spec.items, spec.fpp)
            bloom.add(value_hashes(rows.column(spec.column), fields[spec.column].type))
            indexes.setdefault(spec.column, {})[BLOOM_FILTER] = bloom.to_bytes()
        for spec in self.bitmaps:
            try:
                indexes.setdefault(spec.column, {})[BITMAP] = bitmap_index.build(
                    rows.column(spec.column), fields[spec.column].type, spec.version, spec.block_size)
            except bitmap_index.BlockSizeError as exc:
                raise InvalidOptionError(f"table option '{PREFIX}{BITMAP}.{spec.column}.index-block-size' "
                                         f"is too small for column '{spec.column}': {exc} (Java's writers "
                                         "fail alike)") from None
        for column in self.bit_sliced:
            data = bsi_index.build(rows.column(column), fields[column].type)
            if data is not None:  # None: a value Java cannot index; Java reads the file whole
                indexes.setdefault(column, {})[BSI] = data
        for spec in self.range_bitmaps:
            indexes.setdefault(spec.column, {})[RANGE_BITMAP] = range_bitmap_index.build(
                rows.column(spec.column), fields[spec.column].type, spec.chunk_size)
        return indexes or None


def _indexed(columns: dict[str, dict[str, dict[str, str]]], kind: str, by_name: dict[str, DataField],
             accepts: Callable[[DataType], bool], what: str) -> list[tuple[str, dict[str, str]]]:
    """The columns and options of index `kind`, each a column of the table of a type it indexes.
    Map values by key (`col[key]`) are skipped: not written here (nor read), and Java reads files
    without them whole, so a table that asks for them is still written, only less prunable."""
    out = []
    for column, opts in columns.get(kind, {}).items():
        where = f"'{PREFIX}{kind}.columns'"
        if "[" in column:
            continue
        field = by_name.get(column)
        if field is None:
            raise InvalidOptionError(f"{where} names '{column}', which is not a column of the table "
                                     f"{list(by_name)}")
        if not accepts(field.type):
            raise InvalidOptionError(f"{where} names '{column}' of type {field.type}: Paimon's {kind} index "
                                     f"indexes {what}")
        out.append((column, opts))
    return out


def _bitmap_version(opts: dict[str, str], column: str) -> int:
    version = opts.get("version", str(bitmap_index.VERSION_2)).strip()
    if version not in ("1", "2"):
        raise InvalidOptionError(f"table option '{PREFIX}{BITMAP}.{column}.version' = '{version}': Paimon's "
                                 "bitmap index has versions 1 and 2")
    return int(version)


def _block_size(opts: dict[str, str], column: str) -> int:
    size = parse_memory_size(opts.get("index-block-size", str(bitmap_index.DEFAULT_BLOCK_SIZE)))
    if not 16 <= size < 1 << 31:
        raise InvalidOptionError(f"table option '{PREFIX}{BITMAP}.{column}.index-block-size' = "
                                 f"'{opts['index-block-size']}' must be a size of at least 16 bytes")
    return size


def _chunk_size(opts: dict[str, str], column: str, t: DataType) -> int:
    if "chunk-size" not in opts:
        return range_bitmap_index.default_chunk_size(t)
    try:
        size = parse_memory_size(opts["chunk-size"])
    except ValueError:
        size = -1
    if not 0 <= size < 1 << 31:
        raise InvalidOptionError(f"table option '{PREFIX}{RANGE_BITMAP}.{column}.chunk-size' = "
                                 f"'{opts['chunk-size']}' must be a size such as 16 kb")
    return size


def _items(opts: dict[str, str], column: str) -> int:
    try:
        items = int(opts.get("items", DEFAULT_ITEMS))
    except ValueError:
        items = 0
    if items < 1:
        raise InvalidOptionError(f"table option '{PREFIX}{BLOOM_FILTER}.{column}.items' = '{opts['items']}' "
                                 "must be a positive number of distinct values a file holds")
    return items


def _fpp(opts: dict[str, str], column: str) -> float:
    try:
        fpp = float(opts.get("fpp", DEFAULT_FPP))
    except ValueError:
        fpp = 0.0
    if not 0.0 < fpp < 1.0:
        raise InvalidOptionError(f"table option '{PREFIX}{BLOOM_FILTER}.{column}.fpp' = '{opts['fpp']}' "
                                 "must be a false positive rate between 0 and 1")
    return fpp


def range_bitmap_columns(options: dict[str, str]) -> set[str]:
    """The columns a table's options give range bitmaps (by their names in its options)."""
    return {c.strip() for c in str(options.get(f"{PREFIX}{RANGE_BITMAP}.columns", "")).split(",") if c.strip()}


def read_enabled(options: dict[str, str]) -> bool:
    return parse_bool(str(options.get(READ_ENABLED, "true")))


# ---- the container -------------------------------------------------------------------------
def _java_utf(text: str) -> bytes:
    """Java's DataOutput.writeUTF: a 2-byte length, then modified UTF-8."""
    units = np.frombuffer(text.encode("utf-16-be", "surrogatepass"), ">u2")
    out = bytearray()
    for u in units.tolist():
        if 0 < u < 0x80:
            out.append(u)
        elif u < 0x800:
            out += bytes((0xC0 | u >> 6, 0x80 | u & 0x3F))
        else:
            out += bytes((0xE0 | u >> 12, 0x80 | (u >> 6) & 0x3F, 0x80 | u & 0x3F))
    return struct.pack(">H", len(out)) + bytes(out)


def _read_java_utf(data: bytes, at: int) -> tuple[str, int]:
    (n,) = struct.unpack_from(">H", data, at)
    raw = data[at + 2:at + 2 + n]
    if len(raw) != n:
        raise ValueError("a name past the head's end")
    text = raw.replace(b"\xc0\x80", b"\x00").decode("utf-8", "surrogatepass")
    return text.encode("utf-16-be", "surrogatepass").decode("utf-16-be"), at + 2 + n


def encode(indexes: Indexes, own_name: str | None = None) -> bytes:
    """An index file of `indexes` (column -> index type -> bytes), with our check; `own_name`:
    the name of the `.index` file it will be, kept in it (an embedded index has none)."""
    names = b"".join(_java_utf(c) + b"".join(_java_utf(k) for k in kinds) for c, kinds in indexes.items())
    entries = sum(len(kinds) for kinds in indexes.values())
    check = _CHECK_MARK if own_name is None else _OWNED_MARK
    owner = b"" if own_name is None else _java_utf(own_name)
    redundant = len(check) + 4 + len(owner)
    head_length = 8 + 4 + 4 + 4 + 8 * entries + 4 * len(indexes) + 4 + len(names) + redundant
    head = [struct.pack(">qiii", _MAGIC, _VERSION, head_length, len(indexes))]
    body = []
    at = head_length
    for column, kinds in indexes.items():
        head.append(_java_utf(column) + struct.pack(">i", len(kinds)))
        for kind, data in kinds.items():
            if data is None:
                head.append(_java_utf(kind) + struct.pack(">ii", _EMPTY, 0))
            else:
                head.append(_java_utf(kind) + struct.pack(">ii", at, len(data)))
                body.append(data)
                at += len(data)
    head.append(struct.pack(">i", redundant))
    unchecked = b"".join(head)
    crc = zlib.crc32(b"".join(body), zlib.crc32(owner, zlib.crc32(unchecked)))
    return unchecked + check + struct.pack(">I", crc) + owner + b"".join(body)


def decode(data: bytes, where: str, own_name: str | None = None) -> Indexes:
    """The indexes (column -> index type -> bytes) of an index file; CorruptFileError naming
    `where` when it is not one, its structure is broken, our check fails, or it names itself
    other than `own_name` (the `.index` file it was read as)."""
    try:
        magic, version, head_length, columns = struct.unpack_from(">qiii", data)
        if magic != _MAGIC:
            raise ValueError("not a file index (wrong magic number)")
        if version != _VERSION:
            raise ValueError(f"file index version {version}, not 1")
        if not 24 <= head_length <= len(data):
            raise ValueError(f"a head of {head_length} bytes in {len(data)}")
        at = 20
        out: Indexes = {}
        for _ in range(columns):
            column, at = _read_java_utf(data, at)
            (kinds,) = struct.unpack_from(">i", data, at)
            at += 4
            for _ in range(kinds):
                kind, at = _read_java_utf(data, at)
                start, length = struct.unpack_from(">ii", data, at)
                at += 8
                if start == _EMPTY:
                    out.setdefault(column, {})[kind] = None
                    continue
                if start < head_length or length < 0 or start + length > len(data):
                    raise ValueError(f"index {kind!r} of column {column!r} at bytes {start}+{length} "
                                     f"of {len(data)}")
                out.setdefault(column, {})[kind] = data[start:start + length]
        if at > head_length:
            raise ValueError("the head's entries run past its length")
        _verify_check(data, at, head_length, own_name)
        return out
    except (ValueError, struct.error, UnicodeDecodeError) as exc:
        raise CorruptFileError(f"file index {where} is damaged: {exc}") from None


def _verify_check(data: bytes, at: int, head_length: int, own_name: str | None) -> None:
    """Our CRC32 (and name) when the redundant bytes carry them (Java's files have none)."""
    (redundant,) = struct.unpack_from(">i", data, at)
    mark = data[at + 4:at + 4 + len(_CHECK_MARK)]
    if mark == _CHECK_MARK and redundant == len(_CHECK_MARK) + 4:
        name = None
    elif mark == _OWNED_MARK and redundant > len(_OWNED_MARK) + 4:
        name, name_end = _read_java_utf(data, at + 4 + len(_OWNED_MARK) + 4)
        if name_end != at + 4 + redundant:
            raise ValueError("the name in the check does not end the head")
    else:
        return
    end = at + 4 + redundant
    if end != head_length:
        raise ValueError("the check does not end the head")
    (expected,) = struct.unpack_from(">I", data, at + 4 + len(_CHECK_MARK))
    owner = data[at + 4 + len(_CHECK_MARK) + 4:end]
    if zlib.crc32(data[end:], zlib.crc32(owner, zlib.crc32(data[:at + 4]))) != expected:
        raise ValueError("checksum mismatch")
    if name is not None and own_name is not None and name != own_name:
        raise ValueError(f"it is the index file {name!r}, put in the place of {own_name!r}")


# ---- skipping files ------------------------------------------------------------------------

# Decoded `.index` files by path (file_cache.py): a filtered read repeated in a process (point
# lookups) reads each file's index once.
_INDEX_FILES: ImmutableFileCache[Indexes] = ImmutableFileCache(
    4096, max_weight=256 << 20, weigh=lambda indexes: sum(len(b or b"") for kinds in indexes.values()
                                                           for b in kinds.values()))


def indexes_of(file_io: FileIO, data_file_path: str, embedded: bytes | None, extra_files: tuple[str, ...]) \
        -> Indexes | None:
    """A data file's indexes: embedded in its manifest entry, or its `.index` extra file (read
    beside the data file); None when it has none (or several, which Java refuses to read)."""
    if embedded is not None:
        return decode(embedded, f"embedded in the manifest entry of {data_file_path}")
    names = [name for name in extra_files if name.endswith(INDEX_SUFFIX)]
    if len(names) != 1:
        return None
    path = f"{data_file_path.rsplit('/', 1)[0]}/{names[0]}"
    cached = _INDEX_FILES.get(path)
    if cached is None:
        try:
            data = file_io.read_bytes(path)
        except FileNotFoundError:
            raise MissingFileError(f"file index {path} of data file {data_file_path} is referenced by the "
                                   "manifest but does not exist; `paimon-streaming check` lists every "
                                   "missing file") from None
        cached = decode(data, path, names[0])
        _INDEX_FILES.put(path, cached)
    return cached


def verify(indexes: Indexes | None, where: str, fields: dict[str, DataField]) -> None:
    """CorruptFileError naming `where` when an index in `indexes` of the file's columns
    (`fields`, by name) is not one: bloom filters parse; the other kinds parse and their bitmaps
    name only the file's rows (a bitmap index's each row once; a range bitmap's dictionary is
    strictly ascending and its codes name each value)."""
    for column, kinds in (indexes or {}).items():
        field = fields.get(column)
        for kind, data in kinds.items():
            if data is None or kind not in KINDS or field is None:
                continue
            try:
                index = _parse(kind, data, field.type)
                if kind != BLOOM_FILTER:
                    index.verify()
            except (ValueError, struct.error) as exc:
                raise CorruptFileError(f"file index of {where} is damaged: column {column!r}, "
                                       f"{kind} index: {exc}") from None


def _parse(kind: str, data: bytes, t: DataType) -> BloomFilter64 | BitmapIndex | BitSlicedIndex | RangeBitmapIndex:
    if kind == BLOOM_FILTER:
        return BloomFilter64.from_bytes(data)
    if kind == RANGE_BITMAP:
        return RangeBitmapIndex(data, t)
    return BitmapIndex(data, t) if kind == BITMAP else BitSlicedIndex(data, t)


def may_match(indexes: Indexes, flt: Filter, columns: dict[str, DataField], where: str,
              literal_memo: dict | None = None) -> bool:
    """Whether a file with these `indexes` may hold rows `flt` matches: False only when every
    disjunct has an equality or IN term whose values one of the column's indexes surely lacks,
    or a range term outside the values of the column's range bitmap.

    `columns`: the filter's columns (by current name) the file's index can answer, each the
    file's own field (its name in the index) of the same type as now. `literal_memo`: a dict
    kept over the files of one plan, so each term's values are converted once."""
    if flt.disjuncts is None:
        return True
    memo = {} if literal_memo is None else literal_memo
    parsed: dict[tuple[str, str], BloomFilter64 | BitmapIndex | BitSlicedIndex | RangeBitmapIndex] = {}
    for conj in flt.disjuncts:
        if all(_term_may_match(t, indexes, columns, parsed, memo, where) for t in conj):
            return True
    return False


def _term_may_match(t: Term, indexes: Indexes, columns: dict[str, DataField], parsed: dict, memo: dict,
                    where: str) -> bool:
    if t.op not in EQUALITIES + RANGES or t.column not in columns:
        return True
    field = columns[t.column]
    for kind, data in indexes.get(field.name, {}).items():
        if data is None or kind not in KINDS or (t.op in RANGES and kind != RANGE_BITMAP):
            continue
        literals = None
        if t.op in EQUALITIES:
            key = (id(t), field.type, kind)
            if key not in memo:
                memo[key] = _literals(list(t.value) if t.op == "in" else [t.value], field, kind)
            literals = memo[key]
            if literals is None:
                continue
        elif field.type.root in FLOATS:
            continue  # left to statistics: the range bitmap orders -0.0 and NaN as Float.compare
        try:
            if (field.name, kind) not in parsed:
                parsed[field.name, kind] = _parse(kind, data, field.type)
            index = parsed[field.name, kind]
            if not (_range_may_match(t, index) if literals is None else np.any(index.may_contain(literals))):
                return False
        except (ValueError, struct.error) as exc:
            raise CorruptFileError(f"file index {where} is damaged: column {field.name!r}, {kind} "
                                   f"index: {exc}") from None
    return True


def _range_may_match(t: Term, index: RangeBitmapIndex) -> bool:
    """A range term against a range bitmap's smallest and largest value, compared as the files'
    statistics are (predicate.term_may_match): what a table without statistics
    (`metadata.stats-mode` = `none`) prunes by, as Java's readers do."""
    if index.cardinality == 0:
        return False  # every value null: no comparison holds
    bounds = index.bounds()
    return bounds is None or term_may_match(t, *bounds, None, index.rows)


def _literals(values: list[Any], field: DataField, kind: str) -> np.ndarray | list[bytes] | None:
    """A term's values as the column's index `kind` holds them (bloom filters: their hashes;
    the other kinds: Java's numbers, or UTF-8 bytes), or None when one of them is
    not exactly a value of the column (the file cannot be ruled out by it) or is a float zero or
    NaN (SQL's 0.0 = -0.0 differ in their bits)."""
    if any(v is None for v in values):
        return None
    try:
        array = pa.array(values, to_arrow(field.type))
    except (pa.ArrowInvalid, pa.ArrowTypeError, TypeError, ValueError, OverflowError):
        return None
    if field.type.root in ("FLOAT", "DOUBLE"):
        floats = array.to_numpy(zero_copy_only=False)
        if (floats == 0).any() or np.isnan(floats).any():
            return None
    if kind == BLOOM_FILTER:
        return value_hashes(array, field.type)
    if field.type.root in STRINGS:
        return array.cast(pa.binary()).to_pylist()
    return java_numbers(array, field.type)
