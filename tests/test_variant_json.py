"""The bulk JSON -> VARIANT encoder (`paimon_streaming/variant_json.py`) against the one-by-one
Python path it replaces (`json` + `variant.encode`): the same values for every document, the
same error naming the same document, on random documents and mutations of them."""
from __future__ import annotations

import json
import os
import random
import re

import pyarrow as pa
import pytest

from paimon_streaming import variant, variant_json
from paimon_streaming.variant import MalformedVariantError

EXAMPLES = int(os.environ.get("VARIANT_JSON_EXAMPLES", "60"))
SEED = int(os.environ.get("VARIANT_JSON_SEED", "0"))

KEYS = ["a", "b", "id", "name", "é", "ключ", "😀", "\ue000", "", "a b", 'x"y', "line\nbreak", "Z", "aa"]
BROKEN = ["", " ", "[1,]", "{,}", '{"a":1,}', "01", "1.", ".5", "-", "+1", "1e", "NaN", "Infinity", "[1 2]",
          '{"a" 1}', "{a:1}", "[", "]", "{]", "[}", '"abc', "tru", "nul", "truex", "1 2", "{} {}", '"a\x01b"',
          '"\\x"', '"\\ud800"', "\ufeff{}", "[[[[]]]", '{"a":{"b":1}}}', '{"a":1,"a":2}', '{"a":{"b":1,"b":2}}',
          "[1,,2]", '{"a":}', "[-]", "1e5.5", "0x10", "[1]]", ":", ",", '{"a"}', '{"a":1:2}', '["a":1]',
          "- 1", '"a" "b"', "[.1]", "[1.e5]", "[00]", "-01", "1E+", '["\\u12"]']


def _number(r: random.Random) -> str:
    c = r.random()
    if c < 0.3:
        return str(r.choice([0, 1, -1, 127, 128, -128, -129, 32767, 32768, -32769, 2**31 - 1, 2**31, -2**31 - 1,
                             2**63 - 1, 2**63, -2**63, 10**18 - 1, 10**18, r.randint(-10**6, 10**6)]))
    if c < 0.55:
        whole = str(r.randint(0, 10 ** r.randint(0, 12)))
        fraction = "".join(r.choice("0123456789") for _ in range(r.randint(1, 10)))
        return r.choice(["", "-"]) + whole + "." + fraction
    if c < 0.75:
        return (r.choice(["", "-"]) + str(r.randint(0, 999)) + r.choice(["", ".5", ".25"]) + r.choice("eE")
                + r.choice(["", "+", "-"]) + str(r.randint(0, 400)))
    if c < 0.85:
        return r.choice(["-0", "0.0", "-0.0", "0.000", "999999999", "1000000000", "0.999999999", "99999999.9",
                         "123456789012345678.9", "0.000000000000000001", "12345678901234567.89"])
    return repr(r.uniform(-1e6, 1e6))


def _text(r: random.Random) -> str:
    c = r.random()
    if c < 0.5:
        return "".join(r.choice("abcxyz 01") for _ in range(r.randint(0, 10)))
    if c < 0.6:
        return "x" * r.choice([62, 63, 64, 65, 300] + ([70_000] if r.random() < 0.05 else []))
    return "".join(r.choice(["a", "é", "😀", "\\", '"', "\n", "\x01", "/", "\u2028"]) for _ in range(r.randint(0, 6)))


def _value(r: random.Random, depth: int) -> str:
    c = r.random()
    if depth > 4 or c < 0.5:
        return r.choice([lambda: _number(r), lambda: json.dumps(_text(r), ensure_ascii=r.random() < 0.5),
                         lambda: r.choice(["true", "false", "null"])])()
    space = r.choice(["", " ", "\n\t "])
    size = r.choice([0, 1, 2, 3, 5] + ([r.randint(0, 300)] if depth == 0 else []))
    if c < 0.75:
        keys = list(dict.fromkeys(r.choice(KEYS) + (str(r.randint(0, 400)) if r.random() < 0.5 else "")
                                  for _ in range(size)))
        members = (json.dumps(k, ensure_ascii=r.random() < 0.5) + space + ":" + space + _value(r, depth + 1) for k in keys)
        return "{" + space + ("," + space).join(members) + space + "}"
    return "[" + ",".join(_value(r, depth + 1) for _ in range(size)) + "]"


def _document(r: random.Random) -> str | None:
    c = r.random()
    if c < 0.08:
        return r.choice(BROKEN)
    if c < 0.1:
        return None
    if c < 0.11:
        return "[" * 130 + "]" * 130  # deeper than the bulk path goes
    text = _value(r, 0)
    if r.random() < 0.05 and len(text) > 2:  # one byte changed: mostly no JSON any more
        i = r.randrange(len(text))
        text = text[:i] + r.choice(['"', "{", "}", "[", "]", ",", ":", "\\", " ", "x", "1", "."]) + text[i + 1:]
    return r.choice(["", " ", "\n"]) + text + r.choice(["", " ", "\r\n"])


