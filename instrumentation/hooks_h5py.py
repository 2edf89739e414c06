"""Hooks on h5py's high-level Dataset and Group: every read and write that reaches the data.

Patched (see ``patches``): ``Dataset.__getitem__`` (also reached by iteration,
``astype``/``asstr``/``fields`` views and region references), ``__setitem__``,
``read_direct`` (also ``np.asarray(ds)`` through ``__array__``),
``write_direct``, ``resize``, ``refresh``; ``Group.create_dataset`` (also
``require_dataset``/``create_dataset_like``; ``data=`` is written through the
low-level id and recorded as a write of the whole extent) and
``Group.__setitem__`` (``f['x'] = array``); ``Group.__delitem__`` (no data, but
see ``_by_place``). Low-level ``DatasetID.read/write``
cannot be patched (an immutable extension type) and is not traced.

Dataset metadata is computed once per dataset (keyed by the Dataset object,
then by the dataset's place in its open file, shared by every handle on it: ``_by_place``)
and its shape follows ``resize``/``refresh``. A ``ds.id.set_extent`` call
bypasses that and leaves a stale shape until the last tracer exits (a later
``resize(n, axis=k)`` is then recorded with the other extents stale too).
"""
from __future__ import annotations

import functools
import weakref
from time import perf_counter

import h5py
import numpy as np
from h5py._hl import dataset as _dataset
from h5py._hl import group as _group
from h5py._hl import selections as _selections

from . import hooks_h5py_opens
from .chunklisting import list_offsets, remember_open
from .jsonvalue import plain
from .locations import hdf5_location
from .nested import described_within
from .records import READ, WRITE, ChunkCache, DatasetRecord, Filter, dtype_string, type_class
from .selection import SIMPLE_INDEX_TYPES, SelectionError, fast_hyperslab, field_itemsize, from_dataspace, normalize
from .tracer import HUB, KICK_PENDING, MAX_PENDING, OP_READ, OP_RESIZE, OP_WRITE, DatasetInfo
from .tracer import hotpath as _hotpath

Dataset = _dataset.Dataset
Group = _group.Group
_by_obj: dict[int, tuple[weakref.ref, DatasetInfo]] = {}
_by_place: dict[tuple[int, int], tuple[str, bool, DatasetInfo]] = {}
"""(HDF5's number of the open file, the dataset's address in it) -> (its name, whether its extent is fixed, its
DatasetInfo): one description for every handle on a dataset, also those made one per access (``f["x"][i]``,
h5netcdf's way: describing each anew cost about 300 us an access, benchmarks/speed/tracing_overhead.py
--per-call-only, "temporary handle"). HDF5 numbers each opening of a file anew (a reopened file, another file at
that path, another mode: another number). A deletion frees an address a new dataset may take: ``del group[name]``
forgets them all, and an entry serves only a handle of the same name and, unless the file is open read-only without
SWMR, the same extent (a low-level deletion and recreation at one address under one name and extent is taken for
the same dataset)."""
_LIBRARY_VERSION = f"h5py {h5py.__version__}; HDF5 {h5py.version.hdf5_version}"


_OP_CODES = {READ: OP_READ, WRITE: OP_WRITE}
_record_in_c = getattr(_hotpath, "record", None) or (lambda ds, args, op, t0, dt: False)

if _hotpath is not None:  # the traced call depth of this thread, shared with the C read hook
    _depth, _set_depth = _hotpath.depth, _hotpath.set_depth
    # the C hook keeps the last dataset it recorded: told of every change to _by_obj (an extension built from an
    # older hotpath.c has no forget and looks every dataset up)
    _changed = getattr(_hotpath, "forget", lambda: None)
else:
    def _changed() -> None:
        pass

    _tls = HUB.tls

    def _depth() -> int:
        return _tls.depth

    def _set_depth(value: int) -> None:
        _tls.depth = value


