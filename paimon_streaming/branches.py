"""Branches, as Java lays them out: branch `<name>` keeps its own snapshots, schemas, tags and
consumers under `<table>/branch/branch-<name>/`, and shares the table's data files, manifests
and index files (its snapshots reference them in the table's own directories). The main
branch is the table directory itself.

Here branches are read (batch reads, time travel, streams, incremental queries); they are
created and written by Java (`create_branch`, `write` to `table$branch_<name>`). A branch is
named as Java names it: `Catalog.get_table("db.orders$branch_dev")`, Spark's
`load(".../orders$branch_dev")` (system tables: `orders$branch_dev$snapshots`).
"""
from __future__ import annotations

from .errors import InvalidOptionError
from .fileio import FileIO

MAIN = "main"
PREFIX = "branch-"
SUFFIX = "$branch_"  # Java's table name of a branch: `orders$branch_dev`


def branch_path(table_path: str, branch: str | None) -> str:
    """Where a branch's snapshots, schemas and tags live (the table directory for main)."""
    if branch is None or branch == MAIN:
        return table_path
    return f"{table_path}/branch/{PREFIX}{validate_branch_name(branch)}"


def split_branch(ref: str) -> tuple[str, str | None]:
    """'<table>$branch_<name>' -> (table, name); any other reference -> (ref, None)."""
    base, sep, name = ref.rpartition(SUFFIX)
    if sep and base and name:
        return base, validate_branch_name(name)
    return ref, None


def validate_branch_name(name: str) -> str:
    """Java's rules: not blank, not all digits (a snapshot id), no path separator."""
    if not isinstance(name, str) or not name.strip():
        raise InvalidOptionError(f"invalid branch name {name!r}: a branch name must not be blank")
    if name.isdigit() or "/" in name or "\\" in name or name.startswith("."):
        raise InvalidOptionError(f"invalid branch name {name!r}: it must not be all digits, start with '.' or "
                                 "hold a path separator")
    return name


def branch_names(file_io: FileIO, table_path: str) -> list[str]:
    """The table's branches other than main (directories `branch/branch-<name>`)."""
    return sorted(status.path.rstrip("/").rsplit("/", 1)[-1][len(PREFIX):]
                  for status in file_io.list_status(f"{table_path}/branch")
                  if status.is_dir and status.path.rstrip("/").rsplit("/", 1)[-1].startswith(PREFIX))
