"""Scale: trace, store, show and advise runs of 10 thousand to 10 million accesses (docs/scale.md).

Every trace comes from tracing a real program with ``ioadvisor run`` (never from writing records):

- ``loader``: a training-loader pattern, one ``x[i]`` per sample at random rows of a (200000, 64)
  float32 dataset with (4096, 64) chunks (issue 9's example);
- ``scan``: a regular strided scan, ``x[(3 * i) % rows]`` on a (1000000, 16) float32 dataset with
  (65536, 16) chunks (wrapping around every 333,334 reads);
- ``mpi``: ``mpiexec -n 8``, each rank reading every 8th row from its own offset (a per-rank strided scan),
  merged by rank 0.

Per trace: bytes per access on disk; load time (``load_trace`` three times in a fresh process, after importing
the reader (pyarrow; timed apart): the first load and the best of the three);
``ioadvisor trace show`` wall time; ``ioadvisor advise`` wall time and peak RSS (``/usr/bin/time -f %M``)
with ``--jobs 1`` and ``--jobs 2``; the traced run's wall time against the same program untraced
(per-call overhead, loader and scan). The realistic-loop overhead is ``benchmarks/speed/tracing_overhead.py``
(``--overhead`` runs it).

    python -m benchmarks.speed.scale [--sizes 10000 100000 1000000 10000000] [--patterns loader scan mpi]
                               [--workdir DIR] [--overhead] [--json out.json]
"""
from __future__ import annotations

import argparse
import json
import os
import shutil
import subprocess
import sys
import textwrap
import time
from pathlib import Path

BIN = Path(sys.executable).parent
REPO = Path(__file__).resolve().parents[2]

PROGRAMS = {
    "loader": """
        import sys, numpy as np, h5py
        data, n = sys.argv[1], int(sys.argv[2])
        with h5py.File(data, "r") as f:
            x = f["x"]
            s = 0.0
            for i in np.random.default_rng(1).integers(0, x.shape[0], n).tolist():
                s += float(x[i][0])
        print(s)
    """,
    "scan": """
        import sys, h5py
        data, n = sys.argv[1], int(sys.argv[2])
        with h5py.File(data, "r") as f:
            x = f["x"]
            rows = x.shape[0]
            s = 0.0
            for i in range(n):
                s += float(x[(3 * i) % rows][0])
        print(s)
    """,
    "mpi": """
        import sys, h5py
        from mpi4py import MPI
        data, n = sys.argv[1], int(sys.argv[2])
        rank, size = MPI.COMM_WORLD.Get_rank(), MPI.COMM_WORLD.Get_size()
        with h5py.File(data, "r") as f:
            x = f["x"]
            rows = x.shape[0]
            s = 0.0
            for i in range(n // size):
                s += float(x[(rank + size * i) % rows][0])
        MPI.COMM_WORLD.Barrier()
        print(s)
    """,
}
DATA = {"loader": ((200_000, 64), (4096, 64)), "scan": ((1_000_000, 16), (65536, 16)),
        "mpi": ((1_000_000, 16), (65536, 16))}
MPI_PROCS = 8


def _env() -> dict:
    return {**os.environ, "PYTHONPATH": os.pathsep.join([str(REPO), os.environ.get("PYTHONPATH", "")])}


def _data(workdir: Path, pattern: str) -> Path:
    import h5py
    import numpy as np

    shape, chunks = DATA[pattern]
    path = workdir / f"{pattern}.h5"
    if not path.exists():
        with h5py.File(path, "w") as f:
            f.create_dataset("x", data=np.random.default_rng(0).random(shape, dtype=np.float32), chunks=chunks)
    return path


