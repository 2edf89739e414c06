"""Chunk walking: which chunks a selection covers and how it lies in each.

For every access the libraries loop over the chunks the selection touches, in
increasing linear chunk index (HDF5 keeps them in a skip list ordered by chunk
index; zarr iterates the chunk grid in C order). Per visited chunk we need what
the cost model counts (Algorithm 1 of Kang et al.):

- ``nsel``: selected elements in the chunk;
- ``nrun``: runs contiguous in both the chunk buffer and the user buffer (memcpy calls);
- ``nfrun``: runs contiguous in the chunk alone (file requests when HDF5 reads a
  chunk piecewise, bypassing its cache);
- ``lo``/``hi``: byte offsets in the chunk of the first selected element and one
  past the last (the span a sieve buffer covers);
- ``full``: whether the write covers the whole chunk (no read-modify-write).
  HDF5 asks for every element of the full-size chunk; zarr only for the part of
  an edge chunk inside the array (``zarr.core.indexing`` ``is_complete_chunk``).

Regular hyperslabs (the common case) are enumerated for a whole trace at once in
compiled code; orthogonal index lists and point selections go through numpy.
"""
from __future__ import annotations

from dataclasses import dataclass

import numba
import numpy as np

from instrumentation.columns import SLAB, AccessColumns, as_columns
from instrumentation.records import AccessRecord, Selection

from .layout import Layout

_FIELDS = ("cid", "nsel", "nrun", "nfrun", "lo", "hi", "full", "olo", "ohi")


@dataclass(frozen=True)
class ChunkVisits:
    """Chunk visits of a sequence of accesses, flattened; access i owns
    ``[offsets[i], offsets[i+1])``. All arrays int64 except ``full`` (bool). ``lo``/``hi``: the bytes of the
    chunk buffer the visit's selection spans; ``olo``/``ohi``: those of the access's output (user) buffer, C-order
    (a point selection's visits: consecutive pieces of its 1-D output)."""

    cid: np.ndarray
    nsel: np.ndarray
    nrun: np.ndarray
    nfrun: np.ndarray
    lo: np.ndarray
    hi: np.ndarray
    full: np.ndarray
    offsets: np.ndarray
    olo: np.ndarray
    ohi: np.ndarray

    def __len__(self) -> int:
        return len(self.cid)

    def access(self, i: int) -> "ChunkVisits":
        a, b = self.offsets[i], self.offsets[i + 1]
        return ChunkVisits(*(getattr(self, f)[a:b] for f in _FIELDS[:7]), np.array([0, b - a]),
                           *(getattr(self, f)[a:b] for f in _FIELDS[7:]))


def _empty(n_access: int = 0) -> ChunkVisits:
    z = np.zeros(0, np.int64)
    return ChunkVisits(z, z, z, z, z, z, np.zeros(0, bool), np.zeros(n_access + 1, np.int64), z, z)


# ---------------------------------------------------------------- regular hyperslabs (compiled)
_COORD, _CNT, _GRP, _LO, _HI, _OUT = range(6)
"""``seg`` rows per dimension and chunk coordinate: coord, count, groups, in-chunk lo, hi, and where its elements
start in the output along that dimension."""


@numba.njit(cache=True)
def _normalize(t, n, b):
    """A block sequence with stride == block is one contiguous block."""
    if n > 1 and t == b:
        return n * b, 1
    return b, n


@numba.njit(cache=True)
def _dim_segments(s, t, n, b, C, seg, d):
    """Fill seg[d, :, :m] per chunk coordinate along dimension d: coord, count,
    groups (contiguous index runs), lo, hi (in-chunk index range); returns m."""
    b, n = _normalize(t, n, b)
    m = 0
    for i in range(n):
        a = s + i * t
        end = a + b
        while a < end:
            c = a // C
            seg_end = min(end, (c + 1) * C)
            if m > 0 and seg[d, _COORD, m - 1] == c:
                seg[d, _CNT, m - 1] += seg_end - a
                seg[d, _GRP, m - 1] += 1
                seg[d, _HI, m - 1] = seg_end - c * C
            else:
                seg[d, _COORD, m] = c
                seg[d, _CNT, m] = seg_end - a
                seg[d, _GRP, m] = 1
                seg[d, _LO, m] = a - c * C
                seg[d, _HI, m] = seg_end - c * C
                m += 1
            a = seg_end
    return m


