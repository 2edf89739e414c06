"""What decoding a compressed HDF5 chunk adds to a read, against what the compression estimate times.

For each codec and chunk size: a real file holding one chunk, compressed and raw, read whole through a
fresh handle (the page cache warm, so the device is out of it); the compressed read minus the raw one is
what the filter adds. Beside it the estimate's timing of the same chunk
(``hdf5_filter.hdf5_decode_seconds``: a filtered read from memory minus the copies a raw read also makes).
CPU seconds, medians of ``--reps``.

    python -m benchmarks.investigations.decode_cost                       # 0.5-40 MiB, three codecs
    python -m benchmarks.investigations.decode_cost --mib 1 4 --codecs zstd
"""
from __future__ import annotations

import argparse
import os
import statistics
import sys
import tempfile
import time
from pathlib import Path

import numpy as np


from compression_model.codecs import get_codec  # noqa: E402
from compression_model.codecs.hdf5_filter import hdf5_decode_seconds  # noqa: E402
from compression_model.sampling_estimator import steady_allocator  # noqa: E402


def field(mib: float, seed: int = 0) -> np.ndarray:
    """A smooth signal with quantized noise: lossless codecs get 1.2-1.9x, as on model output."""
    n = int(mib * (1 << 20)) // 4
    rng = np.random.default_rng(seed)
    x = np.sin(np.linspace(0, 50, n)) * 100 + np.round(rng.standard_normal(n) * 64) / 64
    return x.astype("f4").reshape(-1, 64, 64) if n % 4096 == 0 else x.astype("f4")


def file_read_seconds(path: str, out: np.ndarray, reps: int) -> float:
    import h5py

    times = []
    for _ in range(reps):
        with h5py.File(path, "r", rdcc_nbytes=64 << 20) as f:
            ds = f["x"]
            t0 = time.process_time()
            ds.read_direct(out)
            times.append(time.process_time() - t0)
    return statistics.median(times)


def main(argv=None) -> int:
    import h5py

    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--mib", type=float, nargs="+", default=[0.5, 1, 4, 16, 31, 32, 40])
    ap.add_argument("--codecs", nargs="+", default=["bitshuffle-lz4", "blosc-zstd", "zstd"])
    ap.add_argument("--reps", type=int, default=7)
    args = ap.parse_args(argv)
    steady_allocator()  # the state an advising process is in when it times codecs
    print("| codec | chunk MiB | ratio | file read, compressed - raw ms (GB/s) | estimate's decode ms | "
          "estimate / file |")
    print("|---|---|---|---|---|---|")
    with tempfile.TemporaryDirectory() as d:
        for mib in args.mib:
            x = field(mib)
            out = np.empty_like(x)
            for name in args.codecs:
                codec = get_codec(name, None, None)
                kw = codec.hdf5_kwargs()
                buf = codec.hdf5_encode(x)
                est = statistics.median(hdf5_decode_seconds(buf, x.shape, x.dtype, kw)[1] for _ in range(3))
                reads = {}
                for filtered in (True, False):
                    path = os.path.join(d, f"{filtered}.h5")
                    with h5py.File(path, "w") as f:
                        f.create_dataset("x", data=x, chunks=x.shape, **(kw if filtered else {}))
                    file_read_seconds(path, out, 1)  # into the page cache
                    reads[filtered] = file_read_seconds(path, out, args.reps)
                added = reads[True] - reads[False]
                print(f"| {name} | {mib:g} | {x.nbytes / len(buf):.2f} | {added * 1e3:.3f} "
                      f"({x.nbytes / added / 1e9:.2f}) | {est * 1e3:.3f} | {est / added:.2f} |", flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
