"""Differential hunt for silent wrong answers in reads across schema versions.

Hypothesis builds histories of schema changes (columns added, renamed, dropped, added again
under an old name, widened along every lossless cast, NOT NULL relaxed; ROW fields, also inside
ARRAY and MAP values, added, renamed, dropped and widened; default values; stats modes, file
indexes and the file format changed between files), writes, DELETEs and UPDATEs by filters,
compactions and tags, on append (plain, partitioned, with deletion vectors) and primary-key
tables (deduplicate plain, partitioned, thin-mode, with deletion vectors; partial-update,
aggregation, first-row), and checks after every step against a plain-Python model:

* the full read (column names, Arrow types and nullability, rows);
* filtered reads with filters over every column (= != < <= > >= in, not in, is null, is not
  null; ANDs and ORs of them; with and without a projection), the expected rows computed here
  in plain Python with SQL semantics (a comparison with a null is never true), never through
  the project's predicate code: a renamed, widened or re-added column must not prune an old
  file by its old statistics or file index wrongly;
* at the end, time travel to every snapshot and tag (read with the fields of the schema the
  snapshot was committed with and the table's current options, as Java does), with filters;
  on append tables incremental reads between snapshots (read with the newest schema, with
  filters) and a stream defined at an old snapshot, which reads with that snapshot's schema
  until a snapshot with other columns, where it must stop with SchemaChangedError.

The model keeps each row as a dict by *column identity* (a token per field id, also inside
ROW values), so a rename keeps a column's values, a dropped-and-re-added column is null in old
rows, and a widened one keeps its values (Python compares 3, 3.0 and Decimal('3.00') equal).

A second property runs the same kind of history with Apache Paimon Java 1.4.2 writing,
altering and compacting too (`tests/java_oracle.py`), and checks Java's full reads, its time
travel (snapshots and tags), its incremental reads and its filtered reads (Java skips files,
not rows: its answer must CONTAIN every matching row).

SCHEMA_READS_EXAMPLES (default 60) and SCHEMA_READS_JAVA_EXAMPLES (default 4) hunt longer;
SCHEMA_READS_SHRINK=1 shrinks a failure (slow).
"""
from __future__ import annotations

import copy
import datetime as dt
import decimal
import os
import random
import struct
import tempfile
from collections import Counter
from dataclasses import dataclass, field
from typing import Any

import pyarrow as pa
import pytest
from hypothesis import HealthCheck, Phase, given, settings, strategies as st

import paimon_streaming as ps
from paimon_streaming.errors import SchemaChangedError, SchemaMismatchError
from paimon_streaming.predicate import parse_filter
from paimon_streaming.streaming_scan import StreamPosition
from paimon_streaming.types import DataType, parse_atomic, to_arrow

from java_oracle import get_oracle
from stream_batches import micro_batches, open_stream

EXAMPLES = int(os.environ.get("SCHEMA_READS_EXAMPLES", "60"))
JAVA_EXAMPLES = int(os.environ.get("SCHEMA_READS_JAVA_EXAMPLES", "4"))
PHASES = tuple(Phase) if os.environ.get("SCHEMA_READS_SHRINK") == "1" else (Phase.explicit, Phase.reuse, Phase.generate)
D = decimal.Decimal


def f32(x: float) -> float:
    return struct.unpack("<f", struct.pack("<f", x))[0]


LONG_A = "shared-prefix-0123456789-alpha"   # > 16 code points: truncated statistics
LONG_B = "shared-prefix-0123456789-beta"
TS = [dt.datetime(1970, 1, 1), dt.datetime(1969, 12, 31, 23, 59, 59, 999000), dt.datetime(2024, 2, 29, 12, 0, 0, 1000),
      dt.datetime(2024, 2, 29, 12, 0, 0, 2000), dt.datetime(2262, 4, 11)]   # (ORC files end there)

# Values written to a column of each type (literals for filters come from here too).
POOLS: dict[str, list] = {
    "TINYINT": [-128, -3, 0, 1, 5, 127],
    "SMALLINT": [-32768, -3, 0, 5, 300, 32767],
    "INT": [-2**31, -3, 0, 5, 70000, 2**31 - 1],
    "BIGINT": [-2**63, -3, 0, 5, 2**40, 2**53 + 1, 2**63 - 1],
    "FLOAT": [f32(-1.5), 0.0, f32(0.1), 3.25, f32(1e30)],
    "DOUBLE": [-2.5, 0.0, 0.1, 5.0, 1e300, -1e300],
    "DECIMAL(5, 2)": [D("-999.99"), D("-0.50"), D("0.00"), D("1.25"), D("999.99")],
    "DECIMAL(8, 2)": [D("-999999.99"), D("0.00"), D("1.25"), D("123456.78")],
    "DECIMAL(9, 4)": [D("-99999.9999"), D("0.0001"), D("1.2500"), D("12345.6789")],
    "DECIMAL(12, 3)": [D("-999999999.999"), D("1.255"), D("123456789.123")],
    "DECIMAL(10, 0)": [D("-9999999999"), D("0"), D("5"), D("9999999999")],
    "DECIMAL(12, 2)": [D("-9999999999.99"), D("0.01"), D("5.00"), D("9999999999.99")],
    "DECIMAL(20, 0)": [D("-99999999999999999999"), D("5"), D("99999999999999999999")],
    "VARCHAR(4)": ["", "a", "ab", "abcd", "zz", "é"],
    "CHAR(3)": ["a", "abc", "b", "é"],
    "VARCHAR(10)": ["", "a", "abcdefghij", "b", "é日本"],
    "STRING": ["", "a", "b", LONG_A, LONG_B, "\U0001F600", "zzzzzzzzzzzzzzzzzzzzzz"],
    "TIMESTAMP(3)": TS,
    "TIMESTAMP(6)": TS + [dt.datetime(2024, 2, 29, 12, 0, 0, 1500), dt.datetime(1970, 1, 1, 0, 0, 0, 1)],
    "TIMESTAMP(3) WITH LOCAL TIME ZONE": [t.replace(tzinfo=dt.timezone.utc) for t in TS],
    "TIMESTAMP(6) WITH LOCAL TIME ZONE": [t.replace(tzinfo=dt.timezone.utc) for t in TS]
    + [dt.datetime(2024, 2, 29, 12, 0, 0, 1500, tzinfo=dt.timezone.utc)],
    "DATE": [dt.date(1970, 1, 1), dt.date(1969, 12, 31), dt.date(2024, 2, 29), dt.date(9999, 12, 31)],
    "BOOLEAN": [True, False],
}
# Lossless widenings the project allows (schema_update.widening_error) and Java allows too.
WIDEN: dict[str, list[str]] = {
    "TINYINT": ["SMALLINT", "INT", "BIGINT", "DOUBLE", "DECIMAL(10, 0)"],
    "SMALLINT": ["INT", "BIGINT", "FLOAT", "DOUBLE"],
    "INT": ["BIGINT", "DOUBLE", "DECIMAL(12, 2)"],
    "BIGINT": ["DECIMAL(20, 0)"],
    "FLOAT": ["DOUBLE"],
    "DECIMAL(5, 2)": ["DECIMAL(8, 2)", "DECIMAL(9, 4)"],
    "DECIMAL(8, 2)": ["DECIMAL(12, 3)"],
    "DECIMAL(10, 0)": ["DECIMAL(12, 2)", "DECIMAL(20, 0)"],
    "VARCHAR(4)": ["VARCHAR(10)", "STRING"],
    "CHAR(3)": ["VARCHAR(10)", "STRING"],
    "VARCHAR(10)": ["STRING"],
    "TIMESTAMP(3)": ["TIMESTAMP(6)"],
    "TIMESTAMP(3) WITH LOCAL TIME ZONE": ["TIMESTAMP(6) WITH LOCAL TIME ZONE"],
}
ATOMIC = sorted(POOLS)
DEFAULTS = {"TINYINT": ("7", 7), "SMALLINT": ("7", 7), "INT": ("7", 7), "BIGINT": ("7", 7),
            "VARCHAR(10)": ("dflt", "dflt"), "STRING": ("dflt", "dflt"), "DOUBLE": ("2.5", 2.5)}
