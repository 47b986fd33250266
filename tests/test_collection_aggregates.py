"""Aggregate functions over collections (paimon_streaming/collection_aggregates.py): collect,
merge_map, nested_update and nested_partial_update.

Unit cases of each function's semantics; a property test of the vectorized functions (batch
merge at write, then merge-on-read across files) against the row-at-a-time model in
tests/merge_model.py; tables written and read through the Table API (deletion vectors or
merge-on-read); and Apache Paimon's Java library reading what we write, and we what it writes
(one JVM for all of them).
"""
from __future__ import annotations

import math
import random

import pyarrow as pa
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import paimon_streaming as ps
from paimon_streaming.errors import InvalidOptionError
from paimon_streaming.merge_engine import engine_for
from paimon_streaming.schema import TableSchema
from merge_model import Table as ModelTable
from test_merge_engines import batch_table as shared_batch_table
from test_merge_engines import model_result as shared_model_result
from test_merge_engines import ours_staged as staged

ITEM = pa.struct([("id", pa.int32()), ("q", pa.int32()), ("n", pa.string())])
ARROW = pa.schema([pa.field("k", pa.int32(), False), pa.field("c", pa.list_(pa.int32())),
                   pa.field("cd", pa.list_(pa.float64())), pa.field("m", pa.map_(pa.string(), pa.int32())),
                   pa.field("it", pa.list_(ITEM)), pa.field("iu", pa.list_(ITEM)), pa.field("pu", pa.list_(ITEM))])
ITEMS = {"type": "ARRAY", "element": {"type": "ROW", "fields": [
    {"id": 0, "name": "id", "type": "INT"}, {"id": 1, "name": "q", "type": "INT"},
    {"id": 2, "name": "n", "type": "STRING"}]}}
JAVA_FIELDS = [{"name": "k", "type": "INT NOT NULL"}, {"name": "c", "type": {"type": "ARRAY", "element": "INT"}},
               {"name": "cd", "type": {"type": "ARRAY", "element": "DOUBLE"}},
               {"name": "m", "type": {"type": "MAP", "key": "STRING", "value": "INT"}},
               {"name": "it", "type": ITEMS}, {"name": "iu", "type": ITEMS}, {"name": "pu", "type": ITEMS}]
MODEL_TYPES = {"k": "INT", "c": "ARRAY", "cd": "ARRAY", "m": "MAP", "it": "ARRAY", "iu": "ARRAY", "pu": "ARRAY"}
FUNCTIONS = {"merge-engine": "aggregation", "fields.c.aggregate-function": "collect",
             "fields.cd.aggregate-function": "collect", "fields.cd.distinct": "true",
             "fields.m.aggregate-function": "merge_map",
             "fields.it.aggregate-function": "nested_update", "fields.it.nested-key": "id",
             "fields.iu.aggregate-function": "nested_update",
             "fields.pu.aggregate-function": "nested_partial_update", "fields.pu.nested-key": "id,n"}
RETRACTING = {**FUNCTIONS, "fields.pu.ignore-retract": "true"}
CONFIGS = {  # name -> (options, row kinds)
    "adds": (FUNCTIONS, ("+I", "+U")),
    "retractions": (RETRACTING, ("+I", "-U", "+U", "-D")),
    "remove-on-delete": ({**FUNCTIONS, "aggregation.remove-record-on-delete": "true"}, ("+I", "+U", "-D")),
}


# ---- data ---------------------------------------------------------------------------------------
def item(unique_ids: bool):
    row = st.fixed_dictionaries({"id": st.sampled_from([0, 1, 2]), "q": st.one_of(st.none(), st.integers(-1, 2)),
                                 "n": st.sampled_from([None, "x", "y"])})
    return st.lists(row, max_size=3, unique_by=(lambda r: r["id"]) if unique_ids else None)


def values(for_java: bool = False):
    """One row's values. For Java, nested arrays hold no null element and no nested key twice:
    Paimon 1.4 keeps a key's first array as it is (its main line deduplicates it, as we do)."""
    maybe = (lambda s: st.one_of(st.none(), s))
    nested = item(for_java) if for_java else st.lists(st.one_of(st.none(), item(False).map(lambda x: x[0] if x else
                                                                                             None)), max_size=3)
    return st.fixed_dictionaries({
        "k": st.integers(0, 3),
        "c": maybe(st.lists(st.one_of(st.none(), st.integers(0, 3)), max_size=4)),
        "cd": maybe(st.lists(st.sampled_from([0.0, -0.0, math.nan, 1.5, None]), max_size=4)),
        "m": maybe(st.dictionaries(st.sampled_from(["a", "b", "c"]), st.one_of(st.none(), st.integers(0, 9)),
                                   max_size=3).map(lambda d: list(d.items()))),
        "it": maybe(nested), "iu": maybe(nested), "pu": maybe(nested),
    })


