"""Parallel model, formulas (8)-(10) of Kang et al.

P processes each replay their own hyperslabs (``AccessRecord.rank``). Disk terms
grow with contention on the c data servers: cf = 1 + (p-1)/c (c = the stripe
count for HDF5, all data servers for Zarr). Zarr's per-chunk metadata operations
go to a shared metadata service: x p. HDF5 goes through MPI-IO without its chunk
cache, one request per run contiguous in both chunk and buffer (counted by
``count_variables(..., parallel=True)``). The job takes as long as its slowest rank.
"""
from __future__ import annotations

from .cost import DISK_TERMS, METADATA_TERMS


def contention_factor(p: int, c: int) -> float:
    """cf = 1 + (p - 1) / c (formula 8)."""
    if p < 1 or c < 1:
        raise ValueError(f"contention factor needs p >= 1 and c >= 1, got p={p}, c={c}")
    return 1.0 + (p - 1) / c


def parallel_terms(terms: dict[str, float], library: str, p: int, c: int) -> dict[str, float]:
    """One rank's serial term seconds -> its seconds among p processes (formulas 8-9)."""
    cf = contention_factor(p, c)
    out = dict(terms)
    for t in DISK_TERMS:
        out[t] = terms[t] * cf
    if library == "zarr":
        for t in METADATA_TERMS:
            out[t] = terms[t] * p
    return out
