"""Do concurrent cold reads multiply the device's bandwidth? (what zarr's concurrent chunk fetches overlap)

Run: /work/locks/xrun python -m benchmarks.investigations.device_concurrency [--dir D] [--total MiB] [--repeat N]
Files of 1, 4 and 16 MiB (128 MiB of each size) are written once under D, then read whole, cold (each
file synced and dropped from the page cache first), by 1, 4 and 10 threads (zarr's ``async.concurrency``
is 10). Printed: the median seconds of N passes and the bytes per second. If the threads only overlapped
their latencies, large files would gain little; that is what iomodel.variables assumes (docs/iomodel.md,
"Zarr's concurrent chunk fetches").
"""
from __future__ import annotations

import argparse
import os
import statistics
import time
from concurrent.futures import ThreadPoolExecutor

import numpy as np

from iomodel.replay import evict

SIZES = (1 << 20, 4 << 20, 16 << 20)
THREADS = (1, 4, 10)


def files_of(root: str, size: int, total: int) -> list[str]:
    """``total // size`` files (at least one) of ``size`` random bytes under ``root/size``, written once."""
    d = os.path.join(root, str(size))
    os.makedirs(d, exist_ok=True)
    data = np.random.default_rng(size).integers(0, 256, size, dtype=np.uint8).tobytes()
    paths = [os.path.join(d, str(i)) for i in range(max(1, total // size))]
    for p in paths:
        if not os.path.exists(p) or os.path.getsize(p) != size:
            with open(p, "wb") as fh:
                fh.write(data)
    return paths


def read_whole(path: str) -> int:
    with open(path, "rb") as fh:
        return len(fh.read())


def cold_seconds(paths: list[str], threads: int, repeat: int) -> float:
    times = []
    for _ in range(repeat):
        for p in paths:
            evict(p)
        t = time.perf_counter()
        if threads == 1:
            for p in paths:
                read_whole(p)
        else:
            with ThreadPoolExecutor(threads) as ex:
                list(ex.map(read_whole, paths))
        times.append(time.perf_counter() - t)
    return statistics.median(times)


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--dir", default="/tmp/ioadvisor-concurrency", help="where the files are kept")
    ap.add_argument("--total", type=int, default=128, help="MiB of files per size")
    ap.add_argument("--repeat", type=int, default=5, help="passes per case (the median is printed)")
    args = ap.parse_args(argv)
    total = args.total << 20
    for size in SIZES:
        paths = files_of(args.dir, size, total)
        alone = None
        for threads in THREADS:
            s = cold_seconds(paths, threads, args.repeat)
            alone = alone or s
            rate = len(paths) * size / s / 1e9
            print(f"{size >> 20:>3} MiB files, {threads:>2} thread(s): {s:.4f} s, {rate:.2f} GB/s, "
                  f"{alone / s:.2f}x one thread's", flush=True)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
