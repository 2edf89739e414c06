"""Compression estimates through the CLI a user runs, against the real HDF5 filters on real fields.

For each real field (``benchmarks/helpers/fields.py``; run ``benchmarks/helpers/fetch_data.py`` first), missing values
filled with the field's mean (the hdf5plugin SZ3 filter hangs on NaN and ZFP cannot hold it: the CLI refuses
both on such data, so a user fills them first), written into an HDF5 file with a user-like chunk shape:

- estimate: ``ioadvisor compression FILE:/field --compressor sz3,zfp --error-bound rel:... --json`` as a
  subprocess (the user's path: it resolves rel:X against the range it finds itself, over the whole field);
- truth: the whole field written through the hdf5plugin filter with that chunk shape and the bound
  resolved against the whole field's valid range (``sampling_estimator.truth``), where the CLI found the
  codec safe for the data (a codec it refuses, e.g. ZFP on NaN, has no truth to compare);
- the range a 1% sample sees (what the CLI used before it scanned the whole field), for comparison.

Prints one row per (field, codec, bound) and a summary; raw rows to benchmarks/results/compression_cli.json.

    python -m benchmarks.validation.compression_cli [--fields a,b] [--codecs sz3,zfp] [--bounds 1e-2,1e-3,1e-4]
"""
from __future__ import annotations

import argparse
import json
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from benchmarks.helpers import fields
from benchmarks.validation.sampling_estimator import default_chunks, truth

from compression_model.codecs import get_codec  # noqa: E402
from compression_model.error_bound import ErrorBound  # noqa: E402
from compression_model.safety import scan  # noqa: E402
from compression_model.sampling import sample_blocks  # noqa: E402

RESULTS = Path(__file__).parents[1] / "results"
BIN = Path(sys.executable).parent


def cli_rows(path: Path, codecs: list[str], bounds: list[float]) -> list[dict]:
    cmd = [str(BIN / "ioadvisor"), "compression", f"{path}:/field", "--compressor", ",".join(codecs),
           *[a for b in bounds for a in ("--error-bound", f"rel:{b:g}")], "--json"]
    proc = subprocess.run(cmd, capture_output=True, text=True)
    if proc.returncode != 0:
        raise RuntimeError(proc.stderr.strip().splitlines()[-1] if proc.stderr.strip() else "failed")
    return json.loads(proc.stdout)


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--fields", default="")
    ap.add_argument("--codecs", default="sz3,zfp")
    ap.add_argument("--bounds", default="1e-2,1e-3,1e-4")
    ap.add_argument("--out", type=Path, default=RESULTS / "compression_cli.json")
    args = ap.parse_args(argv)
    import h5py

    names = args.fields.split(",") if args.fields else fields.field_names()
    codecs, bounds = args.codecs.split(","), [float(b) for b in args.bounds.split(",")]
    rows = []
    started = time.strftime("%Y-%m-%d %H:%M UTC", time.gmtime())
    print(f"{'field':26s} {'codec':5s} {'bound':6s} {'range':>10s} {'sample rng':>10s} {'true':>8s} {'cli':>8s}"
          f" {'err%':>6s} {'95% CI':>17s} {'cli s':>6s}")
    with tempfile.TemporaryDirectory(prefix="ioadvisor-cmp-") as tmp:
        for name in names:
            try:
                field = fields.load_field(name, missing="mean")
            except (OSError, ValueError) as exc:
                print(f"{name}: skipped ({exc})", file=sys.stderr)
                continue
            chunks = default_chunks(field.shape)
            path = Path(tmp) / f"{name}.h5"
            with h5py.File(path, "w") as f:
                f.create_dataset("field", data=field, chunks=chunks)
            whole = scan(field)
            sample = scan(sample_blocks(field, 0.01, rng=0).blocks)
            t0 = time.perf_counter()
            try:
                est = cli_rows(path, codecs, bounds)
            except RuntimeError as exc:
                print(f"{name}: CLI failed ({exc})", file=sys.stderr)
                continue
            cli_s = time.perf_counter() - t0
            for e in est:
                rel = e["error_bound"]["value"]
                row = {"field": name, "shape": list(field.shape), "chunks": list(chunks), "codec": e["compressor"],
                       "bound": rel, "range_true": whole.data_range, "range_sample": sample.data_range,
                       "range_cli": e["value_range"], "range_source": e["value_range_source"],
                       "est_ratio": e["ratio"], "ratio_ci": e["ratio_ci"], "problems": e["problems"],
                       "cli_seconds": cli_s}
                if not e["problems"]:
                    codec = get_codec(e["compressor"], ErrorBound("rel", rel), whole.data_range)
                    t = truth(field, codec, chunks)
                    row["true_ratio"] = t["ratio"]
                    row["ratio_err"] = e["ratio"] / t["ratio"] - 1
                    row["covered"] = e["ratio_ci"][0] <= t["ratio"] <= e["ratio_ci"][1]
                rows.append(row)
                tr = row.get("true_ratio")
                print(f"{name:26s} {e['compressor']:5s} {rel:6.0e} {row['range_cli']:10.4g} "
                      f"{row['range_sample']:10.4g} {tr if tr else float('nan'):8.2f} {e['ratio']:8.2f} "
                      f"{100 * row.get('ratio_err', float('nan')):6.1f} "
                      f"[{e['ratio_ci'][0]:7.2f},{e['ratio_ci'][1]:7.2f}] {cli_s:6.1f}"
                      + (f"  refused: {'; '.join(e['problems'])[:60]}" if e["problems"] else ""), flush=True)
    scored = [r for r in rows if "ratio_err" in r]
    summary = {"date": started, "command": "python -m benchmarks.validation.compression_cli " + " ".join(argv or sys.argv[1:]),
               "n": len(scored)}
    if scored:
        errs = [abs(r["ratio_err"]) for r in scored]
        summary.update(
            median_abs_ratio_err=statistics.median(errs), max_abs_ratio_err=max(errs),
            coverage=sum(r["covered"] for r in scored) / len(scored),
            by_codec={c: statistics.median([abs(r["ratio_err"]) for r in scored if r["codec"] == c])
                      for c in codecs if any(r["codec"] == c for r in scored)},
            range_whole_field=sum(r["range_source"] == "whole field" for r in rows) / len(rows),
            sample_range_short=[(r["field"], r["range_sample"] / r["range_true"]) for r in rows
                                if r["codec"] == codecs[0] and r["bound"] == bounds[0]
                                and r["range_sample"] < 0.99 * r["range_true"]])
        print(f"\n{len(scored)} estimates: median |ratio error| {100 * summary['median_abs_ratio_err']:.1f}%, "
              f"max {100 * summary['max_abs_ratio_err']:.0f}%, 95% CI covers the truth in "
              f"{100 * summary['coverage']:.0f}%; by codec: "
              + ", ".join(f"{c} {100 * v:.1f}%" for c, v in summary["by_codec"].items()))
        print("fields whose 1% sample sees less than 99% of the range: "
              + (", ".join(f"{f} ({100 * x:.0f}%)" for f, x in summary["sample_range_short"]) or "none"))
    RESULTS.mkdir(exist_ok=True)
    args.out.write_text(json.dumps({"summary": summary, "rows": rows}, indent=1, default=float))
    print(f"wrote {args.out}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
