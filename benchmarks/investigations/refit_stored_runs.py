"""Refit a profile's calibration on its own measured runs with the model's current counts.

A profile keeps the seconds of every calibration run (``"calibration"`` -> library -> ``runs``). When the model's
counting changes (issue 30: an uncached chunk's small reads keyed per page, not per 64 KiB window), the fitted
prices may have absorbed the old counts. This rebuilds the same cases (``calibration_cases`` of the quick grid,
the codec arrays built once for their stored size), counts them with the current model and fits them exactly as
``ioadvisor calibrate`` does (``features_of``, ``fit_library``, ``time_band``); the measured seconds stay. With an
unchanged model it reproduces the profile's coefficients. ``--write`` puts the refit into the profile (the
coefficients measured apart, ``s_ospill``, kept).

    python -m benchmarks.investigations.refit_stored_runs [--profile iomodel/profiles/default.json] [--write]
"""
from __future__ import annotations

import argparse
import json
import os
import shutil
import tempfile
from pathlib import Path

from iomodel import calibrate as cal
from iomodel import replay
from iomodel.profile import DEFAULT_PROFILE, SystemProfile

KEPT = ("s_ospill",)
"""Coefficients calibration measures apart (``probe.measure_output_spill``), not fitted on the runs."""


def _cases(grid: cal.Grid) -> list[cal.Case]:
    """The grid's cases with the compression ratio of their built arrays (as ``calibrate`` sets it)."""
    cases = cal.calibration_cases(grid)
    stored = {}
    with tempfile.TemporaryDirectory(prefix="refit-") as work:
        for c in cases:
            if c.codec and c.group not in stored:
                path = replay.build(c.spec(), Path(work) / str(len(stored)), data=cal.codec_data(c.shape, c.dtype))
                stored[c.group] = replay.stored_bytes(path)
                shutil.rmtree(Path(work) / str(len(stored) - 1), ignore_errors=True)
    return [c.with_stored(stored[c.group]) if c.codec else c for c in cases]


def refit(doc: dict, grid: cal.Grid = cal.QUICK) -> dict[str, cal.LibraryFit]:
    """The profile document's stored runs, counted by the current model and fitted, per library."""
    io = SystemProfile.from_config(doc["io"])
    cases = _cases(grid)
    fits = {}
    for lib, stored in doc["calibration"].items():
        idx = [i for i, c in enumerate(cases) if c.library == lib]
        runs = stored["runs"]
        labels = [cases[i].label for i in idx]
        if labels != [r[0] for r in runs]:
            raise SystemExit(f"{lib}: the profile's runs are not the {len(idx)} cases of this grid")
        rows = [cal.features_of(cases[i], io.page_cache_bytes, io.page_cache_curve, io.zarr_overlap,
                                io.readahead_bytes, io.device_request_bytes) for i in idx]
        fits[lib] = cal.fit_library(lib, rows, [r[1] for r in runs], [cases[i].pattern for i in idx], labels)
    return fits


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--profile", default=str(DEFAULT_PROFILE))
    ap.add_argument("--write", action="store_true", help="write the refit into the profile")
    a = ap.parse_args()
    doc = json.loads(Path(a.profile).read_text())
    fits = refit(doc)
    for lib, fit in fits.items():
        old, new = doc["calibration"][lib], fit.get_config()
        print(f"{lib}: R^2 {old['r2']:.4f} -> {new['r2']:.4f}, median |rel. error| "
              f"{old['median_rel_error']:.1%} -> {new['median_rel_error']:.1%}")
        for k, v in new["coefficients"].items():
            before = doc["io"]["coefficients"][lib].get(k, 0.0)
            if k not in KEPT and (v or before) and abs(v - before) > 1e-6 * max(abs(v), abs(before)):
                print(f"  {k:10s} {before:.4g} -> {v:.4g} ({v / before if before else float('inf'):.2f}x)")
        if a.write:
            coefs = doc["io"]["coefficients"][lib]
            coefs.update({k: v for k, v in fit.coefficients.items() if k not in KEPT})
            doc["io"]["time_band"][lib] = list(cal.time_band(fit))
            doc["calibration"][lib] = new
    if a.write:
        tmp = Path(a.profile + ".tmp")
        tmp.write_text(json.dumps(doc, indent=1, sort_keys=False) + "\n")
        os.replace(tmp, a.profile)
        print(f"wrote {a.profile}")


if __name__ == "__main__":
    main()
