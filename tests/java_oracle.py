"""Apache Paimon's own Java library as a test oracle.

``tests/java/`` is a small Maven project (``org.paimonstreaming.oracle.PaimonOracle``) that
depends on ``org.apache.paimon:paimon-bundle`` (plus Hadoop's client jars, which Paimon's
Parquet/ORC formats need at run time). This module builds it once with ``mvn -q -B package``
(output in ``tests/java/target/``: compiled classes in ``classes/``, every runtime jar copied
to ``lib/``), skipping the build while a hash of ``pom.xml`` and the Java sources matches
the one stored by the last good build, and then sends requests to JVMs it keeps::

    java -cp tests/java/target/classes:tests/java/target/lib/* \\
        org.paimonstreaming.oracle.PaimonOracle --serve

A request is one JSON document on a line, ``{"ops": [op, ...]}`` (several operations in one
request through :meth:`JavaOracle.batch`), its reply one line. A test process keeps its JVMs
between requests (a JVM's start-up is most of a small request's time): a request finding none
idle starts one, so requests running at once (a Java commit paused in a thread) each have
their own; a JVM that died, hung or threw an Error is replaced. Java and Maven are required: if either is missing (or
the build fails) :func:`get_oracle` raises :class:`JavaOracleUnavailable`, so tests FAIL
rather than skip. Set ``PAIMON_ORACLE_JAVA`` / ``PAIMON_ORACLE_MVN`` to override the
executables (default: ``$JAVA_HOME/bin/java`` or ``java`` on PATH, ``mvn`` on PATH), and
``PAIMON_ORACLE_LOG_LEVEL`` (default ``warn``) for the level of Paimon's log on the JVM's stderr.
A first build downloads ~135 MB from Maven Central (~45 s); later builds take ~8 s; a JVM
starts in about 1-3 s, and a request to a running one on a small table takes milliseconds.

Tables are addressed by their directory, ``<warehouse>/<db>.db/<table>`` (what pypaimon's
filesystem catalog uses for ``db.table``).

Python values (as ``pyarrow.Table.to_pylist()`` gives them):

=============================================  ================================================
Paimon type                                    Python value
=============================================  ================================================
BOOLEAN                                        bool
TINYINT, SMALLINT, INT, BIGINT                 int
FLOAT, DOUBLE                                  float (FLOAT read back is the float32 value)
CHAR, VARCHAR, STRING                          str
BINARY, VARBINARY, BYTES                       bytes
DECIMAL(p, s)                                  decimal.Decimal (int/str accepted on write)
DATE                                           datetime.date
TIME(p)                                        datetime.time (Paimon keeps milliseconds)
TIMESTAMP(p), p <= 6                           naive datetime.datetime
TIMESTAMP(p) WITH LOCAL TIME ZONE, p <= 6      datetime.datetime with tzinfo=UTC (a naive
                                               value written is taken as UTC)
TIMESTAMP(p) [WITH LOCAL TIME ZONE], p > 6     int: nanoseconds since the epoch (on write a
                                               datetime or pandas.Timestamp is accepted too)
ARRAY<T>                                       list
MAP<K, V>                                      list of (key, value) tuples (dict on write too)
MULTISET<T>                                    list of (element, count) tuples
ROW<...>                                       dict by field name
VARIANT                                        written: JSON text (Java encodes it) or a dict of
                                               ``value``/``metadata`` bytes; read: a dict of
                                               ``json`` (Java's toJson), ``value``, ``metadata``
=============================================  ================================================

Written rows may carry ``"_ROW_KIND"``: ``"+I"``, ``"-U"``, ``"+U"`` or ``"-D"``.

The JSON encoding between Python and Java (defined here in ``_to_json``/``_from_json`` and in
``ValueCodec.java``): integers as numbers; FLOAT/DOUBLE as numbers or the strings ``"NaN"``,
``"Infinity"``, ``"-Infinity"``; strings as strings; binary as base64; DECIMAL as a plain
decimal string; DATE as days since epoch; TIME as milliseconds of day; TIMESTAMP and
TIMESTAMP WITH LOCAL TIME ZONE as ``{"millis": epoch millis, "nanos": nano-of-millisecond}``;
ARRAY as array; MAP/MULTISET as array of ``[key, value]`` pairs; ROW as object; VARIANT as JSON
text or ``{"value": base64, "metadata": base64}`` (read: plus ``"json"``); null as null.
"""

from __future__ import annotations

import atexit
import base64
import contextlib
import datetime as _dt
import decimal
import fcntl
import hashlib
import json
import math
import os
import re
import select
import shutil
import subprocess
import tempfile
import threading
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Iterable, Mapping, Sequence

JAVA_DIR = Path(__file__).resolve().parent / "java"
TARGET_DIR = JAVA_DIR / "target"
MAIN_CLASS = "org.paimonstreaming.oracle.PaimonOracle"
ROW_KIND = "_ROW_KIND"

_JVM_FLAGS = (
    # short-lived JVM: C1 only and the serial GC start fastest
    "-XX:TieredStopAtLevel=1",
    "-XX:+UseSerialGC",
    "-Xss4m",
    "-Dorg.slf4j.simpleLogger.logFile=System.err",
)

