"""Creating the destination's objects from the source's: groups, arrays (advised ones in their new layout,
the others as they are), attributes, fill values, links and dimensions.

HDF5 to HDF5 keeps everything HDF5 stores: each array is created from a copy of the source's creation
property list (fill value, allocation time, attribute order, filters), with only the chunks and filters of
an advised array changed; groups from their own creation lists (link and attribute order); attributes with
their own types and shapes; dimension scales attached again (their references point into the source).
netCDF-4's own attributes (``_Netcdf4Dimid``, ``_Netcdf4Coordinates``, ``_NCProperties``) are copied like
any other, so netCDF and xarray see the same dimensions, coordinates and attributes.

Between the libraries (HDF5 to Zarr and back) the netCDF/xarray conventions are translated: dimension
scales <-> ``dimension_names``, the dimension-only datasets of netCDF-4 are not variables in Zarr, and
xarray's Zarr 3 ``_FillValue`` attribute (a float as base64 of its little-endian float64) <-> a typed
attribute. Arrays that are not advised keep their chunks; their codecs cannot cross libraries (HDF5 arrays
from Zarr are stored uncompressed, Zarr arrays from HDF5 with Zarr's default codec).
"""
from __future__ import annotations

import base64
import posixpath
from dataclasses import dataclass

import numpy as np

from instrumentation.jsonvalue import plain

from .targets import KEEP, ApplyError, ArrayLayout

HDF5_DIMENSION_ATTRS = ("DIMENSION_LIST", "REFERENCE_LIST")
"""Attributes holding object references into the source file: made again by attaching the scales."""
HDF5_ONLY_ATTRS = HDF5_DIMENSION_ATTRS + ("CLASS", "NAME", "_Netcdf4Dimid", "_Netcdf4Coordinates", "_NCProperties",
                                          "_nc3_strict", "_SuperblockVersion", "_IsNetcdf4")
"""Attributes that only mean something in HDF5 / netCDF-4: not copied into Zarr."""
PHONY_DIM = b"This is a netCDF dimension but not a netCDF variable."
ZARR_ONLY_ATTRS = ("_ARRAY_DIMENSIONS",)


@dataclass(frozen=True)
class ArrayEntry:
    """One array to copy: its path (same in source and destination) and its new layout (None: as it is)."""

    path: str
    layout: ArrayLayout | None


# ---------------------------------------------------------------------------- walking the source

def _h5_items(group):
    """(name, link or object) of a group in its own order (creation order when tracked)."""
    import h5py

    for name in group:
        link = group.get(name, getlink=True)
        if isinstance(link, (h5py.SoftLink, h5py.ExternalLink)):
            yield name, link
        else:
            yield name, group[name]


def is_phony_dimension(ds) -> bool:
    """A netCDF-4 dimension without a coordinate variable (a dataset that only carries the dimension)."""
    name = ds.attrs.get("NAME") if "NAME" in ds.attrs else None
    return isinstance(name, (bytes, np.bytes_)) and bytes(name).startswith(PHONY_DIM)


def h5_dimension_names(ds) -> list | None:
    """netCDF-4 dimension names of an HDF5 dataset: its attached scales' names, its own for a scale."""
    if not ds.shape:
        return None
    names = []
    own = ds.attrs.get("CLASS") if "CLASS" in ds.attrs else None
    for d in ds.dims:
        if len(d):
            names.append(posixpath.basename(next(iter(d.values())).name))
        elif own is not None and bytes(own) == b"DIMENSION_SCALE" and ds.ndim == 1:
            names.append(posixpath.basename(ds.name))
        else:
            return None
    return names


def _zarr_dims(arr) -> list | None:
    names = getattr(arr.metadata, "dimension_names", None)
    if names is None and "_ARRAY_DIMENSIONS" in arr.attrs:
        names = list(arr.attrs["_ARRAY_DIMENSIONS"])
    return None if names is None else list(names)


# ---------------------------------------------------------------------------- attributes

def _json_value(v):
    import h5py

    if isinstance(v, h5py.Empty):
        return None
    if isinstance(v, np.ndarray) and v.size == 1:  # a one-element attribute is stored as its value
        v = v.reshape(-1)[0]
    return plain(v)


