"""VARIANT values printed as JSON text, vectorized: the bulk path of `variant.to_json`.

The variants of a batch are walked level by level with numpy (each container's children found
from its offsets), each leaf's text made by Arrow kernels for all leaves of its type at once
(Java's number texts from `java_casts.java_float_text`), each container's text length summed
bottom up, and the text written top down with scatters.

The path is conservative: a variant holding a value it does not print (binary, a TIME, a
UUID, a nanosecond timestamp, a 16-byte decimal, a date or timestamp outside the years 1 to
9999) or that is not well formed (anything out of its bytes' bounds, a key id beyond the
dictionary, text that is not UTF-8, nesting deeper than `MAX_DEPTH`) is marked for the caller,
which prints it in Python (`variant.decode`), so rare values and errors keep that path's text
and messages (`tests/test_variant_text.py` compares the two).
"""
from __future__ import annotations

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from .java_casts import java_float_text
from .variant_json import group_first_index, group_starts, put_texts, ranges, segments

MAX_DEPTH = 128

# leaf kinds (primitive type ids of the encoding, strings as one kind)
_NULL, _TRUE, _FALSE, _INT8, _INT16, _INT32, _INT64, _DOUBLE = 0, 1, 2, 3, 4, 5, 6, 7
_DECIMAL4, _DECIMAL8, _DATE, _TIMESTAMP, _TIMESTAMP_NTZ, _FLOAT, _STRING = 8, 9, 11, 12, 13, 14, 16
_OBJECT, _ARRAY = 100, 101
_SIZES = {_NULL: 1, _TRUE: 1, _FALSE: 1, _INT8: 2, _INT16: 3, _INT32: 5, _INT64: 9, _DOUBLE: 9, _DECIMAL4: 6,
          _DECIMAL8: 10, _DATE: 5, _TIMESTAMP: 9, _TIMESTAMP_NTZ: 9, _FLOAT: 5}
_FIRST_DAY, _LAST_DAY = -719_162, 2_932_896  # 0001-01-01 and 9999-12-31, days from 1970-01-01
_FIRST_MICRO, _LAST_MICRO = _FIRST_DAY * 86_400_000_000, (_LAST_DAY + 1) * 86_400_000_000 - 1


