"""Regret benchmark: is the advisor's recommendation the fastest layout when measured for real?

For each workload in benchmarks/workloads/ (plain h5py / zarr / mpi4py programs,
and real clients: xarray + h5netcdf + dask, xarray + zarr, a PyTorch Dataset,
dask.array over h5py): prepare its input file (untraced, then evicted from the
page cache), trace it with ``ioadvisor run`` (under ``mpiexec -n 2`` for the MPI
one), advise with ``advisor.advise``, then rebuild and replay (``advisor.verify``,
cold page cache, the workload's own data) the current layout, the top-5
candidates and the libraries' defaults (h5py ``chunks=True``, zarr
``chunks="auto"``) of the dataset with the most traced time. Per workload:

- regret = measured time of the recommendation (the current layout when the
  verdict is keep) / best measured among the current layout, the top-5 and the
  defaults (target: median <= 1.05, worst <= 1.3);
- the traced current time, the predicted one before and after the in-trace
  calibration, the claimed and the measured speed-up of the best change, the
  verdict;
- measured speed-up of the recommendation over h5py's and zarr's defaults and
  over the current layout;
- the measurement floor: the regret an oracle would score from the measurements
  alone (``floor``), what regret cannot be told apart from.

Raw results go to benchmarks/results/regret-<date>.json.

    python -m benchmarks.validation.regret --quick        # half-size workloads, 7 replays per layout
    python -m benchmarks.validation.regret                # full size, 11 replays per layout
"""
from __future__ import annotations

import argparse
import json
import os
import shutil
import statistics
import subprocess
import sys
import time
from datetime import datetime, timezone
from pathlib import Path

HERE = Path(__file__).resolve().parents[1]
WORKLOADS = HERE / "workloads"
RESULTS = HERE / "results"
BIN = Path(sys.executable).parent
MPI_PROCS = 2
BUDGET = 5.0
"""Seconds of replay after which a layout is not repeated (a slow one: repeats would not change its rank)."""


def workloads(only: list[str] | None) -> list[Path]:
    found = sorted(WORKLOADS.glob("w[0-9][0-9]_*.py"))
    if only:
        found = [w for w in found if any(w.stem.startswith(o) or w.stem == o for o in only)]
    return found


def _run(cmd: list[str], env: dict, cwd: Path) -> None:
    proc = subprocess.run(cmd, env=env, cwd=cwd, capture_output=True, text=True)
    if proc.returncode != 0:
        raise RuntimeError(f"{' '.join(cmd)} failed ({proc.returncode}):\n{proc.stderr[-2000:]}")


def evict(directory: Path) -> None:
    """Drop the page cache of every file under ``directory``: the traced run starts cold, as verify's replays do."""
    for f in directory.rglob("*"):
        if f.is_file():
            fd = os.open(f, os.O_RDONLY)
            try:
                os.fsync(fd)
                os.posix_fadvise(fd, 0, 0, os.POSIX_FADV_DONTNEED)
            finally:
                os.close(fd)


def trace_workload(w: Path, workdir: Path, scale: float) -> tuple[Path, float]:
    """Prepare the input untraced, run the workload under ``ioadvisor run``; (trace path, traced wall seconds)."""
    env = {**os.environ, "WORKLOAD_SCALE": str(scale), "PYTHONPATH": str(HERE.parent)}
    data = workdir / "data"
    shutil.rmtree(data, ignore_errors=True)
    data.mkdir(parents=True)
    _run([sys.executable, str(w), "prepare", str(data)], env, workdir)
    evict(data)
    trace = workdir / "trace.jsonl"
    cmd = [str(BIN / "ioadvisor"), "run", "--force", "-o", str(trace), "--", sys.executable, str(w), "run",
           str(data)]  # the workload's scratch trace, replaced on a repeat
    if "_mpi_" in w.stem:
        cmd = [str(BIN / "mpiexec"), "-n", str(MPI_PROCS)] + cmd
    t = time.perf_counter()
    _run(cmd, env, workdir)
    return trace, time.perf_counter() - t


