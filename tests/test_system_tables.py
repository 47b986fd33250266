"""System tables (paimon_streaming/system_tables.py) answer as Java 1.4.2's for the same table:
`$tags` with their creation time and retention, `$files` with its keys and statistics printed
as Java prints them, `$manifests` with its partition statistics."""
from __future__ import annotations

import datetime as dt
import json
from decimal import Decimal

import pyarrow as pa
import pytest

import paimon_streaming as ps
from paimon_streaming.system_tables import SYSTEM_TABLES, system_table, system_table_schema

try:
    from java_oracle import get_oracle
except ImportError:  # pragma: no cover
    from tests.java_oracle import get_oracle


@pytest.fixture(scope="module")
def java():
    return get_oracle()


def test_the_tags_system_table_is_javas(java, warehouse):
    """A tag's creation time and retention (written only with a retention, as Java does) as
    Java's TagsTable shows them: a local time to the millisecond, a java.time.Duration."""
    path = f"{warehouse}/db.db/t"
    with java.batch() as b:
        b.create_table(path, [{"name": "id", "type": "INT"}], options={"bucket": "-1"})
        b.write(path, [{"id": 1}])
    t = ps.Table.open(path)
    t.write_arrow(pa.table({"id": pa.array([2], pa.int32())}))
    t.create_tag("plain", 1)
    for name, retained in [("hour", "1 h"), ("mixed", 90_500), ("long", "1 d"), ("parts", 3_723_250), ("zero", 0)]:
        t.create_tag(name, 2, time_retained=retained)
    # a tag file whose creation time is an ISO string, which Java's reader accepts too
    with open(f"{path}/tag/tag-hour") as f:
        iso = json.load(f)
    iso["tagCreateTime"] = "2024-05-01T12:30:15.250"
    with open(f"{path}/tag/tag-iso", "w") as f:
        json.dump(iso, f)
    with java.batch() as b:
        b.create_tag(path, "java", 1)
    with java.batch() as b:
        want = b.read(path, system_table="tags")
    ours = system_table(ps.Table.open(path), "tags").to_pylist()

    def comparable(r):  # the column is Java's TIMESTAMP(3): Java keeps finer digits it does not declare
        ct = r["create_time"]
        return {**r, "commit_time": r["commit_time"].replace(tzinfo=None),
                "create_time": ct and ct.replace(microsecond=ct.microsecond // 1000 * 1000)}
    assert [comparable(r) for r in ours] == [comparable(r) for r in want.result]
    by_name = {r["tag_name"]: r for r in ours}
    assert {n: r["time_retained"] for n, r in by_name.items()} == {
        "hour": "PT1H", "iso": "PT1H", "java": None, "long": "PT24H", "mixed": "PT1M30.5S",
        "parts": "PT1H2M3.25S", "plain": None, "zero": "PT0S"}
    assert by_name["iso"]["create_time"] == dt.datetime(2024, 5, 1, 12, 30, 15, 250000)
    assert by_name["plain"]["create_time"] is None
    assert by_name["hour"]["create_time"] > dt.datetime.now() - dt.timedelta(minutes=5)


FILES_COLUMNS = ("partition", "min_key", "max_key", "null_value_counts", "min_value_stats", "max_value_stats",
                 "record_count", "level")


def test_files_and_manifests_print_keys_partitions_and_statistics_as_java(java, warehouse):
    """`$files` prints keys and value statistics as Java does (its internal values: a date as
    its epoch day, a time as milliseconds of the day, a timestamp as a LocalDateTime, doubles
    as Double.toString, columns in name order) and partitions as casts to strings (nulls as
    `null`, a blank string as itself); `$manifests` its partition statistics alike."""
    keyed, plain = f"{warehouse}/db.db/keyed", f"{warehouse}/db.db/plain"
    keyed_fields = [
        {"name": "kd", "type": "DATE NOT NULL"}, {"name": "kt", "type": "TIMESTAMP(3) NOT NULL"},
        {"name": "kf", "type": "DOUBLE NOT NULL"}, {"name": "kc", "type": "DECIMAL(5,2) NOT NULL"},
        {"name": "ktm", "type": "TIME NOT NULL"}, {"name": "p", "type": "DATE NOT NULL"},
        {"name": "Zed", "type": "FLOAT"}, {"name": "_b", "type": "BOOLEAN"}, {"name": "lt", "type": "TIMESTAMP_LTZ(6)"},
        {"name": "s", "type": "STRING"}, {"name": "bin", "type": "BYTES"}]
    plain_fields = [{"name": "id", "type": "INT"}, {"name": "s", "type": "STRING"},
                    {"name": "ts", "type": "TIMESTAMP(3)"}, {"name": "f", "type": "DOUBLE"},
                    {"name": "b", "type": "BOOLEAN"}]
    day = dt.date(2024, 5, 1)
    with java.batch() as b:
        b.create_table(keyed, keyed_fields, primary_keys=["kd", "kt", "kf", "kc", "ktm", "p"], partition_keys=["p"],
                       options={"bucket": "1"})
        b.write(keyed, [{"kd": dt.date(1969, 12, 31), "kt": dt.datetime(2024, 5, 1, 12, 0, 0, 100000), "kf": 1e10,
                         "kc": Decimal("1.50"), "ktm": dt.time(1, 2, 3), "p": day, "Zed": -0.5, "_b": True,
                         "lt": dt.datetime(2024, 5, 1, 0, 0), "s": "x", "bin": b"\x01"}])
        b.create_table(plain, plain_fields, partition_keys=["s", "ts", "f", "b"], options={"bucket": "-1"})
        b.write(plain, [{"id": 1, "s": None, "ts": dt.datetime(2024, 5, 1, 12, 0, 0, 100000), "f": 1e10, "b": True},
                        {"id": 2, "s": " ", "ts": None, "f": None, "b": None}])
    t = ps.Table.open(keyed)
    t.write_arrow(pa.table({
        "kd": [dt.date(2024, 2, 29)], "kt": pa.array([dt.datetime(2020, 1, 1)], pa.timestamp("ms")),
        "kf": [1.25e-7], "kc": pa.array([Decimal("-2.25")], pa.decimal128(5, 2)),
        "ktm": pa.array([dt.time(23, 59, 59, 999000)], pa.time32("ms")),
        "p": [day], "Zed": pa.array([3.4e38], pa.float32()), "_b": [None],
        "lt": pa.array([dt.datetime(2024, 5, 1, 12, 0, 1, 500000)], pa.timestamp("us", tz="UTC")),
        "s": [None], "bin": [b"\x02"]}, schema=t.arrow_schema()))
    p = ps.Table.open(plain)
    p.write_arrow(pa.table({"id": pa.array([3], pa.int32()), "s": ["x"],
                            "ts": pa.array([dt.datetime(2024, 5, 1)], pa.timestamp("ms")), "f": [0.5], "b": [False]},
                           schema=p.arrow_schema()))
    with java.batch() as b:
        want = {path: (b.read(path, system_table="files"), b.read(path, system_table="manifests"))
                for path in (keyed, plain)}
    for path, (files, manifests) in want.items():
        table = ps.Table.open(path)

        def picked(rows):
            return sorted(({k: r[k] for k in FILES_COLUMNS} for r in rows), key=lambda r: r["min_value_stats"])
        assert picked(system_table(table, "files").to_pylist()) == picked(files.result), path
        assert sorted(system_table(table, "manifests").to_pylist(), key=lambda r: r["file_name"]) == \
            sorted(manifests.result, key=lambda r: r["file_name"]), path
    ours = sorted(system_table(t, "files").to_pylist(), key=lambda r: r["min_sequence_number"])
    assert [r["min_key"] for r in ours] == ["[-1, 2024-05-01T12:00:00.100, 1.0E10, 1.50, 3723000]",
                                            "[19782, 2020-01-01T00:00, 1.25E-7, -2.25, 86399999]"]
    assert ours[1]["max_value_stats"].startswith("{Zed=3.4E38, _b=null, bin=")
    assert [r["partition"] for r in ours] == ["{2024-05-01}"] * 2
    assert sorted(r["partition"] for r in system_table(p, "files").to_pylist()) == [
        "{ , null, null, null}", "{null, 2024-05-01 12:00:00.100, 1.0E10, true}",
        "{x, 2024-05-01 00:00:00.000, 0.5, false}"]


def test_files_follow_the_tables_schema_and_manifests_list_changelogs_as_java(java, warehouse):
    """`$files` printed each file's statistics under the schema it was written with (a renamed
    column under its old name, a dropped one still there, an added one missing), left out
    columns without statistics and showed row tracking's own columns; time travel printed them
    under the latest schema rather than the snapshot's; `$manifests` left out the changelog
    manifests. Java's system tables of the same tables are the answer."""
    catalog = ps.Catalog(warehouse)
    keyed = catalog.create_table("db.keyed", pa.schema([pa.field("id", pa.int64(), False), ("v", pa.string()),
                                                        ("d", pa.int64()), ("n", pa.int64())]),
                                 primary_keys=["id"], options={"bucket": "1", "changelog-producer": "input",
                                                               "fields.n.stats-mode": "none"})
    keyed.write_arrow(pa.table({"id": [1, 2], "v": ["a", None], "d": [5, 6], "n": [1, None]}))
    keyed.update_schema().rename_column("v", "v2").drop_column("d").add_column("w", pa.int64()).commit()
    keyed = ps.Table.open(keyed.path)
    keyed.write_arrow(pa.table({"id": [3], "v2": ["c"], "n": [2], "w": [7]}))
    tracked = catalog.create_table("db.tracked", pa.schema([("id", pa.int64()), ("v", pa.int64())]),
                                   options={"row-tracking.enabled": "true"})
    for i in range(2):
        tracked.write_arrow(pa.table({"id": [i], "v": [i * 10]}))
    tracked.compact(full=True)
    with java.batch() as b:
        want = {t.path: (b.read(t.path, system_table="files"), b.read(t.path, system_table="manifests"))
                for t in (keyed, tracked)}
        first = b.read(keyed.path, system_table="files", options={"scan.snapshot-id": 1})
    for t in (keyed, tracked):
        files, manifests = want[t.path]

        def picked(rows):
            return sorted(({k: r[k] for k in FILES_COLUMNS} for r in rows), key=lambda r: r["min_value_stats"])
        assert picked(system_table(t, "files").to_pylist()) == picked(files.result), t.path
        assert sorted(system_table(t, "manifests").to_pylist(), key=lambda r: r["file_name"]) == \
            sorted(manifests.result, key=lambda r: r["file_name"]), t.path
    assert len(system_table(keyed, "manifests")) == 3  # base, delta and changelog of snapshot 2
    assert picked(system_table(keyed, "files", keyed.snapshot(1)).to_pylist()) == picked(first.result)
    assert picked(first.result)[0]["min_value_stats"] == "{d=5, id=1, n=null, v=a}"


def test_a_table_without_snapshots_has_empty_system_tables(catalog):
    """Before its first commit a table's system tables are empty, with their columns."""
    t = catalog.create_table("db.empty", pa.schema([("id", pa.int64()), ("p", pa.string())]), partition_keys=["p"])
    for name in SYSTEM_TABLES:
        out = system_table(t, name)
        assert out.schema == system_table_schema(name)
        assert out.num_rows == (len(t.schema.options) if name == "options" else 1 if name == "schemas" else 0), name


def test_an_unknown_system_table_is_refused_with_the_known_names(catalog):
    t = catalog.create_table("db.t", pa.schema([("id", pa.int64())]))
    with pytest.raises(ValueError, match=r"unknown system table 'snapshot'; expected one of snapshots, tags, files"):
        system_table(t, "snapshot")


@pytest.mark.parametrize("name", ["audit_log", "binlog", "ro", "read_optimized", "statistics", "buckets"])
def test_a_system_table_of_paimons_not_built_here_is_named(catalog, spark, name):
    """`load(path + "$audit_log")` was "no Paimon table at .../t$audit_log", pointing at a
    missing table instead of a system table not implemented here."""
    from paimon_streaming.errors import UnsupportedOperationError
    from paimon_streaming.system_tables import split_system_table
    t = catalog.create_table("db.t", pa.schema([("id", pa.int64())]))
    with pytest.raises(UnsupportedOperationError, match=rf"system table '\${name}' of .* not implemented by "
                                                        r"paimon-streaming; its system tables are \$snapshots"):
        split_system_table(f"{t.path}${name}")
    import paimon_streaming as ps
    ps.register(spark)
    with pytest.raises(Exception, match=rf"'\${name}' of .* not implemented"):
        spark.read.format("paimon").load(f"{t.path}${name}").collect()