def reset() -> None:
    """Forget cached metadata (the last tracer exited: shapes may change untraced)."""
    _by_obj.clear()
    _by_place.clear()
    _changed()
    hooks_h5py_opens.reset()


def _filters(dcpl) -> tuple[Filter, ...]:
    out = []
    for i in range(dcpl.get_nfilters()):
        code, flags, cd_values, name = dcpl.get_filter(i)
        out.append(Filter.hdf5(code, flags, cd_values,
                               name.decode("utf-8", "replace") if isinstance(name, bytes) else str(name)))
    return tuple(out)


def describe(ds, created: bool) -> DatasetInfo:
    f = ds.file
    shape = ds.shape
    chunks = ds.chunks
    dsid = ds.id
    try:
        nslots, nbytes, w0 = dsid.get_access_plist().get_chunk_cache()
        cache = ChunkCache(int(nbytes), int(nslots), float(w0))
    except Exception:  # noqa: BLE001 - optional detail; some drivers/HDF5 builds refuse
        cache = None
    try:
        fill = plain(ds.fillvalue)
    except Exception:  # noqa: BLE001 - vlen/reference types have no numpy fill value
        fill = None
    try:
        maxshape = ds.maxshape
    except TypeError:  # h5py cannot report it for a NULL dataspace
        maxshape = None
    offsets = None
    if chunks is not None and not created:
        if f.mode == "r":  # listed once, at the trace's end, after the reads (instrumentation/chunklisting.py)
            remember_open(f"{hdf5_location(f.filename, f.driver)}::{ds.name or ''}", dsid)
        else:
            try:
                offsets = list_offsets(dsid, chunks)
            except Exception:  # noqa: BLE001 - HDF5 builds without chunk queries
                offsets = None
    template = DatasetRecord(
        id=-1,
        library="hdf5",
        library_version=_LIBRARY_VERSION,
        file=hdf5_location(f.filename, f.driver),
        path=ds.name or "",
        shape=() if shape is None else tuple(shape),
        dtype=dtype_string(ds.dtype),
        type_class=type_class(ds.dtype),
        maxshape=None if maxshape is None else tuple(maxshape),
        chunks=chunks,
        filters=_filters(dsid.get_create_plist()),
        fillvalue=fill,
        cache=cache,
        libver=tuple(f.libver),
        driver=f.driver,
        mode=f.mode,
        created=created,
        chunk_offsets=offsets,
    )
    info = DatasetInfo(template, ds.dtype)
    if shape is None:  # a NULL dataspace (h5py.Empty): no data to access
        info.shape = None
    return info


def _remember(ds, info: DatasetInfo) -> DatasetInfo:
    key = id(ds)

    def forget(ref, key=key):
        entry = _by_obj.get(key)
        if entry is not None and entry[0] is ref:
            del _by_obj[key]
        _changed()  # this dataset is gone: another object may come at its address

    _by_obj[key] = (weakref.ref(ds, forget), info)
    _changed()
    return info


def _place(dsid) -> tuple[int, int] | None:
    try:
        o = h5py.h5o.get_info(dsid)
    except Exception:  # noqa: BLE001 - a connector without addresses: described per handle
        return None
    return o.fileno, o.addr


def _described(ds) -> DatasetInfo:
    """The description of ``ds``'s dataset another handle on it in this open file got (``_by_place``), else a new
    one."""
    dsid = ds.id
    place = _place(dsid)
    entry = _by_place.get(place)
    name = hooks_h5py_opens.path_of(dsid)
    if name is None:
        name = ds.name or ""
    if entry is not None and entry[0] == name:
        info = entry[2]
        if entry[1] or info.shape == (None if info.shape is None else dsid.shape):
            record = info.template
            if record.chunks is not None and record.mode == "r" and not record.created:
                remember_open(info.key, dsid)  # the end lists through a handle still open (chunklisting)
            return info
    info = describe(ds, created=False)
    if place is not None:
        _by_place[place] = (name, _fixed_extent(ds, info), info)
    return info