def measure_workload(w: Path, workdir: Path, *, scale: float, repeat: int, top: int, deadline: float,
                     profile=None, keep: Path | None = None) -> dict:
    from advisor.api import advise
    from advisor.candidates import h5py_default_chunks
    from advisor.verify import Choice, choices_from_advice, verify_choices
    from instrumentation.tracefile import load_trace
    from iomodel.layout import Layout

    trace_path, traced_s = trace_workload(w, workdir, scale)
    if keep is not None:  # to re-advise the same trace offline against this run's measured layouts
        keep.mkdir(parents=True, exist_ok=True)
        shutil.copy(trace_path, keep / f"{w.stem}.jsonl")
    trace = load_trace(trace_path)
    t = time.perf_counter()
    adv = advise(trace, profile=profile, top=top)
    advise_s = time.perf_counter() - t
    entry = adv.datasets[0]  # the dataset with the most traced time
    ds = next(d for d in trace.datasets.values() if entry.name in (d.key, d.label))  # a zarr root: its store
    choices = choices_from_advice(adv, trace, ds, top, defaults=True)
    if not any(c.layout.library == "hdf5" and c.layout.chunks for c in choices if c.label.endswith("default")):
        # h5py's default is contiguous; also measure what chunks=True would pick (not predicted by the advice)
        shape = trace.extent(ds.id)
        auto = h5py_default_chunks(shape, ds.maxshape or tuple(None for _ in shape), ds.itemsize)
        choices.append(Choice("h5py auto", Layout("hdf5", shape, ds.itemsize, auto)))
    t = time.perf_counter()
    measured = verify_choices(trace, ds, choices, workdir / "layouts", repeat=repeat, budget=BUDGET,
                               deadline=deadline)
    verify_s = time.perf_counter() - t
    rows = {r.label: r for r in measured}
    # "#1" is the best change (the recommendation when the verdict is change); keep means the current layout
    change = rows["#1"]
    rec = rows["current"] if entry.verdict == "keep" else change
    pool = list(measured)
    best = min(pool, key=lambda r: r.measured_seconds)
    cur = rows["current"]
    out = {
        "workload": w.stem,
        "doc": (w.read_text().split('"""')[1].strip().splitlines() or [""])[0],
        "dataset": entry.path,
        "pattern": entry.pattern,
        "procs": entry.procs,
        "n_accesses": entry.n_accesses,
        "verdict": entry.verdict,
        "verdict_reason": entry.verdict_reason,
        "tie_rule": entry.tie_rule,
        "recommended": entry.recommendation.label,
        "best_change": change.label + " " + change.description,
        "best_measured": best.label + " " + best.description,
        "regret": rec.measured_seconds / best.measured_seconds,
        # the fastest replay of each layout: on a loaded machine the least disturbed one
        "regret_min": min(rec.measured_all) / min(min(r.measured_all) for r in pool),
        "floor": floor([r.get_config() for r in pool]),
        "speedup_vs_current": cur.measured_seconds / rec.measured_seconds,
        # the traced calls of this dataset, and the model's current time before / after the in-trace calibration
        "traced_current_seconds": entry.traced_seconds,
        "predicted_current_model_seconds": entry.current.model_seconds,
        "predicted_current_seconds": entry.current.seconds,
        "measured_current_seconds": cur.measured_seconds,
        # the best change: claimed (against the traced current time) and measured (replays) speed-ups
        "claimed_speedup": entry.speedup_vs_current(entry.candidates[0]),
        "measured_speedup": cur.measured_seconds / change.measured_seconds,
        "traced_seconds": traced_s,
        "advise_seconds": advise_s,
        "verify_seconds": verify_s,
        "rows": [r.get_config() for r in measured],
        # every measured layout's prediction before the in-trace calibration (the order the model gave them)
        "model_seconds": {label: rec.model_seconds for label, rec in (
            [("current", entry.current)] + [(f"#{k}", r) for k, r in enumerate(entry.candidates[:top], 1)]
            + [(f"{lib} default", r) for lib, r in entry.defaults.items()])},
        "labels": {r.label: r.description for r in measured},
        "advice": entry.to_json_obj(),
    }
    # h5py auto: chunks=True; when the array is resizable h5py's default already is that
    for key, label in (("h5py_default", "h5py default"), ("zarr_default", "zarr default"),
                       ("h5py_auto", "h5py auto" if "h5py auto" in rows else "h5py default")):
        d = rows.get(label)
        out[f"speedup_vs_{key}"] = None if d is None else d.measured_seconds / rec.measured_seconds
        out[f"{key}_timed_out"] = bool(d is not None and d.timed_out)
    rank = sorted(pool, key=lambda r: r.measured_seconds)
    out["rec_measured_rank"] = rank.index(rec) + 1
    return out


