"""A chunk cache lives only while its dataset is open: the model empties a process's cache where its accesses'
open span (``AccessColumns.epoch``, from the trace's opens and closes) changes."""
import json
import os
import subprocess
import sys
from dataclasses import replace
from pathlib import Path

import numpy as np

import advisor
from instrumentation.columns import AccessColumns
from instrumentation.records import AccessRecord, DatasetRecord, Selection
from iomodel.layout import Layout
from iomodel.features import FEATURES
from iomodel.predict import Workload, pick_dataset, predict
from iomodel.profile import SystemProfile
from iomodel.replayer import Replay

SHAPE, CHUNKS = (400, 8), (100, 8)
DS = DatasetRecord(0, "hdf5", "2", "/nowhere/x.h5", "/x", SHAPE, "float64", chunks=CHUNKS,
                   filters=())
CHUNK_BYTES = 100 * 8 * 8
ROOT = Path(__file__).resolve().parents[2]


def rows(rs, epochs, op="read", proc=0):
    recs = [AccessRecord(0, op, Selection.box((r, 0), (1, 8)), 8, 64, 1e-3 * k, 1e-4, process=proc)
            for k, r in enumerate(rs)]
    return AccessColumns.from_records(recs).with_epochs(np.asarray(epochs))


def variables(cols, layout=None):
    layout = layout or Layout.from_dataset(DS)
    replay = Replay(DS, layout, 1 << 30)
    for lo in range(0, cols.rows, 3):  # fed in windows, as the predictions feed long traces
        replay.feed(cols.rows_between(lo, lo + 3))
    return replay.result()


def test_a_reopen_empties_the_chunk_cache():
    once = variables(rows([0, 1, 2, 3, 4, 5], [0] * 6))
    reopened = variables(rows([0, 1, 2, 3, 4, 5], [0, 0, 1, 1, 2, 2]))
    assert once.s_alloc == CHUNK_BYTES  # chunk 0 cached once, hit five times
    assert reopened.s_alloc == 3 * CHUNK_BYTES  # loaded again in each open span
    assert reopened.n_calls == once.n_calls


def test_dirty_chunks_are_written_back_at_the_close_before_a_reopen():
    once = variables(rows([0, 1], [0, 0], op="write"))
    reopened = variables(rows([0, 1], [0, 1], op="write"))
    assert reopened.n_wdisk == once.n_wdisk + 1  # chunk 0 written at the close, and again at the end


def test_each_process_s_open_spans_are_its_own():
    """Two processes' accesses interleaved in one window: process 1's reopen empties its cache only."""
    a, b = rows([0, 1, 2, 3], [0, 0, 0, 0], proc=1), rows([0, 1, 2, 3], [0, 0, 1, 1], proc=2)
    mixed = AccessColumns.concat([a, b])
    mixed = mixed.take(np.argsort(np.r_[np.arange(4) * 2, np.arange(4) * 2 + 1], kind="stable"))
    assert variables(mixed).s_alloc == 3 * CHUNK_BYTES


def _variables_json(epochs) -> dict:
    small_cache = replace(Layout.from_dataset(DS), rdcc_nbytes=5 * CHUNK_BYTES, rdcc_nslots=7)
    v = variables(rows(list(range(0, 400, 37)) * 2, epochs, op="read"), small_cache)
    return {k: float(x) for k, x in v.__dict__.items()}


def test_the_numba_kernels_and_the_pure_python_replay_agree():
    """The same replay with numba's compiled kernels and as plain Python (NUMBA_DISABLE_JIT=1), reopens
    included."""
    epochs = [0] * 11 + [1] * 6 + [3] * 5
    jit = _variables_json(epochs)
    code = ("import json, sys; sys.path.insert(0, 'tests/iomodel'); import test_reopen as t; "
            f"print(json.dumps(t._variables_json({epochs!r})))")
    env = {**os.environ, "NUMBA_DISABLE_JIT": "1", "PYTHONPATH": str(ROOT)}
    out = subprocess.run([sys.executable, "-c", code], cwd=ROOT, env=env, capture_output=True, text=True,
                         timeout=600, check=True)
    python = json.loads(out.stdout.strip().splitlines()[-1])
    assert python == jit
    assert jit["s_alloc"] > _variables_json([0] * 22)["s_alloc"]


def test_a_traced_program_that_reopens_its_file_is_predicted_to_decode_more(tmp_path):
    """h5py: ``with h5py.File`` per batch, each batch reading rows of the same gzip'd chunk. Recorded, the
    closes make the model decode the chunk once per batch; the same accesses as one open (an older trace) once."""
    import h5py

    from instrumentation.tracefile import Trace

    data = tmp_path / "d.h5"
    with h5py.File(data, "w") as f:
        f.create_dataset("x", data=np.arange(3200.0).reshape(SHAPE), chunks=CHUNKS, compression="gzip")
    with advisor.trace(tmp_path / "t.parquet") as t:
        for k in range(4):
            with h5py.File(data, "r") as f:
                x = f["x"]
                x[2 * k]
                x[2 * k + 1]
    trace = t.load()
    x = pick_dataset(trace, "x")
    layout = Layout.from_dataset(x)
    new = Workload.of_trace(trace, x).variables(layout, 1 << 30)[0]
    one_open = Trace(trace.headers, trace.datasets, trace.columns.with_epochs(np.zeros(trace.columns.rows)),
                     trace.resizes, source="one open")
    old = Workload.of_trace(one_open, x).variables(layout, 1 << 30)[0]
    assert old.s_decode == CHUNK_BYTES and new.s_decode == 4 * CHUNK_BYTES
    profile = SystemProfile({"hdf5": {v: 1e-6 for v in FEATURES}}, page_cache_bytes=1 << 34)
    assert predict(trace, layout, profile, dataset=x).seconds > predict(one_open, layout, profile, dataset=x).seconds
