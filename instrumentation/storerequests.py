"""Requests that reach an object store, recorded beside a trace (``<trace>.requests.jsonl``).

The array hooks see what a program asks of an array; on an object store what costs is the requests below it:
each has a time to first byte of milliseconds, and how many are in flight sets the throughput. The client
hooks (``hooks_s3fs``: every call s3fs makes, ``S3FileSystem._call_s3``; ``hooks_obstore``: obstore's
``get``/``get_range(s)``/``put``/``head``/``delete``) record one ``StoreRequest`` each into the log of the
active tracer's trace. One JSON line per request, appended with ``O_APPEND`` so that every process of a run
(followed children, ranks) adds to the same file whole lines; it stays beside the trace (a merge rewrites the
trace itself). Never a credential: only the operation, the object's URL, the endpoint's host and the sizes.
"""
from __future__ import annotations

import json
import os
import threading
from dataclasses import asdict, dataclass
from pathlib import Path
from time import perf_counter
from urllib.parse import urlsplit

import numpy as np

from instrumentation.errors import InputError

SUFFIX = ".requests.jsonl"
"""The request log of trace ``T`` is ``T`` + this suffix."""

FIELDS = ("op", "url", "host", "start", "end", "nbytes", "t0", "ttfb", "dt", "inflight", "pid")


@dataclass(frozen=True)
class StoreRequest:
    """One request to an object store (times in seconds from the trace's origin)."""

    op: str  # GET, PUT, HEAD, LIST, DELETE, or the client's method name
    url: str  # s3://bucket/key (no credentials, no endpoint)
    host: str  # the endpoint's host[:port]; "" for the provider's default
    start: int  # first byte of a ranged GET, else 0
    end: int  # one past the last byte of a ranged GET, -1 for a whole object
    nbytes: int  # bytes moved (the body of a GET or PUT)
    t0: float
    ttfb: float  # request sent to first response byte (headers)
    dt: float  # request sent to the last byte
    inflight: int  # requests of this process to any store in flight when it started, itself included
    pid: int

    def to_json(self) -> str:
        return json.dumps({"t": "q", **asdict(self)}, separators=(",", ":"))

    @classmethod
    def from_config(cls, obj: dict) -> "StoreRequest":
        return cls(**{k: obj[k] for k in FIELDS})


def log_path(trace: str | os.PathLike) -> Path:
    """Where the request log of ``trace`` is."""
    trace = Path(trace)
    return trace.with_name(trace.name + SUFFIX)


def endpoint_host(url: str | None) -> str:
    """``host[:port]`` of an endpoint URL, without any user or password it may carry."""
    if not url:
        return ""
    parts = urlsplit(url if "//" in url else f"//{url}")
    host = parts.hostname or ""
    return f"{host}:{parts.port}" if parts.port else host


def byte_range(header: str | None) -> tuple[int, int]:
    """(start, end) of an HTTP ``Range: bytes=a-b`` (b inclusive), or (0, -1) for none."""
    if not header or not header.startswith("bytes="):
        return 0, -1
    a, _, b = header[6:].partition("-")
    try:
        return int(a or 0), (int(b) + 1 if b else -1)
    except ValueError:
        return 0, -1


class _Log:
    """The process's open request logs, by trace path, and its in-flight count."""

    def __init__(self):
        self.lock = threading.Lock()
        self.inflight = 0
        self._fds: dict[Path, int] = {}

    def begin(self) -> tuple[float, int]:
        with self.lock:
            self.inflight += 1
            return perf_counter(), self.inflight

    def end(self, req: dict) -> None:
        """Close one request (``req``: StoreRequest's fields but ``inflight``/``pid``, times on perf_counter)."""
        from .tracer import HUB

        with self.lock:
            self.inflight -= 1
        for tr in HUB.active[:1]:  # the outermost tracer: the run's trace
            try:
                path, origin = tr.trace_root
                if path is None:
                    continue
                rec = StoreRequest(**{**req, "t0": req["t0"] - origin, "pid": os.getpid()})
                self._write(log_path(path), rec.to_json() + "\n")
            except Exception:  # noqa: BLE001 - recording must never change what the program does
                pass

    def _write(self, path: Path, line: str) -> None:
        fd = self._fds.get(path)
        if fd is None:
            with self.lock:
                fd = self._fds.get(path)
                if fd is None:
                    fd = self._fds[path] = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_APPEND, 0o644)
        os.write(fd, line.encode())

    def reset(self) -> None:
        with self.lock:
            for fd in self._fds.values():
                os.close(fd)
            self._fds.clear()


LOG = _Log()


def record(op: str, url: str, host: str, start: int, end: int, nbytes: int, timing: tuple) -> None:
    """Record a finished request; ``timing`` is (t0, inflight) from ``LOG.begin()`` then t_first, t_last."""
    t0, inflight, t_first, t_last = timing
    LOG.end(dict(op=op, url=url, host=host, start=start, end=end, nbytes=int(nbytes), t0=t0,
                 ttfb=t_first - t0, dt=t_last - t0, inflight=inflight))


def load_requests(trace: str | os.PathLike) -> dict[str, np.ndarray]:
    """The requests recorded beside ``trace`` as columns (``FIELDS``), in time order; empty columns if none.

    A malformed line is an error naming the file and line (``ValueError``)."""
    path = log_path(trace)
    rows: list[StoreRequest] = []
    if path.exists():
        for i, line in enumerate(path.read_text().splitlines(), start=1):
            if not line.strip():
                continue
            try:
                obj = json.loads(line)
                rows.append(StoreRequest.from_config(obj))
            except (ValueError, KeyError, TypeError) as exc:
                raise InputError(f"{path}:{i}: not a store request record ({type(exc).__name__}: {exc})") from None
    rows.sort(key=lambda r: r.t0)
    cols = {}
    for name in FIELDS:
        values = [getattr(r, name) for r in rows]
        kind = {"op": object, "url": object, "host": object, "t0": float, "ttfb": float, "dt": float}.get(name, np.int64)
        cols[name] = np.array(values, dtype=kind)
    return cols


__all__ = ["FIELDS", "LOG", "SUFFIX", "StoreRequest", "byte_range", "endpoint_host", "load_requests", "log_path",
           "record"]
