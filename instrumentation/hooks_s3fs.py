"""Hook on s3fs: every request it sends to an S3 store goes through ``S3FileSystem._call_s3`` (file reads,
``cat_file``/``cat_ranges`` that zarr's FsspecStore uses, ``pipe``, listings, multipart uploads), patched here.

A GET's response body is read after ``_call_s3`` returns: its time to first byte is the call's time, its end
when the body has been read (``storerequests``).
"""
from __future__ import annotations

import functools
import sys
from time import perf_counter

from .storerequests import LOG, byte_range, endpoint_host, record

_OPS = {"get_object": "GET", "put_object": "PUT", "upload_part": "PUT", "head_object": "HEAD",
        "list_objects_v2": "LIST", "list_objects": "LIST", "delete_object": "DELETE", "delete_objects": "DELETE",
        "copy_object": "COPY"}


class _TimedBody:
    """A response body whose reading ends the request's record (once, with the bytes read)."""

    def __init__(self, body, finish):
        self._body, self._finish, self._n = body, finish, 0

    async def read(self, *args, **kwargs):
        data = await self._body.read(*args, **kwargs)
        self._n += len(data)
        if not args and not kwargs or not data:
            self._done()
        return data

    def _done(self):
        if self._finish is not None:
            finish, self._finish = self._finish, None
            finish(self._n, perf_counter())

    def close(self):
        self._done()
        return self._body.close()

    def __del__(self):
        self._done()

    def __getattr__(self, name):
        return getattr(self._body, name)


def _host(fs) -> str:
    kw = getattr(fs, "client_kwargs", None) or {}
    return endpoint_host(getattr(fs, "endpoint_url", None) or kw.get("endpoint_url"))


def _traced_call(original):
    @functools.wraps(original)
    async def _call_s3(self, method, *akwarglist, **kwargs):
        await self.set_session()  # the client's creation (once per filesystem) is not the request's time
        timing = LOG.begin()
        op = _OPS.get(method, method)
        bucket, key = kwargs.get("Bucket", ""), kwargs.get("Key", kwargs.get("Prefix", ""))
        url = f"s3://{bucket}/{key}" if key else f"s3://{bucket}"
        start, end = byte_range(kwargs.get("Range"))
        body = kwargs.get("Body")
        sent = len(body) if isinstance(body, (bytes, bytearray, memoryview)) else 0
        try:
            out = await original(self, method, *akwarglist, **kwargs)
        except BaseException:
            record(op, url, _host(self), start, end, 0, (*timing, perf_counter(), perf_counter()))
            raise
        t_first = perf_counter()
        if isinstance(out, dict) and out.get("Body") is not None and method == "get_object":
            host = _host(self)
            out["Body"] = _TimedBody(out["Body"], lambda n, t: record(op, url, host, start, end, n,
                                                                       (*timing, t_first, t)))
        else:
            record(op, url, _host(self), start, end, sent, (*timing, t_first, t_first))
        return out

    return _call_s3


def patches() -> list[tuple[object, str, object]]:
    """(owner, attribute, replacement) for the tracer to install."""
    # hooked as s3fs.core finishes importing, while the s3fs package itself is still initializing
    cls = sys.modules["s3fs.core"].S3FileSystem
    return [(cls, "_call_s3", _traced_call(cls._call_s3))]


def reset() -> None:
    """The last tracer exited: close the request logs (a later tracer opens its own)."""
    LOG.reset()
