"""Where new data files go when a table names external paths (`data-file.external-paths`).

Java's writers (FileStorePathFactory and its ExternalPathProvider strategies, Paimon 1.4):
with a strategy other than `none`, each new file of a bucket directory (data and changelog
files, and index files kept beside them with `index-file-in-data-file-dir`) is written under
one of the external roots, at the same relative directory it has under the table
(`[data-file.path-directory/]partition/bucket-N`), and the manifest records its full URI as
the file's external path; readers, expiration and orphan cleanup follow that URI. Metadata
(snapshots, manifests, `index/`) stays in the table's directory.

Strategies: `round-robin` takes the roots in turn (from a random one, per writer);
`specific-fs` keeps the roots of the scheme `data-file.external-paths.specific-fs` names and
takes them in turn; `weight-robin` picks a root at random by `data-file.external-paths.weights`
(in turn with fewer than two roots or no weights); `entropy-inject` takes them in turn and adds
three directories of hash bits of the file name (Murmur3 of the name, 20 bits as
`dddd/dddd/dddd/dddddddd`), which spreads an object store's key prefixes.
"""
from __future__ import annotations

import itertools
import random
from dataclasses import dataclass, field
from typing import Mapping

from .binary_row import murmur3_32
from .errors import InvalidOptionError

PATHS, STRATEGY = "data-file.external-paths", "data-file.external-paths.strategy"
SPECIFIC_FS, WEIGHTS = "data-file.external-paths.specific-fs", "data-file.external-paths.weights"
STRATEGIES = ("none", "specific-fs", "round-robin", "entropy-inject", "weight-robin")

_ENTROPY_BITS, _ENTROPY_DIR_LENGTH, _ENTROPY_DIRS = 20, 4, 3


def java_uri(location: str) -> str:
    """`location` as Java's `Path.toString` prints it (how Java records external paths):
    an empty authority dropped (`file:///x` -> `file:/x`), no trailing slash."""
    scheme, _, rest = location.strip().partition(":")
    authority, path = "", rest
    if rest.startswith("//"):
        authority, slash, tail = rest[2:].partition("/")
        path = slash + tail
    path = path.rstrip("/")
    return f"{scheme}://{authority}{path}" if authority else f"{scheme}:{path or '/'}"


def listed_roots(options: Mapping[str, str]) -> list[str]:
    """Every root `data-file.external-paths` lists, whatever the strategy (what Java's orphan
    cleanup looks in and its drop deletes)."""
    return [java_uri(p) for p in str(options.get(PATHS) or "").split(",") if p.strip()]


def entropy_dirs(file_name: str) -> str:
    """Java's entropy directories for a file: the low 20 bits of Murmur3 of its name, as binary
    digits in directories of 4, 4, 4 and 8 (`1001/1001/1001/10011001`)."""
    bits = format(murmur3_32(file_name.encode("utf-8")) & ((1 << _ENTROPY_BITS) - 1), f"0{_ENTROPY_BITS}b")
    step = _ENTROPY_DIR_LENGTH
    return "/".join([bits[i:i + step] for i in range(0, _ENTROPY_DIRS * step, step)] + [bits[_ENTROPY_DIRS * step:]])


@dataclass
class ExternalPaths:
    """A table's external roots and strategy; `locate` names a new file's URI (one instance per
    writer: round-robin keeps its position)."""
    roots: tuple[str, ...]
    strategy: str
    weights: tuple[int, ...] | None = None
    _turn: itertools.cycle = field(init=False, repr=False)

    def __post_init__(self) -> None:
        start = random.randrange(len(self.roots))
        self._turn = itertools.cycle(self.roots[start:] + self.roots[:start])

    @staticmethod
    def of(options: Mapping[str, str]) -> "ExternalPaths | None":
        """The table's external paths, or None when its files stay under the table. Invalid
        settings raise InvalidOptionError naming the option (Java refuses them at write)."""
        strategy = str(options.get(STRATEGY, "none")).strip().lower()
        if strategy not in STRATEGIES:
            raise InvalidOptionError(f"invalid value {options[STRATEGY]!r} for table option '{STRATEGY}': "
                                     f"expected one of {', '.join(STRATEGIES)}")
        listed = [p.strip() for p in str(options.get(PATHS) or "").split(",") if p.strip()]
        if strategy == "none" or not listed:
            return None
        for path in listed:
            if ":" not in path or not path.split(":", 1)[0].isalnum():
                raise InvalidOptionError(f"table option '{PATHS}': {path!r} has no scheme; external paths "
                                         "are URIs (file:///data/cold, s3://bucket/prefix, hdfs://nn/path)")
        roots = [java_uri(p) for p in listed]
        weights = _weights(options.get(WEIGHTS), len(roots)) if strategy == "weight-robin" else None
        if strategy == "specific-fs":
            scheme = str(options.get(SPECIFIC_FS) or "").strip().lower()
            if not scheme:
                raise InvalidOptionError(f"table option '{STRATEGY}' = 'specific-fs' needs '{SPECIFIC_FS}' "
                                         "(the scheme of the external paths to use, e.g. s3)")
            roots = [r for r in roots if r.split(":", 1)[0].lower() == scheme]
            if not roots:
                raise InvalidOptionError(f"table option '{PATHS}' has no path of scheme '{scheme}' "
                                         f"('{SPECIFIC_FS}'): {', '.join(listed)}")
        return ExternalPaths(tuple(roots), strategy, weights)

    def locate(self, relative_dir: str, file_name: str) -> str:
        """The URI of a new file `file_name` whose directory under the table is `relative_dir`."""
        if self.weights is not None and len(self.roots) > 1:
            root = random.choices(self.roots, self.weights)[0]
        else:
            root = next(self._turn)
        if self.strategy == "entropy-inject":
            return f"{root}/{relative_dir}/{entropy_dirs(file_name)}/{file_name}"
        return f"{root}/{relative_dir}/{file_name}"


def _weights(text: str | None, count: int) -> tuple[int, ...] | None:
    if text is None or not str(text).strip():
        return None
    try:
        weights = tuple(int(w.strip()) for w in str(text).split(","))
    except ValueError:
        raise InvalidOptionError(f"table option '{WEIGHTS}' = {text!r}: expected positive integers "
                                 "separated by commas, one per external path") from None
    if any(w <= 0 for w in weights):
        raise InvalidOptionError(f"table option '{WEIGHTS}' = {text!r}: weights must be positive")
    if count > 1 and len(weights) != count:
        raise InvalidOptionError(f"table option '{WEIGHTS}' = {text!r} gives {len(weights)} weights for "
                                 f"{count} paths of '{PATHS}': one weight per path")
    return weights
