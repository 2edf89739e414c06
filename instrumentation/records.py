"""Trace records: the contract between instrumentation and the models.

Every record is a frozen dataclass with a JSON round-trip (``get_config`` /
``from_config``), in the manner of numcodecs' codecs. The on-disk layout of a
trace (JSON Lines) is described in ``docs/trace-format.md``; this module knows
nothing about files.
"""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, ClassVar

from .header import SCHEMA_VERSION, ImportedFact, ProcessInfo, TraceHeader  # noqa: F401 - records of a trace
from .jsonvalue import fill_from_json
from .validation import RecordError, flag, ints, opt_ints, positive, require, typed

# numpy is imported where it is used: a light launcher writes a trace's header without it (instrumentation/launch.py)


READ = "read"
WRITE = "write"


CAPTURE_CALLS = ("h5py calls", "zarr calls")
"""The capture levels every tracer has (TraceHeader.capture); following processes adds its own."""



@dataclass(frozen=True)
class Selection:
    """What one access touches, in array coordinates.

    A regular hyperslab (HDF5's H5Sselect_hyperslab): per dimension ``start``,
    ``count`` blocks of ``block`` elements, ``stride`` apart. Dimensions that are
    an irregular list of indices (fancy/orthogonal indexing) carry them in
    ``indices[d]``; their start/count/stride/block then give the bounding box
    (start=min, count=len, stride=1, block=1). A selection that is not a product
    of per-dimension sets (point lists, boolean masks over several dimensions,
    zarr ``vindex``) is ``points``: an (n, ndim) int64 array of coordinates.
    """

    start: tuple[int, ...]
    count: tuple[int, ...]
    stride: tuple[int, ...]
    block: tuple[int, ...]
    indices: tuple[tuple[int, ...] | None, ...] | None = None
    points: np.ndarray | None = field(default=None, compare=False)

    @property
    def kind(self) -> str:
        if self.points is not None:
            return "points"
        if self.indices is not None and any(ix is not None for ix in self.indices):
            return "orthogonal"
        return "hyperslab"

    @property
    def ndim(self) -> int:
        return len(self.start)

    @property
    def shape(self) -> tuple[int, ...]:
        """Elements selected per dimension (for points: (n,))."""
        if self.points is not None:
            return (len(self.points),)
        return tuple(c * b for c, b in zip(self.count, self.block))

    @property
    def nelements(self) -> int:
        import numpy as np

        return int(np.prod(self.shape, dtype=np.int64))

    @classmethod
    def box(cls, start, shape) -> "Selection":
        """A contiguous box: stride 1, one block per dimension."""
        n = len(start)
        return cls(tuple(start), tuple([1] * n), tuple([1] * n), tuple(shape))

    def dim_indices(self, d: int) -> np.ndarray:
        """Sorted array of the indices selected along dimension d."""
        import numpy as np

        if self.points is not None:
            return np.unique(self.points[:, d])
        if self.indices is not None and self.indices[d] is not None:
            return np.asarray(self.indices[d], dtype=np.int64)
        offs = self.start[d] + self.stride[d] * np.arange(self.count[d], dtype=np.int64)
        return (offs[:, None] + np.arange(self.block[d], dtype=np.int64)).ravel()

    def bounds(self) -> tuple[tuple[int, ...], tuple[int, ...]]:
        """Inclusive lower and exclusive upper corner of the bounding box."""
        if self.points is not None:
            if len(self.points) == 0:
                return tuple([0] * self.points.shape[1]), tuple([0] * self.points.shape[1])
            return tuple(self.points.min(0).tolist()), tuple((self.points.max(0) + 1).tolist())
        lo, hi = [], []
        for d in range(self.ndim):
            if self.indices is not None and self.indices[d] is not None:
                ix = self.indices[d]
                lo.append(min(ix) if ix else 0)
                hi.append(max(ix) + 1 if ix else 0)
            else:
                lo.append(self.start[d])
                end = self.start[d] + self.stride[d] * (self.count[d] - 1) + self.block[d]
                hi.append(end if self.count[d] and self.block[d] else self.start[d])
        return tuple(lo), tuple(hi)

    def get_config(self) -> dict:
        if self.points is not None:
            return {"points": self.points.tolist()}
        cfg: dict[str, Any] = {
            "start": list(self.start),
            "count": list(self.count),
            "stride": list(self.stride),
            "block": list(self.block),
        }
        if self.kind == "orthogonal":
            cfg["indices"] = [None if ix is None else list(ix) for ix in self.indices]
        return cfg

    @classmethod
    def from_config(cls, config: dict) -> "Selection":
        if not isinstance(config, dict):
            raise RecordError("field 'sel' must be a JSON object")
        if "points" in config:
            import numpy as np

            pts = config["points"]
            if not isinstance(pts, list) or not all(isinstance(p, list) for p in pts):
                raise RecordError("field 'sel.points' must be a list of coordinate lists")
            try:
                arr = np.asarray(pts, dtype=np.int64)
            except (TypeError, ValueError) as exc:
                raise RecordError(f"field 'sel.points' is not integer coordinates: {exc}") from None
            if arr.ndim != 2:
                arr = arr.reshape(0, 0) if arr.size == 0 else arr
                if arr.ndim != 2:
                    raise RecordError("field 'sel.points' must be an (n, ndim) list")
            n = arr.shape[1]
            z = tuple([0] * n)
            return cls(z, z, tuple([1] * n), z, points=arr)
        for k in ("start", "count", "stride", "block"):
            if k not in config:
                raise RecordError(f"missing field 'sel.{k}'")
        parts = [ints(config[k], f"sel.{k}") for k in ("start", "count", "stride", "block")]
        if len({len(p) for p in parts}) != 1:
            raise RecordError("fields 'sel.start/count/stride/block' differ in length")
        for k, p in zip(("start", "count", "stride", "block"), parts):
            if any(v < 0 for v in p):  # a selection never reaches before 0 nor counts backwards
                raise RecordError(f"field 'sel.{k}' must hold integers >= 0, got {list(p)}")
        indices = config.get("indices")
        if indices is not None:
            if not isinstance(indices, list) or len(indices) != len(parts[0]):
                raise RecordError("field 'sel.indices' must have one entry per dimension")
            indices = tuple(
                None if ix is None else ints(ix, f"sel.indices[{d}]") for d, ix in enumerate(indices)
            )
        return cls(*parts, indices=indices)


