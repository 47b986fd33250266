"""Option values as Apache Paimon's Java parses their text (OptionsUtils, MemorySize, TimeUtils).

A value Java cannot parse makes a table Java cannot open, so these accept exactly what Java
does: numbers and booleans without surrounding spaces or `_` (Integer.parseInt, not Python's
int()), enum names in any case but nothing around them, sizes and durations trimmed.
"""
from __future__ import annotations

import re
from typing import Callable

_JAVA_TRIMMED = "".join(map(chr, range(33)))  # String.trim: every char up to ' ', controls included
_SIZE_UNITS = {"": 1, **{label: 1 << shift for shift, labels in (
    (0, ("b", "bytes")), (10, ("k", "kb", "kibibytes")), (20, ("m", "mb", "mebibytes")),
    (30, ("g", "gb", "gibibytes")), (40, ("t", "tb", "tebibytes"))) for label in labels}}
_LONG_MAX = (1 << 63) - 1
_DOUBLE = re.compile(r"[+-]?(?:(NaN|Infinity)|([0-9]+\.?[0-9]*(?:[eE][+-]?[0-9]+)?|\.[0-9]+(?:[eE][+-]?[0-9]+)?)"
                     r"|(0[xX](?:[0-9a-fA-F]+\.?|[0-9a-fA-F]*\.[0-9a-fA-F]+)[pP][+-]?[0-9]+))[fFdD]?")


def _duration_units() -> dict[str, int]:
    """Java's TimeUtils labels (a plural label also with an `s`), case-insensitive: label ->
    nanoseconds of one unit; durations are kept in milliseconds, floored as Java's toMillis."""
    units: dict[str, int] = {"": 10 ** 6}
    for nanos, singular, plural in ((86_400 * 10 ** 9, ("d",), ("day",)), (3_600 * 10 ** 9, ("h",), ("hour",)),
                                    (60 * 10 ** 9, ("min", "m"), ("minute",)), (10 ** 9, ("s",), ("sec", "second")),
                                    (10 ** 6, ("ms",), ("milli", "millisecond")),
                                    (10 ** 3, ("µs",), ("micro", "microsecond")), (1, ("ns",), ("nano", "nanosecond"))):
        for label in singular + plural + tuple(p + "s" for p in plural):
            units[label] = nanos
    return units


_DURATION_UNITS = _duration_units()


def java_trim(text: str) -> str:
    """Java's String.trim: characters up to ' ' off both ends (not a no-break or other Unicode space)."""
    return text.strip(_JAVA_TRIMMED)


def parse_int(text: str, bits: int = 32) -> int:
    """Java's Integer.parseInt (`bits` 64: Long.parseLong), as Paimon's int and long options:
    an optional sign and decimal digits, no spaces, no `_`, within the Java type's range."""
    digits = text[1:] if text[:1] in ("+", "-") else text
    if not digits.isdecimal() or max(digits) > "\uffff":  # Java's digits are chars: no astral ones
        raise ValueError("expected a whole number (digits with an optional sign, no spaces or '_', as Java parses it)")
    value = int(text)
    if not -(1 << (bits - 1)) <= value < 1 << (bits - 1):
        raise ValueError(f"must fit a Java {'int' if bits == 32 else 'long'} (Paimon's type of the option)")
    return value


def parse_long(text: str) -> int:
    return parse_int(text, 64)


def parse_bool(text: str) -> bool:
    """Java's OptionsUtils.convertToBoolean: true or false in any case, nothing around it."""
    upper = text.upper()
    if upper not in ("TRUE", "FALSE"):
        raise ValueError("expected true or false (any case, no spaces around it, as Java parses it)")
    return upper == "TRUE"


def parse_double(text: str) -> float:
    """Java's Double.parseDouble: trimmed, a decimal or hex float with an optional f/d suffix,
    NaN or Infinity; no `_`, no `inf`."""
    trimmed = java_trim(text)
    m = _DOUBLE.fullmatch(trimmed)
    if not m:
        raise ValueError("expected a number such as 0.5 (as Java's Double.parseDouble)")
    sign = -1.0 if trimmed.startswith("-") else 1.0
    if m.group(1):
        return sign * float("nan" if m.group(1) == "NaN" else "inf")
    return sign * (float(m.group(2)) if m.group(2) else float.fromhex(m.group(3)))


def choice(*allowed: str) -> Callable[[str], str]:
    """An enum option as Java's OptionsUtils.convertToEnum (and a file format's lookup): one of
    `allowed` in any case, nothing around it; returns it as listed."""
    by_upper = {a.upper(): a for a in allowed}

    def parse(text: str) -> str:
        value = by_upper.get(text.upper())
        if value is None:
            raise ValueError(f"expected one of {', '.join(allowed)} (any case, no spaces around it)")
        return value
    return parse


