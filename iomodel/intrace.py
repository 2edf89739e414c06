"""In-trace calibration: the model's predictions for the recorded layout, fitted to the trace's own timings.

Every access record carries the measured duration of its library call (``dt``).
The profile's coefficients come from another run (another load, another page
cache state), so for the recorded layout the model can be off by a factor the
trace itself contradicts. ``calibrate_in_trace`` replays the trace's accesses
on their recorded layouts in groups (each dataset's accesses cut into
time-ordered segments; a segment's prediction is what it adds to the replay of
the accesses before it), so that every group has a predicted time per term and
a traced time, and fits per library

    traced_g ~ sum_k factor_k * predicted_term_{g,k}

- **per term** (non-negative least squares) when the terms that matter can be
  told apart across the groups: at least two, columns not collinear (datasets
  dominated by different terms, reads and writes), and the fit explains clearly
  more than one common factor does;
- else **one factor** for every term that matters in the recorded layout.

Either way the factors are then rescaled so that the calibrated prediction of
the whole trace equals its traced time. What the fit leaves unexplained (the
time-weighted spread of log(traced / calibrated) over the groups, as the error
of their weighted sum: 1.96 sd x sqrt(sum of squared weights)) becomes the
interval the calibrated predictions carry (``band``).

Terms of the storage and the OS (``SHARED_TERMS``) behave the same under both
libraries: their factors also apply to the library the trace did not use; the
library's own terms (calls, chunk handling, file opens, filters) stay
uncalibrated there.

The advisor ranks candidates with ``uniform``: the fit brings each dataset's
recorded layout onto its traced time, and that dataset's factor (calibrated
prediction of the recorded layout / the advisor's uncalibrated one) multiplies
every term of every candidate, HDF5 and Zarr alike. Factors fitted per term on one layout, applied
to other layouts, would re-rank them on what the recorded layout happened to
exercise (and favour the library whose own terms stayed as profiled).

A pure function of the trace and the profile: nothing is timed here.
"""
from __future__ import annotations

import math
from dataclasses import dataclass, field, replace
from typing import Callable, Collection, Sequence

import numpy as np

from instrumentation.columns import as_columns
from instrumentation.records import DatasetRecord
from instrumentation.tracefile import Trace

from .cost import TERMS
from .layout import Layout
from .predict import Workload
from .profile import SystemProfile

SEGMENTS = 8
"""Time-ordered segments per dataset and operation (fewer when there are fewer accesses)."""
SIGNIFICANT = 0.05
"""A term is fitted when it holds at least this share of the predicted time of the calibrating groups."""
MAX_CONDITION = 30.0
"""Column-normalised term matrices worse conditioned than this cannot tell their terms apart."""
PER_TERM_GAIN = 0.8
"""Per-term factors are kept only when their residual sum of squares is below this share of one factor's."""
MAX_RESOLUTION = 0.15
"""Near-ties are never wider than this, however noisy the trace's timings."""
SHARED_TERMS = ("t_memcpy", "t_rdisk", "t_wdisk", "t_cache")
"""Terms of the device, the page cache and memory copies: the same under HDF5 and Zarr."""
Z95 = 1.959964
UNIFORM_TERMS = tuple(TERMS) + ("t_compress", "t_decompress")
"""Every term of a candidate's cost, the compression model's included (``TraceCalibration.uniform``)."""
MIN_RESOLUTION = 0.10
"""Relative difference the calibrated model cannot resolve even when the fit leaves nothing unexplained."""


