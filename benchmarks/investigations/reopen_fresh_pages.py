"""What reopening an HDF5 dataset per read costs in page faults (issue 30, r05; not in the I/O model).

HDF5 frees a dataset's chunk cache when the dataset closes (h5py: when the last object for it goes, as in
``f["x"][:, j:j + 4]`` inside a loop). Whether glibc gives that memory back to the kernel depends on its heap
state; when it does, the next open's chunk buffers are new pages, faulted in on first touch. Per chunk cache size:
strips of 4 columns read through one dataset object kept open, and through ``f["x"]`` per strip; the time and the
minor page faults per strip (``getrusage``), the file in the page cache. First: the price of a first touch here
(anonymous ``mmap``, one write a page; fastest of 5).

    python -m benchmarks.investigations.reopen_fresh_pages [--dir /tmp/reopen-pages] [--rows 1000000]
        [--chunk-rows 65536] [--caches 8,24,32,40] [--strips 30]
"""
from __future__ import annotations

import argparse
import mmap
import resource
import shutil
import time
from pathlib import Path

import numpy as np

COLUMNS, STRIP = 64, 4


def first_touch_seconds_per_byte(nbytes: int = 64 << 20, repeat: int = 5) -> float:
    best = float("inf")
    for _ in range(repeat):
        m = mmap.mmap(-1, nbytes)
        a = np.frombuffer(m, np.uint8)
        t = time.perf_counter()
        a[::mmap.PAGESIZE] = 1
        best = min(best, time.perf_counter() - t)
        del a
        m.close()
    return best / nbytes


def _faults() -> int:
    return resource.getrusage(resource.RUSAGE_SELF).ru_minflt


def strips(path: Path, cache: int, reopen: bool, n: int) -> tuple[float, float]:
    """(seconds, minor faults) per strip."""
    import h5py

    rng = np.random.default_rng(6)
    cols = rng.integers(0, COLUMNS - STRIP, n)
    with h5py.File(path, "r", rdcc_nbytes=cache, rdcc_nslots=8191) as f:
        kept = None if reopen else f["x"]
        t, m = time.perf_counter(), _faults()
        for j in cols.tolist():
            (f["x"] if reopen else kept)[:, j:j + STRIP]
        return (time.perf_counter() - t) / n, (_faults() - m) / n


def main(argv=None) -> None:
    import h5py

    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--dir", default="/tmp/reopen-pages")
    ap.add_argument("--rows", type=int, default=1_000_000)
    ap.add_argument("--chunk-rows", type=int, default=65536)
    ap.add_argument("--caches", default="8,24,32,40", help="chunk cache sizes, MiB")
    ap.add_argument("--strips", type=int, default=30)
    args = ap.parse_args(argv)
    d = Path(args.dir)
    shutil.rmtree(d, ignore_errors=True)
    d.mkdir(parents=True)
    try:
        price = first_touch_seconds_per_byte()
        print(f"first touch: {price * 1e9:.2f} ns a byte ({price * mmap.PAGESIZE * 1e6:.2f} us a page)")
        path = d / "t.h5"
        with h5py.File(path, "w") as f:
            f.create_dataset("x", data=np.random.default_rng(0).standard_normal((args.rows, COLUMNS), np.float32),
                             chunks=(args.chunk_rows, STRIP))
        strips(path, 1 << 20, True, 4)  # the file's pages into the page cache
        chunk_mb = args.chunk_rows * STRIP * 4 / 1e6
        print(f"{args.rows} x {COLUMNS} float32 in {args.chunk_rows} x {STRIP} chunks ({chunk_mb:.1f} MB), "
              f"{args.strips} strips of {STRIP} columns")
        print("| cache (MiB) | kept open: ms a strip | faults a strip | reopened: ms a strip | faults a strip |")
        print("|---|---|---|---|---|")
        for mib in (int(x) for x in args.caches.split(",")):
            kept = strips(path, mib << 20, False, args.strips)
            again = strips(path, mib << 20, True, args.strips)
            print(f"| {mib} | {kept[0] * 1e3:.1f} | {kept[1]:.0f} | {again[0] * 1e3:.1f} | {again[1]:.0f} |")
    finally:
        shutil.rmtree(d, ignore_errors=True)


if __name__ == "__main__":
    main()
