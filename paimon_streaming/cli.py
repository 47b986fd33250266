"""The `paimon-streaming` command line: a demo job and table inspection.

    paimon-streaming demo [--warehouse DIR] [--batches N] [--rows N]
    paimon-streaming info <table-path> [--json]
    paimon-streaming snapshots <table-path> [--json]
    paimon-streaming compact <table-path> [--full] [--json]
"""
from __future__ import annotations

import argparse
import json
import sys
import time
from typing import Sequence

from .errors import PaimonError
from .table import Table


def _print_rows(rows: list[dict], columns: Sequence[str]) -> None:
    widths = [max([len(c)] + [len(str(r.get(c, ""))) for r in rows]) for c in columns]
    print("  ".join(c.ljust(w) for c, w in zip(columns, widths)))
    print("  ".join("-" * w for w in widths))
    for r in rows:
        print("  ".join(str(r.get(c, "")).ljust(w) for c, w in zip(columns, widths)))


def _snapshot_rows(table: Table) -> list[dict]:
    return [{"id": s.id, "kind": s.commit_kind, "schema": s.schema_id, "user": s.commit_user,
             "identifier": s.commit_identifier, "total_rows": s.total_record_count,
             "delta_rows": s.delta_record_count,
             "time": time.strftime("%Y-%m-%d %H:%M:%S", time.localtime(s.time_millis / 1000))}
            for s in table.snapshots()]


def cmd_snapshots(args: argparse.Namespace) -> int:
    table = Table.open(args.table)
    rows = _snapshot_rows(table)
    if args.json:
        print(json.dumps(rows))
    else:
        _print_rows(rows, ["id", "kind", "total_rows", "delta_rows", "identifier", "user", "time"])
    return 0


def cmd_info(args: argparse.Namespace) -> int:
    table = Table.open(args.table)
    latest = table.latest_snapshot()
    info = {"path": table.path, "schema_id": table.schema.id,
            "columns": [{"name": f.name, "type": str(f.type)} for f in table.schema.fields],
            "primary_keys": table.primary_keys, "partition_keys": table.partition_keys,
            "options": table.schema.options, "latest_snapshot": latest.id if latest else None,
            "total_rows": latest.total_record_count if latest else 0, "tags": table.tags()}
    if args.json:
        print(json.dumps(info))
    else:
        for key, value in info.items():
            if key == "columns":
                print("columns:")
                for c in value:
                    print(f"  {c['name']}: {c['type']}")
            else:
                print(f"{key}: {value}")
    return 0


def cmd_compact(args: argparse.Namespace) -> int:
    table = Table.open(args.table)
    sid = table.compact(full=args.full)
    result = {"table": table.path, "full": args.full, "snapshot": sid}
    if args.json:
        print(json.dumps(result))
    else:
        print(f"compacted {table.path}: " + (f"snapshot {sid}" if sid is not None else "nothing to do"))
    return 0


def cmd_demo(args: argparse.Namespace) -> int:
    from .demo import run_demo
    return run_demo(args.warehouse, args.batches, args.rows)


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="paimon-streaming",
                                     description="Pure-Python Apache Paimon tables: demo and table tools.")
    sub = parser.add_subparsers(dest="command", required=True)
    demo = sub.add_parser("demo", help="create a table, commit batches, read back, print snapshots")
    demo.add_argument("--warehouse", default="./warehouse", help="warehouse directory (default ./warehouse)")
    demo.add_argument("--batches", type=int, default=5, help="number of batches to commit")
    demo.add_argument("--rows", type=int, default=100_000, help="rows per batch")
    demo.set_defaults(func=cmd_demo)
    for name, func, text in (("info", cmd_info, "show a table's schema, keys, options and size"),
                             ("snapshots", cmd_snapshots, "list a table's snapshots"),
                             ("compact", cmd_compact, "compact a primary-key table (push level 0 up; "
                                                      "--full: one sorted run per bucket)")):
        p = sub.add_parser(name, help=text)
        p.add_argument("table", help="table directory (<warehouse>/<db>.db/<table>) or URI")
        p.add_argument("--json", action="store_true", help="machine-readable output")
        if name == "compact":
            p.add_argument("--full", action="store_true", help="full compaction: rewrite every bucket "
                                                                 "and drop obsolete deletion vectors")
        p.set_defaults(func=func)
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    try:
        return args.func(args)
    except (PaimonError, ValueError, OSError) as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 1


if __name__ == "__main__":
    sys.exit(main())
