"""Candidate layouts of one traced array: library x chunk shape x cache/shards x compressor.

Chunk shapes come from the observed access pattern (``instrumentation.patterns``):
for each significant class of accesses, its median selection shape is grown by
integer multiples (or shrunk by halving) to sizes from 64 KiB to 64 MiB, so the
chunk grid stays aligned to what was actually read or written; mixed patterns
also get balanced shapes (the bytes-weighted geometric mean of the classes'
shapes, and PyTables-style halving of the array). The recorded layout and the
libraries' own defaults (h5py's ``guess_chunk``, zarr's ``_guess_chunks``) are
always included as baselines. Per shape, HDF5 gets chunk-cache variants (the
8 MiB default, one sized to the chunks a typical access touches, and no cache,
HDF5's direct piecewise path) and Zarr gets shard variants when the array would
otherwise be many chunk files. Compressors come from the user's constraints.
"""
from __future__ import annotations

import math
from dataclasses import dataclass, field, replace
from typing import Sequence

import numpy as np

from advisor.storage import ArrayStorage
from compression_model.error_bound import ErrorBound
from instrumentation.patterns import AccessPattern, PatternClass
from instrumentation.records import DatasetRecord
from iomodel.layout import HDF5_DEFAULT_CACHE, Layout, chunks_text, format_bytes, layout_text
from instrumentation.errors import InputError
from instrumentation.extras import MissingExtra

KiB, MiB, GiB = 1 << 10, 1 << 20, 1 << 30

CHUNK_TARGETS = tuple(64 * KiB * 4**k for k in range(6))
"""Chunk sizes tried per access class: 64 KiB, 256 KiB, 1, 4, 16, 64 MiB."""

SIGNIFICANT = 0.05
"""A class shapes chunks when it has this share of the accesses or of the bytes."""

MAX_CLASSES = 3
"""Most classes whose aligned shapes are generated (most frequent first)."""

CACHE_CAP = 1 * GiB
"""Largest HDF5 chunk cache recommended when no budget is given: memory the user's process must spare."""

CACHE_BUDGET = 64 * MiB
"""Chunk-cache memory per process a careful expert would give (``--cache-budget``), shared by the datasets the
trace shows open at the same time: issue 30's advice asked for 128 MiB-1 GiB caches that held the whole array, so
its speed-ups vanished at the data's real size."""

MIN_CACHE_SHARE = 1 * MiB
"""Smallest share of the budget one dataset is given (HDF5's own default before 1.14 was 1 MiB)."""

SHARD_MIN_CHUNKS = 1000
"""Zarr arrays with at least this many chunk files get sharded variants."""

SHARD_TARGET = 64 * MiB
"""Balanced shard size aimed at (a multiple of the chunk in every dimension)."""

DEFAULT_LOSSLESS = ("blosc-zstd", "bitshuffle-lz4", "zstd")
"""Lossless compressors tried when the user names none."""

DEFAULT_LOSSY = ("sz3", "zfp")
"""Lossy compressors tried when the user allows an error (``max_error``) and names none."""


@dataclass(frozen=True)
class Candidate(ArrayStorage):
    """One storage configuration of one array; ``origin`` says why it was proposed."""

    error_bound: ErrorBound | None = None
    origin: tuple[str, ...] = field(default=(), compare=False)

    @property
    def cache_or_shards(self) -> str:
        """The table cell beside the chunks: ``cache 8MiB`` (HDF5 chunked), ``shards 512x512`` (zarr), or ''."""
        if self.library == "hdf5":
            return "" if self.chunks is None else f"cache {format_bytes(self.cache_bytes or 0)}"
        return "" if self.shards is None else "shards " + chunks_text(self.shards)

    @property
    def label(self) -> str:
        """Short one-line description: ``hdf5 4096x32 cache=8MiB sz3(rel:0.001)``."""
        cache = (self.cache_bytes or 0) if self.library == "hdf5" else None
        parts = [self.library, layout_text(self.chunks, self.shards, cache)]
        if self.compressor:
            parts.append(self.compressor + (f"({self.error_bound})" if self.error_bound else ""))
        return " ".join(parts)

    def layout(self, shape: Sequence[int], itemsize: int, *, maxshape=None, ratio: float = 1.0) -> Layout:
        """The iomodel Layout of this candidate; ``ratio`` = stored / raw bytes of a chunk."""
        kw = {}
        if self.library == "hdf5" and self.cache_bytes is not None:
            kw = dict(rdcc_nbytes=self.cache_bytes, rdcc_nslots=self.cache_slots or HDF5_DEFAULT_CACHE[1])
        return Layout(self.library, tuple(shape), itemsize, self.chunks, self.shards,
                      ratio=ratio, filtered=self.compressor is not None,
                      maxshape=maxshape if self.library == "hdf5" else None, **kw)

    def with_codec(self, compressor: str | None, error_bound: ErrorBound | None) -> "Candidate":
        return replace(self, compressor=compressor, error_bound=error_bound)

    def get_config(self) -> dict:
        return {**self.storage_config(), "error_bound": None if self.error_bound is None else str(self.error_bound),
                "origin": list(self.origin)}

    @classmethod
    def from_config(cls, c: dict) -> "Candidate":
        return cls(*cls.storage_args(c), None if c.get("error_bound") is None else ErrorBound.parse(c["error_bound"]),
                   tuple(c.get("origin", ())))


