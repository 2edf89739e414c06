"""``Replay``: one rank's accesses of one array replayed against a layout, window by window, through the compiled
kernel (``iomodel.kernel.simulate``); the state that carries over between windows lives here, packed as the
kernel takes it.
"""
from __future__ import annotations

from dataclasses import dataclass, fields, replace
from typing import TYPE_CHECKING

import numba
import numpy as np

from instrumentation.columns import AccessColumns
from instrumentation.records import DatasetRecord

from .cache import SharedPageCache, copy_int64_dict, hash_bits, int64_dict, new_page_cache
from .chunks import ChunkVisits, sieve_requests, trace_visits
from .features import FEATURES, S_OSPILL, Variables
from .kernel import (CALL_ROWS, C_COLLECTIVE, C_SIEVE_BYTES, C_SIEVE_REQUESTS, C_WRITE, F_CURVE, F_W0,
                     F_ZARR_OVERLAP, G_CHUNKS, G_HASH_BITS, G_PER_SHARD, G_SHARDS, GRID_ROWS, M_ALLOC, M_INDEX_BLOCKS,
                     M_WTOUCHED, S_CHUNKED, S_CSIZE, S_FILL_ALLOC, S_FILTERED, S_IBC, S_INDEX_BYTES, S_ITEMSIZE,
                     S_KMUL, S_N_INNER, S_NCHUNKS, S_NODE_BYTES, S_NSLOTS, S_PARALLEL, S_PREALLOC, S_RDCC_NBYTES,
                     S_SIEVE, S_STORED, S_ZARR, SPEC_WORDS, close, new_maps, simulate, warm_up)
from .layout import Layout
from .osio import PAGE, readahead_state
from .spill import output_spill

if TYPE_CHECKING:  # at run time the curve is only called
    from .profile import PageCacheCurve

WINDOW_ACCESSES = 1 << 18
"""Accesses walked and replayed at a time: bounds the chunk-visit arrays (about 49 bytes per visit) whatever
the trace's length."""


HDF5_METADATA_CACHE = 32 << 20
"""Bytes of HDF5's metadata cache once grown (H5AC default max_size 32 MiB; it starts at 2 MiB and doubles
while its hit rate stays under 90%): chunk-index blocks beyond it are read again."""


def index_block_bytes(layout: Layout) -> int:
    """Bytes of one chunk-index block: a v1 B-tree node holds 2K + 1 keys (chunk size, filter mask, ndim + 1
    offsets) and 2K child addresses after a 24-byte header (H5Bcache.c, H5Dbtree.c); array and v2 B-tree
    blocks are priced alike per entry."""
    return 24 + layout.index_block_chunks * (16 + 8 * (layout.ndim + 1))


def piece_bytes(layout: Layout) -> int:
    """Bytes of the page-cache key of one request HDF5 makes when it reads an array without its chunk cache:
    contiguous storage refills its sieve buffer a window at a time (the window is read whole); a chunk read
    piecewise reads only the selected runs, so each run brings in its own page, not the window around it
    (5000 random rows of (1024, 64) float32 chunks, cold: benchmarks/investigations/uncached_row_reads.py)."""
    return layout.sieve_bytes if layout.chunks is None else PAGE


@numba.njit(cache=True)
def _put_all(d, keys, values):
    """d[keys[i]] = values[i] in compiled code (a typed Dict's ``__setitem__`` from Python compiles its helper
    anew in every process, seconds)."""
    for i in range(len(keys)):
        d[keys[i]] = values[i]


def chunk_cache_used(layout: Layout, parallel: bool = False) -> bool:
    """Whether a replay of ``layout`` passes chunks through HDF5's chunk cache: chunked HDF5 storage on the serial
    path whose chunks fit the cache (``kernel.simulate``'s ``fits``). Otherwise the cache settings change nothing."""
    return (layout.library != "zarr" and layout.chunks is not None and not parallel and layout.rdcc_nslots > 0
            and layout.chunk_nbytes <= layout.rdcc_nbytes)


def replay_key(layout: Layout, parallel: bool = False) -> Layout:
    """The layout whose ``Replay`` counts the same variables as ``layout``'s: its chunk-cache settings cleared
    when no chunk goes through the cache, so that cache variants of a chunk shape larger than their caches (a
    64 MiB cache against 8 MiB and none for 16 MiB chunks) are replayed once."""
    if chunk_cache_used(layout, parallel):
        return layout
    return replace(layout, rdcc_nbytes=0, rdcc_nslots=0, rdcc_w0=0.0)


