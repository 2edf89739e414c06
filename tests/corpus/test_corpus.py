"""Files nobody here wrote, read the way a new user would: `ioadvisor run` a generic explorer, then
`trace show` and `advise`.

The corpus: the netCDF-4 files of PyPI's iris-sample-data (Met Office CF data, read through xarray's
h5netcdf engine), netCDF-3 files shipped in iris-sample-data, xarray and scipy (xarray's default engine),
the HDF5 test files inside the h5py and PyTables wheels (h5py), and a file this test writes with every
HDF5 type class h5py can make. Targets: `trace show` and `advise` exit 0 with nothing on stderr; advise
gives a verdict for every numeric dataset read and a reason for every other dataset.
"""
import json
import math
import subprocess
import sys
from pathlib import Path

import h5py
import numpy as np
import pytest

from advisor.api import advise
from instrumentation.formats import netcdf3_format
from instrumentation.tracefile import load_trace

NUMERIC_CLASSES = ("integer", "float", "complex", "bool", "enum")

IOADVISOR = Path(sys.executable).parent / "ioadvisor"
EXPLORE = Path(__file__).with_name("explore.py")


def _package_files(module: str, sub: str, pattern: str) -> list[Path]:
    mod = pytest.importorskip(module)
    return sorted((Path(mod.__file__).parent / sub).glob(pattern))


def _iris() -> list[Path]:
    iris = pytest.importorskip("iris_sample_data")
    return sorted(Path(iris.path).rglob("*.nc"))


def write_every_type(path: Path) -> None:
    """One dataset per HDF5 type class (and layout corner) that h5py can make."""
    rng = np.random.default_rng(0)
    field = rng.standard_normal((64, 32))
    with h5py.File(path, "w") as f:
        f["int16_le"] = np.arange(400, dtype="<i2").reshape(20, 20)
        f["uint64_be"] = np.arange(400, dtype=">u8")
        f["float16"] = (field * 1e3).astype(np.float16)
        f["float32_be"] = field.astype(">f4")
        f["longdouble"] = field.astype(np.longdouble)
        f["complex64"] = (field + 1j * field).astype(np.complex64)
        f["bool"] = field > 0
        f["bytes_fixed"] = np.array([b"Particle: %6d" % i for i in range(50)])
        f.create_dataset("utf8_fixed", data=np.array([f"é{i}".encode() for i in range(50)],
                                                       dtype=h5py.string_dtype("utf-8", 8)))
        f.create_dataset("vlen_str", data=["x" * i for i in range(30)], dtype=h5py.string_dtype())
        f.create_dataset("vlen_bytes", data=[b"y" * i for i in range(30)], dtype=h5py.string_dtype("ascii"))
        table = np.zeros(200, dtype=[("id", "<i4"), ("name", "S4"), ("x", "<f8"), ("pos", "<f4", (3,))])
        table["x"] = rng.standard_normal(200)
        f.create_dataset("compound", data=table, chunks=(50,))
        vl = f.create_dataset("vlen_float", (10,), dtype=h5py.vlen_dtype(np.float32))
        for i in range(10):
            vl[i] = np.arange(i, dtype=np.float32)
        f.create_dataset("enum", data=np.arange(100, dtype=np.int8) % 3,
                         dtype=h5py.enum_dtype({"LAND": 0, "SEA": 1, "ICE": 2}, basetype=np.int8))
        refs = f.create_dataset("refs", (2,), dtype=h5py.ref_dtype)
        refs[0], refs[1] = f["int16_le"].ref, f["compound"].ref
        rrefs = f.create_dataset("region_refs", (1,), dtype=h5py.regionref_dtype)
        rrefs[0] = f["int16_le"].regionref[2:5, 3:7]
        f["opaque"] = np.frombuffer(rng.bytes(7 * 40), dtype="V7")
        f.create_dataset("array_type", data=np.zeros(20, dtype=np.dtype(("<f4", (3,)))))
        f.create_dataset("times", data=np.arange(20).astype("M8[s]").astype(h5py.opaque_dtype(np.dtype("M8[s]"))))
        f["scalar_float"] = 1.5
        f["scalar_str"] = "forecast"
        f["null"] = h5py.Empty("f4")
        f.create_dataset("zero_size", (0, 5), "f4")
        grow = f.create_dataset("unlimited", (10, 8), "f8", maxshape=(None, 8), chunks=(4, 8))
        grow[:] = field[:10, :8]
        f.create_dataset("gzip_chunked", data=field, chunks=(16, 32), compression="gzip")


