"""One measured run of the I/O model's ground truth: a layout, an access pattern, the page-cache state.

``Case`` is what ``iomodel.calibrate`` fits coefficients on and ``iomodel.cpuprobe`` probes a machine with:
``pattern_accesses`` makes its accesses, ``measure`` runs it for real (``iomodel.replay``: h5py and zarr
imported there), ``features_of`` counts the model's variables for it.
"""
from __future__ import annotations

import os
from dataclasses import dataclass, field, replace
from typing import Sequence

import numpy as np

from instrumentation.records import READ, WRITE, AccessRecord, DatasetRecord, Filter, ResizeRecord, Selection

from . import replay as _replay
from .layout import HDF5_DEFAULT_CACHE, chunks_text

MiB = 1 << 20

HDF5_CACHES = {"default": HDF5_DEFAULT_CACHE, "none": (0, 8191, 0.75), "large": (256 * MiB, 8191, 0.75)}
"""HDF5 chunk caches calibrated: HDF5 2.0's default, none (direct chunk I/O), larger than the array."""

PATTERNS = ("full", "columns", "rows", "box-aligned", "box-unaligned", "write-slabs", "write-rows", "write-full",
            "write-columns", "append")
"""Access patterns; 'append' is used by the validation suite, not by calibration."""


# ---------------------------------------------------------------------------- patterns

def _acc(sel: Selection, op: str, itemsize: int) -> AccessRecord:
    n = sel.nelements
    return AccessRecord(0, op, sel, n, n * itemsize, 0.0, 0.0)


