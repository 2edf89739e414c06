"""Hooks on zarr 3 (arrays of zarr_format 3 and 2).

Every read and write, whichever API spelled it (``__getitem__``, ``oindex``,
``vindex``, ``blocks``, ``get_*_selection``/``set_*_selection``, ``append``,
``create_array(data=...)``, the async API), ends in the module functions
``zarr.core.array._get_selection`` / ``_set_selection``, which the array
methods look up by name at call time; resizes end in ``_resize``, and array
creation in ``AsyncArray._save_metadata``. Those four are patched.

The indexer zarr built describes the selection exactly (see
``selection.from_zarr_indexer``). The calls run as coroutines on zarr's
event-loop thread: ``duration`` is the time of that coroutine, which leaves out
the hand-over from the calling thread (``zarr.core.sync.sync``).

For a sharded array ``chunks`` is the inner chunk shape (what one read decodes),
``shards`` the shard shape, and ``filters`` the inner codec chain.
"""
from __future__ import annotations

import functools
import inspect
import weakref
from dataclasses import replace
from time import perf_counter

import zarr
from zarr.api import asynchronous as _async_api
from zarr.core import array as _array

from .jsonvalue import plain
from .locations import store_location
from .opens import OPEN, OpenRecord
from .records import READ, WRITE, DatasetRecord, Filter, dtype_string, type_class
from .selection import field_itemsize, from_zarr_indexer, zarr_hyperslab
from .tracer import HUB, DatasetInfo

_LIBRARY_VERSION = f"zarr {zarr.__version__}"
_by_array: dict[tuple[int, str], tuple[weakref.ref, DatasetInfo]] = {}


def reset() -> None:
    """Forget cached metadata (the last tracer exited)."""
    _by_array.clear()


def _codec_filter(codec) -> Filter:
    if hasattr(codec, "to_dict"):  # zarr 3 codec: {"name": ..., "configuration": {...}}
        d = codec.to_dict()
        name, options = d["name"], dict(d.get("configuration") or {})
    else:  # numcodecs codec in a zarr_format 2 array
        options = dict(codec.get_config())
        name = options.pop("id")
    name = name.removeprefix("numcodecs.")
    return Filter("zfp" if name == "zfpy" else name, None, options)


def _describe(store_path, metadata, created: bool) -> DatasetInfo:
    dtype = (metadata.dtype if metadata.zarr_format == 2 else metadata.data_type).to_native_dtype()
    shape = tuple(metadata.shape)
    chunks = tuple(metadata.chunk_grid.chunk_shape) if metadata.zarr_format == 3 else tuple(metadata.chunks)
    shards = None
    if metadata.zarr_format == 3:
        codecs = list(metadata.codecs)
        if len(codecs) == 1 and type(codecs[0]).__name__ == "ShardingCodec":
            shards, chunks = chunks, tuple(codecs[0].chunk_shape)
            codecs = list(codecs[0].codecs)
    else:
        codecs = list(metadata.filters or ()) + ([metadata.compressor] if metadata.compressor else [])
    template = DatasetRecord(
        id=-1,
        library="zarr",
        library_version=_LIBRARY_VERSION,
        file=store_location(store_path.store),
        path=store_path.path,
        shape=shape,
        dtype=dtype_string(dtype),
        type_class=type_class(dtype),
        maxshape=(None,) * len(shape),  # zarr arrays resize freely
        chunks=chunks,
        shards=shards,
        filters=tuple(_codec_filter(c) for c in codecs),
        fillvalue=plain(metadata.fill_value),
        zarr_format=metadata.zarr_format,
        created=created,
    )
    return DatasetInfo(template, dtype)


def _info(store_path, metadata, t0: float) -> DatasetInfo:
    key = (id(store_path.store), store_path.path)
    entry = _by_array.get(key)
    if entry is not None and entry[0]() is metadata:
        return entry[1]
    info = _describe(store_path, metadata, created=False)
    if entry is not None:
        old = entry[1]
        # the same array with new metadata: resized here or by another handle
        if replace(old.template, shape=info.template.shape, created=False) == info.template:
            if old.shape != info.shape:
                HUB.resize(old, info.shape, t0, t0)
            info = old
    _by_array[key] = (weakref.ref(metadata), info)
    return info


