"""JSON documents to VARIANT values, vectorized: the bulk path of `variant.from_json` and of
`ingest --variant-column`.

A variant's JSON has no Arrow type to parse it into (arrays mix types, shapes vary), and
walking each parsed document in Python costs tens of microseconds. Here a whole batch of
documents is encoded with numpy over one byte buffer, in three steps:

1. a tape: every token of every document (strings, scalars, brackets, colons, commas) with
   its depth, its parent container and its rank there, and the grammar checked on it;
2. each value's encoded size, bottom up, level by level (a container's size needs its
   children's);
3. each value's place, top down, and the bytes written with scatters.

The path is conservative: a document it is not sure of (not JSON, a key given twice, an integer
beyond a long or a decimal of more than 18 digits, nesting deeper than `MAX_DEPTH`, text that
is not UTF-8) is marked for the caller, which encodes it in Python (`variant.loads` /
`variant.encode`), so errors and rare cases keep that path's behaviour. The bytes differ from
`variant.encode`'s only in the order of the metadata dictionary (sorted here, in the order met
there), which the encoding leaves free; the values are the same (`tests/test_variant_json.py`).
"""
from __future__ import annotations

import json
from dataclasses import dataclass

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from .numpy_arrow import from_numpy
from .types import VARIANT_ARROW

MAX_DEPTH = 128  # deeper documents go to the Python path (its json has a recursion limit)

# token kinds
_OBJ, _ARR, _END_OBJ, _END_ARR, _COLON, _COMMA, _STR, _SCALAR = range(8)
_KIND_OF_BYTE = np.full(256, 255, np.uint8)
for _byte, _kind in zip(b"{[}]:,", (_OBJ, _ARR, _END_OBJ, _END_ARR, _COLON, _COMMA)):
    _KIND_OF_BYTE[_byte] = _kind
# byte classes outside strings: 0 not JSON, 1 whitespace, 2 structural, 3 part of a scalar
_CLASS = np.zeros(256, np.uint8)
_CLASS[list(b" \t\n\r")] = 1
_CLASS[list(b"{}[]:,")] = 2
_CLASS[list(b"-+.0123456789eEtruefalsn")] = 3
_SCALAR_TEXT = r"^(true|false|null|-?(0|[1-9][0-9]*)(\.[0-9]+)?([eE][+-]?[0-9]+)?)$"

# variant value headers (FORMAT: `VARIANT`): basic type in the low 2 bits
_NULL_H, _TRUE_H, _FALSE_H = 0 << 2, 1 << 2, 2 << 2
_INT_H = {1: 3 << 2, 2: 4 << 2, 4: 5 << 2, 8: 6 << 2}
_DOUBLE_H, _DECIMAL4_H, _DECIMAL8_H, _LONG_STRING_H = 7 << 2, 8 << 2, 9 << 2, 16 << 2
_SHORT_STRING, _OBJECT, _ARRAY = 1, 2, 3


@dataclass
class Tape:
    """The tokens of a batch of documents, in byte order, for the documents that passed every
    check (`python[i]`: document i is left to the Python path)."""
    data: np.ndarray       # uint8, the documents' bytes one after the other
    python: np.ndarray     # bool per document
    kind: np.ndarray       # per token
    start: np.ndarray      # first byte
    end: np.ndarray        # one past the last byte
    doc: np.ndarray        # its document
    level: np.ndarray      # containers around it (a container's brackets: around them)
    parent: np.ndarray     # token index of the enclosing container's opening bracket, -1 at the top
    rank: np.ndarray       # place among the parent's tokens (brackets closing children not counted)
    close: np.ndarray      # a container's closing bracket (token index), else the token itself
    is_key: np.ndarray     # an object's key (a string token)
    key_place: np.ndarray  # a key's place among its object's keys sorted by name
    unescaped: dict[int, bytes]  # the UTF-8 text of strings written with escapes, by first byte

    def top(self) -> np.ndarray:
        """Each document's top-level value (token index), -1 for a document left to Python."""
        roots = np.full(len(self.python), -1, np.int64)
        top = np.flatnonzero((self.level == 0) & (self.kind != _END_OBJ) & (self.kind != _END_ARR))
        roots[self.doc[top]] = top
        return roots

    def top_level_keys(self) -> set[str]:
        """The keys of the documents' top-level objects."""
        keys = np.flatnonzero(self.is_key & (self.level == 1))
        return {k.decode() for k in pc.unique(strings(self, keys)).to_pylist()}

    def members(self, name: str) -> np.ndarray:
        """Each document's value of the top-level object's member `name` (token index); -1 where
        the document is no object, lacks it or holds a JSON null there."""
        roots = np.full(len(self.python), -1, np.int64)
        keys = np.flatnonzero(self.is_key & (self.level == 1))
        if not len(keys):
            return roots
        texts = strings(self, keys)
        hit = keys[pc.equal(texts, pa.scalar(name.encode(), pa.large_binary())).to_numpy(zero_copy_only=False)]
        values = hit + 2  # key, colon, value
        is_null = (self.kind[values] == _SCALAR) & (self.data[self.start[values]] == ord("n"))
        values = values[~is_null]
        roots[self.doc[values]] = values
        return roots


