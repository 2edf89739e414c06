"""Cache simulations: HDF5's raw-data chunk cache and the OS page cache.

Both are sequential by nature; they run in compiled code (numba) over a whole
trace's chunk visits. Each structure lives in flat arrays:

- HDF5 chunk cache (``H5Dchunk.c``): a hash table of ``rdcc_nslots`` slots;
  a chunk's slot is its scaled coordinates bit-packed (``H5D__chunk_hash_val``)
  modulo nslots, and a chunk is cached iff its slot holds it, so a collision
  evicts the occupant. Entries also sit on a doubly-linked list: new entries go
  to the tail, a hit moves an entry one place toward the tail, and
  ``H5D__chunk_cache_prune`` frees room from the head with two pointers: method 0
  evicts entries fully read and/or fully written (``rd_count``/``wr_count``
  bookkeeping), method 1 (starting after ``w0 x nused`` steps) evicts anything.
  Dirty entries are written back when evicted and at close.
- OS page cache: LRU over keys (a whole chunk file or chunk, or a sieve-sized
  window of a chunk read piecewise), capacity in bytes, starting cold; reads and
  writes both populate it.
"""
from __future__ import annotations

import numba
import numpy as np
from numba import types
from numba.typed import Dict

# ---- page cache (LRU): nodes[0]=key, [1]=size, [2]=prev, [3]=next
# st = [head, tail, used bytes, free-stack depth, capacity bytes, nodes ever handed out, key base, bytes ever
# inserted]
_KEY, _SIZE, _PREV, _NEXT = 0, 1, 2, 3
_HEAD, _TAIL, _USED, _NFREE, PC_CAP, _HW, _BASE, PC_INSERTED = 0, 1, 2, 3, 4, 5, 6, 7


@numba.njit(cache=True)
def int64_dict():
    """An empty typed int64 -> int64 Dict, made in compiled code (cached): ``Dict.empty`` called from Python
    compiles its helpers anew in every process, most of a second."""
    return Dict.empty(key_type=types.int64, value_type=types.int64)


@numba.njit(cache=True)
def copy_int64_dict(d):
    out = Dict.empty(key_type=types.int64, value_type=types.int64)
    for k, v in d.items():
        out[k] = v
    return out


def new_page_cache(capacity: int, max_entries: int):
    """State of an empty LRU page cache holding up to ``capacity`` bytes in at most ``max_entries`` keys."""
    n = max(2, int(max_entries))
    nodes = np.empty((4, n), np.int64)
    free = np.empty(n, np.int64)
    st = np.array([-1, -1, 0, 0, capacity, 0, 0, 0], np.int64)
    return nodes, free, st, int64_dict()


def grow_page_cache(pc, max_entries: int):
    """``pc`` with room for ``max_entries`` keys (same contents and LRU order): for a simulation fed in windows,
    whose number of requests is known one window at a time."""
    nodes, free, st, index = pc
    n = nodes.shape[1]
    if max_entries <= n:
        return pc
    grown = np.empty((4, max_entries), np.int64)
    grown[:, :n] = nodes
    more = np.empty(max_entries, np.int64)
    more[:n] = free
    return grown, more, st, index


class SharedPageCache:
    """One simulated OS page cache for every array a process reads: the arrays of one file, and of other files,
    evict each other (LRU over the machine's memory), and a file's pages stay warm for later accesses
    whichever array or open reads them.

    Each array replayed in it gets its own key range (``add``); ``enter`` selects the range before that
    array's accesses run. ``state`` is what the compiled replay takes (``new_page_cache``)."""

    def __init__(self, capacity: int):
        self.capacity = int(capacity)
        self.state = new_page_cache(self.capacity, 16)
        self._next_base = 0
        self._limit = 16

    def add(self, key_span: int, max_entries: int) -> int:
        """Reserve ``key_span`` keys for one array whose entries are at most ``max_entries``; its key base."""
        base = self._next_base
        self._next_base += int(key_span)
        self._limit = max(self._limit, int(max_entries))
        return base

    def reserve(self, entries: int) -> None:
        """Room for ``entries`` more keys (bounded by the most entries the capacity can hold)."""
        n = self.state[0].shape[1]
        self.state = grow_page_cache(self.state, min(n + int(entries), self._limit))

    def enter(self, base: int) -> None:
        self.state[2][_BASE] = base


