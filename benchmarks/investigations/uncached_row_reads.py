"""Random single-row reads through h5py: what each layout costs, cold and warm, against the model (issue 30, w13).

regret's w13 (a PyTorch ``Dataset`` doing ``ds[i]`` on a (50000, 64) float32 array at a quarter of its size)
measured 1024x64 chunks without a chunk cache 1.8x slower than contiguous storage and 4x slower than chunks held
by a 16 MiB cache, where the model put the three within 1.2x. Per layout, N random ``ds[i]`` reads (one fixed
order), the file's pages evicted first (cold) or not (warm), layouts interleaved round by round; ``model``: the
profile's prediction of the same reads (``iomodel.predict``), by term.

    python -m benchmarks.investigations.uncached_row_reads [--dir /tmp/ucr] [--rows 50000] [--reads 5000] [--rounds 5]
"""
from __future__ import annotations

import argparse
import shutil
import statistics
import time
from pathlib import Path

import numpy as np

from iomodel.replay import evict

LAYOUTS = {  # label -> (chunks, rdcc_nbytes)
    "contiguous": (None, None),
    "1024x64 cache=0": ((1024, 64), 0),
    "1024x64 cache=8MiB": ((1024, 64), 8 << 20),
    "16384x64 cache=16MiB": ((16384, 64), 16 << 20),
}


def _read(path: Path, cache, order) -> float:
    import h5py

    kw = {} if cache is None else {"rdcc_nbytes": cache, "rdcc_nslots": 8191}
    t = time.perf_counter()
    with h5py.File(path, "r", **kw) as f:
        ds = f["x"]
        for i in order:
            ds[i]
    return time.perf_counter() - t


def _model(rows: int, chunks, cache, order) -> tuple[float, dict]:
    from instrumentation.records import READ, AccessRecord, DatasetRecord, Selection
    from iomodel import load_profile, predict
    from iomodel.layout import Layout

    shape = (rows, 64)
    ds = DatasetRecord(id=0, library="hdf5", library_version="", file="ucr", path="/x", shape=shape, dtype="<f4",
                       maxshape=None, chunks=chunks, shards=None, filters=(), cache=None, zarr_format=None,
                       created=False)
    accs = [AccessRecord(0, READ, Selection.box((int(i), 0), (1, 64)), 64, 256, k * 1e-5, 1e-5)
            for k, i in enumerate(order)]
    lay = Layout("hdf5", shape, 4, chunks, rdcc_nbytes=8 << 20 if cache is None else cache)
    p = predict(accs, lay, load_profile(), dataset=ds, warm=False)
    return p.seconds, {k: v for k, v in p.terms.items() if v}


def main() -> None:
    import h5py

    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--dir", default="/tmp/ucr")
    ap.add_argument("--rows", type=int, default=50000)
    ap.add_argument("--reads", type=int, default=5000)
    ap.add_argument("--rounds", type=int, default=5)
    a = ap.parse_args()
    root = Path(a.dir)
    root.mkdir(parents=True, exist_ok=True)
    data = np.random.default_rng(0).standard_normal((a.rows, 64)).astype(np.float32)
    order = np.random.default_rng(1).integers(0, a.rows, a.reads)
    paths = {}
    for k, (label, (chunks, _)) in enumerate(LAYOUTS.items()):
        paths[label] = root / f"l{k}.h5"
        with h5py.File(paths[label], "w") as f:
            f.create_dataset("x", data=data, chunks=chunks)
    times = {(label, cold): [] for label in LAYOUTS for cold in (True, False)}
    for _ in range(a.rounds):
        for label, (_, cache) in LAYOUTS.items():
            for cold in (True, False):
                if cold:
                    evict(paths[label])
                times[label, cold].append(_read(paths[label], cache, order))
    print(f"{a.reads} random ds[i] reads of ({a.rows}, 64) float32, median of {a.rounds} rounds (ms)")
    print("| layout | cold | warm | model (cold) | model terms |\n|---|---|---|---|---|")
    for label, (chunks, cache) in LAYOUTS.items():
        s, terms = _model(a.rows, chunks, cache, order)
        print(f"| {label} | {1e3 * statistics.median(times[label, True]):.1f} | "
              f"{1e3 * statistics.median(times[label, False]):.1f} | {1e3 * s:.1f} | "
              + ", ".join(f"{k[2:]} {1e3 * v:.1f}" for k, v in sorted(terms.items())) + " |")
    shutil.rmtree(root)


if __name__ == "__main__":
    main()
