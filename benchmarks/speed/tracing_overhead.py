"""Cost of ``advisor.trace`` on the traced program.

1. Per intercepted call: ``ds[0:1, 0:1]`` (the same index every call) and ``ds[i:i+1, j:j+1]``
   (a new one every call) on a small h5py dataset, ``f["x"][i]`` on it (a new Dataset object, so a new
   handle, per access: h5netcdf's way), and
   ``z[0:1, 0:1]`` on a small zarr array, traced minus untraced, per call.
2. Realistic loops, traced vs untraced: 10,000 reads of 1000x8 boxes (random rows, columns a
   multiple of 8) from a (2M x 64) float32 dataset with (65536, 8) chunks (512 MiB, built once in
   ~/.cache/ioadvisor/bench/); and a camera's append (regret's w07): 4,000 times resize, then
   ``ds[i] = frame`` of a (64, 64) float32 frame, into h5py's automatic chunks.

3. Below Python (the libhdf5 interposer, instrumentation/interpose.py), through ``ioadvisor run``
   as a user runs it, vs the same command without it: a C program linked with Debian's libhdf5
   (benchmarks/c/h5loop.c, built here with ``cc``) doing one-element reads (the interposer's
   cost per H5Dread) and the realistic loop above; a netCDF4-python loop of one-element reads and
   of (1, 40, 80) boxes. The programs time their own loops (wall and CPU of the whole process,
   so the tracer's conversion thread counts for Python); ``ioadvisor run``'s start-up and its
   final conversion of a C program's records are reported apart (whole-command CPU).

4. Fixed cost and whole process (``--fixed-only``): the wall time of the whole command, plain, through
   ``ioadvisor run`` and, where benchmarks/helpers/darshan_build.sh built it, with Darshan 3.5 (HDF5 module) preloaded,
   in interleaved rounds: the C program reading nothing (N = 0) and its 20,000 box reads,
   ``python -c "import h5py"``, and a program starting 8 multiprocessing-spawn children (and none: the
   difference per child is what each followed child costs). Section 3's rows give the whole-process wall of
   their loops too. The Darshan column is skipped, saying so, when Darshan is not built.

Traced and untraced repetitions are interleaved in pairs (benchmarks/helpers/paired.py): the realistic loop and
the cases below Python take pairs until the median slowdown's bootstrap 95% interval is within
``--spread`` points (default 1) of it, or ``--max-pairs`` / ``--budget`` seconds per case are reached.
Reported: the median of the per-pair ratios with that interval, and the ratio of the fastest repetitions
(min-min: other processes only ever add time); both as CPU time of the whole process (nanosecond clocks:
``time.process_time`` / ``CLOCK_PROCESS_CPUTIME_ID``, which include the tracer's flusher thread) and as
wall time. The per-call cases (benchmarks/helpers/cadence.py) give what a traced program pays per call: the
hook's work in the loop (median of per-pair differences) plus the flusher thread's takes and batches at the
tracer's own cadence (its CPU over ``--writing-seconds`` of calls, per call); the fixed costs (entering the
tracer, a dataset's first access, a forced ``Tracer.flush()`` of a repetition's records, the exit) apart; and,
from the same repetitions, the earlier figure: the first access, the calls and a forced ``Tracer.flush()`` per
repetition timed together.

    python -m benchmarks.speed.tracing_overhead [--quick] [--format parquet|jsonl] [--json out.json]
                                          [--below-only | --python-only | --per-call-only | --fixed-only]
                                          [--rounds N]
                                          [--reps N] [--max-pairs N] [--spread POINTS] [--budget SECONDS]
                                          [--cases c-tiny,c-boxes,nc-tiny,nc-boxes] [--longer K]
                                          [--writing-seconds S]
"""
from __future__ import annotations

import argparse
import itertools
import json
import os
import resource
import shutil
import statistics
import subprocess
import sys
import tempfile
import textwrap
import time
from pathlib import Path