def fill_value_to_zarr(value, dtype: np.dtype):
    """xarray's Zarr 3 ``_FillValue`` encoding: floats as base64 of the little-endian float64."""
    if np.dtype(dtype).kind == "f":
        return base64.standard_b64encode(np.float64(value).astype("<f8").tobytes()).decode("ascii")
    return _json_value(value)


def fill_value_from_zarr(value, dtype: np.dtype):
    if isinstance(value, str) and np.dtype(dtype).kind == "f":
        return np.frombuffer(base64.standard_b64decode(value), "<f8")[0].astype(dtype)
    return np.asarray(value, dtype=dtype) if np.dtype(dtype).kind in "iuf" else value


def h5_attrs_to_json(obj, dtype=None) -> dict:
    out = {}
    for name in obj.attrs:
        if name in HDF5_ONLY_ATTRS:
            continue
        try:
            value = obj.attrs[name]
        except (OSError, TypeError):  # an attribute type numpy cannot hold (e.g. a reference)
            continue
        if name == "_FillValue" and dtype is not None:
            out[name] = fill_value_to_zarr(np.asarray(value).reshape(-1)[0], dtype)
            continue
        j = _json_value(value)
        if j is not None:
            out[name] = j
    return out


def copy_h5_attrs(src, dst) -> list[str]:
    """Every attribute but the dimension references, with its own type and shape; the names skipped."""
    import h5py

    skipped = []
    for name in src.attrs:
        if name in HDF5_DIMENSION_ATTRS:
            continue
        aid = src.attrs.get_id(name)
        try:
            value = src.attrs[name]
            if isinstance(value, h5py.Empty):
                dst.attrs.create(name, value)
            else:
                dst.attrs.create(name, value, shape=aid.shape, dtype=aid.dtype)
        except (OSError, TypeError, ValueError):
            skipped.append(name)
    return skipped


def zarr_attrs_to_h5(src, dst, dtype=None) -> None:
    for name, value in src.attrs.asdict().items():
        if name in ZARR_ONLY_ATTRS:
            continue
        if name == "_FillValue" and dtype is not None:
            dst.attrs.create(name, fill_value_from_zarr(value, dtype))
        elif isinstance(value, (dict,)) or value is None:
            continue
        elif isinstance(value, list) and value and all(isinstance(x, str) for x in value):
            dst.attrs.create(name, value)
        else:
            dst.attrs.create(name, value)


# ---------------------------------------------------------------------------- HDF5 destination

def _set_codec(dcpl, kwargs: dict) -> None:
    from h5py import h5z

    if kwargs.get("shuffle"):
        dcpl.set_shuffle()
    comp = kwargs.get("compression")
    opts = kwargs.get("compression_opts")
    if comp == "gzip":
        dcpl.set_deflate(int(opts if opts is not None else 4))
    elif comp == "lzf":
        dcpl.set_filter(h5z.FILTER_LZF, h5z.FLAG_OPTIONAL)
    elif comp is not None:
        dcpl.set_filter(int(comp), h5z.FLAG_OPTIONAL, tuple(int(o) for o in (opts or ())))


def _h5_chunks(layout: ArrayLayout, shape, maxshape) -> tuple[int, ...] | None:
    if layout.chunks is None:
        return None
    return tuple(min(c, s) if (m is not None and s > 0) else c
                 for c, s, m in zip(layout.chunks, shape, maxshape or shape))


def h5_dataset_like(src, dst_group, name: str, layout: ArrayLayout | None):
    """An HDF5 dataset created from ``src``'s own creation properties, with ``layout``'s chunks/codec."""
    from h5py import h5d, h5z

    dcpl = src.id.get_create_plist()
    if layout is not None:
        chunks = _h5_chunks(layout, src.shape, src.maxshape)
        if layout.compressor != KEEP:
            dcpl.remove_filter(h5z.FILTER_ALL)
        if chunks is None:
            if src.maxshape != src.shape:
                raise ApplyError(f"{src.name}: a resizable array cannot be contiguous")
            if dcpl.get_nfilters():
                raise ApplyError(f"{src.name}: a contiguous layout cannot keep the source's filters")
            dcpl.set_layout(h5d.CONTIGUOUS)
        else:
            dcpl.set_chunk(chunks)
        codec = layout.codec()
        if codec is not None:
            _set_codec(dcpl, codec.hdf5_kwargs())
    dsid = h5d.create(dst_group.id, name.encode(), src.id.get_type(), src.id.get_space(), dcpl=dcpl)
    return dst_group[name]


