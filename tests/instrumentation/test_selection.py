"""Selection normalization: every index spelling against its exact canonical hyperslab."""
import h5py
import numpy as np
import pytest

from instrumentation.records import Selection
from instrumentation.selection import (
    SelectionError,
    fast_hyperslab,
    field_itemsize,
    from_dataspace,
    normalize,
)

SHAPE = (20, 10, 6)


def hs(start, count, stride, block, indices=None):
    return Selection(tuple(start), tuple(count), tuple(stride), tuple(block), indices)


CASES = [
    # ints, negative ints
    ((3, 4, 5), hs((3, 4, 5), (1, 1, 1), (1, 1, 1), (1, 1, 1))),
    ((-1, 0, -6), hs((19, 0, 0), (1, 1, 1), (1, 1, 1), (1, 1, 1))),
    (np.int64(2), hs((2, 0, 0), (1, 1, 1), (1, 1, 1), (1, 10, 6))),
    # slices: plain, open, negative bounds, clipped, empty, steps
    ((slice(2, 7), slice(None), slice(1, 3)), hs((2, 0, 1), (1, 1, 1), (1, 1, 1), (5, 10, 2))),
    ((slice(-5, None),), hs((15, 0, 0), (1, 1, 1), (1, 1, 1), (5, 10, 6))),
    ((slice(5, 100),), hs((5, 0, 0), (1, 1, 1), (1, 1, 1), (15, 10, 6))),
    ((slice(4, 4),), hs((4, 0, 0), (1, 1, 1), (1, 1, 1), (0, 10, 6))),
    ((slice(1, 12, 3),), hs((1, 0, 0), (4, 1, 1), (3, 1, 1), (1, 10, 6))),
    ((slice(1, 3, 5),), hs((1, 0, 0), (1, 1, 1), (1, 1, 1), (1, 10, 6))),
    ((slice(None, None, -4),), hs((3, 0, 0), (5, 1, 1), (4, 1, 1), (1, 10, 6))),
    # Ellipsis in every position, newaxis ignored
    ((Ellipsis,), hs((0, 0, 0), (1, 1, 1), (1, 1, 1), (20, 10, 6))),
    ((Ellipsis, 2), hs((0, 0, 2), (1, 1, 1), (1, 1, 1), (20, 10, 1))),
    ((1, Ellipsis, slice(0, 2)), hs((1, 0, 0), (1, 1, 1), (1, 1, 1), (1, 10, 2))),
    ((None, 1, None), hs((1, 0, 0), (1, 1, 1), (1, 1, 1), (1, 10, 6))),
    ((), hs((0, 0, 0), (1, 1, 1), (1, 1, 1), (20, 10, 6))),
    # lists / arrays: regular ones are hyperslabs, irregular ones indices (sorted, dups kept)
    (([1, 4, 7],), hs((1, 0, 0), (3, 1, 1), (3, 1, 1), (1, 10, 6))),
    ((np.array([5, 6, 7]),), hs((5, 0, 0), (1, 1, 1), (1, 1, 1), (3, 10, 6))),
    (([3],), hs((3, 0, 0), (1, 1, 1), (1, 1, 1), (1, 10, 6))),
    (([],), hs((0, 0, 0), (1, 1, 1), (1, 1, 1), (0, 10, 6))),
    ((slice(None), [0, 2, 3]), hs((0, 0, 0), (1, 3, 1), (1, 1, 1), (20, 1, 6), (None, (0, 2, 3), None))),
    (([9, 2, -1, 2],), hs((2, 0, 0), (4, 1, 1), (1, 1, 1), (1, 10, 6), ((2, 2, 9, 19), None, None))),
    # 1-D boolean mask on one dimension
    ((slice(None), np.arange(10) % 3 == 0), hs((0, 0, 0), (1, 4, 1), (1, 3, 1), (20, 1, 6))),
    ((slice(None), slice(None), np.array([1, 1, 0, 0, 1, 0], bool)),
     hs((0, 0, 0), (1, 1, 3), (1, 1, 1), (20, 10, 1), (None, None, (0, 1, 4)))),
    # h5py MultiBlockSlice: blocks; one block or touching blocks are a run
    ((h5py.MultiBlockSlice(start=1, count=3, stride=5, block=2),), hs((1, 0, 0), (3, 1, 1), (5, 1, 1), (2, 10, 6))),
    ((h5py.MultiBlockSlice(start=2, count=3, stride=2, block=2),), hs((2, 0, 0), (1, 1, 1), (1, 1, 1), (6, 10, 6))),
    ((h5py.MultiBlockSlice(start=0, count=1, stride=7, block=4),), hs((0, 0, 0), (1, 1, 1), (1, 1, 1), (4, 10, 6))),
    # field names select no elements
    (("a", slice(0, 2)), hs((0, 0, 0), (1, 1, 1), (1, 1, 1), (2, 10, 6))),
]


