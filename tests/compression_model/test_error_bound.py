"""Error bounds: parsing, resolution, measured/expected errors, bisection on a real codec."""
import math

import numpy as np
import pytest

from compression_model.codecs import get_codec
from compression_model.error_bound import ErrorBound, ErrorStats, bound_for_target


def test_parse_and_resolve():
    assert ErrorBound.parse("rel:1e-3") == ErrorBound("rel", 1e-3)
    assert ErrorBound.parse("abs:0.01").absolute(None) == 0.01
    assert ErrorBound("rel", 1e-2).absolute(250.0) == pytest.approx(2.5)
    assert ErrorBound.from_config(ErrorBound("abs", 3).get_config()) == ErrorBound("abs", 3.0)
    assert str(ErrorBound("rel", 1e-4)) == "rel:0.0001"


@pytest.mark.parametrize("text", ["rel:x", "rel", "pct:1e-3", "abs:-1", "abs:0", "abs:nan", ""])
def test_bad_bounds_name_the_text(text):
    with pytest.raises(ValueError, match="bound"):
        ErrorBound.parse(text)


def test_relative_bound_needs_finite_range():
    with pytest.raises(ValueError, match="data range"):
        ErrorBound("rel", 1e-3).absolute(None)


def test_measure_known_errors():
    x = np.linspace(0, 10, 1001)
    y = x + np.where(np.arange(x.size) % 2, 0.1, -0.1)
    s = ErrorStats.measure(x, y, 10.0)
    assert s.max_error == pytest.approx(0.1)
    assert s.rmse == pytest.approx(0.1)
    assert s.psnr == pytest.approx(20 * math.log10(10 / 0.1))


def test_measure_nan_kept_and_lost():
    x = np.array([1.0, np.nan, 3.0])
    assert ErrorStats.measure(x, np.array([1.0, np.nan, 3.5]), 2.0).max_error == pytest.approx(0.5)
    assert ErrorStats.measure(x, np.array([1.0, 0.0, 3.0]), 2.0).max_error == math.inf


def test_expected_matches_uniform_quantization_of_real_sz3():
    rng = np.random.default_rng(0)
    x = np.cumsum(rng.normal(size=200_000)).astype(np.float64)
    e = 0.5
    codec = get_codec("sz3", ErrorBound("abs", e))
    measured = ErrorStats.measure(x, codec.decode(codec.encode(x), x.shape, x.dtype), float(np.ptp(x)))
    expected = ErrorStats.expected(e, float(np.ptp(x)))
    assert measured.max_error <= expected.max_error * (1 + 1e-9)
    assert measured.rmse == pytest.approx(expected.rmse, rel=0.15)  # SZ3's errors are ~uniform in [-e, e]


def test_bisection_on_real_sz3_ratio():
    rng = np.random.default_rng(3)
    x = np.cumsum(np.cumsum(rng.normal(size=(64, 64)), axis=0), axis=1).astype(np.float32)
    data_range = float(np.ptp(x))

    def ratio(eb):
        return x.nbytes / len(get_codec("sz3", eb, data_range).encode(x))

    target = 8.0
    eb = bound_for_target(ratio, target, mode="rel", lo=1e-6, hi=1e-1, rtol=0.02)
    assert ratio(eb) >= target
    assert ratio(ErrorBound("rel", eb.value / 1.05)) < target * 1.05  # about the tightest such bound
    with pytest.raises(ValueError, match="not reachable"):
        bound_for_target(ratio, 1e9, hi=1e-2)


def test_bisection_decreasing_target_bytes():
    def nbytes(eb):
        return 1000.0 / eb.value  # looser bound, fewer bytes

    eb = bound_for_target(nbytes, 1e5, increasing=False, lo=1e-6, hi=1.0, rtol=1e-3)
    assert nbytes(eb) <= 1e5 and eb.value == pytest.approx(1e-2, rel=2e-3)