def random_batches(rng: random.Random, kinds, for_java=False):
    """Like `batches_of`, from a seeded generator (for the table and Java tests)."""
    def maybe(make):
        return None if rng.random() < 0.2 else make()

    def items():
        ids = rng.sample([0, 1, 2], rng.randint(0, 3)) if for_java else [rng.randint(0, 2) for _ in range(3)]
        out = [{"id": i, "q": maybe(lambda: rng.randint(-1, 2)), "n": rng.choice([None, "x", "y"])} for i in ids]
        return out if for_java else [maybe(lambda: r) for r in out]

    def one():
        return {"k": rng.randint(0, 3), "c": maybe(lambda: [maybe(lambda: rng.randint(0, 3)) for _ in
                                                            range(rng.randint(0, 4))]),
                "cd": maybe(lambda: [rng.choice([0.0, -0.0, math.nan, 1.5, None]) for _ in range(rng.randint(0, 4))]),
                "m": maybe(lambda: list({rng.choice("abc"): maybe(lambda: rng.randint(0, 9))
                                         for _ in range(rng.randint(0, 3))}.items())),
                "it": maybe(items), "iu": maybe(items), "pu": maybe(items)}

    return [[(rng.choice(kinds), one()) for _ in range(rng.randint(1, 6))] for _ in range(rng.randint(1, 4))]


def batches_of(kinds, for_java=False):
    return st.lists(st.lists(st.tuples(st.sampled_from(kinds), values(for_java)), min_size=1, max_size=6),
                    min_size=1, max_size=4)


def batch_table(rows) -> pa.Table:
    return shared_batch_table(rows, ARROW)


# ---- ours and the model ---------------------------------------------------------------------------
def model_result(options, batches):
    return shared_model_result(options, batches, MODEL_TYPES, _canonical)


def ours_staged(options, batches):
    """The engine as a table runs it: one merge per batch, then one across the batches' files."""
    return staged(options, batches, ARROW, _canonical)


def _canonical(rows, unordered=False):
    """Rows by key; floats as text (NaN equal to NaN, -0.0 kept); set-like results sorted
    when `unordered` (Java iterates hash sets and maps)."""
    out = []
    for r in sorted(rows, key=lambda r: r["k"]):
        r = {c: _norm(v) for c, v in r.items()}
        if unordered:
            r = {c: (tuple(sorted(v, key=repr)) if c in ("cd", "m", "it", "pu") and v is not None else v)
                 for c, v in r.items()}
        out.append(r)
    return out


def _norm(v):
    if isinstance(v, float):
        return repr(v)
    if isinstance(v, dict):
        return tuple(sorted((k, _norm(x)) for k, x in v.items()))
    if isinstance(v, (list, tuple)):
        return tuple(_norm(x) for x in v)
    return v


# ---- unit cases --------------------------------------------------------------------------------------
def merge(options, rows, kinds=None):
    kinds = kinds or ["+I"] * len(rows)
    return ours_staged(options, [list(zip(kinds, rows))])


def row(k=0, c=None, cd=None, m=None, it=None, iu=None, pu=None):
    return {"k": k, "c": c, "cd": cd, "m": m, "it": it, "iu": iu, "pu": pu}


def test_collect_concatenates_and_distinct_is_a_set():
    out = merge(FUNCTIONS, [row(c=[1, None, 1], cd=[0.0, math.nan]), row(c=[2], cd=[-0.0, math.nan, 0.0]),
                            row(c=None, cd=None)])
    assert out[0]["c"] == (1, None, 1, 2)
    assert out[0]["cd"] == ("0.0", "nan", "-0.0")  # Java's Double.equals: one NaN, -0.0 != 0.0


