"""MPI h5py read (run under mpiexec -n 2): each rank scans its own half of a (1M x 16) float32 table in
blocks of 5000 rows; the file has small (1000 x 16) chunks."""
import os

import h5py
from common import main, scaled, smooth_field

ROWS, COLS = scaled(1_000_000, 10_000), 16
BLOCK = 5000


def prepare(d):
    with h5py.File(os.path.join(d, "table.h5"), "w") as f:
        f.create_dataset("x", data=smooth_field((ROWS, COLS), 8), chunks=(1000, COLS))


def run(d):
    from mpi4py import MPI

    comm = MPI.COMM_WORLD
    rank, size = comm.Get_rank(), comm.Get_size()
    part = ROWS // size
    total = 0.0
    with h5py.File(os.path.join(d, "table.h5"), "r") as f:
        ds = f["x"]
        for start in range(rank * part, (rank + 1) * part, BLOCK):
            total += float(ds[start:min(start + BLOCK, (rank + 1) * part)].sum())
    total = comm.allreduce(total)
    if rank == 0:
        print(total)


if __name__ == "__main__":
    main(prepare, run)
