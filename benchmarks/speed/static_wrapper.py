"""Per-call cost of the link-time wrapper (static libhdf5) against the LD_PRELOAD interposer (shared libhdf5).

The same C loop of one-element H5Dread calls (benchmarks/c/h5loop.c ``tiny``) built two ways, as users build
them: ``cc ... -lhdf5`` (Debian's shared libhdf5: the interposer reaches it) and ``h5cc ... $(ioadvisor
link-flags)`` (Debian's h5cc default, libhdf5.a linked in, with the wrapper). With ``--vol-prefix``, the loop linked
statically against that HDF5 (>= 1.14) with -rdynamic too, traced through the VOL connector. Each round runs the
commands, in an order rotated every round (drift in time weighs on all alike): each build plain and through
``ioadvisor run``. The program times its own loop (CPU of the whole process, and wall); the cost a tracer adds
per call is traced minus plain of the same round, divided by the calls. Reported: the medians over the rounds
of each build's plain time per call and added time per call, and of the per-round ratio wrapper / interposer
of the added time.

    python -m benchmarks.speed.static_wrapper [--rounds N] [--calls N] [--json out.json] [--vol-prefix DIR]
"""
from __future__ import annotations

import argparse
import json
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

HERE = Path(__file__).resolve().parents[1]
from benchmarks.speed.tracing_overhead import CACHE, HDF5_SERIAL, _run

from instrumentation import linkage  # noqa: E402


def build(tmp: Path, vol_prefix: Path | None) -> dict[str, Path]:
    """The loop built against the shared libhdf5 and, with the wrapper, against the static one; with
    ``vol_prefix`` (an HDF5 >= 1.14 install whose VOL connector is built: volconnector.py), also against its
    static libhdf5 with -rdynamic, which `ioadvisor run` traces through the connector."""
    src = str(HERE / "c" / "h5loop.c")
    shared, wrapped = tmp / "h5loop_shared", tmp / "h5loop_wrapped"
    subprocess.run(["cc", "-O2", "-o", str(shared), src, f"-I{HDF5_SERIAL[0]}", f"-L{HDF5_SERIAL[1]}", "-lhdf5"],
                   check=True)
    subprocess.run(["h5cc", "-O2", "-o", str(wrapped), src, *linkage.link_flags(linkage.wrapper_object())],
                   check=True, cwd=tmp)
    programs = {"interposer (shared libhdf5)": shared, "wrapper (static libhdf5)": wrapped}
    if vol_prefix is not None:
        vol = tmp / "h5loop_vol"
        settings = (vol_prefix / "lib" / "libhdf5.settings").read_text()
        extra = settings.split("Extra libraries:")[1].splitlines()[0].split() if "Extra libraries:" in settings \
            else ["-lz", "-ldl", "-lm"]
        subprocess.run(["cc", "-O2", "-rdynamic", f"-I{vol_prefix / 'include'}", "-o", str(vol), src,
                        str(vol_prefix / "lib" / "libhdf5.a"), *extra], check=True)
        programs["VOL connector (static libhdf5 >= 1.14, -rdynamic)"] = vol
    return programs


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--rounds", type=int, default=15, help="rounds of the commands (default 15)")
    ap.add_argument("--calls", type=int, default=1_000_000, help="one-element reads per loop (default 1,000,000)")
    ap.add_argument("--json", type=Path, help="also write the results here")
    ap.add_argument("--vol-prefix", type=Path, metavar="DIR",
                    help="also the VOL connector: an HDF5 >= 1.14 install prefix (DIR/lib/libhdf5.a), its connector "
                         "built (instrumentation/volconnector.py)")
    args = ap.parse_args(argv)
    if linkage.wrapper_object() is None or not shutil.which("h5cc") or not shutil.which("cc"):
        print("skipped: needs cc, h5cc (libhdf5-dev) and the wrapper built at install time")
        return 1
    print(f"load average at start: {os.getloadavg()[0]:.2f}")
    with tempfile.TemporaryDirectory(prefix="ioadvisor-wrapper-") as tmp:
        tmp = Path(tmp)
        programs = build(tmp, args.vol_prefix)
        data = CACHE / "static_wrapper_65536x64.h5"
        if not data.exists():
            CACHE.mkdir(parents=True, exist_ok=True)
            first = next(iter(programs.values()))
            subprocess.run([str(first), str(data.with_suffix(".tmp")), "make", "65536"], check=True)
            data.with_suffix(".tmp").rename(data)
        runs = [(name, traced) for name in programs for traced in (False, True)]
        samples = {run: [] for run in runs}
        for r in range(args.rounds):
            for name, traced in runs[r % len(runs):] + runs[:r % len(runs)]:
                cmd = [str(programs[name]), str(data), "tiny", str(args.calls)]
                samples[(name, traced)].append(_run(cmd, traced, tmp / "t.parquet"))
    rows = []
    per_call = 1e6 / args.calls
    for name in programs:
        plain, traced = samples[(name, False)], samples[(name, True)]
        row = {"build": name, "rounds": args.rounds, "calls": args.calls}
        for k, label in ((1, "cpu"), (0, "wall")):
            row[f"{label}_plain_us"] = statistics.median(p[k] for p in plain) * per_call
            row[f"{label}_added_us"] = statistics.median(t[k] - p[k] for p, t in zip(plain, traced)) * per_call
        rows.append(row)
    names = list(programs)
    ratio = {}
    for k, label in ((1, "cpu"), (0, "wall")):
        added = [[t[k] - p[k] for p, t in zip(samples[(n, False)], samples[(n, True)])] for n in names[:2]]
        ratio[label] = statistics.median(w / i for i, w in zip(*added) if i > 0)
    print(f"load average at the end: {os.getloadavg()[0]:.2f}")
    print(f"| {args.calls} one-element H5Dread, {args.rounds} rounds | plain µs/call (cpu) | added µs/call, cpu "
          "(median) | plain µs/call (wall) | added µs/call, wall (median) |")
    print("|---|---|---|---|---|")
    for r in rows:
        print(f"| {r['build']} | {r['cpu_plain_us']:.3f} | {r['cpu_added_us']:.3f} | {r['wall_plain_us']:.3f} "
              f"| {r['wall_added_us']:.3f} |")
    print(f"median per-round ratio of added time, wrapper / interposer: cpu {ratio['cpu']:.2f}, "
          f"wall {ratio['wall']:.2f}")
    if args.json:
        args.json.write_text(json.dumps({"rows": rows, "ratio": ratio, "date": time.strftime("%Y-%m-%d %H:%M")},
                                        indent=2))
    return 0


if __name__ == "__main__":
    sys.exit(main())
