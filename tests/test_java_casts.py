"""`java_cast` (java_casts.py) at the edges of Java 1.4.2's cast rules: the values it gives where
Java's casts give them, and `CastRefused` (the reader then names the file and column) where
Java's read fails or its result is not reproduced. The long differential hunt against Java is
tests/test_java_cast_hunt.py."""
from __future__ import annotations

import datetime as dt
import decimal

import pyarrow as pa
import pytest

from paimon_streaming.java_casts import CastRefused, java_cast
from paimon_streaming.types import parse_atomic


def cast(values, arrow_type, old: str, new: str) -> list:
    return java_cast(pa.array(values, arrow_type), parse_atomic(old), parse_atomic(new)).to_pylist()


def test_values_java_casts_give():
    # a dictionary-encoded column (as Parquet may decode one) casts as its values
    strings = pa.array(["1", "-2", None, "1"]).dictionary_encode()
    assert java_cast(strings, parse_atomic("STRING"), parse_atomic("INT")).to_pylist() == [1, -2, None, 1]
    # Java's BinaryString -> boolean: t/true/y/yes/1 and f/false/n/no/0, any case
    assert cast(["t", "No", None, "YES", "0"], pa.string(), "STRING", "BOOLEAN") == [True, False, None, True, False]
    # a DECIMAL of scale 0 prints its digits (BigDecimal.toPlainString)
    assert cast([decimal.Decimal("123"), decimal.Decimal("-5"), None], pa.decimal128(10, 0), "DECIMAL(10, 0)",
                "STRING") == ["123", "-5", None]
    # subnormal values with two digits where the shortest text has one, as Java prints them
    assert cast([1e-40, 1e-45, 3.5e-40], pa.float32(), "FLOAT", "STRING") == ["1.0E-40", "1.4E-45", "3.5E-40"]
    assert cast([5e-324, -1e-310], pa.float64(), "DOUBLE", "STRING") == ["4.9E-324", "-1.0E-310"]
    # to an unbounded VARBINARY nothing is cut
    assert cast([b"\x00\x01\x02", None], pa.binary(), "BINARY(3)", "BYTES") == [b"\x00\x01\x02", None]


def test_text_to_decimal_at_any_length_and_exponent():
    """STRING -> DECIMAL read as Java's `new BigDecimal(text)` HALF_UP, null beyond the precision,
    whatever the text's length or exponent (a text of over 60 characters was refused; Arrow's cast
    wraps '-7e36' into DECIMAL(38, 2) to another number)."""
    texts = ["0." + "0" * 70 + "5", "1" + "0" * 70, "-7e36", "-7e35", "1e-41", "1.005", "-83920793622.98", None]
    assert cast(texts, pa.string(), "STRING", "DECIMAL(38, 2)") == \
        [decimal.Decimal("0.00"), None, None, decimal.Decimal("-7" + "0" * 35 + ".00"),
         decimal.Decimal("0.00"), decimal.Decimal("1.01"), decimal.Decimal("-83920793622.98"), None]
    assert cast(["-83920793622.98", "0.125"], pa.string(), "STRING", "DECIMAL(38, 38)") == \
        [None, decimal.Decimal("0.12500000000000000000000000000000000000")]


def test_hexadecimal_text_to_floats_as_javas_parse_double():
    """Java's cast of STRING to DOUBLE/FLOAT is Double.parseDouble / Float.parseFloat, which read
    hexadecimal floats (`0x1p3` is 8.0); they were refused."""
    assert cast(["0x1p3", " -0X1.8P1d ", "0x.8p0", "0x1p99999", None], pa.string(), "STRING", "DOUBLE") == \
        [8.0, -3.0, 0.5, float("inf"), None]
    assert cast(["0x1p3f", "1.5"], pa.string(), "STRING", "FLOAT") == [8.0, 1.5]


@pytest.mark.parametrize("values, arrow_type, old, new, why", [
    ([dt.datetime(1969, 12, 31, 23, 0)], pa.timestamp("ms"), "TIMESTAMP(3)", "TIME", "before 1970"),
    ([2**62], pa.int64(), "BIGINT", "TIMESTAMP(3)", "seconds overflow Java's milliseconds"),
    ([decimal.Decimal(10) ** 20], pa.decimal128(38, 0), "DECIMAL(38, 0)", "BIGINT", "beyond BIGINT's range"),
    ([b"\xff\xfe"], pa.binary(), "BYTES", "STRING", "UTF-8"),
    (["99999999999999999999"], pa.string(), "STRING", "BIGINT", "overflows BIGINT"),
    ([dt.date(1, 1, 1)], pa.date32(), "DATE", "STRING", None),
    ([10001 * 366 * 86400 * 1000], pa.timestamp("ms"), "TIMESTAMP(3)", "STRING", "a year outside 1-9999"),
    (["0x1p"], pa.string(), "STRING", "DOUBLE", "'0x1p' is no DOUBLE"),
    (["1e"], pa.string(), "STRING", "DECIMAL(10, 2)", "'1e' is no DECIMAL"),
])
def test_casts_java_cannot_do_or_we_do_not_reproduce_are_refused(values, arrow_type, old, new, why):
    if why is None:  # the year 1 is within Java's range: printed
        assert cast(values, arrow_type, old, new) == ["0001-01-01"]
        return
    with pytest.raises(CastRefused, match=why):
        cast(values, arrow_type, old, new)
