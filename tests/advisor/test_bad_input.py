"""Bad input across the commands: one line on stderr naming what is wrong, a non-zero exit, no traceback
(issue #31, "Tracebacks and wrong records"); valid but odd input (int, complex, string data, odd names) runs.

Each case runs the CLI as a user would (``advisor.cli.main`` with the arguments a user types) on files made
here: foreign Parquet, HDF5 and Zarr files, hand-written traces with bad fields, and real traces of odd data.
"""
from __future__ import annotations

import json
import os

import h5py
import numpy as np
import pytest
import zarr

import advisor
from advisor.cli import main

HEADER = {"t": "h", "schema": 1, "host": "vm", "pid": 1, "rank": 0, "size": 1, "t_origin_unix": 0.0}
DATASET = {"t": "d", "id": 0, "library": "hdf5", "library_version": "2.0.0", "file": "/nowhere/f.h5",
           "path": "/x", "shape": [100, 10], "dtype": "float32", "chunks": [10, 10]}
SEL = {"start": [0, 0], "count": [1, 1], "stride": [1, 1], "block": [10, 10]}
ACCESS = {"t": "a", "ds": 0, "op": "read", "sel": SEL, "n": 100, "bytes": 400, "t0": 0.0, "dt": 0.001}


def _jsonl(path, *records, end=True):
    lines = [json.dumps(r) for r in records] + ([json.dumps({"t": "end", "n_access": 1})] if end else [])
    path.write_text("\n".join(lines) + "\n")
    return str(path)


