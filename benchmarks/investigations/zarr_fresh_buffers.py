"""What a zarr 3 chunk read from the page cache costs, against what the I/O model prices it (issue 30, r05).

Zarr's LocalStore reads a whole chunk file with ``Path.read_bytes()``: a new bytes object per chunk. Above glibc's
mmap threshold its pages are new to the process, and the kernel faults them in while it copies; the model's
page-cache price (``x_cache``: the profile's curve, measured with ``preadv`` into one reused buffer) does not see
that. Per chunk size, one float32 column chunk (n, 1) of a zarr array whose files are in the page cache:

- ``preadv``: the chunk file read into a reused buffer (what the page-cache curve measures);
- ``read_bytes``: the same file read as zarr's store does (each result dropped before the next read, so glibc
  can hand the same memory back: the lower bound of what the store's read costs);
- ``zarr``: ``z[:, c]`` through zarr (one chunk per call: get, decode, copy into the result);
- ``model``: the shipped profile's prediction of that read (``iomodel.predict``, warm page cache).

    python -m benchmarks.investigations.zarr_fresh_buffers [--dir /tmp/zfb] [--repeat 9] [--strip K]

``--strip K``: zarr reads K columns per call (``z[:, c:c + K]``, realsize r05's strips of 4), the model the same
calls; the per-chunk figures are the call's time over K.
"""
from __future__ import annotations

import argparse
import os
import shutil
from pathlib import Path

import numpy as np

from benchmarks.helpers.paired import median_seconds

SIZES = (64 << 10, 256 << 10, 1 << 20, 4 << 20, 16 << 20)
"""Bytes of one chunk (float32 rows of one column)."""
COLUMNS = 8


def _predicted(rows: int, repeat_cols: int, strip: int = 1) -> float:
    """The shipped profile's seconds for ``repeat_cols`` whole-column reads of the (rows, COLUMNS) zarr array,
    ``strip`` columns per call."""
    from instrumentation.records import READ, AccessRecord, DatasetRecord, Selection
    from iomodel import load_profile, predict
    from iomodel.layout import Layout

    shape = (rows, COLUMNS)
    ds = DatasetRecord(id=0, library="zarr", library_version="", file="zfb", path="/x", shape=shape, dtype="<f4",
                       maxshape=None, chunks=(rows, 1), shards=None, filters=(), cache=None, zarr_format=3,
                       created=False)
    accs = [AccessRecord(0, READ, Selection((0, c % COLUMNS), (1, 1), (1, 1), (rows, strip)), rows * strip,
                         rows * strip * 4, 0.0, 0.0) for c in range(0, repeat_cols, strip)]
    return predict(accs, Layout("zarr", shape, 4, (rows, 1)), load_profile(), dataset=ds, warm=True).seconds


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--dir", default="/tmp/ioadvisor-zfb", help="scratch directory (removed at the end)")
    ap.add_argument("--repeat", type=int, default=9)
    ap.add_argument("--strip", type=int, default=1, choices=(1, 2, 4, 8), help="columns per zarr call")
    args = ap.parse_args(argv)
    k = args.strip
    import zarr

    root = Path(args.dir)
    shutil.rmtree(root, ignore_errors=True)
    print(f"load average {os.getloadavg()[0]:.1f}; {k} column(s) per zarr call")
    print("| chunk | preadv, reused buffer | read_bytes (zarr's store) | zarr z[:, c] | model (shipped profile) |")
    print("|---|---|---|---|---|")
    try:
        for size in SIZES:
            rows = size // 4
            path = root / f"z{size}"
            z = zarr.create_array(str(path), shape=(rows, COLUMNS), dtype="<f4", chunks=(rows, 1), compressors=None)
            z[...] = np.random.default_rng(0).standard_normal((rows, COLUMNS), dtype=np.float32)
            files = sorted(p for p in path.rglob("c/*/*") if p.is_file())
            for f in files:  # in the page cache
                f.read_bytes()
            z[:, 0]  # zarr's first call starts its event loop and thread pool
            buf = bytearray(size)

            def pread():
                for f in files:
                    fd = os.open(f, os.O_RDONLY)
                    os.preadv(fd, [buf], 0)
                    os.close(fd)

            def read_bytes():
                for f in files:
                    f.read_bytes()

            def through_zarr():
                for c in range(0, COLUMNS, k):
                    z[:, c:c + k]

            per = [median_seconds(fn, args.repeat) / COLUMNS for fn in (pread, read_bytes, through_zarr)]
            model = _predicted(rows, COLUMNS, k) / COLUMNS
            print(f"| {size >> 10} KiB | " + " | ".join(f"{s * 1e3:.3f} ms ({size / s / 1e9:.2f} GB/s)"
                                                      for s in per + [model]) + " |")
    finally:
        shutil.rmtree(root, ignore_errors=True)
    print(f"load average {os.getloadavg()[0]:.1f}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
