"""Scan planning and reading: pruning by partition and statistics, projection, filters."""
from __future__ import annotations

import datetime as dt

import pyarrow as pa
import pyarrow.compute as pc
import pytest

from paimon_streaming.errors import SchemaMismatchError, SnapshotNotFoundError
from conftest import rows_by

SCHEMA = pa.schema([("id", pa.int64(), False), ("v", pa.string()), ("n", pa.float64()),
                    ("ts", pa.timestamp("us")), ("dt", pa.string(), False)])


def batch(ids, dt_value):
    return pa.table({"id": ids, "v": [f"v{i}" for i in ids], "n": [i / 2 for i in ids],
                     "ts": [dt.datetime(2024, 1, 1) + dt.timedelta(seconds=i) for i in ids],
                     "dt": [dt_value] * len(ids)}, schema=SCHEMA)


@pytest.fixture
def append_table(catalog):
    t = catalog.create_table("db.a", SCHEMA, partition_keys=["dt"])
    for day in range(3):
        for part in range(2):
            t.write_arrow(batch(list(range(day * 100 + part * 50, day * 100 + part * 50 + 50)), f"2024-01-0{day + 1}"))
    return t


def files_planned(table, flt):
    return sum(len(s.files) for s in table.plan(table.latest_snapshot(), flt))


def test_partition_pruning(append_table):
    assert files_planned(append_table, None) == 6
    assert files_planned(append_table, [("dt", "=", "2024-01-02")]) == 2
    assert files_planned(append_table, [("dt", "in", ["2024-01-01", "2024-01-03"])]) == 4
    got = append_table.to_arrow(filter=[("dt", "=", "2024-01-02")])
    assert sorted(got.column("id").to_pylist()) == list(range(100, 200))


def test_partition_filters_skip_manifests_and_agree_with_every_writer(catalog, warehouse):
    """A filter on partition columns reads only the manifests whose partition statistics may
    hold a match; with manifests written by us, pypaimon and Apache Paimon (Java), filtered
    reads equal the full read filtered in Python (a null partition value included)."""
    from java_oracle import get_oracle
    from conftest import pypaimon_write
    import paimon_streaming.scan as scan_module
    schema = pa.schema([("id", pa.int64(), False), ("dt", pa.string()), ("h", pa.int32())])
    t = catalog.create_table("db.parts", schema, partition_keys=["dt", "h"], options={"write-only": "true"})

    def rows(day: int, hours: list, first: int) -> pa.Table:
        return pa.table({"id": list(range(first, first + len(hours))),
                         "dt": [None if day is None else f"2024-02-{day:02d}"] * len(hours), "h": hours},
                        schema=schema)
    for day in range(1, 7):                          # ours: a day per commit
        t.write_arrow(rows(day, [day % 3, None, 7], day * 10))
    t.write_arrow(rows(None, [1, 2], 500))
    for day in (7, 8, None):                         # pypaimon's
        pypaimon_write(warehouse, "db.parts", rows(day, [1, None], (day or 70) * 10))
    with get_oracle().batch() as jb:                 # Java's
        for day in (9, 10, None):
            jb.write(t.path, rows(day, [(day or 0) % 3, None], (day or 90) * 10).to_pylist())
    everything = t.to_arrow().to_pylist()
    assert len(everything) == 6 * 3 + 2 + 3 * 2 + 3 * 2
    read = []
    original = scan_module.TableScan.entries_of
    scan_module.TableScan.entries_of = lambda self, manifests: read.append(len(manifests)) or original(self, manifests)
    try:
        cases = [([("dt", "=", "2024-02-03")], lambda r: r["dt"] == "2024-02-03"),
                 ([("dt", "in", ["2024-02-01", "2024-02-08", "2024-02-10"])],
                  lambda r: r["dt"] in ("2024-02-01", "2024-02-08", "2024-02-10")),
                 ([("dt", ">=", "2024-02-09"), ("h", "=", 0)], lambda r: (r["dt"] or "") >= "2024-02-09" and r["h"] == 0),
                 ([("dt", "is null"), ("h", "is null")], lambda r: r["dt"] is None and r["h"] is None),
                 ([("dt", "is null")], lambda r: r["dt"] is None),
                 ([("h", "is null")], lambda r: r["h"] is None),
                 ([("dt", "!=", "2024-02-02")], lambda r: r["dt"] is not None and r["dt"] != "2024-02-02"),
                 ([[("h", ">", 6)], [("dt", "=", "2024-02-07")]], lambda r: (r["h"] or 0) > 6 or r["dt"] == "2024-02-07")]
        for flt, want in cases:
            read.clear()
            got = t.to_arrow(filter=flt).to_pylist()
            assert rows_by(pa.Table.from_pylist(got, schema), "id") == \
                rows_by(pa.Table.from_pylist([r for r in everything if want(r)], schema), "id"), flt
        read.clear()
        t.to_arrow(filter=[("dt", "=", "2024-02-03")])
        total = len(scan_module.TableScan(t.file_io, t.path, t.schema).data_manifests(t.latest_snapshot()))
        assert len(read) == 1 and read[0] < total / 2, (read, total)
    finally:
        scan_module.TableScan.entries_of = original


