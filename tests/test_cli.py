"""The command line: demo, info, snapshots, compact; errors exit non-zero with a message."""
from __future__ import annotations

import json

import pyarrow as pa

from paimon_streaming.cli import main


def test_demo_info_snapshots_compact(tmp_path, capsys, catalog):
    assert main(["demo", "--warehouse", str(tmp_path / "wh"), "--batches", "3", "--rows", "2000"]) == 0
    assert "verified" in capsys.readouterr().out
    path = str(tmp_path / "wh" / "demo.db" / "orders")
    assert main(["snapshots", path, "--json"]) == 0
    assert [s["kind"] for s in json.loads(capsys.readouterr().out)] == ["APPEND"] * 3
    assert main(["info", path, "--json"]) == 0
    assert json.loads(capsys.readouterr().out)["primary_keys"] == ["id"]
    assert main(["compact", path, "--full", "--json"]) == 0
    assert json.loads(capsys.readouterr().out)["snapshot"] == 4
    assert main(["snapshots", path]) == 0
    assert "COMPACT" in capsys.readouterr().out


def test_errors_exit_non_zero(tmp_path, capsys):
    assert main(["info", str(tmp_path / "nope")]) == 1
    assert "no Paimon table" in capsys.readouterr().err