def json_texts(values: pa.Array, metadatas: pa.Array, valid: np.ndarray) -> tuple[pa.Array, np.ndarray]:
    """The JSON text of each valid variant (null elsewhere) and which ones are left to Python."""
    n = len(values)
    data, offsets = _bytes(values)
    mdata, moffsets = _bytes(metadatas)
    python = ~valid.copy()
    python |= offsets[1:] <= offsets[:-1]
    key_base, key_count, key_width = _dictionaries(mdata, moffsets, python)

    # the tree, level by level: node positions, their variant, parent, place and key id
    node_pos, node_var, node_parent, node_place, node_key = [], [], [], [], []
    level_pos = offsets[:-1][~python]
    level_var = np.flatnonzero(~python)
    level_parent = np.full(len(level_pos), -1, np.int64)
    level_place = np.zeros(len(level_pos), np.int64)
    level_key = np.full(len(level_pos), -1, np.int64)
    seen = 0
    nodes_so_far = np.zeros(n, np.int64)
    kinds, levels = [], []
    for depth in range(MAX_DEPTH + 2):
        nodes_so_far += np.bincount(level_var, minlength=n)
        python |= nodes_so_far > offsets[1:] - offsets[:-1]  # values read twice (`variant._decode`)
        followed = ~python[level_var]
        level_pos, level_var, level_parent, level_place, level_key = (
            level_pos[followed], level_var[followed], level_parent[followed], level_place[followed], level_key[followed])
        if not len(level_pos):
            break
        if depth > MAX_DEPTH:
            python[level_var] = True
            break
        kind, (child_parent, child_pos, child_place, child_key) = _nodes(
            data, offsets, level_pos, level_var, key_count, python)
        node_pos.append(level_pos), node_var.append(level_var), node_parent.append(level_parent)
        node_place.append(level_place), node_key.append(level_key)
        kinds.append(kind), levels.append(np.full(len(kind), depth))
        level_var, level_pos = level_var[child_parent], child_pos
        level_parent, level_place, level_key = child_parent + seen, child_place, child_key
        seen += len(kind)
    if not node_pos:  # every variant null or left to Python
        return pa.repeat(pa.scalar("", pa.large_string()), n), python & valid
    pos, var, parent = np.concatenate(node_pos), np.concatenate(node_var), np.concatenate(node_parent)
    place, key, kind = np.concatenate(node_place), np.concatenate(node_key), np.concatenate(kinds)
    level = np.concatenate(levels)

    # leaf texts, one Arrow array per kind
    length = np.zeros(len(pos), np.int64)
    leaves: list[tuple[np.ndarray, pa.Array]] = []
    for kinds_here, make in _LEAF_TEXTS:
        at = np.flatnonzero(np.isin(kind, kinds_here) & ~python[var])
        if len(at):
            texts, bad = make(data, pos[at], kind[at])
            python[var[at[bad]]] = True
            texts = texts.cast(pa.large_string())
            length[at] = pc.binary_length(texts).to_numpy(zero_copy_only=False)
            leaves.append((at, texts))
    members = np.flatnonzero(parent >= 0)
    in_object = members[(kind[parent[members]] == _OBJECT) & ~python[var[members]]]
    keys, bad = _quoted_keys(mdata, key_base[var[in_object]], key_count[var[in_object]], key[in_object],
                             key_width[var[in_object]], moffsets[var[in_object] + 1])
    python[var[in_object[bad]]] = True
    key_length = np.zeros(len(pos), np.int64)
    key_length[in_object] = pc.binary_length(keys).to_numpy(zero_copy_only=False) + 1  # and the colon
    drop = python[var]  # variants left to Python: their nodes out of the text
    keep = np.flatnonzero(~drop)

    # bottom up: a container's text is its brackets, its members, their keys and commas
    containers = np.flatnonzero((kind == _OBJECT) | (kind == _ARRAY))
    count = np.bincount(parent[members], minlength=len(pos))
    for depth in range(int(level.max(initial=0)), -1, -1):
        at = members[level[members] == depth + 1]
        sums = np.bincount(parent[at], weights=length[at] + key_length[at], minlength=len(pos)).astype(np.int64)
        here = containers[level[containers] == depth]
        length[here] = 2 + sums[here] + np.maximum(count[here] - 1, 0)

    # top down: where each member's key and text go, then the bytes
    by_parent = members[np.lexsort((place[members], parent[members]))]
    segment = key_length[by_parent] + length[by_parent]
    before = np.cumsum(segment) - segment
    within = before - before[group_first_index(group_starts(parent[by_parent]))] + place[by_parent]
    roots = np.flatnonzero(parent < 0)
    root_length = np.where(drop[roots], 0, length[roots])
    base = np.zeros(n, np.int64)
    base[var[roots]] = np.cumsum(root_length) - root_length
    start = np.zeros(len(pos), np.int64)
    start[roots] = base[var[roots]]
    for depth in range(1, int(level.max(initial=0)) + 1):
        at = level[by_parent] == depth
        start[by_parent[at]] = start[parent[by_parent[at]]] + 1 + within[at] + key_length[by_parent[at]]
    out = np.zeros(int(root_length.sum()), np.uint8)
    live = np.zeros(len(pos), bool)
    live[keep] = True
    for at, texts in leaves:
        mine = live[at]
        put_texts(out, start[at[mine]], texts.filter(pa.array(mine)))
    for bracket, kind_of in ((b"{}", _OBJECT), (b"[]", _ARRAY)):
        these = containers[(kind[containers] == kind_of) & live[containers]]
        out[start[these]] = bracket[0]
        out[start[these] + length[these] - 1] = bracket[1]
    member_live = live[by_parent]
    key_start = start[by_parent] - key_length[by_parent]
    later = member_live & (place[by_parent] > 0)
    out[key_start[later] - 1] = ord(",")
    objects = member_live & (kind[parent[by_parent]] == _OBJECT)
    key_index = np.full(len(pos), -1, np.int64)
    key_index[in_object] = np.arange(len(in_object))
    put_texts(out, key_start[objects], keys.take(pa.array(key_index[by_parent[objects]])))
    out[start[by_parent[objects]] - 1] = ord(":")

    lengths = np.zeros(n, np.int64)
    lengths[var[roots]] = root_length
    text_offsets = np.r_[0, np.cumsum(lengths)].astype(np.int64)
    texts = pa.Array.from_buffers(pa.large_string(), n, [None, pa.py_buffer(text_offsets), pa.py_buffer(out)])
    return texts, python & valid


