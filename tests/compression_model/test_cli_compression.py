"""``ioadvisor compression`` on real HDF5 files and Zarr stores; bad input -> one line, exit 2."""
import json

import numpy as np
import pytest

from advisor.cli import main


@pytest.fixture(scope="module")
def field():
    rng = np.random.default_rng(9)
    return np.cumsum(np.cumsum(rng.normal(size=(32, 96, 96)), axis=1), axis=2).astype(np.float32)


@pytest.fixture
def h5file(field, tmp_path):
    import h5py

    path = tmp_path / "f.h5"
    with h5py.File(path, "w") as f:
        f.create_dataset("grp/temp", data=field, chunks=(8, 32, 32))
        f.create_dataset("other", data=np.zeros(4))
    return path


def run_json(capsys, argv):
    assert main(argv) == 0
    return json.loads(capsys.readouterr().out)


def test_hdf5_json_verify(h5file, capsys):
    rows = run_json(capsys, ["compression", f"{h5file}:/grp/temp", "--compressor", "sz3,zfp,blosc-zstd",
                             "--error-bound", "rel:1e-3", "--error-bound", "abs:0.5", "--sample", "0.05",
                             "--verify", "--json"])
    assert [(r["compressor"], r["error_bound"]) for r in rows] == [
        ("sz3", {"mode": "rel", "value": 1e-3}), ("sz3", {"mode": "abs", "value": 0.5}),
        ("zfp", {"mode": "rel", "value": 1e-3}), ("zfp", {"mode": "abs", "value": 0.5}),
        ("blosc-zstd", None)]
    for r in rows:
        assert r["chunks"] == [8, 32, 32]  # the dataset's own
        assert r["ratio_ci"][0] <= r["ratio"] <= r["ratio_ci"][1] and r["ratio"] > 1
        assert r["compress_mbps"] > 0 and r["decompress_mbps"] > 0 and len(r["time_ci"]) == 2
        assert r["method"] == ("graybox" if r["compressor"] == "zfp" else "sampling")  # estimate.auto_method
        m = r["measured"]
        assert m["bound_held"] and m["ratio"] > 1 and m["compress_mbps"] > 0
    sz3_rel, sz3_abs = rows[0], rows[1]
    assert sz3_abs["ratio"] > sz3_rel["ratio"]  # abs:0.5 is the looser bound on this field


def test_zarr_input_and_chunks_override(field, tmp_path, capsys):
    import zarr

    arr = zarr.create_array(tmp_path / "s.zarr", name="temp", shape=field.shape, dtype=field.dtype, chunks=(8, 48, 48))
    arr[...] = field
    rows = run_json(capsys, ["compression", str(tmp_path / "s.zarr/temp"), "--chunks", "16x32x32", "--json",
                             "--error-bound", "rel:1e-2"])
    assert {r["compressor"] for r in rows} == {"sz3", "zfp", "blosc-zstd"}  # no SZ2 for Zarr
    assert all(r["chunks"] == [16, 32, 32] for r in rows)
    rows = run_json(capsys, ["compression", str(tmp_path / "s.zarr"), "--compressor", "sz3", "--json"])
    assert len(rows) == 3  # default bounds rel 1e-2, 1e-3, 1e-4 on the store's only array
    assert rows[0]["ratio"] > rows[1]["ratio"] > rows[2]["ratio"]


def test_xarray_zarr3_fill_value_is_decoded(field, tmp_path, capsys):
    """xarray writes a float ``_FillValue`` into a Zarr 3 store as base64 ("AAAAAAA4j8A=" is -999.0); those
    cells are missing data, not part of the range a relative bound resolves against."""
    import xarray as xr

    x = field.copy()
    x[:, :10, :] = np.nan  # stored as -999
    xr.Dataset({"temp": (("t", "y", "x"), x)}).to_zarr(
        tmp_path / "x.zarr", zarr_format=3, consolidated=False,
        encoding={"temp": {"_FillValue": -999.0, "chunks": (8, 48, 48)}})
    rows = run_json(capsys, ["compression", str(tmp_path / "x.zarr/temp"), "--compressor", "zfp",
                             "--error-bound", "rel:1e-2", "--json"])
    assert rows[0]["value_range"] == pytest.approx(float(np.nanmax(x) - np.nanmin(x)))


def test_text_output_flags_zfp_on_nan(field, tmp_path, capsys):
    import h5py

    x = field.copy()
    x[:, :10, :] = np.nan
    with h5py.File(tmp_path / "n.h5", "w") as f:
        f.create_dataset("x", data=x, chunks=(8, 32, 32))
    assert main(["compression", str(tmp_path / "n.h5"), "--compressor", "zfp,sz", "--error-bound", "rel:1e-3",
                 "--verify"]) == 0
    out = capsys.readouterr().out
    assert "NaN" in out and "does not preserve NaN" in out
    assert "verified" in out  # SZ2 keeps NaN and is verified


@pytest.mark.parametrize("argv_tail,message", [
    (["missing.h5:/x"], "no such file"),
    (["{h5}:/nope"], "no dataset"),
    (["{h5}"], "holds 2 datasets"),
    (["{h5}:/grp/temp", "--error-bound", "rel:x"], "bad error bound 'rel:x'"),
    (["{h5}:/grp/temp", "--compressor", "sz3,bogus"], "unknown compressor 'bogus'"),
    (["{h5}:/grp/temp", "--chunks", "8x8"], "bad --chunks"),
    (["{h5}:/grp/temp", "--sample", "2"], "bad --sample"),
])
def test_bad_input_one_line_exit_2(h5file, tmp_path, capsys, monkeypatch, argv_tail, message):
    monkeypatch.chdir(tmp_path)
    argv = ["compression"] + [a.replace("{h5}", str(h5file)) for a in argv_tail]
    assert main(argv) == 2
    err = capsys.readouterr().err.strip()
    assert err.startswith("ioadvisor compression: error:") and message in err and "\n" not in err


def test_target_ratio_finds_tightest_bound(h5file, capsys):
    rows = run_json(capsys, ["compression", f"{h5file}:/grp/temp", "--compressor", "zfp", "--target-ratio", "6",
                             "--sample", "0.05", "--json"])
    (row,) = rows
    assert row["error_bound"]["mode"] == "rel" and row["ratio"] >= 6 and row["target_ratio_met"]
    tighter = run_json(capsys, ["compression", f"{h5file}:/grp/temp", "--compressor", "zfp", "--sample", "0.05",
                                "--error-bound", f"rel:{row['error_bound']['value'] / 1.2}", "--json"])
    assert tighter[0]["ratio"] < 6  # about the tightest bound that reaches the target