_EPOCH = _dt.datetime(1970, 1, 1)
_EPOCH_DATE = _dt.date(1970, 1, 1)
_UTC = _dt.timezone.utc


class JavaOracleUnavailable(RuntimeError):
    """Java or Maven is missing, or the oracle could not be built."""


class JavaOracleError(RuntimeError):
    """The Java side failed an operation (the message carries Java's exception)."""

    def __init__(self, message: str, java_error: str = "", java_trace: str = "", stderr: str = "",
                 index: int | None = None, results: list | None = None):
        super().__init__(message)
        self.java_error = java_error
        self.java_trace = java_trace
        self.stderr = stderr
        self.index = index  # the failing operation's position in the request
        self.results = results or []  # raw results of the operations before it


# --------------------------------------------------------------------------------------- types


@dataclass
class PType:
    """A parsed Paimon data type (only what value conversion needs)."""

    root: str  # canonical: BOOLEAN TINYINT ... TIMESTAMP TIMESTAMP_LTZ ARRAY MAP MULTISET ROW
    nullable: bool = True
    precision: int | None = None
    scale: int | None = None
    element: "PType | None" = None  # ARRAY, MULTISET
    key: "PType | None" = None  # MAP
    value: "PType | None" = None  # MAP
    fields: list[tuple[str, "PType"]] = field(default_factory=list)  # ROW


_ROOT_ALIASES = {
    "INTEGER": "INT",
    "NUMERIC": "DECIMAL",
    "DEC": "DECIMAL",
    "TIMESTAMP_LTZ": "TIMESTAMP_LTZ",
}


def parse_type(spec: Any) -> PType:
    """Parse a Paimon type as found in schema files: a SQL-ish string or a dict for nested types."""
    if isinstance(spec, PType):
        return spec
    if isinstance(spec, str):
        t, rest = _parse_type_str(spec.strip())
        if rest.strip():
            raise ValueError(f"cannot parse Paimon type {spec!r} (left: {rest!r})")
        return t
    if isinstance(spec, Mapping):
        head = spec["type"]
        nullable = "NOT NULL" not in head.upper()
        root = head.split()[0].split("<")[0].upper()
        if root in ("ARRAY", "MULTISET", "VECTOR"):
            return PType("ARRAY" if root == "VECTOR" else root, nullable, element=parse_type(spec["element"]))
        if root == "MAP":
            return PType("MAP", nullable, key=parse_type(spec["key"]), value=parse_type(spec["value"]))
        if root == "ROW":
            return PType("ROW", nullable, fields=[(f["name"], parse_type(f["type"])) for f in spec["fields"]])
        raise ValueError(f"cannot parse Paimon type {spec!r}")
    raise TypeError(f"not a Paimon type: {spec!r}")


_WORD = re.compile(r"\s*([A-Za-z_][A-Za-z_0-9]*)")


def _parse_type_str(s: str) -> tuple[PType, str]:
    m = _WORD.match(s)
    if not m:
        raise ValueError(f"cannot parse Paimon type at {s!r}")
    root = m.group(1).upper()
    root = _ROOT_ALIASES.get(root, root)
    s = s[m.end():]
    t = PType(root)
    # parameters: (p) or (p, s)
    pm = re.match(r"\s*\(\s*(\d+)\s*(?:,\s*(\d+)\s*)?\)", s)
    if pm:
        t.precision = int(pm.group(1))
        if pm.group(2) is not None:
            t.scale = int(pm.group(2))
        s = s[pm.end():]
    # nested: <...>
    if s.lstrip().startswith("<"):
        s = s.lstrip()[1:]
        if root in ("ARRAY", "MULTISET"):
            t.element, s = _parse_type_str(s)
        elif root == "MAP":
            t.key, s = _parse_type_str(s)
            s = _expect(s, ",")
            t.value, s = _parse_type_str(s)
        elif root == "ROW":
            while True:
                s = s.lstrip()
                if s.startswith("`"):
                    end = s.index("`", 1)
                    name, s = s[1:end], s[end + 1:]
                else:
                    nm = _WORD.match(s)
                    name, s = nm.group(1), s[nm.end():]
                ft, s = _parse_type_str(s)
                # optional COMMENT 'text'
                cm = re.match(r"\s*COMMENT\s*'(?:[^']|'')*'", s, re.I)
                if cm:
                    s = s[cm.end():]
                t.fields.append((name, ft))
                s = s.lstrip()
                if s.startswith(","):
                    s = s[1:]
                    continue
                break
        s = _expect(s, ">")
    # qualifiers
    while True:
        up = s.upper().lstrip()
        if up.startswith("WITH LOCAL TIME ZONE"):
            t.root = "TIMESTAMP_LTZ"
            s = s.lstrip()[len("WITH LOCAL TIME ZONE"):]
        elif up.startswith("WITHOUT TIME ZONE"):
            s = s.lstrip()[len("WITHOUT TIME ZONE"):]
        elif up.startswith("NOT NULL"):
            t.nullable = False
            s = s.lstrip()[len("NOT NULL"):]
        elif re.match(r"NULL\b", up):
            s = s.lstrip()[len("NULL"):]
        else:
            break
    if t.root in ("TIMESTAMP", "TIMESTAMP_LTZ") and t.precision is None:
        t.precision = 6
    return t, s


