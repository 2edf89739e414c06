"""Access-pattern classes of a dataset's selections, and per-dataset usage summaries.

Each access is put in one class by its geometry, computed for all accesses at
once with numpy from the per-dimension element count ``n_d`` and bounding-box
extent ``e_d`` of its selection (a dimension is *gapped* when n_d < e_d):

- ``full``: the whole array;
- ``rows``: a dense slab along the first axis, full in every other dimension
  (row blocks; for 1-D arrays any dense range that is not the whole array);
- ``columns``: full along the first axis, partial in another dimension;
- ``boxes``: dense, partial in the first and in some other dimension;
- ``strided``: some dimension gapped (a hyperslab with stride > block, or an
  irregular list of indices);
- ``points``: coordinate lists, masks over several dimensions, single elements.

A dataset's pattern is its dominant class, or ``mixed``; each class keeps the
median selection shape and extent, from which the advisor derives chunk shapes.
"""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from .records import READ, WRITE, AccessRecord, DatasetRecord
from .tracefile import Trace

CLASSES = ("full", "rows", "columns", "boxes", "strided", "points")
"""Access classes, in the order their codes are numbered."""
FULL, ROWS, COLUMNS, BOXES, STRIDED, POINTS = range(len(CLASSES))
EMPTY = -1

DOMINANT = 0.9
"""A class names the pattern when it has this share of both the accesses and the bytes;
both, because a few whole-column reads can cost more than thousands of row reads."""


@dataclass(frozen=True)
class PatternClass:
    """The accesses of one class: how many, how many bytes, their median shape and extent."""

    name: str
    n: int
    nbytes: int
    shape: tuple[int, ...]
    """Median elements selected per dimension (points: 1 per dimension)."""
    extent: tuple[int, ...]
    """Median bounding box per dimension (equals ``shape`` unless gapped)."""

    def get_config(self) -> dict:
        return {"name": self.name, "n": self.n, "nbytes": self.nbytes,
                "shape": list(self.shape), "extent": list(self.extent)}

    @classmethod
    def from_config(cls, config: dict) -> "PatternClass":
        return cls(config["name"], int(config["n"]), int(config["nbytes"]),
                   tuple(config["shape"]), tuple(config["extent"]))


@dataclass(frozen=True)
class AccessPattern:
    """Classified accesses of one dataset: ``kind`` is a class name, ``mixed`` or ``none``."""

    kind: str
    classes: tuple[PatternClass, ...]
    """Most accesses first."""

    @property
    def typical_shape(self) -> tuple[int, ...] | None:
        """Median selection shape of the dominant class (of the most frequent one when mixed)."""
        return self.classes[0].shape if self.classes else None

    def describe(self) -> str:
        """One line, e.g. ``mixed: rows 95% (1000x32), columns 5% (200000x1)``."""
        if not self.classes:
            return "none"
        total = sum(c.n for c in self.classes)
        parts = [f"{c.name} {100 * c.n / total:.0f}% ({'x'.join(map(str, c.shape))})" for c in self.classes]
        return f"{self.kind}: " + ", ".join(parts) if self.kind == "mixed" else parts[0].replace(" 100%", "")

    def get_config(self) -> dict:
        return {"kind": self.kind, "classes": [c.get_config() for c in self.classes]}

    @classmethod
    def from_config(cls, config: dict) -> "AccessPattern":
        return cls(config["kind"], tuple(PatternClass.from_config(c) for c in config["classes"]))


