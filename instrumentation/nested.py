"""What the libhdf5 interposer did inside a call that the h5py hooks timed around it.

On its first sight of a dataset id the interposer (interposer/h5interpose.c) describes the dataset before its own
timed span, inside the h5py call whose span the h5py hooks time; listing a chunked dataset's chunk offsets reads
the chunk index, which made the first of 24 cold column reads 24 ms slower traced than untraced
(benchmarks/validation/realsize.py r03: the recipe's traced reads against ``verify``'s replay). The h5py hooks take
that time out of the span of the call that first sees a dataset (``described_within``)."""
from __future__ import annotations

import ctypes
import os

_described = None
"""The interposer's ``ioadv_described`` once looked up; False when this process was not started with it."""


def _lookup():
    from .preload import library, preloaded

    if not preloaded():
        return False
    try:
        fn = ctypes.CDLL(str(library()), mode=os.RTLD_NOLOAD | os.RTLD_LAZY).ioadv_described
    except (OSError, AttributeError):  # an interposer built before it had the function
        return False
    fn.argtypes, fn.restype = [ctypes.c_double, ctypes.c_double], ctypes.c_double
    return fn


def described_within(t0: float, dt: float) -> float:
    """Seconds this thread's interposer spent describing datasets in the span ``t0`` .. ``t0 + dt``
    (``time.perf_counter`` seconds); 0 without the interposer."""
    global _described
    if _described is None:
        _described = _lookup()
    return _described(t0, t0 + dt) if _described else 0.0


__all__ = ["described_within"]