def _fixed_extent(ds, info: DatasetInfo) -> bool:
    """Whether no one can change the dataset's extent while its file stays open (read-only, no SWMR)."""
    return info.template.mode == "r" and not ds.file.swmr_mode


def _info(ds) -> DatasetInfo:
    entry = _by_obj.get(id(ds))
    if entry is not None and entry[0]() is ds:
        return entry[1]
    return _remember(ds, _described(ds))


def _itemsize(info: DatasetInfo, args: tuple, new_dtype) -> int:
    if new_dtype is not None and new_dtype.names is not None:
        return new_dtype.itemsize
    names = [a for a in args if isinstance(a, str)]
    return field_itemsize(info.dtype, names) if names else info.itemsize


def _collective(ds) -> bool:
    """Whether the dataset's transfer property list asks MPI-IO for collective transfers."""
    try:
        return ds._dxpl.get_dxpl_mpio() == h5py.h5fd.MPIO_COLLECTIVE
    except Exception:  # noqa: BLE001 - an h5py without MPI has no such property
        return False


def _record(ds, op: str, args, new_dtype, t0: float, dt: float) -> None:
    entry = _by_obj.get(id(ds))
    first = entry is None or entry[0]() is not ds
    if not first:
        info = entry[1]
    else:  # a first sight, the interposer's too: its description of the dataset, before the call's libhdf5 calls
        info = _info(ds)  # (which stay inside the span: they are recorded once, as this call), is not the call's time
        described = min(dt, described_within(t0, dt))
        t0, dt = t0 + described, dt - described
    shape = info.shape
    if shape is None:
        return
    if first and new_dtype is None:  # as the C hook records the calls that follow (a new handle per access:
        HUB.seen(info)  # h5netcdf's way), numbered now, as the record below would number it
        if _record_in_c(ds, args, _OP_CODES[op], t0, dt):
            return
    if type(args) is not tuple:
        args = (args,)
    collective = info.mpio and _collective(ds)
    for a in args:
        if collective or type(a) not in SIMPLE_INDEX_TYPES:
            break
    else:  # ints/slices (where the C hook did not record them: no compiler, a new dataset, new_dtype)
        slab = fast_hyperslab(args, shape)
        if slab is not None:
            *dims, n = slab
            HUB.hyperslab(info, op, *dims, n, n * _itemsize(info, args, new_dtype), t0, dt)
            return
    try:
        selection = normalize(args, shape)
    except SelectionError:  # region references, h5py Selection objects: ask h5py
        plain = tuple(a for a in args if not isinstance(a, str))
        selection = from_dataspace(_selections.select(shape, plain, dataset=ds).id)
    n = selection.nelements
    (HUB.collective if collective else HUB.access)(info, op, selection, n, n * _itemsize(info, args, new_dtype),
                                                    t0, dt)


def _failed(obj) -> None:
    """A traced call raised: count it; a dataset still goes into the trace (say, one whose filter is
    missing here), so the advisor can tell why it has no accesses."""
    HUB.failed()
    if isinstance(obj, Dataset):
        try:
            HUB.seen(_info(obj))
        except Exception:  # noqa: BLE001 - the user's exception is the one that matters here
            pass


def _outermost(original, record, makes_data=None):
    """Wrap ``original``: the outermost traced call runs timed, then ``record(self, args, kwargs, result, t0, dt)``.

    Inner calls (one public method calling another), calls while no tracer is
    active and calls ``makes_data(args)`` rejects run untouched; a failing call
    is counted and re-raised unchanged; an error while recording never reaches
    the user.
    """

    def wrapper(self, *args, **kwargs):
        if _depth() or not HUB.active or (makes_data is not None and not makes_data(args)):
            return original(self, *args, **kwargs)
        _set_depth(1)
        t0 = perf_counter()
        try:
            result = original(self, *args, **kwargs)
        except BaseException:
            _set_depth(0)
            _failed(self)
            raise
        dt = perf_counter() - t0
        _set_depth(0)
        try:
            record(self, args, kwargs, result, t0, dt)
        except Exception as exc:  # noqa: BLE001 - tracing must never raise into user code
            HUB.error(exc)
        return result

    return functools.update_wrapper(wrapper, original)