import h5py
import numpy as np
import zarr

import advisor
from instrumentation import interpose

from benchmarks.helpers import cadence
from benchmarks.helpers.paired import median_interval, paired, summary

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


def realistic(rows: int, n_reads: int, pairs: dict, tracer_path: Path):
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
        plain, traced = paired(lambda t: timed(loop, tracer_path if t else None), lambda p, t: (t[0] / p[0] - 1) * 100,
                               **pairs)
    return _loop_row(f"{n_reads} reads of 1000x8 from ({rows} x 64) f4, chunks (65536, 8)", plain, traced)


def _loop_row(case: str, plain, traced) -> dict:
    """A realistic loop's row: pairs, and the CPU and wall slowdowns (median, interval, min-min)."""
    row = {"case": case, "pairs": len(plain)}
    for k, label in ((0, "cpu"), (1, "wall")):
        row.update(summary(plain, traced, lambda x: x[k], label))
    return row


def append_loop(frames: int, pairs: dict, tracer_path: Path, workdir: Path):
    """A camera's loop (regret's w07): the file created, then resize + ``ds[i] = frame`` per frame."""
    frame = np.random.default_rng(2).random((64, 64), dtype="f4")

    def loop():
        with h5py.File(workdir / "append.h5", "w") as f:
            ds = f.create_dataset("frames", shape=(0, 64, 64), maxshape=(None, 64, 64), dtype="f4", chunks=True)
            for i in range(frames):
                ds.resize(i + 1, axis=0)
                ds[i] = frame

    loop()  # the first file of the process
    plain, traced = paired(lambda t: timed(loop, tracer_path if t else None), lambda p, t: (t[0] / p[0] - 1) * 100,
                           **pairs)
    return _loop_row(f"{frames} x (resize + ds[i] = frame), (64, 64) f4 frames, chunks=True", plain, traced)


HERE = Path(__file__).resolve().parents[1]
HDF5_SERIAL = ("/usr/include/hdf5/serial", "/usr/lib/x86_64-linux-gnu/hdf5/serial")
NETCDF4_LOOP = textwrap.dedent("""
    import sys, time
    import netCDF4, numpy as np
    path, mode, n = sys.argv[1], sys.argv[2], int(sys.argv[3])
    rng = np.random.default_rng(1)
    with netCDF4.Dataset(path) as nc:
        v = nc["temp"]
        nt = v.shape[0]
        if mode == "tiny":
            index = [(int(t), 3, 5) for t in rng.integers(0, nt, n)]
        else:
            index = [(int(t), slice(int(y), int(y) + 40), slice(int(x), int(x) + 80))
                     for t, y, x in zip(rng.integers(0, nt, n), rng.integers(0, 50, n), rng.integers(0, 100, n))]
        for i in index[:100]:
            v[i]
        w, c = time.perf_counter(), time.process_time()
        for i in index:
            v[i]
        print(time.perf_counter() - w, time.process_time() - c)
""")


def _command_env() -> dict:
    # PYTHONDONTWRITEBYTECODE off: every run would compile what it imports, a cost no installed copy has
    env = {k: v for k, v in os.environ.items()
           if not k.startswith(("PMI_", "OMPI_", "PMIX_")) and k != "PYTHONDONTWRITEBYTECODE"}
    env["PYTHONPATH"] = os.pathsep.join(filter(None, [str(HERE.parent), os.environ.get("PYTHONPATH")]))
    return env


def _run(cmd, traced: bool, trace_path: Path):
    """(loop wall, loop cpu, whole command cpu, whole command wall) of ``cmd``, through ``ioadvisor run`` when
    traced."""
    if traced:
        cmd = [sys.executable, "-m", "advisor", "run", "--force", "-o", str(trace_path), "--", *cmd]
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    w = time.perf_counter()
    out = subprocess.run(cmd, capture_output=True, text=True, check=True, env=_command_env()).stdout
    w = time.perf_counter() - w
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    wall, cpu = map(float, out.split()[-2:])
    return wall, cpu, (after.ru_utime + after.ru_stime) - (before.ru_utime + before.ru_stime), w


