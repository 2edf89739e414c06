"""One trace per MPI rank, and rank 0's merged view.

The tracer asks ``rank_size`` who it is, writes ``rank_path(...)``, and calls
``finish`` once its file is closed. mpi4py is imported only when the process
really is one of several ranks: a serial program pays nothing, and an MPI
program has initialised MPI its own way (thread level, ``mpi4py.rc``) before
``finish`` needs it.

``finish`` must never turn a failing MPI program into a hanging one: a rank
whose traced code raised joins no collective (its peers may be blocked in one
of the program's own, and ``python -m mpi4py`` must still abort the job), and
the ranks that finished wait for it only a short grace once its file is closed.
"""
from __future__ import annotations

import os
import sys
import time

from . import settings


# .tracefile (numpy), pathlib and .tracedir (re) are imported where used: a serial run's launcher imports this
# module to learn that it is serial before its program starts (instrumentation/nativestart.py)

LAUNCHER_ENV = (
    ("PMI_RANK", "PMI_SIZE"),  # MPICH / Hydra, Intel MPI, srun --mpi=pmi2
    ("OMPI_COMM_WORLD_RANK", "OMPI_COMM_WORLD_SIZE"),  # Open MPI
    ("PMIX_RANK", None),  # PMIx launchers (srun --mpi=pmix, prrte): no size variable
)
"""(rank, size) environment variables of the MPI launchers; the native front end checks the same ones (setup.py)."""

WAIT_SECONDS = settings.mpi_wait()
"""Longest wait for the other ranks in ``finish`` (a rank killed without closing its file)."""
GRACE_SECONDS = 2.0
"""Wait for a rank that closed its file but did not reach ``finish`` (its program failed)."""
MISSING_SECONDS = settings.mpi_missing()
"""Wait for a rank that has no trace file at all (it died before tracing began)."""
POLL_SECONDS = 0.1
"""Interval between rank 0's looks at the rank files while waiting."""
EXPORT_RETRIES = 3
"""Merges started over when a rank exported its live trace directory while it was being merged."""
DONE_TAG = 31_415
"""Tag of rank 0's "merge done" message (within the MPI-guaranteed tag range, 0..32767)."""


def _world():
    from .extras import require

    require("mpi4py", "tracing under an MPI launcher that gives no rank count (PMIx)")
    from mpi4py import MPI  # under a launcher only: importing initialises MPI

    return MPI


def launched() -> bool:
    """Was this process started by an MPI launcher (its environment says so)? Without importing mpi4py."""
    return any(rank_var in os.environ for rank_var, _ in LAUNCHER_ENV)


def rank_size(comm=None) -> tuple[int, int]:
    """(rank, size) of this process: from ``comm`` (mpi4py), else from the launcher's environment."""
    if comm is not None:
        return comm.Get_rank(), comm.Get_size()
    for rank_var, size_var in LAUNCHER_ENV:
        if rank_var not in os.environ:
            continue
        if size_var is not None and size_var in os.environ:
            return int(os.environ[rank_var]), int(os.environ[size_var])
        world = _world().COMM_WORLD
        return world.Get_rank(), world.Get_size()
    return 0, 1


class FileSync:
    """A communicator stand-in for a tracer that must not join MPI: its ranks agree through their trace files.

    ``ioadvisor run -- ./app`` under mpiexec: the MPI job is the child program's (it holds the
    launcher's connection); the tracer around it only knows its rank from the environment.
    """

    def __init__(self):
        self.rank, self.size = rank_size()

    def Get_rank(self) -> int:
        return self.rank

    def Get_size(self) -> int:
        return self.size


def rank_path(path: str | os.PathLike, rank: int, size: int) -> Path:
    """This rank's own file: trace.jsonl -> trace.rank0003.jsonl when size > 1, else path."""
    from pathlib import Path

    path = Path(path)
    if size <= 1:
        return path
    width = max(4, len(str(size - 1)))
    return path.with_name(f"{path.stem}.rank{rank:0{width}d}{path.suffix}")


def rank_file(path: str | os.PathLike, rank: int, size: int) -> Path:
    """Where rank ``rank``'s trace is now: its ``rank_path``, or, for a ``*.jsonl`` one not yet exported (still
    running, or killed), its live columnar directory (``tracedir.live_path``)."""
    from .tracedir import live_path

    path = rank_path(path, rank, size)
    live = live_path(path)
    return live if live != path and not path.exists() and live.is_dir() else path


def file_done(path: Path) -> bool:
    """Is the trace at ``path`` closed (its last line the end record, which may list what was missed)?"""
    if path.is_dir():  # a columnar trace: its records file ends with the end record
        path = path / "_meta.jsonl"
    try:
        with open(path, "rb") as fh:
            fh.seek(max(0, os.path.getsize(path) - 65536))
            tail = fh.read()
    except OSError:
        return False
    return tail.endswith(b"\n") and tail[:-1].rsplit(b"\n", 1)[-1].startswith(b'{"t":"end"')


def _communicator(comm):
    """The communicator to synchronise on; None when MPI is already finalised (the program called Finalize)."""
    if isinstance(comm, FileSync):
        return None
    if comm is None:
        from .extras import installed

        if not installed("mpi4py"):  # not of the tool-only install (the `mpi` extra): ranks agree by their files
            return None
        mpi = _world()
        return None if mpi.Is_finalized() else mpi.COMM_WORLD
    return comm


def _failing() -> bool:
    """Is an exception (other than a clean ``sys.exit()``) propagating through the tracer's exit?"""
    exc = sys.exc_info()[1]
    return exc is not None and not (isinstance(exc, SystemExit) and exc.code in (None, 0))