# Registered HDF5 filter ids (https://github.com/HDFGroup/hdf5_plugins/blob/master/docs/RegisteredFilterPlugins.md)
HDF5_FILTER_NAMES = {
    1: "gzip", 2: "shuffle", 3: "fletcher32", 4: "szip", 5: "nbit", 6: "scaleoffset",
    307: "bzip2", 32000: "lzf", 32001: "blosc", 32004: "lz4", 32008: "bitshuffle",
    32013: "zfp", 32015: "zstd", 32017: "sz", 32018: "fcidecomp", 32024: "sz3",
    32026: "blosc2", 32028: "sperr", 32033: "htj2k",
}


@dataclass(frozen=True)
class Filter:
    """One stage of an HDF5 filter pipeline or a zarr codec chain.

    ``name`` is a canonical lower-case name ("gzip", "shuffle", "sz3", "zfp",
    "blosc", "zstd", "bytes", "sharding_indexed", ...); ``filter_id`` is the
    registered HDF5 filter id when there is one; ``options`` are the codec's own
    JSON parameters (zarr: its ``to_dict()``; HDF5: cd_values and what h5py
    reports).
    """

    name: str
    filter_id: int | None = None
    options: dict = field(default_factory=dict, compare=False)

    @classmethod
    def hdf5(cls, code: int, flags: int, cd_values, hdf5_name: str) -> "Filter":
        """A stage of an HDF5 pipeline as H5Pget_filter2 reports it."""
        options = {"cd_values": [int(v) for v in cd_values], "flags": int(flags), "hdf5_name": hdf5_name}
        if code == 1 and cd_values:
            options["level"] = int(cd_values[0])
        return cls(HDF5_FILTER_NAMES.get(code, hdf5_name.lower() or f"filter{code}"), int(code), options)

    def get_config(self) -> dict:
        return {"name": self.name, "filter_id": self.filter_id, "options": self.options}

    @classmethod
    def from_config(cls, config: dict) -> "Filter":
        require(config, cls)
        fid = config.get("filter_id")
        if fid is not None:
            typed(fid, int, "filters.filter_id")
        return cls(typed(config["name"], str, "filters.name"), fid, dict(config.get("options") or {}))