def pattern_accesses(pattern: str, shape: Sequence[int], *, itemsize: int = 4, rng: np.random.Generator,
                     n: int = 100, box: Sequence[int] | None = None, slab_rows: int = 1000,
                     call_bytes: int = 64 * MiB) -> list[AccessRecord | ResizeRecord]:
    """The accesses of one pattern on an array of ``shape`` (axis 0 is the long one).

    full: the whole array in calls of at most ``call_bytes``; columns: ``n``
    whole lines along axis 0 at random positions in the other dimensions (write-columns: written);
    rows: ``n`` random single rows (all of the other dimensions); box-aligned /
    box-unaligned: ``n`` boxes of shape ``box`` at random rows, their other
    coordinates a multiple of the box edge (aligned) or shifted off it by a third
    of the edge; write-slabs: ``n`` consecutive slabs of ``slab_rows`` rows from
    a random row (partial chunks); write-rows: ``n`` consecutive single rows written from a random row (a
    time-step loop's records); write-full: the whole array written in calls
    of at most ``call_bytes``; append: the array grown by ``slab_rows`` rows at a
    time (resize, then write the new slab) from empty to ``shape``.
    """
    shape = tuple(int(s) for s in shape)
    nd = len(shape)
    rows, rest = shape[0], shape[1:]
    row_bytes = int(np.prod(rest, dtype=np.int64)) * itemsize
    if pattern in ("full", "write-full"):
        op = READ if pattern == "full" else WRITE
        step = max(1, call_bytes // max(row_bytes, 1))
        return [_acc(Selection.box((lo,) + (0,) * (nd - 1), (min(step, rows - lo),) + rest), op, itemsize)
                for lo in range(0, rows, step)]
    if pattern in ("columns", "write-columns"):
        op = READ if pattern == "columns" else WRITE
        return [_acc(Selection.box((0,) + tuple(int(rng.integers(0, s)) for s in rest), (rows,) + (1,) * (nd - 1)),
                     op, itemsize) for _ in range(n)]
    if pattern == "rows":
        return [_acc(Selection.box((int(r),) + (0,) * (nd - 1), (1,) + rest), READ, itemsize)
                for r in rng.integers(0, rows, n)]
    if pattern in ("box-aligned", "box-unaligned"):
        b = tuple(int(x) for x in box)
        out = []
        for _ in range(n):
            start = [int(rng.integers(0, rows - b[0] + 1))]
            for s, e in zip(rest, b[1:]):
                shift = 0 if pattern == "box-aligned" or e == s else max(1, e // 3)
                k = int(rng.integers(0, max(1, (s - e - shift) // e + 1)))
                start.append(min(k * e + shift, s - e))
            out.append(_acc(Selection.box(tuple(start), b), READ, itemsize))
        return out
    if pattern in ("write-slabs", "write-rows"):
        height = slab_rows if pattern == "write-slabs" else 1
        count = min(n, rows // height)
        first = int(rng.integers(0, rows - count * height + 1))
        return [_acc(Selection.box((first + i * height,) + (0,) * (nd - 1), (height,) + rest), WRITE, itemsize)
                for i in range(count)]
    if pattern == "append":
        out: list[AccessRecord | ResizeRecord] = []
        for lo in range(0, rows, slab_rows):
            hi = min(rows, lo + slab_rows)
            out.append(ResizeRecord(0, (hi,) + rest, 0.0))
            out.append(_acc(Selection.box((lo,) + (0,) * (nd - 1), (hi - lo,) + rest), WRITE, itemsize))
        return out
    raise ValueError(f"unknown pattern {pattern!r} (one of {', '.join(PATTERNS)})")


def fresh_array(pattern: str) -> bool:
    """Patterns that start from a created, never-written array (no chunk allocated)."""
    return pattern in ("write-full", "append")


# ---------------------------------------------------------------------------- cases

@dataclass(frozen=True)
class Case:
    """One measured run: a layout, an access pattern, the page-cache state at the start."""

    library: str
    shape: tuple[int, ...]
    dtype: str
    chunks: tuple[int, ...] | None
    """None: contiguous storage (HDF5)."""
    pattern: str
    accesses: tuple = field(repr=False, compare=False)
    cache: str | None = None  # HDF5_CACHES key
    shards: tuple[int, ...] | None = None
    warm: bool = False
    codec: str | None = None  # one compressor (replay's filter names), None = unfiltered
    ratio: float = 1.0  # stored / raw bytes, measured once the array is built (``with_stored``)

    @property
    def label(self) -> str:
        parts = [self.library, "chunks=" + chunks_text(self.chunks)]
        if self.shards:
            parts.append("shards=" + chunks_text(self.shards))
        if self.codec:
            parts.append(f"codec={self.codec}")
        if self.cache:
            parts.append(f"cache={self.cache}")
        return " ".join(parts + [self.pattern, "warm" if self.warm else "cold"])

    @property
    def group(self) -> tuple:
        """Cases of one group share one built array (reads, then partial writes)."""
        return (self.library, self.shape, self.dtype, self.chunks, self.shards, self.codec)

    @property
    def filters(self) -> tuple[Filter, ...]:
        return (Filter(self.codec),) if self.codec else ()

    def with_stored(self, stored_bytes: int) -> "Case":
        """The case with the compression ratio of its built array (stored / raw bytes)."""
        if not self.codec:
            return self
        raw = int(np.prod(self.shape, dtype=np.int64)) * np.dtype(self.dtype).itemsize
        return replace(self, ratio=min(1.0, stored_bytes / raw))

    def layout(self):
        from .layout import Layout

        kw = {}
        if self.library == "hdf5":
            nbytes, nslots, w0 = HDF5_CACHES[self.cache or "default"]
            kw = dict(rdcc_nbytes=nbytes, rdcc_nslots=nslots, rdcc_w0=w0)
        return Layout(library=self.library, shape=self.shape, itemsize=np.dtype(self.dtype).itemsize,
                      chunks=self.chunks, shards=self.shards, filtered=bool(self.codec), ratio=self.ratio,
                      maxshape=(None,) + self.shape[1:] if self.pattern == "append" else None, **kw)

    def spec(self) -> _replay.LayoutSpec:
        """What replay builds (same layout as ``layout()``, with the dtype)."""
        return _replay.LayoutSpec(
            library=self.library, shape=self.shape, dtype=self.dtype, chunks=self.chunks, shards=self.shards,
            rdcc=HDF5_CACHES[self.cache or "default"] if self.library == "hdf5" else None, filters=self.filters,
            maxshape=(None,) + self.shape[1:] if self.pattern == "append" else None,
        )

    def dataset(self) -> DatasetRecord:
        """The DatasetRecord a tracer would have written for this run (created=True: no chunk on disk yet)."""
        from instrumentation.records import ChunkCache

        lay = self.layout()
        start = (0,) + self.shape[1:] if self.pattern == "append" else self.shape
        return DatasetRecord(
            id=0, library=self.library, library_version="", file="calibration", path="/data", shape=start,
            dtype=self.dtype, maxshape=getattr(lay, "maxshape", None), chunks=self.chunks, shards=self.shards,
            filters=self.filters,
            cache=ChunkCache(lay.rdcc_nbytes, lay.rdcc_nslots, lay.rdcc_w0) if self.library == "hdf5" else None,
            zarr_format=3 if self.library == "zarr" else None, created=fresh_array(self.pattern),
        )


def features_of(case: Case, page_cache_bytes: int, cache_curve=None, zarr_overlap: float = 1.0,
                readahead: int = 0, device_request: int = 0) -> dict[str, float]:
    """The model's counted variables for the case (the design-matrix row)."""
    from .variables import count_variables

    return count_variables([a for a in case.accesses if isinstance(a, AccessRecord)], case.dataset(), case.layout(),
                           page_cache_bytes, warm=case.warm, cache_curve=cache_curve,
                           zarr_overlap=zarr_overlap, readahead=readahead,
                           device_request=device_request).as_features()


def measure(case: Case, workdir: str | os.PathLike, *, rebuild: bool, data: np.ndarray | None = None,
            repeat: int = 1) -> _replay.ReplayResult:
    """Real replays of the case (array rebuilt as needed): the fastest of ``repeat``.

    The fastest, not the median: on a shared machine other jobs only ever add time (descheduling,
    cache and disk contention), so the minimum is the steadiest estimate of the run's own cost."""
    runs = []
    fresh = fresh_array(case.pattern)
    for _ in range(repeat):
        runs.append(_replay.replay(case.accesses, case.spec(), workdir, fill=not fresh, rebuild=rebuild or fresh,
                                   data=data, cold=not case.warm,
                                   initial_shape=(0,) + case.shape[1:] if case.pattern == "append" else None))
        rebuild = False
    return min(runs, key=lambda r: r.total_seconds)


__all__ = ["HDF5_CACHES", "PATTERNS", "Case", "features_of", "fresh_array", "measure", "pattern_accesses"]
