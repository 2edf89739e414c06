"""instrumentation.opener: the one way a recorded array is opened; bad paths are one InputError line naming them."""
import h5py
import numpy as np
import pytest
import zarr

from instrumentation.errors import InputError
from instrumentation.opener import open_array, open_target


@pytest.fixture
def files(tmp_path):
    h5 = tmp_path / "a.h5"
    with h5py.File(h5, "w") as f:
        f["g/x"] = np.arange(12, dtype=np.float32).reshape(3, 4)
    store = tmp_path / "s.zarr"
    g = zarr.open_group(str(store), mode="w")
    g.create_array("y", shape=(5,), dtype="i4")[:] = np.arange(5)
    root = tmp_path / "r.zarr"
    zarr.create_array(store=str(root), shape=(2,), dtype="f8")
    return h5, store, root


def test_opens_hdf5_and_zarr_arrays_read_only_and_closes_the_file(files):
    h5, store, root = files
    with open_array(h5, "/g/x", "hdf5") as opened:
        assert opened.library == "hdf5" and opened.array.shape == (3, 4)
        f = opened.file
        assert opened.array[1, 2] == 6
    assert not f  # closed on leaving the block
    with open_array(store, "y", "zarr") as opened:
        assert list(opened.array[...]) == [0, 1, 2, 3, 4] and opened.array.read_only
    assert open_array(root, "", "zarr").array.shape == (2,)


@pytest.mark.parametrize("case, expect", [
    (lambda h5, st, tmp: (tmp / "none.h5", "/x", "hdf5"), "none.h5: no such file"),
    (lambda h5, st, tmp: (h5, "/g", "hdf5"), "a.h5:/g: no such dataset"),
    (lambda h5, st, tmp: (h5, "/nope", "hdf5"), "a.h5:/nope: no such dataset"),
    (lambda h5, st, tmp: (st, "nope", "zarr"), "s.zarr/nope: not a readable Zarr array"),
    (lambda h5, st, tmp: (st, "", "zarr"), "s.zarr: not a readable Zarr array"),
    (lambda h5, st, tmp: (st, "y", "hdf5"), "s.zarr: not a readable HDF5 file"),
    (lambda h5, st, tmp: ("memory://x", "y", "zarr"), "memory://x/y: not a file on disk"),
])
def test_bad_paths_are_one_input_error_line_naming_file_and_dataset(files, tmp_path, case, expect):
    h5, store, _ = files
    with pytest.raises(InputError) as err:
        open_array(*case(h5, store, tmp_path))
    msg = str(err.value)
    assert expect in msg and "\n" not in msg


def test_a_garbage_file_is_an_input_error_not_a_library_traceback(tmp_path):
    bad = tmp_path / "bad.h5"
    bad.write_bytes(b"not hdf5 at all" * 100)
    with pytest.raises(InputError, match="bad.h5: not a readable HDF5 file"):
        open_array(bad, "/x", "hdf5")


def test_command_line_targets_pick_the_only_array(files, tmp_path):
    h5, store, root = files
    assert open_target(str(h5)).array.name == "/g/x"  # the file's one dataset
    assert open_target(f"{h5}:/g/x").library == "hdf5"
    assert open_target(str(store)).array.shape == (5,)  # the group's one array
    assert open_target(str(root)).array.shape == (2,)
    with pytest.raises(InputError, match="no dataset 'nope'"):
        open_target(f"{h5}:nope")
    with pytest.raises(InputError, match="no such Zarr store"):
        open_target(str(tmp_path / "none.zarr"))