def _geometry(accesses: list[AccessRecord], ndim: int) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Per access and dimension: elements selected n, bounding-box extent e; and a points flag."""
    n = np.ones((len(accesses), ndim), dtype=np.int64)
    e = np.ones((len(accesses), ndim), dtype=np.int64)
    is_points = np.zeros(len(accesses), dtype=bool)
    slab_rows, slabs, other = [], [], []
    for i, a in enumerate(accesses):
        s = a.selection
        if s.points is None and s.indices is None and s.ndim == ndim:
            slab_rows.append(i)
            slabs.append((s.count, s.stride, s.block))
        else:
            other.append(i)
    if slabs:
        c, t, b = np.asarray(slabs, dtype=np.int64).reshape(len(slabs), 3, ndim).transpose(1, 0, 2)
        n[slab_rows] = c * b
        e[slab_rows] = np.where(c > 0, t * (c - 1) + b, 0)
    for i in other:  # coordinate lists and index lists are rare next to slabs; loop over them
        s = accesses[i].selection
        if s.points is not None:
            is_points[i] = True
            n[i] = 1 if len(s.points) else 0
            continue
        for d in range(min(ndim, s.ndim)):
            ix = s.indices[d]
            if ix is None:
                c, t, b = s.count[d], s.stride[d], s.block[d]
                n[i, d], e[i, d] = c * b, (t * (c - 1) + b if c else 0)
            else:
                n[i, d] = len(set(ix))
                e[i, d] = max(ix) - min(ix) + 1 if ix else 0
    return n, e, is_points


def classify_accesses(accesses: list[AccessRecord], shape: tuple[int, ...]) -> np.ndarray:
    """Class code (index into CLASSES, or EMPTY) of each access of an array of this shape."""
    return _codes(*_geometry(accesses, len(shape)), shape)


def _codes(n: np.ndarray, e: np.ndarray, is_points: np.ndarray, shape: tuple[int, ...]) -> np.ndarray:
    ndim = len(shape)
    shape_a = np.asarray(shape, dtype=np.int64)
    code = np.full(len(n), BOXES, dtype=np.int64)
    dense = (n == e).all(axis=1)
    full_d = n >= shape_a
    if ndim:
        code[dense & ~full_d[:, 0] & full_d[:, 1:].all(axis=1)] = ROWS
        code[dense & full_d[:, 0] & ~full_d[:, 1:].all(axis=1)] = COLUMNS
    code[dense & full_d.all(axis=1)] = FULL
    code[~dense] = STRIDED
    single = (n == 1).all(axis=1) & (shape_a.prod() > 1)
    code[is_points | single] = POINTS
    code[(n == 0).any(axis=1)] = EMPTY
    return code


def classify(accesses: list[AccessRecord], shape: tuple[int, ...]) -> AccessPattern:
    """The access pattern of these accesses to an array of this shape (see the module docstring)."""
    if not accesses:
        return AccessPattern("none", ())
    n, e, is_points = _geometry(accesses, len(shape))
    code = _codes(n, e, is_points, shape)
    nbytes = np.fromiter((a.nbytes for a in accesses), dtype=np.int64, count=len(accesses))
    classes = []
    for k in np.unique(code[code != EMPTY]):
        m = code == k
        classes.append(PatternClass(
            CLASSES[k], int(m.sum()), int(nbytes[m].sum()),
            tuple(int(v) for v in np.round(np.median(n[m], axis=0))),
            tuple(int(v) for v in np.round(np.median(e[m], axis=0))),
        ))
    if not classes:
        return AccessPattern("none", ())
    classes.sort(key=lambda c: (-c.n, -c.nbytes))
    total_n = sum(c.n for c in classes)
    total_b = sum(c.nbytes for c in classes)
    top = classes[0]
    dominant = top.n >= DOMINANT * total_n and top.nbytes >= DOMINANT * total_b
    return AccessPattern(top.name if dominant else "mixed", tuple(classes))


@dataclass(frozen=True)
class DatasetUsage:
    """What a trace did with one dataset: the summary ``ioadvisor trace show`` prints."""

    dataset: DatasetRecord
    n_reads: int
    n_writes: int
    bytes_read: int
    bytes_written: int
    read_seconds: float
    write_seconds: float
    ranks: tuple[int, ...]
    reads: AccessPattern
    writes: AccessPattern

    def get_config(self) -> dict:
        d = self.dataset
        return {
            "key": d.key, "library": d.library, "shape": list(d.shape), "dtype": d.dtype,
            "chunks": None if d.chunks is None else list(d.chunks),
            "shards": None if d.shards is None else list(d.shards),
            "filters": [f.name for f in d.filters],
            "n_reads": self.n_reads, "n_writes": self.n_writes,
            "bytes_read": self.bytes_read, "bytes_written": self.bytes_written,
            "read_seconds": self.read_seconds, "write_seconds": self.write_seconds, "ranks": list(self.ranks),
            "reads": self.reads.get_config(), "writes": self.writes.get_config(),
        }


def summarize(trace: Trace) -> list[DatasetUsage]:
    """One usage summary per dataset of the trace, in dataset-id order."""
    by_ds: dict[int, list[AccessRecord]] = {i: [] for i in trace.datasets}
    for a in trace.accesses:
        by_ds[a.dataset].append(a)
    out = []
    for i, ds in sorted(trace.datasets.items()):
        accs = by_ds[i]
        reads = [a for a in accs if a.op == READ]
        writes = [a for a in accs if a.op == WRITE]
        shape = trace.extent(i)
        out.append(DatasetUsage(
            dataset=ds,
            n_reads=len(reads),
            n_writes=len(writes),
            bytes_read=sum(a.nbytes for a in reads),
            bytes_written=sum(a.nbytes for a in writes),
            read_seconds=float(sum(a.duration for a in reads)),
            write_seconds=float(sum(a.duration for a in writes)),
            ranks=tuple(sorted({a.rank for a in accs})),
            reads=classify(reads, shape),
            writes=classify(writes, shape),
        ))
    return out


__all__ = ["CLASSES", "PatternClass", "AccessPattern", "DatasetUsage", "classify", "classify_accesses", "summarize"]