# Documents encoded together: the tape's arrays peak at about 60 bytes per byte of JSON (an 87 MB
# batch took 4.5 GB in one piece, 150 MB with its output in these, at the same speed).
CHUNK_BYTES = 2 << 20


def chunks(documents: pa.Array) -> list[tuple[int, pa.Array]]:
    """`documents` in slices of about CHUNK_BYTES (at least one document each), with the index
    of each slice's first document: a big batch is encoded slice by slice, in bounded memory."""
    if not isinstance(documents, pa.Array) or len(documents) == 0:
        return [(0, documents)]
    sizes = pc.fill_null(pc.binary_length(documents.cast(pa.large_binary())), 0).to_numpy(zero_copy_only=False)
    ends = np.cumsum(sizes)
    cuts = np.unique(np.searchsorted(ends, np.arange(CHUNK_BYTES, int(ends[-1]), CHUNK_BYTES), "right"))
    bounds = [0, *[int(c) for c in cuts if 0 < c < len(documents)], len(documents)]
    return [(a, documents.slice(a, b - a)) for a, b in zip(bounds, bounds[1:])]


def binary_documents(documents: pa.Array) -> tuple[np.ndarray, np.ndarray]:
    """A string or binary array's bytes and offsets (nulls are empty documents)."""
    documents = documents.cast(pa.large_binary())
    offsets_buffer, data_buffer = documents.buffers()[1:3]
    offsets = np.frombuffer(offsets_buffer, np.int64)[documents.offset:documents.offset + len(documents) + 1]
    data = np.frombuffer(data_buffer, np.uint8) if data_buffer is not None else np.zeros(0, np.uint8)
    return data[offsets[0]:offsets[-1]], offsets - offsets[0]


def tape(data: np.ndarray, offsets: np.ndarray) -> Tape:
    """Tokenize and check documents `data[offsets[i]:offsets[i + 1]]`."""
    n = len(offsets) - 1
    python = np.zeros(n, bool)
    doc_of_byte = np.repeat(np.arange(n, dtype=np.int32), np.diff(offsets))
    doc_of = doc_of_byte.__getitem__

    quotes = np.flatnonzero(data == ord('"'))
    if len(quotes) and (data == ord("\\")).any():
        quotes = quotes[~_escaped(data, quotes, offsets[doc_of(quotes)])]
    quote_doc = doc_of(quotes)
    python |= np.bincount(quote_doc, minlength=n) % 2 == 1
    quotes = quotes[~python[quote_doc]]
    opens, closes = quotes[0::2], quotes[1::2]
    step = np.zeros(len(data) + 1, np.int8)
    step[opens] = 1
    ends = np.zeros(len(data) + 1, np.int8)
    ends[closes + 1] = 1
    in_string = np.cumsum(step - ends, dtype=np.int8)[:-1].astype(bool)  # quotes included

    byte_class = _CLASS[data]
    outside = ~in_string
    python[doc_of(np.flatnonzero(outside & (byte_class == 0)))] = True
    python[doc_of(np.flatnonzero(in_string & (data < 0x20)))] = True

    structural = np.flatnonzero(outside & (byte_class == 2))
    scalar = outside & (byte_class == 3)
    before = np.r_[False, scalar[:-1]]
    after = np.r_[scalar[1:], False]
    inner = offsets[1:-1]
    inner = inner[(inner > 0) & (inner < len(data))]
    before[inner] = False                 # a scalar never runs from one document into the next
    after[inner - 1] = False
    scalar_starts = np.flatnonzero(scalar & ~before)
    scalar_ends = np.flatnonzero(scalar & ~after) + 1

    start = np.concatenate([structural, opens, scalar_starts])
    end = np.concatenate([structural + 1, closes + 1, scalar_ends])
    kind = np.concatenate([_KIND_OF_BYTE[data[structural]], np.full(len(opens), _STR, np.uint8),
                           np.full(len(scalar_starts), _SCALAR, np.uint8)])
    order = np.argsort(start, kind="stable")
    start, end, kind = start[order], end[order], kind[order]
    doc = doc_of(start)

    scalars = np.flatnonzero(kind == _SCALAR)
    if len(scalars):
        texts = segments(data, start[scalars], end[scalars])
        valid = pc.match_substring_regex(texts, _SCALAR_TEXT).to_numpy(zero_copy_only=False)
        python[doc[scalars[~valid]]] = True
    strings_with_high_bytes = _strings_to_validate(data, kind, start, end)
    if len(strings_with_high_bytes):
        python[doc[strings_with_high_bytes[~_utf8(data, start, end, strings_with_high_bytes)]]] = True
    unescaped = _unescape(data, kind, start, end, doc, python)

    python |= np.bincount(doc, minlength=n) == 0  # blank: Python's json says what is wrong
    while True:
        keep = ~python[doc]
        start, end, kind, doc = start[keep], end[keep], kind[keep], doc[keep]
        wrong, links = _structure(kind, doc, n)
        if links is not None:
            keys = np.flatnonzero(links.is_key)
            twice, key_place = _key_order(keys, links.parent[keys], _texts(data, start[keys], end[keys], unescaped),
                                          len(kind))
            wrong = np.unique(doc[twice])
            if not len(wrong):
                break
        python[wrong] = True
    return Tape(data, python, kind, start, end, doc, links.level, links.parent, links.rank, links.close,
                links.is_key, key_place, unescaped)


