"""Layouts of ``advisor.objectstore`` written to an object store and opened there (issue #35: verify on the store).

A layout is built locally with the library itself (``iomodel.replay.build``: the chunks, shards and the filters
or codec asked for; a paged HDF5 file is an ``H5Ocopy`` of it into a file made with ``fs_strategy="page"``) and its
files are uploaded under the URL, many PUTs in flight (fsspec's batched ``put``); so the objects on the store are
exactly those the library writes (Zarr's chunk keys, one HDF5 file). It is opened the way the advice's code reads it:
Zarr through ``FsspecStore``, HDF5 through an fsspec file object with the layout's block size and cache type (and a
page buffer when paged).

Every opening makes a new client (``skip_instance_cache``): no fsspec file cache, block cache or listing survives
from one replay to the next.
"""
from __future__ import annotations

import contextlib
import tempfile
from pathlib import Path
from typing import Sequence

import numpy as np

from advisor.objectstore import StoreLayout
from instrumentation.records import Filter
from iomodel.replay import DATASET_NAME, LayoutSpec, build


def protocol_of(url: str) -> str:
    return url.split("://", 1)[0].lower()


def store_filesystem(url: str, storage_options: dict | None, *, asynchronous: bool = False):
    """A new fsspec filesystem of ``url``'s protocol with the user's storage options (never a cached instance)."""
    import fsspec

    return fsspec.filesystem(protocol_of(url), skip_instance_cache=True, asynchronous=asynchronous,
                             **(storage_options or {}))


def strip_protocol(url: str) -> str:
    return url.split("://", 1)[1].rstrip("/")


def build_local(layout: StoreLayout, data: np.ndarray, workdir: Path, *, filters: Sequence[Filter] = (),
                create_kwargs: dict | None = None) -> Path:
    """The layout's file (HDF5) or directory (Zarr, an array at its root) under ``workdir``, holding ``data``."""
    chunks = layout.chunks if layout.chunks is not None or layout.library == "hdf5" else tuple(data.shape)
    spec = LayoutSpec(layout.library, tuple(int(s) for s in data.shape), np.dtype(data.dtype).str,
                      None if chunks is None else tuple(int(c) for c in chunks),
                      None if layout.shards is None else tuple(int(s) for s in layout.shards), filters=tuple(filters),
                      libver=("latest", "latest") if layout.paged else None)
    path = build(spec, workdir, fill=True, data=data, create_kwargs=create_kwargs)
    if not layout.paged:
        return path
    import h5py

    paged = workdir / "paged.h5"  # the same dataset (chunks, filters) copied into a file with paged aggregation
    with h5py.File(path, "r") as src, h5py.File(paged, "w", libver="latest", fs_strategy="page",
                                                fs_page_size=int(layout.page_size)) as dst:
        src.copy(src[DATASET_NAME], dst, DATASET_NAME)
    path.unlink()
    return paged


def upload(local: Path, url: str, fs) -> int:
    """Put ``local`` (a file, or a directory's files under their relative keys) at ``url``; its bytes."""
    dest = strip_protocol(url)
    if local.is_file():
        fs.put_file(str(local), dest)
        return local.stat().st_size
    files = sorted(p for p in local.rglob("*") if p.is_file())
    fs.put([str(p) for p in files], [f"{dest}/{p.relative_to(local).as_posix()}" for p in files])
    return sum(p.stat().st_size for p in files)


def build_on_store(layout: StoreLayout, data: np.ndarray, url: str, storage_options: dict | None, *,
                   filters: Sequence[Filter] = (), create_kwargs: dict | None = None) -> int:
    """Write ``data`` at ``url`` in ``layout``; the stored bytes."""
    fs = store_filesystem(url, storage_options)
    try:
        with tempfile.TemporaryDirectory(prefix="ioadvisor-store-build-") as tmp:
            local = build_local(layout, data, Path(tmp), filters=filters, create_kwargs=create_kwargs)
            return upload(local, url, fs)
    finally:
        close_client(fs)