def test_collect_retraction_removes_the_oldest_equal_elements():
    out = merge(RETRACTING, [row(c=[1, 2, 1]), row(c=[1, 3]), row(c=[1, 1, 1, 4]), row(c=[1])],
                ["+I", "-U", "+U", "+I"])
    # [1, 2, 1] minus one 1 (3 is absent) = [2, 1]; then + [1, 1, 1, 4] + [1]
    assert out[0]["c"] == (2, 1, 1, 1, 1, 4, 1)


def test_merge_map_later_values_win_and_retractions_remove_keys():
    out = merge(RETRACTING, [row(m=[("a", 1), ("b", 2)]), row(m=[("b", 3), ("c", None)]), row(m=[("a", 0)]),
                             row(m=[("a", 5)])], ["+I", "+U", "-U", "+U"])
    assert out[0]["m"] == (("b", 3), ("c", None), ("a", 5))


def test_nested_update_by_key_and_without():
    a, b, a2 = {"id": 1, "q": 1, "n": "x"}, {"id": 2, "q": 2, "n": "y"}, {"id": 1, "q": 9, "n": None}
    out = merge(RETRACTING, [row(it=[a, b], iu=[a, b, a]), row(it=[a2, None], iu=[None, a2]), row(it=[b], iu=[a])],
                ["+I", "+I", "-D"])
    assert out[0]["it"] == _norm([a2])
    assert out[0]["iu"] == _norm([b, a2])


def test_nested_partial_update_keeps_the_latest_non_null_field():
    out = merge(FUNCTIONS, [row(pu=[{"id": 1, "q": 1, "n": "x"}, {"id": 2, "q": None, "n": "x"}]),
                            row(pu=[{"id": 1, "q": None, "n": "x"}, {"id": 2, "q": 7, "n": "x"}])])
    assert out[0]["pu"] == _norm([{"id": 1, "q": 1, "n": "x"}, {"id": 2, "q": 7, "n": "x"}])


def test_results_are_null_only_without_any_value():
    out = merge(RETRACTING, [row(c=[1]), row(c=[1], m=[("a", 1)])], ["-U", "+I"])
    assert out[0]["c"] == (1,) and out[0]["m"] == (("a", 1),)
    out = merge(RETRACTING, [row(c=[1], it=[]), row(c=[1])], ["+I", "-U"])
    assert out[0]["c"] == () and out[0]["it"] == () and out[0]["m"] is None


def test_nested_partial_update_refuses_retractions():
    assert merge(FUNCTIONS, [row(pu=[{"id": 1, "q": 1, "n": None}]), row(pu=[])], ["+I", "-U"]) == "error"


@pytest.mark.parametrize("options, message", [
    ({"fields.c.aggregate-function": "merge_map"}, "needs a MAP column"),
    ({"fields.m.aggregate-function": "collect"}, "needs an ARRAY column"),
    ({"fields.c.aggregate-function": "nested_update"}, r"ARRAY<ROW"),
    ({"fields.pu.nested-key": ""}, "needs 'fields.pu.nested-key'"),
    ({"fields.it.nested-key": "id,zz"}, r"\['zz'\] not in"),
    ({"fields.it.count-limit": "3"}, "count-limit"),
    ({"fields.it.nested-sequence-field": "q"}, "nested-sequence-field"),
    ({"fields.cd.distinct": "yes"}, "expected true or false"),
])
def test_option_errors(options, message):
    with pytest.raises(InvalidOptionError, match=message):
        engine_for(TableSchema.create(ARROW, ["k"], [], {"bucket": "1", **FUNCTIONS, **options}))


def test_collections_of_collections_are_refused_where_compared():
    fields = pa.schema([pa.field("k", pa.int32(), False), pa.field("a", pa.list_(pa.list_(pa.int32())))])
    opts = {"bucket": "1", "merge-engine": "aggregation", "fields.a.aggregate-function": "collect"}
    engine_for(TableSchema.create(fields, ["k"], [], opts))  # concatenating is fine
    with pytest.raises(InvalidOptionError, match="distinct elements"):
        engine_for(TableSchema.create(fields, ["k"], [], {**opts, "fields.a.distinct": "true"}))


