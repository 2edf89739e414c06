"""Consolidated-metadata savings on an object store, measured from the trace's request log (issue #35)."""
from __future__ import annotations

import numpy as np

from advisor.objectstore_metadata import metadata_savings


def _log(rows):
    """Request-log columns from (op, url, t0, dt) rows."""
    return {"op": np.array([r[0] for r in rows], object), "url": np.array([r[1] for r in rows], object),
            "t0": np.array([r[2] for r in rows], float), "dt": np.array([r[3] for r in rows], float)}


def test_per_array_metadata_reads_are_what_consolidating_saves():
    rows = [("HEAD", "s3://b/g.zarr/zarr.json", 0.0, 0.05), ("GET", "s3://b/g.zarr/zarr.json", 0.05, 0.05),
            ("HEAD", "s3://b/g.zarr/.zgroup", 0.1, 0.05)]
    t = 0.15
    for i in range(4):  # each array opened in turn: its zarr.json (HEAD, GET), then a chunk
        rows += [("HEAD", f"s3://b/g.zarr/v{i}/zarr.json", t, 0.05), ("GET", f"s3://b/g.zarr/v{i}/zarr.json",
                                                                        t + 0.05, 0.05),
                 ("GET", f"s3://b/g.zarr/v{i}/c/0/0", t + 0.1, 0.05)]
        t += 0.15
    (s,) = metadata_savings(_log(rows))
    assert s.root == "s3://b/g.zarr" and s.nodes == 4 and s.requests == 8
    assert abs(s.seconds - 0.4) < 1e-9 and abs(s.store_seconds - 0.75) < 1e-9  # root documents not counted
    assert "4 arrays/groups" in s.render() and "zarr.consolidate_metadata" in s.render()


def test_consolidated_group_saves_nothing():
    rows = [("GET", "s3://b/g.zarr/zarr.json", 0.0, 0.05)] + [
        ("GET", f"s3://b/g.zarr/v{i}/c/0/0", 0.05 * (i + 1), 0.05) for i in range(4)]
    assert metadata_savings(_log(rows)) == []
    assert metadata_savings({}) == []


def test_unconsolidated_group_on_a_real_store(tmp_path, s3_server):
    import s3fs
    import zarr

    import advisor
    from instrumentation.storerequests import load_requests

    opts = s3_server.storage_options()
    s3fs.S3FileSystem(**opts, skip_instance_cache=True).mkdir("consolidate")
    url = "s3://consolidate/g.zarr"
    g = zarr.open_group(zarr.storage.FsspecStore.from_url(url, storage_options=opts), mode="w")
    for i in range(5):
        g.create_array(f"v{i}", shape=(20, 20), chunks=(10, 10), dtype="f4")[:] = i
    found = {}
    for consolidated in (False, True):
        if consolidated:
            zarr.consolidate_metadata(zarr.storage.FsspecStore.from_url(url, storage_options=opts))
        path = tmp_path / f"t{consolidated}.parquet"
        with advisor.trace(path):
            store = zarr.storage.FsspecStore.from_url(url, storage_options=opts, read_only=True)
            h = zarr.open_consolidated(store, mode="r") if consolidated else zarr.open_group(store, mode="r")
            for i in range(5):
                h[f"v{i}"][:2, :2]
        found[consolidated] = metadata_savings(load_requests(path))
    (s,) = found[False]
    assert s.root == url and s.nodes == 5 and s.requests >= 5 and 0 < s.seconds < s.store_seconds
    assert found[True] == []


def test_advise_shows_the_saving(tmp_path, s3_endpoint):
    import subprocess
    import sys
    from pathlib import Path

    prog = tmp_path / "prog.py"
    prog.write_text(f"""
import s3fs, zarr
opts = dict(key="k", secret="s", client_kwargs={{"endpoint_url": "{s3_endpoint}"}})
s3fs.S3FileSystem(**opts).mkdir("savings")
url = "s3://savings/g.zarr"
g = zarr.open_group(zarr.storage.FsspecStore.from_url(url, storage_options=opts), mode="w")
for i in range(3):
    g.create_array(f"v{{i}}", shape=(40, 40), chunks=(10, 10), dtype="f8")[:] = i
g = zarr.open_group(zarr.storage.FsspecStore.from_url(url, storage_options=opts, read_only=True), mode="r")
for i in range(3):
    g[f"v{{i}}"][:, :5]
""")
    exe = Path(sys.executable).parent / "ioadvisor"
    res = subprocess.run([str(exe), "run", "-o", "t.parquet", "--", sys.executable, str(prog)], cwd=tmp_path,
                         capture_output=True, text=True, timeout=300)
    assert res.returncode == 0, res.stderr
    res = subprocess.run([str(exe), "advise", "t.parquet"], cwd=tmp_path, capture_output=True, text=True,
                         timeout=300)
    assert res.returncode == 0, res.stderr
    assert "Consolidated metadata for s3://savings/g.zarr: " in res.stdout and "of 3 arrays/groups" in res.stdout


def test_writing_metadata_is_not_a_saving():
    rows = [("GET", "s3://b/g.zarr/zarr.json", 0.0, 0.05)] + [
        ("PUT", f"s3://b/g.zarr/v{i}/zarr.json", 0.05 * (i + 1), 0.05) for i in range(4)]
    assert metadata_savings(_log(rows)) == []