@dataclass(frozen=True)
class ReplayOptions:
    """What a replay simulates besides the layout (``Replay``, ``count_variables``).

    ``parallel`` selects HDF5's MPI-IO path (no chunk cache; requests per run, formulas 8-10). ``warm``: every
    stored byte of the array starts in the page cache (the library cache empty). ``cache_curve``: the profile's
    page-cache copy time by request size (x_cache stays 0 without it); ``zarr_overlap``: how many of one call's
    chunk reads overlap on the device (the profile's, measured by calibration); ``readahead``: the kernel's
    largest readahead window on the data's device, bytes (the profile's; 0: readahead not modelled);
    ``device_request``: the device's largest request, bytes (the profile's; 0: a window is one request);
    ``llc``: the CPU's last-level cache, bytes (the profile's page-cache curve's ``cpu_cache_bytes``; 0: ``s_ospill``
    not counted, ``iomodel.spill``)."""

    parallel: bool = False
    warm: bool = False
    cache_curve: PageCacheCurve | None = None
    zarr_overlap: float = 1.0
    readahead: int = 0
    device_request: int = 0
    llc: int = 0

    @classmethod
    def of(cls, options: "ReplayOptions | None" = None, **kw) -> "ReplayOptions":
        """``options`` (default: all defaults) with the keyword arguments replacing its fields."""
        base = options if options is not None else cls()
        return replace(base, **kw) if kw else base

    def get_config(self) -> dict:
        """These options as a JSON object (``from_config`` reads it back)."""
        curve = self.cache_curve
        return {"parallel": self.parallel, "warm": self.warm,
                "cache_curve": None if curve is None else {"sizes": list(curve.sizes), "seconds": list(curve.seconds)},
                "zarr_overlap": self.zarr_overlap, "readahead": self.readahead, "device_request": self.device_request,
                "llc": self.llc}

    @classmethod
    def from_config(cls, config: dict) -> "ReplayOptions":
        from .profile import PageCacheCurve

        if not isinstance(config, dict):
            raise ValueError("replay options must be a JSON object")
        unknown = set(config) - {f.name for f in fields(cls)}
        if unknown:
            raise ValueError(f"unknown replay option {sorted(unknown)[0]!r}")
        kw = dict(config)
        if kw.get("cache_curve") is not None:
            kw["cache_curve"] = PageCacheCurve(tuple(kw["cache_curve"]["sizes"]), tuple(kw["cache_curve"]["seconds"]))
        return cls(**kw)


def _spec(layout: Layout, parallel: bool, n_inner: int, index_bytes: int, prealloc: int, kmul: int) -> np.ndarray:
    """The kernel's ``spec`` words (``kernel.S_*``)."""
    spec = np.zeros(SPEC_WORDS, np.int64)
    spec[S_ZARR], spec[S_ITEMSIZE] = layout.library == "zarr", layout.itemsize
    spec[S_CSIZE], spec[S_STORED] = layout.chunk_nbytes, layout.stored_chunk_nbytes
    spec[S_RDCC_NBYTES], spec[S_NSLOTS] = layout.rdcc_nbytes, layout.rdcc_nslots
    spec[S_FILTERED], spec[S_CHUNKED] = layout.filtered, layout.chunks is not None
    spec[S_IBC], spec[S_SIEVE] = layout.index_block_chunks, layout.sieve_bytes
    spec[S_N_INNER], spec[S_INDEX_BYTES], spec[S_PREALLOC] = n_inner, index_bytes, prealloc
    spec[S_NCHUNKS], spec[S_PARALLEL], spec[S_FILL_ALLOC] = layout.nchunks, parallel, layout.fill_on_alloc
    spec[S_KMUL], spec[S_NODE_BYTES] = kmul, index_block_bytes(layout)
    return spec


def new_chunk_cache(layout: Layout) -> tuple:
    """An empty HDF5 chunk cache of ``layout`` as the kernel takes it (entries, list heads and counts, evicted)."""
    nslots = max(1, layout.rdcc_nslots)
    return (np.full((6, nslots), -1, np.int64), np.array([-1, -1, 0, 0, 0], np.int64),
            np.empty(nslots + 2, np.int64))


