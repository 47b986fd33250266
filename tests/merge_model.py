"""A row-at-a-time model of Apache Paimon's merge engines (Java 1.4 semantics), for tests.

Written from the behaviour of Paimon's `DeduplicateMergeFunction`, `FirstRowMergeFunction`,
`PartialUpdateMergeFunction`, `AggregateMergeFunction` + field aggregators and
`ReducerMergeFunctionWrapper` (a key with one record is passed through unmerged), as a plain
Python loop so that it is easy to check by eye; the interop tests check it against Java.

A record is ``(kind, seq, values)`` with kind one of "+I", "-U", "+U", "-D" and values a dict.
"""
from __future__ import annotations

import math
import struct
from decimal import Decimal
from typing import Any, Sequence

import numpy as np

RETRACT = ("-U", "-D")


class ModelError(Exception):
    """The engine refuses the input (Java throws)."""


def _null_first(values: Sequence[Any]) -> tuple:
    return tuple((v is not None, v) for v in values)


def _wrap(value, type_name: str):
    bits = {"TINYINT": 8, "SMALLINT": 16, "INT": 32, "BIGINT": 64}.get(type_name)
    if bits is None:
        return value
    value &= (1 << bits) - 1
    return value - (1 << bits) if value >= 1 << (bits - 1) else value


