import numpy as np
import pytest

from compression_model.sampling import block_skew, sample_blocks
from instrumentation.errors import InputError


def smooth(shape, seed=0):
    rng = np.random.default_rng(seed)
    x = rng.standard_normal(shape)
    for ax in range(len(shape)):
        x = np.cumsum(x, axis=ax)
    return x.astype(np.float32)


def test_blocks_are_contiguous_slices_of_the_data_and_fraction_is_respected():
    x = smooth((600, 800))
    s = sample_blocks(x, 0.02, rng=1)
    assert 0.01 <= s.fraction <= 0.06
    for o, b in zip(s.origins, s.blocks):
        sl = tuple(slice(a, a + n) for a, n in zip(o, b.shape))
        np.testing.assert_array_equal(x[sl], b)
    assert s.n_total == x.size and s.weights.sum() == pytest.approx(1.0)


def test_strategy_follows_measured_skew():
    uniform = smooth((512, 512))
    sparse = np.zeros((512, 512), np.float32)
    sparse[:40, :40] = np.random.default_rng(0).standard_normal((40, 40))
    su = sample_blocks(uniform, 0.05, rng=0)
    ss = sample_blocks(sparse, 0.05, rng=0)
    assert su.strategy == "stratified" and su.skew < 0.5
    assert ss.strategy == "random" and ss.skew > 0.5
    assert block_skew([np.arange(10.0), np.arange(10.0)]) == 0.0
    assert block_skew([np.ones(10), np.arange(10.0)]) == 0.5


def test_chunk_aware_blocks_stay_inside_one_chunk():
    x = smooth((40, 300, 200))
    chunks = (8, 64, 64)
    s = sample_blocks(x, 0.02, rng=3, chunks=chunks)
    for o, b in zip(s.origins, s.blocks):
        for a, n, c in zip(o, b.shape, chunks):
            assert a // c == (a + n - 1) // c
    small = sample_blocks(smooth((512, 512)), 0.2, chunks=(32, 32), rng=0)
    assert small.block_shape == (32, 32)
    assert all(o[0] % 32 == 0 and o[1] % 32 == 0 for o in small.origins)


def test_reads_only_blocks_from_an_h5py_dataset(tmp_path):
    import h5py
    x = smooth((256, 256))
    with h5py.File(tmp_path / "a.h5", "w") as f:
        f["x"] = x
        s = sample_blocks(f["x"], 0.05, rng=0)
    assert s.shape == (256, 256) and s.dtype == np.float32 and s.n_sampled > 0


def test_whole_array_when_fraction_is_one_and_bad_fraction_rejected():
    x = smooth((50, 50))
    assert sample_blocks(x, 1.0).strategy == "full"
    with pytest.raises(InputError):
        sample_blocks(x, 0.0)
