"""When the tracers list a chunked dataset's chunk offsets, seen from the program: the first read's time and the
later reads', cold, plain against under ``ioadvisor run`` (docs/tracing-overhead.md, instrumentation/chunklisting.py).

A (4096, 16384) float32 HDF5 file of 4096x1 chunks (16,384 chunks, r03's recipe shape at a quarter of its rows) is
opened read-only and 24 random columns are read, each timed in the program; the file's pages are evicted before each
run. Listing the offsets at the first sight of the dataset put the cold listing into the first read and left the
chunk index in memory for the later reads (faster traced than plain); listed at the trace's end, both are as plain.

    python -m benchmarks.investigations.first_sight_listing [--rounds 5] [--baseline TREE]

``--baseline TREE``: another checkout (its extensions built) run the same way, alternated with this one.
"""
from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import numpy as np

from iomodel.replay import evict

HERE = Path(__file__).resolve().parents[2]
SHAPE, CHUNKS, READS = (4096, 16384), (4096, 1), 24


def prepare(path: Path) -> None:
    import h5py

    with h5py.File(path, "w") as f:
        f.create_dataset("z", data=np.random.default_rng(0).random(SHAPE, dtype="f4"), chunks=CHUNKS)


def program(path: str) -> None:
    """The traced program: each read's wall milliseconds, as JSON on stdout."""
    import h5py

    ms = []
    with h5py.File(path, "r") as f:
        z = f["z"]
        for j in np.random.default_rng(1).integers(0, SHAPE[1], READS):
            t = time.perf_counter()
            z[:, int(j)]
            ms.append((time.perf_counter() - t) * 1e3)
    print(json.dumps(ms))


def one_run(path: Path, tree: Path | None, trace: Path) -> list[float]:
    cmd = [sys.executable, __file__, "--program", str(path)]  # the program's own code is this file's, either tree
    if tree is not None:  # that tree's `ioadvisor run` (its packages first on the path)
        cmd = [sys.executable, "-c", "import sys; from advisor.entry import main; sys.exit(main(sys.argv[1:]))",
               "run", "--force", "-o", str(trace), "--"] + cmd
    evict(path)
    where = tree or HERE
    res = subprocess.run(cmd, cwd=where, env={**os.environ, "PYTHONPATH": str(where)}, capture_output=True,
                         text=True, check=True)
    return json.loads(res.stdout.strip().splitlines()[-1])


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--rounds", type=int, default=5)
    ap.add_argument("--baseline", type=Path, help="another checkout to run alternated with this one")
    ap.add_argument("--program", help=argparse.SUPPRESS)
    args = ap.parse_args(argv)
    if args.program:
        program(args.program)
        return 0
    variants = [("plain", None), ("traced", HERE)] + ([("baseline traced", args.baseline)] if args.baseline else [])
    with tempfile.TemporaryDirectory(prefix="first-sight-") as tmp:
        path = Path(tmp) / "columns.h5"
        prepare(path)
        got: dict[str, list[list[float]]] = {name: [] for name, _ in variants}
        load0 = os.getloadavg()[0]
        for r in range(args.rounds):
            for name, tree in variants[r % len(variants):] + variants[:r % len(variants)]:
                got[name].append(one_run(path, tree, Path(tmp) / "t.parquet"))
        load1 = os.getloadavg()[0]
    print(f"{READS} cold column reads of a {CHUNKS[0]}x{CHUNKS[1]}-chunked {SHAPE} float32 file "
          f"({SHAPE[1]} chunks), {args.rounds} rounds, load {load0:.1f} -> {load1:.1f}; medians (range):")
    for name, runs in got.items():
        first = [r[0] for r in runs]
        rest = [sum(r[1:]) for r in runs]
        print(f"  {name:16s} first read {statistics.median(first):7.2f} ms ({min(first):.2f}-{max(first):.2f})"
              f"   the other {READS - 1} {statistics.median(rest):6.2f} ms ({min(rest):.2f}-{max(rest):.2f})")
    return 0


if __name__ == "__main__":
    sys.exit(main())
