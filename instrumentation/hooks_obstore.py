"""Hooks on obstore (zarr's ``ObjectStore`` calls ``obstore.get_async`` etc. by attribute at call time): each
request it sends is recorded (``storerequests``). A GET's record ends when its result is returned (obstore
reads the body on demand: ``bytes_async`` follows), with the object's size as its bytes."""
from __future__ import annotations

import functools
from time import perf_counter

import obstore

from .storerequests import LOG, endpoint_host, record


def _where(store, path) -> tuple[str, str]:
    """(URL, endpoint host) of ``path`` on an obstore store (its bucket and prefix; never its credentials)."""
    config = getattr(store, "config", None) or {}
    bucket = config.get("bucket") or config.get("container_name") or ""
    prefix = str(getattr(store, "prefix", None) or "").strip("/")
    scheme = {"S3Store": "s3", "GCSStore": "gs", "AzureStore": "az", "LocalStore": "file",
              "HTTPStore": "http"}.get(type(store).__name__, "store")
    key = "/".join(p for p in (prefix, str(path).lstrip("/")) if p)
    return f"{scheme}://{bucket}/{key}", endpoint_host(config.get("endpoint") or config.get("url"))


def _size(out, start, end) -> int:
    if isinstance(out, (bytes, bytearray, memoryview)) or hasattr(out, "__len__") and not hasattr(out, "meta"):
        try:
            return len(out)
        except TypeError:
            pass
    meta = getattr(out, "meta", None)
    if meta is not None:
        return int(meta.get("size", 0)) if end < 0 else max(end - start, 0)
    return max(end - start, 0)


def _traced(op, original, ranged: bool = False):
    @functools.wraps(original)
    async def call(store, path, *args, **kwargs):
        timing = LOG.begin()
        url, host = _where(store, path)
        start, end = 0, -1
        if ranged:
            start = kwargs.get("start", args[0] if args else 0)
            end = kwargs.get("end", args[1] if len(args) > 1 else -1)
            if end in (None, -1) and kwargs.get("length") is not None:
                end = start + kwargs["length"]
        try:
            out = await original(store, path, *args, **kwargs)
        except BaseException:
            t = perf_counter()
            record(op, url, host, start, end, 0, (*timing, t, t))
            raise
        t = perf_counter()
        if op == "PUT":
            buf = args[0] if args else kwargs.get("file")
            n = len(buf) if hasattr(buf, "__len__") else 0
        elif op == "GET":
            n = _size(out, start, end)
        else:
            n = 0
        record(op, url, host, start, end if end is not None else -1, n, (*timing, t, t))
        return out

    return call


def patches() -> list[tuple[object, str, object]]:
    """(owner, attribute, replacement) for the tracer to install."""
    out = [(obstore, "get_async", _traced("GET", obstore.get_async)),
           (obstore, "get_range_async", _traced("GET", obstore.get_range_async, ranged=True)),
           (obstore, "put_async", _traced("PUT", obstore.put_async)),
           (obstore, "head_async", _traced("HEAD", obstore.head_async)),
           (obstore, "delete_async", _traced("DELETE", obstore.delete_async))]
    return out


def reset() -> None:
    """The last tracer exited: close the request logs (a later tracer opens its own)."""
    LOG.reset()
