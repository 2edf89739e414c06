import io

import numpy as np
import pytest

from compression_model.calibrate import synthetic_field
from compression_model.graybox import graybox_ratio
from compression_model.graybox_zfp import block_bits, tile_bits, to_blocks
from compression_model.sampling import sample_blocks


@pytest.mark.parametrize("shape,beta", [((64, 96), 3.0), ((16, 32, 24), 4.0), ((4096,), 2.0)])
def test_bit_count_matches_zfpy(shape, beta):
    import zfpy
    x = synthetic_field(shape, beta, np.random.default_rng(0))
    for tol in (1e-1, 1e-3, 1e-5):
        actual = len(zfpy.compress_numpy(x, tolerance=tol, write_header=False))
        assert abs(tile_bits(x, tol) / 8 - actual) <= 0.01 * actual + 8, tol


def test_zero_blocks_cost_one_bit_and_blocks_pad_edges():
    assert block_bits(np.zeros((3, 4, 4)), 1e-3).tolist() == [1, 1, 1]
    assert to_blocks(np.ones((5, 6))).shape == (4, 4, 4)


def test_graybox_ratio_matches_the_hdf5_zfp_filter():
    import h5py
    import hdf5plugin
    x = synthetic_field((256, 256), 3.0, np.random.default_rng(1))
    chunks = (64, 64)
    sample = sample_blocks(x, 0.1, chunks=chunks, rng=0)
    eb = 1e-3 * float(x.max() - x.min())
    with h5py.File(io.BytesIO(), "w") as f:
        d = f.create_dataset("x", data=x, chunks=chunks, **hdf5plugin.Zfp(accuracy=eb))
        actual = x.nbytes / d.id.get_storage_size()
    est = graybox_ratio(sample, "zfp", eb, chunks)
    assert abs(est.ratio / actual - 1) < 0.1
