"""The libhdf5 interposer's own start in a traced process (its constructor): what every traced program pays once,
whatever it does (benchmarks/speed/tracing_overhead.py --fixed-only)."""
from __future__ import annotations

import os
import statistics
import subprocess

import pytest

from instrumentation import preload

pytestmark = pytest.mark.skipif(preload.library() is None, reason="the libhdf5 interposer was not built")


def _minor_faults(env: dict) -> int:
    proc = subprocess.Popen(["/bin/true"], env=env)
    _, _, usage = os.wait4(proc.pid, 0)
    return usage.ru_minflt


def test_starting_to_record_touches_no_more_memory_than_loading(tmp_path):
    """Recording into a log directory from the start costs a few pages more than the library loaded idle, not its
    caches' 3 MB (which the loader hands over zeroed: clearing them again faulted in every page)."""
    base = {k: v for k, v in os.environ.items() if k not in ("LD_PRELOAD", preload.LOG_DIR_VAR)}
    idle = {**base, "LD_PRELOAD": str(preload.library())}
    recording = {**idle, preload.LOG_DIR_VAR: str(tmp_path)}
    idle_faults = statistics.median(_minor_faults(idle) for _ in range(5))
    recording_faults = statistics.median(_minor_faults(recording) for _ in range(5))
    assert list(tmp_path.glob("exe-*")), "the interposer did not record (its look for a linked-in libhdf5)"
    assert recording_faults - idle_faults < 100, (idle_faults, recording_faults)
