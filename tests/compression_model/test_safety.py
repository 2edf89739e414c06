"""NaN/Inf/fill detection and the codecs that must not be used on such data."""
import numpy as np
import pytest

from compression_model.codecs import get_codec
from compression_model.safety import DataSafety, codec_problems, detect_fill, scan


def test_scan_counts_and_range_excludes_nonfinite_and_fill():
    x = np.linspace(-5, 5, 1000).astype(np.float32)
    x[:10] = np.nan
    x[10:12] = np.inf
    x[100:300] = -1e34  # ferret's missing value
    s = scan([x[:500], x[500:]])
    assert (s.n, s.n_nan, s.n_inf, s.n_fill) == (1000, 10, 2, 200)
    assert s.fill_value == pytest.approx(-1e34)
    assert s.finite_min > -5.0 and s.finite_max == pytest.approx(5.0)
    assert s.has_nonfinite and s.has_fill
    assert DataSafety.from_config(s.get_config()) == s


def test_explicit_fill_value_and_clean_data():
    x = np.arange(100, dtype=np.float64)
    x[:5] = -999.0
    s = scan(x, fill_value=-999.0)
    assert s.n_fill == 5 and s.data_range == pytest.approx(94.0)
    clean = scan(np.arange(10.0))
    assert not clean.has_nonfinite and not clean.has_fill and clean.data_range == 9.0


def test_zfp_flagged_on_nan_and_the_flag_is_true():
    x = np.cumsum(np.ones((16, 16)), axis=0)
    x[4, 4] = np.nan
    s = scan(x)
    zfp = get_codec("zfp", "abs:0.01")
    assert any("does not preserve NaN" in p for p in codec_problems(zfp, s))
    assert not np.isnan(zfp.decode(zfp.encode(x), x.shape, x.dtype)).any()  # the NaN really is lost
    assert codec_problems(get_codec("sz3", "abs:0.01"), s, "zarr") == []
    assert any("HDF5 filter crashes" in p for p in codec_problems(get_codec("sz3", "abs:0.01"), s, "hdf5"))
    assert codec_problems(get_codec("sz", "abs:0.01"), s, "hdf5") == []
    assert codec_problems(get_codec("blosc-zstd"), s) == []


def test_sz_flagged_for_zarr_and_fill_inside_bound():
    s = scan(np.arange(10.0))
    assert any("no zarr 3 codec" in p for p in codec_problems(get_codec("sz", "abs:1"), s, "zarr"))
    x = np.arange(100.0)
    x[:20] = 17.0  # a fill value 3 below the smallest valid value (20)
    s = scan(x, fill_value=17.0)
    assert any("fill value" in p for p in codec_problems(get_codec("sz3", "abs:5"), s, "zarr"))
    assert codec_problems(get_codec("sz3", "abs:0.1"), s, "zarr") == []


def test_fill_detection():
    rng = np.random.default_rng(0)
    v = rng.normal(15, 2, 5000)
    assert detect_fill(v) is None
    v[:800] = -999.0
    assert detect_fill(v) == -999.0
    v[:800] = 9.96921e36
    assert detect_fill(v) == np.float64(9.96921e36)
