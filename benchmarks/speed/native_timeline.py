"""Where the added time of ``ioadvisor run`` around a native program goes: the 20,000-box C program of
benchmarks/speed/tracing_overhead.py (benchmarks/c/h5loop.c), timed plain and traced in interleaved rounds, the
traced run marked inside the launcher against the caller's clock (docs/tracing-overhead.md, "Per run").

    python -m benchmarks.speed.native_timeline [--rounds 10] [--baseline CHECKOUT]
    python -m benchmarks.speed.native_timeline --first-read [--rounds 9] [--baseline CHECKOUT]

The traced run goes through a driver script that wraps advisor/entry.py's ``main``: it notes when its first
line runs, when ``nativestart.spawn`` starts the program, when ``nativestart.wait`` returns, and when the
launcher calls ``os._exit``. Where the ``ioadvisor`` command is the native front end
(instrumentation/frontend/ioadvisor.c), a copy of it runs beside the driver as its Python entry point: the
program then starts before the driver, at the run's clock origin (the spawn's mark). The caller notes the
whole process's wall time; h5loop prints its loop's wall time. Medians over rounds; ``--baseline`` adds another checkout's launcher (its extensions built), as
tracing_overhead.py's ``--baseline`` does. ``--first-read``: what the run's pending batch (docs/trace-format.md)
costs its first reader: ``ioadvisor trace show`` of a fresh trace (it converts), again (converted), and of the
trace the baseline's launcher wrote, each in a fresh process.
"""
from __future__ import annotations

import argparse
import os
import re
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from benchmarks.speed.tracing_overhead import h5loop

HERE = Path(__file__).resolve().parent
DRIVER = '''
import os, sys, time
T0 = float(os.environ["IOADVISOR_T0"])
marks = []
import instrumentation.nativestart as ns
spawn, wait = ns.spawn, ns.wait
def marked_spawn(argv):
    marks.append(("spawn", time.time()))
    return spawn(argv)
def marked_wait(pid, started=None):
    status = wait(pid, started)
    marks.append(("end", time.time()))
    return status
ns.spawn, ns.wait = marked_spawn, marked_wait
real_exit = os._exit
def marked_exit(code):
    marks.append(("exit", time.time()))
    os.write(2, ("MARKS " + " ".join(f"{n}={(t - T0) * 1e3:.3f}" for n, t in marks) + "\\n").encode())
    real_exit(code)
os._exit = marked_exit
marks.append(("script", time.time()))
started = os.environ.get("IOADVISOR_FRONT_STARTED")  # the native front end spawned it: at its clock origin
if started:
    origin = float(started.split("\x1f")[6])
    marks.insert(0, ("spawn", marks[-1][1] - (time.perf_counter() - origin)))
from advisor.entry import main
sys.argv = ["ioadvisor", *sys.argv[1:]]
sys.exit(main())
'''
BOXES = 20_000
COMMAND = Path(sys.executable).parent / "ioadvisor"
FRONT_END = HERE / "front-end-not-found"  # main() sets it: COMMAND where it is the native front end


def _front_end(tmp: Path) -> Path:
    """A copy of the native front end beside the driver as its Python entry point, or a path that is not there
    (the ``ioadvisor`` command is a Python script: the driver alone)."""
    with open(COMMAND, "rb") as fh:
        if fh.read(4) != b"\x7fELF":
            return tmp / "front" / "none"
    (tmp / "front").mkdir()
    shutil.copy(COMMAND, tmp / "front" / "ioadvisor")
    entry = tmp / "front" / "ioadvisor-python"
    entry.write_text(f"#!{sys.executable}" + DRIVER)
    entry.chmod(0o755)
    return tmp / "front" / "ioadvisor"


def _env(checkout: Path | None) -> dict:
    # PYTHONDONTWRITEBYTECODE off: every run would compile what it imports, a cost no installed copy has
    env = {k: v for k, v in os.environ.items()
           if not k.startswith(("PMI_", "OMPI_", "PMIX_")) and k != "PYTHONDONTWRITEBYTECODE"}
    env["PYTHONPATH"] = os.pathsep.join(filter(None, [str(checkout or HERE.parents[1]), os.environ.get("PYTHONPATH")]))
    return env


def one_run(tool: str, program: list[str], tmp: Path, driver: Path, checkout: Path | None) -> dict[str, float]:
    """Wall time, loop time and the launcher's marks (ms from the caller's start) of one run."""
    env = _env(checkout)
    launcher = [str(driver.parent / "front" / "ioadvisor")] if tool == "ioadvisor" and FRONT_END.exists() else \
        [sys.executable, str(driver)]
    cmd = program if tool == "plain" else \
        [*launcher, "run", "--force", "-o", str(tmp / f"{tool}.parquet"), "--", *program]
    t0 = time.time()
    env["IOADVISOR_T0"] = repr(t0)
    res = subprocess.run(cmd, env=env, capture_output=True, text=True, cwd=tmp, check=True)
    out = {"wall": (time.time() - t0) * 1e3, "loop": float(res.stdout.split()[0]) * 1e3}
    marks = re.search(r"MARKS (.*)", res.stderr)
    if marks:
        out.update({k: float(v) for k, v in re.findall(r"(\w+)=([\d.]+)", marks.group(1))})
    return out


