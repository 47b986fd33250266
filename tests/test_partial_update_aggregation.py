"""partial-update with aggregate functions on sequence-group fields (merge_engine.py).

Java 1.4.2's `PartialUpdateMergeFunction` calls a group field's aggregator once per row whose
group sequence is not all null: `agg(acc, x)` when the row's group sequence is >= the row so
far, else `aggReversed(acc, x)` = `agg(x, acc)`, and `retract(acc, x)` for -U/-D rows (newer
or older). Unit cases pin each function's fold by hand; a property test compares the
vectorized engine (write-time batch merge, merge-on-read, and the deletion-vector lookup
merge) with the row-at-a-time model in tests/merge_model.py. The differential test against
Java is in tests/test_aggregation_differential.py (partial-update "groups-agg" configurations
and fixed cases); collections in groups are compared with Java here (with and without
deletion vectors).

PU_AGG_EXAMPLES sets the examples of the property test (hunt longer locally).
"""
from __future__ import annotations

import os
import random

import numpy as np
import pyarrow as pa
import pytest
from hypothesis import HealthCheck, Phase, given, settings
from hypothesis import strategies as st

import paimon_streaming as ps
from paimon_streaming.errors import InvalidOptionError, PaimonError
from paimon_streaming.keyvalue import SEQUENCE_NUMBER, VALUE_KIND
from paimon_streaming.merge_engine import engine_for, merge_sorted, sort_for_merge
import test_collection_aggregates as coll  # its collection data and canonical form
from merge_model import ModelError
from merge_model import Table as ModelTable
from test_merge_engines import (ARROW, KINDS, MODEL_TYPES, PU, batch_table, kv_table, merge, model_result,
                                ours_staged, random_batches, row_st, schema_for)

EXAMPLES = int(os.environ.get("PU_AGG_EXAMPLES", "60"))
# shrinking a failure of these wide rows takes minutes: PU_AGG_SHRINK=1 to shrink
PHASES = [Phase.explicit, Phase.reuse, Phase.generate] + ([Phase.shrink] if os.environ.get("PU_AGG_SHRINK") else [])
ALL = ("+I", "-U", "+U", "-D")
ADDS = ("+I", "+U")
I64 = pa.int64()


def fields(**types):
    return pa.schema([pa.field("k", I64, False)] + [pa.field(n, t) for n, t in types.items()])


def pu(rows, kinds=None, schema=None, **options):
    """Merge `rows` (in order) of one partial-update table with options `options` (dots as __)."""
    o = {**PU, **{k.replace("__", "."): v for k, v in options.items()}}
    return merge(o, rows, kinds, fields=schema)


# ---- unit cases: each function's fold ------------------------------------------------------------
G = {"fields.g.sequence-group": "v"}
INT_ROWS = fields(g=I64, v=I64)


def one(func, rows, kinds=None, schema=INT_ROWS, **extra):
    o = {**G, "fields.v.aggregate-function": func, **extra}
    out = merge({**PU, **o}, rows, kinds, fields=schema)
    assert len(out) == 1
    return out[0]


def r(g, v, k=1):
    return {"k": k, "g": g, "v": v}


def test_sum_folds_every_row_whatever_its_sequence():
    assert one("sum", [r(2, 1), r(1, 2), r(3, 4), r(None, 100)]) == ("+I", {"k": 1, "g": 3, "v": 7})
    # retractions subtract, newer or older; a null accumulator retracts to the negation
    assert one("sum", [r(2, 5), r(1, 2), r(3, 1)], ["+I", "-U", "-D"]) == ("+I", {"k": 1, "g": 3, "v": 2})
    assert one("sum", [r(1, None), r(2, 3)], ["+I", "-U"]) == ("+I", {"k": 1, "g": 2, "v": -3})


def test_a_first_retraction_starts_from_its_own_values():
    # Java's initRow: the row starts as the -D, then the -D retracts itself (5 - 5), and the
    # key saw no insert until the +I
    assert one("sum", [r(1, 5), r(2, 3)], ["-D", "+I"]) == ("+I", {"k": 1, "g": 2, "v": 3})
    assert one("sum", [r(1, 5), r(2, 3)], ["-D", "-D"]) == ("-D", {"k": 1, "g": 2, "v": -3})
    # with ignore-retract the retraction keeps the accumulator: the -D's value stays
    assert one("sum", [r(1, 5), r(2, 3)], ["-D", "+I"], **{"fields.v.ignore-retract": "true"}) == \
        ("+I", {"k": 1, "g": 2, "v": 8})