def floor(rows: list[dict]) -> float:
    """Regret of the measurement itself: the layout fastest by the median of the even-numbered replays, timed
    by the median of the odd-numbered ones against the fastest there (replays are interleaved, replay i of every
    layout before replay i+1, so the two passes see the same machine). A layout replayed once (stopped by the
    budget: a slow one) has that replay in both passes. Each pass has half the replays of the regret's median:
    this floor is, if anything, above the regret's own."""
    def half(row, k):
        runs = row["measured_all"]
        return statistics.median(runs[k::2] if len(runs) > 1 else runs)

    even = [half(r, 0) for r in rows]
    odd = [half(r, 1) for r in rows]
    return odd[even.index(min(even))] / min(odd)


def grounding_table(results: list[dict]) -> str:
    """Per workload: traced vs predicted current time (before/after calibration), claimed vs measured speed-up
    of the best change, the verdict; and the issue's targets."""
    head = ("| workload | dataset | traced current (s) | predicted, model (s) | predicted, calibrated (s) "
            "| measured current (s) | best change | claimed | measured | verdict | regret | floor |\n"
            "|---|---|---|---|---|---|---|---|---|---|---|---|")
    lines = [head]
    ok = [r for r in results if "error" not in r and "verdict" in r]
    for r in ok:
        lines.append(f"| {r['workload']} | {r['dataset']} | {r['traced_current_seconds']:.3g} | "
                     f"{r['predicted_current_model_seconds']:.3g} | {r['predicted_current_seconds']:.3g} | "
                     f"{r['measured_current_seconds']:.3g} | {r['best_change']} | {r['claimed_speedup']:.2f}x | "
                     f"{r['measured_speedup']:.2f}x | {r['verdict']}"
                     + (f" ({r['tie_rule']})" if r.get("tie_rule") else "") + f" | {r['regret']:.2f} | "
                     f"{r['floor']:.2f} |")
    if ok:
        def ratio(a, b):
            return max(a, b) / min(a, b)

        before = [ratio(r["predicted_current_model_seconds"], r["traced_current_seconds"]) for r in ok]
        after = [ratio(r["predicted_current_seconds"], r["traced_current_seconds"]) for r in ok]
        claim = [ratio(r["claimed_speedup"], r["measured_speedup"]) for r in ok]
        small = [r for r in ok if r["measured_speedup"] < 1.1]
        regrets = [r["regret"] for r in ok]
        lines.append("")
        lines.append(f"predicted / traced current time (max/min ratio): median {statistics.median(before):.2f} "
                     f"before calibration, {statistics.median(after):.2f} after (target <= 1.25)")
        lines.append(f"claimed / measured speed-up of the best change (max/min ratio): median "
                     f"{statistics.median(claim):.2f}, worst {max(claim):.2f} (target median <= 1.3)")
        lines.append(f"measured gain < 1.1x: {len(small)} workloads, {sum(r['verdict'] == 'keep' for r in small)} "
                     "of them say keep (target: all)")
        lines.append(f"regret: median {statistics.median(regrets):.2f}, worst {max(regrets):.2f} "
                     "(target median <= 1.05, worst <= 1.3)")
        floors = [r["floor"] for r in ok]
        lines.append(f"measurement floor (regret of the even replays' fastest layout by the odd replays): "
                     f"median {statistics.median(floors):.2f}, worst {max(floors):.2f}")
    return "\n".join(lines)


