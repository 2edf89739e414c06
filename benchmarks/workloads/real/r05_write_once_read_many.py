"""Write once, read many: h5py writes a (1_000_000, 256) float32 feature table (1 GB) in 2000-row blocks, in
(2000, 256) row chunks, closes it, then reads 60 strips of 4 whole columns (the analysis it is kept for).
The layout it creates (chunks, compression, chunk cache) comes from ``open.json`` when the benchmark applies a
recipe; under ``"copy"`` (the read objective's recipe: write as now, copy into the new layout afterwards) it
writes as before, copies the table into that layout (COPY_SECONDS) and reads the copy (through zarr, created by the
recipe's printed code, when the recipe moves it to zarr). Prints READ_SECONDS: the reads, the part a write-once read-many advice is about, and READ_CPU_SECONDS, the
process's CPU seconds over them (its threads' too). The reads find the copy in the page cache (written just
before); whether its dirty pages are written back first does not change them (``os.sync()`` before the reads,
alternated with none, 4 rounds: 0.48-0.63 s either way; docs/advisor.md, r05)."""
import json
import os
import sys
import time

import numpy as np

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
from realcommon import main, scaled, smooth_slab  # noqa: E402

N, F = scaled(1_000_000, 2000), 256


def prepare(d):
    pass  # the program writes its own data


def _chunks(s):
    return tuple(s["chunks"]) if s.get("chunks") else (None if "chunks" in s else (2000, F))


def _filter(s):
    return {k: tuple(v) if isinstance(v, list) else v for k, v in s.get("filter", {}).items()}  # from JSON


def run(d):
    import h5py
    import hdf5plugin  # noqa: F401 - the recipe's filters

    p = os.path.join(d, "open.json")
    s = json.load(open(p)) if os.path.exists(p) else {}
    path = os.path.join(d, "table.h5")
    copy = s.get("copy")  # the read objective's recipe: write as now, then copy into the new layout
    made = {} if copy is not None else s
    with h5py.File(path, "w") as f:
        x = f.create_dataset("x", shape=(N, F), dtype="f4", chunks=_chunks(made), **_filter(made))
        for lo in range(0, N, 2000):
            x[lo:lo + 2000] = smooth_slab((N, F), lo, lo + 2000, 51)
    if copy is not None and copy.get("library") == "zarr":  # the recipe moved the table to zarr: its code, then zarr reads
        import zarr

        import shutil

        t = time.perf_counter()
        shutil.rmtree(copy["path"], ignore_errors=True)  # the previous run's copy (the recipe creates a new array)
        exec(copy["code"], {})  # the printed recipe creates the array
        with h5py.File(path, "r") as src:
            zarr.open_array(copy["path"], path=copy["name"], mode="r+")[...] = src["x"][...]
        print(f"COPY_SECONDS={time.perf_counter() - t:.6f}", file=sys.stderr)
        t, c = time.perf_counter(), time.process_time()
        rng = np.random.default_rng(6)
        z = zarr.open_array(copy["path"], path=copy["name"], mode="r")
        total = sum(float(z[:, int(j):int(j) + 4].sum()) for j in rng.integers(0, F - 4, 60))
        print(f"READ_SECONDS={time.perf_counter() - t:.6f}", file=sys.stderr)
        print(f"READ_CPU_SECONDS={time.process_time() - c:.6f}", file=sys.stderr)
        print(total)
        return
    if copy is not None:
        t = time.perf_counter()
        with h5py.File(path, "r") as src, h5py.File(os.path.join(d, "copy.h5"), "w") as dst:
            dst.create_dataset("x", data=src["x"][...], chunks=_chunks(copy), **_filter(copy))
        print(f"COPY_SECONDS={time.perf_counter() - t:.6f}", file=sys.stderr)
        path, s = os.path.join(d, "copy.h5"), copy
    cache = s.get("cache")
    kw = {} if not cache else {"rdcc_nbytes": cache[0], "rdcc_nslots": cache[1]}
    t, c = time.perf_counter(), time.process_time()
    rng = np.random.default_rng(6)
    with h5py.File(path, "r", **kw) as f:
        total = 0.0
        for j in rng.integers(0, F - 4, 60):
            total += float(f["x"][:, int(j):int(j) + 4].sum())
    print(f"READ_SECONDS={time.perf_counter() - t:.6f}", file=sys.stderr)
    print(f"READ_CPU_SECONDS={time.process_time() - c:.6f}", file=sys.stderr)
    print(total)


if __name__ == "__main__":
    main(prepare, run)
