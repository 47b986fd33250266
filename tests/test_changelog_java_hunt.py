"""Changelog producers `input` and `lookup` against Apache Paimon Java 1.4.2: the same random
histories (inserts, updates, deletes, key-only deletes, several changes of a key in one batch,
changes of keys in older levels, deletes of absent keys, compactions) are written by Java into
one table and by us into another, and for every batch the changes it produced are compared:

- Java's incremental read with row kinds (`incremental-between`) of Java's table and of ours,
- our incremental query (`Table.changes_between`) and our streaming scan of both tables.

Changes are compared per key in the order they come (a key's -U precedes its +U; the order
of different keys, which depends on buckets and files, carries no meaning).

Each example costs one JVM request; CHANGELOG_HUNT_EXAMPLES sets how many (4 by default)."""
from __future__ import annotations

import os
import tempfile

import pyarrow as pa
import pytest
from hypothesis import HealthCheck, Phase, assume, given, settings
from hypothesis import strategies as st

import paimon_streaming as ps

try:
    from java_oracle import get_oracle
    from stream_batches import open_stream, snapshot_changes
except ImportError:  # pragma: no cover
    from tests.java_oracle import get_oracle
    from tests.stream_batches import open_stream, snapshot_changes

EXAMPLES = int(os.environ.get("CHANGELOG_HUNT_EXAMPLES", "4"))
# no shrinking: every example is a JVM run (a failure prints its whole history, which is short)
SETTINGS = settings(max_examples=EXAMPLES, deadline=None, derandomize=EXAMPLES <= 5,
                    phases=[Phase.explicit, Phase.reuse, Phase.generate], print_blob=True,
                    suppress_health_check=list(HealthCheck))

# p: the partition (and part of the key) of partitioned cases, a plain nullable column otherwise
SCHEMA = pa.schema([pa.field("k", pa.int64(), False), ("v", pa.string()), ("n", pa.int64()), ("p", pa.string())])
PARTITIONED_SCHEMA = SCHEMA.set(3, pa.field("p", pa.string(), False))


def java_fields(partitioned: bool) -> list[dict]:
    return [{"name": "k", "type": "BIGINT NOT NULL"}, {"name": "v", "type": "STRING"},
            {"name": "n", "type": "BIGINT"}, {"name": "p", "type": "STRING NOT NULL" if partitioned else "STRING"}]
COLUMNS = ["k", "v", "n", "p"]
DV = {"deletion-vectors.enabled": "true"}


# ------------------------------------------------------------------------------ the harness


def _norm(rows: list[dict]) -> list[tuple]:
    """(p, k, v, n, kind) rows, stably sorted by (p, k): per key the order they came in."""
    out = [(r["p"], r["k"], r["v"], r["n"], r["_ROW_KIND"]) for r in rows]
    return sorted(out, key=lambda r: (r[0] or "", r[1]))


def _ours_between(table: ps.Table, a: int, b: int) -> list[tuple]:
    got = table.changes_between(a, b, row_kind_column="_ROW_KIND", columns=COLUMNS)
    return _norm(got.to_pylist())


def _stream_between(path: str, a: int, b: int) -> list[tuple]:
    """What our streaming scan emits for snapshots a+1..b."""
    t = ps.Table.open(path)
    ss = open_stream(t, {"scan.mode": "from-snapshot", "scan.snapshot-id": str(a + 1)})
    return _norm([r for sid in range(a + 1, b + 1) for r in snapshot_changes(ss, sid, COLUMNS, "_ROW_KIND")])


def _as_java(batch: list[tuple]) -> list[dict]:
    return [{"k": k, "v": v, "n": n, "p": p, "_ROW_KIND": kind} for (p, k, v, n, kind) in batch]


def _as_ours(batch: list[tuple]) -> pa.Table:
    return pa.table({"k": pa.array([r[1] for r in batch], pa.int64()),
                     "v": pa.array([r[2] for r in batch], pa.string()),
                     "n": pa.array([r[3] for r in batch], pa.int64()),
                     "p": pa.array([r[0] for r in batch], pa.string()),
                     "_ROW_KIND": pa.array([r[4] for r in batch], pa.string())})


