import json

import numpy as np
import pytest

from advisor.cli import main
from instrumentation.records import READ, AccessRecord, DatasetRecord, Selection, TraceHeader
from instrumentation.tracefile import TraceWriter

from test_search import profile


@pytest.fixture(scope="module")
def files(tmp_path_factory):
    import h5py

    d = tmp_path_factory.mktemp("cli")
    data = np.cumsum(np.random.default_rng(0).normal(size=(20000, 16)), axis=0).astype(np.float32)
    data[5, 3] = np.nan
    with h5py.File(d / "f.h5", "w") as f:
        f.create_dataset("v", data=data, chunks=(20000, 1))
    w = TraceWriter(d / "t.jsonl", TraceHeader(1, "h", 1, 0, 1, 0.0))
    w.dataset(DatasetRecord(0, "hdf5", "2", str(d / "f.h5"), "/v", data.shape, "float32", chunks=(20000, 1)))
    for r in range(0, 20000, 400):
        s = Selection.box((r, 0), (400, 16))
        w.access(AccessRecord(0, READ, s, s.nelements, 4 * s.nelements, 0.0, 0.001))
    w.close()
    prof = d / "profile.json"
    prof.write_text(json.dumps({"schema": 1, "io": profile().get_config()}))
    return d, prof


def test_advise_json_and_constraints(files, capsys):
    d, prof = files
    assert main(["advise", str(d / "t.jsonl"), "--profile", str(prof), "--json", "--max-error", "rel:1e-3",
                 "--compressors", "sz3,zfp,zstd", "--top", "3"]) == 0
    doc = json.loads(capsys.readouterr().out)
    (ds,) = doc["datasets"]
    codecs = {c["compressor"] for c in ds["candidates"]}
    assert "zfp" not in codecs  # the data has a NaN
    assert any("zfp" in n and "NaN" in n for n in ds["notes"])
    assert main(["advise", str(d / "t.jsonl"), "--profile", str(prof), "--json", "--lossless-only",
                 "--max-error", "rel:1e-3", "--compressors", "sz3,zstd"]) == 0
    doc = json.loads(capsys.readouterr().out)
    for c in doc["datasets"][0]["candidates"]:
        assert c["compressor"] in (None, "zstd") and c["error_bound"] is None


def test_advise_table(files, capsys):
    d, prof = files
    assert main(["advise", str(d / "t.jsonl"), "--profile", str(prof), "--no-data"]) == 0
    out = capsys.readouterr().out
    assert "verdict: " in out and "Verdict: " in out and "h5py.File(" in out and "current" in out
    assert "reading the data was switched off: compression not considered" in out


@pytest.mark.parametrize("extra,message", [
    (["--max-error", "oops"], "bad error bound"),
    (["--compressors", "sz3"], "max-error"),
    (["--objective", "size"], "max-seconds"),
    (["--compressors", "nope"], "unknown compressor"),
    (["--top", "0"], "--top"),
    (["--dataset", "missing"], "no dataset"),
    (["--max-bytes", "lots"], "max-bytes"),
])
def test_errors_are_one_line_exit_2(files, capsys, extra, message):
    d, prof = files
    assert main(["advise", str(d / "t.jsonl"), "--profile", str(prof)] + extra) == 2
    err = capsys.readouterr().err.strip()
    assert err.startswith("ioadvisor advise: error:") and message in err and "\n" not in err


def test_bad_trace_is_one_line(tmp_path, capsys):
    bad = tmp_path / "bad.jsonl"
    bad.write_text("{not json\n")
    assert main(["advise", str(bad)]) == 2
    assert "bad.jsonl:1" in capsys.readouterr().err


def test_a_probed_profile_is_rescaled_once_without_a_warning(files, capsys, monkeypatch, tmp_path):
    """Issue #31 item 7: on a machine of the profile's kind whose page cache probes 2.5x slower (load), the
    read terms follow the probe, a note says so once, and no warning is printed."""
    import iomodel.probe as probe

    d, _ = files
    prof = tmp_path / "probed.json"
    prof.write_text(json.dumps({"schema": 1, "io": {**profile().get_config(),
                                                    "probe": {"page_cache_bps": 30e9, "disk_bps": 2e9}}}))
    monkeypatch.setattr(probe, "_CURRENT", {"page_cache_bps": 12e9, "disk_bps": 2e9})
    assert main(["advise", str(d / "t.jsonl"), "--profile", str(prof), "--json", "--no-data"]) == 0
    captured = capsys.readouterr()
    assert "warning" not in captured.err
    notes = [n for ds in json.loads(captured.out)["datasets"] for n in ds["notes"]]
    assert sum("profile rescaled to this machine's speed probes: page-cache read terms x2.5" in n
               for n in notes) == 1
