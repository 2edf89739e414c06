"""Cost of ``advisor.trace`` on the traced program.

1. Per intercepted call: ``ds[0:1, 0:1]`` (the same index every call) and ``ds[i:i+1, j:j+1]``
   (a new one every call) on a small h5py dataset, and
   ``z[0:1, 0:1]`` on a small zarr array, traced minus untraced, per call.
2. A realistic loop: 10,000 reads of 1000x8 boxes (random rows, columns a
   multiple of 8) from a (2M x 64) float32 dataset with (65536, 8) chunks
   (512 MiB, built once in ~/.cache/ioadvisor/bench/), traced vs untraced.

Traced and untraced repetitions are interleaved. Reported: the median of the
per-pair differences, and the difference of the fastest repetitions (min-min:
other processes only ever add time, so on a shared machine it is the least
disturbed estimate); both as CPU time of the whole process (``time.process_time``: it includes the
tracer's flusher thread, and is what another program on a shared machine does
not disturb much) and as wall time. The traced timing of each repetition ends
with ``Tracer.flush()``, so the formatting and writing of its records is
counted; entering and leaving the tracer (file creation, a thread start/join,
once per trace) is not.

    python benchmarks/tracing_overhead.py [--quick] [--json out.json]
"""
from __future__ import annotations

import argparse
import itertools
import json
import os
import statistics
import tempfile
import time
from pathlib import Path

import h5py
import numpy as np
import zarr

import advisor

CACHE = Path(os.environ.get("IOADVISOR_CACHE", Path.home() / ".cache" / "ioadvisor")) / "bench"


def timed(fn, tracer_path=None):
    """(cpu, wall) seconds of fn(), inside a tracer when tracer_path is given."""
    if tracer_path is None:
        c, w = time.process_time(), time.perf_counter()
        fn()
        return time.process_time() - c, time.perf_counter() - w
    with advisor.trace(tracer_path, overwrite=True) as t:  # one scratch trace, rep after rep
        c, w = time.process_time(), time.perf_counter()
        fn()
        t.flush()
        cpu, wall = time.process_time() - c, time.perf_counter() - w
    return cpu, wall


def interleaved(fn, reps: int, tracer_path: Path):
    """Per repetition (untraced cpu, wall), (traced cpu, wall); order alternates to spread drift."""
    plain, traced = [], []
    for r in range(reps):
        if r % 2:
            traced.append(timed(fn, tracer_path))
            plain.append(timed(fn))
        else:
            plain.append(timed(fn))
            traced.append(timed(fn, tracer_path))
    return plain, traced


def per_call(name, fn, n_calls, reps, tracer_path):
    def loop():
        for _ in range(n_calls):
            fn()

    loop()  # warm up
    plain, traced = interleaved(loop, reps, tracer_path)
    row = {"case": name, "calls": n_calls, "reps": reps}
    for k, label in ((0, "cpu"), (1, "wall")):
        diffs = [(t[k] - p[k]) / n_calls for p, t in zip(plain, traced)]
        row[f"{label}_untraced_us"] = statistics.median(p[k] for p in plain) / n_calls * 1e6
        row[f"{label}_added_us"] = statistics.median(diffs) * 1e6
        # interference from other processes only adds time: the fastest repetitions are the least disturbed
        row[f"{label}_added_min_us"] = (min(t[k] for t in traced) - min(p[k] for p in plain)) / n_calls * 1e6
    return row


def big_dataset(rows: int) -> Path:
    CACHE.mkdir(parents=True, exist_ok=True)
    path = CACHE / f"overhead_{rows}x64_c65536x8.h5"
    if not path.exists():
        tmp = path.with_suffix(".tmp")
        with h5py.File(tmp, "w") as f:
            ds = f.create_dataset("x", shape=(rows, 64), dtype="f4", chunks=(min(65536, rows), 8))
            step = 262144
            rng = np.random.default_rng(0)
            for r0 in range(0, rows, step):
                ds[r0:r0 + step] = rng.random((min(step, rows - r0), 64), dtype="f4")
        tmp.rename(path)
    return path