def run_history(options: dict, steps: list[tuple], partitioned: bool = False,
                primary_keys=("k",), java_kinds: dict | None = None) -> dict:
    """Write `steps` by Java and by us into two tables with `options`, and compare each
    step's changes. A step: ("write", [(p, k, v, n, kind), ...]), ("compact", full) (ours on
    our table, Java's full compaction on Java's), ("expire", retain) (ours on both tables).
    `java_kinds` maps row kinds of Java's changelog to the ones we give (a documented
    difference). Returns the per-step changes for further checks."""
    java = get_oracle()
    pks = list(primary_keys) + (["p"] if partitioned and "p" not in primary_keys else [])
    parts = ["p"] if partitioned else []
    with tempfile.TemporaryDirectory() as wh:
        catalog = ps.Catalog(wh)
        ours = catalog.create_table("db.ours", PARTITIONED_SCHEMA if partitioned else SCHEMA, primary_keys=pks, partition_keys=parts or None,
                                    options=options)
        java_path = f"{wh}/db.db/java"
        # Java's turn: the whole history in one JVM, with the latest snapshot after each step
        java_ids = []
        with java.batch() as b:
            b.create_table(java_path, java_fields(partitioned), pks, parts, options)
            for step in steps:
                if step[0] == "write":
                    b.write(java_path, _as_java(step[1]))
                elif step[0] == "compact":
                    b.compact(java_path)
                java_ids.append(b.snapshots(java_path))
        java_ids = [s[-1]["id"] if s else 0 for s in (p.result for p in java_ids)]
        our_ids = []
        for step in steps:
            if step[0] == "write":
                ours.write_arrow(_as_ours(step[1]), row_kind_column="_ROW_KIND")
            elif step[0] == "compact":
                ours.compact(full=step[1])
            our_ids.append(ours.snapshot_manager.latest_id() or 0)
        ranges = []
        prev_j = prev_o = 0
        for step, j, o in zip(steps, java_ids, our_ids):
            ranges.append((step, (prev_j, j), (prev_o, o)))
            prev_j, prev_o = j, o
        # Java reads both tables' changes in one JVM
        reads = []
        with java.batch() as b:
            for step, (ja, jb), (oa, ob) in ranges:
                reads.append((b.read(java_path, with_row_kind=True, incremental_between=(ja, jb)) if jb > ja else None,
                              b.read(ours.path, with_row_kind=True, incremental_between=(oa, ob)) if ob > oa else None))
            final_java = b.read(java_path)
            final_ours = b.read(ours.path)
        java_table = ps.Table.open(java_path)
        # Java's batch scans of a deletion-vector table skip level 0, where `input` changelog
        # files are: its incremental query of such a table is empty (streams see them)
        java_blind = options.get("changelog-producer") == "input" and \
            options.get("deletion-vectors.enabled") == "true"
        out = []
        for (step, (ja, jb), (oa, ob)), (jr, orr) in zip(ranges, reads):
            java_raw = _norm(jr.result) if jr is not None else []
            java_of_ours = _norm(orr.result) if orr is not None else []
            ours_of_ours = _ours_between(ours, oa, ob) if ob > oa else []
            ours_of_java = _ours_between(java_table, ja, jb) if jb > ja else []
            stream_ours = _stream_between(ours.path, oa, ob) if ob > oa else []
            stream_java = _stream_between(java_path, ja, jb) if jb > ja else []
            where = f"step {step!r}: Java snapshots ({ja}, {jb}], ours ({oa}, {ob}]"
            if java_blind:
                assert java_raw == [] and java_of_ours == [], f"Java's query saw level 0, {where}"
                expected = _norm(_as_java(step[1])) if step[0] == "write" else []
                java_raw = expected
            expected = [r[:4] + ((java_kinds or {}).get(r[4], r[4]),) for r in java_raw]
            if not java_blind:
                assert java_of_ours == expected, f"Java's read of our changelog differs from Java's own, {where}"
            assert ours_of_ours == expected, f"our read of our changelog differs from Java's, {where}"
            assert ours_of_java == java_raw, f"our read of Java's changelog differs from Java's, {where}"
            assert stream_ours == expected, f"our stream of our table differs from Java's changelog, {where}"
            assert stream_java == java_raw, f"our stream of Java's table differs from Java's changelog, {where}"
            out.append(expected)
        key = lambda r: (r["p"] or "", r["k"])  # noqa: E731
        assert sorted(final_ours.result, key=key) == sorted(final_java.result, key=key)
        assert sorted(ours.to_arrow().to_pylist(), key=key) == sorted(final_java.result, key=key)
        return {"changes": out}


