"""Gray-box vs sampling vs hybrid compression estimates against the real HDF5 filters on real fields.

For each field x codec (SZ3, SZ, ZFP) x relative bound (1e-2 .. 1e-5), with a user-like chunk shape:
- truth: the whole field written through the hdf5plugin filter into an HDF5 file with that chunk shape
  (stored bytes, median write and read seconds; ``sampling_estimator.truth``);
- gray-box: ``sample_blocks(field, F, chunks=chunks)`` + ``graybox_ratio`` + ``predict_time``;
- sampling: the black-box ``estimate(..., method="sampling")``;
- hybrid: the two combined by inverse-variance weighting of log ratio and log time (widths of the 95% CIs).
Missing values (NaN) are filled with the field mean first: the hdf5plugin SZ3 filter hangs or crashes on
NaN input and ZFP cannot hold NaN, so a user must fill them anyway.

Prints a per-case table and a summary per method; writes benchmarks/results/compression_validation*.json
and, with --plot, the estimated-vs-actual ratio figure.

Usage: python -m benchmarks.validation.compression_validation [--quick] [--fraction 0.01] [--codecs sz3,sz,zfp]
        [--bounds 1e-2,1e-3,1e-4,1e-5] [--fields a,b] [--plot docs/compression-validation.png]
"""
from __future__ import annotations

import argparse
import json
import math
import sys
import time
from pathlib import Path

import numpy as np

from benchmarks.helpers import fields
from benchmarks.validation.sampling_estimator import default_chunks  # (user-like chunk shapes)

from compression_model.codecs import get_codec  # noqa: E402
from compression_model.error_bound import ErrorBound  # noqa: E402
from compression_model.estimate import estimate  # noqa: E402
from compression_model.sampling_estimator import steady_allocator  # noqa: E402
from compression_model.graybox import MIN_SAMPLE_POINTS, graybox_ratio  # noqa: E402
from compression_model.sampling import sample_blocks  # noqa: E402
from compression_model.timemodel import predict_time  # noqa: E402

Z95 = 1.959964
QUICK_FIELDS = ["etopo5_topography", "navy_wind_u", "gcm_temperature_3d", "um_sea_ice_velocity"]
RESULTS = Path(__file__).parents[1] / "results"


def truth(field: np.ndarray, codec, chunks, repeats: int = 3) -> dict:
    """Whole field through the real HDF5 filter, as the sampling benchmark measures it: a real
    file, ``ds[...] = field`` + flush timed, read back timed; medians of ``repeats``."""
    import h5py

    path = Path("/tmp/compression-graybox") / "truth.h5"
    path.parent.mkdir(exist_ok=True)
    t_comp, t_dec = [], []
    for _ in range(repeats):
        with h5py.File(path, "w") as f:
            ds = f.create_dataset("x", shape=field.shape, dtype=field.dtype, chunks=chunks, **codec.hdf5_kwargs())
            t0 = time.perf_counter()
            ds[...] = field
            f.flush()
            t_comp.append(time.perf_counter() - t0)
            stored = ds.id.get_storage_size()
        with h5py.File(path, "r") as f:
            t0 = time.perf_counter()
            f["x"][...]
            t_dec.append(time.perf_counter() - t0)
    return {"ratio": field.nbytes / stored, "compress_s": float(np.median(t_comp)),
            "decompress_s": float(np.median(t_dec))}


def graybox_estimate(field, codec_name, abs_error, chunks, fraction, seed=0) -> dict:
    t0 = time.perf_counter()
    sample = sample_blocks(field, fraction, chunks=chunks, rng=seed, min_points=MIN_SAMPLE_POINTS)
    r = graybox_ratio(sample, codec_name, abs_error, chunks, rng=seed)
    t = predict_time(r.counts, codec_name)
    return {"ratio": r.ratio, "ratio_ci": list(r.ratio_ci), "compress_s": t.compress_s,
            "time_ci": list(t.compress_ci), "cost_s": time.perf_counter() - t0,
            "eta": r.counts.eta, "stages": t.stages}


