"""Decimals from text, exact or refused (or rounded HALF_UP, as Java's casts round).

Arrow's string-to-decimal cast (and its JSON reader's conversion of a number into a decimal
field) parses a text at the text's own precision and scale, then rescales it with a multiply
that wraps at 128/256 bits and checks the precision of the wrapped value: '-7e36' into
DECIMAL(38, 2) comes out as another number, '1e-41' as 0.00. It is right for a plain text (no
exponent, at most 38 digits, 76 for a decimal256) whose value fits the target. `text_decimals`
lets Arrow cast only those (the common case, vectorized), refuses plain texts that do not fit
from their digit counts, and reads the rest (exponents, long texts) with Python's decimal.
"""
from __future__ import annotations

import decimal

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

__all__ = ["DecimalTextRefused", "SYNTAX", "text_decimals"]

SYNTAX = r"^[+-]?(\d+\.?\d*|\.\d+)([eE][+-]?\d+)?$"  # Java's `new BigDecimal(text)`
_PARTS = r"^[+-]?(?P<zeros>0*)(?P<int>\d*)(?:\.(?P<frac>\d*?)0*)?$"  # a plain text's (significant) digits
_EXACT = decimal.Context(prec=200, Emax=decimal.MAX_EMAX, Emin=decimal.MIN_EMIN, traps=[decimal.InvalidOperation])


class DecimalTextRefused(ValueError):
    """A text that is no decimal, or whose value the target cannot hold: `text` is the value."""

    def __init__(self, text: str, why: str) -> None:
        super().__init__(f"{text!r} {why}")
        self.text = text


def text_decimals(text: pa.Array, target: pa.DataType, half_up: bool = False,
                  beyond_null: bool = False) -> pa.Array:
    """`text` (a string array; nulls stay null) as decimals of `target`. Each value exactly, or
    with `half_up` rounded half away from zero to the scale; DecimalTextRefused for a text that
    is no decimal, that has nonzero digits beyond the scale (unless `half_up`), or whose value
    needs more digits before the point than the precision leaves (a null with `beyond_null`)."""
    text = pc.cast(text, pa.string())
    rest = _flags(text.is_valid()) & ~_quick(text, target)
    try:
        out = pc.cast(pc.if_else(pa.array(rest), "0", text) if rest.any() else text, target)
    except pa.ArrowInvalid:  # a text that is no number (Arrow's syntax is Java's, without exponents)
        return _analysed(text, target, half_up, beyond_null)
    if not rest.any():
        return out
    return pc.replace_with_mask(out, pa.array(rest),
                                _analysed(text.filter(pa.array(rest)), target, half_up, beyond_null))


def _quick(text: pa.Array, target: pa.DataType) -> np.ndarray:
    """The texts Arrow casts exactly, by one regex: no exponent, at most p - s digits before the
    point (leading zeros too, but for a single 0) and s after it (trailing zeros too)."""
    p, s = target.precision, target.scale
    return _flags(pc.match_substring_regex(text, r"^[+-]?(0|\d{0,%d})(\.\d{0,%d})?$" % (p - s, s)))


def _flags(mask: pa.Array) -> np.ndarray:
    return pc.fill_null(mask, False).to_numpy(zero_copy_only=False)


