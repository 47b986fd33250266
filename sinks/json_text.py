"""JSON values as the text Paimon's CDC parsers make of them, for records whose values are not
of the JSON type a column's encoding reads (`change_events.read_loosely`).

Paimon's parsers for Maxwell, Canal, GoldenGate and AWS DMS (`AbstractJsonRecordParser`) turn
every value of a row into text, then cast that text to the column's type: a number in a STRING
column is stored as its text, "1.50" in a DECIMAL column is 1.50. Their records are read with
Jackson keeping floats as BigDecimal without trailing zeros, so a number's text is that
BigDecimal's `toString` (1.50 is 1.5, 1e20 `1E+20`, 100.0 `1E+2`, -0.0 `0`), an integer's its
digits; an object or array becomes compact JSON as Jackson writes it. The rewrite parses each record in Python (the error path of the vectorized
reading only), changing only the named fields of its row images.
"""
from __future__ import annotations

import decimal
import re
from typing import Any, Collection, Sequence

from .json_maps import DECODER, Number, write_any

_NON_FINITE = ("NaN", "Infinity", "-Infinity")
# Jackson's escapes: the short ones, other control characters as \u00XX (upper-case hex)
_ESCAPES = {chr(i): f"\\u{i:04X}" for i in range(0x20)} | {
    '"': '\\"', "\\": "\\\\", "\b": "\\b", "\t": "\\t", "\f": "\\f", "\n": "\\n", "\r": "\\r"}
_ESCAPED = re.compile(r'[\x00-\x1f"\\]')


def java_text(value: Any) -> str | None:
    """A parsed JSON value (json_maps.DECODER's) as Paimon's CDC text of it."""
    kind = type(value)
    if value is None or kind is str:
        return value
    if kind is bool:
        return "true" if value else "false"
    if kind is int:
        return str(value)
    if kind is Number:
        return str(value) if value in _NON_FINITE else _stripped(decimal.Decimal(value))
    return _jackson(value)


def _stripped(number: decimal.Decimal) -> str:
    """BigDecimal's text of a number as Jackson's JSON tree holds it: trailing zeros stripped
    (1.50 is 1.5, 100.0 1E+2), any zero 0 (Jackson's JsonNodeFactory without exact decimals)."""
    if number.is_zero():
        return "0"
    sign, digits, exponent = number.as_tuple()
    kept = len(digits)
    while digits[kept - 1] == 0:
        kept -= 1
    return str(decimal.Decimal((sign, digits[:kept], exponent + len(digits) - kept)))


def _jackson(value: Any) -> str:
    """Compact JSON as Jackson writes a parsed value."""
    kind = type(value)
    if kind is dict:
        return "{" + ",".join(f"{_quoted(k)}:{_jackson(v)}" for k, v in value.items()) + "}"
    if kind is list:
        return "[" + ",".join(map(_jackson, value)) + "]"
    if kind is str:
        return _quoted(value)
    return "null" if value is None else java_text(value)


def _quoted(text: str) -> str:
    return '"' + _ESCAPED.sub(lambda m: _ESCAPES[m.group()], text) + '"'


def rewritten(buffer: bytes, images: Sequence[str], names: Collection[str], nested: bool = True) -> bytes:
    """Newline-delimited JSON records with the values of fields `names` in their row images
    (the top-level fields `images`, each an object or a list of them) as their `java_text`;
    objects and arrays only when `nested` (else left for the reader to refuse). Every other
    value keeps its text."""
    wanted = set(names)
    lines = []
    for line in buffer.split(b"\n"):
        if not line.strip():
            continue
        record = DECODER.decode(line.decode())
        for image in images if type(record) is dict else ():
            rows = record.get(image)
            for row in rows if type(rows) is list else [rows]:
                if type(row) is not dict:
                    continue
                for name in wanted.intersection(row):
                    value = row[name]
                    if type(value) is not str and (nested or type(value) not in (dict, list)):
                        row[name] = java_text(value)
        lines.append(write_any(record))
    return ("\n".join(lines) + "\n").encode()
