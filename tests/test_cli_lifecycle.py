"""The lifecycle commands: tag create/list/delete, branch create/list/delete/fast-forward, rollback,
expire, remove-orphans."""
from __future__ import annotations

import json
import os
import time

import pyarrow as pa
import pytest

from paimon_streaming.check import check_table
from paimon_streaming.cli import main
from paimon_streaming.long_lived_changelogs import long_lived_changelog_ids
from stream_batches import open_stream, snapshot_changes

SCHEMA = pa.schema([("id", pa.int64(), False), ("v", pa.string())])


@pytest.fixture
def table(catalog):
    t = catalog.create_table("db.t", SCHEMA, primary_keys=["id"], options={"bucket": "1"})
    for i in range(4):
        t.write_arrow(pa.table({"id": [i], "v": ["x"]}, schema=SCHEMA))
    return t


def run(capsys, *argv) -> tuple[int, str, str]:
    code = main(list(argv))
    out = capsys.readouterr()
    return code, out.out, out.err


def test_tags(table, capsys):
    assert run(capsys, "tag", "create", table.path, "v1", "--snapshot", "2")[0] == 0
    code, out, _ = run(capsys, "tag", "create", table.path, "v2", "--time-retained", "7 d", "--json")
    assert code == 0 and json.loads(out) == {"table": table.path, "tag": "v2", "snapshot": 4}
    code, out, _ = run(capsys, "tag", "list", table.path, "--json")
    rows = json.loads(out)
    assert [(r["tag"], r["snapshot"], r["time_retained_s"]) for r in rows] == [("v1", 2, None), ("v2", 4, 604800.0)]
    code, out, _ = run(capsys, "tag", "list", table.path)
    assert out.splitlines()[0].split()[:3] == ["tag", "snapshot", "kind"] and "v2" in out
    assert run(capsys, "tag", "delete", table.path, "v1")[0] == 0
    assert table.tags() == ["v2"]


def test_rollback_expire_remove_orphans(table, capsys):
    table.tag_manager.create(table.snapshot(3), "7", allow_numeric=True)   # as an automatic tag may be
    code, out, _ = run(capsys, "rollback", table.path, "7", "--tag", "--json")
    assert code == 0 and json.loads(out)["snapshot"] == 3
    code, out, _ = run(capsys, "rollback", table.path, "2")
    assert code == 0 and "back to snapshot 2" in out
    code, out, _ = run(capsys, "expire", table.path, "--retain-max", "1", "--retain-min", "1", "--json")
    assert code == 0 and json.loads(out)["earliest"] == 2            # retain-max expires whatever the age
    code, out, _ = run(capsys, "expire", table.path, "--retain-min", "1", "--older-than", "2999-01-01")
    assert code == 0 and "earliest is now 2" in out
    stray = f"{table.path}/bucket-0/data-stray.parquet"
    open(stray, "wb").write(b"x")
    code, out, _ = run(capsys, "remove-orphans", table.path, "--dry-run")
    assert code == 0 and "would remove 0 orphan files" in out
    old = time.time() - 3 * 86400
    os.utime(stray, (old, old))
    code, out, _ = run(capsys, "remove-orphans", table.path, "--json")
    assert code == 0 and json.loads(out)["files"] == [stray] and not os.path.exists(stray)