def below_python(name: str, cmd, n_calls: int, pairs: dict, trace_path: Path) -> dict:
    """The same program untraced and through ``ioadvisor run`` (interposer preloaded), in interleaved pairs
    until the loop's CPU slowdown is known to within the target spread."""
    plain, traced = paired(lambda t: _run(cmd, t, trace_path), lambda p, t: (t[1] / p[1] - 1) * 100, **pairs)
    row = {"case": name, "calls": n_calls, "pairs": len(plain)}
    for k, label in ((0, "wall"), (1, "cpu")):
        p = [x[k] for x in plain]
        t = [x[k] for x in traced]
        row[f"{label}_untraced_us"] = statistics.median(p) / n_calls * 1e6
        row[f"{label}_added_us"] = statistics.median(b - a for a, b in zip(p, t)) / n_calls * 1e6
        row.update(summary(plain, traced, lambda x: x[k], label))
    row["command_cpu_untraced_s"] = statistics.median(x[2] for x in plain)
    row["command_cpu_traced_s"] = statistics.median(x[2] for x in traced)
    row.update(summary(plain, traced, lambda x: x[3], "process_wall"))  # the whole command: start-up and exit too
    return row


BELOW_CASES = ("c-tiny", "c-boxes", "nc-tiny", "nc-boxes")


def h5loop(tmp: Path, quick: bool) -> tuple[Path, Path, int] | None:
    """benchmarks/c/h5loop.c built against Debian's libhdf5 (``apt-get install -y libhdf5-dev``) into ``tmp``,
    and its (rows x 64) dataset (built once in CACHE): (program, data, rows); None without cc or libhdf5-dev."""
    if not (shutil.which("cc") and Path(HDF5_SERIAL[0], "hdf5.h").exists()):
        return None
    exe = tmp / "h5loop"
    if not exe.exists():
        subprocess.run(["cc", "-O2", "-o", str(exe), str(HERE / "c" / "h5loop.c"), f"-I{HDF5_SERIAL[0]}",
                        f"-L{HDF5_SERIAL[1]}", "-lhdf5"], check=True)
    nrows = 200_000 if quick else 2_000_000
    CACHE.mkdir(parents=True, exist_ok=True)
    data = CACHE / f"overhead_c_{nrows}x64_c65536x8.h5"  # written by Debian's HDF5 1.10
    if not data.exists():
        subprocess.run([str(exe), str(data.with_suffix(".tmp")), "make", str(nrows)], check=True)
        data.with_suffix(".tmp").rename(data)
    return exe, data, nrows