# ---------------------------------------------------------------------------- strategies

KINDS = ["+I", "+I", "+U", "-U", "-D"]


def _row(keys, values=st.one_of(st.none(), st.sampled_from(["a", "b", "c"])),
         numbers=st.one_of(st.none(), st.integers(-3, 3)), kinds=st.sampled_from(KINDS),
         partitions=st.just("x")):
    return st.tuples(partitions, keys, values, numbers, kinds)


def batches(keys=st.integers(0, 7), kinds=st.sampled_from(KINDS), partitions=st.just("x"), max_size=8,
            numbers=None):
    row = _row(keys, kinds=kinds, partitions=partitions) if numbers is None else \
        _row(keys, kinds=kinds, partitions=partitions, numbers=numbers)
    return st.lists(row, min_size=1, max_size=max_size)


def histories(batch=None, compact=True, min_size=1, max_size=6):
    batch = batch if batch is not None else batches()
    step = st.tuples(st.just("write"), batch)
    if compact:
        step = st.one_of(step, step, step, st.tuples(st.just("compact"), st.booleans()))
    return st.lists(step, min_size=min_size, max_size=max_size)


# ------------------------------------------------------------------------------ the cases

ADDS = st.sampled_from(["+I", "+U"])
CASES = {  # name: (options, row kinds written, partitioned)
    "lookup-dv": ({"bucket": "2", **DV, "changelog-producer": "lookup"}, KINDS, False),
    "lookup-dv-partitioned": ({"bucket": "2", **DV, "changelog-producer": "lookup"}, KINDS, True),
    "input": ({"bucket": "2", "changelog-producer": "input"}, KINDS, False),
    "input-dv-partitioned": ({"bucket": "2", **DV, "changelog-producer": "input"}, KINDS, True),
    "lookup-sequence-field": ({"bucket": "2", **DV, "changelog-producer": "lookup", "sequence.field": "n"},
                              KINDS, False),
    "lookup-row-deduplicate": ({"bucket": "1", **DV, "changelog-producer": "lookup",
                                "changelog-producer.row-deduplicate": "true"}, KINDS, False),
    "lookup-row-deduplicate-ignore": ({"bucket": "1", **DV, "changelog-producer": "lookup",
                                       "changelog-producer.row-deduplicate": "true",
                                       "changelog-producer.row-deduplicate-ignore-fields": "n"}, KINDS, False),
    "lookup-ignore-delete": ({"bucket": "2", **DV, "changelog-producer": "lookup", "ignore-delete": "true"},
                             KINDS, False),
    "partial-update": ({"bucket": "2", **DV, "changelog-producer": "lookup", "merge-engine": "partial-update"},
                       ["+I", "+U"], False),
    "partial-update-remove-on-delete": ({"bucket": "2", **DV, "changelog-producer": "lookup",
                                         "merge-engine": "partial-update",
                                         "partial-update.remove-record-on-delete": "true"}, ["+I", "+U", "-D"], False),
    "partial-update-ignore-delete": ({"bucket": "2", **DV, "changelog-producer": "lookup",
                                      "merge-engine": "partial-update", "ignore-delete": "true"}, KINDS, False),
    # p (NOT NULL) keeps its value on retraction, which would null it (Java and we refuse that)
    "aggregation": ({"bucket": "2", **DV, "changelog-producer": "lookup", "merge-engine": "aggregation",
                     "fields.n.aggregate-function": "sum", "fields.v.aggregate-function": "last_non_null_value"},
                    KINDS, False),
    "aggregation-last-value": ({"bucket": "2", **DV, "changelog-producer": "lookup", "merge-engine": "aggregation",
                                "fields.n.aggregate-function": "last_value", "fields.v.aggregate-function": "max",
                                "fields.v.ignore-retract": "true"}, KINDS, False),
    # n never null here: Java merges a key's only row with a null sequence value into nulls
    # for its group when its lookup compaction rewrites the row's file (a key new to a bucket
    # that has files), and keeps it as written when it only moves the file up (a first
    # commit): we keep it as written, in data and changelog (a documented difference)
    "partial-update-sequence-group": ({"bucket": "2", **DV, "changelog-producer": "lookup",
                                       "merge-engine": "partial-update", "fields.n.sequence-group": "v"},
                                      KINDS, False),
    "aggregation-remove-on-delete": ({"bucket": "2", **DV, "changelog-producer": "lookup",
                                      "merge-engine": "aggregation", "fields.n.aggregate-function": "sum",
                                      "aggregation.remove-record-on-delete": "true"}, ["+I", "+U", "-D"], False),
    "first-row": ({"bucket": "2", "changelog-producer": "lookup", "merge-engine": "first-row"},
                  ["+I", "+U"], False),
    "first-row-ignore-delete": ({"bucket": "2", "changelog-producer": "lookup", "merge-engine": "first-row",
                                 "ignore-delete": "true"}, KINDS, True),
}