def test_stats_pruning_and_row_filter(append_table):
    assert files_planned(append_table, [("id", ">=", 260)]) == 1
    assert files_planned(append_table, [("id", "<", 0)]) == 0
    assert files_planned(append_table, [("ts", ">", dt.datetime(2024, 1, 1, 0, 4, 0))]) == 2
    assert files_planned(append_table, [[("id", "=", 10)], [("id", "=", 210)]]) == 2
    got = append_table.to_arrow(filter=[("id", ">=", 260), ("n", "<", 140)])
    assert sorted(got.column("id").to_pylist()) == list(range(260, 280))
    assert append_table.to_arrow(filter=[("v", "is null")]).num_rows == 0


def test_projection_and_expression_filter(append_table):
    got = append_table.to_arrow(columns=["n", "id"], filter=pc.field("v") == "v7")
    assert got.column_names == ["n", "id"]
    assert got.to_pylist() == [{"n": 3.5, "id": 7}]
    with pytest.raises(SchemaMismatchError, match="nope"):
        append_table.to_arrow(columns=["nope"])
    with pytest.raises(SchemaMismatchError, match="nope"):
        append_table.to_arrow(filter=[("nope", "=", 1)])


@pytest.mark.parametrize("kind", ["append", "primary-key", "deletion-vectors", "row-tracking", "data-evolution"])
def test_an_empty_projection_counts_the_rows_a_full_read_returns(catalog, kind):
    """`columns=[]` (a count query, as pyarrow.dataset's to_table(columns=[])) read 0 rows: the
    row count was lost with the columns (an evolved file, a concatenation). It keeps the rows a
    full read returns: filtered, merged by key (versions in several files, deletes), minus
    deletion vectors; also for changes_between."""
    options = {"primary-key": {"bucket": "2"}, "deletion-vectors": {"bucket": "2", "deletion-vectors.enabled": "true"},
               "row-tracking": {"row-tracking.enabled": "true"},
               "data-evolution": {"row-tracking.enabled": "true", "data-evolution.enabled": "true"}}.get(kind, {})
    keys = ["id", "dt"] if kind in ("primary-key", "deletion-vectors") else []
    t = catalog.create_table("db.c", SCHEMA, primary_keys=keys, partition_keys=["dt"], options=options)
    t.write_arrow(batch(list(range(30)), "d1"))
    t.write_arrow(batch(list(range(20, 40)), "d1"))          # keys 20..29 again (primary-key tables)
    t.write_arrow(batch(list(range(10)), "d2"))
    if kind != "data-evolution":
        t.delete([("id", "<", 3)])
        with t.update_schema() as update:                    # files of an older schema
            update.add_column("extra", "INT")
        t = catalog.get_table("db.c")
        t.write_arrow(batch([50, 51], "d1").append_column("extra", pa.array([1, 2], pa.int32())))
    assert t.to_arrow().num_rows == {"primary-key": 46, "deletion-vectors": 46, "data-evolution": 60}.get(kind, 56)
    last = t.latest_snapshot().id
    for flt in (None, [("id", ">=", 25)], [("dt", "=", "d2")], pc.field("v") == "v27"):
        full = t.to_arrow(filter=flt).num_rows
        assert full > 0
        assert t.to_arrow(columns=[], filter=flt).num_rows == full, flt
        for start in (0, 1):
            for kinds in (None, "kind"):
                changes = t.changes_between(start, last, filter=flt, row_kind_column=kinds)
                assert t.changes_between(start, last, columns=[], filter=flt, row_kind_column=kinds).num_rows == \
                    changes.num_rows, (flt, start, kinds)