def below_python_cases(quick: bool, tmp: Path, pairs: dict, fmt: str = "parquet",
                       cases: tuple[str, ...] = BELOW_CASES, longer: int = 1) -> list[dict]:
    if interpose.library() is None:
        print(f"below Python: skipped ({interpose.unavailable()})")
        return []
    rows = []
    trace_path = tmp / f"below.{fmt}"  # parquet: what ioadvisor run writes by default
    c_cases = {"c-tiny", "c-boxes"} & set(cases)
    built = h5loop(tmp, quick) if c_cases else None
    if built is not None:
        exe, data, nrows = built
        # loops of about 1 s: the untraced program's start-up and clock resolution stay out of the ratio
        n = (20_000 if quick else 1_000_000) * longer
        if "c-tiny" in cases:
            rows.append(below_python("C: one-element H5Dread", [str(exe), str(data), "tiny", str(n)], n, pairs,
                                     trace_path))
        n = (1000 if quick else 100_000) * longer
        if "c-boxes" in cases:
            rows.append(below_python(f"C: {n} reads of 1000x8 from ({nrows} x 64) f4, chunks (65536, 8)",
                                     [str(exe), str(data), "boxes", str(n)], n, pairs, trace_path))
    elif c_cases:
        print("below Python: C cases skipped (no cc or no Debian libhdf5-dev)")
    if not {"nc-tiny", "nc-boxes"} & set(cases):
        return rows
    import netCDF4

    nc_path = CACHE / "overhead_netcdf4_2000x90x180.nc"
    if not nc_path.exists():
        CACHE.mkdir(parents=True, exist_ok=True)
        with netCDF4.Dataset(nc_path.with_suffix(".tmp"), "w") as nc:
            for dim, size in (("time", 2000), ("lat", 90), ("lon", 180)):
                nc.createDimension(dim, size)
            v = nc.createVariable("temp", "f4", ("time", "lat", "lon"), chunksizes=(1, 90, 180))
            rng = np.random.default_rng(0)
            for t0 in range(0, 2000, 100):
                v[t0:t0 + 100] = rng.random((100, 90, 180), dtype="f4")
        nc_path.with_suffix(".tmp").rename(nc_path)
    script = tmp / "netcdf4_loop.py"
    script.write_text(NETCDF4_LOOP)
    for mode, n in (("tiny", 2000 if quick else 20_000), ("boxes", 1000 if quick else 10_000)):
        if f"nc-{mode}" not in cases:
            continue
        n *= longer
        what = "one-element reads v[t, 3, 5]" if mode == "tiny" else "(1, 40, 80) boxes"
        rows.append(below_python(f"netCDF4: {n} {what}, (2000, 90, 180) f4, chunks (1, 90, 180)",
                                 [sys.executable, str(script), str(nc_path), mode, str(n)], n, pairs, trace_path))
    return rows


DARSHAN = CACHE.parent / "darshan" / "lib" / "libdarshan.so"
"""Darshan's runtime with its HDF5 module, built by benchmarks/helpers/darshan_build.sh: the side-by-side column."""
SPAWN_PROGRAM = textwrap.dedent("""
    import multiprocessing as mp, sys
    def work(i):
        return i
    if __name__ == "__main__":
        ctx = mp.get_context("spawn")
        procs = [ctx.Process(target=work, args=(i,)) for i in range(int(sys.argv[1]))]
        for p in procs:
            p.start()
        for p in procs:
            p.join()
""")
SPAWNED = 8
"""Children of the spawn case: a child's cost is (traced - plain) of SPAWNED children minus that of none, / SPAWNED."""


IOADVISOR_COMMAND = Path(sys.executable).parent / "ioadvisor"
"""The ``ioadvisor`` command installed with this interpreter (section 4)."""


def _tool_command(tool: str, cmd: list[str], tmp: Path, baseline: Path | None = None) -> tuple[list[str], dict]:
    """``cmd`` as run plain, through ``ioadvisor run`` (what a user types, its default Parquet trace), through the
    ``ioadvisor run`` of another checkout (``baseline``, its extensions built) or with Darshan preloaded (logs in
    ``tmp``)."""
    env = _command_env()
    if tool in ("ioadvisor", "baseline"):
        if tool == "baseline":
            env["PYTHONPATH"] = os.pathsep.join(filter(None, [str(baseline), os.environ.get("PYTHONPATH")]))
        out = tmp / f"fixed-{tool}.parquet"  # its own: an older checkout may not replace a newer trace
        # the command a user types (the venv's `ioadvisor`: the native front end where it was built); another
        # checkout's through `python -m advisor` (its entry point: its `ioadvisor` script cost the same)
        command = [sys.executable, "-m", "advisor"] if tool == "baseline" else [str(IOADVISOR_COMMAND)]
        return [*command, "run", "--force", "-o", str(out), "--", *cmd], env
    if tool == "darshan":
        env.update(LD_PRELOAD=str(DARSHAN), DARSHAN_ENABLE_NONMPI="1", DARSHAN_LOGPATH=str(tmp / "darshan-logs"))
    return cmd, env