def _unescape(data: np.ndarray, kind: np.ndarray, start: np.ndarray, end: np.ndarray, doc: np.ndarray,
              python: np.ndarray) -> dict[int, bytes]:
    """The text of each string token written with escapes, by Python's json one by one (escapes
    are rare); a bad escape or a lone surrogate leaves its document to the Python path."""
    strings = np.flatnonzero(kind == _STR)
    backslashes = np.flatnonzero(data == ord("\\"))
    if not len(backslashes) or not len(strings):
        return {}
    holder = np.searchsorted(start[strings], backslashes, "right") - 1
    inside = (holder >= 0) & (backslashes < end[strings[np.maximum(holder, 0)]])
    texts = {}
    for token in np.unique(strings[holder[inside]]).tolist():
        try:
            texts[int(start[token])] = json.loads(data[start[token]:end[token]].tobytes()).encode()
        except (ValueError, UnicodeEncodeError):
            python[doc[token]] = True
    return texts


def _escaped(data: np.ndarray, quotes: np.ndarray, doc_starts: np.ndarray) -> np.ndarray:
    """Which quotes follow an odd run of backslashes (within their document): the runs walked
    back a byte at a time for the quotes still in one (rarely more than two)."""
    run = np.zeros(len(quotes), np.int64)
    going = np.arange(len(quotes))
    back = 1
    while len(going):
        at = quotes[going] - back
        going = going[(at >= doc_starts[going]) & (data[np.maximum(at, 0)] == ord("\\"))]
        run[going] += 1
        back += 1
    return run % 2 == 1


@dataclass
class _Links:
    level: np.ndarray
    parent: np.ndarray
    rank: np.ndarray
    close: np.ndarray
    is_key: np.ndarray


