"""Validate the parallel I/O model (``iomodel/parallel.py``) against real ``mpiexec -n P`` runs.

For each case (library, pattern) and each P, P ranks read or write disjoint
chunks of one (ROWS, 16) float32 array in full-width slabs
(``benchmarks/validation/mpi_replay_worker.py``), under ``ioadvisor run`` so that every
rank's accesses are traced and merged. The page cache is emptied (fsync +
POSIX_FADV_DONTNEED on every file of the array) before each read run. The
measured time is the slowest rank's I/O phase (barrier to close); the
prediction is ``iomodel.predict(merged_trace, current layout, profile, procs=P,
servers=c)`` (HDF5's MPI-IO request counting where ``iomodel.parallel.mpio_uncached``
says ranks bypass their chunk caches: the recorded driver and open mode). ``c``
(the contention factor's denominator: stripe count for HDF5, data servers for
Zarr) is fitted per library: the value among C_CANDIDATES whose predicted
scaling t(P)/t(1) is closest (median |log ratio|) to the measured one.

The parallel-HDF5 case (``driver='mpio'``, collective writes) needs an h5py
built against an MPI HDF5, which the project venv does not have: give its
venv with ``--pvenv DIR`` (built as in docs/parallel-validation.md); without
one that imports ``h5py`` with ``h5py.get_config().mpi``, the case is skipped
with a message.

    python -m benchmarks.validation.parallel_validation [--quick] [--procs 1 2 3 4] [--repeat 3]
        [--modes zarr-write zarr-read hdf5-read mpio-write mpio-write-ind mpio-read mpio-read-rw]
        [--profile PROFILE.json]
        [--pvenv PVENV] [--json OUT.json]
"""
from __future__ import annotations

import argparse
import json
import math
import os
import shutil
import statistics
import subprocess
import sys
import time
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from instrumentation.tracefile import load_trace
from iomodel.layout import Layout
from iomodel.predict import Workload, pick_dataset, predict
from iomodel.profile import load_profile
from iomodel.replay import evict

BIN = Path(sys.executable).parent
WORKER = Path(__file__).with_name("mpi_replay_worker.py")
COLS = 16
C_CANDIDATES = (1, 2, 3, 4, 6, 8, 16, 1 << 20)
"""Values of c tried by the fit; 1<<20 stands for 'no contention'."""
FIT_MODES = ("zarr-write", "zarr-read", "hdf5-read")
"""Cases c is fitted on: serial drivers, whose OS requests the model counts right (request table).
The parallel-HDF5 cases are reported, not fitted: the model cannot tell MPI-IO at P = 1 (no driver in
the trace), does not count collective requests (per run instead of per file region), and collective MPI
with more ranks than cores measures MPICH's busy polling (docs/parallel-validation.md)."""


@dataclass(frozen=True)
class Case:
    mode: str                 # worker mode: zarr-write | zarr-read | hdf5-read | mpio-write
    chunks: tuple[int, int]
    block: int                # rows per access

    @property
    def library(self) -> str:
        return "zarr" if self.mode.startswith("zarr") else "hdf5"

    @property
    def label(self) -> str:
        return f"{self.mode} chunks={self.chunks[0]}x{self.chunks[1]} slabs={self.block}"


CASES = (
    Case("zarr-write", (10000, COLS), 10000),
    Case("zarr-read", (10000, COLS), 10000),
    Case("hdf5-read", (10000, COLS), 5000),
    Case("hdf5-read", (10000, 4), 5000),
)
MPIO_CASES = (Case("mpio-write", (10000, COLS), 10000), Case("mpio-write", (10000, 4), 10000),
              Case("mpio-write-ind", (10000, 4), 10000), Case("mpio-read", (10000, 4), 5000),
              Case("mpio-read-rw", (10000, 4), 5000))


def build(case: Case, path: Path, rows: int) -> None:
    """The array the ranks start from (untraced): empty for zarr writes, filled for reads."""
    if path.exists():
        shutil.rmtree(path) if path.is_dir() else path.unlink()
    if case.mode.startswith("mpio-write") or case.mode == "mpio-create":
        return
    if case.library == "zarr":
        import zarr

        arr = zarr.create_array(str(path), shape=(rows, COLS), chunks=case.chunks, dtype="f4", compressors=None)
        if case.mode == "zarr-read":
            arr[:] = np.random.default_rng(0).random((rows, COLS), dtype=np.float32)
    else:
        import h5py

        with h5py.File(path, "w") as f:
            f.create_dataset("data", data=np.random.default_rng(0).random((rows, COLS), dtype=np.float32),
                             chunks=case.chunks)


