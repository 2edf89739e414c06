"""File-level model: seconds of a sequence of POSIX requests on one file (as DXT records them per rank).

Pure computation over arrays. It reuses the profile's coefficients of the HDF5 path (the one whose calls
are plain ``pread``/``pwrite`` on one file) and its measured behaviours (page-cache copy curve, readahead,
the device's largest request, the stripe size); docs/darshan.md gives its error against measured
``os.pread`` sequences (``benchmarks/filelevel_validation.py``). The file is assumed cold (not in the page
cache) when the sequence starts; a request repeating an earlier one exactly is a page-cache hit.
"""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from .profile import SystemProfile

PAGE = 4096
"""The OS page: the device reads and writes whole pages, so a request ending inside one moves all of it."""
LIBRARY = "hdf5"
"""Whose coefficients price a request: HDF5's path issues plain pread/pwrite calls on one file."""


@dataclass(frozen=True)
class FileTerms:
    """Predicted seconds of one request sequence, by term."""

    t_call: float
    """Per-request call cost: the page-cache curve's floor (one small pread, measured by calibrate)."""
    t_copy: float
    """Copy between the page cache and the user's buffer: the profile's page-cache curve above its floor."""
    t_device: float
    """Device requests and their bytes (n_rdisk/s_rdisk, n_wdisk/s_wdisk/s_wnew), whole pages."""
    t_seek: float
    """Requests not starting where the previous one ended (n_rseek/s_rseek, n_wseek)."""
    t_partial: float
    """Read-modify-write: a page the written extents cover in part, holding data, is read first (once)."""
    requests: int = 0
    nbytes: int = 0

    @property
    def total(self) -> float:
        return self.t_call + self.t_copy + self.t_device + self.t_seek + self.t_partial

    def get_config(self) -> dict:
        return {"t_call": self.t_call, "t_copy": self.t_copy, "t_device": self.t_device, "t_seek": self.t_seek,
                "t_partial": self.t_partial, "requests": self.requests, "nbytes": self.nbytes}

    @classmethod
    def from_config(cls, c: dict) -> "FileTerms":
        return cls(**c)

    def __add__(self, other: "FileTerms") -> "FileTerms":
        return FileTerms(*(getattr(self, k) + getattr(other, k) for k in self.get_config()))


ZERO = FileTerms(0.0, 0.0, 0.0, 0.0, 0.0)


def _arrays(offset, length, write):
    off = np.asarray(offset, np.int64)
    ln = np.asarray(length, np.int64)
    wr = np.broadcast_to(np.asarray(write, bool), off.shape)
    keep = ln > 0  # a zero-byte request moves nothing (DXT records them)
    return off[keep], ln[keep], wr[keep]