def test_branches(table, capsys):
    """Write-audit-publish from the shell: a branch from a tag, written and tagged as
    TABLE$branch_<name>, listed, published with fast-forward (refused while main has commits
    after the tag, which it would drop, unless --force), deleted."""
    import paimon_streaming as ps
    assert run(capsys, "tag", "create", table.path, "v1", "--snapshot", "2")[0] == 0
    code, out, _ = run(capsys, "branch", "create", table.path, "dev", "--tag", "v1")
    # it said "write to it as t$branch_dev": a table name, which no command takes
    assert code == 0 and "created branch 'dev'" in out and f"take it as '{table.path}$branch_dev'" in out
    dev = ps.Table.open(table.path + "$branch_dev")
    dev.write_arrow(pa.table({"id": [9], "v": ["dev"]}, schema=SCHEMA))
    assert run(capsys, "tag", "create", table.path + "$branch_dev", "audited")[0] == 0
    code, out, _ = run(capsys, "branch", "list", table.path, "--json")
    assert json.loads(out) == [{"branch": "dev", "snapshots": 2, "latest": 3, "total_records": 3, "tags": 2}]
    code, _, err = run(capsys, "branch", "fast-forward", table.path, "dev")
    assert code == 1 and "main has snapshots 3..4 that the branch does not hold" in err and "--force" in err
    assert sorted(table.to_arrow().column("id").to_pylist()) == [0, 1, 2, 3]  # main untouched
    code, out, _ = run(capsys, "branch", "fast-forward", table.path, "dev", "--force", "--json")
    assert code == 0 and json.loads(out)["snapshot"] == 3
    assert sorted(table.to_arrow().column("id").to_pylist()) == [0, 1, 9] and "audited" in table.tags()
    assert run(capsys, "branch", "delete", table.path, "dev")[0] == 0
    code, _, err = run(capsys, "branch", "delete", table.path, "dev")
    assert code == 1 and "no branch 'dev'" in err
    code, _, err = run(capsys, "branch", "delete", table.path, "main")  # it said "has no branch 'main'"
    assert code == 1 and "cannot delete branch 'main'" in err and "main is the table itself" in err


def test_expire_below_the_changelog_retention_keeps_the_changelog(catalog, capsys):
    """`expire --retain-max 1` on a table keeping its changelog 20 snapshots dropped the expired
    snapshots' changelog, so a stream from snapshot 2 read only the last snapshot's changes;
    now they stay as long-lived changelogs, as Java's expiration keeps them, and stream as before."""
    t = catalog.create_table("db.cl", SCHEMA, primary_keys=["id"],
                             options={"bucket": "1", "changelog-producer": "input", "snapshot.num-retained.max": "5",
                                      "snapshot.num-retained.min": "1", "changelog.num-retained.max": "20"})
    for i in range(4):
        t.write_arrow(pa.table({"id": [i, i + 1], "v": [str(i)] * 2}, schema=SCHEMA))
    changes = {i: snapshot_changes(open_stream(t, {}), i, ["id", "v"]) for i in range(1, 5)}
    code, out, _ = run(capsys, "expire", t.path, "--retain-max", "1", "--retain-min", "1", "--json")
    assert code == 0 and json.loads(out)["earliest"] == 4
    assert long_lived_changelog_ids(t.file_io, t.path) == [1, 2, 3]
    assert {i: snapshot_changes(open_stream(t, {}), i, ["id", "v"]) for i in range(1, 5)} == changes
    assert check_table(t).ok


@pytest.mark.parametrize("argv, message", [
    (["tag", "create", "{t}", "12"], "purely numeric"),
    (["tag", "create", "{t}", "a/b"], "must not contain"),
    (["tag", "delete", "{t}", "missing"], "tag 'missing'"),
    (["rollback", "{t}", "99"], "snapshot 99"),
    (["rollback", "{t}", "nope"], "tag 'nope'"),
    (["rollback", "{t}", "\u00b2"], "tag '\u00b2'"),  # a digit to str.isdigit: int() failed on it
    (["expire", "{t}", "--retain-max", "1"], "retain_min"),
])
def test_errors_exit_non_zero_with_a_message(table, capsys, argv, message):
    code, _, err = run(capsys, *[a.format(t=table.path) for a in argv])
    assert code == 1 and err.startswith("error: ") and message in err