def test_product_min_max_bool():
    assert one("product", [r(2, 3), r(1, -2), r(3, 5)]) == ("+I", {"k": 1, "g": 3, "v": -30})
    assert one("product", [r(2, 12), r(1, 5)], ["+I", "-U"]) == ("+I", {"k": 1, "g": 2, "v": 2})  # 12 / 5
    assert one("min", [r(2, 3), r(1, -2), r(3, None)]) == ("+I", {"k": 1, "g": 3, "v": -2})
    assert one("max", [r(2, 3), r(1, 7), r(3, None)]) == ("+I", {"k": 1, "g": 3, "v": 7})
    bools = fields(g=I64, v=pa.bool_())
    assert one("bool_and", [r(2, True), r(1, False)], schema=bools)[1]["v"] is False
    assert one("bool_or", [r(2, False), r(1, True), r(3, None)], schema=bools)[1]["v"] is True


def test_last_value_ignores_older_rows_and_any_retraction_nulls_it():
    assert one("last_value", [r(2, 3), r(1, 7)]) == ("+I", {"k": 1, "g": 2, "v": 3})
    assert one("last_value", [r(2, 3), r(3, None)]) == ("+I", {"k": 1, "g": 3, "v": None})
    # unlike a field without a function, an OLDER retraction nulls it too
    assert one("last_value", [r(2, 3), r(1, 9)], ["+I", "-U"]) == ("+I", {"k": 1, "g": 2, "v": None})
    assert pu([r(2, 3), r(1, 9)], ["+I", "-U"], INT_ROWS, **{"fields.g.sequence-group": "v"}) == \
        [("+I", {"k": 1, "g": 2, "v": 3})]


def test_last_non_null_value_older_rows_only_fill_a_null():
    assert one("last_non_null_value", [r(2, 3), r(1, 7)]) == ("+I", {"k": 1, "g": 2, "v": 3})
    assert one("last_non_null_value", [r(2, None), r(1, 7), r(0, 8)]) == ("+I", {"k": 1, "g": 2, "v": 7})
    assert one("last_non_null_value", [r(2, 3), r(3, None)]) == ("+I", {"k": 1, "g": 3, "v": 3})
    # a retraction with a value nulls it (newer or older), one without keeps it
    assert one("last_non_null_value", [r(2, 3), r(1, 7)], ["+I", "-U"]) == ("+I", {"k": 1, "g": 2, "v": None})
    assert one("last_non_null_value", [r(2, 3), r(1, None)], ["+I", "-U"]) == ("+I", {"k": 1, "g": 2, "v": 3})
    assert one("last_non_null_value", [r(2, 3), r(4, 1), r(1, 6)], ["+I", "-U", "+I"]) == \
        ("+I", {"k": 1, "g": 4, "v": 6})


def test_first_value_takes_an_older_row_once_initialized():
    # newer rows keep the first value; older rows replace it (aggReversed = agg(x, acc))
    assert one("first_value", [r(2, 10), r(3, 30)]) == ("+I", {"k": 1, "g": 3, "v": 10})
    assert one("first_value", [r(2, 10), r(1, 20), r(3, 30), r(0, None)]) == ("+I", {"k": 1, "g": 3, "v": None})
    assert one("first_value", [r(2, 10), r(1, 20), r(3, 30)]) == ("+I", {"k": 1, "g": 3, "v": 20})
    # rows whose group sequence is null do not count
    assert one("first_value", [r(None, 1), r(2, 10)]) == ("+I", {"k": 1, "g": 2, "v": 10})