def _structure(kind: np.ndarray, doc: np.ndarray, n: int) -> tuple[np.ndarray, _Links | None]:
    """The documents (of those with tokens) whose brackets or grammar are wrong; when there
    are none, the tokens' links."""
    bad = np.zeros(n, bool)
    tokens = np.arange(len(kind))
    is_open = (kind == _OBJ) | (kind == _ARR)
    is_close = (kind == _END_OBJ) | (kind == _END_ARR)
    depth = _within_documents(np.cumsum(is_open.astype(np.int64) - is_close), doc, n)
    bad[doc[depth < 0]] = True
    last = np.r_[doc[1:] != doc[:-1], True] if len(doc) else np.zeros(0, bool)
    bad[doc[last & (depth != 0)]] = True
    level = depth - is_open
    bad[doc[level > MAX_DEPTH]] = True
    top = (level == 0) & ~is_close
    bad |= (np.bincount(doc[top], minlength=n) != 1) & (np.bincount(doc, minlength=n) > 0)
    bad[doc[top & ((kind == _COLON) | (kind == _COMMA))]] = True
    if bad.any():
        return np.flatnonzero(bad), None

    # by level, then in byte order (a radix sort of small levels): brackets pair up, and each
    # token's parent is the last bracket opened one level up before it
    by_level = np.argsort(level.astype(np.int16), kind="stable")
    brackets = by_level[(is_open | is_close)[by_level]]
    opening, closing = brackets[0::2], brackets[1::2]
    matched = (is_open[opening] & is_close[closing] & (doc[opening] == doc[closing])
               & (kind[closing] - kind[opening] == _END_OBJ - _OBJ))
    bad[doc[opening[~matched]]] = True
    if bad.any():
        return np.flatnonzero(bad), None
    close = tokens.copy()
    close[opening] = closing

    # by level, then byte order, a container's members at one level come one after the other
    member = by_level[((level > 0) & ~is_close)[by_level]]
    stride = np.int64(len(kind) + 1)
    keys = level[opening] * stride + opening  # sorted: `opening` is by level, then byte order
    parent = np.full(len(kind), -1, np.int64)
    parent[member] = opening[np.searchsorted(keys, (level[member] - 1) * stride + member) - 1]
    rank = np.full(len(kind), -1, np.int64)
    rank[member] = np.arange(len(member)) - group_first_index(group_starts(parent[member]))

    in_object = kind[parent[member]] == _OBJ
    member_kind = kind[member]
    value = (member_kind == _OBJ) | (member_kind == _ARR) | (member_kind == _STR) | (member_kind == _SCALAR)
    expected = np.where(in_object, rank[member] % 4, (rank[member] % 2) * 3)  # 0 key, 1 colon, 2 value, 3 comma
    ok = np.where(expected == 0, np.where(in_object, member_kind == _STR, value),
                  np.where(expected == 1, member_kind == _COLON,
                           np.where(expected == 2, value, member_kind == _COMMA)))
    bad[doc[member[~ok]]] = True
    counts = np.zeros(len(kind), np.int64)
    last = np.r_[group_starts(parent[member])[1:], True] if len(member) else np.zeros(0, bool)
    counts[parent[member[last]]] = rank[member[last]] + 1  # a container's last member's rank
    counts = counts[opening]
    complete = np.where(kind[opening] == _OBJ, (counts == 0) | (counts % 4 == 3), (counts == 0) | (counts % 2 == 1))
    bad[doc[opening[~complete]]] = True
    if bad.any():
        return np.flatnonzero(bad), None
    is_key = np.zeros(len(kind), bool)
    is_key[member] = in_object & (rank[member] % 4 == 0)
    return np.zeros(0, np.int64), _Links(level, parent, rank, close, is_key)


def _key_order(keys: np.ndarray, parents: np.ndarray, names: pa.Array, tokens: int) -> tuple[np.ndarray, np.ndarray]:
    """Each key's place among its object's keys sorted by name (`variant.utf16_order`), by
    token, and the keys naming a key of their object a second time (Python's json and Spark
    refuse those objects)."""
    order = _utf16_order(names)
    by_object = pc.sort_indices(pa.table({"p": parents, "k": order}),
                                [("p", "ascending"), ("k", "ascending")]).to_numpy()
    new_object = group_starts(parents[by_object])
    twice = keys[by_object[~new_object & _equal_to_previous(names.take(by_object))]]
    place = np.full(tokens, -1, np.int64)
    place[keys[by_object]] = np.arange(len(keys)) - group_first_index(new_object)
    return twice, place


def _within_documents(running: np.ndarray, doc: np.ndarray, n: int) -> np.ndarray:
    """A running sum over all tokens made to restart at each document."""
    if not len(running):
        return running
    first = np.searchsorted(doc, np.arange(n))
    base = np.where(first > 0, running[np.maximum(first - 1, 0)], 0)
    return running - base[doc]


def segments(data: np.ndarray, starts: np.ndarray, ends: np.ndarray) -> pa.BinaryArray:
    """`data[starts[i]:ends[i]]` for each i, as one binary array."""
    lengths = ends - starts
    offsets = np.r_[0, np.cumsum(lengths)].astype(np.int64)
    gathered = data[np.repeat(starts - offsets[:-1], lengths) + np.arange(offsets[-1])]
    return pa.Array.from_buffers(pa.large_binary(), len(starts), [None, pa.py_buffer(offsets), pa.py_buffer(gathered)])


def _strings_to_validate(data: np.ndarray, kind: np.ndarray, start: np.ndarray, end: np.ndarray) -> np.ndarray:
    """String tokens holding bytes above 0x7F (the only ones that may not be UTF-8)."""
    high = np.flatnonzero(data >= 0x80)
    if not len(high):
        return np.zeros(0, np.int64)
    strings = np.flatnonzero(kind == _STR)
    holder = np.searchsorted(start[strings], high, "right") - 1
    return np.unique(strings[holder[holder >= 0]])


def _utf8(data: np.ndarray, start: np.ndarray, end: np.ndarray, tokens: np.ndarray) -> np.ndarray:
    """Whether each of these string tokens is UTF-8 (checked all at once; one by one on failure)."""
    texts = segments(data, start[tokens], end[tokens])
    try:
        texts.view(pa.large_string()).validate(full=True)
        return np.ones(len(tokens), bool)
    except pa.ArrowInvalid:
        return np.array([_decodes(t) for t in texts.to_pylist()], bool)


