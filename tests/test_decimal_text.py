"""`text_decimals` (decimal_text.py): every text exactly as Python's decimal reads it at the
target's scale, rounded HALF_UP when asked, or refused; never the wrapped value Arrow's
string-to-decimal cast gives for a text beyond the target ('-7e36' into DECIMAL(38, 2))."""
from __future__ import annotations

import decimal
import random

import pyarrow as pa
import pytest

from paimon_streaming.decimal_text import DecimalTextRefused, text_decimals

D = decimal.Decimal


@pytest.mark.parametrize("text, target", [
    ("-7e36", pa.decimal128(38, 2)), ("-83920793622.98", pa.decimal128(38, 38)), ("99999999e31", pa.decimal128(38, 2)),
    ("1e-41", pa.decimal128(38, 2)), ("+0.80636083778353374068124158683449786907366", pa.decimal128(38, 2)),
    ("+671816728448920199344990046979852126824309470.0354147", pa.decimal256(76, 40)),
    ("19680049746590282074754869584828949.48", pa.decimal128(38, 22)), ("1.5", pa.decimal128(38, 38)),
    ("1e", pa.decimal128(10, 2)), ("", pa.decimal128(10, 2)), (" 1", pa.decimal128(10, 2)), ("1e999999999", pa.decimal128(10, 2)),
])
def test_texts_beyond_the_target_are_refused(text, target):
    with pytest.raises(DecimalTextRefused) as info:
        text_decimals(pa.array(["0", text, None]), target)
    assert info.value.text == text


def test_texts_the_target_holds():
    target = pa.decimal128(10, 2)
    texts = ["1.000000000000000000000000000000000000000000000", "-7e2", "1E-2", "+.5", "00000000000000000000000000000000000000042.1",
             "0e999999999", "12345678.9", "-0", None]
    assert text_decimals(pa.array(texts), target).to_pylist() == \
        [D("1.00"), D("-700.00"), D("0.01"), D("0.50"), D("42.10"), D("0.00"), D("12345678.90"), D("0.00"), None]
    assert text_decimals(pa.array(["0.99999999999999999999999999999999999999"]), pa.decimal128(38, 38)).to_pylist() \
        == [D("0.99999999999999999999999999999999999999")]


def test_half_up():
    target = pa.decimal128(4, 2)
    got = text_decimals(pa.array(["1.005", "-1.005", "1.0049999", "1e-41", "5e-3", "99.995", None]), target,
                        half_up=True, beyond_null=True)
    assert got.to_pylist() == [D("1.01"), D("-1.01"), D("1.00"), D("0.00"), D("0.01"), None, None]
    with pytest.raises(DecimalTextRefused, match="beyond"):
        text_decimals(pa.array(["99.995"]), target, half_up=True)


def _random_text(rnd: random.Random) -> str:
    digits = rnd.choice([0, 1, 2, 5, 10, 20, 30, 36, 37, 38, 39, 40, 45, 60, 75, 76, 77, 80, 120])
    whole = "".join(rnd.choice("0123456789") for _ in range(rnd.randint(0, digits)))
    fraction = "".join(rnd.choice("0123456789") for _ in range(rnd.randint(0, max(0, digits - len(whole)))))
    if rnd.random() < .2:
        whole = "0" * rnd.randint(1, 40) + whole
    if rnd.random() < .2:
        fraction += "0" * rnd.randint(1, 40)
    if not whole and not fraction:
        whole = "0"
    text = rnd.choice(["", "-", "+"]) + whole + ("." + fraction if fraction or rnd.random() < .1 else "")
    if rnd.random() < .3:
        text += rnd.choice("eE") + rnd.choice(["", "+", "-"]) + str(rnd.choice([rnd.randint(0, 90),
                                                                                 rnd.randint(0, 10 ** 12)]))
    return text


def _expected(text: str, p: int, s: int, half_up: bool) -> D | None:
    """Python's decimal: the value at scale s (None: refused)."""
    value = D(text)
    if value and value.adjusted() > p + 5:
        return None
    if value and value.adjusted() < -s - 5:
        return D(0).scaleb(-s) if half_up else None
    scaled = value.quantize(D(1).scaleb(-s), decimal.ROUND_HALF_UP, decimal.Context(prec=300))
    return None if scaled != value and not half_up or abs(scaled) >= 10 ** (p - s) else scaled


@pytest.mark.parametrize("seed", range(4))
def test_every_text_as_pythons_decimal_reads_it(seed):
    rnd = random.Random(seed)
    for _ in range(400):
        wide = rnd.random() < .3
        p = rnd.randint(1, 76 if wide else 38)
        s = rnd.randint(0, p)
        target = (pa.decimal256 if wide else pa.decimal128)(p, s)
        half_up = rnd.random() < .4
        texts = [_random_text(rnd) for _ in range(rnd.randint(1, 6))]
        expected = [_expected(t, p, s, half_up) for t in texts]
        for text, value in zip(texts, expected):
            try:
                got = text_decimals(pa.array([text, None]), target, half_up=half_up).to_pylist()
            except DecimalTextRefused:
                got = [None, None]
            assert got == [value, None], (text, target, half_up)
        if None not in expected:  # a batch mixing the quick, the analysed and the Python paths
            assert text_decimals(pa.array(texts), target, half_up=half_up).to_pylist() == expected
