"""The compiled replay kernel: Algorithm 1 of Kang et al. (chunk visits -> memcpy runs, chunk-cache hits and
misses, OS requests) and its analogues for HDF5's other paths, Zarr and MPI-IO, over one window of accesses.

``simulate`` walks each access's chunk visits (``chunks.trace_visits``) through the library's behaviour (see
``iomodel.variables``) and adds the counted variables (n_calls, n_memcpy, s_memcpy, n_chunks, n_rindex, ...;
``features.FEATURES``) to ``out``; each OS request goes through ``osio.os_read``/``os_write``. Its arguments are
a few arrays with named rows or words, and tuples of them: numba types those from their fingerprint, but a tuple
holding a typed Dict element by element in Python, which cost ten times the rest of a call
(benchmarks/speed/iomodel_percall.py), so the typed Dicts travel in one typed List:

- ``visits``: the window's chunk visits, ``ChunkVisits``' arrays (cid, nsel, nrun, nfrun, lo, hi, full, offsets);
- ``calls``: int64 (CALL_ROWS, accesses): per access, whether it writes, whether it is collective, and its sieve
  requests and bytes per request (contiguous storage, ``chunks.sieve_requests``);
- ``spec``: int64 words ``S_*``: the layout and the replay's constants; ``grids``: int64 (GRID_ROWS, ndim): the
  chunk grid, chunks per shard, shards per dimension, HDF5's hash bits; ``fspec``: float64 words ``F_*``
  (w0, the zarr overlap), then the page-cache curve (sizes, then seconds);
- ``state``: (out, pos, ra): the counted variables, the device positions ``P_*``, the file's readahead state
  (``osio.RA_*``);
- ``chunk_cache``: HDF5's chunk cache (ent, cc, evicted; ``cache.cc_*``);
- ``lru``: the arrays of the OS page cache and of HDF5's metadata cache (nodes, free, st each; ``cache.pc_*``);
- ``maps``: typed List of the int64 Dicts ``M_*``: chunk allocations, written index blocks, the two caches' keys.

All of it carries over from one window to the next.
"""
from __future__ import annotations

import numba
import numpy as np
from numba import types
from numba.typed import List

from .cache import cc_access, cc_hit, cc_insert, hash_slot, pc_access, pc_cached
from .features import (N_CALLS, N_CHUNKS, N_MEMCPY, N_RINDEX, N_WCALLS, N_WDISK, N_WINDEX, N_WSEEK, N_ZOPEN,
                       N_CACHE, N_RSEEK, S_ALLOC, S_DECODE, S_ENCODE, S_MEMCPY, S_MTOUCH, S_WDISK)
from .osio import (PAGE, WRITE_NEW_FILE, WRITE_NEW_SPACE, WRITE_OVER_CACHED, WRITE_OVER_DATA, os_read,
                   os_read_repeat, os_write, os_write_repeat)

(S_ZARR, S_ITEMSIZE, S_CSIZE, S_STORED, S_RDCC_NBYTES, S_NSLOTS, S_FILTERED, S_CHUNKED, S_IBC, S_SIEVE, S_N_INNER,
 S_INDEX_BYTES, S_PREALLOC, S_NCHUNKS, S_PARALLEL, S_FILL_ALLOC, S_KMUL, S_NODE_BYTES, SPEC_WORDS) = range(19)
"""``spec`` words: zarr (1) or HDF5 (0); bytes per element; raw and stored bytes of a chunk; HDF5's chunk cache
(bytes, slots); filtered; chunked (0: contiguous storage); chunks per index block; the sieve buffer's bytes;
inner chunks per shard (0: no shards) and a shard index's bytes; where chunks are (``Replay``: 0 allocated as
written, 1 row-major, 2 as recorded); chunks; MPI-IO's path; HDF5 fills new chunks; page-cache keys per chunk;
bytes of an index block."""

F_W0, F_ZARR_OVERLAP, F_CURVE = range(3)
"""``fspec`` words: HDF5's rdcc_w0; how many chunk reads of one zarr call overlap; the page-cache curve from here
on (``PageCacheCurve.arrays``: n sizes, then n seconds)."""

G_CHUNKS, G_PER_SHARD, G_SHARDS, G_HASH_BITS, GRID_ROWS = range(5)
"""``grids`` rows: chunks per dimension, chunks per shard, shards per dimension, bits per dimension of HDF5's
chunk hash (``cache.hash_bits``)."""