def traced_seconds(accesses) -> float:
    """Measured time of the calls: the time the slowest rank spent inside at least one call (the union of the
    calls' intervals: threads' overlapping calls, such as dask's reads waiting on HDF5's lock, count once).

    ``accesses``: AccessColumns or AccessRecords. A run of accesses (one thread's consecutive calls) is busy
    for its total duration within its span."""
    cols = as_columns(accesses)
    best = 0.0
    ranks = np.unique(cols.rank)
    for r in ranks:
        m = slice(None) if len(ranks) == 1 else cols.rank == r  # one rank: views, not copies of the columns
        b, busy, rep = cols.t0[m], cols.dt[m], cols.rep[m]
        e = b + cols.t_step[m] * (rep - 1) + busy / rep
        if not (b[1:] >= b[:-1]).all():  # a trace is mostly in time order already: no sort, no copies
            order = np.argsort(b, kind="stable")
            b, e, busy = b[order], e[order], busy[order]
        before = np.maximum.accumulate(np.concatenate([[-np.inf], e[:-1]]))  # latest end of the earlier calls
        best = max(best, float(np.minimum(np.clip(e - np.maximum(b, before), 0.0, None), busy).sum()))
    return best


@dataclass(frozen=True)
class TraceCalibration:
    """Factors per term that bring one library's predictions for the recorded layouts onto the traced times."""

    library: str
    method: str
    """``per-term``, ``one factor`` or ``none`` (nothing traced or predicted to fit)."""
    factors: dict = field(compare=False)
    """Term -> multiplier of the predicted seconds (terms not listed: 1)."""
    band: tuple[float, float]
    """95% band of traced / calibrated time of the whole run (what the fit leaves unexplained)."""
    traced_seconds: float
    predicted_seconds: float
    """Uncalibrated prediction of the calibrating groups (the whole trace of this library)."""
    n_groups: int
    borrowed: bool = False
    """True for a library the trace did not use: only SHARED_TERMS factors, taken from the traced library."""
    dataset_seconds: dict = field(default_factory=dict, compare=False)
    """Dataset id -> calibrated prediction of its recorded layout (what ``uniform`` scales onto)."""

    def scale(self, terms: dict[str, float]) -> dict[str, float]:
        """Calibrated seconds per term of a prediction for this library."""
        return {k: t * self.factors.get(k, 1.0) for k, t in terms.items()}

    @property
    def covers(self) -> bool:
        """True when the factors were fitted on this library's own traced calls."""
        return self.method != "none" and not self.borrowed

    def dataset_factor(self, ds_id: int, model_seconds: float) -> float:
        """The factor that brings ``model_seconds`` (the caller's uncalibrated prediction of a dataset's recorded
        layout) onto the fit's calibrated prediction of it (1 when unknown)."""
        target = self.dataset_seconds.get(ds_id)
        return target / model_seconds if target and model_seconds > 0 else 1.0

    def uniform(self, f: float) -> dict[str, "TraceCalibration"]:
        """The calibration every candidate of one dataset gets, HDF5 and Zarr alike: one factor ``f``
        (``dataset_factor``) on every term, the codec's included. The per-term fit explains the traced time;
        applied per term to other layouts it would re-rank them on factors fitted to one layout (and leave the
        other library's own terms as profiled), so the ranking stays the profile's and only the scale is the
        trace's. The other library keeps the profile's band (``covers`` is False for it)."""
        every = {k: f for k in UNIFORM_TERMS}
        return {lib: TraceCalibration(lib, f"one factor x{f:.3g} on every candidate", every,
                                      self.band if lib == self.library else (1.0, 1.0), self.traced_seconds,
                                      self.predicted_seconds, self.n_groups, borrowed=lib != self.library)
                for lib in ("hdf5", "zarr")}

    def borrow(self, library: str) -> "TraceCalibration":
        """The calibration another library gets from this one: the device and page-cache terms only."""
        shared = {k: v for k, v in self.factors.items() if k in SHARED_TERMS}
        return TraceCalibration(library, f"{self.library}'s {self.method}" if shared else "none", shared,
                                (1.0, 1.0), 0.0, 0.0, self.n_groups, borrowed=True)

    @property
    def resolution(self) -> float:
        """Relative time difference within which the calibrated model cannot rank two layouts."""
        lo, hi = self.band
        return min(MAX_RESOLUTION, max(MIN_RESOLUTION, hi - 1.0, 1.0 - lo))

    def describe(self) -> str:
        if self.method == "none":
            return f"{self.library}: not calibrated (no traced time to fit)"
        if self.borrowed:
            f = ", ".join(f"{k[2:]} x{v:.2g}" for k, v in sorted(self.factors.items()))
            return (f"{self.library}: not traced; device and page-cache terms calibrated as {self.method} ({f}), "
                    "its own terms as profiled")
        f = ", ".join(f"{k[2:]} x{v:.2g}" for k, v in sorted(self.factors.items()) if v != 1.0)
        return (f"{self.library}: predictions calibrated on the trace ({self.method}, {self.n_groups} groups): "
                f"{self.predicted_seconds:.3g} s predicted -> {self.traced_seconds:.3g} s traced ({f}); "
                f"unexplained 95% band x{self.band[0]:.2f}-x{self.band[1]:.2f}")

    def get_config(self) -> dict:
        return {"library": self.library, "method": self.method, "factors": dict(self.factors),
                "band": list(self.band), "traced_seconds": self.traced_seconds,
                "predicted_seconds": self.predicted_seconds, "n_groups": self.n_groups, "borrowed": self.borrowed,
                "dataset_seconds": {str(k): v for k, v in self.dataset_seconds.items()}}

    @classmethod
    def from_config(cls, c: dict) -> "TraceCalibration":
        return cls(c["library"], c["method"], {k: float(v) for k, v in c["factors"].items()},
                   tuple(float(x) for x in c["band"]), float(c["traced_seconds"]),
                   float(c["predicted_seconds"]), int(c["n_groups"]), bool(c.get("borrowed", False)),
                   {int(k): float(v) for k, v in (c.get("dataset_seconds") or {}).items()})


