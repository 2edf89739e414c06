"""Capture through worker processes: PyTorch DataLoader workers, as a user runs them.

1. Same advice: a training-style program reads random 1000x8 boxes of a
   (N x 64) float32 HDF5 dataset through a ``DataLoader`` (one h5py call per
   sample); it is run with ``ioadvisor run`` with ``num_workers`` 0 and 4 (same
   seed, so the same samples), each trace is checked against the program's own
   list of samples, and ``ioadvisor advise --json`` must recommend the same layout.
2. Overhead with workers: the same loop with ``num_workers`` 0, 2 and 4, and
   the same reads through a ``multiprocessing`` pool (fork, 2 workers, one box
   per task), traced and untraced repetitions interleaved in one process, in
   pairs until the median slowdown of the loop's CPU time is known to within
   ``--spread`` points (benchmarks/helpers/paired.py). Wall time, and CPU time of the
   process and its workers (``getrusage`` of the process and of its waited-for
   children, microseconds: the DataLoader and the pool join their workers; the
   10 ms ticks of ``os.times`` were 0.5-0.8 points of these loops). Reported both
   for the loop (workers started, read, shut down and their parts closed) and
   including the tracer's exit (waiting for the parts and merging them into the
   trace). Median of per-pair ratios with its bootstrap 95% interval, and
   min-min. Traces in the default (columnar) format, or JSON Lines with
   ``--format jsonl``.

    python -m benchmarks.speed.worker_capture [--quick] [--cases advice,loader0,loader2,loader4,pool]
                                        [--format parquet|jsonl] [--json out.json]
                                        [--reps N] [--max-pairs N] [--spread POINTS] [--budget SECONDS]
"""
from __future__ import annotations

import argparse
import json
import os
import resource
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import h5py
import numpy as np

from benchmarks.helpers.paired import paired, summary

ROOT = Path(__file__).resolve().parents[2]
CACHE = Path(os.environ.get("IOADVISOR_CACHE", Path.home() / ".cache" / "ioadvisor")) / "bench"

PROGRAM = '''
import json, sys
import h5py, numpy as np, torch
from torch.utils.data import DataLoader, Dataset

class Boxes(Dataset):
    """One h5py read of a 1000x8 box per sample; the file is opened in each worker."""
    def __init__(self, path, starts):
        self.path, self.starts, self.x = path, starts, None
    def __len__(self):
        return len(self.starts)
    def __getitem__(self, i):
        if self.x is None:
            self.x = h5py.File(self.path, "r")["x"]
        r, c = self.starts[i]
        return i, torch.from_numpy(self.x[r:r + 1000, c:c + 8])

def loader(path, starts, workers):
    return DataLoader(Boxes(path, starts), batch_size=16, num_workers=workers, shuffle=True,
                      generator=torch.Generator().manual_seed(0))

_x = {}

def read_box(task):
    """A pool task: one box, the file opened once per worker process."""
    path, r, c = task
    if path not in _x:
        _x[path] = h5py.File(path, "r")["x"]
    return float(_x[path][r:r + 1000, c:c + 8][0, 0])

if __name__ == "__main__":
    path, n, workers, out = sys.argv[1], int(sys.argv[2]), int(sys.argv[3]), sys.argv[4]
    rng = np.random.default_rng(1)
    rows = h5py.File(path, "r")["x"].shape[0]
    starts = list(zip(rng.integers(0, rows - 1000, n).tolist(), (rng.integers(0, 8, n) * 8).tolist()))
    seen = [starts[int(i)] for idx, _ in loader(path, starts, workers) for i in idx]
    json.dump(seen, open(out, "w"))
'''


def dataset(rows: int) -> Path:
    CACHE.mkdir(parents=True, exist_ok=True)
    path = CACHE / f"loader_{rows}x64_c65536x8.h5"
    if not path.exists():
        tmp = path.with_suffix(".tmp")
        with h5py.File(tmp, "w") as f:
            ds = f.create_dataset("x", shape=(rows, 64), dtype="f4", chunks=(min(65536, rows), 8))
            rng = np.random.default_rng(0)
            for r0 in range(0, rows, 262144):
                ds[r0:r0 + 262144] = rng.random((min(262144, rows - r0), 64), dtype="f4")
        tmp.rename(path)
    return path


def same_advice(path: Path, n: int, tmp: Path, suffix: str) -> dict:
    prog = tmp / "train.py"
    prog.write_text(PROGRAM)
    env = {**os.environ, "PYTHONPATH": os.pathsep.join(filter(None, [str(ROOT), os.environ.get("PYTHONPATH")]))}
    out = {}
    for workers in (0, 4):
        trace, seen = tmp / f"w{workers}{suffix}", tmp / f"w{workers}.json"
        t0 = time.perf_counter()
        subprocess.run([sys.executable, "-m", "advisor", "run", "-o", str(trace), "--", "python", str(prog),
                        str(path), str(n), str(workers), str(seen)], env=env, check=True)
        run_s = time.perf_counter() - t0
        from instrumentation.tracefile import load_trace

        tr = load_trace(trace)
        truth = sorted(map(tuple, json.loads(seen.read_text())))
        got = sorted((a.selection.start[0], a.selection.start[1]) for a in tr.accesses)
        adv = subprocess.run([sys.executable, "-m", "advisor", "advise", str(trace), "--json"], env=env,
                             check=True, capture_output=True, text=True).stdout
        ds = json.loads(adv)["datasets"][0]
        layout = ("library", "chunks", "shards", "cache_bytes", "cache_slots", "compressor", "error_bound")
        out[workers] = {"run_s": run_s, "accesses": len(tr.accesses), "ground_truth": len(truth),
                        "all_captured": got == truth, "processes": len(tr.header.processes),
                        "missed": list(tr.missed), "pattern": ds["pattern"], "procs": ds["procs"],
                        "recommendation": {k: ds["recommendation"][k] for k in layout},
                        "predicted_s": ds["recommendation"]["seconds"],
                        "top3": [{k: c[k] for k in layout} for c in ds["candidates"][:3]]}
    out["same_recommendation"] = out[0]["recommendation"] == out[4]["recommendation"]
    return out


