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


RUN_APP = """
import subprocess, sys, h5py, netCDF4, zarr
h5, nc, z, out = sys.argv[1:5]
with h5py.File(h5, "r") as f:
    seen = [float(f["x"][0])]
with netCDF4.Dataset(nc) as d:
    seen.append(float(d["tas"][0, 0, 5]))
seen.append(float(zarr.open_array(z, mode="r")[0]))
# a Python program it starts is redirected too
seen.append(float(subprocess.check_output([sys.executable, "-c",
    "import sys, h5py; print(h5py.File(sys.argv[1], 'r')['x'][0])", h5])))
open(out, "w").write(repr(seen))
"""


def test_run_substitute_serves_the_copy_to_the_unchanged_program(tmp_path):
    import h5py
    import numpy as np
    import zarr

    from tests.advisor.conftest import write_netcdf

    pairs = []
    for side, value in (("src", 1.0), ("dest", 2.0)):
        with h5py.File(tmp_path / f"{side}.h5", "w") as f:
            f["x"] = np.full(4, value)
        zarr.create_array(tmp_path / f"{side}.zarr", shape=(4,), dtype="f8")[:] = value
        write_netcdf(tmp_path / f"{side}.nc", nan=False)
    with h5py.File(tmp_path / "dest.nc", "a") as f:  # the copy's values differ from the source's
        f["tas"][...] = f["tas"][...] + 1000
    with h5py.File(tmp_path / "src.nc", "r") as f:
        expect_nc = float(f["tas"][0, 0, 5]) + 1000
    for ext in ("h5", "nc", "zarr"):
        pairs += ["--substitute", f"{tmp_path / f'src.{ext}'}={tmp_path / f'dest.{ext}'}"]
    app, out, trace = tmp_path / "app.py", tmp_path / "seen.txt", tmp_path / "t.jsonl"
    app.write_text(RUN_APP)
    r = subprocess.run([str(IOADVISOR), "run", *pairs, "-o", str(trace), "--", sys.executable, str(app),
                        *(str(tmp_path / f"src.{e}") for e in ("h5", "nc", "zarr")), str(out)],
                       capture_output=True, text=True, timeout=300)
    assert r.returncode == 0, r.stderr
    seen = eval(out.read_text())
    assert seen[0] == 2.0 and abs(seen[1] - expect_nc) < 1e-3 and seen[2] == 2.0 and seen[3] == 2.0
    assert "dest.h5" in trace.read_text()  # the trace records the file really read


def test_run_substitute_bad_pair_is_one_line(tmp_path):
    r = subprocess.run([str(IOADVISOR), "run", "--substitute", f"{tmp_path / 'no.h5'}={tmp_path / 'x.h5'}", "-o",
                        str(tmp_path / "t.jsonl"), "--", sys.executable, "-c", "0"],
                       capture_output=True, text=True, timeout=120)
    assert r.returncode == 2 and r.stderr.count("\n") == 1 and "does not exist" in r.stderr
    assert not (tmp_path / "t.jsonl").exists()


def test_claim_is_the_run_level_speedup_of_the_copy_library(netcdf_case):
    from advisor.api import advise
    from advisor.apply.compare import claimed_speedup

    _, trace, _ = netcdf_case
    adv = advise(str(trace))
    d = adv.datasets[0]
    assert d.run_seconds and d.run_seconds >= d.current_seconds
    for lib in ("hdf5", "zarr"):
        claim = claimed_speedup(adv, lib)
        # what a copy in ``lib`` would hold: the recommendation when it is of ``lib`` (a near-tie rule may have
        # chosen it over the fastest, advisor.choice.TIE_RULES), else that library's fastest candidate
        applied = d.recommendation if d.recommendation.library == lib else d.best_of(lib)
        assert claim == d.run_speedup(applied)
        calls = d.speedup_vs_current(applied)
        assert min(1.0, calls) - 1e-9 <= claim <= max(1.0, calls) + 1e-9  # the time outside the calls stays