@pytest.fixture(scope="module")
def files(tmp_path_factory):
    """Name -> path of every input the cases use."""
    d = tmp_path_factory.mktemp("bad")
    f = {}
    pd = pytest.importorskip("pandas")
    pd.DataFrame({"a": [1, 2, 3], "b": ["x", "y", "z"]}).to_parquet(d / "foreign.parquet")
    f["foreign.parquet"] = str(d / "foreign.parquet")
    (d / "pandas_dir.parquet").mkdir()
    pd.DataFrame({"a": [1.0]}).to_parquet(d / "pandas_dir.parquet" / "part.0.parquet")
    f["pandas_dir"] = str(d / "pandas_dir.parquet")
    (d / "garbage.parquet").write_bytes(bytes(range(256)) * 4)
    f["garbage.parquet"] = str(d / "garbage.parquet")
    (d / "empty.jsonl").write_bytes(b"")
    f["empty"] = str(d / "empty.jsonl")
    (d / "text.jsonl").write_text("hello world\nthis is not a trace\n")
    f["text"] = str(d / "text.jsonl")
    (d / "list.jsonl").write_text("[1, 2, 3]\n")
    f["list"] = str(d / "list.jsonl")
    (d / "cut_header.jsonl").write_text('{"t": "h", "schema": 1, "ho')
    f["cut_header"] = str(d / "cut_header.jsonl")
    f["missing"] = str(d / "no-such-file.jsonl")

    with h5py.File(d / "data.h5", "w") as h:
        h["time"] = np.arange(2000, dtype="i8")
        h["field"] = np.random.default_rng(0).random((64, 64)).astype("f4")
        h["half"] = np.ones((64, 64), "f2")
        h["cplx"] = np.ones(100, "c16")
        h["text"] = np.array([b"abc", b"de"] * 10, dtype="S3")
        h["vstr"] = ["abc", "de"] * 10
        h["rec"] = np.zeros(10, [("a", "f4"), ("b", "i4")])
        h["scalar"] = 3.0
        h["flags"] = np.ones(100, bool)
        h.create_dataset("empty", shape=(0,), dtype="f4")
        h.create_group("grp")
    f["h5"] = str(d / "data.h5")
    (d / "fake.h5").write_bytes(b"not hdf5 at all" * 10)
    f["fake.h5"] = str(d / "fake.h5")
    z = zarr.create_array(str(d / "grid.zarr"), shape=(40, 40), chunks=(10, 10), dtype="f4")
    z[:] = 1.0
    f["grid.zarr"] = str(d / "grid.zarr")
    g = zarr.open_group(str(d / "two.zarr"), mode="w")
    g.create_array("a", shape=(10,), dtype="f4")[:] = 1
    g.create_array("b", shape=(10,), dtype="f4")[:] = 2
    f["two.zarr"] = str(d / "two.zarr")
    (d / "bad.zarr").mkdir()
    (d / "bad.zarr" / "zarr.json").write_text("{not json")
    f["bad.zarr"] = str(d / "bad.zarr")
    (d / "empty.zarr").mkdir()
    f["empty.zarr"] = str(d / "empty.zarr")

    # real traces of odd data and odd names (the context manager: what a user writes)
    with advisor.trace(str(d / "odd.jsonl")):
        with h5py.File(d / "odd.h5", "w") as h:
            h["y"] = np.ones(10)  # an anonymous dataset linked afterwards: one record, not two
            h["odd name/ü x"] = np.arange(100, dtype="i2")
            h["cplx"] = np.ones((20, 20), "c8")
            h["vstr"] = ["a", "bb", "ccc"]
            h["y"][:5]
            h["cplx"][:2]
            h["odd name/ü x"][10:20]
            h["vstr"][0]
        root = zarr.create_array(str(d / "root.zarr"), shape=(30,), chunks=(10,), dtype="i4")
        root[:] = 7
        root[:15]
    f["odd"] = str(d / "odd.jsonl")
    with advisor.trace(str(d / "good.parquet")):
        with h5py.File(d / "good.h5", "w") as h:
            ds = h.create_dataset("v", shape=(200, 50), dtype="f4", chunks=(20, 50), compression="gzip")
            for i in range(10):
                ds[20 * i: 20 * i + 20] = i
            for i in range(10):
                ds[:, i]
    f["good"] = str(d / "good.parquet")

    # hand-written JSON Lines traces with one bad field each
    bad = {
        "shape_text": [HEADER, {**DATASET, "shape": "abc"}, ACCESS],
        "unknown_dtype": [HEADER, {**DATASET, "dtype": "<x9"}, ACCESS],
        "unknown_ds": [HEADER, DATASET, {**ACCESS, "ds": 7}],
        "negative_count": [HEADER, DATASET, {**ACCESS, "sel": {**SEL, "count": [-1, 1]}}],
        "rank_mismatch": [HEADER, DATASET, {**ACCESS, "sel": {**SEL, "start": [0, 0, 0]}}],
        "no_header": [DATASET, ACCESS],
        "unknown_type": [HEADER, {"t": "zz"}],
        "schema99": [{**HEADER, "schema": 99}, DATASET],
        "library": [HEADER, {**DATASET, "library": "netcdf"}, ACCESS],
        "op": [HEADER, DATASET, {**ACCESS, "op": "x"}],
        "nbytes_text": [HEADER, DATASET, {**ACCESS, "bytes": "many"}],
        "beyond_shape": [HEADER, DATASET, {**ACCESS, "sel": {**SEL, "start": [95, 0]}}],
        "zero_block": [HEADER, DATASET, {**ACCESS, "sel": {**SEL, "block": [0, 10]}}],
        "nan_time": [HEADER, DATASET, {**ACCESS, "dt": "NaN"}],
        "chunks_zero": [HEADER, {**DATASET, "chunks": [0, 10]}, ACCESS],
    }
    for name, records in bad.items():
        f[name] = _jsonl(d / f"{name}.jsonl", *records)
    f["no_end"] = _jsonl(d / "no_end.jsonl", HEADER, DATASET, ACCESS, end=False)
    (d / "not.darshan").write_bytes(os.urandom(2048))
    f["darshan"] = str(d / "not.darshan")
    f["dir"] = str(d)
    return f


def _h5(name):
    return lambda f: f"{f['h5']}:/{name}"


