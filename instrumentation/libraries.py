"""Which shared libraries this process has loaded: the libhdf5 copies other than h5py's (netCDF4's, PyTables'),
whose calls only the interposer sees (instrumentation/interpose.py)."""
from __future__ import annotations

import ctypes
import os


class _DlPhdrInfo(ctypes.Structure):
    """The head of glibc's ``struct dl_phdr_info``, up to its load counters."""

    _fields_ = [("addr", ctypes.c_void_p), ("name", ctypes.c_char_p), ("phdr", ctypes.c_void_p),
                ("phnum", ctypes.c_uint16), ("adds", ctypes.c_ulonglong), ("subs", ctypes.c_ulonglong)]


_DL_CALLBACK = ctypes.CFUNCTYPE(ctypes.c_int, ctypes.POINTER(_DlPhdrInfo), ctypes.c_size_t, ctypes.c_void_p)


def _dl_walker():
    """A function ``walk(with_names=False)`` returning glibc's (libraries ever loaded, ever unloaded) in about
    1 µs and, ``with_names``, the loaded objects' names too (about 0.2 ms: /proc/self/maps costs 1-3 ms); None
    without it."""
    try:
        iterate = ctypes.CDLL(None).dl_iterate_phdr
    except (OSError, AttributeError):
        return None
    iterate.argtypes = [_DL_CALLBACK, ctypes.c_void_p]
    counters: list = []
    names: list = []
    want = [False]

    def visit(info, size, _data):
        if not counters:  # the counters are the same in every entry; valid only when the C library's struct has them
            counters.append((info.contents.adds, info.contents.subs)
                            if size >= _DlPhdrInfo.subs.offset + _DlPhdrInfo.subs.size else None)
        if not want[0]:
            return 1
        names.append(info.contents.name)
        return 0

    callback = _DL_CALLBACK(visit)

    def walk(with_names: bool = False):
        # no lock (one held by another thread at a fork would hang the child): the counters are the process's,
        # so threads racing here read the same values, or none (then the caller reads the maps)
        counters.clear()
        names.clear()
        want[0] = with_names
        iterate(callback, None)
        loads = next(iter(counters), None)
        return (loads, [os.fsdecode(n) for n in names if n]) if with_names else loads

    return walk if walk() is not None else None


_walker: dict = {}  # "walk": _dl_walker()'s, made at the first use (importing this module calls nothing)
_mapped: dict = {}  # the last listing of the loaded libraries and the load counters then (a forked child inherits it)


def _dl_walk():
    """The walker of the loaded libraries (``_dl_walker``), or None."""
    if "walk" not in _walker:
        _walker["walk"] = _dl_walker()
    return _walker["walk"]


def _loaded_files() -> tuple[object, set[str]]:
    """(load counters or None, paths of the loaded shared objects)."""
    walk = _dl_walk()
    if walk is not None:
        loads, names = walk(True)
        if loads is not None:
            return loads, set(names)
    with open("/proc/self/maps") as fh:
        return None, {fields[5].strip() for fields in (line.split(None, 5) for line in fh) if len(fields) == 6}


def mapped_libhdf5() -> frozenset[str]:
    """The libhdf5 files this process has loaded, other than h5py's own (its calls are hooked above)."""
    # listed again only when a library was loaded or unloaded since (every tracer's start and exit, every forked
    # worker's, asks)
    walk = _dl_walk()
    loads = walk() if walk is not None else None
    if loads is not None and _mapped.get("loads") == loads:
        return _mapped["files"]
    try:
        loads, files = _loaded_files()
    except OSError:
        return frozenset()
    found = frozenset(os.path.realpath(f) for f in files
                      if os.path.basename(f).startswith("libhdf5") and ".so" in f
                      and not os.path.basename(f).startswith(("libhdf5_hl", "libhdf5_cpp", "libhdf5_fortran"))
                      and "/h5py.libs/" not in f and "/h5py/" not in f)
    _mapped.update(loads=loads, files=found)
    return found


__all__ = ["mapped_libhdf5"]
