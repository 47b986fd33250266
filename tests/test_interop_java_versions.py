"""Tables written by OLDER Apache Paimon Java versions (0.8 .. 1.3), read and continued by us.

Users come with tables their Flink/Spark jobs wrote over the years; the metadata grew fields
release by release (data file meta, manifest entries, snapshot JSON, index manifests, the
deletion-vector index file, schema JSON). For each version (tests/legacy_java_oracle.py builds
its writer on demand) this writes a few table shapes with history -- primary key with deletion
vectors, partitions, a tag and a schema change (add, rename); primary key in ORC with
`changelog-producer=input` and full compactions; dynamic bucket in Avro with
`changelog-producer=lookup`; an append table with a bloom-filter file index and a schema change;
a fixed-bucket append table -- over DECIMAL, TIMESTAMP(3/6/9), nullable ROW, ARRAY and MAP
columns. Then, with our core: batch read, time travel to every snapshot and the tag,
incremental reads between snapshots, a streaming scan from the first snapshot, `check_table`;
then we continue every table (upserts, deletes, full compaction, expiration) and read it back
with ours, with Java 1.4.2 and with the version that wrote it. Every answer is compared with a
model of the rows (and with Java 1.4.2 where the model does not fix it: snapshots inside an
operation, incremental reads).

CI runs the versions in CI_VERSIONS (0.8.2, the oldest); JAVA_VERSIONS_ALL=1 runs every version
in VERSIONS (0.8.2 0.9.0 1.0.1 1.1.1 1.2.0 1.3.1), JAVA_VERSIONS=a,b the ones named.
"""
from __future__ import annotations

import copy
import datetime as dt
import os
from decimal import Decimal

import pyarrow as pa
import pytest

import paimon_streaming as ps
from paimon_streaming.check import check_table
from paimon_streaming.errors import UnsupportedOperationError

try:
    from java_oracle import epoch_nanos, get_oracle
    from legacy_java_oracle import CI_VERSIONS, VERSIONS, get_legacy_oracle
    from stream_batches import open_stream, stream_rows
except ImportError:  # pragma: no cover
    from tests.java_oracle import epoch_nanos, get_oracle
    from tests.legacy_java_oracle import CI_VERSIONS, VERSIONS, get_legacy_oracle
    from tests.stream_batches import open_stream, stream_rows

# CI: the oldest version, the farthest from today's format (snappy metadata, ORC by default, the
# first deletion-vector index, Avro rows as a union, optional Parquet map keys); each version
# costs ~45-60 s (its writer's JVM, Java 1.4.2's reads, ours). JAVA_VERSIONS_ALL=1 runs them all,
# JAVA_VERSIONS=0.9.0,1.3.1 the ones named.
RUN_VERSIONS = (VERSIONS if os.environ.get("JAVA_VERSIONS_ALL") == "1" else
                tuple(v for v in os.environ.get("JAVA_VERSIONS", "").split(",") if v) or CI_VERSIONS)

WIDE = [  # every column type the tables share
    {"name": "v", "type": "STRING"},
    {"name": "d", "type": "DECIMAL(20, 4)"},
    {"name": "ts3", "type": "TIMESTAMP(3)"},
    {"name": "ts6", "type": "TIMESTAMP(6)"},
    {"name": "ts9", "type": "TIMESTAMP(9)"},
    {"name": "r", "type": {"type": "ROW", "fields": [{"id": 100, "name": "a", "type": "INT"},
                                                     {"id": 101, "name": "b", "type": "STRING"}]}},
    {"name": "arr", "type": {"type": "ARRAY", "element": "INT"}},
    {"name": "m", "type": {"type": "MAP", "key": "STRING NOT NULL", "value": "BIGINT"}},
]
T0 = dt.datetime(2024, 1, 1)


def wide(i: int, tag: str) -> dict:
    """Row values for key i (tag marks the write, so an upsert changes v)."""
    return {
        "v": None if i % 7 == 0 else f"{tag}{i}",
        "d": (Decimal(i * 12345 + len(tag)) / 10000).quantize(Decimal("0.0001")) * (-1 if i % 3 == 0 else 1),
        "ts3": T0 + dt.timedelta(milliseconds=i * 1001),
        "ts6": None if i % 5 == 0 else T0 + dt.timedelta(microseconds=i * 1_000_001),
        "ts9": 1_700_000_000_000_000_000 + i * 1_000_000_007,
        "r": None if i % 6 == 0 else {"a": i, "b": None if i % 4 == 0 else f"b{i}"},
        "arr": None if i % 4 == 0 else [i, None, i + 1],
        "m": [] if i % 5 == 0 else [("k", i), ("z", None)],
    }