# extra filter literals per type family: values no file holds, fractions against integers, ...
EXTRA_LITERALS = {
    "int": [2.5, -1, 10**12, D("5.000"), -2**40],
    "float": [2.5, 1, f32(0.1), 0.1, 1e38],
    "dec": [D("1.250"), D("1.2501"), 1, D("-0.5")],
    "str": ["abc", "b", LONG_A[:16], "\uffff"],
    "ts": [dt.datetime(2024, 2, 29, 12, 0, 0, 1500), dt.datetime(2000, 1, 1)],
    "tsz": [dt.datetime(2024, 2, 29, 13, 0, 0, 1000, tzinfo=dt.timezone(dt.timedelta(hours=1))),
            dt.datetime(2000, 1, 1, tzinfo=dt.timezone.utc)],
    "date": [dt.date(2000, 1, 1)],
    "bool": [],
}


def family(spec: str) -> str:
    if spec in ("TINYINT", "SMALLINT", "INT", "BIGINT"):
        return "int"
    if spec in ("FLOAT", "DOUBLE"):
        return "float"
    if spec.startswith("DECIMAL"):
        return "dec"
    if spec.startswith(("VARCHAR", "STRING", "CHAR")):
        return "str"
    if spec.startswith("TIMESTAMP"):
        return "tsz" if spec.endswith("ZONE") else "ts"
    return {"DATE": "date", "BOOLEAN": "bool"}.get(spec, "row")


# ---- the model -----------------------------------------------------------------------------
@dataclass
class MCol:
    token: int
    name: str
    spec: str                                   # atomic Paimon type, or "ROW"
    fields: list["MCol"] = field(default_factory=list)   # of a ROW
    default: tuple[str, Any] | None = None
    nullable: bool = True
    agg: str | None = None                      # aggregation tables: the column's function

    def arrow(self) -> pa.DataType:
        if self.spec == "ROW":
            return pa.struct([pa.field(f.name, f.arrow()) for f in self.fields])
        if self.spec == "ARRAY":
            return pa.list_(pa.field("element", self.fields[0].arrow()))
        if self.spec == "MAP":
            return pa.map_(pa.field("key", pa.string(), False), pa.field("value", self.fields[0].arrow()))
        return to_arrow(parse_atomic(self.spec))

    def java_type(self) -> Any:
        if self.spec == "ROW":
            return {"type": "ROW", "fields": [{"id": 0, "name": f.name, "type": f.java_type()} for f in self.fields]}
        if self.spec == "ARRAY":
            return {"type": "ARRAY", "element": self.fields[0].java_type()}
        if self.spec == "MAP":
            return {"type": "MAP", "key": "STRING NOT NULL", "value": self.fields[0].java_type()}
        return self.spec + ("" if self.nullable else " NOT NULL")

    def rows_inside(self, path: tuple = ()) -> list[tuple[tuple, "MCol"]]:
        """The ROW types in this column with their paths (through `element` / `value`)."""
        path = path + (self.name,)
        if self.spec == "ROW":
            return [(path, self)] + [r for f in self.fields for r in f.rows_inside(path)]
        if self.spec in ("ARRAY", "MAP"):
            return self.fields[0].rows_inside(path)
        return []


class Model:
    """Current columns (with identity tokens) and the rows (dicts by token, values as written)."""

    def __init__(self, kind: str):
        self.kind = kind
        self.pk = kind in ("pk", "pk-dv", "partial", "pk-part", "agg", "pk-thin", "first-row")
        self.partitioned = kind in ("append-part", "pk-part")
        self.tokens = iter(range(1, 10**6))
        self.columns: list[MCol] = [MCol(next(self.tokens), "k", "INT", nullable=not self.pk)]
        if self.partitioned:
            self.columns.append(MCol(next(self.tokens), "p", "VARCHAR(10)", nullable=not self.pk))
        self.fixed = {c.name for c in self.columns}
        # a NOT NULL value column, made nullable by a change ("relax")
        self.columns.append(MCol(next(self.tokens), "nn", "INT", nullable=False))
        self.rows: list[dict] | dict = {} if self.pk else []
        self.used_names: set[str] = self.fixed | {"nn"}
        self.serial = 0
        self.snapshots: dict[int, tuple[list[MCol], list[dict]]] = {}   # id -> (columns, rows)
        self.appended: dict[int, list[dict]] = {}                          # append tables: id -> rows added
        self.tags: dict[str, int] = {}
        self.indexed: dict[str, list[str]] = {}   # file-index option -> the columns it names
        self.agg_options: dict[str, str] = {}      # aggregation tables: column name -> function option
        self.tombstones: set[int] = set()          # partial-update and aggregation: keys deleted

    # -- names
    def new_name(self, rnd: random.Random, renaming: bool = False) -> str:
        """A fresh name, or one used before (a column renamed away or dropped); a rename does
        not take a name an aggregation option still names (its function would change)."""
        gone = sorted(self.used_names - {c.name for c in self.columns} - self.fixed
                      - (set(self.agg_options) if renaming else set()))
        if gone and rnd.random() < 0.7:
            return rnd.choice(gone)          # an old name again: a new field id
        self.serial += 1
        name = f"c{self.serial}"
        self.used_names.add(name)
        return name

    def col(self, name: str) -> MCol:
        return next(c for c in self.columns if c.name == name)

    def value_columns(self) -> list[MCol]:
        return [c for c in self.columns if c.name not in self.fixed]

    # -- rows
    def all_rows(self) -> list[dict]:
        return list(self.rows.values()) if self.pk else list(self.rows)

    def batch(self, rnd: random.Random, n: int) -> tuple[list[dict], list[dict]]:
        """n rows by token as written (nulls) and as stored (defaults applied to nulls, as
        writers apply them)."""
        # A key deleted from a partial-update or aggregation table is not written again: Java's
        # merge starts a later row of the key from the -D row's fields until a compaction drops
        # the -D row (PartialUpdateMergeFunction, AggregateMergeFunction), which this model
        # leaves out.
        free = [k for k in range(12) if k not in self.tombstones]
        keys = rnd.sample(free, min(n, len(free))) if self.pk else [rnd.choice([None, *range(12)]) for _ in range(n)]
        written, stored = [], []
        for key in keys:
            row = {self.columns[0].token: key}
            if self.partitioned:
                row[self.columns[1].token] = rnd.choice(["a", "b"] if self.pk else ["a", "b", None])
            for c in self.value_columns():
                row[c.token] = self.random_value(rnd, c)
            written.append(row)
            stored.append({t: c.default[1] if v is None and c.default is not None else v
                           for t, v, c in ((t, v, self.by_token(t)) for t, v in row.items())})
        return written, stored

    def by_token(self, token: int) -> MCol:
        return next(c for c in self.columns if c.token == token)

    def random_value(self, rnd: random.Random, c: MCol) -> Any:
        if rnd.random() < 0.2 and c.nullable:
            return None
        if c.spec == "ROW":
            return {f.token: self.random_value(rnd, f) for f in c.fields}
        if c.spec == "ARRAY":
            return [self.random_value(rnd, c.fields[0]) for _ in range(rnd.randint(0, 2))]
        if c.spec == "MAP":
            return [(k, self.random_value(rnd, c.fields[0])) for k in rnd.sample(["k1", "k2", "k3"], rnd.randint(0, 2))]
        return rnd.choice(POOLS[c.spec])

    def write(self, batch: list[dict]) -> None:
        if not self.pk:
            self.rows.extend(batch)
            return
        keys = [c.token for c in self.columns if c.name in self.fixed]
        for row in batch:
            key = tuple(row[t] for t in keys)
            if self.kind == "partial" and key in self.rows:
                merged = dict(self.rows[key])
                merged.update({t: v for t, v in row.items() if v is not None})
                self.rows[key] = merged
            elif self.kind == "first-row" and key in self.rows:
                continue
            elif self.kind == "agg" and key in self.rows:
                old = self.rows[key]
                self.rows[key] = {t: _aggregate(self.by_token(t).agg, old.get(t), v) for t, v in row.items()}
            else:
                self.rows[key] = row

    def by_name(self, row: dict, columns: list[MCol] | None = None) -> dict:
        """A model row as a reader shows it with `columns` (default: the current ones)."""
        return {c.name: _project(row.get(c.token), c) for c in (columns or self.columns)}

    def expected(self, columns: list[MCol] | None = None, rows: list[dict] | None = None) -> list[dict]:
        return [self.by_name(r, columns) for r in (self.all_rows() if rows is None else rows)]

    def record(self, snapshot_id: int) -> None:
        self.snapshots[snapshot_id] = (copy.deepcopy(self.columns), copy.deepcopy(self.all_rows()))

    def arrow_schema(self) -> pa.Schema:
        return pa.schema([pa.field(c.name, c.arrow(), c.nullable) for c in self.columns])