def test_primary_key_value_filter_never_resurrects_old_versions(catalog):
    """Pruning by a value column must not drop the file with the newest version of a key."""
    t = catalog.create_table("db.pk", SCHEMA, primary_keys=["id", "dt"], partition_keys=["dt"],
                             options={"bucket": "1"})
    t.write_arrow(batch([1, 2, 3], "d"))
    newer = batch([2], "d").set_column(2, "n", pa.array([100.0]))
    t.write_arrow(newer)
    got = t.to_arrow(filter=[("n", "<", 50)])
    assert sorted(got.column("id").to_pylist()) == [1, 3]  # id 2 is now 100.0: filtered, not resurrected
    assert files_planned(t, [("id", "=", 99)]) == 0  # key stats still prune


def test_missing_snapshot_and_tag_errors(append_table):
    with pytest.raises(SnapshotNotFoundError, match="snapshot 99"):
        append_table.to_arrow(snapshot_id=99)
    with pytest.raises(SnapshotNotFoundError, match="tag 'nope'"):
        append_table.to_arrow(tag="nope")


def test_empty_table_reads_empty_with_schema(catalog):
    t = catalog.create_table("db.e", SCHEMA, primary_keys=["id", "dt"], options={"bucket": "2"})
    out = t.to_arrow()
    assert out.num_rows == 0 and out.schema.names == SCHEMA.names


def test_decimal_filters_compare_by_value(catalog):
    from decimal import Decimal
    t = catalog.create_table("db.dec", pa.schema([("a", pa.decimal128(12, 2))]))
    t.write_arrow(pa.table({"a": pa.array([Decimal("1.50"), Decimal("1.80"), Decimal("1.75")], pa.decimal128(12, 2))}))
    assert sorted(r["a"] for r in t.to_arrow(filter=[("a", ">", Decimal("1.7"))]).to_pylist()) == \
        [Decimal("1.75"), Decimal("1.80")]
    assert t.to_arrow(filter=[("a", ">", Decimal("1.755"))]).to_pylist() == [{"a": Decimal("1.80")}]
    assert t.to_arrow(filter=[("a", "in", [Decimal("1.5")])]).to_pylist() == [{"a": Decimal("1.50")}]


def test_decimal_filters_with_literals_beyond_the_columns_digits(catalog):
    """A literal with more digits than DECIMAL(38) holds (1e-300) or beyond the column's
    precision (1e40) raised Arrow's "Rescaling Decimal value would cause data loss", naming
    neither column nor value; each compares by value now, as SQL does."""
    from decimal import Decimal as D
    values = [D("-999.99"), D("-0.01"), D("0.00"), D("0.01"), D("1.50"), D("999.99"), None]
    t = catalog.create_table("db.edges", pa.schema([("a", pa.decimal128(5, 2))]))
    t.write_arrow(pa.table({"a": pa.array(values, pa.decimal128(5, 2))}))
    compare = {"<": D.__lt__, "<=": D.__le__, ">": D.__gt__, ">=": D.__ge__, "=": D.__eq__, "!=": D.__ne__}
    for literal in (1e-300, -1e-300, D("1.505"), D("-0.005"), 1e40, -1e40, D("999.995"), D("-1000.5"), D("1e-50")):
        exact = D(repr(literal)) if isinstance(literal, float) else literal
        for op, holds in compare.items():
            got = sorted(t.to_arrow(filter=[("a", op, literal)]).column("a").to_pylist())
            assert got == sorted(v for v in values if v is not None and holds(v, exact)), (literal, op)