C_WRITE, C_COLLECTIVE, C_SIEVE_REQUESTS, C_SIEVE_BYTES, CALL_ROWS = range(5)
"""``calls`` rows, one column per access."""

P_READ_END, P_WRITE_END, P_NEXT_OFFSET = range(3)
"""``pos`` words: where the last device read and write ended, the next allocation's file offset."""

M_ALLOC, M_WTOUCHED, M_PAGES, M_INDEX_BLOCKS = range(4)
"""``maps`` entries: chunk (or shard) -> file offset allocated; index blocks written; the page cache's and the
metadata cache's key -> node."""

CACHE_LINE = 64
"""Bytes of a CPU cache line: the unit a copy moves through the memory hierarchy."""


_MAP = types.DictType(types.int64, types.int64)


@numba.njit(cache=True)
def new_maps(alloc, wtouched, pages, index_blocks):
    """``maps`` of these Dicts (made in compiled code: a typed List built from Python compiles its helpers anew in
    every process)."""
    maps = List.empty_list(_MAP)
    maps.append(alloc)
    maps.append(wtouched)
    maps.append(pages)
    maps.append(index_blocks)
    return maps


# the small helpers run once or more per chunk visit: inlined (numba IR) rather than called, which speeds up the
# replay of long traces (benchmarks/speed/scale.py: the zarr default chunks of the 1M loader); os_read is not (its
# dozen call sites would take minutes more to compile)

@numba.njit(cache=True, inline="always")
def _copy(out, nsel, nrun, nfrun, lo, hi, itemsize, numpy_loop):
    """The copy between chunk buffer and user buffer of one chunk visit (Algorithm 1's memcpy calls). Its
    cache lines in the chunk buffer: a run of b bytes touches (b + CACHE_LINE - 1) / CACHE_LINE lines on
    average, and the runs together no more than the span they lie in. ``numpy_loop`` (zarr): numpy drops
    an axis the selection spans one element of and loops along the next one, so runs of one element are
    one strided loop, not a call each."""
    nbytes = nsel * itemsize
    out[N_MEMCPY] += 1 if numpy_loop and nrun == nsel else nrun
    out[S_MEMCPY] += nbytes
    out[S_MTOUCH] += min(nbytes + (CACHE_LINE - 1) * nfrun, hi - lo + CACHE_LINE)


@numba.njit(cache=True, inline="always")
def _chunk_lands_on(vcid, alloc, prealloc):
    """What the write-back of a whole chunk lands on: its file space, or space allocated for it now."""
    return WRITE_OVER_DATA if _exists(vcid, alloc, prealloc) else WRITE_NEW_SPACE


@numba.njit(cache=True, inline="always")
def _piece_lands_on(pc, key, allocated):
    """What a piece of chunk ``key`` (written piecewise, under its own key) lands on."""
    if not allocated:
        return WRITE_NEW_SPACE
    return WRITE_OVER_CACHED if pc_cached(pc[2], pc[3], key) else WRITE_OVER_DATA


@numba.njit(cache=True, inline="always")
def _offset_of(unit, alloc, prealloc, unit_bytes, next_off):
    """File offset of a chunk (or shard): recorded, allocation order, or row-major."""
    if prealloc == 1:  # nothing is ever allocated then: no lookup
        return unit * unit_bytes, next_off
    if unit in alloc:
        return alloc[unit], next_off
    alloc[unit] = next_off
    return next_off, next_off + unit_bytes


@numba.njit(cache=True, inline="always")
def _exists(unit, alloc, prealloc):
    return prealloc == 1 or unit in alloc


ROMIO_WRITE_BUFFER = 512 << 10
"""ROMIO's ind_wr_buffer_size: a noncontiguous transfer is packed and written (or data-sieved) in pieces of this."""
ROMIO_READ_BUFFER = 4 << 20
"""ROMIO's ind_rd_buffer_size: the same for reads."""


