"""Plot estimated vs actual compression ratio across error bounds, one panel per field.

Reads the JSON written by ``benchmarks/validation/sampling_estimator.py --out`` and writes a PNG.
Usage: python -m benchmarks.validation.plot_compression_estimates RESULTS.json docs/compression-estimates.png [--quick]
(--quick: only the first 4 fields.)
"""
from __future__ import annotations

import argparse
import json
import math
import sys
from pathlib import Path

COLORS = {"sz3": "tab:blue", "sz": "tab:green", "zfp": "tab:orange", "blosc-zstd": "tab:gray"}
MARKERS = {"auto": "o", "sampling": "D", "graybox": "s", "hybrid": "^"}


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("results", type=Path)
    ap.add_argument("png", type=Path)
    ap.add_argument("--quick", action="store_true")
    args = ap.parse_args(argv)
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    rows = [r for r in json.loads(args.results.read_text())["rows"] if r["bound"] is not None]
    names = list(dict.fromkeys(r["field"] for r in rows))[: 4 if args.quick else None]
    ncol = 4
    nrow = math.ceil(len(names) / ncol)
    fig, axes = plt.subplots(nrow, ncol, figsize=(4 * ncol, 3.2 * nrow), squeeze=False)
    for ax, name in zip(axes.flat, names):
        mine = [r for r in rows if r["field"] == name]
        for codec in dict.fromkeys(r["codec"] for r in mine):
            truth = sorted({(r["bound"], r["true_ratio"]) for r in mine if r["codec"] == codec})
            ax.plot([b for b, _ in truth], [t for _, t in truth], "-", color=COLORS.get(codec, "k"), lw=2,
                    label=f"{codec} actual")
            for method, marker in MARKERS.items():
                pts = [r for r in mine if r["codec"] == codec and r["method"] == method]
                if pts:
                    ax.errorbar([r["bound"] for r in pts], [r["est_ratio"] for r in pts],
                                yerr=[[r["est_ratio"] - r["ratio_ci"][0] for r in pts],
                                      [r["ratio_ci"][1] - r["est_ratio"] for r in pts]],
                                fmt=marker, color=COLORS.get(codec, "k"), ms=4, capsize=2, alpha=0.7,
                                mfc="none" if method != "auto" else None)
        ax.set_xscale("log")
        ax.set_yscale("log")
        ax.invert_xaxis()
        ax.set_title(name, fontsize=9)
        ax.set_xlabel("relative error bound", fontsize=8)
        ax.set_ylabel("ratio", fontsize=8)
        ax.tick_params(labelsize=7)
    for ax in list(axes.flat)[len(names):]:
        ax.axis("off")
    handles = [plt.Line2D([], [], color=c, lw=2, label=f"{k} actual (HDF5 filter)") for k, c in COLORS.items()]
    used = {r["method"] for r in rows}
    handles += [plt.Line2D([], [], color="k", marker=m, ls="none", label=f"{k} estimate, 95% CI")
                for k, m in MARKERS.items() if k in used]
    fig.legend(handles=handles, loc="lower center", ncol=4, fontsize=8)
    fig.tight_layout(rect=(0, 0.05, 1, 1))
    fig.savefig(args.png, dpi=110)
    print(f"wrote {args.png} ({len(names)} fields)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