@pytest.mark.parametrize("case", sorted(CASES))
@SETTINGS
@given(data=st.data())
def test_random_histories_give_javas_changes(case, data):
    options, kinds, partitioned = CASES[case]
    parts = st.sampled_from(["x", "y"]) if partitioned else st.just("x")
    numbers = st.integers(-3, 3) if "fields.n.sequence-group" in options else None
    steps = data.draw(histories(batches(kinds=st.sampled_from(kinds), partitions=parts, numbers=numbers)), "steps")
    # Java's first-row changelog keeps a new key's written kind (+U stays +U: its
    # FirstRowMergeFunctionWrapper passes the row through); ours says +I, as Java's lookup
    # changelog of the other engines does (LookupChangelogMergeFunctionWrapper)
    java_kinds = {"+U": "+I"} if options.get("merge-engine") == "first-row" else None
    run_history(options, steps, partitioned=partitioned, java_kinds=java_kinds)


# ------------------------------------------- tables Java writes and we only read or stream


def _java_history(java, path: str, options: dict, steps: list[tuple], with_reference: str | None = None):
    """Write `steps` by Java into `path` (and into `with_reference`, the same table without
    expiration); returns the latest snapshot id after each step (of the reference table, whose
    ids are the same) and Java's incremental reads of the reference, per step."""
    ids, reads = [], []
    ref = with_reference or path
    with java.batch() as b:
        for target in dict.fromkeys([path, ref]):
            b.create_table(target, java_fields(False), ["k"], [],
                           options if target == path else _without_expiration(options))
        for step in steps:
            for target in dict.fromkeys([path, ref]):
                if step[0] == "write":
                    b.write(target, _as_java(step[1]))
                else:
                    b.compact(target)
            ids.append(b.snapshots(ref))
    ids = [s.result[-1]["id"] if s.result else 0 for s in ids]
    with java.batch() as b:
        prev = 0
        for i in ids:
            reads.append(b.read(ref, with_row_kind=True, incremental_between=(prev, i)) if i > prev else None)
            prev = i
    return ids, [_norm(r.result) if r is not None else [] for r in reads]


def _without_expiration(options: dict) -> dict:
    return {k: v for k, v in options.items() if not k.startswith(("snapshot.num-retained", "changelog.num-retained"))}


