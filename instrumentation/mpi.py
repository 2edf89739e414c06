"""One trace per MPI rank, and rank 0's merged view.

The tracer asks ``rank_size`` who it is, writes ``rank_path(...)``, and calls
``finish`` once its file is closed. mpi4py is imported only when the process
really is one of several ranks: a serial program pays nothing, and an MPI
program has initialised MPI its own way (thread level, ``mpi4py.rc``) before
``finish`` needs a barrier.
"""
from __future__ import annotations

import os
import sys
import time
import warnings
from pathlib import Path

from .tracefile import TraceError, load_trace, merge_traces, write_trace

_LAUNCHER_ENV = (
    ("PMI_RANK", "PMI_SIZE"),  # MPICH / Hydra, Intel MPI, srun --mpi=pmi2
    ("OMPI_COMM_WORLD_RANK", "OMPI_COMM_WORLD_SIZE"),  # Open MPI
    ("PMIX_RANK", None),  # PMIx launchers (srun --mpi=pmix, prrte): no size variable
)

WAIT_SECONDS = float(os.environ.get("IOADVISOR_MPI_WAIT", "60"))
"""How long rank 0 waits for the other ranks' files when no barrier is possible."""


def _world():
    from mpi4py import MPI  # under a launcher only: importing initialises MPI

    return MPI


def rank_size(comm=None) -> tuple[int, int]:
    """(rank, size) of this process: from ``comm`` (mpi4py), else from the launcher's environment."""
    if comm is not None:
        return comm.Get_rank(), comm.Get_size()
    for rank_var, size_var in _LAUNCHER_ENV:
        if rank_var not in os.environ:
            continue
        if size_var is not None and size_var in os.environ:
            return int(os.environ[rank_var]), int(os.environ[size_var])
        world = _world().COMM_WORLD
        return world.Get_rank(), world.Get_size()
    return 0, 1


def rank_path(path: str | os.PathLike, rank: int, size: int) -> Path:
    """This rank's own file: trace.jsonl -> trace.rank0003.jsonl when size > 1, else path."""
    path = Path(path)
    if size <= 1:
        return path
    width = max(4, len(str(size - 1)))
    return path.with_name(f"{path.stem}.rank{rank:0{width}d}{path.suffix}")


def _file_done(path: Path) -> bool:
    try:
        with open(path, "rb") as fh:
            fh.seek(max(0, os.path.getsize(path) - 64))
            return b'"t":"end"' in fh.read()
    except OSError:
        return False


def _barrier(comm) -> bool:
    """Synchronise the ranks; False when MPI is already finalised (the program called Finalize)."""
    if comm is None:
        mpi = _world()
        if mpi.Is_finalized():
            return False
        comm = mpi.COMM_WORLD
    comm.Barrier()
    return True


def merge_rank_files(path: str | os.PathLike, size: int) -> Path:
    """Merge the ranks' files of ``path`` into ``path``; missing or broken ranks are warned about and skipped."""
    path = Path(path)
    traces = []
    for r in range(size):
        rp = rank_path(path, r, size)
        try:
            tr = load_trace(rp, allow_truncated=True)
        except TraceError as exc:
            warnings.warn(f"ioadvisor: rank {r} trace left out of the merge: {exc}", RuntimeWarning, stacklevel=2)
            continue
        if not tr.complete:
            warnings.warn(f"ioadvisor: rank {r} trace {rp} is truncated; merged its readable prefix",
                          RuntimeWarning, stacklevel=2)
        traces.append(tr)
    if not traces:
        raise TraceError(f"{path}: no rank trace could be read, nothing merged")
    write_trace(merge_traces(traces), path)
    return path


def finish(comm, path: str | os.PathLike, rank: int, size: int) -> None:
    """After this rank closed its file: wait for all ranks, then rank 0 writes the merged trace to ``path``.

    Every rank returns only once the merged file exists (or rank 0 failed to
    write it), so code after ``advisor.trace`` can read it on any rank.
    """
    if size <= 1:
        return
    synced = _barrier(comm)
    try:
        if rank == 0:
            if not synced:
                deadline = time.monotonic() + WAIT_SECONDS
                pending = [rank_path(path, r, size) for r in range(size)]
                while pending and time.monotonic() < deadline:
                    pending = [p for p in pending if not _file_done(p)]
                    if pending:
                        time.sleep(0.05)
            merge_rank_files(path, size)
    except (OSError, TraceError) as exc:
        # the per-rank files are intact; losing the merged view must not fail the user's program
        print(f"ioadvisor: could not write merged trace {path}: {exc}", file=sys.stderr)
    finally:
        if synced:
            _barrier(comm)


__all__ = ["rank_size", "rank_path", "finish", "merge_rank_files"]