def _bytes(binary: pa.Array) -> tuple[np.ndarray, np.ndarray]:
    binary = binary.cast(pa.large_binary())
    offsets_buffer, data_buffer = binary.buffers()[1:3]
    offsets = np.frombuffer(offsets_buffer, np.int64)[binary.offset:binary.offset + len(binary) + 1]
    data = np.frombuffer(data_buffer, np.uint8) if data_buffer is not None else np.zeros(0, np.uint8)
    return data, offsets


def _uints(data: np.ndarray, at: np.ndarray, widths: np.ndarray | int) -> np.ndarray:
    """Little-endian unsigned integers of 1 to 4 bytes (callers check the bounds)."""
    widths = np.broadcast_to(widths, at.shape)
    value = np.zeros(len(at), np.int64)
    for byte in range(4):
        reach = widths > byte
        value[reach] |= data[at[reach] + byte].astype(np.int64) << (8 * byte)
    return value


def _dictionaries(mdata: np.ndarray, moffsets: np.ndarray, python: np.ndarray):
    """Per variant: where its key offsets start, how many keys, their width; a metadata that is
    not version 1 or too short leaves its variant to Python."""
    first, end = moffsets[:-1], moffsets[1:]
    python |= end - first < 1
    header = np.where(python, 1, mdata[np.minimum(first, max(len(mdata) - 1, 0))] if len(mdata) else 1)
    python |= (header & 0x0F) != 1
    width = (header >> 6) + 1
    python |= first + 1 + width > end
    count = np.where(python, 0, _uints(mdata, np.where(python, 0, first + 1), np.where(python, 0, width)))
    python |= first + 1 + width * (count + 2) > end
    return np.where(python, 0, first + 1 + width), np.where(python, 0, count), width


def _nodes(data, offsets, pos, var, key_count, python):
    """Kind and size of the nodes at `pos`, and their children: (parent index, position, place,
    key id). Anything out of bounds or unprinted leaves its variant to Python."""
    end = offsets[var + 1]
    header = data[np.minimum(pos, len(data) - 1)].astype(np.int64)
    basic, info = header & 3, header >> 2
    kind = np.where(basic == 0, info, np.where(basic == 1, _STRING, np.where(basic == 2, _OBJECT, _ARRAY)))
    fixed = np.array([_SIZES.get(k, 0) for k in range(256)], np.int64)
    size = np.where(basic == 1, 1 + info, fixed[np.minimum(kind, 255)])
    long_string = (basic == 0) & (info == _STRING)
    python[var[long_string & (pos + 5 > end)]] = True
    size[long_string] = 5 + _uints(data, np.where(long_string & (pos + 5 <= end), pos + 1, 0)[long_string], 4)
    printed = (basic != 0) | np.isin(info, list(_SIZES) + [_STRING])
    python[var[~printed]] = True
    python[var[(basic < 2) & (pos + size > end)]] = True

    container = np.flatnonzero((basic >= 2) & ~python[var])
    is_object = basic[container] == 2
    c_info = info[container]
    offset_width = (c_info & 3) + 1
    id_width = np.where(is_object, ((c_info >> 2) & 3) + 1, 0)
    large = np.where(is_object, (c_info >> 4) & 1, (c_info >> 2) & 1).astype(bool)
    count_width = np.where(large, 4, 1)
    c_pos, c_end = pos[container], end[container]
    ok = c_pos + 1 + count_width <= c_end
    count = np.where(ok, _uints(data, np.where(ok, c_pos + 1, 0), np.where(ok, count_width, 1)), 0)
    ids_at = c_pos + 1 + count_width
    offsets_at = ids_at + count * id_width
    data_at = offsets_at + (count + 1) * offset_width
    ok &= data_at <= c_end
    python[var[container[~ok]]] = True
    container, count = container[ok], count[ok]
    id_width, offset_width, ids_at, offsets_at, data_at, c_end, is_object = (
        id_width[ok], offset_width[ok], ids_at[ok], offsets_at[ok], data_at[ok], c_end[ok], is_object[ok])

    child_parent = np.repeat(container, count)
    child_place = np.arange(len(child_parent)) - np.repeat(np.cumsum(count) - count, count)
    group = np.repeat(np.arange(len(container)), count)
    offset = _uints(data, offsets_at[group] + child_place * offset_width[group], offset_width[group])
    child_pos = data_at[group] + offset
    child_key = np.where(is_object[group], _uints(data, ids_at[group] + child_place * id_width[group],
                                                  np.maximum(id_width[group], 1)), -1)
    bad = (child_pos >= c_end[group]) | (is_object[group] & (child_key >= key_count[var[child_parent]]))
    python[var[child_parent[bad]]] = True
    return kind, (child_parent, child_pos, child_place, child_key)


