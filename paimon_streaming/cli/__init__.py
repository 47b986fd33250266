"""The `paimon-streaming` command line.

Each command group lives in its own module with a `register(subparsers)` function that
adds its sub-commands; `main` wires them together and turns library errors into a
message on stderr and exit code 1. Run `paimon-streaming --help` for the list.
"""
from __future__ import annotations

import argparse
import importlib
import json
import os
import signal
import sys
from typing import Sequence

from ..errors import PaimonError

# Modules that add sub-commands, in the order `--help` lists them. The Spark-backed commands
# live with the sink (`paimon_streaming.sinks`): they import pyspark only when they run, and
# the core package never imports it.
COMMAND_MODULES = (
    "paimon_streaming.sinks.demo_command",
    "paimon_streaming.sinks.ingest_command",
    "paimon_streaming.cli.table_commands",
    "paimon_streaming.cli.alter_command",
    "paimon_streaming.cli.check_command",
    "paimon_streaming.cli.lifecycle_commands",
)


class UsageError(Exception):
    """Arguments the parser refuses; `main` reports it as argparse does (usage, SystemExit(2)),
    and as JSON too under --json."""

    def __init__(self, message: str, usage: str):
        super().__init__(message)
        self.usage = usage


class _Parser(argparse.ArgumentParser):
    def error(self, message: str):  # argparse would print and exit here, before --json is known
        raise UsageError(message, self.format_usage())


def build_parser() -> argparse.ArgumentParser:
    parser = _Parser(prog="paimon-streaming",
                                     description="Pure-Python Apache Paimon tables: demo, ingestion and table tools.")
    sub = parser.add_subparsers(dest="command", required=True, metavar="COMMAND")
    for name in COMMAND_MODULES:
        importlib.import_module(name).register(sub)
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    argv = sys.argv[1:] if argv is None else list(argv)
    try:
        args = build_parser().parse_args(argv)
    except UsageError as exc:
        print(f"{exc.usage}paimon-streaming: error: {exc}", file=sys.stderr)
        if any(len(a) > 2 and "--json".startswith(a) for a in argv):  # argparse takes --js for --json too
            print(json.dumps({"error": str(exc), "type": "UsageError"}))
        raise SystemExit(2) from None
    try:
        return args.func(args)
    except BrokenPipeError:  # output into a closed pipe (`| head`): the command itself is done
        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())  # nor fail the exit's flush
        return 128 + signal.SIGPIPE  # what a shell reports for a command a closed pipe ended
    except (PaimonError, ValueError, OSError) as exc:
        print(f"error: {exc}", file=sys.stderr)
        if getattr(args, "json", False):  # scripts get the failure as JSON too
            print(json.dumps({"error": str(exc), "type": type(exc).__name__}))
        return 1


if __name__ == "__main__":
    sys.exit(main())
