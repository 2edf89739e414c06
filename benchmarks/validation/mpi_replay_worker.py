"""One rank of a parallel validation run (``benchmarks/validation/parallel_validation.py``); run under mpiexec.

    mpiexec -n P [ioadvisor run -o T.jsonl --] python mpi_replay_worker.py
        {zarr-write|zarr-read|hdf5-read|mpio-write|mpio-write-ind|mpio-read|mpio-read-rw} PATH ROWS COLS CHUNK_ROWS CHUNK_COLS BLOCK OUT.json

Rank r owns rows [r*ROWS/P, (r+1)*ROWS/P) of one (ROWS, COLS) float32 array
(ROWS/P a multiple of CHUNK_ROWS, so ranks touch disjoint chunks) and
reads or writes them in full-width slabs of BLOCK rows. The array already
exists (the driver built it and emptied the page cache), except for
``mpio-write`` (collective writes) and ``mpio-write-ind`` (independent writes), and ``mpio-create``
(the same file and dataset, no data written: the metadata and trace writes around the data),
where all ranks create it in a parallel-HDF5 file (``driver='mpio'``; needs an
h5py built with MPI). ``mpio-read`` / ``mpio-read-rw`` read with ``driver='mpio'``
from a file opened ``'r'`` / ``'r+'`` (independent reads).
Each rank times its own I/O phase, from a barrier to the close of the array
(HDF5 flushes there), like ``iomodel.replay`` does for one process, and
its CPU time (all threads: on a shared machine, wall minus CPU is mostly
waiting for a core or the disk) and /proc/self/io around it (read/write system
calls and bytes, page-cache hits included); rank 0 writes every rank's numbers
to OUT.json.
"""
from __future__ import annotations

import json
import sys
import time

import numpy as np
from mpi4py import MPI


def io_counters(thread: bool = False) -> dict[str, int]:
    """rchar, wchar, syscr, syscw of this process (/proc/self/io), or of the calling thread only.

    HDF5 and MPI-IO do their I/O in the calling thread, while the tracer writes its trace from a thread
    of its own, as often as the job lasts: the thread's counters leave the trace writes out. Zarr reads
    and writes in a thread pool: the process's counters."""
    with open("/proc/thread-self/io" if thread else "/proc/self/io") as fh:
        return {k: int(v) for k, v in (ln.split(": ") for ln in fh) if k in ("rchar", "wchar", "syscr", "syscw")}


def main(argv: list[str]) -> None:
    mode, path = argv[0], argv[1]
    rows, cols, crows, ccols, block = (int(x) for x in argv[2:7])
    out = argv[7]
    comm = MPI.COMM_WORLD
    rank, size = comm.Get_rank(), comm.Get_size()
    part = rows // size
    if part * size != rows or part % crows:
        raise SystemExit(f"{rows} rows do not split into {size} parts of whole {crows}-row chunks")
    starts = range(rank * part, (rank + 1) * part, block)
    data = np.random.default_rng(rank).random((block, cols), dtype=np.float32)

    if mode.startswith("zarr"):
        import zarr

        arr = zarr.open_array(path, mode="r" if mode == "zarr-read" else "r+")
        close = lambda: None  # noqa: E731 - zarr has no handle to close; every set is already in the file
    else:
        import h5py

        if mode.startswith("mpio-write") or mode == "mpio-create":
            f = h5py.File(path, "w", driver="mpio", comm=comm)
            arr = f.create_dataset("data", (rows, cols), "f4", chunks=(crows, ccols))
        elif mode.startswith("mpio-read"):
            f = h5py.File(path, "r+" if mode == "mpio-read-rw" else "r", driver="mpio", comm=comm)
            arr = f["data"]
        else:
            f = h5py.File(path, "r")
            arr = f["data"]
        close = f.close

    comm.Barrier()
    io0 = io_counters(mode.startswith("mpio"))
    c0, t0 = time.process_time(), time.perf_counter()
    if mode == "mpio-write":
        with arr.collective:
            for s in starts:
                arr[s:s + block] = data
    elif "write" in mode:
        for s in starts:
            arr[s:s + block] = data
    elif mode == "mpio-create":
        pass  # the file and dataset only: the system calls every mpio-write job makes besides its data
    else:
        for s in starts:
            arr[s:s + block]
    close()
    seconds, cpu = time.perf_counter() - t0, time.process_time() - c0
    io1 = io_counters(mode.startswith("mpio"))
    comm.Barrier()
    every = comm.gather((seconds, cpu, {k: io1[k] - io0[k] for k in io0}), root=0)
    if rank == 0:
        with open(out, "w") as fh:
            json.dump({"mode": mode, "procs": size, "seconds": [e[0] for e in every],
                       "cpu_seconds": [e[1] for e in every], "io": [e[2] for e in every]}, fh)


if __name__ == "__main__":
    main(sys.argv[1:])
