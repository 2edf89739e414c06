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

from .columns import POINTS as POINT_SELECTION, AccessColumns, as_columns
from .records import DatasetRecord
from .tracefile import Trace, extent

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


def _geometry(cols: AccessColumns, ndim: int) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Per row and dimension: elements selected n, bounding-box extent e; and a points flag."""
    if cols.width < ndim:
        cols = cols.widen(ndim)
    c, t, b = cols.count[:, :ndim], cols.stride[:, :ndim], cols.block[:, :ndim]
    n = c * b
    e = np.where(c > 0, t * (c - 1) + b, 0)
    is_points = cols.kind == POINT_SELECTION
    for i, s in cols.irregular.items():  # coordinate lists and index lists are rare next to slabs
        if s.points is not None:
            n[i] = 1 if len(s.points) else 0
            continue
        for d in range(min(ndim, s.ndim)):
            ix = s.indices[d]
            if ix is not None:
                n[i, d] = len(set(ix))
                e[i, d] = max(ix) - min(ix) + 1 if ix else 0
    return n, e, is_points


def classify_accesses(accesses, shape: tuple[int, ...]) -> np.ndarray:
    """Class code (index into CLASSES, or EMPTY) of each access of an array of this shape (runs unrolled)."""
    cols = as_columns(accesses)
    return np.repeat(_codes(*_geometry(cols, len(shape)), shape), cols.rep)


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


def _weighted_median(values: np.ndarray, weights: np.ndarray) -> np.ndarray:
    """Per column, ``np.median`` of the values each repeated ``weights`` times (without repeating them)."""
    out = np.empty(values.shape[1])
    total = int(weights.sum())
    for d in range(values.shape[1]):
        if values[:, d].min() == values[:, d].max():  # one value (every row read alike): no sort of 10M rows
            out[d] = values[0, d]
            continue
        order = np.argsort(values[:, d], kind="stable")
        v, cw = values[order, d], np.cumsum(weights[order])
        lo = v[np.searchsorted(cw, (total - 1) // 2, side="right")]
        hi = v[np.searchsorted(cw, total // 2, side="right")]
        out[d] = (lo + hi) / 2
    return out


def classify(accesses, shape: tuple[int, ...]) -> AccessPattern:
    """The access pattern of these accesses (AccessColumns or AccessRecords) to an array of this shape."""
    cols = as_columns(accesses)
    if not cols.rows:
        return AccessPattern("none", ())
    n, e, is_points = _geometry(cols, len(shape))
    code = _codes(n, e, is_points, shape)
    rep = cols.rep
    nbytes = cols.nbytes * rep
    classes = []
    for k in np.unique(code[code != EMPTY]):
        m = code == k
        m = slice(None) if m.all() else m  # one class: views, not copies
        classes.append(PatternClass(
            CLASSES[k], int(rep[m].sum()), int(nbytes[m].sum()),
            tuple(int(v) for v in np.round(_weighted_median(n[m], rep[m]))),
            tuple(int(v) for v in np.round(_weighted_median(e[m], rep[m]))),
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
    cols = trace.columns
    # grouped by dataset; a trace already in dataset order (one dataset, say) is read in place, not copied
    grouped = bool((cols.ds[1:] >= cols.ds[:-1]).all())
    order = None if grouped else np.argsort(cols.ds, kind="stable")
    bounds = np.searchsorted(cols.ds if grouped else cols.ds[order], np.asarray(sorted(trace.datasets), np.int64))
    bounds = np.append(bounds, cols.rows)
    out = []
    for j, (i, ds) in enumerate(sorted(trace.datasets.items())):
        a, b = int(bounds[j]), int(bounds[j + 1])
        mine = cols.rows_between(a, b) if grouped else cols.take(order[a:b])
        w = mine.write
        some_writes = bool(w.any())
        shape = extent(ds, mine, [s for r in trace.resizes if r.dataset == i for s in r.extents])
        out.append(DatasetUsage(
            dataset=ds,
            n_reads=int(mine.rep[~w].sum()),
            n_writes=int(mine.rep[w].sum()),
            bytes_read=mine.total_bytes(~w),
            bytes_written=mine.total_bytes(w),
            read_seconds=float(mine.dt[~w].sum()),
            write_seconds=float(mine.dt[w].sum()),
            ranks=tuple(int(r) for r in mine.ranks()),
            reads=classify(mine.take(~w) if some_writes else mine, shape),
            writes=classify(mine.take(w), shape),
        ))
    return out


__all__ = ["CLASSES", "PatternClass", "AccessPattern", "DatasetUsage", "classify", "classify_accesses", "summarize"]