def fixed_costs(quick: bool, tmp: Path, n_rounds: int, baseline: Path | None = None) -> list[dict]:
    """Whole-process wall time, plain against ``ioadvisor run`` (and Darshan, where built), of: a C program that
    reads nothing (N = 0), ``python -c "import h5py"``, a program starting SPAWNED spawned children (and none),
    and the C program's 20,000 box reads. Every (case, tool) once per round, the order rotating from round to
    round; per case the median over rounds of (tool - plain) with its bootstrap 95% interval."""
    cases: dict[str, list[str]] = {}
    built = h5loop(tmp, quick)
    if built is None:
        print("fixed cost: C cases skipped (no cc or no Debian libhdf5-dev)")
    else:
        exe, data, nrows = built
        cases["C program, N = 0 (h5loop boxes 0)"] = [str(exe), str(data), "boxes", "0"]
        cases[f"C program, 20,000 reads of 1000x8 from ({nrows} x 64) f4 (h5loop boxes 20000)"] = \
            [str(exe), str(data), "boxes", "20000"]
    cases['python -c "import h5py"'] = [sys.executable, "-c", "import h5py"]
    script = tmp / "spawn_children.py"
    script.write_text(SPAWN_PROGRAM)
    spawn_none = "python, multiprocessing spawn, 0 children"
    spawn_some = f"python, multiprocessing spawn, {SPAWNED} children doing nothing"
    cases[spawn_none] = [sys.executable, str(script), "0"]
    cases[spawn_some] = [sys.executable, str(script), str(SPAWNED)]
    tools = ["plain", "ioadvisor"] + (["baseline"] if baseline else []) + (["darshan"] if DARSHAN.exists() else [])
    if not DARSHAN.exists():
        print(f"fixed cost: Darshan column skipped ({DARSHAN} not built: benchmarks/helpers/darshan_build.sh)")
    (tmp / "darshan-logs").mkdir(exist_ok=True)
    runs = [(case, tool) for case in cases for tool in tools]
    for case, tool in runs:  # once each first: files in the page cache, .pyc files written
        cmd, env = _tool_command(tool, cases[case], tmp, baseline)
        subprocess.run(cmd, env=env, capture_output=True, check=True, cwd=tmp)  # not ours: python -m finds cwd first
    walls: dict[tuple[str, str], list[float]] = {run: [] for run in runs}
    for r in range(n_rounds):
        k = r % len(runs)
        for case, tool in runs[k:] + runs[:k]:
            cmd, env = _tool_command(tool, cases[case], tmp, baseline)
            w = time.perf_counter()
            subprocess.run(cmd, env=env, capture_output=True, check=True, cwd=tmp)
            walls[case, tool].append(time.perf_counter() - w)
        shutil.rmtree(tmp / "darshan-logs", ignore_errors=True)
        (tmp / "darshan-logs").mkdir()
    rows = []
    for case in cases:
        plain = walls[case, "plain"]
        row = {"case": case, "rounds": n_rounds, "plain_ms": statistics.median(plain) * 1e3}
        for tool in tools[1:]:
            added = [(t - p) * 1e3 for p, t in zip(plain, walls[case, tool])]
            ratio = [(t / p - 1) * 100 for p, t in zip(plain, walls[case, tool])]
            row[f"{tool}_added_ms"] = statistics.median(added)
            row[f"{tool}_added_interval_ms"] = list(median_interval(added))
            row[f"{tool}_slowdown_pct"] = statistics.median(ratio)
            row[f"{tool}_interval_pct"] = list(median_interval(ratio))
        rows.append(row)
    per_child = {"case": f"per followed child (spawn: ({SPAWNED} children - none) / {SPAWNED})", "rounds": n_rounds,
                 "plain_ms": statistics.median((a - b) * 1e3 / SPAWNED for a, b in
                                               zip(walls[spawn_some, "plain"], walls[spawn_none, "plain"]))}
    for tool in tools[1:]:
        added = [((t8 - t0) - (p8 - p0)) * 1e3 / SPAWNED for p8, p0, t8, t0 in
                 zip(walls[spawn_some, "plain"], walls[spawn_none, "plain"], walls[spawn_some, tool],
                     walls[spawn_none, tool])]
        per_child[f"{tool}_added_ms"] = statistics.median(added)
        per_child[f"{tool}_added_interval_ms"] = list(median_interval(added))
    rows.append(per_child)
    return rows