PROFILE_CHECK = ("warning: this machine differs from ", "note: ")
"""advise's one-line check of this machine against the profile (iomodel.probe): meant for the user, and
dependent on the machine's load; any other stderr line is stray."""


def _stray(stderr: str) -> list[str]:
    return [line for line in stderr.splitlines() if not line.startswith(PROFILE_CHECK)]


def _cli(*args, cwd=None):
    return subprocess.run([str(IOADVISOR), *map(str, args)], capture_output=True, text=True, cwd=cwd, timeout=600)


def _traced(tmp_path, engine: str, files) -> Path:
    trace = tmp_path / "t.jsonl"
    run = _cli("run", "-o", trace, "--", sys.executable, EXPLORE, engine, *files)
    assert run.returncode == 0, run.stderr[-2000:]
    return trace


def _show_and_advise(trace: Path) -> tuple[str, dict]:
    """``trace show``'s text and ``advise --json``'s document."""
    show = _cli("trace", "show", trace)
    assert (show.returncode, show.stderr) == (0, ""), show.stderr
    adv = _cli("advise", trace, "--json")
    assert (adv.returncode, _stray(adv.stderr)) == (0, []), adv.stderr
    return show.stdout, json.loads(adv.stdout)


def _check_every_dataset_answered(trace_path: Path, advice: dict) -> tuple[set, set]:
    """Every dataset of the trace is advised or has a reason; every numeric dataset read is advised (or
    summed up among the minor ones: under 1% of the run's traced time)."""
    trace = load_trace(trace_path)
    advised = {d["name"] for d in advice["datasets"]} | {m["name"] for m in advice["minor"]}
    reasons = {n["name"]: n["reason"] for n in advice["not_advised"]}
    assert advised.isdisjoint(reasons)
    read = {a.dataset for a in trace.accesses}
    for i, ds in trace.datasets.items():
        assert ds.key in advised or reasons.get(ds.key), f"{ds.key}: neither advice nor reason"
        shape = trace.extent(i)
        if i in read and ds.type_class in NUMERIC_CLASSES and shape and math.prod(shape):
            assert ds.key in advised, f"{ds.key}: numeric data read but not advised: {reasons.get(ds.key)}"
    return advised, set(reasons)


@pytest.mark.slow
def test_iris_netcdf4_through_xarray_h5netcdf(tmp_path):
    pytest.importorskip("h5netcdf")
    files = [p for p in _iris() if h5py.is_hdf5(p)]
    assert len(files) >= 10
    trace = _traced(tmp_path, "h5netcdf", files)
    advised, skipped = _check_every_dataset_answered(trace, _show_and_advise(trace)[1])
    assert advised and any(k.endswith("::/forecast_reference_time") for k in skipped)  # CF scalar coordinates


@pytest.mark.slow
def test_h5py_and_pytables_test_files(tmp_path):
    files = (_package_files("h5py", "tests/data_files", "*.h5")
             + _package_files("tables", "tests", "*.h5"))
    assert len(files) >= 30
    trace = _traced(tmp_path, "h5py", files)
    shown, advice = _show_and_advise(trace)
    advised, skipped = _check_every_dataset_answered(trace, advice)
    reasons = " ".join(n["reason"] for n in advice["not_advised"])
    assert "lzo (305) is not available here" in reasons  # PyTables' LZO files: the program's reads failed
    assert "lzo (305) is not available here" in shown
    assert "variable-length" in reasons