def test_first_non_null_value_state_machine():
    # before initialization an older row writes its value; a newer non-null value initializes
    assert one("first_non_null_value", [r(2, None), r(1, 3), r(3, 4)]) == ("+I", {"k": 1, "g": 3, "v": 4})
    # once initialized an older row writes, even a null
    assert one("first_non_null_value", [r(2, None), r(1, 3), r(3, 4), r(0, None)]) == \
        ("+I", {"k": 1, "g": 3, "v": None})
    # an older row onto a non-null accumulator initializes without writing
    assert one("first_non_null_value", [r(2, None), r(1, 3), r(0, 7), r(3, 9)]) == \
        ("+I", {"k": 1, "g": 3, "v": 3})
    assert one("first_not_null_value", [r(2, None), r(3, 5)]) == ("+I", {"k": 1, "g": 3, "v": 5})


def test_listagg_prepends_older_rows():
    strs = fields(g=I64, v=pa.string())
    out = one("listagg", [r(2, "x"), r(1, "y"), r(3, "z"), r(0, "w"), r(4, ""), r(5, None)], schema=strs)
    assert out[1]["v"] == "w,y,x,z"
    assert one("listagg", [r(2, ""), r(1, "")], schema=strs)[1]["v"] == ""
    assert one("listagg", [r(2, None), r(1, None)], schema=strs)[1]["v"] is None
    assert one("listagg", [r(2, "a"), r(1, "b")], schema=strs,
               **{"fields.v.list-agg-delimiter": "|"})[1]["v"] == "b|a"


def test_default_function_and_several_groups():
    schema = fields(g1=I64, a=I64, b=I64, g2=I64, c=I64, n=I64)
    o = {**PU, "fields.g1.sequence-group": "a,b", "fields.g2.sequence-group": "c,n",
         "fields.default-aggregate-function": "sum", "fields.b.aggregate-function": "max"}
    rows = [{"k": 1, "g1": 1, "a": 1, "b": 5, "g2": None, "c": 100, "n": 1},
            {"k": 1, "g1": None, "a": 2, "b": 9, "g2": 1, "c": 10, "n": 2},
            {"k": 1, "g1": 0, "a": 4, "b": 7, "g2": 2, "c": 20, "n": None}]
    assert merge(o, rows, fields=schema) == [("+I", {"k": 1, "g1": 1, "a": 5, "b": 7, "g2": 2, "c": 30, "n": 2})]


def test_remove_record_on_sequence_group_restarts_the_aggregate():
    o = {**PU, **G, "fields.v.aggregate-function": "sum", "partial-update.remove-record-on-sequence-group": "g"}
    rows = [r(1, 1), r(2, 2), r(3, 100), r(4, 5)]
    assert merge(o, rows, ["+I", "+I", "-D", "+I"], fields=INT_ROWS) == [("+I", {"k": 1, "g": 4, "v": 105})]
    assert merge(o, rows[:3], ["+I", "+I", "-D"], fields=INT_ROWS) == [("-D", {"k": 1, "g": 3, "v": 100})]
    # an older -D does not reset, it retracts
    rows = [r(5, 1), r(2, 2), r(3, 100)]
    assert merge(o, rows, ["+I", "+I", "-D"], fields=INT_ROWS) == [("+I", {"k": 1, "g": 5, "v": -97})]


def test_first_value_stays_initialized_across_a_reset():
    o = {**PU, **G, "fields.v.aggregate-function": "first_value", "fields.v.ignore-retract": "true",
         "partial-update.remove-record-on-sequence-group": "g"}
    out = merge(o, [r(1, 1), r(2, 2), r(3, 30), r(4, 5), r(0, 7)], ["+I", "+I", "-D", "+I", "+I"], fields=INT_ROWS)
    # after the reset to 30 the +I at 4 is newer: initialized already, keeps 30; the older 0 writes
    assert out == [("+I", {"k": 1, "g": 4, "v": 7})]
    out = merge(o, [r(1, 1), r(3, 30), r(4, 5)], ["+I", "-D", "+I"], fields=INT_ROWS)
    assert out == [("+I", {"k": 1, "g": 4, "v": 30})]


def test_non_retractable_functions_refuse_retractions():
    for func in ("min", "max", "first_value", "first_non_null_value"):
        with pytest.raises(PaimonError, match=f"'{func}' of field 'v'.*ignore-retract"):
            one(func, [r(2, 3), r(1, 7)], ["+I", "-U"])
        assert one(func, [r(2, 3), r(1, 7)], ["+I", "-U"], **{"fields.v.ignore-retract": "true"})[1]["v"] == 3
    # a retraction whose group sequence is null does not reach the function
    assert one("max", [r(2, 3), r(None, 7)], ["+I", "-U"]) == ("+I", {"k": 1, "g": 2, "v": 3})