@dataclass(frozen=True)
class ChunkCache:
    """HDF5 raw-data chunk cache parameters in force (H5Pset_chunk_cache)."""

    rdcc_nbytes: int
    rdcc_nslots: int
    rdcc_w0: float

    def get_config(self) -> dict:
        return {"rdcc_nbytes": self.rdcc_nbytes, "rdcc_nslots": self.rdcc_nslots, "rdcc_w0": self.rdcc_w0}

    @classmethod
    def from_config(cls, config: dict) -> "ChunkCache":
        require(config, cls)
        return cls(
            typed(config["rdcc_nbytes"], int, "cache.rdcc_nbytes"),
            typed(config["rdcc_nslots"], int, "cache.rdcc_nslots"),
            float(typed(config["rdcc_w0"], (int, float), "cache.rdcc_w0")),
        )


TYPE_CLASSES = ("integer", "float", "complex", "bool", "string", "vlen-string", "compound", "enum", "vlen",
                "reference", "opaque", "time", "object")
"""Element type classes (HDF5's type classes, as h5py and zarr hand them to numpy): the numpy dtype
string alone cannot tell a variable-length string from a reference (both ``|O``) or an enum from an int."""

_KIND_CLASSES = {"i": "integer", "u": "integer", "f": "float", "c": "complex", "b": "bool", "S": "string",
                 "U": "string", "T": "vlen-string", "M": "time", "m": "time", "O": "object"}


def type_class(dtype: np.dtype) -> str:
    """The TYPE_CLASSES entry of a dtype from h5py (its ``metadata`` marks vlen/ref/enum/opaque) or zarr."""
    meta = dtype.metadata or {}
    if "vlen" in meta:
        return "vlen-string" if meta["vlen"] in (str, bytes) else "vlen"
    if "ref" in meta:
        return "reference"
    if "enum" in meta:
        return "enum"
    if meta.get("h5py_opaque"):
        return "opaque"
    if dtype.kind == "V":
        return "compound" if dtype.names is not None else "opaque"
    return _KIND_CLASSES[dtype.kind]


def dtype_string(dtype: np.dtype) -> str:
    """The trace's ``dtype``: numpy's ``str``, or ``"T"`` for numpy 2's StringDType (whose ``str`` numpy cannot parse)."""
    return "T" if dtype.kind == "T" else dtype.str


