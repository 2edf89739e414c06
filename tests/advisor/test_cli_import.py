"""``ioadvisor import darshan``: from the IOR HDF5 example log to advice, and its one-line errors."""
import json
from dataclasses import replace
from pathlib import Path

import pytest

from advisor.cli import main
from advisor.synthetic import PLACEMENT_FACTOR
from instrumentation.tracefile import load_trace, write_trace

darshan = pytest.importorskip("darshan")
LOGS = Path(darshan.__file__).parent / "examples" / "example_logs"
IOR = LOGS / "ior_hdf5_example.darshan"
MACSIO = next(LOGS.glob("shane_macsio_*.darshan"))


def test_import_show_advise_predict(tmp_path, capsys):
    out = tmp_path / "ior.jsonl"
    assert main(["import", "darshan", str(IOR), "-o", str(out)]) == 0
    assert "24 synthesized accesses" in capsys.readouterr().err
    assert main(["trace", "show", str(out)]) == 0
    shown = capsys.readouterr().out
    assert "synthetic trace" in shown and "? placement:" in shown and "- shape: (524288,)" in shown
    assert "? dtype: <f8 assumed" in shown
    assert main(["advise", str(out), "--no-data", "--json"]) == 0
    adv = json.loads(capsys.readouterr().out)
    (ds,) = adv["datasets"]
    note = ds["notes"][0]
    assert note.startswith("synthetic trace") and "placement" in note and "dtype" in note
    assert main(["predict", str(out), "--procs", "4", "--json"]) == 0
    (pred,) = json.loads(capsys.readouterr().out)
    assert ds["current"]["seconds"] == pytest.approx(pred["seconds"], rel=1e-9)
    # the same accesses in a trace not marked synthetic (and, as a synthetic one, not calibrated on its spread
    # times): the model's own intervals, PLACEMENT_FACTOR narrower (the 1-D shape is exact, so the placement
    # factor applies, not the guessed-shape one)
    trace = load_trace(out)
    trace.headers = [replace(h, synthetic=False, facts=()) for h in trace.headers]
    plain = tmp_path / "plain.jsonl"
    write_trace(trace, plain)
    assert main(["advise", str(plain), "--no-data", "--no-calibrate", "--json"]) == 0
    (pds,) = json.loads(capsys.readouterr().out)["datasets"]
    assert not any(n.startswith("synthetic") for n in pds["notes"])
    for key in ("current", "recommendation", "best_change"):
        lo, hi = pds[key]["seconds_ci"]
        assert ds[key]["seconds_ci"] == pytest.approx([lo / PLACEMENT_FACTOR, hi * PLACEMENT_FACTOR])


def test_shape_option_and_default_output_name(tmp_path, capsys, monkeypatch):
    monkeypatch.chdir(tmp_path)
    assert main(["import", "darshan", str(MACSIO), "--shape", "/constant=72x31x744"]) == 0
    tr = load_trace(tmp_path / (MACSIO.stem + ".jsonl"))
    (ds,) = tr.datasets.values()
    assert ds.shape == (72, 31, 744)


@pytest.mark.parametrize("argv, message", [
    (["--shape", "/constant=7x7"], "the log records a 3-D fixed dataspace of 1660608 points"),
    (["--shape", "constant"], "expected DATASET=AxB"),
])
def test_bad_shape_is_one_line(tmp_path, capsys, argv, message):
    assert main(["import", "darshan", str(MACSIO), "-o", str(tmp_path / "t.jsonl"), *argv]) == 2
    err = capsys.readouterr().err
    assert message in err and err.count("\n") == 1


def test_log_without_h5d_module(tmp_path, capsys):
    assert main(["import", "darshan", str(LOGS / "dxt.darshan"), "-o", str(tmp_path / "t.jsonl")]) == 2
    err = capsys.readouterr().err
    assert "no H5D module" in err and "--enable-hdf5-mod" in err and err.count("\n") == 1
    assert not (tmp_path / "t.jsonl").exists()


def test_existing_output_error_speaks_cli(tmp_path, capsys):
    out = tmp_path / "t.jsonl"
    out.write_text("keep me")
    assert main(["import", "darshan", str(IOR), "-o", str(out)]) == 2
    err = capsys.readouterr().err
    assert "--force" in err and "overwrite=True" not in err and out.read_text() == "keep me"


def test_blocks_of_a_c_program_are_not_called_dask(tmp_path, capsys):
    from dataclasses import replace as dc_replace

    from advisor.advice import explain

    out = tmp_path / "ior.jsonl"
    assert main(["import", "darshan", str(IOR), "-o", str(out)]) == 0
    import advisor

    (ds,) = advisor.advise(out, read_data=False).datasets
    lines = explain(dc_replace(ds, blocking=(32768,), idiom=None))
    assert any("blocks on a grid" in ln for ln in lines) and not any("dask" in ln for ln in lines)
