"""Loaded at start-up by a program that ``ioadvisor compare`` runs (this directory first on PYTHONPATH); also
loaded by ``ioadvisor run --substitute`` into the traced Python program's process (``install``).

``IOADVISOR_SUBSTITUTE`` holds ``SRC=DEST`` pairs (os.pathsep-separated): opens of SRC through h5py.File,
zarr.open* and netCDF4.Dataset (so xarray's engines too) are served from DEST. The libraries are imported
here in both variants of a comparison (the map is empty for the original), so both pay the same start-up.

Only opens of existing data are served from DEST (read, or read-write: ``r``, ``r+``, ``a``). An open that
creates the file anew (``w``, ``w-``, ``x``) is the program making its own data: it goes to SRC as asked,
since serving it from DEST would overwrite the verified copy (the libhdf5 level agrees: it swaps H5Fopen,
not H5Fcreate).
"""
import os

VARIABLE = "IOADVISOR_SUBSTITUTE"
"""instrumentation.settings.SUBSTITUTE, spelled here: this hook runs in the program's interpreter at start-up,
where the project need not be importable (tests/instrumentation/test_settings.py checks the two agree)."""
CREATE_MODES = ("w", "w-", "x")
"""Open modes (h5py, zarr, netCDF4; netCDF4's ``ws`` is ``w``) that create the file anew."""


def install() -> None:
    pairs = [p.split("=", 1) for p in os.environ.get(VARIABLE, "").split(os.pathsep) if "=" in p]
    table = {os.path.realpath(a): b for a, b in pairs}

    def swap(path, mode=None):
        if mode is not None and str(mode).rstrip("s") in CREATE_MODES:
            return path
        if isinstance(path, (str, bytes, os.PathLike)):
            key = os.path.realpath(os.fsdecode(os.fspath(path)))
            return table.get(key, path)
        return path

    try:
        import h5py

        h5_init = h5py.File.__init__

        def file_init(self, name, *args, **kwargs):
            return h5_init(self, swap(name, args[0] if args else kwargs.get("mode")), *args, **kwargs)

        h5py.File.__init__ = file_init
    except ImportError:
        pass
    try:
        import zarr

        def wrap(fn):
            def opener(store=None, *args, **kwargs):
                return fn(swap(store, kwargs.get("mode")), *args, **kwargs)
            return opener

        for name in ("open", "open_group", "open_array", "open_consolidated"):
            if hasattr(zarr, name):
                setattr(zarr, name, wrap(getattr(zarr, name)))
    except ImportError:
        pass
    try:
        import netCDF4

        class Dataset(netCDF4.Dataset):
            def __init__(self, filename, *args, **kwargs):
                super().__init__(swap(filename, args[0] if args else kwargs.get("mode")), *args, **kwargs)

        netCDF4.Dataset = Dataset
    except ImportError:
        pass


if VARIABLE in os.environ:
    install()