# ---- leaf texts: each maker gets the bytes, the leaves' positions and kinds, and returns their
# texts and which of them it cannot print ------------------------------------------------------
def _literals(data, pos, kind):
    return pa.array(["null", "true", "false"]).take(pa.array(kind)), np.zeros(len(pos), bool)


def _integers(data, pos, kind):
    widths = np.select([kind == _INT8, kind == _INT16, kind == _INT32], [1, 2, 4], 8)
    return pc.cast(pa.array(_signed(data, pos + 1, widths)), pa.string()), np.zeros(len(pos), bool)


def _floating(data, pos, kind):
    single = kind == _FLOAT
    values = np.zeros(len(pos), np.float64)
    values[single] = data[ranges(pos[single] + 1, np.full(int(single.sum()), 4))].view("<f4")
    values[~single] = data[ranges(pos[~single] + 1, np.full(int((~single).sum()), 8))].view("<f8")
    parts = []
    for mask, arrow_type in ((single, pa.float32()), (~single, pa.float64())):
        text = java_float_text(pa.array(values[mask], arrow_type))
        parts.append((np.flatnonzero(mask), text))
    texts = _scattered(len(pos), parts)
    odd = ~np.isfinite(values)  # NaN and the infinities, quoted as Java's toJson quotes them
    return pc.if_else(pa.array(odd), _quoted_plain(texts), texts), np.zeros(len(pos), bool)


def _decimals(data, pos, kind):
    scale = data[pos + 1].astype(np.int64)
    unscaled = _signed(data, pos + 2, np.where(kind == _DECIMAL4, 4, 8))
    bad = (scale > 38) | (unscaled == np.iinfo(np.int64).min)
    digits = pc.cast(pa.array(np.abs(np.where(bad, 0, unscaled))), pa.string())
    parts = []
    for s in np.unique(scale[~bad]).tolist():
        at = np.flatnonzero((scale == s) & ~bad)
        text = digits.take(pa.array(at))
        if s:
            text = pc.utf8_lpad(text, s + 1, "0")
            text = _joined(pc.utf8_slice_codeunits(text, 0, -s), ".", pc.utf8_slice_codeunits(text, -s))
            text = pc.utf8_rtrim(pc.utf8_rtrim(text, "0"), ".")  # trailing zeros dropped, as Java's
        parts.append((at, text))
    texts = _scattered(len(pos), parts)
    sign = pc.if_else(pa.array(unscaled < 0), "-", "")
    return _joined(sign, texts), bad


def _dates(data, pos, kind):
    days = _signed(data, pos + 1, 4)
    bad = (days < _FIRST_DAY) | (days > _LAST_DAY)
    text = pc.cast(pa.array(np.where(bad, 0, days).astype(np.int32)).cast(pa.date32()), pa.string())
    return _quoted_plain(text), bad


def _timestamps(data, pos, kind):
    micros = _signed(data, pos + 1, 8)
    bad = (micros < _FIRST_MICRO) | (micros > _LAST_MICRO)
    micros = np.where(bad, 0, micros)
    seconds, fraction = np.divmod(micros, 1_000_000)
    clock = pc.strftime(pa.array(seconds).cast(pa.timestamp("s")), "%Y-%m-%d %H:%M:%S")
    digits = pc.utf8_rtrim(pc.utf8_lpad(pc.cast(pa.array(fraction), pa.string()), 6, "0"), "0")
    point = pc.if_else(pa.array(fraction > 0), ".", "")
    zone = pc.if_else(pa.array(kind == _TIMESTAMP), "+00:00", "")
    return _quoted_plain(_joined(clock, point, digits, zone)), bad


def _strings(data, pos, kind):
    short = data[pos] & 3 == 1
    length = np.where(short, data[pos] >> 2, 0).astype(np.int64)
    length[~short] = _signed(data, pos[~short] + 1, 4) & 0xFFFFFFFF
    first = pos + np.where(short, 1, 5)
    texts = segments(data, first, first + length)
    ok = _utf8(texts)
    return _jackson_quoted(texts, ok), ~ok