def first_read(rounds: int, program: list[str], tmp: Path, baseline: Path | None) -> None:
    """Print the medians of ``trace show`` of a fresh trace, of the same again, and of the baseline's trace."""
    def timed(cmd, checkout):
        t0 = time.perf_counter()
        subprocess.run(cmd, env=_env(checkout), capture_output=True, check=True, cwd=tmp)
        return (time.perf_counter() - t0) * 1e3

    show = [sys.executable, "-m", "advisor", "trace", "show"]
    walls: dict[str, list[float]] = {}
    for _ in range(rounds):
        for name, checkout in [("this", None), *([("baseline", baseline)] if baseline else [])]:
            out = str(tmp / f"read-{name}.parquet")
            walls.setdefault(f"run ({name})", []).append(
                timed([sys.executable, "-m", "advisor", "run", "--force", "-o", out, "--", *program], checkout))
        walls.setdefault("trace show, first (converts)", []).append(timed([*show, str(tmp / "read-this.parquet")], None))
        walls.setdefault("trace show, second", []).append(timed([*show, str(tmp / "read-this.parquet")], None))
        if baseline:
            walls.setdefault("trace show of the baseline's trace", []).append(
                timed([*show, str(tmp / "read-baseline.parquet")], None))
    for name, values in walls.items():
        print(f"{name}: {statistics.median(values):.1f} ms (median of {len(values)}; {min(values):.1f}-{max(values):.1f})")


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--rounds", type=int, default=10)
    ap.add_argument("--baseline", type=Path, metavar="CHECKOUT", help="another checkout's launcher, beside this one")
    ap.add_argument("--first-read", action="store_true", help="the first reader's cost of a fresh trace instead")
    args = ap.parse_args()
    print(f"load average at start: {os.getloadavg()[0]:.2f}")
    with tempfile.TemporaryDirectory(prefix="native-timeline-") as tmpdir:
        tmp = Path(tmpdir)
        built = h5loop(tmp, quick=False)
        if built is None:
            sys.exit("no cc or no Debian libhdf5-dev: nothing to time")
        exe, data, _ = built
        program = [str(exe), str(data), "boxes", str(BOXES)]
        if args.first_read:
            first_read(args.rounds, program, tmp, args.baseline)
            print(f"load average at the end: {os.getloadavg()[0]:.2f}")
            return
        driver = tmp / "driver.py"
        driver.write_text(DRIVER)
        global FRONT_END
        FRONT_END = _front_end(tmp)
        tools = {"plain": None, "ioadvisor": None, **({"baseline": args.baseline} if args.baseline else {})}
        for tool, checkout in tools.items():  # once each first: page cache, .pyc files
            one_run(tool, program, tmp, driver, checkout)
        runs: dict[str, list[dict]] = {tool: [] for tool in tools}
        for r in range(args.rounds):
            order = list(tools)[r % len(tools):] + list(tools)[:r % len(tools)]
            for tool in order:
                runs[tool].append(one_run(tool, program, tmp, driver, tools[tool]))
    print(f"load average at the end: {os.getloadavg()[0]:.2f}")
    plain = runs.pop("plain")
    wall, loop = (statistics.median(r[k] for r in plain) for k in ("wall", "loop"))
    print(f"plain: whole process {wall:.1f} ms, loop {loop:.1f} ms ({args.rounds} rounds, medians)")
    print("| launcher | added, whole process | before the spawn (interpreter to its script's first line) "
          "| loop, added | outside the loop after the spawn, added | exit: program end to os._exit "
          "| os._exit to the caller |")
    print("|---|---|---|---|---|---|---|")
    for tool, rows in runs.items():
        def med(f):
            return statistics.median(f(r) for r in rows)
        added = med(lambda r: r["wall"]) - wall
        print(f"| {tool} | {added:+.1f} ms ({added / wall * 100:+.1f}%) | {med(lambda r: r['spawn']):.1f} ms "
              f"({med(lambda r: r['script']):.1f}) | {med(lambda r: r['loop']) - loop:+.1f} ms "
              f"| {med(lambda r: r['end'] - r['spawn'] - r['loop']) - (wall - loop):+.1f} ms "
              f"| {med(lambda r: r['exit'] - r['end']):.1f} ms | {med(lambda r: r['wall'] - r['exit']):.1f} ms |")


if __name__ == "__main__":
    main()