def _timed(cmd: list[str], **kw) -> tuple[float, int, str]:
    """(wall seconds, peak RSS in KiB, stdout) of a command run under /usr/bin/time."""
    t = time.perf_counter()
    res = subprocess.run(["/usr/bin/time", "-f", "%M"] + cmd, capture_output=True, text=True, env=_env(), **kw)
    wall = time.perf_counter() - t
    if res.returncode:
        raise RuntimeError(f"{' '.join(cmd)} failed:\n{res.stderr[-2000:]}")
    rss = int(res.stderr.strip().splitlines()[-1])
    return wall, rss, res.stdout


def trace(workdir: Path, pattern: str, n: int, untraced: bool) -> dict:
    prog = workdir / f"{pattern}.py"
    prog.write_text(textwrap.dedent(PROGRAMS[pattern]))
    data = _data(workdir, pattern)
    out = workdir / f"{pattern}-{n}.parquet"
    cmd = [str(BIN / "ioadvisor"), "run", "--force", "-o", str(out), "--", sys.executable, str(prog), str(data), str(n)]
    plain = [sys.executable, str(prog), str(data), str(n)]
    if pattern == "mpi":
        cmd = [str(BIN / "mpiexec"), "-n", str(MPI_PROCS)] + cmd
        plain = [str(BIN / "mpiexec"), "-n", str(MPI_PROCS)] + plain
    row = {"pattern": pattern, "n": n}
    row["traced_s"] = _timed(cmd, cwd=workdir)[0]
    if untraced:
        row["untraced_s"] = _timed(plain, cwd=workdir)[0]
        row["overhead_us_per_call"] = (row["traced_s"] - row["untraced_s"]) / n * 1e6 * (
            MPI_PROCS / os.cpu_count() if pattern == "mpi" else 1)
    row["trace"] = str(out)
    return row


LOAD = """
import sys, time
t = time.perf_counter()
from instrumentation.tracefile import load_trace
import instrumentation.columnar  # the reader's modules and pyarrow: paid once per process, timed apart
imports = time.perf_counter() - t
loads = []
for _ in range(3):
    t = time.perf_counter(); tr = load_trace(sys.argv[1]); loads.append(time.perf_counter() - t)
print(imports, *loads, tr.n_access, tr.columns.rows)
"""


def measure(row: dict, advise: bool, jobs=(1, 2)) -> dict:
    path = Path(row["trace"])
    n = row["n"]
    row["bytes_per_access"] = sum(f.stat().st_size for f in path.iterdir()) / n
    _, _, out = _timed([sys.executable, "-c", LOAD, str(path)])
    imports, *loads, n_access, rows = out.split()
    loads = [float(x) for x in loads]
    row.update(load_import_s=float(imports), load_first_s=loads[0], load_s=min(loads), n_access=int(n_access),
               stored_rows=int(rows), load_maccesses_per_s=int(n_access) / min(loads) / 1e6,
               load_first_maccesses_per_s=int(n_access) / loads[0] / 1e6)
    row["show_s"], row["show_rss_kb"], _ = _timed([str(BIN / "ioadvisor"), "trace", "show", str(path)])
    if advise:
        for j in jobs:
            wall, rss, out = _timed([str(BIN / "ioadvisor"), "advise", "--jobs", str(j), "--json", str(path)])
            row[f"advise{j}_s"], row[f"advise{j}_rss_kb"] = wall, rss
            rec = json.loads(out)["datasets"][0]["recommendation"]
            row[f"advise{j}_recommendation"] = {k: rec[k] for k in ("library", "chunks", "shards", "cache_bytes",
                                                                       "compressor", "error_bound")}
        if {1, 2} <= set(jobs):
            row["advise_speedup_2v1"] = row["advise1_s"] / row["advise2_s"]
    return row