def _one_by_one(documents: list) -> tuple[str, object]:
    """What the Python path gives: the decoded values, or the error it raises."""
    try:
        return "ok", variant.to_python(variant._from_json_one_by_one(list(enumerate(documents))))
    except Exception as exc:  # noqa: BLE001 - compared as they are
        return "error", (type(exc).__name__, str(exc))


def _bulk(documents: list) -> tuple[str, object]:
    try:
        return "ok", variant.to_python(variant.from_json(documents))
    except Exception as exc:  # noqa: BLE001
        return "error", (type(exc).__name__, str(exc))


def _typed(value):
    """A decoded value with each leaf's type, so 1, 1.0 and Decimal('1.0') differ."""
    if isinstance(value, dict):
        return {k: _typed(v) for k, v in value.items()}
    if isinstance(value, list):
        return [_typed(v) for v in value]
    return type(value).__name__, repr(value)


@pytest.mark.parametrize("round_", range(EXAMPLES))
def test_bulk_encoding_gives_what_the_python_path_gives(round_, chunked):
    r = random.Random(SEED * 1_000_003 + round_)
    documents = [_document(r) for _ in range(r.choice([1, 5, 40]))]
    clean = [d for d in documents if _one_by_one([d])[0] == "ok"]
    for batch in (documents, clean):  # a batch with bad documents fails as before; one without matches
        want, got = _one_by_one(batch), _bulk(batch)
        if want[0] == "ok":
            assert [_typed(v) for v in got[1]] == [_typed(v) for v in want[1]]
            assert variant.to_json(variant.from_json(batch)).to_pylist() == variant.to_json(
                variant._from_json_one_by_one(list(enumerate(batch)))).to_pylist()
        else:
            assert got == want


@pytest.mark.parametrize("document", BROKEN + ['{"a",1}', "{1:2}", '{"a":1,"b"}', '[{"a":1},{"b"}]', '{"a":[1:2]}'])
def test_each_malformed_document_is_refused_as_python_refuses_it(document):
    batch = ['{"ok": [1, {"x": null}]}', document]
    assert _bulk(batch) == _one_by_one(batch)
    assert _one_by_one(batch)[0] == "error"


def test_the_bulk_path_takes_most_documents_and_leaves_the_rare_ones_to_python():
    """Not a silent fallback for everything: ordinary documents, escapes and 19-digit longs
    included, are encoded in bulk; integers beyond a long, deep nesting and bad JSON go to the
    Python path."""
    documents = ['{"a": 1, "b": [true, null, "x\\"y\\u00e9"], "c": {"d": -2.50, "e": 1e3}}', '"s"', "[]",
                 '{"snowflake": 1864434583029940225}', "9223372036854775808",
                 "12345678901234567890", "[" * 130 + "]" * 130, "[1,]", '{"a":1,"a":2}', '"\\ud800"']
    tape = variant_json.tape(*variant_json.binary_documents(pa.array(documents)))
    _, python = variant_json.encode(tape, tape.top())
    assert python.tolist() == [False, False, False, False, True, True, True, True, True, True]


@pytest.mark.parametrize("document", [
    '{"b": 1, "a": [true, null, "x"]}', '"short"', '"' + "y" * 64 + '"', "-129", "2147483648", "-0.0", "0.000",
    "99999999.9", "1000000000.5", "1.5e300", "[" + ",".join(["1"] * 300) + "]",
    "{" + ",".join(f'"k{i:03d}": {i}' for i in range(300)) + "}", '["' + "z" * 70_000 + '", 1]',
    "\t[1]\r\n", '"\\/"', "9223372036854775807", "-9223372036854775808", "1234567890123456789",
])
def test_flat_documents_encode_to_the_python_paths_bytes(document):
    """Without nested objects the dictionaries agree too (sorted here, in key order there), so
    the bytes are the same: headers, widths, offsets and all."""
    bulk = variant.from_json([document])
    assert (bulk.field("value")[0].as_py(), bulk.field("metadata")[0].as_py()) == variant.encode(variant.loads(document))


def test_an_error_names_the_first_document_python_would_name(chunked):
    with pytest.raises(json.JSONDecodeError) as python_says:  # its words differ between Python versions
        json.loads("[1,]")
    with pytest.raises(MalformedVariantError, match=rf"document 2 is no variant's JSON \({re.escape(python_says.value.msg)}"):
        variant.from_json(['{"a": 1}', None, "[1,]", "{,}"])
    with pytest.raises(MalformedVariantError, match=r"document 1 is no variant's JSON \(the key 'a' is given twice"):
        variant.from_json(['{"a": 1}', '{"x": {"a": 1, "a": 2}}'])
    with pytest.raises(MalformedVariantError, match=r"document 0 is no variant's JSON \('utf-8' codec can't encode"):
        variant.from_json(['"\\ud800"'])  # a lone surrogate is no Unicode text (it raised UnicodeEncodeError)


