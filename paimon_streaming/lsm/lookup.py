"""Lookup: at which row positions of older data files do a batch's keys occur?

Data files never change, so each file's key index is built once and cached by file name.
Lookups cost O(batch · log file), not O(file):

* a single integer-like key (INT, BIGINT, DATE, ...): the file's keys are already sorted in
  Paimon's key order, so the index is the key column itself and `searchsorted` finds matches;
* any other key: the index holds a 64-bit hash of each key's BinaryRow (two independent
  Murmur3 seeds) sorted with its positions; hash matches are confirmed by comparing the
  BinaryRow bytes, so a collision can never mark a wrong row.

Files whose [min key, max key] range cannot hold any batch key are skipped before any I/O
(by the caller). The cache (`KeyIndexCache`, one per process: `KEY_INDEXES`) has two tiers,
so a lookup's cost tracks the batch rather than the table:

* memory: a byte-bounded LRU of indexes. An index read back from disk enters it only when it
  fits without evicting another: a table whose indexes outgrow the tier is probed file after
  file every batch, a cyclic scan under which LRU would miss memory on every probe; this way
  the resident indexes keep answering their share (at 1.5x the tier, two probes in three);
* local disk: an index evicted from memory is spilled (integer keys as raw int64s, others as
  an Arrow IPC file) and read back instead of re-reading the data file (byte-bounded LRU too,
  files unused for the retention time are dropped, the directory is removed at exit);
* a bloom filter of a file's keys is built when its index leaves memory (an index in memory
  answers as fast as a filter) and stays in memory (~1.2 bytes a key, an LRU of 64 mb by
  default: ~50 million keys), also after the index left both tiers, so a probe it rules out
  for all batch keys costs no disk read, no index load and no data file read
  (`KeyIndexCache.positions`). A filter can rule out a whole batch only when batch size ×
  false-positive rate is small (a 1 % filter skips a 10-key batch 90 % of the time, a
  1,000-key batch almost never), so it is consulted only then: it pays off for the small
  per-bucket batches of frequent streaming commits against many older files.

Configuration (Paimon's option keys; the cache is process-wide, so they are read from the
environment when the module is imported, as `PAIMON_` + the key upper-cased with `.` and `-`
as `_`, e.g. PAIMON_LOOKUP_CACHE_MAX_MEMORY_SIZE="1 gb", or set with `KEY_INDEXES.configure`):

* `lookup.cache-max-memory-size` (256 mb, as Paimon): memory tier bound;
* `lookup.cache-max-disk-size` (unbounded, as Paimon): disk tier bound;
* `lookup.cache-file-retention` (1 h, as Paimon): disk files unused that long are dropped;
* `lookup.cache.bloom.filter.enabled` (true, as Paimon);
* `lookup.cache.bloom.filter.fpp` (0.01 ≈ 10 bits a key; Paimon's default is 0.05, but here a
  file is skipped only when *every* batch key misses, so the per-key rate compounds);
* `lookup.cache.dir` (PAIMON_LOOKUP_CACHE_DIR; not a Paimon key): where the per-process
  spill directory is created (default: tempfile.gettempdir()).
"""
from __future__ import annotations

import atexit
import os
import shutil
import tempfile
import time
from collections import OrderedDict
from dataclasses import dataclass, field
from threading import Lock
from typing import Callable, Iterable, Mapping, Sequence

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from ..binary_row import encode_rows, hash_rows
from ..errors import InvalidOptionError
from ..option_text import parse_bool, parse_duration_ms, parse_memory_size
from ..types import DataType

_INT_ROOTS = {"TINYINT", "SMALLINT", "INT", "BIGINT", "DATE"}
_SECOND_SEED = 0x2545F491
_INTS_SUFFIX = ".ints"
_INDEX_OVERHEAD = 256  # bytes of Python objects per cached index, so even empty ones count


def is_int_key(types: Sequence[DataType]) -> bool:
    return len(types) == 1 and types[0].root in _INT_ROOTS


def key_rows(columns: Sequence[pa.Array | pa.ChunkedArray], types: Sequence[DataType]) -> pa.Array:
    """The keys' BinaryRows as key equality sees them: equal rows exactly for equal keys.

    A float key is taken as Java's key comparator takes it (0.0 and -0.0 one key, every NaN one
    key, as `merge_engine` merges them), not by its raw bits: -0.0 as 0.0, any NaN as the one
    canonical NaN."""
    return encode_rows([_canonical_float(c) if pa.types.is_floating(c.type) else c for c in columns], list(types))


