"""advisor.verify builds and replays a dataset through the program's own stack: netCDF4-python (netCDF-C) when the
program read it through netCDF4, h5py / zarr otherwise (advisor.verify_stack, iomodel.replay_netcdf4)."""
import json
from dataclasses import replace

import h5py
import netCDF4
import numpy as np
import pytest

import advisor
from advisor.verify import VerifyResult, verify
from instrumentation.tracefile import load_trace
from iomodel.replay_netcdf4 import NetCDF4Target

NETCDF4_HDF5 = "/site-packages/netCDF4.libs/libhdf5-6b1e6e2a.so.320.0.0"
"""A libhdf5 copy the interposer names for a netCDF4-python program (``TraceHeader.libraries``)."""


def _traced(tmp_path, through_netcdf4: bool):
    path = tmp_path / "d.h5"
    with h5py.File(path, "w") as f:
        f.create_dataset("x", data=np.arange(64 * 2048, dtype="f4").reshape(2048, 64), chunks=(256, 64))
    with advisor.trace(tmp_path / "t.jsonl"):
        with h5py.File(path, "r") as f:
            for i in range(0, 2048, 256):
                f["x"][i:i + 16, 8:40]
    trace = load_trace(tmp_path / "t.jsonl")
    if through_netcdf4:  # what `ioadvisor run` records for a program on netCDF4-python
        trace.headers[0] = replace(trace.headers[0], libraries=(NETCDF4_HDF5,))
    return trace


@pytest.fixture
def seen(monkeypatch):
    """Each netCDF4 open (chunking, chunk cache) and read count of the replays."""
    opened, reads = [], []
    init, read = NetCDF4Target.__init__, NetCDF4Target.read

    def spy_init(self, path, spec, name, writable=False):
        init(self, path, spec, name, writable)
        opened.append((tuple(self.var.chunking()), self.var.get_var_chunk_cache(), self.var.dimensions))

    def spy_read(self, kind, key, sel):
        reads.append(key)
        return read(self, kind, key, sel)

    monkeypatch.setattr(NetCDF4Target, "__init__", spy_init)
    monkeypatch.setattr(NetCDF4Target, "read", spy_read)
    return opened, reads


def test_a_dataset_read_through_netcdf4_is_built_by_netcdf_c_and_replayed_through_it(tmp_path, seen):
    trace = _traced(tmp_path, through_netcdf4=True)
    res = verify(trace, top=0, layouts=["hdf5:chunks=16x32,cache=4MiB,slots=1031"], workdir=tmp_path / "w")
    opened, reads = seen
    rows = {r.label: r for r in res.rows}
    assert set(rows) == {"current", "layout 1"}
    # one netCDF-4 file per layout, with the layout's chunks as netCDF4 reports them and netCDF dimensions
    assert sorted(o[0] for o in opened) == [(16, 32), (256, 64)]
    assert all(o[2] == ("dim_0", "dim_1") for o in opened)
    # the named cache is set with set_var_chunk_cache, as the recipe does
    assert dict((o[0], o[1]) for o in opened)[(16, 32)][:2] == (4 << 20, 1031)
    assert len(reads) == 2 * 8  # every traced read, in each layout, through Variable indexing
    assert all(r.max_error == 0.0 and r.data == "user" for r in res.rows)  # it read back the user's values
    assert all(r.stack == "netcdf4" for r in res.rows) and "through netCDF4-python" in res.table()
    assert VerifyResult.from_config(json.loads(json.dumps(res.get_config()))) == res


def test_a_dataset_read_through_h5py_is_still_replayed_through_h5py(tmp_path, seen):
    trace = _traced(tmp_path, through_netcdf4=False)
    res = verify(trace, top=0, layouts=["hdf5:chunks=16x32"], workdir=tmp_path / "w")
    assert len(res.rows) == 2 and not any(r.stack for r in res.rows)
    assert seen == ([], [])


def test_the_recipes_compressor_is_what_netcdf4_writes(tmp_path):
    from advisor.verify_results import Choice
    from advisor.verify_stack import netcdf4_create_kwargs, netcdf4_writes, on_program_stack
    from iomodel.layout import Layout

    trace = _traced(tmp_path, through_netcdf4=True)
    ds = next(iter(trace.datasets.values()))
    lay = Layout("hdf5", (2048, 64), 4, (128, 64))
    choices = [Choice("a", lay, compressor="gzip"), Choice("b", lay, compressor="sz3", error_bound="rel:1e-3"),
               Choice("c", Layout("zarr", (2048, 64), 4, (128, 64)))]
    assert [c.stack for c in on_program_stack(trace, ds, choices)] == ["netcdf4", "", ""]
    assert netcdf4_writes(choices[0]) and not netcdf4_writes(choices[1])
    assert netcdf4_create_kwargs(choices[0]) == {"compression": "zlib", "complevel": 4, "shuffle": True}
