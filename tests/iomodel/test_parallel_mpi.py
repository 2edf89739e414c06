"""The parallel model against small real ``mpiexec -n 2`` jobs traced with ``ioadvisor run``.

Each rank works on its own chunks of one array (benchmarks/validation/mpi_replay_worker.py)
and reports its /proc/self/io counts for its I/O phase; the model, replaying
the merged trace rank by rank, must count the same bytes and requests.
"""
import json
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

from instrumentation.records import AccessRecord, Selection
from instrumentation.tracefile import load_trace
from iomodel import FEATURES, SystemProfile, predict
from iomodel.layout import Layout
from iomodel.parallel import mpio_uncached
from iomodel.predict import pick_dataset
from iomodel.replay import evict
from iomodel.variables import count_variables

BIN = Path(sys.executable).parent
WORKER = Path(__file__).resolve().parents[2] / "benchmarks" / "validation" / "mpi_replay_worker.py"
ROWS, COLS, CHUNK = 40_000, 16, 5_000
PROFILE = SystemProfile({lib: {v: 1e-6 for v in FEATURES} for lib in ("hdf5", "zarr")},
                        page_cache_bytes=1 << 34, data_servers=2, stripe_count=2)


def run_job(tmp_path, mode, path, chunks, block, procs=2):
    trace, out = tmp_path / "T.jsonl", tmp_path / "out.json"
    cmd = [str(BIN / "mpiexec"), "-n", str(procs), str(BIN / "ioadvisor"), "run", "-o", str(trace), "--",
           sys.executable, str(WORKER), mode, str(path), str(ROWS), str(COLS), *map(str, chunks), str(block), str(out)]
    res = subprocess.run(cmd, capture_output=True, text=True, timeout=120, cwd=tmp_path)
    assert res.returncode == 0, res.stderr
    return load_trace(trace), json.loads(out.read_text())


def rank_variables(trace, layout):
    ds = pick_dataset(trace)
    return [count_variables([a for a in trace.accesses if a.rank == r], ds, layout, PROFILE.page_cache_bytes)
            for r in sorted({a.rank for a in trace.accesses})]


def _acc(op, rank):
    return AccessRecord(0, op, Selection.box((rank * 10, 0), (10, 4)), 40, 160, 0.0, 0.0, rank=rank)


def test_mpio_uncached_only_for_hdf5_ranks_writing_a_shared_file():
    reads = [_acc("read", r) for r in range(4)]
    writes = [_acc("write", r) for r in range(4)]
    assert not mpio_uncached("hdf5", 4, reads)  # read-only: every rank keeps its chunk cache
    assert mpio_uncached("hdf5", 4, writes + reads)
    assert not mpio_uncached("hdf5", 4, reads + [_acc("write", 0)])  # one writer: serial h5py can do that
    assert mpio_uncached("hdf5", 4, [_acc("write", 0)])  # one recorded rank replicated on 4 (weak scaling)
    assert not mpio_uncached("hdf5", 1, writes)
    assert not mpio_uncached("zarr", 4, writes)


@pytest.mark.mpi
def test_zarr_ranks_write_disjoint_chunks(tmp_path):
    import zarr

    path = tmp_path / "a.zarr"
    zarr.create_array(str(path), shape=(ROWS, COLS), chunks=(CHUNK, COLS), dtype="f4", compressors=None)
    trace, out = run_job(tmp_path, "zarr-write", path, (CHUNK, COLS), CHUNK)
    assert {a.rank for a in trace.accesses} == {0, 1}
    pred = predict(trace, Layout.from_dataset(pick_dataset(trace)), PROFILE, procs=2)
    assert len(pred.per_rank_seconds) == 2 and pred.seconds == max(pred.per_rank_seconds)
    assert pred.cf == pytest.approx(1.5)
    chunk_files = [f for f in (path / "c").rglob("*") if f.is_file()]
    assert len(chunk_files) == ROWS // CHUNK
    per_rank = rank_variables(trace, Layout.from_dataset(pick_dataset(trace)))
    # each rank set its own half of the chunk files, whole, with one store operation each
    assert sum(v.s_wdisk for v in per_rank) == sum(f.stat().st_size for f in chunk_files)
    for v, io in zip(per_rank, out["io"]):
        assert v.n_zopen == v.n_wdisk == ROWS // CHUNK // 2
        assert v.n_rdisk == v.n_cache == 0
        # wchar also holds this rank's own trace lines (a few KiB at most)
        assert v.s_wdisk <= io["wchar"] <= v.s_wdisk + 65536
        assert v.n_wdisk <= io["syscw"] <= v.n_wdisk + 8
    assert np.asarray(zarr.open_array(str(path), mode="r")[:]).any(axis=1).all()


@pytest.mark.mpi
def test_hdf5_ranks_read_disjoint_hyperslabs(tmp_path):
    import h5py

    path = tmp_path / "a.h5"
    chunks = (CHUNK, 4)  # narrow chunks: a full-width slab is 4-element runs in each chunk
    with h5py.File(path, "w") as f:
        f.create_dataset("data", data=np.ones((ROWS, COLS), "f4"), chunks=chunks)
    evict(path)
    trace, out = run_job(tmp_path, "hdf5-read", path, chunks, CHUNK // 2)
    layout = Layout.from_dataset(pick_dataset(trace))
    assert not mpio_uncached("hdf5", 2, trace.accesses)
    per_rank = rank_variables(trace, layout)
    for v, io in zip(per_rank, out["io"]):
        # serial h5py in each rank: its chunk cache keeps each chunk, read once and whole
        n_chunks = ROWS // CHUNK // 2 * (COLS // 4)
        assert v.n_rdisk + v.n_cache == n_chunks
        assert v.s_rdisk + v.s_cache == n_chunks * CHUNK * 4 * 4
        # plus a few index (B-tree) and sieve reads of metadata
        assert v.n_rdisk + v.n_cache <= io["syscr"] <= v.n_rdisk + v.n_cache + v.n_rindex + 8
        assert v.s_rdisk + v.s_cache <= io["rchar"] <= v.s_rdisk + v.s_cache + 65536
