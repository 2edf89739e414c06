"""A candidate storage layout: library, chunking, caches, index, compression hook.

``Layout`` is what the cost model replays a trace against. It is built from the
dataset recorded in a trace (``--layout current``) or parsed from a short string
(``hdf5:chunks=65536x8,cache=64MiB``); both paths validate shapes and fail with
one line naming the field.
"""
from __future__ import annotations

import math
import re
from dataclasses import dataclass, fields, replace
from typing import Any, Sequence

import numpy as np

from instrumentation.records import DatasetRecord
from instrumentation.errors import IoadvisorError

HDF5_DEFAULT_CACHE = (8 * 1024 * 1024, 8191, 0.75)
"""HDF5 2.0 default chunk cache (rdcc_nbytes, rdcc_nslots, rdcc_w0), see field notes."""

INDEX_KINDS = ("btree1", "farray", "earray", "btree2")
INDEX_BLOCK_CHUNKS = {"btree1": 64, "farray": 256, "earray": 256, "btree2": 64}
"""Chunks addressed per index block: a v1 B-tree leaf holds 2K = 64 entries (K=32);
fixed/extensible array data blocks hold up to 256 page elements; a v2 B-tree leaf
of 512-byte nodes holds a few dozen records (64 used)."""

_LIBVER_LATEST = ("latest", "v110", "v112", "v114", "v200")

_UNITS = {"": 1, "b": 1, "k": 1000, "kb": 1000, "kib": 1024, "m": 10**6, "mb": 10**6,
          "mib": 1024**2, "g": 10**9, "gb": 10**9, "gib": 1024**3}


class LayoutError(IoadvisorError, ValueError):
    """A layout is impossible or cannot be parsed; the message names the field."""


def parse_bytes(text: str, field: str) -> int:
    """'64MiB' -> 67108864; plain integers are bytes."""
    m = re.fullmatch(r"\s*(\d+(?:\.\d+)?)\s*([a-zA-Z]*)\s*", text)
    if not m or m.group(2).lower() not in _UNITS:
        raise LayoutError(f"field '{field}': cannot read a byte size from {text!r}")
    return int(float(m.group(1)) * _UNITS[m.group(2).lower()])


def _shape(text: str, field: str) -> tuple[int, ...]:
    try:
        dims = tuple(int(p) for p in text.lower().replace(",", "x").split("x"))
    except ValueError:
        raise LayoutError(f"field '{field}': expected integers like 65536x8, got {text!r}") from None
    return dims


def chunks_text(chunks: Sequence[int] | None) -> str:
    """A chunk shape for tables: ``64x16``, or ``contiguous``."""
    return "contiguous" if chunks is None else "x".join(map(str, chunks))


def format_bytes(n: float) -> str:
    """Binary units, 4 significant digits: 8MiB, 1.5GiB, 512B."""
    for unit, size in (("GiB", 1 << 30), ("MiB", 1 << 20), ("KiB", 1 << 10)):
        if n >= size:
            return f"{n / size:.4g}{unit}"
    return f"{int(n)}B"


def layout_text(chunks: Sequence[int] | None, shards: Sequence[int] | None = None,
                cache_bytes: int | None = None) -> str:
    """A storage layout for tables, without its library: ``65536x8 cache=8MiB``, ``64x64 shards=512x512``.

    The cache is named only for chunked storage (HDF5's chunk cache; zarr has none: pass None).
    """
    text = chunks_text(chunks)
    if shards is not None:
        text += " shards=" + chunks_text(shards)
    if chunks is not None and cache_bytes is not None:
        text += f" cache={format_bytes(cache_bytes)}"
    return text