@dataclass(frozen=True)
class Launcher:
    """How to start a traced job: mpiexec, the python running the worker, the ``ioadvisor`` command."""

    mpiexec: str
    python: str
    tracer: tuple[str, ...]
    pythonpath: str | None = None


PROJECT = Launcher(str(BIN / "mpiexec"), sys.executable, (str(BIN / "ioadvisor"),))


def mpio_launcher(pvenv: Path | None) -> tuple[Launcher | None, str]:
    """(launcher for a venv whose h5py has MPI, why not) for the parallel-HDF5 cases.

    That venv's mpi4py/h5py link the system MPICH, started by its ``mpiexec.mpich``; ``ioadvisor``
    is not installed there, so its CLI runs from this source tree (``PYTHONPATH``)."""
    if pvenv is None:
        return None, "no --pvenv given"
    py = pvenv / "bin" / "python"
    if not py.exists():
        return None, f"{py} does not exist"
    res = subprocess.run([str(py), "-c", "import h5py, mpi4py; print(h5py.get_config().mpi)"],
                         capture_output=True, text=True)
    if res.returncode or res.stdout.strip() != "True":
        return None, f"{py}: h5py without MPI ({(res.stderr.strip().splitlines() or [res.stdout.strip()])[-1]})"
    mpiexec = shutil.which("mpiexec.mpich") or str(pvenv / "bin" / "mpiexec")
    tracer = (str(py), "-c", "import sys; from advisor.cli import main; sys.exit(main())")
    return Launcher(mpiexec, str(py), tracer, str(Path(__file__).resolve().parents[2])), ""


def run_once(case: Case, procs: int, rows: int, work: Path, launcher: Launcher) -> tuple[dict, Path]:
    """Build, (evict), run the traced job; (the worker's per-rank numbers, merged trace path)."""
    path = work / ("array.zarr" if case.library == "zarr" else "array.h5")
    if "write" in case.mode or not path.exists():  # reads reuse the array; writes start fresh
        build(case, path, rows)
    if "read" in case.mode:
        evict(path)
    trace, out = work / f"T{procs}.jsonl", work / "out.json"
    for old in work.glob(f"T{procs}*.jsonl"):
        old.unlink()
    env = dict(os.environ)
    if launcher.pythonpath:
        env["PYTHONPATH"] = launcher.pythonpath
    cmd = [launcher.mpiexec, "-n", str(procs), *launcher.tracer, "run", "-o", str(trace), "--",
           launcher.python, str(WORKER), case.mode, str(path), str(rows), str(COLS), *map(str, case.chunks),
           str(case.block), str(out)]
    res = subprocess.run(cmd, capture_output=True, text=True, timeout=900, env=env, cwd=work)
    if res.returncode:
        raise RuntimeError(f"{' '.join(cmd)}\n{res.stderr[-3000:]}")
    return json.loads(out.read_text()), trace


def os_requests(variables: list) -> dict[str, float]:
    """Read/write requests and bytes the model expects from the OS, summed over ranks
    (compared with /proc/self/io: syscr, rchar, syscw, wchar)."""
    return {"syscr": sum(v.n_rdisk + v.n_cache + v.n_rindex for v in variables),
            "rchar": sum(v.s_rdisk + v.s_cache for v in variables),
            "syscw": sum(v.n_wdisk for v in variables), "wchar": sum(v.s_wdisk for v in variables)}


def predictions(trace_path: Path, profile, procs: int) -> dict:
    """Per candidate c: ``iomodel.predict`` of the merged trace; plus the OS requests the model counts."""
    trace = load_trace(trace_path)
    ds = pick_dataset(trace)
    layout = Layout.from_dataset(ds)
    work = Workload(ds, trace.accesses_of(ds.id), trace.extent(ds.id), procs)
    out = {"requests": os_requests(work.variables(layout, profile.page_cache_bytes))}
    for c in C_CANDIDATES:
        pred = predict(trace, layout, profile, procs=procs, servers=c)
        out[str(c)] = {"model": pred.seconds, "cf": pred.cf}
    return out


