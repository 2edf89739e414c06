"""Advice on a synthetic trace (rebuilt from a Darshan log, not captured): wider intervals, and what it rests on.

The I/O model replays the trace's selections; in a synthetic trace their placement (and maybe the dataset's
shape, its element type and filters) is guessed. Every predicted 95% interval is widened by the spread
measured between predictions on captured traces and on the traces the importer rebuilds from the Darshan
counters of the same runs (benchmarks/validation/darshan_roundtrip.py, docs/darshan.md).
"""
from __future__ import annotations

from dataclasses import replace

from advisor.advice import DatasetAdvice, Recommendation
from instrumentation.records import TraceHeader

PLACEMENT_FACTOR = 4.3
"""Intervals of a synthetic trace's advice are divided (lower end) and multiplied (upper end) by this when
the dataset's shape is known (HDF5 file reachable, --shape, or a fixed 1-D dataspace): the larger of
1 / 2.5% and 97.5% quantiles of predicted seconds on the imported / the captured trace, over the ranked
candidates of the HDF5 workloads (0.235 and 1.0 at --scale 0.5, first run; docs/darshan.md). The keep/change
verdict is taken before the widening, on the model's own intervals."""
GUESSED_SHAPE_FACTOR = 21.0
"""The same when the shape itself was guessed (2.5% / 97.5% quantiles 0.238 and 21.2)."""


def _widen(r: Recommendation, factor: float) -> Recommendation:
    lo, hi = r.seconds_ci
    return replace(r, seconds_ci=(lo / factor, hi * factor))


def widen(adv: DatasetAdvice, header: TraceHeader) -> DatasetAdvice:
    """The advice with widened intervals and a note naming the guessed facts it rests on."""
    guessed = header.guessed(adv.name)
    factor = GUESSED_SHAPE_FACTOR if any(f.fact == "shape" for f in guessed) else PLACEMENT_FACTOR
    rests = "; ".join(f"{f.fact}: {f.detail}" for f in guessed) or "none guessed"
    note = (f"synthetic trace (accesses rebuilt from a Darshan log): 95% intervals widened {factor:g}x each way; "
            f"the advice rests on these guessed facts: {rests}")
    return replace(
        adv, current=_widen(adv.current, factor), defaults={k: _widen(v, factor) for k, v in adv.defaults.items()},
        recommendation=_widen(adv.recommendation, factor),
        candidates=tuple(_widen(r, factor) for r in adv.candidates),
        best_change=None if adv.best_change is None else _widen(adv.best_change, factor), notes=(note, *adv.notes))


__all__ = ["GUESSED_SHAPE_FACTOR", "PLACEMENT_FACTOR", "widen"]