def h5_dataset_from_zarr(src, dst_group, name: str, layout: ArrayLayout | None):
    chunks = tuple(src.shards or src.chunks) if layout is None else _h5_chunks(layout, src.shape, src.shape)
    kw = {}
    if layout is not None and layout.codec() is not None:
        kw = dict(layout.codec().hdf5_kwargs())
    fill = src.fill_value
    ds = dst_group.create_dataset(name, shape=src.shape, dtype=src.dtype, chunks=chunks if src.shape else None,
                                  fillvalue=fill, track_order=True, **kw)
    zarr_attrs_to_h5(src, ds, src.dtype)
    return ds


def attach_scales(src_ds, dst_ds, dst_file) -> None:
    """Attach to ``dst_ds`` the scales attached to ``src_ds``, found in ``dst_file`` by path."""
    for i, dim in enumerate(src_ds.dims):
        for scale in dim.values():
            dst_ds.dims[i].attach_scale(dst_file[scale.name])


def attach_named_dims(group, dims: dict[str, list]) -> None:
    """netCDF-4 dimensions from Zarr's ``dimension_names``: a 1-D array of the dimension's name and length
    becomes its scale, else a dimension-only dataset is made (as netCDF-C and h5netcdf do)."""
    from h5py import h5ds

    sizes: dict[str, int] = {}
    for path, names in dims.items():
        shape = group[path].shape
        for n, s in zip(names, shape):
            if sizes.setdefault(n, s) != s:
                raise ApplyError(f"dimension {n!r} has lengths {sizes[n]} and {s}")
    for n, s in sizes.items():
        if n in group and group[n].shape == (s,):
            h5ds.set_scale(group[n].id, n.encode())
        elif n not in group:
            ds = group.create_dataset(n, shape=(s,), dtype="f4", track_order=True)
            h5ds.set_scale(ds.id, PHONY_DIM + b"%10d" % s)
        else:
            raise ApplyError(f"dimension {n!r}: an object of that name exists with another shape")
    for path, names in dims.items():
        ds = group[path]
        for i, n in enumerate(names):
            if path.strip("/") != n:
                ds.dims[i].attach_scale(group[n])


# ---------------------------------------------------------------------------- Zarr destination

def zarr_array_like(src, src_lib: str, dst_group, name: str, layout: ArrayLayout | None):
    import zarr

    kw: dict = {}
    if src_lib == "zarr":
        v3 = src.metadata.zarr_format == 3
        dims = _zarr_dims(src)
        attrs = {k: v for k, v in src.attrs.asdict().items() if k not in ZARR_ONLY_ATTRS}
        if layout is None or layout.compressor == KEEP:
            if v3:
                kw = dict(compressors=src.compressors, serializer=src.serializer, filters=src.filters)
        chunks = tuple(src.chunks) if layout is None else layout.chunks
        shards = (src.shards if layout is None else layout.shards)
        fill = src.fill_value
        dtype = src.dtype
    else:
        dims = h5_dimension_names(src)
        attrs = h5_attrs_to_json(src, src.dtype)
        chunks = (tuple(src.chunks) if src.chunks else "auto") if layout is None else layout.chunks
        shards = None if layout is None else layout.shards
        fill = src.fillvalue
        dtype = src.dtype if src.dtype.kind not in "OU" else str
    if layout is not None and layout.compressor not in (KEEP, None):
        kw = dict(layout.codec().zarr_codecs())
    elif layout is not None and layout.compressor is None:
        kw = dict(compressors=None)
    if not src.shape:
        chunks, shards = "auto", None
    kw.update(shape=src.shape, dtype=dtype, chunks=chunks, shards=shards, fill_value=fill, attributes=attrs,
              dimension_names=dims)
    if not name:  # the array at the root of a store: ``dst_group`` is the store
        import zarr

        return zarr.create_array(dst_group, zarr_format=3, **kw)
    return dst_group.create_array(name, **kw)


# ---------------------------------------------------------------------------- the whole tree

