"""Damaged files are never read as data (issue 17).

For every kind of file of a table (data file, deletion-vector index file, manifest, manifest
list, index manifest, the newest and an older snapshot, schema, LATEST and EARLIEST hints) and
every damage (a byte flipped in its header, middle and footer, truncation, deletion), on a
deletion-vector table, a merge-on-read primary-key table and an append table, every read path
(batch read, time travel, streaming full and delta plans, system tables) either raises the
documented error naming the damaged file (`CorruptFileError`, `MissingFileError` and their
subclasses) or answers exactly what the undamaged table answers; and `check` reports the
damage (`check --json` prints JSON). Each case damages a fresh copy of a table built once.
"""
from __future__ import annotations

import datetime as dt
import json
import os
import shutil
from decimal import Decimal

import pyarrow as pa
import pyarrow.parquet as pq
import pytest

import paimon_streaming as ps
from paimon_streaming.check import check_location, repair_hints
from paimon_streaming.cli import main
from paimon_streaming.errors import (CompactionNotCommittedError, CorruptFileError, MissingFileError, SnapshotGapError,
                                     SnapshotMissingError)
from paimon_streaming import file_cache
from paimon_streaming.scan import TableScan
from paimon_streaming.system_tables import system_table

from metadata_edits import edit_snapshot
from stream_batches import open_stream, read_batch

SCHEMA = pa.schema([("id", pa.int64(), False), ("v", pa.string()), ("d", pa.float64())])
TABLES = {
    "dv": dict(primary_keys=["id"], options={"bucket": "1", "deletion-vectors.enabled": "true"}),
    "mor": dict(primary_keys=["id"], options={"bucket": "1"}),
    "append": dict(options={"bucket": "-1"}),
}


def batch(ids, tag):
    ids = list(ids)
    return pa.table({"id": ids, "v": [f"{tag}{i % 7}" for i in ids], "d": [i * 0.5 for i in ids]}, schema=SCHEMA)


def build(catalog: ps.Catalog, kind: str) -> ps.Table:
    t = catalog.create_table(f"db.{kind}", SCHEMA, **TABLES[kind])
    t.write_arrow(batch(range(300), "a"))
    t.write_arrow(batch([1, 2, 50, 120], "b"))   # DV: marked in deletion vectors; MOR: merged on read
    t.write_arrow(batch([3, 50, 300], "c"))
    t.write_arrow(batch([4, 301], "e"))
    keep = 4 if kind == "dv" else 3              # DV writes two snapshots per batch (APPEND + COMPACT)
    t.expire_snapshots(retain_max=keep, retain_min=keep)  # so EARLIEST exists and is not 1
    return t


# ---- what each read path answers ------------------------------------------------------------------
def _sorted(rows: list[dict]) -> list:
    return sorted((json.dumps(r, sort_keys=True, default=str) for r in rows))


def _stream(t: ps.Table, options: dict) -> list:
    scan = open_stream(t, options)
    batch, _ = read_batch(scan, SCHEMA.names, scan.start_position())
    return _sorted([r for _, rows in batch for r in rows.to_pylist()])


def _system(t: ps.Table, name: str) -> list:
    return _sorted([{k: str(v).replace(t.path, "<t>") for k, v in r.items()}
                    for r in system_table(t, name).to_pylist()])


def readers(earliest: int) -> dict:
    """Every read path, each opening the table afresh with a cold metadata cache."""
    def opened(path):
        file_cache.clear_all()
        return ps.Table.open(path)
    return {
        "batch": lambda p: _sorted(opened(p).to_arrow().to_pylist()),
        "time travel": lambda p: _sorted(opened(p).to_arrow(snapshot_id=earliest + 1).to_pylist()),
        "stream full": lambda p: _stream(opened(p), {"scan.mode": "latest-full"}),
        "stream deltas": lambda p: _stream(opened(p), {"scan.mode": "from-snapshot",
                                                       "scan.snapshot-id": str(earliest)}),
        **{f"{name} table": (lambda p, name=name: _system(opened(p), name))
           for name in ("snapshots", "files", "manifests", "partitions", "schemas")},
    }