@dataclass(frozen=True)
class DatasetRecord:
    """One array as the traced program saw it (first sighting or creation).

    ``chunk_offsets`` (HDF5 only, when cheap to get): an (n, ndim + 2) int64
    array, one row per allocated chunk: its chunk-grid coordinates, byte offset
    in the file and stored size. ``driver`` and ``mode`` (HDF5: the file driver,
    e.g. "sec2" or "mpio", and "r" or "r+") decide whether HDF5 keeps its chunk
    cache under MPI: it bypasses it for mpio files open for writing.
    ``type_class`` (one of TYPE_CLASSES; None in traces from before it was
    recorded) says what ``dtype`` cannot: vlen strings, references, enums.
    """

    id: int
    library: str  # "hdf5" | "zarr"
    library_version: str
    file: str
    path: str
    shape: tuple[int, ...]
    dtype: str
    maxshape: tuple[int | None, ...] | None = None
    chunks: tuple[int, ...] | None = None
    shards: tuple[int, ...] | None = None
    filters: tuple[Filter, ...] = ()
    fillvalue: Any = None
    cache: ChunkCache | None = None
    libver: tuple[str, str] | None = None
    zarr_format: int | None = None
    driver: str | None = None
    mode: str | None = None
    created: bool = False
    chunk_offsets: np.ndarray | None = field(default=None, compare=False)
    type_class: str | None = None

    LIBRARIES: ClassVar[tuple[str, ...]] = ("hdf5", "zarr")

    @property
    def key(self) -> str:
        """Identity across ranks and runs: file (or store) and path inside it."""
        return f"{self.file}::{self.path}"

    @property
    def label(self) -> str:
        """The name shown to users: ``file::path``; a Zarr array at its store's root is the store; an HDF5
        dataset linked nowhere when libhdf5 wrote it (``H5Dcreate_anon``) is ``file::(anonymous)``."""
        if self.path:
            return self.key
        return self.file if self.library == "zarr" else f"{self.file}::(anonymous)"

    @property
    def itemsize(self) -> int:
        import numpy as np

        return np.dtype(self.dtype).itemsize

    def get_config(self) -> dict:
        return {
            "id": self.id,
            "library": self.library,
            "library_version": self.library_version,
            "file": self.file,
            "path": self.path,
            "shape": list(self.shape),
            "dtype": self.dtype,
            "maxshape": None if self.maxshape is None else list(self.maxshape),
            "chunks": None if self.chunks is None else list(self.chunks),
            "shards": None if self.shards is None else list(self.shards),
            "filters": [f.get_config() for f in self.filters],
            "fillvalue": self.fillvalue,
            "cache": None if self.cache is None else self.cache.get_config(),
            "libver": None if self.libver is None else list(self.libver),
            "zarr_format": self.zarr_format,
            "driver": self.driver,
            "mode": self.mode,
            "created": self.created,
            "chunk_offsets": None if self.chunk_offsets is None else self.chunk_offsets.tolist(),
            "type_class": self.type_class,
        }

    @classmethod
    def from_config(cls, config: dict) -> "DatasetRecord":
        import numpy as np

        require(config, cls)
        lib = typed(config["library"], str, "library")
        if lib not in cls.LIBRARIES:
            raise RecordError(f"field 'library' must be one of {cls.LIBRARIES}, got {lib!r}")
        try:
            np.dtype(config["dtype"])
        except (TypeError, ValueError):
            raise RecordError(f"field 'dtype' is not a numpy dtype: {config['dtype']!r:.60}") from None
        maxshape = config.get("maxshape")
        if maxshape is not None:
            if not isinstance(maxshape, list) or not all(
                m is None or isinstance(m, int) and not isinstance(m, bool) for m in maxshape
            ):
                raise RecordError("field 'maxshape' must be a list of integers or nulls")
            maxshape = tuple(maxshape)
        filters = config.get("filters") or []
        if not isinstance(filters, list):
            raise RecordError("field 'filters' must be a list")
        offsets = config.get("chunk_offsets")
        if offsets is not None:
            try:
                offsets = np.asarray(offsets, dtype=np.int64)
            except (TypeError, ValueError):
                raise RecordError("field 'chunk_offsets' must be a list of integer rows") from None
        libver = config.get("libver")
        tclass = config.get("type_class")
        if tclass is not None and tclass not in TYPE_CLASSES:
            raise RecordError(f"field 'type_class' must be one of {', '.join(TYPE_CLASSES)}, got {tclass!r:.40}")
        shape = ints(config["shape"], "shape")
        return cls(
            id=typed(config["id"], int, "id"),
            library=lib,
            library_version=typed(config["library_version"], str, "library_version"),
            file=typed(config["file"], str, "file"),
            path=typed(config["path"], str, "path"),
            shape=shape,
            dtype=config["dtype"],
            maxshape=maxshape,
            chunks=positive(opt_ints(config.get("chunks"), "chunks"), "chunks", shape),
            shards=positive(opt_ints(config.get("shards"), "shards"), "shards", shape),
            filters=tuple(Filter.from_config(f) for f in filters),
            fillvalue=fill_from_json(config.get("fillvalue"), config["dtype"]),
            cache=None if config.get("cache") is None else ChunkCache.from_config(config["cache"]),
            libver=None if libver is None else tuple(libver),
            zarr_format=config.get("zarr_format"),
            driver=config.get("driver"),
            mode=config.get("mode"),
            created=bool(config.get("created", False)),
            chunk_offsets=offsets,
            type_class=tclass,
        )