def _aggregate(func: str | None, old: Any, new: Any) -> Any:
    """One column of an aggregation table's merge (the older value first)."""
    if func == "last_value":
        return new
    if func == "first_non_null_value":
        return new if old is None else old
    if func in ("max", "min") and old is not None and new is not None:
        return (max if func == "max" else min)(old, new)
    return old if new is None else new   # last_non_null_value (the default), and max/min with a null


def _project(value: Any, c: MCol) -> Any:
    if value is None:
        return value
    if c.spec == "ROW":
        return {f.name: _project(value.get(f.token), f) for f in c.fields}
    if c.spec == "ARRAY":
        return [_project(e, c.fields[0]) for e in value]
    if c.spec == "MAP":
        return [(k, _project(v, c.fields[0])) for k, v in value]
    return value


def _hashable(v: Any) -> Any:
    if isinstance(v, dict):
        return tuple(sorted((k, _hashable(x)) for k, x in v.items()))
    if isinstance(v, (list, tuple)):
        return tuple(_hashable(x) for x in v)
    return v


def as_bag(rows: list[dict], names: list[str]) -> Counter:
    return Counter(tuple(_hashable(r.get(n)) for n in names) for r in rows)


def assert_rows(got: list[dict], want: list[dict], names: list[str], what: Any) -> None:
    g, w = as_bag(got, names), as_bag(want, names)
    if g != w:
        raise AssertionError(f"{what}: missing {list((w - g).elements())[:6]}, extra {list((g - w).elements())[:6]} "
                             f"(got {sum(g.values())} rows, want {sum(w.values())})")


# ---- schema changes --------------------------------------------------------------------------
ALTERS = ["add", "add", "add", "rename", "rename", "drop", "drop", "widen", "widen", "readd", "readd", "default",
          "nested-add", "nested-rename", "nested-drop", "nested-widen", "stats-mode", "index", "relax", "format"]
INDEXES = ["file-index.bloom-filter.columns", "file-index.bitmap.columns", "file-index.bsi.columns",
           "file-index.range-bitmap.columns"]


def indexable(key: str, spec: str) -> bool:
    """Whether the file index of option `key` takes a column of type `spec` (file_index.py)."""
    fam = family(spec)
    if "bsi" in key:
        return fam == "int"
    if "bitmap" in key and fam == "bool":
        return "range" not in key
    return fam in ("int", "float", "str", "date", "ts", "tsz")


STATS_MODES = ["full", "counts", "none", "truncate(16)", "truncate(2)"]


def plan_change(model: Model, kind: str, rnd: random.Random) -> list[dict] | None:
    """Schema changes as Java's oracle takes them (and `apply_ours` applies), applied to the
    model; None when the change does not apply to the current columns. A column a file-index
    option names leaves the option first (Paimon refuses a rename or drop that leaves the
    option naming no column)."""
    if kind == "readd" and model.value_columns():  # drop a column and add one of its name (a new field id)
        dropped = plan_change(model, "drop", rnd)
        if dropped is None:
            return None
        name = dropped[-1]["path"][0]
        col = MCol(next(model.tokens), name, rnd.choice(ATOMIC))
        model.columns.append(col)
        return dropped + [{"kind": "add", "path": [name], "type": col.java_type()}]
    if kind in ("rename", "drop") and model.value_columns():
        target = rnd.choice(model.value_columns())
        name = target.name
        change = _plan_change(model, kind, rnd, target)
        if change is None:
            return None
        unindex = [{"kind": "set-option", "key": key, "value": ",".join(n for n in names if n != name)}
                   for key, names in model.indexed.items() if name in names]
        for key, names in model.indexed.items():
            if name in names:
                names.remove(name)
        return [c for c in unindex if c["value"]] + \
            [{"kind": "remove-option", "key": c["key"]} for c in unindex if not c["value"]] + [change]
    change = _plan_change(model, kind, rnd, None)
    if change is None:
        return None
    if change["kind"] == "add" and model.kind == "agg" and len(change["path"]) == 1:
        col = model.col(change["path"][0])
        if family(col.spec) in ("int", "float", "dec", "str", "date", "ts", "tsz") and rnd.random() < 0.8:
            model.agg_options[col.name] = rnd.choice(["max", "min", "last_value", "first_non_null_value"])
            col.agg = model.agg_options[col.name]
            return [change, {"kind": "set-option", "key": f"fields.{col.name}.aggregate-function",
                             "value": col.agg}]
    return [change]


