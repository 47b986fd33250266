"""`check_table` and `paimon-streaming check`: a healthy table passes; each kind of damage is
reported with the file it concerns and makes the command exit non-zero."""
from __future__ import annotations

import json
import os
import shutil

import pyarrow as pa
import pytest

import paimon_streaming as ps
from paimon_streaming.check import check_location, check_table
from paimon_streaming.cli import main
from paimon_streaming import file_cache

from metadata_edits import edit_snapshot

SCHEMA = pa.schema([("id", pa.int64(), False), ("v", pa.string()), ("p", pa.string(), False)])


def rows(ids, v="a", p="x"):
    return pa.table({"id": list(ids), "v": [v] * len(ids), "p": [p] * len(ids)}, schema=SCHEMA)


@pytest.fixture
def dv(catalog):
    t = catalog.create_table("db.dv", SCHEMA, primary_keys=["id", "p"], partition_keys=["p"],
                             options={"bucket": "2", "deletion-vectors.enabled": "true"})
    t.write_arrow(rows(range(2000)))
    t.write_arrow(rows(range(3), v="b"))  # a few updates: marked in deletion vectors, no rewrite
    t.write_arrow(rows(range(3), p="y"))
    os.makedirs(f"{t.path}/tag")  # a tag file is its snapshot's JSON
    shutil.copy(f"{t.path}/snapshot/snapshot-2", f"{t.path}/tag/tag-t1")
    return t


def problems(t: ps.Table) -> list[tuple[str, str, str]]:
    file_cache.clear_all()
    return [(p.severity, p.kind, p.path) for p in check_table(ps.Table.open(t.path)).problems]


def test_healthy_tables_pass(catalog, dv, capsys):
    append = catalog.create_table("db.app", SCHEMA, partition_keys=["p"])
    append.write_arrow(rows(range(4)))
    pk = catalog.create_table("db.pk", SCHEMA, primary_keys=["id", "p"], options={"bucket": "1"})
    pk.write_arrow(rows(range(4)))
    pk.write_arrow(rows(range(2), v="c"), overwrite=True)
    pk.compact(full=True)
    for t in (dv, append, pk):
        report = check_table(t)
        assert report.ok and not report.problems, report.problems
        assert report.snapshots == len(t.snapshots()) + len(t.tags()) and report.files > 3
    assert main(["check", dv.path]) == 0
    assert capsys.readouterr().out.startswith("OK: ")


def _dv_index(t: ps.Table) -> str:
    entries = t.new_commit().index_manifest.read(t.latest_snapshot().index_manifest)
    return next(f"{t.path}/index/{e.index_file.file_name}" for e in entries if e.index_file.dv_ranges)


def _data_file(t: ps.Table) -> str:
    split = t.plan(t.latest_snapshot())[0]
    return f"{split.bucket_path}/{split.files[0].file_name}"


def _manifest(t: ps.Table) -> str:
    commit = t.new_commit()
    meta = commit.manifest_list.read(t.latest_snapshot().base_manifest_list)[0]
    return commit.manifest_file.path(meta.file_name)


def _flip(path: str, at: int) -> None:
    data = bytearray(open(path, "rb").read())
    data[at] ^= 0xFF
    open(path, "wb").write(bytes(data))


def _set_schema_id(t: ps.Table, schema_id: int) -> None:
    edit_snapshot(f"{t.path}/snapshot/snapshot-{t.latest_snapshot().id}", schema_id=schema_id)


DAMAGE = {
    "missing data file": (lambda t: os.remove(_data_file(t)), "missing-file", _data_file),
    "truncated data file": (lambda t: os.truncate(_data_file(t), 10), "size-mismatch", _data_file),
    "garbled manifest": (lambda t: _flip(_manifest(t), os.path.getsize(_manifest(t)) - 20), "corrupt-file",
                         _manifest),
    "missing manifest": (lambda t: os.remove(_manifest(t)), "missing-file", _manifest),
    "bad DV checksum": (lambda t: _flip(_dv_index(t), 12), "corrupt-file", _dv_index),
    "garbage LATEST hint": (lambda t: open(f"{t.path}/snapshot/LATEST", "w").write("x1"), "hint",
                            lambda t: f"{t.path}/snapshot/LATEST"),
    "LATEST hint ahead": (lambda t: open(f"{t.path}/snapshot/LATEST", "w").write("99"), "hint",
                          lambda t: f"{t.path}/snapshot/LATEST"),
    "snapshot gap": (lambda t: os.remove(f"{t.path}/snapshot/snapshot-2"), "snapshot-gap",
                     lambda t: f"{t.path}/snapshot"),
    "missing schema": (lambda t: _set_schema_id(t, 7), "missing-file", lambda t: f"{t.path}/schema/schema-7"),
}


