"""Table inspection and maintenance: `info`, `snapshots`, `compact`, `rescale`, `delete`, `update`."""
from __future__ import annotations

import argparse
import decimal
import json
import re
import shlex
import time
from typing import Any

import pyarrow as pa

from ..number_text import FLOAT
from ..rescale import partitions_to_rescale
from ..row_level import check_change
from ..table import Table
from .names import column_path, split_pair
from .output import add_table_argument, partition_text, print_rows


def _snapshot_rows(table: Table) -> list[dict]:
    return [{"id": s.id, "kind": s.commit_kind, "schema": s.schema_id, "user": s.commit_user,
             "identifier": s.commit_identifier, "total_records": s.total_record_count,
             "delta_records": s.delta_record_count,
             "time": time.strftime("%Y-%m-%d %H:%M:%S", time.localtime(s.time_millis / 1000))}
            for s in table.snapshots()]


def cmd_snapshots(args: argparse.Namespace) -> int:
    table = Table.open(args.table)
    rows = _snapshot_rows(table)
    if args.json:
        print(json.dumps(rows))
    else:
        print_rows(rows, ["id", "kind", "total_records", "delta_records", "identifier", "user", "time"])
    return 0


def cmd_info(args: argparse.Namespace) -> int:
    table = Table.open(args.table)
    latest = table.latest_snapshot()
    info = {"path": table.path, "branch": table.branch, "schema_id": table.schema.id,
            "columns": [{"name": f.name, "type": str(f.type)} for f in table.schema.fields],
            "primary_keys": table.primary_keys, "partition_keys": table.partition_keys,
            "options": table.schema.options, "latest_snapshot": latest.id if latest else None,
            "total_records": latest.total_record_count if latest else 0, "tags": table.tags()}
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
    result = {"table": table.ref, "full": args.full, "snapshot": sid}
    if args.json:
        print(json.dumps(result))
    else:
        print(f"compacted {table.ref}: " + (f"snapshot {sid}" if sid is not None else "nothing to do"))
    return 0


def cmd_rescale(args: argparse.Namespace) -> int:
    """`rescale`: a new bucket count, and the selected partitions rewritten to the table's."""
    take_trailing_table(args)
    table = Table.open(args.table)
    terms = where_terms(args.where, table.arrow_schema()) if args.where else None
    if args.dry_run:
        pending = partitions_to_rescale(table, args.bucket, terms)
        if args.json:
            print(json.dumps({"table": table.ref, "bucket": args.bucket or table.options.bucket, "partitions": pending},
                             default=str))
        else:
            print(f"{len(pending)} partition(s) of {table.ref} to rewrite into {args.bucket or table.options.bucket} "
                  "buckets; nothing changed (--dry-run)")
            print_rows([{**p, "partition": partition_text(p["partition"]) or "(the table)"} for p in pending],
                       ["partition", "buckets", "records"])
        return 0
    sid = table.rescale(args.bucket, terms)
    result = {"table": table.ref, "bucket": table.options.bucket, "snapshot": sid}
    if args.json:
        print(json.dumps(result))
    else:
        print(f"rescaled {table.ref} to {result['bucket']} buckets: "
              + (f"snapshot {sid}" if sid is not None else "no file to rewrite (no selected partition holds data "
                                                        "in another bucket count)"))
    return 0


def cli_value(column: str, text: str, schema: pa.Schema) -> Any:
    """A VALUE given on the command line: JSON (`5`, `null`, `["a", "b"]`), else text; a JSON
    number or boolean for a column that holds text stays text (`--where zip = 01234`), and a
    number with a fraction or an exponent is the decimal it spells, compared by its exact value
    (a double would hold 12345678901234567.89 as ...567.88, and make `id = 1.0000000000000001`
    match 1), except for a FLOAT or DOUBLE column, or element, map value or ROW field, where it
    is a double as in Spark SQL."""
    kind = schema.field(column).type if column in schema.names else pa.null()
    textual = pa.types.is_string(kind) or pa.types.is_large_string(kind)
    try:
        if textual:  # numbers as they are written, in lists too (`in '[1.50, 2]'`)
            value = json.loads(text, parse_float=str, parse_int=str)
        else:
            value = _doubles(json.loads(text, parse_float=decimal.Decimal), kind)
    except json.JSONDecodeError:
        return text
    if not textual:
        return value
    if isinstance(value, list):
        return [json.dumps(v) if isinstance(v, bool) else v for v in value]
    if isinstance(value, str) and text.lstrip().startswith('"'):
        return value  # a JSON string: '"null"' is the text null
    return value if value is None or isinstance(value, (list, dict)) else text


def _number_text(text: str, kind: pa.DataType) -> Any:
    """Number text JSON does not take (`007`, `+5`, `.5`, `5.`, `inf` for a float), as the number
    it spells for a numeric column, as `update --set` takes it (`number_text`); None otherwise."""
    text = text.strip()
    if not re.fullmatch(FLOAT, text):
        return None
    if pa.types.is_floating(kind):
        return float(text)
    number = decimal.Decimal(text)
    numeric = pa.types.is_integer(kind) or pa.types.is_decimal(kind)
    return number if numeric and number.is_finite() else None


