"""Element type classes in capture: what the numpy dtype string cannot say, and numpy 2's StringDType."""
import h5py
import numpy as np
import pytest
import zarr

import advisor
from instrumentation.records import RecordError, DatasetRecord, type_class
from instrumentation.tracefile import load_trace


@pytest.mark.parametrize("dtype, expected", [
    (np.dtype("<f2"), "float"), (np.dtype(">i8"), "integer"), (np.dtype("c8"), "complex"), (np.dtype("?"), "bool"),
    (np.dtype("S7"), "string"), (np.dtype("U3"), "string"), (np.dtype("M8[s]"), "time"),
    (np.dtype([("a", "<i4"), ("b", "<f8")]), "compound"), (np.dtype("V7"), "opaque"),
    (np.dtypes.StringDType(), "vlen-string"), (h5py.string_dtype(), "vlen-string"),
    (h5py.string_dtype("ascii"), "vlen-string"), (h5py.vlen_dtype(np.float32), "vlen"),
    (h5py.ref_dtype, "reference"), (h5py.regionref_dtype, "reference"),
    (h5py.enum_dtype({"A": 0, "B": 1}, basetype=np.int8), "enum"),
    (h5py.opaque_dtype(np.dtype("M8[s]")), "opaque"), (np.dtype(object), "object"),
])
def test_type_class_of_h5py_and_numpy_dtypes(dtype, expected):
    assert type_class(dtype) == expected


def test_type_class_round_trips_and_is_checked():
    rec = DatasetRecord(0, "zarr", "3", "/s", "/x", (4,), "T", type_class="vlen-string")
    back = DatasetRecord.from_config(rec.get_config())
    assert back == rec and back.itemsize == 16
    old = rec.get_config()
    del old["type_class"]  # traces written before the field existed still load
    assert DatasetRecord.from_config(old).type_class is None
    with pytest.raises(RecordError, match="field 'type_class'"):
        DatasetRecord.from_config({**rec.get_config(), "type_class": "pointer"})


@pytest.mark.parametrize("zarr_format", [2, 3])
def test_zarr_variable_length_strings_are_recorded(tmp_path, zarr_format):
    with advisor.trace(tmp_path / "t.jsonl") as t:
        a = zarr.create_array(tmp_path / "s.zarr", shape=(10,), dtype=str, chunks=(5,), zarr_format=zarr_format)
        a[:] = np.array([f"row {i}" for i in range(10)])
        assert a[2:4].tolist() == ["row 2", "row 3"]
    assert (t.record_errors, t.first_error) == (0, None)
    (ds,) = load_trace(t.path).datasets.values()
    assert (ds.dtype, ds.type_class) == ("T", "vlen-string")
    assert len(load_trace(t.path).accesses) == 2


def test_a_dataset_whose_reads_fail_is_still_recorded(tmp_path):
    with h5py.File(tmp_path / "f.h5", "w") as f:
        f["x"] = np.arange(10.0)
    with advisor.trace(tmp_path / "t.jsonl") as t, h5py.File(tmp_path / "f.h5", "r") as f:
        with pytest.raises(IndexError):
            f["x"][20]  # the user's exception comes through unchanged
    trace = load_trace(t.path)
    assert t.failed_calls == 1 and not trace.accesses
    assert [d.path for d in trace.datasets.values()] == ["/x"]
