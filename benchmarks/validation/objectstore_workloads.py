"""The four object-store workloads of issue #35 and their regret/claims (``benchmarks/validation/objectstore.py workloads``).

Each workload's data is written to SeaweedFS in its starting layout, the workload is traced there through the
delaying proxy (``advisor.trace``; the request log beside the trace), ``advisor.objectstore`` ranks layouts on
the same store, and the current layout and the top three are built on the store and run for real, latencies
interleaved, median of ``repeat`` runs. Regret = measured time of the first-ranked / best measured among those
tried; claim = predicted speed-up over the current layout / measured speed-up.
"""
from __future__ import annotations

import math
import os
import statistics
import sys
import tempfile
import time
from pathlib import Path

import numpy as np

from advisor.objectstore_reference import REFERENCE, SUFFIX, build_reference, open_reference

MiB = 2**20


def store_fs(opts):
    import s3fs

    return s3fs.S3FileSystem(**opts, skip_instance_cache=True)


# ------------------------------------------------------------------------------------ data in a layout

def build(layout, data: np.ndarray, url: str, opts: dict, name: str = "x", dims=None) -> None:
    """Write ``data`` on the store at ``url`` in ``layout`` (Zarr: an array ``name`` in a group with consolidated
    metadata; HDF5: a file written locally, paged if asked, then uploaded). With ``dims`` (names of the dimensions)
    the HDF5 file is netCDF-4 (written by h5netcdf) and the Zarr array carries them, for xarray."""
    fs = store_fs(opts)
    if fs.exists(url):
        fs.rm(url, recursive=True)
    if layout.library == REFERENCE:  # the HDF5 file in the same chunks, and the reference beside it
        from dataclasses import replace

        build(replace(layout, library="hdf5"), data, url, opts, name, dims)
        build_reference(url, opts)
        return
    if layout.library == "zarr":
        import zarr

        group = zarr.open_group(zarr.storage.FsspecStore.from_url(url, storage_options=opts), mode="w")
        kw = dict(shards=layout.shards) if layout.shards else {}
        if dims:
            kw["dimension_names"] = dims
        a = group.create_array(name, shape=data.shape, dtype=data.dtype, chunks=layout.chunks or data.shape,
                               **kw)
        a[...] = data
        zarr.consolidate_metadata(group.store)
        return
    import h5py

    tmp = tempfile.mktemp(suffix=".h5")
    kw = dict(fs_strategy="page", fs_page_size=layout.page_size) if layout.paged else {}
    try:
        if dims:
            import h5netcdf

            with h5netcdf.File(tmp, "w", **kw) as f:
                f.dimensions = dict(zip(dims, data.shape))
                f.create_variable(name, dims, data=data, chunks=layout.chunks)
        else:
            with h5py.File(tmp, "w", libver="latest" if layout.paged else "earliest", **kw) as f:
                f.create_dataset(name, data=data, chunks=layout.chunks)
        fs.put_file(tmp, url)
    finally:
        os.unlink(tmp)


def open_array(layout, url: str, opts: dict, name: str = "x"):
    """The array as the workload reads it in ``layout`` (and what to close afterwards)."""
    if layout.library == REFERENCE:
        return open_reference(url + SUFFIX, opts)[name], []
    if layout.library == "zarr":
        import zarr

        group = zarr.open_consolidated(zarr.storage.FsspecStore.from_url(url, storage_options=opts), mode="r")
        return group[name], []
    import h5py

    import fsspec

    # the filesystem of the zarr runs (fsspec's instance cache): client set-up is paid once per program either way
    fh = fsspec.filesystem("s3", **opts).open(url, "rb", block_size=layout.block_size, cache_type=layout.cache_type)
    kw = dict(page_buf_size=4 * layout.page_size) if layout.paged else {}
    f = h5py.File(fh, "r", **kw)
    return f[name], [f, fh]


# ------------------------------------------------------------------------------------------ workloads

