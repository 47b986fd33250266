"""Names Paimon reserves for system columns (Java's `SpecialFields`).

Data files of primary-key tables carry `_KEY_<k>`, `_SEQUENCE_NUMBER` and `_VALUE_KIND`;
`_LEVEL`, `rowkind` (audit-log system table) and `_ROW_ID` (row tracking) are reserved too.
A table column with one of these names would be confused with the system column (an input
`_VALUE_KIND` taken as row kinds, say), so Paimon refuses them when a table is created and
we refuse them there and in every written batch.
"""
from __future__ import annotations

KEY_PREFIX = "_KEY_"
SEQUENCE_NUMBER = "_SEQUENCE_NUMBER"
VALUE_KIND = "_VALUE_KIND"
LEVEL = "_LEVEL"
ROW_KIND = "rowkind"
ROW_ID = "_ROW_ID"
SYSTEM_FIELD_NAMES = frozenset({SEQUENCE_NUMBER, VALUE_KIND, LEVEL, ROW_KIND, ROW_ID})


def is_system_field(name: str) -> bool:
    """Java's `SpecialFields.isSystemField`: key columns and the system columns."""
    return name.startswith(KEY_PREFIX) or name in SYSTEM_FIELD_NAMES


def reserved_names_message(names: list[str]) -> str:
    return (f"column name(s) {names} are reserved by Paimon for system columns "
            f"({', '.join(sorted(SYSTEM_FIELD_NAMES))} and the prefix {KEY_PREFIX}); rename them")