# ---------------------------------------------------------------------------- chunk shapes

def _nbytes(shape: Sequence[int], itemsize: int) -> int:
    return int(np.prod(shape, dtype=np.int64)) * itemsize


def _clip(shape: Sequence[int], array_shape: Sequence[int]) -> list[int]:
    return [max(1, min(int(c), max(int(s), 1))) for c, s in zip(shape, array_shape)]


def grow_aligned(base: Sequence[int], array_shape: Sequence[int], itemsize: int, target: int,
                 axes: Sequence[int]) -> tuple[int, ...]:
    """``base`` resized to about ``target`` bytes, staying aligned to ``base``.

    Growing multiplies dimensions by whole numbers (axes in the order given,
    moving on when one reaches the array's extent); shrinking halves the
    dimensions (largest first among ``axes``, then any), so a selection of
    shape ``base`` starting on a multiple of it covers whole chunks.
    """
    c = _clip(base, array_shape)
    shape = [max(int(s), 1) for s in array_shape]
    if _nbytes(c, itemsize) > target:
        order = sorted(axes, key=lambda d: -c[d]) + sorted(range(len(c)), key=lambda d: -c[d])
        for d in order:
            while _nbytes(c, itemsize) > target and c[d] > 1:
                c[d] = -(-c[d] // 2)
        return tuple(c)
    for d in axes:
        have = _nbytes(c, itemsize)
        if have * 1.5 >= target:
            break
        k = max(1, int(target // have))
        c[d] = min(shape[d], c[d] * k)
    return tuple(c)


def grow_balanced(base: Sequence[int], array_shape: Sequence[int], itemsize: int, target: int,
                  axes: Sequence[int]) -> tuple[int, ...]:
    """``base`` grown by the same whole factor along every axis in ``axes`` (capped at the extent)."""
    c = _clip(base, array_shape)
    free = [d for d in axes if c[d] < array_shape[d]]
    while free and _nbytes(c, itemsize) * 1.5 < target:
        f = (target / _nbytes(c, itemsize)) ** (1 / len(free))
        k = max(2, int(round(f)))
        for d in free:
            c[d] = min(max(int(array_shape[d]), 1), c[d] * k)
        free = [d for d in free if c[d] < array_shape[d]]
    return tuple(c) if _nbytes(c, itemsize) <= 2 * target else grow_aligned(c, array_shape, itemsize, target, axes)


def halving(array_shape: Sequence[int], itemsize: int, target: int) -> tuple[int, ...]:
    """PyTables/h5py-style: halve the axes round robin from the whole array down to ``target`` bytes."""
    c = [max(int(s), 1) for s in array_shape]
    d = 0
    while _nbytes(c, itemsize) > target and any(x > 1 for x in c):
        if c[d % len(c)] > 1:
            c[d % len(c)] = -(-c[d % len(c)] // 2)
        d += 1
    return tuple(c)


def h5py_default_chunks(shape: Sequence[int], maxshape, itemsize: int) -> tuple[int, ...]:
    """What ``create_dataset(..., chunks=True)`` picks (h5py's own ``guess_chunk``)."""
    from h5py._hl.filters import guess_chunk  # h5py is optional for the models; lazily here

    return tuple(int(c) for c in guess_chunk(tuple(shape), maxshape, itemsize))


def zarr_default_chunks(shape: Sequence[int], itemsize: int) -> tuple[int, ...]:
    """What ``zarr.create_array(..., chunks="auto")`` picks without shards (zarr 3's ``_guess_chunks``)."""
    from zarr.core.chunk_grids import _guess_chunks

    return tuple(int(c) for c in _guess_chunks(tuple(int(s) for s in shape), itemsize))


def significant_classes(pattern: AccessPattern) -> list[PatternClass]:
    """Classes with at least SIGNIFICANT of the accesses or bytes, most frequent first."""
    total_n = sum(c.n for c in pattern.classes) or 1
    total_b = sum(c.nbytes for c in pattern.classes) or 1
    keep = [c for c in pattern.classes if c.n >= SIGNIFICANT * total_n or c.nbytes >= SIGNIFICANT * total_b]
    return keep[:MAX_CLASSES]


def class_shape(cls: PatternClass) -> tuple[int, ...]:
    """The box a class touches per access: its selection, its bounding box if strided, 1s for points."""
    if cls.name == "points":
        return tuple(1 for _ in cls.shape)
    return cls.extent if cls.name == "strided" else cls.shape


def chunk_shapes(pattern: AccessPattern, shape: Sequence[int], itemsize: int) -> dict[tuple[int, ...], str]:
    """Chunk shapes aligned to the pattern's classes (and balanced for mixed patterns) -> origin label."""
    out: dict[tuple[int, ...], str] = {}
    nd = len(shape)
    classes = significant_classes(pattern)
    per_class: list[tuple[PatternClass, dict[int, tuple[int, ...]]]] = []
    for cls in classes:
        base = _clip(class_shape(cls), shape)
        if cls.name in ("full", "points"):
            continue  # no shape to align to: the balanced shapes below serve them
        growable = [d for d in range(nd) if base[d] < shape[d]] or list(range(nd))
        mine: dict[int, tuple[int, ...]] = {}
        nb = _nbytes(base, itemsize)
        if CHUNK_TARGETS[0] <= nb <= CHUNK_TARGETS[-1]:
            out.setdefault(tuple(base), f"{cls.name}: one chunk per access")
        for t in CHUNK_TARGETS:
            variants = [grow_aligned(base, shape, itemsize, t, [d] + [e for e in growable if e != d])
                        for d in growable]
            if len(growable) > 1:
                variants.append(grow_balanced(base, shape, itemsize, t, growable))
            for v in variants:
                out.setdefault(v, f"{cls.name}-aligned {format_bytes(t)}")
            mine[t] = variants[-1]
        per_class.append((cls, mine))
    mixed = pattern.kind == "mixed" or not per_class
    if mixed:
        for t in CHUNK_TARGETS:
            out.setdefault(halving(shape, itemsize, t), f"balanced {format_bytes(t)}")
        if len(per_class) > 1:
            weights = np.asarray([c.nbytes + 1 for c, _ in per_class], float)
            for t in CHUNK_TARGETS:
                logs = np.asarray([np.log(m[t]) for _, m in per_class])
                mean = np.exp((weights[:, None] * logs).sum(0) / weights.sum())
                geo = grow_aligned([int(round(x)) for x in mean], shape, itemsize, t, list(range(nd)))
                out.setdefault(geo, f"mixed-balanced {format_bytes(t)}")
    return out


# ---------------------------------------------------------------------------- caches and shards

def touched_chunks(sel_shape: Sequence[int], chunks: Sequence[int], array_shape: Sequence[int]) -> int:
    """Chunks a selection of this shape covers when it does not start on a chunk boundary."""
    n = 1
    for s, c, a in zip(sel_shape, chunks, array_shape):
        grid = -(-max(a, 1) // c)
        n *= min(grid, -(-s // c) + (1 if s % c or s < c else 0))
    return n


def _next_prime(n: int) -> int:
    def prime(k):
        return k > 1 and all(k % p for p in range(2, int(k**0.5) + 1))
    while not prime(n):
        n += 1
    return n


def cache_slots(cache_bytes: int, chunk_nbytes: int) -> int:
    """A prime, about 100x the chunks the cache holds (HDF5's H5Pset_chunk_cache advice), >= the default."""
    fit = cache_bytes // max(chunk_nbytes, 1)
    return _next_prime(int(min(max(HDF5_DEFAULT_CACHE[1], 100 * fit), 1 << 22)))


def working_set(pattern: AccessPattern, chunks: Sequence[int], shape: Sequence[int], itemsize: int) -> int:
    """Bytes of the chunks one access of the most demanding significant class touches."""
    cb = _nbytes(chunks, itemsize)
    return max((touched_chunks(class_shape(c), chunks, shape) * cb for c in significant_classes(pattern)),
               default=cb)


def hdf5_caches(pattern: AccessPattern, chunks: Sequence[int] | None, shape: Sequence[int],
                itemsize: int, budget: int | None = None) -> list[tuple[int, int, str]]:
    """(rdcc_nbytes, rdcc_nslots, why) variants for an HDF5 chunk shape, none above ``budget`` bytes (this
    dataset's share of the process's chunk-cache budget; None: up to CACHE_CAP). Under a budget below HDF5's
    8 MiB default the default variant becomes a cache of the budget (the recipe sets it)."""
    if chunks is None:
        return [(HDF5_DEFAULT_CACHE[0], HDF5_DEFAULT_CACHE[1], "contiguous")]
    cap = CACHE_CAP if budget is None else max(int(budget), 0)
    if HDF5_DEFAULT_CACHE[0] <= cap:
        out = [(HDF5_DEFAULT_CACHE[0], HDF5_DEFAULT_CACHE[1], "default cache")]
    else:
        out = [(cap, HDF5_DEFAULT_CACHE[1], f"cache of the {format_bytes(cap)} budget")] if cap > 0 else []
    cb = _nbytes(chunks, itemsize)
    ws = working_set(pattern, chunks, shape, itemsize)
    need = max(ws, cb) * 5 // 4
    if need > HDF5_DEFAULT_CACHE[0]:
        size = min(1 << math.ceil(math.log2(need)), 1 << int(math.log2(max(cap, 1))), max(1 << math.ceil(
            math.log2(_nbytes(shape, itemsize) + 1)), HDF5_DEFAULT_CACHE[0]))
        if size > HDF5_DEFAULT_CACHE[0]:
            why = f"cache for the {format_bytes(ws)} working set"
            if size < need:
                why = f"the {format_bytes(size)} cache the budget allows (the working set is {format_bytes(ws)})"
            out.append((size, cache_slots(size, cb), why))
    # piecewise (direct) I/O pays off when accesses take a small part of each chunk
    if any(touched_chunks(class_shape(c), chunks, shape) * cb > 2 * max(c.nbytes // max(c.n, 1), 1)
           for c in significant_classes(pattern)):
        out.append((0, HDF5_DEFAULT_CACHE[1], "no cache: HDF5 reads only the selected bytes"))
    return out


def zarr_shards(pattern: AccessPattern, chunks: Sequence[int], shape: Sequence[int],
                itemsize: int) -> list[tuple[tuple[int, ...] | None, str]]:
    """(shards, why) variants for a Zarr chunk shape: none, plus sharded when there are many chunk files."""
    out: list[tuple[tuple[int, ...] | None, str]] = [(None, "one file per chunk")]
    grid = [-(-max(s, 1) // c) for s, c in zip(shape, chunks)]
    if int(np.prod(grid)) < SHARD_MIN_CHUNKS:
        return out
    classes = significant_classes(pattern)
    if classes:  # one shard covers the chunks of a typical access
        sel = class_shape(classes[0])
        k = [min(g, max(1, -(-s // c))) for s, c, g in zip(sel, chunks, grid)]
        if int(np.prod(k)) >= 4:
            out.append((tuple(c * m for c, m in zip(chunks, k)), "shard per access"))
    cb = _nbytes(chunks, itemsize)
    per = max(2, SHARD_TARGET // max(cb, 1))
    k = [1] * len(chunks)
    while int(np.prod(k)) < per and any(m < g for m, g in zip(k, grid)):
        d = min((d for d in range(len(k)) if k[d] < grid[d]), key=lambda d: k[d] * chunks[d] / max(shape[d], 1))
        k[d] = min(grid[d], k[d] * 2)
    if int(np.prod(k)) >= 4:
        out.append((tuple(c * m for c, m in zip(chunks, k)), f"balanced {format_bytes(cb * np.prod(k))} shards"))
    seen, uniq = set(), []
    for s, why in out:
        if s not in seen:
            seen.add(s)
            uniq.append((s, why))
    return uniq


# ---------------------------------------------------------------------------- codecs

@dataclass(frozen=True)
class CodecChoice:
    """A compressor the constraints allow (lossy ones with the user's error bound)."""

    name: str
    error_bound: ErrorBound | None


def allowed_codecs(dtype: str, *, max_error: ErrorBound | str | None = None, lossless_only: bool = False,
                   compressors: Sequence[str] | None = None) -> tuple[list[CodecChoice], list[str]]:
    """The codecs to try, and notes on the ones excluded (with why)."""
    from compression_model.codecs import CODEC_NAMES, LOSSY_NAMES, unavailable

    if isinstance(max_error, str):
        max_error = ErrorBound.parse(max_error)
    notes: list[str] = []
    names = list(compressors) if compressors else list(DEFAULT_LOSSLESS) + (
        list(DEFAULT_LOSSY) if max_error is not None and not lossless_only else [])
    unknown = [n for n in names if n not in CODEC_NAMES and n != "none"]
    if unknown:
        raise InputError(f"unknown compressor {unknown[0]!r} in --compressors; known: {', '.join(CODEC_NAMES)}")
    out = []
    kind = np.dtype(dtype).kind
    for n in names:
        if n == "none":
            continue
        if unavailable(n):  # its only implementation is a filter of an extra that is not installed
            if compressors:
                raise MissingExtra(unavailable(n))
            notes.append(f"left out: {unavailable(n)}")
            continue
        if n in LOSSY_NAMES:
            if lossless_only:
                notes.append(f"{n} skipped: lossy and --lossless-only given")
                continue
            if max_error is None:
                raise InputError(f"compressor {n!r} is lossy: give --max-error abs:X or rel:Y")
            if kind != "f" or np.dtype(dtype).itemsize not in (4, 8):
                notes.append(f"{n} skipped: lossy codecs take float32/float64 data, not {dtype}")
                continue
            out.append(CodecChoice(n, max_error))
        else:
            out.append(CodecChoice(n, None))
    return out, notes


# ---------------------------------------------------------------------------- all candidates

def needs_resizable(ds: DatasetRecord, resized: bool) -> bool:
    """True when HDF5 must be chunked: the trace resizes the array or its HDF5 maxshape exceeds its shape."""
    if resized:
        return True
    return ds.library == "hdf5" and ds.maxshape is not None and any(
        m is None or m > s for m, s in zip(ds.maxshape, ds.shape))


PIPELINE_STAGES = ("bytes", "sharding_indexed", "transpose", "shuffle", "fletcher32", "crc32c")
"""Recorded pipeline stages that do not compress (byte order, shards, byte shuffle, checksums)."""


def recorded_compressor(ds: DatasetRecord) -> str | None:
    """The compression_model codec that stands for the recorded filter pipeline (zarr's default zstd, an
    HDF5 gzip, blosc, ...), so the current layout is priced with the compression it really has; None when
    the pipeline does not compress or has no lossless counterpart here (lossy filters need their bound)."""
    stages = [f for f in ds.filters if f.name not in PIPELINE_STAGES]
    if len(stages) != 1:
        return None
    f = stages[0]
    if f.name == "blosc":
        cname = f.options.get("cname")
        if cname is None and f.filter_id == 32001:  # HDF5 blosc: cd_values[6] is the compressor code
            cd = f.options.get("cd_values") or []
            cname = {1: "lz4", 5: "zstd"}.get(cd[6] if len(cd) > 6 else 0)
        if f.options.get("shuffle") in ("bitshuffle", 2) and cname == "lz4":
            return "bitshuffle-lz4"
        return {"lz4": "blosc-lz4", "zstd": "blosc-zstd"}.get(cname)
    return {"zstd": "zstd", "gzip": "gzip", "lz4": "lz4", "bitshuffle": "bitshuffle-lz4"}.get(f.name)


def baselines(ds: DatasetRecord, shape: Sequence[int], resizable: bool) -> dict[str, Candidate]:
    """The recorded layout (with its compressor, ``recorded_compressor``) and the libraries' defaults
    (uncompressed; the search adds zarr's zstd)."""
    itemsize = ds.itemsize
    current = Layout.from_dataset(ds)
    out = {"current": Candidate(
        ds.library, current.chunks, current.shards,
        current.rdcc_nbytes if ds.library == "hdf5" and current.chunks is not None else None,
        current.rdcc_nslots if ds.library == "hdf5" and current.chunks is not None else None,
        compressor=recorded_compressor(ds) if current.chunks is not None else None,
        origin=("current",))}
    maxshape = ds.maxshape if ds.library == "hdf5" else None
    if resizable:
        ms = maxshape if maxshape is not None else tuple(None for _ in shape)
        out["h5py"] = Candidate("hdf5", h5py_default_chunks(shape, ms, itemsize), None,
                                HDF5_DEFAULT_CACHE[0], HDF5_DEFAULT_CACHE[1], origin=("h5py default (chunks=True)",))
    else:
        out["h5py"] = Candidate("hdf5", None, origin=("h5py default (contiguous)",))
    out["zarr"] = Candidate("zarr", zarr_default_chunks(shape, itemsize), origin=("zarr default (chunks='auto')",))
    return out


def within_budget(c: Candidate, budget: int | None) -> bool:
    """The candidate's chunk cache fits ``budget`` bytes (Zarr and contiguous HDF5 hold none)."""
    return budget is None or c.library != "hdf5" or c.chunks is None or (c.cache_bytes or 0) <= budget


def generate(ds: DatasetRecord, pattern: AccessPattern, shape: Sequence[int], *,
             codecs: Sequence[CodecChoice] = (), libraries: Sequence[str] = ("hdf5", "zarr"),
             resizable: bool = False, blocks: Sequence[int] | None = None,
             cache_budget: int | None = None, accesses=None) -> list[Candidate]:
    """Every candidate for one array, baselines first; codec variants of every layout last.

    ``blocks``: the program's own block shape (dask chunks) when it reads block by block: that shape is a
    candidate too, so a layout aligned with the program can win. ``cache_budget``: the chunk-cache bytes this
    dataset may hold (its share of the process's budget): no candidate above it (the baselines as they are).
    ``accesses``: the traced accesses; every shape also gets its variant on the grid the reads start on
    (``advisor.alignment``), so a region read at an offset is not cut by every chunk boundary."""
    itemsize = ds.itemsize
    base = baselines(ds, shape, resizable)
    shapes = dict(chunk_shapes(pattern, shape, itemsize))
    if blocks is not None:
        shapes.setdefault(tuple(_clip(blocks, shape)), "the program's blocks (dask chunks)")
    for b in base.values():
        if b.chunks is not None:
            shapes.setdefault(b.chunks, b.origin[0])
    if accesses is not None:
        from advisor.alignment import aligned_shapes

        shapes.update(aligned_shapes(shapes, accesses, shape, itemsize))
    layouts: list[Candidate] = [b for b in base.values() if b.library in libraries]
    if "hdf5" in libraries and not resizable:
        layouts.append(Candidate("hdf5", None, origin=("contiguous",)))
    for ch, why in shapes.items():
        if "hdf5" in libraries:
            for nbytes, slots, cwhy in hdf5_caches(pattern, ch, shape, itemsize, cache_budget):
                layouts.append(Candidate("hdf5", ch, None, nbytes, slots, origin=(why, cwhy)))
        if "zarr" in libraries:
            for shards, swhy in zarr_shards(pattern, ch, shape, itemsize):
                layouts.append(Candidate("zarr", ch, shards, origin=(why, swhy)))
    uniq: dict[Candidate, Candidate] = {}
    for c in layouts:
        uniq.setdefault(c, c)
    plain = list(uniq.values())
    coded = [c.with_codec(k.name, k.error_bound) for k in codecs for c in plain
             if c.chunks is not None and not (k.name == "sz" and c.library == "zarr")]
    return plain + coded


__all__ = [
    "CACHE_BUDGET", "CHUNK_TARGETS", "Candidate", "CodecChoice", "allowed_codecs", "baselines", "cache_slots",
    "chunk_shapes",
    "generate", "grow_aligned", "h5py_default_chunks", "hdf5_caches", "needs_resizable",
    "recorded_compressor", "touched_chunks", "within_budget", "working_set", "zarr_default_chunks",
    "zarr_shards",
]