# ---- the files of each kind -------------------------------------------------------------------------
def file_kinds(t: ps.Table) -> dict[str, str]:
    """Relative path of one file of each kind that the newest snapshot's reads depend on."""
    latest = t.latest_snapshot()
    scan = TableScan(t.file_io, t.path, t.schema)
    split = max(t.plan(latest), key=lambda s: len(s.files))
    out = {"data file": f"{split.bucket_path}/{split.files[-1].file_name}"}
    manifest = next(m for m in scan.data_manifests(latest) if m.num_added_files)
    out["manifest"] = scan.manifest_file.path(manifest.file_name)
    out["manifest list"] = scan.manifest_list.path(latest.base_manifest_list)
    if latest.index_manifest is not None:
        out["index manifest"] = scan.index_manifest.path(latest.index_manifest)
        (deletion,) = {d.path for files in scan.deletion_files(latest).values() for d in files.values()}
        out["DV index file"] = deletion
    sm = t.snapshot_manager
    out["snapshot"] = sm.path(latest.id)
    out["older snapshot"] = sm.path(sm.earliest_id() + 1)
    out["schema"] = f"{t.path}/schema/schema-0"
    out["LATEST hint"] = f"{sm.dir}/LATEST"
    out["EARLIEST hint"] = f"{sm.dir}/EARLIEST"
    return {k: os.path.relpath(v, t.path) for k, v in out.items()}


