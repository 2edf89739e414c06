import io

import numpy as np
import pytest

from compression_model.calibrate import synthetic_field
from compression_model.graybox import graybox_ratio
from compression_model.graybox_sz import (RADIUS, TileSize, huffman_lengths, huffman_stream, interp_codes,
                                          sz3_predictor, tile_sizes)
from compression_model.sampling import sample_blocks
from instrumentation.errors import InputError


def test_huffman_lengths_are_optimal_and_complete():
    assert huffman_lengths(np.array([1, 1, 2, 4])).tolist() == [3, 3, 2, 1]
    counts = np.random.default_rng(0).integers(1, 1000, 300)
    L = huffman_lengths(counts)
    assert np.sum(2.0 ** -L) == pytest.approx(1.0)  # Kraft equality: a full binary tree
    p = counts / counts.sum()
    entropy = -(p * np.log2(p)).sum()
    assert entropy <= (p * L).sum() < entropy + 1  # Huffman is within 1 bit of the entropy


def test_stream_has_the_counted_length():
    codes = np.random.default_rng(1).choice([RADIUS - 1, RADIUS, RADIUS + 1, RADIUS + 7], 5000, p=[.2, .6, .15, .05])
    sym, cnt = np.unique(codes, return_counts=True)
    L = huffman_lengths(cnt)
    assert len(huffman_stream(codes, L, sym)) == -(-int((L * cnt).sum()) // 8)


def test_interpolation_codes_concentrate_and_spread_with_the_bound():
    x = synthetic_field((128, 128), 4.0, np.random.default_rng(2))[None]
    loose, tight = interp_codes(x, 0.2), interp_codes(x, 1e-4)
    assert loose.shape == (1, x[0].size)
    assert (loose == RADIUS).mean() > 0.9
    assert np.unique(tight).size > 10 * np.unique(loose).size
    t_loose, t_tight = tile_sizes(x, 0.2, "interp", 4)[0], tile_sizes(x, 1e-4, "interp", 4)[0]
    assert t_loose.eta == 1.0 and t_loose.huffman_bytes < t_tight.huffman_bytes


@pytest.mark.parametrize("codec", ["sz3", "sz"])
def test_graybox_ratio_tracks_the_real_hdf5_filter(codec):
    import h5py
    import hdf5plugin
    x = synthetic_field((256, 384), 3.0, np.random.default_rng(3))
    chunks = (64, 128)
    sample = sample_blocks(x, 0.25, chunks=chunks, rng=0)
    for rel in (1e-2, 1e-4):
        eb = rel * float(x.max() - x.min())
        kw = hdf5plugin.SZ3(absolute=eb) if codec == "sz3" else hdf5plugin.SZ(absolute=eb)
        with h5py.File(io.BytesIO(), "w") as f:
            d = f.create_dataset("x", data=x, chunks=chunks, **kw)
            actual = x.nbytes / d.id.get_storage_size()
        est = graybox_ratio(sample, codec, eb, chunks, rng=0)
        assert est.ratio_ci[0] <= est.ratio <= est.ratio_ci[1]
        assert abs(np.log(est.ratio / actual)) < np.log(1.5), (rel, est.ratio, actual)
        assert type(est).from_config(est.get_config()) == est


def test_rejects_unknown_codec_and_bad_bound():
    s = sample_blocks(np.zeros((64, 64), np.float32), 1.0)
    with pytest.raises(InputError):
        graybox_ratio(s, "blosc-zstd", 1e-3)
    with pytest.raises(InputError):
        graybox_ratio(s, "sz3", 0.0)


def test_sz3_predictor_follows_sz3s_rule():
    def tile(nbytes):  # 4096 float32 points whose modeled size is ``nbytes``
        return TileSize(4096, 0, 1, 0.0, nbytes - 4.0, 4)

    assert sz3_predictor(tile(2000), tile(1000)) == "lorenzo"  # Lorenzo smaller, ratios 8 and 16 < 80
    assert sz3_predictor(tile(1000), tile(2000)) == "interp"  # interpolation smaller
    assert sz3_predictor(tile(200), tile(150)) == "interp"  # Lorenzo smaller but ratio 109 >= 80

