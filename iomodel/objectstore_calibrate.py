"""Fit the object-store model (``iomodel.objectstore``) on a store the user can write to.

One object is written under a scratch prefix (``<prefix>/ioadvisor-calibrate-<random>/``), read by ranged GETs
of several sizes with several requests in flight, exactly as zarr's FsspecStore issues them (s3fs coroutines
on fsspec's event loop, gathered), and the prefix is removed afterwards, also on error or interrupt.
``benchmarks/validation/objectstore.py`` validates the fit on the full grid with the same measurement.
"""
from __future__ import annotations

import asyncio
import math
import os
import time
from dataclasses import dataclass

from .objectstore import ObjectStoreModel, fit

MiB = 1 << 20
QUICK_SIZES = (64 << 10, 1 * MiB, 4 * MiB, 16 * MiB)
QUICK_INFLIGHT = (1, 4, 16)
FULL_SIZES = (64 << 10, 256 << 10, 1 * MiB, 4 * MiB, 16 * MiB, 64 * MiB)
FULL_INFLIGHT = (1, 2, 4, 8, 16, 32)
BOTOCORE_POOL = 10
"""botocore's ``max_pool_connections`` default (``AioConfig``): s3fs's requests in flight at once, whatever asks."""
MAX_BYTES_IN_FLIGHT = 512 * MiB
"""A point whose requests in flight would hold more than this in memory at once is left out (64 MiB x 32)."""


@dataclass(frozen=True)
class StoreTarget:
    """Where to measure: ``url`` (``s3://bucket/prefix``) and the fsspec storage options to reach it."""

    url: str
    storage_options: dict

    def filesystem(self):
        import fsspec

        protocol = self.url.split("://", 1)[0]
        return fsspec.filesystem(protocol, asynchronous=False, skip_instance_cache=True, **self.storage_options)

    @property
    def host(self) -> str:
        from instrumentation.storerequests import endpoint_host

        kw = self.storage_options.get("client_kwargs") or {}
        return endpoint_host(self.storage_options.get("endpoint_url") or kw.get("endpoint_url"))


def connection_pool(url: str, storage_options: dict) -> int | None:
    """The client's connection pool, the requests in flight beyond which throughput cannot grow: s3fs's botocore
    ``max_pool_connections`` (``config_kwargs``, default 10); None for other protocols (then it is fitted).
    Read from the configuration, not fitted: the quick grid (1, 4, 16 in flight) cannot tell 4, 10 and 16 apart when
    first bytes are short (``benchmarks/validation/objectstore.py validate`` fitted 4 and 16 for botocore's 10)."""
    if url.split("://", 1)[0] not in ("s3", "s3a"):
        return None
    pool = (storage_options.get("config_kwargs") or {}).get("max_pool_connections", BOTOCORE_POOL)
    return pool if isinstance(pool, int) and not isinstance(pool, bool) and pool >= 1 else None


