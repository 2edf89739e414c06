"""Loaded at start-up by a program that ``ioadvisor compare`` runs (this directory first on PYTHONPATH); also
loaded by ``ioadvisor run --substitute`` into the traced Python program's process (``install``).

``IOADVISOR_SUBSTITUTE`` holds ``SRC=DEST`` pairs (os.pathsep-separated): opens of SRC through h5py.File,
zarr.open* and netCDF4.Dataset (so xarray's engines too) are served from DEST. Both variants of a comparison
load the same hook (the map is empty for the original). The hook imports nothing: each library is patched when
the program itself imports it (an import finder), so neither side pays the import of a library its program
does not use. Importing h5py, zarr and netCDF4 here up front cost every run about 0.5 s, a fixed cost that pulled
the measured speed-up of short programs towards 1 (benchmarks/validation/apply.py --real, r03).

Only opens of existing data are served from DEST (read, or read-write: ``r``, ``r+``, ``a``). An open that
creates the file anew (``w``, ``w-``, ``x``) is the program making its own data: it goes to SRC as asked,
since serving it from DEST would overwrite the verified copy (the libhdf5 level agrees: it swaps H5Fopen,
not H5Fcreate).
"""
import os
import sys
import threading

VARIABLE = "IOADVISOR_SUBSTITUTE"
"""instrumentation.settings.SUBSTITUTE, spelled here: this hook runs in the program's interpreter at start-up,
where the project need not be importable (tests/instrumentation/test_settings.py checks the two agree)."""
CREATE_MODES = ("w", "w-", "x")
"""Open modes (h5py, zarr, netCDF4; netCDF4's ``ws`` is ``w``) that create the file anew."""


def _table() -> dict:
    pairs = [p.split("=", 1) for p in os.environ.get(VARIABLE, "").split(os.pathsep) if "=" in p]
    return {os.path.realpath(a): b for a, b in pairs}


def _swapper(table):
    def swap(path, mode=None):
        if mode is not None and str(mode).rstrip("s") in CREATE_MODES:
            return path
        if isinstance(path, (str, bytes, os.PathLike)):
            key = os.path.realpath(os.fsdecode(os.fspath(path)))
            return table.get(key, path)
        return path
    return swap


def _patch_h5py(h5py, swap) -> None:
    h5_init = h5py.File.__init__

    def file_init(self, name, *args, **kwargs):
        return h5_init(self, swap(name, args[0] if args else kwargs.get("mode")), *args, **kwargs)

    h5py.File.__init__ = file_init


def _patch_zarr(zarr, swap) -> None:
    def wrap(fn):
        def opener(store=None, *args, **kwargs):
            return fn(swap(store, kwargs.get("mode")), *args, **kwargs)
        return opener

    for name in ("open", "open_group", "open_array", "open_consolidated"):
        if hasattr(zarr, name):
            setattr(zarr, name, wrap(getattr(zarr, name)))


def _patch_netcdf4(netCDF4, swap) -> None:
    class Dataset(netCDF4.Dataset):
        def __init__(self, filename, *args, **kwargs):
            super().__init__(swap(filename, args[0] if args else kwargs.get("mode")), *args, **kwargs)

    netCDF4.Dataset = Dataset


PATCHES = {"h5py": _patch_h5py, "zarr": _patch_zarr, "netCDF4": _patch_netcdf4}


class _Finder:
    """Patches a library of PATCHES once the program's own import of it has run (a meta path finder that wraps
    the real loader; it finds nothing itself)."""

    def __init__(self, swap):
        self.swap = swap
        self.local = threading.local()  # this finder's own look-up, per thread

    def find_spec(self, fullname, path=None, target=None):
        if fullname not in PATCHES or getattr(self.local, "busy", False):
            return None
        from importlib.util import find_spec

        self.local.busy = True
        try:
            spec = find_spec(fullname)
        finally:
            self.local.busy = False
        if spec is None or spec.loader is None or not hasattr(spec.loader, "exec_module"):
            return None
        spec.loader = _Loader(spec.loader, fullname, self.swap)
        return spec


class _Loader:
    def __init__(self, loader, name, swap):
        self.loader, self.name, self.swap = loader, name, swap

    def create_module(self, spec):
        return self.loader.create_module(spec)

    def exec_module(self, module):
        module.__spec__.loader = self.loader  # the module keeps its real loader
        module.__loader__ = self.loader
        self.loader.exec_module(module)
        PATCHES[self.name](module, self.swap)


def install() -> None:
    """Serve opens of each SRC from DEST: libraries already imported are patched now, the others when the program
    imports them."""
    swap = _swapper(_table())
    for name, patch in PATCHES.items():
        if name in sys.modules:
            patch(sys.modules[name], swap)
    sys.meta_path.insert(0, _Finder(swap))


if VARIABLE in os.environ:
    install()
