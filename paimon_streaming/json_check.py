"""A check for the JSON metadata files (snapshots, tags, schemas, consumer progress).

These files carry no checksum, and a damaged byte that keeps them valid JSON changes a value
silently: a digit of a `commitIdentifier` (an exactly-once batch taken for committed), of a
consumer's `nextSnapshot` (a stream resumed past unread changes), of `bucket` (rows routed to
other buckets). Files written here hold `paimon-streaming.check`, a CRC32 of the values it
covers, in a place every Paimon reader ignores: a snapshot's `properties` (a standard field
that Java copies into the tags and changelogs it makes of a snapshot), a top-level key of a
schema or consumer file (Java's readers skip unknown keys). Files of other writers have no
check and are read as before; a file whose check fails is damaged.
"""
from __future__ import annotations

import json
import zlib
from typing import Any

CHECK_KEY = "paimon-streaming.check"


def json_check(values: Any) -> str:
    """The check of `values` (JSON-serializable): a CRC32 of their canonical JSON."""
    canonical = json.dumps(values, sort_keys=True, separators=(",", ":"))
    return f"{zlib.crc32(canonical.encode()):08x}"


def check_mismatch(stored: Any, actual: str) -> str | None:
    """Why values whose check is `actual` fail the check `stored` was written with, or None."""
    if stored == actual:
        return None
    return (f"its values do not match the {CHECK_KEY} written with them ({stored!r}, computed {actual!r}): "
            "a value was altered after it was written")
