"""Serial variable counting: Algorithm 1 of Kang et al. and its analogues.

For each access, walk the chunks it covers (``chunks.trace_visits``) and replay
them through the library's behaviour, with cache state persisting across the
whole trace:

HDF5 read: chunk-cache hit -> memcpy only; miss on a chunk that fits the cache
(or any filtered chunk) -> read (and decode) the whole chunk, cache it; an
unfiltered chunk larger than the cache is read piecewise: one request per run
contiguous in both chunk and user buffer, exact bytes; contiguous storage goes
through the 64 KiB sieve buffer (its refills, ``chunks.sieve_requests``).
HDF5 write: whole-chunk writes and never-written chunks need no read; partial
writes of a chunk on disk and not cached read it first; dirty chunks are written
back on eviction and at close; uncacheable unfiltered chunks are written
piecewise (one write per run, no read); contiguous storage by sieve windows,
each read and written back.
Zarr (3, no chunk cache): every access reads and decodes whole chunks; a
partial write reads, merges and rewrites the chunk; shards: a partial shard read
fetches the shard index and the inner chunks byte-ranged, a full one the whole
shard; any shard write rewrites the whole shard.
Every OS request goes through the page cache (LRU) first: a hit counts
n_cache/s_cache, a miss n_rdisk/s_rdisk (+ n_rseek when it does not start where
the previous device read ended).

Where it lives: ``features`` (the variables' names and ``Variables``), ``kernel`` (the compiled walk of one
window: ``simulate``), ``osio`` (one OS request through the page cache and readahead), ``replayer`` (``Replay``:
the state carried from window to window); this module counts one array's accesses (``count_variables``).
"""
from __future__ import annotations

from typing import Sequence

import numpy as np

from instrumentation.columns import AccessColumns, as_columns
from instrumentation.records import AccessRecord, DatasetRecord

from .cache import SharedPageCache
from .features import FEATURES, Variables
from .layout import Layout
from .osio import PAGE
from .replayer import (HDF5_METADATA_CACHE, WINDOW_ACCESSES, Replay, ReplayOptions, chunk_cache_used,
                       index_block_bytes, replay_key)


def count_variables(
    accesses: "AccessColumns | Sequence[AccessRecord]",
    dataset: DatasetRecord,
    layout: Layout,
    page_cache_bytes: int,
    options: ReplayOptions | None = None,
    *,
    others: Sequence[tuple[DatasetRecord, Layout]] = (),
    **kw,
) -> Variables:
    """Replay one rank's accesses of ``dataset`` against ``layout``; count the variables.

    The page cache starts cold. Data that existed before the trace (the dataset
    was not created in it) is on disk in row-major chunk order, or at the chunk
    offsets the trace recorded when ``layout`` is the recorded one; data written
    in the trace is allocated in write order. ``options`` (or its fields as keyword
    arguments: parallel, warm, cache_curve, zarr_overlap, readahead, device_request):
    ``ReplayOptions``. Long traces are walked and replayed WINDOW_ACCESSES at a time (``Replay``).
    ``others``: the process's other arrays (their record and stored layout) whose accesses, among
    ``accesses`` in trace order, run through the same page cache: they evict this array's pages (one page
    cache for every file, ``SharedPageCache``); only this array's variables are counted.
    """
    opts = ReplayOptions.of(options, **kw)
    cols = as_columns(accesses)
    replays = {}
    shared = SharedPageCache(page_cache_bytes)
    replays[dataset.id] = replay = Replay(dataset, layout, page_cache_bytes, opts, page_cache=shared)
    for d, lay in others:
        if d.id != dataset.id:
            replays[d.id] = Replay(d, lay, page_cache_bytes, opts, page_cache=shared)
    ids = np.fromiter(replays, np.int64)
    if not np.isin(cols.ds, ids).all():
        cols = cols.take(np.isin(cols.ds, ids))
    # runs of consecutive rows of one array, replayed in trace order
    cuts = np.flatnonzero(np.diff(cols.ds)) + 1
    for lo, hi in zip([0, *cuts.tolist()], [*cuts.tolist(), cols.rows]):
        run = cols if (lo, hi) == (0, cols.rows) else cols.take(np.arange(lo, hi))
        for window in run.windows(WINDOW_ACCESSES):
            replays[int(cols.ds[lo])].feed(window)
    return replay.result()


__all__ = ["FEATURES", "HDF5_METADATA_CACHE", "PAGE", "Replay", "ReplayOptions", "Variables", "WINDOW_ACCESSES",
           "chunk_cache_used", "count_variables", "index_block_bytes", "replay_key"]