def column_reads(a, rng_seed=0):
    """zarr column reads: 20 whole columns."""
    rng = np.random.default_rng(rng_seed)
    for j in rng.choice(a.shape[1], 20, replace=False):
        a[:, int(j)]


def minibatches(a, rng_seed=0):
    """h5py minibatches: 12 batches of 64 consecutive rows at random offsets."""
    rng = np.random.default_rng(rng_seed)
    for i in rng.integers(0, a.shape[0] - 64, 12):
        a[int(i):int(i) + 64]


def time_series(layout, url, opts, rng_seed=0):
    """xarray time series: 8 grid points' whole series, the file opened by xarray (h5netcdf engine on an fsspec
    file for netCDF-4, open_zarr with consolidated metadata for Zarr)."""
    import fsspec
    import xarray as xr
    import zarr

    fh = None
    if layout.library == REFERENCE:
        ds = xr.open_zarr(open_reference(url + SUFFIX, opts).store, consolidated=False, zarr_format=2)
    elif layout.library == "zarr":
        ds = xr.open_zarr(zarr.storage.FsspecStore.from_url(url, storage_options=opts), consolidated=True)
    else:
        fh = fsspec.filesystem("s3", **opts).open(url, "rb", block_size=layout.block_size,
                                                  cache_type=layout.cache_type)
        ds = xr.open_dataset(fh, engine="h5netcdf", cache=False)
    try:
        rng = np.random.default_rng(rng_seed)
        for _ in range(8):
            i, j = int(rng.integers(0, ds.sizes["lat"])), int(rng.integers(0, ds.sizes["lon"]))
            ds["x"][:, i, j].values
    finally:
        ds.close()
        if fh is not None:
            fh.close()


time_series.opens = True  # opens the data itself (through xarray)
TIME_SERIES_DIMS = ("time", "lat", "lon")


def dask_mean(a, rng_seed=0):
    """dask reduction: the mean over the first axis, dask blocks of 4 chunks, threaded scheduler."""
    import dask
    import dask.array as da

    chunks = getattr(a, "chunks", None) or a.shape
    d = da.from_array(a, chunks=tuple(min(s, 2 * c) for s, c in zip(a.shape, chunks)), lock=False)
    with dask.config.set(scheduler="threads", num_workers=4):
        d.mean(axis=0).compute()


def workloads(scale: float):
    """(name, function, data, starting layout)."""
    from advisor.objectstore import StoreLayout

    rng = np.random.default_rng(1)
    n = lambda x: max(64, int(x * scale))  # noqa: E731
    return [
        ("zarr column reads", column_reads, rng.random((n(2000), n(2000))), StoreLayout("zarr", (100, 100))),
        ("h5py minibatches via fsspec", minibatches, rng.random((n(50000), 256), dtype=np.float32),
         StoreLayout("hdf5", (100, 256))),
        ("xarray time series (netCDF-4 on S3)", time_series, rng.random((n(1460), 90, 90), dtype=np.float32),
         StoreLayout("hdf5", (1, 90, 90))),
        ("dask reduction over zarr", dask_mean, rng.random((n(4000), n(2000)), dtype=np.float32),
         StoreLayout("zarr", (250, 250))),
    ]


# ------------------------------------------------------------------------------------------ measuring

def run_once(fn, layout, url, opts) -> float:
    t = time.perf_counter()
    if getattr(fn, "opens", False):
        fn(layout, url, opts)
        return time.perf_counter() - t
    a, closers = open_array(layout, url, opts)
    try:
        fn(a)
    finally:
        for c in closers:
            c.close()
    return time.perf_counter() - t


def trace_and_advise(fn, layout, url, opts, workdir: Path, stores: dict, top: int = 3):
    """Trace one run of the workload in its current layout and rank the layouts on its store: the advice, the
    trace and its array."""
    import advisor
    from advisor.objectstore import advise_dataset
    from instrumentation.storerequests import load_requests
    from instrumentation.tracefile import load_trace

    path = workdir / f"trace-{os.urandom(3).hex()}.parquet"
    with advisor.trace(path):
        run_once(fn, layout, url, opts)
    trace = load_trace(path)
    ds = max(trace.datasets.values(), key=lambda d: trace.columns_of(d.id).rows)
    return advise_dataset(trace, ds, load_requests(path), stores, top=top), trace, ds