class Replay:
    """One rank's accesses of ``dataset`` replayed against ``layout``, fed window by window (``feed``): the
    library's chunk cache (one per process of the rank: ``AccessColumns.proc``), the page cache, the device positions and the allocation order carry over, so the
    counts (``result``) equal one replay of the whole sequence. ``options`` (or its fields as keyword
    arguments): ``ReplayOptions``; ``page_cache``: the process's page cache, shared with its other arrays
    (``count_variables``)."""

    def __init__(self, dataset: DatasetRecord, layout: Layout, page_cache_bytes: int,
                 options: ReplayOptions | None = None, *, page_cache: SharedPageCache | None = None, **kw):
        opts = ReplayOptions.of(options, **kw)
        parallel = opts.parallel
        self.dataset, self.layout, self.parallel = dataset, layout, parallel
        # one file per zarr chunk: no stream runs from one chunk's file into the next
        readahead = 0 if layout.library == "zarr" else opts.readahead
        alloc = int64_dict()
        prealloc = 0 if dataset.created else 1
        same_layout = (dataset.library == layout.library and dataset.chunks is not None
                       and tuple(dataset.chunks) == layout.chunks and layout.shards is None)
        if not dataset.created and dataset.chunk_offsets is not None and same_layout and len(dataset.chunk_offsets):
            co = np.asarray(dataset.chunk_offsets, np.int64)
            _put_all(alloc, np.ravel_multi_index(co[:, : layout.ndim].T, layout.grid, mode="clip"),
                     np.ascontiguousarray(co[:, layout.ndim]))
            prealloc = 2
        file_bytes = layout.nchunks * layout.stored_chunk_nbytes
        if prealloc == 2:
            file_bytes = int((co[:, layout.ndim] + co[:, layout.ndim + 1]).max())
        ra = readahead_state(readahead, file_bytes, opts.device_request)
        grids = np.ones((GRID_ROWS, layout.ndim), np.int64)
        grids[G_CHUNKS], grids[G_HASH_BITS] = layout.grid, hash_bits(layout.grid)
        cps = layout.chunks_per_shard
        n_inner = index_bytes = 0
        if cps is not None:
            grids[G_PER_SHARD] = cps
            grids[G_SHARDS] = [-(-g // c) for g, c in zip(layout.grid, cps)]
            n_inner = int(np.prod(cps))
            index_bytes = 16 * n_inner + 4
        csize, stored, piece = layout.chunk_nbytes, layout.stored_chunk_nbytes, piece_bytes(layout)
        # page-cache keys: unit * kmul (whole unit) or unit * kmul + 1 + piece (piecewise)
        kmul = (csize + piece - 1) // piece + 2
        self._spec = _spec(layout, parallel, n_inner, index_bytes, prealloc, kmul)
        self._grids = grids
        # no curve measured: empty; an array beyond the CPU's cache copies its hits from memory (for_footprint)
        curve = (opts.cache_curve.for_footprint(layout.nchunks * stored).arrays()
                 if opts.cache_curve is not None else ())
        self._fspec = np.zeros(F_CURVE + sum(len(c) for c in curve), np.float64)
        self._fspec[F_W0], self._fspec[F_ZARR_OVERLAP] = layout.rdcc_w0, opts.zarr_overlap
        self._fspec[F_CURVE:] = np.concatenate(curve) if curve else ()
        self._chunk_cache = new_chunk_cache(layout)
        self._caches = {0: self._chunk_cache}
        """Process index (``AccessColumns.proc``) -> that process's chunk cache: each process of a rank (its
        followed DataLoader or pool workers) holds its own; the page cache and the file are the rank's."""
        self._epochs = {0: 0}
        """Process index -> the open span (``AccessColumns.epoch``) its chunk cache belongs to: a reopen empties it."""
        self._proc = 0
        node_bytes = index_block_bytes(layout)
        mdc = new_page_cache(HDF5_METADATA_CACHE, min(layout.nchunks // layout.index_block_chunks,
                                                      HDF5_METADATA_CACHE // node_bytes) + 2)
        self._mdc = mdc[:3]
        pos = np.array([-1, -1, layout.nchunks * stored if prealloc == 1 else 0], np.int64)
        self._state = (np.zeros(len(FEATURES), np.float64), pos, ra)
        # LRU size bound: entries are at least min(stored, piece) bytes and at most one per request; the
        # request bound grows window by window (``feed``)
        self._shared = page_cache if page_cache is not None else SharedPageCache(page_cache_bytes)
        min_entry = max(1, min(stored, piece, index_bytes or stored))
        # keys: chunks, shards (after nchunks + 1) and their windows, times kmul (``simulate``)
        self._key0 = self._shared.add((2 * layout.nchunks + 3) * kmul, self._shared.capacity // min_entry + 2)
        self._maps = new_maps(alloc, int64_dict(), self._shared.state[3], mdc[3])
        self._closed = False
        self._llc = opts.llc
        if opts.warm:
            self._shared.reserve(layout.nchunks * (csize // piece + 2))
            self._shared.enter(self._key0)
            nunits = int(np.prod(grids[G_SHARDS])) if n_inner else layout.nchunks
            piecewise = layout.library != "zarr" and not (layout.filtered or self._fits) and not parallel
            warm_up(self._spec, self._shared.state[:3], self._maps, nunits, piece if piecewise else 0)

    @property
    def _fits(self) -> bool:
        return chunk_cache_used(self.layout, self.parallel)

    def feed(self, cols: AccessColumns, visits: ChunkVisits | None = None) -> None:
        """Replay the next accesses (``visits``: their ``trace_visits`` against this layout, if already walked)."""
        if self._closed:
            raise RuntimeError("replay already closed by result()")
        if not cols.rows or self._fed_by_process(cols):
            return
        lay = self.layout
        vis = trace_visits(cols, lay) if visits is None else visits
        calls = np.zeros((CALL_ROWS, len(vis.offsets) - 1), np.int64)
        calls[C_WRITE] = cols.op_codes()
        calls[C_COLLECTIVE] = np.repeat(cols.collective, cols.rep)
        if lay.chunks is None:
            calls[C_SIEVE_REQUESTS], calls[C_SIEVE_BYTES] = sieve_requests(cols, lay)
        self._shared.reserve(int(((vis.hi - vis.lo) // piece_bytes(lay)).sum()) + 4 * len(vis) + 16)
        self._shared.enter(self._key0)
        simulate((vis.cid, vis.nsel, vis.nrun, vis.nfrun, vis.lo, vis.hi, vis.full, vis.offsets), calls, self._spec,
                 self._grids, self._fspec, self._state, self._chunk_cache, (self._shared.state[:3], self._mdc),
                 self._maps)
        self._state[0][S_OSPILL] += output_spill(vis, lay.itemsize, lay.chunk_nbytes, self._llc)

    def _fed_by_process(self, cols: AccessColumns) -> bool:
        """Take the chunk cache of the process of ``cols`` (``_caches``). When ``cols`` holds several processes'
        accesses (in time order, or a window across the end of one's), feed them process after process, each in
        its own order, and say so (True): their turns interleave at the granularity of a window
        (WINDOW_ACCESSES), as a merged run's trace holds them process after process anyway."""
        proc, epoch = cols.proc, cols.epoch
        first = int(proc[0])
        if proc.min() == proc.max() and epoch.min() == epoch.max():
            if first != self._proc:
                if first not in self._caches:
                    self._caches[first], self._epochs[first] = new_chunk_cache(self.layout), 0
                self._chunk_cache, self._proc = self._caches[first], first
            self._reopen(first, int(epoch[0]))
            return False
        key = (proc.astype(np.int64) << 32) + epoch  # process after process, each open span after the other
        cols = cols.take(np.argsort(key, kind="stable"))
        key = (cols.proc.astype(np.int64) << 32) + cols.epoch
        cuts = (np.flatnonzero(np.diff(key)) + 1).tolist()
        for lo, hi in zip([0, *cuts], [*cuts, cols.rows]):
            self.feed(cols.rows_between(lo, hi))
        return True

    def _reopen(self, proc: int, epoch: int) -> None:
        """Process ``proc`` now accesses under open span ``epoch``: a later span than its cache's (the dataset or
        its file was closed and opened again) closes that cache (dirty chunks written back, as HDF5 does at the
        close) and starts an empty one."""
        if epoch <= self._epochs[proc]:
            return
        self._shared.enter(self._key0)
        close(self._spec, self._state, self._caches[proc], self._shared.state[:3], self._maps)
        self._chunk_cache = self._caches[proc] = new_chunk_cache(self.layout)
        self._epochs[proc] = epoch

    def snapshot(self) -> Variables:
        """The variables if the run ended after the accesses fed so far (the close included), without ending
        the replay: ``feed`` may go on."""
        caches = list(self._caches.values())
        if self._closed or not any((cache[0][5] == 1).any() for cache in caches):  # no dirty chunk: nothing to add
            return Variables.from_array(self._state[0])
        self._shared.enter(self._key0)
        (nodes, free, st, index), (out, pos, ra) = self._shared.state, self._state
        maps = self._maps
        copies = new_maps(copy_int64_dict(maps[M_ALLOC]), copy_int64_dict(maps[M_WTOUCHED]), copy_int64_dict(index),
                          maps[M_INDEX_BLOCKS])
        out = out.copy()
        state, pages = (out, pos.copy(), ra), (nodes.copy(), free.copy(), st.copy())
        for cache in caches:  # every process closes its file
            close(self._spec, state, cache, pages, copies)
        return Variables.from_array(out)

    def result(self) -> Variables:
        """The counted variables, after the close (dirty chunks written back); no more ``feed`` after it."""
        if not self._closed:
            self._shared.enter(self._key0)
            for cache in self._caches.values():  # every process closes its file
                close(self._spec, self._state, cache, self._shared.state[:3], self._maps)
            self._closed = True
        return Variables.from_array(self._state[0])


__all__ = ["HDF5_METADATA_CACHE", "Replay", "ReplayOptions", "WINDOW_ACCESSES", "chunk_cache_used",
           "index_block_bytes", "replay_key"]
