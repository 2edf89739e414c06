"""The flusher's passes (instrumentation/hotpath/passes.c, hub._flush_loop): seldom, woken by a filling recorder, and
handed the GIL by the traced calls."""
import threading
import time

import h5py
import numpy as np
import pytest

import advisor
from instrumentation import hooks_h5py, hub  # hooks_h5py sets the kick threshold when imported
from instrumentation import tracer as tracer_module

_hotpath = tracer_module.hotpath
pytestmark = pytest.mark.skipif(_hotpath is None or not hasattr(_hotpath, "flusher_wait"),
                                reason="the C hooks were not built (no C compiler)")
YIELD_SECONDS = 0.02
"""passes.c YIELD_NS: the longest a traced call waits for one pass."""


@pytest.fixture
def ds(tmp_path):
    with h5py.File(tmp_path / "d.h5", "w") as f:
        yield f.create_dataset("x", data=np.arange(100.0).reshape(10, 10), chunks=(5, 5))


@pytest.fixture
def no_passes(monkeypatch):
    """The hub's own flusher asleep while a test announces passes of its own."""
    monkeypatch.setattr(hub, "FLUSH_INTERVAL", 3600.0)
    monkeypatch.setattr(hub, "QUIET_PASS_SECONDS", 3600.0)


def test_a_filling_recorder_wakes_the_flusher_before_its_pass_is_due(tmp_path, ds, no_passes):
    assert hooks_h5py.KICK_PENDING == tracer_module.KICK_PENDING
    _hotpath.set_kick(100)
    try:
        with advisor.trace(tmp_path / "t.parquet") as t:
            ds[0, 0:2]  # the first access: described by the Python hooks
            for i in range(98):
                ds[i % 10, 0:2]
            time.sleep(0.1)
            assert len(t.recorder) == 99  # no pass: not due for an hour
            ds[1, 1:3]  # the 100th record: the flusher is woken
            deadline = time.monotonic() + 10
            while len(t.recorder) and time.monotonic() < deadline:
                time.sleep(0.01)
            assert len(t.recorder) == 0
    finally:
        _hotpath.set_kick(tracer_module.KICK_PENDING)
    assert t.load().n_access == 100


def test_a_traced_call_waits_once_for_an_announced_pass(tmp_path, ds, no_passes):
    announced, done = threading.Event(), threading.Event()

    def flusher():  # announces a pass it does not end until told
        _hotpath.flusher_wait(0.0)
        announced.set()
        done.wait(10)
        _hotpath.pass_done()

    with advisor.trace(tmp_path / "t.parquet"):
        ds[0, 0:2]
        th = threading.Thread(target=flusher)
        th.start()
        assert announced.wait(10)
        t0 = time.perf_counter()
        ds[1, 0:2]  # waits for the pass, at most YIELD_SECONDS
        first = time.perf_counter() - t0
        t0 = time.perf_counter()
        for i in range(20):
            ds[i % 10, 0:2]  # the same pass: no more waiting
        rest = time.perf_counter() - t0
        done.set()
        th.join()
    assert first >= YIELD_SECONDS * 0.9
    assert rest < 20 * YIELD_SECONDS * 0.5


def test_a_traced_call_goes_on_as_soon_as_the_pass_ends(tmp_path, ds, no_passes):
    announced = threading.Event()
    waited = []

    def flusher():
        _hotpath.flusher_wait(0.0)
        announced.set()
        time.sleep(0.002)
        _hotpath.pass_done()

    with advisor.trace(tmp_path / "t.parquet") as t:
        ds[0, 0:2]
        for _ in range(10):
            announced.clear()
            th = threading.Thread(target=flusher)
            th.start()
            announced.wait(10)
            t0 = time.perf_counter()
            ds[1, 0:2]
            waited.append(time.perf_counter() - t0)
            th.join()
    # one of ten passes ends well before YIELD_SECONDS (a loaded machine may delay a few)
    assert min(waited) < YIELD_SECONDS * 0.75
    assert t.load().n_access == 11