# ------------------------------------------------------------------------------- the tables


class Model:
    """The rows a table should hold: by key (primary-key tables) or a multiset (append)."""

    def __init__(self, name, fields, primary_keys=(), partition_keys=(), options=None):
        self.name = name
        self.fields = fields
        self.primary_keys = list(primary_keys)
        self.partition_keys = list(partition_keys)
        self.options = dict(options or {})
        self.rows: dict | list = {} if primary_keys else []
        self.columns = [f["name"] for f in fields]
        self.history: list[tuple[str, object, object]] = []  # (what, rows after, Pending snapshots)

    def key(self, row):
        return tuple(row[k] for k in self.primary_keys)

    def apply(self, rows):
        for r in rows:
            r = {c: r.get(c) for c in self.columns} | ({"_ROW_KIND": r["_ROW_KIND"]} if "_ROW_KIND" in r else {})
            kind = r.pop("_ROW_KIND", "+I")
            if not self.primary_keys:
                self.rows.append(r)
            elif kind in ("-D", "-U"):
                self.rows.pop(self.key(r), None)
            else:
                self.rows[self.key(r)] = r

    def alter(self, change):
        if change["kind"] == "add":
            self.columns.append(change["path"][-1])
            for r in self.values():
                r[change["path"][-1]] = None
        elif change["kind"] == "rename":
            old, new = change["path"][-1], change["newName"]
            self.columns = [new if c == old else c for c in self.columns]
            for r in self.values():
                r[new] = r.pop(old)

    def values(self) -> list[dict]:
        return list(self.rows.values()) if self.primary_keys else self.rows

    def snapshot_rows(self) -> list[dict]:
        return sorted_rows(copy.deepcopy(self.values()))


def sorted_rows(rows) -> list[dict]:
    return sorted((norm_row(r) for r in rows), key=lambda r: repr(sorted(r.items())))


def norm_row(r: dict) -> dict:
    return {k: norm(v) for k, v in r.items()}


def norm(v):
    """One form for values from any reader: TIMESTAMP(9) as epoch nanos (pandas.Timestamp from
    Arrow, int from Java), maps as lists of (key, value) tuples sorted, rows as dicts."""
    if isinstance(v, dt.datetime) and hasattr(v, "nanosecond"):
        return epoch_nanos(v)
    if isinstance(v, dict):
        return {k: norm(x) for k, x in v.items()}
    if isinstance(v, list) and v and isinstance(v[0], tuple):  # a map: its entries have no order
        return sorted((tuple(norm(y) for y in x) for x in v), key=repr)
    if isinstance(v, list):
        return [norm(x) for x in v]
    if isinstance(v, Decimal):
        return v.normalize()
    return v