class StoreArray:
    """One layout opened on the store as the advice's code reads it; ``array`` is the h5py or zarr array."""

    def __init__(self, layout: StoreLayout, url: str, storage_options: dict | None, writable: bool = False):
        self.layout = layout
        self.writable = writable
        self.url = url
        self.storage_options = dict(storage_options or {})
        self.array = None
        self._closers: list = []
        self._client = None

    def warm_client(self):
        """A new client with a connection open (one HEAD of the object or of the Zarr metadata), not timed: the
        traced program's client was running too. Returns what ``open`` uses."""
        if self.layout.library == "zarr":
            import zarr

            store = zarr.storage.FsspecStore.from_url(
                self.url, storage_options={**self.storage_options, "skip_instance_cache": True},
                read_only=not self.writable)
            from zarr.core.sync import sync  # the async client runs on zarr's event loop

            sync(store.exists("zarr.json"))
            self._client = store
            return store
        fs = store_filesystem(self.url, self.storage_options)
        fs.info(strip_protocol(self.url))
        fs.invalidate_cache()
        self._client = fs
        return fs

    def open(self, client) -> "StoreArray":
        """Open the array (timed by the caller: the metadata requests are part of the replay)."""
        if self.layout.library == "zarr":
            import zarr

            self.array = zarr.open_array(store=client, mode="r+" if self.writable else "r")
            return self
        import h5py

        fh = client.open(strip_protocol(self.url), "rb", block_size=int(self.layout.block_size),
                         cache_type=self.layout.cache_type)
        kw = dict(page_buf_size=4 * int(self.layout.page_size)) if self.layout.paged else {}
        f = h5py.File(fh, "r", **kw)
        self._closers = [f, fh]
        self.array = f[DATASET_NAME]
        return self

    def close(self) -> None:
        self.array = None
        for c in self._closers:
            c.close()
        self._closers = []
        if self._client is not None:
            close_client(getattr(self._client, "fs", self._client))
            self._client = None


def close_client(fs) -> None:
    """Close the HTTP session of an s3fs client made for one replay (else aiohttp warns of it at exit, and its
    connections stay open until the garbage collector finds it)."""
    creator = getattr(fs, "_s3creator", None)
    if creator is None:
        return
    if getattr(fs, "asynchronous", False):
        from zarr.core.sync import sync

        sync(creator.__aexit__(None, None, None))
    else:
        fs.close_session(fs.loop, creator)
    fs._s3creator = None


@contextlib.contextmanager
def user_array(url: str, path: str, library: str, storage_options: dict | None):
    """The user's array at ``url`` (``path`` inside it), opened read-only on the store where it is (its own client,
    closed on exit); OSError/ValueError/KeyError when it cannot be opened."""
    if library == "zarr":
        import zarr

        store = zarr.storage.FsspecStore.from_url(url, storage_options={**(storage_options or {}),
                                                                        "skip_instance_cache": True}, read_only=True)
        try:
            yield zarr.open_array(store=store, path=path or None, mode="r")
        finally:
            close_client(store.fs)
        return
    import h5py

    fs = store_filesystem(url, storage_options)
    try:
        with fs.open(strip_protocol(url), "rb", block_size=8 << 20) as fh, h5py.File(fh, "r") as f:
            obj = f[path or "/"]
            if not isinstance(obj, h5py.Dataset):
                raise KeyError(f"{path}: not a dataset")
            yield obj
    finally:
        close_client(fs)


def read_store_array(url: str, path: str, library: str, storage_options: dict | None) -> np.ndarray:
    """The user's array at ``url`` (``path`` inside it), read whole from the store."""
    with user_array(url, path, library, storage_options) as arr:
        return np.asarray(arr[...])


def default_scratch_parent(url: str) -> str:
    """Where a scratch prefix goes by default: the data's own bucket (same store, same credentials)."""
    return f"{protocol_of(url)}://{strip_protocol(url).split('/', 1)[0]}"


__all__ = ["StoreArray", "build_local", "build_on_store", "default_scratch_parent", "protocol_of",
           "read_store_array", "store_filesystem", "strip_protocol", "upload", "user_array"]
