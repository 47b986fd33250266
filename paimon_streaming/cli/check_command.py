"""`paimon-streaming check <table>`: verify a table's files and metadata; exit 1 on errors."""
from __future__ import annotations

import argparse

from ..check import check_table
from ..table import Table
from .output import add_table_argument, emit, print_rows


def _human(report: dict) -> None:
    errors = sum(p["severity"] == "error" for p in report["problems"])
    warnings = len(report["problems"]) - errors
    if report["problems"]:
        print_rows(report["problems"], ["severity", "kind", "path", "message"])
    verdict = "OK" if report["ok"] else "DAMAGED"
    print(f"{verdict}: {report['table']}: {report['snapshots']} snapshots/tags and {report['files']} files "
          f"checked, {errors} errors, {warnings} warnings")


def cmd_check(args: argparse.Namespace) -> int:
    report = check_table(Table.open(args.table))
    emit(args, report.to_dict(), _human)
    return 0 if report.ok else 1


def register(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser("check", help="verify a table: referenced files exist with their sizes, manifests "
                                     "decode, deletion vectors pass their checksums, no key live twice, hints")
    add_table_argument(p)
    p.set_defaults(func=cmd_check)