class Table:
    """Model of one primary-key table: engine options, column types, and files of records."""

    def __init__(self, options: dict[str, str], types: dict[str, str], primary_keys: Sequence[str]):
        self.options = {k: str(v) for k, v in options.items()}
        self.types = types  # name -> Paimon type root (INT, BIGINT, DECIMAL(p,s) as "DECIMAL:p:s", ...)
        self.names = list(types)
        self.pk = list(primary_keys)
        self.engine = self.options.get("merge-engine", "deduplicate")
        o = self.options
        self.ignore_delete = any(o.get(k, "false").lower() == "true" for k in
                                 ("ignore-delete", "first-row.ignore-delete", "deduplicate.ignore-delete",
                                  "partial-update.ignore-delete"))
        self.ignore_ub = o.get("ignore-update-before", "false").lower() == "true"
        self.seq_fields = [s.strip() for s in o.get("sequence.field", "").split(",") if s.strip()]
        self.files: list[list[tuple]] = []
        self.next_seq = 0

    # ---- write / read ------------------------------------------------------------------
    def sort_key(self, rec):
        kind, seq, values = rec
        return (tuple(values[k] for k in self.pk), _null_first([values[s] for s in self.seq_fields]), seq)

    def write(self, rows: Sequence[tuple[str, dict]]) -> None:
        """One batch of (kind, values): filtered as Java's RowKindFilter, merged per key, one file."""
        recs = []
        for kind, values in rows:
            if self.ignore_delete and kind in RETRACT:
                continue
            if self.ignore_ub and kind == "-U":
                continue
            if self.engine == "first-row" and kind in RETRACT:
                raise ModelError("first-row refuses -U/-D")
            recs.append((kind, self.next_seq, dict(values)))
            self.next_seq += 1
        self.files.append(self.merge(recs))

    def merge(self, recs: list[tuple]) -> list[tuple]:
        recs = sorted(recs, key=self.sort_key)
        out = []
        i = 0
        while i < len(recs):
            j = i
            while j < len(recs) and self.sort_key(recs[j])[0] == self.sort_key(recs[i])[0]:
                j += 1
            group = recs[i:j]
            result = group[0] if len(group) == 1 else self.merge_function(group)
            if result is not None:
                out.append(result)
            i = j
        return out

    def read(self) -> list[dict]:
        merged = self.merge([r for f in self.files for r in f])
        return [values for kind, seq, values in merged if kind not in RETRACT]

    # ---- merge functions ---------------------------------------------------------------
    def merge_function(self, group: list[tuple]):
        return {"deduplicate": self._dedup, "first-row": self._first_row,
                "partial-update": self._partial_update, "aggregation": self._aggregate}[self.engine](group)

    def _dedup(self, group):
        latest = None
        for kv in group:
            if self.ignore_delete and kv[0] in RETRACT:
                continue
            latest = kv
        return latest

    def _first_row(self, group):
        first = None
        for kv in group:
            if kv[0] in RETRACT:
                if self.ignore_delete:
                    continue
                raise ModelError("first-row refuses -U/-D")
            if first is None:
                first = kv
        return first

    # partial-update -------------------------------------------------------------------
    def _groups(self):
        groups = []
        for k, v in self.options.items():
            if k.startswith("fields.") and k.endswith(".sequence-group"):
                seq = [s.strip() for s in k[len("fields."):-len(".sequence-group")].split(",")]
                groups.append((seq, [x.strip() for x in v.split(",")]))
        return groups

    def _partial_update(self, group):
        o = self.options
        groups = self._groups()
        group_of = {}
        for seq, vals in groups:
            for f in seq + vals:
                group_of[f] = (seq, vals)
        remove_on_delete = o.get("partial-update.remove-record-on-delete", "false").lower() == "true"
        remove_set = {s.strip() for s in o.get("partial-update.remove-record-on-sequence-group", "").split(",")
                      if s.strip()}
        protected = {f for seq, vals in groups for f in vals} - {s for seq, _ in groups for s in seq}
        default = o.get("fields.default-aggregate-function")
        aggs = {}  # sequence-group fields with an aggregate function (Java's FieldAggregator)
        for f in protected:
            func = o.get(f"fields.{f}.aggregate-function") or default
            if func is not None and f not in self.pk:
                aggs[f] = self._aggregator(f)
        row = {n: None for n in self.names}
        meet_insert = filled = False
        current_delete = False
        latest_seq = 0

        def empty(values, seq):
            return all(values[s] is None for s in seq)

        def newer(values, seq):
            return _null_first([values[s] for s in seq]) >= _null_first([row[s] for s in seq])

        for kind, seq_no, values in group:
            current_delete = False
            if kind in RETRACT:
                if not filled:
                    row = dict(values)
                    filled = True
                if self.ignore_delete:
                    continue
                latest_seq = seq_no
                if groups:
                    updated = set()
                    reset = False
                    for f in self.names:
                        g = group_of.get(f)
                        if g is None or empty(values, g[0]):
                            continue
                        if newer(values, g[0]):
                            if f in g[0]:
                                for s in g[0]:
                                    if s in updated:
                                        continue
                                    if kind == "-D" and s in remove_set:
                                        current_delete = True
                                        row = dict(values)
                                        reset = True
                                        break
                                    row[s] = values[s]
                                    updated.add(s)
                                if reset:
                                    break
                            elif f in aggs:
                                row[f] = aggs[f].retract(row[f], values[f])
                            else:
                                row[f] = None
                        elif f in aggs:  # an older retraction retracts too
                            row[f] = aggs[f].retract(row[f], values[f])
                    continue
                if remove_on_delete:
                    if kind == "-D":
                        current_delete = True
                        row = dict(values)
                    continue
                raise ModelError("partial-update refuses -U/-D")
            latest_seq = seq_no
            if not groups:
                for f in self.names:
                    if values[f] is not None:
                        row[f] = values[f]
            else:
                for f in self.names:
                    g = group_of.get(f)
                    if g is None:
                        if values[f] is not None:
                            row[f] = values[f]
                        continue
                    if empty(values, g[0]):
                        continue
                    if newer(values, g[0]):
                        if f in g[0]:
                            for s in g[0]:
                                row[s] = values[s]
                        elif f in aggs:
                            row[f] = aggs[f].agg(row[f], values[f])
                        else:
                            row[f] = values[f]
                    elif f in aggs:  # aggReversed(acc, x) = agg(x, acc), but collect's own appends
                        a = aggs[f]
                        keeps_order = a.func == "collect" and not a.ignore_retract
                        row[f] = a.agg(row[f], values[f]) if keeps_order else a.agg(values[f], row[f])
            meet_insert = True
            filled = True
        kind = "-D" if current_delete or not meet_insert else "+I"
        return (kind, latest_seq, row)

    # aggregation ------------------------------------------------------------------------
    def _aggregate(self, group):
        o = self.options
        remove_on_delete = o.get("aggregation.remove-record-on-delete", "false").lower() == "true"
        aggs = {n: self._aggregator(n) for n in self.names}
        row = {n: None for n in self.names}
        latest = None
        current_delete = False
        for kv in group:
            kind, seq_no, values = kv
            latest = kv
            current_delete = remove_on_delete and kind == "-D"
            if current_delete:  # collections as if aggregated into nothing (see collection_aggregates.py)
                row = {n: aggs[n]._agg_collection(None, v) if aggs[n].func in COLLECTIONS else v
                       for n, v in values.items()}
                continue
            for n in self.names:
                if kind in RETRACT:
                    row[n] = aggs[n].retract(row[n], values[n])
                else:
                    row[n] = aggs[n].agg(row[n], values[n])
        return ("-D" if current_delete else "+I", latest[1], row)

    def _aggregator(self, name: str) -> "Agg":
        o = self.options
        if name in self.seq_fields:
            func = "last_value"
        elif name in self.pk:
            func = "primary_key"
        else:
            func = (o.get(f"fields.{name}.aggregate-function") or o.get("fields.default-aggregate-function")
                    or "last_non_null_value")
        agg = Agg(func, self.types[name], o.get(f"fields.{name}.list-agg-delimiter", ","))
        agg.distinct = o.get(f"fields.{name}.distinct", "false").lower() == "true"
        agg.nested_key = [k.strip() for k in o.get(f"fields.{name}.nested-key", "").split(",") if k.strip()]
        agg.ignore_retract = o.get(f"fields.{name}.ignore-retract", "false").lower() == "true"
        return agg