def _segments(accesses) -> list[int]:
    """End indices (access numbers) of up to SEGMENTS time-ordered segments of ``accesses`` (sorted by start)."""
    n = len(accesses)
    k = min(SEGMENTS, n)
    ends = np.linspace(0, n, k + 1).astype(int)[1:]
    return sorted(set(int(e) for e in ends if e > 0))


def fit(library: str, terms: np.ndarray, traced: np.ndarray, names: Sequence[str],
        whole_terms: np.ndarray, whole_traced: float) -> TraceCalibration:
    """Fit factors from per-group predicted terms (G x K) and traced seconds (G); see the module docstring.

    ``whole_terms`` (K) / ``whole_traced``: the prediction and traced time of the trace replayed whole (not in
    groups), which the calibrated prediction must reproduce.
    """
    names = list(names)
    whole_pred = float(whole_terms.sum())
    if whole_pred <= 0 or whole_traced <= 0 or len(traced) == 0:
        return TraceCalibration(library, "none", {}, (1.0, 1.0), whole_traced, whole_pred, len(traced))
    share = terms.sum(0) / max(terms.sum(), 1e-300)
    big = [k for k in range(len(names)) if share[k] >= SIGNIFICANT]
    pred = terms.sum(1)
    scalar = float(traced @ pred / max(pred @ pred, 1e-300))
    factors = {names[k]: scalar for k in big}
    method = "one factor"
    if len(big) >= 2 and len(traced) >= len(big) + 2:
        from scipy.optimize import nnls

        a = terms[:, big]
        norm = np.linalg.norm(a, axis=0)
        if np.all(norm > 0) and np.linalg.cond(a / norm) < MAX_CONDITION:
            s, _ = nnls(a, traced)
            rss = float(np.sum((a @ s - traced) ** 2))
            rss1 = float(np.sum((scalar * pred - traced) ** 2))
            if np.all(s > 0) and rss < PER_TERM_GAIN * rss1:
                factors = {names[k]: float(v) for k, v in zip(big, s)}
                method = "per-term"
    # the whole trace's calibrated prediction equals its traced time
    fitted = sum(factors.get(n, 1.0) * whole_terms[i] for i, n in enumerate(names))
    fixed = sum(whole_terms[i] for i, n in enumerate(names) if n not in factors)
    moving = fitted - fixed
    if moving > 0 and whole_traced > fixed:
        c = (whole_traced - fixed) / moving
    else:  # the terms that matter are not enough to explain the traced time: scale every term
        factors = {n: 1.0 for n in names}
        c = whole_traced / whole_pred
    factors = {n: f * c for n, f in factors.items()}
    calibrated = np.array([sum(factors.get(n, 1.0) * row[i] for i, n in enumerate(names)) for row in terms])
    ok = (calibrated > 0) & (traced > 0)
    if ok.sum() >= 2:
        # the groups' log residuals, weighted by traced time; the whole run's time is their weighted sum, so
        # its error shrinks with the effective number of groups
        r = np.log(traced[ok] / calibrated[ok])
        w = traced[ok] / traced[ok].sum()
        sd = math.sqrt(float(np.sum(w * (r - np.sum(w * r)) ** 2)))
        half = Z95 * sd * math.sqrt(float(np.sum(w ** 2)))
        band = (math.exp(-half), math.exp(half))
    else:
        band = (1.0, 1.0)
    return TraceCalibration(library, method, factors, band, whole_traced, whole_pred, len(traced))