def test_every_hdf5_type_class(tmp_path):
    data = tmp_path / "every_type.h5"
    write_every_type(data)
    trace = _traced(tmp_path, "h5py", [data])
    loaded = load_trace(trace)
    classes = {d.path.lstrip("/"): d.type_class for d in loaded.datasets.values()}
    assert classes["vlen_str"] == classes["vlen_bytes"] == classes["scalar_str"] == "vlen-string"
    assert (classes["compound"], classes["vlen_float"], classes["enum"], classes["refs"], classes["region_refs"],
            classes["opaque"], classes["times"], classes["bytes_fixed"]) == (
        "compound", "vlen", "enum", "reference", "reference", "opaque", "opaque", "string")
    shown, advice = _show_and_advise(trace)
    _check_every_dataset_answered(trace, advice)
    assert "shape (200) compound (28 B)" in shown and "shape (30) vlen-string" in shown
    full = advise(trace, min_share=0)  # every dataset in full, however little of the run's time it took
    by_path = {d.path.lstrip("/"): d for d in full.datasets}
    reasons = {n.path.lstrip("/"): n.reason for n in full.not_advised}
    assert {"int16_le", "uint64_be", "float16", "float32_be", "longdouble", "complex64", "bool", "enum",
            "unlimited", "gzip_chunked", "compound", "bytes_fixed", "utf8_fixed", "opaque"} <= set(by_path)
    assert reasons["scalar_float"] == "scalar: nothing to chunk"
    assert reasons["zero_size"].startswith("empty")
    assert reasons["vlen_str"].startswith("variable-length strings")
    assert reasons["vlen_float"].startswith("variable-length arrays")
    assert reasons["refs"].startswith("object/region references")
    assert "null" not in by_path  # a NULL dataspace holds no data: h5py reads nothing
    assert any("layout advice only" in n for n in by_path["compound"].notes)
    assert not any(n.startswith("while modelling") for d in by_path.values() for n in d.notes)
    # lossy codecs are for float32/float64 only, even when a bound allows them
    for name in ("float16", "longdouble", "complex64", "int16_le", "enum", "compound", "bytes_fixed"):
        d = advise(trace, dataset=name, max_error="rel:1e-3").dataset()
        assert not {c.candidate.compressor for c in d.candidates} & {"sz3", "zfp"}, name
    text = _cli("advise", trace)
    assert (text.returncode, _stray(text.stderr)) == (0, [])
    assert "/scalar_float: not advised: scalar: nothing to chunk" in text.stdout


def test_untraced_netcdf_files_say_so_in_one_line(tmp_path):
    pytest.importorskip("xarray")
    iris = [p for p in _iris() if netcdf3_format(p)]
    xarray_own = [p for p in _package_files("xarray", "tests/data", "*.nc") if netcdf3_format(p)]
    assert iris and xarray_own
    netcdf4 = [p for p in _iris() if h5py.is_hdf5(p)]
    # the last one read by netCDF-C's libhdf5: untraced only where the libhdf5 interposer is not built
    from instrumentation import interpose

    files = [iris[0], xarray_own[0]] + ([netcdf4[0]] if interpose.library() is None else [])
    for i, path in enumerate(files):
        trace = tmp_path / f"n{i}.jsonl"
        run = _cli("run", "-o", trace, "--", sys.executable, EXPLORE, "default", path)
        assert run.returncode == 0, run.stderr[-2000:]
        show = _cli("trace", "show", trace)
        assert (show.returncode, show.stderr) == (0, "")
        fmt = netcdf3_format(path) or "HDF5"
        assert f"{path}: {fmt} file" in show.stdout
        adv = _cli("advise", trace)
        assert (adv.returncode, _stray(adv.stderr)) == (0, [])
        assert adv.stdout.count("\n") == 1 and adv.stdout.startswith("nothing to advise in ")
        assert f"{path}: {fmt} file" in adv.stdout
        assert ("not HDF5" if fmt != "HDF5" else "engine='h5netcdf'") in adv.stdout
    if interpose.library() is not None:  # seen below Python (tests/instrumentation/test_interpose.py)
        trace = tmp_path / "n4.jsonl"
        assert _cli("run", "-o", trace, "--", sys.executable, EXPLORE, "default", netcdf4[0]).returncode == 0
        assert load_trace(trace).accesses