def tables(version: str) -> list[tuple[Model, list]]:
    """Each table with its plan: rounds of operations (all run by one JVM)."""
    key_dt = [{"name": "id", "type": "BIGINT NOT NULL"}, {"name": "dt", "type": "STRING NOT NULL"}]
    # Parquet (the default from 1.0 on; ORC before); 0.8's Parquet maps are unreadable by pyarrow
    # (test_parquet_maps_of_paimon_0_8_raise_a_named_error)
    pk_fields = [f for f in WIDE if f["name"] != "m" or not version.startswith("0.8")]
    pk_dv = Model("pk_dv", key_dt + pk_fields, ["id", "dt"], ["dt"],
                  {"bucket": "2", "deletion-vectors.enabled": "true", "file.format": "parquet"})
    pk_orc = Model("pk_orc", [{"name": "id", "type": "BIGINT NOT NULL"}] + WIDE, ["id"], (),
                   {"bucket": "1", "file.format": "orc", "changelog-producer": "input"})
    no_ts9 = [f for f in WIDE if f["name"] != "ts9"]  # Avro files hold timestamps to microseconds
    dyn = Model("dyn_avro", [{"name": "id", "type": "BIGINT NOT NULL"}] + no_ts9, ["id"], (),
                {"bucket": "-1", "file.format": "avro", "changelog-producer": "lookup", "deletion-vectors.enabled": "true",
                 "dynamic-bucket.target-row-num": "5"})
    app = Model("append", [{"name": "id", "type": "BIGINT"}, {"name": "p", "type": "INT"}] + WIDE, (), ["p"],
                {"bucket": "-1", "file-index.bloom-filter.columns": "v"})
    app_fixed = Model("append_fixed", [{"name": "id", "type": "BIGINT"}] + WIDE, (), (),
                      {"bucket": "2", "bucket-key": "id", "file.format": "orc"})

    def kd(i, tag):
        return {"id": i, "dt": "a" if i % 2 else "b", **wide(i, tag)}

    def k(i, tag):
        return {"id": i, **wide(i, tag)}

    def ap(i, tag):
        return {"id": i, "p": i % 3, **wide(i, tag)}

    def rename(row, old="v", new="v2"):
        row = dict(row)
        row[new] = row.pop(old)
        return row

    plan = [
        (pk_dv, [
            [("write", [kd(i, "a") for i in range(20)]),
             ("write", [kd(i, "b") for i in range(10, 25)] + [{**kd(i, "x"), "_ROW_KIND": "-D"} for i in (3, 4)]),
             ("tag", "t1")],
            [("alter", {"kind": "add", "path": ["extra"], "type": "INT"}),
             ("alter", {"kind": "rename", "path": ["v"], "newName": "v2"})],
            [("write", [rename({**kd(i, "c"), "extra": i}) for i in range(20, 30)]),
             ("compact",)],
        ]),
        (pk_orc, [
            [("write", [k(i, "a") for i in range(10)]),
             ("write", [k(i, "b") for i in range(5, 15)]),
             ("write", [{**k(i, "x"), "_ROW_KIND": "-D"} for i in (1, 2)]),
             ("compact",),
             ("write", [k(i, "c") for i in range(14, 17)] + [{**k(6, "x"), "_ROW_KIND": "-D"}])],
        ]),
        (dyn, [
            [("write", [k(i, "a") for i in range(12)]),
             ("write", [k(i, "b") for i in range(6, 18)] + [{**k(0, "x"), "_ROW_KIND": "-D"}]),
             ("compact",),
             ("write", [k(i, "c") for i in (1, 17, 18)])],
        ]),
        (app, [
            [("write", [ap(i, "a") for i in range(9)]),
             ("write", [ap(i, "b") for i in range(5, 12)])],
            [("alter", {"kind": "add", "path": ["w"], "type": "STRING"})],
            [("write", [{**ap(i, "c"), "w": f"w{i}"} for i in range(12, 15)])],
        ]),
        (app_fixed, [
            [("write", [k(i, "a") for i in range(8)]),
             ("tag", "before"),
             ("write", [k(i, "junk") for i in range(100, 104)])],
            [("rollback", "before")],  # the junk write's snapshot is gone; its id is used again
            [("write", [k(i, "b") for i in range(4, 10)]),
             ("compact",)],
        ]),
    ]
    return plan


# ------------------------------------------------------------------------------- helpers


def ours_rows(t: ps.Table, **kw) -> list[dict]:
    return sorted_rows(t.to_arrow(**kw).to_pylist())


def stream_from_start(t: ps.Table) -> list[dict]:
    """Every change a stream from the first snapshot reads, in order, as rows with `_kind`."""
    earliest = t.snapshots()[0].id
    scan = open_stream(t, {"scan.mode": "from-snapshot", "scan.snapshot-id": str(earliest)})
    return stream_rows(scan, t.schema.field_names)


def replay(model: Model, changes: list[dict], start: list[dict] = ()) -> list[dict]:
    """The rows a sequence of changes leaves on `start`, by the model's key (a multiset for append)."""
    m = Model(model.name, model.fields, model.primary_keys)
    m.columns = list(model.columns)
    m.apply(list(start))
    m.apply([{**r, "_ROW_KIND": r["_kind"]} for r in changes])
    return m.snapshot_rows()


