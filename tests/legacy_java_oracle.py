"""Older Apache Paimon Java versions (0.8 .. 1.3) as writers and readers of test tables.

``tests/java_legacy/`` is a small Maven project whose program speaks the JSON protocol of
``tests/java`` (``tests/java_oracle.py``: create, write, read, snapshots, compact, create-tag,
alter; plus ``rollback`` and ``version``) with only API that every Paimon from 0.8 on has. It is
built once per version, on demand, with ``mvn -q -B package -Dpaimon.version=X`` into
``tests/java_legacy/target-X/`` and skipped while the hash of ``pom.xml`` and the sources
matches the one stored there by the last good build (as ``java_oracle`` does). A first build of
a version downloads its paimon-bundle (~40-47 MB) and takes ~10-15 s; a JVM call 1-3 s.

``get_legacy_oracle("0.9.0")`` gives a :class:`LegacyJavaOracle`: a
:class:`java_oracle.JavaOracle` whose ``batch()`` queues the same operations, run by that
version. Values are encoded as ``java_oracle`` documents (no VARIANT or MULTISET: 0.8 has
neither). Like ``java_oracle``, missing Java/Maven or a failed build raises
:class:`JavaOracleUnavailable`, so tests fail rather than skip.
"""
from __future__ import annotations

import hashlib
import os
import shutil
from pathlib import Path

try:
    from java_oracle import JAVA_DIR, Batch, JavaOracle, JavaOracleUnavailable, Pending, _find_java, parse_type
except ImportError:  # pragma: no cover
    from tests.java_oracle import JAVA_DIR, Batch, JavaOracle, JavaOracleUnavailable, Pending, _find_java, parse_type

LEGACY_DIR = Path(__file__).resolve().parent / "java_legacy"
# Every paimon-bundle release line before 1.4 that Maven Central serves, newest patch of each.
VERSIONS = ("0.8.2", "0.9.0", "1.0.1", "1.1.1", "1.2.0", "1.3.1")
CI_VERSIONS = ("0.8.2",)  # the oldest, furthest from today's format (tests/test_interop_java_versions.py)


class LegacyBatch(Batch):
    """java_oracle's Batch plus the operations only the legacy program has; a schema change
    (add, rename) queued here also changes the columns later writes of the same batch encode,
    so a table's history fits in one JVM run."""

    def alter(self, path, changes, branch=None) -> Pending:
        path = str(path)
        types = dict(self._types(path, branch))
        for c in changes:
            name = c["path"][-1]
            if c["kind"] == "add":
                types[name] = parse_type(c["type"])
            elif c["kind"] == "rename":
                types = {c["newName"] if k == name else k: t for k, t in types.items()}
        self._created[path] = types
        return super().alter(path, changes, branch)

    def rollback(self, path, snapshot_id: int | None = None, tag: str | None = None) -> Pending:
        op = {"op": "rollback", "path": str(path)}
        if tag is not None:
            op["tag"] = tag
        else:
            op["snapshotId"] = int(snapshot_id)
        return self._add(op)

    def version(self) -> Pending:
        return self._add({"op": "version", "path": "/"}, lambda r: r["version"])


class LegacyJavaOracle(JavaOracle):
    """One older Paimon version (its own build under tests/java_legacy/target-<version>)."""

    def __init__(self, version: str, java: str, mvn: str | None):
        super().__init__(java, mvn, LEGACY_DIR)
        self.version = version
        self.target = LEGACY_DIR / f"target-{version}"

    def _build_flags(self) -> list[str]:
        return [f"-Dpaimon.version={self.version}"]

    def _build_digest(self) -> str:
        """The version, this project's sources and the ones it shares with tests/java."""
        shared = hashlib.sha256()
        for f in sorted((JAVA_DIR / "src" / "shared").rglob("*")):
            if f.is_file():
                shared.update(str(f.relative_to(JAVA_DIR)).encode() + f.read_bytes())
        return f"{self.version}:{self._source_hash()}:{shared.hexdigest()}"

    def _build_what(self) -> str:
        return f"Paimon {self.version}'s writer"

    def batch(self) -> LegacyBatch:
        return LegacyBatch(self)


_ORACLES: dict[str, LegacyJavaOracle] = {}


def get_legacy_oracle(version: str) -> LegacyJavaOracle:
    """Paimon `version`'s oracle, built on first use. Raises JavaOracleUnavailable without
    Java/Maven or when the build fails."""
    if version not in _ORACLES:
        java = _find_java()
        if java is None:
            raise JavaOracleUnavailable("Java (17+) is not installed: it is needed to run Paimon's Java library")
        mvn = shutil.which(os.environ.get("PAIMON_ORACLE_MVN") or "mvn")
        oracle = LegacyJavaOracle(version, java, mvn)
        oracle.ensure_built()
        _ORACLES[version] = oracle
    return _ORACLES[version]


if __name__ == "__main__":
    # `python tests/legacy_java_oracle.py [version ...]`: build ahead of a test run (default: CI_VERSIONS).
    import sys
    for v in sys.argv[1:] or CI_VERSIONS:
        o = get_legacy_oracle(v)
        with o.batch() as b:
            p = b.version()
        print(f"Paimon {v} writer ready: {o.target} (reports version {p.result})")