def exact_choice(*allowed: str) -> Callable[[str], str]:
    """A string option Java compares as written (Avro's codec names, a partition expiration
    strategy): one of `allowed`, in its case."""
    def parse(text: str) -> str:
        if text not in allowed:
            raise ValueError(f"expected one of {', '.join(allowed)} (as written: Java compares them in this case)")
        return text
    return parse


def _number_and_unit(text: str, what: str) -> tuple[int, str]:
    """MemorySize's and TimeUtils' split of trimmed text: ASCII digits, then a unit trimmed and lower-cased."""
    trimmed = java_trim(text)
    digits = len(trimmed) - len(trimmed.lstrip("0123456789"))
    if not digits:
        raise ValueError(f"expected {what}: a number, then a unit")
    value = int(trimmed[:digits])
    if value > _LONG_MAX:
        raise ValueError(f"{value} is beyond a Java long")
    return value, java_trim(trimmed[digits:]).lower()


def parse_memory_size(text: str) -> int:
    """Paimon's MemorySize, in bytes: '128 mb', '8MB', '1 mebibytes', '1024' (bytes)."""
    value, unit = _number_and_unit(text, "a size such as 128 mb")
    if unit not in _SIZE_UNITS:
        raise ValueError(f"unknown size unit {unit!r}; use b, kb, mb, gb or tb")
    size = value * _SIZE_UNITS[unit]
    if size > _LONG_MAX:
        raise ValueError("beyond a Java long of bytes")
    return size


def parse_duration_ms(text: str) -> int:
    """Paimon's Duration (TimeUtils.parseDuration), in milliseconds: '1 h', '30 min', '500 ms',
    '7 days', ' 2 H '; a plain number is milliseconds."""
    value, unit = _number_and_unit(text, "a duration such as 1 h, 30 s or 7 days")
    if unit not in _DURATION_UNITS:
        raise ValueError(f"expected a duration such as 1 h, 30 s or 7 days, not {text!r}")
    ms = value * _DURATION_UNITS[unit] // 10 ** 6
    if ms > _LONG_MAX:
        raise ValueError("beyond a Java long of milliseconds")
    return ms


# Character.isWhitespace: the Unicode space, line and paragraph separators but the no-break
# ones, and the ASCII controls \t to \r and \x1c to \x1f
_JAVA_WHITESPACE = frozenset("\t\n\x0b\x0c\r\x1c\x1d\x1e\x1f \u1680\u2000\u2001\u2002\u2003\u2004\u2005\u2006"
                             "\u2008\u2009\u200a\u2028\u2029\u205f\u3000")


def split_escaped(text: str, delimiter: str) -> list[str]:
    """Java's StructuredOptionsSplitter.splitEscaped: `text` split on `delimiter`, a part either
    quoted (' or ", a quote doubled inside, nothing but spaces after it) or not (trimmed, quotes
    inside it kept); whitespace before a part is skipped, a delimiter leading or trailing the
    text gives no part, two in a row an empty one."""
    tokens: list[tuple[str, str]] = []  # (kind: quoted, plain or the delimiter, text)
    i = 0
    while i < len(text):
        c = text[i]
        if c in "'\"":
            part, i = [], i + 1
            while True:
                if i >= len(text):
                    raise ValueError("quoting was not closed (Java's 'Quoting was not closed properly')")
                if text[i] == c and text[i + 1:i + 2] == c:
                    part.append(c)
                    i += 2
                elif text[i] == c:
                    i += 1
                    break
                else:
                    part.append(text[i])
                    i += 1
            tokens.append(("quoted", "".join(part)))
        elif c == delimiter:
            tokens.append((c, c))
            i += 1
        elif c in _JAVA_WHITESPACE:
            i += 1
        else:
            end = text.find(delimiter, i)
            end = len(text) if end < 0 else end
            tokens.append(("plain", java_trim(text[i:end])))
            i = end
    parts = []
    for (kind, value), following in zip(tokens, tokens[1:] + [None]):
        if kind == "quoted" and following is not None and following[0] != delimiter:
            raise ValueError(f"a quoted part {value!r} is followed by more than spaces before the next "
                             f"{delimiter!r} (Java's 'Illegal quoting')")
        if kind != delimiter:
            parts.append(value)
        elif following is not None and following[0] == delimiter:
            parts.append("")
    return parts


def parse_map(text: str) -> dict[str, str]:
    """A map option as Java's OptionsUtils.convertToProperties reads it: `key:value` entries
    split on ',' then ':' (split_escaped, so either may be quoted); an entry without exactly one
    ':' (an empty one too) or a key given twice is refused, as Java refuses it."""
    entries: dict[str, str] = {}
    for entry in split_escaped(text, ","):
        pair = split_escaped(entry, ":")
        if len(pair) != 2:
            raise ValueError(f"entry {entry!r} is not one key:value pair (Java's 'Map item is not a key-value pair')")
        key, value = pair
        if key in entries:
            raise ValueError(f"key {key!r} is given twice (Java's 'Duplicate key')")
        entries[key] = value
    return entries