# (id, argv template: "{name}" is replaced by the path of files[name], expected exit: 0 valid, 2 a user error)
CASES = [
    # foreign or broken traces, every command that reads one
    ("show-foreign-parquet-truncated", "trace show --allow-truncated {foreign.parquet}", 2),
    ("show-foreign-parquet", "trace show {foreign.parquet}", 2),
    ("advise-foreign-parquet-truncated", "advise --allow-truncated {foreign.parquet}", 2),
    ("predict-foreign-parquet", "predict {foreign.parquet}", 2),
    ("verify-foreign-parquet", "verify {foreign.parquet}", 2),
    ("convert-foreign-parquet", "trace convert {foreign.parquet} {dir}/out.jsonl", 2),
    ("merge-foreign-parquet", "trace merge -o {dir}/m.parquet {foreign.parquet} {good}", 2),
    ("show-pandas-dir", "trace show {pandas_dir}", 2),
    ("advise-pandas-dir", "advise {pandas_dir}", 2),
    ("show-garbage-parquet", "trace show {garbage.parquet}", 2),
    ("advise-garbage-parquet", "advise --allow-truncated {garbage.parquet}", 2),
    ("show-hdf5-as-trace", "trace show {h5}", 2),
    ("advise-hdf5-as-trace", "advise {h5}", 2),
    ("show-zarr-as-trace", "trace show {grid.zarr}", 2),
    ("show-empty", "trace show {empty}", 2),
    ("show-text", "trace show --allow-truncated {text}", 2),
    ("show-list", "trace show {list}", 2),
    ("show-cut-header", "trace show --allow-truncated {cut_header}", 2),
    ("show-missing", "trace show {missing}", 2),
    ("advise-missing", "advise {missing}", 2),
    ("show-no-end", "trace show {no_end}", 2),
    ("show-shape-text", "trace show {shape_text}", 2),
    ("show-unknown-dtype", "trace show {unknown_dtype}", 2),
    ("show-unknown-ds", "trace show {unknown_ds}", 2),
    ("advise-negative-count", "advise {negative_count}", 2),
    ("show-no-header", "trace show {no_header}", 2),
    ("show-unknown-type", "trace show {unknown_type}", 2),
    ("show-schema99", "trace show {schema99}", 2),
    ("show-library", "trace show {library}", 2),
    ("show-op", "trace show {op}", 2),
    ("show-nbytes-text", "trace show {nbytes_text}", 2),
    ("advise-chunks-zero", "advise --no-data {chunks_zero}", 2),
    ("advise-rank-mismatch", "advise --no-data {rank_mismatch}", 2),
    ("advise-beyond-shape", "advise --no-data {beyond_shape}", 0),
    ("advise-zero-block", "advise --no-data {zero_block}", 0),
    ("advise-nan-time", "advise --no-data {nan_time}", 2),
    ("show-no-end-truncated", "trace show --allow-truncated {no_end}", 0),
    # compression on foreign data: missing members, non-float data, bad options
    ("compression-zarr-no-member", "compression {grid.zarr}/nope", 2),
    ("compression-zarr-group-of-two", "compression {two.zarr}", 2),
    ("compression-zarr-bad-json", "compression {bad.zarr}", 2),
    ("compression-zarr-empty-dir", "compression {empty.zarr}", 2),
    ("compression-h5-no-dataset", "compression {h5}:/nope", 2),
    ("compression-h5-group", "compression {h5}:/grp", 2),
    ("compression-h5-many", "compression {h5}", 2),
    ("compression-fake-h5", "compression {fake.h5}:/x", 2),
    ("compression-missing", "compression {missing}:/x", 2),
    ("compression-int-named-lossy", "compression {h5}:/time --compressor sz3", 2),
    ("compression-complex", "compression {h5}:/cplx", 2),
    ("compression-bytes", "compression {h5}:/text", 2),
    ("compression-vlen-string", "compression {h5}:/vstr", 2),
    ("compression-compound", "compression {h5}:/rec", 2),
    ("compression-bad-chunks", "compression {h5}:/field --chunks 8xq", 2),
    ("compression-bad-sample", "compression {h5}:/field --sample 0", 2),
    ("compression-bad-bound", "compression {h5}:/field --error-bound rel:", 2),
    ("compression-bad-range", "compression {h5}:/field --range -1", 2),
    ("compression-unknown-codec", "compression {h5}:/field --compressor gzip9", 2),
    # valid but odd data: a true exit 0
    ("compression-int", "compression {h5}:/time --compressor blosc-zstd,zstd", 0),
    ("compression-float16", "compression {h5}:/half --compressor zstd", 0),
    ("compression-bool", "compression {h5}:/flags --compressor zstd", 2),
    ("compression-zarr-root", "compression {grid.zarr} --compressor zstd --error-bound abs:0.1", 0),
    ("show-odd", "trace show {odd}", 0),
    ("advise-odd", "advise {odd}", 0),
    ("predict-odd-root-zarr", "predict {odd} --dataset 4", 0),
    # predict / advise / verify options
    ("predict-layout-text", "predict {good} --layout hdf5:chunks=abc", 2),
    ("predict-layout-zarr-contiguous", "predict {good} --layout zarr:contiguous", 2),
    ("predict-layout-filtered-contiguous", "predict {good} --layout hdf5:contiguous,filtered=1", 2),
    ("predict-layout-library", "predict {good} --layout netcdf:chunks=2x2", 2),
    ("predict-layout-rank", "predict {good} --layout hdf5:chunks=2x2x2", 2),
    ("predict-layout-key", "predict {good} --layout hdf5:speed=3", 2),
    ("predict-dataset", "predict {good} --dataset /nope", 2),
    ("predict-procs", "predict {good} --procs 0", 2),
    ("advise-top", "advise {good} --top 0", 2),
    ("advise-max-error", "advise {good} --max-error huge", 2),
    ("advise-compressors", "advise {good} --compressors gzip9", 2),
    ("advise-libraries", "advise {good} --libraries netcdf", 2),
    ("advise-max-bytes", "advise {good} --max-bytes lots", 2),
    ("advise-dataset", "advise {good} --dataset /nope", 2),
    ("verify-dataset", "verify {good} --dataset /nope", 2),
    ("verify-max-error", "verify {good} --max-error rel:x", 2),
    ("import-darshan-garbage", "import darshan {darshan} -o {dir}/d.jsonl", 2),
    ("import-darshan-missing", "import darshan {missing} -o {dir}/d2.jsonl", 2),
    ("import-darshan-text", "import darshan {text} -o {dir}/d3.jsonl", 2),
]


