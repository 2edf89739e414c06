"""One description per dataset across its handles (instrumentation/hooks_h5py.py ``_by_place``): ``f["x"][i]``
makes a new handle per access, which is described once per open file; a handle on another dataset, one that now
stands where a deleted dataset stood, or one whose extent changed unseen is described again."""
import h5py
import numpy as np
import pytest

import advisor
from instrumentation import hooks_h5py
from instrumentation.records import READ


@pytest.fixture
def described(monkeypatch):
    """The datasets ``describe`` was asked about, by name, in order."""
    calls = []
    original = hooks_h5py.describe

    def counting(ds, created):
        calls.append(ds.name)
        return original(ds, created)

    monkeypatch.setattr(hooks_h5py, "describe", counting)
    return calls


def _write(path, data):
    with h5py.File(path, "w") as f:
        f.create_dataset("x", data=data, chunks=(5,), maxshape=(None,))
        f.create_dataset("y", data=data * 2, chunks=(5,))


def _whole_reads(trace):
    """(dataset path, elements) of each read."""
    return [(trace.datasets[a.dataset].path, a.nelements) for a in trace.accesses if a.op == READ]


@pytest.mark.parametrize("mode", ["r", "r+"])
def test_temporary_handles_are_described_once_per_dataset(tmp_path, described, mode):
    data = tmp_path / "d.h5"
    _write(data, np.arange(20.0))
    with h5py.File(data, mode) as f, advisor.trace(tmp_path / "t.parquet") as t:
        got = [f["x"][i] for i in range(10)] + [f["y"][i] for i in range(10)] + [f["/x"][3]]
    assert got == list(np.arange(10.0)) + list(np.arange(10.0) * 2) + [3.0]
    assert described == ["/x", "/y"]
    trace = t.load()
    assert [trace.datasets[a.dataset].path for a in trace.accesses] == ["/x"] * 10 + ["/y"] * 10 + ["/x"]
    # every handle is still an open and a close of its dataset (docs/trace-format.md "Opens and closes"; the last
    # one's close is counted at the program's next open or close, after the trace here)
    assert [(o.event, o.path) for o in trace.opens if o.path == "/x"] == \
        [("open", "/x"), ("close", "/x")] * 10 + [("open", "/x")]


def test_a_dataset_recreated_under_its_name_is_described_anew(tmp_path, described):
    data = tmp_path / "d.h5"
    _write(data, np.arange(20.0))
    with h5py.File(data, "r+") as f, advisor.trace(tmp_path / "t.parquet") as t:
        f["x"][:]
        del f["x"]
        f.create_dataset("x", data=np.arange(7, dtype="i4"))  # an address HDF5 frees is taken again
        f["x"][:]
        del f["x"]
        with h5py.File(tmp_path / "other.h5", "w") as g:  # made where the hooks do not see it (H5Ocopy)
            g["z"] = np.arange(7.0)  # the same extent, another type
            f.copy(g["z"], "x")
        f["x"][:]
        f.id.unlink(b"x")  # deleted below h5py's Group: only the name and extent tell
        f.copy(f["y"], "x")
        f["x"][:]
        f.move("x", "w")  # the same dataset under another name
        f["w"][:]
    trace = t.load()
    reads = [(trace.datasets[a.dataset].path, a.nelements, a.nbytes) for a in trace.accesses if a.op == READ]
    assert reads == [("/x", 20, 160), ("/x", 7, 28), ("/x", 7, 56), ("/x", 20, 160), ("/w", 20, 160)]


def test_an_extent_changed_unseen_is_seen_by_the_next_handle(tmp_path):
    data = tmp_path / "d.h5"
    _write(data, np.arange(20.0))
    with h5py.File(data, "r+") as f, advisor.trace(tmp_path / "t.parquet") as t:
        f["x"][:]
        f["x"].id.set_extent((30,))  # low level: no hook sees it
        f["x"][:]
    assert [n for _, n in _whole_reads(t.load())] == [20, 30]


def test_another_file_at_the_path_or_another_mode_is_described_anew(tmp_path, described):
    data = tmp_path / "d.h5"
    _write(data, np.arange(20.0))
    with advisor.trace(tmp_path / "t.parquet") as t:
        with h5py.File(data, "r") as f:
            f["x"][:]  # read-only: no one changes the extent while it is open
        with h5py.File(data, "r+") as f:  # reopened for writing: its extent may change now
            f["x"][:]
            f["x"].id.set_extent((25,))
            f["x"][:]
        _write(data, np.arange(40.0))  # another file at the same path (its create_dataset is traced too)
        with h5py.File(data, "r") as f:
            f["x"][:]
    assert [n for p, n in _whole_reads(t.load()) if p == "/x"] == [20, 20, 25, 40]
    assert described.count("/x") == 5  # r, r+, r+ at its new extent, the new file's creation, its reopening