@pytest.mark.parametrize("damage", list(DAMAGE))
def test_damage_is_reported_with_its_file(dv, damage, capsys):
    do, kind, where = DAMAGE[damage]
    path = where(dv)
    do(dv)
    found = problems(dv)
    assert found.count(("error", kind, path)) == 1, found  # once, however many snapshots use it
    assert main(["check", dv.path, "--json"]) == 1
    report = json.loads(capsys.readouterr().out)
    assert not report["ok"] and any(p["path"] == path for p in report["problems"])
    assert main(["check", dv.path]) == 1
    out = capsys.readouterr().out
    assert "DAMAGED" in out and path in out


def test_stale_latest_hint_is_only_a_warning(dv):
    open(f"{dv.path}/snapshot/LATEST", "w").write("1")
    assert problems(dv) == [("warning", "hint", f"{dv.path}/snapshot/LATEST")]


def test_key_live_twice_in_a_deletion_vector_table(dv):
    """A snapshot whose deletion vectors were lost (index manifest dropped) shows old rows again."""
    edit_snapshot(f"{dv.path}/snapshot/snapshot-{dv.latest_snapshot().id}", index_manifest=None)
    found = problems(dv)
    assert ("error", "duplicate-key", dv.path) in found, found


def test_key_live_in_two_partitions_of_a_cross_partition_table(catalog):
    """Java 1.4.2 moves a key of a deduplicate cross-partition table with 'ignore-delete' by a
    -D row its writers and readers drop: the key stays live in both partitions (readers return
    it twice, Java's next writer fails). Without 'ignore-delete' the old partition holds the
    key's -D alone, so the key is live once."""
    from java_oracle import get_oracle
    fields = [{"name": "id", "type": "BIGINT NOT NULL"}, {"name": "v", "type": "STRING"},
              {"name": "p", "type": "STRING NOT NULL"}]
    paths = {name: f"{catalog.warehouse}/db.db/{name}" for name in ("ignoring", "moving")}
    with get_oracle().batch() as b:
        for name, path in paths.items():
            b.create_table(path, fields, primary_keys=["id"], partition_keys=["p"],
                           options={"bucket": "-1", **({"ignore-delete": "true"} if name == "ignoring" else {})})
            b.write_dynamic(path, [{"id": 1, "v": "a", "p": "x"}, {"id": 2, "v": "a", "p": "x"}])
            b.write_dynamic(path, [{"id": 1, "v": "b", "p": "y"}])
    report = check_table(ps.Table.open(paths["ignoring"]))
    assert [(p.kind, p.path) for p in report.errors()] == [("duplicate-key", paths["ignoring"])]
    assert "1 primary keys are live more than once (e.g. {'id': 1} in p=x, p=y)" in report.errors()[0].message
    assert "'ignore-delete' = 'true' keeps a moved key's old row" in report.errors()[0].message
    report = check_table(ps.Table.open(paths["moving"]))
    assert report.ok and not report.problems, report.problems


def test_check_of_a_branch_alone(catalog, capsys):
    """`check TABLE$branch_<name>` checks that branch (as the other commands take the suffix):
    healthy, it passes; a file only it uses, deleted, is its error; its hints are repaired by
    `--repair` on it; a branch that does not exist is reported once, plainly."""
    t = catalog.create_table("db.b", SCHEMA, primary_keys=["id", "p"], options={"bucket": "1"})
    t.write_arrow(rows(range(3)))
    t.create_tag("base")
    dev = t.create_branch("dev", tag="base")
    ref = f"{t.path}$branch_dev"
    assert main(["check", ref]) == 0
    out = capsys.readouterr().out
    assert out.startswith(f"OK: {ref}: 2 snapshots/tags") and "no problems" in out
    report = check_location(ref)
    assert report.ok and not report.problems and report.table == ref

    dev.write_arrow(rows([7], v="b"))
    os.remove(f"{dev.path}/branch/branch-dev/snapshot/LATEST")
    [hint] = check_location(ref).problems
    assert hint.kind == "hint" and f"paimon-streaming check --repair '{ref}'" in hint.message
    assert main(["check", ref, "--repair", "--json"]) == 0
    report = json.loads(capsys.readouterr().out)
    assert report["problems"] == [] and "branch-dev/snapshot/LATEST" in report["repaired"][0]

    [added] = [f for s in dev.plan(dev.latest_snapshot()) for f in s.files
               if f.file_name not in {f.file_name for s in t.plan(t.latest_snapshot()) for f in s.files}]
    os.remove(f"{t.path}/bucket-0/{added.file_name}")
    assert main(["check", ref, "--json"]) == 1
    [lost] = json.loads(capsys.readouterr().out)["problems"]
    assert lost["kind"] == "missing-file" and added.file_name in lost["path"]
    assert check_location(t.path).errors()  # main's check covers its branches

    assert main(["check", f"{t.path}$branch_nope", "--json"]) == 1
    [missing] = json.loads(capsys.readouterr().out)["problems"]
    assert missing["kind"] == "not-a-table" and missing["message"].count("no branch 'nope'") == 1