def test_lone_rows_pass_through_unless_merged_every_key():
    o = {**PU, **G, "fields.v.aggregate-function": "sum"}
    engine = engine_for(schema_for(o, INT_ROWS))
    t = kv_table([r(1, 5)], ["-D"], schema=INT_ROWS)
    assert merge_sorted(t, ["k"], engine).column("v").to_pylist() == [5]
    every = engine.merge_every_key(t, ["k"])  # Java's lookup merge: initRow, then retract itself
    assert every.column("v").to_pylist() == [0] and every.column(VALUE_KIND).to_pylist() == [KINDS["-D"]]
    assert engine.lookup_merges_every_key


def test_options_refused_at_create(tmp_path):
    cat = ps.Catalog(str(tmp_path))
    schema = pa.schema([pa.field("k", I64, False), pa.field("g", I64), pa.field("v", I64),
                        pa.field("l", pa.list_(I64)), pa.field("d", pa.decimal128(10, 2)), pa.field("s", pa.string()),
                        pa.field("m", pa.map_(pa.string(), I64))])
    cases = [
        ({"fields.g.sequence-group": "m", "fields.m.aggregate-function": "merge_map"},
         "'merge_map' on field 'm'.*'fields.m.ignore-retract' = 'true'"),
        ({"fields.g.sequence-group": "l", "fields.l.aggregate-function": "nested_update"}, "'nested_update'"),
        ({"fields.g.sequence-group": "l", "fields.l.aggregate-function": "collect", "fields.l.count-limit": "2"},
         "count-limit"),
        ({"fields.g.sequence-group": "v", "fields.v.aggregate-function": "nope"}, "unknown aggregate function 'nope'"),
        ({"fields.g.sequence-group": "v", "fields.v.aggregate-function": "theta_sketch"}, "not supported"),
        ({"fields.g.sequence-group": "s", "fields.s.aggregate-function": "sum"}, "cannot be used on field 's'"),
        ({"fields.g.sequence-group": "s", "fields.s.aggregate-function": "listagg", "fields.s.distinct": "maybe"},
         "'fields.s.distinct'"),
        ({"fields.g.sequence-group": "v", "fields.s.aggregate-function": "sum"}, "needs a sequence group"),
        ({"fields.g.sequence-group": "v", "fields.default-aggregate-function": "sum"}, "needs a sequence group"),
    ]
    for i, (o, match) in enumerate(cases):
        with pytest.raises(InvalidOptionError, match=match):
            cat.create_table(f"db.t{i}", schema, primary_keys=["k"], options={**PU, "bucket": "1", **o})