def test_bytes_and_chunked_input():
    chunked = pa.chunked_array([pa.array([b'{"a": 1}', None]), pa.array([b'"\xc3\xa9"'])])
    assert variant.to_python(variant.from_json(chunked)) == [{"a": 1}, None, "é"]
    with pytest.raises(MalformedVariantError, match="document 0 is no variant's JSON"):
        variant.from_json(pa.array([b'"\xff"']))  # not UTF-8
    assert variant.to_python(variant.from_json([])) == []
    with pytest.raises(MalformedVariantError, match="document 1 is no variant's JSON"):
        variant.from_json([None, 5])  # not text: named as before


def test_fields_from_json_takes_members_as_ingest_stores_them():
    records = pa.array([b'{"id": 1, "payload": {"x": [1, 2.5]}, "extra": 1}', b'{"id": 2, "payload": null}',
                        b'{"id": 3}', b'[1, 2]', b'{"id": 5, "payload": 123456789012345678901}',
                        b'{"id": 6, "payload": "s", "other": {"k": 1}}'])
    columns, keys = variant.fields_from_json(records, ["payload", "id"])
    assert variant.to_python(columns["payload"]) == [{"x": [1, variant.Decimal("2.5")]}, None, None, None,
                                                     123456789012345678901, "s"]
    assert variant.to_python(columns["id"]) == [1, 2, 3, None, 5, 6]
    assert keys == {"id", "payload", "extra", "other"}
    with pytest.raises(ValueError, match="given twice"):
        variant.fields_from_json(pa.array([b'{"id": 1, "other": {"k": 1, "k": 2}}']), ["payload"])


@pytest.mark.parametrize("round_", range(EXAMPLES // 4))
def test_fields_from_json_gives_what_parsing_each_record_gives(round_, chunked):
    """Ingest's records: the member `payload` of each (absent, null, any JSON; records that are no
    objects; a key given twice somewhere) against `loads` + `from_values` record by record."""
    r = random.Random(SEED * 7_919 + round_)
    records = []
    for _ in range(r.choice([1, 10, 60])):
        members = {"id": str(r.randint(0, 99))}
        if r.random() < 0.8:
            members["payload"] = _value(r, 1) if r.random() < 0.9 else "null"
        if r.random() < 0.3:
            members[r.choice(KEYS)] = _value(r, 2)
        text = "{" + ",".join(f"{json.dumps(k)}:{v}" for k, v in members.items()) + "}"
        c = r.random()
        records.append(text if c < 0.85 else _value(r, 0) if c < 0.99 else '{"payload": 1, "payload": 2}')
    batch = pa.array([t.encode() for t in records], pa.binary())
    try:
        documents = [variant.loads(t) for t in records]
        payloads = [d.get("payload") if isinstance(d, dict) else None for d in documents]
        want = variant.to_python(variant.from_values([variant.NULL_VARIANT if p is None else p for p in payloads]))
        keys = {k for d in documents if isinstance(d, dict) for k in d}
    except ValueError as exc:
        with pytest.raises(ValueError) as raised:
            variant.fields_from_json(batch, ["payload"])
        assert type(raised.value) is type(exc)
        return
    columns, got_keys = variant.fields_from_json(batch, ["payload"])
    assert [_typed(v) for v in variant.to_python(columns["payload"])] == [_typed(v) for v in want]
    assert got_keys == keys


def test_many_documents_take_the_same_time_per_document():
    """Vectorized: 20,000 documents cost about 20 times 1,000 (not a per-document Python walk in
    disguise, which would also scale linearly; this guards against quadratic steps)."""
    import time
    r = random.Random(5)
    documents = [json.dumps({"user": {"id": r.randint(0, 10**6), "tags": ["a", r.random()]}, "n": i}) for i in range(20_000)]

    def seconds(docs):
        best = float("inf")
        for _ in range(3):
            start = time.perf_counter()
            variant.from_json(docs)
            best = min(best, time.perf_counter() - start)
        return best
    assert seconds(documents) < 60 * seconds(documents[:1000]) + 0.5


def test_spark_prints_our_variants_as_it_prints_its_own_parse_json(spark):
    """Spark's `to_json` of our bulk-encoded variants against `to_json(parse_json(text))` of
    the same documents: the same text, so the same values, types and field order (Spark's
    lookups binary-search that order)."""
    from pyspark.sql import VariantVal
    r = random.Random(SEED + 17)
    documents: list[str] = []
    while len(documents) < 10 * EXAMPLES:
        document = _document(r)
        if document is not None and _one_by_one([document])[0] == "ok":
            documents.append(document)
    encoded = variant.from_json(documents)
    rows = [(i, text, VariantVal(value, metadata)) for i, (text, value, metadata) in enumerate(zip(
        documents, encoded.field("value").to_pylist(), encoded.field("metadata").to_pylist()))]
    frame = spark.createDataFrame(rows, "i int, j string, v variant")
    got = frame.selectExpr("i", "to_json(v) as ours", "to_json(parse_json(j)) as spark").collect()
    assert [(row.i, row.ours) for row in got] == [(row.i, row.spark) for row in got]
