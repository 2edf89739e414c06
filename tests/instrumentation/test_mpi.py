import os
import subprocess
import sys
import textwrap
import time
import warnings
from pathlib import Path

import pytest

from instrumentation.mpi import finish, merge_rank_files, rank_path, rank_size
from instrumentation.records import READ, AccessRecord, DatasetRecord, Selection, TraceHeader
from instrumentation.tracefile import TraceError, TraceWriter, load_trace

MPIEXEC = Path(sys.executable).parent / "mpiexec"
LAUNCHER_VARS = ("PMI_RANK", "PMI_SIZE", "OMPI_COMM_WORLD_RANK", "OMPI_COMM_WORLD_SIZE", "PMIX_RANK")


@pytest.fixture
def no_launcher(monkeypatch):
    for var in LAUNCHER_VARS:
        monkeypatch.delenv(var, raising=False)


def test_rank_size_from_launcher_environment(monkeypatch, no_launcher):
    assert rank_size() == (0, 1)
    monkeypatch.setenv("OMPI_COMM_WORLD_RANK", "2")
    monkeypatch.setenv("OMPI_COMM_WORLD_SIZE", "8")
    assert rank_size() == (2, 8)
    monkeypatch.setenv("PMI_RANK", "3")
    monkeypatch.setenv("PMI_SIZE", "4")
    assert rank_size() == (3, 4)


def test_serial_process_does_not_import_mpi4py(tmp_path):
    env = {k: v for k, v in os.environ.items() if k not in LAUNCHER_VARS}
    code = ("import sys; from instrumentation.mpi import rank_size, finish; "
            "assert rank_size() == (0, 1); finish(None, 't.jsonl', 0, 1); print('mpi4py' in sys.modules)")
    out = subprocess.run([sys.executable, "-c", code], env=env, cwd=tmp_path, capture_output=True, text=True)
    assert out.returncode == 0, out.stderr
    assert out.stdout.strip() == "False"


def test_rank_path_names():
    assert rank_path("out/trace.jsonl", 3, 4) == Path("out/trace.rank0003.jsonl")
    assert rank_path("trace.jsonl", 0, 1) == Path("trace.jsonl")
    assert rank_path("trace", 12, 20_000) == Path("trace.rank00012")
    names = {rank_path("t.jsonl", r, 16).name for r in range(16)}
    assert len(names) == 16 and sorted(names) == [f"t.rank{r:04d}.jsonl" for r in range(16)]


def write_rank(path, rank, size, n_access, close=True):
    w = TraceWriter(rank_path(path, rank, size), TraceHeader(1, "h", 100 + rank, rank, size, 1000.0 + rank))
    w.dataset(DatasetRecord(7, "hdf5", "2.0", "shared.h5", "/x", (100, 4), "float32", chunks=(10, 4)))
    for i in range(n_access):
        sel = Selection.box((10 * rank + i, 0), (1, 4))
        w.access(AccessRecord(7, READ, sel, 4, 16, 0.1 * i, 1e-5, rank))
    if close:
        w.close()
    else:
        w.flush()
    return w


def test_merge_keeps_ranks_and_survives_missing_and_truncated(tmp_path):
    path = tmp_path / "t.jsonl"
    write_rank(path, 0, 4, 3)
    write_rank(path, 1, 4, 5, close=False)  # a rank killed mid-run: its live records, no end record, no export
    # rank 2 never wrote its file
    write_rank(path, 3, 4, 2)
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # reported in the trace, never as a warning
        missed = merge_rank_files(path, 4)
    messages = " | ".join(missed)
    assert str(rank_path(path, 2, 4)) in messages and str(rank_path(path, 1, 4)) in messages
    merged = load_trace(path)
    assert merged.missed == tuple(missed) and len(missed) == 2
    assert sorted(a.rank for a in merged.accesses) == [0] * 3 + [1] * 5 + [3] * 2
    assert len(merged.datasets) == 1 and merged.nprocs == 4
    # each rank's clock is shifted onto the earliest origin
    assert min(a.t_start for a in merged.accesses if a.rank == 3) == pytest.approx(3.0)


def test_merge_starts_over_when_a_rank_exports_its_live_trace_meanwhile(tmp_path, monkeypatch):
    import instrumentation.merge as merge

    path = tmp_path / "t.jsonl"
    write_rank(path, 0, 2, 3)
    late = write_rank(path, 1, 2, 5, close=False)  # read as its live directory
    real = merge.rank_sources

    def exporting_meanwhile(files):
        found = real(files)
        late.close()  # rank 1 exports its file and removes its live directory while rank 0 merges
        return found

    monkeypatch.setattr(merge, "rank_sources", exporting_meanwhile)
    assert merge_rank_files(path, 2) == []
    assert sorted(a.rank for a in load_trace(path).accesses) == [0] * 3 + [1] * 5


def test_merge_with_no_readable_rank_is_an_error(tmp_path):
    with pytest.raises(TraceError, match="no rank trace"):
        merge_rank_files(tmp_path / "t.jsonl", 2)


def test_finish_single_process_writes_nothing(tmp_path):
    finish(None, tmp_path / "t.jsonl", 0, 1)
    assert list(tmp_path.iterdir()) == []


# --- real MPI jobs (mpich wheel's mpiexec) ---------------------------------------------------------------