@numba.njit(cache=True)
def _grow(a, cap):
    out = np.empty(cap, a.dtype)
    out[: len(a)] = a
    return out


@numba.njit(cache=True, nogil=True)  # candidates are evaluated on threads
def _hyperslab_visits(row_starts, steps, reps, strides, counts, blocks, chunk, shape, zarr_rule):
    """Chunk visits of many regular hyperslabs: row i stands for reps[i] accesses starting at
    row_starts[i] + k * steps[i] (k < reps[i]); offsets are per access. Rows of the result: cid, nsel, nrun,
    nfrun, lo, hi (in the chunk), olo, ohi (in the output), in elements."""
    n_rows, nd = row_starts.shape
    n_acc = 0
    for i in range(n_rows):
        n_acc += reps[i]
    grid = np.empty(nd, np.int64)
    for d in range(nd):
        grid[d] = max(1, -(-max(shape[d], 1) // chunk[d]))
    gstride = np.ones(nd, np.int64)
    cstride = np.ones(nd, np.int64)
    for d in range(nd - 2, -1, -1):
        gstride[d] = gstride[d + 1] * grid[d + 1]
        cstride[d] = cstride[d + 1] * chunk[d + 1]
    cap = max(1024, n_acc)  # one visit per access is the common case: no growth, no doubled buffer
    out = np.empty((8, cap), np.int64)
    full_out = np.empty(cap, np.bool_)
    offsets = np.zeros(n_acc + 1, np.int64)
    scap = 16
    seg = np.empty((nd, 6, scap), np.int64)
    nseg = np.empty(nd, np.int64)
    dtotal = np.empty(nd, np.int64)
    ostride = np.ones(nd, np.int64)  # the output buffer's C-order strides, elements
    st = np.empty(nd, np.int64)
    pos = np.empty(nd, np.int64)  # odometer over the per-dimension chunk coordinates
    m = 0
    a = -1
    for row in range(n_rows):
        for rep in range(reps[row]):
            a += 1
            for d in range(nd):
                st[d] = row_starts[row, d] + rep * steps[row, d]
            need = 0
            for d in range(nd):
                b, n = _normalize(strides[row, d], counts[row, d], blocks[row, d])
                need = max(need, n * ((b - 1) // chunk[d] + 2))
                dtotal[d] = n * b
            if need > scap:
                scap = max(need, 2 * scap)
                seg = np.empty((nd, 6, scap), np.int64)
            for d in range(nd - 2, -1, -1):
                ostride[d] = ostride[d + 1] * dtotal[d + 1]
            total = 1
            for d in range(nd):
                nseg[d] = _dim_segments(st[d], strides[row, d], counts[row, d], blocks[row, d], chunk[d],
                                        seg, d)
                acc = 0
                for p in range(nseg[d]):
                    seg[d, _OUT, p] = acc
                    acc += seg[d, _CNT, p]
                total *= nseg[d]
            if total == 0:
                offsets[a + 1] = m
                continue
            if m + total > cap:
                while m + total > cap:
                    cap = cap * 3 // 2
                o2 = np.empty((8, cap), np.int64)
                o2[:, :m] = out[:, :m]
                out = o2
                full_out = _grow(full_out, cap)
            pos[:] = 0
            for _ in range(total):
                cid = 0
                nsel = 1
                lo = 0
                hi = 0
                olo = 0
                ohi = 0
                runs = 1
                fruns = 1
                merging = True
                fmerging = True
                full = True
                for d in range(nd - 1, -1, -1):
                    p = pos[d]
                    c = seg[d, _CNT, p]
                    coord = seg[d, _COORD, p]
                    cid += coord * gstride[d]
                    nsel *= c
                    lo += seg[d, _LO, p] * cstride[d]
                    hi += (seg[d, _HI, p] - 1) * cstride[d]
                    olo += seg[d, _OUT, p] * ostride[d]
                    ohi += (seg[d, _OUT, p] + c - 1) * ostride[d]
                    whole = c == chunk[d]
                    # runs merge across an inner dimension only when it is whole in the chunk
                    # and (for the user buffer) the selection along it lies in this chunk alone
                    if fmerging:
                        if not whole:
                            fruns = seg[d, _GRP, p]
                            fmerging = False
                    else:
                        fruns *= c
                    if merging:
                        if not (whole and c == dtotal[d]):
                            runs = seg[d, _GRP, p]
                            merging = False
                    else:
                        runs *= c
                    if zarr_rule:
                        full = full and c == min(chunk[d], shape[d] - coord * chunk[d])
                    else:
                        full = full and whole
                out[0, m] = cid
                out[1, m] = nsel
                out[2, m] = runs
                out[3, m] = fruns
                out[4, m] = lo
                out[5, m] = hi + 1
                out[6, m] = olo
                out[7, m] = ohi + 1
                full_out[m] = full
                m += 1
                # odometer over the per-dimension chunk coordinates, last dimension fastest
                for d in range(nd - 1, -1, -1):
                    pos[d] += 1
                    if pos[d] < nseg[d]:
                        break
                    pos[d] = 0
            offsets[a + 1] = m
    return out[:, :m], full_out[:m], offsets


@numba.njit(cache=True)
def _sieve_rows(strides, counts, blocks, shape, itemsize, sieve):
    """Per regular hyperslab of a contiguous dataset, HDF5's read requests (H5D__contig_readvv_sieve_cb): a run
    longer than the sieve buffer is read directly; any other run outside the buffer refills it with the
    ``sieve`` bytes from that run on. The runs lie on a lattice (per dimension a block level and a count
    level), so the refills follow level by level: a group of runs that fits one buffer is a run of the next
    level. Returns (requests, bytes per request); tests/iomodel/test_chunks.py checks them against /proc/self/io."""
    n_rows, nd = counts.shape
    nreq = np.zeros(n_rows, np.int64)
    rlen = np.zeros(n_rows, np.int64)
    elem = np.empty(nd, np.int64)  # bytes between neighbours along each dimension
    elem[nd - 1] = itemsize
    for d in range(nd - 2, -1, -1):
        elem[d] = elem[d + 1] * shape[d + 1]
    for i in range(n_rows):
        run = itemsize  # bytes of each run contiguous in the file
        span = itemsize  # bytes from a group's first byte to its last
        merged = True  # still one contiguous run
        windows = 1  # buffer refills per group
        nruns = 1
        empty = False
        for d in range(nd - 1, -1, -1):
            b, n = _normalize(strides[i, d], counts[i, d], blocks[i, d])
            if b * n == 0:
                empty = True
                break
            for level in range(2):
                c = b if level == 0 else n
                step = elem[d] if level == 0 else strides[i, d] * elem[d]
                if c <= 1:
                    continue
                if merged and step == span:
                    span *= c
                    run = span
                    continue
                merged = False
                nruns *= c
                if windows == 1 and span <= sieve:
                    per = (sieve - span) // step + 1  # groups one refill covers
                    windows = (c + per - 1) // per
                else:
                    windows *= c
                span += (c - 1) * step
        if empty:
            continue
        if run > sieve:
            nreq[i], rlen[i] = nruns, run
        else:
            nreq[i], rlen[i] = windows, sieve
    return nreq, rlen


def sieve_requests(cols: AccessColumns, layout: Layout) -> tuple[np.ndarray, np.ndarray]:
    """Per access of a contiguous HDF5 dataset: how many read requests its sieve buffer sends and their bytes
    (``_sieve_rows``); -1 requests for point and index-list selections, which the replay bounds from their
    chunk visit."""
    n = cols.n_access
    nreq = np.full(cols.rows, -1, np.int64)
    rlen = np.zeros(cols.rows, np.int64)
    slab = np.flatnonzero(cols.kind == SLAB)
    if len(slab):
        nd = layout.ndim
        sub = cols if len(slab) == cols.rows else cols.take(slab)
        if sub.width < nd:
            sub = sub.widen(nd)
        nreq[slab], rlen[slab] = _sieve_rows(
            *(np.ascontiguousarray(getattr(sub, k)[:, :nd]) for k in ("stride", "count", "block")),
            np.asarray(layout.shape, np.int64), layout.itemsize, layout.sieve_bytes)
    if n == cols.rows:
        return nreq, rlen
    return np.repeat(nreq, cols.rep), np.repeat(rlen, cols.rep)


# ---------------------------------------------------------------- orthogonal / points (numpy)
def _numpy_visits(sel: Selection, layout: Layout) -> tuple[np.ndarray, ...]:
    cs = np.asarray(layout.chunk_shape, np.int64)
    grid = layout.grid
    shape = np.asarray(layout.shape, np.int64)
    if sel.kind == "points":
        pts = np.asarray(sel.points, np.int64)
        if pts.size == 0:
            return tuple(np.zeros(0, np.int64) for _ in range(6)) + (np.zeros(0, bool),)
        cc = pts // cs
        lin = np.ravel_multi_index(cc.T, grid)
        loc = np.ravel_multi_index((pts - cc * cs).T, tuple(cs))
        order = np.lexsort((loc, lin))
        lin, loc = lin[order], loc[order]
        uc, start, cnt = np.unique(lin, return_index=True, return_counts=True)
        lo = loc[start]
        hi = loc[start + cnt - 1] + 1
        full = cnt == int(np.prod(cs))
        return uc, cnt, cnt, cnt, lo * layout.itemsize, hi * layout.itemsize, full
    nd = sel.ndim
    per_dim = []
    for d in range(nd):
        idx = np.unique(sel.dim_indices(d))
        if idx.size == 0:
            return tuple(np.zeros(0, np.int64) for _ in range(6)) + (np.zeros(0, bool),)
        c = idx // cs[d]
        loc = idx - c * cs[d]
        brk = np.ones(len(idx), bool)
        brk[1:] = c[1:] != c[:-1]
        starts = np.flatnonzero(brk)
        ends = np.append(starts[1:], len(idx))
        gap = brk.copy()
        gap[1:] |= idx[1:] != idx[:-1] + 1
        uc = c[starts]
        cnt = ends - starts
        grp = np.add.reduceat(gap.astype(np.int64), starts)
        valid = np.minimum(cs[d], shape[d] - uc * cs[d])
        per_dim.append((uc, cnt, grp, loc[starts], loc[ends - 1] + 1, len(idx), valid))
    gstride = np.cumprod((grid[1:] + (1,))[::-1])[::-1]
    cstride = np.cumprod((tuple(cs[1:]) + (1,))[::-1])[::-1]

    def bc(a, d):
        return a.reshape([-1 if k == d else 1 for k in range(nd)])

    cid = 0
    nsel = 1
    lo = 0
    hi = 0
    full_h = True
    full_z = True
    runs = np.ones((), np.int64)
    fruns = np.ones((), np.int64)
    merging = np.ones((), bool)
    fmerging = np.ones((), bool)
    for d in range(nd - 1, -1, -1):
        uc, cnt, grp, dlo, dhi, total, valid = (bc(x, d) if isinstance(x, np.ndarray) else x for x in per_dim[d])
        cid = cid + uc * gstride[d]
        nsel = nsel * cnt
        lo = lo + dlo * cstride[d]
        hi = hi + (dhi - 1) * cstride[d]
        whole = cnt == cs[d]
        fruns = np.where(fmerging, np.where(whole, 1, grp), fruns * cnt)
        fmerging = fmerging & whole
        both = whole & (cnt == total)
        runs = np.where(merging, np.where(both, 1, grp), runs * cnt)
        merging = merging & both
        full_h = full_h & whole
        full_z = full_z & (cnt == valid)
    full = full_z if layout.library == "zarr" else full_h
    shape_b = np.broadcast_shapes(*(np.shape(x) for x in (cid, nsel, runs, fruns, lo, hi, full)))
    flat = [np.broadcast_to(x, shape_b).ravel().astype(np.int64) for x in (cid, nsel, runs, fruns, lo, hi)]
    flat[4] = flat[4] * layout.itemsize
    flat[5] = (flat[5] + 1) * layout.itemsize
    return (*flat, np.broadcast_to(full, shape_b).ravel().astype(bool))


# ---------------------------------------------------------------- public
def chunk_visits(selection: Selection, layout: Layout) -> ChunkVisits:
    """The chunks one selection visits, in the libraries' visiting order."""
    return trace_visits([selection], layout)


def visits_key(layout: Layout) -> tuple:
    """What chunk visits depend on: layouts with equal keys (cache or shard variants) share them."""
    return (layout.library == "zarr", layout.chunk_shape, layout.shape, layout.itemsize)


def trace_visits(accesses, layout: Layout) -> ChunkVisits:
    """Chunk visits of many accesses (AccessColumns, AccessRecords or Selections), flattened in order."""
    if isinstance(accesses, AccessColumns):
        cols = accesses
    else:
        sels = list(accesses)
        cols = (as_columns(sels) if not sels or isinstance(sels[0], AccessRecord)
                else as_columns([AccessRecord(0, "read", s, 0, 0, 0.0, 0.0) for s in sels]))
    n = cols.n_access
    if n == 0:
        return _empty()
    nd = layout.ndim
    if nd == 0:
        raise ValueError("scalar datasets have no chunks to model")
    if cols.width < nd:
        cols = cols.widen(nd)
    slab = cols.kind == SLAB
    first = np.cumsum(cols.rep) - cols.rep  # access index of each row's first access
    slab_rows = np.flatnonzero(slab)
    parts_slab = None
    if len(slab_rows):
        sub = cols if len(slab_rows) == cols.rows else cols.take(slab_rows)
        cols_out, full, offs = _hyperslab_visits(
            *(np.ascontiguousarray(getattr(sub, k)[:, :nd]) for k in ("start", "step")), np.ascontiguousarray(sub.rep),
            *(np.ascontiguousarray(getattr(sub, k)[:, :nd]) for k in ("stride", "count", "block")),
            np.asarray(layout.chunk_shape, np.int64), np.asarray(layout.shape, np.int64),
            layout.library == "zarr",
        )
        cols_out[4:] *= layout.itemsize
        parts_slab = (cols_out, full, offs)
        if len(slab_rows) == cols.rows:
            return ChunkVisits(*cols_out[:6], full, offs, cols_out[6], cols_out[7])
    counts = np.zeros(n, np.int64)
    if parts_slab is not None:
        slab_acc = np.repeat(first[slab_rows], cols.rep[slab_rows])
        slab_acc += np.arange(len(slab_acc)) - np.repeat(np.cumsum(cols.rep[slab_rows]) - cols.rep[slab_rows],
                                                          cols.rep[slab_rows])
        counts[slab_acc] = np.diff(parts_slab[2])
    other = {}
    for row in np.flatnonzero(~slab).tolist():
        i = int(first[row])
        other[i] = _numpy_visits(cols.irregular[row], layout)
        counts[i] = len(other[i][0])
    offsets = np.zeros(n + 1, np.int64)
    np.cumsum(counts, out=offsets[1:])
    total = int(offsets[-1])
    out = np.empty((8, total), np.int64)
    full_all = np.empty(total, bool)
    if parts_slab is not None:
        vis, full, offs = parts_slab
        dest = np.repeat(offsets[slab_acc] - offs[:-1], np.diff(offs)) + np.arange(offs[-1])
        out[:, dest] = vis
        full_all[dest] = full
    for i, vis in other.items():
        a, b = offsets[i], offsets[i + 1]
        for k in range(6):
            out[k, a:b] = vis[k]
        full_all[a:b] = vis[6]
        # a point selection's output is 1-D: each visit's points as consecutive pieces of it
        ends = np.cumsum(vis[1]) * layout.itemsize
        out[6, a:b], out[7, a:b] = ends - vis[1] * layout.itemsize, ends
    return ChunkVisits(*out[:6], full_all, offsets, out[6], out[7])
