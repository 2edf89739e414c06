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

on the terms that matter (at least SIGNIFICANT of the predicted time): first one
common factor, then per term (non-negative least squares) with each term's
standard error from the residuals; groups that stalled (a call of milliseconds among calls of microseconds)
are left out of it, and terms that come in one proportion in every group are fitted as one
(``iomodel.robustfit``). Each per-term factor is shrunk toward its anchor by its
uncertainty (precision weighting in log units against the profile's own band, else PRIOR_SPREAD): the
common factor, or, when a term of the mix is priced more crudely than the rest (TERM_PRIOR), the term's
share of the common excess by the priors (``_by_prior``: the codec takes it first). Terms the groups tell
apart (the cold start against the warm rest, cache misses against hits, reads against writes) keep their
own factor; terms that always come in one mix end at their anchor. The factors are
then rescaled so that the calibrated prediction of the whole trace equals its
traced time. What the fit leaves unexplained (the time-weighted spread of
log(traced / calibrated) over the groups, as the error of their weighted sum:
1.96 sd x sqrt(sum of squared weights)) is the band of the recorded layout.

The advisor applies the factors term by term to every candidate
(``for_dataset``): a term the trace exercised takes its fitted factor, a term it
never exercised keeps the profile's coefficient. Terms of the storage and the OS
(``SHARED_TERMS``) behave the same under both libraries and carry over to the
library the trace did not use; that library's own terms stay as profiled. A
candidate's interval (``interval``) is the band widened by how far its mix of
terms departs from the recorded layout's, each term weighted by its factor's
uncertainty (a term the trace never exercised: the profile's own, ``prior``).

A pure function of the trace and the profile: nothing is timed here.
"""
from __future__ import annotations

import math
from dataclasses import dataclass, field, replace
from typing import Callable, Collection, Mapping, Sequence

import numpy as np

from instrumentation import settings
from instrumentation.columns import as_columns
from instrumentation.records import DatasetRecord
from instrumentation.tracefile import Trace

from .cost import PRICED, TERMS
from .layout import Layout
from .predict import Workload
from .profile import SystemProfile
from .robustfit import MAX_CONDITION, entangled, unstalled

SEGMENTS = 32
"""Time-ordered segments per dataset (fewer when there are fewer accesses or runs: a segment ends where a folded
run ends): enough groups for the terms' mix to vary (the cold start against the warm rest, cache misses against
hits)."""
SIGNIFICANT = 0.05
"""A term is fitted when it holds at least this share of the predicted time of the calibrating groups."""
MAX_RESOLUTION = 0.15
"""Near-ties are never wider than this, however noisy the trace's timings."""
SHARED_TERMS = ("t_memcpy", "t_rdisk", "t_wdisk", "t_cache")
"""Terms of the device, the page cache and memory copies: the same under HDF5 and Zarr."""
CODEC_TERMS = ("t_compress", "t_decompress")
"""The codec's seconds as the advisor prices them (the compression model's estimate), calibrated by t_codec."""
Z95 = 1.959964
PRIOR_SPREAD = math.log(2.0)
"""Prior standard deviation of log(term factor / common factor) when the profile carries no band of its own: how
far apart the model's terms can plausibly be wrong. With a band (``SystemProfile.band``: how far the profile's
predictions stray on this machine) that band's standard deviation is the prior; a fitted factor is shrunk
toward the common one by its standard error against it."""
TERM_PRIOR = {"t_codec": math.log(8.0)}
"""Prior standard deviation of log(term factor) of terms priced more crudely than the profile's band says: the
I/O model's t_codec has one coefficient for every filter, and gzip decodes 5-20x slower than lz4 (regret's r02:
3000 small reads of gzip'd chunks, t_codec 26x under the traced time). When the segments cannot tell terms apart
the traced time is shared out by these priors, not as one factor on every term (which put x24 on r02's per-call
cost and ranked every HDF5 layout behind Zarr)."""

MIN_FACTOR = 0.05
"""A term factor the non-negative fit sets to (near) zero counts as this share of the common factor."""
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
    """Dataset id -> calibrated prediction of its recorded layout (what ``for_dataset`` scales onto)."""
    common: float = 1.0
    """The one factor that best explains the traced time alone (the fitted terms' shrinkage target, shared out
    by the terms' priors when one of them is priced crudely: ``fit``)."""
    spread: dict = field(default_factory=dict, compare=False)
    """Term -> standard deviation of log(factor) left after the fit (fitted terms only)."""
    mix: dict = field(default_factory=dict, compare=False)
    """Term -> share of the recorded layouts' calibrated time: the mix the fit pinned down as a whole."""
    prior: float = 0.0
    """Standard deviation of log(measured / predicted) of the profile itself (``SystemProfile.band``): the
    uncertainty of a term the trace did not exercise."""
    split: dict = field(default_factory=dict, compare=False)
    """Term -> {variable: multiplier of the term's factor}: how a term's departure from the common factor is
    shared out among its variables (``split_term``); the recorded layouts' mix of them gets 1."""

    def scale(self, terms: dict[str, float], within: Mapping[str, float] | None = None) -> dict[str, float]:
        """Calibrated seconds per term of a prediction for this library. ``within``: term -> multiplier of its
        factor for the prediction's own mix of the term's variables (``within_terms``; default 1)."""
        within = within or {}
        return {k: t * self.factors.get(k, 1.0) * within.get(k, 1.0) for k, t in terms.items()}

    def within_terms(self, features: Mapping[str, float], coefficient: Callable[[str], float]) -> dict[str, float]:
        """Term -> multiplier of its fitted factor for a prediction whose counted variables are ``features``
        (``coefficient``: the profile's seconds per unit of a variable for this library): its variables' seconds
        weighted by their ``split`` multipliers. The recorded layouts' own mix gets 1; a layout whose mix
        differs (reads of another size: per-request against per-byte seconds) moves off the term's factor."""
        out = {}
        for k, mult in self.split.items():
            parts = {v: coefficient(v) * features.get(v, 0.0) for v in TERMS[k]}
            total = sum(parts.values())
            if total > 0:
                out[k] = sum(t * mult.get(v, 1.0) for v, t in parts.items()) / total
        return out

    @property
    def covers(self) -> bool:
        """True when the factors were fitted on this library's own traced calls."""
        return self.method != "none" and not self.borrowed

    @property
    def fitted(self) -> frozenset:
        """The terms whose factor the trace's timings set (the codec's seconds with t_codec)."""
        return frozenset(self.factors) | frozenset(CODEC_TERMS if "t_codec" in self.factors else ())

    def dataset_factors(self, ds_id: int, terms: dict[str, float]) -> tuple[float, float]:
        """(f, f_codec): the factors on the fitted terms and on the codec's seconds (``CODEC_TERMS``) that bring
        ``terms`` (the caller's prediction of a dataset's recorded layout under ``for_dataset(1.0)``, its codec
        priced by the compression model's estimate, not by the I/O model's t_codec) onto the fit's calibrated
        prediction of it. When the recorded layout's codec was fitted, what the two disagree on is that
        estimate's error, so it goes to the codec alone (f = 1): spread over every fitted term, it moved the
        device terms that carry over to the other library (regret's w12: a zstd decode estimated 1.5x slow priced
        HDF5's device reads 1.3x fast, and HDF5 layouts were claimed 1.3x faster than they replay). Otherwise,
        or when the codec would be left less than MIN_FACTOR of its estimate, one factor on every fitted term;
        (1, 1) when unknown or when the other terms alone exceed it."""
        target = self.dataset_seconds.get(ds_id)
        fitted = self.fitted
        moving = sum(t for k, t in terms.items() if k in fitted)
        fixed = sum(t for k, t in terms.items() if k not in fitted)
        if not target or moving <= 0 or target <= fixed:
            return 1.0, 1.0
        codec = sum(t for k, t in terms.items() if k in fitted and k in CODEC_TERMS)
        left = target - fixed - (moving - codec)
        if codec > 0 and left >= MIN_FACTOR * codec:
            return 1.0, left / codec
        f = (target - fixed) / moving
        return f, f

    def for_dataset(self, f: float, f_codec: float | None = None) -> dict[str, "TraceCalibration"]:
        """The calibration every candidate of one dataset gets, HDF5 and Zarr: each term the trace exercised
        takes its fitted factor times ``f``, the codec's seconds the fitted t_codec factor times ``f_codec``
        (default ``f``; ``dataset_factors``: this dataset's recorded layout onto its fitted time), every other
        term (and the other library's own terms, its codecs' too: HDF5's filter pipeline is not numcodecs') keeps
        the profile's coefficient, or the estimate."""
        own = {k: self.factors[k] * f for k in self.factors}
        if "t_codec" in self.factors:
            codec = self.factors["t_codec"] * (f if f_codec is None else f_codec)
            own.update(dict.fromkeys(CODEC_TERMS, codec))
        other = {k: v for k, v in own.items() if k in SHARED_TERMS}
        out = {}
        for lib in ("hdf5", "zarr"):
            mine = lib == self.library
            out[lib] = TraceCalibration(
                lib, f"{self.method} x{f:.3g} for this dataset" if mine else f"{self.library}'s device terms",
                own if mine else other, self.band if mine else (1.0, 1.0), self.traced_seconds,
                self.predicted_seconds, self.n_groups, borrowed=not mine, common=self.common * f,
                spread=self.spread if mine else {k: v for k, v in self.spread.items() if k in SHARED_TERMS},
                mix=self.mix, prior=self.prior,
                split=self.split if mine else {k: v for k, v in self.split.items() if k in SHARED_TERMS})
        return out

    def interval(self, terms: dict[str, float], same_path: bool = True,
                 within: Mapping[str, float] | None = None) -> tuple[float, float]:
        """95% band of a calibrated prediction made of ``terms`` (calibrated seconds per term): the fit's
        unexplained band, widened by how far the prediction's mix of terms departs from the recorded layouts'
        (``mix``), each term weighted by the uncertainty of its factor (``spread``; a term the trace did not
        exercise, or could not pin down, by the profile's own: ``prior``). The recorded layout keeps the band.
        ``same_path`` False: the layout's calls take another code path of the library than the recorded one
        (``advisor.choice.storage_path``), whose own terms the trace never timed: each of them (all but
        SHARED_TERMS) adds its whole share at the prior, an error of its own on top of the factor's. ``within``
        (``within_terms``): the share of each term moved by the split of its factor among its variables, which
        the priors set, not the trace, counts whole as an error of its own."""
        total = sum(terms.values())
        lo, hi = self.band
        if total <= 0 or self.method == "none":
            return lo, hi
        # the terms' factor errors taken as independent: what the prediction moved into or out of each term
        moved = sum(((terms.get(k, 0.0) / total - self.mix.get(k, 0.0))
                     * min(self.spread.get(k, self.prior), self.prior)) ** 2 for k in set(terms) | set(self.mix))
        if not same_path:
            moved += sum((t / total * self.prior) ** 2 for k, t in terms.items() if k not in SHARED_TERMS)
        moved += sum((terms.get(k, 0.0) / total * math.log(m)) ** 2 for k, m in (within or {}).items() if m > 0)
        moved = math.sqrt(moved)
        half = math.hypot(math.log(hi / lo) / 2, Z95 * moved)
        return math.exp(-half), math.exp(half)

    def term_sd(self, term: str) -> float:
        """Standard deviation of log(factor) of one term's calibrated seconds: what the fit left of a fitted
        term's (``spread``), else the profile's own (``prior``; PRIOR_SPREAD when the profile has no band)."""
        prior = self.prior or PRIOR_SPREAD
        return min(self.spread.get(term, prior), prior)

    def borrow(self, library: str) -> "TraceCalibration":
        """The calibration another library gets from this one: the device and page-cache terms only."""
        shared = {k: v for k, v in self.factors.items() if k in SHARED_TERMS}
        return TraceCalibration(library, f"{self.library}'s {self.method}" if shared else "none", shared,
                                (1.0, 1.0), 0.0, 0.0, self.n_groups, borrowed=True, common=self.common,
                                spread={k: v for k, v in self.spread.items() if k in SHARED_TERMS},
                                split={k: v for k, v in self.split.items() if k in SHARED_TERMS})

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
        split = ""
        if self.split:
            split = (f"; the factor of {', '.join(k[2:] for k in sorted(self.split))} shared out by its variables' "
                     "seconds (the trace timed it in one mix of them, such as per request against per byte), so a "
                     "layout with another mix moves off it, and its interval widens by as much")
        return (f"{self.library}: predictions calibrated on the trace ({self.method}, {self.n_groups} groups): "
                f"{self.predicted_seconds:.3g} s predicted -> {self.traced_seconds:.3g} s traced ({f}); "
                f"unexplained 95% band x{self.band[0]:.2f}-x{self.band[1]:.2f}{split}")

    def get_config(self) -> dict:
        return {"library": self.library, "method": self.method, "factors": dict(self.factors),
                "band": list(self.band), "traced_seconds": self.traced_seconds,
                "predicted_seconds": self.predicted_seconds, "n_groups": self.n_groups, "borrowed": self.borrowed,
                "dataset_seconds": {str(k): v for k, v in self.dataset_seconds.items()},
                "common": self.common, "spread": dict(self.spread), "mix": dict(self.mix), "prior": self.prior,
                "split": {k: dict(v) for k, v in self.split.items()}}

    @classmethod
    def from_config(cls, c: dict) -> "TraceCalibration":
        return cls(c["library"], c["method"], {k: float(v) for k, v in c["factors"].items()},
                   tuple(float(x) for x in c["band"]), float(c["traced_seconds"]),
                   float(c["predicted_seconds"]), int(c["n_groups"]), bool(c.get("borrowed", False)),
                   {int(k): float(v) for k, v in (c.get("dataset_seconds") or {}).items()},
                   float(c.get("common", 1.0)), {k: float(v) for k, v in (c.get("spread") or {}).items()},
                   {k: float(v) for k, v in (c.get("mix") or {}).items()}, float(c.get("prior", 0.0)),
                   {k: {v: float(x) for v, x in m.items()} for k, m in (c.get("split") or {}).items()})


def _segments(accesses) -> list[int]:
    """End indices (access numbers) of up to SEGMENTS time-ordered segments of ``accesses`` (sorted by start),
    each ending where a run ends: a folded run keeps only its total duration (docs/trace-format.md), so groups
    cut inside it would carry prorated times, equal to the microsecond, that any one term fits exactly."""
    runs = accesses.access_ends
    n = int(runs[-1]) if len(runs) else 0
    want = np.linspace(0, n, min(SEGMENTS, n) + 1)[1:]
    return sorted(set(int(e) for e in runs[np.searchsorted(runs, want)]))


def fit(library: str, terms: np.ndarray, traced: np.ndarray, names: Sequence[str],
        whole_terms: np.ndarray, whole_traced: float, prior: float = PRIOR_SPREAD) -> TraceCalibration:
    """Fit factors from per-group predicted terms (G x K) and traced seconds (G); see the module docstring.

    ``whole_terms`` (K) / ``whole_traced``: the prediction and traced time of the trace replayed whole (not in
    groups), which the calibrated prediction must reproduce. ``prior``: standard deviation of log(term factor /
    common factor) before the fit (PRIOR_SPREAD).
    """
    names = list(names)
    whole_pred = float(whole_terms.sum())
    if whole_pred <= 0 or whole_traced <= 0 or len(traced) == 0:
        return TraceCalibration(library, "none", {}, (1.0, 1.0), whole_traced, whole_pred, len(traced))
    share = terms.sum(0) / max(terms.sum(), 1e-300)
    big = [k for k in range(len(names)) if share[k] >= SIGNIFICANT]
    # stalls (single calls of milliseconds among calls of microseconds) are no term's cost: the fit leaves them
    # out, so that they neither pull the factors nor inflate the standard errors that decide which terms are
    # told apart (``unstalled``)
    keep = unstalled(terms[:, big], traced) if big else np.ones(len(traced), bool)
    terms_k, traced_k = terms[keep], traced[keep]
    pred = terms_k.sum(1)
    scalar = float(traced_k @ pred / max(pred @ pred, 1e-300))
    factors = {names[k]: scalar for k in big}
    spread = {names[k]: prior for k in big}
    method = "one factor"
    # what each term takes of the common factor before the groups tell them apart: the same for all, unless a term
    # is priced more crudely than the rest (TERM_PRIOR), which then takes the excess first (``_by_prior``)
    crude = len(big) >= 2 and scalar > 0 and any(names[k] in TERM_PRIOR for k in big)
    anchor = _by_prior([names[k] for k in big], share[big], scalar, prior) if crude else dict(factors)
    if len(big) >= 2 and len(traced_k) >= len(big) + 2 and scalar > 0:
        from iomodel.nnls import nnls

        a = terms_k[:, big]
        # terms the groups never vary apart (a chunk-cache miss's copy and its buffer allocation) are fitted as
        # one: their sum is what the traced times pin down, and the other terms are told apart regardless
        sets = entangled(a)  # column numbers of ``a``; the terms are ``big`` at them
        a = np.stack([a[:, js].sum(1) for js in sets], axis=1)
        norm = np.linalg.norm(a, axis=0)
        if np.all(norm > 0) and len(traced_k) >= len(sets) + 2:
            s, _ = nnls(a, traced_k)
            resid = a @ s - traced_k
            sigma2 = float(resid @ resid) / (len(traced_k) - len(sets))
            # the factors' standard errors: collinear terms (one mix in every group) get wide ones
            gram = (a / norm).T @ (a / norm)
            if np.linalg.cond(gram) < MAX_CONDITION:
                se = np.sqrt(np.clip(np.diag(sigma2 * np.linalg.inv(gram)), 0.0, None)) / norm
            else:
                se = np.full(len(sets), np.inf)
            told = 0
            for js, f, e in zip(sets, s, se):
                f = max(float(f), scalar * MIN_FACTOR)
                # shrunk toward its anchor by its standard error in log units (precision-weighted)
                w = prior ** 2 / (prior ** 2 + (e / f) ** 2) if e < np.inf else 0.0
                for k in (big[j] for j in js):
                    a = anchor[names[k]]
                    factors[names[k]] = a * math.exp(w * math.log(f / a))
                    # a term fitted with others keeps the prior: the trace timed their sum, not its own share
                    spread[names[k]] = (math.sqrt(1.0 / (1.0 / prior ** 2 + (f / e) ** 2)) if e > 0 else 0.0) \
                        if len(js) == 1 else prior
                told += w >= 0.5
            if told and len(sets) > 1:  # one set: the common factor, nothing told apart
                method = "per-term"
    if method == "one factor" and crude:
        factors = anchor
        method = "one mix, shared by the terms' priors"
    # the whole trace's calibrated prediction equals its traced time
    fitted = sum(factors.get(n, 1.0) * whole_terms[i] for i, n in enumerate(names))
    fixed = sum(whole_terms[i] for i, n in enumerate(names) if n not in factors)
    moving = fitted - fixed
    if moving > 0 and whole_traced > fixed:
        c = (whole_traced - fixed) / moving
    else:  # the terms that matter are not enough to explain the traced time: scale every term
        factors = {n: 1.0 for n in names}
        spread = {n: prior for n in names}
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
    return TraceCalibration(library, method, factors, band, whole_traced, whole_pred, len(traced),
                            common=scalar * c, spread=spread)


def _by_prior(names: Sequence[str], shares: np.ndarray, scalar: float, prior: float) -> dict[str, float]:
    """Factors of terms that come in one mix (shares of the prediction), their product with the mix ``scalar``
    times the prediction: the log factors of least prior-weighted size (``TERM_PRIOR``, else ``prior``), to first
    order x_k = lam * sd_k^2 * share_k, with lam found by bisection."""
    sd2 = np.array([TERM_PRIOR.get(n, prior) ** 2 for n in names])
    w = np.asarray(shares, float) / max(float(np.sum(shares)), 1e-300)
    target = scalar  # sum_k w_k exp(x_k) = scalar

    def total(lam):
        return float(np.sum(w * np.exp(np.clip(lam * sd2 * w, -50, 50))))

    lo, hi = (0.0, 1.0) if target >= 1 else (-1.0, 0.0)
    while (total(hi) < target if target >= 1 else total(lo) > target) and abs(hi - lo) < 1e6:
        if target >= 1:
            hi *= 2
        else:
            lo *= 2
    for _ in range(100):
        mid = (lo + hi) / 2
        if total(mid) < target:
            lo = mid
        else:
            hi = mid
    lam = (lo + hi) / 2
    return {n: float(math.exp(lam * s2 * wk)) for n, s2, wk in zip(names, sd2, w)}


def split_term(seconds: Mapping[str, float], deviation: float) -> dict[str, float]:
    """Multipliers of a term's factor per variable, from the variables' ``seconds`` in the recorded layouts and
    the term's fitted ``deviation`` (its factor: the profile's price is 1). The trace's groups time a term as a whole,
    in one mix of its variables (a program that reads whole gzip'd chunks: every device read ~400 KB, per-byte
    seconds 87% of t_rdisk); a candidate with another mix (reads of 32 KB: per-request seconds 68%) would take
    the deviation of a cost it barely has. So the deviation goes to each variable by its share, as ``_by_prior``
    shares a mix among terms (the log factors of least size, equal priors: x_v = lam * share_v), each then
    divided by the deviation: the recorded mix keeps the fitted factor, a variable the trace did not exercise
    keeps the profile's price (benchmarks/validation/realsize.py's r02)."""
    names = [v for v, t in seconds.items() if t > 0]
    total = sum(seconds[v] for v in names)
    if len(seconds) < 2 or total <= 0 or deviation <= 0 or abs(math.log(deviation)) < 1e-9:
        return {}
    shares = np.array([seconds[v] / total for v in names])
    factors = _by_prior(names, shares, deviation, 1.0)
    return {v: float(factors.get(v, 1.0) / deviation) for v in seconds}


def _sd(band: tuple[float, float]) -> float:
    """Standard deviation of log(time) of a 95% band."""
    lo, hi = band
    return math.log(hi / lo) / (2 * Z95) if lo > 0 and hi >= lo else 0.0


def calibrate_in_trace(trace: Trace, profile: SystemProfile, procs: int | None = None,
                       library: str | None = None, datasets: Collection[int] | None = None,
                       layout_of: Callable[[DatasetRecord], Layout] = Layout.from_dataset,
                       workloads: Mapping[int, Workload] | None = None) -> dict[str, TraceCalibration]:
    """A TraceCalibration for HDF5 and Zarr: fitted for the libraries the trace used, borrowed for the other
    (only ``library``'s own fit when named), on the ``datasets`` (ids) given, else on all: the caller leaves
    out those the models cannot replay (scalars, variable-length data). ``layout_of``: the recorded layout of
    a dataset as the caller models it (the advisor's current candidate), so that its calibrated prediction
    meets the traced time. ``workloads``: the caller's Workload of some datasets (their accesses in trace order,
    ``procs``), replayed when in time order, so that the caller's later replays of the recorded layout come from
    their cache."""
    procs = procs if procs is not None else trace.nprocs
    names = list(TERMS)
    rows: dict[str, tuple[list, list, list, list]] = {}
    whole: dict[str, dict[int, np.ndarray]] = {}
    parts: dict[str, dict[str, float]] = {}  # library -> variable -> its seconds in the recorded layouts
    for ds_id in np.unique(trace.columns.ds).tolist():
        accs = trace.columns_of(ds_id)
        ds = trace.datasets[ds_id]
        if library is not None and ds.library != library or datasets is not None and ds_id not in datasets:
            continue
        work = (workloads or {}).get(ds_id)
        if (np.diff(accs.t0) < 0).any():
            accs = accs.take(np.argsort(accs.t0, kind="stable"))  # in time order (a run: by its first access)
            work = None
        # a segment's prediction is what it adds to the replay of everything before it: the chunk cache and
        # the page cache carry over as they did in the run
        before, start = np.zeros(len(names)), 0
        seg_terms, seg_traced = [], []
        try:  # a record the models cannot replay is left out of the fit (the advice names it); never the others
            shape = trace.extent(ds_id)
            layout = layout_of(ds).with_shape(shape)
            if work is None:
                work = Workload(ds, accs, shape, procs)
            ends = _segments(accs)
            last = None
            for end, p in zip(ends, work.predict_prefixes(layout, profile, ends)):
                upto = np.array([p.terms.get(n, 0.0) for n in names])
                seg_terms.append(np.maximum(upto - before, 0.0))
                seg_traced.append(traced_seconds(accs.window(start, end)))
                before, start, last = upto, end, p
        except (ValueError, IndexError, TypeError):
            if settings.debug():
                raise
            continue
        g_terms, g_traced, w_terms, w_traced = rows.setdefault(ds.library, ([], [], [], []))
        g_terms += seg_terms
        g_traced += seg_traced
        w_terms.append(before)
        w_traced.append(traced_seconds(accs))
        whole.setdefault(ds.library, {})[ds_id] = before
        if last is not None:
            feats, mine = last.variables.as_features(), parts.setdefault(ds.library, {})
            for v in PRICED:
                mine[v] = mine.get(v, 0.0) + profile.coefficient(ds.library, v) * feats.get(v, 0.0)
    out = {}
    for lib, (g_terms, g_traced, w_terms, w_traced) in rows.items():
        spread = _sd(profile.band(lib))
        cal = fit(lib, np.asarray(g_terms, float), np.asarray(g_traced, float), names,
                  np.asarray(w_terms, float).sum(0), float(np.sum(w_traced)), spread or PRIOR_SPREAD)
        per_ds = {ds_id: float(sum(cal.factors.get(n, 1.0) * t[i] for i, n in enumerate(names)))
                  for ds_id, t in whole[lib].items()}
        calibrated = np.array([cal.factors.get(n, 1.0) for n in names]) * np.sum(w_terms, axis=0)
        mix = {n: float(x / calibrated.sum()) for n, x in zip(names, calibrated) if x > 0}
        split = {}
        if len({round(f, 12) for f in cal.factors.values()}) > 1:  # else no term departs on its own
            for k, f in cal.factors.items():
                m = split_term({v: parts.get(lib, {}).get(v, 0.0) for v in TERMS[k]}, f)
                if m:
                    split[k] = m
        out[lib] = replace(cal, dataset_seconds=per_ds, mix=mix, prior=spread, split=split)
    if out and library is None:
        # the other library borrows the device terms of the library with the most traced time
        donor = max(out.values(), key=lambda c: c.traced_seconds)
        for lib in ("hdf5", "zarr"):
            out.setdefault(lib, replace(donor.borrow(lib), prior=_sd(profile.band(lib))))
    return out


__all__ = ["CODEC_TERMS", "SHARED_TERMS", "TraceCalibration", "calibrate_in_trace", "fit", "traced_seconds"]