_LEAF_TEXTS = [((_NULL, _TRUE, _FALSE), _literals), ((_INT8, _INT16, _INT32, _INT64), _integers),
               ((_DOUBLE, _FLOAT), _floating), ((_DECIMAL4, _DECIMAL8), _decimals), ((_DATE,), _dates),
               ((_TIMESTAMP, _TIMESTAMP_NTZ), _timestamps), ((_STRING,), _strings)]


def _signed(data: np.ndarray, at: np.ndarray, widths: np.ndarray | int) -> np.ndarray:
    """Little-endian two's complement integers of 1, 2, 4 or 8 bytes."""
    widths = np.broadcast_to(np.asarray(widths, np.int64), at.shape)
    value = np.zeros(len(at), np.uint64)
    for byte in range(8):
        reach = widths > byte
        value[reach] |= data[at[reach] + byte].astype(np.uint64) << np.uint64(8 * byte)
    shift = (64 - 8 * widths).astype(np.uint64)
    return (value << shift).view(np.int64) >> shift.astype(np.int64)


def _scattered(n: int, parts: list[tuple[np.ndarray, pa.Array]]) -> pa.Array:
    """Texts given in parts (indices, texts) as one array of n in index order; "" where no part
    gives one (values left to Python)."""
    indices = np.concatenate([at for at, _ in parts] + [np.zeros(0, np.int64)])
    texts = pa.concat_arrays([t.cast(pa.large_string()) for _, t in parts] + [pa.array([""], pa.large_string())])
    order = np.full(n, len(indices), np.int64)
    order[indices] = np.arange(len(indices))
    return texts.take(pa.array(order))


def _quoted_plain(texts: pa.Array) -> pa.Array:
    """Texts that need no escapes, in quotes."""
    return _joined('"', texts, '"')


def _joined(*parts: str | pa.Array) -> pa.Array:
    """Texts and arrays of texts joined item by item (as large strings)."""
    return pc.binary_join_element_wise(*[pa.scalar(p, pa.large_string()) if isinstance(p, str)
                                         else p.cast(pa.large_string()) for p in parts],
                                       pa.scalar("", pa.large_string()))


_SHORT_ESCAPES = {0x08: "\\b", 0x09: "\\t", 0x0A: "\\n", 0x0C: "\\f", 0x0D: "\\r"}


def _jackson_quoted(texts: pa.Array, ok: np.ndarray) -> pa.Array:
    """UTF-8 texts as JSON strings as Jackson writes them (`java_text.jackson_quoted`): backslash
    and quote escaped, control characters as \\b \\t \\n \\f \\r or \\u00XX in upper case hex.
    Texts that are not UTF-8 (`ok` false) come back empty."""
    texts = pc.if_else(pa.array(ok), texts, b"").cast(pa.large_string())
    data = np.frombuffer(texts.buffers()[2], np.uint8) if texts.buffers()[2] is not None else np.zeros(0, np.uint8)
    present = np.bincount(data, minlength=256) > 0 if len(data) else np.zeros(256, bool)
    if present[ord("\\")]:
        texts = pc.replace_substring(texts, "\\", "\\\\")
    if present[ord('"')]:
        texts = pc.replace_substring(texts, '"', '\\"')
    for byte in np.flatnonzero(present[:0x20]).tolist():
        texts = pc.replace_substring(texts, chr(byte), _SHORT_ESCAPES.get(byte, f"\\u{byte:04X}"))
    return _quoted_plain(texts)


def _utf8(texts: pa.Array) -> np.ndarray:
    """Whether each text is UTF-8 (all at once; one by one on failure)."""
    try:
        texts.cast(pa.large_binary()).view(pa.large_string()).validate(full=True)
        return np.ones(len(texts), bool)
    except pa.ArrowInvalid:
        ok = []
        for text in texts.to_pylist():
            try:
                text.decode()
                ok.append(True)
            except UnicodeDecodeError:
                ok.append(False)
        return np.array(ok, bool)


def _quoted_keys(mdata, offsets_at, count, key, width, end):
    """The quoted keys of object members (by their variant's dictionary and id), and which
    cannot be read (out of the metadata's bounds, not UTF-8)."""
    bytes_at = offsets_at + (count + 1) * width
    first = bytes_at + _uints(mdata, offsets_at + key * width, width)
    last = bytes_at + _uints(mdata, offsets_at + (key + 1) * width, width)
    bad = (last < first) | (last > end)
    texts = segments(mdata, np.where(bad, 0, first), np.where(bad, 0, last))
    ok = _utf8(texts) & ~bad
    return _jackson_quoted(texts, ok), ~ok