def _canonical_float(column: pa.Array | pa.ChunkedArray) -> pa.Array | pa.ChunkedArray:
    plus_zero = pc.add(column, pa.scalar(0, column.type))  # -0.0 + 0.0 is 0.0
    return pc.if_else(pc.is_nan(plus_zero), pa.scalar(float("nan"), column.type), plus_zero)


def _hash64(encoded: pa.Array) -> np.ndarray:
    h1 = hash_rows(encoded).astype(np.int64) & 0xFFFFFFFF
    h2 = hash_rows(encoded, seed=_SECOND_SEED).astype(np.int64) & 0xFFFFFFFF
    return ((h1 << 32) | h2).view(np.uint64)


def _mix64(values: np.ndarray) -> np.ndarray:
    """64-bit hashes of int64 keys (SplitMix64's finalizer), for the bloom filters."""
    z = values.astype(np.int64).view(np.uint64)
    with np.errstate(over="ignore"):
        z = z + np.uint64(0x9E3779B97F4A7C15)
        z = (z ^ (z >> np.uint64(30))) * np.uint64(0xBF58476D1CE4E5B9)
        z = (z ^ (z >> np.uint64(27))) * np.uint64(0x94D049BB133111EB)
    return z ^ (z >> np.uint64(31))


def int_keys(column: pa.Array | pa.ChunkedArray) -> np.ndarray:
    """An integer-like key column as int64 (DATE as its day number)."""
    col = column.combine_chunks() if isinstance(column, pa.ChunkedArray) else column
    if pa.types.is_date(col.type):
        col = col.cast(pa.int32())
    return col.to_numpy(zero_copy_only=False).astype(np.int64)


@dataclass
class BatchKeys:
    """A batch's (distinct) keys, prepared once for probing many files."""
    types: tuple[DataType, ...]
    ints: np.ndarray | None = None          # sorted int64 keys (integer-like single key)
    hashes: np.ndarray | None = None        # sorted uint64 hashes (other keys)
    encoded: pa.Array | None = None         # BinaryRows, in `hashes` order
    _bloom_hashes: np.ndarray | None = field(default=None, repr=False, compare=False)

    @staticmethod
    def of(keys: pa.Table, types: Sequence[DataType]) -> "BatchKeys":
        types = tuple(types)
        if is_int_key(types):
            return BatchKeys(types, ints=sorted_distinct(int_keys(keys.column(0))))
        encoded = key_rows(keys.columns, types)
        hashes = _hash64(encoded)
        order = np.argsort(hashes, kind="stable")
        return BatchKeys(types, hashes=hashes[order], encoded=encoded.take(pa.array(order)))

    @staticmethod
    def slices(keys: pa.Table, types: Sequence[DataType], ranges: Sequence[tuple[int, int]]) -> list["BatchKeys"]:
        """The batch keys of each [start, stop) range of `keys` (sorted by key, distinct).
        Integer keys are converted once and sliced (their sorted order is the key order);
        other keys are prepared per range (their probe order is by hash)."""
        types = tuple(types)
        if is_int_key(types):
            ints = int_keys(keys.column(0))
            return [BatchKeys(types, ints=ints[start:stop]) for start, stop in ranges]
        return [BatchKeys.of(keys.slice(start, stop - start), types) for start, stop in ranges]

    def __len__(self) -> int:
        return len(self.ints) if self.ints is not None else len(self.hashes)

    @property
    def bloom_hashes(self) -> np.ndarray:
        """The keys' 64-bit hashes as the files' bloom filters hold them (computed once)."""
        if self._bloom_hashes is None:
            self._bloom_hashes = _mix64(self.ints) if self.ints is not None else self.hashes
        return self._bloom_hashes


def sorted_distinct(values: np.ndarray) -> np.ndarray:
    """np.unique without its hashing path: batches arrive sorted by key, so this is one pass."""
    if len(values) > 1 and not (values[1:] >= values[:-1]).all():
        values = np.sort(values)
    return values[np.r_[True, values[1:] != values[:-1]]] if len(values) else values


