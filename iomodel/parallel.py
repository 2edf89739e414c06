"""Parallel model, formulas (8)-(10) of Kang et al.

P processes each replay their own hyperslabs (``AccessRecord.rank``). Disk terms
grow with contention on the c data servers: cf = 1 + (p-1)/c (c = the stripe
count for HDF5, all data servers for Zarr). Zarr's per-chunk metadata operations
go to a shared metadata service: x p. HDF5 ranks that write a shared file go
through MPI-IO without their chunk caches, one request per run contiguous in both
chunk and buffer (counted by ``count_variables(..., parallel=True)``, see
``mpio_uncached``); read-only ranks keep their chunk caches. The job takes as
long as its slowest rank.

p counts MPI ranks only (``AccessColumns.rank``). The processes one rank followed (DataLoader or pool workers:
``AccessColumns.proc``) each replay through their own chunk cache, but their variables add up to their rank's,
with no contention term of their own: they share one host's device and page cache, and the time their
concurrent calls took together (``intrace.traced_seconds``: the union of the rank's calls) is what the in-trace
calibration scales the rank's prediction onto.
"""
from __future__ import annotations

from typing import Sequence

import numpy as np

from instrumentation.columns import as_columns
from instrumentation.records import AccessRecord, DatasetRecord

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


def mpio_uncached(library: str, procs: int, accesses: Sequence[AccessRecord],
                  dataset: DatasetRecord | None = None) -> bool:
    """Whether HDF5 ranks bypass their chunk caches (MPI-IO requests per run, formulas 9-10).

    HDF5 bypasses the chunk cache only for an MPI file driver on a file open for
    writing (``H5D__chunk_cacheable``, H5Dchunk.c), since another rank may write
    the same chunk. Traces record the driver and open mode of HDF5 files; when
    they are not known (a Zarr trace evaluated as HDF5, older traces) they are
    inferred: serial h5py cannot open one file for writing in several processes
    (file locking), so a dataset written by two or more ranks, or by the only
    recorded rank replicated on procs > 1 (weak scaling), means ``driver='mpio'``;
    ranks that only read are taken as serial h5py or mpio opened 'r', which keep
    their caches (measured: 424 read calls for 4 ranks where per-run requests
    count 3.8 million; docs/parallel-validation.md).
    """
    if library != "hdf5":
        return False
    if dataset is not None and dataset.library == "hdf5" and dataset.driver is not None:
        return dataset.driver == "mpio" and dataset.mode != "r"
    if procs < 2:
        return False
    cols = as_columns(accesses)
    writers = np.unique(cols.rank[cols.write])
    recorded = np.unique(cols.rank)
    return bool(len(writers)) and len(writers) >= min(2, len(recorded))