def print_fixed(rows: list[dict]) -> None:
    tools = [t for t in ("ioadvisor", "baseline", "darshan") if f"{t}_added_ms" in rows[0]]
    head = " | ".join(f"{t}: added ms, median [95% interval] (slower)" for t in tools)
    print(f"| whole process, wall | rounds | plain ms | {head} |")
    print("|---|---|---|" + "---|" * len(tools))
    for r in rows:
        cells = []
        for t in tools:
            lo, hi = r[f"{t}_added_interval_ms"]
            pct = f" ({r[f'{t}_slowdown_pct']:+.1f}% [{r[f'{t}_interval_pct'][0]:+.1f}, " \
                  f"{r[f'{t}_interval_pct'][1]:+.1f}])" if f"{t}_slowdown_pct" in r else ""
            cells.append(f"{r[f'{t}_added_ms']:+.1f} [{lo:+.1f}, {hi:+.1f}]{pct}")
        print(f"| {r['case']} | {r['rounds']} | {r['plain_ms']:.1f} | " + " | ".join(cells) + " |")


def _pct(r: dict, label: str) -> str:
    """median [95% interval] / min-min"""
    lo, hi = r[f"{label}_interval_pct"]
    return f"{r[f'{label}_slowdown_pct']:+.2f}% [{lo:+.2f}, {hi:+.2f}] / {r[f'{label}_slowdown_min_pct']:+.2f}%"


def print_below(rows: list[dict]) -> None:
    print("| below Python (ioadvisor run vs plain) | pairs | untraced µs/call (cpu) | added µs/call, cpu (median) "
          "| slower, cpu: median [95% interval] / min-min | slower, wall: median [95% interval] / min-min "
          "| whole-command cpu s, untraced / traced | whole process, wall: untraced s, slower |")
    print("|---|---|---|---|---|---|---|---|")
    for r in rows:
        print(f"| {r['case']} | {r['pairs']} | {r['cpu_untraced_us']:.2f} | {r['cpu_added_us']:.2f} "
              f"| {_pct(r, 'cpu')} | {_pct(r, 'wall')} "
              f"| {r['command_cpu_untraced_s']:.2f} / {r['command_cpu_traced_s']:.2f} "
              f"| {r['process_wall_untraced']:.3f}, {_pct(r, 'process_wall')} |")


