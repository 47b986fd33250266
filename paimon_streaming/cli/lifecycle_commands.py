"""Snapshot lifecycle commands: `tag create|delete|list`, `branch create|delete|list|fast-forward`,
`rollback`, `expire`, `expire-partitions`, `remove-orphans` (a branch: TABLE ending in
`$branch_<name>`)."""
from __future__ import annotations

import argparse
import datetime as dt
import shlex
import time

from ..errors import InvalidOptionError
from ..option_text import parse_duration_ms
from ..table import Table
from .output import add_table_argument, emit, partition_text, print_rows


def _time(millis: int | None) -> str:
    return "" if millis is None else time.strftime("%Y-%m-%d %H:%M:%S", time.localtime(millis / 1000))


def _point_in_time(text: str) -> dt.datetime:
    """`2024-05-06`, `2024-05-06 13:00[:00]` or ISO `2024-05-06T13:00:00` (local time)."""
    try:
        return dt.datetime.fromisoformat(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected a local time such as '2024-05-06 13:00:00', got {text!r}")


def _duration(text: str) -> str:
    """A duration as Paimon's options take it (`7 d`, `1 h`), checked before anything runs."""
    try:
        parse_duration_ms(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected a duration such as '7 d', '1 h' or '30 min', got {text!r}")
    return text


def cmd_tag_list(args: argparse.Namespace) -> int:
    table = Table.open(args.table)
    rows = []
    for snap, names in table.tag_manager.tagged_snapshots():
        for name in names:
            tag = table.tag_manager.snapshot(name) if len(names) > 1 else snap
            rows.append({"tag": name, "snapshot": snap.id, "kind": snap.commit_kind,
                         "total_records": snap.total_record_count, "commit_time": _time(snap.time_millis),
                         "time_retained_s": tag.extra.get("tagTimeRetained")})
    emit(args, rows, lambda r: print_rows([{k: "" if v is None else v for k, v in row.items()} for row in r],
                                          ["tag", "snapshot", "kind", "total_records", "commit_time",
                                           "time_retained_s"]))
    return 0


def cmd_tag_create(args: argparse.Namespace) -> int:
    table = Table.open(args.table)
    snap = table.create_tag(args.name, args.snapshot, args.time_retained)
    emit(args, {"table": table.ref, "tag": args.name, "snapshot": snap.id},
         lambda r: print(f"created tag '{r['tag']}' of {r['table']} on snapshot {r['snapshot']}"))
    return 0


def cmd_tag_delete(args: argparse.Namespace) -> int:
    table = Table.open(args.table)
    deleted = table.delete_tag(args.name)
    emit(args, {"table": table.ref, "tag": args.name, "deleted_files": deleted},
         lambda r: print(f"deleted tag '{r['tag']}' of {r['table']} ({r['deleted_files']} files removed)"))
    return 0


def cmd_branch_list(args: argparse.Namespace) -> int:
    table = Table.open(args.table)
    rows = []
    for name in table.branches():
        branch = Table(table.file_io, table.path, branch=name)
        latest = branch.latest_snapshot()
        rows.append({"branch": name, "snapshots": len(branch.snapshots()), "latest": latest and latest.id,
                     "total_records": latest and latest.total_record_count, "tags": len(branch.tags())})
    emit(args, rows, lambda r: print_rows([{k: "" if v is None else v for k, v in row.items()} for row in r],
                                          ["branch", "snapshots", "latest", "total_records", "tags"]))
    return 0


def cmd_branch_create(args: argparse.Namespace) -> int:
    table = Table.open(args.table)
    branch = table.create_branch(args.name, args.tag)
    emit(args, {"table": table.ref, "branch": args.name, "tag": args.tag, "name": branch.name, "ref": branch.ref},
         lambda r: print(f"created branch '{r['branch']}' of {r['table']}"
                         + (f" from tag '{r['tag']}'" if r["tag"] else " (empty)")
                         + f"; the commands take it as {shlex.quote(r['ref'])} (quoted: a shell expands $)"))
    return 0


def cmd_branch_delete(args: argparse.Namespace) -> int:
    table = Table.open(args.table)
    table.delete_branch(args.name)
    emit(args, {"table": table.ref, "branch": args.name},
         lambda r: print(f"deleted branch '{r['branch']}' of {r['table']} (its own files go with remove-orphans)"))
    return 0


def cmd_fast_forward(args: argparse.Namespace) -> int:
    table = Table.open(args.table)
    snap = table.fast_forward(args.name, force=args.force)
    emit(args, {"table": table.ref, "branch": args.name, "snapshot": snap.id},
         lambda r: print(f"fast-forwarded {r['table']} to branch '{r['branch']}': latest snapshot {r['snapshot']}"))
    return 0


def cmd_rollback(args: argparse.Namespace) -> int:
    table = Table.open(args.table)
    numeric = args.target.isascii() and args.target.isdigit()  # '²' is a digit to str.isdigit, not to int()
    target: int | str = int(args.target) if numeric and not args.tag else args.target
    snap = table.rollback_to(target)
    emit(args, {"table": table.ref, "target": target, "snapshot": snap.id},
         lambda r: print(f"rolled {r['table']} back to snapshot {r['snapshot']}"))
    return 0


def cmd_expire(args: argparse.Namespace) -> int:
    table = Table.open(args.table)
    result = table.expire_snapshots(args.retain_max, args.retain_min, args.older_than, args.max_deletes)
    out = {"table": table.ref, "expired": result.expired, "earliest": result.earliest,
           "deleted_files": result.deleted_files}
    emit(args, out, lambda r: print(f"expired {r['expired']} snapshots of {r['table']}; earliest is now "
                                    f"{r['earliest']}; {r['deleted_files']} files removed"))
    return 0


def cmd_expire_partitions(args: argparse.Namespace) -> int:
    table = Table.open(args.table)
    if table.partition_keys and args.expiration_time is None and \
            table.options.get("partition.expiration-time") is None:
        raise InvalidOptionError(f"{table.ref} has no 'partition.expiration-time' option: pass --expiration-time "
                                 "(e.g. '7 d'), or set the option (`paimon-streaming alter TABLE --set "
                                 "'partition.expiration-time=7 d'`)")
    dropped = table.expire_partitions(args.expiration_time, args.dry_run)
    out = {"table": table.ref, "dry_run": args.dry_run, "partitions": dropped}

    def human(r: dict) -> None:
        for values in r["partitions"]:
            print(partition_text(values))
        verb = "would drop" if r["dry_run"] else "dropped"
        print(f"{verb} {len(r['partitions'])} expired partitions of {r['table']}")
    emit(args, out, human)
    return 0


def cmd_remove_orphans(args: argparse.Namespace) -> int:
    table = Table.open(args.table)
    result = table.remove_orphan_files(args.older_than, args.dry_run)
    out = {"table": table.ref, "dry_run": args.dry_run, "files": result.paths, "bytes": result.bytes}

    def human(r: dict) -> None:
        for path in r["files"]:
            print(path)
        verb = "would remove" if r["dry_run"] else "removed"
        print(f"{verb} {len(r['files'])} orphan files ({r['bytes']} bytes) of {r['table']}")
    emit(args, out, human)
    return 0


def _action(actions: argparse._SubParsersAction, name: str, text: str, func, what: str | None = None):
    """One ACTION of `tag` or `branch`: TABLE, then NAME (the tag's or branch's) when `what` says."""
    p = actions.add_parser(name, help=text)
    add_table_argument(p)
    if what is not None:
        p.add_argument("name", help=what)
    p.set_defaults(func=func)
    return p


def register(sub: argparse._SubParsersAction) -> None:
    tag = sub.add_parser("tag", help="create, delete and list tags (named snapshots)")
    tag_sub = tag.add_subparsers(dest="tag_command", required=True, metavar="ACTION")
    _action(tag_sub, "list", "list a table's tags", cmd_tag_list)
    p = _action(tag_sub, "create", "tag the latest (or a given) snapshot", cmd_tag_create,
                "tag name (not purely numeric, no '/', '\\' or control characters)")
    p.add_argument("--snapshot", type=int, help="snapshot id to tag (default: the latest)")
    p.add_argument("--time-retained", type=_duration, help="expire the tag this long after creation, e.g. '7 d'")
    _action(tag_sub, "delete", "delete a tag and the files only it kept alive", cmd_tag_delete, "tag name")

    branch = sub.add_parser("branch", help="create, delete, list and fast-forward branches (write one as "
                                           "TABLE$branch_<name>)")
    branch_sub = branch.add_subparsers(dest="branch_command", required=True, metavar="ACTION")
    _action(branch_sub, "list", "list a table's branches", cmd_branch_list)
    p = _action(branch_sub, "create", "create a branch, empty or from a tag", cmd_branch_create,
                "branch name (not 'main', not purely numeric, no '/')")
    p.add_argument("--tag", help="start the branch at this tag's snapshot (default: empty, the latest schema)")
    _action(branch_sub, "delete", "delete a branch", cmd_branch_delete, "branch name")
    p = _action(branch_sub, "fast-forward", "make the main branch what the branch is (publish it); refused when "
                "main has commits the branch does not hold", cmd_fast_forward, "branch name")
    p.add_argument("--force", action="store_true",
                   help="also when main has commits made after the snapshot the branch was made from: they are "
                        "dropped from main (as Java's fast-forward drops them)")

    p = sub.add_parser("rollback", help="make an older snapshot or a tag the latest again "
                                        "(later snapshots, tags and their files are removed)")
    add_table_argument(p)
    p.add_argument("target", help="snapshot id, or tag name")
    p.add_argument("--tag", action="store_true", help="TARGET is a tag name even if it looks like a number")
    p.set_defaults(func=cmd_rollback)

    p = sub.add_parser("expire", help="expire old snapshots now (defaults: the table's snapshot.* options, or "
                                      "longer changelog.* ones; below a changelog.* option, expired snapshots "
                                      "stay as changelogs)")
    add_table_argument(p)
    p.add_argument("--retain-max", type=int, help="keep at most this many snapshots")
    p.add_argument("--retain-min", type=int, help="keep at least this many snapshots")
    p.add_argument("--older-than", type=_point_in_time,
                   help="snapshots whose successor was committed before this local time may expire "
                        "(instead of snapshot.time-retained)")
    p.add_argument("--max-deletes", type=int, help="expire at most this many snapshots in this run")
    p.set_defaults(func=cmd_expire)

    p = sub.add_parser("expire-partitions", help="drop partitions older than partition.expiration-time now")
    add_table_argument(p)
    p.add_argument("--expiration-time", type=_duration, help="instead of the table's partition.expiration-time, e.g. '7 d'")
    p.add_argument("--dry-run", action="store_true", help="list the partitions, drop nothing")
    p.set_defaults(func=cmd_expire_partitions)

    p = sub.add_parser("remove-orphans", help="delete files no snapshot or tag references")
    add_table_argument(p)
    p.add_argument("--older-than", type=_point_in_time,
                   help="only files last modified before this local time (default: one day ago)")
    p.add_argument("--dry-run", action="store_true", help="list the files, delete nothing")
    p.set_defaults(func=cmd_remove_orphans)
