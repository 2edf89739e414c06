"""The "keep the HDF5 file and add a virtual Zarr reference" candidate (issue #35)."""
from __future__ import annotations

import numpy as np
import pytest

from advisor.objectstore import StoreLayout, _boxes, candidates, price
from advisor.objectstore_reference import REFERENCE, build_reference, open_reference
from instrumentation.columns import AccessColumns
from instrumentation.records import AccessRecord, Selection
from iomodel.objectstore import ObjectStoreModel

MODEL = ObjectStoreModel(ttfb=0.03, request_bandwidth=1e8, aggregate_bandwidth=4e8, request_cpu=0.002)


def _minibatches(shape=(5000, 256), rows=64, n=12):
    starts = np.random.default_rng(0).integers(0, shape[0] - rows, n)
    recs = [AccessRecord(0, "read", Selection((int(s), 0), (rows, shape[1]), (1, 1), (1, 1)), rows * shape[1],
                         rows * shape[1] * 4, float(i), 0.01) for i, s in enumerate(starts)]
    return AccessColumns.from_records(recs), starts


def test_reference_reads_each_chunk_by_its_range_without_hdf5_metadata_rounds():
    shape, chunks = (5000, 256), (100, 256)
    cols, starts = _minibatches(shape)
    boxes, writes, weights = _boxes(cols)
    current = StoreLayout("hdf5", chunks, block_size=2**20, cache_type="none")
    (ref,) = [c for c in candidates(current, boxes, shape, 4) if c.library == REFERENCE]
    assert ref.chunks == chunks  # the file's own chunks: nothing rewritten
    touched = sum(len({(int(s) + k) // 100 for k in (0, 63)}) for s in starts)
    via_ref = price(ref, boxes, writes, weights, shape, 4, 1.0, MODEL, head_first=True)
    assert via_ref.requests == touched  # one ranged GET per chunk read (the open's GET of the reference aside): no HEAD
    assert via_ref.bytes_moved == touched * 100 * 256 * 4
    no_cache = price(current, boxes, writes, weights, shape, 4, 1.0, MODEL)
    assert no_cache.requests > via_ref.requests  # HDF5 adds its superblock, headers and B-tree reads
    assert "kerchunk" in ref.describe() and "reference://" in ref.code("s3://b/f.h5")


def test_build_and_read_through_the_reference_on_the_real_server(tmp_path, s3_server):
    pytest.importorskip("kerchunk")
    import h5py
    import s3fs

    opts = s3_server.storage_options()
    fs = s3fs.S3FileSystem(**opts)
    fs.mkdir("refbucket")
    data = np.random.default_rng(1).random((500, 64)).astype("f4")
    with h5py.File(tmp_path / "f.h5", "w") as f:
        f.create_dataset("x", data=data, chunks=(50, 64), compression="gzip", shuffle=True)
    fs.put_file(str(tmp_path / "f.h5"), "refbucket/f.h5")
    refs = build_reference("s3://refbucket/f.h5", opts)
    assert refs == "s3://refbucket/f.h5.refs.json" and fs.exists(refs)
    a = open_reference(refs, opts)["x"]
    assert a.chunks == (50, 64) and np.array_equal(a[120:260], data[120:260])  # same chunks, codec, values


def test_reference_calls_pay_the_calibrated_time_per_call_zarr_calls_their_own():
    """``calibrate --store`` measures a call through ``reference://`` beyond its GET (fsspec's reference filesystem,
    an asynchronous client, zarr's v2 path): the reference pays it per call, a Zarr layout pays ``zarr_call``."""
    from dataclasses import replace

    shape, chunks = (5000, 256), (100, 256)
    cols, _ = _minibatches(shape)
    boxes, writes, weights = _boxes(cols)
    slow = replace(MODEL, reference_call=0.005)
    assert ObjectStoreModel.from_config(slow.get_config()) == slow
    ref, plain = StoreLayout(REFERENCE, chunks, cache_type="none"), StoreLayout("zarr", chunks)
    for layout, extra in ((ref, 12 * 0.005), (plain, 0.0)):
        base = price(layout, boxes, writes, weights, shape, 4, 1.0, MODEL)
        assert abs(price(layout, boxes, writes, weights, shape, 4, 1.0, slow).seconds - base.seconds - extra) < 1e-12
