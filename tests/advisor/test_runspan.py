"""The run-level claim counts the interpreter's start and exit, outside the trace's window (advisor.runspan)."""
import json
import subprocess
import sys

import h5py
import numpy as np
import pytest

from advisor.runspan import program_stack, start_and_exit_seconds, traced_program
from tests.advisor.conftest import IOADVISOR

APP = """
import sys, h5py
with h5py.File(sys.argv[1], "r") as f:
    x = f["x"]
    for i in range(0, 4000, 100):
        x[i:i + 50, :]
"""


def test_a_whole_python_program_is_one_ioadvisor_run_started():
    run = ["/v/bin/ioadvisor", "run", "-o", "t.jsonl", "--"]
    assert traced_program(run + ["/v/bin/python3.11", "app.py", "arg"])
    assert traced_program(run + ["app.py"])
    assert not traced_program(run + ["./a.out"])  # a native program: no Python interpreter to count
    assert not traced_program(["app.py"])  # advisor.trace inside a program: its other work is unknown
    assert not traced_program([])


def test_the_stack_follows_the_library_read_through():
    from advisor.idiom import Idiom

    assert program_stack([("hdf5", None)]) == ("h5py",)
    assert program_stack([("zarr", None)]) == ("zarr",)
    nc = Idiom("netcdf4", "tas", ("t", "y", "x"), "netcdf4", dask=False)
    stack = program_stack([("hdf5", nc)])
    assert "h5py" not in stack and all(m in ("netCDF4", "xarray") for m in stack)


def test_the_run_claim_adds_the_measured_start_and_exit(tmp_path):
    from advisor.api import advise

    data = tmp_path / "d.h5"
    with h5py.File(data, "w") as f:
        f.create_dataset("x", data=np.arange(4000 * 64, dtype="f4").reshape(4000, 64), chunks=(4000, 1))
    app, trace = tmp_path / "app.py", tmp_path / "t.jsonl"
    app.write_text(APP)
    r = subprocess.run([str(IOADVISOR), "run", "-o", str(trace), "--", sys.executable, str(app), str(data)],
                       capture_output=True, text=True, timeout=300)
    assert r.returncode == 0, r.stderr
    lines = trace.read_text().splitlines()
    head = json.loads(lines[0])
    inside = tmp_path / "inside.jsonl"  # the same accesses as if traced by advisor.trace within the program
    inside.write_text("\n".join([json.dumps({**head, "argv": [str(app), str(data)]})] + lines[1:]) + "\n")
    whole, part = advise(str(trace)).datasets[0], advise(str(inside)).datasets[0]
    beyond = start_and_exit_seconds(("h5py",))
    if beyond is None:
        pytest.skip("this Python could not be launched to measure its start and exit")
    assert beyond > 0
    assert whole.run_seconds == pytest.approx(part.run_seconds + beyond)
    assert any("outside the trace's window" in n for n in whole.notes)
    assert not any("outside the trace's window" in n for n in part.notes)
    fast = min(part.candidates, key=lambda r: r.seconds)
    assert fast.seconds < part.current_seconds
    assert 1 < whole.run_speedup(fast) < part.run_speedup(fast)  # the time no layout changes dilutes the gain
    # a layout of the other library changes the program's imports (zarr instead of h5py), and the claim with them
    assert set(whole.switch_seconds) == {"zarr"} and not part.switch_seconds
    assert whole.switch_seconds["zarr"] > 0  # zarr's import is the heavier one
    z = whole.best_of("zarr")
    assert whole.run_speedup(z) == pytest.approx(
        whole.run_seconds / (whole.run_seconds - whole.current_seconds + z.seconds + whole.switch_seconds["zarr"]))
    h = whole.best_of("hdf5")
    assert whole.run_speedup(h) == pytest.approx(whole.run_seconds / (whole.run_seconds - whole.current_seconds
                                                                      + h.seconds))


def test_switch_seconds_is_the_difference_of_the_stacks_launches():
    from advisor.runspan import launch_seconds, start_and_exit_seconds, switch_seconds

    assert switch_seconds(("h5py", "xarray"), ("h5py", "xarray")) == 0.0
    swap = switch_seconds(("zarr",), ("h5py",))
    zarr_s, h5py_s = launch_seconds(("zarr",)), launch_seconds(("h5py",))
    if None in (swap, zarr_s, h5py_s):
        pytest.skip("this Python could not be launched to measure imports")
    assert swap == pytest.approx(h5py_s - zarr_s) and swap < 0
    assert 0 < start_and_exit_seconds(("zarr",)) < zarr_s  # the same launches, less zarr's import