def combine(x1, ci1, x2, ci2):
    """Inverse-variance combination in log space of two estimates with 95% intervals."""
    def log_sd(ci):
        return max((math.log(ci[1]) - math.log(ci[0])) / (2 * Z95), 1e-6)

    w1, w2 = log_sd(ci1) ** -2, log_sd(ci2) ** -2
    mu = (w1 * math.log(x1) + w2 * math.log(x2)) / (w1 + w2)
    sd = (w1 + w2) ** -0.5
    return math.exp(mu), [math.exp(mu - Z95 * sd), math.exp(mu + Z95 * sd)]


def summarize(rows, method):
    rs = [r for r in rows if method in r]
    if not rs:
        return {}
    re = np.array([abs(r[method]["ratio"] / r["true_ratio"] - 1) for r in rs]) * 100
    te = np.array([abs(r[method]["compress_s"] / r["true_compress_s"] - 1) for r in rs]) * 100
    cost = np.array([100 * r[method]["cost_s"] / r["true_compress_s"] for r in rs])
    return {
        "cases": len(rs), "ratio_mape_median": float(np.median(re)), "ratio_ape_max": float(re.max()),
        "ratio_cases_over_30pct": int((re > 30).sum()),
        "ratio_ci_coverage": float(np.mean([r[method]["ratio_ci"][0] <= r["true_ratio"] <= r[method]["ratio_ci"][1]
                                            for r in rs])),
        "time_ape_median": float(np.median(te)),
        "time_ci_coverage": float(np.mean([r[method]["time_ci"][0] <= r["true_compress_s"] <= r[method]["time_ci"][1]
                                           for r in rs])),
        "cost_pct_median": float(np.median(cost)), "cost_pct_max": float(cost.max()),
    }


