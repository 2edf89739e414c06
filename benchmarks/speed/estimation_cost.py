"""Estimation cost vs compressing the whole field, on a large field (the regime the 5% budget is about).

The real fields available offline are 0.5-37 MB, where the estimator's fixed work (one interior chunk timed,
edge chunks, in-memory HDF5 datasets) is a large share; this benchmark uses a synthetic smooth 3-D field of
--mb megabytes (cumulative sums of Gaussian noise, float32) with 64^3 chunks.

Usage: python -m benchmarks.speed.estimation_cost [--quick] [--mb 256] [--codecs sz3,zfp,blosc-zstd] [--method auto]
"""
from __future__ import annotations

import argparse
import os
import sys
import time
from pathlib import Path

import numpy as np

from compression_model.codecs import get_codec
from compression_model.estimate import estimate
from compression_model.safety import scan
from compression_model.sampling import sample_blocks
from compression_model.sampling_estimator import steady_allocator


def synthetic(mb: int, seed: int = 0) -> np.ndarray:
    n = round((mb * 1e6 / 4) ** (1 / 3))
    rng = np.random.default_rng(seed)
    x = rng.normal(size=(n, n, n)).astype(np.float32)
    for axis in range(3):
        np.cumsum(x, axis=axis, out=x)
    return x


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--quick", action="store_true", help="a 64 MB field")
    ap.add_argument("--mb", type=int, default=256)
    ap.add_argument("--codecs", default="sz3,zfp,blosc-zstd")
    ap.add_argument("--bound", default="rel:1e-3")
    ap.add_argument("--fraction", type=float, default=0.01)
    ap.add_argument("--method", default="auto", help="estimate() method (auto = the shipped choice per codec)")
    args = ap.parse_args(argv)
    steady_allocator()  # truths timed in the allocator state the estimator times in
    import h5py

    x = synthetic(64 if args.quick else args.mb)
    data_range = float(x.max() - x.min())
    # the NaN/Inf/fill scan of a 1% sample: once per field in `ioadvisor compression` and the advisor
    w0 = time.perf_counter()
    safety = scan(sample_blocks(x, args.fraction, rng=0).blocks)
    print(f"safety scan of a {args.fraction:g} sample, once per field: {time.perf_counter() - w0:.3f} s")
    chunks = (64, 64, 64)
    path = Path("/tmp/codecs") / f"cost-{os.getpid()}.h5"
    path.parent.mkdir(exist_ok=True)
    print(f"field {x.shape} float32 {x.nbytes / 1e6:.0f} MB, chunks {chunks}, {args.bound}, sample {args.fraction}")
    print(f"{'codec':12s} {'method':8s} {'true ratio':>10s} {'est ratio':>9s} {'err%':>6s} {'CPU s':>10s} {'est s':>7s}"
          f" {'cost s':>7s} {'cost %':>6s} {'CPU cost %':>10s}")
    for name in args.codecs.split(","):
        codec = get_codec(name, args.bound, data_range)
        # once per process (imports, the filter's in-memory file: ~0.2 s) is not the estimate's cost
        estimate(x[:16, :16, :16].copy(), name, args.bound, (8, 8, 8), data_range=data_range)
        with h5py.File(path, "w") as f:
            ds = f.create_dataset("x", shape=x.shape, dtype=x.dtype, chunks=chunks, **codec.hdf5_kwargs())
            t0, c0 = time.perf_counter(), time.process_time()
            ds[...] = x
            f.flush()
            t_comp, c_comp = time.perf_counter() - t0, time.process_time() - c0
            ratio = x.nbytes / ds.id.get_storage_size()
        c0 = time.process_time()
        e = estimate(x, name, args.bound, chunks, method=args.method, sample_fraction=args.fraction,
                     data_range=data_range, safety=safety)
        c_cost = time.process_time() - c0
        print(f"{name:12s} {e.method:8s} {ratio:10.2f} {e.ratio:9.2f} {100 * (e.ratio / ratio - 1):6.1f} {c_comp:10.2f}"
              f" {e.compress_seconds:7.2f} {e.cost_seconds:7.3f} {100 * e.cost_seconds / t_comp:6.2f}"
              f" {100 * c_cost / c_comp:10.2f}", flush=True)
    path.unlink()
    return 0


if __name__ == "__main__":
    sys.exit(main())