def _decodes(text: bytes) -> bool:
    try:
        text.decode()
        return True
    except UnicodeDecodeError:
        return False


def strings(t: Tape, tokens: np.ndarray) -> pa.LargeBinaryArray:
    """The text of these string tokens as UTF-8 bytes, escapes resolved."""
    return _texts(t.data, t.start[tokens], t.end[tokens], t.unescaped)


def _texts(data: np.ndarray, starts: np.ndarray, ends: np.ndarray, unescaped: dict[int, bytes]) -> pa.LargeBinaryArray:
    contents = segments(data, starts + 1, ends - 1)
    if not unescaped:
        return contents
    escaped = np.isin(starts, np.fromiter(unescaped, np.int64, len(unescaped)))
    if not escaped.any():
        return contents
    texts = pa.array([unescaped[first] for first in starts[escaped].tolist()], pa.large_binary())
    return pc.replace_with_mask(contents, pa.array(escaped), texts)


# ---- encoding -------------------------------------------------------------------------------
def encode(t: Tape, roots: np.ndarray) -> tuple[pa.StructArray, np.ndarray]:
    """The variants of the values at `roots` (a token index per document, -1 for a null
    variant), and which documents are left to the Python path: `t.python`, and those holding an
    integer beyond a long or a decimal of more than 18 digits (null variants here)."""
    python = t.python.copy()
    live = np.flatnonzero(roots >= 0)
    spans = t.close[roots[live]] - roots[live] + 1
    tokens = ranges(roots[live], spans)
    owner = np.repeat(np.arange(len(live)), spans)
    kind = t.kind[tokens]
    is_value = ((kind == _OBJ) | (kind == _ARR) | (kind == _STR) | (kind == _SCALAR)) & ~t.is_key[tokens]
    nodes, owner = tokens[is_value], owner[is_value]
    kind = t.kind[nodes]
    slot_of = np.full(len(t.kind), -1, np.int64)
    slot_of[nodes] = np.arange(len(nodes))
    header = np.zeros(len(nodes), np.int64)
    size = np.zeros(len(nodes), np.int64)
    writes: list[tuple[np.ndarray, int, np.ndarray, np.ndarray]] = []  # (slots, after the header, values, widths)

    text_slots = np.flatnonzero(kind == _STR)
    texts = strings(t, nodes[text_slots])
    text_lengths = pc.binary_length(texts).to_numpy(zero_copy_only=False).astype(np.int64)
    short = text_lengths < 64
    header[text_slots] = np.where(short, _SHORT_STRING | (text_lengths << 2), _LONG_STRING_H)
    size[text_slots] = np.where(short, 1, 5) + text_lengths
    writes.append((text_slots[~short], 1, text_lengths[~short], np.full(int((~short).sum()), 4)))
    python[t.doc[nodes[_scalars(t, nodes, kind, header, size, writes)]]] = True

    # each container's children, in their order (an object's by key name)
    parent_token = t.parent[nodes]
    child = np.flatnonzero(parent_token >= 0)
    child = child[slot_of[parent_token[child]] >= 0]  # the roots' own parents lie outside
    child_parent = slot_of[parent_token[child]]
    place = t.rank[nodes[child]] // 2  # in an array: value, comma, value, ...
    field_id = np.zeros(len(child), np.int64)
    in_object = np.flatnonzero(kind[child_parent] == _OBJ)
    keys = nodes[child[in_object]] - 2
    field_id[in_object], entries = _keys(t, keys, owner[child[in_object]])
    place[in_object] = t.key_place[keys]
    order = np.lexsort((place, child_parent))
    child, child_parent, field_id, place = child[order], child_parent[order], field_id[order], place[order]

    # bottom up: a container's size from its children's
    containers = np.flatnonzero((kind == _OBJ) | (kind == _ARR))
    is_object = kind[containers] == _OBJ
    count = np.bincount(child_parent, minlength=len(nodes))[containers]
    last = np.r_[child_parent[1:] != child_parent[:-1], True] if len(child) else np.zeros(0, bool)
    max_id = np.zeros(len(nodes), np.int64)
    max_id[child_parent[last]] = field_id[last]  # ids follow key order: the last child's is the largest
    max_id = max_id[containers]
    child_level = t.level[nodes[child]]
    container_level = t.level[nodes[containers]]
    total = np.zeros(len(nodes), np.int64)
    for level in range(int(container_level.max(initial=-1)), -1, -1):
        at = child_level == level + 1
        total += np.bincount(child_parent[at], weights=size[child[at]], minlength=len(nodes)).astype(np.int64)
        mine = container_level == level
        here = containers[mine]
        size[here] = _container_size(count[mine], total[here], max_id[mine], is_object[mine])
    total = total[containers]
    offset_width = _width(total)
    id_width = np.where(is_object, _width(max_id), 0)
    large = count > 255
    count_width = np.where(large, 4, 1)
    info = (offset_width - 1) | np.where(is_object, (id_width - 1) << 2, 0) | np.where(
        large, np.where(is_object, 1 << 4, 1 << 2), 0)
    header[containers] = np.where(is_object, _OBJECT, _ARRAY) | (info << 2)

    # top down: where each value goes in its document's bytes
    sizes = size[child]
    before = np.cumsum(sizes) - sizes
    within = before - before[group_first_index(group_starts(child_parent))]  # offset among its siblings
    container_of = np.full(len(nodes), -1, np.int64)
    container_of[containers] = np.arange(len(containers))
    c = container_of[child_parent]
    ids_at = 1 + count_width[c]
    offsets_at = ids_at + count[c] * id_width[c]
    data_at = offsets_at + (count[c] + 1) * offset_width[c]
    start = np.zeros(len(nodes), np.int64)
    for level in range(int(child_level.min(initial=0)), int(child_level.max(initial=-1)) + 1):
        at = child_level == level
        start[child[at]] = start[child_parent[at]] + data_at[at] + within[at]
    root_size = size[slot_of[roots[live]]]
    base = np.cumsum(root_size) - root_size
    position = base[owner] + start

    out = np.zeros(int(root_size.sum()), np.uint8)
    out[position] = header
    put_texts(out, position[text_slots] + np.where(short, 1, 5), texts)
    for slots, after, values, widths in writes:
        _put_uints(out, position[slots] + after, values, widths)
    parent_at = position[child_parent]
    _put_uints(out, parent_at + ids_at + place * id_width[c], field_id, id_width[c])
    _put_uints(out, parent_at + offsets_at + place * offset_width[c], within, offset_width[c])
    at = position[containers]
    _put_uints(out, at + 1, count, count_width)
    _put_uints(out, at + 1 + count_width + count * id_width + count * offset_width, total, offset_width)

    valid = np.zeros(len(roots), bool)
    valid[live] = True
    valid &= ~python
    values = _binary(out, live, root_size, len(roots))
    metadata = _metadata(*entries, live, len(roots))
    return pa.StructArray.from_arrays([values, metadata], fields=list(VARIANT_ARROW), mask=from_numpy(~valid)), python


