"""The pysz-backed zarr 3 SZ3 codec: real zarr arrays, bound held on decompressed data."""
import numpy as np
import pytest

import zarr
from compression_model.zarr_sz3 import CODEC_NAME, SZ3Codec  # noqa: E402


@pytest.fixture
def field():
    rng = np.random.default_rng(2)
    return np.cumsum(np.cumsum(rng.normal(size=(30, 50, 40)), axis=0), axis=2).astype(np.float32)


def test_round_trip_through_zarr_v3_array_holds_abs_bound(field, tmp_path):
    arr = zarr.create_array(tmp_path / "a.zarr", shape=field.shape, dtype=field.dtype, chunks=(16, 32, 32),
                            serializer=SZ3Codec(mode="abs", value=0.05), compressors=None, zarr_format=3)
    arr[...] = field
    back = zarr.open_array(tmp_path / "a.zarr", mode="r")
    assert back.metadata.codecs[0] == SZ3Codec(mode="abs", value=0.05)
    out = back[...]
    assert np.abs(out.astype(np.float64) - field).max() <= 0.05 * (1 + 1e-6)
    stored = sum(f.stat().st_size for f in (tmp_path / "a.zarr").rglob("*") if f.is_file() and f.name != "zarr.json")
    assert 0 < stored < field.nbytes / 2  # edge chunks included, it still compresses


def test_chunk_aligned_writes_float64_and_nan(field, tmp_path):
    x = field.astype(np.float64)
    x[2, 3, 4] = np.nan
    arr = zarr.create_array(tmp_path / "b.zarr", shape=x.shape, dtype=x.dtype, chunks=(16, 32, 32),
                            serializer=SZ3Codec(mode="abs", value=0.01), compressors=None)
    arr[:16, :, :] = x[:16]
    arr[16:, :, :] = x[16:]
    out = arr[...]
    assert np.isnan(out[2, 3, 4]) and np.isnan(out).sum() == 1
    assert np.nanmax(np.abs(out - x)) <= 0.01 * (1 + 1e-9)


def test_unaligned_partial_writes_compound_the_error(field, tmp_path):
    """Zarr rewrites a partly written chunk from its *decoded* values: points written before are compressed
    twice, so the error can reach twice the bound. The advisor must prefer chunk-aligned writes with lossy
    codecs (measured here: 0.0198 against a bound of 0.01)."""
    x = field.astype(np.float64)
    arr = zarr.create_array(tmp_path / "p.zarr", shape=x.shape, dtype=x.dtype, chunks=(16, 32, 32),
                            serializer=SZ3Codec(mode="abs", value=0.01), compressors=None)
    arr[:20] = x[:20]
    arr[20:] = x[20:]
    err = np.abs(arr[...] - x)
    assert err[:16].max() <= 0.01 * (1 + 1e-9)  # chunks written once
    assert 0.01 < err[16:20].max() <= 0.02 * (1 + 1e-9)  # rows 16-19 were compressed twice


def test_rel_mode_is_relative_to_each_chunk(field, tmp_path):
    arr = zarr.create_array(tmp_path / "c.zarr", shape=field.shape, dtype=field.dtype, chunks=(15, 50, 40),
                            serializer=SZ3Codec(mode="rel", value=1e-3), compressors=None)
    arr[...] = field
    out = arr[...]
    for sl in (np.s_[:15], np.s_[15:]):
        part = field[sl]
        assert np.abs(out[sl].astype(np.float64) - part).max() <= 1e-3 * float(part.max() - part.min()) * (1 + 1e-5)


def test_config_dict_round_trip_and_validation():
    c = SZ3Codec(mode="abs", value=0.5)
    assert c.to_dict() == {"name": CODEC_NAME, "configuration": {"mode": "abs", "value": 0.5}}
    assert SZ3Codec.from_dict(c.to_dict()) == c
    with pytest.raises(ValueError, match="mode"):
        SZ3Codec(mode="psnr", value=1.0)
    with pytest.raises(ValueError, match="positive"):
        SZ3Codec(mode="abs", value=0.0)


def test_unsupported_dtype_rejected(tmp_path):
    with pytest.raises(ValueError, match="not supported"):
        zarr.create_array(tmp_path / "d.zarr", shape=(10,), dtype="int16", chunks=(5,),
                          serializer=SZ3Codec(mode="abs", value=1.0), compressors=None)