def _plan_change(model: Model, kind: str, rnd: random.Random, target: MCol | None) -> dict | None:
    values = model.value_columns()
    rows_ = [r for c in values for r in c.rows_inside()]
    if kind == "add" or not values:
        name = model.new_name(rnd)
        shape = rnd.random()
        if shape < 0.25:
            row = MCol(next(model.tokens), "element", "ROW",
                       [MCol(next(model.tokens), "x", "INT"), MCol(next(model.tokens), "y", "VARCHAR(10)")])
            if shape < 0.1:
                col, row.name = row, name
            else:
                col = MCol(next(model.tokens), name, "ARRAY" if shape < 0.18 else "MAP", [row])
                row.name = "element" if col.spec == "ARRAY" else "value"
        else:
            col = MCol(next(model.tokens), name, rnd.choice(ATOMIC))
        model.columns.append(col)
        return {"kind": "add", "path": [name], "type": col.java_type()}
    if kind == "rename":
        c = target
        new = model.new_name(rnd, renaming=True)
        old, c.name = c.name, new
        return {"kind": "rename", "path": [old], "newName": new}
    if kind == "drop":
        if len(values) < 2:
            return None
        c = target
        model.columns.remove(c)
        return {"kind": "drop", "path": [c.name]}
    if kind == "widen":
        choices = [c for c in values if c.spec in WIDEN]
        if not choices:
            return None
        c = rnd.choice(choices)
        keys = [key for key, names in model.indexed.items() if c.name in names]
        targets = [w for w in WIDEN[c.spec] if all(indexable(key, w) for key in keys)]
        if not targets:
            return None
        c.spec = rnd.choice(targets)
        return {"kind": "type", "path": [c.name], "type": c.spec}
    if kind == "default":
        choices = [c for c in values if c.spec in DEFAULTS]
        if not choices:
            return None
        c = rnd.choice(choices)
        c.default = DEFAULTS[c.spec]
        if c.spec == "DOUBLE":
            c.default = ("2.5", 2.5)
        return {"kind": "default", "path": [c.name], "value": c.default[0]}
    if kind == "format":  # files of both formats in one table, each read by its own format
        return {"kind": "set-option", "key": "file.format", "value": rnd.choice(["parquet", "orc"])}
    if kind == "relax":
        choices = [c for c in values if not c.nullable]
        if not choices:
            return None
        choices[0].nullable = True
        return {"kind": "nullable", "path": [choices[0].name]}
    if kind == "index":
        key = rnd.choice(INDEXES)
        ok = [c.name for c in values if c.spec in POOLS and indexable(key, c.spec)]
        if not ok:
            return None
        names = rnd.sample(ok, rnd.randint(1, min(2, len(ok))))
        model.indexed[key] = names
        return {"kind": "set-option", "key": key, "value": ",".join(names)}
    if kind == "stats-mode":
        target = rnd.choice([None] + values)
        mode = rnd.choice(STATS_MODES)
        key = "metadata.stats-mode" if target is None else f"fields.{target.name}.stats-mode"
        return {"kind": "set-option", "key": key, "value": mode}
    if not rows_:
        return None
    at, r = rnd.choice(rows_)
    at = list(at)
    if kind == "nested-add":
        names = {f.name for f in r.fields}
        name = next(n for n in ("z", "w", "x", "y", "v") if n not in names)
        f = MCol(next(model.tokens), name, rnd.choice(["INT", "STRING", "DECIMAL(5, 2)"]))
        r.fields.append(f)
        return {"kind": "add", "path": at + [name], "type": f.spec}
    if kind == "nested-rename":
        f = rnd.choice(r.fields)
        names = {x.name for x in r.fields}
        new = next(n for n in ("x", "y", "z", "u", "t") if n not in names)
        old, f.name = f.name, new
        return {"kind": "rename", "path": at + [old], "newName": new}
    if kind == "nested-drop":
        if len(r.fields) < 2:
            return None
        f = rnd.choice(r.fields)
        r.fields.remove(f)
        return {"kind": "drop", "path": at + [f.name]}
    if kind == "nested-widen":
        choices = [f for f in r.fields if f.spec in WIDEN]
        if not choices:
            return None
        f = rnd.choice(choices)
        f.spec = rnd.choice(WIDEN[f.spec])
        return {"kind": "type", "path": at + [f.name], "type": f.spec}
    raise AssertionError(kind)


def _field_option_names(options: dict) -> set[str]:
    """The columns `fields.<name>.<suffix>` options name (Java's SchemaValidation checks each)."""
    return {n for k in options if k.startswith("fields.") and k.count(".") >= 2
            for n in k.split(".")[1].split(",")} - {"default-aggregate-function"}


def java_can_apply(options: dict, changes: list[dict]) -> bool:
    """Whether the Java oracle can apply `changes`: it has no op to remove an option or relax
    NOT NULL, and Java refuses to drop or rename a column a `fields.<name>.*` option names
    (its rename moves only some of them; the schema must name no missing column)."""
    moved = ("aggregate-function", "ignore-retract", "distinct", "list-agg-delimiter")  # by Java's rename
    named = _field_option_names(options)
    kept = _field_option_names({k: v for k, v in options.items() if not k.endswith(moved)})
    return all(c["kind"] not in ("remove-option", "nullable") and
               not (c["kind"] == "drop" and len(c["path"]) == 1 and c["path"][0] in named) and
               not (c["kind"] == "rename" and len(c["path"]) == 1 and c["path"][0] in kept)
               for c in changes)


def apply_ours(table: ps.Table, changes: list[dict]) -> None:
    with table.update_schema() as u:
        for change in changes:
            _apply_one(u, change)


def _apply_one(u, change: dict) -> None:
    if True:
        kind, path = change["kind"], tuple(change.get("path", ()))
        if kind == "add":
            t = change["type"]
            u.add_column(path if len(path) > 1 else path[0], DataType.from_json(t) if isinstance(t, dict) else t)
        elif kind == "rename":
            u.rename_column(path if len(path) > 1 else path[0], change["newName"])
        elif kind == "drop":
            u.drop_column(path if len(path) > 1 else path[0])
        elif kind == "type":
            u.update_column(path if len(path) > 1 else path[0], change["type"])
        elif kind == "default":
            u.set_default(path[0], change["value"])
        elif kind == "nullable":
            u.update_column(path[0], nullable=True)
        elif kind == "set-option":
            u.set_option(change["key"], change["value"])
        elif kind == "remove-option":
            u.remove_option(change["key"])
        else:
            raise AssertionError(kind)


# ---- filters -----------------------------------------------------------------------------------
OPS = ["=", "!=", "<", "<=", ">", ">=", "in", "not in", "is null", "is not null"]


def _cmp(v: Any, op: str, lit: Any) -> bool:
    if v is None:
        return False
    if op in ("=", "=="):
        return v == lit
    if op == "!=":
        return v != lit
    if op == "<":
        return v < lit
    if op == "<=":
        return v <= lit
    if op == ">":
        return v > lit
    return v >= lit


def term_holds(row: dict, term: tuple) -> bool:
    column, op, lit = term
    v = row[column]
    if op == "is null":
        return v is None
    if op == "is not null":
        return v is not None
    if op == "in":
        return any(_cmp(v, "=", x) for x in lit)
    if op == "not in":
        return v is not None and all(_cmp(v, "!=", x) for x in lit)
    return _cmp(v, op, lit)


def holds(row: dict, flt: list) -> bool:
    groups = [flt] if isinstance(flt[0], tuple) else flt
    return any(all(term_holds(row, t) for t in g) for g in groups)


