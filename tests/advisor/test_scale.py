"""Advice at scale: the same recommendations from JSON Lines and columnar traces, on threads and MPI ranks."""
import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import h5py
import numpy as np
import pytest

import advisor
import advisor.search as search
from advisor.api import advise
from instrumentation import load_trace, write_trace
from test_search import profile

REPO = Path(__file__).resolve().parents[2]
BIN = Path(sys.executable).parent
WORKLOADS = REPO / "benchmarks" / "workloads"


def _env(**extra):
    return {**os.environ, "PYTHONPATH": str(REPO), **extra}


def _rounded(x):
    if isinstance(x, float):
        return float(f"{x:.6g}")
    if isinstance(x, dict):
        return {k: _rounded(v) for k, v in x.items()}
    if isinstance(x, list):
        return [_rounded(v) for v in x]
    return x


def close(a, b, rel: float = 1e-5) -> bool:
    """The same advice up to the last digit of a time (the run's traced seconds, computed from integer
    nanoseconds in a columnar trace, may round the other way at the sixth digit)."""
    if isinstance(a, float) and isinstance(b, float):
        return a == pytest.approx(b, rel=rel)
    if isinstance(a, dict) and isinstance(b, dict):
        return a.keys() == b.keys() and all(close(a[k], b[k], rel) for k in a)
    if isinstance(a, list) and isinstance(b, list):
        return len(a) == len(b) and all(close(u, v, rel) for u, v in zip(a, b))
    return a == b


def comparable(adv) -> dict:
    """The advice as JSON without the wall time it took, numbers to 6 digits (a columnar trace keeps the
    traced times in integer nanoseconds, which the in-trace calibration reads)."""
    out = json.loads(adv.to_json())
    out.pop("seconds")
    out.pop("source")
    return _rounded(out)


@pytest.fixture(scope="module")
def workload_traces(tmp_path_factory):
    """Traces of benchmark workloads (regret benchmark), traced by `ioadvisor run` at a fifth of their size."""
    tmp = tmp_path_factory.mktemp("workloads")
    env = _env(WORKLOAD_SCALE="0.2")
    out = {}
    for name in ("w01_rows_h5", "w06_append_zarr", "w07_append_h5"):
        data = tmp / name
        data.mkdir()
        prog = WORKLOADS / f"{name}.py"
        subprocess.run([sys.executable, str(prog), "prepare", str(data)], env=env, check=True, capture_output=True)
        trace = tmp / f"{name}.jsonl"
        subprocess.run([str(BIN / "ioadvisor"), "run", "-o", str(trace), "--", sys.executable, str(prog), "run",
                        str(data)], env=env, check=True, capture_output=True, cwd=tmp)
        out[name] = trace
    return out


@pytest.mark.parametrize("name", ["w01_rows_h5", "w06_append_zarr", "w07_append_h5"])
def test_recommendations_unchanged_by_the_columnar_trace(workload_traces, name, tmp_path):
    jsonl = load_trace(workload_traces[name])  # one duration per access on disk, each run's mean in memory
    write_trace(jsonl, tmp_path / "t.parquet")
    columnar = load_trace(tmp_path / "t.parquet")
    assert columnar.n_access == jsonl.n_access
    kw = dict(profile=profile(), read_data=False)
    ref = comparable(advise(jsonl, jobs=1, **kw))
    got = comparable(advise(tmp_path / "t.parquet", jobs=1, **kw))
    assert close(got, ref), (got, ref)
    got = comparable(advise(columnar, jobs=2, **kw))
    assert close(got, ref), (got, ref)
    if name.startswith("w07"):  # appends: a regular run, stored as few rows
        assert columnar.columns.rows < jsonl.n_access / 10


def _loader_trace(path: Path, n: int, tmp: Path) -> Path:
    """A loader-like run: random single-row reads plus a strided scan, traced in this process."""
    with h5py.File(tmp / "d.h5", "w") as f:
        f.create_dataset("x", data=np.zeros((20000, 16), "f4"), chunks=(512, 16))
    with h5py.File(tmp / "d.h5", "r") as f, advisor.trace(path):
        x = f["x"]
        for i in np.random.default_rng(0).integers(0, 20000, n // 2).tolist():
            x[i]
        for i in range(n // 2):
            x[(7 * i) % 20000]
    return path


def test_parallel_evaluation_matches_serial_also_on_the_block_sample(tmp_path, monkeypatch):
    path = _loader_trace(tmp_path / "t.parquet", 6000, tmp_path)
    kw = dict(profile=profile(), read_data=False)
    serial = advise(path, jobs=1, **kw)
    assert comparable(advise(path, jobs=3, **kw)) == comparable(serial)
    monkeypatch.setattr(search, "LARGE_TRACE", 2000)  # rank on a block sample, replay the finalists whole
    monkeypatch.setattr(search, "SAMPLE_ACCESSES", 1000)
    sampled = advise(path, jobs=1, **kw)
    assert any("ranked on a sample of 1000 accesses" in n for n in sampled.datasets[0].notes)
    assert comparable(advise(path, jobs=2, **kw)) == comparable(sampled)
    whole = {r.candidate: r.seconds for r in serial.datasets[0].candidates}
    for r in sampled.datasets[0].candidates:  # what the sampled search reports is the whole-trace figure
        assert r.exact and (r.candidate not in whole or r.seconds == pytest.approx(whole[r.candidate]))


@pytest.mark.skipif(shutil.which("mpiexec", path=str(BIN)) is None, reason="needs mpiexec (mpich wheel)")
def test_mpiexec_advise_splits_candidates_and_matches_the_serial_run(tmp_path):
    path = _loader_trace(tmp_path / "t.parquet", 3000, tmp_path)
    cmd = [str(BIN / "ioadvisor"), "advise", "--no-data", "--json", str(path)]
    # two runs priced alike: not each rescaled by its own probe of a loaded machine (iomodel.probe)
    serial = subprocess.run(cmd + ["--jobs", "1"], env=_env(IOADVISOR_RESCALE="0"), capture_output=True, text=True,
                            check=True)
    ranks = subprocess.run([str(BIN / "mpiexec"), "-n", "3"] + cmd, env=_env(IOADVISOR_RESCALE="0"),
                           capture_output=True, text=True, timeout=600)
    assert ranks.returncode == 0, ranks.stderr[-2000:]
    one, many = json.loads(serial.stdout), json.loads(ranks.stdout)  # only rank 0 prints
    one.pop("seconds")
    many.pop("seconds")
    assert _rounded(many) == _rounded(one)
