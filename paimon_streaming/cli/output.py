"""Shared output helpers: aligned text tables for people, JSON for scripts."""
from __future__ import annotations

import argparse
import json
from typing import Any, Callable, Sequence


def print_rows(rows: list[dict], columns: Sequence[str]) -> None:
    widths = [max([len(c)] + [len(str(r.get(c, ""))) for r in rows]) for c in columns]
    print("  ".join(c.ljust(w) for c, w in zip(columns, widths)))
    print("  ".join("-" * w for w in widths))
    for r in rows:
        print("  ".join(str(r.get(c, "")).ljust(w) for c, w in zip(columns, widths)))


def partition_text(values: dict) -> str:
    """A partition as Paimon names its directory: `dt=2024-05-01/hr=10`."""
    return "/".join(f"{k}={v}" for k, v in values.items())


def emit(args: argparse.Namespace, result: Any, human: Callable[[Any], None]) -> None:
    """Print `result` as JSON with --json, otherwise through `human`."""
    if getattr(args, "json", False):
        print(json.dumps(result, default=str))
    else:
        human(result)


def add_table_argument(parser: argparse.ArgumentParser, after_where: bool = False) -> None:
    """The TABLE argument (and --json); `after_where`: it may follow --where's terms, which the
    command then takes from them (`table_commands.take_trailing_table`)."""
    parser.add_argument("table", nargs="?" if after_where else None,
                        help="table directory (<warehouse>/<db>.db/<table>) or URI")
    parser.add_argument("--json", action="store_true", help="machine-readable output")