def _binder(function, *names: str):
    """``bind(args, kwargs)`` -> the values of the named parameters of ``function``, however they were passed.

    zarr passes the indexer by position from some callers and by keyword from others
    (``_get_orthogonal_selection`` and friends); a parameter left to its default gives that default.
    """
    params = inspect.signature(function).parameters
    order = list(params)
    where = []
    for name in names:
        param = params[name]
        position = order.index(name) if param.kind in (param.POSITIONAL_ONLY, param.POSITIONAL_OR_KEYWORD) else None
        default = None if param.default is param.empty else param.default
        where.append((name, position, default))

    def bind(args, kwargs) -> tuple:
        return tuple(kwargs[name] if name in kwargs else args[pos] if pos is not None and pos < len(args)
                     else default for name, pos, default in where)

    return bind


def _record(op: str, bound: tuple, t0: float, dt: float) -> None:
    store_path, metadata, indexer, fields = bound
    info = _info(store_path, metadata, t0)
    size = field_itemsize(info.dtype, fields) if fields else info.itemsize
    hs = zarr_hyperslab(indexer)
    if hs is not None:
        start, count, stride, block, n = hs
        HUB.hyperslab(info, op, start, count, stride, block, n, n * size, t0, dt)
        return
    selection = from_zarr_indexer(indexer)
    n = selection.nelements
    HUB.access(info, op, selection, n, n * size, t0, dt)


def _traced_selection(op: str, original):
    bind = _binder(original, "store_path", "metadata", "indexer", "fields")

    async def wrapper(*args, **kwargs):
        if not HUB.active:
            return await original(*args, **kwargs)
        t0 = perf_counter()
        try:
            result = await original(*args, **kwargs)
        except BaseException:
            HUB.failed()
            raise
        dt = perf_counter() - t0
        try:
            _record(op, bind(args, kwargs), t0, dt)
        except Exception as exc:  # noqa: BLE001 - tracing must never raise into user code
            HUB.error(exc)
        return result

    return functools.update_wrapper(wrapper, original)


def _traced_resize(original):
    bind = _binder(original, "array")

    async def _resize(*args, **kwargs):
        if not HUB.active:
            return await original(*args, **kwargs)
        array = None
        try:
            (array,) = bind(args, kwargs)
            _info(array.store_path, array.metadata, perf_counter())  # know the shape before
        except Exception as exc:  # noqa: BLE001
            HUB.error(exc)
        result = await original(*args, **kwargs)
        if array is None:
            return result
        try:
            _info(array.store_path, array.metadata, perf_counter())  # records the new extent
        except Exception as exc:  # noqa: BLE001
            HUB.error(exc)
        return result

    return functools.update_wrapper(_resize, original)


def _traced_save_metadata(original):
    bind = _binder(original, "self", "metadata")

    async def _save_metadata(*args, **kwargs):
        result = await original(*args, **kwargs)
        if HUB.active:
            try:
                self, metadata = bind(args, kwargs)
                info = _describe(self.store_path, metadata, created=True)
                _by_array[(id(self.store_path.store), self.store_path.path)] = (weakref.ref(metadata), info)
                HUB.created(info)
            except Exception as exc:  # noqa: BLE001
                HUB.error(exc)
        return result

    return functools.update_wrapper(_save_metadata, original)


def _traced_open(original, whole: bool):
    """``zarr.api.asynchronous.open_array`` / ``open_group`` (``zarr.open*`` and xarray's zarr engine end there):
    an open of the array (``whole``: of a group, the store as a whole at its root) recorded; zarr has no close."""

    async def wrapper(*args, **kwargs):
        result = await original(*args, **kwargs)
        if HUB.active:
            try:
                sp = result.store_path
                path = None if whole and not sp.path else sp.path
                HUB.opened(OpenRecord(store_location(sp.store), path, OPEN, 0.0, via="zarr"), perf_counter())
            except Exception as exc:  # noqa: BLE001 - tracing must never raise into user code
                HUB.error(exc)
        return result

    return functools.update_wrapper(wrapper, original)


def patches() -> list[tuple[object, str, object]]:
    """(owner, attribute, replacement) for the tracer to install."""
    return [
        (_array, "_get_selection", _traced_selection(READ, _array._get_selection)),
        (_array, "_set_selection", _traced_selection(WRITE, _array._set_selection)),
        (_array, "_resize", _traced_resize(_array._resize)),
        (_array.AsyncArray, "_save_metadata", _traced_save_metadata(_array.AsyncArray._save_metadata)),
        (_async_api, "open_array", _traced_open(_async_api.open_array, whole=False)),
        (_async_api, "open_group", _traced_open(_async_api.open_group, whole=True)),
    ]
