"""s_ospill: the output cache lines a multi-chunk call's copies fetch again (iomodel.spill)."""
import pytest

from instrumentation.records import AccessRecord, DatasetRecord, Selection
from iomodel.chunks import chunk_visits
from iomodel.layout import Layout
from iomodel.spill import output_spill
from iomodel.variables import count_variables

LLC = 32 << 20
MB = 1 << 20


def _strip(rows, width, col=0):
    sel = Selection.box((0, col), (rows, width))
    return AccessRecord(0, "read", sel, sel.nelements, sel.nelements * 4, 0.0, 0.0)


def _spill(chunks, shape=(1 << 20, 16), width=4, library="zarr", llc=LLC):
    ds = DatasetRecord(0, library, "x", "f", "/d", shape, "float32", chunks=chunks)
    lay = Layout(library, shape, 4, chunks)
    return count_variables([_strip(shape[0], width)], ds, lay, 1 << 34, llc=llc).s_ospill


def test_output_spans_of_a_strip_of_column_chunks():
    lay = Layout("zarr", (1000, 16), 4, (500, 1))
    v = chunk_visits(Selection.box((0, 2), (1000, 4)), lay)
    # visits in row-block order, then column: each writes every 4th float of its row block's output region
    assert v.olo.tolist() == [0, 4, 8, 12, 8000, 8004, 8008, 8012]
    assert v.ohi.tolist() == [7988, 7992, 7996, 8000, 15988, 15992, 15996, 16000]


def test_chunks_sharing_an_output_region_beyond_the_cache_fetch_it_again():
    # four (1M, 1) chunks into a 16 MiB output: each copy touches every line, three of them again
    assert _spill((1 << 20, 1)) == pytest.approx(3 * 16 * MB, rel=1e-3)


def test_a_region_that_stays_cached_between_its_chunks_costs_nothing():
    assert _spill((1 << 18, 1)) == 0  # four 4 MiB regions, each with its 1 MiB chunks
    assert _spill((1 << 20, 1), llc=0) == 0  # the cache not known: not counted


def test_chunks_that_do_not_share_output_lines_never_spill():
    assert _spill((4096, 16)) == 0  # row chunks: one contiguous piece of the output each
    assert _spill((1 << 20, 4)) == 0  # one chunk per call


def test_hdf5_and_three_dimensions_alike():
    assert _spill((1 << 20, 1), library="hdf5") == pytest.approx(3 * 16 * MB, rel=1e-3)
    shape = (64, 1 << 14, 16)
    ds = DatasetRecord(0, "zarr", "x", "f", "/d", shape, "float32", chunks=(64, 1 << 14, 1))
    sel = Selection.box((0, 0, 0), (64, 1 << 14, 8))
    acc = AccessRecord(0, "read", sel, sel.nelements, sel.nelements * 4, 0.0, 0.0)
    v = count_variables([acc], ds, Layout("zarr", shape, 4, (64, 1 << 14, 1)), 1 << 34, llc=LLC)
    assert v.s_ospill == pytest.approx(7 * 32 * MB, rel=1e-3)  # eight chunks over one 32 MiB output


def test_output_spill_is_zero_for_one_visit_per_call():
    lay = Layout("zarr", (1000, 16), 4, (1000, 16))
    assert output_spill(chunk_visits(Selection.box((0, 0), (1000, 4)), lay), 4, lay.chunk_nbytes, LLC) == 0
