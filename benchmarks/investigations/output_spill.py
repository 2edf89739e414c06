"""What a multi-chunk call pays when its chunks scatter into a strided output beyond the CPU's cache (issue 30,
r05), against the I/O model with and without its ``s_ospill`` variable (``iomodel.spill``).

A (1,000,000 x 16) float32 array stored as column chunks (r, 1) is read in strips of K columns (``a[:, c:c + K]``)
through zarr 3 and through h5py (a chunk cache that holds the strip's chunks), its files in the page cache. Each
call's chunks are copied into a (1e6, K) output: with r = 1e6 the K chunks share one 4K-MB region, written one
element per row per chunk; with r = 250000 each group of K chunks shares a region a quarter of that. Per chunk
shape and K: the measured time per call (median of ``--repeat``), the model's (warm page cache, the shipped
profile), the model's without the ``s_ospill`` term, and s_ospill per call. Then, per library, the seconds per
spilled byte the excess implies: for each K, (measured - b x model without the term) / s_ospill of the r = 1e6
chunks, b the measured / model ratio of the r = 250000 chunks (which spill nothing): the value the profile's
``s_ospill`` coefficient carries (``iomodel/profiles/default.json``).

    python -m benchmarks.investigations.output_spill [--dir /tmp/ospill] [--repeat 7] [--libraries zarr,hdf5]
"""
from __future__ import annotations

import argparse
import os
import shutil
import statistics
from pathlib import Path

import numpy as np

from benchmarks.helpers.paired import median_seconds

ROWS, COLUMNS = 1_000_000, 16
CHUNK_ROWS = (62_500, 250_000, 1_000_000)
STRIPS = (1, 2, 4, 8)
CACHE = 256 << 20
"""h5py's chunk cache: holds every chunk of a strip (HDF5 reads whole chunks and copies from the cache)."""


def _model(library: str, rows: int, k: int) -> tuple[float, float, float]:
    """Seconds per call with and without the s_ospill term, and s_ospill bytes per call (shipped profile)."""
    from instrumentation.records import READ, AccessRecord, DatasetRecord, Selection
    from iomodel import load_profile, predict
    from iomodel.layout import Layout

    shape = (ROWS, COLUMNS)
    ds = DatasetRecord(id=0, library=library, library_version="", file="ospill", path="/x", shape=shape,
                       dtype="<f4", maxshape=None, chunks=(rows, 1), shards=None, filters=(), cache=None,
                       zarr_format=3 if library == "zarr" else None, created=False)
    calls = list(range(0, COLUMNS, k))
    accs = [AccessRecord(0, READ, Selection((0, c), (1, 1), (1, 1), (ROWS, k)), ROWS * k, ROWS * k * 4, 0.0, 0.0)
            for c in calls]
    lay = Layout(library, shape, 4, (rows, 1), rdcc_nbytes=CACHE) if library == "hdf5" else \
        Layout(library, shape, 4, (rows, 1))
    prof = load_profile()
    p = predict(accs, lay, prof, dataset=ds, warm=True)
    spill = p.variables.s_ospill
    coef = prof.coefficient(library, "s_ospill")
    return p.seconds / len(calls), (p.seconds - coef * spill) / len(calls), spill / len(calls)


def _reader(library: str, root: Path, rows: int, data: np.ndarray):
    """A function reading the strips of K columns of a fresh array of (rows, 1) chunks, its files cached."""
    if library == "zarr":
        import zarr

        z = zarr.create_array(str(root / f"z{rows}"), shape=data.shape, dtype="<f4", chunks=(rows, 1),
                              compressors=None)
        z[...] = data
        for f in (root / f"z{rows}").rglob("*"):
            if f.is_file():
                f.read_bytes()
        z[:, 0]  # zarr's first call starts its event loop and thread pool
        return lambda k: [z[:, c:c + k] for c in range(0, COLUMNS, k)], None
    import h5py

    path = root / f"h{rows}.h5"
    with h5py.File(path, "w") as f:
        f.create_dataset("x", data=data, chunks=(rows, 1))
    path.read_bytes()
    f = h5py.File(path, "r", rdcc_nbytes=CACHE, rdcc_nslots=8191)
    d = f["x"]
    return lambda k: [d[:, c:c + k] for c in range(0, COLUMNS, k)], f


def main(argv=None) -> int:
    from iomodel.probe import cpu_cache_bytes

    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--dir", default="/tmp/ioadvisor-ospill", help="scratch directory (removed at the end)")
    ap.add_argument("--repeat", type=int, default=7)
    ap.add_argument("--libraries", default="zarr,hdf5")
    args = ap.parse_args(argv)
    root = Path(args.dir)
    shutil.rmtree(root, ignore_errors=True)
    root.mkdir(parents=True)
    data = np.random.default_rng(0).standard_normal((ROWS, COLUMNS), dtype=np.float32)
    print(f"load average {os.getloadavg()[0]:.2f}; last-level cache {cpu_cache_bytes() >> 20} MiB")
    print("| library | chunks | K | measured ms/call | model | model without s_ospill | s_ospill MB/call |")
    print("|---|---|---|---|---|---|---|")
    try:
        for lib in args.libraries.split(","):
            got = {}
            for rows in CHUNK_ROWS:
                read, handle = _reader(lib, root, rows, data)
                for k in STRIPS:
                    t = median_seconds(lambda: read(k), args.repeat) / len(range(0, COLUMNS, k))
                    m, m0, spill = _model(lib, rows, k)
                    got[rows, k] = (t, m0, spill)
                    print(f"| {lib} | {rows}x1 | {k} | {t * 1e3:.2f} | {m * 1e3:.2f} ({t / m:.2f}) | "
                          f"{m0 * 1e3:.2f} ({t / m0:.2f}) | {spill / 1e6:.0f} |")
                if handle is not None:
                    handle.close()
            per_byte = []
            for k in STRIPS:
                (t, m0, spill), (tb, mb, _) = got[CHUNK_ROWS[-1], k], got[250_000, k]
                if spill > 0:
                    per_byte.append((t - tb / mb * m0) / spill)
            if per_byte:
                print(f"{lib}: seconds per spilled byte " + ", ".join(f"{x:.2e}" for x in per_byte)
                      + f" (median {statistics.median(per_byte):.2e})")
    finally:
        shutil.rmtree(root, ignore_errors=True)
    print(f"load average {os.getloadavg()[0]:.2f}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