def arrow_rows(t: ps.Table, rows: list[dict], kind: str | None = None) -> pa.Table:
    schema = t.arrow_schema()
    if kind is not None:
        schema = schema.append(pa.field("_kind", pa.string()))
        rows = [{**r, "_kind": r.get("_ROW_KIND", "+I")} for r in rows]
    return pa.Table.from_pylist([{k: v for k, v in r.items() if k != "_ROW_KIND"} for r in rows], schema=schema)


# ------------------------------------------------------------------------------- the test


@pytest.fixture(scope="module")
def java():
    return get_oracle()


@pytest.mark.parametrize("version", RUN_VERSIONS)
def test_tables_of_an_older_java_version(version, java, tmp_path):
    old = get_legacy_oracle(version)
    wh = tmp_path / "wh"
    plan = tables(version)
    path = {m.name: f"{wh}/db.db/{m.name}" for m, _ in plan}

    # 1. the old version writes every table, in one JVM
    with old.batch() as b:
        for m, rounds in plan:
            b.create_table(path[m.name], m.fields, m.primary_keys, m.partition_keys, m.options)
            for ops in rounds:
                for op in ops:
                    if op[0] == "write":
                        rows = [{c: v for c, v in row.items() if c in m.columns or c == "_ROW_KIND"} for row in op[1]]
                        m.apply(rows)
                        b.write(path[m.name], rows)
                    elif op[0] == "alter":
                        m.alter(op[1])
                        b.alter(path[m.name], [op[1]])
                    elif op[0] == "compact":
                        b.compact(path[m.name])
                    elif op[0] == "tag":
                        b.create_tag(path[m.name], op[1])
                    elif op[0] == "rollback":
                        b.rollback(path[m.name], tag=op[1])
                        tagged = next(i for i, h in enumerate(m.history) if h[0] == f"tag:{op[1]}")
                        m.rows = copy.deepcopy(m.history[tagged][1])
                        del m.history[tagged + 1:]  # those snapshots are gone
                        continue
                    if op[0] != "alter":  # a schema change adds no snapshot
                        m.history.append((op[0] if op[0] != "tag" else f"tag:{op[1]}", m.snapshot_rows(),
                                          b.snapshots(path[m.name])))

    # Java 1.4.2 reads every snapshot and the incremental reads between operations, in one JVM
    afters, at_all, inc_all = {}, {}, {}
    with java.batch() as b:
        for m, _ in plan:
            # (what, model rows, the newest snapshot id after the operation)
            after = afters[m.name] = [(what, rows, pending.result[-1]["id"] if pending.result else None)
                                      for what, rows, pending in m.history]
            ends = sorted({sid for _, _, sid in after if sid is not None})
            at_all[m.name] = {s.id: b.read(path[m.name], snapshot_id=s.id)
                              for s in ps.Table.open(path[m.name]).snapshots()}
            inc_all[m.name] = {p: b.read(path[m.name], incremental_between=p, with_row_kind=True)
                               for p in zip(ends, ends[1:])}
    for m, _ in plan:
        t = ps.Table.open(path[m.name])
        after, at, inc = afters[m.name], at_all[m.name], inc_all[m.name]
        assert at, m.name
        # the latest read and every operation's last snapshot (time travel) are the model's
        assert ours_rows(t) == m.snapshot_rows(), (version, m.name, "latest")
        # filters pruning by the old files' statistics (and the bloom-filter index of `append`)
        v = "v" if "v" in m.columns else "v2"
        for flt, keep in ((("id", "<", 7), lambda r: r["id"] < 7), ((v, "=", "b12"), lambda r: r[v] == "b12"),
                          (("ts3", ">=", T0 + dt.timedelta(seconds=9)),
                           lambda r: r["ts3"] >= T0 + dt.timedelta(seconds=9))):
            expected = [r for r in m.snapshot_rows() if r[flt[0]] is not None and keep(r)]
            assert ours_rows(t, filter=[flt]) == expected, (version, m.name, flt)
        for what, rows, sid in after:
            if what.startswith("tag:"):
                assert ours_rows(t, tag=what[4:]) == rows, (version, m.name, what)
            elif sid is not None:
                assert ours_rows(t, snapshot_id=sid) == rows, (version, m.name, what, sid)
        # every snapshot and the incremental reads between operations, against Java 1.4.2 and the model
        for sid, pending in at.items():
            assert ours_rows(t, snapshot_id=sid) == sorted_rows(pending.result), (version, m.name, sid)
        model_at = {sid: rows for what, rows, sid in after if not what.startswith("tag:")}
        dv_delta = m.options.get("deletion-vectors.enabled") == "true" and "changelog-producer" not in m.options
        for (a, z), pending in inc.items():
            changes = t.changes_between(a, z, row_kind_column="_kind").to_pylist()
            # the changes turn the rows of a into those of z (when both have today's columns)
            if not model_at[a] or set(model_at[a][0]) == set(m.columns):
                assert replay(m, changes, model_at[a]) == model_at[z], (version, m.name, "incremental", a, z)
            if dv_delta:
                continue  # Java's batch scans of a DV table skip level 0: its delta query there is empty
            theirs = sorted_rows([{**{k: v for k, v in r.items() if k != "_ROW_KIND"}, "_kind": r["_ROW_KIND"]}
                                  for r in pending.result])
            assert sorted_rows(changes) == theirs, (version, m.name, "incremental", a, z)
        changes = stream_from_start(t)
        assert replay(m, changes) == m.snapshot_rows(), (version, m.name, "stream")
        report = check_table(t)
        assert report.ok, (version, m.name, report.errors())

    # 2. we continue every table: upserts, deletes, a full compaction, expiration
    for m, _ in plan:
        t = ps.Table.open(path[m.name])
        if m.options.get("file.format") == "avro":  # we write Parquet or ORC only (the Avro files stay)
            t.update_schema().set_option("file.format", "parquet").commit()
            t = ps.Table.open(path[m.name])
        current = {c: None for c in m.columns}
        some = sorted(m.values(), key=repr)[:3]
        if m.primary_keys:
            upserts = [{**r, "v" if "v" in r else "v2": "ours", "arr": [7]} for r in some[:2]]
            new = [{**current, **some[0], "id": 1000 + i} | ({"dt": "a"} if "dt" in current else {}) for i in range(3)]
            deletes = [{**some[2], "_ROW_KIND": "-D"}]
            batch = upserts + new + deletes
        else:
            batch = [{**current, **some[0], "id": 1000 + i} for i in range(4)]
        m.apply(batch)
        t.write_arrow(arrow_rows(t, batch, "_kind" if m.primary_keys else None),
                      row_kind_column="_kind" if m.primary_keys else None)
        assert ours_rows(t) == m.snapshot_rows(), (version, m.name, "after our write")
        t.compact(full=True)
        assert ours_rows(t) == m.snapshot_rows(), (version, m.name, "after our compaction")
        more = [{**current, **some[1], "id": 2000}]
        m.apply(more)
        t.write_arrow(arrow_rows(t, more, "_kind" if m.primary_keys else None),
                      row_kind_column="_kind" if m.primary_keys else None)
        t.expire_snapshots(retain_max=2, retain_min=1)
        t = ps.Table.open(path[m.name])
        assert len(t.snapshots()) == 2, (version, m.name, "expiration")
        assert ours_rows(t) == m.snapshot_rows(), (version, m.name, "after expiration")
        report = check_table(t)
        assert report.ok, (version, m.name, report.errors())

    # 3. Java 1.4.2 and the old version read what we wrote
    with java.batch() as b:
        new_reads = {m.name: b.read(path[m.name]) for m, _ in plan}
    with old.batch() as b:
        old_reads = {m.name: b.read(path[m.name]) for m, _ in plan}
    for m, _ in plan:
        assert sorted_rows(new_reads[m.name].result) == m.snapshot_rows(), (version, m.name, "Java 1.4.2")
        theirs = old_reads[m.name].result
        if version.startswith("0.8"):  # 0.8 reads an empty map of a Parquet file as {"": null}, its own too
            theirs = [{k: [] if v == [("", None)] else v for k, v in r.items()} for r in theirs]
        assert sorted_rows(theirs) == m.snapshot_rows(), (version, m.name, f"Java {version}")