def _scalars(t: Tape, nodes: np.ndarray, kind: np.ndarray, header: np.ndarray, size: np.ndarray,
             writes: list) -> np.ndarray:
    """Headers, sizes and payload writes of the literals and numbers among `nodes`, as Spark's
    parse_json encodes them: integers in the narrowest of 1/2/4/8 bytes, numbers with a fraction
    as the narrowest decimal, with an exponent as doubles. Returns the numbers of more than 18
    digits but longs, left to the Python path (integers beyond a long, 16-byte decimals)."""
    slots = np.flatnonzero(kind == _SCALAR)
    first = t.data[t.start[nodes[slots]]]
    for letter, literal in ((b"t", _TRUE_H), (b"f", _FALSE_H), (b"n", _NULL_H)):
        header[slots[first == letter[0]]] = literal
    size[slots] = 1
    numbers = slots[(first != ord("t")) & (first != ord("f")) & (first != ord("n"))]
    starts, ends = t.start[nodes[numbers]], t.end[nodes[numbers]]
    texts = segments(t.data, starts, ends).view(pa.large_string())
    has_exponent = pc.match_substring_regex(texts, "[eE]").to_numpy(zero_copy_only=False)
    dot = pc.find_substring(texts, ".").to_numpy(zero_copy_only=False).astype(np.int64)
    negative = t.data[starts] == ord("-")
    digits = ends - starts - negative - (dot >= 0)
    long_19 = _fits_a_long(texts, negative) & ~has_exponent & (dot < 0) & (digits == 19)  # e.g. snowflake ids
    wide = ~has_exponent & (digits > 18) & ~long_19

    integer = ~has_exponent & (dot < 0) & ~wide
    values = pc.cast(texts.filter(integer), pa.int64()).to_numpy(zero_copy_only=False)
    widths = np.where((values >= -128) & (values < 128), 1, np.where(
        (values >= -32768) & (values < 32768), 2, np.where((values >= -(1 << 31)) & (values < 1 << 31), 4, 8)))
    header[numbers[integer]] = np.select([widths == w for w in (1, 2, 4)], [_INT_H[w] for w in (1, 2, 4)], _INT_H[8])
    size[numbers[integer]] = 1 + widths
    writes.append((numbers[integer], 1, values, widths))

    decimal = ~has_exponent & (dot >= 0) & ~wide
    fractions = texts.filter(decimal)
    unscaled = pc.cast(pc.replace_substring(fractions, ".", ""), pa.int64()).to_numpy(zero_copy_only=False)
    scale = (ends - starts)[decimal] - 1 - dot[decimal]
    precision = np.maximum(1 + np.searchsorted(_POWERS_OF_TEN, np.abs(unscaled), "right"), scale)
    widths = np.where(precision <= 9, 4, 8)
    header[numbers[decimal]] = np.where(widths == 4, _DECIMAL4_H, _DECIMAL8_H)
    size[numbers[decimal]] = 2 + widths
    writes.append((numbers[decimal], 1, scale, np.ones(len(scale), np.int64)))
    writes.append((numbers[decimal], 2, unscaled, widths))

    double = has_exponent
    bits = pc.cast(texts.filter(double), pa.float64()).to_numpy(zero_copy_only=False).view(np.int64)
    header[numbers[double]] = _DOUBLE_H
    size[numbers[double]] = 9
    writes.append((numbers[double], 1, bits, np.full(len(bits), 8)))
    return numbers[wide]


