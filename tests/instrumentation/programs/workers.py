"""Programs that read an HDF5 dataset from worker processes, as users write them.

    python workers.py KIND DATA.h5 ROWS.json [TRACE]

Reads single rows of DATA.h5:/x from workers of KIND and writes the rows read
(the program's own selection list, the ground truth) to ROWS.json. With TRACE the
reads run inside ``advisor.trace(TRACE)``; without it the program is meant to be
run under ``ioadvisor run``.
"""
import json
import os
import signal
import subprocess
import sys
import time
from contextlib import nullcontext

import h5py
import numpy as np

N = int(os.environ.get("WORKERS_ROWS", "200"))


def read_row(args):
    path, i = args
    with h5py.File(path, "r") as f:
        return i, float(f["x"][i][0])


class Rows:  # a torch-style Dataset: one h5py call per sample, the file opened in each worker
    def __init__(self, path):
        self.path, self.x = path, None

    def __len__(self):
        return N

    def __getitem__(self, i):
        if self.x is None:
            self.x = h5py.File(self.path, "r")["x"]
        return i, self.x[i]


def run(kind: str, path: str) -> list[int]:
    work = [(path, i) for i in range(N)]
    if kind in ("fork", "spawn", "forkserver"):
        import multiprocessing as mp

        with mp.get_context(kind).Pool(2) as pool:
            return [i for i, _ in pool.map(read_row, work)]
    if kind == "executor":
        from concurrent.futures import ProcessPoolExecutor

        with ProcessPoolExecutor(2) as ex:
            return [i for i, _ in ex.map(read_row, work, chunksize=10)]
    if kind == "dask":
        import dask.bag as db

        return [i for i, _ in db.from_sequence(work, npartitions=7).map(read_row).compute(scheduler="processes")]
    if kind == "distributed":
        from dask.distributed import Client, LocalCluster

        with LocalCluster(n_workers=2, threads_per_worker=1, processes=True, dashboard_address=None) as cluster, \
                Client(cluster) as client:
            return [i for i, _ in client.gather(client.map(read_row, work))]
    if kind.startswith("torch"):
        from torch.utils.data import DataLoader

        workers = int(kind.removeprefix("torch"))
        return [int(i) for idx, _ in DataLoader(Rows(path), batch_size=16, num_workers=workers, shuffle=True)
                for i in idx]
    if kind == "subprocess":
        code = f"import h5py; x = h5py.File({path!r})['x']; [x[i] for i in range({N})]"
        subprocess.run([sys.executable, "-c", code], check=True)
        return list(range(N))
    if kind == "killed":  # a child that dies by SIGKILL after its first reads were flushed
        # a batch is written once a second (columnar.BATCH_SECONDS), checked at the flusher's passes (every
        # 0.2 s): 1.6 s leaves the write time to finish (sleeping 1.0 s raced it)
        code = (f"import h5py, os, signal, time; x = h5py.File({path!r})['x']; [x[i] for i in range(5)]; "
                "time.sleep(1.6); os.kill(os.getpid(), signal.SIGKILL)")
        subprocess.run([sys.executable, "-c", code])
        return list(range(5))
    raise SystemExit(f"unknown kind {kind}")


def main(kind, data, rows_out, trace=None):
    import advisor

    with advisor.trace(trace) if trace else nullcontext():
        rows = run(kind, data)
    with open(rows_out, "w") as fh:
        json.dump(sorted(rows), fh)


if __name__ == "__main__":
    main(*sys.argv[1:])
