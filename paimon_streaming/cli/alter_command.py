"""`paimon-streaming alter`: change a table's schema from the command line (one new schema
file for all the changes given; see `schema_update.SchemaUpdate`)."""
from __future__ import annotations

import argparse
import re

from ..schema_update import SchemaUpdate
from ..table import Table
from .names import NAME, NAME_PATH, column_path, split_pair, unquoted
from .output import add_table_argument, emit

_ADD = re.compile(rf"^\s*(?P<path>{NAME_PATH})\s+(?P<type>.+?)(?:\s+(?P<first>FIRST)|\s+AFTER\s+(?P<after>{NAME}))?\s*$",
                  re.IGNORECASE)


def _pair(text: str, what: str) -> tuple[str, str]:
    name, value = split_pair(text, what)
    return name, value.strip()


def _changes(args: argparse.Namespace, update: SchemaUpdate) -> None:
    for spec in args.add_column:
        m = _ADD.match(spec)
        if not m:
            raise ValueError(f"--add-column expects 'NAME TYPE [FIRST | AFTER COLUMN]', got {spec!r}")
        update.add_column(column_path(m["path"]), m["type"], first=bool(m["first"]),
                          after=unquoted(m["after"]) if m["after"] else None)
    for spec in args.rename:
        old, new = _pair(spec, "OLD=NEW")
        update.rename_column(column_path(old), unquoted(new))
    for spec in args.type:
        name, type_name = _pair(spec, "COLUMN=TYPE")
        update.update_column(column_path(name), type_name)
    for name in args.drop_not_null:
        update.update_column(column_path(name), nullable=True)
    for spec in args.default:
        name, value = _pair(spec, "COLUMN=VALUE")
        update.set_default(column_path(name), value)
    for name in args.drop_default:
        update.set_default(column_path(name), None)
    for name in args.drop:
        update.drop_column(column_path(name))
    for spec in args.set:
        key, sep, value = spec.partition("=")
        if not sep or not key.strip():
            raise ValueError(f"expected KEY=VALUE, got {spec!r}")
        update.set_option(key.strip(), value.strip())
    for key in args.unset:
        update.remove_option(key)
    if args.comment is not None:
        update.set_comment(args.comment)


def cmd_alter(args: argparse.Namespace) -> int:
    table = Table.open(args.table)
    update = table.update_schema()
    _changes(args, update)
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
                                   "backtick goes in backticks, as in Spark SQL: `user.id`.")
    add_table_argument(p)
    p.add_argument("--add-column", action="append", default=[], metavar="'NAME TYPE [FIRST|AFTER COL]'",
                   help="add a nullable column, e.g. 'coupon STRING AFTER id' (repeatable)")
    p.add_argument("--rename", action="append", default=[], metavar="OLD=NEW", help="rename a column")
    p.add_argument("--type", action="append", default=[], metavar="COLUMN=TYPE",
                   help="widen a column's type losslessly, e.g. qty=BIGINT")
    p.add_argument("--drop-not-null", action="append", default=[], metavar="COLUMN", help="make a column nullable")
    p.add_argument("--default", action="append", default=[], metavar="COLUMN=VALUE",
                   help="give a column a default value, written in place of its nulls")
    p.add_argument("--drop-default", action="append", default=[], metavar="COLUMN", help="remove a column's default")
    p.add_argument("--drop", action="append", default=[], metavar="COLUMN", help="drop a column")
    p.add_argument("--set", action="append", default=[], metavar="KEY=VALUE", help="set a table option")
    p.add_argument("--unset", action="append", default=[], metavar="KEY", help="remove a table option")
    p.add_argument("--comment", help="set the table comment")
    p.set_defaults(func=cmd_alter)