def literals_for(c: MCol, present: list) -> list:
    fam = family(c.spec)
    lits = list(POOLS.get(c.spec, [])) + EXTRA_LITERALS.get(fam, []) + [v for v in present if v is not None]
    if c.name == "p":
        lits += ["a", "b", "c"]
    return lits


def random_term(rnd: random.Random, model: Model, columns: list[MCol], rows: list[dict]) -> tuple:
    c = rnd.choice(columns)
    if c.spec in ("ROW", "ARRAY", "MAP") or c.spec == "BOOLEAN" and rnd.random() < 0.5:
        return (c.name, rnd.choice(["is null", "is not null"]), None) if c.spec != "BOOLEAN" else \
            (c.name, rnd.choice(["=", "!="]), rnd.choice([True, False]))
    lits = literals_for(c, [r[c.name] for r in rows])
    op = rnd.choice(OPS)
    if c.spec == "BOOLEAN" and op not in ("=", "!=", "is null", "is not null", "in", "not in"):
        op = "="
    if op in ("is null", "is not null"):
        return (c.name, op, None)
    if op in ("in", "not in"):
        return (c.name, op, rnd.sample(lits, min(len(lits), rnd.randint(1, 3))))
    return (c.name, op, rnd.choice(lits))


def random_filter(rnd: random.Random, model: Model, columns: list[MCol], rows: list[dict]) -> list:
    shape = rnd.random()
    if shape < 0.6:
        return [random_term(rnd, model, columns, rows)]
    if shape < 0.8:
        return [random_term(rnd, model, columns, rows), random_term(rnd, model, columns, rows)]
    return [[random_term(rnd, model, columns, rows)], [random_term(rnd, model, columns, rows)]]


# ---- the table kinds ---------------------------------------------------------------------------
KINDS = {
    "append": (None, None, {}),
    "append-part": (None, ["p"], {}),
    "pk": (["k"], None, {"bucket": "2"}),
    "pk-dv": (["k"], None, {"bucket": "2", "deletion-vectors.enabled": "true"}),
    "partial": (["k"], None, {"bucket": "1", "merge-engine": "partial-update",
                              "partial-update.remove-record-on-delete": "true"}),
    "append-dv": (None, None, {"deletion-vectors.enabled": "true"}),
    "pk-thin": (["k"], None, {"bucket": "2", "data-file.thin-mode": "true"}),
    "first-row": (["k"], None, {"bucket": "2", "merge-engine": "first-row"}),
    "agg": (["k"], None, {"bucket": "1", "merge-engine": "aggregation", "aggregation.remove-record-on-delete": "true"}),
    "pk-part": (["p", "k"], ["p"], {"bucket": "2"}),
}

# Steps are drawn from seeds (Hypothesis' own choice among many alternatives favours a few);
# `op_of` makes each seed a step, and failure messages name the steps.
STEP_WEIGHTS = {"write": 30, "alter": 40, "compact": 10, "tag": 5, "delete": 8, "update": 7}


def op_of(seed: Any) -> tuple:
    rnd = random.Random(repr(seed))
    kind = rnd.choices(list(STEP_WEIGHTS), weights=list(STEP_WEIGHTS.values()))[0]
    if kind == "write":
        return ("write", rnd.randint(1, 6), rnd.getrandbits(32))
    if kind == "alter":
        return ("alter", rnd.choice(ALTERS), rnd.getrandbits(32))
    if kind == "compact":
        return ("compact", rnd.random() < 0.5)
    if kind == "tag":
        return ("tag",)
    return (kind, rnd.getrandbits(32))


step = st.integers(0, 2**32 - 1)