@pytest.mark.parametrize("args, expected", CASES, ids=[repr(c[0])[:40] for c in CASES])
def test_normalize_exact(args, expected):
    assert normalize(args, SHAPE) == expected


@pytest.mark.parametrize("args, expected", [c for c in CASES if all(
    type(a) in (int, slice) or a is Ellipsis or isinstance(a, np.integer)
    for a in (c[0] if isinstance(c[0], tuple) else (c[0],)))])
def test_fast_path_agrees(args, expected):
    args = args if isinstance(args, tuple) else (args,)
    start, count, stride, block, n = fast_hyperslab(args, SHAPE)
    assert Selection(start, count, stride, block) == expected
    assert n == expected.nelements


def test_fast_path_declines_what_it_cannot_do():
    assert fast_hyperslab(([1, 2],), SHAPE) is None
    assert fast_hyperslab((Ellipsis, Ellipsis), SHAPE) is None
    assert fast_hyperslab((1, 2, 3, 4), SHAPE) is None
    assert fast_hyperslab((), ()) == ((), (), (), (), 1)


def test_element_counts_match_numpy():
    arr = np.zeros(SHAPE)
    for args in [(slice(1, 12, 3),), (Ellipsis, 2), ([9, 2, 3],), (slice(None), np.arange(10) % 3 == 0),
                 (slice(None, None, -4), slice(None), [1, 5]), (-1, [0, 7, 8])]:
        assert normalize(args, SHAPE).nelements == arr[args].size, args


def test_nd_mask_is_points_in_order():
    mask = np.zeros((4, 5), bool)
    mask[3, 1] = mask[0, 4] = mask[2, 2] = True
    sel = normalize((mask,), (4, 5))
    assert sel.kind == "points"
    np.testing.assert_array_equal(sel.points, [[0, 4], [2, 2], [3, 1]])
    assert sel.nelements == 3


def test_bad_index_is_a_selection_error():
    with pytest.raises(SelectionError):
        normalize((object(),), SHAPE)
    with pytest.raises(SelectionError):
        normalize((np.zeros((2, 2), int),), SHAPE)


def test_dataspace_fallback():
    from h5py import h5s

    space = h5s.create_simple((20, 10))
    space.select_hyperslab((1, 2), (3, 1), (4, 1), (2, 5))
    assert from_dataspace(space) == hs((1, 2), (3, 1), (4, 1), (2, 5))
    space.select_elements(np.array([[1, 1], [5, 3]], dtype="u8"))
    sel = from_dataspace(space)
    np.testing.assert_array_equal(sel.points, [[1, 1], [5, 3]])
    space.select_all()
    assert from_dataspace(space) == Selection.box((0, 0), (20, 10))
    space.select_none()
    assert from_dataspace(space).nelements == 0
    # an irregular union of two blocks: every element, as points
    space.select_hyperslab((0, 0), (1, 1), block=(1, 2))
    space.select_hyperslab((3, 3), (1, 1), block=(1, 1), op=h5s.SELECT_OR)
    np.testing.assert_array_equal(from_dataspace(space).points, [[0, 0], [0, 1], [3, 3]])


def test_field_itemsize():
    dt = np.dtype([("a", "<i4"), ("b", "<f8"), ("c", "S3")])
    assert field_itemsize(dt, None) == 15
    assert field_itemsize(dt, "b") == 8
    assert field_itemsize(dt, ["a", "c"]) == 7
    assert field_itemsize(np.dtype("f4"), "x") == 4
