"""Hooks on h5py's opens and closes (``opens.OpenRecord``): ``File.__init__`` and ``File.close`` (the whole file),
``Dataset.__init__`` and the end of the dataset's last handle (the dataset).

HDF5 frees a dataset's chunk cache when its last identifier closes (every handle on one dataset in one file shares
it) or when its file closes (h5py's ``File.close`` closes every object of the file). A ``Dataset`` object made by
``f["x"]`` holds a new identifier, closed when the object goes away: ``f["x"][i]`` on a temporary object, with no
other handle on ``x`` held, opens and closes the dataset, and empties its cache, at every access (0.007 ms against
37 ms for a gzip'd chunk read twice here: benchmarks/investigations/reopen_cache.py). So the dataset is open while
at least one of its identifiers seen here lives: the first records an open, the end of the last (a weakref
callback on its ``DatasetID``, counted at the program's next open or close: ``_settle``) a close. Handles made before the tracer started are not seen: a dataset held open
through one of them may be recorded closed while it is not.

Opens are rare next to accesses: these run in Python, outside the per-call hooks (``hooks_h5py``), and never
change what the program computes or raises (an error while recording is counted, ``HUB.error``).
"""
from __future__ import annotations

import functools
import weakref
from collections import deque
from time import perf_counter

from h5py._hl import dataset as _dataset
from h5py._objects import ObjectID
from h5py._hl import files as _files

from .locations import hdf5_location
from .opens import CLOSE, OPEN, OpenRecord
from .tracer import HUB

_live: dict[tuple[str, str], int] = {}
"""(file, dataset path) -> identifiers seen open on it now."""
_ids: dict[int, tuple] = {}
"""id() of a DatasetID seen -> (weakref to it, its key, the file's generation at its open)."""
_generation: dict[str, int] = {}
"""file -> how many times ``File.close`` closed it (identifiers of an earlier generation were closed with it)."""
_file_keys: dict[int, str] = {}
"""HDF5's number of an open file (``ObjectID.fileno``) -> its location (``ds.file.driver`` costs 20 us a call)."""
_gone: deque = deque()
"""(key, generation, time) of each handle seen that went away, not yet counted (``_settle``)."""


def reset() -> None:
    """Forget the handles seen (the last tracer exited)."""
    _live.clear()
    _ids.clear()
    _generation.clear()
    _gone.clear()
    _file_keys.clear()


def _emit(file: str, path: str | None, event: str, t: float) -> None:
    HUB.opened(OpenRecord(file, path, event, 0.0, via="h5py"), t)


def _file_key(f) -> str:
    return hdf5_location(f.filename, f.driver)


def _settle() -> None:
    """Count the handles that went away since (``gone``) and record the closes of datasets left with none. Called
    from the program's own calls only (an open, a File's open or close): a weakref callback runs wherever the
    handle happens to be freed (the cyclic collector, inside a lock the trace's writer holds), so it only queues."""
    while _gone:
        key, generation, t = _gone.popleft()
        if _generation.get(key[0], 0) != generation:
            continue  # closed with its file already
        left = _live.get(key, 0) - 1
        if left > 0:
            _live[key] = left
            continue
        _live.pop(key, None)
        _emit(key[0], key[1], CLOSE, t)


def _dataset_opened(ds) -> None:
    dsid = ds.id
    if id(dsid) in _ids and _ids[id(dsid)][0]() is dsid:
        return  # another Dataset object on a handle seen: no open
    _settle()
    fileno = dsid.fileno
    file = _file_keys.get(fileno)
    if file is None:  # a file opened before the tracer, or through another File object
        file = _file_keys[fileno] = _file_key(ds.file)
    path = ds.name or ""
    key = (file, path)
    generation = _generation.get(file, 0)
    n = _live.get(key, 0)
    _live[key] = n + 1
    if n == 0:
        _emit(file, path, OPEN, perf_counter())

    def gone(ref, key=key, generation=generation, handle=id(dsid)):
        entry = _ids.get(handle)
        if entry is not None and entry[0] is ref:
            del _ids[handle]
        _gone.append((key, generation, perf_counter()))  # deque.append: atomic, takes no lock

    _ids[id(dsid)] = (weakref.ref(dsid, gone), key, generation)


def path_of(dsid) -> str | None:
    """The name in its file of the dataset of handle ``dsid`` as read at its open (None: not seen)."""
    entry = _ids.get(id(dsid))
    return entry[1][1] if entry is not None and entry[0]() is dsid else None


def _traced_dataset_init(original):
    def __init__(self, *args, **kwargs):
        original(self, *args, **kwargs)
        if HUB.active:
            try:
                _dataset_opened(self)
            except Exception as exc:  # noqa: BLE001 - tracing must never raise into user code
                HUB.error(exc)

    return functools.update_wrapper(__init__, original)


def _traced_file_init(original):
    """A File made of a name or file object opens the file; one bound to an open FileID (``ds.file``) does not."""

    def __init__(self, *args, **kwargs):
        original(self, *args, **kwargs)
        name = args[0] if args else kwargs.get("name")
        if HUB.active and not isinstance(name, ObjectID):
            try:
                _settle()
                file = _file_keys[self.id.fileno] = _file_key(self)
                _emit(file, None, OPEN, perf_counter())
            except Exception as exc:  # noqa: BLE001
                HUB.error(exc)

    return functools.update_wrapper(__init__, original)


def _traced_file_close(original):
    def close(self):
        file = None
        if HUB.active:
            try:
                _settle()
                if self.id.valid:
                    file = _file_key(self)
            except Exception as exc:  # noqa: BLE001
                HUB.error(exc)
        t = perf_counter()
        result = original(self)
        if file is not None:
            try:
                _generation[file] = _generation.get(file, 0) + 1
                for key in [k for k in _live if k[0] == file]:
                    del _live[key]
                for fileno in [n for n, f in _file_keys.items() if f == file]:
                    del _file_keys[fileno]  # the number may go to another file
                _emit(file, None, CLOSE, t)
            except Exception as exc:  # noqa: BLE001
                HUB.error(exc)
        return result

    return functools.update_wrapper(close, original)


def patches() -> list[tuple[object, str, object]]:
    """(owner, attribute, replacement) for the tracer to install (through ``hooks_h5py.patches``)."""
    return [
        (_dataset.Dataset, "__init__", _traced_dataset_init(_dataset.Dataset.__init__)),
        (_files.File, "__init__", _traced_file_init(_files.File.__init__)),
        (_files.File, "close", _traced_file_close(_files.File.close)),
    ]


__all__ = ["path_of", "patches", "reset"]
