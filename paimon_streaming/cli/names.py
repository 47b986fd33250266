"""Column names on the command line, as Spark SQL writes them: plain (no spaces, dots, '=' or
backticks) or in backticks (`` `user.id` ``, a backtick inside doubled); a nested field's path
joins names with dots. `alter` and `update --set` read them alike."""
from __future__ import annotations

import re

NAME = r"(?:`(?:[^`]|``)*`|[^\s`.=]+)"
NAME_PATH = rf"{NAME}(?:\.{NAME})*"
QUOTING = "in backticks if it holds a dot, a space, '=' or a backtick, as in Spark SQL: `user.id`"


def unquoted(name: str) -> str:
    return name[1:-1].replace("``", "`") if name.startswith("`") else name


def column_path(text: str) -> str | tuple[str, ...]:
    """`addr.zip` names the nested field zip of ROW column addr; `` `user.id` `` the column
    named user.id."""
    if not re.fullmatch(NAME_PATH, text.strip()):
        raise ValueError(f"expected a column name ({QUOTING}), got {text!r}")
    parts = tuple(unquoted(m) for m in re.findall(NAME, text.strip()))
    return parts[0] if len(parts) == 1 else parts


def split_pair(text: str, what: str) -> tuple[str, str]:
    """NAME=VALUE: the NAME (plain or in backticks, which may hold '='; spaces around it
    ignored) as written, and everything after its '='."""
    m = re.match(rf"\s*({NAME_PATH})?\s*=", text)
    if not m or not m[1]:
        raise ValueError(f"expected {what}, got {text!r}")  # reported by main, as every argument error
    return m[1], text[m.end():]