def _fits_a_long(texts: pa.Array, negative: np.ndarray) -> np.ndarray:
    """Whether each 19-digit integer text lies within a long's range (digit texts of one length
    compare as their numbers do)."""
    magnitude = pc.if_else(pa.array(negative), pc.utf8_slice_codeunits(texts, 1), texts)
    limit = pc.if_else(pa.array(negative), pa.scalar(str(2**63)), pa.scalar(str(2**63 - 1)))
    return pc.less_equal(magnitude, limit).to_numpy(zero_copy_only=False)


_POWERS_OF_TEN = 10 ** np.arange(1, 19, dtype=np.int64)  # digits of n: 1 + how many of these are <= n


def _keys(t: Tape, keys: np.ndarray, owners: np.ndarray) -> tuple[np.ndarray, tuple[np.ndarray, pa.Array]]:
    """For object members (their key tokens): each one's id in its document's dictionary, and
    the dictionaries: (owner, key) sorted and unique."""
    texts = strings(t, keys)
    by_owner = pc.sort_indices(pa.table({"o": owners, "k": _utf16_order(texts)}),
                               [("o", "ascending"), ("k", "ascending")]).to_numpy()
    owner_sorted, texts_sorted = owners[by_owner], texts.take(by_owner)
    new_owner = group_starts(owner_sorted)
    new_key = new_owner | ~_equal_to_previous(texts_sorted)
    entry = np.cumsum(new_key) - 1
    ids = np.empty(len(keys), np.int64)
    ids[by_owner] = entry - entry[group_first_index(new_owner)]
    return ids, (owner_sorted[new_key], texts_sorted.filter(pa.array(new_key)))


def _utf16_order(texts: pa.Array) -> pa.Array:
    """UTF-8 texts made to sort byte by byte as Java's Strings sort (`variant.utf16_order`):
    a character beyond the BMP (a 4-byte sequence, F0-F4 ...) sorts as its surrogates do,
    after U+D7FF (ED 9F BF) and before U+E000 (EE 80 80), so its lead byte becomes ED A0-A4."""
    offsets_buffer, data_buffer = texts.buffers()[1:3]
    offsets = np.frombuffer(offsets_buffer, np.int64)[texts.offset:texts.offset + len(texts) + 1]
    data = np.frombuffer(data_buffer, np.uint8) if data_buffer is not None else np.zeros(0, np.uint8)
    data = data[offsets[0]:offsets[-1]]
    lead = data >= 0xF0
    if not lead.any():
        return texts
    widened = np.repeat(data, np.where(lead, 2, 1))
    at = np.flatnonzero(lead) + np.arange(int(lead.sum()))  # each lead byte's place once widened
    widened[at] = 0xED
    widened[at + 1] = 0xA0 + (data[lead] - 0xF0)
    extra = np.r_[0, np.cumsum(lead)]
    new_offsets = (offsets - offsets[0]) + extra[offsets - offsets[0]]
    return pa.Array.from_buffers(pa.large_binary(), len(texts), [None, pa.py_buffer(new_offsets),
                                                                   pa.py_buffer(widened)])


def group_starts(groups: np.ndarray) -> np.ndarray:
    """Where a new group begins in sorted `groups`."""
    return np.r_[True, groups[1:] != groups[:-1]] if len(groups) else np.zeros(0, bool)


