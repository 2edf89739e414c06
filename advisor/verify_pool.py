"""Replay processes of ``advisor.verify``: one fresh interpreter per traced process (MPI rank, followed worker),
those that ran at the same time started together, and killed at a deadline (``ReplayPool``)."""
from __future__ import annotations

import json
import os
import pickle
import select
import subprocess
import sys
import time
from pathlib import Path

import numpy as np

from advisor.verify_results import VerifyError
from iomodel.replay import LayoutSpec, ReplayError, data_path, evict, replay


def rank_main() -> None:
    """A process of ``ReplayPool``: per job, read it, say ready, wait for go, replay, answer; EOF ends it. The
    page cache is the parent's to empty (once for the processes started together): the replay leaves it as is."""
    # imported up front so no rank pays it inside a timed replay; hdf5plugin and zarr_sz3 register the
    # compressed candidates' HDF5 filters and zarr codec
    import h5py  # noqa: F401
    import zarr  # noqa: F401

    import compression_model.zarr_sz3  # noqa: F401
    from compression_model.codecs.plugin import register_filters

    register_filters()  # when installed: a filter candidate without it fails where it is built, in one line

    while True:
        try:
            events, spec, workdir, data_file = pickle.load(sys.stdin.buffer)
        except EOFError:
            return
        data = None if data_file is None else np.load(data_file, mmap_mode="r")
        print("ready", flush=True)
        sys.stdin.buffer.readline()
        try:
            res = replay(events, spec, workdir, rebuild=False, cold=None, data=data)
            calls = res.per_access.tolist() or [0.0]
            calls[-1] += res.close_seconds  # the file's close (write-back) ends the last call, as total_seconds counts
            out = {"calls": calls}
        except Exception as exc:  # reported by the parent, which owns the error message
            out = {"error": f"{type(exc).__name__}: {exc}"}
        print(json.dumps(out), flush=True)


class ReplayTimeout(Exception):
    """A replay ran past its deadline (its processes were killed)."""


class ReplayPool:
    """Long-lived replay processes, started together on each job: one per traced process that ran at that time.

    Used for the processes of a multi-process read trace (MPI ranks, followed
    workers: each its own process, chunk cache and open file, run concurrently)
    and for serial replays that must be stoppable (a deadline: some default
    layouts take minutes). Fresh interpreters, not fork: HDF5 reads
    HDF5_USE_FILE_LOCKING once at start-up and every process opens the one file
    (replay opens it r+); not multiprocessing's spawn either, which re-runs the
    caller's ``__main__``. Started once per dataset so the imports are paid once; ``fresh``: new processes for
    every replay after the first (started before it, untimed), so each replay meets memory as a run of the program
    does, none of it mapped by an earlier replay: a long-lived replay process reuses the pages of the earlier
    replays' arrays and of HDF5's chunk buffers, which a program reading once touches for the first time inside its
    calls (r04's recipe layout, 44 reads of 58 MB in all: the same reads replayed 1.1-1.3x faster in a warm process
    than in a fresh one or by the program, ``benchmarks/validation/realsize.py``'s recipe against verify).
    """

    def __init__(self, nprocs: int, fresh: bool = False):
        self.nprocs = nprocs
        self.fresh = fresh
        self.procs: list[subprocess.Popen] = []
        self._used = False
        self._start()

    def _start(self) -> None:
        env = {**os.environ, "HDF5_USE_FILE_LOCKING": "FALSE"}
        cmd = [sys.executable, "-c", "from advisor.verify_pool import rank_main; rank_main()"]
        self.procs = [subprocess.Popen(cmd, stdin=subprocess.PIPE, stdout=subprocess.PIPE, env=env)
                      for _ in range(self.nprocs)]

    def _line(self, p: subprocess.Popen, until: float | None) -> bytes:
        if until is not None:
            ready, _, _ = select.select([p.stdout], [], [], max(0.0, until - time.monotonic()))
            if not ready:
                raise ReplayTimeout
        return p.stdout.readline()

    def run(self, groups: list[list[list]], spec: LayoutSpec, workdir: Path, *, data_file: str | None = None,
            timeout: float | None = None) -> list[list[np.ndarray]]:
        """Replay ``groups`` one after another, the event lists of a group at once (one process each): per group,
        per process, the seconds of each access (the last one's with the file's close). The page cache is emptied
        once, before the first group (later groups find what the earlier ones read, as the program did). A ``fresh``
        pool replays every group in new processes.

        ``data_file``: .npy of the array's values (written values come from it). Past ``timeout`` seconds
        the processes are killed (and restarted for the next job) and ReplayTimeout is raised.
        """
        if any(len(g) > self.nprocs for g in groups):
            raise ValueError(f"a group of {max(map(len, groups))} processes, the pool has {self.nprocs}")
        until = None if timeout is None else time.monotonic() + timeout
        out = []
        for k, group in enumerate(groups):
            if self.fresh and self._used:  # every traced process was a process of its own
                self.close()
                self._start()
            self._used = True
            procs = self.procs[:len(group)]
            for p, ev in zip(procs, group):
                pickle.dump((ev, spec, str(workdir), data_file), p.stdin)
                p.stdin.flush()
            for r, p in enumerate(procs):
                if p.stdout.readline().strip() != b"ready":
                    raise VerifyError(f"replay process {r} stopped (exit {p.poll()})")
            if k == 0:
                evict(data_path(spec, workdir))
            for p in procs:
                p.stdin.write(b"go\n")
                p.stdin.flush()
            try:
                got = [json.loads(self._line(p, until) or b'{"error": "no result"}') for p in procs]
            except ReplayTimeout:
                for p in self.procs:
                    p.kill()
                    p.wait()
                self._start()
                self._used = False
                raise
            failed = [f"process {r}: {g['error']}" for r, g in enumerate(got) if "error" in g]
            if failed:
                raise ReplayError(failed[0])
            out.append([np.asarray(g["calls"], dtype=np.float64) for g in got])
        return out

    def close(self) -> None:
        for p in self.procs:
            p.stdin.close()
            try:
                p.wait(timeout=60)
            except subprocess.TimeoutExpired:
                p.kill()

    def __enter__(self) -> "ReplayPool":
        return self

    def __exit__(self, *exc) -> None:
        self.close()

__all__ = ["ReplayPool", "ReplayTimeout", "rank_main"]
