"""The output traffic of a call whose chunks scatter into a strided output (``s_ospill``, formula 1 by memory
traffic on the user buffer's side).

A call that reads several chunks copies each into its own region of the output array. When the chunks split the
output's rows (column chunks read as a strip: a (1e6, 4) float32 output from four (1e6, 1) chunks), each chunk's
copy writes one element per row, and so touches every cache line of the region the chunks share: four passes over
16 MB. If that region (and the chunk being copied) stays in the CPU's last-level cache between the chunks, the
lines are fetched from memory once; if not, once per chunk. ``output_spill`` counts the bytes of those lines
fetched again: per group of a call's visits whose output spans overlap, the cache lines each visit's copy touches
(as ``s_mtouch`` counts them in the chunk buffer) less the group's span, when the span plus one chunk exceeds half
the last-level cache (the half where the excess is measured to begin: ``python -m
benchmarks.investigations.output_spill``, docs/iomodel.md "Strided output"); else 0.
"""
from __future__ import annotations

import numpy as np

from .kernel import CACHE_LINE


def output_spill(visits, itemsize: int, chunk_bytes: int, llc_bytes: int) -> float:
    """s_ospill of these chunk visits (``ChunkVisits``): formula in the module docstring, measured by
    benchmarks/investigations/output_spill.py; 0 when ``llc_bytes`` is 0 (not known)."""
    n = len(visits.cid)
    if llc_bytes <= 0 or n < 2 or n == len(visits.offsets) - 1:  # one visit per call: nothing shared
        return 0.0
    olo, ohi = visits.olo, visits.ohi
    acc = np.repeat(np.arange(len(visits.offsets) - 1, dtype=np.int64), np.diff(visits.offsets))
    big = int(ohi.max()) + 1
    key_lo, key_hi = acc * big + olo, acc * big + ohi
    # the chunk walk emits an access's visits in C order of their chunk coordinates: their output starts ascend
    order = slice(None) if (key_lo[1:] >= key_lo[:-1]).all() else np.argsort(key_lo, kind="stable")
    k_lo, k_hi = key_lo[order], key_hi[order]
    reach = np.maximum.accumulate(k_hi)
    starts = np.flatnonzero(np.r_[True, k_lo[1:] >= reach[:-1]])
    count = np.diff(np.r_[starts, n])
    if not (count > 1).any():
        return 0.0
    # lines each visit's copy touches in the output: its bytes plus a partial line per run, at most its span
    lines = np.minimum(visits.nsel * itemsize + (CACHE_LINE - 1) * visits.nrun, ohi - olo + CACHE_LINE)[order]
    span = np.maximum.reduceat(k_hi, starts) - k_lo[starts]
    again = np.add.reduceat(lines, starts) - span
    spills = (count > 1) & (span + chunk_bytes > llc_bytes // 2) & (again > 0)
    return float(again[spills].sum())


__all__ = ["output_spill"]
