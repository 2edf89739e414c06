"""Open a recorded array read-only: the one place that turns (file, path inside it, library) into an h5py
Dataset or a zarr Array.

    with open_array("run.h5", "/x", "hdf5") as opened:
        opened.array[0:10]

Every reader of the user's data goes through here: the cost model's data source (``advisor.costmodel``),
``verify``'s rebuild with the user's data, the idiom detection (``advisor.idiom``), the Darshan import's look
at a file still on disk (``instrumentation.darshan``) and ``ioadvisor compression`` (``open_target``, the
``FILE.h5:/dataset`` / ``STORE.zarr/array`` syntax). A path that is not there, a file of another format or a
member that is not an array raises ``InputError`` with one line naming the file and the dataset; callers that
go on without the data catch it. h5py and zarr are imported on the first open, not with this module.
"""
from __future__ import annotations

import os

from .errors import InputError

NOT_ON_DISK = ("memory://", "<")
"""File names the tracer records for arrays that live in no file (in-memory stores, ``<stdin>``-like names)."""


class OpenedArray:
    """An array opened read-only and the HDF5 file that holds it open; a context manager that closes it."""

    def __init__(self, array, library: str, file=None):
        self.array = array
        """h5py Dataset or zarr Array."""
        self.library = library
        self.file = file
        """The h5py File (None for zarr, which holds nothing open)."""

    def close(self) -> None:
        if self.file is not None:
            self.file.close()
            self.file = None

    def __enter__(self) -> "OpenedArray":
        return self

    def __exit__(self, *exc) -> None:
        self.close()


def _first_line(exc: BaseException) -> str:
    text = str(exc).strip()
    return text.splitlines()[0][:120] if text else type(exc).__name__


def array_name(file: str, path: str, library: str) -> str:
    """``run.h5:/x`` (HDF5), ``store.zarr/group/a`` or ``a.zarr`` (zarr): how error lines name the array."""
    inner = (path or "").strip("/")
    if library == "hdf5":
        return f"{file}:/{inner}"
    return f"{file}/{inner}" if inner else str(file)


def open_array(file: str | os.PathLike, path: str, library: str) -> OpenedArray:
    """The array ``path`` of the HDF5 file or Zarr store ``file``, read-only (``library``: "hdf5" | "zarr")."""
    file = os.fspath(file)
    if file.startswith(NOT_ON_DISK):
        raise InputError(f"{array_name(file, path, library)}: not a file on disk")
    if not os.path.exists(file):
        raise InputError(f"{file}: no such file")
    if library == "hdf5":
        return _open_hdf5(file, path)
    if library == "zarr":
        return _open_zarr(file, path)
    raise InputError(f"{file}: unknown library {library!r} (hdf5 or zarr)")


def open_recorded(ds) -> OpenedArray:
    """The traced array of a ``DatasetRecord`` as it is on disk now."""
    return open_array(ds.file, ds.path, ds.library)


def _open_hdf5(file: str, path: str) -> OpenedArray:
    import h5py

    try:
        f = h5py.File(file, "r")
    except Exception as exc:  # any library failure on a foreign or damaged file is bad input, said in a line
        raise InputError(f"{file}: not a readable HDF5 file ({_first_line(exc)})") from None
    try:
        obj = f.get(path or "/")
    except Exception as exc:  # noqa: BLE001 - a broken link or an unreadable object header
        f.close()
        raise InputError(f"{array_name(file, path, 'hdf5')}: not readable ({_first_line(exc)})") from None
    if not isinstance(obj, h5py.Dataset):
        f.close()
        raise InputError(f"{array_name(file, path, 'hdf5')}: no such dataset")
    return OpenedArray(obj, "hdf5", f)


def _open_zarr(store: str, path: str) -> OpenedArray:
    import zarr

    try:
        arr = zarr.open_array(store=store, path=path or None, mode="r")
    except Exception as exc:  # missing member, a group, not a store: one line, whatever zarr raised
        raise InputError(f"{array_name(store, path, 'zarr')}: not a readable Zarr array "
                         f"({_first_line(exc)})") from None
    return OpenedArray(arr, "zarr")


def open_target(target: str) -> OpenedArray:
    """``FILE.h5:/dataset`` or ``STORE.zarr[/array]`` as a user names it on the command line; the member may be
    left out when the file or store holds one array."""
    if ".zarr" in target:
        return _target_zarr(target)
    path, sep, name = target.rpartition(":")
    if not sep:
        path, name = target, ""
    if not os.path.exists(path):
        raise InputError(f"{path}: no such file")
    import h5py

    try:
        f = h5py.File(path, "r")
    except OSError as exc:
        raise InputError(f"{path}: not a readable HDF5 file ({exc})") from None
    if not name:
        names = []
        f.visititems(lambda n, o: names.append(n) if isinstance(o, h5py.Dataset) else None)
        if len(names) != 1:
            f.close()
            raise InputError(f"{path} holds {len(names)} datasets: name one, FILE.h5:/dataset")
        name = names[0]
    if name not in f or not isinstance(f[name], h5py.Dataset):
        f.close()
        raise InputError(f"{path}: no dataset {name!r}")
    return OpenedArray(f[name], "hdf5", f)


def _target_zarr(target: str) -> OpenedArray:
    store, _, inner = target.partition(".zarr")
    store += ".zarr"
    if not os.path.exists(store):
        raise InputError(f"{store}: no such Zarr store")
    import zarr

    name = inner.strip("/")
    try:
        node = zarr.open(store, mode="r")
    except (FileNotFoundError, zarr.errors.NodeTypeValidationError, ValueError) as exc:
        raise InputError(f"{store}: not a readable Zarr store ({str(exc).splitlines()[0][:120]})") from None
    if name and isinstance(node, zarr.Array):  # an array's [...] would take the name as a record field
        raise InputError(f"{target}: {store} is an array, it has no member {name!r}")
    if name:
        try:
            node = node[name]
        except KeyError:
            raise InputError(f"{target}: no such array in {store}") from None
    if not isinstance(node, zarr.Array):
        arrays = [a for _, a in node.arrays()]
        if len(arrays) != 1:
            raise InputError(f"{target} is a group with {len(arrays)} arrays: name one, STORE.zarr/ARRAY")
        node = arrays[0]
    return OpenedArray(node, "zarr")


__all__ = ["NOT_ON_DISK", "OpenedArray", "array_name", "open_array", "open_recorded", "open_target"]
