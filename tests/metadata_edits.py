"""Edits of a table's JSON metadata files that tests make on purpose, as a writer would (not damage).

Files we write carry a check of their values (`paimon_streaming/json_check.py`), so editing one
by hand reads as damage. These helpers rewrite a snapshot through `Snapshot` (its check made
anew, as our committer would) or a schema as Java writes it (without a check).
"""
from __future__ import annotations

import dataclasses
import json

from paimon_streaming.json_check import CHECK_KEY
from paimon_streaming.snapshot import Snapshot


def edit_snapshot(path: str, to: str | None = None, **changes) -> None:
    """Rewrite the snapshot (or tag) file at `path` with `changes` (Snapshot attributes), into `to`
    when given."""
    with open(path) as f:
        snap = Snapshot.from_json(f.read())
    with open(to or path, "w") as f:
        f.write(dataclasses.replace(snap, **changes).to_json())


def edit_schema(path: str, edit) -> None:
    """Apply `edit` to the schema file's JSON object, written back without a check (as Java writes)."""
    with open(path) as f:
        obj = json.load(f)
    obj.pop(CHECK_KEY, None)
    edit(obj)
    with open(path, "w") as f:
        json.dump(obj, f)