# ---- the model -------------------------------------------------------------------------------------
# the wide schema of test_merge_engines: k, a INT, b BIGINT, s STRING, d DECIMAL(10,2), x DOUBLE,
# f BOOLEAN, t BOOLEAN, g1 INT, g2 INT, g3 BIGINT
GROUPS = {"fields.g1.sequence-group": "a,b,x,f", "fields.g2,g3.sequence-group": "s,d,t"}
CONFIGS = {
    "retractable": ({**PU, **GROUPS, "fields.a.aggregate-function": "sum", "fields.b.aggregate-function": "last_value",
                     "fields.x.aggregate-function": "sum", "fields.d.aggregate-function": "sum",
                     "fields.s.aggregate-function": "last_non_null_value",
                     "fields.f.aggregate-function": "last_non_null_value"}, ALL),
    "ignore-retract": ({**PU, **GROUPS, "fields.a.aggregate-function": "first_value",
                        "fields.a.ignore-retract": "true", "fields.b.aggregate-function": "max",
                        "fields.b.ignore-retract": "true", "fields.x.aggregate-function": "min",
                        "fields.x.ignore-retract": "true", "fields.s.aggregate-function": "listagg",
                        "fields.s.ignore-retract": "true", "fields.d.aggregate-function": "first_non_null_value",
                        "fields.d.ignore-retract": "true", "fields.f.aggregate-function": "bool_and",
                        "fields.f.ignore-retract": "true", "fields.t.aggregate-function": "bool_or",
                        "fields.t.ignore-retract": "true"}, ALL),
    "adds-only": ({**PU, **GROUPS, "fields.a.aggregate-function": "first_value",
                   "fields.b.aggregate-function": "product", "fields.x.aggregate-function": "max",
                   "fields.s.aggregate-function": "listagg", "fields.s.list-agg-delimiter": "|",
                   "fields.d.aggregate-function": "first_non_null_value", "fields.f.aggregate-function": "bool_or",
                   "fields.t.aggregate-function": "last_non_null_value"}, ADDS),
    "default-function": ({**PU, "fields.g1.sequence-group": "a,b,s,d,x,f,t",
                          "fields.default-aggregate-function": "last_non_null_value",
                          "fields.a.aggregate-function": "sum", "fields.s.aggregate-function": "last_value"}, ALL),
    "remove-on-group": ({**PU, **GROUPS, "partial-update.remove-record-on-sequence-group": "g2",
                         "fields.a.aggregate-function": "sum", "fields.b.aggregate-function": "first_value",
                         "fields.b.ignore-retract": "true", "fields.x.aggregate-function": "last_non_null_value",
                         "fields.s.aggregate-function": "listagg", "fields.s.ignore-retract": "true",
                         "fields.d.aggregate-function": "sum", "fields.t.aggregate-function": "first_non_null_value",
                         "fields.t.ignore-retract": "true"}, ALL),
    "errors": ({**PU, **GROUPS, "fields.a.aggregate-function": "max", "fields.s.aggregate-function": "first_value",
                "partial-update.remove-record-on-sequence-group": "g1"}, ALL),
}


def model_lookup(options, batches):
    """The model of a deletion-vector table: each batch merged (lone rows as they are), then
    per key the old row and the batch's rows folded in one pass, every key merged (Java's
    lookup compaction)."""
    m = ModelTable({"bucket": "1", **options}, MODEL_TYPES, ["k"])
    live: dict = {}
    try:
        for rows in batches:
            m.files = []
            m.write(rows)
            fresh = m.files[0]
            for key in {rec[2]["k"] for rec in fresh}:
                group = ([live[key]] if key in live else []) + [rec for rec in fresh if rec[2]["k"] == key]
                out = m.merge_function(sorted(group, key=m.sort_key))
                if out is None or out[0] in ("-U", "-D"):
                    live.pop(key, None)
                else:
                    live[key] = out
    except ModelError:
        return "error"
    return sorted((values for _, _, values in live.values()), key=lambda r: r["k"])


def ours_lookup(options, batches):
    """Our engine as the deletion-vector compaction runs it: `merge_every_key` over the old
    row and the batch's merged rows."""
    engine = engine_for(schema_for(options))
    live = None
    seq = 0
    try:
        for rows in batches:
            t = kv_table([v for _, v in rows], [k for k, _ in rows], list(range(seq, seq + len(rows))), ARROW)
            seq += len(rows)
            batch = merge_sorted(sort_for_merge(t, ["k"], engine.sequence_fields), ["k"], engine)
            both = batch if live is None else pa.concat_tables([live, batch])
            merged = engine.merge_every_key(sort_for_merge(both, ["k"], engine.sequence_fields), ["k"])
            kinds = np.array(merged.column(VALUE_KIND).to_pylist())
            live = merged.filter(pa.array((kinds != 1) & (kinds != 3)))
    except PaimonError:
        return "error"
    return sorted(live.drop_columns([SEQUENCE_NUMBER, VALUE_KIND]).to_pylist(), key=lambda r: r["k"])


@pytest.mark.parametrize("config", sorted(CONFIGS))
@settings(max_examples=EXAMPLES, deadline=None, suppress_health_check=list(HealthCheck), phases=PHASES)
@given(data=st.data())
def test_engine_matches_model(config, data):
    options, kinds = CONFIGS[config]
    batches = data.draw(st.lists(st.lists(st.tuples(st.sampled_from(kinds), row_st), min_size=1, max_size=8),
                                 min_size=1, max_size=4))
    assert ours_staged(options, batches) == model_result(options, batches)
    assert ours_lookup(options, batches) == model_lookup(options, batches)