def group_first_index(starts: np.ndarray) -> np.ndarray:
    """For each item, the index of its group's first item (groups begin where `starts`)."""
    return np.maximum.accumulate(np.where(starts, np.arange(len(starts)), 0)) if len(starts) else np.zeros(0, np.int64)


def _equal_to_previous(texts: pa.Array) -> np.ndarray:
    if len(texts) < 2:
        return np.zeros(len(texts), bool)
    same = pc.equal(texts.slice(1), texts.slice(0, len(texts) - 1)).to_numpy(zero_copy_only=False)
    return np.r_[False, same]


def _container_size(count: np.ndarray, total: np.ndarray, max_id: np.ndarray, is_object: np.ndarray) -> np.ndarray:
    """Header, count, field ids, offsets and children (FORMAT: `VARIANT`)."""
    return (1 + np.where(count > 255, 4, 1) + count * np.where(is_object, _width(max_id), 0)
            + (count + 1) * _width(total) + total)


def _width(largest: np.ndarray) -> np.ndarray:
    """Bytes of the unsigned integers the encoding sizes by their largest value: 1 to 4."""
    return 1 + (largest > 0xFF) + (largest > 0xFFFF) + (largest > 0xFFFFFF)


def ranges(starts: np.ndarray, lengths: np.ndarray) -> np.ndarray:
    """`range(starts[i], starts[i] + lengths[i])` for each i, one after the other."""
    ends = np.cumsum(lengths)
    return np.repeat(starts - (ends - lengths), lengths) + np.arange(int(ends[-1]) if len(ends) else 0)


def put_texts(out: np.ndarray, at: np.ndarray, texts: pa.Array) -> None:
    """Copy each of `texts` into `out` from its `at`."""
    offsets_buffer, data_buffer = texts.buffers()[1:3]
    offsets = np.frombuffer(offsets_buffer, np.int64)[texts.offset:texts.offset + len(texts) + 1]
    if data_buffer is None or offsets[-1] == offsets[0]:
        return
    data = np.frombuffer(data_buffer, np.uint8)
    lengths = np.diff(offsets)
    out[ranges(at, lengths)] = data[ranges(offsets[:-1], lengths)]


def _put_uints(out: np.ndarray, at: np.ndarray, values: np.ndarray, widths: np.ndarray) -> None:
    """Little-endian integers of 1 to 8 bytes each (two's complement for negative ones)."""
    values = np.asarray(values, np.int64)
    widths = np.asarray(widths, np.int64)
    for width in np.flatnonzero(np.bincount(widths, minlength=9)).tolist():
        if width == 0:
            continue
        mine = widths == width
        where, these = at[mine], values[mine]
        for byte in range(width):
            out[where + byte] = (these >> (8 * byte)) & 0xFF


def _binary(out: np.ndarray, live: np.ndarray, sizes: np.ndarray, n: int) -> pa.Array:
    """A binary array of n items: the live ones' bytes one after the other in `out`, the rest empty."""
    lengths = np.zeros(n, np.int64)
    lengths[live] = sizes
    offsets = np.r_[0, np.cumsum(lengths)].astype(np.int64)
    binary = pa.Array.from_buffers(pa.large_binary(), n, [None, pa.py_buffer(offsets), pa.py_buffer(out)])
    return binary.cast(pa.binary())


def _metadata(owners: np.ndarray, keys: pa.Array, live: np.ndarray, n: int) -> pa.Array:
    """Each live document's dictionary of its keys (sorted, unique; version 1, not flagged
    sorted, as `variant.encode` writes it), the others empty."""
    lengths = pc.binary_length(keys).to_numpy(zero_copy_only=False).astype(np.int64)
    count = np.bincount(owners, minlength=len(live))
    key_bytes = np.bincount(owners, weights=lengths, minlength=len(live)).astype(np.int64)
    width = _width(np.maximum(count, key_bytes))
    size = 1 + width * (count + 2) + key_bytes
    base = np.cumsum(size) - size
    out = np.zeros(int(size.sum()), np.uint8)
    out[base] = 1 | ((width - 1) << 6)
    _put_uints(out, base + 1, count, width)
    before = np.cumsum(lengths) - lengths
    first = group_starts(owners)
    within = before - before[group_first_index(first)] if len(owners) else before
    place = np.arange(len(owners)) - group_first_index(first)
    w = width[owners]
    _put_uints(out, base[owners] + 1 + w + place * w, within, w)
    _put_uints(out, base + 1 + width + count * width, key_bytes, width)
    put_texts(out, base[owners] + 1 + w * (count[owners] + 2) + within, keys)
    return _binary(out, live, size, n)