def _expect(s: str, token: str) -> str:
    s = s.lstrip()
    if not s.startswith(token):
        raise ValueError(f"expected {token!r} at {s!r}")
    return s[len(token):]


def read_schema(table_path: str | os.PathLike) -> dict:
    """The table's latest schema file (``<table>/schema/schema-<max id>``) as a dict."""
    schema_dir = Path(table_path) / "schema"
    ids = [int(p.name[len("schema-"):]) for p in schema_dir.glob("schema-*") if p.name[len("schema-"):].isdigit()]
    if not ids:
        raise FileNotFoundError(f"no schema file under {schema_dir}")
    return json.loads((schema_dir / f"schema-{max(ids)}").read_text())


def _field_types(fields: Iterable[Mapping]) -> dict[str, PType]:
    return {f["name"]: parse_type(f["type"]) for f in fields}


# ------------------------------------------------------------------------------ value codec


def _to_json(v: Any, t: PType) -> Any:
    """Python value -> JSON encoding (see module docstring)."""
    if v is None:
        return None
    r = t.root
    if r == "BOOLEAN":
        return bool(v)
    if r in ("TINYINT", "SMALLINT", "INT", "BIGINT"):
        return int(v)
    if r in ("FLOAT", "DOUBLE"):
        f = float(v)
        if math.isnan(f):
            return "NaN"
        if math.isinf(f):
            return "Infinity" if f > 0 else "-Infinity"
        return f
    if r in ("CHAR", "VARCHAR", "STRING"):
        return str(v)
    if r in ("BINARY", "VARBINARY", "BYTES"):
        return base64.b64encode(bytes(v)).decode("ascii")
    if r == "DECIMAL":
        d = v if isinstance(v, decimal.Decimal) else decimal.Decimal(str(v))
        return format(d, "f")
    if r == "DATE":
        if isinstance(v, _dt.datetime):
            v = v.date()
        return (v - _EPOCH_DATE).days if isinstance(v, _dt.date) else int(v)
    if r == "TIME":
        if isinstance(v, _dt.time):
            return ((v.hour * 60 + v.minute) * 60 + v.second) * 1000 + v.microsecond // 1000
        return int(v)
    if r in ("TIMESTAMP", "TIMESTAMP_LTZ"):
        nanos = epoch_nanos(v)
        millis, nano_of_milli = divmod(nanos, 1_000_000)
        return {"millis": millis, "nanos": nano_of_milli}
    if r == "ARRAY":
        return [_to_json(x, t.element) for x in v]
    if r == "MAP":
        items = v.items() if isinstance(v, Mapping) else v
        return [[_to_json(k, t.key), _to_json(x, t.value)] for k, x in items]
    if r == "MULTISET":
        items = v.items() if isinstance(v, Mapping) else v
        return [[_to_json(k, t.element), int(n)] for k, n in items]
    if r == "ROW":
        if isinstance(v, Mapping):
            return {name: _to_json(v.get(name), ft) for name, ft in t.fields}
        return {name: _to_json(x, ft) for (name, ft), x in zip(t.fields, v)}
    if r == "VARIANT":  # JSON text (Java encodes it) or the bytes {"value": ..., "metadata": ...}
        if isinstance(v, str):
            return v
        return {part: base64.b64encode(bytes(v[part])).decode("ascii") for part in ("value", "metadata")}
    raise NotImplementedError(f"no JSON encoding for Paimon type {r}")


def epoch_nanos(v: Any) -> int:
    """Nanoseconds since the epoch of a timestamp value: int (as is), datetime (aware ones by
    their instant, naive ones as UTC wall clock) or pandas.Timestamp. Handy to compare
    TIMESTAMP(7..9) values, which this module returns as ints, with other readers' values."""
    if isinstance(v, int):
        return v
    value = getattr(v, "value", None)  # pandas.Timestamp: nanoseconds since epoch (UTC)
    if isinstance(v, _dt.datetime) and isinstance(value, int):
        return value
    if isinstance(v, _dt.datetime):
        if v.tzinfo is not None:
            v = v.astimezone(_UTC).replace(tzinfo=None)
        delta = v - _EPOCH
        micros = (delta.days * 86_400 + delta.seconds) * 1_000_000 + delta.microseconds
        return micros * 1000
    raise TypeError(f"not a timestamp value: {v!r}")


