"""In-trace calibration: factors that reproduce the traced time, per term when the terms can be told apart."""
import numpy as np
import pytest

from iomodel.cost import TERMS
from iomodel.intrace import MIN_RESOLUTION, TraceCalibration, fit, traced_seconds
from instrumentation.records import AccessRecord, Selection

NAMES = list(TERMS)


def _col(name):
    return NAMES.index(name)


def _terms(rows):
    """rows: list of {term: seconds} -> (G x K) matrix."""
    out = np.zeros((len(rows), len(NAMES)))
    for g, r in enumerate(rows):
        for k, v in r.items():
            out[g, _col(k)] = v
    return out


def test_per_term_when_terms_are_told_apart():
    # groups dominated by per-call overhead (one-element reads) and by cache copies (row reads): the model
    # over-predicts t_call 4x and t_cache 2x; a single factor cannot explain both kinds of group
    rng = np.random.default_rng(0)
    rows = []
    for g in range(16):
        if g % 2:
            rows.append({"t_call": 1.0, "t_chunk": 0.01})
        else:
            rows.append({"t_call": 1.0, "t_cache": 3.0 + rng.uniform(0, 0.1)})
    t = _terms(rows)
    traced = t[:, _col("t_call")] / 4 + t[:, _col("t_cache")] / 2 + t[:, _col("t_chunk")]
    cal = fit("hdf5", t, traced, NAMES, t.sum(0), float(traced.sum()))
    assert cal.method == "per-term"
    assert cal.factors["t_call"] == pytest.approx(0.25, rel=0.05)
    assert cal.factors["t_cache"] == pytest.approx(0.5, rel=0.05)
    calibrated = sum(cal.factors.get(n, 1.0) * v for n, v in zip(NAMES, t.sum(0)))
    assert calibrated == pytest.approx(traced.sum(), rel=1e-9)
    assert cal.band[0] > 0.9 and cal.band[1] < 1.1 and cal.resolution == MIN_RESOLUTION


def test_one_factor_when_collinear_and_band_from_residuals():
    # every group has the same term mix: only a common factor can be fitted; the noise widens the band
    rng = np.random.default_rng(1)
    t = _terms([{"t_call": 1.0, "t_cache": 2.0} for _ in range(8)])
    noise = rng.uniform(0.7, 1.3, 8)
    traced = t.sum(1) * 0.4 * noise
    cal = fit("zarr", t, traced, NAMES, t.sum(0), float(traced.sum()))
    assert cal.method == "one factor"
    assert cal.factors["t_call"] == pytest.approx(cal.factors["t_cache"])
    assert cal.factors["t_call"] == pytest.approx(traced.sum() / t.sum(), rel=1e-9)
    assert cal.band[0] < 0.95 and cal.band[1] > 1.05 and cal.resolution > MIN_RESOLUTION
    other = cal.borrow("hdf5")
    assert other.borrowed and not other.covers and set(other.factors) == {"t_cache"}
    assert other.scale({"t_call": 1.0, "t_cache": 1.0}) == {"t_call": 1.0, "t_cache": cal.factors["t_cache"]}
    assert TraceCalibration.from_config(cal.get_config()) == cal


def test_nothing_to_fit():
    cal = fit("hdf5", np.zeros((0, len(NAMES))), np.zeros(0), NAMES, np.zeros(len(NAMES)), 0.0)
    assert cal.method == "none" and not cal.covers and cal.scale({"t_call": 2.0}) == {"t_call": 2.0}


def test_traced_seconds_is_the_slowest_rank():
    sel = Selection.box((0,), (1,))
    accs = [AccessRecord(0, "read", sel, 1, 4, 0.0, 0.5, rank=0), AccessRecord(0, "read", sel, 1, 4, 0.0, 0.25, rank=1),
            AccessRecord(0, "read", sel, 1, 4, 1.0, 0.5, rank=1), AccessRecord(0, "read", sel, 1, 4, 1.0, 0.1, rank=0)]
    assert traced_seconds(accs) == pytest.approx(0.75)


def test_overlapping_calls_of_threads_count_once():
    # dask's threads: four reads in flight together, each waiting on HDF5's lock
    sel = Selection.box((0,), (1,))
    accs = [AccessRecord(0, "read", sel, 1, 4, 0.1 * i, 1.0) for i in range(4)]
    assert traced_seconds(accs) == pytest.approx(1.3)