CREATE_APP = """
import sys, h5py, netCDF4, numpy as np, zarr
h5, nc, z = sys.argv[1:4]
with h5py.File(h5, "w") as f:  # the program makes its own data: a creation, not an open of the copy
    f["x"] = np.full(4, 9.0)
with netCDF4.Dataset(nc, "w") as d:
    d.createDimension("n", 4)
    d.createVariable("v", "f8", ("n",))[:] = 9.0
zarr.create_array(zarr.storage.LocalStore(z), shape=(4,), dtype="f8", overwrite=True)[:] = 9.0
zarr.open_array(z, mode="w", shape=(4,), dtype="f8")[:] = 9.0
with h5py.File(h5, "r") as f:  # reading it back is an open of existing data: served from the copy
    print(float(f["x"][0]))
"""


def test_substitute_never_serves_a_creation_from_the_copy(tmp_path):
    """Opens that create the file (w, w-, x) go to SRC: served from DEST they would overwrite the copy."""
    import h5py
    import numpy as np

    for side, value in (("src", 1.0), ("dest", 2.0)):
        with h5py.File(tmp_path / f"{side}.h5", "w") as f:
            f["x"] = np.full(4, value)
    (tmp_path / "src.nc").write_bytes((tmp_path / "src.h5").read_bytes())
    (tmp_path / "dest.nc").write_bytes((tmp_path / "dest.h5").read_bytes())
    import zarr

    for side, value in (("src", 1.0), ("dest", 2.0)):
        zarr.create_array(tmp_path / f"{side}.zarr", shape=(4,), dtype="f8")[:] = value
    pairs = []
    for ext in ("h5", "nc", "zarr"):
        pairs += ["--substitute", f"{tmp_path / f'src.{ext}'}={tmp_path / f'dest.{ext}'}"]
    app = tmp_path / "app.py"
    app.write_text(CREATE_APP)
    r = subprocess.run([str(IOADVISOR), "run", *pairs, "-o", str(tmp_path / "t.jsonl"), "--", sys.executable, str(app),
                        *(str(tmp_path / f"src.{e}") for e in ("h5", "nc", "zarr"))],
                       capture_output=True, text=True, timeout=300)
    assert r.returncode == 0, r.stderr
    assert r.stdout.split()[-1] == "2.0"  # the read of existing data still came from the copy
    with h5py.File(tmp_path / "dest.h5", "r") as f:
        assert float(f["x"][0]) == 2.0  # the copy untouched
    with h5py.File(tmp_path / "src.h5", "r") as f:
        assert float(f["x"][0]) == 9.0  # the creation went where the program said
    with h5py.File(tmp_path / "dest.nc", "r") as f:
        assert float(f["x"][0]) == 2.0
    assert float(zarr.open_array(str(tmp_path / "dest.zarr"), mode="r")[0]) == 2.0
    assert float(zarr.open_array(str(tmp_path / "src.zarr"), mode="r")[0]) == 9.0