def table(results: list[dict]) -> str:
    head = ("| workload | pattern | recommended | best measured | regret (median) | regret (min) "
            "| vs h5py default | vs h5py chunks=True | vs zarr default | vs current |\n"
            "|---|---|---|---|---|---|---|---|---|---|")
    lines = [head]

    def speed(r, key):
        x = r.get(f"speedup_vs_{key}")
        return "-" if x is None else (">" if r.get(f"{key}_timed_out") else "") + f"{x:.2f}x"

    for r in results:
        if "error" in r:
            lines.append(f"| {r['workload']} | failed: {r['error']} | | | | | | | | |")
            continue
        lines.append(f"| {r['workload']} | {r['pattern']} | {r['recommended']} | {r['best_measured']} | "
                     f"{r['regret']:.2f} | {r['regret_min']:.2f} | {speed(r, 'h5py_default')} | "
                     f"{speed(r, 'h5py_auto')} | "
                     f"{speed(r, 'zarr_default')} "
                     f"| {r['speedup_vs_current']:.2f}x |")
    ok = [r for r in results if "error" not in r]
    if ok:
        regrets = [r["regret"] for r in ok]
        lines.append("")
        mins = [r["regret_min"] for r in ok]
        lines.append(f"regret (median replay): median {statistics.median(regrets):.2f}, worst {max(regrets):.2f} "
                     f"(target <= 1.05 median, <= 1.3 worst); recommendation measured fastest in "
                     f"{sum(r['rec_measured_rank'] == 1 for r in ok)}/{len(ok)} workloads")
        lines.append(f"regret (fastest replay): median {statistics.median(mins):.2f}, worst {max(mins):.2f}; "
                     f"regret <= 1.10 in {sum(x <= 1.10 for x in regrets)}/{len(ok)}, "
                     f"<= 1.5 in {sum(x <= 1.5 for x in regrets)}/{len(ok)} workloads")
        for key, what in (("h5py_default", "h5py's default layout"),
                          ("h5py_auto", "h5py's chunks=True (auto chunks)"), ("zarr_default", "zarr's default"),
                          ("current", "the layout the program used")):
            x = [r[f"speedup_vs_{key}"] for r in ok if r.get(f"speedup_vs_{key}")]
            if x:
                lines.append(f"speed-up over {what}: median {statistics.median(x):.2f}x, "
                             f"min {min(x):.2f}x, max {max(x):.2f}x")
    return "\n".join(lines)


