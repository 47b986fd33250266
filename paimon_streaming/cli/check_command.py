"""`paimon-streaming check <table>`: verify a table's files and metadata (with every branch's;
`<table>$branch_<name>`: that branch alone, as the other commands take it); exit 1 on errors.

Never fails on a damaged table: it always prints a report (`--json`: always JSON), also when
the table's snapshot or schema files do not decode. `--repair` first rewrites LATEST/EARLIEST
hints that are missing, garbled or beyond the snapshot files (`check.repair_hints`)."""
from __future__ import annotations

import argparse

from ..check import CheckReport, Problem, check_location, repair_hints
from .output import add_table_argument, emit, print_rows


def _human(report: dict) -> None:
    for action in report.get("repaired", []):
        print(f"repaired: {action}")
    errors = sum(p["severity"] == "error" for p in report["problems"])
    warnings = len(report["problems"]) - errors
    if report["problems"]:
        print_rows(report["problems"], ["severity", "kind", "path", "message"])
    verdict = "OK" if report["ok"] else "DAMAGED"
    found = f"{errors} errors, {warnings} warnings" if report["problems"] else "no problems"
    print(f"{verdict}: {report['table']}: {report['snapshots']} snapshots/tags and {report['files']} files "
          f"checked, {found}")


def cmd_check(args: argparse.Namespace) -> int:
    repaired: list[str] = []
    failure = None
    if args.repair:
        try:
            repaired = repair_hints(args.table)
        except Exception as exc:  # noqa: BLE001 - reported, the check still runs
            failure = Problem("error", "check-failed", args.table, f"--repair failed: {type(exc).__name__}: {exc}")
    try:
        report = check_location(args.table, verify_data=not args.metadata_only)
    except Exception as exc:  # noqa: BLE001 - check_location never raises; belt and braces for the CLI
        report = CheckReport(args.table, problems=[Problem("error", "check-failed", args.table,
                                                           f"{type(exc).__name__}: {exc}")])
    report.repaired = repaired
    if failure is not None:
        report.problems.insert(0, failure)
    emit(args, report.to_dict(), _human)
    return 0 if report.ok else 1


def register(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser("check", help="verify a table: referenced files exist with their sizes, manifests and "
                                     "data files decode and pass their checksums, deletion vectors pass theirs, "
                                     "no key live twice, hints (TABLE$branch_<name>: that branch alone)")
    add_table_argument(p)
    p.add_argument("--metadata-only", action="store_true",
                   help="check data files by their size only, without reading them (faster)")
    p.add_argument("--repair", action="store_true",
                   help="first rewrite LATEST/EARLIEST hints that are missing, garbled or point beyond the "
                        "snapshot files (accepts the loss of deleted newest snapshots)")
    p.set_defaults(func=cmd_check)