def _argv(template: str, files: dict) -> list[str]:
    out = []
    for word in template.split():
        for name, path in files.items():
            word = word.replace("{" + name + "}", path)
        out.append(word)
    return out


@pytest.mark.parametrize("template,expected", [c[1:] for c in CASES], ids=[c[0] for c in CASES])
def test_bad_input_is_one_line_without_traceback(files, template, expected, capsys):
    argv = _argv(template, files)
    if argv[0] == "import" and "darshan" in template:
        pytest.importorskip("darshan")
    rc = main(argv)
    err = capsys.readouterr().err
    assert "Traceback" not in err and "ioadvisor bug" not in err, err
    assert rc == expected, err
    if expected:
        lines = [ln for ln in err.splitlines() if ln.strip()]
        assert len(lines) == 1, err
        assert lines[0].startswith("ioadvisor "), err


def test_a_foreign_parquet_file_says_what_it_is(files, capsys):
    """Was AttributeError ('NoneType' object has no attribute 'size') with --allow-truncated."""
    assert main(["trace", "show", "--allow-truncated", files["foreign.parquet"]]) == 2
    err = capsys.readouterr().err
    assert f"{files['foreign.parquet']}:1: a Parquet file, not an ioadvisor trace" in err


def test_a_garbage_parquet_file_is_not_called_json(files, capsys):
    assert main(["trace", "show", files["garbage.parquet"]]) == 2
    err = capsys.readouterr().err
    assert "not valid JSON" not in err and "binary data, not an ioadvisor trace" in err


def test_a_name_inside_a_zarr_array_is_no_member(files, capsys):
    """Was IndexError ("invalid 'fields' argument"): an array's [...] took the name as a record field."""
    assert main(["compression", files["grid.zarr"] + "/nope"]) == 2
    assert "is an array, it has no member 'nope'" in capsys.readouterr().err


def test_lossy_codecs_are_left_out_for_integer_data(files, capsys):
    assert main(["compression", files["h5"] + ":/time", "--json"]) == 0
    captured = capsys.readouterr()
    rows = json.loads(captured.out)
    assert rows and {r["compressor"] for r in rows} == {"blosc-zstd"}
    assert "sz3" in captured.err and "float32/float64" in captured.err


def test_odd_records_are_named(files, capsys):
    """h5py's ``f[name] = data`` is one record (was a phantom ``FILE::``); a store-root zarr array is named by its
    store (was ``grid.zarr::``); odd names pass through."""
    from instrumentation.tracefile import load_trace

    trace = load_trace(files["odd"])
    paths = sorted(d.path for d in trace.datasets.values())
    assert paths == ["", "/cplx", "/odd name/ü x", "/vstr", "/y"]
    assert main(["trace", "show", files["odd"]]) == 0
    out = capsys.readouterr().out
    assert "root.zarr\n" in out and "root.zarr::" not in out
    assert "::/odd name/ü x" in out


def test_version(capsys):
    with pytest.raises(SystemExit) as exc:
        main(["--version"])
    assert exc.value.code == 0
    assert capsys.readouterr().out.startswith("ioadvisor ")


def test_odd_data_is_advised_or_named_with_a_reason(files):
    """Complex, string and int data, odd names and a store-root zarr array: each advised, or not advised with
    its reason; never a model failure, never an empty name (was ``h5py_kwargs() -> {'': {...}}``)."""
    from advisor.api import MODELS_FAILED

    adv = advisor.advise(files["odd"], min_share=0.0)
    assert not [n for n in adv.not_advised if n.reason.startswith(MODELS_FAILED)], adv.not_advised
    names = {d.name for d in adv.datasets} | {n.name for n in adv.not_advised}
    assert len(names) == 5 and all(names) and not any(n.endswith("::") for n in names)
    keys = {d.path or d.name for d in adv.datasets}  # the keys of h5py_kwargs() / zarr_kwargs()
    assert "" not in keys and any(k.endswith("root.zarr") for k in keys)
