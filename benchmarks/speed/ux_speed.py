"""What a new user waits for (docs/ux.md): the first ``advise`` after an install, and the access map of a
long trace.

- ``first``: ``ioadvisor demo -o DIR/demo.parquet`` makes the demo trace; then ``ioadvisor advise`` on it is
  run on a pseudo-terminal (as a user types it) with numba's cache pointed at an empty directory
  (``NUMBA_CACHE_DIR``: as on a fresh install, no compiled kernel on disk), then again with that directory
  filled (every later run). Per run: wall seconds, seconds to the first progress output, and whether the
  first-run compile bar was shown. Rounds alternate cold and warm (ABAB).
- ``map``: a program reading N random rows ``x[i]`` of a (200000, 64) float32 dataset ((4096, 64) chunks)
  traced with ``ioadvisor run``; then ``ioadvisor trace plot TRACE -o map.png`` wall seconds (median of 3).

    python -m benchmarks.speed.ux_speed [--rounds 2] [--accesses 1000000] [--parts first map] [--workdir DIR]

``--workdir DIR`` keeps the traced loader there (``loader-N.parquet``) for the next run.
"""
from __future__ import annotations

import argparse
import os
import statistics
import subprocess
import sys
import tempfile
import textwrap
import time
from pathlib import Path

from benchmarks.helpers import terminal

BIN = Path(sys.executable).parent
IOADVISOR = str(BIN / "ioadvisor")

LOADER = """
    import sys, numpy as np, h5py
    path, n = sys.argv[1], int(sys.argv[2])
    with h5py.File(path, "w") as f:
        f.create_dataset("x", data=np.random.default_rng(0).random((200000, 64), dtype=np.float32),
                         chunks=(4096, 64))
    rows = np.random.default_rng(1).integers(0, 200000, n)
    with h5py.File(path, "r") as f:
        x = f["x"]
        for i in rows:
            x[i]
"""


def on_terminal(args: list[str], env: dict, watch: bytes = b"") -> tuple[float, float | None, float | None, str]:
    """(wall seconds, seconds to the first output, seconds until ``watch`` was shown, the text shown) of ``args``
    run on a pseudo-terminal; a failed command ends the benchmark with its output."""
    run = terminal.on_terminal(args, env, watch)
    if run.returncode != 0:
        raise SystemExit(f"{' '.join(args)} failed:\n{run.text[-2000:]}")
    return run.seconds, run.first_output, run.watched, run.text


def first_advise(work: Path, rounds: int) -> list[dict]:
    trace = work / "demo.parquet"
    subprocess.run([IOADVISOR, "demo", "-o", str(trace), "--force"], check=True, capture_output=True)
    rows = []
    for r in range(rounds):
        cache = Path(tempfile.mkdtemp(prefix="numba-cache-", dir=work))
        env = {**os.environ, "NUMBA_CACHE_DIR": str(cache), "COLUMNS": "120"}
        env.pop("IOADVISOR_QUIET", None)
        for state in ("cold", "warm"):  # the cold run fills the cache the warm one uses
            wall, first, bar, _ = on_terminal([IOADVISOR, "advise", str(trace)], env, b"compiling the cost model")
            rows.append({"round": r, "cache": state, "seconds": wall, "first_output": first, "compile_bar": bar})
            print(f"round {r} {state}: {wall:.1f} s, first output after {first:.2f} s, compile bar "
                  + (f"shown after {bar:.2f} s" if bar is not None else "not shown"), flush=True)
    return rows


def access_map(work: Path, accesses: int) -> list[float]:
    program = work / "loader.py"
    program.write_text(textwrap.dedent(LOADER))
    trace = work / f"loader-{accesses}.parquet"
    if not trace.exists():  # tracing a million h5py calls takes minutes: kept in --workdir for the next run
        t = time.perf_counter()
        subprocess.run([IOADVISOR, "run", "-o", str(trace), "--", sys.executable, str(program),
                        str(work / "loader.h5"), str(accesses)], check=True, capture_output=True)
        print(f"traced {accesses} reads in {time.perf_counter() - t:.0f} s", flush=True)
    times = []
    for _ in range(3):
        t = time.perf_counter()
        subprocess.run([IOADVISOR, "trace", "plot", str(trace), "-o", str(work / "map.png")], check=True,
                       capture_output=True)
        times.append(time.perf_counter() - t)
        print(f"trace plot: {times[-1]:.2f} s", flush=True)
    return times


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--rounds", type=int, default=2)
    ap.add_argument("--accesses", type=int, default=1_000_000)
    ap.add_argument("--parts", nargs="+", default=["first", "map"], choices=("first", "map"))
    ap.add_argument("--workdir", default=None)
    args = ap.parse_args()
    with tempfile.TemporaryDirectory(prefix="ioadvisor-ux-") as tmp:
        work = Path(args.workdir or tmp)
        work.mkdir(parents=True, exist_ok=True)
        if "first" in args.parts:
            rows = first_advise(work, args.rounds)
            for state in ("cold", "warm"):
                mine = [r for r in rows if r["cache"] == state]
                bars = [r["compile_bar"] for r in mine if r["compile_bar"] is not None]
                print(f"{state}: median {statistics.median(r['seconds'] for r in mine):.1f} s, first output "
                      f"median {statistics.median(r['first_output'] for r in mine):.2f} s, compile bar shown "
                      f"{len(bars)}/{len(mine)}"
                      + (f", after {statistics.median(bars):.2f} s (median)" if bars else ""))
        if "map" in args.parts:
            times = access_map(work, args.accesses)
            print(f"trace plot of {args.accesses} accesses: median {statistics.median(times):.2f} s")


if __name__ == "__main__":
    main()
