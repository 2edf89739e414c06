"""Speed of the I/O model itself: chunk visits replayed per second on one core.

Run: python -m benchmarks.speed.iomodel_speed [--quick]
Each case builds a synthetic trace (no files), replays it once to compile/warm,
then times ``count_variables`` (median of --repeat runs) and reports chunk
visits per second of CPU time (``time.process_time``: the machine is shared, so
wall time mostly measures waiting for a core), overall and for chunk
enumeration alone, plus the wall-clock rate.
"""
from __future__ import annotations

import argparse
import statistics
import time

import numpy as np

from instrumentation.records import AccessRecord, DatasetRecord, Selection
from iomodel.chunks import trace_visits
from iomodel.layout import Layout
from iomodel.variables import count_variables


def _acc(sel, op="read"):
    return AccessRecord(0, op, sel, sel.nelements, sel.nelements * 4, 0.0, 0.0)


def cases(scale: int):
    rows = 1_000_000 * scale
    ds = DatasetRecord(0, "hdf5", "2.0", "f", "/x", (rows, 64), "float32", chunks=(1000, 8))
    rng = np.random.default_rng(0)
    scan = [_acc(Selection.box((i, 0), (10_000, 64))) for i in range(0, rows, 10_000)]
    rand_rows = [_acc(Selection.box((int(r), 0), (1, 64))) for r in rng.integers(0, rows, 2000 * scale)]
    cols = [_acc(Selection.box((0, int(c)), (rows, 1))) for c in rng.integers(0, 64, 4)]
    writes = [_acc(Selection.box((i, 0), (700, 64)), "write") for i in range(0, rows - 700, 700)]
    h5 = Layout.from_dataset(ds)
    small_cache = Layout("hdf5", ds.shape, 4, (1000, 8), rdcc_nbytes=1 << 20)
    zarr = Layout("zarr", ds.shape, 4, (1000, 8))
    shards = Layout("zarr", ds.shape, 4, (1000, 8), shards=(10_000, 64))
    yield "hdf5 full scan, 10000-row slabs", ds, scan, h5
    yield "hdf5 random single rows", ds, rand_rows, h5
    yield "hdf5 column reads, 1 MiB cache", ds, cols, small_cache
    yield "hdf5 700-row slab writes (partial chunks)", ds, writes, h5
    yield "zarr full scan", ds, scan, zarr
    yield "zarr column reads", ds, cols, zarr
    yield "zarr sharded full scan", ds, scan, shards


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--quick", action="store_true", help="smaller traces (about 10 s)")
    ap.add_argument("--repeat", type=int, default=3)
    args = ap.parse_args()
    scale = 1 if args.quick else 4
    print(f"{'case':44} {'accesses':>9} {'visits':>10} {'visits/s':>12} {'enum visits/s':>14} {'wall v/s':>12}")
    for name, ds, acc, lay in cases(scale):
        count_variables(acc[:5], ds, lay, 16 << 30)  # compile / warm
        n = len(trace_visits(acc, lay))
        t_all, t_enum, t_wall = [], [], []
        for _ in range(args.repeat):
            t0 = time.process_time()
            trace_visits(acc, lay)
            t1 = time.process_time()
            w1 = time.perf_counter()
            count_variables(acc, ds, lay, 16 << 30)
            t_wall.append(time.perf_counter() - w1)
            t_all.append(time.process_time() - t1)
            t_enum.append(t1 - t0)
        print(f"{name:44} {len(acc):9d} {n:10d} {n / statistics.median(t_all):12.3g} "
              f"{n / statistics.median(t_enum):14.3g} {n / statistics.median(t_wall):12.3g}")


if __name__ == "__main__":
    main()