def _poll(done, deadline: float) -> bool:
    """Call ``done()`` with a growing nap until it is true or the deadline passes."""
    nap = 0.0005
    while time.monotonic() < deadline:
        if done():
            return True
        time.sleep(nap)
        nap = min(2 * nap, 0.01)  # ranks still computing share the cores with this loop
    return False


def _wait_for_ranks(comm, path: Path, size: int) -> None:
    """Rank 0: wait until every rank arrived, or give up on a failed or dead one.

    Ranks that arrive post a non-blocking barrier. A failed rank closes its
    file but never posts: once every file is closed and the barrier is still
    open after GRACE_SECONDS, waiting stops. A rank that died before it began
    tracing has no file at all: it is given up MISSING_SECONDS after all the
    other files are closed. Only rank 0 looks at the files, from every
    POLL_SECONDS to every 2 s: no metadata storm on a parallel file system.
    """
    req = comm.Ibarrier() if comm is not None else None
    grace = GRACE_SECONDS if req is not None else 0.0  # without MPI, closed files are all we can know
    state = {"next_look": 0.0, "interval": POLL_SECONDS, "settled": None, "since": 0.0}

    def done() -> bool:
        if req is not None and req.Test():
            return True
        now = time.monotonic()
        if now >= state["next_look"]:
            state["next_look"] = now + state["interval"]
            state["interval"] = min(2 * state["interval"], 2.0)  # long waits look less often
            present = [f for f in (rank_file(path, r, size) for r in range(size)) if f.exists()]
            settled = len(present) if all(file_done(f) for f in present) else None
            if settled != state["settled"]:  # a late rank may open its file: start over
                state["settled"], state["since"] = settled, now
        if state["settled"] is None:
            return False
        patience = grace if state["settled"] == size else MISSING_SECONDS
        return now - state["since"] > patience

    _poll(done, time.monotonic() + WAIT_SECONDS)


def _exported_meanwhile(path: Path, files: list[Path]) -> bool:
    """Has a rank read as its live directory exported its own file since? It then removes the directory: a merge
    reading it meanwhile lost its batches (the rank's header and opens merged, its accesses not)."""
    return any(f != rank_path(path, r, len(files)) and rank_path(path, r, len(files)).exists()
               for r, f in enumerate(files))


def merge_rank_files(path: str | os.PathLike, size: int) -> list[str]:
    """Merge the ranks' files of ``path`` into ``path``; returns what the merge misses (ranks skipped or cut short).

    Those notes are also in the merged trace (``TraceHeader.missed`` of the first rank's header):
    no warning, which a strict warnings filter would turn into an exception in the program. Columnar rank traces
    are merged batch by batch (``merge.merge_files``): rank 0 never holds all ranks' accesses.
    """
    from pathlib import Path

    from .merge import merge_files, rank_sources
    from .tracemodel import TraceError

    path = Path(path)
    for attempt in range(EXPORT_RETRIES + 1):
        files = [rank_file(path, r, size) for r in range(size)]
        try:
            sources, missed = rank_sources(files)
            if not sources:
                raise TraceError(f"{path}: no rank trace could be read, nothing merged")
            merge_files(sources, path, allow_truncated=True, missed=tuple(missed))
        except (OSError, TraceError):
            if attempt == EXPORT_RETRIES or not _exported_meanwhile(path, files):
                raise
            continue
        if not _exported_meanwhile(path, files):
            return missed
    return missed


def finish(comm, path: str | os.PathLike, rank: int, size: int, *, failed: bool | None = None) -> None:
    """After this rank closed its file: rank 0 writes the merged trace of all ranks to ``path``.

    Every rank that finished returns once rank 0 has written the merged file,
    so code after ``advisor.trace`` can read it on any rank. ``failed`` (by
    default: an exception is propagating) means this rank's traced code
    raised: it returns at once, joining no collective; rank 0 then merges
    the others after GRACE_SECONDS, or, if rank 0 itself failed, merges
    nothing (``ioadvisor trace merge`` can, later).
    """
    if size <= 1:
        return
    if failed is None:
        failed = _failing()
    if failed and rank != 0:
        return
    from pathlib import Path

    path = Path(path)
    comm = _communicator(comm)
    if rank != 0:
        if comm is not None:
            here = comm.Ibarrier()  # "I am here"; completes, or is abandoned if a failed rank never comes
            if _poll(lambda: comm.Iprobe(source=0, tag=DONE_TAG), time.monotonic() + WAIT_SECONDS):
                comm.recv(source=0, tag=DONE_TAG)  # consumed, so no later receive of the program gets it
            here.Test()
        return
    if not failed:
        from .tracefile import TraceError

        _wait_for_ranks(comm, path, size)
        try:
            missed = merge_rank_files(path, size)
            if missed:
                more = f" (and {len(missed) - 1} more: ioadvisor trace show {path})" if len(missed) > 1 else ""
                print(f"ioadvisor: merged trace {path} is missing something: {missed[0]}{more}", file=sys.stderr)
        except (OSError, TraceError) as exc:
            # the per-rank files are intact; losing the merged view must not fail the user's program
            print(f"ioadvisor: could not write merged trace {path}: {exc}", file=sys.stderr)
    if comm is not None:
        # small messages go out eagerly: a failed peer that never receives cannot block rank 0
        reqs = [comm.isend(None, dest=r, tag=DONE_TAG) for r in range(1, size)]
        _poll(lambda: all(r.Test() for r in reqs), time.monotonic() + GRACE_SECONDS)


__all__ = ["FileSync", "launched", "rank_size", "rank_path", "finish", "merge_rank_files"]
