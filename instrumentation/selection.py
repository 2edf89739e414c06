"""Normalize what a program indexes an array with into a ``records.Selection``.

Canonical form, per dimension (what two equal selections always compare equal
by, whichever library or index spelling produced them):

- a single index ``i``: start i, count 1, stride 1, block 1;
- a contiguous run of n >= 1 elements (a step-1 slice, a list like [3, 4, 5]):
  start, count 1, stride 1, block n;
- n >= 2 elements s > 1 apart (a stepped slice, a list like [1, 4, 7]):
  start, count n, stride s, block 1; negative steps are stored ascending;
- k blocks of b elements s apart (h5py ``MultiBlockSlice``): start, count k,
  stride s, block b (one block, or blocks that touch, become a contiguous run);
- nothing selected: start, count 1, stride 1, block 0;
- an irregular set of indices (list, integer array, 1-D boolean mask):
  ``indices[d]`` sorted (duplicates kept, as they are read), with the bounding
  box start=min, count=len, stride=1, block=1;
- a boolean mask over several dimensions or a coordinate list (zarr
  ``vindex``): ``points``, an (n, ndim) array in the order they were given.

``None``/``newaxis`` selects no dimension; field names select no elements (the
bytes are those of the named fields, see ``field_itemsize``).
"""
from __future__ import annotations

import operator

import numpy as np

from .records import Selection
from .errors import IoadvisorError

_INT_TYPES = (int, np.integer)
_WHOLE = slice(None)


class SelectionError(IoadvisorError, ValueError):
    """An index the normalizer does not understand (the library accepted it)."""


_FULL = slice(None)

SIMPLE_INDEX_TYPES = frozenset(
    [int, slice, type(Ellipsis)] + [np.dtype(c).type for c in np.typecodes["AllInteger"]])
"""Index types ``fast_hyperslab`` handles; all immutable, so an index made of them can be normalized later."""


def _expand(args: tuple, ndim: int):
    """args with Ellipsis / missing trailing dimensions spelled out as full slices, or None."""
    n_ell = sum(1 for a in args if a is Ellipsis)
    if n_ell > 1:
        return None
    if n_ell == 0:
        return args + (_FULL,) * (ndim - len(args)) if len(args) < ndim else None
    i = next(k for k, a in enumerate(args) if a is Ellipsis)
    fill = ndim - len(args) + 1
    return args[:i] + (_FULL,) * fill + args[i + 1:] if fill >= 0 else None


def fast_hyperslab(args: tuple, shape: tuple[int, ...]):
    """(start, count, stride, block, nelements) for ints, slices and Ellipsis, else None.

    The hot path of every traced read: plain Python, no numpy, no records.
    ``args`` has already been accepted by the library, so it is in range.
    """
    if len(args) != len(shape):
        args = _expand(args, len(shape))
        if args is None:
            return None
    dims = []
    n = 1
    for a, dim in zip(args, shape):
        t = type(a)
        if t is slice:
            lo, hi, step = a.indices(dim)
            if step == 1:
                m = hi - lo if hi > lo else 0
                dims.append((lo, 1, 1, m))
            else:
                m = len(range(lo, hi, step))
                if m > 1:
                    if step < 0:
                        lo, step = lo + (m - 1) * step, -step
                    dims.append((lo, m, step, 1))
                else:
                    dims.append((lo, 1, 1, m))
            n *= m
        elif t is int or isinstance(a, np.integer):
            a = int(a)
            dims.append((a + dim if a < 0 else a, 1, 1, 1))
        elif a is Ellipsis:  # with as many args as dimensions, it stands for none of them
            args = _expand(args, len(shape))
            return None if args is None else fast_hyperslab(args, shape)
        else:
            return None
    if not dims:
        return (), (), (), (), 1
    start, count, stride, block = zip(*dims)
    return start, count, stride, block, n


def _regular(ix: np.ndarray, dim_len: int):
    """(start, count, stride, block) or None for a sorted index array."""
    m = len(ix)
    if m == 0:
        return 0, 1, 1, 0
    lo = int(ix[0])
    if m == 1:
        return lo, 1, 1, 1
    steps = np.diff(ix)
    step = int(steps[0])
    if step <= 0 or not (steps == step).all():
        return None
    if step == 1:
        return lo, 1, 1, m
    return lo, m, step, 1