@pytest.mark.parametrize("config", sorted(CONFIGS))
def test_tables_match_model(tmp_path, config):
    """Through Table.write_arrow / to_arrow (merge-on-read). Deletion-vector tables are
    compared with Java in tests/test_aggregation_differential.py: whether Java rewrites a lone
    level-0 file through the merge function or upgrades it as it is depends on the file layout
    (LookupMergeTreeCompactRewriter.upgradeStrategy), which this model does not track."""
    options, kinds = CONFIGS[config]
    rng = random.Random(config)
    for i in range(4):
        batches = random_batches(rng, kinds, n_batches=rng.randint(1, 4))
        cat = ps.Catalog(str(tmp_path / f"wh{i}"))
        t = cat.create_table("db.t", ARROW, primary_keys=["k"], options={"bucket": "1", **options})
        try:
            for rows in batches:
                t.write_arrow(batch_table(rows), row_kind_column="op")
            got = sorted(t.to_arrow().to_pylist(), key=lambda r: r["k"])
        except PaimonError:
            got = "error"
        assert got == model_result(options, batches), batches


@pytest.mark.parametrize("config", ["retractable", "remove-on-group", "adds-only"])
def test_projection_reads_what_the_full_read_gives(tmp_path, config):
    """A projected read still merges with the group's sequence fields (read_columns)."""
    options, kinds = CONFIGS[config]
    rng = random.Random(config)
    for i in range(3):
        batches = random_batches(rng, kinds, n_batches=rng.randint(1, 4))
        t = ps.Catalog(str(tmp_path / f"wh{i}")).create_table("db.t", ARROW, primary_keys=["k"],
                                                             options={"bucket": "1", **options})
        try:
            for rows in batches:
                t.write_arrow(batch_table(rows), row_kind_column="op")
            full = t.to_arrow().to_pylist()
        except PaimonError:
            continue
        for cols in (["k", "a"], ["s", "k"], ["d", "x", "k"]):
            got = t.to_arrow(columns=cols).to_pylist()
            assert sorted(got, key=lambda r: r["k"]) == sorted(({c: r[c] for c in cols} for r in full),
                                                               key=lambda r: r["k"])


# ---- collections in sequence groups ------------------------------------------------------------------
COLL_ARROW = pa.schema([pa.field("k", pa.int32(), False), pa.field("g", pa.int32())] + list(coll.ARROW)[1:])
COLL_JAVA = [coll.JAVA_FIELDS[0], {"name": "g", "type": "INT"}] + coll.JAVA_FIELDS[1:]
COLL_TYPES = {"k": "INT", "g": "INT", **{c: t for c, t in coll.MODEL_TYPES.items() if c != "k"}}
COLL_GROUP = {**PU, "fields.g.sequence-group": "c,cd,m,it,iu,pu",
              **{k: v for k, v in coll.FUNCTIONS.items() if k != "merge-engine"},
              "fields.m.ignore-retract": "true", "fields.it.ignore-retract": "true", "fields.iu.ignore-retract": "true"}
COLL_CONFIGS = {
    "adds": (COLL_GROUP, ADDS),
    "retractions": ({**COLL_GROUP, "fields.pu.ignore-retract": "true"}, ALL),
    "collect-ignore-retract": ({**COLL_GROUP, "fields.pu.ignore-retract": "true", "fields.c.ignore-retract": "true",
                                "fields.cd.ignore-retract": "true"}, ALL),
}


def coll_row(g, c=None, **values):
    return {"k": 0, "g": g, "c": c, "cd": None, "m": None, "it": None, "iu": None, "pu": None, **values}


def coll_merge(options, rows, kinds=None):
    kinds = kinds or ["+I"] * len(rows)
    return ours_staged(options, [list(zip(kinds, rows))], COLL_ARROW, coll._canonical)