@numba.njit(cache=True, inline="always")
def pc_cached(st, index, key):
    """Whether ``key`` is cached, without touching it (a chunk cached whole holds the pages of its pieces)."""
    return key + st[_BASE] in index


# inlined into its callers (numba IR): a call per chunk visit is part of what the replay costs
@numba.njit(cache=True, inline="always")
def pc_access(nodes, free, st, index, key, size):
    """Touch ``key`` (``size`` bytes): True if it was cached; it is cached (MRU) afterwards.

    Keys are relative to the key base of the array being replayed (``SharedPageCache.enter``)."""
    key += st[_BASE]
    if key in index:
        i = index[key]
        if st[_TAIL] != i:  # unlink, append at tail
            p, nx = nodes[_PREV, i], nodes[_NEXT, i]
            if p >= 0:
                nodes[_NEXT, p] = nx
            else:
                st[_HEAD] = nx
            nodes[_PREV, nx] = p
            t = st[_TAIL]
            nodes[_NEXT, t] = i
            nodes[_PREV, i] = t
            nodes[_NEXT, i] = -1
            st[_TAIL] = i
        return True
    if size > st[PC_CAP]:
        return False
    n = nodes.shape[1]
    while st[_USED] + size > st[PC_CAP] or (st[_NFREE] == 0 and st[_HW] == n):
        h = st[_HEAD]
        nh = nodes[_NEXT, h]
        st[_USED] -= nodes[_SIZE, h]
        del index[nodes[_KEY, h]]
        free[st[_NFREE]] = h
        st[_NFREE] += 1
        st[_HEAD] = nh
        if nh >= 0:
            nodes[_PREV, nh] = -1
        else:
            st[_TAIL] = -1
    if st[_NFREE] > 0:
        st[_NFREE] -= 1
        i = free[st[_NFREE]]
    else:
        i = st[_HW]
        st[_HW] += 1
    nodes[_KEY, i] = key
    nodes[_SIZE, i] = size
    nodes[_PREV, i] = st[_TAIL]
    nodes[_NEXT, i] = -1
    if st[_TAIL] >= 0:
        nodes[_NEXT, st[_TAIL]] = i
    else:
        st[_HEAD] = i
    st[_TAIL] = i
    st[_USED] += size
    st[PC_INSERTED] += size
    index[key] = i
    return False


# ---- HDF5 chunk cache: ent[0]=cid, [1]=prev slot, [2]=next slot, [3]=rd_count, [4]=wr_count, [5]=dirty
# cc = [head, tail, nused, nbytes_used, n_preemptable]
_CID, _EPREV, _ENEXT, _RD, _WR, _DIRTY = 0, 1, 2, 3, 4, 5


@numba.njit(cache=True)
def hash_slot(cid, grid, bits, nslots):
    """``H5D__chunk_hash_val``: scaled coordinates bit-packed, modulo nslots.

    HDF5 shifts and XORs; each scaled coordinate fits its bit field, so this is
    the sum of the coordinates shifted by the bits of the faster dimensions."""
    rem = cid
    val = np.uint64(0)
    shift = np.uint64(0)
    for d in range(len(grid) - 1, -1, -1):
        val |= np.uint64(rem % grid[d]) << shift
        rem //= grid[d]
        shift += np.uint64(bits[d])
    return np.int64(val % np.uint64(nslots))


@numba.njit(cache=True)
def _preemptable(rd, wr, csize):
    """Method 0 of the prune: fully read and/or fully written, not partially either."""
    return (rd == 0 and wr == 0) or (rd == 0 and wr == csize) or (rd == csize and wr == 0)


@numba.njit(cache=True)
def cc_access(ent, cc, slot, nbytes, write, csize):
    """Account ``nbytes`` read or written in a cached chunk (H5D__chunk_unlock)."""
    before = _preemptable(ent[_RD, slot], ent[_WR, slot], csize)
    if write:
        ent[_WR, slot] -= min(ent[_WR, slot], nbytes)
        ent[_DIRTY, slot] = 1
    else:
        ent[_RD, slot] -= min(ent[_RD, slot], nbytes)
    cc[4] += np.int64(_preemptable(ent[_RD, slot], ent[_WR, slot], csize)) - np.int64(before)