class Run:
    """One history against one table: steps by us (and by Java when `java` is given)."""

    def __init__(self, wh: str, kind: str, seed: int, java=None):
        self.rnd = random.Random(seed)
        self.kind = kind
        self.model = Model(kind)
        self.java = java
        pks, parts, options = KINDS[kind]
        options = dict(options)
        self.table = ps.Catalog(wh).create_table("db.t", self.model.arrow_schema(), primary_keys=pks,
                                                 partition_keys=parts, options=options)
        self.path = self.table.path
        # initial value columns, added before any write (some types have no Arrow spelling)
        changes = [plan_change(self.model, "add", self.rnd) for _ in range(self.rnd.randint(2, 4))]
        for change in changes:
            apply_ours(ps.Table.open(self.path), change)
        self.dv_skip: set[int] = set()

    def t(self) -> ps.Table:
        return ps.Table.open(self.path)

    def latest_id(self) -> int | None:
        s = self.t().latest_snapshot()
        return None if s is None else s.id

    def step(self, op: tuple, by_java: bool = False) -> None:
        m = self.model
        before = self.latest_id()
        if op[0] == "write":
            rnd = random.Random(op[2])
            written, batch = m.batch(rnd, op[1])
            if not batch:
                return
            named = [m.by_name(r) for r in written]
            if by_java:
                self.java.write(self.path, named)
            else:
                self.t().write_arrow(pa.Table.from_pylist(named, schema=m.arrow_schema()))
            m.write(batch)
            self._record(before, batch)
        elif op[0] == "alter":
            change = plan_change(m, op[1], random.Random(op[2]))
            if change is None:
                return
            if by_java and java_can_apply(self.t().schema.options, change):
                self.java.alter(self.path, change)
            else:
                apply_ours(self.t(), change)
                for c in change:  # our drop takes the column's `fields.<name>.*` options along, Java's keeps them
                    if c["kind"] == "drop" and len(c["path"]) == 1:
                        m.agg_options.pop(c["path"][0], None)
            for c in change:  # a rename moves `fields.<name>.aggregate-function` (ours and Java's)
                if c["kind"] == "rename" and len(c["path"]) == 1 and c["path"][0] in m.agg_options:
                    m.agg_options[c["newName"]] = m.agg_options.pop(c["path"][0])
            for c in change:  # an added column takes the function an option of its name gives
                if c["kind"] == "add" and len(c["path"]) == 1:
                    m.col(c["path"][0]).agg = m.agg_options.get(c["path"][0])
        elif op[0] == "compact":
            if by_java:
                self.java.compact(self.path)
            else:
                self.t().compact(full=op[1])
            self._record(before, [])
        elif op[0] in ("delete", "update"):
            self.row_level(op, by_java)
        elif op[0] == "tag":
            latest = self.latest_id()
            if latest is not None and latest not in self.dv_skip:
                name = f"tag{len(m.tags)}"
                self.t().create_tag(name)
                m.tags[name] = latest
        else:
            raise AssertionError(op)

    def row_level(self, op: tuple, by_java: bool) -> None:
        """A DELETE (UPDATE) by a filter on any column: rows a wrong pruning misses stay."""
        m = self.model
        if m.kind == "first-row":  # neither a -D row nor an update replaces a first row
            return
        defaults = {c.token: c.default[1] for c in m.columns if c.default is not None}
        if defaults and m.kind in ("append", "append-part"):
            return  # rewrites whole files through the writer, which gives their nulls the defaults (as Java's)
        rnd = random.Random(op[1])
        rows = m.all_rows()
        named = [m.by_name(r) for r in rows]
        flt = random_filter(rnd, m, m.columns, named)
        if _mixed_literals(flt):
            return
        hit = [r for r, n in zip(rows, named) if holds(n, flt)]
        before = self.latest_id()
        if op[0] == "delete":
            self.t().delete(flt)
            if m.pk:
                keys = [c.token for c in m.columns if c.name in m.fixed]
                for r in hit:
                    del m.rows[tuple(r[t] for t in keys)]
                    if m.kind in ("partial", "agg"):
                        m.tombstones.add(r[m.columns[0].token])
            else:
                ids = {id(r) for r in hit}
                m.rows = [r for r in m.rows if id(r) not in ids]
        else:
            if m.kind == "agg":  # an UPDATE must replace the row: not on aggregation tables
                return
            targets = [c for c in m.value_columns() if c.spec in POOLS]
            if not targets:
                return
            c = rnd.choice(targets)
            value = rnd.choice(POOLS[c.spec])
            self.t().update(flt, {c.name: value})
            ids = {id(r) for r in hit}  # new dicts: the rows as first written stay in `appended`

            def updated(r: dict) -> dict:  # written again: the writer gives its nulls the defaults
                return r | {t: d for t, d in defaults.items() if r.get(t) is None} | {c.token: value}
            if m.pk:
                m.rows = {k: updated(r) if id(r) in ids else r for k, r in m.rows.items()}
            else:
                m.rows = [updated(r) if id(r) in ids else r for r in m.rows]
        latest = self.latest_id()
        if latest != before:
            m.record(latest)
            if not m.pk:
                for s in range((before or 0) + 1, latest + 1):
                    m.appended[s] = None   # an OVERWRITE: incremental reads across it are not modelled

    def _record(self, before: int | None, appended: list[dict]) -> None:
        latest = self.latest_id()
        if latest is None or latest == before:
            return
        first = (before or 0) + 1
        self.dv_skip.update(range(first, latest))   # an APPEND snapshot a COMPACT one followed (DV tables)
        self.model.record(latest)
        if not self.model.pk:  # the rows are the first new snapshot's (an APPEND; a COMPACT may follow)
            for s in range(first, latest + 1):
                self.model.appended[s] = appended if s == first else []

    # ---- checks ------------------------------------------------------------------------------
    def check(self, what: Any, filters: int = 6) -> None:
        m = self.model
        t = self.t()
        got = t.to_arrow()
        names = [c.name for c in m.columns]
        assert got.column_names == names, (what, got.column_names, names)
        for c, f in zip(m.columns, got.schema):
            assert f.type == c.arrow() and f.nullable == c.nullable, (what, c.name, f, c.arrow(), c.nullable)
        want = m.expected()
        assert_rows(got.to_pylist(), want, names, what)
        self.check_filters(t, m.columns, want, what, filters)

    def check_filters(self, t: ps.Table, columns: list[MCol], want: list[dict], what: Any, n: int,
                      **read) -> None:
        for _ in range(n):
            flt = random_filter(self.rnd, self.model, columns, want)
            names, how = [c.name for c in columns], dict(read)
            if self.rnd.random() < 0.3:  # a projection without the filter's columns
                names = self.rnd.sample(names, self.rnd.randint(1, len(names)))
                how["columns"] = names
            try:
                got = t.to_arrow(filter=flt, **how).to_pylist()
            except SchemaMismatchError as exc:
                if _mixed_literals(flt):
                    continue
                raise AssertionError(f"{what}: filter {flt!r} refused: {exc}") from exc
            assert_rows(got, [r for r in want if holds(r, flt)], names, (what, "filter", flt, how))

    def merges_as_then(self, columns: list[MCol]) -> bool:
        """Whether a snapshot with `columns` merges with the functions it had: time travel
        merges under the table's current options (`evolution.with_current_options`), and our
        drop took a column's `fields.<name>.aggregate-function` along (the model keeps rows
        merged as they were)."""
        now = {c.token: c.agg for c in self.model.columns}
        return all((now[c.token] if c.token in now else self.model.agg_options.get(c.name)) == c.agg
                   for c in columns)

    def check_history(self) -> None:
        """Time travel to every recorded snapshot and tag; incremental reads of append tables."""
        m = self.model
        t = self.t()
        for sid, (columns, rows) in m.snapshots.items():
            if sid in self.dv_skip or not self.merges_as_then(columns):
                continue
            want = [m.by_name(r, columns) for r in rows]
            got = t.to_arrow(snapshot_id=sid)
            names = [c.name for c in columns]
            assert got.column_names == names, ("time travel", sid, got.column_names, names)
            assert_rows(got.to_pylist(), want, names, ("time travel", sid))
            self.check_filters(t, columns, want, ("time travel", sid), 2, snapshot_id=sid)
        for tag, sid in m.tags.items():
            columns, rows = m.snapshots[sid]
            if not self.merges_as_then(columns):
                continue
            assert_rows(t.to_arrow(tag=tag).to_pylist(), [m.by_name(r, columns) for r in rows],
                        [c.name for c in columns], ("tag", tag))
        if not m.pk and m.snapshots:
            ids = sorted(m.appended)
            for _ in range(3):
                start, end = sorted(self.rnd.sample([0] + ids, 2)) if len(ids) > 1 else (0, ids[0])
                if any(m.appended[s] is None for s in ids if start < s <= end):
                    continue
                want = [m.by_name(r) for s in ids if start < s <= end for r in m.appended[s]]
                got = t.changes_between(start, end, mode="delta") if start else None
                if got is None:
                    continue
                assert_rows(got.to_pylist(), want, [c.name for c in m.columns], ("incremental", start, end))
                flt = random_filter(self.rnd, m, m.columns, want or m.expected())
                if not _mixed_literals(flt):
                    assert_rows(t.changes_between(start, end, mode="delta", filter=flt).to_pylist(),
                                [r for r in want if holds(r, flt)], [c.name for c in m.columns],
                                ("incremental", start, end, "filter", flt))
            self.check_stream(self.rnd.choice(sorted(m.snapshots)))

    def check_stream(self, start: int) -> None:
        """A stream defined at snapshot `start` (reading with its schema) delivers the rows
        appended after it, up to the first snapshot committed with other columns, where it
        stops with SchemaChangedError (streaming_scan.py) rather than read on."""
        m = self.model
        t = self.t()
        columns = m.snapshots[start][0]
        schema = t.schema_manager.schema(t.snapshot(start).schema_id)
        scan = open_stream(t, {"scan.mode": "from-snapshot", "scan.snapshot-id": str(start + 1)}, schema)
        names = [c.name for c in columns]
        flt = random_filter(self.rnd, m, columns, [m.by_name(r, columns) for r in m.snapshots[start][1]])
        if _mixed_literals(flt) or self.rnd.random() < 0.5:
            flt = None
        parsed = None if flt is None else parse_filter(flt, _arrow_of(schema))
        got, stopped = [], None
        try:
            for batch, _ in micro_batches(scan, names, StreamPosition(start + 1), parsed, kind=None):
                got += [r for _, rows in batch for r in rows.to_pylist()]
        except SchemaChangedError:
            stopped = True
        # the first snapshot after `start` whose schema has other fields ends the stream
        ids = sorted(s for s in m.appended if s > start)
        sig = _signature(columns)
        recorded = sorted(m.snapshots)  # an APPEND snapshot a COMPACT one followed has the latter's columns
        changed = next((s for s in ids if _signature(m.snapshots[next(r for r in recorded if r >= s)][0]) != sig),
                       None)
        delivered = [s for s in ids if changed is None or s < changed]
        if any(m.appended[s] is None for s in delivered):
            return
        assert bool(stopped) == (changed is not None), ("stream from", start, "stopped", stopped, "changed at", changed)
        want = [m.by_name(r, columns) for s in delivered for r in m.appended[s]]
        assert_rows(got, [r for r in want if flt is None or holds(r, flt)], names, ("stream from", start, flt))


