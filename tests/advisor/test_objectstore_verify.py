"""``verify`` on an object store (issue #35): the finalists rebuilt under a scratch prefix of the same store, the
traced accesses replayed there, the prefix removed afterwards (also on error), against the real SeaweedFS server."""
from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

import advisor
from advisor.verify import verify


def _opts(endpoint):
    return dict(key="k", secret="s", client_kwargs={"endpoint_url": endpoint})


def _fs(opts):
    import s3fs

    return s3fs.S3FileSystem(**opts, skip_instance_cache=True)


def _traced_columns(tmp_path, opts, bucket, shape=(400, 400), chunks=(40, 40)):
    """A zarr array on the store, 10 whole columns of it read under ``advisor.trace``: the trace's path, the data."""
    import zarr

    fs = _fs(opts)
    if not fs.exists(bucket):
        fs.mkdir(bucket)
    url = f"s3://{bucket}/d.zarr"
    data = np.random.default_rng(0).random(shape)
    z = zarr.create_array(zarr.storage.FsspecStore.from_url(url, storage_options=opts), shape=shape, chunks=chunks,
                          dtype="f8", overwrite=True)
    z[:] = data
    path = tmp_path / "t.parquet"
    with advisor.trace(path):
        r = zarr.open_array(zarr.storage.FsspecStore.from_url(url, storage_options=opts, read_only=True), mode="r")
        for j in range(0, shape[1], shape[1] // 10):
            r[:, j]
    return path, data


def _scratch_left(opts, bucket):
    return [p for p in _fs(opts).ls(bucket, refresh=True) if "ioadvisor-verify-" in p]


def test_verify_replays_on_the_store_and_removes_its_scratch_prefix(tmp_path, s3_endpoint):
    opts = _opts(s3_endpoint)
    path, _ = _traced_columns(tmp_path, opts, "verify1")
    result = verify(path, top=2, repeat=2, storage_options=opts)
    rows = result.rows
    assert rows[0].label == "current" and rows[0].chunks == (40, 40) and len(rows) == 3
    assert {r.data for r in rows} == {"user"}  # the user's data, read from the store
    assert all(r.max_error == 0.0 for r in rows)  # every layout read back the same values
    assert all(r.predicted_seconds and r.measured_seconds > 0 and len(r.measured_all) == 2 for r in rows)
    # the advice's first-ranked, another layout than the current one (other chunks, or shards)
    assert (rows[1].chunks, rows[1].shards) != (rows[0].chunks, rows[0].shards) and rows[1].library == "zarr"
    assert rows[0].stored_bytes > 0 and rows[0].compressor == "zstd"  # the recorded codec, as zarr wrote it
    assert _scratch_left(opts, "verify1") == []
    assert sorted(p.rsplit("/", 1)[-1] for p in _fs(opts).ls("verify1", refresh=True)) == ["d.zarr"]


def test_the_scratch_prefix_goes_also_when_a_build_fails(tmp_path, s3_endpoint, monkeypatch):
    import advisor.objectstore_verify as ov

    opts = _opts(s3_endpoint)
    path, _ = _traced_columns(tmp_path, opts, "verify2")
    real = ov.build_on_store
    built = []

    def failing(layout, data, url, storage_options, **kw):
        if built:
            raise KeyboardInterrupt  # as Ctrl-C or SIGTERM during the second upload
        built.append(url)
        return real(layout, data, url, storage_options, **kw)

    monkeypatch.setattr(ov, "build_on_store", failing)
    with pytest.raises(KeyboardInterrupt):
        verify(path, top=2, storage_options=opts)
    assert built and _scratch_left(opts, "verify2") == []


def test_a_scratch_prefix_of_a_killed_run_is_removed_by_the_next(tmp_path, s3_endpoint):
    from advisor.objectstore_verify import MARKER, remove_stale_scratch

    opts = _opts(s3_endpoint)
    fs = _fs(opts)
    fs.mkdir("verify3")
    dead = subprocess.run([sys.executable, "-c", "import os; print(os.getpid())"], capture_output=True,
                          text=True).stdout.strip()
    import socket

    for name, pid in (("ioadvisor-verify-dead", int(dead)), ("ioadvisor-verify-live", os.getpid())):
        fs.pipe_file(f"verify3/{name}/{MARKER}", json.dumps({"host": socket.gethostname(), "pid": pid}).encode())
        fs.pipe_file(f"verify3/{name}/l0.h5", b"x" * 10)
    removed = remove_stale_scratch("s3://verify3", opts)
    assert removed == ["s3://verify3/ioadvisor-verify-dead"]
    assert [p.rsplit("/", 1)[-1] for p in _fs(opts).ls("verify3", refresh=True)] == ["ioadvisor-verify-live"]


def test_cli_verify_on_the_store(tmp_path, s3_endpoint):
    opts = _opts(s3_endpoint)
    path, _ = _traced_columns(tmp_path, opts, "verify4")
    exe = Path(sys.executable).parent / "ioadvisor"
    res = subprocess.run([str(exe), "verify", str(path), "--top", "1", "--json", "--endpoint-url", s3_endpoint,
                          "--storage-options", json.dumps({"key": "k", "secret": "s"})],
                         capture_output=True, text=True, timeout=600)
    assert res.returncode == 0, res.stderr
    rows = json.loads(res.stdout)["rows"]
    assert [r["label"] for r in rows] == ["current", "#1"] and all(r["data"] == "user" for r in rows)
    assert "secret" not in res.stdout
    bad = subprocess.run([str(exe), "verify", str(path), "--storage-options", "{nope"], capture_output=True,
                         text=True, timeout=120)
    assert bad.returncode != 0 and "--storage-options: not JSON" in bad.stderr and "Traceback" not in bad.stderr


def test_a_grid_following_program_replays_the_blocks_it_would_take_in_each_layout():
    """dask.array.from_zarr reads blocks of its layout's chunks: verify replays 2x2-chunk blocks of each layout's
    own chunks, not the traced 500x500 blocks (a 1000x1000 chunk read once per traced block)."""
    from advisor.objectstore_tiles import follows_chunks
    from advisor.objectstore_verify import tile_ops

    shape = (2000, 1000)
    boxes = [[np.arange(i, i + 500), np.arange(j, j + 500)] for i in range(0, 2000, 500) for j in range(0, 1000, 500)]
    follow = follows_chunks(boxes, np.zeros(len(boxes), bool), np.ones(len(boxes)), (250, 250), shape)
    now = tile_ops(follow, (250, 250), shape)
    assert [op.key for op in now] == [tuple(slice(int(b[0]), int(b[-1]) + 1) for b in box) for box in boxes]
    big = tile_ops(follow, (1000, 1000), shape)
    assert [op.key for op in big] == [(slice(0, 2000), slice(0, 1000))] and all(op.read for op in big)
