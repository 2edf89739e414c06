"""The codec search on the object store (issue #35): compressors estimated on a sample of the data read where it
is, priced in the store advice, built by verify on the store; against the real SeaweedFS server."""
from __future__ import annotations

import numpy as np

import advisor
from advisor.objectstore_codecs import estimate_chunks, sample_of


class Chunked:
    """An array-like with zarr's ``chunks`` attribute that counts the bytes read from it."""

    def __init__(self, a, chunks):
        self.a, self.chunks, self.read = a, chunks, 0
        self.shape, self.dtype = a.shape, a.dtype

    def __getitem__(self, key):
        out = self.a[key]
        self.read += out.nbytes
        return out


def test_a_sample_is_whole_chunk_bands_spread_over_the_first_dimension():
    a = np.arange(4000 * 50, dtype=np.float64).reshape(4000, 50)
    src = Chunked(a, (100, 50))
    s = sample_of(src, max_bytes=8 * 100 * 50 * 8, bands=8)  # room for 8 bands of one chunk
    assert s.shape == (800, 50) and src.read == s.nbytes
    firsts = s[::100, 0] // 50
    assert all(f % 100 == 0 for f in firsts)  # each band starts on a chunk boundary
    assert firsts[0] == 0 and firsts[-1] == 3900  # from the start to the end of the array
    small = Chunked(a[:10], (100, 50))
    assert sample_of(small).shape == (10, 50)  # under the limit: the whole array


def test_estimate_chunks_grow_to_the_target():
    c = estimate_chunks((100, 100), (4000, 2000), 8, target=4 << 20)
    assert 4 << 20 <= np.prod(c) * 8 <= 5 << 20 and c[0] / c[1] == 1


def _smooth(shape):
    y, x = np.meshgrid(np.linspace(0, 3, shape[0]), np.linspace(0, 5, shape[1]), indexing="ij")
    return np.round(np.sin(y) * np.cos(x), 3)


def test_compressors_estimated_on_the_store_enter_the_advice_and_verify(tmp_path, s3_endpoint):
    import s3fs
    import zarr

    from advisor.objectstore import advise_store
    from advisor.objectstore_codecs import estimate_store_codecs
    from advisor.verify import verify
    from instrumentation.tracefile import load_trace

    opts = dict(key="k", secret="s", client_kwargs={"endpoint_url": s3_endpoint})
    s3fs.S3FileSystem(**opts, skip_instance_cache=True).mkdir("codecs")
    url = "s3://codecs/d.zarr"
    data = _smooth((600, 600))
    z = zarr.create_array(zarr.storage.FsspecStore.from_url(url, storage_options=opts), shape=data.shape,
                          chunks=(60, 60), dtype="f8", compressors=None, overwrite=True)  # stored uncompressed
    z[:] = data
    path = tmp_path / "t.parquet"
    with advisor.trace(path):
        r = zarr.open_array(zarr.storage.FsspecStore.from_url(url, storage_options=opts, read_only=True), mode="r")
        for j in range(0, 600, 60):
            r[:, j]
    trace = load_trace(path)
    found = {}

    def codecs_of(ds):
        found[ds.label], notes = estimate_store_codecs(ds, opts)
        return found[ds.label]

    # a store whose bytes cost (20 MB/s a request): fewer bytes per GET must win there
    from iomodel.objectstore import ObjectStoreModel, save_store, store_key
    from instrumentation.storerequests import endpoint_host

    slow = ObjectStoreModel(ttfb=0.02, request_bandwidth=2e7, aggregate_bandwidth=4e7)
    profile = tmp_path / "profile.json"
    save_store(profile, store_key(endpoint_host(s3_endpoint), url), slow)
    stores = {store_key(endpoint_host(s3_endpoint), url): slow}
    (adv,) = advise_store(trace, stores, top=40, codecs_of=codecs_of)
    (codecs,) = found.values()
    by = {k.name: k for k in codecs}
    assert by["none"].ratio == 1.0 and by["zstd"].ratio > 2  # rounded smooth data: zstd keeps under half
    best = adv.recommendation
    assert best.layout.codec not in (None, "none")  # fewer bytes per GET won here
    same_none = next(c for c in adv.ranked if c.layout.chunks == best.layout.chunks and c.layout.shards ==
                     best.layout.shards and c.layout.codec == "none")
    assert best.bytes_moved * 1.5 < same_none.bytes_moved and "decode" in best.terms
    assert "zarr_codecs()" in best.layout.code(url)
    rows = verify(path, top=1, storage_options=opts, profile=profile).rows
    assert rows[0].compressor is None and rows[1].compressor == best.layout.codec
    assert rows[1].stored_bytes * 1.5 < rows[0].stored_bytes and rows[1].max_error == 0.0
