"""Chunk offsets of a file open read-only are listed once, at the trace's end, after the reads
(instrumentation/chunklisting.py); a file open for writing is listed at first sight, as before the run writes."""
from __future__ import annotations

import json
import os
import subprocess
import sys
import textwrap
from dataclasses import replace
from pathlib import Path

import h5py
import numpy as np
import pytest

import advisor
from instrumentation import chunklisting, interpose
from instrumentation.runinfo import SharedIds
from instrumentation.tracefile import load_trace

from test_tracefile import dataset

ROOT = Path(__file__).resolve().parents[2]


def chunk_table(path, name) -> np.ndarray:
    with h5py.File(path, "r") as f:
        ds = f[name]
        rows = [(i.chunk_offset[0] // ds.chunks[0], i.chunk_offset[1] // ds.chunks[1], i.byte_offset, i.size)
                for i in (ds.id.get_chunk_info(k) for k in range(ds.id.get_num_chunks()))]
    return sorted_rows(np.array(rows))


def sorted_rows(a: np.ndarray) -> np.ndarray:
    return a[np.lexsort(a[:, :2].T[::-1])]


def first_records(trace_dir: Path) -> list[dict]:
    """The dataset records of a columnar trace's records file, in file order."""
    lines = (trace_dir / "_meta.jsonl").read_text().splitlines()
    return [json.loads(line) for line in lines if line.startswith('{"t":"d"')]


@pytest.fixture
def chunked(tmp_path) -> Path:
    path = tmp_path / "c.h5"
    with h5py.File(path, "w") as f:
        f.create_dataset("x", data=np.arange(64 * 64, dtype="f4").reshape(64, 64), chunks=(16, 16))
    return path


def test_read_only_file_is_listed_once_after_the_reads(chunked, tmp_path, monkeypatch):
    calls = []
    real = chunklisting.list_offsets
    monkeypatch.setattr(chunklisting, "list_offsets", lambda *a: calls.append(1) or real(*a))
    out = tmp_path / "t.parquet"
    with h5py.File(chunked, "r") as f:
        with advisor.trace(out):
            got = f["x"][0:5, 0:40]
            f["x"][20:30, 0:10]
            listed_during_reads = len(calls)
    np.testing.assert_array_equal(got, np.arange(64 * 64, dtype="f4").reshape(64, 64)[0:5, 0:40])
    assert listed_during_reads == 0 and len(calls) == 1
    (rec,) = load_trace(out).datasets.values()
    np.testing.assert_array_equal(sorted_rows(rec.chunk_offsets), chunk_table(chunked, "x"))
    first, again = first_records(out)  # written at first sight without, again at the end with them
    assert first["chunk_offsets"] is None and again["id"] == first["id"] and again["chunk_offsets"]


def test_closed_file_is_reopened_and_a_vanished_one_costs_nothing(chunked, tmp_path):
    kept = tmp_path / "kept.h5"
    kept.write_bytes(chunked.read_bytes())
    with h5py.File(kept, "a") as f:
        f.create_dataset("y", data=np.ones((32, 32), "f4"), chunks=(8, 16))
    out = tmp_path / "t.parquet"
    with advisor.trace(out):
        for path in (chunked, kept):
            with h5py.File(path, "r") as f:
                f["x"][0:3, 0:3]
                if path == kept:
                    f["y"][0:3, 0:3]
        chunked.unlink()  # gone before the end: no offsets, and the trace is whole
    recs = {(Path(d.file).name, d.path): d for d in load_trace(out).datasets.values()}
    assert recs["c.h5", "/x"].chunk_offsets is None
    for name in ("x", "y"):  # two datasets of one reopened file
        np.testing.assert_array_equal(sorted_rows(recs["kept.h5", f"/{name}"].chunk_offsets), chunk_table(kept, name))
    assert not load_trace(out).header.missed


def test_writable_file_is_listed_at_first_sight(chunked, tmp_path):
    out = tmp_path / "t.parquet"
    with h5py.File(chunked, "r+") as f:
        with advisor.trace(out):
            f["x"][0:3, 0:3]
    (first,) = first_records(out)
    assert len(first["chunk_offsets"]) == 16


def test_shared_ids_keep_the_latest_array_of_a_key_after_a_record_comes_again(tmp_path):
    ids = SharedIds(tmp_path)
    old = ids.id_of(dataset())
    new = ids.id_of(replace(dataset(), created=True))  # the file recreated: another array
    ids.describe_again(dataset(id=old))
    other = SharedIds(tmp_path)  # another process reading the registry from the start
    assert other.id_of(dataset()) == new != old


NETCDF4_READER = textwrap.dedent("""
    import sys, netCDF4
    with netCDF4.Dataset(sys.argv[1]) as nc:
        print(float(nc["v"][:, 3].sum()))
""")
NETCDF4_READER_LEAVING_IT_OPEN = textwrap.dedent("""
    import sys, netCDF4
    nc = netCDF4.Dataset(sys.argv[1])  # never closed, as many xarray programs leave their files
    print(float(nc["v"][:, 3].sum()))
    print("h5py" in sys.modules)
""")


@pytest.mark.skipif(interpose.library() is None, reason="the libhdf5 interposer is not built")
@pytest.mark.parametrize("reader", [NETCDF4_READER, NETCDF4_READER_LEAVING_IT_OPEN], ids=["closed", "left-open"])
def test_netcdf4_reader_under_run_gets_offsets_from_the_end(tmp_path, reader):
    """The interposer lists a read-only file's chunks at the program's H5Dclose, or at the trace's end for a
    dataset left open: no h5py is loaded in the traced process to reopen the file."""
    import netCDF4

    nc_path = tmp_path / "f.nc"
    with netCDF4.Dataset(nc_path, "w") as nc:
        nc.createDimension("t", 64)
        nc.createDimension("y", 32)
        nc.createVariable("v", "f4", ("t", "y"), chunksizes=(8, 8))[:] = np.ones((64, 32), "f4")
    prog = tmp_path / "read.py"
    prog.write_text(reader)
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    res = subprocess.run([str(Path(sys.executable).parent / "ioadvisor"), "run", "-o", "t.parquet", "--",
                          sys.executable, str(prog), str(nc_path)], cwd=tmp_path, capture_output=True, text=True,
                         timeout=300, env=env)
    assert res.returncode == 0, res.stderr[-3000:]
    assert res.stdout.split()[0] == "64.0" and "True" not in res.stdout
    (rec,) = [d for d in load_trace(tmp_path / "t.parquet").datasets.values() if d.path == "/v"]
    assert rec.mode == "r" and not rec.created
    np.testing.assert_array_equal(sorted_rows(rec.chunk_offsets), chunk_table(nc_path, "v"))
    records = [r for r in first_records(tmp_path / "t.parquet") if r["path"] == "/v"]
    assert records[0]["chunk_offsets"] is None  # the interposer did not list it at first sight
