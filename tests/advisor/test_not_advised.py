"""A dataset the models cannot advise gets a reason, and never stops the advice for the others."""
import json
import warnings

import h5py
import numpy as np
import pytest

import advisor
import advisor.api
from advisor.advice import Advice
from advisor.cli import main


@pytest.fixture
def mixed(tmp_path):
    """A run reading a numeric field, a CF-style scalar and variable-length strings."""
    with h5py.File(tmp_path / "f.h5", "w") as f:
        f.create_dataset("temp", data=np.random.default_rng(0).normal(size=(400, 40)).astype("f4"), chunks=(40, 40))
        f["forecast_reference_time"] = 3.5
        f.create_dataset("names", data=[f"station {i}" for i in range(40)], dtype=h5py.string_dtype())
    with advisor.trace(tmp_path / "t.jsonl"), h5py.File(tmp_path / "f.h5", "r") as f:
        for r in range(0, 400, 40):
            f["temp"][r:r + 40]
        f["forecast_reference_time"][()]
        f["names"][:]
    return tmp_path / "t.jsonl"


def test_each_dataset_advised_or_told_why(mixed):
    adv = advisor.advise(mixed)
    assert [d.path for d in adv.datasets] == ["/temp"]
    reasons = {n.path: n.reason for n in adv.not_advised}
    assert reasons == {"/forecast_reference_time": "scalar: nothing to chunk",
                       "/names": reasons["/names"]} and reasons["/names"].startswith("variable-length strings")
    assert Advice.from_config(json.loads(json.dumps(adv.get_config()))).not_advised == adv.not_advised
    assert "/forecast_reference_time: not advised: scalar: nothing to chunk" in str(adv)


def test_a_model_failure_on_one_dataset_spares_the_others(mixed, tmp_path, monkeypatch):
    with h5py.File(tmp_path / "f.h5", "a") as f:
        f["pressure"] = np.ones((100, 10), "f8")
    with advisor.trace(tmp_path / "t2.jsonl"), h5py.File(tmp_path / "f.h5", "r") as f:
        f["temp"][:40]
        f["pressure"][:50]
    real = advisor.api._advise_one

    def failing_on_pressure(trace, ds, *args):
        if ds.path == "/pressure":
            raise RuntimeError("boom")
        return real(trace, ds, *args)

    monkeypatch.setattr(advisor.api, "_advise_one", failing_on_pressure)
    adv = advisor.advise(tmp_path / "t2.jsonl", min_share=0)
    assert [d.path for d in adv.datasets] == ["/temp"]
    assert [(n.path, n.reason) for n in adv.not_advised] == [
        ("/pressure", "the models failed on it (RuntimeError: boom)")]


def test_nothing_advisable_is_one_clean_line(tmp_path, capsys):
    with h5py.File(tmp_path / "f.h5", "w") as f:
        f["scalar"] = 1.0
        f.create_dataset("empty", (0, 4), "f4")
    with advisor.trace(tmp_path / "t.jsonl"), h5py.File(tmp_path / "f.h5", "r") as f:
        f["scalar"][()]
        f["empty"][:]
    assert main(["advise", str(tmp_path / "t.jsonl")]) == 0
    out = capsys.readouterr().out
    assert out.count("\n") == 1
    assert out.startswith(f"nothing to advise in {tmp_path / 't.jsonl'}: /empty: empty (size 0): nothing to chunk or "
                          "compress; /scalar: scalar: nothing to chunk")


def test_float16_gives_no_numeric_warning(tmp_path):
    """The fill-value check once cast 1e30 to float16 ("overflow encountered in cast" on the terminal)."""
    with h5py.File(tmp_path / "f.h5", "w") as f:
        f["half"] = np.random.default_rng(1).normal(size=(300, 30)).astype(np.float16)
    with advisor.trace(tmp_path / "t.jsonl"), h5py.File(tmp_path / "f.h5", "r") as f:
        f["half"][:100]
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        adv = advisor.advise(tmp_path / "t.jsonl")
    assert not caught
    (d,) = adv.datasets
    assert not [n for n in d.notes if n.startswith("while modelling")]  # where a model's warning would go


def test_html_report_lists_the_datasets_not_advised(mixed, tmp_path):
    from advisor.report import render

    page = render(advisor.advise(mixed))
    assert "<h2>Not advised</h2>" in page and "forecast_reference_time: scalar: nothing to chunk" in page