def create_structure(src_root, src_lib: str, dst_root, dst_lib: str, layouts: dict) -> tuple[list[ArrayEntry], list[str]]:
    """Create every group and array of ``src_root`` under ``dst_root`` (no data yet); the arrays to copy, in
    order, and notes (what could not be carried over)."""
    entries: list[ArrayEntry] = []
    notes: list[str] = []
    seen: dict = {}
    scaled: list[str] = []
    zarr_dims: dict[str, dict[str, list]] = {}

    def lay(path):
        return layouts.get("/" + path.strip("/"))

    def visit_h5(sg, dg, prefix):
        import h5py

        for name, obj in _h5_items(sg):
            path = posixpath.join(prefix, name)
            if isinstance(obj, (h5py.SoftLink, h5py.ExternalLink)):
                if dst_lib == "hdf5":
                    dg[name] = obj
                else:
                    notes.append(f"{path}: link not carried into Zarr")
                continue
            key = obj.id
            if key in seen and dst_lib == "hdf5":
                dg[name] = dg.file[seen[key]]  # another hard link to an object already made
                continue
            seen[key] = path
            if isinstance(obj, h5py.Group):
                if dst_lib == "hdf5":
                    from h5py import h5g

                    h5g.create(dg.id, name.encode(), gcpl=obj.id.get_create_plist())
                    ng = dg[name]
                    notes.extend(f"{path}: attribute {a} not copied" for a in copy_h5_attrs(obj, ng))
                else:
                    ng = dg.create_group(name, attributes=h5_attrs_to_json(obj))
                visit_h5(obj, ng, path)
            elif isinstance(obj, h5py.Dataset):
                if obj.dtype.kind == "O" and h5py.check_dtype(ref=obj.dtype) is not None:
                    notes.append(f"{path}: a dataset of references is not copied")
                    continue
                if dst_lib == "hdf5":
                    nd = h5_dataset_like(obj, dg, name, lay(path))
                    notes.extend(f"{path}: attribute {a} not copied" for a in copy_h5_attrs(obj, nd))
                    if "DIMENSION_LIST" in obj.attrs:
                        scaled.append(path)
                elif is_phony_dimension(obj):
                    continue
                else:
                    zarr_array_like(obj, "hdf5", dg, name, lay(path))
                entries.append(ArrayEntry(path, lay(path)))
            else:  # a committed datatype
                if dst_lib == "hdf5":
                    sg.file.copy(obj, dg, name)
                else:
                    notes.append(f"{path}: named datatype not carried into Zarr")

    def visit_zarr(sg, dg, prefix):
        import zarr

        for name in sorted(sg.keys()):
            obj = sg[name]
            path = posixpath.join(prefix, name)
            if isinstance(obj, zarr.Group):
                if dst_lib == "hdf5":
                    ng = dg.create_group(name, track_order=True)
                    zarr_attrs_to_h5(obj, ng)
                else:
                    ng = dg.create_group(name, attributes=obj.attrs.asdict())
                visit_zarr(obj, ng, path)
            else:
                if dst_lib == "hdf5":
                    h5_dataset_from_zarr(obj, dg, name, lay(path))
                    dims = _zarr_dims(obj)
                    if dims and len(dims) == len(obj.shape):
                        zarr_dims.setdefault(prefix, {})[name] = dims
                else:
                    zarr_array_like(obj, "zarr", dg, name, lay(path))
                entries.append(ArrayEntry(path, lay(path)))

    if src_lib == "zarr" and not hasattr(src_root, "keys"):  # a store whose root is an array, not a group
        if dst_lib == "hdf5":
            raise ApplyError("the source store's root is an array, and an HDF5 file's root can only be a group: "
                             "copy it into a .zarr store")
        zarr_array_like(src_root, "zarr", dst_root, "", lay("/"))
        entries.append(ArrayEntry("/", lay("/")))
    elif src_lib == "hdf5":
        if dst_lib == "hdf5":
            notes.extend(f"/: attribute {a} not copied" for a in copy_h5_attrs(src_root, dst_root))
        else:
            dst_root.attrs.update(h5_attrs_to_json(src_root))
        visit_h5(src_root, dst_root, "/")
        for path in scaled:
            attach_scales(src_root[path], dst_root[path], dst_root.file)
    else:
        if dst_lib == "hdf5":
            zarr_attrs_to_h5(src_root, dst_root)
        else:
            dst_root.attrs.update(src_root.attrs.asdict())
        visit_zarr(src_root, dst_root, "/")
        for prefix, dims in zarr_dims.items():
            attach_named_dims(dst_root[prefix], dims)
    missing = sorted(set(layouts) - {e.path for e in entries})
    if missing:
        raise ApplyError(f"{', '.join(missing)}: not found in the source")
    return entries, notes
