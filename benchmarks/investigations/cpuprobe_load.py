"""How the CPU probe's runs (``iomodel.cpuprobe``) depend on what the machine's other cores are doing (issue 30).

Zarr hands each call to its event-loop thread; when the other CPU is idle, waking that thread there can cost
more than the work. Each probe runs in a fresh interpreter (as ``advise`` does, once per process), ``--probes``
times per condition: alone; pinned to one CPU (``os.sched_setaffinity``, both threads on it); beside a busy loop
in another process. Printed: each library's probe seconds and its factor against the shipped profile.

    python -m benchmarks.investigations.cpuprobe_load [--probes 4]
"""
from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys

PROBE = """
import json, os, sys
if sys.argv[1] == "pinned":
    os.sched_setaffinity(0, {min(os.sched_getaffinity(0))})
from iomodel.cpuprobe import cpu_factors, measure_cpu_seconds
from iomodel.profile import load_profile
s = measure_cpu_seconds()
print(json.dumps({"seconds": s, "factors": cpu_factors(load_profile(), s)}))
"""


def probe(condition: str) -> dict:
    out = subprocess.run([sys.executable, "-c", PROBE, condition], capture_output=True, text=True, check=True)
    return json.loads(out.stdout.strip().splitlines()[-1])


def main(argv=None) -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--probes", type=int, default=4)
    args = ap.parse_args(argv)
    print("| condition | zarr (s) | zarr factor | hdf5 (s) | hdf5 factor |")
    print("|---|---|---|---|---|")
    for condition in ("alone", "pinned", "beside a busy loop"):
        busy = subprocess.Popen([sys.executable, "-c", "while True: pass"]) if condition.startswith("beside") else None
        try:
            for _ in range(args.probes):
                r = probe(condition)
                s, f = r["seconds"], r["factors"]
                print(f"| {condition} | {s.get('zarr', float('nan')):.3f} | {f.get('zarr', float('nan')):.2f} | "
                      f"{s.get('hdf5', float('nan')):.4f} | {f.get('hdf5', float('nan')):.2f} |")
        finally:
            if busy is not None:
                busy.kill()
                busy.wait()
    print(f"({os.cpu_count()} CPUs)")


if __name__ == "__main__":
    main()