def _arrow_of(schema) -> pa.Schema:
    return pa.schema([pa.field(f.name, to_arrow(f.type), f.type.nullable) for f in schema.fields])


def _signature(columns: list[MCol]) -> Any:
    return [(c.token, c.name, c.spec, c.default, c.nullable, _signature(c.fields)) for c in columns]


def _mixed_literals(flt: list) -> bool:
    """An `in` list mixing Python types (Decimal and float) may be refused (a clear error)."""
    groups = [flt] if isinstance(flt[0], tuple) else flt
    return any(isinstance(t[2], list) and len({type(x) for x in t[2]}) > 1 for g in groups for t in g)


@settings(max_examples=EXAMPLES, deadline=None, phases=PHASES,
          suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large])
@given(kind=st.sampled_from(sorted(KINDS)), seed=st.integers(0, 2**32 - 1),
       steps=st.lists(step, min_size=3, max_size=14))
def test_reads_across_schema_changes(kind, seed, steps):
    with tempfile.TemporaryDirectory() as wh:
        run = Run(wh, kind, seed)
        run.check("created")
        for i, op in enumerate(op_of((seed, i, s)) for i, s in enumerate(steps)):
            run.step(op)
            run.check((i, op))
        run.check_history()


# ---- with Apache Paimon Java writing, altering and compacting too ------------------------------
JAVA_OPS = ["<", "<=", ">", ">=", "="]


def java_check(run: Run, java) -> None:
    """Java's full read, its time travel to every snapshot recorded and its filtered reads
    (which must CONTAIN every matching row: Java skips files, not rows) against the model."""
    m = run.model
    names = [c.name for c in m.columns]
    want = m.expected()
    terms = []
    for _ in range(10):
        c = run.rnd.choice([c for c in m.columns if c.spec in POOLS and c.spec != "BOOLEAN"])
        terms.append((c.name, run.rnd.choice(JAVA_OPS), run.rnd.choice(POOLS[c.spec] + [r[c.name] for r in want
                                                                                          if r[c.name] is not None])))
    named = _field_option_names(run.t().schema.options)  # Java refuses a snapshot lacking one of them
    travel = [s for s in m.snapshots if s not in run.dv_skip and run.merges_as_then(m.snapshots[s][0])
              and named <= {c.name for c in m.snapshots[s][0]}]
    ids = sorted(m.appended)
    ranges = [] if m.pk or len(ids) < 2 else [tuple(sorted(run.rnd.sample(ids, 2))) for _ in range(2)]
    ranges = [r for r in ranges if all(m.appended[s] is not None for s in ids if r[0] < s <= r[1])]
    with java.batch() as b:
        full = b.read(run.path)
        filtered = [b.read(run.path, where=term) for term in terms]
        past = [b.read(run.path, snapshot_id=s) for s in travel]
        tags = [tag for tag in m.tags if named <= {c.name for c in m.snapshots[m.tags[tag]][0]}]
        tagged = [b.read(run.path, tag=tag) for tag in tags]
        between = [b.read(run.path, incremental_between=r) for r in ranges]
    assert_rows(_java_rows(full.result, m.columns), want, names, "Java's read")
    for term, pending in zip(terms, filtered):
        got = as_bag(_java_rows(pending.result, m.columns), names)
        matching = as_bag([r for r in want if holds(r, [term])], names)
        assert not matching - got, ("Java's filtered read skipped", term, list((matching - got).elements())[:5])
    for s, pending in zip(travel, past):
        columns, rows = m.snapshots[s]
        assert_rows(_java_rows(pending.result, columns), [m.by_name(r, columns) for r in rows],
                    [c.name for c in columns], ("Java's time travel", s))
    for tag, pending in zip(tags, tagged):
        columns, rows = m.snapshots[m.tags[tag]]
        if not run.merges_as_then(columns):
            continue
        assert_rows(_java_rows(pending.result, columns), [m.by_name(r, columns) for r in rows],
                    [c.name for c in columns], ("Java's read of tag", tag))
    for (start, end), pending in zip(ranges, between):
        want = [m.by_name(r) for s in ids if start < s <= end for r in m.appended[s]]
        assert_rows(_java_rows(pending.result, m.columns), want, names, ("Java's incremental read", start, end))
        assert_rows(run.t().changes_between(start, end).to_pylist(), want, names, ("incremental", start, end))


def _java_rows(rows: list[dict], columns: list[MCol]) -> list[dict]:
    """Java's values as ours: a MAP/ROW as dicts by field name, timestamps naive."""
    return [{c.name: r.get(c.name) for c in columns} for r in rows]


java_step = st.tuples(st.booleans(), step)


@settings(max_examples=JAVA_EXAMPLES, deadline=None, phases=PHASES,
          suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large])
@given(kind=st.sampled_from(sorted(KINDS)), seed=st.integers(0, 2**32 - 1),
       steps=st.lists(java_step, min_size=3, max_size=8))
def test_reads_across_schema_changes_by_us_and_java(kind, seed, steps):
    java = get_oracle()
    with tempfile.TemporaryDirectory() as wh:
        run = Run(wh, kind, seed, java=java)
        for i, (by_java, op) in enumerate((b, op_of((seed, i, s))) for i, (b, s) in enumerate(steps)):
            run.step(op, by_java=by_java and op[0] != "tag")
            run.check((i, "java" if by_java else "ours", op), filters=4)
        run.check_history()
        java_check(run, java)


# ---- explicit cases (each generated by the properties too; here deterministic) -----------------
@pytest.mark.parametrize("kind", ["append", "pk-dv"])
def test_readded_column_is_null_in_old_files_whatever_their_statistics_and_indexes(kind, tmp_path):
    """A column dropped and added again under its name is a new field id: the old files' values,
    statistics (no nulls) and file index of the old column belong to another column, so the new
    one reads null there and `is null` must not prune those files by the old column's stats."""
    pks, _, options = KINDS[kind]
    schema = pa.schema([pa.field("k", pa.int32(), nullable=not pks), ("c", pa.int32()), ("s", pa.string())])
    t = ps.Catalog(str(tmp_path)).create_table("db.t", schema, primary_keys=pks,
                                               options={**options, "file-index.bitmap.columns": "c",
                                                        "metadata.stats-mode": "full"})
    t.write_arrow(pa.table({"k": [1, 2], "c": [10, 20], "s": ["a", "b"]}, schema=schema))
    with t.update_schema() as u:
        u.remove_option("file-index.bitmap.columns")
        u.drop_column("c")
        u.add_column("c", "BIGINT")
        u.set_option("file-index.bitmap.columns", "c")
    t = ps.Table.open(t.path)
    t.write_arrow(pa.table({"k": [3], "s": ["c"], "c": [10]}, schema=t.arrow_schema()))
    rows = sorted(t.to_arrow().to_pylist(), key=lambda r: r["k"])
    assert rows == [{"k": 1, "s": "a", "c": None}, {"k": 2, "s": "b", "c": None}, {"k": 3, "s": "c", "c": 10}]
    keys = lambda flt: sorted(r["k"] for r in t.to_arrow(filter=flt).to_pylist())  # noqa: E731
    assert keys([("c", "is null")]) == [1, 2]
    assert keys([("c", "=", 10)]) == [3] and keys([("c", "=", 20)]) == [] and keys([("c", "<", 15)]) == [3]
    assert keys([("c", "is not null")]) == [3] and keys([("c", "not in", [20])]) == [3]


