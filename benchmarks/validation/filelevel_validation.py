"""Validate iomodel.filelevel against measured os.pread sequences on a real file, cold.

DXT-like request sequences (request sizes 4 KiB-4 MiB, sequential and random order) are issued with
``os.pread`` on one file after emptying its page cache (``os.fsync`` + ``posix_fadvise(DONTNEED)``), timed,
and compared with ``iomodel.filelevel.predict_requests`` under the profile ``load_profile()`` gives.
Cases are interleaved over repeats (ABAB...) and the median time of each case is compared.

    python -m benchmarks.validation.filelevel_validation [--file-mib 512] [--case-mib 32] [--repeats 3] [--dir /tmp]
"""
from __future__ import annotations

import argparse
import os
import statistics
import tempfile
import time

import numpy as np

from iomodel.filelevel import predict_requests
from iomodel.profile import load_profile

SIZES = (4096, 65536, 1 << 20, 4 << 20)
WRITES = (("write", 4096, "random"), ("write", 1 << 20, "sequential"), ("write", 10_000, "random"))
"""Overwrites of the cold file (pwrite, timed without the fsync that follows): 10,000 B requests end inside
pages that hold data (read-modify-write)."""


def make_file(path: str, nbytes: int) -> None:
    block = np.random.default_rng(0).integers(0, 255, 4 << 20, dtype=np.uint8).tobytes()
    with open(path, "wb") as fh:
        for _ in range(nbytes // len(block)):
            fh.write(block)
        fh.flush()
        os.fsync(fh.fileno())


def requests(size: int, order: str, file_bytes: int, case_bytes: int, seed: int) -> np.ndarray:
    """Offsets of ``case_bytes`` worth of ``size`` requests: consecutive from 0, or random distinct slots."""
    n = max(case_bytes // size, 1)
    slots = file_bytes // size
    if order == "sequential":
        return np.arange(n, dtype=np.int64) * size
    return np.random.default_rng(seed).choice(slots, n, replace=False).astype(np.int64) * size


def cold(fd: int) -> None:
    os.fsync(fd)
    os.posix_fadvise(fd, 0, 0, os.POSIX_FADV_DONTNEED)


def timed(fd: int, offsets: np.ndarray, size: int, op: str = "read") -> float:
    cold(fd)
    buf = b"\x5a" * size
    t0 = time.perf_counter()
    if op == "read":
        for off in offsets.tolist():
            os.pread(fd, size, off)
    else:
        for off in offsets.tolist():
            os.pwrite(fd, buf, off)
    return time.perf_counter() - t0


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--file-mib", type=int, default=512)
    ap.add_argument("--case-mib", type=int, default=32)
    ap.add_argument("--repeats", type=int, default=3)
    ap.add_argument("--dir", default=None)
    a = ap.parse_args(argv)
    profile = load_profile()
    file_bytes, case_bytes = a.file_mib << 20, a.case_mib << 20
    cases = [("read", s, o) for s in SIZES for o in ("sequential", "random")] + list(WRITES)
    with tempfile.TemporaryDirectory(dir=a.dir) as d:
        path = os.path.join(d, "data.bin")
        make_file(path, file_bytes)
        fd = os.open(path, os.O_RDWR)
        try:
            times: dict = {c: [] for c in cases}
            for r in range(a.repeats):
                for c in cases:  # interleaved: every case once per repeat
                    times[c].append(timed(fd, requests(*c[1:], file_bytes, case_bytes, seed=r), c[1], c[0]))
        finally:
            os.close(fd)
    errors = []
    print("| op | request | order | requests | measured s (median) | predicted s | error |")
    print("|---|---|---|---|---|---|---|")
    for op, size, order in cases:
        offs = requests(size, order, file_bytes, case_bytes, seed=0)
        # the file holds data past every overwrite: a read of its last page tells the model so
        lead = [file_bytes - 4096] if op == "write" else []
        terms = predict_requests(np.concatenate([lead, offs]).astype(np.int64),
                                 np.concatenate([[4096] * len(lead), np.full(len(offs), size)]),
                                 np.concatenate([[False] * len(lead), np.full(len(offs), op == "write")]), profile)
        pred = terms.total
        meas = statistics.median(times[(op, size, order)])
        err = pred / meas - 1
        errors.append(abs(err))
        print(f"| {op} | {size / 1024:g} KiB | {order} | {len(offs)} | {meas:.4f} | {pred:.4f} | {100 * err:+.0f}% |")
    print(f"\nmedian |error| {100 * statistics.median(errors):.0f}% over {len(cases)} cases "
          f"({a.repeats} repeats, {a.case_mib} MiB per case, {a.file_mib} MiB file)")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