class KeyIndex:
    """The key index of one data file."""

    def __init__(self, keys: pa.Table, types: Sequence[DataType]):
        if is_int_key(types):
            self._set(keys.num_rows, ints=int_keys(keys.column(0)))
        else:
            encoded = key_rows(keys.columns, types)
            hashes = _hash64(encoded)
            positions = np.argsort(hashes, kind="stable")
            self._set(keys.num_rows, hashes=hashes[positions], positions=positions, encoded=encoded)

    def _set(self, num_rows: int, ints: np.ndarray | None = None, hashes: np.ndarray | None = None,
             positions: np.ndarray | None = None, encoded: pa.Array | None = None,
             unique: bool | None = None) -> None:
        self.num_rows = num_rows
        self.ints, self.hashes, self.positions, self.encoded = ints, hashes, positions, encoded
        # files above level 0 hold each key once: a found key is one position, no run to expand
        if unique is None:
            unique = ints is not None and bool((ints[1:] > ints[:-1]).all())
        self.unique = unique
        arrays = (ints,) if ints is not None else (hashes, positions, encoded)
        self.nbytes = _INDEX_OVERHEAD + sum(a.nbytes for a in arrays)

    @property
    def bloom_hashes(self) -> np.ndarray:
        """This file's keys as 64-bit hashes (what its bloom filter is built from)."""
        return _mix64(self.ints) if self.ints is not None else self.hashes

    # ---- spill format ---------------------------------------------------------------------
    # Integer keys: one int64 word (1 when the keys are unique), then the int64 keys, raw, so
    # reading an index back is one read(2): about 60 us for 40,000 keys, where opening an Arrow
    # IPC file and mapping it took 280 us (lookups of a table larger than the memory tier read
    # many indexes back every batch). Hashed keys: one Arrow IPC file, uncompressed, loaded as
    # a memory map.
    @property
    def spill_suffix(self) -> str:
        return _INTS_SUFFIX if self.ints is not None else ".arrow"

    def save(self, path: str) -> int:
        """Write the index to `path` (ending in `spill_suffix`); returns the file's size."""
        if self.ints is not None:
            with open(path, "wb") as sink:
                sink.write(np.int64(self.unique).tobytes())
                sink.write(self.ints.tobytes())
            return os.path.getsize(path)
        table = pa.table({"hashes": self.hashes, "positions": self.positions, "encoded": self.encoded})
        with pa.OSFile(path, "wb") as sink, pa.ipc.new_file(sink, table.schema) as writer:
            writer.write_table(table)
        return os.path.getsize(path)

    @classmethod
    def load(cls, path: str, size: int | None = None) -> "KeyIndex":
        """An index saved by `save` (an IPC one memory-mapped: its arrays are views of the
        file's pages, and the mapping outlives an unlink of the file). OSError when the file
        does not have the `size` `save` returned (a raw file cut at a key would lose keys)."""
        actual = os.path.getsize(path)
        if size is not None and actual != size:
            raise OSError(f"spilled key index {path} has {actual} bytes, {size} were written")
        index = cls.__new__(cls)
        if path.endswith(_INTS_SUFFIX):
            words = np.fromfile(path, np.int64)
            if not len(words) or actual != words.nbytes:
                raise OSError(f"spilled key index {path} is damaged")
            index._set(len(words) - 1, ints=words[1:], unique=bool(words[0]))
            return index
        with pa.memory_map(path) as source:
            table = pa.ipc.open_file(source).read_all()
        columns = {name: _single_chunk(table.column(name)) for name in table.column_names}
        index._set(table.num_rows, hashes=columns["hashes"].to_numpy(),
                   positions=columns["positions"].to_numpy(), encoded=columns["encoded"])
        return index

    def positions_of(self, batch: BatchKeys) -> np.ndarray:
        """Sorted positions of this file's rows whose key is one of the batch's keys."""
        if self.ints is not None:
            idx = np.searchsorted(self.ints, batch.ints)
            ok = idx < self.num_rows
            idx, keys = idx[ok], batch.ints[ok]
            hit = self.ints[idx] == keys
            first = idx[hit]
            return first if self.unique else _expand_runs(self.ints, first, keys[hit])
        lo = np.searchsorted(self.hashes, batch.hashes, side="left")
        hi = np.searchsorted(self.hashes, batch.hashes, side="right")
        counts = hi - lo
        if not counts.any():
            return np.empty(0, np.int64)
        batch_idx = np.repeat(np.arange(len(batch.hashes)), counts)
        slots = _ranges(lo, hi)
        candidates = self.positions[slots]
        same = pc.equal(self.encoded.take(pa.array(candidates)), batch.encoded.take(pa.array(batch_idx)))
        return np.unique(candidates[same.to_numpy(zero_copy_only=False)])