def table(rows: list[dict]) -> str:
    lines = ["| pattern | accesses | stored rows | traced s (untraced s) | overhead µs/call | bytes/access "
             "| load s, first / best of 3 (M acc/s) | trace show s | advise s, 2 jobs (peak RSS MB) "
             "| advise s, 1 job (peak RSS MB) | speed-up 2 v 1 |",
             "|---|---|---|---|---|---|---|---|---|---|---|"]
    for r in rows:
        unt = f" ({r['untraced_s']:.1f})" if "untraced_s" in r else ""
        ovh = f"{r['overhead_us_per_call']:.1f}" if "overhead_us_per_call" in r else "-"
        adv2 = f"{r['advise2_s']:.1f} ({r['advise2_rss_kb'] / 1024:.0f})" if "advise2_s" in r else "-"
        adv1 = f"{r['advise1_s']:.1f} ({r['advise1_rss_kb'] / 1024:.0f})" if "advise1_s" in r else "-"
        sp = f"{r['advise_speedup_2v1']:.2f}" if "advise_speedup_2v1" in r else "-"
        lines.append(f"| {r['pattern']} | {r['n']:,} | {r['stored_rows']:,} | {r['traced_s']:.1f}{unt} | {ovh} "
                     f"| {r['bytes_per_access']:.2f} | {r['load_first_s']:.4f} / {r['load_s']:.4f} "
                     f"({r['load_first_maccesses_per_s']:.1f} / {r['load_maccesses_per_s']:.1f}) "
                     f"| {r['show_s']:.2f} | {adv2} | {adv1} | {sp} |")
    return "\n".join(lines)


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--sizes", type=int, nargs="+", default=[10_000, 100_000, 1_000_000, 10_000_000])
    ap.add_argument("--patterns", nargs="+", default=["loader", "scan", "mpi"], choices=sorted(PROGRAMS))
    ap.add_argument("--workdir", type=Path, default=Path.home() / ".cache" / "ioadvisor" / "scale")
    ap.add_argument("--untraced-max", type=int, default=1_000_000,
                    help="run the program untraced too (per-call overhead) up to this many accesses")
    ap.add_argument("--reuse", action="store_true", help="measure traces already in --workdir (no tracing)")
    ap.add_argument("--no-advise", action="store_true")
    ap.add_argument("--advise-jobs", type=int, nargs="+", default=[1, 2], choices=(1, 2),
                    help="advise with these --jobs (a 10M advise per exclusive hold: one at a time)")
    ap.add_argument("--trace-only", action="store_true",
                    help="only make the traces (under the shared CPU lock), to measure later with --reuse")
    ap.add_argument("--overhead", action="store_true", help="also run benchmarks/speed/tracing_overhead.py")
    ap.add_argument("--json", type=Path, help="append rows (one JSON object per line) here")
    args = ap.parse_args(argv)
    args.workdir.mkdir(parents=True, exist_ok=True)
    if shutil.which("time", path="/usr/bin") is None:
        raise SystemExit("needs /usr/bin/time (Debian package 'time')")
    print(f"# {time.strftime('%Y-%m-%d %H:%M:%S %Z')}, load average {os.getloadavg()[0]:.1f}, "
          f"{os.cpu_count()} cores", flush=True)
    rows = []
    for n in args.sizes:
        for pattern in args.patterns:
            if args.reuse:
                row = {"pattern": pattern, "n": n, "trace": str(args.workdir / f"{pattern}-{n}.parquet"),
                       "traced_s": float("nan")}
                if not Path(row["trace"]).is_dir():
                    print(f"# no trace {row['trace']}: skipped", flush=True)
                    continue
            else:
                row = trace(args.workdir, pattern, n, untraced=n <= args.untraced_max)
                if args.trace_only:
                    print(json.dumps(row), flush=True)
                    continue
            row = measure(row, not args.no_advise, args.advise_jobs)
            row["load_average"] = os.getloadavg()[0]
            rows.append(row)
            print(json.dumps(row), flush=True)
            if args.json:
                with open(args.json, "a") as fh:
                    fh.write(json.dumps(row) + "\n")
    if rows:
        print(table(rows))
    if args.overhead:
        subprocess.run([sys.executable, str(REPO / "benchmarks" / "tracing_overhead.py")], env=_env(), check=True)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