RANK_APP = textwrap.dedent("""
    import sys
    from instrumentation.mpi import finish, rank_path, rank_size
    from instrumentation.records import READ, AccessRecord, DatasetRecord, Selection, TraceHeader
    from instrumentation.tracefile import TraceWriter, load_trace
    mode, path = sys.argv[1], sys.argv[2]
    comm = None
    if mode == "comm":
        from mpi4py import MPI
        comm = MPI.COMM_WORLD
    rank, size = rank_size(comm)
    w = TraceWriter(rank_path(path, rank, size), TraceHeader(1, "h", 0, rank, size, 0.0))
    w.dataset(DatasetRecord(0, "zarr", "3", "s.zarr", "/a", (64, 8), "float64", chunks=(8, 8)))
    for i in range(rank + 1):
        w.access(AccessRecord(0, READ, Selection.box((8 * rank, 0), (8, 8)), 64, 512, 0.0, 1e-5, rank))
    w.close()
    if mode == "finalized":
        from mpi4py import MPI
        MPI.Finalize()  # the program ended MPI itself: no barrier possible any more
    finish(comm, path, rank, size)
    if mode != "finalized" or rank == 0:  # with a barrier every rank returns once the merged view exists
        with open(f"{path}.seen{rank}", "w") as fh:  # not stdout: mpiexec may interleave ranks' lines
            fh.write(str(len(load_trace(path).accesses)))
""")


def mpiexec(n, *args, timeout=60, cwd=None):
    return subprocess.run([str(MPIEXEC), "-n", str(n), *args], capture_output=True, text=True,
                          timeout=timeout, cwd=cwd)


@pytest.mark.mpi
@pytest.mark.parametrize("n, mode", [(4, "env"), (3, "comm"), (2, "finalized")])
def test_finish_merges_rank_files_under_mpiexec(tmp_path, n, mode):
    app = tmp_path / "app.py"
    app.write_text(RANK_APP)
    path = tmp_path / "t.jsonl"
    out = mpiexec(n, sys.executable, str(app), mode, str(path))
    assert out.returncode == 0, out.stderr
    expected = n * (n + 1) // 2
    seen = {r: int(Path(f"{path}.seen{r}").read_text()) for r in range(n) if Path(f"{path}.seen{r}").exists()}
    assert seen == {r: expected for r in (range(n) if mode != "finalized" else [0])}
    for r in range(n):
        own = load_trace(rank_path(path, r, n))
        assert own.header.rank == r and own.header.size == n and len(own.accesses) == r + 1
    merged = load_trace(path)
    assert merged.nprocs == n
    counts = {r: sum(a.rank == r for a in merged.accesses) for r in range(n)}
    assert counts == {r: r + 1 for r in range(n)}


COMM_APP = textwrap.dedent("""
    import sys
    from mpi4py import MPI
    import h5py
    import advisor

    world = MPI.COMM_WORLD
    color = world.Get_rank() % 2
    comm = world.Split(color, world.Get_rank())  # two groups, each traced into its own file
    path = f"{sys.argv[2]}{color}.jsonl"
    with advisor.trace(path, comm=comm) as tracer:
        with h5py.File(sys.argv[1], "r") as f:
            for _ in range(world.Get_rank() + 1):
                f["x"][world.Get_rank()]
    assert str(tracer.path) == str(__import__("pathlib").Path(path).absolute())
    tr = tracer.load()  # the merged view, on every rank of the group
    assert tr.nprocs == comm.Get_size(), tr.nprocs
""")


@pytest.mark.mpi
def test_trace_with_an_mpi4py_communicator(tmp_path):
    import h5py
    import numpy as np

    with h5py.File(tmp_path / "x.h5", "w") as f:
        f["x"] = np.arange(40.0).reshape(4, 10)
    app = tmp_path / "app.py"
    app.write_text(COMM_APP)
    out = mpiexec(4, sys.executable, str(app), str(tmp_path / "x.h5"), str(tmp_path / "t"))
    assert out.returncode == 0, out.stderr
    for color in (0, 1):
        merged = load_trace(tmp_path / f"t{color}.jsonl")
        world_ranks = [color, color + 2]  # sub-communicator rank r is world rank color + 2 r
        assert merged.nprocs == 2
        assert {r: sum(a.rank == r for a in merged.accesses) for r in (0, 1)} == {
            r: world_ranks[r] + 1 for r in (0, 1)}
        for r in (0, 1):
            assert load_trace(rank_path(tmp_path / f"t{color}.jsonl", r, 2)).header.size == 2


def test_rank0_waits_for_open_files_and_gives_up_on_missing_ones(tmp_path, monkeypatch):
    import threading

    from instrumentation import mpi

    monkeypatch.setattr(mpi, "MISSING_SECONDS", 0.5)
    path = tmp_path / "t.jsonl"
    write_rank(path, 0, 3, 1)
    late = write_rank(path, 1, 3, 1, close=False)  # still running
    threading.Timer(0.4, late.close).start()
    t0 = time.monotonic()
    mpi._wait_for_ranks(None, path, 3)  # rank 2 never wrote a file
    waited = time.monotonic() - t0
    assert 0.9 < waited < 5, waited  # 0.4 s for rank 1 to close, then 0.5 s of patience for rank 2