def test_a_branch_without_commits_of_its_own_needs_no_hints(catalog, capsys):
    """create_branch copies the tagged snapshot and writes no hint (Java's neither): `check`
    has nothing to say of it, nor once the branch commits (its EARLIEST is still its base),
    nor of an empty branch; a hint a branch's own commit wrote and lost is still reported."""
    t = catalog.create_table("db.h", SCHEMA, primary_keys=["id", "p"], options={"bucket": "1"})
    for i in range(3):
        t.write_arrow(rows([i]))
    t.create_tag("first", snapshot_id=1)
    t.create_tag("last")
    t.create_branch("from_first", tag="first")
    t.create_branch("from_last", tag="last")  # its base is snapshot 3: EARLIEST would be looked for
    t.create_branch("empty")
    assert check_table(t).problems == []
    assert main(["check", t.path]) == 0 and "no problems" in capsys.readouterr().out
    later = ps.Table.open(t.path, branch="from_last")
    later.write_arrow(rows([9]))
    assert check_table(t).problems == []
    os.remove(f"{t.path}/branch/branch-from_last/snapshot/LATEST")
    assert [(p.severity, p.kind) for p in check_table(t).problems] == [("warning", "hint")]


def test_manifests_that_do_not_replay_are_reported(catalog):
    """A snapshot whose manifests add a file twice (its delta list swapped for an older one)."""
    t = catalog.create_table("db.r", SCHEMA, primary_keys=["id", "p"], options={"bucket": "1"})
    t.write_arrow(rows([1, 2]))
    t.write_arrow(rows([2], v="b"))
    first, second = t.snapshots()
    edit_snapshot(f"{t.path}/snapshot/snapshot-2", delta_manifest_list=first.delta_manifest_list,
                  delta_manifest_list_size=first.delta_manifest_list_size)
    [(severity, kind, path)] = problems(t)
    assert (severity, kind) == ("error", "corrupt-file")
    assert path == t.new_commit().manifest_list.path(second.base_manifest_list)
    [problem] = check_table(ps.Table.open(t.path)).problems
    assert "snapshot 2: manifests do not replay" in problem.message and "added twice" in problem.message


def test_a_location_that_cannot_be_opened_is_a_report(capsys):
    report = check_location("nosuchscheme://bucket/db.db/t")
    [problem] = report.problems
    assert not report.ok and problem.kind == "check-failed" and "cannot open nosuchscheme://bucket/db.db/t" in \
        problem.message
    assert main(["check", "nosuchscheme://bucket/db.db/t"]) == 1


def test_a_record_count_off_is_a_warning(dv):
    latest = dv.latest_snapshot()
    path = f"{dv.path}/snapshot/snapshot-{latest.id}"
    edit_snapshot(path, total_record_count=latest.total_record_count + 5)
    assert problems(dv) == [("warning", "record-count", path)]
    [problem] = check_table(ps.Table.open(dv.path)).problems
    assert f"totalRecordCount {latest.total_record_count + 5}" in problem.message


def test_repair_deletes_hints_of_a_table_without_snapshot_files(catalog, capsys):
    t = catalog.create_table("db.gone", SCHEMA, primary_keys=["id", "p"], options={"bucket": "1"})
    t.write_arrow(rows([1]))
    os.remove(f"{t.path}/snapshot/snapshot-1")
    assert {"LATEST", "EARLIEST"} <= set(os.listdir(f"{t.path}/snapshot"))
    main(["check", t.path, "--repair", "--json"])
    report = json.loads(capsys.readouterr().out)
    assert sorted(report["repaired"]) == [f"deleted {t.path}/snapshot/{h}: the table has no snapshot file"
                                          for h in ("EARLIEST", "LATEST")]
    assert os.listdir(f"{t.path}/snapshot") == []
    assert ps.Table.open(t.path).latest_snapshot() is None


def test_a_lost_schema_file_is_reported_once(catalog):
    """Data files written with a schema whose file is gone: the schema is the error, once; their
    contents are not verified against a schema the check cannot have (nor reported again)."""
    t = catalog.create_table("db.s", SCHEMA, primary_keys=["id", "p"], options={"bucket": "1"})
    t.write_arrow(rows([1]))
    t.update_schema().add_column("n", pa.int32()).commit()
    t = ps.Table.open(t.path)
    t.write_arrow(rows([2]).append_column("n", pa.array([5], pa.int32())))
    t.update_schema().add_column("m", pa.int32()).commit()
    os.remove(f"{t.path}/schema/schema-1")
    assert problems(t) == [("error", "missing-file", f"{t.path}/schema/schema-1")]