def details(results: list[dict]) -> str:
    """Per workload, every measured layout: predicted and measured seconds (all replays)."""
    lines = []
    for w in results:
        if "error" in w:
            lines.append(f"{w['workload']}: {w['error']}")
            continue
        lines.append(f"{w['workload']}: {w['pattern']}")
        for row in w["rows"]:
            pred = "-" if row["predicted_seconds"] is None else f"{row['predicted_seconds']:.3f}"
            model = w.get("model_seconds", {}).get(row["label"])
            pred += "" if model is None else f" (model {model:.3f})"
            runs = ", ".join(f"{x:.3f}" for x in row["measured_all"]) + (" (stopped)" if row["timed_out"] else "")
            lines.append(f"  {row['label']:<13} {w['labels'][row['label']]:<44} predicted {pred:>24} s  "
                         f"measured {row['measured_seconds']:.3f} s [{runs}]")
    return "\n".join(lines)


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--quick", action="store_true", help="half-size workloads, 7 replays per layout, 20 s deadline")
    ap.add_argument("--repeat", type=int, help="replays per layout (default 11, --quick 7)")
    ap.add_argument("--deadline", type=float, help="seconds after which a replay is stopped (default 60, --quick 20)")
    ap.add_argument("--scale", type=float, help="workload size factor (default 1, --quick 0.5)")
    ap.add_argument("--top", type=int, default=5, help="recommended layouts measured per workload")
    ap.add_argument("--profile", help="system profile file (default: this machine's, else the shipped one)")
    ap.add_argument("--only", nargs="*", help="workload name prefixes (e.g. w01 w08)")
    ap.add_argument("--workdir", default="/tmp/ioadvisor-regret", help="scratch directory (removed per workload)")
    ap.add_argument("--out", help="raw results JSON (default benchmarks/results/regret-<date>.json)")
    ap.add_argument("--keep-traces", metavar="DIR", help="copy each workload's trace to DIR/<workload>.jsonl")
    ap.add_argument("--show", metavar="JSON", help="print the tables of an earlier run's raw results and exit")
    ap.add_argument("--real", action="store_true",
                    help="the realistic-size workloads (benchmarks/workloads/real/, benchmarks/validation/realsize.py): the "
                         "printed recipe applied and the unchanged program timed cold")
    args = ap.parse_args(argv)
    if args.real:
        from benchmarks.validation.realsize import main as real_main

        return real_main(args.only, scale=args.scale or 1.0, repeat=args.repeat or 3,
                         workdir=args.workdir.rstrip("/") + "-real", out=args.out)
    if args.show:
        report = json.loads(Path(args.show).read_text())
        for r in report["results"]:  # runs from before the floor was recorded: their replays give it
            if "rows" in r and "floor" not in r:
                r["floor"] = floor(r["rows"])
        print(table(report["results"]))
        print()
        print(grounding_table(report["results"]))
        print()
        print(details(report["results"]))
        print(f"\n{report['command']}  ({report['date']}, {report['total_seconds']:.0f} s)")
        return 0
    repeat = args.repeat or (7 if args.quick else 11)
    deadline = args.deadline or (20.0 if args.quick else 60.0)
    scale = args.scale or (0.5 if args.quick else 1.0)
    started = datetime.now(timezone.utc)
    results = []
    t0 = time.perf_counter()
    for w in workloads(args.only):
        wd = Path(args.workdir) / w.stem
        shutil.rmtree(wd, ignore_errors=True)
        wd.mkdir(parents=True)
        t = time.perf_counter()
        try:
            r = measure_workload(w, wd, scale=scale, repeat=repeat, top=args.top, deadline=deadline,
                                 profile=args.profile,
                                 keep=Path(args.keep_traces) if args.keep_traces else None)
        except Exception as exc:  # one broken workload must not hide the others' numbers
            r = {"workload": w.stem, "error": f"{type(exc).__name__}: {str(exc).splitlines()[0] if str(exc) else ''}"}
        finally:
            shutil.rmtree(wd, ignore_errors=True)
        r["wall_seconds"] = time.perf_counter() - t
        results.append(r)
        msg = r.get("error") or f"regret {r['regret']:.2f}, recommended {r['recommended']}"
        print(f"{w.stem}: {msg} ({r['wall_seconds']:.0f} s)", file=sys.stderr, flush=True)
    total = time.perf_counter() - t0
    load = os.getloadavg()
    cmd = "python -m benchmarks.validation.regret " + " ".join(argv if argv is not None else sys.argv[1:])
    report = {"command": cmd.strip(), "date": started.isoformat(timespec="seconds"), "repeat": repeat,
              "deadline": deadline, "budget": BUDGET,
              "scale": scale, "top": args.top, "total_seconds": total, "loadavg_end": load,
              "results": results}
    RESULTS.mkdir(exist_ok=True)
    out = Path(args.out) if args.out else RESULTS / f"regret-{started:%Y%m%dT%H%M%S}.json"
    out.write_text(json.dumps(report, indent=1, default=str))
    print(table(results))
    print()
    print(grounding_table(results))
    print(f"\n{cmd.strip()}  ({started:%Y-%m-%d %H:%M} UTC, {total:.0f} s, load average at end "
          f"{load[0]:.1f}; raw results {out})")
    return 0


if __name__ == "__main__":
    sys.exit(main())
