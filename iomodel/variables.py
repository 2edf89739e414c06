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
"""
from __future__ import annotations

from dataclasses import dataclass, fields, replace
from typing import TYPE_CHECKING, Sequence

import numba
import numpy as np

from instrumentation.columns import AccessColumns, as_columns
from instrumentation.records import AccessRecord, DatasetRecord

from .cache import (PC_CAP, PC_INSERTED, SharedPageCache, cc_access, cc_hit, cc_insert, copy_int64_dict, hash_bits,
                    hash_slot, int64_dict, new_page_cache, pc_access, pc_cached)
from .chunks import ChunkVisits, sieve_requests, trace_visits
from .layout import Layout

if TYPE_CHECKING:  # the profile reads FEATURES from here; at run time the curve is only called
    from .profile import PageCacheCurve

FEATURES = (
    "n_calls", "n_memcpy", "s_memcpy", "n_cache", "s_cache", "n_rdisk", "s_rdisk", "n_wdisk", "s_wdisk",
    "n_rseek", "n_wseek", "n_rindex", "n_windex", "n_zopen", "n_chunks", "s_decode", "s_encode",
    "x_cache", "s_alloc", "s_rseek", "s_mtouch", "s_wnew", "n_wcalls",
)
"""Counted variables, in design-matrix column order (also the coefficient names)."""

(N_CALLS, N_MEMCPY, S_MEMCPY, N_CACHE, S_CACHE, N_RDISK, S_RDISK, N_WDISK, S_WDISK,
 N_RSEEK, N_WSEEK, N_RINDEX, N_WINDEX, N_ZOPEN, N_CHUNKS, S_DECODE, S_ENCODE, X_CACHE, S_ALLOC, S_RSEEK, S_MTOUCH,
 S_WNEW, N_WCALLS) = range(len(FEATURES))

CACHE_LINE = 64
"""Bytes of a CPU cache line: the unit a copy moves through the memory hierarchy."""


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


# ------------------------------------------------------------------------ the replay kernel
# the small helpers run once or more per chunk visit: inlined (numba IR) rather than called, which speeds up the
# replay of long traces (benchmarks/scale.py: the zarr default chunks of the 1M loader); _os_read is not (its
# dozen call sites would take minutes more to compile)
@numba.njit(cache=True, inline="always")
def _curve_seconds(curve_b, curve_s, nbytes):
    """Seconds of one page-cache hit of ``nbytes`` by the measured curve: interpolated in log2(size),
    constant below the first point, proportional to the size beyond the last."""
    n = len(curve_b)
    if n == 0:
        return 0.0
    if nbytes <= curve_b[0]:
        return curve_s[0]
    if nbytes >= curve_b[n - 1]:
        return curve_s[n - 1] * nbytes / curve_b[n - 1]
    x = np.log2(nbytes)
    i = 1
    while curve_b[i] < nbytes:
        i += 1
    x0, x1 = np.log2(curve_b[i - 1]), np.log2(curve_b[i])
    return curve_s[i - 1] + (curve_s[i] - curve_s[i - 1]) * (x - x0) / (x1 - x0)


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


PAGE = 4096
"""Bytes of a page: the kernel's readahead works in pages."""

(RA_MAX, RA_START, RA_SIZE, RA_ASYNC, RA_PREV, RA_EOF, RA_COUNT, RA_STAMP, RA_SHIFT, RA_PEND, RA_PFIRST, RA_PEND_LO,
 RA_PEND_HI, RA_PWAITED, RA_PNEXT, RA_REQ, RA_WORDS) = range(17)
"""The readahead state of a file (``Replay._ra``, in pages but RA_MAX in bytes): the device's largest window
(0: readahead not modelled), the current window (start, size, async tail: its first page is the marker that
asks for the next window), the page the previous read's end fell in (the kernel's prev_pos), the file's end,
the pages it brought in and the bytes the process's page cache had taken in (``PC_INSERTED``) since its record
was last emptied (once either is more than the page cache holds, the oldest are gone), the window
asked for ahead of need and not waited for yet (its new pages, first new page, first and end page, and whether a
read waited for part of it: its request is counted then, and the first page of the last window queued into it),
the pages of the device's largest request (a window is split into requests of this size; 0: a window is one
request), log2 of the
pages per bit of the record of cached pages that follows from RA_WORDS on (one page per bit up to 64 GiB
files: the kernel reads only the pages not cached yet, and looks back at them to continue a stream)."""

RA_BITS = 1 << 24
"""Most bits in a file's record of cached pages (2 MiB): larger files get several pages per bit."""