def predict_requests(offset, length, write, profile: SystemProfile) -> FileTerms:
    """Seconds by term of requests issued in this order on one file, one rank (write: bool per request)."""
    off, ln, wr = _arrays(offset, length, write)
    n = len(off)
    if n == 0:
        return ZERO
    c = lambda v: profile.coefficient(LIBRARY, v)  # noqa: E731
    end = off + ln
    # page span each request moves on the device
    p_lo, p_hi = off // PAGE * PAGE, -(-end // PAGE) * PAGE
    consecutive = np.zeros(n, bool)
    consecutive[1:] = (off[1:] == end[:-1]) & (wr[1:] == wr[:-1])
    # exact repeats of an earlier request: page-cache hits (no device)
    _, first = np.unique(np.stack([off, ln]), axis=1, return_index=True)
    miss = np.zeros(n, bool)
    miss[first] = True
    rd, w = ~wr & miss, wr
    # a POSIX call's own cost is the page-cache curve's floor (a pread of its smallest size, measured);
    # the profile's n_calls/n_wcalls price a library call (H5Dread/H5Dwrite), far more than one pread/pwrite
    # (benchmarks/filelevel_validation.py); a pwrite is priced as a pread, the profile measures no bare pwrite
    sizes, secs = profile.page_cache_curve.arrays()
    floor = float(secs[0]) if len(secs) else c("n_calls")
    t_call = floor * n
    t_copy = float((np.interp(ln, sizes, secs) - floor).clip(0).sum()) if len(sizes) else 0.0
    span = p_hi - p_lo
    unit = profile.device_request_bytes or 0
    dev_req = np.ceil(span / unit).astype(np.int64) if unit else np.ones(n, np.int64)
    if profile.readahead_bytes:
        # a read continuing the previous one was brought in by the kernel's readahead: bytes, no request
        ahead = rd & consecutive
        dev_req = np.where(ahead, 0, dev_req)
    t_device = (c("n_rdisk") * int(dev_req[rd].sum()) + c("s_rdisk") * int(span[rd].sum())
                + c("n_wdisk") * int(dev_req[w].sum()) + (c("s_wdisk") + c("s_wnew")) * int(span[w].sum()))
    seek = ~consecutive
    seek[0] = True  # the first request positions the head too
    # a seek's bytes: the run of consecutive requests it starts, up to the readahead window (the device
    # streams the rest behind it), so the same bytes in fewer, larger requests never seek more
    run_id = np.cumsum(seek) - 1
    run_bytes = np.bincount(run_id, weights=span * rd)
    window = profile.readahead_bytes or profile.device_request_bytes or PAGE
    t_seek = (c("n_rseek") * int((seek & rd).sum()) + c("s_rseek") * float(np.minimum(run_bytes, window).sum())
              + c("n_wseek") * int((seek & w).sum()))
    # read-modify-write: each end of the written extents (the writes' union) inside a page that holds data
    # (below the furthest byte the sequence touches) is read once first; the union does not depend on the order
    # or the sizes the bytes were written in, so a fix that only reorders or merges keeps this term
    n_rmw = 0
    if w.any():
        ext_off, ext_len, _ = coalesce(off[w], ln[w], True, 1 << 62)
        ext_end, furthest = ext_off + ext_len, int(end.max())
        n_rmw = int(((ext_off % PAGE != 0) & (ext_off // PAGE * PAGE + PAGE <= furthest)).sum()
                    + ((ext_end % PAGE != 0) & (-(-ext_end // PAGE) * PAGE < furthest)).sum())
    t_partial = n_rmw * (c("n_rdisk") + c("n_rseek") + PAGE * (c("s_rdisk") + c("s_rseek")))
    return FileTerms(float(t_call), float(t_copy), float(t_device), float(t_seek), float(t_partial), n,
                     int(ln.sum()))


def coalesce(offset, length, write, block: int):
    """The same bytes as a fix issues them: per op, sorted, merged, cut at multiples of ``block``.

    Returns (offset, length, write) arrays: reads first, then writes, each in increasing offset.
    """
    off, ln, wr = _arrays(offset, length, write)
    outs = []
    for op in (False, True):
        sel = wr == op
        if not sel.any():
            continue
        o = off[sel]
        e = o + ln[sel]
        order = np.argsort(o, kind="stable")
        o, e = o[order], np.maximum.accumulate(e[order])
        new = np.ones(len(o), bool)
        new[1:] = o[1:] > e[:-1]  # a gap starts a new extent; touching or overlapping ranges merge
        starts = o[new]
        ends = np.maximum.reduceat(e, np.flatnonzero(new))
        # cut each extent at block boundaries: first piece up to the next boundary, then whole blocks
        first_cut = np.minimum((starts // block + 1) * block, ends)
        first_cut = np.where(ends - starts <= block, ends, first_cut)  # an extent within a block stays whole
        counts = 1 + np.maximum(-(-(ends - first_cut) // block), 0)
        idx = np.repeat(np.arange(len(starts)), counts)
        k = np.arange(len(idx)) - np.repeat(np.cumsum(counts) - counts, counts)
        piece_lo = np.where(k == 0, starts[idx], first_cut[idx] + (k - 1) * block)
        piece_hi = np.minimum(np.where(k == 0, first_cut[idx], piece_lo + block), ends[idx])
        outs.append((piece_lo, piece_hi - piece_lo, np.full(len(idx), op)))
    if not outs:
        return np.zeros(0, np.int64), np.zeros(0, np.int64), np.zeros(0, bool)
    return tuple(np.concatenate(x) for x in zip(*outs))


@dataclass(frozen=True)
class Replay:
    """Modelled seconds of the requests as recorded and as the fix would issue the same bytes."""

    recorded: FileTerms
    fixed: FileTerms
    block: int
    """Request size of the fix: the profile's stripe size (the file system's block/stripe)."""

    @property
    def at_stake(self) -> float:
        return max(self.recorded.total - self.fixed.total, 0.0)

    def get_config(self) -> dict:
        return {"recorded": self.recorded.get_config(), "fixed": self.fixed.get_config(), "block": self.block}

    @classmethod
    def from_config(cls, c: dict) -> "Replay":
        return cls(FileTerms.from_config(c["recorded"]), FileTerms.from_config(c["fixed"]), int(c["block"]))


def replay(offset, length, write, profile: SystemProfile) -> Replay:
    """Predict one rank's requests on one file as recorded and coalesced into stripe-size aligned requests."""
    _, ln, _ = _arrays(offset, length, write)
    # whole stripes, and never smaller than the largest recorded request (a fix does not split requests)
    block = int(profile.stripe_size) * max(int(-(-int(ln.max(initial=0)) // int(profile.stripe_size))), 1)
    return Replay(predict_requests(offset, length, write, profile),
                  predict_requests(*coalesce(offset, length, write, block), profile), block)


__all__ = ["FileTerms", "PAGE", "Replay", "coalesce", "predict_requests", "replay"]