def _traced_io(op: str, original, selection_of):
    """A Dataset method that moves data; ``selection_of(args, kwargs)`` -> (index, new_dtype)."""

    def record(self, args, kwargs, result, t0, dt):
        index, new_dtype = selection_of(args, kwargs)
        _record(self, op, index, new_dtype, t0, dt)

    return _outermost(original, record)


def _recorder(op: str):
    """``record(self, args, new_dtype, t0, dt)``: a traced read's or write's record in Python (the C hook's
    ``slow``); never raises."""

    def record(self, args, new_dtype, t0: float, dt: float) -> None:
        try:
            _record(self, op, args, new_dtype, t0, dt)
        except Exception as exc:  # noqa: BLE001 - tracing must never raise into user code
            HUB.error(exc)

    return record


_read, _write = _recorder(READ), _recorder(WRITE)


def _drain_full_recorders() -> None:
    for tr in HUB.active:
        if tr.pending() > MAX_PENDING:
            tr.flush()


def _traced_getitem(original):
    """The hot path (every read): in C (``_hotpath.Hook``, which hands all but known datasets' int/slice reads
    to ``_read``), else ``_outermost`` specialised, without packing arguments."""
    if _hotpath is not None:
        return functools.update_wrapper(_hotpath.Hook(original, _read, _failed, OP_READ), original)

    def __getitem__(self, args, new_dtype=None):
        if _depth() or not HUB.active:
            return original(self, args, new_dtype)
        _set_depth(1)
        t0 = perf_counter()
        try:
            result = original(self, args, new_dtype)
        except BaseException:
            _set_depth(0)
            _failed(self)
            raise
        dt = perf_counter() - t0
        _set_depth(0)
        _read(self, args, new_dtype, t0, dt)
        return result

    return functools.update_wrapper(__getitem__, original)


def _traced_setitem(original):
    """Every write: in C as reads (``_hotpath.Hook``; ``ds[i] = frame`` of an append loop costs 3-4 us less), else
    ``_outermost``."""
    if _hotpath is not None:
        return functools.update_wrapper(_hotpath.Hook(original, _write, _failed, OP_WRITE), original)
    return _traced_io(WRITE, original, lambda args, kwargs: (args[0], None))


if _hotpath is not None:
    try:  # DatasetInfo.shape: where the C hook finds a dataset's extent, to keep it between calls
        _hotpath.configure(_by_obj, SIMPLE_INDEX_TYPES, _drain_full_recorders, MAX_PENDING, DatasetInfo.shape)
    except TypeError:  # an extension built from an older hotpath.c (rebuilt by `setup.py build_ext --inplace`)
        _hotpath.configure(_by_obj, SIMPLE_INDEX_TYPES, _drain_full_recorders, MAX_PENDING)
    if hasattr(_hotpath, "set_kick"):
        _hotpath.set_kick(KICK_PENDING)


def _direct_sel(position: int, name: str):
    def sel(args, kwargs):
        s = args[position] if len(args) > position else kwargs.get(name)
        return (Ellipsis if s is None else s), None

    return sel


def _whole_write(info: DatasetInfo, t0: float, dt: float) -> None:
    shape = info.shape
    if shape is None:
        return
    n = int(np.prod(shape, dtype=np.int64))
    HUB.hyperslab(info, WRITE, (0,) * len(shape), (1,) * len(shape), (1,) * len(shape), shape,
                  n, n * info.itemsize, t0, dt)


def _created(dset, with_data: bool, t0: float, dt: float) -> None:
    info = _remember(dset, describe(dset, created=True))
    place = _place(dset.id)
    if place is not None:
        _by_place[place] = (dset.name or "", False, info)
    HUB.created(info)
    if with_data:
        _whole_write(info, t0, dt)


