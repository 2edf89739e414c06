"""Capture on an object store (issue #35): every access path against a real S3 server (SeaweedFS), each
dataset named by its URL, and the requests that reached the store recorded beside the trace, without
credentials."""
from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

from instrumentation.storerequests import load_requests, log_path
from instrumentation.tracefile import load_trace

IOADVISOR = Path(sys.executable).parent / "ioadvisor"
SECRET = "s3cr3t-never-in-traces"


def _run(tmp_path, endpoint: str, body: str):
    prog = tmp_path / "prog.py"
    prog.write_text(f"import numpy as np\nendpoint = {endpoint!r}\n"
                    f"opts = dict(key='ioadvisor-key', secret={SECRET!r}, client_kwargs={{'endpoint_url': endpoint}})\n"
                    + body)
    res = subprocess.run([str(IOADVISOR), "run", "-o", "t.parquet", "--", sys.executable, str(prog)], cwd=tmp_path,
                         capture_output=True, text=True, timeout=300)
    assert res.returncode == 0, res.stderr
    trace = tmp_path / "t.parquet"
    for p in (trace, log_path(trace)):
        text = "".join(f.read_text(errors="replace") for f in ([p] if p.is_file() else p.glob("*.jsonl")))
        assert SECRET not in text and "ioadvisor-key" not in text
    return load_trace(trace), load_requests(trace)


def _host(endpoint: str) -> str:
    return endpoint.split("//", 1)[1]


def test_zarr_over_fsspec_store(tmp_path, s3_endpoint):
    trace, req = _run(tmp_path, s3_endpoint, """
import s3fs, zarr
s3fs.S3FileSystem(**opts).mkdir("capzarr")
store = zarr.storage.FsspecStore.from_url("s3://capzarr/a.zarr", storage_options=opts)
z = zarr.create_array(store, shape=(100, 40), chunks=(10, 10), dtype="f8")
z[:] = np.arange(4000.0).reshape(100, 40)
assert z[:, 5].sum() == np.arange(4000.0).reshape(100, 40)[:, 5].sum()
""")
    assert [d.label for d in trace.datasets.values()] == ["s3://capzarr/a.zarr"]
    assert trace.n_access == 2
    puts = req["op"] == "PUT"
    gets = (req["op"] == "GET") & np.char.startswith(req["url"].astype(str), "s3://capzarr/a.zarr/c/")
    assert puts.sum() >= 40 and gets.sum() == 10  # 40 chunk writes (+ metadata); the column reads 10 chunks
    assert set(req["host"]) == {_host(s3_endpoint)}
    assert (req["nbytes"][gets] > 0).all() and (req["dt"] >= req["ttfb"]).all() and (req["ttfb"] > 0).all()
    assert req["inflight"][gets].max() > 1  # zarr fetches a read's chunks concurrently


def test_zarr_over_obstore(tmp_path, s3_endpoint):
    pytest.importorskip("obstore")
    trace, req = _run(tmp_path, s3_endpoint, """
import s3fs, zarr
from obstore.store import S3Store
s3fs.S3FileSystem(**opts).mkdir("capobs")
s3 = S3Store("capobs", prefix="o.zarr", endpoint=endpoint, access_key_id=opts["key"],
             secret_access_key=opts["secret"], region="us-east-1", client_options={"allow_http": True})
z = zarr.create_array(zarr.storage.ObjectStore(s3), shape=(50, 50), chunks=(25, 25), dtype="f4")
z[:] = 1
z[:30, :30]
""")
    assert [d.label for d in trace.datasets.values()] == ["s3://capobs/o.zarr"]
    gets = req["op"] == "GET"
    assert (req["op"] == "PUT").sum() >= 4 and gets.sum() >= 4
    assert all(u.startswith("s3://capobs/o.zarr/") for u in req["url"][gets])
    assert set(req["host"]) == {_host(s3_endpoint)}


def test_h5py_over_fsspec_file(tmp_path, s3_endpoint):
    trace, req = _run(tmp_path, s3_endpoint, """
import h5py, s3fs
fs = s3fs.S3FileSystem(**opts)
fs.mkdir("caph5")
with h5py.File("local.h5", "w") as f:
    f.create_dataset("x", data=np.arange(200_000.0), chunks=(10_000,))
fs.put("local.h5", "caph5/f.h5")
with fs.open("caph5/f.h5", "rb", block_size=64 * 1024) as fh, h5py.File(fh, "r") as f:
    f["x"][50_000:60_000]
""")
    assert "s3://caph5/f.h5::/x" in [d.label for d in trace.datasets.values()]
    ranged = (req["op"] == "GET") & (req["url"] == "s3://caph5/f.h5")
    assert ranged.sum() >= 2  # the superblock and metadata, then the chunk: fsspec's 64 KiB blocks
    # ranged reads only: the superblock and B-tree, then one chunk's region (with fsspec's read-ahead), not 1.6 MB
    assert (req["end"][ranged] > 0).all() and req["nbytes"][ranged].sum() < 800_000


def test_xarray_h5netcdf_and_open_zarr(tmp_path, s3_endpoint):
    pytest.importorskip("xarray")
    pytest.importorskip("h5netcdf")
    trace, req = _run(tmp_path, s3_endpoint, """
import s3fs, xarray as xr
fs = s3fs.S3FileSystem(**opts)
fs.mkdir("capxr")
ds = xr.Dataset({"t": (("time", "x"), np.random.default_rng(0).random((48, 30)))})
ds.to_netcdf("local.nc", engine="h5netcdf")
fs.put("local.nc", "capxr/d.nc")
ds.to_zarr(fs.get_mapper("capxr/d.zarr"), mode="w")
with xr.open_dataset("s3://capxr/d.nc", engine="h5netcdf", storage_options=opts) as nc:
    nc["t"][:, 3].values
z = xr.open_zarr("s3://capxr/d.zarr", storage_options=opts)
z["t"][:, 3].values
""")
    labels = {d.label for d in trace.datasets.values()}
    assert "s3://capxr/d.nc::/t" in labels and "s3://capxr/d.zarr::t" in labels | {
        d.file + "::" + d.path for d in trace.datasets.values()} or "s3://capxr/d.zarr/t" in labels, labels
    urls = set(req["url"])
    assert "s3://capxr/d.nc" in urls and any(u.startswith("s3://capxr/d.zarr/t/") for u in urls)


import numpy as np  # noqa: E402  (the helpers above only need it in assertions)
