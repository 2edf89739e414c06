"""The variables Kang et al.'s I/O model counts (n_calls, n_memcpy, n_rdisk, s_rdisk, ...): their names in
design-matrix order, index constants for the compiled replay, and ``Variables``, one array's counts.

The counting is Algorithm 1 of Kang et al. and its analogues (``iomodel.variables``); formula numbers below are
the paper's.
"""
from __future__ import annotations

from dataclasses import dataclass, fields

import numpy as np

FEATURES = (
    "n_calls", "n_memcpy", "s_memcpy", "n_cache", "s_cache", "n_rdisk", "s_rdisk", "n_wdisk", "s_wdisk",
    "n_rseek", "n_wseek", "n_rindex", "n_windex", "n_zopen", "n_chunks", "s_decode", "s_encode",
    "x_cache", "s_alloc", "s_rseek", "s_mtouch", "s_wnew", "n_wcalls", "s_ospill",
)
"""Counted variables, in design-matrix column order (also the coefficient names)."""

(N_CALLS, N_MEMCPY, S_MEMCPY, N_CACHE, S_CACHE, N_RDISK, S_RDISK, N_WDISK, S_WDISK,
 N_RSEEK, N_WSEEK, N_RINDEX, N_WINDEX, N_ZOPEN, N_CHUNKS, S_DECODE, S_ENCODE, X_CACHE, S_ALLOC, S_RSEEK, S_MTOUCH,
 S_WNEW, N_WCALLS, S_OSPILL) = range(len(FEATURES))
"""Each variable's index in the counts the compiled replay adds to (``out``, FEATURES order)."""


@dataclass(frozen=True)
class Variables:
    """The model's variables for one rank's accesses to one array (see FEATURES)."""

    n_calls: float = 0.0
    """Library calls (accesses): Python selection overhead per call."""
    n_memcpy: float = 0.0
    """Runs copied between chunk buffer and user buffer, Algorithm 1 (formula 1)."""
    s_memcpy: float = 0.0
    """Bytes of those runs (formula 1)."""
    n_cache: float = 0.0
    """OS read requests served by the page cache (formula 7)."""
    s_cache: float = 0.0
    """Bytes of those requests (formula 7)."""
    n_rdisk: float = 0.0
    """OS read requests that reach the device (formulas 2-3)."""
    s_rdisk: float = 0.0
    """Bytes read from the device (formulas 2-3)."""
    n_wdisk: float = 0.0
    """OS write requests (formulas 5-6)."""
    s_wdisk: float = 0.0
    """Bytes written (formulas 5-6)."""
    n_rseek: float = 0.0
    """Device reads not starting where the previous one ended (formula 4)."""
    n_wseek: float = 0.0
    """Writes not starting where the previous one ended (formula 6)."""
    n_rindex: float = 0.0
    """HDF5 index blocks read (first use, or again after HDF5's metadata cache evicted them); zarr shard-index
    reads (formula 4)."""
    n_windex: float = 0.0
    """HDF5 index blocks first written; zarr shard-index writes (formula 6)."""
    n_zopen: float = 0.0
    """Zarr store operations (a chunk/shard key get or set: open, stat, read/write)."""
    n_chunks: float = 0.0
    """Chunk visits (the library's per-chunk work: lookup, locking, codec setup)."""
    s_decode: float = 0.0
    """Raw bytes decoded by a filter pipeline."""
    s_encode: float = 0.0
    """Raw bytes encoded by a filter pipeline."""
    x_cache: float = 0.0
    """Seconds of the page-cache hits by the measured copy-time curve (``PageCacheCurve``): copy speed
    depends on the request size (readahead, copy efficiency), so bytes alone do not price a hit."""
    s_alloc: float = 0.0
    """Bytes of chunk buffers the library allocates (and HDF5 fills): HDF5 per chunk entering its cache
    or processed whole outside it, Zarr per chunk read or written."""
    s_rseek: float = 0.0
    """Bytes of the device reads that seek (formula 4 by bytes): a read continuing the previous one is
    served by the kernel's readahead stream, overlapping the library's work; one after a seek waits
    for the device."""
    s_mtouch: float = 0.0
    """Bytes of the chunk buffer's cache lines the copy touches (formula 1 by memory traffic): a strided copy
    moves whole lines, so a column of a wide chunk costs about a line per element, one of a narrow chunk
    a line per few elements; for contiguous runs it equals s_memcpy."""
    s_wnew: float = 0.0
    """Bytes written to pages not in the page cache (formulas 5-6 by page state): the kernel takes a new page for
    them, which costs more than copying over a cached one (a 1 MiB ``pwrite`` into new pages costs about twice
    as much per byte as over cached ones; docs/iomodel.md); zarr's atomic writes always go to a new file's pages."""
    n_wcalls: float = 0.0
    """Library calls that write (formula 1's per-call overhead, split by op): what a write call costs beyond a read
    call. h5py converts and broadcasts the source array first: a 16 KiB frame written into a cached chunk costs
    about twice its read back (h5py 3.16; docs/iomodel.md, "A write call costs more than a read call")."""
    s_ospill: float = 0.0
    """Bytes of output cache lines a multi-chunk call's copies fetch again because the output region they share
    left the last-level cache between chunks (formula 1 by memory traffic on the user buffer's side;
    ``iomodel.spill``, benchmarks/investigations/output_spill.py)."""

    def as_features(self) -> dict[str, float]:
        """Design-matrix row: {variable: value}, keys == FEATURES."""
        return {name: float(getattr(self, name)) for name in FEATURES}

    def __add__(self, other: "Variables") -> "Variables":
        return Variables(*(getattr(self, n) + getattr(other, n) for n in FEATURES))

    def get_config(self) -> dict:
        return self.as_features()

    @classmethod
    def from_config(cls, config: dict) -> "Variables":
        if not isinstance(config, dict):
            raise ValueError("variables must be a JSON object")
        unknown = set(config) - set(FEATURES)
        if unknown:
            raise ValueError(f"unknown variable {sorted(unknown)[0]!r}")
        return cls(**{k: float(v) for k, v in config.items()})

    @classmethod
    def from_array(cls, arr: np.ndarray) -> "Variables":
        return cls(*(float(x) for x in arr))


assert tuple(f.name for f in fields(Variables)) == FEATURES


__all__ = ["FEATURES", "Variables"]
