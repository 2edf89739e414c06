"""Where a traced array lives, named as its user would: a local path, or a URL for data reached through
fsspec (a Zarr ``FsspecStore``, an HDF5 file h5py reads from an fsspec file object).

A URL is the filesystem's protocol and the object's path (``s3://bucket/b.zarr``): fsspec keeps
credentials and endpoints in the filesystem's options, never in the path, so none reach a trace.
Computed once per dataset (the hooks cache their description), never per access.
"""
from __future__ import annotations

import os
import re
import sys

_FSSPEC_FILE = re.compile(r"<File-like object (\w+), (.*)>")
"""``repr`` of an fsspec file (``AbstractBufferedFile.__repr__``): h5py names a file-like object's file by it."""


def fsspec_url(fs, path: str) -> str:
    """``protocol://path`` of ``path`` on the fsspec filesystem ``fs``."""
    try:
        return str(fs.unstrip_protocol(path))
    except Exception:  # noqa: BLE001 - an fsspec older or stranger than expected: the first protocol name
        protocol = fs.protocol[0] if isinstance(fs.protocol, (tuple, list)) else fs.protocol
        return f"{protocol}://{path}"


def store_location(store) -> str:
    """A Zarr store's location: its root directory (``LocalStore``), its URL (``FsspecStore``), else its
    own text (``memory://...``)."""
    root = getattr(store, "root", None)
    if root is not None:
        return str(root)
    fs, path = getattr(store, "fs", None), getattr(store, "path", None)
    if fs is not None and isinstance(path, str):
        return fsspec_url(fs, path)
    inner = getattr(store, "store", None)  # zarr's ObjectStore over an obstore store (S3Store, GCSStore, ...)
    config = getattr(inner, "config", None)
    if isinstance(config, dict) and config.get("bucket"):
        scheme = {"S3Store": "s3", "GCSStore": "gs", "AzureStore": "az"}.get(type(inner).__name__, "store")
        prefix = str(getattr(inner, "prefix", None) or "").strip("/")
        return f"{scheme}://{config['bucket']}/{prefix}".rstrip("/")
    return str(store)


_URL_NAME = re.compile(r"(?:^|/)((?:https?|s3|s3a|gs|gcs|az|abfs)://[^/\s]+.*)$", re.IGNORECASE)
"""A URL given to libhdf5 as a file name: h5py's ros3 driver, netCDF-C's ``#mode=bytes`` (its HTTP driver); the
libhdf5 interposer prepends the working directory to it as to any relative name."""


def url_location(name: str) -> str | None:
    """The URL a file name holds (``http://host:port/bucket/key``), without what may carry credentials or is no
    part of the object's name: user and password, query (a presigned URL's signature), fragment (``#mode=bytes``);
    None when the name is no URL."""
    from urllib.parse import urlsplit

    m = _URL_NAME.search(name)
    if m is None:
        return None
    u = urlsplit(m.group(1))
    host = u.netloc.rsplit("@", 1)[-1]
    return f"{u.scheme.lower()}://{host}{u.path}"


def hdf5_location(filename: str, driver: str | None) -> str:
    """An HDF5 file's location from h5py's ``File.filename`` and ``driver``: an absolute path, a URL (``url_location``)
    for a file libhdf5 reads from a server (ros3, netCDF-C's ``#mode=bytes``), or for a file object
    (``driver == "fileobj"``, whose filename is the object's ``repr``) its fsspec URL when fsspec made it,
    else that text as it is (``<_io.BytesIO object ...>``: no path to resolve against the working directory)."""
    if driver != "fileobj":
        url = url_location(filename) if filename and "://" in filename else None
        return url or (os.path.abspath(filename) if filename else "")
    m = _FSSPEC_FILE.fullmatch(filename)
    fsspec = sys.modules.get("fsspec")
    if m is None or fsspec is None:
        return filename
    cls_name, path = m.groups()
    for protocol, cls in dict(fsspec.registry).items():  # implementations in use only: the file's class is one
        if cls.__name__ == cls_name:
            return f"{protocol}://{path}"
    # a filesystem made by its class (``s3fs.S3FileSystem(...)``) is not registered: fsspec's known list names it
    known = getattr(sys.modules.get("fsspec.registry"), "known_implementations", None) or {}
    for protocol, spec in known.items():
        if str(spec.get("class", "")).rsplit(".", 1)[-1] == cls_name:
            return f"{protocol}://{path}"
    return filename


__all__ = ["fsspec_url", "hdf5_location", "store_location", "url_location"]