def _single_chunk(column: pa.ChunkedArray) -> pa.Array:
    return column.chunk(0) if column.num_chunks == 1 else column.combine_chunks()


def _ranges(lo: np.ndarray, hi: np.ndarray) -> np.ndarray:
    """Concatenation of arange(lo[i], hi[i]) for all i, without a Python loop."""
    counts = hi - lo
    total = int(counts.sum())
    starts = np.repeat(lo - np.cumsum(counts) + counts, counts)
    return (starts + np.arange(total)).astype(np.int64)


def _expand_runs(sorted_keys: np.ndarray, first: np.ndarray, keys: np.ndarray) -> np.ndarray:
    """Positions of every occurrence of each found key (a run of equal keys starts at `first`)."""
    if not len(first):
        return np.empty(0, np.int64)
    return _ranges(first, np.searchsorted(sorted_keys, keys, side="right"))


class BloomFilter:
    """A bit array of `num_bits` bits (< 2^32) with `k` probes per key, derived from a 64-bit
    hash by double hashing (low and high 32 bits). Never answers False for a key it holds."""

    def __init__(self, bits: np.ndarray, num_bits: int, k: int, count: int):
        self.bits, self.num_bits, self.k, self.count = bits, num_bits, k, count

    @staticmethod
    def of(hashes: np.ndarray, fpp: float) -> "BloomFilter":
        n = max(len(hashes), 1)
        num_bits = min(max(64, int(np.ceil(-n * np.log(fpp) / np.log(2) ** 2))), 2 ** 32 - 1)
        k = max(1, int(round(num_bits / n * np.log(2))))
        bits = np.zeros(num_bits, dtype=bool)
        for start in range(0, len(hashes), _BUILD_CHUNK):  # bounds the k × chunk probe matrix
            bits[_probes(hashes[start:start + _BUILD_CHUNK], num_bits, k).ravel()] = True
        return BloomFilter(np.packbits(bits, bitorder="little"), num_bits, k, len(hashes))

    @property
    def nbytes(self) -> int:
        return self.bits.nbytes

    @property
    def fpp(self) -> float:
        """The expected false-positive rate, (1 - e^(-k·n/m))^k."""
        return float((1 - np.exp(-self.k * self.count / self.num_bits)) ** self.k)

    def may_contain(self, hashes: np.ndarray) -> np.ndarray:
        """Per hash: False when the key is certainly absent."""
        probes = _probes(hashes, self.num_bits, self.k)
        hit = (self.bits[probes >> np.uint64(3)] >> (probes & np.uint64(7)).astype(np.uint8)) & 1
        return hit.all(axis=0)


_BUILD_CHUNK = 1 << 20


def _probes(hashes: np.ndarray, num_bits: int, k: int) -> np.ndarray:
    """The k bit positions of each hash, a (k, n) array: g_i = (h1 + i·h2) mod 2^32 (double
    hashing on the low and high 32 bits), mapped onto [0, num_bits) by a multiply-shift."""
    hashes = hashes.view(np.uint64)
    low = np.uint64(0xFFFFFFFF)
    h1, h2 = hashes & low, hashes >> np.uint64(32)
    g = (h1[None, :] + np.arange(k, dtype=np.uint64)[:, None] * h2[None, :]) & low
    return (g * np.uint64(num_bits)) >> np.uint64(32)


# ---- the cache -----------------------------------------------------------------------------------
OPTION_KEYS = ("lookup.cache-max-memory-size", "lookup.cache-max-disk-size", "lookup.cache-file-retention",
               "lookup.cache.bloom.filter.enabled", "lookup.cache.bloom.filter.fpp", "lookup.cache.dir")
