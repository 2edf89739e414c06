"""CPU time of one HDF5 filter call against the size of the block (cubes n^3 of a smooth float32 field).

Why the sampling estimator's tiles are dear for SZ3: the hdf5plugin SZ3 filter spends several times more per
point on small blocks than on a 64^3 chunk. Median of 5 calls per size, after one untimed call.

Usage: python -m benchmarks.investigations.codec_block_size [--codecs sz3,zfp,blosc-zstd] [--sizes 16,24,32,48,64]
"""
from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

import numpy as np

from benchmarks.speed.estimation_cost import synthetic

from compression_model.codecs import get_codec  # noqa: E402
from compression_model.sampling_estimator import steady_allocator  # noqa: E402


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--codecs", default="sz3,zfp,blosc-zstd")
    ap.add_argument("--sizes", default="16,24,28,32,36,48,64")
    ap.add_argument("--bound", default="rel:1e-3")
    args = ap.parse_args(argv)
    steady_allocator()
    x = synthetic(32)
    sizes = [int(s) for s in args.sizes.split(",")]
    print(f"{'codec':12s} " + " ".join(f"{f'{n}^3 ms':>9s} {'ns/pt':>6s}" for n in sizes))
    for name in args.codecs.split(","):
        codec = get_codec(name, args.bound, float(x.max() - x.min()))
        cells = []
        for n in sizes:
            codec.hdf5_encode(np.ascontiguousarray(x[:n, :n, :n]))
            times = []
            for i in range(5):  # five different blocks of the field
                block = np.ascontiguousarray(x[i * 20:i * 20 + n, :n, :n])
                t0 = time.process_time()
                codec.hdf5_encode(block)
                times.append(time.process_time() - t0)
            t = float(np.median(times))
            cells.append(f"{1e3 * t:9.2f} {1e9 * t / n ** 3:6.0f}")
        print(f"{name:12s} " + " ".join(cells), flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
