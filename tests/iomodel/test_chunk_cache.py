"""The compiled HDF5 chunk-cache simulation against a direct Python transcription of
H5Dchunk.c (hash slots, one-step LRU promotion, w0 two-pointer prune, write-back), and the page reads
of write-backs over data on disk whose pages are not cached."""
import numpy as np
import pytest

from instrumentation.records import AccessRecord, DatasetRecord, Selection
from iomodel.layout import Layout
from iomodel.variables import PAGE, count_variables

CHUNK = 10
CSIZE = CHUNK * 4


class ReferenceCache:
    def __init__(self, nbytes_max, nslots, w0):
        self.max, self.nslots, self.w0 = nbytes_max, nslots, w0
        self.lst, self.slot, self.rd, self.wr, self.dirty = [], {}, {}, {}, {}
        self.loads = self.writes = 0
        self.paged = set()
        """Chunks whose pages are in the (large) page cache: loaded or written back before."""
        self.page_reads = 0
        """Pages a write-back covers in part, read first: its chunk is on disk and its pages are not cached."""

    def _write_back(self, c):
        self.writes += 1
        if c not in self.paged:
            lo, hi = c * CSIZE, (c + 1) * CSIZE
            ends = {lo // PAGE} if lo % PAGE else set()
            self.page_reads += len(ends | ({(hi - 1) // PAGE} if hi % PAGE else set()))
        self.paged.add(c)

    def _next(self, c):
        if c is None:
            return None
        i = self.lst.index(c)
        return self.lst[i + 1] if i + 1 < len(self.lst) else None

    def _pre(self, c):
        rd, wr = self.rd[c], self.wr[c]
        return (rd == 0 and wr == 0) or (rd == 0 and wr == CSIZE) or (rd == CSIZE and wr == 0)

    def _evict(self, c):
        self.lst.remove(c)
        del self.slot[c % self.nslots]
        if self.dirty.pop(c):
            self._write_back(c)

    def _prune(self):
        used = lambda: len(self.lst) * CSIZE  # noqa: E731
        w = int(len(self.lst) * self.w0)
        p0, p1 = (self.lst[0] if self.lst else None), None
        while (p0 is not None or p1 is not None) and used() + CSIZE > self.max:
            if w == 0:
                p1 = self.lst[0] if self.lst else None
            n0, n1 = self._next(p0), self._next(p1)
            for i in (0, 1):
                if used() + CSIZE <= self.max:
                    break
                cur = None
                if i == 0 and p0 is not None and self._pre(p0):
                    cur = p0
                elif i == 1 and p1 is not None:
                    cur = p1
                if cur is not None:
                    p0 = None if p0 == cur else p0
                    p1 = None if p1 == cur else p1
                    n0 = self._next(cur) if n0 == cur else n0
                    n1 = self._next(cur) if n1 == cur else n1
                    self._evict(cur)
            p0, p1, w = n0, n1, w - 1

    def access(self, c, nbytes, write, full):
        s = c % self.nslots
        if self.slot.get(s) == c:
            i = self.lst.index(c)
            if i + 1 < len(self.lst):
                self.lst[i], self.lst[i + 1] = self.lst[i + 1], self.lst[i]
        else:
            if not (write and full):
                self.loads += 1
                self.paged.add(c)
            if s in self.slot:
                self._evict(self.slot[s])
            self._prune()
            self.lst.append(c)
            self.slot[s] = c
            self.rd[c] = self.wr[c] = CSIZE
            self.dirty[c] = False
        if write:
            self.wr[c] -= min(self.wr[c], nbytes)
            self.dirty[c] = True
        else:
            self.rd[c] -= min(self.rd[c], nbytes)

    def close(self):
        for c in self.lst:
            if self.dirty[c]:
                self._write_back(c)


@pytest.mark.parametrize("w0", [0.0, 0.5, 0.75, 1.0])
@pytest.mark.parametrize("seed", [0, 1, 2])
def test_chunk_cache_matches_reference(w0, seed):
    rng = np.random.default_rng(seed)
    n = 400
    ds = DatasetRecord(0, "hdf5", "x", "f", "/d", (n,), "float32", chunks=(CHUNK,))
    lay = Layout("hdf5", (n,), 4, (CHUNK,), rdcc_nbytes=5 * CSIZE, rdcc_nslots=7, rdcc_w0=w0)
    ref = ReferenceCache(5 * CSIZE, 7, w0)
    accesses = []
    for _ in range(300):
        start = int(rng.integers(0, n - 30))
        length = int(rng.choice([1, 3, 10, 25]))
        op = "write" if rng.random() < 0.3 else "read"
        accesses.append(AccessRecord(0, op, Selection.box((start,), (length,)), length, 4 * length, 0.0, 0.0))
        for c in range(start // CHUNK, (start + length - 1) // CHUNK + 1):
            lo, hi = max(start, c * CHUNK), min(start + length, (c + 1) * CHUNK)
            ref.access(c, 4 * (hi - lo), op == "write", hi - lo == CHUNK)
    ref.close()
    v = count_variables(accesses, ds, lay, 1 << 30)
    assert v.n_rdisk + v.n_cache == ref.loads + ref.page_reads
    assert v.n_wdisk == ref.writes