def test_help_everywhere(capsys):
    for argv in (["tag"], ["tag", "create"], ["tag", "list"], ["tag", "delete"], ["rollback"], ["expire"],
                 ["remove-orphans"], ["branch"], ["branch", "create"], ["branch", "fast-forward"]):
        with pytest.raises(SystemExit) as exit_info:
            main(argv + ["--help"])
        assert exit_info.value.code == 0
        assert "usage: paimon-streaming" in capsys.readouterr().out
    with pytest.raises(SystemExit) as exit_info:
        main(["expire", "/x", "--older-than", "yesterday"])
    assert exit_info.value.code == 2 and "expected a local time" in capsys.readouterr().err
    # a bad duration named neither the option nor the value, and exited 1 after opening the table
    for argv in (["tag", "create", "/x", "t1", "--time-retained", "forever"],
                 ["expire-partitions", "/x", "--expiration-time", "bogus"]):
        with pytest.raises(SystemExit) as exit_info:
            main(argv)
        assert exit_info.value.code == 2
        assert f"argument {argv[-2]}: expected a duration such as '7 d'" in capsys.readouterr().err


def test_expire_partitions(catalog, capsys):
    import datetime as dt
    schema = pa.schema([("id", pa.int64()), ("dt", pa.string())])
    t = catalog.create_table("db.parts", schema, partition_keys=["dt"])
    days = [(dt.date.today() - dt.timedelta(days=n)).isoformat() for n in (9, 8, 0)]
    t.write_arrow(pa.table({"id": [0, 1, 2], "dt": days}, schema=schema))
    code, _, err = run(capsys, "expire-partitions", t.path)
    assert code != 0 and "partition.expiration-time" in err
    code, out, _ = run(capsys, "expire-partitions", t.path, "--expiration-time", "2 d", "--dry-run")
    assert code == 0 and f"dt={days[0]}" in out and "would drop 2 expired partitions" in out
    assert t.to_arrow().num_rows == 3
    code, out, _ = run(capsys, "expire-partitions", t.path, "--expiration-time", "2 d", "--json")
    assert code == 0 and json.loads(out)["partitions"] == [{"dt": days[0]}, {"dt": days[1]}]
    assert [r["dt"] for r in t.to_arrow().to_pylist()] == [days[2]]


def test_expire_partitions_refuses_an_unpartitioned_table(table, capsys):
    """An unpartitioned table has no partitions to expire: the command and
    `Table.expire_partitions` refuse it, naming it, as Java's procedure does (they reported
    "dropped 0"), and nothing is committed."""
    from paimon_streaming.errors import UnsupportedOperationError
    before = len(table.snapshots())
    code, out, err = run(capsys, "expire-partitions", table.path, "--expiration-time", "1 d")
    assert code == 1 and "cannot expire partitions of" in err and "not partitioned" in err and "dropped" not in out
    with pytest.raises(UnsupportedOperationError, match="not partitioned"):
        table.expire_partitions("1 d", dry_run=True)
    assert len(table.snapshots()) == before


def test_messages_name_the_command_line(catalog, capsys):
    """Errors of the commands speak of flags and branches: expire-partitions without a time asks
    for --expiration-time (not the Python keyword); `branch create` on a branch says branches
    are made from the main branch (not the message of table-wide cleanup)."""
    schema = pa.schema([("id", pa.int64()), ("dt", pa.string())])
    t = catalog.create_table("db.parts", schema, partition_keys=["dt"])
    code, _, err = run(capsys, "expire-partitions", t.path)
    assert code == 1 and "pass --expiration-time" in err and "expiration_time" not in err
    assert "'partition.expiration-time'" in err
    t.write_arrow(pa.table({"id": [1], "dt": ["2024-01-01"]}, schema=schema))
    t.create_tag("t1")
    assert run(capsys, "branch", "create", t.path, "dev", "--tag", "t1")[0] == 0
    code, _, err = run(capsys, "branch", "create", t.path + "$branch_dev", "x")
    assert code == 1 and "creating branch 'x' on branch 'dev'" in err and "branches are created" in err
    assert "whole table" not in err and t.branches() == ["dev"]