def _index_dim(arr, dim_len: int):
    """A 1-D list/array of indices or booleans -> ('h', s, c, st, b) | ('i', sorted tuple)."""
    arr = np.asarray(arr)
    if arr.dtype == bool:
        ix = np.flatnonzero(arr).astype(np.int64)
    else:
        ix = arr.astype(np.int64, copy=True).ravel()
        ix[ix < 0] += dim_len
        ix.sort()
    reg = _regular(ix, dim_len)
    if reg is not None:
        return ("h",) + reg
    return ("i", tuple(ix.tolist()))


def _slice_dim(s: slice, dim_len: int):
    lo, hi, step = s.indices(dim_len)
    m = len(range(lo, hi, step))
    if m == 0:
        return ("h", min(lo, dim_len), 1, 1, 0)
    if m == 1:
        return ("h", lo, 1, 1, 1)
    if step < 0:
        lo, step = lo + (m - 1) * step, -step
    if step == 1:
        return ("h", lo, 1, 1, m)
    return ("h", lo, m, step, 1)


def _multiblock_dim(start: int, stride: int, count: int, block: int):
    if count == 0 or block == 0:
        return ("h", start, 1, 1, 0)
    if count == 1 or stride == block:
        return ("h", start, 1, 1, count * block)
    return ("h", start, count, stride, block)


def _from_dims(dims: list) -> Selection:
    start, count, stride, block, indices = [], [], [], [], []
    for dim in dims:
        if dim[0] == "h":
            start.append(dim[1]); count.append(dim[2]); stride.append(dim[3]); block.append(dim[4])
            indices.append(None)
        else:
            ix = dim[1]
            start.append(ix[0] if ix else 0); count.append(len(ix)); stride.append(1); block.append(1)
            indices.append(ix)
    has_ix = any(ix is not None for ix in indices)
    return Selection(tuple(start), tuple(count), tuple(stride), tuple(block),
                     tuple(indices) if has_ix else None)


def points_selection(points) -> Selection:
    """A coordinate list: (n, ndim) integer array."""
    pts = np.asarray(points, dtype=np.int64)
    ndim = pts.shape[1] if pts.ndim == 2 else 0
    z = (0,) * ndim
    return Selection(z, z, (1,) * ndim, z, points=pts.reshape(-1, ndim))


def _is_index_array(a) -> bool:
    return isinstance(a, (list, np.ndarray)) or (
        hasattr(a, "__array__") and not isinstance(a, (str, bytes)) and not np.isscalar(a)
    )


def normalize(args, shape: tuple[int, ...]) -> Selection:
    """Any index expression that numpy-style libraries accept -> Selection.

    Raises SelectionError for what it cannot express (the caller falls back
    to the library's own selection machinery).
    """
    if not isinstance(args, tuple):
        args = (args,)
    args = tuple(a for a in args if a is not None and not isinstance(a, (str, bytes)))
    ndim = len(shape)
    fast = fast_hyperslab(args, shape)
    if fast is not None:
        start, count, stride, block, _ = fast
        return Selection(tuple(start), tuple(count), tuple(stride), tuple(block))
    # a boolean mask over all dimensions: points (numpy's rule, and h5py's and zarr's)
    if len(args) == 1 and _is_index_array(args[0]):
        arr = np.asarray(args[0])
        if arr.dtype == bool and arr.ndim > 1:
            if arr.shape != tuple(shape):
                raise SelectionError(f"mask shape {arr.shape} does not match array shape {shape}")
            return points_selection(np.argwhere(arr))
    n_named = sum(np.asarray(a).ndim if _is_index_array(a) and np.asarray(a).dtype == bool else 1
                  for a in args if a is not Ellipsis)
    dims = []
    d = 0
    for a in args:
        if a is Ellipsis:
            for _ in range(ndim - n_named):
                dims.append(("h", 0, 1, 1, shape[d]))
                d += 1
            continue
        if d >= ndim:
            raise SelectionError(f"too many indices for {ndim}-d array")
        if isinstance(a, slice):
            dims.append(_slice_dim(a, shape[d]))
        elif isinstance(a, _INT_TYPES) and not isinstance(a, (bool, np.bool_)):
            i = operator.index(a)
            dims.append(("h", i + shape[d] if i < 0 else i, 1, 1, 1))
        elif hasattr(a, "indices") and hasattr(a, "block"):  # h5py MultiBlockSlice
            dims.append(_multiblock_dim(*a.indices(shape[d])))
        elif _is_index_array(a):
            arr = np.asarray(a)
            if arr.ndim == 0:
                i = int(arr)
                dims.append(("h", i + shape[d] if i < 0 else i, 1, 1, 1))
            elif arr.ndim == 1:
                dims.append(_index_dim(arr, shape[d]))
            else:
                raise SelectionError(f"{arr.ndim}-d index array in dimension {d}")
        else:
            raise SelectionError(f"unsupported index {type(a).__name__} in dimension {d}")
        d += 1
    while d < ndim:
        dims.append(("h", 0, 1, 1, shape[d]))
        d += 1
    return _from_dims(dims)


