"""Speed of the advisor: candidates generated and evaluated for a 10,000-access trace (target: < 10 s).

Run: python -m benchmarks.speed.advisor_speed [--quick] [--profile FILE]
Builds a real HDF5 file (1M x 32 float32, a smooth random-walk field) under /tmp, a synthetic trace of
10,000 mixed accesses (row blocks, boxes, a few whole columns), warms the numba kernels on a tiny trace,
then times ``advisor.advise`` (lossless defaults + sz3/zfp at rel:1e-3) and reports candidates generated,
evaluated, I/O replays, compression-estimate seconds and wall seconds (median of --repeat runs).
"""
from __future__ import annotations

import argparse
import statistics
import tempfile
import time
from pathlib import Path

import numpy as np

from instrumentation.records import READ, WRITE, AccessRecord, DatasetRecord, Selection, TraceHeader
from instrumentation.tracefile import Trace


def make_file(path: Path, shape) -> None:
    import h5py

    rng = np.random.default_rng(0)
    data = np.cumsum(rng.normal(size=shape).astype(np.float32), axis=0)
    with h5py.File(path, "w") as f:
        f.create_dataset("x", data=data, chunks=(65536, 1))


def make_trace(path: Path, shape, n: int) -> Trace:
    rng = np.random.default_rng(1)
    ds = DatasetRecord(0, "hdf5", "2", str(path), "/x", shape, "float32", chunks=(65536, 1))
    acc = []
    for i in range(n):
        kind = i % 10
        if kind < 6:  # row blocks
            r = int(rng.integers(0, shape[0] - 100))
            sel = Selection.box((r, 0), (100, shape[1]))
        elif kind < 9:  # boxes
            r, c = int(rng.integers(0, shape[0] - 1000)), 8 * int(rng.integers(0, shape[1] // 8))
            sel = Selection.box((r, c), (1000, 8))
        else:  # a few writes of row blocks
            r = int(rng.integers(0, shape[0] - 100))
            sel = Selection.box((r, 0), (100, shape[1]))
        op = WRITE if kind == 9 else READ
        acc.append(AccessRecord(0, op, sel, sel.nelements, 4 * sel.nelements, 0.0, 0.0))
    acc += [AccessRecord(0, READ, Selection.box((0, j), (shape[0], 1)), shape[0], 4 * shape[0], 0.0, 0.0)
            for j in (3, 17)]
    return Trace([TraceHeader(1, "bench", 1, 0, 1, 0.0)], {0: ds}, acc, source="advisor_speed")


def main() -> None:
    import advisor
    from advisor.candidates import allowed_codecs, generate
    from instrumentation.patterns import classify
    from iomodel import load_profile

    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--quick", action="store_true", help="2,000 accesses, one repeat")
    ap.add_argument("--repeat", type=int, default=3)
    ap.add_argument("--profile", help="profile file (default: this machine's, else the shipped one)")
    args = ap.parse_args()
    n = 2000 if args.quick else 10_000
    repeat = 1 if args.quick else args.repeat
    shape = (1_000_000, 32)
    prof = load_profile(args.profile)
    with tempfile.TemporaryDirectory(prefix="advisor-speed-") as tmp:
        path = Path(tmp, "x.h5")
        make_file(path, shape)
        trace = make_trace(path, shape, n)
        advisor.advise(make_trace(path, shape, 20), profile=prof, read_data=False)  # numba warm-up
        ds = trace.datasets[0]
        codecs, _ = allowed_codecs("float32", max_error="rel:1e-3")
        n_cands = len(generate(ds, classify(trace.accesses, shape), shape, codecs=codecs))
        walls, ests = [], []
        for _ in range(repeat):
            t0 = time.perf_counter()
            adv = advisor.advise(trace, profile=prof, max_error="rel:1e-3")
            walls.append(time.perf_counter() - t0)
            d = adv.dataset()
            ests.append(next((float(x.split()[3]) for x in d.notes if x.startswith("compression estimates")), 0.0))
        print(f"accesses {len(trace.accesses)}  candidates generated {d.n_generated} (codec x layout: {n_cands})  "
              f"evaluated {d.n_evaluated}")
        print(f"wall s (median of {repeat}): {statistics.median(walls):.2f}  "
              f"of which compression estimates: {statistics.median(ests):.2f}  runs: "
              + ", ".join(f"{w:.2f}" for w in walls))
        print(f"recommended: {d.recommendation.label}  {d.recommendation.seconds:.3g} s  "
              f"(current {d.current.seconds:.3g} s)")


if __name__ == "__main__":
    main()