def scaling_errors(rows: list[dict], key: str = "model") -> dict[int, float]:
    """Per candidate c: median |log(predicted t(P)/t(1) / measured t(P)/t(1))| over the rows with P > 1."""
    out = {}
    for c in C_CANDIDATES:
        errs = [abs(math.log(r["pred_by_c"][str(c)][key] / r["pred1_by_c"][str(c)][key]
                             / (r["measured"] / r["measured1"]))) for r in rows if r["procs"] > 1]
        out[c] = statistics.median(errs) if errs else math.inf
    return out


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--quick", action="store_true", help="small array, P in 1 2 4, one repeat (~2 min)")
    ap.add_argument("--procs", type=int, nargs="+", default=None)
    ap.add_argument("--repeat", type=int, default=None)
    ap.add_argument("--modes", nargs="+",
                    default=["zarr-write", "zarr-read", "hdf5-read", "mpio-write", "mpio-write-ind", "mpio-read",
                             "mpio-read-rw"],
                    help="worker modes to run (default: all)")
    ap.add_argument("--rows", type=int, default=None, help="array rows (multiple of 10000 x lcm of procs)")
    ap.add_argument("--profile", default=None, help="I/O profile (default: this machine's, else the shipped one)")
    ap.add_argument("--pvenv", type=Path, default=None, help="venv with an MPI-enabled h5py (parallel HDF5 case)")
    ap.add_argument("--workdir", type=Path, default=Path(f"/tmp/ioadvisor-parallel-{os.getpid()}"))
    ap.add_argument("--json", type=Path, default=None, help="write every measurement and prediction here")
    ap.add_argument("--report", type=Path, default=None, metavar="JSON",
                    help="only print the tables of an earlier run's --json file")
    args = ap.parse_args(argv)
    if args.report:
        report(json.loads(args.report.read_text())["rows"])
        return 0
    procs = args.procs or ([1, 2, 4] if args.quick else [1, 2, 3, 4])
    repeat = args.repeat or (1 if args.quick else 3)
    rows = args.rows or (240_000 if args.quick else 960_000)
    if 1 not in procs:
        ap.error("--procs must include 1 (scaling is measured against one rank)")
    profile = load_profile(args.profile)
    print(f"profile: {args.profile or 'default'}; array ({rows}, {COLS}) float32 = {rows * COLS * 4 / 1e6:.0f} MB; "
          f"P in {procs}; {repeat} repeat(s); load average {os.getloadavg()[0]:.1f}", flush=True)

    cases = [(c, PROJECT) for c in CASES if c.mode in args.modes]
    if any(m.startswith("mpio") for m in args.modes):
        mpio, why = mpio_launcher(args.pvenv)
        if mpio is None:
            print(f"SKIP parallel HDF5 (driver='mpio') cases: they need an h5py built with MPI: {why}", flush=True)
        else:
            cases += [(c, mpio) for c in MPIO_CASES if c.mode in args.modes]
    args.workdir.mkdir(parents=True, exist_ok=True)
    rows_out = []
    try:
        for case, launcher in cases:
            work = args.workdir / case.label.replace(" ", "_").replace("=", "")
            work.mkdir(exist_ok=True)
            times: dict[int, list[float]] = {p: [] for p in procs}
            cpus: dict[int, list[float]] = {p: [] for p in procs}
            loads: list[float] = []
            traces: dict[int, Path] = {}
            real_io: dict[int, dict] = {}
            for _ in range(repeat):  # P interleaved within a repeat: load changes hit every P alike
                for p in procs:
                    t0 = time.perf_counter()
                    loads.append(os.getloadavg()[0])
                    res, traces[p] = run_once(case, p, rows, work, launcher)
                    real_io[p] = {k: sum(io[k] for io in res["io"]) for k in res["io"][0]}
                    times[p].append(max(res["seconds"]))
                    cpus[p].append(max(res["cpu_seconds"]))
                    print(f"  {case.label} P={p}: slowest rank {times[p][-1] * 1e3:.1f} ms, "
                          f"CPU {cpus[p][-1] * 1e3:.1f} ms (job {time.perf_counter() - t0:.1f} s, "
                          f"load {loads[-1]:.1f})", flush=True)
            baseline: dict[int, dict] = {}
            if case.mode.startswith("mpio-write"):
                # the same job without data writes: its calls (HDF5 metadata, the trace) are not the model's
                (work / "create-only").mkdir(exist_ok=True)
                for p in procs:
                    res, _ = run_once(Case("mpio-create", case.chunks, case.block), p, rows, work / "create-only",
                                      launcher)
                    baseline[p] = {k: sum(io[k] for io in res["io"]) for k in res["io"][0]}
            preds = {p: predictions(traces[p], profile, p) for p in traces}
            m1 = statistics.median(times[1])
            for p in traces:
                rows_out.append({"case": case.label, "library": case.library, "mode": case.mode, "procs": p,
                                 "measured": statistics.median(times[p]), "runs": times[p], "measured1": m1,
                                 "cpu": statistics.median(cpus[p]), "cpu1": statistics.median(cpus[1]),
                                 "load": statistics.median(loads), "pred_by_c": preds[p], "pred1_by_c": preds[1],
                                 "io": real_io[p], "io_baseline": baseline.get(p)})
    finally:
        shutil.rmtree(args.workdir, ignore_errors=True)

    if args.json:
        args.json.write_text(json.dumps({"rows": rows_out}, indent=1))
    report(rows_out)
    return 0