def _doubles(value: Any, kind: pa.DataType) -> Any:
    """`value` parsed from JSON with its fractions as decimals, those that are FLOAT or DOUBLE
    values (at any depth of an ARRAY, MAP or ROW) as doubles (float() of a decimal rounds once,
    as parsing the digits as a double does)."""
    if isinstance(value, decimal.Decimal) and pa.types.is_floating(kind):
        return float(value)
    if isinstance(value, list) and (pa.types.is_list(kind) or pa.types.is_large_list(kind)):
        return [_doubles(v, kind.value_type) for v in value]
    if isinstance(value, dict) and pa.types.is_struct(kind):
        return {k: _doubles(v, kind.field(k).type) if kind.get_field_index(k) >= 0 else v for k, v in value.items()}
    if isinstance(value, dict) and pa.types.is_map(kind):
        return {k: _doubles(v, kind.item_type) for k, v in value.items()}
    if isinstance(value, list) and pa.types.is_map(kind):  # [[key, value], ...]
        return [[_doubles(p[0], kind.key_type), _doubles(p[1], kind.item_type)]
                if isinstance(p, list) and len(p) == 2 else p for p in value]
    return value


def _take_dashed_values(parser: argparse.ArgumentParser) -> None:
    """Let a --where VALUE start with one dash (`-1e3`, `-Infinity`, the text `-x`): argparse
    takes such a word for an unknown option unless it looks like `-5` or `-.5`. Its own options
    (`-h`) and every `--word` still parse as options."""
    parser._negative_number_matcher = re.compile(r"^-[^-]")  # noqa: SLF001 - argparse has no public hook


# Zone-less text is UTC for a TIMESTAMP WITH LOCAL TIME ZONE column here as in the Python API
# (filters, update values, defaults), though --older-than reads local time: said where it applies.
_LTZ_TEXT = ("a TIMESTAMP WITH LOCAL TIME ZONE value without an offset is UTC; for local time give the offset: "
            "'2024-01-05 10:30:00+02:00'")
_NULLARY_OPS = ("is null", "is not null")
_WORDED_OPS = ("is not null", "is null", "not in")  # longest first: `is not null` before `is null`


def _where_parts(where: list[str]) -> tuple[str, str, list[str]]:
    """COLUMN, OP and what follows them; an OP of words may come as one argument
    (`'is null'`) or as several (`is null`, as typed without quotes), in either case."""
    if len(where) < 2:
        hint = f"; give them as separate words: --where {shlex.join(where[0].split())}" \
            if len(where) == 1 and len(where[0].split()) > 1 else ""
        raise ValueError(f"--where takes COLUMN OP [VALUE], got {' '.join(where)!r}{hint}")
    rest = where[1:]
    for op in _WORDED_OPS:
        words = op.split()
        if [w.lower() for w in rest[:len(words)]] == words:
            return where[0], op, rest[len(words):]
    op = rest[0].lower() if rest[0].lower() in ("in", *_WORDED_OPS) else rest[0]  # SQL's keywords in any case
    return where[0], op, rest[1:]


def take_trailing_table(args: argparse.Namespace) -> None:
    """`delete --where id = 5 TABLE`: the last --where swallowed the table (its option takes
    one or more arguments, so argparse cannot tell where it ends); its surplus argument is the
    table when none came before the options."""
    if args.table is not None:
        return
    if args.where:
        column, op, rest = _where_parts(args.where[-1])
        if len(rest) == (0 if op in _NULLARY_OPS else 1) + 1:
            args.table = args.where[-1].pop()
            return
    raise ValueError(f"{args.command} needs the table: paimon-streaming {args.command} TABLE --where COLUMN OP [VALUE]")


def where_terms(wheres: list[list[str]], schema: pa.Schema) -> list[tuple]:
    """`--where COLUMN OP [VALUE]` options as filter terms (AND)."""
    terms = []
    for where in wheres:
        column, op, rest = _where_parts(where)
        if len(rest) != (0 if op in _NULLARY_OPS else 1):
            raise ValueError(f"--where takes COLUMN OP [VALUE], got {' '.join(where)!r}")
        if not rest:
            terms.append((column, op))
            continue
        value = cli_value(column, rest[0], schema)
        if isinstance(value, str) and column in schema.names:
            number = _number_text(rest[0], schema.field(column).type)
            value = value if number is None else number
        terms.append((column, op, value))
    return terms