def verify_figures(trace, ds, advice, opts: dict, repeat: int) -> dict:
    """``ioadvisor verify`` on the store (``advisor.objectstore_verify``) for one traced run: the current layout and
    the top three rebuilt under a scratch prefix of the same store and the traced accesses replayed there."""
    from advisor.objectstore_verify import scratch_prefix, verify_dataset_on_store

    with scratch_prefix("s3://bench-wl", opts) as scratch:
        rows = verify_dataset_on_store(trace, ds, advice, scratch, opts, top=3, repeat=repeat)
    # the first-ranked is the current layout when the advice keeps it; else verify's "#1"
    keeps = advice.ranked[0].layout == advice.current.layout
    cur, best = rows[0], rows[0] if keeps or len(rows) < 2 else rows[1]
    return dict(verify_current=cur.measured_seconds, verify_recommended=best.measured_seconds,
                verify_regret=best.measured_seconds / min(r.measured_seconds for r in rows),
                verify_ratio_current=cur.measured_seconds / cur.predicted_seconds,
                verify_ratio_recommended=best.measured_seconds / best.predicted_seconds,
                verify_rows=[r.get_config() for r in rows])


def models_by_delay(server, proxy, delays, bucket: str) -> dict:
    """The store's model at each latency of the delaying proxy, as `ioadvisor calibrate --store` fits it (quick),
    calibrated in ``bucket`` (made if missing)."""
    from iomodel.objectstore_calibrate import StoreTarget, calibrate_store

    fs = store_fs(server.storage_options())
    if not fs.exists(bucket):
        fs.mkdir(bucket)
    opts = server.storage_options(proxy.url)
    models = {}
    for delay in delays:
        proxy.delay = delay
        models[delay], _ = calibrate_store(StoreTarget(f"s3://{bucket}/cal", opts), quick=True)
    return models


def run_workloads(server, proxy, delays, *, scale: float = 1.0, repeat: int = 3, only: str | None = None,
                  verify: bool = True) -> dict:
    workdir = Path(tempfile.mkdtemp(prefix="objstore-wl-"))
    opts = server.storage_options(proxy.url)
    models = models_by_delay(server, proxy, delays, "bench-wl")
    rows = []
    for w, (name, fn, data, start) in enumerate(workloads(scale)):
        if only and only not in name:
            continue
        built: dict = {}

        def url_of(layout):
            if layout not in built:
                key = f"s3://bench-wl/w{w}/l{len(built)}" + (".zarr" if layout.library == "zarr" else ".h5")
                # fsspec settings do not change the stored file: one copy per stored layout
                stored = next((u for lay, u in built.items() if lay.library == "hdf5" == layout.library
                               and lay.chunks == layout.chunks and lay.paged == layout.paged), None)
                if stored is None:
                    build(layout, data, key, server.storage_options(),
                          dims=TIME_SERIES_DIMS if fn is time_series else None)
                    stored = key
                # one untimed run first: SeaweedFS serves the first reads after a write slower, and the traced run
                # must see the store as the measured runs do; the proxy's delay is left as the caller set it
                run_once(fn, layout, stored, opts)
                built[layout] = stored
            return built[layout]

        print(f"{name}: {data.nbytes / MiB:.0f} MiB", file=sys.stderr, flush=True)
        advice, traced = {}, {}
        for delay in delays:
            proxy.delay = delay
            key = f"{server.port}"
            stores = {f"127.0.0.1:{proxy.port}/bench-wl": models[delay], key: models[delay]}
            advice[delay], *traced[delay] = trace_and_advise(fn, start, url_of(start), opts, workdir, stores)
        tried = {d: [advice[d].current] + list(advice[d].ranked[:3]) for d in delays}
        for delay in delays:  # every layout built (and read once) before any is timed
            proxy.delay = delay
            for c in tried[delay]:
                url_of(c.layout)
        times: dict = {}
        for _ in range(repeat):
            for delay in delays:  # interleaved
                proxy.delay = delay
                for c in tried[delay]:
                    times.setdefault((delay, c.layout), []).append(run_once(fn, c.layout, url_of(c.layout), opts))
        checked = {}
        for delay in delays:  # verify on the store, at each latency (after the program's own runs)
            proxy.delay = delay
            checked[delay] = verify_figures(*traced[delay], advice[delay], opts, repeat) if verify else {}
        for delay in delays:
            meas = {c.layout: statistics.median(times[(delay, c.layout)]) for c in tried[delay]}
            best = advice[delay].ranked[0]
            cur = advice[delay].current
            claimed = cur.seconds / best.seconds
            measured = meas[cur.layout] / meas[best.layout]
            rows.append(dict(workload=name, delay_ms=delay * 1e3, mib=data.nbytes / MiB,
                             current=cur.layout.describe(), recommended=best.layout.describe(),
                             measured_current=meas[cur.layout], measured_recommended=meas[best.layout],
                             predicted_current=cur.seconds, predicted_recommended=best.seconds,
                             traced_current=advice[delay].traced_seconds,
                             regret=meas[best.layout] / min(meas.values()), claimed=claimed, measured_gain=measured,
                             claim_ratio=claimed / measured, tried=len(meas),
                             stays_on_store=advice[delay].url.startswith("s3://"), **checked[delay]))
            print(rows[-1], file=sys.stderr, flush=True)
    return dict(rows=rows, models={f"{d * 1e3:.0f} ms": m.get_config() for d, m in models.items()})