@numba.njit(cache=True)
def cc_hit(ent, cc, slot):
    """A hit moves the entry one place toward the tail (H5D__chunk_lock)."""
    nx = ent[_ENEXT, slot]
    if nx < 0:
        return
    nn = ent[_ENEXT, nx]
    p = ent[_EPREV, slot]
    if nn >= 0:
        ent[_EPREV, nn] = slot
    else:
        cc[1] = slot
    ent[_EPREV, nx] = p
    if p >= 0:
        ent[_ENEXT, p] = nx
    else:
        cc[0] = nx
    ent[_EPREV, slot] = nx
    ent[_ENEXT, slot] = nn
    ent[_ENEXT, nx] = slot


@numba.njit(cache=True)
def cc_evict(ent, cc, slot, csize, evicted, n_ev):
    """Remove the entry in ``slot``; a dirty one is appended to ``evicted`` for write-back."""
    if ent[_DIRTY, slot] == 1:
        evicted[n_ev] = ent[_CID, slot]
        n_ev += 1
    if _preemptable(ent[_RD, slot], ent[_WR, slot], csize):
        cc[4] -= 1
    p, nx = ent[_EPREV, slot], ent[_ENEXT, slot]
    if p >= 0:
        ent[_ENEXT, p] = nx
    else:
        cc[0] = nx
    if nx >= 0:
        ent[_EPREV, nx] = p
    else:
        cc[1] = p
    ent[_CID, slot] = -1
    ent[_EPREV, slot] = -1
    ent[_ENEXT, slot] = -1
    ent[_DIRTY, slot] = 0
    cc[2] -= 1
    cc[3] -= csize
    return n_ev


@numba.njit(cache=True)
def cc_insert(ent, cc, slot, cid, csize, nbytes_max, w0, evicted):
    """Insert ``cid`` at ``slot`` (H5D__chunk_lock + H5D__chunk_cache_prune).

    Returns how many dirty chunks were evicted (their ids are in ``evicted``)."""
    n_ev = 0
    if ent[_CID, slot] >= 0:  # hash collision: the occupant goes
        n_ev = cc_evict(ent, cc, slot, csize, evicted, n_ev)
    w = np.int64(cc[2] * w0)
    if cc[4] == 0:
        # nothing for method 0: the walk reduces to method 1 evicting from the head once
        # pointer 0 has gone w steps (never, if w reaches the end of the list)
        if w < cc[2]:
            while cc[0] >= 0 and cc[3] + csize > nbytes_max:
                n_ev = cc_evict(ent, cc, cc[0], csize, evicted, n_ev)
        w = -1
    p0 = cc[0] if w >= 0 else -1
    p1 = -1
    while (p0 >= 0 or p1 >= 0) and cc[3] + csize > nbytes_max:
        if w == 0:
            p1 = cc[0]
        n0 = ent[_ENEXT, p0] if p0 >= 0 else -1
        n1 = ent[_ENEXT, p1] if p1 >= 0 else -1
        for i in range(2):
            if cc[3] + csize <= nbytes_max:
                break
            cur = -1
            if i == 0 and p0 >= 0:
                rd, wr = ent[_RD, p0], ent[_WR, p0]
                if (rd == 0 and wr == 0) or (rd == 0 and wr == csize) or (rd == csize and wr == 0):
                    cur = p0
            elif i == 1 and p1 >= 0:
                cur = p1
            if cur >= 0:
                if p0 == cur:
                    p0 = -1
                if p1 == cur:
                    p1 = -1
                if n0 == cur:
                    n0 = ent[_ENEXT, cur]
                if n1 == cur:
                    n1 = ent[_ENEXT, cur]
                n_ev = cc_evict(ent, cc, cur, csize, evicted, n_ev)
        p0 = n0
        p1 = n1
        w -= 1
    ent[_CID, slot] = cid
    ent[_RD, slot] = csize
    ent[_WR, slot] = csize
    ent[_DIRTY, slot] = 0
    ent[_ENEXT, slot] = -1
    ent[_EPREV, slot] = cc[1]
    if cc[1] >= 0:
        ent[_ENEXT, cc[1]] = slot
    else:
        cc[0] = slot
    cc[1] = slot
    cc[2] += 1
    cc[3] += csize
    return n_ev


def hash_bits(grid: tuple[int, ...]) -> np.ndarray:
    """Bits per scaled dimension: log2 of the next power of two of the chunk count."""
    return np.array([max(0, int(g - 1).bit_length()) for g in grid], np.int64)