def test_filter_values_of_another_kind_or_missing_are_errors_naming_the_term(catalog):
    """Text against a number, a number or boolean against text raised Arrow's own error from a
    reading thread ("no kernel matching input types (double, string)"), naming no column; a
    comparison without its value matched no row, so a delete with a forgotten value did nothing."""
    t = catalog.create_table("db.kinds", pa.schema([("id", pa.int64()), ("amount", pa.float64()), ("s", pa.string())]))
    t.write_arrow(pa.table({"id": [1, 2], "amount": [1.0, 2.0], "s": ["a", None]}))
    for flt, match in (([("amount", ">", "abc")], r"value 'abc' \(str\) does not compare with column 'amount' \(DOUBLE\)"),
                       ([("s", "in", ["a", 1])], r"value 1 \(int\) does not compare with column 's' \(STRING\)"),
                       ([("id", "=", True)], r"value True \(bool\) .* column 'id' \(BIGINT\)")):
        with pytest.raises(SchemaMismatchError, match=match):
            t.to_arrow(filter=flt)
    # a number against a DATE, TIME or TIMESTAMP was taken as days (ms, us) since 1970: 20240105 as a
    # day in the year 57,000, so `d < 20240105` matched every row
    times = catalog.create_table("db.times", pa.schema([("d", pa.date32()), ("t", pa.time32("ms")),
                                                        ("ts", pa.timestamp("us", tz="UTC"))]))
    times.write_arrow(pa.table({"d": [dt.date(2024, 1, 1)], "t": [dt.time(1)],
                                "ts": [dt.datetime(2024, 1, 1, tzinfo=dt.timezone.utc)]}))
    for flt in ([("d", "<", 20240105)], [("t", ">", 1.5)], [("ts", "in", [1])]):
        with pytest.raises(SchemaMismatchError, match=r"does not compare with column .* give a date or time as ISO"):
            times.to_arrow(filter=flt)
        with pytest.raises(SchemaMismatchError):
            times.delete(flt)
    assert times.to_arrow(filter=[("d", "<", "2024-01-05"), ("ts", ">=", "2024-01-01")]).num_rows == 1
    for flt, match in (([("id", ">")], "has no value to compare with"), ([("id", "in", 3)], "takes a list"),
                       ([("s", "is null", "x")], "'is null' takes no value")):
        with pytest.raises(ValueError, match=match):
            t.delete(flt)
    assert t.to_arrow(filter=[("s", "=", None)]).num_rows == 0 and t.to_arrow().num_rows == 2
    for flt, match in (("id > 1", "filter must be a pyarrow.compute.Expression or a non-empty list"),
                       ([], "filter must be a pyarrow.compute.Expression or a non-empty list"),
                       ([("id",)], r"filter term \('id',\) is not a \(column, op, value\) tuple"),
                       ([("id", "~", 1)], r"filter operator '~' is not one of")):
        with pytest.raises(ValueError, match=match):
            t.to_arrow(filter=flt)
    # an integer beyond every double: every double is below it
    assert t.to_arrow(filter=[("amount", "<", 10**400)]).num_rows == 2
    assert t.to_arrow(filter=[("amount", ">=", 10**400)]).num_rows == 0
    assert t.to_arrow(filter=[("amount", ">", -10**400)]).num_rows == 2