@dataclass(frozen=True)
class Layout:
    """One candidate layout of one array (the paper's storage configuration)."""

    library: str
    shape: tuple[int, ...]
    itemsize: int
    chunks: tuple[int, ...] | None
    shards: tuple[int, ...] | None = None
    rdcc_nbytes: int = HDF5_DEFAULT_CACHE[0]
    rdcc_nslots: int = HDF5_DEFAULT_CACHE[1]
    rdcc_w0: float = HDF5_DEFAULT_CACHE[2]
    index: str = "btree1"
    index_block_chunks: int = INDEX_BLOCK_CHUNKS["btree1"]
    ratio: float = 1.0
    filtered: bool = False
    fill_on_alloc: bool = True
    sieve_bytes: int = 65536
    maxshape: tuple[int | None, ...] | None = None

    def __post_init__(self) -> None:
        self.validate()

    # ---- derived sizes -------------------------------------------------------------
    @property
    def ndim(self) -> int:
        return len(self.shape)

    @property
    def chunk_shape(self) -> tuple[int, ...]:
        """Chunk shape; HDF5 contiguous storage is one chunk spanning the array."""
        return self.chunks if self.chunks is not None else tuple(max(1, s) for s in self.shape)

    @property
    def chunk_nbytes(self) -> int:
        """Raw bytes of one full chunk (edge chunks are stored full size too)."""
        return int(np.prod(self.chunk_shape, dtype=np.int64)) * self.itemsize

    @property
    def stored_chunk_nbytes(self) -> int:
        """Bytes of one chunk on disk: raw bytes x ratio (the compression hook)."""
        return max(1, int(math.ceil(self.chunk_nbytes * self.ratio)))

    @property
    def grid(self) -> tuple[int, ...]:
        """Chunks per dimension (ceil)."""
        return tuple(-(-max(s, 1) // c) for s, c in zip(self.shape, self.chunk_shape))

    @property
    def nchunks(self) -> int:
        return int(np.prod(self.grid, dtype=np.int64))

    @property
    def chunks_per_shard(self) -> tuple[int, ...] | None:
        if self.shards is None:
            return None
        return tuple(s // c for s, c in zip(self.shards, self.chunk_shape))

    @property
    def label(self) -> str:
        """Short description for tables: 'hdf5 65536x8 cache=8MiB'."""
        cache = self.rdcc_nbytes if self.library == "hdf5" else None
        return f"{self.library} {layout_text(self.chunks, self.shards, cache)}"

    # ---- validation ----------------------------------------------------------------
    def validate(self) -> None:
        if self.library not in DatasetRecord.LIBRARIES:
            raise LayoutError(f"field 'library' must be hdf5 or zarr, got {self.library!r}")
        if self.itemsize <= 0:
            raise LayoutError(f"field 'itemsize' must be positive, got {self.itemsize}")
        if any(s < 0 for s in self.shape):
            raise LayoutError(f"field 'shape' has a negative extent: {self.shape}")
        if self.chunks is None:
            if self.library == "zarr":
                raise LayoutError("field 'chunks': zarr arrays are always chunked")
            if self.shards is not None:
                raise LayoutError("field 'shards' needs chunks")
        else:
            if len(self.chunks) != len(self.shape):
                raise LayoutError(
                    f"field 'chunks': rank {len(self.chunks)} does not match the array's rank {len(self.shape)}"
                )
            if any(c <= 0 for c in self.chunks):
                raise LayoutError(f"field 'chunks': every chunk dimension must be positive, got {self.chunks}")
            if self.maxshape is not None:
                for d, (c, m) in enumerate(zip(self.chunks, self.maxshape)):
                    if m is not None and c > max(m, 1) and self.library == "hdf5":
                        raise LayoutError(
                            f"field 'chunks': dimension {d} chunk {c} exceeds the fixed maximum extent {m}"
                        )
        if self.shards is not None:
            if self.library != "zarr":
                raise LayoutError("field 'shards' applies to zarr only")
            if len(self.shards) != len(self.shape):
                raise LayoutError(f"field 'shards': rank {len(self.shards)} does not match the array's rank")
            if any(s <= 0 or s % c for s, c in zip(self.shards, self.chunks)):
                raise LayoutError(
                    f"field 'shards': {self.shards} must be positive multiples of the chunks {self.chunks}"
                )
        if self.rdcc_nbytes < 0 or self.rdcc_nslots < 0:
            raise LayoutError("field 'cache': rdcc_nbytes and rdcc_nslots must be >= 0")
        if not 0.0 <= self.rdcc_w0 <= 1.0:
            raise LayoutError(f"field 'w0' must be in [0, 1], got {self.rdcc_w0}")
        if self.index not in INDEX_KINDS:
            raise LayoutError(f"field 'index' must be one of {INDEX_KINDS}, got {self.index!r}")
        if self.index_block_chunks <= 0:
            raise LayoutError("field 'index_block_chunks' must be positive")
        if not self.ratio > 0:
            raise LayoutError(f"field 'ratio' must be > 0, got {self.ratio}")
        if self.sieve_bytes <= 0:
            raise LayoutError("field 'sieve_bytes' must be positive")

    # ---- constructors ----------------------------------------------------------------
    @classmethod
    def from_dataset(cls, ds: DatasetRecord) -> "Layout":
        """The layout a trace recorded (``--layout current``)."""
        kw: dict[str, Any] = {}
        if ds.library == "hdf5":
            if ds.cache is not None:
                kw.update(rdcc_nbytes=ds.cache.rdcc_nbytes, rdcc_nslots=ds.cache.rdcc_nslots,
                          rdcc_w0=ds.cache.rdcc_w0)
            if ds.libver is not None and ds.libver[0] in _LIBVER_LATEST and ds.chunks is not None:
                kind = "farray" if ds.maxshape is None or all(m is not None for m in ds.maxshape) else "earray"
                kw.update(index=kind, index_block_chunks=INDEX_BLOCK_CHUNKS[kind])
        codecs = [f for f in ds.filters if f.name not in ("bytes", "sharding_indexed", "transpose")]
        return cls(
            library=ds.library,
            shape=tuple(ds.shape),
            itemsize=ds.itemsize,
            chunks=None if ds.chunks is None else tuple(ds.chunks),
            shards=None if ds.shards is None else tuple(ds.shards),
            filtered=bool(codecs),
            maxshape=ds.maxshape,
            **kw,
        )

    def with_shape(self, shape: tuple[int, ...]) -> "Layout":
        """Same storage parameters for an array whose extent changed (resize/append)."""
        return replace(self, shape=tuple(shape))

    # ---- JSON ------------------------------------------------------------------------
    def get_config(self) -> dict:
        cfg = {f.name: getattr(self, f.name) for f in fields(self)}
        for k in ("shape", "chunks", "shards", "maxshape"):
            cfg[k] = None if cfg[k] is None else list(cfg[k])
        return cfg

    @classmethod
    def from_config(cls, config: dict) -> "Layout":
        if not isinstance(config, dict):
            raise LayoutError("layout config must be a JSON object")
        names = {f.name for f in fields(cls)}
        unknown = set(config) - names
        if unknown:
            raise LayoutError(f"unknown layout field {sorted(unknown)[0]!r}")
        for k in ("library", "shape", "itemsize", "chunks"):
            if k not in config:
                raise LayoutError(f"missing layout field '{k}'")
        kw = dict(config)
        for k in ("shape", "chunks", "shards", "maxshape"):
            if kw.get(k) is not None:
                kw[k] = tuple(kw[k])
        return cls(**kw)


def parse_layout(spec: str, dataset: DatasetRecord) -> Layout:
    """Parse ``--layout`` text against the traced array (its shape and dtype).

    Grammar: ``current`` | ``LIB[:key=value,...]`` with keys chunks (``65536x8``
    or ``contiguous``), shards, cache (bytes, ``64MiB``), slots, w0, index,
    ratio, filtered (0/1). Unnamed keys keep the recorded dataset's values when
    the library is the same, else the library defaults; HDF5 contiguous storage
    drops the recorded filters (HDF5 filters chunks only).
    """
    text = spec.strip()
    if text == "current":
        return Layout.from_dataset(dataset)
    lib, _, rest = text.partition(":")
    lib = lib.strip().lower()
    if lib not in DatasetRecord.LIBRARIES:
        raise LayoutError(f"layout {spec!r}: library must be 'hdf5', 'zarr' or 'current', got {lib!r}")
    base = Layout.from_dataset(dataset) if dataset.library == lib else None
    kw: dict[str, Any] = {
        "library": lib,
        "shape": tuple(dataset.shape),
        "itemsize": dataset.itemsize,
        "chunks": base.chunks if base is not None else None,
        "maxshape": dataset.maxshape,
    }
    if base is not None:
        kw.update(rdcc_nbytes=base.rdcc_nbytes, rdcc_nslots=base.rdcc_nslots, rdcc_w0=base.rdcc_w0,
                  index=base.index, index_block_chunks=base.index_block_chunks, filtered=base.filtered,
                  shards=base.shards)
    named = set()
    for item in filter(None, (p.strip() for p in rest.split(","))):
        key, eq, value = item.partition("=")
        key, value = key.strip().lower(), value.strip()
        named.add(key)
        if not eq and key == "contiguous":
            kw["chunks"] = None
            continue
        if not eq:
            raise LayoutError(f"layout {spec!r}: expected key=value, got {item!r}")
        if key == "chunks":
            kw["chunks"] = None if value.lower() == "contiguous" else _shape(value, "chunks")
        elif key == "shards":
            kw["shards"] = None if value.lower() in ("none", "") else _shape(value, "shards")
        elif key == "cache":
            kw["rdcc_nbytes"] = parse_bytes(value, "cache")
        elif key in ("slots", "nslots"):
            kw["rdcc_nslots"] = _int(value, "slots")
        elif key == "w0":
            kw["rdcc_w0"] = _float(value, "w0")
        elif key == "index":
            kw["index"] = value
            kw["index_block_chunks"] = INDEX_BLOCK_CHUNKS.get(value, 1)
        elif key == "ratio":
            kw["ratio"] = _float(value, "ratio")
        elif key == "filtered":
            kw["filtered"] = value.lower() in ("1", "true", "yes")
        else:
            raise LayoutError(f"layout {spec!r}: unknown key {key!r} (chunks, shards, cache, slots, w0, "
                              "index, ratio, filtered)")
    if lib == "hdf5" and kw["chunks"] is None and kw.get("filtered"):
        if "filtered" in named:
            raise LayoutError(f"layout {spec!r}: HDF5 contiguous storage cannot be filtered (compressed)")
        kw["filtered"] = False  # the recorded dataset's filters do not carry over: HDF5 filters chunks only
    if lib == "zarr" and kw["chunks"] is None:
        raise LayoutError(f"layout {spec!r}: zarr needs chunks=..., e.g. zarr:chunks=65536x8")
    if kw["chunks"] is not None and len(kw["chunks"]) != len(dataset.shape):
        raise LayoutError(
            f"layout {spec!r}: field 'chunks' has rank {len(kw['chunks'])}, the array has rank {len(dataset.shape)}"
        )
    return Layout(**kw)


def _int(value: str, field: str) -> int:
    try:
        return int(value)
    except ValueError:
        raise LayoutError(f"field '{field}': expected an integer, got {value!r}") from None


def _float(value: str, field: str) -> float:
    try:
        return float(value)
    except ValueError:
        raise LayoutError(f"field '{field}': expected a number, got {value!r}") from None
