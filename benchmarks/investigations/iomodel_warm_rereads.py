"""Warm re-reads of large chunks (realsize's r02 pattern): measured CPU seconds against the I/O model's warm terms.

3000 reads of 64 consecutive rows at random offsets of a (400000, 128) float32 HDF5 dataset (200 MB, beyond the
CPU's last-level cache), stored as 1000x128, 512x128 and 64x128 chunks (8 MiB chunk cache) and contiguous; the
file is in the page cache (read once before), layouts interleaved, median of 5 rounds of process CPU time. Beside
each: the model's warm seconds (``iomodel.predict(..., warm=True)``, the default profile unrescaled) and its
page-cache and allocation terms. What is compared is each layout's cost above contiguous storage: what the chunk
re-reads add (docs/advisor.md, "Hits beyond the CPU's cache").

    python -m benchmarks.investigations.iomodel_warm_rereads [--dir /tmp/warm-rereads] [--rounds 5]
"""
from __future__ import annotations

import argparse
import os
import statistics
import time
from pathlib import Path

import numpy as np

N, F, ROWS, READS = 400_000, 128, 64, 3000
LAYOUTS = {"1000x128": (1000, F), "512x128": (512, F), "64x128": (64, F), "contiguous": None}


def prepare(d: Path) -> None:
    import h5py

    d.mkdir(parents=True, exist_ok=True)
    for name, chunks in LAYOUTS.items():
        p = d / f"{name}.h5"
        if p.exists():
            continue
        with h5py.File(p, "w") as f:
            x = f.create_dataset("x", shape=(N, F), dtype="f4", chunks=chunks)
            for lo in range(0, N, 50_000):
                x[lo:lo + 50_000] = np.random.default_rng(lo).random((50_000, F), dtype="f4")


def starts() -> np.ndarray:
    return np.random.default_rng(3).integers(0, N - ROWS, READS)


def run(path: Path) -> float:
    import h5py

    with h5py.File(path, "r") as f:
        x = f["x"]
        t = time.process_time()
        for s in starts():
            x[int(s):int(s) + ROWS]
        return time.process_time() - t


def predicted() -> dict:
    from instrumentation.records import AccessRecord, DatasetRecord, Selection
    from iomodel import load_profile, predict
    from iomodel.layout import Layout

    ds = DatasetRecord(0, "hdf5", "2", "/nowhere/x.h5", "/x", (N, F), "float32", chunks=(1000, F))
    accs = []
    for s in starts():
        sel = Selection.box((int(s), 0), (ROWS, F))
        accs.append(AccessRecord(0, "read", sel, sel.nelements, sel.nelements * 4, 0.0, 0.0))
    prof = load_profile()
    out = {}
    for name, chunks in LAYOUTS.items():
        p = predict(accs, Layout("hdf5", (N, F), 4, chunks), prof, dataset=ds, warm=True)
        out[name] = (p.seconds, p.terms.get("t_cache", 0.0), p.terms.get("t_alloc", 0.0))
    return out


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--dir", default="/tmp/warm-rereads")
    ap.add_argument("--rounds", type=int, default=5)
    args = ap.parse_args()
    d = Path(args.dir)
    prepare(d)
    for name in LAYOUTS:  # into the page cache
        with open(d / f"{name}.h5", "rb") as fh:
            while fh.read(16 << 20):
                pass
    times: dict[str, list[float]] = {k: [] for k in LAYOUTS}
    for _ in range(args.rounds):
        for name in LAYOUTS:
            times[name].append(run(d / f"{name}.h5"))
    pred = predicted()
    base_m = statistics.median(times["contiguous"])
    base_p = pred["contiguous"][0]
    print(f"load average {os.getloadavg()[0]:.1f}")
    print("| layout | measured CPU (s) | above contiguous | predicted warm (s) | above contiguous | t_cache | t_alloc |")
    print("|---|---|---|---|---|---|---|")
    for name in LAYOUTS:
        m = statistics.median(times[name])
        p, tc, ta = pred[name]
        print(f"| {name} | {m:.3f} | {m - base_m:+.3f} | {p:.3f} | {p - base_p:+.3f} | {tc:.3f} | {ta:.3f} |")


if __name__ == "__main__":
    main()
