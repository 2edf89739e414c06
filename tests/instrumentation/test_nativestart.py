"""The start of a native program with os calls only (instrumentation/nativestart.py) agrees with the modules
whose imports it avoids."""
from __future__ import annotations

import sys
import sysconfig

import pytest

from instrumentation import nativestart, startup, tracedir


@pytest.mark.parametrize("name", [
    "_meta.jsonl", "part-000000.parquet", "part-1234567.parquet", "part-000003.npy", "parts-000001-000009.parquet",
    ".part-000002.parquet.tmp", ".part-000002.npy.tmp", "part-00001.parquet", "part-00000x.parquet",
    "parts-000001.parquet", "parts-000001-00009.parquet", "part-000001.parquet.bak", "notes.txt", "part-.npy",
    "part-\u0661\u0662\u0663\u0664\u0665\u0666.parquet", "_meta.json", "meta.jsonl"])
def test_a_trace_file_is_one_that_tracedir_prepare_replaces(tmp_path, name):
    """Never true of a name ``tracedir.prepare`` would keep (then refuse the directory); true of a trace's own."""
    trace = tmp_path / "t.parquet"
    trace.mkdir()
    (trace / name).write_text("x")
    try:
        tracedir.prepare(trace)
        replaced = True
    except OSError:
        replaced = False
    assert nativestart.is_trace_file(name) == replaced or not nativestart.is_trace_file(name)
    if name in ("_meta.jsonl", "part-000000.parquet", "parts-000001-000009.parquet", ".part-000002.parquet.tmp"):
        assert nativestart.is_trace_file(name) and replaced


def test_the_records_file_and_site_packages_are_the_ones_the_other_modules_name():
    assert nativestart.RECORDS_FILE == tracedir.META
    assert startup.site_packages() == sysconfig.get_paths()["purelib"]


def test_a_program_holding_libhdf5_is_told_apart(tmp_path):
    program = tmp_path / "prog"
    program.write_bytes(b"\x7fELF" + b"\0" * 100 + nativestart.HDF5_VERSION_MARK + b"1.10.8\0")
    assert nativestart.links_hdf5_in(str(program))
    assert not nativestart.links_hdf5_in(sys.executable)
    assert not nativestart.links_hdf5_in(str(tmp_path / "missing"))