def _analysed(text: pa.Array, target: pa.DataType, half_up: bool, beyond_null: bool) -> pa.Array:
    """`text_decimals` of texts the quick test leaves: each parsed into its digits (regex), the
    plain ones cast (or rounded) by Arrow where they fit its width, the others in Python."""
    p, s = target.precision, target.scale
    valid = _flags(text.is_valid())
    syntax = ~_flags(pc.invert(pc.match_substring_regex(text, SYNTAX)))
    if not syntax.all():
        raise DecimalTextRefused(text[int(np.argmin(syntax))].as_py(), "is no decimal number")
    parts = pc.extract_regex(text, _PARTS)  # null where the text has an exponent
    plain = parts.is_valid().to_numpy(zero_copy_only=False)
    whole = _lengths(parts.field("int"))
    fraction = _lengths(parts.field("frac"))
    width = 38 if pa.types.is_decimal128(target) else 76
    room = width - s - (2 if half_up else 0)  # Arrow scales the digits before the point up to the scale (+ 1, a carry)
    beyond = plain & (whole > p - s)
    fast = valid & plain & ~beyond & (_lengths(parts.field("zeros")) + whole <= room)
    if half_up:
        out, fast, carried = _rounded(text, fast, target, width)
        beyond |= carried
    else:
        lost = plain & ~beyond & (fraction > s)
        if lost.any():
            raise DecimalTextRefused(text[int(np.argmax(lost))].as_py(), f"has more digits after the point than the "
                                     f"scale of DECIMAL({p}, {s}) (no rounding here)")
        fast &= _lengths(text) <= width  # trailing zeros too: Arrow parses all the digits
        out = pc.cast(pc.if_else(pa.array(fast), text, "0"), target)
    if beyond.any() and not beyond_null:
        raise DecimalTextRefused(text[int(np.argmax(beyond))].as_py(), f"has more than {p - s} digits before the "
                                 f"point, beyond DECIMAL({p}, {s})")
    slow = valid & ~fast & ~beyond
    nulls = beyond | ~valid
    if slow.any():
        rows = np.flatnonzero(slow)
        values = [_exact(t, p, s, half_up) for t in text.take(pa.array(rows)).to_pylist()]
        gone = np.array([v is None for v in values])
        if gone.any() and not beyond_null:
            raise DecimalTextRefused(text[int(rows[np.argmax(gone)])].as_py(), f"is beyond DECIMAL({p}, {s})")
        nulls[rows[gone]] = True
        out = pc.replace_with_mask(out, pa.array(slow), pa.array([v or 0 for v in values], target))
    return pc.if_else(pa.array(nulls), pa.nulls(len(out), target), out) if nulls.any() else out


def _lengths(strings: pa.Array) -> np.ndarray:
    return pc.fill_null(pc.binary_length(strings), 0).to_numpy(zero_copy_only=False)


def _rounded(text: pa.Array, fast: np.ndarray, target: pa.DataType,
             width: int) -> tuple[pa.Array, np.ndarray, np.ndarray]:
    """HALF_UP of the plain texts that fit before the point: each cut to one digit beyond the
    scale (enough for HALF_UP), cast exactly, rounded. The values, the rows cast (`fast`,
    narrowed) and those the rounding carried beyond the precision (99.995 into DECIMAL(4, 2))."""
    p, s = target.precision, target.scale
    cut = pc.replace_substring_regex(text, r"^([+-]?\d*\.\d{%d})\d+$" % (s + 1), r"\1")
    backing = pa.decimal128 if width == 38 else pa.decimal256
    exact = pc.cast(pc.if_else(pa.array(fast), cut, "0"), backing(width, s + 1))
    rounded = pc.cast(pc.round(exact, s, round_mode="half_towards_infinity"), backing(width, s))  # last digit 0
    largest = pa.scalar(decimal.Decimal((0, (9,) * p, -s)), rounded.type)  # p nines
    carried = _flags(pc.greater(pc.abs(rounded), largest))
    return pc.cast(pc.if_else(pa.array(carried), pa.scalar(0, rounded.type), rounded), target), fast & ~carried, carried


def _exact(text: str, p: int, s: int, half_up: bool) -> decimal.Decimal | None:
    """One text's value at scale `s` (None: beyond the precision); DecimalTextRefused when digits
    beyond the scale are nonzero and not `half_up`."""
    value = decimal.Decimal(text)
    if value and value.adjusted() >= p - s:
        return None
    if value and value.adjusted() < -s - 1:
        if not half_up:
            raise DecimalTextRefused(text, f"has nonzero digits beyond the scale of DECIMAL({p}, {s})")
        return decimal.Decimal(0).scaleb(-s)
    scaled = value.quantize(decimal.Decimal(1).scaleb(-s), decimal.ROUND_HALF_UP, _EXACT)
    if scaled != value and not half_up:
        raise DecimalTextRefused(text, f"has nonzero digits beyond the scale of DECIMAL({p}, {s})")
    return None if scaled.adjusted() >= p - s and scaled else scaled
