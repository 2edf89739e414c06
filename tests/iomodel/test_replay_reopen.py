"""``iomodel.replay``'s ``Reopen`` event: the program closed the array and opened it again, so the reads after it
start with an empty chunk cache, as the model's replay has them (tests/iomodel/test_reopen.py)."""

import numpy as np

from instrumentation.records import READ, AccessRecord, ChunkCache, Filter, Selection
from iomodel.replay import LayoutSpec, Reopen, build, replay

SHAPE = (1024, 1024)


def chunk_read():
    sel = Selection((0, 0), (1, 1), (1, 1), (1, 1))  # one element: the whole chunk decoded for it
    return AccessRecord(0, READ, sel, 1, 4, 0.0, 0.0)


def gzipped_one_chunk(tmp_path):
    from types import SimpleNamespace

    lay = SimpleNamespace(library="hdf5", shape=SHAPE, dtype="float32", chunks=SHAPE,
                          cache=ChunkCache(16 << 20, 521, 0.75), filters=(Filter("gzip", 1, {"level": 6}),))
    t = np.linspace(0, 50, SHAPE[0] * SHAPE[1]).reshape(SHAPE)
    data = (np.sin(t) + 0.01 * np.random.default_rng(0).standard_normal(SHAPE)).astype("float32")
    build(lay, tmp_path, data=data)
    return lay, data


def test_a_reopen_closes_the_dataset_and_opens_it_again(tmp_path):
    from iomodel.replay import _H5Target  # the target's own handle, as test_replay.py looks at it

    lay, _ = gzipped_one_chunk(tmp_path)
    target = _H5Target(build(lay, tmp_path, fill=False), LayoutSpec.of(lay), writable=False)
    try:
        from h5py import h5f

        assert h5f.get_obj_count(target.file.id, h5f.OBJ_DATASET) == 1
        target.reopen()
        # the first handle closed (HDF5 frees a dataset's chunk cache at its close), one open again
        assert h5f.get_obj_count(target.file.id, h5f.OBJ_DATASET) == 1
        assert target.ds.id.valid and target.ds.shape == SHAPE
        assert target.ds.id.get_access_plist().get_chunk_cache() == (521, 16 << 20, 0.75)  # the file's cache again
    finally:
        target.close()


def test_reads_after_a_reopen_decode_their_chunk_again(tmp_path):
    """The same element read twice from one 4 MiB gzip'd chunk, with a cache that holds it: through one open the
    second read is a cache hit; after a Reopen it decodes the chunk again (no time counted for the reopen)."""
    lay, data = gzipped_one_chunk(tmp_path)
    one, again = [], []
    for _ in range(3):
        kept = replay([chunk_read(), chunk_read()], lay, tmp_path, rebuild=False, cold=False, data=data,
                      keep_values=True)
        reopened = replay([chunk_read(), Reopen(), chunk_read()], lay, tmp_path, rebuild=False, cold=False,
                          data=data, keep_values=True)
        assert len(reopened.per_access) == 2 and [v.item() for v in reopened.values] == [data[0, 0]] * 2
        one.append(kept.per_access[1])
        again.append(reopened.per_access[1])
    first = float(np.median([replay([chunk_read()], lay, tmp_path, rebuild=False, cold=False).per_access[0]
                             for _ in range(3)]))
    assert np.median(again) > 5 * np.median(one)
    assert np.median(again) > 0.3 * first  # a decode of the whole chunk, as the first read