@dataclass(frozen=True)
class AccessRecord:
    """One read or write of a selection of a dataset.

    ``t_start`` is seconds since the trace header's clock origin; ``duration``
    is the wall time of the library call as the user saw it.
    """

    dataset: int
    op: str  # READ | WRITE
    selection: Selection
    nelements: int
    nbytes: int
    t_start: float
    duration: float
    rank: int = 0
    collective: bool = False
    """An MPI-IO collective transfer (h5py ``with dset.collective:``, the dxpl in force)."""
    process: int = 0
    """The process of its rank that made it (``AccessColumns.proc``: 0 the trace's own, 1.. its followed ones)."""

    def get_config(self) -> dict:
        return {
            "ds": self.dataset,
            "op": self.op,
            "sel": self.selection.get_config(),
            "n": self.nelements,
            "bytes": self.nbytes,
            "t0": self.t_start,
            "dt": self.duration,
            **({"rank": self.rank} if self.rank else {}),
            **({"coll": True} if self.collective else {}),
            **({"proc": self.process} if self.process else {}),
        }

    @classmethod
    def from_config(cls, config: dict, rank: int = 0) -> "AccessRecord":
        """``rank`` is the file header's; a merged trace names it per record."""
        if not isinstance(config, dict):
            raise RecordError("access record must be a JSON object")
        for k in ("ds", "op", "sel", "n", "bytes", "t0", "dt"):
            if k not in config:
                raise RecordError(f"missing field '{k}' in access record")
        op = config["op"]
        if op not in (READ, WRITE):
            raise RecordError(f"field 'op' must be 'read' or 'write', got {op!r:.40}")
        return cls(
            dataset=typed(config["ds"], int, "ds"),
            op=op,
            selection=Selection.from_config(config["sel"]),
            nelements=typed(config["n"], int, "n"),
            nbytes=typed(config["bytes"], int, "bytes"),
            t_start=float(typed(config["t0"], (int, float), "t0")),
            duration=float(typed(config["dt"], (int, float), "dt")),
            rank=typed(config.get("rank", rank), int, "rank"),
            collective=flag(config.get("coll", False), "coll"),
            process=_process(config.get("proc", 0)),
        )


def _process(value) -> int:
    """An access record's ``proc`` field: a process index, >= 0."""
    process = typed(value, int, "proc")
    if process < 0:
        raise RecordError(f"field 'proc' must be >= 0, got {process}")
    return process


@dataclass(frozen=True)
class ResizeRecord:
    """A change of a dataset's extent (h5py ``resize``, zarr ``resize``/``append``), or a run of ``rep`` of them
    whose extents grow by a constant ``step`` (an append loop, folded as access runs are: change k of the run
    sets ``shape + k * step`` at ``t_start + k * t_step``)."""

    dataset: int
    shape: tuple[int, ...]
    t_start: float
    rank: int = 0
    rep: int = 1
    step: tuple[int, ...] = ()
    t_step: float = 0.0

    @property
    def extents(self) -> tuple[tuple[int, ...], tuple[int, ...]]:
        """The first and the last extent the record sets (a run's others lie between, dimension by dimension)."""
        return tuple(self.shape), self.last_shape

    @property
    def last_shape(self) -> tuple[int, ...]:
        """The extent the last change of the run sets."""
        if self.rep == 1:
            return tuple(self.shape)
        return tuple(s + (self.rep - 1) * d for s, d in zip(self.shape, self.step))

    def expanded(self) -> "list[ResizeRecord]":
        """One record per change."""
        if self.rep == 1:
            return [self]
        return [ResizeRecord(self.dataset, tuple(s + k * d for s, d in zip(self.shape, self.step)),
                             self.t_start + k * self.t_step, self.rank) for k in range(self.rep)]

    def get_config(self) -> dict:
        return {
            "ds": self.dataset,
            "shape": list(self.shape),
            "t0": self.t_start,
            **({"rank": self.rank} if self.rank else {}),
            **({"rep": self.rep, "step": list(self.step), "t_step": self.t_step} if self.rep != 1 else {}),
        }

    @classmethod
    def from_config(cls, config: dict, rank: int = 0) -> "ResizeRecord":
        if not isinstance(config, dict):
            raise RecordError("resize record must be a JSON object")
        for k in ("ds", "shape", "t0"):
            if k not in config:
                raise RecordError(f"missing field '{k}' in resize record")
        shape = ints(config["shape"], "shape")
        rep = typed(config.get("rep", 1), int, "rep")
        if rep < 1:
            raise RecordError(f"field 'rep' must be at least 1, got {rep}")
        step = ints(config.get("step", [0] * len(shape)), "step") if rep > 1 else ()
        if len(step) != (len(shape) if rep > 1 else 0):
            raise RecordError(f"field 'step' must have {len(shape)} values, as 'shape' has")
        return cls(
            typed(config["ds"], int, "ds"),
            shape,
            float(typed(config["t0"], (int, float), "t0")),
            typed(config.get("rank", rank), int, "rank"),
            rep,
            step,
            float(typed(config.get("t_step", 0.0), (int, float), "t_step")) if rep > 1 else 0.0,
        )
