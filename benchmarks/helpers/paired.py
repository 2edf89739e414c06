"""Paired timing for the tracing-overhead benchmarks: untraced and traced runs interleaved (ABBA), as many
pairs as it takes for the median slowdown to be known to within a given spread.

A traced run costs a few percent more than an untraced one, and two untraced runs of the same loop differ by
1.5-5 percent on the shared development machine (other processes, the host under the VM): one pair decides
nothing. Each pair gives a ratio; the figure is the median of the ratios, and its spread is the half-width of
a bootstrap 95% interval of that median. Pairs are added until the spread is below the target, the pair limit
or the time budget is reached: the spread is reported either way.
"""
from __future__ import annotations

import random
import statistics
import time


def median_interval(values, level: float = 0.95, resamples: int = 2000, seed: int = 0) -> tuple[float, float]:
    """A bootstrap ``level`` interval of the median of ``values`` (percentile method)."""
    values = list(values)
    if len(values) < 2:
        return (values[0], values[0]) if values else (float("nan"), float("nan"))
    rng = random.Random(seed)
    meds = sorted(statistics.median(rng.choices(values, k=len(values))) for _ in range(resamples))
    tail = (1 - level) / 2
    return meds[int(tail * resamples)], meds[min(int((1 - tail) * resamples), resamples - 1)]


def spread(values) -> float:
    """Half-width of the bootstrap 95% interval of the median."""
    lo, hi = median_interval(values)
    return (hi - lo) / 2


def paired(run, slowdown, *, min_pairs: int, max_pairs: int, target: float, max_seconds: float):
    """Interleaved pairs of ``run(False)`` (untraced) and ``run(True)`` (traced), ABBA order (drift in time
    weighs on both sides alike), until the ``slowdown(plain, traced)`` ratios (percent) have a median known to
    within ``target`` points, ``max_pairs`` pairs, or ``max_seconds``. Returns (plain samples, traced samples)."""
    plain, traced = [], []
    t_end = time.monotonic() + max_seconds
    while len(plain) < max_pairs:
        for t in ((False, True) if len(plain) % 2 == 0 else (True, False)):
            (traced if t else plain).append(run(t))
        if len(plain) >= min_pairs and (spread([slowdown(p, t) for p, t in zip(plain, traced)]) < target
                                        or time.monotonic() > t_end):
            break
    return plain, traced

def median_seconds(fn, repeat: int) -> float:
    """Median wall seconds of ``repeat`` calls of ``fn()`` in a row (a warm loop: the investigations' per-call figures)."""
    runs = []
    for _ in range(repeat):
        t = time.perf_counter()
        fn()
        runs.append(time.perf_counter() - t)
    return statistics.median(runs)


def summary(plain, traced, value, label: str) -> dict:
    """Median slowdown of ``value(sample)`` (percent), its bootstrap 95% interval, and min-min, as
    ``{label}_slowdown_pct``, ``{label}_interval_pct``, ``{label}_spread_pct`` and ``{label}_slowdown_min_pct``;
    the pairs' ratios too (``{label}_ratios_pct``: runs in separate CPU holds pool into one median)."""
    ratios = [(value(t) / value(p) - 1) * 100 for p, t in zip(plain, traced)]
    lo, hi = median_interval(ratios)
    return {f"{label}_untraced": statistics.median(value(p) for p in plain),
            f"{label}_slowdown_pct": statistics.median(ratios), f"{label}_interval_pct": [lo, hi],
            f"{label}_spread_pct": (hi - lo) / 2,
            f"{label}_slowdown_min_pct": (min(map(value, traced)) / min(map(value, plain)) - 1) * 100,
            f"{label}_ratios_pct": ratios}