@SETTINGS
@given(steps=histories(batches(), min_size=3, max_size=7))
def test_we_stream_javas_changelog_after_its_snapshots_expired(steps):
    """Java's expiration keeps the changelog of expired snapshots (changelog/changelog-<id>)
    when changelog.num-retained.* exceeds snapshot.num-retained.*: our stream of Java's table
    from its first snapshot still gives every batch's changes, as Java's incremental query of
    the same history without expiration gives them; and our own table, expired under the same
    options, streams the same."""
    assume(any(step[0] == "write" for step in steps))  # compactions of an empty table make no snapshot
    java = get_oracle()
    options = {"bucket": "2", **DV, "changelog-producer": "lookup", "snapshot.num-retained.min": "1",
               "snapshot.num-retained.max": "2", "changelog.num-retained.max": "100"}
    with tempfile.TemporaryDirectory() as wh:
        path, ref = f"{wh}/db.db/java", f"{wh}/db.db/reference"
        ids, expected = _java_history(java, path, options, steps, with_reference=ref)
        assert ps.Table.open(path).snapshot_manager.earliest_id() >= ids[-1] - 1, "Java expired its snapshots"
        ours = ps.Catalog(wh).create_table("db.ours", SCHEMA, primary_keys=["k"], options=options)
        our_ids = []
        for step in steps:
            if step[0] == "write":
                ours.write_arrow(_as_ours(step[1]), row_kind_column="_ROW_KIND")
            else:
                ours.compact(full=step[1])
            ours.expire_snapshots()
            our_ids.append(ours.snapshot_manager.latest_id() or 0)
        prev = prev_ours = 0
        for step, i, o, want in zip(steps, ids, our_ids, expected):
            assert (_stream_between(path, prev, i) if i > prev else []) == want, f"Java's table, {step!r}"
            assert (_stream_between(ours.path, prev_ours, o) if o > prev_ours else []) == want, f"ours, {step!r}"
            prev, prev_ours = i, o


def test_we_stream_javas_lookup_changelog_without_deletion_vectors():
    """Java produces lookup changelog on tables without deletion vectors (we refuse to write
    those): our stream and incremental query of Java's table give what Java's query gives."""
    java = get_oracle()
    steps = [("write", [("x", 1, "a", 1, "+I"), ("x", 2, "a", 2, "+I"), ("x", 3, "a", 3, "+I")]),
             ("write", [("x", 2, "b", 2, "+U"), ("x", 3, None, None, "-D"), ("x", 4, "b", 4, "+I"),
                        ("x", 5, None, None, "-D"), ("x", 1, "c", 1, "+U"), ("x", 1, "d", 1, "+U")]),
             ("compact", True),
             ("write", [("x", 2, "b", 2, "-U"), ("x", 2, "e", 2, "+U"), ("x", 4, None, None, "-D"),
                        ("x", 4, "z", 5, "+I"), ("x", 3, "f", 3, "+I"), ("x", 6, None, None, "-U")])]
    with tempfile.TemporaryDirectory() as wh:
        path = f"{wh}/db.db/java"
        ids, expected = _java_history(java, path, {"bucket": "2", "changelog-producer": "lookup"}, steps)
        assert expected == [
            [("x", 1, "a", 1, "+I"), ("x", 2, "a", 2, "+I"), ("x", 3, "a", 3, "+I")],
            [("x", 1, "a", 1, "-U"), ("x", 1, "d", 1, "+U"), ("x", 2, "a", 2, "-U"), ("x", 2, "b", 2, "+U"),
             ("x", 3, "a", 3, "-D"), ("x", 4, "b", 4, "+I")],
            [],
            [("x", 2, "b", 2, "-U"), ("x", 2, "e", 2, "+U"), ("x", 3, "f", 3, "+I"),
             ("x", 4, "b", 4, "-U"), ("x", 4, "z", 5, "+U")]]
        table = ps.Table.open(path)
        prev = 0
        for i, want in zip(ids, expected):
            if i > prev:
                assert _stream_between(path, prev, i) == want
                assert _ours_between(table, prev, i) == want
            prev = i


# ------------------------------------------------------- documented differences from Java


def test_first_row_changelog_of_a_key_written_as_update_before_is_insert():
    """Java's first-row changelog keeps a new key's written kind (+U); ours says +I, as
    Java's lookup changelog of every other engine does. Our stream of Java's table gives
    Java's +U as it is."""
    steps = [("write", [("x", 1, "a", 1, "+U"), ("x", 2, "b", 2, "+I")]),
             ("write", [("x", 1, "z", 9, "+U"), ("x", 3, "c", 3, "+U")])]
    out = run_history({"bucket": "1", "changelog-producer": "lookup", "merge-engine": "first-row"}, steps,
                      java_kinds={"+U": "+I"})
    assert out["changes"] == [[("x", 1, "a", 1, "+I"), ("x", 2, "b", 2, "+I")], [("x", 3, "c", 3, "+I")]]


