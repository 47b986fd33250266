"""The bulk VARIANT -> JSON printer (`paimon_streaming/variant_text.py`) against the value by
value Python path it stands in for (`variant.decode` + `_json`): the same text for every
variant, the same error for damaged bytes, on random documents, Python values and mutations
of their bytes."""
from __future__ import annotations

import datetime as dt
import os
import random
import uuid
from decimal import Decimal

import pyarrow as pa
import pytest

from paimon_streaming import variant
from paimon_streaming.types import VARIANT_ARROW
from test_variant_json import _document, _one_by_one

EXAMPLES = int(os.environ.get("VARIANT_TEXT_EXAMPLES", "40"))
SEED = int(os.environ.get("VARIANT_TEXT_SEED", "0"))


def _python_value(r: random.Random, depth: int = 0):
    c = r.random()
    if depth < 3 and c < 0.15:
        return {r.choice(["a", "b", "é", "😀", "\ue000", "k\x01", 'q"']) + str(i): _python_value(r, depth + 1)
                for i in range(r.choice([0, 1, 3, 40]))}
    if depth < 3 and c < 0.3:
        return [_python_value(r, depth + 1) for _ in range(r.choice([0, 2, 5]))]
    return r.choice([
        lambda: Decimal(r.randint(-10**18, 10**18)).scaleb(-r.randint(0, 20)),
        lambda: Decimal(r.randint(-10**30, 10**30)).scaleb(-r.randint(0, 38)),  # 16 bytes: Python's
        lambda: r.choice([0.0, -0.0, 1e10, 1e-5, float("nan"), float("inf"), -float("inf"), r.random() * 10**r.randint(-30, 30)]),
        lambda: variant.Float32(r.choice([1.1, 3.4028235e38, 1e-45, 16777216.0, float("nan")])),
        lambda: dt.date(r.randint(1, 9999), r.randint(1, 12), r.randint(1, 28)),
        lambda: dt.datetime(r.randint(1, 9999), 1, 2, 3, 4, 5, r.choice([0, 500000, 1, 123456]),
                            tzinfo=r.choice([None, dt.timezone.utc])),
        lambda: variant.TimestampNanos(2026, 1, 2, 3, 4, 5, 6, nanosecond=r.randint(0, 999)),
        lambda: r.choice([b"\x00\xff", dt.time(1, 2, 3, 4), uuid.UUID(int=r.getrandbits(128))]),
        lambda: r.choice([None, True, False, r.randint(-2**63, 2**63 - 1), r.randint(-200, 200)]),
        lambda: "".join(r.choice(["a", "é", "😀", "\\", '"', "\n", "\x01", "\x1f", "\x7f", "\u2028"])
                        for _ in range(r.choice([0, 3, 70]))),
    ])()


def _texts(variants: pa.StructArray) -> tuple[str, object]:
    try:
        return "ok", variant.to_json(variants).to_pylist()
    except Exception as exc:  # noqa: BLE001 - compared as they are
        return "error", (type(exc).__name__, str(exc))


def _texts_one_by_one(variants: pa.StructArray) -> tuple[str, object]:
    try:
        return "ok", variant._to_json_one_by_one(variants)
    except Exception as exc:  # noqa: BLE001
        return "error", (type(exc).__name__, str(exc))


def _mutated(r: random.Random, variants: pa.StructArray) -> pa.StructArray:
    """Some variants' value or metadata bytes changed, cut or extended."""
    values, metadatas = variants.field("value").to_pylist(), variants.field("metadata").to_pylist()
    for i in range(len(values)):
        if values[i] is None or r.random() > 0.3:
            continue
        which = r.choice(["value", "metadata"])
        data = bytearray(values[i] if which == "value" else metadatas[i])
        action = r.random()
        if action < 0.5 and data:
            data[r.randrange(len(data))] = r.randrange(256)
        elif action < 0.75 and data:
            del data[r.randrange(len(data)):]
        else:
            data += bytes(r.randrange(256) for _ in range(r.randint(1, 4)))
        if which == "value":
            values[i] = bytes(data)
        else:
            metadatas[i] = bytes(data)
    return pa.StructArray.from_arrays([pa.array(values, pa.binary()), pa.array(metadatas, pa.binary())],
                                      fields=list(VARIANT_ARROW), mask=pa.array([v is None for v in values]))


@pytest.mark.parametrize("round_", range(EXAMPLES))
def test_bulk_printing_gives_what_the_python_path_gives(round_, chunked):
    r = random.Random(SEED * 1_000_033 + round_)
    documents = [d for d in (_document(r) for _ in range(30)) if d is None or _one_by_one([d])[0] == "ok"]
    values = [_python_value(r) for _ in range(30)]
    for variants in (variant.from_json(documents), variant.from_values(values)):
        assert _texts(variants) == _texts_one_by_one(variants)
        damaged = _mutated(r, variants)
        assert _texts(damaged) == _texts_one_by_one(damaged)


def test_the_bulk_path_prints_most_variants_and_leaves_the_rare_ones_to_python():
    from paimon_streaming import variant_text
    values = [{"a": [1, 2.5, "x"]}, Decimal("1.50"), 1e10, dt.date(2026, 1, 2), "s",
              b"\x00", dt.time(1, 2), variant.TimestampNanos(2026, 1, 1), Decimal(10**20)]
    variants = variant.from_values(values)
    _, python = variant_text.json_texts(variants.field("value"), variants.field("metadata"),
                                        variants.is_valid().to_numpy(zero_copy_only=False))
    assert python.tolist() == [False] * 5 + [True] * 4


def test_damaged_offsets_that_read_values_again_and_again_are_malformed():
    """Each array's two offsets point at the same nested array: 40 levels in 201 bytes would be
    2^40 values read (the Python path ran for ever); more values than bytes is malformed."""
    value = b"\x00"
    for _ in range(40):
        value = bytes([3, 2, 0, 0, len(value)]) + value
    bomb = pa.StructArray.from_arrays([pa.array([value], pa.binary()), pa.array([b"\x01\x00\x00"], pa.binary())],
                                      fields=list(VARIANT_ARROW))
    for read in (variant.to_json, variant.to_python):
        with pytest.raises(variant.MalformedVariantError, match="more values than bytes"):
            read(bomb)
    shared = b"\x03\x02\x00\x00\x01\x00"  # two offsets at one null, within the bytes: still read
    assert variant.to_json(pa.StructArray.from_arrays([pa.array([shared], pa.binary()), pa.array(
        [b"\x01\x00\x00"], pa.binary())], fields=list(VARIANT_ARROW))).to_pylist() == ["[null,null]"]
