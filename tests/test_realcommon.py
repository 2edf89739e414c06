"""The realistic workloads' helpers (benchmarks/workloads/realcommon.py): the untraced program times its reads of the
advised array around h5py's ``Dataset.__getitem__``, the span the tracer times, for realsize's recipe against verify."""
from __future__ import annotations

import h5py
import numpy as np
import pytest

from benchmarks.workloads import realcommon


def test_h5py_reads_of_the_named_array_are_timed_once_each(tmp_path, monkeypatch):
    monkeypatch.setattr(h5py.Dataset, "__getitem__", h5py.Dataset.__getitem__)  # restored after the test
    with h5py.File(tmp_path / "a.h5", "w") as f:
        f.create_dataset("tas", data=np.arange(400, dtype="f4").reshape(20, 20), chunks=(5, 5))
        f.create_dataset("lat", data=np.arange(20.0))
    spans = realcommon._time_h5py_calls("tas")
    with h5py.File(tmp_path / "a.h5", "r") as f:
        got = f["tas"][2:7, 3:9]
        f["lat"][:]  # a coordinate: not the advised array
        f["tas"][0]
    assert got.shape == (5, 6) and got[0, 0] == 43  # what the program reads is unchanged
    assert len(spans) == 2 and all(e >= b for b, e in spans)


def test_overlapping_calls_count_once():
    assert realcommon._union_seconds([(0.0, 2.0), (1.0, 3.0), (5.0, 6.0), (5.5, 5.7)]) == pytest.approx(4.0)
    assert realcommon._union_seconds([]) == 0.0