def test_parquet_maps_of_paimon_0_8_raise_a_named_error(java, tmp_path):
    """Paimon 0.8 wrote MAP keys as optional in Parquet; pyarrow refuses such a file whole (even
    its other columns). The read says so, naming the file, instead of calling it damaged. (Paimon
    0.9 and later write required keys: test_tables_of_an_older_java_version reads their maps.)"""
    fields = [{"name": "id", "type": "BIGINT NOT NULL"},
              {"name": "m", "type": {"type": "MAP", "key": "STRING NOT NULL", "value": "BIGINT"}}]
    path = f"{tmp_path}/db.db/t"
    with get_legacy_oracle("0.8.2").batch() as b:
        b.create_table(path, fields, ["id"], (), {"bucket": "1", "file.format": "parquet"})
        b.write(path, [{"id": 1, "m": [("a", 1)]}, {"id": 2, "m": None}])
    t = ps.Table.open(path)
    with pytest.raises(UnsupportedOperationError, match=r"data file .*[.]parquet has a MAP column"):
        t.to_arrow()
    with pytest.raises(UnsupportedOperationError, match="MAP column"):
        t.to_arrow(columns=["id"])
    assert [p.kind for p in check_table(t).errors()] == ["unreadable-file"]  # not called damaged
    # the way out the message gives: Java 0.9+ (1.4.2 here) rewrites the rows (a compaction that
    # merges the old file with another)
    with java.batch() as b:
        b.write(path, [{"id": 2, "m": None}])
        b.compact(path)
    assert sorted_rows(ps.Table.open(path).to_arrow().to_pylist()) == [{"id": 1, "m": [("a", 1)]},
                                                                       {"id": 2, "m": None}]


