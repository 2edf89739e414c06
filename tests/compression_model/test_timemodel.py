import json

import numpy as np
import pytest

from compression_model.graybox import StageCounts
from compression_model.profile import CompressionProfile, load_profile, save_profile
from compression_model.timemodel import STAGES, fit_stage_model, lossless_counts, predict_time, stage_counts


def test_fit_recovers_stage_coefficients_and_reports_spreads():
    rng = np.random.default_rng(0)
    X = np.column_stack([rng.integers(1, 500, 40), rng.uniform(1e5, 1e7, 40), rng.uniform(1e3, 1e6, 40)])
    coef = np.array([2e-5, 3e-9, 1e-8])
    t = X @ coef
    fit = fit_stage_model(X, t, np.zeros(40))
    assert np.allclose(fit["coef"], coef, rtol=1e-6)
    assert fit["log_sigma_model"] < 1e-6 and fit["log_sigma_sys"] == 0.0
    noisy = fit_stage_model(X, t * np.exp(rng.normal(0, 0.1, 40)), np.full(40, 0.05))
    assert 0.05 < noisy["log_sigma_model"] < 0.2 and noisy["log_sigma_sys"] == pytest.approx(0.05)
    lo, hi = noisy["log_q"]  # residual quantiles of 40 N(0, 0.1) draws
    assert -0.35 < lo < -0.05 and 0.05 < hi < 0.35


def _profile(sigma):
    params = {"coef": [3e-3, 1e-4, 2e-9, 5e-8], "log_sigma_model": sigma, "log_q": [-2 * sigma, 2 * sigma],
              "log_sigma_sys": sigma}
    return CompressionProfile(machine="test", time={"zfp": {"compress": params, "decompress": params}})


def test_prediction_is_the_sum_of_stages_with_a_widening_interval():
    counts = StageCounts(n_points=10**6, itemsize=4, n_chunks=16, n_blocks=62500, out_bytes=1e6)
    narrow = predict_time(counts, "zfp", _profile(0.05))
    wide = predict_time(counts, "zfp", _profile(0.2))
    expected = 3e-3 + 16 * 1e-4 + 62500 * 2e-9 + 1e6 * 5e-8
    assert narrow.compress_s == pytest.approx(expected)
    assert sum(narrow.stages.values()) == pytest.approx(expected)
    assert set(narrow.stages) == set(STAGES["zfp"])
    assert narrow.compress_ci[0] < expected < narrow.compress_ci[1]
    assert wide.compress_ci[0] < narrow.compress_ci[0] and wide.compress_ci[1] > narrow.compress_ci[1]
    assert narrow.compress_mbps == pytest.approx(4e6 / expected / 1e6)


def test_lossless_counts_and_uncalibrated_profile():
    c = lossless_counts(1000, 4, 2, 4.0)
    assert stage_counts(c, "blosc-zstd").tolist() == [1, 2, 4000, 1000]  # one call, 2 chunks, bytes in/out
    with pytest.raises(KeyError, match="calibrate"):
        predict_time(c, "blosc-zstd", CompressionProfile())


def test_profile_round_trip_and_bad_files(tmp_path):
    p = tmp_path / "profile.json"
    p.write_text(json.dumps({"schema": 1, "machine": "m", "io": {"x": 1}}))
    save_profile(_profile(0.1), p)
    doc = json.loads(p.read_text())
    assert doc["io"] == {"x": 1}  # other sections are kept
    assert load_profile(p) == _profile(0.1)
    p.write_text(json.dumps({"schema": 99, "compression": {}}))
    with pytest.raises(ValueError, match="schema"):
        load_profile(p)
    p.write_text("{not json")
    with pytest.raises(ValueError, match="profile"):
        load_profile(p)


def test_shipped_profile_is_calibrated():
    prof = load_profile()
    assert prof.calibrated, "run python -m compression_model.calibrate to produce profiles/default.json"
    for codec in ("sz3", "sz", "zfp"):
        params = prof.time_params(codec, "compress")
        assert len(params["coef"]) == len(STAGES["sz" if codec != "zfp" else "zfp"]) and "log_q" in params
        assert prof.ratio_params(codec)["coef"]
    for codec in prof.time:  # the sampling estimator's measured time error: an interval around 0
        lo, hi = prof.time_params(codec, "compress")["sampling_log_q"]
        assert np.isfinite([lo, hi]).all() and lo < hi