def realistic(rows: int, n_reads: int, reps: int, tracer_path: Path):
    path = big_dataset(rows)
    rng = np.random.default_rng(1)
    r0 = rng.integers(0, rows - 1000, n_reads)
    c0 = rng.integers(0, 8, n_reads) * 8
    with h5py.File(path, "r") as f:
        ds = f["x"]

        def loop():
            for r, c in zip(r0.tolist(), c0.tolist()):
                ds[r:r + 1000, c:c + 8]

        loop()  # warm the page cache
        plain, traced = interleaved(loop, reps, tracer_path)
    row = {"case": f"{n_reads} reads of 1000x8 from ({rows} x 64) f4, chunks (65536, 8)", "reps": reps}
    for k, label in ((0, "cpu"), (1, "wall")):
        ratios = [t[k] / p[k] - 1 for p, t in zip(plain, traced)]
        row[f"{label}_untraced_s"] = statistics.median(p[k] for p in plain)
        row[f"{label}_slowdown_pct"] = statistics.median(ratios) * 100
        row[f"{label}_slowdown_min_pct"] = (min(t[k] for t in traced) / min(p[k] for p in plain) - 1) * 100
    return row


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--quick", action="store_true", help="small sizes, few repetitions (a smoke run)")
    ap.add_argument("--json", type=Path, help="also write the results here")
    args = ap.parse_args(argv)
    q = args.quick
    with tempfile.TemporaryDirectory(prefix="ioadvisor-overhead-") as tmp:
        tmp = Path(tmp)
        trace_path = tmp / "t.jsonl"
        with h5py.File(tmp / "small.h5", "w") as f:
            ds = f.create_dataset("x", data=np.zeros((100, 100), "f4"), chunks=(10, 10))
            rows = [per_call("h5py ds[0:1, 0:1]", lambda: ds[0:1, 0:1], 1000 if q else 5000, 5 if q else 21,
                             trace_path)]
            # a different index on every call: the tracer cannot reuse the previous line's normalization
            keys = itertools.cycle([(slice(i, i + 1), slice(j, j + 1)) for i in range(100) for j in range(0, 100, 7)])
            rows.append(per_call("h5py ds[i:i+1, j:j+1], i, j varying", lambda: ds[next(keys)],
                                 1000 if q else 5000, 5 if q else 21, trace_path))
        z = zarr.create_array(store={}, shape=(100, 100), chunks=(10, 10), dtype="f4")
        z[:] = 0
        rows.append(per_call("zarr z[0:1, 0:1]", lambda: z[0:1, 0:1], 100 if q else 500, 5 if q else 15,
                             trace_path))
        loop = realistic(200_000 if q else 2_000_000, 1000 if q else 10_000, 3 if q else 7, trace_path)
    print("| per-call case | untraced µs/call (cpu) | added µs/call, cpu: median of pairs / min-min "
          "| untraced µs/call (wall) | added µs/call, wall: median / min-min |")
    print("|---|---|---|---|---|")
    for r in rows:
        print(f"| {r['case']} | {r['cpu_untraced_us']:.1f} | {r['cpu_added_us']:.2f} / {r['cpu_added_min_us']:.2f} "
              f"| {r['wall_untraced_us']:.1f} | {r['wall_added_us']:.2f} / {r['wall_added_min_us']:.2f} |")
    print()
    print("| loop | untraced s (cpu) | slower, cpu: median / min-min | untraced s (wall) "
          "| slower, wall: median / min-min |")
    print("|---|---|---|---|---|")
    print(f"| {loop['case']} | {loop['cpu_untraced_s']:.2f} | {loop['cpu_slowdown_pct']:+.2f}% / "
          f"{loop['cpu_slowdown_min_pct']:+.2f}% | {loop['wall_untraced_s']:.2f} | {loop['wall_slowdown_pct']:+.2f}% / "
          f"{loop['wall_slowdown_min_pct']:+.2f}% |")
    if args.json:
        args.json.write_text(json.dumps({"per_call": rows, "loop": loop, "date": time.strftime("%Y-%m-%d"),
                                         "quick": q}, indent=2))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