def set_values(sets: list[str], schema: pa.Schema) -> dict[str, Any]:
    """`--set COLUMN=VALUE` options as update values. COLUMN is read as `alter` reads it
    (cli/names.py): a name holding '=', a space, a dot or a backtick goes in backticks. An
    unquoted COLUMN that a column of such a name would also read (`a=b=1` beside `a=b`, ` v =1`
    beside ` v `) is refused rather than guessed, and so is a second value for a column, as
    Spark SQL refuses multiple assignments to one column."""
    values, given = {}, {}
    for item in sets:
        written, text = split_pair(item, "--set COLUMN=VALUE")
        column = column_path(written)
        if isinstance(column, tuple):
            raise ValueError(f"--set {item!r}: update sets columns, not nested fields; a column name holding a "
                             f"dot goes in backticks (`{'.'.join(column)}`=VALUE)")
        other = None if written.startswith("`") else next(
            (c for c in schema.names if c != column and re.match(rf"\s*{re.escape(c)}\s*=", item)), None)
        if other is not None:
            raise ValueError(f"--set {item!r} is ambiguous: it sets column {column!r}, but column {other!r} exists; "
                             f"put the column in backticks: `{other.replace('`', '``')}`=VALUE or `{column}`=VALUE")
        if column in given:
            raise ValueError(f"--set {item!r} sets column {column!r} again (after --set {given[column]!r}); "
                             "give each column one value")
        given[column] = item
        values[column] = cli_value(column, text, schema)
    return values


def cmd_row_level(args: argparse.Namespace) -> int:
    """`delete` and `update`: one commit, or with --dry-run the number of rows it would change."""
    take_trailing_table(args)
    table = Table.open(args.table)
    terms = where_terms(args.where, table.arrow_schema())
    values = set_values(args.set, table.arrow_schema()) if args.command == "update" else None
    if args.dry_run:
        check_change(table, values)  # what the delete or update would refuse, the dry run refuses too
        matched = table.to_arrow(columns=table.schema.field_names[:1], filter=terms).num_rows
        result = {"table": table.ref, "matching_rows": matched, "snapshot": None}
    else:
        sid = table.update(terms, values) if values is not None else table.delete(terms)
        result = {"table": table.ref, "snapshot": sid}
    done = "deleted from" if args.command == "delete" else "updated"
    if args.json:
        print(json.dumps(result))
    elif args.dry_run:
        print(f"{result['matching_rows']} rows of {table.ref} match; nothing {done.split()[0]} (--dry-run)")
    else:
        sid = result["snapshot"]
        print(f"{done} {table.ref}: " + (f"snapshot {sid}" if sid is not None else "no row matched"))
    return 0


def register(sub: argparse._SubParsersAction) -> None:
    for name, func, text in (("info", cmd_info, "show a table's schema, keys, options and size"),
                             ("snapshots", cmd_snapshots, "list a table's snapshots"),
                             ("compact", cmd_compact, "compact a table (primary keys: push level 0 up, "
                                                      "--full: one sorted run per bucket; append tables: merge "
                                                      "small files, --full: all of them)")):
        p = sub.add_parser(name, help=text)
        add_table_argument(p)
        if name == "compact":
            p.add_argument("--full", action="store_true", help="full compaction: rewrite every bucket "
                                                                 "(append tables: every small file and every "
                                                                 "file with deleted rows) and drop obsolete "
                                                                 "deletion vectors")
        p.set_defaults(func=func)
    p = sub.add_parser("rescale", help="change a fixed-bucket table's bucket count and rewrite its partitions "
                                       "to it (Paimon's CALL sys.rescale)")
    add_table_argument(p, after_where=True)
    p.add_argument("--bucket", type=int, help="the new bucket count (default: the table's, to rewrite partitions "
                                              "written before a change of it)")
    p.add_argument("--where", nargs="+", action="append", metavar="TERM",
                   help="COLUMN OP [VALUE] over partition columns, repeated for AND: the partitions to rewrite "
                        f"(default: all); {_LTZ_TEXT}")
    _take_dashed_values(p)
    p.add_argument("--dry-run", action="store_true", help="list the partitions it would rewrite, change nothing")
    p.set_defaults(func=cmd_rescale)
    for name, text in (("delete", "delete the rows a filter matches (SQL's DELETE FROM ... WHERE), in one commit"),
                       ("update", "set values in the rows a filter matches (SQL's UPDATE ... SET ... WHERE), in one "
                                  "commit")):
        p = sub.add_parser(name, help=text)
        add_table_argument(p, after_where=True)
        _take_dashed_values(p)
        p.add_argument("--where", nargs="+", action="append", required=True, metavar="TERM",
                       help="COLUMN OP [VALUE], repeated for AND: --where dt '<' 2024-01-01 --where id in '[1, 2]' "
                            "(OP: = != < <= > >= in 'not in' 'is null' 'is not null'; VALUE as JSON, else text; "
                            f"{_LTZ_TEXT})")
        if name == "update":
            p.add_argument("--set", action="append", required=True, metavar="COLUMN=VALUE",
                           help="a value to set (JSON, else text), repeated for more columns; a column name "
                                f"holding '=', a space, a dot or a backtick goes in backticks: '`a=b`=1'; {_LTZ_TEXT}")
        p.add_argument("--dry-run", action="store_true", help="count the matching rows, change nothing")
        p.set_defaults(func=cmd_row_level)