def test_iso_text_against_temporal_columns_is_the_value_it_names(catalog):
    """`dt >= '2024-01-01'` as SQL casts it: the text is the date, time or instant it names, for
    pruning (each file holds one day) and rows alike; a text naming none is an error naming
    the column, never a comparison of text with dates."""
    utc = dt.timezone.utc
    t = catalog.create_table("db.temporal", pa.schema([("d", pa.date32()), ("ts", pa.timestamp("us")),
                                                       ("ltz", pa.timestamp("us", tz="UTC")), ("tm", pa.time32("ms"))]))
    for day in (1, 2, 3):
        t.write_arrow(pa.table({"d": [dt.date(2024, 1, day)], "ts": [dt.datetime(2024, 1, day, 10)],
                                "ltz": [dt.datetime(2024, 1, day, 10, tzinfo=utc)], "tm": [dt.time(day)]}))

    def days(flt):
        return sorted(r["d"].day for r in t.to_arrow(filter=flt).to_pylist())
    assert days([("d", ">=", "2024-01-02")]) == [2, 3]
    assert days([("d", "in", ["2024-01-01", "2024-01-03"])]) == [1, 3]
    assert days([("ts", "<", "2024-01-02 10:00:00")]) == [1]
    assert days([("ts", "=", "2024-01-02T10:00:00.000001")]) == []
    assert days([("ltz", "=", "2024-01-03T12:00:00+02:00")]) == [3]   # 10:00 UTC
    # against a wall-time column an offset is dropped (Spark's CAST to TIMESTAMP_NTZ, `update
    # --set`, a zoned datetime): it was compared as the UTC instant, 08:00, and matched nothing
    assert days([("ts", "=", "2024-01-02T10:00:00+02:00")]) == [2]
    assert days([("ts", "in", ["2024-01-01T10:00:00-05:00"])]) == [1]
    assert days([("tm", ">", "02:00")]) == [3]
    for flt, match in (([("d", "=", "2024-13-01")], "column 'd' \\(DATE\\) is not a date"),
                       ([("ts", ">", "yesterday")], "column 'ts' .* is not a timestamp"),
                       ([("tm", "in", ["10:00", "noon"])], "'noon' for column 'tm'")):
        with pytest.raises(SchemaMismatchError, match=match):
            t.to_arrow(filter=flt)


def test_manifests_that_do_not_replay_are_a_corrupt_snapshot(catalog):
    """A snapshot whose manifests add a file twice (a manifest listed twice) cannot be planned:
    CorruptFileError naming the snapshot and its manifest lists, never rows read twice."""
    import dataclasses
    from paimon_streaming.errors import CorruptFileError
    from paimon_streaming.manifest import ManifestList
    from paimon_streaming.paths import PathFactory
    t = catalog.create_table("db.replay", pa.schema([("id", pa.int64()), ("v", pa.string())]),
                             options={"bucket": "-1"})
    t.write_arrow(pa.table({"id": [1, 2], "v": ["a", "b"]}, schema=t.arrow_schema()))
    t.write_arrow(pa.table({"id": [3], "v": ["c"]}, schema=t.arrow_schema()))
    latest = t.latest_snapshot()
    ml = ManifestList(t.file_io, PathFactory(t.path, "parquet"))
    metas = ml.read(latest.base_manifest_list) + ml.read(latest.delta_manifest_list)
    base_name, base_size = ml.write(metas + metas[-1:])
    delta_name, delta_size = ml.write([])
    snap = dataclasses.replace(latest, id=latest.id + 1, base_manifest_list=base_name,
                               base_manifest_list_size=base_size, delta_manifest_list=delta_name,
                               delta_manifest_list_size=delta_size, time_millis=latest.time_millis + 1)
    assert t.snapshot_manager.try_publish(snap)
    with pytest.raises(CorruptFileError, match=rf"the manifests of snapshot {snap.id} of .* do not replay "
                                               rf"\(file .* is added twice\).*{base_name}"):
        t.to_arrow()


def test_an_instant_against_a_date_column_is_refused(catalog):
    """A time-zone-aware datetime names an instant, not a day: against a DATE column it is an
    error naming the column (a naive midnight is the day; another naive time matches no day)."""
    t = catalog.create_table("db.days", pa.schema([("d", pa.date32())]))
    t.write_arrow(pa.table({"d": [dt.date(2024, 1, 1), dt.date(2024, 1, 2)]}))
    with pytest.raises(SchemaMismatchError, match=r"column 'd' \(DATE\)"):
        t.to_arrow(filter=[("d", "=", dt.datetime(2024, 1, 1, tzinfo=dt.timezone.utc))])
    assert t.to_arrow(filter=[("d", "=", dt.datetime(2024, 1, 1))]).to_pylist() == [{"d": dt.date(2024, 1, 1)}]
    assert t.to_arrow(filter=[("d", "=", dt.datetime(2024, 1, 1, 12))]).num_rows == 0
