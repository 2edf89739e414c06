"""How a Darshan H5D record's access shapes split into reads and writes.

Darshan counts each access shape (LENGTH, STRIDE, bytes, how often) without its operation; the record's
read/write, byte and size-histogram counters constrain which split is possible (``split_reads_writes``).
Used by the importer (instrumentation/darshan.py).
"""
from __future__ import annotations

import math

import numpy as np

from .darshan_log import H5DCounters, size_bucket

SPLIT_SEARCH_LIMIT = 200_000
"""Read/write splits of the access shapes enumerated at most; beyond it the split is proportional."""


def split_reads_writes(rec: H5DCounters) -> tuple[list[int], bool]:
    """Reads per access shape (the rest are writes), and whether the split is the only one the counters allow.

    Constraints: per shape 0 <= r <= count; reads and writes, their bytes and their size-histogram buckets
    never exceed the record's totals. Among the feasible splits the one nearest a proportional split wins."""
    shapes = rec.shapes
    if not shapes:
        return [], True
    if rec.writes == 0 or rec.reads == 0:
        return [s.count if rec.writes == 0 else 0 for s in shapes], True
    if math.prod(s.count + 1 for s in shapes) > SPLIT_SEARCH_LIMIT:  # checked before allocating the ranges
        share = rec.reads / (rec.reads + rec.writes)
        return [round(s.count * share) for s in shapes], False
    ranges = [np.arange(s.count + 1, dtype=np.int64) for s in shapes]
    grids = np.meshgrid(*ranges, indexing="ij")
    r = np.stack([g.ravel() for g in grids], axis=1)  # (n_splits, n_shapes)
    counts = np.asarray([s.count for s in shapes], np.int64)
    nbytes = np.asarray([s.nbytes for s in shapes], np.int64)
    w = counts - r
    ok = (r.sum(1) <= rec.reads) & (w.sum(1) <= rec.writes)
    ok &= (r @ nbytes <= rec.bytes_read) & (w @ nbytes <= rec.bytes_written)
    buckets = np.asarray([size_bucket(b) for b in nbytes])
    histogram = sum(rec.read_buckets) == rec.reads and sum(rec.write_buckets) == rec.writes
    for b in np.unique(buckets) if histogram else ():
        on = buckets == b
        ok &= (r[:, on].sum(1) <= rec.read_buckets[b]) & (w[:, on].sum(1) <= rec.write_buckets[b])
    # every op is in the shapes or not: the shapes cover the ops as fully as the totals let them
    covered = rec.reads + rec.writes - counts.sum() == 0
    if covered:
        ok &= (r.sum(1) == rec.reads) & (r @ nbytes == rec.bytes_read)
    feasible = r[ok]
    if not len(feasible):
        share = rec.reads / (rec.reads + rec.writes)
        return [round(s.count * share) for s in shapes], False
    target = counts * rec.reads / (rec.reads + rec.writes)
    best = feasible[np.argmin(np.abs(feasible - target).sum(1))]
    # shapes of equal byte size are interchangeable for every counter: not a real ambiguity between them
    distinct = {tuple(int(x) for x in _sum_by(f, nbytes)) for f in feasible}
    return [int(x) for x in best], len(distinct) == 1


def _sum_by(r: np.ndarray, nbytes: np.ndarray) -> np.ndarray:
    return np.asarray([r[nbytes == b].sum() for b in np.unique(nbytes)])
