import numpy as np

from compression_model.features import (compute_features, detect_fill, interp_errors, lorenzo_errors,
                                        zfp_block_exponents)
from compression_model.sampling import sample_blocks


def test_lorenzo_is_exact_on_planes_but_not_on_bilinear_terms():
    i, j = np.mgrid[0:20, 0:30]
    assert np.abs(lorenzo_errors(3.0 * i - 2.0 * j + 7)).max() < 1e-12
    assert np.allclose(lorenzo_errors(0.5 * i * j), 0.5)
    k = np.arange(10.0)
    assert np.abs(lorenzo_errors(np.add.outer(np.add.outer(k, 2 * k), -k))).max() < 1e-12


def test_interpolation_errors_cover_every_point_but_the_anchor_and_vanish_on_ramps():
    x = np.add.outer(np.arange(33.0), 2 * np.arange(17.0))
    e = interp_errors(x)
    assert e.size == x.size - 1
    # only the coarsest points, extrapolated by copy (as SZ3 does with no right neighbour), miss
    assert (np.abs(e) > 1e-9).sum() <= 4
    rough = np.random.default_rng(0).standard_normal((33, 17))
    assert np.abs(interp_errors(rough)).mean() > 0.5


def test_fill_detection():
    rng = np.random.default_rng(0)
    v = rng.normal(15, 2, 5000)
    assert detect_fill(v) is None
    v[:800] = -999.0
    assert detect_fill(v) == -999.0
    v[:800] = 9.96921e36
    assert detect_fill(v) == np.float64(9.96921e36)


def test_zfp_exponents_are_per_4x4_block():
    x = np.full((8, 8), 0.75)
    x[4:, 4:] = 3.0
    e = zfp_block_exponents(x)
    assert sorted(e.tolist()) == [0, 0, 0, 2]


def test_compute_features_shares_and_range():
    x = np.cumsum(np.random.default_rng(1).standard_normal((300, 300)), axis=1).astype(np.float32)
    x[:30] = np.nan
    f = compute_features(sample_blocks(x, 1.0))
    assert abs(f.nan_share - 0.1) < 1e-9
    assert f.value_min == np.nanmin(x) and f.value_max == np.nanmax(x)
    assert 0 < f.lorenzo_mad and 0 < f.diff_mad
    assert type(f).from_config(f.get_config()) == f
