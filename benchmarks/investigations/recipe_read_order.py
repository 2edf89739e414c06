"""Does verify replay the recipe's reads as the program makes them? r04 (benchmarks/workloads/real/, a dask
climatology, 1.5 GB) in its recommended layout, cold, interleaved rounds of:

- ``recipe``: the unchanged program on the recipe's data under ``ioadvisor run`` (the traced seconds of the array);
- ``untraced``: the same program untraced, h5py ``Dataset.__getitem__`` timed (the span the hooks record);
- ``verify``: ``iomodel.replay`` of the reads ``advisor.verify`` replays there (``advisor.recipe_reads``, in the
  direction the program walked its traced blocks), in this long-lived process as verify does;
- ``forward``: the same reads in C order of their starts (what verify replayed before).

Per kind: the median and range of the totals and the median of each read. Dask's scheduler reads a reduction's
blocks from the last key back, and a cold read that follows the previous one in the file is partly served by its
readahead: ``forward`` is the faster one.

Usage: python -m benchmarks.investigations.recipe_read_order [--rounds 10] [--workdir /tmp/ioadvisor-readorder]
(prepares the data once per workdir; run under the timing lock).
"""
from __future__ import annotations

import argparse
import json
import os
import re
import statistics
import subprocess
import sys
from pathlib import Path

from benchmarks.validation import realsize as rs

WORKLOAD = rs.REAL / "r04_dask_climatology.py"
TIMED_GETITEM = """
import atexit, json, runpy, sys, time
import h5py
orig, rec = h5py.Dataset.__getitem__, []
def timed(self, args, new_dtype=None):
    t = time.perf_counter()
    out = orig(self, args, new_dtype)
    rec.append((self.name, time.perf_counter() - t))
    return out
h5py.Dataset.__getitem__ = timed
atexit.register(lambda: print("GETITEMS=" + json.dumps(rec), file=sys.stderr))
sys.argv = sys.argv[1:]
runpy.run_path(sys.argv[0], run_name="__main__")
"""


def prepare(wd: Path, env: dict):
    """The data, its trace, the advice and the recipe's copy (once per workdir)."""
    from advisor.api import advise
    from instrumentation.tracefile import load_trace

    data, trace_path = wd / "data", wd / "trace.jsonl"
    if not (wd / "recipe" / "open.json").exists():
        data.mkdir(parents=True, exist_ok=True)
        subprocess.run([sys.executable, str(WORKLOAD), "prepare", str(data)], env=env, check=True)
        rs.run_program(WORKLOAD, data, env)  # the first read after writing is slower: not the traced one
        rs.run_program(WORKLOAD, data, env, traced=trace_path)
    trace = load_trace(trace_path)
    adv = advise(trace)
    entry = adv.datasets[0]
    ds = next(d for d in trace.datasets.values() if entry.name in (d.key, d.label))
    if not (wd / "recipe" / "open.json").exists():
        base = json.loads((data / "open.json").read_text())
        import h5py

        with h5py.File(ds.file, "r") as f:
            source = f[ds.path][...]
        rs.rewrite(entry, entry.recommendation, ds, source, wd / "recipe", base, Path(ds.file))
    return trace, adv, entry, ds


def main(argv=None) -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--rounds", type=int, default=10)
    ap.add_argument("--workdir", default="/tmp/ioadvisor-readorder")
    a = ap.parse_args(argv)
    from advisor.verify import choices_from_advice, recipe_groups
    from advisor.verify_data import build_choice, layout_spec, load_data
    from instrumentation.tracefile import load_trace
    from iomodel.intrace import traced_seconds
    from iomodel.replay import data_path, replay

    wd = Path(a.workdir)
    env = {**os.environ, "WORKLOAD_SCALE": "1", "PYTHONPATH": str(rs.HERE.parent)}
    trace, adv, entry, ds = prepare(wd, env)
    choices = choices_from_advice(adv, trace, ds, 1)
    k = next(i for i, c in enumerate(choices) if c.label == "#1")
    replayed = next(t for t, picked in recipe_groups(trace, ds, choices, entry) if k in picked)
    reads = sorted((x for x in replayed.accesses if x.dataset == ds.id), key=lambda x: x.t_start)
    data, _ = load_data(ds, trace.extent(ds.id))
    spec, built = layout_spec(choices[k], ds), wd / "verify"
    if not data_path(spec, built).exists():
        build_choice(choices[k], ds, built, data, fill=True, shape=data.shape, resizable=False)
    name = entry.path.strip("/").split("/")[-1]

    def recipe():
        tp = wd / "recipe-trace.jsonl"
        rs.run_program(WORKLOAD, wd / "recipe", env, traced=tp)
        t = load_trace(tp)
        i = next(i for i, d in t.datasets.items() if d.path.strip("/").split("/")[-1] == name)
        per = [x.duration for x in sorted(t.accesses_of(i), key=lambda x: x.t_start)]
        return traced_seconds(t.columns_of(i)), per

    def untraced():
        rs.evict(wd / "recipe")
        p = subprocess.run([sys.executable, "-c", TIMED_GETITEM, str(WORKLOAD), "run", str(wd / "recipe")],
                           env=env, capture_output=True, text=True, check=True)
        per = [d for n, d in json.loads(re.search(r"GETITEMS=(.*)", p.stderr).group(1)) if n.endswith(name)]
        return sum(per), per

    def replayed_in(order):
        def run():
            r = replay(order, spec, built, rebuild=False, cold=True, data=data)
            return r.total_seconds, r.per_access.tolist()
        return run

    kinds = {"recipe": recipe, "untraced": untraced, "verify": replayed_in(reads),
             "forward": replayed_in(sorted(reads, key=lambda x: tuple(x.selection.start)))}
    print(f"{entry.recommendation.label}; verify's reads: {[x.selection.start for x in reads]}")
    got: dict[str, list] = {k: [] for k in kinds}
    names = list(kinds)
    for r in range(a.rounds):
        for kind in names[r % len(names):] + names[:r % len(names)]:
            got[kind].append(kinds[kind]())
    for kind, runs in got.items():
        totals = [t for t, _ in runs]
        n = min(len(p) for _, p in runs)
        per = [round(statistics.median(p[i] for _, p in runs), 4) for i in range(n)]
        print(f"{kind:9s} median {statistics.median(totals):.4f} s  range {min(totals):.4f}-{max(totals):.4f}  "
              f"per read {per}")
    med = {kind: statistics.median(t for t, _ in runs) for kind, runs in got.items()}
    print(f"recipe / verify {med['recipe'] / med['verify']:.2f}; recipe / forward {med['recipe'] / med['forward']:.2f}")


if __name__ == "__main__":
    main()