def test_time_travel_reads_each_snapshot_with_its_schema_also_by_java(tmp_path):
    """A snapshot committed before a rename, a widening and a drop is read with its own
    schema (old names, old types, the dropped column), filters by those names prune by the
    file's statistics; the latest read has the new names. Java answers the same."""
    java = get_oracle()
    schema = pa.schema([("k", pa.int32()), ("a", pa.int32()), ("f", pa.float32()), ("d", pa.decimal128(5, 2)),
                        ("x", pa.string())])
    t = ps.Catalog(str(tmp_path)).create_table("db.t", schema)
    first = t.write_arrow(pa.table({"k": [1, 2], "a": [5, -3], "f": [0.1, 2.0], "d": [D("1.25"), D("-0.50")],
                                    "x": ["p", "q"]}, schema=schema))
    with t.update_schema() as u:
        u.rename_column("a", "b")
        u.update_column("b", "BIGINT")
        u.update_column("f", "DOUBLE")
        u.update_column("d", "DECIMAL(9, 4)")
        u.drop_column("x")
    t = ps.Table.open(t.path)
    second = t.write_arrow(pa.table({"k": [3], "b": [2**40], "f": [0.1], "d": [D("1.2501")]}, schema=t.arrow_schema()))
    old = t.to_arrow(snapshot_id=first)
    assert old.column_names == ["k", "a", "f", "d", "x"] and old.schema.field("a").type == pa.int32()
    assert sorted(r["k"] for r in t.to_arrow(snapshot_id=first, filter=[("x", "=", "q")]).to_pylist()) == [2]
    keys = lambda flt: sorted(r["k"] for r in t.to_arrow(filter=flt).to_pylist())  # noqa: E731
    assert keys([("b", ">", 2**35)]) == [3] and keys([("b", "=", 5)]) == [1]
    assert keys([("f", "=", 0.1)]) == [3] and keys([("f", "<", 0.1)]) == [] and keys([("f", ">", 0.1)]) == [1, 2]
    assert keys([("d", "=", D("1.25"))]) == [1] and keys([("d", ">", D("1.25"))]) == [3]
    with java.batch() as b:
        java_old, java_new = b.read(t.path, snapshot_id=first), b.read(t.path, snapshot_id=second)
        java_big = b.read(t.path, where=("b", ">", 2**35))
    assert sorted(java_old.result, key=lambda r: r["k"]) == old.to_pylist()
    assert sorted(java_new.result, key=lambda r: r["k"]) == sorted(t.to_arrow().to_pylist(), key=lambda r: r["k"])
    assert 3 in {r["k"] for r in java_big.result}


MERGE_OPTION_CHANGES = [  # (options, changed option, first rows, second rows, rows after the change)
    # an aggregate function changed after the rows were written: sum 5 + 3 -> max
    ({"merge-engine": "aggregation", "fields.v.aggregate-function": "sum"},
     ("fields.v.aggregate-function", "max"), [{"k": 1, "v": 5}], [{"k": 1, "v": 3}], [{"k": 1, "v": 5}]),
    ({"merge-engine": "aggregation"}, ("fields.default-aggregate-function", "sum"),
     [{"k": 1, "v": 5}], [{"k": 1, "v": 3}], [{"k": 1, "v": 8}]),
    # deletes ignored from now on, also for the -D rows already written
    ({}, ("ignore-delete", "true"), [{"k": 1, "v": 5}], [{"k": 1, "v": 5, "_ROW_KIND": "-D"}], [{"k": 1, "v": 5}]),
    # versions of a key ordered by a sequence field from now on
    ({}, ("sequence.field", "v"), [{"k": 1, "v": 5}], [{"k": 1, "v": 3}], [{"k": 1, "v": 5}]),
]


def test_time_travel_merges_with_the_tables_current_options_as_java(tmp_path):
    """Java's time travel (AbstractFileStoreTable.tryTimeTravel) reads a snapshot with that
    snapshot's fields and keys but the table's current options: a merge option changed since
    (aggregate functions, ignore-delete, sequence.field) applies to old snapshots too, so a
    read of the latest snapshot by its id (or a tag of it) answers as the plain read does.
    (Ours read with the snapshot's own options: the same snapshot gave two answers.)"""
    java = get_oracle()
    paths = [str(tmp_path / f"t{i}") for i in range(len(MERGE_OPTION_CHANGES))]
    with java.batch() as b:
        for path, (options, change, first, second, _) in zip(paths, MERGE_OPTION_CHANGES):
            b.create_table(path, [{"name": "k", "type": "INT NOT NULL"}, {"name": "v", "type": "INT"}],
                           primary_keys=["k"], options={"bucket": "1", **options})
            b.write(path, first)
            b.write(path, second)
            b.alter(path, [{"kind": "set-option", "key": change[0], "value": change[1]}])
    latest = {path: ps.Table.open(path).latest_snapshot().id for path in paths}
    with java.batch() as b:
        reads = [(b.read(path), b.read(path, snapshot_id=latest[path])) for path in paths]
    for path, (java_latest, java_travel), case in zip(paths, reads, MERGE_OPTION_CHANGES):
        want = case[-1]
        assert java_latest.result == java_travel.result == want, case
        t = ps.Table.open(path)
        assert t.to_arrow().to_pylist() == want, case
        assert t.to_arrow(snapshot_id=latest[path]).to_pylist() == want, case
        t.create_tag("now")
        assert t.to_arrow(tag="now").to_pylist() == want, case


def test_time_travel_takes_field_options_by_field_id(tmp_path):
    """A field option of the current schema (`fields.<name>.aggregate-function`) applies to
    the same field id in an older snapshot's schema, where the column had another name
    (Java refuses such a read: its current options name a column the old schema lacks)."""
    schema = pa.schema([pa.field("k", pa.int32(), False), ("a", pa.int32())])
    t = ps.Catalog(str(tmp_path)).create_table("db.t", schema, primary_keys=["k"],
                                               options={"bucket": "1", "merge-engine": "aggregation",
                                                        "fields.a.aggregate-function": "sum"})
    t.write_arrow(pa.table({"k": [1], "a": [5]}, schema=schema))
    old = t.write_arrow(pa.table({"k": [1], "a": [3]}, schema=schema))
    with t.update_schema() as u:
        u.rename_column("a", "b")
        u.add_column("c", pa.int32())
    t = ps.Table.open(t.path)
    with t.update_schema() as u:
        u.set_option("fields.b.aggregate-function", "max")
    t = ps.Table.open(t.path)
    assert t.to_arrow().to_pylist() == [{"k": 1, "b": 5, "c": None}]
    assert t.to_arrow(snapshot_id=old).to_pylist() == [{"k": 1, "a": 5}]