def grid(sizes=FULL_SIZES, inflight=FULL_INFLIGHT, budget: int = 256 * MiB) -> list[tuple[int, int, int]]:
    """(n, size, inflight) points: ``n`` requests, enough waves to average, at most ``budget`` bytes per point."""
    out = []
    for s in sizes:
        for k in inflight:
            if k * s > MAX_BYTES_IN_FLIGHT:
                continue
            n = max(k, min(8 * k, budget // s))
            out.append((int(n), int(s), int(k)))
    return out


def measure_point(fs, path: str, object_bytes: int, n: int, size: int, inflight: int) -> float:
    """Seconds of ``n`` ranged GETs of ``size`` bytes of ``path``, at most ``inflight`` in flight."""
    from fsspec.asyn import sync

    span = max(object_bytes - size, 1)
    starts = [(i * 7919 * size) % span for i in range(n)]  # spread over the object, not one cached range

    async def run():
        sem = asyncio.Semaphore(inflight)

        async def one(start):
            async with sem:
                data = await fs._cat_file(path, start=start, end=start + size)
                if len(data) != size:
                    raise OSError(f"short read from {path}: {len(data)} of {size} bytes")

        t = time.perf_counter()
        await asyncio.gather(*(one(s) for s in starts))
        return time.perf_counter() - t

    return sync(fs.loop, run)


class Scratch:
    """A scratch prefix on the store with one object of ``nbytes`` random bytes (none when 0); removed on exit.
    ``kind`` names it (``<prefix>/ioadvisor-<kind>-<random>``)."""

    def __init__(self, target: StoreTarget, nbytes: int, kind: str = "calibrate"):
        self.fs = target.filesystem()
        base = target.url.split("://", 1)[1].rstrip("/")
        self.prefix = f"{base}/ioadvisor-{kind}-{os.urandom(4).hex()}"
        self.path = f"{self.prefix}/object"
        self.nbytes = nbytes

    def __enter__(self) -> "Scratch":
        bucket = self.prefix.split("/", 1)[0]
        if not self.fs.exists(bucket):
            self.fs.mkdir(bucket)
        if self.nbytes:
            self.fs.pipe_file(self.path, os.urandom(self.nbytes))
        return self

    def __exit__(self, *exc) -> None:
        remove_prefix(self.fs, self.prefix)


def remove_prefix(fs, prefix: str) -> None:
    """Remove every object under ``prefix`` (``bucket/key``), and the directory entries a filer-backed store
    (SeaweedFS) keeps for each prefix, deepest first."""
    try:
        dirs = [p for p, info in fs.find(prefix, withdirs=True, detail=True).items()
                if info.get("type") == "directory"]
    except (FileNotFoundError, OSError):
        dirs = []
    try:
        fs.rm(prefix, recursive=True)
    except FileNotFoundError:
        pass
    if hasattr(fs, "call_s3"):  # a filer-backed store (SeaweedFS) keeps each prefix as a directory entry
        bucket = prefix.partition("/")[0]
        for d in sorted(set(dirs) | {prefix}, key=len, reverse=True):  # deepest first
            try:
                fs.call_s3("delete_object", Bucket=bucket, Key=d.partition("/")[2].rstrip("/") + "/")
            except OSError:
                pass
    fs.invalidate_cache()


def calibrate_store(target: StoreTarget, *, quick: bool = True, repeat: int = 1,
                    progress=None) -> tuple[ObjectStoreModel, list[tuple[int, int, int, float]]]:
    """Measure ``target`` on the quick (or full) grid and fit its model; also the measured points."""
    points = grid(QUICK_SIZES, QUICK_INFLIGHT) if quick else grid()
    largest = max(s for _, s, _ in points)
    measured = []
    with Scratch(target, max(2 * largest, 32 * MiB)) as scratch:
        for s in sorted({s for _, s, _ in points}):  # connections open, the object's ranges read once: the first
            measure_point(scratch.fs, scratch.path, scratch.nbytes, 16, s, 16)  # pass after a write runs slow
        for r in range(repeat):
            for i, (n, s, k) in enumerate(points):
                t = measure_point(scratch.fs, scratch.path, scratch.nbytes, n, s, k)
                measured.append((n, s, k, t))
                if progress is not None:
                    progress(r * len(points) + i + 1, repeat * len(points))
        pool = connection_pool(target.url, target.storage_options)
        pools = (pool,) if pool else (2, 4, 8, 10, 16, 32, 64)
        zarr_call = measure_zarr_call(target, scratch, fit(measured, pools))
        reference_call = measure_reference_call(target, scratch, fit(measured, pools))
    model = fit(measured, pools)
    model = ObjectStoreModel(**{**model.get_config(), "zarr_call": zarr_call, "reference_call": reference_call,
                                "fitted": {
        **model.fitted, "host": target.host, "grid": "quick" if quick else "full",
        "sizes": sorted({s for _, s, _ in points}), "inflight": sorted({k for _, _, k in points}),
        "pool": "client configuration" if pool else "fitted"}})
    return model, measured


def measure_zarr_call(target: StoreTarget, scratch: Scratch, model: ObjectStoreModel, calls: int = 16) -> float:
    """Seconds a zarr read call of one chunk through ``FsspecStore`` takes beyond the model's price of its requests
    (a HEAD and a GET: s3fs asks a whole object's size first), median of ``calls``; 0 without zarr."""
    try:
        import numpy as np
        import zarr
    except ImportError:
        return 0.0
    url = f"{target.url.split('://', 1)[0]}://{scratch.prefix}/zarr-call.zarr"
    z = zarr.create_array(zarr.storage.FsspecStore.from_url(url, storage_options=target.storage_options),
                          shape=(calls * 1024,), chunks=(1024,), dtype="f8")
    z[:] = np.arange(calls * 1024.0)
    return max(0.0, _median_chunk_read(z, calls) - model.seconds(2, 8192 / 2, 1))


def _median_chunk_read(array, calls: int) -> float:
    """Median seconds of reading each of the first ``calls`` 1024-element chunks of a 1-d zarr ``array``, once the
    client and its connections exist (one untimed read first)."""
    array[:1024]
    times = []
    for i in range(calls):
        t = time.perf_counter()
        array[i * 1024:(i + 1) * 1024]
        times.append(time.perf_counter() - t)
    return sorted(times)[len(times) // 2]


def measure_reference_call(target: StoreTarget, scratch: Scratch, model: ObjectStoreModel, calls: int = 16) -> float:
    """Seconds a zarr read call of one chunk through a virtual Zarr reference (``reference://``: each chunk a byte
    range of one object, as kerchunk maps an HDF5 file's chunks) takes beyond the model's price of its ranged GET,
    median of ``calls``; 0 without zarr. The ranges are the scratch object's (no HDF5 file nor kerchunk needed)."""
    try:
        import json

        import zarr
    except ImportError:
        return 0.0
    protocol = target.url.split("://", 1)[0]
    chunk = 8192
    refs = {".zgroup": json.dumps({"zarr_format": 2}), "x/.zattrs": "{}",
            "x/.zarray": json.dumps({"shape": [calls * 1024], "chunks": [1024], "dtype": "<f8", "compressor": None,
                                     "filters": None, "fill_value": None, "order": "C", "zarr_format": 2})}
    refs.update({f"x/{i}": [f"{protocol}://{scratch.path}", i * chunk, chunk] for i in range(calls)})
    opts = dict(fo=refs, remote_protocol=protocol, remote_options={**target.storage_options, "asynchronous": True})
    a = zarr.open_group(zarr.storage.FsspecStore.from_url("reference://", storage_options=opts, read_only=True),
                        mode="r", zarr_format=2)["x"]
    return max(0.0, _median_chunk_read(a, calls) - model.seconds(1, chunk, 1))


def median_abs_error(model: ObjectStoreModel, points) -> float:
    """Median |predicted / measured - 1| over ``(n, size, inflight, seconds)`` points."""
    errs = sorted(abs(model.seconds(n, s, k) / t - 1) for n, s, k, t in points)
    m = len(errs)
    return math.nan if not m else (errs[m // 2] if m % 2 else (errs[m // 2 - 1] + errs[m // 2]) / 2)


__all__ = ["FULL_INFLIGHT", "FULL_SIZES", "Scratch", "StoreTarget", "calibrate_store", "connection_pool", "grid",
           "measure_point", "measure_reference_call", "measure_zarr_call", "median_abs_error", "remove_prefix"]
