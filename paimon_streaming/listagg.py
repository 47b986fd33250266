"""Paimon's `listagg` aggregate function, vectorized across keys (the aggregation merge engine
and sequence groups of partial-update).

Java's `FieldListaggAgg` (Paimon 1.4.2) folds a key's strings one at a time: a null or empty
value adds nothing, the first non-empty value is kept as it is, and each later one is appended
after `fields.<f>.list-agg-delimiter` (default ","). With `fields.<f>.distinct`, a later value
is split by the delimiter (an empty delimiter: by " ") and, one by one, its non-empty tokens
that the accumulated string, split the same way, does not hold yet are appended. Older rows of
a sequence group fold in with the arguments swapped (`aggReversed`): they go in front.

Here: the values in that order are joined per key (`binary_join`). Distinct: every token of
every value, with its key, is dictionary-encoded, and a later value's token is kept where it is
the first occurrence of its (key, token). That is Java's fold as long as splitting the joined
string gives back the pieces joined, which always holds for a non-empty delimiter that cannot
overlap itself (","). With other delimiters (" - ", "") the keys where it does not hold are
folded as Java does, one value at a time.
"""
from __future__ import annotations

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

__all__ = ["listagg"]


def listagg(values: pa.Array, used: np.ndarray, gid: np.ndarray, groups: int, delimiter: str, distinct: bool,
            older: np.ndarray | None = None) -> pa.Array:
    """Per group (`gid`, `groups` in all) the `used` rows of `values` (strings, in merge order)
    folded as Java's listagg; `older` marks rows folded in with aggReversed. Null where a group
    has no value, "" where its values are all empty."""
    used = used & pc.is_valid(values).to_numpy(zero_copy_only=False)
    length = pc.fill_null(pc.binary_length(values), 0).to_numpy(zero_copy_only=False)
    e = np.arange(len(values), dtype=np.int64)
    place = e + 1 if older is None else np.where(older, -(e + 1), e + 1)
    order = np.flatnonzero(used & (length > 0))
    order = order[np.lexsort((place[order], gid[order]))]
    pieces, piece_gid = values.take(pa.array(order, pa.int64())), gid[order]
    if distinct:
        pieces, piece_gid, tokens, token_gid = _distinct_pieces(pieces, piece_gid, delimiter)
    result = _join(pieces, piece_gid, groups, delimiter)
    if distinct and not _composes(delimiter):
        result = _refold_where_split_differs(result, tokens, token_gid, values, used, gid, older, delimiter)
    any_value = np.zeros(groups, bool)
    any_value[gid[used]] = True
    return pc.if_else(pa.array(any_value & pc.is_null(result).to_numpy(zero_copy_only=False)),
                      pa.scalar("", pa.string()), result)


def _distinct_pieces(pieces: pa.Array, gid: np.ndarray, delimiter: str):
    """The pieces a distinct listagg joins per group (sorted by group): the group's first value
    as it is, then each later token where it is its group's first occurrence. Also every token
    the joined string splits into if the split composes (the first value's, then those kept)."""
    n = len(pieces)
    first = np.ones(n, bool)
    first[1:] = gid[1:] != gid[:-1]
    split = pc.split_pattern(pieces, _separator(delimiter))
    flat = pc.list_flatten(split)
    parent = pc.list_parent_indices(split).to_numpy(zero_copy_only=False)
    codes = pc.dictionary_encode(flat).indices.to_numpy(zero_copy_only=False).astype(np.int64)
    token_gid = gid[parent]
    pair = token_gid * (int(codes.max(initial=0)) + 1) + codes
    occurs_first = np.zeros(len(flat), bool)
    occurs_first[np.unique(pair, return_index=True)[1]] = True
    in_first = first[parent]
    keep = occurs_first & ~in_first & (pc.binary_length(flat).to_numpy(zero_copy_only=False) > 0)
    starts = split.offsets.to_numpy()[:-1][first]   # each group's first token
    head = np.zeros(len(flat), bool)
    head[starts] = True
    out = pc.if_else(pa.array(head), pieces.take(pa.array(parent, pa.int64())), flat)
    chosen = head | keep
    listed = in_first | keep
    return (out.filter(pa.array(chosen)), token_gid[chosen], flat.filter(pa.array(listed)), token_gid[listed])


def _join(pieces: pa.Array, gid: np.ndarray, groups: int, delimiter: str) -> pa.Array:
    """The pieces (sorted by group) joined per group with the delimiter; null for no piece."""
    counts = np.bincount(gid, minlength=groups)
    offsets = np.concatenate([[0], np.cumsum(counts)]).astype(np.int32)
    lists = pa.ListArray.from_arrays(pa.array(offsets), pieces, mask=pa.array(counts == 0))
    return pc.binary_join(lists, delimiter)


def _separator(delimiter: str) -> str:
    return delimiter or " "   # Java's splitByWholeSeparatorPreserveAllTokens splits on " " then


def _composes(delimiter: str) -> bool:
    """Whether splitting `a + delimiter + b` always gives the tokens of a, then b (a token never
    holds the delimiter): the delimiter is not empty and no proper prefix of it is a suffix."""
    d = delimiter.encode()
    return bool(d) and not any(d[:k] == d[-k:] for k in range(1, len(d)))


def _refold_where_split_differs(result: pa.Array, tokens: pa.Array, token_gid: np.ndarray, values: pa.Array,
                                used: np.ndarray, gid: np.ndarray, older: np.ndarray | None,
                                delimiter: str) -> pa.Array:
    """`result` with the groups whose joined string does not split back into `tokens` folded
    one value at a time as Java does (rare: tokens that end or start with part of the delimiter)."""
    groups = len(result)
    split = pc.split_pattern(result, _separator(delimiter))
    got = pc.fill_null(pc.list_value_length(split), 0).to_numpy(zero_copy_only=False)
    want = np.bincount(token_gid, minlength=groups)
    differs = got != want
    same = ~differs & (want > 0)
    mine = pc.list_flatten(split.filter(pa.array(same)))
    theirs = tokens.filter(pa.array(same[token_gid]))
    unequal = pc.not_equal(mine, theirs).to_numpy(zero_copy_only=False)
    differs[np.unique(token_gid[same[token_gid]][unequal])] = True
    if not differs.any():
        return result
    rows = np.flatnonzero(used & differs[gid])
    events = zip(gid[rows].tolist(), values.take(pa.array(rows, pa.int64())).to_pylist(),
                 (older[rows] if older is not None else np.zeros(len(rows), bool)).tolist())
    acc: dict[int, str] = {}
    for g, value, is_older in events:
        acc[g] = _java_agg(value, acc.get(g), delimiter) if is_older else _java_agg(acc.get(g), value, delimiter)
    at = np.flatnonzero(differs)
    slot = np.full(groups, -1, np.int64)
    slot[at] = np.arange(len(at))
    fixed = pa.array([acc.get(int(g)) for g in at], pa.string())
    return pc.if_else(pa.array(differs), fixed.take(pa.array(np.maximum(slot, 0), pa.int64())), result)


def _java_agg(acc: str | None, value: str | None, delimiter: str) -> str | None:
    """FieldListaggAgg.agg with distinct, for one pair of strings."""
    if acc is None or value is None:
        return value if acc is None else acc
    if not value:
        return acc
    if not acc:
        return value
    sep = _separator(delimiter)
    seen = set(acc.split(sep))
    out = [acc]
    for token in value.split(sep):
        if token and token not in seen:
            seen.add(token)
            out.append(token)
    return delimiter.join(out)
