"""Advice on an object store (issue #35): priced by the object-store model, it stays on the store."""
from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import numpy as np

from advisor.objectstore import StoreLayout, _boxes, candidates, price
from instrumentation.columns import AccessColumns
from instrumentation.records import AccessRecord, Selection
from iomodel.objectstore import ObjectStoreModel

MODEL = ObjectStoreModel(ttfb=0.03, request_bandwidth=1e8, aggregate_bandwidth=4e8, request_cpu=0.002)


def _cols(boxes, ndim=2):
    recs = [AccessRecord(0, "read", Selection(start, count, (1,) * len(start), (1,) * len(start)), int(np.prod(count)), int(np.prod(count)) * 8,
                         float(i), 0.01) for i, (start, count) in enumerate(boxes)]
    return AccessColumns.from_records(recs)


def test_column_reads_want_tall_chunks_and_fewer_requests():
    shape = (2000, 2000)
    cols = _cols([((0, j), (2000, 1)) for j in range(0, 2000, 100)])
    boxes, writes, weights = _boxes(cols)
    now = StoreLayout("zarr", (100, 100))
    priced = sorted((price(c, boxes, writes, weights, shape, 8, 1.0, MODEL) for c in candidates(now, boxes, shape, 8)),
                    key=lambda c: c.seconds)
    current = price(now, boxes, writes, weights, shape, 8, 1.0, MODEL)
    best = priced[0]
    assert best.seconds < current.seconds / 2 and best.requests < current.requests
    assert best.layout.chunks[0] > best.layout.chunks[1]  # taller than wide: a column is few chunks


def test_default_fsspec_block_reads_far_more_than_small_chunks_need():
    """s3fs #677: 100-200 KB chunks read through the default 50 MiB read-ahead block move 10x too much."""
    shape, itemsize = (400_000, 64), 4  # 100 MB, chunks of 100 KB
    rng = np.random.default_rng(0)
    cols = _cols([((int(i), 0), (64, 64)) for i in rng.integers(0, shape[0] - 64, 30)])
    boxes, writes, weights = _boxes(cols)
    default = StoreLayout("hdf5", (400, 64))
    sized = StoreLayout("hdf5", (400, 64), block_size=128 * 1024, cache_type="none")
    a = price(default, boxes, writes, weights, shape, itemsize, 1.0, MODEL)
    b = price(sized, boxes, writes, weights, shape, itemsize, 1.0, MODEL)
    assert a.bytes_moved > 10 * b.bytes_moved and b.seconds < a.seconds


def test_advise_on_a_store_stays_on_the_store(tmp_path, s3_endpoint):
    prog = tmp_path / "prog.py"
    prog.write_text(f"""
import numpy as np, s3fs, zarr
opts = dict(key="k", secret="s", client_kwargs={{"endpoint_url": "{s3_endpoint}"}})
s3fs.S3FileSystem(**opts).mkdir("advise")
z = zarr.create_array(zarr.storage.FsspecStore.from_url("s3://advise/b.zarr", storage_options=opts),
                      shape=(400, 400), chunks=(40, 40), dtype="f8", overwrite=True)
z[:] = 1.0
for j in range(0, 400, 40):
    z[:, j]
""")
    exe = Path(sys.executable).parent / "ioadvisor"
    res = subprocess.run([str(exe), "run", "-o", "t.parquet", "--", sys.executable, str(prog)], cwd=tmp_path,
                         capture_output=True, text=True, timeout=300)
    assert res.returncode == 0, res.stderr
    res = subprocess.run([str(exe), "advise", "t.parquet"], cwd=tmp_path, capture_output=True, text=True,
                         timeout=300)
    assert res.returncode == 0, res.stderr
    out = res.stdout
    assert "Recommendation for s3://advise/b.zarr (on the object store 127.0.0.1:" in out and "stays there" in out
    assert "out.h5" not in out and 'FsspecStore.from_url("s3://advise/b.zarr"' in out


def test_a_head_before_each_whole_object_get_is_a_round_more():
    """s3fs 2026.9 asks a chunk's size (HEAD) before reading it whole: the request log shows it, the price follows."""
    from advisor.objectstore import heads_before_gets

    urls = [f"s3://b/a.zarr/c/0/{i}" for i in range(4)]
    req = {"op": np.array(["HEAD", "GET"] * 4, object), "url": np.array([u for u in urls for _ in (0, 1)], object),
           "end": np.array([-1] * 8)}
    assert heads_before_gets(req)
    assert not heads_before_gets({**req, "op": np.array(["GET"] * 8, object)})
    shape = (2000, 2000)
    boxes, writes, weights = _boxes(_cols([((0, j), (2000, 1)) for j in range(0, 2000, 100)]))
    lay = StoreLayout("zarr", (100, 100))
    one = price(lay, boxes, writes, weights, shape, 8, 1.0, MODEL)
    two = price(lay, boxes, writes, weights, shape, 8, 1.0, MODEL, head_first=True)
    assert two.requests == 2 * one.requests and two.terms["first byte"] > 1.9 * one.terms["first byte"] - 0.1


def test_zarr_candidates_of_an_hdf5_trace_pay_s3fs_heads():
    """An HDF5 file read by ranged GETs shows no whole-object GET to judge by: the Zarr candidates, read through
    FsspecStore on s3fs (``max_concurrency`` 10), still pay its HEAD before each chunk."""
    from advisor.objectstore import heads_before_gets

    ranged = {"op": np.array(["HEAD", "GET", "GET"], object), "url": np.array(["s3://b/f.h5"] * 3, object),
              "end": np.array([-1, 4096, 8192])}
    assert heads_before_gets(ranged, "s3://b/f.h5")
    assert heads_before_gets({}, "s3://b/f.h5")
    assert not heads_before_gets({}, "gs://b/f.h5")  # another client: no evidence, no HEAD
