"""``apply --out s3://bucket/prefix.zarr`` (issues #34, #35) against the real SeaweedFS server: the advised Zarr
layout written on the store, verified, invisible as a group until whole, resumable after SIGKILL."""
from __future__ import annotations

import json
import signal
import subprocess
import sys
import time
from pathlib import Path

import numpy as np
import pytest

import advisor
import instrumentation.tracefile

IOADVISOR = Path(sys.executable).parent / "ioadvisor"


def _opts(endpoint):
    return dict(key="k", secret="s", client_kwargs={"endpoint_url": endpoint})


def _fs(opts):
    import s3fs

    return s3fs.S3FileSystem(**opts, skip_instance_cache=True)


def _source(tmp_path, opts, bucket, shape=(600, 600), chunks=(60, 60)):
    """A zarr group on the store with an array ``x`` (and its attributes), 10 columns read under the tracer."""
    import zarr

    fs = _fs(opts)
    if not fs.exists(bucket):
        fs.mkdir(bucket)
    url = f"s3://{bucket}/src.zarr"
    data = np.round(np.random.default_rng(0).random(shape), 2)
    g = zarr.open_group(zarr.storage.FsspecStore.from_url(url, storage_options=opts), mode="w")
    g.attrs["title"] = "t"
    a = g.create_array("x", shape=shape, chunks=chunks, dtype="f8", attributes={"units": "K"})
    a[:] = data
    zarr.consolidate_metadata(g.store)
    path = tmp_path / "t.parquet"
    with advisor.trace(path):
        r = zarr.open_group(zarr.storage.FsspecStore.from_url(url, storage_options=opts, read_only=True), mode="r")["x"]
        for j in range(0, shape[1], shape[1] // 10):
            r[:, j]
    return path, data


def _open(url, opts):
    import zarr

    return zarr.open_consolidated(zarr.storage.FsspecStore.from_url(url, storage_options=opts, read_only=True),
                                  mode="r")


def test_apply_writes_the_store_advice_on_the_store(tmp_path, s3_endpoint):
    from advisor.apply import ApplyOptions, apply

    opts = _opts(s3_endpoint)
    trace, data = _source(tmp_path, opts, "apply1")
    from advisor.apply.store import store_targets

    options = ApplyOptions(out="s3://apply1/out.zarr", storage_options=opts)
    advised = store_targets(instrumentation.tracefile.load_trace(trace), options, opts).layouts["/x"]
    res = apply(trace, options)
    (arr,) = res.arrays
    assert arr.path == "/x" and arr.max_error == 0.0 and arr.layout == advised.label
    g = _open("s3://apply1/out.zarr", opts)  # consolidated: the root document was written with it
    assert np.array_equal(g["x"][...], data) and g["x"].attrs["units"] == "K" and g.attrs["title"] == "t"
    assert g["x"].chunks == advised.chunks  # the store advice's layout
    names = sorted(p.rsplit("/", 1)[-1] for p in _fs(opts).ls("apply1", refresh=True))
    assert names == ["out.zarr", "src.zarr"]  # the journal is gone; nothing else written
    again = subprocess.run([str(IOADVISOR), "apply", str(trace), "--out", "s3://apply1/out.zarr", "--endpoint-url",
                            s3_endpoint, "--storage-options", '{"key": "k", "secret": "s"}'],
                           capture_output=True, text=True, timeout=300)
    assert again.returncode != 0 and "exists: apply never overwrites" in again.stderr


def test_a_killed_apply_is_invisible_and_resumes(tmp_path, s3_server, s3_proxy):
    import zarr

    s3_proxy.delay = 0.02  # each block several round trips: slow enough to be killed in the middle
    opts = s3_server.storage_options(s3_proxy.url)
    trace, data = _source(tmp_path, opts, "apply2", shape=(2400, 600))
    dest = "s3://apply2/out.zarr"
    cmd = [str(IOADVISOR), "apply", str(trace), "--out", dest, "--layout", "zarr:chunks=20x600", "--max-memory",
           "4MiB", "--json", "--storage-options", json.dumps(opts)]
    proc = subprocess.Popen(cmd, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    fs = _fs(s3_server.storage_options())  # watched directly, not through the proxy's delay
    deadline = time.time() + 240
    while time.time() < deadline and proc.poll() is None:
        try:  # one object per step: the structure, then blocks
            if len(fs.find("apply2/out.zarr.ioadvisor-partial/journal")) >= 4:
                break
        except OSError:
            pass
        fs.invalidate_cache()
        time.sleep(0.01)
    assert proc.poll() is None, "the run ended before it could be killed"
    proc.send_signal(signal.SIGKILL)
    proc.wait()
    fs.invalidate_cache()
    assert fs.exists("apply2/out.zarr/x/zarr.json")  # written in part ...
    with pytest.raises(Exception):  # ... but not a Zarr group until the copy is whole
        zarr.open_group(zarr.storage.FsspecStore.from_url(dest, storage_options=opts, read_only=True), mode="r")
    finished = sum('"kind": "block"' in fs.cat_file(k).decode()
                   for k in fs.find("apply2/out.zarr.ioadvisor-partial/journal"))
    res = subprocess.run(cmd, capture_output=True, text=True, timeout=300)
    assert res.returncode == 0, res.stderr
    (x,) = json.loads(res.stdout)["arrays"]
    assert x["blocks_resumed"] == finished >= 3 and x["blocks"] > finished
    g = _open(dest, opts)
    assert np.array_equal(g["x"][...], data) and g["x"].chunks == (20, 600)
    assert not fs.exists("apply2/out.zarr.ioadvisor-partial/header.json")


def test_a_local_netcdf_file_applied_to_the_store_keeps_xarray_view(netcdf_case, s3_endpoint):
    import xarray as xr
    import zarr

    src, trace, values = netcdf_case
    opts = _opts(s3_endpoint)
    fs = _fs(opts)
    if not fs.exists("apply3"):
        fs.mkdir("apply3")
    res = subprocess.run([str(IOADVISOR), "apply", str(trace), "--out", "s3://apply3/nc.zarr", "--dataset", "tas",
                          "--layout", "zarr:chunks=24x6x6", "--endpoint-url", s3_endpoint, "--storage-options",
                          '{"key": "k", "secret": "s"}', "--json"], capture_output=True, text=True, timeout=300)
    assert res.returncode == 0, res.stderr
    tas = next(a for a in json.loads(res.stdout)["arrays"] if a["path"] == "/tas")
    assert tas["max_error"] == 0.0 and tas["layout"].startswith("zarr 24x6x6")
    store = zarr.storage.FsspecStore.from_url("s3://apply3/nc.zarr", storage_options=opts, read_only=True)
    ds = xr.open_zarr(store, consolidated=True)
    assert np.array_equal(ds["tas"].values, values, equal_nan=True) and ds["tas"].attrs["units"] == "K"
    assert ds["tas"].dims == ("time", "lat", "lon") and ds.attrs["title"] == "apply test"


def test_an_hdf5_file_on_the_store_applied_to_zarr_on_the_store(tmp_path, s3_endpoint):
    import h5py
    import zarr

    from advisor.apply import ApplyOptions, apply

    opts = _opts(s3_endpoint)
    fs = _fs(opts)
    if not fs.exists("apply4"):
        fs.mkdir("apply4")
    data = np.random.default_rng(1).random((500, 64), dtype=np.float32)
    with h5py.File(tmp_path / "a.h5", "w") as f:
        f.create_dataset("v", data=data, chunks=(50, 64))
    fs.put_file(str(tmp_path / "a.h5"), "apply4/a.h5")
    trace = tmp_path / "t.parquet"
    with advisor.trace(trace):
        with _fs(opts).open("apply4/a.h5", "rb") as fh, h5py.File(fh, "r") as f:
            for i in range(0, 500, 100):
                f["v"][i:i + 10]
    res = apply(trace, ApplyOptions(out="s3://apply4/a.zarr", layouts=("zarr:chunks=500x16",), storage_options=opts))
    assert [a.path for a in res.arrays] == ["/v"] and res.arrays[0].max_error == 0.0
    g = _open("s3://apply4/a.zarr", opts)
    assert np.array_equal(g["v"][...], data) and g["v"].chunks == (500, 16)
