"""The README's way to trace a notebook's netCDF4 reads: a Jupyter kernel started under ``ioadvisor run``."""
import json
import os
import sys

import pytest

from instrumentation.tracefile import load_trace

CODE = """
import numpy as np, netCDF4
with netCDF4.Dataset({nc!r}, "w") as d:
    d.createDimension("t", 100); d.createDimension("x", 50)
    v = d.createVariable("v", "f4", ("t", "x"), chunksizes=(10, 50))
    v[:] = np.ones((100, 50), np.float32)
with netCDF4.Dataset({nc!r}) as d:
    total = sum(float(d["v"][i, :].sum()) for i in range(100))
assert total == 5000.0
"""


def test_kernel_started_under_ioadvisor_run_records_netcdf4_reads(tmp_path, monkeypatch):
    pytest.importorskip("netCDF4", reason="netCDF4 is not installed (the test extra has it)")
    pytest.importorskip("ipykernel", reason="ipykernel is not installed: no Jupyter kernel to start")
    jupyter_client = pytest.importorskip("jupyter_client", reason="jupyter_client is not installed")
    trace = tmp_path / "nb.parquet"
    spec = tmp_path / "kernels" / "iotrace"
    spec.mkdir(parents=True)
    ioadvisor = os.path.join(os.path.dirname(sys.executable), "ioadvisor")
    (spec / "kernel.json").write_text(json.dumps({
        "argv": [ioadvisor, "run", "-o", str(trace), "--force", "--", sys.executable, "-m", "ipykernel_launcher",
                 "-f", "{connection_file}"],
        "display_name": "Python (traced by ioadvisor)", "language": "python"}))
    monkeypatch.setenv("JUPYTER_PATH", str(tmp_path))
    km = jupyter_client.KernelManager(kernel_name="iotrace")
    km.start_kernel()
    try:
        kc = km.client()
        kc.start_channels()
        kc.wait_for_ready(timeout=120)
        reply = kc.execute_interactive(CODE.format(nc=str(tmp_path / "t.nc")), timeout=120)
        assert reply["content"]["status"] == "ok"
        kc.stop_channels()
    finally:
        km.shutdown_kernel(now=False)  # waits for the kernel's process: the trace is closed as it exits
    got = load_trace(trace)
    (ds,) = got.accessed()
    assert ds.path == "/v" and ds.chunks == (10, 50)
    cols = got.columns_of(ds.id)
    assert int((~cols.write * cols.rep).sum()) == 100  # every row read netCDF4 made, seen below Python
