"""Capture of libhdf5 reading a file straight from a server (issue #35): netCDF4's ``#mode=bytes`` (netCDF-C's own
HTTP driver) and HDF5's read-only S3 driver (ros3, here through Debian's libhdf5 and its h5dump: the h5py wheel has
no ros3), both against the real S3 server's plain-HTTP access to a bucket anonymous reads may use. The libhdf5
interposer records the reads; each array is named by its URL, without ``#mode=bytes``, query or user."""
from __future__ import annotations

import re
import shutil
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

from instrumentation.locations import hdf5_location, url_location
from instrumentation.tracefile import load_trace

IOADVISOR = Path(sys.executable).parent / "ioadvisor"


def _upload(server, local: Path, bucket: str, key: str) -> str:
    import s3fs

    fs = s3fs.S3FileSystem(**server.storage_options())
    if not fs.exists(bucket):
        fs.mkdir(bucket)
    fs.put_file(str(local), f"{bucket}/{key}")
    return f"{server.url}/{bucket}/{key}"


def _traced(tmp_path, *command):
    res = subprocess.run([str(IOADVISOR), "run", "-o", "t.parquet", "--", *map(str, command)], cwd=tmp_path,
                         capture_output=True, text=True, timeout=300)
    assert res.returncode == 0, res.stderr
    return load_trace(tmp_path / "t.parquet"), res.stdout


def test_url_names_keep_no_credentials_nor_fragment():
    cwd_prefixed = "/home/u/run/http://user:pw@127.0.0.1:8333/pub/t.nc?X-Amz-Signature=abc#mode=bytes"
    assert hdf5_location(cwd_prefixed, None) == "http://127.0.0.1:8333/pub/t.nc"
    assert url_location("https://data.example.org/a/b.h5") == "https://data.example.org/a/b.h5"
    assert url_location("/tmp/a:b.h5") is None and hdf5_location("rel.h5", None).endswith("/rel.h5")


def test_netcdf4_mode_bytes_named_by_url(tmp_path, s3_server):
    netCDF4 = pytest.importorskip("netCDF4")
    data = np.arange(100 * 50, dtype="f4").reshape(100, 50)
    with netCDF4.Dataset(tmp_path / "t.nc", "w") as nc:
        nc.createDimension("t", 100)
        nc.createDimension("y", 50)
        nc.createVariable("x", "f4", ("t", "y"), chunksizes=(10, 50))[:] = data
    url = _upload(s3_server, tmp_path / "t.nc", "pubbytes", "t.nc")
    prog = tmp_path / "p.py"
    prog.write_text(f"import netCDF4\nwith netCDF4.Dataset({url!r} + '#mode=bytes') as nc:\n"
                    "    print(float(nc['x'][30:45, 5:9].sum()))\n")
    trace, out = _traced(tmp_path, sys.executable, prog)
    assert float(out.split()[0]) == float(data[30:45, 5:9].sum())  # read from the server, not a local copy
    (ds,) = trace.datasets.values()
    assert ds.label == f"{url}::/x" and ds.chunks == (10, 50) and ds.shape == (100, 50)
    (acc,) = [a for a in trace.accesses if a.dataset == ds.id]
    sel = acc.selection  # one box (count x block, as netCDF-C selects it)
    assert acc.op == "read" and acc.nelements == 15 * 4 and tuple(sel.start) == (30, 5)
    assert tuple(np.multiply(sel.count, sel.block)) == (15, 4)


def _has_ros3() -> bool:
    """Whether the system's libhdf5 (the one h5dump links) was built with the read-only S3 driver."""
    if shutil.which("h5dump") is None or shutil.which("h5cc") is None:
        return False
    config = subprocess.run(["h5cc", "-showconfig"], capture_output=True, text=True).stdout
    return re.search(r"S3 VFD:\s*yes", config) is not None


@pytest.mark.skipif(not _has_ros3(), reason="no libhdf5 with the ros3 driver (Debian's hdf5-tools has it)")
def test_ros3_c_program_named_by_url(tmp_path, s3_server):
    import h5py

    data = np.arange(100 * 50, dtype="f4").reshape(100, 50)
    with h5py.File(tmp_path / "r.h5", "w", libver="earliest") as f:  # libver: Debian's libhdf5 is 1.10
        f.create_dataset("x", data=data, chunks=(10, 50))
    url = _upload(s3_server, tmp_path / "r.h5", "pubros3", "r.h5")
    trace, out = _traced(tmp_path, "h5dump", "--filedriver=ros3", "-d", "/x", "-s", "3,0", "-c", "2,3", url)
    assert "150, 151, 152" in out  # h5dump printed the rows it read over HTTP
    (ds,) = trace.datasets.values()
    assert ds.label == f"{url}::/x" and ds.chunks == (10, 50)
    reads = [a for a in trace.accesses if a.dataset == ds.id and a.op == "read"]
    assert reads and any(tuple(a.selection.start) == (3, 0) for a in reads)
