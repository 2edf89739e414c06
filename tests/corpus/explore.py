"""A new user's generic exploring script: open each file, read every dataset/variable, print a line each.

    python explore.py h5py|h5netcdf|default FILE...

``h5py``: visit every dataset and read its first rows, then all of it; a dataset the
library cannot read (a filter missing here) is reported and skipped, as a user would.
Otherwise: ``xarray.open_dataset(FILE, engine=...)`` (``default``: xarray's choice)
and load every variable.
"""
import sys


def explore_h5py(path):
    import h5py

    def visit(name, obj):
        if not isinstance(obj, h5py.Dataset):
            return
        try:
            if obj.shape and obj.shape[0] > 4:
                obj[:4]
            value = obj[()]
            print(f"{path}:{name}: {getattr(value, 'shape', ())} {obj.dtype}")
        except Exception as exc:  # noqa: BLE001 - a user's explorer keeps going
            print(f"{path}:{name}: unreadable ({type(exc).__name__}: {str(exc).splitlines()[0]})")

    with h5py.File(path, "r") as f:
        f.visititems(visit)


def explore_xarray(path, engine):
    import xarray as xr

    with xr.open_dataset(path, engine=None if engine == "default" else engine) as ds:
        for name, var in ds.variables.items():
            print(f"{path}:{name}: {var.values.shape} {var.dtype}")


if __name__ == "__main__":
    engine, files = sys.argv[1], sys.argv[2:]
    for path in files:
        if engine == "h5py":
            explore_h5py(path)
        else:
            explore_xarray(path, engine)