def from_dataspace(space) -> Selection:
    """An h5py dataspace (``h5s.SpaceID``) selection -> Selection (region references, Selection objects)."""
    from h5py import h5s

    shape = space.shape
    kind = space.get_select_type()
    if kind == h5s.SEL_ALL:
        return Selection.box((0,) * len(shape), shape)
    if kind == h5s.SEL_NONE:
        return Selection((0,) * len(shape), (1,) * len(shape), (1,) * len(shape), (0,) * len(shape))
    if kind == h5s.SEL_POINTS:
        return points_selection(space.get_select_elem_pointlist())
    if space.is_regular_hyperslab():
        start, stride, count, block = space.get_regular_hyperslab()
        return _from_dims([_multiblock_dim(s, st, c, b) for s, st, c, b in zip(start, stride, count, block)])
    # an irregular union of blocks: every selected element
    blocks = np.asarray(space.get_select_hyper_blocklist(), dtype=np.int64)
    pts = [np.stack(np.meshgrid(*[np.arange(lo, hi + 1) for lo, hi in zip(b[0], b[1])], indexing="ij"),
                    -1).reshape(-1, len(shape)) for b in blocks]
    return points_selection(np.unique(np.concatenate(pts), axis=0))


def field_itemsize(dtype: np.dtype, names) -> int:
    """Bytes per element of the named fields of a structured dtype (all fields when none named)."""
    if not names or dtype.names is None:
        return dtype.itemsize
    if isinstance(names, (str, bytes)):
        names = [names]
    return sum(dtype.fields[n][0].itemsize for n in names if n in dtype.fields) or dtype.itemsize


def _zarr_dims(indexer) -> list:
    dims = []
    for dix in indexer.dim_indexers:
        name = type(dix).__name__
        if name == "IntDimIndexer":
            dims.append(("h", int(dix.dim_sel), 1, 1, 1))
        elif name == "SliceDimIndexer":
            dims.append(_slice_dim(slice(dix.start, dix.stop, dix.step), dix.dim_len))
        elif name in ("IntArrayDimIndexer", "BoolArrayDimIndexer"):
            dims.append(_index_dim(dix.dim_sel, dix.dim_len))
        else:
            raise SelectionError(f"unsupported zarr dimension indexer {name}")
    return dims


def zarr_hyperslab(indexer):
    """(start, count, stride, block, nelements) when a zarr indexer selects a regular hyperslab, else None."""
    if not hasattr(indexer, "dim_indexers"):
        return None
    dims = _zarr_dims(indexer)
    if any(d[0] != "h" for d in dims):
        return None
    if not dims:
        return (), (), (), (), 1
    _, start, count, stride, block = zip(*dims)
    n = 1
    for c, b in zip(count, block):
        n *= c * b
    return start, count, stride, block, n


def from_zarr_indexer(indexer) -> Selection:
    """A zarr 3 indexer (Basic/Orthogonal/Block/Coordinate/Mask) -> Selection."""
    if hasattr(indexer, "sel_shape") and hasattr(indexer, "selection"):  # Coordinate/MaskIndexer
        coords = indexer.selection
        pts = np.stack([np.asarray(c, dtype=np.int64) for c in coords], axis=1) if coords else \
            np.zeros((1, 0), dtype=np.int64)
        sort = indexer.sel_sort
        if sort is not None:  # zarr grouped the points by chunk: give them back in the caller's order
            orig = np.empty_like(pts)
            orig[sort] = pts
            pts = orig
        return points_selection(pts)
    return _from_dims(_zarr_dims(indexer))


__all__ = [
    "SIMPLE_INDEX_TYPES",
    "SelectionError",
    "fast_hyperslab",
    "field_itemsize",
    "from_dataspace",
    "from_zarr_indexer",
    "normalize",
    "points_selection",
    "zarr_hyperslab",
]