@pytest.mark.parametrize("func, element, value", [
    ("collect", pa.list_(pa.int32()), [1]),
    ("nested_update", pa.struct([("id", pa.int32()), ("tags", pa.list_(pa.string()))]), {"id": 1, "tags": ["x"]}),
])
def test_retracting_elements_holding_collections_is_refused(tmp_path, func, element, value):
    """`collect` of arrays and `nested_update` (without nested-key) of rows holding arrays
    concatenate as Java does, but cannot retract: a write merging the retraction fails naming the field and commits nothing;
    a lone retraction merged on read fails alike. Adds alone merge."""
    from paimon_streaming.errors import UnsupportedOperationError
    schema = pa.schema([pa.field("k", pa.int32(), False), pa.field("a", pa.list_(element)),
                        pa.field("_op", pa.string())])
    t = ps.Catalog(str(tmp_path)).create_table(
        "db.t", schema.remove(2), primary_keys=["k"],
        options={"bucket": "1", "merge-engine": "aggregation", "fields.a.aggregate-function": func})

    def write(*kinds):
        t.write_arrow(pa.table({"k": [1] * len(kinds), "a": [[value]] * len(kinds), "_op": list(kinds)}, schema),
                      row_kind_column="_op")
    write("+I", "+I")  # (nested_update failed here with Arrow's NotImplemented, comparing rows with arrays)
    assert t.to_arrow().column("a").to_pylist() == [[value, value]]
    from java_oracle import get_oracle
    assert [r["a"] for r in get_oracle().read(t.path)] == [[value, value]]
    with pytest.raises(UnsupportedOperationError, match=f"field 'a': retracting .*'{func}'"):
        write("+I", "-U")
    assert t.latest_snapshot().id == 1
    write("-U")
    with pytest.raises(UnsupportedOperationError, match=f"field 'a': retracting .*'{func}'"):
        t.to_arrow()