def print_per_call(rows: list[dict]) -> None:
    print("| per-call case | untraced µs/call (cpu) | **added per call** (in the loop + writing) | in the loop "
          "| writing at the tracer's cadence | earlier method: first access + calls + forced flush "
          "| fixed, ms: enter / first access / forced flush / exit |")
    print("|---|---|---|---|---|---|---|")
    for r in rows:
        print(f"| {r['case']} | {r['cpu_untraced_us']:.1f} | **{r['loop_added_us'] + r['writing_us']:+.2f}** "
              f"| {r['loop_added_us']:+.2f} | {r['writing_us']:+.2f} ({r['writing_calls']:.0f} calls) "
              f"| {r['forced_added_us']:+.2f} ({r['calls']} calls) "
              f"| {r['enter_ms']:.2f} / {r['first_ms']:.2f} / {r['flush_ms']:.2f} / {r['exit_ms']:.2f} |")


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--quick", action="store_true", help="small sizes, few repetitions (a smoke run)")
    ap.add_argument("--json", type=Path, help="also write the results here")
    part = ap.add_mutually_exclusive_group()
    part.add_argument("--below-only", action="store_true", help="only the cases below Python (section 3)")
    part.add_argument("--python-only", action="store_true", help="only the h5py/zarr cases (sections 1-2)")
    part.add_argument("--per-call-only", action="store_true", help="only the h5py/zarr per-call cases (section 1)")
    part.add_argument("--fixed-only", action="store_true",
                      help="only the fixed costs and whole-process overheads, with Darshan where built (section 4)")
    ap.add_argument("--rounds", type=int, help="rounds of the fixed-cost cases (default 31, 5 with --quick)")
    ap.add_argument("--baseline", type=Path, metavar="CHECKOUT",
                    help="section 4: also through the ioadvisor run of this checkout (its extensions built)")
    ap.add_argument("--reps", type=int,
                    help="least pairs of the realistic loop and of each case below Python (default 7, 3 with --quick)")
    ap.add_argument("--max-pairs", type=int, help="most pairs per case (default 80, 3 with --quick)")
    ap.add_argument("--spread", type=float, default=1.0,
                    help="stop adding pairs once the median slowdown's 95%% interval is within this many points")
    ap.add_argument("--budget", type=float, default=240.0, help="stop adding pairs to a case after this many seconds")
    ap.add_argument("--cases", default=",".join(BELOW_CASES),
                    help="cases below Python to run (default: all of " + ", ".join(BELOW_CASES) + ")")
    ap.add_argument("--longer", type=int, default=1,
                    help="loops below Python this many times longer (past interpose.PENDING_BYTES of records, "
                         "from 7 for the one-element netCDF4 loop, a busy process converts them while it runs)")
    ap.add_argument("--writing-seconds", type=float,
                    help="per-call cases: seconds of calls over which the flusher's writing is timed (default 3)")
    ap.add_argument("--format", choices=("parquet", "jsonl"), default="parquet",
                    help="trace format written (default: the columnar trace, what `ioadvisor run` writes)")
    args = ap.parse_args(argv)
    q = args.quick
    least = args.reps or (3 if q else 7)
    pairs = {"min_pairs": least, "max_pairs": max(least, args.max_pairs or (3 if q else 80)),
             "target": args.spread, "max_seconds": args.budget}
    cases = tuple(c for c in args.cases.split(",") if c)
    if set(cases) - set(BELOW_CASES):
        ap.error(f"--cases: unknown {', '.join(sorted(set(cases) - set(BELOW_CASES)))}")
    load = [os.getloadavg()[0]]
    print(f"load average at start: {load[0]:.2f}")
    if args.fixed_only:
        with tempfile.TemporaryDirectory(prefix="ioadvisor-overhead-") as tmp:
            fixed = fixed_costs(q, Path(tmp), args.rounds or (5 if q else 31), args.baseline)
        load.append(os.getloadavg()[0])
        print(f"load average at the end: {load[1]:.2f}")
        print_fixed(fixed)
        if args.json:
            args.json.write_text(json.dumps({"fixed": fixed, "date": time.strftime("%Y-%m-%d %H:%M"), "quick": q,
                                             "load": load}, indent=2))
        return 0
    if args.below_only:
        with tempfile.TemporaryDirectory(prefix="ioadvisor-overhead-") as tmp:
            below = below_python_cases(q, Path(tmp), pairs, args.format, cases, args.longer)
        load.append(os.getloadavg()[0])
        print(f"load average at the end: {load[1]:.2f}")
        print_below(below)
        if args.json:
            args.json.write_text(json.dumps({"below": below, "date": time.strftime("%Y-%m-%d %H:%M"), "quick": q,
                                             "load": load}, indent=2))
        return 0
    with tempfile.TemporaryDirectory(prefix="ioadvisor-overhead-") as tmp:
        tmp = Path(tmp)
        trace_path = tmp / f"t.{args.format}"
        with h5py.File(tmp / "small.h5", "w") as f:
            ds = f.create_dataset("x", data=np.zeros((100, 100), "f4"), chunks=(10, 10))
            n_h5, reps_h5 = (1000, 5) if q else (5000, 21)
            writing_args = (args.writing_seconds or (1.5 if q else 3.0), 1 if q else 3, trace_path)
            same = lambda: ds[0:1, 0:1]  # noqa: E731
            rows = [cadence.per_call("h5py ds[0:1, 0:1]", same, n_h5, reps_h5, trace_path)
                    | cadence.writing(same, *writing_args)]
            # a different index on every call: the tracer cannot reuse the previous line's normalization
            keys = itertools.cycle([(slice(i, i + 1), slice(j, j + 1)) for i in range(100) for j in range(0, 100, 7)])
            varying = lambda: ds[next(keys)]  # noqa: E731
            rows.append(cadence.per_call("h5py ds[i:i+1, j:j+1], i, j varying", varying, n_h5, reps_h5, trace_path)
                        | cadence.writing(varying, *writing_args))
        with h5py.File(tmp / "small.h5", "r") as f:
            # a new Dataset object per access (h5netcdf's way, and netCDF4-style code on h5py): each one a handle
            # opened and closed, to be recognised as the dataset described before
            rows_cycle = itertools.cycle(range(100))
            temporary = lambda: f["x"][next(rows_cycle)]  # noqa: E731
            rows.append(cadence.per_call('h5py f["x"][i] (a temporary handle per access)', temporary,
                                         200 if q else 1000, 5 if q else 15, trace_path)
                        | cadence.writing(temporary, *writing_args))
        z = zarr.create_array(store={}, shape=(100, 100), chunks=(10, 10), dtype="f4")
        z[:] = 0
        zfixed = lambda: z[0:1, 0:1]  # noqa: E731
        rows.append(cadence.per_call("zarr z[0:1, 0:1]", zfixed, 100 if q else 500, 5 if q else 15, trace_path)
                    | cadence.writing(zfixed, *writing_args))
        loops = [] if args.per_call_only else [
            realistic(200_000 if q else 2_000_000, 1000 if q else 10_000, pairs, trace_path),
            append_loop(400 if q else 4000, pairs, trace_path, tmp)]
        python_only = args.python_only or args.per_call_only
        below = [] if python_only else below_python_cases(q, tmp, pairs, args.format, cases, args.longer)
        fixed = [] if python_only else fixed_costs(q, tmp, args.rounds or (5 if q else 31), args.baseline)
    print_per_call(rows)
    if loops:
        print()
        print_loops(loops)
    load.append(os.getloadavg()[0])
    print(f"load average at the end: {load[1]:.2f}")
    if below:
        print()
        print_below(below)
    if fixed:
        print()
        print_fixed(fixed)
    if args.json:
        args.json.write_text(json.dumps({"per_call": rows, "loops": loops, "below": below, "fixed": fixed, "load": load,
                                         "date": time.strftime("%Y-%m-%d %H:%M"), "quick": q, "format": args.format},
                                        indent=2))
    return 0


def print_loops(loops: list[dict]) -> None:
    print("| loop | pairs | untraced s (cpu) | slower, cpu: median [95% interval] / min-min | untraced s (wall) "
          "| slower, wall: median [95% interval] / min-min |")
    print("|---|---|---|---|---|---|")
    for loop in loops:
        print(f"| {loop['case']} | {loop['pairs']} | {loop['cpu_untraced']:.2f} | {_pct(loop, 'cpu')} "
              f"| {loop['wall_untraced']:.2f} | {_pct(loop, 'wall')} |")


if __name__ == "__main__":
    raise SystemExit(main())