def overhead(path: Path, n: int, pairs: dict, tmp: Path, case: str, suffix: str) -> dict:
    """``case``: loaderN (DataLoader, num_workers=N) or pool (multiprocessing, fork, 2 workers)."""
    if str(tmp) not in sys.path:
        sys.path.insert(0, str(tmp))
    (tmp / "train_mod.py").write_text(PROGRAM)
    import multiprocessing as mp

    import advisor
    import train_mod

    rng = np.random.default_rng(1)
    rows = h5py.File(path, "r")["x"].shape[0]
    starts = list(zip(rng.integers(0, rows - 1000, n).tolist(),
                      (rng.integers(0, 8, n) * 8).tolist()))

    def loop():
        if case == "pool":
            with mp.get_context("fork").Pool(2) as pool:
                pool.map(train_mod.read_box, [(str(path), r, c) for r, c in starts], chunksize=16)
            return
        for _ in train_mod.loader(str(path), starts, int(case[len("loader"):])):
            pass

    def cpu() -> float:  # this process and its waited-for children (the DataLoader joins its workers)
        own, children = resource.getrusage(resource.RUSAGE_SELF), resource.getrusage(resource.RUSAGE_CHILDREN)
        return own.ru_utime + own.ru_stime + children.ru_utime + children.ru_stime

    def timed(traced: bool):
        """(loop wall, wall with the tracer's exit, loop cpu, cpu with exit) in seconds."""
        t0, c0 = time.perf_counter(), cpu()
        if not traced:
            loop()
            t, c = time.perf_counter() - t0, cpu() - c0
            return t, t, c, c
        with advisor.trace(tmp / f"o{suffix}", overwrite=True):
            loop()
            t_loop, c_loop = time.perf_counter() - t0, cpu() - c0
        return t_loop, time.perf_counter() - t0, c_loop, cpu() - c0

    loop()  # warm the page cache
    load = os.getloadavg()[0]
    plain, traced = paired(timed, lambda p, t: (t[2] / p[2] - 1) * 100, **pairs)
    row = {"case": case, "format": suffix, "samples": n, "pairs": len(plain), "load_before": load,
           "load_after": os.getloadavg()[0]}
    for k, label in ((0, "wall_loop"), (1, "wall_with_exit"), (2, "cpu_loop"), (3, "cpu_with_exit")):
        base = 0 if k < 2 else 2  # traced (loop or with exit) against the untraced loop
        row.update(summary([p[base] for p in plain], [t[k] for t in traced], float, label))
    return row


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--quick", action="store_true", help="small sizes, few repetitions (a smoke run)")
    ap.add_argument("--json", type=Path, help="also write the results here")
    ap.add_argument("--cases", default="advice,loader0,loader2,loader4,pool",
                    help="comma-separated: advice, loader0, loader2, loader4, pool (default: all)")
    ap.add_argument("--format", choices=("parquet", "jsonl"), default="parquet",
                    help="trace format (default: the columnar format, ioadvisor's default)")
    ap.add_argument("--reps", type=int, help="least pairs per case (default 7, --quick 3)")
    ap.add_argument("--max-pairs", type=int, help="most pairs per case (default 80, --quick 3)")
    ap.add_argument("--spread", type=float, default=1.0,
                    help="stop adding pairs once the median CPU slowdown's 95%% interval is within this many points")
    ap.add_argument("--budget", type=float, default=240.0, help="stop adding pairs to a case after this many seconds")
    args = ap.parse_args(argv)
    rows, n, least = (200_000, 800, 3) if args.quick else (2_000_000, 4000, 7)
    least = args.reps or least
    pairs = {"min_pairs": least, "max_pairs": max(least, args.max_pairs or (3 if args.quick else 80)),
             "target": args.spread, "max_seconds": args.budget}
    suffix = "." + args.format
    path = dataset(rows)
    cases = args.cases.split(",")
    with tempfile.TemporaryDirectory(prefix="ioadvisor-workers-") as tmp:
        result = {"load": os.getloadavg()[0], "format": args.format}
        if "advice" in cases:
            result["advice"] = same_advice(path, n, Path(tmp), suffix)
        result["overhead"] = [overhead(path, n, pairs, Path(tmp), case, suffix) for case in cases if case != "advice"]
    print(json.dumps(result, indent=1))
    print("| case | pairs | untraced s, wall / CPU | CPU, loop: median [95% interval] / min-min | CPU, with exit "
          "| wall, loop | wall, with exit |")
    print("|---|---|---|---|---|---|---|")
    for r in result["overhead"]:
        def pct(label):
            lo, hi = r[f"{label}_interval_pct"]
            return f"{r[f'{label}_slowdown_pct']:+.2f}% [{lo:+.2f}, {hi:+.2f}] / {r[f'{label}_slowdown_min_pct']:+.2f}%"

        print(f"| {r['case']} | {r['pairs']} | {r['wall_loop_untraced']:.2f} / {r['cpu_loop_untraced']:.2f} "
              f"| {pct('cpu_loop')} | {pct('cpu_with_exit')} | {pct('wall_loop')} | {pct('wall_with_exit')} |")
    if args.json:
        args.json.write_text(json.dumps(result, indent=1))
    return 0


if __name__ == "__main__":
    sys.exit(main())