def _from_json(v: Any, t: PType) -> Any:
    """JSON encoding -> Python value (see module docstring)."""
    if v is None:
        return None
    r = t.root
    if r in ("FLOAT", "DOUBLE"):
        return float(v)  # float("NaN") / float("Infinity") parse the special strings
    if r in ("BINARY", "VARBINARY", "BYTES"):
        return base64.b64decode(v)
    if r == "DECIMAL":
        return decimal.Decimal(v)
    if r == "DATE":
        return _EPOCH_DATE + _dt.timedelta(days=v)
    if r == "TIME":
        seconds, ms = divmod(int(v), 1000)
        minutes, s = divmod(seconds, 60)
        h, m = divmod(minutes, 60)
        return _dt.time(h, m, s, ms * 1000)
    if r in ("TIMESTAMP", "TIMESTAMP_LTZ"):
        nanos = v["millis"] * 1_000_000 + v["nanos"]
        if (t.precision or 6) > 6:
            return nanos
        ts = _EPOCH + _dt.timedelta(microseconds=nanos // 1000)
        return ts.replace(tzinfo=_UTC) if r == "TIMESTAMP_LTZ" else ts
    if r == "ARRAY":
        return [_from_json(x, t.element) for x in v]
    if r == "MAP":
        return [(_from_json(k, t.key), _from_json(x, t.value)) for k, x in v]
    if r == "MULTISET":
        return [(_from_json(k, t.element), n) for k, n in v]
    if r == "ROW":
        return {name: _from_json(v.get(name), ft) for name, ft in t.fields}
    if r == "VARIANT":  # {"json": Java's toJson(), "value": bytes, "metadata": bytes}
        return {"json": v["json"], "value": base64.b64decode(v["value"]), "metadata": base64.b64decode(v["metadata"])}
    return v  # bool, ints, strings


def rows_to_json(rows: Iterable[Mapping], types: Mapping[str, PType]) -> list[dict]:
    out = []
    for row in rows:
        unknown = set(row) - set(types) - {ROW_KIND}
        if unknown:
            raise KeyError(f"row has columns the table does not: {sorted(unknown)}")
        j = {name: _to_json(row.get(name), t) for name, t in types.items() if name in row}
        if row.get(ROW_KIND) is not None:
            j[ROW_KIND] = row[ROW_KIND]
        out.append(j)
    return out


def rows_from_json(rows: Iterable[Mapping], types: Mapping[str, PType]) -> list[dict]:
    out = []
    for row in rows:
        d = {name: _from_json(v, types[name]) if name in types else v for name, v in row.items()}
        out.append(d)
    return out


# ------------------------------------------------------------------------------------ oracle


def _where_json(where: Any, types: Mapping[str, PType]) -> dict:
    """A read's filter for Java's PredicateBuilder: a term (column, op[, value]) with op one of
    = != < <= > >= (a value), "in" / "not in" / "between" (a list of values, nulls allowed in
    lists), "is null" / "is not null" (no value), "startsWith" / "endsWith" / "contains" (a
    string); or a tree {"and": [...]}, {"or": [...]}, {"not": p} of them (Java's negation of p,
    an error where Java has none)."""
    if isinstance(where, Mapping):
        (kind, arg), = where.items()
        if kind == "not":
            return {"not": _where_json(arg, types)}
        return {kind: [_where_json(p, types) for p in arg]}
    column, comparison, *rest = where
    out = {"column": column, "op": comparison}
    if comparison in ("in", "not in", "between"):
        out["values"] = [_to_json(v, types[column]) for v in rest[0]]
    elif rest:
        out["value"] = _to_json(rest[0], types[column])
    return out


class Pending:
    """The result of an operation queued in a :class:`Batch`; ``.result`` once it ran."""

    _UNSET = object()

    def __init__(self, convert=None):
        self._convert = convert or (lambda r: r)
        self._value = Pending._UNSET

    def _set(self, raw: Any) -> None:
        self._value = self._convert(raw)

    @property
    def result(self) -> Any:
        if self._value is Pending._UNSET:
            raise RuntimeError("the batch has not run (or failed before this operation)")
        return self._value


@dataclass(frozen=True)
class JavaRefusal:
    """What a read with `catch_error` gives when Java refuses it: Java's exception, as text."""
    error: str


class Batch:
    """Operations queued to run in one request, in order; runs on leaving the ``with`` block.

    Each method mirrors :class:`JavaOracle`'s and returns a :class:`Pending`.
    The first failing operation raises :class:`JavaOracleError`; later ones do not run.
    """

    def __init__(self, oracle: "JavaOracle"):
        self._oracle = oracle
        self._ops: list[dict] = []
        self._pending: list[Pending] = []
        self._created: dict[str, dict[str, PType]] = {}

    def __enter__(self) -> "Batch":
        return self

    def __exit__(self, exc_type, exc, tb) -> None:
        if exc_type is None:
            self.run()

    def _add(self, op: dict, convert=None) -> Pending:
        p = Pending(convert)
        self._ops.append(op)
        self._pending.append(p)
        return p

    def _types(self, path: str, branch: str | None = None) -> dict[str, PType]:
        if branch is not None and (Path(path) / "branch" / f"branch-{branch}" / "schema").is_dir():
            # a branch's schema may differ from the main branch's (one created in this batch is the main's)
            return _field_types(read_schema(f"{path}/branch/branch-{branch}")["fields"])
        if path in self._created:
            return self._created[path]
        return _field_types(read_schema(path)["fields"])

    def run(self) -> list[Any]:
        ops, pending = self._ops, self._pending
        self._ops, self._pending = [], []
        if not ops:
            return []
        try:
            raw = self._oracle.run_ops(ops)
        except JavaOracleError as e:
            for p, r in zip(pending, e.results):
                p._set(r)
            raise
        for p, r in zip(pending, raw):
            p._set(r)
        return [p.result for p in pending]

    # -- operations

    def create_table(self, path, fields: Sequence[Mapping], primary_keys: Sequence[str] = (),
                     partition_keys: Sequence[str] = (), options: Mapping[str, Any] | None = None) -> Pending:
        path = str(path)
        fields = [dict(f) for f in fields]
        self._created[path] = _field_types(fields)
        return self._add({
            "op": "create", "path": path, "fields": fields,
            "primaryKeys": list(primary_keys), "partitionKeys": list(partition_keys),
            "options": {k: str(v).lower() if isinstance(v, bool) else str(v) for k, v in (options or {}).items()},
        })

    def write(self, path, rows: Sequence[Mapping], commit_user: str | None = None,
              commit_identifier: int | None = None, overwrite: bool = False,
              static_partition: Mapping[str, Any] | None = None, branch: str | None = None) -> Pending:
        """Batch write + commit; with commit_user/commit_identifier the stream write path; to a
        branch of the table when `branch` names one."""
        path = str(path)
        op = {"op": "write", "path": path, "rows": rows_to_json(rows, self._types(path, branch))}
        if branch is not None:
            op["branch"] = branch
        if commit_user is not None:
            op["commitUser"] = commit_user
        if commit_identifier is not None:
            op["commitIdentifier"] = int(commit_identifier)
        if overwrite:  # (no static partition: Java's dynamic partition overwrite, as Flink's INSERT OVERWRITE)
            op["overwrite"] = True
            op["staticPartition"] = {k: str(v) for k, v in (static_partition or {}).items()}
        return self._add(op)

    def write_dynamic(self, path, rows: Sequence[Mapping], commit_user: str | None = None,
                      commit_identifier: int | None = None, overwrite: bool = False,
                      static_partition: Mapping[str, Any] | None = None, assigners: int | None = None,
                      branch: str | None = None) -> Pending:
        """`write` on a dynamic-bucket table ('bucket' = '-1'), buckets assigned as Java's Flink
        sinks do (DynamicBucketWrite.java): HASH index files by `assigners` HashBucketAssigners
        (default `dynamic-bucket.initial-buckets`, else 1; SimpleHashBucketAssigners for an
        overwrite), cross-partition tables by GlobalIndexAssigner (bootstrapped from the table;
        an empty table's batch takes its bulk-load path). Result: every row handed to Java's
        writer, in order, with "_ROW_KIND" and "_BUCKET" (a moved key's -D in its old partition too)."""
        pending = self.write(path, rows, commit_user, commit_identifier, overwrite, static_partition, branch)
        op = self._ops[-1]
        op["op"] = "write-dynamic"
        if assigners is not None:
            op["assigners"] = int(assigners)
        types = self._types(str(path), branch)
        pending._convert = lambda r: rows_from_json(r["written"], types)
        return pending

    def read(self, path, snapshot_id: int | None = None, tag: str | None = None,
             columns: Sequence[str] | None = None, with_row_kind: bool = False,
             incremental_between: tuple[int, int] | None = None, branch: str | None = None,
             equal: tuple[str, Any] | None = None, where: tuple | Mapping | None = None,
             system_table: str | None = None, options: Mapping[str, Any] | None = None,
             stream_plans: int | None = None, catch_error: bool = False) -> Pending:
        """`where`: (column, op, value), op one of = != < <= > >=, pushed down as a filter (`equal`:
        (column, value), the same with =), or a tree of them (see `_where_json`: and / or / not,
        in, not in, is null, startsWith, between...): Java skips files by statistics and file
        indexes, and filters the rows of the files it reads by bitmap-based indexes only. `system_table`
        "row_tracking": the rows with their `_ROW_ID` and `_SEQUENCE_NUMBER`; another name, that
        system table of Java's (e.g. "partitions"). `options`: more read
        (dynamic) options, e.g. {"scan.timestamp": ...}. `stream_plans` = n: read as a stream,
        the rows of its first n plans (its start, then each later snapshot's changes).
        `catch_error`: Java's refusal is the result (a `JavaRefusal`), and the batch goes on."""
        op = {"op": "read", "path": str(path)}
        if options:
            op["options"] = {k: str(v) for k, v in options.items()}
        if stream_plans is not None:
            op["streamPlans"] = int(stream_plans)
        if catch_error:
            op["catchError"] = True
        if system_table is not None:
            op["systemTable"] = system_table
        if equal is not None:
            where = (equal[0], "=", equal[1])
        if where is not None:
            op["where"] = _where_json(where, self._types(path, branch))
        if branch is not None:
            op["branch"] = branch
        if incremental_between is not None:
            op["incrementalBetween"] = f"{incremental_between[0]},{incremental_between[1]}"
        if snapshot_id is not None:
            op["snapshotId"] = int(snapshot_id)
        if tag is not None:
            op["tag"] = tag
        if columns is not None:
            op["columns"] = list(columns)
        if with_row_kind:
            op["withRowKind"] = True
        return self._add(op, lambda r: JavaRefusal(r["error"]) if "error" in r
                         else rows_from_json(r["rows"], _field_types(r["fields"])))

    def snapshots(self, path) -> Pending:
        return self._add({"op": "snapshots", "path": str(path)}, lambda r: r["snapshots"])

    def compact(self, path) -> Pending:
        return self._add({"op": "compact", "path": str(path)}, lambda r: r["compacted"])

    def buckets(self, path, rows: Sequence[Mapping]) -> Pending:
        path = str(path)
        return self._add({"op": "buckets", "path": path, "rows": rows_to_json(rows, self._types(path))},
                         lambda r: r["buckets"])

    def alter(self, path, changes: Sequence[Mapping], branch: str | None = None) -> Pending:
        """Schema changes by Paimon's SchemaManager: {"kind": "add"|"rename"|"drop"|"type"|
        "default"|"set-option", "path": [names], "type": Paimon JSON type, "after", "newName",
        "key", "value" (the option's, or the column's default value)}.
        Writes queued in the same batch encode rows with the old schema: alter in a batch of its own.
        `branch`: change that branch's schema."""
        op = {"op": "alter", "path": str(path), "changes": [dict(c) for c in changes]}
        if branch is not None:
            op["branch"] = branch
        return self._add(op, lambda r: r["schemaId"])

    def write_columns(self, path, first_row_id: int, columns: Sequence[str], rows: Sequence[Mapping]) -> Pending:
        """New values of `columns` for every row of the file numbered from `first_row_id` of an
        unpartitioned data-evolution table, as Java's Spark MERGE INTO writes them."""
        types = self._types(path)
        return self._add({"op": "write-columns", "path": str(path), "firstRowId": int(first_row_id),
                          "columns": list(columns), "rows": rows_to_json(rows, types)})

    def create_tag(self, path, tag: str, snapshot_id: int | None = None) -> Pending:
        op = {"op": "create-tag", "path": str(path), "tag": tag}
        if snapshot_id is not None:
            op["snapshotId"] = int(snapshot_id)
        return self._add(op)

    def create_branch(self, path, branch: str, tag: str | None = None) -> Pending:
        """A branch of the table (from `tag`, else empty with the latest schema)."""
        op = {"op": "create-branch", "path": str(path), "branch": branch}
        if tag is not None:
            op["tag"] = tag
        return self._add(op)

    def fast_forward(self, path, branch: str) -> Pending:
        """Java's fast-forward: the main branch becomes what `branch` is."""
        return self._add({"op": "fast-forward", "path": str(path), "branch": branch})

    # -- lifecycle (Java's maintenance on a table)

    def expire(self, path, options: Mapping[str, Any] | None = None) -> Pending:
        """Java's snapshot expiration, then its changelog expiration when the changelog's
        lifecycle is decoupled (`changelog.num-retained.*`), as after a commit, under the
        table's options overridden by `options` (e.g. `snapshot.num-retained.max`,
        `snapshot.time-retained`); returns how many snapshots went."""
        opts = {k: str(v) for k, v in (options or {}).items()}
        return self._add({"op": "expire", "path": str(path), "options": opts}, lambda r: r["expired"])

    def rollback_to(self, path, target: int | str) -> Pending:
        """Java's rollback to snapshot `target` (int) or tag `target` (str)."""
        key = "tag" if isinstance(target, str) else "snapshotId"
        return self._add({"op": "rollback-to", "path": str(path), key: target})

    def delete_tag(self, path, tag: str) -> Pending:
        return self._add({"op": "delete-tag", "path": str(path), "tag": tag})

    def delete_branch(self, path, branch: str) -> Pending:
        return self._add({"op": "delete-branch", "path": str(path), "branch": branch})

    def remove_orphan_files(self, path, older_than_millis: int | None = None) -> Pending:
        """Java's LocalOrphanFilesClean (default threshold: a day ago); returns the deleted paths."""
        op = {"op": "remove-orphan-files", "path": str(path)}
        if older_than_millis is not None:
            op["olderThanMillis"] = int(older_than_millis)
        return self._add(op, lambda r: r["deleted"])

    def expire_partitions(self, path, expiration_time: str) -> Pending:
        """Java's partition expiration with `partition.expiration-time` = `expiration_time`;
        returns the expired partitions' values."""
        return self._add({"op": "expire-partitions", "path": str(path), "expirationTime": expiration_time},
                         lambda r: r["expired"])

    def tags(self, path) -> Pending:
        """{tag name: snapshot id} as Java's TagManager lists them."""
        return self._add({"op": "tags", "path": str(path)}, lambda r: r["tags"])

    def record_consumer(self, path, consumer_id: str, next_snapshot: int | None) -> Pending:
        """Java's ConsumerManager: set a consumer's next snapshot (None: delete the consumer)."""
        op = {"op": "record-consumer", "path": str(path), "consumerId": consumer_id}
        if next_snapshot is not None:
            op["nextSnapshot"] = int(next_snapshot)
        return self._add(op)


class _JavaServer:
    """A JVM answering requests line by line (the oracle's `--serve` mode), so a test pays a
    JVM's start-up (about a second, most of a short request's time) once, not per request."""

    def __init__(self, cmd: list[str], key: tuple):
        self.key = key
        fd, self._log_path = tempfile.mkstemp(prefix="paimon-oracle-", suffix=".log")
        with os.fdopen(fd, "wb") as log:  # the JVM's stderr; each request's part is read back
            self.proc = subprocess.Popen([*cmd, "--serve"], stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                                         stderr=log)
        self.requests = 0
        self.idle_since = time.monotonic()

    def ask(self, request: bytes, timeout: float) -> tuple[dict | None, str]:
        """The reply (None if the JVM died or did not answer in time) and what it logged meanwhile."""
        self.requests += 1
        logged = os.path.getsize(self._log_path)
        reply = None
        try:
            self.proc.stdin.write(request + b"\n")
            self.proc.stdin.flush()
            line = self._read_line(time.monotonic() + timeout)
            reply = json.loads(line) if line else None
        except (BrokenPipeError, ValueError):
            pass
        with open(self._log_path, "rb") as log:
            log.seek(logged)
            return reply, log.read().decode(errors="replace")

    def _read_line(self, deadline: float) -> bytes | None:
        out = self.proc.stdout.fileno()
        chunks: list[bytes] = []
        while not chunks or not chunks[-1].endswith(b"\n"):
            left = deadline - time.monotonic()
            if left <= 0 or not select.select([out], [], [], left)[0]:
                return None
            chunk = os.read(out, 1 << 20)
            if not chunk:
                return None
            chunks.append(chunk)
        return b"".join(chunks)

    def exit_code(self) -> int | None:
        return self.proc.poll()

    def close(self) -> None:
        if self.proc.poll() is None:
            self.proc.kill()
        self.proc.wait()
        for stream in (self.proc.stdin, self.proc.stdout):
            stream.close()
        with contextlib.suppress(FileNotFoundError):
            os.remove(self._log_path)


class _ServerPool:
    """This process's idle oracle JVMs, by command line and time zone (a JVM's default zone is
    fixed at its start, and tests change TZ). A request finding none idle starts one, so
    concurrent requests (a Java commit paused in a thread while others run) each have their own.
    A JVM is retired after many requests, after a fatal error, and when idle for long."""

    REQUESTS_PER_JVM = 500
    IDLE_SECONDS = 120.0

    def __init__(self):
        self._lock = threading.Lock()
        self._idle: dict[tuple, list[_JavaServer]] = {}
        atexit.register(self.close_all)

    @staticmethod
    def _key(cmd: list[str]) -> tuple:
        return os.getpid(), os.environ.get("TZ"), tuple(cmd)  # a forked child starts its own JVMs

    def take(self, cmd: list[str]) -> _JavaServer:
        with self._lock:
            self._retire_idle()
            idle = self._idle.get(self._key(cmd), [])
            while idle:
                server = idle.pop()
                if server.exit_code() is None:
                    return server
                server.close()
        return _JavaServer(cmd, self._key(cmd))

    def give_back(self, server: _JavaServer, fit: bool) -> None:
        if not fit or server.requests >= self.REQUESTS_PER_JVM or server.key[0] != os.getpid():
            server.close()
            return
        server.idle_since = time.monotonic()
        with self._lock:
            self._idle.setdefault(server.key, []).append(server)

    def _retire_idle(self) -> None:
        now = time.monotonic()
        for key, servers in self._idle.items():
            for server in [s for s in servers if now - s.idle_since > self.IDLE_SECONDS]:
                servers.remove(server)
                server.close()

    def close_all(self) -> None:
        with self._lock:
            for servers in self._idle.values():
                for server in servers:
                    if server.key[0] == os.getpid():
                        server.close()
            self._idle.clear()


_SERVERS = _ServerPool()


class JavaOracle:
    """Runs Apache Paimon's Java library on tables; one request per call (or per :meth:`batch`)."""

    def __init__(self, java: str, mvn: str | None, project_dir: Path = JAVA_DIR):
        self.java = java
        self.mvn = mvn
        self.project_dir = Path(project_dir)
        self.target = self.project_dir / "target"

    # -- build

    def _source_hash(self) -> str:
        h = hashlib.sha256()
        files = [self.project_dir / "pom.xml", *sorted((self.project_dir / "src").rglob("*"))]
        for f in files:
            if f.is_file():
                h.update(str(f.relative_to(self.project_dir)).encode())
                h.update(f.read_bytes())
        return h.hexdigest()

    def _is_built(self, digest: str) -> bool:
        stamp = self.target / "oracle-build.sha256"
        return (stamp.is_file() and stamp.read_text().strip() == digest
                and (self.target / "classes").is_dir() and any((self.target / "lib").glob("paimon-bundle-*.jar")))

    def _build_flags(self) -> list[str]:
        """Extra `mvn package` arguments (a subclass builds another Paimon version)."""
        return []

    def _build_digest(self) -> str:
        return self._source_hash()

    def _build_what(self) -> str:
        return "the Paimon Java oracle"

    def ensure_built(self) -> None:
        digest = self._build_digest()
        if self._is_built(digest):
            return
        self.target.mkdir(parents=True, exist_ok=True)
        with open(self.target / ".build.lock", "w") as lock:
            fcntl.flock(lock, fcntl.LOCK_EX)  # concurrent test processes build once
            if self._is_built(digest):
                return
            if self.mvn is None:
                raise JavaOracleUnavailable(
                    f"Maven (mvn) is not installed: it is needed to build {self._build_what()} "
                    f"in {self.project_dir}")
            for stale in ("lib", "classes"):
                shutil.rmtree(self.target / stale, ignore_errors=True)
            proc = subprocess.run([self.mvn, "-q", "-B", "package", *self._build_flags()], cwd=self.project_dir,
                                  capture_output=True, text=True)
            if proc.returncode != 0:
                raise JavaOracleUnavailable(
                    f"building {self._build_what()} failed (mvn exit {proc.returncode}):\n"
                    f"{proc.stdout[-8000:]}\n{proc.stderr[-8000:]}")
            (self.target / "oracle-build.sha256").write_text(digest + "\n")

    @property
    def classpath(self) -> str:
        return os.pathsep.join([str(self.target / "classes"), str(self.target / "lib" / "*")])

    # -- protocol

    def run_ops(self, ops: list[dict], timeout: float = 900) -> list[Any]:
        """Send raw JSON operations to one of this process's JVMs; returns the raw results, in order."""
        self.ensure_built()
        request = json.dumps({"ops": ops}, allow_nan=False).encode()
        level = os.environ.get("PAIMON_ORACLE_LOG_LEVEL", "warn")
        cmd = [self.java, *_JVM_FLAGS, f"-Dorg.slf4j.simpleLogger.defaultLogLevel={level}",
               "-cp", self.classpath, MAIN_CLASS]
        server = _SERVERS.take(cmd)
        reply, stderr = server.ask(request, timeout)
        if reply is None:
            server.close()
            raise JavaOracleError(
                f"Paimon Java oracle gave no reply (exit {server.exit_code()}):\n{stderr[-8000:]}", stderr=stderr)
        _SERVERS.give_back(server, fit=not reply.get("fatal"))
        if not reply.get("ok"):
            i = reply.get("index", 0)
            op = ops[i] if i < len(ops) else {}
            raise JavaOracleError(
                f"Java failed op #{i} {op.get('op')!r} on {op.get('path')!r}: {reply.get('error')}\n"
                f"{reply.get('trace', '')[:6000]}",
                java_error=reply.get("error", ""), java_trace=reply.get("trace", ""), stderr=stderr,
                index=i, results=reply.get("results", []))
        return reply["results"]

    def batch(self) -> Batch:
        return Batch(self)

    # -- one request per call

    def _one(self, method: str, *args, **kwargs) -> Any:
        with self.batch() as b:
            p = getattr(b, method)(*args, **kwargs)
        return p.result

    def create_table(self, path, fields, primary_keys=(), partition_keys=(), options=None) -> None:
        """Create a table; fields are ``{"name": ..., "type": <Paimon type as in schema files>}``
        (optionally with "description" and "defaultValue")."""
        self._one("create_table", path, fields, primary_keys, partition_keys, options)

    def write(self, path, rows, commit_user=None, commit_identifier=None, overwrite=False,
              static_partition=None) -> None:
        self._one("write", path, rows, commit_user, commit_identifier, overwrite, static_partition)

    def write_dynamic(self, path, rows, commit_user=None, commit_identifier=None, overwrite=False,
                      static_partition=None, assigners=None) -> list[dict]:
        return self._one("write_dynamic", path, rows, commit_user, commit_identifier, overwrite, static_partition,
                         assigners)

    def read(self, path, snapshot_id=None, tag=None, columns=None, with_row_kind=False,
             incremental_between=None, equal=None, where=None, system_table=None, options=None,
             stream_plans=None) -> list[dict]:
        return self._one("read", path, snapshot_id, tag, columns, with_row_kind, incremental_between, equal=equal,
                         where=where, system_table=system_table, options=options, stream_plans=stream_plans)

    def snapshots(self, path) -> list[dict]:
        """[{id, schemaId, commitUser, commitIdentifier, commitKind, timeMillis,
        totalRecordCount, deltaRecordCount[, changelogRecordCount, watermark]}] by id."""
        return self._one("snapshots", path)

    def compact(self, path) -> int:
        """Full compaction of every (partition, bucket); returns how many were compacted."""
        return self._one("compact", path)

    def buckets(self, path, rows) -> list[int]:
        return self._one("buckets", path, rows)

    def write_columns(self, path, first_row_id, columns, rows) -> None:
        self._one("write_columns", path, first_row_id, columns, rows)

    def create_tag(self, path, tag, snapshot_id=None) -> None:
        self._one("create_tag", path, tag, snapshot_id)

    def alter(self, path, changes) -> int:
        """Commit schema changes with Paimon's SchemaManager; returns the new schema id."""
        return self._one("alter", path, changes)


_ORACLE: JavaOracle | None = None


def _find_java() -> str | None:
    explicit = os.environ.get("PAIMON_ORACLE_JAVA")
    if explicit:
        return shutil.which(explicit)
    home = os.environ.get("JAVA_HOME")
    if home and (Path(home) / "bin" / "java").is_file():
        return str(Path(home) / "bin" / "java")
    return shutil.which("java")


def get_oracle() -> JavaOracle:
    """The shared oracle, built on first use. Raises JavaOracleUnavailable without Java/Maven."""
    global _ORACLE
    if _ORACLE is None:
        java = _find_java()
        if java is None:
            raise JavaOracleUnavailable(
                "Java (17+) is not installed: it is needed to run the Paimon Java oracle")
        mvn = shutil.which(os.environ.get("PAIMON_ORACLE_MVN") or "mvn")
        oracle = JavaOracle(java, mvn)
        oracle.ensure_built()
        _ORACLE = oracle
    return _ORACLE


if __name__ == "__main__":
    # `python tests/java_oracle.py --build`: build (or verify) the oracle ahead of the test run,
    # so a Maven failure shows up as one clear message before pytest starts.
    import sys
    if sys.argv[1:] != ["--build"]:
        sys.exit("usage: python tests/java_oracle.py --build")
    get_oracle()
    print("Paimon Java oracle ready:", JAVA_DIR / "target")