def workload_table(result: dict) -> str:
    out = ["| workload | added latency | data | now | recommended | measured now / recommended (s) |"
           " predicted now (traced) / recommended (s) | regret | claimed / measured speed-up |",
           "|---|---|---|---|---|---|---|---|---|"]
    for r in result["rows"]:
        out.append(f"| {r['workload']} | {r['delay_ms']:.0f} ms | {r['mib']:.0f} MiB | {r['current']} | "
                   f"{r['recommended']} | {r['measured_current']:.2f} / {r['measured_recommended']:.2f} | "
                   f"{r['predicted_current']:.2f} ({r.get('traced_current', float('nan')):.2f}) / "
                   f"{r['predicted_recommended']:.2f} | {r['regret']:.2f} | "
                   f"{r['claimed']:.1f}x / {r['measured_gain']:.1f}x ({r['claim_ratio']:.2f}) |")
    regrets = [r["regret"] for r in result["rows"]]
    ratios = [r["claim_ratio"] for r in result["rows"]]
    out.append(f"\nworst regret {max(regrets):.2f}; claims within 1.5x: "
               f"{sum(1 / 1.5 <= x <= 1.5 for x in ratios)} of {len(ratios)}; "
               f"median claimed/measured {statistics.median(ratios):.2f}")
    if any("verify_current" in r for r in result["rows"]):
        out += ["", "`ioadvisor verify` on the store (the traced accesses replayed on layouts rebuilt under a scratch "
                "prefix; the program's own runs above):", "",
                "| workload | added latency | verify now / recommended (s) | program now / recommended (s) |"
                " verify measured/predicted now, recommended | verify regret |", "|---|---|---|---|---|---|"]
        for r in result["rows"]:
            if "verify_current" in r:
                out.append(f"| {r['workload']} | {r['delay_ms']:.0f} ms | {r['verify_current']:.2f} / "
                           f"{r['verify_recommended']:.2f} | {r['measured_current']:.2f} / "
                           f"{r['measured_recommended']:.2f} | {r['verify_ratio_current']:.2f}, "
                           f"{r['verify_ratio_recommended']:.2f} | {r['verify_regret']:.2f} |")
    return "\n".join(out)