_UNBOUNDED = 2 ** 63 - 1
# A filter rules out a batch with no key in the file with probability ~e^-(batch·fpp); beyond
# this many expected false positives that is below e^-2 (14 %), and the check is not worth it.
_BLOOM_PAYS_OFF = 2.0


def env_options(environ: Mapping[str, str] | None = None) -> dict[str, str]:
    """The cache options given as environment variables (PAIMON_LOOKUP_CACHE_MAX_MEMORY_SIZE...)."""
    environ = os.environ if environ is None else environ
    out = {}
    for key in OPTION_KEYS:
        name = _env_name(key)
        if environ.get(name, "").strip():
            out[key] = environ[name]
    return out


def _env_name(key: str) -> str:
    return "PAIMON_" + key.upper().replace(".", "_").replace("-", "_")


@dataclass
class CacheStats:
    """What probes cost: served from memory, from disk, built from the data file, or ruled out
    by a bloom filter without touching the index."""
    memory_hits: int = 0
    disk_hits: int = 0
    builds: int = 0
    bloom_skips: int = 0
    spills: int = 0


@dataclass
class _DiskEntry:
    path: str
    size: int
    used: float


class KeyIndexCache:
    """Key indexes by data file name (names are unique, files immutable): memory LRU, spilled
    to a local-disk LRU on eviction, with an in-memory bloom filter per file (module docstring)."""

    def __init__(self, max_bytes: int = 256 << 20, max_disk_bytes: int = _UNBOUNDED,
                 retention_ms: int = 3600 * 1000, bloom: bool = True, bloom_fpp: float = 0.01,
                 directory: str | None = None, bloom_max_bytes: int = 64 << 20):
        self.max_bytes = max_bytes
        self.bloom_max_bytes = bloom_max_bytes
        self.max_disk_bytes = max_disk_bytes
        self.retention_ms = retention_ms
        self.bloom_enabled = bloom
        self.bloom_fpp = bloom_fpp
        self.parent_dir = directory
        self.stats = CacheStats()
        self._items: OrderedDict[str, KeyIndex] = OrderedDict()
        self._bytes = 0
        self._disk: OrderedDict[str, _DiskEntry] = OrderedDict()
        self._disk_bytes = 0
        self._blooms: OrderedDict[str, BloomFilter] = OrderedDict()
        self._bloom_bytes = 0
        self._dir: str | None = None
        self._pid = os.getpid()
        self._lock = Lock()

    @staticmethod
    def from_options(options: Mapping[str, str]) -> "KeyIndexCache":
        cache = KeyIndexCache()
        cache.configure(options)
        return cache

    def configure(self, options: Mapping[str, str]) -> None:
        """Apply the cache options present in `options` (Paimon keys, see the module docstring)."""
        parsers: dict[str, tuple[str, Callable[[str], object]]] = {
            "lookup.cache-max-memory-size": ("max_bytes", parse_memory_size),
            "lookup.cache-max-disk-size": ("max_disk_bytes", parse_memory_size),
            "lookup.cache-file-retention": ("retention_ms", parse_duration_ms),
            "lookup.cache.bloom.filter.enabled": ("bloom_enabled", parse_bool),
            "lookup.cache.bloom.filter.fpp": ("bloom_fpp", _parse_fpp),
            "lookup.cache.dir": ("parent_dir", str),
        }
        values = {}
        for key, (attr, parse) in parsers.items():
            if key in options and options[key] is not None:
                try:
                    values[attr] = parse(str(options[key]))
                except ValueError as exc:
                    raise InvalidOptionError(f"lookup cache option '{key}' (environment variable "
                                             f"{_env_name(key)}): {exc}, got {options[key]!r}") from None
        with self._lock:
            for attr, value in values.items():
                setattr(self, attr, value)
            if not self.bloom_enabled:
                self._blooms.clear()
                self._bloom_bytes = 0
            evicted = self._evict_memory()
            dropped = self._evict_disk(time.monotonic())
        for path in dropped:
            _unlink(path)
        self._retire(evicted)

    # ---- probes ----------------------------------------------------------------------------
    def get(self, name: str, load: Callable[[], KeyIndex]) -> KeyIndex:
        """The index of data file `name`: from memory, else from disk, else `load()` (which
        reads the data file's keys)."""
        self._check_process()
        with self._lock:
            index = self._items.get(name)
            if index is not None:
                self._items.move_to_end(name)
                self.stats.memory_hits += 1
                return index
            now = time.monotonic()
            expired = self._evict_disk(now)  # an expired file is rebuilt from the data file, as Paimon
            entry = self._disk.get(name)
            if entry is not None:
                self._disk.move_to_end(name)
                entry.used = now
        for path in expired:
            _unlink(path)
        if entry is not None:
            try:
                index = KeyIndex.load(entry.path, entry.size)
            except (OSError, pa.ArrowInvalid):  # removed or damaged underneath: rebuild it
                self._forget_disk(name, entry)
            else:
                self.stats.disk_hits += 1
                self._add(name, index, evict=False)
                return index
        index = load()
        self.stats.builds += 1
        self._add(name, index)
        return index

    def positions(self, name: str, load: Callable[[], KeyIndex], batch: BatchKeys) -> np.ndarray:
        """`get(name, load).positions_of(batch)`, but when the index is not in memory and the
        file's bloom filter rules out every batch key, nothing is read or loaded and no position
        is returned (an index in memory answers as fast as the bloom filter would)."""
        with self._lock:
            index = self._items.get(name)
            if index is not None:
                self._items.move_to_end(name)
                self.stats.memory_hits += 1
            bloom = self._blooms.get(name) if self.bloom_enabled and index is None else None
            if bloom is not None:
                self._blooms.move_to_end(name)
        if index is not None:
            return index.positions_of(batch)
        if bloom is not None and len(batch) * bloom.fpp <= _BLOOM_PAYS_OFF \
                and not bloom.may_contain(batch.bloom_hashes).any():
                self.stats.bloom_skips += 1
                return np.empty(0, np.int64)
        return self.get(name, load).positions_of(batch)

    # ---- tiers -----------------------------------------------------------------------------
    def _add(self, name: str, index: KeyIndex, evict: bool = True) -> None:
        """Keep `index` in memory. With `evict=False` (an index read back from disk) only when it
        fits beside the others: promoting it would push out an index the same lookup may probe
        next, so a lookup cycling over more indexes than memory holds would miss memory on
        every probe (LRU under a cyclic scan); unpromoted, it answers this probe only, and
        the resident indexes keep serving their share of the probes."""
        with self._lock:
            if name in self._items or (not evict and self._items and self._bytes + index.nbytes > self.max_bytes):
                return
            self._items[name] = index
            self._bytes += index.nbytes
            evicted = self._evict_memory()
        self._retire(evicted)

    def _evict_memory(self) -> list[tuple[str, KeyIndex]]:
        """Under the lock: drop LRU indexes beyond the memory bound; those that still need a
        bloom filter or a spill file are returned for `_retire` (outside the lock)."""
        out = []
        while self._bytes > self.max_bytes and len(self._items) > 1:
            name, old = self._items.popitem(last=False)
            self._bytes -= old.nbytes
            if name not in self._disk or (self.bloom_enabled and name not in self._blooms):
                out.append((name, old))
        return out

    def _retire(self, evicted: list[tuple[str, KeyIndex]]) -> None:
        """Indexes leaving memory get their bloom filter (only now: while an index is in memory
        it answers as fast as the filter, so writes that pre-warm the cache pay nothing) and
        are spilled to disk."""
        for name, index in evicted:
            if self.bloom_enabled and name not in self._blooms:
                bloom = BloomFilter.of(index.bloom_hashes, self.bloom_fpp)
                with self._lock:
                    if name not in self._blooms:
                        self._blooms[name] = bloom
                        self._bloom_bytes += bloom.nbytes
                        while self._bloom_bytes > self.bloom_max_bytes and len(self._blooms) > 1:
                            self._bloom_bytes -= self._blooms.popitem(last=False)[1].nbytes
            if name not in self._disk and self.max_disk_bytes > 0:
                self._spill(name, index)

    def _spill(self, name: str, index: KeyIndex) -> None:
        path = os.path.join(self._directory(), os.urandom(8).hex() + index.spill_suffix)
        try:
            size = index.save(path)
        except OSError:
            _unlink(path)
            return  # a full or unwritable disk costs a rebuild later, never a failed write
        now = time.monotonic()
        with self._lock:
            if size > self.max_disk_bytes or name in self._disk or name in self._items:
                drop = [path]
            else:
                self._disk[name] = _DiskEntry(path, size, now)
                self._disk_bytes += size
                self.stats.spills += 1
                drop = self._evict_disk(now)
        for p in drop:
            _unlink(p)

    def _evict_disk(self, now: float) -> list[str]:
        """Under the lock: forget disk files beyond the bound or unused for the retention time;
        returns their paths, to be removed outside the lock."""
        out = []
        horizon = now - self.retention_ms / 1000
        while self._disk:
            name, entry = next(iter(self._disk.items()))
            if self._disk_bytes <= self.max_disk_bytes and entry.used >= horizon:
                break
            del self._disk[name]
            self._disk_bytes -= entry.size
            out.append(entry.path)
        return out

    def _forget_disk(self, name: str, entry: _DiskEntry) -> None:
        with self._lock:
            if self._disk.get(name) is entry:
                del self._disk[name]
                self._disk_bytes -= entry.size
        _unlink(entry.path)

    def _directory(self) -> str:
        with self._lock:
            if self._dir is None:
                parent = self.parent_dir or tempfile.gettempdir()
                os.makedirs(parent, exist_ok=True)
                _remove_dead_process_dirs(parent)
                self._dir = tempfile.mkdtemp(prefix=f"{_DIR_PREFIX}{os.getpid()}-", dir=parent)
                atexit.register(_remove_dir, self._dir, os.getpid())
            return self._dir

    def _check_process(self) -> None:
        """A forked child (e.g. a Spark Python worker) must not use or delete its parent's files."""
        if os.getpid() != self._pid:
            with self._lock:
                if os.getpid() != self._pid:
                    self._pid = os.getpid()
                    self._disk.clear()
                    self._disk_bytes = 0
                    self._dir = None

    def discard(self, names: Iterable[str]) -> None:
        """Forget the indexes of data files that left the table's LSM tree (compacted away):
        no lookup probes them again, so they would only crowd live indexes out of memory and
        be spilled and given bloom filters for nothing when evicted."""
        paths = []
        with self._lock:
            for name in names:
                index = self._items.pop(name, None)
                if index is not None:
                    self._bytes -= index.nbytes
                bloom = self._blooms.pop(name, None)
                if bloom is not None:
                    self._bloom_bytes -= bloom.nbytes
                entry = self._disk.pop(name, None)
                if entry is not None:
                    self._disk_bytes -= entry.size
                    paths.append(entry.path)
        for path in paths:
            _unlink(path)

    @property
    def disk_bytes(self) -> int:
        return self._disk_bytes

    @property
    def directory(self) -> str | None:
        return self._dir

    def clear(self) -> None:
        """Forget everything and remove the spill directory."""
        with self._lock:
            self._items.clear()
            self._disk.clear()
            self._blooms.clear()
            self._bytes = self._disk_bytes = self._bloom_bytes = 0
            directory, self._dir = self._dir, None
        if directory is not None:
            _remove_dir(directory, os.getpid())


_DIR_PREFIX = "paimon-key-index-"


def _parse_fpp(text: str) -> float:
    value = float(text)
    if not 0.0 < value < 1.0:
        raise ValueError("expected a probability between 0 and 1")
    return value


def _unlink(path: str) -> None:
    try:
        os.unlink(path)
    except OSError:  # already gone, or still mapped where that forbids removal: the exit cleanup gets it
        pass


def _remove_dir(directory: str, owner_pid: int) -> None:
    if os.getpid() == owner_pid:  # atexit handlers are inherited by forked children
        shutil.rmtree(directory, ignore_errors=True)


def _remove_dead_process_dirs(parent: str) -> None:
    """Spill directories of processes that ended without running their exit handlers (Spark
    kills idle Python workers)."""
    try:
        names = os.listdir(parent)
    except OSError:
        return
    for name in names:
        if not name.startswith(_DIR_PREFIX):
            continue
        pid = name[len(_DIR_PREFIX):].split("-", 1)[0]
        if pid.isdigit() and not _alive(int(pid)):
            shutil.rmtree(os.path.join(parent, name), ignore_errors=True)


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return True


# One cache per process: on Spark executors it lives as long as the Python worker is reused.
KEY_INDEXES = KeyIndexCache.from_options(env_options())
