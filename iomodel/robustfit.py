"""Which groups and terms the in-trace calibration's per-term fit can trust (``iomodel.intrace.fit``).

Two things made that fit give up on telling terms apart, both seen on regret's w13 (5000 random row reads
through an 8 MiB chunk cache, one label read per row, 64 groups):

- stalls: a few calls take milliseconds among calls of microseconds (the process descheduled on a shared
  machine, another thread holding the GIL). Least squares took them for model error; ``unstalled`` leaves
  those groups out of the fit (they stay in the traced total the factors are rescaled onto, and in the band);
- terms that come in one proportion in every group (a chunk-cache miss's copy and its buffer): the matrix is
  singular, and the fit used to give up on every term; ``entangled`` finds them so that their sum is fitted
  as one, and the other terms are told apart regardless.

Pure computation on the groups' predicted terms and traced seconds.
"""
from __future__ import annotations

import numpy as np

from .nnls import nnls

MAX_CONDITION = 1e8
"""Term matrices (column-normalised Gram) worse conditioned than this are singular: one mix in every group."""
STALL_Z = 3.5
"""A group whose log(traced / fitted) is further than this many robust standard deviations from the others' is a
stall, left out of the fit (``unstalled``; 3.5: Iglewicz and Hoaglin's cut for modified z-scores)."""
STALL_SCALE = 0.1
"""Least robust standard deviation of the groups' log residuals: with STALL_Z, a group is a stall only when at
least 1.42x off the fit (an exact fit does not make every small deviation one)."""
STALL_ROUNDS = 3
"""Refits without the stalls found so far."""

ENTANGLED = 0.05
"""A term belongs to a null direction of the fit (``entangled``) when its component in it exceeds this."""


def entangled(a: np.ndarray) -> list[list[int]]:
    """The columns of ``a`` (groups x terms) in sets that the groups never vary apart: those sharing a null
    direction of the column-normalised Gram matrix (an eigenvalue under its largest / MAX_CONDITION), each
    other column alone. regret's w13 replays row reads of (4096, 64) chunks through an 8 MiB cache: every
    miss costs a copy (t_cache) and a buffer (t_alloc) in the same proportion in every group, so the matrix
    was singular and no term was told apart, not even the per-call cost that its label reads alone pinned
    down (0.2x the profile's, against 0.6x for the one common factor)."""
    n = a.shape[1]
    parent = list(range(n))

    def root(i):
        while parent[i] != i:
            i = parent[i]
        return i

    norm = np.linalg.norm(a, axis=0)
    if n > 1 and np.all(norm > 0):
        vals, vecs = np.linalg.eigh((a / norm).T @ (a / norm))
        for j in np.flatnonzero(vals < vals.max() / MAX_CONDITION):
            members = np.flatnonzero(np.abs(vecs[:, j]) > ENTANGLED)
            for m in members[1:]:
                parent[root(int(m))] = root(int(members[0]))
    sets: dict[int, list[int]] = {}
    for i in range(n):
        sets.setdefault(root(i), []).append(i)
    return list(sets.values())


def unstalled(terms: np.ndarray, traced: np.ndarray) -> np.ndarray:
    """Mask of the groups the fit keeps: all but those whose traced time is off the non-negative fit of the
    others by more than STALL_Z robust standard deviations (modified z-score: 1.4826 x the median absolute
    deviation of the groups' log(traced / fitted), at least STALL_SCALE), refitted without them up to
    STALL_ROUNDS times. A trace's calls are timed one by one, and a few of them stall (the process descheduled
    on a shared machine, another thread holding the GIL): regret's w13, 5000 row reads of 5-100 us, had single
    reads of 1-80 ms in every run and one of 1.3 s, in 2-4 of its 64 groups. Least squares took them for model
    error: the standard errors grew 10x and every term was shrunk to one common factor (its per-call cost
    over-priced 2-4x, its chunk-cache misses under-priced). No term of any layout is priced by a stall; the
    time stays in the trace's total, onto which the factors are rescaled, and in the band."""
    keep = np.ones(len(traced), bool)
    for _ in range(STALL_ROUNDS):
        s, _ = nnls(terms[keep], traced[keep])
        fitted = terms @ s
        ok = (fitted > 0) & (traced > 0)
        if ok.sum() < 3:
            return np.ones(len(traced), bool)
        u = np.log(traced[ok] / fitted[ok])
        mid = float(np.median(u))
        scale = max(STALL_SCALE, 1.4826 * float(np.median(np.abs(u - mid))))
        normal = np.ones(len(traced), bool)
        normal[ok] = np.abs(u - mid) <= STALL_Z * scale
        if normal.sum() <= len(traced) / 2 or (normal == keep).all():  # no majority to call normal, or settled
            return keep
        keep = normal
    return keep


__all__ = ["ENTANGLED", "MAX_CONDITION", "STALL_ROUNDS", "STALL_SCALE", "STALL_Z", "entangled", "unstalled"]
