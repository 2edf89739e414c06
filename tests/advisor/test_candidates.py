import numpy as np
import pytest

from advisor.candidates import (
    CHUNK_TARGETS, allowed_codecs, baselines, chunk_shapes, generate, h5py_default_chunks, hdf5_caches,
    touched_chunks, zarr_default_chunks,
)
from compression_model.error_bound import ErrorBound
from instrumentation.patterns import classify
from instrumentation.records import AccessRecord, DatasetRecord, Selection
from iomodel.chunks import chunk_visits
from iomodel.layout import Layout

SHAPE = (1_000_000, 32)


def acc(start, shape, op="read"):
    s = Selection.box(start, shape)
    return AccessRecord(0, op, s, s.nelements, s.nelements * 4, 0.0, 0.0)


def ds(shape=SHAPE, chunks=(1000, 8)):
    return DatasetRecord(0, "hdf5", "2", "/nowhere/x.h5", "/x", shape, "float32", chunks=chunks)


def aligned(c, s, full):
    """Chunk extent c is aligned to a selection extent s: one divides the other, or c spans the array."""
    return c == full or s % c == 0 or c % s == 0


def test_row_reads_give_full_width_chunks_across_sizes():
    rng = np.random.default_rng(0)
    pat = classify([acc((int(r), 0), (1, 32)) for r in rng.integers(0, SHAPE[0], 50)], SHAPE)
    shapes = chunk_shapes(pat, SHAPE, 4)
    assert shapes
    for ch in shapes:
        assert ch[1] == 32, ch  # a row read never spans several chunks across
        assert CHUNK_TARGETS[0] / 2 <= np.prod(ch) * 4 <= CHUNK_TARGETS[-1] * 1.5
    assert len({np.prod(c) for c in shapes}) >= 5  # sizes from 64 KiB to 64 MiB


def test_column_reads_give_thin_chunks_aligned_to_the_column():
    pat = classify([acc((0, j), (SHAPE[0], 1)) for j in range(0, 32, 3)], SHAPE)
    shapes = chunk_shapes(pat, SHAPE, 4)
    assert (SHAPE[0], 1) in shapes  # one chunk per column read (3.8 MiB)
    thin = [c for c in shapes if c[1] == 1]
    assert len(thin) >= 3
    for c in shapes:
        assert aligned(c[0], SHAPE[0], SHAPE[0]) or SHAPE[0] % c[0] < c[0]


def test_box_reads_give_chunks_aligned_to_the_box():
    rng = np.random.default_rng(1)
    accs = [acc((1000 * int(r), 8 * int(c)), (1000, 8)) for r, c in zip(rng.integers(0, 999, 60),
                                                                        rng.integers(0, 4, 60))]
    shapes = chunk_shapes(classify(accs, SHAPE), SHAPE, 4)
    for c in shapes:
        assert aligned(c[0], 1000, SHAPE[0]) and aligned(c[1], 8, SHAPE[1]), c
        # a box on the 1000x8 grid visits only the chunks it must (counted by the I/O model's chunk walk)
        lay = Layout("zarr", SHAPE, 4, c)
        for a in accs[:10]:
            need = max(1, -(-1000 // c[0])) * max(1, -(-8 // c[1]))
            assert len(chunk_visits(a.selection, lay)) == need, (c, a.selection.start)


def test_mixed_pattern_gets_balanced_shapes():
    accs = [acc((1000 * i, 0), (1000, 32)) for i in range(50)] + [acc((0, j), (SHAPE[0], 1)) for j in range(40)]
    pat = classify(accs, SHAPE)
    assert pat.kind == "mixed"
    origins = set(chunk_shapes(pat, SHAPE, 4).values())
    assert any(o.startswith("balanced") for o in origins)
    assert any(o.startswith("mixed-balanced") for o in origins)


def test_defaults_are_the_libraries_own(tmp_path):
    import h5py
    import zarr

    shape = (30_000, 70)
    with h5py.File(tmp_path / "a.h5", "w") as f:
        d = f.create_dataset("x", shape=shape, dtype="f8", chunks=True)
        assert h5py_default_chunks(shape, None, 8) == d.chunks
    z = zarr.create_array(str(tmp_path / "a.zarr"), shape=shape, dtype="f4")
    assert zarr_default_chunks(shape, 4) == z.chunks
    base = baselines(ds(shape), shape, resizable=False)
    assert base["h5py"].chunks is None and base["zarr"].chunks == z.chunks
    assert base["current"].chunks == (1000, 8) and base["current"].cache_bytes == 8 << 20


def test_cache_variants_cover_the_working_set():
    pat = classify([acc((0, j), (SHAPE[0], 1)) for j in range(4)], SHAPE)
    caches = hdf5_caches(pat, (62500, 4), SHAPE, 4)
    sizes = [c[0] for c in caches]
    assert 8 << 20 in sizes and 0 in sizes
    ws = touched_chunks((SHAPE[0], 1), (62500, 4), SHAPE) * 62500 * 4 * 4
    assert any(s >= ws for s in sizes)


def test_codec_constraints():
    lossless, _ = allowed_codecs("float32")
    assert lossless and all(c.error_bound is None for c in lossless)
    with_lossy, _ = allowed_codecs("float32", max_error="rel:1e-3")
    lossy = [c for c in with_lossy if c.error_bound is not None]
    assert {c.name for c in lossy} == {"sz3", "zfp"} and all(c.error_bound == ErrorBound("rel", 1e-3) for c in lossy)
    only, notes = allowed_codecs("float32", max_error="rel:1e-3", lossless_only=True, compressors=["sz3", "zstd"])
    assert [c.name for c in only] == ["zstd"] and "lossless-only" in notes[0]
    ints, notes = allowed_codecs("int16", max_error="abs:1", compressors=["zfp", "gzip"])
    assert [c.name for c in ints] == ["gzip"] and "float32/float64" in notes[0]
    with pytest.raises(ValueError, match="max-error"):
        allowed_codecs("float32", compressors=["sz3"])
    with pytest.raises(ValueError, match="unknown compressor"):
        allowed_codecs("float32", compressors=["bogus"])


def test_generate_crosses_layouts_with_codecs():
    pat = classify([acc((1000 * i, 0), (1000, 32)) for i in range(20)], SHAPE)
    codecs, _ = allowed_codecs("float32", compressors=["sz", "zstd"], max_error="abs:0.1")
    cands = generate(ds(), pat, SHAPE, codecs=codecs)
    plain = [c for c in cands if c.compressor is None]
    assert {c.library for c in plain} == {"hdf5", "zarr"}
    assert not any(c.compressor == "sz" and c.library == "zarr" for c in cands)  # SZ2 has no zarr codec
    assert any(c.chunks is None for c in plain)  # contiguous HDF5
    assert len(cands) == len(set(cands))