def report(rows_out: list[dict]) -> None:
    """Fit c per library on the serial-driver cases (FIT_MODES); print the time and request tables."""
    name = lambda c: "inf" if c == C_CANDIDATES[-1] else str(c)  # noqa: E731
    c_fit = {}
    groups = {lib: [r for r in rows_out if r["library"] == lib and r["mode"] in FIT_MODES]
              for lib in sorted({r["library"] for r in rows_out})}
    groups["both (one machine)"] = [r for r in rows_out if r["mode"] in FIT_MODES]
    for group, fit_rows in groups.items():
        if not fit_rows:
            continue
        errs = scaling_errors(fit_rows)
        best = min(errs, key=errs.get)
        c_fit[group] = best
        print(f"\nc fitted on {group} ({', '.join(sorted({r['mode'] for r in fit_rows}))}): {name(best)}; "
              "median |log(predicted/measured t(P)/t(1))| by c: "
              + ", ".join(f"{name(c)}: {e:.2f}" for c, e in errs.items()))
    c_used = c_fit.get("both (one machine)", 1)
    print(f"\ntables use c = {name(c_used)} for both libraries")
    print("\n| case | P | measured ms | predicted ms | pred/meas | measured t(P)/t(1) "
          "| predicted t(P)/t(1) | cf | CPU ms | CPU t(P)/t(1) | load |")
    print("|---|---|---|---|---|---|---|---|---|---|---|")
    for r in rows_out:
        c = str(c_used)
        pr, p1 = r["pred_by_c"][c], r["pred1_by_c"][c]
        print(f"| {r['case']} | {r['procs']} | {r['measured'] * 1e3:.1f} | {pr['model'] * 1e3:.1f} | "
              f"{pr['model'] / r['measured']:.2f} | {r['measured'] / r['measured1']:.2f} | "
              f"{pr['model'] / p1['model']:.2f} | {pr['cf']:.2f} | {r['cpu'] * 1e3:.1f} | {r['cpu'] / r['cpu1']:.2f} | "
              f"{r['load']:.1f} |")
    print("\nOS requests summed over ranks, largest P (real: /proc/self/io of the I/O phase, which also holds "
          "the rank's own trace writes)")
    print("\n| case | P | read calls real / model | read bytes real / model | "
          "write calls real / model | write bytes real / model | data write calls: real - create-only job / model |")
    print("|---|---|---|---|---|---|---|")
    checks = []
    for r in rows_out:
        io, m, base = r["io"], r["pred_by_c"]["requests"], r.get("io_baseline")
        data = "-"
        if base is not None:
            real = io["syscw"] - base["syscw"]
            data = f"{real} / {m['syscw']:.0f}"
            if r["mode"] == "mpio-write":
                checks.append((r, real, m["syscw"]))
        if r["procs"] != max(x["procs"] for x in rows_out if x["case"] == r["case"]):
            continue
        print(f"| {r['case']} | {r['procs']} | {io['syscr']} / {m['syscr']:.0f} | "
              f"{io['rchar']} / {m['rchar']:.0f} | {io['syscw']} / {m['syscw']:.0f} | "
              f"{io['wchar']} / {m['wchar']:.0f} | {data} |")
    if checks:
        print("\ncollective mpio writes, data write calls (real = job minus the same job creating the file only):")
        for r, real, model in checks:
            err = abs(model - real) / max(real, 1)
            print(f"  {r['case']} P={r['procs']}: real {real}, model {model:.0f}, "
                  f"{err:.0%} off ({'within' if err <= 0.10 else 'outside'} the 10% target)")


if __name__ == "__main__":
    sys.exit(main())
