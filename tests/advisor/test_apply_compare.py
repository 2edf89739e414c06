"""``ioadvisor compare``: the unchanged program reads the copy through the substitution; both sides run."""
import json
import subprocess
import sys

from tests.advisor.conftest import IOADVISOR, apply_cli

APP = """
import sys, h5py, xarray as xr
with h5py.File(sys.argv[1], "r") as f:
    chunks = f["tas"].chunks
enc = xr.open_dataset(sys.argv[1])["tas"].encoding["chunksizes"]
open(sys.argv[2], "a").write(f"{chunks} {tuple(enc)}\\n")
"""


def test_compare_runs_the_program_on_both_sides(netcdf_case, tmp_path):
    src, trace, _ = netcdf_case
    dest = tmp_path / "copy.nc"
    assert apply_cli(trace, "--out", dest, "--dataset", "tas", "--layout", "hdf5:chunks=24x6x6").returncode == 0
    app, log = tmp_path / "app.py", tmp_path / "seen.txt"
    app.write_text(APP)
    r = subprocess.run([str(IOADVISOR), "compare", "--substitute", f"{src}={dest}", "--runs", "3", "--json", "--",
                        sys.executable, str(app), str(src), str(log)], capture_output=True, text=True, timeout=300)
    assert r.returncode == 0, r.stderr
    out = json.loads(r.stdout)
    assert len(out["original_seconds"]) == 3 and len(out["copy_seconds"]) == 3 and out["speedup"] > 0
    seen = log.read_text().splitlines()
    # alternating: original, copy, ...; h5py and xarray (netCDF4) both opened the copy on the copy's side
    assert seen[0::2] == ["(1, 18, 36) (1, 18, 36)"] * 3 and seen[1::2] == ["(24, 6, 6) (24, 6, 6)"] * 3


def test_compare_refuses_a_copy_of_another_library(netcdf_case, tmp_path):
    src, trace, _ = netcdf_case
    z = tmp_path / "copy.zarr"
    assert apply_cli(trace, "--out", z, "--dataset", "tas", "--layout", "zarr:chunks=24x6x6").returncode == 0
    r = subprocess.run([str(IOADVISOR), "compare", "--substitute", f"{src}={z}", "--", sys.executable, "-c", "0"],
                       capture_output=True, text=True, timeout=120)
    assert r.returncode == 2 and r.stderr.count("\n") == 1 and "cannot read" in r.stderr
