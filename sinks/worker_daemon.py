"""Spark's Python worker daemon for local sessions: PySpark from its installed package, and
workers that freeze their long-lived objects after their first task.

Spark starts its Python workers with its own archives first on `PYTHONPATH`
(`$SPARK_HOME/python/lib/pyspark.zip` and py4j's source zip). Python cannot cache the bytecode
of modules imported from a zip, so every worker process compiles PySpark from source: 1.2 s
more per process than from a pip-installed PySpark's byte-compiled package (`import
pyspark.sql.pandas.serializers`: 1.6 s against 0.4 s here), paid again by each worker a
stream's first micro-batch starts.

With `spark.python.daemon.module` set to this module (`paimon-streaming demo` and `ingest` do
so in local mode, see `ingest_command.session_confs`), the daemon drops such an archive from its
path when the same version is installed beside this package, then runs PySpark's own daemon
(`pyspark.daemon`, which forks the workers). Anything else (a Spark distribution's archives
without an installed copy, other versions) keeps Spark's path as it is.

The forked workers also freeze what their first task leaves alive (`gc.freeze`, after a full
collection): PySpark's daemon runs a full `gc.collect()` after every task of a reused worker,
and with PySpark, pyarrow and this package imported that walks some 75,000 objects, 60-90 ms a
task, several tasks a micro-batch; after the freeze it walks only what later tasks create.
What the first task keeps (a cached Kafka consumer, say) is frozen with the imports: if it
later becomes cyclic garbage it stays in memory, once per worker, as only that task's
survivors are frozen.

Imports nothing heavy: the daemon must not start threads before it forks (pyspark.daemon).
"""
from __future__ import annotations

import gc
import os
import sys
import zipfile
from importlib.machinery import PathFinder
from typing import Any, Callable

# Spark's archive name prefix -> (the package in it, its file that names the version)
ARCHIVES = {"pyspark.zip": ("pyspark", "pyspark/version.py"), "py4j-": ("py4j", "py4j/version.py")}


def _archive_package(entry: str) -> tuple[str, str] | None:
    name = os.path.basename(entry)
    for prefix, package in ARCHIVES.items():
        if name.startswith(prefix) and name.endswith(".zip"):
            return package
    return None


def _installed_copy_matches(archive: str, package: str, version_file: str, rest: list[str]) -> bool:
    """True when `package` is importable from `rest` (not an archive) with the archive's
    version file byte for byte."""
    spec = PathFinder.find_spec(package, rest)
    if spec is None or not spec.submodule_search_locations:
        return False
    installed = os.path.join(list(spec.submodule_search_locations)[0], os.path.basename(version_file))
    try:
        with zipfile.ZipFile(archive) as z, open(installed, "rb") as f:
            return z.read(version_file) == f.read()
    except (OSError, KeyError, zipfile.BadZipFile):
        return False


def prefer_installed_packages(path: list[str]) -> list[str]:
    """`path` without Spark's archives whose package is installed, same version, on the rest."""
    rest = [p for p in path if not p.endswith((".zip", ".jar"))]
    dropped = {entry for entry in path if (package := _archive_package(entry))
               and _installed_copy_matches(entry, *package, rest)}
    return [p for p in path if p not in dropped]


def freezing_after_first_task(run_task: Callable[..., Any]) -> Callable[..., Any]:
    """`run_task` (pyspark.daemon.worker: one task in a forked worker), which after its first
    task collects garbage once and freezes the survivors: the imports, not the task's data."""
    frozen = False

    def run(*args: Any) -> Any:
        nonlocal frozen
        code = run_task(*args)
        if not frozen:
            gc.collect()
            gc.freeze()
            frozen = True
        return code
    return run


def main() -> None:
    kept = prefer_installed_packages(sys.path)
    for entry in set(sys.path) - set(kept):
        sys.path_importer_cache.pop(entry, None)
    sys.path[:] = kept
    from pyspark import daemon
    daemon.worker = freezing_after_first_task(daemon.worker)  # manager() looks it up at each fork
    daemon.manager()


if __name__ == "__main__":
    main()
