"""Make a realistic Darshan archive (10,000+ distinct logs) for ``ioadvisor triage`` and benchmarks/speed/triage.py.

    .venv/bin/python -m benchmarks.speed.triage_archive [--out DIR] [--runs 10000] [--mpi 200] [--python 60]

Real programs run under darshan-runtime built from its source release by benchmarks/helpers/darshan_build.sh:
- benchmarks/c/iogen.c (built with ``h5cc -shlib``): POSIX sequential/random, STDIO, metadata-heavy and HDF5
  (chunked row-by-row, contiguous) patterns with varied request counts, sizes and file counts; run under the
  serial build with the HDF5 module (``$CACHE/darshan``) and, where built, the MPI build without it
  (``DARSHAN_PREFIX=$CACHE/darshan-mpi-noh5 DARSHAN_MPI=1 DARSHAN_HDF5=0 benchmarks/helpers/darshan_build.sh``);
- benchmarks/c/mpiogen.c (Debian's mpicc) under ``mpiexec.mpich -n P`` with the MPI build: shared-file MPI-IO,
  independent or collective, per-rank POSIX files, rank skew;
- h5py and netCDF4 programs (the venv's python) under the MPI build (POSIX/STDIO: the wheels' private libhdf5
  copies are not Darshan's);
plus the real corpus (``$CACHE/darshan-logs`` and pydarshan's example logs). Logs land in Darshan's
YEAR/MONTH/DAY layout under DIR (default ``$CACHE/triage-archive``; never committed). Every run is a distinct
log (its own job id and times). ``manifest.jsonl`` records each run's program and arguments by job id.
Prints how long generation took. IOR is not built here.
"""
from __future__ import annotations

import argparse
import glob
import json
import math
import os
import random
import shutil
import subprocess
import sys
import tempfile
import threading
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

HERE = Path(__file__).resolve().parents[1]
CACHE = Path(os.environ.get("IOADVISOR_CACHE", Path.home() / ".cache" / "ioadvisor"))
SERIAL_H5 = CACHE / "darshan"
MPI_NOH5 = CACHE / "darshan-mpi-noh5"
PATTERNS = {"seqwrite": 3, "randread": 3, "stdio": 2, "meta": 1, "h5rows": 3, "h5block": 2}
"""iogen patterns and their weights in the archive."""
RUN_TIMEOUT = 120
"""Seconds one run may take (subprocess.run kills it after; its log, if any, stays)."""
SIZES = (64, 256, 1000, 4096, 10000, 65536, 262144, 1 << 20)

PY_H5 = """
import sys, numpy as np, h5py
n, chunk, mode = int(sys.argv[2]), int(sys.argv[3]), sys.argv[4]
with h5py.File(sys.argv[1], "w") as f:
    d = f.create_dataset("x", (n, 64), "f4", chunks=(min(chunk, n), 64))
    for i in range(0, n, 16):
        d[i:i + 16] = np.random.rand(min(16, n - i), 64)
with h5py.File(sys.argv[1], "r") as f:
    d = f["x"]
    for i in np.random.randint(0, n, 200 if mode == "random" else 20):
        d[i, :8]
"""
PY_NC = """
import sys, numpy as np, netCDF4
n, t = int(sys.argv[2]), int(sys.argv[3])
with netCDF4.Dataset(sys.argv[1], "w") as ds:
    ds.createDimension("time", None); ds.createDimension("x", n)
    v = ds.createVariable("tas", "f4", ("time", "x"))
    for k in range(t):
        v[k, :] = np.random.rand(n)
with netCDF4.Dataset(sys.argv[1]) as ds:
    ds["tas"][:, : n // 2].mean()
"""


def build(work: Path) -> dict[str, Path]:
    exe = {}
    work.mkdir(parents=True, exist_ok=True)
    exe["iogen"] = work / "iogen"
    subprocess.run(["h5cc", "-shlib", "-O1", "-o", str(exe["iogen"]), str(HERE / "c" / "iogen.c")], check=True)
    if (MPI_NOH5 / "lib" / "libdarshan.so").exists() and shutil.which("mpicc"):
        exe["mpiogen"] = work / "mpiogen"
        subprocess.run(["mpicc", "-O1", "-o", str(exe["mpiogen"]), str(HERE / "c" / "mpiogen.c")], check=True)
    for name, text in (("h5prog.py", PY_H5), ("ncprog.py", PY_NC)):
        (work / name).write_text(text)
    return exe


def day_dir(out: Path) -> Path:
    t = time.gmtime()
    d = out / str(t.tm_year) / str(t.tm_mon) / str(t.tm_mday)  # darshan-mk-log-dirs.pl's layout
    d.mkdir(parents=True, exist_ok=True)
    return d