def _traced_create(original):
    def record(self, args, kwargs, dset, t0, dt):
        data = args[3] if len(args) > 3 else kwargs.get("data")  # (name, shape, dtype, data)
        _created(dset, data is not None, t0, dt)

    return _outermost(original, record)


def _traced_group_setitem(original):
    """``f['x'] = array`` creates a dataset and writes it; links and committed types move no data."""

    def record(self, args, kwargs, result, t0, dt):
        _created(self[args[0]], True, t0, dt)

    def makes_data(args):
        return not isinstance(args[1], h5py._hl.base.HLObject | h5py.SoftLink | h5py.ExternalLink | np.dtype)

    return _outermost(original, record, makes_data)


def _traced_delitem(original):
    """``del group[name]``: the addresses ``_by_place`` knows may go to a dataset created next."""

    def __delitem__(self, name):
        try:
            return original(self, name)
        finally:
            _by_place.clear()

    return functools.update_wrapper(__delitem__, original)


def _resized(ds, info: DatasetInfo, args, kwargs) -> tuple:
    """The extent ``resize`` set: what h5py passes to ``set_extent`` (asking HDF5 costs 10 us a call)."""
    size = args[0] if args else kwargs["size"]
    axis = args[1] if len(args) > 1 else kwargs.get("axis")
    if axis is None:
        return tuple(map(int, size))
    shape = list(info.shape)
    shape[axis] = int(size)
    return tuple(shape)


def _refreshed(ds, info: DatasetInfo, args, kwargs) -> tuple:
    """The extent after ``refresh``: another process's (a SWMR writer's), known only to HDF5."""
    return tuple(map(int, ds.id.shape))


def _traced_extent(original, new_shape):
    """resize / refresh: the extent may change; record it when it did (``new_shape(ds, info, args, kwargs)``)."""

    def wrapper(self, *args, **kwargs):
        if not HUB.active:
            return original(self, *args, **kwargs)
        try:
            info = _info(self)  # the extent before the call
        except Exception as exc:  # noqa: BLE001
            HUB.error(exc)
            return original(self, *args, **kwargs)
        t0 = perf_counter()
        result = original(self, *args, **kwargs)
        t1 = perf_counter()
        try:
            if info.shape is not None:
                shape = new_shape(self, info, args, kwargs)
                if shape != info.shape:
                    HUB.resize(info, shape, t0, t1)
        except Exception as exc:  # noqa: BLE001
            HUB.error(exc)
        return result

    return functools.update_wrapper(wrapper, original)


def _traced_resize(original):
    """resize: in C where every tracer has numbered the dataset (an append loop resizes before each write), else
    ``_traced_extent``."""
    wrapper = _traced_extent(original, _resized)
    if _hotpath is None:
        return wrapper
    return functools.update_wrapper(_hotpath.Hook(original, wrapper, _failed, OP_RESIZE), original)


def patches() -> list[tuple[object, str, object]]:
    """(owner, attribute, replacement) for the tracer to install."""
    return [
        (Dataset, "__getitem__", _traced_getitem(Dataset.__getitem__)),
        (Dataset, "__setitem__", _traced_setitem(Dataset.__setitem__)),
        (Dataset, "read_direct", _traced_io(READ, Dataset.read_direct, _direct_sel(1, "source_sel"))),
        (Dataset, "write_direct", _traced_io(WRITE, Dataset.write_direct, _direct_sel(2, "dest_sel"))),
        (Dataset, "resize", _traced_resize(Dataset.resize)),
        (Group, "create_dataset", _traced_create(Group.create_dataset)),
        (Group, "__setitem__", _traced_group_setitem(Group.__setitem__)),
        (Group, "__delitem__", _traced_delitem(Group.__delitem__)),
    ] + ([(Dataset, "refresh", _traced_extent(Dataset.refresh, _refreshed))] if hasattr(Dataset, "refresh") else []) \
        + hooks_h5py_opens.patches()  # opens and closes: File.__init__/close, Dataset.__init__
