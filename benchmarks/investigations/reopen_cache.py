"""A program that opens its file again for every batch (``with h5py.File(...)`` inside the loop), against the same
reads through one open: measured cold, and predicted by the model with the recorded opens and closes (each reopen
empties the chunk cache: instrumentation/opens.py) and without them (the model before they were recorded: one open
span per dataset).

The data: a (ROWS, 32) float32 field (smooth waves plus noise), gzip'd, in chunks of CHUNK_ROWS rows (4 MiB raw).
The program reads BATCHES consecutive batches of BATCH rows from the start, 16 batches per chunk, with a 16 MiB
chunk cache (a chunk fits): through one open each chunk is decoded once; reopened per batch, 16 times. Each
program is traced once (``advisor.trace``); the model's view of its trace is given with the recorded opens ("new")
and as one open span ("old"): the current layout's uncalibrated seconds (``iomodel.predict`` with this machine's
profile, and advise's ``model_seconds``, which knows the codec's speed), decoded bytes, the top term, and advise's
recommendation with its claimed (calibrated) seconds. Then the reopening program is timed unchanged on the
current layout and on each model's recommended layout (rewritten by ``advisor.verify``'s builder; a zarr
recommendation is read by opening the array per batch), and the one-open program on the current layout:
untraced, cold (pages evicted before each run: fsync + POSIX_FADV_DONTNEED), interleaved, ``--rounds`` rounds;
medians of the summed read calls (what the model predicts: the library calls, not the opens) and of the loop.

    python -m benchmarks.investigations.reopen_cache [--dir /tmp/reopen-cache] [--rows 1048576] [--batches 256]
        [--rounds 5] [--lock /work/wt/cpu.lock]
"""
from __future__ import annotations

import argparse
import contextlib
import fcntl
import json
import os
import statistics
import time
from pathlib import Path

import numpy as np

from iomodel.replay import DATASET_NAME, evict

COLS, CHUNK_ROWS, BATCH = 32, 32768, 2048
CACHE = 16 << 20


def prepare(path: Path, rows: int) -> None:
    import h5py

    if path.exists():
        return
    path.parent.mkdir(parents=True, exist_ok=True)
    rng = np.random.default_rng(0)
    with h5py.File(path, "w") as f:
        x = f.create_dataset("x", shape=(rows, COLS), dtype="f4", chunks=(CHUNK_ROWS, COLS), compression="gzip")
        for lo in range(0, rows, 8 * CHUNK_ROWS):
            n = min(8 * CHUNK_ROWS, rows - lo)
            t = np.arange(lo, lo + n, dtype="f8")[:, None] / 5000.0
            k = np.arange(COLS)[None, :]
            field = np.sin(t * (1 + k / 8)) + 0.3 * np.cos(3 * t + k) + 0.01 * rng.standard_normal((n, COLS))
            x[lo:lo + n] = field.astype("f4")


def _reader(path: Path):
    """``read(lo, hi)`` in a fresh open of ``path`` (h5py with the program's cache, or zarr), and the close."""
    if path.suffix == ".zarr":
        import zarr

        def zarr_read(lo, hi):
            x = zarr.open_array(str(path), mode="r")
            t = time.perf_counter()
            x[lo:hi]
            return time.perf_counter() - t

        return zarr_read
    import h5py

    name = "x" if path.name == "field.h5" else DATASET_NAME

    def h5_read(lo, hi):
        with h5py.File(path, "r", rdcc_nbytes=CACHE) as f:
            x = f[name]
            t = time.perf_counter()
            x[lo:hi]
            return time.perf_counter() - t

    return h5_read


def reopening(path: Path, batches: int) -> float:
    """The file opened per batch (``with h5py.File`` in the loop; a zarr array opened per batch); returns the
    seconds of the read calls."""
    read = _reader(path)
    return sum(read(k * BATCH, (k + 1) * BATCH) for k in range(batches))


def held(path: Path, batches: int) -> float:
    """One open for every batch."""
    import h5py

    spent = 0.0
    with h5py.File(path, "r", rdcc_nbytes=CACHE) as f:
        x = f["x"]
        for k in range(batches):
            t = time.perf_counter()
            x[k * BATCH:(k + 1) * BATCH]
            spent += time.perf_counter() - t
    return spent


PROGRAMS = {"reopen per batch": reopening, "one open": held}


def timed(program, path: Path, batches: int) -> tuple[float, float]:
    evict(path)
    t = time.perf_counter()
    calls = program(path, batches)
    return calls, time.perf_counter() - t


def traced(path: Path, batches: int, work: Path) -> dict:
    import advisor
    from instrumentation.tracefile import load_trace

    out = {}
    for name, program in PROGRAMS.items():
        tpath = work / f"{name.replace(' ', '-')}.parquet"
        with advisor.trace(tpath, overwrite=True):
            program(path, batches)
        out[name] = load_trace(tpath)
    return out