def test_snappy_metadata_without_cramjam(java, tmp_path):
    """Paimon before 0.9 compressed manifests (and Avro data files) with snappy; fastavro reads
    and writes snappy only with cramjam, which this package does not depend on: our block codec
    (pyarrow's snappy) reads them, refuses a block whose CRC32 fails, and writes the manifests of
    a table with `manifest.compression` = snappy, which Java reads."""
    t = ps.Catalog(str(tmp_path / "wh")).create_table(
        "db.s", pa.schema([pa.field("id", pa.int64(), False), ("v", pa.string())]), primary_keys=["id"],
        options={"bucket": "1", "deletion-vectors.enabled": "true", "manifest.compression": "snappy"})
    t.write_arrow(pa.table({"id": [1, 2, 3], "v": ["a", "b", "c"]}, schema=t.arrow_schema()))
    t.write_arrow(pa.table({"id": [2], "v": ["B"]}, schema=t.arrow_schema()))
    expected = [{"id": 1, "v": "a"}, {"id": 2, "v": "B"}, {"id": 3, "v": "c"}]
    assert sorted_rows(t.to_arrow().to_pylist()) == expected
    assert sorted_rows(java.read(t.path)) == expected
    import io
    import zlib

    import fastavro

    from paimon_streaming.errors import CorruptFileError
    from paimon_streaming.fileio import FileIO
    from paimon_streaming.manifest import avro_container as ac
    from paimon_streaming.manifest.files import ManifestFile, read_metadata

    schema = {"type": "record", "name": "r", "fields": [{"name": "a", "type": "long"}]}
    buf = io.BytesIO()
    fastavro.writer(buf, schema, [{"a": i} for i in range(300)], codec="null", sync_interval=1 << 62)
    plain = buf.getvalue()
    pos, _ = ac.read_long(plain, ac._header_end(plain))
    pos, size = ac.read_long(plain, pos)
    block = plain[pos:pos + size]
    data = pa.Codec("snappy").compress(block, asbytes=True) + zlib.crc32(block).to_bytes(4, "big")
    head, sync = ac.header(schema, "snappy", 300, "m")
    good = head + ac.encode_long(300) + ac.encode_long(len(data)) + data + sync
    (tmp_path / "m").write_bytes(good)

    def read():
        return read_metadata(FileIO.for_path(str(tmp_path))[0], str(tmp_path / "m"), ManifestFile.columns)[1]
    assert [r["a"] for r in read()] == list(range(300))
    bad = bytearray(good)
    bad[len(head) + 12] ^= 0x01
    (tmp_path / "m").write_bytes(bytes(bad))
    with pytest.raises(CorruptFileError, match="cannot decode Avro metadata file"):
        read()