def c_run(rng: random.Random) -> list[str]:
    pattern = rng.choices(list(PATTERNS), weights=list(PATTERNS.values()))[0]
    size = rng.choice(SIZES)
    count = int(math.exp(rng.uniform(math.log(20), math.log(6000))))
    count = max(2, min(count, (8 << 20) // size))  # at most 8 MB moved: tens of ms a run
    files = rng.choice((1, 1, 2, 3, 5))
    if pattern == "meta":
        count, files = max(2, count // 20), rng.choice((4, 8, 16))
    if pattern.startswith("h5"):
        size = min(size, 4096)
    return [pattern, str(rng.randrange(1 << 30)), str(count), str(size), str(files)]


CORPUS_SIZE = 110
"""About how many real logs copy_corpus adds (84 of darshan-logs, pydarshan's examples): the C runs fill up."""


def copy_corpus(corpus: Path) -> list[str]:
    import darshan

    corpus.mkdir(exist_ok=True)
    real = sorted(glob.glob(str(CACHE / "darshan-logs" / "*.darshan"))) + sorted(
        glob.glob(os.path.join(os.path.dirname(darshan.__file__), "examples", "example_logs", "*.darshan")))
    for p in real:
        shutil.copy2(p, corpus / os.path.basename(p))
    return real


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--out", default=str(CACHE / "triage-archive"))
    ap.add_argument("--runs", type=int, default=10000, help="logs in all (C runs fill up what the rest leaves)")
    ap.add_argument("--mpi", type=int, default=200, help="MPI runs (2-8 ranks)")
    ap.add_argument("--python", type=int, default=60, help="h5py/netCDF4 runs")
    ap.add_argument("--jobs", type=int, default=2, help="runs at once")
    ap.add_argument("--seed", type=int, default=37)
    args = ap.parse_args()
    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    t0 = time.perf_counter()
    exe = build(CACHE / "triage-bin")
    rng = random.Random(args.seed)
    have_mpi = "mpiogen" in exe
    n_mpi = args.mpi if have_mpi else 0
    n_c = max(args.runs - CORPUS_SIZE - n_mpi - args.python, 0)
    jobs = []
    for _ in range(n_c):
        variant = SERIAL_H5 if not have_mpi or rng.random() < 0.7 else MPI_NOH5
        jobs.append(("c", variant, [str(exe["iogen"]), "{dir}"] + c_run(rng), 1))
    for _ in range(n_mpi):
        ranks = rng.choice((2, 3, 4, 6, 8))
        pattern = rng.choice(("indep", "coll", "posix"))
        size = rng.choice((512, 4096, 65536, 1 << 20))
        count = max(2, min(int(math.exp(rng.uniform(math.log(10), math.log(1500)))), (4 << 20) // size))
        jobs.append(("mpi", MPI_NOH5, [str(exe["mpiogen"]), "{dir}", pattern, str(rng.randrange(1 << 30)),
                                       str(count), str(size), str(rng.choice((1, 1, 2, 4)))], ranks))
    for _ in range(args.python):
        variant = MPI_NOH5 if have_mpi else SERIAL_H5
        if rng.random() < 0.5:
            argv = [sys.executable, str(CACHE / "triage-bin" / "h5prog.py"), "{dir}/d.h5",
                    str(rng.choice((2000, 8000, 20000))), str(rng.choice((16, 256, 4096))),
                    rng.choice(("random", "seq"))]
        else:
            argv = [sys.executable, str(CACHE / "triage-bin" / "ncprog.py"), "{dir}/d.nc",
                    str(rng.choice((1000, 10000, 50000))), str(rng.choice((10, 50, 200)))]
        jobs.append(("python", variant, argv, 1))
    rng.shuffle(jobs)
    dest = day_dir(out)
    manifest = open(out / "manifest.jsonl", "a")
    lock = threading.Lock()
    failed = [0]
    took: list[float] = []

    def one(job) -> None:
        kind, variant, argv, ranks = job
        with tempfile.TemporaryDirectory(prefix="triage-run-") as tmp:
            argv = [a.replace("{dir}", tmp) for a in argv]
            env = dict(os.environ, LD_PRELOAD=str(variant / "lib" / "libdarshan.so"), DARSHAN_ENABLE_NONMPI="1",
                       DARSHAN_LOGPATH=str(dest))
            if kind == "mpi":
                argv = ["mpiexec.mpich", "-n", str(ranks)] + argv
                env.pop("DARSHAN_ENABLE_NONMPI")
                env["LD_PRELOAD"] = ""
                argv = argv[:3] + ["-genv", "LD_PRELOAD", str(variant / "lib" / "libdarshan.so")] + argv[3:]
            t = time.perf_counter()
            try:
                p = subprocess.run(argv, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE,
                                   timeout=RUN_TIMEOUT)
            except subprocess.TimeoutExpired:  # e.g. 8 MPI ranks busy-polling on 2 loaded cores: one run lost
                p = subprocess.CompletedProcess(argv, -9, b"", b"timed out")
            dt = time.perf_counter() - t
        with lock:
            took.append(dt)
            if p.returncode:
                failed[0] += 1
                if failed[0] <= 5:
                    print(f"run failed ({p.returncode}): {' '.join(argv)[:200]}: {p.stderr.decode()[-200:]}",
                          file=sys.stderr)
            manifest.write(json.dumps({"kind": kind, "darshan": variant.name, "ranks": ranks, "argv": argv[-6:],
                                       "seconds": round(dt, 4)}) + "\n")
            if len(took) % 1000 == 0:
                print(f"  {len(took):,} runs, {time.perf_counter() - t0:.0f} s", flush=True)

    with ThreadPoolExecutor(args.jobs) as pool:
        list(pool.map(one, jobs))
    manifest.close()
    real = copy_corpus(out / "corpus")
    n_logs = len(glob.glob(str(out / "**" / "*.darshan"), recursive=True))
    took.sort()
    print(f"archive {out}: {n_logs:,} logs ({len(real)} real, {n_c:,} C runs, {n_mpi} MPI runs, {args.python} "
          f"python runs; {failed[0]} runs failed); generation took {time.perf_counter() - t0:.0f} s "
          f"(median run {took[len(took) // 2] * 1000 if took else 0:.0f} ms, {args.jobs} at once)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
