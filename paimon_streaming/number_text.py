"""Decimal text as integers and floats, strictly.

Arrow's own cast from text takes hexadecimal into an integer and wraps it (`'0xff'` is an
INT8's -1, `'0x10'` 16) and turns a finite number beyond a FLOAT into infinity (`'1e39'`): a
silently wrong value wherever text becomes a number. `text_numbers` takes only decimal text,
a sign, ASCII digits (an integer), a '.' and an exponent, or inf/infinity/nan (a float), and
tells which texts were not such a number of the type, so each caller refuses them (or, where
its source's rules say so, reads them as null).
"""
from __future__ import annotations

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

INTEGER = r"^[+-]?[0-9]+$"
FLOAT = r"^[+-]?([0-9]+\.?[0-9]*|\.[0-9]+)([eE][+-]?[0-9]+)?$|^[+-]?(?i:inf|infinity|nan)$"
_INFINITY = r"^[+-]?(?i:inf|infinity)$"


def text_numbers(text: pa.Array, target: pa.DataType) -> tuple[pa.Array, np.ndarray]:
    """`text` as numbers of `target` (an integer or floating type), null where a text is no
    number of it, and which texts those were (nulls are not): no decimal shape, an integer
    beyond the type's range, a finite float text beyond it (Arrow's infinity)."""
    text = pc.cast(text, pa.string())
    integer = pa.types.is_integer(target)
    shaped = pc.fill_null(pc.match_substring_regex(text, INTEGER if integer else FLOAT), True)
    if integer:
        digits = pc.replace_substring_regex(text, r"^\+?(-?)0*([0-9])", r"\1\2")   # no leading zeros, no '+'
        shaped = pc.and_(shaped, pc.fill_null(pc.less_equal(pc.utf8_length(digits), 20), True))
        wide = pc.cast(pc.if_else(shaped, digits, pa.scalar(None, pa.string())), pa.decimal128(21, 0))
        info = np.iinfo(target.to_pandas_dtype())
        fits = pc.and_(pc.greater_equal(wide, pa.scalar(int(info.min), wide.type)),
                       pc.less_equal(wide, pa.scalar(int(info.max), wide.type)))
        good = pc.and_(shaped, pc.fill_null(fits, True))
        numbers = pc.cast(pc.if_else(good, wide, pa.scalar(None, wide.type)), target)
    else:
        numbers = pc.cast(pc.if_else(shaped, text, pa.scalar(None, pa.string())), target)  # correctly rounded
        infinite = pc.fill_null(pc.and_(pc.is_inf(numbers), pc.invert(pc.match_substring_regex(text, _INFINITY))),
                                False)
        good = pc.and_(shaped, pc.invert(infinite))
        numbers = pc.if_else(good, numbers, pa.scalar(None, target))
    bad = pc.invert(good).to_numpy(zero_copy_only=False)
    return numbers, bad
