"""`paimon-streaming demo`: the main job on the embedded default (local warehouse)."""
from __future__ import annotations

import argparse


def cmd_demo(args: argparse.Namespace) -> int:
    from ..demo import run_demo
    return run_demo(args.warehouse, args.batches, args.rows)


def register(sub: argparse._SubParsersAction) -> None:
    demo = sub.add_parser("demo", help="create a table, commit batches, read back, print snapshots")
    demo.add_argument("--warehouse", default="./warehouse", help="warehouse directory (default ./warehouse)")
    demo.add_argument("--batches", type=int, default=5, help="number of batches to commit")
    demo.add_argument("--rows", type=int, default=100_000, help="rows per batch")
    demo.set_defaults(func=cmd_demo)
