"""`paimon-streaming alter`: change a table's schema from the command line (one new schema
file for all the changes given; see `schema_update.SchemaUpdate`)."""
from __future__ import annotations

import argparse
import re
from typing import Callable

from ..schema_update import SchemaUpdate
from ..table import Table
from .names import NAME, NAME_PATH, column_path, split_pair, unquoted
from .output import add_table_argument, emit

_ADD = re.compile(rf"^\s*(?P<path>{NAME_PATH})\s+(?P<type>.+?)(?:\s+(?P<first>FIRST)|\s+AFTER\s+(?P<after>{NAME}))?\s*$",
                  re.IGNORECASE)


def _pair(text: str, what: str) -> tuple[str, str]:
    name, value = split_pair(text, what)
    return name, value.strip()


def _add(update: SchemaUpdate, spec: str) -> None:
    m = _ADD.match(spec)
    if not m:
        raise ValueError(f"--add-column expects 'NAME TYPE [FIRST | AFTER COLUMN]', got {spec!r}")
    update.add_column(column_path(m["path"]), m["type"], first=bool(m["first"]),
                      after=unquoted(m["after"]) if m["after"] else None)


def _rename(update: SchemaUpdate, spec: str) -> None:
    old, new = _pair(spec, "OLD=NEW")
    update.rename_column(column_path(old), unquoted(new))


def _type(update: SchemaUpdate, spec: str) -> None:
    name, type_name = _pair(spec, "COLUMN=TYPE")
    update.update_column(column_path(name), type_name)


def _default(update: SchemaUpdate, spec: str) -> None:
    name, value = _pair(spec, "COLUMN=VALUE")
    update.set_default(column_path(name), value)


def _set(update: SchemaUpdate, spec: str) -> None:
    key, sep, value = spec.partition("=")
    if not sep or not key.strip():
        raise ValueError(f"expected KEY=VALUE, got {spec!r}")
    update.set_option(key.strip(), value.strip())


# What each option adds to the schema change.
_CHANGES: dict[str, Callable[[SchemaUpdate, str], object]] = {
    "--add-column": _add,
    "--rename": _rename,
    "--type": _type,
    "--drop-not-null": lambda update, name: update.update_column(column_path(name), nullable=True),
    "--default": _default,
    "--drop-default": lambda update, name: update.set_default(column_path(name), None),
    "--drop": lambda update, name: update.drop_column(column_path(name)),
    "--set": _set,
    "--unset": lambda update, key: update.remove_option(key),
    "--comment": lambda update, text: update.set_comment(text),
}


class _InOrder(argparse.Action):
    """Appends (option, value) to `args.changes`: the changes apply in command-line order, as
    Java's SchemaManager applies a list of changes (`--drop v --add-column 'v INT'` re-adds v)."""

    def __call__(self, parser, namespace, values, option_string=None):
        namespace.changes = [*namespace.changes, (self.const, values)]


def cmd_alter(args: argparse.Namespace) -> int:
    table = Table.open(args.table)
    update = table.update_schema()
    for option, value in args.changes:
        _CHANGES[option](update, value)
    schema = update.commit()
    result = {"table": table.ref, "schema_id": schema.id,
              "columns": [{"name": f.name, "type": str(f.type), "id": f.id} for f in schema.fields],
              "options": schema.options}
    emit(args, result, lambda r: print(f"{r['table']}: schema {r['schema_id']}\n" + "\n".join(
        f"  {c['name']}: {c['type']}" for c in r["columns"])))
    return 0


def register(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser("alter", help="change a table's schema: add, rename, drop or widen columns, options",
                       description="All changes become one new schema file; data files are not rewritten "
                                   "(older files are read by field id). Nested ROW fields are named "
                                   "with dots: addr.zip; a name holding a dot, a space, '=' or a "
                                   "backtick goes in backticks, as in Spark SQL: `user.id`. Each option "
                                   "may repeat; the changes apply in the order given, as in Java's "
                                   "SchemaManager (--unset k --set k=v sets k).")
    add_table_argument(p)
    for option, metavar, text in (
            ("--add-column", "'NAME TYPE [FIRST|AFTER COL]'", "add a nullable column, e.g. 'coupon STRING AFTER id'"),
            ("--rename", "OLD=NEW", "rename a column"),
            ("--type", "COLUMN=TYPE", "widen a column's type losslessly, e.g. qty=BIGINT"),
            ("--drop-not-null", "COLUMN", "make a column nullable"),
            ("--default", "COLUMN=VALUE", "give a column a default value, written in place of its nulls"),
            ("--drop-default", "COLUMN", "remove a column's default"),
            ("--drop", "COLUMN", "drop a column"),
            ("--set", "KEY=VALUE", "set a table option"),
            ("--unset", "KEY", "remove a table option"),
            ("--comment", "TEXT", "set the table comment")):
        p.add_argument(option, action=_InOrder, dest="changes", const=option, default=[], metavar=metavar, help=text)
    p.set_defaults(func=cmd_alter)
