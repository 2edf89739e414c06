"""Which array a record is and what it is called (issue #31, "Tracebacks and wrong records"): h5py's
``f[name] = data`` is one dataset, a file recreated under its name starts new records, data reached through
fsspec is named by its URL (never with credentials)."""
from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

from advisor.cli import main
from instrumentation import interpose
from instrumentation.tracefile import load_trace

IOADVISOR = Path(sys.executable).parent / "ioadvisor"
below = pytest.mark.skipif(interpose.unavailable() is not None, reason=f"{interpose.unavailable()}")


def _run(tmp_path, body: str, trace: str = "t.jsonl", env=None) -> Path:
    prog = tmp_path / "prog.py"
    prog.write_text(body)
    res = subprocess.run([str(IOADVISOR), "run", "-o", trace, "--", sys.executable, str(prog)], cwd=tmp_path,
                         capture_output=True, text=True, timeout=300, env=env)
    assert res.returncode == 0, res.stderr
    return tmp_path / trace


@below
def test_setitem_is_one_dataset_under_run(tmp_path):
    """h5py writes ``f["y"] = data`` as an anonymous dataset, linked afterwards: libhdf5 saw a write to a dataset
    with no name, recorded as a phantom ``exit.h5::`` beside ``/y``."""
    path = _run(tmp_path, "import h5py, numpy as np\nwith h5py.File('exit.h5', 'w') as f:\n"
                          "    f['y'] = np.ones(10)\n    f['y'][:5]\n")
    trace = load_trace(path)
    assert [d.path for d in trace.datasets.values()] == ["/y"]
    assert trace.n_access == 2


@below
def test_a_recreated_file_starts_new_records(tmp_path, capsys):
    """netCDF4-python's own suite recreates one file name with same-named variables of other ranks: merged into
    one record under the first shape, then advise failed on 190 of 204 datasets (inhomogeneous shape)."""
    pytest.importorskip("netCDF4")
    path = _run(tmp_path, """
import netCDF4, numpy as np
for k, shape in enumerate([(5, 5, 5), (10, 1, 7, 12), (3, 4)]):
    with netCDF4.Dataset("re.nc", "w") as nc:
        dims = []
        for i, n in enumerate(shape):
            nc.createDimension(f"d{i}", n if i else None)
            dims.append(f"d{i}")
        nc.createVariable("var", "f4", dims)[:] = np.ones(shape, "f4")
        nc.createVariable(f"other{k}", "f8", dims[:1])[:] = np.arange(shape[0])
    with netCDF4.Dataset("re.nc") as nc:
        nc["var"][:]
""")
    trace = load_trace(path)
    var = [i for i, d in trace.datasets.items() if d.path == "/var"]
    assert [len(trace.extent(i)) for i in var] == [3, 4, 2]
    for i in var:  # each record holds its own accesses: the write and the read of its creation
        assert trace.columns_of(i).n_access == 2 and trace.same_array(i) == [i]
    assert main(["advise", "--no-data", str(path)]) == 0
    out = capsys.readouterr().out
    assert "models failed" not in out and out.count("re.nc::/var: hdf5") == 3


# ---------------------------------------------------------------------------- object stores (SeaweedFS)

def test_data_on_s3_is_named_by_url(tmp_path, s3_endpoint):
    """Was ``<FsspecStore(S3FileSystem, bench/b.zarr)>::`` and ``<cwd>/<File-like object S3FileSystem,
    bench/f.h5>::/x``; the secret key never reaches the trace."""
    body = f"""
import h5py, numpy as np, s3fs, zarr
opts = dict(key="ioadvisor-key", secret="s3cr3t-never-in-traces", client_kwargs={{"endpoint_url": "{s3_endpoint}"}})
fs = s3fs.S3FileSystem(**opts)
fs.mkdir("bench")
with h5py.File("local.h5", "w") as f:
    f["x"] = np.arange(10.0)
fs.put("local.h5", "bench/f.h5")
z = zarr.create_array(zarr.storage.FsspecStore.from_url("s3://bench/b.zarr", storage_options=opts),
                      shape=(100, 10), chunks=(10, 10), dtype="f4", overwrite=True)
z[:] = 1
z[:5]
with fs.open("bench/f.h5", "rb") as fh, h5py.File(fh, "r") as f:
    f["x"][:3]
"""
    path = _run(tmp_path, body)
    trace = load_trace(path)
    names = sorted(d.label for d in trace.datasets.values())
    assert names == [str(tmp_path / "local.h5") + "::/x", "s3://bench/b.zarr", "s3://bench/f.h5::/x"]
    assert "s3cr3t" not in path.read_text()
