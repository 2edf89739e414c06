"""Advice for a file libhdf5 reads from the server itself (netCDF4 ``#mode=bytes``, ros3): priced with the
endpoint's calibrated model, every read one request (no fsspec cache)."""
from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

from advisor.objectstore_http import as_s3, reads_directly

IOADVISOR = Path(sys.executable).parent / "ioadvisor"


def test_path_style_urls_map_to_the_endpoint_and_bucket():
    assert as_s3("http://127.0.0.1:8333/pub/a/t.nc") == ("127.0.0.1:8333", "s3://pub/a/t.nc")
    assert as_s3("s3://pub/t.nc") is None and as_s3("http://host") is None
    assert reads_directly("hdf5", "http://h/b/t.nc", None)
    assert not reads_directly("hdf5", "http://h/b/t.nc", "fileobj")  # h5py through an fsspec file: fsspec caches
    assert not reads_directly("zarr", "http://h/b/t.zarr", None)


def test_netcdf4_mode_bytes_advised_with_the_endpoints_model(tmp_path, s3_server):
    netCDF4 = pytest.importorskip("netCDF4")
    import s3fs

    with netCDF4.Dataset(tmp_path / "t.nc", "w") as nc:
        nc.createDimension("t", 400)
        nc.createDimension("y", 50)
        nc.createVariable("x", "f4", ("t", "y"), chunksizes=(10, 50))[:] = np.ones((400, 50), "f4")
    fs = s3fs.S3FileSystem(**s3_server.storage_options())
    fs.mkdir("pubadvise")
    fs.put_file(str(tmp_path / "t.nc"), "pubadvise/t.nc")
    url = f"{s3_server.url}/pubadvise/t.nc"
    prog = tmp_path / "p.py"
    prog.write_text(f"import netCDF4\nwith netCDF4.Dataset({url!r} + '#mode=bytes') as nc:\n"
                    "    for i in range(0, 400, 40):\n        nc['x'][i:i + 5, :]\n")
    run = lambda *a: subprocess.run([str(IOADVISOR), *map(str, a)], cwd=tmp_path, capture_output=True,  # noqa: E731
                                    text=True, timeout=600)
    assert run("run", "-o", "t.parquet", "--", sys.executable, prog).returncode == 0
    res = run("advise", "t.parquet")
    assert res.returncode != 0 and "--endpoint-url http://127.0.0.1:" in res.stderr  # says how to get a model
    assert run("calibrate", "--store", "s3://pubadvise/scratch", "--endpoint-url", s3_server.url, "--quick",
               "--storage-options", '{"key": "k", "secret": "s"}', "-o", "profile.json", "-q").returncode == 0
    res = run("advise", "t.parquet", "--profile", "profile.json")
    assert res.returncode == 0, res.stderr
    assert f"{url}::/x (on the object store 127.0.0.1:{s3_server.port}; stays there)" in res.stdout
    now = next(line for line in res.stdout.splitlines() if line.lstrip().startswith("now"))
    assert "hdf5 chunks 10x50, fsspec none" in now  # libhdf5's own reads, one request each
