"""Base64 text -> bytes over whole Arrow arrays (sinks/base64_columns.py), against Python's base64."""
from __future__ import annotations

import base64
import random

import pyarrow as pa
import pytest

from paimon_streaming.sinks.base64_columns import base64_decoded


@pytest.mark.parametrize("binary_type", [pa.binary(), pa.large_binary()])
def test_random_values_decode_as_pythons_base64(binary_type):
    rng = random.Random(7)
    for _ in range(200):
        n = rng.randint(0, 40)
        values = [None if rng.random() < 0.1 else rng.randbytes(rng.randint(0, 25)) for _ in range(n)]
        arr = pa.array([None if v is None else base64.b64encode(v) for v in values], binary_type)
        start = rng.randint(0, n)
        assert base64_decoded("c", arr.slice(start)).to_pylist() == values[start:]


@pytest.mark.parametrize("text", [b"abc", b"ab=c", b"a===", b"ab!d", b"=abc", b"ab==cd==", b"abc=abcd", b"aGVsbG8"])
def test_text_that_is_not_padded_base64_is_refused_naming_the_column(text):
    with pytest.raises(ValueError, match=rf"column 'c' is BYTES, written in JSON as base64 text, but {text!r}"):
        base64_decoded("c", pa.array([b"aGVsbG8=", text], pa.binary()))


def test_nested_values_and_slices():
    def b64(data: bytes) -> bytes:
        return base64.b64encode(data)
    rows = pa.array([{"b": b64(b"x"), "i": 1}, None, {"b": None, "i": 2}], pa.struct([("b", pa.binary()), ("i", pa.int64())]))
    assert base64_decoded("s", rows).to_pylist() == [{"b": b"x", "i": 1}, None, {"b": None, "i": 2}]
    lists = pa.array([[b64(b"a")], [b64(b"bc"), b64(b"")], None], pa.list_(pa.binary()))
    assert base64_decoded("l", lists.slice(1)).to_pylist() == [[b"bc", b""], None]
    maps = pa.array([[("k", b64(b"v"))], [("j", b64(b"w"))], None], pa.map_(pa.string(), pa.binary()))
    assert base64_decoded("m", maps.slice(1)).to_pylist() == [[("j", b"w")], None]
    with pytest.raises(ValueError, match=r"column 's\.b'"):
        base64_decoded("s", pa.array([{"b": b"no!"}], pa.struct([("b", pa.binary())])))