def plot(rows, path):
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    names = list(dict.fromkeys(r["field"] for r in rows))
    codecs = list(dict.fromkeys(r["codec"] for r in rows))
    ncol = 4
    nrow = -(-len(names) // ncol)
    fig, axes = plt.subplots(nrow, ncol, figsize=(4 * ncol, 3.2 * nrow), squeeze=False)
    colors = dict(zip(codecs, ["tab:blue", "tab:orange", "tab:green", "tab:red"]))
    for ax, name in zip(axes.flat, names):
        for c in codecs:
            rs = sorted((r for r in rows if r["field"] == name and r["codec"] == c), key=lambda r: r["bound"])
            if not rs:
                continue
            b = [r["bound"] for r in rs]
            ax.plot(b, [r["true_ratio"] for r in rs], "o-", color=colors[c], label=f"{c} actual")
            ax.plot(b, [r["graybox"]["ratio"] for r in rs], "x--", color=colors[c], label=f"{c} gray-box")
            if "sampling" in rs[0]:
                ax.plot(b, [r["sampling"]["ratio"] for r in rs], "+:", color=colors[c], label=f"{c} sampling")
        ax.set_xscale("log")
        ax.set_yscale("log")
        ax.invert_xaxis()
        ax.set_title(f"{name} {tuple(rows[[r['field'] for r in rows].index(name)]['chunks'])}", fontsize=8)
        ax.set_xlabel("relative error bound", fontsize=7)
        ax.set_ylabel("ratio", fontsize=7)
        ax.tick_params(labelsize=6)
    for ax in list(axes.flat)[len(names):]:
        ax.axis("off")
    handles, labels = axes.flat[0].get_legend_handles_labels()
    fig.legend(handles, labels, loc="lower center", ncol=len(labels), fontsize=7)
    fig.suptitle("Estimated vs actual compression ratio (HDF5 filters, same chunks; 1% sample)", fontsize=10)
    fig.tight_layout(rect=(0, 0.04, 1, 0.97))
    fig.savefig(path, dpi=90)


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--quick", action="store_true")
    ap.add_argument("--fraction", type=float, default=0.01)
    ap.add_argument("--codecs", default="sz3,sz,zfp")
    ap.add_argument("--bounds", default="1e-2,1e-3,1e-4,1e-5")
    ap.add_argument("--fields", default="")
    ap.add_argument("--no-sampling", action="store_true", help="gray-box only (no black-box / hybrid)")
    ap.add_argument("--plot", type=Path)
    args = ap.parse_args(argv)
    steady_allocator()  # truths timed in the allocator state the estimator times in
    names = args.fields.split(",") if args.fields else (QUICK_FIELDS if args.quick else fields.field_names())
    codecs = args.codecs.split(",")
    bounds = [float(b) for b in args.bounds.split(",")]
    rows = []
    print(f"{'field':24s} {'codec':5s} {'bound':6s} {'true':>8s} {'gray':>8s} {'err%':>6s} {'samp':>8s} {'err%':>6s}"
          f" {'hyb':>8s} {'err%':>6s} {'t_true':>7s} {'t_gray':>7s} {'terr%':>6s} {'in95':>4s} {'cost%':>6s}")
    for name in names:
        raw = fields.load_field(name)
        nan_share = float(1 - np.isfinite(raw).mean())
        # Missing values are filled with the mean, as the advisor tells users to: the hdf5plugin SZ3
        # filter hangs or crashes on NaN (measured), and ZFP cannot hold them.
        field = fields.load_field(name, missing="mean")
        rng = float(field.max() - field.min())
        chunks = default_chunks(field.shape)
        for cname in codecs:
            for rel in bounds:
                eb = ErrorBound("rel", rel)
                codec = get_codec(cname, eb, rng)
                t = truth(field, codec, chunks)
                row = {"field": name, "shape": list(field.shape), "chunks": list(chunks), "codec": cname,
                       "bound": rel, "nan_share": nan_share,
                       **{f"true_{k}": v for k, v in t.items()}}
                row["graybox"] = graybox_estimate(field, cname, rel * rng, chunks, args.fraction)
                if not args.no_sampling:
                    # as a user calls the API: it resolves rel:X against the field's range itself
                    e = estimate(field, cname, eb, chunks, method="sampling", sample_fraction=args.fraction)
                    row["sampling"] = {"ratio": e.ratio, "ratio_ci": list(e.ratio_ci),
                                       "compress_s": e.compress_seconds, "time_ci": list(e.time_ci),
                                       "cost_s": e.cost_seconds}
                    g, s = row["graybox"], row["sampling"]
                    hr, hci = combine(g["ratio"], g["ratio_ci"], s["ratio"], s["ratio_ci"])
                    ht, htci = combine(g["compress_s"], g["time_ci"], s["compress_s"], s["time_ci"])
                    row["hybrid"] = {"ratio": hr, "ratio_ci": hci, "compress_s": ht, "time_ci": htci,
                                     "cost_s": g["cost_s"] + s["cost_s"]}
                rows.append(row)
                g = row["graybox"]
                err = lambda m: 100 * (row[m]["ratio"] / t["ratio"] - 1) if m in row else float("nan")  # noqa: E731
                val = lambda m: row[m]["ratio"] if m in row else float("nan")  # noqa: E731
                inside = g["time_ci"][0] <= t["compress_s"] <= g["time_ci"][1]
                print(f"{name:24s} {cname:5s} {rel:6.0e} {t['ratio']:8.2f} {g['ratio']:8.2f} {err('graybox'):6.1f}"
                      f" {val('sampling'):8.2f} {err('sampling'):6.1f} {val('hybrid'):8.2f} {err('hybrid'):6.1f}"
                      f" {t['compress_s']:7.3f} {g['compress_s']:7.3f}"
                      f" {100 * (g['compress_s'] / t['compress_s'] - 1):6.1f} {'y' if inside else 'n':>4s}"
                      f" {100 * g['cost_s'] / t['compress_s']:6.1f}", flush=True)
    summary = {m: summarize(rows, m) for m in ("graybox", "sampling", "hybrid")}
    summary["by_codec"] = {c: {m: summarize([r for r in rows if r["codec"] == c], m)
                               for m in ("graybox", "sampling", "hybrid")} for c in codecs}
    summary["fraction"] = args.fraction
    summary["date"] = time.strftime("%Y-%m-%d %H:%M UTC", time.gmtime())
    summary["command"] = "python -m benchmarks.validation.compression_validation " + " ".join(argv or sys.argv[1:])
    print(json.dumps({k: summary[k] for k in ("graybox", "sampling", "hybrid")}, indent=1))
    RESULTS.mkdir(exist_ok=True)
    out = RESULTS / ("compression_validation_quick.json" if args.quick else "compression_validation.json")
    out.write_text(json.dumps({"summary": summary, "rows": rows}, indent=1))
    print(f"wrote {out}")
    if args.plot:
        plot(rows, args.plot)
        print(f"wrote {args.plot}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