@numba.njit(cache=True)
def _collective(write, v0, v1, visits, spec, state, pc, curve, alloc, wtouched):
    """One collective MPI-IO transfer of an unfiltered chunked dataset (ROMIO, one node, ranks not interleaved):
    the visits ``v0:v1`` of one access; ``pos`` (``state``) is read and updated.

    HDF5 hands MPI-IO the whole selection as one file type (linked-chunk I/O). ROMIO writes each extent
    contiguous in the file with one request when the user buffer is contiguous too, else packs it through
    its buffer (one request per buffer); an extent with holes is data-sieved: each buffer-sized window
    is read, merged and written back. Measured: 62 write calls where per-run requests counted 960,000
    (docs/parallel-validation.md)."""
    cid_a, nsel_a, nrun_a, nfrun_a, lo_a, hi_a, _, _ = visits
    out, pos, ra = state
    curve_b, curve_s = curve
    itemsize, stored, kmul, ibc = spec[S_ITEMSIZE], spec[S_STORED], spec[S_KMUL], spec[S_IBC]
    prealloc = spec[S_PREALLOC]
    rd_end, wr_end, next_off = pos[P_READ_END], pos[P_WRITE_END], pos[P_NEXT_OFFSET]
    nv = v1 - v0
    lo = np.empty(nv, np.int64)
    hi = np.empty(nv, np.int64)
    holes = np.zeros(nv, np.bool_)
    mem_contig = True
    for k in range(nv):
        j = v0 + k
        cid = cid_a[j]
        out[N_CHUNKS] += 1
        _copy(out, nsel_a[j], nrun_a[j], nfrun_a[j], lo_a[j], hi_a[j], itemsize, False)
        off, next_off = _offset_of(cid, alloc, prealloc, stored, next_off)
        lo[k] = off + lo_a[j]
        hi[k] = off + hi_a[j]
        holes[k] = nfrun_a[j] > 1
        mem_contig = mem_contig and nrun_a[j] == 1
        blk = cid // ibc
        if write and blk not in wtouched:
            wtouched[blk] = 1
            out[N_WINDEX] += 1
    order = np.argsort(lo, kind="mergesort")
    buf = ROMIO_WRITE_BUFFER if write else ROMIO_READ_BUFFER
    k = 0
    while k < nv:
        a = order[k]
        e_lo, e_hi, e_holes = lo[a], hi[a], holes[a]
        k += 1
        while k < nv and lo[order[k]] <= e_hi:
            b = order[k]
            e_hi = max(e_hi, hi[b])
            e_holes = e_holes or holes[b]
            k += 1
        span = e_hi - e_lo
        if e_holes or not mem_contig:
            nreq = (span + buf - 1) // buf
            piece = buf
        else:
            nreq = 1
            piece = span
        for r in range(nreq):
            p_off = e_lo + r * piece
            p_len = min(piece, e_hi - p_off)
            key = (p_off // ROMIO_WRITE_BUFFER) * kmul + 1 + kmul * (1 << 40)
            if write:
                if e_holes:
                    rd_end = os_read(out, pc, key, p_len, p_off, rd_end, curve_b, curve_s, 1.0, ra)
                wr_end = os_write(out, pc, key, p_len, p_off, wr_end, WRITE_NEW_SPACE)
            else:
                rd_end = os_read(out, pc, key, p_len, p_off, rd_end, curve_b, curve_s, 1.0, ra)
    pos[P_READ_END], pos[P_WRITE_END], pos[P_NEXT_OFFSET] = rd_end, wr_end, next_off


@numba.njit(cache=True)
def _sieve_plan(sreq, slen, nbytes, nfrun, lo, hi, sieve):
    """Requests and bytes per request of one access to contiguous storage: ``chunks.sieve_requests`` for a
    regular hyperslab; for points and index lists (``sreq`` < 0) one refill per buffer-sized span of the
    selection, at most one per run, or the runs themselves when longer than the buffer."""
    if sreq >= 0:
        return sreq, slen
    nf = max(1, nfrun)
    if nbytes // nf > sieve:
        return nf, nbytes // nf
    return min(nf, (hi - lo + sieve - 1) // sieve), sieve


@numba.njit(cache=True, nogil=True)
def warm_up(spec, page_cache, maps, nunits, piece):
    """Every stored byte of the array's ``nunits`` chunks (or shards) starts in the page cache, in file order
    (``Replay(warm=True)``); ``piece`` > 0: cached by pieces of that many bytes, the page-cache keys of the
    requests HDF5 makes when it reads without its chunk cache (``piece_bytes``); 0: whole units."""
    nodes, free, st = page_cache
    index, alloc, prealloc = maps[M_PAGES], maps[M_ALLOC], spec[S_PREALLOC]
    sharded, shard_key0 = spec[S_N_INNER] > 0, spec[S_NCHUNKS] + 1
    csize, stored, kmul = spec[S_CSIZE], spec[S_STORED], spec[S_KMUL]
    shard_stored = spec[S_N_INNER] * stored + spec[S_INDEX_BYTES]
    for u in range(nunits):
        if not _exists(u, alloc, prealloc):
            continue
        if sharded:
            pc_access(nodes, free, st, index, (shard_key0 + u) * kmul, shard_stored)
        elif piece:
            for w in range((csize + piece - 1) // piece):
                pc_access(nodes, free, st, index, u * kmul + 1 + w, min(piece, csize - w * piece))
        else:
            pc_access(nodes, free, st, index, u * kmul, stored)


@numba.njit(cache=True, nogil=True)  # candidates are evaluated on threads
def simulate(visits, calls, spec, grids, fspec, state, chunk_cache, lru, maps):
    """Replay one window of accesses (Algorithm 1 of Kang et al. per access, then the library's I/O path per chunk
    visit); adds the variables to ``out`` (n_calls, n_wcalls per access; n_chunks, and n_memcpy, s_memcpy,
    s_mtouch by formula 1, per chunk visit; n_rindex/n_windex per index block, formulas 4 and 6; the OS requests'
    by ``osio``) and carries the state over to the next window. Arguments: see the module's docstring."""
    cid_a, nsel_a, nrun_a, nfrun_a, lo_a, hi_a, full_a, offsets = visits
    out, pos, ra = state
    ent, cc, evicted = chunk_cache
    (nodes, free, st), (mnodes, mfree, mst) = lru
    alloc, wtouched, mindex = maps[M_ALLOC], maps[M_WTOUCHED], maps[M_INDEX_BLOCKS]
    pc = (nodes, free, st, maps[M_PAGES])
    is_zarr, filtered, chunked = spec[S_ZARR] != 0, spec[S_FILTERED] != 0, spec[S_CHUNKED] != 0
    parallel, fill_alloc = spec[S_PARALLEL] != 0, spec[S_FILL_ALLOC] != 0
    itemsize, csize, stored, sieve = spec[S_ITEMSIZE], spec[S_CSIZE], spec[S_STORED], spec[S_SIEVE]
    rdcc_nbytes, nslots, ibc, prealloc = spec[S_RDCC_NBYTES], spec[S_NSLOTS], spec[S_IBC], spec[S_PREALLOC]
    n_inner, index_bytes, nchunks = spec[S_N_INNER], spec[S_INDEX_BYTES], spec[S_NCHUNKS]
    kmul, node_bytes = spec[S_KMUL], spec[S_NODE_BYTES]
    grid, cps_grid, shard_grid, bits = grids[G_CHUNKS], grids[G_PER_SHARD], grids[G_SHARDS], grids[G_HASH_BITS]
    w0, zarr_overlap = fspec[F_W0], fspec[F_ZARR_OVERLAP]
    ncurve = (len(fspec) - F_CURVE) // 2
    curve_b, curve_s = fspec[F_CURVE:F_CURVE + ncurve], fspec[F_CURVE + ncurve:]
    nd = len(grid)
    shard_key0 = nchunks + 1
    rd_end, wr_end, next_off = pos[P_READ_END], pos[P_WRITE_END], pos[P_NEXT_OFFSET]
    use_cc = (not is_zarr) and chunked and (not parallel) and nslots > 0
    fits = use_cc and csize <= rdcc_nbytes
    n_acc = len(offsets) - 1
    sharded = n_inner > 0
    shard_stored = n_inner * stored + index_bytes
    for a in range(n_acc):
        out[N_CALLS] += 1
        write = calls[C_WRITE, a] == 1
        if write:
            out[N_WCALLS] += 1
        v0, v1 = offsets[a], offsets[a + 1]
        # zarr fetches the chunks of one call concurrently: their device waits overlap
        zw = 1.0 / max(1.0, min(float(v1 - v0), zarr_overlap)) if is_zarr else 1.0
        if is_zarr and sharded:
            # group the inner chunks by shard (zarr visits shard by shard)
            nv = v1 - v0
            sid = np.empty(nv, np.int64)
            for k in range(nv):
                rem = cid_a[v0 + k]
                s_lin = 0
                mul = 1
                for d in range(nd - 1, -1, -1):
                    cd = rem % grid[d]
                    rem //= grid[d]
                    s_lin += (cd // cps_grid[d]) * mul
                    mul *= shard_grid[d]
                sid[k] = s_lin
            order = np.argsort(sid, kind="mergesort")
            k = 0
            while k < nv:
                s = sid[order[k]]
                k2 = k
                all_full = True
                while k2 < nv and sid[order[k2]] == s:
                    j = v0 + order[k2]
                    out[N_CHUNKS] += 1
                    _copy(out, nsel_a[j], nrun_a[j], nfrun_a[j], lo_a[j], hi_a[j], itemsize, True)
                    all_full = all_full and full_a[j]
                    k2 += 1
                cnt = k2 - k
                exists = _exists(s, alloc, prealloc)
                skey = (shard_key0 + s) * kmul
                if not write:
                    out[N_ZOPEN] += 1
                    if exists:
                        off, next_off = _offset_of(s, alloc, prealloc, shard_stored, next_off)
                        if cnt == n_inner:
                            rd_end = os_read(out, pc, skey, shard_stored, off, rd_end, curve_b, curve_s, zw, ra)
                        else:
                            out[N_RINDEX] += 1
                            rd_end = os_read(out, pc, skey + 1, index_bytes, off + n_inner * stored, rd_end, curve_b, curve_s, 1.0, ra)
                            for q in range(k, k2):
                                j = v0 + order[q]
                                out[N_ZOPEN] += 1
                                inner = cid_a[j] * kmul
                                rd_end = os_read(out, pc, inner, stored, off, rd_end, curve_b, curve_s, zw, ra)
                        if filtered:
                            out[S_DECODE] += cnt * csize
                    out[S_ALLOC] += cnt * csize
                else:
                    complete = cnt == n_inner and all_full
                    if exists and not complete:
                        out[N_ZOPEN] += 1
                        off, next_off = _offset_of(s, alloc, prealloc, shard_stored, next_off)
                        rd_end = os_read(out, pc, skey, shard_stored, off, rd_end, curve_b, curve_s, 1.0, ra)
                        if filtered:
                            for q in range(k, k2):
                                if not full_a[v0 + order[q]]:
                                    out[S_DECODE] += csize
                    off, next_off = _offset_of(s, alloc, prealloc, shard_stored, next_off)
                    out[N_ZOPEN] += 1
                    out[N_WINDEX] += 1
                    if filtered:
                        out[S_ENCODE] += cnt * csize
                    out[S_ALLOC] += cnt * csize
                    wr_end = os_write(out, pc, skey, shard_stored, off, wr_end, WRITE_NEW_FILE)
                k = k2
            continue
        if calls[C_COLLECTIVE, a] != 0 and parallel and not filtered and not is_zarr and chunked:
            pos[P_READ_END], pos[P_WRITE_END], pos[P_NEXT_OFFSET] = rd_end, wr_end, next_off
            _collective(write, v0, v1, visits, spec, state, pc, (curve_b, curve_s), alloc, wtouched)
            rd_end, wr_end, next_off = pos[P_READ_END], pos[P_WRITE_END], pos[P_NEXT_OFFSET]
            continue
        for j in range(v0, v1):
            cid = cid_a[j]
            nbytes = nsel_a[j] * itemsize
            out[N_CHUNKS] += 1
            nreq, rlen = 0, 0
            if not chunked and not is_zarr:
                nreq, rlen = _sieve_plan(calls[C_SIEVE_REQUESTS, a], calls[C_SIEVE_BYTES, a], nbytes, nfrun_a[j],
                                         lo_a[j], hi_a[j], sieve)
            if rlen <= sieve:  # runs longer than the sieve buffer move between file and the user's buffer
                _copy(out, nsel_a[j], nrun_a[j], nfrun_a[j], lo_a[j], hi_a[j], itemsize, is_zarr)
            key = cid * kmul
            if is_zarr:
                exists = _exists(cid, alloc, prealloc)
                out[N_ZOPEN] += 1 if write else zw
                out[S_ALLOC] += csize
                if not write:
                    if exists:
                        off, next_off = _offset_of(cid, alloc, prealloc, stored, next_off)
                        rd_end = os_read(out, pc, key, stored, off, rd_end, curve_b, curve_s, zw, ra)
                        if filtered:
                            out[S_DECODE] += csize
                else:
                    if exists and not full_a[j]:
                        out[N_ZOPEN] += 1
                        off, next_off = _offset_of(cid, alloc, prealloc, stored, next_off)
                        rd_end = os_read(out, pc, key, stored, off, rd_end, curve_b, curve_s, zw, ra)
                        if filtered:
                            out[S_DECODE] += csize
                    if filtered:
                        out[S_ENCODE] += csize
                    off, next_off = _offset_of(cid, alloc, prealloc, stored, next_off)
                    wr_end = os_write(out, pc, key, stored, off, wr_end, WRITE_NEW_FILE)
                continue
            # ------------------------------------------------------------ HDF5
            allocated = _exists(cid, alloc, prealloc)
            blk = cid // ibc
            # the index block addressing the chunk, through HDF5's metadata cache (LRU of its capacity)
            if allocated and chunked and not pc_access(mnodes, mfree, mst, mindex, blk, node_bytes):
                out[N_RINDEX] += 1
            if parallel and not filtered:
                # MPI-IO: one request per run contiguous in both chunk and buffer (formulas 8-10);
                # requests that continue where the previous one ended do not seek: one seek per
                # run contiguous in the chunk alone (measured: docs/parallel-validation.md)
                off, next_off = _offset_of(cid, alloc, prealloc, stored, next_off)
                if write:
                    out[N_WDISK] += nrun_a[j]
                    out[S_WDISK] += nbytes
                    out[N_WSEEK] += nfrun_a[j]
                    if blk not in wtouched:
                        wtouched[blk] = 1
                        out[N_WINDEX] += 1
                else:
                    # the chunk's first request brings its selected pages in (readahead); the other
                    # requests are served by the page cache, after a seek per further run contiguous in
                    # the file (the mpio-read-rw case of benchmarks/validation/parallel_validation.py: the counts match
                    # and the time is page-cache speed, not device speed; docs/parallel-validation.md)
                    rd_end = os_read(out, pc, key, nbytes, off, rd_end, curve_b, curve_s, 1.0, ra)
                    out[N_CACHE] += nrun_a[j] - 1
                    out[N_RSEEK] += nfrun_a[j] - 1
                continue
            slot = -1
            if fits:
                slot = hash_slot(cid, grid, bits, nslots)
                if ent[0, slot] == cid:
                    cc_hit(ent, cc, slot)
                    cc_access(ent, cc, slot, nbytes, write, csize)
                    continue
            cacheable = filtered or fits or (write and not allocated and chunked and fill_alloc)
            if not cacheable:
                # piecewise (unfiltered and larger than the cache, or contiguous storage)
                if not allocated and not write:
                    continue  # fill value, no I/O
                off, next_off = _offset_of(cid, alloc, prealloc, stored, next_off)
                lo, hi = lo_a[j], hi_a[j]
                if chunked:
                    # one request per run contiguous in both chunk and user buffer, exact bytes,
                    # no sieve and no read before a write (measured: benchmarks/validation/iomodel_syscalls.py)
                    nreq = nrun_a[j]
                    run = nbytes // nreq
                    step = (hi - lo - run) // max(1, nreq - 1)
                    r = 0
                    # keyed per page: a small request brings in its own page only, not the 64 KiB
                    # around it (random rows of an uncached chunk, cold: one device read per page touched;
                    # benchmarks/investigations/uncached_row_reads.py)
                    while r < nreq:  # the requests in one page (page-cache key) at a time
                        roff = lo + r * step
                        wkey = key + 1 + roff // PAGE
                        wend = (roff // PAGE + 1) * PAGE  # the page's end
                        r2 = nreq if step <= 0 else min(nreq, r + 1 + (wend - 1 - roff) // step)
                        if write:
                            wr_end = os_write(out, pc, wkey, run, off + roff, wr_end,
                                              _piece_lands_on(pc, key, allocated))
                            if r2 > r + 1:
                                wr_end = os_write_repeat(out, pc, wkey, run, (off + roff + step, step, r2 - r - 1),
                                                         wr_end, _piece_lands_on(pc, key, allocated))
                        else:
                            rd_end = os_read(out, pc, wkey, run, off + roff, rd_end, curve_b, curve_s, 1.0, ra)
                            if r2 > r + 1:
                                rd_end = os_read_repeat(out, pc, wkey, run, (off + roff + step, step, r2 - r - 1),
                                                        rd_end, (curve_b, curve_s), 1.0, ra)
                        r = r2
                else:
                    # contiguous storage goes through the sieve buffer (``_sieve_plan``): its refills,
                    # spread over the selected span (each starts past the previous one's end but for a
                    # run that straddled it), each read (for writes, read then written back); runs longer
                    # than the buffer go straight between the file and the user's buffer (no read first)
                    gap = max((hi - lo - rlen) // (nreq - 1) if nreq > 1 else 0, min(rlen, sieve))
                    for r in range(nreq):
                        woff = min(lo + r * gap, hi - 1)
                        wlen = min(rlen, csize - woff)
                        wkey = key + 1 + woff // sieve
                        if not write or rlen <= sieve:
                            rd_end = os_read(out, pc, wkey, wlen, off + woff, rd_end, curve_b, curve_s, 1.0, ra)
                        if write:
                            wr_end = os_write(out, pc, wkey, wlen, off + woff, wr_end,
                                               _piece_lands_on(pc, key, allocated))
                if write and blk not in wtouched:
                    wtouched[blk] = 1
                    out[N_WINDEX] += 1
                continue
            # whole chunk through the cache (or a filtered chunk larger than it): HDF5 allocates its
            # buffer (and fills it with the fill value when the chunk is not on disk)
            out[S_ALLOC] += csize
            if allocated and (not write or not full_a[j]):
                off, next_off = _offset_of(cid, alloc, prealloc, stored, next_off)
                rd_end = os_read(out, pc, key, stored, off, rd_end, curve_b, curve_s, 1.0, ra)
                if filtered:
                    out[S_DECODE] += csize
            n_ev = 0
            if fits:
                n_ev = cc_insert(ent, cc, slot, cid, csize, rdcc_nbytes, w0, evicted)
                cc_access(ent, cc, slot, nbytes, write, csize)
            elif write:  # processed outside the cache: written at once
                evicted[0] = cid
                n_ev = 1
            for e in range(n_ev):  # write-back of dirty chunks
                vcid = evicted[e]
                lands_on = _chunk_lands_on(vcid, alloc, prealloc)
                off, next_off = _offset_of(vcid, alloc, prealloc, stored, next_off)
                if filtered:
                    out[S_ENCODE] += csize
                wr_end = os_write(out, pc, vcid * kmul, stored, off, wr_end, lands_on)
                vb = vcid // ibc
                if vb not in wtouched:
                    wtouched[vb] = 1
                    out[N_WINDEX] += 1
    pos[P_READ_END], pos[P_WRITE_END], pos[P_NEXT_OFFSET] = rd_end, wr_end, next_off


@numba.njit(cache=True, nogil=True)
def close(spec, state, chunk_cache, page_cache, maps):
    """Close: flush dirty chunks from the head of the chunk cache's list (each written back: n_wdisk, s_wdisk,
    and s_encode when filtered; formulas 5-6)."""
    out, pos, _ = state
    ent, cc, _ = chunk_cache
    nodes, free, st = page_cache
    pc = (nodes, free, st, maps[M_PAGES])
    alloc, wtouched, prealloc = maps[M_ALLOC], maps[M_WTOUCHED], spec[S_PREALLOC]
    stored, kmul, csize, ibc = spec[S_STORED], spec[S_KMUL], spec[S_CSIZE], spec[S_IBC]
    filtered = spec[S_FILTERED] != 0
    wr_end, next_off = pos[P_WRITE_END], pos[P_NEXT_OFFSET]
    s = cc[0]
    while s >= 0:
        if ent[5, s] == 1:
            vcid = ent[0, s]
            lands_on = _chunk_lands_on(vcid, alloc, prealloc)
            off, next_off = _offset_of(vcid, alloc, prealloc, stored, next_off)
            if filtered:
                out[S_ENCODE] += csize
            wr_end = os_write(out, pc, vcid * kmul, stored, off, wr_end, lands_on)
            vb = vcid // ibc
            if vb not in wtouched:
                wtouched[vb] = 1
                out[N_WINDEX] += 1
        s = ent[2, s]
    pos[P_WRITE_END], pos[P_NEXT_OFFSET] = wr_end, next_off


__all__ = ["CALL_ROWS", "GRID_ROWS", "SPEC_WORDS", "close", "new_maps", "simulate", "warm_up"]
