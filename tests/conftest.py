"""Shared fixtures (a fresh warehouse per test, the Spark session, the Kafka broker) and the
pypaimon oracle's helpers (re-exported from tests/pypaimon_oracle.py)."""
from __future__ import annotations

import contextlib
import os
import time
from typing import Iterator

import pyarrow as pa
import pytest
from hypothesis import settings
from spark_support import spark_env

# pypaimon (the oracle) runs in its own virtualenv and process: tests/pypaimon_oracle.py
from pypaimon_oracle import (pypaimon_create, pypaimon_create_tag, pypaimon_read,  # noqa: F401
                             pypaimon_tags, pypaimon_write)

# Property tests and hunts draw the same examples in every run (a failure in CI reproduces with
# the same command); `pytest --hypothesis-profile explore` draws new ones, as does a hunt's
# *_EXAMPLES variable where its module says so.
settings.register_profile("repeatable", derandomize=True)
settings.register_profile("explore", derandomize=False)
settings.load_profile("repeatable")

# Every Spark driver the tests start, in this process or as a job or `ingest` command, starts fast.
os.environ.update(spark_env())


@pytest.fixture
def warehouse(tmp_path):
    return str(tmp_path / "wh")


@pytest.fixture
def catalog(warehouse):
    import paimon_streaming as ps
    return ps.Catalog(warehouse)


@pytest.fixture(scope="module")
def spark():
    """The shared local Spark session (imported here only when a test asks for it)."""
    from spark_support import get_spark
    return get_spark()


@pytest.fixture(scope="module")
def broker():
    """The shared loopback Kafka broker, started on first use."""
    from kafka_broker import get_broker
    return get_broker()


def rows_by(table: pa.Table, *keys: str) -> list[dict]:
    """Rows as dicts sorted by the given columns, for order-independent comparison."""
    return sorted(table.to_pylist(), key=lambda r: tuple((r[k] is None, r[k]) for k in keys))


@contextlib.contextmanager
def killed_before_compaction(error: BaseException) -> Iterator[None]:
    """Within the block, a commit raises `error` after a batch's APPEND snapshot and before its
    COMPACT one: the writer dies there, its level-0 files committed but not compacted. `error`
    is no Exception (SystemExit, say): no handler of the writer runs (an Exception there is a
    failed compaction, raised as CompactionNotCommittedError once redoing it failed too)."""
    assert not isinstance(error, Exception), error
    from paimon_streaming.commit import FileStoreCommit
    original = FileStoreCommit._commit_with_retry

    def dies_before_compacting(self, kind, *args, **kwargs):
        if kind == "COMPACT":
            raise error
        return original(self, kind, *args, **kwargs)
    FileStoreCommit._commit_with_retry = dies_before_compacting
    try:
        yield
    finally:
        FileStoreCommit._commit_with_retry = original


@pytest.fixture(params=["one chunk", "chunks of 64 bytes"])
def chunked(request, monkeypatch):
    """Variant batches encoded and printed whole, and slice by slice (`variant_json.chunks`), as
    big ones are."""
    if request.param != "one chunk":
        from paimon_streaming import variant_json
        monkeypatch.setattr(variant_json, "CHUNK_BYTES", 64)


@pytest.fixture
def time_zone():
    """Set this process's local time zone, TZ (as the JVM's default follows it: the oracle's
    JVMs are started in it); restored after."""
    before = os.environ.get("TZ")

    def set_zone(name: str) -> None:
        os.environ["TZ"] = name
        time.tzset()

    yield set_zone
    if before is None:
        os.environ.pop("TZ", None)
    else:
        os.environ["TZ"] = before
    time.tzset()
