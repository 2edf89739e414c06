"""One OS request through the page cache and the kernel's readahead: the device side of Kang et al.'s model.

``os_read`` counts a request as a page-cache hit (n_cache, s_cache, x_cache: formula 7) or device reads (n_rdisk,
s_rdisk, and n_rseek/s_rseek when it does not start where the previous device read ended: formulas 2-4), with
the kernel's on-demand readahead (mm/readahead.c); ``os_write`` counts writes (n_wdisk, s_wdisk, n_wseek, s_wnew:
formulas 5-6). The replay kernel (``iomodel.kernel``) calls them per request; both are compiled (numba).
"""
from __future__ import annotations

import numba
import numpy as np

from .cache import PC_CAP, PC_INSERTED, pc_access, pc_cached
from .features import N_CACHE, N_RDISK, N_RSEEK, N_WDISK, N_WSEEK, S_CACHE, S_RDISK, S_RSEEK, S_WDISK, S_WNEW, X_CACHE

# inlined (numba IR) rather than called: it runs once per page-cache hit (benchmarks/speed/scale.py)
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


PAGE = 4096
"""Bytes of a page: the kernel's readahead works in pages."""

(RA_MAX, RA_START, RA_SIZE, RA_ASYNC, RA_PREV, RA_EOF, RA_COUNT, RA_STAMP, RA_SHIFT, RA_PEND, RA_PFIRST, RA_PEND_LO,
 RA_PEND_HI, RA_PWAITED, RA_PNEXT, RA_REQ, RA_WORDS) = range(17)
"""The readahead state of a file (``ra``, in pages but RA_MAX in bytes): the device's largest window
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
def os_read(out, pc, key, nbytes, offset, dev_end, curve_b, curve_s, dev_weight, ra):
    """One read request through the page cache; returns the new device position.

    ``dev_weight`` < 1: the request's latency overlaps with other requests of the same call (zarr's concurrent
    chunk fetches): its counts are weighted, its bytes are not, as the device's bandwidth is shared (4-10
    concurrent readers of 1-16 MiB files read 1.14-1.41x one reader's bytes per second:
    benchmarks/investigations/device_concurrency.py). ``ra`` (``RA_*``; updated): the kernel's on-demand readahead
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



@numba.njit(cache=True)
def os_read_repeat(out, pc, key, nbytes, span, dev_end, curve, dev_weight, ra):
    """``span`` = (offset, step, count): ``count`` requests of ``nbytes`` at ``offset``, ``offset + step``, ... under
    the same page-cache ``key`` (``curve``: the page-cache curve's sizes and seconds), right
    after a request under that key: exactly ``os_read`` per request, counted at once when every one is a plain hit
    (the key cached and most recent, no readahead marker or window waited for in their pages). HDF5 reads a chunk
    larger than its cache piecewise, one request per run: a column of a (1000000, 4) float32 chunk is a million
    requests of 4 bytes, 4,096 per 64 KiB window (benchmarks/validation/realsize.py's r05 spent 22 of its 24 s of
    replay on them, one by one)."""
    nodes, free, st, index = pc
    offset, step, count = span
    curve_b, curve_s = curve
    first = offset // PAGE
    last = (offset + (count - 1) * step + nbytes + PAGE - 1) // PAGE
    marker = ra[RA_START] + ra[RA_SIZE] - ra[RA_ASYNC]
    plain = pc_cached(st, index, key) and not (ra[RA_SIZE] > 0 and first <= marker < last) and not (
        ra[RA_PEND] > 0 and first < ra[RA_PEND_HI] and last > ra[RA_PEND_LO])
    if not plain:
        for r in range(count):
            dev_end = os_read(out, pc, key, nbytes, offset + r * step, dev_end, curve_b, curve_s, dev_weight, ra)
        return dev_end
    pc_access(nodes, free, st, index, key, nbytes)
    out[N_CACHE] += count
    out[S_CACHE] += count * nbytes
    out[X_CACHE] += count * _curve_seconds(curve_b, curve_s, nbytes)
    ra[RA_PREV] = (offset + (count - 1) * step + nbytes) // PAGE
    return dev_end


WRITE_NEW_SPACE, WRITE_OVER_DATA, WRITE_OVER_CACHED, WRITE_NEW_FILE = 0, 1, 2, 3
"""What a write request lands on (``os_write``): file space allocated by this write, space that held data
already, a piece of a chunk whose pages are cached whole (read or written whole before: the piece's own key
may be new), or a new file replacing the old (zarr writes a temporary file and renames it)."""



@numba.njit(cache=True)
def os_write(out, pc, key, nbytes, offset, last_end, lands_on):
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


@numba.njit(cache=True)
def os_write_repeat(out, pc, key, nbytes, span, last_end, lands_on):
    """``span`` = (offset, step, count) write requests as ``os_read_repeat``'s reads: exactly ``os_write`` per request,
    counted at once when the key is cached (each one a hit then)."""
    nodes, free, st, index = pc
    offset, step, count = span
    if not pc_cached(st, index, key):
        for r in range(count):
            last_end = os_write(out, pc, key, nbytes, offset + r * step, last_end, lands_on)
        return last_end
    pc_access(nodes, free, st, index, key, nbytes)
    out[N_WDISK] += count
    out[S_WDISK] += count * nbytes
    if offset != last_end:
        out[N_WSEEK] += 1
    if step != nbytes:
        out[N_WSEEK] += count - 1
    if lands_on == WRITE_NEW_FILE:
        out[S_WNEW] += count * nbytes
    return offset + (count - 1) * step + nbytes



__all__ = ["PAGE", "WRITE_NEW_FILE", "WRITE_NEW_SPACE", "WRITE_OVER_CACHED", "WRITE_OVER_DATA", "os_read", "os_read_repeat",
           "os_write", "os_write_repeat", "readahead_state"]
