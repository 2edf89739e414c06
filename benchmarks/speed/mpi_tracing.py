"""Cost of tracing an MPI job with ``mpiexec -n P ioadvisor run -- python app.py``.

For P ranks, each reading its own row blocks of one shared HDF5 file, runs the
job untraced and traced (same launcher, same app) and reports median wall
times, the app's own loop time on rank 0 (tracing cost per access, without
start-up), and the time rank 0 needs to merge the per-rank traces. A second
table splits rank 0's merge of large synthetic rank files into load / merge /
write, and times ``trace show``'s pattern classification on the merged trace.

    python -m benchmarks.speed.mpi_tracing [--quick] [--ranks 1 2 4] [--reads 2000] [--repeat 5] [--merge-accesses 100000]
"""
from __future__ import annotations

import argparse
import statistics
import subprocess
import sys
import tempfile
import textwrap
import time
from pathlib import Path

import h5py
import numpy as np

from instrumentation.mpi import merge_rank_files, rank_path
from instrumentation.patterns import summarize
from instrumentation.records import DatasetRecord, TraceHeader
from instrumentation.tracefile import TraceWriter, load_trace, merge_traces, write_trace

BIN = Path(sys.executable).parent
APP = textwrap.dedent("""
    import sys, time
    from mpi4py import MPI
    import h5py
    comm = MPI.COMM_WORLD
    rank, size = comm.Get_rank(), comm.Get_size()
    n_reads, out = int(sys.argv[2]), sys.argv[3]
    with h5py.File(sys.argv[1], "r") as f:
        d = f["x"]
        rows = d.shape[0] // size
        starts = [rank * rows + (i * 100) % (rows - 100) for i in range(n_reads)]
        comm.Barrier()
        t0 = time.perf_counter()
        for s in starts:
            d[s:s + 100]
        loop = time.perf_counter() - t0
    if rank == 0:
        open(out, "w").write(repr(loop))
""")


def run_job(ranks: int, traced: bool, work: Path, reads: int) -> tuple[float, float]:
    """(wall seconds of the whole mpiexec job, rank 0's read-loop seconds)."""
    loop_file = work / "loop.txt"
    cmd = [str(BIN / "mpiexec"), "-n", str(ranks)]
    if traced:
        cmd += [str(BIN / "ioadvisor"), "run", "--force", "-o", str(work / "t.jsonl"), "--"]  # one scratch trace
    cmd += [sys.executable, str(work / "app.py"), str(work / "data.h5"), str(reads), str(loop_file)]
    t0 = time.perf_counter()
    res = subprocess.run(cmd, capture_output=True, text=True, timeout=600)
    wall = time.perf_counter() - t0
    if res.returncode:
        raise RuntimeError(res.stderr)
    return wall, float(loop_file.read_text())


def merge_costs(work: Path, ranks: int, n_total: int) -> None:
    """Rank 0's merge of ``ranks`` files holding ``n_total`` row-block reads, by phase (us per access)."""
    path = work / "m.jsonl"
    for r in range(ranks):
        w = TraceWriter(rank_path(path, r, ranks), TraceHeader(1, "h", 1, r, ranks, 0.0))
        w.dataset(DatasetRecord(0, "hdf5", "2", "f.h5", "/x", (400_000, 8), "float32", chunks=(4096, 8)))
        for i in range(n_total // ranks):
            w.hyperslab_access(0, "read", (i, 0), (1, 1), (1, 1), (100, 8), 800, 3200, 1e-3 * i, 1e-5)
        w.close()
    t0 = time.perf_counter()
    traces = [load_trace(rank_path(path, r, ranks)) for r in range(ranks)]
    t1 = time.perf_counter()
    merged = merge_traces(traces)
    t2 = time.perf_counter()
    write_trace(merged, path)
    t3 = time.perf_counter()
    summarize(merged)
    t4 = time.perf_counter()
    us = [1e6 * dt / n_total for dt in (t1 - t0, t2 - t1, t3 - t2, t4 - t3)]
    print(f"\n{n_total} accesses in {ranks} rank files, us per access")
    print("| load_trace | merge_traces | write_trace | total merge | summarize (trace show) |")
    print("|---|---|---|---|---|")
    print(f"| {us[0]:.1f} | {us[1]:.1f} | {us[2]:.1f} | {sum(us[:3]):.1f} | {us[3]:.1f} |")


def main(argv=None) -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--quick", action="store_true", help="2 and 4 ranks, 500 reads, 3 repeats")
    ap.add_argument("--ranks", type=int, nargs="+", default=[1, 2, 4])
    ap.add_argument("--reads", type=int, default=2000, help="row-block reads per rank")
    ap.add_argument("--repeat", type=int, default=5)
    ap.add_argument("--merge-accesses", type=int, default=100_000)
    args = ap.parse_args(argv)
    if args.quick:
        args.ranks, args.reads, args.repeat, args.merge_accesses = [2, 4], 500, 3, 20_000
    with tempfile.TemporaryDirectory(prefix="ioadvisor-mpi-bench-") as tmp:
        work = Path(tmp)
        (work / "app.py").write_text(APP)
        with h5py.File(work / "data.h5", "w") as f:
            f.create_dataset("x", data=np.ones((400_000, 8), "f4"), chunks=(4096, 8))
        print(f"{args.reads} reads of (100 x 8) float32 per rank, median of {args.repeat}; machine shared")
        print("| ranks | job untraced s | job traced s | job extra s | rank-0 loop untraced ms "
              "| traced ms | extra us/read | merge s | accesses |")
        print("|---|---|---|---|---|---|---|---|---|")
        for p in args.ranks:
            runs = {False: [], True: []}
            for _ in range(args.repeat):
                for traced in (False, True):  # interleaved: load drift hits both alike
                    runs[traced].append(run_job(p, traced, work, args.reads))
            wall = {k: statistics.median(w for w, _ in v) for k, v in runs.items()}
            loop = {k: statistics.median(lp for _, lp in v) for k, v in runs.items()}
            t0 = time.perf_counter()
            merged = merge_rank_files(work / "t.jsonl", p) if p > 1 else None
            merge_s = time.perf_counter() - t0 if p > 1 else 0.0
            n_acc = p * args.reads
            print(f"| {p} | {wall[False]:.2f} | {wall[True]:.2f} | {wall[True] - wall[False]:+.2f} "
                  f"| {1e3 * loop[False]:.1f} | {1e3 * loop[True]:.1f} "
                  f"| {1e6 * (loop[True] - loop[False]) / args.reads:+.1f} | {merge_s:.3f} | {n_acc} |")
            if merged is not None:
                (work / "t.jsonl").unlink()
        merge_costs(work, 4, args.merge_accesses)


if __name__ == "__main__":
    main()