class Agg:
    """One field aggregator of Paimon's aggregation engine."""

    def __init__(self, func: str, type_name: str, delimiter: str = ","):
        self.func = "first_non_null_value" if func == "first_not_null_value" else func
        self.type = type_name
        self.delimiter = delimiter
        self.initialized = False
        self.ignore_retract = False
        self.distinct = False
        self.nested_key: list[str] = []

    def _arith(self, a, b, op):
        t = self.type
        if t.startswith("DECIMAL"):
            _, p, s = t.split(":")
            r = a + b if op == "+" else a - b if op == "-" else a * b
            r = r.quantize(Decimal(1).scaleb(-int(s)))
            return None if abs(r) >= Decimal(10) ** (int(p) - int(s)) else r
        if t == "FLOAT":
            a32, b32 = np.float32(a), np.float32(b)
            return float(a32 + b32 if op == "+" else a32 - b32 if op == "-" else a32 * b32)
        if t == "DOUBLE":
            return a + b if op == "+" else a - b if op == "-" else a * b
        return _wrap(a + b if op == "+" else a - b if op == "-" else a * b, t)

    def agg(self, acc, x):
        f = self.func
        if f in COLLECTIONS:
            return self._agg_collection(acc, x)
        if f in ("primary_key", "last_value"):
            return x
        if f == "last_non_null_value":
            return acc if x is None else x
        if f == "first_value":
            if not self.initialized:
                self.initialized = True
                return x
            return acc
        if f == "first_non_null_value":
            if not self.initialized and x is not None:
                self.initialized = True
                return x
            return acc
        if acc is None or x is None:
            return x if acc is None else acc
        if f == "sum":
            return self._arith(acc, x, "+")
        if f == "product":
            return self._arith(acc, x, "*")
        if f == "min":
            return acc if _lt(acc, x) else x
        if f == "max":
            return x if _lt(acc, x) else acc
        if f == "bool_and":
            return acc and x
        if f == "bool_or":
            return acc or x
        if f == "listagg":
            if x == "":
                return acc
            if acc == "":
                return x
            return acc + self.delimiter + x
        raise AssertionError(f)

    def retract(self, acc, x):
        if self.ignore_retract:
            return acc
        f = self.func
        if f == "primary_key":
            return x
        if f == "last_value":
            return None
        if f == "last_non_null_value":
            return None if x is not None else acc
        if f == "sum":
            if acc is None or x is None:
                if acc is not None or x is None:
                    return acc
                return -x if self.type in ("FLOAT", "DOUBLE") else self._arith(x * 0, x, "-")  # Java's negative()
            return self._arith(acc, x, "-")
        if f in ("collect", "merge_map", "nested_update", "product") and (acc is None or x is None):
            return acc
        if f == "product":  # Java divides; integers truncate toward zero
            if self.type in ("TINYINT", "SMALLINT", "INT", "BIGINT"):
                if x == 0:
                    raise ModelError("product cannot retract 0")
                q = abs(acc) // abs(x)
                return _wrap(-q if (acc < 0) != (x < 0) else q, self.type)
            with np.errstate(divide="ignore", invalid="ignore"):
                return float(np.float64(acc) / np.float64(x)) if self.type == "DOUBLE" else \
                    float(np.float32(acc) / np.float32(x))
        if f == "collect":  # each retracted element removes the oldest equal one
            left = list(acc)
            for e in x:
                at = [i for i, a in enumerate(left) if _java_equal(a, e)]
                if at:
                    del left[at[0]]
            return left
        if f == "merge_map":
            gone = {_java_key(k) for k, _ in x}
            return [(k, v) for k, v in acc if _java_key(k) not in gone]
        if f == "nested_update":
            gone = [e for e in x if e is not None]
            if self.nested_key:
                keys = {self._nested(e) for e in gone}
                return [r for r in acc if self._nested(r) not in keys]
            return [r for r in acc if not any(_java_equal(r, e) for e in gone)]
        raise ModelError(f"{f} cannot retract")

    # collections: results keep a value's first position since it was last absent
    def _nested(self, row: dict):
        return tuple(_java_key(row[k]) for k in self.nested_key)

    def _agg_collection(self, acc, x):
        f = self.func
        if f == "collect":
            if acc is None and x is None:
                return None
            if not self.distinct:
                return list(x if acc is None else acc if x is None else acc + x)
            out: list = []
            for e in (acc or []) + (x or []):
                if not any(_java_equal(e, o) for o in out):
                    out.append(e)
            return out
        if f == "merge_map":
            if acc is None or x is None:
                return x if acc is None else acc
            merged: dict = {}
            for k, v in list(acc) + list(x):
                old = merged.get(_java_key(k))
                merged[_java_key(k)] = (old[0] if old else k, v)
            return list(merged.values())
        if x is None:
            return acc
        rows = [r for r in (acc or []) + x if r is not None]
        if f == "nested_update" and not self.nested_key:
            return rows
        by_key: dict = {}
        for r in rows:
            key = self._nested(r)
            if f == "nested_update" or key not in by_key:
                by_key[key] = dict(r)
            else:
                by_key[key].update({n: v for n, v in r.items() if v is not None})
        return list(by_key.values())


COLLECTIONS = ("collect", "merge_map", "nested_update", "nested_partial_update")


def _java_key(v):
    """A hashable stand-in with Java's `equals`: floats by bits (one NaN, -0.0 != 0.0)."""
    if isinstance(v, float):
        return ("f", struct.pack(">d", math.nan if math.isnan(v) else v))
    if isinstance(v, dict):
        return tuple((k, _java_key(x)) for k, x in v.items())
    if isinstance(v, (list, tuple)):
        return tuple(_java_key(x) for x in v)
    return v


def _java_equal(a, b) -> bool:
    return _java_key(a) == _java_key(b)


def _lt(a, b) -> bool:
    if isinstance(a, float) and isinstance(b, float) and (math.isnan(a) or math.isnan(b)):
        return not math.isnan(a) and math.isnan(b)
    return a < b