def test_input_changelog_of_a_deletion_vector_table():
    """Java's incremental query of a deletion-vector table with changelog-producer input is
    empty (its batch scans skip level 0, where input changelog files are); ours, and our
    streams of both tables, give the input records."""
    steps = [("write", [("x", 1, "a", 1, "+I"), ("x", 1, "b", 1, "+U"), ("x", 2, None, None, "-D")]),
             ("compact", True), ("write", [("x", 1, "b", 1, "-U"), ("x", 1, "c", 1, "+U")])]
    out = run_history({"bucket": "2", **DV, "changelog-producer": "input"}, steps)
    assert out["changes"] == [[("x", 1, "a", 1, "+I"), ("x", 1, "b", 1, "+U"), ("x", 2, None, None, "-D")], [],
                              [("x", 1, "b", 1, "-U"), ("x", 1, "c", 1, "+U")]]


def test_input_changelog_follows_the_sequence_field():
    """A key's input records come in the order they merge (`sequence.field`, nulls first,
    then arrival), as Java's write buffer gives them: applied in turn they end with the row
    the table keeps. Before, a late-arriving older row came last."""
    steps = [("write", [("x", 1, "new", 20, "+I"), ("x", 1, "old", 10, "+I"), ("x", 1, "none", None, "+I"),
                        ("x", 2, "b", 5, "+I"), ("x", 2, "a", 5, "+I")])]
    out = run_history({"bucket": "1", "sequence.field": "n", "changelog-producer": "input"}, steps)
    assert out["changes"] == [[("x", 1, "none", None, "+I"), ("x", 1, "old", 10, "+I"), ("x", 1, "new", 20, "+I"),
                               ("x", 2, "b", 5, "+I"), ("x", 2, "a", 5, "+I")]]


@pytest.mark.parametrize("first_into", ["an empty bucket", "a bucket with older keys"])
def test_partial_update_merges_a_new_keys_lone_row(first_into):
    """Java's lookup compaction runs partial-update's merge on every key it rewrites, a new
    key's lone row too: a sequence group whose sequence is null is left out (null). Into an
    empty bucket Java moves the file up as written, but its changelog holds the merged row.
    Before, our rows and changelog kept the group's values."""
    options = {"bucket": "1", "merge-engine": "partial-update", **DV, "changelog-producer": "lookup",
               "fields.n.sequence-group": "v"}
    steps = [("write", [("x", 2, "b", None, "+I"), ("x", 3, "c", 3, "+I")])]
    if first_into != "an empty bucket":
        steps.insert(0, ("write", [("x", 1, "a", 1, "+I")]))
    out = run_history(options, steps)
    assert out["changes"][-1] == [("x", 2, None, None, "+I"), ("x", 3, "c", 3, "+I")]


def test_a_retraction_that_nulls_a_not_null_column_is_refused_by_name():
    """An aggregate retracting a NOT NULL column to null: Java refuses the write ("Field 'p'
    expected not null"); so do we, naming the column, and nothing is committed."""
    from paimon_streaming.errors import SchemaMismatchError
    with tempfile.TemporaryDirectory() as wh:
        t = ps.Catalog(wh).create_table("db.t", PARTITIONED_SCHEMA, primary_keys=["k"],
                                        options={"bucket": "1", **DV, "changelog-producer": "lookup",
                                                 "merge-engine": "aggregation", "fields.n.aggregate-function": "sum"})
        t.write_arrow(_as_ours([("x", 1, "a", 1, "+I")]), row_kind_column="_ROW_KIND")
        before = t.snapshot_manager.latest_id()
        with pytest.raises(SchemaMismatchError, match="column 'p' is NOT NULL"):
            t.write_arrow(_as_ours([("x", 0, None, None, "-U")]), row_kind_column="_ROW_KIND")
        assert t.snapshot_manager.latest_id() == before
        assert t.to_arrow().to_pylist() == [{"k": 1, "v": "a", "n": 1, "p": "x"}]