def test_collect_appends_older_rows_unless_ignore_retract():
    rows = [coll_row(2, [1]), coll_row(1, [2]), coll_row(3, [3]), coll_row(None, [9])]
    assert coll_merge(COLL_GROUP, rows)[0]["c"] == (1, 2, 3)   # FieldCollectAgg.aggReversed appends
    ignoring = {**COLL_GROUP, "fields.c.ignore-retract": "true"}
    assert coll_merge(ignoring, rows)[0]["c"] == (2, 1, 3)     # the wrapper's aggReversed: agg(x, acc)
    # merge_map: an older row's value loses to the accumulator's
    maps = [coll_row(2, m=[("a", 1)]), coll_row(1, m=[("a", 2), ("b", 2)]), coll_row(3, m=[("b", 3)])]
    assert dict(coll_merge(COLL_GROUP, maps)[0]["m"]) == {"a": 1, "b": 3}
    # collect retracts, newer or older (nested_partial_update cannot: Java's retract throws)
    rows = [coll_row(2, [1, 2, 1]), coll_row(1, [1])]
    assert coll_merge(COLL_GROUP, rows, ["+I", "-U"]) == "error"
    assert coll_merge({**COLL_GROUP, "fields.pu.ignore-retract": "true"}, rows, ["+I", "-U"])[0]["c"] == (2, 1)


def coll_values():
    # nested arrays without null rows or a nested key twice (as test_collection_aggregates gives
    # Java): Paimon 1.4 keeps a first such array as it is, its main line and we normalize it
    # and distinct collections without a value twice: Java keeps a row started from a
    # retraction as it is (initRow), we deduplicate it (as for aggregation.remove-record-on-delete)
    def once(values):
        return None if values is None else list({repr(v): v for v in values}.values())
    return st.tuples(st.none() | st.integers(0, 3), coll.values(for_java=True)).map(
        lambda t: {**t[1], "cd": once(t[1]["cd"]), "g": t[0]})


@pytest.mark.parametrize("config", sorted(COLL_CONFIGS))
@settings(max_examples=max(EXAMPLES // 2, 10), deadline=None, suppress_health_check=list(HealthCheck), phases=PHASES)
@given(data=st.data())
def test_collections_match_model(config, data):
    options, kinds = COLL_CONFIGS[config]
    batches = data.draw(st.lists(st.lists(st.tuples(st.sampled_from(kinds), coll_values()), min_size=1, max_size=6),
                                 min_size=1, max_size=4))
    ours = ours_staged(options, batches, COLL_ARROW, coll._canonical)
    assert ours == model_result(options, batches, COLL_TYPES, coll._canonical)


def test_collections_java_reads_ours_and_we_read_javas(tmp_path):
    """The same batches written by Java and by us, with deletion vectors and without: all four
    reads agree (set-like results compared as sets), and equal the model without them."""
    rng = random.Random(20261130)
    cat = ps.Catalog(str(tmp_path / "ours"))
    cases = {}
    for name, (options, kinds) in COLL_CONFIGS.items():
        for dv in (False, True):
            case = f"{name.replace('-', '_')}_{'dv' if dv else 'mor'}"
            opts = {"bucket": "2", **options, **({"deletion-vectors.enabled": "true"} if dv else {})}
            batches = coll.random_batches(rng, kinds, for_java=True)
            for rows in batches:
                for _, v in rows:
                    v["g"] = None if rng.random() < 0.2 else rng.randint(0, 3)
            t = cat.create_table(f"db.{case}", COLL_ARROW, primary_keys=["k"], options=opts)
            for rows in batches:
                t.write_arrow(batch_table(rows, COLL_ARROW), row_kind_column="op")
            cases[case] = (options, opts, batches, t)
    java_base = tmp_path / "java" / "db.db"
    pending = coll.java_writes_and_reads(cases, COLL_JAVA, java_base)
    for case, (options, opts, batches, t) in cases.items():
        java_of_java, java_of_ours = (coll._canonical(p.result, unordered=True) for p in pending[case])
        ours_of_ours = coll._canonical(t.to_arrow().to_pylist(), unordered=True)
        ours_of_java = coll._canonical(ps.Table.open(str(java_base / case)).to_arrow().to_pylist(), unordered=True)
        assert java_of_ours == java_of_java, case
        assert ours_of_ours == java_of_java, case
        assert ours_of_java == java_of_java, case
        if "deletion-vectors.enabled" not in opts:
            model = model_result(options, batches, COLL_TYPES, lambda rows: coll._canonical(rows, unordered=True))
            assert model == java_of_java, case
