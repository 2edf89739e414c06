"""Advice on a synthetic trace (rebuilt from a Darshan log, not captured): wider intervals, and what it rests on.

The I/O model replays the trace's selections; in a synthetic trace their placement (and maybe the dataset's
shape, its element type and filters) is guessed. ``SYNTHETIC_BAND`` widens every predicted 95% interval by
the spread measured between predictions on captured traces and on the traces the importer rebuilds from the
Darshan counters of the same runs (benchmarks/darshan_roundtrip.py, docs/darshan.md).
"""
from __future__ import annotations

from dataclasses import replace

from advisor.advice import DatasetAdvice, Recommendation
from instrumentation.records import TraceHeader

SYNTHETIC_BAND = (0.5, 2.0)
"""Factors applied to the lower and upper ends of every interval of an advice on a synthetic trace."""


def _widen(r: Recommendation) -> Recommendation:
    lo, hi = r.seconds_ci
    return replace(r, seconds_ci=(lo * SYNTHETIC_BAND[0], hi * SYNTHETIC_BAND[1]))


def widen(adv: DatasetAdvice, header: TraceHeader) -> DatasetAdvice:
    """The advice with intervals widened by SYNTHETIC_BAND and a note naming the guessed facts it rests on."""
    guessed = header.guessed(adv.name)
    rests = "; ".join(f"{f.fact}: {f.detail}" for f in guessed) or "none guessed"
    note = (f"synthetic trace (accesses rebuilt from a Darshan log): 95% intervals widened "
            f"x{SYNTHETIC_BAND[0]:g} / x{SYNTHETIC_BAND[1]:g}; the advice rests on these guessed facts: {rests}")
    return replace(
        adv, current=_widen(adv.current), defaults={k: _widen(v) for k, v in adv.defaults.items()},
        recommendation=_widen(adv.recommendation), candidates=tuple(_widen(r) for r in adv.candidates),
        notes=(note, *adv.notes))


__all__ = ["SYNTHETIC_BAND", "widen"]