def test_claim_is_made_for_the_measured_window(netcdf_case):
    """The claimed saving (seconds) against the measured original run, beside the traced window's ratio."""
    from advisor.api import advise
    from advisor.apply.compare import Comparison, claimed_run, claimed_saving

    _, trace, _ = netcdf_case
    adv = advise(str(trace), dataset="tas")
    for lib in ("hdf5", "zarr"):
        d = adv.datasets[0]
        r = d.recommendation if d.recommendation.library == lib else d.best_of(lib)
        assert claimed_saving(adv, lib) == d.current_seconds - r.seconds
    c = Comparison(("app",), {}, (10.0, 11.0, 9.0), (4.0, 5.0, 6.0), claimed=3.0, saved_seconds=6.0)
    assert c.claimed_measured_window == 10.0 / 4.0 and c.claim == 3.0 and c.speedup == 2.0
    cfg = c.get_config()
    assert cfg["claimed_speedup"] == 3.0 and cfg["claimed_measured_window"] == 2.5 and cfg["saved_seconds"] == 6.0
    assert "2.5x" in c.table()
    # a saving beyond the measured run (the traced run was slower): no measured-window claim
    assert Comparison(("app",), {}, (10.0,), (5.0,), claimed=3.0, saved_seconds=12.0).claimed_measured_window is None
    assert Comparison(("app",), {}, (10.0,), (5.0,), saved_seconds=6.0).claim == 2.5  # no ratio: the seconds
    # the traced run the claim rests on is shown beside the measured runs (a busier machine's run is slower)
    c = Comparison(("app",), {}, (10.0, 11.0, 9.0), (4.0, 5.0, 6.0), claimed=3.0, saved_seconds=6.0,
                   traced_run=(14.0, 9.0))
    assert c.get_config()["traced_run_seconds"] == 14.0 and c.get_config()["traced_calls_seconds"] == 9.0
    assert "14 s from its start" in c.table() and "9 s of it in the calls" in c.table()
    for lib in ("hdf5", "zarr"):
        d = max((d for d in adv.datasets if d.best_of(lib) is not None), key=lambda d: d.current_seconds)
        got = claimed_run(adv, lib)
        assert got is None if not d.run_seconds else got == (d.run_seconds, d.current_seconds)


LAZY_APP = """
import sys
before = sorted(m for m in ("h5py", "zarr", "netCDF4") if m in sys.modules)
import h5py
from h5py import File
with File(sys.argv[1], "r") as f:
    value = float(f["x"][0])
print(before, value, "zarr" in sys.modules, "netCDF4" in sys.modules)
"""


def test_substitution_hook_imports_nothing_the_program_does_not(tmp_path):
    """compare's start-up hook patches a library when the program imports it: no side of a comparison pays the
    import of a library its program does not use (an up-front import of all three was a fixed cost of every run)."""
    import h5py

    from advisor.apply.compare import substitution_environment

    src, dest = tmp_path / "a.h5", tmp_path / "b.h5"
    for p, v in ((src, 1.0), (dest, 2.0)):
        with h5py.File(p, "w") as f:
            f["x"] = [v]
    app = tmp_path / "app.py"
    app.write_text(LAZY_APP)
    for table, want in (({}, "1.0"), ({str(src.resolve()): str(dest)}, "2.0")):
        env = substitution_environment(table, {"PATH": "/usr/bin:/bin"})
        out = subprocess.run([sys.executable, str(app), str(src)], env=env, capture_output=True, text=True,
                             timeout=120)
        assert out.returncode == 0, out.stderr
        assert out.stdout.split() == ["[]", want, "False", "False"]


def test_claim_note_names_the_cache_the_unchanged_program_does_not_set(netcdf_case):
    """An advised HDF5 chunk cache is set when opening, not stored in the file: compare says its measurement runs
    without it."""
    from dataclasses import replace

    from advisor.api import advise
    from advisor.apply.compare import Comparison, claim_note

    _, trace, _ = netcdf_case
    adv = advise(str(trace), dataset="tas")
    d = adv.datasets[0]
    r = d.recommendation if d.recommendation.library == "hdf5" else d.best_of("hdf5")
    for cache, said in ((8 << 20, True), (None, False)):
        c = replace(r.candidate, chunks=r.candidate.chunks or (4, 4, 4), cache_bytes=cache)
        one = replace(adv, datasets=(replace(d, recommendation=replace(r, candidate=c),
                                             candidates=(replace(r, candidate=c),)),))
        note = claim_note(one, "hdf5")
        assert (note is not None) == said and (not said or str(8 << 20) in note)
    c = Comparison(("app",), {}, (2.0,), (1.0,), claimed=2.0, note="the cache")
    assert "note: the cache" in c.table() and c.get_config()["claim_note"] == "the cache"