def as_one_open(trace):
    """The same trace as the model read it before opens were recorded: one open span per dataset."""
    from instrumentation.tracemodel import Trace

    return Trace(trace.headers, trace.datasets, trace.columns.with_epochs(np.zeros(trace.columns.rows)),
                 trace.resizes, source="one open")


def modelled(trace) -> dict:
    """The model's view of ``trace`` with and without its opens: uncalibrated seconds of the current layout (the
    profile's, ``iomodel.predict``; advise's, with the codec's measured speed), decoded bytes, the top term, and
    advise's recommendation with its claimed seconds."""
    from advisor.api import advise
    from iomodel import load_profile, predict
    from iomodel.layout import Layout
    from iomodel.predict import Workload, pick_dataset

    profile = load_profile()
    x = pick_dataset(trace, "x")
    layout = Layout.from_dataset(x)
    out = {"closes": sum(o.event == "close" for o in trace.opens), "accesses": trace.n_access}
    for label, tr in (("new", trace), ("old", as_one_open(trace))):
        d = advise(tr, jobs=1).datasets[0]
        terms = d.current.terms
        out[label] = {
            "profile_seconds": round(predict(tr, layout, profile, dataset=x).seconds, 4),
            "advise_model_seconds": round(d.current.model_seconds, 4),
            "decoded_MB": round(Workload.of_trace(tr, x).variables(layout, profile.page_cache_bytes)[0].s_decode
                                / 1e6, 1),
            "top_term": max(terms, key=terms.get),
            "traced_s": round(d.traced_seconds, 4),
            "recommendation": d.recommendation.candidate.label,
            "claimed_s": round(d.recommendation.seconds, 4),
            "_advice": d,
        }
    return out


def build_recommended(advice, trace, work: Path, label: str) -> Path:
    """The data rewritten as the advice recommends (``advisor.verify``'s builder)."""
    from advisor.verify import choice_of
    from advisor.verify_data import build_choice
    from iomodel.predict import pick_dataset
    import h5py

    x = pick_dataset(trace, "x")
    with h5py.File(work / "field.h5", "r") as f:
        data = f["x"][...]
    choice = choice_of(advice.recommendation, label, x, x.shape)
    return build_choice(choice, x, work / label, data, fill=True, shape=x.shape, resizable=False)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--dir", default="/tmp/reopen-cache")
    ap.add_argument("--rows", type=int, default=1 << 20)
    ap.add_argument("--batches", type=int, default=256)
    ap.add_argument("--rounds", type=int, default=5)
    ap.add_argument("--lock", default=None, help="a file to hold an exclusive flock on while timing")
    args = ap.parse_args()
    work = Path(args.dir)
    path = work / "field.h5"
    prepare(path, args.rows)
    batches = min(args.batches, args.rows // BATCH)
    traces = traced(path, batches, work)
    models = {name: modelled(tr) for name, tr in traces.items()}
    reopen = models["reopen per batch"]
    # the unchanged reopening program on each model's recommended layout
    layouts = {"current": path}
    for label in ("new", "old"):
        layouts[f"{label} model's recommendation"] = build_recommended(reopen[label].pop("_advice"),
                                                                      traces["reopen per batch"], work, label)
    models["one open"]["new"].pop("_advice")
    models["one open"]["old"].pop("_advice")
    runs = {**{f"reopen per batch, {k}": (reopening, p) for k, p in layouts.items()},
            "one open, current": (held, path)}
    measured = {name: [] for name in runs}
    with open(args.lock, "a") if args.lock else contextlib.nullcontext() as held_lock:
        if held_lock is not None:  # the timing only (the shared machine's timing lock: benchmarks' etiquette)
            fcntl.flock(held_lock, fcntl.LOCK_EX)
        load_before = os.getloadavg()
        for r in range(args.rounds):  # interleaved, the order reversed every other round
            for name in (list(runs) if r % 2 == 0 else list(reversed(runs))):
                program, p = runs[name]
                measured[name].append(timed(program, p, batches))
    result = {"batches": batches, "batch_rows": BATCH, "chunk_rows": CHUNK_ROWS, "rows": args.rows,
              "rounds": args.rounds, "load_before": [round(v, 2) for v in load_before],
              "load_after": [round(v, 2) for v in os.getloadavg()], "model": models,
              "measured_cold": {name: {"calls_s": round(statistics.median(c for c, _ in m), 4),
                                       "loop_s": round(statistics.median(w for _, w in m), 4)}
                                for name, m in measured.items()}}
    print(json.dumps(result, indent=1, default=str))


if __name__ == "__main__":
    main()
