"""How Java prints single values where its text is stored or compared: Float/Double.toString
(partition directory names, CDC values written as text) and Jackson's JSON strings (a variant's
`toJson`, CDC documents as text). A column's numbers at once: `java_casts.java_float_text`.
"""
from __future__ import annotations

import decimal
import json
import math
import re
import struct


def java_float_str(value: float, single: bool) -> str:
    """Java's Float/Double.toString of one value (partition names, CDC text); a column's values
    at once: `java_casts.java_float_text`."""
    if math.isnan(value):
        return "NaN"
    if math.isinf(value):
        return "Infinity" if value > 0 else "-Infinity"
    if value == 0:
        return "-0.0" if math.copysign(1, value) < 0 else "0.0"
    text = _java_digits(value, single)
    mag = abs(value)
    if 1e-3 <= mag < 1e7:
        whole, _, frac = format(decimal.Decimal(text), "f").partition(".")
        return f"{whole}.{frac.rstrip('0') or '0'}"
    digits, _, exp = f"{decimal.Decimal(text):e}".partition("e")
    if "." not in digits:
        digits += ".0"
    digits = digits.rstrip("0") if digits.endswith("0") and not digits.endswith(".0") else digits
    return f"{digits}E{int(exp)}"


def _java_digits(value: float, single: bool) -> str:
    """The decimal digits Java prints: the fewest that identify the value among floats (or
    doubles), but at least two, correctly rounded (Double.MIN_VALUE is 4.9E-324, not 5E-324;
    Float.MIN_VALUE 1.4E-45)."""
    for count in range(2, 10 if single else 18):
        text = f"{value:.{count - 1}e}"
        back = float(text)
        if (_as_float32(back) == _as_float32(value)) if single else back == value:
            return text
    return repr(value)


def _as_float32(value: float) -> float | None:
    try:
        return struct.unpack("<f", struct.pack("<f", value))[0]
    except OverflowError:  # beyond Float.MAX_VALUE
        return None


_SHORT_ESCAPE = re.compile(r"\\\\|\\u00[0-9a-f]{2}")


def jackson_quoted(text: str) -> str:
    """`text` as a JSON string, as Jackson writes it (Java's and Spark's toJson): control characters as
    \\u00XX in upper case hex (Python's json writes lower case), everything else as json does."""
    quoted = _quoted(text)  # what json.dumps(text, ensure_ascii=False) writes
    return _SHORT_ESCAPE.sub(lambda m: m[0][:4] + m[0][4:].upper(), quoted) if "\\u00" in quoted else quoted


_quoted = json.encoder.encode_basestring


# java.lang.Character.isWhitespace: Unicode space, line and paragraph separators except the
# non-breaking ones (U+00A0, U+2007, U+202F), and the ASCII controls \t \n \v \f \r \x1c-\x1f.
# Python's str.isspace also counts the non-breaking spaces and U+0085.
_JAVA_WHITESPACE = frozenset(
    "\t\n\x0b\x0c\r\x1c\x1d\x1e\x1f \u1680\u2000\u2001\u2002\u2003\u2004\u2005\u2006\u2008\u2009\u200a"
    "\u2028\u2029\u205f\u3000")


def java_blank(text: str) -> bool:
    """Whether Java's StringUtils.isNullOrWhitespaceOnly takes `text` as blank (a partition value
    written under the default partition name)."""
    return all(c in _JAVA_WHITESPACE for c in text)