def flip_positions(path: str) -> dict[str, int]:
    """Header, middle and footer bytes worth flipping, by file format."""
    data = open(path, "rb").read()
    n = len(data)
    if n <= 2:
        return {"only byte": 0}
    if data[:4] == b"PAR1":
        meta = pq.ParquetFile(path).metadata
        chunk = meta.row_group(0).column(0)
        footer_start = n - 8 - int.from_bytes(data[-8:-4], "little")
        name_at = data.index(b"\x02id", footer_start) + 1   # a column name in the footer's schema
        return {"header": 0, "middle (page data)": chunk.data_page_offset + chunk.total_compressed_size - 4,
                "footer (column name)": name_at, "footer (length)": n - 6}
    return {"header": 0, "early": min(5, n - 1), "middle": n // 2, "footer": n - 2}


def cases():
    out = []
    for kind in TABLES:
        for file_kind in ("data file", "DV index file", "manifest", "manifest list", "index manifest", "snapshot",
                          "older snapshot", "schema", "LATEST hint", "EARLIEST hint"):
            if kind != "dv" and file_kind in ("DV index file", "index manifest"):
                continue
            for damage in ("flip", "truncate", "delete"):
                out.append((kind, file_kind, damage))
    return out


@pytest.fixture(scope="module")
def templates(tmp_path_factory):
    root = tmp_path_factory.mktemp("templates")
    catalog = ps.Catalog(str(root / "wh"))
    out = {}
    for kind in TABLES:
        t = build(catalog, kind)
        earliest = t.snapshot_manager.earliest_id()
        baseline = {name: read(t.path) for name, read in readers(earliest).items()}
        out[kind] = (t.path, file_kinds(t), earliest, baseline)
    return out


def copy_of(template_path: str, tmp_path) -> str:
    path = str(tmp_path / "t")
    shutil.copytree(template_path, path)
    return path


def damage_positions(damage: str, path: str) -> list[tuple[str, int | None]]:
    """(label, byte to flip) per way of applying `damage` to the file at `path`."""
    if damage == "flip":
        return [(f"byte {at} ({where}) flipped", at) for where, at in flip_positions(path).items()]
    return [(f"{damage}d", None)]


def apply(damage: str, path: str, at: int | None) -> None:
    if damage == "delete":
        os.remove(path)
    elif damage == "truncate":
        os.truncate(path, os.path.getsize(path) // 2)
    else:
        data = bytearray(open(path, "rb").read())
        data[at] ^= 0xFF
        open(path, "wb").write(bytes(data))


@pytest.mark.parametrize("kind,file_kind,damage", cases())
def test_damage_is_an_error_naming_the_file_or_the_right_answer(templates, tmp_path, capsys, kind, file_kind,
                                                                damage):
    template, kinds, earliest, baseline = templates[kind]
    rel = kinds[file_kind]
    for i, (label, at) in enumerate(damage_positions(damage, os.path.join(template, rel))):
        table_path = copy_of(template, tmp_path / str(i))
        path = os.path.join(table_path, rel)
        apply(damage, path, at)
        for name, read in readers(earliest).items():
            try:
                answer = read(table_path)
            except CorruptFileError as exc:  # MissingFileError, SnapshotMissingError, ... are ones too
                assert path in str(exc), f"{kind} {file_kind} {label}: {name} raised without naming {path}: {exc}"
                continue
            assert answer == baseline[name], f"{kind} {file_kind} {label}: {name} read different rows"
        report = check_location(table_path)
        assert any(p.path == path or path in p.message for p in report.problems), \
            f"{kind} {file_kind} {label}: check did not report it: {report.problems}"
        code = main(["check", table_path, "--json"])
        printed = json.loads(capsys.readouterr().out)
        assert printed["ok"] == report.ok and code == (0 if report.ok else 1)
        assert any(p["path"] == path or path in p["message"] for p in printed["problems"])


# ---- the silent rollback: LATEST beyond the newest snapshot file ------------------------------------------
@pytest.fixture
def dv_table(catalog):
    return build(catalog, "dv")


def test_deleted_newest_snapshot_is_refused_until_repaired(dv_table, capsys):
    t = dv_table
    sm = t.snapshot_manager
    newest = sm.latest_id()
    before = t.to_arrow(snapshot_id=newest - 1)
    os.remove(sm.path(newest))
    fresh = ps.Table.open(t.path)
    for attempt in (fresh.to_arrow, fresh.latest_snapshot, lambda: fresh.write_arrow(batch([9], "z")),
                    fresh.expire_snapshots):
        with pytest.raises(SnapshotMissingError) as err:
            attempt()
        assert sm.path(newest) in str(err.value) and sm.hint_path("LATEST") in str(err.value)
        assert isinstance(err.value, MissingFileError) and isinstance(err.value, FileNotFoundError)
    assert not os.path.exists(sm.path(newest))  # the write did not reuse the id
    assert main(["check", t.path, "--json"]) == 1
    report = json.loads(capsys.readouterr().out)
    assert any(p["kind"] == "hint" and sm.path(newest) in p["message"] for p in report["problems"])
    # the documented repair accepts the loss: LATEST points at the newest snapshot that exists
    assert main(["check", t.path, "--repair", "--json"]) == 0
    report = json.loads(capsys.readouterr().out)
    assert report["ok"] and report["repaired"] and sm.hint_path("LATEST") in report["repaired"][0]
    fresh = ps.Table.open(t.path)
    assert fresh.to_arrow().sort_by("id").equals(before.sort_by("id"))
    assert fresh.write_arrow(batch([9], "z")) >= newest  # ids go on from the newest snapshot that exists
    assert 9 in fresh.to_arrow().column("id").to_pylist()


def test_hint_lagging_behind_is_normal(dv_table):
    """Committers write LATEST after the snapshot (and may race): a hint behind is fine."""
    t = dv_table
    newest = t.snapshot_manager.latest_id()
    open(t.snapshot_manager.hint_path("LATEST"), "w").write(str(newest - 2))
    assert ps.Table.open(t.path).latest_snapshot().id == newest
    os.remove(t.snapshot_manager.path(newest - 2))  # even when the hinted snapshot is gone (expired)
    assert ps.Table.open(t.path).latest_snapshot().id == newest


def test_reader_between_a_snapshot_and_its_hint(dv_table):
    """Committers publish the snapshot, then the hint: a reader in between sees the new
    snapshot (the hint is one behind), never an error."""
    t = dv_table
    sm = t.snapshot_manager
    newest = sm.latest_id()
    edit_snapshot(sm.path(newest), to=sm.path(newest + 1), id=newest + 1)  # published; LATEST still `newest`
    assert sm.latest_id() == newest + 1 and ps.Table.open(t.path).latest_snapshot().id == newest + 1


def test_write_whose_compaction_fails_after_its_data_says_the_data_is_committed(catalog):
    """A stray snapshot file two ids ahead (a partial restore) fails a DV write's COMPACT after
    its APPEND landed: the error must say the data is committed, or a caller taking the write
    for failed writes it again (a sum counted the batch twice)."""
    schema = pa.schema([("id", pa.int64(), False), ("n", pa.int64())])
    t = catalog.create_table("db.agg", schema, primary_keys=["id"], options={
        "bucket": "1", "deletion-vectors.enabled": "true", "merge-engine": "aggregation",
        "fields.n.aggregate-function": "sum"})
    t.write_arrow(pa.table({"id": [1], "n": [10]}, schema=schema))
    sm = t.snapshot_manager
    newest = sm.latest_id()
    shutil.copy(sm.path(newest), sm.path(newest + 2))
    file_cache.clear_all()
    with pytest.raises(CompactionNotCommittedError) as err:
        ps.Table.open(t.path).write_arrow(pa.table({"id": [1], "n": [5]}, schema=schema))
    assert err.value.snapshot_id == newest + 1 and f"snapshot {newest + 1}" in str(err.value)
    assert isinstance(err.value.__cause__, CorruptFileError) and sm.path(newest + 2) in str(err.value)
    os.remove(sm.path(newest + 2))  # the stray file removed, the batch is not written again
    file_cache.clear_all()
    t = ps.Table.open(t.path)
    assert t.snapshot_manager.snapshot(newest + 1).commit_kind == "APPEND"
    t.write_arrow(pa.table({"id": [2], "n": [1]}, schema=schema))  # compacts the batch left in level 0
    assert t.to_arrow().sort_by("id").column("n").to_pylist() == [15, 1]


def test_repair_never_points_beyond_a_snapshot(dv_table):
    t = dv_table
    sm = t.snapshot_manager
    newest = sm.latest_id()
    open(sm.hint_path("LATEST"), "w").write("garbage")
    open(sm.hint_path("EARLIEST"), "w").write(str(newest + 5))
    done = repair_hints(t.path)
    assert len(done) == 2
    assert open(sm.hint_path("LATEST")).read() == str(newest)
    assert open(sm.hint_path("EARLIEST")).read() == str(sm.earliest_id())
    assert repair_hints(t.path) == []  # healthy hints are left alone
    open(sm.hint_path("LATEST"), "w").write(str(newest - 1))  # a lagging hint is no damage
    assert repair_hints(t.path) == []


def test_missing_snapshot_between_others_is_a_gap(dv_table):
    t = dv_table
    sm = t.snapshot_manager
    middle = sm.earliest_id() + 1
    os.remove(sm.path(middle))
    with pytest.raises(SnapshotGapError) as err:
        ps.Table.open(t.path).to_arrow(snapshot_id=middle)
    assert sm.path(middle) in str(err.value)


def test_check_never_raises_and_always_prints_json(tmp_path, catalog, capsys):
    t = build(catalog, "mor")
    for name in os.listdir(f"{t.path}/snapshot") + os.listdir(f"{t.path}/schema"):
        d = "snapshot" if name.startswith(("snapshot", "LATEST", "EARLIEST")) else "schema"
        open(f"{t.path}/{d}/{name}", "wb").write(b"\xff\xfe garbage")
    assert main(["check", t.path, "--json"]) == 1
    report = json.loads(capsys.readouterr().out)
    assert not report["ok"] and any(p["path"].endswith("schema-0") for p in report["problems"])
    assert main(["check", str(tmp_path / "nothing-here"), "--json"]) == 1
    assert json.loads(capsys.readouterr().out)["ok"] is False


def test_data_files_carry_page_checksums(dv_table):
    split = dv_table.plan(dv_table.latest_snapshot())[0]
    path = f"{split.bucket_path}/{split.files[0].file_name}"
    data = open(path, "rb").read()
    chunk = pq.ParquetFile(path).metadata.row_group(0).column(3)   # the `id` column
    at = chunk.data_page_offset + chunk.total_compressed_size - 4  # inside its last page's values
    damaged = bytearray(data)
    damaged[at] ^= 0x01
    open(path, "wb").write(bytes(damaged))
    with pytest.raises(CorruptFileError, match="(?i)crc|checksum") as err:
        ps.Table.open(dv_table.path).to_arrow()
    assert path in str(err.value)


def test_metadata_files_carry_checksums(dv_table):
    """A single bit flipped anywhere in the zstd block of a manifest is caught, or changes
    nothing the file decodes to: a few bits of a zstd frame are padding of its bitstreams (in
    about one table of 200 a flip 30 bytes from the end decoded to the same entries)."""
    scan = TableScan(dv_table.file_io, dv_table.path, dv_table.schema)
    meta = scan.data_manifests(dv_table.latest_snapshot())[0]
    path = scan.manifest_file.path(meta.file_name)
    data = open(path, "rb").read()
    intact = ps.Table.open(dv_table.path).to_arrow()
    caught = 0
    for at in range(len(data) - 120, len(data)):
        damaged = bytearray(data)
        damaged[at] ^= 0x01
        open(path, "wb").write(bytes(damaged))
        file_cache.clear_all()
        try:
            read = ps.Table.open(dv_table.path).to_arrow()
        except CorruptFileError as err:
            assert path in str(err)
            caught += 1
        else:
            assert read.equals(intact), f"a bit flipped at byte {at} of {path} changed what readers see"
    open(path, "wb").write(data)
    assert caught >= 110


@pytest.mark.parametrize("damage", ["garbage", "truncate", "flip-key"])
def test_damaged_tag_file_is_named_by_every_reader_and_check(dv_table, capsys, damage):
    t = dv_table
    t.create_tag("daily", snapshot_id=t.snapshot_manager.earliest_id())
    path = t.tag_manager.path("daily")
    text = open(path).read()
    damaged = {"garbage": "\xff\xfe not json", "truncate": text[: len(text) // 2],
               "flip-key": text.replace('"schemaId"', '"schemaJd"')}[damage]
    open(path, "w", encoding="utf-8", errors="surrogateescape").write(damaged)
    fresh = ps.Table.open(t.path)
    for attempt in (lambda: fresh.to_arrow(tag="daily"), lambda: fresh.expire_snapshots(retain_max=1, retain_min=1)):
        with pytest.raises(CorruptFileError) as err:
            attempt()
        assert path in str(err.value)
    assert main(["check", t.path, "--json"]) == 1
    report = json.loads(capsys.readouterr().out)
    assert any(p["kind"] == "corrupt-file" and p["path"] == path for p in report["problems"])


def test_catalog_names_the_lost_schema_file_instead_of_calling_the_table_absent(catalog):
    t = build(catalog, "dv")
    schema_files = os.listdir(f"{t.path}/schema")
    for name in schema_files:
        os.remove(f"{t.path}/schema/{name}")
    with pytest.raises(MissingFileError) as err:
        catalog.get_table("db.dv")
    assert f"{t.path}/schema/schema-0" in str(err.value)


TYPED = pa.schema([("id", pa.int64(), False), ("ts", pa.timestamp("us")), ("ts3", pa.timestamp("ms")),
                   ("dec", pa.decimal128(10, 2)), ("s", pa.string()), ("f", pa.float64()), ("i", pa.int32()),
                   ("b", pa.bool_()), ("day", pa.date32())])


@pytest.mark.parametrize("kind", ["dv", "mor", "append"])
def test_every_bit_flip_in_a_data_files_footer_is_caught_or_harmless(tmp_path, kind):
    """A Parquet footer has no checksum: a flipped bit there can rename a column (read as
    nulls), change a timestamp's unit or a decimal's scale (values 1000 or 10 times off), or
    shorten a row group (rows lost). Each bit flip in turn, one per footer byte, over every
    type family: the read raises CorruptFileError naming the file, or returns the same rows."""
    n = 40
    t = ps.Catalog(str(tmp_path)).create_table("db.t", TYPED, **TABLES[kind])
    t.write_arrow(pa.table({
        "id": range(n), "ts": [dt.datetime(2024, 1, 1, 0, 0, i, 250) for i in range(n)],
        "ts3": [dt.datetime(2024, 1, 2, 0, i) for i in range(n)], "dec": [Decimal(f"{i}.25") for i in range(n)],
        "s": [f"name{i % 7}" for i in range(n)], "f": [i * 0.5 for i in range(n)], "i": range(n),
        "b": [i % 3 == 0 for i in range(n)], "day": [dt.date(2024, 1, 1) + dt.timedelta(days=i) for i in range(n)]},
        schema=TYPED))
    intact = t.to_arrow()
    split = t.plan(t.latest_snapshot())[0]
    path = f"{split.bucket_path}/{split.files[0].file_name}"
    data = open(path, "rb").read()
    footer = len(data) - 8 - int.from_bytes(data[-8:-4], "little")
    silent = []
    for at in range(footer, len(data) - 4):
        damaged = bytearray(data)
        damaged[at] ^= 1 << (at % 8)
        open(path, "wb").write(bytes(damaged))
        try:
            read = ps.Table.open(t.path).to_arrow()
        except CorruptFileError as err:
            assert path in str(err)
        else:
            if not read.equals(intact):
                silent.append(at)
    assert not silent, f"bit flips at bytes {silent} of the footer of {path} changed what readers see"


# ---- JSON metadata: every bit flip caught by the check, or harmless ------------------------------------
def _metadata_readers(t: ps.Table) -> dict[str, tuple[str, object]]:
    """Per JSON metadata file we write: its path and a function reading what it holds (the
    values that matter, comparable), as the table's readers and writers decode it."""
    from paimon_streaming.commit_users import CommitUserRecords
    from paimon_streaming.consumers import ConsumerManager
    from paimon_streaming.schema import SchemaManager
    from paimon_streaming.snapshot import parse_snapshot_file

    def snapshot_values(snap):  # a flip in the check's key leaves the values unchecked, and intact
        return {k: v for k, v in snap.to_dict().items() if k != "properties"}
    sm, latest = t.snapshot_manager, t.latest_snapshot().id
    records = CommitUserRecords(t.file_io, t.path)
    (record,) = [f"{records.user_dir('job')}/{n}" for n in os.listdir(records.user_dir("job"))]
    return {
        "snapshot": (sm.path(latest), lambda p: snapshot_values(
            parse_snapshot_file(p, open(p, "rb").read(), latest))),
        "tag": (t.tag_manager.path("daily"), lambda p: snapshot_values(ps.Table.open(t.path).tag_manager.snapshot("daily"))),
        "schema": (f"{t.path}/schema/schema-0", lambda p: SchemaManager(t.file_io, t.path).schema(0)),
        "consumer": (ConsumerManager(t.file_io, t.path).path("reader"),
                     lambda p: ConsumerManager(t.file_io, t.path).next_snapshot("reader")),
        "commit-user record": (record, lambda p: records.recorded("job")),
    }


def test_every_bit_flip_in_a_json_metadata_file_is_caught_or_harmless(catalog):
    """Snapshot, tag, schema, consumer and commit-user files are JSON without a checksum: a
    digit flipped there used to be read as another value (a commit identifier taken for
    committed, a consumer resumed past unread changes, another bucket count). Ours carry a
    check (json_check.py): one bit flipped per byte, each read raises CorruptFileError naming
    the file, or reads exactly the values written."""
    from paimon_streaming.consumers import ConsumerManager
    from paimon_streaming.json_check import CHECK_KEY
    t = catalog.create_table("db.json", SCHEMA, primary_keys=["id"],
                             options={"bucket": "4", "deletion-vectors.enabled": "true"})
    for i in range(4):
        t.write_arrow(batch(range(i * 10, i * 10 + 20), f"w{i}"), commit_user="job", commit_identifier=i + 1)
    t.create_tag("daily")
    t.expire_snapshots(retain_max=2, retain_min=2)  # records the expired identifiers of "job"
    ConsumerManager(t.file_io, t.path).record("reader", t.latest_snapshot().id)
    caught = {}
    for kind, (path, read) in _metadata_readers(t).items():
        data = open(path, "rb").read()
        intact = read(path)
        caught[kind] = 0
        for at in range(len(data)):
            flipped = bytearray(data)
            flipped[at] ^= 1 << (at % 8)
            open(path, "wb").write(bytes(flipped))
            try:
                value = read(path)
            except CorruptFileError as exc:
                assert path in str(exc), f"{kind}: a flip at byte {at} raised without naming {path}: {exc}"
                caught[kind] += 1
            else:
                assert value == intact, f"{kind}: a bit flipped at byte {at} of {path} read as other values"
        open(path, "wb").write(data)
        # every flip but those in the check's own key name (values intact, then unchecked)
        assert caught[kind] >= len(data) - len(CHECK_KEY), (kind, caught[kind], len(data))


def test_check_reports_damaged_consumer_and_commit_user_files(catalog, capsys):
    """Expiration keeps what consumer files say a stream needs, and exactly-once replays trust
    the commit-user records: `check` names either file when it fails its check."""
    from paimon_streaming.commit_users import CommitUserRecords
    from paimon_streaming.consumers import ConsumerManager
    t = catalog.create_table("db.progress", SCHEMA, primary_keys=["id"], options={"bucket": "1"})
    for i in range(3):
        t.write_arrow(batch([i], "x"), commit_user="job", commit_identifier=i + 1)
    t.expire_snapshots(retain_max=1, retain_min=1)
    consumers = ConsumerManager(t.file_io, t.path)
    consumers.record("reader", 3)
    assert check_location(t.path).ok
    (record,) = CommitUserRecords(t.file_io, t.path).record_files()
    for path, old, new in ((consumers.path("reader"), '"nextSnapshot": 3', '"nextSnapshot": 2'),
                           (record, "[[1, 2]]", "[[1, 3]]")):
        text = open(path).read()
        assert old in text
        open(path, "w").write(text.replace(old, new))
        report = check_location(t.path)
        assert [(p.kind, p.path) for p in report.problems] == [("corrupt-file", path)], report.problems
        assert "do not match the paimon-streaming.check" in report.problems[0].message
        open(path, "w").write(text)
    path = consumers.path("reader")
    text = open(path).read()
    open(path, "w").write(text.replace('"nextSnapshot": 3', '"nextSnapshot": 2'))
    with pytest.raises(CorruptFileError, match="consumer-reader is damaged"):  # what to keep is unknown
        t.expire_snapshots(retain_max=1, retain_min=1)


def test_a_field_id_above_the_schemas_highest_is_damage(catalog):
    """A schema file of another writer has no check: a field id flipped above `highestFieldId`
    (which every writer keeps at the highest id, nested ones included) is still caught, instead
    of reading that column as one added later (all nulls)."""
    from metadata_edits import edit_schema
    t = catalog.create_table("db.ids", SCHEMA, primary_keys=["id"], options={"bucket": "1"})
    t.write_arrow(batch(range(3), "a"))
    path = f"{t.path}/schema/schema-0"

    def flip_id(obj):
        obj["fields"][2]["id"] = obj["highestFieldId"] + 4
    edit_schema(path, flip_id)
    file_cache.clear_all()
    with pytest.raises(CorruptFileError, match=r"schema-0 is damaged: its field ids reach 6, above its highestFieldId 2"):
        ps.Table.open(t.path)