# ---- against the model -----------------------------------------------------------------------------------
@pytest.mark.parametrize("config", sorted(CONFIGS))
@settings(max_examples=120, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(data=st.data())
def test_functions_match_the_model(config, data):
    options, kinds = CONFIGS[config]
    batches = data.draw(batches_of(kinds))
    assert ours_staged(options, batches) == model_result(options, batches)


@pytest.mark.parametrize("config", ["adds", "retractions"])
def test_tables_match_the_model(tmp_path, config):
    """Through Table.write_arrow / to_arrow (merge-on-read); insert-only tables compacted
    between some batches (a compaction to the top level drops lone retractions, as Java's,
    which the model does not stage; deletion-vector tables are checked against Java below)."""
    options, kinds = CONFIGS[config]
    opts = {"bucket": "2", **options}
    rng = random.Random(7)
    for i in range(4):
        batches = random_batches(rng, kinds)
        t = ps.Catalog(str(tmp_path / f"wh{i}")).create_table("db.t", ARROW, primary_keys=["k"], options=opts)
        for rows in batches:
            t.write_arrow(batch_table(rows), row_kind_column="op")
            if config == "adds" and rng.random() < 0.4:
                t.compact(full=rng.random() < 0.5)
        assert _canonical(t.to_arrow().to_pylist()) == model_result(options, batches)


# ---- Apache Paimon (Java) ------------------------------------------------------------------------------------
def _java_rows(rows):
    return [dict(v, _ROW_KIND=k) for k, v in rows]


def java_writes_and_reads(cases: dict, java_fields: list[dict], java_base) -> dict:
    """In one JVM: for each case (name -> (options, table options, batches, our table)) Java
    writes the batches into a table of its own under `java_base` and reads it and ours; name ->
    (Java's read of its table, Java's read of ours), pending results."""
    try:
        from java_oracle import get_oracle
    except ImportError:  # pragma: no cover
        from tests.java_oracle import get_oracle
    with get_oracle().batch() as b:
        pending = {}
        for case, (_, opts, batches, t) in cases.items():
            jpath = java_base / case
            b.create_table(jpath, java_fields, ["k"], [], opts)
            for rows in batches:
                b.write(jpath, _java_rows(rows))
            pending[case] = (b.read(jpath), b.read(t.path))
    return pending


def test_java_reads_ours_and_we_read_javas(tmp_path):
    """The same batches written by Java and by us, with deletion vectors and without: Java's
    read of both tables and ours of both agree (set-like results compared as sets), and equal
    the model."""
    rng = random.Random(20261130)
    cat = ps.Catalog(str(tmp_path / "ours"))
    cases = {}
    for name, (options, kinds) in CONFIGS.items():
        for dv in (False, True):
            case = f"{name.replace('-', '_')}_{'dv' if dv else 'mor'}"
            opts = {"bucket": "2", **options, **({"deletion-vectors.enabled": "true"} if dv else {})}
            batches = random_batches(rng, kinds, for_java=True)
            while model_result(options, batches) == "error":
                batches = random_batches(rng, kinds, for_java=True)
            t = cat.create_table(f"db.{case}", ARROW, primary_keys=["k"], options=opts)
            for rows in batches:
                t.write_arrow(batch_table(rows), row_kind_column="op")
                if name == "adds" and rng.random() < 0.3:
                    t.compact()
            cases[case] = (options, opts, batches, t)
    java_base = tmp_path / "java" / "db.db"
    pending = java_writes_and_reads(cases, JAVA_FIELDS, java_base)
    for case, (options, opts, batches, t) in cases.items():
        java_of_java, java_of_ours = (_canonical(p.result, unordered=True) for p in pending[case])
        # with deletion vectors each batch merges into the looked-up rows, which the model
        # does not stage (a key's lone row is aggregated there, passed through here)
        dv = "deletion-vectors.enabled" in opts
        expected = java_of_java if dv else _canonical(_model_rows(options, batches), unordered=True)
        ours_of_ours = _canonical(t.to_arrow().to_pylist(), unordered=True)
        ours_of_java = _canonical(ps.Table.open(str(java_base / case)).to_arrow().to_pylist(), unordered=True)
        if dv:
            # a distinct `collect` written with duplicates stays so until a lookup compaction
            # takes its file with a level-0 file (Java's LookupMergeFunction merges it then, as
            # ours does); which compaction does that depends on file sizes, not the same here
            # and in Java's files: compared as sets
            java_of_java, java_of_ours, ours_of_ours, ours_of_java, expected = (
                [dict(r, cd=None if r["cd"] is None else tuple(sorted(set(r["cd"]), key=repr))) for r in rows]
                for rows in (java_of_java, java_of_ours, ours_of_ours, ours_of_java, expected))
        assert java_of_java == expected, case
        assert java_of_ours == expected, case
        assert ours_of_ours == expected, case
        assert ours_of_java == expected, case


def _model_rows(options, batches):
    m = ModelTable({"bucket": "1", **options}, MODEL_TYPES, ["k"])
    for rows in batches:
        m.write(rows)
    return m.read()


def test_lone_retraction_into_a_deletion_vector_table_as_java(tmp_path):
    """A -U for a key never inserted, into an aggregation table with deletion vectors: Java's
    lookup merge runs it through the functions (sum retracts to -5) and writes the row; we
    dropped it until session 45."""
    try:
        from java_oracle import get_oracle
    except ImportError:  # pragma: no cover
        from tests.java_oracle import get_oracle
    schema = pa.schema([pa.field("k", pa.int32(), False), ("v", pa.int64()), ("l", pa.int64())])
    opts = {"bucket": "1", "deletion-vectors.enabled": "true", "merge-engine": "aggregation",
            "fields.v.aggregate-function": "sum", "fields.l.aggregate-function": "last_non_null_value"}
    batches = [[("-U", {"k": 1, "v": 5, "l": 3}), ("+I", {"k": 2, "v": 7, "l": 4})], [("-U", {"k": 2, "v": 1, "l": 9})]]
    t = ps.Catalog(str(tmp_path / "ours")).create_table("db.t", schema, primary_keys=["k"], options=opts)
    for rows in batches:
        t.write_arrow(pa.Table.from_pylist([dict(v, op=k) for k, v in rows]), row_kind_column="op")
    java = tmp_path / "java" / "db.db" / "t"
    with get_oracle().batch() as b:
        b.create_table(java, [{"name": "k", "type": "INT NOT NULL"}, {"name": "v", "type": "BIGINT"},
                              {"name": "l", "type": "BIGINT"}], ["k"], [], opts)
        for rows in batches:
            b.write(java, _java_rows(rows))
        java_of_java, java_of_ours = b.read(java), b.read(t.path)
    expected = [{"k": 1, "v": -5, "l": None}, {"k": 2, "v": 6, "l": None}]
    assert sorted(java_of_java.result, key=lambda r: r["k"]) == expected
    assert sorted(java_of_ours.result, key=lambda r: r["k"]) == expected
    assert sorted(t.to_arrow().to_pylist(), key=lambda r: r["k"]) == expected