def readahead_state(readahead: int, file_bytes: int, device_request: int = 0) -> np.ndarray:
    """A file's initial readahead state (``RA_*``), no page cached."""
    pages = -(-max(file_bytes, 1) // PAGE)
    shift = max(0, (pages - 1).bit_length() - RA_BITS.bit_length() + 1) if readahead else 0
    ra = np.zeros(RA_WORDS + (-(-(pages >> shift) // 64) + 1 if readahead else 0), np.int64)
    ra[RA_MAX], ra[RA_PREV], ra[RA_SHIFT], ra[RA_REQ] = readahead, -2, shift, device_request // PAGE
    ra[RA_EOF] = pages
    return ra


@numba.njit(cache=True)
def _ra_init_size(req, max_pages):
    """get_init_ra_size (mm/readahead.c): the first window of a stream, 4x or 2x the request rounded up to a
    power of two, at most the device's maximum."""
    size = 1
    while size < req:
        size *= 2
    if size <= max_pages // 32:
        return 4 * size
    if size <= max_pages // 4:
        return 2 * size
    return max_pages


@numba.njit(cache=True)
def _ra_next_size(cur, max_pages):
    """get_next_ra_size: each next window 4x the previous while small, then 2x, up to the maximum."""
    if cur < max_pages // 16:
        return 4 * cur
    if cur <= max_pages // 2:
        return 2 * cur
    return max_pages


@numba.njit(cache=True)
def _ra_cached(ra, page):
    b = page >> ra[RA_SHIFT]
    return (ra[RA_WORDS + b // 64] >> (b % 64)) & 1 == 1


@numba.njit(cache=True)
def _ra_charge(out, new, first_new, dev_end, dev_weight, request=True):
    """The device request of ``new`` pages from page ``first_new`` on, waited for; returns the device position.
    ``request`` False: the rest of a request already waited for (its bytes only)."""
    if request:
        out[N_RDISK] += dev_weight
    out[S_RDISK] += new * PAGE
    if first_new * PAGE != dev_end:
        out[N_RSEEK] += dev_weight
        out[S_RSEEK] += new * PAGE
    return (first_new + new) * PAGE


@numba.njit(cache=True)
def _ra_settle(out, ra, dev_end, dev_weight):
    """The window asked for ahead of need is waited for (read into, or the device is needed again)."""
    if ra[RA_PEND] > 0:
        dev_end = _ra_charge(out, ra[RA_PEND], ra[RA_PFIRST], dev_end, dev_weight, ra[RA_PWAITED] == 0)
        ra[RA_PEND], ra[RA_PWAITED] = 0, 0
    return dev_end


@numba.njit(cache=True)
def _ra_wait(out, ra, last, dev_end, dev_weight):
    """A read ending before page ``last`` waits for the window asked for ahead of it. The block layer splits a
    window into requests of the device's largest size (``max_sectors_kb``) and the device serves them in
    order: the read waits for the requests up to the one holding ``last``; the others stay ahead of need (the
    8 MiB window that two ranks' halves of w08 end in is two requests of 4 MiB). The window's request is
    counted at the first wait."""
    req = ra[RA_REQ]
    if req > 0:  # requests run from each window's first page: the earlier window's rest, then the last one's
        cut = max(ra[RA_PNEXT], ra[RA_PFIRST])
        if last <= cut:
            n = min(-(-(last - ra[RA_PFIRST]) // req) * req, cut - ra[RA_PFIRST])
        else:
            n = cut - ra[RA_PFIRST] + -(-(last - cut) // req) * req
    else:
        n = ra[RA_PEND]
    if req == 0 or n >= ra[RA_PEND]:
        return _ra_settle(out, ra, dev_end, dev_weight)
    if n <= 0:
        return dev_end
    dev_end = _ra_charge(out, n, ra[RA_PFIRST], dev_end, dev_weight, ra[RA_PWAITED] == 0)
    ra[RA_PEND] -= n
    ra[RA_PFIRST] += n
    ra[RA_PEND_LO] = max(ra[RA_PEND_LO], ra[RA_PFIRST])
    ra[RA_PWAITED] = 1
    return dev_end


@numba.njit(cache=True)
def _ra_fetch(out, ra, start, size, dev_end, dev_weight, ahead):
    """One device request: the pages of ``size`` at page ``start`` before the file's end not cached yet (the
    kernel skips the others); returns the device position. ``ahead``: an async window, priced only once a read
    waits for it (the last window of a run ends with nobody waiting)."""
    end = min(start + size, ra[RA_EOF])
    new, first_new = 0, -1
    for page in range(max(start, 0), end):
        if not _ra_cached(ra, page):
            b = page >> ra[RA_SHIFT]
            ra[RA_WORDS + b // 64] |= np.int64(1) << (b % 64)
            new += 1
            if first_new < 0:
                first_new = page
    if new == 0:
        return dev_end
    ra[RA_COUNT] += new
    if ahead and ra[RA_REQ] > 0 and ra[RA_PEND] > 0 and ra[RA_PFIRST] + ra[RA_PEND] == first_new:
        # queued behind the rest of the window before it: a read waits for both in order, nobody for either yet
        # (the earlier window's request is counted now, its bytes when waited for)
        if ra[RA_PWAITED] == 0:
            out[N_RDISK] += dev_weight
        ra[RA_PEND] += new
        ra[RA_PEND_HI], ra[RA_PNEXT] = end, first_new
        ra[RA_PWAITED] = 0
        return dev_end
    dev_end = _ra_settle(out, ra, dev_end, dev_weight)
    if ahead:
        ra[RA_PEND], ra[RA_PFIRST], ra[RA_PEND_LO], ra[RA_PEND_HI], ra[RA_PNEXT] = new, first_new, start, end, first_new
        return dev_end
    return _ra_charge(out, new, first_new, dev_end, dev_weight)


@numba.njit(cache=True)
def _os_read(out, pc, key, nbytes, offset, dev_end, curve_b, curve_s, dev_weight, ra):
    """One read request through the page cache; returns the new device position.

    ``dev_weight`` < 1: the request's latency overlaps with other requests of the same call (zarr's concurrent
    chunk fetches): its counts are weighted, its bytes are not, as the device's bandwidth is shared (4-10
    concurrent readers of 1-16 MiB files read 1.14-1.41x one reader's bytes per second:
    benchmarks/device_concurrency.py). ``ra`` (``RA_*``; updated): the kernel's on-demand readahead
    (mm/readahead.c; checked here against /proc/self/io read_bytes per call): a miss right after the previous read
    (or at the file's start) opens a window 2-4x the request; a read reaching a window's marker page asks for the
    next, larger window, ahead of need, whatever it skipped on the way (slab writes that read only their partial
    chunks move a stream as a scan does); a miss just after pages that are cached continues from them (context
    readahead: the stream's own, or a chunk read before); any other miss reads its pages alone. The device reads
    whole windows, so a forward pattern with gaps costs the windows' bytes, not the ones requested (slab writes of
    the validation's tall array: 10.4 MiB from the device for 2.1 requested)."""
    nodes, free, st, index = pc
    first = offset // PAGE
    last = (offset + nbytes + PAGE - 1) // PAGE
    prev = ra[RA_PREV]
    ra[RA_PREV] = (offset + nbytes) // PAGE
    max_pages = max(ra[RA_MAX] // PAGE, 1)
    if pc_access(nodes, free, st, index, key, nbytes):
        out[N_CACHE] += 1
        out[S_CACHE] += nbytes
        out[X_CACHE] += _curve_seconds(curve_b, curve_s, nbytes)
        # a hit on a window's marker page asks for the next window all the same
        asked = 0
        while ra[RA_SIZE] > 0 and first <= ra[RA_START] + ra[RA_SIZE] - ra[RA_ASYNC] < last:
            ra[RA_START] += ra[RA_SIZE]
            ra[RA_SIZE] = _ra_next_size(ra[RA_SIZE], max_pages)
            ra[RA_ASYNC] = ra[RA_SIZE]
            dev_end = _ra_fetch(out, ra, ra[RA_START], ra[RA_SIZE], dev_end, dev_weight, True)
            asked += 1
        if ra[RA_PEND] > 0 and asked > 1:
            dev_end = _ra_settle(out, ra, dev_end, dev_weight)
        elif ra[RA_PEND] > 0 and first < ra[RA_PEND_HI] and last > ra[RA_PEND_LO]:
            dev_end = _ra_wait(out, ra, last, dev_end, dev_weight)
        return dev_end
    if ra[RA_MAX] == 0:
        out[N_RDISK] += dev_weight
        out[S_RDISK] += nbytes
        if offset != dev_end:
            out[N_RSEEK] += dev_weight
            out[S_RSEEK] += nbytes
        return offset + nbytes
    if max(ra[RA_COUNT] * PAGE, st[PC_INSERTED] - ra[RA_STAMP]) > st[PC_CAP]:
        # more came into the page cache than it holds since the record began (readahead's pages, or the
        # requests of this and the process's other arrays; mostly the same pages): its oldest are gone
        ra[RA_WORDS:] = 0
        ra[RA_COUNT], ra[RA_STAMP] = 0, st[PC_INSERTED]
    waited = False
    asked = 0
    page = first
    while page < last:
        if page < ra[RA_EOF] and _ra_cached(ra, page):
            if ra[RA_SIZE] > 0 and page == ra[RA_START] + ra[RA_SIZE] - ra[RA_ASYNC]:  # the marker page
                ra[RA_START] += ra[RA_SIZE]
                ra[RA_SIZE] = _ra_next_size(ra[RA_SIZE], max_pages)
                ra[RA_ASYNC] = ra[RA_SIZE]
                dev_end = _ra_fetch(out, ra, ra[RA_START], ra[RA_SIZE], dev_end, dev_weight, True)
                asked += 1
            elif ra[RA_PEND] > 0 and ra[RA_PEND_LO] <= page < ra[RA_PEND_HI]:
                dev_end = _ra_wait(out, ra, last, dev_end, dev_weight)
            page += 1
            continue
        req = last - page
        waited = True
        if page >= ra[RA_EOF]:  # past the file's end as laid out (it grew): the pages as requested
            out[N_RDISK] += dev_weight
            out[S_RDISK] += req * PAGE
            dev_end = last * PAGE
            break
        if page == 0 or 0 <= page - prev <= 1:  # the start of the file or a sequential miss: a new stream
            size = _ra_init_size(req, max_pages)
            ra[RA_START], ra[RA_SIZE], ra[RA_ASYNC] = page, size, size - req if size > req else size
        else:
            contig = 0
            while contig < max_pages and page - contig - 1 >= 0 and _ra_cached(ra, page - contig - 1):
                contig += 1
            if contig <= req:  # a read on its own: its pages only, the stream left as it was
                dev_end = _ra_fetch(out, ra, page, req, dev_end, dev_weight, False)
                break
            ra[RA_START], ra[RA_SIZE], ra[RA_ASYNC] = page, min(contig + req, max_pages), 1
        dev_end = _ra_fetch(out, ra, ra[RA_START], ra[RA_SIZE], dev_end, dev_weight, False)
        asked += 1
    if asked > 1:  # windows asked for by one read go to the device together (adjacent): waited for together
        dev_end = _ra_settle(out, ra, dev_end, dev_weight)
    if not waited:  # every page was asked for before: a page-cache copy
        out[N_CACHE] += 1
        out[S_CACHE] += nbytes
        out[X_CACHE] += _curve_seconds(curve_b, curve_s, nbytes)
    return dev_end


WRITE_NEW_SPACE, WRITE_OVER_DATA, WRITE_OVER_CACHED, WRITE_NEW_FILE = 0, 1, 2, 3
"""What a write request lands on (``_os_write``): file space allocated by this write, space that held data
already, a piece of a chunk whose pages are cached whole (read or written whole before: the piece's own key
may be new), or a new file replacing the old (zarr writes a temporary file and renames it)."""


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


@numba.njit(cache=True)
def _os_write(out, pc, key, nbytes, offset, last_end, lands_on):
    """One write request through the page cache (``lands_on``: ``WRITE_*``); returns the new write position.

    Pages not in the page cache are new pages (``s_wnew``). Over data on disk, a page the request covers only in
    part is read from the device first (the kernel's write_begin: a write at an unaligned offset of an evicted file
    costs several times a page-aligned one; docs/iomodel-validation.md): one device read per end that falls inside a page, but
    for the start of a write continuing the previous one."""
    nodes, free, st, index = pc
    hit = pc_access(nodes, free, st, index, key, nbytes)
    out[N_WDISK] += 1
    out[S_WDISK] += nbytes
    if offset != last_end:
        out[N_WSEEK] += 1
    if lands_on == WRITE_NEW_FILE or not (hit or lands_on == WRITE_OVER_CACHED):
        out[S_WNEW] += nbytes
    if lands_on == WRITE_OVER_DATA and not hit and nbytes > 0:
        end = offset + nbytes
        # a write continuing the previous one starts in the page that one ended in: cached
        head = offset % PAGE != 0 and offset != last_end
        partial = head + (end % PAGE != 0)
        if partial == 2 and offset // PAGE == (end - 1) // PAGE:
            partial = 1  # both ends in one page
        out[N_RDISK] += partial
        out[S_RDISK] += partial * PAGE
        out[N_RSEEK] += partial
        out[S_RSEEK] += partial * PAGE
    return offset + nbytes


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
def _collective(out, pc, write, v0, v1, cid_a, nsel_a, nrun_a, nfrun_a, lo_a, hi_a, itemsize, stored, kmul,
                ibc, alloc, prealloc, next_off, wtouched, rd_end, wr_end, curve_b, curve_s, ra):
    """One collective MPI-IO transfer of an unfiltered chunked dataset (ROMIO, one node, ranks not interleaved).

    HDF5 hands MPI-IO the whole selection as one file type (linked-chunk I/O). ROMIO writes each extent
    contiguous in the file with one request when the user buffer is contiguous too, else packs it through
    its buffer (one request per buffer); an extent with holes is data-sieved: each buffer-sized window
    is read, merged and written back. Measured: 62 write calls where per-run requests counted 960,000
    (docs/parallel-validation.md)."""
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
                    rd_end = _os_read(out, pc, key, p_len, p_off, rd_end, curve_b, curve_s, 1.0, ra)
                wr_end = _os_write(out, pc, key, p_len, p_off, wr_end, WRITE_NEW_SPACE)
            else:
                rd_end = _os_read(out, pc, key, p_len, p_off, rd_end, curve_b, curve_s, 1.0, ra)
    return rd_end, wr_end, next_off


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
def _warm_up(pc, alloc, prealloc, nunits, sharded, shard_key0, shard_stored, piecewise, csize, stored, sieve, kmul):
    """Every stored byte starts in the page cache, in file order (``warm``)."""
    nodes, free, st, index = pc
    for u in range(nunits):
        if not _exists(u, alloc, prealloc):
            continue
        if sharded:
            pc_access(nodes, free, st, index, (shard_key0 + u) * kmul, shard_stored)
        elif piecewise:
            for w in range((csize + sieve - 1) // sieve):
                pc_access(nodes, free, st, index, u * kmul + 1 + w, min(sieve, csize - w * sieve))
        else:
            pc_access(nodes, free, st, index, u * kmul, stored)


@numba.njit(cache=True, nogil=True)  # candidates are evaluated on threads
def _simulate(cid_a, nsel_a, nrun_a, nfrun_a, lo_a, hi_a, full_a, offsets, ops, coll, sreq_a, slen_a,
              is_zarr, itemsize, csize, stored, grid, bits,
              rdcc_nbytes, nslots, w0, filtered, chunked, ibc, sieve,
              cps_grid, shard_grid, n_inner, index_bytes,
              prealloc, alloc, nchunks, pc, parallel, fill_alloc, curve_b, curve_s, zarr_overlap, ra,
              kmul, out, ent, cc, evicted, mdc, node_bytes, wtouched, pos):
    """Replay one window of accesses; the state (``out`` onwards; ``pos`` = device read end, write end, next
    allocation offset) carries over to the next window."""
    nd = len(grid)
    shard_key0 = nchunks + 1
    rd_end, wr_end, next_off = pos[0], pos[1], pos[2]
    use_cc = (not is_zarr) and chunked and (not parallel) and nslots > 0
    fits = use_cc and csize <= rdcc_nbytes
    n_acc = len(offsets) - 1
    sharded = n_inner > 0
    shard_stored = n_inner * stored + index_bytes
    for a in range(n_acc):
        out[N_CALLS] += 1
        write = ops[a] == 1
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
                            rd_end = _os_read(out, pc, skey, shard_stored, off, rd_end, curve_b, curve_s, zw, ra)
                        else:
                            out[N_RINDEX] += 1
                            rd_end = _os_read(out, pc, skey + 1, index_bytes, off + n_inner * stored, rd_end, curve_b, curve_s, 1.0, ra)
                            for q in range(k, k2):
                                j = v0 + order[q]
                                out[N_ZOPEN] += 1
                                inner = cid_a[j] * kmul
                                rd_end = _os_read(out, pc, inner, stored, off, rd_end, curve_b, curve_s, zw, ra)
                        if filtered:
                            out[S_DECODE] += cnt * csize
                    out[S_ALLOC] += cnt * csize
                else:
                    complete = cnt == n_inner and all_full
                    if exists and not complete:
                        out[N_ZOPEN] += 1
                        off, next_off = _offset_of(s, alloc, prealloc, shard_stored, next_off)
                        rd_end = _os_read(out, pc, skey, shard_stored, off, rd_end, curve_b, curve_s, 1.0, ra)
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
                    wr_end = _os_write(out, pc, skey, shard_stored, off, wr_end, WRITE_NEW_FILE)
                k = k2
            continue
        if coll[a] and parallel and not filtered and not is_zarr and chunked:
            rd_end, wr_end, next_off = _collective(
                out, pc, write, v0, v1, cid_a, nsel_a, nrun_a, nfrun_a, lo_a, hi_a, itemsize, stored, kmul, ibc,
                alloc, prealloc, next_off, wtouched, rd_end, wr_end, curve_b, curve_s, ra)
            continue
        for j in range(v0, v1):
            cid = cid_a[j]
            nbytes = nsel_a[j] * itemsize
            out[N_CHUNKS] += 1
            nreq, rlen = 0, 0
            if not chunked and not is_zarr:
                nreq, rlen = _sieve_plan(sreq_a[a], slen_a[a], nbytes, nfrun_a[j], lo_a[j], hi_a[j], sieve)
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
                        rd_end = _os_read(out, pc, key, stored, off, rd_end, curve_b, curve_s, zw, ra)
                        if filtered:
                            out[S_DECODE] += csize
                else:
                    if exists and not full_a[j]:
                        out[N_ZOPEN] += 1
                        off, next_off = _offset_of(cid, alloc, prealloc, stored, next_off)
                        rd_end = _os_read(out, pc, key, stored, off, rd_end, curve_b, curve_s, zw, ra)
                        if filtered:
                            out[S_DECODE] += csize
                    if filtered:
                        out[S_ENCODE] += csize
                    off, next_off = _offset_of(cid, alloc, prealloc, stored, next_off)
                    wr_end = _os_write(out, pc, key, stored, off, wr_end, WRITE_NEW_FILE)
                continue
            # ------------------------------------------------------------ HDF5
            allocated = _exists(cid, alloc, prealloc)
            blk = cid // ibc
            # the index block addressing the chunk, through HDF5's metadata cache (LRU of its capacity)
            if allocated and chunked and not pc_access(mdc[0], mdc[1], mdc[2], mdc[3], blk, node_bytes):
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
                    # the file (the mpio-read-rw case of benchmarks/parallel_validation.py: the counts match
                    # and the time is page-cache speed, not device speed; docs/parallel-validation.md)
                    rd_end = _os_read(out, pc, key, nbytes, off, rd_end, curve_b, curve_s, 1.0, ra)
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
                    # no sieve and no read before a write (measured: benchmarks/iomodel_syscalls.py)
                    nreq = nrun_a[j]
                    run = nbytes // nreq
                    step = (hi - lo - run) // max(1, nreq - 1)
                    for r in range(nreq):
                        roff = lo + r * step
                        wkey = key + 1 + roff // sieve
                        if write:
                            wr_end = _os_write(out, pc, wkey, run, off + roff, wr_end,
                                               _piece_lands_on(pc, key, allocated))
                        else:
                            rd_end = _os_read(out, pc, wkey, run, off + roff, rd_end, curve_b, curve_s, 1.0, ra)
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
                            rd_end = _os_read(out, pc, wkey, wlen, off + woff, rd_end, curve_b, curve_s, 1.0, ra)
                        if write:
                            wr_end = _os_write(out, pc, wkey, wlen, off + woff, wr_end,
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
                rd_end = _os_read(out, pc, key, stored, off, rd_end, curve_b, curve_s, 1.0, ra)
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
                wr_end = _os_write(out, pc, vcid * kmul, stored, off, wr_end, lands_on)
                vb = vcid // ibc
                if vb not in wtouched:
                    wtouched[vb] = 1
                    out[N_WINDEX] += 1
    pos[0], pos[1], pos[2] = rd_end, wr_end, next_off


@numba.njit(cache=True, nogil=True)
def _close(out, pc, ent, cc, alloc, prealloc, stored, kmul, filtered, csize, ibc, wtouched, pos):
    """Close: flush dirty chunks from the head of the chunk cache's list."""
    wr_end, next_off = pos[1], pos[2]
    s = cc[0]
    while s >= 0:
        if ent[5, s] == 1:
            vcid = ent[0, s]
            lands_on = _chunk_lands_on(vcid, alloc, prealloc)
            off, next_off = _offset_of(vcid, alloc, prealloc, stored, next_off)
            if filtered:
                out[S_ENCODE] += csize
            wr_end = _os_write(out, pc, vcid * kmul, stored, off, wr_end, lands_on)
            vb = vcid // ibc
            if vb not in wtouched:
                wtouched[vb] = 1
                out[N_WINDEX] += 1
        s = ent[2, s]
    pos[1], pos[2] = wr_end, next_off


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

@numba.njit(cache=True)
def _put_all(d, keys, values):
    """d[keys[i]] = values[i] in compiled code (a typed Dict's ``__setitem__`` from Python compiles its helper
    anew in every process, seconds)."""
    for i in range(len(keys)):
        d[keys[i]] = values[i]


def chunk_cache_used(layout: Layout, parallel: bool = False) -> bool:
    """Whether a replay of ``layout`` passes chunks through HDF5's chunk cache: chunked HDF5 storage on the serial
    path whose chunks fit the cache (``_simulate``'s ``fits``). Otherwise the cache settings change nothing."""
    return (layout.library != "zarr" and layout.chunks is not None and not parallel and layout.rdcc_nslots > 0
            and layout.chunk_nbytes <= layout.rdcc_nbytes)


def replay_key(layout: Layout, parallel: bool = False) -> Layout:
    """The layout whose ``Replay`` counts the same variables as ``layout``'s: its chunk-cache settings cleared
    when no chunk goes through the cache, so that cache variants of a chunk shape larger than their caches (a
    64 MiB cache against 8 MiB and none for 16 MiB chunks) are replayed once."""
    if chunk_cache_used(layout, parallel):
        return layout
    return replace(layout, rdcc_nbytes=0, rdcc_nslots=0, rdcc_w0=0.0)


_NO_SIEVE = np.zeros(0, np.int64)
"""Sieve requests of a chunked layout: none (``_simulate`` reads them for contiguous storage only)."""


class Replay:
    """One rank's accesses of ``dataset`` replayed against ``layout``, fed window by window (``feed``): the
    library's chunk cache, the page cache, the device positions and the allocation order carry over, so the
    counts (``result``) equal one replay of the whole sequence. Arguments as ``count_variables``."""

    def __init__(self, dataset: DatasetRecord, layout: Layout, page_cache_bytes: int, *, parallel: bool = False,
                 warm: bool = False, cache_curve: PageCacheCurve | None = None, zarr_overlap: float = 1.0,
                 readahead: int = 0, device_request: int = 0, page_cache: SharedPageCache | None = None):
        self.dataset, self.layout, self.parallel = dataset, layout, parallel
        empty = np.zeros(0, np.float64)
        # no curve measured: empty; an array beyond the CPU's cache copies its hits from memory (for_footprint)
        self._curve = (cache_curve.for_footprint(layout.nchunks * layout.stored_chunk_nbytes).arrays()
                       if cache_curve is not None else (empty, empty))
        self._zarr_overlap = float(zarr_overlap)
        # one file per zarr chunk: no stream runs from one chunk's file into the next
        readahead = 0 if layout.library == "zarr" else readahead
        self._alloc = alloc = int64_dict()
        prealloc = 0 if dataset.created else 1
        same_layout = (dataset.library == layout.library and dataset.chunks is not None
                       and tuple(dataset.chunks) == layout.chunks and layout.shards is None)
        if not dataset.created and dataset.chunk_offsets is not None and same_layout and len(dataset.chunk_offsets):
            co = np.asarray(dataset.chunk_offsets, np.int64)
            _put_all(alloc, np.ravel_multi_index(co[:, : layout.ndim].T, layout.grid, mode="clip"),
                     np.ascontiguousarray(co[:, layout.ndim]))
            prealloc = 2
        self._prealloc = prealloc
        file_bytes = layout.nchunks * layout.stored_chunk_nbytes
        if prealloc == 2:
            file_bytes = int((co[:, layout.ndim] + co[:, layout.ndim + 1]).max())
        self._ra = readahead_state(readahead, file_bytes, device_request)
        cps = layout.chunks_per_shard
        if cps is not None:
            self._cps_grid = np.asarray(cps, np.int64)
            self._shard_grid = np.asarray([-(-g // c) for g, c in zip(layout.grid, cps)], np.int64)
            self._n_inner = int(np.prod(cps))
            self._index_bytes = 16 * self._n_inner + 4
        else:
            self._cps_grid = self._shard_grid = np.ones(layout.ndim, np.int64)
            self._n_inner = self._index_bytes = 0
        csize, stored, sieve = layout.chunk_nbytes, layout.stored_chunk_nbytes, layout.sieve_bytes
        # page-cache keys: unit * kmul (whole unit) or unit * kmul + 1 + window (piecewise)
        self._kmul = (csize + sieve - 1) // sieve + 2
        self._grid = np.asarray(layout.grid, np.int64)
        self._bits = hash_bits(layout.grid)
        nslots = layout.rdcc_nslots
        self._ent = np.full((6, max(1, nslots)), -1, np.int64)
        self._cc = np.array([-1, -1, 0, 0, 0], np.int64)
        self._evicted = np.empty(max(1, nslots) + 2, np.int64)
        self._wtouched = int64_dict()
        self._node_bytes = index_block_bytes(layout)
        self._mdc = new_page_cache(HDF5_METADATA_CACHE, min(layout.nchunks // layout.index_block_chunks,
                                                            HDF5_METADATA_CACHE // self._node_bytes) + 2)
        self._pos = np.array([-1, -1, layout.nchunks * stored if prealloc == 1 else 0], np.int64)
        self._out = np.zeros(len(FEATURES), np.float64)
        # LRU size bound: entries are at least min(stored, sieve) bytes and at most one per request; the
        # request bound grows window by window (``feed``)
        self._shared = page_cache if page_cache is not None else SharedPageCache(page_cache_bytes)
        min_entry = max(1, min(stored, sieve, self._index_bytes or stored))
        # keys: chunks, shards (after nchunks + 1) and their windows, times kmul (``_simulate``)
        self._key0 = self._shared.add((2 * layout.nchunks + 3) * self._kmul,
                                      self._shared.capacity // min_entry + 2)
        self._closed = False
        if warm:
            self._shared.reserve(layout.nchunks * (csize // sieve + 2))
            self._shared.enter(self._key0)
            sharded = self._n_inner > 0
            nunits = int(np.prod(self._shard_grid)) if sharded else layout.nchunks
            piecewise = layout.library != "zarr" and not (layout.filtered or self._fits) and not parallel
            _warm_up(self._shared.state, alloc, prealloc, nunits, sharded, layout.nchunks + 1,
                     self._n_inner * stored + self._index_bytes, piecewise, csize, stored, sieve, self._kmul)

    @property
    def _fits(self) -> bool:
        return chunk_cache_used(self.layout, self.parallel)

    def feed(self, cols: AccessColumns, visits: ChunkVisits | None = None) -> None:
        """Replay the next accesses (``visits``: their ``trace_visits`` against this layout, if already walked)."""
        if self._closed:
            raise RuntimeError("replay already closed by result()")
        if not cols.rows:
            return
        lay = self.layout
        vis = trace_visits(cols, lay) if visits is None else visits
        sreq, slen = sieve_requests(cols, lay) if lay.chunks is None else (_NO_SIEVE, _NO_SIEVE)
        self._shared.reserve(int(((vis.hi - vis.lo) // lay.sieve_bytes).sum()) + 4 * len(vis) + 16)
        self._shared.enter(self._key0)
        _simulate(
            vis.cid, vis.nsel, vis.nrun, vis.nfrun, vis.lo, vis.hi, vis.full, vis.offsets, cols.op_codes(),
            np.repeat(cols.collective, cols.rep), sreq, slen, lay.library == "zarr", lay.itemsize, lay.chunk_nbytes,
            lay.stored_chunk_nbytes, self._grid, self._bits, lay.rdcc_nbytes, lay.rdcc_nslots, lay.rdcc_w0,
            lay.filtered, lay.chunks is not None, lay.index_block_chunks, lay.sieve_bytes,
            self._cps_grid, self._shard_grid, self._n_inner, self._index_bytes, self._prealloc, self._alloc,
            lay.nchunks, self._shared.state, self.parallel, lay.fill_on_alloc, *self._curve, self._zarr_overlap, self._ra,
            self._kmul, self._out, self._ent, self._cc, self._evicted, self._mdc, self._node_bytes, self._wtouched, self._pos,
        )

    def snapshot(self) -> Variables:
        """The variables if the run ended after the accesses fed so far (the close included), without ending
        the replay: ``feed`` may go on."""
        if self._closed or not (self._ent[5] == 1).any():  # no dirty chunk: the close adds nothing
            return Variables.from_array(self._out)
        lay = self.layout
        self._shared.enter(self._key0)
        out, (nodes, free, st, index) = self._out.copy(), self._shared.state
        _close(out, (nodes.copy(), free.copy(), st.copy(), copy_int64_dict(index)), self._ent, self._cc,
               copy_int64_dict(self._alloc), self._prealloc, lay.stored_chunk_nbytes, self._kmul, lay.filtered,
               lay.chunk_nbytes, lay.index_block_chunks, copy_int64_dict(self._wtouched), self._pos.copy())
        return Variables.from_array(out)

    def result(self) -> Variables:
        """The counted variables, after the close (dirty chunks written back); no more ``feed`` after it."""
        if not self._closed:
            lay = self.layout
            self._shared.enter(self._key0)
            _close(self._out, self._shared.state, self._ent, self._cc, self._alloc, self._prealloc, lay.stored_chunk_nbytes,
                   self._kmul, lay.filtered, lay.chunk_nbytes, lay.index_block_chunks, self._wtouched, self._pos)
            self._closed = True
        return Variables.from_array(self._out)


def count_variables(
    accesses: "AccessColumns | Sequence[AccessRecord]",
    dataset: DatasetRecord,
    layout: Layout,
    page_cache_bytes: int,
    *,
    parallel: bool = False,
    warm: bool = False,
    cache_curve: PageCacheCurve | None = None,
    zarr_overlap: float = 1.0,
    readahead: int = 0,
    device_request: int = 0,
    others: Sequence[tuple[DatasetRecord, Layout]] = (),
) -> Variables:
    """Replay one rank's accesses of ``dataset`` against ``layout``; count the variables.

    The page cache starts cold. Data that existed before the trace (the dataset
    was not created in it) is on disk in row-major chunk order, or at the chunk
    offsets the trace recorded when ``layout`` is the recorded one; data written
    in the trace is allocated in write order. ``parallel`` selects HDF5's MPI-IO
    path (no chunk cache; requests per run, formulas 8-10). ``warm``: every
    stored byte of the array starts in the page cache (the library cache empty).
    ``cache_curve``: the profile's page-cache copy time by request size (``x_cache``
    stays 0 without it); ``zarr_overlap``: how many of one call's chunk reads
    overlap on the device (the profile's, measured by calibration); ``readahead``: the kernel's largest
    readahead window on the data's device, bytes (the profile's; 0: readahead not modelled); ``device_request``: the
    device's largest request, bytes (the profile's; 0: a window is one request). Long traces are walked and replayed
    WINDOW_ACCESSES at a time (``Replay``).
    ``others``: the process's other arrays (their record and stored layout) whose accesses, among
    ``accesses`` in trace order, run through the same page cache: they evict this array's pages (one page
    cache for every file, ``SharedPageCache``); only this array's variables are counted.
    """
    cols = as_columns(accesses)
    replays = {}
    shared = SharedPageCache(page_cache_bytes)
    kw = dict(parallel=parallel, warm=warm, cache_curve=cache_curve, zarr_overlap=zarr_overlap, readahead=readahead,
              device_request=device_request, page_cache=shared)
    replays[dataset.id] = replay = Replay(dataset, layout, page_cache_bytes, **kw)
    for d, lay in others:
        if d.id != dataset.id:
            replays[d.id] = Replay(d, lay, page_cache_bytes, **kw)
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


__all__ = ["FEATURES", "Replay", "Variables", "WINDOW_ACCESSES", "count_variables"]
