"""Darshan round trip: how far do predictions on an imported (synthetic) trace stray from the captured one?

For each HDF5 workload of benchmarks/workloads/ (the regret benchmark's programs), trace it with
``ioadvisor run`` (captured trace T), reduce T to the counters darshan-runtime's H5D module would keep
(``instrumentation.darshan.counters_of_trace``: top-4 access shapes, op/byte counts, no offsets), import those
(``import_darshan``: synthetic trace S) twice, with the HDF5 file reachable (shape from the file) and without
(shape guessed), and compare the I/O model on T and S:

- per candidate layout (the advice on T: its ranked candidates, the current layout and the defaults):
  ratio = predicted seconds on S / on T; its 2.5-97.5% quantiles give ``advisor.synthetic.PLACEMENT_FACTOR`` (shape known)
  and ``GUESSED_SHAPE_FACTOR`` (shape guessed);
- the recommendation on S, priced on T: regret = T-seconds(S's pick) / T-seconds(T's pick), after the
  keep/change verdict (on T grounded in the traced times, on S in the model only) and for the fastest-ranked
  layouts before it.

    python -m benchmarks.validation.darshan_roundtrip [--scale 0.5] [--only w01 w03]

Raw results go to benchmarks/results/darshan-roundtrip-<date>.json.
"""
from __future__ import annotations

import argparse
import json
import sys
import tempfile
from datetime import datetime, timezone
from pathlib import Path

import numpy as np

HERE = Path(__file__).resolve().parents[1]

from benchmarks.validation.regret import trace_workload, workloads


def price(trace, ds, cand, profile):
    """Predicted seconds of one candidate layout on one trace's dataset (None when it does not fit the extent)."""
    from advisor.search import CostModel

    model = CostModel(ds, trace.accesses_of(ds.id), trace.extent(ds.id), profile, procs=trace.nprocs)
    try:
        return model.evaluate(cand).seconds
    except ValueError:
        return None


def roundtrip(w: Path, workdir: Path, scale: float, profile) -> dict:
    from advisor.api import advise
    from instrumentation.darshan import counters_of_trace, import_darshan
    from instrumentation.tracefile import load_trace

    trace_path, _ = trace_workload(w, workdir, scale)
    real = load_trace(trace_path)
    ds_real = real.accessed()[0]
    adv_real = advise(real, profile=profile, dataset=ds_real.id, read_data=False).datasets[0]
    cands = {r.candidate for r in (adv_real.current, *adv_real.defaults.values(), *adv_real.candidates)}
    log = counters_of_trace(real)
    out = {"workload": w.stem, "pattern": adv_real.pattern, "n_accesses": adv_real.n_accesses,
           "procs": adv_real.procs, "recommended_real": adv_real.recommendation.label}
    for reach in (True, False):
        tag = "file" if reach else "guessed"
        syn = load_trace(import_darshan(log, workdir / f"imported-{tag}.jsonl", reach_files=reach).trace)
        ds_syn = syn.dataset_by_key(ds_real.key)
        ratios = []
        for cand in cands:
            t_real, t_syn = price(real, ds_real, cand, profile), price(syn, ds_syn, cand, profile)
            if t_real and t_syn:
                ratios.append(t_syn / t_real)
        adv_syn = advise(syn, profile=profile, dataset=ds_syn.id, read_data=False).datasets[0]
        picked = price(real, ds_real, adv_syn.recommendation.candidate, profile)
        own = price(real, ds_real, adv_real.recommendation.candidate, profile)  # priced the same way
        # the fastest-ranked layout, before the keep/change verdict (which only T can ground in traced times)
        fastest = [price(real, ds_real, a.candidates[0].candidate, profile) for a in (adv_syn, adv_real)]
        out[tag] = {
            "shape": list(ds_syn.shape), "shape_real": list(real.extent(ds_real.id)),
            "ratios": ratios, "recommended": adv_syn.recommendation.label,
            "regret": None if picked is None or not own else picked / own,
            "fastest": adv_syn.candidates[0].label,
            "regret_fastest": None if None in fastest or not fastest[1] else fastest[0] / fastest[1],
            "verdict": adv_syn.verdict, "verdict_real": adv_real.verdict,
        }
    return out


def _r(x):
    return None if x is None else round(x, 3)


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--scale", type=float, default=0.5)
    ap.add_argument("--only", nargs="*")
    ap.add_argument("--profile")
    args = ap.parse_args(argv)
    from iomodel.profile import load_profile

    profile = load_profile(args.profile or HERE.parent / "iomodel" / "profiles" / "default.json")
    rows = []
    for w in workloads(args.only):
        if "_h5" not in w.stem:
            continue
        with tempfile.TemporaryDirectory() as tmp:
            row = roundtrip(w, Path(tmp), args.scale, profile)
        rows.append(row)
        for tag in ("file", "guessed"):
            r = row[tag]
            q = np.quantile(r["ratios"], [0.0, 0.5, 1.0]) if r["ratios"] else [float("nan")] * 3
            print(f"{row['workload']:<24} {tag:<8} shape {r['shape']} (real {r['shape_real']}) "
                  f"ratio min/median/max {q[0]:.3g}/{q[1]:.3g}/{q[2]:.3g}  pick {r['recommended']} "
                  f"(real {row['recommended_real']}), regret {_r(r['regret'])}; verdict {r['verdict']} (real "
                  f"{r['verdict_real']}); fastest-ranked {r['fastest']}, regret {_r(r['regret_fastest'])}")
    for tag in ("file", "guessed"):
        ratios = [x for row in rows for x in row[tag]["ratios"]]
        lo, med, hi = np.quantile(ratios, [0.025, 0.5, 0.975])
        regrets = [row[tag]["regret"] for row in rows if row[tag]["regret"] is not None]
        fastest = [row[tag]["regret_fastest"] for row in rows if row[tag]["regret_fastest"] is not None]
        print(f"ALL {tag:<8} {len(ratios)} candidate predictions: S/T ratio 2.5% {lo:.3g}, median {med:.3g}, "
              f"97.5% {hi:.3g}; regret median {np.median(regrets):.3g}, worst {max(regrets):.3g}; "
              f"fastest-ranked regret median {np.median(fastest):.3g}, worst {max(fastest):.3g}")
    results = HERE / "results"
    results.mkdir(exist_ok=True)
    stamp = datetime.now(timezone.utc).strftime("%Y%m%d-%H%M")
    (results / f"darshan-roundtrip-{stamp}.json").write_text(json.dumps(rows, indent=1))
    return 0


if __name__ == "__main__":
    sys.exit(main())
