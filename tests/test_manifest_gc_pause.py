"""Metadata decoding pauses cyclic garbage collection (manifest/files.py `paused_gc`) and
always gives the collector back as it found it, also with nested and concurrent holders and
when decoding fails."""
from __future__ import annotations

import gc
import threading

import pytest

from paimon_streaming.manifest.files import paused_gc


@pytest.fixture(autouse=True)
def collector_restored():
    was = gc.isenabled()
    yield
    if was:
        gc.enable()
    else:
        gc.disable()


def test_pause_restores_the_collectors_state():
    gc.enable()
    with paused_gc():
        assert not gc.isenabled()
        with paused_gc():
            assert not gc.isenabled()
        assert not gc.isenabled()  # the outer holder still decodes
    assert gc.isenabled()
    gc.disable()  # a caller who turned it off keeps it off
    with paused_gc():
        pass
    assert not gc.isenabled()


def test_a_failed_decode_and_concurrent_holders_give_it_back():
    gc.enable()
    with pytest.raises(ValueError):
        with paused_gc():
            raise ValueError("damaged")
    assert gc.isenabled()
    inside, release = threading.Barrier(3), threading.Event()

    def hold():
        with paused_gc():
            inside.wait()
            release.wait()
    threads = [threading.Thread(target=hold) for _ in range(2)]
    for t in threads:
        t.start()
    inside.wait()
    assert not gc.isenabled()
    release.set()
    for t in threads:
        t.join()
    assert gc.isenabled()