def calibrate_in_trace(trace: Trace, profile: SystemProfile, procs: int | None = None,
                       library: str | None = None, datasets: Collection[int] | None = None,
                       layout_of: Callable[[DatasetRecord], Layout] = Layout.from_dataset,
                       ) -> dict[str, TraceCalibration]:
    """A TraceCalibration for HDF5 and Zarr: fitted for the libraries the trace used, borrowed for the other
    (only ``library``'s own fit when named), on the ``datasets`` (ids) given, else on all: the caller leaves
    out those the models cannot replay (scalars, variable-length data). ``layout_of``: the recorded layout of
    a dataset as the caller models it (the advisor's current candidate), so that its calibrated prediction
    meets the traced time."""
    procs = procs if procs is not None else trace.nprocs
    names = list(TERMS)
    rows: dict[str, tuple[list, list, list, list]] = {}
    whole: dict[str, dict[int, np.ndarray]] = {}
    for ds_id in np.unique(trace.columns.ds).tolist():
        accs = trace.columns_of(ds_id)
        ds = trace.datasets[ds_id]
        if library is not None and ds.library != library or datasets is not None and ds_id not in datasets:
            continue
        shape = trace.extent(ds_id)
        layout = layout_of(ds).with_shape(shape)
        g_terms, g_traced, w_terms, w_traced = rows.setdefault(ds.library, ([], [], [], []))
        if (np.diff(accs.t0) < 0).any():
            accs = accs.take(np.argsort(accs.t0, kind="stable"))  # in time order (a run: by its first access)
        # a segment's prediction is what it adds to the replay of everything before it: the chunk cache and
        # the page cache carry over as they did in the run
        before, start = np.zeros(len(names)), 0
        ends = _segments(accs)
        for end, p in zip(ends, Workload(ds, accs, shape, procs).predict_prefixes(layout, profile, ends)):
            upto = np.array([p.terms.get(n, 0.0) for n in names])
            g_terms.append(np.maximum(upto - before, 0.0))
            g_traced.append(traced_seconds(accs.window(start, end)))
            before, start = upto, end
        w_terms.append(before)
        w_traced.append(traced_seconds(accs))
        whole.setdefault(ds.library, {})[ds_id] = before
    out = {}
    for lib, (g_terms, g_traced, w_terms, w_traced) in rows.items():
        cal = fit(lib, np.asarray(g_terms, float), np.asarray(g_traced, float), names,
                  np.asarray(w_terms, float).sum(0), float(np.sum(w_traced)))
        per_ds = {ds_id: float(sum(cal.factors.get(n, 1.0) * t[i] for i, n in enumerate(names)))
                  for ds_id, t in whole[lib].items()}
        out[lib] = replace(cal, dataset_seconds=per_ds)
    if out and library is None:
        # the other library borrows the device terms of the library with the most traced time
        donor = max(out.values(), key=lambda c: c.traced_seconds)
        for lib in ("hdf5", "zarr"):
            out.setdefault(lib, donor.borrow(lib))
    return out


__all__ = ["SHARED_TERMS", "UNIFORM_TERMS", "TraceCalibration", "calibrate_in_trace", "fit", "traced_seconds"]
